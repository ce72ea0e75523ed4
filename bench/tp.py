"""A model that outgrows one GPU: the suite's Llama in tensor parallel over the ranks of a
``torchrun``, the switch on in each rank (issue 53).

Each rank builds the same float32 weights (one seed). The attention's q, k and v and the MLP's gate
and up run column-parallel, o and down row-parallel: torch's tensor-parallel API, with one DTensor
shard of each weight a rank and an all-reduce after each row-parallel product. A rank's local
products reach ``aten::mm`` on its own GPU, where the switch routes them. The logits are judged as
``bench model`` judges them, against the float32 referee on one device. torch's kernels in the same
split run beside them, so that the split's own rounding is known.

Usage (a GPU a rank; on a machine without GPUs the ranks run on the CPU through gloo, and only
torch's kernels run: the switch takes CUDA tensors):
    torchrun --nproc-per-node 2 -m bench.tp [--backend triton cuda] [--dtype bfloat16] [--size small] [--json FILE]
"""

from __future__ import annotations

import argparse
import copy
import json

import torch
import torch.distributed as dist

from bench import models

# torch's tensor-parallel plan of a Llama layer: column-parallel in, row-parallel out
ATTENTION_PLAN = {"q_proj": "colwise", "k_proj": "colwise", "v_proj": "colwise", "o_proj": "rowwise"}
MLP_PLAN = {"gate_proj": "colwise", "up_proj": "colwise", "down_proj": "rowwise"}
SHAPE = {"tiny": (2, 16), "small": (2, 128)}  # (batch, tokens) of the prefill judged


def shard(model, mesh):
    """``model``'s layers split over ``mesh`` in place (``ATTENTION_PLAN``, ``MLP_PLAN``); the
    heads a rank holds follow from its shard (the attention reshapes with -1 heads)."""
    from torch.distributed.tensor.parallel import ColwiseParallel, RowwiseParallel, parallelize_module

    styles = {"colwise": ColwiseParallel, "rowwise": RowwiseParallel}
    for layer in model.model.layers:
        for module, plan in ((layer.self_attn, ATTENTION_PLAN), (layer.mlp, MLP_PLAN)):
            parallelize_module(module, mesh, {name: styles[style]() for name, style in plan.items()})
    return model


def run(backends, dtype, size: str, seed: int = 0) -> dict:
    """This rank's part: the logits of one prefill, judged. Returns rank 0's record (others: {})."""
    from torch.distributed.device_mesh import init_device_mesh

    rank, world = dist.get_rank(), dist.get_world_size()
    cuda = torch.cuda.is_available()
    device = torch.device("cuda", rank % torch.cuda.device_count()) if cuda else torch.device("cpu")
    if cuda:
        torch.cuda.set_device(device)
    arch = models.ARCHS["llama"]
    referee = models.build(arch, size, device, seed)
    config = referee.config
    if config.num_key_value_heads % world or config.intermediate_size % world:
        raise ValueError(f"{world} ranks do not divide {config.num_key_value_heads} key-value heads and an "
                         f"intermediate size of {config.intermediate_size}")
    batch, seq = SHAPE.get(size, (2, 512))
    g = torch.Generator(device=device).manual_seed(seed + 1)
    ids = torch.randint(1, config.vocab_size, (batch, seq), device=device, generator=g)
    with torch.no_grad():
        ref = referee(ids).logits
        one = copy.deepcopy(referee).to(dtype)(ids).logits  # torch's kernels, one device, the dtype
        split = shard(copy.deepcopy(referee).to(dtype), init_device_mesh(device.type, (world,)))
        torch_split = split(ids).logits
        ours, routed = {}, {}
        for name in backends if cuda else ():
            switch = models.backend_switch(name)
            switch.reset_counts()
            with switch.enabled():
                ours[name] = split(ids).logits
            routed[name] = switch.counts()
    if rank:
        return {}
    scale = ref.float().abs().max().item() or 1.0  # (as models.judge scales: the referee's largest)
    record = {"model": arch.name, "size": size, "dtype": str(dtype).removeprefix("torch."), "ranks": world,
              "shape": [batch, seq], "device": torch.cuda.get_device_name(device) if cuda else "cpu",
              "tolerance": models.TOLERANCE[dtype],
              "one_device": models.logits_err(one, ref, scale),
              "split_torch": models.logits_err(torch_split, ref, scale),
              "split_vs_one_device": models.logits_err(torch_split, one, scale),
              "backends": {name: dict(models.judge(ref, torch_split, logits), routed=routed[name])
                           for name, logits in ours.items()}}
    return record


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--backend", nargs="+", default=["triton", "cuda"], choices=("triton", "cuda"))
    p.add_argument("--dtype", default="bfloat16", choices=("float16", "bfloat16", "float32"))
    p.add_argument("--size", default="small", choices=("tiny", "small", "medium"))
    p.add_argument("--json", help="rank 0 writes its record here")
    args = p.parse_args(argv)
    dist.init_process_group("nccl" if torch.cuda.is_available() else "gloo")
    try:
        record = run(args.backend, getattr(torch, args.dtype), args.size)
        # both ranks done before either tears its group down: on gloo a rank that left first once
        # aborted the other ("terminate called without an active exception", a CPU CI run)
        dist.barrier()
    finally:
        dist.destroy_process_group()
    if record:
        print(json.dumps(record, indent=1))
        if args.json:
            with open(args.json, "w") as f:
                json.dump(record, f, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
