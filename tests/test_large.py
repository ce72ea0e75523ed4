"""Past 2^31 elements (issue 7, part 5): every algorithm, both backends, on inputs whose element
count (or offset) does not fit in a signed 32-bit integer, so a 32-bit index would wrap in the
last rows. GPU only and slow (about a minute on an H200); at most ~18 GB of GPU memory at a
time (a float32 matmul operand and pipelined's transposed copy of it), so an 80 GB H100 is plenty.

Inputs are drawn on the GPU in row blocks (a float32 temporary of the whole 4.3 GB input would
need 8.6 GB more). Transpose is checked exactly and completely, in column blocks against
torch's ``a.t().contiguous()``; gemv and matmul against the float64 reference on sampled rows:
the first, the last (past 2^31), and random ones, with bench.specs' tolerance.
"""

import gc

import pytest
import torch

import cuda_ref
import triton_impl
from bench import registry
from bench.specs import SPECS, poison
from conftest import requires_gpu
from kernel_common import matmul_out_dtype

pytestmark = [requires_gpu, pytest.mark.slow]
BACKENDS = {"cuda": cuda_ref, "triton": triton_impl}
INT32_MAX = 2 ** 31 - 1


@pytest.fixture(autouse=True)
def _free_gpu_memory():
    yield
    gc.collect()
    torch.cuda.empty_cache()


def fill_random_(t: torch.Tensor, seed: int, lo: float, hi: float, rows: int = 4096) -> torch.Tensor:
    """Fill a 2-D tensor (any strides) with magnitudes in [lo, hi) and random signs, never zero,
    a block of rows at a time."""
    g = torch.Generator(device=t.device).manual_seed(seed)
    for r0 in range(0, t.shape[0], rows):
        block = t[r0:r0 + rows]
        v = torch.rand(block.shape, generator=g, device=t.device) * (hi - lo) + lo
        v *= torch.randint(0, 2, block.shape, generator=g, device=t.device, dtype=torch.int8) * 2 - 1
        block.copy_(v)
    return t


def sample_rows(M: int, seed: int = 0, n: int = 64) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    random = torch.randint(0, M, (n,), generator=g)
    return torch.cat([torch.arange(0, n), random, torch.arange(M - n, M)]).unique()


def assert_sampled_rows(alg: str, out, a, other, where: str, dtype: str = "float16") -> None:
    """``out`` = a (op) other: the sampled rows against the float64 reference with the spec's
    tolerance (a float64 copy of the whole of ``a`` would not fit), and no row left unwritten
    (``out`` was NaN before the call)."""
    spec = SPECS[alg]
    rows = sample_rows(a.shape[0]).to(a.device)
    sub = (a[rows], other)
    with spec.context(dtype):
        cmp = spec.compare(out[rows], spec.reference(sub), sub)
    assert cmp.ok, f"{where}: {cmp.detail}"
    unwritten = torch.isnan(out) if out.is_floating_point() else out == torch.iinfo(out.dtype).min
    assert not unwritten.any(), f"{where}: rows left unwritten"


# ---- transpose: 46341^2 float16 = 2^31 + 4633 elements -----------------------------------------
# 46341 is odd: rows are not 16-byte aligned, so the vector kernel takes its scalar path; 46344
# (a multiple of 8) runs its 16-byte path. serial (one thread) would take hours.
TRANSPOSE_CASES = [("cuda", v, 46341) for v in cuda_ref.variants("transpose") if v != "serial"] \
    + [("triton", v, 46341) for v in triton_impl.variants("transpose")] \
    + [("cuda", None, 46341), ("triton", None, 46341), ("cuda", None, 46344), ("triton", None, 46344)]


@pytest.mark.parametrize("backend,variant,n", TRANSPOSE_CASES)
def test_transpose_past_2_31(backend, variant, n):
    assert n * n > INT32_MAX
    # random bits, drawn straight into int16: every pattern, NaNs included, compared as bits
    a16 = torch.randint(-2 ** 15, 2 ** 15, (n, n), dtype=torch.int16, device="cuda")
    a = a16.view(torch.float16)
    out = torch.full((n, n), -1, dtype=torch.int16, device="cuda").view(torch.float16)  # poison
    BACKENDS[backend].transpose(a, variant=variant, out=out)
    out16 = out.view(torch.int16)
    for c0 in range(0, n, 4096):  # out rows c0.. are columns c0.. of a: ~0.4 GB at a time
        expect = a16[:, c0:c0 + 4096].t().contiguous()
        assert torch.equal(out16[c0:c0 + 4096], expect), f"{backend} {variant}: rows {c0}.. of the output differ"


