"""The registry: one flat, explicit table of every implementation the harness knows.

``(algorithm, backend, variant) -> callable`` plus what it needs. Callables take the spec's
inputs and an optional ``out`` and return the result. Implementation packages are imported on
first call, so ``python -m bench list`` needs neither a GPU nor Triton's interpreter set up.
"""

from __future__ import annotations

import importlib
import sys
from dataclasses import dataclass, field
from typing import Callable

import torch

from kernel_common.catalog import F16, FLOATS, I8, Variant, markdown_table

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
    max_k: int | None = None      # ... and inputs with a longer reduction (a shape's last extent)
    needs_gpu: bool = True        # False: also runs on CPU (Triton under the interpreter, torch)
    layout: str | None = None     # the layout of A it reads ("row" / "col"); the harness prepares it
    # the spec's dtype names it takes (None: all); the harness leaves it out of the others
    dtypes: tuple[str, ...] | None = None
    limits: Callable | None = field(default=None, compare=False, repr=False)  # shape -> why it skips it, or None
    case_layouts: tuple[str, ...] | None = None  # the spec's case layouts it takes (None: all)

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.algorithm, self.backend, self.variant)

    def fits(self, shape, numel: int) -> str | None:
        """Why the harness skips this shape for this implementation, or None."""
        if self.max_elems is not None and numel > self.max_elems:
            return f"above its size cap of {self.max_elems} elements"
        if self.max_k is not None and shape[-1] > self.max_k:
            return f"K above its cap of {self.max_k}"
        return self.limits(shape) if self.limits is not None else None

    def skips(self, shape, numel: int, case_layout) -> str | None:
        """Why the harness skips this case for this implementation (``fits``, or a case layout it
        does not take), or None."""
        if self.case_layouts is not None and case_layout not in self.case_layouts:
            return f"no {case_layout} case"
        return self.fits(shape, numel)

    def takes(self, dtype_name: str) -> bool:
        """Does this implementation run on the spec's dtype name (e.g. matmul's "tf32")?"""
        return self.dtypes is None or dtype_name in self.dtypes

    def runs_on(self, dtype_name: str, shape, numel: int) -> bool:
        """Does it take both the dtype name and the shape (its caps: short_k's K <= 16)?"""
        return self.takes(dtype_name) and self.fits(shape, numel) is None


PACKAGES = {"cuda": "cuda_ref", "triton": "triton_impl"}


def package(backend: str):
    """A backend's public package (``cuda_ref``, ``triton_impl``): its ``pick`` and ``describe``."""
    return importlib.import_module(PACKAGES[backend])


def _call(package: str, function: str, variant: str):
    """A call of ``package.function(..., variant=variant)``, imported on first use and looked up
    once (an import_module and a getattr a call cost a back-to-back loop about 2 us of host time a
    call on an H200 host, which torch's references do not pay)."""
    found = []

    def call(*inputs, out=None):
        if not found:
            found.append(getattr(importlib.import_module(package), function))
        return found[0](*inputs, variant=variant, out=out)
    return call


# torch's references write into ``out`` when given, as ours do, so that neither side's timing
# includes an allocation.
def _torch_contiguous(a, out=None):
    # (of a batch (B, R, C) too: attention code's x.transpose(-1, -2).contiguous()). Where the
    # transposed view is contiguous already (a side of 1, or a = x.t()), .contiguous() returns it
    # without a copy: the row is that view's clone() then, the bytes a transpose must move
    t = a.transpose(-1, -2)
    if out is not None:
        return out.copy_(t)
    return t.clone() if t.is_contiguous() else t.contiguous()


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


def scaled_mm_limits(shape) -> str | None:
    """The shapes torch._scaled_mm refuses (its checks, torch 2.11): K or N not a multiple of 16
    (a's row, b's both extents)."""
    M, N, K = shape
    if K % 16 or N % 16:
        return "torch._scaled_mm takes K and N multiples of 16 only"
    return None


