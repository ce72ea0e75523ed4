"""Grouped matmul for mixture-of-experts layers: ``torch.nn.functional.grouped_mm``'s 2-D x 3-D form.

a (T, K) holds every expert's tokens, sorted by expert; ``offs`` (G,) int32 the end of each
expert's rows (non-decreasing); b (G, K, N) the experts' weights, row-major or each the
transpose of an (N, K) nn.Linear weight (K-major). c (T, N): rows offs[g-1]..offs[g] are
a[rows] @ b[g]; rows past offs[-1] are not written (torch ignores them too).

One persistent launch, whatever the split of tokens: the group sizes live on the GPU (reading
them would wait for it), so each program walks the groups itself, counting their tiles from
``offs``, and takes every ``programs``-th tile of the whole list. a is read by a 2-D descriptor
(a tile that runs past its group's rows reads the next group's, whose products are not stored),
b by a 3-D one, the batch its outer dimension (``_matmul_batched``'s); c by masked stores, since
a tile's rows may end inside a tile of the descriptor's grid.
"""
from __future__ import annotations

import torch
import triton
import triton.language as tl

from kernel_common import base_phase, cdiv, grouped, interpreting, sm_count, tma_batch_view, tma_rows
from kernel_common.plans import Plan, PlanCache
from kernel_common.util import padded
from kernel_common.validate import check_output
from triton_impl._launch import DescriptorSpec, TritonLaunch
from triton_impl._matmul_batched import _descriptor_3d
from triton_impl._matmul_configs import tile_text
from triton_impl._matmul_fp32 import _hopper
from triton_impl._matmul_tma import _grouped_tile

DTYPES = grouped.DTYPES
VARIANTS = ("tma_grouped",)
# The tile's rows follow the groups' (lab/sweep_grouped.py on an H200, bf16, against F.grouped_mm,
# L2 flushed; 128 x 128 x 64 the earlier one config): 64 x 256 where a mean group has fewer than two
# 128-row tiles (an uneven split leaves most of a 128-row tile empty there): decode's 64 rows in 128
# groups 0.76 -> 1.17x, 512 rows in 8 groups 1.31 -> 1.38x; 128 x 256 from two (8 groups of 8192
# rows 0.92 -> 1.04x, 128 groups of 32768 0.97 -> 1.06x)
CONFIGS = {"few": triton.Config({"BLOCK_M": 64, "BLOCK_N": 256, "BLOCK_K": 64, "GROUP_M": 8}, num_warps=4,
                                num_stages=4),
           "many": triton.Config({"BLOCK_M": 128, "BLOCK_N": 256, "BLOCK_K": 64, "GROUP_M": 8}, num_warps=8,
                                 num_stages=3)}
CONFIG_INTERPRETER = triton.Config({"BLOCK_M": 32, "BLOCK_N": 32, "BLOCK_K": 32, "GROUP_M": 2}, num_warps=4,
                                   num_stages=1)


