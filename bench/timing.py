"""GPU timing, three ways.

- ``time_gpu``: CUDA events around each call, L2 flushed between repetitions, warm-up first,
  on torch's current stream (which the launches of both backends also use); the median, min,
  max. ``triton.testing.do_bench``'s method, with one change: the flush *reads* a buffer of 4x
  the L2 (at least 256 MB) where do_bench zeroes one. A zeroing flush leaves the L2 full of
  dirty lines whose write-back lands inside the next timed call: on an H200 (60 MB of L2) it
  added 7-9 us to every GEMV of 64-235 MB, capping a 117 MB one at 0.72 of copy where the
  same kernel after a reading flush ran at 0.89 (docs/decisions/001-timing-flush-and-back-to-back.md). A read evicts as
  well and leaves clean lines, as the weights a decode step streamed before would.
  The flush gives the host about 80 us of head start, so a kernel shorter than that is timed
  without its launch cost.
- ``time_interleaved``: ``time_gpu`` of several functions, their calls in turns, so a GPU
  clock that drifts under the power limit falls on all alike.
- ``time_loop``: events around ``calls`` back-to-back calls, no flush: per call, what a program's
  loop (a model's forward pass) sees, host cost included when it is the longer part;
  ``time_loops`` takes several functions' rounds in turns.
- ``host_cost_us``: wall time of ``calls`` calls on a small input before one synchronize: the
  host's share of a call alone.
"""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass

import torch

from kernel_common.util import back_to_back_ms


@dataclass
class Timing:
    median_ms: float
    min_ms: float
    max_ms: float


FLUSH = "read 256 MB (>= 4x L2) before each repetition"  # recorded in every result's meta
TURNS = "a case's implementations timed in turns, call by call (bench.timing.time_interleaved)"
LOOP_REPS = 9  # time_loops' rounds a function
LOOP_TURNS = (f"back-to-back rounds of a case's implementations in turns, median of {LOOP_REPS} "
              "(bench.timing.time_loops)")

_flush_buffers: dict[int, torch.Tensor] = {}


def _flush(device: int) -> None:
    buf = _flush_buffers.get(device)
    if buf is None:
        l2 = torch.cuda.get_device_properties(device).L2_cache_size
        buf = torch.ones(max(256 << 20, 4 * l2) // 4, device=device)
        _flush_buffers[device] = buf
    buf.sum()


def time_gpu(fn, *, warmup_ms: float = 25, rep_ms: float = 100) -> Timing:
    """Median, min and max milliseconds of ``fn()`` (see the module docstring); the number of
    repetitions fills ``rep_ms``, estimated from five calls, as do_bench does."""
    return time_interleaved([fn], warmup_ms=warmup_ms, rep_ms=rep_ms)[0]


def time_interleaved(fns, *, warmup_ms: float = 25, rep_ms: float = 100, min_reps: int = 1) -> list[Timing]:
    """``time_gpu`` of several functions at once, their calls in turns: each repetition flushes
    and times every function once, starting one further along the list. A GPU at its power limit
    lowers its clock within the first few hundred milliseconds of tensor-core load, so functions
    timed one after the other are timed at different clocks (H100, bf16 4096^3: cuBLAS timed
    first after a pause, 176-182 us a call; in the rounds after it, 189-204 us;
    docs/decisions/002-timing-in-turns.md). In turns, every function sees the same clocks. ``warmup_ms`` and ``rep_ms`` are per function;
    ``min_reps`` calls of each at least (one slow function among fast ones cuts the count)."""
    device = torch.cuda.current_device()
    for fn in fns:
        fn()
    torch.cuda.synchronize()
    begin, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    begin.record()
    for _ in range(5):
        for fn in fns:
            _flush(device)
            fn()
    end.record()
    torch.cuda.synchronize()
    estimate = begin.elapsed_time(end) / 5 / len(fns)  # one call and its flush, on average
    for _ in range(max(1, int(warmup_ms / estimate))):
        for fn in fns:
            fn()
    n = len(fns)
    events = [[(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in fns]
              for _ in range(max(min_reps, int(rep_ms / estimate)))]
    for r, rep in enumerate(events):
        for k in range(n):
            j = (r + k) % n
            start, stop = rep[j]
            _flush(device)
            start.record()
            fns[j]()
            stop.record()
    torch.cuda.synchronize()
    out = []
    for j in range(n):
        times = sorted(rep[j][0].elapsed_time(rep[j][1]) for rep in events)
        out.append(Timing(statistics.median(times), times[0], times[-1]))
    return out


def time_loop(fn, *, calls: int = 200, reps: int = 5) -> float:
    """Milliseconds per call of ``calls`` calls in a row between two events (median of ``reps``)."""
    return time_loops([fn], calls=[calls], reps=reps)[0]


def time_loops(fns, *, calls, reps: int = LOOP_REPS) -> list[float]:
    """``time_loop`` of several functions, their rounds in turns: each rep runs every function's
    ``calls[j]`` calls once, starting one further along the list. A call under 20 us is mostly host
    time, and a shared host's speed wanders (H200 transpose draws s231/s232, shapes under 6 us with
    no side of 1: every row's loop times reach a p90 of 17.6-19.5 us over medians of 12.0-13.0,
    torch's alike; ``lab/loop_medians.py``); rounds in turns put each wander on all alike, so the
    ratio between functions holds where one function's rounds alone would not."""
    for fn, n in zip(fns, calls):
        for _ in range(min(10, n)):
            fn()
    per_fn = [[] for _ in fns]
    for r in range(reps):
        for k in range(len(fns)):
            j = (r + k) % len(fns)
            per_fn[j].append(back_to_back_ms(fns[j], calls[j]))
    return [statistics.median(times) for times in per_fn]


def host_cost_us(fns, *, calls: int = 2000, reps: int = 5) -> list[float]:
    """Microseconds of host time per call of each of ``fns`` (median of ``reps`` runs of
    ``calls`` calls). The runs take turns (each rep runs every function once), so a drift of the
    host's speed during the measurement falls on all alike. The inputs should be small enough
    that the GPU keeps up, so the host is what is measured."""
    for fn in fns:
        for _ in range(50):
            fn()
    per_call = [[] for _ in fns]
    for _ in range(reps):
        for fn, times in zip(fns, per_call):
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            for _ in range(calls):
                fn()
            times.append((time.perf_counter() - t0) / calls * 1e6)
    torch.cuda.synchronize()
    return [statistics.median(times) for times in per_call]
