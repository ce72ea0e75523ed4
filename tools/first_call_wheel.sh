#!/usr/bin/env bash
# Issue 55's first-call table from a non-editable install: the wheel's files installed into a
# folder of their own (--target, --no-deps: the GPU machine has no network; its python keeps its
# own torch, triton and cupy), then tools/first_call.py run from outside the checkout with only
# that folder on PYTHONPATH, four times: empty caches, the same caches filled (Python's bytecode among them,
# tools/first_call.py), filled with the environment's bytecode setting, torch's first calls.
# The wheel is built where NVRTC is (its setup.py compiles the shipped cubins, no GPU needed):
#   python -m pip wheel --no-deps -w .whl .        (.whl/ is ignored by git: carry it)
# Usage (GPU machine, repository root): OUT=/tmp/fc bash tools/first_call_wheel.sh
set -euo pipefail
OUT=${OUT:-/tmp/first-call}
mkdir -p "$OUT"
wheels=(.whl/*.whl)
[ -f "${wheels[0]}" ] || { echo "error: no wheel in .whl/ (python -m pip wheel --no-deps -w .whl .)" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
PY=${PYTHON:-python3}
"$PY" -m pip install -q --no-deps --no-index --target "$work/site" "${wheels[0]}"
script=$PWD/tools/first_call.py
cd "$work"  # nothing of the checkout on the path: cuda_ref and triton_impl come from the wheel
export PYTHONPATH="$work/site"
for run in empty filled; do
    "$PY" "$script" --cache "$work/cache" --json "$OUT/first-call-wheel-$run.json"
done
# the same caches filled, Python's bytecode as the environment says (the lent machine: none kept)
"$PY" "$script" --cache "$work/cache" --no-bytecode-cache --json "$OUT/first-call-wheel-filled-env-bytecode.json"
"$PY" "$script" --torch --json "$OUT/first-call-wheel-torch.json"
