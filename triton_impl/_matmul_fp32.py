"""Matmul's exact float32 family in Triton: ``few_rows`` (a few rows of a against W = b^T on CUDA
cores, no dot; one row on a K-major b runs this package's GEMV), and the runs of the Gluon kernels
of ``_matmul_fma``: ``fma_ws`` (stream-K over a persistent grid, partial tiles summed in k order)
and ``few_rows_ws``. ``_matmul`` picks and plans; this module builds their runs.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from kernel_common import capability, cdiv, interpreting, is_fake, matrix_layout, sm_count, tf32_allowed
from kernel_common.catalog import Rule
from triton_impl._arch import SM_90
from triton_impl._launch import DescriptorSpec, TritonLaunch
from triton_impl._gemv import _PLANS as _GEMV_PLANS
from triton_impl._matmul_configs import _config_of, _FEW_ROWS_FP32, _tiles
from triton_impl._matmul_tma import (SPLIT_LAST_BYTES, _LayoutCopy, _descriptor, _grouped_tile, _major, _rows_fit,
                                     _sum_splits_kernel, _tma_transposed)


# Exact float32 with few rows of a (an fp32 model's decode or small batch): the TMA kernel's swap-AB
# tiles ran 0.15-0.49x torch (FMA dots, a W.t() copied row-major first), fma_ws 0.41-0.56x below 65
# rows (half its 128-row tile idle). few_rows runs a W.t() at 0.87-1.55x with 1-16 rows (H200, one row
# through the GEMV; docs/decisions/014-exact-float32-triton.md) and 0.46-0.69x
# with 17-48 (H100, where the default ran 0.15-0.38x; 0.35-0.41x at 64 rows against fma_ws's
# 0.36-0.44x). On a row-major b grouped's 16-row tiles win where they fill the SMs (two waves at one
# row, whose tiles are 15/16 padding: (1, 14336, 4096) ties or loses, 0.96 / 0.96 on an H100, 0.93 /
# 0.70 on an H200, few_rows / grouped; (1, 128256, 4096) 0.83 / 1.04 and 0.78 / 0.83), and from 17
# rows on every shape (H100: 0.57-1.40x against few_rows' 0.37-0.57x, fma_ws's 0.33-0.56x at 17-64
# rows). docs/decisions/014-exact-float32-triton.md.
FEW_ROWS_TILE = 16  # grouped's tile rows there; up to _matmul_configs.FEW_ROWS rows of a in all
# Below this many rows few_rows runs a row-major b however many grouped's tiles (``few_rows_grouped``).
FEW_ROWS_GROUPED_MIN = 5
# Rows of a where few_rows_ws may run a K-major b (where Gluon runs, a and W readable by descriptors
# as they lie), if its programs (tiles x K slices) fill half the SMs (``few_rows_ws_fills``); else
# few_rows. H200, exact float32, W.t(), in turns, x torch, few_rows_ws / few_rows (lab/sweep_triton_float32.py
# seed 170): (5, 4096, 4608) 1.28 / 1.17, (9, 5120, 17920) 1.38 / 0.77, (13, 4096, 11008) 1.80 / 1.04,
# (29, 8192, 29568) 1.33 / 0.60 (80-140 programs); (8, 1536, 1536) 0.91 / 1.28, (24, 256, 1536) 0.44 /
# 1.02, (25, 2048, 1536) 0.61 / 0.93 (8-32 programs); (3, 1536, 8960) 2.79 / 3.30. Past 64 rows fma_ws
# was not beaten by its 4-warp form (H100: (96, 4096, 4096) 0.69 / 0.66). docs/decisions/061-triton-exact-float32-fill.md
FEW_ROWS_WS = (5, 64)
# float32 under TF32 on a row-major b, up to this many rows: few_rows' exact sums read b where it lies,
# where the TMA kernel's TF32 reads it made K-major a call, three times its bytes (arch_sm_90.json, decision 039)
TF32_ROW_FEW_ROWS_MAX_M = SM_90["tf32_row_few_rows_max_m"]


# (a rule of triton_impl/_matmul.py's RULES)
TF32_ROW_FEW = Rule("few_rows", lambda a, b, out: a.dtype == torch.float32 and tf32_allowed() and not _major(b)
                    and a.shape[0] <= TF32_ROW_FEW_ROWS_MAX_M,
                    f"float32 under TF32, up to {TF32_ROW_FEW_ROWS_MAX_M} rows on a row-major b: exact sums that read "
                    "b where it lies (TF32's dots would read it made K-major a call)")


def few_rows_grouped(M: int, N: int, sms: int, whole_wave: bool = False) -> bool:
    """Exact float32, up to ``FEW_ROWS`` rows of a, b row-major: does ``grouped`` (16-row tiles) beat
    ``few_rows``? ``whole_wave``: does it beat ``few_rows_ws`` too, where its widest tiles (16 x 128)
    fill every SM? (H200, x torch, grouped / few_rows_ws, seed 173: (34, 14336, 4096) 336 tiles 0.92 /
    0.68, (14, 18944, 3584) 148 tiles 1.12 / 1.07, (9, 128256, 4096) 2.03 / 1.84, (26, 152064, 8192) 1.62
    / 1.38; (5, 16384, 3072) 128 tiles 1.05 / 1.22, (8, 8192, 6144) 64 tiles 1.08 / 1.57, (39, 3584,
    18944) 84 tiles 0.49 / 0.66.) Else from 5 rows, where its 16 x 64 tiles keep half the SMs busy; at 1-4 rows its tile
    idles 12-15 of 16 rows and few_rows' 1-4-row tiles led however many tiles. H200, x torch,
    grouped / few_rows (seeds 170, 171): (9, 5120, 17920) 80 tiles 0.72 / 0.52, (21, 8960, 1536) 280
    tiles 1.05 / 0.59, (6, 37888, 3584) 1.11 / 0.83; (13, 4096, 11008) 64 tiles 0.73 / 0.94, (24, 256,
    1536) 8 tiles 0.45 / 0.77; (2, 37888, 3584) 592 tiles 0.96 / 1.13, (3, 18432, 7168) 0.73 / 0.89,
    (1, 35840, 5120) 0.77 / 0.91, (1, 28672, 8192) 0.84 / 0.80 (docs/decisions/061-triton-exact-float32-fill.md)."""
    tiles = cdiv(M, FEW_ROWS_TILE) * cdiv(N, _FEW_ROWS_FP32[0 if whole_wave else -1].kwargs["BLOCK_N"])
    return M >= FEW_ROWS_GROUPED_MIN and tiles * (1 if whole_wave else 2) >= sms


def few_rows_ws_config(M: int) -> triton.Config:
    """``few_rows_ws``'s tile: 16 rows of a against 256 rows of W (4 consumer warps) up to 16 rows,
    past them 512 (8 warps). H100, exact float32, W.t(), in turns, x torch, 4 / 8 warps: (16, 4096,
    4096) 1.52 / 1.35, (17, 11008, 4096) 0.94 / 1.03, (32, 4096, 4096) 1.09 / 1.13, (64, 4096, 4096)
    0.84 / 0.90, (64, 14336, 4096) 0.68 / 0.76 (docs/decisions/014-exact-float32-triton.md). Past
    ``FEW_ROWS_WS``' rows (forced: variant=None runs fma_ws there), 64 x 128 tiles: the 8 warps in 4
    rows of 16 share each stage of W, which the 16-row tiles read from L2 once for every 16 rows of a."""
    from triton_impl import _matmul_fma as f  # (imported on first use: Gluon's import is heavy)
    warps = 4 if M <= 16 else 8
    warps_m = 4 if M > FEW_ROWS_WS[1] else 1
    return _config_of(f.ROWS_BM * warps_m, 32 * (warps // warps_m) * f.ROWS_PER_THREAD, f.ROWS_BK, warps, f.ROWS_STAGES)


def few_rows_slices(tiles: int, K: int, block_m: int, block_k: int, sms: int) -> int:
    """K slices of ``few_rows``: the most, up to 8, that keep tiles x slices within 4 programs an SM
    and slices of 8 k steps or more (a weight's bytes in flight over more programs; H200, W.t(),
    1x16 tiles: (1, 4096, 4096) in 4 slices 1.05x torch, 2 1.04x, whole 0.56x in the first form;
    (1, 32000, 4096), 2000 tiles, whole 1.14x). One-row tiles (``block_m`` 1) take up to 64: a
    slice's partial sums are one row of c."""
    split, most = 1, 64 if block_m == 1 else 8
    while split < most and tiles * split * 2 <= 4 * sms and K >= 2 * split * 8 * block_k:
        split *= 2
    return split


