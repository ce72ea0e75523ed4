"""Transpose, both backends: exact comparison with torch on odd, large and strided inputs."""

import math

import pytest
import torch

import cuda_ref
import triton_impl
from bench.specs import DTYPES, TransposeSpec, poison
from kernel_common import base_phase, rows_aligned16
from conftest import requires_gpu
from cuda_ref import _transpose as cuda_transpose
from triton_impl import _transpose as triton_transpose

SMALL_SHAPES = [
    (1, 1),      # a single element: one partial tile
    (1, 37),     # one row
    (37, 1),     # one column
    (33, 65),    # one past the 32- and 64-tiles in both extents
    (100, 3),    # tall and thin
]
LARGE_SHAPES = [
    (16384, 16384),  # 1 GiB of fp32: the benchmark shape
    (12345, 6789),   # odd extents: edge tiles, rows not 16-byte aligned
]
DTYPE_NAMES = list(DTYPES)
TRITON_VARIANTS = triton_impl.variants("transpose")
CUDA_VARIANTS = cuda_ref.variants("transpose")


def make(shape, dtype_name, device, seed=0):
    (a,) = TransposeSpec.make_inputs(shape, DTYPES[dtype_name], device, seed)
    return a


def check(fn, a, **kw):
    """``fn(a)`` into a poisoned ``out`` and into a new tensor, exactly ``a``'s (batched) transpose."""
    before = a.clone()
    out = TransposeSpec.make_out((a,))
    got = fn(a, out=out, **kw)
    assert got is out
    expected = TransposeSpec.reference((a,))
    cmp = TransposeSpec.compare(got, expected)
    assert cmp.ok, cmp.detail
    assert torch.equal(a, before), "input was modified"
    fresh = fn(a, **kw)  # without out: a new contiguous tensor
    assert fresh.is_contiguous() and TransposeSpec.compare(fresh, expected).ok


BATCH_SHAPES = [(3, 17, 9), (2, 65, 33), (1, 5, 7)]


def batch_views(base):
    """Batched views of a (B, R, C) tensor: itself, a step over the batch, transposed matrices
    (unit stride down columns), an offset inner window (rows not 16-byte aligned)."""
    return {"contiguous": base, "batch_step": base[::2], "t": base.transpose(1, 2),
            "offset": base[:, 1:, 1:]}


# ---- Triton: CPU (interpreter) and GPU ------------------------------------------------------
@pytest.mark.parametrize("dtype", DTYPE_NAMES)
@pytest.mark.parametrize("shape", SMALL_SHAPES, ids=str)
@pytest.mark.parametrize("variant", TRITON_VARIANTS)
def test_triton_small(variant, shape, dtype, device):
    check(triton_impl.transpose, make(shape, dtype, device), variant=variant)


@pytest.mark.parametrize("variant", TRITON_VARIANTS)
@pytest.mark.parametrize("view", ["t", "step", "offset"])
def test_triton_strided(variant, view, device):
    base = make((66, 40), "float32", device)
    a = {"t": base.t(), "step": base[::2], "offset": base[3:40, 5:31]}[view]
    check(triton_impl.transpose, a, variant=variant)


@pytest.mark.parametrize("view", ["contiguous", "batch_step", "t", "offset"])
@pytest.mark.parametrize("shape", BATCH_SHAPES, ids=str)
@pytest.mark.parametrize("variant", TRITON_VARIANTS)
def test_triton_batched(variant, shape, view, device):
    check(triton_impl.transpose, batch_views(make(shape, "float32", device))[view], variant=variant)


def test_triton_default_variant(device):
    a = make((33, 65), "float32", device)
    assert triton_transpose.pick_variant(a) == triton_impl.variants("transpose")[0] == "blocked"
    assert torch.equal(triton_impl.transpose(a), a.t())


