"""Scripts for a GPU machine, run from the repository root and not installed with the package:

    python -m tools.sanitize_driver --backend cuda   # the workload sanitize_all.sh runs
    python -m tools.sweep_sgemm                      # the float32 matmul tile table's sweep
    python -m tools.sweep_transpose_triton           # the Triton transpose tile sweep
    OUT=DIR bash tools/gpu_suite.sh                  # tests, benchmarks and bench compare
    OUT=DIR bash tools/sanitize_all.sh               # compute-sanitizer over every kernel
"""
