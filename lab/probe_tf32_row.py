"""float32 under TF32 on a row-major b (GPT-2's Conv1D layout) at few rows: the default (CUDA:
wgmma_swap's TF32 on b transposed once a call, decision 039; Triton: tma_persistent on b made K-major)
against the kernels that read b where it lies (CUDA's exact few_rows and pipelined and few_rows_mma's
TF32 on mma.sync; Triton's grouped, fma_ws, few_rows, few_rows_ws) and torch's TF32, flushed in turns and back to
back; ``--layout wt`` asks the same of W.t(), which the defaults read in place. A dense TF32 draw (H100 s321)
has both defaults at 3.0-3.7 times the time of one read of b at 5-32 rows, torch at 1.0-1.8.
Prints a line a shape; JSON with --json.

Usage (Hopper GPU): PYTHONPATH=. python lab/probe_tf32_row.py [--backend cuda|triton] [--layout row|wt]
    [--rows 1 2 4 8 16 32] [--variants ...] [--json F]
"""
import argparse
import json

import torch

import cuda_ref
import triton_impl
from bench.specs import MatmulSpec
from bench.timing import time_interleaved, time_loop

WEIGHTS = [(4096, 4096), (14336, 4096), (4096, 14336), (3072, 768), (768, 3072), (2304, 768), (50257 - 1, 768),
           (8960, 1536), (1536, 8960), (28672, 8192)]  # (N, K); GPT-2's 2304 x 768 Conv1D among them


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--rows", type=int, nargs="+", default=[1, 2, 4, 8, 16, 32])
    p.add_argument("--backend", choices=("cuda", "triton"), default="cuda")
    p.add_argument("--layout", choices=("row", "wt"), default="row", help="b row-major, or W.t()")
    p.add_argument("--variants", nargs="+",
                   help="default: cuda few_rows pipelined few_rows_mma, triton grouped fma_ws few_rows few_rows_ws")
    p.add_argument("--json")
    args = p.parse_args()
    lib = {"cuda": cuda_ref, "triton": triton_impl}[args.backend]
    variants = args.variants or {"cuda": ["few_rows", "pipelined", "few_rows_mma"],
                                 "triton": ["grouped", "fma_ws", "few_rows", "few_rows_ws"]}[args.backend]
    rows = []
    with MatmulSpec.context("tf32"):
        for M in args.rows:
            for N, K in WEIGHTS:
                a = torch.randn(M, K, device="cuda")
                b = torch.randn(K, N, device="cuda") if args.layout == "row" else torch.randn(N, K, device="cuda").t()
                ref = a.double() @ b.double()
                names, fns = ["torch", "default " + lib.describe("matmul", a, b)], \
                    [lambda: torch.mm(a, b), lambda: lib.matmul(a, b)]
                for v in variants:
                    c = lib.matmul(a, b, variant=v)
                    assert ((c.double() - ref).abs().max() / ref.abs().max()).item() < 1e-2, (M, N, K, v)
                    names.append(v)
                    fns.append(lambda v=v: lib.matmul(a, b, variant=v))
                times = time_interleaved(fns, warmup_ms=10, rep_ms=30)
                ms = {n: t.median_ms for n, t in zip(names, times)}
                loop = {n: time_loop(f, calls=50, reps=3) for n, f in zip(names, fns)}
                rows.append({"shape": [M, N, K], "ms": ms, "loop_ms": loop})
                t0, l0 = ms["torch"], loop["torch"]
                print(f"{M}x{N}x{K}: torch {t0 * 1e3:.1f} us | " + " | ".join(
                    f"{n.split()[0]} {t0 / ms[n]:.2f} / {l0 / loop[n]:.2f}" for n in names[1:]), flush=True)
                if args.json:
                    with open(args.json, "w") as f:
                        json.dump({"device": torch.cuda.get_device_name(), "backend": args.backend,
                                   "layout": args.layout, "what": __doc__.splitlines()[0], "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
