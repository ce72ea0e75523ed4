"""Tuning a program can live with: bucketed keys, no benchmarking unless asked, results on disk.

A tuned config is kept per bucket (the device, the dtypes and layouts, each extent rounded up to
a power of two), so a new M inside a known bucket reuses the config, and the compiled kernel of
its class (Triton specializes on M % 16 == 0 and M == 1: at most one compile per class). An
unseen bucket runs a heuristic config at once.
Benchmarking happens only when asked: ``TRITON_IMPL_TUNE=1`` tunes each unseen bucket on its
first call, ``triton_impl.tune(...)`` (or ``python -m bench tune``) tunes the shapes named.
Results are written to a JSON file (``TRITON_IMPL_TUNING_FILE``, default
``~/.cache/gpu-kernels-reference/triton-tuning.json``) that a new process reads back.
"""

from __future__ import annotations

import json
import os
import pathlib
import statistics
import tempfile
import threading

import torch
import triton

from kernel_common.util import back_to_back_ms

_lock = threading.Lock()
_table: dict | None = None  # {device name: {bucket: config as a dict}}


def enabled() -> bool:
    """Does a call on an unseen bucket benchmark its candidates (``TRITON_IMPL_TUNE=1``)?"""
    return os.environ.get("TRITON_IMPL_TUNE", "0") == "1"


def path() -> pathlib.Path:
    default = pathlib.Path.home() / ".cache" / "gpu-kernels-reference" / "triton-tuning.json"
    return pathlib.Path(os.environ.get("TRITON_IMPL_TUNING_FILE", default))


def bucket(*extents: int) -> tuple[int, ...]:
    """Each extent rounded up to a power of two (at least 16): the shapes one tuning serves."""
    return tuple(max(16, triton.next_power_of_2(n)) for n in extents)


def _load() -> dict:
    global _table
    if _table is None:
        try:
            _table = json.loads(path().read_text())
        except (OSError, ValueError):
            _table = {}
    return _table


def _device_name(device: torch.device) -> str:
    return torch.cuda.get_device_name(device) if device.type == "cuda" else device.type


def lookup(device: torch.device, key: str) -> triton.Config | None:
    with _lock:
        entry = _load().get(_device_name(device), {}).get(key)
    if entry is None:
        return None
    kwargs = dict(entry)
    return triton.Config(kwargs, num_warps=kwargs.pop("num_warps"), num_stages=kwargs.pop("num_stages"))


def store(device: torch.device, key: str, cfg: triton.Config) -> None:
    """Keep ``cfg`` for ``key`` and rewrite the file (atomically: a reader never sees half)."""
    entry = dict(cfg.kwargs, num_warps=cfg.num_warps, num_stages=cfg.num_stages)
    with _lock:
        table = _load()
        table.setdefault(_device_name(device), {})[key] = entry
        target = path()
        target.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile("w", dir=target.parent, delete=False, suffix=".tmp") as f:
            json.dump(table, f, indent=1, sort_keys=True)
        os.replace(f.name, target)


# Rounds of the candidates in turns, and how much faster than the preferred (heuristic) config
# another must run to replace it. Timed one after the other, candidates ran at the falling clocks
# of a GPU at its power cap, and the ones timed first won: at bf16 4096^3 the tuner kept 3 stages
# where 4 had measured 0.4-0.7 points faster in turns (H200, bench/NOTES.md, sessions 15 and 29).
# In turns with a 0.5% margin, 5 of 12 tunings there still left the heuristic's pick for one that
# had measured slower (session 30): a tuning's short timings move by about a point.
TUNE_ROUNDS = 3
TUNE_MARGIN = 0.015


def benchmark(run_config, candidates, preferred=None) -> triton.Config:
    """The fastest of ``candidates``: ``run_config(cfg)`` launches one config; each is timed alone
    (``triton.testing.do_bench``, median, L2 flushed) and back to back, and ranked by the slower
    of the two: two K slices won alone by 2% at bf16 (1, 4096, 4096) and ran 65.6 us
    a call in a loop where torch ran 24.0 (H200). The candidates are timed in TUNE_ROUNDS rounds,
    each round in turns from a different first one, and each keeps its median. ``preferred``
    (one of them) is kept unless another beats it by more than TUNE_MARGIN.
    Configs that fail to compile or launch (too much shared memory, say) are skipped."""
    runnable = []
    for cfg in candidates:
        try:
            run_config(cfg)
            torch.cuda.synchronize()
        except Exception:  # noqa: BLE001 - an unfit candidate is not an error of the call
            continue
        runnable.append(cfg)
    if not runnable:
        raise RuntimeError("no candidate config could run")
    n = len(runnable)
    runs: list[list[float]] = [[] for _ in runnable]
    for r in range(TUNE_ROUNDS):
        for j in [(r + k) % n for k in range(n)]:
            fn = lambda cfg=runnable[j]: run_config(cfg)  # noqa: E731
            runs[j].append(max(triton.testing.do_bench(fn, warmup=10, rep=40, return_mode="median"),
                               back_to_back_ms(fn, calls=20)))
    ms = [statistics.median(t) for t in runs]
    best = min(range(n), key=ms.__getitem__)
    names = [str(cfg) for cfg in runnable]
    keep = names.index(str(preferred)) if str(preferred) in names else best  # (str(None) is no config's)
    return runnable[keep if ms[best] > (1 - TUNE_MARGIN) * ms[keep] else best]


def forget() -> None:
    """Drop what was read from disk (tests point TRITON_IMPL_TUNING_FILE elsewhere)."""
    global _table
    with _lock:
        _table = None
