"""Property-based tests (issue 7, part 2): random small shapes (0 and 1 included), random strides
(transposed views, steps, offsets into a larger buffer, broadcast rows), every dtype each
algorithm supports and every variant, against the spec's reference and tolerance
(``bench.specs.SPECS[alg].compare``): exact for transpose, float64 for gemv and matmul.

CPU: Triton under the interpreter. GPU: both backends. The examples are derandomized (the same
sequence on every run, no example database), so CI is reproducible, and few: the file takes
well under a minute on a CPU. Memory around each strided view holds poison (NaN, or INT_MIN for
integers), so a kernel that reads through the wrong stride or past an edge shows it.
"""

from __future__ import annotations

import contextlib

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import cuda_ref
import triton_impl
from bench.specs import DTYPES, SPECS, poison
from conftest import HAS_GPU, within_forward_bound

DEV = "cuda" if HAS_GPU else "cpu"
BACKENDS = {"triton": triton_impl, **({"cuda": cuda_ref} if HAS_GPU else {})}
# Examples per test: the interpreter is cheap at these sizes (~10 ms a call); on a GPU every new
# shape compiles or autotunes Triton's matmul once, so fewer.
N_EXAMPLES = {"transpose": 60, "gemv": 60, "matmul": 40} if HAS_GPU else \
    {"transpose": 150, "gemv": 150, "matmul": 100}
