"""The workloads shapes are drawn from (bench/workloads.py): the public models' layers, the draws'
ranges and their seeds, and the summary of a draw's ratios."""

from __future__ import annotations

import math

from bench import workloads
from bench.workloads import MAX_ELEMENTS, MODELS, draw_gemv, draw_lora, draw_matmul, draw_transpose, summarize


def test_the_layers_cover_fifteen_families_and_the_lm_heads():
    families = {m.source.split("/")[1].split("-")[0].lower().rstrip("0123456789.") for m in MODELS}
    assert len(families) >= 9 and len(MODELS) >= 15, families
    heads = {n for n, k in workloads.layer_shapes()}
    assert {32000, 50257, 128256, 151936, 256000} <= heads
    shapes = set(workloads.layer_shapes())
    # Llama 3 8B's MLP, its fused q/k/v as serving engines run it, GPT-2's c_attn, DeepSeek-V3's q_a
    assert {(14336, 4096), (4096, 14336), (6144, 4096), (2304, 768), (1536, 7168)} <= shapes
    assert all(n > 0 and k > 0 for n, k in shapes)


def test_a_model_lists_its_weights_once_each():
    llama = next(m for m in MODELS if m.source.endswith("Meta-Llama-3-8B"))
    assert llama.layers() == ((4096, 4096), (1024, 4096), (6144, 4096), (14336, 4096), (28672, 4096),
                              (4096, 14336), (128256, 4096))
    gpt2 = next(m for m in MODELS if m.source.endswith("/gpt2"))
    assert gpt2.layers() == ((2304, 768), (768, 768), (3072, 768), (768, 3072), (50257, 768))


def test_draws_repeat_by_seed_and_differ_between_seeds():
    for draw in (draw_matmul, draw_gemv, draw_transpose, draw_lora):
        assert draw(50, 7) == draw(50, 7)
        assert draw(50, 7) != draw(50, 8)
        assert len(draw(50, 7)) == 50


def test_matmul_draws_span_one_to_16384_rows_odd_ones_included():
    shapes = draw_matmul(2000, 1)
    ms = [m for m, _, _ in shapes]
    assert min(ms) == 1 and max(ms) > 8192 and max(ms) <= 16384
    assert sum(m % 2 for m in ms) > 500
    assert all(m * k <= MAX_ELEMENTS and m * n <= MAX_ELEMENTS for m, n, k in shapes)
    layers = set(workloads.layer_shapes())
    assert all((n, k) in layers for _, n, k in shapes)
    # log-uniform: about as many below 128 rows as above
    assert 0.35 < sum(m < 128 for m in ms) / len(ms) < 0.65


def test_lora_draws_a_rank_as_k_or_as_n_beside_a_layer():
    """An adapter's down projection (M, r, K) and up projection (M, N, r) on the models' layers."""
    shapes = draw_lora(2000, 3)
    layers = set(workloads.layer_shapes())
    ks, ns = {k for _, _, k in shapes}, {n for _, n, _ in shapes}
    down = [(m, n, k) for m, n, k in shapes if n in workloads.LORA_RANKS and any(k == lk for _, lk in layers)]
    up = [(m, n, k) for m, n, k in shapes if k in workloads.LORA_RANKS and any(n == ln for ln, _ in layers)]
    assert len(down) + len(up) >= len(shapes) and 0.4 < len(down) / len(shapes) < 0.6
    assert set(workloads.LORA_RANKS) <= ks and set(workloads.LORA_RANKS) <= ns
    ms = [m for m, _, _ in shapes]
    assert min(ms) == 1 and max(ms) > 8192 and all(m <= 16384 for m in ms)
    assert all(m * k <= MAX_ELEMENTS and m * n <= MAX_ELEMENTS for m, n, k in shapes)


def test_transpose_and_gemv_draws_take_their_odd_cases():
    t = draw_transpose(1000, 2)
    assert any(len(s) == 3 for s in t), "batches"
    assert any(len(s) == 2 and min(s) <= 16 and max(s) >= 1 << 16 for s in t), "a narrow side"
    assert all(math.prod(s) <= MAX_ELEMENTS for s in t)
    g = draw_gemv(1000, 2)
    assert any(m >= 1 << 14 and k <= 1024 for m, k in g), "tall M over a short K"
    layers = set(workloads.layer_shapes())  # (a weight is as large as its model has it)
    assert all(m * k <= MAX_ELEMENTS or (m, k) in layers for m, k in g)


