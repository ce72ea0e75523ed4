"""Grouped matmul (triton_impl.grouped_mm; cuda_ref.grouped_mm on a Hopper GPU),
mixture-of-experts: against a float64 product per group with matmul's tolerance, outputs poisoned
(rows past the last group keep the poison), both layouts of b, empty and uneven groups, copies
where descriptors cannot read, refusals. CPU (interpreter) and GPU."""
import pytest
import torch

import triton_impl
from bench.specs import MatmulSpec, max_rel_err, poison
from conftest import HAS_GPU, requires_gpu

HOPPER = HAS_GPU and torch.cuda.get_device_capability() == (9, 0)


@pytest.fixture(params=["triton", "cuda"])
def package(request):
    """Each backend package with a grouped_mm (cuda_ref's: sm_90a code, a Hopper GPU only)."""
    if request.param == "cuda":
        if not HOPPER:
            pytest.skip("cuda_ref's grouped_mm needs a Hopper GPU (sm_90a wgmma)")
        import cuda_ref
        return cuda_ref
    return triton_impl


@pytest.fixture
def grouped_mm(package):
    return package.grouped_mm


def make(rows, cols, dtype, device, seed, groups=None):
    """(rows, cols), or (groups, rows, cols), of matmul's test values (never zero, |c| near 1)."""
    count = groups or 1
    a, _ = MatmulSpec.make_inputs((count * rows, 1, cols), getattr(torch, dtype), device, seed)
    return a.reshape(count, rows, cols) if groups else a


def reference(a, b, offs):
    """float64 rows of every group (rows past offs[-1]: none)."""
    ends = offs.tolist()
    starts = [0] + ends[:-1]
    return torch.cat([a[s:e].double() @ b[g].double() for g, (s, e) in enumerate(zip(starts, ends))])


def check(a, b, offs, dtype, grouped_mm=triton_impl.grouped_mm):
    with MatmulSpec.context(dtype):
        end = int(offs[-1]) if len(offs) else 0
        out = poison((a.shape[0], b.shape[2]), a.dtype, a.device)
        kept = out[end:].clone()
        assert grouped_mm(a, b, offs, out=out) is out
        cmp = MatmulSpec.compare(out[:end], reference(a, b, offs), (a,))
        assert cmp.ok, cmp.detail
        assert torch.equal(out[end:].view(torch.int16), kept.view(torch.int16))  # (NaN poison: compare bits)


def ends(sizes, device):
    return torch.tensor(sizes, dtype=torch.int32, device=device).cumsum(0, dtype=torch.int32)


# (group sizes, K, N): uneven, empty groups first, last and between, one group, a group of one
# row; K and N off the tiles
CASES = [
    ([30, 0, 70, 40], 40, 24),
    ([0, 0, 5], 64, 48),
    ([129], 72, 40),
    ([1, 200, 0, 3, 0], 48, 56),
    ([30, 70], 37, 24),  # a's rows off 16 bytes: copied into padded rows (copy_rows)
]


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("kmajor", [False, True], ids=["row", "kt"])
@pytest.mark.parametrize("case", CASES, ids=str)
def test_grouped(grouped_mm, case, kmajor, dtype, device):
    sizes, K, N = case
    a = make(sum(sizes) + 7, K, dtype, device, 1)  # (7 rows past the last group: not written)
    b = make(N, K, dtype, device, 2, len(sizes)).mT if kmajor else make(K, N, dtype, device, 2, len(sizes))
    check(a, b, ends(sizes, device), dtype, grouped_mm)


def test_grouped_copies_what_descriptors_cannot_read(grouped_mm, device):
    """Rows of a off 16 bytes (K = 33), a column-major a, every other column of b: copied first."""
    sizes = [17, 0, 40]
    offs = ends(sizes, device)
    a = make(64, 33, "float16", device, 3)
    b = make(33, 24, "float16", device, 4, 3)
    check(a, b, offs, "float16", grouped_mm)
    check(a.t().contiguous().t(), b, offs, "float16", grouped_mm)
    wide = make(40, 48, "float16", device, 5, 3)
    check(make(64, 40, "float16", device, 6), wide[..., ::2], offs, "float16", grouped_mm)


def test_grouped_reads_strided_offsets(grouped_mm, device):
    """offs as every other element of a longer tensor (a view nobody made contiguous)."""
    a, b = make(60, 32, "float16", device, 15), make(32, 16, "float16", device, 16, 3)
    both = torch.stack([ends([10, 0, 50], device), torch.full((3,), -7, dtype=torch.int32, device=device)], 1)
    check(a, b, both[:, 0], "float16", grouped_mm)


