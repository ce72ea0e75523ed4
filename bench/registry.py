"""The registry: one flat, explicit table of every implementation the harness knows.

``(algorithm, backend, variant) -> callable`` plus what it needs. Callables take the spec's
inputs and an optional ``out`` and return the result. Implementation packages are imported on
first call, so ``python -m bench list`` needs neither a GPU nor Triton's interpreter set up.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from typing import Callable

import torch

BACKENDS = ("cuda", "triton", "torch")


@dataclass(frozen=True)
class Impl:
    algorithm: str
    backend: str
    variant: str
    fn: Callable = field(compare=False, repr=False)
    # "impl": ours; "reference": the torch call a user would pick instead (the x-vs column);
    # "ceiling": a roofline measurement, timed but not compared (its output is not a result).
    role: str = "impl"
    max_elems: int | None = None  # the harness skips larger inputs (e.g. the one-thread kernel)
    max_k: int | None = None      # ... and inputs with a longer reduction (shape[1])
    needs_gpu: bool = True        # False: also runs on CPU (Triton under the interpreter, torch)
    layout: str | None = None     # the layout of A it reads ("row" / "col"); the harness prepares it
    # the spec's dtype names it takes (None: all); the harness leaves it out of the others
    dtypes: tuple[str, ...] | None = None
    limits: Callable | None = field(default=None, compare=False, repr=False)  # shape -> why it skips it, or None

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.algorithm, self.backend, self.variant)

    def fits(self, shape, numel: int) -> str | None:
        """Why the harness skips this shape for this implementation, or None."""
        if self.max_elems is not None and numel > self.max_elems:
            return f"above its size cap of {self.max_elems} elements"
        if self.max_k is not None and shape[1] > self.max_k:
            return f"K above its cap of {self.max_k}"
        return self.limits(shape) if self.limits is not None else None

    def takes(self, dtype_name: str) -> bool:
        """Does this implementation run on the spec's dtype name (e.g. matmul's "tf32")?"""
        return self.dtypes is None or dtype_name in self.dtypes


PACKAGES = {"cuda": "cuda_ref", "triton": "triton_impl"}


def package(backend: str):
    """A backend's public package (``cuda_ref``, ``triton_impl``): its ``pick`` and ``describe``."""
    return importlib.import_module(PACKAGES[backend])


def module(backend: str, algorithm: str):
    """The module behind a backend's public function: ``cuda_ref._matmul`` for ("cuda", "matmul")."""
    return importlib.import_module(f"{PACKAGES[backend]}._{algorithm}")


def _ours(package: str, function: str, variant: str):
    """A call of ``package.function(..., variant=variant)``, imported on first use."""
    def call(*inputs, out=None):
        return getattr(importlib.import_module(package), function)(*inputs, variant=variant, out=out)
    return call


# torch's references write into ``out`` when given, as ours do, so that neither side's timing
# includes an allocation.
def _torch_contiguous(a, out=None):
    # (of a batch (B, R, C) too: attention code's x.transpose(-1, -2).contiguous())
    return a.transpose(-1, -2).contiguous() if out is None else out.copy_(a.transpose(-1, -2))


def _torch_copy(a, out=None):
    # A same-size device copy: the bytes a transpose must move, with no reordering; into the
    # transpose's (C, R) output viewed as (R, C).
    return a.clone() if out is None else out.view(a.shape).copy_(a)


def _torch_matmul(a, b, out=None):
    # cuBLAS; TF32 only when the spec's context for the dtype name (tf32) allows it
    return torch.matmul(a, b, out=out)


def _torch_int_mm(a, b, out=None):
    # int8 x int8 -> int32 (cuBLASLt): torch.matmul takes no int8 on a GPU
    return torch._int_mm(a, b, out=out)


def int_mm_limits(shape) -> str | None:
    """The shapes torch._int_mm refuses on a GPU (its checks, torch 2.11): M <= 16, K or N not a
    multiple of 8."""
    M, N, K = shape
    if M <= 16 or K % 8 or N % 8 or K == 0 or N == 0:
        return "torch._int_mm takes M > 16 and K, N multiples of 8 only"
    return None


_M = "matmul"
_T = "transpose"
# The SGEMM walk is float32 only; "tf32" rows are float32 tensors too (the kernels stay exact
# float32, compared there with cuBLAS in TF32).
_F32 = ("float32", "tf32")
_F16 = ("float16", "bfloat16")
_FLOATS = (*_F32, *_F16)
_I8 = ("int8",)
def _few_rows_limit(shape):
    return None if shape[0] <= 1024 else "M above 1024 (a kernel for a few rows of a)"


