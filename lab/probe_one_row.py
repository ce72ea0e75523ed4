"""One row of a (decode's M = 1) through matmul's default beside the rules' pick, per backend.

For every model layer (N, K) of ``bench.workloads`` at M = 1 (and --rows more), each layout of b
(``wt``: b = W.t(); ``row``: b row-major), it times in turns (L2 flushed, then back to back):
torch.mm, each backend's matmul default (one 16-bit row on W.t(): the GEMV on W) and the variant
its rules pick without that (a call with a bias's pick; past one row Triton's split_k instead).
Prints the geomean / p10 / worst of each x torch.mm and writes the cases as JSON (--json).
(Run before the one-row rule, the same columns held the GEMV called directly: decision 044.)
Run on a GPU from the repository root: PYTHONPATH=. python lab/probe_one_row.py --json F
"""
import argparse
import json

import torch

import cuda_ref
import triton_impl
from bench.timing import time_interleaved, time_loop
from bench.workloads import layer_shapes, summarize


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--dtype", default="bfloat16")
    p.add_argument("--json")
    p.add_argument("--rep-ms", type=float, default=10)
    p.add_argument("--limit", type=int, default=0)
    p.add_argument("--every", type=int, default=1, help="every n-th layer shape")
    p.add_argument("--layouts", default="wt,row")
    p.add_argument("--rows", default="1", help="row counts of a, comma-separated (past 1: no GEMV; "
                   "Triton's split_k instead)")
    args = p.parse_args()
    dtype = getattr(torch, args.dtype)
    torch.manual_seed(0)
    cases = []
    shapes = layer_shapes()[::args.every][: args.limit or None]
    for (n, k), m in ((s, m) for s in shapes for m in map(int, args.rows.split(","))):
        w = torch.randn(n, k, device="cuda", dtype=dtype)
        a = torch.randn(m, k, device="cuda", dtype=dtype)
        for layout in args.layouts.split(","):
            b = w.t() if layout == "wt" else w.t().contiguous()
            ref = torch.mm(a.double(), b.double())
            # the rules' pick: what variant=None ran before one row went to the GEMV (a call with a bias's)
            rules = {x: pkg.pick("matmul", a, b, biased=True) for x, pkg in (("triton", triton_impl), ("cuda", cuda_ref))}
            fns = {"torch": lambda: torch.mm(a, b),
                   "triton": lambda: triton_impl.matmul(a, b),
                   "triton_rules": lambda: triton_impl.matmul(a, b, variant=rules["triton"]),
                   "cuda": lambda: cuda_ref.matmul(a, b),
                   "cuda_rules": lambda: cuda_ref.matmul(a, b, variant=rules["cuda"])}
            if m > 1:
                fns = {x: fns[x] for x in ("torch", "triton", "cuda")}
                fns["triton_split"] = lambda: triton_impl.matmul(a, b, variant="split_k")
            for name, fn in fns.items():
                err = (fn().double().reshape(m, -1) - ref).abs().max().item() / ref.abs().max().item()
                assert err < 2e-2, (name, n, k, layout, err)
            t = time_interleaved(list(fns.values()), rep_ms=args.rep_ms)
            loop = [time_loop(fn) for fn in fns.values()]
            case = {"shape": [m, n, k], "layout": layout,
                    "flushed_us": {name: tt.median_ms * 1e3 for name, tt in zip(fns, t)},
                    "loop_us": {name: ms * 1e3 for name, ms in zip(fns, loop)},
                    "picks": {"triton": triton_impl.describe("matmul", a, b), "cuda": cuda_ref.describe("matmul", a, b),
                              "triton_rules": triton_impl.describe("matmul", a, b, variant=rules["triton"]),
                              "cuda_rules": cuda_ref.describe("matmul", a, b, variant=rules["cuda"]),
                              "triton_split": triton_impl.describe("matmul", a, b, variant="split_k")}}
            cases.append(case)
            f = case["flushed_us"]
            print(f"{n:>6} {k:>6} {layout:>3} torch {f['torch']:6.1f}  " +
                  "  ".join(f"{x} {f['torch'] / f[x]:.2f}" for x in fns if x != "torch"), flush=True)
    print(f"{args.dtype}, x torch.mm, geomean / p10 / worst (worst's shape)")
    rows = sorted({c["shape"][0] for c in cases})
    for mode, layout, m in ((x, y, z) for x in ("flushed_us", "loop_us") for y in ("wt", "row") for z in rows):
        for x in ("triton", "triton_rules", "triton_split", "cuda", "cuda_rules"):
            sel = [c for c in cases if c["layout"] == layout and c["shape"][0] == m and x in c[mode]]
            if not sel:
                continue
            r = [c[mode]["torch"] / c[mode][x] for c in sel]
            s = summarize(r)
            worst = sel[min(range(len(r)), key=r.__getitem__)]["shape"]
            print(f"{mode[:-3]:>8} {layout:>3} M={m:<3} {x:>12} {s['geomean']:.3f} / {s['p10']:.2f} / {s['worst']:.2f} {worst}")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"device": torch.cuda.get_device_name(), "dtype": args.dtype, "cases": cases}, fh, indent=1)


if __name__ == "__main__":
    main()