def few_rows_config(M: int, N: int, K: int, sms: int) -> triton.Config:
    """``few_rows``' tile: 16 rows of a (fewer where M is) and 128 of them in all, 64 k a step.
    Swept on the H200 with b = W.t(), exact float32, in turns, x torch: (16, 4096, 4096) 8x16 1.19
    and 16x8 1.18, (16, 11008, 4096) 16x8 0.86, with the next step's loads in flight (without them
    8x16 0.98) (docs/decisions/014-exact-float32-triton.md). One row of a on W.t() runs the GEMV, so
    a one-row tile serves a row-major b, whose rows are b's: up to 256 columns wide and 4096 elements
    a step (1 KB of a row of b a load), in up to 64 K slices, where that gives two programs an SM;
    else 1 x 16 x 64, whose smaller steps make more programs of a small product (sweep seed 176:
    (1, 5120, 13824) 0.52 -> 0.97 and (1, 4608, 36864) 0.48 -> 1.04 on the wide tile, (1, 576, 7168)
    0.77 -> 0.61 on its 96 programs; docs/decisions/061-triton-exact-float32-fill.md)."""
    if M == 1:
        bn = min(256, max(16, triton.next_power_of_2(N)))
        tiles, bk = cdiv(N, bn), 4096 // bn
        wide = tiles * few_rows_slices(tiles, K, 1, bk, sms) >= 2 * sms
        return _config_of(1, bn, bk, 4, 1) if wide else _config_of(1, 16, 64, 4, 1)
    bm = min(16, triton.next_power_of_2(M))
    return _config_of(bm, 128 // bm, 64, 4, 1)


@triton.jit
def _sum_slots_kernel(ws_ptr, c_ptr, M, N, N_DP, KT, L, J, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                      GROUP_M: tl.constexpr):
    """Tile N_DP + program_id of c (grouped order) = the partial sums its stream-K programs left in
    its J slots of the workspace (``_matmul_fma.fma_ws_kernel``), added in k order: the same bits on
    every run."""
    s = tl.program_id(0)
    pid_m, pid_n = _grouped_tile(N_DP + s, tl.cdiv(M, BLOCK_M), tl.cdiv(N, BLOCK_N), GROUP_M)
    n = (s * KT + KT - 1) // L - (s * KT) // L + 1  # the programs that multiplied some of its slices
    tile = tl.arange(0, BLOCK_M)[:, None] * BLOCK_N + tl.arange(0, BLOCK_N)[None, :]
    src = ws_ptr + s.to(tl.int64) * J * (BLOCK_M * BLOCK_N) + tile
    acc = tl.load(src)
    for j in range(1, n):
        acc += tl.load(src + j * (BLOCK_M * BLOCK_N))
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    mask = (offs_m[:, None] < M) & (offs_n[None, :] < N)
    tl.store(c_ptr + offs_m[:, None].to(tl.int64) * N + offs_n[None, :], acc, mask=mask)


@triton.jit
def _few_rows_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, k_per_split,
                     split_stride, flags_ptr, slots_ptr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                     BLOCK_K: tl.constexpr, LAST: tl.constexpr = False):
    """``few_rows``: a BLOCK_M x BLOCK_N tile of c over K, or over split program_id(2)'s k_per_split
    of it into that split's partial sums (split_stride elements apart in a float32 workspace), for
    a few rows of a. No dot: multiply-adds broadcast over [BLOCK_M, BLOCK_N, BLOCK_K] and summed over
    BLOCK_K once, at the end, so each row of W = b^T is read along K (16-byte loads where b is
    K-major) and never staged; the next k step's loads are issued before this step's multiply-adds,
    so two steps of W are in flight. ``LAST``: a split in one launch, c written by the kernel: each
    slice stores its sums in its tile's slot (``slots_ptr``) and counts itself in the tile's flag;
    the tile's last slice to count adds the slots in slice order (the bits of the two-launch sum,
    whichever is last), writes c and lowers the flag (``kernel_common.hand_over``)."""
    # (N, M) tiles flattened on axis 0, N fastest: a grid's y axis stops at 65535 tiles of M
    n_tiles = tl.cdiv(N, BLOCK_N)
    pid_n, pid_m, pid_k = tl.program_id(0) % n_tiles, tl.program_id(0) // n_tiles, tl.program_id(2)
    offs_m = pid_m.to(tl.int64) * BLOCK_M + tl.arange(0, BLOCK_M)  # (64-bit: M x N may pass 2^31)
    offs_n = pid_n.to(tl.int64) * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    k_lo = pid_k * k_per_split
    k_hi = min(k_lo + k_per_split, K)
    mask_m, mask_n = offs_m[:, None] < M, offs_n[:, None] < N
    a_rows = a_ptr + offs_m[:, None] * stride_am
    b_rows = b_ptr + offs_n[:, None] * stride_bn  # (W's rows: b's columns)
    kk = (k_lo + offs_k).to(tl.int64)[None, :]
    a = tl.load(a_rows + kk * stride_ak, mask=mask_m & (kk < k_hi), other=0)
    w = tl.load(b_rows + kk * stride_bk, mask=mask_n & (kk < k_hi), other=0)
    acc = tl.zeros((BLOCK_M, BLOCK_N, BLOCK_K), dtype=tl.float32)
    for k0 in range(k_lo + BLOCK_K, k_hi + BLOCK_K, BLOCK_K):  # (the last trip's loads are masked off)
        kk = (k0 + offs_k).to(tl.int64)[None, :]
        a_next = tl.load(a_rows + kk * stride_ak, mask=mask_m & (kk < k_hi), other=0)
        w_next = tl.load(b_rows + kk * stride_bk, mask=mask_n & (kk < k_hi), other=0)
        acc += a.to(tl.float32)[:, None, :] * w.to(tl.float32)[None, :, :]
        a, w = a_next, w_next
    c = tl.sum(acc, axis=2)
    mask_c = (offs_m[:, None] < M) & (offs_n[None, :] < N)
    if LAST:
        tile = tl.program_id(0)
        splits = tl.num_programs(2)
        slot = tl.arange(0, BLOCK_M)[:, None] * BLOCK_N + tl.arange(0, BLOCK_N)[None, :]
        slots = slots_ptr + tile.to(tl.int64) * splits * (BLOCK_M * BLOCK_N) + slot
        tl.store(slots + pid_k * (BLOCK_M * BLOCK_N), c)
        tl.debug_barrier()  # every thread's sums stored before the count goes up
        if tl.atomic_add(flags_ptr + tile, 1, sem="acq_rel") == splits - 1:
            total = tl.load(slots, cache_modifier=".cg")
            for s in range(1, splits):
                total += tl.load(slots + s * (BLOCK_M * BLOCK_N), cache_modifier=".cg")
            tl.store(c_ptr + offs_m[:, None] * N + offs_n[None, :], total.to(c_ptr.dtype.element_ty), mask=mask_c)
            tl.store(flags_ptr + tile, 0)
    else:
        c_ptrs = c_ptr + pid_k.to(tl.int64) * split_stride + offs_m[:, None] * N + offs_n[None, :]
        tl.store(c_ptrs, c.to(c_ptr.dtype.element_ty), mask=mask_c)


