"""Fit the exact float32 walk's tile-and-runs model (``cuda_ref/_matmul_float32.py: pipelined_us``)
to ``sweep_float32_tiles.py``'s JSON: every forced plan's time against

    blocks = tiles x runs;  kernel = max(cdiv(blocks, SMs) x a_us, cdiv(blocks, SMs x blocks an SM) x b_us) x k_run x BM x BN / 1e6
    time = kernel + (runs > 1) x (sum_us_per_melem x M N runs / 1e6 + reduce_us) + the case's own term

(a_us: an SM's time a million multiply-adds of the tile when it holds the tile's blocks; b_us: one
block's when the SM holds as many as fit; the case's own term: its copies and host time, alike for
every plan of the case), least squares on log time (Adam on log parameters). Prints the fitted
``pipelined_model`` and, on each file, the model's pick (``pipelined_choice`` under it) against the
fastest forced plan and torch.

Sweeps of W.t() (``--layout wt``) time matmul_pipelined_wt's plans under the tiles' names: fitted on
those alone, the model is ``pipelined_wt_model`` (the " wt-copy" and " in-place" plans are left out).

``--a-rows``: from sweeps run with ``--a-rows``, the pricing of a's rows read where they lie
(``pipelined_arow``: ``reads_a_in_place``): each plan's time with A^T copied, less the copy
(``transposed_copy_us_per_melem`` a million elements of A), against its time reading a's rows,
fitted as a line: copied - copy = launch_us + arow / share. Prints it and, per file, how often the
pricing picks the faster of each plan's two forms and what the picks gain. With ``--loop``, from the
sweeps' back-to-back times (``sweep_float32_tiles.py --loop``) instead of the flushed ones.

Usage: python lab/fit_float32_tiles.py F.json [F.json ...] [--check G.json ...] [--a-rows [--loop]]
(fit on F, report on F and G)
"""

from __future__ import annotations

import argparse
import json
import math

import torch

from cuda_ref import _matmul_float32 as f32
from kernel_common import cdiv

SMS = 132
TILES = list(f32.PIPELINED)


def cases(paths):
    """(shape, {(tile, "S<runs>"): ms}, torch ms, default ms) of every row of the sweep files."""
    out = []
    for path in paths:
        for r in json.load(open(path))["rows"]:
            ms = r["ms"]
            plans = {tuple(k.split()): v for k, v in ms.items()  # (not --b-in-place's or --wt-copy's: three words)
                     if k != "torch" and not k.startswith("default") and len(k.split()) == 2}
            default = next(v for k, v in ms.items() if k.startswith("default"))
            out.append((tuple(r["shape"]), plans, ms["torch"], default))
    return out


def fit(data, steps=2000) -> dict:
    """The fitted model, as arch_sm_90.json's ``pipelined_model`` holds it."""
    rows = [(i, shape, tile, int(runs[1:]), ms) for i, (shape, plans, _, _) in enumerate(data)
            for (tile, runs), ms in plans.items()]
    sm_work, wave_work, summed = (torch.zeros(len(rows)) for _ in range(3))
    for j, (_, (M, N, K), tile, runs, _) in enumerate(rows):
        cfg = f32.PIPELINED[tile]
        blocks = cdiv(M, cfg.bm) * cdiv(N, cfg.bn) * runs
        work = f32.k_run_of(cfg, K, runs) * cfg.bm * cfg.bn / 1e6
        sm_work[j], wave_work[j] = cdiv(blocks, SMS) * work, cdiv(blocks, SMS * cfg.blocks_per_sm) * work
        summed[j] = M * N * runs / 1e6 * (runs > 1)
    many = torch.tensor([float(r[3] > 1) for r in rows])
    tile_of = torch.tensor([TILES.index(r[2]) for r in rows])
    case_of = torch.tensor([r[0] for r in rows])
    target = torch.tensor([math.log(r[4] * 1e3) for r in rows])
    # start a block alone slower than its share of a full SM (b > a), so that both terms of the max are fit
    log_a = torch.full((len(TILES),), math.log(6.0), requires_grad=True)
    log_b = torch.full((len(TILES),), math.log(15.0), requires_grad=True)
    log_sum = torch.zeros(2, requires_grad=True)  # sum_us_per_melem, reduce_us
    log_own = torch.zeros(len(data), requires_grad=True)
    opt = torch.optim.Adam([log_a, log_b, log_sum, log_own], lr=0.05)
    for _ in range(steps):
        opt.zero_grad()
        kernel = torch.maximum(sm_work * log_a.exp()[tile_of], wave_work * log_b.exp()[tile_of])
        extra = summed * log_sum[0].exp() + many * log_sum[1].exp() + log_own.exp()[case_of]
        loss = ((torch.log(kernel + extra) - target) ** 2).sum()
        loss.backward()
        opt.step()
    a, b, s = log_a.detach().exp(), log_b.detach().exp(), log_sum.detach().exp()
    # (for a tile of one block an SM the two terms are one: its time is the larger)
    model = {t: {"a_us": round(float(a[i]), 3), "b_us": round(float(max(a[i], b[i]) if f32.PIPELINED[t].blocks_per_sm == 1
                                                                 else b[i]), 3)} for i, t in enumerate(TILES)}
    return {**model, "sum_us_per_melem": round(float(s[0]), 3), "reduce_us": round(float(s[1]), 3)}


