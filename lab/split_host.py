"""Host time of a Triton matmul call with K whole against one split in K slices (two launches and a
float32 workspace), beside torch's, on the small products where the fitted selection weighs them
(``call_host_s`` in triton_impl/arch_sm_90.json), with each call's flushed GPU time: the fitted
model's least-time configs whole and split run through their plans' run functions (no plan
lookup), and the public call (``variant=None``) for its lookup's cost.

Usage (GPU): PYTHONPATH=. python lab/split_host.py [--shapes M N K ...] [--json OUT]
"""

from __future__ import annotations

import argparse
import json

import torch

import triton_impl
from bench.timing import host_cost_us, time_interleaved, time_loop
from kernel_common.util import cdiv
from triton_impl import _matmul
from triton_impl import _matmul_configs as mc
from triton_impl._matmul_configs import tile_text


def _picks(M, N, K):
    """The fitted model's config of least GPU time with K whole, and in 2-4 slices."""
    best = {}
    for cfg in mc._FITTED_16BIT:
        for split in range(1, 5):
            if split > 1 and (cdiv(K, cfg.kwargs["BLOCK_K"]) // 4 < split or mc.shared_bytes(cfg, 2, split) > mc.SHARED_BYTES):
                continue
            t = mc._fitted_seconds(cfg, M, N, K, 132, split)
            if t < best.get(split > 1, (float("inf"),))[0]:
                best[split > 1] = (t, mc._with_split(cfg, split))
    return best[False][1], best[True][1]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shapes", type=int, nargs="+",
                    default=[67, 4096, 4608, 76, 1024, 4096, 79, 896, 4864, 128, 256, 2048, 211, 1024, 4096])
    ap.add_argument("--json")
    args = ap.parse_args()
    rows = []
    print(f"{torch.cuda.get_device_name()}, bf16, W.t(): host us a call (2000 calls, the GPU keeping up on "
          f"warm L2 or not), back-to-back us a call, flushed GPU us")
    for M, N, K in zip(*[iter(args.shapes)] * 3):
        a = torch.randn(M, K, device="cuda", dtype=torch.bfloat16)
        b = torch.randn(N, K, device="cuda", dtype=torch.bfloat16).t()
        c = torch.empty((M, N), device="cuda", dtype=torch.bfloat16)
        whole, split = _picks(M, N, K)
        runs = {k: _matmul._make_run("split_k", cfg, a, b, "tf32", c) for k, cfg in (("whole", whole), ("split", split))}
        fns = {"torch": lambda: torch.mm(a, b, out=c), "whole": lambda: runs["whole"](a, b, c),
               "split": lambda: runs["split"](a, b, c), "public": lambda: triton_impl.matmul(a, b, out=c)}
        host = dict(zip(fns, host_cost_us(list(fns.values()))))
        flushed = dict(zip(fns, (t.median_ms * 1e3 for t in time_interleaved(list(fns.values()), rep_ms=50))))
        loop = {k: time_loop(f) * 1e3 for k, f in fns.items()}
        notes = {"whole": tile_text(whole), "split": tile_text(split), "public": _matmul.describe(a, b)}
        rows.append(dict(shape=[M, N, K], host_us=host, loop_us=loop, flushed_us=flushed, configs=notes))
        print(f"{M}x{N}x{K}: " + "; ".join(f"{k} host {host[k]:.1f} loop {loop[k]:.1f} gpu {flushed[k]:.1f}"
                                          for k in fns) + f"  ({notes['whole']} | {notes['split']} | {notes['public']})")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"device": torch.cuda.get_device_name(), "rows": rows}, fh, indent=1)


if __name__ == "__main__":
    main()