TABLE: tuple[Impl, ...] = (
    Impl(_T, "cuda", "serial", _ours("cuda_ref", _T, "serial"), max_elems=1 << 16),
    Impl(_T, "cuda", "per_row", _ours("cuda_ref", _T, "per_row")),
    Impl(_T, "cuda", "per_element", _ours("cuda_ref", _T, "per_element")),
    Impl(_T, "cuda", "smem_tiled", _ours("cuda_ref", _T, "smem_tiled")),
    Impl(_T, "cuda", "smem_tiled_padded", _ours("cuda_ref", _T, "smem_tiled_padded")),
    Impl(_T, "cuda", "smem_tiled_rows", _ours("cuda_ref", _T, "smem_tiled_rows")),
    Impl(_T, "cuda", "smem_tiled_words", _ours("cuda_ref", _T, "smem_tiled_words")),
    Impl(_T, "cuda", "smem_tiled_sheared", _ours("cuda_ref", _T, "smem_tiled_sheared")),
    Impl(_T, "cuda", "smem_tiled_vec", _ours("cuda_ref", _T, "smem_tiled_vec")),
    Impl(_T, "triton", "per_row", _ours("triton_impl", _T, "per_row"), needs_gpu=False),
    Impl(_T, "triton", "blocked", _ours("triton_impl", _T, "blocked"), needs_gpu=False),
    Impl(_T, "triton", "words", _ours("triton_impl", _T, "words"), needs_gpu=False),
    Impl(_T, "torch", "contiguous", _torch_contiguous, role="reference", needs_gpu=False),
    Impl(_T, "torch", "copy", _torch_copy, role="ceiling", needs_gpu=False),
    # naive at 8192^3 takes ~0.2 s a call: slow, but it is the baseline, so no cap
    Impl(_M, "cuda", "naive", _ours("cuda_ref", _M, "naive"), dtypes=(*_FLOATS, "int32")),
    Impl(_M, "cuda", "smem_tiled", _ours("cuda_ref", _M, "smem_tiled"), dtypes=(*_FLOATS, "int32")),
    Impl(_M, "cuda", "blocktiled_1d", _ours("cuda_ref", _M, "blocktiled_1d"), dtypes=_F32),
    Impl(_M, "cuda", "blocktiled_2d", _ours("cuda_ref", _M, "blocktiled_2d"), dtypes=_F32),
    Impl(_M, "cuda", "vectorized", _ours("cuda_ref", _M, "vectorized"), dtypes=_F32),
    Impl(_M, "cuda", "warptiled", _ours("cuda_ref", _M, "warptiled"), dtypes=_F32),
    Impl(_M, "cuda", "double_buffered", _ours("cuda_ref", _M, "double_buffered"), dtypes=_F32),
    Impl(_M, "cuda", "pipelined", _ours("cuda_ref", _M, "pipelined"), dtypes=_F32),
    # the tensor-core walk: float16 / bfloat16 only
    Impl(_M, "cuda", "wmma", _ours("cuda_ref", _M, "wmma"), dtypes=_F16),
    Impl(_M, "cuda", "mma_sync", _ours("cuda_ref", _M, "mma_sync"), dtypes=_F16),
    Impl(_M, "cuda", "mma_pipelined", _ours("cuda_ref", _M, "mma_pipelined"), dtypes=_F16),
    Impl(_M, "cuda", "wgmma", _ours("cuda_ref", _M, "wgmma"), dtypes=(*_F16, *_I8)),
    Impl(_M, "cuda", "wgmma_ws", _ours("cuda_ref", _M, "wgmma_ws"), dtypes=_F16),
    # int8 -> int32: CUDA cores, then mma.sync (wgmma above takes int8 too)
    Impl(_M, "cuda", "dp4a", _ours("cuda_ref", _M, "dp4a"), dtypes=_I8),
    Impl(_M, "cuda", "mma_int8", _ours("cuda_ref", _M, "mma_int8"), dtypes=_I8),
    # decode shapes: a GEMV with M vectors on CUDA cores (slow by design on many rows)
    Impl(_M, "cuda", "few_rows", _ours("cuda_ref", _M, "few_rows"), dtypes=_F16,
         limits=_few_rows_limit),
    # and on tensor cores, roles swapped (a's rows are the MMA's narrow side)
    Impl(_M, "cuda", "few_rows_mma", _ours("cuda_ref", _M, "few_rows_mma"), dtypes=_F16,
         limits=_few_rows_limit),
    Impl(_M, "triton", "blocked", _ours("triton_impl", _M, "blocked"), needs_gpu=False),
    Impl(_M, "triton", "grouped", _ours("triton_impl", _M, "grouped"), needs_gpu=False),
    Impl(_M, "triton", "tma_persistent", _ours("triton_impl", _M, "tma_persistent"), needs_gpu=False,
         dtypes=(*_FLOATS, *_I8)),
    Impl(_M, "triton", "split_k", _ours("triton_impl", _M, "split_k"), needs_gpu=False, dtypes=(*_FLOATS, *_I8)),
    Impl(_M, "triton", "few_rows", _ours("triton_impl", _M, "few_rows"), needs_gpu=False, dtypes=_FLOATS,
         limits=_few_rows_limit),
    # Gluon: no interpreter
    Impl(_M, "triton", "fma_ws", _ours("triton_impl", _M, "fma_ws"), dtypes=_F32),
    Impl(_M, "triton", "few_rows_ws", _ours("triton_impl", _M, "few_rows_ws"), dtypes=_F32,
         limits=_few_rows_limit),
    Impl(_M, "torch", "matmul", _torch_matmul, role="reference", needs_gpu=False, dtypes=_FLOATS),
    # int32 has no torch reference on a GPU (the check's is exact, from float64: bench.specs.int_reference)
    Impl(_M, "torch", "int_mm", _torch_int_mm, role="reference", needs_gpu=False, dtypes=_I8, limits=int_mm_limits),
)


