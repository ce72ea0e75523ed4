"""FP8 matmul with scales (triton_impl.scaled_mm, cuda_ref.scaled_mm): per tensor, row-wise and
1 x 128 / 128 x 128 blocks, against the float64 product of the dequantized operands, outputs
poisoned; e5m2 for one operand; layouts copied where tensor maps cannot read them; refusals.
Triton on CPU (interpreter) and GPU; CUDA on a Hopper GPU."""
import pytest
import torch

import cuda_ref
import triton_impl
from conftest import HAS_GPU, requires_gpu
from bench.specs import max_rel_err, poison
from triton_impl import _matmul_fp8_ws
from triton_impl._matmul_fp32 import fma_ws_runs

HOPPER = HAS_GPU and torch.cuda.get_device_capability() == (9, 0)


@pytest.fixture(params=["triton", "cuda"])
def scaled_mm(request):
    """Each backend's scaled_mm (CUDA's: sm_90a code, a Hopper GPU only)."""
    if request.param == "cuda" and not HOPPER:
        pytest.skip("cuda_ref.scaled_mm needs a Hopper GPU (sm_90a wgmma)")
    return {"triton": triton_impl.scaled_mm, "cuda": cuda_ref.scaled_mm}[request.param]

E4M3, E5M2 = torch.float8_e4m3fn, torch.float8_e5m2
# |c - ref| / max |ref|: c's rounding (bfloat16: 2^-9 of a value, at most 2^-8 of the largest) and
# Hopper's FP8 MMA, whose sum keeps fewer bits than float32 (about 2^-13 over a 128-deep slice)
TOL = {torch.bfloat16: 1e-2, torch.float32: 2e-3}


def fp8(rows, cols, dtype, device, seed):
    """Values spread over e4m3's range (not only near 1), none zero, as fp8."""
    g = torch.Generator(device=device).manual_seed(seed)
    x = torch.randn(rows, cols, generator=g, device=device) * 4
    x = torch.where(x.abs() < 0.05, torch.full_like(x, 0.25), x)
    return x.to(dtype)


