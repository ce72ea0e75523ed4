"""Matmul, both backends: float64 reference with the dtype's tolerance (bench.specs.MatmulSpec),
odd shapes, strided operands, precision modes and bad input. Streams and CUDA graphs: every
public function in tests/test_concurrency.py; past 2^31 elements: tests/test_large.py."""

import contextlib
from unittest import mock

import pytest
import torch

import cuda_ref
import triton_impl
from bench import nvrtc
from bench.resources import SMEM_PER_BLOCK
from bench.specs import MatmulSpec, poison
from bench.workloads import draw_matmul
from triton_impl.catalog import RECORDS as TRITON_RECORDS
from cuda_ref.catalog import RECORDS as CUDA_RECORDS
from kernel_common.catalog import lookup as catalog_lookup
from kernel_common.plans import grain
from conftest import requires_gpu
from cuda_ref import loader
from kernel_common import balanced_grid, cdiv
from kernel_common import util as kernel_util

from cuda_ref import _matmul as cuda_matmul
from cuda_ref import _matmul_few_rows as cuda_few_rows, _matmul_float32 as cuda_float32, _matmul_wgmma as cuda_wgmma
from cuda_ref import _arch as cuda_arch, _matmul_swap as cuda_swap
from triton_impl import _matmul as triton_matmul, _matmul_configs, _matmul_fp32, _matmul_tma, _tuning

SMALL_SHAPES = [  # (M, N, K)
    (1, 1, 1),       # a single element: one partial tile, one partial K slice
    (67, 45, 33),    # one past a power of two in every extent: edge tiles everywhere
    (1, 300, 7),     # one row; K shorter than any BLOCK_K
    (130, 1, 260),   # one column; K not a multiple of BLOCK_K
    (33, 65, 129),   # one past the 32- and 64-tiles in M and N, K one past 128
]
GPU_SHAPES = SMALL_SHAPES + [
    (3, 4095, 129),     # decode rows: few_rows's 4-row tile with a row past M, an odd column pair
    (495, 5333, 71),    # K not a multiple of BLOCK_K, N wide and not a multiple of any tile
    (4097, 4095, 129),  # one past / one short of the tile in M and N: full tiles and edges
]
DTYPE_NAMES = [d for d in MatmulSpec.dtypes if not d.startswith("int")]  # float32, tf32, float16, bfloat16
INT_NAMES = ["int8", "int32"]  # exact: tests at the end
TRITON_VARIANTS = triton_impl.variants("matmul")
CUDA_VARIANTS = cuda_ref.variants("matmul")
ALL = [("cuda", v) for v in CUDA_VARIANTS] + [("triton", v) for v in TRITON_VARIANTS]
FNS = {"cuda": cuda_ref.matmul, "triton": triton_impl.matmul}
F32_NAMES = ("float32", "tf32")  # dtype names whose tensors are float32


def takes(backend, variant, dtype_name) -> bool:
    """The registry's rule: False for the float32-only CUDA variants (the SGEMM walk) on 16-bit
    dtypes, the 16-bit tensor-core ones on float32, the int8 ones on floats."""
    from bench import registry
    return registry.get("matmul", backend, variant).takes(dtype_name)


def check_or_refuse(backend, variant, a, b, dtype_name):
    """check(), or for a variant that does not take the dtype: the TypeError naming it. A GPU-only
    Triton variant (fma_ws: Gluon has no interpreter) skips on the CPU."""
    if takes(backend, variant, dtype_name):
        from bench import registry
        impl = registry.get("matmul", backend, variant)
        if a.device.type == "cpu" and impl.needs_gpu:
            pytest.skip(f"{variant} runs on a GPU only")
        if impl.max_k is not None and a.shape[1] > impl.max_k:  # (short_k: K <= 16)
            with pytest.raises(ValueError, match=f"K <= {impl.max_k}"):
                FNS[backend](a, b, variant=variant)
            return
        check(FNS[backend], a, b, dtype_name, variant=variant)
    else:
        with pytest.raises(TypeError, match=f"variant {variant} supports .* only, got"):
            FNS[backend](a, b, variant=variant)


def make(shape, dtype_name, device, seed=0):
    return MatmulSpec.make_inputs(shape, MatmulSpec.torch_dtype(dtype_name), device, seed)


def layout(x, kind):
    """The same values as ``x`` in another memory layout. Unused memory around strided views is
    NaN, so a kernel that reads through the wrong stride shows it."""
    if kind == "row":
        return x
    if kind == "col":  # column-major: a .t() view of a contiguous transpose
        return x.t().contiguous().t()
    rows, cols = x.shape
    if kind == "step":
        big = torch.full((2 * rows, 3 * cols), float("nan"), dtype=x.dtype, device=x.device)
        big[::2, ::3] = x
        return big[::2, ::3]
    if kind == "offset":
        big = torch.full((rows + 3, cols + 5), float("nan"), dtype=x.dtype, device=x.device)
        big[3:, 5:] = x
        return big[3:, 5:]
    raise ValueError(kind)


def check(fn, a, b, dtype_name, **kw):
    """out poisoned, compared with the float64 reference; inputs unchanged; out=None too."""
    with MatmulSpec.context(dtype_name):
        before = (a.clone(), b.clone())
        ref = MatmulSpec.reference((a, b))
        out = poison((a.shape[0], b.shape[1]), a.dtype, a.device)
        got = fn(a, b, out=out, **kw)
        assert got is out
        cmp = MatmulSpec.compare(got, ref, (a, b))
        assert cmp.ok, cmp.detail
        assert torch.equal(a, before[0]), "a was modified"
        assert torch.equal(b, before[1]), "b was modified"
        fresh = fn(a, b, **kw)
        assert fresh.is_contiguous() and fresh.dtype == a.dtype
        cmp = MatmulSpec.compare(fresh, ref, (a, b))
        assert cmp.ok, cmp.detail
        return fresh


# ---- Triton: CPU (interpreter) and GPU ------------------------------------------------------
@pytest.mark.parametrize("dtype", DTYPE_NAMES)
@pytest.mark.parametrize("shape", SMALL_SHAPES, ids=str)
@pytest.mark.parametrize("variant", TRITON_VARIANTS)
def test_triton_small(variant, shape, dtype, device):
    check_or_refuse("triton", variant, *make(shape, dtype, device), dtype)


LAYOUTS = [("row", "col"), ("col", "row"), ("col", "col"), ("step", "step"), ("offset", "col")]


@pytest.mark.parametrize("dtype", ["float32", "float16"])
@pytest.mark.parametrize("layouts", LAYOUTS, ids="-".join)
@pytest.mark.parametrize("variant", TRITON_VARIANTS)
def test_triton_strided(variant, layouts, dtype, device):
    a, b = make((67, 45, 33), dtype, device)
    check_or_refuse("triton", variant, layout(a, layouts[0]), layout(b, layouts[1]), dtype)


@pytest.mark.parametrize("small_bytes", [0, 6000, 1 << 30])
@pytest.mark.parametrize("a_kind", ["row", "col"])
def test_triton_tma_copies(a_kind, small_bytes, device, monkeypatch):
    """The TMA kernel on operands no descriptor reads where they lie (rows of 65 and 77 elements):
    copies in their own major order, by one launch, by torch's copy, or one each way."""
    monkeypatch.setattr(_matmul_tma._PadCopies, "SMALL_BYTES", small_bytes)
    monkeypatch.setattr(triton_matmul, "_PLANS", triton_matmul.PlanCache(triton_matmul._plan))
    a, b = make((130, 77, 65), "float16", device)
    check(triton_impl.matmul, layout(a, a_kind), b.t().contiguous().t(), "float16", variant="tma_persistent")
    check(triton_impl.matmul, layout(a, a_kind), b, "float16", variant="tma_persistent")


@pytest.mark.parametrize("b_kind", ["row", "wt"])
def test_triton_tma_several_tiles_a_program(b_kind, device, monkeypatch):
    """The TMA kernel's programs loop over several tiles (here 3 programs, as many SMs), whose K
    loops the compiler fuses into one pipeline (FUSE_K), or run one tile each (the loops nested):
    both right, and equal bit for bit (the same sums in the same order), with edge tiles and a K
    tail. The plan sets FUSE_K only where programs take several tiles and c goes out through a
    descriptor."""
    a, b = make((300, 520, 130), "float16", device)
    b = b.t().contiguous().t() if b_kind == "wt" else b
    cfg = triton_matmul.config_for("tma_persistent", a, b, triton_matmul._input_precision(a.dtype))
    monkeypatch.setattr(triton_matmul, "config_for", lambda *args: cfg)  # one tile for both grids
    fused = set()  # (programs, FUSE_K) of each plan's launch

    class Launch(triton_matmul.TritonLaunch):
        def __init__(self, fn, grid, meta, *args, **kw):
            if fn is _matmul_tma._tma_persistent_kernel:
                fused.add((grid[0], meta["FUSE_K"]))
            super().__init__(fn, grid, meta, *args, **kw)
    monkeypatch.setattr(_matmul_tma, "TritonLaunch", Launch)
    outs = []
    for sms in (3, 1 << 20):
        monkeypatch.setattr(triton_matmul, "sm_count", lambda device, sms=sms: sms)
        monkeypatch.setattr(triton_matmul, "_PLANS", triton_matmul.PlanCache(triton_matmul._plan))
        outs.append(check(triton_impl.matmul, a, b, "float16", variant="tma_persistent"))
    assert torch.equal(*outs)
    tiles = cdiv(300, cfg.kwargs["BLOCK_M"]) * cdiv(520, cfg.kwargs["BLOCK_N"])
    assert fused == {(balanced_grid(tiles, 3), True), (tiles, False)}
    # c by masked stores (rows of 521 elements, off 16 bytes): nested, whatever the tiles
    fused.clear()
    monkeypatch.setattr(triton_matmul, "sm_count", lambda device: 3)
    check(triton_impl.matmul, *make((300, 521, 130), "float16", device), "float16", variant="tma_persistent")
    assert fused == {(3, False)}


