"""Few rows of a on W.t() through Triton's matmul default beside the variants it chooses between.

Two sets of cases, bf16 by default, each timed in turns with torch.mm (L2 flushed, then back to back):
- split: every model layer (N, K) of ``bench.workloads`` at --rows, where the default now takes K
  in slices (``few_rows_split``) and ``tma_persistent`` keeps the table's config whole (--any-split:
  wherever ``split_k`` would slice a whole-K config, timed too, whatever the rule picks);
- odd c: weights whose N leaves c's rows off 16 bytes (layers of the models, and --odd-shapes) at
  --odd-rows: the default, ``grouped`` and ``tma_persistent`` (c by pointer stores).
Prints each case's ratios x torch.mm and writes them as JSON (--json).
Run on a GPU from the repository root: PYTHONPATH=. python lab/probe_few_rows_split.py --json F
"""
import argparse
import json

import torch

import triton_impl
from bench.timing import time_interleaved, time_loop
from bench.workloads import layer_shapes


def timed(m, n, k, dtype, variants, rep_ms, layout="wt"):
    """One case: torch.mm, the default and ``variants`` checked against float64, then timed; b is
    W.t() (``wt``, nn.Linear's weight) or a row-major (K, N) matrix (``row``, GPT-2's Conv1D)."""
    w = torch.randn(n, k, device="cuda", dtype=dtype)
    a = torch.randn(m, k, device="cuda", dtype=dtype)
    b = w.t() if layout == "wt" else w.t().contiguous()
    ref = torch.mm(a.double(), b.double())
    fns = {"torch": lambda: torch.mm(a, b), "default": lambda: triton_impl.matmul(a, b)}
    fns.update({v: (lambda v=v: triton_impl.matmul(a, b, variant=v)) for v in variants})
    for name, fn in fns.items():
        err = (fn().double() - ref).abs().max().item() / ref.abs().max().item()
        assert err < 2e-2, (name, m, n, k, err)
    t = time_interleaved(list(fns.values()), rep_ms=rep_ms)
    loop = [time_loop(fn) for fn in fns.values()]
    return {"shape": [m, n, k], "layout": layout,
            "flushed_us": {name: tt.median_ms * 1e3 for name, tt in zip(fns, t)},
            "loop_us": {name: ms * 1e3 for name, ms in zip(fns, loop)},
            "picks": {name: triton_impl.describe("matmul", a, b, variant=None if name == "default" else name)
                      for name in fns if name != "torch"}}


def show(kind, case):
    f, lp = case["flushed_us"], case["loop_us"]
    print(f"{kind:>5} {case['shape']} torch {f['torch']:6.1f} us  " + "  ".join(
        f"{x} {f['torch'] / f[x]:.2f}/{lp['torch'] / lp[x]:.2f}" for x in f if x != "torch")
        + f"  | {case['picks']['default']}", flush=True)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--dtype", default="bfloat16")
    p.add_argument("--json")
    p.add_argument("--rep-ms", type=float, default=10)
    p.add_argument("--rows", default="2,3,5,8,12,16")
    p.add_argument("--odd-rows", default="2,6,16,40,100,200")
    p.add_argument("--any-split", action="store_true", help="every case where _splits would slice a whole-K config, "
                   "the rule's or not (split_k forced beside the default): e.g. --rows 17,20,24,28,32 --odd-rows ''")
    p.add_argument("--layout", choices=("wt", "row"), default="wt", help="b as W.t() or row-major (K, N)")
    p.add_argument("--odd-shapes", default="1001x768,3001x4096,12289x2048,50257x4096",
                   help="N x K of weights with N off 8, beside the models' own")
    args = p.parse_args()
    dtype = getattr(torch, args.dtype)
    torch.manual_seed(0)
    cases = []
    for (n, k), m in ((s, int(m)) for s in layer_shapes() for m in args.rows.split(",")):
        a, b = torch.empty(m, k, device="cuda", dtype=dtype), torch.empty(n, k, device="cuda", dtype=dtype).t()
        b = b if args.layout == "wt" else b.contiguous()
        whole = " S1 " in triton_impl.describe("matmul", a, b, variant="tma_persistent") + " "
        sliced = " S1 " not in triton_impl.describe("matmul", a, b, variant="split_k") + " "
        if not whole or not sliced or not args.any_split and triton_impl.pick("matmul", a, b) != "split_k":
            continue  # (split by the table or the heuristic already; or no split; or the rule keeps K whole)
        variants = ["tma_persistent"] + (["split_k"] if args.any_split else [])
        cases.append(dict(timed(m, n, k, dtype, variants, args.rep_ms, args.layout), kind="split"))
        show("split", cases[-1])
    odd = sorted({s for s in layer_shapes() if s[0] % 8} | {tuple(map(int, s.split("x"))) for s in args.odd_shapes.split(",")})
    for (n, k), m in ((s, int(m)) for s in odd for m in filter(None, args.odd_rows.split(","))):
        cases.append(dict(timed(m, n, k, dtype, ["grouped", "tma_persistent"], args.rep_ms, args.layout), kind="odd"))
        show("odd", cases[-1])
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"device": torch.cuda.get_device_name(), "dtype": args.dtype, "cases": cases}, fh, indent=1)


if __name__ == "__main__":
    main()
