"""Triton GEMV ``phased`` (rows of A off 16 bytes) with fewer rows a program: its tile's rows forced
to 2V, 4V and 8V (16, 32, 64 rows for 16-bit; 8, 16, 32 for float32) beside the default,
``blocked_row`` and torch.mv, L2 flushed, in turns (and those three back to back); each forced
result checked. The shapes: rows off 16 bytes over a long K, where 64-row ``phased`` tiles make
under a wave (75-98 programs read 0.57-0.59x torch.mv in the forced draws; from about 148, 0.98-1.07x).

Usage (GPU): PYTHONPATH=. python lab/sweep_gemv_phased_rows.py [--json OUT]
"""

from __future__ import annotations

import argparse
from kernel_common import cdiv
from sweep_gemv_few_rows import sweep  # (lab/ is the script's own directory on the path)
from triton_impl import _gemv as g
from triton_impl._launch import TritonLaunch

# (M, K, dtype): the forced draws' rows-off-16-bytes shapes of 900-23000 rows, and a few beside them
SHAPES = [(4819, 5465, "float16"), (5968, 17308, "float16"), (6253, 11733, "float16"), (6293, 31297, "float16"),
          (938, 5579, "bfloat16"), (2500, 8191, "bfloat16"), (9492, 4532, "bfloat16"), (22630, 5382, "bfloat16"),
          (3001, 4097, "float32"), (7001, 14335, "float32")]


def forced(a, x, rows):
    """run(out) of ``_gemv_phased_kernel`` with ``rows`` rows a program (the plan's window)."""
    M, K = a.shape
    _, block_k, warps = g._phased_tiles(M, K, a.element_size())
    v = 16 // a.element_size()
    launch = TritonLaunch(g._gemv_phased_kernel, (cdiv(M, rows),), dict(BLOCK_M=rows, BLOCK_K=block_k, V=v),
                          dict(num_warps=warps))
    return lambda out: launch(a, x, out, M, K, a.stride(0), 1, (M - 1) * a.stride(0) + K)


def forced_rows(a, x):
    """phased with 2V, 4V and 8V rows a program."""
    v = 16 // a.element_size()
    return [(f"phased {rows} rows ({cdiv(a.shape[0], rows)} programs)", forced(a, x, rows)) for rows in (2 * v, 4 * v, 8 * v)]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json")
    args = ap.parse_args()
    sweep(SHAPES, ["blocked_row"], forced_rows, args.json)


if __name__ == "__main__":
    main()
