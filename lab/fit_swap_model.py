"""Fit wgmma_swap's shape model (``cuda_ref/_matmul_swap.py``: SWAP_FIXED_US, SWAP_ROW_SLICE_US,
SWAP_REDUCE_US, SWAP_SUM_GBS in arch_sm_90.json) to ``lab/sweep_swap_tiles.py``'s timings, and say
how its picks would have run: each shape's pick by the model fitted without that shape, against the
rule's default and the fastest shape timed (x torch, geomean and worst).

The model: us = fixed + waves x slices x (WR + NR) x row_slice + (runs > 1) x (reduce + sums' bytes
/ sum_gbs), where waves = cdiv(blocks x cdiv(N, WR) x runs, SMs) and slices = cdiv(k_tiles, runs).
Least squares relative to each time (every (blocks, WR, runs) of every shape).

With ``--ws DRAW.json ...``: also wgmma_ws's split model (``ws_plan_time``) against the flushed
times of the calls a draw gave wgmma_ws (up to 4096 rows): measured = a + b x modelled, fitted as above;
with ``--probe PROBE.json ...`` too (``lab/probe_mid_rows.py --variants wgmma_swap`` runs), whether the
two models (the shipped swap model, wgmma_ws's so fitted) pick the faster of the two on each shape
where the default ran wgmma_ws.

With ``--mid``: the model past 64 rows instead (SWAP_MID_MODEL: us = fixed + waves x (slices x
((WR + NR) x row_slice + WR x NR x mma + NR^2 x nr_sq) + wave) + the runs' sum, in a cluster or by
a second launch; and a term a slice per row of W, w_row_slice, tried in decision 056 and not
shipped: ``--zero w_row_slice_us`` for the shipped form), fitted on the sweeps' plans of more than
64 rows (``--floor F``: a slice charged at least F us; ``--host H``: the picks' time at least H us a
launch); with ``--ws`` too, the selection ``swap_beats_ws`` would make on the sweeps' shapes
whose default ran wgmma_ws (the mid model's pick among the timed plans against wgmma_ws's
calibrated model, at ``--slack``), x torch before and after.

Usage (no GPU): python lab/fit_swap_model.py SWEEP.json ... [--ws DRAW.json ... [--by-cluster] [--probe PROBE.json ...]]
    [--mid [--slack 1.1] [--floor 0.18] [--zero nr_sq_us] [--loop] [--host 7.5]] [--sms 132]
(a results log with "runs" of sweeps, as bench/results/logs/h200-2026-11-29-swap-tile-rows.json, or
a sweep's own JSON)
"""

from __future__ import annotations

import argparse
import json
import math

import numpy as np

from kernel_common import cdiv
from bench.results_io import open_text


def features(M, N, K, blocks, wr, runs, sms):
    """The model's terms for one shape way: 1, waves x slices x rows (hundreds), a split, its sums' MB."""
    nr = max(64, cdiv(cdiv(M, blocks), 16) * 16)
    waves, slices = cdiv(blocks * cdiv(N, wr) * runs, sms), cdiv(cdiv(K, 64), runs)
    return [1.0, waves * slices * (wr + nr) / 100, float(runs > 1), (runs > 1) * 2 * runs * M * N * 4 / 1e6]


# the mid model's terms, in swap_time's order (the keys of arch_sm_90.json's swap_mid_model)
MID_TERMS = ("fixed_us", "row_slice_us", "mma_us", "wave_us", "cluster_sum_us", "cluster_row_us", "reduce_us",
             "sum_us_mb", "nr_sq_us", "w_row_slice_us")


def mid_features(M, N, K, blocks, wr, runs, by_launch, sms):
    """The mid model's terms (``cuda_ref/_matmul_swap.py``'s ``swap_time`` past 64 rows): 1, waves x
    slices x rows, waves x slices x rows of W x rows of a, waves; runs summed in a cluster: 1 and NR;
    by the second launch (``by_launch``, or where no cluster sums them): 1 and the sums' MB; waves x
    slices x NR^2; waves x slices x WR (decision 056's term: ``--zero w_row_slice_us`` for
    SWAP_MID_MODEL's form); and the slices an SM runs (waves x slices), which a floor charges."""
    from cuda_ref._matmul_swap import swap_block_rows, swap_clustered
    nr, tiles = swap_block_rows(M, blocks), blocks * cdiv(N, wr)
    waves, slices = cdiv(tiles * runs, sms), cdiv(cdiv(K, 64), runs)
    cluster = runs > 1 and not by_launch and swap_clustered(2, wr, runs, tiles, sms)
    launch = runs > 1 and not cluster
    return [1.0, waves * slices * (wr + nr), waves * slices * wr * nr, float(waves), float(cluster), cluster * nr,
            float(launch), launch * 2 * runs * M * N * 4 / 1e6, waves * slices * nr * nr,
            waves * slices * wr], waves * slices


