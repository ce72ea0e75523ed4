"""The few-rows family (decode: a few rows of a against a weight W = b^T): ``few_rows`` on CUDA
cores (kernels/matmul_few_rows.cu) and ``few_rows_mma`` on tensor cores (kernels/matmul_tc.cu), their
tiles, the range ``variant=None`` gives them, and their instances. ``cuda_ref/_matmul.py`` picks the
variant and plans the launch.
"""

from __future__ import annotations

import torch

from cuda_ref import loader
from cuda_ref._arch import SM_90
from cuda_ref._matmul_wgmma import TC_DTYPES
from kernel_common import cdiv

# few_rows (matmul_few_rows.cu, CUDA cores): a warp per NC columns of c, MR rows of a at a time, b read
# K-major. (largest M, MR, NC), from a sweep on an H200, bf16, x torch (docs/decisions/016-cuda-few-rows.md):
# M = 2 at 2 x 2 0.90-1.04x where 1 x 1 ran 0.50-0.84x; M = 3-4 at 4 x 2 0.55-0.92x. At M = 8 the
# best (8 x 4) ran 0.46-0.65x, wgmma 0.25-0.8x: variant=None stops at FEW_ROWS_MAX_M (arch_sm_90.json).
FEW_ROWS_FILE, FEW_ROWS_KERNEL = "matmul_few_rows.cu", "matmul_few_rows<{T}, {MR}, {NC}>"
FEW_ROWS_TILES = ((1, 1, 1), (2, 2, 2), (4, 4, 2))  # a larger M takes the last, 4 rows a pass
FEW_ROWS_MAX_M = SM_90["few_rows_max_m"]
FEW_ROWS_DTYPES = (torch.float32, *TC_DTYPES)  # float32: 4 elements a 16-byte load, exact FMA sums
FEW_ROWS_NAME_EXPRESSIONS = tuple(FEW_ROWS_KERNEL.format(T=loader.CTYPE[d], MR=mr, NC=nc)
                                  for d in FEW_ROWS_DTYPES for _, mr, nc in FEW_ROWS_TILES)
# few_rows_mma (matmul_tc.cu, mma.sync): c^T = W a^T, a block of FEW_ROWS_MMA_THREADS per BW rows of W
# and MP = 16, 32 or 64 rows of a (``few_rows_mma_rows``; more rows take more blocks), slices of SK k in
# a ring of 96 KiB. (MP: (BW, SK)), from a sweep on an H200, bf16, 16 and 32 rows, x torch (docs/decisions/016-cuda-few-rows.md): 32 x 256 won on 6 of 7 shapes (16 x 4096 x 4096: 1.17x; 32 x 128: 0.99x; 64 x 128:
# 0.74x); the 64-row tile is there for M past 32 only, which variant=None does not give it (W's share of
# the bytes falls as a's rows grow, read once a block). A row-major b is read where it lies (its slices
# as k rows of BW columns, transposed by ldmatrix): 1.5-2x the K-major copy a call it took before. Its
# runs are BW columns of b a k row, so where 64-column blocks still fill every SM (N >= 64 x SMs) they
# take 64 (FEW_ROWS_MMA_ROW_TILES), x torch at 1-16 rows: N = 11008 0.83-0.85x against 0.66-0.68x, 14336
# 0.98-1.02x against 0.78-0.82x, 28672 0.97-0.99x against 0.78-0.80x; N = 4096 lost (0.55x against
# 0.72x: 64 blocks). variant=None gives it b = W.t() only: on a row-major b at 1-16 rows it led wgmma_ws
# by 4-20 points at K = 4096 (N = 4096-14336) but trailed by 32 at 4096 x 14336 and by 1-6 at 28672 x 8192,
# too few weights to draw a rule from (docs/decisions/016-cuda-few-rows.md).
FEW_ROWS_MMA_KERNEL = "matmul_few_rows_mma<{T}, {KMAJOR}, {MP}, {BW}, {SK}, {RING}>"
FEW_ROWS_MMA_TILES = {16: (32, 256), 32: (32, 256), 64: (32, 128)}
FEW_ROWS_MMA_ROW_TILES = {16: (64, 128), 32: (64, 128)}  # a row-major b's, N >= 64 x SMs (up to 32 rows)
FEW_ROWS_MMA_RING_KB = 96  # two blocks an SM
FEW_ROWS_MMA_THREADS = 128  # the kernel's FR_THREADS
# variant=None's range: 5-32 rows of a, W at most FEW_ROWS_MMA_MAX_N rows (wgmma_ws's 256-column tiles
# filling at most half of a 132-SM GPU), and blocks (two an SM) in one wave or a last wave at least half
# full. 16 rows, x torch, few_rows_mma against wgmma_ws: N = 4096-14336 0.97-1.13x against 0.60-0.95x
# (docs/decisions/016-cuda-few-rows.md: the models set with and without the wider tiles); N = 28672, 0.93x against 0.97x;
# N = 10240 (320 blocks: 264, then 56 alone), 0.83x against 0.98x. (arch_sm_90.json)
FEW_ROWS_MMA_MAX_M, FEW_ROWS_MMA_MAX_N = SM_90["few_rows_mma_max_m"], SM_90["few_rows_mma_max_n"]


def few_rows_mma_rows(M: int) -> int:
    """few_rows_mma's tile of a's rows for an M-row product: the fewest that hold M, else 64."""
    return next((r for r in FEW_ROWS_MMA_TILES if M <= r), 64)


def few_rows_mma_fits(M: int, N: int, sms: int) -> bool:
    """Does variant=None give an M-row product over N rows of W to few_rows_mma (see above)?"""
    if not FEW_ROWS_MAX_M < M <= FEW_ROWS_MMA_MAX_M or N > FEW_ROWS_MMA_MAX_N:
        return False
    blocks, slots = cdiv(N, FEW_ROWS_MMA_TILES[few_rows_mma_rows(M)][0]), 2 * sms
    return blocks <= slots or 2 * (blocks % slots or slots) >= slots


def few_rows_mma_tile(mp: int, b_kmajor: bool, N: int, sms: int) -> tuple[int, int]:
    """(BW, SK) of few_rows_mma's blocks for MP rows of a over N rows of W (see above)."""
    if not b_kmajor and mp in FEW_ROWS_MMA_ROW_TILES and N >= FEW_ROWS_MMA_ROW_TILES[mp][0] * sms:
        return FEW_ROWS_MMA_ROW_TILES[mp]
    return FEW_ROWS_MMA_TILES[mp]


def few_rows_mma_name(dtype, mp: int, b_kmajor: bool, tile: tuple[int, int]) -> str:
    return FEW_ROWS_MMA_KERNEL.format(T=loader.CTYPE[dtype], KMAJOR=str(b_kmajor).lower(), MP=mp, BW=tile[0],
                                      SK=tile[1], RING=FEW_ROWS_MMA_RING_KB)


# few_rows_mma's instances (in matmul_tc.cu's list)
FEW_ROWS_MMA_NAME_EXPRESSIONS = (tuple(few_rows_mma_name(d, mp, km, tile) for d in TC_DTYPES
                                       for mp, tile in FEW_ROWS_MMA_TILES.items() for km in (True, False))
                                 + tuple(few_rows_mma_name(d, mp, False, tile) for d in TC_DTYPES
                                         for mp, tile in FEW_ROWS_MMA_ROW_TILES.items()))
