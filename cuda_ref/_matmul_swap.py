"""wgmma_swap (kernels/matmul_wgmma_swap.cu, sm_90a): c^T = W a^T on Hopper's warpgroup MMA, a's
rows in wgmma's N side. Its blocks of a's rows, where variant=None takes it (``swap_pays``), the
shape model that chooses its row blocks, tile of W and runs of K (``swap_shape``), its instances,
launch and plan; K's runs summed in a cluster where they fill one wave. The ring, tensor maps,
hand-over buffers and split sum are wgmma's (``cuda_ref/_matmul_wgmma.py``).
"""

from __future__ import annotations

import torch

from cuda_ref import loader
from cuda_ref._arch import SM_90, dram_gbs
from cuda_ref._matmul_few_rows import FEW_ROWS_MMA_ANY_MAX_M
from cuda_ref._matmul_wgmma import (TC_DTYPES, WGMMA_TILE, WS_SPLIT_MIN_SLICES, _hopper_only, _kept_maps, bias_run,
                                    is_sm90, kept_arguments, ring_smem, split_reduce, ws_cluster, ws_consumers,
                                    ws_model_tile_n, ws_plan_time)
from kernel_common import balanced_grid, cdiv, matmul_out_dtype, matrix_layout, sm_count, tma_rows
from kernel_common.plans import Plan, by_tiles

# wgmma_swap (kernels/matmul_wgmma_swap.cu): c^T = W a^T, a block's NR rows of a (a multiple of 16,
# 16..176: wgmma's N side) against WR rows of W (192, 128, 64: three to one consumer warpgroups); the ring
# as many stages as fit in 200 KiB
SWAP_FILE = "matmul_wgmma_swap.cu"
SWAP_WIDTHS = tuple(range(16, 177, 16))  # (tools/gen_wgmma_n.py writes the MMAs of these)
# NR at least SWAP_WIDE_MIN_NR past that many rows of a: the widths the shape model was fitted on
# there; one block of up to SWAP_WIDE_MIN_NR rows takes the fewest that hold them
SWAP_WIDE_MIN_NR = 64
SWAP_TILE_N = 128  # WR of the rule that takes the variant (swap_pays), and the wider tile
SWAP_TILE_ROWS = (SWAP_TILE_N, 64)  # WR in every dtype
# WR of 16-bit products past SWAP_WIDE_MIN_NR rows too (the rows it was measured on): three consumer
# warpgroups, a third more of W's rows a tile for each of a's rows brought in (cuBLAS's 192-row swapped
# tiles at a few hundred rows; decision 053)
SWAP_WIDE_TILE = 192
SWAP_KERNEL = "matmul_wgmma_swap<{T}, {NMAJOR}, {NR}, {WR}>"
# a block's rows of a at most: wider blocks ran slower per row (arch_sm_90.json); SWAP_WIDTHS stop there
SWAP_MAX_NR = SM_90["swap_max_nr"]
assert SWAP_WIDTHS[-1] == SWAP_MAX_NR


def swap_block_rows(M: int, blocks: int) -> int:
    """NR for M rows of a in ``blocks`` blocks: the least multiple of 16 that shares M evenly, at
    least SWAP_WIDE_MIN_NR past that many rows."""
    return max(SWAP_WIDTHS[0] if M <= SWAP_WIDE_MIN_NR else SWAP_WIDE_MIN_NR, cdiv(cdiv(M, blocks), 16) * 16)


def swap_tile_rows(itemsize: int, M: int) -> tuple[int, ...]:
    """The tiles of W (WR rows) the shape model chooses from for M rows of a dtype of ``itemsize`` bytes."""
    return SWAP_TILE_ROWS + ((SWAP_WIDE_TILE,) if SWAP_WIDE_TILE and itemsize == 2 and M > SWAP_WIDE_MIN_NR else ())


def swap_rows(M: int) -> tuple[int, int]:
    """wgmma_swap's (NR, row blocks) for M rows of a in as few blocks of at most SWAP_MAX_NR rows as
    hold them (``swap_pays``' blocks; a plan may take more, ``swap_shape``)."""
    blocks = cdiv(M, SWAP_MAX_NR)
    return swap_block_rows(M, blocks), blocks