def _few_rows_limit(max_m: int):
    def limit(shape):
        return None if shape[0] <= max_m else f"M above {max_m} (a kernel for a few rows of a)"
    return limit


def _descriptor_batch_limit(shape):
    """bmm's shapes a batch walk by tensor descriptors (a record whose ``batch`` names dtypes: 16-bit
    ones) skips: rows of a or b (K or N elements) off 16 bytes."""
    B, M, N, K = shape
    return None if N % 8 == 0 and K % 8 == 0 else "rows of a or b not whole 16 bytes (descriptors)"


def _ours(package: str, record) -> Impl:
    """The row of one of our variants, from its catalog record (``kernel_common.catalog``)."""
    backend = {v: k for k, v in PACKAGES.items()}[package]
    return Impl(record.algorithm, backend, record.name, _call(package, record.algorithm, record.name),
                needs_gpu=record.gpu_only, layout=record.layout, dtypes=record.dtypes,
                max_elems=record.max_elems, max_k=record.max_k,
                limits=_few_rows_limit(record.max_m) if record.max_m else None)


def _torch_mv(a, x, out=None):
    return torch.mv(a, x, out=out)


_copy_into: list = []  # (the last GEMV copy's destination: one kept, the size of its A)


def _torch_copy_matrix(a, x, out=None):
    # A same-size device copy of the GEMV's A: the bytes it reads, moved at a copy's rate (its
    # roofline, issue 54). The destination is made once per shape, outside the timed calls after
    # the first; ``out`` (the GEMV's y) is left alone.
    if not _copy_into or _copy_into[0].shape != a.shape or _copy_into[0].dtype != a.dtype \
            or _copy_into[0].device != a.device:
        _copy_into[:] = [torch.empty_like(a, memory_format=torch.contiguous_format)]
    return _copy_into[0].copy_(a)


# torch's rows: the references a user would call instead, and the copies that are transpose's and gemv's ceilings
TORCH_ROWS = (
    (Variant("transpose", "contiguous", "`a.t().contiguous()`, the reference a user would pick (`clone()` where that view is contiguous "
             "already: a side of 1, or a = x.t())"),
     _torch_contiguous, "reference", None),
    (Variant("transpose", "copy", "a same-size device copy: the bandwidth roofline"), _torch_copy, "ceiling", None),
    (Variant("matmul", "matmul", "`torch.matmul` (cuBLAS), the reference; cuBLAS at 8192^3 is the ceiling",
             dtypes=FLOATS), _torch_matmul, "reference", None),
    # int32 has no torch reference on a GPU (the check's is exact, from float64: bench.specs.int_reference)
    (Variant("matmul", "int_mm", "int8's reference, `torch._int_mm` (cuBLASLt; M > 16 and K, N multiples of 8 "
             "only); at 8192^3 with B = `W.t()` (its fast layout) the int8 ceiling. int32 has no torch reference "
             "on a GPU", dtypes=I8), _torch_int_mm, "reference", int_mm_limits),
    (Variant("gemv", "mv", "`torch.mv` (cuBLAS), the reference", layout="row"), _torch_mv, "reference", None),
    (Variant("gemv", "copy", "a same-size device copy of A: the bandwidth roofline", layout="row"), _torch_copy_matrix,
     "ceiling", None),
)
def _torch_grouped_mm(a, b, offs, out=None):
    # CUTLASS on sm_90 (bf16). It has no out=: its own result is returned and out left alone, since
    # a copy into out would be timed with it (up to 20% of its time at 128 experts)
    return torch.nn.functional.grouped_mm(a, b, offs=offs)


def _torch_scaled_mm(a, b, scale_a, scale_b, out=None):
    # cuBLASLt; bfloat16 out (what row-wise scales need on sm_90)
    return torch._scaled_mm(a, b, scale_a, scale_b, out_dtype=torch.bfloat16, out=out)


