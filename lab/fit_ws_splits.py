"""How wgmma_ws's plans and its choice among them read on the forced-plan sweeps of
``lab/sweep_ws_stream_k.py --splits`` (no GPU needed; docs/decisions/041-cuda-quarter-tiles.md):

- each plan kind's measured time against the split model's (by tile width: whole, stream-K, K in 2
  or 3 runs handed over in the kernel);
- the plan ``variant=None`` makes now, timed among the forced plans, against the fastest of them
  (leaving out the 64-column plans, whose instances are not shipped), and the fastest against torch;
  where a sweep has 64-column plans, the fastest with them against without, the shapes where one
  is the fastest, and the slowest of them against the default;
- with ``--probes`` (``lab/probe_mid_rows.py --variants wgmma_swap wgmma_ws`` files): where
  ``variant=None`` takes wgmma_swap, that against wgmma_ws's own plan, wgmma_ws's measured time
  less the split model's, and the choice replayed with wgmma_ws taken wherever the swap model's
  time exceeds C times the split model's.

Usage: python lab/fit_ws_splits.py SWEEP.json ... [--probes PROBE.json ...]
"""

from __future__ import annotations

import argparse
import json
import math
import re
import statistics

from cuda_ref import _matmul_swap as sw
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


def quarter(rows) -> None:
    """The 64-column plans (a sweep run on a build with their instances): the fastest plan with
    them against without, the shapes where one is the fastest, and their slowest against the default."""
    pairs = []
    for r in rows:
        ms = {k: v for k, v in r["ms"].items() if PLAN.fullmatch(k)}
        narrow = {k: v for k, v in ms.items() if k.startswith("n64")}
        if narrow:
            others = min(v for k, v in ms.items() if k not in narrow)
            default = r["ms"][list(r["ms"])[1]]
            pairs.append((r["shape"], others / min(others, min(narrow.values())), default / min(narrow.values())))
    if not pairs:
        return
    won = [f"{'x'.join(map(str, s))} {g:.2f}x" for s, g, _ in pairs if g > 1]
    slowest = min(pairs, key=lambda p: p[2])
    print(f"  64-column plans: the fastest with them {geo([g for _, g, _ in pairs]):.3f}x the speed without; "
          f"fastest on {len(won)} shapes ({', '.join(won)}); their best against the default at worst "
          f"{slowest[2]:.2f} ({'x'.join(map(str, slowest[0]))})")


def geo(v) -> float:
    return math.exp(statistics.mean(map(math.log, v)))


def probes(paths) -> None:
    """Where variant=None took wgmma_swap: swap's time over the faster of swap and wgmma_ws's own
    plan, and the same with wgmma_ws taken where swap_time > C x ws_plan_time."""
    for path in paths:
        with open(path) as f:
            rows = json.load(f)["rows"]
        cases = []
        for r in rows:
            ms, (M, N, K) = r["ms"], r["shape"]
            swap = [v for k, v in ms.items() if k.startswith("wgmma_swap ")]
            ws = [v for k, v in ms.items() if k.startswith(("wgmma_ws ", "picks wgmma_ws"))]
            if swap and ws and any(k.startswith("default wgmma_swap") for k in ms):
                model = (sw.swap_time(M, N, K, 2, SMS, *sw.swap_shape(M, N, K, 2, SMS)),
                         wg.ws_plan_time(M, N, K, 2, SMS, False, wg.ws_tile_n(M, N, K, 2, SMS)))
                cases.append((swap[0], ws[0], model))
        print(f"{path}: {len(cases)} cases where variant=None takes wgmma_swap; its time over the faster of it "
              f"and wgmma_ws's own plan {geo([s / min(s, w) for s, w, _ in cases]):.3f}; wgmma_ws's time less "
              f"the split model's, median {statistics.median(w * 1e3 - m[1] for _, w, m in cases):.1f} us")
        for c in (0.8, 1.0, 1.2, 1.5, 2.0):
            taken = [w if m[0] > c * m[1] else s for s, w, m in cases]
            print(f"  wgmma_ws where the swap model's time > {c} x the split model's: "
                  f"{sum(m[0] > c * m[1] for _, _, m in cases)} taken, "
                  f"{geo([s / t for (s, _, _), t in zip(cases, taken)]):.3f}x the speed of swap everywhere")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("sweeps", nargs="*")
    p.add_argument("--probes", nargs="+", default=[])
    args = p.parse_args()
    probes(args.probes)
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
        print(f"  the plan made now at {geo(chosen):.3f} of the fastest forced plan's speed (geomean over "
              f"{len(chosen)} shapes, worst {min(chosen):.2f}); x torch: the default timed "
              f"{geo(default_vs_torch):.3f}, the fastest forced plan {geo(best_vs_torch):.3f}")
        quarter(rows)


if __name__ == "__main__":
    main()
