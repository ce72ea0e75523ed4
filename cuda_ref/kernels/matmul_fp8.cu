// FP8 matrix multiplication with scales on Hopper's warpgroup MMA (sm_90a): c = (a * scale_a) @
// (b * scale_b), torch._scaled_mm's product and DeepSeek-V3's block scales. Launch geometry and
// the scalings' checks live in cuda_ref/_matmul_fp8.py; the ring, TMA and descriptors in wgmma.cuh.
//
// wgmma_ws's structure (matmul_wgmma_ws.cu), one block an SM walking TILE_M x TN tiles of c in
// grouped order: a producer warpgroup (one thread issues the TMA copies of a's and b's 128-byte
// k-slices, 128 k of FP8, into a ring of stages) and CONSUMERS consumer warpgroups, 64 rows of the
// tile each. FP8's wgmma reads both operands K-major: a row-major a and b = W.t() of a row-major
// (N, K) W. CLUSTER 2: the blocks run in pairs on tiles m0, m0 + 128 of the same columns, each
// bringing half of b's tile by TMA multicast into both (wgmma_ws's pairs): L2 serves b once for two.
//
// Hopper's FP8 MMA keeps fewer bits than float32 over a long sum. PROMOTE (torch's default,
// use_fast_accum=False): each k-slice's product is summed apart (the MMA's sums start afresh) and
// added to float32 totals once its MMAs are done, times its block scales where BLOCK_SCALES
// (DeepGEMM's promotion). A warpgroup waits for its slice's MMAs before adding; with
// three consumers the other two's MMAs hide most of it (promoted runs at 0.88-0.92 of the chained
// rate; the two-consumer warpgroups issuing in turns, or two sets of sums a warpgroup, did not
// help: docs/decisions/049-cuda-fp8.md). Without PROMOTE the slices chain in the MMA's sums (fast
// accumulation) and only the last waits. Per-tensor and row-wise scales multiply the float32 tile
// once, in the epilogue. c (bfloat16 or float32) by guarded stores. Where the tiles fill under half
// the SMs, K runs in `splits` pieces, a block each, handed over in one launch (wgmma_ws's slots).

#include "wgmma.cuh"

namespace wg {
// The scalings (`scaling`): one scale each; one a row of a and a column of b; blocks of 1 x 128 of a
// (scale_a[m, kb]) and 128 x 128 of b (scale_b[kb, nb]), kb a 128-deep k-slice: one ring stage
// (code 2, the instances of BLOCK_SCALES).
constexpr int FP8_TENSOR = 0, FP8_ROW = 1;
constexpr int FP8_SCALE_N = 128;  // the columns of b a block scale covers

// A stage of the ring: 128 k of a's TILE_M rows, then of b's TN (wgmma.cuh's layout at TILE_M 128).
template <int TILE_M, int TN>
constexpr int fp8_stage_bytes = (TILE_M + TN) * BK_BYTES;

// The four MMAs (32 k each) of stage s, TN columns: d += a b, or d = a b where `add` is 0. da, db:
// the descriptors of stage 0's a rows of this warpgroup and of its b; stage s and k step k lie
// s STAGE + 32 k bytes further, which adds (s STAGE + 32 k) / 16 to the descriptors' start
// addresses (no carry out of their 14 bits: shared memory ends below 256 KiB). Made once a
// kernel, in uniform registers, the descriptors leave a slice's MMAs back to back: rebuilt a slice
// from the stage's address, they cost 62 instructions between the stage's wait and its last MMA
// where Gluon's ws_fp8 issues 26 (SASS, sm_90a; docs/decisions/049-cuda-fp8.md).
template <typename TA, typename TB, int TILE_M, int TN>
__device__ __forceinline__ void mma_stage_fp8(float* d, unsigned long long da, unsigned long long db, int s, int add) {
    const unsigned long long at = (unsigned long long)(s * (fp8_stage_bytes<TILE_M, TN> >> 4));
    wgmma_fence();
#pragma unroll
    for (int k = 0; k < BK_BYTES / 32; ++k)
        MmaFp8<TA, TB, TN>::run(d, da + at + 2 * k, db + at + 2 * k, k > 0 || add);
    wgmma_commit();
}
}  // namespace wg

// scaling: FP8_TENSOR, FP8_ROW or block scales, the last exactly where BLOCK_SCALES (instances of
// their own: the others' slices add without scales, their loop carries no block path; only with PROMOTE);
// a scale's element (i, j) at scale_a[i sam + j sak], scale_b[i sbk + j sbn] (a stride 0 where
// the scaling has no such index)
// CONSUMERS: consumer warpgroups, 64 rows of the tile each (TILE_M = 64 CONSUMERS): 2, or 3 for
// promoted slices, where each waits for its MMAs before adding them and two others' keep the
// tensor cores busy meanwhile (their registers: 152 a thread, against 232 for two)
template <typename TA, typename TB, typename Out, bool PROMOTE, bool BLOCK_SCALES, int STAGES, int CLUSTER, int TN,
          int CONSUMERS>
