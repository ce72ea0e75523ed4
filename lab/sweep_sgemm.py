"""Sweep tile configurations of the last float32 matmul variants (warptiled, double_buffered,
pipelined) at 4096^3 and 8192^3 against cuBLAS measured in the same run. The tile table in
cuda_ref/_matmul_float32.py (CONFIGS, DOUBLE_BUFFERED, PIPELINED) quotes what this prints. About a minute
of GPU time.

    PYTHONPATH=. python3 lab/sweep_sgemm.py [--sizes 4096 8192]

Each configuration is compiled through its own cupy.RawModule (the loader's source and options),
launched by the launcher's own ``launch_config``, checked against a float64 product with the
float32 tolerance (a failure is printed as FAIL and never timed), then timed with
bench.timing.time_gpu (median, L2 flushed). Registers and local memory come from the compiled
kernel's attributes: local memory > 0 means spills.
"""

from __future__ import annotations

import argparse

import cupy
import torch

from bench.specs import MatmulSpec
from bench.timing import time_gpu
from cuda_ref import _matmul as mm
from cuda_ref import _matmul_float32 as f32
from cuda_ref import compile as cuda_compile

# (what it tests, config). Template arguments: BM, BN, BK, WM, WN, WNITER, TM, TN
# [, PAD, GROUP_M, MIN_BLOCKS]. All compile for sm_90 without spills (NVRTC, ptxas -v) unless noted.
SWEEP = [
    # What these and the configurations tried before them measured, with the history of what was
    # tried: docs/decisions/008-cuda-float32-walk.md (the list holds only what the tile table keeps).
    ("warptiled default", f32.CONFIGS["warptiled"]),
    ("double_buffered large, whole tiles (EDGES=false)", f32.whole_tiles_twin(f32.DOUBLE_BUFFERED["large"])),
    ("pipelined large (default)", f32.PIPELINED["large"]),
    ("pipelined large, whole tiles (EDGES=false)", f32.whole_tiles_twin(f32.PIPELINED["large"])),
    ("pipelined small, whole tiles", f32.whole_tiles_twin(f32.PIPELINED["small"])),
    ("pipelined whole, 128x256", f32.pipelined(128, 256, 16, 64, 64, 2, 8, 4, STAGES=3, EDGES=False)),
    ("pipelined whole, 4 stages", f32.pipelined(128, 128, 16, 64, 32, 2, 8, 4, STAGES=4, EDGES=False)),
    ("pipelined whole, 256x128", f32.pipelined(256, 128, 16, 64, 64, 2, 8, 4, STAGES=3, EDGES=False)),
]


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--sizes", type=int, nargs="+", default=[4096, 8192])
    args = p.parse_args()
    torch.set_float32_matmul_precision("highest")  # exact fp32 cuBLAS, no TF32
    names = tuple(dict.fromkeys(cfg.name for _, cfg in SWEEP))
    module = cupy.RawModule(code=cuda_compile.source(mm.FILE), options=cuda_compile.OPTIONS, name_expressions=names)
    fns = {n: module.get_function(n) for n in names}
    print(f"{torch.cuda.get_device_name(0)}, torch {torch.__version__}, cupy {cupy.__version__}")
    # the instances with edge checks, on shapes with partial tiles and a column-major b first
    for shape in ((67, 45, 33), (4097, 4095, 129), (300, 260, 70)):
        for layout in ("row", "col"):
            a, b = MatmulSpec.make_inputs(shape, torch.float32, "cuda", seed=1)
            if layout == "col":
                b = b.t().contiguous().t()
            ref = MatmulSpec.reference((a, b))
            for label, cfg in SWEEP:
                if not cfg.edges:
                    continue
                out = torch.full((shape[0], shape[1]), float("nan"), device="cuda")
                mm.launch_config(fns[cfg.name], cfg, a, b, out)
                cmp = MatmulSpec.compare(out, ref, (a, b))
                if not cmp.ok:
                    print(f"FAIL {label} {shape} b {layout}: {cmp.detail}")
    print("odd shapes checked")
    for size in args.sizes:
        a, b = MatmulSpec.make_inputs((size, size, size), torch.float32, "cuda", seed=0)
        ref = MatmulSpec.reference((a, b))
        flops = 2 * size ** 3
        out = torch.empty((size, size), device="cuda")
        t_ref = time_gpu(lambda: torch.matmul(a, b, out=out))
        cublas = flops / t_ref.median_ms / 1e9
        rows = []
        for label, cfg in SWEEP:
            if not cfg.edges and (size % cfg.bm or size % cfg.bn or size % cfg.bk):
                continue  # the whole-tile instances run only on whole tiles
            fn = fns[cfg.name]
            attrs = fn.attributes
            res = f"{attrs['num_regs']} regs, {attrs['local_size_bytes']} B local"
            out.fill_(float("nan"))
            mm.launch_config(fn, cfg, a, b, out)
            cmp = MatmulSpec.compare(out, ref, (a, b))
            if not cmp.ok:
                rows.append((-1.0, label, cfg.name, res, "FAIL " + cmp.detail))
                continue
            t = time_gpu(lambda: mm.launch_config(fn, cfg, a, b, out))
            rows.append((flops / t.median_ms / 1e9, label, cfg.name, res, f"{t.median_ms:.3f} ms"))
            if cfg.a_transposed:  # the kernel alone: A^T made once, outside the timing
                a_k = mm.k_major(a)
                t = time_gpu(lambda: mm.launch_config(fn, cfg, a_k, b, out))
                rows.append((flops / t.median_ms / 1e9, label + " (A^T given)", cfg.name, res, f"{t.median_ms:.3f} ms"))
        del ref
        rows.sort(key=lambda r: r[0], reverse=True)
        print(f"\n== {size}^3 float32: cuBLAS (torch.matmul) {cublas:.1f} TFLOP/s, {t_ref.median_ms:.3f} ms")
        for tflops, label, name, res, note in rows:
            rate = f"{tflops:6.1f} TFLOP/s {tflops / cublas:6.3f}x" if tflops >= 0 else f"{'-':>22}"
            print(f"{rate}  {label:46} {name:66} {res:24} {note}")


if __name__ == "__main__":
    main()
