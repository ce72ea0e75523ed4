"""``python -m bench model``'s suite: architectures from Hugging Face ``transformers`` built from their
configs with random weights (nothing is downloaded), each run four ways: prefill (a forward pass
without gradients), decode (``generate()`` with a KV cache, greedy), decode as CUDA graphs' replays
over a static KV cache (``decode_graph``: the host's cost gone, the GPU's ratio) and a training step. Every
workload is timed with torch's kernels and with each backend's switch on, in turns, round by round
(``bench.model.time_in_turns``), and its logits are judged against a float32 referee: the same
weights in float32 with the switch off. Neither torch nor ours is taken as right."""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import importlib
from collections.abc import Callable

import torch

from bench.model import CONFIGS, quartiles, ratio_quartiles, step, time_in_turns

# Widths per size. "tiny": the CPU tests (seconds for the whole suite); "small": runs in seconds on
# a GPU, its matmuls short enough that a call's host time shows; "medium": the width of a
# 0.5-1B-class model (few layers: a layer's matmuls repeat, the time per layer is what differs).
DIMS = {
    "tiny": dict(hidden=64, inter=128, layers=2, heads=4, kv=2, positions=256),
    "small": dict(hidden=1024, inter=2816, layers=4, heads=16, kv=8, positions=2048),
    "medium": dict(hidden=2048, inter=5632, layers=4, heads=16, kv=8, positions=2048),
}
TINY_VOCAB = 512  # a tiny model keeps its family's vocabulary only where the size is the point (GPT-2)

PREFILL_SHAPES = (  # (batch, sequence)
    (1, 16),     # a short prompt: every matmul is 16 rows, host-bound
    (1, 64),
    (1, 512),
    (8, 512),    # a batch of prompts
    (1, 2048),   # a long prompt
    (16, 2048),  # 32768 tokens: compute-bound
)
DECODE_BATCHES = (1, 8, 64)
PROMPT = 16       # decode's prompt length
NEW_TOKENS = 32   # decode's generated tokens, exactly (min_new_tokens = max_new_tokens)
TRAIN_SHAPES = {"tiny": (2, 16), "small": (4, 256), "medium": (4, 1024)}  # bench.model's batches
LOGITS_CAP = 8 << 30  # bytes of a shape's float32 logits past which it is skipped (16 x 2048 x 151936)
ROUNDS = {"prefill": (10, 3), "decode": (8, 1), "decode_graph": (10, 3), "train": (10, 5)}  # (rounds, block)
WORKLOADS = ("prefill", "decode", "decode_graph", "train")
GRAPH_WARMUP = 2  # eager steps before a capture: plans made, kernels compiled and loaded outside it
# max |logits - referee's| / max |referee's| that a dtype's rounding through a few layers explains
TOLERANCE = {torch.float32: 1e-4, torch.float16: 1e-2, torch.bfloat16: 6e-2}


@dataclasses.dataclass(frozen=True)
class Arch:
    """One architecture of the suite: ``config(size)`` a transformers config (dropout off, so a
    training step's logits can be compared), ``model_class`` its head's class in transformers."""
    name: str
    config: Callable[[str], object]
    model_class: str
    decodes: bool  # encoders don't generate
    idea: str      # what it adds to the suite's matmuls


def _llama(size):
    import transformers
    d = DIMS[size]
    if size in CONFIGS:  # bench.model's Llama, so the training step times the same model as before
        kw = dict(CONFIGS[size], max_position_embeddings=d["positions"])
    else:
        kw = dict(hidden_size=d["hidden"], intermediate_size=d["inter"], num_hidden_layers=d["layers"],
                  num_attention_heads=d["heads"], num_key_value_heads=d["kv"], vocab_size=TINY_VOCAB,
                  max_position_embeddings=d["positions"])
    return transformers.LlamaConfig(**kw)


