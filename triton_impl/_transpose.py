"""Matrix transpose in Triton: out (C, R) contiguous = a (R, C)^T, any strides, any shape, and
a batch of them: (B, R, C) -> (B, C, R).

Transpose moves bits, so the wrapper reinterprets 2-, 4- and 8-byte elements as int16, int32 and
int64 (``Tensor.view(dtype)`` is free and keeps strides): one compiled kernel per element size,
and bfloat16 works under the interpreter, which cannot compute in bfloat16.
"""

from __future__ import annotations

import math

import torch
import triton
import triton.language as tl

from kernel_common import (DEFAULT_SM_COUNT, INT_BY_SIZE, base_phase, batch_chunks, cdiv, check_transpose_args,
                           check_variant, interpreting, check_output, rows_aligned16)
from kernel_common.catalog import Rule, always, first_rule, names, shown_at
from kernel_common.plans import Plan, PlanCache, copy_plan, is_plain_copy, transpose_as_copy
from triton_impl._arch import SM_90
from triton_impl._launch import TritonLaunch
from triton_impl._transpose_narrow import _transpose_narrow_flat_kernel
from triton_impl.catalog import RECORDS

DTYPES = (torch.float16, torch.bfloat16, torch.float32, torch.float64, torch.int32, torch.int8)


# ---------------------------------------------------------------------------------------------
# Configs: (BLOCK_R, BLOCK_C, num_warps) for the blocked kernel, by element size and alignment.
# Chosen by lab/sweep_transpose_triton.py on an H200, as a share of device copy (tiles in row
# order, before they went down the columns): fp32 16384^2: 64x64/w16 0.951 (64x64/w4 0.936);
# fp16: 128x128/w8 0.944 (64x64/w8 0.878); fp64 8192x16384: 32x128/w16 0.951. Rows not 16-byte
# aligned, swept again with tiles down the columns (docs/decisions/006-transpose-defaults.md): fp32 12345x6789 128x32/w8 0.846
# (128x32/w16 0.815), fp16 32x64/w8 0.585 (128x32/w16 0.53). Load/store cache hints (.cg, .cs,
# .wt) moved nothing (< 0.5%). On an H100 (256- and 512-row tiles added), fp32
# 12345x6789 / 4097x4095 / 6789x12345: 128x32/w16 0.899 / 0.901 / 0.904, 128x32/w8 0.894 / 0.886 /
# 0.895, 256x32/w4 0.903 / 0.886 / 0.905; fp16 32x64/w8 still best (0.736 / 0.694 / 0.753).
# ---------------------------------------------------------------------------------------------
_ALIGNED_CONFIGS = {1: (128, 128, 8), 2: (128, 128, 8), 4: (64, 64, 16), 8: (32, 128, 16)}  # 1: not swept
_UNALIGNED_CONFIGS = {2: (32, 64, 8), 4: (128, 32, 16)}  # 1 and 8 (not swept) take 4-byte tiles
WORDS_CONFIG = (128, 64, 4)  # the words kernel's (BLOCK_R, BLOCK_C, num_warps)
# words' tiles go down the columns in bands of this many columns of tiles (_tile_in_bands; blocked's
# in bands of one)
WORDS_BAND = SM_90["words_band"]
# rows at least (an output row's length) for words where the input's rows are off 16 bytes too: blocked
# leads on shorter ones (H100: 0.39-0.58 of the copy ceiling against words' 0.24-0.51 at 133-251 rows)
WORDS_MIN_ROWS = SM_90["words_min_rows"]
# the word-pairs kernel's, by element size (H100 sweeps: 2 bytes, 128 x 64 ran 0.73-0.79;
# 4 bytes, docs/decisions/006-transpose-defaults.md)
WORD_PAIRS_CONFIG = {2: (128, 32, 4), 4: (128, 64, 8)}


