// Matrix multiplication of a few hundred rows of a on Hopper's warpgroup MMA with the roles swapped
// (wgmma_swap): c^T = W a^T, W = b^T. wgmma's M side is fixed at 64 rows a warpgroup, its N side
// any multiple of 8 up to 256; a's rows go in the N side, so a block's share of them (NR, a
// multiple of 16, 16 to 176) fits M within 15 rows where 64- or 128-row tiles would pad it (260
// rows: 3 x 128 = 384 computed, here 2 x 144 = 288; 5 rows: 16, where they stream W). W's rows (c's
// columns) take the M side, WR a block (128: two consumer warpgroups of 64; 64: one, twice the
// tiles where few fill the SMs without splitting K, as cuBLAS's 64-row tiles there; 192, 16-bit:
// three, a third more of W's rows a tile for each of a's rows brought in, as cuBLAS's 192-row
// swapped tiles at a few hundred rows). A producer warpgroup (one thread) brings each k-slice of W
// and of a's NR rows by TMA into a ring of stages (full / empty mbarriers, as wgmma_ws); as many
// stages as fit in 200 KiB (5 at NR = 176, 8 at 64), since these products stream W and a stage is
// mostly W's. A persistent grid: block b takes tiles b, b + gridDim.x, ... (NR rows of a x WR
// columns of c; the tiles of one column block of c numbered next to each other, so their W slices
// meet in L2), its ring running on from one tile to the next, so the next tile's first loads are in
// flight during this tile's stores of c. Row blocks in pairs (matmul_wgmma_swap_pairs: an even
// count of them, K whole, 128 or 192 rows of W): blocks 2p and 2p + 1, a cluster, take the two row
// blocks of a tile of W, each bringing half of W's stage and multicasting it into both. splits > 1
// (K in runs: grids of few tiles): run blockIdx.y writes its float32 sums to partial[run] (M x N)
// and matmul_split_reduce adds them in order (and the bias); or (matmul_wgmma_swap_runs) a tile's
// runs are a cluster's blocks, one tile each, adding their sums through shared memory
// (wgmma_swap_body's end). c (or partial) is written from the accumulators, transposed: element
// (column r of c, row m) of a thread's fragment goes to c[m][r]; 8 lanes write 8 consecutive
// columns of a row. T = float runs TF32 (m64nNk8: a k-slice's 128 bytes are 32 floats, each MMA 32
// bytes of k as the 16-bit ones), W K-major only (TF32 takes no transpose; a row-major b is
// transposed first). Launch geometry: cuda_ref/_matmul_swap.py.

#include "wgmma.cuh"
#include "wgmma_n.cuh"

// *p = v in p's type (c's, or the float32 partial sums')
template <typename O> __device__ __forceinline__ void store_float(O* p, float v) { *p = from_float<O>(v); }

namespace wg {
constexpr int SWAP_RING_BYTES = 200 * 1024;
template <int WR, int NR>
constexpr int swap_stages() {  // (cuda_ref/_matmul_wgmma.py: swap_stages)
    return (SWAP_RING_BYTES / ((WR + NR) * BK_BYTES)) < 4 ? 4
         : (SWAP_RING_BYTES / ((WR + NR) * BK_BYTES)) > 8 ? 8 : SWAP_RING_BYTES / ((WR + NR) * BK_BYTES);
}
}  // namespace wg

