"""GPU timing, three ways.

- ``time_gpu``: CUDA events around each call, L2 flushed between repetitions, warm-up first:
  ``triton.testing.do_bench`` on torch's current stream (it zeroes a 256 MB buffer before every
  repetition to evict L2), which the launches of both backends also use. The median, min, max.
  The flush gives the host about 80 us of head start, so a kernel shorter than that is timed
  without its launch cost.
- ``time_loop``: events around ``calls`` back-to-back calls, no flush: per call, what a program's
  loop (a model's forward pass) sees, host cost included when it is the longer part.
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


def time_gpu(fn, *, warmup_ms: float = 25, rep_ms: float = 100) -> Timing:
    from triton.testing import do_bench

    med, lo, hi = do_bench(fn, warmup=warmup_ms, rep=rep_ms, quantiles=[0.5, 0.0, 1.0])
    return Timing(float(med), float(lo), float(hi))


def time_loop(fn, *, calls: int = 200, reps: int = 5) -> float:
    """Milliseconds per call of ``calls`` calls in a row between two events (median of ``reps``)."""
    for _ in range(10):
        fn()
    return statistics.median(back_to_back_ms(fn, calls) for _ in range(reps))


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
