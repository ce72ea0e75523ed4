// Helpers of the tensor-core kernels (matmul_tc.cu, matmul_few_rows_mma.cu, matmul_wgmma*.cu); the
// loader inlines this file after dtypes.cuh.
#pragma once

// The shared-state-space address of a pointer into shared memory (what ldmatrix, cp.async, TMA
// and mbarrier instructions take).
__device__ __forceinline__ unsigned smem_addr(const void* p) {
    return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

// c's element pair p[0], p[1] in one store (p on two elements: c's rows of even length): 4 bytes
// of two 16-bit values from float32, or 8 bytes of a 4-byte c, C = float (split K's float32 partial
// products) or int (int32 c from int32 sums, V = unsigned).
template <typename T>
__device__ __forceinline__ void put2(T* p, float v0, float v1) {
    const unsigned lo = from_float<T>(v0).x, hi = from_float<T>(v1).x;
    *reinterpret_cast<unsigned*>(p) = lo | hi << 16;
}
template <typename C, typename V>
__device__ __forceinline__ void put2_4(C* p, V v0, V v1) {
    struct __align__(8) Pair { C x, y; };
    *reinterpret_cast<Pair*>(p) = Pair{(C)v0, (C)v1};
}
__device__ __forceinline__ void put2(float* p, float v0, float v1) { put2_4(p, v0, v1); }
__device__ __forceinline__ void put2(int* p, unsigned v0, unsigned v1) { put2_4(p, v0, v1); }

// c's element pair (r, c0), (r, c0 + 1) from float32: one 4-byte store when both are in range
// and aligned (N even), else one or two 2-byte stores.
template <typename T>
__device__ __forceinline__ void store2(T* c, i64 M, i64 N, i64 r, i64 c0, float v0, float v1) {
    if (r >= M || c0 >= N) return;
    T* p = c + r * N + c0;
    if (c0 + 1 < N && (N & 1) == 0) {
        put2(p, v0, v1);
    } else {
        p[0] = from_float<T>(v0);
        if (c0 + 1 < N) p[1] = from_float<T>(v1);
    }
}

// The same pair for a 4-byte c: one 8-byte store when aligned, else one or two.
template <typename C, typename V>
__device__ __forceinline__ void store2_4(C* c, i64 M, i64 N, i64 r, i64 c0, V v0, V v1) {
    if (r >= M || c0 >= N) return;
    C* p = c + r * N + c0;
    if (c0 + 1 < N && (N & 1) == 0) {
        put2_4(p, v0, v1);
    } else {
        p[0] = (C)v0;
        if (c0 + 1 < N) p[1] = (C)v1;
    }
}
__device__ __forceinline__ void store2(float* c, i64 M, i64 N, i64 r, i64 c0, float v0, float v1) {
    store2_4(c, M, N, r, c0, v0, v1);
}
__device__ __forceinline__ void store2(int* c, i64 M, i64 N, i64 r, i64 c0, unsigned v0, unsigned v1) {
    store2_4(c, M, N, r, c0, v0, v1);
}

#include "handover.cuh"
