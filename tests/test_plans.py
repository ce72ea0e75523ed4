"""Plan once, launch many, and tuning a program can live with (CPU: Triton under the interpreter).

The plan cache must make each distinct metadata once, never cache bad input, and still check
what depends on addresses (aliasing) on every call. Tuned configs live per bucket on disk.
"""

from __future__ import annotations

import sys

import pytest
import torch

import triton_impl
from kernel_common import bucket
from kernel_common.plans import GRAIN, PlanCache, by_tiles, grain, tensor_key
from triton_impl import _matmul, _matmul_configs, _matmul_tma, _tuning


def _counting_cache(monkeypatch, module):
    made = []
    make = module._PLANS._make

    def counting(inputs, variant, out):
        made.append(tuple(t.shape for t in inputs))
        return make(inputs, variant, out)
    cache = PlanCache(counting, extra_key=module._PLANS.extra_key)
    monkeypatch.setattr(module, "_PLANS", cache)
    return made


def test_a_repeat_call_reuses_its_plan(monkeypatch, device):
    made = _counting_cache(monkeypatch, _matmul)
    a, b = torch.rand(8, 5, device=device), torch.rand(5, 3, device=device)
    for _ in range(3):
        torch.testing.assert_close(triton_impl.matmul(a, b), a @ b)
    assert len(made) == 1
    triton_impl.matmul(torch.rand(8, 5, device=device), torch.rand(5, 3, device=device))  # new data, same metadata
    assert len(made) == 1
    triton_impl.matmul(a.t().contiguous().t(), b)  # new strides: a new plan
    triton_impl.matmul(a[:7], b)                   # new shape: a new plan
    triton_impl.matmul(a, b, variant="blocked")    # another variant
    assert len(made) == 4


def test_the_cache_is_bounded(monkeypatch, device):
    made = _counting_cache(monkeypatch, _matmul)
    _matmul._PLANS.max_plans = 3
    for m in range(1, 8):  # seven shapes: the oldest plans go instead of the cache holding all
        triton_impl.matmul(torch.rand(m, 4, device=device), torch.rand(4, 2, device=device))
        assert 1 <= len(_matmul._PLANS) <= 3
    assert len(made) == 7
    triton_impl.matmul(torch.rand(7, 4, device=device), torch.rand(4, 2, device=device))  # the newest stays
    assert len(made) == 7


def test_make_room_drops_the_oldest_keys_only():
    from kernel_common.util import make_room
    d = dict.fromkeys(range(8))
    make_room(d, 9)
    assert list(d) == list(range(8))  # under the bound: nothing goes
    make_room(d, 8)
    assert list(d) == list(range(2, 8))  # at it: the oldest quarter


def test_bad_input_is_never_cached(monkeypatch, device):
    made = _counting_cache(monkeypatch, _matmul)
    a, b = torch.rand(8, 5, device=device), torch.rand(4, 3, device=device)
    for _ in range(2):
        with pytest.raises(ValueError, match=r"b must have shape\[0\] = 5"):
            triton_impl.matmul(a, b)
    assert len(made) == 2 and len(_matmul._PLANS) == 0


def test_a_repeat_call_finds_its_plan_before_the_full_checks(device):
    """``PlanCache._planned`` builds ``get``'s key: a call planned the full way is found by it (a
    key that drifted apart would send every call the slow way, unseen by the plan counts)."""
    a, b = torch.rand(8, 5, device=device), torch.rand(5, 3, device=device)
    triton_impl.matmul(a, b)
    assert _matmul._PLANS._planned((a, b), None, None) is _matmul._PLANS.get((a, b), None, None)
    assert _matmul._PLANS._planned((a, b.t().contiguous().t()), None, None) is None  # a key not planned
    out = torch.empty(8, 3, device=device)
    triton_impl.matmul(a, b, out=out)
    assert _matmul._PLANS._planned((a, b), None, out) is _matmul._PLANS.get((a, b), None, out)
    with torch.no_grad():  # (grad mode is in an out call's key)
        assert _matmul._PLANS._planned((a, b), None, out) is None
    neg = torch._neg_view(out)
    with pytest.raises(ValueError, match="negative bit"):
        triton_impl.matmul(a, b, out=neg)  # an out of the planned metadata whose values are not its memory


def test_a_planned_key_is_not_taken_for_values_its_memory_lacks(device):
    """A repeat call finds its plan before the full checks (``PlanCache._planned``), but an input
    with the negative bit or a zero tensor, of the planned metadata, still gets its values."""
    a = torch.rand(4, 6, device=device) + 0.5
    torch.testing.assert_close(triton_impl.transpose(a), a.t(), rtol=0, atol=0)  # planned
    neg = torch._neg_view(a)
    assert tensor_key(neg) == tensor_key(a)
    torch.testing.assert_close(triton_impl.transpose(neg), -a.t(), rtol=0, atol=0)
    zero = torch._efficientzerotensor((4, 6), device=device)
    torch.testing.assert_close(triton_impl.transpose(zero), torch.zeros(6, 4, device=device), rtol=0, atol=0)


def test_aliasing_is_checked_on_every_call(device):
    """out's metadata is part of the key, its address is not: a planned call with an out that
    now overlaps an input must still be refused."""
    big = torch.rand(64, device=device)
    a = big[:16].view(4, 4)
    out = torch.empty(4, 4, device=device)
    triton_impl.transpose(a, out=out)  # planned with a separate out
    with pytest.raises(ValueError, match="out must not alias the input a"):
        triton_impl.transpose(a, out=big[8:24].view(4, 4))  # same metadata, overlapping memory


def test_key_holds_what_a_plan_depends_on():
    a = torch.rand(4, 6)
    assert tensor_key(a) == tensor_key(torch.rand(4, 6))
    for other in (a.t(), a[:, :5], a.double(), torch.rand(4, 6, requires_grad=True), torch.rand(8)[2:].view(2, 3)):
        assert tensor_key(other) != tensor_key(a)


def test_precision_setting_is_part_of_the_key(monkeypatch, device):
    made = _counting_cache(monkeypatch, _matmul)
    a, b = torch.rand(8, 5, device=device), torch.rand(5, 3, device=device)
    old = torch.get_float32_matmul_precision()
    try:
        triton_impl.matmul(a, b)
        torch.set_float32_matmul_precision("high" if old == "highest" else "highest")
        triton_impl.matmul(a, b)
    finally:
        torch.set_float32_matmul_precision(old)
    assert len(made) == 2


