"""Fit a time model of Triton's 16-bit TMA configs to a sweep of every config on drawn shapes
(``lab/sweep_tma_configs.py --set draw --all-tiles --in-turns --json``), and score the pick it makes.

The model, per config class (tile, warps, stages, swap-AB): the waves of a shape's work items
(tiles x K slices) on the SMs, each item its slice's multiply-adds at the class's rate plus a fixed
cost an item; the whole no faster than the operands' and c's bytes at the lesser of HBM's rate and
the busy SMs' load rate (the class's bytes in flight make it); a split's float32 partials and its
sum added. Constants are fitted by
least squares on log time (torch, Adam), each timing weighed by exp(-X log(its time / its shape's
fastest)) with ``--near-best X`` (shipped: 8), so the fit minds the configs a pick chooses among
more than those far behind. The score: the pick's time against the fastest config of
each shape (regret), the ratio to torch of the pick, the default the sweep ran, and the fastest,
fitted on all shapes and in k folds (a shape's pick made by constants fitted without it).

Usage (CPU): python lab/fit_tma_model.py SWEEP.json [SWEEP2.json ...] [--folds 8] [--test SWEEP3.json ...]
    [--shipped] [--swap-rereads two-half|blocks-half|blocks|half|none|all|l2] [--near-best X] [--no-near-pick]
    [--l2-traffic] [--no-wave-memory] [--misses] [--json OUT]
(``--test``: the picks, on other sweeps, of the constants fitted on the first ones; ``--shipped``: the
package's own picks scored too; ``--swap-rereads``: the W re-read term, shipped as "two-half" with
``--near-pick`` (each timing weighed by the lesser of its measured and modelled gap to its shape's fastest);
``--l2-traffic``: no faster than every item's tiles' bytes at one rate of the whole GPU, fitted at 13 TB/s
and binding nowhere, not shipped;
``--tile-loads``: an item no faster than its a and W tiles' bytes at one fitted per-SM rate: fitted at
104 GB/s an SM (with ``--wave-memory``), the picks no better (4-fold 0.979 / 0.91 / 0.81 of the fastest
against 0.982 / 0.94 / 0.81), not shipped; ``--wave-memory`` (shipped): the bytes' floor wave by wave)
"""

from __future__ import annotations

import argparse
import gzip
import json
import math

import torch

SMS = 132


def load(paths):
    rows = []
    for p in paths:
        for r in json.load(gzip.open(p) if p.endswith(".gz") else open(p))["rows"]:
            cfgs = [c for c in r["configs"] if c.get("ms")]
            if cfgs:
                rows.append({**r, "configs": cfgs})
    return rows


def cls(c):
    return (c["bm"], c["bn"], c["bk"], c["warps"], c["stages"], bool(c["swap"]))


REREADS = "two-half"  # --swap-rereads: W's bytes counted once a row block of a 128- or 256-row tile where a's rows
# make two blocks or more, the last at most half full, and W outgrows L2 ("blocks-half"), and in two such blocks
# whatever W's size ("two-half", shipped); the same with two
# blocks only ("half", shipped before), or whatever the last block's fill ("blocks"); once a row block of a for
# swap-AB configs ("all"), where W outgrows L2 ("l2"): tried and not kept
L2_BYTES = 50 << 20  # the H200's L2


