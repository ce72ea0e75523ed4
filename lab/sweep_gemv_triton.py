"""Triton GEMV ``blocked_row``'s (BLOCK_M, BLOCK_K, num_warps) on the decode set's matrices that
stood under 0.90 of a device copy, beside what a plain read of the same matrix reaches
(``torch.sum``: the bytes gemv must move, with no x and no products) and torch.mv; share of copy,
L2 flushed, best of the rounds, each result checked. ``_config``'s rule quotes what this printed.

Usage (GPU): PYTHONPATH=. python lab/sweep_gemv_triton.py [--rounds N]
"""

from __future__ import annotations

import itertools
import sys

import torch

import triton_impl
from bench.ceilings import copy_bandwidth_gbs
from bench.specs import GemvSpec
from bench.timing import time_gpu
from triton_impl import _gemv as g

CASES = ((torch.float32, (4096, 4096)), (torch.float32, (6144, 4096)), (torch.bfloat16, (4096, 14336)),
         (torch.bfloat16, (8192, 8192)))
CONFIGS = [c for c in itertools.product((4, 8, 16, 32), (256, 512, 1024, 2048), (4, 8))
           if 2048 <= c[0] * c[1] <= 16384]


def main() -> None:
    rounds = int(sys.argv[sys.argv.index("--rounds") + 1]) if "--rounds" in sys.argv else 2
    copy = copy_bandwidth_gbs()
    rule = g._config
    print(torch.cuda.get_device_name(), f"copy {copy:.0f} GB/s")
    for dtype, (M, K) in CASES:
        a = torch.randn(M, K, device="cuda").to(dtype)
        x = torch.randn(K, device="cuda").to(dtype)
        ref = GemvSpec.reference((a, x))
        nbytes = (M * K + K + M) * a.element_size()
        res: dict[str, list[float]] = {}
        for _ in range(rounds):
            res.setdefault("sum", []).append(time_gpu(lambda: a.sum()).median_ms)
            res.setdefault("torch.mv", []).append(time_gpu(lambda: torch.mv(a, x)).median_ms)
            for bm, bk, nw in CONFIGS:
                g._config = lambda v, M_, K_, i_, c=(bm, bk, nw): c
                g._PLANS.clear()
                cmp = GemvSpec.compare(triton_impl.gemv(a, x, variant="blocked_row"), ref, (a, x))
                assert cmp.ok, (bm, bk, nw, cmp)
                t = time_gpu(lambda: triton_impl.gemv(a, x, variant="blocked_row")).median_ms
                res.setdefault(f"{bm}x{bk}/w{nw}", []).append(t)
            g._config = rule
            g._PLANS.clear()
            res.setdefault("rule", []).append(time_gpu(lambda: triton_impl.gemv(a, x, variant="blocked_row")).median_ms)
        share = {k: nbytes / (min(v) * 1e-3) / 1e9 / copy for k, v in res.items()}
        best = sorted(share.items(), key=lambda kv: -kv[1])
        print(f"{str(dtype):15} {M}x{K} ({nbytes / 1e6:.0f} MB): rule {share['rule']:.3f}, sum {share['sum']:.3f}, "
              f"torch.mv {share['torch.mv']:.3f}; best: " + " ".join(f"{k}:{v:.3f}" for k, v in best[:8]), flush=True)


if __name__ == "__main__":
    main()
