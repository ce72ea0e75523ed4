"""The tuning file is data from outside: ``_tuning.lookup`` checks each entry against the schema of
its family's configs and refuses a bad one (one warning, then the heuristic config runs), and
``_tuning.store`` merges under a lock, so processes tuning at once keep each other's entries.
CPU only: lookup and store are called directly on a file in tmp_path."""

from __future__ import annotations

import json
import multiprocessing
import os
import re
import time
import warnings

import pytest
import torch

from triton_impl import _matmul, _tuning

CPU = torch.device("cpu")
NAME = "cpu"  # _tuning.device_key(CPU): the device table's key
GROUPED_KEY = "grouped float32 ieee ak bn 64x32x128"
TMA_KEY = "tma float32 ieee ak bn 64x32x128"


def _entry(cfg, **changes) -> dict:
    """``cfg`` as the file keeps it, with ``changes`` (a value of None drops the key)."""
    entry = dict(cfg.kwargs, num_warps=cfg.num_warps, num_stages=cfg.num_stages, version=_tuning.TUNING_VERSION)
    entry.update(changes)
    return {k: v for k, v in entry.items() if v is not None}


def _grouped():
    return _matmul.candidates(4, "grouped")[0]


def _tma():
    return _matmul._with_split(_matmul.candidates(4, "tma")[0], 2)


def _lookup_warned(tuning_file, table, key):
    """Write ``table`` as the file, look ``key`` up as a new process would: (config, our warnings)."""
    tuning_file.write_text(json.dumps(table))
    _tuning.forget()
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        got = _tuning.lookup(CPU, key)
    return got, [str(w.message) for w in rec if w.category is UserWarning and str(tuning_file) in str(w.message)]


def _assert_refused(tuning_file, table, key, *words):
    got, warned = _lookup_warned(tuning_file, table, key)
    assert got is None
    assert len(warned) == 1, warned
    for word in words:
        assert word in warned[0], (word, warned[0])
    return warned[0]


# ---- values the kernels cannot run correctly --------------------------------------------------------
@pytest.mark.parametrize("group_m", [-1, 0])
@pytest.mark.parametrize("key,cfg", [(GROUPED_KEY, _grouped), (TMA_KEY, _tma)], ids=["grouped", "tma"])
def test_group_m_below_one_is_refused(tuning_file, group_m, key, cfg):
    """GROUP_M = -1 wrote before c, 0 left most of c unwritten (a float32 64x32x96 product on a GPU)."""
    _assert_refused(tuning_file, {NAME: {key: _entry(cfg(), GROUP_M=group_m)}}, key, key, "GROUP_M")


@pytest.mark.parametrize("split_k", [0, -1, 1024])
def test_split_k_out_of_range_is_refused(tuning_file, split_k):
    """SPLIT_K <= 0 left c unwritten; 1024 compiled for 502 s (the sum unrolls over SPLIT_K)."""
    _assert_refused(tuning_file, {NAME: {TMA_KEY: _entry(_tma(), SPLIT_K=split_k)}}, TMA_KEY, TMA_KEY, "SPLIT_K")


# ---- malformed entries and tables: a warning, no exception ------------------------------------------
@pytest.mark.parametrize("key,changes,word", [
    (GROUPED_KEY, dict(BLOCK_K=None), "missing"),
    (GROUPED_KEY, dict(num_warps=None), "missing"),
    (TMA_KEY, dict(SPLIT_K=None), "missing"),
    (GROUPED_KEY, dict(SPLIT_K=2), "unexpected"),  # a TMA kwarg in a grouped entry
    (GROUPED_KEY, dict(BLOCK_M="64"), "BLOCK_M"),
    (GROUPED_KEY, dict(BLOCK_N=64.0), "BLOCK_N"),
    (GROUPED_KEY, dict(BLOCK_K=[32]), "BLOCK_K"),
    (GROUPED_KEY, dict(BLOCK_M=True), "BLOCK_M"),
    (GROUPED_KEY, dict(BLOCK_M=48), "power of two"),
    (GROUPED_KEY, dict(BLOCK_K=8), "BLOCK_K"),
    (GROUPED_KEY, dict(BLOCK_N=1024), "BLOCK_N"),
    (GROUPED_KEY, dict(GROUP_M=1000), "GROUP_M"),
    (GROUPED_KEY, dict(num_warps=3), "num_warps"),
    (GROUPED_KEY, dict(num_stages=0), "num_stages"),
    (GROUPED_KEY, dict(num_stages="4"), "num_stages"),
    (TMA_KEY, dict(SWAP_AB="yes"), "SWAP_AB"),
    (TMA_KEY, dict(EPILOGUE_SUBTILE=2), "EPILOGUE_SUBTILE"),
    (TMA_KEY, dict(SPLIT_K=2.0), "SPLIT_K"),
])
def test_malformed_entry_is_refused_with_a_warning(tuning_file, key, changes, word):
    cfg = _grouped() if key == GROUPED_KEY else _tma()
    _assert_refused(tuning_file, {NAME: {key: _entry(cfg, **changes)}}, key, key, word)


