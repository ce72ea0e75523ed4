"""Ceilings measured in the same run on the same GPU: never a datasheet figure."""

from __future__ import annotations

import torch

from bench.timing import time_gpu


def copy_bandwidth_gbs(device="cuda", nbytes: int = 1 << 30) -> float:
    """Device-to-device copy of ``nbytes`` (>= 1 GiB), counting bytes read + bytes written."""
    src = torch.rand(nbytes // 4, device=device) + 1  # random, never zeros
    dst = torch.empty_like(src)
    t = time_gpu(lambda: dst.copy_(src))
    del src, dst
    return 2 * nbytes / (t.median_ms * 1e-3) / 1e9


def cublas_tflops(dtype, device="cuda", n: int = 8192) -> float | None:
    """torch.matmul (cuBLAS) at n^3 in ``dtype``, 2 n^3 FLOPs per call. TF32 or not follows the
    caller's torch.get_float32_matmul_precision() (the spec's context sets it). int8: torch._int_mm
    (cuBLASLt) with b = W.t(), its faster layout (TOPS); float8_e4m3fn: torch._scaled_mm per tensor,
    the same layout; int32: None (no cuBLAS GEMM takes it)."""
    if dtype == torch.int32:
        return None
    if dtype == torch.float8_e4m3fn:  # torch._scaled_mm per tensor, b = W.t() (its layout), bfloat16 out
        a = (torch.rand((n, n), device=device) + 0.5).to(dtype)
        b = (torch.rand((n, n), device=device) + 0.5).to(dtype).t()
        one = torch.ones((), device=device)
        c = torch.empty((n, n), device=device, dtype=torch.bfloat16)
        t = time_gpu(lambda: torch._scaled_mm(a, b, one, one, out_dtype=torch.bfloat16, out=c))
        del a, b, c
        return 2 * n**3 / (t.median_ms * 1e-3) / 1e12
    if dtype == torch.int8:
        a = torch.randint(1, 100, (n, n), device=device, dtype=torch.int8)
        b = torch.randint(1, 100, (n, n), device=device, dtype=torch.int8).t()
        c = torch.empty((n, n), device=device, dtype=torch.int32)
        t = time_gpu(lambda: torch._int_mm(a, b, out=c))
        del a, b, c
        return 2 * n**3 / (t.median_ms * 1e-3) / 1e12
    a = (torch.rand((n, n), device=device) + 0.5).to(dtype)  # random, never zeros; c fits fp16
    b = (torch.rand((n, n), device=device) + 0.5).to(dtype)
    c = torch.empty((n, n), device=device, dtype=dtype)
    t = time_gpu(lambda: torch.matmul(a, b, out=c))
    del a, b, c
    return 2 * n**3 / (t.median_ms * 1e-3) / 1e12


def ceiling_key(spec, dtype_name: str) -> str:
    """Where ``ceilings`` keeps the figure this spec's rates are a percentage of."""
    if spec.ceiling == "cublas":
        return f"cublas_{dtype_name}_tflops"  # per dtype name: tf32 and float32 differ 7x
    return f"{spec.ceiling}_gbs"
