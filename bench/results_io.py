"""Records, and the JSON / CSV files that bench/results/ keeps.

The harness handles records as ``Record`` objects everywhere; dicts exist only in the files.
A run is ``{"meta": dict, "ceilings": dict, "records": [Record, ...]}``, as a results file
holds it.
"""

from __future__ import annotations

import csv
import gzip
import json
import pathlib
from dataclasses import asdict, dataclass, field

SCHEMA = "gpu-kernels-bench/1"
# The metrics whose rate is operations a second (in Record.tflops): floating point, and integer (TOPS)
OPS_METRICS = ("TFLOP/s", "TOPS")


@dataclass
class Record:
    algorithm: str
    backend: str
    variant: str
    role: str
    dtype: str
    shape: list
    device: str
    layout: str | None = None       # the layout of the input this implementation was timed on
    metric: str = "GB/s"            # the spec's headline rate: GB/s, TFLOP/s, or TOPS (integers; in .tflops)
    ok: bool | None = None          # None: not checked (a ceiling, or skipped)
    max_rel_err: float | None = None
    detail: str = ""
    median_ms: float | None = None
    min_ms: float | None = None
    max_ms: float | None = None
    gbps: float | None = None
    tflops: float | None = None
    ceiling: str | None = None      # which measured ceiling pct_of_ceiling refers to
    pct_of_ceiling: float | None = None
    x_vs_ref: float | None = None   # reference median / this median (> 1: faster than torch)
    loop_ms: float | None = None    # per call, back-to-back without an L2 flush (what a program sees)
    x_loop_vs_ref: float | None = None  # reference loop_ms / this loop_ms
    host_us: float | None = None    # `bench overhead`: host time per call on a small input
    default: bool = False           # variant=None picks this variant for this input
    extra: dict = field(default_factory=dict)


def open_text(path, mode="r"):
    """A results file opened as text: ``*.json.gz`` through gzip (a draw's file is a sixth of its
    size so; docs/decisions/048-draws-kept-gzipped.md)."""
    if str(path).endswith(".gz"):
        return gzip.open(path, mode + "t", encoding="utf-8")
    return open(path, mode, encoding="utf-8")


def write_json(path, meta: dict, ceilings: dict, records: list[Record]) -> None:
    with open_text(path, "w") as f:
        f.write(dumps({"schema": SCHEMA, "meta": meta, "ceilings": ceilings, "records": [asdict(r) for r in records]}))


def dumps(payload: dict) -> str:
    """A results file's text: the top level indented, each item of a list (a record) on one
    compact line. Indented throughout, a draw's 1000 records took a third more bytes, and the
    repository's results a fifth of what the GPU machine takes over a call."""
    def item(v):
        if isinstance(v, list) and v:
            return "[\n  " + ",\n  ".join(json.dumps(x, separators=(",", ":"), default=str) for x in v) + "\n ]"
        return json.dumps(v, indent=1, default=str).replace("\n", "\n ")
    return "{\n " + ",\n ".join(f"{json.dumps(k)}: {item(v)}" for k, v in payload.items()) + "\n}\n"


def read_json(path) -> dict:
    """The run a results file (``*.json`` or ``*.json.gz``) holds, its records as ``Record`` objects."""
    with open_text(path) as f:
        data = json.load(f)
    if not isinstance(data, dict) or data.get("schema") != SCHEMA:
        found = data.get("schema") if isinstance(data, dict) else type(data).__name__
        raise ValueError(f"{path}: unknown results schema {found!r}; expected {SCHEMA!r}")
    return dict(data, records=[Record(**r) for r in data["records"]])


# what the shards of one run share (compare --shard I/N): the same draw, device and code
SHARED_META = ("device", "seed", "size_set", "git_commit", "git_dirty", "torch", "triton")


def merge_shards(runs) -> dict:
    """One run from its shards' runs ((path, run) pairs, as ``read_json`` gives them): the records
    in shard order, the first shard's meta and ceilings, ``meta["shards"]`` the shards joined and
    ``meta["interrupted"]`` any that were cut. A ValueError where they are not shards of one run."""
    if not runs:
        raise ValueError("merge needs the shards' results files")
    first = runs[0][1]["meta"]
    shards = []
    for path, run in runs:
        meta = run["meta"]
        if "shard" not in meta:
            raise ValueError(f"{path}: not a shard (no meta 'shard': run compare --shard I/N)")
        differ = [k for k in SHARED_META if meta.get(k) != first.get(k)]
        if differ:
            raise ValueError(f"{path}: its {', '.join(differ)} differ from {runs[0][0]}'s: not shards of one run")
        shards.append(meta["shard"])
    counts = {s.split("/")[1] for s in shards}
    if len(counts) != 1 or len(set(shards)) != len(shards):
        raise ValueError(f"shards {', '.join(shards)}: each once, of one N")
    meta = {k: v for k, v in first.items() if k not in ("shard", "interrupted")}
    meta["shards"] = shards
    cut = [f"{m['shard']} {m['interrupted']}" for m in (run["meta"] for _, run in runs) if m.get("interrupted")]
    if cut:
        meta["interrupted"] = "; ".join(cut)
    return {"meta": meta, "ceilings": runs[0][1]["ceilings"],
            "records": [r for _, run in runs for r in run["records"]]}


def write_csv(path, meta: dict, records: list[Record]) -> None:
    rows = [asdict(r) for r in records]
    fields = [k for k in rows[0] if k != "extra"] if rows else []
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=fields + ["date", "git_commit"], extrasaction="ignore")
        w.writeheader()
        for row in rows:
            row = dict(row, shape="x".join(map(str, row["shape"])),
                       date=meta.get("date"), git_commit=meta.get("git_commit"))
            w.writerow(row)


def results_files(root) -> list:
    """The runs in ``root``: its ``*.json`` and ``*.json.gz`` files, less JSON lists kept beside
    them (the fuzz suite's counts, say), which are data of their own; a run of an unknown schema
    is still refused by ``read_json``."""
    paths = [*pathlib.Path(root).glob("*.json"), *pathlib.Path(root).glob("*.json.gz")]
    return sorted(str(p) for p in paths if not _is_list(p))


def _is_list(path) -> bool:
    with open_text(path) as f:
        return f.read(64).lstrip().startswith("[")


def newest_per_algorithm(runs: list[dict]) -> dict[str, dict]:
    """algorithm -> the newest run (by its metadata's date) that has records of it, holding only
    those records: a later run of an algorithm replaces an earlier one."""
    out = {}
    for run in sorted(runs, key=lambda d: d["meta"].get("date") or ""):
        for alg in dict.fromkeys(r.algorithm for r in run["records"]):
            out[alg] = dict(run, records=[r for r in run["records"] if r.algorithm == alg])
    return out
