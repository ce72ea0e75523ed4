"""CUDA FP8 (cuda_ref.scaled_mm) forced into each plan it can make, against Triton's and torch's;
Triton's ws_fp8 (Gluon, the same design) in each of its plans (``WS_PLANS``) beside them.

Per shape (e4m3, b = W.t(), per-tensor scales, bfloat16 c): cuda_ref.scaled_mm in each plan of
``PLANS`` (its blocks alone or in pairs, tiles of 128 or 192 columns, two or three consumer
warpgroups: ``cluster_of``, ``tile_n`` and ``consumers`` forced), each slice promoted or chained
(``use_fast_accum``),
triton_impl.scaled_mm both ways, torch._scaled_mm both ways; L2 flushed, in turns
(``bench.timing.time_interleaved``). Every result is checked against torch's precise one first.
Prints TFLOP/s and the ratio to torch's precise call; JSON with --json.

Usage (Hopper GPU):  PYTHONPATH=. python3 lab/probe_fp8.py [--shapes M N K ...] [--group-m N ...] [--json FILE]
"""
from __future__ import annotations

import argparse
import contextlib
import json

import torch

import triton_impl
from bench.timing import time_interleaved
from cuda_ref import _matmul_fp8
from triton_impl import _matmul_fp8_ws

# (label, promoted, blocks in a cluster, tile columns, consumer warpgroups)
PLANS = [("p c1 n128 w2", True, 1, 128, 2), ("p c1 n128 w3", True, 1, 128, 3),
         ("f c1 n128 w2", False, 1, 128, 2), ("f c2 n128 w2", False, 2, 128, 2), ("f c2 n192 w2", False, 2, 192, 2),
         ("f c1 n256 w2", False, 1, 256, 2), ("f c2 n256 w2", False, 2, 256, 2)]
# Triton ws_fp8: (label, promoted, consumer warpgroups, tile columns, ring stages)
WS_PLANS = [("p w2 n128 s4", True, 2, 128, 4), ("p w2 n128 s6", True, 2, 128, 6), ("p w3 n128 s4", True, 3, 128, 4),
            ("p w3 n128 s5", True, 3, 128, 5), ("f w2 n128 s4", False, 2, 128, 4), ("f w2 n256 s4", False, 2, 256, 4)]
SHAPES = [(4096, 4096, 4096), (8192, 8192, 8192), (2048, 7168, 7168), (4096, 2112, 7168), (1024, 4096, 7168),
          (8192, 4096, 14336)]


def main() -> None:
    # every plan's instance, not only those variant=None runs
    e4m3 = torch.float8_e4m3fn
    names = []
    for _, promote, cluster, tn, consumers in PLANS:
        with forced(cluster, tn, consumers):
            names.append(_matmul_fp8.instance(e4m3, e4m3, torch.bfloat16, promote, cluster, tn))
    _matmul_fp8.NAME_EXPRESSIONS = tuple(names)
    p = argparse.ArgumentParser()
    p.add_argument("--shapes", type=int, nargs="+", default=[x for s in SHAPES for x in s])
    p.add_argument("--rep-ms", type=float, default=60)
    p.add_argument("--json")
    p.add_argument("--group-m", type=int, nargs="*", default=[],
                   help="also each plan at these GROUP_M (tile rows walked together), labelled g<N>")
    args = p.parse_args()
    shapes = [tuple(args.shapes[i:i + 3]) for i in range(0, len(args.shapes), 3)]
    rows = []
    for M, N, K in shapes:
        g = torch.Generator(device="cuda").manual_seed(M + N + K)
        a = (torch.randn(M, K, generator=g, device="cuda") * 2).to(torch.float8_e4m3fn)
        w = (torch.randn(N, K, generator=g, device="cuda") * 2).to(torch.float8_e4m3fn)
        sa, sb = torch.tensor(0.7, device="cuda"), torch.tensor(1.3, device="cuda")
        out = torch.empty(M, N, dtype=torch.bfloat16, device="cuda")
        ref = torch._scaled_mm(a, w.t(), sa, sb, out_dtype=torch.bfloat16).float()
        calls = {"torch": lambda: torch._scaled_mm(a, w.t(), sa, sb, out_dtype=torch.bfloat16, out=out),
                 "torch fast": lambda: torch._scaled_mm(a, w.t(), sa, sb, out_dtype=torch.bfloat16, out=out,
                                                        use_fast_accum=True),
                 "triton": lambda: triton_impl.scaled_mm(a, w.t(), sa, sb, out=out),
                 "triton fast": lambda: triton_impl.scaled_mm(a, w.t(), sa, sb, out=out, use_fast_accum=True)}
        for label, promote, cluster, tn, consumers in PLANS:
            for group_m in [_matmul_fp8.GROUP_M, *args.group_m]:
                with forced(cluster, tn, consumers, group_m):
                    plan = _matmul_fp8._plan((a, w.t(), sa, sb), None, out, torch.bfloat16, not promote)
                tag = "" if group_m == _matmul_fp8.GROUP_M else f" g{group_m}"
                calls[f"cuda {label}{tag}"] = lambda plan=plan: plan.run(a, w.t(), sa, sb, out)
        for label, promote, consumers, tn, stages in WS_PLANS:
            plan = _matmul_fp8_ws.plan(a, w.t(), "tensor", sa, sb, torch.bfloat16, not promote,
                                       torch.cuda.get_device_properties(0).multi_processor_count, bn=tn,
                                       consumers=consumers, stages=stages)
            calls[f"ws {label}"] = lambda plan=plan: plan.run(a, w.t(), sa, sb, out)
        errors = {}
        for name, fn in calls.items():
            out.fill_(float("nan"))
            fn()
            errors[name] = ((out.float() - ref).abs().max() / ref.abs().max()).item()
        times = time_interleaved(list(calls.values()), rep_ms=args.rep_ms)
        flops = 2 * M * N * K
        base = times[0].median_ms
        line = {"shape": [M, N, K]}
        for (name, _), t in zip(calls.items(), times):
            line[name] = {"ms": t.median_ms, "tflops": flops / t.median_ms / 1e9, "x_torch": base / t.median_ms,
                          "err": errors[name]}
        rows.append(line)
        print(f"{M}x{N}x{K}: " + "  ".join(f"{n} {v['tflops']:.0f} ({v['x_torch']:.2f}, e{v['err']:.1e})"
                                           for n, v in line.items() if n != "shape"), flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"device": torch.cuda.get_device_name(), "rows": rows}, f, indent=1)


@contextlib.contextmanager
def forced(cluster: int, tn: int, consumers: int, group_m: int):
    """cuda_ref's plans with ``cluster_of``, ``tile_n``, ``consumers`` and ``GROUP_M`` forced, made
    inside and run directly afterwards (past the plan cache, whose key is the inputs, not the forced
    choice)."""
    m = _matmul_fp8
    saved = m.cluster_of, m.tile_n, m.consumers, m.GROUP_M
    m.cluster_of, m.tile_n = (lambda M, promote: cluster), (lambda M, N, promote, sms: tn)
    m.consumers, m.GROUP_M = (lambda promote: consumers), group_m
    try:
        yield
    finally:
        m.cluster_of, m.tile_n, m.consumers, m.GROUP_M = saved


if __name__ == "__main__":
    main()
