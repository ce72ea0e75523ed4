"""wgmma and wgmma_ws (kernels/matmul_wgmma*.cu, sm_90a): Hopper's warpgroup MMA fed by TMA, the
family's constants and rules (tiles, blocks in pairs, split K, stream-K and its hand-over buffers,
the split sum), its kernels' instances and its plans; wgmma_swap's own are in
``cuda_ref/_matmul_swap.py``. ``cuda_ref/_matmul.py`` picks the variant and calls the plans.
"""

from __future__ import annotations

import weakref

import torch

from cuda_ref import loader
from cuda_ref._arch import SM_90
from kernel_common import capability, cdiv, current_stream, hand_over, kept_hand_over, matmul_out_dtype, sm_count, tma_rows
from kernel_common.plans import Plan, by_tiles, per_plan
from kernel_common.util import make_room

TC_DTYPES = (torch.float16, torch.bfloat16)  # the tensor cores' float types (wgmma's and matmul_tc.cu's)
TC_FILE = "matmul_tc.cu"  # the tensor-core walk's mma.sync kernels
TC_ARGS = "QQQqqqqq"  # a, b, c, M, N, K, lda, ldb: matmul_tc.cu's and the few-rows kernels
BIAS_ARGS = "Qqq"     # + bias (0: none), its row and column strides: the kernels with a bias epilogue

# wgmma (kernels/matmul_wgmma.cu, sm_90a): 128 x 256 tiles of c by two warpgroups, 64-deep K
# slices brought by TMA into a ring of stages
WGMMA_FILE = "matmul_wgmma.cu"
WS_FILE = "matmul_wgmma_ws.cu"  # wgmma_ws and the split-K sum (the shared pieces: wgmma.cuh)
WGMMA_TILE = (128, 256, 64)
WGMMA_STAGES = 4


def ring_smem(stages: int, rows: int) -> int:
    """Shared memory of a ring of ``stages`` 128-byte k-slices of ``rows`` rows of a and b, with
    the 1024-byte alignment slack and a full and an empty barrier a stage."""
    return stages * rows * 128 + 1024 + 16 * stages


WGMMA_SMEM = ring_smem(WGMMA_STAGES, sum(WGMMA_TILE[:2]))
# wgmma_ws's c, where its rows are 16-byte aligned (a kernel argument): 0 guarded stores from the
# accumulators, 1 through shared memory and TMA stores after each tile, 2 the same during the next
# tile's first k-slices (elsewhere always 0)
WS_STORE_TMA = 2
# Blocks in pairs (a cluster of 2 on tiles m0, m0 + 128 of the same columns), each bringing half of
# the shared b tile by TMA multicast: faster than blocks alone on every large shape measured (H100,
# docs/decisions/009-cuda-16bit-wgmma-ws.md). Below WS_PAIRS_MIN_M rows a pair's second block would idle or nearly,
# unless a's 128-row tiles come in an even count (WS_PAIRS_EVEN): pairs then pad no row more.
# The rows and slices below are measured thresholds (arch_sm_90.json).
WS_CLUSTER = 2
WS_PAIRS_MIN_M = SM_90["ws_pairs_min_m"]
WS_PAIRS_EVEN = SM_90["ws_pairs_even"]
# An odd count of 128-row tiles in pairs pads a's rows by one tile more: from WS_PAIRS_MIN_M rows
# such counts run in pairs only from this many rows (H200, bf16, 14 drawn shapes of 11-69 tiles,
# pairs against blocks alone: 11-31 tiles 0.91-1.04x, 10 of 11 at most 0.99x; 59-69 tiles
# 0.98-1.03x; arch_sm_90.json).
WS_PAIRS_ODD_MIN_M = SM_90["ws_pairs_odd_min_m"]
WS_ONE_CONSUMER_MAX_M = SM_90["ws_one_consumer_max_m"]  # at most this many rows of a row-major a: 64-row tiles,
                                                        # one consumer warpgroup
WS_SPLIT_MIN_SLICES = SM_90["ws_split_min_slices"]      # k-slices a run of a split K at least
# Up to this many runs, a split's float32 sums go to the pair of its tile's last run, which adds them
# (stream-K's slots) before the tile's own epilogue; more runs are summed by matmul_split_reduce, a
# second launch over all the SMs. H200, bf16, x torch in turns
# (docs/decisions/010-split-k-and-stream-k.md): 3 runs +2.8 to +6.1 points on all three shapes; 4 runs +0.2 to +3.0
# flushed but -2.4 to +3.1 back to back; 5 and 8 runs -0.2 to -8.3: the last run's block reads the
# others' slots alone. (arch_sm_90.json)
WS_HAND_OVER_MAX_SPLITS = SM_90["ws_hand_over_max_splits"]
# the tile order: groups of this many block tiles' rows (128 rows; 64 with one consumer), walked
# column by column. 16 against 8, in turns
# (H100, bf16): 0.991 / 0.993x cuBLAS against 0.987 / 0.987x at 4096^3, the same at 8192^3
# (docs/decisions/002-timing-in-turns.md)
WS_GROUP_M = 16