@pytest.mark.parametrize("view,R,C,dtype,expected", [
    ("contiguous", 4000, 3001, torch.float16, "words"),     # unaligned 2-byte rows, 1504 tiles of 128 x 64
    ("contiguous", 4000, 3001, torch.bfloat16, "words"),
    ("offset", 4000, 6000, torch.float16, "words"),         # base 2 bytes off
    ("contiguous", 4001, 3008, torch.float16, "words"),     # rows in aligned, rows out not
    ("contiguous", 4000, 3008, torch.float16, "blocked"),   # both aligned
    ("contiguous", 2000, 3001, torch.float16, "words"),     # 752 tiles: enough for 2-byte elements
    ("contiguous", 1000, 1001, torch.float16, "blocked"),   # 128 tiles: too few
    ("contiguous", 4000, 3001, torch.float32, "blocked"),   # 4-byte elements: blocked, whatever the tiles
    ("contiguous", 4000, 3008, torch.float32, "blocked"),   # both aligned
    ("contiguous", 4000, 3001, torch.float64, "blocked"),   # 8-byte elements
    ("t", 4000, 3001, torch.float16, "blocked"),            # strided rows
    ("contiguous", 3, 100003, torch.float16, "narrow"),     # a side of at most 16 first
    ("t", 100003, 16, torch.float32, "narrow"),
    ("contiguous", 17, 100003, torch.float32, "narrow"),    # triton: two slabs of the narrow side
    ("contiguous", 33, 100003, torch.float16, "blocked"),   # unaligned 2-byte rows, but 33 of a tile's 128 rows
    ("contiguous", 133, 30820, torch.float16, "blocked"),   # 133 rows, off 16 bytes in and out (words_min_rows)
    ("contiguous", 511, 40001, torch.float16, "blocked"),
    ("contiguous", 512, 40001, torch.float16, "words"),
    ("contiguous", 206, 44912, torch.float16, "words"),     # rows in on 16 bytes: words at any row count
])
def test_triton_default_variant_unaligned(view, R, C, dtype, expected):
    """triton_impl's pick_variant: words for unaligned 2-byte rows of unit stride whose
    tiles fill the GPU and whose matrix fills a tile (words_min_rows rows where its rows in are
    unaligned too), blocked otherwise."""
    a = _view(view, R, C, dtype)
    assert triton_transpose.pick_variant(a) == expected


def _view(kind, R, C, dtype):
    """An (R, C) CPU tensor of ``dtype`` (torch's CPU allocations are 64-byte aligned)."""
    if kind == "contiguous":
        return torch.empty((R, C), dtype=dtype)
    if kind == "padded_row":   # row stride C + 1 elements
        return torch.empty((R, C + 1), dtype=dtype)[:, :C]
    if kind == "offset":       # the base one element past an aligned address, aligned row stride
        return torch.empty((R, C + 16), dtype=dtype)[:, 1:C + 1]
    if kind == "t":            # column-major: a .t() view of a contiguous (C, R)
        return torch.empty((C, R), dtype=dtype).t()
    raise ValueError(kind)


