"""FP8 matmul with scales (kernels/matmul_fp8.cu, sm_90a): ``torch._scaled_mm``'s product and
DeepSeek-V3's block scales, on wgmma_ws's structure (a producer warpgroup feeding a ring by TMA,
consumer warpgroups of 64 rows, one block an SM walking the tiles).

c = (a * scale_a) @ (b * scale_b): the dtypes, the scalings and their checks are
``kernel_common/fp8.py``'s, shared with ``triton_impl.scaled_mm``. Each 128-deep slice of K is
summed apart and added to float32 totals (torch's default; DeepGEMM's promotion for block scales,
each slice times its scales); ``use_fast_accum`` chains per-tensor and row-wise slices in the MMA's
sums instead. FP8's wgmma reads a and b K-major: a row-major a and b = W.t() of a row-major (N, K)
W, as ``torch._scaled_mm`` asks; operands a tensor map cannot read where they lie are copied (rows
padded to 16 bytes; a row-major b transposed). variant=None runs ``few_rows_fp8``
(``cuda_ref/_matmul_fp8_few_rows.py``) for a few rows of a.
"""
from __future__ import annotations

import torch

from cuda_ref import _matmul_fp8_few_rows as few_rows
from cuda_ref import loader
from cuda_ref._arch import SM_90
from cuda_ref._matmul_wgmma import _hopper_only, _kept_maps, ring_smem, ws_cluster
from kernel_common import DEFAULT_SM_COUNT, balanced_grid, base_phase, cdiv, sm_count, tma_rows
from kernel_common import fp8
from kernel_common.fp8 import BLOCK, OUT_DTYPES, ROW, SCALE_BLOCK, TENSOR
from kernel_common.plans import Plan, through_aligned
from kernel_common.util import hand_over, padded

FILE = "matmul_fp8.cu"
DTYPES = fp8.DTYPES
VARIANTS = ("wgmma_fp8", "few_rows_fp8")
# few_rows_fp8 (cuda_ref/_matmul_fp8_few_rows.py): variant=None's for at most this many rows of a
FP8_FEW_ROWS = SM_90["fp8_few_rows"]
WIDTHS = (128, 192)  # c's tile columns (the kernel's TN); its rows, 64 a consumer warpgroup (``consumers``)
RING_BYTES = 200 * 1024  # the ring's stages, each 128 k of a's and b's tile rows: as many as fit
GROUP_M = 16       # tile rows walked together (wgmma_ws's WS_GROUP_M)
ARGS = "128s128sQqqQQqqqqiIIiIQQ"
SCALING_CODE = {TENSOR: 0, ROW: 1, BLOCK: 2}  # the kernel's FP8_TENSOR, FP8_ROW, and 2 for block scales
# the operand pairs FP8's wgmma takes (not e5m2 x e5m2); fast accumulation for e4m3 x e4m3 alone
PAIRS = ((torch.float8_e4m3fn, torch.float8_e4m3fn), (torch.float8_e4m3fn, torch.float8_e5m2),
         (torch.float8_e5m2, torch.float8_e4m3fn))


def consumers(promote: bool) -> int:
    """Consumer warpgroups: three for promoted slices (192-row tiles), else two (128)."""
    return 3 if promote else 2


def stages(promote: bool, tn: int) -> int:
    return RING_BYTES // ((64 * consumers(promote) + tn) * SCALE_BLOCK)


def instance(ta, tb, out_dtype, promote: bool, cluster: int, tn: int, block: bool = False) -> str:
    """The kernel's instance; ``block``: block scales (promoted slices, each times its scales: an
    instance apart, so that the others' slices add without scales and carry no block path)."""
    return (f"matmul_fp8<{loader.CTYPE[ta]}, {loader.CTYPE[tb]}, {loader.CTYPE[out_dtype]}, {str(promote).lower()}, "
            f"{str(block).lower()}, {stages(promote, tn)}, {cluster}, {tn}, {consumers(promote)}>")


# The plans (H200, e4m3, 1024-8192 rows, every plan forced, in turns with torch:
# docs/decisions/049-cuda-fp8.md). Slices promoted: 192 x 128 tiles on three consumers, blocks alone
# (0.75-0.82x torch, two consumers' 128 x 128 0.70-0.75x; 192 columns 0.44-0.62x and pairs 2-5%
# slower on two: the adds after each slice's wait cost more than the larger tile saves). Chained
# (fast accumulation): two consumers, blocks in pairs where wgmma_ws pairs them (``ws_cluster``: b's
# tile multicast, 1-3% faster), 128 or 192 columns by the waves each makes, a 192-column tile's
# column taking FP8_WIDE_COLUMN_TIME of a 128-column one's (arch_sm_90.json).
FP8_WIDE_COLUMN_TIME = SM_90["fp8_wide_column_time"]


