"""wgmma_swap with an operand's stages shared in a cluster by multicast, against the plans
variant=None runs now, on drawn shapes where it would apply: 65-2047 rows of a (log-uniform)
against model layers' weights (bench/workloads.py), 16-bit, both layouts. Tiles of W in pairs
sharing a's stages (SWAP_APAIRS: where row blocks are not paired) and quads, two row blocks x two
tiles of W sharing both (SWAP_QUADS: where row blocks are paired on 128-row tiles of W); a shape is
timed where one of them changes its plan: the default, each changed plan, torch; flushed and back
to back, in turns.
Usage: python lab/probe_swap_shared.py SEED COUNT OUT.json"""
import json, random, sys
import torch
import cuda_ref
from bench.timing import time_interleaved, time_loop
from bench.workloads import layer_shapes, log_uniform
from cuda_ref import _matmul as cm, _matmul_swap as sw

FLAGS = {"plain": (), "apairs": ("SWAP_APAIRS",), "quads": ("SWAP_QUADS",)}


def plan_under(flags, a, b):
    for f in ("SWAP_APAIRS", "SWAP_QUADS"):
        setattr(sw, f, f in flags)
    cm._PLANS.clear()
    return cuda_ref.describe("matmul", a, b)


rng = random.Random(int(sys.argv[1]))
layers = layer_shapes()
out, tried = [], 0
while len(out) < int(sys.argv[2]) and tried < 50 * int(sys.argv[2]):
    tried += 1
    (N, K), M = rng.choice(layers), log_uniform(rng, 65, 2047)
    lay, dt = rng.choice(("wt", "row")), rng.choice((torch.bfloat16, torch.float16))
    a = torch.randn(M, K, device="cuda", dtype=dt)
    b = torch.randn(N, K, device="cuda", dtype=dt).t() if lay == "wt" else torch.randn(K, N, device="cuda", dtype=dt)
    plans = {name: plan_under(flags, a, b) for name, flags in FLAGS.items()}
    if not plans["plain"].startswith("wgmma_swap") or len(set(plans.values())) == 1:
        continue
    rec, got = {"shape": [M, N, K], "layout": lay, "dtype": str(dt)[6:], "plans": plans}, {}
    for name, flags in FLAGS.items():
        if name != "plain" and plans[name] == plans["plain"]:
            continue
        plan_under(flags, a, b)
        got[name] = cuda_ref.matmul(a, b)
        fn = lambda: cuda_ref.matmul(a, b)  # noqa: E731
        t_ours, t_torch = time_interleaved([fn, lambda: torch.mm(a, b)], rep_ms=20)
        rec[name] = {"us": t_ours.median_ms * 1e3, "torch_us": t_torch.median_ms * 1e3, "loop_us": time_loop(fn) * 1e3}
    plan_under((), a, b)
    for name in got:
        assert torch.equal(got[name], got["plain"]), ("the same sums in the same order", name)
    out.append(rec)
    print(M, N, K, lay, rec["dtype"], " ".join("%s %.1f/%.1f" % (n, rec[n]["us"], rec[n]["loop_us"]) for n in got),
          "torch %.1f |" % rec["plain"]["torch_us"], plans["plain"][11:60], flush=True)
json.dump({"device": torch.cuda.get_device_name(), "seed": int(sys.argv[1]), "records": out},
          open(sys.argv[3], "w"), indent=1)
