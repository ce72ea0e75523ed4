"""compare's cases: matmul for both layouts of B, --layout, named size sets, --defaults-only.

Runs on CPU (Triton under the interpreter) with tiny shapes; the GPU path is the same code with
timings added.
"""

import dataclasses

import pytest
import torch

from bench import cli, registry
from bench.compare import ROWS_POOL, case_shapes, compare
from bench.results_io import read_json
from bench.specs import SPECS, MatmulSpec
from bench.tables import format_tables

no_gpu_only = pytest.mark.skipif(torch.cuda.is_available(), reason="this is the no-GPU path")
SHAPE = (3, 5, 4)  # M, N, K


def test_arrange_wt_is_the_same_b_as_a_weight_transposed():
    a, b = MatmulSpec.make_inputs(SHAPE, torch.float32, "cpu", seed=0)
    a2, b2 = MatmulSpec.arrange((a, b), "wt")
    M, N, K = SHAPE
    assert a2 is a and torch.equal(b2, b) and b2.shape == (K, N) and b2.stride() == (1, K)
    assert b2.t().is_contiguous()  # W (N, K), as nn.Linear keeps it
    assert MatmulSpec.arrange((a, b), "row") == (a, b) and b.stride() == (N, 1)
    assert torch.equal(MatmulSpec.reference((a2, b2)), MatmulSpec.reference((a, b)))


def _spy_on_torch_matmul(monkeypatch):
    """Record the strides of every B torch's reference is called with."""
    seen = []

    def spy(a, b, out=None):
        seen.append(b.stride())
        return torch.matmul(a, b, out=out)
    table = tuple(dataclasses.replace(i, fn=spy) if i.key == ("matmul", "torch", "matmul") else i
                  for i in registry.TABLE)
    monkeypatch.setattr(registry, "TABLE", table)
    return seen


@no_gpu_only
def test_matmul_runs_every_impl_for_both_layouts_of_b(monkeypatch):
    seen = _spy_on_torch_matmul(monkeypatch)
    lines = []
    _, _, recs = compare(["matmul"], dtypes=["float32"], sizes=[SHAPE], progress=lines.append)
    impls = {(i.backend, i.variant) for i in registry.select("matmul") if not i.needs_gpu and i.takes("float32")}
    assert {(r.backend, r.variant, r.layout) for r in recs} == {(*i, lay) for i in impls for lay in ("row", "wt")}
    assert len(recs) == 2 * len(impls) and all(r.ok for r in recs)
    M, N, K = SHAPE
    assert seen == [(N, 1), (1, K)]  # torch got the same B as ours, case by case
    assert any(line.startswith("matmul float32 3x5x4 B wt: checking") for line in lines)
    text = format_tables(recs)
    assert "== matmul  float32  3x5x4  B row  on" in text and "== matmul  float32  3x5x4  B wt  on" in text
    assert "[wt]" not in text  # the title names the case; rows do not repeat it


@no_gpu_only
def test_layout_filter_and_errors(tmp_path):
    assert cli.main(["compare", "--algorithm", "matmul", "--size", "3x5x4", "--dtype", "float32",
                     "--layout", "wt", "--json", str(tmp_path / "r.json")]) == 0
    recs = read_json(tmp_path / "r.json")["records"]
    assert recs and {r.layout for r in recs} == {"wt"}
    lines = []
    with pytest.raises(ValueError, match="--layout for matmul must be one of row, wt, got 'col'"):
        compare(["matmul"], sizes=[SHAPE], layouts=["col"], progress=lines.append)
    with pytest.raises(ValueError, match="gemv has no case layouts"):
        compare(["matmul", "gemv"], sizes=[(6,)], layouts=["wt"], progress=lines.append)
    assert lines == []  # refused before anything ran


@no_gpu_only
def test_gemv_keeps_its_implementations_layouts():
    _, _, recs = compare(["gemv"], dtypes=["float32"], sizes=[(5, 6)], progress=lambda m: None)
    assert {r.variant: r.layout for r in recs} == {i.variant: i.layout for i in registry.select("gemv")
                                                   if not i.needs_gpu}