def _hopper(device) -> bool:
    """Hopper's kernels apply: the interpreter (which runs them all), or a CUDA device of sm_90 or
    later (a CPU tensor on a GPU machine asks about no GPU)."""
    return interpreting() or (torch.device(device).type == "cuda"
                              and capability(device)[0] >= 9)


def fma_ws_runs(device) -> bool:
    """Can ``fma_ws`` run on ``device``: a Hopper GPU, a triton with the Gluon calls it uses
    (``_matmul_fma.AVAILABLE``), not Triton's interpreter (Gluon has none). Gluon is imported only
    where the device could run it (its import is heavy)."""
    if interpreting() or torch.device(device).type != "cuda" or capability(device)[0] < 9:
        return False
    from triton_impl import _matmul_fma
    return _matmul_fma.AVAILABLE



# A stream-K run's slices at least, and the slices a shared wave must save an SM at least (it
# costs the partial sums' stores and their sum): runs of 8 ran 1024^3 at 0.99x torch; sharing a
# wave 0.94 full lost (2048^3 0.89x against 0.91x whole: 2 slices saved), 0.76 full won at K =
# 4096 (15 slices saved: 0.932x against 0.927x), not at K = 1024 (4: 0.925x against 0.928x);
# H100, docs/decisions/010-split-k-and-stream-k.md (arch_sm_90.json)
SK_MIN_SLICES = SM_90["sk_min_slices"]


