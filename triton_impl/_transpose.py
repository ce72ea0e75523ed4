"""Matrix transpose in Triton: out (C, R) contiguous = a (R, C)^T, any strides, any shape, and
a batch of them: (B, R, C) -> (B, C, R).

Transpose moves bits, so the wrapper reinterprets 2-, 4- and 8-byte elements as int16, int32 and
int64 (``Tensor.view(dtype)`` is free and keeps strides): one compiled kernel per element size,
and bfloat16 works under the interpreter, which cannot compute in bfloat16.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from kernel_common import (INT_BY_SIZE, batch_chunks, check_transpose_args, check_variant, interpreting, output,
                           rows_aligned16)
from kernel_common.plans import Plan, PlanCache
from triton_impl._launch import TritonLaunch

DTYPES = (torch.float16, torch.bfloat16, torch.float32, torch.float64, torch.int32, torch.int8)


# ---------------------------------------------------------------------------------------------
# Configs: (BLOCK_R, BLOCK_C, num_warps) for the blocked kernel, by element size and alignment.
# Chosen by tools/sweep_transpose_triton.py on an H200, as a share of device copy (tiles in row
# order, before they went down the columns): fp32 16384^2: 64x64/w16 0.951 (64x64/w4 0.936);
# fp16: 128x128/w8 0.944 (64x64/w8 0.878); fp64 8192x16384: 32x128/w16 0.951. Rows not 16-byte
# aligned, swept again with tiles down the columns (session 7): fp32 12345x6789 128x32/w8 0.846
# (128x32/w16 0.815), fp16 32x64/w8 0.585 (128x32/w16 0.53). Load/store cache hints (.cg, .cs,
# .wt) moved nothing (< 0.5%).
# ---------------------------------------------------------------------------------------------
_ALIGNED_CONFIGS = {1: (128, 128, 8), 2: (128, 128, 8), 4: (64, 64, 16), 8: (32, 128, 16)}  # 1: not swept
_UNALIGNED_CONFIGS = {2: (32, 64, 8), 4: (128, 32, 8)}  # 1 and 8: not swept, (128, 32, 16)


def _blocked_config(R: int, C: int, itemsize: int, aligned: bool):
    """``aligned``: every input and output row starts on a 16-byte boundary."""
    if R * C <= 64 * 64:
        return 32, 32, 2          # tiny: one or a few programs; small tiles waste fewer lanes
    return _ALIGNED_CONFIGS[itemsize] if aligned else _UNALIGNED_CONFIGS.get(itemsize, (128, 32, 16))


# ---------------------------------------------------------------------------------------------
# Kernels
# ---------------------------------------------------------------------------------------------
@triton.jit
def _batch_matrix(a_ptr, out_ptr, R, C, stride_ab, IN_HINT: tl.constexpr = 1, OUT_HINT: tl.constexpr = 1):
    """This program's matrix of a batch (grid axis 1; the launcher splits batches past 65535)."""
    b = tl.program_id(1).to(tl.int64)
    a_off, out_off = b * stride_ab, b * R * C
    if IN_HINT > 1:
        a_off = tl.multiple_of(a_off, IN_HINT)
    if OUT_HINT > 1:
        out_off = tl.multiple_of(out_off, OUT_HINT)
    return a_ptr + a_off, out_ptr + out_off


@triton.jit
def _transpose_per_row_kernel(
    # Pointers
    a_ptr, out_ptr,
    # Sizes
    R, C,
    # Strides
    stride_ab, stride_ar, stride_ac,
    # Meta-parameters
    BLOCK_C: tl.constexpr,
):
    """No tiling: one program per input row walks the row in chunks. Loads along the row are
    coalesced; each stored element lands in a different output row, R elements apart."""
    a_ptr, out_ptr = _batch_matrix(a_ptr, out_ptr, R, C, stride_ab)
    r = tl.program_id(0).to(tl.int64)
    for c0 in range(0, C, BLOCK_C):
        offs_c = c0 + tl.arange(0, BLOCK_C).to(tl.int64)
        mask_c = offs_c < C
        vals = tl.load(a_ptr + r * stride_ar + offs_c * stride_ac, mask=mask_c)
        tl.store(out_ptr + offs_c * R + r, vals, mask=mask_c)


