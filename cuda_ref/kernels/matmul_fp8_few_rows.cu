// FP8 with scales for a few rows of a (cuda_ref/_matmul_fp8_few_rows.py plans it): c (M, N) =
// (a * scale_a) @ (b * scale_b), a (M, K) row-major and bt = b's transpose (N, K) row-major, both
// float8, rows 16-byte aligned. The weight's bytes bound such a product, which 128-row FP8 tiles
// read on as few SMs as the weight has column tiles; so, as few_rows_mma does for 16-bit types,
// the roles swap (c^T = W a^T: W's rows the MMA's 16-row side, a's rows its 8-column side) and the
// blocks are many: BW = 64 rows of W and MP rows of a a block, K in gridDim.y runs of k_run.
// Operands are widened to float16 as they leave shared memory (every e4m3 and e5m2 value is a
// float16, exactly: cvt.rn.f16x2.e4m3x2) for m16n8k16 with float32 sums: at least as precise as
// the FP8 MMA promoted every 128 k (torch._scaled_mm's default). Each warp takes 16 rows of W and
// every row of a over the whole run (no sums between warps). Slices of 128 k come by cp.async
// into a ring, each 16-byte chunk at chunk ^ (row % 8) of its 128-byte row, so a warp's fragment
// loads (8 rows, the same k) fall in 8 different bank groups.
// SCALING 0 (per tensor) and 1 (row-wise) scale the whole sum once; 2 (blocks: scale_a (M, K/128),
// scale_b (K/128, N/128)) each slice's. With runs (gridDim.y > 1) each run's float32 sums go to
// partial[run] (M x N) and the tile's last run to finish (a count a tile in counters, zero on
// entry, set back to zero by that run) adds them in run order: the same bits on every call, one
// launch (few_rows_mma's hand-over).

#include "dtypes.cuh"
#include "tc.cuh"
#include "mma_sync.cuh"

namespace fr8 {
constexpr int THREADS = 128, BW = 64, SK = 128;  // a block's rows of W, a slice's k (bytes)

template <typename T> struct Widen;
template <> struct Widen<e4m3_t> {
    __device__ static unsigned pair(unsigned short v) {  // two e4m3 (the lower k in the low byte) -> f16x2
        unsigned d;
        asm("cvt.rn.f16x2.e4m3x2 %0, %1;" : "=r"(d) : "h"(v));
        return d;
    }
};
template <> struct Widen<e5m2_t> {
    __device__ static unsigned pair(unsigned short v) {
        unsigned d;
        asm("cvt.rn.f16x2.e5m2x2 %0, %1;" : "=r"(d) : "h"(v));
        return d;
    }
};

// The two bytes at (row, k) of a slice in shared memory (k even), chunks swizzled by the row.
__device__ __forceinline__ unsigned short pair_at(const unsigned char* s, int row, int k) {
    return *reinterpret_cast<const unsigned short*>(s + row * SK + ((((k >> 4) ^ (row & 7)) << 4) | (k & 15)));
}

__device__ __forceinline__ float scale_of(const float* s, i64 i, i64 j, i64 si, i64 sj) { return __ldg(s + i * si + j * sj); }
}  // namespace fr8