CUDA_DISPATCH = [  # (view, R, C, dtype, variant)
    ("contiguous", 20, 24, torch.float32, "smem_tiled_vec"),  # 16-byte rows in and out
    ("contiguous", 20, 24, torch.int32, "smem_tiled_vec"),
    ("contiguous", 24, 32, torch.float16, "smem_tiled_vec"),
    ("contiguous", 24, 32, torch.bfloat16, "smem_tiled_vec"),
    ("contiguous", 32, 32, torch.int8, "smem_tiled_vec"),
    ("contiguous", 4, 4, torch.float32, "narrow"),  # a side of at most 16
    ("contiguous", 3, 100003, torch.float32, "narrow"),
    ("t", 100003, 3, torch.float16, "narrow"),
    ("contiguous", 16, 5000, torch.int8, "narrow"),
    ("contiguous", 5000, 16, torch.float64, "narrow"),
    ("contiguous", 20, 5000, torch.float32, "smem_tiled_vec"),
    ("contiguous", 4000, 3001, torch.float32, "smem_tiled_sheared"),  # unaligned 4-byte rows, 2961 tiles
    ("contiguous", 4000, 3001, torch.int32, "smem_tiled_sheared"),
    ("contiguous", 2000, 3001, torch.float32, "smem_tiled_sheared"),  # 1504 tiles
    ("contiguous", 1000, 2001, torch.float32, "smem_tiled_rows"),     # 512 tiles: too few
    ("contiguous", 1025, 1023, torch.float32, "smem_tiled_rows"),
    ("offset", 4000, 6000, torch.float16, "smem_tiled_sheared"),  # base 2 bytes off, 5922 tiles
    ("offset", 4000, 6000, torch.bfloat16, "smem_tiled_sheared"),
    ("offset", 4000, 6000, torch.int8, "smem_tiled_sheared"),     # 1-byte: 128 x 64 tiles, 3008 of them
    ("offset", 1000, 1000, torch.int8, "smem_tiled_rows"),        # 144 tiles: too few
    ("contiguous", 4000, 3001, torch.float64, "smem_tiled_sheared"),  # 8-byte rows off 16 bytes
    ("contiguous", 18, 20, torch.float32, "smem_tiled_rows"),  # output rows of 72 bytes, one tile
    ("contiguous", 20, 32, torch.float16, "smem_tiled_rows"),  # output rows of 40 bytes
    ("contiguous", 1, 12, torch.float32, "narrow"),  # one row
    ("contiguous", 20, 19, torch.float32, "smem_tiled_rows"),   # input rows of 76 bytes
    ("padded_row", 20, 24, torch.float32, "smem_tiled_rows"),  # row stride of 100 bytes
    ("offset", 20, 24, torch.float32, "smem_tiled_rows"),      # base 4 bytes off
    ("contiguous", 20, 24, torch.float64, "smem_tiled_rows"),  # 8-byte elements
    ("t", 20, 24, torch.float32, "smem_tiled_rows"),           # column-major input
    ("t", 24, 32, torch.float16, "smem_tiled_rows"),
    ("contiguous", 56, 40254, torch.float16, "narrow"),  # a side of 17-64: the chunk kernels (_flat_wins)
    ("contiguous", 30, 100003, torch.int8, "narrow"),
    ("contiguous", 64, 4096, torch.float16, "smem_tiled_vec"),  # 64 aligned rows: the vector tiles
    ("contiguous", 40, 300001, torch.float32, "smem_tiled_sheared"),  # 4-byte rows
    ("contiguous", 92069, 26, torch.float16, "smem_tiled_words"),  # tall, rows past 20 bytes: words tiles
    ("contiguous", 700001, 31, torch.float16, "smem_tiled_words"),
    ("contiguous", 600011, 7, torch.float64, "smem_tiled_words"),
    ("contiguous", 292355, 10, torch.float16, "narrow"),  # 20-byte rows: the chunks
    ("contiguous", 1000003, 20, torch.int8, "narrow"),
    ("contiguous", 40000, 26, torch.float16, "narrow"),  # words tiles short of two an SM
    ("contiguous", 4096, 24, torch.float16, "narrow"),
    ("contiguous", 100003, 48, torch.float16, "smem_tiled_sheared"),  # 48 columns: the tiles
    ("t", 4096, 24, torch.float16, "smem_tiled_rows"),  # a strided input: no chunks
]


@pytest.mark.parametrize("view,R,C,dtype,expected", CUDA_DISPATCH, ids=str)
def test_cuda_default_variant(view, R, C, dtype, expected):
    """cuda_ref's pick_variant: narrow's flat tiles where a side is at most 16, its chunk kernels for some of
    17-64 (``_flat_wins``); the vector kernel for
    1-, 2- and 4-byte elements in aligned rows of unit stride; unaligned rows of unit stride the
    sheared tiles where they fill the GPU; the row-tiled kernel otherwise."""
    a = _view(view, R, C, dtype)
    assert tuple(a.shape) == (R, C)
    assert cuda_transpose.pick_variant(a) == expected


# narrow's flat tiles: one slab of the narrow side (1-16), several (40: 16 + 16 + 8), either
# orientation, a partial run of the long side, a batch; strided and offset views; Triton's output
# stored flat where its rows are not whole vectors (2, 3 and 13 rows: tiles of 2, 4 and 16), and
# not (6 rows)
NARROW_SHAPES = [(3, 10003), (10003, 3), (1, 4099), (16, 5000), (40, 3000), (3000, 40), (4, 3, 2051),
                 (13, 4097), (2, 5001), (6, 2049), (4097, 11), (5003, 16), (2049, 2), (2, 17, 3001), (3, 999, 30)]