def rows_of(paths):
    for path in paths:
        data = json.load(open(path))
        for sweep in (data["runs"].values() if "runs" in data else [data]):
            yield from sweep["rows"]


def ws_fit(paths, sms, probes=(), by_cluster=False):
    """wgmma_ws's split model against the draws' flushed times of its default calls, and the two
    models' picks on ``probes`` (see above): the fit's (fixed, scale). ``by_cluster``: also the scale of
    the 128-row tiles' calls in pairs and of those alone, each fitted with the shipped fixed part held
    (WS_ALONE_CALL_SCALE's fit)."""
    from cuda_ref import _matmul_swap as sw, _matmul_wgmma as wg
    modelled, measured, clusters = [], [], []
    for path in paths:
        for r in json.load(open_text(path))["records"]:
            M, N, K = r["shape"]
            if (r["role"] == "impl" and r.get("default") and r["backend"] == "cuda" and r.get("median_ms")
                    and r["extra"].get("config", "").startswith("wgmma_ws") and M <= 4096):
                modelled.append(wg.ws_plan_time(M, N, K, 2, sms, False, wg.ws_tile_n(M, N, K, 2, sms)))
                measured.append(r["median_ms"] * 1e3)
                clusters.append(wg.ws_cluster(M) if wg.ws_consumers(M) == 2 else 0)  # (0: 64-row tiles)
    X, y = np.stack([np.ones(len(modelled)), modelled], 1), np.array(measured)
    c = np.linalg.lstsq(X / y[:, None], np.ones(len(y)), rcond=None)[0]
    err = np.abs(X @ c / y - 1)
    print(f"wgmma_ws, {len(y)} calls: measured = {c[0]:.2f} us + {c[1]:.3f} x ws_plan_time; median error "
          f"{np.median(err):.3f}, p90 {np.percentile(err, 90):.3f}")
    for cluster, name in ((1, "alone"), (2, "in pairs")) if by_cluster else ():
        keep = np.array(clusters) == cluster
        m, t = X[keep, 1] / y[keep], 1 - sw.WS_CALL_FIXED_US / y[keep]  # t = scale x m, relative to each time
        scale = float(m @ t / (m @ m))
        print(f"  128-row tiles {name}, {keep.sum()} calls: scale {scale:.3f} at {sw.WS_CALL_FIXED_US} us fixed")
    for path in probes:
        right, rows = 0, [r for r in json.load(open(path))["rows"]
                          if any(k.startswith("default wgmma_ws") for k in r["ms"])]
        for r in rows:
            M, N, K = r["shape"]
            ws_ms = next(v for k, v in r["ms"].items() if k.startswith("default"))
            swap_ms = next(v for k, v in r["ms"].items() if k.startswith("wgmma_swap"))
            ws_us = c[0] + c[1] * wg.ws_plan_time(M, N, K, 2, sms, False, wg.ws_tile_n(M, N, K, 2, sms))
            swap_us = sw.swap_time(M, N, K, 2, sms, *sw.swap_shape(M, N, K, 2, sms))
            right += (swap_us < ws_us) == (swap_ms < ws_ms)
            print(f"  {M}x{N}x{K}: wgmma_ws {ws_ms * 1e3:.1f} us (modelled {ws_us:.1f}), wgmma_swap "
                  f"{swap_ms * 1e3:.1f} (modelled {swap_us:.1f})")
        print(f"{path}: the models pick the faster on {right} of {len(rows)}")
    return c