# wgmma_swap before the picks and rules for 16-bit on Hopper, from 65 rows, where a's rows make at
# most SWAP_MAX_BLOCKS blocks and, past SWAP_MIN_K, either its blocks (a multiple of 16 rows each)
# pad M much less than wgmma_ws's 128-row tiles or its tiles are few (128 columns, half wgmma_ws's:
# they fill more SMs). On a K of SWAP_MIN_K or less (one tile a block: its fill and store are not
# hidden) where its 128-row tiles make at most SWAP_SHORT_K_MAX_WAVES waves: small products, where
# the shape model's narrower blocks and tiles start and finish sooner than wgmma_ws's tiles; past
# that, wgmma_ws's persistent grid hides its epilogues. arch_sm_90.json; docs/decisions/031-cuda-swap-ab-wgmma.md
SWAP_MIN_K, SWAP_MAX_PAD = SM_90["swap_min_k"], SM_90["swap_max_pad"]
SWAP_MAX_BLOCKS, SWAP_MAX_WAVES = SM_90["swap_max_blocks"], SM_90["swap_max_waves"]
SWAP_SHORT_K_MAX_WAVES = SM_90["swap_short_k_max_waves"]
# Past few_rows_mma's rows (its largest tiles pad to 64 too, K read in 128-deep slices) up to 64, one block
# of 64 rows: from K of SWAP_ONE_BLOCK_MIN_K where its tiles make at most SWAP_MAX_WAVES waves. At 33-64
# rows, K 1024-8192, it ran 0.73-0.95x torch where the picks' few_rows_mma ran 0.39-0.74 and wgmma_ws
# 0.41-0.76 (28 cases). Below that K, any count of tiles: since its epilogue is compact (decision 055)
# it ran 1.23-2.9x few_rows_mma on the 44 shapes of 33-64 rows and K 512-1024 of seed 10 (both
# layouts; few_rows_mma had led at K 768-896 before), and 0.98-1.46x wgmma_ws's picks among them.
SWAP_MIN_M, SWAP_ONE_BLOCK_MIN_K = SM_90["few_rows_mma_max_m"], SM_90["swap_one_block_min_k"]
# Up to few_rows_mma's rows (from 2 on b = W.t(), from 1 on a row-major b; W and a read in place), one
# block of the fewest multiple of 16 rows that hold them (wgmma's N 16-32: these products stream W
# through 4-8 stages of 16-32 KiB, as Triton's 16-row swap tiles do): on 36 drawn shapes of 1-64
# rows a layout (seed 60, H200, flushed) this rule moved the geomean x torch from 0.965 to 1.024 on
# b = W.t() and from 0.874 to 0.936 on a row-major b, 22 and 21 shapes changed; on b = W.t() only
# where its tiles fill more than half the SMs: few_rows_mma's blocks of 32 rows of W stream it on
# twice as many (on the bf16 draw of seed 36 such shapes ran 0.68-0.97x few_rows_mma's speed)
# (docs/decisions/038-cuda-narrow-swap.md); past 16 rows at any fill: the 13 shapes of 17-32 rows
# (K 2048-4608) this moved on two draws ran 0.942x torch (geomean, flushed) on wgmma_swap against
# few_rows_mma's 0.881 (decision 046), and on an H100 at K of 1024 or less the 8 shapes of 17-32 rows it
# moved from few_rows_mma on seed 252 (W.t()) 0.903 -> 0.989 (decision 064). With K in runs only where the shape model's time is at
# least SWAP_SPLIT_HOST_US: a call of two launches (and the runs' buffer) took 27-38 us of host time
# back to back on the draw that checked the rule, against torch's 18-23 on the same shapes, and lost
# there what it gained flushed (29 x 512 x 3584 in 8 runs: 21.9 -> 11.1 us flushed, 19.6 -> 30.5 us
# back to back); few_rows_mma's runs, in one launch, take those.
SWAP_SPLIT_HOST_US = SM_90["swap_split_host_us"]
SWAP_HALF_FILL_MAX_M = SM_90["swap_half_fill_max_m"]
# Past SWAP_MAX_BLOCKS blocks, up to SWAP_ONE_WAVE_MAX_BLOCKS (to 704 rows), from K of
# SWAP_ONE_BLOCK_MIN_K, where the shape model's tiles and runs take one wave of the SMs: one tile a
# block, W's tiles read by the row blocks at once (from L2), as cuBLAS's swapped tiles at 400-600 rows.
# On 30 products of 353-600 rows (seed 104, W.t()) the shape model's plan ran 0.55-2.1x torch where
# wgmma_ws ran 0.58-1.7x, ahead on 12 of the 14 one-wave plans of K >= 1024 (0.75 -> 0.86 geomean),
# level with it past one wave, behind at K of 768-896 (decision 053).
SWAP_ONE_WAVE_MAX_BLOCKS = SM_90["swap_one_wave_max_blocks"]