# ---- gemv: (2^16 + 1) x 32769 float16 = 2^31 + 2^16 + ... elements ------------------------------
GEMV_M, GEMV_K = 2 ** 16 + 1, 32769
from cuda_ref import _gemv as _cuda_gemv  # noqa: E402
from triton_impl import _gemv as _triton_gemv  # noqa: E402
GEMV_CASES = [("cuda", v, _cuda_gemv.LAYOUT[v]) for v in cuda_ref.variants("gemv") if v != "coalesced_const"] \
    + [("triton", v, _triton_gemv.LAYOUT[v]) for v in triton_impl.variants("gemv")] \
    + [(b, None, layout) for b in BACKENDS for layout in ("row", "col")]  # the defaults, by layout


def gemv_inputs(layout: str, seed: int = 11):
    M, K = GEMV_M, GEMV_K
    if layout == "row":
        a = torch.empty((M, K), dtype=torch.float16, device="cuda")
        fill_random_(a, seed, 0.5, 1.0)
    else:  # column-major: the .t() view of a contiguous (K, M)
        a = torch.empty((K, M), dtype=torch.float16, device="cuda")
        fill_random_(a, seed, 0.5, 1.0)
        a = a.t()
    x = fill_random_(torch.empty((1, K), dtype=torch.float16, device="cuda"), seed + 1,
                     0.5 * K ** -0.5, K ** -0.5)[0]
    return a, x


@pytest.mark.parametrize("backend,variant,layout", GEMV_CASES)
def test_gemv_past_2_31(backend, variant, layout):
    assert GEMV_M * GEMV_K > INT32_MAX
    a, x = gemv_inputs(layout)
    out = torch.full((GEMV_M,), float("nan"), dtype=a.dtype, device="cuda")
    BACKENDS[backend].gemv(a, x, variant=variant, out=out)
    assert_sampled_rows("gemv", out, a, x, f"{backend} {variant} {layout}")


def test_gemv_const_refuses_past_its_capacity():
    """coalesced_const keeps x in 64 KiB of constant memory: K = 32769 float16 is 2 bytes too many."""
    a, x = gemv_inputs("col")
    with pytest.raises(ValueError, match="K must be <= 32768"):
        cuda_ref.gemv(a, x, variant="coalesced_const")


# ---- matmul: a (2^21 + 3) x 1024 = 2^31 + 3072 elements, N = 16 (cheap in flops) ---------------
# (short_k, K <= 16: a (2^27 + 3) x 16, and c of as many elements)
# float16 where the variant takes it; the float32-only SGEMM walk in float32 (8.6 GB); the int8-only
# variants in int8 (int32 result).
MATMUL_CASES = [(b, v, next(d for d in ("float16", "float32", "int8")
                            if registry.takes("matmul", b, v, d, (8, 8, 8))))
                for b in BACKENDS for v in BACKENDS[b].variants("matmul")]


@pytest.mark.parametrize("backend,variant,dtype", MATMUL_CASES)
def test_matmul_past_2_31(backend, variant, dtype):
    N, K = 16, registry.within_k_cap("matmul", backend, variant, (1024,))[0]  # short_k: K = 16, c past 2^31 too
    M = INT32_MAX // K + 4
    assert M * K > INT32_MAX
    torch_dtype = SPECS["matmul"].torch_dtype(dtype)
    lo, hi = (1, 128) if dtype == "int8" else (0.25 * K ** -0.25, K ** -0.25)  # (int8: 1 .. 127)
    a = fill_random_(torch.empty((M, K), dtype=torch_dtype, device="cuda"), 21, lo, hi)
    b = fill_random_(torch.empty((K, N), dtype=torch_dtype, device="cuda"), 22, lo, hi)
    out = poison((M, N), matmul_out_dtype(torch_dtype), "cuda")
    with SPECS["matmul"].context(dtype):
        BACKENDS[backend].matmul(a, b, variant=variant, out=out)
    assert_sampled_rows("matmul", out, a, b, f"{backend} {variant} {dtype}", dtype)
