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

import torch
import triton
import triton.language as tl

from kernel_common import check_matmul_args, check_variant, dtype_name, interpreting, output, sm_count
from kernel_common.plans import Plan, PlanCache
from triton_impl import _tuning
from triton_impl._launch import TritonLaunch

DTYPES = (torch.float32, torch.float16, torch.bfloat16)


# ---------------------------------------------------------------------------------------------
# Configs. `grouped` picks from a list per element size: the tuned config of the call's bucket
# (triton_impl/_tuning.py), else a heuristic one. The interpreter runs one small config.
# ---------------------------------------------------------------------------------------------
def _config_of(bm, bn, bk, warps, stages, group_m=8):
    return triton.Config({"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "GROUP_M": group_m},
                         num_warps=warps, num_stages=stages)


# Tensor-core sizes from tutorial 03 (fp16/bf16: 0.86x / 0.98x and 0.94x / 1.09x cuBLAS at
# 4096 / 8192 on an H100 with this list, as the tutorial reports; bench/results/ has ours).
_CONFIGS_16BIT = [
    _config_of(128, 256, 64, 8, 3), _config_of(64, 256, 32, 4, 4), _config_of(128, 128, 32, 4, 4),
    _config_of(128, 64, 32, 4, 4), _config_of(64, 128, 32, 4, 4), _config_of(128, 32, 32, 4, 4),
    _config_of(64, 32, 32, 2, 5), _config_of(32, 64, 32, 2, 5),
    # few rows (decode, M <= 16): more programs along N, a longer K slice each
    _config_of(16, 64, 128, 4, 4), _config_of(16, 32, 256, 4, 3),
]
# float32 tiles are twice the bytes: shallower K slices keep the pipelined stages in shared
# memory (128x128x32 fp32, 3 stages = 96 KiB).
_CONFIGS_FP32 = [
    _config_of(128, 128, 32, 8, 3), _config_of(128, 64, 32, 4, 4), _config_of(64, 128, 32, 4, 4),
    _config_of(64, 64, 32, 4, 4), _config_of(128, 128, 16, 8, 4),
]
_CONFIG_INTERPRETER = _config_of(32, 32, 32, 4, 1, group_m=4)


def candidates(element_size: int) -> list:
    """The configs `grouped` chooses from (and tuning benchmarks) for this element size."""
    return _CONFIGS_16BIT if element_size == 2 else _CONFIGS_FP32


def _heuristic_config(M: int, N: int, element_size: int, sms: int) -> triton.Config:
    """Without tuning: the first (largest) config of the list whose tiles fill every SM, else
    the one with the most tiles (small problems: more programs beat bigger tiles), of those the
    one with the fewest rows (few-row products: no tile padded with rows that are not there)."""
    def tiles(cfg):
        return triton.cdiv(M, cfg.kwargs["BLOCK_M"]) * triton.cdiv(N, cfg.kwargs["BLOCK_N"])
    configs = candidates(element_size)
    return next((c for c in configs if tiles(c) >= sms),
                max(configs, key=lambda c: (tiles(c), -c.kwargs["BLOCK_M"])))


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
# M stays specialized (on M % 16 == 0 and M == 1): without it bf16 4096^3 ran 0.216 ms against
# 0.185 (H200, same config); a new M compiles at most once per class, and Triton's disk cache
# serves a new process.
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


# ---------------------------------------------------------------------------------------------
# Plans and the public wrapper
# ---------------------------------------------------------------------------------------------
VARIANTS = ("grouped", "blocked")  # the default first


def pick_variant(a, b) -> str:
    """What ``variant=None`` runs: the grouped kernel with its tuned (or heuristic) config."""
    return VARIANTS[0]


def _input_precision(dtype) -> str:
    """tl.dot's input_precision for this call. float32 follows torch's matmul setting; for 16-bit
    inputs the argument does not change the math, so they keep Triton's default ("tf32")."""
    if dtype == torch.float32 and torch.get_float32_matmul_precision() == "highest":
        return "ieee"
    return "tf32"


def _tuning_key(M, N, K, a, b, precision) -> str:
    """The bucket a tuned config serves: dtype, dot precision, which operands are K- / N-major,
    and each extent to the next power of two."""
    bm, bn, bk = _tuning.bucket(M, N, K)
    a_major, b_major = "ak" if a.stride(1) == 1 else "am", "bn" if b.stride(1) == 1 else "bk"
    return f"{dtype_name(a.dtype)} {precision} {a_major} {b_major} {bm}x{bn}x{bk}"


def plan_launch(cfg: triton.Config, M: int, N: int, precision: str) -> TritonLaunch:
    """``cfg``'s launch: one program per BLOCK_M x BLOCK_N tile of c."""
    meta = dict(cfg.kwargs, INPUT_PRECISION=precision)
    grid = (triton.cdiv(M, meta["BLOCK_M"]) * triton.cdiv(N, meta["BLOCK_N"]),)
    return TritonLaunch(_matmul_kernel, grid, meta, dict(num_warps=cfg.num_warps, num_stages=cfg.num_stages))


def config_for(variant: str, a, b, precision: str) -> triton.Config:
    """The config of a call: blocked's fixed one, or grouped's tuned / heuristic one."""
    (M, K), N = a.shape, b.shape[1]
    if variant == "blocked":
        bm, bn, bk, warps, stages = _blocked_config(a.element_size())
        return _config_of(bm, bn, bk, warps, stages, group_m=1)
    if interpreting():
        return _CONFIG_INTERPRETER
    key = _tuning_key(M, N, K, a, b, precision)
    cfg = _tuning.lookup(a.device, key)
    if cfg is None and _tuning.enabled() and not torch.cuda.is_current_stream_capturing():
        cfg = _tune(a, b, precision, key)
    return cfg or _heuristic_config(M, N, a.element_size(), sm_count(a.device))


def _tune(a, b, precision: str, key: str) -> triton.Config:
    """Benchmark the candidates on this call's operands (into a scratch c) and keep the best."""
    (M, K), N = a.shape, b.shape[1]
    c = torch.empty((M, N), dtype=a.dtype, device=a.device)
    args = (a, b, c, M, N, K, *a.stride(), *b.stride())
    best = _tuning.benchmark(lambda cfg: plan_launch(cfg, M, N, precision)(*args), candidates(a.element_size()))
    _tuning.store(a.device, key, best)
    return best


def tune(M: int, N: int, K: int, *, dtype=torch.bfloat16, b_layout: str = "row", device="cuda") -> triton.Config:
    """Tune ``grouped`` for the bucket of an (M, K) @ (K, N) product (``b_layout``: "row" for a
    row-major B, "wt" for the ``W.t()`` of an (N, K) weight) and keep it on disk; later calls in
    that bucket, in this process or another, run the tuned config without benchmarking."""
    a = torch.randn((M, K), device=device).to(dtype)
    b = torch.randn((K, N), device=device).to(dtype) if b_layout == "row" else \
        torch.randn((N, K), device=device).to(dtype).t()
    precision = _input_precision(dtype)
    cfg = _tune(a, b, precision, _tuning_key(M, N, K, a, b, precision))
    _PLANS.clear()  # plans made before hold the config they had
    return cfg


def _plan(inputs, variant, out) -> Plan:
    """Validate a call and plan it (once per distinct metadata and float32 precision)."""
    a, b = inputs
    check_matmul_args(a, b, dtypes=DTYPES)
    check_variant(variant, VARIANTS, "matmul")
    (M, K), N = a.shape, b.shape[1]
    names = ("a", "b")
    output(out, (M, N), {"a": a, "b": b}, need_cuda=not interpreting())
    if M == 0 or N == 0:
        return Plan((M, N), a.dtype, a.device, lambda a, b, out: None, names)
    if K == 0:  # an empty sum
        return Plan((M, N), a.dtype, a.device, lambda a, b, out: out.zero_(), names)
    # the interpreter cannot compute in bfloat16: it runs on float32 copies (exact upcasts)
    upcast = a.dtype == torch.bfloat16 and interpreting()
    precision = "ieee" if upcast else _input_precision(a.dtype)
    variant = variant or pick_variant(a, b)
    launch = plan_launch(config_for(variant, a, b, precision), M, N, precision)
    scalars = (M, N, K, *a.stride(), *b.stride())
    if not upcast:
        return Plan((M, N), a.dtype, a.device, lambda a, b, out: launch(a, b, out, *scalars), names)

    def run_upcast(a, b, out):
        a, b, c = a.float(), b.float(), torch.empty((M, N), dtype=torch.float32, device=a.device)
        launch(a, b, c, M, N, K, *a.stride(), *b.stride())
        out.copy_(c)  # round to nearest even, as the GPU kernel's store does
    return Plan((M, N), a.dtype, a.device, run_upcast, names)


_PLANS = PlanCache(_plan, extra_key=torch.get_float32_matmul_precision)


def matmul(a: torch.Tensor, b: torch.Tensor, *, variant: str | None = None,
           out: torch.Tensor | None = None):
    """Return ``a @ b`` as a new contiguous (M, N) tensor (or write it into ``out``).

    ``a`` (M, K) and ``b`` (K, N): 2-D CUDA tensors (CPU tensors under ``TRITON_INTERPRET=1``)
    of one dtype, float32, float16 or bfloat16, any strides; the result has their dtype.
    ``variant=None`` runs ``grouped`` with the config tuned for the call's bucket, or a
    heuristic one (see ``triton_impl/_tuning.py``: ``TRITON_IMPL_TUNE=1`` and ``tune``). Under
    the interpreter, which cannot compute in bfloat16, bfloat16 inputs are upcast to float32
    (exact) and the float32 result rounded to bfloat16: the same float32 accumulation.
    """
    return _PLANS((a, b), variant, out)
