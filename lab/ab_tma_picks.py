"""Triton's fitted 16-bit TMA selection against an earlier one, on drawn shapes where their picks
differ: each pick checked against torch and timed beside torch, flushed in turns and back to back.

Two steps. On any machine, each version of the package writes its picks (``_fitted_config`` past 64
rows, 132 SMs) for a draw of shapes (``--picks OUT``; run it once in a checkout of the earlier
commit, once in this one). On the GPU, ``--compare A.json B.json [C.json ...]`` times the shapes
whose picks differ (each pick named by its file's stem), in both layouts (the default's plan must be the TMA kernel, K whole or split: cases it is not are left
out), and writes JSON.

Usage: python lab/ab_tma_picks.py --picks OUT.json [--seed 205] [--count 200] [--rows 65 16384]
       python lab/ab_tma_picks.py --compare A.json B.json [...] [--dtype bfloat16] [--rep-ms 30] [--json F]
"""

from __future__ import annotations

import argparse
import json
import math

import torch
import triton

from bench.workloads import draw_matmul


def picks(seed: int, count: int, rows) -> dict:
    """{"M N K": [config kwargs, warps, stages]} of the drawn shapes in ``rows`` (16-byte rows only)."""
    from triton_impl._matmul_configs import _fitted_config
    out = {}
    for M, N, K in draw_matmul(1000, seed):
        if rows[0] <= M <= rows[1] and N % 8 == 0 and K % 8 == 0 and len(out) < count:
            cfg = _fitted_config(M, N, K, 132)
            out[f"{M} {N} {K}"] = [cfg.kwargs, cfg.num_warps, cfg.num_stages]
    return out


def _gm(xs) -> float:
    return math.exp(sum(map(math.log, xs)) / len(xs)) if xs else float("nan")


def time_picks(named: dict, dtype, rep_ms: float) -> list:
    """Torch and each of ``named``'s picks ({name: picks}) on the shapes where they differ."""
    from bench.timing import time_interleaved, time_loop
    from lab.forced_plans import operands
    from triton_impl import _matmul as mm
    names = list(named)
    rows = []
    for key in named[names[0]]:
        chosen = [named[n].get(key) for n in names]
        if None in chosen or all(x == chosen[0] for x in chosen):
            continue
        M, N, K = map(int, key.split())
        for layout in ("wt", "row"):
            a, b = operands(M, N, K, layout, dtype)
            if not mm.describe(a, b).startswith(("tma_persistent", "split_k")):
                continue
            ref = torch.mm(a, b).float()
            c = torch.empty(M, N, dtype=dtype, device="cuda")
            fns = [lambda: torch.mm(a, b, out=c)]
            for kw, warps, stages in chosen:
                run = mm._make_run("split_k", triton.Config(kw, num_warps=warps, num_stages=stages), a, b, "tf32", c)
                c.fill_(float("nan"))
                run(a, b, c)
                err = ((c.float() - ref).abs().max() / ref.abs().max()).item()
                assert err < 2e-2, (key, layout, kw, err)
                fns.append(lambda run=run: run(a, b, c))
            ms = [t.median_ms for t in time_interleaved(fns, warmup_ms=10, rep_ms=rep_ms)]
            loop = [time_loop(fn, calls=50, reps=3) for fn in fns]
            rows.append({"shape": [M, N, K], "layout": layout, "picks": dict(zip(names, chosen)),
                         "ms": dict(zip(["torch", *names], ms)), "loop_ms": dict(zip(["torch", *names], loop))})
            print(f"{M}x{N}x{K} {layout}: torch {ms[0] * 1e3:.1f} us; "
                  + ", ".join(f"{n} {ms[0] / t:.2f}x ({loop[0] / lt:.2f}x)" for n, t, lt in zip(names, ms[1:], loop[1:])),
                  flush=True)
    return rows


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--picks")
    p.add_argument("--seed", type=int, default=205)
    p.add_argument("--count", type=int, default=200)
    p.add_argument("--rows", type=int, nargs=2, default=(65, 16384))
    p.add_argument("--compare", nargs="+")
    p.add_argument("--dtype", default="bfloat16")
    p.add_argument("--rep-ms", type=float, default=30.0)
    p.add_argument("--json")
    args = p.parse_args()
    if args.picks:
        out = {"seed": args.seed, "rows": args.rows, "picks": picks(args.seed, args.count, args.rows)}
        json.dump(out, open(args.picks, "w"))
        return 0
    named = {f.rsplit("/", 1)[-1].removesuffix(".json"): json.load(open(f)) for f in args.compare}
    first = next(iter(named.values()))
    rows = time_picks({n: d["picks"] for n, d in named.items()}, getattr(torch, args.dtype), args.rep_ms)
    for name in ("ms", "loop_ms"):
        print(f"{name}, {len(rows)} cases where picks differ, x torch geomean (worst): " + ", ".join(
            f"{n} {_gm([r[name]['torch'] / r[name][n] for r in rows]):.3f} "
            f"({min((r[name]['torch'] / r[name][n] for r in rows), default=0):.2f})" for n in named))
    if args.json:
        from bench.compare import run_metadata
        json.dump({"meta": {**run_metadata(), "seed": first["seed"], "rows": first["rows"], "dtype": args.dtype,
                            "picks": args.compare}, "rows": rows}, open(args.json, "w"), indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
