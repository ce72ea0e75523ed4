"""Split the tests into N lanes of about equal counts (or times), so that N pytest processes share one GPU
machine (tools/gpu_suite.sh with LANES=N): one line per lane, its node ids. A file goes whole to
one lane (its module-scoped fixtures are built once: test_model_suite's took 4 minutes a lane),
except a file of more than a lane's share, which is split by test function
("tests/test_x.py::test_y", every parametrization of the function), and the functions in SPREAD,
whose parametrizations are dealt out to the lanes in turn (test_gpu_8192 whole in one lane kept
that lane running 470 s while the other seven took 55-273 s on an H100); the units in HEAVY share one
lane, so that their gigabytes are not held by two lanes at once.

A unit weighs its count of tests, or with SECONDS_FILE (pytest's ``--durations`` lines: an earlier
run's lane-seconds.txt, which tools/gpu_suite.sh joins from its lanes' logs) its seconds there plus
FLOOR for each test: the lanes then end at about the same time, not with the same count (split
by count, lanes of an H100 run took 62-152 s, one 331 s, and one was cut at 497 s).

Usage: python tools/test_lanes.py N [PATH ...] [-m MARKEXPR]   (default PATH: tests; the arguments after N
go to pytest's collection, so a mark expression splits only the tests it selects)
Env: SECONDS_FILE=FILE weighs the units by that file's durations.
"""

from __future__ import annotations

import collections
import os
import re
import subprocess
import sys

# functions too slow to run whole in one lane: every variant at 8192^3, the naive ones included
SPREAD = ("tests/test_matmul.py::test_gpu_8192",)
# files and functions of operands of gigabytes, kept in one lane so that they run one after the other
# (two lanes' of them at once, beside the other lanes' caches, ran out of an H100's 80 GB)
HEAVY = ("tests/test_large.py", "tests/test_transpose.py::test_large")


# seconds a test not in the durations file weighs (pytest lists only those of 0.5 s or more; an
# H100 lane's unlisted tests took about 0.02 s each)
FLOOR = 0.05


def seconds_of(path: str | None) -> collections.Counter:
    """{node id: its seconds (setup, call and teardown)} from pytest's ``--durations`` lines in ``path``."""
    seconds = collections.Counter()
    if path:
        for line in open(path, encoding="utf-8", errors="replace"):
            m = re.match(r"\s*([0-9.]+)s (?:setup|call|teardown)\s+(tests/\S.*?)\s*$", line)  # (ids hold spaces)
            if m:
                seconds[m.group(2)] += float(m.group(1))
    return seconds


def lanes(n: int, paths: list[str], seconds: collections.Counter | None = None) -> list[list[str]]:
    out = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--collect-only", *paths],
                         capture_output=True, text=True).stdout
    nodes = [line.strip() for line in out.splitlines() if "::" in line]
    weigh = (lambda node: seconds[node] + FLOOR) if seconds else (lambda node: 1)
    split: list[list[str]] = [[] for _ in range(n)]
    sizes = [0.0] * n
    spread = [node for node in nodes if node.split("[", 1)[0] in SPREAD]
    for i, node in enumerate(spread):
        split[i % n].append(node)
        sizes[i % n] += weigh(node)
    rest = [node for node in nodes if node.split("[", 1)[0] not in SPREAD]
    functions = collections.Counter()
    for node in rest:
        functions[node.split("[", 1)[0]] += weigh(node)
    files = collections.Counter()
    for node, weight in functions.items():
        files[node.split("::", 1)[0]] += weight
    share = sum(files.values()) / n
    units = collections.Counter()
    for node, weight in functions.items():
        f = node.split("::", 1)[0]
        units[node if files[f] > share else f] += weight
    heavy = [unit for unit in units if unit in HEAVY or unit.split("::", 1)[0] in HEAVY]
    if heavy:  # one unit of them all, in one lane
        units[" ".join(heavy)] = sum(units.pop(unit) for unit in heavy)
    for unit, weight in units.most_common():  # heaviest first, each to the lightest lane
        i = sizes.index(min(sizes))
        split[i].extend(unit.split())
        sizes[i] += weight
    return [sorted(lane) for lane in split if lane]


if __name__ == "__main__":
    for lane in lanes(int(sys.argv[1]), sys.argv[2:] or ["tests"], seconds_of(os.environ.get("SECONDS_FILE"))):
        print(" ".join(lane))