def scales(kind, M, N, K, device, seed):
    g = torch.Generator(device=device).manual_seed(seed)
    rand = lambda *shape: torch.rand(*shape, generator=g, device=device) + 0.5  # noqa: E731
    kb, nb = -(-K // 128), -(-N // 128)
    return {"tensor": (rand(()), rand(())), "row": (rand(M, 1), rand(1, N)), "block": (rand(M, kb), rand(kb, nb))}[kind]


def dequantized(a, b, sa, sb, block: bool):
    """a * scale_a and b * scale_b in float64, each scale spread over what it covers (a block
    scale over its 1 x 128 or 128 x 128 elements; the others broadcast)."""
    K, N = b.shape
    sa, sb = sa.double(), sb.double()
    if block:
        sa = sa.repeat_interleave(128, 1)[:, :K]
        sb = sb.repeat_interleave(128, 0)[:K].repeat_interleave(128, 1)[:, :N]
    return a.double() * sa, b.double() * sb


def check(scaled_mm, a, b, sa, sb, out_dtype, block=False):
    out = poison((a.shape[0], b.shape[1]), out_dtype, a.device)
    assert scaled_mm(a, b, sa, sb, out_dtype=out_dtype, out=out) is out
    da, db = dequantized(a, b, sa, sb, block)
    err = max_rel_err(out, da @ db)
    assert err <= TOL[out_dtype], err


# (M, N, K): edge tiles, K off 128 (the last block slice short), K off 16 bytes (a copied)
SHAPES = [(67, 45, 256), (128, 96, 200), (1, 130, 384), (33, 16, 130)]


@pytest.mark.parametrize("out_dtype", [torch.bfloat16, torch.float32], ids=["bf16", "fp32"])
@pytest.mark.parametrize("kind", ["tensor", "row", "block"])
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_scaled_mm(scaled_mm, shape, kind, out_dtype, device):
    M, N, K = shape
    a, w = fp8(M, K, E4M3, device, 1), fp8(N, K, E4M3, device, 2)
    check(scaled_mm, a, w.t(), *scales(kind, M, N, K, device, 3), out_dtype, block=kind == "block")


def test_block_scales_apply_per_slice(scaled_mm, device):
    """Block scales differing a thousandfold between slices: a kernel that scaled the whole sum
    once (or by the wrong slice) misses by far more than the tolerance."""
    M, N, K = 40, 160, 384
    a, w = fp8(M, K, E4M3, device, 4), fp8(N, K, E4M3, device, 5)
    sa = torch.tensor([1.0, 1e-3, 1e3], device=device).repeat(M, 1)
    sb = torch.tensor([[1.0, 2.0], [1e3, 1.0], [1e-3, 0.5]], device=device)
    check(scaled_mm, a, w.t(), sa, sb, torch.float32, block=True)


def test_scaled_mm_layouts_and_e5m2(scaled_mm, device):
    """A row-major b (copied K-major), a strided a, and e5m2 for either operand."""
    M, N, K = 50, 64, 256
    a, w = fp8(M, K, E4M3, device, 6), fp8(N, K, E4M3, device, 7)
    sa, sb = scales("row", M, N, K, device, 8)
    check(scaled_mm, a, w.t().contiguous(), sa, sb, torch.float32)
    wide = fp8(M, 2 * K, E4M3, device, 9)
    check(scaled_mm, wide[:, ::2], w.t(), sa, sb, torch.float32)
    check(scaled_mm, a, fp8(N, K, E5M2, device, 10).t(), sa, sb, torch.float32)
    check(scaled_mm, fp8(M, K, E5M2, device, 11), w.t(), sa, sb, torch.float32)


def test_scaled_mm_matches_torch(scaled_mm, device):
    """Per tensor, the same c as torch._scaled_mm (cuBLASLt on a GPU)."""
    M, N, K = 64, 48, 256
    a, w = fp8(M, K, E4M3, device, 12), fp8(N, K, E4M3, device, 13)
    sa, sb = scales("tensor", M, N, K, device, 14)
    ours = scaled_mm(a, w.t(), sa, sb, out_dtype=torch.float32)
    theirs = torch._scaled_mm(a, w.t(), sa, sb, out_dtype=torch.float32)
    assert max_rel_err(ours, theirs.double()) <= TOL[torch.float32]


def test_long_sums_are_promoted_as_torch_promotes_them(scaled_mm, device):
    """8192-deep sums: Hopper's FP8 MMA chaining every slice in its accumulator misses
    torch._scaled_mm's c by several times its error; each slice promoted to float32 matches it.
    ``use_fast_accum`` (torch's flag) still passes the tolerance."""
    M, N, K = 64, 128, 8192
    a, w = fp8(M, K, E4M3, device, 17), fp8(N, K, E4M3, device, 18)
    sa, sb = scales("tensor", M, N, K, device, 19)
    ref = (a.double() * sa.double()) @ (w.double().t() * sb.double())
    theirs = max_rel_err(torch._scaled_mm(a, w.t(), sa, sb, out_dtype=torch.float32), ref)
    ours = max_rel_err(scaled_mm(a, w.t(), sa, sb, out_dtype=torch.float32), ref)
    assert ours <= 1.5 * theirs + 1e-5, (ours, theirs)
    fast = scaled_mm(a, w.t(), sa, sb, out_dtype=torch.float32, use_fast_accum=True)
    assert max_rel_err(fast, ref) <= TOL[torch.bfloat16]


@pytest.mark.parametrize("out_dtype", [torch.bfloat16, torch.float32], ids=["bf16", "fp32"])
@pytest.mark.parametrize("kind", ["tensor", "row", "block"])
@pytest.mark.parametrize("M", [5, 67])
@pytest.mark.parametrize("variant", triton_impl.variants("scaled_mm"))
def test_triton_variants_on_few_rows(variant, M, kind, out_dtype, device):
    """Each Triton variant forced on few rows: K in several runs (few_rows_fp8: 2048 deep over 3
    tiles of 64 columns, the tile's last run adds them; 67 rows in three blocks of 32; tma_fp8 where
    its tiles fill under half the SMs), a row-major
    b and a strided a (read by pointers, or copied), edges off every tile, e5m2 for a."""
    N, K = 130, 2048
    a, w = fp8(M, K, E4M3, device, 23), fp8(N, K, E4M3, device, 24)
    sa, sb = scales(kind, M, N, K, device, 25)
    if variant == "ws_fp8" and not fma_ws_runs(device):
        pytest.skip("ws_fp8 is Gluon: a Hopper GPU, no interpreter")
    call = lambda *args, **kw: triton_impl.scaled_mm(*args, variant=variant, **kw)  # noqa: E731
    if variant == "few_rows_fp8" or (variant == "tma_fp8" and M == 5):  # (tma_fp8: 2 tiles, K in runs)
        assert triton_impl.describe("scaled_mm", a, w.t(), sa, sb, variant=variant).endswith("runs of K")
    check(call, a, w.t(), sa, sb, out_dtype, block=kind == "block")
    check(call, a, w.t().contiguous(), sa, sb, out_dtype, block=kind == "block")
    check(call, fp8(M, 2 * K, E5M2, device, 26)[:, ::2], w.t(), sa, sb, out_dtype, block=kind == "block")


@requires_gpu
@pytest.mark.parametrize("out_dtype", [torch.bfloat16, torch.float32], ids=["bf16", "fp32"])
@pytest.mark.parametrize("kind", ["tensor", "row", "block"])
@pytest.mark.parametrize("M", [5, 32, 67])
def test_gpu_cuda_few_rows_fp8(M, kind, out_dtype):
    """cuda_ref's few_rows_fp8 forced, against the float64 product: K in runs (2048 deep on few
    blocks) and whole (K 384), rows in blocks of 16 or 32, a row-major b (copied), e5m2 for either
    operand, edges off every tile."""
    if not HOPPER:
        pytest.skip("a Hopper GPU (the FP8 conversions need compute capability 8.9 or more)")
    few_rows_scaled_mm = lambda *args, **kw: cuda_ref.scaled_mm(*args, variant="few_rows_fp8", **kw)  # noqa: E731
    for N, K in ((130, 2048), (200, 384)):
        a, w = fp8(M, K, E4M3, "cuda", 30), fp8(N, K, E4M3, "cuda", 31)
        sa, sb = scales(kind, M, N, K, "cuda", 32)
        check(few_rows_scaled_mm, a, w.t(), sa, sb, out_dtype, block=kind == "block")
        check(few_rows_scaled_mm, a, w.t().contiguous(), sa, sb, out_dtype, block=kind == "block")
        check(few_rows_scaled_mm, fp8(M, K, E5M2, "cuda", 33), w.t(), sa, sb, out_dtype, block=kind == "block")
        check(few_rows_scaled_mm, a, fp8(N, K, E5M2, "cuda", 34).t(), sa, sb, out_dtype, block=kind == "block")


def test_cuda_picks_few_rows_fp8_for_few_rows():
    from cuda_ref._matmul_fp8 import FP8_FEW_ROWS as FEW
    w, one = fp8(96, 256, E4M3, "cpu", 28), torch.ones(())
    assert cuda_ref.pick("scaled_mm", fp8(FEW, 256, E4M3, "cpu", 27), w.t(), one, one) == "few_rows_fp8"
    assert cuda_ref.pick("scaled_mm", fp8(FEW + 1, 256, E4M3, "cpu", 27), w.t(), one, one) == "wgmma_fp8"


def test_triton_picks_few_rows_fp8_for_few_rows(device):
    """few_rows_fp8 up to FEW_ROWS rows; past them ws_fp8 for promoted sums per tensor and row-wise
    where Gluon runs (a Hopper GPU) and tma_fp8's tiles make more than a wave; tma_fp8 for chained
    sums, block scales, a wave of tiles or less (64 rows, K split in runs where they fill under
    half the SMs) and elsewhere."""
    from triton_impl import _matmul_fp8, _matmul_fp8_ws
    FEW_ROWS, N = _matmul_fp8.FEW_ROWS, 128 * 200  # (200 tiles of 128 columns: past a wave)
    w, one = fp8(N, 256, E4M3, device, 28), torch.ones((), device=device)
    assert triton_impl.pick("scaled_mm", fp8(FEW_ROWS, 256, E4M3, device, 27), w.t(), one, one) == "few_rows_fp8"
    a = fp8(FEW_ROWS + 1, 256, E4M3, device, 29)
    ws = fma_ws_runs(a.device)
    rows, cols = torch.ones((a.shape[0], 1), device=device), torch.ones((1, N), device=device)
    blocks = torch.ones((a.shape[0], 2), device=device), torch.ones((2, N // 128), device=device)
    assert triton_impl.pick("scaled_mm", a, w.t(), one, one) == ("ws_fp8" if ws else "tma_fp8")
    assert triton_impl.pick("scaled_mm", a, w.t(), rows, cols) == ("ws_fp8" if ws else "tma_fp8")
    assert triton_impl.pick("scaled_mm", a, w.t(), *blocks) == "tma_fp8"
    assert triton_impl.pick("scaled_mm", a, w.t(), one, one, use_fast_accum=True) == "tma_fp8"
    assert _matmul_fp8.describe(a, w.t(), one, one, use_fast_accum=True).startswith("tma_fp8")
    # one 128 x 128 tile over 32 slices: 4 runs of 8 on 132 SMs; 67 tiles: more than half, K whole
    assert _matmul_fp8._split_runs(FEW_ROWS + 1, 128, 4096, _matmul_fp8.CONFIG, 132) == 4
    assert _matmul_fp8._split_runs(FEW_ROWS + 1, 128 * 67, 4096, _matmul_fp8.CONFIG, 132) == 1
    if device == "cuda":  # (the interpreter's tiles are 32 rows and its "SMs" 4)
        narrow = w[:128 * 8]
        assert triton_impl.pick("scaled_mm", a, narrow.t(), one, one) == "tma_fp8"
        assert _matmul_fp8.describe(a, narrow.t(), one, one).startswith("tma_fp8 tensor scales 64x128x128")
        deep, w_deep = fp8(FEW_ROWS + 1, 4096, E4M3, device, 30), fp8(128, 4096, E4M3, device, 31)
        assert triton_impl.pick("scaled_mm", deep, w_deep.t(), one, one) == "tma_fp8"
        assert _matmul_fp8.describe(deep, w_deep.t(), one, one).endswith("4 runs of K")


@requires_gpu
@pytest.mark.parametrize("fast", [False, True], ids=["promoted", "fast_accum"])
@pytest.mark.parametrize("kind", ["tensor", "row", "block"])
def test_scaled_mm_splits_k(scaled_mm, kind, fast, device):
    """Tiles under half the SMs over a deep K: K in runs (4100 deep: 33 slices, the last short, in
    4 runs), each run's sums handed over in one launch and added in run order (the same bits on a
    second call); edges off every tile."""
    M, N, K = 200, 300, 4100
    a, w = fp8(M, K, E4M3, device, 35), fp8(N, K, E4M3, device, 36)
    sa, sb = scales(kind, M, N, K, device, 37)
    call = lambda *args, **kw: scaled_mm(*args, use_fast_accum=fast, **kw)  # noqa: E731
    from cuda_ref import _matmul_fp8 as cuda_fp8
    from triton_impl import _matmul_fp8 as triton_fp8
    module = triton_fp8 if scaled_mm is triton_impl.scaled_mm else cuda_fp8
    assert module.describe(a, w.t(), sa, sb, use_fast_accum=fast).endswith("4 runs of K")
    for out_dtype in (torch.bfloat16, torch.float32):
        check(call, a, w.t(), sa, sb, out_dtype, block=kind == "block")
    first = call(a, w.t(), sa, sb, out_dtype=torch.float32)
    assert torch.equal(first, call(a, w.t(), sa, sb, out_dtype=torch.float32))


@requires_gpu
@pytest.mark.parametrize("fast", [False, True], ids=["promoted", "fast_accum"])
@pytest.mark.parametrize("kind", ["tensor", "row", "block"])
def test_scaled_mm_large_tiles(scaled_mm, kind, fast, device):
    """Enough tiles and K for the larger tiles (Triton: 256 x 128 promoted, 128 x 256 fast), edges
    off them; several tiles a block (CUDA's persistent walk: its ring's phases across tiles)."""
    M, N, K = 4100, 2300, 4096
    a, w = fp8(M, K, E4M3, device, 20), fp8(N, K, E4M3, device, 21)
    sa, sb = scales(kind, M, N, K, device, 22)
    out = poison((M, N), torch.bfloat16, device)
    scaled_mm(a, w.t(), sa, sb, use_fast_accum=fast, out=out)
    da, db = dequantized(a, w.t(), sa, sb, kind == "block")
    assert max_rel_err(out, da @ db) <= TOL[torch.bfloat16]


@requires_gpu
@pytest.mark.parametrize("out_dtype", [torch.bfloat16, torch.float32], ids=["bf16", "fp32"])
def test_scaled_mm_into_an_out_off_its_alignment(scaled_mm, out_dtype, device):
    """An out one element past an aligned address (a view into a larger buffer), rows of even length:
    c's interior tiles store element pairs, which would be misaligned there; the element before out
    stays as it was."""
    M, N, K = 400, 256, 256
    a, w = fp8(M, K, E4M3, device, 35), fp8(N, K, E4M3, device, 36)
    sa, sb = scales("tensor", M, N, K, device, 37)
    buf = poison((M * N + 1,), out_dtype, device)
    out = buf[1:].view(M, N)
    assert scaled_mm(a, w.t(), sa, sb, out_dtype=out_dtype, out=out) is out
    da, db = dequantized(a, w.t(), sa, sb, False)
    assert max_rel_err(out, da @ db) <= TOL[out_dtype]
    assert buf[0].isnan()


@requires_gpu
@pytest.mark.parametrize("plan", [(2, 128, False), (3, 128, False), (2, 128, True), (3, 128, True), (2, 256, True)],
                         ids=lambda p: f"{p[0]}wg-n{p[1]}-{'fast' if p[2] else 'promoted'}")
@pytest.mark.parametrize("kind", ["tensor", "row", "block"])
@pytest.mark.parametrize("shape", [(4100, 2300, 4096), (300, 260, 1000)], ids=str)
def test_gpu_triton_ws_fp8_plans(plan, kind, shape):
    """ws_fp8 in each plan it can make (consumer warpgroups, tile columns, chained or promoted):
    several tiles a program (the ring's phases across tiles), edge tiles, a K tail (1000: the last
    slice short), a bfloat16 and a float32 c."""
    if not fma_ws_runs("cuda"):
        pytest.skip("ws_fp8 needs a Hopper GPU and a triton with Gluon")
    from kernel_common import fp8 as f8, sm_count
    consumers, bn, fast = plan
    if bn != 128 and kind == "block":
        pytest.skip("block scales take 128-column tiles")
    M, N, K = shape
    a, w = fp8(M, K, E4M3, "cuda", 30), fp8(N, K, E4M3, "cuda", 31)
    sa, sb = scales(kind, M, N, K, "cuda", 32)
    da, db = dequantized(a, w.t(), sa, sb, kind == "block")
    ref = da @ db
    for out_dtype in (torch.bfloat16, torch.float32):
        made = _matmul_fp8_ws.plan(a, w.t(), f8.scaling(a, w.t(), sa, sb), sa, sb, out_dtype, fast, sm_count(a.device),
                                   bn=bn, consumers=consumers)
        out = poison((M, N), out_dtype, "cuda")
        made.run(a, w.t(), sa, sb, out)
        assert max_rel_err(out, ref) <= TOL[out_dtype if not fast else torch.bfloat16], (out_dtype, plan)
    # and through the public call, by name
    check(lambda *args, **kw: triton_impl.scaled_mm(*args, variant="ws_fp8", **kw), a, w.t(), sa, sb, torch.bfloat16,
          block=kind == "block")


def test_scaled_mm_refusals(scaled_mm, device):
    a, w = fp8(16, 32, E4M3, device, 15), fp8(8, 32, E4M3, device, 16)
    one = torch.ones((), device=device)
    with pytest.raises(TypeError, match="both float8_e5m2"):
        scaled_mm(a.to(E5M2), w.t().to(E5M2), one, one)
    with pytest.raises(TypeError, match="expected one of"):
        scaled_mm(a.float(), w.t(), one, one)
    with pytest.raises(TypeError, match="out_dtype"):
        scaled_mm(a, w.t(), one, one, out_dtype=torch.float16)
    with pytest.raises(ValueError, match="scales must be"):
        scaled_mm(a, w.t(), torch.ones(16, 2, device=device), one)
    with pytest.raises(ValueError, match="must equal b's rows"):
        scaled_mm(a, w.t()[:16], one, one)
    with pytest.raises(TypeError, match="scale_a has dtype"):
        scaled_mm(a, w.t(), one.double(), one)
    with pytest.raises(ValueError, match="out must be contiguous"):
        scaled_mm(a, w.t(), one, one, out=torch.empty(16, 16, dtype=torch.bfloat16, device=device)[:, ::2])


def test_cuda_plans_take_the_measured_tiles():
    """cuda_ref.scaled_mm's plans (no GPU needed): promoted slices on 128-column tiles, blocks alone;
    chained ones in pairs, 192 columns where their waves are fewer (8192^3: 21 against 32) and 128
    where both widths make two (1024 x 4096: 192 columns leave a third of the second wave busy)."""
    from cuda_ref import _matmul_fp8 as m
    assert (m.tile_n(8192, 8192, True, 132), m.cluster_of(8192, True)) == (128, 1)
    assert (m.tile_n(8192, 8192, False, 132), m.cluster_of(8192, False)) == (192, 2)
    assert m.tile_n(1024, 4096, False, 132) == 128
    for promote in (True, False):
        for M, N in ((8192, 8192), (1024, 4096), (67, 45)):
            tn, cl = m.tile_n(M, N, promote, 132), m.cluster_of(M, promote)
            assert m.instance(E4M3, E4M3, torch.bfloat16, promote, cl, tn) in m.NAME_EXPRESSIONS


def test_cuda_block_scales_run_an_instance_of_their_own():
    """Block scales launch the BLOCK_SCALES instance (each slice times its scales), per-tensor and
    row-wise the other (slices added without scales, no block path in their loop); both compiled,
    for every operand pair and c's dtype."""
    from cuda_ref import _matmul_fp8 as m
    for ta, tb in m.PAIRS:
        for out in (torch.bfloat16, torch.float32):
            block = m._launch(4096, 4096, ta, tb, out, True, 1, 128, 132, block=True).name
            plain = m._launch(4096, 4096, ta, tb, out, True, 1, 128, 132).name
            assert ", true, true, " in block and ", true, false, " in plain
            assert {block, plain} <= set(m.NAME_EXPRESSIONS)
    assert not any(", false, true, " in name for name in m.NAME_EXPRESSIONS)  # (chained: never block scales)
