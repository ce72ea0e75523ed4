"""Triton kernels with blocked tiles. Same public API as ``cuda_ref`` (torch tensors only)."""

from kernel_common import variants_lookup
from triton_impl._gemv import VARIANTS as _GEMV_VARIANTS
from triton_impl._gemv import gemv
from triton_impl._matmul import VARIANTS as _MATMUL_VARIANTS
from triton_impl._matmul import matmul, tune
from triton_impl._transpose import VARIANTS as _TRANSPOSE_VARIANTS
from triton_impl._transpose import transpose

# variants(algorithm): the variant names, the default first
variants = variants_lookup({"transpose": _TRANSPOSE_VARIANTS, "gemv": _GEMV_VARIANTS, "matmul": _MATMUL_VARIANTS})

__all__ = ["gemv", "matmul", "transpose", "tune", "variants"]
