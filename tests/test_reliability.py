"""Wrong answers and crashes an ordinary program meets (issue 50): torch's new float32 precision
API, views whose values are not their memory (the negative bit, zero tensors), meta operands on
the autograd path, junk variants there, the switch's scope across threads and blocks, and the
errors it raises for bad shapes, and CUDA graphs that share wgmma_ws's hand-over buffers.

Triton runs on the CPU under the interpreter where there is no GPU; cuda_ref needs one.
"""

from __future__ import annotations

import threading

import pytest
import torch

import cuda_ref
import triton_impl
from bench.specs import SPECS
from conftest import HAS_GPU, requires_gpu
from kernel_common import float32_matmul_precision
from kernel_common import util as kernel_util

DEV = "cuda" if HAS_GPU else "cpu"
BACKENDS = {"triton": triton_impl, **({"cuda": cuda_ref} if HAS_GPU else {})}


@pytest.fixture
def new_precision_api():
    """Set cuBLAS's float32 precision through torch's per-backend API (which makes the old getter
    raise), and restore the old API's setting after."""
    if not hasattr(torch.backends.cuda.matmul, "fp32_precision"):
        pytest.skip("this torch has no per-backend fp32_precision")
    saved = float32_matmul_precision()
    torch.backends.cuda.matmul.fp32_precision = "tf32"
    try:
        yield
    finally:
        torch.set_float32_matmul_precision(saved)
    assert torch.get_float32_matmul_precision() == saved


def neg_view(t: torch.Tensor) -> torch.Tensor:
    """A view of ``t``'s memory with torch's negative bit: its values are -t."""
    v = torch._neg_view(t)
    assert v.is_neg()
    return v


def ref_matmul(a, b):
    return (a.resolve_neg().double() @ b.resolve_neg().double())


def assert_close(got, want, tol, what=""):
    scale = want.double().abs().max().item() or 1.0
    err = (got.double() - want.double()).abs().max().item() / scale
    assert err <= tol, f"{what}: max error {err:.3g}, tolerance {tol:.3g}"


# ---- 1. torch's new float32 precision API --------------------------------------------------------
def test_precision_reads_both_torch_apis(new_precision_api):
    with pytest.raises(RuntimeError):  # the old getter, which the code used to call
        torch._C._get_float32_matmul_precision()
    assert float32_matmul_precision() == "high"
    torch.backends.cuda.matmul.fp32_precision = "ieee"
    assert float32_matmul_precision() == "highest"
    torch.set_float32_matmul_precision("high")
    assert float32_matmul_precision() == "high"


def test_float32_matmul_under_the_new_api_runs_and_plans_once(new_precision_api):
    torch.manual_seed(0)
    a, b = torch.randn(33, 20, device=DEV), torch.randn(20, 17, device=DEV)
    plans = triton_impl._matmul._PLANS
    plans.clear()
    for _ in range(5):
        c = triton_impl.matmul(a, b)
    assert len(plans) == 1, "one plan for five identical calls"
    assert_close(c, ref_matmul(a, b), SPECS["matmul"].tolerance("tf32", 20), "matmul")


def test_the_switch_under_the_new_api_plans_once_and_falls_back_for_float64(new_precision_api):
    """The switch's table, called directly as the dispatcher would (CPU tensors reach it this way)."""
    torch.manual_seed(0)
    sw = triton_impl._switch
    sw.matmul_plans.clear()
    a, b = torch.randn(9, 20, device=DEV), torch.randn(20, 7, device=DEV)
    for _ in range(5):
        sw._mm(a, b)
    assert len(sw.matmul_plans) == 1
    assert torch.equal(sw._mm(a.double(), b.double()), a.double() @ b.double())
    bias = torch.randn(7, dtype=torch.float64, device=DEV)
    assert torch.equal(sw._addmm(bias, a.double(), b.double()), torch.addmm(bias, a.double(), b.double()))


