// Element types without CUDA's headers (the NVRTC that checks these files on CPU-only machines
// ships none): 16-bit floats are stored as 2-byte structs and converted with PTX. Arithmetic is
// always done in float. Included by the loader, which inlines this file into each .cu source.
#pragma once

typedef long long i64;

struct half_t { unsigned short x; };
struct bf16_t { unsigned short x; };
// FP8 (matmul_fp8.cu): bytes the tensor cores read, named for the MMA's input types only
struct e4m3_t { unsigned char x; };
struct e5m2_t { unsigned char x; };

__device__ __forceinline__ float to_float(float v) { return v; }
__device__ __forceinline__ float to_float(half_t v) {
    float f;
    asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(v.x));
    return f;
}
__device__ __forceinline__ float to_float(bf16_t v) { return __uint_as_float(((unsigned)v.x) << 16); }

template <typename T> __device__ __forceinline__ T from_float(float f);
template <> __device__ __forceinline__ float from_float<float>(float f) { return f; }
template <> __device__ __forceinline__ half_t from_float<half_t>(float f) {
    half_t h;
    asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h.x) : "f"(f));
    return h;
}
template <> __device__ __forceinline__ bf16_t from_float<bf16_t>(float f) {
    bf16_t h;
    asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(h.x) : "f"(f));
    return h;
}

// What a product of T accumulates in (acc_t) and the type of its result c (out_t): float32 and T
// for the float types; for integers 32-bit unsigned arithmetic, which wraps modulo 2^32 (signed
// overflow is undefined in C++, so int32 sums are done unsigned), and an int32 c. int8 products
// (signed char) also sum in 32 bits, into int32: exact while |sum| < 2^31 (K < 2^17 always).
template <typename T> struct Accum { using type = float; using out = T; };
template <> struct Accum<int> { using type = unsigned; using out = int; };
template <> struct Accum<signed char> { using type = unsigned; using out = int; };
template <typename T> using acc_t = typename Accum<T>::type;
template <typename T> using out_t = typename Accum<T>::out;

// An element as its accumulator type, one multiply-add in it, and the accumulator as c's type.
template <typename T> __device__ __forceinline__ float to_acc(T v) { return to_float(v); }
__device__ __forceinline__ unsigned to_acc(int v) { return (unsigned)v; }
__device__ __forceinline__ float madd(float a, float b, float acc) { return fmaf(a, b, acc); }
__device__ __forceinline__ unsigned madd(unsigned a, unsigned b, unsigned acc) { return a * b + acc; }
template <typename T> __device__ __forceinline__ out_t<T> from_acc(acc_t<T> v) { return from_float<T>(v); }
template <> __device__ __forceinline__ int from_acc<int>(unsigned v) { return (int)v; }