# Past SWAP_WIDE_MIN_NR rows up to SWAP_VS_WS_MAX_M, where no rule above takes it and both operands are
# read where they lie: wgmma_swap where its shape model's time, SWAP_VS_WS_SLACK times, is below
# wgmma_ws's split model calibrated to its calls' measured time (WS_CALL_FIXED_US + WS_CALL_SCALE x
# ``ws_plan_time``). cuBLAS runs 700-2500 rows as swapped tiles of a's rows 64-144 wide, as many as
# fill one wave (1092 x 1024 x 5120: 14 x 8 tiles of 80 x 128), where wgmma_ws's 128 x 256 tiles
# leave most SMs to stream-K's shares (decision 054).
SWAP_VS_WS_SLACK, SWAP_VS_WS_MAX_M = SM_90["swap_vs_ws_slack"], SM_90["swap_vs_ws_max_m"]
WS_CALL_FIXED_US, WS_CALL_SCALE = SM_90["ws_call_fixed_us"], SM_90["ws_call_scale"]
# wgmma_ws's blocks alone (128 x 256 tiles, each block reading b's tile for itself: an odd count of
# 128-row tiles below ws_pairs_odd_min_m rows) on a GPU of at most max_dram_gbs of DRAM: their calls
# ran a median 1.068x the calibration on an H100 (3352 GB/s; pairs 0.994x), 1.00x on an H200 (4800 GB/s),
# so there the calibration takes ``scale`` for them (decision 054, arch_sm_90.json)
WS_ALONE_CALL_SCALE = SM_90["ws_alone_call_scale"]
# A row-major b whose rows are off 16 bytes (an LM head of 30522 or 50257 columns), past the rows
# few_rows_mma reads such a b where it lies, up to SWAP_COPIED_B_MAX_M: wgmma_swap, on b copied into
# padded rows as wgmma_ws would copy it (a cost both pay; the models were weighed on b read in place).
# On 49 drawn shapes of 33-2047 rows (seed 7, H200, bf16, flushed) it ran 1.03-1.6x wgmma_ws's speed
# (1.33 geomean), and 1.15x the picks before at 65-2047 rows, 1.43x few_rows_mma's at 33-64 (decision 035).
SWAP_COPIED_B_MAX_M = SM_90["swap_copied_b_max_m"]


def swap_pays(a, b) -> bool:
    """Does ``variant=None`` take wgmma_swap for a @ b (the conditions above)?"""
    (M, K), N = a.shape, b.shape[1]
    if a.dtype not in TC_DTYPES or not is_sm90(a.device):
        return False
    sms, b_in_place = sm_count(a.device), tma_rows(b) or tma_rows(b.t())  # (b read by TMA in either layout)
    if FEW_ROWS_MMA_ANY_MAX_M < M <= SWAP_COPIED_B_MAX_M and matrix_layout(b) == "row" and not b_in_place \
            and tma_rows(a):
        return True  # b copied into padded rows for either kernel (above)
    if M <= SWAP_MIN_M:
        row_major = matrix_layout(b) == "row"
        if not b_in_place or M == 1 and not row_major:
            return False
        blocks, wr, runs = shape = swap_shape(M, N, K, a.element_size(), sms)
        few = 2 * blocks * cdiv(N, wr) * runs <= sms  # few_rows_mma's 32-row blocks of W: twice the SMs
        if not row_major and few and M <= SWAP_HALF_FILL_MAX_M:
            return False
        return (runs == 1 or swap_clustered(a.element_size(), wr, runs, blocks * cdiv(N, wr), sms)
                or swap_time(M, N, K, a.element_size(), sms, *shape) >= SWAP_SPLIT_HOST_US)
    # (the models were weighed on operands read in place: an M-major a, as a weight's gradient passes,
    # would be copied each call, which neither model holds)
    in_place = tma_rows(a) and b_in_place
    return _swap_rules(M, N, K, a.element_size(), sms) or in_place and swap_beats_ws(M, N, K, a.element_size(), sms,
                                                                                  dram_gbs(a.device))


