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
from lab.forced_plans import operands, time_arms, write_rows


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
        arms = {cuda_ref.describe("matmul", a, b, variant=v): (lambda v=v: cuda_ref.matmul(a, b, variant=v))
                for v in args.variants}
        ms, loop_ms = time_arms(a, b, arms, args.rep_ms)
        rows.append({"shape": [M, N, K], "dtype": dt, "layout": args.layout, "ms": ms, "loop_ms": loop_ms})
        t0, l0 = ms["torch"], loop_ms["torch"]
        print(f"{M}x{N}x{K} {dt}: torch {t0 * 1e3:.1f} us | " + " | ".join(
            f"{n.split(' matmul')[0]} {t0 / ms[n]:.2f}/{l0 / loop_ms[n]:.2f}" for n in list(ms)[1:]), flush=True)
        write_rows(args, __doc__, rows)


if __name__ == "__main__":
    main()