def cluster_of(M: int, promote: bool) -> int:
    return 1 if promote else ws_cluster(M)


def tile_n(M: int, N: int, promote: bool, sms: int) -> int:
    if promote:
        return WIDTHS[0]
    cluster = cluster_of(M, promote)

    def waves_time(tn):  # the waves of units x a unit's time, in 128-column tiles' column time
        return cdiv(units(M, N, cluster, tn, promote), sms // cluster) * tn * (FP8_WIDE_COLUMN_TIME if tn > 128 else 1.0)
    return min(WIDTHS, key=waves_time)


def units(M: int, N: int, cluster: int, tn: int, promote: bool) -> int:
    """The walk's units: ``cluster`` tiles stacked in M."""
    return cdiv(M, 64 * consumers(promote) * cluster) * cdiv(N, tn)


NAME_EXPRESSIONS = tuple(instance(ta, tb, out, promote, cluster, tn, block) for ta, tb in PAIRS for out in OUT_DTYPES
                         for promote in (True, False) if promote or ta == tb
                         for cluster in ((1,) if promote else (1, 2)) for tn in (WIDTHS[:1] if promote else WIDTHS)
                         for block in ((False, True) if promote else (False,)))
SOURCES = {FILE: NAME_EXPRESSIONS, **few_rows.SOURCES}  # what the launches compile from (cuda_ref.sources)


def _promotes(kind: str, fast_accum: bool, ta, tb) -> bool:
    """Each slice summed apart (torch's default), unless fast accumulation is asked, the scales
    are not blocks and the operands are both e4m3 (the only pair built chained)."""
    return not fast_accum or kind == BLOCK or ta != tb


def geometry(M: int, N: int, K: int, promote: bool, sms: int) -> tuple[int, int, int]:
    """(blocks in a cluster, tile columns, runs of K): K split where the tiles fill under half the
    SMs (``fp8.split_runs``), the blocks then alone (a run's sums are a block's)."""
    tn = tile_n(M, N, promote, sms)
    splits = fp8.split_runs(units(M, N, 1, tn, promote), cdiv(K, SCALE_BLOCK), sms)
    return (1 if splits > 1 else cluster_of(M, promote)), tn, splits


def _launch(M: int, N: int, ta, tb, out_dtype, promote: bool, cluster: int, tn: int, sms: int,
            block: bool = False, splits: int = 1) -> loader.Launch:
    """One block (a pair of blocks: ``cluster_of``) an SM walking the units of ``tn``-column tiles,
    as few as keep the waves (``balanced_grid``); ``block``: block scales. K in ``splits`` runs: a
    block each run of each unit."""
    blocks = cluster * balanced_grid(units(M, N, cluster, tn, promote) * splits, sms // cluster)
    return loader.Launch(instance(ta, tb, out_dtype, promote, cluster, tn, block), (blocks,),
                         (128 * (1 + consumers(promote)),), ARGS, ring_smem(stages(promote, tn), 64 * consumers(promote) + tn))


def _plan(inputs, variant, out, out_dtype, fast_accum) -> Plan:
    kind, empty = fp8.plan_start(inputs, variant, VARIANTS, out, out_dtype, need_cuda=True)
    if empty is not None:
        return empty
    if (variant or pick_variant(*inputs)) == "few_rows_fp8":
        return few_rows.plan(inputs, "few_rows_fp8", out, out_dtype, fast_accum)
    a, b, scale_a, scale_b = inputs
    (M, K), N = a.shape, b.shape[1]
    _hopper_only(variant or VARIANTS[0], a.device)
    # plan: where a and b = W.t() lie for the tensor maps (copies padded to 16-byte rows)
    bt = b.t()  # (N, K): what b's map reads
    copy_a, copy_b = not tma_rows(a), not tma_rows(bt)
    lda = padded(M, K, a.dtype, "meta").stride(0) if copy_a else a.stride(0)
    ldb = padded(N, K, b.dtype, "meta").stride(0) if copy_b else bt.stride(0)
    promote, sms = _promotes(kind, fast_accum, a.dtype, b.dtype), sm_count(a.device)
    cluster, tn, splits = geometry(M, N, K, promote, sms)
    launch = _launch(M, N, a.dtype, b.dtype, out_dtype, promote, cluster, tn, sms, kind == BLOCK, splits)
    kernel = loader.kernel(FILE, NAME_EXPRESSIONS, launch, a.device.index)
    from cuda_ref import _tma

    box_a, box_b = 64 * consumers(promote), tn // cluster  # a's tile rows; b's (half for each block of a pair)

    def encode(ptr, which):  # boxes of 128 bytes of k
        if which == "a":
            return _tma.encode_2d(ptr, a.dtype, M, K, lda, box_a, SCALE_BLOCK)
        return _tma.encode_2d(ptr, b.dtype, N, K, ldb, box_b, SCALE_BLOCK)
    tensor_map = _kept_maps(encode)
    strides = fp8.scale_strides(kind, scale_a, scale_b)
    tiles = units(M, N, cluster, tn, promote)
    counts = (max(1, GROUP_M // cluster), tiles, cdiv(K, SCALE_BLOCK), SCALING_CODE[kind], splits)
    slots = tiles * splits * consumers(promote)  # a consumer warpgroup's 64 x tn sums each

    def run(a, b, scale_a, scale_b, out):
        a, bt = fp8.kmajor_operands(a, b, copy_a, copy_b)
        flags, partial = hand_over(a.device, slots, slots * 64 * tn) if splits > 1 else (None, None)
        kernel(tensor_map(a.data_ptr(), "a"), tensor_map(bt.data_ptr(), "b"), out.data_ptr(), M, N,
               scale_a.data_ptr(), scale_b.data_ptr(), *strides, *counts,
               partial.data_ptr() if splits > 1 else 0, flags.data_ptr() if splits > 1 else 0)
    plan = Plan((M, N), out_dtype, a.device, run, fp8.NAMES, traceable=False)
    # c's element pairs are stored in one access each: an out off its alignment gets c through a copy
    return plan if out is None or base_phase(out) == 0 else through_aligned(plan)


_PLANS = fp8.plan_caches(_plan)


def pick_variant(a, b, scale_a, scale_b, out=None) -> str:
    """few_rows_fp8 for at most FP8_FEW_ROWS rows of a, else wgmma_fp8."""
    return "few_rows_fp8" if a.shape[0] <= FP8_FEW_ROWS else "wgmma_fp8"


def describe(a, b, scale_a, scale_b, variant=None, use_fast_accum=False) -> str:
    """The variant, the scaling its scales say, the tile and whether slices are promoted (few_rows_fp8:
    its row blocks and runs of K)."""
    kind = fp8.scaling(a, b, scale_a, scale_b)
    (M, K), N = a.shape, b.shape[1]
    variant = variant or pick_variant(a, b, scale_a, scale_b)
    if variant == "few_rows_fp8":
        return few_rows.describe(M, N, K, kind, sm_count(a.device))
    promote, sms = _promotes(kind, use_fast_accum, a.dtype, b.dtype), sm_count(a.device)
    cluster, tn, splits = geometry(M, N, K, promote, sms)
    return (f"{variant} {kind} scales {64 * consumers(promote)}x{tn}x{SCALE_BLOCK} "
            f"{'pairs' if cluster > 1 else 'alone'} {'promoted' if promote else 'chained'}"
            + (f", {splits} runs of K" if splits > 1 else ""))


def launches(dtype):
    """(variant, Launch, shape) at 4096^3, a of ``dtype`` times e4m3 into bfloat16, each slice promoted,
    and chained where that is built (e4m3 x e4m3), on a GPU of ``DEFAULT_SM_COUNT`` SMs."""
    if dtype not in DTYPES:
        raise TypeError(f"scaled_mm takes {DTYPES}, not {dtype}")
    M = N = 4096
    for promote in (True, False) if dtype == torch.float8_e4m3fn else (True,):
        cluster, tn = cluster_of(M, promote), tile_n(M, N, promote, DEFAULT_SM_COUNT)
        yield VARIANTS[0], _launch(M, N, dtype, torch.float8_e4m3fn, torch.bfloat16, promote, cluster, tn,
                                   DEFAULT_SM_COUNT), (M, N, 4096)
    yield "few_rows_fp8", few_rows.launch_of(16, N, 4096, dtype, torch.float8_e4m3fn, torch.bfloat16, TENSOR,
                                             DEFAULT_SM_COUNT), (16, N, 4096)


def scaled_mm(a, b, scale_a, scale_b, *, out_dtype: torch.dtype = torch.bfloat16, use_fast_accum: bool = False,
              variant: str | None = None, out=None):
    """c (M, N) = (a * scale_a) @ (b * scale_b): ``triton_impl.scaled_mm``'s call (the operands, the
    scalings and ``out_dtype`` as ``kernel_common/fp8.py`` says), on a Hopper GPU, torch CUDA tensors
    only (CuPy has no FP8 dtype). Each 128-deep slice is summed in float32, as torch's;
    ``use_fast_accum=True`` chains per-tensor and row-wise slices of e4m3 in the MMA's sums instead
    (torch's flag: faster, fewer bits; ``few_rows_fp8`` sums in float32 either way)."""
    fp8.check_out_dtype(out_dtype)
    return loader.call(_PLANS[out_dtype, bool(use_fast_accum)], (a, b, scale_a, scale_b),
                       fp8.NAMES, variant, out)
