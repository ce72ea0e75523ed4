"""The few-rows family (decode: a few rows of a against a weight W = b^T): ``few_rows`` on CUDA
cores (kernels/matmul_few_rows.cu) and ``few_rows_mma`` on tensor cores
(kernels/matmul_few_rows_mma.cu), their tiles, the range ``variant=None`` gives them, their launches,
plans and instances. ``cuda_ref/_matmul.py`` picks the variant.
"""

from __future__ import annotations

import torch

from cuda_ref import loader
from cuda_ref._arch import SM_90
from cuda_ref._matmul_wgmma import BIAS_ARGS, SPLIT_REDUCE_NAMES, TC_ARGS, TC_DTYPES, bias_run, split_reduce
from kernel_common import cdiv, hand_over, matrix_layout, rows_aligned16, sm_count, tf32_allowed, tma_rows
from kernel_common.plans import Plan

# few_rows (matmul_few_rows.cu, CUDA cores): a warp per NC columns of c, MR rows of a at a time, b read
# K-major. (largest M, MR, NC) by element size, from sweeps on an H200, bf16, x torch
# (docs/decisions/016-cuda-few-rows.md): M = 2 at 2 x 2 0.90-1.04x where 1 x 1 ran 0.50-0.84x; then in
# 16 bits 2 x 4 over 2 x 2 on 10 of 13 weights (2 x 12288 x 4096: 0.92 against 0.78), 4 x 8 over 4 x 2 on
# 11 of 12 at 3-4 rows (4 x 151936 x 896: 0.73 against 0.53). At M = 8 the best (8 x 4) ran 0.46-0.65x,
# wgmma 0.25-0.8x: variant=None stops at FEW_ROWS_MAX_M, and from 2 rows gives few_rows_mma what it fits
# (FEW_ROWS_MMA_MIN_M; arch_sm_90.json).
FEW_ROWS_FILE, FEW_ROWS_KERNEL = "matmul_few_rows.cu", "matmul_few_rows<{T}, {MR}, {NC}>"
FEW_ROWS_TILES = {2: ((1, 1, 1), (2, 2, 4), (4, 4, 8)), 4: ((1, 1, 1), (2, 2, 2), (4, 4, 2))}  # past 4 rows: 4 a pass
# One row of a in 16 bits: 8 columns a warp (16 loads of 16 bytes a lane in flight; two blocks an SM by
# registers) where those blocks fill FEW_ROWS_WIDE_MIN_FILL of the SMs in one wave (a block an SM already
# streams at full rate), or past one wave of the slots their waves as full; else one column a warp. x torch,
# 1 x 1 against 1 x 8: N = 8192-151936 0.76-1.00 against 0.91-1.07 (151936 x 896: 0.76 against 0.91);
# N = 4096-6144 (64-96 blocks) 0.97-1.12 against 0.83-0.95; N = 18944 (296 blocks: 264, then 32)
# 0.87-0.98 against 0.87-0.90.
FEW_ROWS_WIDE_NC, FEW_ROWS_WIDE_MIN_FILL = 8, SM_90["few_rows_wide_min_fill"]
FEW_ROWS_THREADS = 256
FEW_ROWS_MAX_M = SM_90["few_rows_max_m"]
FEW_ROWS_DTYPES = (torch.float32, *TC_DTYPES)  # float32: 4 elements a 16-byte load, exact FMA sums
# On a row-major b (matmul_few_rows_row), read where it lies, never copied (a copy of b whole cost
# 2 x 50257 x 1600 four times torch's time): a block of 8 warps per 32 x NV columns (``VEC``, rows
# 16-byte aligned: a 16-byte load a lane, NV elements; else 2 elements a lane), MR rows of a a
# pass; K in runs of at least FEW_ROWS_ROW_MIN_RUN where the blocks would not fill every SM
# FEW_ROWS_ROW_BLOCKS times (N = 1024: 4 blocks), summed in run order by matmul_split_reduce.
FEW_ROWS_ROW_KERNEL = "matmul_few_rows_row<{T}, {MR}, {VEC}>"
FEW_ROWS_ROW_MR = (1, 2, 4, 8)
FEW_ROWS_ROW_MIN_RUN, FEW_ROWS_ROW_BLOCKS = 256, 4
# variant=None takes it on a row-major b whose rows are not 16-byte aligned (which every tensor-core
# kernel copies whole: 0.22-0.49x torch), up to FEW_ROWS_ROW_MAX_M rows of a: H200, bf16, x torch,
# N = 4097-50257: 0.63-1.16 at 1-8 rows (one pass of its 8-row tile); at 9-16 rows 0.27-0.60, where
# few_rows_mma reading b in place ran 0.59-1.19 (few_rows_mma_any_b takes those). On aligned rows
# it ran 0.41-0.96x (40 shapes, 1-16 rows), below the tensor-core kernels' 0.62-0.99x: no default
# there (docs/decisions/016-cuda-few-rows.md; arch_sm_90.json).
FEW_ROWS_ROW_MAX_M = SM_90["few_rows_row_max_m"]
# Exact float32 (no tensor core takes it): few_rows up to FEW_ROWS_EXACT_MAX_M rows (on W.t() it reads
# W once every 4 rows of a; pipelined's tiles read it once but compute a block's rows whole); on a
# row-major b in aligned rows only up to FEW_ROWS_EXACT_ROW_MAX_M (past 4 rows matmul_few_rows_row
# holds 8 rows' sums, one block an SM, too few loads in flight: pipelined's 32 x 128 tiles ran faster
# from 5 rows). Both measured against pipelined's modelled pick (arch_sm_90.json, decision 060).
FEW_ROWS_EXACT_MAX_M = SM_90["few_rows_exact_max_m"]
FEW_ROWS_EXACT_ROW_MAX_M = SM_90["few_rows_exact_row_max_m"]