def _torch_mm_loop(a, b, offs, out=None):
    # what a model without a grouped kernel runs: one torch.mm per expert (the sizes read on the host)
    out = torch.empty((a.shape[0], b.shape[2]), dtype=a.dtype, device=a.device) if out is None else out
    start = 0
    for g, end in enumerate(offs.tolist()):
        torch.mm(a[start:end], b[g], out=out[start:end])
        start = end
    return out


ALGORITHMS = ("transpose", "matmul", "gemv")  # the catalogs': their variant tables; what a run takes by default
# harness algorithms of their own rows, run when named: grouped_mm (both backends; torch's
# grouped_mm the reference, a loop of torch.mm over the groups beside it) and scaled_mm (FP8, both
# backends; torch._scaled_mm the reference, per tensor and row-wise: it has no block scales)
NAMED = ("grouped_mm", "scaled_mm")
# harness algorithms over another's records, run when named (--algorithm addmm): addmm, the matmul
# variants whose epilogue adds a bias (their records' ``bias``) through the plan the switch's addmm
# calls, against torch.addmm
DERIVED = {"addmm": "matmul", "bmm": "matmul"}  # (bmm: the batch variants, their records' ``batch``)


def base_algorithm(algorithm: str) -> str:
    """The catalog algorithm whose variants ``algorithm``'s rows are (addmm: matmul's)."""
    return DERIVED.get(algorithm, algorithm)


def _bias_call(package: str, variant: str):
    """addmm's call of ``variant``: the plan the switch's addmm calls, (a, b, bias) in."""
    def call(a, b, bias, out=None):
        return importlib.import_module(package).plans("matmul")((a, b, bias), variant, out)
    return call


def _torch_addmm(a, b, bias, out=None):
    return torch.addmm(bias, a, b, out=out)


def _torch_bmm(a, b, out=None):
    return torch.bmm(a, b, out=out)


def _catalogs():
    """(backend, records) of our two packages (importing them)."""
    from cuda_ref.catalog import RECORDS as CUDA
    from triton_impl.catalog import RECORDS as TRITON
    return (("cuda", CUDA), ("triton", TRITON))


def _build() -> tuple[Impl, ...]:
    """Every row: per algorithm, the CUDA variants, the Triton ones (each in its catalog's order, the
    walk's), then torch's."""
    rows = []
    for algorithm in ALGORITHMS:
        rows += [_ours(PACKAGES[backend], r) for backend, records in _catalogs() for r in records
                 if r.algorithm == algorithm]
        rows += [Impl(algorithm, "torch", r.name, fn, role=role, needs_gpu=False, layout=r.layout, dtypes=r.dtypes,
                      limits=limits) for r, fn, role, limits in TORCH_ROWS if r.algorithm == algorithm]
    rows += [Impl("addmm", backend, r.name, _bias_call(PACKAGES[backend], r.name), needs_gpu=r.gpu_only,
                  dtypes=tuple(d for d in r.dtypes or F16 if d in F16),
                  limits=_few_rows_limit(r.max_m) if r.max_m else None) for backend, records in _catalogs()
             for r in records if r.algorithm == "matmul" and r.bias]
    rows.append(Impl("addmm", "torch", "addmm", _torch_addmm, role="reference", needs_gpu=False, dtypes=F16))
    rows += [Impl("bmm", backend, r.name, _call(PACKAGES[backend], "matmul", r.name), needs_gpu=r.gpu_only,
                  dtypes=r.batch if isinstance(r.batch, tuple) else r.dtypes,
                  limits=_descriptor_batch_limit if isinstance(r.batch, tuple) else None)
             for backend, records in _catalogs() for r in records if r.algorithm == "matmul" and r.batch]
    rows.append(Impl("bmm", "torch", "bmm", _torch_bmm, role="reference", needs_gpu=False, dtypes=FLOATS))
    rows += [Impl("grouped_mm", "cuda", "wgmma_grouped", _call("cuda_ref", "grouped_mm", "wgmma_grouped"),
                  dtypes=F16),
             Impl("grouped_mm", "triton", "tma_grouped", _call("triton_impl", "grouped_mm", "tma_grouped"),
                  needs_gpu=False, dtypes=F16),
             Impl("grouped_mm", "torch", "grouped_mm", _torch_grouped_mm, role="reference", dtypes=("bfloat16",)),
             Impl("grouped_mm", "torch", "mm_loop", _torch_mm_loop, role="reference", needs_gpu=False, dtypes=F16),
             Impl("scaled_mm", "cuda", "wgmma_fp8", _call("cuda_ref", "scaled_mm", "wgmma_fp8")),
             Impl("scaled_mm", "cuda", "few_rows_fp8", _call("cuda_ref", "scaled_mm", "few_rows_fp8")),
             Impl("scaled_mm", "triton", "tma_fp8", _call("triton_impl", "scaled_mm", "tma_fp8"), needs_gpu=False),
             Impl("scaled_mm", "triton", "few_rows_fp8", _call("triton_impl", "scaled_mm", "few_rows_fp8"),
                  needs_gpu=False),
             Impl("scaled_mm", "triton", "ws_fp8", _call("triton_impl", "scaled_mm", "ws_fp8")),
             Impl("scaled_mm", "torch", "scaled_mm", _torch_scaled_mm, role="reference", needs_gpu=False,
                  case_layouts=("tensor", "row"), limits=scaled_mm_limits)]
    return tuple(rows)


