"""Matmul's TMA family in Triton: the persistent kernel (tutorial 09's road: host-side tensor
descriptors, at most one program per SM), split-K's fixed-order sum of slices, the copies that give
a descriptor 16-byte rows or the layout it reads, and the plan's run over them. Also the tile
helpers every matmul kernel shares: the grouped tile order and the bias epilogue (the switch's
addmm). ``_matmul`` picks and plans; this module builds the TMA variants' runs.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from kernel_common import balanced_grid, base_phase, cdiv, matmul_out_dtype, padded, sm_count, tma_rows
from kernel_common.plans import PlanOnce, per_plan
from triton_impl._arch import SM_90
from triton_impl._launch import DescriptorSpec, TritonLaunch
from triton_impl._transpose import _PLANS as _TRANSPOSE_PLANS


@triton.jit
def _grouped_tile(tile, num_pid_m, num_pid_n, GROUP_M: tl.constexpr):
    """(pid_m, pid_n) of the tile numbered ``tile`` in grouped order: GROUP_M rows of tiles walked
    column by column, so the tiles in flight at once share a few rows of a and columns of b in L2."""
    num_pid_in_group = GROUP_M * num_pid_n
    first_pid_m = (tile // num_pid_in_group) * GROUP_M
    group_size_m = min(num_pid_m - first_pid_m, GROUP_M)
    pid_m = first_pid_m + (tile % num_pid_in_group) % group_size_m
    pid_n = (tile % num_pid_in_group) // group_size_m
    return pid_m, pid_n


@triton.jit
def _plus_bias(c, bias_ptr, offs_m, offs_n, M, N, stride_biasm, stride_biasn, HAS_BIAS: tl.constexpr):
    """The epilogue's bias (the switch's addmm): c (float32) + the bias broadcast to the tile, added
    before c's one rounding. HAS_BIAS 1: a row of N (nn.Linear's), loaded once as a vector; 2: any
    shape that broadcasts (stride 0 along a broadcast dimension), loaded as a tile (its layout
    conversion takes shared memory: ``bias_stages``)."""
    if HAS_BIAS == 1:
        bias = tl.load(bias_ptr + offs_n * stride_biasn, mask=offs_n < N, other=0)
        return c + bias.to(tl.float32)[None, :]
    bias = tl.load(bias_ptr + offs_m[:, None].to(tl.int64) * stride_biasm + offs_n[None, :] * stride_biasn,
                   mask=(offs_m[:, None] < M) & (offs_n[None, :] < N), other=0)
    return c + bias.to(tl.float32)


def bias_mode(bias_strides) -> int:
    """The kernels' HAS_BIAS for a bias read with ``bias_strides`` (None: no bias)."""
    return 0 if bias_strides is None else 1 if bias_strides[0] == 0 else 2


SHARED_BYTES = 227 * 1024  # the shared memory one block may use on sm_90


# the most a split's slices keep in the stream's hand-over buffers (``hand_over`` keeps its largest
# for the stream's later calls): a split pays on products of about a wave of tiles (a wave of
# 128 x 256 tiles in 4 slices: 69 MB)
SPLIT_LAST_BYTES = 80 << 20
# a one-launch split's tile sum: the last slice reads the tile's slices back on one SM
# (arch_sm_90.json), where a second launch adds every tile's at once after a fixed cost
_SUM_SM_BYTES_PER_S, _SECOND_LAUNCH_S = SM_90["split_last_sm_bytes_per_s"], SM_90["tma_model"]["split_s"]


def split_sum_seconds(kw: dict) -> float:
    """The one-launch split's tile sum: its float32 slices read back on one SM."""
    return kw["SPLIT_K"] * kw["BLOCK_M"] * kw["BLOCK_N"] * 4 / _SUM_SM_BYTES_PER_S


def split_last_of(kw: dict, M: int, N: int) -> bool:
    """Does a split config hand its slices over in one launch (``SPLIT_LAST``)? Where its tile's
    sum on one SM takes less than a second launch's fixed time (128 x 256 tiles in 4 slices: 8.4
    us against 3.4; 64 x 64 in 3: 0.8) and the slots stay under ``SPLIT_LAST_BYTES`` (not N_TAIL's)."""
    bm, bn, split = kw["BLOCK_M"], kw["BLOCK_N"], kw["SPLIT_K"]
    return (split > 1 and not kw.get("N_TAIL") and split_sum_seconds(kw) <= _SECOND_LAUNCH_S
            and cdiv(M, bm) * cdiv(N, bn) * split * bm * bn * 4 <= SPLIT_LAST_BYTES)


def shared_bytes(cfg, element_size: int, split: int = 1, stages: int | None = None) -> int:
    """The TMA kernel's shared memory for ``cfg`` (``stages`` of them, else its own): its stages of a
    and b, and the epilogue's c tile (float32 where K is split in ``split``), half of it where the
    epilogue stores halves."""
    kw = cfg.kwargs
    bm, bn = kw["BLOCK_M"], kw["BLOCK_N"]
    c_tile = bm * bn * (4 if split > 1 else element_size) // (2 if kw["EPILOGUE_SUBTILE"] else 1)
    return (cfg.num_stages if stages is None else stages) * (bm + bn) * kw["BLOCK_K"] * element_size + c_tile


