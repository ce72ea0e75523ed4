"""Where a training step of ``bench model``'s Llama (or, with ``--arch``, a model of bench/models.py's
suite, bf16, a batch of 4 x 256 ids) spends the switch's time: every mm / addmm / mv
call the step makes, grouped by signature (op, shapes, strides, dtype), each timed through the aten
op with a backend's switch on and off (as the model reaches it: the dispatcher's Python layer
included), back to back (a loop of calls, one synchronize, no flush) and as GPU time (the profiler's
kernel time per call). Prints the signatures by what they cost a step, and the step itself.

Usage (GPU): python lab/model_calls.py [small|medium ...] [--arch NAME] [--steps] [--json FILE]
(``--steps``: the step alone, beside torch's and a pass-through switch's, profiled: host waits,
new device memory, plans a step makes, and the ops whose host time grew)
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import time
from collections import Counter

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from bench import model
from kernel_common.util import back_to_back_ms

OPS = {torch.ops.aten.mm.default: "mm", torch.ops.aten.addmm.default: "addmm", torch.ops.aten.mv.default: "mv"}


class _Log(TorchDispatchMode):
    """Counts each mm / addmm / mv signature a step dispatches."""

    def __init__(self):
        super().__init__()
        self.calls = Counter()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if func in OPS:
            ts = tuple((tuple(t.shape), tuple(t.stride()), t.storage_offset() != 0)
                       for t in args if isinstance(t, torch.Tensor))
            self.calls[(OPS[func], str(args[0].dtype).removeprefix("torch."), ts)] += 1
        return func(*args, **(kwargs or {}))


def _inputs(sig):
    op, dtype, ts = sig
    dt = getattr(torch, dtype)
    out = []
    for shape, stride, _ in ts:
        size = 1 + sum((n - 1) * s for n, s in zip(shape, stride))
        out.append(torch.randn(size, device="cuda").to(dt).as_strided(shape, stride))
    return out


def _call(op, args):
    return {"mm": torch.mm, "addmm": torch.addmm, "mv": torch.mv}[op](*args)


def _loop_us(fn, calls=200) -> float:
    fn()  # (a first call of a new shape plans and compiles)
    return back_to_back_ms(fn, calls) * 1e3


def _gpu_us(fn, calls=20) -> float:
    fn()
    torch.cuda.synchronize()
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        for _ in range(calls):
            fn()
        torch.cuda.synchronize()
    kernels = [e for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA]
    return sum(e.time_range.elapsed_us() for e in kernels) / calls


def _profile_step(m, ids) -> dict:
    """One training step under the profiler: its wall time, the GPU's busy time (kernels, overlaps
    merged) and the host time of the aten mm / addmm / mv calls (their CPU self time included)."""
    model.step(m, ids)
    torch.cuda.synchronize()
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU,
                                            torch.profiler.ProfilerActivity.CUDA]) as prof:
        t0 = time.perf_counter()
        model.step(m, ids)
        torch.cuda.synchronize()
        wall = time.perf_counter() - t0
    spans = sorted((e.time_range.start, e.time_range.end) for e in prof.events()
                   if e.device_type == torch.autograd.DeviceType.CUDA)
    busy, end = 0, None
    for s, e in spans:
        if end is None or s > end:
            busy, end = busy + (e - s), e
        elif e > end:
            busy, end = busy + (e - end), e
    averages = prof.key_averages()
    mm_host = sum(e.cpu_time_total for e in averages if e.key in ("aten::mm", "aten::addmm", "aten::mv"))
    # the host's waits on the device and its new device memory, and each op's host time (self)
    waits = [e for e in averages if "Synchronize" in e.key or e.key.startswith("cudaMemcpy")]
    mallocs = [e for e in averages if e.key == "cudaMalloc"]
    return {"wall_ms": wall * 1e3, "gpu_busy_ms": busy / 1e3, "mm_host_ms": mm_host / 1e3,
            "waits": sum(e.count for e in waits), "wait_ms": sum(e.cpu_time_total for e in waits) / 1e3,
            "mallocs": sum(e.count for e in mallocs),
            "self_ms": {e.key: e.self_cpu_time_total / 1e3 for e in averages}}


def _build(size: str, arch: str | None):
    """The model in train mode and its ids: the Llama of ``bench model --llama-step``, or ``arch``."""
    if arch is None:
        return model.build(torch.bfloat16, size)
    from bench import models
    m = models.build(models.ARCHS[arch], size).to(torch.bfloat16).train()
    return m, torch.randint(1, m.config.vocab_size, (4, 256), device="cuda")


def _steps(m, ids, mod) -> dict:
    """Step times with the switch off and on, in turns (``bench.model.time_steps``)."""
    off, on = model.time_steps(m, ids, [None, mod.switch], rounds=10, block=5)
    return {"step_ms_off": off, "step_ms_on": on, "x_step": off / on}


def _plans_made(m, ids, mod) -> int:
    """Plans a step makes under ``mod``'s switch (its matmul cache, after a step before it)."""
    from importlib import import_module
    cache = import_module(f"{mod.__name__}._matmul")._PLANS
    with mod.enabled():
        model.step(m, ids)
        before = len(cache)
        model.step(m, ids)
    return len(cache) - before


