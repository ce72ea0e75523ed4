"""Fit the time model's constants for the TMA kernel's tiles of two parts (``N_TAIL``: 192 wide),
the shipped classes and globals held as they are, and score the package's pick with them.

Input: sweeps of ``lab/sweep_tma_configs.py --two-part --in-turns --json`` (each shape: torch, the
default, and the two-part configs whole and in K slices). The model is lab/fit_tma_model.py's
(``features``, ``predict``); each timing weighed by exp(-8 log(time / its shape's fastest)), the
fastest of the default and the configs timed. The score: for each shape the package's pick
(``_fitted_config`` with the fitted classes added to its candidates) and its measured time (a
two-part config's from the sweep; an old config's is the default's, the pick made before), against
torch: geometric mean, 10th percentile and worst, before and after; ``--test``: sweeps scored with
the constants fitted on the first ones.

``--ab``: ``lab/ab_tma_picks.py --compare OLD NEW`` files (W.t() cases) taken as sweep rows too: the
new pick's timing where it is a two-part config, the old pick's as the default.

Usage (CPU): python lab/fit_two_part.py SWEEP.json [...] [--ab AB.json ...] [--test SWEEP2.json ...] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
import fit_tma_model as fm  # noqa: E402
from triton_impl import _matmul_configs as mc  # noqa: E402


def fit(rows, classes, steps=3000):
    f = fm.features(rows, classes)
    n = len(classes)
    p = fm.init(n)
    p[0], p[1], p[2] = (math.log(mc._FIT[k]) for k in ("launch_s", "split_s", "split_bytes_per_s"))
    p.requires_grad_(True)
    mask = torch.zeros_like(p)
    mask[fm.N_GLOBAL:fm.N_GLOBAL + 4 * n] = 1  # the new classes' constants only
    fastest = {i: min([r["default_ms"]] + [c["ms"] for c in r["configs"]]) * 1e-3 for i, r in enumerate(rows)}
    best = torch.tensor([fastest[int(i)] for i in f[:, 0]], dtype=f.dtype)
    y = f[:, 11].log()
    w = torch.exp(-8.0 * (y - best.log()))
    opt = torch.optim.Adam([p], lr=0.03)
    for _ in range(steps):
        opt.zero_grad()
        loss = (w * (fm.predict(p, f, n).log() - y) ** 2).sum() / w.sum()
        loss.backward()
        p.grad *= mask
        opt.step()
    p = p.detach()
    return [[*c, *(p[fm.N_GLOBAL + 4 * j + q].exp().item() for q in range(4))] for j, c in enumerate(classes)], \
        math.sqrt(loss.item())


def with_classes(fitted):
    """The package's _fitted_config with ``fitted`` classes and _TWO_PART_16BIT among its candidates."""
    mc._FIT_CLASSES.update({tuple(c[:6]): c[6:] for c in fitted})
    mc._CANDIDATES[:] = [c for c in mc._CANDIDATES if not c.cfg.kwargs.get("N_TAIL")] + [
        mc._Candidate(cfg, s) for cfg in mc._TWO_PART_16BIT for s in range(1, 5)
        if s == 1 or mc.shared_bytes(cfg, 2, s) <= mc.SHARED_BYTES]


def pick_of(row, sms=132):
    """(measured ms of the pick, its text): a two-part pick's from the sweep, else the default's."""
    M, N, K = row["shape"]
    cfg = mc._fitted_config(M, N, K, sms)  # (outside a plan: chosen afresh)
    kw = cfg.kwargs
    if not kw.get("N_TAIL"):
        return row["default_ms"], "default"
    for c in row["configs"]:
        if (c["bm"], c["bn"], c["bk"], c["warps"], c["stages"], c["split"]) == \
                (kw["BLOCK_M"], kw["BLOCK_N"], kw["BLOCK_K"], cfg.num_warps, cfg.num_stages, kw["SPLIT_K"]):
            return c["ms"], f"{mc.tile_text(cfg)} S{kw['SPLIT_K']}"
    return float("nan"), "untimed"


def ab_rows(path):
    """An A/B file's W.t() cases as sweep rows: the later pick a config timed where it has two parts."""
    rows = []
    for r in json.load(open(path))["rows"]:
        if r["layout"] != "wt":
            continue
        old, new = list(r["picks"])
        kw, warps, stages = r["picks"][new]
        configs = [{"bm": kw["BLOCK_M"], "bn": kw["BLOCK_N"], "bk": kw["BLOCK_K"], "warps": warps, "stages": stages,
                    "swap": kw["SWAP_AB"], "split": kw["SPLIT_K"], "ms": r["ms"][new]}] if kw.get("N_TAIL") else []
        rows.append({"shape": r["shape"], "configs": configs, "default_ms": r["ms"][old], "torch_ms": r["ms"]["torch"]})
    return [r for r in rows if r["configs"]]


def summary(x):
    x = sorted(x)
    return f"{math.exp(sum(map(math.log, x)) / len(x)):.3f} / {x[len(x) // 10]:.3f} / {x[0]:.3f}"


def score(rows, label):
    before, after, changed = [], [], []
    for r in rows:
        ms, text = pick_of(r)
        before.append(r["torch_ms"] / r["default_ms"])
        after.append(r["torch_ms"] / ms)
        if text != "default":
            changed.append((tuple(r["shape"]), text, round(before[-1], 3), round(after[-1], 3)))
    line = (f"{label}: {len(rows)} shapes x torch (geomean / p10 / worst) default {summary(before)} -> "
            f"with two-part tiles {summary(after)}; {len(changed)} picks changed")
    print(line)
    for c in changed:
        print("   ", *c)
    return line


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("sweeps", nargs="+")
    ap.add_argument("--test", nargs="+", default=[])
    ap.add_argument("--ab", nargs="+", default=[])
    ap.add_argument("--json")
    args = ap.parse_args()
    torch.manual_seed(0)
    rows = fm.load(args.sweeps) + [r for path in args.ab for r in ab_rows(path)]
    classes = sorted({fm.cls(c) for r in rows for c in r["configs"]})
    fitted, rms = fit(rows, classes)
    for c in fitted:
        print(f"  {tuple(c[:6])}: {c[6] / 1e12:.2f} TFLOP/s an SM, loads {c[7] / 1e9:.0f} GB/s an SM up to "
              f"{c[9] / 1e12:.2f} TB/s, {c[8] * 1e6:.2f} us an item (rms log error {rms:.3f})")
    with_classes(fitted)
    lines = [score(fm.load(args.sweeps), "fitted on (the sweeps)")]
    for path in args.ab:  # (the A/B's shapes: which picks the refit keeps, each layout's measured ratio)
        for r in json.load(open(path))["rows"]:
            cfg = mc._fitted_config(*r["shape"], 132)
            old, new = list(r["picks"])
            now = [cfg.kwargs, cfg.num_warps, cfg.num_stages]
            which = new if now == r["picks"][new] else old if now == r["picks"][old] else "other"
            line = (f"  {path.rsplit('/', 1)[-1]} {tuple(r['shape'])} {r['layout']}: picks {which}; measured x torch "
                    f"{old} {r['ms']['torch'] / r['ms'][old]:.2f}, {new} {r['ms']['torch'] / r['ms'][new]:.2f}")
            print(line)
            lines.append(line)
    lines += [score(fm.load([t]), f"test {t}") for t in args.test]
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"sweeps": args.sweeps, "ab": args.ab, "test": args.test, "classes": fitted, "scores": lines}, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
