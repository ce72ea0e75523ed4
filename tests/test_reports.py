"""Reports on CPU: sweeps, plots, the roofline, kernel resources, the README sections, the CLI.

Plots and README sections are made from small results files written here with synthetic
records, so nothing depends on a GPU or on the committed results.
"""

import csv
import io
import json
import os
import pathlib
import subprocess
import sys

import pytest

from bench import cli, nvrtc
from bench.plots import plot_files, roofline_plot
from bench.readme import (README_BEGIN, README_END, SEEDS_BEGIN, SEEDS_END, STANDING_BEGIN, STANDING_END,
                          markdown_summary, models_standing, standing_section, update_readme, update_standing)
from bench.results_io import Record, newest_per_algorithm, read_json, write_csv, write_json
from bench.resources import KernelUse, cuda_resources, format_resources, occupancy
from bench.specs import SPECS
from bench.sweep import ProgressBar, sweep_sizes
from conftest import requires_gpu

ROOT = pathlib.Path(__file__).resolve().parent.parent
META = {"device": "Test GPU", "date": "2026-11-21T00:00:00+00:00", "torch": "2.x", "triton": "3.x",
        "cupy": "14.x", "cuda": "13.0", "driver": "580", "git_commit": "abc"}


def _rec(algorithm, backend, variant, dtype, shape, ms, role="impl", **kw):
    """A timed record with rates derived from the spec's work model, as compare makes them."""
    spec = SPECS[algorithm]
    gbps = spec.bytes(shape, spec.torch_dtype(dtype)) / (ms * 1e-3) / 1e9
    flops = spec.flops(shape)
    tflops = flops / (ms * 1e-3) / 1e12 if flops else None
    return Record(algorithm, backend, variant, role, dtype, list(shape), "Test GPU", metric=spec.metric,
                  ok=None if role == "ceiling" else True, max_rel_err=0.0, median_ms=ms, min_ms=ms, max_ms=ms,
                  gbps=gbps, tflops=tflops, pct_of_ceiling=50.0, **kw)


def _sweep_records():
    recs = []
    for n in (256, 1024, 4096):
        for dtype in ("float32", "float16"):
            recs += [_rec("matmul", "cuda", "smem_tiled", dtype, (n, n, n), 1e-6 * n**3),
                     _rec("matmul", "triton", "grouped", dtype, (n, n, n), 1e-8 * n**3),
                     _rec("matmul", "torch", "matmul", dtype, (n, n, n), 8e-9 * n**3, role="reference")]
        recs += [_rec("gemv", "cuda", "warp_per_row", "float32", (n, n), 1e-6 * n**2),
                 _rec("gemv", "triton", "blocked_row", "float32", (n, n), 1.1e-6 * n**2),
                 _rec("gemv", "torch", "mv", "float32", (n, n), 1.3e-6 * n**2, role="reference"),
                 _rec("transpose", "cuda", "smem_tiled", "float32", (n, n), 2e-6 * n**2),
                 _rec("transpose", "torch", "contiguous", "float32", (n, n), 3e-6 * n**2, role="reference"),
                 _rec("transpose", "torch", "copy", "float32", (n, n), 1e-6 * n**2, role="ceiling")]
    recs.append(_rec("matmul", "cuda", "naive", "float32", (495, 5333, 71), 0.1))  # an odd shape
    for r in recs:
        ref = next((x for x in recs if x.role == "reference"
                    and (x.algorithm, x.dtype, x.shape) == (r.algorithm, r.dtype, r.shape)), None)
        r.x_vs_ref = ref.median_ms / r.median_ms if ref else None
    return recs


CEILINGS = {"copy_gbs": 3000.0, "cublas_float32_tflops": 50.0, "cublas_float16_tflops": 700.0}


@pytest.fixture
def results(tmp_path):
    path = tmp_path / "results" / "run-test.json"
    path.parent.mkdir()
    write_json(path, META, CEILINGS, _sweep_records())
    return path


def _png_size(path):
    from matplotlib.image import imread

    img = imread(path)
    return img.shape[1], img.shape[0]


def test_plot_command_draws_every_png(results, tmp_path, capsys):
    out = tmp_path / "plots"
    assert cli.main(["plot", str(results), "--out", str(out)]) == 0
    names = sorted(p.name for p in out.glob("*.png"))
    assert names == ["gemv-float32-test-gpu.png", "matmul-float16-test-gpu.png", "matmul-float32-test-gpu.png",
                     "roofline-test-gpu.png", "transpose-float32-test-gpu.png"]
    for name in names:
        width, height = _png_size(out / name)
        assert width >= 800 and height >= 500, (name, width, height)
    assert "wrote" in capsys.readouterr().out


