"""GEMV over row-major A whose short rows start off 16 bytes (odd K): ``gemv_masked`` below (every
element in 16-byte loads, the head and tail vectors masked, x staged in shared memory; decision 071) in
several geometries beside the package's default (rows_per_warp's element loop, or its phased twin) and
torch.mv, with a same-size copy's time (the share of the copy: GEMV bytes / time over the copy's
bytes / time, a copy moving the matrix twice).

Each launch is checked against float64, then timed flushed in turns (``bench.timing.time_interleaved``)
and back to back (``time_loop``). CuPy compiles the probe with the GPU machine's NVRTC, which need not be
the one that builds the shipped cubins: each geometry's registers are printed (decision 071: 58 against
125 for one source).

Usage (GPU): PYTHONPATH=. python lab/probe_gemv_masked.py [--dtype bfloat16] [--shapes M K ...]
             [--configs 16,4,2,0 ...] [--per-sm 0] [--json F]
Registers as the shipped cubins would build (no GPU): PYTHONPATH=. python lab/probe_gemv_masked.py
             --compile-only [--configs ...] [--json F]
"""

from __future__ import annotations

import argparse
import json

# Appended to gemv.cu's source (its dtypes and store_rows).
SOURCE = r"""
// ---- masked: row-major A whose short rows start off 16 bytes (an odd K), every element read in
// 16-byte loads, as a copy reads them. Row i's vectors are the aligned ones that cover it: vector u
// holds its elements u * VEC - h .. (h: how far the row starts past 16 bytes), the head and tail
// vectors partly a neighbour's, whose elements a select drops (x is 0 there too, but an inf or NaN
// of a neighbour times 0 would not vanish). x is staged once a block as floats in shared memory, VEC
// zeros either side, so the x under vector u is xs[u * VEC - h ..] with no shuffles. A group's rows
// lie GROUPS apart (a multiple of VEC): one h for all of them. Blocks walk row blocks grid-stride;
// only the first and last row blocks can hold a vector that passes A's ends, and there such a vector
// is read element by element. Each lane issues DEPTH x ROWS loads of A before their first FMA. ----
#define GEMV_MASKED_MAX_K 2048
template <typename T, int ROWS, int DEPTH, bool EDGES>
__device__ __forceinline__ void dot_masked(const T* const (&vb)[ROWS], const float* __restrict__ xs, int h, int K,
                                           int nu, int first, int step, float (&acc)[ROWS], const T* lo, const T* hi) {
    constexpr int VEC = 16 / sizeof(T);
    union Vec { uint4 u; T v[VEC]; };
    const auto load = [&](const T* p) -> uint4 {
        if constexpr (EDGES) {
            if (p < lo || p + VEC > hi) {
                Vec t;
#pragma unroll
                for (int j = 0; j < VEC; ++j) t.v[j] = p + j >= lo && p + j < hi ? p[j] : from_float<T>(0.f);
                return t.u;
            }
        }
        return *reinterpret_cast<const uint4*>(p);
    };
    const auto add = [&](const Vec (&av)[ROWS], int u) {  // vector u of each row times the x under it
        float xv[VEC];
        bool ok[VEC];
#pragma unroll
        for (int j = 0; j < VEC; ++j) {
            xv[j] = xs[u * VEC + j];
            ok[j] = (unsigned)(u * VEC + j - h) < (unsigned)K;
        }
#pragma unroll
        for (int r = 0; r < ROWS; ++r)
#pragma unroll
            for (int j = 0; j < VEC; ++j) acc[r] += (ok[j] ? to_float(av[r].v[j]) : 0.f) * xv[j];
    };
    int u = first;
    for (; u + (DEPTH - 1) * step < nu; u += DEPTH * step) {
        Vec av[DEPTH][ROWS];
#pragma unroll
        for (int d = 0; d < DEPTH; ++d)
#pragma unroll
            for (int r = 0; r < ROWS; ++r) av[d][r].u = load(vb[r] + (i64)(u + d * step) * VEC);
#pragma unroll
        for (int d = 0; d < DEPTH; ++d) add(av[d], u + d * step);
    }
    for (; u < nu; u += step) {
        Vec av[ROWS];
#pragma unroll
        for (int r = 0; r < ROWS; ++r) av[r].u = load(vb[r] + (i64)u * VEC);
        add(av, u);
    }
}

template <typename T, int LANES, int ROWS, int DEPTH, int MIN_BLOCKS>
__global__ void __launch_bounds__(256, MIN_BLOCKS)  // (0: no bound)
gemv_masked(const T* __restrict__ a, const T* __restrict__ x, T* __restrict__ y, i64 M, i64 K, i64 stride_am) {
    constexpr int VEC = 16 / sizeof(T), GROUPS = 256 / LANES;
    static_assert(GROUPS % VEC == 0, "a lane group's rows start at one offset from 16 bytes");
    __shared__ float xs[GEMV_MASKED_MAX_K + 2 * VEC];
    for (int k = threadIdx.x; k < K + 2 * VEC; k += blockDim.x)
        xs[k] = k >= VEC && k < K + VEC ? to_float(x[k - VEC]) : 0.f;
    __syncthreads();
    const int lane = threadIdx.x % LANES;
    const T *lo = a, *hi = a + (M - 1) * stride_am + K;  // A's first element and one past its last
    const i64 blocks = (M + GROUPS * ROWS - 1) / (GROUPS * ROWS);
    for (i64 b = blockIdx.x; b < blocks; b += gridDim.x) {
        const i64 first = b * (GROUPS * ROWS) + threadIdx.x / LANES, spare = min(first, M - 1);
        const T* vb[ROWS];  // rows past M read an in-bounds row of the same h and store nothing
        float acc[ROWS];
#pragma unroll
        for (int r = 0; r < ROWS; ++r) {
            const i64 i = first + r * GROUPS;
            vb[r] = a + (i < M ? i : spare) * stride_am;
            acc[r] = 0.f;
        }
        const int h = (int)(reinterpret_cast<unsigned long long>(vb[0]) / sizeof(T) % VEC);
#pragma unroll
        for (int r = 0; r < ROWS; ++r) vb[r] -= h;
        const int nu = (int)((h + K + VEC - 1) / VEC);
        if (b == 0 || b == blocks - 1)
            dot_masked<T, ROWS, DEPTH, true>(vb, xs + VEC - h, h, (int)K, nu, lane, LANES, acc, lo, hi);
        else
            dot_masked<T, ROWS, DEPTH, false>(vb, xs + VEC - h, h, (int)K, nu, lane, LANES, acc, lo, hi);
        store_rows<T, LANES, ROWS>(acc, y, first, M, lane);
    }
}
"""

