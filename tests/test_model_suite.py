"""``bench model``'s suite on CPU: every registered architecture builds at the tiny size and runs
prefill, decode (decoders) and a training step for one round, into records with every field.

The switches route CUDA tensors only, so here both sides run torch's kernels: these tests check
the harness's structure (records, referee, token counts, turns), not speed or our kernels."""

import json
import math
import statistics

import pytest

pytestmark = pytest.mark.cpu_only  # (CI runs these; a GPU machine's suite skips them)

from bench import model

transformers = pytest.importorskip("transformers")
torch = pytest.importorskip("torch")

from bench import cli, models  # noqa: E402 - after the skip: bench.models is useless without transformers

PREFILL = ((1, 16),  # one short prompt
           (2, 8),   # a batch
           (1, 300))  # longer than the tiny size's 256 positions: skipped
NEW_TOKENS = 3
DTYPES = (torch.bfloat16, torch.float16)
FIELDS = {"model", "size", "workload", "shape", "dtype", "backend", "device", "unit", "ms", "x", "x_quartiles",
          "rounds", "block", "logits_err", "argmax_agree", "ours_vs_torch", "tolerance", "within_tolerance",
          "routed"}


@pytest.fixture(scope="module")
def suite():
    lines = []
    records = models.run_suite(size="tiny", device="cpu", dtypes=DTYPES, rounds=1, block=1,
                               prefill_shapes=PREFILL, decode_batches=(2,), new_tokens=NEW_TOKENS, log=lines.append)
    return records, lines


def test_registry_covers_the_issue():
    """Llama, Qwen2 (biases), GPT-2 (Conv1D, 50257), an MoE, an encoder, Gemma or Phi."""
    assert {"llama", "qwen2", "gpt2", "mixtral", "bert"} <= set(models.ARCHS)
    assert {"gemma", "phi3"} & set(models.ARCHS)
    assert not models.ARCHS["bert"].decodes
    assert models.ARCHS["gpt2"].config("tiny").vocab_size == 50257
    assert models.ARCHS["qwen2"].config("small").vocab_size == 151936
    # bench.model's Llama: the suite's training step times the model measured before it
    assert models.ARCHS["llama"].config("small").hidden_size == model.CONFIGS["small"]["hidden_size"]
    assert models.TRAIN_SHAPES["small"] == model.BATCH["small"]


def test_every_model_every_workload(suite):
    records, _ = suite
    seen = {(r["model"], r["workload"], r["dtype"], r["backend"]) for r in records}
    for name, arch in models.ARCHS.items():
        for workload in models.WORKLOADS if arch.decodes else ("prefill", "train"):
            for dtype in ("bfloat16", "float16"):
                for backend in ("triton", "cuda"):
                    assert (name, workload, dtype, backend) in seen
    assert not any(r["model"] == "bert" and r["workload"] == "decode" for r in records)


def test_records_have_every_field(suite):
    records, _ = suite
    for r in records:
        assert FIELDS <= set(r), (r["model"], r["workload"], FIELDS - set(r))
        assert r["device"] == "cpu" and r["rounds"] == 1 and r["block"] == 1
        for k in ("torch", "ours"):
            assert r["ms"][k] > 0
            assert math.isfinite(r["logits_err"][k]) and r["logits_err"][k] <= r["tolerance"], r
            assert 0 <= r["argmax_agree"][k] <= 100
        assert r["x"] > 0 and r["x_quartiles"][0] <= r["x_quartiles"][1]
        assert r["within_tolerance"] is True
        # on CPU nothing is routed and ours is torch's own kernels, call for call
        assert r["routed"] == {}
        assert r["ours_vs_torch"] == {"logits_err": 0.0, "argmax_agree": 100.0}
        json.dumps(r)


def test_shapes_and_units(suite):
    records, lines = suite
    prefill = {(r["model"], tuple(r["shape"])) for r in records if r["workload"] == "prefill"}
    for name in models.ARCHS:
        assert (name, (1, 16)) in prefill and (name, (2, 8)) in prefill and (name, (1, 300)) not in prefill
        assert f"{name} prefill 1x300: skipped, longer than the model's 256 positions" in lines
    units = {r["workload"]: r["unit"] for r in records}
    assert units == {"prefill": "ms per forward", "decode": "ms per token", "decode_graph": "ms per token",
                     "train": "ms per step"}
    for r in records:
        if r["workload"] == "train":
            assert tuple(r["shape"]) == models.TRAIN_SHAPES["tiny"]
            assert all(math.isfinite(v) for v in r["loss"].values())
            assert r["loss"]["ours"] == r["loss"]["torch"]  # each backend's step starts from the same weights


