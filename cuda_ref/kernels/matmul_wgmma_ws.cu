// Matrix multiplication on Hopper's warpgroup MMA with specialized warps (wgmma_ws), the
// tensor-core walk's step 5 (the sum of split-K partial products, matmul_split_reduce, is in
// matmul_few_rows.cu).
// Compiled for sm_90a; the shared pieces are in wgmma.cuh (see matmul_wgmma.cu for the tiles,
// the tensor maps and the ring). Launch geometry lives in cuda_ref/_matmul_wgmma.py.

#include "wgmma.cuh"

// =================================================================================================
// matmul_wgmma_ws: wgmma's tiles and MMAs, its warps specialized. A producer warpgroup (one thread
// of it issues every TMA copy; setmaxnreg gives its registers to the others) runs ahead through the
// ring, waiting only for a stage's "empty" barrier; two consumer warpgroups wait on "full", compute,
// and arrive on "empty" once their MMAs have read the stage. No block-wide barrier in the loop.
// The grid is persistent (one block per SM walks the tiles in grouped order), so the producer
// loads the next tile while the consumers store this one.
//   CLUSTER 2: the blocks run in pairs (a thread-block cluster) on tiles m0, m0 + 128 of the same
//   columns; each block brings half of the shared b tile and TMA multicasts it into both, so L2
//   serves b once for two tiles. A stage is free only when the consumers of both blocks are done
//   with it: every consumer warp arrives on the empty barrier of both.
//   splits > 1 (split K, for grids of few tiles: a few rows of a, or few columns): a unit is a
//   tile and one of `splits` runs of k-slices. With `flags` (a few runs, each unit its own pair:
//   unit u on pair u), every run but the last hands its float32 sums over in its pair's slot, as
//   stream-K's parts do, and the last run's pair adds them in k order and stores the tile. Without,
//   each run's sums go to partial[s] (M x N each) and matmul_split_reduce adds them. Either way the
//   order is fixed, so results repeat bit for bit.
//   The walk's counts come from the host (in the constant bank they hold no registers): `tiles`
//   units of CLUSTER tiles stacked in M (a pair's two tiles share their columns), and `k_tiles`
//   slices of K (a split's runs: none empty). 32-bit throughout: a 64-bit division is a called
//   subroutine, and the producer has 40 registers.
//   sk > 0 (stream-K, where the last wave would leave most pairs idle): the last sk units are not
//   walked whole; after the whole units, their k-slices, in one run, are shared evenly by all the
//   pairs, so every pair ends at the same time. A unit that several pairs share is finished by the
//   one with its first slice, at the end of its share; each of the others puts its part's sums in
//   its slot of `partial` (float32, in the accumulators' layout) and raises its flag, and the
//   finisher waits on each flag in turn, adds the slots in k order (results repeat bit for bit) and
//   lowers the flag (so `flags` is all zeros between calls). A pair waits only on pairs after it,
//   and the last never waits, so this finishes wherever every block of the grid is resident at
//   once (the grid is one block per SM).
//   TN: a tile's columns of c, 256, or 192 or 128 where wide tiles would leave SMs idle (a third
//   or twice the units, each its share of the MMAs and of a hand-over); 64 for products of at most
//   64 columns (a LoRA down projection, attention's p @ v at head size 64 in a batch walk: half of a
//   128-column tile's MMAs or more would be on zeros).
//   CONSUMERS 1: one consumer warpgroup, tiles of 64 x 256, for a few rows of a (at M = 16 a 128-row
//   tile's MMAs would be seven eighths zeros); a stage keeps its layout, half of a's part unused.
//   BATCHED: a batch of products (torch.bmm), each its own matrices of 3-D maps (the batch their
//   outer extent, so a tile's loads and stores are clipped at its product's edges), the units walked
//   product after product; `one` says which operand is one matrix for all (bit 0 a, bit 1 b: its
//   map holds one, read at 0). c is contiguous, its products one after another. K whole: no split,
//   no stream-K, no bias (the host passes none); 128-row tiles (two consumers) at any M.
//   store_tma: each consumer warpgroup writes its 64 x 256 tile 64 columns at a time into one of
//   two 8 KiB shared boxes (128-byte swizzled: conflict-free) and one thread hands each box to TMA
//   (cp.async.bulk.tensor store, clipped at the matrix edge), which drains while the warpgroup goes
//   on. store_tma 2: the tile is packed to c's type in registers, and its four boxes go out one
//   after each of the next tile's first four k-slices is issued, while those MMAs run, rather than
//   with the tensor cores idle. Needs c's rows 16-byte aligned; otherwise c is written from the
//   accumulators with guarded stores.
//   T = float: float32 as TF32 (m64nNk8: a K-slice is the same 128 bytes, 32 k), a and b K-major
//   (the host copies what lies otherwise), c written from the accumulators, no bias, no batch.
// =================================================================================================
namespace wg {
// This block's pair, read afresh at each use (a register held through the MMAs would be one too many).
template <int CLUSTER>
__device__ __forceinline__ unsigned pair_index() {
    unsigned block;
    asm volatile("mov.u32 %0, %%ctaid.x;" : "=r"(block));
    return block / CLUSTER;
}

// Stream-K's shares: pair p's starts at share_begin(p), `share` k-slices long (one more for the first
// `longer` pairs). (The host divides: a division here would hold registers the MMAs need.)
__device__ __forceinline__ unsigned share_begin(unsigned p, unsigned share, unsigned longer) {
    return p * share + min(p, longer);
}

// The segments a pair walks, each a unit and a run of its k-slices: whole units (each in `splits`
// runs) from `pair` on, a grid of pairs apart, then the pair's share of the stream-K slices of the
// last sk units (numbered from the first of them). One cursor for both, the top bit set for the
// slices; counts are derived on use (the consumers' registers are short). Host: slices < 2^31.
template <int CLUSTER>
struct Walk {
    static constexpr unsigned SLICES = 1u << 31;
    unsigned at;
    const unsigned pairs, tiles, splits, sk, share, longer, k_tiles;
    __device__ __forceinline__ Walk(unsigned pairs, unsigned tiles, unsigned splits, unsigned sk, unsigned share,
                                    unsigned longer, unsigned k_tiles)
        : at(pair_index<CLUSTER>()), pairs(pairs), tiles(tiles), splits(splits), sk(sk), share(share),
          longer(longer), k_tiles(k_tiles) {}
    __device__ __forceinline__ bool next(unsigned& tile, int& k_first, int& k_end) {
        if (!(at & SLICES)) {
            if (at < tiles * splits - sk) {
                tile = at % tiles;
                const unsigned k_run = (k_tiles + splits - 1) / splits;
                k_first = (int)(at / tiles * k_run);
                k_end = (int)min(k_tiles, k_first + k_run);
                at += pairs;
                return true;
            }
            at = SLICES | share_begin(pair_index<CLUSTER>(), share, longer);
        }
        const unsigned slice = at & ~SLICES, end = share_begin(pair_index<CLUSTER>() + 1, share, longer);
        if (slice >= end) return false;
        const unsigned i = slice / k_tiles, k0 = i * k_tiles;
        tile = tiles - sk + i;
        k_first = (int)(slice - k0);
        k_end = (int)min(end - k0, k_tiles);
        at = SLICES | (k0 + k_end);
        return true;
    }
};

// A batch's walk (BATCHED): the product of `tile` (units of BM x BN tiles of M x N products, one
// product's after another's), and `tile` made that product's own. 32-bit: the units fit (host).
template <int BM, int BN>
__device__ __forceinline__ unsigned split_product(unsigned& tile, i64 M, i64 N) {
    const unsigned per = (unsigned)((M + BM - 1) / BM) * (unsigned)((N + BN - 1) / BN);
    const unsigned z = tile / per;
    tile -= z * per;
    return z;
}

// The packed tile's registers, free again where no new tile is packed into them. Every box of it
// is stored by then, but the compiler cannot tell, and would keep its 64 registers live through
// stream-K's adds; a value written here ends the old one's life (an empty asm would not: ptxas
// would take its output as live from the kernel's start).
template <int WORDS>
__device__ __forceinline__ void forget(unsigned* w) {
#pragma unroll
    for (int p = 0; p < WORDS; ++p) w[p] = 0;
}

}  // namespace wg

