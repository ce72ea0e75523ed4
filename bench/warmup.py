"""``python -m bench warmup``: the first calls of a service, made before it serves.

A first call compiles (Triton; CUDA without a shipped cubin) and loads its kernel, and a new key
makes its plan: up to seconds with empty caches (tools/first_call.py). Warming calls each
default once on the shapes a program will pass, so Triton's and CuPy's disk caches hold every
kernel they need and the next process only loads them. Each backend's matmul runs on the
product's operands (b as ``layout`` has it), and its GEMV on the weight with one token.
"""

from __future__ import annotations

import time

import torch

from bench.registry import package


def warm(backends, dtypes, shapes, layout: str = "wt", progress=print) -> list[dict]:
    """Call each backend's matmul (and gemv, once a weight) on each shape and dtype: one
    {backend, dtype, call, shape, seconds} a call, timed to its synchronize (the first call of a
    key in this process: the compile or the load, and the plan)."""
    records = []
    weights_done = set()
    for dtype_name in dtypes:
        dtype = getattr(torch, dtype_name)
        for M, N, K in shapes:
            a = torch.randn(M, K, device="cuda", dtype=dtype)
            w = torch.randn(N, K, device="cuda", dtype=dtype)
            b = w.t() if layout == "wt" else w.t().contiguous()
            x = torch.randn(K, device="cuda", dtype=dtype)
            for backend in backends:
                mod = package(backend)
                calls = [("matmul", (M, N, K), lambda: mod.matmul(a, b))]
                if (backend, dtype_name, N, K) not in weights_done:
                    weights_done.add((backend, dtype_name, N, K))
                    calls.append(("gemv", (N, K), lambda: mod.gemv(w, x)))
                for call, shape, fn in calls:
                    start = time.perf_counter()
                    fn()
                    torch.cuda.synchronize()
                    seconds = time.perf_counter() - start
                    records.append({"backend": backend, "dtype": dtype_name, "call": call, "shape": list(shape),
                                    "seconds": seconds})
                    progress(f"{backend} {dtype_name} {call} {'x'.join(map(str, shape))}: {seconds:.3f} s")
    return records
