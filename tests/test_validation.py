"""Bad input, every public function of both backends (issue 7, part 1).

Each case must raise TypeError or ValueError (nothing else) whose message starts with the name of
the offending argument; afterwards every tensor passed in is bit-identical to what it was (its
whole storage, so a write past a view's end shows too), and a valid ``out`` passed together with
another bad argument still holds its poison.

Without a GPU, Triton runs under the interpreter on CPU tensors, and "another device" is the meta
device; cuda_ref gets the same CPU tensors: both backends check devices last (after every other
argument), so each case gets its own error on CPU too, and only a valid call on CPU tensors is
refused with "a must be on a CUDA device". On a GPU every case runs with CUDA tensors (another
device is the CPU).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
import pytest
import torch

import cuda_ref
import triton_impl
from bench.specs import poison
from conftest import HAS_GPU
from kernel_common import dtype_name

DEV = "cuda" if HAS_GPU else "cpu"
OTHER = "cpu" if HAS_GPU else "meta"  # a device that is not DEV
BACKENDS = {"cuda": cuda_ref, "triton": triton_impl}
UNSUPPORTED = {  # dtypes each algorithm must refuse (both backends)
    "transpose": (torch.int16, torch.complex64, torch.bool, torch.int64, torch.uint8),
    "gemv": (torch.int8, torch.complex64, torch.bool, torch.float64, torch.int32),
    "matmul": (torch.int16, torch.complex64, torch.bool, torch.float64, torch.uint8),
}
OTHER_BACKEND_VARIANT = {("cuda", "transpose"): "blocked", ("triton", "transpose"): "smem_tiled",
                         ("cuda", "gemv"): "blocked_row", ("triton", "gemv"): "warp_per_row",
                         ("cuda", "matmul"): "grouped", ("triton", "matmul"): "smem_tiled"}


@dataclass
class Case:
    id: str
    args: tuple
    kwargs: dict
    exc: type            # TypeError or ValueError
    name: str            # the argument the message must name (first)
    backends: tuple = ("cuda", "triton")
    valid_out: bool = True  # add a valid poisoned out (when the case has none)


def _f32(*shape, device):
    return torch.rand(shape, device=device) + 1


def _common(alg, a_valid, out_shape, ops, nontensor_ops, dev, other):
    """Cases shared by the three algorithms. ``ops``: the valid operands (a first)."""
    cases = []
    rest = ops[1:]
    # a itself: rank, dtype, kind
    cases += [
        Case("a_rank1", (a_valid.reshape(-1), *rest), {}, ValueError, "a"),
        # (transpose takes a batch: its bad rank is 4)
        # (matmul takes a batch: its bad ranks are matmul_cases')
        *([] if alg == "matmul" else [Case("a_rank_over", (a_valid[None, None] if alg == "transpose" else a_valid[None],
                                                           *rest), {}, ValueError, "a")]),
        Case("a_rank0", (a_valid[0, 0], *rest), {}, ValueError, "a"),
        Case("a_list", (a_valid.tolist(), *rest), {}, TypeError, "a"),
        Case("a_numpy", (np.ones(tuple(a_valid.shape), np.float32), *rest), {}, TypeError, "a"),
        Case("a_float", (1.5, *rest), {}, TypeError, "a"),
    ]
    for dt in UNSUPPORTED[alg]:
        same = tuple(o.to(dt) for o in ops)  # every operand in the dtype: only "unsupported" is wrong
        cases.append(Case(f"a_{dtype_name(dt)}", same, {}, TypeError, "a"))
    cases += [
        Case("a_sparse", (a_valid.to_sparse(), *rest), {}, TypeError, "a"),
        Case("a_meta", (a_valid.to("meta"), *rest), {}, ValueError, "a"),  # no data anywhere
    ]
    # a CPU tensor to a CUDA path: cuda_ref always; Triton only on a GPU (the interpreter takes CPU)
    cases.append(Case("a_cpu", (a_valid.cpu(), *rest), {}, ValueError, "a",
                      backends=("cuda", "triton") if HAS_GPU else ("cuda",)))
    # out
    bad_outs = [
        ("out_shape", torch.empty(out_shape[::-1] if len(out_shape) == 2 else (out_shape[0] + 1,),
                                  device=dev), ValueError),
        ("out_rank", torch.empty((*out_shape, 1), device=dev), ValueError),
        ("out_dtype", torch.empty(out_shape, device=dev, dtype=torch.float16), TypeError),
        ("out_dtype_int", torch.empty(out_shape, device=dev, dtype=torch.int32), TypeError),
        ("out_device", torch.empty(out_shape, device=other), ValueError),
        ("out_noncontig", torch.empty((*out_shape[:-1], 2 * out_shape[-1]), device=dev)[..., ::2], ValueError),
        ("out_sparse", torch.zeros(out_shape, device=dev).to_sparse(), TypeError),
        ("out_requires_grad", torch.zeros(out_shape, device=dev, requires_grad=True), ValueError),
        ("out_list", torch.zeros(out_shape).tolist(), TypeError),
        ("out_numpy", np.zeros(out_shape, np.float32), TypeError),
    ]
    for cid, out, exc in bad_outs:
        cases.append(Case(cid, ops, {"out": out}, exc, "out"))
    # variant
    cases += [
        Case("variant_unknown", ops, {"variant": "nope"}, ValueError, "variant"),
        Case("variant_int", ops, {"variant": 3}, ValueError, "variant"),
        Case("variant_empty", ops, {"variant": ""}, ValueError, "variant"),
    ]
    for backend in ("cuda", "triton"):
        cases.append(Case(f"variant_of_other_backend_{backend}", ops,
                          {"variant": OTHER_BACKEND_VARIANT[backend, alg]}, ValueError, "variant",
                          backends=(backend,)))
    # non-tensor second operands
    for name, index in nontensor_ops:
        shape = tuple(ops[index].shape)
        for kind, value in (("list", torch.ones(shape).tolist()), ("numpy", np.ones(shape, np.float32))):
            args = list(ops)
            args[index] = value
            cases.append(Case(f"{name}_{kind}", tuple(args), {}, TypeError, name))
    return cases


def transpose_cases(dev, other):
    R, C = 4, 6
    a = _f32(R, C, device=dev)
    cases = _common("transpose", a, (C, R), (a,), [], dev, other)
    sq = _f32(5, 5, device=dev)
    big = _f32(64, device=dev)
    cases += [
        Case("out_is_a", (sq,), {"out": sq}, ValueError, "out"),  # an in-place transpose request
        Case("out_view_of_a", (a,), {"out": a.view(C, R)}, ValueError, "out"),
        Case("out_overlaps_a", (big[:24].view(R, C),), {"out": big[20:44].view(C, R)}, ValueError, "out"),
        # a side of 1 (the transpose a plain copy, taken before the plan) and empty: still no data anywhere
        Case("a_meta_one_row", (a[:1].to("meta"),), {}, ValueError, "a", valid_out=False),
        Case("a_meta_empty", (a[:0, :1].to("meta"),), {}, ValueError, "a", valid_out=False),
    ]
    return cases


def gemv_cases(dev, other):
    M, K = 4, 6
    a, x = _f32(M, K, device=dev), _f32(K, device=dev)
    cases = _common("gemv", a, (M,), (a, x), [("x", 1)], dev, other)
    cases += [
        Case("x_rank0", (a, x[0]), {}, ValueError, "x"),
        Case("x_rank2", (a, x[None]), {}, ValueError, "x"),
        Case("x_short", (a, x[:5]), {}, ValueError, "x"),
        Case("x_long", (a, _f32(K + 1, device=dev)), {}, ValueError, "x"),
        Case("x_float16", (a, x.half()), {}, TypeError, "x"),      # mixed dtypes
        Case("x_float32_a_bf16", (a.bfloat16(), x), {}, TypeError, "x"),
        Case("x_int32", (a, x.int()), {}, TypeError, "x"),          # unsupported, a fine
        Case("x_float64", (a, x.double()), {}, TypeError, "x"),
        Case("x_other_device", (a, x.to(other)), {}, ValueError, "x"),
        Case("x_sparse", (a, x.to_sparse()), {}, TypeError, "x"),
        Case("out_is_x_head", (a, x), {"out": x[:M]}, ValueError, "out"),
        Case("out_in_a", (a, x), {"out": a.view(-1)[7:7 + M]}, ValueError, "out"),
        # variant that cannot take the input: x does not fit in 64 KiB of constant memory
        Case("variant_const_K_too_large_f32", (_f32(2, 16385, device=dev), _f32(16385, device=dev)),
             {"variant": "coalesced_const"}, ValueError, "variant", backends=("cuda",)),
        Case("variant_const_K_too_large_f16", (_f32(2, 32769, device=dev).half(), _f32(32769, device=dev).half()),
             {"variant": "coalesced_const"}, ValueError, "variant", backends=("cuda",)),
    ]
    return cases


def matmul_cases(dev, other):
    M, N, K = 4, 3, 6
    a, b = _f32(M, K, device=dev), _f32(K, N, device=dev)
    cases = _common("matmul", a, (M, N), (a, b), [("b", 1)], dev, other)
    sq_a, sq_b = _f32(4, 4, device=dev), _f32(4, 4, device=dev)
    big = _f32(64, device=dev)
    cases += [
        Case("b_rank1", (a, b.reshape(-1)), {}, ValueError, "b"),
        Case("a_batch_mismatch", (a.expand(2, M, K), b.expand(3, K, N)), {}, ValueError, "a", valid_out=False),
        # a batch of products that is not one 2-D product: cuda_ref's kernels take one product
        Case("a_batch_cuda", (a.expand(2, M, K), b.expand(2, K, N).contiguous()), {}, ValueError, "a",
             backends=("cuda",), valid_out=False),
        Case("b_rows", (a, _f32(K - 1, N, device=dev)), {}, ValueError, "b"),    # mismatched inner extents
        Case("b_transposed", (a, b.t()), {}, ValueError, "b"),
        Case("b_float16", (a, b.half()), {}, TypeError, "b"),       # mixed dtypes
        Case("b_float32_a_f16", (a.half(), b), {}, TypeError, "b"),
        Case("b_int32", (a, b.int()), {}, TypeError, "b"),          # unsupported, a fine
        Case("b_bool", (a, b.bool()), {}, TypeError, "b"),
        Case("b_other_device", (a, b.to(other)), {}, ValueError, "b"),
        Case("b_sparse", (a, b.to_sparse()), {}, TypeError, "b"),
        Case("out_is_a", (sq_a, sq_b), {"out": sq_a}, ValueError, "out"),
        Case("out_is_b", (sq_a, sq_b), {"out": sq_b}, ValueError, "out"),
        Case("out_overlaps_a", (big[:24].view(M, K), b), {"out": big[20:32].view(M, N)}, ValueError, "out"),
        Case("out_overlaps_b", (a, big[:18].view(K, N)), {"out": big[12:24].view(M, N)}, ValueError, "out"),
    ]
    return cases


CASES = {"transpose": transpose_cases, "gemv": gemv_cases, "matmul": matmul_cases}


def _params():
    params = []
    for alg, make in CASES.items():
        for case in make("cpu", "meta"):  # ids only: built on the CPU at collection time
            for backend in case.backends:
                params.append(pytest.param(backend, alg, case.id, id=f"{backend}-{alg}-{case.id}"))
    return params


# ---------------------------------------------------------------------------------------------
def storage_bytes(t: torch.Tensor) -> torch.Tensor:
    """The whole storage behind ``t`` as bytes (a copy): catches writes outside the view too."""
    s = t.untyped_storage()
    return torch.empty(0, dtype=torch.uint8, device=t.device).set_(s, 0, (s.nbytes(),)).clone()


def snapshot(values):
    snaps = []
    for v in values:
        if isinstance(v, torch.Tensor) and v.device.type == "meta":
            continue  # no data
        if isinstance(v, torch.Tensor) and v.layout != torch.strided:
            snaps.append((v, v.to_dense().clone()))
        elif isinstance(v, torch.Tensor):
            snaps.append((v, storage_bytes(v)))
        elif isinstance(v, np.ndarray):
            snaps.append((v, v.copy()))
    return snaps


def assert_unchanged(snaps):
    for v, before in snaps:
        if isinstance(v, np.ndarray):
            assert np.array_equal(v, before), "a numpy argument was modified"
        elif v.layout != torch.strided:
            assert torch.equal(v.to_dense(), before), "a sparse argument was modified"
        else:
            assert torch.equal(storage_bytes(v), before), \
                f"a tensor argument (shape {tuple(v.shape)}) was modified by a call that raised"


def names_argument(message: str, name: str) -> bool:
    """The message leads with the argument's name ("x must ...", "out has dtype ...")."""
    return re.match(rf"{re.escape(name)}\b", message) is not None


