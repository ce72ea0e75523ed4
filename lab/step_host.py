"""Where the switch's step time goes on a host-bound step (``bench model``'s small Llama): the
step timed with the switch toggled around each step (as ``bench model`` does) and left on for a
block of steps, the cost of an enable/disable pair, the host time spent inside the switch's
Python kernels per step, and a cProfile of a step with the switch on beside off.

Usage (GPU): python lab/step_host.py [triton|cuda|passthrough ...] [--size small] [--profile]
                 [--arch NAME] [--lr LR] [--rounds N] [--calls] [--phases]
(``passthrough``: a switch whose Python kernels hand every call back to torch; ``--arch``: a model of
bench/models.py's suite instead of the Llama; ``--lr 0``: the weights stay, so a mixture's router
sends the same rows to each expert every step and no step meets a new shape; ``--calls``: the calls'
host us inside a step, by signatures met and new, the pass-through switch's being torch's own;
``--phases``: forward, backward and update timed apart.)
"""

from __future__ import annotations

import argparse
import cProfile
import contextlib
import importlib
import io
import pstats
import statistics
import functools
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


def _new_calls(m, ids, mod, steps=3) -> str:
    """Host us of the switch's mm / addmm calls over ``steps`` steps, split into calls of a signature
    (shapes, strides, 16-byte alignment) met before in the run and new ones (ours: a plan made, or a
    row group's choice found; the pass-through switch: torch's own first call of a shape), with the
    costliest new ones: torch's calls and ours timed the same way inside the same kind of step."""
    sw = mod._switch
    rows = []  # (new, us, signature)
    seen = set()
    originals = {name: getattr(sw, name) for name in ("_mm", "_addmm")}

    def timed(fn):
        def inner(*args, **kw):
            sig = " ".join(f"{tuple(t.shape)}{tuple(t.stride())}{t.data_ptr() % 16}"
                           for t in args if isinstance(t, torch.Tensor))
            t0 = time.perf_counter()
            try:
                return fn(*args, **kw)
            finally:
                us = (time.perf_counter() - t0) * 1e6
                rows.append((sig not in seen, us, sig))
                seen.add(sig)
        return inner

    for name, fn in originals.items():
        setattr(sw, name, timed(fn))
    from triton_impl._launch import TritonLaunch
    encode, encoded = TritonLaunch._encode, [0]

    def counted(self, args, *rest):
        encoded[0] += 1
        return encode(self, args, *rest)
    TritonLaunch._encode = counted
    try:
        with mod.enabled():
            model.step(m, ids)
            torch.cuda.synchronize()
            rows.clear()
            encoded[0] = 0
            t0 = time.perf_counter()
            for _ in range(steps):
                model.step(m, ids)
            torch.cuda.synchronize()
            step_ms = (time.perf_counter() - t0) / steps * 1e3
    finally:
        TritonLaunch._encode = encode
        for name in originals:
            delattr(sw, name)
    out = [f"  {steps} steps, {step_ms:.2f} ms a step; Triton launches that encoded descriptors "
           f"(a new address): {encoded[0] / steps:.0f} a step"]
    for new in (False, True):
        us = [r[1] for r in rows if r[0] == new]
        if us:
            out.append(f"    {'new' if new else 'met'}: {len(us)} calls, {sum(us) / 1e3 / steps:.2f} ms a step, "
                       f"median {statistics.median(us):.1f} us, max {max(us):.0f} us")
    for r in sorted((r for r in rows if r[0]), key=lambda r: -r[1])[:8]:
        out.append(f"      {r[1]:.0f} us  {r[2]}")
    return "\n".join(out)


def _phases(m, ids, mod, rounds=10, block=5) -> str:
    """Host ms of a step's phases (forward to the loss, backward, the update and the final wait),
    torch's and the switch's in turns: no wait is added between phases, so each phase's time is
    its host time plus the waits on the device inside it."""
    times = {False: [], True: []}
    for r in range(rounds):
        for on in ((False, True) if r % 2 == 0 else (True, False)):
            with mod.enabled() if on else contextlib.nullcontext():
                for k in range(block + 1):
                    torch.cuda.synchronize()
                    t0 = time.perf_counter()
                    m.zero_grad(set_to_none=True)
                    loss = m(input_ids=ids, labels=ids).loss
                    t1 = time.perf_counter()
                    loss.backward()
                    t2 = time.perf_counter()
                    with torch.no_grad():
                        for p in m.parameters():
                            if p.grad is not None:
                                p.add_(p.grad, alpha=-1e-3)
                    torch.cuda.synchronize()
                    t3 = time.perf_counter()
                    if k:
                        times[on].append(((t1 - t0) * 1e3, (t2 - t1) * 1e3, (t3 - t2) * 1e3))
    out = []
    for on in (False, True):
        med = [statistics.median(t[i] for t in times[on]) for i in range(3)]
        out.append(f"  {'on ' if on else 'off'}: forward {med[0]:.2f} ms, backward {med[1]:.2f}, update+wait {med[2]:.2f}")
    return "\n".join(out)


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
    p.add_argument("--arch", default=None)
    p.add_argument("--lr", type=float, default=None)
    p.add_argument("--rounds", type=int, default=40)
    p.add_argument("--calls", action="store_true", help="split the switch's calls into met and new signatures")
    p.add_argument("--phases", action="store_true", help="forward, backward and update timed apart")
    args = p.parse_args(argv)
    if args.arch is None:
        m, ids = model.build(torch.bfloat16, args.size)
    else:
        from bench import models
        m = models.build(models.ARCHS[args.arch], args.size).to(torch.bfloat16).train()
        ids = torch.randint(1, m.config.vocab_size, (4, 256), device="cuda")
    if args.lr is not None:
        model.step = functools.partial(model.step, lr=args.lr)  # time_steps reads the module's step
    print(f"{torch.cuda.get_device_name()}, {args.arch or 'Llama'} {args.size}, bf16, batch {tuple(ids.shape)}"
          f"{'' if args.lr is None else f', lr {args.lr}'}")
    for name in args.backends:
        mod = _passthrough() if name == "passthrough" else \
            importlib.import_module({"triton": "triton_impl", "cuda": "cuda_ref"}[name])
        with mod.enabled():
            model.step(m, ids)  # plans and compiles
        off_t, on_t = model.time_steps(m, ids, [None, mod._switch], rounds=args.rounds)
        off_b, on_b = _blocks(m, ids, mod)
        inside, calls = _inside_ms(m, ids, mod)
        print(f"{name}: toggled per step: off {off_t:.2f} ms, on {on_t:.2f} ({off_t / on_t:.3f}x); "
              f"left on in blocks: off {off_b:.2f}, on {on_b:.2f} ({off_b / on_b:.3f}x); "
              f"enable+disable {_toggle_us(mod):.0f} us; inside the switch {inside:.2f} ms / {calls} calls "
              f"({inside / max(calls, 1) * 1e3:.1f} us each)", flush=True)
        if args.phases:
            print(_phases(m, ids, mod), flush=True)
        if args.calls:
            print(_new_calls(m, ids, mod), flush=True)
        if args.profile:
            print(f"--- cProfile, 5 steps, switch off ---\n{_profile(m, ids, contextlib.nullcontext())}")
            print(f"--- cProfile, 5 steps, {name} switch on ---\n{_profile(m, ids, mod.enabled())}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
