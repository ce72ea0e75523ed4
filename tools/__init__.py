"""Scripts for a GPU machine, run from the repository root and not installed with the package:

    python -m tools.sanitize_driver --backend cuda   # the workload sanitize_all.sh runs
    OUT=DIR bash tools/gpu_suite.sh                  # tests, benchmarks and bench compare
    OUT=DIR bash tools/sanitize_all.sh               # compute-sanitizer over every kernel
    python tools/first_call.py                       # a new process's import and first calls
    python tools/ship_tuning.py --seed 1             # the shipped Triton tuning table

The sweeps behind the decision records reach into the backends' private modules on purpose and
live in lab/ (``PYTHONPATH=. python lab/sweep_sgemm.py``).
"""