// The kernel's body; RUNS > 1: K's runs are the blocks of a cluster (blockIdx.y, one tile a block)
// and their sums meet in shared memory (below). PAIR: blocks 2p and 2p + 1 are a cluster on tiles of
// the same rows of W (two row blocks of a, side by side in the walk: m_blocks even), each bringing
// half of W's stage and multicasting it into both, so L2 serves W once for the two; a stage is free
// once the consumers of both blocks have read it.
template <typename T, bool W_NMAJOR, int NR, int WR, int RUNS, bool PAIR = false>
__device__ __forceinline__ void
wgmma_swap_body(const TensorMap& map_w, const TensorMap& map_a, T* __restrict__ c, float* __restrict__ partial, i64 M,
                i64 N, int m_blocks, int tiles, int k_tiles, int k_run, const T* __restrict__ bias, i64 sbm, i64 sbn) {
    using namespace wg;
    static_assert((sizeof(T) == 2 || sizeof(T) == 4 && !W_NMAJOR) && NR % 16 == 0 && NR >= 16 && NR <= 256,
                  "16-bit, or float as TF32 on a K-major W; NR a multiple of 16 in 16..256 (wgmma's N)");
    static_assert(WR == 64 || WR == 128 || WR == 192 && sizeof(T) == 2, "a consumer warpgroup a 64-row box of W, 1-3");
    static_assert(!PAIR || RUNS == 1 && WR >= 128, "pairs: K whole, W's stage in halves");
    constexpr int CLUSTER = PAIR ? 2 : 1;
    constexpr int W_BYTES = WR * BK_BYTES;  // a stage's WR rows of W, one k-slice
    constexpr int STAGES = swap_stages<WR, NR>(), STAGE = W_BYTES + NR * BK_BYTES;
    extern __shared__ __align__(128) unsigned char ring[];
    unsigned char* smem = ring + ((1024 - (smem_addr(ring) & 1023)) & 1023);
    unsigned long long* full = reinterpret_cast<unsigned long long*>(smem + STAGES * STAGE);
    unsigned long long* empty = full + STAGES;
    const int group = threadIdx.x / 128, t = threadIdx.x % 128;
    const int k_first = blockIdx.y * k_run, k_end = min(k_tiles, k_first + k_run);
    if (threadIdx.x == 0) {
        prefetch_map(&map_w);
        prefetch_map(&map_a);
        for (int s = 0; s < STAGES; ++s) {
            mbar_init(&full[s], 1);
            mbar_init(&empty[s], WR / 16 * CLUSTER);  // one arrival a consumer warp (of the pair)
        }
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    if constexpr (PAIR)
        cluster_sync();  // (both blocks' barriers ready before any copy or arrival reaches them)
    else
        __syncthreads();
    const unsigned rank = PAIR ? cluster_rank() : 0;

    if (group == 0) {  // producer
        asm volatile("setmaxnreg.dec.sync.aligned.u32 40;");
        if (t == 0) {
            int it = 0;  // the ring's slot count, on across tiles
            for (int tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
                const i64 m0 = (i64)(tile % m_blocks) * NR, n0 = (i64)(tile / m_blocks) * WR;
                for (int kt = k_first; kt < k_end; ++kt, ++it) {
                    const int s = it % STAGES;
                    mbar_wait(&empty[s], ((it / STAGES) & 1) ^ 1);  // (a fresh barrier's previous phase counts as done)
                    unsigned char* w = smem + s * STAGE;
                    mbar_expect_tx(&full[s], STAGE);
                    if constexpr (PAIR)
                        load_b_half<T, W_NMAJOR, WR>(w, &map_w, kt, n0, &full[s], rank);  // W's half, multicast
                    else
                        load_a<T, W_NMAJOR, WR>(w, &map_w, kt, n0, &full[s]);  // W as wgmma's a: WR rows
                    tma_load(w + W_BYTES, &map_a, kt * bk_of<T>, (int)m0, &full[s]);  // a's NR rows as its b
                }
            }
        }
        if constexpr (RUNS > 1) {  // the consumers' two cluster barriers (below)
            cluster_sync();
            cluster_sync();
        }
        if constexpr (PAIR) cluster_sync();  // (the consumers' last, below)
        return;
    }
    if constexpr (WR == 192)  // three consumers share what the producer gives up: 128 x 40 + 384 x 152 <= 64 K
        asm volatile("setmaxnreg.inc.sync.aligned.u32 152;");
    else
        asm volatile("setmaxnreg.inc.sync.aligned.u32 232;");
    const int half = group - 1;
    const int warp = t / 32, lane = t % 32;
    float* part = partial ? partial + (i64)blockIdx.y * M * N : nullptr;
    // a consumer warp hands a stage back: to its block's producer, or in pairs to both (lane q to block q)
    auto release = [&](unsigned long long* bar) {
        if (!PAIR && t % 32 == 0) mbar_arrive(bar);
        if (PAIR && t % 32 < 2) mbar_arrive_cluster(bar, t % 32);
    };
    int it = 0;
    for (int tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
        const i64 m0 = (i64)(tile % m_blocks) * NR, n0 = (i64)(tile / m_blocks) * WR;
        float d[NR / 2];
        if (RUNS > 1 && k_first >= k_end) {  // (an empty run: none is planned)
#pragma unroll
            for (int i = 0; i < NR / 2; ++i) d[i] = 0.f;
        }
        for (int kt = k_first; kt < k_end; ++kt, ++it) {
            const int s = it % STAGES;
            mbar_wait(&full[s], (it / STAGES) & 1);
            unsigned char* w = smem + s * STAGE;
            wgmma_fence();
#pragma unroll
            for (int k = 0; k < BK_BYTES / 32; ++k) {
                // W: this warpgroup's 64 rows, 32 bytes of k further; a: every row, K-major
                const unsigned long long dw = W_NMAJOR ? descriptor(w + half * BOX_BYTES + 16 * 128 * k, BOX_BYTES, 1024)
                                                       : descriptor(w + half * BOX_BYTES + 32 * k, 16, 1024);
                const unsigned long long da = descriptor(w + W_BYTES + 32 * k, 16, 1024);
                MmaN<T, NR>::template run<W_NMAJOR ? 1 : 0, 0>(d, dw, da, k > 0 || kt > k_first);
            }
            wgmma_commit();
            wgmma_wait<1>();  // the k-slice before is read: hand its stage back
            if (kt > k_first) release(&empty[(it - 1) % STAGES]);
        }
        wgmma_wait<0>();
        release(&empty[(it - 1) % STAGES]);  // the tile's last k-slice is read too
#pragma unroll
        for (int i = 0; i < NR / 2; ++i) touch(d[i]);

        // d[4 j + h]: column r + 8 (h / 2) of c, row m0 + 8 j + 2 (lane % 4) + h % 2, stored from one
        // base pointer with predicates and constant row offsets: a block runs one or two tiles, so its
        // epilogue's instructions come from L2 once, and a bounds check, an index and the bias's and
        // partial's branches for each element were most of its time (ncu: 63% of the stall samples at
        // NR = 160, mostly waiting for code; decision 055)
        const i64 r = n0 + half * 64 + 16 * warp + lane / 4, row = m0 + 2 * (lane % 4), left = M - row;
        const i64 base = row * N + r;  // c's (or the partial's) offset of the thread's first element
        const int rows = left <= 0 ? 0 : left >= NR ? NR : (int)left;  // this thread's rows: 8 j + h % 2 < rows
        const bool in0 = r < N, in8 = r + 8 < N;
        // element (j, h) into out (at base), bias b (at row, r) added in float: the switch's addmm, one rounding
        auto put = [&](auto* out, const T* b, int j, int h, float v) {
            if (8 * j + h % 2 >= rows || !(h < 2 ? in0 : in8)) return;
            if (b) v += to_float(b[(8 * j + h % 2) * sbm + 8 * (h / 2) * sbn]);
            store_float(out + (8 * j + h % 2) * N + 8 * (h / 2), v);
        };
        if constexpr (RUNS == 1) {
            auto put_all = [&](auto* out, const T* b) {
#pragma unroll
                for (int j = 0; j < NR / 8; ++j)
#pragma unroll
                    for (int h = 0; h < 4; ++h) put(out, b, j, h, d[4 * j + h]);
            };
            if (part)
                put_all(part + base, nullptr);
            else if (bias)
                put_all(c + base, bias + row * sbm + r * sbn);
            else
                put_all(c + base, nullptr);  // (its own copy: no bias test per element)
        } else {
            // Each run's sums into its block's ring (free: both consumer warpgroups' MMAs are done and
            // no tile follows), element i of thread u at i * LANES + u; then block `rank` adds the runs'
            // j = rank J / RUNS .. of every thread's fragment, in run order (the same bits whichever
            // block adds), reading the others' shared memory, and stores them.
            constexpr int LANES = 2 * WR, J = NR / 8;
            asm volatile("bar.sync 3, %0;" ::"n"(LANES) : "memory");
            float* sums = reinterpret_cast<float*>(smem);
            const int u = half * 128 + t;
#pragma unroll
            for (int i = 0; i < NR / 2; ++i) sums[i * LANES + u] = d[i];
            cluster_sync();  // (release / acquire: every run's sums are seen)
            const unsigned rank = cluster_rank();
            unsigned at[RUNS];
#pragma unroll
            for (int q = 0; q < RUNS; ++q) at[q] = cluster_address(sums + u, q);
            const T* b = bias ? bias + row * sbm + r * sbn : nullptr;
            for (int j = rank * J / RUNS; j < (int)(rank + 1) * J / RUNS; ++j)
#pragma unroll
                for (int h = 0; h < 4; ++h) {
                    const unsigned off = (4 * j + h) * LANES * 4;
                    float v = ld_cluster(at[0] + off);
#pragma unroll
                    for (int q = 1; q < RUNS; ++q) v += ld_cluster(at[q] + off);
                    put(c + base, b, j, h, v);
                }
            cluster_sync();  // no block leaves while another reads its shared memory
        }
    }
    if constexpr (PAIR) cluster_sync();  // no block leaves while the other's copies or arrivals may reach it
}

template <typename T, bool W_NMAJOR, int NR, int WR>
__global__ void __launch_bounds__(128 + 2 * WR, 1)
matmul_wgmma_swap(const __grid_constant__ TensorMap map_w, const __grid_constant__ TensorMap map_a,
                  T* __restrict__ c, float* __restrict__ partial, i64 M, i64 N, int m_blocks, int tiles,
                  int k_tiles, int k_run, const T* __restrict__ bias, i64 sbm, i64 sbn) {
    wgmma_swap_body<T, W_NMAJOR, NR, WR, 1>(map_w, map_a, c, partial, M, N, m_blocks, tiles, k_tiles, k_run, bias,
                                            sbm, sbn);
}

// Blocks in pairs sharing W's stages (PAIR above): the grid even, m_blocks even.
template <typename T, bool W_NMAJOR, int NR, int WR>
__global__ void __launch_bounds__(128 + 2 * WR, 1) __cluster_dims__(2, 1, 1)
matmul_wgmma_swap_pairs(const __grid_constant__ TensorMap map_w, const __grid_constant__ TensorMap map_a,
                        T* __restrict__ c, float* __restrict__ partial, i64 M, i64 N, int m_blocks, int tiles,
                        int k_tiles, int k_run, const T* __restrict__ bias, i64 sbm, i64 sbn) {
    wgmma_swap_body<T, W_NMAJOR, NR, WR, 1, true>(map_w, map_a, c, nullptr, M, N, m_blocks, tiles, k_tiles, k_run,
                                                  bias, sbm, sbn);
}

// K in RUNS runs summed in one launch: a cluster of RUNS blocks a tile (grid: tiles x RUNS, 128-row
// tiles of W); partial unused.
template <typename T, bool W_NMAJOR, int NR, int RUNS>
__global__ void __launch_bounds__(384, 1) __cluster_dims__(1, RUNS, 1)
matmul_wgmma_swap_runs(const __grid_constant__ TensorMap map_w, const __grid_constant__ TensorMap map_a,
                       T* __restrict__ c, float* __restrict__ partial, i64 M, i64 N, int m_blocks, int tiles,
                       int k_tiles, int k_run, const T* __restrict__ bias, i64 sbm, i64 sbn) {
    wgmma_swap_body<T, W_NMAJOR, NR, 128, RUNS>(map_w, map_a, c, nullptr, M, N, m_blocks, tiles, k_tiles, k_run,
                                                bias, sbm, sbn);
}
