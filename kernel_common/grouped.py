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
