"""Triton's tma_fp8 with K split in runs (one launch, the runs' sums handed over), against ws_fp8,
tma_fp8 whole and torch._scaled_mm, on products whose tiles fill few SMs; CUDA's wgmma_fp8 split as
variant=None plans it and whole.

Per shape and scaling (per tensor, row-wise; e4m3, b = W.t(), bfloat16 c): torch._scaled_mm,
triton_impl.scaled_mm as variant=None picks, ws_fp8, and tma_fp8 at each tile of ``TILES`` with
K in each count of runs of ``RUNS`` (0: ``_split_runs``' own), cuda_ref.scaled_mm as planned and with K whole; L2 flushed, in turns
(``bench.timing.time_interleaved``). Every result is checked against torch's first. Prints the
ratio to torch per call; JSON with --json.

Usage (Hopper GPU):  PYTHONPATH=. python3 lab/probe_fp8_split.py [--shapes M N K ...] [--json FILE]
"""
from __future__ import annotations

import argparse
import json

import torch

import triton_impl
from bench.timing import time_interleaved
from cuda_ref import _matmul_fp8 as cuda_fp8
from kernel_common import fp8
from triton_impl import _matmul_fp8

TILES = {"128x128": _matmul_fp8.CONFIG, "64x128": _matmul_fp8.CONFIG_FEW}
RUNS = (1, 2, 4, 8, 0)
# seed 240's draw, shard 1: the products whose 192 x 128 tiles number under 100 (ws_fp8 0.55x torch per tensor)
SHAPES = [(87, 2048, 7168), (191, 1024, 4096), (67, 1600, 6400), (135, 3584, 4096), (190, 4096, 11008),
          (123, 3072, 1024), (820, 1536, 7168), (410, 3072, 8192), (1484, 1024, 5120), (83, 2304, 768),
          (266, 3072, 1024), (1599, 768, 768), (2539, 896, 896), (118, 6400, 1600)]


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--shapes", type=int, nargs="+", default=[x for s in SHAPES for x in s])
    p.add_argument("--rep-ms", type=float, default=30)
    p.add_argument("--json")
    args = p.parse_args()
    shapes = [tuple(args.shapes[i:i + 3]) for i in range(0, len(args.shapes), 3)]
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    rows = []
    for M, N, K in shapes:
        g = torch.Generator(device="cuda").manual_seed(M + N + K)
        a = (torch.randn(M, K, generator=g, device="cuda") * 2).to(torch.float8_e4m3fn)
        w = (torch.randn(N, K, generator=g, device="cuda") * 2).to(torch.float8_e4m3fn)
        out = torch.empty(M, N, dtype=torch.bfloat16, device="cuda")
        for scaling in ("tensor", "row"):
            if scaling == "tensor":
                sa, sb = torch.tensor(0.7, device="cuda"), torch.tensor(1.3, device="cuda")
            else:
                sa = torch.rand(M, 1, generator=g, device="cuda") + 0.5
                sb = torch.rand(1, N, generator=g, device="cuda") + 0.5
            ref = torch._scaled_mm(a, w.t(), sa, sb, out_dtype=torch.bfloat16).float()
            calls = {"torch": lambda: torch._scaled_mm(a, w.t(), sa, sb, out_dtype=torch.bfloat16, out=out),
                     "default": lambda: triton_impl.scaled_mm(a, w.t(), sa, sb, out=out),
                     "ws_fp8": lambda: triton_impl.scaled_mm(a, w.t(), sa, sb, out=out, variant="ws_fp8")}
            calls["cuda"] = cuda_fp8._plan((a, w.t(), sa, sb), None, out, torch.bfloat16, False).run
            split_runs, fp8.split_runs = fp8.split_runs, lambda *args: 1
            try:  # (CUDA's plan with K whole)
                calls["cuda r1"] = cuda_fp8._plan((a, w.t(), sa, sb), None, out, torch.bfloat16, False).run
            finally:
                fp8.split_runs = split_runs
            for tile, cfg in TILES.items():
                for runs in RUNS:
                    plan = _matmul_fp8._tma_plan(a, w.t(), scaling, sa, sb, torch.bfloat16, False, sms, cfg=cfg,
                                                 runs=runs or None)
                    calls[f"tma {tile} r{runs or 'auto'}"] = lambda plan=plan: plan.run(a, w.t(), sa, sb, out)
            errors = {}
            calls = {name: (lambda fn=fn: fn(a, w.t(), sa, sb, out)) if name.startswith("cuda") else fn
                     for name, fn in calls.items()}
            for name, fn in calls.items():
                out.fill_(float("nan"))
                fn()
                errors[name] = ((out.float() - ref).abs().max() / ref.abs().max()).item()
            times = time_interleaved(list(calls.values()), rep_ms=args.rep_ms)
            base = times[0].median_ms
            line = {"shape": [M, N, K], "scaling": scaling,
                    "auto_runs": _matmul_fp8._split_runs(M, N, K, _matmul_fp8.CONFIG, sms),
                    "pick": _matmul_fp8.describe(a, w.t(), sa, sb),
                    "cuda_pick": cuda_fp8.describe(a, w.t(), sa, sb)}
            for (name, _), t in zip(calls.items(), times):
                line[name] = {"ms": t.median_ms, "x_torch": base / t.median_ms, "err": errors[name]}
            rows.append(line)
            print(f"{M}x{N}x{K} {scaling} torch {base * 1e3:.1f}us: "
                  + "  ".join(f"{n} {v['x_torch']:.2f}" + ("!" if v["err"] > 1e-2 else "")
                              for n, v in line.items() if isinstance(v, dict) and n != "torch"), flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"device": torch.cuda.get_device_name(), "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
