"""What an L2 flush between timed calls charges to the call (docs/decisions/001-timing-flush-and-back-to-back.md).

Times copies, transposes and GEMVs after three flushes: zeroing a 256 MB buffer (what
triton.testing.do_bench does; it leaves the L2 full of dirty lines), reading a 256 MB buffer
(what bench.timing does; the L2 is left full of clean lines), and none. Prints the median of 60
event-timed calls of each. Usage, on a GPU machine: PYTHONPATH=. python lab/flush_probe.py
"""

from __future__ import annotations

import statistics

import torch

import cuda_ref
import triton_impl


def median_us(fn, flush, reps: int = 60) -> float:
    for _ in range(5):
        fn()
    events = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(reps)]
    for start, stop in events:
        flush()
        start.record()
        fn()
        stop.record()
    torch.cuda.synchronize()
    return 1e3 * statistics.median(start.elapsed_time(stop) for start, stop in events)


def cases():
    """(name, bytes moved, fn)"""
    for nbytes in (1 << 30, 128 << 20, 64 << 20):
        src = torch.rand(nbytes // 4, device="cuda") + 1
        dst = torch.empty_like(src)
        yield f"copy {nbytes >> 20} MB", 2 * nbytes, lambda s=src, d=dst: d.copy_(s)
    for shape, dtype in (((4097, 4095), torch.float32), ((12345, 6789), torch.float16),
                         ((4096, 4096), torch.float32), ((16384, 16384), torch.float32)):
        a = torch.rand(shape, device="cuda").to(dtype)
        for name, mod in (("triton", triton_impl), ("cuda", cuda_ref)):
            yield f"T {name} {shape} {dtype}", 2 * a.nbytes, lambda a=a, mod=mod: mod.transpose(a)
    for M, K in ((8192, 8192), (4096, 14336), (14336, 4096), (28672, 4096), (4096, 4096)):
        a = torch.rand((M, K), device="cuda").to(torch.bfloat16)
        x = torch.rand(K, device="cuda").to(torch.bfloat16)
        for name, fn in (("torch", torch.mv), ("triton", triton_impl.gemv), ("cuda", cuda_ref.gemv)):
            yield f"mv {name} {M}x{K}", a.nbytes, lambda a=a, x=x, fn=fn: fn(a, x)


def main() -> None:
    zeroed = torch.empty(256 << 20, dtype=torch.int8, device="cuda")
    read = torch.rand(64 << 20, device="cuda")
    flushes = {"zero": zeroed.zero_, "read": read.sum, "none": lambda: None}
    props = torch.cuda.get_device_properties(0)
    print(props.name, "L2", props.L2_cache_size >> 20, "MB")
    print(f"{'case':38s} {'zero':>8s} {'read':>8s} {'none':>8s}   GB/s zero / read")
    for name, nbytes, fn in cases():
        t = {k: median_us(fn, flush) for k, flush in flushes.items()}
        print(f"{name:38s} {t['zero']:8.1f} {t['read']:8.1f} {t['none']:8.1f}   "
              f"{nbytes / t['zero'] / 1e3:7.0f} / {nbytes / t['read'] / 1e3:7.0f}")


if __name__ == "__main__":
    main()