@pytest.mark.parametrize("entry", [[64, 32, 32, 8, 4, 4], "64x32x32", 64, True], ids=["list", "str", "int", "bool"])
def test_an_entry_that_is_no_object_is_refused(tuning_file, entry):
    _assert_refused(tuning_file, {NAME: {GROUPED_KEY: entry}}, GROUPED_KEY, GROUPED_KEY)


@pytest.mark.parametrize("table,word", [
    ({NAME: [{"BLOCK_M": 64}]}, "device"),
    ({NAME: "grouped"}, "device"),
    ([{NAME: {}}], "top level"),
    (["x", 1], "top level"),
], ids=["device-list", "device-str", "top-list", "top-list2"])
def test_a_table_that_is_no_object_is_refused(tuning_file, table, word):
    _assert_refused(tuning_file, table, GROUPED_KEY, word)


def test_a_file_that_is_not_json_is_ignored_with_a_warning(tuning_file):
    tuning_file.write_text('{"cpu": {"grouped float32')
    _tuning.forget()
    with pytest.warns(UserWarning, match="not readable as JSON"):
        assert _tuning.lookup(CPU, GROUPED_KEY) is None


# ---- versions ------------------------------------------------------------------------------------------
def test_an_entry_without_the_version_is_ignored(tuning_file):
    """Entries written before the version field: the kernels may have read them otherwise."""
    _assert_refused(tuning_file, {NAME: {GROUPED_KEY: _entry(_grouped(), version=None)}}, GROUPED_KEY,
                    GROUPED_KEY, "version")


@pytest.mark.parametrize("version", [lambda v: v + 1, lambda v: v - 1, lambda v: str(v), lambda v: float(v)],
                         ids=["newer", "older", "str", "float"])
def test_an_entry_of_another_version_is_ignored(tuning_file, version):
    entry = _entry(_grouped(), version=version(_tuning.TUNING_VERSION))
    _assert_refused(tuning_file, {NAME: {GROUPED_KEY: entry}}, GROUPED_KEY, GROUPED_KEY, "version")


# ---- what passes ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("key,cfg", [(GROUPED_KEY, _grouped), (TMA_KEY, _tma)], ids=["grouped", "tma"])
def test_a_valid_entry_is_returned_as_the_config(tuning_file, key, cfg):
    """An entry as store writes it (the version beside the config's values) comes back as the same
    triton.Config: the version is no kwarg of the kernel's. 0/1 flags come back as the bools the
    heuristic's configs hold."""
    cfg = cfg()
    changes = dict(SWAP_AB=1, EPILOGUE_SUBTILE=0) if key == TMA_KEY else {}
    got, warned = _lookup_warned(tuning_file, {NAME: {key: _entry(cfg, **changes)}, "other": []}, key)
    assert warned == []
    want = dict(cfg.kwargs, SWAP_AB=True, EPILOGUE_SUBTILE=False) if key == TMA_KEY else cfg.kwargs
    assert got.kwargs == want and all(type(got.kwargs[k]) is type(v) for k, v in want.items())
    assert (got.num_warps, got.num_stages) == (cfg.num_warps, cfg.num_stages)
    assert _tuning.lookup(CPU, key) is got  # the verdict is kept


def test_every_candidate_config_passes_the_schema():
    """What tuning can store (each family's candidates, TMA ones with any split _splits makes) is
    what lookup accepts: a kwarg or a value the candidates gain fails here, not on users' files."""
    for element_size in (1, 2, 4):
        for family in ("grouped", "tma"):
            for M in (1, 16, 64, 128, 256, 4096):
                for cfg in _matmul.candidates(element_size, family, M):
                    splits = (1, 16) if family == "tma" else (None,)
                    for s in splits:
                        c = cfg if s is None else _matmul._with_split(cfg, s)
                        key = f"{family} x ieee ak bn {M}x16x16"
                        assert _tuning._problem(key, _entry(c)) is None, (key, c)
    for cfg in _matmul._UNALIGNED_16BIT.values():
        assert _tuning._problem(GROUPED_KEY, _entry(cfg)) is None