def few_rows_row_columns(dtype, vec: bool) -> int:
    """matmul_few_rows_row's columns a block: 32 lanes of 16 bytes (``vec``) or of 2 elements."""
    return 32 * (16 // dtype.itemsize if vec else 2)


FEW_ROWS_NAME_EXPRESSIONS = (tuple(FEW_ROWS_KERNEL.format(T=loader.CTYPE[d], MR=mr, NC=nc) for d in FEW_ROWS_DTYPES
                                   for mr, nc in {t[1:] for t in FEW_ROWS_TILES[d.itemsize]}
                                   | ({(1, FEW_ROWS_WIDE_NC)} if d.itemsize == 2 else set()))
                             + tuple(FEW_ROWS_ROW_KERNEL.format(T=loader.CTYPE[d], MR=mr, VEC=v)
                                     for d in FEW_ROWS_DTYPES for mr in FEW_ROWS_ROW_MR for v in ("true", "false"))
                             + SPLIT_REDUCE_NAMES)  # (the file holds every split's sum)
# few_rows_mma (matmul_few_rows_mma.cu, mma.sync): c^T = W a^T, a block of FEW_ROWS_MMA_THREADS per BW rows of W
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
FEW_ROWS_MMA_KERNEL = "matmul_few_rows_mma<{T}, {KMAJOR}, {MP}, {BW}, {SK}, {RING}{ANY}>"  # ANY: "" or ", true"
FEW_ROWS_MMA_TILES = {16: (32, 256), 32: (32, 256), 64: (32, 128)}
FEW_ROWS_MMA_ROW_TILES = {16: (64, 128), 32: (64, 128)}  # a row-major b's, N >= 64 x SMs (up to 32 rows)
FEW_ROWS_MMA_RING_KB = 96  # two blocks an SM
FEW_ROWS_MMA_THREADS = 128  # the kernel's FR_THREADS
# variant=None's range on W.t(): 2-32 rows of a, W at most FEW_ROWS_MMA_MAX_N rows (wgmma_ws's 256-column
# tiles filling at most half of a 132-SM GPU), and blocks (two an SM) in one wave or a last wave at least
# half full. 16 rows, x torch, few_rows_mma against wgmma_ws: N = 4096-14336 0.97-1.13x against 0.60-0.95x
# (docs/decisions/016-cuda-few-rows.md: the models set with and without the wider tiles); N = 28672,
# 0.93x against 0.97x; N = 10240 (320 blocks: 264, then 56 alone), 0.83x against 0.98x. At 2-4 rows it led few_rows on 25 of
# 25 weights of N <= 14336 (geomean 1.27x; 4 x 1024 x 8192: 1.02 against 0.47); at one row, 10 of 17
# (geomean 1.03x, 5120 x 5120 0.83 against 0.98): FEW_ROWS_MMA_MIN_M. (arch_sm_90.json)
FEW_ROWS_MMA_MAX_M, FEW_ROWS_MMA_MAX_N = SM_90["few_rows_mma_max_m"], SM_90["few_rows_mma_max_n"]
FEW_ROWS_MMA_MIN_M = SM_90["few_rows_mma_min_m"]


# K in runs (the kernel's gridDim.z, summed in order by each tile's last run) where few_rows_mma's
# blocks fill at most a third of its slots (two blocks an SM; N = 1024: 32 blocks;
# FEW_ROWS_MMA_RUNS_FILL_KMAJOR), half with 16-row tiles on a row-major b (..._ROW), and K is
# FEW_ROWS_MMA_MIN_K or more: enough runs of whole slices to fill the slots, as Triton's few-row K
# slices (triton_impl/arch_sm_90.json's few_rows_split). H200, bf16, 1-32 rows, x torch
# (docs/decisions/016-cuda-few-rows.md): runs of 1152 lost (25 x 4096 x 2304: 0.73 against 0.85);
# from K = 4096, runs of 2048 or more won where at most a third full (4 x 1024 x 8192 row-major: 0.86
# against 0.37), and filling the slots with shorter runs (187 cases on 11 weights, both layouts) took
# the flushed geomean 0.82 -> 0.92 and back to back 1.05 -> 1.39. Half full (96-128 blocks), two runs
# of 16-row tiles won 10 of 10 on a row-major b (0.81 -> 0.91 at 5 x 4096 x 11008), where a K-major
# block, streaming long rows, needs no more in flight: on W.t() two runs lost or tied 4 of 5 (1.15 ->
# 0.98 at 16 x 4096 x 4096); 32-row tiles lost 3 of 4 to wgmma_ws's split K (0.84 -> 0.77 at 23 x
# 4096 x 14336). (arch_sm_90.json)
FEW_ROWS_MMA_RUNS = True
FEW_ROWS_MMA_MIN_K = SM_90["few_rows_mma_min_k"]
# on a row-major b from a shorter K: its blocks read W's rows 64 bytes at a time, strided by N, and
# few of them leave DRAM idle; on W.t() K-major blocks stream long rows and runs of K 2048-3584 lost
# back to back on every case, and flushed at K 2048-2304 on 64-72 blocks (decision 016, arch_sm_90.json)
FEW_ROWS_MMA_MIN_K_ROW = SM_90["few_rows_mma_min_k_row"]
FEW_ROWS_MMA_RUNS_FILL_KMAJOR = SM_90["few_rows_mma_runs_fill_kmajor"]
FEW_ROWS_MMA_RUNS_FILL_ROW = SM_90["few_rows_mma_runs_fill_row"]


def few_rows_mma_runs(M: int, N: int, K: int, sms: int, b_kmajor: bool) -> int:
    """few_rows_mma's runs of K for an M-row product over N rows of W (see above)."""
    mp = few_rows_mma_rows(M)
    blocks, slots = cdiv(N, FEW_ROWS_MMA_TILES[mp][0]) * min(cdiv(M, mp), 65535), 2 * sms
    fill = FEW_ROWS_MMA_RUNS_FILL_ROW if not b_kmajor and mp == 16 else FEW_ROWS_MMA_RUNS_FILL_KMAJOR
    min_k = FEW_ROWS_MMA_MIN_K if b_kmajor else FEW_ROWS_MMA_MIN_K_ROW
    if not FEW_ROWS_MMA_RUNS or blocks > fill * slots or K < min_k:
        return 1
    runs = max(1, min(slots // blocks, K // FEW_ROWS_MMA_TILES[mp][1]))
    return cdiv(K, few_rows_mma_run(M, K, runs))


def few_rows_mma_run(M: int, K: int, runs: int) -> int:
    """The k of each of ``runs`` runs: whole slices (of the 32-column blocks' depth, which a wider
    block's divides), none empty."""
    depth = FEW_ROWS_MMA_TILES[few_rows_mma_rows(M)][1]
    return cdiv(cdiv(K, runs), depth) * depth


def few_rows_mma_rows(M: int) -> int:
    """few_rows_mma's tile of a's rows for an M-row product: the fewest that hold M, else 64."""
    return next((r for r in FEW_ROWS_MMA_TILES if M <= r), 64)


def few_rows_mma_fits(M: int, N: int, K: int, sms: int, b_kmajor: bool) -> bool:
    """Does variant=None give an M-row product over N rows of W to few_rows_mma (see above)? Any
    b where K runs (``few_rows_mma_runs``); else W.t() from FEW_ROWS_MMA_MIN_M rows, its blocks in
    one wave or a last wave at least half full."""
    if M > FEW_ROWS_MMA_MAX_M:
        return False
    if few_rows_mma_runs(M, N, K, sms, b_kmajor) > 1:
        return True
    if not b_kmajor or M < FEW_ROWS_MMA_MIN_M or N > FEW_ROWS_MMA_MAX_N:
        return False
    blocks, slots = cdiv(N, FEW_ROWS_MMA_TILES[few_rows_mma_rows(M)][0]), 2 * sms
    return blocks <= slots or 2 * (blocks % slots or slots) >= slots


# variant=None gives few_rows_mma a row-major b whose rows are off 16 bytes from past few_rows' rows
# to FEW_ROWS_MMA_ANY_MAX_M rows: it reads such a b where it lies, where the other tensor-core kernels
# copy it whole first, reading and writing the weight once more than the product does
# (docs/decisions/016-cuda-few-rows.md, arch_sm_90.json).
FEW_ROWS_MMA_ANY_MAX_M = SM_90["few_rows_mma_any_max_m"]


def row_off16(b) -> bool:
    """Is b row-major with rows that do not start on 16 bytes (what the tensor-core kernels copy)?"""
    return matrix_layout(b) == "row" and not rows_aligned16(b)


def few_rows_mma_any_b(M: int, b) -> bool:
    """Does variant=None give an M-row product on this b to few_rows_mma's reading in place (see above)?"""
    return FEW_ROWS_ROW_MAX_M < M <= FEW_ROWS_MMA_ANY_MAX_M and row_off16(b)


def few_rows_mma_tile(mp: int, b_kmajor: bool, N: int, sms: int) -> tuple[int, int]:
    """(BW, SK) of few_rows_mma's blocks for MP rows of a over N rows of W (see above)."""
    if not b_kmajor and mp in FEW_ROWS_MMA_ROW_TILES and N >= FEW_ROWS_MMA_ROW_TILES[mp][0] * sms:
        return FEW_ROWS_MMA_ROW_TILES[mp]
    return FEW_ROWS_MMA_TILES[mp]


def few_rows_mma_name(dtype, mp: int, b_kmajor: bool, tile: tuple[int, int], b_any: bool = False) -> str:
    """The instance (``b_any``: a row-major b whose rows are not 16-byte aligned, read where it lies).
    float32 (TF32) slices are half as deep: the 16-bit ones' bytes, so as many stages fit the ring."""
    return FEW_ROWS_MMA_KERNEL.format(T=loader.CTYPE[dtype], KMAJOR=str(b_kmajor).lower(), MP=mp, BW=tile[0],
                                      SK=tile[1] * 2 // dtype.itemsize, RING=FEW_ROWS_MMA_RING_KB,
                                      ANY=", true" if b_any else "")


# few_rows_mma's instances (its file's list): each tile on either layout of b, and on a row-major b at any
# alignment (16-bit); float32 as TF32 on aligned rows
FEW_ROWS_MMA_FILE = "matmul_few_rows_mma.cu"
FEW_ROWS_MMA_NAME_EXPRESSIONS = (tuple(few_rows_mma_name(d, mp, km, tile) for d in (*TC_DTYPES, torch.float32)
                                       for mp, tile in FEW_ROWS_MMA_TILES.items() for km in (True, False))
                                 + tuple(few_rows_mma_name(d, mp, False, tile, any_) for d in TC_DTYPES
                                         for mp, tile in FEW_ROWS_MMA_ROW_TILES.items() for any_ in (False, True))
                                 + tuple(few_rows_mma_name(torch.float32, mp, False, tile)
                                         for mp, tile in FEW_ROWS_MMA_ROW_TILES.items())
                                 + tuple(few_rows_mma_name(d, mp, False, tile, True) for d in TC_DTYPES
                                         for mp, tile in FEW_ROWS_MMA_TILES.items()))


def few_rows_row_runs(N: int, K: int, sms: int, columns: int) -> int:
    """matmul_few_rows_row's runs of K for blocks of ``columns``: enough for FEW_ROWS_ROW_BLOCKS
    blocks an SM, each run at least FEW_ROWS_ROW_MIN_RUN deep, none empty."""
    blocks = cdiv(N, columns)
    runs = max(1, min(cdiv(FEW_ROWS_ROW_BLOCKS * sms, blocks), K // FEW_ROWS_ROW_MIN_RUN))
    return cdiv(K, cdiv(K, runs))


def few_rows_row_launch(M: int, N: int, K: int, dtype, sms: int, vec: bool = True) -> loader.Launch:
    """few_rows on a row-major b: (column blocks, runs of K); ``vec``: b's rows 16-byte aligned."""
    mr = next((r for r in FEW_ROWS_ROW_MR if M <= r), FEW_ROWS_ROW_MR[-1])
    columns = few_rows_row_columns(dtype, vec)
    return loader.Launch(FEW_ROWS_ROW_KERNEL.format(T=loader.CTYPE[dtype], MR=mr, VEC=str(vec).lower()),
                         (cdiv(N, columns), few_rows_row_runs(N, K, sms, columns)), (256,), "QQQQqqqqqqqQqq")


def few_rows_row_plan(a, b, out, bias_strides=None) -> Plan:
    """few_rows on a row-major b (rows along n at any stride and alignment), a at any strides, both
    read where they lie; with K in runs, their float32 sums (in the stream's ``hand_over`` buffer)
    added by matmul_split_reduce (with the bias, where there is one)."""
    (M, K), N = a.shape, b.shape[1]
    sms = sm_count(a.device)
    launch = few_rows_row_launch(M, N, K, a.dtype, sms, rows_aligned16(b))
    runs = launch.grid[1]
    kernel = loader.kernel(FEW_ROWS_FILE, FEW_ROWS_NAME_EXPRESSIONS, launch, a.device.index)
    total = split_reduce(a.dtype, M * N, a.device) if runs > 1 else None
    scalars = (M, N, K, *a.stride(), b.stride(0), cdiv(K, runs))
    sbm, sbn = bias_strides or (0, 0)

    def run(a, b, out, bias_ptr=0):
        if total is None:
            kernel(a.data_ptr(), b.data_ptr(), out.data_ptr(), 0, *scalars, bias_ptr, sbm, sbn)
            return
        partial = hand_over(a.device, 0, runs * M * N)[1]
        kernel(a.data_ptr(), b.data_ptr(), out.data_ptr(), partial.data_ptr(), *scalars, 0, 0, 0)
        total(partial.data_ptr(), out.data_ptr(), M * N, runs, bias_ptr, sbm, sbn, N)
    names = ("a", "b") if bias_strides is None else ("a", "b", "bias")
    return Plan((M, N), out.dtype, a.device, bias_run(run, bias_strides), names)


def few_rows_launch(variant, M, N, K, dtype, sms, b_kmajor=True, vec=True, **_) -> loader.Launch:
    """few_rows: a warp per NC columns of c (b K-major, ``few_rows_tile``), or on a row-major b
    ``few_rows_row_launch``."""
    if not b_kmajor:
        return few_rows_row_launch(M, N, K, dtype, sms, vec)
    mr, nc = few_rows_tile(M, N, dtype.itemsize, sms)
    return loader.Launch(FEW_ROWS_KERNEL.format(T=loader.CTYPE[dtype], MR=mr, NC=nc),
                         (cdiv(cdiv(N, nc) * 32, FEW_ROWS_THREADS),), (FEW_ROWS_THREADS,), TC_ARGS + BIAS_ARGS)


def few_rows_tile(M: int, N: int, itemsize: int, sms: int) -> tuple[int, int]:
    """few_rows' (MR, NC) for M rows of a over N rows of W (see above)."""
    tiles = FEW_ROWS_TILES[itemsize]
    _, mr, nc = next((t for t in tiles if M <= t[0]), tiles[-1])
    if M == 1 and itemsize == 2:
        blocks, slots = cdiv(N, FEW_ROWS_WIDE_NC * FEW_ROWS_THREADS // 32), 2 * sms
        full = blocks / sms if blocks <= slots else blocks / (cdiv(blocks, slots) * slots)
        if full >= FEW_ROWS_WIDE_MIN_FILL:
            return mr, FEW_ROWS_WIDE_NC
    return mr, nc


def few_rows_mma_launch(variant, M, N, K, dtype, sms, b_kmajor=False, splits=1, b_any=False, **_) -> loader.Launch:
    """few_rows_mma: a block per BW rows of W and MP rows of a, and per run of K (``b_any``: b
    row-major, its rows at any alignment)."""
    mp = few_rows_mma_rows(M)
    tile = few_rows_mma_tile(mp, b_kmajor, N, sms)
    grid = (cdiv(N, tile[0]), min(cdiv(M, mp), 65535), splits)  # (the kernel loops past 65535 row blocks)
    return loader.Launch(few_rows_mma_name(dtype, mp, b_kmajor, tile, b_any), grid, (FEW_ROWS_MMA_THREADS,),
                         TC_ARGS + BIAS_ARGS + "QqQ", FEW_ROWS_MMA_RING_KB * 1024)


def few_rows_mma_plan(variant, launch, a, b, a_mmajor, b_kmajor, operands, lda, ldb, out, splits=1, sk=0,
                      bias_strides=None) -> Plan:
    """few_rows_mma (``operands``: a and b as it reads them, copied where they must be): K whole, or
    in ``splits`` runs whose float32 sums each tile's last run adds (with the bias, where there is
    one), counting the runs done in a count a tile: one launch, the sums and counts in the
    stream's hand-over buffers (``hand_over``)."""
    (M, K), N = a.shape, b.shape[1]
    kernel = loader.kernel(FEW_ROWS_MMA_FILE, FEW_ROWS_MMA_NAME_EXPRESSIONS, launch, a.device.index)
    k_run = few_rows_mma_run(M, K, splits) if splits > 1 else K
    tiles, device = launch.grid[0] * cdiv(M, few_rows_mma_rows(M)), a.device
    sbm, sbn = bias_strides or (0, 0)

    def run(a, b, out, bias_ptr=0):
        a, b = operands(a, b)
        if splits == 1:
            kernel(a.data_ptr(), b.data_ptr(), out.data_ptr(), M, N, K, lda, ldb, bias_ptr, sbm, sbn, 0, K, 0)
            return
        counts, partial = hand_over(device, tiles, splits * M * N)
        kernel(a.data_ptr(), b.data_ptr(), out.data_ptr(), M, N, K, lda, ldb, bias_ptr, sbm, sbn,
               partial.data_ptr(), k_run, counts.data_ptr())
    names = ("a", "b") if bias_strides is None else ("a", "b", "bias")
    return Plan((M, N), out.dtype, a.device, bias_run(run, bias_strides), names)


def few_rows_exact(a, b) -> bool:
    """Exact float32 (TF32 not allowed), at most FEW_ROWS_EXACT_MAX_M rows of a, or
    FEW_ROWS_EXACT_ROW_MAX_M on a row-major b in aligned rows."""
    rows = FEW_ROWS_EXACT_ROW_MAX_M if matrix_layout(b) == "row" and rows_aligned16(b) else FEW_ROWS_EXACT_MAX_M
    return a.dtype == torch.float32 and a.shape[0] <= rows and not tf32_allowed()


def few_rows_tf32_row(a, b) -> bool:
    """float32 under TF32 on a row-major b, up to FEW_ROWS_MAX_M rows: few_rows' exact sums read b
    where it lies, where TF32's wgmma_swap reads it transposed once a call (W's bytes three times).
    H200, 1-32 rows on 10 weights (``lab/probe_tf32_row.py``,
    bench/results/logs/h200-2026-11-30-tf32-row-few-rows.json): at 1-4 rows 0.81-0.88x torch's TF32
    against 0.44-0.49 (back to back 0.69-0.87 against 0.35-0.44), at 8 rows 0.42 against 0.49."""
    return (a.dtype == torch.float32 and a.shape[0] <= FEW_ROWS_MAX_M and matrix_layout(b) == "row"
            and tma_rows(b) and tf32_allowed())


def one_row(a, b) -> bool:
    """One row of a (its elements in a row) against a K-major b (``W.t()``, W row-major): ``few_rows``
    runs this package's GEMV on W = b^T and x = a[0] (without a bias, which the GEMV has none of)."""
    return a.shape[0] == 1 and a.stride(1) == 1 and matrix_layout(b.t()) == "row"


def one_row_plan(a, b) -> Plan:
    """``few_rows`` on one row of a against W.t(): the GEMV's plan on W = b^T and x = a[0]. Its launch
    reads the first elements of what it is given with the strides its plan keeps, and W's first
    element is b's, x's a's, y's out's: a call passes b, a and out as they are (three views would
    cost ~3 us of host time a call)."""
    from cuda_ref import _gemv
    w, x = b.t(), a[0]
    run = _gemv._PLANS.get((w, x), None, None).run
    if _gemv.LAYOUT[_gemv.pick_variant(w, x)] == "row":  # (a row-major W and x contiguous: read where they lie)
        return Plan((1, w.shape[0]), a.dtype, a.device, lambda a, b, out: run(b, a, out), ("a", "b"))
    return Plan((1, w.shape[0]), a.dtype, a.device, lambda a, b, out: run(b.t(), a[0], out[0]), ("a", "b"))
