"""Products of few columns (a LoRA down projection (M, r, K), r 4-32) through Triton's default
beside the TMA kernel forced to tiles r wide (BLOCK_N the least power of two from 16 that holds r)
with K in slices that fill one wave of the SMs.

On the H100 lora draws (seeds 280, 283, bf16) Triton's default runs these on grouped's 16 x 64 x 128
tiles: M / 16 programs walk all of K (297 x 4 x 29568: 19 programs, 0.08x torch; 1 x 4 x 5120: one
program, 0.16x). The bytes are a's (M x K x 2), read once at HBM's rate where the programs fill the
SMs. b (K x r) is tiny: where its rows are off 16 bytes the TMA kernel copies it (one launch), and
c's rows off 16 bytes are written by masked stores.

``--wide``: products of more columns (``--min-n`` to ``--max-n``, ``--min-m`` rows or more, K of
``--min-k`` or more) whose tiles alone leave SMs idle (54 x 128 x 29568 on 8 tiles of 16 x 64, 0.26x;
1027 x 256 x 29568 in 3 slices, 0.60x), on the tiles of ``WIDE``, each in the slices that fill a wave.

Times, in turns (L2 flushed) and back to back, torch.mm, the default and each forced config, each
checked against float64 first. Prints x torch.mm geomean / p10 / worst per column.
Run on a GPU from the repository root: PYTHONPATH=. python lab/probe_narrow_tma.py --seed 281 --json F
(--wide: ... --seed 283 --count 200 --wide --min-n 33 --max-n 256 --min-m 33 --min-k 1024)
"""
import argparse

import torch
import triton

import triton_impl
from lab.lora_cases import operands, parser, report, time_case
from kernel_common import cdiv, sm_count
from triton_impl import _matmul as tm
from triton_impl._matmul_configs import _tma_config_of, _with_split
from triton_impl._matmul_tma import SHARED_BYTES, shared_bytes

# name: (BLOCK_M, BLOCK_K, warps, stages, swap-AB, the widest BLOCK_N, c stored in halves)
CONFIGS = {"m128k128": (128, 128, 4, 4), "m64k128": (64, 128, 4, 4), "m128k64": (128, 64, 4, 6)}
WIDE = {"m64k128": (64, 128, 4, 4), "m64n64": (64, 128, 4, 4, False, 64), "m128k64": (128, 64, 4, 6),
        "m128n256": (128, 64, 8, 3, False, 256, True), "s16n64": (16, 128, 4, 6, True, 64),
        "s32n64": (32, 128, 4, 6, True, 64), "s64n128": (64, 128, 4, 4, True)}


def forced(a, b, bm, bk, warps, stages, swap=False, widest=128, subtile=False):
    """run() of the TMA kernel on bm x bn x bk tiles, bn N's power of two from 16 up to ``widest``,
    K in slices filling a wave, in as many of ``stages`` as shared memory holds."""
    (M, K), N = a.shape, b.shape[1]
    bn = min(widest, max(16, triton.next_power_of_2(N)))
    tiles = cdiv(M, bm) * cdiv(N, bn)
    split = max(1, min(cdiv(K, bk) // 2, sm_count(a.device) // tiles))
    cfg = _tma_config_of(bm, bn, bk, warps, stages, swap=swap, subtile=subtile)
    while stages > 2 and shared_bytes(cfg, 2, split, stages) > SHARED_BYTES - 8192:
        stages -= 1
    cfg = _with_split(_tma_config_of(bm, bn, bk, warps, stages, swap=swap, subtile=subtile), split)
    run = tm._tma_planned(cfg, a, b, tm._input_precision(a.dtype), None, None)
    c = torch.empty(M, N, device=a.device, dtype=a.dtype)
    run(a, b, c)  # (compiled here: a config that does not build is left out by the caller)
    return lambda: (run(a, b, c), c)[1], f"{bm}x{bn}x{bk} s{stages} S{split}{' swap' if swap else ''}"


def main():
    p = parser(__doc__, 281, 120)
    p.add_argument("--max-n", type=int, default=32)
    p.add_argument("--min-n", type=int, default=1)
    p.add_argument("--min-m", type=int, default=1)
    p.add_argument("--min-k", type=int, default=1)
    p.add_argument("--wide", action="store_true", help="WIDE's tiles, not CONFIGS'")
    args = p.parse_args()
    cases = []
    for a, b, layout in operands(args, lambda m, n, k: args.min_n <= n <= args.max_n and m >= args.min_m
                                 and k >= args.min_k):
        fns, configs = {"torch": lambda: torch.mm(a, b), "triton": lambda: triton_impl.matmul(a, b)}, {}
        for name, c in (WIDE if args.wide else CONFIGS).items():
            if c[4:5] == (True,) and a.shape[0] > 64:
                continue  # (swap-AB tiles are for few rows)
            try:
                fns[name], configs[name] = forced(a, b, *c)
            except Exception as e:  # noqa: BLE001 - reported, and the case runs without it
                print(f"  {name}: {type(e).__name__} {str(e)[:120]}", flush=True)
        cases.append(time_case(fns, a, b, layout, args.rep_ms, configs=configs,
                               picks={"triton": triton_impl.describe("matmul", a, b)}))
    report(cases, args, f"{args.min_n} <= N <= {args.max_n}, M >= {args.min_m}, K >= {args.min_k}")


if __name__ == "__main__":
    main()
