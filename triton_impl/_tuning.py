"""Tuning a program can live with: bucketed keys, no benchmarking unless asked, results on disk.

A tuned config is kept per bucket (the device, the dtypes and layouts, each extent rounded up to
a power of two), so a new M inside a known bucket reuses the config, and the compiled kernel of
its class (Triton specializes on M % 16 == 0 and M == 1: at most one compile per class). An
unseen bucket runs a heuristic config at once.
Benchmarking happens only when asked: ``TRITON_IMPL_TUNE=1`` tunes each unseen bucket on its
first call, ``triton_impl.tune(...)`` (or ``python -m bench tune``) tunes the shapes named.
Results are written to a JSON file (``TRITON_IMPL_TUNING_FILE``, default
``~/.cache/gpu-kernels-reference/triton-tuning.json``) that a new process reads back:
``{device name: {bucket key: {config kwargs..., "num_warps", "num_stages", "version"}}}``.

A fresh install runs tuned configs too: the package ships a table per architecture
(``tuned_sm_90.json`` beside this module, made on a GPU by ``tools/ship_tuning.py`` over a grid of
model-layer buckets, its meta naming the device, triton, the date and the draw that checked it). A
program's own file comes first; the shipped table serves the buckets it lacks (on a CUDA device of
that architecture; ``TRITON_IMPL_SHIPPED_TUNING=0`` leaves it unread, and the heuristic runs).

The file is data from outside, and a config goes into the kernels as their constexprs: a bad
one computes wrong results silently (GROUP_M < 1 writes outside c or leaves tiles unwritten,
SPLIT_K < 1 leaves c unwritten) or takes minutes to compile. So ``lookup`` checks each entry
against a schema once (``_problem``: the exact keys of its family's configs, their types and
bounds, and ``TUNING_VERSION``) and ignores one that fails, with one warning per entry per
process; the call then runs the heuristic config. ``store`` merges: under a lock on a sidecar
file it re-reads the file, sets its one entry and replaces the file atomically, so processes
tuning at once keep each other's entries.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import pathlib
import statistics
import tempfile
import threading
import warnings

import torch
import triton

from kernel_common.util import back_to_back_ms, device_name

try:
    import fcntl
except ImportError:  # (no fcntl, e.g. Windows: stores are not locked against other processes)
    fcntl = None

_lock = threading.Lock()
_table: dict | None = None  # {device name: {bucket: config as a dict}}
_verdicts: dict = {}        # {(device name, bucket): its triton.Config, or None where absent or refused}
_warned: set = set()        # the refusals warned about (kept by forget(): one warning a process)
_shipped: dict = {}         # {architecture: the shipped table's entries ({} where none ships)}

# The kernels' meaning of a config. Bump it when a kernel reads a config's values differently
# (a kwarg renamed, a tile's layout changed): entries made for another version are ignored.
TUNING_VERSION = 1

# Bounds of a config's values. Tiles: powers of two from tl.dot's least extent (16) to the largest
# the candidate lists hold (256 rows or columns; 512-deep K slices at the ends of the 16-bit
# swap-AB ladder). GROUP_M >= 1 (0 divides by zero in _grouped_tile, < 0 maps tiles outside c); at
# most 64, 4x the most the lists use (16): past it a group's rows of a outgrow L2 (64 x 128 rows x
# 4096 bf16 is 64 MiB) and each value compiles a kernel of its own. SPLIT_K >= 1; at most 64, 4x
# the most _splits makes (16): the sum of the slices unrolls SPLIT_K loads, which compiled in 0.7 s
# at 64, 3.0 s at 128 and 16 s at 256 (H100, triton 3.6; 1024 took 502 s, issue 50), and the
# workspace holds SPLIT_K float32 copies of c.
POW2_RANGES = {"BLOCK_M": (16, 256), "BLOCK_N": (16, 256), "BLOCK_K": (16, 512)}
INT_RANGES = {"GROUP_M": (1, 64), "SPLIT_K": (1, 64), "num_stages": (1, 8)}
NUM_WARPS = (1, 2, 4, 8, 16)
LAUNCH_KEYS = ("num_warps", "num_stages")


def enabled() -> bool:
    """Does a call on an unseen bucket benchmark its candidates (``TRITON_IMPL_TUNE=1``)?"""
    return os.environ.get("TRITON_IMPL_TUNE", "0") == "1"


def path() -> pathlib.Path:
    default = pathlib.Path.home() / ".cache" / "gpu-kernels-reference" / "triton-tuning.json"
    return pathlib.Path(os.environ.get("TRITON_IMPL_TUNING_FILE", default))


def shipped_enabled() -> bool:
    """Does a bucket without an entry of the program's own take the shipped table's?"""
    return os.environ.get("TRITON_IMPL_SHIPPED_TUNING", "1") != "0"


def shipped_path(arch: str) -> pathlib.Path:
    """The table shipped for ``arch`` ("sm_90"): ``{"meta": {...}, "entries": {bucket: entry}}``."""
    return pathlib.Path(__file__).with_name(f"tuned_{arch}.json")


def arch_of(device: torch.device) -> str | None:
    """"sm_90" for a CUDA device of compute capability 9.0; None off CUDA."""
    if device.type != "cuda":
        return None
    major, minor = torch.cuda.get_device_capability(device)
    return f"sm_{major}{minor}"


def _shipped_entries(arch: str) -> dict:
    if arch not in _shipped:
        target = shipped_path(arch)
        entries = _read(target).get("entries", {})
        if not isinstance(entries, dict):
            _warn_once(target, "its entries", f"a {type(entries).__name__}, not an object of bucket entries")
            entries = {}
        _shipped[arch] = entries
    return _shipped[arch]


def state(device: torch.device) -> dict:
    """What a call on ``device`` reads, for a results file's meta (compare's "triton_tables"): the
    program's own file (its entries for this device) and the shipped table (its entries, and its
    meta's date and results file), or "off" / "none"."""
    own = _read(path()).get(device_key(device), {})
    arch = arch_of(device)
    shipped = _read(shipped_path(arch)) if arch else {}
    meta = shipped.get("meta", {})
    return {"own_file": f"{len(own)} entries" if own else "none",
            "shipped": "off" if not shipped_enabled() else "none" if not shipped else
            f"{len(shipped.get('entries', {}))} entries, {meta.get('date')}, checked by {meta.get('results')}"}


