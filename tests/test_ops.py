"""The public functions as torch ops (kernel_common/ops.py): gradients against torch's, results
under torch.compile(fullgraph=True) equal to eager, the same errors through an op, and calls
that need neither keep the direct path. Triton runs on the CPU under the interpreter where there
is no GPU; cuda_ref needs one."""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys

import pytest
import torch

import cuda_ref
import triton_impl
from bench.specs import SPECS
from conftest import HAS_GPU, requires_gpu

BACKENDS = {"cuda": cuda_ref, "triton": triton_impl}
# float32 anywhere; 16-bit on the GPU (the interpreter cannot compute in bfloat16)
CASES = [("triton", "float32")] + ([("triton", "bfloat16"), ("cuda", "float32"), ("cuda", "bfloat16")]
                                   if HAS_GPU else [])


def where(backend, device):
    return "cuda" if backend == "cuda" else device


def leaves(*ts):
    return [t.detach().clone().requires_grad_() for t in ts]


def tolerance(dtype_name, K):
    """The matmul spec's tolerance for a reduction of length K (the gradients are matmuls)."""
    return SPECS["matmul"].tolerance(dtype_name, K)


def assert_close(got, want, tol, what):
    scale = want.double().abs().max().item() or 1.0
    err = (got.double() - want.double()).abs().max().item() / scale
    assert err <= tol, f"{what}: max error {err:.3g} of the largest entry, tolerance {tol:.3g}"


def _matmul_inputs(dtype_name, device, b_layout):
    a, b = SPECS["matmul"].make_inputs((67, 45, 33), SPECS["matmul"].torch_dtype(dtype_name), device, 3)
    return a, (b.t().contiguous().t() if b_layout == "wt" else b)


@pytest.mark.parametrize("b_layout", ["row", "wt"])
@pytest.mark.parametrize("backend,dtype", CASES)
def test_matmul_gradients_match_torch(backend, dtype, b_layout, device):
    a, b = _matmul_inputs(dtype, where(backend, device), b_layout)
    ours_a, ours_b = leaves(a, b)
    ref_a, ref_b = leaves(a, b)
    with SPECS["matmul"].context(dtype):
        c = BACKENDS[backend].matmul(ours_a, ours_b)
        assert c.grad_fn is not None, "the result of inputs that require grad carries a grad_fn"
        grad = torch.randn_like(c)
        c.backward(grad)
        (ref_a @ ref_b).backward(grad)
    tol = tolerance(dtype, max(a.shape + b.shape))
    assert_close(c, ref_a.detach() @ ref_b.detach(), tol, "forward")
    assert_close(ours_a.grad, ref_a.grad, tol, "dA")
    assert_close(ours_b.grad, ref_b.grad, tol, "dB")


@pytest.mark.parametrize("backend,dtype", CASES)
def test_gemv_gradients_match_torch(backend, dtype, device):
    a, x = SPECS["gemv"].make_inputs((67, 45), SPECS["gemv"].torch_dtype(dtype), where(backend, device), 5)
    ours_a, ours_x = leaves(a, x)
    ref_a, ref_x = leaves(a, x)
    y = BACKENDS[backend].gemv(ours_a, ours_x)
    grad = torch.randn_like(y)
    y.backward(grad)
    torch.mv(ref_a, ref_x).backward(grad)
    tol = tolerance(dtype, 67)
    assert_close(ours_a.grad, ref_a.grad, tol, "dA")
    assert_close(ours_x.grad, ref_x.grad, tol, "dx")


@pytest.mark.parametrize("backend,dtype", CASES)
def test_transpose_gradient_is_exact(backend, dtype, device):
    (a,) = SPECS["transpose"].make_inputs((33, 65), SPECS["matmul"].torch_dtype(dtype), where(backend, device), 1)
    (ours,) = leaves(a)
    t = BACKENDS[backend].transpose(ours)
    grad = torch.randn_like(t)
    t.backward(grad)
    assert torch.equal(ours.grad, grad.t())


