"""Sweep the blocked Triton transpose's (BLOCK_R, BLOCK_C, num_warps) on a GPU.

The table in triton_impl/transpose.py (_blocked_config) quotes what this printed. Usage:
    PYTHONPATH=. python3 bench/tools/sweep_transpose_triton.py
"""

import itertools

import torch
import triton

from bench.ceilings import copy_bandwidth_gbs
from bench.timing import time_gpu
from triton_impl.transpose import _BITS, _transpose_blocked_kernel

copy = copy_bandwidth_gbs()
print(f"{torch.cuda.get_device_name(0)}: copy {copy:.0f} GB/s")
for dtype, (R, C) in [(torch.float32, (16384, 16384)), (torch.float16, (16384, 16384)),
                      (torch.float64, (8192, 16384)), (torch.float32, (12345, 6789))]:
    a = torch.rand(R, C, device="cuda").to(dtype)
    out = torch.empty(C, R, device="cuda", dtype=dtype)
    bits = _BITS[a.element_size()]
    av, ov = a.view(bits), out.view(bits)
    res = []
    for br, bc, nw in itertools.product((32, 64, 128), (32, 64, 128, 256), (4, 8, 16)):
        if br * bc * a.element_size() > 64 * 1024:
            continue
        grid = (triton.cdiv(R, br) * triton.cdiv(C, bc),)
        fn = lambda: _transpose_blocked_kernel[grid](av, ov, R, C, C, 1, BLOCK_R=br, BLOCK_C=bc, num_warps=nw)
        fn()
        assert torch.equal(out, a.t())
        t = time_gpu(fn)
        gbs = 2 * a.numel() * a.element_size() / t.median_ms / 1e6
        res.append((gbs, br, bc, nw))
    res.sort(reverse=True)
    print(f"{str(dtype):15} {R}x{C}: " + "  ".join(f"{br}x{bc}/w{nw}:{gbs / copy:.3f}" for gbs, br, bc, nw in res[:10]))