@triton.jit
def _transpose_blocked_kernel(
    # Pointers
    a_ptr, out_ptr,
    # Sizes
    R, C,
    # Strides
    stride_ab, stride_ar, stride_ac,
    # Meta-parameters
    BLOCK_R: tl.constexpr, BLOCK_C: tl.constexpr, IN_HINT: tl.constexpr, OUT_HINT: tl.constexpr,
):
    """One BLOCK_R x BLOCK_C tile per program: a 2-D block load along rows, ``tl.trans`` (the
    compiler routes the layout change through shared memory), a 2-D block store along the
    output's rows. Both global accesses are coalesced. IN_HINT / OUT_HINT: elements of a 16-byte
    vector when the host knows input rows (stride, length, batch stride) / output rows (R) are
    whole vectors, else 1."""
    a_ptr, out_ptr = _batch_matrix(a_ptr, out_ptr, R, C, stride_ab, IN_HINT, OUT_HINT)
    # -- map the program id to a tile, numbered down the columns: the programs in flight write long
    # runs of the same output rows. Grid axis 0 allows 2^31 - 1 tiles (axes 1 and 2 only 65535) --
    pid = tl.program_id(0)
    tiles_r = tl.cdiv(R, BLOCK_R)
    pid_r = pid % tiles_r
    pid_c = pid // tiles_r
    # 64-bit offsets: R x C may pass 2^31 elements
    offs_r = pid_r.to(tl.int64) * BLOCK_R + tl.arange(0, BLOCK_R)
    offs_c = pid_c.to(tl.int64) * BLOCK_C + tl.arange(0, BLOCK_C)
    # The JIT knows an extent or stride is a whole number of 16-byte vectors only when it is a
    # multiple of 16 elements; the hints say so for the rest (a 1000-column fp16 batch went
    # 2 bytes at a time): row starts divisible, masks constant over a vector.
    row_starts = offs_r * stride_ar
    mask = (offs_r[:, None] < R) & (offs_c[None, :] < C)
    if IN_HINT > 1:
        row_starts = tl.multiple_of(row_starts, IN_HINT)
        mask = tl.max_constancy(mask, [1, IN_HINT])
    tile = tl.load(a_ptr + row_starts[:, None] + offs_c[None, :] * stride_ac, mask=mask)

    # -- write back: out[c, r] at c * R + r --
    out_starts = offs_c * R
    if OUT_HINT > 1:
        out_starts = tl.multiple_of(out_starts, OUT_HINT)
        out_mask = tl.max_constancy((offs_c[:, None] < C) & (offs_r[None, :] < R), [1, OUT_HINT])
    else:  # (the transposed load mask: a mask of its own cost 0.58 -> 0.53 of copy at 12345x6789 fp16)
        out_mask = tl.trans(mask)
    tl.store(out_ptr + out_starts[:, None] + offs_r[None, :], tl.trans(tile), mask=out_mask)


# ---------------------------------------------------------------------------------------------
# Launchers and the public wrapper
# ---------------------------------------------------------------------------------------------
VARIANTS = ("blocked", "per_row")  # the default first


def plan_launch(variant: str, R: int, C: int, itemsize: int, aligned: bool, batch: int = 1,
                hints: tuple[int, int] = (1, 1)) -> TritonLaunch:
    """The kernel, grid and meta-parameters of a variant for ``batch`` matrices (grid axis 1, at
    most 65535); ``aligned`` as ``_blocked_config``; ``hints``: the kernel's (IN_HINT, OUT_HINT)."""
    bits = INT_BY_SIZE[itemsize]
    if variant == "per_row":
        return TritonLaunch(_transpose_per_row_kernel, (R, batch), dict(BLOCK_C=min(1024, triton.next_power_of_2(C))),
                            view_as=bits)
    block_r, block_c, num_warps = _blocked_config(R, C, itemsize, aligned)
    return TritonLaunch(_transpose_blocked_kernel, (triton.cdiv(R, block_r) * triton.cdiv(C, block_c), batch),
                        dict(BLOCK_R=block_r, BLOCK_C=block_c, IN_HINT=hints[0], OUT_HINT=hints[1]),
                        dict(num_warps=num_warps), view_as=bits)


def alignment(a) -> tuple[bool, tuple[int, int]]:
    """(aligned, hints) of a 2-D or 3-D input: every input and output row starts on 16 bytes (the
    config table's key), and the blocked kernel's (IN_HINT, OUT_HINT)."""
    *_, R, C = a.shape
    vec = 16 // a.element_size()  # elements a 16-byte vector
    rows_in = rows_aligned16(a)
    return rows_in and R % vec == 0, (vec if rows_in and C % vec == 0 else 1, vec if R % vec == 0 else 1)


def pick_variant(a) -> str:
    """What ``variant=None`` runs: the blocked tile, fastest on every large shape measured."""
    return VARIANTS[0]


def _plan(inputs, variant, out) -> Plan:
    """Validate a call and plan it (once per distinct metadata)."""
    (a,) = inputs
    shape = check_transpose_args(a, dtypes=DTYPES)
    check_variant(variant, VARIANTS, "transpose")
    output(out, shape, {"a": a}, need_cuda=not interpreting())
    if a.numel() == 0:
        return Plan(shape, a.dtype, a.device, lambda a, out: None, ("a",))
    *_, R, C = a.shape
    sb, sr, sc = a.stride() if a.dim() == 3 else (0, *a.stride())
    es = a.element_size()
    aligned, hints = alignment(a)
    B = a.shape[0] if a.dim() == 3 else 1
    chunks = [(b0, nb, plan_launch(variant or pick_variant(a), R, C, es, aligned, nb, hints))
              for b0, nb in batch_chunks(B)]
    if len(chunks) == 1:
        launch = chunks[0][2]
        return Plan(shape, a.dtype, a.device, lambda a, out: launch(a, out, R, C, sb, sr, sc), ("a",))

    def run(a, out):  # (past 65535 matrices: a launch per 65535, on views of a and out)
        for b0, nb, launch in chunks:
            launch(a[b0:b0 + nb], out[b0:b0 + nb], R, C, sb, sr, sc)
    return Plan(shape, a.dtype, a.device, run, ("a",))


_PLANS = PlanCache(_plan)


def transpose(a: torch.Tensor, *, variant: str | None = None, out: torch.Tensor | None = None):
    """Return ``a.T`` as a new contiguous (C, R) tensor (or write it into ``out``); a batch
    (B, R, C) gives (B, C, R), each matrix transposed.

    ``a``: a 2-D or 3-D CUDA tensor (a CPU tensor under ``TRITON_INTERPRET=1``) of float16,
    bfloat16, float32, float64, int32 or int8, any strides. ``variant=None`` runs ``blocked``.
    """
    return _PLANS((a,), variant, out)
