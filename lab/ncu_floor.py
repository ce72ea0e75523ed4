"""Each matmul's kernels as Nsight Compute sees them, torch's (cuBLAS) beside ours: the kernel's
duration and cycles, its launch (grid, cluster, shared memory, registers) and its throughputs, caches
flushed before each kernel (ncu's default). On small and middle products a kernel's fixed cost (its
prologue, pipeline fill, epilogue) is much of its time; this says how ours compares, kernel by kernel.

Usage (Hopper GPU, ncu on the PATH or NCU=...): python lab/ncu_floor.py [--layout wt|row] [--stalls] [M N K ...]
(it runs itself under ncu with --clock-control none and prints one table)
"""

from __future__ import annotations

import argparse
import csv
import io
import os
import shutil
import subprocess
import sys

SHAPES = [(128, 256, 64), (128, 256, 1024), (601, 2048, 2304), (2250, 128, 896), (57, 2304, 9216),
          (333, 12288, 4096), (1024, 1024, 1024), (522, 3072, 8192), (1035, 1024, 2304), (149, 18432, 2304)]
STALLS = ("no_instruction", "long_scoreboard", "barrier", "membar", "wait", "sleeping", "branch_resolving",
          "math_pipe_throttle", "short_scoreboard", "mio_throttle", "lg_throttle", "drain", "dispatch_stall", "imc_miss",
          "misc", "not_selected", "selected")
STALL_METRIC = "smsp__average_warps_issue_stalled_{}_per_issue_active.ratio"
FIELDS = [("Duration", "us"), ("Elapsed Cycles", "cyc"), ("SM Frequency", "GHz"), ("Grid Size", "grid"),
          ("Cluster Size", "clu"), ("Registers Per Thread", "reg"), ("Dynamic Shared Memory Per Block", "dsmem"),
          ("DRAM Throughput", "dram%"), ("Compute (SM) Throughput", "sm%")]


def run_calls(shapes, layout: str) -> None:
    """Under ncu: per shape, one warmed call of torch.mm and of cuda_ref.matmul in the profiled range."""
    import torch

    import cuda_ref
    from cuda_ref import _matmul as cm
    for M, N, K in shapes:
        a = torch.randn(M, K, device="cuda", dtype=torch.bfloat16)
        b = torch.randn(K, N, device="cuda", dtype=torch.bfloat16) if layout == "row" else \
            torch.randn(N, K, device="cuda", dtype=torch.bfloat16).t()
        for name, fn in (("torch", lambda: torch.mm(a, b)), ("ours", lambda: cuda_ref.matmul(a, b))):
            for _ in range(3):
                fn()
            torch.cuda.synchronize()
            print(f"@@ {M}x{N}x{K} {name} {cm.describe(a, b) if name == 'ours' else ''}", flush=True)
            torch.cuda.profiler.start()
            fn()
            torch.cuda.synchronize()
            torch.cuda.profiler.stop()


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--layout", default="wt", choices=("wt", "row"))
    p.add_argument("--inner", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--stalls", action="store_true",
                   help="each kernel's warp stall reasons too (warps stalled a cycle an instruction issues, by reason)")
    p.add_argument("shape", nargs="*", type=int)
    args = p.parse_args()
    shapes = list(zip(*[iter(args.shape)] * 3)) if args.shape else SHAPES
    if args.inner:
        run_calls(shapes, args.layout)
        return
    ncu = os.environ.get("NCU") or shutil.which("ncu") or "/usr/local/cuda/bin/ncu"
    log = "/tmp/ncu_floor.csv"
    cmd = [ncu, "--clock-control", "none", "--profile-from-start", "off", "--section", "LaunchStats",
           "--section", "SpeedOfLight", "--csv", "--page", "details", "--log-file", log]
    if args.stalls:
        cmd += ["--metrics", ",".join(STALL_METRIC.format(r) for r in STALLS)]
    cmd += [sys.executable, __file__, "--inner", "--layout", args.layout] + [str(x) for x in args.shape]
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode:
        sys.exit(f"ncu failed ({done.returncode}):\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
    labels = [line[3:] for line in done.stdout.splitlines() if line.startswith("@@ ")]
    kernels: dict = {}
    with open(log) as f:
        text = f.read()
    for row in csv.DictReader(io.StringIO(text[text.index('"ID"'):])):
        k = kernels.setdefault(int(row["ID"]), {"name": row["Kernel Name"]})
        k[row["Metric Name"]] = row["Metric Value"]
    # the calls in order, then their kernels in order (torch's are cuBLAS's, ours matmul_*)
    print("\n".join(labels))
    print("kernel | " + " | ".join(short for _, short in FIELDS))
    for kid in sorted(kernels):
        k = kernels[kid]
        print(f"{k['name'][:70]} | " + " | ".join(str(k.get(f, "")) for f, _ in FIELDS))
    if args.stalls:  # the reasons each kernel's warps wait on most
        for kid in sorted(kernels):
            k = kernels[kid]
            got = {r: float(k.get(STALL_METRIC.format(r), "0").replace(",", "") or 0) for r in STALLS}
            total = sum(got.values()) or 1.0
            print(f"{k['name'][:50]}: " + ", ".join(f"{r} {v / total:.2f}" for r, v in
                                                   sorted(got.items(), key=lambda x: -x[1])[:6]))


if __name__ == "__main__":
    main()