def test_roofline_leaves_out_transpose_and_needs_flops(tmp_path):
    only_transpose = [r for r in _sweep_records() if r.algorithm == "transpose"]
    run = {"meta": META, "ceilings": CEILINGS, "records": only_transpose}
    assert roofline_plot([run], tmp_path / "r.png") is None  # 0 FLOP/byte: nothing to draw
    run["records"] = _sweep_records()
    path = roofline_plot([run], tmp_path / "r.png")
    assert path.exists() and min(_png_size(path)) >= 500


def test_newest_run_wins_in_plots(tmp_path):
    old, new = tmp_path / "old.json", tmp_path / "new.json"
    write_json(old, dict(META, date="2026-01-01"), CEILINGS, _sweep_records())
    write_json(new, dict(META, date="2026-02-01"), CEILINGS,
               [r for r in _sweep_records() if r.algorithm == "gemv"])
    runs = newest_per_algorithm([read_json(old), read_json(new)])
    assert runs["gemv"]["meta"]["date"] == "2026-02-01" and runs["matmul"]["meta"]["date"] == "2026-01-01"
    assert len(plot_files([old, new], tmp_path / "plots")) == 5


def test_sweep_sizes():
    assert sweep_sizes("transpose") == (256, 512, 1024, 2048, 4096, 8192, 16384)
    assert sweep_sizes("gemv")[-1] == 32768 and sweep_sizes("matmul")[-1] == 8192
    assert sweep_sizes("matmul", gpu=False) == (16, 32, 64)


def test_progress_bar_in_a_log():
    stream = io.StringIO()
    bar = ProgressBar(4, stream)
    bar.note("matmul 256")
    bar.advance()
    bar.close()
    lines = stream.getvalue().splitlines()
    assert lines[0].startswith("[------") and "0/4" in lines[0] and lines[0].endswith("matmul 256")
    assert "1/4" in lines[1] and "left" in lines[1]


def test_compare_sweep_without_gpu(tmp_path, capsys):
    import torch
    if torch.cuda.is_available():
        pytest.skip("this is the no-GPU path")
    rc = cli.main(["compare", "--algorithm", "transpose", "--sweep", "--dtype", "float32", "--backend", "triton",
                   "--variant", "blocked", "--json", str(tmp_path / "r.json"), "--plot", str(tmp_path / "p")])
    captured = capsys.readouterr()
    assert rc == 0 and "3/3" in captured.err and "no plots" in captured.out
    shapes = [r.shape for r in read_json(tmp_path / "r.json")["records"]]
    assert shapes == [[16, 16], [32, 32], [64, 64]]


def test_cli_parses_the_new_commands():
    p = cli.build_parser()
    a = p.parse_args(["compare", "--algorithm", "gemv", "--sweep", "--plot", "out", "--resources"])
    assert a.sweep and a.plot == "out" and a.resources
    a = p.parse_args(["plot", "a.json", "b.json", "--out", "plots"])
    assert a.results == ["a.json", "b.json"] and a.out == "plots"
    a = p.parse_args(["resources", "--algorithm", "matmul", "--backend", "cuda", "--dtype", "float16", "--json"])
    assert a.algorithm == ["matmul"] and a.backend == ["cuda"] and a.dtype == "float16" and a.json
    with pytest.raises(SystemExit):
        p.parse_args(["plot", "a.json"])  # --out is required
    with pytest.raises(SystemExit):
        cli.main(["compare", "--sweep", "--size", "64"])
    a = p.parse_args(["overhead", "--json", "h.json"])
    assert a.json == "h.json"
    a = p.parse_args(["tune", "--size", "128x4096x4096", "16x4096x4096", "--dtype", "float16", "--layout", "wt"])
    assert a.size == [["128x4096x4096", "16x4096x4096"]] and a.dtype == "float16" and a.layout == "wt"
    assert not p.parse_args(["compare"]).no_tune


