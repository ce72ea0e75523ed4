"""The harness on its own: registry, CLI parsing, shape parsing, report formatting, files."""

import csv
import dataclasses
import json
import os
import pathlib
import shutil
import subprocess
import sys

import pytest
import torch

import cuda_ref
import triton_impl
from bench import cli, registry
from bench.results_io import SCHEMA, Record, read_json, write_csv, write_json
from bench.tables import format_tables
from bench.specs import TransposeSpec, parse_shape
from conftest import requires_gpu


def test_registry_keys_unique_and_known_backends():
    keys = [i.key for i in registry.TABLE]
    assert len(keys) == len(set(keys))
    assert {i.backend for i in registry.TABLE} <= set(registry.BACKENDS)


@pytest.mark.parametrize("package,backend", [(cuda_ref, "cuda"), (triton_impl, "triton")])
def test_registry_covers_every_variant(package, backend):
    for algorithm in registry.algorithms():
        registered = {i.variant for i in registry.select(algorithm, backend)}
        assert registered == set(package.variants(algorithm))


def test_torch_references_registered():
    assert registry.get("transpose", "torch", "contiguous").role == "reference"
    assert registry.get("transpose", "torch", "copy").role == "ceiling"
    with pytest.raises(KeyError):
        registry.get("transpose", "cuda", "nope")


def test_torch_transpose_row_moves_the_bytes_where_its_view_is_contiguous():
    """torch's transpose row times a copy where .contiguous() would return the view itself (a side of
    1, or the .t() of a contiguous x): a loop of it would otherwise time no kernel at all."""
    fn = registry.get("transpose", "torch", "contiguous").fn
    for a in (torch.arange(5, dtype=torch.int8).view(1, 5), torch.randn(3, 7).t(), torch.randn(2, 1, 9)):
        t = fn(a)
        assert torch.equal(t, a.transpose(-1, -2)) and t.is_contiguous()
        assert t.data_ptr() != a.data_ptr()
    a = torch.randn(3, 7)
    assert torch.equal(fn(a), a.t())


def test_variants_unknown_algorithm():
    with pytest.raises(ValueError, match="algorithm must be one of"):
        cuda_ref.variants("fft")


def test_parse_shape():
    assert parse_shape("4096") == (4096,)
    assert parse_shape("12345x6789") == (12345, 6789)
    assert TransposeSpec.normalize_shape((4096,)) == (4096, 4096)
    with pytest.raises(ValueError, match="--size"):
        parse_shape("12x")
    assert TransposeSpec.normalize_shape((64, 1024, 1000)) == (64, 1024, 1000)  # a batch
    with pytest.raises(ValueError, match="--size"):
        TransposeSpec.normalize_shape((1, 2, 3, 4))


def test_cli_parsing():
    args = cli.build_parser().parse_args(
        ["compare", "--algorithm", "transpose", "--backend", "cuda", "--backend", "triton",
         "--dtype", "float16", "--size", "64", "33x65", "--json", "x.json", "--csv", "x.csv"])
    assert args.algorithm == ["transpose"] and args.backend == ["cuda", "triton"]
    assert args.size == [["64", "33x65"]] and args.json == "x.json" and args.csv == "x.csv"
    with pytest.raises(SystemExit):
        cli.build_parser().parse_args(["compare", "--backend", "opencl"])


def test_cli_list_json(capsys):
    assert cli.main(["list", "--json"]) == 0
    listing = json.loads(capsys.readouterr().out)
    assert listing["case_layouts"] == {"matmul": ["row", "wt"], "bmm": ["row", "kt"],  # (addmm's are matmul's)
                                       "grouped_mm": ["row", "kt"], "scaled_mm": ["tensor", "row", "block"]}
    assert len(listing["size_sets"]["matmul"]["models"]) == 40
    assert set(listing["size_sets"]) == {"transpose", "gemv", "matmul", "bmm", "grouped_mm", "scaled_mm"}
    assert len(listing["size_sets"]["bmm"]["attention"]) == 16 and len(listing["size_sets"]["grouped_mm"]["moe"]) == 12
    assert [4097, 4095] in listing["size_sets"]["transpose"]["odd"]
    rows = listing["implementations"]
    assert any({"algorithm": "transpose", "backend": "torch", "variant": "copy", "role": "ceiling"}.items()
               <= r.items() for r in rows)
    assert any({"algorithm": "gemv", "backend": "cuda", "variant": "split_k", "layout": "row"}.items()
               <= r.items() for r in rows)
    assert len(rows) == len(registry.TABLE)