def test_summarize_gives_the_geometric_mean_the_10th_percentile_and_the_worst():
    s = summarize([2.0, 0.5, 1.0, 1.0, 4.0, 0.25, 1.0, 1.0, 1.0, 1.0])
    assert s["n"] == 10 and math.isclose(s["geomean"], 1.0) and s["p10"] == 0.25 and s["worst"] == 0.25
    assert summarize([]) == {} and summarize([float("nan"), 0.0]) == {}
    assert summarize([3.0])["p10"] == 3.0


def test_compare_takes_the_dense_draw_by_seed():
    from bench.compare import CPU_DRAW_EXTENT, case_shapes
    from bench.specs import SPECS
    for alg in ("matmul", "gemv", "transpose"):
        spec = SPECS[alg]
        assert case_shapes(spec, size_set="dense", gpu=True, seed=5) == list(workloads.DRAWS[alg](workloads.DRAW_COUNT, 5))
        small = case_shapes(spec, size_set="dense", gpu=False, seed=5)
        assert small and all(max(s) <= CPU_DRAW_EXTENT for s in small)
    assert case_shapes(SPECS["matmul"], size_set="lora", gpu=True, seed=5) == list(draw_lora(workloads.DRAW_COUNT, 5))
    assert all(s[0] >= 65 for s in case_shapes(SPECS["addmm"], size_set="lora", seed=5, rows=(65, 16384)))
    import pytest
    with pytest.raises(ValueError, match="dense, lora"):
        case_shapes(SPECS["matmul"], size_set="nope")
    with pytest.raises(ValueError, match="decode, dense, got .lora."):
        case_shapes(SPECS["gemv"], size_set="lora")


def test_the_summary_names_each_groups_worst_shape():
    from bench.results_io import Record
    from bench.tables import format_summary
    recs = [Record("matmul", "triton", "grouped", "impl", "bfloat16", list(shape), "cuda", layout="wt",
                   default=True, x_vs_ref=x, x_loop_vs_ref=x * 2)
            for shape, x in (((1, 2, 3), 1.0), ((4, 5, 6), 0.5), ((7, 8, 9), 2.0))]
    recs.append(Record("matmul", "triton", "blocked", "impl", "bfloat16", [1, 2, 3], "cuda", layout="wt",
                       default=False, x_vs_ref=0.01))  # not the default: not summarized
    text = format_summary(recs)
    assert "matmul triton bfloat16 wt (3 shapes): flushed 1.00 / 0.50 / 0.50 (4x5x6); loop 2.00 / 1.00 / 1.00 (4x5x6)" in text
    assert "vs" not in text  # (one torch row a case: no second line)
    assert format_summary([]) == ""


def test_the_summary_has_a_line_against_each_further_torch_row():
    """grouped_mm's cases time F.grouped_mm (the reference) and a loop of torch.mm: the default
    against the loop on its own line, from the medians."""
    from bench.results_io import Record
    from bench.tables import summary_lines
    recs = []
    for shape, ours, loop in (((4, 64, 32, 16), 1.0, 3.0), ((8, 64, 32, 16), 2.0, 2.0)):
        recs += [Record("grouped_mm", "triton", "tma_grouped", "impl", "bfloat16", list(shape), "cuda", layout="row",
                        default=True, x_vs_ref=1.5, median_ms=ours, loop_ms=ours),
                 Record("grouped_mm", "torch", "grouped_mm", "reference", "bfloat16", list(shape), "cuda", layout="row",
                        median_ms=1.5 * ours, loop_ms=1.5 * ours),
                 Record("grouped_mm", "torch", "mm_loop", "reference", "bfloat16", list(shape), "cuda", layout="row",
                        median_ms=loop, loop_ms=None)]
    lines = summary_lines(recs)
    assert lines[1] == "grouped_mm triton bfloat16 row vs mm_loop (2 shapes): flushed 1.73 / 1.00 / 1.00 (8x64x32x16)"


