// few_rows: a matmul c (M x N, contiguous) = a (M x K) b (K x N) with a handful of rows of a (a
// decode step's tokens), float32, float16 or bfloat16 in, float32 sums, c in the input type, on CUDA cores.
// What matmul_few_rows takes (the launcher, cuda_ref/_matmul_few_rows.py, makes it so, copying once
// where an operand is not): a row-major (row m at a + m * lda), b K-major (b = W.t(): column n at
// b + n * ldb), rows of a and b whole 16-byte vectors (lda and ldb multiples of 16 bytes), a and b
// 16-byte aligned. matmul_few_rows_row reads a row-major b as it lies. Their tensor-core sibling
// for 2 to 32 rows, few_rows_mma, lives in matmul_few_rows_mma.cu. The file also holds
// matmul_split_reduce, every split's sum, compiled here for any architecture.

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
// 1 x 1 instance and 13.5's the 16-bit 4 x 2 ones.) Eight columns a warp are bound to two blocks an
// SM, what they were measured at: without the bound NVRTC 13.0's ptxas spilled the bf16 1 x 8 one. ----
template <typename T, int MR, int NC>
__global__ void __launch_bounds__(256, NC >= 8 ? 2 : 0) matmul_few_rows(const T* __restrict__ a, const T* __restrict__ b,
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

// ---- few_rows on a row-major b (rows along n: GPT-2's Conv1D weight, an LM head), read where it
// lies, never copied. Its bytes are b's, read once; only many bytes in flight reach the bandwidth.
// A block takes COLS columns, its 8 warps every 8th k of each chunk of KC, the next U k rows
// loaded while this U's multiply-adds run. VEC (rows and base 16-byte aligned): a lane reads NV
// adjacent columns in one 16-byte load, a warp 512 bytes of a row; else (rows at any alignment:
// 50257 columns) a lane reads 2 columns 32 apart, a warp 32 adjacent elements a load. a's MR rows are staged in shared
// memory as float a chunk at a time, each value broadcast; the warps' sums are added in warp order
// through shared memory. Where the column blocks alone leave SMs idle, K runs in gridDim.y runs of
// k_run: each run's float32 sums go to partial[run] (M x N) and matmul_split_reduce adds them in
// order (no atomics: the same bits on every call); with one run the bias joins the sum here. ----
template <typename T, bool VEC> union RowRaw { uint4 u; T v[16 / sizeof(T)]; };  // a lane's k row, as loaded
template <typename T> union RowRaw<T, false> { T v[2]; };

// (two blocks an SM; 8 rows of a one where 16-byte rows' 64 sums a lane need up to 168 registers:
// capped at 128 they spilled)
template <typename T, int MR, bool VEC>
__global__ void __launch_bounds__(256, MR < 8 ? 2 : 1) matmul_few_rows_row(const T* __restrict__ a, const T* __restrict__ b,
                                                              T* __restrict__ c, float* __restrict__ partial,
                                                              i64 M, i64 N, i64 K, i64 sam, i64 sak, i64 sbk,
                                                              i64 k_run, const T* __restrict__ bias, i64 sbm,
                                                              i64 sbn) {
    // (U: the k rows a lane has in flight, twice over: the next U load while this U's multiply-adds
    // run; half for 8 rows of a, whose sums take the registers)
    constexpr int NV = VEC ? 16 / sizeof(T) : 2, COLS = 32 * NV, WARPS = 8, KC = 512,
                  U = (VEC ? 4 : 8) / (MR < 8 ? 1 : 2);
    using Raw = RowRaw<T, VEC>;
    __shared__ __align__(16) float as[KC][MR];
    __shared__ float sums[WARPS][COLS];
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    const i64 k_begin = blockIdx.y * k_run, k_end = min(K, k_begin + k_run);
    const i64 block_n = (i64)blockIdx.x * COLS;
    // the lane's e-th column: adjacent (VEC) or 32 apart
    auto column = [&](int e) { return VEC ? block_n + lane * NV + e : block_n + e * 32 + lane; };
    const bool whole = VEC && column(NV - 1) < N;  // the lane's 16 bytes all inside b's row
    auto load = [&](Raw (&raw)[U], const T* bk, int k0, int kn) {
#pragma unroll
        for (int u = 0; u < U; ++u) {
            const int k = k0 + u * WARPS;
            if constexpr (VEC) {
                if (whole && k < kn) {
                    raw[u].u = *reinterpret_cast<const uint4*>(bk + k * sbk + column(0));
                    continue;
                }
            }
            {
#pragma unroll
                for (int e = 0; e < NV; ++e)
                    raw[u].v[e] = k < kn && column(e) < N ? bk[k * sbk + column(e)] : from_float<T>(0.f);
            }
        }
    };
    for (i64 m0 = 0; m0 < M; m0 += MR) {
        float acc[MR][NV];
#pragma unroll
        for (int r = 0; r < MR; ++r)
#pragma unroll
            for (int e = 0; e < NV; ++e) acc[r][e] = 0.f;
        for (i64 kc = k_begin; kc < k_end; kc += KC) {
            const int kn = (int)min((i64)KC, k_end - kc);
            const T* bk = b + kc * sbk;
            Raw cur[U], next[U];
            load(cur, bk, warp, kn);  // in flight while a's chunk is staged
            __syncthreads();  // the last chunk's (and the last pass's sums') reads are done
            for (int i = threadIdx.x; i < KC * MR; i += 256) {
                const int kk = i / MR, r = i % MR;
                as[kk][r] = kk < kn && m0 + r < M ? to_float(a[(m0 + r) * sam + (kc + kk) * sak]) : 0.f;
            }
            __syncthreads();
            for (int k0 = warp; k0 < kn; k0 += WARPS * U) {  // this warp's k: k0, k0 + 8, ...
                if (k0 + WARPS * U < kn) load(next, bk, k0 + WARPS * U, kn);
#pragma unroll
                for (int u = 0; u < U; ++u) {
                    const int k = min(k0 + u * WARPS, KC - 1);  // (past kn: as and the row are zero there)
#pragma unroll
                    for (int r = 0; r < MR; ++r) {
                        const float av = as[k][r];
#pragma unroll
                        for (int e = 0; e < NV; ++e) acc[r][e] += av * to_float(cur[u].v[e]);
                    }
                }
#pragma unroll
                for (int u = 0; u < U; ++u) cur[u] = next[u];
            }
        }
#pragma unroll
        for (int r = 0; r < MR; ++r) {
            if (m0 + r >= M) break;  // (the same for the whole block)
            __syncthreads();  // the last row's sums are read
#pragma unroll
            for (int e = 0; e < NV; ++e) sums[warp][column(e) - block_n] = acc[r][e];
            __syncthreads();
            const i64 m = m0 + r;
            for (int col = threadIdx.x; col < COLS; col += 256) {
                const i64 n = block_n + col;
                if (n >= N) continue;
                float s = 0.f;
#pragma unroll
                for (int w = 0; w < WARPS; ++w) s += sums[w][col];
                if (gridDim.y > 1) {
                    partial[(blockIdx.y * M + m) * N + n] = s;
                } else {
                    if (bias != nullptr) s += to_float(bias[m * sbm + n * sbn]);
                    c[m * N + n] = from_float<T>(s);
                }
            }
        }
    }
}

// c = the sum of `splits` float32 partial products (each MN elements), added in order, plus the
// bias where there is one (element (r, n) at r * sbm + n * sbn; N: c's row length). Every kernel
// that splits K into a buffer of partial products ends here (few_rows, wgmma_ws past three runs,
// wgmma_swap; few_rows_mma adds its runs in its own last block): this file compiles for any architecture.
template <typename T>
__global__ void __launch_bounds__(256) matmul_split_reduce(const float* __restrict__ partial, T* __restrict__ c,
                                                           i64 MN, int splits, const T* __restrict__ bias,
                                                           i64 sbm, i64 sbn, i64 N) {
    for (i64 i = blockIdx.x * (i64)blockDim.x + threadIdx.x; i < MN; i += (i64)gridDim.x * blockDim.x) {
        float v = partial[i];
        for (int s = 1; s < splits; ++s) v += partial[s * MN + i];
        if (bias) v += to_float(bias[(i / N) * sbm + (i % N) * sbn]);
        c[i] = from_float<T>(v);
    }
}
