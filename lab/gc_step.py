"""A ``python -m bench`` command with Python's collector timed (its collections and seconds by
generation, from ``gc.callbacks``, printed at the end); ``--nogc``: with the collector off.
Asked whether Mixtral's training step loses to torch in the collector (it does not:
bench/results/logs/h200-2026-11-30-mixtral-train-gc.txt).

Usage (GPU): PYTHONPATH=. python lab/gc_step.py model --model mixtral --workload train [--nogc]"""
import gc
import runpy
import sys
import time

spent = {0: [0, 0.0], 1: [0, 0.0], 2: [0, 0.0]}
mark = {}


def timed(phase, info):
    if phase == "start":
        mark["s"] = time.perf_counter()
    else:
        spent[info["generation"]][0] += 1
        spent[info["generation"]][1] += time.perf_counter() - mark["s"]


gc.callbacks.append(timed)
if "--nogc" in sys.argv:
    sys.argv.remove("--nogc")
    gc.disable()
sys.argv = ["bench", *sys.argv[1:]]
try:
    runpy.run_module("bench", run_name="__main__", alter_sys=True)
finally:
    print("gc (collections, seconds) by generation:", {g: (n, round(s, 3)) for g, (n, s) in spent.items()},
          "objects", len(gc.get_objects()), file=sys.stderr)