def valid_out(alg, args):
    """A correctly shaped, poisoned out on DEV for the nominal operands: the extents of the
    operands where they are 2-D tensors, else those of the default case (a 4 x 6, b 6 x 3)."""
    a, b = args[0], args[1] if len(args) > 1 else None
    a_ok = isinstance(a, torch.Tensor) and a.dim() == 2
    R, C = a.shape if a_ok else (4, 6)
    N = b.shape[1] if isinstance(b, torch.Tensor) and b.dim() == 2 else 3
    dtype = a.dtype if a_ok and a.dtype in (torch.float16, torch.bfloat16, torch.float32) else torch.float32
    shape = {"transpose": (C, R), "gemv": (R,), "matmul": (R, N)}[alg]
    return poison(shape, dtype, DEV)


@pytest.mark.parametrize("backend,alg,case_id", _params())
def test_bad_input(backend, alg, case_id):
    case = next(c for c in CASES[alg](DEV, OTHER) if c.id == case_id)
    fn = getattr(BACKENDS[backend], alg)
    kwargs = dict(case.kwargs)
    if "out" not in kwargs and case.valid_out:
        kwargs["out"] = valid_out(alg, case.args)
    exc, name = case.exc, case.name
    snaps = snapshot([*case.args, *kwargs.values()])

    with pytest.raises((TypeError, ValueError)) as info:
        fn(*case.args, **kwargs)

    message = str(info.value)
    assert type(info.value) is exc, f"{type(info.value).__name__} ({message}), expected {exc.__name__}"
    assert names_argument(message, name), f"message does not lead with {name!r}: {message}"
    if case.id == "a_cpu":
        assert "must be on a CUDA device" in message
    assert_unchanged(snaps)
    out = kwargs.get("out")
    if case.name != "out" and isinstance(out, torch.Tensor):
        assert torch.isnan(out).all(), "the valid out was written before the error"


