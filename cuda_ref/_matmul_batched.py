"""Batched matmul in cuda_ref: a (..., M, K) @ b (..., K, N). Where the batch is one 2-D product (b
one matrix for every product, a's matrices row after row: activations times a weight) it is planned
as any 2-D product. Other batches of 16-bit operands run, asked by name (``variant="wgmma_ws"``),
wgmma_ws's batch walk: one persistent launch over every product's tiles, the operands and c through
3-D tensor maps (the batch their outer extent, so a tile's loads and TMA stores stop at its product's
edges), 128-row tiles, K whole. variant=None refuses such batches, naming
triton_impl's batch variants, and the switch hands them to torch, until the walk is measured against
torch.bmm (the grouped kernel that walked them before ran 0.31-0.60x torch.bmm on the attention set,
H200: docs/decisions/021-batched-matmul.md)."""
from __future__ import annotations

import math

import torch

from kernel_common import balanced_grid, base_phase, cdiv, check_batched_matmul_args, grouped, sm_count, tma_batch_view
from kernel_common.plans import batched_plan
from kernel_common.validate import batch_view, fold_batch, meta_like
from cuda_ref import loader
from cuda_ref._matmul import DTYPES, VARIANTS, _PLANS, check_dtype, describe as describe_2d, pick_variant
from cuda_ref._matmul_wgmma import (TC_DTYPES, WGMMA_NAME_EXPRESSIONS, WGMMA_TILE, WS_ARGS, WS_THIN_N, WS_FILE,
                                    WS_GROUP_M, WS_MID_N, WS_NARROW_MAX_FILL, WS_NARROW_N, _hopper_only, _kept_maps,
                                    _units, wgmma_name, ws_cluster, ws_smem, ws_split_time)

WALK = "wgmma_ws"  # the variant whose kernel walks a batch
# The walk's tiles are 128 rows (two consumer warpgroups) at any M: its 64-row instances spilled
# under NVRTC 13.0 (232 registers, 4 bytes; 26 with the hand-overs compiled out). The 2-D model's
# functions are asked as for an M-major a, whose tiles ``ws_consumers`` makes 128 rows at any M.
ROWS_128 = True


def _refuse(a, b, variant, batch, out=None):
    raise ValueError(f"a and b: cuda_ref takes a batch as one 2-D product (b one matrix, a's matrices row after "
                     f"row), or a batch of {', '.join(str(d) for d in TC_DTYPES)} products with variant={WALK!r}; "
                     f"got a {tuple(a.shape)} and b {tuple(b.shape)} of {a.dtype}, variant {variant}; "
                     "triton_impl.matmul takes any")


def _walks(a, variant) -> bool:
    return a.dtype in TC_DTYPES and variant == WALK