def mid_fit(rows, sms, ws=None, slack=1.1, floor=0.0, zero=(), loop=False, host=0.0) -> None:
    """The mid model fitted on ``rows`` (every plan past 64 rows, of the tiles of W shipped), its
    left-out picks and the shipped model's on the same plans (flushed and back to back), and with
    ``ws`` (wgmma_ws's calibration) the selection swap_beats_ws would make (see above). A slice takes
    at least ``floor`` us: where its terms come to less, the plan's slices are charged the floor
    instead (the fit iterated on which plans it binds). The terms ``zero`` are held at 0; ``loop``:
    fitted on the back-to-back times instead of the flushed; ``host``: the picks take a plan's time as
    at least ``host`` us a launch (its runs summed by a second launch: two; decision 056)."""
    from cuda_ref import _matmul_swap as sw
    from cuda_ref import _matmul_wgmma as wg
    X, flushed, looped, shape_of, slices = [], [], [], [], []
    for i, r in enumerate(rows):
        M, N, K = r["shape"]
        for name, ms in r["ms"].items():
            if M > 64 and name[0].isdigit():
                blocks, wr, runs = map(int, name.rstrip("g").replace("b", "x").split("x"))
                if wr in sw.swap_tile_rows(2, M):
                    terms, sm_slices = mid_features(M, N, K, blocks, wr, runs, name.endswith("g"), sms)
                    X.append(terms)
                    flushed.append(ms * 1e3)
                    looped.append(r["loop_ms"][name] * 1e3)
                    shape_of.append(i)
                    slices.append(sm_slices)
    X, shape_of, slices = np.array(X), np.array(shape_of), np.array(slices)
    flushed, looped = np.array(flushed), np.array(looped)
    y = looped if loop else flushed
    free = [j for j, k in enumerate(MID_TERMS) if k not in zero]
    per_slice = [1, 2, 8, 9]  # the terms a slice is charged (row_slice_us, mma_us, nr_sq_us, w_row_slice_us)

    def floored(c):
        """Which plans' slices the floor binds under the constants ``c``."""
        return X[:, per_slice] @ c[per_slice] < floor * slices

    def fit(keep):
        c, w = np.zeros(len(MID_TERMS)), 1 / y[keep]
        c[free] = np.linalg.lstsq(X[keep][:, free] / y[keep, None], np.ones(keep.sum()), rcond=None)[0]
        for _ in range(8 if floor else 0):
            bound = floored(c)[keep]
            Xk, t = X[keep].copy(), y[keep] - bound * floor * slices[keep]
            Xk[np.ix_(bound, per_slice)] = 0
            c[free] = np.linalg.lstsq(Xk[:, free] * w[:, None], t * w, rcond=None)[0]
        return c

    def predict(c, idx):
        slice_part = X[idx][:, per_slice] @ c[per_slice]
        return X[idx] @ c - slice_part + np.maximum(slice_part, floor * slices[idx])

    def pick(c, idx):
        """The plan of ``idx`` the model picks: the least modelled time, a launch's host time its floor."""
        return idx[np.argmin(np.maximum(predict(c, idx), host * (1 + X[idx, 6])))]
    c = fit(np.ones(len(y), bool))
    err = np.abs(predict(c, np.arange(len(y))) / y - 1)
    whole = X[:, 4] + X[:, 6] == 0
    shipped = np.array([sw.SWAP_MID_MODEL.get(k, 0.0) for k in MID_TERMS])
    print(f"mid model ({'back to back' if loop else 'flushed'} times), {len(set(shape_of))} shapes, {len(y)} timings "
          f"({int((~whole).sum())} of K in runs): " + json.dumps({k: float(f"{v:.4g}") for k, v in zip(MID_TERMS, c)})
          + f", slice floor {floor} us; median error {np.median(err):.3f} (K whole {np.median(err[whole]):.3f}, in "
          f"runs {np.median(err[~whole]):.3f}), p90 {np.percentile(err, 90):.3f}; the shipped model's "
          f"{np.median(np.abs(X @ shipped / y - 1)):.3f}")
    picks = {"left-out picks": [], "the shipped model's picks": [], "fastest timed": []}
    for i in sorted(set(shape_of)):
        mine, ci = np.where(shape_of == i)[0], fit(shape_of != i)
        t0, l0 = rows[i]["ms"]["torch"] * 1e3, rows[i]["loop_ms"]["torch"] * 1e3
        for name, j in (("left-out picks", pick(ci, mine)),
                        ("the shipped model's picks", mine[np.argmin(X[mine] @ shipped)]),
                        ("fastest timed", mine[np.argmin(y[mine])])):
            picks[name].append((t0 / flushed[j], l0 / looped[j]))
    for name, xs in picks.items():
        f, b = np.array(xs).T
        print(f"{name}: x torch flushed {math.exp(np.mean(np.log(f))):.3f} (worst {f.min():.2f}), back to back "
              f"{math.exp(np.mean(np.log(b))):.3f} (worst {b.min():.2f})")
    if ws is None:
        return
    before, after, moved = [], [], 0
    for i in sorted(set(shape_of)):
        M, N, K = rows[i]["shape"]
        default = next(k for k in rows[i]["ms"] if k.startswith("default"))
        if not default.startswith("default wgmma_ws"):
            continue
        t0, ws_us = rows[i]["ms"]["torch"] * 1e3, rows[i]["ms"][default] * 1e3
        mine = np.where(shape_of == i)[0]
        j = pick(c, mine)
        modelled_ws = ws[0] + ws[1] * wg.ws_plan_time(M, N, K, 2, sms, False, wg.ws_tile_n(M, N, K, 2, sms))
        took = slack * predict(c, [j])[0] < modelled_ws
        moved += took
        before.append(t0 / ws_us)
        after.append(t0 / (flushed[j] if took else ws_us))
    ratio = np.array(after) / np.array(before)
    print(f"swap_beats_ws at slack {slack}: {moved} of {len(before)} wgmma_ws shapes moved, x torch "
          f"{math.exp(np.mean(np.log(before))):.3f} -> {math.exp(np.mean(np.log(after))):.3f}, "
          f"{int((ratio < 0.98).sum())} slower by 2% or more, {int((ratio > 1.02).sum())} faster (in sample)")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("files", nargs="+")
    p.add_argument("--ws", nargs="+", default=[], metavar="DRAW", help="draws whose wgmma_ws calls fit its model too")
    p.add_argument("--by-cluster", action="store_true", help="with --ws: the scale of blocks alone and in pairs apart")
    p.add_argument("--probe", nargs="+", default=[], metavar="PROBE", help="with --ws: probes to pick on")
    p.add_argument("--mid", action="store_true", help="the model past 64 rows (SWAP_MID_*) instead")
    p.add_argument("--slack", type=float, default=1.1, help="with --mid and --ws: swap_beats_ws's slack")
    p.add_argument("--floor", type=float, default=0.0, help="with --mid: a slice's least microseconds")
    p.add_argument("--zero", nargs="+", default=[], choices=MID_TERMS, help="with --mid: terms held at 0")
    p.add_argument("--loop", action="store_true", help="with --mid: fitted on the back-to-back times")
    p.add_argument("--host", type=float, default=0.0, help="with --mid: the picks' host floor a launch (us)")
    p.add_argument("--sms", type=int, default=132)
    args = p.parse_args()
    ws = ws_fit(args.ws, args.sms, args.probe, args.by_cluster) if args.ws else None
    rows = list(rows_of(args.files))
    if args.mid:
        return mid_fit(rows, args.sms, ws, args.slack, args.floor, tuple(args.zero), args.loop, args.host)
    X, y, shape_of = [], [], []
    for i, r in enumerate(rows):
        M, N, K = r["shape"]
        for name, ms in r["ms"].items():
            if name[0].isdigit():  # "{blocks}b{WR}x{runs}"
                blocks, wr, runs = map(int, name.replace("b", "x").split("x"))
                X.append(features(M, N, K, blocks, wr, runs, args.sms))
                y.append(ms * 1e3)
                shape_of.append((i, name))
    X, y = np.array(X), np.array(y)

    def fit(keep):
        w = 1 / y[keep]
        return np.linalg.lstsq(X[keep] * w[:, None], y[keep] * w, rcond=None)[0]

    c = fit(np.ones(len(y), bool))
    err = np.abs(X @ c / y - 1)
    print(f"{len(rows)} shapes, {len(y)} timings: fixed {c[0]:.3f} us, row slice {c[1] / 100 * 1e3:.3f} ns, "
          f"reduce {c[2]:.3f} us, sums {1e3 / c[3]:.0f} GB/s; median error {np.median(err):.3f}, p90 "
          f"{np.percentile(err, 90):.3f}")
    picked, best, default = [], [], []
    for i, r in enumerate(rows):
        mine = [j for j, (s, _) in enumerate(shape_of) if s == i]
        ci = fit(np.array([s != i for s, _ in shape_of]))
        t0 = r["ms"]["torch"] * 1e3
        picked.append(t0 / y[min(mine, key=lambda j: X[j] @ ci)])
        best.append(t0 / y[min(mine, key=lambda j: y[j])])
        default.append(t0 / (next(v for k, v in r["ms"].items() if k.startswith("default")) * 1e3))
    for name, xs in (("left-out picks", picked), ("rule's default", default), ("fastest timed", best)):
        print(f"{name}: {math.exp(np.mean(np.log(xs))):.3f}x torch (geomean), worst {min(xs):.2f}")


if __name__ == "__main__":
    main()
