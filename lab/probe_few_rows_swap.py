"""17-64 rows of a against model layers' weights (bench/workloads.py's layer list, rows drawn
log-uniform), both layouts, bf16: variant=None against wgmma_swap and few_rows_mma forced, torch
beside; which the swap_pays rules take at these rows is weighed on what it prints
(docs/decisions/038-cuda-narrow-swap.md). Flushed, in turns.
Usage: python lab/probe_few_rows_swap.py SEED COUNT OUT.json [MAX_K] (layers of K <= MAX_K only)"""
import json, random, sys
import torch
import cuda_ref
from bench.timing import time_interleaved
from bench.workloads import layer_shapes, log_uniform

rng = random.Random(int(sys.argv[1]))
layers = [s for s in layer_shapes() if len(sys.argv) < 5 or s[1] <= int(sys.argv[4])]
out = []
for _ in range(int(sys.argv[2])):
    (N, K), M = rng.choice(layers), log_uniform(rng, 17 if len(sys.argv) < 5 else 33, 64)
    a = torch.randn(M, K, device="cuda", dtype=torch.bfloat16)
    for lay in ("wt", "row"):
        b = torch.randn(N, K, device="cuda", dtype=torch.bfloat16).t() if lay == "wt" else \
            torch.randn(K, N, device="cuda", dtype=torch.bfloat16)
        fns = {"torch": lambda: torch.mm(a, b), "default": lambda: cuda_ref.matmul(a, b),
               "swap": lambda: cuda_ref.matmul(a, b, variant="wgmma_swap"),
               "few_rows_mma": lambda: cuda_ref.matmul(a, b, variant="few_rows_mma")}
        t = {k: x.median_ms * 1e3 for k, x in zip(fns, time_interleaved(list(fns.values()), rep_ms=20))}
        rec = {"shape": [M, N, K], "layout": lay, "us": t, "describe": cuda_ref.describe("matmul", a, b)}
        out.append(rec)
        print(M, N, K, lay, " ".join("%s %.1f" % kv for kv in t.items()), "|", rec["describe"][:60], flush=True)
json.dump({"device": torch.cuda.get_device_name(), "seed": int(sys.argv[1]), "records": out}, open(sys.argv[3], "w"), indent=1)
