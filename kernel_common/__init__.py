"""Argument checks shared by ``cuda_ref`` and ``triton_impl``.

Both backends promise the same behaviour for bad input (a ``TypeError`` or ``ValueError`` that
names the argument), so the checks live here once instead of twice. This package imports only
torch; it never imports CuPy or Triton.
"""

from kernel_common.validate import (
    check_gemv_args,
    check_inner_dims,
    check_like,
    check_matmul_args,
    check_matrix,
    check_out,
    check_variant,
    matrix_layout,
    overlaps,
    to_layout,
    variants_lookup,
)

__all__ = ["check_gemv_args", "check_inner_dims", "check_like", "check_matmul_args", "check_matrix",
           "check_out", "check_variant", "matrix_layout", "overlaps", "to_layout", "variants_lookup"]
