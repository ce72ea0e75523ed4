"""How wgmma_ws's plans and its choice among them read on the forced-plan sweeps of
``lab/sweep_ws_stream_k.py --splits`` (no GPU needed; docs/decisions/041-cuda-quarter-tiles.md):

- each plan kind's measured time against the split model's (by tile width: whole, stream-K, K in 2
  or 3 runs handed over in the kernel);
- the plan ``variant=None`` makes now, timed among the forced plans, against the fastest of them
  (leaving out the 64-column plans, whose instances are not shipped), and the fastest against torch.

Usage: python lab/fit_ws_splits.py SWEEP.json ...
"""

from __future__ import annotations

import argparse
import json
import math
import re
import statistics

from cuda_ref import _matmul_wgmma as wg

SMS = 132  # the H200's
PLAN = re.compile(r"n(\d+)sk(\d+)(?:s(\d))?")


def plan_name(M, N, K) -> str:
    bn = wg.ws_tile_n(M, N, K, 2, SMS)
    splits, sk = wg.ws_splits(M, N, K, 2, SMS), wg.ws_stream_k(M, N, K, 2, SMS)
    return f"n{bn}sk{sk}" + (f"s{splits}" if splits > 1 else "")


def kinds(rows) -> None:
    """Measured / model by plan kind (medians)."""
    out: dict = {}
    for r in rows:
        for name, ms in r["ms"].items():
            m = PLAN.fullmatch(name)
            if m and name in r["model_us"]:
                kind = f"{m[1]} " + (f"split {m[3]}" if m[3] else "stream-K" if int(m[2]) else "whole")
                out.setdefault(kind, []).append(ms * 1e3 / r["model_us"][name])
    for kind in sorted(out, key=lambda k: (-int(k.split()[0]), k)):
        print(f"  {kind:16s} {len(out[kind]):3d} plans, measured / model median {statistics.median(out[kind]):.2f}")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("sweeps", nargs="+")
    args = p.parse_args()
    geo = lambda v: math.exp(statistics.mean(map(math.log, v)))  # noqa: E731
    for path in args.sweeps:
        with open(path) as f:
            rows = json.load(f)["rows"]
        print(f"{path}: {len(rows)} shapes")
        kinds(rows)
        chosen, best_vs_torch, default_vs_torch = [], [], []
        for r in rows:
            ms = {k: v for k, v in r["ms"].items() if PLAN.fullmatch(k) and not k.startswith("n64")}
            best = min(ms.values())
            now = plan_name(*r["shape"])
            if now in ms:
                chosen.append(best / ms[now])
            best_vs_torch.append(r["ms"]["torch"] / best)
            default_vs_torch.append(r["ms"]["torch"] / r["ms"][list(r["ms"])[1]])
        print(f"  the plan made now at {geo(chosen):.3f} of the fastest forced plan's speed (geomean over {len(chosen)} "
              f"shapes, worst {min(chosen):.2f}); x torch: the default timed {geo(default_vs_torch):.3f}, "
              f"the fastest forced plan {geo(best_vs_torch):.3f}")


if __name__ == "__main__":
    main()
