"""Transpose launchers: validate -> plan -> launch. Kernels: kernels/transpose.cu, and
kernels/transpose_narrow.cu for ``narrow``."""

from __future__ import annotations

import math
from typing import Callable, NamedTuple

import torch

from cuda_ref import loader
from cuda_ref._arch import SM_90
from cuda_ref.catalog import RECORDS
from kernel_common import (DEFAULT_SM_COUNT, batch_chunks, cdiv, check_transpose_args, check_variant, output,
                           rows_aligned16)
from kernel_common.catalog import Rule, always, first_rule, names, shown_at
from kernel_common.plans import Plan, PlanCache, copy_plan, is_plain_copy, transpose_as_copy

FILE, NARROW_FILE = "transpose.cu", "transpose_narrow.cu"
DTYPES = (torch.float16, torch.bfloat16, torch.float32, torch.float64, torch.int32, torch.int8)

class _Kernel(NamedTuple):
    template: str  # the instance, over the element's storage type and the tiles by element size
    geometry: Callable  # (R, C, itemsize) -> (grid, block) of one matrix; the tiles match the kernel's
    vec_in: bool = False  # takes vec_in (16-byte loads along rows, aligned or not) and a band width
    file: str = FILE  # the .cu it is in
    args: str = ""  # its arguments' types where not the others' (a, out, R, C, sr, sc, sb[, vec_in, band])


def _tiled(rows, cols, block):
    """A block per rows x cols tile of a (rows, cols: ints, or functions of the element size)."""
    def geometry(R, C, es):
        r, c = (t(es) if callable(t) else t for t in (rows, cols))
        return (cdiv(R, r) * cdiv(C, c),), block
    return geometry


# variant -> its kernel (what each is and the default: cuda_ref/catalog.py)
KERNELS = {
    "smem_tiled_vec": _Kernel("transpose_smem_tiled_vec<{T}, {shift_in}, {shift_out}>",
                              _tiled(lambda es: _vec_tile(es), lambda es: _vec_tile(es), (256,)), vec_in=True),
    "serial": _Kernel("transpose_serial<{T}>", lambda R, C, es: ((1,), (1,))),
    "per_row": _Kernel("transpose_per_row<{T}>", lambda R, C, es: ((cdiv(R, 256),), (256,))),
    "per_element": _Kernel("transpose_per_element<{T}>",
                           lambda R, C, es: ((cdiv(C, 32), min(cdiv(R, 8), 65535)), (32, 8))),
    "smem_tiled": _Kernel("transpose_smem_tiled<{T}, 0>", _tiled(32, 32, (32, 32))),
    "smem_tiled_padded": _Kernel("transpose_smem_tiled<{T}, 1>", _tiled(32, 32, (32, 32))),
    "smem_tiled_rows": _Kernel("transpose_smem_tiled_rows<{T}>", _tiled(32, 32, (32, 8))),
    "smem_tiled_words": _Kernel("transpose_smem_tiled_words<{T}, {tile_r}, {tile_c}>",
                                _tiled(lambda es: WORDS_TILE[es][0], lambda es: WORDS_TILE[es][1], (256,))),
    "smem_tiled_sheared": _Kernel("transpose_smem_tiled_sheared<{T}, {sheared_r}, {sheared_c}>",
                                  lambda R, C, es: ((_sheared_tiles(R, C, es),), (256,)), vec_in=True),
    "narrow": _Kernel("transpose_narrow<{T}, {few_rows}>", lambda R, C, es: ((_narrow_tiles(R, C),), (256,)),
                      file=NARROW_FILE),
}
# narrow's kernels that move 16-byte chunks (``_flat`` says which takes a call): matrices of a few
# unit-stride rows into an output whose matrices start on 16 bytes, and contiguous matrices of a
# few columns; their geometry takes the batch too (a block's share is sized over it)
NARROW_FLAT = {
    "narrow_flat": _Kernel("transpose_narrow_flat<{T}>",
                           lambda R, C, es, batch: ((cdiv(C, _flat_columns(R, C, es, batch)),), (256,)),
                           file=NARROW_FILE, args="QQqqqqi"),
    "narrow_flat_tall": _Kernel("transpose_narrow_flat_tall<{T}>",
                                lambda R, C, es, batch: ((cdiv(R, _flat_columns(C, R, es, batch)),), (256,)),
                                file=NARROW_FILE, args="QQqqi"),
}
# smem_tiled_words' input rows x columns a block, by element size (8 bytes: 48 KiB of static shared
# memory at most). H100, share of copy at 12345x6789 / 4097x4095 for 256 x 32 (128 x 32), before
# the L2 hint: fp16 0.82 / 0.76 (0.79 / 0.72), fp32 0.89 / 0.89 (0.85 / 0.90);
# docs/decisions/006-transpose-defaults.md.
WORDS_TILE = {1: (256, 32), 2: (256, 32), 4: (256, 32), 8: (128, 32)}
# smem_tiled_sheared's tile (rows x columns), by element size (under 48 KiB of shared memory). H100,
# share of copy at 12345x6789 / 4097x4095 / 6789x12345 with the L2 hint, 64 x 64 (128 x 64): fp16
# 0.915 / 0.775 / 0.916 (0.911 / 0.766 / 0.901), fp32 0.932 / 0.933 / 0.928 (0.931 / 0.899 / 0.928);
# docs/decisions/006-transpose-defaults.md. int8 128 x 64 0.752 / 0.543 / 0.757 (64 x 64: 0.675 /
# 0.531 / 0.703), fp64 64 x 32 0.937 / 0.944 / 0.931 (32 x 32: 0.938 / 0.952 / 0.934, but then
# 1025x1023 has tiles enough to take it; there 10-20 us loops are host-bound and ran 0.85x torch's
# on the sheared kernel, 0.89x on smem_tiled_rows, in two runs: it stays where it was);
# docs/decisions/006-transpose-defaults.md.
SHEARED_TILE = {1: (128, 64), 2: (64, 64), 4: (64, 64), 8: (64, 32)}
# smem_tiled_vec's and smem_tiled_sheared's tiles go down the columns in bands (the kernels'
# tile_in_bands) of one column of tiles, or of TALL_BAND where a column holds more tiles than the
# blocks in flight (8 of 256 threads an SM), which would all read one tile's width of each row
TALL_BAND = SM_90["tall_band"]


