"""Tall narrow transposes (2-32 columns, contiguous): each CUDA kernel that can take them (the
default, narrow's element-wise kernel with its chunk kernels off, and the tiled variants) beside
Triton's default, torch and a same-size copy, L2 flushed, in turns; each checked bit for bit.
Prints each as a share of the copy. Usage (GPU): python lab/probe_narrow_tall.py [--json OUT]"""
import argparse
import json

import torch

import cuda_ref
import triton_impl
from bench.timing import time_interleaved
from cuda_ref import _transpose as cuda_t
from lab._narrow_plans import narrow_elementwise_plan

# (the tall narrow shapes of the fp16 / fp32 draws, seeds 230-232, and odd column counts)
SHAPES = [((1156143, 11), torch.float16), ((2017179, 4), torch.float16), ((292355, 10), torch.float16),
          ((2907314, 14), torch.float16), ((1043546, 16), torch.float16), ((700001, 31), torch.float16),
          ((3000017, 2), torch.float16), ((1630896, 6), torch.float16), ((500009, 24), torch.float16),
          ((400009, 20), torch.float16), ((92069, 26), torch.float16), ((1156143, 11), torch.float32),
          ((2017179, 4), torch.float32), ((292355, 10), torch.float32), ((800011, 29), torch.float32),
          ((300001, 24), torch.float32), ((600001, 17), torch.float32), ((4000037, 3), torch.int8),
          ((1000003, 13), torch.int8), ((1000003, 20), torch.int8), ((600011, 7), torch.float64)]
TILED = ("smem_tiled_rows", "smem_tiled_sheared", "smem_tiled_words", "smem_tiled_padded")

ap = argparse.ArgumentParser()
ap.add_argument("--json")
ap.add_argument("--draws", type=int, nargs="*", help="instead: the drawn shapes (bench/workloads.py, these seeds) of "
                "each dtype that cuda_ref's smem_tiled_words rule takes (_tall_words), with the tiled variants "
                "but words left out")
args = ap.parse_args()
if args.draws:
    from bench.workloads import draw_transpose
    dtypes = (torch.float16, torch.float32, torch.int8, torch.float64)
    SHAPES = list(dict.fromkeys((s, d) for seed in args.draws for s in draw_transpose(200, seed) for d in dtypes
                                if cuda_t._tall_words(torch.empty(s, dtype=d, device="meta"))))
    TILED = ("smem_tiled_words",)
rows = []
for shape, dtype in SHAPES:
    a = (torch.randn(shape, device="cuda") * 100).to(dtype)
    b = torch.empty_like(a)
    want = a.t().contiguous()
    fns = {"torch": lambda: a.t().contiguous(), "copy": lambda: b.copy_(a),
           "triton": lambda: triton_impl.transpose(a), "cuda": lambda: cuda_ref.transpose(a)}
    for v in ("narrow",) + TILED:
        fns[v] = lambda v=v: cuda_ref.transpose(a, variant=v)
    generic = narrow_elementwise_plan(a)
    out = torch.empty_like(want)
    fns["narrow element-wise"] = lambda: generic.run(a, out)
    for name, fn in fns.items():
        if name not in ("copy", "narrow element-wise"):
            assert torch.equal(fn(), want), (shape, name)
    generic.run(a, out)
    assert torch.equal(out, want), shape
    times = dict(zip(fns, (t.median_ms for t in time_interleaved(list(fns.values()), warmup_ms=5, rep_ms=15))))
    row = {"shape": shape, "dtype": str(dtype)[6:], "ms": times, "cuda": cuda_t.pick_variant(a),
           "narrow_kernel": cuda_t._flat(a, True) or "narrow"}
    rows.append(row)
    print(f"{shape} {row['dtype']} (cuda {row['cuda']}, narrow {row['narrow_kernel']}): x copy "
          + " ".join(f"{k} {times['copy'] / v:.2f}" for k, v in times.items() if k != "copy"), flush=True)
    del a, b, want, out
    torch.cuda.empty_cache()
if args.json:
    json.dump({"device": torch.cuda.get_device_name(), "command": "lab/probe_narrow_tall.py", "rows": rows},
              open(args.json, "w"), indent=1)
