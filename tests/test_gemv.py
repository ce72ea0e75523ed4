"""GEMV, both backends, against a float64 reference with a tolerance by dtype and K."""

import pytest
import torch

import cuda_ref
import triton_impl
from bench.specs import DTYPES, GemvSpec, poison
from conftest import requires_gpu
from cuda_ref import _gemv as cuda_gemv
from kernel_common import DEFAULT_SM_COUNT, cdiv, matrix_layout, sm_count
from triton_impl import _gemv as triton_gemv

SMALL_SHAPES = [
    (1, 1),      # one element
    (37, 1),     # K = 1: no reduction
    (1, 300),    # one row, K not a multiple of any block or vector
    (67, 45),    # odd both ways
    (130, 260),  # several blocks of rows, a K tail
]
LARGER_SHAPES = [
    (4096, 4096),        # seed 001's smallest
    (33, 100003),        # few rows, long prime K: split_k territory
    (100003, 7),         # many rows, short K: rows_per_warp territory
    (1025, 1030),        # K % 8 != 0: vector tails for fp16
    (300, 4104),         # aligned rows: each lane's batches of 16-byte loads, then one vector more
]
GPU_SHAPES = SMALL_SHAPES + LARGER_SHAPES
DTYPE_NAMES = ["float32", "float16", "bfloat16"]
TRITON_VARIANTS = triton_impl.variants("gemv")
CUDA_VARIANTS = cuda_ref.variants("gemv")
# rows off 16 bytes in every dtype (K * itemsize % 16 != 0): one row, K under a vector, short rows
# (rows_per_warp's lanes), long ones, a K tail of every length
PHASED_SHAPES = [(1000, 1001), (257, 4099), (4096, 895), (33, 129), (5, 7), (3, 1), (1, 1001), (70, 9),
                 (300, 191), (300, 97), (300, 45), (129, 130), (1, 200), (4099, 255)]
PHASED_VARIANTS = [v for v in CUDA_VARIANTS if cuda_gemv.KERNELS[v].run == "aligned"]


def make(shape, dtype_name, device, seed=0):
    return GemvSpec.make_inputs(shape, DTYPES[dtype_name], device, seed)


def check(fn, a, x, **kw):
    before = (a.clone(), x.clone())
    out = poison((a.shape[0],), a.dtype, a.device)
    got = fn(a, x, out=out, **kw)
    assert got is out
    cmp = GemvSpec.compare(got, GemvSpec.reference((a, x)), (a, x))
    assert cmp.ok, cmp.detail
    assert torch.equal(a, before[0]) and torch.equal(x, before[1]), "input was modified"
    fresh = fn(a, x, **kw)
    assert GemvSpec.compare(fresh, GemvSpec.reference((a, x)), (a, x)).ok


def _layouts(a):
    return {"row": a, "col": a.t().contiguous().t()}


# ---- Triton: CPU (interpreter) and GPU ----------------------------------------------------------
@pytest.mark.parametrize("dtype", DTYPE_NAMES)
@pytest.mark.parametrize("shape", SMALL_SHAPES, ids=str)
@pytest.mark.parametrize("layout", ["row", "col"])
@pytest.mark.parametrize("variant", TRITON_VARIANTS)
def test_triton_small(variant, layout, shape, dtype, device):
    a, x = make(shape, dtype, device)
    check(triton_impl.gemv, _layouts(a)[layout], x, variant=variant)


@pytest.mark.parametrize("variant", TRITON_VARIANTS)
def test_triton_strided(variant, device):
    a, x = make((90, 70), "float32", device)
    check(triton_impl.gemv, a[::3, ::2], x[::2], variant=variant)   # steps on both axes
    check(triton_impl.gemv, a[5:60, 3:40], x[3:40], variant=variant)  # offsets


@pytest.mark.parametrize("dtype", DTYPE_NAMES)
def test_triton_split_k_several_pieces(dtype, device):
    a, x = make((5, 3 * 4096 + 17), dtype, device)   # three pieces and a ragged last one
    check(triton_impl.gemv, a, x, variant="split_k")


