"""Size sweeps (``python -m bench compare --sweep``) and the progress bar they show on stderr.

A sweep runs ``compare`` once per (algorithm, size), reusing the ceilings measured by the first
call, so the records of a sweep are exactly those of ordinary runs at more sizes.
"""

from __future__ import annotations

import sys
import time

import torch

from bench.compare import case_layouts, compare, run_metadata
from bench.specs import SPECS

# The largest square per algorithm on an 80-141 GB GPU (powers of two from 256):
#   transpose 16384^2 fp32 = 1 GiB in, 1 GiB out (past the 50 MB L2 from 4096^2 on);
#   gemv 32768^2 fp32 = 4 GiB of A, plus its column-major copy and the float64 reference;
#   matmul 8192^3 is cuBLAS's ceiling shape (the naive CUDA kernel takes 0.4 s a call there).
LARGEST = {"transpose": 16384, "gemv": 32768, "matmul": 8192}
SMALLEST = 256
CPU_SIZES = (16, 32, 64)  # no GPU: the Triton interpreter checks only, slowly


def sweep_sizes(algorithm: str, gpu: bool = True) -> tuple[int, ...]:
    """Square sides (an N x N matrix; N^3 for matmul) of the sweep, smallest first."""
    if not gpu:
        return CPU_SIZES
    top = LARGEST[algorithm]
    return tuple(1 << p for p in range(SMALLEST.bit_length() - 1, top.bit_length()))


class ProgressBar:
    """``[#####-----] 12/40  1:23 elapsed, ~2:10 left  matmul float16 4096x4096x4096: timing``

    Redrawn in place on a terminal; on a pipe or a log file, one line per message instead."""

    def __init__(self, total: int, stream=None, width: int = 24):
        self.total, self.done, self.width = total, 0, width
        self.stream = stream or sys.stderr
        self.tty = hasattr(self.stream, "isatty") and self.stream.isatty()
        self.start = time.monotonic()
        self.message = ""
        self._last = 0

    def note(self, message: str) -> None:
        self.message = message
        self._draw()

    def advance(self, n: int = 1) -> None:
        self.done = min(self.total, self.done + n)
        self._draw()

    def close(self) -> None:
        if self.tty:
            self.stream.write("\n")
            self.stream.flush()

    def line(self) -> str:
        filled = self.width * self.done // max(self.total, 1)
        elapsed = time.monotonic() - self.start
        left = f", ~{_clock(elapsed / self.done * (self.total - self.done))} left" if self.done else ""
        return (f"[{'#' * filled}{'-' * (self.width - filled)}] {self.done}/{self.total}  "
                f"{_clock(elapsed)} elapsed{left}  {self.message}")

    def _draw(self) -> None:
        text = self.line()
        if self.tty:
            self.stream.write("\r" + text.ljust(self._last))
            self._last = len(text)
        else:
            self.stream.write(text + "\n")
        self.stream.flush()


def _clock(seconds: float) -> str:
    m, s = divmod(int(seconds), 60)
    return f"{m}:{s:02d}"


def run_sweep(algorithms, backends=None, variants=None, dtypes=None, *, seed: int = 0, stream=None,
              layouts=None, defaults_only: bool = False):
    """``compare`` over ``sweep_sizes`` for each algorithm (``layouts`` and ``defaults_only`` as
    there). Returns (metadata, ceilings, records) like ``compare``; the metadata is the first call's."""
    gpu = torch.cuda.is_available()
    for algorithm in algorithms:  # a bad --layout fails before the first size runs
        case_layouts(SPECS[algorithm], layouts)
    steps = [(a, n) for a in algorithms for n in sweep_sizes(a, gpu)]
    bar = ProgressBar(len(steps), stream)
    meta, ceilings, records = None, {}, []
    try:
        for algorithm, n in steps:
            bar.note(f"{algorithm} {n}")
            m, ceilings, recs = compare([algorithm], backends, variants, dtypes, [(n,)], seed=seed,
                                        progress=bar.note, ceilings=ceilings, layouts=layouts,
                                        defaults_only=defaults_only)
            meta = meta or m
            records += recs
            bar.advance()
    finally:
        bar.close()
    if meta is None:
        meta = run_metadata()
    return meta, ceilings, records
