"""tools/sanitize_all.sh and its driver, checked without a GPU (issue 7, part 4): the driver
covers every variant of both backends and its checks pass under the interpreter; the script
finds the sanitizer, writes one summary line per run and fails on any reported error (a stand-in
compute-sanitizer replays the tool's summary lines)."""

import os
import pathlib
import subprocess
import sys

import pytest

import cuda_ref
from conftest import tool_module
import triton_impl

ROOT = pathlib.Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "tools" / "sanitize_all.sh"


def _driver():
    return tool_module("sanitize_driver")


@pytest.mark.parametrize("backend", ["cuda", "triton"])
def test_driver_covers_every_variant(backend):
    mod = {"cuda": cuda_ref, "triton": triton_impl}[backend]
    cases = _driver().cases(backend)
    for alg in ("transpose", "gemv", "matmul"):
        assert {c[1] for c in cases if c[0] == alg} == set(mod.variants(alg)), alg
    # odd shapes and both layouts are in
    assert any(c[0] == "gemv" and c[2] == (1025, 1030) and c[4] == "col" for c in cases)
    assert any(c[0] == "transpose" and c[2] == (33, 65) and c[4] == "t" for c in cases)


def test_driver_runs_triton_under_the_interpreter(monkeypatch, device):
    if device != "cpu":
        pytest.skip("the GPU run is tools/sanitize_all.sh itself")
    drv = _driver()
    monkeypatch.setattr(drv, "TRANSPOSE_SHAPES", [(33, 65)])  # the interpreter is slow
    monkeypatch.setattr(drv, "GEMV_SHAPES", [(67, 45)])
    monkeypatch.setattr(drv, "MATMUL_SHAPES", [(9, 7, 5)])
    monkeypatch.setattr(drv, "BATCH_SHAPES", [(2, 9, 7, 5)])
    monkeypatch.setattr(drv, "PERSISTENT_SHAPES", {})
    monkeypatch.setattr(drv, "FP8_SHAPES", drv.FP8_SHAPES[:2])
    monkeypatch.setattr(drv, "GROUPED_SHAPES", drv.GROUPED_SHAPES[:1])
    monkeypatch.setattr(drv, "WEIGHT_GRAD_SHAPES", drv.GROUPED_SHAPES[:1])
    assert drv.run("triton", device="cpu", verbose=False) == 0


def _fake_sanitizer(tmp_path, summary_line, rc):
    fake = tmp_path / "compute-sanitizer"
    fake.write_text(f"#!/bin/sh\n[ \"$1\" = --version ] && {{ echo 'fake 1.0'; exit 0; }}\n"
                    f"echo '========= {summary_line}'\nexit {rc}\n")
    fake.chmod(0o755)
    return fake


@pytest.mark.parametrize("line,rc,ok", [
    ("ERROR SUMMARY: 0 errors", 0, True),
    ("ERROR SUMMARY: 3 errors", 1, False),
    ("RACECHECK SUMMARY: 2 hazards displayed (2 errors, 0 warnings)", 1, False),
])
def test_script_summary_and_exit_status(tmp_path, line, rc, ok):
    if not pathlib.Path("/bin/bash").exists():
        pytest.skip("no bash")
    out = tmp_path / "out"
    env = dict(os.environ, OUT=str(out), COMPUTE_SANITIZER=str(_fake_sanitizer(tmp_path, line, rc)),
               PYTHON=sys.executable)
    res = subprocess.run(["bash", str(SCRIPT)], env=env, capture_output=True, text=True, timeout=60)
    summary = (out / "sanitizer.txt").read_text().splitlines()
    runs = [s for s in summary if s.split(":")[0] in
            ("memcheck cuda", "racecheck cuda", "synccheck cuda", "initcheck cuda", "memcheck triton")]
    assert len(runs) == 5, summary
    assert (res.returncode == 0) == ok, res.stdout + res.stderr
    for s in runs:
        assert ("pass (0 errors" in s) if ok else ("FAIL" in s), s
    assert (out / "sanitizer.log").stat().st_size > 0


def test_script_without_sanitizer_says_so(tmp_path):
    env = dict(os.environ, PATH="/usr/bin:/bin", PYTHON="/nonexistent-python")
    env.pop("COMPUTE_SANITIZER", None)
    import glob
    import shutil
    if shutil.which("compute-sanitizer", path=env["PATH"]) or glob.glob("/usr/local/cuda*/bin/compute-sanitizer") \
            or glob.glob("/usr/local/cuda*/compute-sanitizer/compute-sanitizer"):
        pytest.skip("a real compute-sanitizer is installed")
    res = subprocess.run(["bash", str(SCRIPT)], env=env, capture_output=True, text=True, timeout=60)
    assert res.returncode == 2 and "compute-sanitizer not found" in res.stderr