@triton.jit(do_not_specialize=["programs"])
def _grouped_kernel(a_desc, b_desc, c_ptr, offs_ptr, T, N, K, G, programs, stride_cm, stride_cn, stride_offs,
                    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,
                    B_T: tl.constexpr, INPUT_PRECISION: tl.constexpr):
    """Program p computes tiles p, p + programs, ... of the list of every group's tiles (group by
    group, each in grouped order: the tiles in flight share GROUP_M row tiles of a and a few
    columns of b[g] in L2, which a wide b[g] (Mixtral's 4096 x 28672) does not fit). A group's end
    is clamped to [its start, T], so offsets that are not non-decreasing or pass T cannot make a
    store outside c."""
    num_pid_n = tl.cdiv(N, BLOCK_N)
    k_tiles = tl.cdiv(K, BLOCK_K)
    item = tl.program_id(0)
    seen = 0   # tiles of the groups before g
    start = 0  # group g's first row
    for g in range(0, G):
        end = tl.minimum(tl.maximum(tl.load(offs_ptr + g * stride_offs), start), T)
        num_pid_m = tl.cdiv(end - start, BLOCK_M)
        tiles = num_pid_m * num_pid_n
        while item < seen + tiles:
            pid_m, pid_n = _grouped_tile(item - seen, num_pid_m, num_pid_n, GROUP_M)
            off_m = start + pid_m * BLOCK_M
            off_n = pid_n * BLOCK_N
            acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
            for kt in range(0, k_tiles):
                off_k = kt * BLOCK_K
                a = a_desc.load([off_m, off_k])
                if B_T:
                    b = b_desc.load([g, off_n, off_k]).reshape(BLOCK_N, BLOCK_K).T
                else:
                    b = b_desc.load([g, off_k, off_n]).reshape(BLOCK_K, BLOCK_N)
                acc = tl.dot(a, b, acc, input_precision=INPUT_PRECISION)
            offs_m = off_m + tl.arange(0, BLOCK_M)
            offs_n = off_n + tl.arange(0, BLOCK_N)
            tl.store(c_ptr + offs_m[:, None].to(tl.int64) * stride_cm + offs_n[None, :] * stride_cn,
                     acc.to(c_ptr.dtype.element_ty), mask=(offs_m[:, None] < end) & (offs_n[None, :] < N))
            item += programs
        seen += tiles
        start = end


@triton.jit
def _weight_grad_kernel(a_ptr, g_ptr, c_ptr, offs_ptr, T, K, N, stride_am, stride_ak, stride_gm, stride_gn,
                        stride_cg, stride_ck, stride_cn, stride_offs,
                        BLOCK_K: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_T: tl.constexpr,
                        INPUT_PRECISION: tl.constexpr):
    """b's gradient, a product grouped over its reduction: program p computes tile p % tiles of
    c[g] = a[rows of g].T @ grad[rows of g], g = p // tiles (zeros for an empty group). A group's
    rows are [offs[g-1], offs[g]) clamped to [0, T], so bad offsets read no row outside a."""
    tiles = tl.cdiv(K, BLOCK_K) * tl.cdiv(N, BLOCK_N)
    g = tl.program_id(0) // tiles
    tile = tl.program_id(0) % tiles
    pid_k = tile // tl.cdiv(N, BLOCK_N)
    pid_n = tile % tl.cdiv(N, BLOCK_N)
    start = tl.minimum(tl.maximum(tl.load(offs_ptr + (g - 1) * stride_offs, mask=g > 0, other=0), 0), T)
    end = tl.minimum(tl.maximum(tl.load(offs_ptr + g * stride_offs), start), T)
    offs_k = pid_k * BLOCK_K + tl.arange(0, BLOCK_K)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    acc = tl.zeros((BLOCK_K, BLOCK_N), dtype=tl.float32)
    for t in range(start, end, BLOCK_T):
        rows = t + tl.arange(0, BLOCK_T)
        a_t = tl.load(a_ptr + rows[None, :].to(tl.int64) * stride_am + offs_k[:, None] * stride_ak,
                      mask=(rows[None, :] < end) & (offs_k[:, None] < K), other=0.0)
        grad = tl.load(g_ptr + rows[:, None].to(tl.int64) * stride_gm + offs_n[None, :] * stride_gn,
                       mask=(rows[:, None] < end) & (offs_n[None, :] < N), other=0.0)
        acc = tl.dot(a_t, grad, acc, input_precision=INPUT_PRECISION)
    c_tile = c_ptr + g.to(tl.int64) * stride_cg + offs_k[:, None].to(tl.int64) * stride_ck + offs_n[None, :] * stride_cn
    tl.store(c_tile, acc.to(c_ptr.dtype.element_ty), mask=(offs_k[:, None] < K) & (offs_n[None, :] < N))


# b's gradient: 128 x 128 tiles of c[g], 64 rows a step (not yet timed on a GPU)
WEIGHT_GRAD_CONFIG = triton.Config({"BLOCK_K": 128, "BLOCK_N": 128, "BLOCK_T": 64}, num_warps=8, num_stages=3)
WEIGHT_GRAD_CONFIG_INTERPRETER = triton.Config({"BLOCK_K": 32, "BLOCK_N": 32, "BLOCK_T": 32}, num_warps=4,
                                               num_stages=1)


