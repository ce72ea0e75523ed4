"""Batched matmul: a (..., M, K) @ b (..., K, N), batch dimensions broadcast as ``torch.matmul``'s.

Two plans (``kernel_common.plans.batched_plan``). Where b is one matrix for the whole batch and
a's matrices lie row after row (a linear layer's activations, (batch, tokens, K) @ W.t()), the
batch is one 2-D product of all the rows, planned as any other (the TMA kernel on Hopper).
Otherwise one launch walks every product: on Hopper, 16-bit operands that 3-D descriptors read
where they lie (attention's q @ k.mT and p @ v), the persistent TMA kernel over the batch's tiles
(``tma_persistent``); else the pointer kernel (``blocked`` / ``grouped``), its programs product
after product. c's matrices lie one after another (docs/decisions/021-batched-matmul.md).
"""
from __future__ import annotations

import math

import torch
import triton
import triton.language as tl

from kernel_common import (balanced_grid, base_phase, batch_view, cdiv, check_batched_matmul_args, interpreting, sm_count,
                           tma_batch_view)
from kernel_common.catalog import check_dtype
from kernel_common.plans import batched_plan
from kernel_common.validate import fold_batch, meta_like
from triton_impl._matmul import (DTYPE_NAMES, DTYPES, PLANNERS, RECORDS, VARIANTS, _PLANS, _heuristic_config,
                                 _input_precision, _unaligned, config_for, plan_launch, pick_variant)
from triton_impl._matmul import describe as describe_2d
from triton_impl._matmul_configs import _TMA_INTERPRETER, batched_tma_config, tile_text
from triton_impl._matmul_fp32 import _hopper
from triton_impl._matmul_tma import _grouped_tile
from triton_impl._launch import DescriptorSpec, TritonLaunch

BATCH = {r.name: bool(r.batch) for r in RECORDS if r.algorithm == "matmul"}  # whose launch walks a batch (its record)
# the dtypes the TMA walk takes: its record's (``batch`` names them)
TMA_DTYPES = tuple(getattr(torch, name) for name in next(r.batch for r in RECORDS if r.name == "tma_persistent"
                                                          and r.algorithm == "matmul"))
BATCH_DEFAULT = "grouped"  # the pointer kernel in its L2 tile order, where the TMA walk does not apply
MAX_PROGRAMS = 2**31 - 1  # a grid's x extent: a batch with more tiles takes several launches


