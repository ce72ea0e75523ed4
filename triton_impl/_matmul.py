"""Matrix multiplication in Triton: c (M, N) = a (M, K) b (K, N), float32 accumulation.

Follows triton's tutorial 03: each program computes a BLOCK_M x BLOCK_N tile of c with a loop
of ``tl.dot`` over BLOCK_K-deep slices of a and b. Unlike the tutorial, every edge is masked
(M, N and K need not be multiples of the blocks), offsets are 64-bit, and a and b are read
through their strides (row- or column-major, slices with a step: no copy).

float32 inputs follow ``torch.get_float32_matmul_precision()``: "highest" (torch's default) runs
an exact float32 dot (``input_precision="ieee"``), "high" and "medium" allow TF32 tensor cores,
as torch.matmul does. float16 and bfloat16 run on tensor cores with a float32 accumulator.
"""

from __future__ import annotations

import contextlib
import threading

import torch
import triton
import triton.language as tl

from kernel_common import check_matmul_args, check_variant, interpreting, nothing_to_compute, output

DTYPES = (torch.float32, torch.float16, torch.bfloat16)


# ---------------------------------------------------------------------------------------------
# Configs. `grouped` autotunes over a list per element size on the GPU (key: M, N, K, the
# dtypes and the dot precision). The interpreter cannot autotune (no do_bench on CPU), so under
# it the list is one small config, chosen once when this module is imported.
# ---------------------------------------------------------------------------------------------
def _config(bm, bn, bk, warps, stages, group_m=8):
    return triton.Config({"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "GROUP_M": group_m},
                         num_warps=warps, num_stages=stages)


# Tensor-core sizes from tutorial 03 (fp16/bf16: 0.86x / 0.98x and 0.94x / 1.09x cuBLAS at
# 4096 / 8192 on an H100 with this list, as the tutorial reports; bench/results/ has ours).
_CONFIGS_16BIT = [
    _config(128, 256, 64, 8, 3), _config(64, 256, 32, 4, 4), _config(128, 128, 32, 4, 4),
    _config(128, 64, 32, 4, 4), _config(64, 128, 32, 4, 4), _config(128, 32, 32, 4, 4),
    _config(64, 32, 32, 2, 5), _config(32, 64, 32, 2, 5),
]
# float32 tiles are twice the bytes: shallower K slices keep the pipelined stages in shared
# memory (128x128x32 fp32, 3 stages = 96 KiB).
_CONFIGS_FP32 = [
    _config(128, 128, 32, 8, 3), _config(128, 64, 32, 4, 4), _config(64, 128, 32, 4, 4),
    _config(64, 64, 32, 4, 4), _config(128, 128, 16, 8, 4),
]
_CONFIGS_INTERPRETER = [_config(32, 32, 32, 4, 1, group_m=4)]


def _configs_for_dtype(configs, named_args, **kwargs):
    """early_config_prune: the list for this element size (the autotuner benches only these)."""
    return _CONFIGS_16BIT if named_args["a_ptr"].element_size() == 2 else _CONFIGS_FP32


def _blocked_config(element_size: int):
    """(BLOCK_M, BLOCK_N, BLOCK_K, num_warps, num_stages) of the fixed-config `blocked` variant:
    one mid-sized tile that fits every dtype, and a small one under the interpreter."""
    if interpreting():
        return 32, 32, 32, 4, 1
    if element_size == 2:
        return 128, 128, 32, 4, 4
    return 64, 64, 32, 4, 4


# ---------------------------------------------------------------------------------------------
# Kernel
# ---------------------------------------------------------------------------------------------
@triton.jit
def _matmul_kernel(
    # Pointers
    a_ptr, b_ptr, c_ptr,
    # Sizes
    M, N, K,
    # Strides (in elements; c is contiguous)
    stride_am, stride_ak, stride_bk, stride_bn,
    # Meta-parameters
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
    GROUP_M: tl.constexpr, INPUT_PRECISION: tl.constexpr,
):
    """One BLOCK_M x BLOCK_N tile of c per program. GROUP_M = 1 numbers the tiles row-major
    (`blocked`); GROUP_M > 1 walks GROUP_M rows of tiles column by column (`grouped`), so the
    programs running at once share the same few tiles of a and b in L2."""
    # -- map the program id to a tile of c: grouped launch order for L2 reuse --
    pid = tl.program_id(0)
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    num_pid_in_group = GROUP_M * num_pid_n
    group_id = pid // num_pid_in_group
    first_pid_m = group_id * GROUP_M
    group_size_m = min(num_pid_m - first_pid_m, GROUP_M)
    pid_m = first_pid_m + ((pid % num_pid_in_group) % group_size_m)
    pid_n = (pid % num_pid_in_group) // group_size_m

    # -- pointers to the first K slice; 64-bit offsets: M*K, K*N or M*N may pass 2^31 --
    offs_m = pid_m.to(tl.int64) * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n.to(tl.int64) * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    mask_m = offs_m < M
    mask_n = offs_n < N
    a_ptrs = a_ptr + offs_m[:, None] * stride_am + offs_k[None, :].to(tl.int64) * stride_ak
    b_ptrs = b_ptr + offs_k[:, None].to(tl.int64) * stride_bk + offs_n[None, :] * stride_bn
    a_step = tl.cast(stride_ak, tl.int64) * BLOCK_K
    b_step = tl.cast(stride_bk, tl.int64) * BLOCK_K

    # -- accumulate in float32 whatever the input type; masked elements load as 0 and add
    #    nothing, so edge tiles and a K that is not a multiple of BLOCK_K are exact --
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        mask_k = offs_k < K - k0
        a = tl.load(a_ptrs, mask=mask_m[:, None] & mask_k[None, :], other=0.0)
        b = tl.load(b_ptrs, mask=mask_k[:, None] & mask_n[None, :], other=0.0)
        acc = tl.dot(a, b, acc, input_precision=INPUT_PRECISION)
        a_ptrs += a_step
        b_ptrs += b_step

    # -- write back with a mask, in the output's dtype --
    c_ptrs = c_ptr + offs_m[:, None] * N + offs_n[None, :]
    tl.store(c_ptrs, acc.to(c_ptr.dtype.element_ty), mask=mask_m[:, None] & mask_n[None, :])


# The same kernel, autotuned (`grouped`). The tensors' dtypes join the key on their own.
_matmul_kernel_autotuned = triton.autotune(
    configs=_CONFIGS_INTERPRETER if interpreting() else _CONFIGS_16BIT + _CONFIGS_FP32,
    key=["M", "N", "K", "INPUT_PRECISION"],
    prune_configs_by=None if interpreting() else {"early_config_prune": _configs_for_dtype},
)(_matmul_kernel)


# ---------------------------------------------------------------------------------------------
# Launchers and the public wrapper
# ---------------------------------------------------------------------------------------------
def _launch_blocked(a, b, c, M, N, K, precision):
    bm, bn, bk, warps, stages = _blocked_config(a.element_size())
    grid = (triton.cdiv(M, bm) * triton.cdiv(N, bn),)
    _matmul_kernel[grid](a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                         BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, GROUP_M=1, INPUT_PRECISION=precision,
                         num_warps=warps, num_stages=stages)


# triton's Autotuner keeps the call's arguments in an attribute (``self.nargs``) for the length of
# ``run`` and sets it to None at the end: two threads tuning at once read each other's or None
# (TypeError in the config pruning). One launch at a time; a launch only queues work, so the
# lock is held for microseconds once a shape is tuned.
_autotune_lock = threading.Lock()


def _launch_grouped(a, b, c, M, N, K, precision):
    grid = lambda meta: (triton.cdiv(M, meta["BLOCK_M"]) * triton.cdiv(N, meta["BLOCK_N"]),)  # noqa: E731
    with _autotune_lock:
        _matmul_kernel_autotuned[grid](a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0),
                                       b.stride(1), INPUT_PRECISION=precision)


