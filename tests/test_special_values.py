"""Special values and determinism (issue 7, part 3).

- Transpose moves bits: random bit patterns (NaNs with any payload, signalling NaNs, infinities,
  -0.0, subnormals) come out bit for bit.
- GEMV and matmul propagate NaN and Inf as the float64 reference does: a NaN in row i of A makes
  y[i] (row i of C) NaN, a NaN in x makes all of y NaN, an infinity gives an infinity of the
  reference's sign (or NaN where +Inf and -Inf meet); the finite entries stay within the spec's
  tolerance.
- Every variant gives bitwise-identical results on repeated runs on the same input (no atomics;
  split_k sums its partials in a fixed order).

Triton on the CPU (interpreter) or the GPU; cuda_ref on the GPU only.
"""

from __future__ import annotations

import pathlib
import re

import pytest
import torch

import cuda_ref
import triton_impl
from bench import registry
from bench.specs import DTYPES, SPECS, MatmulSpec
from kernel_common import INT_BY_SIZE, dtype_name
from conftest import requires_gpu

BACKENDS = {"cuda": cuda_ref, "triton": triton_impl}
BACKEND_PARAMS = [pytest.param("cuda", marks=requires_gpu), "triton"]
ROOT = pathlib.Path(__file__).resolve().parents[1]
# numpy (the interpreter) warns on every NaN it makes; making them is the point here
pytestmark = pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning")


def device_of(backend: str, device: str) -> str:
    return "cuda" if backend == "cuda" else device


def variants(backend: str, alg: str, dtype=None, shape=None, device=None):
    """The variants of a backend; with dtype and shape, only those that take them by design (and
    run on ``device``: a GPU-only Triton variant not on the CPU)."""
    from bench import registry
    names = BACKENDS[backend].variants(alg)
    if dtype is not None:
        names = tuple(v for v in names if registry.takes(alg, backend, v, dtype_name(dtype), shape, device))
    assert names, f"no {backend} {alg} variant takes {dtype} {shape}: the test would check nothing"
    return names


def bits(t: torch.Tensor) -> torch.Tensor:
    return t.contiguous().view(INT_BY_SIZE[t.element_size()])


def random_bits(shape, dtype, device, seed: int) -> torch.Tensor:
    """Every bit pattern equally likely, plus the interesting ones planted at fixed places."""
    g = torch.Generator().manual_seed(seed)
    size = dtype.itemsize
    int_t = INT_BY_SIZE[size]
    lo, hi = -(1 << (8 * size - 1)), (1 << (8 * size - 1)) - 1
    raw = torch.randint(lo, hi, shape, generator=g, dtype=torch.int64).to(int_t)
    if dtype.is_floating_point:
        special = {
            torch.float16: [0x7E01, 0x7C01, 0xFE55, 0x7C00, 0xFC00, 0x8000, 0x0001],
            torch.bfloat16: [0x7FC1, 0x7F81, 0xFFD5, 0x7F80, 0xFF80, 0x8000, 0x0001],
            torch.float32: [0x7FC12345, 0x7F800001, 0xFFA00001, 0x7F800000, 0xFF800000, 0x80000000, 1],
            torch.float64: [0x7FF8000000012345, 0x7FF0000000000001, -0x0008000000000001,
                            0x7FF0000000000000, -0x0010000000000000, -(1 << 63), 1],
        }[dtype]  # quiet NaN + payload, signalling NaN, negative NaN, +Inf, -Inf, -0.0, subnormal
        flat = raw.view(-1)
        for i, pattern in enumerate(special[:flat.numel()]):
            if pattern >= 1 << (8 * size - 1):
                pattern -= 1 << (8 * size)  # as a signed integer of that size
            flat[i * 7 % flat.numel()] = pattern
    return raw.view(dtype).to(device)


# ---- transpose: bits in, bits out -----------------------------------------------------------
@pytest.mark.parametrize("dtype", list(DTYPES))
@pytest.mark.parametrize("backend", BACKEND_PARAMS)
def test_transpose_moves_bits_exactly(backend, dtype, device):
    dev = device_of(backend, device)
    shapes = [(33, 65), (64, 64), (100, 3)] + ([(1000, 1288)] if dev == "cuda" else [])
    for variant in variants(backend, "transpose"):
        for seed, shape in enumerate(shapes):
            a = random_bits(shape, DTYPES[dtype], dev, seed)
            for view in (a, a.t()):  # row-major and a transposed view
                out = BACKENDS[backend].transpose(view, variant=variant)
                assert torch.equal(bits(out), bits(view.t())), (variant, shape, view.stride())


