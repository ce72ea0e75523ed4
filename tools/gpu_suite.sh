#!/usr/bin/env bash
# The whole GPU run in one call: the test suite (slow tests included), the pytest-benchmark
# entries, `python -m bench compare` and `bench overhead`, writing logs and results under $OUT (8 files: the
# device tool brings back at most 8; default ${TMPDIR:-/tmp}/gpu-suite, outside the tree).
# Usage (on a GPU machine, from the repository root):
#   OUT=/tmp/run bash tools/gpu_suite.sh [ALGORITHM ...]      # default: every algorithm
# Env: SKIP_TESTS=1 skips both pytest runs; SKIP_BENCH=1 the pytest-benchmark one; PYTEST_MARK selects tests by mark
# (default "not cpu_only": NVRTC compiles and CPU model runs, which CI runs; PYTEST_MARK= runs everything);
# LANES=N runs the tests in N pytest processes side by side, on the machine's GPUs in turn (tools/test_lanes.py; their logs packed in
# lanes.tgz, the FAILED / ERROR lines in failures.txt),
# LANE_TIMEOUT=S interrupting each after S seconds so that its summary still comes back (each lane
# lists each test of 0.5 s or more, all of them joined in lane-seconds.txt; a lane cut so is named CUT),
# SECONDS_FILE=F splitting the lanes by the durations in F, not by counts (an earlier run's
# lane-seconds.txt, e.g. bench/results/logs/h100-2026-12-07-gpu-suite-lane-seconds.txt; tools/test_lanes.py);
# cuda_ref/prebuilt/ (python -m cuda_ref.compile) spares the tests NVRTC: 49 MB of cubins, too much
# to carry beside the tree, 3 MB packed (PREBUILT_TAR: a .tar.xz of cuda_ref/prebuilt made by
# `tar -cJf build/prebuilt.tar.xz cuda_ref/prebuilt`, unpacked here first);
# TEST_FILES limits the first pytest run to those files (the whole suite passed a device call's
# 600 s on an H200; on an H100 "tests/test_[a-l]*.py" took 212 s and
# "tests/test_[m-z]*.py" passed 560 s at 87%: three calls, "tests/test_[a-l]*.py",
# "tests/test_[m-o]*.py", "tests/test_[p-z]*.py"; LANES=6 on an H100: three lanes of the whole suite
# done in 108-181 s, three cut at LANE_TIMEOUT=330 s: logs/h100-2026-12-05-gpu-suite-lanes.txt; LANES=8:
# seven done in 55-273 s, one cut at 470 s in test_gpu_8192: logs/h100-2026-12-06-gpu-suite-lanes.txt;
# with test_gpu_8192 dealt out to the lanes all eight done in 47-517 s: logs/h100-2026-12-06-gpu-suite-lanes-ae21aa8.txt);
# SKIP_COMPARE=1 skips the comparison; COMPARE_ARGS adds arguments to it (e.g. "--size-set models
# --dtype bfloat16 --layout wt --defaults-only"); SKIP_OVERHEAD=1 skips bench tune/overhead; SWEEP=1 adds the size sweep with plots (sweep.json,
# sweep.csv and the PNGs packed in plots.tgz). Copy $OUT/results.json and overhead.json into bench/results/.
set -uo pipefail
PYTEST_MARK=${PYTEST_MARK-not cpu_only}
OUT=${OUT:-${TMPDIR:-/tmp}/gpu-suite}
mkdir -p "$OUT"
# (Python's tarfile: the machine may lack xz)
if [ -n "${PREBUILT_TAR:-}" ]; then
    "${PYTHON:-python3}" -c "import sys, tarfile; tarfile.open(sys.argv[1]).extractall(filter='data')" "$PREBUILT_TAR" || exit 1
fi
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
PY=${PYTHON:-python3}
algs=("$@")
alg_args=()
for a in "${algs[@]}"; do alg_args+=(--algorithm "$a"); done
# pytest -k expression selecting the algorithms' tests (all when none named)
kexpr=""
[ ${#algs[@]} -gt 0 ] && kexpr=$(printf " or %s" "${algs[@]}") && kexpr=${kexpr# or }

{
    nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.mem --format=csv
    $PY -c "import torch, triton, cupy; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'triton', triton.__version__, 'cupy', cupy.__version__)"
} > "$OUT/device.txt" 2>&1
cat "$OUT/device.txt"

status=0
if [ "${SKIP_TESTS:-0}" != 1 ]; then
    t0=$SECONDS
    if [ "${LANES:-1}" -gt 1 ]; then
        # LANES pytest processes side by side, the test functions split by tools/test_lanes.py
        # shellcheck disable=SC2086  # TEST_FILES is a list of paths (globs expand here)
        mapfile -t lanes < <($PY tools/test_lanes.py "$LANES" ${TEST_FILES:-tests} ${PYTEST_MARK:+-m "$PYTEST_MARK"})
        pids=()
        # on a machine of several GPUs, the lanes take them in turn as their first (fewer lanes a
        # GPU), and still see them all (the tests of two GPUs)
        gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true)
        for i in "${!lanes[@]}"; do
            order=$((i % (gpus > 0 ? gpus : 1)))
            for ((g = 0; g < gpus; g++)); do [ "$g" -ne $((i % gpus)) ] && order+=",$g"; done
            # (every test of 0.5 s or more listed with its time: what SECONDS_FILE weighs a split by;
            # split by counts, test_gpu_8192 dealt out, the lanes ran 47-517 s on an H100)
            # shellcheck disable=SC2086  # a lane is a list of node ids
            CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES-$order} \
            timeout -s INT "${LANE_TIMEOUT:-0}" $PY -m pytest -q -rfEs -p no:cacheprovider --durations=0 --durations-min=0.5 ${lanes[$i]} ${kexpr:+-k "$kexpr or harness or nvrtc"} \
                ${PYTEST_MARK:+-m "$PYTEST_MARK"} > "$OUT/pytest.$i.log" 2>&1 &
            pids+=($!)
        done
        codes=()
        for pid in "${pids[@]}"; do wait "$pid"; codes+=($?); done
        # a lane that timeout interrupted (124) ran only its first tests: its summary counts those,
        # so it is named, not added in silently (lane 6 of an 8-lane run was cut at 497 s so)
        for i in "${!lanes[@]}"; do
            cut=""; [ "${codes[$i]}" -eq 124 ] && cut="   CUT at LANE_TIMEOUT=${LANE_TIMEOUT}: its later tests did not run"
            [ "${codes[$i]}" -ne 0 ] && status=1
            echo "pytest lane $i: $(tail -n 1 "$OUT/pytest.$i.log")$cut"
        done
        echo "pytest, ${#lanes[@]} lanes: $((SECONDS - t0)) s"
        # the lanes' logs in one archive (the device tool brings back at most 8 files), failures listed apart
        grep -hE "^(FAILED|ERROR) " "$OUT"/pytest.*.log > "$OUT/failures.txt"
        # every lane's durations in one file: what SECONDS_FILE splits the next run by
        grep -hE "^[0-9.]+s (setup|call|teardown) " "$OUT"/pytest.*.log | sort -rn > "$OUT/lane-seconds.txt"
        (cd "$OUT" && tar -czf lanes.tgz pytest.*.log && rm pytest.*.log)
        echo "failures: $(wc -l < "$OUT/failures.txt") (failures.txt; lane logs in lanes.tgz)"
    else
        # shellcheck disable=SC2086  # TEST_FILES is a list of paths (globs expand here)
        $PY -m pytest -q -rfEs -p no:cacheprovider ${TEST_FILES:-tests} ${kexpr:+-k "$kexpr or harness or nvrtc"} \
            ${PYTEST_MARK:+-m "$PYTEST_MARK"} \
            > "$OUT/pytest.log" 2>&1 || status=1
        echo "pytest: $(tail -n 1 "$OUT/pytest.log")  ($((SECONDS - t0)) s)"
    fi
fi
if [ "${SKIP_TESTS:-0}" != 1 ] && [ "${SKIP_BENCH:-0}" != 1 ]; then
    t0=$SECONDS
    $PY -m pytest -q -p no:cacheprovider tests/test_benchmarks.py --benchmark-only ${kexpr:+-k "$kexpr"} \
        --benchmark-json="$OUT/pytest_benchmark.json" --benchmark-columns=median,min,max,rounds \
        > "$OUT/benchmark.log" 2>&1 || status=1
    echo "pytest --benchmark-only: $(tail -n 1 "$OUT/benchmark.log")  ($((SECONDS - t0)) s)"
fi

if [ "${SKIP_COMPARE:-0}" != 1 ]; then
    t0=$SECONDS
    # shellcheck disable=SC2086  # COMPARE_ARGS is a list of words
    $PY -m bench compare "${alg_args[@]}" ${COMPARE_ARGS:-} --json "$OUT/results.json" --csv "$OUT/results.csv" \
        > "$OUT/compare.txt" 2>&1
    rc=$?; [ $rc -eq 0 ] || status=1
    echo "bench compare ${alg_args[*]} ${COMPARE_ARGS:-}: exit $rc ($((SECONDS - t0)) s)"
fi
if [ "${SKIP_COMPARE:-0}" != 1 ] && [ "${SKIP_OVERHEAD:-0}" != 1 ]; then
    t0=$SECONDS  # what a program pays per call, appended to compare.txt (8 files at most come back);
    # first the back-to-back shapes are tuned, as a program that runs them would (bench tune)
    $PY -m bench tune --size 1024 16x4096x4096 >> "$OUT/compare.txt" 2>&1 &&
        $PY -m bench overhead --json "$OUT/overhead.json" >> "$OUT/compare.txt" 2>&1
    rc=$?; [ $rc -eq 0 ] || status=1
    echo "bench overhead: exit $rc ($((SECONDS - t0)) s)"
fi

if [ "${SWEEP:-0}" = 1 ]; then
    t0=$SECONDS
    $PY -m bench compare "${alg_args[@]}" --sweep --json "$OUT/sweep.json" --csv "$OUT/sweep.csv" \
        --plot "$OUT/plots" > "$OUT/sweep.txt" 2>&1
    rc=$?; [ $rc -eq 0 ] || status=1
    [ -d "$OUT/plots" ] && tar -C "$OUT" -czf "$OUT/plots.tgz" plots && rm -r "$OUT/plots"
    echo "bench compare --sweep ${alg_args[*]}: exit $rc ($((SECONDS - t0)) s)"
fi

cat "$OUT"/pytest*.log 2>/dev/null | grep -E "^(FAILED|ERROR)" | head -n 20
[ -f "$OUT/compare.txt" ] && grep -vE "^(transpose|gemv|matmul) .*: (checking|timing)" "$OUT/compare.txt"
exit $status