def test_every_case_has_a_unique_id():
    for make in CASES.values():
        ids = [c.id for c in make("cpu", "meta")]
        assert len(ids) == len(set(ids))


@pytest.mark.parametrize("backend", list(BACKENDS))
def test_variants_unknown_algorithm(backend):
    with pytest.raises(ValueError, match="algorithm must be one of"):
        BACKENDS[backend].variants("fft")
    for alg in CASES:
        names = BACKENDS[backend].variants(alg)
        assert isinstance(names, tuple) and names and all(isinstance(n, str) for n in names)


@pytest.mark.parametrize("backend", list(BACKENDS))
def test_gemv_and_matmul_word_the_same_mistake_alike(backend):
    """The second operand of a product is checked by one function for both algorithms: the same
    mistake (mixed dtypes, a mismatched inner extent, another device) reads the same."""
    pkg = BACKENDS[backend]
    a = _f32(4, 6, device=DEV)
    x, b = _f32(5, device=DEV), _f32(5, 3, device=DEV)

    def message(fn, *args):
        with pytest.raises((TypeError, ValueError)) as info:
            fn(*args)
        return str(info.value)

    short = [message(pkg.gemv, a, x), message(pkg.matmul, a, b)]
    assert short[0].replace("x must", "b must").replace("(5,)", "(5, 3)") == short[1]
    mixed = [message(pkg.gemv, a, _f32(6, device=DEV).half()), message(pkg.matmul, a, _f32(6, 3, device=DEV).half())]
    assert mixed[0].replace("x has", "b has") == mixed[1]
    moved = [message(pkg.gemv, a, _f32(6, device=DEV).to(OTHER)), message(pkg.matmul, a, _f32(6, 3, device=DEV).to(OTHER))]
    assert moved[0].replace("x must", "b must") == moved[1]


