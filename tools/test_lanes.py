"""Split the tests into N lanes of about equal counts, by test function, so that N pytest processes
share one GPU machine (tools/gpu_suite.sh with LANES=N): one line per lane, its node ids
("tests/test_x.py::test_y", every parametrization of the function).

Usage: python tools/test_lanes.py N [PATH ...]   (default PATH: tests)
"""

from __future__ import annotations

import collections
import subprocess
import sys


def lanes(n: int, paths: list[str]) -> list[list[str]]:
    out = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--collect-only", *paths],
                         capture_output=True, text=True).stdout
    counts = collections.Counter(line.split("[", 1)[0] for line in out.splitlines() if "::" in line)
    split: list[list[str]] = [[] for _ in range(n)]
    sizes = [0] * n
    for node, count in counts.most_common():  # largest first, each to the lightest lane
        i = sizes.index(min(sizes))
        split[i].append(node)
        sizes[i] += count
    return [sorted(lane) for lane in split if lane]


if __name__ == "__main__":
    for lane in lanes(int(sys.argv[1]), sys.argv[2:] or ["tests"]):
        print(" ".join(lane))
