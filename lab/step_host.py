"""Where the switch's step time goes on a host-bound step (``bench model``'s small Llama): the
step timed with the switch toggled around each step (as ``bench model`` does) and left on for a
block of steps, the cost of an enable/disable pair, the host time spent inside the switch's
Python kernels per step, and a cProfile of a step with the switch on beside off.

Usage (GPU): python lab/step_host.py [triton|cuda|passthrough ...] [--size small] [--profile]
(``passthrough``: a switch whose Python kernels hand every call back to torch.)
"""

from __future__ import annotations

import argparse
import cProfile
import contextlib
import importlib
import io
import pstats
import statistics
import time

import torch

from bench import model


def _step_ms(m, ids) -> float:
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    model.step(m, ids)
    torch.cuda.synchronize()
    return (time.perf_counter() - t0) * 1e3


def _blocks(m, ids, mod, reps=20, blocks=3) -> tuple[float, float]:
    """Median step ms with the switch off and left on, in alternating blocks of ``reps`` steps."""
    times = {False: [], True: []}
    for i in range(2 * blocks):
        on = bool(i % 2)
        with mod.enabled() if on else contextlib.nullcontext():
            for j in range(reps + 2):
                t = _step_ms(m, ids)
                if j >= 2:
                    times[on].append(t)
    return statistics.median(times[False]), statistics.median(times[True])


def _toggle_us(mod, n=200) -> float:
    t0 = time.perf_counter()
    for _ in range(n):
        mod.enable()
        mod.disable()
    return (time.perf_counter() - t0) / n * 1e6


def _inside_ms(m, ids, mod) -> tuple[float, int]:
    """Host ms per step inside the switch's mm / addmm / mv kernels, and the calls."""
    sw = mod._switch
    spent, calls = [0.0], [0]
    originals = {name: getattr(sw, name) for name in ("_mm", "_addmm", "_mv")}

    def timed(fn):
        def inner(*args, **kw):
            t0 = time.perf_counter()
            try:
                return fn(*args, **kw)
            finally:
                spent[0] += time.perf_counter() - t0
                calls[0] += 1
        return inner

    for name, fn in originals.items():
        setattr(sw, name, timed(fn))
    try:
        with mod.enabled():
            model.step(m, ids)
            torch.cuda.synchronize()
            spent[0], calls[0] = 0.0, 0
            model.step(m, ids)
            torch.cuda.synchronize()
    finally:
        for name in originals:
            delattr(sw, name)
    return spent[0] * 1e3, calls[0]


def _profile(m, ids, ctx, lines=25) -> str:
    with ctx:
        model.step(m, ids)
        torch.cuda.synchronize()
        prof = cProfile.Profile()
        prof.enable()
        for _ in range(5):
            model.step(m, ids)
        torch.cuda.synchronize()
        prof.disable()
    s = io.StringIO()
    pstats.Stats(prof, stream=s).sort_stats("tottime").print_stats(lines)
    return s.getvalue()


def _passthrough():
    """``bench.model.passthrough()`` with the interface of a backend module."""
    from types import SimpleNamespace
    sw = model.passthrough()
    return SimpleNamespace(_switch=sw, enabled=sw.enabled, enable=sw.enable, disable=sw.disable)


def main(argv=None) -> int:
    p = argparse.ArgumentParser()
    p.add_argument("backends", nargs="*", default=["triton", "cuda", "passthrough"])
    p.add_argument("--size", default="small")
    p.add_argument("--profile", action="store_true", help="print cProfile tables (5 steps, off and on)")
    args = p.parse_args(argv)
    m, ids = model.build(torch.bfloat16, args.size)
    print(f"{torch.cuda.get_device_name()}, Llama {args.size}, bf16, batch {tuple(ids.shape)}")
    for name in args.backends:
        mod = _passthrough() if name == "passthrough" else \
            importlib.import_module({"triton": "triton_impl", "cuda": "cuda_ref"}[name])
        with mod.enabled():
            model.step(m, ids)  # plans and compiles
        off_t, on_t = model.time_steps(m, ids, [None, mod._switch])
        off_b, on_b = _blocks(m, ids, mod)
        inside, calls = _inside_ms(m, ids, mod)
        print(f"{name}: toggled per step: off {off_t:.2f} ms, on {on_t:.2f} ({off_t / on_t:.3f}x); "
              f"left on in blocks: off {off_b:.2f}, on {on_b:.2f} ({off_b / on_b:.3f}x); "
              f"enable+disable {_toggle_us(mod):.0f} us; inside the switch {inside:.2f} ms / {calls} calls "
              f"({inside / max(calls, 1) * 1e3:.1f} us each)", flush=True)
        if args.profile:
            print(f"--- cProfile, 5 steps, switch off ---\n{_profile(m, ids, contextlib.nullcontext())}")
            print(f"--- cProfile, 5 steps, {name} switch on ---\n{_profile(m, ids, mod.enabled())}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