def _weight_grad_plan(inputs, variant, out) -> Plan:
    """``weight_grad``'s call: validated, then one launch (a program a tile of one group)."""
    a, grad, offs = inputs
    grouped.check_weight_grad(a, grad, offs)
    (T, K), N, G = a.shape, grad.shape[1], offs.shape[0]
    names = ("a", "grad", "offs")
    check_output(out, (G, K, N), dict(zip(names, inputs)), need_cuda=not interpreting())
    if G * K * N == 0:
        return Plan((G, K, N), a.dtype, a.device, lambda *args: None, names)
    cfg = WEIGHT_GRAD_CONFIG_INTERPRETER if interpreting() else WEIGHT_GRAD_CONFIG
    grid = (G * cdiv(K, cfg.kwargs["BLOCK_K"]) * cdiv(N, cfg.kwargs["BLOCK_N"]),)
    # the interpreter computes no bfloat16: float32 copies (exact), rounded once at the end
    upcast = interpreting() and a.dtype == torch.bfloat16
    launch = TritonLaunch(_weight_grad_kernel, grid, dict(cfg.kwargs, INPUT_PRECISION="ieee" if upcast else "tf32"),
                          dict(num_warps=cfg.num_warps, num_stages=cfg.num_stages))
    if upcast:
        def run(a, grad, offs, out):
            a, grad = a.float(), grad.float()
            c = torch.empty((G, K, N), dtype=torch.float32, device=a.device)
            launch(a, grad, c, offs, T, K, N, *a.stride(), *grad.stride(), *c.stride(), offs.stride(0))
            out.copy_(c)
        return Plan((G, K, N), a.dtype, a.device, run, names, traceable=False)
    # (out contiguous: output's check)
    bound = launch.bind(T, K, N, *a.stride(), *grad.stride(), K * N, N, 1, offs.stride(0))
    return Plan((G, K, N), a.dtype, a.device, lambda a, grad, offs, out: bound(a, grad, out, offs), names,
                traceable=False)


_WEIGHT_GRAD_PLANS = PlanCache(_weight_grad_plan)


def weight_grad(a: torch.Tensor, grad: torch.Tensor, offs: torch.Tensor, *,
                out: torch.Tensor | None = None) -> torch.Tensor:
    """(G, K, N), G = len(offs): for each group g, a[rows of g].T @ grad[rows of g] (``grouped_mm``'s
    gradient of b, a product grouped over its reduction; zeros for an empty group). ``a`` (T, K)
    and ``grad`` (T, N) of one 16-bit dtype, any strides; ``offs`` as ``grouped_mm`` takes it."""
    return _BACKEND.weight_grad(a, grad, offs, out)


def _readable(t) -> bool:
    """Does a descriptor read ``t`` (a 2-D a, a 3-D b either way) where it lies?"""
    return tma_rows(t) if t.dim() == 2 else tma_batch_view(t) is not None and base_phase(t) == 0


def pick_variant(a, b, offs, out=None) -> str:
    return VARIANTS[0]


def _config(T: int, G: int) -> triton.Config:
    """CONFIGS' "many" where T rows make at least two of its row tiles a group on average, else "few"."""
    if interpreting():
        return CONFIG_INTERPRETER
    many = CONFIGS["many"]
    return many if T >= 2 * many.kwargs["BLOCK_M"] * G else CONFIGS["few"]


def describe(a, b, offs, variant=None) -> str:
    """The variant and its tile (from the mean group: the group sizes are not known on the host)."""
    return f"{variant or VARIANTS[0]} {tile_text(_config(a.shape[0], b.shape[0]))}"


