"""GEMV over a contiguous row-major A whose short rows start off 16 bytes (bf16 K 32-511, odd K):
two prototypes that read A flat, as a copy does, beside the package's default (rows_per_warp's
element loop) and torch.mv, with a same-size copy's time (decision 047: the first design lost).

Both stage chunks of whole rows (R rows, a multiple of 16 bytes' elements, at most STAGE bytes) in
shared memory with 16-byte cp.async loads, two chunks in flight a block, blocks grid-stride:
- ``rows``: decision 047's design, 8 lanes a row reading it from shared memory (the rows K x 2 bytes
  apart: a warp's four lane groups share banks where K x 2 / 4 is near a multiple of 32 words);
- ``vectors``: each thread takes the chunk's 16-byte vectors (a warp reads 512 consecutive bytes: no
  bank conflict), dots each against x (staged as floats, one float of padding every 8 so that a
  warp's 32 reads of x at 8 apart fall in 32 banks), keeping the sums of the two rows a vector may
  straddle; then a thread a row adds its vectors' sums in order (the same bits on every call).
Each checked against float64, timed flushed in turns (``bench.timing.time_interleaved``) and back to
back; prints old / new time per shape and the share of the copy (GEMV bytes / time over the copy's
bytes / time: a copy moves the matrix twice).

Usage (GPU): PYTHONPATH=. python lab/probe_gemv_flat.py [--shapes M K ...] [--stage 16384] [--json F]
Compile check only (no GPU): PYTHONPATH=. python lab/probe_gemv_flat.py --compile-only
"""

from __future__ import annotations

import argparse
import json

SHAPES = [(260499, 129), (117149, 130), (247365, 143), (177933, 262), (226839, 74), (125658, 273),
          (183336, 175), (179023, 452), (71848, 409), (143557, 313), (51943, 431), (40479, 84)]

SOURCE = r"""
#define FLAT_MAX_K 1024
__device__ __forceinline__ void flat_cp16(void* dst, const void* src) {
    const unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(dst));
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(s), "l"(src));
}
__device__ __forceinline__ void flat_commit() { asm volatile("cp.async.commit_group;\n" ::); }
__device__ __forceinline__ void flat_wait1() { asm volatile("cp.async.wait_group 1;\n" ::); }
__device__ __forceinline__ void flat_wait0() { asm volatile("cp.async.wait_group 0;\n" ::); }

// chunk c (rows c R ..) of A into stage, one cp.async group; A's last vector element by element
template <typename T>
__device__ __forceinline__ void flat_load(T* stage, const T* a, i64 c, i64 chunks, i64 R, i64 M, i64 K) {
    constexpr int VEC = 16 / sizeof(T);
    if (c < chunks) {
        const i64 e0 = c * R * K, total = M * K, n = min(R, M - c * R) * K;
        const int nv = (int)((n + VEC - 1) / VEC);
        for (int v = threadIdx.x; v < nv; v += blockDim.x) {
            const i64 e = e0 + (i64)v * VEC;
            if (e + VEC <= total) flat_cp16(stage + v * VEC, a + e);
            else for (int j = 0; j < VEC && e + j < total; ++j) stage[v * VEC + j] = a[e + j];
        }
    }
    flat_commit();
}

// Chunks blockIdx.x, + gridDim.x, .. of R rows through two stages of STAGE bytes: the next one's copy
// in flight while body(chunk in shared memory, c, its rows) reduces this one.
template <typename T, int STAGE, typename Body>
__device__ __forceinline__ void flat_chunks(unsigned char* smem, const T* a, i64 M, i64 K, i64 R, Body body) {
    const i64 chunks = (M + R - 1) / R;
    const auto stage = [&](int i) { return reinterpret_cast<T*>(smem + i * STAGE); };  // (no array: no stack)
    int s = 0;
    flat_load(stage(0), a, blockIdx.x, chunks, R, M, K);
    for (i64 c = blockIdx.x; c < chunks; c += gridDim.x, s ^= 1) {
        flat_load(stage(s ^ 1), a, c + gridDim.x, chunks, R, M, K);
        flat_wait1();
        __syncthreads();  // chunk c (and x) in shared memory for every thread
        body(static_cast<const T*>(stage(s)), c, (int)min(R, M - c * R));
        __syncthreads();  // its stage free for chunk c + 2 grids
    }
    flat_wait0();
}

template <typename T, int STAGE>
__global__ void __launch_bounds__(256) flat_rows(const T* __restrict__ a, const T* __restrict__ x, T* __restrict__ y,
                                                 i64 M, i64 K, i64 R) {
    constexpr int LANES = 8, GROUPS = 256 / LANES;
    extern __shared__ __align__(16) unsigned char smem[];
    float* xs = reinterpret_cast<float*>(smem + 2 * STAGE);
    const int lane = threadIdx.x % LANES, group = threadIdx.x / LANES, k_ = (int)K;
    const unsigned mask = 0xffu << (threadIdx.x % 32 / LANES * LANES);
    for (int k = threadIdx.x; k < K; k += blockDim.x) xs[k] = to_float(x[k]);
    flat_chunks<T, STAGE>(smem, a, M, K, R, [&](const T* chunk, i64 c, int rows) {
        for (int r = group; r < rows; r += GROUPS) {
            float acc = 0.f;
            for (int k = lane; k < k_; k += LANES) acc += to_float(chunk[r * k_ + k]) * xs[k];
#pragma unroll
            for (int off = LANES / 2; off > 0; off /= 2) acc += __shfl_xor_sync(mask, acc, off);
            if (lane == 0) y[c * R + r] = from_float<T>(acc);
        }
    });
}

template <typename T, int STAGE>
__global__ void __launch_bounds__(256) flat_vectors(const T* __restrict__ a, const T* __restrict__ x,
                                                    T* __restrict__ y, i64 M, i64 K, i64 R) {
    constexpr int VEC = 16 / sizeof(T), NV = STAGE / 16;
    union Vec { uint4 u; T v[VEC]; };
    extern __shared__ __align__(16) unsigned char smem[];
    float2* sums = reinterpret_cast<float2*>(smem + 2 * STAGE);       // a vector's (row of its first element, the next row)
    float* xs = reinterpret_cast<float*>(smem + 2 * STAGE + NV * 8);  // x[k] at k + k / 8
    const int k_ = (int)K;
    const float inv_k = 1.f / (float)k_;
    for (int k = threadIdx.x; k < k_; k += blockDim.x) xs[k + k / 8] = to_float(x[k]);
    flat_chunks<T, STAGE>(smem, a, M, K, R, [&](const T* chunk, i64 c, int rows) {
        const int n = rows * k_, nv = (n + VEC - 1) / VEC;
        for (int v = threadIdx.x; v < nv; v += blockDim.x) {
            Vec av;
            av.u = reinterpret_cast<const uint4*>(chunk)[v];
            const int e = v * VEC;
            int row = __float2int_rz((e + 0.5f) * inv_k);  // e < 2^13: exact after the fix below
            row -= row * k_ > e;
            row += (row + 1) * k_ <= e;
            const int col = e - row * k_;
            float pa = 0.f, pb = 0.f;
#pragma unroll
            for (int j = 0; j < VEC; ++j) {
                const int cj = col + j, kk = cj < k_ ? cj : cj - k_;
                const float p = e + j < n ? to_float(av.v[j]) * xs[kk + kk / 8] : 0.f;
                if (cj < k_) pa += p; else pb += p;
            }
            sums[v] = make_float2(pa, pb);
        }
        __syncthreads();
        for (int r = threadIdx.x; r < rows; r += blockDim.x) {
            const int first = r * k_, fv = first / VEC, lv = (first + k_ - 1) / VEC;
            float acc = first % VEC ? sums[fv].y : sums[fv].x;
            for (int v = fv + 1; v <= lv; ++v) acc += sums[v].x;
            y[c * R + r] = from_float<T>(acc);
        }
    });
}
"""

