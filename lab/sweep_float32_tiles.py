"""Exact float32 ``pipelined``: every tile of ``PIPELINED`` and K in 1-16 runs forced on drawn shapes,
each checked against torch (exact float32) and timed beside torch and the default, flushed in turns.
The data behind the walk's tile and run choice (``cuda_ref/_matmul_float32.py: pipelined_choice``).
``--b-in-place``: each plan also with b read where it lies (never copied into aligned rows; names end
in " in-place"), the question decision 059 leaves for W.t() at few rows. ``--wt-copy``: each plan also
with W.t() transposed into a row-major copy a call (the path before matmul_pipelined_wt, decision 060;
names end in " wt-copy"). ``--a-rows``: each plan also with a's rows read where they lie
(matmul_pipelined_arow, no A^T copied a call; names end in " a-rows"): the data
``lab/fit_float32_tiles.py --a-rows`` prices ``reads_a_in_place`` from. ``--loop``: each plan's time a call
back to back too (``loop_ms``: no flush, a call's launches and host cost show; ``fit_float32_tiles.py --loop``).

Usage (GPU): PYTHONPATH=. python3 lab/sweep_float32_tiles.py [--seed 150] [--count 40] [--rows 1 16384]
    [--layout wt|row] [--shapes M N K ...] [--runs 1 2 3 4 6 8 12 16] [--b-in-place] [--wt-copy] [--a-rows] [--loop]
    [--json F]
"""

from __future__ import annotations

import math

import torch

import cuda_ref
from bench.timing import time_interleaved, time_loops
from bench.workloads import draw_matmul
from cuda_ref import _matmul as cm
from cuda_ref import _matmul_float32 as f32
from kernel_common import cdiv
from lab.forced_plans import operands, parser, write_rows

MIN_RUN = 128  # K a run at least (8 slices of 16)


def candidates(M, N, K, runs_list):
    """(tile name, runs, k_run) of every distinct forced plan of an M x N x K product."""
    seen, out = set(), []
    for name, cfg in f32.PIPELINED.items():
        for runs in runs_list:
            if runs > 1 and K // runs < MIN_RUN:
                continue
            k_run = cdiv(cdiv(K, runs), cfg.bk) * cfg.bk
            key = (name, cdiv(K, k_run))
            if key not in seen:
                seen.add(key)
                out.append((name, cdiv(K, k_run), k_run))
    return out


SHIPPED_SMALL_PRODUCT = cm.SMALL_PRODUCT


def force(plan, mode=""):
    """Patch the walk's choice to ``plan`` (tile name, runs, k_run), or restore it (None); ``mode``
    "in-place": b read where it lies, "wt-copy": W.t() transposed into a copy a call, "a-rows": a's
    rows read where they lie (else A^T copied)."""
    cm.SMALL_PRODUCT = math.inf if mode == "in-place" else SHIPPED_SMALL_PRODUCT  # (no product passes it: no copy of b)
    cm.reads_w_in_place = lambda *_: mode != "wt-copy"
    cm.reads_a_in_place = lambda *_: mode == "a-rows"
    if plan is None:
        cm.config_for, cm.float32_runs = f32.config_for, f32.float32_runs
        cm.reads_w_in_place, cm.reads_a_in_place = f32.reads_w_in_place, f32.reads_a_in_place
        cm._PLANS.clear()
        return
    name, runs, k_run = plan

    def config_for(variant, M, N, sms, K=1, aligned=False, b_kmajor=False, a_rows=False):
        cfg = f32.PIPELINED[name]
        cfg = f32.kmajor_b_twin(cfg) if b_kmajor else cfg
        return f32.instance_for(f32.rows_a_twin(cfg) if a_rows else cfg, M, N, K, aligned)
    cm.config_for = config_for
    cm.float32_runs = lambda cfg, M, N, K, sms: (runs, k_run) if cfg.k_runs else (1, K)
    cm._PLANS.clear()


def main() -> None:
    p = parser(__doc__, 150, (1, 16384))
    p.add_argument("--runs", type=int, nargs="+", default=[1, 2, 3, 4, 6, 8, 12, 16])
    p.add_argument("--b-in-place", action="store_true", help="each plan also with b read where it lies")
    p.add_argument("--wt-copy", action="store_true", help="each plan also with W.t() transposed into a copy")
    p.add_argument("--a-rows", action="store_true", help="each plan also with a's rows read where they lie")
    p.add_argument("--loop", action="store_true", help="each plan's time a call back to back too")
    args = p.parse_args()
    shapes = [tuple(args.shapes[i:i + 3]) for i in range(0, len(args.shapes), 3)] if args.shapes else \
        [s for s in draw_matmul(args.count, args.seed) if args.rows[0] <= s[0] <= args.rows[1]]
    rows = []
    for M, N, K in shapes:
        a, b = operands(M, N, K, args.layout, torch.float32)
        ref = torch.mm(a.double(), b.double())
        names, fns = ["torch", "default " + cm.describe(a, b)], [lambda: torch.mm(a, b), lambda: cuda_ref.matmul(a, b)]
        modes = [""] + ["in-place"] * args.b_in_place + ["wt-copy"] * args.wt_copy + ["a-rows"] * args.a_rows
        for plan in candidates(M, N, K, args.runs):
            for mode in modes:
                force(plan, mode)
                c = cuda_ref.matmul(a, b, variant="pipelined")
                err = ((c.double() - ref).abs().max() / ref.abs().max()).item()
                assert err < 1e-4, (M, N, K, plan, mode, err)
                planned = cm._PLANS.get((a, b), "pipelined", None)
                names.append(f"{plan[0]} S{plan[1]}" + f" {mode}" * bool(mode))
                fns.append(lambda planned=planned: cm._PLANS.launch(planned, (a, b), None))
        force(None)
        times = time_interleaved(fns, warmup_ms=5, rep_ms=15)
        ms = {n: t.median_ms for n, t in zip(names, times)}
        best = min((n for n in names[2:]), key=ms.get)
        rows.append({"shape": [M, N, K], "ms": ms})
        if args.loop:  # about 2 ms of calls each
            calls = [max(10, min(200, int(2.0 / ms[n]))) for n in names]
            rows[-1]["loop_ms"] = dict(zip(names, time_loops(fns, calls=calls)))
        print(f"{M}x{N}x{K} {args.layout}: torch {ms['torch'] * 1e3:.0f} us, default x{ms['torch'] / ms[names[1]]:.2f} "
              f"({names[1]}), best {best} x{ms['torch'] / ms[best]:.2f}", flush=True)
        write_rows(args, __doc__, rows)


if __name__ == "__main__":
    main()