def test_store_refuses_a_config_lookup_would_refuse(tuning_file):
    with pytest.raises(ValueError, match="GROUP_M"):
        _tuning.store(CPU, GROUPED_KEY, _matmul._config_of(64, 32, 32, 4, 4, group_m=0))
    with pytest.raises(ValueError, match="SPLIT_K"):
        _tuning.store(CPU, TMA_KEY, _matmul._with_split(_tma(), 0))
    assert not tuning_file.exists()


# ---- one warning ---------------------------------------------------------------------------------------
def test_a_bad_entry_warns_once_not_on_every_lookup(tuning_file):
    """Once per entry per process: later lookups return the kept verdict, and a re-read of the same
    file (forget) warns no more."""
    bad = {NAME: {GROUPED_KEY: _entry(_grouped(), GROUP_M=0), TMA_KEY: _entry(_tma(), SPLIT_K=0)}}
    tuning_file.write_text(json.dumps(bad))
    _tuning.forget()
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        for _ in range(5):
            assert _tuning.lookup(CPU, GROUPED_KEY) is None
            assert _tuning.lookup(CPU, TMA_KEY) is None
        _tuning.forget()
        assert _tuning.lookup(CPU, GROUPED_KEY) is None
    ours = [str(w.message) for w in rec if w.category is UserWarning and str(tuning_file) in str(w.message)]
    assert len(ours) == 2 and sum(GROUPED_KEY in m for m in ours) == 1 and sum(TMA_KEY in m for m in ours) == 1


# ---- merging stores ------------------------------------------------------------------------------------
def test_store_keeps_entries_another_process_wrote_since_this_one_read(tuning_file):
    cfg = _grouped()
    _tuning.store(CPU, "grouped float32 ieee ak bn 16x16x16", cfg)
    table = json.loads(tuning_file.read_text())  # another process adds an entry behind this one's back
    table[NAME]["grouped float32 ieee ak bn 32x32x32"] = _entry(cfg)
    table["NVIDIA H100 80GB HBM3"] = {GROUPED_KEY: _entry(cfg)}
    tuning_file.write_text(json.dumps(table))
    _tuning.store(CPU, "grouped float32 ieee ak bn 64x64x64", cfg)
    on_disk = json.loads(tuning_file.read_text())
    assert sorted(on_disk[NAME]) == ["grouped float32 ieee ak bn 16x16x16", "grouped float32 ieee ak bn 32x32x32",
                                     "grouped float32 ieee ak bn 64x64x64"]
    assert list(on_disk["NVIDIA H100 80GB HBM3"]) == [GROUPED_KEY]
    # the table in memory is the merged one
    assert _tuning.lookup(CPU, "grouped float32 ieee ak bn 32x32x32").kwargs == cfg.kwargs


STORES = 20


def _store_many(file: str, worker: int, barrier) -> None:
    """A tuner: STORES entries of its own, stored one after another."""
    os.environ["TRITON_IMPL_TUNING_FILE"] = file
    _tuning.forget()
    cfg = _matmul.candidates(4, "grouped")[0]
    barrier.wait()
    for i in range(STORES):
        _tuning.store(CPU, f"grouped float32 ieee ak bn {16 << worker}x16x{16 << i}", cfg)
        time.sleep(0.002)  # (a tuner's stores are seconds apart: the two processes' stores interleave)


def test_two_processes_storing_at_once_keep_every_entry(tuning_file):
    """Before: each process rewrote the table it had read at its first store, and the last writer's
    won. Now each store re-reads the file under a lock."""
    ctx = multiprocessing.get_context("spawn")
    barrier = ctx.Barrier(2)
    procs = [ctx.Process(target=_store_many, args=(str(tuning_file), w, barrier)) for w in range(2)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout=300)
    assert [p.exitcode for p in procs] == [0, 0]
    on_disk = json.loads(tuning_file.read_text())
    assert len(on_disk[NAME]) == 2 * STORES
    _tuning.forget()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert all(_tuning.lookup(CPU, key) is not None for key in on_disk[NAME])