# ---- tuning --------------------------------------------------------------------------------------
def test_buckets_round_each_extent_up_to_a_power_of_two():
    assert bucket(1, 100, 4096) == (16, 128, 4096)
    assert bucket(129, 4097, 16) == (256, 8192, 16)


def test_tuned_configs_persist_for_a_new_process(tuning_file):
    cfg = _matmul.candidates(2)[3]
    _tuning.store(torch.device("cpu"), "grouped bfloat16 tf32 ak bn 128x4096x4096", cfg)
    assert tuning_file.exists()
    _tuning.forget()  # what a new process starts from
    got = _tuning.lookup(torch.device("cpu"), "grouped bfloat16 tf32 ak bn 128x4096x4096")
    assert got.kwargs == cfg.kwargs and (got.num_warps, got.num_stages) == (cfg.num_warps, cfg.num_stages)
    assert _tuning.lookup(torch.device("cpu"), "grouped bfloat16 tf32 ak bn 256x4096x4096") is None


def test_tuning_times_candidates_in_turns_and_keeps_the_preferred_within_the_margin(monkeypatch):
    """Candidates' timings come in rounds, each round in turns from a different first candidate;
    a candidate that fails is skipped; the preferred one stays unless beaten by more than
    TUNE_MARGIN. (Times are stand-ins: the ranking logic runs without a GPU.)"""
    cfgs = _matmul.candidates(2)[:4]
    speed = {str(cfgs[0]): 1.000, str(cfgs[1]): 0.997, str(cfgs[2]): 2.0}  # cfgs[3] fails to launch
    order, current = [], {}

    def run(cfg):
        if str(cfg) not in speed:
            raise RuntimeError("out of resources")
        current["ms"] = speed[str(cfg)]
        order.append(str(cfg))

    monkeypatch.setattr(_tuning.torch.cuda, "synchronize", lambda: None)
    monkeypatch.setattr(_tuning.triton.testing, "do_bench", lambda fn, **kw: (fn(), current["ms"])[1])
    monkeypatch.setattr(_tuning, "back_to_back_ms", lambda fn, calls: (fn(), current["ms"])[1])
    assert _tuning.benchmark(run, cfgs, preferred=cfgs[0]) is cfgs[0]  # 0.3% faster: within the margin
    timed = order[3:]  # after each candidate's first call
    firsts = timed[::2 * 3]  # each round's first do_bench
    assert firsts == [str(cfgs[0]), str(cfgs[1]), str(cfgs[2])]
    speed[str(cfgs[1])] = 0.98
    assert _tuning.benchmark(run, cfgs, preferred=cfgs[0]) is cfgs[1]  # 2% faster: replaces it
    assert _tuning.benchmark(run, cfgs) is cfgs[1]
    assert _tuning.benchmark(run, cfgs[2:], preferred=cfgs[0]) is cfgs[2]  # preferred not a candidate


def test_a_new_m_in_a_tuned_bucket_finds_the_config(tuning_file):
    a, b = torch.empty(100, 4096, dtype=torch.bfloat16), torch.empty(4096, 4096, dtype=torch.bfloat16)
    for variant in ("grouped", "tma_persistent"):
        key = _matmul._tuning_key(variant, 100, 4096, 4096, a, b, "tf32")
        assert key == _matmul._tuning_key(variant, 65, 4096, 4096, a[:65], b, "tf32")  # same bucket (128)
        assert key != _matmul._tuning_key(variant, 129, 4096, 4096, a, b, "tf32")      # the next one
        assert key != _matmul._tuning_key(variant, 100, 4096, 4096, a, b.t().contiguous().t(), "tf32")  # W.t()
    # the TMA variants share their tile configs; grouped's are its own
    assert _matmul._tuning_key("split_k", 100, 4096, 4096, a, b, "tf32") == \
        _matmul._tuning_key("tma_persistent", 100, 4096, 4096, a, b, "tf32") != \
        _matmul._tuning_key("grouped", 100, 4096, 4096, a, b, "tf32")


def test_few_rows_split_slices_a_whole_k_config_of_long_k_only():
    """A 16-bit config of up to 32 rows that keeps K whole (the shipped table's) takes _splits'
    slices where its tiles leave over half the SMs idle and K is 4096 or more; else it is left as
    it is."""
    mc = _matmul_configs
    S = mc.few_rows_split
    whole = mc._with_split(mc._tma_config_of(16, 32, 512, 4, 3, swap=True), 1)
    assert S(whole, 2, 1024, 6144, 132, 2) == 3        # 32 tiles: 3 slices of 2048
    assert S(whole, 16, 1536, 7168, 132, 2) == 2       # 48 tiles: 2 slices of 3584
    assert S(whole, 2, 4096, 3584, 132, 2) == 1        # 128 tiles fill the SMs
    assert S(whole, 17, 1024, 3584, 132, 2) == 1       # K under 4096: left whole
    assert S(whole, 33, 1024, 6144, 132, 2) == 1       # past 32 rows: left whole
    assert S(whole, 2, 1024, 6144, 132, 4) == 1        # float32: left whole
    short = mc._with_split(mc._tma_config_of(16, 64, 128, 4, 6, swap=True), 1)
    assert mc._splits(short, 2, 4096, 1024, 132, 2) == 2
    assert S(short, 2, 4096, 1024, 132, 2) == 1        # K 1024: the second launch costs more
    assert S(short, 4, 1024, 5120, 132, 2) == mc._splits(short, 4, 1024, 5120, 132, 2) == 8  # slices of 640
    assert S(short, 20, 1024, 8192, 132, 2) == mc._splits(short, 20, 1024, 8192, 132, 2) == 4  # 32 tiles
    assert S(mc._with_split(whole, 4), 2, 1024, 6144, 132, 2) == 4  # a split config keeps its split


def test_the_narrow_rules_split_is_the_one_the_split_rule_weighs():
    """At 17-64 rows the narrow rule's K slices (``narrow_config``) are what ``few_rows_split`` (the
    rule that sends a call to ``split_k``, and its count) reads back: no plan splits a config the
    rule kept whole, nor slices it again."""
    mc = _matmul_configs
    for M in (17, 24, 31, 32, 33, 48, 64):
        for N in (64, 128, 256, 896, 1536, 4096, 14336, 32000):
            for K in (1024, 3584, 4096, 7168, 14336):
                cfg = mc.narrow_config(M, N, K, 132)
                assert mc.few_rows_split(cfg, M, N, K, 132, 2) == cfg.kwargs["SPLIT_K"], (M, N, K)
                few = 4 * mc._tiles(mc._narrow_ladder(M)[-1], M, N) <= 132  # (c of few columns)
                assert cfg.kwargs["SPLIT_K"] == 1 or (K >= 4096 and (M <= 32 or few)), (M, N, K)


