"""A narrow transpose (R <= 16 rows, a long side) written as a gather: each program writes BLOCK
consecutive elements of the output (contiguous: 16-byte stores), element e = j R + i read from
a[i, j] (R a constexpr: e // R a multiply). Beside the package's Triton narrow, torch and a copy,
L2 flushed, in turns, checked bit for bit. Usage (GPU): python lab/probe_narrow_gather.py"""
import torch
import triton
import triton.language as tl

import triton_impl
from bench.timing import time_interleaved


@triton.jit
def _gather_kernel(a_ptr, out_ptr, C, stride_r, stride_c, R: tl.constexpr, BLOCK: tl.constexpr):
    e = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = e < R * C
    j = e // R
    i = e - j * R
    v = tl.load(a_ptr + i * stride_r + j * stride_c, mask=mask)
    tl.store(out_ptr + e, v, mask=mask)


def gather(a, block, warps):
    R, C = a.shape
    out = torch.empty((C, R), dtype=a.dtype, device=a.device)
    bits = {1: torch.int8, 2: torch.int16, 4: torch.int32, 8: torch.int64}[a.element_size()]
    _gather_kernel[(triton.cdiv(R * C, block),)](a.view(bits), out.view(bits), C, a.stride(0), a.stride(1),
                                                 R=R, BLOCK=block, num_warps=warps)
    return out


SHAPES = [((13, 3541196), torch.float16), ((14, 2907314), torch.float16), ((11, 1905595), torch.float16),
          ((16, 1043546), torch.float16), ((6, 1630896), torch.float16), ((3, 1729660), torch.float16),
          ((3, 1000003), torch.float32), ((12, 4557), torch.float32), ((5, 77777), torch.int8)]
for shape, dtype in SHAPES:
    a = torch.randn(shape, device="cuda").to(dtype)
    b = torch.empty_like(a)
    want = a.t().contiguous()
    fns = {"torch": lambda: a.t().contiguous(), "copy": lambda: b.copy_(a), "narrow": lambda: triton_impl.transpose(a)}
    for block, warps in ((2048, 4), (4096, 4), (4096, 8), (8192, 8)):
        assert torch.equal(gather(a, block, warps), want)
        fns[f"g{block}w{warps}"] = lambda block=block, warps=warps: gather(a, block, warps)
    times = dict(zip(fns, (t.median_ms for t in time_interleaved(list(fns.values()), warmup_ms=5, rep_ms=20))))
    print(f"{shape} {str(dtype)[6:]}: x copy " + ", ".join(f"{k} {times['copy'] / v:.2f}" for k, v in times.items()),
          f"(copy {times['copy'] * 1e3:.1f} us)")