def bias_stages(cfg, element_size: int, mode: int) -> int:
    """The TMA kernel's stages with a bias tile (mode 2): as many as fit ``SHARED_BYTES`` beside the
    epilogue's c tile and the bias tile's layout conversion (BLOCK_M x BLOCK_N float32), which
    triton 3.6 keeps in shared memory. One stage fewer was not enough there: 128 x 128 x 64 in 6
    stages took 245800 bytes in 5 (tests/test_triton_compile.py compiles every config)."""
    kw = cfg.kwargs
    stages = cfg.num_stages
    if mode == 2:
        while stages > 2 and shared_bytes(cfg, element_size, stages=stages) + kw["BLOCK_M"] * kw["BLOCK_N"] * 4 \
                + 1024 > SHARED_BYTES:
            stages -= 1
    return stages


# Stream-K's shares: each program's at least this many k-slices (a pipeline's few stages deep). A
# last wave whose tiles' slices are too few for that is shared together with the wave before it.
SK_MIN_SLICES = 8


def stream_k_plan(tiles: int, k_tiles: int, sms: int) -> tuple[int, int]:
    """(programs, shared tiles) of the TMA kernel's stream-K (``STREAM_K``) over ``tiles`` tiles of
    ``k_tiles`` k-slices on ``sms`` SMs: the tiles past whole waves of ``sms`` programs (with the
    wave before them where they alone give a program fewer than SK_MIN_SLICES slices), or in a
    single wave all of them, on as many programs as keep SK_MIN_SLICES each. (programs, 0): none
    shared (whole waves, or too few slices to share)."""
    if tiles <= sms:
        programs = min(sms, tiles * k_tiles // SK_MIN_SLICES)
        return (programs, tiles) if programs > tiles else (tiles, 0)
    tail = tiles % sms
    if not tail:
        return sms, 0
    return sms, tail if tail * k_tiles >= SK_MIN_SLICES * sms else tail + sms


def stream_k_of(kw: dict, M: int, N: int, K: int, sms: int) -> tuple[int, int]:
    """``stream_k_plan`` for a config's tiles (its kwargs ``kw``) over an M x N x K product."""
    return stream_k_plan(cdiv(M, kw["BLOCK_M"]) * cdiv(N, kw["BLOCK_N"]), cdiv(K, kw["BLOCK_K"]), sms)


# ---------------------------------------------------------------------------------------------
# TMA, persistent: tutorial 09's road (host-side tensor descriptors, at most one program per SM)
# ---------------------------------------------------------------------------------------------
@triton.jit
def _k_steps(a_desc, b_desc, b_tail_desc, acc, acc_tail, off_m, off_n, k_lo, k_hi, BLOCK_K: tl.constexpr,
             N_HEAD: tl.constexpr, N_TAIL: tl.constexpr, SWAP_AB: tl.constexpr, A_T: tl.constexpr,
             B_T: tl.constexpr, INPUT_PRECISION: tl.constexpr):
    """(acc, acc_tail) plus the tile's products over k-slices [k_lo, k_hi): b's N_HEAD columns, N_TAIL after."""
    for kt in range(k_lo, k_hi):
        off_k = kt * BLOCK_K
        a = a_desc.load([off_k, off_m]).T if A_T else a_desc.load([off_m, off_k])
        b = b_desc.load([off_n, off_k]).T if B_T else b_desc.load([off_k, off_n])
        acc = tl.dot(b.T, a.T, acc, input_precision=INPUT_PRECISION, out_dtype=acc.dtype) if SWAP_AB \
            else tl.dot(a, b, acc, input_precision=INPUT_PRECISION, out_dtype=acc.dtype)
        if N_TAIL:
            bt = b_tail_desc.load([off_n + N_HEAD, off_k]).T if B_T else b_tail_desc.load([off_k, off_n + N_HEAD])
            acc_tail = tl.dot(bt.T, a.T, acc_tail, input_precision=INPUT_PRECISION, out_dtype=acc.dtype) if SWAP_AB \
                else tl.dot(a, bt, acc_tail, input_precision=INPUT_PRECISION, out_dtype=acc.dtype)
    return acc, acc_tail


@triton.jit
def _store_tile(c, c_desc, bias_ptr, off_m, off_n, row, M, N, stride_biasm, stride_biasn,
                BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, EPILOGUE_SUBTILE: tl.constexpr,
                C_PTR: tl.constexpr, HAS_BIAS: tl.constexpr):
    """The epilogue: c's tile (its sums, BLOCK_M x BLOCK_N) plus the bias, rounded once to c's type
    and written at (row, off_n) of c_desc (a split's workspace row), or by masked stores (C_PTR)."""
    c_type = c_desc.dtype.element_ty if C_PTR else c_desc.dtype
    if HAS_BIAS:
        c = _plus_bias(c, bias_ptr, off_m + tl.arange(0, BLOCK_M), off_n + tl.arange(0, BLOCK_N), M, N,
                       stride_biasm, stride_biasn, HAS_BIAS)
    c = c.to(c_type)
    if C_PTR:
        offs_m = off_m + tl.arange(0, BLOCK_M)
        offs_n = off_n + tl.arange(0, BLOCK_N)
        tl.store(c_desc + offs_m[:, None].to(tl.int64) * N + offs_n[None, :], c,
                 mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))
    elif EPILOGUE_SUBTILE:  # two half-width stores: half the shared memory for the epilogue
        c0, c1 = c.reshape(BLOCK_M, 2, BLOCK_N // 2).permute(0, 2, 1).split()
        c_desc.store([row, off_n], c0)
        c_desc.store([row, off_n + BLOCK_N // 2], c1)
    else:
        c_desc.store([row, off_n], c)


@triton.jit
def _share_start(p, total, programs):
    """The first of program p's k-slices when ``programs`` share ``total`` evenly (in order)."""
    return p * (total // programs) + tl.minimum(p, total % programs)


@triton.jit(do_not_specialize=["programs", "sk_tiles"])
def _tma_persistent_kernel(
    # Tensor descriptors (made on the host, one per call): a, b and c as the kernel reads them
    a_desc, b_desc, b_tail_desc, c_desc,
    # the epilogue's bias, read only with HAS_BIAS
    bias_ptr,
    # Sizes
    M, N, K,
    # the grid's programs: a runtime argument, since ``balanced_grid`` sizes it by the shape (a
    # constexpr would compile once per size)
    programs,
    stride_biasm, stride_biasn,
    # stream-K (STREAM_K): the last sk_tiles tiles' k-slices shared by all the programs, and the
    # buffers through which they hand their sums over (a tile's float32 slot and a flag a program;
    # without STREAM_K any tensor, unread)
    sk_tiles, slots_ptr, flags_ptr,
    # Meta-parameters
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,
    SPLIT_K: tl.constexpr, SWAP_AB: tl.constexpr, EPILOGUE_SUBTILE: tl.constexpr,
    A_T: tl.constexpr, B_T: tl.constexpr, INPUT_PRECISION: tl.constexpr, INT_SUMS: tl.constexpr,
    C_PTR: tl.constexpr = False, FUSE_K: tl.constexpr = False, HAS_BIAS: tl.constexpr = 0,
    STREAM_K: tl.constexpr = False, SPLIT_LAST: tl.constexpr = False, N_TAIL: tl.constexpr = 0,
):
    """``programs`` programs loop over the work items: every BLOCK_M x BLOCK_N tile of c, times SPLIT_K
    slices of K. Operands come in by TMA: ``A_T`` / ``B_T`` say a / b are read through a
    descriptor of their transpose (a column-major a; b = W.t() of a row-major (N, K) W), whose
    tiles are transposed in shared memory for free. With SPLIT_K > 1, c_desc is a float32
    workspace holding each slice's partial tile at rows split * (padded M) + m, summed after; or,
    with ``SPLIT_LAST``, c itself: each slice's partial tile goes to its slot of ``slots_ptr`` and
    the slice counts itself in its tile's flag (``flags_ptr``); the tile's last slice to count adds
    the slots in slice order (the same bits whichever is last), writes c and lowers the flag. One
    launch, no workspace a call (two launches and an allocation cost a small call about 10 us of
    host time, docs/decisions/036-triton-fitted-tma-model.md).
    ``SWAP_AB`` computes the tile of c^T = b^T a^T: M sits in the MMA's narrow N slot (few-row
    products). (It does not make a row-major float32 b the K-major operand a TF32 wgmma needs:
    0.21x cuBLAS with or without it, H200; the plan copies b K-major instead.)
    ``C_PTR``: c_desc is c's pointer (contiguous, N wide), written by masked stores: for a c whose
    rows no descriptor can write (not 16-byte aligned), with SPLIT_K = 1 or SPLIT_LAST.
    ``FUSE_K``: every item's K loop has the same bounds (SPLIT_K = 1), so ``flatten`` fuses the
    item and K loops into one software pipeline: the next tile's first loads are in flight during
    this tile's epilogue (with bounds computed per item the loops stay nested, and each tile waits
    for its first loads). Off where a program has one item (nothing to overlap) and for masked
    stores of c (fused, their layout conversion cannot reuse the stages' shared memory), and for tiles
    of two parts (fused ran them 1.2-2x slower). Measured in docs/decisions/012 and 062.
    ``HAS_BIAS``: c = a b + bias, added to the float32 tile before its one rounding (SPLIT_K = 1 or
    SPLIT_LAST; split in two launches, the sum of the slices adds it).
    ``N_TAIL``: a tile BLOCK_N wide, no power of two (192 = 128 + 64): two dots a k-slice, over b's first
    BLOCK_N - N_TAIL columns (b_desc) and the N_TAIL after (b_tail_desc); c in pieces N_TAIL wide (062).
    ``STREAM_K`` (SPLIT_K = 1): the tiles before the last ``sk_tiles`` run whole, the same count for
    every program; then the k-slices of the last ones, in tile order, are cut into ``programs``
    even shares (``_share_start``). A program walks its share from its end: a tile it ends inside
    (its last part elsewhere) is its first piece of work, whose sums go to its slot, its flag
    raised; a tile whose last part it holds is finished by it, adding the slots of the lower
    programs that hold the tile's earlier parts, in order, each once its flag is up (and lowered
    again for the next call). Those programs did that part first and the finisher does its part
    last, so it rarely waits; and it waits only on lower programs, which the interpreter has run
    before it. Every program must be resident at once: the grid is at most the SMs. (Measured
    against the default and split K in docs/decisions/037-triton-stream-k.md: not the default.)"""
    tl.static_assert(SPLIT_K == 1 or not FUSE_K, "FUSE_K runs every item over all of K")
    tl.static_assert(SPLIT_K == 1 or SPLIT_LAST or not HAS_BIAS, "a split's bias goes to the sum of its slices")
    tl.static_assert(SPLIT_K == 1 or not STREAM_K, "stream-K shares the slices of whole tiles")
    tl.static_assert(N_TAIL == 0 or (EPILOGUE_SUBTILE and 3 * N_TAIL == BLOCK_N and not (SPLIT_LAST or STREAM_K)))
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    num_tiles = num_pid_m * num_pid_n
    k_tiles = tl.cdiv(K, BLOCK_K)
    k_per_split = tl.cdiv(k_tiles, SPLIT_K)
    N_HEAD: tl.constexpr = BLOCK_N - N_TAIL
    acc_shape: tl.constexpr = (N_HEAD, BLOCK_M) if SWAP_AB else (BLOCK_M, N_HEAD)
    tail_shape: tl.constexpr = (N_TAIL, BLOCK_M) if SWAP_AB else (BLOCK_M, N_TAIL)
    acc_type: tl.constexpr = (c_desc.dtype.element_ty if C_PTR else c_desc.dtype) if INT_SUMS else tl.float32
    whole_items = num_tiles * SPLIT_K - sk_tiles if STREAM_K else num_tiles * SPLIT_K
    # TMA clips out-of-bounds reads to zero and out-of-bounds writes to nothing: edge tiles and a
    # K tail need no masks
    if SPLIT_LAST or STREAM_K:
        slot = tl.arange(0, BLOCK_M)[:, None] * BLOCK_N + tl.arange(0, BLOCK_N)[None, :]
    # flatten: with FUSE_K the K loops of consecutive items form one software pipeline (loads of
    # the next tile overlap the epilogue of this one)
    for item in tl.range(tl.program_id(0), whole_items, programs, flatten=True):
        pid_m, pid_n = _grouped_tile(item % num_tiles, num_pid_m, num_pid_n, GROUP_M)
        off_m = pid_m * BLOCK_M
        off_n = pid_n * BLOCK_N
        if FUSE_K:  # K whole, the same bounds for every item: the compiler fuses the loops
            split = 0
            k_lo = 0
            k_hi = k_tiles
        else:
            split = item // num_tiles
            k_lo = split * k_per_split
            k_hi = min(k_lo + k_per_split, k_tiles)
        acc, acc_tail = _k_steps(a_desc, b_desc, b_tail_desc, tl.zeros(acc_shape, dtype=acc_type),
                                 tl.zeros(tail_shape, dtype=acc_type) if N_TAIL else 0, off_m, off_n, k_lo, k_hi,
                                 BLOCK_K, N_HEAD, N_TAIL, SWAP_AB, A_T, B_T, INPUT_PRECISION)
        if SPLIT_LAST:
            tile = item % num_tiles
            slots = slots_ptr + tile.to(tl.int64) * (SPLIT_K * BLOCK_M * BLOCK_N)
            tl.store(slots + split * (BLOCK_M * BLOCK_N) + slot, acc.T if SWAP_AB else acc)
            tl.debug_barrier()  # every thread's sums stored before the count goes up
            if tl.atomic_add(flags_ptr + tile, 1, sem="acq_rel") == SPLIT_K - 1:
                c = tl.load(slots + slot, cache_modifier=".cg")
                for s in tl.static_range(1, SPLIT_K):
                    c += tl.load(slots + s * (BLOCK_M * BLOCK_N) + slot, cache_modifier=".cg")
                _store_tile(c, c_desc, bias_ptr, off_m, off_n, off_m, M, N, stride_biasm, stride_biasn,
                            BLOCK_M, BLOCK_N, EPILOGUE_SUBTILE, C_PTR, HAS_BIAS)
                tl.store(flags_ptr + tile, 0)
        else:
            row = split * (num_pid_m * BLOCK_M) + off_m
            _store_tile(acc.T if SWAP_AB else acc, c_desc, bias_ptr, off_m, off_n, row, M, N, stride_biasm,
                        stride_biasn, BLOCK_M, N_HEAD, EPILOGUE_SUBTILE, C_PTR, HAS_BIAS)
            if N_TAIL:
                _store_tile(acc_tail.T if SWAP_AB else acc_tail, c_desc, bias_ptr, off_m, off_n + N_HEAD, row, M, N,
                            stride_biasm, stride_biasn, BLOCK_M, N_TAIL, False, C_PTR, HAS_BIAS)
    if STREAM_K:
        pid = tl.program_id(0)
        total = sk_tiles * k_tiles
        start = _share_start(pid, total, programs)
        hi = _share_start(pid + 1, total, programs)
        while hi > start:
            t = (hi - 1) // k_tiles
            t_lo = t * k_tiles
            lo = tl.maximum(start, t_lo)
            pid_m, pid_n = _grouped_tile(whole_items + t, num_pid_m, num_pid_n, GROUP_M)
            off_m = pid_m * BLOCK_M
            off_n = pid_n * BLOCK_N
            acc, _ = _k_steps(a_desc, b_desc, b_tail_desc, tl.zeros(acc_shape, dtype=tl.float32), 0, off_m, off_n,
                              lo - t_lo, hi - t_lo, BLOCK_K, N_HEAD, 0, SWAP_AB, A_T, B_T, INPUT_PRECISION)
            c = acc.T if SWAP_AB else acc
            if hi < t_lo + k_tiles:  # the tile's last part is another's: hand the sums over
                tl.store(slots_ptr + pid.to(tl.int64) * (BLOCK_M * BLOCK_N) + slot, c)
                tl.debug_barrier()  # every thread's sums stored before the flag goes up
                tl.atomic_xchg(flags_ptr + pid, 1, sem="release")
            else:
                holder = pid
                while _share_start(holder, total, programs) > t_lo:  # lower programs hold earlier parts
                    holder -= 1
                    while tl.atomic_cas(flags_ptr + holder, 1, 0, sem="acquire") != 1:
                        pass
                    c += tl.load(slots_ptr + holder.to(tl.int64) * (BLOCK_M * BLOCK_N) + slot, cache_modifier=".cg")
                _store_tile(c, c_desc, bias_ptr, off_m, off_n, off_m, M, N, stride_biasm, stride_biasn,
                            BLOCK_M, BLOCK_N, EPILOGUE_SUBTILE, C_PTR, HAS_BIAS)
            hi = lo


@triton.jit
def _sum_splits_kernel(ws_ptr, c_ptr, bias_ptr, N, MN, ws_row, split_stride, stride_biasm, stride_biasn,
                       SPLIT_K: tl.constexpr, BLOCK: tl.constexpr, HAS_BIAS: tl.constexpr):
    """c = the sum of the SPLIT_K partial products, added in a fixed order (split 0 first): the
    result is the same bit for bit on every run, which atomics would not promise. HAS_BIAS: the
    bias last, before the one rounding."""
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < MN
    row, col = offs // N, offs % N
    src = ws_ptr + row * ws_row + col
    acc = tl.load(src, mask=mask)
    for s in tl.static_range(1, SPLIT_K):
        acc += tl.load(src + s * split_stride, mask=mask)
    if HAS_BIAS:
        acc += tl.load(bias_ptr + row * stride_biasm + col * stride_biasn, mask=mask, other=0).to(tl.float32)
    tl.store(c_ptr + offs, acc.to(c_ptr.dtype.element_ty), mask=mask)


@triton.jit
def _copy_tile(src, dst, rows, cols, s_row, s_col, d_row, tile, BLOCK_R: tl.constexpr, BLOCK_C: tl.constexpr):
    """Tile ``tile`` (row-major order) of ``_pad_copy_kernel``'s copy of src into dst."""
    tiles_c = tl.cdiv(cols, BLOCK_C)
    r = (tile // tiles_c).to(tl.int64) * BLOCK_R + tl.arange(0, BLOCK_R)
    c = (tile % tiles_c).to(tl.int64) * BLOCK_C + tl.arange(0, BLOCK_C)
    mask = (r[:, None] < rows) & (c[None, :] < cols)
    v = tl.load(src + r[:, None] * s_row + c[None, :] * s_col, mask=mask)
    tl.store(dst + r[:, None] * d_row + c[None, :], v, mask=mask)


@triton.jit
def _pad_copy_kernel(src0, dst0, rows0, cols0, s0_row, s0_col, d0_row,
                     src1, dst1, rows1, cols1, s1_row, s1_col, d1_row, tiles0,
                     BLOCK_R: tl.constexpr, BLOCK_C: tl.constexpr):
    """Two copies in one launch (the programs below ``tiles0`` make the first): each of a strided
    (rows, cols) array into a row-major one of row stride d_row, where a descriptor reads it."""
    tile = tl.program_id(0)
    if tile < tiles0:
        _copy_tile(src0, dst0, rows0, cols0, s0_row, s0_col, d0_row, tile, BLOCK_R, BLOCK_C)
    else:
        _copy_tile(src1, dst1, rows1, cols1, s1_row, s1_col, d1_row, tile - tiles0, BLOCK_R, BLOCK_C)


# ---- TMA eligibility: what a descriptor needs --------------------------------------------------
@per_plan  # (a plan asks about each operand about seven times)
def _tma_transposed(t) -> bool | None:
    """How a descriptor reads the 2-D ``t``: False as it is (unit stride along a row), True
    through its transpose (unit stride along a column), None if TMA cannot (``tma_rows`` of
    neither)."""
    if tma_rows(t):
        return False
    if tma_rows(t.t()):
        return True
    return None


def _rows_fit(N: int, element_size: int, out) -> bool:
    """Can a descriptor write c (contiguous, N wide) where it lies: rows a multiple of 16 bytes,
    a 16-byte aligned base?"""
    return (N * element_size) % 16 == 0 and (out is None or base_phase(out) == 0)


def _c_size(a) -> int:
    """Bytes of an element of c (int8 products are int32)."""
    return matmul_out_dtype(a.dtype).itemsize


def _tma_ok(a, b, out) -> bool:
    """Do descriptors read a and b and write c where they lie? (The TMA variants copy what they
    cannot; ``variant=None`` then runs ``grouped`` instead.)"""
    return (_rows_fit(b.shape[1], _c_size(a), out)
            and _tma_transposed(a) is not None and _tma_transposed(b) is not None)


class _LayoutCopy:
    """Copies of an operand of t's metadata (R, C) laid out row-major, or column-major (the .t() of
    a row-major (C, R): a K-major b), rows padded to 16 bytes; ``meta``: the copy's layout on the
    meta device. A change of layout runs this package's transpose (torch's copy of a transposed
    view ran at a third of its speed, H200), its plan looked up on the first call and kept: the
    public call's key and checks cost a matmul with b = W.t() 4-15 us of host time a call (H100
    host, float32, 1024x1024x1024 to 16x4096x4096; docs/decisions/012-triton-matmul-selection.md)."""

    def __init__(self, t, kmajor: bool):
        R, C = t.shape
        self.kmajor, self.rows, self.cols, self.dtype = kmajor, *((C, R) if kmajor else (R, C)), t.dtype
        self.meta = self._laid_out(padded(self.rows, self.cols, t.dtype, "meta"))
        self._transposed = PlanOnce(_TRANSPOSE_PLANS)  # (one key: the operand's metadata is the matmul plan's)

    def _laid_out(self, buf):
        return buf.t() if self.kmajor else buf

    def __call__(self, t) -> torch.Tensor:
        buf = padded(self.rows, self.cols, self.dtype, t.device)
        src = t.t() if self.kmajor else t
        if buf.is_contiguous() and src.stride(0) == 1:  # src is a transposed view: transpose it back
            self._transposed(src.t(), out=buf)  # (buf is new: no alias to check)
        else:
            buf.copy_(src)
        return self._laid_out(buf)


def _unaligned(a, b) -> bool:
    """Does no descriptor read a or b where it lies (rows off 16 bytes, or no unit stride)?"""
    return _tma_transposed(a) is None or _tma_transposed(b) is None


def _major(t) -> bool:
    """Is ``t`` (2-D) laid out along its columns (a column-major a, a K-major b = W.t())? As a
    descriptor reads it (``_tma_transposed``), or where none can, by its strides."""
    transposed = _tma_transposed(t)
    return transposed if transposed is not None else t.stride(0) < t.stride(1)


class _PadCopies:
    """Copies of a and / or b (None: not copied) with rows padded to 16 bytes, each in its own
    major order (``_major``), into one allocation. Small ones (up to SMALL_BYTES) go in one launch
    of ``_pad_copy_kernel``: two torch copies and allocations cost ~50 us of host time a call (H100
    host, 4097x4095x129), more than their kernels; larger ones through torch's copy, which moved a
    33.5 MB operand ~25 us faster than this kernel (docs/decisions/012-triton-matmul-selection.md). ``meta``: the
    copies' layouts, on the meta device."""
    BLOCK_R, BLOCK_C = 32, 128
    SMALL_BYTES = 4 << 20

    def __init__(self, a, b):
        self.parts = []  # (index, transposed, rows, cols, row stride, offset, small) of each copy
        offset, self.meta = 0, [None, None]
        for i, t in enumerate((a, b)):
            if t is None:
                continue
            transposed = _major(t)
            rows, cols = t.shape[::-1] if transposed else t.shape
            view = padded(rows, cols, t.dtype, "meta")
            small = rows * cols * t.element_size() <= self.SMALL_BYTES
            self.parts.append((i, transposed, rows, cols, view.stride(0), offset, small))
            self.meta[i] = view.t() if transposed else view
            offset += rows * view.stride(0)
        self.elements = offset
        self.tiles = [cdiv(rows, self.BLOCK_R) * cdiv(cols, self.BLOCK_C)
                      for _, _, rows, cols, _, _, small in self.parts if small]
        self.launch = TritonLaunch(_pad_copy_kernel, (sum(self.tiles),), dict(BLOCK_R=self.BLOCK_R, BLOCK_C=self.BLOCK_C),
                                   dict(num_warps=4)) if self.tiles else None

    def __call__(self, a, b) -> tuple:
        """The copies of this call's a and b (None where not copied)."""
        if not self.parts:
            return None, None
        src = (a, b)
        buf = torch.empty(self.elements, dtype=a.dtype, device=a.device)
        out, args = [None, None], []
        for i, transposed, rows, cols, ld, offset, small in self.parts:
            y = src[i].t() if transposed else src[i]
            dst = buf.as_strided((rows, cols), (ld, 1), offset)
            out[i] = dst.t() if transposed else dst
            if small:
                args += [y, dst, rows, cols, y.stride(0), y.stride(1), ld]
            else:
                dst.copy_(y)
        if self.launch is not None:
            if len(args) == 7:
                args += args[:2] + [0, 0, 0, 0, 0]  # (no second copy: no programs for it)
            self.launch(*args, self.tiles[0])
        return tuple(out)


def _with_bias(bound, bias_strides):
    """The plan's run over ``bound(a, b, c, bias)``: run(a, b, out) where there is no bias (out
    stands in for the pointer the kernel does not read), else run(a, b, bias, out)."""
    if bias_strides is None:
        return lambda a, b, out: bound(a, b, out, out)
    return lambda a, b, bias, out: bound(a, b, out, bias)


def _descriptor(t, transposed: bool, block, layout=None) -> DescriptorSpec:
    """How a descriptor reads ``t``: as it lies, or as its transpose (K-major)."""
    rows, cols = t.shape
    sr, sc = t.stride()
    if transposed:
        return DescriptorSpec((cols, rows), (sc, 1), tuple(block[::-1]), layout)
    return DescriptorSpec((rows, cols), (sr, 1), tuple(block), layout)


def _tma_run(cfg, a, b, precision, sms: int, c_fits: bool, bias_strides=None):
    """run(a, b, out) of the TMA kernel with ``cfg``: descriptors over a, b and c (encoded per
    address, ``_launch``), a persistent grid of at most one program per SM (as few as keep the
    waves: ``balanced_grid``), and with ``split_k`` > 1 a float32 workspace and the fixed-order
    sum of its slices. An operand no descriptor can read where it lies is copied first
    (``_PadCopies``, or ``_LayoutCopy`` where b's order changes), and where ``c_fits`` is False
    (c's rows not 16-byte aligned) the kernel writes c by masked stores. ``bias_strides``:
    run(a, b, bias, out), the bias added by the epilogue, or by the sum of a split's slices."""
    (M, K), N = a.shape, b.shape[1]
    kw = cfg.kwargs
    bm, bn, bk, split_k = kw["BLOCK_M"], kw["BLOCK_N"], kw["BLOCK_K"], kw["SPLIT_K"]
    n_tail = kw.get("N_TAIL", 0)
    head = bn - n_tail  # (b's first part of a tile: all of it where N_TAIL is 0)
    # float32 wants one layout of b (H200, 4096^3: a TF32 wgmma reads b K-major only, and ran 0.21x
    # cuBLAS on a row-major b against 0.96x on W.t(); the exact dot ran 0.18x on W.t(), 0.89x on
    # a row-major b): b is copied into it, as it is when TMA cannot read it where it lies
    # (int8: the MMA takes 8-bit b K-major only)
    b_kmajor = precision == "tf32" if a.element_size() == 4 else True if a.element_size() == 1 else _major(b)
    copy_a = _tma_transposed(a) is None
    copy_b = _tma_transposed(b) is None or _tma_transposed(b) != b_kmajor
    # the layouts the kernel reads: the operands', or their copies' (meta: no memory). A copy keeps
    # its operand's major order (rows padded to 16 bytes), both in one launch (_PadCopies); a b
    # whose order changes goes through _LayoutCopy
    pads = _PadCopies(a if copy_a else None, b if copy_b and b_kmajor == _major(b) else None)
    reorder_b = _LayoutCopy(b, bool(b_kmajor)) if copy_b and b_kmajor != _major(b) else None
    a = pads.meta[0] if copy_a else a
    b = reorder_b.meta if reorder_b else pads.meta[1] if copy_b else b
    a_t, b_t = _tma_transposed(a), _tma_transposed(b)
    c_block = (bm, head // 2) if kw["EPILOGUE_SUBTILE"] else (bm, head)
    rows = cdiv(M, bm) * bm  # a split's workspace: each slice's rows in whole tiles
    tiles = cdiv(M, bm) * cdiv(N, bn)
    items = tiles * split_k
    # a split hands its slices over in one launch (SPLIT_LAST) where the stream's kept buffers
    # stay small; past that, a float32 workspace a call and a second launch add the slices
    split_last = split_last_of(kw, M, N)
    # what the kernel writes: the split's workspace, or out (contiguous) through a descriptor or,
    # where its rows are not 16-byte aligned, by masked stores (C_PTR)
    c = padded(split_k * rows, N, torch.float32, "meta") if split_k > 1 and not split_last else None
    c_ptr = c is None and not c_fits
    c_spec = DescriptorSpec(*(((M, N), (N, 1)) if c is None else (tuple(c.shape), (c.stride(0), 1))), c_block)
    programs, sk_tiles = stream_k_of(kw, M, N, K, sms) if kw.get("STREAM_K") else (balanced_grid(items, sms), 0)
    has_bias = bias_mode(bias_strides)
    biases = bias_strides or (0, 0)
    meta = dict(kw, A_T=a_t, B_T=b_t, INPUT_PRECISION=precision, INT_SUMS=a.dtype == torch.int8,
                C_PTR=c_ptr, FUSE_K=split_k == 1 and items - sk_tiles > programs and not c_ptr and not n_tail,
                HAS_BIAS=has_bias if c is None else 0, STREAM_K=sk_tiles > 0, SPLIT_LAST=split_last, N_TAIL=n_tail)
    b_spec = _descriptor(b, b_t, [bk, head])
    launch = TritonLaunch(_tma_persistent_kernel, (programs,), meta,
                          dict(num_warps=cfg.num_warps, num_stages=bias_stages(cfg, a.element_size(), meta["HAS_BIAS"])),
                          descriptors=(_descriptor(a, a_t, [bm, bk]), b_spec,
                                       _descriptor(b, b_t, [bk, n_tail]) if n_tail else b_spec)
                          + (() if c_ptr else (c_spec,)))
    def operands(a, b):  # (the kernel's leading tensors: b twice, b_desc's and b_tail_desc's)
        pa, pb = pads(a, b)
        b = reorder_b(b) if reorder_b else pb if copy_b else b
        return (pa if copy_a else a), b, b

    if sk_tiles or split_last:  # through the stream's hand-over buffers (its flags lowered again by each call)
        flag_count, floats = (programs, programs * bm * bn) if sk_tiles else (tiles, items * bm * bn)
        go = launch.bind_handing_over(lambda flags, slots: (M, N, K, programs, *biases, sk_tiles, slots, flags),
                                      flag_count, floats)

        def shared(a, b, out, bias):
            go(*operands(a, b), out, bias)
        return _with_bias(shared, bias_strides)
    if not (copy_a or copy_b or c is not None):
        bound = launch.bind(M, N, K, programs, *biases, 0, None, None)
        return _with_bias(lambda a, b, out, bias: bound(a, b, b, out, bias), bias_strides)
    if split_k == 1:
        return _with_bias(lambda a, b, out, bias: launch(*operands(a, b), out, bias, M, N, K, programs, *biases,
                                                         0, None, None), bias_strides)

    block = 1024
    sum_launch = TritonLaunch(_sum_splits_kernel, (cdiv(M * N, block),),
                              dict(SPLIT_K=split_k, BLOCK=block, HAS_BIAS=has_bias), dict(num_warps=4))

    # both launches bound to the plan's sizes (``bind``): a repeat call looks its arguments up once
    # each (the workspace comes back at its address from the caching allocator)
    split = launch.bind(M, N, K, programs, 0, 0, 0, None, None)
    sums = sum_launch.bind(N, M * N, c.stride(0), rows * c.stride(0), *biases)

    def run(a, b, out, bias):
        ws = padded(split_k * rows, N, torch.float32, a.device)
        split(*operands(a, b), ws, ws)
        sums(ws, out, bias)
    return _with_bias(run, bias_strides)


def _tma_note(text, cfg, a, b) -> str:
    """A TMA plan's note for the harness: its K slices or stream-K share, swap, how c is stored."""
    kw = cfg.kwargs
    one = kw["SPLIT_K"] == 1 or split_last_of(kw, a.shape[0], b.shape[1])  # (_tma_run's C_PTR: c written by the kernel)
    c_ptr = one and not _rows_fit(b.shape[1], _c_size(a), None)
    if kw.get("STREAM_K"):  # the tiles shared (0: none) on how many programs
        programs, shared = stream_k_of(kw, a.shape[0], b.shape[1], a.shape[1], sm_count(a.device))
        text += f" SK{shared}/{programs}"
    else:
        text += f" S{kw['SPLIT_K']}"
    return text + (" swap" if kw["SWAP_AB"] else "") + \
        (" c-stores" if c_ptr else " sub" if kw["EPILOGUE_SUBTILE"] else "")