def _records():
    common = dict(algorithm="transpose", dtype="float32", shape=[16384, 16384], device="Test GPU")
    return [
        Record(backend="cuda", variant="smem_tiled_vec", role="impl", ok=True, max_rel_err=0.0,
               median_ms=0.7, gbps=3000.0, ceiling="copy", pct_of_ceiling=96.5, x_vs_ref=3.6,
               default=True, **common),
        Record(backend="cuda", variant="serial", role="impl", detail="skipped: above its size cap",
               **common),
        Record(backend="triton", variant="per_row", role="impl", ok=False, max_rel_err=float("inf"),
               detail="3 of 9 differ", **common),
        Record(backend="torch", variant="contiguous", role="reference", ok=True, max_rel_err=0.0,
               median_ms=2.5, gbps=850.0, pct_of_ceiling=27.0, x_vs_ref=1.0, **common),
    ]


def test_format_tables():
    text = format_tables(_records(), {"copy_gbs": 3100.0})
    assert "copy_gbs = 3100.0" in text
    assert "== transpose  float32  16384x16384  on Test GPU" in text
    line = next(l for l in text.splitlines() if "smem_tiled_vec" in l)
    assert "smem_tiled_vec *" in line and "3000 GB/s" in line and "96.5" in line and "3.60" in line
    assert "FAIL" in text and "3 of 9 differ" in text and "contiguous (reference)" in text


def test_json_and_csv_round_trip(tmp_path):
    meta = {"device": "Test GPU", "date": "2026-11-21", "git_commit": "abc"}
    write_json(tmp_path / "r.json", meta, {"copy_gbs": 3100.0}, _records())
    data = json.loads((tmp_path / "r.json").read_text())  # the file format
    assert data["schema"] == SCHEMA and data["meta"]["device"] == "Test GPU"
    needed = {"algorithm", "backend", "variant", "dtype", "shape", "median_ms", "min_ms", "max_ms",
              "ok", "max_rel_err", "device"}
    assert all(needed <= set(r) for r in data["records"])
    assert read_json(tmp_path / "r.json")["records"] == _records()  # and back to records
    write_csv(tmp_path / "r.csv", meta, _records())
    rows = list(csv.DictReader(open(tmp_path / "r.csv")))
    assert len(rows) == 4 and rows[0]["shape"] == "16384x16384" and rows[0]["git_commit"] == "abc"


def test_a_gzipped_results_file_reads_as_its_json(tmp_path):
    """Draws are kept as ``*.json.gz``: written and read through the same calls, listed beside
    the plain files, and a JSON list beside them is still not a run."""
    import gzip

    from bench.results_io import results_files

    meta = {"device": "Test GPU", "date": "2026-11-21", "git_commit": "abc"}
    write_json(tmp_path / "d.json.gz", meta, {}, _records())
    write_json(tmp_path / "p.json", meta, {}, _records())
    assert json.loads(gzip.decompress((tmp_path / "d.json.gz").read_bytes()))["schema"] == SCHEMA
    assert read_json(tmp_path / "d.json.gz")["records"] == read_json(tmp_path / "p.json")["records"] == _records()
    (tmp_path / "counts.json.gz").write_bytes(gzip.compress(b"[1, 2]"))
    assert results_files(tmp_path) == [str(tmp_path / "d.json.gz"), str(tmp_path / "p.json")]


def test_read_json_refuses_unknown_schema(tmp_path):
    (tmp_path / "old.json").write_text(json.dumps({"schema": "v0", "records": []}))
    with pytest.raises(ValueError, match="unknown results schema"):
        read_json(tmp_path / "old.json")


