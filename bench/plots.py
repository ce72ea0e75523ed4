"""PNG plots of runs: throughput against size per (algorithm, dtype), and one roofline.

Input is a run as a results file holds it (``bench.results_io``), so ``python -m bench plot
RESULTS.json ...`` redraws from committed files exactly what ``python -m bench compare --plot
DIR`` draws after a run. matplotlib runs on its Agg backend
(no display needed).
"""

from __future__ import annotations

import math
import pathlib
import re
from itertools import groupby

from bench.ceilings import ceiling_key
from bench.results_io import OPS_METRICS, Record, newest_per_algorithm, read_json
from bench.specs import SPECS

BACKEND_STYLE = {"cuda": dict(ls="-", marker="o"), "triton": dict(ls="--", marker="s")}
BACKEND_COLOR = {"cuda": "tab:green", "triton": "tab:blue", "torch": "black"}
ALGORITHM_MARKER = {"gemv": "o", "matmul": "^"}


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")  # files only; works without a display
    import matplotlib.pyplot as plt

    return plt


def slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", str(text).lower()).strip("-") or "unknown"


def rate(r: Record):
    """The record's headline rate in its spec's metric (GB/s or TFLOP/s), or None if untimed."""
    return r.tflops if r.metric in OPS_METRICS else r.gbps


def ceiling_value(spec, dtype: str, ceilings: dict):
    """The measured ceiling this spec's rates are compared with, and its label."""
    value = ceilings.get(ceiling_key(spec, dtype))
    if value is None:
        return None, ""
    if spec.ceiling == "copy":
        return value, f"ceiling: 1 GiB device copy, {value:.0f} GB/s"
    return value, f"ceiling: cuBLAS {dtype} at 8192^3, {value:.0f} TFLOP/s"


# ---- throughput against size -----------------------------------------------------------------
def sweep_plot(run: dict, algorithm: str, dtype: str, path) -> pathlib.Path | None:
    """Rate against the square side N for every implementation of one (algorithm, dtype): a
    line per backend/variant, the torch reference bold and dashed, the measured ceiling as a
    horizontal line. Only square shapes (N x N, or N^3 for matmul) are drawn. None if nothing
    was timed."""
    spec = SPECS[algorithm]
    recs = [r for r in run["records"] if r.algorithm == algorithm and r.dtype == dtype
            and r.ok is not False and rate(r) and len(set(r.shape)) == 1]
    if not recs:
        return None
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(10, 5.6), layout="constrained")
    key = lambda r: (r.role != "impl", r.backend, r.variant, r.layout or "")  # noqa: E731
    # tab10 without red (the ceiling) and grey (torch copy)
    colors = iter([c for i, c in enumerate(plt.get_cmap("tab10").colors) if i not in (3, 7)] * 3)
    for (_, backend, variant, layout), group in groupby(sorted(recs, key=key), key=key):
        group = sorted(group, key=lambda r: r.shape[0])
        xs, ys = [r.shape[0] for r in group], [rate(r) for r in group]
        role = group[0].role
        if role == "reference":
            # one reference per case layout (matmul's B): the first black, the others grey
            first = spec.case_layout_of(layout or None) in (None, spec.case_layouts[0])
            style = dict(color="black" if first else "0.5", lw=2.6, ls=(0, (6, 2)), marker="D",
                         label=f"torch {variant}" + (f" [{layout}]" if layout else "") + " (reference)")
        elif role == "ceiling":
            style = dict(color="0.55", lw=1.2, ls=":", marker=".", label=f"torch {variant} at this size")
        else:
            style = dict(color=next(colors), lw=1.5, **BACKEND_STYLE.get(backend, {}),
                         label=f"{backend} {variant}" + (f" [{layout}]" if layout else ""))
        ax.plot(xs, ys, ms=5, **style)
    value, label = ceiling_value(spec, dtype, run["ceilings"])
    if value:
        ax.axhline(value, color="tab:red", lw=1.3, ls=(0, (4, 3)), label=label)
    sizes = sorted({r.shape[0] for r in recs})
    ax.set_xscale("log", base=2)
    ax.set_xticks(sizes, [str(n) for n in sizes])
    ax.minorticks_off()
    shape = {"matmul": "M = N = K"}.get(algorithm, "N x N")
    ax.set_xlabel(f"size N ({shape}; log scale)")
    if spec.metric == "TFLOP/s":
        ax.set_yscale("log")
        ax.set_ylabel("TFLOP/s  (2 M N K / median time; log scale)")
    else:
        ax.set_ylim(bottom=0)
        ax.set_ylabel("GB/s  (bytes that must move / median time)")
    meta = run["meta"]
    ax.set_title(f"{algorithm} {dtype}: throughput against size\n{meta.get('device')}, "
                 f"{(meta.get('date') or '')[:10]}, median of CUDA-event timings, L2 flushed")
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, frameon=False)
    path = pathlib.Path(path)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


