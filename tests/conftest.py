"""Shared fixtures. Without a GPU, Triton runs under its interpreter on CPU tensors.

TRITON_INTERPRET must be set before ``triton_impl`` is imported (``@triton.jit`` reads it when
the kernel is defined), so it is set here, before any test module imports the package.
"""

import importlib.util
import os
import pathlib
import tempfile

import pytest
import torch

HAS_GPU = torch.cuda.is_available()
if not HAS_GPU:
    os.environ.setdefault("TRITON_INTERPRET", "1")
# the tests of the heuristic's configs read no shipped tuning table (tests/test_tuning.py reads one
# of its own, and checks the tables the package ships)
os.environ.setdefault("TRITON_IMPL_SHIPPED_TUNING", "0")
# nor the rules' tests CUDA's measured picks (tests/test_picks.py reads a table of its own)
os.environ.setdefault("CUDA_REF_SHIPPED_PICKS", "0")
# nor tune: `bench compare` switches tuning on in its process (TRITON_IMPL_TUNE, a setdefault),
# and a test that ran it turned the rules' later picks into tuned ones (a split of K into none);
# nor read the user's tuning file (~/.cache), but one of the session's own
os.environ.setdefault("TRITON_IMPL_TUNE", "0")
os.environ.setdefault("TRITON_IMPL_TUNING_FILE", os.path.join(tempfile.mkdtemp(prefix="tuning-"), "tuning.json"))

requires_gpu = pytest.mark.skipif(not HAS_GPU, reason="needs a CUDA GPU (none found)")


@pytest.fixture(scope="session")
def device() -> str:
    """Where Triton tests run: the GPU, or the CPU under the interpreter."""
    return "cuda" if HAS_GPU else "cpu"


@pytest.fixture
def tuning_file(tmp_path, monkeypatch):
    """A tuning file of the test's own (TRITON_IMPL_TUNING_FILE), nothing read from it yet."""
    from triton_impl import _tuning  # (after TRITON_INTERPRET is set above)

    monkeypatch.setenv("TRITON_IMPL_TUNING_FILE", str(tmp_path / "tuning.json"))
    _tuning.forget()
    yield tmp_path / "tuning.json"
    _tuning.forget()


def within_forward_bound(alg: str, got, ref, inputs) -> bool:
    """A float gemv or matmul result that ``SPECS[alg].compare`` rejects, looked at once more: each
    element within the spec's tolerance times its own sum of |products| (the forward error bound).
    Random signs can cancel an output far below max |ref|, which compare scales by; the fuzz and
    property tests draw extents of at most 40, where the bound is still tight."""
    from bench.specs import SPECS
    from kernel_common import float32_matmul_precision

    spec = SPECS[alg]
    a, b = inputs
    K = a.shape[-1]
    if alg == "gemv":
        tol = spec.tolerance(got.dtype, K)
    else:
        kind = {torch.float32: "float32", torch.float16: "float16", torch.bfloat16: "bfloat16"}[got.dtype]
        if kind == "float32" and float32_matmul_precision() != "highest":
            kind = "tf32"
        tol = spec.tolerance(kind, K)
    scale = a.double().abs() @ b.double().abs()
    o = got.double()
    return bool((((o - ref).abs() <= tol * scale + 1e-300) & ~torch.isnan(o)).all())


@pytest.fixture(autouse=True)
def _release_gpu_cache(request):
    """After a slow test (operands of gigabytes), the caching allocator's free blocks go back to the
    driver: the GPU suite runs several pytest processes on one GPU (tools/gpu_suite.sh LANES=8), and
    one lane's cache of a finished test starved another's next (H100, 80 GB: 25 OutOfMemoryErrors in
    two lanes while others held 5-28 GB each, every one passing alone:
    bench/results/logs/h100-2026-12-06-gpu-suite-lanes-f90e047.txt)."""
    yield
    if HAS_GPU and request.node.get_closest_marker("slow") and torch.cuda.is_initialized():
        torch.cuda.empty_cache()


def tool_module(name: str):
    """tools/<name>.py loaded by its path: tools/ is run from the repository root, not installed with
    the package."""
    path = pathlib.Path(__file__).resolve().parents[1] / "tools" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"tools_{name}", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod
