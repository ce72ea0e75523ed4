// Matrix-vector product y = A x, A (M x K), x (K), y (M); float accumulation for every type.
//
// A is read through (stride_am, stride_ak) in elements: row-major A has stride_ak == 1,
// column-major A (the .t() view of a contiguous (K, M) tensor) has stride_am == 1. Each variant
// reads best in one layout; cuda_ref/_gemv.py hands it that layout. x and y are contiguous.
// Launch geometry lives in cuda_ref/_gemv.py.

#include "dtypes.cuh"

// ---- native and coalesced: one thread per row (seed 001, algorithms one and two), the same
// loop over two layouts. Over row-major A (native) thread i walks row i, so at each step the 32
// lanes of a warp read 32 addresses K elements apart; over column-major A (coalesced) they read
// 32 neighbouring elements of column k, one 128-byte line per warp. ----
template <typename T>
__global__ void gemv_thread_per_row(const T* __restrict__ a, const T* __restrict__ x,
                                    T* __restrict__ y, i64 M, i64 K, i64 stride_am, i64 stride_ak) {
    const i64 i = blockIdx.x * (i64)blockDim.x + threadIdx.x;
    if (i >= M) return;
    float acc = 0.f;
    for (i64 k = 0; k < K; ++k) acc += to_float(a[i * stride_am + k * stride_ak]) * to_float(x[k]);
    y[i] = from_float<T>(acc);
}

// ---- coalesced_const: x in __constant__ memory (algorithm three). Every lane reads the same
// x[k] at the same time, which the constant cache broadcasts. It is K, not M, that must fit:
// the launcher refuses K * sizeof(T) > X_CONST_BYTES and copies x in on the same stream. ----
#define X_CONST_BYTES 65536
__constant__ uint4 x_const[X_CONST_BYTES / 16];

template <typename T>
__global__ void gemv_coalesced_const(const T* __restrict__ a, T* __restrict__ y,
                                     i64 M, i64 K, i64 stride_am, i64 stride_ak) {
    const i64 i = blockIdx.x * (i64)blockDim.x + threadIdx.x;
    if (i >= M) return;
    const T* xc = reinterpret_cast<const T*>(x_const);
    float acc = 0.f;
    for (i64 k = 0; k < K; ++k) acc += to_float(a[i * stride_am + k * stride_ak]) * to_float(xc[k]);
    y[i] = from_float<T>(acc);
}

// ---- coalesced_shared: x staged through shared memory in CHUNK-element pieces (algorithm
// four). Unlike the seed, the last piece is bounds-checked (K need not be a multiple of CHUNK)
// and every thread, including those past M, reaches every barrier. ----
template <typename T, int CHUNK>
__global__ void gemv_coalesced_shared(const T* __restrict__ a, const T* __restrict__ x,
                                      T* __restrict__ y, i64 M, i64 K, i64 stride_am, i64 stride_ak) {
    __shared__ float xs[CHUNK];
    const i64 i = blockIdx.x * (i64)blockDim.x + threadIdx.x;
    const bool active = i < M;
    float acc = 0.f;
    for (i64 k0 = 0; k0 < K; k0 += CHUNK) {
        const int n = (int)min((i64)CHUNK, K - k0);
        __syncthreads();  // the previous piece is fully consumed
        for (int j = threadIdx.x; j < n; j += blockDim.x) xs[j] = to_float(x[k0 + j]);
        __syncthreads();
        if (active)
            for (int j = 0; j < n; ++j) acc += to_float(a[i * stride_am + (k0 + j) * stride_ak]) * xs[j];
    }
    if (active) y[i] = from_float<T>(acc);
}