def test_triton_narrow_stores_flat_where_output_rows_are_off_vectors():
    """Triton's narrow: one matrix of 2-4 or 9-16 rows whose output rows are not whole 16-byte
    vectors stores its output flat; 5-8 rows (tiles of 8), whole-vector rows and batches keep the
    row stores (docs/decisions/006-transpose-defaults.md)."""
    from triton_impl import _transpose as tt

    def kernel(R, C, itemsize, batch=1):  # (a contiguous input: alignment's hints of its rows)
        vec = 16 // itemsize
        return tt.plan_launch("narrow", R, C, itemsize, False, batch, (1, vec if R % vec == 0 else 1)).fn
    assert kernel(13, 4097, 2) is kernel(3, 5000, 4) is kernel(2, 999, 1) is tt._transpose_narrow_flat_kernel
    for case in ((6, 4097, 2), (7, 999, 1), (16, 4097, 2), (13, 4097, 2, 3), (4097, 13, 2)):
        assert kernel(*case) is tt._transpose_blocked_kernel, case


def test_cuda_narrow_flat_kernels_take_few_rows_or_columns():
    """cuda_ref's narrow: matrices of 2-64 rows, fewer than their columns, in unit-stride rows (at
    any alignment), into an output whose matrices start on 16 bytes, run narrow_flat; contiguous
    matrices of 2-64 columns, fewer than their rows, narrow_flat_tall; the rest the element-wise tile."""
    a = torch.empty(13, 4099, dtype=torch.float16)
    out = torch.empty(4099 * 64 + 8, dtype=torch.float16)
    b = torch.empty(3, 16, 4099, dtype=torch.float16)  # matrices of 16 x 4099 fp16: 16-byte multiples
    for v in (a, a[:, 1:], a[:2], torch.empty(64, 4099), b, b[:, :, 1:]):
        assert cuda_transpose._flat(v, out.data_ptr() % 16 == 0) == "narrow_flat", v.shape
    for v in (a.t().contiguous(), a.t().contiguous()[1:], a.t().contiguous()[:, :2].contiguous(),
              torch.empty(4099, 64), torch.empty(5, 99, 30)):
        assert cuda_transpose._flat(v, False) == "narrow_flat_tall", v.shape
    for v, o in ((a, out[1:]), (a[:1], out), (a.t(), out), (a[:, ::2], out), (a.t()[:, 1:], out),
                 (a.t().contiguous()[:, :2], out), (torch.empty(3, 13, 4099, dtype=torch.float16), out),
                 (torch.empty(65, 4099), out), (torch.empty(4099, 65), out), (b.transpose(1, 2)[:, 1:], out)):
        assert cuda_transpose._flat(v, o.data_ptr() % 16 == 0) is None, (v.shape, v.stride(), o.data_ptr() % 16)
    # a block's share, sized over the batch: 54 matrices of 2689 x 15 fp32 in blocks of 272 rows
    launch = cuda_transpose.plan_launch("narrow_flat_tall", 2689, 15, 4, 54)
    assert launch.grid == (10, 1, 54) and launch.name == "transpose_narrow_flat_tall<unsigned int>"
    assert cuda_transpose.plan_launch("narrow_flat", 13, 3541196, 2).grid == (11350, 1, 1)  # 312 columns a block


@requires_gpu
@pytest.mark.parametrize("dtype", ["float16", "float32"])
@pytest.mark.parametrize("shape, variant", [((13, 4099), "narrow"), ((30, 40001), None)], ids=str)
def test_cuda_narrow_into_an_output_off_16_bytes(shape, variant, dtype):
    """narrow into an ``out`` a few elements off 16 bytes: the element-wise tile, and the default's
    rows of 17-64 the tiles; nothing written outside."""
    a = make(shape, dtype, "cuda", seed=9)
    expected = TransposeSpec.reference((a,))
    buf = poison((expected.numel() + 3,), a.dtype, a.device)
    out = buf[1:1 + expected.numel()].view(expected.shape)
    assert cuda_ref.transpose(a, variant=variant, out=out) is out
    assert TransposeSpec.compare(out, expected).ok
    ends = poison((3,), a.dtype, a.device).view(torch.uint8)
    assert torch.equal(buf[:1].view(torch.uint8), ends[:a.element_size()])
    assert torch.equal(buf[-2:].view(torch.uint8), ends[a.element_size():])