def _blocked_config(R: int, C: int, itemsize: int, aligned: bool):
    """``aligned``: every input and output row starts on a 16-byte boundary."""
    if R * C <= 64 * 64:
        return 32, 32, 2          # tiny: one or a few programs; small tiles waste fewer lanes
    return _ALIGNED_CONFIGS[itemsize] if aligned else _UNALIGNED_CONFIGS.get(itemsize, _UNALIGNED_CONFIGS[4])


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
def _tile_in_bands(pid, tiles_r, tiles_c, GROUP: tl.constexpr):
    """Tile (row, column) of program ``pid``: tiles numbered down the columns, so the programs in
    flight write long runs of the same output rows, in bands of GROUP columns of tiles, across a
    band before down it, so that they also read GROUP tiles' width of each input row (a tall
    matrix, more row tiles than programs in flight, would have them all read one tile's width)."""
    band = GROUP * tiles_r
    first = pid // band * GROUP
    width = tl.minimum(tiles_c - first, GROUP)
    inside = pid % band
    return inside // width, first + inside % width


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
    GROUP: tl.constexpr,
):
    """One BLOCK_R x BLOCK_C tile per program: a 2-D block load along rows, ``tl.trans`` (the
    compiler routes the layout change through shared memory), a 2-D block store along the
    output's rows. Both global accesses are coalesced. IN_HINT / OUT_HINT: elements of a 16-byte
    vector when the host knows input rows (stride, length, batch stride) / output rows (R) are
    whole vectors, else 1."""
    a_ptr, out_ptr = _batch_matrix(a_ptr, out_ptr, R, C, stride_ab, IN_HINT, OUT_HINT)
    # -- map the program id to a tile, numbered down the columns: the programs in flight write long
    # runs of the same output rows. Grid axis 0 allows 2^31 - 1 tiles (axes 1 and 2 only 65535) --
    pid_r, pid_c = _tile_in_bands(tl.program_id(0), tl.cdiv(R, BLOCK_R), tl.cdiv(C, BLOCK_C), GROUP)
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


