"""Triton GEMV ``phased`` (rows off 16 bytes): its tile (BLOCK_M rows x BLOCK_K window) and warps on
short-K shapes, x the same-size copy's bandwidth (read + write), L2 flushed, in turns with torch.mv,
the copy and the shipped tiles; every result checked. The shipped 16-bit 64 x 128 tile on 4 warps
holds 64 float32 products a thread and spills (255 registers; ``python -m bench resources``).

Usage (GPU): PYTHONPATH=. python lab/sweep_gemv_phased_tiles.py [--long] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import math

import torch

from bench.specs import GemvSpec
from bench.timing import time_interleaved
from triton_impl import _gemv as tg

SHAPES = {torch.bfloat16: ((249631, 71), (116207, 34), (103231, 122), (17705, 937), (89183, 366), (98278, 329),
                           (119666, 370), (245813, 207), (246664, 140), (17108, 181), (23373, 221), (22589, 99),
                           (43606, 100), (54728, 765), (135669, 615), (61648, 695), (186602, 281), (33333, 45)),
          torch.float32: ((249631, 71), (116207, 34), (103231, 122), (89183, 366), (119666, 370), (245813, 207),
                          (17108, 181), (54728, 765), (135669, 615), (61648, 695), (33333, 45), (186602, 281))}
# --long: rows off 16 bytes past K = 1024, where Triton read 0.72-0.81x torch.mv on the draws of seeds 235
# and 236 and CUDA's phased twin 0.99-1.51x (their stride K + 1, as the harness's odd K)
LONG = {torch.bfloat16: ((13552, 2263), (9791, 51843), (2328, 113613), (17652, 3622), (49988, 19804), (1094, 6932),
                         (3272, 21985)),
        torch.float32: ((1625, 19183), (2077, 28690), (33986, 1429), (5000, 4097), (700, 50001))}
# (BLOCK_M, BLOCK_K, warps); BLOCK_K 128 where K allows, as the shipped rule caps it
CONFIGS = ((64, 128, 8), (32, 128, 8), (32, 128, 4), (64, 64, 4), (32, 64, 4), (16, 128, 4), (64, 128, 16),
           (128, 64, 8), (128, 128, 16))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--json")
    ap.add_argument("--rep-ms", type=float, default=20)
    ap.add_argument("--long", action="store_true", help="the LONG shapes instead")
    args = ap.parse_args()
    print(torch.cuda.get_device_name(), flush=True)
    shipped = tg._phased_tiles
    out = {"device": torch.cuda.get_device_name(), "cases": []}
    for dtype, shapes in (LONG if args.long else SHAPES).items():
        for M, K in shapes:
            a = torch.randn(M, K + 1, device="cuda").to(dtype)[:, :K]  # rows off 16 bytes (K + 1 apart)
            if a.stride(0) % (16 // a.element_size()) == 0:
                a = torch.randn(M, K + 2, device="cuda").to(dtype)[:, :K]
            x = torch.randn(K, device="cuda").to(dtype)
            ref = GemvSpec.reference((a, x))
            src = torch.randn(M * K, device="cuda").to(dtype)
            dst = torch.empty_like(src)
            names, fns = ["copy", "torch"], [lambda: dst.copy_(src), lambda: torch.mv(a, x)]
            v = 16 // a.element_size()
            configs = [shipped(M, K, a.element_size())] + [
                (bm, min(bk, 2 ** math.ceil(math.log2(K + v - 1))), w) for bm, bk, w in CONFIGS]
            for cfg in configs:
                if f"{cfg[0]}x{cfg[1]}w{cfg[2]}" in names:
                    continue
                tg.TILING["phased"] = (lambda M, K, itemsize, cfg=cfg: cfg, None)
                try:
                    plan = tg._plan((a, x), "phased", None)
                finally:
                    tg.TILING["phased"] = (shipped, None)
                y = torch.full((M,), float("nan"), device="cuda", dtype=dtype)
                plan.run(a, x, y)
                cmp = GemvSpec.compare(y, ref, (a, x))
                assert cmp.ok, (M, K, cfg, cmp)
                names.append(f"{cfg[0]}x{cfg[1]}w{cfg[2]}")
                fns.append(lambda plan=plan, y=y: plan.run(a, x, y))
            times = [t.median_ms for t in time_interleaved(fns, rep_ms=args.rep_ms)]
            copy_gbs = 2 * M * K * a.element_size() / (times[0] * 1e-3) / 1e9
            share = {n: M * K * a.element_size() / (t * 1e-3) / 1e9 / copy_gbs for n, t in zip(names, times)}
            best = max(names[2:], key=share.get)
            print(f"{str(dtype)[6:]:8} {M:>6}x{K:<4} torch {share['torch']:.2f} shipped {names[2]} {share[names[2]]:.2f} "
                  f"best {best} {share[best]:.2f} | " + " ".join(f"{n}:{share[n]:.2f}" for n in names[3:]), flush=True)
            out["cases"].append({"dtype": str(dtype)[6:], "shape": [M, K], "us": dict(zip(names, (t * 1e3 for t in times)))})
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