@requires_gpu
@pytest.mark.parametrize("kmajor", [False, True], ids=["row", "kt"])
def test_gpu_grouped_many_tiles(grouped_mm, kmajor):
    """Mixtral-like experts with uneven rows: several tiles a block (the ring's phases across
    tiles and groups), groups ending inside a tile, K off the k-slice."""
    sizes, K, N = [700, 0, 1500, 31, 900, 2, 0, 1200], 1000, 1800
    a = make(sum(sizes) + 5, K, "bfloat16", "cuda", 17)
    b = make(N, K, "bfloat16", "cuda", 18, len(sizes)).mT if kmajor else make(K, N, "bfloat16", "cuda", 18, len(sizes))
    check(a, b, ends(sizes, "cuda"), "bfloat16", grouped_mm)


def test_grouped_grid_covers_any_split():
    """The grid counts the tiles of the worst split: a few rows over many groups (decode) get a
    program per SM, not the dozen an even split would make."""
    from kernel_common.grouped import grid_size
    assert grid_size(64, 1536, 128, 128, 128, 132) == 128  # (up to 64 x 12 tiles: 6 waves of 128)
    assert grid_size(128, 256, 1, 128, 128, 132) == 2      # (one group: its own tiles)
    assert grid_size(8192, 28672, 8, 128, 128, 132) == 132  # (71 x 224 tiles: every SM)


def test_grouped_matches_torch_grouped_mm(grouped_mm, device):
    """The same rows as torch.nn.functional.grouped_mm (bf16, weights as nn.Linear's (G, N, K))."""
    F = pytest.importorskip("torch.nn.functional")
    if not hasattr(F, "grouped_mm"):
        pytest.skip("torch has no grouped_mm")
    offs = ends([24, 0, 40, 8], device)
    a, w = make(72, 64, "bfloat16", device, 7), make(32, 64, "bfloat16", device, 8, 4)
    ours = grouped_mm(a, w.mT, offs)
    theirs = F.grouped_mm(a, w.mT, offs=offs)
    with MatmulSpec.context("bfloat16"):
        cmp = MatmulSpec.compare(ours, theirs.double(), (a,))
    assert cmp.ok, cmp.detail


def test_grouped_refusals(grouped_mm, device):
    a, b = make(10, 16, "float16", device, 9), make(16, 8, "float16", device, 10, 2)
    offs = ends([4, 6], device)
    with pytest.raises(TypeError, match="offs has dtype"):
        grouped_mm(a, b, offs.long())
    with pytest.raises(ValueError, match="one end per group"):
        grouped_mm(a, b, offs[:1])
    with pytest.raises(ValueError, match="must equal b's rows"):
        grouped_mm(a[:, :8], b, offs)
    with pytest.raises(TypeError, match="mixed dtypes"):
        grouped_mm(a, b.bfloat16(), offs)
    with pytest.raises(TypeError, match="expected one of"):
        grouped_mm(a.float(), b.float(), offs)
    with pytest.raises(ValueError, match="must be 3-D"):
        grouped_mm(a, b[0], offs)
    with pytest.raises(ValueError, match="variant must be"):
        grouped_mm(a, b, offs, variant="nope")
    with pytest.raises(ValueError, match="out must be contiguous"):
        grouped_mm(a, b, offs, out=torch.empty(10, 16, dtype=torch.float16, device=device)[:, ::2])


def test_grouped_empty(grouped_mm, device):
    a, b = make(10, 16, "float16", device, 9), make(16, 8, "float16", device, 10, 2)
    assert grouped_mm(a[:0], b, ends([0, 0], device)).shape == (0, 8)
    out = poison((10, 8), torch.float16, device)
    assert torch.equal(grouped_mm(a[:, :0], b[:, :0], ends([4, 6], device), out=out),
                       torch.zeros(10, 8, dtype=torch.float16, device=device))


@requires_gpu
def test_gpu_grouped_offsets_past_the_rows_store_nothing_outside(grouped_mm):
    """Offsets that pass T or go down (bad input the call cannot check without waiting for the
    GPU): clamped, so c's neighbours in memory keep their values."""
    a, b = make(50, 64, "bfloat16", "cuda", 11), make(64, 32, "bfloat16", "cuda", 12, 3)
    buf = poison((70, 32), torch.bfloat16, "cuda")
    before = buf.clone()
    out = buf[10:60]
    grouped_mm(a, b, torch.tensor([30, 10, 500], dtype=torch.int32, device="cuda"), out=out)
    torch.cuda.synchronize()
    assert torch.equal(buf[:10].view(torch.int16), before[:10].view(torch.int16))
    assert torch.equal(buf[60:].view(torch.int16), before[60:].view(torch.int16))
    with MatmulSpec.context("bfloat16"):
        cmp = MatmulSpec.compare(out[:30], reference(a[:30], b[:1], ends([30], "cuda")), (a,))
    assert cmp.ok, cmp.detail


