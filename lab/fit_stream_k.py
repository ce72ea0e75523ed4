"""How well a stream-K time in the fitted TMA model predicts the stream-K sweeps
(``lab/sweep_tma_configs.py --stream-k``): each timed stream-K config's ratio to the shape's
default, against the ratio of its modelled time to the default's (``_fitted_seconds``). The
stream-K time: the whole waves as the fitted model has them, a program's share of the shared
tiles' k-slices, a fixed cost and the hand-over's float32 bytes at a rate, both grid-fitted on
one sweep and tested on the other (docs/decisions/037-triton-stream-k.md).

Usage: python lab/fit_stream_k.py SWEEP_A.json SWEEP_B.json (each sweep's summary first, then the fits)
"""

from __future__ import annotations

import json
import math
import sys

from kernel_common import cdiv
from triton_impl import _matmul_configs as mc
from triton_impl._matmul_tma import stream_k_plan

SMS = 132
GRID = [(s * 1e-6, r) for s in (0, 2, 4, 6, 8, 10, 12) for r in (25e9, 50e9, 100e9, 200e9, 400e9, 1e12)]


def rows(path: str) -> list:
    """(M, N, K, config, class, seconds, the default's seconds) of each timed stream-K config."""
    out = []
    for r in json.load(open(path))["rows"]:
        M, N, K = r["shape"]
        for c in r["configs"]:
            key = (c["bm"], c["bn"], c["bk"], c["warps"], c["stages"], c["swap"]) if c.get("ms") else None
            if key in mc._FIT_CLASSES:
                cfg = mc._tma_config_of(*key, c["sub"])
                out.append((M, N, K, cfg, key, c["ms"] * 1e-3, r["default_ms"] * 1e-3))
    return out


def stream_k_seconds(M, N, K, cfg, key, fixed_s, hand_bytes_per_s) -> float:
    bm, bn, bk = key[:3]
    rate, load, item, peak = mc._FIT_CLASSES[key]
    tiles, k_tiles = mc._tiles(cfg, M, N), cdiv(K, bk)
    programs, shared = stream_k_plan(tiles, k_tiles, SMS)
    share, slice_s = cdiv(shared * k_tiles, programs), 2 * bm * bn * bk / rate
    parts = cdiv(k_tiles, share) + 1
    work = (tiles - shared) // programs * (k_tiles * slice_s + item) + share * slice_s + \
        (cdiv(share, k_tiles) + 1) * item + fixed_s + parts * bm * bn * 4 / hand_bytes_per_s
    memory = (M * K + mc._w_reads(M, N, K, bm) * N * K + M * N) * 2 / min(peak, programs * load)
    return mc._FIT["launch_s"] + max(work, memory)


def error(data, fixed_s, hand) -> tuple[float, float]:
    """RMS and mean of log(modelled ratio / measured ratio) to the default."""
    e = []
    for M, N, K, cfg, key, t, default in data:
        pick = mc._fitted_config(M, N, K, SMS)
        e.append(math.log(stream_k_seconds(M, N, K, cfg, key, fixed_s, hand) / mc._fitted_seconds(pick, M, N, K, SMS)
                          / (t / default)))
    return math.sqrt(sum(x * x for x in e) / len(e)), sum(e) / len(e)


def summary(path: str) -> str:
    """Geomean (range) over a sweep's shapes of the default's time over stream-K's on the default's
    own tile, and over the best stream-K tile's."""
    same, best = [], []
    for r in json.load(open(path))["rows"]:
        M, N, K = r["shape"]
        pick = mc._fitted_config(M, N, K, SMS)
        kw = pick.kwargs
        key = (kw["BLOCK_M"], kw["BLOCK_N"], kw["BLOCK_K"], pick.num_warps, pick.num_stages, kw["SWAP_AB"])
        timed = [c for c in r["configs"] if c.get("ms")]
        same += [r["default_ms"] / c["ms"] for c in timed
                 if (c["bm"], c["bn"], c["bk"], c["warps"], c["stages"], c["swap"]) == key]
        best.append(r["default_ms"] / min(c["ms"] for c in timed))

    def gm(v):
        return math.exp(sum(map(math.log, v)) / len(v))
    return (f"{path}: {len(best)} shapes; on the default's tile {gm(same):.3f} ({min(same):.3f}-{max(same):.3f}, "
            f"{len(same)} shapes), the best tile {gm(best):.3f} x the default")


def main(argv) -> int:
    for path in argv:
        print(summary(path))
    a, b = rows(argv[0]), rows(argv[1])
    for name, train, test in (("fit A, test B", a, b), ("fit B, test A", b, a), ("fit both", a + b, a + b)):
        best = min(GRID, key=lambda g: error(train, *g)[0])
        print(f"{name}: fixed {best[0] * 1e6:.0f} us, hand-over {best[1] / 1e9:.0f} GB/s; "
              "train RMS %.3f (mean %+.3f), test RMS %.3f (mean %+.3f)" % (*error(train, *best), *error(test, *best)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
