"""variant=None's CUDA matmul with wgmma_swap's runs summed in a cluster (decision 052) against the
same selection without (every split through the second launch, the shape model before it), on the
drawn shapes where the two make different plans: each checked against torch, timed beside torch
flushed in turns and back to back (``lab.forced_plans.time_forced``: each plan launched as planned).

Usage (Hopper GPU): PYTHONPATH=. python3 lab/ab_swap_cluster.py [--seed 52] [--count 200] [--json F]
"""

from __future__ import annotations

import json
import math

import torch

from bench.workloads import draw_matmul
from cuda_ref import _matmul as cm
from cuda_ref import _matmul_swap as wg
from lab.forced_plans import operands, parser, time_forced

CLUSTER_RUNS = wg.SWAP_CLUSTER_RUNS


def forced(clustered):
    """The selection with clusters (True, None) or without (False) for the plans made next."""
    wg.SWAP_CLUSTER_RUNS = CLUSTER_RUNS if clustered in (None, True) else ()
    cm._PLANS.clear()


def geomean(xs):
    return math.exp(sum(map(math.log, xs)) / len(xs)) if xs else float("nan")


def main() -> None:
    p = parser(__doc__, 52, (1, 16384))
    p.add_argument("--layouts", nargs="+", default=["wt", "row"])
    args = p.parse_args()
    rows = []
    for M, N, K in draw_matmul(args.count, args.seed):
        for lay in args.layouts:
            a, b = operands(M, N, K, lay)
            forced(True)
            new = cm.describe(a, b)
            forced(False)
            old = cm.describe(a, b)
            forced(None)
            if new == old:
                continue
            ms, loop_ms = time_forced(None, a, b, {"cluster": True, "before": False}, forced, 30)
            t, tl = ms["torch"], loop_ms["torch"]
            row = {"shape": [M, N, K], "layout": lay, "cluster_plan": new, "before_plan": old, "ms": ms,
                   "loop_ms": loop_ms}
            rows.append(row)
            print(f"{M}x{N}x{K} {lay}: x torch {t / ms['before']:.2f} -> {t / ms['cluster']:.2f}, back to back "
                  f"{tl / loop_ms['before']:.2f} -> {tl / loop_ms['cluster']:.2f} | {old} -> {new}", flush=True)
    for key in ("ms", "loop_ms"):
        ratio = [r[key]["before"] / r[key]["cluster"] for r in rows]
        print(f"{key}: {len(rows)} cases changed, cluster / before speed geomean {geomean(ratio):.3f}, "
              f"min {min(ratio, default=float('nan')):.2f}; x torch before {geomean([r[key]['torch'] / r[key]['before'] for r in rows]):.3f}"
              f" -> {geomean([r[key]['torch'] / r[key]['cluster'] for r in rows]):.3f}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"device": torch.cuda.get_device_name(), "seed": args.seed, "count": args.count,
                       "what": __doc__.splitlines()[0], "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