@triton.jit(do_not_specialize=["programs"])
def _tma_batched_kernel(a_desc, b_desc, c_desc, M, N, K, count, programs,
                        BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,
                        EPILOGUE_SUBTILE: tl.constexpr, A_T: tl.constexpr, B_T: tl.constexpr,
                        A_ONE: tl.constexpr, B_ONE: tl.constexpr, INPUT_PRECISION: tl.constexpr):
    """The TMA kernel's persistent loop over ``count`` products' tiles (item // tiles: the product),
    each operand and c through a 3-D descriptor whose outer dimension is the batch. ``A_T`` / ``B_T``:
    the descriptor reads the matrices' transposes (k.mT: K-major tiles); ``A_ONE`` / ``B_ONE``: one
    matrix broadcast over the batch. Every item runs K whole, so the item and K loops are one
    software pipeline (``flatten``: the next tile's loads in flight during this one's epilogue)."""
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    tiles = num_pid_m * num_pid_n
    k_tiles = tl.cdiv(K, BLOCK_K)
    for item in tl.range(tl.program_id(0), tiles * count, programs, flatten=True):
        p = item // tiles
        pid_m, pid_n = _grouped_tile(item % tiles, num_pid_m, num_pid_n, GROUP_M)
        off_m = pid_m * BLOCK_M
        off_n = pid_n * BLOCK_N
        pa = 0 if A_ONE else p
        pb = 0 if B_ONE else p
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        for kt in range(0, k_tiles):
            off_k = kt * BLOCK_K
            if A_T:
                a = a_desc.load([pa, off_k, off_m]).reshape(BLOCK_K, BLOCK_M).T
            else:
                a = a_desc.load([pa, off_m, off_k]).reshape(BLOCK_M, BLOCK_K)
            if B_T:
                b = b_desc.load([pb, off_n, off_k]).reshape(BLOCK_N, BLOCK_K).T
            else:
                b = b_desc.load([pb, off_k, off_n]).reshape(BLOCK_K, BLOCK_N)
            acc = tl.dot(a, b, acc, input_precision=INPUT_PRECISION)
        c = acc.to(c_desc.dtype)
        if EPILOGUE_SUBTILE:  # two half-width stores: half the shared memory for the epilogue
            c0, c1 = c.reshape(BLOCK_M, 2, BLOCK_N // 2).permute(0, 2, 1).split()
            c_desc.store([p, off_m, off_n], c0.reshape(1, BLOCK_M, BLOCK_N // 2))
            c_desc.store([p, off_m, off_n + BLOCK_N // 2], c1.reshape(1, BLOCK_M, BLOCK_N // 2))
        else:
            c_desc.store([p, off_m, off_n], c.reshape(1, BLOCK_M, BLOCK_N))


def _tma_walks(a, b, out, batch) -> bool:
    """Does the TMA walk take this batch: Hopper, 16-bit, each operand's batch read by a descriptor
    where it lies (a base on 16 bytes) and c's rows whole 16 bytes?"""
    if a.dtype not in TMA_DTYPES or not _hopper(a.device):
        return False
    views = [batch_view(meta_like(t), batch) for t in (a, b)]
    N = b.shape[-1]
    return (all(tma_batch_view(v) is not None for v in views) and all(base_phase(t) == 0 for t in (a, b))
            and N * a.element_size() % 16 == 0 and (out is None or base_phase(out) == 0)
            and math.prod(batch) * cdiv(a.shape[-2], 64) * cdiv(N, 64) < MAX_PROGRAMS)


def _descriptor_3d(t3, block) -> DescriptorSpec:
    """The descriptor of the batch ``t3`` with (rows, cols) ``block`` tiles (``tma_batch_view``'s way:
    a transposed one reads the transposed block); one matrix where the batch is broadcast (its batch
    stride, which a tensor map wants on 16 bytes even for one matrix, one past the matrix's end)."""
    B, R, C = t3.shape
    if t3.stride(0) == 0:
        B = 1
    if tma_batch_view(t3):
        return DescriptorSpec((B, C, R), (t3.stride(0) or C * t3.stride(2), t3.stride(2), 1), (1, block[1], block[0]))
    return DescriptorSpec((B, R, C), (t3.stride(0) or R * t3.stride(1), t3.stride(1), 1), (1, *block))


def _tma_config(M, N, K, count, device):
    """The TMA walk's config over ``count`` products, and the SMs it fills."""
    if interpreting():
        return _TMA_INTERPRETER, 4
    sms = sm_count(device)
    return batched_tma_config(M, N, K, count, sms), sms


def _tma_launch(a3, b3, precision, count):
    """launch(a3, b3, c3) of the TMA walk over the batches a3 (B, M, K) and b3 (B, K, N)."""
    (M, K), N = a3.shape[1:], b3.shape[2]
    cfg, sms = _tma_config(M, N, K, count, a3.device)
    kw = cfg.kwargs
    bm, bn, bk = kw["BLOCK_M"], kw["BLOCK_N"], kw["BLOCK_K"]
    programs = balanced_grid(count * cdiv(M, bm) * cdiv(N, bn), sms)
    meta = dict(BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, GROUP_M=kw["GROUP_M"], EPILOGUE_SUBTILE=kw["EPILOGUE_SUBTILE"],
                A_T=tma_batch_view(a3), B_T=tma_batch_view(b3), A_ONE=a3.stride(0) == 0, B_ONE=b3.stride(0) == 0,
                INPUT_PRECISION=precision)
    c_block = (1, bm, bn // 2 if kw["EPILOGUE_SUBTILE"] else bn)
    launch = TritonLaunch(_tma_batched_kernel, (programs,), meta, dict(num_warps=cfg.num_warps, num_stages=cfg.num_stages),
                          descriptors=(_descriptor_3d(a3, (bm, bk)), _descriptor_3d(b3, (bk, bn)),
                                       DescriptorSpec((count, M, N), (M * N, N, 1), c_block)))
    return launch.bind(M, N, K, count, programs)


def _config(variant, a0, b0, precision, count):
    """The config of ``count`` products of a0 @ b0: the family's heuristic given each product's share
    of the SMs (so that all the batch's tiles fill the GPU), or the variant's fixed one."""
    if PLANNERS[variant].family is None or a0.dtype == torch.int32 or interpreting():
        return config_for(variant, a0, b0, precision)
    (M, K), N = a0.shape, b0.shape[1]
    sms = -(-sm_count(a0.device) // count)
    return _heuristic_config(M, N, K, a0.element_size(), sms, "grouped", _unaligned(a0, b0), b0.stride(1) != 1)


def _first(t):
    """The first matrix of a batch (a config reads one product's operands)."""
    return t[(0,) * (t.dim() - 2)]


def pick(a, b, out=None) -> str:
    """What ``variant=None`` runs on a batch: the 2-D pick of its one product, else the TMA walk
    where it takes the batch (``_tma_walks``), else ``BATCH_DEFAULT``."""
    batch = check_batched_matmul_args(a, b, dtypes=DTYPES)
    two_d = fold_batch(a, b, batch)
    if two_d is not None:
        return pick_variant(*two_d)
    return _walk_variant(a, b, None, batch, out)


def describe(a, b, variant=None) -> str:
    """What a batched call runs: its one product's description, or the variant and its config."""
    batch = check_batched_matmul_args(a, b, dtypes=DTYPES)
    two_d = fold_batch(a, b, batch)
    if two_d is not None:
        return "rows as one product: " + describe_2d(*two_d, variant=variant)
    variant = _walk_variant(a, b, variant, batch)
    if variant == BATCH_DEFAULT and _gemv_batch(a, b, batch):
        return f"{variant} batch: the GEMV kernel, each product one row or column"
    count = math.prod(batch)
    if variant == "tma_persistent":
        cfg = _tma_config(a.shape[-2], b.shape[-1], a.shape[-1], count, a.device)[0]
    else:
        cfg = _config(variant, _first(a), _first(b), _input_precision(a.dtype), count)
    return f"{variant} {tile_text(cfg)} batch"


def _pointer_launch(variant, a3, b3, a0, b0, precision, count):
    """launch(a3, b3, c3) of the pointer kernel over the batch (several launches past
    ``MAX_PROGRAMS`` tiles)."""
    (M, K), N = a3.shape[1:], b3.shape[2]
    cfg = _config(variant, a0, b0, precision, count)
    # products a launch: its grid (every product's tiles) stays within MAX_PROGRAMS
    per = max(1, min(count, MAX_PROGRAMS // (cdiv(M, cfg.kwargs["BLOCK_M"]) * cdiv(N, cfg.kwargs["BLOCK_N"]))))
    scalars = (M, N, K, *a3.stride()[1:], *b3.stride()[1:], 0, 0, a3.stride(0), b3.stride(0))
    bound = {n: plan_launch(cfg, M, N, precision, a0.dtype, 0, n).bind(*scalars) for n in {per, count % per or per}}

    def launch(a3, b3, c3):  # (c3 stands in for the bias pointer the kernel does not read)
        if per == count:
            return bound[count](a3, b3, c3, c3)
        for s in range(0, count, per):
            n = min(per, count - s)
            bound[n](a3[s:s + n], b3[s:s + n], c3[s:s + n], c3[s:s + n])
    return launch


def _walk_variant(a, b, variant, batch, out=None) -> str:
    """The variant that walks this batch (variant=None: BATCH_DEFAULT for products of one row or
    column, which it runs as GEMVs; else the TMA walk where it reads the operands, else
    BATCH_DEFAULT), or a ValueError where the one asked for cannot."""
    if variant is None and _gemv_batch(a, b, batch):
        return BATCH_DEFAULT
    tma = _tma_walks(a, b, out, batch)
    variant = variant or ("tma_persistent" if tma else BATCH_DEFAULT)
    if not BATCH[variant]:
        raise ValueError(f"variant {variant} takes a batch only as one 2-D product (b one matrix, a's matrices "
                         f"row after row); batched variants: {', '.join(v for v, walks in BATCH.items() if walks)}")
    if variant == "tma_persistent" and not tma:
        raise ValueError("variant tma_persistent takes a batch of 16-bit operands on Hopper that descriptors read "
                         "where they lie (a unit stride in each matrix, other strides and the bases on 16 bytes, "
                         "c's rows whole 16 bytes); grouped takes any batch")
    return variant


def _walk(a, b, variant, batch, out=None):
    """run(a, b, out) over the batch: the TMA walk (one persistent launch), or the pointer kernel's
    (one launch, more past ``MAX_PROGRAMS`` tiles), each operand read through one batch stride (0
    where it is broadcast; copied first where no single stride walks its batch)."""
    variant = _walk_variant(a, b, variant, batch, out)
    M, N, count = a.shape[-2], b.shape[-1], math.prod(batch)
    # the interpreter cannot compute in bfloat16: float32 copies (exact upcasts), rounded once at the end
    upcast = a.dtype == torch.bfloat16 and interpreting()
    am, bm = (meta_like(t).float() if upcast else meta_like(t) for t in (a, b))  # (.float() keeps dense strides)
    a3, b3 = batch_view(am, batch), batch_view(bm, batch)
    a0, b0 = (_first(t).float() if upcast else _first(t) for t in (a, b))
    precision = "ieee" if upcast else _input_precision(a.dtype)
    # BATCH_DEFAULT on products of one row or column: the GEMV kernel over the batch
    launch = _gemv_walk(a3, b3) if variant == BATCH_DEFAULT and not upcast else None
    if launch is None:
        launch = _tma_launch(a3, b3, precision, count) if variant == "tma_persistent" else \
            _pointer_launch(variant, a3, b3, a0, b0, precision, count)

    # a 3-D operand of the whole batch is its own batch view (bmm's, the switch's): no view made a call
    a_as_is, b_as_is = (t.dim() == 3 and tuple(t.shape[:1]) == batch for t in (a, b))

    def run(a, b, out):
        if upcast:
            c = torch.empty((count, M, N), dtype=torch.float32, device=a.device)
            launch(batch_view(a.float(), batch), batch_view(b.float(), batch), c)
            out.copy_(c.view(out.shape))  # round to nearest even, as the GPU kernel's store does
        else:
            launch(a if a_as_is else batch_view(a, batch), b if b_as_is else batch_view(b, batch),
                   out if out.dim() == 3 else out.view(count, M, N))
    return run


def _gemv_batch(a, b, batch) -> bool:
    """Does BATCH_DEFAULT run this batch as GEMVs (``_gemv_form``)? Not in the interpreter's
    bfloat16, which the walk computes on float32 copies."""
    if a.dtype == torch.bfloat16 and interpreting():
        return False
    return _gemv_form(batch_view(meta_like(a), batch), batch_view(meta_like(b), batch)) is not None


def _gemv_form(a3, b3):
    """(W, x's batch stride, y's batch stride, swapped) of a batch of GEMVs y[p] = W[p] x[p], or
    None: products of one column (N == 1: W = a, x = b's columns) or one row (M == 1: W = b^T read
    where b lies, x = a's rows, swapped), the vector contiguous and W's matrices row- or
    column-major. A tile of 16 x 64 or more would spend most of its reads and MMAs on padding; the
    GEMV reads each matrix once, whole 16-byte loads along its contiguous side (transformers'
    batched_mm experts at decode: (S, out, in) @ (S, in, 1), one gathered expert matrix a token)."""
    from triton_impl import _gemv

    count, M, K = a3.shape
    N = b3.shape[2]
    if a3.dtype not in _gemv.DTYPES or not count:
        return None
    if N == 1 and (b3.stride(1) == 1 or K == 1):
        form = (a3, b3.stride(0), M, False)
    elif M == 1 and (a3.stride(2) == 1 or K == 1):
        form = (b3.mT, a3.stride(0), N, True)
    else:
        return None
    return form if _gemv.batch_variant(form[0]) is not None else None


def _gemv_walk(a3, b3):
    """launch(a3, b3, c3) of ``_gemv_form``'s GEMVs over the whole batch (``_gemv.batch_launch``),
    or None where the batch is not one."""
    from triton_impl import _gemv

    form = _gemv_form(a3, b3)
    if form is None:
        return None
    w3, x_stride_b, y_stride_b, swapped = form
    launch = _gemv.batch_launch(w3, x_stride_b, y_stride_b)
    return (lambda a3, b3, c3: launch(b3, a3, c3)) if swapped else launch


def plan(a, b, variant, out):
    """Validate a batched call and plan it (once per distinct metadata)."""
    return batched_plan(a, b, variant, out, plans=_PLANS, dtypes=DTYPES, variants=VARIANTS,
                        check_dtype=lambda v, dtype: check_dtype(RECORDS, "matmul", v, dtype, DTYPE_NAMES),
                        need_cuda=not interpreting(), walk=_walk)