def test_csv_and_json_carry_every_table_column(tmp_path):
    write_csv(tmp_path / "r.csv", META, _sweep_records())
    header = next(csv.reader(open(tmp_path / "r.csv")))
    # the table's backend, variant (+ layout, role, the default mark), ok, max err, median ms,
    # rate, % ceil, x vs torch; and the run's date and commit on every row
    for column in ("backend", "variant", "layout", "role", "default", "ok", "max_rel_err", "median_ms", "min_ms",
                   "max_ms", "metric", "gbps", "tflops", "ceiling", "pct_of_ceiling", "x_vs_ref", "date", "git_commit"):
        assert column in header
    write_json(tmp_path / "r.json", META, CEILINGS, _sweep_records())
    data = json.loads((tmp_path / "r.json").read_text())
    assert data["meta"] == META and set(header) - {"date", "git_commit"} <= set(data["records"][0])


# ---- README ---------------------------------------------------------------------------------
def _readme(tmp_path):
    path = tmp_path / "README.md"
    path.write_text(f"# x\n\n{README_BEGIN}\nSTALE\n{README_END}\n\ntext\n\n{SEEDS_BEGIN}\nSTALE\n{SEEDS_END}\n")
    return path


def test_report_writes_both_sections_and_embeds_plots(results, tmp_path):
    readme = _readme(tmp_path)
    root = results.parent
    assert update_readme(readme, root) and update_readme(readme, root, check=True)
    text = readme.read_text()
    assert "STALE" not in text and "### matmul" in text and "**Test GPU**, 2026-11-21" in text
    assert "| shape | B | best CUDA | best Triton | torch `matmul` |" in text  # records of layout None: row
    assert "| shape | best CUDA | best Triton | torch `mv` |" in text  # gemv has no case layouts
    # squares first, then the odd shape; the only CUDA kernel at the odd shape is naive
    rows = [line for line in text.splitlines() if line.startswith("| ") and "x" in line.split("|")[1]]
    assert any(r.startswith("| 495x5333x71 | `row` | `naive`") for r in rows)
    assert "<img" not in text
    plot_files([results], root / "plots")
    assert not update_readme(readme, root, check=True)  # plots appeared: stale
    update_readme(readme, root)
    text = readme.read_text()
    assert '<img src="results/plots/matmul-float32-test-gpu.png"' in text
    assert '<img src="results/plots/roofline-test-gpu.png"' in text
    assert "| 001 | cuda `coalesced_shared` float32 | 4096^2 (2^12) | 0.78 ms" in text  # seed 001's figure


def _dense_run(root, name, date, backends, x):
    """A dense draw's results file: transposes of 1024^2 and 2048^2 float32 (4 and 16 MB) by
    ``backends``' defaults at ``x`` times torch's speed (back to back too), with the same-size copy."""
    recs = []
    for n in (1024, 2048):
        torch_ms = 3e-6 * n * n
        recs += [_rec("transpose", "torch", "contiguous", "float32", (n, n), torch_ms, role="reference"),
                 _rec("transpose", "torch", "copy", "float32", (n, n), torch_ms / 2, role="ceiling")]
        for b in backends:
            recs.append(_rec("transpose", b, "smem_tiled", "float32", (n, n), torch_ms / x, default=True,
                             x_vs_ref=x, x_loop_vs_ref=x))
    path = root / name
    write_json(path, dict(META, date=date, size_set="dense", seed=7), CEILINGS, recs)
    return path


def test_standing_takes_each_backends_newest_dense_draw(tmp_path, results):
    old = _dense_run(tmp_path, "old.json", "2026-11-20T00:00:00+00:00", ("cuda", "triton"), 0.8)
    new = _dense_run(tmp_path, "new.json", "2026-11-22T00:00:00+00:00", ("cuda",), 1.6)
    rows = standing_section([results, new, old]).splitlines()[2:]  # (the sweep is no draw: left out)
    assert len(rows) == 2
    cuda, triton = rows
    # cuda from the newer draw, triton from the only one that timed it; each shape's default at x
    # torch, flushed and back to back; a copy moves 2 x 4 bytes an element in torch's half time
    assert cuda.startswith("| transpose float32 | cuda | [Test s7, 2026-11-22](bench/results/new.json) | 2 | 1.60 / 1.60 / 1.60")
    assert "| 1.60 / 1.60 / 1.60 (1024x1024) | 0.80 / 0.80 / 0.80 (>= 1 MB, 2 shapes) |" in cuda
    assert triton.startswith("| transpose float32 | triton | [Test s7, 2026-11-20](bench/results/old.json) | 2 | 0.80 / 0.80 / 0.80")
    front = tmp_path / "README.md"
    front.write_text(f"# x\n\n{STANDING_BEGIN}\nSTALE\n{STANDING_END}\n")
    assert not update_standing(front, tmp_path, check=True)
    assert update_standing(front, tmp_path) and update_standing(front, tmp_path, check=True)
    assert "STALE" not in front.read_text() and cuda in front.read_text()