@pytest.mark.parametrize("backend", ["triton", "cuda"])
def test_gradcheck_float32(backend, device):
    """torch.autograd.gradcheck on every op in float32 (our kernels take no float64), element by
    element (fast mode scales atol by the sums of its random vectors, which hid a 1% error of dB
    at 67x45x33): central differences of the forward against the backward's Jacobian. Every op
    is linear in each input, so the differences are exact but for float32 rounding (~1e-5 of an
    entry at eps = 1e-2); a backward off by 1% fails."""
    if backend == "cuda" and not HAS_GPU:
        pytest.skip("cuda_ref needs a GPU")
    mod, dev = BACKENDS[backend], where(backend, device)
    a, b = SPECS["matmul"].make_inputs((7, 5, 9), torch.float32, dev, 3)
    x = torch.randn(9, device=dev)
    checks = {"matmul": (mod.matmul, (a, b)), "matmul W.t()": (mod.matmul, (a, b.t().contiguous().t())),
              "gemv": (mod.gemv, (a, x)), "transpose": (mod.transpose, (a,))}
    with SPECS["matmul"].context("float32"):
        for name, (fn, inputs) in checks.items():
            assert torch.autograd.gradcheck(fn, tuple(leaves(*inputs)), eps=1e-2, atol=1e-3, rtol=1e-3), name


@pytest.mark.parametrize("backend", ["triton", "cuda"])
def test_compiled_fullgraph_equals_eager(backend, device):
    if backend == "cuda" and not HAS_GPU:
        pytest.skip("cuda_ref needs a GPU")
    mod, dev = BACKENDS[backend], where(backend, device)
    torch._dynamo.reset()

    def f(a, b, x):
        c = mod.matmul(a, b)
        return mod.transpose(c), mod.gemv(a, x)
    a, b = SPECS["matmul"].make_inputs((67, 45, 33), torch.float32, dev, 0)
    x = torch.randn(33, device=dev)
    # off a GPU inductor would want a C++ compiler for the CPU glue: aot_eager traces the same graph
    compiled = torch.compile(f, fullgraph=True, backend="inductor" if dev == "cuda" else "aot_eager")
    with SPECS["matmul"].context("float32"):
        for got, want in zip(compiled(a, b, x), f(a, b, x)):
            assert torch.equal(got, want)
        a.requires_grad_()
        compiled(a, b, x)[0].sum().backward()  # the compiled graph differentiates through our ops
    assert a.grad is not None and a.grad.shape == a.shape


@requires_gpu
def test_a_traced_split_gemv_allocates_its_own_hand_over_pair(monkeypatch):
    """split_k_last (the default over few row blocks) hands its pieces over through the stream's
    kept buffers; a call traced by torch.compile (inductor records the kernel: a triton_op) asks
    for a pair of its own, which the graph allocates, so a compiled graph never holds the stream's.
    Eager calls keep the stream's. (Off a GPU the op is opaque: nothing is traced into.)"""
    from triton_impl import _gemv
    torch._dynamo.reset()
    owns = []
    real = _gemv.hand_over
    monkeypatch.setattr(_gemv, "hand_over", lambda *args, own=False: owns.append(own) or real(*args, own=own))
    a, x = torch.randn(8, 4096, device="cuda"), torch.randn(4096, device="cuda")
    assert _gemv.pick_variant(a, x) == "split_k_last"

    def f(a, x):
        return triton_impl.gemv(a, x) * 2
    want = f(a, x)
    assert owns == [False]
    compiled = torch.compile(f, fullgraph=True)
    assert torch.equal(compiled(a, x), want) and torch.equal(compiled(a, x), want)
    assert owns[1:] and all(owns[1:])


@requires_gpu
@pytest.mark.parametrize("dtype,b_layout,shape", [
    ("float32", "row", (512, 256, 128)), ("bfloat16", "wt", (512, 256, 128)),  # grouped: traced in
    ("bfloat16", "wt", (256, 512, 128)), ("float32", "row", (256, 512, 128)),  # TMA: opaque
])
def test_compile_traces_into_the_triton_kernels(dtype, b_layout, shape):
    """Triton's ops are triton_ops: inductor's code launches our kernels itself, and equals eager.
    A product planned on TMA (descriptors, which torch 2.11 cannot trace inside a triton_op) is
    one call of the opaque ``matmul_opaque`` op in that code instead."""
    from torch._inductor.utils import run_and_get_code
    torch._dynamo.reset()
    dt = SPECS["matmul"].torch_dtype(dtype)
    a, b = SPECS["matmul"].make_inputs(shape, dt, "cuda", 0)
    b = b.t().contiguous().t() if b_layout == "wt" else b
    x = torch.randn(shape[2], device="cuda", dtype=dt)

    def f(a, b, x):
        return triton_impl.transpose(triton_impl.matmul(a, b)) * 2, triton_impl.gemv(a, x)
    with SPECS["matmul"].context(dtype):
        (got, code) = run_and_get_code(torch.compile(f, fullgraph=True), a, b, x)
        want = f(a, b, x)
        variant = triton_impl._matmul.pick_variant(a, b)
    for g, w in zip(got, want):
        assert torch.equal(g, w)
    source = "\n".join(code)
    for name in ("_transpose_blocked_kernel", "_gemv_kernel"):
        assert name in source, f"{name} not launched by the compiled code"
    if variant == "grouped":
        assert "_matmul_kernel" in source and "torch.ops.triton_impl" not in source
    else:
        assert "torch.ops.triton_impl.matmul_opaque" in source


