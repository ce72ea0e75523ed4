"""Why do large full-wave products run slower back to back than flushed, where torch's run faster?
(Decision 036's last addendum: the shipped Triton picks 0.95x torch flushed, 0.90-0.91x back to
back; our loop 1.03-1.04x our flushed time, torch's 0.98-0.99x.) Each shape's torch.mm, the package
default of both backends and, for Triton, forced configs (``--configs``) run loops of ``--calls``
calls in turns, ``--rounds`` rounds (so the GPU's warming falls on all alike); during each loop the
SM clock, power draw and temperature are read from NVML halfway through (the host sleeps while the
GPU works). A kernel held back by power shows a lower clock than torch's at the same temperature;
one that waits between launches shows the same clock and a longer loop.

Usage (Hopper GPU): PYTHONPATH=. python3 lab/probe_loop_clock.py [--shapes M N K ...] [--layout wt|row]
    [--calls 60] [--rounds 3] [--configs 128x256x64w8s4 128x128x64w4s6swap ...] [--json F]
(run in decision 062)
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

import torch
import triton

import cuda_ref
import triton_impl
from lab.forced_plans import operands
from triton_impl import _matmul as mm

# large full-wave products of the near-tie A/B (seeds 213, 214) where the loop lost most
SHAPES = [(1519, 28672, 3584), (14475, 3584, 3584), (5547, 4800, 1600), (8192, 10240, 8192), (4096, 4096, 4096)]


def config_of(text: str) -> triton.Config:
    """The TMA kernel's config named "128x256x64w8s4" (tile, warps, stages; "swap" after for swap-AB):
    K whole, c stored in halves, GROUP_M 8."""
    swap = text.endswith("swap")
    tile, rest = text.removesuffix("swap").split("w")
    bm, bn, bk = map(int, tile.split("x"))
    warps, stages = map(int, rest.split("s"))
    return triton.Config({"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "GROUP_M": 8, "SPLIT_K": 1, "SWAP_AB": swap,
                          "EPILOGUE_SUBTILE": True}, num_warps=warps, num_stages=stages)


def loop_with_clock(fn, calls: int, expect_ms: float) -> dict:
    """ms a call over ``calls`` calls in a row, and NVML's SM clock (MHz), power (W) and
    temperature (C) read while the loop runs (about halfway, by ``expect_ms`` a call)."""
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    torch.cuda.synchronize()
    host = time.perf_counter()
    start.record()
    for _ in range(calls):
        fn()
    end.record()
    time.sleep(max(0.0, 0.5 * calls * expect_ms * 1e-3 - (time.perf_counter() - host)))
    sample = {"mhz": torch.cuda.clock_rate(), "watts": torch.cuda.power_draw() / 1000,
              "celsius": torch.cuda.temperature()}
    end.synchronize()
    return {"ms": start.elapsed_time(end) / calls, **sample}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--shapes", type=int, nargs="+", metavar="M N K")
    p.add_argument("--layout", default="wt", choices=("wt", "row"))
    p.add_argument("--calls", type=int, default=60)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--configs", nargs="*", default=["128x256x64w8s4", "128x128x64w4s6swap"])
    p.add_argument("--json")
    args = p.parse_args()
    shapes = [tuple(args.shapes[i:i + 3]) for i in range(0, len(args.shapes) - 2, 3)] if args.shapes else SHAPES
    rows = []
    for M, N, K in shapes:
        a, b = operands(M, N, K, args.layout)
        ref = torch.mm(a, b).float()
        c = torch.empty(M, N, dtype=a.dtype, device="cuda")
        fns = {"torch": lambda: torch.mm(a, b, out=c), "triton": lambda: triton_impl.matmul(a, b, out=c),
               "cuda": lambda: cuda_ref.matmul(a, b, out=c)}
        for text in args.configs:
            run = mm._make_run("split_k", config_of(text), a, b, "tf32", c)
            fns[text] = lambda run=run: run(a, b, c)
        for name, fn in fns.items():  # each checked against torch
            c.fill_(float("nan"))
            fn()
            err = ((c.float() - ref).abs().max() / ref.abs().max()).item()
            assert err < 2e-2, (M, N, K, name, err)
        expect = {name: loop_with_clock(fn, 5, 0.0)["ms"] for name, fn in fns.items()}  # (a warm-up)
        got = {name: [] for name in fns}
        for _ in range(args.rounds):
            for name, fn in fns.items():
                got[name].append(loop_with_clock(fn, args.calls, expect[name]))
        row = {"shape": [M, N, K], "layout": args.layout, "picks": {"triton": mm.describe(a, b)},
               "loops": got}
        rows.append(row)
        med = {name: {k: statistics.median(x[k] for x in runs) for k in runs[0]} for name, runs in got.items()}
        print(f"{M}x{N}x{K} {args.layout}: " + "; ".join(
            f"{name} {m['ms'] * 1e3:.1f} us ({med['torch']['ms'] / m['ms']:.2f}x) {m['mhz']:.0f} MHz {m['watts']:.0f} W "
            f"{m['celsius']:.0f} C" for name, m in med.items()), flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"device": torch.cuda.get_device_name(), "calls": args.calls, "rounds": args.rounds, "rows": rows},
                      f, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
