"""wgmma_swap's tile of W (128 rows, two consumer warpgroups; 64, one) and its runs of K, forced, on
drawn products where variant=None takes wgmma_swap: the data behind ``swap_shape``'s tile model
(``cuda_ref/_matmul_swap.py``; its constants in arch_sm_90.json).

Each shape: torch, the default, and wgmma_swap at each (blocks, WR, runs): a's rows in the fewest
blocks (``swap_rows``) or one or two more (at least 48 rows each), WR in (128, 64), runs of K from
``--runs`` (each at least WS_SPLIT_MIN_SLICES k-slices), timed flushed in turns
(``bench.timing.time_interleaved``) and back to back (``time_loop``), b = W.t() (``--layout row``:
b row-major). Writes JSON; prints each shape's times (flushed / back to back), the model's pick and
the fastest.

Usage (Hopper GPU): python lab/sweep_swap_tiles.py [--seed 50] [--count 40] [--rows 65 511]
    [--any-pick] [--shapes M N K ...] [--runs 1 2 4] [--layout wt] [--json F]
"""

from __future__ import annotations

import argparse
import json

import torch

import cuda_ref
from bench.timing import time_interleaved, time_loop
from bench.workloads import draw_matmul
from cuda_ref import _matmul as cm
from cuda_ref import _matmul_swap as wg


MODEL_SHAPE = wg.swap_shape


def forced(shape):
    """swap_shape for the plans made next: ``shape`` (row blocks, WR, runs), or the model's (None)."""
    wg.swap_shape = MODEL_SHAPE if shape is None else (lambda *args: shape)
    cm._PLANS.clear()


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seed", type=int, default=50)
    p.add_argument("--count", type=int, default=40)
    p.add_argument("--rows", type=int, nargs=2, default=(65, 511))
    p.add_argument("--layout", default="wt", choices=("wt", "row"))
    p.add_argument("--shapes", type=int, nargs="+", metavar="M N K")
    p.add_argument("--runs", type=int, nargs="+", default=[1, 2, 4], help="runs of K tried")
    p.add_argument("--any-pick", action="store_true",
                   help="every drawn shape of the rows, not only those variant=None gives wgmma_swap")
    p.add_argument("--json")
    args = p.parse_args()
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    if args.shapes:
        shapes = [tuple(args.shapes[i:i + 3]) for i in range(0, len(args.shapes) - 2, 3)]
    else:
        shapes = []
        for M, N, K in draw_matmul(4000, args.seed):
            if args.rows[0] <= M <= args.rows[1] and M * N * K <= 2e11 and len(shapes) < args.count:
                a = torch.empty(M, K, device="cuda", dtype=torch.bfloat16)
                b = torch.empty(N, K, device="cuda", dtype=torch.bfloat16).t()
                if args.any_pick or cm.pick_variant(a, b) == "wgmma_swap":
                    shapes.append((M, N, K))
    rows = []
    for M, N, K in shapes:
        a = torch.randn(M, K, device="cuda", dtype=torch.bfloat16)
        b = torch.randn(N, K, device="cuda", dtype=torch.bfloat16).t() if args.layout == "wt" else \
            torch.randn(K, N, device="cuda", dtype=torch.bfloat16)
        ref = torch.mm(a, b).float()
        k_tiles = -(-K // 64)
        model = wg.swap_shape(M, N, K, 2, sms)
        names, fns = ["torch", "default " + cm.describe(a, b)], [lambda: torch.mm(a, b), lambda: cuda_ref.matmul(a, b)]
        natural = wg.swap_rows(M)[1]
        tried = [(blocks, wr, runs) for blocks in range(natural, natural + 3) for wr in wg.SWAP_TILE_ROWS
                 for runs in args.runs if (runs == 1 or k_tiles // runs >= wg.WS_SPLIT_MIN_SLICES)
                 and (blocks == natural or -(-M // blocks) >= wg.SWAP_MIN_BLOCK_ROWS)]
        for blocks, wr, runs in tried + ([model] if model not in tried else []):
            forced((blocks, wr, runs))
            c = cuda_ref.matmul(a, b, variant="wgmma_swap")
            err = ((c.float() - ref).abs().max() / ref.abs().max()).item()
            assert err < 2e-2, (M, N, K, blocks, wr, runs, err)
            plan = cm._PLANS.get((a, b), "wgmma_swap", None)
            names.append(f"{blocks}b{wr}x{runs}")
            fns.append(lambda plan=plan: cm._PLANS.launch(plan, (a, b), None))
        forced(None)
        times = time_interleaved(fns, warmup_ms=10, rep_ms=30)
        ms = {n: t.median_ms for n, t in zip(names, times)}
        loop_ms = {n: time_loop(fn, calls=50, reps=3) for n, fn in zip(names, fns)}
        model_us = {n: wg.swap_time(M, N, K, 2, sms, *map(int, n.replace("b", "x").split("x"))) for n in names[2:]}
        best = min(names[2:], key=ms.get)
        mname = "{}b{}x{}".format(*model)
        rows.append({"shape": [M, N, K], "layout": args.layout, "model": mname, "ms": ms, "loop_ms": loop_ms,
                     "model_us": model_us})
        if args.json:
            with open(args.json, "w") as f:
                json.dump({"device": torch.cuda.get_device_name(), "seed": args.seed, "layout": args.layout,
                           "what": __doc__.splitlines()[0], "rows": rows}, f, indent=1)
        t0, l0 = ms["torch"], loop_ms["torch"]
        print(f"{M}x{N}x{K}: torch {t0 * 1e3:.1f} us, default {t0 / ms[names[1]]:.2f} / loop {l0 / loop_ms[names[1]]:.2f}, "
              f"model {mname} {t0 / ms[mname]:.2f}, best {best} {t0 / ms[best]:.2f} / loop {l0 / loop_ms[best]:.2f} | "
              + " ".join(f"{n} {ms[n] * 1e3:.1f}/{loop_ms[n] * 1e3:.1f}" for n in names[2:]), flush=True)


if __name__ == "__main__":
    main()