def __getattr__(name):
    # TABLE is built on first use: the catalogs import the backend packages, and a CPU run must set
    # TRITON_INTERPRET before triton_impl is imported (bench.cli does, when it runs a comparison).
    if name == "TABLE":
        globals()["TABLE"] = _build()
        return globals()["TABLE"]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _table() -> tuple[Impl, ...]:
    return sys.modules[__name__].TABLE


def variant_table(algorithm: str) -> str:
    """The README's variant table of ``algorithm``: every backend's records, in the registry's order."""
    rows = [(backend, r) for backend, records in _catalogs() for r in records if r.algorithm == algorithm]
    rows += [("torch", r) for r, *_ in TORCH_ROWS if r.algorithm == algorithm]
    return markdown_table(rows)


def takes(algorithm: str, backend: str, variant: str, dtype_name: str, shape, device: str | None = None) -> bool:
    """Does the registered (algorithm, backend, variant) run on this dtype name and shape (its
    dtype restriction and caps), and on ``device`` where given ("cpu": not a GPU-only one, such as
    a Gluon kernel among the Triton ones)? Tests and tools use it to skip the combinations a
    variant refuses by design (float32-only SGEMM kernels, constant memory's K limit)."""
    from bench.specs import SPECS
    impl = get(algorithm, backend, variant)
    if device == "cpu" and impl.needs_gpu:
        return False
    return impl.runs_on(dtype_name, tuple(shape), SPECS[algorithm].numel(tuple(shape)))


def within_k_cap(algorithm: str, backend: str, variant: str, shape) -> tuple:
    """``shape`` with its last extent (K) cut to the variant's cap (short_k's 16), for tests that
    run every variant on one shape."""
    cap = get(algorithm, backend, variant).max_k
    return tuple(shape) if cap is None or shape[-1] <= cap else (*shape[:-1], cap)


def algorithms() -> tuple[str, ...]:
    return ALGORITHMS


def known_algorithms() -> tuple[str, ...]:
    """Every algorithm the harness runs when named: the catalogs', the derived ones and those of
    their own rows."""
    return (*ALGORITHMS, *DERIVED, *NAMED)


def select(algorithm=None, backend=None, variant=None) -> list[Impl]:
    """Rows matching every given filter, in table order."""
    return [i for i in _table()
            if (algorithm is None or i.algorithm == algorithm)
            and (backend is None or i.backend == backend)
            and (variant is None or i.variant == variant)]


def get(algorithm: str, backend: str, variant: str) -> Impl:
    rows = select(algorithm, backend, variant)
    if not rows:
        raise KeyError(f"no implementation registered as {algorithm}/{backend}/{variant}")
    return rows[0]