def test_the_summary_breaks_a_matmul_down_by_rows_of_a():
    """A matmul's cases in more than one band of M get a line of the flushed geomean / p10 by band
    (ROW_BANDS); a run of one band, or of another algorithm, does not."""
    from bench.results_io import Record
    from bench.tables import summary_lines

    def rec(alg, M, x):
        return Record(alg, "cuda", "wgmma_ws", "impl", "bfloat16", [M, 64, 32], "cuda", layout="wt", default=True,
                      x_vs_ref=x, median_ms=1.0, loop_ms=1.0)
    lines = summary_lines([rec("matmul", 8, 1.0), rec("matmul", 16, 0.25), rec("matmul", 3000, 0.5)])
    assert lines[1] == "matmul cuda bfloat16 wt by rows of a, flushed geomean / p10 (shapes): 1-16 0.50 / 0.25 (2); 2048+ 0.50 / 0.50 (1)"
    assert len(summary_lines([rec("matmul", 8, 1.0), rec("matmul", 9, 0.5)])) == 1
    assert len(summary_lines([rec("gemv", 8, 1.0), rec("gemv", 3000, 0.5)])) == 1


def test_the_summary_breaks_a_run_down_by_the_variant_the_default_ran():
    """Where variant=None ran more than one variant, a line of each one's flushed geomean / worst,
    the most cases first; a run of one variant has none."""
    from bench.results_io import Record
    from bench.tables import summary_lines

    def rec(variant, M, x):
        return Record("matmul", "cuda", variant, "impl", "bfloat16", [M, 64, 32], "cuda", layout="wt", default=True,
                      x_vs_ref=x, median_ms=1.0, loop_ms=1.0)
    lines = summary_lines([rec("few_rows", 4, 0.5), rec("wgmma_ws", 8, 1.0), rec("wgmma_ws", 12, 0.25)])
    assert lines[-1] == "matmul cuda bfloat16 wt by variant, flushed geomean / worst (shapes): wgmma_ws 0.50 / 0.25 (2); few_rows 0.50 / 0.50 (1)"
    assert not any("by variant" in line for line in summary_lines([rec("wgmma_ws", 8, 1.0), rec("wgmma_ws", 9, 0.5)]))


def test_the_summary_weighs_gemv_and_transpose_against_the_same_size_copy():
    """A case with a same-size copy (the ``copy`` ceiling row) gets a line of the default's
    bandwidth over the copy's (a copy reads and writes its matrix: twice its bytes), for every
    matrix of 1 MB or more and of 64 MB or more; the worst shape named."""
    import torch

    from bench.results_io import Record
    from bench.specs import SPECS
    from bench.tables import summary_lines

    def case(alg, shape, ours_ms, copy_ms):
        nbytes = SPECS[alg].bytes(tuple(shape), torch.float16)
        return [Record(alg, "triton", "v", "impl", "float16", shape, "cuda", layout="row", default=True, x_vs_ref=1.0,
                       median_ms=ours_ms, loop_ms=ours_ms, gbps=nbytes / (ours_ms * 1e-3) / 1e9),
                Record(alg, "torch", "copy", "ceiling", "float16", shape, "cuda", layout="row", median_ms=copy_ms)]
    big, small, tiny = [8192, 8192], [1024, 1024], [16, 16]  # 128 MB, 2 MB, 512 bytes (below every band)
    # transpose: its bytes are the copy's; gemv reads its matrix once: the copy's time over twice ours
    recs = case("transpose", big, 1.0, 0.9) + case("transpose", small, 1.0, 1.0) + case("transpose", tiny, 1.0, 0.1)
    recs += case("gemv", big, 1.0, 1.8) + case("gemv", small, 1.0, 2.0)
    lines = [x for x in summary_lines(recs) if "copy" in x]
    t, g = (next(x for x in lines if x.startswith(alg)) for alg in ("transpose", "gemv"))
    assert t.endswith(">= 1 MB 0.95 / 0.90 / 0.90 (8192x8192, 2 shapes); >= 64 MB 0.90 / 0.90 / 0.90 (8192x8192, 1 shapes)")
    assert ">= 1 MB 0.95 / 0.90 / 0.90 (8192x8192, 2 shapes)" in g and ">= 64 MB 0.90" in g