# ---- 3. the negative bit and zero tensors ---------------------------------------------------------
@pytest.mark.parametrize("backend", list(BACKENDS))
def test_matmul_and_gemv_read_negative_views_by_value(backend):
    mod = BACKENDS[backend]
    z = torch.randn(21, 18, dtype=torch.complex64, device=DEV)
    a = z.conj().imag  # an ordinary public view with the negative bit
    assert a.is_neg()
    b = torch.randn(18, 11, device=DEV)
    x = torch.randn(18, device=DEV)
    tol = SPECS["matmul"].tolerance("float32", 18)
    assert_close(mod.matmul(a, b), ref_matmul(a, b), tol, "a negative")
    w = neg_view(torch.randn(11, 18, device=DEV))  # a weight's W.t(), negative
    assert_close(mod.matmul(a.resolve_neg(), w.t()), ref_matmul(a, w.t()), tol, "b negative")
    assert_close(mod.gemv(a, x), a.resolve_neg().double() @ x.double(), tol, "gemv, a negative")
    assert_close(mod.gemv(a.resolve_neg(), neg_view(x)), a.resolve_neg().double() @ -x.double(), tol, "x negative")


@pytest.mark.parametrize("backend", list(BACKENDS))
def test_transpose_of_a_negative_view_is_exact_first_and_after_a_plan(backend):
    mod = BACKENDS[backend]
    t = torch.randn(37, 29, device=DEV)
    mod.transpose(t)  # a plan for this metadata exists first
    v = neg_view(t)
    assert torch.equal(mod.transpose(v), -t.t())
    assert torch.equal(mod.transpose(v), -t.t())


@pytest.mark.parametrize("backend", list(BACKENDS))
def test_zero_tensors_read_as_zeros(backend):
    mod = BACKENDS[backend]
    zero = torch._efficientzerotensor((13, 9), device=DEV)
    b = torch.randn(9, 5, device=DEV)
    assert torch.equal(mod.matmul(zero, b), torch.zeros(13, 5, device=DEV))
    assert torch.equal(mod.gemv(zero, torch.randn(9, device=DEV)), torch.zeros(13, device=DEV))
    assert torch.equal(mod.transpose(zero), torch.zeros(9, 13, device=DEV))


@pytest.mark.parametrize("backend", list(BACKENDS))
def test_an_out_whose_values_are_not_its_memory_is_refused(backend):
    mod = BACKENDS[backend]
    a, b = torch.randn(6, 4, device=DEV), torch.randn(4, 3, device=DEV)
    out = torch.empty(6, 3, device=DEV)
    mod.matmul(a, b, out=out)  # a plan for this out's metadata exists first
    with pytest.raises(ValueError, match="negative bit"):
        mod.matmul(a, b, out=neg_view(out))
    with pytest.raises(ValueError, match="zero tensor"):
        mod.matmul(a, b, out=torch._efficientzerotensor((6, 3), device=DEV))
    with pytest.raises(ValueError, match="negative bit"):
        mod.transpose(a, out=neg_view(torch.empty(4, 6, device=DEV)))


@pytest.mark.parametrize("backend", list(BACKENDS))
def test_a_negative_view_of_a_dtype_no_function_takes_gets_the_dtype_error(backend):
    """Validation, not resolution, answers a dtype no function takes (torch cannot negate bool)."""
    mod = BACKENDS[backend]
    with pytest.raises(TypeError):
        mod.transpose(neg_view(torch.zeros(2, 3, dtype=torch.bool, device=DEV)))
    with pytest.raises(TypeError):
        mod.matmul(neg_view(torch.zeros(2, 3, dtype=torch.bool, device=DEV)), torch.zeros(3, 2, device=DEV))
    with pytest.raises(TypeError):  # the autograd path: the op's dispatch would negate it first
        mod.matmul(torch.zeros(2, 3, device=DEV, requires_grad=True),
                   neg_view(torch.zeros(3, 2, dtype=torch.bool, device=DEV)))


