"""Fit the exact float32 walk's tile-and-runs model (``cuda_ref/_matmul_float32.py: PIPELINED_MODEL``)
to ``sweep_float32_tiles.py``'s JSON: every forced plan's time against

    blocks = tiles x runs;  kernel = max(cdiv(blocks, SMs) x a_tile, cdiv(blocks, SMs x blocks an SM) x b_tile) x k_run x BM x BN
    time = kernel + (runs > 1) x (sum_us_per_melem x M N runs / 1e6 + reduce_us) + the copies (M K + N K on W.t()) + fixed

(a: an SM's time a multiply-add of the tile when it holds the tile's blocks; b: one block's when the
SM holds as many as fit), least squares on log time (Adam on log parameters). Prints the parameters
and, on each file, the chosen plan's speed against the best forced plan's and torch's.

Usage: python lab/fit_float32_tiles.py F.json [F.json ...] [--check G.json ...] (fit on F, report on F and G)
"""

from __future__ import annotations

import argparse
import json
import math

import torch

from cuda_ref import _matmul_float32 as f32
from kernel_common import cdiv

SMS = 132
OWN = True  # a free copy-and-host term for each case (else the copies' model)
TILES = list(f32.PIPELINED)


def cases(paths):
    """(shape, layout, {plan: ms}, torch ms, default ms) of every row of the sweep files."""
    out = []
    for path in paths:
        d = json.load(open(path))
        for r in d["rows"]:
            ms = r["ms"]
            plans = {tuple(k.split()): v for k, v in ms.items() if k != "torch" and not k.startswith("default")}
            default = next(v for k, v in ms.items() if k.startswith("default"))
            out.append((tuple(r["shape"]), d["layout"], plans, ms["torch"], default))
    return out


def features(shape, tile, runs):
    M, N, K = shape
    cfg = f32.PIPELINED[tile]
    k_run = cdiv(cdiv(K, runs), cfg.bk) * cfg.bk
    blocks = cdiv(M, cfg.bm) * cdiv(N, cfg.bn) * runs
    work = k_run * cfg.bm * cfg.bn / 1e6
    return cdiv(blocks, SMS) * work, cdiv(blocks, SMS * cfg.blocks_per_sm) * work, M * N * runs / 1e6 * (runs > 1)


NAMES = [*(f"a_{t}" for t in TILES), *(f"b_{t}" for t in TILES), "sum_us_per_melem", "reduce_us", "copy_us_per_melem",
         "fixed_us"]


def predict(p, shape, layout, tile, runs):
    """Microseconds (p: {name: value})."""
    M, N, K = shape
    sm_work, wave_work, summed = features(shape, tile, runs)
    kernel = max(sm_work * p[f"a_{tile}"], wave_work * p[f"b_{tile}"])
    return (kernel + summed * p["sum_us_per_melem"] + (runs > 1) * p["reduce_us"]
            + (M * K + (layout == "wt") * N * K) / 1e6 * p["copy_us_per_melem"] + p["fixed_us"])


def fit(data, steps=2000):
    rows = [(shape, layout, tile, int(runs[1:]), ms) for shape, layout, plans, _, _ in data
            for (tile, runs), ms in plans.items()]
    cols = {name: torch.zeros(len(rows)) for name in NAMES}  # each parameter's coefficient (a, b: under a max)
    for i, (shape, layout, tile, runs, _) in enumerate(rows):
        M, N, K = shape
        sm_work, wave_work, summed = features(shape, tile, runs)
        cols[f"a_{tile}"][i], cols[f"b_{tile}"][i] = sm_work, wave_work
        cols["sum_us_per_melem"][i], cols["reduce_us"][i] = summed, float(runs > 1)
        cols["copy_us_per_melem"][i], cols["fixed_us"][i] = (M * K + (layout == "wt") * N * K) / 1e6, 1.0
    target = torch.tensor([math.log(ms * 1e3) for *_, ms in rows])
    a = torch.stack([cols[f"a_{t}"] for t in TILES]).sum(0)
    b = torch.stack([cols[f"b_{t}"] for t in TILES]).sum(0)
    tile_of = torch.tensor([TILES.index(t) for _, _, t, _, _ in rows])
    rest = torch.stack([cols[n] for n in NAMES[2 * len(TILES):]], 1)
    shape_of = torch.tensor([[r[:2] for r in rows].index(r[:2]) for r in rows])
    # start a block alone slower than its share of a full SM (b > a), so that both terms of the max are fit
    log_p = torch.tensor([math.log(6.0)] * len(TILES) + [math.log(15.0)] * len(TILES) + [0.0] * 4, requires_grad=True)
    log_own = torch.zeros(int(shape_of.max()) + 1, requires_grad=True)  # each case's copies and host time
    opt = torch.optim.Adam([log_p, log_own], lr=0.05)
    for _ in range(steps):
        opt.zero_grad()
        p = log_p.exp()
        kernel = torch.maximum(a * p[tile_of], b * p[len(TILES) + tile_of])
        own = log_own.exp()[shape_of] if OWN else rest @ p[2 * len(TILES):]
        loss = ((torch.log(kernel + own + rest[:, :2] @ p[2 * len(TILES):2 * len(TILES) + 2]) - target) ** 2).sum()
        loss.backward()
        opt.step()
    return {n: float(v) for n, v in zip(NAMES, log_p.detach().exp())}


def report(p, data, label):
    def geo(xs):
        return math.exp(sum(map(math.log, xs)) / len(xs))
    regret, chosen_x, best_x, default_x = [], [], [], []
    for shape, layout, plans, torch_ms, default_ms in data:
        pick = min(plans, key=lambda k: predict(p, shape, layout, k[0], int(k[1][1:])))
        best = min(plans.values())
        regret.append(best / plans[pick])
        chosen_x.append(torch_ms / plans[pick])
        best_x.append(torch_ms / best)
        default_x.append(torch_ms / default_ms)
    for name, xs in (("model's pick / best", regret), ("model's pick x torch", chosen_x),
                     ("best x torch", best_x), ("default x torch", default_x)):
        xs = sorted(xs)
        print(f"{label}: {name}: geomean {geo(xs):.3f} p10 {xs[len(xs) // 10]:.2f} worst {xs[0]:.2f} ({len(xs)})")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("files", nargs="+")
    ap.add_argument("--check", nargs="*", default=[])
    args = ap.parse_args()
    p = fit(cases(args.files))
    print(json.dumps({k: round(v, 6) for k, v in p.items()}, indent=1))
    for path in (*args.files, *args.check):
        report(p, cases([path]), path)


if __name__ == "__main__":
    main()
