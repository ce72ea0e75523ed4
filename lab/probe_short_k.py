"""Products of a short K (a LoRA up projection (M, N, r), r 4-16) through each backend's default
beside Triton's pointer kernel forced to tiles one K slice deep.

On the H100 lora draw (seed 280, bf16) the up projections at K <= 16 read CUDA 0.79x and Triton
0.82x torch: CUDA at K = 4 copies a and b (rows of 8 bytes take no TMA) in launches of their own
(23-79 us back to back against torch's 9-16), Triton at K = 8 runs grouped 128 x 256 x 64 tiles
(0.55-0.63x). At K <= 16 the product is bound by writing c (M x N x 2 bytes).

Times, in turns (L2 flushed) and back to back, torch.mm, each default and the forced Triton tiles,
each checked against float64 first. Prints x torch.mm geomean / p10 / worst.
Run on a GPU from the repository root: PYTHONPATH=. python lab/probe_short_k.py --seed 280 --json F
"""
import argparse

import torch

import cuda_ref
import triton_impl
from lab.lora_cases import operands, parser, report, time_case
from triton_impl import _matmul as tm
from triton_impl._matmul_configs import _config_of

TILES = {"t32x256": (32, 256, 16, 8, 2), "t64x128": (64, 128, 16, 4, 2), "t64x128s3": (64, 128, 16, 4, 3),
         "t64x64": (64, 64, 16, 4, 2)}
# --max-k past 16 (an LM head of K = 32, 48 x 128256 x 32 at 0.53-0.66x on the TMA kernel): one slice
# as deep as the largest K drawn, 32 or 64
DEEPER = {"t64x128k32": (64, 128, 32, 4, 2), "t64x128k64": (64, 128, 64, 4, 2), "t128x128k32": (128, 128, 32, 4, 2)}


def forced(a, b, tile):
    cfg = _config_of(*tile)
    run = tm._make_run("grouped", cfg, a, b, tm._input_precision(a.dtype))
    c = torch.empty(a.shape[0], b.shape[1], device=a.device, dtype=a.dtype)
    return lambda: (run(a, b, c), c)[1]


def main():
    p = parser(__doc__, 280, 200)
    p.add_argument("--max-k", type=int, default=16)
    args = p.parse_args()
    cases = []
    for a, b, layout in operands(args, lambda m, n, k: k <= args.max_k):
        fns = {"torch": lambda: torch.mm(a, b), "cuda": lambda: cuda_ref.matmul(a, b),
               "triton": lambda: triton_impl.matmul(a, b),
               **{name: forced(a, b, t) for name, t in (TILES | (DEEPER if args.max_k > 16 else {})).items()}}
        picks = {"triton": triton_impl.describe("matmul", a, b), "cuda": cuda_ref.describe("matmul", a, b)}
        cases.append(time_case(fns, a, b, layout, args.rep_ms, picks=picks))
    report(cases, args, f"K <= {args.max_k}")


if __name__ == "__main__":
    main()
