"""The fitted TMA model's time (``_matmul_configs._fitted_config``'s pick and its ``_Candidate``
seconds) against what a draw measured for Triton's default past 64 rows, by config class, waves
(work items over 132 SMs) and K band: where the model errs, without a GPU. The pick is recomputed
with this tree's model, so a draw of another tree compares only where the pick is the same.

Usage (CPU): python lab/model_vs_draw.py DRAW.json [DRAW.json ...] [--worst 12]
"""

from __future__ import annotations

import argparse
import collections
import json
import math

from triton_impl import _matmul_configs as mc
from bench.results_io import open_text

SMS = 132


def _gm(values) -> float:
    return math.exp(sum(map(math.log, values)) / len(values))


def _candidate(cfg):
    kw = cfg.kwargs
    for c in mc._CANDIDATES:
        ck = c.cfg.kwargs
        if ((ck["BLOCK_M"], ck["BLOCK_N"], ck["BLOCK_K"], c.cfg.num_warps, c.cfg.num_stages, c.kw["SWAP_AB"], c.split)
                == (kw["BLOCK_M"], kw["BLOCK_N"], kw["BLOCK_K"], cfg.num_warps, cfg.num_stages, kw["SWAP_AB"], kw["SPLIT_K"])):
            return c
    return None


def rows_of(path: str) -> list:
    out = []
    for r in json.load(open_text(path))["records"]:
        if (r["backend"] != "triton" or not r.get("default") or not r["ok"] or r["variant"] not in ("tma_persistent", "split_k")
                or r["dtype"] not in ("bfloat16", "float16") or r["shape"][0] <= 64):
            continue
        M, N, K = r["shape"]
        cfg = mc._fitted_config(M, N, K, SMS)
        c = _candidate(cfg)
        if c is None:
            continue
        kw = cfg.kwargs
        items = -(-M // kw["BLOCK_M"]) * -(-N // kw["BLOCK_N"]) * kw["SPLIT_K"]
        out.append({"ratio": r["median_ms"] * 1e-3 / c.seconds(M, N, K, SMS)[0], "shape": (M, N, K), "layout": r["layout"],
                    "tile": (kw["BLOCK_M"], kw["BLOCK_N"], "swap" if kw["SWAP_AB"] else "", kw["SPLIT_K"]),
                    "waves": items / SMS, "x_torch": r["x_vs_ref"]})
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("draws", nargs="+")
    p.add_argument("--worst", type=int, default=12)
    args = p.parse_args(argv)
    rows = [r for path in args.draws for r in rows_of(path)]
    print(f"{len(rows)} cases: measured / modelled, geomean {_gm([r['ratio'] for r in rows]):.3f}")
    groups = collections.defaultdict(list)
    for r in rows:
        waves = "under 1 wave" if r["waves"] < 1 else "1-2 waves" if r["waves"] < 2 else "2+ waves"
        K = r["shape"][2]
        band = "K < 4096" if K < 4096 else "K < 12288" if K < 12288 else "K >= 12288"
        groups[(r["tile"][:3], waves, band)].append(r["ratio"])
    print("by tile (rows, columns, swap-AB), waves and K: cases, geomean, max")
    for key, v in sorted(groups.items(), key=lambda kv: -_gm(kv[1])):
        print(f"  {key}: {len(v)}, {_gm(v):.2f}, {max(v):.2f}")
    print(f"the {args.worst} worst: measured / modelled, shape, layout, tile (split), waves, x torch")
    for r in sorted(rows, key=lambda r: -r["ratio"])[:args.worst]:
        print(f"  {r['ratio']:.2f} {r['shape']} {r['layout']} {r['tile']} {r['waves']:.2f} {r['x_torch']:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
