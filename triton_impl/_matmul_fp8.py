"""FP8 matmul with scales: ``torch._scaled_mm``'s product, and DeepSeek-V3's block scales.

c = (a * scale_a) @ (b * scale_b): the dtypes and the scalings (per tensor, row-wise, blocks) are
``kernel_common/fp8.py``'s, shared with ``cuda_ref.scaled_mm``.

Hopper's FP8 MMA keeps too few bits of a long sum (8192^3 of e4m3 chained in its accumulator: 8e-3
of max |c|; promoted every 128 k: 2e-3, torch._scaled_mm's own). So each 128-deep slice of K is
summed apart and added to a float32 tile, as cuBLAS does unless told ``use_fast_accum`` and as
DeepGEMM does for block scales. Per tensor and row-wise, the compiler makes the promotion
(``max_num_imprecise_acc``) and the scales multiply the float32 tile once, in the epilogue; blocks
add each slice's product times its scales (b's one scale a 128-column tile, a's one a row).
``use_fast_accum`` chains the slices in the MMA's accumulator: faster, as imprecise as torch's.

One kernel, persistent, in grouped tile order: a by a descriptor of its rows, b K-major (FP8's
wgmma reads b only so; torch._scaled_mm asks the same: b = W.t() of a row-major (N, K) W),
c by masked stores. Operands a descriptor cannot read where they lie are copied (rows padded to
16 bytes; a row-major b transposed). Where the tiles fill under half the SMs (a few hundred rows
against a narrow weight), K runs in pieces, a program each (``fp8.split_runs``): each run's float32
sums are handed over through the stream's buffers and the tile's last run adds them in run order,
in the same launch.

``ws_fp8`` (``_matmul_fp8_ws.py``; variant=None's for promoted sums per tensor and row-wise past
``FEW_ROWS``): the same product in Gluon, its warpgroups partitions of their own, so that one adds
its slice while the other's MMA runs.

A few rows (``few_rows_fp8``, variant=None's up to ``FEW_ROWS``): the weight's bytes bound the
product, so blocks of 64 columns and at most 32 rows read a and b by pointers, widen them to
float16 (exactly) for the 16-bit MMAs, and take K in runs that fill the SMs, summed in one launch
(docs/decisions/051-triton-fp8-few-rows.md).
"""
from __future__ import annotations

import torch
import triton
import triton.language as tl

from kernel_common import balanced_grid, cdiv, interpreting, sm_count, tma_rows
from kernel_common.plans import Plan
from kernel_common.util import padded
from kernel_common import fp8
from kernel_common.fp8 import BLOCK, SCALE_BLOCK
from triton_impl._arch import SM_90
from triton_impl._launch import DescriptorSpec, TritonLaunch
from triton_impl._matmul_configs import tile_text
from triton_impl._matmul_fp32 import _hopper, fma_ws_runs
from triton_impl._matmul_tma import _grouped_tile

DTYPES = fp8.DTYPES
VARIANTS = ("tma_fp8", "few_rows_fp8", "ws_fp8")
# lab/sweep_fp8.py on an H200, 8192^3 / 4096^3 TFLOP/s: promoted per slice, 256 x 128 949 / 1022
# (128 x 128 853 / 916); chained, 128 x 256 1279 / 1344; block scales, 128 x 128 648 / 642 (b's
# scale one per tile). A larger tile only where its tiles fill every SM and K is as deep as there
# (LARGE_TILE_MIN_K): at 4097 x 4095 x 1000 the promoted 256 x 128 ran 137 TFLOP/s, 128 x 128 281
CONFIGS = {"promoted": triton.Config({"BLOCK_M": 256, "BLOCK_N": 128, "BLOCK_K": 128, "GROUP_M": 8}, num_warps=8,
                                     num_stages=3),
           "fast": triton.Config({"BLOCK_M": 128, "BLOCK_N": 256, "BLOCK_K": 128, "GROUP_M": 8}, num_warps=8,
                                 num_stages=3)}
