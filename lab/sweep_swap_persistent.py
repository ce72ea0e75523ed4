"""wgmma_swap's persistent grid (as few blocks as keep its waves, each taking tiles in turn, its
ring running on from one tile into the next) against one block a tile (the grid it had before), on
drawn products where variant=None takes wgmma_swap (docs/decisions/031-cuda-swap-ab-wgmma.md).

Each shape: torch, the default, and wgmma_swap with each grid, timed flushed in turns
(``bench.timing.time_interleaved``) and back to back (``time_loop``), b = W.t() (``--layout row``:
b row-major). Writes JSON; prints each shape's times (flushed / back to back).

Usage (Hopper GPU): python lab/sweep_swap_persistent.py [--seed 32] [--count 40] [--rows 17 2047]
    [--shapes M N K ...] [--layout wt] [--json F]
    python lab/sweep_swap_persistent.py --summary F.json ...   (no GPU: one tile a block over persistent,
    geomean and range, flushed and back to back)
"""

from __future__ import annotations

import json
import math
import sys

from cuda_ref import _matmul as cm
from cuda_ref import _matmul_swap as wg
from lab.forced_plans import operands, parser, shapes_of, time_forced, write_rows

PERSISTENT = wg.balanced_grid
GRIDS = {"persistent": PERSISTENT, "one tile a block": lambda tiles, slots: tiles}


def forced(grid):
    """The grid rule for the plans made next (None: the shipped one)."""
    wg.balanced_grid = PERSISTENT if grid is None else grid
    cm._PLANS.clear()


def summary(path: str) -> str:
    rows = json.load(open(path))["rows"]
    out = f"{path}: {len(rows)} shapes, one tile a block / persistent:"
    for key, what in (("ms", "flushed"), ("loop_ms", "back to back")):
        r = [row[key]["one tile a block"] / row[key]["persistent"] for row in rows]
        out += f" {what} {math.exp(sum(map(math.log, r)) / len(r)):.3f} ({min(r):.3f}-{max(r):.3f})"
    return out


def main() -> None:
    if sys.argv[1:2] == ["--summary"]:
        print("\n".join(summary(path) for path in sys.argv[2:]))
        return
    p = parser(__doc__, 32, (17, 2047))
    args = p.parse_args()
    shapes = shapes_of(args.shapes, args.seed, args.count, args.rows, 2e11,
                       lambda M, N, K, a, b: cm.pick_variant(a, b) == "wgmma_swap")
    rows = []
    for M, N, K in shapes:
        a, b = operands(M, N, K, args.layout)
        ms, loop = time_forced("wgmma_swap", a, b, GRIDS, forced, 20)
        rows.append({"shape": [M, N, K], "ms": ms, "loop_ms": loop})
        one, per = ms["one tile a block"], ms["persistent"]
        print(f"{M}x{N}x{K} {args.layout}: torch {ms['torch'] * 1e3:.1f} us; one tile a block {one * 1e3:.1f}, "
              f"persistent {per * 1e3:.1f} ({one / per:.3f}x); back to back {loop['one tile a block'] * 1e3:.1f} / "
              f"{loop['persistent'] * 1e3:.1f} ({loop['one tile a block'] / loop['persistent']:.3f}x)", flush=True)
        write_rows(args, __doc__, rows)


if __name__ == "__main__":
    main()
