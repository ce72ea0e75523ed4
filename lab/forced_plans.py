"""What the sweeps that force a CUDA variant's plan share (``sweep_swap_tiles.py``,
``sweep_ws_stream_k.py``): the shapes (given, or drawn from the workload and kept by a test), the
operands in a layout, and each forced plan checked against torch and timed beside torch and the
default, flushed in turns and back to back.
"""

from __future__ import annotations

import argparse
import json

import torch

import cuda_ref
from bench.timing import time_interleaved, time_loops
from bench.workloads import draw_matmul
from cuda_ref import _matmul as cm


def parser(doc: str, seed: int, rows) -> argparse.ArgumentParser:
    """The options every such sweep takes: the draw's seed, how many shapes, their rows, b's layout,
    shapes given instead, and the JSON written."""
    p = argparse.ArgumentParser(description=doc.splitlines()[0])
    p.add_argument("--seed", type=int, default=seed)
    p.add_argument("--count", type=int, default=40)
    p.add_argument("--rows", type=int, nargs=2, default=rows)
    p.add_argument("--layout", default="wt", choices=("wt", "row"))
    p.add_argument("--shapes", type=int, nargs="+", metavar="M N K")
    p.add_argument("--json")
    return p


def shapes_of(given, seed: int, count: int, rows, max_mnk: float, keep) -> list:
    """``given`` (M N K ...) as triples, else up to ``count`` drawn shapes of ``rows`` rows and at
    most ``max_mnk`` multiply-adds for which ``keep(M, N, K, a, b)`` holds (a, b: empty bf16 operands,
    b = W.t())."""
    if given:
        return [tuple(given[i:i + 3]) for i in range(0, len(given) - 2, 3)]
    shapes = []
    for M, N, K in draw_matmul(4000, seed):
        if len(shapes) >= count or not (rows[0] <= M <= rows[1] and M * N * K <= max_mnk):
            continue
        a = torch.empty(M, K, device="cuda", dtype=torch.bfloat16)
        b = torch.empty(N, K, device="cuda", dtype=torch.bfloat16).t()
        if keep(M, N, K, a, b):
            shapes.append((M, N, K))
    return shapes


def operands(M: int, N: int, K: int, layout: str, dtype=torch.bfloat16):
    """Random a (M, K) and b (K, N), bf16 unless told: W.t() of an (N, K) W ("wt") or row-major ("row")."""
    a = torch.randn(M, K, device="cuda", dtype=dtype)
    b = torch.randn(N, K, device="cuda", dtype=dtype).t() if layout == "wt" else \
        torch.randn(K, N, device="cuda", dtype=dtype)
    return a, b


def time_arms(a, b, arms: dict, rep_ms: float) -> tuple[dict, dict]:
    """Torch, the default and each of ``arms`` ({name: a call returning c}; each result checked
    against torch's), timed flushed in turns and back to back: ({name: median ms}, {name: ms a call
    in a loop}). The default's name is "default " and its description."""
    ref = torch.mm(a, b).float()
    for name, fn in arms.items():
        err = ((fn().float() - ref).abs().max() / ref.abs().max()).item()
        assert err < 2e-2, (tuple(a.shape), b.shape[1], name, err)
    names = ["torch", "default " + cm.describe(a, b), *arms]
    fns = [lambda: torch.mm(a, b), lambda: cuda_ref.matmul(a, b), *arms.values()]
    times = time_interleaved(fns, warmup_ms=10, rep_ms=rep_ms)
    ms = {n: t.median_ms for n, t in zip(names, times)}
    loop_ms = dict(zip(names, time_loops(fns, calls=[50] * len(fns), reps=5)))
    return ms, loop_ms


def time_forced(variant: str, a, b, plans: dict, force, rep_ms: float) -> tuple[dict, dict]:
    """``time_arms`` of ``variant`` under each of ``plans`` ({name: what ``force`` takes}), each arm
    its forced plan launched as planned."""
    arms = {}
    for name, plan in plans.items():
        force(plan)
        cuda_ref.matmul(a, b, variant=variant)  # (its plan made under the forced rule)
        planned = cm._PLANS.get((a, b), variant, None)
        arms[name] = lambda planned=planned: cm._PLANS.launch(planned, (a, b), None)
    force(None)
    return time_arms(a, b, arms, rep_ms)


def write_rows(args, doc: str, rows: list) -> None:
    """The sweep's rows so far to ``args.json`` (each shape rewrites it: a cut run keeps its rows)."""
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"device": torch.cuda.get_device_name(), "seed": getattr(args, "seed", None),
                       "layout": args.layout, "what": doc.splitlines()[0], "rows": rows}, f, indent=1)
