"""What both backends' grouped matmuls (mixture-of-experts products, ``F.grouped_mm``'s 2-D x 3-D
form) share: the operands' checks, the persistent grid for any split of the rows, b's padded copy."""
from __future__ import annotations

import torch

from kernel_common.util import balanced_grid, cdiv
from kernel_common.validate import check_like, check_matrix, check_variant

DTYPES = (torch.float16, torch.bfloat16)


def check_operands(a, name: str, other, ndim: int, offs) -> None:
    """a (T, K), the other operand (``ndim`` dimensions) of a's dtype, offs (G,) int32."""
    check_matrix("a", a, ndim=2, dtypes=DTYPES)
    check_matrix(name, other, ndim=ndim, dtypes=DTYPES)
    check_like(name, other, "a", a)
    check_matrix("offs", offs, ndim=1, dtypes=(torch.int32,))


def check(a, b, offs, variant, variants: tuple[str, ...]) -> None:
    """grouped_mm's arguments: a (T, K), b (G, K, N), offs (G,) int32, a known variant."""
    check_operands(a, "b", b, 3, offs)
    check_variant(variant, variants, "grouped_mm")
    if b.shape[1] != a.shape[1]:
        raise ValueError(f"a's columns ({a.shape[1]}) must equal b's rows b.shape[1] ({b.shape[1]}): "
                         f"got a {tuple(a.shape)} and b {tuple(b.shape)}")
    if offs.shape[0] != b.shape[0]:
        raise ValueError(f"offs must hold one end per group of b ({b.shape[0]}), got {offs.shape[0]}")


def b_copy(G: int, K: int, N: int, dtype, device) -> torch.Tensor:
    """An empty (G, K, N) row-major b whose rows start every 16 bytes (``padded``'s, per group)."""
    step = 16 // dtype.itemsize
    return torch.empty((G, K, cdiv(N, step) * step), dtype=dtype, device=device)[..., :N]


def grid_size(T: int, N: int, G: int, bm: int, bn: int, sms: int) -> int:
    """Programs for T rows in G groups of any split (the split is on the GPU): a persistent grid
    for the most tiles a split can make (each non-empty group adds at most one partial row of
    tiles), at most one program per SM. (A count from an even split left decode's few rows over
    many experts, 64 rows in 128 groups, on 12 programs for up to 768 tiles.)"""
    row_tiles = cdiv(T, bm) + min(G, T) - 1
    return balanced_grid(max(1, row_tiles * cdiv(N, bn)), sms)


def check_weight_grad(a, grad, offs) -> None:
    """weight_grad's arguments: a (T, K), grad (T, N) of a's dtype, offs (G,) int32."""
    check_operands(a, "grad", grad, 2, offs)
    if grad.shape[0] != a.shape[0]:
        raise ValueError(f"grad's rows ({grad.shape[0]}) must be a's ({a.shape[0]}): got a {tuple(a.shape)} "
                         f"and grad {tuple(grad.shape)}")


class Backend:
    """A backend's grouped_mm with gradients, and its switch call, over its two plan caches:
    ``plans((a, b, offs), variant, out)`` (grouped_mm's) and ``weight_plans((a, grad, offs), None,
    out)`` (b's gradient, a product grouped over the rows)."""

    def __init__(self, plans, weight_plans):
        self.plans, self.weight_plans = plans, weight_plans
        backend = self

        class GroupedMm(torch.autograd.Function):
            """grouped_mm with gradients: a's by the same product on b's transpose (rows past
            offs[-1], in no product, zero), b's by ``weight_grad``."""

            @staticmethod
            def forward(ctx, a, b, offs, variant):
                ctx.save_for_backward(a, b, offs)
                return backend.plans((a, b, offs), variant, None)

            @staticmethod
            def backward(ctx, grad):
                a, b, offs = ctx.saved_tensors
                da = db = None
                if ctx.needs_input_grad[0]:
                    da = torch.zeros(a.shape, dtype=a.dtype, device=a.device)
                    backend.plans((grad, b.mT, offs), None, da)
                if ctx.needs_input_grad[1]:
                    # in b's layout: autograd copies a gradient of other strides into its leaf's, a
                    # transposing pass over all of b where b is a batch of W.t() (b[g] K-major), so
                    # there the product is grad^T a, written (G, N, K) and returned as its (G, K, N) view
                    kmajor = b.stride(1) == 1 and b.stride(2) != 1
                    db = backend.weight_grad(grad, a, offs).mT if kmajor else backend.weight_grad(a, grad, offs)
                return da, db, None, None
        self.function = GroupedMm

    def grouped_mm(self, a, b, offs, variant=None, out=None):
        """The product, with a grad_fn where a or b requires grad (``out`` must then be None)."""
        if torch.is_grad_enabled() and (a.requires_grad or b.requires_grad):
            if out is not None:
                raise ValueError("out must be None when an input requires grad: the result would carry no grad_fn")
            return self.function.apply(a, b, offs, variant)
        return self.plans((a, b, offs), variant, out)

    def weight_grad(self, a, grad, offs, out=None):
        return self.weight_plans((a, grad, offs), None, out)

    def switch_call(self, a, b, offs):
        """The switch's aten::_grouped_mm(a, b, offs), c in a's dtype: 2-D x 3-D by grouped_mm's
        plan; 2-D x 2-D (offs split K, as in b's gradient: c[g] = a[:, group g] @ b[group g]) by
        ``weight_grad``; None for the other forms. Refusals raise (TypeError, ValueError)."""
        if offs is None or a.dim() != 2:
            return None
        return self.plans((a, b, offs), None, None) if b.dim() == 3 else self.weight_grad(a.t(), b, offs)