# ---- end to end ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("variant,bad", [
    ("grouped", dict(BLOCK_M=16, BLOCK_N=16, BLOCK_K=16, GROUP_M=0)),
    ("grouped", dict(BLOCK_M="16")),
    ("split_k", dict(SPLIT_K=0)),
])
def test_a_bad_entry_for_a_calls_bucket_runs_the_heuristic_config(tuning_file, monkeypatch, device, variant, bad):
    """A bad entry written for the bucket a small float32 product falls in (its key from
    ``_matmul._tuning_key``, its device ``_tuning.device_key``), then the product run.

    Under the interpreter ``_family_config`` returns its one small config before any lookup, so the
    config is taken from ``_matmul.config_for`` with ``interpreting`` patched off in ``_matmul``
    (on a GPU it is off already): that runs the real path, ``_family_config`` -> ``_tuning.lookup``
    -> the schema -> the heuristic fallback. The config it gives is then run by the kernel
    (``_make_run``; under the interpreter with interpreting restored), and its product compared
    with float64. A valid entry for the same bucket is taken as it is (the path does read the
    file). (GROUP_M = -1 is not among the bad entries: where nothing refuses it, the kernel stores
    outside ``out``.)"""
    if variant == "split_k" and device == "cuda" and torch.cuda.get_device_capability()[0] < 9:
        pytest.skip("split_k needs a Hopper GPU (TMA)")
    M, N, K = 64, 32, 96
    a, b = torch.randn(M, K, device=device), torch.randn(K, N, device=device)
    key = _matmul._tuning_key(variant, M, N, K, a, b, "ieee")
    name = _tuning.device_key(a.device)
    good = _tma() if variant == "split_k" else _matmul._config_of(16, 16, 16, 4, 1, group_m=4)
    with monkeypatch.context() as m:
        m.setattr(_matmul, "interpreting", lambda: False)
        heuristic = _matmul.config_for(variant, a, b, "ieee")  # (no file yet)
        tuning_file.write_text(json.dumps({name: {key: _entry(good, **bad)}}))
        _tuning.forget()
        with pytest.warns(UserWarning, match=re.escape(key)):
            cfg = _matmul.config_for(variant, a, b, "ieee")
        assert str(cfg) == str(heuristic)
        tuning_file.write_text(json.dumps({name: {key: _entry(good)}}))
        _tuning.forget()
        assert _matmul._family_config(variant, a, b, "ieee").kwargs == good.kwargs
    out = torch.full((M, N), float("nan"), device=device)
    _matmul._make_run(variant, cfg, a, b, "ieee")(a, b, out)
    torch.testing.assert_close(out.double(), a.double() @ b.double(), rtol=1e-5, atol=1e-4)


