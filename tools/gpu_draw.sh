#!/usr/bin/env bash
# A draw (`bench compare --size-set dense`) split across the machine's GPUs: one shard per GPU,
# side by side, each stopped by SIGINT after TIMEOUT seconds (it keeps the cases it finished), then
# merged into one results file. Each shard is timed on its own GPU against torch on that GPU.
# Usage (on a GPU machine, from the repository root):
#   OUT=/tmp/run NAME=bf16 TIMEOUT=250 bash tools/gpu_draw.sh --algorithm matmul --dtype bfloat16 --seed 1 ...
# writes $OUT/NAME.json and appends the shards' logs to $OUT/draws.log (the device tool brings back
# 8 files: seven draws and the log). The arguments go to `bench compare` after `--size-set dense
# --defaults-only --no-tune`.
set -uo pipefail
OUT=${OUT:-${TMPDIR:-/tmp}/gpu-draw}
NAME=${NAME:-draw}
mkdir -p "$OUT"
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
PY=${PYTHON:-python3}
gpus=${GPUS:-$(nvidia-smi --query-gpu=index --format=csv,noheader | wc -l)}
t0=$SECONDS
pids=()
for i in $(seq 1 "$gpus"); do
    CUDA_VISIBLE_DEVICES=$((i - 1)) timeout -s INT "${TIMEOUT:-0}" $PY -m bench compare --size-set dense \
        --defaults-only --no-tune --shard "$i/$gpus" --json "$OUT/$NAME.$i.json" "$@" \
        > "$OUT/$NAME.$i.log" 2>&1 &
    pids+=($!)
done
for pid in "${pids[@]}"; do wait "$pid"; done
cat "$OUT/$NAME".[0-9]*.log >> "$OUT/draws.log" && rm "$OUT/$NAME".[0-9]*.log
shards=()
for i in $(seq 1 "$gpus"); do [ -f "$OUT/$NAME.$i.json" ] && shards+=("$OUT/$NAME.$i.json"); done
$PY -m bench merge "$OUT/$NAME.json" "${shards[@]}" && rm "${shards[@]}"
echo "$NAME: $gpus shards, $((SECONDS - t0)) s"
$PY -c "import sys; from bench.results_io import read_json; from bench.tables import format_summary
print(format_summary(read_json(sys.argv[1])['records']))" "$OUT/$NAME.json"