# ---- roofline --------------------------------------------------------------------------------
def intensity(r: Record) -> float:
    """Arithmetic intensity of the record's shape: spec.flops / spec.bytes, FLOP per byte."""
    spec = SPECS[r.algorithm]
    return spec.flops(r.shape) / spec.bytes(r.shape, spec.torch_dtype(r.dtype))


def roofline_plot(runs: list[dict], path) -> pathlib.Path | None:
    """Achieved TFLOP/s against arithmetic intensity for every timed record with FLOPs, under
    roofs measured in the same runs: the device-copy bandwidth as the slope, cuBLAS's rate per
    dtype as flat compute roofs. The fastest point of each (algorithm, dtype, backend) is
    numbered and listed beside the plot; the others stay small and unlabelled.

    Transpose is left out: it does no arithmetic (0 FLOP/byte), so it has no place on a
    log-scaled intensity axis, and its bandwidth is already against the copy ceiling in its
    size plots. The caption says so."""
    ceilings = {}
    for run in sorted(runs, key=lambda d: d["meta"].get("date") or ""):
        ceilings.update(run["ceilings"])  # the newest measurement of each ceiling
    recs = [r for run in runs for r in run["records"]
            if r.ok is not False and r.tflops and SPECS[r.algorithm].flops(r.shape)]
    if not recs:
        return None
    plt = _pyplot()
    fig, (ax, side) = plt.subplots(1, 2, figsize=(13, 6.8), width_ratios=(2.6, 1), layout="constrained")
    xs = [intensity(r) for r in recs]
    lo, hi = min(xs) / 3, max(xs) * 3
    copy = ceilings.get("copy_gbs")
    if copy:
        ax.plot([lo, hi], [copy * lo / 1e3, copy * hi / 1e3], color="tab:red", lw=1.5,
                label=f"memory roof: device copy {copy:.0f} GB/s")
    roofs = sorted((v, k.removeprefix("cublas_").removesuffix("_tflops"))
                   for k, v in ceilings.items() if k.startswith("cublas_"))
    label_y = 0.0
    for value, dtype in roofs:
        start = max(lo, value * 1e3 / copy) if copy else lo  # the ridge point, where the roofs meet
        ax.hlines(value, start, hi, color="tab:red", lw=1.0, ls=(0, (4, 2)))
        label_y = max(value, label_y * 1.4)  # keep close roofs' labels apart (log axis)
        ax.annotate(f"cuBLAS {dtype} {value:.0f} TFLOP/s", (start, value), xytext=(start, label_y),
                    ha="left", va="bottom", fontsize=8, color="tab:red")
    for r, x in zip(recs, xs):
        ax.scatter(x, r.tflops, s=14, alpha=0.35, marker=ALGORITHM_MARKER.get(r.algorithm, "o"),
                   color=BACKEND_COLOR.get(r.backend, "tab:gray"), linewidths=0)
    best = {}
    for r, x in zip(recs, xs):
        k = (r.algorithm, r.dtype, r.backend)
        if k not in best or r.tflops > best[k][0].tflops:
            best[k] = (r, x)
    notes, anchors = [], []  # anchors: [x, y, numbers] of points close enough to share a label
    for i, (r, x) in enumerate(sorted(best.values(), key=lambda p: (p[1], p[0].tflops)), start=1):
        y = r.tflops
        ax.scatter(x, y, s=70, marker=ALGORITHM_MARKER.get(r.algorithm, "o"),
                   color=BACKEND_COLOR.get(r.backend, "tab:gray"), edgecolors="white", linewidths=0.8, zorder=3)
        near = next((a for a in anchors if abs(math.log10(a[0] / x)) < 0.08 and abs(math.log10(a[1] / y)) < 0.08), None)
        if near:
            near[2].append(i)
        else:
            anchors.append([x, y, [i]])
        notes.append(f"{i:>2} {r.algorithm} {r.dtype} {r.backend} {r.variant}\n"
                     f"   {'x'.join(map(str, r.shape))}: {r.tflops:.3g} TFLOP/s")
    for x, y, numbers in anchors:
        ax.annotate(",".join(map(str, numbers)), (x, y), xytext=(6, 3), textcoords="offset points",
                    fontsize=8, zorder=4)
    for backend, color in BACKEND_COLOR.items():
        ax.scatter([], [], color=color, label=backend + (" (reference)" if backend == "torch" else ""))
    for alg, marker in ALGORITHM_MARKER.items():
        ax.scatter([], [], color="0.4", marker=marker, label=alg)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(lo, hi)
    top = max([v for v, _ in roofs] + [r.tflops for r in recs])
    ax.set_ylim(min(r.tflops for r in recs) / 2, top * 4)
    ax.set_xlabel("arithmetic intensity (FLOP / byte that must move; log scale)")
    ax.set_ylabel("achieved TFLOP/s (log scale)")
    devices = sorted({str(run["meta"].get("device")) for run in runs})
    dates = sorted({(run["meta"].get("date") or "")[:10] for run in runs})
    ax.set_title(f"Roofline: {', '.join(devices)}, {' to '.join(dict.fromkeys([dates[0], dates[-1]]))}; "
                 "roofs measured in the same runs", fontsize=10)
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(loc="upper left", fontsize=8)
    side.axis("off")
    side.text(0, 1, "numbered: the fastest of each\n(algorithm, dtype, backend)\n\n" + "\n".join(notes),
              ha="left", va="top", fontsize=7.5, family="monospace", transform=side.transAxes)
    side.text(0, 0, "Transpose is not shown: it does no\narithmetic (0 FLOP/byte). Its bandwidth\n"
              "is plotted against the copy ceiling\nin the transpose plots.", ha="left", va="bottom",
              fontsize=8, transform=side.transAxes)
    path = pathlib.Path(path)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


# ---- everything for a set of runs ------------------------------------------------------------
def plot_runs(runs: list[dict], out_dir) -> list[pathlib.Path]:
    """Per device: ``<algorithm>-<dtype>-<device>.png`` from the newest run of each algorithm,
    and one ``roofline-<device>.png`` over those runs. Returns the files written."""
    out_dir = pathlib.Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    by_device = {}
    for run in runs:
        by_device.setdefault(slug(run["meta"].get("device")), []).append(run)
    for device, group in by_device.items():
        newest = newest_per_algorithm(group)
        for alg, run in newest.items():
            for dtype in dict.fromkeys(r.dtype for r in run["records"]):
                p = sweep_plot(run, alg, dtype, out_dir / f"{alg}-{dtype}-{device}.png")
                written += [p] if p else []
        p = roofline_plot(list(newest.values()), out_dir / f"roofline-{device}.png")
        written += [p] if p else []
    return written


def plot_files(paths, out_dir) -> list[pathlib.Path]:
    return plot_runs([read_json(p) for p in paths], out_dir)