def fma_ws_stream_k(tiles: int, k_slices: int, sms: int) -> tuple:
    """(N_DP, L, J, programs): how ``fma_ws`` shares its tiles out. The first N_DP tiles take a
    program each, whole; the rest are shared out in runs of L k slices, one run a program
    (stream-K), so that the last wave ends with every SM busy where one whole tile a program would
    leave SMs idle for a tile's time; J is the most programs that share a tile. The shared tiles are
    the partial wave (with one whole wave more where it is under half the SMs: its runs would be
    short). Not where the tiles fill whole waves or nearly, nor where a run would be short
    (``SK_MIN_SLICES``)."""
    rem = tiles % sms
    shared = rem + sms if 2 * rem < sms and tiles > sms else rem
    run = cdiv(shared * k_slices, sms)
    saved = (sms - rem) * k_slices  # slices of idle SMs in the last wave of whole tiles
    if rem == 0 or run < SK_MIN_SLICES or saved < SK_MIN_SLICES * sms or tiles * k_slices >= 1 << 31:
        return tiles, 1, 1, tiles
    return tiles - shared, run, cdiv(k_slices, run) + 1, tiles - shared + cdiv(shared * k_slices, run)


def _fma_ws_run(a, b, c_fits: bool):
    """run(a, b, out) of ``fma_ws``: descriptors over a and b, row-major (a row-major copy of one
    laid out otherwise, ``_LayoutCopy``), 128 x 128 tiles of c shared out by ``fma_ws_stream_k``,
    written through a descriptor where ``c_fits`` (rows 16-byte aligned), else by masked stores;
    tiles shared by several programs are summed from a workspace afterwards (``_sum_slots_kernel``)."""
    (M, K), N = a.shape, b.shape[1]
    from triton_impl import _matmul_fma as f  # (imported on first use: Gluon's import is heavy)
    copy_a = _LayoutCopy(a, False) if _tma_transposed(a) is not False else None
    copy_b = _LayoutCopy(b, False) if _tma_transposed(b) is not False else None
    a_m = copy_a.meta if copy_a else a
    b_m = copy_b.meta if copy_b else b
    block_a, block_b, block_c = (f.BLOCK_M, f.BLOCK_K), (f.BLOCK_K, f.BLOCK_N), (f.BLOCK_M, f.BLOCK_N)
    specs = (_descriptor(a_m, False, block_a, f.shared_layout(block_a)),
             _descriptor(b_m, False, block_b, f.shared_layout(block_b)))
    if c_fits:
        specs += (DescriptorSpec((M, N), (N, 1), block_c, f.shared_layout(block_c)),)
    meta = dict(BM=f.BLOCK_M, BN=f.BLOCK_N, BK=f.BLOCK_K, NSTAGE=f.STAGES, GROUP_M=8, KS=f.K_STEP,
                ACC=f.acc_layout(), C_DESC=c_fits)
    tiles, k_slices = cdiv(M, f.BLOCK_M) * cdiv(N, f.BLOCK_N), cdiv(K, f.BLOCK_K)
    n_dp, per_run, slots, programs = fma_ws_stream_k(tiles, k_slices, sm_count(a.device))
    shared = tiles - n_dp
    launch = TritonLaunch(f.fma_ws_kernel, (programs,), meta, dict(num_warps=f.WARPS), descriptors=specs)
    sum_launch = TritonLaunch(_sum_slots_kernel, (shared,), dict(BLOCK_M=f.BLOCK_M, BLOCK_N=f.BLOCK_N, GROUP_M=8),
                              dict(num_warps=8)) if shared else None
    ws_size = shared * slots * f.BLOCK_M * f.BLOCK_N

    def run(a, b, out):
        if copy_a:
            a = copy_a(a)
        if copy_b:
            b = copy_b(b)
        if not shared:  # (no workspace: out stands in for the pointer, never read)
            return launch(a, b, out, out, M, N, K, n_dp, per_run, slots)
        ws = torch.empty(ws_size, dtype=torch.float32, device=a.device)
        launch(a, b, out, ws, M, N, K, n_dp, per_run, slots)
        sum_launch(ws, out, M, N, n_dp, k_slices, per_run, slots)
    return run


