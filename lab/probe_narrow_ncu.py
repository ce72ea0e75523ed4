"""The narrow transposes of long matrices, both backends beside torch's and a same-size copy (L2
flushed, in turns): each checked bit for bit. Under Nsight Compute (``--ncu``: one call each, for
its counters) or timed. Usage (GPU): python lab/probe_narrow_ncu.py [--ncu]"""
import sys

import torch

import cuda_ref
import triton_impl
from bench.timing import time_interleaved

SHAPES = [((13, 3541196), torch.float16), ((14, 2907314), torch.float16), ((11, 1905595), torch.float16),
          ((16, 1043546), torch.float16), ((6, 1630896), torch.float16), ((3, 1729660), torch.float16),
          ((2017179, 4), torch.float16), ((292355, 10), torch.float16), ((3, 1000003), torch.float32),
          ((12, 4557), torch.float32), ((10, 10), torch.float16)]

for shape, dtype in SHAPES[:1] if "--ncu" in sys.argv else SHAPES:
    a = torch.randn(shape, device="cuda").to(dtype)
    b = torch.empty_like(a)
    want = a.t().contiguous()
    fns = {"torch": lambda: a.t().contiguous(), "copy": lambda: b.copy_(a),
           "cuda": lambda: cuda_ref.transpose(a), "triton": lambda: triton_impl.transpose(a)}
    assert torch.equal(cuda_ref.transpose(a), want) and torch.equal(triton_impl.transpose(a), want)
    if "--ncu" in sys.argv:
        for f in fns.values():
            f()
        torch.cuda.synchronize()
        continue
    times = dict(zip(fns, (t.median_ms for t in time_interleaved(list(fns.values()), warmup_ms=5, rep_ms=20))))
    print(f"{shape} {str(dtype)[6:]}: " + ", ".join(f"{k} {v * 1e3:.1f} us" for k, v in times.items())
          + f"; x copy: cuda {times['copy'] / times['cuda']:.2f}, triton {times['copy'] / times['triton']:.2f}"
          + f"; x torch: cuda {times['torch'] / times['cuda']:.2f}, triton {times['torch'] / times['triton']:.2f}")