def features(rows, classes):
    """One row a (shape, config): class index, items, waves, k slice, tile extents, split, shape,
    time, and the times W's bytes are read (``REREADS``)."""
    out = []
    for i, r in enumerate(rows):
        M, N, K = r["shape"]
        for c in r["configs"]:
            bm, bn, bk, s = c["bm"], c["bn"], c["bk"], c["split"]
            tiles = -(-M // bm) * -(-N // bn)
            items = tiles * s
            k_slice = -(-(-(-K // s)) // bk) * bk
            rereads = c["swap"] and (REREADS == "all" or (REREADS == "l2" and N * K * 2 > L2_BYTES))
            # "half": a 128-row tile whose rows of a make two blocks, the second at most half full, W
            # past L2 (64-row tiles showed no such miss); "blocks": two blocks or more, W read once a block;
            # "blocks-half": the same where the last block is at most half full
            if REREADS == "half":
                rereads = bm >= 128 and -(-M // bm) == 2 and 2 * (M - bm) <= bm and N * K * 2 > L2_BYTES
            if REREADS in ("blocks", "blocks-half", "two-half"):
                last = M - (-(-M // bm) - 1) * bm
                rereads = bm >= 128 and M > bm and N * K * 2 > L2_BYTES and (REREADS == "blocks" or 2 * last <= bm)
                # "two-half": also two blocks, the second at most half full, whatever W's size
                rereads |= REREADS == "two-half" and bm >= 128 and -(-M // bm) == 2 and 2 * last <= bm
            out.append((i, classes.index(cls(c)), items, -(-items // SMS), k_slice, bm, bn, s, M, N, K, c["ms"] * 1e-3,
                        -(-M // bm) if rereads else 1))
    return torch.tensor(out, dtype=torch.float64)


N_GLOBAL = 3  # fixed launch cost, split's fixed cost, split's byte rate
L2_TRAFFIC = False  # --l2-traffic: no faster than all items' tile bytes at one rate of the whole GPU (the last global)
WAVE_MEMORY = True  # --wave-memory (shipped): the bytes' floor wave by wave, a partial last wave at its busy SMs' load rate
TILE_LOADS = False  # --tile-loads: an item no faster than its operand tiles' bytes at one SM's rate (a 4th global)


def init(n):
    # per class: log rate (FLOP/s an SM), log load rate from HBM (bytes/s an SM), log fixed cost an
    # item (s), log load rate of the whole GPU (bytes/s)
    p = torch.zeros(N_GLOBAL + 4 * n + 1, dtype=torch.float64)  # (the last: --tile-loads' or --l2-traffic's rate)
    p[0], p[1], p[2] = math.log(5e-6), math.log(4e-6), math.log(2.5e12)
    p[N_GLOBAL::4] = math.log(4.5e12)
    p[N_GLOBAL + 1::4] = math.log(3e10)
    p[N_GLOBAL + 2::4] = math.log(1e-6)
    p[N_GLOBAL + 3::4] = math.log(3.5e12)
    p[-1] = math.log(8e12 if L2_TRAFFIC else 6e10)  # (after the classes': their first stride reaches it)
    return p


def predict(p, f, n):
    ci = f[:, 1].long()
    items, waves, k, bm, bn, s, M, N, K = (f[:, j] for j in range(2, 11))
    fixed, split_fixed, split_rate = (p[j].exp() for j in range(N_GLOBAL))
    rate, load, item_fixed, peak = (p[N_GLOBAL + j:N_GLOBAL + 4 * n:4].exp()[ci] for j in range(4))
    per_item = 2 * bm * bn * k / rate
    if TILE_LOADS:  # each item's a and W tiles come through the SM (from L2 where shared): their bytes
        per_item = torch.maximum(per_item, (bm + bn) * k * 2 / p[-1].exp())
    per_item = per_item + item_fixed
    active = torch.clamp(items, max=SMS)
    total = (M * K + f[:, 12] * N * K + M * N) * 2
    floor = total / torch.minimum(peak, active * load)
    if WAVE_MEMORY:  # each item an equal share of the bytes; the last wave's items on fewer SMs
        last = items - (waves - 1) * SMS
        floor = total / items * ((items - last) / torch.minimum(peak, SMS * load) + last / torch.minimum(peak, last * load))
    if L2_TRAFFIC:  # every item's a and W tiles, through L2 to the SMs, at one rate for the whole GPU
        floor = torch.maximum(floor, items * (bm + bn) * k * 2 / p[-1].exp())
    t = fixed + torch.maximum(waves * per_item, floor)
    return t + (s > 1) * (split_fixed + 2 * s * M * N * 4 / split_rate)


NEAR_PICK = True  # --near-pick (shipped; --no-near-pick: the measured gap only)
NEAR_BEST = 8.0  # --near-best (shipped): a timing's weight exp(-NEAR_BEST * log(its time / its shape's fastest))


def fit(f, n, steps=3000):
    p = init(n).requires_grad_(True)
    opt = torch.optim.Adam([p], lr=0.03)
    y = f[:, 11].log()
    best = torch.full((int(f[:, 0].max()) + 1,), float("inf"), dtype=f.dtype).scatter_reduce(
        0, f[:, 0].long(), f[:, 11], "amin")
    shape = f[:, 0].long()
    gap = y - best[shape].log()
    w = torch.exp(-NEAR_BEST * gap)
    for i in range(steps):
        if NEAR_PICK and i % 100 == 0 and i:  # a timing also counts where the model (now) puts it near its shape's fastest
            t = predict(p.detach(), f, n)
            fastest = torch.full_like(best, float("inf")).scatter_reduce(0, shape, t, "amin")
            w = torch.exp(-NEAR_BEST * torch.minimum(gap, t.log() - fastest[shape].log()))
        opt.zero_grad()
        loss = (w * (predict(p, f, n).log() - y) ** 2).sum() / w.sum()
        loss.backward()
        opt.step()
    return p.detach(), loss.item()


def picks(p, f, n, rows):
    t = predict(p, f, n)
    out = {}
    for i in range(len(rows)):
        sel = (f[:, 0] == i).nonzero().flatten()
        out[i] = int(sel[t[sel].argmin()])
    return out


def stats(x):
    x = sorted(x)
    return f"gm {math.exp(sum(map(math.log, x)) / len(x)):.3f} p10 {x[len(x) // 10]:.2f} min {x[0]:.2f}"


lines: list = []  # the score lines printed, for --json


def say(text: str) -> None:
    print(text)
    lines.append(text)


def shipped_picks(rows, f, classes, hbm_scale=1.0, load_scale=1.0):
    """{shape index: timing row} of the config triton_impl's own selection gives each shape; with every
    class's HBM rate in all (``hbm_scale``) or each SM's load rate (``load_scale``) scaled in its model."""
    from triton_impl import _matmul_configs as mc
    saved = [(c, c.peak, c.load) for c in mc._CANDIDATES]
    for c in mc._CANDIDATES:
        c.peak, c.load = c.peak * hbm_scale, c.load * load_scale
    out = {}
    try:
        for i, r in enumerate(rows):
            cfg = mc._heuristic_config(*r["shape"], 2, SMS, "tma")
            kw = cfg.kwargs
            c = (kw["BLOCK_M"], kw["BLOCK_N"], kw["BLOCK_K"], cfg.num_warps, cfg.num_stages, bool(kw["SWAP_AB"]))
            if c not in classes:
                continue  # (a shape whose pick its sweep did not time is left out: ``score`` counts them)
            key = (classes.index(c), kw["SPLIT_K"])
            timed = [j for j in (f[:, 0] == i).nonzero().flatten().tolist() if (int(f[j, 1]), int(f[j, 7])) == key]
            if timed:
                out[i] = timed[0]
    finally:
        for c, peak, load in saved:
            c.peak, c.load = peak, load
    return out


def score(rows, f, chosen_by):
    """Each way of choosing's pick against the fastest config, and x torch; the default's and the
    fastest's x torch."""
    t = f[:, 11]
    best = {i: float(t[f[:, 0] == i].min()) for i in range(len(rows))}
    for name, chosen in chosen_by.items():
        regret = [best[i] / float(t[chosen[i]]) for i in chosen]
        ratio = [rows[i]["torch_ms"] * 1e-3 / float(t[chosen[i]]) for i in chosen]
        say(f"  {name:10s}: pick / fastest {stats(regret)}; x torch {stats(ratio)}; {len(chosen)} of {len(rows)} shapes")
    say(f"  {'default':10s}: x torch {stats([r['torch_ms'] / r['default_ms'] for r in rows])}")
    say(f"  {'fastest':10s}: x torch {stats([r['torch_ms'] * 1e-3 / best[i] for i, r in enumerate(rows)])}")


def misses(p, f, n):
    """Measured over modelled time (the fitted constants ``p``) of the timings whose tile takes a's
    rows in two blocks where W passes L2: by tile rows and whether the second block is at most half
    full, and the worst few of 128-row tiles."""
    ratio = f[:, 11] / predict(p, f, n)
    bm, M, N, K = f[:, 5], f[:, 8], f[:, 9], f[:, 10]
    two = (torch.ceil(M / bm) == 2) & (N * K * 2 > L2_BYTES)
    half = 2 * (M - bm) <= bm
    for rows in (64, 128, 256):
        for name, part in (("second block at most half full", half), ("fuller", ~half)):
            sel = two & (bm == rows) & part
            if sel.any():
                r = ratio[sel]
                say(f"  {rows}-row tiles, two blocks, W past L2, {name}: {int(sel.sum())} timings, measured / "
                    f"modelled geomean {r.log().mean().exp().item():.2f}, max {r.max().item():.2f}")
    sel = (two & (bm == 128) & half).nonzero().flatten()
    for j in sorted(sel.tolist(), key=lambda j: -ratio[j].item())[:6]:
        say(f"    {int(M[j])} x {int(N[j])} x {int(K[j])} ({int(bm[j])} x {int(f[j, 6])}, split {int(f[j, 7])}): "
            f"{ratio[j].item():.2f}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("sweeps", nargs="+")
    ap.add_argument("--folds", type=int, default=8)
    ap.add_argument("--steps", type=int, default=3000)
    ap.add_argument("--test", nargs="+", default=[], help="sweeps scored with the constants fitted, not fitted on")
    ap.add_argument("--swap-rereads", default="two-half",
                    choices=("none", "all", "l2", "half", "blocks", "blocks-half", "two-half"),
                    help="W read once a row block of a 128- or 256-row tile where a's rows make two blocks or more, the "
                         "last at most half full, and W passes L2 (blocks-half), and in two such blocks whatever W (two-half: "
                         "shipped); with two blocks only (half), "
                         "whatever the fill (blocks), none, or swap-AB configs reading W once a block of a's rows "
                         "(all, or where W passes L2): tried and not kept")
    ap.add_argument("--shipped", action="store_true",
                    help="also score the picks of the package's own selection (triton_impl, sms 132) on the sweeps")
    ap.add_argument("--hbm-scale", type=float, nargs="*", default=[],
                    help="with --shipped, also the picks with every class's HBM rate in all times each factor (the "
                         "rates are the H200's, 4.8 TB/s; an H100 has 3.35: 0.7)")
    ap.add_argument("--load-scale", type=float, nargs="*", default=[],
                    help="with --shipped, also the picks with each SM's load rate times each factor")
    ap.add_argument("--misses", action="store_true",
                    help="the fit's measured / modelled time where a's rows make two tile blocks and W passes L2, "
                         "by tile rows and the second block's fill (the data behind the re-read term)")
    ap.add_argument("--tile-loads", action="store_true",
                    help="an item no faster than its operand tiles' bytes at one SM's load rate (a fitted global)")
    ap.add_argument("--near-best", type=float, default=8.0,
                    help="weigh each timing by exp(-X log(time / its shape's fastest)): the fit minds the configs a pick chooses among")
    ap.add_argument("--l2-traffic", action="store_true",
                    help="no faster than every item's a and W tiles' bytes at one fitted rate of the whole GPU (L2 to the SMs)")
    ap.add_argument("--near-pick", action=argparse.BooleanOptionalAction, default=True,
                    help="weigh a timing also by its modelled time over its shape's modelled fastest (the smaller gap): "
                         "the fit minds a config it would pick that measured slow (shipped)")
    ap.add_argument("--wave-memory", action=argparse.BooleanOptionalAction, default=True,
                    help="the bytes' floor wave by wave: a partial last wave's share at its busy SMs' load rate (shipped; "
                         "--no-wave-memory: all at the first wave's, 4-fold pick / fastest p10 0.92 against 0.94)")
    ap.add_argument("--json")
    args = ap.parse_args()
    global REREADS, TILE_LOADS, NEAR_BEST, NEAR_PICK, L2_TRAFFIC, WAVE_MEMORY
    REREADS, TILE_LOADS, NEAR_BEST, NEAR_PICK = args.swap_rereads, args.tile_loads, args.near_best, args.near_pick
    L2_TRAFFIC, WAVE_MEMORY = args.l2_traffic, args.wave_memory
    torch.manual_seed(0)
    rows = load(args.sweeps)
    classes = sorted({cls(c) for r in rows for c in r["configs"]})
    n = len(classes)
    f = features(rows, classes)
    p, loss = fit(f, n, args.steps)
    err = (predict(p, f, n).log() - f[:, 11].log()).abs()
    say(f"{len(rows)} shapes, {len(f)} timings, {n} classes: rms log error {math.sqrt(loss):.3f}, "
          f"median |error| {err.median().exp().item() - 1:.1%}")
    full = picks(p, f, n, rows)
    if args.misses:
        misses(p, f, n)
    cv = {}
    order = list(range(len(rows)))
    for k in range(args.folds):
        held = set(order[k::args.folds])
        keep = torch.tensor([int(i) not in held for i in f[:, 0]])
        pk, _ = fit(f[keep], n, args.steps)
        got = picks(pk, f, n, rows)
        cv.update({i: got[i] for i in held})
    chosen = {"fit on all": full, f"{args.folds}-fold": cv}
    if args.shipped:
        chosen["shipped"] = shipped_picks(rows, f, classes)
        for x in args.hbm_scale:
            chosen[f"hbm x{x:g}"] = shipped_picks(rows, f, classes, hbm_scale=x)
        for x in args.load_scale:
            chosen[f"loads x{x:g}"] = shipped_picks(rows, f, classes, load_scale=x)
    score(rows, f, chosen)
    for path in args.test:
        trows = load([path])
        tf = features(trows, classes)
        say(f"{path} ({len(trows)} shapes), constants fitted on the first sweeps:")
        score(trows, tf, {"pick": picks(p, tf, n, trows)})
    for j, c in enumerate(classes):
        rate, load_rate, fixed, peak = (p[N_GLOBAL + 4 * j + q].exp().item() for q in range(4))
        print(f"  {c}: {rate / 1e12:.2f} TFLOP/s an SM, loads {load_rate / 1e9:.0f} GB/s an SM up to "
              f"{peak / 1e12:.2f} TB/s, {fixed * 1e6:.2f} us an item")
    g = [p[j].exp().item() for j in range(N_GLOBAL)]
    print(f"  fixed {g[0] * 1e6:.2f} us, split {g[1] * 1e6:.2f} us + partials at {g[2] / 1e12:.2f} TB/s"
          + (f"; tile loads {p[-1].exp().item() / 1e9:.0f} GB/s an SM" if TILE_LOADS else "")
          + (f"; tiles through L2 at {p[-1].exp().item() / 1e12:.2f} TB/s" if L2_TRAFFIC else ""))
    if args.json:  # the form triton_impl/arch_sm_90.json's "tma_model" takes
        value = {"classes": [[*c, *(p[N_GLOBAL + 4 * j + q].exp().item() for q in range(4))]
                             for j, c in enumerate(classes)],
                 "launch_s": g[0], "split_s": g[1], "split_bytes_per_s": g[2],
                 **({"tile_load_bytes_per_s": p[-1].exp().item()} if TILE_LOADS else {}),
                 **({"l2_bytes_per_s": p[-1].exp().item()} if L2_TRAFFIC else {}),
                 **({"w_reread_l2_bytes": L2_BYTES} if REREADS in ("half", "blocks-half", "two-half") else {})}
        with open(args.json, "w") as fh:
            json.dump({"sweeps": args.sweeps, "steps": args.steps, "folds": args.folds, "near_best": NEAR_BEST, "near_pick": NEAR_PICK,
                       "swap_rereads": REREADS, "wave_memory": WAVE_MEMORY,
                       "means": "classes: [BLOCK_M, BLOCK_N, BLOCK_K, warps, stages, SWAP_AB, FLOP/s an SM, "
                                "HBM bytes/s an SM, s an item, HBM bytes/s in all]",
                       "scores": lines, "value": value}, fh, indent=1)


if __name__ == "__main__":
    main()
