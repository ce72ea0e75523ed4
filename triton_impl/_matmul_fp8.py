"""FP8 matmul with scales: ``torch._scaled_mm``'s product, and DeepSeek-V3's block scales.

c = (a * scale_a) @ (b * scale_b), a (M, K) and b (K, N) in float8 (e4m3, or e5m2 for a
gradient operand), sums in float32, c bfloat16 or float32. Scales are float32:
- per tensor: each a 0-D or one-element tensor;
- row-wise: scale_a (M, 1) and scale_b (1, N), one per row of a and per column of b;
- blocks: scale_a (M, ceil(K / 128)), one per row and 128 k (1 x 128), and scale_b
  (ceil(K / 128), ceil(N / 128)), one per 128 x 128 block of b.

Per tensor and row-wise, the scales multiply the float32 tile once, in the epilogue. Blocks: each
128-deep slice of K is a product of its own, added to the float32 tile times its scales (the
promotion DeepGEMM makes: Hopper's FP8 MMA keeps too few bits of a long sum, and the scales
change every 128 k anyway).

One kernel, persistent, in grouped tile order: a by a descriptor of its rows, b K-major (FP8's
wgmma reads b only so; torch._scaled_mm asks the same: b = W.t() of a row-major (N, K) W),
c by masked stores. Operands a descriptor cannot read where they lie are copied (rows padded to
16 bytes; a row-major b transposed).
"""
from __future__ import annotations

import torch
import triton
import triton.language as tl

from kernel_common import balanced_grid, interpreting, sm_count, tma_rows
from kernel_common.plans import Plan, PlanCache
from kernel_common.util import padded
from kernel_common.validate import check_matrix, check_variant, output
from triton_impl._launch import DescriptorSpec, TritonLaunch
from triton_impl._matmul_configs import tile_text
from triton_impl._matmul_fp32 import _hopper
from triton_impl._matmul_tma import _grouped_tile