@pytest.mark.parametrize("backend", list(BACKENDS))
def test_an_out_over_a_negative_inputs_memory_is_refused(backend):
    """The plan checks out against the resolved copy; the caller's memory is what out must avoid."""
    mod = BACKENDS[backend]
    buf = torch.tensor([1., 2., 3., 4.], device=DEV)
    with pytest.raises(ValueError, match="alias"):
        mod.transpose(neg_view(buf.view(2, 2)), out=buf.view(2, 2))
    with pytest.raises(ValueError, match="alias"):
        mod.gemv(neg_view(buf.view(2, 2)), torch.ones(2, device=DEV), out=buf[:2])
    assert torch.equal(buf, torch.tensor([1., 2., 3., 4.], device=DEV))


@requires_gpu
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_cuda_matmul_into_an_out_off_16_bytes(dtype):
    """The tensor-core kernels store from an aligned base: an out one element on gets the result by
    a copy (it raised a misaligned address and lost the context)."""
    a = torch.randn(5, 7, device="cuda", dtype=dtype)
    b = torch.randn(7, 6, device="cuda", dtype=dtype)
    for variant in (None, *[v for v in cuda_ref.variants("matmul") if v in ("wmma", "mma_sync", "mma_pipelined")]):
        buf = torch.zeros(31, device="cuda", dtype=dtype)
        out = buf[1:31].view(5, 6)
        cuda_ref.matmul(a, b, variant=variant, out=out)
        torch.cuda.synchronize()
        assert_close(out, a.double() @ b.double(), SPECS["matmul"].tolerance(str(dtype)[6:], 7), str(variant))
        assert buf[0] == 0


@pytest.mark.parametrize("backend", list(BACKENDS))
def test_a_negative_view_that_requires_grad_gets_its_gradients(backend):
    mod = BACKENDS[backend]
    torch.manual_seed(0)
    leaf = torch.randn(8, 6, device=DEV, requires_grad=True)
    a = neg_view(leaf)  # differentiable: d(-leaf)
    b = torch.randn(6, 5, device=DEV)
    c = mod.matmul(a, b)
    c.sum().backward()
    want = -torch.ones(8, 5, device=DEV, dtype=torch.float64) @ b.double().t()
    assert_close(c, ref_matmul(a.detach(), b), SPECS["matmul"].tolerance("float32", 6), "forward")
    assert_close(leaf.grad, want, SPECS["matmul"].tolerance("float32", 5), "grad")


# ---- 5. meta operands on the autograd path, 7. junk variants there --------------------------------
@pytest.mark.parametrize("backend", list(BACKENDS))
def test_a_meta_operand_is_refused_on_the_autograd_path_too(backend):
    mod = BACKENDS[backend]
    a = torch.randn(4, 5, device=DEV, requires_grad=True)
    for args in [(a, torch.randn(5, 3, device="meta")), (a.detach(), torch.randn(5, 3, device="meta")),
                 (torch.randn(4, 5, device="meta", requires_grad=True), torch.randn(5, 3, device="meta"))]:
        with pytest.raises(ValueError, match="meta"):
            mod.matmul(*args)
    with pytest.raises(ValueError, match="meta"):
        mod.gemv(a, torch.randn(5, device="meta"))
    with pytest.raises(ValueError, match="meta"):
        mod.transpose(torch.randn(4, 5, device="meta", requires_grad=True))


@pytest.mark.parametrize("backend", list(BACKENDS))
@pytest.mark.parametrize("variant", [3, ["grouped"], 2.5])
def test_a_junk_variant_gets_the_same_error_with_and_without_grad(backend, variant):
    mod = BACKENDS[backend]
    a, b = torch.randn(4, 5, device=DEV), torch.randn(5, 3, device=DEV)
    for x in (a, a.requires_grad_()):
        with pytest.raises(ValueError, match="variant must be None or one of"):
            mod.matmul(x, b, variant=variant)
        with pytest.raises(ValueError, match="variant must be None or one of"):
            mod.transpose(x, variant=variant)