def test_a_call_without_grad_keeps_the_direct_path(device, monkeypatch):
    """No grad, no tracing: the op (the dispatcher's layer) is not entered."""
    from triton_impl import _matmul
    a, b = SPECS["matmul"].make_inputs((8, 8, 8), torch.float32, device, 0)

    def refuse(*args):
        raise AssertionError("the op was called")
    monkeypatch.setattr(_matmul._PLANS, "op", refuse)
    assert triton_impl.matmul(a, b).grad_fn is None
    with torch.no_grad():
        assert triton_impl.matmul(a.requires_grad_(), b).grad_fn is None


def test_out_with_grad_is_refused_and_ops_give_the_functions_errors(device):
    a, b = SPECS["matmul"].make_inputs((8, 8, 8), torch.float32, device, 0)
    with pytest.raises(ValueError, match="^out must be None when an input requires grad"):
        triton_impl.matmul(a.requires_grad_(), b, out=torch.empty(8, 8, device=device))
    bad = (torch.ones(3, 4, device=device), torch.ones(5, 6, device=device))
    with pytest.raises(ValueError, match=r"^b must have shape\[0\] = 4") as direct:
        triton_impl.matmul(*bad)
    with pytest.raises(ValueError) as through_op:
        torch.ops.triton_impl.matmul(*bad)
    assert str(through_op.value) == str(direct.value)
    with pytest.raises(TypeError, match="^a has dtype complex64"):
        torch.ops.triton_impl.transpose(torch.ones(3, 4, dtype=torch.complex64, device=device))


# modules an import of the packages must not bring in: torch._inductor (torch's scan of a
# triton_op's source imports it, kernel_common/ops.py) and what it drags in, about 0.8-1 s
HEAVY_AT_IMPORT = ("torch._inductor", "torch._dynamo", "sympy", "triton.experimental.gluon")  # (Gluon: on first use)


