"""Batched matmul: a (..., M, K) @ b (..., K, N), batch dimensions broadcast as ``torch.matmul``'s.

Two plans (``kernel_common.plans.batched_plan``). Where b is one matrix for the whole batch and
a's matrices lie row after row (a linear layer's activations, (batch, tokens, K) @ W.t()), the
batch is one 2-D product of all the rows, planned as any other (the TMA kernel on Hopper).
Otherwise one launch of the pointer kernel (``blocked`` / ``grouped``, the records with
``batch``) walks every product, its programs product after product, c's matrices one after
another (docs/decisions/021-batched-matmul.md).
"""
from __future__ import annotations

import math

import torch
import triton

from kernel_common import batch_view, check_batched_matmul_args, interpreting, sm_count
from kernel_common.catalog import check_dtype
from kernel_common.plans import batched_plan
from kernel_common.validate import fold_batch, meta_like
from triton_impl._matmul import (DTYPE_NAMES, DTYPES, PLANNERS, RECORDS, VARIANTS, _PLANS, _heuristic_config,
                                 _input_precision, _unaligned, config_for, plan_launch, pick_variant)
from triton_impl._matmul import describe as describe_2d

BATCH = {r.name: r.batch for r in RECORDS if r.algorithm == "matmul"}  # whose launch walks a batch (its record)
BATCH_DEFAULT = "grouped"  # the pointer kernel in its L2 tile order (the TMA kernels take one product)
MAX_PROGRAMS = 2**31 - 1  # a grid's x extent: a batch with more tiles takes several launches


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


def pick(a, b) -> str:
    """What ``variant=None`` runs on a batch: the 2-D pick of its one product, else ``BATCH_DEFAULT``."""
    two_d = fold_batch(a, b, check_batched_matmul_args(a, b, dtypes=DTYPES))
    return pick_variant(*two_d) if two_d is not None else BATCH_DEFAULT


def describe(a, b, variant=None) -> str:
    """What a batched call runs: its one product's description, or the variant and its config."""
    batch = check_batched_matmul_args(a, b, dtypes=DTYPES)
    two_d = fold_batch(a, b, batch)
    if two_d is not None:
        return "rows as one product: " + describe_2d(*two_d, variant=variant)
    variant = variant or BATCH_DEFAULT
    cfg = _config(variant, _first(a), _first(b), _input_precision(a.dtype), math.prod(batch))
    kw = cfg.kwargs
    return f"{variant} {kw['BLOCK_M']}x{kw['BLOCK_N']}x{kw['BLOCK_K']} w{cfg.num_warps} s{cfg.num_stages} batch"


def _walk(a, b, variant, batch):
    """run(a, b, out) of the pointer kernel over the batch: one launch (more past ``MAX_PROGRAMS``
    tiles), each operand read through one batch stride (0 where it is broadcast; copied first where
    no single stride walks its batch)."""
    variant = variant or BATCH_DEFAULT
    if not BATCH[variant]:
        raise ValueError(f"variant {variant} takes a batch only as one 2-D product (b one matrix, a's matrices "
                         f"row after row); batched variants: {', '.join(v for v, walks in BATCH.items() if walks)}")
    M, K, N, count = a.shape[-2], a.shape[-1], b.shape[-1], math.prod(batch)
    # the interpreter cannot compute in bfloat16: float32 copies (exact upcasts), rounded once at the end
    upcast = a.dtype == torch.bfloat16 and interpreting()
    am, bm = (meta_like(t).float() if upcast else meta_like(t) for t in (a, b))  # (.float() keeps dense strides)
    a3, b3 = batch_view(am, batch), batch_view(bm, batch)
    a0, b0 = (_first(t).float() if upcast else _first(t) for t in (a, b))
    precision = "ieee" if upcast else _input_precision(a.dtype)
    cfg = _config(variant, a0, b0, precision, count)
    # products a launch: its grid (every product's tiles) stays within MAX_PROGRAMS
    per = max(1, min(count, MAX_PROGRAMS // (triton.cdiv(M, cfg.kwargs["BLOCK_M"]) * triton.cdiv(N, cfg.kwargs["BLOCK_N"]))))
    scalars = (M, N, K, *a3.stride()[1:], *b3.stride()[1:], 0, 0, a3.stride(0), b3.stride(0))
    bound = {n: plan_launch(cfg, M, N, precision, a0.dtype, 0, n).bind(*scalars) for n in {per, count % per or per}}

    def launch(a3, b3, c3):  # (c3 stands in for the bias pointer the kernel does not read)
        if per == count:
            return bound[count](a3, b3, c3, c3)
        for s in range(0, count, per):
            n = min(per, count - s)
            bound[n](a3[s:s + n], b3[s:s + n], c3[s:s + n], c3[s:s + n])

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


def plan(a, b, variant, out):
    """Validate a batched call and plan it (once per distinct metadata)."""
    return batched_plan(a, b, variant, out, plans=_PLANS, dtypes=DTYPES, variants=VARIANTS,
                        check_dtype=lambda v, dtype: check_dtype(RECORDS, "matmul", v, dtype, DTYPE_NAMES),
                        need_cuda=not interpreting(), walk=_walk)