def test_tma_heuristic_swaps_few_rows_and_splits_k_only_where_sms_would_idle():
    H = _matmul._heuristic_config

    def tile(cfg):
        return cfg.kwargs["BLOCK_M"], cfg.kwargs["BLOCK_N"], cfg.kwargs["SPLIT_K"]
    assert tile(H(4096, 4096, 4096, 2, 132, "tma")) == (128, 256, 1)
    # few rows: c^T tiles, the widest whose count keeps half of 132 SMs busy, K whole
    decode = H(16, 4096, 4096, 2, 132, "tma")  # 16x64 would be 64 tiles: 16x32, 128 of them
    assert decode.kwargs["SWAP_AB"] and tile(decode) == (16, 32, 1)
    assert tile(H(1, 6144, 4096, 2, 132, "tma")) == (16, 64, 1)  # 96 tiles
    assert tile(H(1, 10240, 8192, 2, 132, "tma")) == (16, 128, 1)  # 80 tiles
    assert tile(H(16, 1024, 4096, 2, 132, "tma")) == (16, 32, 4)  # 32 tiles even at 32 wide: split
    # 33-64 rows (16-bit): a's rows in 1, 2 or 4 tiles, the fewest whose tiles fill half the SMs, 128-wide
    # then 64-wide, else 16 x 64; K whole (decision 064)
    assert tile(H(64, 1024, 1024, 2, 132, "tma")) == (16, 64, 1)  # 64 tiles: none fills half
    assert tile(H(64, 2816, 1024, 2, 132, "tma")) == (32, 64, 1)  # 88 tiles
    assert tile(H(42, 9216, 2304, 2, 132, "tma")) == (64, 128, 1)  # 72 tiles of one row tile
    assert tile(H(40, 1024, 6144, 4, 132, "tma"))[0] == 64  # (float32: the ladder's)
    assert tile(H(40, 1024, 6144, 2, 132, "tma")) == (16, 64, 1)  # past 32 rows K whole, 48 tiles
    assert tile(H(40, 512, 6144, 2, 132, "tma")) == (16, 64, 5)  # but where 33 tiles or fewer: a wave
    assert tile(H(40, 512, 2048, 2, 132, "tma")) == (16, 64, 1)  # (K under 4096: whole)
    # 17-32 rows: the same tiles, K in slices up to one wave of items where K is 4096 or more
    assert tile(H(27, 1024, 5120, 2, 132, "tma")) == (16, 64, 4)  # 32 tiles: 4 slices, not the table's 8
    assert tile(H(27, 1536, 7168, 2, 132, "tma")) == (16, 64, 2)  # 48 tiles: 2 (_splits alone: 11)
    assert tile(H(30, 4096, 14336, 2, 132, "tma")) == (16, 64, 1)  # 128 tiles: a wave
    assert tile(H(17, 1024, 1024, 2, 132, "tma")) == (16, 64, 1)  # K 1024: whole
    assert {c.kwargs["BLOCK_M"] for c in _matmul.candidates(2, "tma", 48)} == {16, 32, 64}  # tuning weighs them
    assert {c.kwargs["BLOCK_M"] for c in _matmul.candidates(2, "tma", 24)} == {16, 32}
    assert {c.kwargs["BLOCK_M"] for c in _matmul.candidates(2, "tma", 16)} == {16}  # (1-16 rows: the ladder)
    # past 64 rows, the fitted time model (docs/decisions/036-triton-fitted-tma-model.md) sees the waves:
    assert tile(H(128, 14336, 4096, 2, 132, "tma")) == (128, 128, 1)  # 112 swap-AB tiles
    assert tile(H(343, 5120, 5120, 2, 132, "tma")) == (128, 128, 1)  # 120 tiles, not 60 of 128x256
    assert tile(H(128, 4096, 14336, 2, 132, "tma")) == (128, 128, 4)  # 32 tiles: K in 4 slices
    # a split in one launch (its tile's sum on one SM shorter than a second launch) costs the host
    # about what K whole does: taken where it saves GPU time
    assert H(96, 2048, 8192, 2, 132, "tma").kwargs["SPLIT_K"] > 1
    mc = _matmul_configs
    assert mc._host_seconds(H(96, 2048, 8192, 2, 132, "tma").kwargs, 96, 2048) == mc._HOST_SECONDS[1]
    # 128 x 256 tiles in 4 slices: a 512 KB sum on one SM, longer than a second launch: two launches
    wide = mc._with_split(mc._tma_config_of(128, 256, 64, 8, 3), 4)
    assert not _matmul_tma.split_last_of(wide.kwargs, 76, 6144)
    assert mc._host_seconds(wide.kwargs, 76, 6144) == mc._HOST_SECONDS[2]
    assert tile(H(2048, 11008, 4096, 2, 132, "tma"))[2] == 1  # the partials would outweigh b
    assert tile(H(768, 1024, 32000, 2, 132, "tma")) == (128, 128, 2)  # 48 tiles: 2 K slices in one launch
    assert tile(H(1024, 1024, 32000, 2, 132, "tma")) == (128, 128, 2)  # 64 tiles: 2 K slices
    assert tile(H(1024, 2048, 4096, 2, 132, "tma")) == (128, 128, 1)   # not 256 tiles of 128x64
    assert tile(H(4096, 1024, 2048, 2, 132, "tma")) == (128, 256, 1)   # 128 tiles fill 97% of 132
    assert tile(H(8192, 8192, 8192, 2, 132, "tma")) == (128, 256, 1)
    # 128x256 whole: 4 stages from K = tma_four_stages_k (arch_sm_90.json), 3 below (and wherever K
    # is split: a float32 split tile does not fit beside 4 stages,
    # test_the_fitted_model_times_each_config_it_chooses_from)
    assert H(4096, 4096, 4096, 2, 132, "tma").num_stages == 4
    assert H(4096, 4096, 2048, 2, 132, "tma").num_stages == 4
    assert H(4096, 4096, 1024, 2, 132, "tma").num_stages == 3
    for M, N, K in ((16, 4096, 4096), (128, 4096, 4096), (4096, 4096, 4096), (1024, 1024, 32000)):
        cfg = H(M, N, K, 2, 132, "tma")
        assert _matmul._with_split(cfg, 1) in [_matmul._with_split(c, 1) for c in _matmul.candidates(2, "tma", M)]
        assert M <= 64 or _matmul_tma.shared_bytes(cfg, 2, cfg.kwargs["SPLIT_K"]) <= _matmul_tma.SHARED_BYTES