def test_models_standing_takes_each_models_newest_run_on_the_newest_device(tmp_path):
    def suite(name, date, device, cases):
        records = [{"model": m, "dtype": "bfloat16", "workload": w, "shape": [1, 16], "backend": b, "x": x}
                   for m, w, b, x in cases]
        path = tmp_path / name
        path.write_text(json.dumps({"meta": {"date": date, "device": device}, "records": records}))
        return str(path)
    old = suite("old.json", "2026-11-01", "NVIDIA H200", [("llama", "prefill", "triton", 0.5), ("gpt2", "prefill", "triton", 2.0)])
    new = suite("new.json", "2026-11-02", "NVIDIA H100 80GB HBM3",
                [("llama", "prefill", "triton", 0.8), ("llama", "prefill", "cuda", 1.1), ("llama", "train", "cuda", 0.9)])
    rows = models_standing([old, new]).splitlines()[2:]
    # llama's newer run replaces its older one; gpt2's newest run is on another device: left out
    assert rows == ["| bfloat16, H100 | prefill | 1 | 0.80 (0.80, llama 1x16) | 1.10 (1.10, llama 1x16) |",
                    "| bfloat16, H100 | train | 1 | - | 0.90 (0.90, llama 1x16) |"]


def test_report_refuses_unknown_schema(tmp_path, capsys):
    readme = _readme(tmp_path)
    (tmp_path / "results").mkdir()
    (tmp_path / "results" / "old.json").write_text(json.dumps({"schema": "v0", "records": []}))
    assert cli.main(["report", "--readme", str(readme), "--results", str(tmp_path / "results")]) == 2
    assert "unknown results schema 'v0'" in capsys.readouterr().err


def test_report_needs_its_markers(results, tmp_path):
    readme = tmp_path / "README.md"
    readme.write_text(f"{README_BEGIN}\n{README_END}\n")
    with pytest.raises(ValueError, match="seeds:begin"):
        update_readme(readme, results.parent)


def test_readme_matmul_rows_per_layout_of_b(tmp_path):
    """Each matmul shape gets a row per layout of B, row first, each against torch's figure on
    the same B."""
    recs = [r for r in _sweep_records() if r.algorithm == "matmul" and r.dtype == "float16" and r.shape[0] == 1024]
    wt = [_rec("matmul", "triton", "grouped", "float16", (1024,) * 3, 2e-3, layout="wt", x_vs_ref=2.0),
          _rec("matmul", "torch", "matmul", "float16", (1024,) * 3, 4e-3, role="reference", layout="wt")]
    write_json(tmp_path / "r.json", META, CEILINGS, wt + recs)  # wt first in the file: the table still orders
    rows = [line for line in markdown_summary([tmp_path / "r.json"]).splitlines() if line.startswith("| 1024x")]
    assert [r.split(" | ")[1] for r in rows] == ["`row`", "`wt`"]
    assert "2.00x" in rows[1] and "| - |" in rows[1]  # no CUDA record in the wt case


def test_markdown_summary_marks_failures_out(tmp_path):
    """A variant whose check failed is never the best, however fast it was timed."""
    failed = _rec("gemv", "cuda", "rows_per_warp", "float32", (4096, 4096), 1e-3)  # the fastest by far
    failed.ok, failed.detail = False, "3 of 4096 differ"
    path = tmp_path / "r.json"
    write_json(path, META, CEILINGS, _sweep_records() + [failed])
    text = markdown_summary([path])
    assert "| 4096x4096 | `warp_per_row`" in text and "GB/s" in text
    assert "rows_per_warp" not in text