// ---- warp_per_row: LANES lanes per row (a whole warp when LANES = 32; several rows per warp
// for short K), 16-byte loads of A and x, a shuffle reduction. `vec` says every row of A and x
// start 16-byte aligned with unit stride along K; otherwise, and for the K % VEC tail, lanes
// take scalar loads. ----
template <typename T, int LANES>
__global__ void gemv_warp_per_row(const T* __restrict__ a, const T* __restrict__ x,
                                  T* __restrict__ y, i64 M, i64 K, i64 stride_am, i64 stride_ak,
                                  int vec) {
    constexpr int VEC = 16 / sizeof(T);
    union Vec { uint4 u; T v[VEC]; };
    const int lane = threadIdx.x % LANES;
    const i64 i = (blockIdx.x * (i64)blockDim.x + threadIdx.x) / LANES;
    // Rows past M still run the shuffles below (with acc = 0), so no lane leaves early.
    float acc = 0.f;
    if (i < M) {
        const T* row = a + i * stride_am;
        i64 k_tail = 0;
        if (vec) {
            const i64 nvec = K / VEC;
#pragma unroll 4
            for (i64 v = lane; v < nvec; v += LANES) {
                Vec av, xv;
                av.u = *reinterpret_cast<const uint4*>(row + v * VEC);
                xv.u = *reinterpret_cast<const uint4*>(x + v * VEC);
#pragma unroll
                for (int j = 0; j < VEC; ++j) acc += to_float(av.v[j]) * to_float(xv.v[j]);
            }
            k_tail = nvec * VEC;
        }
        for (i64 k = k_tail + lane; k < K; k += LANES) acc += to_float(row[k * stride_ak]) * to_float(x[k]);
    }
#pragma unroll
    for (int off = LANES / 2; off > 0; off /= 2) acc += __shfl_xor_sync(0xffffffffu, acc, off);
    if (i < M && lane == 0) y[i] = from_float<T>(acc);
}

// ---- split_k: for few rows and a long K, one row alone cannot fill the GPU. Block b reduces
// piece s = b % splits of row i = b / splits with all its threads and writes one float
// partial; gemv_split_k_reduce sums the pieces of each row in a fixed order, so the result is
// deterministic (no atomics). With splits = 1 it is a block per row. ----
template <typename T>
__global__ void gemv_split_k(const T* __restrict__ a, const T* __restrict__ x,
                             float* __restrict__ partial, i64 M, i64 K, i64 stride_am, i64 stride_ak,
                             i64 piece, int splits, int vec) {
    constexpr int VEC = 16 / sizeof(T), THREADS = 256;
    union Vec { uint4 u; T v[VEC]; };
    __shared__ float warp_sums[THREADS / 32];
    const i64 i = blockIdx.x / splits, s = blockIdx.x % splits;
    const i64 k0 = s * piece, k1 = min(K, k0 + piece);
    const T* row = a + i * stride_am;
    float acc = 0.f;
    i64 k_tail = k0;
    if (vec) {  // piece is a multiple of VEC, so every piece starts aligned
        const i64 nvec = (k1 - k0) / VEC;
#pragma unroll 4
        for (i64 v = threadIdx.x; v < nvec; v += THREADS) {
            Vec av, xv;
            av.u = *reinterpret_cast<const uint4*>(row + k0 + v * VEC);
            xv.u = *reinterpret_cast<const uint4*>(x + k0 + v * VEC);
#pragma unroll
            for (int j = 0; j < VEC; ++j) acc += to_float(av.v[j]) * to_float(xv.v[j]);
        }
        k_tail = k0 + nvec * VEC;
    }
    for (i64 k = k_tail + threadIdx.x; k < k1; k += THREADS) acc += to_float(row[k * stride_ak]) * to_float(x[k]);
#pragma unroll
    for (int off = 16; off > 0; off /= 2) acc += __shfl_xor_sync(0xffffffffu, acc, off);
    if (threadIdx.x % 32 == 0) warp_sums[threadIdx.x / 32] = acc;
    __syncthreads();
    if (threadIdx.x == 0) {
        float total = 0.f;
#pragma unroll
        for (int w = 0; w < THREADS / 32; ++w) total += warp_sums[w];
        partial[i * splits + s] = total;
    }
}

template <typename T>
__global__ void gemv_split_k_reduce(const float* __restrict__ partial, T* __restrict__ y, i64 M, int splits) {
    const i64 i = blockIdx.x * (i64)blockDim.x + threadIdx.x;
    if (i >= M) return;
    float total = 0.f;
    for (int s = 0; s < splits; ++s) total += partial[i * splits + s];
    y[i] = from_float<T>(total);
}
