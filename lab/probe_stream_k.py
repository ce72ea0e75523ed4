"""Where does Triton's stream-K lose? The TMA kernel's STREAM_K on the default tile, planned as
``stream_k_plan`` plans it and with forced (programs, shared tiles): every tile shared on as many
programs as tiles (each program one whole tile through the stream-K path: its cost with no
hand-over), on 2x the tiles where that fits the SMs (every tile in two halves, one hand-over each),
and on every SM. Beside torch and ``tma_persistent`` (the same tile, whole tiles on a balanced grid),
each checked against torch, flushed in turns and back to back. Prints a line per plan.

Usage (Hopper GPU): PYTHONPATH=. python3 lab/probe_stream_k.py [--shapes M N K ...] [--json F]
"""

from __future__ import annotations

import argparse
import json

import torch

from bench.timing import time_interleaved, time_loop
from kernel_common import cdiv, sm_count
from triton_impl import _matmul as tm, _matmul_tma as mt

SHAPES = [(1024, 2048, 4096), (1358, 2048, 3584), (1845, 4096, 2304), (947, 6144, 4096), (105, 17920, 1536),
          (2416, 1024, 2304), (320, 8192, 8192)]


def plan_with(a, b, variant, forced=None):
    """A plan of ``variant`` whose stream-K split is ``forced`` (programs, shared tiles), or the package's."""
    real = mt.stream_k_of
    if forced is not None:
        mt.stream_k_of = lambda kw, M, N, K, sms: forced
    try:
        return tm._plan((a, b), variant, None)
    finally:
        mt.stream_k_of = real


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--shapes", type=int, nargs="+")
    p.add_argument("--dtype", default="bfloat16")
    p.add_argument("--json")
    args = p.parse_args()
    shapes = [tuple(args.shapes[i:i + 3]) for i in range(0, len(args.shapes), 3)] if args.shapes else SHAPES
    dtype = getattr(torch, args.dtype)
    sms = sm_count(torch.device("cuda"))
    rows = []
    for M, N, K in shapes:
        torch.manual_seed(0)
        a = torch.randn(M, K, device="cuda", dtype=dtype)
        b = torch.randn(N, K, device="cuda", dtype=dtype).t()
        ref = a @ b
        kw = tm._family_config("stream_k", a, b, tm._input_precision(a.dtype)).kwargs
        tiles = cdiv(M, kw["BLOCK_M"]) * cdiv(N, kw["BLOCK_N"])
        plans = {"tma": plan_with(a, b, "tma_persistent"), "sk": plan_with(a, b, "stream_k"),
                 "sk_whole": plan_with(a, b, "stream_k", (min(tiles, sms), tiles)) if tiles <= sms else None,
                 "sk_halves": plan_with(a, b, "stream_k", (2 * tiles, tiles)) if 2 * tiles <= sms else None,
                 "sk_all": plan_with(a, b, "stream_k", (sms, tiles))}
        plans = {k: v for k, v in plans.items() if v is not None}
        outs = {k: torch.full_like(ref, float("nan")) for k in plans}
        fns = {"torch": lambda: torch.mm(a, b)}
        for k, plan in plans.items():
            fns[k] = (lambda plan, o: lambda: plan.run(a, b, o))(plan, outs[k])
        for k, fn in fns.items():
            fn()
        torch.cuda.synchronize()
        errs = {k: float((outs[k].float() - ref.float()).abs().max()) for k in plans}
        flushed = dict(zip(fns, (t.median_ms for t in time_interleaved(list(fns.values()), rep_ms=60))))
        loop = {k: time_loop(fn) for k, fn in fns.items()}
        row = dict(shape=[M, N, K], tile=f"{kw['BLOCK_M']}x{kw['BLOCK_N']}x{kw['BLOCK_K']}", tiles=tiles,
                   k_tiles=cdiv(K, kw["BLOCK_K"]), sk=mt.stream_k_of(kw, M, N, K, sms), flushed_us=
                   {k: v * 1e3 for k, v in flushed.items()}, loop_us={k: v * 1e3 for k, v in loop.items()},
                   max_err=errs)
        rows.append(row)
        print((M, N, K), row["tile"], "tiles", tiles, "k", row["k_tiles"], "plan", row["sk"], "| flushed us",
              " ".join(f"{k} {v:.1f}" for k, v in row["flushed_us"].items()), "| loop",
              " ".join(f"{k} {v:.1f}" for k, v in row["loop_us"].items()),
              "| err", max(errs.values()), flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(dict(device=torch.cuda.get_device_name(), dtype=args.dtype, rows=rows), f, indent=1)


if __name__ == "__main__":
    main()
