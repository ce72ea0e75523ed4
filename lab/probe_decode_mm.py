"""Which products of a decode step lose under CUDA graphs: each distinct mm / addmm / bmm call of one
step of a suite model's graph decode (``bench.models``), replayed alone in a CUDA graph, torch's
kernel against each backend's switch.

One greedy step at ``--batch`` sequences is run eagerly with torch's kernels while a dispatch mode
records each product's operands (shape, strides, dtype). Each distinct call is then captured in a
graph that calls it on enough copies of its operands that they pass L2 (as a step's weights do,
layer after layer), once with the switch off and once with each backend's on; the replays are
timed in turns (CUDA events, the median of rounds). ``--variant BACKEND:NAME`` (repeatable) also
times that variant called by name on each 2-D product (where it takes the call): the plans a
rule would choose between. Prints each call's us per call, the ratio to torch, its count in a step
and the step's total over the products, and writes JSON.

Usage (GPU): PYTHONPATH=. python lab/probe_decode_mm.py [--model llama] [--batch 64] [--dtype bfloat16]
    [--backend triton --backend cuda] [--variant cuda:few_rows_mma ...] [--json F]
"""

from __future__ import annotations

import argparse
import collections
import importlib
import json
import statistics

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from bench import models as bm

OPS = {torch.ops.aten.mm.default: "mm", torch.ops.aten.addmm.default: "addmm", torch.ops.aten.bmm.default: "bmm"}
PAST_L2_BYTES = 160 << 20  # a call's copies of its operands together pass this (H100 / H200 L2: 50-60 MB)


class _Record(TorchDispatchMode):
    def __init__(self):
        super().__init__()
        self.calls = collections.Counter()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func in OPS:
            sig = tuple((tuple(t.shape), tuple(t.stride()), str(t.dtype).split(".")[-1]) if isinstance(t, torch.Tensor)
                        else t for t in args)
            self.calls[(OPS[func], sig, tuple(sorted(kwargs.items())))] += 1
        return func(*args, **kwargs)


def _operands(sig, copies: int):
    out = []
    for _ in range(copies):
        args = []
        for item in sig:
            if isinstance(item, tuple) and len(item) == 3 and isinstance(item[0], tuple):
                shape, stride, dtype = item
                size = 1 + sum((n - 1) * s for n, s in zip(shape, stride)) if all(shape) else 0
                base = torch.randn(size, device="cuda").to(getattr(torch, dtype))
                args.append(base.as_strided(shape, stride))
            else:
                args.append(item)
        out.append(args)
    return out


def _graph(fn, operands, kwargs):
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for args in operands:  # plans made, kernels compiled outside the capture
            fn(*args, **kwargs)
    torch.cuda.current_stream().wait_stream(side)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for args in operands:
            fn(*args, **kwargs)
    return g


