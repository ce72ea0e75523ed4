"""``python -m bench overhead``: the host cost of one call of every public function.

On a small input (the GPU keeps up, so the host is what is measured), the wall time per call
of 2000 calls before one synchronize: each backend's default (``variant=None``) and every named
variant that takes the input, with torch's equivalent call in the same run. A program calling
the library in a loop pays at least this per call, whatever the kernel's speed.
"""

from __future__ import annotations

import importlib

import torch

from bench import registry
from bench.results_io import Record
from bench.specs import SPECS
from bench.timing import host_cost_us

# (algorithm, spec dtype name, shape): small, so the GPU never holds the loop up
CASES = (
    ("transpose", "float32", (64, 64)),
    ("gemv", "float32", (64, 64)),
    ("gemv", "bfloat16", (64, 64)),
    ("matmul", "float32", (64, 64, 64)),
    ("matmul", "bfloat16", (64, 64, 64)),
)


def measure(progress=print) -> list[Record]:
    device = torch.cuda.get_device_name(0)
    records = []
    for algorithm, dtype_name, shape in CASES:
        spec = SPECS[algorithm]
        inputs = spec.make_inputs(shape, spec.torch_dtype(dtype_name), "cuda", seed=0)
        progress(f"{algorithm} {dtype_name} {'x'.join(map(str, shape))}: host cost")

        def record(backend, variant, fn, role="impl", default=False):
            records.append(Record(algorithm, backend, variant, role, dtype_name, list(shape), device,
                                  default=default, host_us=host_cost_us(fn)))
        ref = next(i for i in registry.select(algorithm, "torch") if i.role == "reference")
        record("torch", ref.variant, lambda: ref.fn(*inputs), role="reference")
        for backend, package in registry.PACKAGES.items():
            public = getattr(importlib.import_module(package), algorithm)
            record(backend, "default", lambda: public(*inputs), default=True)
            for impl in registry.select(algorithm, backend):
                if impl.takes(dtype_name):
                    own = spec.prepare(inputs, impl.layout)
                    record(backend, impl.variant, lambda: impl.fn(*own))
    return records


def format_overhead(records: list[Record]) -> str:
    """One table per case: host us per call and the ratio to torch's equivalent call."""
    lines = []
    for algorithm, dtype_name, shape in CASES:
        rows = [r for r in records if (r.algorithm, r.dtype, tuple(r.shape)) == (algorithm, dtype_name, shape)]
        ref = next((r for r in rows if r.role == "reference"), None)
        lines.append(f"== {algorithm}  {dtype_name}  {'x'.join(map(str, shape))}: host us per call (x torch)")
        for r in rows:
            x = f"{r.host_us / ref.host_us:5.2f}x" if ref else ""
            lines.append(f"   {r.backend:7s} {r.variant:20s} {r.host_us:7.2f}  {x}")
    return "\n".join(lines)