SHAPES = [(242722, 191), (218750, 161), (236894, 231), (145683, 358), (258343, 205), (92598, 435),
          (122847, 323), (169987, 294), (77303, 660), (186059, 489), (151134, 250), (245481, 67),
          (40773, 140), (151936, 896)]
CONFIGS = ["16,4,2,0", "8,4,2,0", "16,2,2,0", "32,2,2,0", "16,4,1,0", "8,2,4,0", "16,4,2,2"]
DTYPES = ("bfloat16", "float16", "float32")
MAX_K = 2048  # GEMV_MASKED_MAX_K: x's floats in shared memory


def names(dtype: str, configs) -> dict:
    import torch

    from cuda_ref.loader import CTYPE
    return {c: f"gemv_masked<{CTYPE[getattr(torch, dtype)]}, {c.replace(',', ', ')}>" for c in configs}


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--shapes", type=int, nargs="+", help="M K pairs")
    p.add_argument("--dtype", default="bfloat16", choices=DTYPES)
    p.add_argument("--configs", nargs="+", default=CONFIGS, help="LANES,ROWS,DEPTH,MIN_BLOCKS")
    p.add_argument("--per-sm", type=int, default=0, help="blocks an SM at most (0: one block a row block)")
    p.add_argument("--rep-ms", type=float, default=20)
    p.add_argument("--compile-only", action="store_true")
    p.add_argument("--json")
    args = p.parse_args()
    from cuda_ref import compile as cuda_compile
    code = cuda_compile.source("gemv.cu") + SOURCE
    kernel_names = names(args.dtype, args.configs)
    if args.compile_only:  # (built as the shipped cubins are: this machine's NVRTC, gemv.cu's options)
        from bench import nvrtc
        from cuda.bindings import nvrtc as bindings
        built = nvrtc.compile_source(code, "gemv.cu", kernel_names.values())
        if not built.ok:
            raise SystemExit(built.log[-6000:] + "\nFAILED")
        used = {c: vars(built.kernels[built.lowered[n]]) for c, n in kernel_names.items()}
        for c, r in used.items():
            print(f"[{c}] {r['registers']} registers, {r['spill_stores']} bytes spilled")
        if args.json:
            with open(args.json, "w") as fh:
                json.dump({"nvrtc": list(bindings.nvrtcVersion()[1:]), "dtype": args.dtype, "kernels": used}, fh, indent=1)
        return
    import cupy
    import torch

    from bench.specs import GemvSpec
    from lab.gemv_arms import time_gemv_arms

    dtype = getattr(torch, args.dtype)
    shapes = list(zip(args.shapes[::2], args.shapes[1::2])) if args.shapes else SHAPES
    if max(K for _, K in shapes) > MAX_K:
        p.error(f"K at most {MAX_K} (x's floats in shared memory)")
    module = cupy.RawModule(code=code, options=cuda_compile.OPTIONS, name_expressions=tuple(kernel_names.values()))
    fns = {c: module.get_function(n) for c, n in kernel_names.items()}
    print("registers: " + ", ".join(f"[{c}] {f.num_regs}" for c, f in fns.items()), flush=True)
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    stream = cupy.cuda.ExternalStream(torch.cuda.current_stream().cuda_stream)
    cases = []
    for M, K in shapes:
        a, x = GemvSpec.make_inputs((M, K), dtype, "cuda", 0)
        outs = {c: torch.empty(M, device="cuda", dtype=dtype) for c in args.configs}

        def launcher(c):
            lanes, rows = (int(v) for v in c.split(",")[:2])
            blocks = -(-M // (256 // lanes * rows))
            grid = min(blocks, args.per_sm * sms) if args.per_sm else blocks

            def run():
                with stream:
                    fns[c]((grid,), (256,), (a.data_ptr(), x.data_ptr(), outs[c].data_ptr(), M, K, a.stride(0)))
                return outs[c]
            return run
        t, loop, share = time_gemv_arms(a, x, {c: launcher(c) for c in args.configs}, args.rep_ms)
        best = max(args.configs, key=lambda c: share[c])
        cases.append({"shape": [M, K], "flushed_ms": t, "loop_ms": loop, "share_of_copy": share})
        print(f"{M:>7} x {K:<5} copy share: torch {share['torch.mv']:.2f} default {share['default']:.2f} | "
              + " ".join(f"[{c}] {share[c]:.2f}" for c in args.configs)
              + f" | best {best} x default {t['default'] / t[best]:.2f} flushed, "
              f"{loop['default'] / loop[best]:.2f} loop", flush=True)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"device": torch.cuda.get_device_name(), "dtype": args.dtype, "per_sm": args.per_sm,
                       "configs": args.configs, "cases": cases}, fh, indent=1)


if __name__ == "__main__":
    main()
