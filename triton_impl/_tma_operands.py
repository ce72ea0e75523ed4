"""The operands as the TMA kernels read them: what a descriptor needs of a tensor (rows of 16
bytes, unit stride along one side), and the copies that give an operand that layout when it lacks
it: padded rows in one launch (``_PadCopies``) or a change of major order (``_LayoutCopy``).
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from kernel_common import base_phase, cdiv, matmul_out_dtype, padded, tma_rows
from kernel_common.plans import PlanOnce, per_plan
from triton_impl._launch import TritonLaunch
from triton_impl._transpose import _PLANS as _TRANSPOSE_PLANS


@triton.jit
def _copy_tile(src, dst, rows, cols, s_row, s_col, d_row, tile, BLOCK_R: tl.constexpr, BLOCK_C: tl.constexpr):
    """Tile ``tile`` (row-major order) of ``_pad_copy_kernel``'s copy of src into dst."""
    tiles_c = tl.cdiv(cols, BLOCK_C)
    r = (tile // tiles_c).to(tl.int64) * BLOCK_R + tl.arange(0, BLOCK_R)
    c = (tile % tiles_c).to(tl.int64) * BLOCK_C + tl.arange(0, BLOCK_C)
    mask = (r[:, None] < rows) & (c[None, :] < cols)
    v = tl.load(src + r[:, None] * s_row + c[None, :] * s_col, mask=mask)
    tl.store(dst + r[:, None] * d_row + c[None, :], v, mask=mask)


@triton.jit
def _pad_copy_kernel(src0, dst0, rows0, cols0, s0_row, s0_col, d0_row,
                     src1, dst1, rows1, cols1, s1_row, s1_col, d1_row, tiles0,
                     BLOCK_R: tl.constexpr, BLOCK_C: tl.constexpr):
    """Two copies in one launch (the programs below ``tiles0`` make the first): each of a strided
    (rows, cols) array into a row-major one of row stride d_row, where a descriptor reads it."""
    tile = tl.program_id(0)
    if tile < tiles0:
        _copy_tile(src0, dst0, rows0, cols0, s0_row, s0_col, d0_row, tile, BLOCK_R, BLOCK_C)
    else:
        _copy_tile(src1, dst1, rows1, cols1, s1_row, s1_col, d1_row, tile - tiles0, BLOCK_R, BLOCK_C)


# ---- TMA eligibility: what a descriptor needs --------------------------------------------------
@per_plan  # (a plan asks about each operand about seven times)
def _tma_transposed(t) -> bool | None:
    """How a descriptor reads the 2-D ``t``: False as it is (unit stride along a row), True
    through its transpose (unit stride along a column), None if TMA cannot (``tma_rows`` of
    neither)."""
    if tma_rows(t):
        return False
    if tma_rows(t.t()):
        return True
    return None


def _rows_fit(N: int, element_size: int, out) -> bool:
    """Can a descriptor write c (contiguous, N wide) where it lies: rows a multiple of 16 bytes,
    a 16-byte aligned base?"""
    return (N * element_size) % 16 == 0 and (out is None or base_phase(out) == 0)


def _c_size(a) -> int:
    """Bytes of an element of c (int8 products are int32)."""
    return matmul_out_dtype(a.dtype).itemsize


def _tma_ok(a, b, out) -> bool:
    """Do descriptors read a and b and write c where they lie? (The TMA variants copy what they
    cannot; ``variant=None`` then runs ``grouped`` instead.)"""
    return (_rows_fit(b.shape[1], _c_size(a), out)
            and _tma_transposed(a) is not None and _tma_transposed(b) is not None)


class _LayoutCopy:
    """Copies of an operand of t's metadata (R, C) laid out row-major, or column-major (the .t() of
    a row-major (C, R): a K-major b), rows padded to 16 bytes; ``meta``: the copy's layout on the
    meta device. A change of layout runs this package's transpose (torch's copy of a transposed
    view ran at a third of its speed, H200), its plan looked up on the first call and kept: the
    public call's key and checks cost a matmul with b = W.t() 4-15 us of host time a call (H100
    host, float32, 1024x1024x1024 to 16x4096x4096; docs/decisions/012-triton-matmul-selection.md)."""

    def __init__(self, t, kmajor: bool):
        R, C = t.shape
        self.kmajor, self.rows, self.cols, self.dtype = kmajor, *((C, R) if kmajor else (R, C)), t.dtype
        self.meta = self._laid_out(padded(self.rows, self.cols, t.dtype, "meta"))
        self._transposed = PlanOnce(_TRANSPOSE_PLANS)  # (one key: the operand's metadata is the matmul plan's)

    def _laid_out(self, buf):
        return buf.t() if self.kmajor else buf

    def __call__(self, t) -> torch.Tensor:
        buf = padded(self.rows, self.cols, self.dtype, t.device)
        src = t.t() if self.kmajor else t
        if buf.is_contiguous() and src.stride(0) == 1:  # src is a transposed view: transpose it back
            self._transposed(src.t(), out=buf)  # (buf is new: no alias to check)
        else:
            buf.copy_(src)
        return self._laid_out(buf)


def _unaligned(a, b) -> bool:
    """Does no descriptor read a or b where it lies (rows off 16 bytes, or no unit stride)?"""
    return _tma_transposed(a) is None or _tma_transposed(b) is None


def _major(t) -> bool:
    """Is ``t`` (2-D) laid out along its columns (a column-major a, a K-major b = W.t())? As a
    descriptor reads it (``_tma_transposed``), or where none can, by its strides."""
    transposed = _tma_transposed(t)
    return transposed if transposed is not None else t.stride(0) < t.stride(1)


class _PadCopies:
    """Copies of a and / or b (None: not copied) with rows padded to 16 bytes, each in its own
    major order (``_major``), into one allocation. Small ones (up to SMALL_BYTES) go in one launch
    of ``_pad_copy_kernel``: two torch copies and allocations cost ~50 us of host time a call (H100
    host, 4097x4095x129), more than their kernels; larger ones through torch's copy, which moved a
    33.5 MB operand ~25 us faster than this kernel (docs/decisions/012-triton-matmul-selection.md). ``meta``: the
    copies' layouts, on the meta device."""
    BLOCK_R, BLOCK_C = 32, 128
    SMALL_BYTES = 4 << 20

    def __init__(self, a, b):
        self.parts = []  # (index, transposed, rows, cols, row stride, offset, small) of each copy
        offset, self.meta = 0, [None, None]
        for i, t in enumerate((a, b)):
            if t is None:
                continue
            transposed = _major(t)
            rows, cols = t.shape[::-1] if transposed else t.shape
            view = padded(rows, cols, t.dtype, "meta")
            small = rows * cols * t.element_size() <= self.SMALL_BYTES
            self.parts.append((i, transposed, rows, cols, view.stride(0), offset, small))
            self.meta[i] = view.t() if transposed else view
            offset += rows * view.stride(0)
        self.elements = offset
        self.tiles = [cdiv(rows, self.BLOCK_R) * cdiv(cols, self.BLOCK_C)
                      for _, _, rows, cols, _, _, small in self.parts if small]
        self.launch = TritonLaunch(_pad_copy_kernel, (sum(self.tiles),), dict(BLOCK_R=self.BLOCK_R, BLOCK_C=self.BLOCK_C),
                                   dict(num_warps=4)) if self.tiles else None

    def __call__(self, a, b) -> tuple:
        """The copies of this call's a and b (None where not copied)."""
        if not self.parts:
            return None, None
        src = (a, b)
        buf = torch.empty(self.elements, dtype=a.dtype, device=a.device)
        out, args = [None, None], []
        for i, transposed, rows, cols, ld, offset, small in self.parts:
            y = src[i].t() if transposed else src[i]
            dst = buf.as_strided((rows, cols), (ld, 1), offset)
            out[i] = dst.t() if transposed else dst
            if small:
                args += [y, dst, rows, cols, y.stride(0), y.stride(1), ld]
            else:
                dst.copy_(y)
        if self.launch is not None:
            if len(args) == 7:
                args += args[:2] + [0, 0, 0, 0, 0]  # (no second copy: no programs for it)
            self.launch(*args, self.tiles[0])
        return tuple(out)
