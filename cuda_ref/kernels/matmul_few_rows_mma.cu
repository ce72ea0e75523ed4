// few_rows_mma (cuda_ref/_matmul_few_rows.py plans it): a few rows of a against a weight, on
// tensor cores with the roles swapped. mma.sync's pieces come from mma_sync.cuh, as matmul_tc.cu's.

#include "dtypes.cuh"
#include "tiles.cuh"
#include "tc.cuh"
#include "mma_sync.cuh"

// ---- few_rows_mma: decode-like products (matmul_few_rows.cu's), 2 to 32 rows of a, on tensor cores. Their bytes
// are still W's, each read once, and a 128 x 128 tile of c would compute mostly padding on few SMs
// (16 x 4096: 32 tiles). So the roles swap: c^T = W a^T. W's rows are the MMA's 16-row side and
// a's rows, MP of them (16, 32 or 64, zero past M), its 8-column side. A block takes BW rows of W;
// its four warps each take a quarter of every slice of SK k, and add their sums through shared
// memory at the end, in warp order (results repeat bit for bit). The slices of W and a come by
// cp.async into a ring of as many stages as fit RING_KB. W_KMAJOR: b = W.t() (W's rows are k-runs);
// else b is row-major and a slice of W comes as SK rows of BW columns of b, its fragments transposed
// by ldmatrix. Rows of W (or b) and a start 16-byte aligned, as few_rows's do. A bias (the switch's
// addmm; null for none) joins each sum before its one rounding, element (m, n) at m * sbm + n * sbn.
// Where the blocks are few (N = 1024: 32), K runs in gridDim.z runs of k_run (a multiple of SK):
// each run's float32 sums go to partial[run] (M x N), and the tile's last run to finish (a count
// a tile in counters, zero on entry, set back to zero by that run) adds them in run order, with
// the bias: the same bits on every call, one launch, no second kernel. B_ANY: a row-major b whose rows
// are not 16-byte aligned (an LM head of 50257 columns), read where it lies: each k row's BW columns
// come as BW / 8 + 1 aligned 16-byte chunks from the one holding column n0 (a chunk's bytes before
// column n0 are b's, the row's or the one before; an allocation starts aligned; the last chunk of
// b's last row, which may end past b's last byte, comes by element loads), then are shifted into
// W's tile, one buffer past the ring, a 16-byte chunk a thread. T = float: float32 as TF32 (m16n8k8, each
// fragment rounded to TF32 once), b read where it lies in either layout as the 16-bit types' is, a chunk 4
// k; a row-major b's fragments come element by element (ldmatrix's transpose moves 16-bit halves); SK is
// half the 16-bit instances' (the same bytes a slice), rows aligned (no B_ANY). ----
namespace tc {
constexpr int FR_THREADS = 128;
}  // namespace tc