def _few_rows_ws_split(cfg, M: int, N: int, K: int, sms: int) -> tuple:
    """(k per slice, slices) of ``few_rows_ws`` with ``cfg``: the most slices, up to 16, that keep
    tiles x slices within one program an SM (a program holds an SM's registers), each 16 stages
    or more."""
    bk = cfg.kwargs["BLOCK_K"]
    tiles = _tiles(cfg, M, N)
    split = 1
    while split < 16 and tiles * split * 2 <= sms and K >= 2 * split * 16 * bk:
        split *= 2
    k_per = cdiv(cdiv(K, split), bk) * bk
    return k_per, cdiv(K, k_per)


def few_rows_ws_fills(M: int, N: int, K: int, sms: int) -> bool:
    """Do ``few_rows_ws``'s programs (tiles x K slices) keep half the SMs busy? Fewer, few_rows'
    narrower tiles run more programs and win (``FEW_ROWS_WS``)."""
    cfg = few_rows_ws_config(M)
    return 2 * _tiles(cfg, M, N) * _few_rows_ws_split(cfg, M, N, K, sms)[1] >= sms


def _few_rows_ws_run(cfg, a, b):
    """run(a, b, out) of ``few_rows_ws`` with ``cfg``: descriptors over a (row-major) and b as it
    lies, K-major (W = b^T) or row-major (a copy of either laid out otherwise, ``_LayoutCopy``: a K-major
    b), K split by ``_few_rows_ws_split`` (``_sliced``)."""
    (M, K), N = a.shape, b.shape[1]
    from triton_impl import _matmul_fma as f  # (imported on first use: Gluon's import is heavy)
    bm, bn, bk = (cfg.kwargs[k] for k in ("BLOCK_M", "BLOCK_N", "BLOCK_K"))
    copy_a = _LayoutCopy(a, False) if _tma_transposed(a) is not False else None
    copy_b = _LayoutCopy(b, True) if _tma_transposed(b) is None else None
    a_m = copy_a.meta if copy_a else a
    b_m = copy_b.meta if copy_b else b
    w_kmajor = bool(_tma_transposed(b_m))
    w_block = (bn, bk) if w_kmajor else (bk, bn)  # (a stage of W: its rows, or b's (k, n) tile)
    specs = (_descriptor(a_m, False, (bm, bk), f.shared_layout((bm, bk))),
             _descriptor(b_m, w_kmajor, (bk, bn), f.shared_layout(w_block)))
    k_per, split = _few_rows_ws_split(cfg, M, N, K, sm_count(a.device))
    meta = dict(BM=bm, BN=bn, BK=bk, NSTAGE=cfg.num_stages, L3=f.rows_layout(cfg.num_warps, bm), W_KMAJOR=w_kmajor)
    launch = TritonLaunch(f.few_rows_ws_kernel, (cdiv(N, bn) * cdiv(M, bm), 1, split),
                          meta, dict(num_warps=cfg.num_warps), descriptors=specs)
    sliced = _sliced(launch, (M, N, K, k_per, M * N), split, M, N)
    if not (copy_a or copy_b):
        return sliced

    def run(a, b, out):
        sliced(copy_a(a) if copy_a else a, copy_b(b) if copy_b else b, out)
    return run


