"""Triton's narrow on tall matrices (2-32 columns, contiguous): the flat-run kernel
(``NARROW_TALL``: _transpose_narrow_tall_kernel, CUDA's narrow_flat_tall) against the element-wise
tile that ships and CUDA's narrow, with a same-size copy and torch, L2 flushed, in turns; each
checked bit for bit. Usage (GPU): python lab/probe_narrow_tall.py [--json OUT]"""
import argparse
import json

import torch

from bench.timing import time_interleaved
from cuda_ref import _transpose as cuda_t
from triton_impl import _transpose as triton_t

# (the tall narrow shapes of the fp16 / fp32 draws, seeds 230-232, and odd column counts)
SHAPES = [((1156143, 11), torch.float16), ((2017179, 4), torch.float16), ((292355, 10), torch.float16),
          ((2907314, 14), torch.float16), ((1043546, 16), torch.float16), ((700001, 31), torch.float16),
          ((3000017, 2), torch.float16), ((1630896, 6), torch.float16), ((500009, 24), torch.float16),
          ((1156143, 11), torch.float32), ((2017179, 4), torch.float32), ((292355, 10), torch.float32),
          ((800011, 29), torch.float32), ((4000037, 3), torch.int8), ((1000003, 13), torch.int8),
          ((600011, 7), torch.float64)]

ap = argparse.ArgumentParser()
ap.add_argument("--json")
args = ap.parse_args()
rows = []
for shape, dtype in SHAPES:
    a = (torch.randn(shape, device="cuda") * 100).to(dtype)
    b = torch.empty_like(a)
    want = a.t().contiguous()
    fns = {"torch": lambda: a.t().contiguous(), "copy": lambda: b.copy_(a)}
    for name, mod, flag in (("cuda", cuda_t, None), ("triton", triton_t, False), ("triton tall", triton_t, True)):
        if flag is not None:
            triton_t.NARROW_TALL = flag
        mod._PLANS._plans.clear()
        fn = mod._PLANS.get((a,), None, None).run
        out = torch.empty_like(want)
        fn(a, out)
        assert torch.equal(out, want), (shape, name)
        fns[name] = (lambda fn=fn, out=out: fn(a, out))
    triton_t.NARROW_TALL = False
    times = dict(zip(fns, (t.median_ms for t in time_interleaved(list(fns.values()), warmup_ms=5, rep_ms=15))))
    row = {"shape": shape, "dtype": str(dtype)[6:], "ms": times}
    rows.append(row)
    print(f"{shape} {row['dtype']}: x copy " + " ".join(f"{k} {times['copy'] / v:.2f}" for k, v in times.items()
                                                      if k != "copy"), flush=True)
    del a, b, want
    torch.cuda.empty_cache()
if args.json:
    json.dump({"device": torch.cuda.get_device_name(), "command": "lab/probe_narrow_tall.py", "rows": rows},
              open(args.json, "w"), indent=1)
