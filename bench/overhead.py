"""``python -m bench overhead``: what a program pays per call, beside torch's in the same run.

- Host cost: on a small input (the GPU keeps up, so the host is what is measured), the wall
  time per call of 2000 calls before one synchronize, for each backend's default
  (``variant=None``) and every named variant that takes the input. A program calling the
  library in a loop pays at least this per call, whatever the kernel's speed.
- Back-to-back (``LOOP_CASES``): the shapes a model's forward pass runs, per call of 200 calls
  between two events with no L2 flush, each backend's default and torch's (``loop_ms``).
- New shapes (``NEW_SHAPE_CASES``): the host time of a call on a shape the process has not met
  (its plan made in the call), the median over a walk of row counts, each backend's default and
  torch's: what a mixture of experts pays, whose experts' row counts move every step
  (docs/decisions/042-new-shape-host-cost.md). The walk times the odd row counts after the even
  ones, so each call's 16-row group has its choice made (decision 043), as in a model's later steps.
"""

from __future__ import annotations

import importlib
import statistics
import time

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


# (algorithm, spec dtype name, case layout, (rows, N, K)): Mixtral's expert projection (nn.Linear's W.t());
# the calls walk the even rows first (compiling what the walk needs), then time the odd ones
NEW_SHAPE_CASES = (("matmul", "bfloat16", "wt", (range(160, 400, 2), 1408, 1024)),)


def _calls(cases, variants: bool, what: str, progress, device: str):
    """Per case: (record, call) of torch's reference, each backend's default (``variant=None``)
    and, with ``variants``, each named variant that takes the dtype and the shape (short_k refuses
    a K past 16); records without figures."""
    name = torch.cuda.get_device_name(0) if device == "cuda" else device
    for algorithm, dtype_name, shape in cases:
        spec = SPECS[algorithm]
        inputs = spec.make_inputs(shape, spec.torch_dtype(dtype_name), device, seed=0)
        progress(f"{algorithm} {dtype_name} {'x'.join(map(str, shape))}: {what}")

        def record(backend, variant, role="impl", default=False):
            return Record(algorithm, backend, variant, role, dtype_name, list(shape), name, default=default)
        ref = next(i for i in registry.select(algorithm, "torch") if i.role == "reference")
        rows = [(record("torch", ref.variant, role="reference"), lambda: ref.fn(*inputs))]
        for backend, package in registry.PACKAGES.items():
            public = getattr(importlib.import_module(package), algorithm)
            rows.append((record(backend, "default", default=True), lambda public=public: public(*inputs)))
            for impl in registry.select(algorithm, backend) if variants else ():
                if impl.runs_on(dtype_name, shape, spec.numel(shape)):
                    own = spec.prepare(inputs, impl.layout)
                    rows.append((record(backend, impl.variant), lambda impl=impl, own=own: impl.fn(*own)))
        yield rows


def measure(progress=print, device: str = "cuda") -> list[Record]:
    """Host us per call on ``CASES``, every row of a case measured in turns."""
    records = []
    for rows in _calls(CASES, True, "host cost", progress, device):
        for (rec, _), us in zip(rows, host_cost_us([call for _, call in rows])):
            rec.host_us = us
            records.append(rec)
    return records


def measure_loops(progress=print, device: str = "cuda") -> list[Record]:
    """Back-to-back ms per call on ``LOOP_CASES``, and torch's over ours."""
    records = []
    for rows in _calls(LOOP_CASES, False, "back-to-back", progress, device):
        for rec, call in rows:
            rec.loop_ms = time_loop(call)
            rec.x_loop_vs_ref = None if rec.role == "reference" else rows[0][0].loop_ms / rec.loop_ms
            records.append(rec)
    return records


def _first_call_us(fn, inputs, sync) -> float:
    """Host us of ``fn(*inputs)``, the device idle before it (its work not waited for)."""
    sync()
    t0 = time.perf_counter()
    fn(*inputs)
    return (time.perf_counter() - t0) * 1e6