def test_models_size_set():
    shapes = case_shapes(SPECS["matmul"], size_set="models")
    assert len(shapes) == len(set(shapes)) == 40
    assert {M for M, _, _ in shapes} == {1, 16, 128, 2048, 8192}
    for s in [(1, 6144, 4096), (16, 4096, 4096), (128, 14336, 4096), (2048, 4096, 14336),  # 8B qkv, o, up, down
              (8192, 10240, 8192), (1, 8192, 8192), (16, 28672, 8192), (128, 8192, 28672)]:  # 70B
        assert s in shapes
    with pytest.raises(ValueError, match="--size-set for matmul must be one of models, dense, lora, got 'llama'"):
        case_shapes(SPECS["matmul"], size_set="llama")
    with pytest.raises(ValueError, match="--size-set for transpose must be one of odd, dense, got 'models'"):
        case_shapes(SPECS["transpose"], size_set="models")
    with pytest.raises(ValueError, match="not both"):
        case_shapes(SPECS["matmul"], sizes=[(64,)], size_set="models")


def test_decode_and_odd_size_sets():
    """gemv's decode set: Llama 3 8B / 70B weights at one token and the LM heads; transpose's odd rows."""
    decode = case_shapes(SPECS["gemv"], size_set="decode")
    assert len(decode) == len(set(decode)) == 12
    for s in [(6144, 4096), (4096, 4096), (14336, 4096), (4096, 14336), (128256, 4096),
              (10240, 8192), (28672, 8192), (8192, 28672), (128256, 8192), (64, 1 << 21)]:
        assert s in decode
    assert {(N, K) for M, N, K in SPECS["matmul"].size_sets["models"] if M == 1} <= set(decode)
    assert (12345, 6789) in case_shapes(SPECS["transpose"], size_set="odd")


def test_size_set_on_the_command_line(monkeypatch, tmp_path, capsys):
    # every algorithm selected (the default): transpose has no "models", before anything runs
    assert cli.main(["compare", "--size-set", "models"]) == 2
    assert "--size-set for transpose must be one of odd" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        cli.main(["compare", "--algorithm", "matmul", "--size-set", "models", "--size", "64"])
    if torch.cuda.is_available():
        return
    monkeypatch.setattr(MatmulSpec, "size_sets", {"tiny": (SHAPE, (2, 3, 1))})
    assert cli.main(["compare", "--algorithm", "matmul", "--size-set", "tiny", "--dtype", "float32",
                     "--layout", "row", "--json", str(tmp_path / "r.json")]) == 0
    recs = read_json(tmp_path / "r.json")["records"]
    assert [r.shape for r in recs if r.role == "reference"] == [[3, 5, 4], [2, 3, 1]]


@no_gpu_only
def test_defaults_only_keeps_defaults_and_torch():
    _, _, recs = compare(["matmul", "transpose"], dtypes=["float32"], sizes=[(6,)], defaults_only=True,
                         progress=lambda m: None)
    # (6 rows of exact float32: few_rows; a 6 x 6 transpose: narrow's flat tile)
    assert {(r.algorithm, r.backend, r.variant, r.role) for r in recs} == {
        ("matmul", "triton", "few_rows", "impl"), ("matmul", "torch", "matmul", "reference"),
        ("transpose", "triton", "narrow", "impl"), ("transpose", "torch", "contiguous", "reference"),
        ("transpose", "torch", "copy", "ceiling")}
    assert all(r.default for r in recs if r.role == "impl") and all(r.ok is not False for r in recs)
    assert {r.layout for r in recs if r.algorithm == "matmul"} == {"row", "wt"}


