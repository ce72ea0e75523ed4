"""tools/test_lanes.py, checked on a stand-in collection (no GPU, no pytest run): every test goes to
exactly one lane, a file goes whole, SPREAD's parametrizations are dealt out, and HEAVY's units share
one lane (their gigabytes, held by two lanes at once, ran an H100 out of memory)."""

import subprocess
import types

from conftest import tool_module


def test_lanes_keep_files_whole_spread_8192_and_share_one_lane_for_the_heavy(monkeypatch):
    tool = tool_module("test_lanes")
    nodes = ([f"tests/test_a.py::test_x[{i}]" for i in range(30)] + [f"tests/test_b.py::test_y[{i}]" for i in range(5)]
             + [f"tests/test_matmul.py::test_gpu_8192[{i}]" for i in range(8)]
             + [f"tests/test_matmul.py::test_gpu[{i}]" for i in range(40)]
             + [f"tests/test_large.py::test_past[{i}]" for i in range(6)]
             + [f"tests/test_transpose.py::test_large[{i}]" for i in range(9)]
             + [f"tests/test_transpose.py::test_small[{i}]" for i in range(30)])
    out = "\n".join(nodes) + "\n\n135 tests collected\n"
    monkeypatch.setattr(subprocess, "run", lambda *a, **k: types.SimpleNamespace(stdout=out))
    lanes = tool.lanes(4, ["tests"])
    units = [u for lane in lanes for u in lane]
    assert len(units) == len(set(units))
    assert "tests/test_b.py" in units and not any(u.startswith("tests/test_b.py::") for u in units)
    assert all(sum(f"test_gpu_8192[{i}]" in " ".join(lane) for i in range(8)) == 2 for lane in lanes)
    heavy = [i for i, lane in enumerate(lanes) if "tests/test_large.py" in lane or "tests/test_transpose.py::test_large" in lane]
    assert len(heavy) == 1 and {"tests/test_large.py", "tests/test_transpose.py::test_large"} <= set(lanes[heavy[0]])


def test_durations_weigh_the_units_so_a_slow_file_gets_a_lane_to_itself(monkeypatch, tmp_path):
    tool = tool_module("test_lanes")
    nodes = [f"tests/test_{f}.py::test_x[{i}, {i + 1}]" for f in "abcdefgh" for i in range(10)]
    out = "\n".join(nodes) + "\n\n80 tests collected\n"
    monkeypatch.setattr(subprocess, "run", lambda *a, **k: types.SimpleNamespace(stdout=out))
    log = tmp_path / "lanes.log"  # pytest's --durations lines (ids with spaces), a's tests slow
    log.write_text("".join(f"{t}s {phase}     tests/test_a.py::test_x[{i}, {i + 1}]\n"
                           for i in range(10) for t, phase in ((9.5, "call"), (0.5, "setup")))
                   + "0.60s call     tests/test_b.py::test_x[0, 1]\n= 1 passed in 101s =\n")
    seconds = tool.seconds_of(str(log))
    assert seconds["tests/test_a.py::test_x[3, 4]"] == 10.0 and seconds["tests/test_b.py::test_x[0, 1]"] == 0.6
    by_count = tool.lanes(4, ["tests"])
    assert all(len(lane) == 2 for lane in by_count)  # 8 files of 10 tests: two a lane
    by_time = tool.lanes(4, ["tests"], seconds)
    slow = [lane for lane in by_time if any(u.startswith("tests/test_a.py") for u in lane)]
    assert slow == [["tests/test_a.py::test_x"]]  # (past a lane's share: split by function, here one)
    assert sorted(u for lane in by_time for u in lane if not u.startswith("tests/test_a.py")) == \
        [f"tests/test_{f}.py" for f in "bcdefgh"]