def test_decode_counts_are_exact(suite):
    records, _ = suite
    decode = [r for r in records if r["workload"] == "decode"]
    assert decode
    for r in decode:
        assert r["shape"] == [2, models.PROMPT] and r["new_tokens"] == NEW_TOKENS
        assert r["tokens"]["new"] == [NEW_TOKENS] * 3  # ours, torch's, the referee's: nothing stopped early
        assert r["tokens"]["match_torch"] == 100.0
        assert 0 <= r["tokens"]["match_referee"] <= 100 and 0 < r["tokens"]["compared_steps"] <= 100


def test_graph_decode_is_generates_decode(suite):
    """decode_graph's steps (eager here: no CUDA) over a static cache give generate()'s tokens; a
    record a backend and shape, none failed."""
    records, _ = suite
    graph = [r for r in records if r["workload"] == "decode_graph"]
    assert {r["model"] for r in graph} == {n for n, a in models.ARCHS.items() if a.decodes}
    for r in graph:
        assert r["shape"] == [2, models.PROMPT] and r["new_tokens"] == NEW_TOKENS and r["graphs"] is False
        assert r["tokens"]["match_torch"] == 100.0 and "error" not in r
        # the same weights and kernels as generate(): its tokens, and logits as close as the dtype allows
        assert r["tokens"]["torch_match_referee"] == next(
            d["tokens"]["match_referee"] for d in records if d["workload"] == "decode" and
            (d["model"], d["dtype"], d["backend"]) == (r["model"], r["dtype"], r["backend"]))


def test_graph_decode_matches_generate_logits():
    """_GraphDecode's logits, step by step, are generate()'s on the same model (float32, CPU)."""
    arch = models.ARCHS["llama"]
    m = models.build(arch, "tiny", "cpu")
    ids = torch.randint(1, m.config.vocab_size, (2, 5), generator=torch.Generator().manual_seed(3))
    dec = models._GraphDecode(m, ids, 4)
    dec.capture()  # (no CUDA: nothing captured, steps run eagerly)
    toks, logits = dec.tokens_logits()
    with torch.no_grad():
        out = m.generate(input_ids=ids, attention_mask=torch.ones_like(ids), max_new_tokens=4, min_new_tokens=4,
                         do_sample=False, output_logits=True, return_dict_in_generate=True)
    assert torch.equal(toks, out.sequences[:, 5:])
    torch.testing.assert_close(logits, torch.stack(out.logits, dim=1), rtol=1e-4, atol=1e-4)
    # a second run starts over from the prompt's cache: the same tokens
    assert torch.equal(dec.tokens_logits()[0], toks)


def test_graph_decode_refuses_what_a_replay_cannot_move():
    """A sliding-window cache layer sizes its mask from a count on the host (a replay would keep the
    capture's), and a decode of one token has no step to replay: both refused, never run wrong."""
    cfg = dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
               num_key_value_heads=2, vocab_size=512, max_position_embeddings=256)
    ids = torch.randint(1, 512, (1, 5), generator=torch.Generator().manual_seed(0))
    sliding = transformers.MistralForCausalLM(transformers.MistralConfig(**cfg, sliding_window=8)).eval()
    with pytest.raises(ValueError, match="sliding-window"):
        models._GraphDecode(sliding, ids, 3)
    full = transformers.MistralForCausalLM(transformers.MistralConfig(**cfg, sliding_window=None)).eval()
    with pytest.raises(ValueError, match="new_tokens"):
        models._GraphDecode(full, ids, 1)
    assert models._GraphDecode(full, ids, 2).tokens_logits()[0].shape == (1, 2)


def test_replays_pick_the_graph_in_turns():
    picked = [None]
    sides = [models._Replays(picked, i) for i in range(3)]
    seen = []
    model.time_in_turns(lambda: seen.append(picked[0]), sides, rounds=3, block=1, sync=lambda: None)
    # each side's block runs its own graph (one untimed call, one timed), the sides rotating
    assert seen == [0, 0, 1, 1, 2, 2, 1, 1, 2, 2, 0, 0, 2, 2, 0, 0, 1, 1]


def test_a_failed_backend_is_reported_not_timed(tmp_path):
    from bench.readme import suite_section
    r = {"model": "llama", "size": "tiny", "workload": "decode_graph", "shape": [1, 16], "dtype": "bfloat16",
         "backend": "cuda", "device": "cpu", "error": "RuntimeError: capture", "x": None, "routed": {"mm": 3}}
    assert models.report(r) == "llama decode_graph 1x16 bfloat16 cuda: failed, RuntimeError: capture"
    path = tmp_path / "suite.json"
    path.write_text(json.dumps({"meta": {"date": "2026-01-01", "device": "cpu", "suite_size": "tiny"}, "records": [r]}))
    assert "| decode_graph | 1x16 | - | failed | - | - |" in suite_section([str(path)])


