"""FP8 with scales for a few rows of a (kernels/matmul_fp8_few_rows.cu): ``cuda_ref.scaled_mm``'s
``few_rows_fp8``, variant=None's up to ``fp8_few_rows`` rows (cuda_ref/arch_sm_90.json), where the
weight's bytes bound the product and ``wgmma_fp8``'s 128-row tiles read them on few SMs. The roles
swapped as few_rows_mma's, operands widened to float16 exactly for m16n8k16, K in runs handed over
in one launch; triton_impl's ``few_rows_fp8`` is the same idea (docs/decisions/051).
"""
from __future__ import annotations

import torch

from cuda_ref import loader
from kernel_common import capability, cdiv, fp8, sm_count, tma_rows
from kernel_common.fp8 import BLOCK, OUT_DTYPES, ROW, SCALE_BLOCK, TENSOR
from kernel_common.plans import Plan
from kernel_common.util import hand_over, padded

FILE = "matmul_fp8_few_rows.cu"
VARIANTS = ("few_rows_fp8",)
BW, STAGES, THREADS = 64, 4, 128  # a block's rows of W (b's columns), the ring's slices, its threads
ROW_BLOCKS = (16, 32)  # a block's rows of a (MP): 16 up to 16 rows, else 32 (more rows: more blocks)
MIN_SLICES = 4  # 128-deep slices a run of K at least
ARGS = "QQQqqqqqQQqqqqQqQ"  # a, bt, c, M, N, K, lda, ldb, scale_a, scale_b, their 4 strides, partial, k_run, counters
SCALING_CODE = {TENSOR: 0, ROW: 1, BLOCK: 2}
PAIRS = ((torch.float8_e4m3fn, torch.float8_e4m3fn), (torch.float8_e4m3fn, torch.float8_e5m2),
         (torch.float8_e5m2, torch.float8_e4m3fn))


def instance(ta, tb, out_dtype, mp: int, scaling: str) -> str:
    return (f"matmul_fp8_few_rows<{loader.CTYPE[ta]}, {loader.CTYPE[tb]}, {loader.CTYPE[out_dtype]}, {mp}, "
            f"{SCALING_CODE[scaling]}, {STAGES}>")


NAME_EXPRESSIONS = tuple(instance(ta, tb, out, mp, s) for ta, tb in PAIRS for out in OUT_DTYPES for mp in ROW_BLOCKS
                         for s in SCALING_CODE)
SOURCES = {FILE: NAME_EXPRESSIONS}


def row_block(M: int) -> int:
    return ROW_BLOCKS[0] if M <= ROW_BLOCKS[0] else ROW_BLOCKS[1]


def runs_of(M: int, N: int, K: int, sms: int) -> int:
    """Runs of K: as many as bring the blocks to about two a SM, each at least MIN_SLICES
    slices, none empty (triton_impl's few_rows_fp8 rule)."""
    blocks = cdiv(N, BW) * cdiv(M, row_block(M))
    return fp8.k_runs(cdiv(2 * sms, blocks), cdiv(K, SCALE_BLOCK), MIN_SLICES)


def launch_of(M: int, N: int, K: int, ta, tb, out_dtype, scaling: str, sms: int) -> loader.Launch:
    mp = row_block(M)
    grid = (cdiv(N, BW), runs_of(M, N, K, sms), cdiv(M, mp))
    return loader.Launch(instance(ta, tb, out_dtype, mp, scaling), grid, (THREADS,), ARGS,
                         STAGES * (BW + mp) * SCALE_BLOCK)


def plan(inputs, variant, out, out_dtype, fast_accum) -> Plan:
    """One launch; a and b's transpose read where their rows are 16-byte aligned, else copied
    (rows padded); with K in runs their float32 sums through the stream's hand-over buffers. Its
    sums are float32 whatever ``use_fast_accum`` says (as precise as the promoted product)."""
    scaling, empty = fp8.plan_start(inputs, variant, VARIANTS, out, out_dtype, need_cuda=True)
    if empty is not None:
        return empty
    a, b, scale_a, scale_b = inputs
    if capability(a.device) < (8, 9):  # (its FP8 conversions: compile.FILE_MIN_ARCH)
        raise ValueError(f"variant {variant} needs a GPU of compute capability 8.9 or more")
    (M, K), N = a.shape, b.shape[1]
    bt = b.t()
    copy_a, copy_b = not tma_rows(a), not tma_rows(bt)
    lda = padded(M, K, a.dtype, "meta").stride(0) if copy_a else a.stride(0)
    ldb = padded(N, K, b.dtype, "meta").stride(0) if copy_b else bt.stride(0)
    launch = launch_of(M, N, K, a.dtype, b.dtype, out_dtype, scaling, sm_count(a.device))
    kernel = loader.kernel(FILE, NAME_EXPRESSIONS, launch, a.device.index)
    tiles, runs = launch.grid[0] * launch.grid[2], launch.grid[1]
    k_run = cdiv(cdiv(K, SCALE_BLOCK), runs) * SCALE_BLOCK
    strides = fp8.scale_strides(scaling, scale_a, scale_b)

    def run(a, b, scale_a, scale_b, out):
        a, bt = fp8.kmajor_operands(a, b, copy_a, copy_b)
        counters, partial = hand_over(a.device, tiles, runs * M * N) if runs > 1 else (None, None)
        kernel(a.data_ptr(), bt.data_ptr(), out.data_ptr(), M, N, K, lda, ldb, scale_a.data_ptr(),
               scale_b.data_ptr(), *strides, partial.data_ptr() if runs > 1 else 0, k_run,
               counters.data_ptr() if runs > 1 else 0)
    return Plan((M, N), out_dtype, a.device, run, fp8.NAMES, traceable=False)


def describe(M: int, N: int, K: int, scaling: str, sms: int) -> str:
    return f"few_rows_fp8 {scaling} scales, {row_block(M)}-row blocks, {runs_of(M, N, K, sms)} runs of K"
