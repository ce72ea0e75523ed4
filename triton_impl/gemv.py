"""Matrix-vector product in Triton: y = A x, A (M, K), x (K,), float32 accumulation.

One kernel reads A through its strides; the two variants hand it A in the layout they are
tuned for and differ in tile shape. ``blocked_row`` wants row-major A (long BLOCK_K runs along
each row); ``blocked_col`` wants column-major A (long BLOCK_M runs down each column). Given A in
the other layout, the wrapper makes one copy into the variant's layout; ``variant=None`` picks
the variant that matches A, so it never copies.
"""

from __future__ import annotations

import contextlib
import os

import torch
import triton
import triton.language as tl

from kernel_common import check_gemv_args, check_out, check_variant, matrix_layout, to_layout

DTYPES = (torch.float32, torch.float16, torch.bfloat16)

# ---------------------------------------------------------------------------------------------
# Configs: (BLOCK_M, BLOCK_K, num_warps) per variant.
# ---------------------------------------------------------------------------------------------
_CONFIGS = {
    "blocked_row": (8, 512, 4),    # 8 rows x 512 columns: each warp-row of loads is 2 KiB of fp32
    "blocked_col": (256, 32, 8),   # 256 rows x 32 columns: coalesced down each column
}
LAYOUT = {"blocked_row": "row", "blocked_col": "col"}
VARIANTS = tuple(_CONFIGS)


# ---------------------------------------------------------------------------------------------
# Kernel
# ---------------------------------------------------------------------------------------------
@triton.jit
def _gemv_kernel(
    # Pointers
    a_ptr, x_ptr, y_ptr,
    # Sizes
    M, K,
    # Strides
    stride_am, stride_ak,
    # Meta-parameters
    BLOCK_M: tl.constexpr, BLOCK_K: tl.constexpr,
):
    """One program per BLOCK_M rows: accumulate a BLOCK_M x BLOCK_K tile of products in float32
    over the K loop, then reduce across the tile once at the end."""
    pid = tl.program_id(0)
    offs_m = pid.to(tl.int64) * BLOCK_M + tl.arange(0, BLOCK_M)
    mask_m = offs_m < M
    acc = tl.zeros((BLOCK_M, BLOCK_K), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        # 64-bit offsets: M x K may pass 2^31 elements
        offs_k = k0 + tl.arange(0, BLOCK_K).to(tl.int64)
        mask_k = offs_k < K
        a = tl.load(a_ptr + offs_m[:, None] * stride_am + offs_k[None, :] * stride_ak,
                    mask=mask_m[:, None] & mask_k[None, :], other=0.0)
        x = tl.load(x_ptr + offs_k, mask=mask_k, other=0.0)
        acc += a.to(tl.float32) * x.to(tl.float32)[None, :]
    y = tl.sum(acc, axis=1)
    tl.store(y_ptr + offs_m, y.to(y_ptr.dtype.element_ty), mask=mask_m)


# ---------------------------------------------------------------------------------------------
# Wrapper
# ---------------------------------------------------------------------------------------------
def interpreting() -> bool:
    return os.environ.get("TRITON_INTERPRET", "0") == "1"


def pick_variant(a, x) -> str:
    return "blocked_col" if matrix_layout(a) == "col" else "blocked_row"


def gemv(a: torch.Tensor, x: torch.Tensor, *, variant: str | None = None, out: torch.Tensor | None = None):
    """y = A x for A (M, K) and x (K,) of float32, float16 or bfloat16 (one dtype), accumulated
    in float32; returns y (M,) of A's dtype. CUDA tensors (CPU ones under TRITON_INTERPRET=1)."""
    check_gemv_args(a, x, dtypes=DTYPES, need_cuda=not interpreting())
    check_variant(variant, VARIANTS, "gemv")
    M, K = a.shape
    if out is None:
        out = torch.empty((M,), dtype=a.dtype, device=a.device)
    else:
        check_out(out, shape=(M,), dtype=a.dtype, device=a.device, inputs={"a": a, "x": x})
    if M == 0:
        return out
    if K == 0:
        return out.zero_()
    variant = variant or pick_variant(a, x)
    a = to_layout(a, LAYOUT[variant])  # one documented copy if A comes in the other layout
    x = x.contiguous()
    y = out
    if interpreting() and a.dtype == torch.bfloat16:
        # numpy has no bfloat16: the interpreter computes on float32 copies (exact upcasts)
        a, x, y = a.float(), x.float(), torch.empty((M,), dtype=torch.float32, device=a.device)
    block_m, block_k, num_warps = _CONFIGS[variant]
    block_k = min(block_k, triton.next_power_of_2(K))
    grid = (triton.cdiv(M, block_m),)
    with torch.cuda.device(a.device) if a.is_cuda else contextlib.nullcontext():
        _gemv_kernel[grid](a, x, y, M, K, a.stride(0), a.stride(1),
                           BLOCK_M=block_m, BLOCK_K=block_k, num_warps=num_warps)
    if y is not out:
        out.copy_(y)
    return out