def _decoder(cls_name, vocab, **extra):
    """A factory for a Llama-like decoder's config: ``cls_name`` in transformers, its family's
    vocabulary (tiny: ``TINY_VOCAB``) and whatever else sets it apart."""
    def config(size):
        import transformers
        d = DIMS[size]
        return getattr(transformers, cls_name)(
            hidden_size=d["hidden"], intermediate_size=d["inter"], num_hidden_layers=d["layers"],
            num_attention_heads=d["heads"], num_key_value_heads=d["kv"], max_position_embeddings=d["positions"],
            vocab_size=vocab if size != "tiny" else TINY_VOCAB, **extra)
    return config


def _mixtral(size, experts="eager"):
    import transformers
    d = DIMS[size]
    return transformers.MixtralConfig(
        hidden_size=d["hidden"], intermediate_size=d["inter"] // 2, num_hidden_layers=d["layers"],
        num_attention_heads=d["heads"], num_key_value_heads=d["kv"], max_position_embeddings=d["positions"],
        vocab_size=32000 if size != "tiny" else TINY_VOCAB, num_local_experts=8 if size != "tiny" else 4,
        num_experts_per_tok=2,
        # "eager": each expert's matmuls through nn.functional.linear (mm); "grouped_mm":
        # F.grouped_mm over the experts (transformers' default), aten::_grouped_mm to the switch
        experts_implementation=experts)


def _gpt2(size):
    import transformers
    d = DIMS[size]
    return transformers.GPT2Config(
        n_embd=d["hidden"], n_inner=4 * d["hidden"], n_layer=d["layers"], n_head=d["heads"],
        n_positions=min(1024, d["positions"]), vocab_size=50257,
        resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0)


def _bert(size):
    import transformers
    d = DIMS[size]
    return transformers.BertConfig(
        hidden_size=d["hidden"], intermediate_size=4 * d["hidden"], num_hidden_layers=d["layers"],
        num_attention_heads=d["heads"], max_position_embeddings=min(512, d["positions"]),
        vocab_size=30522 if size != "tiny" else TINY_VOCAB,
        hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)