def test_readme_shows_loop_and_host_cost(tmp_path):
    """loop_ms beside the isolated figure, and the newest `bench overhead` run as its own table,
    kept out of the throughput tables."""
    recs = _sweep_records()
    for r in recs:
        r.loop_ms = 2 * r.median_ms
        r.x_loop_vs_ref = 1.25 if r.role == "impl" else None
    write_json(tmp_path / "run.json", META, CEILINGS, recs)
    host = [Record("gemv", "torch", "mv", "reference", "float32", [64, 64], "Test GPU", host_us=12.0),
            Record("gemv", "cuda", "default", "impl", "float32", [64, 64], "Test GPU", default=True, host_us=9.0),
            Record("gemv", "cuda", "native", "impl", "float32", [64, 64], "Test GPU", host_us=30.0),
            Record("gemv", "triton", "default", "impl", "float32", [64, 64], "Test GPU", default=True, host_us=15.0)]
    walk = {"rows": "M 161-399 step 2", "layout": "wt", "new_shapes": 120}
    host += [Record("matmul", "torch", "matmul", "reference", "bfloat16", [161, 1408, 1024], "Test GPU", host_us=120.0,
                    extra=walk),
             Record("matmul", "triton", "default", "impl", "bfloat16", [161, 1408, 1024], "Test GPU", default=True,
                    host_us=240.0, extra=walk)]
    write_json(tmp_path / "host.json", dict(META, kind="overhead"), {}, host)
    text = markdown_summary([tmp_path / "run.json", tmp_path / "host.json"])
    assert "a shape not met before, median over 120 row counts (M 161-399 step 2, b = wt" in text
    assert "| matmul bfloat16 161x1408x1024 | 120.0 us (`matmul`) | - | 240.0 us (0.50x) |" in text
    assert text.index("Host time per call on a small input") < text.index("| gemv float32 64x64 |") < \
        text.index("a shape not met before") < text.index("| matmul bfloat16 161x1408x1024 |")
    assert "; loop " in text and "(1.25x)" in text
    assert "### What a program pays per call" in text
    assert "| gemv float32 64x64 | 12.0 us (`mv`) | 9.0 us (1.33x) | 15.0 us (0.80x) |" in text
    assert "30.0 us" not in text  # a named variant is not what a program's default call pays
    assert "| 64x64 |" not in text  # overhead records never become throughput rows


def test_overhead_measures_each_default_beside_torch(monkeypatch, device):
    """The calls bench overhead times, run for real (on CPU: Triton under the interpreter), timers
    counting calls: torch's reference and the default of each backend, and every named variant for the
    host cost; each call really runs its function."""
    import triton_impl
    from bench import overhead, registry
    calls = []

    def fake_host_cost(fns, **kw):
        for fn in fns:
            fn()
        calls.append(len(fns))
        return [float(i + 1) for i in range(len(fns))]

    def fake_loop(fn, **kw):
        fn()
        return 2.0

    registry.select()  # the table built with both packages (it is built once; run alone, this test built it below)
    monkeypatch.setattr(registry, "PACKAGES", {"triton": "triton_impl"})  # cuda_ref needs a GPU
    select = registry.select

    def refuses(*inputs):
        raise ValueError("a variant called on a shape its caps leave out")
    capped = registry.Impl("matmul", "triton", "capped", refuses, max_k=4)  # (as CUDA's short_k: K <= 16)
    monkeypatch.setattr(registry, "select",
                        lambda *a, **kw: select(*a, **kw) + ([capped] if a[:2] == ("matmul", "triton") else []))
    monkeypatch.setattr(overhead, "host_cost_us", fake_host_cost)
    monkeypatch.setattr(overhead, "time_loop", fake_loop)
    monkeypatch.setattr(overhead, "CASES", (("gemv", "float32", (8, 8)), ("matmul", "bfloat16", (8, 8, 8))))
    monkeypatch.setattr(overhead, "LOOP_CASES", (("transpose", "float32", (16, 16)),))
    host = overhead.measure(progress=lambda m: None, device=device)
    rows = [(r.backend, r.variant, r.role, r.default) for r in host if r.algorithm == "gemv"]
    assert rows[:2] == [("torch", "mv", "reference", False), ("triton", "default", "impl", True)]
    assert {v for _, v, _, _ in rows[2:]} == set(triton_impl.variants("gemv"))  # every named variant
    assert calls == [len(rows), len(host) - len(rows)] and all(r.host_us for r in host)
    assert not any(r.variant == "capped" for r in host)  # K = 8 past its cap: left out, not called
    loops = overhead.measure_loops(progress=lambda m: None, device=device)
    assert [(r.backend, r.variant) for r in loops] == [("torch", "contiguous"), ("triton", "default")]
    assert loops[0].x_loop_vs_ref is None and loops[1].x_loop_vs_ref == 1.0
    # new shapes: every row count of the timed walk planned by the call itself
    from triton_impl import _matmul
    made = []
    make = _matmul._PLANS._make
    monkeypatch.setattr(_matmul._PLANS, "_make", lambda inputs, *rest: (made.append(inputs[0].shape[0]), make(inputs, *rest))[1])
    monkeypatch.setattr(overhead, "NEW_SHAPE_CASES", (("matmul", "bfloat16", "wt", (range(30, 36, 2), 24, 40)),))
    new = overhead.measure_new_shapes(progress=lambda m: None, device=device)
    assert [(r.backend, r.variant, r.role) for r in new] == [("torch", "matmul", "reference"), ("triton", "default", "impl")]
    assert all(r.host_us > 0 and r.extra == {"rows": "M 31-35 step 2", "layout": "wt", "new_shapes": 3} for r in new)
    assert made == [30, 32, 34, 31, 33, 35]
    assert "each a shape not met before" in overhead.format_overhead(new)