# ---- the selection's measured constants, per architecture ---------------------------------------
def test_the_selection_reads_its_measured_constants_from_the_arch_data():
    """Each constant of the selection comes from triton_impl/arch_sm_90.json with the results file
    it was measured in (which exists) and its decision record, and the modules use those values."""
    import pathlib

    from triton_impl import _arch, _gemv, _matmul_configs, _matmul_fp32, _matmul_fp8, _matmul_tma, _transpose
    root = pathlib.Path(__file__).resolve().parents[1]
    data = json.loads((root / "triton_impl" / "arch_sm_90.json").read_text())
    entries = {k: v for k, v in data.items() if isinstance(v, dict)}
    assert set(entries) == {"tile_rate", "sm_flops", "split_seconds", "split_bytes_per_s", "small_product",
                            "sk_min_slices", "tma_model", "call_host_s", "split_last_sm_bytes_per_s", "few_rows_split",
                            "fp8_few_rows", "tma_four_stages_k", "words_band", "words_min_rows",
                            "tf32_row_few_rows_max_m", "gemv_last_wave_min_fill",
                            "gemv_whole_waves", "gemv_long_k", "gemv_phased_last", "narrow_ladder_rows",
                            "narrow_split_rows", "short_k", "narrow_n", "narrow_n_wide"}
    for name, entry in entries.items():
        assert (root / entry["results"]).is_file(), (name, entry["results"])
        assert (root / entry["decision"]).is_file(), (name, entry["decision"])
    assert _matmul.SMALL_PRODUCT == entries["small_product"]["value"]
    assert _matmul_fp32.SK_MIN_SLICES == entries["sk_min_slices"]["value"]
    assert _matmul_configs._SM_FLOPS == entries["sm_flops"]["value"]
    assert _matmul_configs._TILE_RATE[128, 256, 8] == 1.0 and len(_matmul_configs._TILE_RATE) == 7
    assert _matmul_configs._FIT == entries["tma_model"]["value"]
    assert _matmul_configs._HOST_SECONDS == entries["call_host_s"]["value"]
    assert _matmul_tma._SUM_SM_BYTES_PER_S == entries["split_last_sm_bytes_per_s"]["value"]
    assert _matmul_configs._FEW_ROWS_SPLIT == entries["few_rows_split"]["value"]
    assert _matmul_configs._NARROW_ROWS == entries["narrow_ladder_rows"]["value"]
    assert _matmul_configs._NARROW_SPLIT_ROWS == entries["narrow_split_rows"]["value"]
    assert [_matmul_configs.SHORT_K_MAX, list(_matmul_configs._SHORT_K_TILE)] == entries["short_k"]["value"]
    assert [_matmul_configs.NARROW_N_MAX, _matmul_configs.NARROW_N_ANY_PICK_M, list(_matmul_configs._NARROW_N_TILE)] \
        == entries["narrow_n"]["value"]
    assert [_matmul_configs.WIDE_N_MAX, _matmul_configs.WIDE_N_MIN_K, list(_matmul_configs._WIDE_N_TALL_TILE)] \
        == entries["narrow_n_wide"]["value"]
    assert _matmul_fp8.FEW_ROWS == entries["fp8_few_rows"]["value"]
    assert _matmul_configs._FOUR_STAGES_K == entries["tma_four_stages_k"]["value"]
    assert _transpose.WORDS_BAND == entries["words_band"]["value"]
    assert _transpose.WORDS_MIN_ROWS == entries["words_min_rows"]["value"]
    assert _matmul_fp32.TF32_ROW_FEW_ROWS_MAX_M == entries["tf32_row_few_rows_max_m"]["value"]
    assert _gemv.LAST_WAVE_MIN_FILL == entries["gemv_last_wave_min_fill"]["value"]
    assert _gemv.WHOLE_WAVES == entries["gemv_whole_waves"]["value"]
    assert _gemv.LONG_K == entries["gemv_long_k"]["value"]
    assert [_gemv.PHASED_LAST_MIN_M, _gemv.PHASED_LAST_MIN_K, _gemv.PHASED_LAST_MAX_FILL] == \
        entries["gemv_phased_last"]["value"]
    assert _arch.load() == _arch.SM_90


def test_another_architecture_is_told_once(monkeypatch):
    """A GPU the numbers were not measured on: one warning per architecture, naming the fallback."""
    from triton_impl import _arch
    monkeypatch.setattr(_arch.ARCH, "warned", set())
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda device=None: (8, 0))
    with pytest.warns(UserWarning, match="measured on sm_90 only; on this sm_80 GPU"):
        _arch.check("cuda:0")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _arch.check("cuda:0")  # once
        _arch.check("cpu")  # the interpreter's device: not a GPU
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda device=None: (9, 0))
    monkeypatch.setattr(_arch.ARCH, "warned", set())
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _arch.check("cuda:0")


def test_cuda_float32_tile_model_picks_near_the_fastest_on_its_sweep():
    """Exact float32 pipelined's shipped model (arch_sm_90.json: pipelined_model), applied to the
    sweep it was fitted on (every tile at 1-16 runs forced, H200, 132 SMs): its pick is a plan the
    sweep timed, and runs at 0.95 of the fastest forced plan's speed or more at the geomean, 0.6 at
    the worst (decision 059: 0.972 / 0.967 row-major / W.t(), worst 0.89 / 0.64)."""
    import math
    import pathlib

    from cuda_ref import _matmul_float32 as f32
    root = pathlib.Path(__file__).resolve().parents[1] / "bench" / "results" / "logs"
    names = {cfg.name: name for name, cfg in f32.PIPELINED.items()}
    for layout in ("row", "wt"):
        rows = json.loads((root / f"h200-2026-12-02-f32-tiles-s150-{layout}.json").read_text())["rows"]
        ratios = []
        for r in rows:
            M, N, K = r["shape"]
            cfg, runs = f32.pipelined_choice(M, N, K, 132)
            timed = {k: v for k, v in r["ms"].items() if k != "torch" and not k.startswith("default")}
            ratios.append(min(timed.values()) / timed[f"{names[cfg.name]} S{runs}"])
        geomean = math.exp(sum(map(math.log, ratios)) / len(ratios))
        assert len(ratios) == 45 and geomean >= 0.95 and min(ratios) >= 0.6, (layout, geomean, min(ratios))