@pytest.mark.parametrize("dtype", ["float32", "float16", "int8", "float64"])
@pytest.mark.parametrize("shape", NARROW_SHAPES, ids=str)
def test_narrow(shape, dtype, device):
    fns = [triton_impl.transpose] + ([cuda_ref.transpose] if device == "cuda" else [])
    a = make(shape, dtype, device, seed=5)
    views = [a, a.transpose(-1, -2), a[..., 1:]]  # contiguous, column-major, offset rows
    for fn in fns:
        for v in views:
            check(fn, v, variant="narrow")
            if min(v.shape[-2:]) <= 16:
                check(fn, v)  # the default takes it too


@pytest.mark.parametrize("dtype", ["float32", "float16", "int8"])
@pytest.mark.parametrize("shape", [(1, 7), (5, 1), (1, 1), (3, 1, 9), (3, 7, 1), (1, 40000)], ids=str)
def test_plain_copy(shape, dtype, device):
    """A side of 1: the transpose is the elements in the order they are, one device copy
    (``transpose_as_copy``) for variant=None and narrow, the plan's copy with out, through strides,
    and for a view whose memory is not its values; a new contiguous result, never a's memory."""
    fns = [triton_impl.transpose] + ([cuda_ref.transpose] if device == "cuda" else [])
    a = make(shape, dtype, device, seed=6)
    wide = make((*shape[:-1], 2 * shape[-1]), dtype, device, seed=7)
    views = [a, wide[..., ::2]]  # contiguous, and a step along the rows
    if a.is_floating_point():
        views.append(torch._neg_view(a))  # the negative bit: resolved, then copied
        views.append(torch._efficientzerotensor(shape, dtype=a.dtype, device=device))  # no memory: zeros written
    for fn in fns:
        assert (triton_impl if fn is triton_impl.transpose else cuda_ref).pick("transpose", a) == "narrow"
        for v in views:
            want = v.transpose(-1, -2).resolve_neg()
            for variant in (None, "narrow"):
                got = fn(v, variant=variant)
                assert got.is_contiguous() and torch.equal(got, want) and got.data_ptr() != v.data_ptr()
                assert not got.is_neg() and not got._is_zerotensor()
            out = poison(want.shape, v.dtype, v.device)
            assert fn(v, out=out) is out and torch.equal(out, want)
    # traced by torch.compile, the copy is torch's view and clone in the graph (not our op): no
    # break, same values
    for fn in fns:
        torch._dynamo.reset()
        targets = []

        def keep_graph(gm, example_inputs):
            targets.extend(str(n.target) for n in gm.graph.nodes if n.op in ("call_function", "call_method"))
            return gm.forward
        compiled = torch.compile(lambda v: fn(v), fullgraph=True, backend=keep_graph)
        assert torch.equal(compiled(a), a.transpose(-1, -2))
        assert targets and not any("triton_impl" in t or "cuda_ref" in t for t in targets), targets


# ---- CUDA: GPU only ---------------------------------------------------------------------------
@requires_gpu
@pytest.mark.parametrize("dtype", DTYPE_NAMES)
@pytest.mark.parametrize("shape", SMALL_SHAPES, ids=str)
@pytest.mark.parametrize("variant", CUDA_VARIANTS)
def test_cuda_small(variant, shape, dtype):
    check(cuda_ref.transpose, make(shape, dtype, "cuda"), variant=variant)


@requires_gpu
@pytest.mark.parametrize("variant", CUDA_VARIANTS)
@pytest.mark.parametrize("view", ["t", "step", "offset"])
def test_cuda_strided(variant, view):
    base = make((130, 72), "float32", "cuda")
    a = {"t": base.t(), "step": base[::2], "offset": base[3:70, 1:67]}[view]
    check(cuda_ref.transpose, a, variant=variant)