def test_the_fitted_model_times_each_config_it_chooses_from():
    """Each config past 64 rows has its fitted class; a K split costs its partials; a 128x256 tile
    in 4 stages has no room for a split's float32 tile (the sweep's OutOfResources)."""
    mc = _matmul_configs
    for cfg in mc._FITTED_16BIT:
        kw = cfg.kwargs
        assert (kw["BLOCK_M"], kw["BLOCK_N"], kw["BLOCK_K"], cfg.num_warps, cfg.num_stages, kw["SWAP_AB"]) \
            in mc._FIT_CLASSES
        whole = mc._fitted_seconds(cfg, 4096, 4096, 4096, 132)
        assert 0 < whole < mc._fitted_seconds(mc._with_split(cfg, 2), 4096, 4096, 4096, 132)
    deep = mc._tma_config_of(128, 256, 64, 8, 4, subtile=True, group_m=16)
    assert _matmul_tma.shared_bytes(deep, 2) <= _matmul_tma.SHARED_BYTES < _matmul_tma.shared_bytes(deep, 2, 2)


def test_w_is_read_once_a_row_block_where_the_last_of_two_is_thin_or_w_passes_l2():
    """The fitted model's W reads (decision 036): 128-row tiles whose last row block is at most half
    full read W from HBM once a block, in two blocks whatever W's size, in more where W is past the
    L2 line; anything else reads it once."""
    w_reads = _matmul_configs._w_reads
    line = _matmul_configs._FIT["w_reread_l2_bytes"]
    assert 16384 * 6144 * 2 > line > 4096 * 1024 * 2
    assert w_reads(300, 16384, 6144, 128) == 3  # 128 + 128 + 44: the last block under half full
    assert w_reads(300, 16384, 6144, 256) == 2  # 256 + 44
    assert w_reads(360, 16384, 6144, 128) == 1  # 128 + 128 + 104: the last block over half full
    assert w_reads(300, 4096, 1024, 128) == 1  # three blocks, W under the line: the re-reads come from L2
    assert w_reads(137, 4096, 1024, 128) == 2  # two blocks, the second thin: twice even under the line
    assert w_reads(200, 4096, 1024, 128) == 1  # two blocks, the second over half full
    assert w_reads(300, 16384, 6144, 64) == 1  # 64-row tiles: not in the fit's data
    assert w_reads(100, 16384, 6144, 128) == 1  # one block


def test_a_last_group_of_few_row_blocks_waits_on_w_where_it_runs_after_the_others():
    """Decision 065: 571 rows in 64-row tiles are 8 + 1 groups of row blocks; past L2 the last group
    reads all of W again with 140 tiles of work and waits on that read, most of W's bytes at HBM's
    rate. Groups that run side by side in one wave do not; the pick moves to 128-row tiles."""
    mc = _matmul_configs
    thin = next(c for c in mc._CANDIDATES if (c.bm, c.bn, c.split) == (64, 256, 1) and not c.kw["SWAP_AB"])

    def wait(M, N, K):
        return thin.last_group_wait(M, N, K, 132, mc.cdiv(M, 64) * mc.cdiv(N, 256), K) / (N * K * 2 / thin.peak)
    assert wait(571, 35840, 5120) > 0.6
    assert wait(1000, 35840, 5120) < wait(571, 35840, 5120)  # a last group of 8 - 7 blocks: more work under it
    assert wait(566, 3584, 18944) == 0  # 8 x 14 tiles before the last group: one wave
    wide = next(c for c in mc._CANDIDATES if (c.bm, c.bn, c.group, c.split) == (128, 256, 16, 1))
    # 33 blocks of 128 rows: a last group of one block, 18 tiles whose own time covers their read of W
    assert wide.last_group_wait(4120, 4608, 36864, 132, mc.cdiv(4120, 128) * 18, 36864) == 0
    assert mc._fitted_config(571, 35840, 5120, 132).kwargs["BLOCK_M"] == 128
    assert mc._fitted_config(566, 3584, 18944, 132).kwargs["BLOCK_M"] == 64


def test_a_split_plan_sums_in_one_launch_where_the_rule_says(monkeypatch):
    """_tma_run builds what split_last_of and the fitted model assume: a split whose tile's sum on
    one SM is short runs one launch (SPLIT_LAST, c written by the kernel, the bias in its
    epilogue); 128 x 256 tiles in 4 slices keep the float32 workspace and the second launch."""
    made = []

    class Launch(_matmul_tma.TritonLaunch):
        def __init__(self, fn, grid, meta, *args, **kw):
            made.append((fn.__name__, meta))
            super().__init__(fn, grid, meta, *args, **kw)
    monkeypatch.setattr(_matmul_tma, "TritonLaunch", Launch)
    mc = _matmul_configs
    a = torch.empty(76, 4096, dtype=torch.bfloat16)
    b = torch.empty(6144, 4096, dtype=torch.bfloat16).t()
    for cfg, one in ((mc._with_split(mc._tma_config_of(64, 64, 128, 4, 4), 3), True),
                     (mc._with_split(mc._tma_config_of(128, 256, 64, 8, 3), 4), False)):
        made.clear()
        _matmul_tma._tma_run(cfg, a, b, "tf32", 132, True, bias_strides=(0, 1))
        assert _matmul_tma.split_last_of(cfg.kwargs, 76, 6144) == one
        (name, meta), *rest = made
        assert name == "_tma_persistent_kernel" and meta["SPLIT_LAST"] == one and bool(meta["HAS_BIAS"]) == one
        assert [n for n, _ in rest] == ([] if one else ["_sum_splits_kernel"])
        host = mc._HOST_SECONDS[1 if one else 2]
        assert mc._host_seconds(cfg.kwargs, 76, 6144) == host


