"""The floor of each matmul kernel: its own GPU time (torch profiler, warm L2) on products too small
to keep it busy (one tile and one k-slice up to a few), beside torch's and Triton's. What a kernel
spends there is latency (launch, prologue, pipeline fill, epilogue, a split's hand-over or second
launch), which a small product pays in full.

Usage (Hopper GPU): python lab/kernel_floor.py [--variants wgmma_ws wgmma_swap ...] [--baseline REV|DIR ...]
                                               [--trials NAME ...] [--shapes M N K ...] [--json F]
(``--baseline``: wgmma_ws built from the kernels of that git revision or directory too, an A/B in one process;
``--trials``: wgmma_ws planned with probe_mid_rows.py's TRIALS of its rule constants, e.g. wide)
"""

from __future__ import annotations

import argparse
import json

import torch

import cuda_ref
import triton_impl
from cuda_ref import _matmul as cm
from lab.probe_mid_rows import TRIAL_VARIANTS, TRIALS, patched_plan, profiled_kernels
from lab.sweep_wgmma import baseline_fn

SHAPES = [(128, 256, 64), (128, 256, 1024), (128, 256, 4096), (256, 1024, 1024), (108, 3072, 1024),
          (218, 3072, 768), (1494, 896, 896), (1024, 1024, 1024)]


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--variants", nargs="+", default=["wgmma_ws", "wgmma", "wgmma_swap", "few_rows_mma", "mma_pipelined"])
    p.add_argument("--baseline", nargs="+", default=[], metavar="REV")
    p.add_argument("--trials", nargs="+", default=[], choices=TRIALS, help="wgmma_ws with these rule constants too")
    p.add_argument("--shapes", nargs="+", type=int, metavar="M N K", help="M N K ... instead of SHAPES")
    p.add_argument("--json")
    args = p.parse_args()
    rows = []
    shapes = list(zip(*[iter(args.shapes)] * 3)) if args.shapes else SHAPES
    for M, N, K in shapes:
        a = torch.randn(M, K, device="cuda", dtype=torch.bfloat16)
        b = torch.randn(N, K, device="cuda", dtype=torch.bfloat16).t()
        fns = {"torch": lambda: torch.mm(a, b), "triton": lambda: triton_impl.matmul(a, b),
               "default": lambda: cuda_ref.matmul(a, b)}
        for v in args.variants:
            fns[v] = lambda v=v: cuda_ref.matmul(a, b, variant=v)
        for rev in args.baseline:
            fns[f"wgmma_ws@{rev}"] = baseline_fn((a, b), rev, "wgmma_ws")
        for trial in args.trials:
            _, _, plan = patched_plan(a, b, TRIAL_VARIANTS.get(trial, "wgmma_ws"), TRIALS[trial])
            fns[trial] = lambda plan=plan: cm._PLANS.launch(plan, (a, b), None)
        us = {}
        for name, fn in fns.items():
            kernels = profiled_kernels(fn)
            us[name] = [(k[0][:40], k[1], k[3]) for k in kernels]
        rows.append({"shape": [M, N, K], "kernels": us,
                     "describe": {v: cm.describe(a, b, v) for v in args.variants} | {"default": cm.describe(a, b)}})
        print(f"{M}x{N}x{K}: " + "  ".join(f"{n} {sum(k[2] or 0 for k in ks):.1f}" + (f"({len(ks)})" if len(ks) > 1 else "")
                                          for n, ks in us.items()), flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"device": torch.cuda.get_device_name(), "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
