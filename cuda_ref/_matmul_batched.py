"""Batched matmul in cuda_ref: a (..., M, K) @ b (..., K, N) where the batch is one 2-D product (b
one matrix for every product, a's matrices row after row: activations times a weight), planned
as any 2-D product; other batches are refused, naming triton_impl's batch variants
(docs/decisions/021-batched-matmul.md)."""
from __future__ import annotations

from kernel_common import check_batched_matmul_args
from kernel_common.plans import batched_plan
from kernel_common.validate import fold_batch
from cuda_ref._matmul import DTYPES, VARIANTS, _PLANS, check_dtype, describe as describe_2d, pick_variant


def _refuse(a, b, variant, batch, out=None):
    raise ValueError(f"a and b: cuda_ref takes a batch only as one 2-D product (b one matrix, a's matrices row "
                     f"after row), got a {tuple(a.shape)} and b {tuple(b.shape)}; triton_impl.matmul takes any")


def _two_d(a, b):
    """The batch's one 2-D product, or the refusal."""
    batch = check_batched_matmul_args(a, b, dtypes=DTYPES)
    two_d = fold_batch(a, b, batch)
    if two_d is None:
        _refuse(a, b, None, batch)
    return two_d


def pick(a, b) -> str:
    return pick_variant(*_two_d(a, b))


def describe(a, b, variant=None) -> str:
    return "rows as one product: " + describe_2d(*_two_d(a, b), variant=variant)


def plan(a, b, variant, out):
    """Validate a batched call and plan it (once per distinct metadata)."""
    return batched_plan(a, b, variant, out, plans=_PLANS, dtypes=DTYPES, variants=VARIANTS, check_dtype=check_dtype,
                        need_cuda=True, walk=_refuse)