# ---- 6. the switch's scope and its errors -----------------------------------------------------------
def test_the_switch_blocks_count_across_threads_and_enable_outlasts_a_block():
    sw = triton_impl._switch
    assert not sw.is_enabled()
    inside, leave_b = threading.Event(), threading.Event()
    seen = []

    def thread_b():
        with triton_impl.enabled():
            inside.set()
            leave_b.wait(10)
            seen.append(sw.is_enabled())

    tb = threading.Thread(target=thread_b)
    tb.start()
    inside.wait(10)
    with triton_impl.enabled():  # thread A's block opens and closes while B's is open
        with triton_impl.enabled():  # nested
            pass
        assert sw.is_enabled()
    assert sw.is_enabled(), "A's exit must not switch off B's open block"
    leave_b.set()
    tb.join()
    assert seen == [True]
    assert not sw.is_enabled()

    with triton_impl.enabled():
        triton_impl.enable()
    assert sw.is_enabled(), "enable() inside a block outlasts it"
    with triton_impl.enabled():
        pass
    assert sw.is_enabled()
    triton_impl.disable()
    assert not sw.is_enabled()


def test_the_switch_gives_bad_shapes_torchs_error():
    """A call our checks refuse goes to torch's kernel, which raises torch's own RuntimeError (what
    code around a model catches)."""
    sw = triton_impl._switch
    a, b = torch.randn(4, 5, device=DEV), torch.randn(6, 3, device=DEV)
    with pytest.raises(RuntimeError):
        sw._mm(a, b)
    with pytest.raises(RuntimeError):
        sw._addmm(torch.randn(3, device=DEV), a, b)
    with pytest.raises(RuntimeError):
        sw._mv(a, torch.randn(6, device=DEV))


@requires_gpu
@pytest.mark.parametrize("backend", ["triton", "cuda"])
def test_the_switch_with_negative_views_and_bad_shapes_on_the_gpu(backend):
    mod = BACKENDS[backend]
    a = torch.randn(16, 64, dtype=torch.complex64, device="cuda").conj().imag
    b = torch.randn(64, 32, device="cuda")
    with mod.enabled():
        got = torch.mm(a, b)
        with pytest.raises(RuntimeError):
            torch.mm(a, b.t())
    assert_close(got, ref_matmul(a, b), SPECS["matmul"].tolerance("float32", 64), "mm")


def exact_addmm_case(M, N, K, dtype, *, bias_shape, seed=0):
    """Operands whose float32 sums are exact (small integers) and whose product is not a 16-bit
    number, plus a 16-bit bias with a fraction: the exact sum rounded once differs from the
    product rounded and then added (rounded twice) in many elements."""
    g = torch.Generator().manual_seed(seed)
    top = 7 if dtype == torch.bfloat16 else 25  # sums past 256 (bfloat16) or 2048 (float16): not all exact there
    a = torch.randint(-top, top + 1, (M, K), generator=g).to(dtype)
    b = torch.randint(-top, top + 1, (K, N), generator=g).to(dtype)
    bias = (torch.randint(-256, 257, bias_shape, generator=g) / 64).to(dtype)  # exact in both, and in float32 sums
    exact = a.double() @ b.double() + bias.double()
    return a.to(DEV), b.to(DEV), bias.to(DEV), exact.to(dtype)


@pytest.mark.parametrize("backend", list(BACKENDS))
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("shape,bias_shape", [((48, 40, 96), (40,)), ((33, 24, 200), (33, 1)),
                                              ((5, 17, 64), (5, 17)), ((300, 260, 520), (260,))])