def test_addmm_rows_are_the_matmul_variants_with_a_bias_epilogue():
    """addmm (run when named): a row per matmul variant whose record declares the bias epilogue, in
    each backend, and torch.addmm as the reference; never part of a run of every algorithm."""
    from cuda_ref.catalog import RECORDS as CUDA
    from triton_impl.catalog import RECORDS as TRITON
    rows = {(i.backend, i.variant, i.role) for i in registry.select("addmm")}
    want = {(b, r.name, "impl") for b, records in (("cuda", CUDA), ("triton", TRITON)) for r in records
            if r.algorithm == "matmul" and r.bias}
    assert rows == want | {("torch", "addmm", "reference")} and ("cuda", "wgmma_ws", "impl") in rows
    assert "addmm" not in registry.algorithms() and "addmm" in registry.known_algorithms()
    assert registry.base_algorithm("addmm") == "matmul" and registry.base_algorithm("gemv") == "gemv"
    assert case_shapes(SPECS["addmm"], size_set="dense", seed=3) == case_shapes(SPECS["matmul"], size_set="dense",
                                                                                  seed=3)


@no_gpu_only
def test_addmm_checks_the_bias_epilogues_against_a_float64_reference():
    """c = a b + bias from each Triton variant with the epilogue (the interpreter) and from torch,
    each within matmul's tolerance of float64 a b + bias, on both layouts of b; the default marked."""
    _, _, recs = compare(["addmm"], dtypes=["float16"], sizes=[(5, 17, 33)], progress=lambda m: None)
    impls = [r for r in recs if r.role == "impl"]
    assert impls and all(r.ok for r in recs), [(r.variant, r.detail) for r in recs if not r.ok]
    assert {r.layout for r in recs} == {"row", "wt"} and {r.algorithm for r in recs} == {"addmm"}
    assert sum(r.default for r in impls) == 2  # one default a case layout
    a, b, bias = SPECS["addmm"].make_inputs((5, 17, 33), torch.float16, "cpu", 0)
    assert bias.shape == (17,) and bias.dtype == torch.float16 and bool((bias != 0).all())
    ref = SPECS["addmm"].reference((a, b, bias))
    assert torch.equal(ref, a.double() @ b.double() + bias.double())


def test_bmm_rows_are_the_batch_variants():
    """bmm (run when named): a row per matmul variant whose record walks a batch, torch.bmm the
    reference; the attention size set's shapes are (batch x heads, M, N, K) of both products."""
    from cuda_ref.catalog import RECORDS as CUDA
    from triton_impl.catalog import RECORDS as TRITON
    rows = {(i.backend, i.variant, i.role) for i in registry.select("bmm")}
    assert rows == {(backend, r.name, "impl") for backend, records in (("cuda", CUDA), ("triton", TRITON))
                    for r in records if r.algorithm == "matmul" and r.batch} | {("torch", "bmm", "reference")}
    assert ("cuda", "wgmma_ws", "impl") in rows
    assert "bmm" not in registry.algorithms() and registry.base_algorithm("bmm") == "matmul"
    shapes = SPECS["bmm"].size_sets["attention"]
    assert all(len(s) == 4 and s[1] in (s[2], s[3]) for s in shapes) and {s[3] for s in shapes} >= {64, 128}


@no_gpu_only
def test_bmm_checks_the_batch_variants_against_a_float64_reference():
    """Each batch variant (the interpreter) and torch.bmm within matmul's tolerance of a float64
    bmm, on both layouts of b; the default marked once a layout and shape: the TMA walk where
    descriptors read the rows (whole 16 bytes), which the harness skips elsewhere."""
    _, _, recs = compare(["bmm"], dtypes=["float16"], sizes=[(3, 5, 17, 33), (2, 9, 24, 40)], progress=lambda m: None)
    skipped = {tuple(r.shape) for r in recs if r.detail.startswith("skipped")}
    recs = [r for r in recs if not r.detail.startswith("skipped")]
    impls = [r for r in recs if r.role == "impl"]
    assert impls and all(r.ok for r in recs), [(r.variant, r.detail) for r in recs if not r.ok]
    assert skipped == {(3, 5, 17, 33)}
    assert {r.layout for r in recs} == {"row", "kt"} and {tuple(r.shape) for r in recs} == {(3, 5, 17, 33), (2, 9, 24, 40)}
    assert sum(r.default for r in impls) == 4
    tma = {tuple(r.shape) for r in impls if r.variant == "tma_persistent"}
    assert tma == {(2, 9, 24, 40)} and all(r.default for r in impls if r.variant == "tma_persistent")
    a, b = SPECS["bmm"].make_inputs((3, 5, 17, 33), torch.float16, "cpu", 0)
    assert a.shape == (3, 5, 33) and b.shape == (3, 33, 17) and bool((a != 0).all()) and bool((b != 0).all())
    assert SPECS["bmm"].shape_of((a, b)) == (3, 5, 17, 33)


