"""Sweep the blocked Triton transpose's (BLOCK_R, BLOCK_C, num_warps) on a GPU, and two cache
hints on a copy of the kernel. The table in triton_impl/_transpose.py quotes what this printed.

    PYTHONPATH=. python3 lab/sweep_transpose_triton.py [--odd]

``--odd``: only the unaligned shapes of issue 16 (12345x6789, 4097x4095 and 6789x12345, fp32 and fp16).
"""

from __future__ import annotations

import itertools
import sys

import torch
import triton
import triton.language as tl

from bench.ceilings import copy_bandwidth_gbs
from bench.timing import time_gpu
from kernel_common import INT_BY_SIZE
from triton_impl._transpose import _transpose_blocked_kernel, alignment


@triton.jit
def _hinted(a_ptr, out_ptr, R, C, stride_ar, stride_ac, BLOCK_R: tl.constexpr, BLOCK_C: tl.constexpr,
            LOAD_CM: tl.constexpr, STORE_CM: tl.constexpr):
    pid = tl.program_id(0)
    tiles_c = tl.cdiv(C, BLOCK_C)
    offs_r = (pid // tiles_c).to(tl.int64) * BLOCK_R + tl.arange(0, BLOCK_R)
    offs_c = (pid % tiles_c).to(tl.int64) * BLOCK_C + tl.arange(0, BLOCK_C)
    mask = (offs_r[:, None] < R) & (offs_c[None, :] < C)
    tile = tl.load(a_ptr + offs_r[:, None] * stride_ar + offs_c[None, :] * stride_ac, mask=mask,
                   cache_modifier=LOAD_CM)
    tl.store(out_ptr + offs_c[:, None] * R + offs_r[None, :], tl.trans(tile), mask=tl.trans(mask),
             cache_modifier=STORE_CM)


def main() -> None:
    copy = copy_bandwidth_gbs()
    print(f"{torch.cuda.get_device_name(0)}: copy {copy:.0f} GB/s")
    cases = [(torch.float32, (16384, 16384)), (torch.float16, (16384, 16384)),
             (torch.float64, (8192, 16384)), (torch.float32, (12345, 6789))]
    if "--odd" in sys.argv[1:]:
        cases = [(dt, shape) for dt in (torch.float32, torch.float16) for shape in ((12345, 6789), (4097, 4095), (6789, 12345))]
    for dtype, (R, C) in cases:
        a = torch.rand(R, C, device="cuda").to(dtype)
        out = torch.empty(C, R, device="cuda", dtype=dtype)
        bits = INT_BY_SIZE[a.element_size()]
        av, ov = a.view(bits), out.view(bits)
        _, hints = alignment(a)  # what the wrapper would pass
        res = []
        for br, bc, nw in itertools.product((32, 64, 128, 256, 512), (32, 64, 128, 256), (4, 8, 16)):
            if br * bc * a.element_size() > 64 * 1024:
                continue
            grid = (triton.cdiv(R, br) * triton.cdiv(C, bc),)
            fn = lambda: _transpose_blocked_kernel[grid](av, ov, R, C, 0, C, 1, BLOCK_R=br, BLOCK_C=bc,
                                                         IN_HINT=hints[0], OUT_HINT=hints[1], num_warps=nw)
            fn()
            assert torch.equal(out, a.t())
            t = time_gpu(fn)
            res.append((2 * a.numel() * a.element_size() / t.median_ms / 1e6, br, bc, nw, ""))
        res.sort(reverse=True)
        _, br, bc, nw, _ = res[0]
        grid = (triton.cdiv(R, br) * triton.cdiv(C, bc),)
        for lcm, scm in ((".cg", ""), ("", ".cs"), (".cg", ".cs"), ("", ".wt")):
            fn = lambda: _hinted[grid](av, ov, R, C, C, 1, BLOCK_R=br, BLOCK_C=bc, LOAD_CM=lcm, STORE_CM=scm,
                                       num_warps=nw)
            fn()
            assert torch.equal(out, a.t())
            t = time_gpu(fn)
            res.append((2 * a.numel() * a.element_size() / t.median_ms / 1e6, br, bc, nw, f"ld{lcm}st{scm}"))
        res.sort(reverse=True)
        print(f"{str(dtype):15} {R}x{C}: " + "  ".join(
            f"{br}x{bc}/w{nw}{'/' + h if h else ''}:{gbs / copy:.3f}" for gbs, br, bc, nw, h in res[:10]))


if __name__ == "__main__":
    main()