// lab/trace_wgmma.py compiles with -DWS_TRACE: the first consumer warpgroup's thread 0 notes
// clock64 at each of its first six tiles' steps (slots 5 i + 1 ..: before the first k-slice's wait,
// after it, after the drain, after the tile's store or hand-over, and the cycles spent waiting for
// the later k-slices), when the last tile that took a hand-over (or took none) had it (0) and when
// the block's last stores were done (32), then the tiles walked (33) and %globaltimer at the start and the end (34, 35),
// so a tile's MMA time reads against the tensor cores' 1024 cycles a slice. ws_copy[block][i][j]:
// for tile i < 3 and its k-slice ws_copy_at's j-th, when the producer issued it, when the consumer
// had it, and when the consumer began to wait for it (the same SM's clock): a copy's latency
// through a tile.
#ifdef WS_TRACE
constexpr int WS_TRACE_SLOTS = 36;
__device__ unsigned long long ws_trace[1024][WS_TRACE_SLOTS];
__device__ __forceinline__ unsigned long long globaltimer() {
    unsigned long long ns;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(ns));
    return ns;
}
#define WS_MARK(slot, value) \
    do { if (threadIdx.x == 128) ws_trace[blockIdx.x][slot] = (value); } while (0)
__device__ unsigned long long ws_copy[1024][3][12][3];
__device__ __forceinline__ int ws_copy_at(int k) {  // the index of k-slice k among those noted, or -1
    const int at[12] = {0, 1, 2, 3, 4, 8, 16, 32, 60, 61, 62, 63};
    for (int j = 0; j < 12; ++j) if (at[j] == k) return j;
    return -1;
}
#define WS_COPY(tile, k, who, value) \
    do { const int j_ = ws_copy_at(k); if ((tile) < 3 && j_ >= 0) ws_copy[blockIdx.x][tile][j_][who] = (value); } while (0)