def test_the_switch_addmm_rounds_once(backend, dtype, shape, bias_shape):
    """c = a b + bias rounded once (torch's epilogue), not the 16-bit product rounded and then added:
    every element equals the exact sum rounded once. Triton adds the bias in its epilogue (one
    launch, routed); cuda_ref's wgmma_ws and few-rows kernels do too, and where its default is a kernel
    without one (off Hopper), or for a float32 bias that beta scaled, the call goes to torch, whose result
    is torch's."""
    if dtype == torch.float16 and DEV == "cpu" and shape[2] > 128:
        pytest.skip("the interpreter's float16 dot on a long K is slow")
    sw = BACKENDS[backend]._switch
    a, b, bias, want = exact_addmm_case(*shape, dtype, bias_shape=bias_shape)
    twice = (a.double() @ b.double()).to(dtype).double() + bias.double()
    assert (twice.to(dtype) != want.to(DEV)).any(), "the case must tell one rounding from two"

    def check(got, exact, *args, **kw):
        """``got`` the exact sum rounded once where the switch took the call, else torch's result."""
        routed = sw.counts().get("addmm", 0) > check.routed
        check.routed = sw.counts().get("addmm", 0)
        # torch's kernel is not always rounded once (an H100, bfloat16 (33, 24, 200) with a (33, 1)
        # bias: 60 of 792 elements off the exact sum; bench/results/logs/h100-2026-11-28-addmm-torch-rounding.txt)
        expected = exact if routed else torch.addmm(*args, **kw).cpu()
        assert got.dtype == dtype and got.shape == expected.shape
        assert torch.equal(got.cpu(), expected), f"{(got.cpu() != expected).sum().item()} elements differ"
        return routed
    check.routed = 0
    sw.reset_counts()
    for _ in range(2):  # the plan's first call and a repeat
        check(sw._addmm(bias, a, b), want, bias, a, b)
    if not sw.bias_epilogue:
        assert sw.counts() == {"addmm fallback": 2}
        return
    if backend == "triton" or torch.cuda.get_device_capability() == (9, 0):
        assert sw.counts() == {"addmm": 2}  # (cuda_ref's default here: wgmma_ws, on Hopper)
    # W.t() as nn.Linear passes it, beta other than 1 (scaled in float32) and beta = 0
    w = b.t().contiguous()
    check(sw._addmm(bias, a, w.t()), want, bias, a, w.t())
    want2 = (a.double() @ b.double() + 2 * bias.double()).to(dtype).cpu()
    check(sw._addmm(bias, a, b, beta=2), want2, bias, a, b, beta=2)
    product = (a.double() @ b.double()).to(dtype).cpu()
    assert torch.equal(sw._addmm(bias.fill_(float("nan")), a, b, beta=0).cpu(), product)


def test_the_switch_addmm_leaves_its_bias_alone():
    """beta other than 1 scales a float32 copy of the bias, never the caller's bias (float32's
    float() is the tensor itself)."""
    sw = triton_impl._switch
    a, b = torch.randn(9, 20, device=DEV), torch.randn(20, 7, device=DEV)
    bias = torch.randn(7, device=DEV)
    kept = bias.clone()
    got = sw._addmm(bias, a, b, beta=3)
    assert torch.equal(bias, kept)
    assert_close(got, ref_matmul(a, b) + 3 * kept.double(), SPECS["matmul"].tolerance("float32", 20), "beta")


def test_the_bias_plan_checks_its_bias():
    a, b = torch.randn(6, 5, device=DEV), torch.randn(5, 4, device=DEV)
    plans = triton_impl._matmul._PLANS
    with pytest.raises(ValueError, match="bias must broadcast"):
        plans.get((a, b, torch.randn(5, device=DEV)), None, None)
    with pytest.raises(TypeError, match="bias has dtype"):
        plans.get((a, b, torch.randn(4, device=DEV).double()), None, None)
    with pytest.raises(ValueError, match="bias must be"):
        plans.get((a, b, torch.randn(1, 6, 4, device=DEV)), None, None)
    bias = torch.randn(4, device=DEV)
    got = plans((a, b, bias), None, None)
    assert_close(got, ref_matmul(a, b) + bias.double(), SPECS["matmul"].tolerance("float32", 5), "bias")
    with pytest.raises(ValueError, match="alias the input bias"):
        out = torch.empty(6, 4, device=DEV)
        plans((a, b, out[0]), None, out)


