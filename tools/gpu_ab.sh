#!/usr/bin/env bash
# Same-run A/B draws: this tree against a base tree, each draw taken on the base and then on this
# tree (one GPU, in turns), then paired shape by shape (lab/pair_draws.py: by plan, by rows, by
# variant). Compare timings only within one such run.
# BASE: a directory with another revision's packages and cubins, made on the development machine
# and carried to the GPU machine, e.g.
#   git archive REV triton_impl cuda_ref kernel_common bench tools lab | tar -x -C build/base
#   (and its cubins: python -m cuda_ref.compile --out build/base/cuda_ref/prebuilt --arch sm_90)
# Usage (on a GPU machine, from the repository root):
#   OUT=/tmp/ab BASE=build/base ALGORITHM=gemv bash tools/gpu_ab.sh "cuda bfloat16 2" "triton float32 3"
# Each argument: backend, dtype, seed. Writes $OUT/{base,new}-BACKEND-DTYPE-sSEED.json.
# Env: TIMEOUT per draw (default 70 s), REP_MS (default 20), STOP: skip the draws not started by then (s),
# SIZE_SET: another size set than dense (lora).
set -uo pipefail
OUT=${OUT:-${TMPDIR:-/tmp}/gpu-ab}
BASE=${BASE:?a directory holding the base revision}
mkdir -p "$OUT"
export PYTHONPATH="$PWD" PYTHONUNBUFFERED=1
PY=${PYTHON:-python3}
for spec in "$@"; do
    read -r backend dtype seed <<< "$spec"
    if [ -n "${STOP:-}" ] && [ "$SECONDS" -gt "$STOP" ]; then echo "skipped $spec at $SECONDS s"; continue; fi
    for who in base new; do
        dir=$PWD; [ "$who" = base ] && dir=$BASE
        (cd "$dir" && GPUS=1 OUT="$OUT" NAME="$who-$backend-$dtype-s$seed" TIMEOUT="${TIMEOUT:-70}" \
            bash tools/gpu_draw.sh --algorithm "${ALGORITHM:-gemv}" --dtype "$dtype" --seed "$seed" \
            --rep-ms "${REP_MS:-20}" --backend "$backend" --backend torch ${SIZE_SET:+--size-set "$SIZE_SET"} \
            > /dev/null 2>&1)
    done
    echo "== $spec"
    $PY lab/pair_draws.py "$OUT/base-$backend-$dtype-s$seed.json" "$OUT/new-$backend-$dtype-s$seed.json" --backend "$backend" \
        | grep -v "^rows "
done
