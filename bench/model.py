"""``python -m bench model``: a decoder from Hugging Face ``transformers`` (a Llama built from its
config, random weights), a forward pass and a training step with a backend's switch off and on:
logits and loss side by side, how many of the model's mm / addmm / mv calls went to our kernels,
and the step time of each (``python -m bench model --llama-step``). The suite of architectures and
workloads is ``bench/models.py``; ``time_in_turns`` here times all of them."""

from __future__ import annotations

import contextlib
import importlib
import statistics
import time

import torch

# Llama-style configs: "small" runs in seconds (its matmuls take a few microseconds each, so a
# call's host time shows), "medium" has the hidden size of a 1B-class model and 4096 tokens a step
CONFIGS = {
    "small": dict(hidden_size=1024, intermediate_size=2816, num_hidden_layers=4, num_attention_heads=16,
                  num_key_value_heads=8, vocab_size=32000, max_position_embeddings=512),
    "medium": dict(hidden_size=2048, intermediate_size=5632, num_hidden_layers=4, num_attention_heads=16,
                   num_key_value_heads=8, vocab_size=32000, max_position_embeddings=2048),
}
BATCH = {"small": (4, 256), "medium": (4, 1024)}


def build(dtype, size: str = "small", seed: int = 0):
    """The model (train mode) and a batch of input ids (the labels too)."""
    import transformers

    torch.manual_seed(seed)
    config = transformers.LlamaConfig(**CONFIGS[size])
    model = transformers.LlamaForCausalLM(config).to("cuda", dtype)
    ids = torch.randint(0, config.vocab_size, BATCH[size], device="cuda")
    return model, ids


def step(model, ids, lr: float = 1e-3):
    """One forward and backward pass and an SGD update; returns (logits, loss)."""
    model.zero_grad(set_to_none=True)
    out = model(input_ids=ids, labels=ids)
    out.loss.backward()
    with torch.no_grad():
        for p in model.parameters():
            if p.grad is not None:
                p.add_(p.grad, alpha=-lr)
    return out.logits.detach(), out.loss.detach()


def passthrough():
    """A switch that takes no dtype: its Python kernels hand every call back to torch's own (through
    the op's ``out=`` overload). Its step time is what the dispatcher's call into Python and back
    costs with torch's kernel behind it. (A switch that launches nothing at all ran the small step
    1.03-1.11x torch's: the call into Python alone costs less than torch's ``mm`` on the host;
    docs/decisions/005-switch-fast-table.md.)"""
    from kernel_common.switch import Switch
    return Switch("passthrough", None, None, dtypes=())


def time_in_turns(run, switches, rounds: int = 40, block: int = 5, sync=torch.cuda.synchronize,
                  per_round: list | None = None) -> list[float]:
    """Milliseconds per call of ``run()`` (a closure: the timed work, its inputs prepared outside)
    under each of ``switches`` (None: torch's own kernels), the median of ``rounds * block`` calls
    each. A switch stays on for a block of calls, as a program leaves it on, and the first call
    after it is switched is not timed. The switches take turns block by block, each round starting
    from the next one, so a drift of the host's speed falls on all alike: a small model's step is
    host-bound, and on a shared host one phase timed after the other moved by 10-30% between runs;
    timed a step each in turns instead, 50 steps, the same tree read 0.92-0.96x between runs
    (docs/decisions/002-timing-in-turns.md). ``sync``: waits for the device (a no-op on CPU).
    ``per_round``: a list to receive each switch's median call of each round (its spread shows how
    far one run's ratio can be trusted)."""
    times = [[[] for _ in range(rounds)] for _ in switches]  # [switch][round]: the block's calls
    for r in range(rounds):
        for j in range(len(switches)):
            i = (r + j) % len(switches)
            with switches[i].enabled() if switches[i] is not None else contextlib.nullcontext():
                for k in range(block + 1):
                    sync()
                    t0 = time.perf_counter()
                    run()
                    sync()
                    if k:
                        times[i][r].append((time.perf_counter() - t0) * 1e3)
    if per_round is not None:
        per_round[:] = [[statistics.median(block_ms) for block_ms in t] for t in times]
    return [statistics.median(ms for block_ms in t for ms in block_ms) for t in times]