DTYPES = (torch.float8_e4m3fn, torch.float8_e5m2)
OUT_DTYPES = (torch.bfloat16, torch.float32)
VARIANTS = ("tma_fp8",)
SCALE_BLOCK = 128  # k (and n for b) a block scale covers
TENSOR, ROW, BLOCK = "tensor", "row", "block"
CONFIG = triton.Config({"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 128, "GROUP_M": 8}, num_warps=8, num_stages=4)
# the interpreter: smaller tiles, but K still in the 128-deep slices the block scales cover
CONFIG_INTERPRETER = triton.Config({"BLOCK_M": 32, "BLOCK_N": 32, "BLOCK_K": 128, "GROUP_M": 2}, num_warps=4,
                                   num_stages=1)


@triton.jit(do_not_specialize=["programs"])
def _fp8_kernel(a_desc, b_desc, c_ptr, sa_ptr, sb_ptr, M, N, K, programs, stride_cm, stride_cn,
                stride_sam, stride_sak, stride_sbk, stride_sbn,
                BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,
                BLOCK_SCALES: tl.constexpr, SCALE_BLOCK: tl.constexpr):
    """Program p computes tiles p, p + programs, ... of c. b_desc reads b's transpose (N, K).
    Epilogue scales (BLOCK_SCALES False): scale_a[m * stride_sam] and scale_b[n * stride_sbn]
    (strides 0 for a tensor's one scale). Block scales: scale_a[m, kb] and scale_b[kb, n // 128]
    for each 128-deep slice kb of K, which is one BLOCK_K step."""
    tl.static_assert(not BLOCK_SCALES or BLOCK_K == SCALE_BLOCK, "a block scale's slice is one K step")
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    tiles = num_pid_m * num_pid_n
    k_tiles = tl.cdiv(K, BLOCK_K)
    for item in tl.range(tl.program_id(0), tiles, programs, flatten=True):
        pid_m, pid_n = _grouped_tile(item, num_pid_m, num_pid_n, GROUP_M)
        offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
        offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        for kt in range(0, k_tiles):
            a = a_desc.load([pid_m * BLOCK_M, kt * BLOCK_K])
            b = b_desc.load([pid_n * BLOCK_N, kt * BLOCK_K]).T
            if BLOCK_SCALES:  # this slice's product, promoted to the float32 tile with its scales
                sa = tl.load(sa_ptr + offs_m * stride_sam + kt * stride_sak, mask=offs_m < M, other=0.0)
                sb = tl.load(sb_ptr + kt * stride_sbk + (offs_n // SCALE_BLOCK) * stride_sbn, mask=offs_n < N,
                             other=0.0)
                acc += tl.dot(a, b) * sa[:, None] * sb[None, :]
            else:
                acc = tl.dot(a, b, acc)
        if not BLOCK_SCALES:
            sa = tl.load(sa_ptr + offs_m * stride_sam, mask=offs_m < M, other=0.0)
            sb = tl.load(sb_ptr + offs_n * stride_sbn, mask=offs_n < N, other=0.0)
            acc = acc * sa[:, None] * sb[None, :]
        tl.store(c_ptr + offs_m[:, None].to(tl.int64) * stride_cm + offs_n[None, :] * stride_cn,
                 acc.to(c_ptr.dtype.element_ty), mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))


def _config() -> triton.Config:
    return CONFIG_INTERPRETER if interpreting() else CONFIG


def _scaling(a, b, scale_a, scale_b) -> str:
    """Which scaling the scales' shapes say (TENSOR, ROW or BLOCK), or a ValueError naming the three."""
    (M, K), N = a.shape, b.shape[1]
    kb, nb = triton.cdiv(K, SCALE_BLOCK), triton.cdiv(N, SCALE_BLOCK)
    sa, sb = tuple(scale_a.shape), tuple(scale_b.shape)
    if scale_a.numel() == 1 and scale_b.numel() == 1 and scale_a.dim() <= 2 and scale_b.dim() <= 2:
        return TENSOR
    if sa == (M, 1) and sb == (1, N):
        return ROW
    if sa == (M, kb) and sb == (kb, nb):
        return BLOCK
    raise ValueError(f"scales must be per tensor (one element each), row-wise (scale_a ({M}, 1), scale_b (1, {N})) "
                     f"or blocks (scale_a ({M}, {kb}): 1 x 128, scale_b ({kb}, {nb}): 128 x 128); got scale_a {sa} "
                     f"and scale_b {sb}")


def _check(a, b, scale_a, scale_b, out_dtype, variant) -> str:
    check_matrix("a", a, ndim=2, dtypes=DTYPES)
    check_matrix("b", b, ndim=2, dtypes=DTYPES)
    if a.dtype == b.dtype == torch.float8_e5m2:
        raise TypeError("a and b are both float8_e5m2: one may be (a gradient), the other float8_e4m3fn")
    for name, s in (("scale_a", scale_a), ("scale_b", scale_b)):
        check_matrix(name, s, ndim=(0, 1, 2), dtypes=(torch.float32,))
    if out_dtype not in OUT_DTYPES:
        raise TypeError(f"out_dtype must be torch.bfloat16 or torch.float32, got {out_dtype}")
    check_variant(variant, VARIANTS, "scaled_mm")
    if a.shape[1] != b.shape[0]:
        raise ValueError(f"a's columns ({a.shape[1]}) must equal b's rows ({b.shape[0]}): got a {tuple(a.shape)} "
                         f"and b {tuple(b.shape)}")
    return _scaling(a, b, scale_a, scale_b)


def _plan(inputs, variant, out, out_dtype) -> Plan:
    a, b, scale_a, scale_b = inputs
    scaling = _check(a, b, scale_a, scale_b, out_dtype, variant)
    (M, K), N = a.shape, b.shape[1]
    names = ("a", "b", "scale_a", "scale_b")
    output(out, (M, N), dict(zip(names, inputs)), need_cuda=not interpreting(), dtype=out_dtype)
    if M == 0 or N == 0:
        return Plan((M, N), out_dtype, a.device, lambda *args: None, names)
    if K == 0:
        return Plan((M, N), out_dtype, a.device, lambda *args: args[-1].zero_(), names)
    if not _hopper(a.device):
        raise ValueError("scaled_mm needs a Hopper GPU (FP8 tensor cores, TMA)")
    bt = b.t()  # (N, K): what the kernel's descriptor reads
    copy_a, copy_b = not tma_rows(a), not tma_rows(bt)
    a_meta = padded(M, K, a.dtype, "meta") if copy_a else a
    bt_meta = padded(N, K, b.dtype, "meta") if copy_b else bt
    cfg = _config()
    bm, bn, bk = (cfg.kwargs[k] for k in ("BLOCK_M", "BLOCK_N", "BLOCK_K"))
    sms = 4 if interpreting() else sm_count(a.device)
    programs = balanced_grid(triton.cdiv(M, bm) * triton.cdiv(N, bn), sms)
    meta = dict(cfg.kwargs, BLOCK_SCALES=scaling == BLOCK, SCALE_BLOCK=SCALE_BLOCK)
    launch = TritonLaunch(_fp8_kernel, (programs,), meta, dict(num_warps=cfg.num_warps, num_stages=cfg.num_stages),
                          descriptors=(DescriptorSpec((M, K), (a_meta.stride(0), 1), (bm, bk)),
                                       DescriptorSpec((N, K), (bt_meta.stride(0), 1), (bn, bk))))
    # the scales' strides as the kernel reads them (0 for a tensor's one scale)
    if scaling == TENSOR:
        strides = (0, 0, 0, 0)
    elif scaling == ROW:
        strides = (scale_a.stride(0), 0, 0, scale_b.stride(1))
    else:
        strides = (*scale_a.stride(), *scale_b.stride())
    # the interpreter rounds to bfloat16 its own way: a float32 c, rounded to nearest even by the copy
    upcast = interpreting() and out_dtype == torch.bfloat16
    bound = launch.bind(M, N, K, programs, N, 1, *strides)  # (c contiguous: output's check)

    def run(a, b, scale_a, scale_b, out):
        if copy_a:
            a = padded(M, K, a.dtype, a.device).copy_(a)
        bt = b.t()
        if copy_b:
            bt = padded(N, K, b.dtype, b.device).copy_(bt)
        c = torch.empty((M, N), dtype=torch.float32, device=a.device) if upcast else out
        bound(a, bt, c, scale_a, scale_b)
        if upcast:
            out.copy_(c)
    return Plan((M, N), out_dtype, a.device, run, names, traceable=False)


# (out_dtype is part of the key: one cache a dtype)
_PLANS = {dtype: PlanCache(lambda inputs, variant, out, dtype=dtype: _plan(inputs, variant, out, dtype))
          for dtype in OUT_DTYPES}


def pick_variant(a, b, scale_a, scale_b, out=None) -> str:
    return VARIANTS[0]


def describe(a, b, scale_a, scale_b, variant=None) -> str:
    """The variant, the scaling its scales say, and the tile."""
    return f"{variant or VARIANTS[0]} {_scaling(a, b, scale_a, scale_b)} scales {tile_text(_config())}"


def scaled_mm(a: torch.Tensor, b: torch.Tensor, scale_a: torch.Tensor, scale_b: torch.Tensor, *,
              out_dtype: torch.dtype = torch.bfloat16, variant: str | None = None,
              out: torch.Tensor | None = None) -> torch.Tensor:
    """c (M, N) = (a * scale_a) @ (b * scale_b), ``torch._scaled_mm``'s product, and block scales.

    ``a`` (M, K) and ``b`` (K, N): float8_e4m3fn, or one of them float8_e5m2; any strides (b read
    K-major, as ``W.t()`` of a row-major (N, K) W lies; other layouts are copied first). Scales
    (float32): per tensor (one element each), row-wise (scale_a (M, 1), scale_b (1, N)), or blocks
    (scale_a (M, ceil(K/128)): 1 x 128; scale_b (ceil(K/128), ceil(N/128)): 128 x 128), each
    128-deep slice's product then added in float32. ``out_dtype`` bfloat16 or float32. A Hopper
    GPU (CPU tensors under ``TRITON_INTERPRET=1``)."""
    if out_dtype not in _PLANS:
        raise TypeError(f"out_dtype must be torch.bfloat16 or torch.float32, got {out_dtype}")
    return _PLANS[out_dtype]((a, b, scale_a, scale_b), variant, out)
