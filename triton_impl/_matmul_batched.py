"""Batched matmul: a (..., M, K) @ b (..., K, N), batch dimensions broadcast as ``torch.matmul``'s.

Two plans. Where b is one matrix for the whole batch and a's matrices lie row after row (a
linear layer's activations, (batch, tokens, K) @ W.t()), the batch is one 2-D product of all
the rows, planned as any other (the TMA kernel on Hopper). Otherwise one launch of the pointer
kernel (``blocked`` / ``grouped``, the records with ``batch``) walks every product, its programs
product after product, c's matrices one after another (docs/decisions/021-batched-matmul.md).
"""
from __future__ import annotations

import math

import torch

from kernel_common import (batch_view, check_batched_matmul_args, check_variant, interpreting, matmul_out_dtype,
                           output, sm_count)
from kernel_common.catalog import check_dtype
from kernel_common.plans import Plan
from triton_impl._matmul import (DTYPE_NAMES, DTYPES, PLANNERS, RECORDS, VARIANTS, _PLANS, _heuristic_config,
                                 _input_precision, _unaligned, config_for, plan_launch, pick_variant)
from triton_impl._matmul import describe as describe_2d

BATCH = tuple(r.name for r in RECORDS if r.algorithm == "matmul" and r.batch)  # whose launch walks a batch
BATCH_DEFAULT = "grouped"  # the pointer kernel in its L2 tile order (the TMA kernels take one product)


def _meta(t: torch.Tensor) -> torch.Tensor:
    """A tensor of ``t``'s metadata and no data: its batch view's strides, without a copy."""
    return torch.empty_strided(t.shape, t.stride(), dtype=t.dtype, device="meta")


def _config(variant, a0, b0, precision, count):
    """The config of ``count`` products of a0 @ b0: the family's heuristic given each product's share
    of the SMs (so that all the batch's tiles fill the GPU), or the variant's fixed one."""
    if PLANNERS[variant].family is None or a0.dtype == torch.int32 or interpreting():
        return config_for(variant, a0, b0, precision)
    (M, K), N = a0.shape, b0.shape[1]
    sms = -(-sm_count(a0.device) // count)
    return _heuristic_config(M, N, K, a0.element_size(), sms, "grouped", _unaligned(a0, b0), b0.stride(1) != 1)


def _folded(a, b, batch):
    """(a's rows as one (count * M, K) matrix, b's one matrix) where the batch is one 2-D product:
    b the same matrix for every product and a's matrices row after row (or a copy of a that is);
    else None. From metadata alone: ``a`` and ``b`` may be meta tensors."""
    a3, b3 = batch_view(_meta(a), batch), batch_view(_meta(b), batch)
    count, (M, K) = a3.shape[0], a3.shape[1:]
    if count == 0 or b3.stride(0) != 0 or (count > 1 and a3.stride(0) != M * a3.stride(1)):
        return None
    x = batch_view(a, batch)
    return x.as_strided((count * M, K), (a3.stride(1), a3.stride(2))), batch_view(b, batch)[0]


def pick(a, b) -> str:
    """What ``variant=None`` runs on a batch: the 2-D pick of its one product, else ``BATCH_DEFAULT``."""
    batch = check_batched_matmul_args(a, b, dtypes=DTYPES)
    two_d = _folded(a, b, batch)
    return pick_variant(*two_d) if two_d is not None else BATCH_DEFAULT


def describe(a, b, variant=None) -> str:
    """What a batched call runs: its one product's description, or the variant and its config."""
    batch = check_batched_matmul_args(a, b, dtypes=DTYPES)
    two_d = _folded(a, b, batch)
    if two_d is not None:
        return "rows as one product: " + describe_2d(*two_d, variant=variant)
    variant = variant or BATCH_DEFAULT
    a0, b0 = a[(0,) * (a.dim() - 2)], b[(0,) * (b.dim() - 2)]
    cfg = _config(variant, a0, b0, _input_precision(a.dtype), math.prod(batch))
    kw = cfg.kwargs
    return f"{variant} {kw['BLOCK_M']}x{kw['BLOCK_N']}x{kw['BLOCK_K']} w{cfg.num_warps} s{cfg.num_stages} batch"


def plan(a, b, variant, out) -> Plan:
    """Validate a batched call and plan it (once per distinct metadata)."""
    batch = check_batched_matmul_args(a, b, dtypes=DTYPES)
    check_variant(variant, VARIANTS, "matmul")
    if variant is not None:
        check_dtype(RECORDS, "matmul", variant, a.dtype, DTYPE_NAMES)
    M, K, N, count = a.shape[-2], a.shape[-1], b.shape[-1], math.prod(batch)
    shape, dtype = (*batch, M, N), matmul_out_dtype(a.dtype)
    output(out, shape, {"a": a, "b": b}, need_cuda=not interpreting(), dtype=dtype)
    names = ("a", "b")
    if 0 in shape:
        return Plan(shape, dtype, a.device, lambda *args: None, names)
    if K == 0:  # empty sums
        return Plan(shape, dtype, a.device, lambda a, b, out: out.zero_(), names)
    # the interpreter cannot compute in bfloat16: float32 copies (exact upcasts), rounded once at the end
    upcast = a.dtype == torch.bfloat16 and interpreting()
    am, bm = (_meta(t).float() if upcast else _meta(t) for t in (a, b))  # (.float() keeps dense strides)
    two_d = _folded(am, bm, batch)
    if two_d is not None:
        rows = two_d[0].shape, two_d[0].stride()  # (a's metadata fixes them: the plan's key)

        def folded(a, b, out):  # one product of every row of the batch
            _PLANS((batch_view(a, batch).as_strided(*rows), batch_view(b, batch)[0]), variant, out.view(count * M, N))
        return Plan(shape, dtype, a.device, folded, names, traceable=False)
    a3, b3 = batch_view(am, batch), batch_view(bm, batch)
    variant = variant or BATCH_DEFAULT
    if variant not in BATCH:
        raise ValueError(f"variant {variant} takes a batch only as one 2-D product (b one matrix, a's matrices "
                         f"row after row); batched variants: {', '.join(BATCH)}")
    a0, b0 = a[(0,) * (a.dim() - 2)], b[(0,) * (b.dim() - 2)]
    if upcast:
        a0, b0 = a0.float(), b0.float()
    precision = "ieee" if upcast else _input_precision(a.dtype)
    cfg = _config(variant, a0, b0, precision, count)
    launch = plan_launch(cfg, M, N, precision, a0.dtype, 0, count)
    bound = launch.bind(M, N, K, *a3.stride()[1:], *b3.stride()[1:], 0, 0, a3.stride(0), b3.stride(0))

    def run(a, b, out):  # (out stands in for the bias pointer the kernel does not read)
        if upcast:
            c = torch.empty(shape, dtype=torch.float32, device=a.device)
            bound(batch_view(a.float(), batch), batch_view(b.float(), batch), c, c)
            out.copy_(c)  # round to nearest even, as the GPU kernel's store does
        else:
            bound(batch_view(a, batch), batch_view(b, batch), out, out)
    return Plan(shape, dtype, a.device, run, names, traceable=False)