def band_width(tiles_r: int) -> int:
    """Columns of tiles a band, for a matrix of ``tiles_r`` row tiles."""
    return TALL_BAND if tiles_r > 8 * DEFAULT_SM_COUNT else 1

VARIANTS = names(RECORDS, "transpose")  # the default first (cuda_ref/catalog.py)
_FLAGS = ("false", "true")
# each file's instances: every template over each storage type (and flag) its launches can ask for
SOURCES = {file: tuple(sorted({t.format(T=ctype, shift_in=i, shift_out=o, few_rows=i, tile_r=WORDS_TILE[es][0],
                                        tile_c=WORDS_TILE[es][1], sheared_r=SHEARED_TILE[es][0],
                                        sheared_c=SHEARED_TILE[es][1])
                               for t, _, _, f, _ in (*KERNELS.values(), *NARROW_FLAT.values()) if f == file
                               for es, ctype in loader.UINT_BY_SIZE.items() for i in _FLAGS for o in _FLAGS}))
           for file in (FILE, NARROW_FILE)}  # (cuda_ref.sources)


def _vec(itemsize: int) -> int:
    """Elements a chunk (the kernels' Chunk<T>::VEC): 16 bytes' worth, 8 bytes' for 1-byte elements."""
    return 8 if itemsize == 1 else 16 // itemsize


def _vec_tile(itemsize: int) -> int:
    """smem_tiled_vec's square tile: 16 x 16 threads, VEC x VEC elements each; the kernel's TILE."""
    return 16 * _vec(itemsize)