def test_the_fitted_choice_breaks_a_host_time_tie_on_gpu_time():
    """A small product: the whole configs whose fitted time is under a call's host time tie on it;
    the pick is the one of least fitted time, not the first of them listed."""
    mc = _matmul_configs
    M, N, K = 288, 896, 896  # (a multiple of 16: the rows it chooses at, by_tiles)
    cfg = mc._fitted_config(M, N, K, 132)
    under = [t for t in (mc._fitted_seconds(c, M, N, K, 132, 1) for c in mc._FITTED_16BIT) if t < mc._HOST_SECONDS[0]]
    assert len(under) > 1 and under[0] > min(under)  # the tie this checks
    assert cfg.kwargs["SPLIT_K"] == 1 and mc._fitted_seconds(cfg, M, N, K, 132) == min(under)


def test_the_fitted_choice_weighs_splits_only_where_they_could_win():
    """``_fitted_config`` skips the K splits where a config with K whole takes less than a split's
    call host time; its pick is the brute-force least (time or host time, then fitted time) of every
    candidate, small products (a mixture's experts) and large ones alike."""
    mc = _matmul_configs
    shapes = [(M, 1408, 1024) for M in range(65, 700, 37)] + [(M, 14336, 4096) for M in (65, 143, 333, 1200, 5000)] + \
        [(128, 4096, 4096), (768, 1024, 32000), (4097, 4096, 129), (200, 151936, 896)]
    shapes = [(grain(M), N, grain(K)) for M, N, K in shapes]  # (it chooses at its tiles' rows: by_tiles)
    for M, N, K in shapes:
        keys = []
        for c in mc._CANDIDATES:
            if c.split == 1 or mc.cdiv(K, c.bk) // 4 >= c.split:
                gpu, host = c.seconds(M, N, K, 132)
                keys.append(((max(gpu, host), gpu), c))
        best = min(keys, key=lambda kc: kc[0])[1]
        got = mc._fitted_config(M, N, K, 132)
        assert (got.kwargs, got.num_warps, got.num_stages) == \
            (mc._with_split(best.cfg, best.split).kwargs, best.cfg.num_warps, best.cfg.num_stages), (M, N, K)
        assert mc._fitted_seconds(got, M, N, K, 132) == best.seconds(M, N, K, 132)[0]


def test_per_plan_functions_remember_within_one_plan_only(monkeypatch, device):
    """A ``per_plan`` function computes once a plan for the same arguments (tensors told apart by
    identity), and afresh outside a plan and in the next one."""
    from kernel_common import plans
    runs = []

    @plans.per_plan
    def derived(t, k):
        runs.append((id(t), k))
        return k * 2

    def make(inputs, variant, out):
        a, b = inputs
        assert derived(a, 3) == derived(a, 3) == 6 and derived(b, 3) == 6 and derived(a, 4) == 8
        derived(torch.empty(3), 5)
        derived(torch.empty(3), 5)  # another temporary (the first one's id is not free for it)
        return _matmul._PLANS._make(inputs, variant, out)
    cache = PlanCache(make, extra_key=_matmul._PLANS.extra_key)
    a = torch.randn(8, 16, device=device)
    b = torch.randn(16, 8, device=device)
    cache.get((a, b), None, None)
    assert runs[:3] == [(id(a), 3), (id(b), 3), (id(a), 4)] and len(runs) == 5
    cache.get((a[:4], b), None, None)  # a new key: a new plan, computed again
    assert len(runs) == 10
    derived(a, 3), derived(a, 3)  # outside a plan: every call computes
    assert len(runs) == 12


_SCALE = 1  # a global of this module, which ``_choice`` reads
_RUNS = []


@by_tiles
def _choice(M, N, K):
    _RUNS.append((M, N, K))
    return M * _SCALE, K


def test_a_choice_of_tiles_is_made_at_its_tiles_rows_and_kept_across_plans(monkeypatch):
    """``by_tiles``: past 64, rows and K are taken up to a multiple of 16, so a choice is the same
    for every row count of a 16-row group; inside plans it is computed once for the group and kept
    for later plans, until a global of its module is another object (a patched constant)."""
    assert [grain(n) for n in (1, 63, 64, 65, 80, 81, 1000)] == [1, 63, 64, 80, 80, 96, 1008]
    cache = PlanCache(lambda inputs, variant, out: _choice(*inputs))
    _RUNS.clear()
    assert {cache._made((M, 7, 100), None, None) for M in range(65, 81)} == {(80, 112)}  # 16 plans
    assert _RUNS == [(80, 7, 112)]
    assert cache._made((81, 7, 100), None, None) == (96, 112) and len(_RUNS) == 2
    assert cache._made((3, 7, 50), None, None) == (3, 50) and len(_RUNS) == 3  # (few rows: as they are)
    assert _choice(70, 7, 100) == (80, 112) and len(_RUNS) == 4  # outside a plan: afresh
    monkeypatch.setattr(sys.modules[__name__], "_SCALE", 2)
    assert cache._made((70, 7, 100), None, None) == (160, 112) and len(_RUNS) == 5


def test_a_row_count_takes_its_groups_choice_made_at_the_groups_first(monkeypatch, device):
    """variant=None past 64 rows: a group of 16 row counts (65-80, 81-96, ...) is chosen for once,
    on views of its first row count, whichever row count comes first; a new row count in a seen
    group asks nothing (``row_group_choice``); 64 rows or fewer are chosen for as they are; the
    choices go with the plans (a tuned config empties both). K past 64 in groups too, where no
    stride holds it."""
    asked = []
    pick = _matmul.pick_variant
    monkeypatch.setattr(_matmul, "pick_variant",
                        lambda a, b, out=None, biased=False: asked.append(a.shape[0]) or pick(a, b, out, biased))
    monkeypatch.setattr(_matmul, "_PLANS", PlanCache(_matmul._plan, extra_key=_matmul._PLANS.extra_key))
    b = torch.randn(24, 8, device=device)
    for M in (70, 66, 80, 81, 96, 64, 63):
        a = torch.randn(M, 24, device=device)
        torch.testing.assert_close(triton_impl.matmul(a, b).double(), a.double() @ b.double(), atol=1e-4, rtol=1e-4)
    assert asked == [65, 81, 64, 63] and len(_matmul._PLANS.choices) == 2
    _matmul._PLANS.clear()
    assert not _matmul._PLANS.choices
    asked.clear()  # K likewise, where no stride holds it (a weight's gradient x.t() @ dy, K the tokens)
    monkeypatch.setattr(_matmul, "pick_variant",
                        lambda a, b, out=None, biased=False: asked.append(tuple(a.shape)) or pick(a, b, out, biased))
    for K in (100, 90, 97, 112):
        a, b = torch.randn(K, 70, device=device).t(), torch.randn(K, 8, device=device)
        torch.testing.assert_close(triton_impl.matmul(a, b).double(), a.double() @ b.double(), atol=1e-4, rtol=1e-4)
    assert asked == [(65, 97), (65, 81)]


