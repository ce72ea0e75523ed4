"""Matmul's tile configs in Triton: the lists each variant chooses from, the heuristic config of a
shape (waves, split-K by a time model over measured tile rates), and the tuned config of the call's
bucket (``_tuning``). ``_matmul.config_for`` is what a plan asks.
"""

from __future__ import annotations

import torch
import triton

from kernel_common import cdiv, interpreting
from kernel_common.catalog import names
from kernel_common.plans import by_tiles
from triton_impl._arch import SM_90
from triton_impl._matmul_tma import SHARED_BYTES, shared_bytes, split_last_of
from triton_impl.catalog import RECORDS


# The TMA variants launch one kernel, each a step: ``tma_persistent`` (descriptors, persistent
# grid), ``split_k`` (the same with K split across programs when the tiles alone leave SMs idle).
# ``fma_ws`` (exact float32 only): the Gluon kernel of ``_matmul_fma``, an explicit thread tile and
# a producer warp. ``few_rows`` (floats): a few rows of a against W = b^T on CUDA cores, no dot.
# ``few_rows_ws`` (exact float32 only): the same pairs of rows in Gluon, staged by TMA, k in-thread.
VARIANTS = names(RECORDS, "matmul")  # the usual default first (triton_impl/catalog.py)


# Exact float32 with up to this many rows of a runs the few-row kernels (``_matmul_fp32``'s comment).
FEW_ROWS = 64