CONFIG = triton.Config({"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 128, "GROUP_M": 8}, num_warps=8, num_stages=4)
# where 64-row tiles make one wave: half the rows a tile wasted past M, twice the tiles to fill the
# SMs; a wave more than 128-row tiles make costs more than that saves (decision 023)
CONFIG_FEW = triton.Config({"BLOCK_M": 64, "BLOCK_N": 128, "BLOCK_K": 128, "GROUP_M": 8}, num_warps=4, num_stages=4)
LARGE_TILE_MIN_K = 4096
# the interpreter: fewer rows, but K and N still in the 128 x 128 blocks the block scales cover
CONFIG_INTERPRETER = triton.Config({"BLOCK_M": 32, "BLOCK_N": 128, "BLOCK_K": 128, "GROUP_M": 2}, num_warps=4,
                                   num_stages=1)


@triton.jit(do_not_specialize=["programs"])
def _fp8_kernel(a_desc, b_desc, c_ptr, sa_ptr, sb_ptr, M, N, K, programs, stride_cm, stride_cn,
                stride_sam, stride_sak, stride_sbk, stride_sbn, slots_ptr, flags_ptr,
                BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,
                BLOCK_SCALES: tl.constexpr, SCALE_BLOCK: tl.constexpr, FAST_ACCUM: tl.constexpr,
                SPLIT_K: tl.constexpr):
    """Program p computes items p, p + programs, ...: each tile of c times each of SPLIT_K runs of
    K. b_desc reads b's transpose (N, K).
    Epilogue scales (BLOCK_SCALES False): scale_a[m * stride_sam] and scale_b[n * stride_sbn]
    (strides 0 for a tensor's one scale). Block scales: scale_a[m, kb] and scale_b[kb, pid_n]
    for each 128-deep slice kb of K, which is one BLOCK_K step of one 128-column tile.
    SPLIT_K > 1: each run's float32 sums go to its slot of the tile's (``slots_ptr``) and the run
    counts itself in the tile's flag; the last to count adds the slots in run order (the same bits
    whichever is last), scales, writes c and lowers the flag: one launch."""
    tl.static_assert(not BLOCK_SCALES or (BLOCK_K == SCALE_BLOCK and BLOCK_N == SCALE_BLOCK),
                     "a block scale's slice is one K step of one column tile")
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    tiles = num_pid_m * num_pid_n
    k_tiles = tl.cdiv(K, BLOCK_K)
    k_run = tl.cdiv(k_tiles, SPLIT_K)
    for item in tl.range(tl.program_id(0), tiles * SPLIT_K, programs, flatten=SPLIT_K == 1):
        if SPLIT_K == 1:  # K whole, the same bounds for every item: the compiler fuses the loops
            tile = item
            k_lo = 0
            k_hi = k_tiles
        else:
            tile = item % tiles
            run = item // tiles
            k_lo = run * k_run
            k_hi = tl.minimum(k_lo + k_run, k_tiles)
        pid_m, pid_n = _grouped_tile(tile, num_pid_m, num_pid_n, GROUP_M)
        offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
        offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        for kt in range(k_lo, k_hi):
            a = a_desc.load([pid_m * BLOCK_M, kt * BLOCK_K])
            b = b_desc.load([pid_n * BLOCK_N, kt * BLOCK_K]).T
            if BLOCK_SCALES:  # this slice's product, promoted to the float32 tile with its scales
                sa = tl.load(sa_ptr + offs_m * stride_sam + kt * stride_sak, mask=offs_m < M, other=0.0)
                sb = tl.load(sb_ptr + kt * stride_sbk + pid_n * stride_sbn)
                acc += tl.dot(a, b) * (sa * sb)[:, None]
            elif FAST_ACCUM:
                acc = tl.dot(a, b, acc)
            else:  # the slice summed apart, then added to acc in float32 (the compiler's promotion)
                acc = tl.dot(a, b, acc, max_num_imprecise_acc=BLOCK_K)
        if SPLIT_K > 1:
            _run_store(acc, tile, run, SPLIT_K, slots_ptr, flags_ptr, c_ptr, sa_ptr, sb_ptr, offs_m, offs_n, M, N,
                       stride_cm, stride_cn, stride_sam, stride_sbn, not BLOCK_SCALES, BLOCK_M, BLOCK_N, True)
        else:
            _fp8_store(acc, c_ptr, sa_ptr, sb_ptr, offs_m, offs_n, M, N, stride_cm, stride_cn, stride_sam, stride_sbn,
                       not BLOCK_SCALES)


@triton.jit
def _fp8_store(acc, c_ptr, sa_ptr, sb_ptr, offs_m, offs_n, M, N, stride_cm, stride_cn, stride_sam, stride_sbn,
               SCALED: tl.constexpr):
    """c's tile from its float32 sums; SCALED (per tensor or row-wise): times the whole sum's scales, once."""
    if SCALED:
        sa = tl.load(sa_ptr + offs_m * stride_sam, mask=offs_m < M, other=0.0)
        sb = tl.load(sb_ptr + offs_n * stride_sbn, mask=offs_n < N, other=0.0)
        acc = acc * sa[:, None] * sb[None, :]
    tl.store(c_ptr + offs_m[:, None].to(tl.int64) * stride_cm + offs_n[None, :] * stride_cn,
             acc.to(c_ptr.dtype.element_ty), mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))


@triton.jit
def _run_store(acc, tile, run, runs, slots_ptr, flags_ptr, c_ptr, sa_ptr, sb_ptr, offs_m, offs_n, M, N, stride_cm,
               stride_cn, stride_sam, stride_sbn, SCALED: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
               UNROLL: tl.constexpr):
    """One of ``runs`` runs of K of a tile: its float32 sums to its slot of the tile's, and a count
    in the tile's flag; the last to count adds the slots in run order (the same bits whichever is
    last), stores c (``_fp8_store``) and lowers the flag, in the same launch. UNROLL: ``runs`` is a
    constexpr, and the slots' loads are issued together rather than a run at a time."""
    slot = tl.arange(0, BLOCK_M)[:, None] * BLOCK_N + tl.arange(0, BLOCK_N)[None, :]
    slots = slots_ptr + tile.to(tl.int64) * runs * (BLOCK_M * BLOCK_N)
    tl.store(slots + run * (BLOCK_M * BLOCK_N) + slot, acc)
    tl.debug_barrier()  # every thread's sums stored before the count goes up
    if tl.atomic_add(flags_ptr + tile, 1, sem="acq_rel") == runs - 1:
        acc = tl.load(slots + slot, cache_modifier=".cg")
        if UNROLL:
            for r in tl.static_range(1, runs):
                acc += tl.load(slots + r * (BLOCK_M * BLOCK_N) + slot, cache_modifier=".cg")
        else:
            for r in range(1, runs):
                acc += tl.load(slots + r * (BLOCK_M * BLOCK_N) + slot, cache_modifier=".cg")
        _fp8_store(acc, c_ptr, sa_ptr, sb_ptr, offs_m, offs_n, M, N, stride_cm, stride_cn, stride_sam, stride_sbn,
                   SCALED)
        tl.store(flags_ptr + tile, 0)


@triton.jit
def _fp8_few_rows_kernel(a_ptr, bt_ptr, c_ptr, sa_ptr, sb_ptr, slots_ptr, flags_ptr, M, N, K, k_run, runs,
                         stride_am, stride_bn, stride_sam, stride_sak, stride_sbk, stride_sbn,
                         BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                         BLOCK_SCALES: tl.constexpr, RUNS: tl.constexpr):
    """BLOCK_M rows of a against BLOCK_N rows of bt (b's transpose, (N, K), K contiguous) over one
    run of K (program (n, r, m): k from r * k_run, k_run a multiple of BLOCK_K = 128). The operands
    are widened to float16, exactly (e4m3's and e5m2's values all are float16's), and multiplied on
    the 16-bit tensor cores in float32: as precise as the FP8 MMA promoted every 128 k. The weight's
    bytes bound the product, which 128-row tiles would read on few SMs. Block scales multiply each
    128-deep slice, the others the whole sum. With RUNS (``runs`` > 1) each run's sums go to its
    slot of the tile's and the run counts itself in the tile's flag; the last to count adds the
    slots in run order (the same bits whichever is last), writes c and lowers the flag: one launch."""
    pid_n, run, pid_m = tl.program_id(0), tl.program_id(1), tl.program_id(2)
    tile = pid_m * tl.num_programs(0) + pid_n
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    k0 = run * k_run
    for k in range(k0, tl.minimum(k0 + k_run, K), BLOCK_K):
        ks = k + offs_k
        a = tl.load(a_ptr + offs_m[:, None] * stride_am + ks[None, :], mask=(offs_m[:, None] < M) & (ks[None, :] < K),
                    other=0.0)
        bt = tl.load(bt_ptr + offs_n[:, None].to(tl.int64) * stride_bn + ks[None, :],
                     mask=(offs_n[:, None] < N) & (ks[None, :] < K), other=0.0)
        prod = tl.dot(a.to(tl.float16), bt.to(tl.float16).T)
        if BLOCK_SCALES:
            sa = tl.load(sa_ptr + offs_m * stride_sam + (k // BLOCK_K) * stride_sak, mask=offs_m < M, other=0.0)
            sb = tl.load(sb_ptr + (k // BLOCK_K) * stride_sbk + (offs_n // BLOCK_K) * stride_sbn, mask=offs_n < N,
                         other=0.0)
            acc += prod * sa[:, None] * sb[None, :]
        else:
            acc += prod
    if RUNS:
        _run_store(acc, tile, run, runs, slots_ptr, flags_ptr, c_ptr, sa_ptr, sb_ptr, offs_m, offs_n, M, N, N, 1,
                   stride_sam, stride_sbn, not BLOCK_SCALES, BLOCK_M, BLOCK_N, False)
    else:
        _fp8_store(acc, c_ptr, sa_ptr, sb_ptr, offs_m, offs_n, M, N, N, 1, stride_sam, stride_sbn, not BLOCK_SCALES)


# few_rows_fp8: variant=None's for at most FEW_ROWS rows (measured: arch_sm_90.json)
FEW_ROWS = SM_90["fp8_few_rows"]
FEW_ROWS_CONFIG = triton.Config({"BLOCK_N": 64, "BLOCK_K": 128}, num_warps=4, num_stages=4)
FEW_ROWS_MIN_SLICES = 4  # 128-deep slices a run of K at least
FEW_ROWS_BLOCK_M = 32  # rows of a a block at most (more rows: more blocks, each reading its tiles of b)


def _few_rows_runs(M: int, N: int, K: int, sms: int) -> int:
    """Runs of K for few_rows_fp8: its blocks to about two a SM."""
    blocks = cdiv(N, FEW_ROWS_CONFIG.kwargs["BLOCK_N"])
    return fp8.k_runs(cdiv(2 * sms, blocks), cdiv(K, SCALE_BLOCK), FEW_ROWS_MIN_SLICES)


def _few_rows_plan(a, b, scaling, scale_a, scale_b, out_dtype, sms) -> Plan:
    """few_rows_fp8: one launch of (column tiles, runs of K, row blocks) blocks, the runs' sums
    handed over through the stream's buffers (``hand_over``). a and b's transpose are read by
    pointers (any alignment); either with its inner stride not 1 is copied first."""
    (M, K), N = a.shape, b.shape[1]
    copy_a, copy_b = a.stride(1) != 1, b.t().stride(1) != 1
    runs = _few_rows_runs(M, N, K, sms)
    bm, bn = min(FEW_ROWS_BLOCK_M, max(16, triton.next_power_of_2(M))), FEW_ROWS_CONFIG.kwargs["BLOCK_N"]
    tiles, k_run = cdiv(N, bn) * cdiv(M, bm), cdiv(cdiv(K, SCALE_BLOCK), runs) * SCALE_BLOCK
    meta = dict(FEW_ROWS_CONFIG.kwargs, BLOCK_M=bm, BLOCK_SCALES=scaling == BLOCK, RUNS=runs > 1)
    launch = TritonLaunch(_fp8_few_rows_kernel, (cdiv(N, bn), runs, cdiv(M, bm)), meta,
                          dict(num_warps=FEW_ROWS_CONFIG.num_warps, num_stages=FEW_ROWS_CONFIG.num_stages))
    lda = K if copy_a else a.stride(0)
    ldb = K if copy_b else b.t().stride(0)
    sam, sak, sbk, sbn = fp8.scale_strides(scaling, scale_a, scale_b)
    # the interpreter rounds to bfloat16 its own way: a float32 c, rounded to nearest even by the copy
    upcast = interpreting() and out_dtype == torch.bfloat16
    trailing = lambda flags, slots: (slots, flags, M, N, K, k_run, runs, lda, ldb, sam, sak, sbk, sbn)  # noqa: E731
    go = (launch.bind_handing_over(trailing, tiles, tiles * runs * bm * bn) if runs > 1
          else launch.bind(*trailing(None, None)))

    def run(a, b, scale_a, scale_b, out):
        a = a.contiguous() if copy_a else a
        bt = b.t().contiguous() if copy_b else b.t()
        c = torch.empty((M, N), dtype=torch.float32, device=a.device) if upcast else out
        go(a, bt, c, scale_a, scale_b)
        if upcast:
            out.copy_(c)
    return Plan((M, N), out_dtype, a.device, run, fp8.NAMES, traceable=False)


def _config(M: int, N: int, K: int, scaling: str, fast_accum: bool, mixed: bool, sms: int) -> triton.Config:
    """64 x 128 where those tiles make at most one wave (any scaling; a and b of one dtype, as
    measured). Block scales: 128 x 128 (one of b's scales a tile). Else the sweep's faster tile for
    the accumulation asked, where its tiles fill every SM and K is at least LARGE_TILE_MIN_K;
    128 x 128 elsewhere, and where a and b differ (e4m3 times e5m2 takes a conversion buffer the
    larger tiles' stages leave no room for: 272 KiB of shared memory)."""
    if interpreting():
        return CONFIG_INTERPRETER
    if not mixed and _tiles(M, N, CONFIG_FEW) <= sms:
        return CONFIG_FEW
    cfg = CONFIGS["fast" if fast_accum else "promoted"]
    large = scaling != BLOCK and not mixed and _tiles(M, N, cfg) >= sms and K >= LARGE_TILE_MIN_K
    return cfg if large else CONFIG


def _plan(inputs, variant, out, out_dtype, fast_accum) -> Plan:
    scaling, empty = fp8.plan_start(inputs, variant, VARIANTS, out, out_dtype, need_cuda=not interpreting())
    if empty is not None:
        return empty
    a, b, scale_a, scale_b = inputs
    (M, K), N = a.shape, b.shape[1]
    if not _hopper(a.device):
        raise ValueError("scaled_mm needs a Hopper GPU (FP8 tensor cores, TMA)")
    sms = 4 if interpreting() else sm_count(a.device)
    variant = variant or pick_variant(a, b, scale_a, scale_b, use_fast_accum=fast_accum)
    if variant == "few_rows_fp8":
        return _few_rows_plan(a, b, scaling, scale_a, scale_b, out_dtype, sms)
    if variant == "ws_fp8":
        from triton_impl import _matmul_fp8_ws  # (imported on first use: Gluon's import is heavy)
        return _matmul_fp8_ws.plan(a, b, scaling, scale_a, scale_b, out_dtype, fast_accum, sms)
    return _tma_plan(a, b, scaling, scale_a, scale_b, out_dtype, fast_accum, sms)


def _tiles(M: int, N: int, cfg: triton.Config) -> int:
    """c's tiles in ``cfg``'s blocks."""
    return cdiv(M, cfg.kwargs["BLOCK_M"]) * cdiv(N, cfg.kwargs["BLOCK_N"])


def _split_runs(M: int, N: int, K: int, cfg: triton.Config, sms: int) -> int:
    """Runs of K for tma_fp8 (``fp8.split_runs``)."""
    return fp8.split_runs(_tiles(M, N, cfg), cdiv(K, cfg.kwargs["BLOCK_K"]), sms)


def _tma_plan(a, b, scaling, scale_a, scale_b, out_dtype, fast_accum, sms, cfg=None, runs=None) -> Plan:
    """tma_fp8: ``cfg``'s tiles (default ``_config``'s), K in ``runs`` runs (default
    ``_split_runs``') handed over in one launch through the stream's buffers."""
    (M, K), N = a.shape, b.shape[1]
    bt = b.t()  # (N, K): what the kernel's descriptor reads
    copy_a, copy_b = not tma_rows(a), not tma_rows(bt)
    a_meta = padded(M, K, a.dtype, "meta") if copy_a else a
    bt_meta = padded(N, K, b.dtype, "meta") if copy_b else bt
    cfg = cfg or _config(M, N, K, scaling, fast_accum, a.dtype != b.dtype, sms)
    runs = runs or _split_runs(M, N, K, cfg, sms)
    bm, bn, bk = (cfg.kwargs[k] for k in ("BLOCK_M", "BLOCK_N", "BLOCK_K"))
    tiles = _tiles(M, N, cfg)
    programs = balanced_grid(tiles * runs, sms)
    meta = dict(cfg.kwargs, BLOCK_SCALES=scaling == BLOCK, SCALE_BLOCK=SCALE_BLOCK, FAST_ACCUM=fast_accum,
                SPLIT_K=runs)
    launch = TritonLaunch(_fp8_kernel, (programs,), meta, dict(num_warps=cfg.num_warps, num_stages=cfg.num_stages),
                          descriptors=(DescriptorSpec((M, K), (a_meta.stride(0), 1), (bm, bk)),
                                       DescriptorSpec((N, K), (bt_meta.stride(0), 1), (bn, bk))))
    strides = fp8.scale_strides(scaling, scale_a, scale_b)
    # the interpreter rounds to bfloat16 its own way: a float32 c, rounded to nearest even by the copy
    upcast = interpreting() and out_dtype == torch.bfloat16
    trailing = lambda flags, slots: (M, N, K, programs, N, 1, *strides, slots, flags)  # noqa: E731  (c contiguous)
    go = (launch.bind_handing_over(trailing, tiles, tiles * runs * bm * bn) if runs > 1
          else launch.bind(*trailing(None, None)))

    def run(a, b, scale_a, scale_b, out):
        a, bt = fp8.kmajor_operands(a, b, copy_a, copy_b)
        c = torch.empty((M, N), dtype=torch.float32, device=a.device) if upcast else out
        go(a, bt, c, scale_a, scale_b)
        if upcast:
            out.copy_(c)
    return Plan((M, N), out_dtype, a.device, run, fp8.NAMES, traceable=False)


_PLANS = fp8.plan_caches(_plan)


def pick_variant(a, b, scale_a, scale_b, out=None, use_fast_accum=False) -> str:
    """few_rows_fp8 for at most FEW_ROWS rows of a; past them ws_fp8 for slices promoted per tensor
    or row-wise where Gluon runs (``fma_ws_runs``) and tma_fp8's tiles make more than one wave, else
    tma_fp8 (chained sums and block scales: tma_fp8 ran faster chained, ws_fp8's block scales are
    not yet timed; within one wave tma_fp8's 64-row tiles and K split, which ws_fp8 lacks, fill
    the SMs). H200, seed 240's
    draw past 64 rows (66 shapes a scaling), x torch._scaled_mm flushed: per tensor 0.72 against
    tma_fp8's 0.60, row-wise 0.86 against 0.70; a rule by K (ws_fp8 from 2304) read the same
    (docs/decisions/023-fp8-scaled-matmul.md)."""
    (M, K), N = a.shape, b.shape[1]
    if M <= FEW_ROWS:
        return "few_rows_fp8"
    scaling = fp8.scaling(a, b, scale_a, scale_b)
    if use_fast_accum or scaling == BLOCK or not fma_ws_runs(a.device):
        return "tma_fp8"
    sms = sm_count(a.device)
    cfg = _config(M, N, K, scaling, False, a.dtype != b.dtype, sms)
    return "tma_fp8" if _tiles(M, N, cfg) <= sms else "ws_fp8"


def describe(a, b, scale_a, scale_b, variant=None, use_fast_accum=False) -> str:
    """The variant, the scaling its scales say, and the tile (few_rows_fp8: its runs of K)."""
    scaling = fp8.scaling(a, b, scale_a, scale_b)
    sms = 4 if interpreting() else sm_count(a.device)
    variant = variant or pick_variant(a, b, scale_a, scale_b, use_fast_accum=use_fast_accum)
    if variant == "few_rows_fp8":
        return f"{variant} {scaling} scales, {_few_rows_runs(a.shape[0], b.shape[1], a.shape[1], sms)} runs of K"
    if variant == "ws_fp8":
        from triton_impl._matmul_fp8_ws import WG_M, consumers_for
        consumers = consumers_for(bool(use_fast_accum) and scaling != BLOCK)
        return f"{variant} {scaling} scales {consumers * WG_M}x128x128, {consumers} consumer warpgroups"
    (M, K), N = a.shape, b.shape[1]
    cfg = _config(M, N, K, scaling, use_fast_accum, a.dtype != b.dtype, sms)
    runs = _split_runs(M, N, K, cfg, sms)
    return f"{variant} {scaling} scales {tile_text(cfg)}" + (f", {runs} runs of K" if runs > 1 else "")


def scaled_mm(a: torch.Tensor, b: torch.Tensor, scale_a: torch.Tensor, scale_b: torch.Tensor, *,
              out_dtype: torch.dtype = torch.bfloat16, use_fast_accum: bool = False, variant: str | None = None,
              out: torch.Tensor | None = None) -> torch.Tensor:
    """c (M, N) = (a * scale_a) @ (b * scale_b), ``torch._scaled_mm``'s product, and block scales.

    ``a`` (M, K) and ``b`` (K, N): float8_e4m3fn, or one of them float8_e5m2; any strides (b read
    K-major, as ``W.t()`` of a row-major (N, K) W lies; other layouts are copied first). Scales
    (float32): per tensor (one element each), row-wise (scale_a (M, 1), scale_b (1, N)), or blocks
    (scale_a (M, ceil(K/128)): 1 x 128; scale_b (ceil(K/128), ceil(N/128)): 128 x 128), each
    128-deep slice's product then added in float32. ``out_dtype`` bfloat16 or float32. Each
    128-deep slice is summed in float32 (as torch's); ``use_fast_accum=True`` chains per-tensor and
    row-wise slices in the MMA's accumulator instead (torch's flag: faster, fewer bits). A Hopper
    GPU (CPU tensors under ``TRITON_INTERPRET=1``)."""
    fp8.check_out_dtype(out_dtype)
    return _PLANS[out_dtype, bool(use_fast_accum)]((a, b, scale_a, scale_b), variant, out)