def _gemma(size):
    d = DIMS[size]
    return _decoder("GemmaConfig", 256000, head_dim=d["hidden"] // d["heads"])(size)


ARCHS = {a.name: a for a in (
    Arch("llama", _llama, "LlamaForCausalLM", True, "grouped-query attention, SwiGLU MLP, no biases"),
    Arch("qwen2", _decoder("Qwen2Config", 151936), "Qwen2ForCausalLM", True,
         "biases on q/k/v (addmm), a 151936-word LM head"),
    Arch("gpt2", _gpt2, "GPT2LMHeadModel", True, "Conv1D: addmm on row-major weights, an LM head of 50257"),
    Arch("mixtral", _mixtral, "MixtralForCausalLM", True, "8 experts, 2 a token: matmuls of a few rows each"),
    Arch("mixtral_grouped", lambda size: _mixtral(size, "grouped_mm"), "MixtralForCausalLM", True,
         "the same experts by F.grouped_mm (transformers' default): one grouped product a projection"),
    Arch("bert", _bert, "BertForMaskedLM", False, "an encoder: biases everywhere, no decode"),
    Arch("gemma", _gemma, "GemmaForCausalLM", True, "a 256000-word LM head tied to the embedding"),
    Arch("phi3", _decoder("Phi3Config", 32064, pad_token_id=0, eos_token_id=2, resid_pdrop=0.0, embd_pdrop=0.0),
         "Phi3ForCausalLM", True, "fused qkv and gate_up projections"),
)}


def build(arch: Arch, size: str = "small", device="cuda", seed: int = 0):
    """The float32 referee (eval mode) of ``arch`` at ``size``, its weights drawn with ``seed``."""
    import transformers
    torch.manual_seed(seed)
    config = arch.config(size)
    with torch.device(device):  # weights drawn where they run (a 1B model's CPU init takes a minute)
        model = getattr(transformers, arch.model_class)(config)
    if arch.decodes:  # greedy and never stopping early: no end token, a pad id inside the vocabulary
        model.generation_config.eos_token_id = None
        model.generation_config.pad_token_id = 0
    return model.eval()


def backend_switch(name: str):
    """The switch of ``"triton"`` or ``"cuda"``."""
    return importlib.import_module({"triton": "triton_impl", "cuda": "cuda_ref"}[name]).switch


# ---- judging logits ----
def logits_err(x, ref, scale, mask=None) -> float:
    """max |x - ref| / scale (over the positions in ``mask``); NaN in x stays NaN."""
    d = (x.float() - ref.float()).abs()
    if mask is not None:
        d = d[mask]
    return (d.max().item() if d.numel() else 0.0) / scale


def _agree(x, ref, mask=None) -> float:
    """Share of positions (in ``mask``) whose argmax is the referee's, in percent."""
    same = x.argmax(-1) == ref.argmax(-1)
    if mask is not None:
        same = same[mask]
    return 100.0 * same.float().mean().item() if same.numel() else 100.0


def judge(ref, torch_logits, ours_logits, masks=(None, None, None)) -> dict:
    """Torch's and ours's logits against the referee's, and ours against torch's. ``masks``: the
    positions comparable for (torch vs referee, ours vs referee, ours vs torch)."""
    scale = ref.float().abs().max().item() or 1.0
    m_t, m_o, m_ot = masks
    return {
        "logits_err": {"torch": logits_err(torch_logits, ref, scale, m_t),
                       "ours": logits_err(ours_logits, ref, scale, m_o)},
        "argmax_agree": {"torch": _agree(torch_logits, ref, m_t), "ours": _agree(ours_logits, ref, m_o)},
        "ours_vs_torch": {"logits_err": logits_err(ours_logits, torch_logits, scale, m_ot),
                          "argmax_agree": _agree(ours_logits, torch_logits, m_ot)},
    }


def _same_context(a, b):
    """[batch, step]: True where two generations' tokens before the step are equal (the step's
    logits were computed on the same context, so they can be compared)."""
    eq = (a == b).long()
    before = torch.cat([torch.ones_like(eq[:, :1]), eq[:, :-1]], dim=1)
    return before.cumprod(dim=1).bool()


# ---- decode as CUDA graphs ----
def _static_cache(model, batch: int, length: int):
    """transformers' ``StaticCache`` of ``length`` positions: fixed shapes, so a step can be captured."""
    import transformers
    try:  # transformers 5: its tensors made on the first update (the prompt's, outside any capture)
        return transformers.StaticCache(config=model.config, max_cache_len=length)
    except TypeError:  # transformers 4: the batch, device and dtype up front
        return transformers.StaticCache(config=model.config, max_batch_size=batch, max_cache_len=length,
                                        device=model.device, dtype=model.dtype)


class _GraphDecode:
    """Greedy decode over a static KV cache, a step a CUDA graph's replay. The prompt's forward pass
    (eager) fills the cache and makes the first token; a step's forward keeps its logits (row
    ``pos - prompt`` of ``history``), feeds its argmax back and moves the position, all on the GPU,
    so a replay costs the host one call and the time is the GPU's. The graph is captured with a
    switch on (its kernels baked in) or off (torch's). Without CUDA a step runs eagerly."""

    def __init__(self, model, ids, new_tokens: int):
        if new_tokens < 2:
            raise ValueError(f"new_tokens: a graph's decode makes at least 2 tokens (the prompt's and a step's), got {new_tokens}")
        self.model, self.steps = model, new_tokens - 1
        batch, self.prompt = ids.shape
        dev = ids.device
        self.cache = _static_cache(model, batch, self.prompt + new_tokens)
        self.tok = torch.empty((batch, 1), dtype=torch.long, device=dev)
        self.pos = torch.empty(1, dtype=torch.long, device=dev)
        self.history = torch.empty((self.steps, batch, model.config.vocab_size), dtype=model.dtype, device=dev)
        with torch.no_grad():
            logits = model(input_ids=ids, past_key_values=self.cache, use_cache=True,
                           cache_position=torch.arange(self.prompt, device=dev)).logits
        self.first_logits = logits[:, -1].clone()
        self.first = self.first_logits.argmax(-1, keepdim=True)
        # where transformers 5's layers write next, a count of their own on the device (transformers 4
        # writes at cache_position): put back to the prompt's end, as the position is, at a run's start
        self.lengths = [layer.cumulative_length for layer in getattr(self.cache, "layers", ())
                        if isinstance(getattr(layer, "cumulative_length", None), torch.Tensor)]
        if any(getattr(layer, "is_sliding", False) for layer in getattr(self.cache, "layers", ())):
            # (its mask is sized from a count on the host, which a replay neither reads nor moves)
            raise ValueError("a sliding-window cache layer: its host-side count cannot be replayed")
        self.graph = None

    def _step(self):
        with torch.no_grad():
            logits = self.model(input_ids=self.tok, past_key_values=self.cache, cache_position=self.pos,
                                use_cache=True).logits[:, -1]
            self.history.index_copy_(0, self.pos - self.prompt, logits.unsqueeze(0))
            self.tok.copy_(logits.argmax(-1, keepdim=True))
            self.pos.add_(1)

    def reset(self):
        for n in (self.pos, *self.lengths):
            n.fill_(self.prompt)
        self.tok.copy_(self.first)

    def capture(self):
        """Warm up on a side stream (torch's advice for a capture), then capture one step."""
        if self.pos.device.type != "cuda":
            return
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            self.reset()
            for _ in range(GRAPH_WARMUP):
                self._step()
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            self._step()
        self.graph = graph

    def run(self):
        self.reset()
        for _ in range(self.steps):
            if self.graph is None:
                self._step()
            else:
                self.graph.replay()

    def tokens_logits(self):
        """A run's new tokens [batch, new_tokens] and their logits [batch, new_tokens, vocab]."""
        self.run()
        logits = torch.cat([self.first_logits[:, None], self.history.transpose(0, 1)], dim=1)
        return logits.argmax(-1), logits


class _Replays:
    """Stands in for a switch in ``time_in_turns``: switching it on picks whose graph a run replays."""

    def __init__(self, picked: list, i: int):
        self.picked, self.i = picked, i

    @contextlib.contextmanager
    def enabled(self):
        self.picked[0] = self.i
        yield


def _error(e: BaseException) -> str:
    return f"{type(e).__name__}: {e}"[:400]


# ---- one workload, every backend ----
class _Run:
    """What the workloads of one model at one dtype share: the referee, the model in ``dtype``,
    the backends' switches, the timing's rounds, and the records."""

    def __init__(self, arch, size, dtype, referee, backends, device, rounds=None, block=None, seed=0):
        self.arch, self.size, self.dtype, self.device, self.seed = arch, size, dtype, torch.device(device), seed
        self.referee = referee
        self.model = copy.deepcopy(referee).to(dtype)
        self.backends = list(backends)
        self.switches = [backend_switch(b) for b in self.backends]
        self.rounds, self.block = rounds, block
        self.sync = torch.cuda.synchronize if self.device.type == "cuda" else (lambda: None)
        self.device_name = torch.cuda.get_device_name(self.device) if self.device.type == "cuda" else "cpu"
        self.vocab = referee.config.vocab_size
        self.records: list[dict] = []

    def ids(self, batch, seq):
        g = torch.Generator(device=self.device).manual_seed(self.seed + batch * 100003 + seq)
        return torch.randint(1, self.vocab, (batch, seq), device=self.device, generator=g)

    def ours(self, fn, after=None) -> list:
        """``fn()`` under each backend's switch, ``after()`` following each: [(result, routed counts)]."""
        out = []
        for sw in self.switches:
            sw.reset_counts()
            with sw.enabled():
                r = fn()
            out.append((r, sw.counts()))
            if after is not None:
                after()
        return out

    def time(self, workload, run, per: float = 1.0, sides=None):
        """Each backend's timing fields for ``run()``: torch and every switch in turns (``sides``:
        what stands in for them, torch's first)."""
        rounds, block = ROUNDS[workload]
        rounds, block = self.rounds or rounds, self.block or block
        per_round: list = []
        med = time_in_turns(run, sides or [None, *self.switches], rounds, block, self.sync, per_round)
        q = [tuple(v / per for v in quartiles(r)) for r in per_round]
        return [{"ms": {"torch": med[0] / per, "ours": med[i] / per, "torch_quartiles": q[0], "ours_quartiles": q[i]},
                 "x": med[0] / med[i], "x_quartiles": ratio_quartiles(per_round[0], per_round[i]),
                 "rounds": rounds, "block": block} for i in range(1, len(med))]

    def record(self, workload, shape, unit, timings, checks, routed, backends=None, **extra):
        tol = TOLERANCE[self.dtype]
        for backend, t, c, counts in zip(self.backends if backends is None else backends, timings, checks, routed):
            self.records.append({
                "model": self.arch.name, "size": self.size, "workload": workload, "shape": list(shape),
                "dtype": str(self.dtype).removeprefix("torch."), "backend": backend, "device": self.device_name,
                "unit": unit, **t, **c, "tolerance": tol, "within_tolerance": c["logits_err"]["ours"] <= tol,
                "routed": counts, **extra})

    # ---- the workloads ----
    def prefill(self, shapes=PREFILL_SHAPES) -> list[tuple]:
        """Each shape the model holds; returns the skipped ones with why."""
        skipped = []
        for batch, seq in shapes:
            limit = _positions(self.referee.config)
            if seq > limit:
                skipped.append(((batch, seq), f"longer than the model's {limit} positions"))
                continue
            if batch * seq * self.vocab * 4 > LOGITS_CAP:
                skipped.append(((batch, seq), f"float32 logits over {LOGITS_CAP >> 30} GiB"))
                continue
            ids = self.ids(batch, seq)
            with torch.no_grad():
                ref = self.referee(input_ids=ids).logits
                base = self.model(input_ids=ids).logits
                ours = self.ours(lambda: self.model(input_ids=ids).logits)
                checks = [judge(ref, base, o) for o, _ in ours]
                del ref, base
                routed = [c for _, c in ours]
                del ours
                timings = self.time("prefill", lambda: self.model(input_ids=ids))
            self.record("prefill", (batch, seq), "ms per forward", timings, checks, routed)
        return skipped

    def decode(self, batches=DECODE_BATCHES, new_tokens=NEW_TOKENS):
        """``generate()`` from a prompt of ``PROMPT`` tokens, ``new_tokens`` exactly, greedy: ms per
        token (the prompt's forward pass makes the first). Logits are compared step by step where
        the two generations so far are the same tokens."""
        for batch in batches:
            ids = self.ids(batch, PROMPT)
            mask = torch.ones_like(ids)

            def gen(model, logits=False):
                return model.generate(input_ids=ids, attention_mask=mask, max_new_tokens=new_tokens,
                                      min_new_tokens=new_tokens, do_sample=False, output_logits=logits,
                                      return_dict_in_generate=logits)

            def tokens_logits(model):
                out = gen(model, logits=True)
                return out.sequences[:, PROMPT:], torch.stack(out.logits, dim=1)

            with torch.no_grad():
                ref_t, ref_l = tokens_logits(self.referee)
                base_t, base_l = tokens_logits(self.model)
                checks, routed = [], []
                for (o_t, o_l), counts in self.ours(lambda: tokens_logits(self.model)):
                    masks = (_same_context(base_t, ref_t), _same_context(o_t, ref_t), _same_context(o_t, base_t))
                    c = judge(ref_l, base_l, o_l, masks)
                    c["tokens"] = {
                        "new": [o_t.shape[1], base_t.shape[1], ref_t.shape[1]],  # ours, torch's, referee's
                        "match_torch": 100.0 * (o_t == base_t).float().mean().item(),
                        "match_referee": 100.0 * (o_t == ref_t).float().mean().item(),
                        "torch_match_referee": 100.0 * (base_t == ref_t).float().mean().item(),
                        "compared_steps": 100.0 * masks[1].float().mean().item(),
                    }
                    checks.append(c)
                    routed.append(counts)
                del ref_l, base_l
                timings = self.time("decode", lambda: gen(self.model), per=new_tokens)
            self.record("decode", (batch, PROMPT), "ms per token", timings, checks, routed,
                        new_tokens=new_tokens)

    def decode_graph(self, batches=DECODE_BATCHES, new_tokens=NEW_TOKENS) -> list[tuple]:
        """Greedy decode as CUDA graphs' replays (``_GraphDecode``), a graph for torch and one for
        each backend (captured with its switch on): ms per token of the replays, a prompt of
        ``PROMPT`` tokens; logits judged as ``decode``'s against the referee's ``generate()``.
        Returns what could not run, with why: a model whose step torch cannot capture is skipped;
        a backend whose capture fails gets a record with its error (and no time)."""
        skipped = []
        for batch in batches:
            ids = self.ids(batch, PROMPT)
            with torch.no_grad():
                out = self.referee.generate(input_ids=ids, attention_mask=torch.ones_like(ids), do_sample=False,
                                            max_new_tokens=new_tokens, min_new_tokens=new_tokens,
                                            output_logits=True, return_dict_in_generate=True)
            ref_t, ref_l = out.sequences[:, PROMPT:], torch.stack(out.logits, dim=1)
            try:
                base = _GraphDecode(self.model, ids, new_tokens)
                base.capture()
            except Exception as e:  # (a step that reads the device on the host: a router's nonzero)
                skipped.append(((batch, PROMPT), f"torch's step does not capture ({_error(e)})"))
                continue
            base_t, base_l = base.tokens_logits()
            graphs, checks, routed, done = [base], [], [], []
            for backend, sw in zip(self.backends, self.switches):
                sw.reset_counts()
                try:
                    with sw.enabled():
                        g = _GraphDecode(self.model, ids, new_tokens)
                        g.capture()
                except Exception as e:
                    self.failed("decode_graph", (batch, PROMPT), backend, _error(e), sw.counts())
                    continue
                o_t, o_l = g.tokens_logits()
                masks = (_same_context(base_t, ref_t), _same_context(o_t, ref_t), _same_context(o_t, base_t))
                c = judge(ref_l, base_l, o_l, masks)
                c["tokens"] = {"match_torch": 100.0 * (o_t == base_t).float().mean().item(),
                               "match_referee": 100.0 * (o_t == ref_t).float().mean().item(),
                               "torch_match_referee": 100.0 * (base_t == ref_t).float().mean().item(),
                               "compared_steps": 100.0 * masks[1].float().mean().item()}
                graphs.append(g)
                checks.append(c)
                routed.append(sw.counts())
                done.append(backend)
            del ref_l, base_l
            picked = [0]
            sides = [_Replays(picked, i) for i in range(len(graphs))]
            timings = self.time("decode_graph", lambda: graphs[picked[0]].run(), per=new_tokens - 1, sides=sides)
            self.record("decode_graph", (batch, PROMPT), "ms per token", timings, checks, routed, backends=done,
                        new_tokens=new_tokens, graphs=graphs[0].graph is not None)
            del graphs, base
        return skipped

    def failed(self, workload, shape, backend, error: str, routed):
        """A record of a backend that could not run ``workload`` at ``shape``: its error, no time."""
        self.records.append({
            "model": self.arch.name, "size": self.size, "workload": workload, "shape": list(shape),
            "dtype": str(self.dtype).removeprefix("torch."), "backend": backend, "device": self.device_name,
            "error": error, "x": None, "routed": routed})

    def train(self, shape=None):
        """One forward, backward and SGD update (``bench.model.step``) from the same weights each
        way; the referee's logits and loss are its forward pass."""
        batch, seq = shape or TRAIN_SHAPES[self.size]
        ids = self.ids(batch, seq)
        with torch.no_grad():
            ref = self.referee(input_ids=ids, labels=ids)
        self.model.train()
        state = {k: v.clone() for k, v in self.model.state_dict().items()}
        try:
            base_l, base_loss = step(self.model, ids)
            self.model.load_state_dict(state)
            checks, routed = [], []
            for (o_l, o_loss), counts in self.ours(lambda: step(self.model, ids),
                                                   after=lambda: self.model.load_state_dict(state)):
                c = judge(ref.logits, base_l, o_l)
                c["loss"] = {"referee": ref.loss.item(), "torch": base_loss.item(), "ours": o_loss.item()}
                checks.append(c)
                routed.append(counts)
            del ref, base_l
            timings = self.time("train", lambda: step(self.model, ids))
        finally:
            self.model.load_state_dict(state)
            self.model.eval()
        self.record("train", (batch, seq), "ms per step", timings, checks, routed)


def _positions(config) -> int:
    return getattr(config, "max_position_embeddings", None) or getattr(config, "n_positions")


def run_suite(models=None, workloads=WORKLOADS, dtypes=(torch.bfloat16,), size="small", backends=("triton", "cuda"),
              device="cuda", rounds=None, block=None, prefill_shapes=PREFILL_SHAPES, decode_batches=DECODE_BATCHES,
              new_tokens=NEW_TOKENS, train_shape=None, log=print) -> list[dict]:
    """Every (model, dtype, workload) of the suite: one record per shape and backend. ``rounds`` /
    ``block``: None takes ``ROUNDS``'s per workload. On a CPU ``device`` the switches route
    nothing (they take CUDA tensors), so both sides run torch's kernels: the structure is tested,
    not the speed."""
    records = []
    for name in models or ARCHS:
        arch = ARCHS[name]
        referee = build(arch, size, device)
        for dtype in dtypes:
            run = _Run(arch, size, dtype, referee, backends, device, rounds, block)
            if "prefill" in workloads:
                for shape, why in run.prefill(prefill_shapes):
                    log(f"{name} prefill {shape[0]}x{shape[1]}: skipped, {why}")
            if "decode" in workloads and arch.decodes:
                run.decode(decode_batches, new_tokens)
            if "decode_graph" in workloads and arch.decodes:
                for shape, why in run.decode_graph(decode_batches, new_tokens):
                    log(f"{name} decode_graph {shape[0]}x{shape[1]}: skipped, {why}")
            if "train" in workloads:
                run.train(train_shape)
            for r in run.records:
                log(report(r))
            records += run.records
            del run
        del referee
        if torch.device(device).type == "cuda":
            torch.cuda.empty_cache()
    return records


def report(r: dict) -> str:
    """One line per record."""
    if r.get("error"):
        return (f"{r['model']} {r['workload']} {r['shape'][0]}x{r['shape'][1]} {r['dtype']} {r['backend']}: "
                f"failed, {r['error']}")
    ms, le, am = r["ms"], r["logits_err"], r["argmax_agree"]
    routed = ", ".join(f"{k} {v}" for k, v in sorted(r["routed"].items())) or "none"
    line = (f"{r['model']} {r['workload']} {r['shape'][0]}x{r['shape'][1]} {r['dtype']} {r['backend']}: "
            f"torch {ms['torch']:.3f}, ours {ms['ours']:.3f} {r['unit']} ({r['x']:.2f}x; a round's "
            f"{r['x_quartiles'][0]:.2f}-{r['x_quartiles'][1]:.2f}x) | vs float32: err torch {le['torch']:.1e}, "
            f"ours {le['ours']:.1e} (tol {r['tolerance']:.0e}), argmax torch {am['torch']:.1f}%, "
            f"ours {am['ours']:.1f}%")
    if "tokens" in r:
        tk = r["tokens"]
        line += f" | tokens = torch's {tk['match_torch']:.1f}%, = referee's {tk['match_referee']:.1f}%"
    if "loss" in r:
        line += f" | loss {r['loss']['referee']:.4f} / {r['loss']['torch']:.4f} / {r['loss']['ours']:.4f}"
    return line + f" | routed: {routed}"
