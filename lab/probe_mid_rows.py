"""Products of 65-511 rows (a prefill chunk, a batch of requests), where both backends run
0.66-0.80x torch on the dense draws: what cuBLAS launches there (its kernel's name carries its
tile, and the grid from the profiler's trace), and CUDA ``wgmma_ws`` with 64-row tiles (one
consumer) against 128-row ones (two), each with the split its model picks, beside the default.

Each shape of a draw (``bench.workloads.draw_matmul``, M in [LO, HI], b = W.t()), timed flushed
(``bench.timing.time_interleaved``: the implementations in turns). Writes JSON; prints a table.

Usage (Hopper GPU): python lab/probe_mid_rows.py [--seed 7] [--count 24] [--rows 65 511] [--json F]
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile

import torch

import cuda_ref
from bench.timing import time_interleaved
from bench.workloads import draw_matmul
from cuda_ref import _matmul as cm
from cuda_ref import _matmul_wgmma as wg


def cublas_kernels(a, b) -> list:
    """(name, grid, block, us) of each kernel torch.mm launches on (a, b), from a profiler trace."""
    from torch.profiler import ProfilerActivity, profile
    for _ in range(3):
        torch.mm(a, b)
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        torch.mm(a, b)
        torch.cuda.synchronize()
    path = tempfile.mktemp(suffix=".json")
    prof.export_chrome_trace(path)
    with open(path) as f:
        events = json.load(f)["traceEvents"]
    os.unlink(path)
    return [(e["name"], e.get("args", {}).get("grid"), e.get("args", {}).get("block"), e.get("dur"))
            for e in events if e.get("cat") == "kernel"]


def forced_consumers(n):
    """wgmma_ws's plans made with ``n`` consumer warpgroups (None: the rule's)."""
    rule = wg.ws_consumers.__wrapped__ if hasattr(wg.ws_consumers, "__wrapped__") else wg.ws_consumers

    def pick(M, a_mmajor=False):
        return rule(M, a_mmajor) if n is None else n
    pick.__wrapped__ = rule
    wg.ws_consumers = cm.ws_consumers = pick
    cm._PLANS.clear()


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--count", type=int, default=24)
    p.add_argument("--rows", type=int, nargs=2, default=(65, 511))
    p.add_argument("--json")
    args = p.parse_args()
    lo, hi = args.rows
    shapes = [s for s in draw_matmul(4000, args.seed) if lo <= s[0] <= hi][:args.count]
    rows = []
    for M, N, K in shapes:
        a = torch.randn(M, K, device="cuda", dtype=torch.bfloat16)
        b = torch.randn(N, K, device="cuda", dtype=torch.bfloat16).t()
        ref = torch.mm(a, b).float()
        fns, names = [lambda: torch.mm(a, b)], ["torch"]
        forced_consumers(None)
        fns.append(lambda: cuda_ref.matmul(a, b))
        names.append("default " + cm.describe(a, b))
        for n in (1, 2):
            forced_consumers(n)
            names.append(f"ws{n} " + cm.describe(a, b, "wgmma_ws"))
            c = cuda_ref.matmul(a, b, variant="wgmma_ws")
            err = ((c.float() - ref).abs().max() / ref.abs().max()).item()
            assert err < 2e-2, (M, N, K, n, err)
            plan = cm._PLANS.get((a, b), "wgmma_ws", None)
            fns.append(lambda plan=plan: cm._PLANS.launch(plan, (a, b), None))
        forced_consumers(None)
        times = time_interleaved(fns, warmup_ms=10, rep_ms=60)
        kernels = cublas_kernels(a, b)
        row = {"shape": [M, N, K], "cublas": kernels,
               "ms": {name: t.median_ms for name, t in zip(names, times)}}
        t0 = times[0].median_ms
        print(f"{M}x{N}x{K}: torch {t0 * 1e3:.1f} us ({2 * M * N * K / t0 / 1e9:.0f} TF) "
              + " ".join(f"{n.split()[0]} {t0 / t.median_ms:.2f}" for n, t in zip(names[1:], times[1:]))
              + " | " + " / ".join(names[1:]) + " | " + "; ".join(f"{k[0][:90]} grid {k[1]}" for k in kernels), flush=True)
        rows.append(row)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"device": torch.cuda.get_device_name(), "seed": args.seed, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
