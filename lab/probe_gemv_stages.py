"""Triton GEMV's row tiles with their K loop software-pipelined: does ``tl.range(..., num_stages=S)``
pay? ``_gemv_kernel``'s loop (``_piece_sums``) is a plain ``range``: each iteration's loads (4 16-byte
vectors of A a thread on 8 x 512 tiles) wait before its FMAs, and the compiled kernel holds no
``cp.async`` (TTGIR / PTX for sm_90, no GPU needed). With ``num_stages`` Triton 3.6 brings the next
S - 1 tiles into shared memory while one is reduced (8 x 512 bf16: 9 KB at S = 2, 18 KB at 3). Here
the same loop with S = 1..4 on both row tiles (8 x 512 and 4 x 2048, 4 warps), against torch.mv,
both backends' defaults and a same-size copy, L2 flushed, in turns; every result checked.

Usage (GPU): PYTHONPATH=. python lab/probe_gemv_stages.py [--dtype bfloat16] [--json OUT]
"""

from __future__ import annotations

import argparse
import json

import torch
import triton
import triton.language as tl

import cuda_ref
import triton_impl
from bench.specs import GemvSpec
from bench.timing import time_interleaved
from kernel_common import cdiv

SHAPES = ((8192, 4608), (8192, 8192), (8192, 28672), (16384, 3072), (18432, 2304), (6144, 6144), (7168, 5120),
          (11008, 4096), (4096, 14336), (2000, 12000), (27648, 5120), (151936, 1536), (152064, 8192), (1024, 8192),
          (32000, 4096), (3584, 14336), (4800, 1600), (2048, 2048))
TILES = ((8, 512, 4), (4, 2048, 4))
STAGES = (1, 2, 3, 4)


@triton.jit
def _rows_kernel(a_ptr, x_ptr, y_ptr, M, K, stride_am, BLOCK_M: tl.constexpr, BLOCK_K: tl.constexpr,
                 VEC: tl.constexpr, STAGES: tl.constexpr):
    """y = A x over rows pid * BLOCK_M..: ``_piece_sums``' loop (one piece, rows on 16 bytes) as
    ``tl.range`` with STAGES stages."""
    offs_m = tl.program_id(0).to(tl.int64) * BLOCK_M + tl.arange(0, BLOCK_M)
    mask_m = offs_m < M
    stride_am = tl.multiple_of(stride_am.to(tl.int64), VEC)
    k_end = tl.multiple_of(K, VEC)
    acc = tl.zeros((BLOCK_M, BLOCK_K), dtype=tl.float32)
    rows = a_ptr + offs_m[:, None] * stride_am
    for k0 in tl.range(0, K, BLOCK_K, num_stages=STAGES):
        offs_k = k0 + tl.arange(0, BLOCK_K).to(tl.int64)
        mask_k = offs_k < k_end
        a = tl.load(rows + offs_k[None, :], mask=mask_m[:, None] & mask_k[None, :], other=0.0)
        acc += a.to(tl.float32) * tl.load(x_ptr + offs_k, mask=mask_k, other=0.0).to(tl.float32)[None, :]
    tl.store(y_ptr + offs_m, tl.sum(acc, axis=1).to(y_ptr.dtype.element_ty), mask=mask_m)


def rows_call(a, x, y, block_m: int, block_k: int, warps: int, stages: int):
    """A call of ``_rows_kernel`` on these operands (row-major A, rows and x on 16 bytes)."""
    M, K = a.shape
    vec = 16 // a.element_size()
    assert K % vec == 0 and a.stride(1) == 1 and a.stride(0) % vec == 0
    grid = (cdiv(M, block_m),)
    return lambda: _rows_kernel[grid](a, x, y, M, K, a.stride(0), BLOCK_M=block_m, BLOCK_K=block_k, VEC=vec,
                                      STAGES=stages, num_warps=warps)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--dtype", default="bfloat16")
    ap.add_argument("--json")
    ap.add_argument("--rep-ms", type=float, default=20)
    args = ap.parse_args()
    dtype = getattr(torch, args.dtype)
    print(torch.cuda.get_device_name(), args.dtype, flush=True)
    out = {"device": torch.cuda.get_device_name(), "dtype": args.dtype, "cases": []}
    for M, K in SHAPES:
        a = torch.randn(M, K, device="cuda").to(dtype)
        x = torch.randn(K, device="cuda").to(dtype)
        ref = GemvSpec.reference((a, x))
        src = torch.randn(M * K, device="cuda").to(dtype)
        dst = torch.empty_like(src)
        names = ["copy", "torch", "cuda", "triton"]
        fns = [lambda: dst.copy_(src), lambda: torch.mv(a, x), lambda: cuda_ref.gemv(a, x), lambda: triton_impl.gemv(a, x)]
        for block_m, block_k, warps in TILES:
            for stages in STAGES:
                y = torch.full((M,), float("nan"), device="cuda", dtype=dtype)
                fn = rows_call(a, x, y, block_m, block_k, warps, stages)
                fn()
                cmp = GemvSpec.compare(y, ref, (a, x))
                assert cmp.ok, (M, K, block_m, block_k, stages, cmp)
                names.append(f"{block_m}x{block_k}s{stages}")
                fns.append(fn)
        times = [t.median_ms for t in time_interleaved(fns, rep_ms=args.rep_ms)]
        share = {n: times[0] / 2 / t for n, t in zip(names, times)}  # of the copy's bandwidth (read + write)
        best = max(names[4:], key=share.get)
        print(f"{M:>6}x{K:<6} torch {share['torch']:.2f} cuda {share['cuda']:.2f} triton {share['triton']:.2f} "
              f"best {best} {share[best]:.2f} | " + " ".join(f"{n}:{share[n]:.2f}" for n in names[4:]), flush=True)
        out["cases"].append({"shape": [M, K], "us": dict(zip(names, (t * 1e3 for t in times)))})
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
