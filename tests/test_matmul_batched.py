"""Batched matmul (triton_impl.matmul on operands of more than two dimensions): torch.matmul's
broadcasting, any strides, each batch variant, against a float64 reference with the 2-D
tolerance, outputs poisoned. CPU (interpreter) and GPU."""
import math

import pytest
import torch

import cuda_ref
import triton_impl
from bench.specs import MatmulSpec, poison
from conftest import requires_gpu
from kernel_common import matmul_out_dtype
from triton_impl import _matmul_batched

DTYPES = ["float32", "float16", "bfloat16", "int8"]


def make(batch, rows, cols, dtype_name, device, seed):
    """A (*batch, rows, cols) operand of the 2-D tests' values (MatmulSpec.make_inputs: never zero,
    |c| near 1 for any K; ``cols`` is K for a, and K for b's rows is ``rows``)."""
    count = math.prod(batch)
    a, _ = MatmulSpec.make_inputs((count * rows, 1, cols), MatmulSpec.torch_dtype(dtype_name), device, seed)
    return a.reshape(*batch, rows, cols)


def operand(t, kind):
    """The same values in another layout: each matrix transposed in memory, the matrices'
    rows interleaved (a batch stride below the row stride), or every other element of a NaN-filled
    buffer (a kernel that reads through a wrong stride shows it)."""
    if kind == "contiguous":
        return t
    if kind == "kmajor":  # each matrix a .mT view of a contiguous transpose (a batch of W.t())
        return t.mT.contiguous().mT
    if kind == "heads":  # each matrix's rows a batch apart (attention's heads of a (tokens, heads, dim) buffer)
        return t.transpose(-3, -2).contiguous().transpose(-3, -2) if t.dim() > 2 else t
    if kind == "step":
        big = torch.full((*t.shape[:-1], 2 * t.shape[-1]), float("nan"), device=t.device).to(t.dtype)
        big[..., ::2] = t
        return big[..., ::2]
    raise ValueError(kind)


def reference(a, b):
    """float64 products (exact inputs, one rounding of each sum), int8's sums as int32 (exact here)."""
    c = torch.matmul(a.double(), b.double())
    return c if a.dtype.is_floating_point else c.to(torch.int32)


def check(a, b, dtype_name, matmul=triton_impl.matmul, **kw):
    """out poisoned and returned, compared with the reference; a fresh result too; inputs unchanged."""
    before = (a.clone(), b.clone())
    with MatmulSpec.context(dtype_name):
        ref = reference(a, b)
        k_like = a.reshape(-1, a.shape[-1])  # (compare reads K from its inputs' a)
        out = poison(ref.shape, matmul_out_dtype(a.dtype), a.device)
        assert matmul(a, b, out=out, **kw) is out
        cmp = MatmulSpec.compare(out, ref, (k_like,))
        assert cmp.ok, cmp.detail
        fresh = matmul(a, b, **kw)
        assert fresh.is_contiguous() and tuple(fresh.shape) == tuple(ref.shape)
        cmp = MatmulSpec.compare(fresh, ref, (k_like,))
        assert cmp.ok, cmp.detail
    assert torch.equal(a.nan_to_num(), before[0].nan_to_num()) and torch.equal(b.nan_to_num(), before[1].nan_to_num())