@pytest.mark.parametrize("dtype", DTYPE_NAMES)
def test_triton_blocked_col_splits_k_where_tiles_are_few(dtype, device):
    """A column-major A of few 256-row tiles: K in pieces of COL_PIECE or more, a ragged last one,
    summed in a fixed order (the same bits on a repeat)."""
    M, K = 300, 8 * triton_gemv.COL_PIECE + 17
    assert triton_gemv.split("blocked_col", M, K, 4, 132)[1] > 1
    a, x = make((M, K), dtype, device)
    a = _layouts(a)["col"]
    check(triton_impl.gemv, a, x, variant="blocked_col")
    assert torch.equal(triton_impl.gemv(a, x, variant="blocked_col"), triton_impl.gemv(a, x, variant="blocked_col"))


# ---- what variant=None runs: the dispatch tables, on each side of every boundary ----------------
def _meta(M, K, layout, dtype=torch.float32):
    """An (M, K) A in a layout, and x: shapes and strides only (the meta device), so the tables
    can name shapes of any size. pick_variant reads no data, and counts 132 SMs off a GPU."""
    a = (torch.empty((M, K), device="meta", dtype=dtype) if layout == "row"
         else torch.empty((K, M), device="meta", dtype=dtype).t())
    assert matrix_layout(a) == layout
    return a, torch.empty(K, device="meta", dtype=dtype)


SMS = DEFAULT_SM_COUNT
CUDA_DISPATCH = [  # (M, K, layout, variant)
    (527, 4096, "row", "split_k"),            # fewer than 4 rows per SM, K >= 4096
    (528, 4096, "row", "warp_per_row"),       # 4 rows per SM
    (527, 4095, "row", "warp_per_row"),       # K one short of 4096
    (1, 1 << 22, "row", "split_k"),
    (527, 128, "row", "rows_per_warp"),       # few rows but a short K
    (1000, 128, "row", "rows_per_warp"),      # K <= 128
    (1000, 129, "row", "warp_per_row"),
    (1 << 20, 128, "row", "rows_per_warp"),   # K <= 128 wins over the size rule
    (1 << 20, 129, "row", "rows_per_warp"),   # K <= 1024 and its blocks fill the SMs: before the size rule
    (1 << 20, 1025, "row", "split_k"),        # past 2^26 elements
    (151936, 896, "row", "rows_per_warp"),    # K <= 1024, aligned rows, its blocks fill the SMs: first
    (4224, 896, "row", "rows_per_warp"),      # 66 blocks of 64 rows: half the SMs
    (4160, 896, "row", "warp_per_row"),       # 65
    (100000, 1032, "row", "split_k"),         # K past 1024
    (8192, 8192, "row", "warp_per_row"),      # exactly 2^26: not past it
    (8192, 8193, "row", "split_k"),
    (8193, 8192, "row", "split_k"),
    (4 * SMS, 1 << 22, "row", "split_k"),     # enough rows, but past 2^26
    (527, 4096, "col", "coalesced_shared"),   # column-major: always the shared-x column kernel
    (1000, 128, "col", "coalesced_shared"),
    (1 << 20, 129, "col", "coalesced_shared"),
    (8192, 8192, "col", "coalesced_shared"),
]
CUDA_DISPATCH_16BIT = [  # 16-bit rows past 2^26 elements stay on warp_per_row
    (1 << 20, 129, "row", "rows_per_warp"),   # (K <= 1024 first)
    (1 << 20, 1025, "row", "warp_per_row"),
    (128256, 4096, "row", "warp_per_row"),
    (527, 4096, "row", "split_k"),
    (1000, 128, "row", "rows_per_warp"),
    (8192, 8192, "col", "coalesced_shared"),
    (4608, 36864, "row", "split_k"),          # warp_per_row's 576 blocks: the last wave 48 of 528 slots
    (4224, 36864, "row", "warp_per_row"),     # 528: one full wave
    (2112, 8192, "row", "warp_per_row"),      # 264: the last wave half full
    (2104, 8192, "row", "split_k"),           # 263
    (2104, 4095, "row", "warp_per_row"),      # K one short of 4096
    (4608, 36863, "row", "warp_per_row"),     # rows off 16 bytes: split_k would read them element by element
    (16904, 8192, "row", "warp_per_row"),     # 2113 blocks: past 4 waves
    (6144, 8192, "row", "split_k"),           # 768 blocks: the last wave 240 of 528 ..
    (6144, 8184, "row", "warp_per_row"),      # .. past one wave only from K = 8192
]
TRITON_DISPATCH = [
    (1024, 32768, "row", "split_k_last"),     # from K = 4096, 4-row programs whose last wave fills under half
    (2113, 4096, "row", "split_k_last"),      # of 4 an SM (528): 529 programs
    (2112, 4096, "row", "blocked_row"),       # 528: one full wave
    (3164, 4096, "row", "split_k_last"),      # 791: the last wave 263
    (3168, 4096, "row", "blocked_row"),       # 792: 264
    (8449, 4096, "row", "blocked_row"),       # past 4 waves
    (1024, 4095, "row", "blocked_row"),       # K under 4096: 16 x 512 float32 tiles, 64 programs of 8 warps
    (1024, 32770, "row", "split_k_last"),     # rows off 16 bytes: up to 1024 rows over K >= 32768 ..
    (1025, 32770, "row", "blocked_row"),      # .. (no waves rule off 16 bytes)
    (1, 1 << 22, "row", "split_k_last"),
    (85, 13723, "row", "split_k_last"),       # blocked_row's blocks under 2 warps an SM (264), K of 2 tiles ..
    (260, 4096, "row", "split_k_last"),       # (4-row blocks of 4 warps)
    (85, 1024, "row", "split_k_last"),        # .. (float32 below K = 4096: 16-row tiles of 512, 8 warps)
    (85, 1023, "row", "blocked_row"),
    (528, 1024, "row", "blocked_row"),
    (33, 65, "row", "phased"),                # rows off 16 bytes: phased where K <= 128 ..
    (4193, 1417, "row", "phased"),            # .. or its programs (32 float32 rows) make a wave of 132
    (4192, 1417, "row", "blocked_row"),
    (4193, 1416, "row", "blocked_row"),       # rows on 16 bytes
    (1 << 20, 4096, "row", "blocked_row"),
    (1024, 32768, "col", "blocked_col"),      # column-major: the column kernel
    (33, 65, "col", "blocked_col"),
]


