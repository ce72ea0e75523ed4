"""wgmma_ws's stream-K units and tile width, forced, on drawn products where variant=None takes
wgmma_ws with 128-row tiles: the data behind ``ws_stream_k``'s choice among shared-unit counts
(``cuda_ref/_matmul_wgmma.py``; its constants in arch_sm_90.json).

A persistent grid of P pairs over U units runs ceil(U / P) waves; where U is a little past a
multiple of P (68 units on 66 pairs) the last wave holds a few units and every pair waits for them.
Stream-K of the last wave's units alone gives each pair too few k-slices there; sharing the last
wave and one full wave before it (sk = U mod P + P) levels the work at the cost of more hand-overs.
Each shape: torch, the default, and wgmma_ws at each (tile columns, sk) of: 256 or 128 columns, sk
0, the last wave's units, that plus one wave, all units; timed flushed in turns
(``bench.timing.time_interleaved``) and back to back (``time_loop``), each result checked against
torch's. Writes JSON; prints each shape's times, the split model's time and the fastest.

Usage (Hopper GPU): python lab/sweep_ws_stream_k.py [--seed 70] [--count 40] [--rows 129 16384]
    [--changed-only] [--shapes M N K ...] [--layout wt] [--rep-ms 20] [--json F]
"""

from __future__ import annotations

import argparse
import json

import torch

import cuda_ref
from bench.timing import time_interleaved, time_loop
from bench.workloads import draw_matmul
from cuda_ref import _matmul as cm
from cuda_ref import _matmul_wgmma as wg
from kernel_common import cdiv

MODEL = (wg.ws_tile_n, cm.ws_splits, cm.ws_stream_k)


def forced(plan):
    """wgmma_ws's (tile columns, stream-K units) for the plans made next, K whole; None: the model's."""
    if plan is None:
        wg.ws_tile_n = cm.ws_tile_n = MODEL[0]
        cm.ws_splits, cm.ws_stream_k = MODEL[1], MODEL[2]
    else:
        bn, sk = plan
        wg.ws_tile_n = cm.ws_tile_n = lambda *args, **kw: bn
        cm.ws_splits = lambda *args, **kw: 1
        cm.ws_stream_k = lambda *args, **kw: sk
    cm._PLANS.clear()


def tried(M, N, K, sms):
    """The (columns, sk) tried: each width's sk of none, the last wave, it and one wave more, all."""
    pairs, k_tiles = sms // wg.ws_cluster(M), cdiv(K, 64)
    out = []
    for bn in (256, 128):
        units = wg._units(M, N, False, bn)
        tail = units % pairs
        for sk in sorted({0, tail, tail + pairs, units}):
            if sk <= units and sk * k_tiles < 1 << 31 and (sk == 0 or sk * k_tiles >= pairs):
                out.append((bn, sk))
    return out


def model_us(M, N, K, sms, bn, sk):
    return wg.ws_split_time(M, N, K, 2, sms, False, 1, bn, sk)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seed", type=int, default=70)
    p.add_argument("--count", type=int, default=40)
    p.add_argument("--rows", type=int, nargs=2, default=(129, 16384))
    p.add_argument("--layout", default="wt", choices=("wt", "row"))
    p.add_argument("--shapes", type=int, nargs="+", metavar="M N K")
    p.add_argument("--changed-only", action="store_true",
                   help="only shapes where some forced plan's model time is under 0.9 of the default's")
    p.add_argument("--rep-ms", type=float, default=20)
    p.add_argument("--json")
    args = p.parse_args()
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    if args.shapes:
        shapes = [tuple(args.shapes[i:i + 3]) for i in range(0, len(args.shapes) - 2, 3)]
    else:
        shapes = []
        for M, N, K in draw_matmul(4000, args.seed):
            if not (args.rows[0] <= M <= args.rows[1] and M * N * K <= 4e11) or len(shapes) >= args.count:
                continue
            a = torch.empty(M, K, device="cuda", dtype=torch.bfloat16)
            b = torch.empty(N, K, device="cuda", dtype=torch.bfloat16).t()
            if cm.pick_variant(a, b) != "wgmma_ws" or wg.ws_consumers(M) != 2:
                continue
            bn0 = wg.ws_tile_n(M, N, K, 2, sms)
            now = wg.ws_split_time(M, N, K, 2, sms, False, wg.ws_splits(M, N, K, 2, sms), bn0,
                                   wg.ws_stream_k(M, N, K, 2, sms))
            if args.changed_only and min(model_us(M, N, K, sms, *t) for t in tried(M, N, K, sms)) > 0.9 * now:
                continue
            shapes.append((M, N, K))
    rows = []
    for M, N, K in shapes:
        a = torch.randn(M, K, device="cuda", dtype=torch.bfloat16)
        b = torch.randn(N, K, device="cuda", dtype=torch.bfloat16).t() if args.layout == "wt" else \
            torch.randn(K, N, device="cuda", dtype=torch.bfloat16)
        ref = torch.mm(a, b).float()
        names, fns = ["torch", "default " + cm.describe(a, b)], [lambda: torch.mm(a, b), lambda: cuda_ref.matmul(a, b)]
        plans = tried(M, N, K, sms)
        for bn, sk in plans:
            forced((bn, sk))
            c = cuda_ref.matmul(a, b, variant="wgmma_ws")
            err = ((c.float() - ref).abs().max() / ref.abs().max()).item()
            assert err < 2e-2, (M, N, K, bn, sk, err)
            plan = cm._PLANS.get((a, b), "wgmma_ws", None)
            names.append(f"n{bn}sk{sk}")
            fns.append(lambda plan=plan: cm._PLANS.launch(plan, (a, b), None))
        forced(None)
        times = time_interleaved(fns, warmup_ms=10, rep_ms=args.rep_ms)
        ms = {n: t.median_ms for n, t in zip(names, times)}
        loop_ms = {n: time_loop(fn, calls=50, reps=3) for n, fn in zip(names, fns)}
        model = {f"n{bn}sk{sk}": model_us(M, N, K, sms, bn, sk) for bn, sk in plans}
        best = min(names[2:], key=ms.get)
        rows.append({"shape": [M, N, K], "layout": args.layout, "cluster": wg.ws_cluster(M), "ms": ms,
                     "loop_ms": loop_ms, "model_us": model})
        if args.json:
            with open(args.json, "w") as f:
                json.dump({"device": torch.cuda.get_device_name(), "seed": args.seed, "layout": args.layout,
                           "what": __doc__.splitlines()[0], "rows": rows}, f, indent=1)
        t0, l0 = ms["torch"], loop_ms["torch"]
        print(f"{M}x{N}x{K} c{wg.ws_cluster(M)}: torch {t0 * 1e3:.1f} us, default {t0 / ms[names[1]]:.2f} / loop "
              f"{l0 / loop_ms[names[1]]:.2f}, best {best} {t0 / ms[best]:.2f} / loop {l0 / loop_ms[best]:.2f} | "
              + " ".join(f"{n} {ms[n] * 1e3:.1f}/{loop_ms[n] * 1e3:.1f}({model[n]:.0f})" for n in names[2:]),
              flush=True)


if __name__ == "__main__":
    main()
