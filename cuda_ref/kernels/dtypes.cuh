// Element types without CUDA's headers (the NVRTC that checks these files on CPU-only machines
// ships none): 16-bit floats are stored as 2-byte structs and converted with PTX. Arithmetic is
// always done in float. Included by the loader, which inlines this file into each .cu source.
#pragma once

typedef long long i64;

struct half_t { unsigned short x; };
struct bf16_t { unsigned short x; };

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
