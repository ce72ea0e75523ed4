"""bench/tp.py: the suite's Llama in tensor parallel over two ranks of a torchrun. Without GPUs the
ranks run on the CPU (gloo) with torch's kernels: the split itself is checked. With two GPUs (or
more), each rank's products go through each backend's switch, judged against the one-device
referee (issue 53)."""

import json
import os
import pathlib
import subprocess
import sys

import pytest

pytest.importorskip("transformers")
torch = pytest.importorskip("torch")

ROOT = pathlib.Path(__file__).resolve().parents[1]


# A gloo rank can abort in torch's C++ ("terminate called without an active exception"): twice in
# CPU CI runs, the second with bench.tp's barrier before destroy_process_group; never in 51 local
# runs. Only that abort runs again (the record is still checked); any other failure fails at once.
GLOO_ABORT = "terminate called without an active exception"


def _torchrun(tmp_path, *args, tries=3) -> dict:
    out = tmp_path / "tp.json"
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    for _ in range(tries):
        out.unlink(missing_ok=True)
        run = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", "2",
                              "--standalone", "-m", "bench.tp", *args, "--json", str(out)],
                             cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
        if run.returncode == 0 or GLOO_ABORT not in run.stderr:
            break
    assert run.returncode == 0, run.stderr[-4000:]
    return json.loads(out.read_text())


@pytest.mark.cpu_only
def test_the_split_matches_one_device_on_the_cpu(tmp_path):
    if torch.cuda.is_available():
        pytest.skip("the CPU path (gloo)")
    record = _torchrun(tmp_path, "--size", "tiny", "--dtype", "float32")
    assert record["ranks"] == 2 and record["device"] == "cpu" and record["backends"] == {}
    assert 0 < record["split_vs_one_device"] <= record["tolerance"]  # (an all-reduce: another order of sums)


@pytest.mark.skipif(torch.cuda.device_count() < 2, reason="needs 2 GPUs (a rank each)")
def test_the_switch_runs_each_ranks_products_within_tolerance(tmp_path):
    record = _torchrun(tmp_path, "--size", "small", "--dtype", "bfloat16")
    assert record["split_torch"] <= record["tolerance"]
    for backend in ("triton", "cuda"):
        judged = record["backends"][backend]
        assert judged["logits_err"]["ours"] <= record["tolerance"], (backend, judged)
        assert judged["logits_err"]["ours"] <= 2 * judged["logits_err"]["torch"] + 1e-3, (backend, judged)
        assert judged["routed"].get("mm", 0) > 0, (backend, judged["routed"])
