"""What both backends' FP8 products with scales share (``cuda_ref.scaled_mm``,
``triton_impl.scaled_mm``): the dtypes, the scalings and their checks, the scales' strides.

c = (a * scale_a) @ (b * scale_b), a (M, K) and b (K, N) in float8 (e4m3, or e5m2 for a
gradient operand), sums in float32, c bfloat16 or float32. Scales are float32:
- per tensor: each a 0-D or one-element tensor;
- row-wise: scale_a (M, 1) and scale_b (1, N), one per row of a and per column of b;
- blocks: scale_a (M, ceil(K / 128)), one per row and 128 k (1 x 128), and scale_b
  (ceil(K / 128), ceil(N / 128)), one per 128 x 128 block of b.
"""
from __future__ import annotations

import torch

from kernel_common.plans import Plan, PlanCache
from kernel_common.util import cdiv, padded
from kernel_common.validate import check_matrix, check_output, check_variant

DTYPES = (torch.float8_e4m3fn, torch.float8_e5m2)
OUT_DTYPES = (torch.bfloat16, torch.float32)
SCALE_BLOCK = 128  # k (and n for b) a block scale covers
TENSOR, ROW, BLOCK = "tensor", "row", "block"


def scaling(a, b, scale_a, scale_b) -> str:
    """Which scaling the scales' shapes say (TENSOR, ROW or BLOCK), or a ValueError naming the three."""
    (M, K), N = a.shape, b.shape[1]
    kb, nb = cdiv(K, SCALE_BLOCK), cdiv(N, SCALE_BLOCK)
    sa, sb = tuple(scale_a.shape), tuple(scale_b.shape)
    if scale_a.numel() == 1 and scale_b.numel() == 1 and scale_a.dim() <= 2 and scale_b.dim() <= 2:
        return TENSOR
    if sa == (M, 1) and sb == (1, N):
        return ROW
    if sa == (M, kb) and sb == (kb, nb):
        return BLOCK
    raise ValueError(f"scales must be per tensor (one element each), row-wise (scale_a ({M}, 1), scale_b (1, {N})) "
                     f"or blocks (scale_a ({M}, {kb}): 1 x 128, scale_b ({kb}, {nb}): 128 x 128); got scale_a {sa} "
                     f"and scale_b {sb}")


def check_out_dtype(out_dtype) -> None:
    if out_dtype not in OUT_DTYPES:
        raise TypeError(f"out_dtype must be torch.bfloat16 or torch.float32, got {out_dtype}")


def check(a, b, scale_a, scale_b, out_dtype, variant, variants: tuple[str, ...]) -> str:
    """The call's arguments checked (clear errors for what neither kernel takes); its scaling."""
    check_matrix("a", a, ndim=2, dtypes=DTYPES)
    check_matrix("b", b, ndim=2, dtypes=DTYPES)
    if a.dtype == b.dtype == torch.float8_e5m2:
        raise TypeError("a and b are both float8_e5m2: one may be (a gradient), the other float8_e4m3fn")
    for name, s in (("scale_a", scale_a), ("scale_b", scale_b)):
        check_matrix(name, s, ndim=(0, 1, 2), dtypes=(torch.float32,))
    check_out_dtype(out_dtype)
    check_variant(variant, variants, "scaled_mm")
    if a.shape[1] != b.shape[0]:
        raise ValueError(f"a's columns ({a.shape[1]}) must equal b's rows ({b.shape[0]}): got a {tuple(a.shape)} "
                         f"and b {tuple(b.shape)}")
    return scaling(a, b, scale_a, scale_b)


NAMES = ("a", "b", "scale_a", "scale_b")


def plan_start(inputs, variant, variants: tuple[str, ...], out, out_dtype, need_cuda: bool):
    """A plan's first steps, the same in every FP8 kernel: the arguments and ``out`` checked, then
    (scaling, plan) with the plan of an empty product (nothing to launch; K = 0: zeros) or None."""
    a, b, scale_a, scale_b = inputs
    kind = check(a, b, scale_a, scale_b, out_dtype, variant, variants)
    (M, K), N = a.shape, b.shape[1]
    check_output(out, (M, N), dict(zip(NAMES, inputs)), need_cuda=need_cuda, dtype=out_dtype)
    if M == 0 or N == 0:
        return kind, Plan((M, N), out_dtype, a.device, lambda *args: None, NAMES)
    if K == 0:
        return kind, Plan((M, N), out_dtype, a.device, lambda *args: args[-1].zero_(), NAMES)
    return kind, None


def kmajor_operands(a, b, copy_a: bool, copy_b: bool):
    """(a, b's transpose (N, K)) as the kernels read them: each copied into rows padded to 16 bytes
    where its plan said so."""
    (M, K), N = a.shape, b.shape[1]
    if copy_a:
        a = padded(M, K, a.dtype, a.device).copy_(a)
    bt = b.t()
    if copy_b:
        bt = padded(N, K, b.dtype, b.device).copy_(bt)
    return a, bt


def scale_strides(kind: str, scale_a, scale_b) -> tuple[int, int, int, int]:
    """(sam, sak, sbk, sbn): scale_a's element (m, kb) at m sam + kb sak, scale_b's (kb, n) at
    kb sbk + n sbn, as the kernels read them (0 where the scaling has no such index)."""
    if kind == TENSOR:
        return 0, 0, 0, 0
    if kind == ROW:
        return scale_a.stride(0), 0, 0, scale_b.stride(1)
    return (*scale_a.stride(), *scale_b.stride())


def plan_caches(plan) -> dict:
    """{(out_dtype, use_fast_accum): PlanCache} over ``plan(inputs, variant, out, out_dtype,
    fast_accum)``: both are part of a call's key (one cache each)."""
    return {(dtype, fast): PlanCache(lambda inputs, variant, out, dtype=dtype, fast=fast: plan(inputs, variant, out,
                                                                                              dtype, fast))
            for dtype in OUT_DTYPES for fast in (False, True)}


# 128-deep slices a run of K at least, where a product's K is split: shorter runs cost more in the
# hand-over than they save (docs/decisions/023-fp8-scaled-matmul.md)
SPLIT_MIN_SLICES = 8


def k_runs(most: int, slices: int, min_slices: int) -> int:
    """Runs of K over ``slices`` 128-deep slices: at most ``most``, each at least ``min_slices``
    slices (one run where K is shorter), as even as the slices allow, none empty."""
    runs = max(1, min(most, slices // min_slices))
    return cdiv(slices, cdiv(slices, runs))


def split_runs(tiles: int, slices: int, sms: int) -> int:
    """Runs of K for a product of ``tiles`` tiles, each run of a tile a block of its own: one where
    the tiles fill more than half the SMs; else as many as fit one wave of runs (all resident at
    once: a tile's last run waits on the others' in CUDA's kernel), each at least SPLIT_MIN_SLICES
    slices (both backends' tiled FP8 kernels)."""
    return 1 if 2 * tiles > sms else k_runs(sms // tiles, slices, SPLIT_MIN_SLICES)