_LAUNCHERS = {"grouped": _launch_grouped, "blocked": _launch_blocked}
VARIANTS = tuple(_LAUNCHERS)  # the default first


def pick_variant(a, b) -> str:
    """What ``variant=None`` runs: the autotuned, grouped kernel."""
    return VARIANTS[0]


def _input_precision(dtype) -> str:
    """tl.dot's input_precision for this call. float32 follows torch's matmul setting; for 16-bit
    inputs the argument does not change the math, so they keep Triton's default ("tf32")."""
    if dtype == torch.float32 and torch.get_float32_matmul_precision() == "highest":
        return "ieee"
    return "tf32"


def matmul(a: torch.Tensor, b: torch.Tensor, *, variant: str | None = None,
           out: torch.Tensor | None = None):
    """Return ``a @ b`` as a new contiguous (M, N) tensor (or write it into ``out``).

    ``a`` (M, K) and ``b`` (K, N): 2-D CUDA tensors (CPU tensors under ``TRITON_INTERPRET=1``)
    of one dtype, float32, float16 or bfloat16, any strides; the result has their dtype.
    ``variant=None`` runs ``grouped``. Under the interpreter, which cannot compute in bfloat16,
    bfloat16 inputs are upcast to float32 (exact) and the float32 result rounded to bfloat16:
    the same float32 accumulation, one copy of each operand more.
    """
    check_matmul_args(a, b, dtypes=DTYPES)
    check_variant(variant, VARIANTS, "matmul")
    (M, K), N = a.shape, b.shape[1]
    out = output(out, (M, N), {"a": a, "b": b}, need_cuda=not interpreting())
    if nothing_to_compute(out, K):
        return out

    launch = _LAUNCHERS[variant or pick_variant(a, b)]
    with torch.cuda.device(a.device) if a.is_cuda else contextlib.nullcontext():
        if a.dtype == torch.bfloat16 and interpreting():
            c = torch.empty((M, N), dtype=torch.float32, device=a.device)
            launch(a.float(), b.float(), c, M, N, K, "ieee")
            out.copy_(c)  # round to nearest even, as the GPU kernel's store does
        else:
            launch(a, b, out, M, N, K, _input_precision(a.dtype))
    return out
