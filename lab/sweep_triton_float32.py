"""Triton matmul, exact float32 unless told: every variant forced on drawn shapes, beside torch and the default.

For each shape of the draw (``bench.workloads.draw_matmul``, both layouts of b), every Triton matmul
variant that takes the call (``triton_impl.matmul(..., variant=v)``; one that raises is skipped) is
checked against a float64 product and timed beside torch and variant=None, flushed in turns. Prints
a line a shape (each variant's x torch, the default's and the fastest), then the geomeans of the
default and of the fastest forced variant by band of rows; writes JSON (rewritten after each shape).

Usage (Hopper GPU): PYTHONPATH=. python3 lab/sweep_triton_float32.py [--seed 170] [--count 80]
    [--rows 1 16384] [--layouts row wt] [--max-mnk 2e11] [--dtype float32|bfloat16|float16] [--json F]
"""

from __future__ import annotations

import argparse
import json
import math

import torch

import triton_impl
from bench.timing import time_interleaved
from bench.workloads import draw_matmul
from triton_impl import _matmul as tm

VARIANTS = ("grouped", "tma_persistent", "split_k", "stream_k", "tail_split", "few_rows", "fma_ws",
            "few_rows_ws")


def geomean(xs) -> float:
    return math.exp(sum(map(math.log, xs)) / len(xs)) if xs else float("nan")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seed", type=int, default=170)
    p.add_argument("--count", type=int, default=80)
    p.add_argument("--rows", type=int, nargs=2, default=(1, 16384))
    p.add_argument("--layouts", nargs="+", default=("row", "wt"))
    p.add_argument("--max-mnk", type=float, default=2e11)
    p.add_argument("--dtype", default="float32", choices=("float32", "bfloat16", "float16"))
    p.add_argument("--json")
    args = p.parse_args()
    dtype = getattr(torch, args.dtype)
    torch.backends.cuda.matmul.allow_tf32 = False
    shapes = [s for s in draw_matmul(4000, args.seed)
              if args.rows[0] <= s[0] <= args.rows[1] and s[0] * s[1] * s[2] <= args.max_mnk][:args.count]
    rows = []
    for M, N, K in shapes:
        for layout in args.layouts:
            a = torch.randn(M, K, device="cuda", dtype=dtype)
            b = (torch.randn(N, K, device="cuda", dtype=dtype).t() if layout == "wt"
                 else torch.randn(K, N, device="cuda", dtype=dtype))
            ref = (a.double() @ b.double())
            # (16-bit: c's own rounding dominates, 2^-8 of it for bf16)
            tol = (1e-5 * math.sqrt(K) if dtype == torch.float32 else 1e-2) * ref.abs().max().item() + 1e-6
            names, fns = ["torch", "default"], [lambda: torch.mm(a, b), lambda: triton_impl.matmul(a, b)]
            for v in VARIANTS:
                try:
                    c = triton_impl.matmul(a, b, variant=v)
                except (ValueError, TypeError, NotImplementedError, RuntimeError):
                    continue
                err = (c.double() - ref).abs().max().item()
                if not err <= tol:
                    print(f"  {M}x{N}x{K} {layout} {v}: error {err:.3g} > {tol:.3g}", flush=True)
                    continue
                names.append(v)
                fns.append(lambda v=v: triton_impl.matmul(a, b, variant=v))
            times = time_interleaved(fns, warmup_ms=10, rep_ms=60)
            ms = {n: t.median_ms for n, t in zip(names, times)}
            x = {n: ms["torch"] / t for n, t in ms.items() if n != "torch"}
            forced = {n: v for n, v in x.items() if n != "default"}
            best = max(forced, key=forced.get)
            row = {"shape": [M, N, K], "layout": layout, "default": tm.pick_variant(a, b), "ms": ms,
                   "x": x, "best": best}
            rows.append(row)
            print(f"{M:6d} {N:6d} {K:6d} {layout} default {row['default']:14s} {x['default']:.2f}  best "
                  f"{best:14s} {forced[best]:.2f}  " + " ".join(f"{n}={v:.2f}" for n, v in forced.items()), flush=True)
            if args.json:
                with open(args.json, "w") as f:
                    json.dump({"device": torch.cuda.get_device_name(), "seed": args.seed, "dtype": args.dtype, "what": __doc__.splitlines()[0],
                               "rows": rows}, f, indent=1)
            del a, b, ref
    for layout in args.layouts:
        for lo, hi in ((1, 15), (16, 63), (64, 255), (256, 1023), (1024, 16384)):
            band = [r for r in rows if r["layout"] == layout and lo <= r["shape"][0] <= hi]
            if band:
                print(f"{layout} {lo}-{hi}: {len(band)} shapes, default {geomean([r['x']['default'] for r in band]):.3f}"
                      f" worst {min(r['x']['default'] for r in band):.2f}, best forced "
                      f"{geomean([r['x'][r['best']] for r in band]):.3f}")


if __name__ == "__main__":
    main()