@requires_gpu
def test_overhead_calls_run_on_a_gpu():
    """Every call `bench overhead` times, at its own cases, runs once on a GPU, both backends and
    every named variant it keeps (a variant kept on a shape it refuses ended the command)."""
    from bench import overhead
    for cases, variants in ((overhead.CASES, True), (overhead.LOOP_CASES, False)):
        for rows in overhead._calls(cases, variants, "", lambda m: None, "cuda"):
            assert {r.backend for r, _ in rows} == {"torch", "cuda", "triton"}
            for _, call in rows:
                call()


def test_overhead_table_names_the_ratio_to_torch():
    from bench.overhead import format_overhead
    recs = [Record("transpose", "torch", "contiguous", "reference", "float32", [64, 64], "G", host_us=10.0),
            Record("transpose", "cuda", "default", "impl", "float32", [64, 64], "G", default=True, host_us=8.0)]
    text = format_overhead(recs)
    assert "1.25x" in text and "1.00x" in text
    loops = [Record("transpose", "torch", "contiguous", "reference", "float32", [1024, 1024], "G", loop_ms=0.010),
             Record("transpose", "cuda", "default", "impl", "float32", [1024, 1024], "G", default=True,
                    loop_ms=0.008, x_loop_vs_ref=1.25)]
    assert "back-to-back" in format_overhead(recs + loops) and "1.25x" in format_overhead(recs + loops)


# ---- the seeds' claims ----------------------------------------------------------------------
def test_seed_claims_are_checked_against_records():
    from bench.seeds import FIGURES, checks, seed_line

    faster = _rec("gemv", "cuda", "coalesced_shared", "float32", (16384, 16384), 0.2, x_vs_ref=1.5)
    slower = _rec("gemv", "cuda", "coalesced", "float32", (16384, 16384), 2.0, x_vs_ref=0.15)
    run = {"meta": META, "ceilings": CEILINGS, "records": [faster, slower]}
    rows = checks({"gemv": run})
    assert len(rows) == len(FIGURES)
    by_variant = {c.figure.variant: c for c in rows if c.figure.seed == "001" and c.figure.shape == (16384, 16384)}
    assert round(by_variant["coalesced_shared"].claimed_x, 3) == round(8.55 / 7.15, 3)
    assert by_variant["coalesced_shared"].verdict == "held"
    assert by_variant["coalesced"].verdict == "did not hold"
    assert by_variant["native"].verdict == "not measured"
    line = seed_line("001", [c for c in rows if c.figure.seed == "001"])
    assert "claimed `coalesced_shared` at 1.20x cuBLAS" in line and "measured 1.50x" in line
    assert "1 of 2 ratios held" in line and "call on Test GPU" in line
    assert "no figure reported" in seed_line("003", [c for c in rows if c.figure.seed == "003"])


def test_seed_line_names_each_records_device():
    """The newest record of a seed's shape can come from an older run on another GPU than the
    algorithm's newest run: the sentence names the record's device, not the run's."""
    from bench.seeds import markdown

    old = _rec("transpose", "cuda", "smem_tiled", "float32", (16384, 16384), 2.0)
    old.device = "Older GPU"
    run = {"meta": dict(META, device="Newer GPU"), "ceilings": CEILINGS, "records": [old]}
    line = next(l for l in markdown({"transpose": run}).splitlines() if l.startswith("- **Seed 003**"))
    assert "measured on Older GPU" in line and "Newer GPU" not in line