def report(model, data, label):
    def geo(xs):
        return math.exp(sum(map(math.log, xs)) / len(xs))
    f32.PIPELINED_MODEL = model  # (pipelined_us reads it)
    regret, chosen_x, best_x, default_x = [], [], [], []
    for shape, plans, torch_ms, default_ms in data:
        pick = min(plans, key=lambda k: f32.pipelined_us(k[0], *shape, SMS, int(k[1][1:])))
        best = min(plans.values())
        regret.append(best / plans[pick])
        chosen_x.append(torch_ms / plans[pick])
        best_x.append(torch_ms / best)
        default_x.append(torch_ms / default_ms)
    for name, xs in (("model's pick / best", regret), ("model's pick x torch", chosen_x),
                     ("best x torch", best_x), ("default x torch", default_x)):
        xs = sorted(xs)
        print(f"{label}: {name}: geomean {geo(xs):.3f} p10 {xs[len(xs) // 10]:.2f} worst {xs[0]:.2f} ({len(xs)})")


def a_rows_pairs(paths, loop=False):
    """(shape, b K-major, ms with A^T copied, ms reading a's rows) of every plan a sweep timed both ways
    (``loop``: back to back)."""
    out = []
    for path in paths:
        sweep = json.load(open(path))
        for r in sweep["rows"]:
            ms = r["loop_ms"] if loop else r["ms"]
            for k, v in ms.items():
                if k.endswith(" a-rows") and k[:-len(" a-rows")] in ms:
                    out.append((tuple(r["shape"]), sweep.get("layout") == "wt", ms[k[:-len(" a-rows")]], v))
    return out


def fit_a_rows(pairs) -> dict:
    """``pipelined_arow``: least squares of copied - copy (us) on arow (us): intercept launch_us, slope 1 / share."""
    xs = [arow * 1e3 for _, _, _, arow in pairs]
    ys = [copied * 1e3 - f32.TRANSPOSED_COPY_US_PER_MELEM * M * K / 1e6 for (M, _, K), _, copied, _ in pairs]
    n, mx, my = len(xs), sum(xs) / len(xs), sum(ys) / len(ys)
    slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sum((x - mx) ** 2 for x in xs)
    return {"share": round(1 / slope, 3), "launch_us": round(my - slope * mx, 2)}


def report_a_rows(pricing, pairs, label):
    f32.PIPELINED_AROW = pricing  # (reads_a_in_place reads it)
    right, gain = 0, []
    for (M, N, K), kmajor, copied, arow in pairs:
        picks = f32.reads_a_in_place(M, N, K, SMS, kmajor)
        right += picks == (arow < copied)
        gain.append(copied / (arow if picks else copied))
    geo = math.exp(sum(map(math.log, gain)) / len(gain))
    print(f"{label}: the pricing picks the faster form of {right} of {len(pairs)} plans; its picks {geo:.3f}x "
          f"the copy's time (geomean), slowest {min(gain):.2f}x")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("files", nargs="+")
    ap.add_argument("--check", nargs="*", default=[])
    ap.add_argument("--a-rows", action="store_true", help="fit pipelined_arow (reads_a_in_place) instead")
    ap.add_argument("--loop", action="store_true", help="--a-rows on the back-to-back times")
    args = ap.parse_args()
    if args.a_rows:
        pricing = fit_a_rows(a_rows_pairs(args.files, args.loop))
        print(json.dumps(pricing))
        for path in (*args.files, *args.check):
            report_a_rows(pricing, a_rows_pairs([path], args.loop), path)
        return
    model = fit(cases(args.files))
    print(json.dumps(model))
    for path in (*args.files, *args.check):
        report(model, cases([path]), path)


if __name__ == "__main__":
    main()