@no_gpu_only
def test_scaled_mm_checks_each_scaling_against_the_dequantized_product():
    """FP8 (the interpreter): each scaling a case layout, triton's scaled_mm within the FP8
    tolerance of the float64 product of the dequantized operands and of torch._scaled_mm's c;
    torch's row skips the block scales it does not take, and the shapes it refuses on a GPU (K or N
    off 16: 4097 x 4095 x 1000) with that reason rather than as a failed check. (K = 144: a short
    last 128-deep slice.)"""
    from bench.registry import scaled_mm_limits
    assert scaled_mm_limits((4097, 4095, 1000)) and scaled_mm_limits((8, 30522, 768)) and not scaled_mm_limits((33, 16, 144))
    _, _, recs = compare(["scaled_mm"], sizes=[(33, 16, 144)], progress=lambda m: None)
    assert {r.layout for r in recs} == {"tensor", "row", "block"}
    ours = [r for r in recs if r.role == "impl"]  # (each Triton variant a scaling; 33 rows: few_rows_fp8's)
    assert len(ours) == 6 and all(r.ok for r in ours), [(r.layout, r.variant, r.detail) for r in ours]
    assert sorted((r.layout, r.variant) for r in ours if r.default) == [(k, "few_rows_fp8") for k in ("block", "row", "tensor")]
    torch_rows = {r.layout: r for r in recs if r.role == "reference"}
    assert torch_rows["tensor"].ok and torch_rows["row"].ok and torch_rows["block"].detail == "skipped: no block case"


def test_an_interrupted_run_keeps_the_cases_done():
    """An interrupt (timeout -s INT on a GPU machine's limit) ends the run with the records of the
    cases that ended before it, and the meta says the run was cut."""
    def progress(line):
        if " B wt: checking" in line:
            raise KeyboardInterrupt
    meta, _, recs = compare(["matmul"], backends=["torch"], dtypes=["float32"], sizes=[SHAPE], progress=progress)
    assert recs and {r.layout for r in recs} == {"row"}
    assert meta["interrupted"] == f"after {len(recs)} records"
    done, _, _ = compare(["matmul"], backends=["torch"], dtypes=["float32"], sizes=[SHAPE], progress=lambda m: None)
    assert "interrupted" not in done


@pytest.mark.parametrize("signum", ["SIGINT", "SIGTERM"])
def test_the_cli_turns_a_stop_signal_into_an_interrupt(signum):
    """timeout's SIGTERM, and SIGINT whatever the parent left it at, reach compare as
    KeyboardInterrupt (a run killed by them wrote nothing)."""
    import os
    import signal
    saved = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        cli._interrupt_on_stop()
        with pytest.raises(KeyboardInterrupt):
            os.kill(os.getpid(), getattr(signal, signum))
            for _ in range(1000):  # (the handler runs at the next bytecode)
                pass
    finally:
        for s, h in saved.items():
            signal.signal(s, h)