# ---- resources ------------------------------------------------------------------------------
def test_occupancy_on_sm90():
    assert occupancy(1024, 64, 8192) == (1, 50.0, "registers")        # 64 regs x 1024 threads
    assert occupancy(128, 96, 49152) == (4, 25.0, "shared memory")     # 48 KiB + 1 KiB reserved per block
    assert occupancy(256, 32, 0) == (8, 100.0, "threads")
    assert occupancy(32, 16, 0) == (32, 50.0, "blocks")
    assert occupancy(256, 32, 228 * 1024)[0] == 0                      # over 227 KiB: cannot launch


@pytest.mark.skipif(not nvrtc.available(), reason="NVRTC (cuda-bindings + nvidia-cuda-nvrtc) not installed")
@pytest.mark.cpu_only
def test_cuda_resources_from_nvrtc():
    import torch
    if torch.cuda.is_available():
        pytest.skip("on a GPU the numbers come from CuPy")
    rows = cuda_resources("matmul", torch.float32)
    by_variant = {r.variant: r for r in rows}
    assert by_variant["smem_tiled"].threads == 1024 and by_variant["naive"].threads == 256
    assert by_variant["smem_tiled"].smem_static == 2 * 32 * 32 * 4  # As and Bs, float
    assert all(r.registers and r.occupancy_pct for r in rows)
    text = format_resources(rows)
    assert "matmul_smem_tiled<float, 32, 32, 32>" in text and "NVRTC" in text


def test_triton_resources_for_sm90():
    """Compiles the two transpose kernels for sm_90 in a fresh interpreter (no TRITON_INTERPRET)."""
    pytest.importorskip("triton.backends.nvidia")
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    run = subprocess.run([sys.executable, "-m", "bench", "resources", "--algorithm", "transpose", "--backend",
                          "triton", "--json"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    rows = {r["variant"]: KernelUse(**r) for r in json.loads(run.stdout)}
    blocked = rows["blocked"]
    assert blocked.registers > 0 and blocked.smem_dynamic > 0 and blocked.spill_stores == 0
    assert blocked.threads == 32 * 16 and blocked.occupancy_pct > 0


def test_git_state_tells_a_modified_tree_from_its_commit(tmp_path):
    """A results file names the commit it ran, and says when the tree was not that commit (a GPU
    machine's copy with a stale .git recorded the session's first commit for later code)."""
    import shutil
    import subprocess

    from bench.compare import git_state

    if shutil.which("git") is None:
        pytest.skip("no git")
    assert git_state(tmp_path) == (None, None)  # no repository
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-c", "commit.gpgsign=false"]
    subprocess.run([*git, "init", "-q"], cwd=tmp_path, check=True)
    (tmp_path / "k.cu").write_text("a\n")
    subprocess.run([*git, "add", "k.cu"], cwd=tmp_path, check=True)
    subprocess.run([*git, "commit", "-qm", "x"], cwd=tmp_path, check=True)
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=tmp_path, capture_output=True, text=True).stdout.strip()
    assert git_state(tmp_path) == (head, False)
    (tmp_path / "k.cu").write_text("b\n")  # the code run is not the commit's
    assert git_state(tmp_path) == (head, True)
    (tmp_path / "k.cu").write_text("a\n")
    (tmp_path / "new.cu").write_text("c\n")  # a file the stale .git never saw
    assert git_state(tmp_path) == (head, True)


def test_the_results_files_that_docs_and_shipped_tables_cite_exist():
    """A figure in the docs, a decision record or a shipped table names the results file behind it
    (``bench/results/<device>-<date>-...``): that file is committed under that name."""
    import re

    cited = re.compile(r"bench/results/(?:[a-z]+/)*(?:h100|h200|cpu)-[A-Za-z0-9_.-]+?\.(?:json\.gz|json|txt|csv|png)")
    sources = [ROOT / "README.md", *(ROOT / "docs").rglob("*.md"), *(ROOT / "cuda_ref").rglob("*.md"),
               *(ROOT / "cuda_ref").glob("*.json"), *(ROOT / "triton_impl").glob("*.json")]
    missing = sorted({(path, src.relative_to(ROOT).as_posix()) for src in sources
                      for path in cited.findall(src.read_text()) if not (ROOT / path).is_file()})
    assert not missing, missing[:10]