SETTINGS = dict(deadline=None, derandomize=True, database=None, print_blob=True,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def extent(upper: int):
    """0, 1 and the edges of the usual tiles more often than chance would pick them."""
    return st.one_of(st.sampled_from([0, 1, 2, 31, 32, 33]), st.integers(0, upper))


# A layout: (transposed, row step, column step, row offset, column offset, broadcast rows).
layouts = st.tuples(st.booleans(), st.integers(1, 3), st.integers(1, 3), st.integers(0, 3),
                    st.integers(0, 3), st.sampled_from([False] * 5 + [True]))
vector_layouts = st.tuples(st.integers(1, 3), st.integers(0, 3), st.sampled_from([False] * 5 + [True]))


def place_matrix(v: torch.Tensor, layout) -> torch.Tensor:
    """A view with ``v``'s values (or its first row repeated, for broadcast) and the layout's
    strides, inside a poisoned buffer."""
    transposed, sr, sc, orow, ocol, broadcast = layout
    if broadcast and v.shape[0] > 0:
        return place_matrix(v[:1], (transposed, sr, sc, orow, ocol, False)).expand(v.shape)
    if transposed:
        return place_matrix(v.t(), (False, sc, sr, ocol, orow, False)).t()
    R, C = v.shape
    base = poison((orow + R * sr + 2, ocol + C * sc + 2), v.dtype, v.device)
    view = base[orow:orow + R * sr:sr, ocol:ocol + C * sc:sc]
    view.copy_(v)
    return view


def place_vector(v: torch.Tensor, layout) -> torch.Tensor:
    step, offset, broadcast = layout
    if broadcast and v.shape[0] > 0:
        return place_vector(v[:1], (step, offset, False)).expand(v.shape)
    base = poison((offset + v.shape[0] * step + 2,), v.dtype, v.device)
    view = base[offset:offset + v.shape[0] * step:step]
    view.copy_(v)
    return view


def storage_bytes(t: torch.Tensor) -> torch.Tensor:
    s = t.untyped_storage()
    return torch.empty(0, dtype=torch.uint8, device=t.device).set_(s, 0, (s.nbytes(),)).clone()


def check(alg, backend, variant, inputs, with_out: bool, context=contextlib.nullcontext):
    """Run one call and check it against the spec (float64 / exact) and the call's contract."""
    spec = SPECS[alg]
    fn = getattr(BACKENDS[backend], alg)
    before = [storage_bytes(t) for t in inputs]
    with context():
        ref = spec.reference(inputs)
        out = spec.make_out(inputs) if with_out else None
        got = fn(*inputs, variant=variant, out=out)
        cmp = spec.compare(got, ref, inputs)
    where = f"{backend} {alg} variant={variant} shapes={[tuple(t.shape) for t in inputs]} " \
            f"strides={[t.stride() for t in inputs]} dtype={inputs[0].dtype}"
    with context():  # (a broadcast row of b can cancel every output far below its products)
        ok = cmp.ok or alg != "transpose" and ref.dtype.is_floating_point and \
            within_forward_bound(alg, got, ref, inputs)
    assert ok, f"{where}: {cmp.detail}"
    if with_out:
        assert got is out, where
    want = inputs[0].dtype if ref.dtype.is_floating_point else ref.dtype  # (int8 products are int32)
    assert got.is_contiguous() and got.dtype == want, where
    for t, b in zip(inputs, before):
        assert torch.equal(storage_bytes(t), b), f"{where}: an input (or the memory around it) changed"


# ---- transpose: exact, every dtype ---------------------------------------------------------
@pytest.mark.parametrize("backend", list(BACKENDS))
@settings(max_examples=N_EXAMPLES["transpose"], **SETTINGS)
@given(data=st.data(), R=extent(80), C=extent(80), dtype=st.sampled_from(SPECS["transpose"].dtypes),
       layout=layouts, with_out=st.booleans(), seed=st.integers(0, 2 ** 16))
def test_transpose(backend, data, R, C, dtype, layout, with_out, seed):
    variant = data.draw(st.sampled_from((None, *BACKENDS[backend].variants("transpose"))), label="variant")
    (a,) = SPECS["transpose"].make_inputs((R, C), DTYPES[dtype], DEV, seed)
    check("transpose", backend, variant, (place_matrix(a, layout),), with_out)


# ---- gemv: float64 reference, float32 / float16 / bfloat16 -----------------------------------
@pytest.mark.parametrize("backend", list(BACKENDS))
@settings(max_examples=N_EXAMPLES["gemv"], **SETTINGS)
@given(data=st.data(), M=extent(70), K=extent(70), dtype=st.sampled_from(SPECS["gemv"].dtypes),
       a_layout=layouts, x_layout=vector_layouts, with_out=st.booleans(), seed=st.integers(0, 2 ** 16))
def test_gemv(backend, data, M, K, dtype, a_layout, x_layout, with_out, seed):
    variant = data.draw(st.sampled_from((None, *BACKENDS[backend].variants("gemv"))), label="variant")
    a, x = SPECS["gemv"].make_inputs((M, K), DTYPES[dtype], DEV, seed)
    check("gemv", backend, variant, (place_matrix(a, a_layout), place_vector(x, x_layout)), with_out)


def test_gemv_split_k_pieces():
    """split_k with several K pieces (K past 4096) on a few random-strided rows: hypothesis'
    tiny shapes never split K."""
    for seed, (M, K) in enumerate([(3, 2 * 4096 + 5), (1, 4096 + 1)]):
        a, x = SPECS["gemv"].make_inputs((M, K), torch.float32, DEV, seed)
        a = place_matrix(a, (seed == 0, 1, 2, 1, 3, False))
        for backend in BACKENDS:
            check("gemv", backend, "split_k", (a, place_vector(x, (2, 1, False))), True)


# ---- matmul: float64 reference; float32 exact or TF32 by torch's precision mode ---------------
@pytest.mark.parametrize("backend", list(BACKENDS))
@settings(max_examples=N_EXAMPLES["matmul"], **SETTINGS)
@given(data=st.data(), M=extent(40), N=extent(40), K=extent(40),
       dtype=st.sampled_from(SPECS["matmul"].dtypes), a_layout=layouts, b_layout=layouts,
       with_out=st.booleans(), seed=st.integers(0, 2 ** 16))
def test_matmul(backend, data, M, N, K, dtype, a_layout, b_layout, with_out, seed):
    from bench import registry
    takes = [v for v in BACKENDS[backend].variants("matmul")
             if registry.takes("matmul", backend, v, dtype, (M, N, K), DEV)]
    variant = data.draw(st.sampled_from((None, *takes)), label="variant")
    spec = SPECS["matmul"]
    a, b = spec.make_inputs((M, N, K), spec.torch_dtype(dtype), DEV, seed)
    check("matmul", backend, variant, (place_matrix(a, a_layout), place_matrix(b, b_layout)), with_out,
          context=lambda: spec.context(dtype))


def test_layouts_produce_the_strides_they_claim():
    v = torch.arange(12.0).view(3, 4)
    t = place_matrix(v, (True, 1, 3, 1, 2, False))
    assert torch.equal(t, v) and t.stride(0) == 1 and t.stride(1) > 4  # column-major, stepped
    s = place_matrix(v, (False, 2, 3, 1, 2, False))
    assert torch.equal(s, v) and s.stride() == (2 * (2 + 4 * 3 + 2), 3)  # buffer rows of 16
    bcast = place_matrix(v, (False, 1, 1, 0, 0, True))
    assert bcast.stride(0) == 0 and torch.equal(bcast, v[:1].expand(3, 4))
    x = place_vector(torch.arange(5.0), (3, 2, False))
    assert x.stride() == (3,) and torch.equal(x, torch.arange(5.0))