# ---- looking inside: pick and describe, the harness's public window ----------------------------
def test_pick_and_describe_say_what_a_call_runs():
    """``pick`` is what variant=None runs (the module's own choice), ``describe`` the variant and, for
    Triton's matmul, its config; an unknown algorithm is a ValueError naming the known ones."""
    from triton_impl import _matmul, _transpose
    for dev in ("cpu", DEV):  # a CPU tensor on a GPU machine asks about no GPU; DEV last: the checks below take its a, b
        a, b = torch.randn(9, 20, device=dev), torch.randn(20, 7, device=dev)
        assert triton_impl.pick("matmul", a, b) == _matmul.pick_variant(a, b)
        assert cuda_ref.pick("matmul", a, b) == cuda_ref._matmul.pick_variant(a, b)
    assert triton_impl.pick("transpose", a) == _transpose.pick_variant(a)
    assert triton_impl.describe("transpose", a) == _transpose.pick_variant(a)
    assert triton_impl.describe("transpose", a, variant="blocked") == "blocked"
    text = triton_impl.describe("matmul", a, b, variant="grouped")
    assert text.startswith("grouped ") and "x" in text, text
    with pytest.raises(ValueError, match="algorithm must be one of transpose, gemv, matmul"):
        triton_impl.pick("conv", a)
    assert cuda_ref.pick("matmul", a, b) == cuda_ref._matmul.pick_variant(a, b)
    assert {"pick", "describe", "switch"} <= set(triton_impl.__all__) & set(cuda_ref.__all__)