def ws_cluster(M: int) -> int:
    """The blocks of a wgmma_ws cluster for an M-row product: WS_CLUSTER where a's 128-row tiles
    are even in count from WS_PAIRS_MIN_M rows, or below it too (``WS_PAIRS_EVEN``: a pair's two
    blocks both busy, b's tile read once for both); an odd count from WS_PAIRS_ODD_MIN_M rows (the
    pad of one tile a small share); else 1."""
    even = cdiv(M, 128) % 2 == 0
    if even and (M >= WS_PAIRS_MIN_M or WS_PAIRS_EVEN) or M >= WS_PAIRS_ODD_MIN_M:
        return WS_CLUSTER
    return 1


def ws_consumers(M: int, a_mmajor: bool = False) -> int:
    """wgmma_ws's consumer warpgroups: 1 (64-row tiles) for at most WS_ONE_CONSUMER_MAX_M rows of a
    row-major a, else 2 (128-row tiles)."""
    return 1 if M <= WS_ONE_CONSUMER_MAX_M and not a_mmajor else 2


# Narrow tiles: 128 columns of c (m64n128k16), a ring of 6 stages of 32 KiB, for 128-row tiles.
# Where 256-column tiles leave SMs idle (a small product), twice the units at half the MMAs each,
# and half the sums a split or stream-K hands over. A slice takes about half a wide one's time
# (WS_NARROW_SLICE_SHARE). variant=None takes them where wide tiles fill at most
# WS_NARROW_MAX_FILL of the slots and the split model (``ws_plan_time``) gives narrow ones, with
# their own split or stream-K, no more time than wide ones with theirs. Past that fill narrow
# tiles ran 0.76-1.16x wide's speed, gaining nothing on the whole; below it 0.95-1.40x (H200,
# 65-8476 rows; docs/decisions/033-cuda-small-products.md, arch_sm_90.json).
WS_NARROW_N = 128
WS_NARROW_SLICE_SHARE = SM_90["ws_narrow_slice_share"]
WS_NARROW_MAX_FILL = SM_90["ws_narrow_max_fill"]
# Middle tiles: 192 columns (m64n192k16), a ring of 4 stages of 40 KiB. Where wide units leave the
# last wave part-filled, a third more units, each three quarters of the MMAs (WS_MID_SLICE_SHARE of
# a wide slice's time): 574 x 3584 rows of W take 95 units on 132 blocks, not 70. They run whole:
# with stream-K's shares they lost to the plan before (H200, bf16, seed 36: 573x11008x4096 0.84x,
# 133x17920x1536 0.89x), whole they won (455x6144x6144 1.15x, 1506x4096x1024 1.16-1.21x).
WS_MID_N = 192
WS_MID_SLICE_SHARE = SM_90["ws_mid_slice_share"]
# Thin tiles: 64 columns, for products of at most 64 (a LoRA down projection, attention's p @ v at head
# size 64 in a batch walk), in a ring of 8 stages of 24 KiB. Wider tiles run their MMAs on zeros past
# N: 10601 x 8 x 4096 in 192-column tiles ran 0.56x torch (H100, the lora draw, seed 283). Their
# k-slice's share of a wide one's is the narrow tile's halved again (half its MMAs, the narrow rate).
WS_THIN_N = 64
WS_STAGES = {WGMMA_TILE[1]: WGMMA_STAGES, WS_MID_N: 4, WS_NARROW_N: 6, WS_THIN_N: 8}  # each width's ring (ws_smem)
WS_SLICE_SHARE = {WGMMA_TILE[1]: 1.0, WS_MID_N: WS_MID_SLICE_SHARE, WS_NARROW_N: WS_NARROW_SLICE_SHARE,
                  WS_THIN_N: WS_NARROW_SLICE_SHARE / 2}
# each width's tiles take split K and stream-K's shares (the middle ones run whole, above)
WS_SHARES_K = {WGMMA_TILE[1]: True, WS_MID_N: False, WS_NARROW_N: True, WS_THIN_N: True}


@by_tiles
def ws_tile_n(M: int, N: int, K: int, itemsize: int, sms: int, a_mmajor: bool = False) -> int:
    """The columns of c in a wgmma_ws tile: WS_THIN_N for 128-row tiles of a product at most that
    wide (one tile of columns at every width: the fewest MMAs), else ``ws_model_tile_n``'s."""
    if N <= WS_THIN_N and ws_consumers(M, a_mmajor) == 2:
        return WS_THIN_N
    return ws_model_tile_n(M, N, K, itemsize, sms, a_mmajor)


