"""wgmma_swap's tile of W (128 rows, two consumer warpgroups; 64, one) and its runs of K, forced, on
drawn products where variant=None takes wgmma_swap: the data behind ``swap_shape``'s tile model
(``cuda_ref/_matmul_swap.py``; its constants in arch_sm_90.json).

Each shape: torch, the default, and wgmma_swap at each (blocks, WR, runs): a's rows in the fewest
blocks (``swap_rows``) or one or two more (at least 48 rows each), WR in (128, 64), runs of K from
``--runs`` (each at least WS_SPLIT_MIN_SLICES k-slices), timed flushed in turns
(``bench.timing.time_interleaved``) and back to back (``time_loop``), b = W.t() (``--layout row``:
b row-major). Writes JSON; prints each shape's times (flushed / back to back), the model's pick and
the fastest.

With ``--by-width``, a's rows in blocks of each width of 64 or more instead (K whole, at most three
waves of tiles): the plans cuBLAS's swapped tiles of 1000-2500 rows resemble.

Usage (Hopper GPU): python lab/sweep_swap_tiles.py [--seed 50] [--count 40] [--rows 65 511]
    [--any-pick] [--by-width] [--min-block-rows 16] [--shapes M N K ...] [--runs 1 2 4] [--layout wt] [--json F]
"""

from __future__ import annotations

import torch

from cuda_ref import _matmul as cm
from cuda_ref import _matmul_swap as wg
from lab.forced_plans import operands, parser, shapes_of, time_forced, write_rows


MODEL_SHAPE, CLUSTER_RUNS = wg.swap_shape, wg.SWAP_CLUSTER_RUNS


def forced(plan):
    """swap_shape for the plans made next: ``plan`` (row blocks, WR, runs, runs summed in a cluster
    where they may be), or the model's (None)."""
    wg.swap_shape = MODEL_SHAPE if plan is None else (lambda *args: plan[:3])
    wg.SWAP_CLUSTER_RUNS = CLUSTER_RUNS if plan is None or plan[3] else ()
    cm._PLANS.clear()


def plan_name(N, sms, blocks, wr, runs, cluster=True) -> str:
    """"2b128x3": two row blocks, 128-row tiles of W, three runs of K (summed in a cluster where
    ``swap_clustered``; "g": by the second launch)."""
    clustered = wg.swap_clustered(2, wr, runs, blocks * -(-N // wr), sms)
    return f"{blocks}b{wr}x{runs}" + ("g" if clustered and not cluster else "")


def main() -> None:
    p = parser(__doc__, 50, (65, 511))
    p.add_argument("--runs", type=int, nargs="+", default=[1, 2, 4], help="runs of K tried")
    p.add_argument("--more", type=int, default=2, help="row blocks tried past the fewest")
    p.add_argument("--global-too", action="store_true",
                   help="runs a cluster would sum also through the second launch (names ending g)")
    p.add_argument("--by-width", action="store_true",
                   help="a's rows in blocks of each width NR of 64 or more (any count of blocks), K whole, "
                        "where the tiles make at most three waves, instead of --more's")
    p.add_argument("--min-block-rows", type=int, default=wg.SWAP_MIN_BLOCK_ROWS,
                   help="--more's blocks past the fewest hold at least this many rows (16: a's 33-64 rows in 2-4 blocks)")
    p.add_argument("--any-pick", action="store_true",
                   help="every drawn shape of the rows, not only those variant=None gives wgmma_swap")
    args = p.parse_args()
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    shapes = shapes_of(args.shapes, args.seed, args.count, args.rows, 2e11,
                       lambda M, N, K, a, b: args.any_pick or cm.pick_variant(a, b) == "wgmma_swap")
    rows = []
    for M, N, K in shapes:
        a, b = operands(M, N, K, args.layout)
        k_tiles = -(-K // 64)
        model = wg.swap_shape(M, N, K, 2, sms)
        natural = wg.swap_rows(M)[1]
        tried = [(blocks, wr, runs) for blocks in range(natural, natural + args.more + 1) for wr in wg.swap_tile_rows(2, M)
                 for runs in args.runs if (runs == 1 or k_tiles // runs >= wg.WS_SPLIT_MIN_SLICES)
                 and (blocks == natural or -(-M // blocks) >= args.min_block_rows)]
        if args.by_width:
            tried = sorted({(-(-M // nr), wr, 1) for nr in wg.SWAP_WIDTHS if nr >= wg.SWAP_WIDE_MIN_NR
                            for wr in wg.swap_tile_rows(2, M) if -(-M // nr) * -(-N // wr) <= 3 * sms})
        plans = {plan_name(N, sms, *shape): (*shape, True) for shape in tried + ([model] if model not in tried else [])}
        if args.global_too:
            plans.update({plan_name(N, sms, *shape, False): (*shape, False) for shape in tried
                          if wg.swap_clustered(2, shape[1], shape[2], shape[0] * -(-N // shape[1]), sms)})
        ms, loop_ms = time_forced("wgmma_swap", a, b, plans, forced, 30)
        names = list(ms)
        model_us = {n: wg.swap_time(M, N, K, 2, sms, *shape[:3]) for n, shape in plans.items()}
        best = min(names[2:], key=ms.get)
        mname = plan_name(N, sms, *model)
        rows.append({"shape": [M, N, K], "layout": args.layout, "model": mname, "ms": ms, "loop_ms": loop_ms,
                     "model_us": model_us})
        write_rows(args, __doc__, rows)
        t0, l0 = ms["torch"], loop_ms["torch"]
        print(f"{M}x{N}x{K}: torch {t0 * 1e3:.1f} us, default {t0 / ms[names[1]]:.2f} / loop {l0 / loop_ms[names[1]]:.2f}, "
              f"model {mname} {t0 / ms[mname]:.2f}, best {best} {t0 / ms[best]:.2f} / loop {l0 / loop_ms[best]:.2f} | "
              + " ".join(f"{n} {ms[n] * 1e3:.1f}/{loop_ms[n] * 1e3:.1f}" for n in names[2:]), flush=True)


if __name__ == "__main__":
    main()
