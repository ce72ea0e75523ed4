"""CUDA matmul's default beside other variants forced on the same shapes (``cuda_ref.matmul(...,
variant=V)``, each with its own plan), and torch: flushed in turns and back to back, each result
checked against torch's. Where a shape's default loses to torch in both timings, is another
variant's plan faster (a selection's miss) or none (the kernels')?

Usage (Hopper GPU): PYTHONPATH=. python3 lab/probe_forced_variants.py --shapes M N K DTYPE ...
    [--variants wgmma_ws wgmma_swap] [--layout wt] [--rep-ms 20] [--json F]
"""

from __future__ import annotations

import argparse

import torch

import cuda_ref
from bench.timing import time_interleaved, time_loops
from lab.forced_plans import operands, write_rows


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--shapes", nargs="+", required=True, metavar="M N K DTYPE")
    p.add_argument("--variants", nargs="+", default=["wgmma_ws", "wgmma_swap"])
    p.add_argument("--layout", default="wt", choices=("wt", "row"))
    p.add_argument("--rep-ms", type=float, default=20)
    p.add_argument("--json")
    args = p.parse_args()
    cases = [(int(m), int(n), int(k), dt) for m, n, k, dt in zip(*[iter(args.shapes)] * 4)]
    rows = []
    for M, N, K, dt in cases:
        a, b = operands(M, N, K, args.layout, getattr(torch, dt))
        ref = torch.mm(a, b).float()
        names = ["torch", "default " + cuda_ref.describe("matmul", a, b)]
        fns = [lambda: torch.mm(a, b), lambda: cuda_ref.matmul(a, b)]
        for v in args.variants:
            c = cuda_ref.matmul(a, b, variant=v)
            err = ((c.float() - ref).abs().max() / ref.abs().max()).item()
            assert err < 2e-2, (M, N, K, dt, v, err)
            names.append(v + " " + cuda_ref.describe("matmul", a, b, variant=v))
            fns.append(lambda v=v: cuda_ref.matmul(a, b, variant=v))
        ms = [t.median_ms for t in time_interleaved(fns, warmup_ms=10, rep_ms=args.rep_ms)]
        loop_ms = time_loops(fns, calls=[max(20, int(args.rep_ms / 4 / max(m, 1e-3))) for m in ms])
        rows.append({"shape": [M, N, K], "dtype": dt, "layout": args.layout,
                     "ms": dict(zip(names, ms)), "loop_ms": dict(zip(names, loop_ms))})
        print(f"{M}x{N}x{K} {dt}: torch {ms[0] * 1e3:.1f} us | " + " | ".join(
            f"{n.split(' matmul')[0]} {ms[0] / t:.2f}/{loop_ms[0] / lt:.2f}"
            for n, t, lt in zip(names[1:], ms[1:], loop_ms[1:])), flush=True)
        write_rows(args, __doc__, rows)


if __name__ == "__main__":
    main()