@requires_gpu
@pytest.mark.parametrize("view", ["contiguous", "batch_step", "t", "offset"])
@pytest.mark.parametrize("shape", BATCH_SHAPES, ids=str)
@pytest.mark.parametrize("variant", CUDA_VARIANTS)
def test_cuda_batched(variant, shape, view):
    check(cuda_ref.transpose, batch_views(make(shape, "float32", "cuda"))[view], variant=variant)


@requires_gpu
@pytest.mark.parametrize("dtype", DTYPE_NAMES)
@pytest.mark.parametrize("shape", [(67, 45), (130, 129), (257, 131), (333, 1001), (4, 300), (300, 5), (260, 125)],
                         ids=str)
@pytest.mark.parametrize("offset", [(0, 0), (1, 0), (0, 1), (2, 3)], ids=str)
@pytest.mark.parametrize("variant", ["smem_tiled_vec", "smem_tiled_words", "smem_tiled_sheared"])
def test_cuda_unaligned(variant, offset, shape, dtype):
    """smem_tiled_vec's shifted vector path, smem_tiled_words' packed words and
    smem_tiled_sheared's sheared tiles: rows and output rows starting at every phase within 16
    bytes (odd extents, offset views), edge tiles, the tile's first and last chunks."""
    r, c = offset
    base = make((shape[0] + r, shape[1] + c), dtype, "cuda", seed=3)
    check(cuda_ref.transpose, base[r:, c:], variant=variant)


@pytest.mark.parametrize("dtype", ["float16", "int8", "float32", "float64"])
@pytest.mark.parametrize("shape", [(129, 67), (130, 64), (255, 3), (3, 200), (2, 129, 65)], ids=str)
@pytest.mark.parametrize("out_offset", [0, 1, 3], ids=str)
@pytest.mark.parametrize("backend, variant", [("cuda", "smem_tiled_words"), ("cuda", "smem_tiled_sheared"),
                                              ("triton", "words")])
def test_words_phases(backend, variant, out_offset, shape, dtype, device):
    """The kernels that store output rows by their phase (CUDA smem_tiled_words and
    smem_tiled_sheared, Triton words): output rows starting at every element phase of a word or
    chunk (odd R, int8's phases, a batch whose matrices alternate, an ``out`` a few elements off),
    partial words and chunks at both ends of a tile's segments and where R cuts the last tile."""
    if backend == "cuda" and device != "cuda":
        pytest.skip("the CUDA kernels need a GPU")
    fn = {"cuda": cuda_ref.transpose, "triton": triton_impl.transpose}[backend]
    a = make(shape, dtype, device, seed=6)
    expected = TransposeSpec.reference((a,))
    buf = poison((expected.numel() + out_offset,), a.dtype, a.device)
    out = buf[out_offset:].view(expected.shape)
    assert fn(a, variant=variant, out=out) is out
    assert TransposeSpec.compare(out, expected).ok
    before = poison((out_offset,), a.dtype, a.device)
    assert torch.equal(buf[:out_offset].view(torch.uint8), before.view(torch.uint8)), "wrote before out"


@pytest.mark.parametrize("group", [1, 3])
@pytest.mark.parametrize("shape", [(300, 500), (261, 459), (2, 131, 333)], ids=str)
@pytest.mark.parametrize("backend, variant", [("cuda", "smem_tiled_vec"), ("cuda", "smem_tiled_sheared"),
                                              ("triton", "words")])
def test_tile_bands(backend, variant, shape, group, device, monkeypatch):
    """The kernels that take their tiles down the columns in bands of columns of tiles: bands of
    one column, and bands of three over 4-16 columns of tiles (a last band narrower than the
    rest), each tile written once (fp16: words' pairs, the sheared tile's phases)."""
    if backend == "cuda" and device != "cuda":
        pytest.skip("the CUDA kernels need a GPU")
    if backend == "cuda":
        module, fn = cuda_transpose, cuda_ref.transpose
        monkeypatch.setattr(module, "band_width", lambda tiles_r: group)
    else:
        module, fn = triton_transpose, triton_impl.transpose
        monkeypatch.setattr(module, "WORDS_BAND", group)
    monkeypatch.setattr(module._PLANS, "_plans", {})  # (plans made with the shipped bands)
    check(fn, make(shape, "float16", device, seed=8), variant=variant)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32"])