def _check_gluon(a, variant: str) -> None:
    """The Gluon variants (``fma_ws``, ``few_rows_ws``: float32 only, their catalog records) run
    where ``fma_ws_runs``."""
    if not fma_ws_runs(a.device):
        raise ValueError(f"variant {variant} needs a Hopper GPU and a triton with Gluon's warp_specialize and "
                         "dot_fma, and does not run under Triton's interpreter; variant=None runs what does")


def _few_rows_gemv(a, b) -> bool:
    """Does ``few_rows`` run the GEMV (one row of a, b K-major)?"""
    return a.shape[0] == 1 and matrix_layout(b.t()) == "row"


def _few_rows_grid(cfg, M: int, N: int, K: int, sms: int) -> tuple:
    """(BLOCK_N, k per slice, slices) of ``few_rows`` with ``cfg``."""
    bm, bn, bk = (cfg.kwargs[k] for k in ("BLOCK_M", "BLOCK_N", "BLOCK_K"))
    split = few_rows_slices(cdiv(M, bm) * cdiv(N, bn), K, bm, bk, sms)
    k_per = cdiv(cdiv(K, split), bk) * bk
    return bn, k_per, cdiv(K, k_per)


def _few_rows_run(cfg, a, b):
    """run(a, b, out) of ``few_rows`` with ``cfg``: any strides; K split by ``few_rows_slices``, its
    slices added in a fixed order by each tile's last slice in the launch (``LAST``), or where their
    slots would pass ``SPLIT_LAST_BYTES`` in a float32 workspace by ``_sum_splits_kernel``. One row of
    a against a K-major b is this package's GEMV on W = b^T (H200, exact float32, x torch: 1.06-1.24
    against the 3-D tile's 0.78-1.09 on (1, N, K) for N, K of 4096 to 128256; on a row-major b, read
    as a column-major W, the GEMV ran 0.08-0.83 and the 3-D tile 0.69-0.93; docs/decisions/014-exact-float32-triton.md)."""
    (M, K), N = a.shape, b.shape[1]
    if _few_rows_gemv(a, b):
        gemv = _GEMV_PLANS.get((b.t(), a[0]), None, None)
        if interpreting():  # (the bfloat16 path there copies its operands by their shapes)
            return lambda a, b, out: gemv.run(b.t(), a[0], out[0])
        # b, a and out stand for W = b^T, a[0] and out[0]: the GEMV's launch takes their first
        # elements and the strides its plan keeps, so no views are made (three cost ~3 us a call)
        run = gemv.run
        return lambda a, b, out: run(b, a, out)
    bm, bk = cfg.kwargs["BLOCK_M"], cfg.kwargs["BLOCK_K"]
    bn, k_per, split = _few_rows_grid(cfg, M, N, K, sm_count(a.device))
    tiles = cdiv(N, bn) * cdiv(M, bm)
    floats = tiles * split * bm * bn
    last = split > 1 and floats * 4 <= SPLIT_LAST_BYTES
    launch = TritonLaunch(_few_rows_kernel, (tiles, 1, split), dict(BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, LAST=last),
                          dict(num_warps=cfg.num_warps))
    scalars = (M, N, K, *a.stride(), *b.stride(), k_per, M * N)
    if not last:
        return _sliced(launch, scalars + (None, None), split, M, N)
    # a split in one launch: no sum kernel and no workspace a call (the stream's hand-over pair)
    return launch.bind_handing_over(lambda flags, slots: (*scalars, flags, slots), tiles, floats, own=is_fake(a))