# ---- 4. CUDA graphs and the hand-over buffers ---------------------------------------------------------
@requires_gpu
@pytest.mark.parametrize("backend,variant,n", [("cuda", "wgmma_ws", 9000), ("cuda", "few_rows_mma", 1024),
                                               ("triton", "split_k", 1024), ("triton", None, 4096)], ids=str)
def test_two_graphs_replayed_at_once_never_share_hand_over_buffers(backend, variant, n):
    """bf16 16 x N x 8192: wgmma_ws (N = 9000), few_rows_mma (N = 1024) and Triton's split_k (its
    default at 24 x 4096 x 8192) split K into runs that hand their sums over through flags
    (counts) and float32 buffers. Two graphs captured on torch's capture stream, replayed at once
    on two streams, give what they give one after the other; capturing takes no stream's kept
    buffers."""
    from cuda_ref import _matmul_wgmma as cm
    if not cm.is_sm90(torch.device("cuda")):
        pytest.skip("the hand-over kernels need a Hopper GPU")
    matmul = {"cuda": cuda_ref.matmul, "triton": triton_impl.matmul}[backend]
    torch.manual_seed(0)
    shapes = [(16, n, 8192), (24, n, 8192)]
    ins = [(torch.randn(m, k, device="cuda", dtype=torch.bfloat16),
            torch.randn(n, k, device="cuda", dtype=torch.bfloat16).t()) for m, n, k in shapes]
    for a, b in ins:  # plans and compiled kernels first
        matmul(a, b, variant=variant)
        if variant == "split_k":
            assert " S1 " not in triton_impl.describe("matmul", a, b, variant=variant) + " ", "the case must split K"
    torch.cuda.synchronize()
    kept = dict(kernel_util._HAND_OVER)
    graphs, outs = [], []
    for a, b in ins:
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            outs.append(matmul(a, b, variant=variant))
        graphs.append(g)
    assert {k: v[0].data_ptr() for k, v in kernel_util._HAND_OVER.items()} == \
        {k: v[0].data_ptr() for k, v in kept.items()}, "a capture takes a pair of its own"
    for g in graphs:
        g.replay()
    torch.cuda.synchronize()
    want = [o.clone() for o in outs]
    s1, s2 = torch.cuda.Stream(), torch.cuda.Stream()
    for _ in range(20):
        s1.wait_stream(torch.cuda.current_stream())
        s2.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s1):
            graphs[0].replay()
        with torch.cuda.stream(s2):
            graphs[1].replay()
        torch.cuda.current_stream().wait_stream(s1)
        torch.cuda.current_stream().wait_stream(s2)
        torch.cuda.synchronize()
        assert all(torch.equal(o, w) for o, w in zip(outs, want))
    for (a, b), o in zip(ins, want):
        assert_close(o, a.double() @ b.double(), SPECS["matmul"].tolerance("bfloat16", 8192), "graph")


@requires_gpu
def test_hand_over_memory_stays_flat_over_many_streams_and_captures():
    from cuda_ref import _matmul_wgmma as cm
    if not cm.is_sm90(torch.device("cuda")):
        pytest.skip("wgmma_ws needs a Hopper GPU")
    a = torch.randn(16, 8192, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(9000, 8192, device="cuda", dtype=torch.bfloat16).t()
    cuda_ref.matmul(a, b, variant="wgmma_ws")
    torch.cuda.synchronize()

    def many():
        for _ in range(3 * kernel_util.HAND_OVER_STREAMS):
            s = torch.cuda.Stream()
            with torch.cuda.stream(s):
                cuda_ref.matmul(a, b, variant="wgmma_ws")
                g = torch.cuda.CUDAGraph()
                with torch.cuda.graph(g, stream=s):
                    cuda_ref.matmul(a, b, variant="wgmma_ws")
                g.replay()
            torch.cuda.synchronize()
            del g
    many()
    before = torch.cuda.memory_allocated()
    many()
    assert len(kernel_util._HAND_OVER) <= kernel_util.HAND_OVER_STREAMS
    assert torch.cuda.memory_allocated() <= before
