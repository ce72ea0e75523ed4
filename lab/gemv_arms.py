"""The GEMV probes' common measurement (lab/probe_gemv_flat.py, lab/probe_gemv_masked.py)."""

from __future__ import annotations


def time_gemv_arms(a, x, arms: dict, rep_ms: float = 20):
    """torch.mv, the package's default, each of ``arms`` (name -> a call returning y) and a same-size
    copy of A: each result checked against float64, then all timed flushed in turns and back to back.
    Returns (flushed ms, back-to-back ms, share of the copy) by name; a share is the GEMV's bytes / time
    over the copy's, which moves the matrix twice."""
    import torch

    import cuda_ref
    from bench.specs import GemvSpec
    from bench.timing import time_interleaved, time_loop

    ref = GemvSpec.reference((a, x))
    dst = torch.empty_like(a)
    impls = {"torch.mv": lambda: torch.mv(a, x), "default": lambda: cuda_ref.gemv(a, x), **arms,
             "copy": lambda: dst.copy_(a)}
    for name, fn in impls.items():
        if name != "copy":
            cmp = GemvSpec.compare(fn(), ref, (a, x))
            assert cmp.ok, (name, tuple(a.shape), cmp.detail)
    t = {n: tt.median_ms for n, tt in zip(impls, time_interleaved(list(impls.values()), rep_ms=rep_ms))}
    loop = {n: time_loop(fn) for n, fn in impls.items() if n != "copy"}
    return t, loop, {n: t["copy"] / (2 * t[n]) for n in loop}
