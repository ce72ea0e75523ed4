"""GEMV over row-major A whose short rows start off 16 bytes (odd K): gemv.cu's ``gemv_masked`` (every
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

SHAPES = [(242722, 191), (218750, 161), (236894, 231), (145683, 358), (258343, 205), (92598, 435),
          (122847, 323), (169987, 294), (77303, 660), (186059, 489), (151134, 250), (245481, 67),
          (40773, 140), (151936, 896)]
CONFIGS = ["16,4,2,0", "8,4,2,0", "16,2,2,0", "32,2,2,0", "16,4,1,0", "8,2,4,0", "16,4,2,2"]
DTYPES = ("bfloat16", "float16", "float32")


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
    code = cuda_compile.source("gemv.cu")  # its gemv_masked, any geometry
    kernel_names = names(args.dtype, args.configs)
    if args.compile_only:  # (built as the shipped cubins are: this machine's NVRTC, gemv.cu's options)
        from bench import nvrtc
        from cuda.bindings import nvrtc as bindings
        built = nvrtc.compile_file("gemv.cu", kernel_names.values())
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
    from cuda_ref._gemv import MASKED_MAX_K
    if max(K for _, K in shapes) > MASKED_MAX_K:
        p.error(f"K at most {MASKED_MAX_K} (x's floats in shared memory)")
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
