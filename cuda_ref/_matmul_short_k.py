"""``short_k`` (kernels/matmul_short_k.cu): 16-bit products of K <= 16, a low-rank adapter's up
projection, where writing c is the work. a and b are read where they lie, through their strides
(nothing copied: a TMA kernel copies an a whose rows are 8 bytes), and c leaves in 16-byte stores.
``cuda_ref/_matmul.py`` picks it (``short_k_fits``) and plans it here."""

from __future__ import annotations

from cuda_ref import loader
from cuda_ref._arch import SM_90
from cuda_ref._matmul_wgmma import BIAS_ARGS, TC_DTYPES, bias_run
from kernel_common import cdiv, matrix_layout, sm_count, tma_rows
from kernel_common.plans import Plan

SHORT_K_FILE, SHORT_K_KERNEL = "matmul_short_k.cu", "matmul_short_k<{T}, {KMAJOR}>"
SHORT_K_MAX = 16                  # the kernel's one 16-deep MMA step
SHORT_K_TILE = (64, 128)          # a block's rows a pass and its columns
SHORT_K_THREADS = 128
SHORT_K_BLOCKS_AN_SM = 7          # blocks made for each SM (those resident at 72 registers); each walks its row tiles
SHORT_K_ARGS = "QQQqqqqqqq" + BIAS_ARGS  # a, b, c, M, N, K, a's strides, b's strides, the bias
# At K = 16 on aligned rows, short_k from this many elements of c (arch_sm_90.json): below it,
# few_rows and wgmma_swap ran faster flushed
SHORT_K_MIN_C_AT_16 = SM_90["short_k_min_c_at_16"]


def short_k_name(dtype, b_kmajor: bool) -> str:
    return SHORT_K_KERNEL.format(T=loader.CTYPE[dtype], KMAJOR=str(b_kmajor).lower())


SHORT_K_NAME_EXPRESSIONS = tuple(short_k_name(d, km) for d in TC_DTYPES for km in (True, False))


def short_k_fits(a, b) -> bool:
    """variant=None's rule: 16-bit (one row of a on W.t() runs the GEMV before any rule), K <
    SHORT_K_MAX, or K = SHORT_K_MAX where a's rows are off 16 bytes (a TMA kernel would copy a) or c
    has SHORT_K_MIN_C_AT_16 elements or more. Below 16 the TMA kernels copy a (K = 4) or run a tile of
    mostly zeros; at 16 on 60 lora products (seeds 284, 285) short_k ran 1.09x their speed flushed,
    1.06x back to back, and lost on the small c of few rows (docs/decisions/070-cuda-short-k.md)."""
    (M, K), N = a.shape, b.shape[1]
    return a.dtype in TC_DTYPES and (K < SHORT_K_MAX or
                                     K == SHORT_K_MAX and (not tma_rows(a) or M * N >= SHORT_K_MIN_C_AT_16))


def short_k_launch(variant, M, N, K, dtype, sms, b_kmajor=False, **_) -> loader.Launch:
    """A block per 128 columns and per row tile of 64, the row tiles folded so that the blocks are
    about SHORT_K_BLOCKS_AN_SM an SM (each loads b's slice once)."""
    bm, bn = SHORT_K_TILE
    col_tiles = cdiv(N, bn)
    rows = min(cdiv(M, bm), max(1, cdiv(SHORT_K_BLOCKS_AN_SM * sms, col_tiles)), 65535)
    return loader.Launch(short_k_name(dtype, b_kmajor), (col_tiles, rows), (SHORT_K_THREADS,), SHORT_K_ARGS)


def short_k_plan(variant, a, b, out, bias_strides=None) -> Plan:
    (M, K), N = a.shape, b.shape[1]
    if K > SHORT_K_MAX or a.dtype not in TC_DTYPES:
        raise ValueError(f"short_k takes 16-bit products of K <= {SHORT_K_MAX}, got K = {K}, {a.dtype}")
    kmajor = matrix_layout(b) == "col"  # (the block's loads of b walk its contiguous side)
    launch = short_k_launch(variant, M, N, K, a.dtype, sm_count(a.device), b_kmajor=kmajor)
    kernel = loader.kernel(SHORT_K_FILE, SHORT_K_NAME_EXPRESSIONS, launch, a.device.index)
    scalars = (M, N, K, *a.stride(), *b.stride())
    sbm, sbn = bias_strides or (0, 0)

    def run(a, b, out, bias_ptr=0):
        kernel(a.data_ptr(), b.data_ptr(), out.data_ptr(), *scalars, bias_ptr, sbm, sbn)
    names = ("a", "b") if bias_strides is None else ("a", "b", "bias")
    return Plan((M, N), out.dtype, a.device, bias_run(run, bias_strides), names)