# ---- gemv and matmul: NaN / Inf as the float64 reference ---------------------------------------
def assert_like_reference(alg, out, ref, inputs, where=""):
    """NaN where the reference is NaN, infinities of its sign where it is infinite, and the
    finite entries within the spec's tolerance."""
    o = out.double()
    nan_o, nan_r = torch.isnan(o), torch.isnan(ref)
    assert torch.equal(nan_o, nan_r), f"{where}: NaN at {nan_o.nonzero()[:5].tolist()}, " \
                                      f"reference NaN at {nan_r.nonzero()[:5].tolist()}"
    inf_r = torch.isinf(ref)
    assert torch.equal(torch.isinf(o), inf_r), f"{where}: infinities differ"
    assert torch.equal(o[inf_r], ref[inf_r]), f"{where}: infinities of the wrong sign"
    finite = torch.isfinite(ref)
    cmp = SPECS[alg].compare(torch.where(finite, out, 0), torch.where(finite, ref, 0).to(ref.dtype), inputs)
    assert cmp.ok, f"{where}: {cmp.detail}"


GEMV_DTYPES = ["float32", "float16", "bfloat16"]


def gemv_with_specials(M, K, dtype, dev, seed=0):
    a, x = SPECS["gemv"].make_inputs((M, K), DTYPES[dtype], dev, seed)
    nan_rows = [3, M - 1]
    a[3, 7] = float("nan")
    a[M - 1, K - 1] = float("nan")          # the last element: tails of every loop
    a[10, 0] = float("inf")
    a[20, K - 1] = -float("inf")
    a[30, 1] = a[30, 2] = float("inf")      # +Inf * x1 + Inf * x2: NaN where x1, x2 differ in sign
    if M > 128:
        a[M // 2, 0] = float("inf")         # away from A's ends (the masked twin's unchecked blocks)
    return a, x, nan_rows


@pytest.mark.parametrize("dtype", GEMV_DTYPES)
@pytest.mark.parametrize("backend", BACKEND_PARAMS)
def test_gemv_nan_inf_in_a(backend, dtype, device):
    dev = device_of(backend, device)
    # the second splits K in two for split_k; the last two run rows_per_warp's masked twin (rows off 16
    # bytes, each head and tail vector shared with a neighbour's inf or NaN; the inf at row M // 2 in a
    # middle row block of 64 rows, of 128 for its 8-lane geometry)
    shapes = [(67, 45), (40, 4096 + 5), (200, 191), (400, 97)]
    for variant in variants(backend, "gemv"):
        for M, K in shapes:
            a, x, nan_rows = gemv_with_specials(M, K, dtype, dev)
            for layout_a in (a, a.t().contiguous().t()):  # row- and column-major
                ref = SPECS["gemv"].reference((layout_a, x))
                y = BACKENDS[backend].gemv(layout_a, x, variant=variant)
                where = f"{backend} {variant} {M}x{K} {dtype} strides {layout_a.stride()}"
                assert torch.isnan(y[nan_rows]).all(), where
                assert torch.isinf(y[[10, 20]]).all(), where
                assert_like_reference("gemv", y, ref, (layout_a, x), where)


@pytest.mark.parametrize("backend", BACKEND_PARAMS)
def test_gemv_nan_inf_in_x(backend, device):
    dev = device_of(backend, device)
    for variant in variants(backend, "gemv"):
        a, x = SPECS["gemv"].make_inputs((67, 45), torch.float32, dev, 1)
        xn = x.clone()
        xn[44] = float("nan")                 # the last element of x: every y is NaN
        assert torch.isnan(BACKENDS[backend].gemv(a, xn, variant=variant)).all(), variant
        xi = x.clone()
        xi[0] = float("inf")                  # y[i] = A[i, 0] * Inf + finite: +-Inf by A's sign
        y = BACKENDS[backend].gemv(a, xi, variant=variant)
        assert torch.equal(y.double(), torch.where(a[:, 0] > 0, float("inf"), -float("inf")).double()), variant


MATMUL_DTYPES = ["float32", "float16", "bfloat16"]


@pytest.mark.parametrize("dtype", MATMUL_DTYPES)
@pytest.mark.parametrize("backend", BACKEND_PARAMS)
def test_matmul_nan_inf(backend, dtype, device):
    dev = device_of(backend, device)
    M, N, K = 67, 45, 33
    for variant in variants(backend, "matmul", dtype, (M, N, K), dev):
        a, b = MatmulSpec.make_inputs((M, N, K), DTYPES[dtype], dev, 2)
        a[3, 7] = float("nan")        # row 3 of C is NaN
        b[32, 44] = float("nan")      # column 44 of C is NaN (K's last slice, N's edge tile)
        b[10, 5] = float("inf")       # column 5: +-Inf by the sign of a[:, 10]
        a[66, 32] = -float("inf")     # row 66: +-Inf, NaN where it meets column 5's Inf
        with MatmulSpec.context(dtype):
            for la, lb in ((a, b), (a.t().contiguous().t(), b.t().contiguous().t())):
                ref = MatmulSpec.reference((la, lb))
                c = BACKENDS[backend].matmul(la, lb, variant=variant)
                where = f"{backend} {variant} {dtype} strides {la.stride()} {lb.stride()}"
                assert torch.isnan(c[3]).all() and torch.isnan(c[:, 44]).all(), where
                assert torch.isinf(c[:3, 5]).all(), where
                assert_like_reference("matmul", c, ref, (la, lb), where)


# ---- determinism: the same bits on every run -----------------------------------------------------
def _repeat_inputs(alg, dev):
    """Shapes where every variant's full path runs: edge tiles, several K pieces for split_k."""
    spec = SPECS[alg]
    if alg == "transpose":
        shapes = [(1000, 1288)] if dev == "cuda" else [(33, 65)]
        return [spec.make_inputs(s, torch.float16, dev, 3) for s in shapes] + \
            [spec.make_inputs(s, torch.float32, dev, 3) for s in shapes]
    if alg == "gemv":
        shapes = [(513, 4099), (33, 100003)] if dev == "cuda" else [(67, 45), (3, 4096 + 17)]
        return [spec.make_inputs(s, d, dev, 3) for s in shapes for d in (torch.float32, torch.bfloat16)]
    shapes = [(257, 300, 1025)] if dev == "cuda" else [(67, 45, 33)]
    return [spec.make_inputs(s, d, dev, 3) for s in shapes for d in (torch.float32, torch.float16)]


@pytest.mark.parametrize("alg", registry.algorithms())
@pytest.mark.parametrize("backend", BACKEND_PARAMS)
def test_bitwise_repeatable(backend, alg, device):
    dev = device_of(backend, device)
    fn = getattr(BACKENDS[backend], alg)
    for inputs in _repeat_inputs(alg, dev):
        shape = SPECS[alg].shape_of(inputs)
        for variant in variants(backend, alg, inputs[0].dtype, shape, dev):
            first = fn(*inputs, variant=variant)
            for _ in range(3):
                out = SPECS[alg].make_out(inputs)
                fn(*inputs, variant=variant, out=out)
                assert torch.equal(bits(out), bits(first)), \
                    f"{backend} {alg} {variant} {[tuple(t.shape) for t in inputs]}: results differ between runs"


# The atomics that order work and never add values: tc.cuh's count of a tile's finished runs
# (``last_run``: it picks which block adds the runs' sums, never their order), Triton's stream-K
# flags (a part raises its flag once its sums are stored; the tile's finisher takes it, lowering it),
# the Triton GEMV split_k_last's count of a row block's pieces and the Triton TMA matmul's count of a
# tile's K slices (SPLIT_LAST) and Triton few_rows' (LAST), all as tc.cuh's, and the few-row FP8 kernels'
# count of a tile's runs of K (Triton's few_rows_fp8 and tma_fp8 through one helper, CUDA's
# matmul_fp8_few_rows.cu), the same way
ORDERING_ATOMICS = (r"atomicAdd\(count, 1u\) == runs - 1", r"tl\.atomic_xchg\(flags_ptr \+ pid, 1, sem=\"release\"\)",
                    r"tl\.atomic_cas\(flags_ptr \+ holder, 1, 0, sem=\"acquire\"\)",
                    r"tl\.atomic_add\(flags_ptr \+ pid_m, 1, sem=\"acq_rel\"\) == SPLITS - 1",
                    r"tl\.atomic_add\(flags_ptr \+ tile, 1, sem=\"acq_rel\"\) == SPLIT_K - 1",
                    r"tl\.atomic_add\(flags_ptr \+ tile, 1, sem=\"acq_rel\"\) == runs - 1",
                    r"tl\.atomic_add\(flags_ptr \+ tile, 1, sem=\"acq_rel\"\) == splits - 1",
                    r"atomicAdd\(counters \+ tile, 1u\) == gridDim\.y - 1")


def test_no_atomics_in_any_kernel():
    """Determinism by construction: no kernel adds values atomically (checked without a GPU). The
    atomics there are order's (``ORDERING_ATOMICS``): each pattern found exactly once."""
    sources = list((ROOT / "cuda_ref" / "kernels").glob("*.cu*")) + list((ROOT / "triton_impl").glob("*.py"))
    assert sources
    counts = [0] * len(ORDERING_ATOMICS)
    for path in sources:
        text = path.read_text()
        for i, pattern in enumerate(ORDERING_ATOMICS):
            text, n = re.subn(pattern, "", text)
            counts[i] += n
        for word in ("atomicAdd", "atomicCAS", "atomicExch", "atomicInc", "atom.", "tl.atomic_", "atomic_add"):
            assert word not in text, f"{path.name} uses {word}: results could differ between runs"
    assert counts == [1] * len(ORDERING_ATOMICS)  # (the patterns still match their one use each)


def test_random_bits_plants_the_special_values():
    a = random_bits((8, 8), torch.float32, "cpu", 0)
    assert torch.isnan(a).any() and torch.isinf(a).any()
    assert bits(a).view(-1)[0].item() == 0x7FC12345
