#!/usr/bin/env bash
# compute-sanitizer memcheck (out-of-bounds / misaligned accesses) and racecheck (shared-memory
# hazards: a missing barrier between the stages of double_buffered would show here) over every
# CUDA matmul variant (bench/tools/sanitize_matmul.py). Exit status non-zero on any error.
# Usage, on a GPU machine, from the repository root:
#   OUT=/tmp/run PYTHONPATH=. bash bench/sanitize.sh
# Writes $OUT/sanitizer.txt (the summary) when OUT is set. compute-sanitizer comes from
# $COMPUTE_SANITIZER, PATH, /usr/local/cuda/bin, or pip's nvidia-cuda-sanitizer-api.
set -uo pipefail
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
PY=${PYTHON:-python3}
CS=${COMPUTE_SANITIZER:-$(command -v compute-sanitizer || true)}
[ -z "$CS" ] && [ -x /usr/local/cuda/bin/compute-sanitizer ] && CS=/usr/local/cuda/bin/compute-sanitizer
if [ -z "$CS" ]; then
    site=$($PY -c "import nvidia, os; print(os.path.dirname(list(nvidia.__path__)[0]))" 2>/dev/null)
    [ -n "$site" ] && CS=$(find "$site/nvidia" -type f -name compute-sanitizer 2>/dev/null | head -n 1)
fi
if [ -z "$CS" ]; then
    echo "compute-sanitizer not found: set COMPUTE_SANITIZER, or pip install nvidia-cuda-sanitizer-api" >&2
    exit 2
fi
LOG=$(mktemp -d)
status=0
for tool in memcheck racecheck; do
    t0=$SECONDS
    "$CS" --tool "$tool" --error-exitcode 1 $PY bench/tools/sanitize_matmul.py > "$LOG/$tool.log" 2>&1
    rc=$?
    [ $rc -eq 0 ] || status=1
    echo "== $tool: exit $rc ($((SECONDS - t0)) s): $(grep -E "ERROR SUMMARY|RACECHECK SUMMARY" "$LOG/$tool.log" | tail -n 1)"
    grep -E "wrong result|FAIL" "$LOG/$tool.log"
    grep -E "^========= (Invalid|Error|Race|Warning)" "$LOG/$tool.log" | sort | uniq -c | head -n 20
done > "$LOG/summary.txt"
{ cat "$LOG/summary.txt"; echo; echo "---- memcheck log ----"; tail -n 60 "$LOG/memcheck.log"
  echo; echo "---- racecheck log ----"; tail -n 60 "$LOG/racecheck.log"; } > "$LOG/sanitizer.txt"
cat "$LOG/summary.txt"
if [ -n "${OUT:-}" ]; then mkdir -p "$OUT" && cp "$LOG/sanitizer.txt" "$OUT/sanitizer.txt"; fi
exit $status