def time_steps(model, ids, switches, rounds: int = 40, block: int = 5, per_round: list | None = None) -> list[float]:
    """Milliseconds per training step under each of ``switches``, in turns (``time_in_turns``); the
    model's weights are put back afterwards."""
    state = {k: v.clone() for k, v in model.state_dict().items()}
    try:
        return time_in_turns(lambda: step(model, ids), switches, rounds, block, per_round=per_round)
    finally:
        model.load_state_dict(state)


def ratio_quartiles(torch_rounds: list[float], ours_rounds: list[float]) -> tuple[float, float]:
    """The first and third quartiles of torch's time over ours, round by round."""
    return quartiles([t / o for t, o in zip(torch_rounds, ours_rounds)])


def quartiles(values: list[float]) -> tuple[float, float]:
    """The first and third quartiles, within the values' range (one value: itself, twice)."""
    if len(values) < 2:
        return values[0], values[0]
    q = statistics.quantiles(values, n=4, method="inclusive")
    return q[0], q[2]


def compare(backend: str = "triton", dtype=torch.bfloat16, size: str = "small") -> dict:
    """Logits, loss, routed calls and step times with ``backend``'s switch off and on."""
    mod = importlib.import_module({"triton": "triton_impl", "cuda": "cuda_ref"}[backend])
    model, ids = build(dtype, size)
    state = {k: v.clone() for k, v in model.state_dict().items()}
    logits_off, loss_off = step(model, ids)
    model.load_state_dict(state)
    mod.switch.reset_counts()
    with mod.enabled():
        logits_on, loss_on = step(model, ids)
        counts = mod.routed()
    model.load_state_dict(state)
    rounds: list = []
    ms_off, ms_floor, ms_on = time_steps(model, ids, [None, passthrough(), mod.switch], per_round=rounds)
    scale = logits_off.float().abs().max().item()
    return {
        "backend": backend, "dtype": str(dtype).removeprefix("torch."), "size": size, "config": CONFIGS[size],
        "batch": list(ids.shape), "loss_off": loss_off.item(), "loss_on": loss_on.item(),
        "logits_max_rel_diff": (logits_on.float() - logits_off.float()).abs().max().item() / scale,
        "routed": counts, "step_ms_off": ms_off, "step_ms_on": ms_on, "x_step": ms_off / ms_on,
        "x_step_quartiles": ratio_quartiles(rounds[0], rounds[2]),
        "step_ms_passthrough": ms_floor, "x_step_passthrough": ms_off / ms_floor,
        "device": torch.cuda.get_device_name(),
    }


def report(r: dict) -> str:
    routed = ", ".join(f"{k} {v}" for k, v in sorted(r["routed"].items()))
    return (f"{r['device']}, Llama ({r['config']['num_hidden_layers']} layers, hidden {r['config']['hidden_size']}), "
            f"{r['dtype']}, batch {r['batch'][0]} x {r['batch'][1]}, backend {r['backend']}\n"
            f"  loss: torch {r['loss_off']:.5f}, ours {r['loss_on']:.5f}; logits max diff "
            f"{r['logits_max_rel_diff']:.2e} of max |logit|\n"
            f"  calls routed in one training step: {routed}\n"
            f"  training step: torch {r['step_ms_off']:.2f} ms, ours {r['step_ms_on']:.2f} ms ({r['x_step']:.2f}x; "
            f"a round's {r['x_step_quartiles'][0]:.2f}-{r['x_step_quartiles'][1]:.2f}x, quartiles); "
            f"a pass-through switch (every call back to torch) {r['step_ms_passthrough']:.2f} ms "
            f"({r['x_step_passthrough']:.2f}x)")