def test_the_tiles_a_choice_counts_are_the_same_at_a_row_count_and_at_its_grain():
    """What ``by_tiles`` rests on: each tile the choices weigh has rows and a K step that are
    multiples of GRAIN, so that rows and K taken up to it count the same tiles and k-slices (the
    fitted Triton configs; CUDA wgmma_ws's units, pairs and consumers, whose row thresholds must
    then be multiples of it too, and wgmma_swap's blocks of a's rows)."""
    from cuda_ref import _matmul_swap as sw, _matmul_wgmma as w
    assert all(c.bm % GRAIN == 0 and c.bk % GRAIN == 0 for c in _matmul_configs._CANDIDATES)
    assert all((128 // size) % GRAIN == 0 for size in (1, 2, 4))  # (wgmma_ws's K step: 128 bytes)
    for M in range(65, 20000):
        g = grain(M)
        assert (w.ws_cluster(M), w.ws_consumers(M), w.ws_consumers(M, True)) == \
            (w.ws_cluster(g), w.ws_consumers(g), w.ws_consumers(g, True)), M
        assert all(w._units(M, 4096, mm, bn) == w._units(g, 4096, mm, bn) for mm in (False, True)
                   for bn in w.WS_STAGES), M
        assert sw.swap_rows(M) == sw.swap_rows(g) and all(  # wgmma_swap's blocks of a's rows
            sw.swap_block_rows(M, n) == sw.swap_block_rows(g, n) for n in range(1, 8)), M


def test_heuristic_unaligned_16bit_grouped():
    # rows no 16-byte load reads: 32x256 tiles for a row-major B, 64x128x128 for a K-major one
    # (W.t()), where they fill the SMs; otherwise the list's rule
    H = _matmul._heuristic_config

    def tile(cfg):
        return cfg.kwargs["BLOCK_M"], cfg.kwargs["BLOCK_N"], cfg.kwargs["BLOCK_K"], cfg.num_warps
    assert tile(H(4097, 4095, 129, 2, 132, "grouped", True, False)) == (32, 256, 32, 8)
    assert tile(H(4097, 4095, 129, 2, 132, "grouped", True, True)) == (64, 128, 128, 4)
    assert tile(H(495, 5333, 71, 2, 132, "grouped", True, True)) == (64, 128, 128, 4)
    assert tile(H(4097, 4095, 129, 2, 132, "grouped")) == (128, 256, 64, 8)  # aligned rows
    assert tile(H(4097, 4095, 129, 2, 132, "grouped", False, True)) == (128, 256, 64, 8)
    assert tile(H(4097, 4095, 129, 4, 132, "grouped", True)) == tile(H(4097, 4095, 129, 4, 132, "grouped"))
    small = H(300, 301, 129, 2, 132, "grouped", True)  # 9 tiles of 128x128: the most tiles instead
    assert _matmul_configs._tiles(small, 300, 301) > 9


def test_heuristic_fills_the_gpu_before_growing_tiles():
    big = _matmul._heuristic_config(4096, 4096, 4096, 2, 132)
    assert (big.kwargs["BLOCK_M"], big.kwargs["BLOCK_N"]) == (128, 256)  # 512 tiles: the largest
    small = _matmul._heuristic_config(1024, 1024, 1024, 2, 132)
    tiles = (1024 // small.kwargs["BLOCK_M"]) * (1024 // small.kwargs["BLOCK_N"])
    assert tiles >= 132  # not 32 tiles of 128 x 256 on 132 SMs
    decode = _matmul._heuristic_config(16, 4096, 4096, 2, 132)
    assert decode.kwargs["BLOCK_M"] == 16  # 16 rows: no tile of 128 rows, 112 of them padding
    for cfg in (big, small, decode):
        assert cfg in _matmul.candidates(2)


def test_tf32_from_512_rows_takes_the_swept_tiles():
    """TF32 TMA: 128x256 (w8) where 1024+ rows fill the SMs with it, else 128x128 (w4, 4 stages)
    where it keeps half of them busy; below 512 rows, and exact float32, the list's first fit."""
    H = _matmul._heuristic_config

    def tile(cfg):
        kw = cfg.kwargs
        return kw["BLOCK_M"], kw["BLOCK_N"], cfg.num_warps, cfg.num_stages, kw["SPLIT_K"]

    assert tile(H(9420, 2304, 9216, 4, 132, "tma", tf32=True)) == (128, 256, 8, 3, 1)
    assert tile(H(3114, 576, 7168, 4, 132, "tma", tf32=True)) == (128, 128, 4, 4, 1)  # 75 wide tiles
    assert tile(H(918, 256000, 3584, 4, 132, "tma", tf32=True)) == (128, 128, 4, 4, 1)
    for shape in ((256, 4096, 4096), (9420, 2304, 9216)):
        assert H(*shape, 4, 132, "tma", tf32=shape[0] < 512).kwargs == H(*shape, 4, 132, "tma").kwargs


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a GPU: the interpreter compiles nothing")
@pytest.mark.parametrize("variant", triton_impl.variants("matmul"))
def test_a_repeat_triton_call_skips_the_jit(monkeypatch, variant):
    """After its first call a plan launches the compiled kernels directly, tensor descriptors
    included (a launch that never learned its device went through the JIT every call: 44 us of
    host time against 15, bench/results/logs/h200-2026-11-22-s4-probes.txt)."""
    from bench import registry
    from triton_impl import _launch
    dtype = torch.bfloat16 if registry.get("matmul", "triton", variant).takes("bfloat16") else torch.float32
    if variant in ("fma_ws", "few_rows_ws") and not _matmul.fma_ws_runs(torch.device("cuda")):
        pytest.skip(f"{variant} needs a Hopper GPU and a triton with Gluon")
    # (M, N, K); fma_ws also where it shares tiles out (stream-K: a workspace and a second launch),
    # few_rows where it splits K (the same) and at one row (the GEMV's kernels)
    shapes = [(16, 512, 256)] + ([(512, 512, 4096)] if variant == "fma_ws" else []) + \
        ([(2, 512, 4096), (1, 4096, 4096)] if variant == "few_rows" else [])
    jit = _launch.TritonLaunch._jit
    for M, N, K in shapes:
        a = torch.randn(M, K, device="cuda", dtype=dtype)
        b = torch.randn(N, K, device="cuda", dtype=dtype).t()
        triton_impl.matmul(a, b, variant=variant)
        jitted = []
        with monkeypatch.context() as m:
            m.setattr(_launch.TritonLaunch, "_jit", lambda self, args: (jitted.append(self.fn), jit(self, args)))
            triton_impl.matmul(a, b, variant=variant)
        assert not jitted, (M, N, K, jitted)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a GPU: the interpreter compiles nothing")
def test_a_new_shape_launches_the_kernel_another_plan_compiled(monkeypatch):
    """A plan of a row count not seen before (a mixture's experts, every step) launches the kernel
    an earlier plan compiled for the same config and specialization without Triton's JIT, and
    computes its own product; a row count Triton specializes apart (a multiple of 16) goes
    through the JIT once."""
    W = torch.randn(1408, 1024, device="cuda", dtype=torch.bfloat16)

    def config(M):
        a = torch.empty(M, 1024, device="cuda", dtype=torch.bfloat16)
        return str(_matmul.config_for(_matmul.pick_variant(a, W.t()), a, W.t(), "tf32"))
    rows = [M for M in range(193, 320) if config(M) == config(201)]  # the first plan's config
    odd = [M for M in rows if M % 16 and M != 201][:2]
    sixteen = [M for M in rows if M % 16 == 0][:2]
    assert len(odd) == 2 and len(sixteen) == 2, rows
    from triton_impl import _launch
    monkeypatch.setattr(_launch, "_SHARED", {})  # (as a new process: no plan, no shared kernel yet)
    monkeypatch.setattr(_matmul, "_PLANS", PlanCache(_matmul._PLANS._make, extra_key=_matmul._PLANS.extra_key))
    triton_impl.matmul(torch.randn(201, 1024, device="cuda", dtype=torch.bfloat16), W.t())
    jit_runs = []
    run = _matmul_tma._tma_persistent_kernel.run
    monkeypatch.setattr(_matmul_tma._tma_persistent_kernel, "run", lambda *a, **kw: (jit_runs.append(1), run(*a, **kw))[1])
    for M, through_jit in ((odd[0], False), (odd[1], False), (sixteen[0], True), (sixteen[1], False)):
        a = torch.randn(M, 1024, device="cuda", dtype=torch.bfloat16)
        jit_runs.clear()
        got = triton_impl.matmul(a, W.t())
        assert bool(jit_runs) == through_jit, (M, rows)
        torch.testing.assert_close(got.float(), a.float() @ W.t().float(), rtol=2e-2, atol=0.5)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a GPU: the interpreter compiles nothing")
def test_cached_descriptor_encodings_follow_the_addresses(monkeypatch):
    """A TMA launch keeps descriptor encodings by address (its plan fixes shapes and strides): each call on new
    data (new addresses, or freed ones taken again) reads that data, and calls at the same
    addresses encode no descriptor."""
    from triton_impl import _launch
    w = torch.randn(128, 256, device="cuda", dtype=torch.bfloat16)
    if _matmul.pick_variant(torch.empty(64, 256, device="cuda", dtype=torch.bfloat16), w.t()) != "tma_persistent":
        pytest.skip("variant=None takes no TMA kernel on this GPU")
    for _ in range(6):
        a = torch.randn(64, 256, device="cuda", dtype=torch.bfloat16)
        out = torch.full((64, 128), float("nan"), device="cuda", dtype=torch.bfloat16)
        triton_impl.matmul(a, w.t(), out=out)
        torch.testing.assert_close(out.double(), a.double() @ w.double().t(), rtol=2e-2, atol=2e-2)
        del a, out
    built = []
    build = _launch.DescriptorSpec.build
    monkeypatch.setattr(_launch.DescriptorSpec, "build", lambda self, base: (built.append(self), build(self, base))[1])
    a, out = torch.randn(64, 256, device="cuda", dtype=torch.bfloat16), torch.empty(64, 128, device="cuda",
                                                                                     dtype=torch.bfloat16)
    triton_impl.matmul(a, w.t(), out=out)
    first = len(built)
    for _ in range(3):
        triton_impl.matmul(a, w.t(), out=out)
    assert len(built) == first <= 3


def test_a_cache_holds_its_callers_tables_only_while_they_live():
    """``PlanCache.table``: clearing the plans empties every live caller's table, and a table whose
    caller is gone leaves the cache (a program that makes switch after switch over the same plans
    kept every table before)."""
    import gc

    from kernel_common.switch import Switch
    cache = PlanCache(lambda inputs, variant, out: None)
    kept = cache.table()
    kept["key"] = "call"
    switches = [Switch(f"s{i}", cache, None, dtypes=()) for i in range(3)]
    assert len(cache._tables) == 4
    del switches
    gc.collect()
    assert len(cache._tables) == 1
    cache.clear()
    assert not kept


def test_a_bound_launch_keeps_each_calls_arguments(monkeypatch):
    """``TritonLaunch.bind`` once compiled (a stand-in launcher here): a call at the addresses and
    stream of an earlier one reuses its whole argument list, encoding nothing; new addresses or
    another stream make a new list (each descriptor encoded once per address); pointers go as
    ints; while a launch hook is set, calls take the JIT's path, which calls it."""
    from triton_impl import _launch

    class Built:  # a built descriptor: the encoder reads its base's address
        def __init__(self, base):
            self.base = base

    class Spec:  # a descriptor spec whose "encoding" names the address it was encoded for
        def build(self, base):
            builds.append(base)
            return Built(base)
    encoded, launched, jitted, stream, hooked, builds = [], [], [], [11], [False], []
    monkeypatch.setattr(_launch, "current_stream", lambda device: stream[0])
    monkeypatch.setattr(_launch, "single_gpu", lambda: True)
    monkeypatch.setattr(_launch, "_hooked", lambda: hooked[0])
    # (its constexprs given: on a GPU machine the kernel lists them and the launch passes them last)
    meta = {"SPLIT_K": 2, "BLOCK": 64, "HAS_BIAS": False}
    launch = _launch.TritonLaunch(_matmul_tma._sum_splits_kernel, (4,), meta, descriptors=(Spec(), Spec()))
    monkeypatch.setattr(launch, "_jit", lambda args: jitted.append(args))
    launch.compiled = (lambda *args: launched.append(args), ("head",),
                       ({0: "m0", 1: "m1"}, lambda built, meta: encoded.append(built.base.data_ptr()) or
                        [(built.base.data_ptr(), meta)]), 0)
    run = launch.bind(7, 8)
    a, b, c, a2 = (torch.ones(4) for _ in range(4))

    def args(x, s):
        return (4, 1, 1, s, "head", (x.data_ptr(), "m0"), (b.data_ptr(), "m1"), c.data_ptr(), 7, 8,
                *launch.constants)
    run(a, b, c)
    run(a, b, c)
    assert launched == [args(a, 11)] * 2 and encoded == [a.data_ptr(), b.data_ptr()]
    run(a2, b, c)  # a new address: its descriptor encoded, b's kept
    assert launched[-1] == args(a2, 11) and encoded[2:] == [a2.data_ptr()]
    assert len(builds) == 2  # a descriptor built once an argument, its base swapped at a new address
    assert all(t.base is None for t in launch._templates)  # (no tensor held after encoding)
    stream[0] = 12  # another stream: a new list, nothing encoded
    run(a, b, c)
    assert launched[-1] == args(a, 12) and len(encoded) == 3
    hooked[0] = True
    run(a, b, c)
    assert len(launched) == 4 and len(jitted) == 1


def test_a_launch_finds_its_device_in_tensors_and_descriptors():
    """A launch is compiled for direct calls only once it knows its device: from a tensor or a
    tensor descriptor's base (it once looked only at tensors, and TMA calls went through the JIT)."""
    from triton.tools.tensor_descriptor import TensorDescriptor

    from triton_impl._launch import device_of
    t = torch.ones(4, 8)
    assert device_of((3, t)) == t.device
    assert device_of((TensorDescriptor.from_tensor(t, [4, 8]), 3)) == t.device
    assert device_of((1, 2)) is None


def test_plan_once_runs_another_algorithms_plan_without_looking_it_up_again(monkeypatch, device):
    """A matmul plan's transposed copy (``PlanOnce``): the transpose's plan is looked up on the first
    call only; each call returns a fresh A^T, or writes the ``out`` it is given."""
    from kernel_common.plans import PlanOnce
    from triton_impl import _transpose
    gets = []
    real_get = _transpose._PLANS.get
    monkeypatch.setattr(_transpose._PLANS, "get", lambda *args: gets.append(1) or real_get(*args))
    transposed = PlanOnce(_transpose._PLANS)
    for _ in range(3):
        a = torch.randn(37, 21, device=device)
        got = transposed(a)
        assert torch.equal(got, a.t()) and got.is_contiguous()
    out = torch.full((21, 37), float("nan"), device=device)
    assert transposed(a, out=out) is out and torch.equal(out, a.t())
    assert len(gets) == 1


def test_cuda_plans_share_a_kernel_of_one_function_and_geometry(monkeypatch):
    """``cuda_ref.loader.kernel``: one Kernel for a function on one geometry, whichever plan asks
    (a new row count inside the same tiles builds none); another geometry, or the function a new
    loader state compiled, gets its own."""
    from types import SimpleNamespace

    from cuda_ref import loader
    fns = {"f": object()}
    built = []

    def stand_in(fn, grid, block, arg_types, *, device, shared_mem=0):
        built.append(grid)
        return SimpleNamespace(fn=fn, grid=grid)
    monkeypatch.setattr(loader, "get_function", lambda filename, names, name, device: fns[name])
    monkeypatch.setattr(loader, "Kernel", stand_in)
    monkeypatch.setattr(loader, "_kernels", {})
    launch = loader.Launch("f", (132,), (384,), "QQ")
    first = loader.kernel("x.cu", ("f",), launch, 0)
    assert loader.kernel("x.cu", ("f",), loader.Launch("f", (132,), (384,), "QQ"), 0) is first
    assert loader.kernel("x.cu", ("f",), loader.Launch("f", (66,), (384,), "QQ"), 0) is not first
    assert loader.kernel("x.cu", ("f",), launch, 1) is not first  # another device
    fns["f"] = object()  # a new loader state's function
    assert loader.kernel("x.cu", ("f",), launch, 0).fn is fns["f"]
    assert len(built) == 4


def test_a_plan_for_a_new_result_allocates_nothing():
    """``output`` hands a plan made for a new result a stand-in without storage: the shape and
    dtype the result will have, an aligned address, no memory."""
    from kernel_common.validate import output
    a = torch.rand(6, 5, dtype=torch.float16)
    stand_in = output(None, (5, 6), {"a": a}, need_cuda=False)
    assert stand_in.is_meta and stand_in.shape == (5, 6) and stand_in.dtype == torch.float16
    assert stand_in.data_ptr() % 16 == 0
    given = torch.empty(5, 6, dtype=torch.float16)
    assert output(given, (5, 6), {"a": a}, need_cuda=False) is given


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU (none found)")
@pytest.mark.parametrize("op", ["transpose", "matmul"])
def test_a_first_call_allocates_its_result_once(op):
    """A call of a new shape allocates no more than a repeat of it (its result, and any workspace
    a call takes): no second result at plan time (the CUDA planners took one and dropped it, and
    the allocator held a new block for each new shape)."""
    import cuda_ref

    def call(n):
        a = torch.randn(n, n + 8, device="cuda", dtype=torch.bfloat16)
        if op == "transpose":
            return lambda: cuda_ref.transpose(a)
        b = torch.randn(n + 8, n + 24, device="cuda", dtype=torch.bfloat16)
        return lambda: cuda_ref.matmul(a, b)

    def allocated(run):
        torch.cuda.synchronize()
        before = torch.cuda.memory_stats()["allocated_bytes.all.allocated"]
        y = run()
        return torch.cuda.memory_stats()["allocated_bytes.all.allocated"] - before, y.nbytes
    run = call(1032)
    run()  # the kernels loaded, the stream's hand-over buffers as large as the call needs
    cuda_ref.plans(op).clear()
    (first, size), (repeat, _) = allocated(run), allocated(run)  # a new plan, then the same plan again
    assert first < repeat + size // 2, (first, repeat, size)
