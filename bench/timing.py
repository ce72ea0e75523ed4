"""GPU timing: CUDA events around each call, L2 flushed between repetitions, warm-up first.

``triton.testing.do_bench`` does exactly this on torch's current stream (it zeroes a 256 MB
buffer before every repetition to evict L2). CuPy launches from ``cuda_ref`` go on the same
stream, so the events bracket them correctly. We ask for the median, min and max.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class Timing:
    median_ms: float
    min_ms: float
    max_ms: float


def time_gpu(fn, *, warmup_ms: float = 25, rep_ms: float = 100) -> Timing:
    from triton.testing import do_bench

    med, lo, hi = do_bench(fn, warmup=warmup_ms, rep=rep_ms, quantiles=[0.5, 0.0, 1.0])
    return Timing(float(med), float(lo), float(hi))