def _swap_rules(M: int, N: int, K: int, itemsize: int, sms: int) -> bool:
    """swap_pays' rules past SWAP_MIN_M rows (above)."""
    nr, blocks = swap_rows(M)
    few_tiles = blocks * cdiv(N, SWAP_TILE_N) <= SWAP_MAX_WAVES * sms
    if M <= SWAP_WIDE_MIN_NR:
        return few_tiles or K < SWAP_ONE_BLOCK_MIN_K
    if blocks > SWAP_MAX_BLOCKS:  # more: where the model's tiles (and runs) take one wave, K not short
        if blocks > SWAP_ONE_WAVE_MAX_BLOCKS or K < SWAP_ONE_BLOCK_MIN_K:
            return False
        more, wr, runs = swap_shape(M, N, K, itemsize, sms)
        return more * cdiv(N, wr) * runs <= sms
    if K <= SWAP_MIN_K:
        return blocks * cdiv(N, SWAP_TILE_N) <= SWAP_SHORT_K_MAX_WAVES * sms
    return nr * blocks <= SWAP_MAX_PAD * cdiv(M, WGMMA_TILE[0]) * WGMMA_TILE[0] or few_tiles


def ws_call_us(M: int, N: int, K: int, itemsize: int, sms: int, dram: float = float("inf")) -> float:
    """wgmma_ws's calibrated call time (WS_CALL_FIXED_US + a scale x ``ws_plan_time``) at the widths the
    calibration was fitted on (``ws_model_tile_n``), on a GPU of ``dram`` GB/s of DRAM (WS_ALONE_CALL_SCALE)."""
    alone = ws_cluster(M) == 1 and ws_consumers(M) == 2
    slow = alone and dram <= WS_ALONE_CALL_SCALE["max_dram_gbs"]
    scale = WS_ALONE_CALL_SCALE["scale"] if slow else WS_CALL_SCALE
    bn = ws_model_tile_n(M, N, K, itemsize, sms)
    return WS_CALL_FIXED_US + scale * ws_plan_time(M, N, K, itemsize, sms, False, bn)


def swap_beats_ws(M: int, N: int, K: int, itemsize: int, sms: int, dram: float = float("inf")) -> bool:
    """Is wgmma_swap's modelled time (``swap_shape``'s plan), SWAP_VS_WS_SLACK times, below wgmma_ws's
    calibrated one (``ws_call_us`` on a GPU of ``dram`` GB/s), past SWAP_WIDE_MIN_NR rows up to
    SWAP_VS_WS_MAX_M (above)? wgmma_ws is priced at the widths the calibration was fitted on
    (``ws_model_tile_n``), not its thin tiles: priced thin,
    20 products of at most 32 columns moved to wgmma_ws and ran 0.75-1.05x swap's time (H100, bf16,
    the lora draw, seed 283: bench/results/logs/h100-2026-12-06-ws-thin-ab-s283-{base,new}.json.gz)."""
    if not SWAP_WIDE_MIN_NR < M <= SWAP_VS_WS_MAX_M:
        return False
    ws_us = ws_call_us(M, N, K, itemsize, sms, dram)
    return SWAP_VS_WS_SLACK * swap_time(M, N, K, itemsize, sms, *swap_shape(M, N, K, itemsize, sms)) < ws_us


