"""Triton GEMV ``blocked_row``'s tiles (BLOCK_M, BLOCK_K, num_warps) on large row-major weights
(LM heads, MLP weights: one token of decode), beside the rule's tiles, torch.mv and the TMA matmul
on one row (``matmul(x[None], W.t())`` with the variant its rules pick for a call with a bias).
L2 flushed, in turns, each result checked; prints each shape's times and the configs' share of
torch.mv's speed, and the geomean of each config over the shapes.

Usage (GPU): PYTHONPATH=. python lab/sweep_gemv_rows.py [--dtype bfloat16] [--json F]
"""

from __future__ import annotations

import argparse
import itertools
import json
import math

import torch

import triton_impl
from bench.specs import GemvSpec
from bench.timing import time_interleaved
from triton_impl import _gemv as g

SHAPES = ((151936, 896), (151936, 1536), (128256, 4096), (256000, 2304), (73728, 4608), (14336, 4096),
          (8960, 1536), (5120, 5120))
CONFIGS = [c for c in itertools.product((4, 8, 16, 32), (256, 512, 1024, 2048), (4, 8))
           if 4096 <= c[0] * c[1] <= 16384]


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--dtype", default="bfloat16")
    p.add_argument("--json")
    p.add_argument("--rep-ms", type=float, default=10)
    args = p.parse_args()
    dtype = getattr(torch, args.dtype)
    tiles = g.TILING["blocked_row"]
    out = []
    for M, K in SHAPES:
        a = torch.randn(M, K, device="cuda").to(dtype)
        x = torch.randn(K, device="cuda").to(dtype)
        ref = GemvSpec.reference((a, x))
        runs = {"torch.mv": lambda: torch.mv(a, x)}
        rules = triton_impl.pick("matmul", x[None], a.t(), biased=True)
        runs["tma"] = lambda: triton_impl.matmul(x[None], a.t(), variant=rules)
        rule_tiles = tiles[0](M, K, a.element_size())
        y = torch.empty(M, dtype=dtype, device="cuda")
        for name, cfg in [("rule", rule_tiles)] + [("{}x{}/w{}".format(*c), c) for c in CONFIGS]:
            g.TILING["blocked_row"] = (lambda M_, K_, i_, c=cfg: c, None)
            g._PLANS.clear()
            cmp = GemvSpec.compare(triton_impl.gemv(a, x, variant="blocked_row"), ref, (a, x))
            assert cmp.ok, (cfg, cmp.detail)
            runs[name] = lambda run=g._PLANS.get((a, x), "blocked_row", None).run: run(a, x, y)
        g.TILING["blocked_row"] = tiles
        g._PLANS.clear()
        t = dict(zip(runs, (r.median_ms for r in time_interleaved(list(runs.values()), rep_ms=args.rep_ms))))
        x_mv = {k: t["torch.mv"] / v for k, v in t.items()}
        out.append({"shape": [M, K], "rule_tiles": list(rule_tiles), "tma": rules, "us": {k: v * 1e3 for k, v in t.items()}})
        best = sorted(x_mv.items(), key=lambda kv: -kv[1])
        print(f"{M}x{K} torch.mv {t['torch.mv'] * 1e3:.1f} us; rule {rule_tiles} {x_mv['rule']:.3f}, tma {x_mv['tma']:.3f}; "
              "best " + " ".join(f"{k}:{v:.3f}" for k, v in best[:6]), flush=True)
    names = [k for k in out[0]["us"] if k != "torch.mv"]
    geo = {k: math.exp(sum(math.log(c["us"]["torch.mv"] / c["us"][k]) for c in out) / len(out)) for k in names}
    print("geomean x torch.mv: " + " ".join(f"{k}:{v:.3f}" for k, v in sorted(geo.items(), key=lambda kv: -kv[1])))
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"device": torch.cuda.get_device_name(), "dtype": args.dtype, "cases": out}, fh, indent=1)


if __name__ == "__main__":
    main()