template <typename TA, typename TB, typename OUT, int MP, int SCALING, int STAGES>
__global__ void __launch_bounds__(fr8::THREADS)
matmul_fp8_few_rows(const unsigned char* __restrict__ a, const unsigned char* __restrict__ bt, OUT* __restrict__ c,
                    i64 M, i64 N, i64 K, i64 lda, i64 ldb, const float* __restrict__ sa, const float* __restrict__ sb,
                    i64 sam, i64 sak, i64 sbk, i64 sbn, float* __restrict__ partial, i64 k_run,
                    unsigned* __restrict__ counters) {
    using namespace fr8;
    using namespace tc;
    static_assert(MP % 8 == 0 && MP <= 32, "a's rows in whole 8-row MMA columns");
    constexpr int STAGE = (BW + MP) * SK, W_COPIES = BW * (SK / 16) / THREADS;
    constexpr int A_CHUNKS = MP * (SK / 16), NB = MP / 8;
    extern __shared__ __align__(128) unsigned char ring[];
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
    const i64 n0 = (i64)blockIdx.x * BW, m0 = (i64)blockIdx.z * MP;
    const i64 k_begin = (i64)blockIdx.y * k_run, k_end = min(K, k_begin + k_run);
    const int slices = (int)((k_end - k_begin + SK - 1) / SK);

    // the copies of slice i into stage s: W's 64 rows (W_COPIES chunks a thread), a's MP rows
    auto issue = [&](int i, int s) {
        unsigned char* w_s = ring + s * STAGE;
        unsigned char* a_s = w_s + BW * SK;
        const i64 k0 = k_begin + (i64)i * SK;
#pragma unroll
        for (int j = 0; j < W_COPIES; ++j) {
            const int chunk = threadIdx.x + j * THREADS, r = chunk / (SK / 16), q = chunk % (SK / 16);
            const i64 k = k0 + 16 * q, n = n0 + r;
            const int bytes = n < N && k < k_end ? (int)min((i64)16, k_end - k) : 0;
            cp_async16(w_s + r * SK + ((q ^ (r & 7)) << 4), bytes ? bt + n * ldb + k : bt, bytes);
        }
        for (int chunk = threadIdx.x; chunk < A_CHUNKS; chunk += THREADS) {
            const int r = chunk / (SK / 16), q = chunk % (SK / 16);
            const i64 k = k0 + 16 * q, m = m0 + r;
            const int bytes = m < M && k < k_end ? (int)min((i64)16, k_end - k) : 0;
            cp_async16(a_s + r * SK + ((q ^ (r & 7)) << 4), bytes ? a + m * lda + k : a, bytes);
        }
    };

    float d[NB][4] = {};
#pragma unroll
    for (int i = 0; i < STAGES - 1; ++i) {
        if (i < slices) issue(i, i);
        cp_async_commit();
    }
    for (int i = 0; i < slices; ++i) {
        cp_async_wait<STAGES - 2>();
        __syncthreads();  // slice i landed for every thread; the stage slice i - 1 used is free
        if (i + STAGES - 1 < slices) issue(i + STAGES - 1, (i + STAGES - 1) % STAGES);
        cp_async_commit();
        const unsigned char* w_s = ring + (i % STAGES) * STAGE;
        const unsigned char* a_s = w_s + BW * SK;
        float e[NB][4] = {};  // this slice's sums (block scales: scaled, then added to d)
#pragma unroll
        for (int kk = 0; kk < SK; kk += 16) {
            unsigned fa[4];
            const int r = 16 * warp + g, k = kk + 2 * t;
            fa[0] = Widen<TB>::pair(pair_at(w_s, r, k));
            fa[1] = Widen<TB>::pair(pair_at(w_s, r + 8, k));
            fa[2] = Widen<TB>::pair(pair_at(w_s, r, k + 8));
            fa[3] = Widen<TB>::pair(pair_at(w_s, r + 8, k + 8));
#pragma unroll
            for (int j = 0; j < NB; ++j) {
                const unsigned fb[2] = {Widen<TA>::pair(pair_at(a_s, 8 * j + g, k)),
                                        Widen<TA>::pair(pair_at(a_s, 8 * j + g, k + 8))};
                if constexpr (SCALING == 2)
                    mma_m16n8<half_t>(e[j], fa, fb);
                else
                    mma_m16n8<half_t>(d[j], fa, fb);
            }
        }
        if (SCALING == 2) {  // the slice's scales: a's (row, kb), b's (kb, the row of W's 128-column block)
            const i64 kb = (k_begin + (i64)i * SK) / SK;
#pragma unroll
            for (int h = 0; h < 2; ++h) {
                const i64 n = n0 + 16 * warp + g + 8 * h;
                const float s_b = n < N ? scale_of(sb, kb, n / SK, sbk, sbn) : 0.f;
#pragma unroll
                for (int j = 0; j < NB; ++j)
#pragma unroll
                    for (int x = 0; x < 2; ++x) {
                        const i64 m = m0 + 8 * j + 2 * t + x;
                        d[j][2 * h + x] += e[j][2 * h + x] * (m < M ? scale_of(sa, m, kb, sam, sak) : 0.f) * s_b;
                    }
            }
        }
    }
    cp_async_wait<0>();

    // d's elements to c, scaled: rows m0 + 8 j + 2 t + x of a, rows n0 + 16 warp + g + 8 h of W
    auto finish = [&]() {
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            const i64 n = n0 + 16 * warp + g + 8 * h;
            if (n >= N) continue;
            const float s_b = SCALING == 2 ? 1.f : scale_of(sb, 0, n, 0, sbn);
#pragma unroll
            for (int j = 0; j < NB; ++j)
#pragma unroll
                for (int x = 0; x < 2; ++x) {
                    const i64 m = m0 + 8 * j + 2 * t + x;
                    if (m >= M) continue;
                    const float s_a = SCALING == 2 ? 1.f : scale_of(sa, m, 0, sam, 0);
                    c[m * N + n] = from_float<OUT>(d[j][2 * h + x] * s_a * s_b);
                }
        }
    };
    if (gridDim.y == 1) {
        finish();
        return;
    }
    // runs: this run's sums to partial[run], counted; the tile's last run adds every run's in order
    const i64 MN = M * N;
    auto offset = [&](int j, int q) -> i64 {  // d[j][q]'s element of an M x N run, or -1 outside c
        const i64 m = m0 + 8 * j + 2 * t + (q & 1), n = n0 + 16 * warp + g + 8 * (q >> 1);
        return m < M && n < N ? m * N + n : -1;
    };
#pragma unroll
    for (int j = 0; j < NB; ++j)
#pragma unroll
        for (int q = 0; q < 4; ++q) {
            const i64 o = offset(j, q);
            if (o >= 0) partial[(i64)blockIdx.y * MN + o] = d[j][q];
        }
    __threadfence();
    __syncthreads();
    __shared__ unsigned last;
    const unsigned tile = blockIdx.z * gridDim.x + blockIdx.x;
    if (threadIdx.x == 0) last = atomicAdd(counters + tile, 1u) == gridDim.y - 1;
    __syncthreads();
    if (!last) return;
    __threadfence();  // (the other runs' sums, written before their counts)
#pragma unroll
    for (int j = 0; j < NB; ++j)
#pragma unroll
        for (int q = 0; q < 4; ++q) {
            const i64 o = offset(j, q);
            float sum = 0.f;
            if (o >= 0)
                for (unsigned run = 0; run < gridDim.y; ++run) sum += __ldcg(partial + run * MN + o);
            d[j][q] = sum;
        }
    finish();
    if (threadIdx.x == 0) counters[tile] = 0;
}