def _plan(inputs, variant, out) -> Plan:
    a, b, offs = inputs
    grouped.check(a, b, offs, variant, VARIANTS)
    (T, K), (G, _, N) = a.shape, b.shape
    check_output(out, (T, N), {"a": a, "b": b, "offs": offs}, need_cuda=not interpreting())
    names = ("a", "b", "offs")
    if T == 0 or N == 0 or G == 0:
        return Plan((T, N), a.dtype, a.device, lambda *args: None, names)
    if K == 0:  # empty sums: the groups' rows are zeros (rows past offs[-1] too, here)
        return Plan((T, N), a.dtype, a.device, lambda a, b, offs, out: out.zero_(), names)
    if not _hopper(a.device):
        raise ValueError("grouped_mm needs a Hopper GPU (TMA)")
    # the interpreter cannot compute in bfloat16: float32 copies (exact), rounded once at the end
    upcast = a.dtype == torch.bfloat16 and interpreting()
    # an operand no descriptor reads where it lies is copied, rows padded to 16 bytes (b row-major)
    copy_a, copy_b = upcast or not _readable(a), upcast or not _readable(b)
    dtype = torch.float32 if upcast else a.dtype
    a_meta = padded(T, K, dtype, "meta") if copy_a else a
    b_meta = grouped.b_copy(G, K, N, dtype, "meta") if copy_b else b
    cfg = _config(T, G)
    bm, bn, bk = (cfg.kwargs[k] for k in ("BLOCK_M", "BLOCK_N", "BLOCK_K"))
    sms = 4 if interpreting() else sm_count(a.device)
    programs = grouped.grid_size(T, N, G, bm, bn, sms)
    meta = dict(cfg.kwargs, B_T=bool(tma_batch_view(b_meta)), INPUT_PRECISION="ieee" if dtype == torch.float32 else "tf32")
    a_spec = DescriptorSpec((T, K), (a_meta.stride(0), 1), (bm, bk))
    launch = TritonLaunch(_grouped_kernel, (programs,), meta, dict(num_warps=cfg.num_warps, num_stages=cfg.num_stages),
                          descriptors=(a_spec, _descriptor_3d(b_meta, (bk, bn))))
    bound = launch.bind(T, N, K, G, programs, N, 1, offs.stride(0))  # (c contiguous: output's check)

    def run(a, b, offs, out):
        if copy_a:
            a_copy = padded(T, K, dtype, a.device)
            a_copy.copy_(a)
            a = a_copy
        if copy_b:
            b_copy = grouped.b_copy(G, K, N, dtype, b.device)
            b_copy.copy_(b)
            b = b_copy
        c = torch.empty((T, N), dtype=torch.float32, device=a.device) if upcast else out
        bound(a, b, c, offs)
        if upcast:  # (rows past offs[-1] keep out's contents, as on the GPU)
            end = int(offs[-1].clamp(0, T))
            out[:end].copy_(c[:end])
    return Plan((T, N), a.dtype, a.device, run, names, traceable=False)


_PLANS = PlanCache(_plan)
_BACKEND = grouped.Backend(_PLANS, _WEIGHT_GRAD_PLANS)  # gradients (autograd) and the switch's call
switch_call = _BACKEND.switch_call


def grouped_mm(a: torch.Tensor, b: torch.Tensor, offs: torch.Tensor, *, variant: str | None = None,
               out: torch.Tensor | None = None) -> torch.Tensor:
    """c (T, N) with rows offs[g-1]:offs[g] = a[those rows] @ b[g] (``F.grouped_mm(a, b, offs=offs)``).

    ``a`` (T, K) and ``b`` (G, K, N), float16 or bfloat16, any strides (b as a batch of ``W.t()``
    views reads K-major; operands no TMA descriptor reads where they lie are copied first);
    ``offs`` (G,) int32 on a's device: each group's end row, non-decreasing, at most T (not
    checked: that would wait for the GPU; the kernel clamps each end to [the group's start, T], so
    bad offsets give wrong rows, not stores outside c). Rows past offs[-1] are not written. One
    launch on a Hopper GPU (CPU tensors under ``TRITON_INTERPRET=1``). Where a or b requires grad,
    the result carries a grad_fn (b's gradient a product grouped over the rows: ``weight_grad``);
    ``out`` must then be None."""
    return _BACKEND.grouped_mm(a, b, offs, variant, out)