def test_shards_split_the_shapes_and_merge_into_one_run(tmp_path, capsys):
    """compare --shard I/N runs shapes I, I+N, ...; bench merge joins the shards into the run the
    whole list would have made, and refuses files that are not shards of one run."""
    args = ["compare", "--algorithm", "matmul", "--backend", "torch", "--dtype", "float32", "--layout", "row",
            "--size", "3x5x4", "6x7x8", "9x2x3", "--seed", "5"]
    for i in (1, 2):
        assert cli.main([*args, "--shard", f"{i}/2", "--json", str(tmp_path / f"s{i}.json")]) == 0
    assert cli.main([*args, "--json", str(tmp_path / "whole.json")]) == 0
    s1, s2 = (read_json(tmp_path / f"s{i}.json") for i in (1, 2))
    assert [r.shape for r in s1["records"]] == [[3, 5, 4], [9, 2, 3]] and s1["meta"]["shard"] == "1/2"
    assert [r.shape for r in s2["records"]] == [[6, 7, 8]]
    assert cli.main(["merge", str(tmp_path / "m.json"), str(tmp_path / "s1.json"), str(tmp_path / "s2.json")]) == 0
    merged, whole = read_json(tmp_path / "m.json"), read_json(tmp_path / "whole.json")
    assert sorted(map(tuple, (r.shape for r in merged["records"]))) == sorted(map(tuple, (r.shape for r in
                                                                                     whole["records"])))
    assert merged["meta"]["shards"] == ["1/2", "2/2"] and "shard" not in merged["meta"]
    assert cli.main(["merge", str(tmp_path / "x.json"), str(tmp_path / "s1.json"), str(tmp_path / "s1.json")]) == 2
    assert cli.main(["merge", str(tmp_path / "x.json"), str(tmp_path / "s1.json"), str(tmp_path / "whole.json")]) == 2
    assert cli.main([*args[:-2], "--seed", "6", "--shard", "2/2", "--json", str(tmp_path / "other.json")]) == 0
    assert cli.main(["merge", str(tmp_path / "x.json"), str(tmp_path / "s1.json"), str(tmp_path / "other.json")]) == 2
    assert "seed differ" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        cli.main([*args, "--shard", "3/2"])


def test_a_checkpoint_follows_each_case_and_the_cli_writes_it_as_not_ended(tmp_path):
    """compare hands its records to ``checkpoint`` after each case; the CLI's writes them (at most
    every few seconds) with a meta saying the run had not ended, which a finished run overwrites."""
    seen = []
    compare(["matmul"], dtypes=["float32"], sizes=[(6,), (7,)], layouts=["row"], progress=lambda m: None,
            rep_ms=1, checkpoint=lambda meta, ceilings, records: seen.append(len(records)))
    assert len(seen) == 2 and 0 < seen[0] < seen[1]
    from bench import cli
    from bench.results_io import read_json
    path = tmp_path / "run.json"
    write = cli._checkpoint(str(path), every_s=0.0)
    _, _, recs = compare(["matmul"], dtypes=["float32"], sizes=[(6,)], layouts=["row"], progress=lambda m: None,
                         rep_ms=1, checkpoint=write)
    run = read_json(path)
    assert run["meta"]["interrupted"].startswith("not ended") and len(run["records"]) == len(recs)
    assert cli._checkpoint(None) is None


def test_rows_narrow_a_draw():
    """--rows LO HI: a draw's shapes of LO to HI rows, the first DRAW_COUNT of a larger draw in order
    (the same seed gives the same shapes), and only for a drawn size set."""
    from bench import workloads
    shapes = case_shapes(SPECS["matmul"], size_set="dense", seed=4, rows=(65, 511))
    assert len(shapes) == workloads.DRAW_COUNT and all(65 <= m <= 511 for m, _, _ in shapes)
    pool = workloads.draw_matmul(ROWS_POOL * workloads.DRAW_COUNT, 4)
    assert shapes == [s for s in pool if 65 <= s[0] <= 511][:workloads.DRAW_COUNT]
    assert shapes == case_shapes(SPECS["matmul"], size_set="dense", seed=4, rows=(65, 511))
    assert all(1 <= s[0] <= 16 for s in case_shapes(SPECS["gemv"], size_set="dense", seed=2, rows=(1, 16)))
    with pytest.raises(ValueError, match="--rows"):
        case_shapes(SPECS["matmul"], size_set="models", rows=(1, 2))
