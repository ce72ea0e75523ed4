"""The tables ``python -m bench compare`` prints: one per (algorithm, dtype, shape, case layout)."""

from __future__ import annotations

import math
from itertools import groupby

from bench.results_io import OPS_METRICS, Record
from bench.specs import SPECS
from bench.workloads import summarize

COLUMNS = ("backend", "variant", "ok", "max err", "median ms", "rate", "% ceil", "x vs torch", "loop ms", "x loop")


def fmt(x, spec: str, none: str = "-") -> str:
    """``format(x, spec)``, with ``none`` for a missing figure and "inf" for an infinite one."""
    if x is None:
        return none
    if isinstance(x, float) and math.isinf(x):
        return "inf"
    return format(x, spec)


def case_key(r: Record) -> tuple:
    """(algorithm, dtype, shape, case layout): the records of one case, checked and timed together."""
    return (r.algorithm, r.dtype, tuple(r.shape), SPECS[r.algorithm].case_layout_of(r.layout))


def _row(r: Record, case_layout=None) -> list[str]:
    ok = {True: "ok", False: "FAIL", None: "-"}[r.ok]
    rate = None
    if r.metric in OPS_METRICS and r.tflops is not None:
        rate = f"{r.tflops:.1f} {r.metric}"
    elif r.gbps is not None:
        rate = f"{r.gbps:.0f} GB/s"
    # the layout an implementation read, where the table's title (the case) does not say it
    layout = f" [{r.layout}]" if r.layout and r.layout != case_layout else ""
    variant = r.variant + layout + (" *" if r.default else "")
    if r.role != "impl":
        variant += f" ({r.role})"
    return [r.backend, variant, ok, fmt(r.max_rel_err, ".1e"), fmt(r.median_ms, ".4f"),
            rate or "-", fmt(r.pct_of_ceiling, ".1f"), fmt(r.x_vs_ref, ".2f"), fmt(r.loop_ms, ".4f"),
            fmt(r.x_loop_vs_ref, ".2f")]


def format_tables(records: list[Record], ceilings: dict | None = None) -> str:
    """One table per (algorithm, dtype, shape, case layout), in the order the records came."""
    lines = []
    if ceilings:
        lines.append("ceilings: " + ", ".join(f"{k} = {v:.1f}" for k, v in ceilings.items()))
    for (alg, dtype, shape, case_layout), group in groupby(records, key=case_key):
        group = list(group)
        rows = [list(COLUMNS)] + [_row(r, case_layout) for r in group]
        widths = [max(len(row[i]) for row in rows) for i in range(len(COLUMNS))]
        lines.append("")
        layout = f"  {SPECS[alg].case_operand} {case_layout}" if case_layout else ""
        lines.append(f"== {alg}  {dtype}  {'x'.join(map(str, shape))}{layout}  on {group[0].device}")
        for i, row in enumerate(rows):
            lines.append("  ".join(c.ljust(w) if j < 3 else c.rjust(w) for j, (c, w) in enumerate(zip(row, widths))))
            if i == 0:
                lines.append("  ".join("-" * w for w in widths))
        problems = [r for r in group if r.detail]
        for r in problems:
            lines.append(f"   {r.backend}/{r.variant}: {r.detail}")
    lines.append("")
    lines.append("* = what variant=None picks for this input; median ms: one call, L2 flushed; loop ms: per "
                 "call of up to 200 back-to-back calls, no flush (what a program's loop sees), the "
                 "median of 9 rounds taken in turns with the other rows")
    return "\n".join(lines)


def format_summary(records: list[Record]) -> str:
    """``summary_lines`` under their heading (nothing where no default was timed)."""
    lines = summary_lines(records)
    if not lines:
        return ""
    return "\n".join(["", "variant=None against torch over the run's shapes (x > 1: faster): geomean / p10 / "
                      "worst (shape)", *("  " + line for line in lines)])


# A matmul's rows of a in the bands where the kernels' regimes change: a weight read by few rows,
# one block of 64 rows, swapped or split tiles of a middle M, 128-row tiles in a few waves, many waves
ROW_BANDS = ((1, 16), (17, 64), (65, 352), (353, 2047), (2048, None))


def _band_line(rs) -> str:
    """The flushed geomean / p10 (and count) of a 2-D product's cases in each of ROW_BANDS by M."""
    parts = []
    for lo, hi in ROW_BANDS:
        s = summarize(r.x_vs_ref for r in rs if lo <= r.shape[0] and (hi is None or r.shape[0] <= hi))
        if s:
            parts.append(f"{lo}-{hi} " if hi else f"{lo}+ ")
            parts[-1] += f"{s['geomean']:.2f} / {s['p10']:.2f} ({s['n']})"
    return "; ".join(parts)


def _variant_line(rs) -> str:
    """The flushed geomean / worst (and count) of the cases each variant ran, where ``variant=None``
    took more than one: which kernel's cases the figures above come from."""
    by: dict = {}
    for r in rs:
        by.setdefault(r.variant, []).append(r.x_vs_ref)
    if len(by) < 2:
        return ""
    stats = {v: summarize(xs) for v, xs in by.items()}
    return "; ".join(f"{v} {s['geomean']:.2f} / {s['worst']:.2f} ({s['n']})"
                     for v, s in sorted(stats.items(), key=lambda vs: -vs[1]['n']))


