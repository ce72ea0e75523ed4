"""Shapes drawn from a workload, not a fixed list: the ``dense`` size set of each algorithm.

A default that is fitted to a benchmark's own points reads 1.0x there and less one step away, so
targets are stated on draws: shapes sampled from the distribution a user's program meets, a seed
in the results' meta, and the ratios summarized as their geometric mean, 10th percentile and
worst (``summarize``).

- matmul: (M, N, K) with (N, K) a layer of a public model (``MODELS``: the projections of each
  model's config, its LM head, its experts) and M, the tokens of a step, log-uniform from 1 to
  16384.
- gemv: (M, K) from the same layers (a decode step's product with one token) and LM heads, and
  log-uniform M and K, some with a short K (64 to 1024) under a tall M.
- transpose: (R, C) with R and C log-uniform from 1 to 2^17, a share with one side from 1 to 16
  (point clouds, channel-first images of a few channels), a share batched (B, R, C).
- ``lora`` (matmul, addmm): the products a low-rank adapter adds beside a layer (N, K): its down
  projection (M, r, K) and its up projection (M, N, r), rank r from 4 to 256. A short K or a short N
  that no model weight has (``dense`` draws K and N from the weights only).
Drawn extents keep each operand within ``MAX_ELEMENTS`` (a GPU holds every shape a draw makes).
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass


@dataclass(frozen=True)
class Model:
    """The extents of one model's linear layers, as its Hugging Face ``config.json`` gives them
    (``source``: the model's id there). ``q`` / ``kv``: the widths of the query and of each of the
    key and value projections (heads x head size); ``fused_qkv`` / ``fused_gate_up``: one weight
    for q, k and v (GPT-2's ``c_attn``, Phi-3's ``qkv_proj``) or for the MLP's gate and up;
    ``gated``: a gated MLP (gate, up and down) rather than up and down; ``extra``: layers outside
    that pattern, as (N, K)."""
    source: str
    hidden: int
    intermediate: int
    q: int
    kv: int
    vocab: int
    gated: bool = True
    fused_qkv: bool = False
    fused_gate_up: bool = False
    extra: tuple = ()

    def layers(self) -> tuple[tuple[int, int], ...]:
        """The (N, K) of each distinct weight: out features N, in features K (``nn.Linear``'s (N, K)).
        Serving engines (vLLM, SGLang) fuse q, k and v, and a gated MLP's gate and up, into one
        weight each: those fused shapes are layers too."""
        h, i = self.hidden, self.intermediate
        fused_qkv = [(self.q + 2 * self.kv, h)] if self.q else []
        attention = fused_qkv if self.fused_qkv else [(self.q, h), (self.kv, h), *fused_qkv]
        mlp_in = [(2 * i, h)] if self.fused_gate_up else [(i, h)] + ([(2 * i, h)] if self.gated else [])
        shapes = [*attention, (h, self.q), *mlp_in, (h, i), (self.vocab, h), *self.extra]
        return tuple(dict.fromkeys((n, k) for n, k in shapes if n and k))  # (in order, once each)


# Fifteen families, from 0.5 B to 671 B parameters; the LM heads 30522, 32000, 32064, 32768,
# 50257, 128256, 129280, 151936, 152064 and 256000.
MODELS = (
    Model("meta-llama/Llama-2-7b-hf", 4096, 11008, 4096, 4096, 32000),
    Model("meta-llama/Llama-2-13b-hf", 5120, 13824, 5120, 5120, 32000),
    Model("meta-llama/Llama-2-70b-hf", 8192, 28672, 8192, 1024, 32000),
    Model("meta-llama/Meta-Llama-3-8B", 4096, 14336, 4096, 1024, 128256),
    Model("meta-llama/Meta-Llama-3-70B", 8192, 28672, 8192, 1024, 128256),
    Model("mistralai/Mistral-7B-v0.1", 4096, 14336, 4096, 1024, 32000),
    Model("mistralai/Mixtral-8x7B-v0.1", 4096, 14336, 4096, 1024, 32000),     # each expert's MLP
    Model("mistralai/Mixtral-8x22B-v0.1", 6144, 16384, 6144, 1024, 32768),
    Model("Qwen/Qwen2.5-0.5B", 896, 4864, 896, 128, 151936),
    Model("Qwen/Qwen2.5-1.5B", 1536, 8960, 1536, 256, 151936),
    Model("Qwen/Qwen2.5-7B", 3584, 18944, 3584, 512, 152064),
    Model("Qwen/Qwen2.5-14B", 5120, 13824, 5120, 1024, 152064),
    Model("Qwen/Qwen2.5-32B", 5120, 27648, 5120, 1024, 152064),
    Model("Qwen/Qwen2.5-72B", 8192, 29568, 8192, 1024, 152064),
    Model("google/gemma-2-2b", 2304, 9216, 8 * 256, 4 * 256, 256000),
    Model("google/gemma-2-9b", 3584, 14336, 16 * 256, 8 * 256, 256000),
    Model("google/gemma-2-27b", 4608, 36864, 32 * 128, 16 * 128, 256000),
    Model("microsoft/Phi-3-mini-4k-instruct", 3072, 8192, 3072, 3072, 32064, fused_qkv=True,
          fused_gate_up=True),
    Model("microsoft/Phi-3-medium-4k-instruct", 5120, 17920, 5120, 1280, 32064, fused_qkv=True,
          fused_gate_up=True),
    Model("openai-community/gpt2", 768, 3072, 768, 768, 50257, gated=False, fused_qkv=True),
    Model("openai-community/gpt2-xl", 1600, 6400, 1600, 1600, 50257, gated=False, fused_qkv=True),
    Model("google-bert/bert-base-uncased", 768, 3072, 768, 768, 30522, gated=False),
    Model("google-bert/bert-large-uncased", 1024, 4096, 1024, 1024, 30522, gated=False),
    # multi-head latent attention (no plain q / k / v: q_lora_rank 1536, kv_lora_rank 512, 128 heads
    # of 128 + 64 rope; o_proj from 128 x 128) and the MoE experts' MLP (moe_intermediate_size 2048);
    # intermediate: the dense layers' MLP
    Model("deepseek-ai/DeepSeek-V3", 7168, 18432, 0, 0, 129280,
          extra=((1536, 7168), (128 * 192, 1536), (512 + 64, 7168), (128 * 256, 512), (7168, 128 * 128),
                 (2048, 7168), (7168, 2048))),
)


def layer_shapes() -> tuple[tuple[int, int], ...]:
    """Every distinct (N, K) of ``MODELS``' layers, sorted."""
    return tuple(sorted({shape for m in MODELS for shape in m.layers()}))


MAX_ELEMENTS = 1 << 30  # of a drawn operand (4 GiB of float32; a weight is as its model has it)
MAX_M = 1 << 14


def log_uniform(rng: random.Random, lo: int, hi: int) -> int:
    """An int in [lo, hi], its logarithm uniform: every octave as likely, odd values included."""
    return min(hi, max(lo, int(math.exp(rng.uniform(math.log(lo), math.log(hi + 1))))))


def draw_matmul(count: int, seed: int) -> tuple[tuple[int, int, int], ...]:
    """``count`` shapes (M, N, K): a model layer's (N, K), M log-uniform from 1 to 16384 (capped
    where a or c would pass MAX_ELEMENTS)."""
    rng = random.Random(seed)
    layers = layer_shapes()
    return tuple((_tokens(rng, n, k), n, k) for n, k in (rng.choice(layers) for _ in range(count)))


def _tokens(rng: random.Random, n: int, k: int) -> int:
    """M of a drawn product of an (N, K) weight: log-uniform from 1 to MAX_M, a and c within MAX_ELEMENTS."""
    return log_uniform(rng, 1, min(MAX_M, MAX_ELEMENTS // max(n, k)))


def draw_gemv(count: int, seed: int) -> tuple[tuple[int, int], ...]:
    """``count`` shapes (M, K): half a model layer's (N, K) (a decode step with one token: LM heads
    included), a quarter log-uniform M and K from 1 to 2^17, a quarter a tall M (2^14 to 2^18) over
    a short K (64 to 1024)."""
    rng = random.Random(seed)
    layers = layer_shapes()
    shapes = []
    for _ in range(count):
        kind = rng.random()
        if kind < 0.5:
            m, k = rng.choice(layers)
        elif kind < 0.75:
            m = log_uniform(rng, 1, 1 << 17)
            k = log_uniform(rng, 1, min(1 << 17, MAX_ELEMENTS // m))
        else:
            m, k = log_uniform(rng, 1 << 14, 1 << 18), log_uniform(rng, 64, 1024)
        shapes.append((m, k))
    return tuple(shapes)


def draw_transpose(count: int, seed: int) -> tuple[tuple[int, ...], ...]:
    """``count`` shapes: (R, C) log-uniform from 1 to 2^17 (60%), one side 1 to 16 and the other up
    to 2^22 (20%), or a batch (B, R, C) of B from 2 to 64 (20%); each within MAX_ELEMENTS."""
    rng = random.Random(seed)
    shapes: list[tuple[int, ...]] = []
    for _ in range(count):
        kind = rng.random()
        if kind < 0.6:
            r = log_uniform(rng, 1, 1 << 17)
            shape: tuple[int, ...] = (r, log_uniform(rng, 1, min(1 << 17, MAX_ELEMENTS // r)))
        elif kind < 0.8:
            narrow, wide = rng.randint(1, 16), log_uniform(rng, 1, 1 << 22)
            shape = (narrow, wide) if rng.random() < 0.5 else (wide, narrow)
        else:
            b = log_uniform(rng, 2, 64)
            r = log_uniform(rng, 1, 1 << 12)
            shape = (b, r, log_uniform(rng, 1, min(1 << 12, MAX_ELEMENTS // (b * r))))
        shapes.append(shape)
    return tuple(shapes)


LORA_RANKS = (4, 8, 16, 32, 64, 128, 256)  # (PEFT's LoraConfig r: 8 by default, 16-64 common)


def draw_lora(count: int, seed: int) -> tuple[tuple[int, int, int], ...]:
    """``count`` shapes (M, N, K) of a low-rank adapter on a model layer (N, K): half its down
    projection (M, r, K), half its up projection (M, N, r), r one of ``LORA_RANKS``, M log-uniform
    from 1 to 16384 as ``draw_matmul``'s."""
    rng = random.Random(seed)
    layers = layer_shapes()
    shapes = []
    for _ in range(count):
        (n, k), r = rng.choice(layers), rng.choice(LORA_RANKS)
        n, k = (r, k) if rng.random() < 0.5 else (n, r)
        shapes.append((_tokens(rng, n, k), n, k))
    return tuple(shapes)


DRAWS = {"matmul": draw_matmul, "addmm": draw_matmul, "scaled_mm": draw_matmul, "gemv": draw_gemv,
         "transpose": draw_transpose}
# Drawn size sets by name (compare's --size-set NAME --seed N): each algorithm's workload, and the
# adapters' products of matmul
DRAWN_SETS = {"dense": DRAWS, "lora": {"matmul": draw_lora, "addmm": draw_lora}}
DRAW_COUNT = 200  # shapes a draw takes by default


def summarize(ratios) -> dict:
    """The geometric mean, the 10th percentile (nearest rank) and the worst of positive ratios
    (ours over torch's speed: above 1 is faster), with how many there were; {} for none."""
    xs = sorted(r for r in ratios if r > 0 and math.isfinite(r))
    if not xs:
        return {}
    return {"n": len(xs), "geomean": math.exp(sum(map(math.log, xs)) / len(xs)),
            "p10": xs[max(0, math.ceil(0.1 * len(xs)) - 1)], "worst": xs[0]}
