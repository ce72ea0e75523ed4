"""CUDA GEMV ``split_k``'s rows a block (``ROWS["split_k"]``) and blocks per SM
(``SPLIT_BLOCKS_PER_SM``, which sets how many pieces K is cut into) on short-and-wide matrices,
x torch.mv, L2 flushed; each result checked.

Usage (GPU): python lab/sweep_gemv_split.py            # rows x blocks per SM
             python lab/sweep_gemv_split.py --splits   # the launcher's rows, K cut into 1..3x the
                                                         # default's pieces, with blocks per SM
"""

from __future__ import annotations

import sys

import torch

import cuda_ref
from bench.specs import GemvSpec
from bench.timing import time_gpu
from cuda_ref import _gemv as g
from kernel_common import cdiv

SHAPES = ((64, 2097152), (128, 1048576), (64, 1048576), (16, 262144))
BLOCKS_PER_SM = (4, 8, 16)
ROWS = (1, 2, 4, 8)


def main() -> None:
    # the rows swept beyond the launcher's own instance: compiled with the file on its first use
    g.NAME_EXPRESSIONS = tuple(sorted(set(g.NAME_EXPRESSIONS) | {
        f"gemv_split_k<{ctype}, {r}>" for ctype in ("float", "bf16_t") for r in ROWS}))
    default = g.SPLIT_BLOCKS_PER_SM, g.ROWS["split_k"]
    print(torch.cuda.get_device_name())
    for dtype in (torch.float32, torch.bfloat16):
        for M, K in SHAPES:
            a = torch.randn(M, K, device="cuda").to(dtype)
            x = torch.randn(K, device="cuda").to(dtype)
            ref = GemvSpec.reference((a, x))
            t_ref = time_gpu(lambda: torch.mv(a, x)).median_ms
            row = []
            for rows in ROWS:
                for bps in BLOCKS_PER_SM:
                    g.SPLIT_BLOCKS_PER_SM, g.ROWS["split_k"] = bps, rows
                    g._PLANS.clear()
                    cmp = GemvSpec.compare(cuda_ref.gemv(a, x, variant="split_k"), ref, (a, x))
                    assert cmp.ok, (bps, cmp)
                    t = time_gpu(lambda: cuda_ref.gemv(a, x, variant="split_k")).median_ms
                    row.append(f"{rows}r/{bps}:{t_ref / t:.3f}")
            print(f"{str(dtype):15} {M}x{K}: torch.mv {t_ref * 1e3:.1f} us; rows/blocks per SM:x torch " + " ".join(row),
                  flush=True)
    g.SPLIT_BLOCKS_PER_SM, g.ROWS["split_k"] = default
    g._PLANS.clear()


def sweep_splits() -> None:
    """x torch.mv for each number of pieces, beside the blocks it launches per SM: which counts lose
    to a partial last round of blocks on some SMs."""
    sm = torch.cuda.get_device_properties(0).multi_processor_count
    default_split = g.split
    rows = g.ROWS["split_k"]
    print(torch.cuda.get_device_name(), f"{sm} SMs, rows a block {rows}")
    for dtype in (torch.float32, torch.bfloat16):
        vec = 16 // dtype.itemsize
        for M, K in SHAPES:
            a = torch.randn(M, K, device="cuda").to(dtype)
            x = torch.randn(K, device="cuda").to(dtype)
            ref = GemvSpec.reference((a, x))
            t_ref = time_gpu(lambda: torch.mv(a, x)).median_ms
            s0 = default_split(M, K, dtype.itemsize, sm)[1]
            groups = cdiv(M, rows)
            row = []
            for s in range(max(1, s0 // 2), min(3 * s0, 96) + 1):
                piece = cdiv(cdiv(K, s), vec) * vec  # split's pieces, K cut s ways
                g.split = lambda M_, K_, i_, sm_, piece=piece: (piece, cdiv(K_, piece))
                g._PLANS.clear()
                cmp = GemvSpec.compare(cuda_ref.gemv(a, x, variant="split_k"), ref, (a, x))
                assert cmp.ok, (s, cmp)
                t = time_gpu(lambda: cuda_ref.gemv(a, x, variant="split_k")).median_ms
                splits = cdiv(K, piece)
                row.append(f"{splits}:{groups * splits / sm:.2f}:{t_ref / t:.3f}")
            g.split = default_split
            print(f"{str(dtype):15} {M}x{K}: torch.mv {t_ref * 1e3:.1f} us; default splits {s0}; "
                  "splits:blocks per SM:x torch " + " ".join(row), flush=True)
    g._PLANS.clear()


if __name__ == "__main__":
    sweep_splits() if "--splits" in sys.argv else main()
