"""Products of few columns (a LoRA down projection (M, r, K), r 4-32) through Triton's default
beside the TMA kernel forced to tiles r wide (BLOCK_N the least power of two from 16 that holds r)
with K in slices that fill one wave of the SMs.

On the H100 lora draws (seeds 280, 283, bf16) Triton's default runs these on grouped's 16 x 64 x 128
tiles: M / 16 programs walk all of K (297 x 4 x 29568: 19 programs, 0.08x torch; 1 x 4 x 5120: one
program, 0.16x). The bytes are a's (M x K x 2), read once at HBM's rate where the programs fill the
SMs. b (K x r) is tiny: where its rows are off 16 bytes the TMA kernel copies it (one launch), and
c's rows off 16 bytes are written by masked stores.

Times, in turns (L2 flushed) and back to back, torch.mm, the default and each forced config, each
checked against float64 first. Prints x torch.mm geomean / p10 / worst per column.
Run on a GPU from the repository root: PYTHONPATH=. python lab/probe_narrow_tma.py --seed 281 --json F
"""
import argparse

import torch
import triton

import triton_impl
from lab.lora_cases import operands, parser, report, time_case
from kernel_common import cdiv, sm_count
from triton_impl import _matmul as tm
from triton_impl._matmul_configs import _tma_config_of, _with_split

CONFIGS = {"m128k128": (128, 128, 4, 4), "m64k128": (64, 128, 4, 4), "m128k64": (128, 64, 4, 6)}


def forced(a, b, bm, bk, warps, stages):
    """run() of the TMA kernel on bm x bn x bk tiles, bn r's power of two, K in slices filling a wave."""
    (M, K), N = a.shape, b.shape[1]
    bn = max(16, triton.next_power_of_2(N))
    tiles = cdiv(M, bm) * cdiv(N, bn)
    split = max(1, min(cdiv(K, bk) // 2, sm_count(a.device) // tiles))
    cfg = _with_split(_tma_config_of(bm, bn, bk, warps, stages), split)
    run = tm._tma_planned(cfg, a, b, tm._input_precision(a.dtype), None, None)
    c = torch.empty(M, N, device=a.device, dtype=a.dtype)
    return lambda: (run(a, b, c), c)[1], f"{bm}x{bn}x{bk} S{split}"


def main():
    p = parser(__doc__, 281, 120)
    p.add_argument("--max-n", type=int, default=32)
    args = p.parse_args()
    cases = []
    for a, b, layout in operands(args, lambda m, n, k: n <= args.max_n):
        fns, configs = {"torch": lambda: torch.mm(a, b), "triton": lambda: triton_impl.matmul(a, b)}, {}
        for name, c in CONFIGS.items():
            fns[name], configs[name] = forced(a, b, *c)
        cases.append(time_case(fns, a, b, layout, args.rep_ms, configs=configs,
                               picks={"triton": triton_impl.describe("matmul", a, b)}))
    report(cases, args, f"N <= {args.max_n}")


if __name__ == "__main__":
    main()