@pytest.mark.parametrize("backend,M,K,layout,expected",
                         [("cuda", *case) for case in CUDA_DISPATCH] + [("triton", *case) for case in TRITON_DISPATCH],
                         ids=lambda v: str(v))
def test_default_variant(backend, M, K, layout, expected):
    """pick_variant by the docstring's rules, and the variant it picks reads A in the layout A
    comes in: variant=None never copies A."""
    mod = {"cuda": cuda_gemv, "triton": triton_gemv}[backend]
    a, x = _meta(M, K, layout)
    picked = mod.pick_variant(a, x)
    assert picked == expected
    assert mod.LAYOUT[picked] == layout, f"{picked} reads {mod.LAYOUT[picked]}-major A: the default would copy A"


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
@pytest.mark.parametrize("M,K,layout,expected", CUDA_DISPATCH_16BIT, ids=str)
def test_default_variant_16bit(M, K, layout, expected, dtype):
    assert cuda_gemv.pick_variant(*_meta(M, K, layout, dtype)) == expected


TRITON_DISPATCH_16BIT = [  # 8 x 512 tiles from 2112 rows, below LONG_K; the split tiles' waves past it
    (2113, 8192, "row", "blocked_row"),
    (2113, 16384, "row", "split_k_last"),     # 529 programs of 4 rows
    (4224, 16384, "row", "blocked_row"),      # 1056: two full waves
    (2113, 16383, "row", "blocked_row"),      # rows off 16 bytes keep 8 x 512 below PHASED_LAST_MIN_K
    # rows off 16 bytes, a long K: phased_last where phased's 64-row programs fill at most half the SMs
    (2113, 16385, "row", "phased_last"),      # 34 programs
    (256, 31293, "row", "phased_last"),       # PHASED_LAST_MIN_M
    (255, 31293, "row", "split_k_last"),      # fewer rows: its tiles mostly empty
    (4224, 31293, "row", "phased_last"),      # 66 programs: half of 132 SMs
    (4225, 31293, "row", "blocked_row"),      # 67
]


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
@pytest.mark.parametrize("M,K,layout,expected", TRITON_DISPATCH_16BIT, ids=str)
def test_triton_default_variant_16bit(M, K, layout, expected, dtype):
    assert triton_gemv.pick_variant(*_meta(M, K, layout, dtype)) == expected


