#!/usr/bin/env bash
# The whole GPU run in one call: the test suite (slow tests included), the pytest-benchmark
# entries, and `python -m bench compare`, writing logs and results JSON/CSV under $OUT.
# Usage (on a GPU machine, from the repository root):
#   OUT=/tmp/run bash bench/gpu_suite.sh [ALGORITHM ...]      # default: every algorithm
# Copy $OUT/*.json into bench/results/ and commit them.
set -uo pipefail
OUT=${OUT:-bench/results/local}
mkdir -p "$OUT"
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
PY=${PYTHON:-python3}
algs=("$@")
[ ${#algs[@]} -gt 0 ] || mapfile -t algs < <($PY -c "from bench import registry; print(*registry.algorithms(), sep='\n')")

nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.mem --format=csv | tee "$OUT/device.txt"
$PY -c "import torch, triton, cupy; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'triton', triton.__version__, 'cupy', cupy.__version__)" | tee -a "$OUT/device.txt"

status=0
t0=$SECONDS
$PY -m pytest -q -rs -p no:cacheprovider tests --junitxml="$OUT/junit.xml" > "$OUT/pytest.log" 2>&1 || status=1
echo "pytest: $(tail -n 1 "$OUT/pytest.log")  ($((SECONDS - t0)) s)"

t0=$SECONDS
$PY -m pytest -q -p no:cacheprovider tests/test_benchmarks.py --benchmark-only \
    --benchmark-json="$OUT/pytest_benchmark.json" --benchmark-columns=median,min,max,rounds \
    > "$OUT/benchmark.log" 2>&1 || status=1
echo "pytest --benchmark-only: $(tail -n 1 "$OUT/benchmark.log")  ($((SECONDS - t0)) s)"

for alg in "${algs[@]}"; do
    t0=$SECONDS
    $PY -m bench compare --algorithm "$alg" --json "$OUT/$alg.json" --csv "$OUT/$alg.csv" \
        > "$OUT/$alg.txt" 2> "$OUT/$alg.log"
    rc=$?; [ $rc -eq 0 ] || status=1
    echo "bench compare --algorithm $alg: exit $rc ($((SECONDS - t0)) s)"
done

grep -E "FAILED|ERROR" "$OUT/pytest.log" | head -n 20
for alg in "${algs[@]}"; do cat "$OUT/$alg.txt"; done
exit $status
