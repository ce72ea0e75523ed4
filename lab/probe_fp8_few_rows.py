"""FP8 with scales at a few rows: cuda_ref's few_rows_fp8 (cuda_ref/_matmul_fp8_few_rows.py) against
cuda_ref's wgmma_fp8, triton_impl's few_rows_fp8 and torch._scaled_mm.

Shapes: the dense draw's (bench.workloads.draw_matmul, ``--seed``) of at most ``--rows`` rows; e4m3,
b = W.t(), per-tensor and row-wise scales, bfloat16 c; L2 flushed, in turns
(``bench.timing.time_interleaved``). Each result is checked against torch's first (max |diff| /
max |c| under 1e-2). Prints, by rows of a, each call's geomean ratio to torch; JSON with --json.
What set the rows up to which variant=None takes it (docs/decisions/051-triton-fp8-few-rows.md).

Usage (Hopper GPU):  PYTHONPATH=. python3 lab/probe_fp8_few_rows.py [--seed 64] [--rows 64] [--json FILE]
"""
from __future__ import annotations

import argparse
import json
import math

import torch

import cuda_ref
import triton_impl
from bench.timing import time_interleaved
from bench.workloads import draw_matmul


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--seed", type=int, default=64)
    p.add_argument("--rows", type=int, default=64)
    p.add_argument("--count", type=int, default=60)
    p.add_argument("--rep-ms", type=float, default=20)
    p.add_argument("--json")
    args = p.parse_args()
    shapes = [s for s in draw_matmul(40 * args.count, args.seed)  # (torch._scaled_mm refuses N or K off 16)
              if s[0] <= args.rows and s[1] % 16 == 0 and s[2] % 16 == 0][:args.count]
    e4m3, rows = torch.float8_e4m3fn, []
    for M, N, K in shapes:
        g = torch.Generator(device="cuda").manual_seed(M + N + K)
        a = (torch.randn(M, K, generator=g, device="cuda") * 2).to(e4m3)
        w = (torch.randn(N, K, generator=g, device="cuda") * 2).to(e4m3)
        for kind in ("tensor", "row"):
            if kind == "tensor":
                sa, sb = torch.tensor(0.7, device="cuda"), torch.tensor(1.3, device="cuda")
            else:
                sa, sb = torch.rand(M, 1, device="cuda") + 0.5, torch.rand(1, N, device="cuda") + 0.5
            out = torch.empty(M, N, dtype=torch.bfloat16, device="cuda")
            calls = {"torch": lambda: torch._scaled_mm(a, w.t(), sa, sb, out_dtype=torch.bfloat16, out=out),
                     "cuda wgmma_fp8": lambda: cuda_ref.scaled_mm(a, w.t(), sa, sb, out=out),
                     "cuda few_rows": lambda: cuda_ref.scaled_mm(a, w.t(), sa, sb, out=out, variant="few_rows_fp8"),
                     "triton few_rows_fp8": lambda: triton_impl.scaled_mm(a, w.t(), sa, sb, out=out,
                                                                          variant="few_rows_fp8")}
            ref = torch._scaled_mm(a, w.t(), sa, sb, out_dtype=torch.float32)
            for name, fn in calls.items():
                fn()
                err = ((out.float() - ref).abs().max() / ref.abs().max()).item()
                assert err < 1e-2, (name, (M, N, K), kind, err)
            times = time_interleaved(list(calls.values()), rep_ms=args.rep_ms)
            ms = {name: t.median_ms for name, t in zip(calls, times)}
            rows.append({"shape": [M, N, K], "scaling": kind, "ms": ms,
                         "x": {name: ms["torch"] / v for name, v in ms.items() if name != "torch"}})
            print(M, N, K, kind, " ".join(f"{n} {x:.2f}" for n, x in rows[-1]["x"].items()), flush=True)
    for kind in ("tensor", "row"):
        for lo, hi in ((1, 16), (17, 32), (33, 64), (65, 1 << 30)):
            band = [r["x"] for r in rows if r["scaling"] == kind and lo <= r["shape"][0] <= hi]
            if band:
                print(kind, f"{lo}-{hi}", len(band), " ".join(
                    f"{n} {math.exp(sum(math.log(b[n]) for b in band) / len(band)):.2f}" for n in band[0]))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"device": torch.cuda.get_device_name(), "seed": args.seed, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
