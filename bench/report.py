"""Tables for the terminal, and the JSON / CSV files that bench/results/ keeps."""

from __future__ import annotations

import csv
import json
import math
from itertools import groupby

from bench.compare import SCHEMA, Record, records_as_dicts

COLUMNS = ("backend", "variant", "ok", "max err", "median ms", "rate", "% ceil", "x vs torch")


def _fmt(x, spec: str, none: str = "-") -> str:
    if x is None:
        return none
    if isinstance(x, float) and math.isinf(x):
        return "inf"
    return format(x, spec)


def _row(r: Record) -> list[str]:
    ok = {True: "ok", False: "FAIL", None: "-"}[r.ok]
    rate = None
    if r.tflops is not None:
        rate = f"{r.tflops:.1f} TFLOP/s"
    elif r.gbps is not None:
        rate = f"{r.gbps:.0f} GB/s"
    variant = r.variant + (" *" if r.default else "")
    if r.role != "impl":
        variant += f" ({r.role})"
    return [r.backend, variant, ok, _fmt(r.max_rel_err, ".1e"), _fmt(r.median_ms, ".4f"),
            rate or "-", _fmt(r.pct_of_ceiling, ".1f"), _fmt(r.x_vs_ref, ".2f")]


def format_tables(records: list[Record], ceilings: dict | None = None) -> str:
    """One table per (algorithm, dtype, shape), in the order the records came."""
    lines = []
    if ceilings:
        lines.append("ceilings: " + ", ".join(f"{k} = {v:.1f}" for k, v in ceilings.items()))
    key = lambda r: (r.algorithm, r.dtype, tuple(r.shape))  # noqa: E731
    for (alg, dtype, shape), group in groupby(records, key=key):
        group = list(group)
        rows = [list(COLUMNS)] + [_row(r) for r in group]
        widths = [max(len(row[i]) for row in rows) for i in range(len(COLUMNS))]
        lines.append("")
        lines.append(f"== {alg}  {dtype}  {'x'.join(map(str, shape))}  on {group[0].device}")
        for i, row in enumerate(rows):
            lines.append("  ".join(c.ljust(w) if j < 3 else c.rjust(w) for j, (c, w) in enumerate(zip(row, widths))))
            if i == 0:
                lines.append("  ".join("-" * w for w in widths))
        problems = [r for r in group if r.detail]
        for r in problems:
            lines.append(f"   {r.backend}/{r.variant}: {r.detail}")
    lines.append("")
    lines.append("* = what variant=None picks for this input")
    return "\n".join(lines)


def write_json(path, meta: dict, ceilings: dict, records: list[Record]) -> None:
    with open(path, "w") as f:
        json.dump({"schema": SCHEMA, "meta": meta, "ceilings": ceilings,
                   "records": records_as_dicts(records)}, f, indent=1, default=str)
        f.write("\n")


def read_json(path) -> dict:
    with open(path) as f:
        data = json.load(f)
    if not isinstance(data, dict) or data.get("schema") != SCHEMA:
        found = data.get("schema") if isinstance(data, dict) else type(data).__name__
        raise ValueError(f"{path}: unknown results schema {found!r}; expected {SCHEMA!r}")
    return data


def write_csv(path, meta: dict, records: list[Record]) -> None:
    rows = records_as_dicts(records)
    fields = [k for k in rows[0] if k != "extra"] if rows else []
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=fields + ["date", "git_commit"], extrasaction="ignore")
        w.writeheader()
        for row in rows:
            row = dict(row, shape="x".join(map(str, row["shape"])),
                       date=meta.get("date"), git_commit=meta.get("git_commit"))
            w.writerow(row)