def test_cuda_float32_wt_model_picks_near_the_fastest_on_its_sweep():
    """matmul_pipelined_wt's shipped model (pipelined_wt_model) on the sweeps it was fitted on (every
    tile at 1-16 runs forced on W.t() read where it lies, H200): its pick of the plans timed runs at 0.93 of the fastest
    forced plan's speed or more at the geomean (decision 060: 0.972 / 0.948 / 0.985 at 5-16 /
    17-400 / 401+ rows); and a transposed copy of W (the forced plans' "wt-copy" twins, timed in the
    same run) is where reads_w_in_place says, or within 10% of it."""
    import math
    import pathlib

    from cuda_ref import _matmul_float32 as f32
    from cuda_ref._matmul import SMALL_PRODUCT
    root = pathlib.Path(__file__).resolve().parents[1] / "bench" / "results" / "logs"
    for sweep in ("s160-wt-5-16-kb", "s160-wt-17-400-kb", "s161-wt-401-16384-kb"):
        ratios, wrong_side = [], []
        for r in json.loads((root / f"h200-2026-12-02-f32-sweep-{sweep}.json").read_text())["rows"]:
            M, N, K = r["shape"]
            timed = {k: v for k, v in r["ms"].items() if k != "torch" and not k.startswith("default")}
            in_place = {k: v for k, v in timed.items() if not k.endswith("wt-copy")}
            # (the model's fastest of the plans timed: seed 161 timed 1, 2, 4 and 8 runs only)
            pick = min(in_place, key=lambda k: f32.pipelined_us(k.split()[0], M, N, K, 132, int(k.split()[1][1:]), True))
            ratios.append(min(in_place.values()) / in_place[pick])
            copied = [v for k, v in timed.items() if k.endswith("wt-copy")]
            if copied and M * N * K > SMALL_PRODUCT:
                faster = min(in_place.values()) < min(copied)
                if faster != f32.reads_w_in_place(M, N, K, 132):
                    wrong_side.append(min(min(in_place.values()), min(copied)) / max(min(in_place.values()), min(copied)))
        geomean = math.exp(sum(map(math.log, ratios)) / len(ratios))
        assert geomean >= 0.93 and all(x >= 0.9 for x in wrong_side), (sweep, geomean, wrong_side)


