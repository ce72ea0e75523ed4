"""Products of 65-2047 rows (a prefill chunk, a batch of requests), where both backends run below torch on
the dense draws: each backend's default, the CUDA variants named (``--variants``, wgmma_swap by default)
and the measured pick; with ``--consumers`` CUDA ``wgmma_ws`` with 64-row tiles (one consumer) against
128-row ones (two), each with the split its model picks; with ``--trials NAME ...`` ``wgmma_ws`` with
some of its rule's constants changed (``TRIALS``: stream-K or pairs of blocks from any row count,
stream-K on shorter shares, K never split, the rule before narrow tiles, other groups of the tile
order, the default without few_rows_mma's runs of K, the default with few_rows first at 2-4 rows, K
runs from 768); with ``--triton-trials``
Triton's default with its selection's constants changed (``TRITON_TRIALS``, none now); with
``--kernel-times`` each one's kernels' own time a call (torch profiler); with ``--loop`` each one's time
a call back to back (``bench.timing.time_loop``: no flush, the host's cost shows); with ``--cublas``
what cuBLAS launches there (its kernel's name carries its tile, and the grid from the profiler's trace).

Each shape of a draw (``bench.workloads.draw_matmul``, M in [LO, HI], at most ``--max-mnk``
multiply-adds), timed flushed (``bench.timing.time_interleaved``: the implementations in turns).
Writes JSON; prints a table.

Usage (Hopper GPU): python lab/probe_mid_rows.py [--seed 7] [--count 24] [--rows 65 511] [--layout wt row]
    [--variants V ...] [--max-mnk X] [--consumers] [--trials NAME ...] [--triton-trials NAME ...]
    [--kernel-times] [--loop] [--cublas] [--widths] [--baseline REV ...] [--shapes M N K ...] [--json F]
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile

import torch

import cuda_ref
import triton_impl
from bench.timing import time_interleaved, time_loop
from bench.workloads import draw_matmul
from cuda_ref import _matmul as cm
from cuda_ref import _matmul_few_rows as fr
from cuda_ref import _matmul_swap as sw
from cuda_ref import _matmul_wgmma as wg
from triton_impl import _matmul as tm
from triton_impl import _matmul_configs as tc
from lab.sweep_wgmma import baseline_fn


def profiled_kernels(fn) -> list:
    """(name, grid, block, us) of each kernel one call of ``fn`` launches, from a profiler trace
    (CUPTI sees CuPy's and Triton's launches as well as torch's)."""
    from torch.profiler import ProfilerActivity, profile
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        fn()
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


# wgmma_ws's rule constants tried (the rule's: stream-K from WS_SK_MIN_M rows, on shares of at least
# WS_SK_MIN_SLICES k-slices, a last wave at most WS_SK_MAX_FILL full; pairs of blocks from WS_PAIRS_MIN_M rows or on even tiles, WS_PAIRS_EVEN)
TRIALS = {"sk_any_m": {"WS_SK_MIN_M": 0},
          "sk_short": {"WS_SK_MIN_M": 0, "WS_SK_MIN_SLICES": 2, "WS_SK_MAX_FILL": 0.9},
          "pairs": {"WS_PAIRS_MIN_M": 0, "WS_PAIRS_ODD_MIN_M": 0},
          "pairs_sk": {"WS_PAIRS_MIN_M": 0, "WS_PAIRS_ODD_MIN_M": 0, "WS_SK_MIN_M": 0},
          "alone": {"WS_PAIRS_EVEN": False},
          "whole": {"WS_SPLIT_MIN_GAIN": 0.0},
          "wide": {"WS_NARROW_MAX_FILL": 0, "WS_HAND_OVER_US": 1.0},  # the rule before narrow tiles
          "no_runs": {"FEW_ROWS_MMA_RUNS": False},  # the default without few_rows_mma's K runs (_matmul_few_rows)
          "few_rows_first": {"FEW_ROWS_MMA_MIN_M": 5},  # the default with few_rows, not few_rows_mma, at 2-4 rows
          "runs_short_k": {"FEW_ROWS_MMA_MIN_K": 768},  # few_rows_mma's K runs from K = 768 where its blocks are few
          # the tile order's groups of rows (WS_GROUP_M 128-row tiles, walked column by column): blocks alone
          # ran 0.64-0.74x torch at 801-1082 rows where Triton's 128 x 256 tiles ran 0.92 (H100, s291)
          "group_4": {"WS_GROUP_M": 4}, "group_8": {"WS_GROUP_M": 8}, "group_64": {"WS_GROUP_M": 64}}
# the variant a trial plans (None: the default's), where not wgmma_ws
TRIAL_VARIANTS = {"no_runs": None, "few_rows_first": None, "runs_short_k": None}


# Triton's default with some of its selection's constants changed (triton_impl/_matmul_configs.py)
TRITON_TRIALS: dict = {}  # (none now: table_split went with the table's buckets past 64 rows)


def patched_plan(a, b, variant, consts, backend="cuda"):
    """(product, description, plan) of ``variant`` on (a, b) made with ``consts`` set in
    _matmul_wgmma or _matmul_few_rows, whichever has each (``backend`` "triton": _matmul_configs'),
    the constants restored after (a plan made is kept by the caller; the plan cache is cleared)."""
    modules, mm, plans = ((wg, fr), cuda_ref.matmul, cm._PLANS) if backend == "cuda" else \
        ((tc,), triton_impl.matmul, tm._PLANS)
    describe = cm.describe if backend == "cuda" else (lambda a, b, v: triton_impl.describe("matmul", a, b, variant=v))
    home = {k: next(m for m in modules if hasattr(m, k)) for k in consts}
    old = {k: getattr(home[k], k) for k in consts}
    try:
        for k, v in consts.items():
            setattr(home[k], k, v)
        plans.clear()
        c = mm(a, b, variant=variant)
        return c, describe(a, b, variant), plans.get((a, b), variant, None)
    finally:
        for k, v in old.items():
            setattr(home[k], k, v)
        plans.clear()


def widths(json_rows: list, baselines=()) -> None:
    """wgmma_swap at M = NR for each block width (one block of rows), N = 16384, K 1024 and 4096,
    beside torch: the rate of each width; ``baselines``: wgmma_swap built from the kernels of each
    of these git revisions or directories too (lab/sweep_wgmma.py's ``baseline_fn``)."""
    for K in (1024, 4096):
        for nr in sw.SWAP_WIDTHS:
            M, N = nr, 16384
            a = torch.randn(M, K, device="cuda", dtype=torch.bfloat16)
            b = torch.randn(N, K, device="cuda", dtype=torch.bfloat16).t()
            fns = {"torch": lambda: torch.mm(a, b), "wgmma_swap": lambda: cuda_ref.matmul(a, b, variant="wgmma_swap")}
            for rev in baselines:
                fns[f"wgmma_swap@{rev}"] = baseline_fn((a, b), rev, "wgmma_swap")
            t = dict(zip(fns, time_interleaved(list(fns.values()), warmup_ms=10, rep_ms=40)))
            flops = 2 * M * N * K
            print(f"NR {nr} K {K}: torch {flops / t['torch'].median_ms / 1e9:.0f} TF, "
                  + ", ".join(f"{name} {flops / x.median_ms / 1e9:.0f} TF ({t['torch'].median_ms / x.median_ms:.2f}x)"
                              for name, x in t.items() if name != "torch"), flush=True)
            json_rows.append({"shape": [M, N, K], "layout": "wt", "ms": {k: x.median_ms for k, x in t.items()}})


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--count", type=int, default=24)
    p.add_argument("--rows", type=int, nargs=2, default=(65, 511))
    p.add_argument("--layout", nargs="+", default=["wt"], choices=("wt", "row"))
    p.add_argument("--consumers", action="store_true", help="wgmma_ws with one and with two consumers too")
    p.add_argument("--trials", nargs="+", default=[], choices=TRIALS, help="wgmma_ws with these rule constants too")
    p.add_argument("--triton-trials", nargs="+", default=[], choices=TRITON_TRIALS,
                   help="Triton's default with these selection constants too")
    p.add_argument("--cublas", action="store_true", help="cuBLAS's kernel names and grids (torch profiler)")
    p.add_argument("--baseline", nargs="+", default=[], metavar="REV",
                   help="wgmma_swap built from the kernels of these git revisions or directories too (A/B in one process)")
    p.add_argument("--widths", action="store_true", help="wgmma_swap's rate at each block width (M = NR) first")
    p.add_argument("--variants", nargs="+", default=["wgmma_swap"], metavar="V",
                   help="CUDA variants timed beside the default and the measured pick (default: wgmma_swap)")
    p.add_argument("--max-mnk", type=float, default=float("inf"), help="only drawn shapes of at most this M*N*K")
    p.add_argument("--kernel-times", action="store_true",
                   help="each implementation's kernels' own microseconds a call too (torch profiler)")
    p.add_argument("--loop", action="store_true", help="each implementation's time a call back to back too")
    p.add_argument("--shapes", type=int, nargs="+", metavar="M N K", help="these shapes instead of a draw")
    p.add_argument("--json")
    args = p.parse_args()
    lo, hi = args.rows
    shapes = [s for s in draw_matmul(4000, args.seed)
              if lo <= s[0] <= hi and s[0] * s[1] * s[2] <= args.max_mnk][:args.count]
    if args.shapes:
        shapes = [tuple(args.shapes[i:i + 3]) for i in range(0, len(args.shapes) - 2, 3)]
    rows = []
    width_rows: list = []
    if args.widths:
        widths(width_rows, args.baseline)
    for M, N, K in shapes:
        for layout in args.layout:
            a = torch.randn(M, K, device="cuda", dtype=torch.bfloat16)
            b = torch.randn(N, K, device="cuda", dtype=torch.bfloat16).t() if layout == "wt" else \
                torch.randn(K, N, device="cuda", dtype=torch.bfloat16)
            ref = torch.mm(a, b).float()
            fns, names = [lambda: torch.mm(a, b)], ["torch"]
            fns.append(lambda: cuda_ref.matmul(a, b))
            names.append("default " + cm.describe(a, b))
            fns.append(lambda: triton_impl.matmul(a, b))
            names.append("triton " + triton_impl.describe("matmul", a, b))
            # what variant=None ran before wgmma_swap's rule: the measured pick, else the rules
            picked = cm._picks.lookup("sm_90", cm._picks.key_of(a, b)) or cm.first_rule(cm.RULES, a, b).variant
            variants = [v for v in args.variants if v != picked] + [picked] + (["ws1", "ws2"] if args.consumers else [])
            for v in variants:
                n = {"ws1": 1, "ws2": 2}.get(v)
                forced_consumers(n)
                variant = "wgmma_ws" if n else v
                c = cuda_ref.matmul(a, b, variant=variant)
                err = ((c.float() - ref).abs().max() / ref.abs().max()).item()
                assert err < 2e-2, (M, N, K, v, err)
                names.append(f"{'picks' if v == picked else v} " + cm.describe(a, b, variant))
                plan = cm._PLANS.get((a, b), variant, None)
                fns.append(lambda plan=plan: cm._PLANS.launch(plan, (a, b), None))
            forced_consumers(None)
            for trial in args.trials:
                c, desc, plan = patched_plan(a, b, TRIAL_VARIANTS.get(trial, "wgmma_ws"), TRIALS[trial])
                err = ((c.float() - ref).abs().max() / ref.abs().max()).item()
                assert err < 2e-2, (M, N, K, trial, err)
                names.append(f"{trial} {desc}")
                fns.append(lambda plan=plan: cm._PLANS.launch(plan, (a, b), None))
            for trial in args.triton_trials:
                c, desc, plan = patched_plan(a, b, None, TRITON_TRIALS[trial], "triton")
                err = ((c.float() - ref).abs().max() / ref.abs().max()).item()
                assert err < 2e-2, (M, N, K, trial, err)
                names.append(f"{trial} {desc}")
                fns.append(lambda plan=plan: tm._PLANS.launch(plan, (a, b), None))
            for rev in args.baseline:
                names.append(f"wgmma_swap@{rev}")
                fns.append(baseline_fn((a, b), rev, "wgmma_swap"))
            times = time_interleaved(fns, warmup_ms=10, rep_ms=60)
            kernels = profiled_kernels(fns[0]) if args.cublas else []
            # each implementation's kernels' own time a call (beside the events' time, which holds launch gaps)
            kernel_us = {name: sum(k[3] or 0 for k in profiled_kernels(fn)) for name, fn in zip(names, fns)} \
                if args.kernel_times else {}
            loop_ms = {name: time_loop(fn) for name, fn in zip(names, fns)} if args.loop else {}
            rows.append({"shape": [M, N, K], "layout": layout, "cublas": kernels, "kernel_us": kernel_us,
                         "loop_ms": loop_ms, "ms": {name: t.median_ms for name, t in zip(names, times)}})
            t0 = times[0].median_ms
            print(f"{M}x{N}x{K} {layout}: torch {t0 * 1e3:.1f} us ({2 * M * N * K / t0 / 1e9:.0f} TF) "
                  + " ".join(f"{n.split()[0]} {t0 / t.median_ms:.2f}" for n, t in zip(names[1:], times[1:]))
                  + "".join(f" [{n.split()[0]} {us:.1f} us]" for n, us in kernel_us.items())
                  + "".join(f" [{n.split()[0]} loop {ms * 1e3:.1f} us]" for n, ms in loop_ms.items())
                  + " | " + " / ".join(names[1:]) + " | " + "; ".join(f"{k[0][:60]} grid {k[1]}" for k in kernels),
                  flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"device": torch.cuda.get_device_name(), "seed": args.seed, "rows": rows, "widths": width_rows}, f, indent=1)


if __name__ == "__main__":
    main()
