// few_rows: a matmul c (M x N, contiguous) = a (M x K) b (K x N) with a handful of rows of a (a
// decode step's tokens), float32, float16 or bfloat16 in, float32 sums, c in the input type, on CUDA cores.
// What it takes (the launcher, cuda_ref/_matmul.py, makes it so, copying once where an operand is
// not): a row-major (row m at a + m * lda), b K-major (b = W.t(): column n at b + n * ldb), rows of
// a and b whole 16-byte vectors (lda and ldb multiples of 16 bytes), a and b 16-byte aligned. Its tensor-core sibling for 5 to 32 rows,
// few_rows_mma, lives in matmul_tc.cu beside the mma.sync pieces it shares.

#include "dtypes.cuh"

// ---- few_rows: a product with a handful of rows of a (decode: 1-4 tokens) is a GEMV over
// W = b^T with M vectors. Its bytes are W's, each read once, so tensor-core tiles of 128 rows
// would compute mostly padding and leave SMs idle (M = 1, N = 4096: 16 tiles for 132 SMs). A
// warp takes NC columns of c, rows of W contiguous along k (b K-major), and dots them with MR
// rows of a at a time in 16-byte loads (a's few rows stay in L1/L2): each load of a serves NC
// columns, each load of W MR rows. A shuffle reduction per result. Rows of a and W start 16-byte
// aligned (the launcher copies an operand that does not). A bias (the switch's addmm; null for
// none) joins lane 0's part of each float32 sum, which rounds once at the store: element (m, n)
// at m * sbm + n * sbn. (Added after the shuffles instead, NVRTC 13.0's ptxas spilled the float32
// 1 x 1 instance and 13.5's the 16-bit 4 x 2 ones.) ----
template <typename T, int MR, int NC>
__global__ void __launch_bounds__(256) matmul_few_rows(const T* __restrict__ a, const T* __restrict__ b,
                                                       T* __restrict__ c, i64 M, i64 N, i64 K, i64 lda, i64 ldb,
                                                       const T* __restrict__ bias, i64 sbm, i64 sbn) {
    constexpr int VEC = 16 / sizeof(T);
    union Vec { uint4 u; T v[VEC]; };
    const int lane = threadIdx.x % 32;
    const i64 n0 = (blockIdx.x * (i64)blockDim.x + threadIdx.x) / 32 * NC;
    if (n0 >= N) return;  // n0 is the same for a whole warp: warps leave whole, shuffles stay full
    const T* w[NC];
#pragma unroll
    for (int j = 0; j < NC; ++j) w[j] = b + min(n0 + j, N - 1) * ldb;  // columns past N: read, not stored
    const i64 nvec = K / VEC;
    for (i64 m0 = 0; m0 < M; m0 += MR) {
        const T* row[MR];
        float acc[MR][NC];
#pragma unroll
        for (int r = 0; r < MR; ++r) {
            row[r] = a + min(m0 + r, M - 1) * lda;  // rows past M: read row M - 1, store nothing
#pragma unroll
            for (int j = 0; j < NC; ++j) acc[r][j] = 0.f;
        }
#pragma unroll (MR * NC > 8 ? 1 : 2)  // (the launcher's tiles fit unrolled twice; bf16 8 x 1 spilled)
        for (i64 v = lane; v < nvec; v += 32) {
            Vec wv[NC], av[MR];
#pragma unroll
            for (int j = 0; j < NC; ++j) wv[j].u = *reinterpret_cast<const uint4*>(w[j] + v * VEC);
#pragma unroll
            for (int r = 0; r < MR; ++r) av[r].u = *reinterpret_cast<const uint4*>(row[r] + v * VEC);
#pragma unroll
            for (int e = 0; e < VEC; ++e) {
                float wf[NC];
#pragma unroll
                for (int j = 0; j < NC; ++j) wf[j] = to_float(wv[j].v[e]);
#pragma unroll
                for (int r = 0; r < MR; ++r) {
                    const float af = to_float(av[r].v[e]);
#pragma unroll
                    for (int j = 0; j < NC; ++j) acc[r][j] += af * wf[j];
                }
            }
        }
        for (i64 k = nvec * VEC + lane; k < K; k += 32) {
#pragma unroll
            for (int r = 0; r < MR; ++r) {
                const float af = to_float(row[r][k]);
#pragma unroll
                for (int j = 0; j < NC; ++j) acc[r][j] += af * to_float(w[j][k]);
            }
        }
        // the bias joins lane 0's part of each sum (the float32 sum then rounds once, at the store)
        if (bias != nullptr && lane == 0) {
#pragma unroll
            for (int r = 0; r < MR; ++r)
#pragma unroll
                for (int j = 0; j < NC; ++j)
                    if (m0 + r < M && n0 + j < N) acc[r][j] += to_float(bias[(m0 + r) * sbm + (n0 + j) * sbn]);
        }
#pragma unroll
        for (int r = 0; r < MR; ++r)
#pragma unroll
            for (int j = 0; j < NC; ++j) {
#pragma unroll
                for (int off = 16; off > 0; off /= 2) acc[r][j] += __shfl_xor_sync(0xffffffffu, acc[r][j], off);
                if (lane == 0 && m0 + r < M && n0 + j < N) c[(m0 + r) * N + n0 + j] = from_float<T>(acc[r][j]);
            }
    }
}