@requires_gpu
def test_gpu_grouped_one_launch_for_any_split(package):
    """One plan for every split of the tokens (the sizes are on the GPU): one launch, no sync."""
    a, b = make(300, 64, "bfloat16", "cuda", 13), make(64, 48, "bfloat16", "cuda", 14, 4)
    check(a, b, ends([75, 75, 75, 75], "cuda"), "bfloat16", package.grouped_mm)
    before = len(package._grouped._PLANS)
    for sizes in ([300, 0, 0, 0], [0, 1, 2, 297], [100, 100, 50, 50]):
        check(a, b, ends(sizes, "cuda"), "bfloat16", package.grouped_mm)
    assert len(package._grouped._PLANS) == before


def grad_reference(a, b, offs, w):
    """float64 gradients of sum(grouped_mm(a, b, offs) * w): a's rows w_g @ b[g].T (rows past
    offs[-1]: zero), b[g]'s a_g.T @ w_g (an empty group's: zero)."""
    da = torch.zeros(a.shape, dtype=torch.float64, device=a.device)
    db = torch.zeros(b.shape, dtype=torch.float64, device=a.device)
    start = 0
    for g, end in enumerate(offs.tolist()):
        da[start:end] = w[start:end].double() @ b[g].double().T
        db[g] = a[start:end].double().T @ w[start:end].double()
        start = end
    return da, db


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("kmajor", [False, True], ids=["row", "kt"])
@pytest.mark.parametrize("case", CASES, ids=str)
def test_grouped_gradients(grouped_mm, case, kmajor, dtype, device):
    """Both gradients against float64, each to matmul's tolerance for its reduction (N for a's, a
    group's rows for b's); a's rows past the last group get zero; b's in b's own strides (else
    autograd copies it into them: a pass over all of b)."""
    sizes, K, N = case
    a = make(sum(sizes) + 7, K, dtype, device, 3).requires_grad_()
    b = make(N, K, dtype, device, 4, len(sizes)).mT if kmajor else make(K, N, dtype, device, 4, len(sizes))
    b = b.detach().requires_grad_()
    offs = ends(sizes, device)
    end = int(offs[-1])
    w = make(sum(sizes) + 7, N, dtype, device, 5)
    c = grouped_mm(a, b, offs)
    assert c.grad_fn is not None
    loss = (c[:end].float() * w[:end].float()).sum()
    assert torch.autograd.grad(loss, b, retain_graph=True)[0].stride() == b.stride()
    loss.backward()
    da, db = grad_reference(a.detach(), b.detach(), offs, w)
    assert a.grad.shape == a.shape and b.grad.shape == b.shape
    assert torch.count_nonzero(a.grad[end:]) == 0
    with MatmulSpec.context(dtype):
        for got, ref, length in ((a.grad, da, N), (b.grad, db, max(sizes))):
            tol = MatmulSpec.tolerance(dtype, length)
            assert max_rel_err(got, ref) <= tol, (max_rel_err(got, ref), tol)


def test_grouped_weight_grad_of_strided_operands(package, device):
    """weight_grad reads a and the gradient by their strides (a column slice, a broadcast gradient)."""
    weight_grad = package._grouped.weight_grad
    sizes, K, N = [5, 0, 9], 24, 16
    wide = make(14, 2 * K, "float16", device, 6)
    a = wide[:, ::2]
    grad = make(1, N, "float16", device, 7).expand(14, N)
    offs = ends(sizes, device)
    _, db = grad_reference(a, torch.zeros(3, K, N, dtype=torch.float16, device=device), offs, grad)
    got = weight_grad(a, grad, offs)
    assert got.shape == (3, K, N) and max_rel_err(got, db) <= MatmulSpec.tolerance("float16", 9)
    assert torch.count_nonzero(got[1]) == 0
    out = poison((3, K, N), torch.float16, device)
    assert weight_grad(a, grad, offs, out=out) is out and torch.equal(out, got)
    with pytest.raises(ValueError, match="grad's rows"):
        weight_grad(a, grad[:13], offs)
    with pytest.raises(TypeError):
        weight_grad(a, grad.float(), offs)