def test_import_registers_the_ops_without_inductor():
    """``import triton_impl, cuda_ref`` registers every op, Triton's as triton_ops (no interpreter:
    what a GPU user gets), and imports nothing heavy that a call does not need. A fresh process
    under ``-X importtime``: the modules imported after ``import torch, triton``."""
    marker = "--- the packages' imports"
    code = ("import sys, torch, triton\n"
            f"print({marker!r}, file=sys.stderr, flush=True)\n"
            "import triton_impl, cuda_ref\n"
            "from kernel_common import interpreting\n"
            "assert not interpreting()\n"
            "for ns in ('triton_impl', 'cuda_ref'):\n"
            "    for name in ('transpose', 'gemv', 'matmul'):\n"
            "        assert getattr(getattr(torch.ops, ns), name).default is not None\n")
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    run = subprocess.run([sys.executable, "-X", "importtime", "-c", code], env=env, capture_output=True, text=True,
                         cwd=pathlib.Path(__file__).resolve().parent.parent, timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    ours = []  # (cumulative us, module) of each module the packages' import brought in
    for line in run.stderr.split(marker, 1)[1].splitlines():
        if line.startswith("import time:") and "|" in line and "[us]" not in line:
            _, cumulative, module = line.split("|")
            ours.append((int(cumulative), module.strip()))
    heavy = {h: sum(m == h or m.startswith(h + ".") for _, m in ours) for h in HEAVY_AT_IMPORT}
    heavy = {h: n for h, n in heavy.items() if n}
    top = "\n".join(f"{us / 1000:9.1f} ms  {m}" for us, m in sorted(ours, reverse=True)[:10])
    assert not heavy, f"the import brought in {heavy} (modules of each); slowest:\n{top}"


@requires_gpu
def test_cuda_ops_are_registered():
    assert torch.ops.cuda_ref.matmul is not None and set(cuda_ref.ops) == {"transpose", "gemv", "matmul"}


# ---- the switch: aten's mm / addmm / mv on CUDA tensors routed to our kernels ------------------
def test_the_switch_leaves_cpu_tensors_to_torch():
    a, b = torch.randn(5, 7), torch.randn(7, 3)
    with triton_impl.enabled():
        assert triton_impl._switch.is_enabled()
        assert torch.equal(torch.mm(a, b), a @ b)
    assert not triton_impl._switch.is_enabled()


def test_the_pass_through_switch_hands_every_call_to_torch():
    """bench model's floor: a switch that takes no dtype answers each op with torch's own result
    (called here directly: on CPU tensors the dispatcher would not reach it) and counts it."""
    from bench.model import passthrough
    sw = passthrough()
    a, b, x, bias = torch.randn(5, 7), torch.randn(7, 3), torch.randn(7), torch.randn(3)
    assert torch.equal(sw._mm(a, b), a @ b) and torch.equal(sw._mv(a, x), a @ x)
    assert torch.equal(sw._addmm(bias, a, b, beta=2), torch.addmm(bias, a, b, beta=2))
    assert sw.counts() == {"mm fallback": 1, "mv fallback": 1, "addmm fallback": 1}


def test_the_switch_plans_a_key_once_and_forgets_it_with_the_plans(device, monkeypatch):
    """The switch's table (its own key -> a plan's bound call), called directly as the dispatcher
    would: a repeat call makes no plan, a new shape, layout or alignment does, a float64 call falls
    back to torch, and clearing the plans (a tuned config) empties the table."""
    sw = triton_impl._switch
    made = []
    get = sw.matmul_plans.get
    monkeypatch.setattr(sw.matmul_plans, "get", lambda *args: made.append(1) or get(*args))
    sw.matmul_plans.clear()
    sw.reset_counts()
    torch.manual_seed(0)
    a, w = torch.randn(19, 40, device=device), torch.randn(23, 40, device=device)
    want = a.double() @ w.double().t()
    for _ in range(3):
        got = sw._mm(a, w.t())
        assert_close(got, want, SPECS["matmul"].tolerance("float32", 40), "mm")
    assert len(made) == 1
    sw._mm(a, w.t().contiguous())  # the other layout of b
    assert len(made) == 2
    shifted = torch.empty(19 * 40 + 1, device=device)[1:].view(19, 40).copy_(a)  # a's base 4 bytes on
    assert_close(sw._mm(shifted, w.t()), want, SPECS["matmul"].tolerance("float32", 40), "mm, shifted")
    assert len(made) == 3
    assert torch.equal(sw._mm(a.double(), w.double().t()), a.double() @ w.double().t())
    assert sw.counts() == {"mm": 5, "mm fallback": 1}
    sw.matmul_plans.clear()
    assert not sw._mm_calls
    sw._mm(a, w.t())
    assert len(made) == 4


@requires_gpu
def test_enabling_the_switch_warns_nothing():
    """In a fresh process (torch warns once a process), enabling the switch over torch's CUDA
    kernels prints no "Overriding a previously registered kernel" warning: it is what was asked."""
    code = "import torch, triton_impl\ntriton_impl.enable()\ntriton_impl.disable()\n"
    run = subprocess.run([sys.executable, "-W", "default", "-c", code], capture_output=True, text=True,
                         cwd=pathlib.Path(__file__).resolve().parent.parent, timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    assert "Overriding" not in run.stderr, run.stderr[-3000:]


@requires_gpu
@pytest.mark.parametrize("backend", ["triton", "cuda"])
@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_the_switch_routes_linear_forward_and_backward(backend, dtype):
    mod = BACKENDS[backend]
    torch_dtype = SPECS["matmul"].torch_dtype(dtype)
    torch.manual_seed(0)
    layer = torch.nn.Linear(96, 40, device="cuda", dtype=torch_dtype)
    x = torch.randn(3, 17, 96, device="cuda", dtype=torch_dtype, requires_grad=True)
    with SPECS["matmul"].context(dtype):
        want = layer(x)
        want.sum().backward()
        want_grads = [t.grad.clone() for t in (x, layer.weight, layer.bias)]
        for t in (x, layer.weight, layer.bias):
            t.grad = None
        mod._switch.reset_counts()
        with mod.enabled():
            got = layer(x)
            got.sum().backward()
            y = torch.mv(layer.weight, x[0, 0].detach())          # mv
            z = torch.mm(x[0].double().detach(), layer.weight.double().t())  # float64: torch's
        counts = mod.routed()
    tol = SPECS["matmul"].tolerance(dtype, 96)
    assert_close(got, want, tol, "forward")
    for g, w, what in zip((x.grad, layer.weight.grad, layer.bias.grad), want_grads, ("dx", "dW", "db")):
        assert_close(g, w, SPECS["matmul"].tolerance(dtype, 51), what)
    assert_close(y, layer.weight.detach() @ x[0, 0].detach(), tol, "mv")
    assert z.dtype == torch.float64
    # forward: addmm (the bias in the epilogue; cuda_ref's is wgmma_ws's, 16-bit: its float32 goes
    # to torch); backward: mm for dx and dW; mv; float64 falls back
    addmm = "addmm fallback" if backend == "cuda" and dtype == "float32" else "addmm"
    assert counts.get(addmm, 0) >= 1 and counts.get("mm", 0) >= 2 and counts.get("mv", 0) == 1, counts
    assert counts.get("mm fallback", 0) == 1, counts
    assert not mod._switch.is_enabled()


@requires_gpu
@pytest.mark.slow
@pytest.mark.parametrize("backend", ["triton", "cuda"])
def test_a_transformers_llama_trains_with_the_switch_on(backend):
    """A decoder nobody here wrote (transformers' Llama from its config, random weights): loss and
    logits with the switch on within bfloat16 tolerance of torch's, and its projections routed."""
    pytest.importorskip("transformers")
    from bench import model
    r = model.compare(backend, torch.bfloat16)
    assert abs(r["loss_on"] - r["loss_off"]) <= 2e-2 * abs(r["loss_off"]), r
    assert r["logits_max_rel_diff"] <= 5e-2, r
    routed = r["routed"]
    assert routed.get("mm", 0) + routed.get("addmm", 0) >= 7 * model.CONFIGS["small"]["num_hidden_layers"], routed
    assert not any(k.endswith("fallback") for k in routed), routed


def test_fakes_have_no_address_and_an_alignment_from_their_offset():
    """What a traced call plans with: a fake tensor (torch.compile's) is recognized, and its
    16-byte phase comes from its storage offset, as a real tensor's comes from its address."""
    from torch._subclasses.fake_tensor import FakeTensorMode

    from kernel_common import base_phase, is_fake
    real = torch.empty(64, dtype=torch.float32)
    assert not is_fake(real) and not is_fake(torch.nn.Parameter(real)) and not is_fake(None)
    assert base_phase(real[1:]) == (real.data_ptr() + 4) & 15
    with FakeTensorMode():
        fake = torch.empty(64, dtype=torch.float32)
        assert is_fake(fake)
        assert [base_phase(fake[i:]) for i in range(5)] == [0, 4, 8, 12, 0]
        assert base_phase(fake.view(8, 8).t()) == 0


def test_traceable_ops_have_the_custom_ops_schemas():
    """triton_op reads its schema from the implementation's annotations: they must say what the
    custom ops' written schemas say (a new namespace, not the package's ops)."""
    from kernel_common import ops
    from triton_impl import _gemv, _matmul, _transpose
    algorithms = {name: (m._PLANS, m.DTYPES, m.VARIANTS) for name, m in
                  (("transpose", _transpose), ("gemv", _gemv), ("matmul", _matmul))}
    saved = {name: plans.op for name, (plans, _, _) in algorithms.items()}
    try:
        ops.register("schema_probe", algorithms, traceable=True)
    finally:
        for name, (plans, _, _) in algorithms.items():
            plans.op = saved[name]
    for name, schema in ops.SCHEMAS.items():
        assert str(getattr(torch.ops.schema_probe, name).default._schema) == f"schema_probe::{name}{schema}"
        assert str(getattr(torch.ops.schema_probe, f"{name}_opaque").default._schema) == \
            f"schema_probe::{name}_opaque{schema}"