def test_same_context_masks_after_the_first_difference():
    a = torch.tensor([[1, 2, 3, 4], [1, 2, 3, 4]])
    b = torch.tensor([[1, 2, 3, 4], [1, 9, 3, 4]])
    # step t's logits are comparable while the tokens before t agree: row 1 differs at step 1
    assert models._same_context(a, b).tolist() == [[True] * 4, [True, True, False, False]]


def test_judge_reports_nan():
    ref = torch.randn(2, 3, 5)
    bad = ref.clone()
    bad[0, 0, 0] = float("nan")
    c = models.judge(ref, ref, bad)
    assert c["logits_err"]["torch"] == 0.0 and math.isnan(c["logits_err"]["ours"])


class _Switch:
    def __init__(self, name, log):
        self.name, self.log = name, log

    def enabled(self):
        import contextlib

        @contextlib.contextmanager
        def cm():
            self.log.append(("on", self.name))
            yield
        return cm()


def test_time_in_turns_rotates_and_skips_the_first_call():
    log = []
    a, b = _Switch("a", log), _Switch("b", log)
    calls = []
    per_round = []
    med = model.time_in_turns(lambda: calls.append(1), [None, a, b], rounds=3, block=2, sync=lambda: None,
                              per_round=per_round)
    assert len(calls) == 3 * 3 * (2 + 1)  # a block of 2 timed calls after an untimed one
    # rounds: (torch, a, b), (a, b, torch), (b, torch, a): each starts one further on
    assert [n for _, n in log] == ["a", "b", "a", "b", "b", "a"]
    assert len(med) == 3 and len(per_round) == 3 and all(len(r) == 3 for r in per_round)


def test_quartiles_stay_in_range():
    assert model.quartiles([2.0]) == (2.0, 2.0)
    lo, hi = model.quartiles([1.0, 3.0])
    assert 1.0 <= lo <= hi <= 3.0
    assert model.ratio_quartiles([2.0, 2.0, 2.0], [1.0, 2.0, 4.0]) == (
        statistics.quantiles([2.0, 1.0, 0.5], n=4, method="inclusive")[0],
        statistics.quantiles([2.0, 1.0, 0.5], n=4, method="inclusive")[2])


def test_cli_writes_meta_and_records(tmp_path, capsys):
    path = tmp_path / "model.json"
    assert cli.main(["model", "--model", "gpt2", "--workload", "prefill", "--size", "tiny", "--device", "cpu",
                     "--rounds", "1", "--block", "1", "--backend", "triton", "--json", str(path)]) == 0
    data = json.loads(path.read_text())
    assert {"date", "git_commit", "torch", "device"} <= set(data["meta"])
    assert data["meta"]["suite_size"] == "tiny"
    assert {r["model"] for r in data["records"]} == {"gpt2"}
    assert {r["backend"] for r in data["records"]} == {"triton"}
    assert {r["dtype"] for r in data["records"]} == {"bfloat16"}
    assert "gpt2 prefill 1x16 bfloat16 triton" in capsys.readouterr().out


def test_cli_refuses_an_unknown_model():
    with pytest.raises(SystemExit, match="unknown model"):
        cli.main(["model", "--model", "gpt5", "--size", "tiny", "--device", "cpu"])


def test_report_tables_the_suite(suite, tmp_path):
    """`bench report`'s section of a suite run: a table per model and dtype, a row per workload and
    shape with both backends' ratios, the logits errors and the routed calls."""
    from bench.readme import suite_section

    records, _ = suite
    path = tmp_path / "suite.json"
    path.write_text(json.dumps({"meta": {"date": "2026-01-01", "device": "cpu", "suite_size": "tiny"},
                                "records": records}))
    text = suite_section([str(path)])
    for name in models.ARCHS:
        for dtype in ("bfloat16", "float16"):
            assert f"**{name}** {dtype}, tiny size, cpu" in text
    rows = [line for line in text.splitlines() if line.startswith("| prefill | 2x8 (forward) |")]
    assert len(rows) == 2 * len(models.ARCHS)
    r = next(r for r in records if r["workload"] == "prefill" and r["shape"] == [2, 8] and r["backend"] == "cuda")
    assert f"{r['x']:.2f} ({r['x_quartiles'][0]:.2f}-{r['x_quartiles'][1]:.2f})" in text