def swap_stages(nr: int, wr: int) -> int:
    """The ring's stages at NR rows of a and WR of W (the kernel's swap_stages): as many as fit in
    200 KiB, 4 to 8."""
    return min(8, max(4, 200 * 1024 // ((wr + nr) * 128)))


def swap_smem(nr: int, wr: int) -> int:
    """wgmma_swap's dynamic shared memory at NR rows of a and WR of W: its ring (``ring_smem``)."""
    return ring_smem(swap_stages(nr, wr), wr + nr)


# K in 2-4 runs on 128-row tiles of W of a 16-bit product whose blocks (one tile and run each) fill
# at most SWAP_CLUSTER_FILL of the SMs: the runs of a tile are a cluster's blocks and add their sums
# in shared memory (matmul_wgmma_swap_runs): one launch, no float32 sums in global memory. Other
# runs go through the stream's hand-over buffer and matmul_split_reduce (decision 052).
SWAP_CLUSTER_RUNS = (2, 3, 4)
SWAP_CLUSTER_FILL = SM_90["swap_cluster_fill"]
SWAP_CLUSTER_SUM_US, SWAP_CLUSTER_ROW_US = SM_90["swap_cluster_sum_us"], SM_90["swap_cluster_row_us"]
SWAP_RUNS_KERNEL = "matmul_wgmma_swap_runs<{T}, {NMAJOR}, {NR}, {RUNS}>"
# Row blocks in pairs (a cluster of 2 on the same tile of W, each bringing half of W's stage and
# multicasting it: matmul_wgmma_swap_pairs), 16-bit, K whole, 128- or 192-row tiles of W, an even
# count of row blocks (decision 053)
SWAP_PAIRS = True
SWAP_PAIRS_KERNEL = "matmul_wgmma_swap_pairs<{T}, {NMAJOR}, {NR}, {WR}>"


def swap_paired(itemsize: int, blocks: int, wr: int, runs: int) -> bool:
    """Do wgmma_swap's row blocks run in pairs (``SWAP_PAIRS``)?"""
    return SWAP_PAIRS and itemsize == 2 and runs == 1 and wr >= SWAP_TILE_N and blocks % 2 == 0


def swap_clustered(itemsize: int, wr: int, runs: int, tiles: int, sms: int) -> bool:
    """Are wgmma_swap's ``runs`` of K over ``tiles`` tiles summed in a cluster?"""
    return runs in SWAP_CLUSTER_RUNS and wr == SWAP_TILE_N and itemsize == 2 and tiles * runs <= SWAP_CLUSTER_FILL * sms


# wgmma_swap's shape model (arch_sm_90.json): a call's microseconds are a fixed part, the waves of
# tiles x runs of K times a run's k-slices, each slice costing in proportion to the rows it brings
# into the SM (WR of W and NR of a; past 64 rows also its MMAs, WR x NR, and NR^2, and each wave its
# own part: its tiles' fill and store), and a split's second launch and float32 sums, or its sum in a
# cluster. Fitted on drawn products, every (blocks, WR, runs) timed flushed (decisions 031, 053, 054).
SWAP_FIXED_US, SWAP_ROW_SLICE_US = SM_90["swap_fixed_us"], SM_90["swap_row_slice_us"]
# past SWAP_WIDE_MIN_NR rows, all its terms refitted together, with a slice's MMAs (per row of W times
# row of a) and NR^2, a wave's own and 192-row tiles of W; up to it the constants the few-row rules
# were measured with (decision 054)
SWAP_MID_MODEL = SM_90["swap_mid_model"]
SWAP_REDUCE_US, SWAP_SUM_GBS = SM_90["swap_reduce_us"], SM_90["swap_sum_gbs"]
# K whole where one run's modelled time is within this factor of a short split call's (swap_shape)
SWAP_ONE_RUN_SLACK = SM_90["swap_one_run_slack"]
SWAP_MORE_BLOCKS, SWAP_MIN_BLOCK_ROWS = 2, 48  # a's rows in up to two blocks more than they need, each of 48 or more
# past SWAP_HALF_FILL_MAX_M rows up to 64: up to ``more`` blocks more, each of ``min_rows`` or more (a's 64
# rows in up to four blocks of 16): a small W's 64-row tiles in one block of a's rows left most SMs
# idle (64 x 1024 x 1024: 16 blocks). H100, bf16 W.t(), 15 decode products and drawn shapes of 33-64
# rows, every plan forced, flushed: the model's pick 0.87 -> 0.94x torch (geomean; decision 064)
SWAP_NARROW_BLOCKS = SM_90["swap_narrow_blocks"]
# past SWAP_WIDE_MIN_NR rows, also in blocks of each width of SWAP_WIDTHS from SWAP_WIDE_MIN_NR: narrower
# blocks, more of them, fill the SMs where few wide ones would not (cuBLAS's 80-144-row swapped tiles at
# 700-2500 rows; lab/sweep_swap_tiles.py --by-width, decision 054)
SWAP_ANY_WIDTH = True
SWAP_MAX_RUNS = 8


def swap_time(M: int, N: int, K: int, itemsize: int, sms: int, blocks: int, wr: int, runs: int) -> float:
    """The shape model's microseconds for wgmma_swap with a's rows in ``blocks`` blocks, WR-row
    tiles of W and ``runs`` runs of K."""
    nr, k_tiles, tiles = swap_block_rows(M, blocks), cdiv(K, 128 // itemsize), blocks * cdiv(N, wr)
    waves, slices = cdiv(tiles * runs, sms), cdiv(k_tiles, runs)
    sums_mb = 2 * runs * M * N * 4 / 1e6  # a split's float32 sums, written and read
    if M > SWAP_WIDE_MIN_NR:
        m = SWAP_MID_MODEL
        us = m["fixed_us"] + waves * (slices * ((wr + nr) * m["row_slice_us"] + wr * nr * m["mma_us"]
                                                + nr * nr * m["nr_sq_us"]) + m["wave_us"])
        cluster = m["cluster_sum_us"] + nr * m["cluster_row_us"]
        launch = m["reduce_us"] + sums_mb * m["sum_us_mb"]
    else:
        us = SWAP_FIXED_US + waves * slices * (wr + nr) * SWAP_ROW_SLICE_US
        cluster = SWAP_CLUSTER_SUM_US + nr * SWAP_CLUSTER_ROW_US
        launch = SWAP_REDUCE_US + sums_mb * 1e3 / SWAP_SUM_GBS
    if swap_clustered(itemsize, wr, runs, tiles, sms):
        return us + cluster
    return us + launch if runs > 1 else us


@by_tiles  # (its blocks hold multiples of 16 rows: the same at M and grain(M))
def swap_shape(M: int, N: int, K: int, itemsize: int, sms: int) -> tuple[int, int, int]:
    """wgmma_swap's (row blocks, WR, runs of K): of a's rows in the fewest blocks (``swap_rows``) or
    up to SWAP_MORE_BLOCKS more (16-bit at 17-64 rows: SWAP_NARROW_BLOCKS'), or past SWAP_WIDE_MIN_NR rows in blocks of any width from it
    (``SWAP_ANY_WIDTH``, K whole), the tiles of W of ``swap_tile_rows``, and 1 to SWAP_MAX_RUNS runs
    of at least WS_SPLIT_MIN_SLICES k-slices (none empty), the least modelled time (``swap_time``; on a tie the
    fewest blocks, the wider tile, the fewest runs). K whole where the least time splits it in a
    call shorter than SWAP_SPLIT_HOST_US and K whole takes at most SWAP_ONE_RUN_SLACK times as long:
    back to back a split call's two launches cost the host more than its GPU time saves."""
    fewest, k_tiles = swap_rows(M)[1], cdiv(K, 128 // itemsize)
    runs = {cdiv(k_tiles, cdiv(k_tiles, r)) for r in range(1, SWAP_MAX_RUNS + 1)
            if r == 1 or k_tiles // r >= WS_SPLIT_MIN_SLICES}
    narrow = itemsize == 2 and SWAP_HALF_FILL_MAX_M < M <= SWAP_WIDE_MIN_NR  # (measured on 16-bit only)
    more, min_rows = ((SWAP_NARROW_BLOCKS["more"], SWAP_NARROW_BLOCKS["min_rows"]) if narrow
                      else (SWAP_MORE_BLOCKS, SWAP_MIN_BLOCK_ROWS))
    near = range(fewest, fewest + more + 1)
    shapes = [(blocks, wr, r) for blocks in near
              if blocks == fewest or cdiv(M, blocks) >= min_rows for wr in swap_tile_rows(itemsize, M)
              for r in runs]
    if SWAP_ANY_WIDTH and M > SWAP_WIDE_MIN_NR:  # (K whole: the widths were measured so)
        shapes += [(blocks, wr, 1) for blocks in sorted({cdiv(M, nr) for nr in SWAP_WIDTHS if nr >= SWAP_WIDE_MIN_NR})
                   if blocks not in near for wr in swap_tile_rows(itemsize, M)]
    time = lambda s: swap_time(M, N, K, itemsize, sms, *s)  # noqa: E731
    best = min(shapes, key=lambda s: (time(s), s[0], -s[1], s[2]))
    second = best[2] > 1 and not swap_clustered(itemsize, best[1], best[2], best[0] * cdiv(N, best[1]), sms)
    if second and time(best) < SWAP_SPLIT_HOST_US:  # a short call: its second launch's host time shows
        one = min((s for s in shapes if s[2] == 1), key=lambda s: (time(s), s[0], -s[1]))
        if time(one) <= SWAP_ONE_RUN_SLACK * time(best):
            return one
    return best


def swap_splits(M: int, N: int, K: int, itemsize: int, sms: int) -> int:
    """wgmma_swap's runs of K (``swap_shape``)."""
    return swap_shape(M, N, K, itemsize, sms)[2]


def swap_name(kernel: str, dtype, w_nmajor: bool, nr: int, last: int) -> str:
    """An instance of ``kernel`` (SWAP_KERNEL, SWAP_PAIRS_KERNEL: ``last`` is WR; SWAP_RUNS_KERNEL: the runs)."""
    return kernel.format(T=loader.CTYPE[dtype], NMAJOR=str(w_nmajor).lower(), NR=nr, WR=last, RUNS=last)


# every instance a launch may ask for (float32: TF32, K-major W, alone)
SWAP_NAME_EXPRESSIONS = (tuple(swap_name(kernel, d, nm, nr, last) for kernel, lasts in
                               ((SWAP_KERNEL, SWAP_TILE_ROWS + (SWAP_WIDE_TILE,)), (SWAP_RUNS_KERNEL, SWAP_CLUSTER_RUNS),
                                (SWAP_PAIRS_KERNEL, (SWAP_TILE_N, SWAP_WIDE_TILE)))
                               for d in TC_DTYPES for nm in (False, True) for nr in SWAP_WIDTHS for last in lasts)
                         + tuple(swap_name(SWAP_KERNEL, torch.float32, False, nr, wr) for nr in SWAP_WIDTHS
                                 for wr in SWAP_TILE_ROWS))


def wgmma_swap_launch(variant, M, N, K, dtype, sms, b_kmajor=False, splits=1, **_) -> loader.Launch:
    """wgmma_swap: a persistent grid over the tiles of NR rows of a x WR columns of c (``swap_shape``;
    the row blocks of one column block numbered side by side), as few blocks as keep its waves
    (``balanced_grid``) on the SMs a run of K has, ``splits`` runs in the grid's y; a producer
    warpgroup and a consumer one per 64 rows of W. Runs summed in a cluster (``swap_clustered``): a
    block a tile and run, clusters of the runs (matmul_wgmma_swap_runs). Row blocks in pairs
    (``swap_paired``): an even grid of clusters of 2 on the two row blocks of a tile of W
    (matmul_wgmma_swap_pairs)."""
    blocks, wr, _ = swap_shape(M, N, K, dtype.itemsize, sms)
    nr = swap_block_rows(M, blocks)
    tiles = blocks * cdiv(N, wr)
    if swap_clustered(dtype.itemsize, wr, splits, tiles, sms):  # a cluster of the runs a tile, one tile a block
        kernel, last, grid = SWAP_RUNS_KERNEL, splits, (tiles, splits)
    elif swap_paired(dtype.itemsize, blocks, wr, splits):  # an even grid: pairs on the same tiles of W
        kernel, last, grid = SWAP_PAIRS_KERNEL, wr, (2 * balanced_grid(tiles // 2, sms // 2), 1)
    else:
        kernel, last, grid = SWAP_KERNEL, wr, (balanced_grid(tiles, max(1, sms // splits)), splits)
    return loader.Launch(swap_name(kernel, dtype, not b_kmajor, nr, last), grid, (128 + 2 * wr,),
                         "128s128sQQqqiiiiQqq", swap_smem(nr, wr))


def wgmma_swap_plan(variant, launch, a, b, a_mmajor, b_kmajor, operands, lda, ldb, out, splits=1, sk=0,
                    bias_strides=None) -> Plan:
    """wgmma_swap: a persistent grid over tiles of NR rows of a x WR columns of c (``swap_shape``), W = b^T
    through a tensor map of WR-row boxes (W K-major: b = W.t(); WR / 2 in pairs) or 64-column ones (b row-major),
    a's NR rows through one box (a row-major: ``operands`` copies any other layout of it, the small
    operand, once a call). Split K: the runs a cluster's blocks, adding their sums through shared
    memory (``swap_clustered``, decision 052); else the runs' float32 sums in the stream's
    ``hand_over`` buffer, then matmul_split_reduce (with the bias, where there is one): a tile's last
    run adding them from global memory in the kernel ran 10x slower (decision 034)."""
    from cuda_ref import _tma

    _hopper_only(variant, a.device)
    (M, K), N = a.shape, b.shape[1]
    kernel = loader.kernel(SWAP_FILE, SWAP_NAME_EXPRESSIONS, launch, a.device.index)
    sms = sm_count(a.device)
    blocks, wr, _ = swap_shape(M, N, K, a.element_size(), sms)  # (the launch's)
    nr, tiles = swap_block_rows(M, blocks), blocks * cdiv(N, wr)
    paired = swap_paired(a.element_size(), blocks, wr, splits)
    bk = 128 // a.element_size()
    k_tiles = cdiv(K, bk)
    k_run = cdiv(k_tiles, splits)
    assert not a_mmajor, "wgmma_swap reads a row-major (its planner's mmajor_a is False)"
    sbm, sbn = bias_strides or (0, 0)
    names = ("a", "b") if bias_strides is None else ("a", "b", "bias")

    def encode(ptr, which):
        if which == "a":
            return _tma.encode_2d(ptr, a.dtype, M, K, lda, nr, bk)
        if b_kmajor:  # W (N, K) row-major; in pairs each block brings half its rows
            return _tma.encode_2d(ptr, a.dtype, N, K, ldb, wr // 2 if paired else wr, bk)
        return _tma.encode_2d(ptr, a.dtype, K, N, ldb, bk, 64)  # b (K, N) row-major: W's tile M-major, 64-column boxes
    tensor_map = _kept_maps(encode)

    summed = splits == 1 or swap_clustered(a.element_size(), wr, splits, tiles, sms)  # (in the kernel)
    reduce = None if summed else split_reduce(a.dtype, M * N, a.device)

    def arguments(key, pair):
        """(the kernel's arguments, matmul_split_reduce's or None) for (a, b, c, bias addresses)."""
        map_a, map_w = tensor_map(key[0], "a"), tensor_map(key[1], "b")
        if summed:
            return (map_w, map_a, key[2], 0, M, N, blocks, tiles, k_tiles, k_run, key[3], sbm, sbn), None
        partial = pair[1].data_ptr()
        return ((map_w, map_a, key[2], partial, M, N, blocks, tiles, k_tiles, k_run, 0, 0, 0),
                (partial, key[2], M * N, splits, key[3], sbm, sbn, N))
    kept = kept_arguments(arguments, a.device, 0, splits * M * N, not summed)

    def run_swap(a, b, out, bias_ptr=0):
        a, b = operands(a, b)
        main, second = kept((a.data_ptr(), b.data_ptr(), out.data_ptr(), bias_ptr))
        kernel(*main)
        if second is not None:
            reduce(*second)
    return Plan((M, N), matmul_out_dtype(a.dtype), a.device, bias_run(run_swap, bias_strides), names)