#else
#define WS_COPY(tile, k, who, value) do {} while (0)
#define WS_MARK(slot, value) do {} while (0)
#endif
template <typename T, bool A_MMAJOR, bool B_NMAJOR, int STAGES, int CLUSTER, int CONSUMERS, int TN = wg::BN,
          bool BATCHED = false>
__global__ void __launch_bounds__(128 * (1 + CONSUMERS), 1) __cluster_dims__(CLUSTER, 1, 1)
matmul_wgmma_ws(const __grid_constant__ TensorMap map_a, const __grid_constant__ TensorMap map_b,
                const __grid_constant__ TensorMap map_c, out_t<T>* __restrict__ c, i64 M, i64 N, i64 K,
                float* __restrict__ partial, int splits, int store_tma, int group_m,
                unsigned tiles, unsigned k_tiles, unsigned sk, unsigned sk_share, unsigned sk_longer,
                unsigned* __restrict__ flags, const T* __restrict__ bias, i64 sbm, i64 sbn, int one) {
    using namespace wg;
    static_assert(sizeof(T) == 2 || (sizeof(T) == 4 && !A_MMAJOR && !B_NMAJOR && !BATCHED),
                  "16-bit, or float32 as TF32 with a and b K-major");
    static_assert(CLUSTER == 1 || CLUSTER == 2, "blocks run alone or in pairs");
    static_assert(CONSUMERS == 2 || (CONSUMERS == 1 && CLUSTER == 1), "64-row tiles run alone");
    static_assert(TN == BN || TN == 192 || TN == 128 || (TN == 64 && CONSUMERS == 2),
                  "tiles of 256 columns of c, or 192 or 128; 64 for products of at most 64 (128 rows)");
    static_assert(!BATCHED || CONSUMERS == 2, "a batch in 128-row tiles (64-row ones spilled: NVRTC 13.0)");
    if constexpr (BATCHED) {  // a batch's walk: K whole, no bias (_matmul_batched.py): its hand-overs compiled out
        splits = 1, sk = 0, flags = nullptr, bias = nullptr;
    }
    constexpr int TILE_M = 64 * CONSUMERS;  // a block's rows of c: a consumer warpgroup's 64 each
    constexpr int BOXES = TN / 64;          // c's 64 x 64 boxes in a warpgroup's tile
    constexpr int WORDS = TN / 4;           // a warpgroup's tile packed to c's type, a thread's words
    extern __shared__ __align__(128) unsigned char ring[];
    unsigned char* smem = ring + ((1024 - (smem_addr(ring) & 1023)) & 1023);
    unsigned char* staging = smem + STAGES * stage_bytes<TN>;  // store_tma: c's boxes
    unsigned long long* full = reinterpret_cast<unsigned long long*>(staging + C_BYTES);
    unsigned long long* empty = full + STAGES;
    const int group = threadIdx.x / 128, t = threadIdx.x % 128;
    const unsigned rank = CLUSTER == 1 ? 0 : cluster_rank();
    const unsigned pairs = gridDim.x / CLUSTER;
    init_ring<STAGES, CLUSTER>(full, empty, CONSUMERS);

    if (group == 0) {  // producer
        asm volatile("setmaxnreg.dec.sync.aligned.u32 40;");
        if (t == 0) {
            int s = 0;  // the next slice's stage, over every tile, and the parity of its use
            unsigned phase = 0;
            unsigned tile;
            int k_first, k_end;
            Walk<CLUSTER> walk(pairs, tiles, splits, sk, sk_share, sk_longer, k_tiles);
            unsigned traced = 0;  // (WS_TRACE only)
            while (walk.next(tile, k_first, k_end)) {
                i64 m0, n0;
                const unsigned z = BATCHED ? split_product<CLUSTER * TILE_M, TN>(tile, M, N) : 0;
                const int za = one & 1 ? 0 : (int)z, zb = one & 2 ? 0 : (int)z;
                grouped_origin_of<CLUSTER * TILE_M, TN>(tile, M, N, group_m, m0, n0);
                m0 += rank * TILE_M;
                for (int kt = k_first; kt < k_end; ++kt, next_stage<STAGES>(s, phase)) {
                    // a fresh barrier counts its "previous" phase (parity 1) as complete: no wait at first
                    mbar_wait(&empty[s], phase ^ 1);
                    if (CLUSTER == 1)
                        issue_stage<T, A_MMAJOR, B_NMAJOR, TILE_M, TN, BATCHED>(smem, s, &full[s], &map_a, &map_b, kt,
                                                                                m0, n0, za, zb);
                    else
                        issue_stage_pair<T, A_MMAJOR, B_NMAJOR, TN, BATCHED>(smem, s, &full[s], &map_a, &map_b, kt, m0,
                                                                             n0, rank, za, zb);
                    WS_COPY(traced, kt - k_first, 0, clock64());
                }
                ++traced;
            }
        }
        if (CLUSTER > 1) cluster_sync();  // (see the end)
        return;
    }
    asm volatile("setmaxnreg.inc.sync.aligned.u32 232;");
    // half: broadcast from lane 0, ptxas knows it uniform in the warp and keeps it, and the
    // descriptors made once from it, in uniform registers (mma_stage_at)
    const int half = __shfl_sync(0xffffffffu, group - 1, 0);
    const unsigned long long desc_a = descriptor_a<A_MMAJOR>(smem, half), desc_b = descriptor_b<B_NMAJOR>(smem);
    unsigned char* boxes = staging + half * (C_BYTES / 2);
    int s = 0, last = 0;  // the next slice's stage, over every tile, the parity of its use; the slice before's
    unsigned phase = 0;
    acc_t<T> d[TN / 2];
    // store_tma: the last tile, packed to c's type, and how many of its BOXES boxes are stored; with
    // store_tma 2 box j goes out after the MMAs of the next tile's k-slice j are issued, so the
    // tensor cores are not idle while the warpgroup stores
    unsigned w[WORDS];
    int stored = BOXES;
    int w_r0 = 0, w_n0 = 0, w_z = 0;  // (TMA coordinates are 32-bit)
    auto store_next = [&]() {
        switch (stored++) {
            case 0: store_box<0, BATCHED, BOXES>(&map_c, w, boxes, t, half, w_r0, w_n0, w_z); break;
            case 1: if constexpr (BOXES > 1) store_box<1, BATCHED, BOXES>(&map_c, w, boxes, t, half, w_r0, w_n0, w_z); break;
            case 2: if constexpr (BOXES > 2) store_box<2, BATCHED, BOXES>(&map_c, w, boxes, t, half, w_r0, w_n0, w_z); break;
            default: if constexpr (BOXES == 4) store_box<3, BATCHED, BOXES>(&map_c, w, boxes, t, half, w_r0, w_n0, w_z); break;
        }
    };
    // a warp hands stage s back to the producer of each block of the pair (lane r to block r)
    auto release = [&](int s) {
        if (CLUSTER == 1 && t % 32 == 0) mbar_arrive(&empty[s]);
        if (CLUSTER > 1 && t % 32 < CLUSTER) mbar_arrive_cluster(&empty[s], t % 32);
    };
    unsigned tile;
    int k_first, k_end;
    unsigned walked = 0;  // (WS_TRACE only)
    WS_MARK(34, globaltimer());
    Walk<CLUSTER> walk(pairs, tiles, splits, sk, sk_share, sk_longer, k_tiles);
    bool more = walk.next(tile, k_first, k_end);  // (the host makes no empty runs)
    while (more) {
        const unsigned mark = 1 + 5 * min(walked++, 5u);
        WS_MARK(mark, clock64());
#ifdef WS_TRACE
        unsigned long long waited = 0;
#endif
        for (int kt = k_first; kt < k_end; ++kt, last = s, next_stage<STAGES>(s, phase)) {
#ifdef WS_TRACE
            const unsigned long long before = clock64();
#endif
            mbar_wait(&full[s], phase);
#ifdef WS_TRACE
            if (kt > k_first) waited += clock64() - before;
#endif
            if (kt == k_first) WS_MARK(mark + 1, clock64());
#ifdef WS_TRACE
            if (threadIdx.x == 128) {
                WS_COPY(walked - 1, kt - k_first, 1, clock64());
                WS_COPY(walked - 1, kt - k_first, 2, before);
            }
#endif
            mma_stage_at<T, A_MMAJOR, B_NMAJOR, TN>(d, desc_a, desc_b, s, kt > k_first);
            if (stored < BOXES) store_next();
            wgmma_wait<1>();  // the MMAs of the k-tile before are done: hand its stage back
            if (kt > k_first) release(last);
        }
        while (stored < BOXES) store_next();  // (a run of fewer k-slices than boxes)
        // While the last MMAs run: this tile's origin (not held through the MMAs: registers are
        // short there), and the walk's next step, so little is left between this tile's drain and
        // the next tile's first MMAs (lab/trace_wgmma.py).
        unsigned done = tile;
        const unsigned z = BATCHED ? split_product<CLUSTER * TILE_M, TN>(done, M, N) : 0;
        const int done_first = k_first, done_end = k_end;
        i64 m0, n0;
        grouped_origin_of<CLUSTER * TILE_M, TN>(done, M, N, group_m, m0, n0);
        m0 += rank * TILE_M;
        more = walk.next(tile, k_first, k_end);
        drain<acc_t<T>, TN / 2>(d);
        WS_MARK(mark + 2, clock64());
        WS_MARK(mark + 4, waited);
        release(last);  // the producer refills while we store
        // the hand-over slots (stream-K, split K in the kernel): one a warpgroup of every block, (pair, rank, half)
        const auto slot = [&](unsigned p) { return (p * CLUSTER + rank) * CONSUMERS + half; };
        // this warp's rows of the tile in c; evaluated at each use: held as a value, it spilled the
        // one-consumer instance (232 registers) under NVRTC 13.0
        const auto live = [&]() { return m0 + half * 64 + 16 * (t / 32) < M; };
        if (splits > 1 && !flags) {  // split K, summed by matmul_split_reduce
            const i64 run = done_first / ((k_tiles + splits - 1) / splits);
            store_tile<T, float, TN>(d, partial + run * M * N, M, N, m0 + half * 64, n0, t);
            continue;
        }
        // a part handed over: stream-K's later parts of a shared unit (to the pair with its first);
        // split K's runs but the last (to the pair with the last run)
        if (splits > 1 ? done_end < (int)k_tiles : done_first > 0) {
            const unsigned pair = pair_index<CLUSTER>();
            slot_put<TN>(d, partial + (i64)slot(pair) * (64 * TN), flags + slot(pair), t, half, live());
            forget<WORDS>(w);
            WS_MARK(mark + 3, clock64());
            continue;
        }
        if (splits > 1) {  // split K's last run: the others' sums, in k order (run r is unit done + r tiles)
            for (unsigned r = 0; r + 1 < (unsigned)splits; ++r)
                slot_add<TN>(d, partial + (i64)slot(done + r * tiles) * (64 * TN), flags + slot(done + r * tiles), t,
                             half, live());
        } else if (done_end < (int)k_tiles) {  // stream-K: the first part; the later ones from the pairs after this
            const unsigned unit_end = (done + sk - tiles + 1) * k_tiles;  // in the stream-K slices
            for (unsigned p = pair_index<CLUSTER>() + 1; share_begin(p, sk_share, sk_longer) < unit_end; ++p)
                slot_add<TN>(d, partial + (i64)slot(p) * (64 * TN), flags + slot(p), t, half, live());
        }
        WS_MARK(0, clock64());  // (the tile's hand-over is done: the others' sums added)
        if constexpr (sizeof(T) == 2) {  // (the switch's addmm: one rounding; its biases are 16-bit)
            if (bias) add_bias<CONSUMERS == 2, T, TN>(d, bias, sbm, sbn, M, N, m0 + half * 64, n0, t);
        }
        if (store_tma) {  // (16-bit c only: the host passes 0 for TF32's, whose 64 x 64 box passes 128 bytes)
            if constexpr (sizeof(T) == 2) pack<T, WORDS>(d, w);
            w_r0 = (int)(m0 + half * 64), w_n0 = (int)n0, w_z = (int)z, stored = 0;
            if (store_tma == 1)
                while (stored < BOXES) store_next();
        } else {
            store_tile<T, out_t<T>, TN>(d, BATCHED ? c + (i64)z * M * N : c, M, N, m0 + half * 64, n0, t);
            forget<WORDS>(w);
        }
        WS_MARK(mark + 3, clock64());
    }
    while (stored < BOXES) store_next();
    if (store_tma && t == 0) asm volatile("cp.async.bulk.wait_group 0;" ::: "memory");  // before the block's memory goes
    WS_MARK(32, clock64());
    WS_MARK(33, walked);
    WS_MARK(35, globaltimer());
    // a block of a pair leaves only once the other no longer arrives on its barriers or copies into it
    if (CLUSTER > 1) cluster_sync();
}