@requires_gpu
def test_gpu_grouped_weight_grad_several_tiles_a_block(package):
    """b's gradient where each block takes several tiles, most groups ending inside a k-slice (the
    last slice's rows past the group cut while the other warpgroup may still store a tile) and one
    group empty: 8 groups x 4 x 8 tiles of 128 x 256 on at most 132 blocks."""
    sizes, K, N = [70, 133, 0, 64, 1, 200, 90, 6], 512, 2048
    a, grad = make(sum(sizes) + 3, K, "bfloat16", "cuda", 19), make(sum(sizes) + 3, N, "bfloat16", "cuda", 20)
    offs = ends(sizes, "cuda")
    _, db = grad_reference(a, torch.zeros(len(sizes), K, N, dtype=torch.bfloat16, device="cuda"), offs, grad)
    out = poison((len(sizes), K, N), torch.bfloat16, "cuda")
    package._grouped.weight_grad(a, grad, offs, out=out)
    assert max_rel_err(out, db) <= MatmulSpec.tolerance("bfloat16", max(sizes))
    assert torch.count_nonzero(out[2]) == 0


def test_grouped_out_refused_with_grad(grouped_mm, device):
    a = make(8, 16, "float16", device, 8).requires_grad_()
    b = make(16, 8, "float16", device, 9, 2)
    with pytest.raises(ValueError, match="out must be None"):
        grouped_mm(a, b, ends([3, 5], device), out=torch.empty(8, 8, dtype=torch.float16, device=device))


def test_the_switch_runs_grouped_mm_forms(package, device):
    """The switch's aten::_grouped_mm, called directly (registered for CUDA tensors on Hopper):
    2-D x 3-D by grouped_mm's plan and 2-D x 2-D (offs split K, b's gradient) by weight_grad, each
    counted; the other forms, a bias or another out_dtype by torch's products a group at a time."""
    from kernel_common.switch import grouped_mm_loop
    sw = package._switch
    sw.reset_counts()
    sizes, K, N = [5, 0, 9, 3], 24, 16
    offs = ends(sizes, device)
    a = make(17, K, "float16", device, 10)
    b = make(K, N, "float16", device, 11, len(sizes))
    with MatmulSpec.context("float16"):
        c = sw._grouped_mm(a, b, offs)
        assert MatmulSpec.compare(c, reference(a, b, offs), (a,)).ok
        # 2-D x 2-D: a (M, T) and g (T, N), offs over T: c[g] = a[:, rows of g] @ g[rows of g]
        at, grad = make(K, 17, "float16", device, 12), make(17, N, "float16", device, 13)
        c2 = sw._grouped_mm(at, grad, offs)
        ref2 = grouped_mm_loop(at.double(), grad.double(), offs)
        assert c2.shape == (len(sizes), K, N)
        assert max_rel_err(c2, ref2) <= MatmulSpec.tolerance("float16", max(sizes))
    assert sw.counts() == {"grouped_mm": 2}
    # 3-D x 2-D (offs split b's columns) falls back, and matches its float64 product
    a3, b2 = make(K, K, "float16", device, 14, len(sizes)), make(K, 17, "float16", device, 15)
    c3 = sw._grouped_mm(a3, b2, offs)
    ref3 = torch.cat([a3[g].double() @ b2[:, s:e].double() for g, (s, e) in
                      enumerate(zip([0, *offs.tolist()[:-1]], offs.tolist()))], dim=1)
    assert max_rel_err(c3, ref3) <= MatmulSpec.tolerance("float16", K)
    assert sw.counts()["grouped_mm fallback"] == 1
    with pytest.raises(RuntimeError, match="Bias tensor provided"):
        sw._grouped_mm(a, b, offs, bias=torch.zeros(len(sizes), N, dtype=a.dtype, device=device))
    sw.reset_counts()


@requires_gpu
def test_gpu_the_switch_routes_f_grouped_mm_forward_and_backward(package):
    """F.grouped_mm with the switch on (Hopper: aten::_grouped_mm routed): forward and both
    gradients match torch's own, and every product of the step ran ours."""
    import torch.nn.functional as F
    if torch.cuda.get_device_capability()[0] != 9:
        pytest.skip("the grouped kernels are Hopper's")
    sizes, K, N = [40, 0, 70, 30], 64, 48
    offs = ends(sizes, "cuda")
    a = make(140, K, "bfloat16", "cuda", 16).requires_grad_()
    b = make(K, N, "bfloat16", "cuda", 17, len(sizes)).requires_grad_()
    grad = make(140, N, "bfloat16", "cuda", 18)
    c = F.grouped_mm(a, b, offs=offs)
    c.backward(grad)
    want = (c.detach(), a.grad.clone(), b.grad.clone())
    a.grad = b.grad = None
    package._switch.reset_counts()
    with package.enabled():
        c = F.grouped_mm(a, b, offs=offs)
        c.backward(grad)
    counts = package._switch.counts()
    assert counts.get("grouped_mm", 0) >= 3 and not counts.get("grouped_mm fallback"), counts
    for got, ref, length in ((c, want[0], K), (a.grad, want[1], N), (b.grad, want[2], max(sizes))):
        assert max_rel_err(got, ref.double()) <= 2 * MatmulSpec.tolerance("bfloat16", length)