template <typename T, bool W_KMAJOR, int MP, int BW, int SK, int RING_KB, bool B_ANY = false>
__global__ void __launch_bounds__(tc::FR_THREADS)
matmul_few_rows_mma(const T* __restrict__ a, const T* __restrict__ b, T* __restrict__ c, i64 M, i64 N, i64 K,
                    i64 lda, i64 ldb, const T* __restrict__ bias, i64 sbm, i64 sbn, float* __restrict__ partial,
                    i64 k_run, unsigned* __restrict__ counters) {
    using namespace tc;
    // RAW: a stage's elements of a k row of b (B_ANY: one chunk more, unshifted); W's tile past the ring (B_ANY);
    // U: the ring's 2-byte words an element, E: elements a 16-byte chunk
    constexpr int U = sizeof(T) / 2, E = 16 / sizeof(T), BYTES = sizeof(T);
    constexpr int RAW = B_ANY ? BW + E : BW, STAGE = (RAW + MP) * SK * U, TILE = B_ANY ? BW * SK * U : 0;
    constexpr int RING_BYTES = RING_KB * 1024, CHUNKS = SK / E, STAGES = (RING_BYTES - 2 * TILE) / (2 * STAGE);
    constexpr int WARPS = FR_THREADS / 32, WARP_CHUNKS = CHUNKS / WARPS;
    static_assert(sizeof(T) == 2 || sizeof(T) == 4 && !B_ANY, "16-bit types (m16n8k16); float32 as TF32 (m16n8k8) "
                  "on aligned rows");
    static_assert(!B_ANY || !W_KMAJOR, "any alignment: a row-major b");
    static_assert(STAGES >= 2 && BW % 16 == 0 && MP % 16 == 0, "a slice in flight; whole MMA tiles");
    static_assert(WARP_CHUNKS % 2 == 0 && CHUNKS <= 64, "a warp takes whole 16-k steps of each slice");
    static_assert(RAW * CHUNKS % FR_THREADS == 0 && MP * CHUNKS % FR_THREADS == 0, "no thread idles");
    static_assert(WARPS * BW * (MP + 1) * 4 <= RING_BYTES, "the warps' sums fit the ring");
    extern __shared__ __align__(128) unsigned short ring[];  // STAGES slices of W (BW rows) and a (MP rows)
    // W's slice: BW rows of SK k, or (a row-major b) SK rows of b's BW columns
    auto w_tile = [&](int s) {
        return Tile<W_KMAJOR ? BW : SK, W_KMAJOR ? CHUNKS : BW / E>{ring + (B_ANY ? STAGES : s) * STAGE};
    };
    auto a_tile = [&](int s) { return Tile<MP, CHUNKS>{ring + s * STAGE + RAW * SK * U}; };
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    {  // this run's k, [k_begin, k_begin + K): a and b from there on
        const i64 k_begin = blockIdx.z * k_run;
        a += k_begin;
        b += W_KMAJOR ? k_begin : k_begin * ldb;
        K = min(K - k_begin, k_run);
    }
    // B_ANY: k row k's column n0 lies shift(k) elements past a 16-byte boundary
    const unsigned long long b_half = reinterpret_cast<unsigned long long>(b) / 2;
    const T* b_floor = reinterpret_cast<const T*>(b_half * 2 / 16 * 16);  // (an aligned source to read nothing from)
    const i64 n0 = (i64)blockIdx.x * BW, slices = (K + SK - 1) / SK;
    auto shift = [&](i64 k) {  // (mod 8: the low 32 bits suffice)
        return (int)(((unsigned)b_half + (unsigned)k * (unsigned)ldb + (unsigned)n0) % 8u);
    };

    for (i64 m0 = (i64)blockIdx.y * MP; m0 < M; m0 += (i64)gridDim.y * MP) {  // (gridDim.y is capped)
        // Each thread copies the same chunks of every slice: their row pointers and columns, once.
        constexpr int W_COPIES = RAW * CHUNKS / FR_THREADS, A_COPIES = MP * CHUNKS / FR_THREADS;
        const T* src[W_COPIES + A_COPIES];
        int col[W_COPIES + A_COPIES];
        bool row_in[W_COPIES + A_COPIES];
#pragma unroll
        for (int it = 0; it < W_COPIES + A_COPIES; ++it) {
            const bool w = it < W_COPIES;
            const int i = threadIdx.x + (w ? it : it - W_COPIES) * FR_THREADS, r = i / CHUNKS;
            if (B_ANY && w) continue;  // (its sources move with each slice's rows: copy_slice)
            if (!W_KMAJOR && w) {  // k row i / (BW / E) of the slice, b's columns from n0 + E (i % (BW / E))
                const int kr = i / (BW / E);
                const i64 n = n0 + E * (i % (BW / E));
                col[it] = kr;  // (for W here: the chunk's k row in the slice, not a column)
                row_in[it] = n < N;
                src[it] = b + (i64)kr * ldb + (n < N ? n : 0);
                continue;
            }
            const i64 row = (w ? n0 : m0) + r, rows = w ? N : M;
            row_in[it] = row < rows;
            col[it] = E * (i % CHUNKS);
            src[it] = (w ? b + min(row, rows - 1) * ldb : a + min(row, rows - 1) * lda) + col[it];
        }
        auto copy_slice = [&](int s, i64 k0) {
#pragma unroll
            for (int it = 0; it < W_COPIES + A_COPIES; ++it) {
                const bool w = it < W_COPIES;
                const int i = threadIdx.x + (w ? it : it - W_COPIES) * FR_THREADS;
                if (B_ANY && w) {  // chunk j of k row kr: b's columns from n0 - shift + 8 j, those left in the row
                    const int kr = i / (RAW / 8), j = i % (RAW / 8);
                    const i64 first = n0 - shift(k0 + kr) + E * j;
                    const int bytes = k0 + kr < K ? 2 * (int)max((i64)0, min(N - first, (i64)E)) : 0;
                    const T* src = b + (k0 + kr) * ldb + first;
                    unsigned short* dst = ring + s * STAGE + kr * RAW + E * j;
                    if (bytes == 2 * E || bytes == 0 || blockIdx.z + 1 < gridDim.z || k0 + kr + 1 < K) {
                        cp_async16(dst, bytes ? src : b_floor, bytes);
                    } else {  // b's last row's last columns: element loads (16 bytes from src may pass its end)
                        union { uint4 u; unsigned short v[E]; } r;
#pragma unroll
                        for (int e = 0; e < E; ++e) r.v[e] = 2 * e < bytes ? reinterpret_cast<const unsigned short*>(src)[e] : 0;
                        *reinterpret_cast<uint4*>(dst) = r.u;
                    }
                    continue;
                }
                if (!W_KMAJOR && w) {  // b's columns left in the row from this chunk on, if its k is in K
                    const i64 left = N - n0 - E * (i % (BW / E));
                    const int bytes = row_in[it] && k0 + col[it] < K ? BYTES * (int)min(left, (i64)E) : 0;
                    cp_async16(w_tile(s).at(i / (BW / E), i % (BW / E)), bytes ? src[it] + k0 * ldb : b, bytes);
                    continue;
                }
                unsigned short* dst = w ? w_tile(s).at(i / CHUNKS, i % CHUNKS) : a_tile(s).at(i / CHUNKS, i % CHUNKS);
                const i64 left = K - k0 - col[it];  // elements of the row from this chunk on
                const int bytes = row_in[it] && left > 0 ? BYTES * (int)min(left, (i64)E) : 0;
                cp_async16(dst, bytes ? src[it] + k0 : src[it] - col[it], bytes);
            }
        };
#pragma unroll 1
        for (int s = 0; s < STAGES - 1; ++s) {
            if (s < slices) copy_slice(s, (i64)s * SK);
            cp_async_commit();  // one group a slice, empty or not: the wait count stays exact
        }
        float acc[BW / 16][MP / 8][4] = {};
        int cur = 0, next = STAGES - 1;
        for (i64 s = 0; s < slices; ++s) {
            cp_async_wait<STAGES - 2>();
            __syncthreads();  // slice s has landed for all; all are done with slice s - 1
            if (s + STAGES - 1 < slices) copy_slice(next, (s + STAGES - 1) * SK);
            cp_async_commit();
            const auto W = w_tile(cur);
            if constexpr (B_ANY) {  // a 16-byte chunk of W's tile a thread: raw chunks c, c + 1 of its k row, shifted
                const uint4* raw = reinterpret_cast<const uint4*>(ring + cur * STAGE);
                for (int i = threadIdx.x; i < SK * BW / 8; i += FR_THREADS) {
                    const int kr = i / (BW / 8), c = i % (BW / 8), sh = shift(s * SK + kr), q = sh / 2;
                    const uint4 lo = raw[kr * (RAW / 8) + c], hi = raw[kr * (RAW / 8) + c + 1];
                    const unsigned w[8] = {lo.x, lo.y, lo.z, lo.w, hi.x, hi.y, hi.z, hi.w};
                    unsigned x[5];
#pragma unroll
                    for (int e = 0; e < 5; ++e)  // word q + e, by selects (a register array indexed at run time spills)
                        x[e] = q == 0 ? w[e] : q == 1 ? w[e + 1] : q == 2 ? w[e + 2] : w[e + 3];
                    uint4 o;  // an odd shift takes each word's high half and the next one's low half
                    o.x = __funnelshift_r(x[0], x[1], 16 * (sh % 2));
                    o.y = __funnelshift_r(x[1], x[2], 16 * (sh % 2));
                    o.z = __funnelshift_r(x[2], x[3], 16 * (sh % 2));
                    o.w = __funnelshift_r(x[3], x[4], 16 * (sh % 2));
                    *reinterpret_cast<uint4*>(W.at(kr, c)) = o;
                }
                __syncthreads();  // the tile is whole
            }
            const auto A = a_tile(cur);
            // this warp's chunks of the slice, 16 k a step (chunks kc, kc + 1)
#pragma unroll
            for (int kc = WARP_CHUNKS * warp; kc < WARP_CHUNKS * (warp + 1); kc += 2) {
                unsigned fw[BW / 16][4], fa[MP / 8][2];
#pragma unroll
                for (int i = 0; i < BW / 16; ++i) {
                    if constexpr (W_KMAJOR) load_a_frag(fw[i], W, 16 * i, kc, lane);
                    else if constexpr (sizeof(T) == 2) load_a_frag_trans(fw[i], W, 16 * i, kc, lane);
                    else load_a_frag_trans_tf32(fw[i], W, 16 * i, kc, lane);
                }
#pragma unroll
                for (int j = 0; j < MP / 16; ++j)  // a's rows are the MMA's columns, read as a K-major b
                    load_b_frags_kmajor(fa + 2 * j, A, 16 * j, kc, lane);
                if constexpr (sizeof(T) == 4) {  // float32 rounded to TF32 once a fragment
                    round_tf32(&fw[0][0], BW / 16 * 4);
                    round_tf32(&fa[0][0], MP / 8 * 2);
                }
#pragma unroll
                for (int i = 0; i < BW / 16; ++i)
#pragma unroll
                    for (int j = 0; j < MP / 8; ++j) mma_m16n8<T>(acc[i][j], fw[i], fa[j]);
            }
            cur = cur + 1 == STAGES ? 0 : cur + 1;
            next = next + 1 == STAGES ? 0 : next + 1;
        }
        cp_async_wait<0>();
        __syncthreads();  // the ring is free: it takes the warps' sums, rows of MP + 1 (no bank conflicts)
        float* sums = reinterpret_cast<float*>(ring);
#pragma unroll
        for (int i = 0; i < BW / 16; ++i)
#pragma unroll
            for (int j = 0; j < MP / 8; ++j)
#pragma unroll
                for (int e = 0; e < 4; ++e) {  // lane l: W rows l / 4 (+ 8), a rows 2 (l % 4) (+ 1)
                    const int n = 16 * i + lane / 4 + 8 * (e / 2), m = 8 * j + 2 * (lane % 4) + e % 2;
                    sums[(warp * BW + n) * (MP + 1) + m] = acc[i][j][e];
                }
        __syncthreads();
        for (int idx = threadIdx.x; idx < BW * MP; idx += FR_THREADS) {  // n fastest: c's rows in runs
            const int n = idx % BW, m = idx / BW;
            float v = 0.f;
#pragma unroll
            for (int w = 0; w < WARPS; ++w) v += sums[(w * BW + n) * (MP + 1) + m];
            if (m0 + m < M && n0 + n < N) {
                if (gridDim.z > 1) {
                    partial[(blockIdx.z * M + m0 + m) * N + n0 + n] = v;
                    continue;
                }
                if (bias != nullptr) v += to_float(bias[(m0 + m) * sbm + (n0 + n) * sbn]);  // before the one rounding
                c[(m0 + m) * N + n0 + n] = from_float<T>(v);
            }
        }
        unsigned* count = counters + (m0 / MP) * gridDim.x + blockIdx.x;
        if (gridDim.z > 1) {  // the tile's last run to finish adds every run's sums, in run order
            if (last_run(count, gridDim.z, threadIdx.x == 0, [] { __syncthreads(); })) {
                // a thread's PER elements of each run read at once (L2 reads: other SMs wrote them)
                constexpr int PER = BW * MP / FR_THREADS;
                float v[PER];
                for (unsigned r = 0; r < gridDim.z; ++r)
#pragma unroll
                    for (int q = 0; q < PER; ++q) {
                        const int idx = threadIdx.x + q * FR_THREADS, n = idx % BW, m = idx / BW;
                        const float x = m0 + m < M && n0 + n < N ? __ldcg(partial + (r * M + m0 + m) * N + n0 + n) : 0.f;
                        v[q] = r == 0 ? x : v[q] + x;  // (matmul_split_reduce's order: the same bits)
                    }
#pragma unroll
                for (int q = 0; q < PER; ++q) {
                    const int idx = threadIdx.x + q * FR_THREADS, n = idx % BW, m = idx / BW;
                    if (m0 + m >= M || n0 + n >= N) continue;
                    if (bias != nullptr) v[q] += to_float(bias[(m0 + m) * sbm + (n0 + n) * sbn]);
                    c[(m0 + m) * N + n0 + n] = from_float<T>(v[q]);
                }
                if (threadIdx.x == 0) *count = 0;  // ready for the next call
            }
        }
        __syncthreads();  // the sums are read before the next rows' slices land on them
    }
}