def _torch_mv(a, x, out=None):
    return torch.mv(a, x, out=out)


_G = "gemv"
TABLE += (
    Impl(_G, "cuda", "native", _ours("cuda_ref", _G, "native"), layout="row"),
    Impl(_G, "cuda", "coalesced", _ours("cuda_ref", _G, "coalesced"), layout="col"),
    # x in 64 KiB of constant memory: K <= 16384 in float32
    Impl(_G, "cuda", "coalesced_const", _ours("cuda_ref", _G, "coalesced_const"), layout="col",
         max_k=65536 // 4),
    Impl(_G, "cuda", "coalesced_shared", _ours("cuda_ref", _G, "coalesced_shared"), layout="col"),
    Impl(_G, "cuda", "warp_per_row", _ours("cuda_ref", _G, "warp_per_row"), layout="row"),
    Impl(_G, "cuda", "rows_per_warp", _ours("cuda_ref", _G, "rows_per_warp"), layout="row"),
    Impl(_G, "cuda", "split_k", _ours("cuda_ref", _G, "split_k"), layout="row"),
    Impl(_G, "triton", "blocked_row", _ours("triton_impl", _G, "blocked_row"), layout="row", needs_gpu=False),
    Impl(_G, "triton", "blocked_col", _ours("triton_impl", _G, "blocked_col"), layout="col", needs_gpu=False),
    Impl(_G, "triton", "split_k", _ours("triton_impl", _G, "split_k"), layout="row", needs_gpu=False),
    Impl(_G, "torch", "mv", _torch_mv, role="reference", layout="row", needs_gpu=False),
)


def takes(algorithm: str, backend: str, variant: str, dtype_name: str, shape, device: str | None = None) -> bool:
    """Does the registered (algorithm, backend, variant) run on this dtype name and shape (its
    dtype restriction and caps), and on ``device`` where given ("cpu": not a GPU-only one, such as
    a Gluon kernel among the Triton ones)? Tests and tools use it to skip the combinations a
    variant refuses by design (float32-only SGEMM kernels, constant memory's K limit)."""
    from bench.specs import SPECS
    impl = get(algorithm, backend, variant)
    if device == "cpu" and impl.needs_gpu:
        return False
    return impl.takes(dtype_name) and impl.fits(tuple(shape), SPECS[algorithm].numel(tuple(shape))) is None


def algorithms() -> tuple[str, ...]:
    return tuple(dict.fromkeys(i.algorithm for i in TABLE))


def select(algorithm=None, backend=None, variant=None) -> list[Impl]:
    """Rows matching every given filter, in table order."""
    return [i for i in TABLE
            if (algorithm is None or i.algorithm == algorithm)
            and (backend is None or i.backend == backend)
            and (variant is None or i.variant == variant)]


def get(algorithm: str, backend: str, variant: str) -> Impl:
    rows = select(algorithm, backend, variant)
    if not rows:
        raise KeyError(f"no implementation registered as {algorithm}/{backend}/{variant}")
    return rows[0]