def run_steps(size: str, backends=("triton", "cuda"), arch: str | None = None) -> dict:
    """``--steps``: no call rows; each backend's step beside torch's and a pass-through switch's (the
    dispatcher's call into Python and back to torch's kernel: docs/decisions/005-switch-fast-table.md),
    in turns; the plans a step makes; and one profiled step each, whose host waits, new device
    memory and per-op host time (self) say where the switch's step time goes."""
    import cuda_ref
    import triton_impl
    mods = {"triton": triton_impl, "cuda": cuda_ref}
    m, ids = _build(size, arch)
    model.step(m, ids)
    switches = [None, model.passthrough()] + [mods[b].switch for b in backends]
    times = model.time_steps(m, ids, switches, rounds=10, block=5)
    out = {"size": size, "arch": arch or "llama", "device": torch.cuda.get_device_name(),
           "step_ms": dict(zip(["torch", "passthrough", *backends], times)), "profiles": {}, "plans_a_step": {}}
    out["profiles"]["torch"] = _profile_step(m, ids)
    for b in backends:
        out["plans_a_step"][b] = _plans_made(m, ids, mods[b])
        with mods[b].enabled():
            out["profiles"][b] = _profile_step(m, ids)
    return out


def report_steps(r: dict) -> str:
    ms = r["step_ms"]
    lines = [f"{r['device']}, {r['arch']} {r['size']}: ms a step (in turns): " +
             ", ".join(f"{k} {v:.2f} ({ms['torch'] / v:.2f}x)" for k, v in ms.items())]
    base = r["profiles"]["torch"]
    for k, p in r["profiles"].items():
        lines.append(f"  {k}: wall {p['wall_ms']:.2f} ms, GPU busy {p['gpu_busy_ms']:.2f}, host in mm/addmm/mv "
                     f"{p['mm_host_ms']:.2f}, waits {p['waits']} ({p['wait_ms']:.2f} ms), cudaMalloc {p['mallocs']}"
                     + (f", plans a step {r['plans_a_step'][k]}" if k in r["plans_a_step"] else ""))
        if k != "torch":  # the ops whose host time (self) grew most against torch's step
            more = sorted(((v - base["self_ms"].get(op, 0.0), op) for op, v in p["self_ms"].items()), reverse=True)
            lines.append("    more host time (self) than torch's step: " +
                         ", ".join(f"{op} +{d:.2f} ms" for d, op in more[:8] if d > 0.05))
    return "\n".join(lines)


def run(size: str, backends=("triton", "cuda"), arch: str | None = None) -> dict:
    import cuda_ref
    import triton_impl
    mods = {"triton": triton_impl, "cuda": cuda_ref}
    m, ids = _build(size, arch)
    model.step(m, ids)
    log = _Log()
    with log:
        model.step(m, ids)
    rows = []
    for sig, n in sorted(log.calls.items(), key=lambda kv: -kv[1]):
        args = _inputs(sig)
        row = {"op": sig[0], "dtype": sig[1], "args": [list(s) + [list(st)] for s, st, _ in sig[2]], "calls": n,
               "torch_loop_us": _loop_us(lambda: _call(sig[0], args)),
               "torch_gpu_us": _gpu_us(lambda: _call(sig[0], args))}
        for b in backends:
            with mods[b].enabled():
                row[f"{b}_loop_us"] = _loop_us(lambda: _call(sig[0], args))
                row[f"{b}_gpu_us"] = _gpu_us(lambda: _call(sig[0], args))
        rows.append(row)
    steps = {}
    for b in backends:
        steps[b] = _steps(m, ids, mods[b])
        for key, ctx in (("off", contextlib.nullcontext()), ("on", mods[b].enabled())):
            with ctx:
                steps[b][f"profile_{key}"] = _profile_step(m, ids)
    return {"size": size, "arch": arch or "llama", "device": torch.cuda.get_device_name(), "rows": rows, "steps": steps}


def report(r: dict, backends=("triton", "cuda")) -> str:
    lines = [f"{r['device']}, {r['arch']} {r['size']}: calls per step; us per call back to back (loop) and GPU"]
    head = f"{'op':6} {'n':>3}  {'shapes (strides)':58} {'torch loop/gpu':>15}"
    for b in backends:
        head += f" {b + ' loop/gpu':>15} {'step +us':>8}"
    lines.append(head)
    for row in r["rows"]:
        shapes = " ".join(f"{'x'.join(map(str, a[:-1]))}({','.join(map(str, a[-1]))})" for a in row["args"])
        line = f"{row['op']:6} {row['calls']:>3}  {shapes:58} {row['torch_loop_us']:7.1f}/{row['torch_gpu_us']:<7.1f}"
        for b in backends:
            extra = row["calls"] * (row[f"{b}_loop_us"] - row["torch_loop_us"])
            line += f" {row[f'{b}_loop_us']:7.1f}/{row[f'{b}_gpu_us']:<7.1f} {extra:8.0f}"
        lines.append(line)
    for b, s in r["steps"].items():
        lines.append(f"step {b}: torch {s['step_ms_off']:.2f} ms, on {s['step_ms_on']:.2f} ms ({s['x_step']:.2f}x)")
        for key in ("off", "on"):
            p = s[f"profile_{key}"]
            lines.append(f"  profiled, switch {key}: wall {p['wall_ms']:.2f} ms, GPU busy {p['gpu_busy_ms']:.2f} ms, "
                         f"host in aten mm/addmm/mv {p['mm_host_ms']:.2f} ms")
    return "\n".join(lines)


def main(argv=None) -> int:
    p = argparse.ArgumentParser()
    p.add_argument("sizes", nargs="*", default=["small", "medium"])
    p.add_argument("--arch", help="a model of bench/models.py's ARCHS instead of the Llama step's")
    p.add_argument("--json")
    p.add_argument("--steps", action="store_true", help="the step alone: beside a pass-through switch, profiled")
    args = p.parse_args(argv)
    results = []
    for size in args.sizes:
        results.append((run_steps if args.steps else run)(size, arch=args.arch))
        print((report_steps if args.steps else report)(results[-1]), flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
