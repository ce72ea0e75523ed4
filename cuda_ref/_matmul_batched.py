"""Batched matmul in cuda_ref: a (..., M, K) @ b (..., K, N). Where the batch is one 2-D product (b
one matrix for every product, a's matrices row after row: activations times a weight) it is planned
as any 2-D product. Other batches of 16-bit operands run, asked by name (``variant="wgmma_ws"``), the
grouped kernel (kernels/matmul_grouped.cu, ``_grouped``), each product a group of M rows, their ends
fixed when the call is planned: one persistent launch over every product's tiles. It stores c's
tiles from the accumulators, not by TMA, and ran 0.31-0.60x torch.bmm on the attention set (H200):
variant=None refuses such batches, naming triton_impl's batch variants, and the switch hands them to
torch (docs/decisions/021-batched-matmul.md)."""
from __future__ import annotations

import math

import torch

from kernel_common import check_batched_matmul_args
from kernel_common.plans import batched_plan
from kernel_common.validate import batch_view, fold_batch
from cuda_ref import _grouped
from cuda_ref._matmul import DTYPES, VARIANTS, _PLANS, check_dtype, describe as describe_2d, pick_variant

WALK = "wgmma_ws"  # the variant whose record walks a batch: its tiles and ring, in the grouped kernel


def _refuse(a, b, variant, batch, out=None):
    raise ValueError(f"a and b: cuda_ref takes a batch as one 2-D product (b one matrix, a's matrices row after "
                     f"row), or a batch of {', '.join(str(d) for d in _grouped.DTYPES)} products with variant={WALK!r}; "
                     f"got a {tuple(a.shape)} and b {tuple(b.shape)} of {a.dtype}, variant {variant}; "
                     "triton_impl.matmul takes any")


def _walks(a, variant) -> bool:
    return a.dtype in _grouped.DTYPES and variant == WALK


def _walk(a, b, variant, batch, out):
    """run(a, b, out) of a batch that does not fold: its products as the groups of one grouped
    launch (a's matrices as one (count x M, K) matrix, copied where they do not lie row after row;
    b's matrices (count, K, N), a broadcast b made one per product, which no tensor map reads with
    a batch stride of 0), or the refusal."""
    if not _walks(a, variant):
        _refuse(a, b, variant, batch)
    count, M, K, N = math.prod(batch), a.shape[-2], a.shape[-1], b.shape[-1]
    if count * M >= 1 << 31:
        raise ValueError(f"a: a batch of {count} x {M} rows passes the grouped kernel's 2^31 - 1")
    ends = torch.arange(M, (count + 1) * M, M, dtype=torch.int32, device=a.device)  # (each product's last row + 1)

    def run(a, b, out):
        mats = batch_view(b, batch)
        _grouped._PLANS((batch_view(a, batch).reshape(count * M, K), mats.contiguous() if mats.stride(0) == 0 else mats,
                         ends), None, out.view(count * M, N))
    return run


def _two_d(a, b, variant=None):
    """The batch's one 2-D product, or None (a batch the grouped kernel walks), or the refusal."""
    batch = check_batched_matmul_args(a, b, dtypes=DTYPES)
    two_d = fold_batch(a, b, batch)
    if two_d is None and not _walks(a, variant):
        _refuse(a, b, variant, batch)
    return two_d


def pick(a, b) -> str:
    return pick_variant(*_two_d(a, b))


def describe(a, b, variant=None) -> str:
    two_d = _two_d(a, b, variant)
    if two_d is None:
        count = math.prod(check_batched_matmul_args(a, b, dtypes=DTYPES))
        return (f"{WALK}: a batch of {count} products as the groups of one grouped launch "
                f"(matmul_grouped, {_grouped.TILE[0]}x{_grouped.TILE[1]} tiles)")
    return "rows as one product: " + describe_2d(*two_d, variant=variant)


def plan(a, b, variant, out):
    """Validate a batched call and plan it (once per distinct metadata)."""
    return batched_plan(a, b, variant, out, plans=_PLANS, dtypes=DTYPES, variants=VARIANTS, check_dtype=check_dtype,
                        need_cuda=True, walk=_walk)
