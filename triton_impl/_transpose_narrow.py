"""Triton transpose's ``narrow`` kernels for a side of at most 32 whose other side is long: the
output (or the input) one flat run a program, moved in 16-byte vectors, the layout change made in
registers (``tl.gather``). ``triton_impl/_transpose.py`` plans them (``_narrow``)."""

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


@triton.jit
def _transpose_narrow_tall_kernel(
    a_ptr, out_ptr, R, C, stride_ab, stride_ar, stride_ac,
    CP: tl.constexpr, RUN: tl.constexpr, FLAT: tl.constexpr, V: tl.constexpr,
):
    """narrow for a contiguous matrix of C columns (CP: C rounded up to a power of two), fewer
    than its rows, both bases on 16 bytes (CUDA's narrow_flat_tall): a program's input is one flat
    run of its rows r0 - V .. r0 + BR (BR = RUN - V; V: elements a 16-byte vector), loaded in
    16-byte vectors; output row c takes the program's share of its segment from c R + r0 rounded
    down to a whole vector, to where the next program's share starts. So a row's shares split at
    whole vectors and are stored in 16-byte vectors; a share reaches up to V - 1 rows before r0,
    hence the run's start. The tile goes into the shares' order in registers (``tl.gather``).
    Programs at the matrix's first and last rows mask element by element."""
    BR: tl.constexpr = RUN - V
    r0 = tl.program_id(0).to(tl.int64) * BR
    n = R.to(tl.int64) * C  # (R x C may pass 2^31 elements)
    start = (r0 - V) * C  # the run's first element
    f = tl.arange(0, FLAT)
    c = tl.arange(0, CP)
    j = tl.arange(0, RUN)
    row_at = c.to(tl.int64) * R  # output row c's first element
    first = (row_at + r0) // V * V  # [CP]: the share's first element in out, and its end
    end = (row_at + r0 + BR) // V * V
    q = first[:, None] + j[None, :]  # [CP, RUN]: out's elements, and the input rows they hold
    r = q - row_at[:, None]
    share = (c < C)[:, None] & (j[None, :] < (end - first)[:, None])
    at = tl.where(share, (r - (r0 - V)) * C + c[:, None], 0).to(tl.int32)  # (in the run: 1 .. RUN * C - 1)
    if (r0 >= V) & (r0 + BR <= R):  # (all in the matrix: the run's end masked at whole vectors)
        run = tl.load(a_ptr + start + f, mask=f < RUN * C)
        vals = tl.reshape(tl.gather(run, tl.reshape(at, [CP * RUN]), 0), [CP, RUN])
        tl.store(out_ptr + q, vals, mask=share)
    else:
        g = start + f
        run = tl.load(a_ptr + g, mask=(g >= 0) & (g < n), other=0)
        vals = tl.reshape(tl.gather(run, tl.reshape(at, [CP * RUN]), 0), [CP, RUN])
        tl.store(out_ptr + q, vals, mask=share & (r >= 0) & (r < R))
