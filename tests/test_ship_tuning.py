"""tools/ship_tuning.py without a GPU: its grid covers every layer bucket at every M bucket, and
``ship`` merges tuning files into a table (kept entries, the row limit, one dtype's entries copied
for another, the tuning machine's versions in the meta), for Triton's configs and CUDA's picks."""

import json
import sys

import pytest

from bench import workloads
from kernel_common import bucket
from conftest import tool_module

@pytest.fixture(scope="module")
def tool():
    return tool_module("ship_tuning")


def test_the_grid_holds_each_layer_bucket_once_at_each_m(tool):
    shapes = tool.grid(["bfloat16"], ["wt"])
    buckets = [bucket(M, N, K) for M, N, K, _, _ in shapes]
    assert len(buckets) == len(set(buckets))
    layer_buckets = {bucket(n, k) for n, k in workloads.layer_shapes()}
    assert {b[1:] for b in buckets} == layer_buckets
    assert {M for M, *_ in shapes} == {3 << i for i in range(2, 13)}
    assert all(M * max(N, K) <= workloads.MAX_ELEMENTS for M, N, K, _, _ in shapes)  # (a draw's cap)
    assert {M for M, *_ in tool.grid(["bfloat16"], ["wt"], [96, 192])} == {96, 192}


def _ship(tool, monkeypatch, tmp_path, *args):
    monkeypatch.setattr(sys, "argv", ["ship_tuning.py", "ship", *map(str, args), "--out", str(tmp_path / "t.json"),
                                      "--results", "bench/results/r.json"])
    tool.main()
    return json.loads((tmp_path / "t.json").read_text())


def test_ship_merges_keeps_limits_and_copies(tool, monkeypatch, tmp_path):
    tuned = tmp_path / "p.json"
    tuned.write_text(json.dumps({"meta": {"torch": "2.11", "cupy": "14.2"}, "NVIDIA H200": {
        "bfloat16 ak bn al 16x4096x4096": "few_rows_mma", "bfloat16 ak bk al 1024x4096x4096": "wgmma_ws"}}))
    table = _ship(tool, monkeypatch, tmp_path, "--backend", "cuda", tuned, "--same", "float16=bfloat16")
    assert table["entries"] == {"bfloat16 ak bn al 16x4096x4096": "few_rows_mma",
                                "float16 ak bn al 16x4096x4096": "few_rows_mma"}  # 1024 rows: past MAX_M
    assert table["meta"]["device"] == ["NVIDIA H200"] and table["meta"]["cupy"] == "14.2"
    assert table["meta"]["max_m"] == tool.MAX_M and table["meta"]["results"] == "bench/results/r.json"
    # again with no file: the table's entries and versions stay; a lower limit drops more
    table = _ship(tool, monkeypatch, tmp_path, "--backend", "cuda", "--max-m", "8")
    assert table["entries"] == {} and table["meta"]["cupy"] == "14.2"


def test_tf32_is_tuned_for_triton_only(tool, monkeypatch):
    """CUDA's TF32 runs one kernel (wgmma_swap), so a picks table has nothing to choose for it."""
    monkeypatch.setattr(sys, "argv", ["ship_tuning.py", "tune", "--backend", "cuda", "--dtype", "tf32",
                                      "--file", "unused.json"])
    with pytest.raises(SystemExit, match="Triton only"):
        tool.main()