def _time(graphs: list, rounds: int = 30) -> list[float]:
    """Median ms of one replay of each graph, replays taken in turns."""
    times = [[] for _ in graphs]
    for g in graphs:
        g.replay()
    torch.cuda.synchronize()
    for _ in range(rounds):
        for i, g in enumerate(graphs):
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            g.replay()
            end.record()
            end.synchronize()
            times[i].append(start.elapsed_time(end))
    return [statistics.median(t) for t in times]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", default="llama")
    p.add_argument("--size", default="small")
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--dtype", default="bfloat16")
    p.add_argument("--backend", action="append", choices=("triton", "cuda"))
    p.add_argument("--variant", action="append", default=[], metavar="BACKEND:NAME",
                   help="also time this variant by name on each 2-D product, e.g. cuda:few_rows_mma")
    p.add_argument("--json")
    args = p.parse_args()
    backends = args.backend or ["triton", "cuda"]
    dtype = getattr(torch, args.dtype)
    arch = bm.ARCHS[args.model]
    model = bm.build(arch, args.size).to(dtype)
    ids = torch.randint(0, model.config.vocab_size, (args.batch, bm.PROMPT), device="cuda")
    dec = bm._GraphDecode(model, ids, 4)
    dec.reset()
    rec = _Record()
    with rec:
        dec._step()
    switches = [bm.backend_switch(b) for b in backends]
    rows = []
    for (op, sig, kw), count in sorted(rec.calls.items(), key=lambda kv: -kv[1]):
        nbytes = sum(torch.empty(0, dtype=getattr(torch, s[2])).element_size() * (1 + sum((n - 1) * st for n, st in zip(s[0], s[1])))
                     for s in sig if isinstance(s, tuple) and len(s) == 3 and isinstance(s[0], tuple))
        copies = max(1, min(64, -(-PAST_L2_BYTES // max(nbytes, 1))))
        operands = _operands(sig, copies)
        fn = getattr(torch, op)
        graphs = [_graph(fn, operands, dict(kw))]
        for sw in switches:
            with sw.enabled():
                graphs.append(_graph(fn, operands, dict(kw)))
        forced = {}  # "backend:variant": its graph, where the variant takes the product
        for name in args.variant if op == "mm" else ():
            lib = importlib.import_module({"triton": "triton_impl", "cuda": "cuda_ref"}[name.split(":")[0]])
            call = lambda a, b, v=name.split(":")[1], lib=lib: lib.matmul(a, b, variant=v)
            try:
                forced[name] = _graph(call, operands, {})
            except (TypeError, ValueError, RuntimeError) as e:
                print(f"      {name}: not run ({type(e).__name__}: {str(e)[:100]})")
        ms = _time(graphs + list(forced.values()))
        us = [1e3 * t / copies for t in ms]
        row = dict(op=op, operands=[list(s[0]) if isinstance(s, tuple) and len(s) == 3 else s for s in sig],
                   strides=[list(s[1]) if isinstance(s, tuple) and len(s) == 3 else None for s in sig],
                   count=count, copies=copies, torch_us=us[0], **{f"{b}_us": u for b, u in zip(backends, us[1:])},
                   forced_us=dict(zip(forced, us[1 + len(backends):])))
        prod = operands[0][1:3] if op == "addmm" else operands[0][:2]
        for b in backends:  # (what the backend's variant=None runs for the product, its bias aside)
            try:
                row[f"{b}_plan"] = importlib.import_module({"triton": "triton_impl", "cuda": "cuda_ref"}[b]).describe("matmul", *prod)
            except (TypeError, ValueError) as e:
                row[f"{b}_plan"] = f"refused: {e}"[:120]
        rows.append(row)
        shapes = " x ".join(f"{tuple(s[0])}{'' if s[1][-1] == 1 else ' (cols strided)'}" for s in sig
                            if isinstance(s, tuple) and len(s) == 3)
        print(f"{op:5s} {shapes:48s} x{count:3d}  torch {us[0]:7.2f} us  "
              + "  ".join(f"{b} {u:7.2f} ({us[0] / u:.2f}x)" for b, u in zip(backends, us[1:])), flush=True)
        for b in backends:
            print(f"      {b}: {row[f'{b}_plan']}")
        for name, u in row["forced_us"].items():
            lib = importlib.import_module({"triton": "triton_impl", "cuda": "cuda_ref"}[name.split(":")[0]])
            plan = lib.describe("matmul", *operands[0][:2], variant=name.split(":")[1])
            print(f"      {name:24s} {u:7.2f} us ({us[0] / u:.2f}x)  {plan}")
    tot = {k: sum(r[f"{k}_us"] * r["count"] for r in rows) for k in ["torch", *backends]}
    print("step's products: " + ", ".join(f"{k} {v:.1f} us" for k, v in tot.items())
          + "; x torch: " + ", ".join(f"{b} {tot['torch'] / tot[b]:.3f}" for b in backends))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(dict(model=args.model, size=args.size, batch=args.batch, dtype=args.dtype,
                           device=torch.cuda.get_device_name(), rows=rows, totals_us=tot), f, indent=1)


if __name__ == "__main__":
    main()