def test_triton_default_variant(device):
    """TMA where descriptors can read a and b and write c where they lie (the interpreter counts
    as Hopper), split across K when the tiles alone leave SMs idle; grouped otherwise. Exact float32
    on the TMA kernel: stream_k (decision 061)."""
    pick = triton_matmul.pick_variant
    a, b = make((68, 48, 40), "float32", device)
    assert TRITON_VARIANTS[0] == "tma_persistent" == pick(a.half(), b.half())
    assert pick(a, b) == "stream_k" == pick(layout(a, "col"), layout(b, "col"))
    assert pick(*make((8, 64, 2048), "float16", device)) == "split_k"  # one or two tiles, K in slices
    # exact float32 with few rows: on a row-major b grouped from 5 to 64 rows where its 16 x 128
    # tiles fill every SM; few_rows_ws from 5 to 64 rows where Gluon runs and its programs keep half
    # the SMs busy; else on W.t() few_rows under 64, on a row-major b grouped from 5 to 64 rows where
    # its 16 x 64 tiles keep half the SMs busy, else few_rows; TF32 keeps the tensor-core kernel
    few_a, few_b = make((64, 64, 2048), "float32", device)
    sms = triton_matmul.sm_count(few_a.device)
    ws = "few_rows_ws" if triton_matmul.fma_ws_runs(few_a.device) else "few_rows"  # (the interpreter has no Gluon)
    wide_w = torch.empty(256 * sms, 256, device=device)  # few_rows_ws's 16 x 256 tiles: one an SM
    assert pick(few_a[:5, :256], wide_w.t()) == ws == pick(few_a[:63, :256], wide_w.t())
    assert pick(few_a[:4, :256], wide_w.t()) == "few_rows" == pick(few_a[:16], layout(few_b, "col"))
    at_64 = pick(few_a[:64, :256], wide_w.t())
    assert at_64 == "few_rows_ws" if ws == "few_rows_ws" else at_64 != "few_rows"  # (few_rows stops under 64 rows)
    assert pick(few_a[:16], few_b) == "few_rows" == pick(few_a[:17], few_b) == pick(few_a, few_b)
    wide = torch.empty(2048, 64 * sms, device=device)
    assert pick(few_a[:5], wide) == pick(few_a[:16], wide) == ("grouped" if ws == "few_rows" else ws)
    assert pick(few_a[:17], wide) == "grouped"  # (its 16 x 128 tiles fill every SM)
    assert pick(few_a[:4], wide) == "few_rows" == pick(few_a[:1], torch.empty(2048, 128 * sms, device=device))
    assert pick(few_a[:5], wide.t().contiguous().t()) == ws  # (33 tiles in 2 K slices: 66 programs)
    assert pick(few_a[:1], layout(few_b, "col")) == "few_rows"
    with MatmulSpec.context("tf32"):
        assert pick(few_a[:16], layout(few_b, "col")) == "split_k" == pick(*make((8, 64, 2048), "float32", device))
    assert pick(*make((65, 65, 129), "float32", device)) == "grouped"  # rows of 129 floats: no descriptor
    assert pick(layout(a, "step"), b) == "grouped" == pick(layout(a, "offset"), b)
    assert pick(a, b, out=torch.empty(64 * 48 + 1, device=device)[1:].view(64, 48)) == "grouped"
    # a small product of many rows: grouped (its host cost), but not exact float32 (stream_k) nor
    # W.t() in float32; few rows: TMA
    big_a, big_b = torch.empty(512, 512, device=device), torch.empty(512, 512, device=device)
    assert pick(big_a, big_b) == "stream_k" == pick(big_a, big_b.t()) == pick(big_a[:256], big_b)
    with MatmulSpec.context("tf32"):
        assert pick(big_a, big_b) == "grouped" and pick(big_a, big_b.t()) != "grouped"
    assert pick(big_a.half(), big_b.half().t()) == "grouped"
    # 16-bit rows off 16 bytes: the TMA kernel on copies where the product is large and the copies
    # small beside it; grouped for a small product, or copies past 1/256 of its multiply-adds
    odd_a, odd_w = torch.empty(4097, 129, device=device).half(), torch.empty(4095, 129, device=device).half()
    assert pick(odd_a, odd_w.t()) == "tma_persistent" == pick(odd_a, odd_w.t().contiguous())
    assert pick(odd_a[:495], odd_w[:2000].t()) == "grouped"
    assert pick(torch.empty(300, 40001, device=device).half(), torch.empty(40001, 300, device=device).half()) == "grouped"
    # 16-bit few rows whose only misfit is c (an odd N, nothing to copy): the TMA kernel, small or
    # not, where the few-row ladder's narrowest tiles keep half the SMs busy (decision 045)
    head = torch.empty(50257, 768, device=device).half().t()
    assert pick(torch.empty(3, 768, device=device).half(), head) == "tma_persistent"
    narrow = torch.empty(32 * (triton_matmul.sm_count(head.device) // 2 - 1) - 7, 768, device=device).half().t()
    assert pick(torch.empty(3, 768, device=device).half(), narrow) == "grouped"
    assert not triton_matmul._unaligned_tma(torch.empty(3, 768, device=device), head.float())  # (float32: as before)
    # exact float32 too; TF32 was not measured there and stays on grouped
    assert pick(odd_a.float(), odd_w.float().t()) == "stream_k" == pick(odd_a.float(), odd_w.float().t().contiguous())
    with MatmulSpec.context("tf32"):
        assert pick(odd_a.float(), odd_w.float().t()) == "grouped"
    with MatmulSpec.context("float32"):
        assert MatmulSpec.compare(triton_impl.matmul(a, b), MatmulSpec.reference((a, b)), (a, b)).ok


def _fma_ws_here():
    if not triton_matmul.fma_ws_runs(torch.device("cuda")):
        pytest.skip("fma_ws needs a Hopper GPU and a triton with Gluon")


@requires_gpu
@pytest.mark.parametrize("shape", [(4097, 4095, 129), (1000, 1030, 777), (300, 260, 1000), (2, 1024, 520)], ids=str)
def test_gpu_triton_fma_ws(shape):
    """fma_ws (Gluon, exact float32): edge tiles and a K tail; rows no descriptor reads (K = 129,
    777: copied row-major), a column-major a, b = W.t(), an offset a and a strided b (copied
    row-major); c through a descriptor (N = 1024) or by masked stores (N = 4095, 1030, 260)."""
    _fma_ws_here()
    a, b = make(shape, "float32", "cuda")
    for la, lb in (("row", "row"), ("col", "col"), ("offset", "step")):
        check(triton_impl.matmul, layout(a, la), layout(b, lb), "float32", variant="fma_ws")


@requires_gpu
@pytest.mark.parametrize("shape", [(640, 1030, 4096), (1100, 1024, 2000), (3072, 3072, 1536)], ids=str)
def test_gpu_triton_fma_ws_stream_k(shape):
    """fma_ws sharing tiles out in runs of k slices (stream-K): runs that cross tiles, a K tail, c
    through a descriptor or by masked stores; checked against float64, and the same bits on a
    second call (the shared tiles are summed in a fixed order)."""
    _fma_ws_here()
    M, N, K = shape
    tiles = cdiv(M, 128) * cdiv(N, 128)
    kt = cdiv(K, 64)
    n_dp, run, _, _ = triton_matmul.fma_ws_stream_k(tiles, kt, torch.cuda.get_device_properties(0).multi_processor_count)
    # some tiles shared, by runs that cross tiles part-way (neither length a multiple of the other)
    assert n_dp < tiles and run % kt and kt % run
    a, b = make(shape, "float32", "cuda")
    check(triton_impl.matmul, a, b, "float32", variant="fma_ws")
    assert torch.equal(triton_impl.matmul(a, b, variant="fma_ws"), triton_impl.matmul(a, b, variant="fma_ws"))


def test_fma_ws_stream_k_covers_each_slice_once():
    """fma_ws_stream_k's split, walked as the kernel walks it (_span, _slot) and as the sum of slots
    reads it: every k slice of every tile multiplied by one program, at most J programs a tile,
    each shared tile's partial sums in slots of its own, and no more programs than SMs after the
    whole tiles."""
    for sms in (132, 114):
        for tiles in (*range(1, 300, 7), 1024, 4096):
            for kt in (1, 4, 16, 17, 64, 129):
                n_dp, run, slots, programs = triton_matmul.fma_ws_stream_k(tiles, kt, sms)
                assert programs - n_dp <= sms
                done, used = set(), set()
                for pid in range(programs):
                    lo = pid * kt if pid < n_dp else n_dp * kt + (pid - n_dp) * run
                    hi = lo + kt if pid < n_dp else min(lo + run, tiles * kt)
                    assert lo < hi
                    for t in range(lo // kt, (hi - 1) // kt + 1):
                        k = set((t, i) for i in range(max(lo - t * kt, 0), min(hi - t * kt, kt)))
                        assert k and not k & done
                        done |= k
                        if pid >= n_dp:
                            s = t - n_dp
                            j = (pid - n_dp) - (s * kt) // run
                            assert 0 <= j < slots and (s, j) not in used
                            used.add((s, j))
                assert len(done) == tiles * kt
                for s in range(tiles - n_dp):  # what _sum_slots_kernel adds up
                    n = (s * kt + kt - 1) // run - (s * kt) // run + 1
                    assert {(s, j) for j in range(n)} == {u for u in used if u[0] == s}


@pytest.mark.parametrize("shape, sms, block_n", [((1, 600, 300), 2, 256), ((1, 40, 1100), 1, 64),
                                                 ((1, 40, 1100), 2, 16)], ids=str)
def test_triton_few_rows_one_row_tiles(shape, sms, block_n, device, monkeypatch):
    """One row of a on a row-major b: few_rows' one-row tile as wide as N asks, up to 256 columns
    (600: 3 tiles, the last part empty), 4096 elements a step, where it makes two programs an SM in
    K slices, else 1 x 16 x 64; matches the float64 reference."""
    monkeypatch.setattr(triton_matmul, "sm_count", lambda device: sms)
    monkeypatch.setattr(triton_matmul, "_PLANS", triton_matmul.PlanCache(triton_matmul._plan))
    a, b = make(shape, "float32", device)
    cfg = triton_matmul.few_rows_config(*shape, sms)
    assert (cfg.kwargs["BLOCK_N"], cfg.kwargs["BLOCK_K"]) == (block_n, 4096 // block_n if block_n > 16 else 64)
    assert _matmul_fp32._few_rows_grid(cfg, *shape, sms)[2] > 1
    check(triton_impl.matmul, a, b, "float32", variant="few_rows")


@pytest.mark.parametrize("shape", [(3, 50, 2100), (1, 600, 300)], ids=str)
def test_triton_few_rows_split_in_one_launch(shape, device, monkeypatch):
    """few_rows' K slices summed in the launch by each tile's last slice, through the stream's
    hand-over pair: the bits of the two-launch sum (a workspace and a second kernel), which runs
    where the slots would outgrow SPLIT_LAST_BYTES; both match the float64 reference."""
    monkeypatch.setattr(triton_matmul, "sm_count", lambda device: 2)
    pairs = []
    from triton_impl import _launch
    real = _launch.hand_over
    monkeypatch.setattr(_launch, "hand_over", lambda *args, **kw: pairs.append(args) or real(*args, **kw))
    a, b = make(shape, "float32", device)
    results, calls = [], []
    for limit in (_matmul_fp32.SPLIT_LAST_BYTES, 0):
        monkeypatch.setattr(_matmul_fp32, "SPLIT_LAST_BYTES", limit)
        monkeypatch.setattr(triton_matmul, "_PLANS", triton_matmul.PlanCache(triton_matmul._plan))
        results.append(check(triton_impl.matmul, a, b, "float32", variant="few_rows"))
        calls.append(len(pairs))
    assert calls == [2, 2]  # a pair for each of check's two calls in one launch, none after
    assert torch.equal(results[0], results[1])


@requires_gpu
@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
@pytest.mark.parametrize("shape", [(1, 4096, 4096), (1, 40000, 300), (16, 1000, 4100), (7, 4097, 3000),
                                   (16, 11008, 256), (45, 2000, 4100)], ids=str)
def test_gpu_triton_few_rows(shape, dtype):
    """few_rows on decode shapes: K split into slices summed in a fixed order, in the launch by each
    tile's last slice (one row on a row-major b: 1 x 4096 x 4096 in 32 slices, 1 x 40000 x 300 in 2 on
    132 SMs; with W.t() one row runs the GEMV), edges in N and a K tail, both layouts of b, tiles of
    rows past M (45 rows: three 16-row tiles); the same bits on a repeat (the flags lowered again)."""
    M, N, K = shape
    a, b = make(shape, dtype, "cuda")
    if M == 1:
        sms = torch.cuda.get_device_properties(0).multi_processor_count
        assert _matmul_fp32._few_rows_grid(triton_matmul.few_rows_config(M, N, K, sms), M, N, K, sms)[2] > 1
    for lb in ("col", "row"):
        check(triton_impl.matmul, a, layout(b, lb), dtype, variant="few_rows")
    assert torch.equal(triton_impl.matmul(a, b, variant="few_rows"), triton_impl.matmul(a, b, variant="few_rows"))


@requires_gpu
@pytest.mark.parametrize("shape", [(16, 4096, 4096), (45, 1000, 4100), (128, 2000, 998), (17, 300, 20)], ids=str)
def test_gpu_triton_few_rows_ws(shape):
    """few_rows_ws, both tiles (4 warps up to 16 rows, 8 past): K split into slices summed in a
    fixed order (16 x 4096 x 4096: 8 of them), tiles past M and N, a K tail, rows no descriptor
    reads (K = 998: copies), b K-major or row-major (both read as they lie), a column-major, both
    strided; variant=None takes it in both layouts of b from 16 rows; the same bits on a repeat."""
    _fma_ws_here()
    M, N, K = shape
    a, b = make(shape, "float32", "cuda")
    if M == 16:
        sms = torch.cuda.get_device_properties(0).multi_processor_count
        assert triton_matmul._few_rows_ws_split(triton_matmul.few_rows_ws_config(M), M, N, K, sms)[1] == 8
        assert triton_matmul.pick_variant(a, layout(b, "col")) == "few_rows_ws" == triton_matmul.pick_variant(a, b)
    for la, lb in (("row", "col"), ("row", "row"), ("col", "col"), ("step", "step")):
        check(triton_impl.matmul, layout(a, la), layout(b, lb), "float32", variant="few_rows_ws")
    for bt in (layout(b, "col"), b):
        assert torch.equal(triton_impl.matmul(a, bt, variant="few_rows_ws"), triton_impl.matmul(a, bt, variant="few_rows_ws"))


@requires_gpu
def test_gpu_triton_fma_ws_default():
    """variant=None runs fma_ws on exact float32 where K is 16 slices or more, M 64 rows or more,
    its programs (whole tiles or stream-K runs) fill 0.6 of the SMs and c's rows are 16-byte
    aligned; not under TF32, nor on other dtypes."""
    _fma_ws_here()
    pick = triton_matmul.pick_variant
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    M = 128 * cdiv(sms, 8)  # 8 tiles a row of tiles: at least one per SM
    a, b = torch.randn(M, 1024, device="cuda"), torch.randn(1024, 1024, device="cuda")
    assert pick(a, b) == "fma_ws" == pick(a, b.t().contiguous().t())
    assert pick(a[:, :960], b[:960]) != "fma_ws"       # K: 15 slices
    assert pick(a, b[:, :1023]) != "fma_ws"            # c's rows 4092 bytes
    assert pick(a[:32], b) != "fma_ws"                 # 32 rows
    assert pick(a[:256], b[:, :256]) != "fma_ws"       # 4 tiles of 16 slices: runs too short to share
    assert pick(torch.randn(512, 4096, device="cuda"), torch.randn(4096, 512, device="cuda")) == "fma_ws"  # 16 tiles, shared
    assert pick(a.half(), b.half()) != "fma_ws"
    saved = torch.get_float32_matmul_precision()
    try:
        torch.set_float32_matmul_precision("high")
        assert pick(a, b) != "fma_ws"
    finally:
        torch.set_float32_matmul_precision(saved)
    check(triton_impl.matmul, a, b, "float32")


def test_triton_split_k_is_repeatable(device):
    """The K slices are summed in a fixed order: the same bits on every run."""
    a, b = make((8, 64, 2048), "float32", device, seed=3)
    first = triton_impl.matmul(a, b, variant="split_k")
    assert triton_matmul.config_for("split_k", a, b, "ieee").kwargs["SPLIT_K"] > 1
    for _ in range(3):
        assert torch.equal(triton_impl.matmul(a, b, variant="split_k"), first)


def test_tail_split_parts_fill_the_last_wave():
    """Whole row blocks where their tiles fill waves, the rest in K slices; none where the waves are
    full already or K is too short to slice; int8 never (no split built)."""
    parts = triton_matmul.tail_split_parts
    cfg = _matmul_configs._tma_config_of(128, 128, 64, 8, 4)
    # 18 row blocks x 18 column tiles = 324 tiles on 132 SMs: 2.45 waves; the split takes a part
    rows, split = parts(cfg, 2304, 2304, 9216, 132, 2)
    assert 0 < rows < 2304 and rows % 128 == 0 and split > 1
    assert parts(cfg, 128 * 11, 128 * 12, 4096, 132, 2) == (128 * 11, 1)  # 132 tiles: one whole wave
    assert parts(cfg, 2304, 2304, 192, 132, 2)[1] == 1  # 3 k tiles: no slice of 4
    assert parts(cfg, 2304, 2304, 9216, 132, 1) == (2304, 1)


@pytest.mark.parametrize("kmajor", [False, True])
def test_triton_tail_split_runs_both_parts(device, monkeypatch, kmajor):
    """On 4 SMs (stood in), 3 row blocks of 2 tiles (a 64 x 64 tile, stood in: the GPU's heuristic
    takes larger ones): 2 blocks whole, the third in K slices (a split costing nothing, stood in:
    these tiles are short); a bias of M rows is read by each part at its own rows."""
    monkeypatch.setattr(triton_matmul, "sm_count", lambda device: 4)
    monkeypatch.setattr(triton_matmul, "_family_config", lambda *args: _matmul_configs._tma_config_of(64, 64, 32, 4, 4))
    monkeypatch.setattr(_matmul_configs, "_SPLIT_SECONDS", 0.0)
    monkeypatch.setattr(_matmul_configs, "_SPLIT_BYTES_PER_S", float("inf"))
    triton_matmul._PLANS.clear()
    a, b = make((192, 128, 512), "float32", device, seed=5)
    b = b.t().contiguous().t() if kmajor else b
    cfg = triton_matmul.config_for("tail_split", a, b, "ieee")
    assert triton_matmul._tail_parts(cfg, a, b) == (128, 2), cfg
    check(triton_impl.matmul, a, b, "float32", variant="tail_split")
    bias = torch.randn(192, 128, device=device)
    with MatmulSpec.context("float32"):
        got = triton_matmul._PLANS((a, b, bias), "tail_split", None)
        want = (a.double() @ b.double() + bias.double())
        assert MatmulSpec.compare(got, want, (a, b)).ok
    triton_matmul._PLANS.clear()


def test_triton_stream_k_plan():
    """stream_k's (programs, shared tiles): the tiles past whole waves on every SM; with the wave
    before them where they alone give a program fewer than SK_MIN_SLICES k-slices; in one wave all
    the tiles, on as many programs as keep SK_MIN_SLICES each (none shared where that is no more
    programs than tiles); whole waves share nothing (no GPU needed)."""
    plan, least = _matmul_tma.stream_k_plan, _matmul_tma.SK_MIN_SLICES
    assert plan(272, 160, 132) == (132, 8)           # 8 tiles past 2 waves, 160 slices each: 9.7 a program
    assert plan(272, 16, 132) == (132, 8 + 132)      # ... of 16 slices: under the least alone, with a wave
    assert plan(264, 64, 132) == (132, 0)            # whole waves
    assert plan(40, 64, 132) == (132, 40)            # one wave: all shared
    assert plan(40, 2 * least, 132) == (80, 40)      # ... on 80 programs of SK_MIN_SLICES slices
    assert plan(40, least, 132) == (40, 0)           # ... no more programs than tiles: none shared
    for tiles, k_tiles in ((300, 7), (133, 200), (7, 1000), (1000, 3)):
        programs, shared = plan(tiles, k_tiles, 132)
        assert programs <= 132 and (tiles - shared) % programs == 0  # every program the same whole tiles


@pytest.mark.parametrize("shape, sms, tile, shared", [
    ((150, 100, 1000), 4, (64, 64, 32, False), (2, 4)),   # the last wave's 2 tiles, 64 slices on 4 programs
    ((200, 130, 513), 5, (64, 64, 32, False), (7, 5)),    # 2 past two waves: too few slices alone, with a wave
    ((100, 60, 700), 5, (64, 64, 32, False), (2, 5)),     # one wave of 2 tiles on 5 programs: parts mid-tile
    ((100, 200, 600), 3, (128, 64, 64, True), (4, 3)),    # swap-AB tiles, all shared
])
@pytest.mark.parametrize("b_kind", ["row", "col"])
def test_triton_stream_k_shares_the_last_tiles(shape, sms, tile, shared, b_kind, device, monkeypatch):
    """stream_k on a few SMs (stood in) and a given tile: the tiles past whole waves (with the wave
    before them where their slices are few; in one wave all) shared in even runs of k-slices, each
    tile's parts handed to the program holding its last: right against float64, the same bits on
    every call (the parts added in a fixed order), the stream's flags lowered again after each call,
    and a bias row added once."""
    bm, bn, bk, swap = tile
    for module in (triton_matmul, _matmul_tma):  # (the plan's and describe's note)
        monkeypatch.setattr(module, "sm_count", lambda device: sms)
    monkeypatch.setattr(triton_matmul, "_family_config",
                        lambda *args: _matmul_configs._tma_config_of(bm, bn, bk, 4, 3, swap=swap))
    triton_matmul._PLANS.clear()
    a, b = make(shape, "float16", device, seed=3)
    b = layout(b, b_kind)
    assert f" SK{shared[0]}/{shared[1]} " in triton_impl.describe("matmul", a, b, variant="stream_k") + " "
    first = check(triton_impl.matmul, a, b, "float16", variant="stream_k")
    assert all(torch.equal(first, triton_impl.matmul(a, b, variant="stream_k")) for _ in range(2))
    assert all(not flags.any() for flags, *_ in kernel_util._HAND_OVER.values())
    bias = torch.randn(shape[1], device=device).to(a.dtype)
    with MatmulSpec.context("float16"):
        got = triton_matmul._PLANS((a, b, bias), "stream_k", None)
        assert MatmulSpec.compare(got, MatmulSpec.reference((a, b)) + bias.double(), (a, b)).ok
    triton_matmul._PLANS.clear()


@pytest.mark.parametrize("shape, tile, split", [
    ((150, 200, 300), (32, 48, 32, False), 1),   # 48 = 32 + 16: 5 column tiles, the last 8 wide
    ((70, 101, 200), (32, 48, 32, False), 1),    # c's rows off 16 bytes: masked stores, operands copied
    ((150, 200, 300), (32, 48, 32, False), 3),   # K in 3 slices: the workspace and the sum
    ((40, 200, 300), (16, 48, 64, True), 1),     # swap-AB: the parts are c^T's rows
])
@pytest.mark.parametrize("b_kind", ["row", "col"])
def test_triton_two_part_tiles(shape, tile, split, b_kind, device, monkeypatch):
    """A tile no power of two wide (the kernel's N_TAIL): b's two parts of each tile, each its own
    dot and accumulator, c stored in pieces: right against float64 at odd sizes, K whole or split,
    swap-AB, both layouts of b, a bias row added once; stream-K asked of it runs its first part."""
    bm, bn, bk, swap = tile
    cfg = _matmul_configs._with_split(
        _matmul_configs._tma_config_of(bm, bn, bk, 4, 3, swap=swap, subtile=True, n_tail=bn // 3), split)
    monkeypatch.setattr(triton_matmul, "_family_config", lambda *args: cfg)
    triton_matmul._PLANS.clear()
    a, b = make(shape, "float16", device, seed=5)
    b = layout(b, b_kind)
    assert f"x{bn}x" in triton_impl.describe("matmul", a, b, variant="tma_persistent")
    check(triton_impl.matmul, a, b, "float16", variant="tma_persistent")
    bias = torch.randn(shape[1], device=device).to(a.dtype)
    with MatmulSpec.context("float16"):
        got = triton_matmul._PLANS((a, b, bias), "tma_persistent", None)
        assert MatmulSpec.compare(got, MatmulSpec.reference((a, b)) + bias.double(), (a, b)).ok
    assert f"x{bn - bn // 3}x" in triton_impl.describe("matmul", a, b, variant="stream_k")
    check(triton_impl.matmul, a, b, "float16", variant="stream_k")
    triton_matmul._PLANS.clear()


def test_triton_precision_follows_torch():
    assert triton_matmul._input_precision(torch.float32) == "ieee"  # torch's default: "highest"
    with MatmulSpec.context("tf32"):
        assert torch.get_float32_matmul_precision() == "high"
        assert triton_matmul._input_precision(torch.float32) == "tf32"
        assert triton_matmul._input_precision(torch.float16) == "tf32"
    assert torch.get_float32_matmul_precision() == "highest"  # restored


def test_tolerance_rule():
    tol = MatmulSpec.tolerance
    assert tol("float32", 8192) < 3e-4 < tol("tf32", 1)  # exact fp32 cannot pass with TF32 error
    assert tol("float32", 33) < tol("float32", 4096)
    assert tol("float16", 1) < tol("bfloat16", 1)
    assert MatmulSpec.normalize_shape((64,)) == (64, 64, 64)
    with pytest.raises(ValueError, match="--size for matmul"):
        MatmulSpec.normalize_shape((4, 5))


# ---- every variant on the GPU ------------------------------------------------------------------
@requires_gpu
@pytest.mark.parametrize("b_layout", ["row", "wt"])
@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
@pytest.mark.parametrize("shape", [(4097, 4095, 129), (1024, 1023, 4096)], ids=str)
def test_gpu_triton_odd_rows_tma(shape, dtype, b_layout):
    """variant=None on large 16-bit products with rows off 16 bytes (all of them; c's and b's):
    the TMA kernel on 16-byte-row copies of a and b, c written by masked stores (its edge tiles
    included), K whole or in slices (the model splits K where few tiles leave SMs idle)."""
    a, b = make(shape, dtype, "cuda")
    if b_layout == "wt":
        b = b.t().contiguous().t()
    assert triton_matmul.pick_variant(a, b) in ("tma_persistent", "split_k")
    check(triton_impl.matmul, a, b, dtype)
    for variant in ("tma_persistent", "split_k"):
        check(triton_impl.matmul, a, b, dtype, variant=variant)


@requires_gpu
@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
@pytest.mark.parametrize("shape", [(3, 1000, 6144), (13, 1536, 7000), (3, 50257, 768), (40, 3001, 768)], ids=str)
def test_gpu_triton_few_rows_split_and_odd_c(shape, dtype, monkeypatch):
    """variant=None on few rows of a against W.t(). A tuned config that keeps K whole (as the
    shipped table's do) and leaves over half the SMs idle runs in slices where K is 4096 or more
    (few_rows_split); an odd N (c's rows off 16 bytes, nothing to copy) where the TMA kernel's
    narrowest tiles keep half the SMs busy runs it, c written by pointer stores, not grouped."""
    want = "tma_persistent" if shape[1] % 8 else "split_k"
    if want == "split_k":  # (the tests read no shipped table: a whole-K entry of their own, and plans
        # of their own, none of which outlives the test)
        whole = triton_matmul._with_split(_matmul_configs._tma_config_of(16, 32, 512, 4, 3, swap=True), 1)
        monkeypatch.setattr(_tuning, "lookup", lambda device, key: whole if key.startswith("tma") else None)
        monkeypatch.setattr(triton_matmul, "_PLANS", triton_matmul.PlanCache(triton_matmul._plan))
    a, b = make(shape, dtype, "cuda")
    b = b.t().contiguous().t()
    assert triton_matmul.pick_variant(a, b) == want
    note = triton_impl.describe("matmul", a, b)
    if want == "split_k":
        split = int(note.split(" S")[1].split()[0])
        M, N, K = shape  # the plan runs the count the rule weighed (few_rows_split: _splits')
        assert note.startswith("split_k 16x32x512") and split > 1
        assert split == _matmul_configs.few_rows_split(whole, M, N, K, triton_matmul.sm_count(a.device), 2)
    else:
        assert "c-stores" in note
    check(triton_impl.matmul, a, b, dtype)


@requires_gpu
@pytest.mark.parametrize("dtype", DTYPE_NAMES)
@pytest.mark.parametrize("shape", GPU_SHAPES, ids=str)
@pytest.mark.parametrize("backend,variant", ALL)
def test_gpu(backend, variant, shape, dtype):
    check_or_refuse(backend, variant, *make(shape, dtype, "cuda"), dtype)


@requires_gpu
@pytest.mark.slow
@pytest.mark.parametrize("dtype", DTYPE_NAMES)
@pytest.mark.parametrize("backend,variant", ALL)
def test_gpu_8192(backend, variant, dtype):
    from bench import registry
    max_k = registry.get("matmul", backend, variant).max_k
    if not takes(backend, variant, dtype) or max_k is not None and max_k < 8192:
        pytest.skip(f"{variant} does not take {dtype} at K = 8192")
    a, b = make((8192, 8192, 8192), dtype, "cuda", seed=1)
    with MatmulSpec.context(dtype):
        out = poison((8192, 8192), a.dtype, a.device)
        FNS[backend](a, b, variant=variant, out=out)
        cmp = MatmulSpec.compare(out, MatmulSpec.reference((a, b)), (a, b))
    assert cmp.ok, cmp.detail


@requires_gpu
@pytest.mark.parametrize("dtype", DTYPE_NAMES)
@pytest.mark.parametrize("layouts", LAYOUTS, ids="-".join)
@pytest.mark.parametrize("backend,variant", ALL)
def test_gpu_strided(backend, variant, layouts, dtype):
    a, b = make((130, 97, 260), dtype, "cuda")
    check_or_refuse(backend, variant, layout(a, layouts[0]), layout(b, layouts[1]), dtype)


@requires_gpu
@pytest.mark.parametrize("pairs", [True, False], ids=["pairs", "alone"])
@pytest.mark.parametrize("shape,a_kind,b_kind", [
    ((1100, 700, 200), "row", "col"),   # 9 row tiles: the last pair's second tile lies past M
    ((300, 520, 200), "col", "row"),    # a.t() (M-major a), row-major b; three row tiles
    ((1030, 1001, 129), "row", "col"),  # c's rows off 16 bytes: stored from the accumulators
    ((640, 264, 72), "col", "col"),     # W.t() b, a.t(); a K tail
], ids=str)
def test_gpu_wgmma_ws_pairs_and_alone(shape, a_kind, b_kind, pairs, monkeypatch):
    """wgmma_ws's builds (blocks in TMA-multicast pairs or alone; c through TMA stores or not) on
    edges, odd tile counts and both layouts of each operand, whichever ``ws_cluster`` would pick."""
    if not cuda_wgmma.is_sm90(torch.device("cuda")):
        pytest.skip("wgmma_ws needs a Hopper GPU")
    monkeypatch.setattr(cuda_wgmma, "WS_PAIRS_MIN_M", 0 if pairs else 1 << 40)
    monkeypatch.setattr(cuda_wgmma, "WS_PAIRS_ODD_MIN_M", 0 if pairs else 1 << 40)
    monkeypatch.setattr(cuda_wgmma, "WS_PAIRS_EVEN", pairs)
    cuda_matmul._PLANS.clear()
    try:
        for dtype in ("bfloat16", "float16"):
            a, b = make(shape, dtype, "cuda", seed=3)
            check(FNS["cuda"], layout(a, a_kind), layout(b, b_kind), dtype, variant="wgmma_ws")
    finally:
        cuda_matmul._PLANS.clear()  # no plan of the patched rule outlives the test


@requires_gpu
@pytest.mark.parametrize("shape,a_kind,b_kind", [
    ((300, 520, 200), "col", "row"),     # three tiles of rows alone, a.t(), a row-major b (two 64-column boxes)
    ((1200, 700, 200), "row", "col"),    # pairs: each block brings 64 rows of W.t()'s 128
    ((200, 1000, 1500), "row", "col"),   # pairs of few units: K in 3 runs handed over in the kernel
    ((300, 1000, 1500), "row", "row"),   # the same alone, a row-major b
    ((256, 1000, 4096), "row", "col"),   # K in 5 runs: the partial products' buffer and its sum
    ((128, 256, 8192), "row", "row"),    # one unit: K in 19 runs
    ((2200, 2000, 6000), "row", "col"),  # stream-K on pairs
    ((1030, 1001, 129), "col", "col"),   # c's rows off 16 bytes: stored from the accumulators
    ((256, 1000, 200), "row", "row"),    # pairs on a row-major b: 192 columns are three 64-column boxes
    # K in one slice, several tiles a block: a tile's boxes go out back to back into the next
    # tile's, where 192 columns' box 2 and the next box 0 share a staging buffer (a LoRA up projection)
    ((1630, 8192, 8), "row", "row"),
    ((4302, 7168, 8), "row", "col"),
    # products of at most 64 columns (a LoRA down projection): 64-column tiles' own runs
    ((10601, 8, 4096), "row", "col"),    # few units, K whole
    ((2341, 64, 6144), "row", "row"),    # stream-K or a split on 19 units
    ((700, 33, 3000), "col", "row"),     # c's rows off 16 bytes, K handed over
    ((300, 64, 20000), "row", "col"),    # past the hand-over's runs: the partial products' sum
], ids=str)
@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
@pytest.mark.parametrize("width", [64, 128, 192])
def test_gpu_wgmma_ws_narrow_tiles(shape, a_kind, b_kind, dtype, width, monkeypatch):
    """wgmma_ws's tiles of 64, 128 and 192 columns of c, given to every product of 128-row tiles: right
    on each way a tile ends (whole, handed over, summed by the second launch, stream-K; a pair's
    three 64-column boxes of a row-major b brought two and one), with a bias, and the same bits on
    every call."""
    if not cuda_wgmma.is_sm90(torch.device("cuda")):
        pytest.skip("wgmma_ws needs a Hopper GPU")
    _narrow_always(monkeypatch, width)
    cuda_matmul._PLANS.clear()
    try:
        M, N, K = shape
        a, b = make(shape, dtype, "cuda", seed=12)
        a, b = layout(a, a_kind), layout(b, b_kind)
        assert f", {width}>" in cuda_matmul.describe(a, b, "wgmma_ws")
        check(FNS["cuda"], a, b, dtype, variant="wgmma_ws")
        first = cuda_ref.matmul(a, b, variant="wgmma_ws")
        assert all(torch.equal(first, cuda_ref.matmul(a, b, variant="wgmma_ws")) for _ in range(2))
        bias = torch.randn(N, device="cuda").to(a.dtype)
        got = cuda_ref.plans("matmul")((a, b, bias), "wgmma_ws", None)
        cmp = MatmulSpec.compare(got, MatmulSpec.reference((a, b)) + bias.double(), (a, b))
        assert cmp.ok, cmp.detail
    finally:
        cuda_matmul._PLANS.clear()  # no plan of the patched rule outlives the test


def _narrow_always(monkeypatch, width=cuda_wgmma.WS_NARROW_N):
    """Tiles ``width`` columns wide for every product of 128-row tiles, whatever the model says."""
    def narrow(M, N, K, itemsize, sms, a_mmajor=False):
        return 256 if cuda_wgmma.ws_consumers(M, a_mmajor) == 1 else width
    monkeypatch.setattr(cuda_wgmma, "ws_tile_n", narrow)
    monkeypatch.setattr(cuda_matmul, "ws_tile_n", narrow)


def test_ws_narrow_tiles_geometry(monkeypatch):
    """Narrow tiles take twice the units on the instance of 128 columns, in the same shared memory,
    middle ones a third more on the instance of 192, and 64-row tiles (one consumer) stay 256 wide."""
    names = cuda_matmul.NAME_EXPRESSIONS + sum(cuda_matmul.MORE_FILES.values(), ())
    ws16 = [n for n in names if n.startswith(("matmul_wgmma_ws<half_t", "matmul_wgmma_ws<bf16_t"))]
    assert len([n for n in ws16 if n.endswith(", 128>")]) == 16
    assert len([n for n in ws16 if n.endswith(", 4, 1, 2, 192>")]) == 8
    assert len([n for n in ws16 if n.endswith(", 8, 1, 2, 64>")]) == 8
    assert len([n for n in ws16 if n.endswith(", 8, 2, 2, 64>")]) == 8
    assert len([n for n in names if n.startswith("matmul_wgmma_ws<float, false, false, ")]) == 9  # TF32: K-major
    assert set(cuda_wgmma.WS_STAGES) == set(cuda_wgmma.WS_SLICE_SHARE) == set(cuda_wgmma.WS_SHARES_K)  # one row a width
    _narrow_always(monkeypatch, 256)
    wide = cuda_matmul.launch_of("wgmma_ws", 300, 4096, 4096, torch.bfloat16, 132, b_kmajor=True)
    _narrow_always(monkeypatch, 192)
    assert cuda_wgmma.ws_units(300, 4096, 4096, 2, 132) == 3 * 22
    mid = cuda_matmul.launch_of("wgmma_ws", 300, 4096, 4096, torch.bfloat16, 132, b_kmajor=True)
    assert mid.name == "matmul_wgmma_ws<bf16_t, false, false, 4, 1, 2, 192>" and mid.grid == (66,)
    assert mid.shared_mem == cuda_wgmma.ring_smem(4, 128 + 192) + cuda_wgmma.WS_STAGING <= 232448
    _narrow_always(monkeypatch)
    assert cuda_wgmma.ws_tile_n(64, 4096, 4096, 2, 132) == 256
    assert cuda_wgmma.ws_units(300, 4096, 4096, 2, 132) == 3 * 32
    assert cuda_wgmma.ws_units(1100, 700, 4096, 2, 132) == 9 * 6  # 9 tiles of 128 rows, an odd count: blocks alone
    launch = cuda_matmul.launch_of("wgmma_ws", 300, 4096, 4096, torch.bfloat16, 132, b_kmajor=True)
    assert launch.name == "matmul_wgmma_ws<bf16_t, false, false, 6, 1, 2, 128>" and launch.grid == (96,)
    assert wide.grid == (48,) and launch.shared_mem <= 232448 and abs(launch.shared_mem - wide.shared_mem) < 64
    monkeypatch.undo()
    thin = cuda_matmul.launch_of("wgmma_ws", 8685, 64, 5120, torch.bfloat16, 132, b_kmajor=True)
    assert thin.name.startswith("matmul_wgmma_ws<bf16_t, false, false, 8, ") and thin.name.endswith(", 2, 64>")
    assert thin.shared_mem == cuda_wgmma.ring_smem(8, 128 + 64) + cuda_wgmma.WS_STAGING <= 232448


def test_ws_tile_width_by_model():
    """variant=None's tile width: narrow where wide tiles fill at most half the slots and the split
    model, each width with its own split or stream-K, gives narrow ones no more time (H200, x torch
    wide -> narrow: 493x1600x1600 0.55 -> 0.68, 412x4096x2304 0.58 -> 0.74); 192 columns where a
    third more units fill a wave that wide ones leave part idle (x torch, the plan before -> 192:
    637x4096x4608 0.68 -> 0.84, 760x8192x4608 0.87 -> 0.97, 1088x2304x768 0.71 -> 0.80; 394x6144x4096
    wide fills 48 of 66 pairs, 192 64), not where narrow ones fill the GPU (394x6144x4096: narrow
    0.76x wide's speed); wide where a split of long K keeps them busy (847x1536x8960: narrow 0.83x),
    on large products (stream-K's last wave of many), and always for 64-row tiles."""
    assert cuda_wgmma.ws_tile_n(493, 1600, 1600, 2, 132) == 128
    assert cuda_wgmma.ws_tile_n(412, 4096, 2304, 2, 132) == 128
    for M, N, K in ((637, 4096, 4608), (760, 8192, 4608), (1088, 2304, 768), (394, 6144, 4096)):
        assert cuda_wgmma.ws_tile_n(M, N, K, 2, 132) == 192, (M, N, K)
    mid = [(M, N, K) for M, N, K in draw_matmul(600, 3) if M > 64 and cuda_wgmma.ws_tile_n(M, N, K, 2, 132) == 192]
    assert len(mid) >= 10
    for M, N, K in mid:  # 192 columns run whole: with stream-K's shares they lost (decision 040)
        assert cuda_wgmma.ws_stream_k(M, N, K, 2, 132) == 0 and cuda_wgmma.ws_splits(M, N, K, 2, 132) == 1, (M, N, K)
    assert cuda_wgmma.ws_tile_n(847, 1536, 8960, 2, 132) == 256
    assert cuda_wgmma.ws_tile_n(8192, 8192, 8192, 2, 132) == 256
    assert cuda_wgmma.ws_tile_n(4096, 4096, 4096, 2, 132) == 256
    assert cuda_wgmma.ws_tile_n(48, 4096, 4096, 2, 132) == 256
    # at most 64 columns: one tile of columns at every width, the thin one the fewest MMAs on zeros
    for M, N, K in ((10601, 8, 4096), (8685, 64, 5120), (9167, 64, 1536), (300, 33, 4096)):
        assert cuda_wgmma.ws_tile_n(M, N, K, 2, 132) == 64, (M, N, K)
    assert cuda_wgmma.ws_tile_n(8685, 65, 5120, 2, 132) != 64
    assert cuda_wgmma.ws_tile_n(48, 64, 4096, 2, 132) == 256  # 64-row tiles: one consumer, 256 wide
    for M, N, K in ((493, 1600, 1600), (847, 1536, 8960), (2048, 512, 4096), (8685, 64, 5120)):
        for bn in (64, 128, 192, 256):
            assert cuda_wgmma.ws_plan_time(M, N, K, 2, 132, False, bn) > 0


@requires_gpu
@pytest.mark.parametrize("b_kind", ["row", "col"])
def test_gpu_balanced_grids(b_kind):
    """Persistent grids of fewer programs than SMs, each taking several tiles (``balanced_grid``):
    wgmma_ws's 144 pair units on 48 pairs (3 waves, no stream-K: K is one slice) and the TMA
    kernel's 272 tiles on 91 programs, with edge tiles; right in both backends."""
    a, b = make((2100, 4000, 64), "bfloat16", "cuda", seed=11)
    b = layout(b, b_kind)
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    assert balanced_grid(cdiv(2100, 256) * cdiv(4000, 256), sms // 2) < sms // 2
    check(FNS["triton"], a, b, "bfloat16", variant="tma_persistent")
    if cuda_wgmma.is_sm90(torch.device("cuda")):
        check(FNS["cuda"], a, b, "bfloat16", variant="wgmma_ws")


@requires_gpu
@pytest.mark.parametrize("consumers", [1, 2])
@pytest.mark.parametrize("shape,b_kind", [
    ((16, 4096, 4096), "col"),   # a decode batch on a weight's W.t(): 16 tiles, K in 8 runs
    ((5, 300, 10000), "row"),    # one or two tiles, K in runs of 5 slices (the last partly past K)
    ((33, 1000, 1030), "col"),   # N off 16 bytes: partial products stored element by element
    ((100, 700, 300), "row"),    # two 64-row tiles, the second partly past M; no split
], ids=str)
def test_gpu_wgmma_ws_few_rows(shape, b_kind, consumers, monkeypatch):
    """wgmma_ws on a few rows of a: 64- or 128-row tiles (one or two consumer warpgroups), K split
    on grids of few tiles (float32 partial products, added in a fixed order): right, and the same
    bits on every call."""
    if not cuda_wgmma.is_sm90(torch.device("cuda")):
        pytest.skip("wgmma_ws needs a Hopper GPU")
    monkeypatch.setattr(cuda_wgmma, "WS_ONE_CONSUMER_MAX_M", 1 << 40 if consumers == 1 else 0)
    cuda_matmul._PLANS.clear()
    try:
        a, b = make(shape, "bfloat16", "cuda", seed=5)
        b = layout(b, b_kind)
        check(FNS["cuda"], a, b, "bfloat16", variant="wgmma_ws")
        first = cuda_ref.matmul(a, b, variant="wgmma_ws")
        assert all(torch.equal(first, cuda_ref.matmul(a, b, variant="wgmma_ws")) for _ in range(3))
    finally:
        cuda_matmul._PLANS.clear()


def test_few_rows_tiles():
    """few_rows' (MR, NC): in 16 bits 8 columns a warp at one row where its blocks fill the SMs (one
    wave at least 0.8 of them, or waves as full), 2 x 4 at two rows, 4 x 8 past; float32 keeps its
    tiles (no GPU needed)."""
    tile = cuda_few_rows.few_rows_tile
    assert tile(1, 151936, 2, 132) == (1, 8) == tile(1, 8192, 2, 132) == tile(1, 28672, 2, 132)
    assert tile(1, 6144, 2, 132) == (1, 1) == tile(1, 18944, 2, 132)  # 96 blocks; 296 (264, then 32)
    assert tile(1, 151936, 4, 132) == (1, 1)
    assert tile(2, 4096, 2, 132) == (2, 4) and tile(3, 4096, 2, 132) == (4, 8) == tile(9, 4096, 2, 132)
    assert tile(2, 4096, 4, 132) == (2, 2) and tile(4, 4096, 4, 132) == (4, 2)


@requires_gpu
@pytest.mark.parametrize("shape", [
    (1, 8195, 200),     # 8 columns a warp (129 blocks), the last warp's columns past N, a K tail
    (1, 20001, 1032),   # ... 313 blocks
    (2, 4099, 264),     # 2 x 4
    (3, 5001, 136),     # 4 x 8, a row past M
    (4, 70000, 72),     # 4 x 8, many blocks
], ids=str)
@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_gpu_few_rows_tiles(shape, dtype):
    """few_rows on each 16-bit tile: right with and without a bias, the same bits on every call."""
    M, N, K = shape
    a, b = make(shape, dtype, "cuda", seed=9)
    b = b.t().contiguous().t()
    check(FNS["cuda"], a, b, dtype, variant="few_rows")
    first = cuda_ref.matmul(a, b, variant="few_rows")
    assert torch.equal(first, cuda_ref.matmul(a, b, variant="few_rows"))
    bias = torch.randn(N, device="cuda").to(a.dtype)
    got = cuda_ref.plans("matmul")((a, b, bias), "few_rows", None)
    cmp = MatmulSpec.compare(got, MatmulSpec.reference((a, b)) + bias.double(), (a, b))
    assert cmp.ok, cmp.detail


@requires_gpu
@pytest.mark.parametrize("shape", [
    (5, 4096, 4096),    # a decode batch, 16-row tile: 11 rows past M
    (16, 1000, 1030),   # K off 16 bytes (b copied aligned), N not a multiple of the 32-row block
    (32, 4095, 300),    # the 32-row tile, a K tail in the last slice
    (17, 64, 8200),     # long K, two blocks
    (100, 300, 520),    # 64-row tiles along the grid's y, the second partly past M
    (16, 9000, 520),    # a row-major b this wide takes 64-column blocks, the last one partly past N
    (32, 8456, 1030),   # the same with 32 rows (and a copied: K off 16 bytes)
], ids=str)
@pytest.mark.parametrize("b_kind", ["col", "row"])
def test_gpu_few_rows_mma(shape, b_kind):
    """few_rows_mma (c^T = W a^T on mma.sync): right on every tile of a's rows, K tails and edges, and
    the same bits on every call (the warps' sums are added in a fixed order)."""
    a, b = make(shape, "bfloat16", "cuda", seed=6)
    b = layout(b, b_kind)
    check(FNS["cuda"], a, b, "bfloat16", variant="few_rows_mma")
    first = cuda_ref.matmul(a, b, variant="few_rows_mma")
    assert all(torch.equal(first, cuda_ref.matmul(a, b, variant="few_rows_mma")) for _ in range(3))


def check_tf32_variant(a, b, variant):
    """A TF32 kernel named on float32: check() under TF32, the same bits on two more calls, and a
    TypeError under "highest" (a TF32 kernel never runs where exact float32 is asked for)."""
    first = check(FNS["cuda"], a, b, "tf32", variant=variant)
    with MatmulSpec.context("tf32"):
        assert all(torch.equal(first, cuda_ref.matmul(a, b, variant=variant)) for _ in range(2))
    with MatmulSpec.context("float32"), pytest.raises(TypeError, match="runs float32 as TF32"):
        cuda_ref.matmul(a, b, variant=variant)


def check_repeats_and_bias(a, b, variant):
    """check() on the GPU, the same bits on two more calls, and right with a bias row (the switch's addmm)."""
    first = check(FNS["cuda"], a, b, "bfloat16", variant=variant)
    assert all(torch.equal(first, cuda_ref.matmul(a, b, variant=variant)) for _ in range(2))
    bias = torch.randn(b.shape[1], device="cuda").to(a.dtype)
    got = cuda_ref.plans("matmul")((a, b, bias), variant, None)
    cmp = MatmulSpec.compare(got, MatmulSpec.reference((a, b)) + bias.double(), (a, b))
    assert cmp.ok, cmp.detail


@requires_gpu
@pytest.mark.parametrize("shape", [
    (4302, 7168, 8),     # an adapter's up projection: 68 row tiles walked by 17 blocks a column tile
    (67, 45, 3),         # one past the tile in rows, a part tile of columns, K odd
    (1000, 4801, 16),    # c's rows off 16 bytes: stored element by element; a whole MMA step of K
    (2, 256000, 4),      # two rows, an LM head's columns: 2000 column tiles
    (130, 97, 1),        # K = 1
], ids=str)
@pytest.mark.parametrize("a_kind,b_kind", [("row", "row"), ("row", "col"), ("col", "offset"), ("step", "step")],
                         ids="-".join)
@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_gpu_short_k(shape, a_kind, b_kind, dtype):
    """short_k reads a and b through their strides (NaN around strided views shows a wrong one),
    is what variant=None runs where its rule says, adds a bias, and gives the same bits on every call."""
    a, b = make(shape, dtype, "cuda", seed=13)
    a, b = layout(a, a_kind), layout(b, b_kind)
    assert cuda_ref.describe("matmul", a, b).startswith("short_k") == cuda_matmul.short_k_fits(a, b)
    first = check(FNS["cuda"], a, b, dtype, variant="short_k")
    assert all(torch.equal(first, cuda_ref.matmul(a, b, variant="short_k")) for _ in range(2))
    for bias in (torch.randn(shape[1], device="cuda").to(a.dtype),
                 torch.randn(shape[:2], device="cuda").to(a.dtype)):  # a row, and a whole M x N bias
        got = cuda_ref.plans("matmul")((a, b, bias), "short_k", None)
        cmp = MatmulSpec.compare(got, MatmulSpec.reference((a, b)) + bias.double(), (a, b))
        assert cmp.ok, cmp.detail


def test_short_k_rule():
    """variant=None: short_k for 16-bit products of K < 16, and of K = 16 whose rows of a are off 16
    bytes or whose c is large; one row on W.t() stays the GEMV's; float32 and longer K go elsewhere."""
    def meta(M, N, K, dtype=torch.bfloat16, wt=False):
        a = torch.empty((M, K), dtype=dtype, device="meta")
        b = torch.empty((N, K), dtype=dtype, device="meta").t() if wt else torch.empty((K, N), dtype=dtype, device="meta")
        return a, b
    assert cuda_matmul.pick_variant(*meta(4302, 7168, 8)) == "short_k"
    assert cuda_matmul.pick_variant(*meta(2, 4096, 15, wt=True)) == "short_k"
    assert cuda_matmul.pick_variant(*meta(1, 4096, 8, wt=True)) == "few_rows"
    assert cuda_matmul.pick_variant(*meta(1, 2048, 4)) == "short_k"  # one row on a row-major b: no GEMV takes it
    assert cuda_matmul.pick_variant(*meta(3000, 4096, 16)) == "short_k"  # aligned rows of 16, a large c
    assert cuda_matmul.pick_variant(*meta(6, 15360, 16)) != "short_k"  # aligned rows of 16, a small c: the TMA kernels'
    a, b = meta(3000, 4096, 20)
    assert cuda_matmul.pick_variant(a[:, :16], b[:16]) == "short_k"  # rows of 16 off 16 bytes: they would copy a
    assert cuda_matmul.pick_variant(*meta(4302, 7168, 17)) != "short_k"
    assert cuda_matmul.pick_variant(*meta(4302, 7168, 8, torch.float32)) != "short_k"
    launch = cuda_matmul.launch_of("short_k", 4302, 7168, 8, torch.bfloat16, 132)
    assert launch.grid == (56, 17) and launch.block == (128,)


@requires_gpu
@pytest.mark.parametrize("shape", [
    (24, 1027, 700),     # N odd: each k row's columns start at another offset in its 16 bytes
    (31, 30522, 768),    # N = 2 mod 8 (rows 4-byte aligned), 64-column blocks
    (50, 2053, 1100),    # 64-row tile, a K tail
    (3, 1027, 9000),     # K in runs, a tile's last run adding them
    (20, 8459, 260),     # 64-column blocks, the last one partly past N
], ids=str)
@pytest.mark.parametrize("b_kind", ["row", "offset"])
def test_gpu_few_rows_mma_any_b(shape, b_kind):
    """few_rows_mma on a row-major b whose rows are off 16 bytes (an LM head of 50257 columns) reads
    it where it lies, no copy: right (the unused memory around an offset view is NaN), with a bias,
    the same bits on every call."""
    a, b = make(shape, "bfloat16", "cuda", seed=10)
    b = layout(b, b_kind)
    assert "b-any" in cuda_ref.describe("matmul", a, b, variant="few_rows_mma")
    check_repeats_and_bias(a, b, "few_rows_mma")


@requires_gpu
@pytest.mark.parametrize("shape", [
    (5, 1024, 8192),    # 32 blocks: K in runs of whole slices
    (19, 1000, 6000),   # 32-row tile, N past the last block, a run's K tail
    (40, 300, 4100),    # 64-row tiles, K off the slice (the last run partial)
], ids=str)
@pytest.mark.parametrize("b_kind", ["col", "row"])
def test_gpu_few_rows_mma_runs(shape, b_kind):
    """few_rows_mma with K in runs: right with and without a bias, the same bits on every call (the
    runs' sums added in order)."""
    M, N, K = shape
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    assert cuda_few_rows.few_rows_mma_runs(M, N, K, sms, b_kind == "col") > 1
    a, b = make(shape, "bfloat16", "cuda", seed=8)
    b = layout(b, b_kind)
    check_repeats_and_bias(a, b, "few_rows_mma")


@requires_gpu
def test_gpu_few_rows_mma_runs_count_apart_on_two_streams():
    """K runs count each tile's finished runs a stream apart: calls in flight on two streams at once
    each give the bits one call alone gives (a shared count would let one call's last run add the
    other's partial sums), and the counts are back at zero for the next call."""
    pairs = [make((19, 1000, 6000), "bfloat16", "cuda", seed=s) for s in (11, 12)]
    alone = [cuda_ref.matmul(a, b, variant="few_rows_mma") for a, b in pairs]
    streams = [torch.cuda.Stream(), torch.cuda.Stream()]
    for s in streams:
        s.wait_stream(torch.cuda.current_stream())
    outs = []
    for _ in range(25):
        for (a, b), s in zip(pairs, streams):
            with torch.cuda.stream(s):
                outs.append(cuda_ref.matmul(a, b, variant="few_rows_mma"))
    torch.cuda.synchronize()
    assert all(torch.equal(o, alone[i % 2]) for i, o in enumerate(outs))


@requires_gpu
@pytest.mark.parametrize("shape", [
    (5, 4096, 4096),    # a decode batch in the 16-row tile
    (7, 1000, 1030),    # K off 16 bytes (a copied; W.t()'s rows too), N past the last 32-row block
    (32, 4092, 300),    # the 32-row tile, a K tail in the last slice
    (17, 64, 8200),     # long K in runs on two blocks
    (100, 300, 520),    # 64-row tiles along the grid's y, the second partly past M
    (16, 9000, 520),    # a row-major b this wide takes 64-column blocks, the last one partly past N
    (3, 1027, 640),     # N odd: a row-major b's rows off 16 bytes (copied aligned)
], ids=str)
@pytest.mark.parametrize("b_kind", ["col", "row", "offset"])
def test_gpu_few_rows_mma_tf32(shape, b_kind):
    """few_rows_mma on float32 where torch allows TF32 (mma.sync's m16n8k8, either layout of b read where
    it lies): right within TF32's tolerance on each tile, K tail, K in runs and copied operand, the same
    bits on every call; under "highest" the variant refuses float32."""
    a, b = make(shape, "float32", "cuda", seed=14)
    check_tf32_variant(a, layout(b, b_kind), "few_rows_mma")


def test_few_rows_mma_tf32_reads_b_where_it_lies():
    """few_rows_mma's TF32 instances read a row-major b in place, where wgmma_swap's TF32 transposes it,
    in slices half as deep as the 16-bit instances' (the same bytes); b's rows off 16 bytes are copied
    aligned (the shifting reader is 16-bit only). No GPU needed: the launch from metadata."""
    def meta(M, N, K, wt=False):
        b = torch.empty((N, K), device="meta").t() if wt else torch.empty((K, N), device="meta")
        return torch.empty((M, K), device="meta"), b
    with MatmulSpec.context("tf32"):
        row = cuda_ref.describe("matmul", *meta(8, 4096, 4096), variant="few_rows_mma")
        assert "matmul_few_rows_mma<float, false, 16, 32, 128, 96>" in row and "b-transposed" not in row
        wt = cuda_ref.describe("matmul", *meta(8, 4096, 4096, wt=True), variant="few_rows_mma")
        assert "matmul_few_rows_mma<float, true, 16, 32, 128, 96>" in wt
        odd = cuda_ref.describe("matmul", *meta(3, 1027, 512), variant="few_rows_mma")
        assert "b-copy" in odd and "b-any" not in odd
        assert "b-transposed" in cuda_ref.describe("matmul", *meta(8, 4096, 4096), variant="wgmma_swap")
        a, b = (torch.empty(shape, dtype=torch.bfloat16, device="meta") for shape in ((3, 512), (512, 1027)))
        assert "b-any" in cuda_ref.describe("matmul", a, b, variant="few_rows_mma")


def test_few_rows_mma_runs_only_where_its_blocks_are_few(monkeypatch):
    """Runs where the blocks fill at most a third of the two-an-SM slots (half for 16-row tiles on a
    row-major b) and K is FEW_ROWS_MMA_MIN_K or more (FEW_ROWS_MMA_MIN_K_ROW on a row-major b), as many
    as fill the slots, each a whole number of slices, none empty, and the launch's grid carries them;
    one run with FEW_ROWS_MMA_RUNS off."""
    fr = cuda_few_rows
    assert fr.few_rows_mma_runs(16, 1024, 2304, 132, True) == 1     # K under 4096 on W.t(): K whole
    assert fr.few_rows_mma_runs(2, 512, 3584, 132, False) == 14     # ... on a row-major b runs from K = 2048
    assert fr.few_rows_mma_runs(2, 512, 1536, 132, False) == 1      # ... not below it
    assert fr.few_rows_mma_runs(1, 576, 7168, 132, False) == 14     # 18 blocks: 14 runs fill 252 of 264 slots
    assert fr.few_rows_mma_runs(16, 14336, 4096, 132, False) == 1   # 448 blocks: the GPU full
    assert fr.few_rows_mma_runs(16, 4096, 512, 132, False) == 1     # K too short for two runs
    assert fr.few_rows_mma_runs(16, 4096, 4096, 132, True) == 1     # 128 blocks on W.t(): past a third
    for M, N, K, kmajor in [(5, 1024, 8192, True), (19, 1000, 6000, True), (40, 300, 4100, False),
                            (16, 4096, 4096, False)]:
        runs = fr.few_rows_mma_runs(M, N, K, 132, kmajor)
        sk = fr.FEW_ROWS_MMA_TILES[fr.few_rows_mma_rows(M)][1]
        run = fr.few_rows_mma_run(M, K, runs)
        assert runs > 1 and run % sk == 0 and cdiv(K, run) == runs
        mp = fr.few_rows_mma_rows(M)
        assert runs * cdiv(N, fr.FEW_ROWS_MMA_TILES[mp][0]) * cdiv(M, mp) <= 2 * 132  # no more than the slots
        launch = cuda_matmul.launch_of("few_rows_mma", M, N, K, torch.bfloat16, 132, splits=runs)
        assert launch.grid[2] == runs
    monkeypatch.setattr(fr, "FEW_ROWS_MMA_RUNS", False)
    assert fr.few_rows_mma_runs(5, 1024, 8192, 132, True) == 1


# wgmma_ws shapes whose plan shares the last wave by stream-K on 132 SMs, in pairs and alone
WS_STREAM_K_CASES = [
    ((2200, 2000, 6000), "row", "col"),  # pairs: 9 x 8 = 72 units on 66 pairs, the last 6 shared; a K tail
    ((2048, 2304, 8192), "col", "row"),  # pairs, a.t() and a row-major b: whole tiles
    ((1000, 4500, 6000), "row", "col"),  # c's rows off 16 bytes: stored from the accumulators
    ((1024, 1024, 4096), "col", "col"),  # one wave: 16 units shared by all 66 pairs (a weight's gradient)
    ((4300, 1024, 2000), "row", "col"),  # 68 units on 66 pairs: the last 2 shared with the wave before
]


def _ws_blocks(monkeypatch, pairs: bool) -> None:
    """wgmma_ws's blocks in pairs, or alone (132 of them), whatever the rows."""
    monkeypatch.setattr(cuda_wgmma, "WS_PAIRS_MIN_M", 0 if pairs else 1 << 40)
    monkeypatch.setattr(cuda_wgmma, "WS_PAIRS_ODD_MIN_M", 0 if pairs else 1 << 40)
    monkeypatch.setattr(cuda_wgmma, "WS_PAIRS_EVEN", pairs)
    cuda_matmul._PLANS.clear()


@pytest.mark.parametrize("shape,a_kind,b_kind", WS_STREAM_K_CASES, ids=str)
@pytest.mark.parametrize("pairs", [True, False], ids=["pairs", "alone"])
def test_wgmma_ws_stream_k_cases_take_stream_k(shape, a_kind, b_kind, pairs, monkeypatch):
    """The GPU test's shapes still take stream-K on an H100 / H200's 132 SMs (a rule change that
    drops one fails here, on a CPU, rather than leaving the GPU test a path it never runs)."""
    _ws_blocks(monkeypatch, pairs)
    assert cuda_wgmma.ws_stream_k(*shape, 2, 132, a_kind == "col")
    cuda_matmul._PLANS.clear()


@requires_gpu
@pytest.mark.parametrize("shape,a_kind,b_kind", WS_STREAM_K_CASES, ids=str)
@pytest.mark.parametrize("pairs", [True, False], ids=["pairs", "alone"])
def test_gpu_wgmma_ws_stream_k(shape, a_kind, b_kind, pairs, monkeypatch):
    """wgmma_ws where the last wave would leave most pairs idle: stream-K (the last wave's k-slices
    shared by all the pairs, a unit's later parts' float32 sums handed to the pair with its first
    through slots and flags): right, the same bits on every call, and the flags lowered again."""
    if not cuda_wgmma.is_sm90(torch.device("cuda")):
        pytest.skip("wgmma_ws needs a Hopper GPU")
    _ws_blocks(monkeypatch, pairs)
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    if not cuda_wgmma.ws_stream_k(*shape, 2, sms, a_kind == "col"):
        cuda_matmul._PLANS.clear()
        pytest.skip(f"the shape takes no stream-K on {sms} SMs (the CPU test checks 132)")
    a, b = make(shape, "bfloat16", "cuda", seed=7)
    a, b = layout(a, a_kind), layout(b, b_kind)
    check(FNS["cuda"], a, b, "bfloat16", variant="wgmma_ws")
    first = cuda_ref.matmul(a, b, variant="wgmma_ws")
    assert all(torch.equal(first, cuda_ref.matmul(a, b, variant="wgmma_ws")) for _ in range(3))
    torch.cuda.synchronize()
    assert all(not flags.any() for flags, *_ in kernel_util._HAND_OVER.values())
    cuda_matmul._PLANS.clear()  # no plan of the patched rule outlives the test


@requires_gpu
def test_wgmma_ws_kept_arguments_follow_the_streams_hand_over_pair(monkeypatch):
    """A stream-K plan keeps its kernel's arguments per stream while the stream keeps the hand-over
    pair they name: a repeat call asks hand_over for nothing; the pair outgrown (replaced by a
    larger one) or another stream, and the call asks again; the same bits every time, the flags
    lowered after."""
    if not cuda_wgmma.is_sm90(torch.device("cuda")):
        pytest.skip("wgmma_ws needs a Hopper GPU")
    a, b = make((2200, 2000, 6000), "bfloat16", "cuda", seed=5)
    b = layout(b, "col")
    assert " sk" in cuda_matmul.describe(a, b, "wgmma_ws")
    check(FNS["cuda"], a, b, "bfloat16", variant="wgmma_ws")
    asked = []
    monkeypatch.setattr(cuda_wgmma, "hand_over", lambda *args: asked.append(args) or kernel_util.hand_over(*args))
    c = torch.empty(2200, 2000, device="cuda", dtype=torch.bfloat16)  # one out: the same addresses each call
    cuda_matmul._PLANS.clear()  # a fresh plan: c may take the address of check's freed result, whose arguments are kept

    def run():
        return cuda_ref.matmul(a, b, variant="wgmma_ws", out=c).clone()
    first = run()
    assert len(asked) == 1 and torch.equal(first, run()) and len(asked) == 1  # kept
    flags = kernel_util.hand_over(a.device, 0, 0)[0]
    bigger = kernel_util.hand_over(a.device, flags.numel() + 1024, 1 << 23)[0]  # the stream's pair outgrown
    assert bigger is not flags
    del flags
    assert torch.equal(first, run()) and len(asked) == 2
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        other = run()
    torch.cuda.current_stream().wait_stream(s)
    assert len(asked) == 3 and torch.equal(first, other)
    assert torch.equal(first, run()) and len(asked) == 3  # the first stream's pair kept still
    torch.cuda.synchronize()
    assert all(not f.any() for f, *_ in kernel_util._HAND_OVER.values())


@requires_gpu
def test_wgmma_swap_split_keeps_its_arguments(monkeypatch):
    """wgmma_swap's split plans keep both launches' arguments (the kernel's, matmul_split_reduce's)
    while the stream keeps the hand-over pair they name, as wgmma_ws's do: right with and without a
    bias, the same bits every time, a repeat call asks hand_over for nothing, the pair outgrown and
    it asks again."""
    if not cuda_wgmma.is_sm90(torch.device("cuda")):
        pytest.skip("wgmma_swap needs a Hopper GPU")
    a, b = make((99, 1024, 4096), "bfloat16", "cuda", seed=6)
    b = layout(b, "col")
    monkeypatch.setattr(cuda_swap, "swap_shape", lambda *_: (2, 64, 4))  # K in runs: two launches
    cuda_matmul._PLANS.clear()
    assert " S4" in cuda_matmul.describe(a, b, "wgmma_swap")
    check(FNS["cuda"], a, b, "bfloat16", variant="wgmma_swap")
    bias = torch.randn(1024, device="cuda").to(a.dtype)
    got = cuda_ref.plans("matmul")((a, b, bias), "wgmma_swap", None)
    cmp = MatmulSpec.compare(got, MatmulSpec.reference((a, b)) + bias.double(), (a, b))
    assert cmp.ok, cmp.detail
    asked = []
    monkeypatch.setattr(cuda_wgmma, "hand_over", lambda *args: asked.append(args) or kernel_util.hand_over(*args))
    c = torch.empty(99, 1024, device="cuda", dtype=torch.bfloat16)
    cuda_matmul._PLANS.clear()

    def run():
        return cuda_ref.matmul(a, b, variant="wgmma_swap", out=c).clone()
    first = run()
    assert len(asked) == 1 and torch.equal(first, run()) and len(asked) == 1  # kept
    flags = kernel_util.hand_over(a.device, 0, 0)[0]
    assert kernel_util.hand_over(a.device, flags.numel() + 1024, 1 << 23)[0] is not flags  # outgrown
    del flags
    assert torch.equal(first, run()) and len(asked) == 2
    cuda_matmul._PLANS.clear()


def test_ws_stream_k_takes_the_last_wave_where_it_is_short(monkeypatch):
    """Stream-K takes the last wave's units (the rest are whole waves) where that wave would leave
    most pairs idle and the shares are long enough to be worth handing over; 128-row tiles only
    (wide ones here: the points it was measured on)."""
    _narrow_always(monkeypatch, 256)  # wide tiles: the points measured
    for (M, N, K), tail in [((2048, 11008, 4096), 14), ((8192, 8192, 8192), 34), ((2200, 2000, 6000), 6),
                            ((1024, 2048, 4096), 32)]:
        sk = cuda_wgmma.ws_stream_k(M, N, K, 2, 132)
        assert sk == tail and sk * cdiv(K, 64) >= cuda_wgmma.WS_SK_MIN_SLICES * 132 // cuda_wgmma.ws_cluster(M)
    assert cuda_wgmma.ws_stream_k(2816, 1536, 4096, 2, 132) == 0   # 66 units: whole waves
    assert cuda_wgmma.ws_stream_k(2048, 2048, 4096, 2, 132) == 0   # one wave, 64 of 66 pairs
    assert cuda_wgmma.ws_stream_k(4096, 4096, 4096, 2, 132) == 0   # the last wave 58 of 66 pairs
    assert cuda_wgmma.ws_stream_k(2200, 2000, 777, 2, 132) == 72   # the last 6 units' shares of 1-2 slices:
    assert cuda_wgmma.ws_stream_k(4300, 1024, 4096, 2, 132) == 68  # shared with the whole wave before them
    assert cuda_wgmma.ws_stream_k(4116, 1024, 4096, 2, 132) == 0   # 33 tiles, blocks alone: one whole wave
    assert cuda_wgmma.ws_stream_k(885, 5120, 13824, 2, 132) == 8   # blocks alone past one wave (140 units)
    assert cuda_wgmma.ws_stream_k(517, 3584, 3584, 2, 132) == 0    # blocks alone, one wave (70 units)
    assert cuda_wgmma.ws_stream_k(4224, 16384, 512, 2, 132) == 0  # 17 waves: sharing gains too little
    assert cuda_wgmma.ws_stream_k(16, 14336, 4096, 2, 132) == 0    # few rows: a weight read once
    assert cuda_wgmma.ws_stream_k(128, 14336, 4096, 2, 132) == 0
    assert cuda_wgmma.ws_stream_k(16, 4096, 4096, 2, 132) == 0     # split K's few tiles


def test_ws_pairs_where_they_pad_no_row():
    """wgmma_ws's blocks run in pairs where a's 128-row tiles are even in count (a pair pads no row
    more than two blocks alone), and an odd count from WS_PAIRS_ODD_MIN_M rows (the pad of one tile
    a small share there); stream-K follows the pairs."""
    for M, cluster in [(64, 1), (128, 1), (129, 2), (256, 2), (310, 1), (429, 2), (882, 1), (1023, 2), (1100, 1),
                       (1200, 2), (4400, 1), (6200, 2)]:
        assert cuda_wgmma.ws_cluster(M) == cluster, M
    assert cuda_wgmma.ws_stream_k(671, 6144, 16384, 2, 132) == 6   # 72 pair units on 66 pairs
    assert cuda_wgmma.ws_stream_k(555, 6400, 16384, 2, 132) == 0   # odd: blocks alone, no stream-K


def test_persistent_grids_keep_their_waves_on_fewer_programs(monkeypatch):
    """A persistent grid takes the fewest programs that keep its waves, each program the same
    count of items; stream-K keeps every pair (its shares are spread over all of them)."""
    _narrow_always(monkeypatch, 256)  # wide tiles: the points measured
    for items, slots, programs in [(512, 132, 128), (256, 66, 64), (100, 132, 100), (133, 132, 67),
                                   (1, 132, 1), (0, 132, 0), (2048, 132, 128), (1024, 66, 64)]:
        assert balanced_grid(items, slots) == programs
        assert programs == 0 or cdiv(items, programs) == cdiv(items, slots)
    blocks = lambda M, N, K: cuda_matmul.launch_of(  # noqa: E731
        "wgmma_ws", M, N, K, torch.bfloat16, 132, b_kmajor=True, stream_k=cuda_wgmma.ws_stream_k(M, N, K, 2, 132)).grid[0]
    assert blocks(4096, 4096, 4096) == 128     # 256 pair units: 4 waves on 64 pairs as on 66
    assert blocks(8192, 8192, 8192) == 132     # stream-K's last wave: every pair
    assert blocks(2048, 1024, 1024) == 64      # 32 pair units: one wave


@requires_gpu
@pytest.mark.parametrize("shape,b_kind", [
    ((333, 4096, 14336), "col"),   # 128-row tiles, two runs (48 tiles on 132 SMs)
    ((128, 6144, 4096), "col"),    # three runs, handed over in the kernel
    ((1024, 1024, 1024), "row"),   # pairs (clusters of 2) in three runs
    ((1030, 1000, 1000), "col"),   # pairs in two runs, partial tiles and a K tail
    ((130, 2048, 2304), "row"),    # more than three runs: the partial products' buffer and its sum
], ids=str)
def test_gpu_wgmma_ws_split_model(shape, b_kind, monkeypatch):
    """The split model's choices on wide 128-row tiles and on pairs: right, and the same bits each
    call (narrow tiles: test_gpu_wgmma_ws_narrow_tiles)."""
    if not cuda_wgmma.is_sm90(torch.device("cuda")):
        pytest.skip("wgmma_ws needs a Hopper GPU")
    _narrow_always(monkeypatch, 256)  # wide tiles: the points measured
    cuda_matmul._PLANS.clear()
    assert cuda_wgmma.ws_splits(*shape, 2, torch.cuda.get_device_properties(0).multi_processor_count) > 1
    a, b = make(shape, "bfloat16", "cuda", seed=7)
    b = layout(b, b_kind)
    check(FNS["cuda"], a, b, "bfloat16", variant="wgmma_ws")
    first = cuda_ref.matmul(a, b, variant="wgmma_ws")
    assert all(torch.equal(first, cuda_ref.matmul(a, b, variant="wgmma_ws")) for _ in range(3))
    cuda_matmul._PLANS.clear()  # no plan of the patched rule outlives the test


def test_ws_splits_fill_the_gpu_and_leave_no_run_empty(monkeypatch):
    _narrow_always(monkeypatch, 256)  # the points the split rule was measured on, wide
    for M, N, K in [(16, 4096, 4096), (128, 14336, 4096), (5, 64, 10000), (1024, 1024, 32000), (3, 45, 33)]:
        splits = cuda_wgmma.ws_splits(M, N, K, 2, 132)
        cluster = cuda_wgmma.ws_cluster(M)
        units = cdiv(M, 64 * cuda_wgmma.ws_consumers(M) * cluster) * cdiv(N, 256)
        k_tiles = cdiv(K, 64)
        run = cdiv(k_tiles, splits)
        assert units * splits <= max(132 // cluster, units)   # no second wave of units
        assert (splits - 1) * run < k_tiles                   # the last run has a slice
        assert splits == 1 or run >= cuda_wgmma.WS_SPLIT_MIN_SLICES
    assert cuda_wgmma.ws_splits(4096, 4096, 4096, 2, 132) == 1   # tiles that fill the GPU: no split
    assert cuda_wgmma.ws_splits(16, 14336, 4096, 2, 132) == 1     # 56 tiles: over a third of the SMs
    assert cuda_wgmma.ws_splits(16, 10240, 8192, 2, 132) == 3     # 40 tiles: a third or less, in 3 runs
    # 128-row tiles, the split model: runs where the tiles leave SMs idle and the tensor cores bound
    assert cuda_wgmma.ws_splits(333, 4096, 14336, 2, 132) == 2    # 48 tiles on 132 SMs
    assert cuda_wgmma.ws_splits(128, 14336, 4096, 2, 132) == 2    # 56 tiles
    assert cuda_wgmma.ws_splits(1024, 1024, 1024, 2, 132) == 3    # 16 pairs: the sums handed over, no buffer
    assert cuda_wgmma.ws_splits(2048, 4096, 8192, 2, 132) == 1    # 128 units: one wave nearly full
    # stream-K keeps the short last waves it was measured on; the model does not split them
    assert cuda_wgmma.ws_splits(1024, 2048, 4096, 2, 132) == 1 and cuda_wgmma.ws_stream_k(1024, 2048, 4096, 2, 132) == 32
    for splits in range(1, 9):  # the model's time: more runs, fewer slices each, until the bytes bound it
        t = cuda_wgmma.ws_split_time(333, 4096, 14336, 2, 132, False, splits)
        assert t > 0 and (splits == 1 or t < cuda_wgmma.ws_split_time(333, 4096, 14336, 2, 132, False, 1))


@requires_gpu
def test_float32_is_exact_unless_tf32_is_allowed():
    """With "highest" no backend may use TF32; the float32 tolerance would catch ~1e-3 errors."""
    a, b = make((1024, 1024, 1024), "float32", "cuda", seed=4)
    ref = MatmulSpec.reference((a, b))
    with MatmulSpec.context("float32"):
        for backend, variant in (bv for bv in ALL if takes(*bv, "float32")):
            err = MatmulSpec.compare(FNS[backend](a, b, variant=variant), ref, (a, b)).max_rel_err
            assert err < 1e-5, (backend, variant, err)
    with MatmulSpec.context("tf32"):  # TF32 dots: error of TF32 size, within its tolerance
        for out in (triton_impl.matmul(a, b), cuda_ref.matmul(a, b)):
            assert MatmulSpec.compare(out, ref, (a, b)).ok
        err = MatmulSpec.compare(cuda_ref.matmul(a, b, variant="pipelined"), ref, (a, b)).max_rel_err
        assert err < 1e-5  # a named exact variant stays exact


@requires_gpu
@pytest.mark.parametrize("shape,b_kind,shape_of", [
    ((100, 300, 1000), "col", None),          # b = W.t(): read where it lies, one block of 112 rows
    ((333, 1000, 2100), "row", None),         # a row-major b transposed once a call, a ragged k-slice
    ((5, 1032, 4104), "col", (1, 128, 3)),    # 5 rows in a block of 16, K in three runs
    ((2100, 520, 777), "col", None),          # many blocks of rows, rows of a and W off 16 bytes (copied)
], ids=str)
def test_cuda_tf32_wgmma_swap(shape, b_kind, shape_of, monkeypatch):
    """float32 where torch allows TF32 runs wgmma_swap's TF32 instances on Hopper (variant=None):
    right within TF32's tolerance on each way its tiles end and b is read; under "highest" the
    variant refuses float32 and variant=None stays exact."""
    if not cuda_swap.is_sm90(torch.device("cuda")):
        pytest.skip("wgmma_swap needs a Hopper GPU")
    if shape_of is not None:
        monkeypatch.setattr(cuda_swap, "swap_shape", lambda *_: shape_of)
    cuda_matmul._PLANS.clear()
    try:
        a, b = make(shape, "float32", "cuda", seed=11)
        b = layout(b, b_kind)
        ref = MatmulSpec.reference((a, b))
        with MatmulSpec.context("tf32"):
            text = cuda_ref.describe("matmul", a, b)
            transposed = b_kind == "row" or shape[2] * 4 % 16 != 0  # (W's rows off 16 bytes: copied K-major)
            assert text.startswith("wgmma_swap matmul_wgmma_swap<float, false,") and ("b-transposed" in text) == transposed
            out = poison(shape[:2], a.dtype, a.device)
            assert cuda_ref.matmul(a, b, out=out) is out
            cmp = MatmulSpec.compare(out, ref, (a, b))
            assert cmp.ok, cmp.detail
        with MatmulSpec.context("float32"):
            assert not cuda_ref.describe("matmul", a, b).startswith("wgmma_swap")
            with pytest.raises(TypeError, match="runs float32 as TF32"):
                cuda_ref.matmul(a, b, variant="wgmma_swap")
    finally:
        cuda_matmul._PLANS.clear()


@requires_gpu
@pytest.mark.parametrize("shape,a_kind,b_kind", [
    ((1024, 1000, 2100), "row", "col"),   # blocks in pairs, b = W.t() read where it lies, a ragged k-slice
    ((333, 1000, 2100), "row", "row"),    # a row-major b transposed once a call
    ((40, 4100, 4104), "row", "col"),     # 64-row tiles (one consumer warpgroup), K in runs
    ((500, 300, 8192), "row", "col"),     # 128-column tiles, stream-K's shared last wave
    ((2000, 1000, 1030), "col", "col"),   # an a.t() view and W's rows off 16 bytes: both copied K-major
], ids=str)
def test_cuda_tf32_wgmma_ws(shape, a_kind, b_kind):
    """wgmma_ws's TF32 instances (by name, on Hopper): right within TF32's tolerance on each tile, cluster,
    split and copy; the same bits on every call; refused under "highest"."""
    if not cuda_swap.is_sm90(torch.device("cuda")):
        pytest.skip("wgmma_ws needs a Hopper GPU")
    a, b = make(shape, "float32", "cuda", seed=15)
    check_tf32_variant(layout(a, a_kind), layout(b, b_kind), "wgmma_ws")


def test_cuda_tf32_wgmma_ws_reads_k_major():
    """wgmma_ws on float32 under TF32 runs its float instances with a and b K-major: W.t() where it lies, a
    row-major b transposed and an a.t() view copied once a call (no GPU needed: the launch from metadata)."""
    with MatmulSpec.context("tf32"):
        a, w = torch.empty(1024, 2100, device="meta"), torch.empty(1000, 2100, device="meta")
        text = cuda_ref.describe("matmul", a, w.t(), variant="wgmma_ws")
        assert text.startswith("wgmma_ws matmul_wgmma_ws<float, false, false, 4, 2, 2>") and "copy" not in text
        assert "b-transposed" in cuda_ref.describe("matmul", a, w.t().contiguous(), variant="wgmma_ws")
        assert "a-copy" in cuda_ref.describe("matmul", a.t().contiguous().t(), w.t(), variant="wgmma_ws")


def test_cuda_tf32_rule():
    """variant=None gives float32 to wgmma_swap's TF32 on Hopper only where torch's float32 matmul
    precision allows TF32 (no GPU needed: the rule reads metadata, Hopper stood in for)."""
    a, b = torch.empty(100, 4096, device="meta"), torch.empty(4096, 1024, device="meta")
    with mock.patch.object(cuda_matmul, "is_sm90", lambda device: True):
        with MatmulSpec.context("tf32"):
            assert cuda_matmul.pick_variant(a, b) == cuda_matmul.pick_variant(a, b.t().contiguous().t()) == "wgmma_swap"
            assert cuda_matmul.pick_variant(a[:3], b.t().contiguous().t()) == "few_rows"  # (memory-bound: exact)
            assert cuda_matmul.pick_variant(a[:4], b) == "few_rows"  # ... b read where it lies, not transposed
            assert cuda_matmul.pick_variant(a[:5], b) == "wgmma_swap"
        with MatmulSpec.context("float32"):
            assert cuda_matmul.pick_variant(a, b) in cuda_matmul.FLOAT32_ONLY
    with MatmulSpec.context("tf32"):  # a TF32 kernel takes float32 where TF32 is allowed only
        cuda_matmul.check_dtype("wgmma_swap", torch.float32)
    with MatmulSpec.context("float32"), pytest.raises(TypeError, match="supports float16, bfloat16, tf32 only, got float32 .*TF32"):
        cuda_matmul.check_dtype("wgmma_swap", torch.float32)
    cuda_matmul.check_dtype("pipelined", torch.float32)  # exact float32 kernels: either precision
    with mock.patch.object(cuda_matmul, "is_sm90", lambda device: False), MatmulSpec.context("tf32"):
        assert cuda_matmul.pick_variant(a, b) in cuda_matmul.FLOAT32_ONLY


def test_one_row_on_w_t_runs_the_gemv_unless_biased():
    """variant=None on one 16-bit row of a against W.t() runs few_rows, which is the GEMV on W, in
    both backends; not for a call with a bias (the GEMV has no epilogue to add it before c's one
    rounding), nor for a row of a with a stride (no GPU needed: metadata, Hopper stood in for)."""
    w = torch.empty(4096, 1024, dtype=torch.bfloat16, device="meta")
    a = torch.empty(1, 1024, dtype=torch.bfloat16, device="meta")
    with mock.patch.object(cuda_matmul, "is_sm90", lambda device: True), \
            mock.patch.object(triton_matmul, "_hopper", lambda device: True):
        for module in (cuda_matmul, triton_matmul):
            assert module.pick_variant(a, w.t()) == "few_rows", module
            assert module.pick_variant(a.expand(2, 1024)[:1], w.t()) == "few_rows", module  # (a row: any M stride)
        assert triton_matmul.pick_variant(a, w.t(), biased=True) == "tma_persistent"
        strided = torch.empty(1, 2048, dtype=torch.bfloat16, device="meta")[:, ::2]
        for n in (4096, 50257):  # (CUDA's rules pick its own few_rows kernel here, which adds a bias)
            w = torch.empty(n, 1024, dtype=torch.bfloat16, device="meta")
            with mock.patch.object(cuda_matmul, "one_row", lambda a, b: False):
                rules = cuda_matmul.pick_variant(a, w.t())
            assert cuda_matmul.pick_variant(a, w.t(), biased=True) == cuda_matmul.pick_variant(strided, w.t()) == rules


@pytest.mark.parametrize("shape, layout, variant", [
    ((13, 4096, 11008), "wt", "few_rows_ws"), ((29, 8192, 29568), "wt", "few_rows_ws"),
    ((24, 256, 1536), "wt", "few_rows"), ((3, 1536, 8960), "wt", "few_rows"),
    ((9, 5120, 17920), "row", "few_rows_ws"), ((21, 8960, 1536), "row", "grouped"), ((34, 14336, 4096), "row", "grouped"),
    ((3, 35840, 5120), "row", "few_rows"), ((24, 256, 1536), "row", "few_rows"), ((13, 4096, 11008), "row", "few_rows_ws"),
    ((40, 4224, 256), "row", "grouped"),
    ((158, 1024, 2304), "wt", "stream_k"), ((1765, 128, 896), "row", "stream_k"),
    ((6694, 3072, 768), "row", "stream_k"), ((8062, 768, 3072), "wt", "fma_ws")], ids=str)
def test_triton_exact_float32_picks_by_programs(shape, layout, variant):
    """Triton's exact float32 on Hopper (stood in for, 132 SMs; no GPU needed): on a row-major b
    grouped where its 16 x 128 tiles fill every SM; few_rows_ws from 5 rows, both layouts of b, and
    then grouped's 16 x 64 tiles on a row-major b, only where their programs keep half the SMs busy
    (few_rows' narrower tiles else); the TMA kernel always with stream-K's shared last wave
    (decision 061's sweep: never behind K whole)."""
    (M, N, K) = shape
    a = torch.empty(M, K, device="meta")
    b = torch.empty(N, K, device="meta").t() if layout == "wt" else torch.empty(K, N, device="meta")
    with mock.patch.object(triton_matmul, "_hopper", lambda device: True), \
            mock.patch.object(triton_matmul, "fma_ws_runs", lambda device: True), \
            mock.patch.object(_matmul_fp32, "fma_ws_runs", lambda device: True), \
            mock.patch.object(triton_matmul, "sm_count", lambda device: 132), MatmulSpec.context("float32"):
        assert triton_matmul.pick_variant(a, b) == variant
    with mock.patch.object(triton_matmul, "_hopper", lambda device: True), MatmulSpec.context("tf32"):
        assert triton_matmul.pick_variant(a, b) != "stream_k"  # (TF32 keeps its own rules)


def test_triton_tf32_few_rows_on_a_row_major_b_read_it_in_place(device):
    """Triton, float32 under TF32 on Hopper (stood in for; no GPU needed): up to TF32_ROW_FEW_ROWS_MAX_M
    rows on a row-major b run few_rows' exact sums, which read b where it lies; one more row, or b = W.t()
    (read in place by the TMA kernel), keeps TF32's rules; under "highest" the exact rules hold."""
    most = _matmul_fp32.TF32_ROW_FEW_ROWS_MAX_M
    b, w = torch.empty(4096, 6144, device="meta"), torch.empty(6144, 4096, device="meta")
    with mock.patch.object(triton_matmul, "_hopper", lambda device: True), MatmulSpec.context("tf32"):
        for M in (1, most):
            assert triton_matmul.pick_variant(torch.empty(M, 4096, device="meta"), b) == "few_rows"
        assert triton_matmul.pick_variant(torch.empty(most + 1, 4096, device="meta"), b) != "few_rows"
        assert triton_matmul.pick_variant(torch.empty(2, 4096, device="meta"), w.t()) != "few_rows"
    a, b = make((3, 70, 100), "float32", device, seed=5)
    check(FNS["triton"], a, b, "tf32", variant="few_rows")  # exact sums, within TF32's tolerance
    if device == "cuda" and triton_matmul._hopper(a.device):
        with MatmulSpec.context("tf32"):
            assert triton_impl.describe("matmul", a, b).startswith("few_rows")


def _meta_bf16(shape, layout):
    """bf16 a (M, K) and b (K, N) on the meta device, b = W.t() ("wt") or row-major."""
    (M, N, K) = shape
    a, w = torch.empty(M, K, device="meta", dtype=torch.bfloat16), torch.empty(N, K, device="meta", dtype=torch.bfloat16)
    return a, w.t() if layout == "wt" else w.reshape(K, N)


def _hopper_132():
    """Triton's selection as on an H100 (Hopper, 132 SMs), without a GPU."""
    stack = contextlib.ExitStack()
    stack.enter_context(mock.patch.object(triton_matmul, "_hopper", lambda device: True))
    stack.enter_context(mock.patch.object(triton_matmul, "sm_count", lambda device: 132))
    return stack


@pytest.mark.parametrize("shape, layout, variant", [
    ((228, 30522, 4), "wt", "grouped"), ((4302, 7168, 8), "wt", "grouped"), ((4302, 7168, 8), "row", "grouped"),
    ((9737, 9216, 16), "row", "grouped"), ((3, 9216, 8), "row", "grouped"), ((1, 3072, 4), "wt", "few_rows"),
    ((9737, 9216, 17), "row", "tma_persistent")], ids=str)
def test_triton_short_k_picks(shape, layout, variant):
    """16-bit products of K <= 16 (LoRA up projections) run grouped in one K slice of 16 on 64 x 128
    tiles, whatever their rows and b's layout (decision 066), but one row on W.t() (the GEMV); K 17
    keeps the TMA kernel. Hopper stood in for (no GPU needed)."""
    (M, N, K), (a, b) = shape, _meta_bf16(shape, layout)
    with _hopper_132():
        assert triton_matmul.pick_variant(a, b) == variant
    cfg = triton_matmul._heuristic_of("grouped", a, b, "tf32")
    short = (cfg.kwargs["BLOCK_M"], cfg.kwargs["BLOCK_N"], cfg.kwargs["BLOCK_K"]) == (64, 128, 16)
    assert short == (K <= _matmul_configs.SHORT_K_MAX)


@pytest.mark.parametrize("shape, layout, variant, tile", [
    ((297, 4, 29568), "row", "split_k", "64x16x128 S26"), ((297, 4, 29568), "wt", "split_k", "64x16x128 S26"),
    ((12344, 8, 5120), "wt", "split_k", "64x16x128 S1"), ((69, 32, 4096), "row", "split_k", "64x32x128 S16"),
    ((26, 4, 5120), "row", "split_k", "64x16x128 S20"), ((13, 8, 29568), "wt", "split_k", None),
    ((297, 33, 29568), "row", "split_k", "64x64x128 S10"), ((270, 128, 7168), "wt", "split_k", "64x64x128 S10"),
    ((8685, 64, 5120), "row", "split_k", "128x64x64 S1"), ((5617, 64, 3072), "wt", "split_k", "64x64x128 S1"),
    ((6625, 128, 3584), "wt", None, None), ((1027, 129, 29568), "row", None, None), ((64, 33, 8192), "row", None, None),
    ((1351, 128, 896), "row", None, None),
    ((297, 4, 29567), "row", None, None), ((1, 8, 4864), "wt", "few_rows", None)],
    ids=str)
def test_triton_narrow_n_picks(shape, layout, variant, tile):
    """16-bit products of at most 32 columns of c (LoRA down projections) run split_k on 64-row tiles
    as wide as c's columns' power of two from 16, K in the slices that fill one wave (132 SMs) as far
    as one launch sums them (64 x 64 tiles: 10): past
    64 rows whatever the rules picked, up to 64 only in place of grouped and tma_persistent (13 rows keep
    the few-row ladder's split). Past 64 rows, up to 64 columns on tiles 64 wide (128-row ones past a
    wave of 64-row ones: 8685 rows) and 65-128 where 64-row tiles make one wave (not 6625 x 128), from
    K = 1024 (not 896), not 129 columns. Not at 33 columns up to 64 rows, nor where descriptors cannot read a where it lies (an odd
    K), nor one row on W.t() (the GEMV). Hopper stood in for (no GPU needed)."""
    (M, N, K), (a, b) = shape, _meta_bf16(shape, layout)
    with _hopper_132():
        pick = triton_matmul.pick_variant(a, b)
        if variant:
            assert pick == variant
        else:  # outside the rule: the rules' own pick
            assert not triton_matmul._narrow_n(a, b) and pick == triton_matmul._rules_pick(a, b)
        if tile:
            cfg = triton_matmul._split_k_config("split_k", a, b, "tf32")
            assert f"{_matmul_configs.tile_text(cfg).split()[0]} S{cfg.kwargs['SPLIT_K']}" == tile
            assert cfg.kwargs["SPLIT_K"] == 1 or _matmul_tma.split_last_of(cfg.kwargs, M, N)  # one launch
        elif variant == "split_k":
            assert not _matmul_configs.tile_text(triton_matmul._split_k_config("split_k", a, b, "tf32")).startswith("64x16")


@pytest.mark.skipif(torch.cuda.is_available(), reason="the interpreter's run (the GPU's: test_gpu_triton_narrow_n)")
@pytest.mark.parametrize("shape, layout, bias_kind", [
    ((70, 4, 300, 1, 132), "row", "row"), ((70, 4, 304, 1, 132), "wt", "col"), ((130, 17, 520, 2, 132), "row", "full"),
    ((3, 8, 600, 2, 132), "wt", "row"), ((130, 70, 520, 2, 132), "wt", "row"), ((200, 40, 264, 1, 2), "row", "full")],
    ids=str)
def test_triton_narrow_n_tiles_with_a_bias(shape, layout, bias_kind):
    """narrow_n_config's tiles (c's rows off 16 bytes written by masked stores, b's copied) with the
    switch's bias, K whole or in slices (the sum adds the bias), under the interpreter in float32:
    70 columns in two tiles 64 wide, and on 2 SMs the 128-row tiles of 40 columns past a wave."""
    M, N, K, split, sms = shape
    a, w = torch.randn(M, K), torch.randn(N, K)
    b = w.t() if layout == "wt" else w.t().contiguous()
    bias = {"row": torch.randn(N).expand(M, N), "col": torch.randn(M, 1).expand(M, N), "full": torch.randn(M, N)}[bias_kind]
    cfg = _matmul_configs.narrow_n_config(M, N, K, sms)
    assert cfg.kwargs["SPLIT_K"] == split and cfg.kwargs["BLOCK_N"] == min(64, max(16, 1 << (N - 1).bit_length()))
    assert cfg.kwargs["BLOCK_M"] == (128 if sms == 2 else 64)
    out = poison((M, N), torch.float32, "cpu")
    triton_matmul._make_run("split_k", cfg, a, b, "ieee", out, triton_matmul.check_bias(bias, a, (M, N)))(a, b, bias, out)
    ref = a.double() @ b.double() + bias.double()
    assert ((out.double() - ref).abs().max() / ref.abs().max()).item() < 1e-5


@requires_gpu
@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
@pytest.mark.parametrize("b_layout", ["row", "wt"])
@pytest.mark.parametrize("shape", [(297, 4, 2960), (26, 3, 520), (1001, 32, 1024), (70, 17, 4096), (5000, 8, 136)],
                         ids=str)
def test_gpu_triton_narrow_n(shape, b_layout, dtype):
    """variant=None on few columns of c runs split_k's narrow tiles (b's rows off 16 bytes copied, c's
    written by masked stores, K in slices or whole), checked against float64 with out poisoned."""
    a, b = make(shape, dtype, "cuda")
    if b_layout == "wt":
        b = b.t().contiguous().t()
    assert triton_impl.describe("matmul", a, b).startswith(f"split_k 64x{16 if shape[1] <= 16 else 32}x128")
    check(triton_impl.matmul, a, b, dtype)


@requires_gpu
@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
@pytest.mark.parametrize("b_layout", ["row", "wt"])
@pytest.mark.parametrize("shape, tile", [
    ((270, 128, 7168), "split_k 64x64x128"), ((1001, 40, 3000), "split_k 64x64x128"), ((8700, 64, 1024), "split_k 128x64x64"),
    ((45, 64, 4096), "split_k 16x64x128"), ((54, 104, 8192), "split_k 16x64x128")], ids=str)
def test_gpu_triton_wide_narrow_n(shape, tile, b_layout, dtype):
    """variant=None on 33-128 columns of c: past 64 rows the tiles 64 wide (128 rows past a wave of
    64-row ones), at 33-64 rows the narrow ladder's last rung, K in the slices that fill a wave; c's
    rows off 16 bytes at 40 columns. Checked against float64 with out poisoned."""
    a, b = make(shape, dtype, "cuda")
    if b_layout == "wt":
        b = b.t().contiguous().t()
    assert triton_impl.describe("matmul", a, b).startswith(tile)
    check(triton_impl.matmul, a, b, dtype)


@requires_gpu
@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
@pytest.mark.parametrize("b_layout", ["row", "wt"])
@pytest.mark.parametrize("shape", [(228, 3001, 4), (130, 1024, 1), (64, 128, 16), (1000, 257, 7), (3, 40, 8)], ids=str)
def test_gpu_triton_short_k(shape, b_layout, dtype):
    """variant=None at K <= 16 runs the short-K tile (K masked inside its one slice of 16; odd N, c's
    rows off 16 bytes, rows of a of 2-32 bytes), checked against float64 with out poisoned."""
    a, b = make(shape, dtype, "cuda")
    if b_layout == "wt":
        b = b.t().contiguous().t()
    assert triton_impl.describe("matmul", a, b).startswith("grouped 64x128x16")
    check(triton_impl.matmul, a, b, dtype)


@requires_gpu
@pytest.mark.parametrize("shape", [(1, 4096, 1024), (1, 1001, 777), (1, 50257, 768)], ids=str)
@pytest.mark.parametrize("backend", ["cuda", "triton"])
def test_gpu_one_row_gemv(shape, backend):
    """One bf16 row of a against W.t(): variant=None runs the GEMV (describe says so) and matches the
    float64 reference into a poisoned out, the same bits on every call; with a bias, the plan the
    switch's addmm makes is not the GEMV's and adds the bias within the product's tolerance."""
    pkg = {"cuda": cuda_ref, "triton": triton_impl}[backend]
    a, b = make(shape, "bfloat16", "cuda", seed=12)
    b = b.t().contiguous().t()  # W.t(): W (N, K) row-major, rows off 16 bytes where K is odd
    assert pkg.pick("matmul", a, b) == "few_rows" and "gemv" in pkg.describe("matmul", a, b)
    out = poison(shape[:2], a.dtype, a.device)
    assert pkg.matmul(a, b, out=out) is out
    cmp = MatmulSpec.compare(out, MatmulSpec.reference((a, b)), (a, b))
    assert cmp.ok, cmp.detail
    assert torch.equal(out, pkg.matmul(a, b))
    bias = torch.randn(shape[1], device="cuda").to(a.dtype)
    assert backend == "cuda" or pkg.pick("matmul", a, b, biased=True) != "few_rows"
    got = pkg.plans("matmul")((a, b, bias), None, None)
    cmp = MatmulSpec.compare(got, MatmulSpec.reference((a, b)) + bias.double(), (a, b))
    assert cmp.ok, cmp.detail


@requires_gpu
def test_cupy_in_cupy_out():
    cupy = pytest.importorskip("cupy")
    a, b = make((65, 33, 47), "float32", "cuda")
    ca, cb = cupy.asarray(a.cpu().numpy()), cupy.asarray(b.cpu().numpy())
    c = cuda_ref.matmul(ca, cb)
    assert isinstance(c, cupy.ndarray) and c.shape == (65, 33)
    ref = MatmulSpec.reference((a, b))
    assert MatmulSpec.compare(torch.from_dlpack(c), ref, (a, b)).ok
    out = cupy.empty((65, 33), dtype=cupy.float32)
    cuda_ref.matmul(ca, cb.T.copy().T, out=out)  # a column-major CuPy b too
    assert MatmulSpec.compare(torch.from_dlpack(out), ref, (a, b)).ok


# ---- empty, K = 0, bad input ------------------------------------------------------------------
EMPTY = [(0, 5, 3), (4, 0, 3), (0, 0, 0), (0, 5, 0)]


@pytest.mark.parametrize("shape", EMPTY + [(4, 5, 0)], ids=str)
def test_empty_triton(shape, device):
    check_empty(triton_impl.matmul, shape, device)


@requires_gpu
@pytest.mark.parametrize("shape", EMPTY + [(4, 5, 0)], ids=str)
def test_empty_cuda(shape):
    check_empty(cuda_ref.matmul, shape, "cuda")


def check_empty(fn, shape, device):
    M, N, K = shape
    a, b = torch.ones(M, K, device=device), torch.ones(K, N, device=device)
    c = fn(a, b)
    assert c.shape == (M, N) and c.dtype == a.dtype
    out = poison((M, N), a.dtype, a.device)
    fn(a, b, out=out)
    assert torch.equal(out, torch.zeros(M, N, device=device))  # K = 0: an empty sum is 0


def _bad_cases(device):
    a = torch.ones(4, 6, device=device)
    b = torch.ones(6, 3, device=device)
    big = torch.ones(64, device=device)
    return [
        ((torch.ones(6, device=device), b), {}, ValueError, "a must be 2-D"),
        ((a, torch.ones(6, device=device)), {}, ValueError, "b must be 2-D"),  # (3-D: a batch, test_matmul_batched)
        ((a.to(torch.int16), b), {}, TypeError, "a has dtype int16"),
        ((a.double(), b.double()), {}, TypeError, "a has dtype float64"),
        ((a, b.half()), {}, TypeError, "b has dtype float16; expected float32 like a"),
        ((a, torch.ones(5, 3, device=device)), {}, ValueError, r"b must have shape\[0\] = 6 \(the columns of a"),
        (([[1.0]], b), {}, TypeError, "a must be a torch"),
        ((a, b), {"variant": "nope"}, ValueError, "variant must be"),
        ((a, b), {"out": torch.empty(3, 4, device=device)}, ValueError, "out must have shape"),
        ((a, b), {"out": torch.empty(4, 3, device=device).half()}, TypeError, "out must have dtype"),
        ((a, b), {"out": torch.empty(3, 4, device=device).t()}, ValueError, "out must be contiguous"),
        ((big[:24].view(4, 6), b), {"out": big[12:24].view(4, 3)}, ValueError, "out must not alias the input a"),
        ((a, big[:18].view(6, 3)), {"out": big[12:24].view(4, 3)}, ValueError, "out must not alias the input b"),
    ]


@pytest.mark.parametrize("case", range(len(_bad_cases("cpu"))))
@pytest.mark.parametrize("backend", list(FNS))
def test_bad_input(backend, case, device):
    """Each refusal with its own message, on CPU too: devices are checked after everything else."""
    args, kw, exc, msg = _bad_cases(device)[case]
    with pytest.raises(exc, match=msg):
        FNS[backend](*args, **kw)


def test_cpu_tensor_to_cuda_backend():
    with pytest.raises(ValueError, match="a must be on a CUDA device"):
        cuda_ref.matmul(torch.ones(3, 4), torch.ones(4, 2))


@requires_gpu
def test_operands_on_different_devices():
    a, b = torch.ones(4, 6, device="cuda"), torch.ones(6, 3)
    for fn in FNS.values():
        with pytest.raises(ValueError, match="b must be on device 'cuda:0' like a"):
            fn(a, b)
        with pytest.raises(ValueError, match="out must be on device"):
            fn(a, b.cuda(), out=torch.empty(4, 3))


# ---- the float32 SGEMM walk: dtype rule, default, alignment flags, tile table ------------------
def test_float32_only_variants_refuse_other_dtypes():
    for variant in cuda_matmul.FLOAT32_ONLY:
        cuda_matmul.check_dtype(variant, torch.float32)
        for dtype in (torch.float16, torch.bfloat16):
            with pytest.raises(TypeError, match=f"variant {variant} supports float32 only"):
                cuda_matmul.check_dtype(variant, dtype)
    cuda_matmul.check_dtype("smem_tiled", torch.float16)  # the typed kernels take 16-bit types


@pytest.mark.parametrize("shape,a_layout,expected", [
    ((4096, 4096, 4096), "row", "pipelined"),        # the end of the walk (A^T made once)
    ((4096, 4096, 4096), "col", "pipelined"),
    ((512, 512, 512), "row", "pipelined"),           # small too: K in runs fills the SMs (decision 059)
    ((67, 45, 33), "col", "pipelined"),              # A^T's rows unaligned: a copy
    ((17, 1, 3), "row", "pipelined"),
    ((1, 1, 3), "row", "few_rows"),                   # a few rows on a row-major b: read once, where it lies
])
def test_float32_default(shape, a_layout, expected):
    """pick_variant for exact float32: the end of the walk, few_rows up to its rows."""
    M, N, K = shape
    a = torch.empty((M, K), device="meta") if a_layout == "row" else torch.empty((K, M), device="meta").t()
    assert cuda_matmul.pick_variant(a, torch.empty((K, N), device="meta")) == expected
    assert CUDA_VARIANTS[0] == "pipelined"  # variants("matmul")[0] names the float32 default


def test_float32_few_rows_on_a_weight_run_few_rows():
    """Exact float32 with up to FEW_ROWS_EXACT_MAX_M rows of a reads b once (few_rows) on W.t() or a
    row-major b of unaligned rows, up to FEW_ROWS_EXACT_ROW_MAX_M on aligned rows; more rows stay on
    the SGEMM walk. Under TF32, as 16-bit: W.t() or a row-major b of unaligned rows, up to
    FEW_ROWS_MAX_M rows."""
    w = torch.empty((4096, 4096), device="meta")  # (N, K)
    odd = torch.empty((4096, 4097), device="meta")  # (K, N): rows of 4097 x 4 bytes
    unaligned = max(cuda_few_rows.FEW_ROWS_EXACT_MAX_M, cuda_few_rows.FEW_ROWS_ROW_MAX_M)  # (any dtype's rule too)
    for b, rows in ((w.t(), cuda_few_rows.FEW_ROWS_EXACT_MAX_M), (odd, unaligned),
                    (w, cuda_few_rows.FEW_ROWS_EXACT_ROW_MAX_M)):
        for M in {1, 3, rows}:
            assert cuda_matmul.pick_variant(torch.empty((M, 4096), device="meta"), b) == "few_rows", (M, b.shape)
        assert cuda_matmul.pick_variant(torch.empty((rows + 1, 4096), device="meta"), b) != "few_rows"
    with MatmulSpec.context("tf32"):
        for M in (1, 3, 4):
            assert cuda_matmul.pick_variant(torch.empty((M, 4096), device="meta"), w.t()) == "few_rows"
            assert cuda_matmul.pick_variant(torch.empty((M, 4096), device="meta"), odd) == "few_rows"
        assert cuda_matmul.pick_variant(torch.empty((5, 4096), device="meta"), w.t()) != "few_rows"
        assert cuda_matmul.pick_variant(torch.empty((17, 4096), device="meta"), odd) != "few_rows"
    cuda_matmul.check_dtype("few_rows", torch.float32)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
@pytest.mark.parametrize("shape", [(1, 1, 1), (67, 45, 33), (4096, 4096, 4096)], ids=str)
def test_16bit_default_is_the_end_of_the_tensor_core_walk(shape, dtype):
    """16-bit types run the tensor-core walk's last step (wgmma_ws on a Hopper GPU, else mma_pipelined)
    except on a few rows of a (below)."""
    M, N, K = shape
    a, b = torch.empty((M, K), dtype=dtype, device="meta"), torch.empty((K, N), dtype=dtype, device="meta")
    for x, y in ((a, b), (a.t().contiguous().t(), b.t().contiguous().t())):
        picked = cuda_matmul.pick_variant(x, y)
        # off a GPU (meta tensors): the last step that runs anywhere (one row: the GEMV, few_rows)
        assert picked == ("few_rows" if M == 1 else "mma_pipelined")
        cuda_matmul.check_dtype(picked, dtype)  # the default takes the dtype


@pytest.mark.parametrize("M,b_layout,expected", [
    (1, "wt", "few_rows"), (1, "wt_wide", "few_rows"), (4, "wt_wide", "few_rows"),  # one row, or W past 16384 rows
    (2, "wt", "few_rows_mma"), (32, "wt", "few_rows_mma"),  # from FEW_ROWS_MMA_MIN_M: tensor cores, roles swapped
    (33, "wt", "mma_pipelined"),                     # past FEW_ROWS_MMA_MAX_M
    # a row-major b with aligned rows, read where it lies: few_rows_mma where K runs (128 blocks: 2 runs)
    (1, "row", "few_rows_mma"), (32, "row_long", "few_rows_mma"), (33, "row_long", "mma_pipelined"),
    (1, "wt_long", "few_rows"), (2, "wt_long", "few_rows_mma"),  # one row on W.t(): the GEMV; K in runs from two
    (1, "odd", "few_rows"), (8, "odd", "few_rows"),  # rows off 16 bytes: few_rows reads them, and past
    (9, "odd", "few_rows_mma"), (32, "odd", "few_rows_mma"),  # FEW_ROWS_ROW_MAX_M few_rows_mma (b_any) does;
    (33, "odd", "mma_pipelined"),  # past FEW_ROWS_MMA_ANY_MAX_M the rest copy b
])
def test_16bit_few_rows_default(M, b_layout, expected):
    """(meta tensors count 132 SMs: N = 2048, K = 8192 is 64 blocks of few_rows_mma in 4 runs of K.)"""
    K, N = (8192, 2048) if b_layout.endswith("long") else (4096, 30522) if b_layout.endswith("wide") else \
        (4096, 4096 + (b_layout == "odd"))
    a = torch.empty((M, K), dtype=torch.bfloat16, device="meta")
    b = torch.empty((N, K), dtype=torch.bfloat16, device="meta").t() if b_layout.startswith("wt") else \
        torch.empty((K, N), dtype=torch.bfloat16, device="meta")
    assert cuda_matmul.pick_variant(a, b) == expected


def test_registry_marks_the_dtypes_each_cuda_variant_takes():
    from bench import registry
    from bench.specs import MatmulSpec
    for impl in registry.select("matmul", "cuda"):
        takes = cuda_matmul.VARIANT_DTYPES.get(impl.variant, (torch.float32,))
        names = catalog_lookup(CUDA_RECORDS, "matmul", impl.variant).dtypes or MatmulSpec.dtypes
        for name in MatmulSpec.dtypes:  # (a TF32 variant takes float32 tensors, not exact float32)
            tf32_only = name == "float32" and "float32" not in names
            assert impl.takes(name) is (MatmulSpec.torch_dtype(name) in takes and not tf32_only), (impl.variant, name)


def test_vec_flags():
    """16-byte paths only for unit-stride, 16-byte aligned rows with a row stride multiple of 4."""
    flags = cuda_matmul.vec_flags
    a, b, out = torch.ones(8, 12), torch.ones(12, 16), torch.ones(8, 16)
    assert flags(a, b, out) == (1, 1, 1)
    assert flags(a.t().contiguous().t(), b, out)[0] == 0                      # column-major a
    assert flags(torch.ones(8, 13)[:, :12], b, out)[0] == 0                   # row stride 13
    assert flags(torch.ones(8, 24)[:, ::2], b, out)[0] == 0                   # a step along K
    assert flags(torch.ones(8, 13)[:, 1:], torch.ones(12, 17)[:, 1:], out)[:2] == (0, 0)  # offset base
    assert flags(torch.ones(1, 5)[:, 1:], b, out)[0] == 0                     # one row, unaligned base
    assert flags(a, b, torch.ones(8, 15))[2] == 0                             # N % 4 != 0: scalar stores
    assert flags(torch.ones(1, 12), b, torch.ones(1, 15))[2] == 1             # one row: aligned anyway


SM_COUNTS = (132, 114, 78, 16)  # H100/H200 SXM, H100 PCIe, a smaller part, a tiny one
TILE_SHAPES = [  # (M, N, K): whole tiles of every size in the tables, edges, one row, 2^31 rows
    (1, 1, 1), (1, 300, 7), (64, 64, 16), (64, 64, 17), (1024, 1024, 1024), (1024, 1024, 1025),
    (2048, 2048, 2048), (4096, 4096, 4096), (4096, 4096, 4097), (4097, 4095, 129), (8192, 8192, 8192),
    (495, 5333, 71), ((1 << 21) + 3, 16, 1024),
]


def test_config_for_gives_a_compiled_instance_safe_for_the_shape():
    """Whatever config_for picks is one of the compiled instances, has a launchable block, and
    runs without edge checks only where every tile is whole and every row 16-byte aligned."""
    compiled = set(cuda_matmul.NAME_EXPRESSIONS)  # what the loader compiles (and test_nvrtc checks)
    twins = 0
    for variant in cuda_matmul.FLOAT32_ONLY:
        for sms in SM_COUNTS:
            for M, N, K in TILE_SHAPES:
                for aligned in (False, True):
                    cfg = cuda_matmul.config_for(variant, M, N, sms, K=K, aligned=aligned)
                    where = f"{variant} {M}x{N}x{K} on {sms} SMs, aligned={aligned}: {cfg.name}"
                    assert cfg.name in compiled, where
                    assert 32 <= cfg.threads <= 1024 and cfg.threads % 32 == 0, where
                    if not cfg.edges:
                        twins += 1
                        assert aligned and M % cfg.bm == 0 and N % cfg.bn == 0 and K % cfg.bk == 0, where
    assert twins, "no shape above reached a whole-tile instance: the edges rule went untested"


def test_tile_size_follows_the_grid():
    """double_buffered: the large tile wherever it gives every SM two tiles or more, the small one where
    large tiles would leave SMs idle (fewer tiles than SMs); whole tiles with aligned rows run the
    chosen tile's twin without edge checks, anything else the one with them."""
    table = cuda_matmul.TILE_TABLES["double_buffered"]
    large, small = table["large"], table["small"]
    assert small.bm * small.bn < large.bm * large.bn
    seen = set()
    for sms in SM_COUNTS:
        for M, N, K in TILE_SHAPES:
            cfg = cuda_matmul.config_for("double_buffered", M, N, sms, K=K)
            where = f"{M}x{N}x{K} on {sms} SMs: {cfg.name}"
            assert cfg in (large, small), where
            tiles = cdiv(M, large.bm) * cdiv(N, large.bn)
            if tiles < sms:
                assert cfg == small, where
            if tiles >= 2 * sms:
                assert cfg == large, where
            whole = M % cfg.bm == 0 and N % cfg.bn == 0 and K % cfg.bk == 0
            twin = cuda_matmul.config_for("double_buffered", M, N, sms, K=K, aligned=True)
            assert twin == (cuda_float32.whole_tiles_twin(cfg) if whole else cfg), where
            seen.add((cfg == large, whole))
    assert seen == {(True, True), (True, False), (False, True), (False, False)}, f"the shapes above missed a case ({seen})"


def test_pipelined_takes_the_models_fastest_tile_and_runs():
    """pipelined's tile and runs are the model's fastest of every tile at every allowed run count
    (runs of whole slices at least RUN_MIN_K long, their sums at most RUNS_MAX_FLOATS); the twin
    without edge checks only where every tile is whole and every row aligned."""
    f32 = cuda_float32
    for sms in SM_COUNTS:
        for M, N, K in (*TILE_SHAPES, (25, 4096, 2304), (4096, 4096, 4096), (616, 6144, 16384), (3, 5, 7000)):
            cfg, runs = f32.pipelined_choice(M, N, K, sms)
            name = next(n for n, c in f32.PIPELINED.items() if c == cfg)
            k_run = f32.k_run_of(cfg, K, runs)
            assert f32.float32_runs(cfg, M, N, K, sms) == (runs, k_run)
            assert runs == 1 or (k_run % cfg.bk == 0 and k_run >= f32.RUN_MIN_K and runs * M * N <= f32.RUNS_MAX_FLOATS)
            assert (runs - 1) * k_run < K <= runs * k_run  # every run has K to take
            best = min(f32.pipelined_us(n, M, N, K, sms, r) for n in f32.PIPELINED for r in f32.RUN_COUNTS
                       if r == 1 or K // r >= f32.RUN_MIN_K and r * M * N <= f32.RUNS_MAX_FLOATS)
            runs_asked = next(r for r in f32.RUN_COUNTS if cdiv(K, f32.k_run_of(cfg, K, r)) == runs)
            assert f32.pipelined_us(name, M, N, K, sms, runs_asked) == best
            whole = M % cfg.bm == 0 and N % cfg.bn == 0 and K % cfg.bk == 0
            twin = cuda_matmul.config_for("pipelined", M, N, sms, K=K, aligned=True)
            assert twin == (f32.whole_tiles_twin(cfg) if whole else cfg)
    # what the sweep behind the model showed (decision 059): few rows take the short tile and K in
    # runs; a square product that fills the GPU takes K whole
    cfg, runs = f32.pipelined_choice(25, 4096, 2304, 132)
    assert cfg.bm == 32 and runs > 1
    assert f32.pipelined_choice(4096, 4096, 4096, 132)[1] == 1


@pytest.mark.skipif(not nvrtc.available(), reason="NVRTC (cuda-bindings + nvidia-cuda-nvrtc) not installed")
def test_dynamic_shared_memory_is_what_the_kernel_needs():
    """An instance launched with dynamic shared memory (pipelined's ring of STAGES stages of
    As[BK][BM + PAD] and Bs[BK][BN]) asks for no more than an sm_90 block may have (227 KiB,
    with its static shared memory) and exactly its stages: fewer bytes and the ring overruns, more
    and fewer blocks fit on an SM. The bytes of a stage are measured, not recomputed here:
    double_buffered declares two such stages statically for the same tile arguments (its first
    ten, in the same order), and ptxas reports their size. matmul_pipelined_wt's stage holds Bt[BN][BK + 4]
    in place of Bs[BK][BN] (4 floats more a row of BN), and one Bs[BK][BN] follows the ring;
    matmul_pipelined_arow's holds Ar[BM][BK + 4] in place of As[BK][BM + PAD], and one As follows."""
    dynamic = [cfg for cfg in cuda_matmul.float32_configs() if cfg.smem]
    assert dynamic, "no instance uses dynamic shared memory: nothing checked"
    assert any(cfg.a_rows and cfg.b_kmajor for cfg in dynamic), "the arow_wt twins are not in the table"
    probe = {}
    for cfg in dynamic:
        assert cfg.kernel in ("matmul_pipelined", "matmul_pipelined_wt", "matmul_pipelined_arow",
                              "matmul_pipelined_arow_wt"), f"{cfg.name}: a new kernel with dynamic shared memory"
        BM, BN, BK, WM, WN, WNITER, TM, TN, PAD, GROUP_M, STAGES = cfg.params[:11]
        probe[cfg.name] = (f"matmul_double_buffered<{BM}, {BN}, {BK}, {WM}, {WN}, {WNITER}, {TM}, {TN}, "
                           f"{PAD}, {GROUP_M}, 1, true>", STAGES)
    names = tuple(dict.fromkeys([cfg.name for cfg in dynamic] + [p for p, _ in probe.values()]))
    result = nvrtc.compile_file(cuda_matmul.FILE, names, arch="sm_90")
    assert result.ok, result.log
    for cfg in dynamic:
        static = result.kernels[result.lowered[cfg.name]].smem_bytes
        double_buffered, stages = probe[cfg.name]
        two_stages = result.kernels[result.lowered[double_buffered]].smem_bytes
        assert two_stages > 0, f"no shared memory reported for {double_buffered}"
        assert static + cfg.smem <= SMEM_PER_BLOCK, f"{cfg.name}: {static} + {cfg.smem} bytes per block"
        BM, BN, BK, PAD = cfg.params[0], cfg.params[1], cfg.params[2], cfg.params[8]
        stage, ring_end = (two_stages // 2 + 4 * 4 * BN, 4 * BK * BN) if cfg.b_kmajor else (two_stages // 2, 0)
        if cfg.a_rows:
            stage, ring_end = stage + 4 * (BM * (BK + 4) - BK * (BM + PAD)), ring_end + 4 * BK * (BM + PAD)
        assert cfg.smem == stages * stage + ring_end, \
            f"{cfg.name} asks for {cfg.smem} bytes; {stages} stages take {stages * stage + ring_end}"


def test_every_variant_has_an_idea():
    from bench.matmul_doc import IDEAS
    assert set(IDEAS) == set(CUDA_VARIANTS) and all(IDEAS.values())  # MATMUL.md's table has a row per variant


def test_k_major():
    """pipelined reads A^T with rows along M: a .t() view of a contiguous (K, M) passes as it is,
    anything else is what cuda_ref.transpose would make (on CPU: only the no-copy case)."""
    at = torch.randn(12, 8)  # (K, M)
    a = at.t()
    assert cuda_matmul.k_major(a) is a
    assert cuda_matmul.vec_flags(a, torch.ones(12, 16), torch.ones(8, 16), a_transposed=True)[0] == 1
    assert cuda_matmul.vec_flags(a, torch.ones(12, 16), torch.ones(8, 16))[0] == 0  # as rows: no


@requires_gpu
@pytest.mark.parametrize("shape", GPU_SHAPES + [(256, 260, 132)], ids=str)  # the last: every row aligned
@pytest.mark.parametrize("cfg", cuda_matmul.float32_configs(), ids=lambda c: c.name)
def test_gpu_every_float32_config(cfg, shape):
    """Every instance of the tile table, whichever shape the launcher would give it, on the odd
    shapes: 16-byte paths where rows allow, and the same inputs through an offset view (scalar).
    An instance reading b K-major takes W.t() (its offset view: W's rows off 16 bytes)."""
    if not cfg.edges:  # the whole-tile twins run only where every tile is whole and rows aligned
        shape = (2 * cfg.bm, 3 * cfg.bn, 4 * cfg.bk)
    a, b = make(shape, "float32", "cuda")
    fn = loader.get_function(cuda_matmul.FILE, cuda_matmul.NAME_EXPRESSIONS, cfg.name, a.device.index)
    ref = MatmulSpec.reference((a, b))
    b_as = (lambda kind: layout(b.t(), kind).t() if kind == "offset" else layout(b, "col")) if cfg.b_kmajor else \
        (lambda kind: layout(b, kind))
    with MatmulSpec.context("float32"):
        for x, y in ((a, b_as("row")), (layout(a, "offset"), b_as("offset")))[:1 if not cfg.edges else 2]:
            out = poison((shape[0], shape[1]), a.dtype, a.device)
            cuda_matmul.launch_config(fn, cfg, x, y, out)
            cmp = MatmulSpec.compare(out, ref, (a, b))
            assert cmp.ok, (cuda_matmul.vec_flags(x, y, out), cmp.detail)


@requires_gpu
@pytest.mark.parametrize("shape", [(301, 523, 1024), (300, 520, 1024), (129, 4097, 1100)], ids=str)
@pytest.mark.parametrize("layouts", [("row", "row"), ("row", "col"), ("col", "row"), ("row", "offset")], ids="-".join)
def test_gpu_pipelined_interior_and_copies(shape, layouts):
    """pipelined's interior tiles (K whole slices) on the checks-free path beside edge tiles, its
    A^T and b copied into padded rows (odd M and N: torch's copy; M, N multiples of 4: the
    package's transpose), b = W.t() transposed, a row-major b off 16 bytes copied by copy_rows
    (each product past SMALL_PRODUCT multiply-adds, where b is copied), K in two runs (1100: the
    second run's last slice partial)."""
    a, b = make(shape, "float32", "cuda")
    a, b = layout(a, layouts[0]), layout(b, layouts[1])
    ref = MatmulSpec.reference((a, b))
    with MatmulSpec.context("float32"):
        out = poison((shape[0], shape[1]), a.dtype, a.device)
        cuda_ref.matmul(a, b, variant="pipelined", out=out)
        cmp = MatmulSpec.compare(out, ref, (a, b))
    assert cmp.ok, (layouts, cmp.detail)


def test_pipelined_reads_a_rows_only_where_priced(monkeypatch):
    """pipelined copies A^T a call until the arch data prices reading a's rows in place
    (``PIPELINED_AROW``); priced, it reads them where they lie where the pricing says so and a's
    rows are aligned, and never where a is an A^T already (an a.t() view in aligned rows)."""
    a, b = torch.randn(23, 1024), torch.randn(1024, 1024)
    if cuda_float32.PIPELINED_AROW is None:
        assert "a-transposed" in cuda_ref.describe("matmul", a, b)
    monkeypatch.setattr(cuda_float32, "PIPELINED_AROW", {"share": 1.1, "launch_us": 3.0})
    for w in (b, b.t()):  # row-major b, and W.t() read in place: the arow twin of each
        words = cuda_ref.describe("matmul", a, w)
        assert "a-rows" in words and "a-transposed" not in words and "matmul_pipelined_arow" in words, words
        assert ("_wt<" in words) == (w is not b), words
    assert "a-transposed" in cuda_ref.describe("matmul", torch.randn(23, 1023), torch.randn(1023, 1024))  # rows off 16 bytes
    assert "a-" not in cuda_ref.describe("matmul", torch.randn(1024, 24).t(), b)  # A^T as it lies
    big = torch.randn(4096, 4096)  # the copy a small share of a long kernel: copied
    assert "a-transposed" in cuda_ref.describe("matmul", big, big)
    monkeypatch.setattr(cuda_float32, "PIPELINED_AROW", {"share": 1.0, "launch_us": 0.0})  # in place costs nothing more
    assert "a-rows" in cuda_ref.describe("matmul", big, big)


@requires_gpu
@pytest.mark.parametrize("shape", [(301, 523, 1024), (300, 520, 1024), (129, 4097, 1100), (23, 1024, 1024), (5, 9, 36)],
                         ids=str)
@pytest.mark.parametrize("b_layout", ["row", "col", "offset"])
def test_gpu_pipelined_reads_a_rows_in_place(monkeypatch, shape, b_layout):
    """pipelined reading a's rows where they lie (matmul_pipelined_arow, and its _wt twin on W.t()),
    forced by a pricing that always takes it: interior and edge tiles, K in runs (1100), against
    float64, through the package's call (its plan, runs and their sum)."""
    monkeypatch.setattr(cuda_float32, "PIPELINED_AROW", {"share": 1.0, "launch_us": 1e9})
    cuda_matmul._PLANS.clear()
    a, b = make(shape, "float32", "cuda")
    b = layout(b, b_layout)
    assert "a-rows" in cuda_ref.describe("matmul", a, b, variant="pipelined")
    ref = MatmulSpec.reference((a, b))
    with MatmulSpec.context("float32"):
        out = poison((shape[0], shape[1]), a.dtype, a.device)
        cuda_ref.matmul(a, b, variant="pipelined", out=out)
        cmp = MatmulSpec.compare(out, ref, (a, b))
    cuda_matmul._PLANS.clear()
    assert cmp.ok, (b_layout, cmp.detail)


# ---- integers: int32 (seed 002, wrapping sums) and int8 -> int32, exact -----------------------
def int_impls(dtype_name):
    """(backend, variant) of every implementation that takes the integer dtype (the registry's)."""
    from bench import registry
    return [(i.backend, i.variant) for i in registry.select("matmul") if i.role == "impl" and i.takes(dtype_name)]


def check_exact(fn, a, b, **kw):
    """Poisoned out, compared exactly with bench.specs.int_reference; out=None too."""
    ref = MatmulSpec.reference((a, b))
    assert ref.dtype == torch.int32
    out = poison(tuple(ref.shape), torch.int32, a.device)
    assert fn(a, b, out=out, **kw) is out
    cmp = MatmulSpec.compare(out, ref, (a, b))
    assert cmp.ok, cmp.detail
    fresh = fn(a, b, **kw)
    assert fresh.dtype == torch.int32 and fresh.is_contiguous()
    assert torch.equal(fresh, ref)


@pytest.mark.parametrize("dtype", INT_NAMES)
def test_int_reference_is_exact_modulo_2_32(dtype):
    """The float64 reference against int64 arithmetic on the CPU (which wraps modulo 2^64, so its
    low 32 bits are the int32 result), with int32 inputs large enough that sums wrap."""
    a, b = make((37, 29, 300), dtype, "cpu", seed=3)
    exact = a.long() @ b.long()
    low = exact & 0xFFFFFFFF
    expected = torch.where(low >= 1 << 31, low - (1 << 32), low).to(torch.int32)
    got = MatmulSpec.reference((a, b))
    assert torch.equal(got, expected)
    if dtype == "int32":
        assert (exact.abs() > 2**31).any(), "the test needs sums that wrap"


@pytest.mark.parametrize("dtype", INT_NAMES)
@pytest.mark.parametrize("shape", SMALL_SHAPES, ids=str)
@pytest.mark.parametrize("variant", TRITON_VARIANTS)
def test_triton_int_small(variant, shape, dtype, device):
    from bench import registry
    if not registry.get("matmul", "triton", variant).takes(dtype):
        with pytest.raises(TypeError, match=f"variant {variant} supports"):
            triton_impl.matmul(*make(shape, dtype, device), variant=variant)
        return
    a, b = make(shape, dtype, device)
    check_exact(triton_impl.matmul, a, b, variant=variant)
    check_exact(triton_impl.matmul, a, b.t().contiguous().t(), variant=variant)  # B = W.t()


@requires_gpu
@pytest.mark.parametrize("b_layout", ["row", "col", "step"])
@pytest.mark.parametrize("shape", GPU_SHAPES + [(2048, 4096, 1024)], ids=str)
@pytest.mark.parametrize("dtype", INT_NAMES)
def test_gpu_int(dtype, shape, b_layout):
    """Every variant that takes the dtype, odd shapes, B row-major, W.t() and strided; a offset."""
    a, b = make(shape, dtype, "cuda")
    for backend, variant in int_impls(dtype):
        if variant == "naive" and shape[0] * shape[1] * shape[2] > 1 << 31:
            continue
        check_exact(FNS[backend], a, layout_int(b, b_layout), variant=variant)
        check_exact(FNS[backend], layout_int(a, "offset"), b, variant=variant)
    check_exact(cuda_ref.matmul, a, b)  # the defaults
    check_exact(triton_impl.matmul, a, b)


def layout_int(x, kind):
    """``layout`` for integer tensors: unused memory holds the type's minimum instead of NaN."""
    if kind in ("row", "col"):
        return layout(x, kind)
    rows, cols = x.shape
    fill = torch.iinfo(x.dtype).min
    if kind == "step":
        big = torch.full((2 * rows, 3 * cols), fill, dtype=x.dtype, device=x.device)
        big[::2, ::3] = x
        return big[::2, ::3]
    big = torch.full((rows + 3, cols + 5), fill, dtype=x.dtype, device=x.device)
    big[3:, 5:] = x
    return big[3:, 5:]


def test_int_bad_input(device):
    a8, b8 = make((33, 20, 40), "int8", device)
    a32, b32 = make((33, 20, 40), "int32", device)
    for fn in FNS.values():
        with pytest.raises(TypeError, match="mixed dtypes"):
            fn(a8, b32)
        with pytest.raises(TypeError, match="mixed dtypes"):
            fn(a8, b8.float())
        with pytest.raises(TypeError, match="out must have dtype int32"):
            fn(a8, b8, out=torch.empty((33, 20), dtype=torch.int8, device=device))
        with pytest.raises(TypeError, match="expected one of"):
            fn(a8.to(torch.int16), b8.to(torch.int16))
    with pytest.raises(TypeError, match="variant tma_persistent supports"):
        triton_impl.matmul(a32, b32, variant="tma_persistent")


def test_cuda_int_dtype_rules():
    """Each CUDA variant refuses what it does not take, naming the variants that do."""
    for variant in ("dp4a", "mma_int8"):
        cuda_matmul.check_dtype(variant, torch.int8)
        with pytest.raises(TypeError, match=f"variant {variant} supports int8 only.*smem_tiled"):
            cuda_matmul.check_dtype(variant, torch.int32)
    cuda_matmul.check_dtype("wgmma", torch.int8)
    with pytest.raises(TypeError, match="variant pipelined supports float32 only.*dp4a, mma_int8"):
        cuda_matmul.check_dtype("pipelined", torch.int8)
    meta = lambda dtype: (torch.empty((64, 64), dtype=dtype, device="meta"),) * 2  # noqa: E731
    assert cuda_matmul.pick_variant(*meta(torch.int32)) == "smem_tiled"
    assert cuda_matmul.pick_variant(*meta(torch.int8)) == "mma_int8"  # off Hopper (meta: no GPU)
    assert triton_matmul.pick_variant(*meta(torch.int32)) == "grouped"


def test_16bit_few_rows_mma_leaves_wide_weights_and_short_last_waves():
    """few_rows_mma stops where W's rows pass FEW_ROWS_MMA_MAX_N (wgmma_ws's tiles fill the GPU there),
    and where its blocks (32 rows of W, two an SM: 264 on 132 SMs) leave a last wave under half full."""
    a = torch.empty((16, 8192), dtype=torch.bfloat16, device="meta")
    for N, expected in ((8448, "few_rows_mma"), (10240, "mma_pipelined"), (14336, "few_rows_mma"),
                        (cuda_few_rows.FEW_ROWS_MMA_MAX_N, "few_rows_mma"), (28672, "mma_pipelined")):
        w = torch.empty((N, 8192), dtype=torch.bfloat16, device="meta")
        assert cuda_matmul.pick_variant(a, w.t()) == expected


def test_few_rows_mma_widens_its_blocks_only_for_a_wide_row_major_b():
    """A row-major b's k rows give a block BW columns each: 64 where such blocks still fill every SM
    (N >= 64 x SMs, up to 32 rows of a), else 32, as b = W.t() always takes; every instance a launch
    names is compiled (it is in its file's list, FEW_ROWS_MMA_NAME_EXPRESSIONS)."""
    sms = 132
    for M, N, b_kmajor, bw in ((16, 64 * sms, False, 64), (32, 9000, False, 64), (16, 64 * sms - 1, False, 32),
                               (64, 20000, False, 32), (16, 20000, True, 32), (5, 4096, False, 32)):
        launch = cuda_matmul.launch_of("few_rows_mma", M, N, 4096, torch.bfloat16, sms, b_kmajor=b_kmajor)
        assert launch.name in cuda_few_rows.FEW_ROWS_MMA_NAME_EXPRESSIONS, launch.name
        assert f"{str(b_kmajor).lower()}, {cuda_few_rows.few_rows_mma_rows(M)}, {bw}," in launch.name, launch.name
        assert launch.grid[0] == -(-N // bw), launch


# ---- the bias epilogue (the switch's addmm): every variant that has one, every bias shape ----------
@pytest.mark.parametrize("variant", [r.name for r in TRITON_RECORDS if r.algorithm == "matmul" and r.bias])
@pytest.mark.parametrize("bias_shape", ["row", "full", "column", "scalar", "strided", "step"])
def test_triton_bias_epilogue(variant, bias_shape, device):
    """c = a b + bias through each variant's epilogue (split_k: the sum of the slices), on a product
    that K-splits, odd extents, a poisoned out; the bias broadcast as torch.addmm broadcasts it."""
    from triton_impl import _matmul
    M, N, K = 5, 45, 1000  # (few rows: split_k splits K)
    a, b = make((M, N, K), "float32", device)
    bias = {"row": lambda: torch.randn(N, device=device), "full": lambda: torch.randn(M, N, device=device),
            "column": lambda: torch.randn(M, 1, device=device), "scalar": lambda: torch.randn((), device=device),
            "strided": lambda: torch.randn(N, M, device=device).t(),
            "step": lambda: torch.randn(M, 2 * N, device=device)[:, ::2]}[bias_shape]()
    with MatmulSpec.context("float32"):
        ref = MatmulSpec.reference((a, b)) + bias.double()
        out = poison((M, N), a.dtype, a.device)
        got = _matmul._PLANS((a, b, bias), variant, out)
        assert got is out
        cmp = MatmulSpec.compare(got, ref, (a, b))
        assert cmp.ok, cmp.detail
    if variant == "split_k":
        cfg = _matmul.config_for("split_k", a, b, _matmul._input_precision(a.dtype))
        assert cfg.kwargs["SPLIT_K"] > 1, "the case must split K"


@pytest.mark.parametrize("variant", [None, "grouped"])
def test_triton_bias_epilogue_bfloat16_on_a_stepped_bias(variant, device):
    """A bias whose memory has gaps, bfloat16 (the interpreter's float32 copies too): read where it lies."""
    from triton_impl import _matmul
    a, b = make((21, 30, 70), "bfloat16", device)
    bias = torch.randn(21, 60, device=device).to(torch.bfloat16)[:, ::2]
    got = _matmul._PLANS((a, b, bias), variant, None)
    ref = MatmulSpec.reference((a, b)) + bias.double()
    cmp = MatmulSpec.compare(got, ref, (a, b))
    assert cmp.ok, cmp.detail



@requires_gpu
@pytest.mark.parametrize("shape,b_kind", [
    ((5, 45, 1000), "row"),       # 64-row tiles, K in runs handed over in the kernel
    ((16, 4096, 4096), "col"),    # a decode batch on W.t(): 8 runs, the partial products' buffer and its sum
    ((333, 1000, 520), "col"),    # 128-row tiles, c's rows off 16 bytes: stored from the accumulators
    ((300, 260, 520), "row"),     # c through TMA stores
    ((2200, 2000, 6000), "col"),  # pairs, stream-K's shared last wave
], ids=str)
@pytest.mark.parametrize("bias_shape", ["row", "row_off", "full", "column", "scalar", "step"])
def test_cuda_bias_epilogue(shape, b_kind, bias_shape):
    """wgmma_ws's bias epilogue (the switch's addmm): c = a b + bias, one rounding of the float32 sum,
    on every way its tiles end (whole, handed over, summed by the second launch, stream-K), each
    bias shape torch.addmm broadcasts (a row 2 bytes off 4-byte alignment: not read in pairs); a
    kernel without an epilogue refuses the bias."""
    if not cuda_wgmma.is_sm90(torch.device("cuda")):
        pytest.skip("wgmma_ws needs a Hopper GPU")
    M, N, K = shape
    a, b = make(shape, "bfloat16", "cuda", seed=8)
    b = layout(b, b_kind)
    bias = {"row": lambda: torch.randn(N, device="cuda"), "row_off": lambda: torch.randn(N + 1, device="cuda")[1:],
            "full": lambda: torch.randn(M, N, device="cuda"),
            "column": lambda: torch.randn(M, 1, device="cuda"), "scalar": lambda: torch.randn((), device="cuda"),
            "step": lambda: torch.randn(M, 2 * N, device="cuda")[:, ::2]}[bias_shape]().to(torch.bfloat16)
    plans = cuda_ref.plans("matmul")
    ref = MatmulSpec.reference((a, b)) + bias.double()
    out = poison((M, N), a.dtype, a.device)
    got = plans((a, b, bias), "wgmma_ws", out)
    assert got is out
    cmp = MatmulSpec.compare(got, ref, (a, b))
    assert cmp.ok, cmp.detail
    assert torch.equal(plans((a, b, bias), "wgmma_ws", None), got)  # the same bits again, into a new c
    with pytest.raises(ValueError, match="no bias epilogue"):
        plans((a, b, bias), "mma_pipelined", None)


@requires_gpu
@pytest.mark.parametrize("shape", [
    (1, 50257, 1600),  # GPT-2 XL's LM head as a Conv1D: odd N, rows off 16 bytes, K whole
    (2, 1024, 8192),   # 4 column blocks of 16-byte loads: K in many runs, summed by matmul_split_reduce
    (5, 1000, 3000),   # aligned rows, the last lane's 16 bytes past N
    (4, 300, 64),      # one run of one chunk; the bias joins the sum in the kernel
    (7, 1001, 777),    # a partial pass of 8 rows, a K tail past the 8-deep loads
    (11, 513, 300),    # past 8 rows: a second pass over b
    (3, 4097, 5),      # K shorter than a chunk
], ids=str)
@pytest.mark.parametrize("dtype", ["bfloat16", "float16", "float32"])
@pytest.mark.parametrize("a_kind,b_kind", [("row", "row"), ("col", "offset"), ("step", "row")])
def test_gpu_few_rows_row_major_b(shape, dtype, a_kind, b_kind):
    """few_rows on a row-major b at any alignment, read where it lies (no copy): right with one run
    of K or several, a bias or none, a at any strides, and the same bits on every call."""
    M, N, K = shape
    a, b = make(shape, dtype, "cuda", seed=5)
    a, b = layout(a, a_kind), layout(b, b_kind)
    words = cuda_matmul.describe(a, b, "few_rows")
    assert "matmul_few_rows_row<" in words and "copy" not in words and "transposed" not in words, words
    first = check(FNS["cuda"], a, b, dtype, variant="few_rows")
    assert all(torch.equal(first, cuda_ref.matmul(a, b, variant="few_rows")) for _ in range(2))
    if dtype != "float32":
        bias = torch.randn(N, device="cuda").to(a.dtype)
        got = cuda_ref.plans("matmul")((a, b, bias), "few_rows", None)
        cmp = MatmulSpec.compare(got, MatmulSpec.reference((a, b)) + bias.double(), (a, b))
        assert cmp.ok, cmp.detail


def test_few_rows_row_runs_fill_the_gpu_and_leave_none_empty():
    """A row-major b's K runs: enough blocks for every SM four times over where the columns alone are
    few, each run at least FEW_ROWS_ROW_MIN_RUN deep, none empty; a block 32 lanes of 16 bytes where
    b's rows are aligned, else of 2 elements."""
    fr = cuda_few_rows
    for N, K in [(1024, 8192), (50257, 1600), (300, 64), (4097, 5), (128, 100000), (200000, 4096)]:
        for columns in (64, 256):
            runs = fr.few_rows_row_runs(N, K, 132, columns)
            depth = cdiv(K, runs)
            assert runs >= 1 and cdiv(K, depth) == runs  # none empty
            assert runs == 1 or depth >= fr.FEW_ROWS_ROW_MIN_RUN
            assert runs == 1 or cdiv(N, columns) * (runs - 1) < fr.FEW_ROWS_ROW_BLOCKS * 132
    assert fr.few_rows_row_columns(torch.bfloat16, True) == 256 and fr.few_rows_row_columns(torch.float32, True) == 128
    assert fr.few_rows_row_runs(1024, 8192, 132, 256) == 32 and fr.few_rows_row_runs(50257, 1600, 132, 64) == 1
    launch = cuda_matmul.launch_of("few_rows", 2, 1024, 8192, torch.bfloat16, 132, b_kmajor=False)
    assert launch.name == "matmul_few_rows_row<bf16_t, 2, true>" and launch.grid == (4, 32)
    launch = cuda_matmul.launch_of("few_rows", 1, 50257, 1600, torch.bfloat16, 132, b_kmajor=False, vec=False)
    assert launch.name == "matmul_few_rows_row<bf16_t, 1, false>" and launch.grid == (786, 1)


@requires_gpu
@pytest.mark.parametrize("variant", ["few_rows", "few_rows_mma"])
@pytest.mark.parametrize("shape", [(1, 300, 64), (3, 4095, 129), (4, 4096, 4096), (7, 1000, 520), (16, 4096, 4096),
                                   (33, 500, 72)], ids=str)
@pytest.mark.parametrize("bias_shape", ["row", "full", "scalar"])
@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_cuda_few_rows_bias_epilogue(variant, shape, bias_shape, dtype):
    """The few-rows kernels' bias epilogue (decode's addmm on W.t()): c = a b + bias, one rounding of
    the float32 sum, at one row, a partial pass or tile of rows, whole ones, past a tile; where
    variant=None picks the kernel, the switch's addmm takes the call (no fallback)."""
    M, N, K = shape
    a, b = make(shape, dtype, "cuda", seed=9)
    b = layout(b, "col")  # W.t()
    bias = {"row": lambda: torch.randn(N, device="cuda"), "full": lambda: torch.randn(M, N, device="cuda"),
            "scalar": lambda: torch.randn((), device="cuda")}[bias_shape]().to(a.dtype)
    ref = MatmulSpec.reference((a, b)) + bias.double()
    out = poison((M, N), a.dtype, a.device)
    assert cuda_ref.plans("matmul")((a, b, bias), variant, out) is out
    cmp = MatmulSpec.compare(out, ref, (a, b))
    assert cmp.ok, cmp.detail
    if cuda_ref.pick("matmul", a, b) == variant and bias_shape == "row":
        sw = cuda_ref.switch
        sw.reset_counts()
        with cuda_ref.enabled():
            got = torch.addmm(bias, a, b)
        assert sw.counts() == {"addmm": 1} and torch.equal(got, out)


@requires_gpu
@pytest.mark.parametrize("shape,b_kind,blocks,runs", [
    ((65, 300, 64), "col", 1, 1),         # one block of 80 rows, one k-slice
    ((19, 1000, 3000), "row", 1, 2),      # 19 rows in a block of 32, K in two runs
    ((1, 777, 1000), "col", 1, 1),        # one row in a block of 16 (the narrowest: wgmma's N 16)
    ((5, 1032, 4104), "row", 1, 3),       # 5 rows, W M-major, rows of W past the last tile, K in runs
    ((41, 300, 2048), "col", 1, 1),       # a block of 48
    ((174, 1000, 2100), "row", 1, 1),     # 176 rows, W M-major, a ragged last k-slice
    ((174, 1000, 2100), "col", 3, 2),     # ... in three blocks of 64 (the last 46 rows), K in two runs
    ((282, 1024, 8192), "col", 2, 3),     # two blocks of 144, K in three runs summed in a cluster
    ((282, 1024, 8192), "row", 2, 5),     # ... in five runs, summed by the second launch
    ((333, 4095, 129), "col", 2, 1),      # rows of b and of c off 16 bytes: read and written through copies
    ((176, 520, 2304), "col", 2, 1),      # its a.t() view has aligned rows: still copied row-major (mmajor_a False)
    ((300, 1000, 2100), "row", 2, 1),     # two blocks (a pair sharing W from 128 rows), W M-major, ragged ends
], ids=str)
@pytest.mark.parametrize("bias_shape", ["none", "row", "full", "scalar"])
@pytest.mark.parametrize("wr", cuda_swap.SWAP_TILE_ROWS + (cuda_swap.SWAP_WIDE_TILE,))
def test_cuda_wgmma_swap(shape, b_kind, blocks, runs, bias_shape, wr, monkeypatch):
    """wgmma_swap (c^T = W a^T, a's rows in wgmma's N side): c = a b (+ bias, one rounding), on each
    way its tiles end (one block of rows or more, K whole or in runs), with each tile of W (WR rows:
    one to three consumer warpgroups), the shape forced; an a.t() view copied row-major (the layout's
    a-copy, as describe says); where variant=None takes it, the switch's addmm runs it."""
    if not cuda_swap.is_sm90(torch.device("cuda")):
        pytest.skip("wgmma_swap needs a Hopper GPU")
    monkeypatch.setattr(cuda_swap, "swap_shape", lambda *_: (blocks, wr, runs))
    cuda_matmul._PLANS.clear()
    try:
        _check_wgmma_swap(shape, b_kind, bias_shape, wr, blocks, runs)
    finally:
        cuda_matmul._PLANS.clear()  # no plan of the forced shape outlives the test


@requires_gpu
@pytest.mark.parametrize("shape,b_kind,blocks,wr,runs,sms", [
    ((282, 1024, 8192), "col", 2, 128, 1, 3),   # 16 tiles on 3 blocks: 5-6 tiles each, the ring running on
    ((174, 1000, 2100), "row", 3, 64, 2, 3),    # 48 tiles, K in two runs: one block a run takes them all
    ((333, 4095, 129), "col", 2, 128, 1, 5),    # rows off 16 bytes (copies), 64 tiles on 5 blocks, one k-slice
    ((333, 2000, 1000), "row", 2, 192, 1, 5),   # three consumer warpgroups, 22 tiles on 5 blocks, W's last tile cut
], ids=str)
def test_cuda_wgmma_swap_persistent(shape, b_kind, blocks, wr, runs, sms, monkeypatch):
    """wgmma_swap's persistent grid with many tiles a block (few SMs stood in): right with and
    without a bias, each block's ring running on from one tile into the next."""
    if not cuda_swap.is_sm90(torch.device("cuda")):
        pytest.skip("wgmma_swap needs a Hopper GPU")
    monkeypatch.setattr(cuda_swap, "swap_shape", lambda *_: (blocks, wr, runs))
    monkeypatch.setattr(cuda_swap, "sm_count", lambda device: sms)
    monkeypatch.setattr(cuda_matmul, "sm_count", lambda device: sms)
    cuda_matmul._PLANS.clear()
    try:
        for bias_shape in ("none", "row"):
            _check_wgmma_swap(shape, b_kind, bias_shape, wr, blocks, runs)
    finally:
        cuda_matmul._PLANS.clear()


def _check_wgmma_swap(shape, b_kind, bias_shape, wr, blocks, runs=1):
    M, N, K = shape
    a, b = make(shape, "bfloat16", "cuda", seed=10)
    b = layout(b, b_kind)
    text = cuda_ref.describe("matmul", a, b, variant="wgmma_swap")
    nr, tiles = cuda_swap.swap_block_rows(M, blocks), blocks * cdiv(N, wr)
    if cuda_swap.swap_clustered(a.element_size(), wr, runs, tiles, cuda_swap.sm_count(a.device)):  # a cluster a tile
        assert "matmul_wgmma_swap_runs<" in text and f", {nr}, {runs}>" in text and f"grid {tiles}x{runs}" in text
    elif cuda_swap.swap_paired(a.element_size(), blocks, wr, runs):  # row blocks in pairs sharing W's stages
        grid = 2 * balanced_grid(tiles // 2, cuda_swap.sm_count(a.device) // 2)
        assert "matmul_wgmma_swap_pairs<" in text and f", {nr}, {wr}>" in text and f"grid {grid}x" in text
    else:
        grid = balanced_grid(tiles, max(1, cuda_swap.sm_count(a.device) // runs))  # (persistent)
        assert "matmul_wgmma_swap<" in text and f", {nr}, {wr}>" in text and f"grid {grid}x" in text
    bias = None if bias_shape == "none" else {
        "row": lambda: torch.randn(N, device="cuda"), "full": lambda: torch.randn(M, N, device="cuda"),
        "scalar": lambda: torch.randn((), device="cuda")}[bias_shape]().to(a.dtype)
    ref = MatmulSpec.reference((a, b)) + (0 if bias is None else bias.double())
    plans = cuda_ref.plans("matmul")
    if M > 1:  # (one row's a.t() view is a row too)
        assert "a-copy" in cuda_ref.describe("matmul", a.t().contiguous().t(), b, variant="wgmma_swap")
    for a_view in (a, a.t().contiguous().t()):  # row-major, and an a.t() view (M-major)
        out = poison((M, N), a.dtype, a.device)
        assert plans((a_view, b) + ((bias,) if bias is not None else ()), "wgmma_swap", out) is out
        cmp = MatmulSpec.compare(out, ref, (a, b))
        assert cmp.ok, cmp.detail
    again = plans((a, b) + ((bias,) if bias is not None else ()), "wgmma_swap", None)
    assert torch.equal(again, out), "the runs' sums are added in one order: the same bits every call"
    if bias is not None and bias_shape == "row" and cuda_ref.pick("matmul", a, b) == "wgmma_swap":
        sw = cuda_ref.switch
        sw.reset_counts()
        with cuda_ref.enabled():
            got = torch.addmm(bias, a, b)
        assert sw.counts() == {"addmm": 1} and torch.equal(got, out)


def test_cuda_wgmma_swap_shape_model():
    """wgmma_swap's shape (row blocks, rows of W a tile, runs of K) is the shape model's least time
    (decision 031): a small product takes more, narrower blocks and 64-row tiles of W with K whole
    where its 128-row tiles would leave SMs idle; a long one the fewest blocks and 128-row tiles;
    each block holds at least SWAP_MIN_BLOCK_ROWS rows, no run of K is empty; K whole where a short
    call's split saves less than SWAP_ONE_RUN_SLACK of one run's time (no GPU needed)."""
    assert cuda_swap.swap_shape(169, 4096, 2304, 2, 132) == (2, 64, 1)       # 2 x 96 rows, 128 tiles, one wave
    assert cuda_swap.swap_shape(15, 4096, 4096, 2, 132) == (1, 64, 1)        # two runs modelled 2% faster: one
    assert cuda_swap.swap_shape(13, 1600, 6400, 2, 132) == (1, 64, 5)        # ... one run 1.55x as long: five
    assert cuda_swap.swap_shape(265, 128256, 4096, 2, 132) == (2, 192, 1)    # 1336 tiles of W's widest: its rows once a block
    assert cuda_swap.swap_shape(155, 4096, 14336, 2, 132)[2] > 1            # few tiles over a long K: runs
    # 33-64 rows: a's rows in up to 4 blocks of 16 (SWAP_NARROW_BLOCKS) where 64-row ones idle SMs (decision 064)
    assert cuda_swap.swap_shape(64, 1024, 1024, 2, 132) == (4, 64, 1)       # 64 blocks, not 16
    assert cuda_swap.swap_shape(64, 1024, 1024, 4, 132)[0] == 1              # (TF32: not measured, one block)
    assert cuda_swap.swap_shape(49, 4096, 4096, 2, 132) == (2, 64, 1)
    assert cuda_swap.swap_shape(42, 9216, 2304, 2, 132) == (1, 128, 1)      # 72 tiles of one block: enough
    # a short call's runs summed in a cluster (no second launch: the host rule does not keep K whole),
    # and past one wave of clusters through the second launch (decision 052)
    assert cuda_swap.swap_shape(224, 1024, 5120, 2, 132) == (3, 128, 4)
    assert cuda_swap.swap_clustered(2, 128, 4, 3 * 8, 132) and not cuda_swap.swap_clustered(2, 128, 4, 27, 132)
    assert not cuda_swap.swap_clustered(4, 128, 2, 8, 132) and not cuda_swap.swap_clustered(2, 64, 2, 8, 132)
    for M, N, K in ((65, 300, 64), (100, 1024, 8192), (351, 576, 7168), (200, 50257, 768), (129, 512, 3584),
                    (5, 11008, 4096), (16, 1024, 4096), (211, 1024, 4096), (1092, 1024, 5120), (2441, 512, 3584),
                    (33, 512, 3584), (57, 2816, 1024)):
        blocks, wr, runs = cuda_swap.swap_shape(M, N, K, 2, 132)
        M, K = grain(M), grain(K)  # (it chooses at its blocks' rows: kernel_common.plans.by_tiles)
        k_tiles = cdiv(K, 64)
        narrow = cuda_swap.SWAP_HALF_FILL_MAX_M < M <= cuda_swap.SWAP_WIDE_MIN_NR
        more, min_rows = ((cuda_swap.SWAP_NARROW_BLOCKS["more"], cuda_swap.SWAP_NARROW_BLOCKS["min_rows"]) if narrow
                          else (cuda_swap.SWAP_MORE_BLOCKS, cuda_swap.SWAP_MIN_BLOCK_ROWS))
        assert wr in cuda_swap.swap_tile_rows(2, M) and 1 <= runs <= cuda_swap.SWAP_MAX_RUNS
        assert blocks == cuda_swap.swap_rows(M)[1] or cdiv(M, blocks) >= min_rows
        assert cdiv(k_tiles, runs) * (runs - 1) < k_tiles  # the last run is not empty
        fewest = cuda_swap.swap_rows(M)[1]
        near = range(fewest, fewest + more + 1)
        times = {(bl, w, r): cuda_swap.swap_time(M, N, K, 2, 132, bl, w, cdiv(k_tiles, cdiv(k_tiles, r)))
                 for bl in near if bl == fewest or cdiv(M, bl) >= min_rows
                 for w in cuda_swap.swap_tile_rows(2, M) for r in range(1, cuda_swap.SWAP_MAX_RUNS + 1)
                 if r == 1 or k_tiles // r >= cuda_swap.WS_SPLIT_MIN_SLICES}
        if M > cuda_swap.SWAP_WIDE_MIN_NR:  # past 64 rows blocks of every width too, K whole (decision 054)
            times.update({(cdiv(M, nr), w, 1): cuda_swap.swap_time(M, N, K, 2, 132, cdiv(M, nr), w, 1)
                          for nr in cuda_swap.SWAP_WIDTHS if nr >= cuda_swap.SWAP_WIDE_MIN_NR and cdiv(M, nr) not in near
                          for w in cuda_swap.swap_tile_rows(2, M)})
        time, least = cuda_swap.swap_time(M, N, K, 2, 132, blocks, wr, runs), min(times.values())
        one_run = min(t for s, t in times.items() if s[2] == 1)
        best = min(times, key=lambda s: (times[s], s[0], -s[1], s[2]))
        second = best[2] > 1 and not cuda_swap.swap_clustered(2, best[1], best[2], best[0] * cdiv(N, best[1]), 132)
        short = second and least < cuda_swap.SWAP_SPLIT_HOST_US and one_run <= cuda_swap.SWAP_ONE_RUN_SLACK * least
        assert time == (one_run if short else least) and (runs == 1 or not short)


def test_cuda_wgmma_swap_pairs_launch(monkeypatch):
    """Row blocks in pairs (decision 053) where the plan has an even count of them, K whole and 128
    or 192 rows of W: the pairs kernel, an even grid of whole pairs, an instance that ships; else the
    kernel alone or the runs' cluster (no GPU needed)."""
    for shape, blocks, wr, runs, paired in [((300, 4096, 4096), 2, 128, 1, True), ((300, 4096, 4096), 2, 192, 1, True),
                                            ((400, 1000, 1290), 4, 192, 1, True), ((400, 4096, 4096), 3, 128, 1, False),
                                            ((300, 4096, 4096), 2, 64, 1, False), ((300, 1024, 8192), 2, 128, 3, False)]:
        monkeypatch.setattr(cuda_swap, "swap_shape", lambda *_, s=(blocks, wr, runs): s)
        assert cuda_swap.swap_paired(2, blocks, wr, runs) == paired
        for b_kmajor in (True, False):
            launch = cuda_swap.wgmma_swap_launch("wgmma_swap", *shape, torch.bfloat16, 132, b_kmajor, runs)
            assert launch.name in cuda_swap.SWAP_NAME_EXPRESSIONS
            assert ("matmul_wgmma_swap_pairs<" in launch.name) == paired
            if paired:
                tiles = blocks * cdiv(shape[1], wr)
                assert launch.grid[0] % 2 == 0 and launch.grid[0] <= min(tiles, 132) and launch.block == (128 + 2 * wr,)
    assert not cuda_swap.swap_paired(4, 2, 128, 1)  # (TF32: no pairs)


def test_cuda_wgmma_swap_rule():
    """variant=None's wgmma_swap rule (decision 031) on Hopper: taken where K is long and its blocks
    pad M much less than 128-row tiles or its tiles are few, or on a short K where its tiles make one
    wave; at 33-64 rows (one block) where its tiles are few, or K is under 1024; at 1-32 rows (2-32 on
    b = W.t()) where b is read in place and K is whole or the call long; not
    on a short K past a wave, or where the blocks pad as much and the tiles are many; in three or four blocks
    where the shape model's plan is one wave and K not short (no GPU needed: the rule reads metadata; the device's
    capability and SM count are stood in for)."""
    assert cuda_swap.swap_rows(174) == (176, 1) and cuda_swap.swap_rows(282) == (144, 2) and cuda_swap.swap_rows(65) == (80, 1)
    assert cuda_swap.swap_rows(100) == (112, 1) and cuda_swap.swap_rows(40) == (48, 1) and cuda_swap.swap_rows(5) == (16, 1)
    assert cuda_swap.swap_block_rows(100, 2) == 64  # past 64 rows no block narrower than 64 (the model's fit)
    assert all(nr <= cuda_swap.SWAP_MAX_NR and nr in cuda_swap.SWAP_WIDTHS for nr, _ in map(cuda_swap.swap_rows, range(1, 2000)))
    meta = lambda *s: torch.empty(*s, dtype=torch.bfloat16, device="meta")  # noqa: E731
    with mock.patch.object(cuda_swap, "is_sm90", lambda device: True), \
            mock.patch.object(cuda_swap, "sm_count", lambda device: 132), \
            mock.patch.object(cuda_swap, "SWAP_VS_WS_MAX_M", 0):  # the rules alone (swap_beats_ws: its own test)
        assert cuda_swap.swap_pays(meta(174, 3584), meta(28672, 3584).t())      # 176 rows against 256
        assert cuda_swap.swap_pays(meta(282, 8192), meta(1024, 8192).t())       # 2 x 144 against 384
        assert cuda_swap.swap_pays(meta(32, 4096), meta(11008, 4096).t())       # few rows: one block of 32, K whole
        assert cuda_swap.swap_pays(meta(24, 1024), meta(1024, 4096))            # ... on a row-major b too,
        assert cuda_swap.swap_pays(meta(28, 1536), meta(1536, 17024))           # ... past one wave of tiles
        assert cuda_swap.swap_pays(meta(3, 1536), meta(8960, 1536).t())         # ... 3 rows (a block of 16)
        assert not cuda_swap.swap_pays(meta(4, 3584), meta(4096, 3584).t())     # ... not where its 64 tiles fill half the SMs
        assert cuda_swap.swap_pays(meta(4, 3584), meta(3584, 4096))             # ... (on W.t(): few_rows_mma's 128)
        assert cuda_swap.swap_pays(meta(21, 3584), meta(3584, 3584).t())       # ... past 16 rows, half-filled, K > 1024
        assert cuda_swap.swap_pays(meta(17, 1024), meta(1024, 1024).t())       # ... and on a K of 1024 (decision 064)
        assert not cuda_swap.swap_pays(meta(1, 4096), meta(4096, 4096).t())     # ... not one row on W.t() (few_rows)
        assert cuda_swap.swap_pays(meta(1, 4096), meta(4096, 4096))             # ... but on a row-major b
        assert not cuda_swap.swap_pays(meta(29, 3584), meta(3584, 512))         # ... K in runs, a short call
        assert not cuda_swap.swap_pays(meta(13, 6400), meta(1600, 6400).t())    # ... (few_rows_mma's runs, one launch)
        assert cuda_swap.swap_pays(meta(20, 28672), meta(28672, 4096))          # ... K in runs, a long call
        assert not cuda_swap.swap_pays(meta(8, 4096), meta(4096, 4095)[:, :4093])  # ... b's rows off 16 bytes
        assert not cuda_swap.swap_pays(meta(32, 4096), meta(4096, 30522))       # ... (few_rows_mma reads them in place)
        assert cuda_swap.swap_pays(meta(33, 4096), meta(4096, 30522))           # ... past 32 rows copied for it,
        assert cuda_swap.swap_pays(meta(2047, 768), meta(768, 50257))           # ... as for wgmma_ws, to 2047 rows
        assert not cuda_swap.swap_pays(meta(2048, 768), meta(768, 50257))
        assert not cuda_swap.swap_pays(meta(500, 768).t().contiguous().t(), meta(768, 50257))  # (an M-major a: not measured)
        assert cuda_swap.swap_pays(meta(40, 1024), meta(3072, 1024).t())        # one block of 64, K from 1024
        assert cuda_swap.swap_pays(meta(40, 896), meta(3072, 896).t())          # ... shorter K,
        assert cuda_swap.swap_pays(meta(40, 896), meta(151936, 896).t())        # ... at any count of tiles
        assert not cuda_swap.swap_pays(meta(64, 4096), meta(65536, 4096).t())   # ... 512 tiles, K from 1024
        assert cuda_swap.swap_pays(meta(174, 2048), meta(4096, 2048).t())       # short K, one wave of tiles
        assert not cuda_swap.swap_pays(meta(174, 2048), meta(24576, 2048).t())  # ... 192 tiles
        assert cuda_swap.swap_pays(meta(239, 4096), meta(4096, 4096).t())       # 2 x 128 against 256, 64 tiles
        assert not cuda_swap.swap_pays(meta(239, 4096), meta(32768, 4096).t())  # ... 512 tiles
        assert cuda_swap.swap_pays(meta(400, 4096), meta(4096, 4096).t())       # three blocks or four where one wave
        assert cuda_swap.swap_pays(meta(569, 8192), meta(1024, 8192).t())       # ... holds the model's tiles and runs
        assert not cuda_swap.swap_pays(meta(400, 4096), meta(16384, 4096).t())  # ... not past it
        assert not cuda_swap.swap_pays(meta(432, 768), meta(2304, 768).t())     # ... nor on a short K
        assert not cuda_swap.swap_pays(meta(705, 4096), meta(1024, 4096).t())   # ... nor in five
        assert not cuda_swap.swap_pays(meta(174, 3584).float(), meta(28672, 3584).float().t())


def test_cuda_wgmma_swap_against_ws():
    """Past 64 rows up to SWAP_VS_WS_MAX_M, where no rule takes it, variant=None takes wgmma_swap where
    SWAP_VS_WS_SLACK x its modelled time is below wgmma_ws's model calibrated to its calls (decision
    054): 1092 x 1024 x 5120 (cuBLAS's swapped 80 x 128 tiles) yes, 4096^3 no; never at 64 rows or
    fewer, past SWAP_VS_WS_MAX_M, in float32 or on an M-major a (which wgmma_swap would copy; no GPU
    needed: the device is stood in for)."""
    ws_us = lambda M, N, K: cuda_swap.WS_CALL_FIXED_US + cuda_swap.WS_CALL_SCALE * cuda_wgmma.ws_plan_time(  # noqa: E731
        M, N, K, 2, 132, False, cuda_wgmma.ws_tile_n(M, N, K, 2, 132))
    assert cuda_swap.ws_call_us(1092, 1024, 5120, 2, 132) == ws_us(1092, 1024, 5120)
    for M, N, K in ((1092, 1024, 5120), (2441, 512, 3584), (4096, 4096, 4096), (723, 9216, 3072), (65, 4096, 4096),
                    (3000, 14336, 4096), (200, 128256, 4096)):
        swap_us = cuda_swap.swap_time(M, N, K, 2, 132, *cuda_swap.swap_shape(M, N, K, 2, 132))
        assert cuda_swap.swap_beats_ws(M, N, K, 2, 132) == (cuda_swap.SWAP_VS_WS_SLACK * swap_us < ws_us(M, N, K))
    assert cuda_swap.swap_beats_ws(1092, 1024, 5120, 2, 132) and not cuda_swap.swap_beats_ws(4096, 4096, 4096, 2, 132)
    assert not cuda_swap.swap_beats_ws(64, 1024, 5120, 2, 132)
    assert not cuda_swap.swap_beats_ws(cuda_swap.SWAP_VS_WS_MAX_M + 1, 512, 3584, 2, 132)
    meta = lambda *s, dtype=torch.bfloat16: torch.empty(*s, dtype=dtype, device="meta")  # noqa: E731
    with mock.patch.object(cuda_swap, "is_sm90", lambda device: True), \
            mock.patch.object(cuda_swap, "sm_count", lambda device: 132):
        assert cuda_swap.swap_pays(meta(1092, 5120), meta(1024, 5120).t())
        assert cuda_swap.swap_pays(meta(1092, 5120), meta(5120, 1024))
        assert not cuda_swap.swap_pays(meta(4096, 4096), meta(4096, 4096).t())
        assert not cuda_swap.swap_pays(meta(5120, 1092).t(), meta(1024, 5120).t())  # an M-major a: copied, not weighed
        assert not cuda_swap.swap_pays(meta(1092, 5120, dtype=torch.float32), meta(1024, 5120, dtype=torch.float32).t())


def test_cuda_ws_blocks_alone_priced_by_the_dram():
    """On a GPU of at most WS_ALONE_CALL_SCALE's max_dram_gbs (an H100's 3352 GB/s), wgmma_ws's blocks
    alone (an odd count of 128-row tiles) are priced at its scale, pairs and a faster DRAM (an H200's)
    at WS_CALL_SCALE: 801 x 32064 x 5120 (7 tiles alone) moves to wgmma_swap on the H100 only;
    976 x 27648 x 5120 (8 tiles, in pairs) is priced alike on both (decision 054)."""
    alone, h100, h200 = cuda_swap.WS_ALONE_CALL_SCALE, 3352.0, 4800.0
    assert alone["scale"] > cuda_swap.WS_CALL_SCALE and h100 <= alone["max_dram_gbs"] < h200
    assert cuda_wgmma.ws_cluster(801) == 1 and cuda_wgmma.ws_cluster(976) == 2
    plan = cuda_wgmma.ws_plan_time(801, 32064, 5120, 2, 132, False, cuda_wgmma.ws_model_tile_n(801, 32064, 5120, 2, 132))
    assert cuda_swap.ws_call_us(801, 32064, 5120, 2, 132, h100) == pytest.approx(cuda_swap.WS_CALL_FIXED_US + alone["scale"] * plan)
    assert cuda_swap.ws_call_us(801, 32064, 5120, 2, 132, h200) == cuda_swap.ws_call_us(801, 32064, 5120, 2, 132)
    assert cuda_swap.ws_call_us(976, 27648, 5120, 2, 132, h100) == cuda_swap.ws_call_us(976, 27648, 5120, 2, 132)
    assert cuda_swap.swap_beats_ws(801, 32064, 5120, 2, 132, h100)
    assert not cuda_swap.swap_beats_ws(801, 32064, 5120, 2, 132, h200)
    meta = lambda *s: torch.empty(*s, dtype=torch.bfloat16, device="meta")  # noqa: E731
    for dram, swapped in ((h100, True), (h200, False)):
        with mock.patch.object(cuda_swap, "is_sm90", lambda device: True), \
                mock.patch.object(cuda_swap, "sm_count", lambda device: 132), \
                mock.patch.object(cuda_swap, "dram_gbs", lambda device: dram):
            assert cuda_swap.swap_pays(meta(801, 5120), meta(32064, 5120).t()) == swapped
    assert cuda_arch.dram_gbs(torch.device("cpu")) == float("inf")  # not a GPU: no DRAM term


@requires_gpu
def test_cuda_dram_gbs_reads_the_device():
    """The peak DRAM bandwidth the selection keys on, from the device's memory clock and bus width: a
    data-centre GPU's is some TB/s."""
    assert 500 < cuda_arch.dram_gbs(torch.device("cuda")) < 20000


def test_tensor_maps_are_kept_per_address():
    """The wgmma family's tensor maps (``_kept_maps``): encoded once per (address, operand), the
    same bytes again on a repeat, and the kept ones dropped past 64 addresses."""
    calls = []
    tensor_map = cuda_wgmma._kept_maps(lambda ptr, which: calls.append((ptr, which)) or bytes([ptr % 256]) * 128)
    assert tensor_map(16, "a") == tensor_map(16, "a") == bytes([16]) * 128 and calls == [(16, "a")]
    assert tensor_map(16, "b") == bytes([16]) * 128 and calls[-1] == (16, "b")
    for p in range(64):
        tensor_map(1024 + p, "a")
    tensor_map(16, "a")
    assert calls.count((16, "a")) == 2  # dropped with the rest when the 65th address came