def test_cuda_twins_compile_and_ship():
    """Each lane-group variant's phased twin and rows_per_warp's masked twin, at both K classes and
    every dtype, are among the instances the launchers compile and a wheel ships; split_k has none,
    warp_per_row no masked one."""
    shipped = set(cuda_ref.sources("gemv")[cuda_gemv.FILE])
    from cuda_ref import compile as cuda_compile
    for variant, twin, prefix, suffix in [*((v, "phased", "gemv_warp_per_row<", ", true>") for v in PHASED_VARIANTS),
                                          ("rows_per_warp", "masked", "gemv_masked<", ">")]:
        for dtype in (torch.float32, torch.float16, torch.bfloat16):
            for K in (1, 129, 4099):
                name = cuda_gemv.instance(variant, dtype, K, twin)
                assert name.startswith(prefix) and name.endswith(suffix) and name in shipped
                assert name in cuda_compile.instances()[cuda_gemv.FILE]
    with pytest.raises(ValueError, match="no phased twin"):
        cuda_gemv.instance("split_k", torch.float32, 4099, "phased")
    with pytest.raises(ValueError, match="no masked twin"):
        cuda_gemv.instance("warp_per_row", torch.float32, 300, "masked")


def test_cuda_masked_twin_lanes_by_row_bytes():
    """rows_per_warp's masked twin: 8 lanes a row up to K = ROWS_PER_WARP_SHORT_K where rows are under
    GEMV_MASKED_WIDE_MIN_ROW_BYTES (24 vectors), else 16."""
    lanes = lambda K, itemsize: cuda_gemv.masked_config(K, itemsize)[0]  # noqa: E731
    assert cuda_gemv.ROWS_PER_WARP_SHORT_K == 128 and cuda_gemv.GEMV_MASKED_WIDE_MIN_ROW_BYTES == 384
    assert [lanes(K, 4) for K in (33, 95, 96, 97, 128, 129)] == [8, 8, 16, 16, 16, 16]
    assert [lanes(K, 2) for K in (65, 97, 128, 129, 511)] == [8, 8, 8, 16, 16]


def _meta_view(M, K, dtype, col_offset=0, row_pad=0):
    """An (M, K) meta view into an (M, K + col_offset + row_pad) buffer, from column col_offset."""
    return torch.empty((M, K + col_offset + row_pad), device="meta", dtype=dtype)[:, col_offset:col_offset + K]


@pytest.mark.parametrize("variant,a,x_offset,twin", [
    ("warp_per_row", _meta_view(1000, 1001, torch.bfloat16), 0, "phased"),    # rows off 16 bytes
    ("rows_per_warp", _meta_view(1000, 1001, torch.float32), 0, "phased"),
    ("rows_per_warp", _meta_view(64, 7, torch.float16), 0, None),             # short rows: the element loop
    ("rows_per_warp", _meta_view(4096, 63, torch.bfloat16, 1), 0, None),     # under 128 bytes a row
    ("rows_per_warp", _meta_view(4096, 31, torch.float32), 0, None),
    ("rows_per_warp", _meta_view(4096, 128, torch.bfloat16, 1), 0, "masked"),  # 8 lanes a row to K = 128
    ("rows_per_warp", _meta_view(4096, 45, torch.float32), 0, "masked"),     # (float32 under 384 bytes)
    ("rows_per_warp", _meta_view(4096, 97, torch.float32), 0, "masked"),     # 16 lanes from 384 bytes a row
    ("rows_per_warp", _meta_view(4096, 129, torch.bfloat16), 0, "masked"),    # 16 lanes a row past K = 128
    ("rows_per_warp", _meta_view(4096, 129, torch.bfloat16), 1, "masked"),    # (x read element by element)
    ("rows_per_warp", _meta_view(4096, 255, torch.float32), 0, "masked"),
    ("rows_per_warp", _meta_view(4096, 257, torch.float32), 0, "phased"),     # from 1024 bytes a row
    ("rows_per_warp", _meta_view(4096, 511, torch.bfloat16), 0, "masked"),
    ("rows_per_warp", _meta_view(4096, 513, torch.bfloat16), 0, "phased"),
    ("rows_per_warp", _meta_view(4096, 136, torch.bfloat16, 8), 0, None),     # rows on 16 bytes
    ("warp_per_row", _meta_view(4096, 129, torch.bfloat16), 0, None),         # no masked twin: the element loop
    ("warp_per_row", _meta_view(70, 896, torch.bfloat16, 1), 0, "phased"),    # rows on 16 bytes, the base off
    ("warp_per_row", _meta_view(70, 896, torch.bfloat16, 8), 0, None),        # both on 16 bytes
    ("warp_per_row", _meta_view(1000, 1000, torch.float32), 0, None),
    ("warp_per_row", _meta_view(1000, 1001, torch.bfloat16), 1, None),        # x off 16 bytes: element loop
    ("warp_per_row", _meta_view(1000, 2000, torch.bfloat16)[:, ::2], 0, None),   # a strided K: copied, on 16 bytes
    ("warp_per_row", _meta_view(1000, 2002, torch.bfloat16)[:, ::2], 0, "phased"),  # copied, off 16 bytes
    ("warp_per_row", torch.empty((1001, 300), device="meta").t(), 0, "phased"),  # column-major: copied, K odd
    ("warp_per_row", torch.empty((1000, 300), device="meta").t(), 0, None),   # copied, rows on 16 bytes
    ("split_k", _meta_view(64, 100003, torch.bfloat16), 0, None),             # split_k has no twin
    (None, _meta_view(4096, 895, torch.bfloat16), 0, "phased"),
    (None, _meta_view(242722, 191, torch.bfloat16), 0, "masked"),
])
def test_cuda_launch_names_the_twin_where_rows_are_off_16_bytes(variant, a, x_offset, twin):
    """Planning nothing (meta tensors): a lane-group variant launches its phased twin for row-major
    A (as the call reads it) whose rows start off 16 bytes with x on 16 bytes, rows_per_warp its
    masked twin for such rows of 128 to 1023 bytes, each its own kernel otherwise."""
    K = a.shape[1]
    x = torch.empty(K + x_offset, device="meta", dtype=a.dtype)[x_offset:]
    picked = variant or cuda_gemv.pick_variant(a, x)
    launch = cuda_ref.launch("gemv", a, x, variant=variant)
    assert launch.name == (cuda_gemv.instance(picked, a.dtype, K, twin) if twin
                           else cuda_gemv.plan_launches(picked, *a.shape, a.dtype, DEFAULT_SM_COUNT)[0].name)
    assert launch.name in cuda_ref.sources("gemv")[cuda_gemv.FILE]
    assert cuda_ref.describe("gemv", a, x, variant=variant).startswith(f"{picked} {launch.name} grid ")