def test_cuda_ref_selection_reads_its_measured_thresholds_from_the_arch_data():
    """Each measured threshold of cuda_ref's matmul selection comes from cuda_ref/arch_sm_90.json with
    the results file it was measured in and its decision record (both exist), and the modules' names
    hold those values."""
    import pathlib

    from cuda_ref import _arch as cuda_arch, _matmul as cuda_matmul, _matmul_few_rows as cuda_few_rows
    from cuda_ref import _gemv as cuda_gemv, _matmul_fp8 as cuda_fp8, _matmul_swap as cuda_swap, _matmul_wgmma as cuda_wgmma
    from cuda_ref import _matmul_float32 as cuda_float32, _matmul_short_k as cuda_short_k, _transpose as cuda_transpose
    root = pathlib.Path(__file__).resolve().parents[1]
    data = json.loads((root / "cuda_ref" / "arch_sm_90.json").read_text())
    entries = {k: v for k, v in data.items() if isinstance(v, dict)}
    modules = {"small_product": cuda_matmul, "pipelined_model": cuda_float32, "pipelined_wt_model": cuda_float32, "transposed_copy_us_per_melem": cuda_float32, "strided_copy_us_per_melem": cuda_float32, "few_rows_max_m": cuda_few_rows, "few_rows_mma_max_m": cuda_few_rows, "few_rows_mma_min_m": cuda_few_rows,
               "few_rows_mma_max_n": cuda_few_rows, "few_rows_mma_any_max_m": cuda_few_rows,
               "gemv_rows_per_warp_max_k": cuda_gemv, "gemv_masked_wide_min_row_bytes": cuda_gemv, "gemv_rows_per_warp_min_fill": cuda_gemv, "gemv_phased_min_row_bytes": cuda_gemv,
               "gemv_split_min_k": cuda_gemv, "gemv_split_wide_piece": cuda_gemv, "gemv_last_wave_min_fill": cuda_gemv,
               "gemv_whole_waves": cuda_gemv, "gemv_split_tail_min_k": cuda_gemv,
               "few_rows_mma_min_k": cuda_few_rows, "few_rows_mma_min_k_row": cuda_few_rows,
               "few_rows_mma_runs_fill_kmajor": cuda_few_rows, "few_rows_mma_runs_fill_row": cuda_few_rows,
               "few_rows_row_max_m": cuda_few_rows, "few_rows_exact_max_m": cuda_few_rows, "few_rows_exact_row_max_m": cuda_few_rows, "few_rows_wide_min_fill": cuda_few_rows, "ws_pairs_min_m": cuda_wgmma, "ws_pairs_even": cuda_wgmma, "ws_pairs_odd_min_m": cuda_wgmma,
               "ws_one_consumer_max_m": cuda_wgmma,
               "ws_split_min_slices": cuda_wgmma, "ws_hand_over_max_splits": cuda_wgmma,
               "ws_sk_max_fill": cuda_wgmma, "ws_sk_min_slices": cuda_wgmma, "ws_sk_min_m": cuda_wgmma, "ws_sk_wave_gain": cuda_wgmma, "ws_sk_full_gain": cuda_wgmma,
               "ws_slice_us": cuda_wgmma, "ws_model_gbs": cuda_wgmma, "ws_hand_over_us": cuda_wgmma,
               "ws_reduce_us": cuda_wgmma, "ws_narrow_slice_share": cuda_wgmma, "ws_narrow_max_fill": cuda_wgmma, "ws_mid_slice_share": cuda_wgmma, "ws_sk_slowdown": cuda_wgmma,
               "swap_max_nr": cuda_swap, "swap_min_k": cuda_swap, "swap_one_block_min_k": cuda_swap, "swap_split_host_us": cuda_swap,
               "swap_half_fill_max_m": cuda_swap, "swap_one_run_slack": cuda_swap, "swap_narrow_blocks": cuda_swap,
               "swap_cluster_sum_us": cuda_swap, "swap_cluster_row_us": cuda_swap, "swap_cluster_fill": cuda_swap,
               "swap_max_pad": cuda_swap, "swap_max_waves": cuda_swap, "swap_max_blocks": cuda_swap,
               "swap_fixed_us": cuda_swap, "swap_row_slice_us": cuda_swap, "swap_reduce_us": cuda_swap,
               "swap_mid_model": cuda_swap,
               "swap_one_wave_max_blocks": cuda_swap, "ws_call_fixed_us": cuda_swap,
               "ws_call_scale": cuda_swap, "ws_alone_call_scale": cuda_swap, "swap_vs_ws_slack": cuda_swap, "swap_vs_ws_max_m": cuda_swap, "swap_copied_b_max_m": cuda_swap,
               "swap_sum_gbs": cuda_swap, "swap_short_k_max_waves": cuda_swap, "short_k_min_c_at_16": cuda_short_k, "fp8_wide_column_time": cuda_fp8, "fp8_few_rows": cuda_fp8,
               "tall_band": cuda_transpose}
    assert set(entries) == set(modules)
    for name, entry in entries.items():
        assert (root / entry["results"]).is_file(), (name, entry["results"])
        assert re.fullmatch(r"docs/decisions/\d{3}-[\w.-]+\.md", entry["decision"]), (name, entry["decision"])
        assert (root / entry["decision"]).is_file(), (name, entry["decision"])
        assert getattr(modules[name], name.upper()) == entry["value"], name
    assert cuda_matmul.SMALL_PRODUCT == 1 << 27 and cuda_few_rows.FEW_ROWS_MMA_MAX_N == 64 * 256
    assert cuda_arch.load() == cuda_arch.SM_90


def test_cuda_ref_tells_another_architecture_once(monkeypatch):
    """cuda_ref on a GPU its thresholds were not measured on: one warning per architecture, naming the
    fallback's file; a device that is not a GPU returns before torch.cuda is asked."""
    from cuda_ref import _arch as cuda_arch
    monkeypatch.setattr(cuda_arch.ARCH, "warned", set())
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda device=None: (8, 0))
    with pytest.warns(UserWarning, match=r"^cuda_ref: .*measured on sm_90 only; on this sm_80 GPU .*"
                                         r"\(cuda_ref/arch_sm_90\.json\)$"):
        cuda_arch.check("cuda:0")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        cuda_arch.check("cuda:0")  # once
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda device=None: (8, 9))
    with pytest.warns(UserWarning, match="on this sm_89 GPU"):
        cuda_arch.check("cuda:0")  # another architecture: told as well

    def asked(device=None):
        raise AssertionError("torch.cuda asked about a device that is not a GPU")

    monkeypatch.setattr(torch.cuda, "get_device_capability", asked)
    cuda_arch.check("cpu")
    cuda_arch.check(torch.device("meta"))
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda device=None: (9, 0))
    monkeypatch.setattr(cuda_arch.ARCH, "warned", set())
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        cuda_arch.check("cuda:0")