def _warn_once(target: pathlib.Path, what: str, problem: str, *, ident=None) -> None:
    """One UserWarning per (file, what, ident) in this process."""
    mark = (str(target), what, problem if ident is None else ident)
    if mark not in _warned:
        _warned.add(mark)
        warnings.warn(f"tuning file {target}: {what} ignored: {problem}", UserWarning, stacklevel=4)


def _read(target: pathlib.Path) -> dict:
    """The table in ``target``: {} where there is no file, or (with a warning) none readable."""
    try:
        table = json.loads(target.read_text())
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as e:
        _warn_once(target, "the whole file", f"not readable as JSON ({e})")
        return {}
    if not isinstance(table, dict):
        _warn_once(target, "the whole file", f"its top level is a {type(table).__name__}, not an object "
                   "of device tables", ident=json.dumps(table, sort_keys=True)[:200])
        return {}
    return table


def _load() -> dict:
    global _table
    if _table is None:
        _table = _read(path())
        _verdicts.clear()
    return _table


def device_key(device: torch.device) -> str:
    """The key a tuning file keeps a device's entries under: its GPU's name."""
    return device_name(device) if device.type == "cuda" else device.type


@functools.cache
def _families() -> dict:
    """{family: {kwarg: type}}: the kwargs and their types of each tuned family's configs (the
    first word of a bucket key, ``_matmul._tuning_key``), read from a candidate config of the
    family, so a kwarg the kernels' configs gain is expected of tuned entries too."""
    from triton_impl import _matmul  # (imported here, not above: _matmul imports this module)
    families = {r.family for r in _matmul.PLANNERS.values()} - {None}
    return {family: {k: type(v) for k, v in _matmul.candidates(2, family)[0].kwargs.items()} for family in families}


def _family_of(key: str) -> str | None:
    """The family whose configs ``key``'s entry holds: the key's first word (None: no family's)."""
    family = key.split(" ", 1)[0]
    return family if family in _families() else None


def _problem(key: str, entry) -> str | None:
    """What is wrong with ``entry`` as the config of bucket ``key``, or None where it may run."""
    if not isinstance(entry, dict):
        return f"an entry is an object of a config's values, not a {type(entry).__name__}"
    if "version" not in entry:
        return f"no version: made before entries carried one, for kernels that may read it otherwise " \
               f"(this is version {TUNING_VERSION})"
    if type(entry["version"]) is not int or entry["version"] != TUNING_VERSION:
        return f"version {entry['version']!r}, made for other kernels (this is {TUNING_VERSION})"
    fields = {k: v for k, v in entry.items() if k != "version"}
    family = _family_of(key)
    if family is None:
        return f"the key names no tuned family ({', '.join(sorted(_families()))})"
    types = dict(_families()[family], **{k: int for k in LAUNCH_KEYS})
    missing, extra = sorted(set(types) - set(fields)), sorted(set(fields) - set(types))
    if missing or extra:
        return f"not a {family} config: " + "; ".join(
            ([f"missing {missing}"] if missing else []) + ([f"unexpected {extra}"] if extra else []))
    for k, t in types.items():
        v = fields[k]
        if t is bool:
            if not (type(v) is bool or (type(v) is int and v in (0, 1))):
                return f"{k} = {v!r}, not a bool"
            continue
        if type(v) is not int:  # (bool is an int subclass: refused by the exact type)
            return f"{k} = {v!r}, not an int"
        if k in POW2_RANGES:
            lo, hi = POW2_RANGES[k]
            if not (lo <= v <= hi and v & (v - 1) == 0):
                return f"{k} = {v}, not a power of two in {lo}..{hi}"
        elif k in INT_RANGES:
            lo, hi = INT_RANGES[k]
            if not lo <= v <= hi:
                return f"{k} = {v}, not in {lo}..{hi}"
        elif k == "num_warps":
            if v not in NUM_WARPS:
                return f"num_warps = {v}, not one of {NUM_WARPS}"
        else:
            return f"{k} = {v}: no bound is known for it (add one to _tuning's schema)"
    return None


