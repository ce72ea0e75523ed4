"""Host time of a matmul call whose operands sit at addresses the plan has not met (a model's
activations: the caching allocator hands a layer's input a new block on most calls), beside torch's
on the same calls: a pool of distinct inputs of one shape, larger than a launch keeps encodings for
(``_launch._ENCODINGS_KEPT``), called in turn, so every call encodes its descriptors afresh. Each
call timed on the host alone (no wait on the device inside the timing; the kernels are small).

Usage (GPU): PYTHONPATH=. python lab/new_address_host.py [--pool 300] [--rounds 5]
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch

import cuda_ref
import triton_impl

# Mixtral-small's expert products: x @ W1.t(), dy @ W1, x.t() @ dy
CASES = [("x @ W.t()", (256, 1024), (1408, 1024), True), ("dy @ W", (256, 1408), (1408, 1024), False)]


def _median_us(fn, pool, w) -> float:
    times = []
    for a in pool:
        t0 = time.perf_counter()
        fn(a, w)
        times.append(time.perf_counter() - t0)
    torch.cuda.synchronize()
    return statistics.median(times) * 1e6


def main(argv=None) -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--pool", type=int, default=300)
    p.add_argument("--rounds", type=int, default=5)
    args = p.parse_args(argv)
    fns = {"torch": torch.mm, "triton": triton_impl.matmul, "cuda": cuda_ref.matmul}
    print(f"{torch.cuda.get_device_name()}, bf16, a pool of {args.pool} inputs: host us a call (median), rounds in turns")
    for name, a_shape, w_shape, transposed in CASES:
        w = torch.randn(w_shape, device="cuda", dtype=torch.bfloat16)
        w = w.t() if transposed else w
        pool = [torch.randn(a_shape, device="cuda", dtype=torch.bfloat16) for _ in range(args.pool)]
        for fn in fns.values():
            fn(pool[0], w)
        torch.cuda.synchronize()
        got = {k: [] for k in fns}
        for _ in range(args.rounds):
            for k, fn in fns.items():
                got[k].append(_median_us(fn, pool, w))
        print(f"  {name} {a_shape}: " + ", ".join(f"{k} {min(v):.1f} (rounds {' '.join(f'{x:.0f}' for x in v)})"
                                                  for k, v in got.items()), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
