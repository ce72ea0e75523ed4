"""int8 on CUDA cores, ``dp4a`` (kernels/matmul_dp4a.cu): 128 x 128 tiles of c, 256 threads, four
products a ``dp4a`` instruction, int32 sums. ``cuda_ref/_matmul.py`` picks the variant."""

from __future__ import annotations

import torch

from cuda_ref import loader
from kernel_common import cdiv, matrix_layout, rows_aligned16, sm_count
from kernel_common.plans import Plan

DP4A_FILE = "matmul_dp4a.cu"
DP4A_KERNEL = "matmul_dp4a<{KMAJOR}>"
DP4A_TILE, DP4A_THREADS = 128, 256
DP4A_NAME_EXPRESSIONS = tuple(DP4A_KERNEL.format(KMAJOR=km) for km in ("false", "true"))


def dp4a_launch(variant, M, N, K, dtype, sms, b_kmajor=False, **_) -> loader.Launch:
    """dp4a: one block per 128 x 128 tile of c; b read K-major or row-major."""
    return loader.Launch(DP4A_KERNEL.format(KMAJOR=str(b_kmajor).lower()),
                          (cdiv(M, DP4A_TILE) * cdiv(N, DP4A_TILE),), (DP4A_THREADS,), "QQQqqqqqii")


def dp4a_plan(variant, a, b, out) -> Plan:
    """dp4a: a read along its rows, b where it lies if either of its extents has unit stride (row-
    major or K-major); otherwise one copy, documented: ``a.contiguous()``, b row-major."""
    (M, K), N = a.shape, b.shape[1]
    copy_a, b_layout = matrix_layout(a) != "row", matrix_layout(b)
    b_kmajor = b_layout == "col"
    copy_b = b_layout is None
    a_laid = a.contiguous() if copy_a else a  # (the plan's flags are those of the layout it runs)
    b_laid = b.contiguous() if copy_b else b
    vec_a = rows_aligned16(a_laid)
    vec_b = rows_aligned16(b_laid.t()) if b_kmajor else (b_laid.data_ptr() % 4 == 0 and b_laid.stride(0) % 4 == 0)
    ldb = b_laid.stride(1) if b_kmajor else b_laid.stride(0)
    kernel = loader.kernel(DP4A_FILE, DP4A_NAME_EXPRESSIONS,
                           dp4a_launch(variant, M, N, K, a.dtype, sm_count(a.device), b_kmajor=b_kmajor), a.device.index)

    def run(a, b, out):
        a = a.contiguous() if copy_a else a
        b = b.contiguous() if copy_b else b
        kernel(a.data_ptr(), b.data_ptr(), out.data_ptr(), M, N, K, a.stride(0), ldb, int(vec_a), int(vec_b))
    return Plan((M, N), torch.int32, a.device, run, ("a", "b"))
