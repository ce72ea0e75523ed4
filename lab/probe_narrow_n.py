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
import json

import torch

import cuda_ref
import triton_impl
from bench.timing import time_interleaved, time_loop
from bench.workloads import draw_lora, summarize


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--seed", type=int, default=281)
    p.add_argument("--count", type=int, default=200, help="shapes drawn (the down projections among them run)")
    p.add_argument("--max-n", type=int, default=32)
    p.add_argument("--dtype", default="bfloat16")
    p.add_argument("--rep-ms", type=float, default=10)
    p.add_argument("--json")
    args = p.parse_args()
    dtype = getattr(torch, args.dtype)
    torch.manual_seed(0)
    shapes = [s for s in draw_lora(args.count, args.seed) if s[1] <= args.max_n]
    cases = []
    for (m, n, k) in shapes:
        a = torch.randn(m, k, device="cuda", dtype=dtype)
        w = torch.randn(n, k, device="cuda", dtype=dtype)  # the adapter's (r, K) weight
        for layout in ("wt", "row"):
            b = w.t() if layout == "wt" else w.t().contiguous()
            ref = torch.mm(a.double(), b.double())
            fns = {"torch": lambda: torch.mm(a, b),
                   "triton": lambda: triton_impl.matmul(a, b),
                   "triton_swap": lambda: triton_impl.matmul(b.t(), a.t()).t().contiguous(),
                   "triton_swap_view": lambda: triton_impl.matmul(b.t(), a.t()).t(),
                   "cuda": lambda: cuda_ref.matmul(a, b),
                   "cuda_swap": lambda: cuda_ref.matmul(b.t(), a.t()).t().contiguous(),
                   "cuda_swap_view": lambda: cuda_ref.matmul(b.t(), a.t()).t()}
            for name, fn in fns.items():
                err = (fn().double() - ref).abs().max().item() / ref.abs().max().item()
                assert err < 2e-2, (name, m, n, k, layout, err)
            t = time_interleaved(list(fns.values()), rep_ms=args.rep_ms)
            loop = [time_loop(fn) for fn in fns.values()]
            case = {"shape": [m, n, k], "layout": layout,
                    "flushed_us": {name: tt.median_ms * 1e3 for name, tt in zip(fns, t)},
                    "loop_us": {name: ms * 1e3 for name, ms in zip(fns, loop)},
                    "picks": {"triton": triton_impl.describe("matmul", a, b),
                              "triton_swap": triton_impl.describe("matmul", b.t(), a.t()),
                              "cuda": cuda_ref.describe("matmul", a, b),
                              "cuda_swap": cuda_ref.describe("matmul", b.t(), a.t())}}
            cases.append(case)
            f = case["flushed_us"]
            print(f"{m:>6} {n:>3} {k:>6} {layout:>3} torch {f['torch']:7.1f} us  " +
                  "  ".join(f"{x} {f['torch'] / f[x]:.2f}" for x in fns if x != "torch"), flush=True)
    print(f"{args.dtype}, seed {args.seed}, N <= {args.max_n}: x torch.mm, geomean / p10 / worst (worst's shape)")
    for mode in ("flushed_us", "loop_us"):
        for layout in ("wt", "row"):
            sel = [c for c in cases if c["layout"] == layout]
            for x in ("triton", "triton_swap", "triton_swap_view", "cuda", "cuda_swap", "cuda_swap_view"):
                r = [c[mode]["torch"] / c[mode][x] for c in sel]
                if not r:
                    continue
                s = summarize(r)
                worst = sel[min(range(len(r)), key=r.__getitem__)]["shape"]
                print(f"{mode[:-3]:>8} {layout:>3} {x:>16} {s['geomean']:.3f} / {s['p10']:.2f} / {s['worst']:.2f} {worst}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"device": torch.cuda.get_device_name(), "seed": args.seed, "dtype": args.dtype,
                       "cases": cases}, f, indent=1)


if __name__ == "__main__":
    main()