@pytest.mark.parametrize("shape", [(385, 131), (386, 131), (385, 132), (2, 256, 99)], ids=str)
@pytest.mark.parametrize("offsets", [(0, 0), (1, 0), (2, 1), (3, 1), (1, 1)], ids=str)
def test_word_pairs_phases(offsets, shape, dtype, device):
    """Triton words on 2- and 4-byte unit-stride rows loads words too (``_transpose_word_pairs_kernel``):
    input rows and output rows at both phases of a word and of each parity (odd and even R and C,
    a base a few elements off, an ``out`` one element off), interior tiles (no masks) and edge
    tiles (the words at a column's first and last row, stored a half at a time), a batch."""
    in_offset, out_offset = offsets
    n = math.prod(shape)
    a = make((n + in_offset,), dtype, device, seed=7)[in_offset:].view(shape)
    *_, R, C = shape
    expected = TransposeSpec.reference((a,))
    buf = poison((n + out_offset + 3,), a.dtype, a.device)
    out = buf[out_offset:out_offset + n].view(expected.shape)
    # the kernel under test: _plan's phases of these very tensors load words
    es = a.element_size()
    assert triton_transpose._word_phases(es, R, C, R * C, C, 1, math.prod(shape[:-2]), a.data_ptr() // es % 2,
                                         out.data_ptr() // es % 2) is not None
    assert triton_impl.transpose(a, variant="words", out=out) is out
    assert TransposeSpec.compare(out, expected).ok
    rest = torch.cat([buf[:out_offset], buf[out_offset + n:]])
    assert torch.equal(rest.view(torch.int16), poison((rest.numel(),), a.dtype, a.device).view(torch.int16)), \
        "wrote outside out"


@requires_gpu
@pytest.mark.parametrize("backend", ["cuda", "triton"])
def test_batched_attention_shape(backend):
    """(64, 1024, 1000): the issue's batched case, every matrix's rows unaligned in fp16."""
    fn = {"cuda": cuda_ref.transpose, "triton": triton_impl.transpose}[backend]
    for dtype in ("float32", "float16"):
        check(fn, make((64, 1024, 1000), dtype, "cuda", seed=4))


@requires_gpu
def test_batch_past_grid_limit():
    """More matrices than a grid axis holds (65535): the launchers split the batch."""
    a = make((65537, 3, 5), "float32", "cuda", seed=5)
    for fn in (cuda_ref.transpose, triton_impl.transpose):
        check(fn, a)


@requires_gpu
@pytest.mark.slow
@pytest.mark.parametrize("dtype", ["float32", "float16", "float64"])
@pytest.mark.parametrize("shape", LARGE_SHAPES, ids=str)
@pytest.mark.parametrize("backend,variant",
                         [("cuda", v) for v in CUDA_VARIANTS if v != "serial"]
                         + [("triton", v) for v in TRITON_VARIANTS])
def test_large(backend, variant, shape, dtype):
    fn = {"cuda": cuda_ref.transpose, "triton": triton_impl.transpose}[backend]
    a = make(shape, dtype, "cuda", seed=1)
    out = poison((a.shape[1], a.shape[0]), a.dtype, a.device)
    fn(a, variant=variant, out=out)
    cmp = TransposeSpec.compare(out, a.t().contiguous())
    assert cmp.ok, cmp.detail


@requires_gpu
@pytest.mark.parametrize("backend", ["cuda", "triton"])
def test_all_variants_every_dtype_mid_shape(backend):
    """Every variant and dtype on a shape with full tiles, vector paths and edges at once."""
    fn = {"cuda": cuda_ref.transpose, "triton": triton_impl.transpose}[backend]
    for variant in {"cuda": CUDA_VARIANTS, "triton": TRITON_VARIANTS}[backend]:
        shape = (190, 250) if variant == "serial" else (1000, 1288)
        for dtype in DTYPE_NAMES:
            check(fn, make(shape, dtype, "cuda", seed=2), variant=variant)


@requires_gpu
def test_cupy_in_cupy_out():
    cupy = pytest.importorskip("cupy")
    a = cupy.asarray(make((65, 33), "float32", "cuda").cpu().numpy())
    t = cuda_ref.transpose(a)
    assert isinstance(t, cupy.ndarray)
    assert (t == a.T).all()
    out = cupy.empty((33, 65), dtype=cupy.float32)
    got = cuda_ref.transpose(a, out=out)
    assert isinstance(got, cupy.ndarray) and got.data.ptr == out.data.ptr  # written into out
    assert (out == a.T).all()


# ---- empty, bad input -------------------------------------------------------------------------
EMPTY_SHAPES = [(0, 5), (7, 0), (0, 0), (0, 3, 4), (2, 0, 4)]


@pytest.mark.parametrize("shape", EMPTY_SHAPES, ids=str)
def test_empty_triton(shape, device):
    a = torch.empty(shape, device=device)
    assert triton_impl.transpose(a).shape == (*shape[:-2], shape[-1], shape[-2])


@requires_gpu
@pytest.mark.parametrize("shape", EMPTY_SHAPES, ids=str)
def test_empty_cuda(shape):
    a = torch.empty(shape, device="cuda")
    assert cuda_ref.transpose(a).shape == (*shape[:-2], shape[-1], shape[-2])


def _bad_cases(device):
    a = make((4, 6), "float32", device)
    return [
        ((torch.ones(3, device=device),), {}, ValueError, "a must be 2-D or 3-D"),
        ((torch.ones(2, 2, 2, 2, device=device),), {}, ValueError, "a must be 2-D or 3-D"),
        ((a.to(torch.int16),), {}, TypeError, "a has dtype int16"),
        ((a.to(torch.complex64),), {}, TypeError, "a has dtype complex64"),
        ((a.bool(),), {}, TypeError, "a has dtype bool"),
        (([[1.0]],), {}, TypeError, "a must be a torch"),
        ((a,), {"variant": "nope"}, ValueError, "variant must be"),
        ((a,), {"out": torch.empty(4, 6, device=device)}, ValueError, "out must have shape"),
        ((a,), {"out": torch.empty(6, 4, device=device, dtype=torch.float64)}, TypeError, "out must have dtype"),
        ((a,), {"out": torch.empty(4, 12, device=device)[:, ::2].t()}, ValueError, "out must be contiguous"),
        ((a,), {"out": a.view(6, 4)}, ValueError, "out must not alias the input a"),
    ]


@pytest.mark.parametrize("case", range(len(_bad_cases("cpu"))))
@pytest.mark.parametrize("backend", ["cuda", "triton"])
def test_bad_input(backend, case, device):
    """Each refusal with its own message, on CPU too: devices are checked after everything else."""
    args, kw, exc, msg = _bad_cases(device)[case]
    with pytest.raises(exc, match=msg):
        {"cuda": cuda_ref.transpose, "triton": triton_impl.transpose}[backend](*args, **kw)


def test_cpu_tensor_to_cuda_backend():
    with pytest.raises(ValueError, match="a must be on a CUDA device"):
        cuda_ref.transpose(torch.ones(3, 4))


@requires_gpu
def test_out_on_wrong_device():
    a = make((4, 6), "float32", "cuda")
    for fn in (cuda_ref.transpose, triton_impl.transpose):
        with pytest.raises(ValueError, match="out must be on device"):
            fn(a, out=torch.empty(6, 4))


def test_rows_aligned16_batch():
    """A batch's rows are aligned only when every matrix's are: the matrix stride counts too
    (the vector kernels of both backends read the flag for the whole batch)."""
    assert rows_aligned16(torch.empty(3, 8, 12))
    assert not rows_aligned16(torch.empty(3 * 97).as_strided((3, 8, 12), (97, 12, 1)))  # matrix stride 388 bytes
    assert rows_aligned16(torch.empty(97).as_strided((1, 8, 12), (97, 12, 1)))             # one matrix
    assert not rows_aligned16(torch.empty(3, 8, 13)[:, :, :12])                      # row stride 52 bytes
    a = torch.empty(3 * 97 * 20).view(3, 97, 20)[:, :24]                                # matrix stride 7760 bytes
    assert rows_aligned16(a) and cuda_transpose.pick_variant(a) == "smem_tiled_vec"