@pytest.fixture
def shipped(tmp_path, monkeypatch, tuning_file):
    """A shipped table of the test's own, served to CPU lookups as if the CPU were its architecture."""
    target = tmp_path / "tuned_sm_test.json"
    monkeypatch.setenv("TRITON_IMPL_SHIPPED_TUNING", "1")
    monkeypatch.setattr(_tuning, "arch_of", lambda device: "sm_test")
    monkeypatch.setattr(_tuning, "shipped_path", lambda arch: tmp_path / f"tuned_{arch}.json")
    return target


def test_a_fresh_install_runs_the_shipped_config_and_a_programs_own_comes_first(shipped, tuning_file):
    cfg, own = _grouped(), _matmul.candidates(4, "grouped")[1]
    shipped.write_text(json.dumps({"meta": {"device": "NVIDIA H200"}, "entries": {GROUPED_KEY: _entry(cfg)}}))
    assert str(_tuning.lookup(CPU, GROUPED_KEY)) == str(cfg)  # no file of the program's: the shipped one
    assert _tuning.lookup(CPU, TMA_KEY) is None  # a bucket the table lacks: the heuristic
    _tuning.store(CPU, GROUPED_KEY, own)
    assert str(_tuning.lookup(CPU, GROUPED_KEY)) == str(own)


def test_the_shipped_table_is_left_unread_when_asked(shipped, monkeypatch):
    shipped.write_text(json.dumps({"meta": {}, "entries": {GROUPED_KEY: _entry(_grouped())}}))
    monkeypatch.setenv("TRITON_IMPL_SHIPPED_TUNING", "0")
    assert _tuning.lookup(CPU, GROUPED_KEY) is None


def test_a_runs_meta_says_which_tables_its_calls_read(shipped, monkeypatch):
    """``state`` (compare's meta "triton_tables"): the program's own entries and the shipped table,
    named by its date and the results file that checked it; "none" where absent, "off" when unread."""
    assert _tuning.state(CPU) == {"own_file": "none", "shipped": "none"}
    shipped.write_text(json.dumps({"meta": {"date": "2026-11-28", "results": "bench/results/x.json"},
                                   "entries": {GROUPED_KEY: _entry(_grouped())}}))
    _tuning.store(CPU, TMA_KEY, _tma())
    assert _tuning.state(CPU) == {"own_file": "1 entries",
                                  "shipped": "1 entries, 2026-11-28, checked by bench/results/x.json"}
    monkeypatch.setenv("TRITON_IMPL_SHIPPED_TUNING", "0")
    assert _tuning.state(CPU)["shipped"] == "off"


def test_a_bad_shipped_entry_is_refused_like_a_users(shipped):
    shipped.write_text(json.dumps({"meta": {}, "entries": {GROUPED_KEY: _entry(_grouped(), GROUP_M=0)}}))
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        assert _tuning.lookup(CPU, GROUPED_KEY) is None
    assert any(str(shipped) in str(w.message) and "GROUP_M" in str(w.message) for w in rec)


def test_the_tables_the_package_ships_name_their_device_and_pass_the_schema():
    """Each ``triton_impl/tuned_<arch>.json``: a meta naming the device, triton, the grid and the
    date it was tuned, and the results file of the draw that checked it (in a checkout, that file
    exists); every entry a config lookup would run. The wheel carries them."""
    import pathlib

    root = pathlib.Path(_tuning.__file__).parent
    for table in sorted(root.glob("tuned_*.json")):
        data = json.loads(table.read_text())
        assert {"device", "triton", "grid", "date", "results"} <= set(data["meta"]), table
        if (root.parent / "bench" / "results").is_dir():
            assert (root.parent / data["meta"]["results"]).is_file(), data["meta"]["results"]
        for key, entry in data["entries"].items():
            assert _tuning._problem(key, entry) is None, (table.name, key)
    tomllib = pytest.importorskip("tomllib")  # (Python 3.11+)
    pyproject = tomllib.loads((root.parent / "pyproject.toml").read_text())
    assert "tuned_*.json" in pyproject["tool"]["setuptools"]["package-data"]["triton_impl"]