def _config(entry: dict, key: str) -> triton.Config:
    """The config of a checked entry (0/1 flags as the bools the heuristic's configs hold)."""
    types = _families()[_family_of(key)]
    kwargs = {k: bool(v) if types.get(k) is bool else v for k, v in entry.items() if k != "version"}
    return triton.Config(kwargs, num_warps=kwargs.pop("num_warps"), num_stages=kwargs.pop("num_stages"))


def _checked(table: dict, name: str, key: str) -> triton.Config | None:
    """The config of ``key`` for device ``name`` in ``table``, or None where it has none or (with
    one warning) a malformed one."""
    devices = table.get(name)
    if devices is None:
        return None
    if not isinstance(devices, dict):
        _warn_once(path(), f"device {name!r}", f"its table is a {type(devices).__name__}, not an object "
                   f"of bucket entries (looking up {key!r})", ident=json.dumps(devices, sort_keys=True)[:200])
        return None
    return _entry_config(path(), f"device {name!r}, entry {key!r}", key, devices.get(key))


def _entry_config(target: pathlib.Path, what: str, key: str, entry) -> triton.Config | None:
    """The config of ``entry`` (None where there is none, or, with one warning, a malformed one)."""
    if entry is None:
        return None
    problem = _problem(key, entry)
    if problem is not None:
        _warn_once(target, what, problem + "; the heuristic config runs",
                   ident=(what, json.dumps(entry, sort_keys=True)))
        return None
    return _config(entry, key)


def lookup(device: torch.device, key: str) -> triton.Config | None:
    """The tuned config of bucket ``key`` on ``device``: the program's file's, else the table
    shipped for the device's architecture, else None (an entry that fails the schema, ``_problem``,
    counts as none; warned about once). Each entry is checked once: later lookups return the
    verdict."""
    name = device_key(device)
    with _lock:
        table = _load()
        if (name, key) not in _verdicts:
            cfg = _checked(table, name, key)
            arch = arch_of(device) if cfg is None and shipped_enabled() else None
            if arch is not None:
                cfg = _entry_config(shipped_path(arch), f"entry {key!r}", key, _shipped_entries(arch).get(key))
            _verdicts[name, key] = cfg
        return _verdicts[name, key]


@contextlib.contextmanager
def _file_lock(target: pathlib.Path):
    """An exclusive lock on ``target``'s sidecar ``.lock`` file (no lock where fcntl is missing)."""
    if fcntl is None:
        yield
        return
    with open(target.with_name(target.name + ".lock"), "a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def store(device: torch.device, key: str, cfg: triton.Config) -> None:
    """Keep ``cfg`` for ``key``: under a lock on a sidecar file, re-read the file (entries other
    processes stored since this one read it stay), set this entry and replace the file atomically
    (a reader never sees half). Raises ValueError for a config ``lookup`` would refuse."""
    global _table
    entry = dict(cfg.kwargs, num_warps=cfg.num_warps, num_stages=cfg.num_stages, version=TUNING_VERSION)
    problem = _problem(key, entry)
    if problem is not None:
        raise ValueError(f"tuned config for {key!r} not kept: {problem}")
    name = device_key(device)
    target = path()
    target.parent.mkdir(parents=True, exist_ok=True)
    with _lock, _file_lock(target):
        table = _read(target)
        if not isinstance(table.get(name), dict):
            table[name] = {}
        table[name][key] = entry
        fd, tmp = tempfile.mkstemp(dir=target.parent, suffix=".tmp")
        try:
            with os.fdopen(fd, "w") as f:
                json.dump(table, f, indent=1, sort_keys=True)
            os.replace(tmp, target)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
        _table = table
        _verdicts.clear()


# Rounds of the candidates in turns, and how much faster than the preferred (heuristic) config
# another must run to replace it. Timed one after the other, candidates ran at the falling clocks
# of a GPU at its power cap, and the ones timed first won: at bf16 4096^3 the tuner kept 3 stages
# where 4 had measured 0.4-0.7 points faster in turns (H200, docs/decisions/013-triton-tuning-policy.md).
# In turns with a 0.5% margin, 5 of 12 tunings there still left the heuristic's pick for one that
# had measured slower (docs/decisions/009-cuda-16bit-wgmma-ws.md): a tuning's short timings move by about a point.
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
    """Drop what was read from disk and the verdicts on it (tests point TRITON_IMPL_TUNING_FILE
    elsewhere); the warnings given stay given."""
    global _table
    with _lock:
        _table = None
        _verdicts.clear()
        _shipped.clear()
