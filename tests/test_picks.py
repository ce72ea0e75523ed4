"""CUDA's measured picks (cuda_ref/_picks.py): a bucket's key, the table's lookup and its refusals,
and variant=None taking a measured pick before the rules. CPU only: a table of the test's own,
the Hopper check stood in."""

import json
import warnings

import pytest
import torch

from cuda_ref import _matmul, _picks


@pytest.fixture
def table(tmp_path, monkeypatch):
    """A picks table of the test's own for "sm_90", read afresh."""
    path = tmp_path / "picks_sm_90.json"
    monkeypatch.setattr(_picks, "table_path", lambda arch: tmp_path / f"picks_{arch}.json")
    monkeypatch.setenv("CUDA_REF_SHIPPED_PICKS", "1")
    _picks.forget()
    yield path
    _picks.forget()


def _write(path, entries):
    path.write_text(json.dumps({"meta": {"device": ["NVIDIA H200"]}, "entries": entries}))


def test_a_bucket_names_dtype_majors_alignment_and_extents():
    a = torch.randn(17, 768, dtype=torch.bfloat16)
    w = torch.randn(30522, 768, dtype=torch.bfloat16)
    assert _picks.key_of(a, w.t()) == "bfloat16 ak bk al 32x32768x1024"
    assert _picks.key_of(a, w.t().contiguous()) == "bfloat16 ak bn un 32x32768x1024"  # 30522 x 2 bytes a row
    assert _picks.key_of(a.t().contiguous().t(), w[:4096].t().contiguous()) == "bfloat16 am bn al 32x4096x1024"
    assert _picks.bucket_key("float16", True, True, True, 1, 16, 16) == "float16 ak bn al 16x16x16"


def test_lookup_takes_a_candidate_and_refuses_anything_else(table):
    _write(table, {"bfloat16 ak bn al 16x4096x4096": "few_rows_mma", "bfloat16 ak bn al 32x4096x4096": "naive"})
    assert _picks.lookup("sm_90", "bfloat16 ak bn al 16x4096x4096") == "few_rows_mma"
    assert _picks.lookup("sm_90", "bfloat16 ak bn al 64x4096x4096") is None
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        assert _picks.lookup("sm_90", "bfloat16 ak bn al 32x4096x4096") is None
    assert any("naive" in str(w.message) for w in rec)


def test_an_unreadable_table_is_no_table(table):
    table.write_text("{not json")
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        assert _picks.lookup("sm_90", "bfloat16 ak bn al 16x4096x4096") is None
    assert any(str(table) in str(w.message) for w in rec)


def test_variant_none_takes_the_measured_pick_first(table, monkeypatch):
    """On Hopper (stood in), 16-bit: the bucket's measured pick, else the rules'; read off, the rules'."""
    monkeypatch.setattr(_matmul, "is_sm90", lambda device: True)
    a = torch.randn(16, 1024, dtype=torch.bfloat16)
    b = torch.randn(1024, 4096, dtype=torch.bfloat16)  # row-major, K too short for few_rows_mma's runs: wgmma_ws
    assert _matmul.pick_variant(a, b) == "wgmma_ws"
    _write(table, {_picks.key_of(a, b): "few_rows_mma"})
    _picks.forget()
    assert _matmul.pick_variant(a, b) == "few_rows_mma"
    assert _matmul.pick_variant(torch.randn(600, 1024, dtype=torch.bfloat16), b) == "wgmma_ws"  # another bucket
    assert _matmul.pick_variant(torch.randn(17, 4096), torch.randn(4096, 4096)) == "pipelined"  # float32: the rules only
    monkeypatch.setenv("CUDA_REF_SHIPPED_PICKS", "0")
    assert _matmul.pick_variant(a, b) == "wgmma_ws"


def test_a_measured_pick_leaves_few_rows_its_rows(table, monkeypatch):
    """One row of a on W.t() stays with few_rows (the bucket of 16 rows was measured at 12); from two
    rows the rules give few_rows_mma, and the bucket's pick stands (at 2-4 rows it led few_rows on
    every weight measured)."""
    monkeypatch.setattr(_matmul, "is_sm90", lambda device: True)
    w = torch.randn(4096, 4096, dtype=torch.bfloat16)
    a = torch.randn(1, 4096, dtype=torch.bfloat16)
    _write(table, {_picks.key_of(a, w.t()): "wgmma_ws"})
    _picks.forget()
    assert _matmul.pick_variant(a, w.t()) == "few_rows"
    assert _matmul.pick_variant(torch.randn(2, 4096, dtype=torch.bfloat16), w.t()) == "wgmma_ws"


def test_a_table_naming_few_rows_is_refused_and_the_rules_decide(table, monkeypatch):
    """few_rows is no candidate (one pass over W each 4 rows): its 1-4 rows are the rules', and past
    them it ran 0.26-0.37x torch where a table had picked it at 12 rows, the rules' few_rows_mma
    0.99-1.04x (H200, 9-16 rows on W.t(), K 1024; bench/results/logs/h200-2026-11-30-picks-few-rows.txt).
    A table's entry naming it is ignored, with a warning."""
    monkeypatch.setattr(_matmul, "is_sm90", lambda device: True)
    w = torch.randn(896, 896, dtype=torch.bfloat16)
    a = torch.randn(13, 896, dtype=torch.bfloat16)
    rule = _matmul.pick_variant(a, w.t())
    _write(table, {_picks.key_of(a, w.t()): "few_rows"})
    _picks.forget()
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        assert rule != "few_rows" and _matmul.pick_variant(a, w.t()) == rule
    assert any("few_rows" in str(m.message) for m in rec)
    assert "few_rows" not in _picks.CANDIDATES


def test_state_says_what_a_run_read(table, monkeypatch):
    """compare's meta "cuda_picks": the table's entries, date and results file; "none"; "off"."""
    assert _picks.state("sm_90") == "none"
    table.write_text(json.dumps({"meta": {"date": "2026-01-02", "results": "r.json"},
                                 "entries": {"bfloat16 ak bn al 16x16x16": "few_rows"}}))
    _picks.forget()
    assert _picks.state("sm_90") == "1 entries, 2026-01-02, checked by r.json"
    monkeypatch.setenv("CUDA_REF_SHIPPED_PICKS", "0")
    assert _picks.state("sm_90") == "off"


def test_every_candidate_has_a_bias_epilogue():
    """The switch's addmm plans on variant=None's pick: a pick without a bias epilogue would send it
    to torch."""
    for variant in _picks.CANDIDATES:
        assert _matmul.BIAS[variant], variant


def test_the_tables_the_package_ships_name_their_device_and_hold_candidates():
    """Each ``cuda_ref/picks_<arch>.json``: a meta naming the device, the grid, the date and the results
    file of the draw that checked it (in a checkout, that file exists); every entry a candidate. The
    wheel carries them."""
    import pathlib

    root = pathlib.Path(_picks.__file__).parent
    for table in sorted(root.glob("picks_*.json")):
        data = json.loads(table.read_text())
        assert {"device", "grid", "date", "results"} <= set(data["meta"]), table
        if (root.parent / "bench" / "results").is_dir():
            assert (root.parent / data["meta"]["results"]).is_file(), data["meta"]["results"]
        assert set(data["entries"].values()) <= set(_picks.CANDIDATES), table
    tomllib = pytest.importorskip("tomllib")  # (Python 3.11+)
    pyproject = tomllib.loads((root.parent / "pyproject.toml").read_text())
    assert "picks_*.json" in pyproject["tool"]["setuptools"]["package-data"]["cuda_ref"]
