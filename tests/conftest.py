"""Shared fixtures. Without a GPU, Triton runs under its interpreter on CPU tensors.

TRITON_INTERPRET must be set before ``triton_impl`` is imported (``@triton.jit`` reads it when
the kernel is defined), so it is set here, before any test module imports the package.
"""

import os

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