__global__ void __launch_bounds__(128 * (1 + CONSUMERS), 1) __cluster_dims__(CLUSTER, 1, 1)
matmul_fp8(const __grid_constant__ TensorMap map_a, const __grid_constant__ TensorMap map_b, Out* __restrict__ c,
           i64 M, i64 N, const float* __restrict__ scale_a, const float* __restrict__ scale_b, i64 sam, i64 sak,
           i64 sbk, i64 sbn, int group_m, unsigned tiles, unsigned k_tiles, int scaling, unsigned splits,
           float* __restrict__ partial, unsigned* __restrict__ flags) {
    using namespace wg;
    static_assert(sizeof(TA) == 1 && sizeof(TB) == 1, "FP8 operands");
    static_assert(CLUSTER == 1 || CLUSTER == 2, "blocks run alone or in pairs");
    static_assert(TN == 128 || TN == 192 || TN == 256, "tiles of 128, 192 or 256 columns");
    static_assert(!PROMOTE || TN == FP8_SCALE_N, "promoted slices on tiles of one block scale's columns");
    static_assert(!BLOCK_SCALES || PROMOTE, "block scales promote every slice");
    static_assert(CONSUMERS == 2 || (CONSUMERS == 3 && CLUSTER == 1), "two consumers, or three alone");
    constexpr int TILE_M = 64 * CONSUMERS, STAGE = fp8_stage_bytes<TILE_M, TN>;
    extern __shared__ __align__(128) unsigned char ring[];
    unsigned char* smem = ring + ((1024 - (smem_addr(ring) & 1023)) & 1023);
    unsigned long long* full = reinterpret_cast<unsigned long long*>(smem + STAGES * STAGE);
    unsigned long long* empty = full + STAGES;
    const int group = threadIdx.x / 128, t = threadIdx.x % 128;
    const unsigned rank = CLUSTER == 1 ? 0 : cluster_rank(), pair = blockIdx.x / CLUSTER, pairs = gridDim.x / CLUSTER;
    init_ring<STAGES, CLUSTER>(full, empty, CONSUMERS);
    // `tiles` counts units: CLUSTER tiles stacked in M, walked by a pair. Each unit in `splits` runs of
    // k-slices (item u: unit u % tiles, run u / tiles; none empty, the host's choice); with splits > 1
    // (CLUSTER 1, an item a block, all resident) every run but the last hands its sums over through its
    // slot of `partial` and its flag, and the last adds them in run order (the same bits every call).
    const unsigned items = tiles * splits, k_run = (k_tiles + splits - 1) / splits;

    if (group == 0) {  // producer
        asm volatile("setmaxnreg.dec.sync.aligned.u32 40;");
        if (t == 0) {
            int s = 0;  // the next slice's stage, over every tile, and the parity of its use
            unsigned phase = 0;
            for (unsigned item = pair; item < items; item += pairs) {
                i64 m0, n0;
                grouped_origin_of<CLUSTER * TILE_M, TN>(item % tiles, M, N, group_m, m0, n0);
                m0 += rank * TILE_M;
                const int k_first = (int)(item / tiles * k_run), k_end = (int)min(k_tiles, k_first + k_run);
                for (int kt = k_first; kt < k_end; ++kt, next_stage<STAGES>(s, phase)) {
                    mbar_wait(&empty[s], phase ^ 1);  // (a fresh barrier's parity 1 is complete)
                    if (CLUSTER == 1) {  // a's box of TILE_M rows, b's of TN
                        unsigned char* a = smem + s * STAGE;
                        mbar_expect_tx(&full[s], STAGE);
                        tma_load(a, &map_a, kt * BK_BYTES, (int)m0, &full[s]);
                        tma_load(a + TILE_M * BK_BYTES, &map_b, kt * BK_BYTES, (int)n0, &full[s]);
                    } else
                        issue_stage_pair<TA, false, false, TN>(smem, s, &full[s], &map_a, &map_b, kt, m0, n0, rank);
                }
            }
        }
        if (CLUSTER > 1) cluster_sync();  // (see the end)
        return;
    }
    if constexpr (CONSUMERS == 2)
        asm volatile("setmaxnreg.inc.sync.aligned.u32 232;");
    else
        asm volatile("setmaxnreg.inc.sync.aligned.u32 152;");
    // half: the warpgroup's 64 rows of the tile; broadcast from lane 0, ptxas knows it uniform in the
    // warp and keeps it, and the descriptors made from it, in uniform registers (from threadIdx it
    // built them in vector registers and moved them over, 8 R2UR a slice)
    const int half = __shfl_sync(0xffffffffu, group - 1, 0), warp = t / 32, lane = t % 32;
    const unsigned long long desc_a = descriptor(smem + half * BOX_BYTES, 16, 1024),
                             desc_b = descriptor(smem + TILE_M * BK_BYTES, 16, 1024);
    float d[TN / 2], total[PROMOTE ? TN / 2 : 1];
    // a warp hands stage s back to the producer of each block of the pair (lane r to block r)
    auto release = [&](int s) {
        if (CLUSTER == 1 && lane == 0) mbar_arrive(&empty[s]);
        if (CLUSTER > 1 && lane < CLUSTER) mbar_arrive_cluster(&empty[s], lane);
    };
    int s = 0, last = 0;  // the next slice's stage, over every tile, the parity of its use; the slice before's
    unsigned phase = 0;
    for (unsigned item = pair; item < items; item += pairs) {
        i64 m0, n0;
        const unsigned tile = item % tiles, run = item / tiles;
        grouped_origin_of<CLUSTER * TILE_M, TN>(tile, M, N, group_m, m0, n0);
        m0 += rank * TILE_M;
        const int k_first = (int)(run * k_run), k_end = (int)min(k_tiles, k_first + k_run);
        const i64 r0 = m0 + half * 64, row = r0 + 16 * warp + lane / 4;  // the thread's rows: row, row + 8
        // BLOCK_SCALES: slice kt's for the thread's rows (f0: row, f1: row + 8), a's times
        // b's for the tile (its 128 columns one block), read a slice ahead: an L2 read takes longer
        // than a slice's MMAs
        float f0 = 0.f, f1 = 0.f, next0 = 0.f, next1 = 0.f;
        auto read_scales = [&](int kt) {
            const float fb = __ldg(scale_b + kt * sbk + (n0 / FP8_SCALE_N) * sbn);
            next0 = row < M ? __ldg(scale_a + row * sam + kt * sak) * fb : 0.f;
            next1 = row + 8 < M ? __ldg(scale_a + (row + 8) * sam + kt * sak) * fb : 0.f;
        };
        if constexpr (PROMOTE) {
#pragma unroll
            for (int i = 0; i < TN / 2; ++i) total[i] = 0.f;  // (one add a slice after, no first-slice case)
            if constexpr (BLOCK_SCALES) read_scales(k_first);
        }
        for (int kt = k_first; kt < k_end; ++kt, last = s, next_stage<STAGES>(s, phase)) {
            mbar_wait(&full[s], phase);
            mma_stage_fp8<TA, TB, TILE_M, TN>(d, desc_a, desc_b, s, PROMOTE ? 0 : kt > k_first);
            if constexpr (PROMOTE) {
                if constexpr (BLOCK_SCALES) {
                    f0 = next0, f1 = next1;
                    if (kt + 1 < k_end) read_scales(kt + 1);
                }
                // (the wait names no registers: without the drain's reads the compiler could
                // read d before the MMAs are done)
                drain<float, TN / 2>(d);
                release(s);  // the stage is read: the producers refill it
#pragma unroll
                for (int i = 0; i < TN / 2; ++i) {
                    if constexpr (BLOCK_SCALES)  // d[4 j], d[4 j + 1]: row; + 2, + 3: row + 8
                        total[i] = fmaf(d[i], (i % 4) < 2 ? f0 : f1, total[i]);
                    else
                        total[i] += d[i];
                }
            } else {
                wgmma_wait<1>();  // the slice before's MMAs are done: hand its stage back
                if (kt > k_first) release(last);
            }
        }
        if constexpr (!PROMOTE) {
            drain<float, TN / 2>(d);
            release(last);
        }
        float* sums = PROMOTE ? total : d;
        if (splits > 1) {  // (an item a block: slot `item`, and run r's of this unit at item + (r - run) tiles)
            const bool live = r0 + 16 * warp < M;
            if (run + 1 < splits) {
                slot_put<TN>(sums, partial + ((i64)item * CONSUMERS + half) * (64 * TN), flags + item * CONSUMERS + half,
                             t, half, live);
                continue;
            }
            for (unsigned r = 0; r + 1 < splits; ++r) {
                const unsigned from = tile + r * tiles;
                slot_add<TN>(sums, partial + ((i64)from * CONSUMERS + half) * (64 * TN), flags + from * CONSUMERS + half,
                             t, half, live);
            }
        }
        if (scaling == FP8_TENSOR) {
            const float f = __ldg(scale_a) * __ldg(scale_b);
#pragma unroll
            for (int i = 0; i < TN / 2; ++i) sums[i] *= f;
        } else if (scaling == FP8_ROW) {
            const float fa0 = row < M ? __ldg(scale_a + row * sam) : 0.f;
            const float fa1 = row + 8 < M ? __ldg(scale_a + (row + 8) * sam) : 0.f;
#pragma unroll
            for (int j = 0; j < TN / 8; ++j) {
                const i64 col = n0 + 8 * j + 2 * (lane % 4);
                const float fb0 = col < N ? __ldg(scale_b + col * sbn) : 0.f;
                const float fb1 = col + 1 < N ? __ldg(scale_b + (col + 1) * sbn) : 0.f;
                sums[4 * j] *= fa0 * fb0, sums[4 * j + 1] *= fa0 * fb1;
                sums[4 * j + 2] *= fa1 * fb0, sums[4 * j + 3] *= fa1 * fb1;
            }
        }
        store_tile<TA, Out, TN>(sums, c, M, N, r0, n0, t);
    }
    // a block of a pair leaves only once the other no longer arrives on its barriers or copies into it
    if (CLUSTER > 1) cluster_sync();
}
