// Matrix multiplication: c (M x N, contiguous) = a (M x K) b (K x N), float32 accumulation.
//
// a and b are read through their strides (in elements), so row- and column-major operands
// (a .t() view) and slices with a step need no copy. Every kernel is a template over the element
// type T (float, half_t, bf16_t of dtypes.cuh): all arithmetic is float32 FMA, whatever the
// storage. Every index that can pass 2^31 (M*K, K*N, M*N) is 64-bit.
//
// Launch geometry lives in cuda_ref/matmul.py.

#include "dtypes.cuh"

// ---- naive: one thread per element of c, threadIdx.x along N, so a warp reads 32 consecutive
// elements of a row of b and writes 32 consecutive elements of c (coalesced when b is
// row-major), while all its lanes read the same element of a (one broadcast). Every operand is
// reloaded from global memory (or L1/L2) K times per output: the baseline for smem_tiled. Rows
// beyond gridDim.y * blockDim.y are covered by a grid-stride loop (gridDim.y <= 65535). ----
template <typename T>
__global__ void matmul_naive(const T* __restrict__ a, const T* __restrict__ b, T* __restrict__ c,
                             i64 M, i64 N, i64 K, i64 stride_am, i64 stride_ak, i64 stride_bk, i64 stride_bn) {
    const i64 n = blockIdx.x * (i64)blockDim.x + threadIdx.x;
    if (n >= N) return;  // no barrier in this kernel: an early exit is safe
    for (i64 m = blockIdx.y * (i64)blockDim.y + threadIdx.y; m < M; m += (i64)gridDim.y * blockDim.y) {
        float acc = 0.0f;
        for (i64 k = 0; k < K; ++k)
            acc = fmaf(to_float(a[m * stride_am + k * stride_ak]),
                       to_float(b[k * stride_bk + n * stride_bn]), acc);
        c[m * N + n] = from_float<T>(acc);
    }
}

// ---- smem_tiled: seed 004's shared-memory tile, made safe for any shape. A block of BN x BM
// threads owns a BM x BN tile of c, one element per thread. For each BK-slice of K the block
// stages a BM x BK tile of a and a BK x BN tile of b in shared memory (converted to float once),
// so each loaded element is reused BN (resp. BM) times from shared memory instead of global.
// Out-of-range elements of edge tiles are loaded as zeros, which add nothing to the dot
// products; every thread runs the whole K loop and reaches both barriers (the loads are
// predicated, never skipped by an early return), and only the final store is guarded.
// As[ty][k] is the same word for the 32 lanes of a warp (a broadcast) and Bs[k][tx] 32
// consecutive words: no bank conflicts. The 1-D grid numbers tiles row-major (N fastest);
// gridDim.x allows 2^31 - 1 tiles. ----
template <typename T, int BM, int BN, int BK>
__global__ void __launch_bounds__(BM * BN)
matmul_smem_tiled(const T* __restrict__ a, const T* __restrict__ b, T* __restrict__ c, i64 M, i64 N, i64 K,
                  i64 stride_am, i64 stride_ak, i64 stride_bk, i64 stride_bn) {
    constexpr int THREADS = BM * BN;
    __shared__ float As[BM][BK];
    __shared__ float Bs[BK][BN];
    const i64 tiles_n = (N + BN - 1) / BN;
    const i64 m0 = (blockIdx.x / tiles_n) * BM;
    const i64 n0 = (blockIdx.x % tiles_n) * BN;
    const int tx = threadIdx.x, ty = threadIdx.y;  // tx along N, ty along M
    const int tid = ty * BN + tx;

    float acc = 0.0f;
    for (i64 k0 = 0; k0 < K; k0 += BK) {
        // cooperative loads, consecutive threads along the tile's rows (coalesced for row-major
        // operands); zeros outside the matrix
#pragma unroll
        for (int i = tid; i < BM * BK; i += THREADS) {
            const int r = i / BK, kk = i % BK;
            const i64 m = m0 + r, k = k0 + kk;
            As[r][kk] = (m < M && k < K) ? to_float(a[m * stride_am + k * stride_ak]) : 0.0f;
        }
#pragma unroll
        for (int i = tid; i < BK * BN; i += THREADS) {
            const int kk = i / BN, cc = i % BN;
            const i64 k = k0 + kk, n = n0 + cc;
            Bs[kk][cc] = (k < K && n < N) ? to_float(b[k * stride_bk + n * stride_bn]) : 0.0f;
        }
        __syncthreads();
#pragma unroll
        for (int kk = 0; kk < BK; ++kk) acc = fmaf(As[ty][kk], Bs[kk][tx], acc);
        __syncthreads();  // before the next slice overwrites the tiles
    }
    const i64 m = m0 + ty, n = n0 + tx;
    if (m < M && n < N) c[m * N + n] = from_float<T>(acc);
}