def test_compare_command_without_gpu_checks_triton(tmp_path, capsys):
    import torch
    if torch.cuda.is_available():
        pytest.skip("this is the no-GPU path")
    rc = cli.main(["compare", "--algorithm", "transpose", "--size", "37x1", "--dtype", "bfloat16",
                   "--json", str(tmp_path / "r.json")])
    out = capsys.readouterr().out
    assert rc == 0 and out.startswith("No CUDA GPU found")
    recs = read_json(tmp_path / "r.json")["records"]
    assert {r.backend for r in recs} == {"triton", "torch"}
    assert all(r.ok for r in recs if r.role != "ceiling")


def test_readme_results_section_is_current():
    """docs/RESULTS.md's results sections are exactly what `python -m bench report` writes."""
    assert cli.main(["report", "--check"]) == 0, "run: python -m bench report"


def test_report_markdown(tmp_path):
    from bench.readme import markdown_summary
    write_json(tmp_path / "r.json", {"device": "Test GPU", "date": "2026-11-21"}, {"copy_gbs": 3100.0}, _records())
    text = markdown_summary([tmp_path / "r.json"])
    assert "**Test GPU**" in text and "| 16384x16384 | `smem_tiled_vec` 3000 GB/s, 96.5%, 3.60x | - |" in text
    # the only Triton record failed: no best Triton variant ("-" above)


def test_report_keeps_drawn_runs_out_of_the_tables(tmp_path):
    """A run over drawn shapes is summarized (geomean / p10 / worst), not listed shape by shape."""
    from bench.readme import markdown_summary
    write_json(tmp_path / "a.json", {"device": "Test GPU", "date": "2026-11-21"}, {"copy_gbs": 3100.0}, _records())
    drawn = [dataclasses.replace(r, shape=[7, 1234]) for r in _records()]
    write_json(tmp_path / "b.json", {"device": "Test GPU", "date": "2026-11-22", "size_set": "dense", "seed": 9},
               {"copy_gbs": 3100.0}, drawn)
    text = markdown_summary([tmp_path / "a.json", tmp_path / "b.json"])
    assert "| 16384x16384 |" in text and "| 7x1234 |" not in text
    section = text[text.index("### Shapes drawn"):]
    assert "seed 9" in section and "b.json" in section
    assert "transpose cuda float32 (1 shapes): flushed 3.60 / 3.60 / 3.60 (7x1234)" in section


# ---- cuda_ref/kernels/MATMUL.md ---------------------------------------------------------------
def _nvrtc_or_skip():
    from bench import nvrtc
    if not nvrtc.available():
        pytest.skip("NVRTC (cuda-bindings + nvidia-cuda-nvrtc) not installed")


@pytest.mark.cpu_only
def test_matmul_doc_is_current():
    """The committed MATMUL.md is exactly what `python -m bench matmul-doc` writes. ptxas's
    figures depend on the NVRTC version, so another version skips (regenerate and commit)."""
    _nvrtc_or_skip()
    import pathlib

    from bench.matmul_doc import doc_nvrtc_version
    from cuda_ref.compile import nvrtc_version
    path = pathlib.Path(cli._ROOT, "cuda_ref", "kernels", "MATMUL.md")
    made_with = doc_nvrtc_version(path.read_text())
    here = ".".join(map(str, nvrtc_version()))
    if made_with != here:
        pytest.skip(f"MATMUL.md was generated with NVRTC {made_with}, this is {here}")
    assert cli.main(["matmul-doc", "--check"]) == 0, "run: python -m bench matmul-doc"


