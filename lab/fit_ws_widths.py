"""The figures behind wgmma_ws's width choice (docs/decisions/040-cuda-mid-tiles.md), from the
forced-plan sweeps of ``lab/sweep_ws_stream_k.py`` (no GPU needed):

- each plan kind's measured time against the split model's (whole plans by width; stream-K plans);
- the shared slices' slowdown (``ws_sk_slowdown``): the factor at which the model's stream-K /
  whole time ratio meets the measured one (median log error), over every stream-K plan;
- a least-squares fit of the measured time on the model's whole slices, shared slices and a
  fixed cost a stream-K plan;
- the choice replayed: for each sweep, the plan ``variant=None`` makes now, timed among the forced
  plans, against the default the sweep timed (a plan not forced, a split of K, is left out);
- other choices replayed over all the sweeps: each width whole or with the rule's stream-K units,
  whichever the model gives less time (the shared slices 1.0-1.4x, a fixed 0-4 us more a stream-K
  plan), the width by the least time, against the plan made now.

Usage: python lab/fit_ws_widths.py SWEEP.json ... [--calibrate SWEEP.json ...] (the slowdown's and the fit's
files; decision 040: the five sweeps of seeds 70, 71, 90, 91, 92, calibrated on 70, 71, 90)
"""

from __future__ import annotations

import argparse
import json
import math
import re
import statistics

from cuda_ref import _matmul_wgmma as wg
from kernel_common import cdiv

SMS = 132  # the H200's


def plans(rows):
    """(M, N, K, width, sk, measured us, the same width's whole plan's us) of each forced plan."""
    for r in rows:
        M, N, K = r["shape"]
        for name, ms in r["ms"].items():
            m = re.fullmatch(r"n(\d+)sk(\d+)", name)
            if m:
                bn, sk = int(m[1]), int(m[2])
                yield M, N, K, bn, sk, ms * 1e3, r["ms"][f"n{bn}sk0"] * 1e3


def model(M, N, K, bn, sk, slowdown=1.0):
    return wg.ws_split_time(M, N, K, 2, SMS, False, 1, bn, sk, slowdown)


def calibrate(rows) -> None:
    ps = list(plans(rows))
    for bn in (256, 192, 128):
        whole = [t / model(M, N, K, bn, 0) for M, N, K, b, sk, t, _ in ps if b == bn and not sk]
        shared = [t / model(M, N, K, bn, sk) for M, N, K, b, sk, t, _ in ps if b == bn and sk]
        print(f"{bn} columns: whole {len(whole)} plans, measured / model median {statistics.median(whole):.2f}; "
              f"stream-K {len(shared)}, {statistics.median(shared):.2f}" if whole and shared else f"{bn}: too few")
    shared = [p for p in ps if p[4]]
    for f in (1.0, 1.2, 1.4, 1.6, 1.8):
        err = [math.log((t / w) / (model(M, N, K, bn, sk, f) / model(M, N, K, bn, 0)))
               for M, N, K, bn, sk, t, w in shared]
        print(f"shared slices x{f}: {len(err)} stream-K plans, median log error of stream-K / whole "
              f"{statistics.median(err):+.3f}, mean |error| {statistics.mean(map(abs, err)):.3f}")
    import numpy as np
    x, y = [], []
    for M, N, K, bn, sk, t, _ in ps:
        slots, units, k_tiles = SMS // wg.ws_cluster(M), wg._units(M, N, False, bn), cdiv(K, 64)
        slice_us = wg.WS_SLICE_US * wg.WS_SLICE_SHARE[bn]
        whole = ((units - sk) // slots if sk else cdiv(units, slots)) * k_tiles * slice_us
        shared = cdiv(sk * k_tiles, slots) * slice_us if sk else 0.0
        x.append((whole, shared, 1.0 if sk else 0.0, 1.0))
        y.append(t)
    c = np.linalg.lstsq(np.array(x), np.array(y), rcond=None)[0]
    print(f"least squares, us: {c[0]:.2f} x whole slices + {c[1]:.2f} x shared slices + {c[2]:.1f} a stream-K plan "
          f"+ {c[3]:.1f}")


def replay(path: str) -> None:
    logs, worst, left = [], (9.0, None), 0
    for r in json.load(open(path))["rows"]:
        M, N, K = r["shape"]
        ms = r["ms"]
        default = ms[list(ms)[1]]
        key = f"n{wg.ws_tile_n(M, N, K, 2, SMS)}sk{wg.ws_stream_k(M, N, K, 2, SMS)}"
        if wg.ws_splits(M, N, K, 2, SMS) > 1 or key not in ms:
            left += 1
            continue
        x = default / ms[key]
        logs.append(math.log(x))
        worst = min(worst, (x, (M, N, K, key)))
    print(f"{path}: {len(logs)} shapes ({left} left out), now / the sweep's default "
          f"{math.exp(statistics.mean(logs)):.3f}, worst {worst[0]:.2f} {worst[1]}")


def alternatives(rows) -> None:
    def pick(M, N, K, slowdown, fixed):
        best = None
        for bn in (128, 192, 256):
            if bn == 128 and wg._units(M, N, False, 256) > wg.WS_NARROW_MAX_FILL * (SMS // wg.ws_cluster(M)):
                continue
            sk = wg._last_wave_units(M, N, K, 2, SMS, False, bn)
            splits = 1 if sk else wg._model_splits(M, N, K, 2, SMS, False, bn)
            cands = [(wg.ws_split_time(M, N, K, 2, SMS, False, splits, bn, 0), bn, 0, splits)]
            if sk:
                cands.append((model(M, N, K, bn, sk, slowdown) + fixed, bn, sk, 1))
            c = min(cands)
            if best is None or c[0] <= best[0]:
                best = c
        return best[1:]
    for slowdown, fixed in ((1.4, 0), (1.4, 2), (1.4, 4), (1.2, 4), (1.0, 4)):
        logs, n = [], 0
        for r in rows:
            M, N, K = r["shape"]
            ms = r["ms"]
            now = (wg.ws_tile_n(M, N, K, 2, SMS), wg.ws_stream_k(M, N, K, 2, SMS), wg.ws_splits(M, N, K, 2, SMS))
            alt = pick(M, N, K, slowdown, fixed)
            keys = [f"n{p[0]}sk{p[1]}" for p in (now, alt)]
            if now[2] > 1 or alt[2] > 1 or any(k not in ms for k in keys):
                continue
            n += 1
            if keys[0] != keys[1]:
                logs.append(math.log(ms[keys[0]] / ms[keys[1]]))
        print(f"alternative (shared x{slowdown}, +{fixed} us): {len(logs)} of {n} shapes change, "
              f"the whole set {math.exp(sum(logs) / n):.3f}x the plans made now")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("sweeps", nargs="+")
    p.add_argument("--calibrate", nargs="*", default=None, help="the sweeps the constants are fitted on (default: all)")
    args = p.parse_args()
    calibrate([r for f in (args.calibrate or args.sweeps) for r in json.load(open(f))["rows"]])
    for f in args.sweeps:
        replay(f)
    alternatives([r for f in args.sweeps for r in json.load(open(f))["rows"]])


if __name__ == "__main__":
    main()
