"""Transpose launchers: validate -> plan -> launch. Kernels: kernels/transpose.cu."""

from __future__ import annotations

import torch

from cuda_ref import _module
from kernel_common import cdiv, check_matrix, check_variant, output, rows_aligned16
from kernel_common.plans import Plan, PlanCache

FILE = "transpose.cu"
DTYPES = (torch.float16, torch.bfloat16, torch.float32, torch.float64, torch.int32, torch.int8)

# variant -> template instance. The default (fastest on large inputs) comes first.
KERNELS = {
    "smem_tiled_vec": "transpose_smem_tiled_vec<{T}>",
    "serial": "transpose_serial<{T}>",
    "per_row": "transpose_per_row<{T}>",
    "per_element": "transpose_per_element<{T}>",
    "smem_tiled": "transpose_smem_tiled<{T}, 0>",
    "smem_tiled_padded": "transpose_smem_tiled<{T}, 1>",
    "smem_tiled_rows": "transpose_smem_tiled_rows<{T}>",
}
VARIANTS = tuple(KERNELS)
NAME_EXPRESSIONS = tuple(t.format(T=ctype) for t in KERNELS.values()
                         for ctype in _module.UINT_BY_SIZE.values())


def plan_launch(variant: str, R: int, C: int, itemsize: int) -> _module.Launch:
    """The instance and geometry of a variant; the tile sizes match the kernels' constants."""
    name = KERNELS[variant].format(T=_module.UINT_BY_SIZE[itemsize])
    args = "QQqqqqii" if variant == "smem_tiled_vec" else "QQqqqq"  # + (vec_in, vec_out)
    if variant == "serial":
        grid, block = (1,), (1,)
    elif variant == "per_row":
        grid, block = (cdiv(R, 256),), (256,)
    elif variant == "per_element":
        grid, block = (cdiv(C, 32), min(cdiv(R, 8), 65535)), (32, 8)
    elif variant in ("smem_tiled", "smem_tiled_padded"):
        grid, block = (cdiv(R, 32) * cdiv(C, 32),), (32, 32)
    elif variant == "smem_tiled_rows":
        grid, block = (cdiv(R, 32) * cdiv(C, 32),), (32, 8)
    else:
        tile = 16 * (8 if itemsize == 1 else 16 // itemsize)  # smem_tiled_vec: 16 x 16 threads, VEC x VEC each
        grid, block = (cdiv(R, tile) * cdiv(C, tile),), (256,)
    return _module.Launch(name, grid, block, args)


def _vectorizable(a, R: int) -> bool:
    """smem_tiled_vec's 16-byte path needs 16-byte aligned input rows and R a multiple of the
    vector (aligned output rows)."""
    return rows_aligned16(a) and (R * a.element_size()) % 16 == 0


def pick_variant(a) -> str:
    """What ``variant=None`` runs, from bench/results/ on an H200 (16384^2 and 12345x6789):
    smem_tiled_vec for 2- and 4-byte elements on aligned rows (95% of copy in fp32, 94% in fp16,
    vs 81% / 54% for smem_tiled_rows); smem_tiled_rows for 8-byte elements (95% vs 90%) and for
    unaligned rows, where the vector kernel falls back to scalar accesses (55% vs 44% of copy)."""
    if a.element_size() < 8 and _vectorizable(a, a.shape[0]):
        return "smem_tiled_vec"
    return "smem_tiled_rows"


def _plan(inputs, variant, out) -> Plan:
    """Validate a call and plan it (once per distinct metadata)."""
    (a,) = inputs
    check_matrix("a", a, ndim=2, dtypes=DTYPES)
    check_variant(variant, VARIANTS, "transpose")
    R, C = a.shape
    out = output(out, (C, R), {"a": a}, need_cuda=True)
    if a.numel() == 0:
        return Plan((C, R), a.dtype, a.device, lambda a, out: None, ("a",))
    variant = variant or pick_variant(a)
    kernel = _module.kernel(FILE, NAME_EXPRESSIONS, plan_launch(variant, R, C, a.element_size()), a.device.index)
    scalars = (R, C, *a.stride())
    if variant == "smem_tiled_vec":  # out: contiguous, and torch's allocations are 16-byte aligned
        vec_out = (R * a.element_size()) % 16 == 0 and out.data_ptr() % 16 == 0
        scalars += (int(rows_aligned16(a)), int(vec_out))
    return Plan((C, R), a.dtype, a.device, lambda a, out: kernel(a.data_ptr(), out.data_ptr(), *scalars), ("a",))


_PLANS = PlanCache(_plan)


def transpose(a, *, variant: str | None = None, out=None):
    """Return ``a.T`` as a new contiguous (C, R) array (or write it into ``out``).

    ``a`` is a 2-D torch CUDA tensor or CuPy array of float16, bfloat16, float32, float64, int32
    or int8, with any strides; the result is of the same kind (torch or CuPy). ``variant=None``
    picks by element size and alignment (``pick_variant``).
    """
    return _module.call(_PLANS, (a,), ("a",), variant, out)