@pytest.mark.cpu_only
def test_matmul_doc_takes_rates_from_the_newest_results(tmp_path):
    _nvrtc_or_skip()
    from bench.matmul_doc import matmul_doc, newest_matmul_results
    common = dict(algorithm="matmul", dtype="float32", shape=[4096, 4096, 4096], device="Test GPU",
                  metric="TFLOP/s", ok=True, max_rel_err=1e-7)
    old = [Record(backend="cuda", variant="warptiled", role="impl", median_ms=4.0, tflops=34.4,
                  pct_of_ceiling=67.0, x_vs_ref=0.67, **common)]
    new = [Record(backend="cuda", variant="warptiled", role="impl", median_ms=3.0, tflops=45.8,
                  pct_of_ceiling=89.0, x_vs_ref=0.9, **common),
           # B = W.t(): not what MATMUL.md shows
           Record(backend="cuda", variant="warptiled", role="impl", median_ms=2.0, tflops=68.7,
                  pct_of_ceiling=99.0, x_vs_ref=1.1, layout="wt", **common),
           Record(backend="cuda", variant="double_buffered", role="impl", ok=False, max_rel_err=1.0,
                  **{k: v for k, v in common.items() if k not in ("ok", "max_rel_err")}),
           Record(backend="torch", variant="matmul", role="reference", median_ms=2.7, tflops=50.9,
                  pct_of_ceiling=100.4, x_vs_ref=1.0, **common)]
    write_json(tmp_path / "a.json", {"device": "Test GPU", "date": "2026-12-02T00:00:00"}, {}, new)
    write_json(tmp_path / "b.json", {"device": "Test GPU", "date": "2026-12-01T00:00:00"}, {}, old)
    write_json(tmp_path / "c.json", {"device": "Test GPU", "date": "2026-12-03T00:00:00"}, {}, _records())
    assert newest_matmul_results(tmp_path) == str(tmp_path / "a.json")  # c.json has no matmul
    text = matmul_doc(tmp_path)
    assert "/a.json`" in text
    line = next(l for l in text.splitlines() if l.startswith("| `warptiled`"))
    assert "| 45.8 | 0.90 | 89.0 |" in line and "matmul_warptiled<" in line
    assert "| FAIL |" in next(l for l in text.splitlines() if l.startswith("| `double_buffered`"))
    assert "| cuBLAS (`torch.matmul`) | the reference | 50.9 |" in text
    assert "not measured yet | - | -" in text  # the variants without a record
    empty = tmp_path / "empty"
    empty.mkdir()
    assert "Rates: not measured yet" in matmul_doc(empty)
    # a walk's table comes from the newest run of the whole walk, not a newer run of its last step
    from cuda_ref import _matmul as mm
    tc = dict(common, dtype="bfloat16")
    walk = [Record(backend="cuda", variant=v, role="impl", median_ms=1.0, tflops=100.0, **tc) for v in mm.TC_VARIANTS]
    write_json(tmp_path / "d.json", {"device": "Test GPU", "date": "2026-12-04T00:00:00"}, {}, walk)
    write_json(tmp_path / "e.json", {"device": "Test GPU", "date": "2026-12-05T00:00:00"}, {}, walk[-1:])
    assert newest_matmul_results(tmp_path, "bfloat16", mm.TC_VARIANTS) == str(tmp_path / "e.json")
    assert newest_matmul_results(tmp_path, "bfloat16", mm.TC_VARIANTS, complete=True) == str(tmp_path / "d.json")


@requires_gpu
def test_time_interleaved_keeps_each_functions_times():
    """Calls taken in turns, each repetition starting one further along: every time must land on
    its own function (a sum over twice the elements takes about twice as long; a slip in the
    rotation would mix them)."""
    from bench.timing import time_interleaved

    x = torch.rand(1 << 26, device="cuda")
    half = x[: 1 << 25]
    short, long_, again = time_interleaved([half.sum, x.sum, half.sum], min_reps=5)
    assert 1.5 < long_.median_ms / short.median_ms < 2.5
    assert 0.8 < again.median_ms / short.median_ms < 1.25
    assert short.min_ms <= short.median_ms <= short.max_ms


def test_time_loops_takes_rounds_in_turns(monkeypatch):
    """Back-to-back rounds in turns: each rep starts one further along the list, every function
    runs its own call count, and each median lands on its own function."""
    from bench import timing

    order = []

    def fake_rounds(fn, calls):
        order.append((fn, calls))
        return fn() * calls

    monkeypatch.setattr(timing, "back_to_back_ms", fake_rounds)
    fns = [lambda: 1.0, lambda: 2.0, lambda: 3.0]
    assert timing.time_loops(fns, calls=[5, 7, 11], reps=3) == [5.0, 14.0, 33.0]
    starts = [order[i][0] for i in range(0, 9, 3)]
    assert starts == fns  # rep r starts at function r
    assert sorted(calls for _, calls in order) == [5] * 3 + [7] * 3 + [11] * 3


