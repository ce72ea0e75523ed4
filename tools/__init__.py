"""Scripts for a GPU machine, run from the repository root and not installed with the package:

    python -m tools.sanitize_driver --backend cuda   # the workload sanitize_all.sh runs
    OUT=DIR bash tools/gpu_suite.sh                  # tests, benchmarks and bench compare
    OUT=DIR bash tools/sanitize_all.sh               # compute-sanitizer over every kernel
    python tools/first_call.py                       # a new process's import and first calls
    OUT=DIR bash tools/gpu_draw.sh --algorithm matmul --seed 1   # a draw, a shard per GPU
    python tools/ship_tuning.py tune --file T.json   # the shipped Triton tuning table: tune,
    python tools/ship_tuning.py ship T.json --results R.json     # then merge it in

The sweeps behind the decision records reach into the backends' private modules on purpose and
live in lab/ (``PYTHONPATH=. python lab/sweep_sgemm.py``).
"""