KERNELS = ("rows", "vectors")


def names(stage: int):
    return {k: f"flat_{k}<bf16_t, {stage}>" for k in KERNELS}


def smem_bytes(kernel: str, stage: int) -> int:
    x_bytes = 4 * (1024 + 128)
    return 2 * stage + x_bytes + (stage // 16 * 8 if kernel == "vectors" else 0)


def chunk_rows(K: int, stage: int) -> int:
    return stage // (2 * K) // 8 * 8


def code() -> str:
    from cuda_ref import compile as cuda_compile
    return cuda_compile.source("gemv.cu") + SOURCE


def compile_only(stage: int) -> None:
    from bench import nvrtc
    built = nvrtc.nvrtc_compile(code(), "probe_gemv_flat.cu", tuple(names(stage).values()),
                                ("--std=c++17", "-arch=sm_90", "--ptxas-options=-v"))
    print(built.log[-3000:] if built.log else "", "\nok" if built.ok else "\nFAILED")


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--shapes", type=int, nargs="+", help="M K pairs")
    p.add_argument("--stage", type=int, default=16384, help="bytes of a chunk")
    p.add_argument("--blocks", type=int, default=4, help="blocks an SM at most")
    p.add_argument("--compile-only", action="store_true")
    p.add_argument("--json")
    args = p.parse_args()
    if args.compile_only:
        return compile_only(args.stage)
    import cupy
    import torch

    from bench.specs import GemvSpec
    from cuda_ref import compile as cuda_compile
    from lab.gemv_arms import time_gemv_arms

    shapes = list(zip(args.shapes[::2], args.shapes[1::2])) if args.shapes else SHAPES
    kernel_names = names(args.stage)
    module = cupy.RawModule(code=code(), options=cuda_compile.OPTIONS, name_expressions=tuple(kernel_names.values()))
    fns = {k: module.get_function(n) for k, n in kernel_names.items()}
    for k, f in fns.items():
        f.max_dynamic_shared_size_bytes = smem_bytes(k, args.stage)
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    stream = cupy.cuda.ExternalStream(torch.cuda.current_stream().cuda_stream)
    cases = []
    for M, K in shapes:
        a, x = GemvSpec.make_inputs((M, K), torch.bfloat16, "cuda", 0)
        R = chunk_rows(K, args.stage)
        grid = min(-(-M // R), args.blocks * sms)
        outs = {k: torch.empty(M, device="cuda", dtype=a.dtype) for k in KERNELS}

        def launcher(k):
            def run():
                with stream:
                    fns[k]((grid,), (256,), (a.data_ptr(), x.data_ptr(), outs[k].data_ptr(), M, K, R),
                           shared_mem=smem_bytes(k, args.stage))
                return outs[k]
            return run
        t, loop, share = time_gemv_arms(a, x, {k: launcher(k) for k in KERNELS})
        case = {"shape": [M, K], "chunk_rows": R, "grid": grid, "flushed_ms": t, "loop_ms": loop}
        cases.append(case)
        print(f"{M:>7} x {K:<4} R {R:>3}: " + "  ".join(f"{n} {share[n]:.2f}" for n in share) + "  (share of copy)  "
              + "  ".join(f"default/{k} {t['default'] / t[k]:.2f}" for k in KERNELS), flush=True)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"device": torch.cuda.get_device_name(), "stage": args.stage, "blocks": args.blocks,
                       "cases": cases}, fh, indent=1)


if __name__ == "__main__":
    main()