def test_gpu_commands_say_what_they_need(capsys, monkeypatch):
    """Commands that need a GPU or an optional package end in one clear line and exit status 2, not
    a traceback."""
    import importlib.util

    import torch
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert cli.main(["tune", "--size", "64"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: tuning times kernels on a GPU"), err
    find = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "transformers" else find(name, *a))
    assert cli.main(["model", "--model", "llama"]) == 2
    err = capsys.readouterr().err
    assert "pip install transformers" in err, err


def _bench(*args, cwd=cli._ROOT, env=None):
    """``python -m bench ARGS`` in a fresh interpreter, as a newcomer types it: (exit status, stdout,
    stderr's last line; a library's warnings may come before it)."""
    run = subprocess.run([sys.executable, "-m", "bench", *args], cwd=cwd, env=env, capture_output=True,
                         text=True, timeout=600)
    return run.returncode, run.stdout, (run.stderr.strip().splitlines() or [""])[-1]


@pytest.mark.parametrize("args,error", [
    (["compare", "--algorithm", "fft"], "error: --algorithm must be one of transpose, matmul, gemv, addmm, bmm, grouped_mm, scaled_mm, got 'fft'"),
    # the known variants named: those of the algorithms chosen
    (["compare", "--algorithm", "transpose", "--variant", "nope"],
     "error: --variant must be one of serial, per_row, per_element, "),
    (["compare", "--backend", "cuda", "--variant", "blocked"], "error: no implementation of transpose, matmul, gemv "
                                                               "is of --backend cuda and --variant blocked"),
])
def test_compare_refuses_what_would_run_nothing(args, error):
    """A name of no implementation, or a choice of none, ends in one error line (exit 2) before
    anything runs: not a silent empty run (exit 0), nor exit 1 without the error."""
    rc, out, err = _bench(*args)
    assert (rc, out) == (2, "") and err.startswith(error), (rc, out, err)


def test_compare_cuda_without_gpu_says_so():
    if torch.cuda.is_available():
        pytest.skip("this is the no-GPU path")
    rc, out, err = _bench("compare", "--backend", "cuda")
    assert (rc, out, err) == (2, "", "error: compare: the cuda kernels chosen need a GPU (none found)")


def test_warmup_without_gpu_says_so():
    if torch.cuda.is_available():
        pytest.skip("this is the no-GPU path")
    rc, out, err = _bench("warmup", "--size", "16x64x64")
    assert (rc, out, err) == (2, "", "error: warmup compiles and loads kernels for a GPU (none found)")


@requires_gpu
def test_warmup_makes_the_first_calls():
    """Each backend's matmul on each shape and its gemv once a weight, in the dtype asked."""
    from bench.warmup import warm
    records = warm(["cuda", "triton"], ["float16"], [(3, 72, 40), (16, 72, 40)], progress=lambda m: None)
    assert [(r["backend"], r["call"], r["shape"]) for r in records] == [
        ("cuda", "matmul", [3, 72, 40]), ("cuda", "gemv", [72, 40]), ("triton", "matmul", [3, 72, 40]),
        ("triton", "gemv", [72, 40]), ("cuda", "matmul", [16, 72, 40]), ("triton", "matmul", [16, 72, 40])]
    assert all(r["seconds"] > 0 and r["dtype"] == "float16" for r in records)


def test_model_without_gpu_says_so():
    """bench model times on a GPU: without one, one error line (not torch's assertion's traceback)."""
    if torch.cuda.is_available():
        pytest.skip("this is the no-GPU path")
    pytest.importorskip("transformers")
    for args in (("model",), ("model", "--llama-step")):
        rc, out, err = _bench(*args)
        assert (rc, out) == (2, "") and err.startswith("error: bench model times the models on a GPU"), (rc, err)


def test_checkout_commands_from_an_installed_package(tmp_path):
    """report and matmul-doc rewrite files of a checkout from its bench/results/: from an installed
    package (bench/ without results/, nothing of the checkout beside it) they say so."""
    site = tmp_path / "site-packages"
    shutil.copytree(pathlib.Path(cli.__file__).parent, site / "bench",
                    ignore=shutil.ignore_patterns("results", "__pycache__"))
    env = dict(os.environ, PYTHONPATH=str(site) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    rc, out, err = _bench("report", cwd=tmp_path, env=env)
    assert (rc, out) == (2, "") and err == (
        f"error: bench report rewrites docs/RESULTS.md of a checkout from its bench/results/, and "
        f"{site / 'docs' / 'RESULTS.md'} does not exist: run it from the repository root, or give --readme"), err
    rc, out, err = _bench("matmul-doc", "--check", cwd=tmp_path, env=env)
    assert (rc, out) == (2, "") and err.startswith("error: bench matmul-doc rewrites cuda_ref/kernels/MATMUL.md "
                                                   "of a checkout"), err


def test_resources_says_what_it_compiles(monkeypatch):
    """A minute of compiles: a line per algorithm and backend before each, not a minute of silence."""
    from bench import resources as res
    monkeypatch.setattr(res, "cuda_resources", lambda algorithm, dtype: [])
    monkeypatch.setattr(res, "triton_resources", lambda algorithm, dtype: [])
    monkeypatch.setattr(res, "_triton_in_subprocess", lambda algorithms, dtype_name: [])
    lines = []
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    res.resources(["transpose", "gemv"], progress=lines.append)
    assert lines == [f"{a} {b}: compiling its kernels" for a in ("transpose", "gemv") for b in ("cuda", "triton")]
    lines.clear()
    monkeypatch.setenv("TRITON_INTERPRET", "1")  # Triton's in a fresh interpreter, all at once
    res.resources(["gemv"], ["triton"], progress=lines.append)
    assert lines == ["gemv triton: compiling their kernels in a fresh interpreter (TRITON_INTERPRET is set here)"]


def test_license_ships():
    """pyproject's license-files name files of the checkout (a wheel without them fails to build)."""
    pyproject = cli._ROOT / "pyproject.toml"
    if not pyproject.is_file():
        pytest.skip("needs the checkout's pyproject.toml")
    tomllib = pytest.importorskip("tomllib")
    files = tomllib.loads(pyproject.read_text())["project"]["license-files"]
    assert files == ["LICENSE"] and (cli._ROOT / "LICENSE").read_text().startswith("MIT License")


def test_gemv_compare_judges_a_cancelled_row_against_its_terms():
    """One row whose 12291 products of ~1 sum to 0.5: a float32 accumulation's rounding, large
    against |y| but not against the partial sums it rounds, passes; an error of a thousandth of
    those partial sums fails, as a thousandth of |y| does on a row that does not cancel."""
    from bench.specs import GemvSpec, terms_scale
    g = torch.Generator().manual_seed(3)
    K = 12291
    a = (torch.rand(1, K, generator=g) + 0.5) * (torch.randint(0, 2, (1, K), generator=g) * 2 - 1)
    x = torch.rand(K, generator=g) + 0.5
    a[0, -1] -= ((a[0].double() @ x.double()).item() - 0.5) / x[-1].item()  # (the sum cancelled to 0.5)
    ref, terms = GemvSpec.reference((a, x)), terms_scale(a, x)
    assert abs(ref.item() - 0.5) < 1e-3 and terms > 50
    assert GemvSpec.compare((a @ x).reshape(1), ref, (a, x)).ok  # float32 sums
    assert GemvSpec.compare(ref.float() + 2 * 2.0 ** -24 * K ** 0.5 * terms, ref, (a, x)).ok
    assert not GemvSpec.compare(ref.float() + 1e-3 * terms, ref, (a, x)).ok
    ones = (torch.ones(1, 64), torch.ones(64))
    assert GemvSpec.compare(torch.full((1,), 64.0), GemvSpec.reference(ones), ones).ok
    assert not GemvSpec.compare(torch.full((1,), 64.064), GemvSpec.reference(ones), ones).ok
