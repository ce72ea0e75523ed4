"""Matmul defaults of both backends against torch in rounds, in turns (bench.timing.time_interleaved):
per round each library's flushed median in microseconds and the ratios x torch, then medians.
Usage: PYTHONPATH=. python lab/matmul_rounds.py [--rounds 10] [--size 4096 | MxNxK ...] [--dtype bfloat16 ...]"""
import argparse
import statistics

import torch

import cuda_ref
import triton_impl
from bench.timing import time_interleaved


def shape(s: str) -> tuple[int, int, int]:
    parts = [int(x) for x in s.split("x")]
    return tuple(parts * 3) if len(parts) == 1 else tuple(parts)


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--rounds", type=int, default=10)
    p.add_argument("--size", nargs="+", default=["4096"])
    p.add_argument("--dtype", nargs="+", default=["bfloat16", "float16"])
    p.add_argument("--layout", nargs="+", default=["row", "wt"])
    args = p.parse_args()
    print(torch.cuda.get_device_name(), flush=True)
    for size in args.size:
        m, n, k = shape(size)
        for dt in (getattr(torch, d) for d in args.dtype):
            for layout in args.layout:
                a = torch.randn(m, k, device="cuda").to(dt)
                b = torch.randn(k, n, device="cuda").to(dt) if layout == "row" else \
                    torch.randn(n, k, device="cuda").to(dt).t()
                outs = [torch.empty(m, n, device="cuda", dtype=dt) for _ in range(3)]
                fns = [lambda: torch.matmul(a, b, out=outs[0]), lambda: cuda_ref.matmul(a, b, out=outs[1]),
                       lambda: triton_impl.matmul(a, b, out=outs[2])]
                rounds = [[t.median_ms * 1e3 for t in time_interleaved(fns)] for _ in range(args.rounds)]
                name = f"{m}x{n}x{k} {str(dt)[6:]} {layout}"
                for r in rounds:
                    print(f"  {name}: torch {r[0]:.1f} us, cuda {r[1]:.1f} ({r[0] / r[1]:.3f}x), "
                          f"triton {r[2]:.1f} ({r[0] / r[2]:.3f}x)", flush=True)
                med = [statistics.median(r[j] for r in rounds) for j in range(3)]
                cu = statistics.median(r[0] / r[1] for r in rounds)
                tr = statistics.median(r[0] / r[2] for r in rounds)
                print(f"{name}: medians torch {med[0]:.1f} us, cuda {med[1]:.1f} us, triton {med[2]:.1f} us; "
                      f"median ratio cuda {cu:.3f}x, triton {tr:.3f}x", flush=True)


if __name__ == "__main__":
    main()