def batch_tile_n(count: int, M: int, N: int, K: int, itemsize: int, sms: int) -> int:
    """The columns of c in the walk's 128-row tiles: of 128, WS_MID_N and 256 the one the split
    model (``ws_split_time`` over the batch's units, K whole) gives least time; on a tie (where c's
    bytes bind, as attention's scores at K = 64-128) the one of fewer tiles (less of each tile's
    fixed costs), then the narrower. 128 where ``ws_tile_n`` admits it (wide units filling at most
    WS_NARROW_MAX_FILL of the slots), and wherever a product's columns fit in one narrow tile
    (N <= 128: no more units, less of each tile empty: attention's p @ v at head size 64 or 128);
    WS_THIN_N wherever they fit in one of those (half of a 128-column tile's MMAs on zeros)."""
    if N <= WS_THIN_N:
        return WS_THIN_N
    wide = WGMMA_TILE[1]
    widths = [WS_MID_N, wide]
    if N <= WS_NARROW_N or count * _units(M, N, ROWS_128, wide) <= WS_NARROW_MAX_FILL * (sms // ws_cluster(M)):
        widths.insert(0, WS_NARROW_N)
    return min(widths, key=lambda bn: (ws_split_time(M, N, K, itemsize, sms, ROWS_128, 1, bn, count=count),
                                       _units(M, N, ROWS_128, bn), bn))


def batch_launch(count: int, M: int, N: int, K: int, dtype, sms: int, a_mmajor: bool, b_nmajor: bool,
                 tile_n: int | None = None) -> loader.Launch:
    """The walk over ``count`` M x N x K products in tiles ``tile_n`` wide (``batch_tile_n``'s by
    default): a block (a pair, ``ws_cluster``) an SM, as few as keep the waves of the batch's units."""
    cluster, tile_n = ws_cluster(M), tile_n or batch_tile_n(count, M, N, K, dtype.itemsize, sms)
    blocks = cluster * balanced_grid(count * _units(M, N, ROWS_128, tile_n), sms // cluster)
    return loader.Launch(wgmma_name(WALK, dtype, a_mmajor, b_nmajor, cluster, 2, tile_n, batched=True),
                         (blocks,), (3 * 128,), WS_ARGS, ws_smem(tile_n))


def _copy(t3, device):
    """An empty row-major batch for ``t3`` (B, R, C) on ``device``, rows on 16 bytes (one matrix where
    ``t3`` is broadcast)."""
    return grouped.b_copy(1 if t3.stride(0) == 0 else t3.shape[0], *t3.shape[1:], t3.dtype, device)


def _read_as(t, batch):
    """The batch a 3-D map reads for operand ``t`` (metadata): its (B, R, C) view where a map reads
    that where it lies (``tma_batch_view``, a base on 16 bytes), else its copy's (``_copy``); whether
    it is copied; whether it is one matrix for the whole batch (broadcast)."""
    t3 = batch_view(meta_like(t), batch)
    if tma_batch_view(t3) is not None and base_phase(t) == 0:
        return t3, False, t3.stride(0) == 0
    return _copy(t3, "meta"), True, t3.stride(0) == 0


def _map(t3, box_rows: int, box_cols: int, one: bool):
    """encode(address) of the 3-D tensor map of the batch ``t3`` (``tma_batch_view``'s way: a
    transposed one read through its matrices' transposes) in boxes of box_rows x box_cols of the
    matrices read; one matrix where ``one`` (its batch stride then one past its end: a map wants one)."""
    from cuda_ref import _tma

    B, R, C = t3.shape
    (R, C), row = ((C, R), t3.stride(2)) if tma_batch_view(t3) else ((R, C), t3.stride(1))
    B, batch_stride = (1, R * row) if one else (B, t3.stride(0))
    return lambda ptr: _tma.encode_3d(ptr, t3.dtype, (C, R, B), (row, batch_stride), (box_cols, box_rows, 1))


def _launch(a, b, batch):
    """The walk's launch for a batch of a @ b, its tiles' width, and where it reads a and b (``_read_as``)."""
    reads = _read_as(a, batch), _read_as(b, batch)
    count, M, K, N = math.prod(batch), a.shape[-2], a.shape[-1], b.shape[-1]
    tile_n = batch_tile_n(count, M, N, K, a.element_size(), sm_count(a.device))
    launch = batch_launch(count, M, N, K, a.dtype, sm_count(a.device), bool(tma_batch_view(reads[0][0])),
                          not tma_batch_view(reads[1][0]), tile_n)
    return launch, tile_n, *reads


def _walk(a, b, variant, batch, out):
    """run(a, b, out) of a batch that does not fold (wgmma_ws's batch walk), or the refusal. An
    operand no 3-D map reads where it lies is copied first (``_read_as``); c (contiguous) is stored
    by TMA where its rows are whole 16 bytes, else from the accumulators, into out where its base is
    on 16 bytes, else into a fresh batch copied into it."""
    if not _walks(a, variant):
        _refuse(a, b, variant, batch)
    _hopper_only(variant, a.device)
    count, M, K, N = math.prod(batch), a.shape[-2], a.shape[-1], b.shape[-1]
    launch, tile_n, (a_read, copy_a, one_a), (b_read, copy_b, one_b) = _launch(a, b, batch)
    a_mmajor, b_nmajor = bool(tma_batch_view(a_read)), not tma_batch_view(b_read)
    cluster, bm = ws_cluster(M), 128
    units, k_tiles = count * _units(M, N, ROWS_128, tile_n), cdiv(K, 128 // a.element_size())
    if units >= 1 << 31:
        raise ValueError(f"a: a batch of {count} products of {M} x {N} makes {units} tiles, past the walk's 2^31 - 1")
    kernel = loader.kernel(WS_FILE, WGMMA_NAME_EXPRESSIONS[WS_FILE], launch, a.device.index)
    one = int(one_a) | int(one_b) << 1  # the kernel reads matrix 0 of an operand that is one matrix
    bk = 128 // a.element_size()  # a slice is 128 bytes of k
    # boxes: a's tile rows x a slice (64 m x a slice of an M-major a); b's 64 n x a slice N-major, or
    # its tile's columns (a pair's block half of them) x a slice K-major; c's 64 x 64
    encoders = {"a": _map(a_read, bk, 64, one_a) if a_mmajor else _map(a_read, bm, bk, one_a),
                "b": _map(b_read, bk, 64, one_b) if b_nmajor else _map(b_read, tile_n // cluster, bk, one_b)}
    # c into a fresh batch where out's base is off 16 bytes (the accumulators' paired stores need their
    # words aligned: misaligned addresses on the H200), copied into out after
    direct = out is None or base_phase(out) == 0
    store_tma = 2 if N * a.element_size() % 16 == 0 else 0
    if store_tma:
        encoders["c"] = _map(torch.empty((count, M, N), dtype=a.dtype, device="meta"), 64, 64, False)
    tensor_map = _kept_maps(lambda ptr, which: encoders[which](ptr))
    unused_c = bytes(128)  # never read: c is stored from the accumulators
    group_m = max(1, WS_GROUP_M // cluster)

    # a 3-D operand of the whole batch (bmm's, the switch's) is its own batch view: none made a call
    a_as_is, b_as_is = (t.dim() == 3 and tuple(t.shape[:1]) == batch for t in (a, b))

    def operand(t, copy, t_as_is):  # what the kernel reads: held until it is launched (a copy freed
        if not copy:                 # earlier would give its memory to the next one)
            return t if t_as_is else batch_view(t, batch)
        t3 = batch_view(t, batch)
        buf = _copy(t3, t3.device)
        return buf.copy_(t3[:buf.shape[0]])

    def run(a, b, out):
        a3, b3 = operand(a, copy_a, a_as_is), operand(b, copy_b, b_as_is)
        c3 = out if direct else torch.empty(out.shape, dtype=out.dtype, device=out.device)
        c = c3.data_ptr()
        kernel(tensor_map(a3.data_ptr(), "a"), tensor_map(b3.data_ptr(), "b"),
               tensor_map(c, "c") if store_tma else unused_c, c, M, N, K, 0, 1, store_tma, group_m, units, k_tiles,
               0, 0, 0, 0, 0, 0, 0, one)
        if not direct:
            out.copy_(c3)
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
        batch = check_batched_matmul_args(a, b, dtypes=DTYPES)
        launch, count = _launch(a, b, batch)[0], math.prod(batch)
        return f"{WALK}: a batch of {count} products in one walk ({launch.name}, grid {launch.grid[0]})"
    return "rows as one product: " + describe_2d(*two_d, variant=variant)


def plan(a, b, variant, out):
    """Validate a batched call and plan it (once per distinct metadata)."""
    return batched_plan(a, b, variant, out, plans=_PLANS, dtypes=DTYPES, variants=VARIANTS, check_dtype=check_dtype,
                        need_cuda=True, walk=_walk)
