"""A product of few columns (a LoRA down projection (M, r, K), r 4-32) through each backend's
default beside the same product with the roles swapped: c = (b.t() @ a.t()).t(), so that the r
columns become the few rows of a' = b.t() against a' s "W.t()" b' = a.t(), the decode path both
backends tune (few_rows / few_rows_mma / the GEMV), then c made contiguous (an M x r copy).

On the H100 lora draw (seed 280, bf16) the defaults read 0.79x (Triton) and 0.86x (CUDA) torch on
the down projections, down to 0.09x at 137 x 4 x 17920 (Triton's grouped kernel over 4-wide
tiles): the few-row paths read A once at its bandwidth.

For the down projections (N <= --max-n) of ``bench.workloads.draw_lora`` at --seed, both layouts
of b, it times in turns (L2 flushed, then back to back): torch.mm, each backend's default, and
each backend's swapped route (with and without the copy to a contiguous c). Checks each against
float64 first. Prints x torch.mm as geomean / p10 / worst per column; --json writes the cases.
Run on a GPU from the repository root: PYTHONPATH=. python lab/probe_narrow_n.py --seed 281 --json F
"""
import argparse

import torch

import cuda_ref
import triton_impl
from lab.lora_cases import operands, parser, report, time_case


def main():
    p = parser(__doc__, 281, 200)
    p.add_argument("--max-n", type=int, default=32)
    args = p.parse_args()
    cases = []
    for a, b, layout in operands(args, lambda m, n, k: n <= args.max_n):
        fns = {"torch": lambda: torch.mm(a, b),
               "triton": lambda: triton_impl.matmul(a, b),
               "triton_swap": lambda: triton_impl.matmul(b.t(), a.t()).t().contiguous(),
               "triton_swap_view": lambda: triton_impl.matmul(b.t(), a.t()).t(),
               "cuda": lambda: cuda_ref.matmul(a, b),
               "cuda_swap": lambda: cuda_ref.matmul(b.t(), a.t()).t().contiguous(),
               "cuda_swap_view": lambda: cuda_ref.matmul(b.t(), a.t()).t()}
        picks = {"triton": triton_impl.describe("matmul", a, b),
                 "triton_swap": triton_impl.describe("matmul", b.t(), a.t()),
                 "cuda": cuda_ref.describe("matmul", a, b), "cuda_swap": cuda_ref.describe("matmul", b.t(), a.t())}
        cases.append(time_case(fns, a, b, layout, args.rep_ms, picks=picks))
    report(cases, args, f"N <= {args.max_n}")


if __name__ == "__main__":
    main()
