"""wgmma_ws's blocks alone against blocks in pairs, forced, on drawn products of an odd count of
128-row tiles where variant=None takes wgmma_ws with 128-row tiles: the data behind ``ws_cluster``
(``cuda_ref/_matmul_wgmma.py``; its thresholds in arch_sm_90.json).

A pair's two blocks take 128-row tiles m0 and m0 + 128 of the same columns and share b's tile by
TMA multicast, so an odd count of 128-row tiles pads a's rows by one more tile (1035 rows: 9 tiles,
5 pairs, 1280 rows computed). Blocks alone pad to 128 rows but read b's tile twice as often.
Each shape: torch, the default, and wgmma_ws with the cluster forced to 1 and to 2 (the model's
tile width, split and stream-K for each; ``--whole``: alone with stream-K off too), timed flushed in
turns and back to back, each result checked against torch's. Writes JSON with each arm's plan;
prints each shape's ratios.

Usage (Hopper GPU): python lab/sweep_ws_pairs.py [--seed 80] [--count 30] [--rows 1024 16384]
    [--shapes M N K ...] [--layout wt] [--rep-ms 20] [--whole] [--json F]
"""

from __future__ import annotations


from cuda_ref import _matmul as cm
from cuda_ref import _matmul_wgmma as wg
from kernel_common import cdiv
from lab.forced_plans import operands, parser, shapes_of, time_forced, write_rows

MODEL, STREAM_K = wg.ws_cluster, wg.WS_STREAM_K  # the rule's, restored after each forced plan


def forced(plan):
    """wgmma_ws's blocks a cluster for the plans made next, and stream-K on or off: (cluster,
    stream_k); None: the rule's."""
    cluster, stream_k = plan or (None, STREAM_K)
    wg.ws_cluster = cm.ws_cluster = MODEL if cluster is None else (lambda M: cluster)
    wg.WS_STREAM_K = stream_k
    cm._PLANS.clear()


def main() -> None:
    p = parser(__doc__, 80, (1024, 16384))
    p.add_argument("--rep-ms", type=float, default=20)
    p.add_argument("--whole", action="store_true",
                   help="also blocks alone with stream-K off (where alone's plan shares its last wave)")
    args = p.parse_args()
    arms = {"alone": (1, True), "pairs": (2, True)} | ({"alone_whole": (1, False)} if args.whole else {})

    def keep(M, N, K, a, b):
        return cm.pick_variant(a, b) == "wgmma_ws" and wg.ws_consumers(M) == 2 and cdiv(M, 128) % 2 == 1
    shapes = shapes_of(args.shapes, args.seed, args.count, args.rows, 4e11, keep)
    rows = []
    for M, N, K in shapes:
        a, b = operands(M, N, K, args.layout)
        ms, loop_ms = time_forced("wgmma_ws", a, b, arms, forced, args.rep_ms)
        plans = {}
        for name, plan in arms.items():
            forced(plan)
            plans[name] = cm.describe(a, b, variant="wgmma_ws")
        forced(None)
        rows.append({"shape": [M, N, K], "layout": args.layout, "tiles_128": cdiv(M, 128), "ms": ms,
                     "loop_ms": loop_ms, "plans": plans})
        write_rows(args, __doc__, rows)
        t0, l0 = ms["torch"], loop_ms["torch"]
        print(f"{M}x{N}x{K} ({cdiv(M, 128)} tiles): torch {t0 * 1e3:.1f} us | "
              + " ".join(f"{n.split(' ')[0]} {t0 / ms[n]:.2f}/{l0 / loop_ms[n]:.2f}" for n in list(ms)[1:])
              + f" | pairs/alone {ms['alone'] / ms['pairs']:.2f}/{loop_ms['alone'] / loop_ms['pairs']:.2f}", flush=True)


if __name__ == "__main__":
    main()