@by_tiles
def ws_model_tile_n(M: int, N: int, K: int, itemsize: int, sms: int, a_mmajor: bool = False) -> int:
    """Of 256, WS_MID_N and (where 128-row tiles 256 columns wide fill at most WS_NARROW_MAX_FILL of
    the slots) WS_NARROW_N, the width ``ws_plan_time`` gives the least time, the narrower on a tie;
    256 always for 64-row tiles."""
    wide = WGMMA_TILE[1]
    if ws_consumers(M, a_mmajor) == 1:
        return wide
    widths = [WS_MID_N, wide]
    if _units(M, N, a_mmajor, wide) <= WS_NARROW_MAX_FILL * (sms // ws_cluster(M)):
        widths.insert(0, WS_NARROW_N)
    return min(widths, key=lambda bn: ws_plan_time(M, N, K, itemsize, sms, a_mmajor, bn))


def _units(M: int, N: int, a_mmajor: bool, bn: int) -> int:
    return cdiv(M, 64 * ws_consumers(M, a_mmajor) * ws_cluster(M)) * cdiv(N, bn)


def ws_units(M: int, N: int, K: int, itemsize: int, sms: int, a_mmajor: bool = False) -> int:
    """wgmma_ws's units of work (a block's tile, a pair's two), K whole."""
    return _units(M, N, a_mmajor, ws_tile_n(M, N, K, itemsize, sms, a_mmajor))


# The split model's constants (arch_sm_90.json): an SM's time for a tile's k-slice, the bytes a
# second, and what a split adds (the hand-over in the kernel; matmul_split_reduce's launch)
WS_SLICE_US, WS_MODEL_GBS = SM_90["ws_slice_us"], SM_90["ws_model_gbs"]
WS_HAND_OVER_US, WS_REDUCE_US = SM_90["ws_hand_over_us"], SM_90["ws_reduce_us"]
WS_SPLIT_MIN_GAIN = 0.95  # a split is taken where the model says it takes at most this share of one run's time


def ws_split_time(M: int, N: int, K: int, itemsize: int, sms: int, a_mmajor: bool, splits: int,
                  bn: int | None = None, stream_k: int = 0, sk_slowdown: float = 1.0, count: int = 1) -> float:
    """The split model: microseconds wgmma_ws takes with ``bn``-column tiles (the call's by
    default) in ``splits`` runs of K, or whole with ``stream_k`` last units shared by all the slots.
    The longer of its tensor-core time (a slot's k-slices x WS_SLICE_US; a 64-row tile half, a
    narrower one its WS_SLICE_SHARE; stream-K's shared slices ``sk_slowdown`` times) and its bytes
    at WS_MODEL_GBS (a, b and c, and the float32 sums: a tile's, written and read once per run or
    share handed over, or the whole buffer of partial products past WS_HAND_OVER_MAX_SPLITS runs),
    plus the hand-over's wait or the second launch; ``count``: a batch of that many products, each
    its own operands, their units in one walk. On the eight 128-row points of the models set
    (H200, docs/decisions/010-split-k-and-stream-k.md) it reads 0-20% under the measured times.
    The constants are sm_90's (arch_sm_90.json)."""
    consumers, slots = ws_consumers(M, a_mmajor), sms // ws_cluster(M)
    bn = bn or ws_tile_n(M, N, K, itemsize, sms, a_mmajor)
    units, k_tiles = count * _units(M, N, a_mmajor, bn), cdiv(K, 128 // itemsize)
    slice_us = WS_SLICE_US * WS_SLICE_SHARE[bn] * consumers / 2
    if stream_k:
        slices = (units - stream_k) // slots * k_tiles + cdiv(stream_k * k_tiles, slots) * sk_slowdown
    else:
        slices = cdiv(units * splits, slots) * cdiv(k_tiles, splits)
    moved, extra = count * (M * K + K * N + M * N) * itemsize, 0.0
    sum_bytes = ws_cluster(M) * consumers * 64 * bn * 4  # a unit's float32 sums
    if stream_k or 1 < splits <= WS_HAND_OVER_MAX_SPLITS:
        moved += 2 * (stream_k or (splits - 1) * units) * sum_bytes
        extra = WS_HAND_OVER_US * bn / WGMMA_TILE[1]  # the sums a unit hands over
    elif splits > WS_HAND_OVER_MAX_SPLITS:
        moved += 2 * splits * M * N * 4
        extra = WS_REDUCE_US
    return max(slices * slice_us, moved / (WS_MODEL_GBS * 1e3)) + extra


# Stream-K's shared k-slices take longer than the split model's whole ones: forced on drawn shapes
# (H200, bf16, W.t()), 500 stream-K plans ran a median 1.18-1.40x the model's time, 226 whole ones
# 1.06-1.16x (by width; lab/fit_ws_widths.py). Inside the kernel a part's sums took 3.3-3.8 us to
# hand over and 3.9 us to take (64 KiB a warpgroup through L2; lab/trace_wgmma.py), where the model
# charges 2.5 us for both (docs/decisions/040-cuda-mid-tiles.md). The width choice charges the
# shared slices this much more, where the model's stream-K / whole ratio meets the measured one
# (arch_sm_90.json).
WS_SK_SLOWDOWN = SM_90["ws_sk_slowdown"]


def ws_plan_time(M: int, N: int, K: int, itemsize: int, sms: int, a_mmajor: bool, bn: int) -> float:
    """The split model's time for wgmma_ws's plan with ``bn``-column tiles: stream-K's where it
    shares the last wave (its shared slices WS_SK_SLOWDOWN times as long), else its split's."""
    sk = _last_wave_units(M, N, K, itemsize, sms, a_mmajor, bn)
    splits = 1 if sk else _model_splits(M, N, K, itemsize, sms, a_mmajor, bn)
    return ws_split_time(M, N, K, itemsize, sms, a_mmajor, splits, bn, sk, WS_SK_SLOWDOWN)


@by_tiles
def ws_splits(M: int, N: int, K: int, itemsize: int, sms: int, a_mmajor: bool = False) -> int:
    """wgmma_ws's K splits. The runs keep one wave (a unit a block: the hand-over finds its tile's
    last run by unit number) and take at least WS_SPLIT_MIN_SLICES k-slices each. 128-row tiles
    (two consumers) take the fastest by the split model (``ws_split_time``) where it beats one run
    by WS_SPLIT_MIN_GAIN: a split pays where the tiles leave SMs idle and the tensor cores, not the
    bytes, bound the product (333 x 4096 x 14336: 48 tiles on 132 SMs, two runs). 64-row tiles
    (a few rows, which read their weight once however K is split) keep the rule measured for them
    (``_few_rows_splits``) until the model is checked there."""
    bn = ws_tile_n(M, N, K, itemsize, sms, a_mmajor)
    if ws_consumers(M, a_mmajor) == 1:
        units, slots = _units(M, N, a_mmajor, bn), sms // ws_cluster(M)
        return _few_rows_splits(M, N, K, itemsize, units, slots, cdiv(K, 128 // itemsize))
    if _last_wave_units(M, N, K, itemsize, sms, a_mmajor, bn):
        return 1  # stream-K takes the short last wave (``ws_stream_k``): measured where it pays
    return _model_splits(M, N, K, itemsize, sms, a_mmajor, bn)


@per_plan
def _model_splits(M, N, K, itemsize, sms, a_mmajor, bn) -> int:
    """The split model's choice for 128-row tiles ``bn`` wide (``ws_splits``); 1 for a width that
    keeps K whole (WS_SHARES_K)."""
    if not WS_SHARES_K[bn]:
        return 1
    units, slots, k_tiles = _units(M, N, a_mmajor, bn), sms // ws_cluster(M), cdiv(K, 128 // itemsize)
    most = max(1, min(slots // units, k_tiles // WS_SPLIT_MIN_SLICES))
    # the run counts that differ (none empty): 64 slices in 5 runs of 13 or in 6 of 11, ...
    counts = sorted({cdiv(k_tiles, cdiv(k_tiles, s)) for s in range(1, most + 1)})
    times = {s: ws_split_time(M, N, K, itemsize, sms, a_mmajor, s, bn) for s in counts}
    best = min(counts, key=lambda s: (times[s], s))
    return best if times[best] <= WS_SPLIT_MIN_GAIN * times[1] else 1


def _few_rows_splits(M, N, K, itemsize, units, slots, k_tiles) -> int:
    """64-row tiles: 1 where the tiles fill more than a third of the SMs, else as many runs of
    k-slices as fill them, each run at least WS_SPLIT_MIN_SLICES slices and none empty (16 x 4096
    has 16 tiles), and no more than keep the float32 partial products' traffic (written and read
    once) within the operands' bytes. H100: 16 x 14336 x 4096 (56 tiles) ran 0.85 -> 0.80x cuBLAS
    split in two, the fewer-tile shapes 0.35-0.69 -> 0.60-0.98x; H200: 16 x 10240 x 8192 (40
    tiles) 0.75x whole, 0.94x in three runs (docs/decisions/010-split-k-and-stream-k.md)."""
    if 3 * units > slots:
        return 1
    traffic_cap = (M + N) * K * itemsize // (2 * 4 * M * N)
    splits = max(1, min(k_tiles // WS_SPLIT_MIN_SLICES, slots // units, traffic_cap))
    return cdiv(k_tiles, cdiv(k_tiles, splits))  # the same runs, none of them empty


# Stream-K (the kernel's `sk`): where the last wave would leave most pairs idle, its units' k-slices
# are shared evenly by all the pairs after the whole units, so every pair ends together. Worth it
# only where the last wave is far from full: the shared units' parts run at staggered k (less L2
# reuse) and hand their sums over. H100, bf16, x cuBLAS, whole / stream-K (in turns, medians of 3;
# docs/decisions/010-split-k-and-stream-k.md), by the last wave's share of pairs:
# 2048x11008x4096 0.21: 0.935 -> 1.006; 8192^3 0.52: 1.024 -> 1.048; 8192x4096x11008 0.76: 0.997 ->
# 0.975; 4096^3 0.88: 0.983 -> 0.955. Sharing one full wave's units as well lost on all four.
# Its thresholds below are measured (arch_sm_90.json).
WS_STREAM_K = True
WS_SK_MAX_FILL = SM_90["ws_sk_max_fill"]      # the last wave's share of pairs at most, for stream-K
WS_SK_MIN_SLICES = SM_90["ws_sk_min_slices"]  # k-slices a pair's share at least: a unit's parts are handed over whole
WS_SK_MIN_M = SM_90["ws_sk_min_m"]            # rows of a at least for blocks alone (pairs: any); 16 rows lost


@by_tiles
def ws_stream_k(M: int, N: int, K: int, itemsize: int, sms: int, a_mmajor: bool = False) -> int:
    """wgmma_ws's stream-K units (0: none): the last wave's (or the only one's), where the pair
    units (128-row tiles, whole, no split K) leave at most WS_SK_MAX_FILL of the pairs busy in it,
    and give each pair at least WS_SK_MIN_SLICES of their k-slices. (2048x11008x4096 on an H100:
    344 units on 66 pairs, the last 14 in shares of 13-14 slices.) Only for pairs of blocks, or from
    WS_SK_MIN_M rows of a: a product of few rows reads its weight once however K is shared, and the
    hand-over only adds to it (16x14336x4096 0.878 -> 0.806x cuBLAS; 1024x2048x4096, one wave, 0.558
    -> 0.649x); blocks alone below 1024 rows lost or tied with it on an H200 (643x8960x1536 0.79 ->
    0.66x torch), pairs gained (671x6144x16384 0.56 -> 0.84x)."""
    if ws_splits(M, N, K, itemsize, sms, a_mmajor) > 1:
        return 0
    return _last_wave_units(M, N, K, itemsize, sms, a_mmajor, ws_tile_n(M, N, K, itemsize, sms, a_mmajor))


# Stream-K past the measured rule: the last wave's units shared with the whole wave before them
# where they alone are too few slices (4300 x 1024 x 4096: 68 units on 66 pairs, two waves whole),
# and blocks alone sharing a last wave below WS_SK_MIN_M rows (885 x 5120 x 13824: 140 units on
# 132 blocks). Taken where the split model gives at most this share of the time whole: on 65 drawn
# shapes (H200, bf16) the 15 it takes ran 1.05-1.45x their plan before flushed, 1.01-1.54x back to
# back; sharing every unit instead ran slower on 23 of 25 (arch_sm_90.json).
WS_SK_WAVE_GAIN = SM_90["ws_sk_wave_gain"]
# A last wave fuller than WS_SK_MAX_FILL (the only wave, at 40-48 units on 66 pairs) shared where
# the split model gives at most this share of the time whole: on the drawn shapes of seeds 70 and
# 71 (H200, bf16) the 4 such plans it takes ran 1.07-1.18x whole flushed, 1.03-1.14x back to
# back; the 8 it leaves (the model's 0.84-0.90) ran 0.90-1.09x (arch_sm_90.json).
WS_SK_FULL_GAIN = SM_90["ws_sk_full_gain"]


@per_plan
def _last_wave_units(M: int, N: int, K: int, itemsize: int, sms: int, a_mmajor: bool, bn: int) -> int:
    """The units of ``bn``-column tiles stream-K would share (``ws_stream_k``'s conditions but the
    split), or 0: the last wave's, as measured (above), and past WS_SK_MAX_FILL where the split
    model gives at most WS_SK_FULL_GAIN of the time whole; or, where they would give each pair fewer
    than WS_SK_MIN_SLICES k-slices, they and the whole wave before them, where the split model
    says that takes at most WS_SK_WAVE_GAIN of the time whole. Blocks alone below WS_SK_MIN_M rows
    share only past one wave, by the same test."""
    cluster = ws_cluster(M)
    pairs, k_tiles = sms // cluster, cdiv(K, 128 // itemsize)
    units = _units(M, N, a_mmajor, bn)
    tail = units % pairs
    if not WS_STREAM_K or not tail or not WS_SHARES_K[bn]:
        return 0
    measured = cluster > 1 or M >= WS_SK_MIN_M  # where sharing the last wave alone was measured to gain

    def pays(sk: int, gain: float) -> bool:  # the split model's time with sk units shared, against whole
        if sk * k_tiles >= 1 << 31:  # (the kernel counts the shared slices in 32 bits)
            return False
        shared, whole = (ws_split_time(M, N, K, itemsize, sms, a_mmajor, 1, bn, s) for s in (sk, 0))
        return shared <= gain * whole
    if tail > WS_SK_MAX_FILL * pairs:
        return tail if measured and pays(tail, WS_SK_FULL_GAIN) else 0
    if tail * k_tiles >= WS_SK_MIN_SLICES * pairs:
        if measured:
            return tail if tail * k_tiles < 1 << 31 else 0
        sk = tail
    else:
        sk = tail + pairs
    return sk if units > pairs and pays(sk, WS_SK_WAVE_GAIN) else 0


WGMMA_CALLS_KEPT = 256  # a plan's kept argument lists (by a, b, c address): a loop's few combinations
WS_STAGING = 2 * 2 * 64 * 128  # c's boxes: two of 64 x 64 for each consumer warpgroup
WGMMA_KERNELS = {"wgmma": f"matmul_wgmma<{{T}}, {{MMAJOR}}, {{NMAJOR}}, {WGMMA_STAGES}>",
                 "wgmma_ws": f"matmul_wgmma_ws<{{T}}, {{MMAJOR}}, {{NMAJOR}}, {WGMMA_STAGES}, {{CLUSTER}}, {{CONSUMERS}}>"}
WGMMA_THREADS = 256  # wgmma's two warpgroups (wgmma_ws: a producer warpgroup and one or two consumers)


def wgmma_name(variant: str, dtype, a_mmajor: bool, b_nmajor: bool, cluster: int = 1, consumers: int = 2,
               tile_n: int = WGMMA_TILE[1], batched: bool = False) -> str:
    """An instance's name; wgmma_ws's tiles narrower than 256 columns (``tile_n``) name their ring
    and width too, its batch walk (``batched``) all of its parameters."""
    if batched:
        return (f"matmul_wgmma_ws<{loader.CTYPE[dtype]}, {str(a_mmajor).lower()}, {str(b_nmajor).lower()}, "
                f"{WS_STAGES[tile_n]}, {cluster}, {consumers}, {tile_n}, true>")
    if tile_n != WGMMA_TILE[1]:
        return (f"matmul_wgmma_ws<{loader.CTYPE[dtype]}, {str(a_mmajor).lower()}, {str(b_nmajor).lower()}, "
                f"{WS_STAGES[tile_n]}, {cluster}, {consumers}, {tile_n}>")
    return WGMMA_KERNELS[variant].format(T=loader.CTYPE[dtype], MMAJOR=str(a_mmajor).lower(),
                                         NMAJOR=str(b_nmajor).lower(), CLUSTER=cluster, CONSUMERS=consumers)


def ws_smem(tile_n: int) -> int:
    """wgmma_ws's shared memory: the ring (``ring_smem``), c's staging boxes."""
    return ring_smem(WS_STAGES[tile_n], WGMMA_TILE[0] + tile_n) + WS_STAGING


# each file's instances: wgmma's (16-bit and int8), wgmma_ws's
WGMMA_NAME_EXPRESSIONS = {
    WGMMA_FILE: (tuple(wgmma_name("wgmma", d, mm, nm) for d in TC_DTYPES for mm in (False, True)
                       for nm in (False, True))
                 + (wgmma_name("wgmma", torch.int8, False, False),)),
    WS_FILE: (tuple(wgmma_name("wgmma_ws", d, mm, nm, cl) for d in TC_DTYPES for mm in (False, True)
                    for nm in (False, True) for cl in (1, 2))
              + tuple(wgmma_name("wgmma_ws", d, False, nm, 1, 1) for d in TC_DTYPES for nm in (False, True))
              + tuple(wgmma_name("wgmma_ws", d, mm, nm, cl, 2, bn) for bn in (WS_NARROW_N, WS_MID_N, WS_THIN_N) for d in TC_DTYPES
                      for mm in (False, True) for nm in (False, True) for cl in (1, 2))
              # the batch walk: 128-row tiles of every width, alone or in pairs
              + tuple(wgmma_name("wgmma_ws", d, mm, nm, cl, 2, bn, batched=True) for bn in WS_STAGES for d in TC_DTYPES
                      for mm in (False, True) for nm in (False, True) for cl in (1, 2))
              # float32 as TF32: a and b K-major, every width and cluster, the one-consumer tile
              + tuple(wgmma_name("wgmma_ws", torch.float32, False, False, cl, 2, bn) for bn in WS_STAGES
                      for cl in (1, 2)) + (wgmma_name("wgmma_ws", torch.float32, False, False, 1, 1),)),
}
WS_ARGS = "128s128s128sQqqqQiiiIIIIIQQqqi"  # wgmma_ws's parameters (the last: a batch's operands read as one matrix)

def is_sm90(device) -> bool:
    """Does ``device`` run sm_90a code (wgmma): compute capability 9.0, a Hopper GPU."""
    return device.type == "cuda" and capability(device) == (9, 0)


def _tensor_maps(a, b, lda: int, ldb: int, a_mmajor: bool, b_kmajor: bool, box_m: int, cluster: int,
                 bn: int = WGMMA_TILE[1]):
    """tensor_map(address, "a" | "b" | "c"): the call's tensor maps, kept per address (a weight
    passed again reuses its map): boxes of ``box_m`` rows x 64 k for a row-major a, ``bn`` / ``cluster``
    columns x 64 k for a K-major b (a pair's blocks each bring half), 64 k x 64 m / n for an a.t()
    view and a row-major b, 64 x 64 for c (16-bit: a slice is 128 bytes of k)."""
    from cuda_ref import _tma

    (M, K), N = a.shape, b.shape[1]
    bk = 128 // a.element_size()

    def encode(ptr, which):
        if which == "a":
            return _tma.encode_2d(ptr, a.dtype, K, M, lda, bk, 64) if a_mmajor else \
                _tma.encode_2d(ptr, a.dtype, M, K, lda, box_m, bk)
        if which == "c":
            return _tma.encode_2d(ptr, a.dtype, M, N, N, 64, 64)
        if b_kmajor:
            return _tma.encode_2d(ptr, a.dtype, N, K, ldb, bn // cluster, bk)
        return _tma.encode_2d(ptr, a.dtype, K, N, ldb, bk, 64)
    return _kept_maps(encode)


def _kept_maps(encode):
    """tensor_map(address, which): ``encode(address, which)``'s map, kept per address and operand
    (a weight passed again reuses its map); a program meets few addresses, and one that meets
    more than 64 starts afresh."""
    maps: dict = {}

    def tensor_map(ptr, which):
        m = maps.get((ptr, which))
        if m is None:
            make_room(maps, 64)
            m = maps[(ptr, which)] = encode(ptr, which)
        return m
    return tensor_map


def _hopper_only(variant, device) -> None:
    if not is_sm90(device):
        raise ValueError(f"variant {variant} needs a Hopper GPU (compute capability 9.0); variant=None picks another")


def wgmma_plan(variant, launch, a, b, a_mmajor, b_kmajor, operands, lda, ldb, out, splits=1, sk=0) -> Plan:
    """wgmma: a block per 128 x 256 tile of c, a and b through tensor maps (``_tensor_maps``)."""
    _hopper_only(variant, a.device)
    (M, K), N = a.shape, b.shape[1]
    kernel = loader.kernel(WGMMA_FILE, WGMMA_NAME_EXPRESSIONS[WGMMA_FILE], launch, a.device.index)
    tensor_map = _tensor_maps(a, b, lda, ldb, a_mmajor, b_kmajor, WGMMA_TILE[0], 1)

    def run(a, b, out):
        a, b = operands(a, b)
        kernel(tensor_map(a.data_ptr(), "a"), tensor_map(b.data_ptr(), "b"), out.data_ptr(), M, N, K)
    return Plan((M, N), matmul_out_dtype(a.dtype), a.device, run, ("a", "b"))


def kept_arguments(arguments, device: torch.device, flags: int, floats: int, shared: bool):
    """``get(key)``: a plan's launch arguments for (a, b, c, bias addresses), ``arguments(key,
    pair)`` built once and kept, where nothing else varies. ``shared``: they name the stream's
    hand-over pair (``flags`` and ``floats`` of it), and serve while their stream keeps that pair
    (1.5 us of host time a call for hand_over and about as much to build them again, H200 host);
    inside a CUDA graph capture a call's pair is its own, and nothing is kept."""
    calls: dict = {}  # key[, stream] -> (the arguments, a weak reference to their pair's flags)
    index = device.index

    def pair_kept(flags_ref, stream) -> bool:
        now = kept_hand_over(index, stream)
        return now is not None and now[0] is flags_ref()

    def get(key):
        if shared:
            if torch.cuda.is_current_stream_capturing():
                return arguments(key, hand_over(device, flags, floats))
            key += (current_stream(index),)
        kept = calls.get(key)
        if kept is None or shared and not pair_kept(kept[1], key[4]):
            pair = hand_over(device, flags, floats) if shared else None
            make_room(calls, WGMMA_CALLS_KEPT)
            kept = calls[key] = (arguments(key, pair), weakref.ref(pair[0]) if shared else None)
        return kept[0]
    return get


def wgmma_ws_plan(variant, launch, a, b, a_mmajor, b_kmajor, operands, lda, ldb, out, splits=1, sk=0,
                  bias_strides=None) -> Plan:
    """wgmma_ws: a persistent grid (``launch``), a's box the block's rows, c's map too where c's
    rows take a TMA store (``WS_STORE_TMA`` and ``tma_rows(out)``); a K-major b's box half as wide
    for blocks in pairs (``_tensor_maps``); split K in up to WS_HAND_OVER_MAX_SPLITS
    runs: the runs' sums handed over in slots, as stream-K's; in more: the float32 partial products
    in the stream's ``hand_over`` buffer, then matmul_split_reduce. ``bias_strides`` (the switch's
    addmm): run(a, b, bias, out), the bias added to the float32 sums before their one rounding,
    by the tile's last store or by matmul_split_reduce."""
    from cuda_ref import _tma

    _hopper_only(variant, a.device)
    (M, K), N = a.shape, b.shape[1]
    kernel = loader.kernel(WS_FILE, WGMMA_NAME_EXPRESSIONS[WS_FILE], launch, a.device.index)
    cluster = ws_cluster(M)  # pairs: each block brings half of b's box
    bm = 64 * ws_consumers(M, a_mmajor)  # a's box: the block's rows
    bn = ws_tile_n(M, N, K, a.element_size(), sm_count(a.device), a_mmajor)
    bk = 128 // a.element_size()  # a slice is 128 bytes of k
    tensor_map = _tensor_maps(a, b, lda, ldb, a_mmajor, b_kmajor, bm, cluster, bn)
    sbm, sbn = bias_strides or (0, 0)
    names = ("a", "b") if bias_strides is None else ("a", "b", "bias")

    unused_c = bytes(_tma.MAP_BYTES)  # never read: c is stored from the accumulators
    group_m = max(1, WS_GROUP_M // cluster)  # in units: a pair's two tiles are one
    units, k_tiles = cdiv(M, bm * cluster) * cdiv(N, bn), cdiv(K, bk)  # the walk's counts
    if splits > WS_HAND_OVER_MAX_SPLITS:
        reduce = split_reduce(a.dtype, M * N, a.device)

        def launch_split(a, b, out, bias_ptr=0):
            a, b = operands(a, b)
            partial = hand_over(a.device, 0, splits * M * N)[1]
            kernel(tensor_map(a.data_ptr(), "a"), tensor_map(b.data_ptr(), "b"), unused_c, out.data_ptr(),
                   M, N, K, partial.data_ptr(), splits, 0, group_m, units, k_tiles, 0, 0, 0, 0, 0, 0, 0, 0)
            reduce(partial.data_ptr(), out.data_ptr(), M * N, splits, bias_ptr, sbm, sbn, N)
        return Plan((M, N), matmul_out_dtype(a.dtype), a.device, bias_run(launch_split, bias_strides), names)

    store = bool(WS_STORE_TMA) and tma_rows(out) and a.element_size() == 2  # (TF32's c: a box passes 128 bytes)
    store_tma = WS_STORE_TMA if store else 0
    blocks = launch.grid[0]
    slots = blocks * ws_consumers(M, a_mmajor)  # hand-over slots: one a consumer warpgroup
    pairs = blocks // cluster
    share, longer = divmod(sk * k_tiles, pairs)  # each pair's slices of them (the first `longer` one more)
    shared = bool(sk) or splits > 1  # the sums pass through the stream's hand-over slots
    # a split run hands its sums to the pair of its tile's last run, found by unit number: one unit
    # a pair (ws_splits fills at most one wave)
    assert splits == 1 or units * splits == pairs, (units, splits, pairs)

    def arguments(key, pair):
        # stream-K's parts and split K's runs hand over their sums in slots (each a warpgroup's
        # 64 x 256 float32 sums at most) of the stream's hand-over pair
        flags, partial = pair or (None, None)
        return (tensor_map(key[0], "a"), tensor_map(key[1], "b"), tensor_map(key[2], "c") if store else unused_c,
                key[2], M, N, K, partial.data_ptr() if shared else 0, splits, store_tma, group_m, units, k_tiles,
                sk, share, longer, flags.data_ptr() if shared else 0, key[3], sbm, sbn, 0)
    kept = kept_arguments(arguments, a.device, slots, slots * 64 * WGMMA_TILE[1], shared)

    def launch_whole(a, b, out, bias_ptr=0):
        a, b = operands(a, b)
        kernel(*kept((a.data_ptr(), b.data_ptr(), out.data_ptr(), bias_ptr)))
    return Plan((M, N), matmul_out_dtype(a.dtype), a.device, bias_run(launch_whole, bias_strides), names)


# matmul_split_reduce (in matmul_few_rows.cu, compiled for any architecture): the sum of the
# float32 partial products of every kernel that splits K into a buffer, the bias with it
SPLIT_REDUCE_FILE = "matmul_few_rows.cu"
SPLIT_REDUCE_NAMES = tuple(f"matmul_split_reduce<{loader.CTYPE[d]}>" for d in (torch.float32, *TC_DTYPES))


def split_reduce_launch(dtype, MN: int, sms: int) -> loader.Launch:
    """matmul_split_reduce over MN elements: at most 8 blocks an SM, each striding over the rest."""
    return loader.Launch(f"matmul_split_reduce<{loader.CTYPE[dtype]}>", (min(cdiv(MN, 256), 8 * sms),), (256,),
                         "QQqiQqqq")


def split_reduce(dtype, MN: int, device: torch.device) -> loader.Kernel:
    """matmul_split_reduce over MN elements of ``dtype`` on ``device``, compiled (once) and bound:
    reduce(partial, c, MN, splits, bias or 0, sbm, sbn, N)."""
    return loader.kernel(SPLIT_REDUCE_FILE, SPLIT_REDUCE_NAMES, split_reduce_launch(dtype, MN, sm_count(device)),
                         device.index)


def bias_run(launch, bias_strides):
    """The plan's run: ``launch(a, b, out)`` itself (no bias: no layer between), or run(a, b, bias,
    out) over ``launch(a, b, out, bias address)`` with ``bias_strides``."""
    if bias_strides is None:
        return launch
    return lambda a, b, bias, out: launch(a, b, out, bias.data_ptr())
