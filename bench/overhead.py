"""``python -m bench overhead``: what a program pays per call, beside torch's in the same run.

- Host cost: on a small input (the GPU keeps up, so the host is what is measured), the wall
  time per call of 2000 calls before one synchronize, for each backend's default
  (``variant=None``) and every named variant that takes the input. A program calling the
  library in a loop pays at least this per call, whatever the kernel's speed.
- Back-to-back (``LOOP_CASES``): the shapes a model's forward pass runs, per call of 200 calls
  between two events with no L2 flush, each backend's default and torch's (``loop_ms``).
"""

from __future__ import annotations

import importlib

import torch

from bench import registry
from bench.results_io import Record
from bench.specs import SPECS
from bench.timing import host_cost_us, time_loop

# (algorithm, spec dtype name, shape): small, so the GPU never holds the loop up
CASES = (
    ("transpose", "float32", (64, 64)),
    ("gemv", "float32", (64, 64)),
    ("gemv", "bfloat16", (64, 64)),
    ("matmul", "float32", (64, 64, 64)),
    ("matmul", "bfloat16", (64, 64, 64)),
)


# (algorithm, spec dtype name, shape): decode-sized products and moves where launch cost shows
LOOP_CASES = (
    ("gemv", "bfloat16", (4096, 4096)),
    ("gemv", "float32", (4096, 4096)),
    ("transpose", "float32", (1024, 1024)),
    ("matmul", "bfloat16", (1024, 1024, 1024)),
    ("matmul", "bfloat16", (16, 4096, 4096)),
)


def _defaults(algorithm):
    """(backend, the public function) of each backend, and torch's reference Impl."""
    ref = next(i for i in registry.select(algorithm, "torch") if i.role == "reference")
    return ref, [(b, getattr(importlib.import_module(p), algorithm)) for b, p in registry.PACKAGES.items()]


def measure_loops(progress=print) -> list[Record]:
    device = torch.cuda.get_device_name(0)
    records = []
    for algorithm, dtype_name, shape in LOOP_CASES:
        spec = SPECS[algorithm]
        inputs = spec.make_inputs(shape, spec.torch_dtype(dtype_name), "cuda", seed=0)
        progress(f"{algorithm} {dtype_name} {'x'.join(map(str, shape))}: back-to-back")
        ref, publics = _defaults(algorithm)
        rows = [Record(algorithm, "torch", ref.variant, "reference", dtype_name, list(shape), device,
                       loop_ms=time_loop(lambda: ref.fn(*inputs)))]
        for backend, public in publics:
            rows.append(Record(algorithm, backend, "default", "impl", dtype_name, list(shape), device, default=True,
                               loop_ms=time_loop(lambda: public(*inputs))))
        for r in rows[1:]:
            r.x_loop_vs_ref = rows[0].loop_ms / r.loop_ms
        records += rows
    return records


def measure(progress=print) -> list[Record]:
    device = torch.cuda.get_device_name(0)
    records = []
    for algorithm, dtype_name, shape in CASES:
        spec = SPECS[algorithm]
        inputs = spec.make_inputs(shape, spec.torch_dtype(dtype_name), "cuda", seed=0)
        progress(f"{algorithm} {dtype_name} {'x'.join(map(str, shape))}: host cost")

        ref, publics = _defaults(algorithm)
        rows = [(Record(algorithm, "torch", ref.variant, "reference", dtype_name, list(shape), device),
                 lambda: ref.fn(*inputs))]
        for backend, public in publics:
            rows.append((Record(algorithm, backend, "default", "impl", dtype_name, list(shape), device, default=True),
                         lambda public=public: public(*inputs)))
            for impl in registry.select(algorithm, backend):
                if impl.takes(dtype_name):
                    own = spec.prepare(inputs, impl.layout)
                    rows.append((Record(algorithm, backend, impl.variant, "impl", dtype_name, list(shape), device),
                                 lambda impl=impl, own=own: impl.fn(*own)))
        for (record, _), us in zip(rows, host_cost_us([fn for _, fn in rows])):
            record.host_us = us
            records.append(record)
    return records


def format_overhead(records: list[Record]) -> str:
    """One table per case: host us per call and the ratio to torch's equivalent call; then the
    back-to-back cases, us per call and torch's over ours."""
    lines = []
    loops = [r for r in records if r.loop_ms is not None]
    records = [r for r in records if r.host_us is not None]
    for algorithm, dtype_name, shape in CASES:
        rows = [r for r in records if (r.algorithm, r.dtype, tuple(r.shape)) == (algorithm, dtype_name, shape)]
        ref = next((r for r in rows if r.role == "reference"), None)
        lines.append(f"== {algorithm}  {dtype_name}  {'x'.join(map(str, shape))}: host us per call (torch's / ours)")
        for r in rows:
            x = f"{ref.host_us / r.host_us:5.2f}x" if ref else ""
            lines.append(f"   {r.backend:7s} {r.variant:20s} {r.host_us:7.2f}  {x}")
    for algorithm, dtype_name, shape in LOOP_CASES:
        rows = [r for r in loops if (r.algorithm, r.dtype, tuple(r.shape)) == (algorithm, dtype_name, shape)]
        if rows:
            lines.append(f"== {algorithm}  {dtype_name}  {'x'.join(map(str, shape))}: back-to-back us per call "
                         f"(torch's / ours)")
            lines += [f"   {r.backend:7s} {r.variant:20s} {r.loop_ms * 1e3:7.2f}  "
                      f"{'' if r.x_loop_vs_ref is None else f'{r.x_loop_vs_ref:5.2f}x'}" for r in rows]
    return "\n".join(lines)