@triton.jit
def _transpose_words_kernel(
    # Pointers
    a_ptr, out_ptr,
    # Sizes
    R, C,
    # Strides
    stride_ab, stride_ar, stride_ac,
    # Elements out_ptr lies past a 4-byte boundary
    out_phase,
    # Meta-parameters
    BLOCK_R: tl.constexpr, BLOCK_C: tl.constexpr, PACK: tl.constexpr, GROUP: tl.constexpr,
):
    """blocked with its output rows stored in 4-byte words (CUDA's smem_tiled_words): a word holds
    PACK = 4 / element size consecutive elements of an output row, the same column of PACK
    consecutive input rows, so the layout change and the stores move words, not 2-byte elements.
    An output row that starts p elements past a word boundary (p alternates between rows when R is
    odd) packs tile rows PACK * k - p ... into its word k; the partial words at the two ends of its
    segment are stored element by element. 2-byte elements load three tiles of whole rows and pick
    by p (0.754 of copy at 12345x6789 fp16, H100; gathering each column's rows by its own p, as
    1-byte elements still do, ran 0.59-0.63)."""
    b = tl.program_id(1).to(tl.int64)
    tile_r, tile_c = _tile_in_bands(tl.program_id(0), tl.cdiv(R, BLOCK_R), tl.cdiv(C, BLOCK_C), GROUP)
    r0 = tile_r.to(tl.int64) * BLOCK_R
    offs_c = tile_c.to(tl.int64) * BLOCK_C + tl.arange(0, BLOCK_C)
    mask_c = offs_c < C
    n = tl.minimum(R - r0, BLOCK_R).to(tl.int32)  # rows of this tile (int32 from here: offsets within it)
    o = out_phase + b * R * C + offs_c * R + r0     # out[b, c, r0], in elements from a word boundary
    p = (o % PACK).to(tl.int32)                     # its phase within a word, per output row
    k = tl.arange(0, BLOCK_R // PACK)
    rel = PACK * k[:, None] - p[None, :]            # [words, columns]: each word's first row, from r0
    # 1-D address parts, added once per element (a 2-D product of 64-bit rows and strides was the
    # bulk of a first build's instructions)
    a_tile = a_ptr + b * stride_ab + r0 * stride_ar
    rows_part = (PACK * k).to(tl.int64) * stride_ar
    cols_part = offs_c * stride_ac - p.to(tl.int64) * stride_ar
    first = tl.maximum(-r0, -PACK).to(tl.int32)     # rows above the tile that exist (loaded, never stored)
    if PACK == 1:  # 4- and 8-byte elements: a word is an element (blocked, tiles of BLOCK_R x BLOCK_C)
        word = tl.load(a_tile + rows_part[:, None] + cols_part[None, :], mask=(rel < n) & mask_c[None, :])
        out_words = out_ptr
    elif PACK == 2:
        # three tiles of whole input rows (2k - 1, 2k, 2k + 1), each lane's row shared by the warp,
        # and the pairs picked by the column's phase: p = 0 pairs (2k, 2k + 1), p = 1 (2k - 1, 2k)
        col = offs_c[None, :] * stride_ac
        even = a_tile + rows_part[:, None] + col
        row2 = 2 * k[:, None]
        x_e = tl.load(even, mask=(row2 < n) & mask_c[None, :], other=0).to(tl.int32) & 0xFFFF
        x_o = tl.load(even + stride_ar, mask=(row2 + 1 < n) & mask_c[None, :], other=0).to(tl.int32) & 0xFFFF
        x_p = tl.load(even - stride_ar, mask=(row2 - 1 >= first) & (row2 - 1 < n) & mask_c[None, :],
                      other=0).to(tl.int32)
        word = tl.where(p[None, :] == 0, x_e | (x_o << 16), (x_p & 0xFFFF) | (x_e << 16))
        out_words = (out_ptr - out_phase).to(tl.pointer_type(tl.int32))
    else:
        word = tl.zeros((BLOCK_R // PACK, BLOCK_C), tl.int32)
        for e in tl.static_range(PACK):
            x = tl.load(a_tile + e * stride_ar + rows_part[:, None] + cols_part[None, :],
                        mask=(rel + e >= first) & (rel + e < n) & mask_c[None, :], other=0)
            word |= (x.to(tl.int32) & ((1 << (32 // PACK)) - 1)) << (e * (32 // PACK))
        out_words = (out_ptr - out_phase).to(tl.pointer_type(tl.int32))
    full = (rel >= 0) & (rel + PACK <= n) & mask_c[None, :]
    w_idx = (o - p)[None, :] // PACK + k[:, None]
    tl.store(out_words + tl.trans(w_idx), tl.trans(word), mask=tl.trans(full))
    # the partial words, element by element: a row's head before its first word boundary (p > 0),
    # and its tail past the last whole word
    # per column: a scalar compared with a scalar made a mask the interpreter rejects
    r_last = n - 1 + tl.zeros_like(p)
    head_end = tl.where(p > 0, PACK - p, 0)
    w_end = PACK * ((n + p) // PACK) - p
    a_b = a_ptr + b * stride_ab
    for e in tl.static_range(PACK - 1):
        head = r0 + e
        _copy_column(a_b, out_ptr, b * R * C + offs_c * R, head, offs_c, stride_ar, stride_ac,
                     mask_c & (e < head_end) & (e <= r_last))
        tail = w_end + e
        _copy_column(a_b, out_ptr, b * R * C + offs_c * R, r0 + tail, offs_c, stride_ar, stride_ac,
                     mask_c & (tail >= head_end) & (tail >= 0) & (tail <= r_last))


@triton.jit
def _transpose_word_pairs_kernel(
    # Pointers
    a_ptr, out_ptr,
    # Sizes
    R, C,
    # Strides (stride_ac: 1)
    stride_ab, stride_ar, stride_ac,
    # Elements out_ptr / a_ptr lie past a word (two elements) boundary
    out_phase, in_phase,
    # Meta-parameters
    BLOCK_R: tl.constexpr, BLOCK_C: tl.constexpr,
    # Phases (0 or 1: elements past a word boundary), the same in every tile of the launch, as tiles
    # start at even rows and columns: of its even and odd input rows at an even column (Q_E, Q_O),
    # and of its output rows of even and odd columns at an even row (P_E, P_O)
    Q_E: tl.constexpr, Q_O: tl.constexpr, P_E: tl.constexpr, P_O: tl.constexpr,
    HB: tl.constexpr,  # an element's bits, 16 or 32: a word is two elements, 4 or 8 bytes
    GROUP: tl.constexpr,  # columns of tiles a band (_tile_in_bands)
):
    """words for 2- and 4-byte elements in unit-stride rows, loading words of two elements as well
    as storing them (4-byte elements: 8-byte words, against blocked's 4-byte accesses). A word
    of input row r holds columns 2w - q_r and 2w + 1 - q_r (q_r: the row's phase); an output word
    of column c holds rows 2k - p_c and 2k + 1 - p_c of the tile. So a column of phase 1 owns the
    tile's rows r0 - 1 ... r0 + BLOCK_R - 2, and every output word of an interior tile is whole:
    no element-wise ends. Rows of one parity share a phase, so each output word is two halves of
    words loaded from two row tiles (three or four such tiles a program)."""
    b = tl.program_id(1).to(tl.int64)
    # (R + 1: a phase-1 column's row R - 1 falls in the tile past R)
    tile_r, tile_c = _tile_in_bands(tl.program_id(0), tl.cdiv(R + 1, BLOCK_R), tl.cdiv(C, BLOCK_C), GROUP)
    r0 = tile_r.to(tl.int64) * BLOCK_R
    c0 = tile_c.to(tl.int64) * BLOCK_C
    k = tl.arange(0, BLOCK_R // 2)
    w = tl.arange(0, BLOCK_C // 2)
    cols = tl.arange(0, BLOCK_C)
    WT: tl.constexpr = tl.int32 if HB == 16 else tl.int64
    M: tl.constexpr = (1 << HB) - 1
    a_words = (a_ptr - in_phase).to(tl.pointer_type(WT))
    start = in_phase + b * stride_ab + c0   # column c0 of row 0, in elements from a word boundary
    # output: word k of column c0 + c at o0 / 2 + col_word[c] + k (32-bit offsets within the tile;
    # the host keeps BLOCK_C * R and BLOCK_R * stride_ar under 2^31)
    o0 = out_phase + b * R * C + c0 * R + r0 - P_E
    p = tl.where(cols % 2 == 0, P_E, P_O)
    col_word = (cols * R - p + P_E) // 2
    dst = (out_ptr - out_phase).to(tl.pointer_type(WT)) + o0 // 2 + col_word[:, None] + k[None, :]
    if (r0 >= 1) & (r0 + BLOCK_R <= R) & (c0 > 0) & (c0 + BLOCK_C + 2 <= C):
        even = _word_pairs(a_words, start, r0, k, w, R, C - c0, stride_ar, -1 - c0, (0, 0), P_E, 0, Q_E, Q_O, False, HB)
        odd = _word_pairs(a_words, start, r0, k, w, R, C - c0, stride_ar, -1 - c0, (0, 0), P_O, 1, Q_E, Q_O, False, HB)
        tl.store(dst, tl.trans(tl.reshape(tl.join(even, odd), (BLOCK_R // 2, BLOCK_C))))
    else:
        # the matrix's first element in a word's high half, its last in a low half
        a_b = a_ptr + b * stride_ab
        ends = ((tl.load(a_b).to(WT) & M) << HB, tl.load(a_b + (R - 1) * stride_ar + C - 1).to(WT) & M)
        even = _word_pairs(a_words, start, r0, k, w, R, C - c0, stride_ar, -1 - c0, ends, P_E, 0, Q_E, Q_O, True, HB)
        odd = _word_pairs(a_words, start, r0, k, w, R, C - c0, stride_ar, -1 - c0, ends, P_O, 1, Q_E, Q_O, True, HB)
        word = tl.trans(tl.reshape(tl.join(even, odd), (BLOCK_R // 2, BLOCK_C)))
        lo = r0 + 2 * k[None, :] - p[:, None]  # [columns, words]: each word's low row
        in_c = (c0 + cols < C)[:, None]
        lo_ok = in_c & (lo >= 0) & (lo < R)
        hi_ok = in_c & (lo + 1 >= 0) & (lo + 1 < R)
        tl.store(dst, word, mask=lo_ok & hi_ok)
        # a word with one row in the matrix (its first or last): that half alone
        half = out_ptr.dtype.element_ty
        tl.store(_half_ptr(dst, half, 0), (word & M).to(half), mask=lo_ok & ~hi_ok)
        tl.store(_half_ptr(dst, half, 1), ((word >> HB) & M).to(half), mask=hi_ok & ~lo_ok)


@triton.jit
def _half_ptr(word_ptr, half: tl.constexpr, h: tl.constexpr):
    """The pointer (to ``half``) to half h (0 low, 1 high) of each word."""
    return word_ptr.to(tl.pointer_type(half)) + h


@triton.jit
def _row_words(a_words, start, r0, k, w, R, nc, stride_ar, col_before, ends, D: tl.constexpr, SHIFT: tl.constexpr,
               Q: tl.constexpr, HALF: tl.constexpr, MASKED: tl.constexpr, HB: tl.constexpr):
    """Half HALF (0 low, 1 high) of words w + SHIFT of rows r0 + 2k + D (phase Q), in the low HB
    bits of a word. ``nc``: the matrix's columns from the tile's first; ``col_before``: column -1,
    from the tile's first. Masked: only words with a row in the matrix and a column in it; the
    words of the matrix's first and last element that reach past it are taken from ``ends``."""
    row_word = (start + (r0 + D) * stride_ar) >> 1   # the word holding column -Q of row r0 + D
    offs = row_word + (k * stride_ar)[:, None] + (w + SHIFT)[None, :]
    ptrs = a_words + offs
    if MASKED:
        rows = r0 + 2 * k + D
        mask = ((rows >= 0) & (rows < R))[:, None] & (2 * (w + SHIFT) - Q < nc)[None, :]
        # a word with the matrix's first or last element and one outside it is not loaded (memory
        # past the matrix need not exist): the element comes from ``ends``, loaded once a program
        # (a per-word check against the input's ends took the kernel from 96 registers to 128 and
        # cost 20 points of copy; this one to 112)
        col = 2 * (w + SHIFT) - Q  # each word's low column, from the tile's first
        at_first = (rows == 0)[:, None] & (col == col_before)[None, :]
        at_last = (rows == R - 1)[:, None] & (col + 1 == nc)[None, :]
        x = tl.load(ptrs, mask=mask & ~at_first & ~at_last, other=0)
        x |= tl.where(at_first, ends[0], 0) | tl.where(at_last, ends[1], 0)
    else:
        x = tl.load(ptrs)
    M: tl.constexpr = (1 << HB) - 1
    return (x >> HB) & M if HALF == 1 else x & M


@triton.jit
def _word_pairs(a_words, start, r0, k, w, R, nc, stride_ar, col_before, ends, P: tl.constexpr, J: tl.constexpr,
                Q_E: tl.constexpr, Q_O: tl.constexpr, MASKED: tl.constexpr, HB: tl.constexpr):
    """[words, BLOCK_C / 2]: output words k of columns 2w + J (phase P), rows (2k - P, 2k + 1 - P):
    a row of phase q holds column 2w + J in half (q + J) % 2 of its word w + q * J."""
    D_LO: tl.constexpr = -P       # the rows' classes: D = 0 even rows (phase Q_E), +-1 odd (Q_O)
    D_HI: tl.constexpr = 1 - P
    Q_LO: tl.constexpr = Q_E if D_LO == 0 else Q_O
    Q_HI: tl.constexpr = Q_E if D_HI == 0 else Q_O
    lo = _row_words(a_words, start, r0, k, w, R, nc, stride_ar, col_before, ends, D_LO, Q_LO * J, Q_LO, (Q_LO + J) % 2,
                    MASKED, HB)
    hi = _row_words(a_words, start, r0, k, w, R, nc, stride_ar, col_before, ends, D_HI, Q_HI * J, Q_HI, (Q_HI + J) % 2,
                    MASKED, HB)
    return lo | (hi << HB)


@triton.jit
def _copy_column(a_ptr, out_ptr, out_rows, r, offs_c, stride_ar, stride_ac, mask):
    """Input row ``r`` (a scalar or one per column) into output rows starting at ``out_rows``."""
    x = tl.load(a_ptr + r * stride_ar + offs_c * stride_ac, mask=mask)
    tl.store(out_ptr + out_rows + r, x, mask=mask)


# ---------------------------------------------------------------------------------------------
# Launchers and the public wrapper
# ---------------------------------------------------------------------------------------------
VARIANTS = names(RECORDS, "transpose")  # the default first (triton_impl/catalog.py)


def _per_row(R, C, itemsize, aligned, batch, hints, phases) -> TritonLaunch:
    return TritonLaunch(_transpose_per_row_kernel, (R, batch), dict(BLOCK_C=min(1024, triton.next_power_of_2(C))),
                        view_as=INT_BY_SIZE[itemsize])


def _words(R, C, itemsize, aligned, batch, hints, phases) -> TritonLaunch:
    bits = INT_BY_SIZE[itemsize]
    if phases is not None:  # words of two elements loaded (``_word_phases``)
        block_r, block_c, num_warps = WORD_PAIRS_CONFIG[itemsize]
        return TritonLaunch(_transpose_word_pairs_kernel, (cdiv(R + 1, block_r) * cdiv(C, block_c), batch),
                            dict(BLOCK_R=block_r, BLOCK_C=block_c, **dict(zip(("Q_E", "Q_O", "P_E", "P_O"), phases)),
                                 HB=8 * itemsize, GROUP=WORDS_BAND),
                            dict(num_warps=num_warps), view_as=bits)
    block_r, block_c, num_warps = WORDS_CONFIG
    return TritonLaunch(_transpose_words_kernel, (cdiv(R, block_r) * cdiv(C, block_c), batch),
                        dict(BLOCK_R=block_r, BLOCK_C=block_c, PACK=max(1, 4 // itemsize), GROUP=WORDS_BAND),
                        dict(num_warps=num_warps), view_as=bits)


def _blocked(R, C, itemsize, aligned, batch, hints, phases) -> TritonLaunch:
    block_r, block_c, num_warps = _blocked_config(R, C, itemsize, aligned)
    return TritonLaunch(_transpose_blocked_kernel, (cdiv(R, block_r) * cdiv(C, block_c), batch),
                        dict(BLOCK_R=block_r, BLOCK_C=block_c, IN_HINT=hints[0], OUT_HINT=hints[1], GROUP=1),
                        dict(num_warps=num_warps), view_as=INT_BY_SIZE[itemsize])


# narrow's flat tiles: the narrow side (at most NARROW_N, a power of two) by NARROW_TILE / that of the long one
NARROW_N, NARROW_TILE = 16, 4096


def _narrow_config(R: int, C: int) -> tuple[int, int, int]:
    """(BLOCK_R, BLOCK_C, num_warps) of narrow's flat tile for an R x C matrix."""
    n = min(NARROW_N, triton.next_power_of_2(min(R, C)))
    return (n, NARROW_TILE // n, 4) if R <= C else (NARROW_TILE // n, n, 4)


def _narrow(R, C, itemsize, aligned, batch, hints, phases) -> TritonLaunch:
    rp = triton.next_power_of_2(R)
    if batch == 1 and R <= NARROW_N and R < C and hints[1] == 1 and rp != 8:  # (output rows off 16 bytes: flat)
        return TritonLaunch(_transpose_narrow_flat_kernel, (cdiv(C, NARROW_TILE // rp), 1),
                            dict(NR=R, RP=rp, BLOCK_C=NARROW_TILE // rp), dict(num_warps=4), view_as=INT_BY_SIZE[itemsize])
    block_r, block_c, num_warps = _narrow_config(R, C)
    return TritonLaunch(_transpose_blocked_kernel, (cdiv(R, block_r) * cdiv(C, block_c), batch),
                        dict(BLOCK_R=block_r, BLOCK_C=block_c, IN_HINT=hints[0], OUT_HINT=hints[1], GROUP=1),
                        dict(num_warps=num_warps), view_as=INT_BY_SIZE[itemsize])


# variant -> its launch (what each is and the default: triton_impl/catalog.py)
LAUNCHES = {"per_row": _per_row, "words": _words, "blocked": _blocked, "narrow": _narrow}


def plan_launch(variant: str, R: int, C: int, itemsize: int, aligned: bool, batch: int = 1,
                hints: tuple[int, int] = (1, 1), phases: tuple[int, int, int, int] | None = None) -> TritonLaunch:
    """The kernel, grid and meta-parameters of a variant for ``batch`` matrices (grid axis 1, at
    most 65535); ``aligned`` as ``_blocked_config``; ``hints``: the kernel's (IN_HINT, OUT_HINT);
    ``phases``: words' (Q_E, Q_O, P_E, P_O) where it loads words (``_word_phases``)."""
    return LAUNCHES[variant](R, C, itemsize, aligned, batch, hints, phases)


def alignment(a) -> tuple[bool, tuple[int, int]]:
    """(aligned, hints) of a 2-D or 3-D input: every input and output row starts on 16 bytes (the
    config table's key), and the blocked kernel's (IN_HINT, OUT_HINT)."""
    *_, R, C = a.shape
    vec = 16 // a.element_size()  # elements a 16-byte vector
    rows_in = rows_aligned16(a)
    return rows_in and R % vec == 0, (vec if rows_in and C % vec == 0 else 1, vec if R % vec == 0 else 1)


# words' tiles an SM (of the words kernel's, as pick_variant counts them) from which it beats blocked
# on unaligned rows, by element size (H100: fp16 from 1537x1535, 2.4 an SM, 1.01x; 1.7 an SM
# 0.94x). fp32 stays on blocked: 0.90-0.95 of a same-size copy against words' 0.77-0.83 on 5 of 7
# large unaligned shapes, a tie at 59514x1632, 0.76 against 0.79 at 100003x3001
# (docs/decisions/006-transpose-defaults.md)
_WORDS_MIN_TILES_PER_SM = {2: 2}


def _words_fill(a) -> bool:
    """2-byte elements in unit-stride rows that do not all start on 16 bytes, where the words
    kernel's tiles fill the GPU (``_WORDS_MIN_TILES_PER_SM``) and a matrix fills a tile's rows and
    columns (28 x 95862 fp32 rows in 128-row tiles ran at 0.34x torch, H200, when 4-byte rows took
    words), with ``WORDS_MIN_ROWS`` rows where its rows in are off 16 bytes as well."""
    *batch, R, C = a.shape
    es = a.element_size()
    block_r, block_c, _ = WORDS_CONFIG
    if es not in _WORDS_MIN_TILES_PER_SM or a.stride(-1) != 1 or alignment(a)[0] or R < block_r or C < block_c:
        return False
    if R < WORDS_MIN_ROWS and not rows_aligned16(a):
        return False
    return math.prod(batch) * cdiv(R, block_r) * cdiv(C, block_c) >= _WORDS_MIN_TILES_PER_SM[es] * DEFAULT_SM_COUNT


# variant=None: the first row that holds (docs/decisions/006-transpose-defaults.md has the figures)
RULES = (
    Rule("narrow", lambda a: min(a.shape[-2:]) <= 2 * NARROW_N,
         "a side of at most 32 (two slabs): 3 x 1000003 / 17 x 100003 / 28 x 95862 fp32 at 1.17x / 0.94x / "
         "1.16x torch against the tiles' 0.06x / 0.39x / 0.66x (H200)"),
    Rule("words", _words_fill, f"unaligned 2-byte rows, {WORDS_MIN_ROWS} or more where rows in are unaligned too (H100, "
         "share of a same-size copy at 12345x6789 / 4097x4095 / 59514x1632: fp16 0.85 / 0.93 / 0.73 against blocked's "
         "0.74 / 0.84 / 0.56)"),
    Rule("blocked", always, "the rest: the blocked tile"),
)


def pick_variant(a) -> str:
    """What ``variant=None`` runs: the first of ``RULES`` that holds."""
    return first_rule(RULES, a).variant


WORD_LOADS = True  # False: 2- and 4-byte rows load elements (the words kernel), as lab/sweep_transpose_words.py compares


def _word_phases(es, R, C, sb, sr, sc, batch, in_phase, out_phase):
    """words' (Q_E, Q_O, P_E, P_O) for a launch of ``batch`` matrices, or None where it loads
    elements: 2- and 4-byte elements in unit-stride rows (words of two elements), whose phases are
    the same in every matrix of the launch (one matrix, or even batch strides in and out);
    ``in_phase`` / ``out_phase``: elements past a two-element word."""
    if not WORD_LOADS or es not in WORD_PAIRS_CONFIG or sc != 1 or (batch > 1 and (sb % 2 or R * C % 2)):
        return None
    block_r, block_c, _ = WORD_PAIRS_CONFIG[es]
    if block_c * R >= 2**31 or block_r * sr >= 2**31:  # (the kernel's 32-bit offsets)
        return None
    q_e = in_phase % 2
    p_e = out_phase % 2
    return q_e, (q_e + sr) % 2, p_e, (p_e + R) % 2


def _plan(inputs, variant, out) -> Plan:
    """Validate a call and plan it (once per distinct metadata)."""
    (a,) = inputs
    shape = check_transpose_args(a, dtypes=DTYPES)
    check_variant(variant, VARIANTS, "transpose")
    check_output(out, shape, {"a": a}, need_cuda=not interpreting())
    if a.numel() == 0:
        return Plan(shape, a.dtype, a.device, lambda a, out: None, ("a",))
    *_, R, C = a.shape
    sb, sr, sc = a.stride() if a.dim() == 3 else (0, *a.stride())
    es = a.element_size()
    aligned, hints = alignment(a)
    B = a.shape[0] if a.dim() == 3 else 1
    variant = variant or pick_variant(a)
    if variant == "narrow" and is_plain_copy(a.shape):
        return copy_plan(shape, a)
    # words: each launch's out_phase and in_phase, elements its output / input lies past a word
    # boundary: a word of two elements where it loads words, else of 4 bytes (the words kernel)
    # (only the low bits count: base_phase, which a traced call's fakes answer too)
    out_at = 0 if out is None else base_phase(out) // es  # (a new output is aligned)
    in_at = base_phase(a) // es
    chunks = []
    for b0, nb in batch_chunks(B):
        phases, extra = None, ()
        if LAUNCHES[variant] is _words:
            o, i = (out_at + b0 * R * C) % 2, (in_at + b0 * sb) % 2
            phases = _word_phases(es, R, C, sb, sr, sc, nb, i, o)
            extra = (o, i) if phases is not None else ((out_at + b0 * R * C) % max(1, 4 // es),)
        chunks.append((b0, nb, plan_launch(variant, R, C, es, aligned, nb, hints, phases), extra))
    if len(chunks) == 1:
        _, _, launch, extra = chunks[0]
        return Plan(shape, a.dtype, a.device, launch.bind(R, C, sb, sr, sc, *extra), ("a",))  # run(a, out)

    def run(a, out):  # (past 65535 matrices: a launch per 65535, on views of a and out)
        for b0, nb, launch, extra in chunks:
            launch(a[b0:b0 + nb], out[b0:b0 + nb], R, C, sb, sr, sc, *extra)
    return Plan(shape, a.dtype, a.device, run, ("a",))


_PLANS = PlanCache(_plan)


def launches(dtype):
    """(variant, TritonLaunch, arguments by name, shape) of each variant at the shape its record
    names, a and out contiguous (``triton_impl.launches``); pointers as Triton's pointer types."""
    ptr = f"*i{8 * dtype.itemsize}"  # the wrapper moves bits as same-size integers
    for name in VARIANTS:
        R, C = shown_at(RECORDS, "transpose", name)
        args = dict(a_ptr=ptr, out_ptr=ptr, R=R, C=C, stride_ab=0, stride_ar=C, stride_ac=1, out_phase=0)
        yield name, plan_launch(name, R, C, dtype.itemsize, aligned=True), args, (R, C)


def transpose(a: torch.Tensor, *, variant: str | None = None, out: torch.Tensor | None = None):
    """Return ``a.T`` as a new contiguous (C, R) tensor (or write it into ``out``); a batch
    (B, R, C) gives (B, C, R), each matrix transposed.

    ``a``: a 2-D or 3-D CUDA tensor (a CPU tensor under ``TRITON_INTERPRET=1``) of float16,
    bfloat16, float32, float64, int32 or int8, any strides. ``variant=None``: ``pick_variant``.
    Where the result is a plain copy of ``a`` (a side of 1), it is one device copy
    (``transpose_as_copy``).
    """
    copied = transpose_as_copy(a, variant, out, DTYPES,
                               type(a) is torch.Tensor and (a.is_cuda or interpreting() and a.device.type == "cpu"))
    if copied is not None:
        return copied
    return _PLANS((a,), variant, out)
