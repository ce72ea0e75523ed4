"""The CUDA wgmma kernels against cuBLAS on the shapes of issue 14: ``wgmma`` and each build of
``wgmma_ws`` (c stored from the accumulators or through TMA stores),
timed flushed (``bench.timing.time_gpu``) and back to back (``time_loop``), each result checked
against torch's. Writes JSON; prints a table.

Usage (Hopper GPU): python tools/sweep_wgmma.py [--json FILE] [--quick]
"""

from __future__ import annotations

import argparse
import json

import torch

from bench.timing import time_gpu, time_loop
from cuda_ref import _matmul as mm

# (M, N, K, layout of b, layout of a): "wt" a W.t() view of an (N, K) weight, "row" (K, N);
# a "t": an a.t() view of a (K, M) matrix, as a backward pass gives
SHAPES = (
    (4096, 4096, 4096, "row", "k"), (4096, 4096, 4096, "wt", "k"),
    (8192, 8192, 8192, "row", "k"), (8192, 8192, 8192, "wt", "k"),
    (2048, 11008, 4096, "wt", "k"), (8192, 4096, 11008, "wt", "k"),
    (4096, 5632, 2048, "wt", "k"), (4096, 2048, 5632, "row", "k"), (5632, 2048, 4096, "row", "t"),
    (4097, 4095, 129, "row", "k"), (300, 520, 200, "wt", "k"), (640, 264, 72, "row", "t"),
)
# the builds of wgmma_ws: c through TMA stores or not
BUILDS = (False, True)


def operands(M, N, K, b_layout, a_layout, dtype):
    a = torch.randn((M, K) if a_layout == "k" else (K, M), device="cuda").to(dtype)
    a = a if a_layout == "k" else a.t()
    b = torch.randn((K, N) if b_layout == "row" else (N, K), device="cuda").to(dtype)
    return a, (b if b_layout == "row" else b.t())


def measure(fn, flops, ref, M, N):
    out = fn()
    err = ((out.float() - ref).abs().max() / ref.abs().max()).item()
    small = M * N < 1 << 22
    t = time_gpu(fn).median_ms
    loop = time_loop(fn, calls=50 if not small else 200)
    return {"ms": t, "tflops": flops / t / 1e9, "loop_ms": loop, "max_rel_err": err}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--json")
    ap.add_argument("--quick", action="store_true", help="4096^3 and 8192^3 only")
    ap.add_argument("--dtype", default="bfloat16")
    args = ap.parse_args()
    dtype = getattr(torch, args.dtype)
    shapes = SHAPES[:4] if args.quick else SHAPES
    rows = []
    print(torch.cuda.get_device_name(), "SMs", torch.cuda.get_device_properties(0).multi_processor_count)
    for M, N, K, bl, al in shapes:
        a, b = operands(M, N, K, bl, al, dtype)
        ref = torch.mm(a.double(), b.double()).float()
        flops = 2 * M * N * K
        row = {"shape": [M, N, K], "layout": bl, "a": al, "dtype": args.dtype}
        row["torch"] = measure(lambda: torch.mm(a, b), flops, ref, M, N)
        row["wgmma"] = measure(lambda: mm.matmul(a, b, variant="wgmma"), flops, ref, M, N)
        for store in BUILDS:
            mm.WS_STORE_TMA = store
            mm._PLANS.clear()
            name = f"ws{'_tma' if store else ''}"
            try:
                row[name] = measure(lambda: mm.matmul(a, b, variant="wgmma_ws"), flops, ref, M, N)
            except Exception as e:  # noqa: BLE001  (a build that fails is a result too)
                row[name] = {"error": repr(e)[:300]}
        mm._PLANS.clear()
        rows.append(row)
        t = row["torch"]["ms"]
        print(f"{M}x{N}x{K} {bl} a={al}: torch {t * 1e3:.1f} us  " + "  ".join(
            f"{k} {t / v['ms']:.3f}x/{row['torch']['loop_ms'] / v['loop_ms']:.3f}x e{v['max_rel_err']:.0e}"
            if "ms" in v else f"{k} ERR" for k, v in row.items() if isinstance(v, dict) and k != "torch"), flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"device": torch.cuda.get_device_name(), "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
