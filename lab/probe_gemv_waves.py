"""GEMV over few row blocks and a long K: does cutting K into P pieces (one launch, the pieces summed
by each row group's last program) beat the default where its blocks make a fraction of a wave over
the SMs? Per shape: CUDA's and Triton's defaults, each backend's split variant (CUDA ``split_k``,
Triton ``split_k_last``) with P forced, torch.mv and a same-size copy, L2 flushed, in turns; every
result checked against the float64 reference. Prints each backend's best P beside the blocks it
launches, and the times as a share of the copy's bandwidth (read + write); --json writes them all.

Usage (GPU): PYTHONPATH=. python lab/probe_gemv_waves.py [--dtype bfloat16] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import math
import random

import torch

import cuda_ref
import triton_impl
from bench.specs import GemvSpec
from bench.timing import time_interleaved
from cuda_ref import _gemv as cg
from kernel_common import cdiv
from triton_impl import _gemv as tg

SHAPES = ((4608, 36864), (3272, 21985), (5120, 13824), (5230, 76973), (8192, 4608), (8192, 8192), (8192, 28672),
          (16384, 3072), (18432, 2304), (6144, 6144), (7168, 5120), (11008, 4096), (14336, 3584), (3584, 14336),
          (289, 31292), (1024, 8192), (2304, 9216), (2759, 6242), (1388, 2434), (576, 7168), (4096, 14336),
          (1000, 20000), (700, 50000), (2000, 12000), (4800, 1600), (4608, 3584), (1024, 2304), (27648, 5120))
PIECES = (1, 2, 3, 4, 6, 8, 12, 16, 24, 32)


def forced(module, pieces: int, cuda: bool):
    """A ``split`` for ``module`` that cuts K into ``pieces`` (rounded to its granule)."""
    def split(*args):
        if cuda:
            M, K, itemsize, _ = args
            granule = 16 // itemsize
        else:
            variant, M, K, itemsize, *_ = args
            granule = tg.TILING[variant][0](M, K, itemsize)[1]
        piece = cdiv(cdiv(K, pieces), granule) * granule
        return piece, cdiv(K, piece)
    return split


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--dtype", default="bfloat16")
    ap.add_argument("--json")
    ap.add_argument("--rep-ms", type=float, default=30)
    ap.add_argument("--draw", type=int, metavar="SEED", help="instead of SHAPES, 40 drawn: M log-uniform 300-20000, "
                    "K 4096-65536 (a multiple of 8), at most 1 GB")
    ap.add_argument("--pieces", type=int, default=max(PIECES), help="the most pieces tried")
    args = ap.parse_args()
    dtype = getattr(torch, args.dtype)
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    print(torch.cuda.get_device_name(), sms, "SMs", args.dtype, flush=True)
    out = {"device": torch.cuda.get_device_name(), "dtype": args.dtype, "cases": []}
    shapes = SHAPES
    if args.draw is not None:
        gen = random.Random(args.draw)
        shapes = []
        while len(shapes) < 40:
            M = round(math.exp(gen.uniform(math.log(300), math.log(20000))))
            K = round(math.exp(gen.uniform(math.log(4096), math.log(65536)))) // 8 * 8
            if M * K * 2 <= 1 << 30:
                shapes.append((M, K))
    for M, K in shapes:
        a = torch.randn(M, K, device="cuda").to(dtype)
        x = torch.randn(K, device="cuda").to(dtype)
        ref = GemvSpec.reference((a, x))
        src = a.flatten().clone()
        dst = torch.empty_like(src)
        names, fns = ["copy", "torch", "cuda", "triton"], [lambda: dst.copy_(src), lambda: torch.mv(a, x),
                                                           lambda: cuda_ref.gemv(a, x), lambda: triton_impl.gemv(a, x)]
        for p in PIECES:
            if cdiv(K, p) < 512 or p > args.pieces:
                break
            for tag, module, variant, cuda in (("cuda_split", cg, "split_k", True),
                                               ("triton_last", tg, "split_k_last", False)):
                saved, module.split = module.split, forced(module, p, cuda)
                try:
                    pieces = module.split(*((M, K, a.element_size(), sms) if cuda else
                                            (variant, M, K, a.element_size(), sms)))[1]
                    plan = module._plan((a, x), variant, None)  # (made under the forced split)
                finally:
                    module.split = saved
                if f"{tag}{pieces}" in names:
                    continue
                y = torch.full((M,), float("nan"), device="cuda", dtype=dtype)
                plan.run(a, x, y)
                cmp = GemvSpec.compare(y, ref, (a, x))
                assert cmp.ok, (M, K, tag, p, cmp)
                names.append(f"{tag}{pieces}")
                fns.append(lambda plan=plan, y=y: plan.run(a, x, y))
        times = [t.median_ms for t in time_interleaved(fns, rep_ms=args.rep_ms)]
        copy_gbs = 2 * a.numel() * a.element_size() / (times[0] * 1e-3) / 1e9
        share = {n: a.numel() * a.element_size() / (t * 1e-3) / 1e9 / copy_gbs for n, t in zip(names, times)}
        best = {b: max((n for n in names if n.startswith(b + "_")), key=share.get) for b in ("cuda", "triton")}
        print(f"{M:>6}x{K:<6} copy {copy_gbs:5.0f} GB/s  torch {share['torch']:.2f}  cuda {share['cuda']:.2f} "
              f"({cg.pick_variant(a, x)}) best {best['cuda']} {share[best['cuda']]:.2f}  triton {share['triton']:.2f} "
              f"({tg.pick_variant(a, x)}) best {best['triton']} {share[best['triton']]:.2f}  | "
              + " ".join(f"{n}:{share[n]:.2f}" for n in names[4:]), flush=True)
        out["cases"].append({"shape": [M, K], "us": dict(zip(names, (t * 1e3 for t in times))),
                             "default": {"cuda": cg.pick_variant(a, x), "triton": tg.pick_variant(a, x)}})
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