def _sliced(launch, scalars: tuple, split: int, M: int, N: int):
    """run(a, b, out) of ``launch(a, b, c, *scalars)``, whose K slices write ``split`` float32
    partial products of c (M x N, contiguous) into a workspace, added afterwards in a fixed order
    (``_sum_splits_kernel``); with one slice it writes out itself."""
    if split == 1:
        return launch.bind(*scalars)
    sum_launch = TritonLaunch(_sum_splits_kernel, (cdiv(M * N, 1024),),
                              dict(SPLIT_K=split, BLOCK=1024, HAS_BIAS=0), dict(num_warps=4))

    def run(a, b, out):
        ws = torch.empty((split, M, N), dtype=torch.float32, device=a.device)
        launch(a, b, ws, *scalars)
        sum_launch(ws, out, out, N, M * N, N, M * N, 0, 0)
    return run


def fma_ws_pays(a, b, out=None) -> bool:
    """Does an exact float32 product run ``fma_ws``? Where it runs at all (``fma_ws_runs``), K is 16
    of its slices (1024) or more, M is 64 or more, its programs (whole tiles and stream-K runs,
    ``fma_ws_stream_k``) fill 0.6 of the SMs and c's rows are 16-byte aligned. H100, x torch, b
    row-major / W.t(), against the best of tma_persistent and grouped (docs/decisions/014-exact-float32-triton.md):
    with stream-K it wins on few tiles where K is long: 1024x1024x4096 0.92 / 0.88 against 0.81 /
    0.69, 768x768x8192 0.93 / 0.89 against 0.47 / 0.41, 128x11008x4096 1.04 / 0.64 against 0.67 /
    0.30; at K = 1024 it ties or wins (1024^3 0.99 / 0.95 against 1.03 / 0.87); under it the TMA
    kernel wins (2048x2048x512 0.83 / 0.81 against 0.89 / 0.87; H200, seed 170: 296x50257x768 0.65 /
    0.52 against stream_k's 0.70 / 0.55, decision 061)."""
    if a.dtype != torch.float32 or tf32_allowed() or not fma_ws_runs(a.device):
        return False
    (M, K), N = a.shape, b.shape[1]
    from triton_impl import _matmul_fma as f  # (imported on first use: Gluon's import is heavy)
    if K < 16 * f.BLOCK_K or M < 64 or not _rows_fit(N, 4, out):
        return False
    sms = sm_count(a.device)
    tiles = cdiv(M, f.BLOCK_M) * cdiv(N, f.BLOCK_N)
    return 10 * fma_ws_stream_k(tiles, cdiv(K, f.BLOCK_K), sms)[3] >= 6 * sms
