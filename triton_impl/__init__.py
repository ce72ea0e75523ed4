"""Triton kernels with blocked tiles. Same public API as ``cuda_ref`` (torch tensors only)."""

from triton_impl.gemv import VARIANTS as _GEMV_VARIANTS
from triton_impl.gemv import gemv
from triton_impl.matmul import VARIANTS as _MATMUL_VARIANTS
from triton_impl.matmul import matmul
from triton_impl.transpose import VARIANTS as _TRANSPOSE_VARIANTS
from triton_impl.transpose import transpose

_VARIANTS = {"transpose": _TRANSPOSE_VARIANTS, "gemv": _GEMV_VARIANTS, "matmul": _MATMUL_VARIANTS}


def variants(algorithm: str) -> tuple[str, ...]:
    """Variant names of ``algorithm``, the default first."""
    if algorithm not in _VARIANTS:
        raise ValueError(f"algorithm must be one of {', '.join(_VARIANTS)}, got {algorithm!r}")
    return _VARIANTS[algorithm]


__all__ = ["gemv", "matmul", "transpose", "variants"]
