"""CUDA transposes with a side of 2-300: the default variant, `narrow` forced (its kernels that
move 16-byte chunks take a side of up to 64: cuda_ref._transpose._flat) and `narrow`'s element-wise
kernel (``_flat`` off), beside torch and a same-size copy, L2 flushed, in turns; each checked bit
for bit. Usage (GPU): python lab/probe_flat_sides.py [--batches] [--json OUT]"""
import argparse
import json

import torch

import cuda_ref
from bench.timing import time_interleaved
from cuda_ref import _transpose as cuda_t
from lab._narrow_plans import narrow_elementwise_plan

H, F, B = torch.float16, torch.float32, torch.int8
SHAPES = [((48, 3332, 30), H), ((92069, 26), H), ((56, 40254), H), ((84, 61353), H), ((21, 1140, 629), H),
          ((17, 568, 3643), H), ((34, 466, 843), H), ((30, 1000003), H), ((100003, 48), H), ((64, 65536), H),
          ((65536, 64), H), ((40, 300001), F), ((300001, 24), F), ((33, 1000003), B), ((1000003, 20), B),
          ((12, 4097, 129), H), ((24, 4096), H), ((4096, 24), H), ((94424, 149), H), ((200, 200003), H)]

ap = argparse.ArgumentParser()
ap.add_argument("--json")
ap.add_argument("--batches", action="store_true", help="batches of narrow matrices instead")
args = ap.parse_args()
BATCHES = [((54, 2689, 15), F), ((17, 9, 3896), F), ((48, 3332, 30), H), ((64, 4096, 8), H), ((32, 8, 8192), H),
           ((12, 16, 100000), H), ((100, 5000, 3), F), ((8, 100003, 12), H)]
rows = []
for shape, dtype in BATCHES if args.batches else SHAPES:
    a = (torch.randn(shape, device="cuda") * 100).to(dtype)
    b = torch.empty_like(a)
    want = a.transpose(-1, -2).contiguous()
    fns = {"torch": lambda: want.copy_(a.transpose(-1, -2)), "copy": lambda: b.copy_(a),
           "default": lambda: cuda_ref.transpose(a), "narrow": lambda: cuda_ref.transpose(a, variant="narrow")}
    assert torch.equal(cuda_ref.transpose(a), want) and torch.equal(cuda_ref.transpose(a, variant="narrow"), want)
    plan = narrow_elementwise_plan(a)
    generic = torch.empty_like(want)
    plan.run(a, generic)
    assert torch.equal(generic, want)
    fns["generic"] = lambda: plan.run(a, generic)
    times = dict(zip(fns, (t.median_ms for t in time_interleaved(list(fns.values()), warmup_ms=5, rep_ms=15))))
    out = torch.empty_like(want)
    row = {"shape": shape, "dtype": str(dtype)[6:], "ms": times, "default": cuda_t.pick_variant(a),
           "narrow_kernel": cuda_t._flat(a, out.data_ptr() % 16 == 0) or "narrow"}
    rows.append(row)
    print(f"{shape} {row['dtype']}: x copy default ({row['default']}) {times['copy'] / times['default']:.2f}, "
          f"narrow ({row['narrow_kernel']}) {times['copy'] / times['narrow']:.2f}, element-wise "
          f"{times['copy'] / times['generic']:.2f}, torch {times['copy'] / times['torch']:.2f}",
          flush=True)
if args.json:
    json.dump({"device": torch.cuda.get_device_name(), "command": "lab/probe_flat_sides.py", "rows": rows},
              open(args.json, "w"), indent=1)
