"""wgmma_swap's tiles of W in pairs sharing a's stages (SWAP_APAIRS, matmul_wgmma_swap_apairs)
against the plans variant=None runs now, on drawn shapes where it would apply: 65-2047 rows of a
(log-uniform) against model layers' weights (bench/workloads.py), bf16, both layouts; only those
whose default is wgmma_swap with K whole and row blocks not paired are timed. Each shape: the
default, the same plan with a shared by tile pairs, torch; flushed and back to back, in turns.
Usage: python lab/probe_swap_apairs.py SEED COUNT OUT.json"""
import json, random, sys
import torch
import cuda_ref
from bench.timing import time_interleaved, time_loop
from bench.workloads import layer_shapes, log_uniform
from cuda_ref import _matmul as cm, _matmul_swap as sw

rng = random.Random(int(sys.argv[1]))
layers = layer_shapes()
out, tried = [], 0
while len(out) < int(sys.argv[2]) and tried < 50 * int(sys.argv[2]):
    tried += 1
    (N, K), M = rng.choice(layers), log_uniform(rng, 65, 2047)
    lay = rng.choice(("wt", "row"))
    a = torch.randn(M, K, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(N, K, device="cuda", dtype=torch.bfloat16).t() if lay == "wt" else \
        torch.randn(K, N, device="cuda", dtype=torch.bfloat16)
    before = cuda_ref.describe("matmul", a, b)
    if not before.startswith("wgmma_swap matmul_wgmma_swap<"):  # (K whole, row blocks alone: where it applies)
        continue
    rec, got = {"shape": [M, N, K], "layout": lay, "before": before}, {}
    for name, on in (("plain", False), ("shared", True)):  # (each with a plan made under its flag)
        sw.SWAP_APAIRS = on
        cm._PLANS.clear()
        rec[name + "_plan"] = cuda_ref.describe("matmul", a, b)
        got[name] = cuda_ref.matmul(a, b)
        fn = lambda: cuda_ref.matmul(a, b)  # noqa: E731
        t_ours, t_torch = time_interleaved([fn, lambda: torch.mm(a, b)], rep_ms=20)
        rec[name] = {"us": t_ours.median_ms * 1e3, "torch_us": t_torch.median_ms * 1e3,
                     "loop_us": time_loop(fn) * 1e3}
    sw.SWAP_APAIRS = False
    cm._PLANS.clear()
    assert torch.equal(got["plain"], got["shared"]), "the same sums in the same order"
    out.append(rec)
    print(M, N, K, lay, "plain %.1f shared %.1f (torch %.1f) loop %.1f / %.1f | %s -> %s" % (
        rec["plain"]["us"], rec["shared"]["us"], rec["plain"]["torch_us"], rec["plain"]["loop_us"],
        rec["shared"]["loop_us"], before[11:60], rec["shared_plan"][11:60]), flush=True)
json.dump({"device": torch.cuda.get_device_name(), "seed": int(sys.argv[1]), "records": out},
          open(sys.argv[3], "w"), indent=1)