def summary_lines(records: list[Record]) -> list[str]:
    """What ``variant=None`` reaches against torch over the run's shapes, a line per algorithm,
    backend, dtype and case layout: the geometric mean, the 10th percentile and the worst of its
    speed ratio (flushed, and back to back), the worst with its shape (bench/workloads.py's
    ``summarize``). Where a case has more torch rows than its reference (grouped_mm's loop of
    torch.mm), a line against each of them too. A 2-D product's (M x N x K) in more than one of
    ROW_BANDS: a line of the flushed figures by band of M; where the default ran more than one
    variant, a line by variant."""
    groups: dict = {}
    others: dict = {}  # case -> {variant: (median ms, loop ms)} of torch rows after the reference
    for r in records:
        if r.role == "impl" and r.default and r.x_vs_ref is not None:
            groups.setdefault((r.algorithm, r.backend, r.dtype, r.layout), []).append(r)
        elif r.role == "reference" and r.median_ms:
            refs = others.setdefault(case_key(r), {})
            refs[r.variant] = (r.median_ms, r.loop_ms)
    lines = []
    for (alg, backend, dtype, layout), rs in groups.items():
        head = f"{alg} {backend} {dtype}{' ' + layout if layout else ''}"
        # (a case's first torch row is the reference the x_vs_ref figures are against)
        extra = dict.fromkeys(v for r in rs for v in list(others.get(case_key(r), {}))[1:])
        for against in (None, *extra):
            parts = []
            for what, attr, i in (("flushed", "x_vs_ref", 0), ("loop", "x_loop_vs_ref", 1)):
                if against is None:
                    ratios = [(r, getattr(r, attr)) for r in rs if getattr(r, attr) is not None]
                else:
                    ratios = [(r, others[case_key(r)][against][i] / (r.median_ms, r.loop_ms)[i]) for r in rs
                              if against in others.get(case_key(r), {}) and others[case_key(r)][against][i]
                              and (r.median_ms, r.loop_ms)[i]]
                s = summarize(x for _, x in ratios)
                if s:
                    worst = min(ratios, key=lambda rx: rx[1])[0]
                    parts.append(f"{what} {s['geomean']:.2f} / {s['p10']:.2f} / {s['worst']:.2f} "
                                 f"({'x'.join(map(str, worst.shape))})")
            if parts:
                n = len(rs) if against is None else sum(against in others.get(case_key(r), {}) for r in rs)
                lines.append(f"{head}{'' if against is None else ' vs ' + against} ({n} shapes): " + "; ".join(parts))
        if alg in ("matmul", "addmm") and all(len(r.shape) == 3 for r in rs):
            bands = _band_line(rs)
            if ";" in bands:
                lines.append(f"{head} by rows of a, flushed geomean / p10 (shapes): {bands}")
        variants = _variant_line(rs)
        if variants:
            lines.append(f"{head} by variant, flushed geomean / worst (shapes): {variants}")
        copies = _copy_line(rs, copies_of(records))
        if copies:
            lines.append(f"{head} x the same-size copy's bandwidth, flushed geomean / p10 / worst: {copies}")
    return lines


COPY_BANDS = ((1 << 20, "1 MB"), (64 << 20, "64 MB"))  # issue 54's: each shape of a matrix past 1 MB, and past 64 MB


def copies_of(records) -> dict:
    """{case: median ms} of the runs' same-size copies (the ``copy`` ceiling rows: transpose's and gemv's)."""
    return {case_key(r): r.median_ms for r in records if r.role == "ceiling" and r.variant == "copy" and r.median_ms}


def copy_bands(rs, copies: dict) -> list[tuple[str, dict, Record]]:
    """Each record's bandwidth over its case's copy's (a copy moves its matrix twice, read and
    written: 2 x the shape's elements), summarized by the bands of the matrix's bytes
    (``COPY_BANDS``): (band name, ``summarize``'s figures, the worst record) for each band with any."""
    ratios = []
    for r in rs:
        copy_ms = copies.get(case_key(r))
        if copy_ms and r.median_ms and r.gbps:
            size = math.prod(r.shape) * SPECS[r.algorithm].torch_dtype(r.dtype).itemsize
            ratios.append((size, r, r.gbps / (2 * size / (copy_ms * 1e-3) / 1e9)))
    bands = []
    for least, name in COPY_BANDS:
        band = [(r, x) for size, r, x in ratios if size >= least]
        s = summarize(x for _, x in band)
        if s:
            bands.append((name, s, min(band, key=lambda rx: rx[1])[0]))
    return bands


def _copy_line(rs, copies: dict) -> str:
    """``copy_bands``' figures in a line."""
    return "; ".join(f">= {name} {s['geomean']:.2f} / {s['p10']:.2f} / {s['worst']:.2f} "
                     f"({'x'.join(map(str, worst.shape))}, {s['n']} shapes)" for name, s, worst in copy_bands(rs, copies))