def _sheared_tiles(R: int, C: int, itemsize: int) -> int:
    """smem_tiled_sheared's tiles a matrix: output row c's tiles hold the input rows r with r + t_c
    in [r0, r0 + tile_r), t_c below a 32-byte sector's elements, so R + that - 1 positions."""
    tile_r, tile_c = SHEARED_TILE[itemsize]
    return cdiv(R + 32 // itemsize - 1, tile_r) * cdiv(C, tile_c)


# narrow's flat tiles (the kernel's NARROW_N and NARROW_TILE): up to 16 elements of the narrow side,
# and as many of the long side as make 2048 elements a block
NARROW_N, NARROW_TILE = 16, 2048
# the kernels that move chunks: elements a block (at most) and the narrow side's extent (at most)
FLAT_TILE, FLAT_N = 4096, 64


def _narrow_tiles(R: int, C: int) -> int:
    """narrow's tiles a matrix: slabs of the narrow side (min(R, C)) times runs of the long one."""
    N, L = min(R, C), max(R, C)
    n_tile = min(N, NARROW_N)
    return cdiv(N, n_tile) * cdiv(L, NARROW_TILE // n_tile)


def _flat_columns(n: int, long: int, itemsize: int, batch: int = 1) -> int:
    """narrow_flat's columns a block (narrow_flat_tall's rows) for ``batch`` n x long matrices (n
    the narrow side): whole chunks (the kernels' L), at most FLAT_TILE elements, and few enough for
    two blocks an SM where the matrices have the elements (12 x 4557 fp32 in 14 blocks of 16 KB ran
    0.62 of a copy)."""
    vec = _vec(itemsize)
    return max(vec, min(FLAT_TILE // n // vec, cdiv(long * batch, 2 * DEFAULT_SM_COUNT * vec)) * vec)


def _flat(a, out_on_16: bool = True) -> str | None:
    """narrow's kernel that moves chunks, where one takes the call: narrow_flat for matrices of
    2 to FLAT_N rows, fewer than their columns, in unit-stride rows, into an output whose matrices
    start on 16 bytes (``out_on_16``: the output does); narrow_flat_tall for contiguous matrices of
    2 to FLAT_N columns, fewer than their rows (at most 65535 matrices: one launch)."""
    *batch, R, C = a.shape
    if not 2 <= min(R, C) <= FLAT_N or R == C or math.prod(batch) > 65535:
        return None
    if R < C:
        starts = out_on_16 and (not batch or (R * C * a.element_size()) % 16 == 0)
        return "narrow_flat" if a.stride(-1) == 1 and starts else None
    return "narrow_flat_tall" if a.is_contiguous() else None


def _flat_wins(a) -> bool:
    """A side of 17-64 where narrow's chunk kernels beat the tiles (lab/probe_flat_sides.py): rows
    of 1- or 2-byte elements, at most 32 of them or off 16 bytes (64 aligned fp16 rows: 0.74 of
    copy, smem_tiled_vec 0.78; 40 fp32 rows 0.84, sheared 0.90); columns, at most 32 (48 and 64:
    0.53-0.54 against the tiles' 0.67-0.73; a batch of 48 x 3332 x 30 0.65 against 0.46). A matrix
    of fewer than a block's elements keeps the tiles (launch-bound, not measured)."""
    R, C = a.shape[-2:]
    kernel = _flat(a) if NARROW_N < min(R, C) and R * C >= FLAT_TILE else None
    if kernel == "narrow_flat":
        return a.element_size() <= 2 and (R <= 32 or not _vec_rows(a))
    return kernel == "narrow_flat_tall" and C <= 32


def plan_launch(variant: str, R: int, C: int, itemsize: int, batch: int = 1, shift_in: bool = False,
                shift_out: bool = False) -> loader.Launch:
    """The instance and geometry of a variant for ``batch`` matrices (grid z, at most 65535); the
    tile sizes match the kernels' constants. ``shift_in`` / ``shift_out``: smem_tiled_vec's
    instance for input / output rows that do not all start on a 16-byte boundary."""
    kernel = KERNELS[variant] if variant in KERNELS else NARROW_FLAT[variant]
    name = kernel.template.format(T=loader.UINT_BY_SIZE[itemsize], shift_in=_FLAGS[shift_in],
                                  shift_out=_FLAGS[shift_out], few_rows=_FLAGS[R <= C], tile_r=WORDS_TILE[itemsize][0],
                                  tile_c=WORDS_TILE[itemsize][1], sheared_r=SHEARED_TILE[itemsize][0],
                                  sheared_c=SHEARED_TILE[itemsize][1])
    grid, block = kernel.geometry(R, C, itemsize, batch) if variant in NARROW_FLAT else kernel.geometry(R, C, itemsize)
    args = kernel.args or ("QQqqqqqii" if kernel.vec_in else "QQqqqqq")  # (+ vec_in and the band width)
    return loader.Launch(name, (*grid, 1)[:2] + (batch,), block, args)


def _narrow(a) -> bool:
    """A side of at most NARROW_N elements: narrow's flat tiles fill their threads where a square tile would idle most."""
    return min(a.shape[-2:]) <= NARROW_N


def _tall_words(a) -> bool:
    """A tall contiguous matrix of at most 32 columns whose words tiles fill the GPU twice, its rows
    more than 10 columns and 20 bytes, or 40 bytes or more: narrow's chunk kernel slows past 10
    columns and at long rows, the words tiles at short rows (H200, lab/probe_narrow_tall.py, share
    of the copy, words against narrow): fp16 500009 x 24 0.98 / 0.57, 700001 x 31 0.92 / 0.38,
    1043546 x 16 0.91 / 0.76, fp32 800011 x 29 0.95 / 0.38, 292355 x 10 1.11 / 0.98, fp64 600011 x 7
    1.06 / 0.78; fp16 292355 x 10 0.98 / 1.07, 2017179 x 4 0.48 / 0.98, fp32 2017179 x 4 0.68 /
    1.05, int8 1000003 x 13 0.47 / 0.67 (and 20 columns 0.51 / 0.44)."""
    R, C = a.shape[-2:]
    row = C * a.element_size()
    return (a.dim() == 2 and a.is_contiguous() and C <= 2 * NARROW_N and (C > 10 and row > 20 or row >= 40)
            and cdiv(R, WORDS_TILE[a.element_size()][0]) >= 2 * DEFAULT_SM_COUNT)


def _vec_rows(a) -> bool:
    """Unit-stride input rows that all start on 16 bytes, and output rows that do."""
    return a.stride(-1) == 1 and rows_aligned16(a) and (a.shape[-2] * a.element_size()) % 16 == 0


def _sheared_fills(a) -> bool:
    """Unit-stride rows (at any alignment) whose sheared tiles fill the GPU (8 an SM)."""
    *batch, R, C = a.shape
    return a.stride(-1) == 1 and math.prod(batch) * _sheared_tiles(R, C, a.element_size()) >= 8 * DEFAULT_SM_COUNT


# variant=None: the first row that holds (docs/decisions/006-transpose-defaults.md has the figures)
RULES = (
    Rule("smem_tiled_words", _tall_words, "tall contiguous matrices of 11-32 columns past 20 bytes (or rows of "
         "40 bytes): fp16 700001 x 31 0.92 of copy against narrow's 0.38, fp32 800011 x 29 0.95 against 0.38 (H200)"),
    Rule("narrow", _narrow, "a side of at most 16: 3 x 1000003 fp32 at 0.79x torch against the square and row "
         "tiles' 0.08x / 0.21x (H200; 12 x 4557 launch-bound, 0.83x / 0.93x / 1.03x); past 16 rows the row tiles win"),
    Rule("narrow", _flat_wins, "a side of 17-64 its chunk kernels take (H200, fp16, x copy): 56 x 40254 1.01, "
         "30 x 1000003 0.70, 92069 x 26 0.81, 4096 x 24 0.88, against the tiles' 0.70 / 0.37 / 0.57 / 0.68"),
    Rule("smem_tiled_rows", lambda a: _vec_rows(a) and a.element_size() == 8,
         "8-byte elements in aligned rows: 0.95 of copy against smem_tiled_vec's 0.90 (H200, 16384^2)"),
    Rule("smem_tiled_vec", _vec_rows, "aligned rows: 0.98 of copy at fp32 and fp16 16384^2 (H200; smem_tiled_rows 0.80 / 0.51)"),
    Rule("smem_tiled_sheared", _sheared_fills,
         "rows off 16 bytes, tiles enough: H100 12345x6789 / 4097x4095 fp16 0.91 / 0.78, fp32 0.93 / 0.92 of copy"),
    Rule("smem_tiled_rows", always, "strided rows (the vector kernels load element by element), and few unaligned tiles"),
)


def pick_variant(a) -> str:
    """What ``variant=None`` runs: the first of ``RULES`` that holds."""
    return first_rule(RULES, a).variant


def _plan(inputs, variant, out) -> Plan:
    """Validate a call and plan it (once per distinct metadata)."""
    (a,) = inputs
    shape = check_transpose_args(a, dtypes=DTYPES)
    check_variant(variant, VARIANTS, "transpose")
    out = output(out, shape, {"a": a}, need_cuda=True)
    if a.numel() == 0:
        return Plan(shape, a.dtype, a.device, lambda a, out: None, ("a",))
    picked, variant = variant is None, variant or pick_variant(a)
    if variant == "narrow" and is_plain_copy(a.shape):
        return copy_plan(shape, a)
    *_, R, C = a.shape
    B, sb = (a.shape[0], a.stride(0)) if a.dim() == 3 else (1, 0)
    es = a.element_size()
    flat = _flat(a, out.data_ptr() % 16 == 0) if variant == "narrow" else None
    if picked and variant == "narrow" and not flat and min(R, C) > NARROW_N:  # (_flat_wins' rows, an out off 16 bytes)
        variant = first_rule(tuple(r for r in RULES if r.variant != "narrow"), a).variant
    if flat:
        kernel = loader.kernel(NARROW_FILE, SOURCES[NARROW_FILE], plan_launch(flat, R, C, es, B), a.device.index)
        scalars = ((R, C, a.stride(-2), sb, _flat_columns(R, C, es, B)) if flat == "narrow_flat"
                   else (R, C, _flat_columns(C, R, es, B)))
        return Plan(shape, a.dtype, a.device, lambda a, out: kernel(a.data_ptr(), out.data_ptr(), *scalars), ("a",))
    # rows that do not all start on 16 bytes, in any matrix of a batch; out is contiguous
    shift_in = not rows_aligned16(a)
    shift_out = (R * es) % 16 != 0 or out.data_ptr() % 16 != 0
    launches = [(b0 * sb * es, b0 * R * C * es,
                 loader.kernel(KERNELS[variant].file, SOURCES[KERNELS[variant].file],
                               plan_launch(variant, R, C, es, nb, shift_in, shift_out), a.device.index))
                for b0, nb in batch_chunks(B)]
    scalars = (R, C, *a.stride()[-2:], sb)
    if KERNELS[variant].vec_in:  # vec_in: 16-byte loads along rows, aligned or not; the band width
        tiles_r = cdiv(R, _vec_tile(es)) if variant == "smem_tiled_vec" else _sheared_tiles(R, 1, es)
        scalars += (int(a.stride(-1) == 1), band_width(tiles_r))

    def run(a, out):
        for a_off, out_off, kernel in launches:
            kernel(a.data_ptr() + a_off, out.data_ptr() + out_off, *scalars)
    return Plan(shape, a.dtype, a.device, run, ("a",))


_PLANS = PlanCache(_plan)


def launches(dtype):
    """(variant, Launch, shape) of each variant at the shape its record names (``cuda_ref.launches``)."""
    for name in VARIANTS:
        R, C = shown_at(RECORDS, "transpose", name)
        yield name, plan_launch(name, R, C, dtype.itemsize), (R, C)


def transpose(a, *, variant: str | None = None, out=None):
    """Return ``a.T`` as a new contiguous (C, R) array (or write it into ``out``); a batch
    (B, R, C) gives (B, C, R), each matrix transposed.

    ``a`` is a 2-D or 3-D torch CUDA tensor or CuPy array of float16, bfloat16, float32, float64,
    int32 or int8, with any strides; the result is of the same kind (torch or CuPy).
    ``variant=None`` picks by element size and stride (``pick_variant``). Where the result is a
    plain copy of ``a`` (a side of 1), it is one device copy (``transpose_as_copy``).
    """
    copied = transpose_as_copy(a, variant, out, DTYPES, type(a) is torch.Tensor and a.is_cuda)
    if copied is not None:
        return copied
    return loader.call(_PLANS, (a,), ("a",), variant, out)
