"""One launch each of cuBLAS sgemm (torch.matmul, TF32 off) and the CUDA float32 instances the
launcher picks, at 4096^3, for Nsight Compute to profile:

    ncu --clock-control none -k regex:'gemm|matmul_' --section LaunchStats --section Occupancy \\
        --section SchedulerStats --section WarpStateStats --section ComputeWorkloadAnalysis \\
        PYTHONPATH=. python3 lab/profile_sgemm.py [--variants double_buffered ...]

(What cuBLAS launches -- its tile, threads, registers, stages -- and where our warps stall.)
"""

from __future__ import annotations

import argparse

import torch

import cuda_ref
from bench.specs import MatmulSpec


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--size", type=int, default=4096)
    p.add_argument("--variants", nargs="+", default=["double_buffered"])
    args = p.parse_args()
    torch.set_float32_matmul_precision("highest")
    n = args.size
    a, b = MatmulSpec.make_inputs((n, n, n), torch.float32, "cuda", seed=0)
    torch.matmul(a, b)
    for v in args.variants:
        cuda_ref.matmul(a, b, variant=v)
    torch.cuda.synchronize()


if __name__ == "__main__":
    main()