# (a's batch, b's batch, M, N, K): one batch; broadcast over a 2-D b (one 2-D product of every
# row); b batched, a one matrix; two batch dimensions broadcast against each other (copied);
# a batch of one; edge tiles in every extent; batches whose 16-bit matrices 3-D descriptors read
# (the TMA walk: each product's own, and a broadcast over a batched b)
CASES = [
    ((3,), (3,), 17, 13, 9),
    ((4,), (), 33, 65, 129),
    ((), (5,), 67, 45, 33),
    ((2,), (2,), 33, 24, 40),
    ((), (5,), 67, 40, 48),
    ((2, 1), (1, 3), 17, 13, 9),
    ((2, 3), (3,), 1, 300, 7),
    ((1,), (1,), 130, 1, 260),
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", CASES, ids=str)
def test_batched(case, dtype, device):
    a_batch, b_batch, M, N, K = case
    a = make(a_batch, M, K, dtype, device, seed=1)
    b = make(b_batch, K, N, dtype, device, seed=2)
    check(a, b, dtype)


@pytest.mark.parametrize("variant", [None, *(v for v, walks in _matmul_batched.BATCH.items() if walks)])
@pytest.mark.parametrize("b_kind", ["contiguous", "kmajor", "step"])
@pytest.mark.parametrize("a_kind", ["contiguous", "kmajor", "step"])
def test_batched_strides(a_kind, b_kind, variant, device):
    """Each layout of a and b: the pointer kernel on float32 (b's rows of 21 not 16-byte aligned);
    the TMA walk on float16 whose strides descriptors take (a's every other element they do not:
    refused by name)."""
    tma = variant == "tma_persistent"
    dtype, (M, K, N) = ("float16", (40, 48, 24)) if tma else ("float32", (33, 40, 21))
    a = operand(make((3,), M, K, dtype, device, seed=3), a_kind)
    b = operand(make((3,), K, N, dtype, device, seed=4), b_kind)
    # b one matrix: a's rows as one product (2-D: copies where TMA cannot read them), except a
    # K-major a, whose matrices are not row after row: the walk
    for y, refused in ((b, "step" in (a_kind, b_kind)), (b[0], (a_kind, b_kind) == ("kmajor", "step"))):
        if tma and refused:
            with pytest.raises(ValueError, match="descriptors read"):
                triton_impl.matmul(a, y, variant=variant)
        else:
            check(a, y, dtype, variant=variant)


def test_batched_tma_broadcasts_a_strided_matrix(device):
    """One K-major a (rows of 40, 33 of them used) over a batched b: a descriptor whose one matrix
    has a batch stride on 16 bytes though 33 x 12 elements are not."""
    if device == "cuda" and torch.cuda.get_device_capability()[0] < 9:
        pytest.skip("the TMA walk is Hopper's")
    buf = make((), 12, 40, "float16", device, 30)
    a = buf[:, :33].t()  # (33, 12), strides (1, 40)
    b = make((3,), 12, 24, "float16", device, 31)
    assert triton_impl.pick("matmul", a, b) == "tma_persistent"
    check(a, b, "float16")


def test_batched_default_walks_by_tma_where_descriptors_read(device):
    """variant=None on a batch that does not fold: the TMA walk for 16-bit operands descriptors
    read (the interpreter stands in for Hopper), grouped for float32 and for rows off 16 bytes."""
    if device == "cuda" and torch.cuda.get_device_capability()[0] < 9:
        pytest.skip("the TMA walk is Hopper's")
    a16, b16 = make((3,), 40, 48, "float16", device, 1), make((3,), 48, 24, "float16", device, 2)
    assert triton_impl.pick("matmul", a16, b16) == "tma_persistent"
    assert triton_impl.pick("matmul", a16, b16.mT.contiguous().mT) == "tma_persistent"
    assert triton_impl.pick("matmul", a16.float(), b16.float()) == "grouped"
    assert triton_impl.pick("matmul", a16, b16[..., :21]) == "grouped"
    assert triton_impl.describe("matmul", a16, b16).startswith("tma_persistent ")
    # describe refuses what the call refuses: the TMA walk asked for on a batch it cannot read
    with pytest.raises(ValueError, match="variant tma_persistent takes a batch"):
        triton_impl.describe("matmul", a16, b16[..., :21], variant="tma_persistent")
    with pytest.raises(ValueError, match="variant tma_persistent takes a batch"):
        triton_impl.matmul(a16, b16[..., :21], variant="tma_persistent")


def test_batched_attention_layout(device):
    """Attention's (batch, heads, tokens, head_dim) from a (batch, tokens, heads, head_dim) buffer:
    no single stride walks the batch and head dimensions; scores q @ k^T and their product with v."""
    q = make((2, 24, 3), 1, 16, "float16", device, seed=5).reshape(2, 24, 3, 16).transpose(1, 2)
    k = make((2, 24, 3), 1, 16, "float16", device, seed=6).reshape(2, 24, 3, 16).transpose(1, 2)
    check(q, k.mT, "float16")
    p = make((2, 3), 24, 24, "float16", device, seed=7)  # (stands in for the softmax of the scores)
    check(p, k, "float16")


def test_batched_empty(device):
    a = make((0,), 5, 7, "float32", device, seed=7)
    b = make((), 7, 3, "float32", device, seed=8)
    assert triton_impl.matmul(a, b).shape == (0, 5, 3)
    a, b = make((2,), 5, 0, "float32", device, seed=7), make((2,), 0, 3, "float32", device, seed=8)
    out = poison((2, 5, 3), torch.float32, device)
    assert torch.equal(triton_impl.matmul(a, b, out=out), torch.zeros(2, 5, 3, device=device))


def test_batched_refusals(device):
    a, b = make((3,), 5, 7, "float32", device, 9), make((4,), 7, 2, "float32", device, 10)
    with pytest.raises(ValueError, match="which do not broadcast"):
        triton_impl.matmul(a, b)
    with pytest.raises(ValueError, match=r"shape\[-2\] = 7"):
        triton_impl.matmul(a, make((3,), 6, 2, "float32", device, 10))
    with pytest.raises(ValueError, match="at least 2-D"):
        triton_impl.matmul(a, torch.ones(7, device=device))
    with pytest.raises(TypeError, match="mixed dtypes"):
        triton_impl.matmul(a, make((3,), 7, 2, "float16", device, 10))
    with pytest.raises(ValueError, match="out must have shape"):
        triton_impl.matmul(a, a.mT, out=torch.empty(3, 5, 4, device=device))
    b = make((3,), 7, 2, "float32", device, 10)
    with pytest.raises(ValueError, match="takes a batch only as one 2-D product"):
        triton_impl.matmul(a, b, variant="split_k")
    with pytest.raises(ValueError, match="16-bit operands"):
        triton_impl.matmul(a, b, variant="tma_persistent")
    # a variant given a dtype it does not take, on a batch and on an empty one, in both backends
    for fn, variant, x, y in ((triton_impl.matmul, "few_rows_ws", a.half(), b.half()),  # (exact float32 only)
                              (cuda_ref.matmul, "wgmma_ws", a, b)):                   # (16-bit only)
        for batch in (slice(None), slice(0, 0)):
            with pytest.raises(TypeError, match=f"variant {variant} supports"):
                fn(x[batch], y[batch], variant=variant)
    with pytest.raises(ValueError, match="cuda_ref takes a batch as one 2-D product"):
        cuda_ref.matmul(a, b)  # (checked before the device: on the CPU too)


def test_cuda_ref_walks_a_16bit_batch_only_by_name():
    """cuda_ref on a 16-bit batch that is not one 2-D product: described as wgmma_ws's batch walk when
    asked by name, refused by variant=None's pick and call and by another variant, and a float32
    batch refused even by name (decided from metadata: no GPU needed)."""
    a, b = make((3,), 40, 48, "bfloat16", "cpu", 1), make((3,), 48, 24, "bfloat16", "cpu", 2)
    assert cuda_ref.describe("matmul", a, b, variant="wgmma_ws") == (
        "wgmma_ws: a batch of 3 products in one walk (matmul_wgmma_ws<bf16_t, false, true, 8, 1, 2, 64, true>, grid 3)")
    for call in (lambda: cuda_ref.pick("matmul", a, b), lambda: cuda_ref.describe("matmul", a, b),
                 lambda: cuda_ref.matmul(a, b), lambda: cuda_ref.describe("matmul", a, b, variant="wgmma"),
                 lambda: cuda_ref.describe("matmul", a.float(), b.float(), variant="few_rows")):
        with pytest.raises(ValueError, match="cuda_ref takes a batch as one 2-D product"):
            call()
    assert cuda_ref.describe("matmul", a, b[0]).startswith("rows as one product: ")  # (a batch that folds)


def test_cuda_batch_walk_launches_compiled_instances():
    """Every launch of cuda_ref's batch walk names an instance its file compiles, and every batch
    instance is some launch's (128-row tiles of each width, alone or in pairs, each layout, at any
    M); where a product's columns fit 64 the tiles are 64 wide (attention's p @ v at head size 64),
    where they fit 128, 128 wide (head size 128)."""
    from cuda_ref import _matmul_batched as cb
    from cuda_ref._matmul_wgmma import WGMMA_NAME_EXPRESSIONS, WS_FILE
    names = set()
    for count in (2, 64):
        for M in (16, 64, 200, 256, 300, 400, 2048):
            for N in (33, 64, 65, 128, 200, 960, 2048, 4096):
                for K in (64, 128, 4096):
                    for a_mmajor in (False, True):
                        for b_nmajor in (False, True):
                            launch = cb.batch_launch(count, M, N, K, torch.bfloat16, 132, a_mmajor, b_nmajor)
                            names.add(launch.name)
                            assert ", 2, " in launch.name  # (two consumers: 128-row tiles)
                            if N <= 128:
                                width = 64 if N <= 64 else 128
                                assert launch.name.endswith(f", {width}, true>"), (count, M, N, K, launch.name)
    batch = {n for n in WGMMA_NAME_EXPRESSIONS[WS_FILE] if n.endswith("true>") and "bf16_t" in n}
    assert names == batch, (names ^ batch)


def test_batched_variants_from_records():
    """The batch variants are the records that say so, and the default among them."""
    from triton_impl.catalog import RECORDS
    walks = {v for v, w in _matmul_batched.BATCH.items() if w}
    assert walks == {r.name for r in RECORDS if r.algorithm == "matmul" and r.batch} == {"blocked", "grouped",
                                                                                        "tma_persistent"}
    assert _matmul_batched.BATCH_DEFAULT in walks


def test_which_batches_fold_into_one_product():
    """One 2-D product: b one matrix (broadcast) and a's matrices row after row, or a batch of one
    whatever b's strides (rotary embeddings' (1, d, 1) @ (1, 1, S)); b's matrices differing, or a's
    not consecutive, do not fold."""
    from kernel_common.validate import check_batched_matmul_args, fold_batch
    a, b = make((3,), 5, 4, "float32", "cpu", 1), make((3,), 4, 6, "float32", "cpu", 2)
    for x, y, folds in ((a, b[0], True), (a[:1], b[:1], True), (a[:1].transpose(1, 2).contiguous().transpose(1, 2), b[:1], True),
                        (a, b, False), (a.transpose(0, 1).contiguous().transpose(0, 1), b[0], False)):
        two_d = fold_batch(x, y, check_batched_matmul_args(x, y, dtypes=(torch.float32,)))
        assert (two_d is not None) == folds, (x.shape, x.stride(), y.shape, y.stride())
        if folds:
            want = torch.matmul(x.double(), y.double()).reshape(-1, y.shape[-1])
            assert torch.allclose(two_d[0].double() @ two_d[1].double(), want, rtol=1e-12, atol=0)


@requires_gpu
@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_gpu_cuda_ref_takes_a_batch_that_is_one_product(dtype):
    """cuda_ref: activations (batch, tokens, K) times one weight, as a W.t() view or row-major: the
    rows as one 2-D product, its pick and description that product's."""
    a = make((3, 2), 33, 64, dtype, "cuda", 20)
    for b in (make((), 64, 48, dtype, "cuda", 21), make((), 48, 64, dtype, "cuda", 21).t()):
        with MatmulSpec.context(dtype):
            got = cuda_ref.matmul(a, b)
            cmp = MatmulSpec.compare(got, reference(a, b), (a.reshape(-1, 64),))
        assert cmp.ok and got.shape == (3, 2, 33, 48), cmp.detail
        assert cuda_ref.pick("matmul", a, b) == cuda_ref.pick("matmul", a.reshape(-1, 64), b)
        assert cuda_ref.describe("matmul", a, b).startswith("rows as one product: ")


# cuda_ref's batch walk past the 2-D cases: 128-row tiles 64, 128, 192 and 256 wide, blocks alone and
# in pairs (a pair's second block past its product's rows: 400 rows), c stored by TMA and (N off 16
# bytes) from the accumulators; K of one slice over several units a pair, where a tile's boxes go out
# back to back into the next tile's (a tile of one or three boxes: its last and the next one's first
# share a staging buffer)
CUDA_WALK_CASES = CASES + [((2,), (2,), 300, 264, 520), ((3,), (3,), 256, 136, 200), ((2,), (2,), 520, 72, 136),
                           ((6,), (6,), 512, 960, 64), ((2,), (2,), 1024, 1024, 128), ((3,), (3,), 400, 520, 136),
                           ((2,), (2,), 400, 1001, 72), ((8,), (8,), 512, 64, 512), ((3,), (3,), 600, 64, 200),
                           ((64,), (64,), 512, 64, 64), ((96,), (96,), 512, 192, 32)]


@requires_gpu
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("case", CUDA_WALK_CASES, ids=str)
def test_gpu_cuda_ref_walks_a_batch(case, dtype):
    """cuda_ref on 16-bit batches that are not one 2-D product, asked by name (variant wgmma_ws):
    wgmma_ws's batch walk through 3-D tensor maps (an operand no map reads where it lies copied, a
    broadcast one read as one matrix), each layout of a and b; describe says so; variant=None
    refuses them (the switch's bmm goes to torch until the walk is measured)."""
    if torch.cuda.get_device_capability()[0] != 9:
        pytest.skip("the batch walk is Hopper's (sm_90a)")
    a_batch, b_batch, M, N, K = case
    for a_kind, b_kind in (("contiguous", "contiguous"), ("step", "kmajor"), ("kmajor", "step"), ("heads", "heads")):
        a = operand(make(a_batch, M, K, dtype, "cuda", seed=40), a_kind)
        b = operand(make(b_batch, K, N, dtype, "cuda", seed=41), b_kind)
        check(a, b, dtype, matmul=cuda_ref.matmul, variant="wgmma_ws")
    from kernel_common.validate import check_batched_matmul_args, fold_batch
    if fold_batch(a, b, check_batched_matmul_args(a, b, dtypes=(a.dtype,))) is None:
        assert cuda_ref.describe("matmul", a, b, variant="wgmma_ws").startswith("wgmma_ws: a batch of ")
        for variant in (None, "wgmma"):
            with pytest.raises(ValueError, match="cuda_ref takes a batch as one 2-D product"):
                cuda_ref.matmul(a, b, variant=variant)
        with pytest.raises(ValueError, match="cuda_ref takes a batch as one 2-D product"):
            cuda_ref.pick("matmul", a, b)


@requires_gpu
@pytest.mark.parametrize("case", [((3,), (3,), 400, 520, 136), ((2,), (2,), 67, 48, 33)], ids=str)
def test_gpu_cuda_ref_walk_into_an_out_off_16_bytes(case):
    """The batch walk's c into a contiguous out whose base is 2 bytes past 16 (a TMA store cannot
    write there: c is stored from the accumulators), poisoned, and into an aligned one."""
    if torch.cuda.get_device_capability()[0] != 9:
        pytest.skip("the batch walk is Hopper's (sm_90a)")
    a_batch, b_batch, M, N, K = case
    a, b = make(a_batch, M, K, "float16", "cuda", seed=42), make(b_batch, K, N, "float16", "cuda", seed=43)
    ref = reference(a, b)
    for shift in (1, 0):
        buf = poison((ref.numel() + 8,), torch.float16, a.device)
        out = buf[shift:shift + ref.numel()].view(ref.shape)
        assert cuda_ref.matmul(a, b, variant="wgmma_ws", out=out) is out
        with MatmulSpec.context("float16"):
            cmp = MatmulSpec.compare(out, ref, (a.reshape(-1, K),))
        assert cmp.ok, (shift, cmp.detail)
        assert torch.isnan(buf[:shift]).all() and torch.isnan(buf[shift + ref.numel():]).all()  # nothing outside out


@requires_gpu
def test_gpu_batched_more_products_than_a_grid_axis():
    """70000 products: past a grid's y and z limits (65535); the batch walks the x axis."""
    a = make((70000,), 3, 5, "float32", "cuda", 11)
    b = make((70000,), 5, 2, "float32", "cuda", 12)
    check(a, b, "float32")


def test_batched_under_torch_compile_and_autograd(device):
    """The op's fake gives a batch's shape (a compiled function runs it), and its backward sums each
    operand's gradient over the dimensions it was broadcast along."""
    torch._dynamo.reset()
    a, b = make((2, 3), 9, 7, "float32", device, 13), make((3,), 7, 5, "float32", device, 14)
    fn = torch.compile(lambda a, b: triton_impl.matmul(a, b) * 2, fullgraph=True,
                       backend="inductor" if device == "cuda" else "aot_eager")
    with MatmulSpec.context("float32"):
        cmp = MatmulSpec.compare(fn(a, b), reference(a, b) * 2, (a.reshape(-1, 7),))
        assert cmp.ok, cmp.detail
        a64, b64 = a.double().requires_grad_(), b.double().requires_grad_()
        torch.matmul(a64, b64).sum().backward()
        a.requires_grad_(), b.requires_grad_()
        triton_impl.matmul(a, b).sum().backward()
        for got, want, t in ((a.grad, a64.grad, b.reshape(-1, 5)), (b.grad, b64.grad, a.reshape(-1, 7))):
            assert got.shape == want.shape
            cmp = MatmulSpec.compare(got, want, (t,))
            assert cmp.ok, cmp.detail


def test_the_switch_routes_bmm(device):
    """The switch's bmm takes torch.bmm's calls (one batch extent): Triton's runs them, with the 2-D
    tolerance; baddbmm into an ignored tensor (beta 0) too; a batch mismatch gets torch's error; a
    bias added (beta 1) goes to torch."""
    sw = triton_impl.switch
    a, b = make((3,), 17, 9, "float32", device, 15), make((3,), 9, 13, "float32", device, 16)
    sw.reset_counts()
    with MatmulSpec.context("float32"):
        for got in (sw._bmm(a, b), sw._baddbmm(torch.full((3, 17, 13), float("nan"), device=device), a, b, beta=0)):
            cmp = MatmulSpec.compare(got, reference(a, b), (a.reshape(-1, 9),))
            assert cmp.ok, cmp.detail
    assert sw.counts() == {"bmm": 2}
    with pytest.raises(RuntimeError):
        sw._bmm(a, b[:1])
    bias = make((3,), 17, 13, "float32", device, 17)
    got = sw._baddbmm(bias, a, b)
    assert torch.allclose(got, torch.baddbmm(bias, a, b)) and sw.counts()["baddbmm fallback"] == 1


@requires_gpu
@pytest.mark.parametrize("backend", ["triton", "cuda"])
def test_gpu_the_switch_routes_torch_bmm(backend):
    """torch.bmm and torch.matmul on batches, with the switch on: Triton's kernels take them,
    cuda_ref's (variant=None: 2-D products only) hand them to torch."""
    mod = {"triton": triton_impl, "cuda": cuda_ref}[backend]
    a, b = make((4,), 65, 64, "bfloat16", "cuda", 18), make((4,), 64, 33, "bfloat16", "cuda", 19)
    want = reference(a, b)  # (float64, outside the switch: a float64 bmm would count as a fallback)
    mod.switch.reset_counts()
    with mod.enabled():
        got = torch.bmm(a, b), torch.matmul(a[None], b[None])
        one = torch.bmm(a[:1], b[:1])  # a batch of one: one 2-D product for both backends
        counts = mod.switch.counts()
    with MatmulSpec.context("bfloat16"):
        for g in got:
            cmp = MatmulSpec.compare(g.reshape(4, 65, 33), want, (a.reshape(-1, 64),))
            assert cmp.ok, cmp.detail
        cmp = MatmulSpec.compare(one, want[:1], (a[0],))
        assert cmp.ok, cmp.detail
    assert counts == ({"bmm": 3} if backend == "triton" else {"bmm fallback": 2, "bmm": 1})


def test_batched_int32_sums_exactly(device):
    """int32 (no dot takes it: the kernel's elementwise product summed) over a batch, exact."""
    g = torch.Generator(device=device).manual_seed(22)
    a = torch.randint(-99, 100, (3, 17, 9), generator=g, device=device, dtype=torch.int32)
    b = torch.randint(-99, 100, (3, 9, 13), generator=g, device=device, dtype=torch.int32)
    a[a == 0], b[b == 0] = 7, -5  # (never zero)
    out = poison((3, 17, 13), torch.int32, device)
    assert triton_impl.matmul(a, b, out=out) is out
    assert torch.equal(out, torch.matmul(a.double(), b.double()).to(torch.int32))


def test_batched_launches_in_chunks_past_a_grid(device, monkeypatch):
    """A batch whose tiles pass a grid's extent (MAX_PROGRAMS, lowered here) takes several launches,
    each over its own products: whole chunks and a last, shorter one."""
    monkeypatch.setattr(_matmul_batched, "MAX_PROGRAMS", 2 * 3)  # 2 products a launch of 3 tiles each
    a = make((5,), 70, 9, "float32", device, 23)  # (70 rows: 3 tiles of the interpreter's 32)
    b = make((5,), 9, 11, "float32", device, 24)
    check(a, b, "float32", variant="blocked")


@pytest.mark.parametrize("dtype", ["float32", "float16"])
@pytest.mark.parametrize("kind", ["contiguous", "kmajor", "step"])
@pytest.mark.parametrize("M,N,K", [(70, 1, 33), (1, 70, 33), (1, 1, 40)], ids=str)
def test_gemv_batches(M, N, K, kind, dtype, device):
    """Products of one column or one row (transformers' batched_mm experts at decode: (S, out, in)
    @ (S, in, 1)): variant=None picks BATCH_DEFAULT, which runs the GEMV kernel over the batch where
    the matrix operand is row- or column-major (describe says so), its tile walk where it is
    neither; right either way."""
    a = make((5,), M, K, dtype, device, seed=3)
    b = make((5,), K, N, dtype, device, seed=4)
    if N == 1:
        a = operand(a, kind)
    else:
        b = operand(b, kind)
    check(a, b, dtype)
    assert _matmul_batched.pick(a, b) == _matmul_batched.BATCH_DEFAULT
    gemv = "GEMV kernel" in _matmul_batched.describe(a, b)
    assert gemv == (kind != "step" or (M == 1 and N == 1))
