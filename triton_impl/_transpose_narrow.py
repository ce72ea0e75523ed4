"""Triton transpose's ``narrow`` kernel for a few rows whose other side is long: the output one
flat run a program, moved in 16-byte vectors, the layout change made in registers (``tl.gather``).
``triton_impl/_transpose.py`` plans it (``_narrow``)."""

from __future__ import annotations

import triton
import triton.language as tl


@triton.jit
def _transpose_narrow_flat_kernel(
    a_ptr, out_ptr, R, C, stride_ab, stride_ar, stride_ac,
    NR: tl.constexpr, RP: tl.constexpr, BLOCK_C: tl.constexpr,
):
    """narrow for NR (= R) rows, at most 16, whose output rows are not whole 16-byte vectors: a
    program's BLOCK_C columns are one contiguous run of the output, NR * BLOCK_C elements. The tile
    loads along a's rows (RP = NR rounded up to a power of two), is put in the run's order in
    registers (``tl.gather``) and stored flat, in 16-byte vectors: stored row by row, 13-element
    rows of fp16 went 2 bytes a store (0.59 of a copy's bandwidth at 13 x 3541196, H200; 0.84 so).
    Not for 5-8 rows (RP = 8): 6 x 1630896 fp16 ran 4x slower so, 3 of 7 such shapes lost, the cause
    not yet found (docs/decisions/006-transpose-defaults.md)."""
    c0 = tl.program_id(0).to(tl.int64) * BLOCK_C
    offs_r = tl.arange(0, RP)
    offs_c = c0 + tl.arange(0, BLOCK_C)
    tile = tl.load(a_ptr + offs_r[:, None] * stride_ar + offs_c[None, :] * stride_ac,
                   mask=(offs_r[:, None] < NR) & (offs_c[None, :] < C))
    flat = tl.reshape(tl.trans(tile), [BLOCK_C * RP])  # element (c, r) at c * RP + r
    e = tl.arange(0, BLOCK_C * RP)  # the run's element c * NR + r
    vals = tl.gather(flat, tl.where(e < BLOCK_C * NR, (e // NR) * RP + e % NR, 0), 0)
    if c0 + BLOCK_C <= C:  # (a bound the compiler knows: whole vectors)
        tl.store(out_ptr + c0 * NR + e, vals, mask=e < BLOCK_C * NR)
    else:
        tl.store(out_ptr + c0 * NR + e, vals, mask=e < (C - c0) * NR)