# ---------------------------------------------------------------------------------------------
# Configs. `grouped` picks from a list per element size: the tuned config of the call's bucket
# (triton_impl/_tuning.py), else a heuristic one. The interpreter runs one small config.
# ---------------------------------------------------------------------------------------------
def _config_of(bm, bn, bk, warps, stages, group_m=8):
    return triton.Config({"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "GROUP_M": group_m},
                         num_warps=warps, num_stages=stages)


# Tensor-core sizes from tutorial 03 (fp16/bf16: 0.86x / 0.98x and 0.94x / 1.09x cuBLAS at
# 4096 / 8192 on an H100 with this list, as the tutorial reports; bench/results/ has ours).
_CONFIGS_16BIT = [
    _config_of(128, 256, 64, 8, 3), _config_of(64, 256, 32, 4, 4), _config_of(128, 128, 32, 4, 4),
    _config_of(128, 64, 32, 4, 4), _config_of(64, 128, 32, 4, 4), _config_of(128, 32, 32, 4, 4),
    _config_of(64, 32, 32, 2, 5), _config_of(32, 64, 32, 2, 5),
    # few rows (decode, M <= 16): more programs along N, a longer K slice each
    _config_of(16, 64, 128, 4, 4), _config_of(16, 32, 256, 4, 3),
]
# float32 tiles are twice the bytes: shallower K slices keep the pipelined stages in shared
# memory (128x128x32 fp32, 3 stages = 96 KiB).
_CONFIGS_FP32 = [
    _config_of(128, 128, 32, 8, 3), _config_of(128, 64, 32, 4, 4), _config_of(64, 128, 32, 4, 4),
    _config_of(64, 64, 32, 4, 4), _config_of(128, 128, 16, 8, 4),
]
# grouped on float32 with up to FEW_ROWS rows of a (b row-major: variant=None's pick there), the first
# whose tiles fill the SMs, else the smaller. H100, exact, in turns, x torch, 16x128x64 / 16x64x64:
# (16, 4096, 4096) 1.02 / 1.35, (8, 14336, 4096) 1.39 / 1.35, (32, 4096, 4096) 0.59 / 0.77, (32, 14336,
# 4096) 1.39 / 1.22, (64, 4096, 4096) 0.76 / 0.70, (64, 14336, 4096) 0.73 / 0.71 (docs/decisions/014-exact-float32-triton.md,
# docs/decisions/014-exact-float32-triton.md)
_FEW_ROWS_FP32 = [_config_of(16, 128, 64, 4, 3), _config_of(16, 64, 64, 4, 3)]
_CONFIG_INTERPRETER = _config_of(32, 32, 32, 4, 1, group_m=4)
# int8: the 16-bit tiles with slices of the same bytes (128 k)
_CONFIGS_8BIT = [_config_of(c.kwargs["BLOCK_M"], c.kwargs["BLOCK_N"], 2 * c.kwargs["BLOCK_K"], c.num_warps,
                            c.num_stages) for c in _CONFIGS_16BIT[:6]]
# int32 (no dot): a BLOCK_M x BLOCK_K x BLOCK_N product lives in registers before its sum, 64 a thread
_CONFIG_INT32 = _config_of(32, 32, 8, 4, 2, group_m=8)


def _blocked_config(dtype):
    """(BLOCK_M, BLOCK_N, BLOCK_K, num_warps, num_stages) of the fixed-config `blocked` variant:
    one mid-sized tile that fits every dtype, and a small one under the interpreter."""
    if dtype == torch.int32:
        kw = _CONFIG_INT32.kwargs
        return kw["BLOCK_M"], kw["BLOCK_N"], kw["BLOCK_K"], _CONFIG_INT32.num_warps, _CONFIG_INT32.num_stages
    if interpreting():
        return 32, 32, 32, 4, 1
    if dtype.itemsize == 2:
        return 128, 128, 32, 4, 4
    if dtype.itemsize == 1:
        return 128, 128, 64, 4, 4
    return 64, 64, 32, 4, 4


# ---- configs -----------------------------------------------------------------------------------
# (warp specialization, tl.range(..., warp_specialize=True), ran within 1% of the same config at
# bf16 4096^3 and 8192^3 on an H200: not kept; docs/decisions/012-triton-matmul-selection.md.
# triton 3.6 makes no producer partition of this kernel for sm_90: no setmaxnreg in its PTX)
def _tma_config_of(bm, bn, bk, warps, stages, swap=False, subtile=False, group_m=8, n_tail=0):
    """A TMA kernel config; ``n_tail``: a tile of two parts, bn - n_tail and n_tail wide (its N_TAIL)."""
    kw = {"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "GROUP_M": group_m, "SPLIT_K": 1, "SWAP_AB": swap,
          "EPILOGUE_SUBTILE": subtile}
    return triton.Config(dict(kw, N_TAIL=n_tail) if n_tail else kw, num_warps=warps, num_stages=stages)


def tile_text(cfg) -> str:
    """A config as ``describe`` writes it: "128x256x64 w8 s3" (tile, warps, stages)."""
    kw = cfg.kwargs
    return f"{kw['BLOCK_M']}x{kw['BLOCK_N']}x{kw['BLOCK_K']} w{cfg.num_warps} s{cfg.num_stages}"


def _with_split(cfg, split_k: int) -> triton.Config:
    kw = {k: v for k, v in cfg.kwargs.items() if k != "STREAM_K"}
    return triton.Config(dict(kw, SPLIT_K=split_k), num_warps=cfg.num_warps, num_stages=cfg.num_stages)


def _with_stream_k(cfg) -> triton.Config:
    """``cfg``'s tile with K whole and the last wave's tiles shared out (the kernel's STREAM_K); a tile
    of two parts by its first (a shared part's slot is a power of two wide)."""
    kw = dict(cfg.kwargs, SPLIT_K=1, STREAM_K=True)
    kw["BLOCK_N"] -= kw.pop("N_TAIL", 0)
    return triton.Config(kw, num_warps=cfg.num_warps, num_stages=cfg.num_stages)


# 16-bit: tutorial 09's 128x256x64 (its epilogue stored in halves to fit 3 stages) down to 64x64.
# The second, 4 stages (229,408 bytes: no float32 split tile beside them) and tile rows in groups of
# 16, is the first's form from DEEP_K: whole-K tiles on the balanced grid, x torch in turns (H200,
# bf16): +0.3-0.9 points on every shape of K >= 4096 (4096^3 0.996-0.998 -> 1.003-1.004; 8192^3
# 1.014-1.017 -> 1.019-1.021), -0.3 at 4096x4096x1024, -2.8 at 3000x5000x2000 (docs/decisions/012-triton-matmul-selection.md)
DEEP_K = 4096
_TMA_16BIT = [
    _tma_config_of(128, 256, 64, 8, 3, subtile=True), _tma_config_of(128, 256, 64, 8, 4, subtile=True, group_m=16),
    _tma_config_of(256, 128, 64, 8, 3, subtile=True), _tma_config_of(128, 128, 64, 8, 4),
    _tma_config_of(128, 128, 64, 4, 4), _tma_config_of(128, 64, 64, 4, 4), _tma_config_of(64, 128, 64, 4, 4),
    _tma_config_of(64, 64, 64, 4, 5),
]
# TF32 from 512 rows: 128x256 in 8 warps where 1024 rows or more give its tiles every SM, else
# 128x128 in 4 warps and 4 stages where they keep half the SMs busy. The list's first fit
# (128x128 w8 s3, ordered for exact float32) ran 0.39-0.85x torch's TF32 on drawn shapes of
# 512-9420 rows where these ran 0.81-1.14x (lab/sweep_tma_configs.py --dtype tf32;
# docs/decisions/027-tf32-tiles.md)
_TF32_WIDE = _tma_config_of(128, 256, 32, 8, 3, subtile=True)
_TF32_MID = _tma_config_of(128, 128, 32, 4, 4)
# float32 (exact or TF32): 32-deep slices are 128 bytes, one TMA swizzle row
_TMA_FP32 = [
    _tma_config_of(128, 128, 32, 8, 3), _TF32_WIDE,
    _tma_config_of(128, 128, 32, 8, 4), _tma_config_of(128, 128, 16, 8, 4), _tma_config_of(64, 256, 32, 8, 3),
    _tma_config_of(256, 64, 32, 8, 3), _TF32_MID, _tma_config_of(128, 64, 32, 4, 4),
    _tma_config_of(64, 128, 32, 4, 4), _tma_config_of(64, 64, 32, 4, 4),
]
TF32_WIDE_MIN_M, TF32_MIN_M = 1024, 512
_TMA_INTERPRETER = _tma_config_of(32, 32, 32, 4, 1, group_m=4)
# int8: 128-byte slices (128 k) as for 16-bit, an int32 c; stages that fit beside the epilogue's tile
_TMA_8BIT = [
    _tma_config_of(128, 256, 128, 8, 3, subtile=True), _tma_config_of(128, 128, 128, 8, 4),
    _tma_config_of(128, 128, 128, 4, 4), _tma_config_of(128, 64, 128, 4, 4), _tma_config_of(64, 128, 128, 4, 4),
    _tma_config_of(64, 64, 128, 4, 5),
]


# Few-row products stream b once and do little else: what counts is enough SMs pulling on memory,
# then the widest tile (fewer, longer TMA loads). A ladder lists a row class's configs widest
# first; the heuristic takes the widest whose tiles keep at least half the SMs busy (H200, bf16
# W.t(), one run: (1, 4096, 4096) 16x32 tiles, 128 of them, 18.0 us, 16x64 18.3-19.3; (1, 6144,
# 4096) 16x64, 96 tiles, 22.6, 16x32 over 24.9; (1, 10240, 8192) 16x128, 80 tiles, 52.1, 16x64 in
# two K slices 58.7, whole over 61; docs/decisions/012-triton-matmul-selection.md).
def _swap_ladder(M: int, element_size: int) -> list:
    """M <= 64 (decode): c^T's tiles (SWAP_AB puts M in the MMA's narrow N slot), 128 down to 32
    columns of b a tile, long K slices."""
    bm = max(16, triton.next_power_of_2(M))
    bk = 128 if element_size == 2 else 64
    return [_tma_config_of(bm, 128, bk, 4, 4, swap=True), _tma_config_of(bm, 64, bk, 4, 6, swap=True),
            _tma_config_of(bm, 32, 2 * bk, 4, 4, swap=True)]


# 33-64 rows, 16-bit (a decode step of tens of sequences): a's rows in one, two or four tiles, each of
# the ladder's 128- and 64-wide rungs (128-deep slices), the fewest row tiles, then the wider rung,
# whose tiles keep half the SMs busy, else 16 x 64; K whole. The ladder's one tile of a's rows left most
# SMs idle on a small W (64 x 1024 x 1024: 32 tiles of 64 x 32 x 256); tiles of fewer rows read W once
# more from L2 a tile of rows, and start that many more programs. H100, bf16 W.t(), 15 decode
# products and drawn shapes, flushed in turns, x torch: 0.71-1.08 (the shipped table) -> 0.87-1.12;
# a split of K won on some (K 2816-6144) and lost on others (decision 064). At 17-32 rows the tile
# takes K in slices up to one wave of work items: the shipped table's 32 x 64 tiles in 4-11 slices
# ran 0.82-1.03x torch, this rule 1.04-1.16x, within 0.02 of the fastest config on 7 products
_NARROW_ROWS, _NARROW_SPLIT_ROWS = SM_90["narrow_ladder_rows"], SM_90["narrow_split_rows"]


def _narrow_ladder(M: int) -> list:
    """The narrow rule's tiles in its order (above): rows of a a tile from M's power of two down to
    16, at each the 128-wide rung, then the 64-wide."""
    top = triton.next_power_of_2(M)
    return [_tma_config_of(bm, bn, 128, 4, stages, swap=True) for bm in (64, 32, 16) if bm <= top
            for bn, stages in ((128, 4), (64, 6))]


def narrow_rows(M: int, element_size: int) -> bool:
    """Does the narrow rule (above) choose a 16-bit TMA product's tile?"""
    return element_size == 2 and _NARROW_ROWS[0] <= M <= _NARROW_ROWS[1]


def narrow_config(M: int, N: int, K: int, sms: int) -> triton.Config:
    """The narrow rule's tile (above) and its K slices where K is the few-row split's ``min_k`` or
    more (the sweep's K: 4096-14336): ``_splits``' up to one wave of work items where M is at most
    ``_NARROW_SPLIT_ROWS``; past that, where the last rung's tiles would leave three quarters of the
    SMs idle (c of few columns: 54 x 128 x 29568 on 8 tiles of 16 x 64), the slices that fill a wave
    (``wave_split``; decision 069); else K whole."""
    tiles = _narrow_ladder(M)
    if M > _NARROW_SPLIT_ROWS and K >= _FEW_ROWS_SPLIT["min_k"] and 4 * _tiles(tiles[-1], M, N) <= sms:
        return _with_split(tiles[-1], wave_split(tiles[-1], M, N, K, sms))  # (the rung of most tiles)
    cfg = next((c for c in tiles if 2 * _tiles(c, M, N) >= sms), tiles[-1])
    split = M <= _NARROW_SPLIT_ROWS and K >= _FEW_ROWS_SPLIT["min_k"]
    one_wave = sms // _tiles(cfg, M, N) if split else 1
    return _with_split(cfg, max(1, min(one_wave, _splits(cfg, M, N, K, sms, 2))))


# 65 to 256 rows (a prefill chunk, a batch of requests), 16-bit. The widths, from 128-deep slices
# of each (H200, bf16 W.t(), docs/decisions/012-triton-matmul-selection.md): (128, 14336, 4096) 128x128 43.4 us,
# 128x64 47.7; (128, 6144, 4096) 128x64 26.7; (128, 4096, 4096) 64x64 22.0, 128x64 23.3. These
# products stream W: an SM's rate is the bytes of W it has in flight, and a's rows take most of each
# stage, so the 128x128 tile now takes 64-deep slices in 6 stages (5 x 16 KB of W in flight against
# 2 x 32 KB in 3 stages of 128-deep ones): (128, 10240, 8192) 49.0 us against 57.8, torch 46.9
# (docs/decisions/012-triton-matmul-selection.md)
_MID_ROWS_16BIT = [_tma_config_of(128, 128, 64, 4, 6, swap=True, subtile=True),
                   _tma_config_of(128, 64, 128, 4, 4, swap=True), _tma_config_of(64, 64, 128, 4, 4)]
# Past 64 rows the fitted model (_fitted_config) chooses among these, the lists above and 64 x 256
# (one warpgroup, whose 64-row steps waste less of a middle M than 128-row ones). H200, bf16, the
# grid's 252 buckets of 96-384 rows (tools/ship_tuning.py): 64 x 256 the fastest in 38, 32 of them of
# 129-256 rows. A swap-AB 256 x 128 tile (M whole in its 256-wide slot, W read once) was timed there
# too and was the fastest in none: not kept.
# And tiles 192 wide, in two parts (128 + 64: the kernel's N_TAIL), as cuBLAS runs 192- and 104-wide
# tiles where 128 and 256 leave a wave part empty: 1358 x 2048 x 3584 ran 41.2 us on 88 tiles of
# 128 x 256, 36.9 on 121 of 128 x 192, torch 31.4 (H200, bf16, W.t(); their classes fitted by
# lab/fit_two_part.py, docs/decisions/062-two-part-tiles.md)
_TWO_PART_16BIT = [_tma_config_of(128, 192, 64, 8, 4, subtile=True, n_tail=64),
                   _tma_config_of(64, 192, 64, 4, 5, subtile=True, n_tail=64),
                   _tma_config_of(128, 192, 64, 4, 4, swap=True, subtile=True, n_tail=64)]
_FITTED_16BIT = _MID_ROWS_16BIT + _TMA_16BIT + [_tma_config_of(64, 256, 64, 4, 4, subtile=True)] + _TWO_PART_16BIT


FAMILIES = ("grouped", "tma")  # the variants' tuned config families (_matmul.PLANNERS)


def _check_family(family: str) -> None:
    if family not in FAMILIES:
        raise ValueError(f"no config family {family!r}: one of {', '.join(FAMILIES)}")


def candidates(element_size: int, family: str = "grouped", M: int = 1 << 20) -> list:
    """The configs a family of variants chooses from (and tuning benchmarks) for this element size
    and M: "tma" (``tma_persistent``, ``split_k``) or "grouped" (int8: no swap-AB ladder, no
    split; int32 runs its one config)."""
    _check_family(family)
    if element_size == 1:
        return _TMA_8BIT if family == "tma" else _CONFIGS_8BIT
    if family == "tma" and M <= 64:  # the ladder, and deeper slices of its ends
        bm, bk = max(16, triton.next_power_of_2(M)), 128 if element_size == 2 else 64
        narrow = [c for c in _narrow_ladder(M) if c.kwargs["BLOCK_M"] < bm] if narrow_rows(M, element_size) else []
        return _swap_ladder(M, element_size) + [_tma_config_of(bm, 32, 4 * bk, 4, 3, swap=True),
                                                    _tma_config_of(bm, 128, 2 * bk, 4, 3, swap=True)] + narrow
    if family == "tma":
        if element_size == 2:  # (tuning's too: a tuned entry holds tiles a power of two wide)
            return [cfg for cfg in _FITTED_16BIT if not cfg.kwargs.get("N_TAIL")]
        return _TMA_FP32
    if element_size == 4 and M <= FEW_ROWS:
        return _FEW_ROWS_FP32 + _CONFIGS_FP32
    return _CONFIGS_16BIT if element_size == 2 else _CONFIGS_FP32


def _tiles(cfg, M, N) -> int:
    return cdiv(M, cfg.kwargs["BLOCK_M"]) * cdiv(N, cfg.kwargs["BLOCK_N"])


# grouped on 16-bit operands whose rows a 16-byte load cannot read (K or N not a multiple of 8, a
# base off 16 bytes): element loads. Large products of such rows run the TMA kernel on copies
# (_unaligned_tma), so these are for small ones. At (495, 5333, 71), bf16 and fp16, in turns x torch
# (H100, docs/decisions/012-triton-matmul-selection.md): 32x256x32 with 8 warps 0.95x for a row-major B (128x128x32,
# the fastest at (4097, 4095, 129) in docs/decisions/012-triton-matmul-selection.md, 0.89-0.90x); 64x128x128 with 4 warps 0.91x for a
# K-major one (64x128x32 0.83-0.84x; the same tile ran 0.13x on a row-major B).
_UNALIGNED_16BIT = {False: _config_of(32, 256, 32, 8, 2), True: _config_of(64, 128, 128, 4, 3)}
# 16-bit products of a short K (a LoRA up projection, r 4-16) are bound by writing c: one K slice of 16
# (the least a dot takes, masked past K) on the pointer kernel's tiles (decision 066)
SHORT_K_MAX, _SHORT_K_TILE = SM_90["short_k"]
_SHORT_K_16BIT = _config_of(*_SHORT_K_TILE)


def short_k(K: int, element_size: int) -> bool:
    """A 16-bit product whose K is at most ``SHORT_K_MAX``: ``_SHORT_K_16BIT``'s tiles."""
    return element_size == 2 and K <= SHORT_K_MAX


# 16-bit products of few columns (a LoRA down projection, r 4-32) are bound by reading a, and grouped's
# M / 16 programs each walking all of K leave the SMs idle: the TMA kernel on tiles of BLOCK_M rows by c's
# columns (16 or 32), K in slices that fill one wave (decision 067). Past 64 rows the same holds up to
# ``WIDE_N_MAX`` columns from K = ``WIDE_N_MIN_K``, in tiles 64 wide: at most 64 columns at any M, on 128-row tiles
# (``_WIDE_N_TALL_TILE``) where 64-row ones pass a wave; 65-128 where 64-row tiles make at most one wave
# (past it the fitted tiles ran them as fast: 6625 x 128 x 3584; decision 069)
NARROW_N_MAX, NARROW_N_ANY_PICK_M, _NARROW_N_TILE = SM_90["narrow_n"]
WIDE_N_MAX, WIDE_N_MIN_K, _WIDE_N_TALL_TILE = SM_90["narrow_n_wide"]
_THIN_N = 64  # (the widest tile of such products)


def narrow_n(M: int, N: int, K: int, element_size: int, a_in_place: bool, sms: int) -> bool:
    """A 16-bit product of at most ``NARROW_N_MAX`` columns past the short K, a read where it lies;
    past ``NARROW_N_ANY_PICK_M`` rows and from ``WIDE_N_MIN_K``, of at most ``_THIN_N``, or
    ``WIDE_N_MAX`` whose 64-row tiles make at most one wave."""
    if element_size != 2 or short_k(K, element_size) or not a_in_place:
        return False
    return N <= NARROW_N_MAX or M > NARROW_N_ANY_PICK_M and K >= WIDE_N_MIN_K and (
        N <= _THIN_N or N <= WIDE_N_MAX and cdiv(M, _NARROW_N_TILE[0]) * cdiv(N, _THIN_N) <= sms)


def wave_split(cfg, M: int, N: int, K: int, sms: int) -> int:
    """K slices that fill one wave of the SMs with ``cfg``'s work items, each slice at least two
    BLOCK_K deep, and no more than one launch sums (``split_last_of``): a second launch and its
    workspace made a call 20.2-20.7 us back to back where one launch's took 14.1-14.9 and torch's
    11.6-15.3 (H100, bf16, lora seed 284, a in L2; decision 069)."""
    kw = cfg.kwargs
    split = max(1, min(cdiv(K, kw["BLOCK_K"]) // 2, sms // _tiles(cfg, M, N)))
    while split > 1 and not split_last_of(dict(kw, SPLIT_K=split), M, N):
        split -= 1
    return split


def narrow_n_config(M: int, N: int, K: int, sms: int) -> triton.Config:
    """``_NARROW_N_TILE``'s rows by N's power of two from 16 up to ``_THIN_N`` (past 32 columns, in
    ``_WIDE_N_TALL_TILE``'s where those tiles pass a wave), K in the slices that fill one wave."""
    bm, bk, warps, stages = _NARROW_N_TILE
    bn = min(_THIN_N, max(16, triton.next_power_of_2(N)))
    if N > NARROW_N_MAX and cdiv(M, bm) * cdiv(N, bn) > sms:
        bm, bk, warps, stages = _WIDE_N_TALL_TILE
    cfg = _tma_config_of(bm, bn, bk, warps, stages)
    return _with_split(cfg, wave_split(cfg, M, N, K, sms))


def _heuristic_config(M: int, N: int, K: int, element_size: int, sms: int, family: str = "grouped",
                      unaligned: bool = False, b_kmajor: bool = False, tf32: bool = False) -> triton.Config:
    """Without tuning. 16-bit grouped at K <= ``SHORT_K_MAX``: ``_SHORT_K_16BIT``. Few rows (TMA): the
    widest rung of the row class's ladder whose tiles keep half the SMs busy; 17-64 rows of 16-bit, ``narrow_config``. 16-bit TMA past 64 rows: the config and K split of least fitted time
    (``_fitted_config``). 16-bit grouped where a
    or b has rows not 16-byte aligned (``unaligned``): ``_UNALIGNED_16BIT``'s tile for B's layout
    where its tiles fill every SM.
    Otherwise the first (largest) config of the list whose tiles fill every SM,
    else the one with the most tiles (small problems: more programs beat bigger tiles), of those
    the one with the fewest rows; TF32 TMA from ``TF32_MIN_M`` rows: ``_TF32_WIDE`` or ``_TF32_MID``
    (their comment). The TMA kernel splits K by ``_splits``."""
    _check_family(family)
    if tf32 and family == "tma" and M >= TF32_MIN_M:
        if M >= TF32_WIDE_MIN_M and _tiles(_TF32_WIDE, M, N) >= sms:
            return _with_split(_TF32_WIDE, 1)
        if 2 * _tiles(_TF32_MID, M, N) >= sms:
            return _with_split(_TF32_MID, 1)
    if family == "grouped" and short_k(K, element_size):
        return _SHORT_K_16BIT
    if family == "grouped" and element_size == 2 and unaligned:
        cfg = _UNALIGNED_16BIT[b_kmajor]
        if _tiles(cfg, M, N) >= sms:
            return cfg
    if family == "tma" and element_size == 2 and M > 64:
        return _fitted_config(M, N, K, sms)
    if family == "tma" and narrow_rows(M, element_size):
        return narrow_config(M, N, K, sms)
    ladder = _swap_ladder(M, element_size) if family == "tma" and M <= 64 and element_size != 1 else None
    if ladder:
        cfg = next((c for c in ladder if 2 * _tiles(c, M, N) >= sms), ladder[-1])
    else:
        configs = candidates(element_size, family, M)
        cfg = next((c for c in configs if _tiles(c, M, N) >= sms),
                   max(configs, key=lambda c: (_tiles(c, M, N), -c.kwargs["BLOCK_M"])))
    return _with_split(cfg, _splits(cfg, M, N, K, sms, element_size)) if family == "tma" else cfg


# Each 16-bit TMA tile's rate per SM by (BLOCK_M, BLOCK_N, warps), as a share of 128x256's, one
# SM's rate, and split-K's sum: measured data of the architecture (triton_impl/arch_sm_90.json)
_TILE_RATE = {(bm, bn, warps): rate for bm, bn, warps, rate in SM_90["tile_rate"]}
_SM_FLOPS = SM_90["sm_flops"]
_SPLIT_SECONDS = SM_90["split_seconds"]
_SPLIT_BYTES_PER_S = SM_90["split_bytes_per_s"]


def _modelled_seconds(cfg, M: int, N: int, K: int, sms: int, count: int = 1) -> float:
    """Time of a 16-bit TMA config (over ``count`` products of a batch), for ``batched_tma_config``
    and ``tail_split_parts`` (2-D products past 64 rows take ``_fitted_seconds``): waves of work
    items (tiles x K slices) on ``sms`` SMs, each
    item its slice's FLOPs at the tile's rate, and for a split the float32 partials written and
    read once more plus a launch. Stages are not modelled. (The sweep's 31 shapes of 1024-8192
    rows: the pick within 3% of the fastest config on 26, 3-5% on 4, 14% on 8192x10240x8192 where
    4 stages beat the picked 3; the rule before ran 64x64 or 128x64 tiles that "fill every SM"
    where 128x128 or 128x256 tiles, in K slices where few, ran 1.7-2.2x faster.)"""
    kw = cfg.kwargs
    bm, bn, bk, split = kw["BLOCK_M"], kw["BLOCK_N"], kw["BLOCK_K"], kw["SPLIT_K"]
    k_slice = cdiv(cdiv(K, split), bk) * bk
    if split > 1 and k_slice < 4 * bk:
        return float("inf")
    waves = cdiv(_tiles(cfg, M, N) * split * count, sms)
    rate = _TILE_RATE.get((bm, bn, cfg.num_warps), min(_TILE_RATE.values()))  # (a tuned-only tile: the least)
    seconds = waves * 2 * bm * bn * k_slice / (rate * _SM_FLOPS)
    if split > 1:
        seconds += _SPLIT_SECONDS + 2 * split * M * N * 4 / _SPLIT_BYTES_PER_S
    return seconds


# 16-bit TMA past 64 rows: the config (tile, stages, K split) of least time by a model fitted to
# every config timed on drawn shapes, each timing weighed towards its shape's fastest
# (lab/fit_tma_model.py, its constants in arch_sm_90.json): the waves of work items (tiles x K
# slices), each its slice's multiply-adds at the config class's rate
# plus a fixed cost; the whole no faster than a's, b's and c's bytes, wave by wave at the lesser of
# the busy SMs' load rate and the class's HBM rate (a last wave of few items loads slower: 72 x 12288
# x 4096's second wave of 60 tiles); a split's float32 partials and its sum added. The rates of
# _modelled_seconds come from large shapes of full waves; these see a middle M's memory-bound tiles
# and half-empty waves (docs/decisions/036-triton-fitted-tma-model.md). W's bytes count once a row
# block where a's rows make blocks of a 128- or 256-row tile, the last at most half full: two such
# blocks whatever W's size (W under L2 too: 128 x 64 tiles ran 1.25-1.53x their modelled time with
# W read once, 137 x 4096 x 4096 picked at 0.41x torch where 64 x 256 ran 0.72x), three or more
# where W outgrows L2 (268-300 rows, W 134-484 MB: 1.2-1.6x with W read once; under L2 1.0-1.1x).
# The fit weighs a timing by how near its shape's fastest it runs, measured or modelled: a config
# the model would pick that measured slow counts. A last group of few row blocks waits on W (065).
_FIT = SM_90["tma_model"]
_FIT_CLASSES = {tuple(c[:6]): c[6:] for c in _FIT["classes"]}  # {(bm, bn, bk, warps, stages, swap): rates}


def _w_reads(M: int, N: int, K: int, bm: int) -> int:
    """The times W's bytes are read from HBM in the fitted model (above): once a row block of a, or 1."""
    blocks = cdiv(M, bm)
    last = M - (blocks - 1) * bm
    if bm < 128 or blocks < 2 or 2 * last > bm:
        return 1
    return blocks if blocks == 2 or N * K * 2 > _FIT["w_reread_l2_bytes"] else 1


class _Candidate:
    """A 16-bit TMA config in ``split`` K slices, with what its fitted time needs that no shape changes
    (its class's rates): a new shape's plan weighs about 40 of them (``_fitted_config``) on its call's host."""
    __slots__ = ("cfg", "split", "kw", "bm", "bn", "bk", "group", "rate", "load", "item", "peak")

    def __init__(self, cfg, split: int):
        kw = cfg.kwargs
        self.cfg, self.split, self.kw = cfg, split, dict(kw, SPLIT_K=split)
        self.bm, self.bn, self.bk, self.group = kw["BLOCK_M"], kw["BLOCK_N"], kw["BLOCK_K"], kw["GROUP_M"]
        self.rate, self.load, self.item, self.peak = _FIT_CLASSES[
            self.bm, self.bn, self.bk, cfg.num_warps, cfg.num_stages, kw["SWAP_AB"]]

    def seconds(self, M: int, N: int, K: int, sms: int) -> tuple[float, float]:
        """(fitted GPU seconds, the call's host seconds) at M x N x K."""
        bm, bn, bk, split = self.bm, self.bn, self.bk, self.split
        items = -(-M // bm) * -(-N // bn) * split  # (cdiv written out: this runs about 40 times a new shape)
        k_slice = -(-(-(-K // split)) // bk) * bk
        waves = -(-items // sms)
        work = waves * (2 * bm * bn * k_slice / self.rate + self.item)
        # the bytes an equal share an item, each wave's at the lesser of HBM's rate and its busy SMs' loads
        last = items - (waves - 1) * sms
        memory = (M * K + _w_reads(M, N, K, bm) * N * K + M * N) * 2 / items * (
            (items - last) / min(self.peak, sms * self.load) + last / min(self.peak, last * self.load))
        seconds = _FIT["launch_s"] + max(work, memory)
        if M > self.group * bm and N * K * 2 > _FIT["w_reread_l2_bytes"]:  # (two groups, W past L2)
            seconds += self.last_group_wait(M, N, K, sms, items, k_slice)
        if split == 1:
            return seconds, _HOST_SECONDS[0]
        # the partials written and read, and their sum: split_s as fitted, in one launch or two
        seconds += 2 * split * M * N * 4 / _FIT["split_bytes_per_s"] + _FIT["split_s"]
        return seconds, _host_seconds(self.kw, M, N)

    def last_group_wait(self, M: int, N: int, K: int, sms: int, items: int, k_slice: int) -> float:
        """The last group of GROUP_M row blocks' wait on its read of W past its work (at least an item's time),
        the caller having found two groups or more and W past L2; none where the groups share a wave (065)."""
        blocks = -(-M // self.bm)
        whole, columns = (blocks - 1) // self.group * self.group, items // blocks  # (whole: the row blocks before the last group)
        if whole * columns < sms:
            return 0.0  # (their reads of W meet in L2)
        rows, last_items = M - whole * self.bm, (blocks - whole) * columns
        w_read = (N * K + rows * K + rows * N) * 2 / min(self.peak, min(last_items, sms) * self.load)
        return max(0.0, w_read - max(1.0, last_items / sms) * (2 * self.bm * self.bn * k_slice / self.rate + self.item))


def _fitted_seconds(cfg, M: int, N: int, K: int, sms: int, split: int | None = None) -> float:
    """The fitted time of a 16-bit TMA config (one of ``_FITTED_16BIT``) at M x N x K, K in its
    SPLIT_K slices (``split``: in that many instead)."""
    return _Candidate(cfg, cfg.kwargs["SPLIT_K"] if split is None else split).seconds(M, N, K, sms)[0]


# A call's host time back to back: K whole, split in one launch, split in two (a second launch and a
# workspace): a split that saves GPU time under it loses in a loop (arch_sm_90.json's call_host_s)
_HOST_SECONDS = SM_90["call_host_s"]


def _host_seconds(kw: dict, M: int, N: int) -> float:
    return _HOST_SECONDS[0 if kw["SPLIT_K"] == 1 else 1 if split_last_of(kw, M, N) else 2]


# _fitted_config's candidates: _FITTED_16BIT whole and in 2-4 K slices within SHARED_BYTES (128x256
# in 4 stages has no room for a split's float32 tile, the sweep's only configs that did not compile)
_CANDIDATES = [_Candidate(cfg, split) for cfg in _FITTED_16BIT for split in range(1, 5)
               if split == 1 or shared_bytes(cfg, 2, split) <= SHARED_BYTES]
# From K = _FOUR_STAGES_K, 128x256 with K whole runs in 4 stages where the model picks its 3-stage
# form (kept for K slices): the flushed sweeps time the two alike, back to back 4 stages run faster
# (arch_sm_90.json)
_FOUR_STAGES_K = SM_90["tma_four_stages_k"]


@by_tiles  # (kept across plans at the rows of its tiles: a new row count's plan weighs none)
def _fitted_config(M: int, N: int, K: int, sms: int) -> triton.Config:
    """Of ``_CANDIDATES`` (each K slice at least 4 BLOCK_K deep, as the fit's sweep ran them), the
    config of least time: ``_fitted_seconds``, or the call's host time (``_HOST_SECONDS``) where
    that is longer; of those under the same host time, the least fitted time (a call run alone, or
    beside other work, sees the GPU's: on the sweeps the first config listed took every such tie,
    and 12 of their 124 shapes, small products, ran 1.11x faster on the least fitted time;
    lab/fit_tma_model.py --shipped)."""
    # A split's call takes at least _HOST_SECONDS[1]: where a config with K whole is quicker than
    # that, no split can win and none is weighed (a small product, each expert's of a mixture: a
    # new shape's plan weighs 11 candidates, not 41)
    whole = min(max(gpu, host) for gpu, host in (c.seconds(M, N, K, sms) for c in _CANDIDATES if c.split == 1))
    best = None
    for c in _CANDIDATES:
        if c.split > 1 and (cdiv(K, c.bk) // 4 < c.split or whole < _HOST_SECONDS[1]):
            continue
        gpu, host = c.seconds(M, N, K, sms)
        key = (max(gpu, host), gpu)
        if best is None or key < best[0]:
            best = (key, c)
    if best[1].split == 1 and best[1].cfg is _TMA_16BIT[0] and K >= _FOUR_STAGES_K:
        return _TMA_16BIT[1]
    return _with_split(best[1].cfg, best[1].split)


def tail_split_parts(cfg, M: int, N: int, K: int, sms: int, element_size: int) -> tuple[int, int]:
    """``tail_split``'s (M0, S): rows [0, M0) run with K whole, the row blocks past them in S slices
    of K (S = 1: none), so that the leftover tiles share the last wave. Of every M0 (whole row
    blocks) and S from 2 to 4 (slices of at least 4 BLOCK_K), the least modelled time: the waves
    of each part at the tile's rate, the second part's partials written and read once more and its
    sum launched (``_modelled_seconds``' split cost); the two launches run one after the other. Its
    results are checked on a GPU, its speed not yet timed: nothing picks the variant by default."""
    kw = cfg.kwargs
    bm, bn, bk = kw["BLOCK_M"], kw["BLOCK_N"], kw["BLOCK_K"]
    if element_size == 1:
        return M, 1  # (int8: no split built)
    blocks, per_block, k_tiles = cdiv(M, bm), cdiv(N, bn), cdiv(K, bk)
    rate = _TILE_RATE.get((bm, bn, cfg.num_warps), min(_TILE_RATE.values()))  # (a tuned-only tile: the least)
    tile = 2 * bm * bn * bk * k_tiles / (rate * _SM_FLOPS)
    best = (cdiv(blocks * per_block, sms) * tile, -M, 1)  # (on a tie: more rows whole, fewer slices)
    for whole in range(blocks):
        rest = (blocks - whole) * per_block
        for s in range(2, 5):
            if cdiv(k_tiles, s) < 4:
                break
            seconds = (cdiv(whole * per_block, sms) + cdiv(rest * s, sms) / s) * tile + \
                _SPLIT_SECONDS + 2 * s * (M - whole * bm) * N * 4 / _SPLIT_BYTES_PER_S
            best = min(best, (seconds, -whole * bm, s))
    return -best[1], best[2]


def batched_tma_config(M: int, N: int, K: int, count: int, sms: int) -> triton.Config:
    """16-bit TMA over a batch of ``count`` products: the tile of least modelled time over all the
    batch's tiles (K whole: a batch fills the SMs with tiles), as the 2-D rule picks. Where K is two
    BLOCK_K slices (attention's scores at head size 128) the 128x256 tile's c is stored whole: each
    tile's epilogue is then a third of its time, and two half stores through one buffer wait for
    each other (H200, bf16, q @ k.mT x torch.bmm: 0.86 -> 0.93 at 64x2048x2048x128, 0.86 -> 0.96 at
    16x4096x4096x128, 0.94 -> 0.96 at 128x1024x1024x128; at K = 64 halves ran 1.01, whole 0.95;
    docs/decisions/021-batched-matmul.md)."""
    cfg = min(_TMA_16BIT, key=lambda c: _modelled_seconds(c, M, N, K, sms, count))
    if K >= DEEP_K and cfg.kwargs == _TMA_16BIT[0].kwargs:
        return _TMA_16BIT[1]
    if cfg.kwargs == _TMA_16BIT[0].kwargs and cdiv(K, cfg.kwargs["BLOCK_K"]) == 2:
        return _tma_config_of(128, 256, 64, 8, 3)
    return cfg


def _splits(cfg, M: int, N: int, K: int, sms: int, element_size: int) -> int:
    """Slices of K for ``cfg``'s tiles, where the tiles alone would leave over half the SMs idle:
    the count that keeps the most SMs busy across the waves of work items (fewest slices on a
    tie), each slice at least 4 BLOCK_K deep, and the float32 partials (written and read once
    more) under a quarter of b's bytes: few-row products only. The ladders of narrower tiles come
    first: a split costs a workspace and a second launch, about 25 us more host time a call (H200,
    back to back, (1, 4096, 4096): 65.6 us a call in two slices of 16x64 tiles, torch 24.0; the
    plan's run alone, whole on 16x32 tiles, 15.7)."""
    tiles, k_tiles = _tiles(cfg, M, N), cdiv(K, cfg.kwargs["BLOCK_K"])
    most = min(16, k_tiles // 4, (K * N) // (16 * M * N))  # b's bytes / 4 >= S * M * N * 4 (16-bit b)
    if element_size == 1:
        return 1  # int8: not built (the workspace and its sum are float32)

    def busy(s):  # the share of SM time doing work across the waves of tiles * s items
        items = tiles * s
        return items / (cdiv(items, sms) * sms)
    if busy(1) >= 0.5:
        return 1
    return max(range(1, max(1, most) + 1), key=lambda s: (round(busy(s), 2), -s))


_FEW_ROWS_SPLIT = SM_90["few_rows_split"]


def few_rows_split(cfg, M: int, N: int, K: int, sms: int, element_size: int) -> int:
    """K slices for a 16-bit product of up to ``_FEW_ROWS_SPLIT``'s ``rows`` rows on a config that
    keeps K whole, as the shipped table's do: ``_splits``' count where K is ``min_k`` or more, else 1.
    The table timed its configs back to back, W in L2, where SMs left idle cost little; a model's
    step reads W from HBM, and there an idle SM's share is time (measurements: arch_sm_90.json)."""
    if element_size != 2 or M > _FEW_ROWS_SPLIT["rows"] or cfg.kwargs["SPLIT_K"] > 1:
        return cfg.kwargs["SPLIT_K"]
    return _splits(cfg, M, N, K, sms, element_size) if K >= _FEW_ROWS_SPLIT["min_k"] else 1


def ladder_fills(M: int, N: int, element_size: int, sms: int) -> bool:
    """Do the few-row ladder's narrowest tiles (M <= 64) keep half the SMs busy?"""
    return 2 * _tiles(_swap_ladder(M, element_size)[-1], M, N) >= sms