@pytest.mark.parametrize("M, K, itemsize", [(64, 2097152, 4), (128, 1048576, 4), (64, 1048576, 2),
                                             (16, 262144, 2), (3, 5000, 4), (5000, 70000, 4), (1, 17, 2)])
def test_cuda_split_k_pieces(M, K, itemsize):
    # pieces cover K in whole 16-byte vectors, and the blocks never pass SPLIT_BLOCKS_PER_SM an SM
    # (a partial last round costs 5-7%: docs/decisions/007-gemv-defaults.md)
    sm = 132
    piece, splits = cuda_gemv.split(M, K, itemsize, sm)
    assert piece % (16 // itemsize) == 0 and (splits - 1) * piece < K <= splits * piece
    groups = cdiv(M, cuda_gemv.ROWS["split_k"])
    assert splits == 1 or groups * splits <= cuda_gemv.SPLIT_BLOCKS_PER_SM * sm


@pytest.mark.parametrize("blocks, balanced", [(0, True), (1, False), (263, False), (264, True), (528, True), (529, False),
                                             (792, True), (2111, True), (2113, True), (1800, False)])
def test_waves_balanced(blocks, balanced):
    # 528 slots: a last wave of at least 264 blocks, or 4 waves (2112) whatever the last
    from kernel_common import waves_balanced
    assert waves_balanced(blocks, 528, 0.5, 4) == balanced


@pytest.mark.parametrize("M, K, splits", [(1000, 20000, 1), (300, 40000, 3), (200, 40000, 5), (64, 6000, 2)])
def test_cuda_split_k_wide_pieces(M, K, splits):
    # past a block of 2 rows an SM, pieces of GEMV_SPLIT_WIDE_PIECE at least; under it, of 4096
    assert cuda_gemv.split(M, K, 2, 132)[1] == splits


@pytest.mark.parametrize("M, K, splits", [(2197, 25824, 4), (2723, 46352, 2), (3426, 14504, 1), (1, 1 << 22, 512),
                                          (85, 13728, 7), (1000, 20000, 2), (508, 55474, 5), (64, 2097152, 32),
                                          (264, 65536, 4), (260, 65536, 8)])
def test_triton_split_pieces_balance_waves(M, K, splits):
    """split_k_last's pieces: the fewest whose 4-row programs pass waves_balanced on 4 an SM (2197 x
    25824: 550 programs, 2200 in 4 pieces make 4 waves; 2723 x 46352: 681, then 1362 fill 0.58 of the
    last wave), at most a tile each (85 x 13728: 7); few rows (under 2 warps an SM) and K off whole
    vectors: about 4 programs an SM (508 x 55474: 127 programs in 5 pieces; 260 x 65536: 65 in 8)."""
    piece, got = triton_gemv.split("split_k_last", M, K, 2, 132)
    assert got == splits and piece % 2048 == 0 and (got - 1) * piece < K <= got * piece


def test_triton_split_reads_the_row_stride():
    """Rows off 16 bytes go element by element whatever K is: a strided view with K on whole vectors
    takes the pieces of K off them (508 rows over 55472 in rows 55473 apart: 5 pieces, as 55474),
    not the fewest balanced ones its contiguous twin takes."""
    assert triton_gemv.split("split_k_last", 508, 55472, 2, 132, 55473) == triton_gemv.split("split_k_last", 508, 55474, 2, 132)
    assert triton_gemv.split("split_k_last", 508, 55472, 2, 132, 55480) == triton_gemv.split("split_k_last", 508, 55472, 2, 132)
    assert triton_gemv.split("split_k_last", 508, 55472, 2, 132)[1] != 5


@pytest.mark.parametrize("backend", ["cuda", "triton"])
def test_default_never_copies_a(backend):
    """Over a grid of shapes through every boundary above, in both layouts."""
    mod = {"cuda": cuda_gemv, "triton": triton_gemv}[backend]
    extents = (2, 127, 128, 129, 527, 528, 1024, 1025, 4095, 4096, 8192, 8193, 32767, 32768, 1 << 20)
    for M in extents:  # (an extent of 1 fits either layout; matrix_layout calls it "row")
        for K in extents:
            for layout in ("row", "col"):
                a, x = _meta(M, K, layout)
                picked = mod.pick_variant(a, x)
                assert picked in mod.VARIANTS and mod.LAYOUT[picked] == layout, (M, K, layout, picked)


# ---- CUDA: GPU only -------------------------------------------------------------------------------
@requires_gpu
@pytest.mark.parametrize("dtype", DTYPE_NAMES)
@pytest.mark.parametrize("shape", GPU_SHAPES, ids=str)
@pytest.mark.parametrize("layout", ["row", "col"])
@pytest.mark.parametrize("variant", CUDA_VARIANTS)
def test_cuda(variant, layout, shape, dtype):
    a, x = make(shape, dtype, "cuda")
    if variant == "coalesced_const" and shape[1] * a.element_size() > 65536:
        with pytest.raises(ValueError, match="K must be <="):
            cuda_ref.gemv(a, x, variant=variant)
        return
    check(cuda_ref.gemv, _layouts(a)[layout], x, variant=variant)


@requires_gpu
@pytest.mark.parametrize("M,K", [(13, 9000), (64, 1 << 20), (1, 4097 * 3), (3, 100003)], ids=str)
@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_cuda_split_k_sums_in_one_launch(M, K, dtype):
    """split_k: K in several pieces and one launch; each row group's last block adds the pieces in
    piece order, so a call repeats its bits; the counts are all zero after it (the next call's start
    from zero, in the stream's kept hand-over pair)."""
    from kernel_common import hand_over, sm_count
    (launch,) = cuda_gemv.plan_launches("split_k", M, K, getattr(torch, dtype), sm_count(torch.device("cuda")))
    groups = cdiv(M, cuda_gemv.ROWS["split_k"])
    assert launch.grid[0] > groups  # (pieces: more than one block a row group)
    a, x = make((M, K), dtype, "cuda")
    check(cuda_ref.gemv, a, x, variant="split_k")
    y = cuda_ref.gemv(a, x, variant="split_k")
    for _ in range(3):
        assert torch.equal(cuda_ref.gemv(a, x, variant="split_k"), y)
    counts, _ = hand_over(a.device, groups, 1)
    assert not counts[:groups].any()


def _recorded_launches(monkeypatch) -> list:
    """The instances the gemv plans made from now on bind (their calls plan afresh)."""
    from cuda_ref import loader
    names, bind = [], loader.kernel

    def recording(filename, expressions, launch, device):
        names.append(launch.name)
        return bind(filename, expressions, launch, device)
    cuda_ref.plans("gemv").clear()
    monkeypatch.setattr(loader, "kernel", recording)
    return names


@requires_gpu
@pytest.mark.parametrize("dtype", DTYPE_NAMES)
@pytest.mark.parametrize("shape", PHASED_SHAPES, ids=str)
@pytest.mark.parametrize("variant", [*PHASED_VARIANTS, None])
def test_cuda_lane_groups_read_rows_off_16_bytes_in_vectors(variant, shape, dtype, monkeypatch):
    """Row-major A whose rows start off 16 bytes, x on 16 bytes: the lane-group variants run their
    phased twin (16-byte loads from each row's first boundary on, x's vectors shifted to match), on
    A as it comes and on a view whose base is off 16 bytes too (rows of one offset where K + 1
    elements are whole vectors); variant=None wherever it picks one of them. Rows under
    GEMV_PHASED_MIN_ROW_BYTES keep the element loop."""
    M, K = shape
    a, x = make(shape, dtype, "cuda")
    wide, _ = make((M, K + 1), dtype, "cuda", seed=1)
    launched = _recorded_launches(monkeypatch)
    try:
        for a_ in (a, wide[:, 1:]):
            picked = variant or cuda_gemv.pick_variant(a_, x)
            check(cuda_ref.gemv, a_, x, variant=variant)
            if picked in PHASED_VARIANTS:  # (one row on 16 bytes, A as it comes, is not off 16 bytes)
                off = a_ is not a or M > 1
                phased = off and K * a.element_size() >= cuda_gemv.GEMV_PHASED_MIN_ROW_BYTES
                long_enough = K * a.element_size() >= cuda_gemv.MASKED_MIN_ROW_BYTES
                masked = off and picked == "rows_per_warp" and not phased and long_enough
                assert cuda_gemv.reads_phased(a_, x) == phased and cuda_gemv.reads_masked(a_) == (off and not phased
                                                                                             and long_enough)
                want = cuda_gemv.instance(picked, a.dtype, K, "phased" if phased else "masked" if masked else None)
                assert launched[-1] == want and cuda_ref.launch("gemv", a_, x, variant=variant).name == want
            launched.clear()
            cuda_ref.plans("gemv").clear()
    finally:
        cuda_ref.plans("gemv").clear()  # (no plan made under the patched loader outlives the test)


@requires_gpu
@pytest.mark.parametrize("dtype", DTYPE_NAMES)
@pytest.mark.parametrize("shape", LARGER_SHAPES, ids=str)
@pytest.mark.parametrize("variant", TRITON_VARIANTS)
def test_triton_gpu_shapes(variant, shape, dtype):
    a, x = make(shape, dtype, "cuda")
    check(triton_impl.gemv, a, x, variant=variant)


@requires_gpu
@pytest.mark.parametrize("backend", ["cuda", "triton"])
def test_strided_and_misaligned(backend):
    fn = {"cuda": cuda_ref.gemv, "triton": triton_impl.gemv}[backend]
    a, x = make((300, 1001), "float16", "cuda")
    for variant in {"cuda": CUDA_VARIANTS, "triton": TRITON_VARIANTS}[backend]:
        check(fn, a[:, 1:], x[1:], variant=variant)        # rows start 2 bytes off 16-byte alignment
        check(fn, a[::2, ::3], x[::3], variant=variant)    # steps on both axes


@requires_gpu
@pytest.mark.slow
@pytest.mark.parametrize("backend,variant", [("cuda", v) for v in CUDA_VARIANTS if v != "coalesced_const"]
                         + [("triton", v) for v in TRITON_VARIANTS])
def test_large(backend, variant):
    fn = {"cuda": cuda_ref.gemv, "triton": triton_impl.gemv}[backend]
    shape = (60000, 20000) if variant != "split_k" else (64, 1 << 22)
    a, x = make(shape, "float32", "cuda", seed=3)
    out = poison((a.shape[0],), a.dtype, a.device)
    fn(a, x, variant=variant, out=out)
    cmp = GemvSpec.compare(out, GemvSpec.reference((a, x)), (a, x))
    assert cmp.ok, cmp.detail


@requires_gpu
def test_cupy_in_cupy_out():
    cupy = pytest.importorskip("cupy")
    a, x = make((65, 33), "float32", "cuda")
    y = cuda_ref.gemv(cupy.from_dlpack(a), cupy.from_dlpack(x))
    assert isinstance(y, cupy.ndarray)
    assert GemvSpec.compare(torch.from_dlpack(y), GemvSpec.reference((a, x)), (a, x)).ok


# ---- empty, bad input ------------------------------------------------------------------------------
def _fns(device):
    fns = [triton_impl.gemv]
    if device == "cuda":
        fns.append(cuda_ref.gemv)
    return fns


def test_empty_and_k_zero(device):
    for fn in _fns(device):
        assert fn(torch.empty(0, 5, device=device), torch.ones(5, device=device)).shape == (0,)
        y = fn(torch.empty(7, 0, device=device), torch.empty(0, device=device))
        assert torch.equal(y, torch.zeros(7, device=device))


def test_bad_input(device):
    a, x = make((4, 6), "float32", device)
    for fn in _fns(device):
        with pytest.raises(ValueError, match="a must be 2-D"):
            fn(x, x)
        with pytest.raises(ValueError, match="x must be 1-D"):
            fn(a, a)
        with pytest.raises(ValueError, match=r"x must have shape\[0\] = 6 \(the columns of a"):
            fn(a, x[:5])
        with pytest.raises(TypeError, match="x has dtype float16; expected float32 like a"):
            fn(a, x.half())
        with pytest.raises(TypeError, match="a has dtype float64"):
            fn(a.double(), x.double())
        with pytest.raises(ValueError, match="variant must be"):
            fn(a, x, variant="nope")
        with pytest.raises(ValueError, match="out must have shape"):
            fn(a, x, out=torch.empty(6, device=device))
        with pytest.raises(ValueError, match="out must not alias the input x"):
            fn(a, x, out=x[:4])


def test_cpu_tensor_to_cuda_backend():
    with pytest.raises(ValueError, match="a must be on a CUDA device"):
        cuda_ref.gemv(torch.ones(3, 4), torch.ones(4))


@requires_gpu
def test_const_capacity_error():
    a, x = make((8, 16385), "float32", "cuda")
    with pytest.raises(ValueError, match="K must be <= 16384"):
        cuda_ref.gemv(a, x, variant="coalesced_const")


@pytest.mark.parametrize("variant", ["phased", "phased_last"])
@pytest.mark.parametrize("dtype", DTYPE_NAMES)
@pytest.mark.parametrize("M,K", [(300, 1500), (37, 67), (9, 6), (5, 1031)], ids=str)
def test_triton_phased_reads_only_its_rows(M, K, dtype, variant, device):
    """phased's windows start on 16 bytes and so take in the ends of the neighbouring rows: with
    inf in the columns between A's rows (A a slice of a wider buffer, rows off 16 bytes), in one
    window or several along K, no result is touched by them; phased_last's pieces of K (several a
    row here) cover every window column once, and the last takes the vector A's end cuts."""
    a, x = make((M, K), dtype, device)
    wide = torch.full((M, K + 3), float("inf"), device=device).to(a.dtype)
    wide[:, :K] = a
    sliced = wide[:, :K]
    if variant == "phased_last" and K > 128:  # (its plan splits K: more than one piece a row)
        assert triton_gemv.split(variant, M, K, a.element_size(), sm_count(a.device), K + 3)[1] > 1
    check(triton_impl.gemv, sliced, x, variant=variant)
    check(triton_impl.gemv, wide[1:, 1:K], x[1:], variant=variant)  # a base off 16 bytes too
    check(triton_impl.gemv, a, x, variant=variant)  # contiguous: the cut vector at A's very end


@pytest.mark.parametrize("variant", ["split_k_last", "phased_last"])
@pytest.mark.parametrize("M,K", [(13, 9000), (70, 12345), (1, 4097 * 3)])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_triton_split_k_last_sums_in_one_launch(M, K, dtype, variant, device):
    """split_k_last (and phased_last, its pieces of phased windows): K in several pieces and one
    launch; each row block's last program adds the pieces in k order, so a call repeats its bits; the
    flags are all down after it (the next call's counts start from zero: on a GPU the stream's kept
    pair; off one a call's own)."""
    from kernel_common import hand_over
    (launch,) = triton_gemv.plan_launches(variant, M, K, dtype.itemsize, sm_count(torch.device(device)), K)
    assert launch.grid[1] > 1
    # (seeded, as make's: unseeded, one row's dot product can cancel to a small fraction of its terms'
    # size, below the tolerance's scale of max |y|)
    a, x = GemvSpec.make_inputs((M, K), dtype, device, 0)
    check(triton_impl.gemv, a, x, variant=variant)
    y = triton_impl.gemv(a, x, variant=variant)
    for _ in range(3):
        assert torch.equal(triton_impl.gemv(a, x, variant=variant), y)
    flags, _ = hand_over(a.device, launch.grid[0], 1)
    assert not flags[:launch.grid[0]].any()