def measure_new_shapes(progress=print, device: str = "cuda") -> list[Record]:
    """Host us per call, median, on ``NEW_SHAPE_CASES``: each row count met for the first time by
    every implementation, torch's and each backend's default in turns; ``extra["rows"]`` names the walk."""
    name = torch.cuda.get_device_name(0) if device == "cuda" else device
    sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)
    records = []
    for algorithm, dtype_name, layout, (rows, N, K) in NEW_SHAPE_CASES:
        spec = SPECS[algorithm]
        progress(f"{algorithm} {dtype_name} {layout} Mx{N}x{K}: new shapes")
        ref = next(i for i in registry.select(algorithm, "torch") if i.role == "reference")
        fns = [("torch", ref.variant, "reference", ref.fn)] + [
            (backend, "default", "impl", getattr(importlib.import_module(package), algorithm))
            for backend, package in registry.PACKAGES.items()]
        times = [[] for _ in fns]
        for odd in (0, 1):
            for M in rows:
                inputs = spec.arrange(spec.make_inputs((M + odd, N, K), spec.torch_dtype(dtype_name), device, seed=0),
                                      layout)
                for i, (*_, fn) in enumerate(fns):
                    us = _first_call_us(fn, inputs, sync)
                    if odd:
                        times[i].append(us)
        walk = f"M {rows.start + 1}-{rows.stop - 1} step {rows.step}"
        for (backend, variant, role, _), us in zip(fns, times):
            records.append(Record(algorithm, backend, variant, role, dtype_name, [rows.start + 1, N, K], name,
                                  default=role == "impl", host_us=statistics.median(us),
                                  extra={"rows": walk, "layout": layout, "new_shapes": len(us)}))
    return records


def format_overhead(records: list[Record]) -> str:
    """One table per case: host us per call and the ratio to torch's equivalent call; then the
    back-to-back cases, us per call and torch's over ours."""
    lines = []
    loops = [r for r in records if r.loop_ms is not None]
    new = [r for r in records if r.host_us is not None and "new_shapes" in r.extra]
    records = [r for r in records if r.host_us is not None and "new_shapes" not in r.extra]
    for algorithm, dtype_name, shape in CASES:
        rows = [r for r in records if (r.algorithm, r.dtype, tuple(r.shape)) == (algorithm, dtype_name, shape)]
        ref = next((r for r in rows if r.role == "reference"), None)
        lines.append(f"== {algorithm}  {dtype_name}  {'x'.join(map(str, shape))}: host us per call (torch's / ours)")
        for r in rows:
            x = f"{ref.host_us / r.host_us:5.2f}x" if ref else ""
            lines.append(f"   {r.backend:7s} {r.variant:20s} {r.host_us:7.2f}  {x}")
    if new:
        ref = next(r for r in new if r.role == "reference")
        lines.append(f"== {ref.algorithm}  {ref.dtype}  {ref.extra['layout']}  {ref.extra['rows']} x {ref.shape[1]} x "
                     f"{ref.shape[2]}, each a shape not met before: host us per call, median (torch's / ours)")
        lines += [f"   {r.backend:7s} {r.variant:20s} {r.host_us:7.2f}  {ref.host_us / r.host_us:5.2f}x" for r in new]
    for algorithm, dtype_name, shape in LOOP_CASES:
        rows = [r for r in loops if (r.algorithm, r.dtype, tuple(r.shape)) == (algorithm, dtype_name, shape)]
        if rows:
            lines.append(f"== {algorithm}  {dtype_name}  {'x'.join(map(str, shape))}: back-to-back us per call "
                         f"(torch's / ours)")
            lines += [f"   {r.backend:7s} {r.variant:20s} {r.loop_ms * 1e3:7.2f}  "
                      f"{'' if r.x_loop_vs_ref is None else f'{r.x_loop_vs_ref:5.2f}x'}" for r in rows]
    return "\n".join(lines)
