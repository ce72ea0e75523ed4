"""Matrix-vector product in Triton: y = A x, A (M, K), x (K,), float32 accumulation.

One kernel reads A through its strides; the variants hand it A in the layout they are tuned
for and differ in tile shape and grid. ``blocked_row`` wants row-major A (long BLOCK_K runs along
each row); ``blocked_col`` wants column-major A (long BLOCK_M runs down each column), and splits
K across programs where its tall tiles are few; ``split_k`` (row-major) also splits K across
programs, for few rows and a long K. A split's float32 partials are summed in a second kernel.
``phased`` (row-major) reads rows that do not start on 16 bytes, which the others read element by
element, as whole vectors: the default for them where K is short or its programs make a wave
(docs/decisions/029-gemv-phased-and-batches.md); ``phased_last`` splits its K as ``split_k_last``
does, for few such rows over a long K (the 16-bit default there: ``_phased_last_default``).
Given A in the other layout, the wrapper makes one copy into the variant's layout;
``variant=None`` picks a variant that reads A as it comes, so it never copies.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from kernel_common import (DEFAULT_SM_COUNT, cdiv, check_gemv_args, check_variant, hand_over, interpreting, is_fake,
                           matrix_layout, check_output, sm_count, to_layout, waves_balanced)
from kernel_common.catalog import Rule, always, first_rule, lookup, names, shown_at
from kernel_common.plans import Plan, PlanCache
from triton_impl._arch import SM_90
from triton_impl._launch import TritonLaunch, pointer_type
from triton_impl.catalog import RECORDS

DTYPES = (torch.float32, torch.float16, torch.bfloat16)

# ---------------------------------------------------------------------------------------------
# Configs
# ---------------------------------------------------------------------------------------------
VARIANTS = names(RECORDS, "gemv")  # the default first, each reading one layout (triton_impl/catalog.py)
LAYOUT = {v: lookup(RECORDS, "gemv", v).layout for v in VARIANTS}


def _wide_tiles(M: int, K: int, itemsize: int):
    """(BLOCK_M, BLOCK_K, num_warps) of a row-major A: tiles wide along K (long contiguous runs);
    for short K they grow along M so each program still moves as many elements. From a sweep on an
    H200: 16-bit 8192-element tiles, 1024 wide (8192^2 bf16: 8x1024/w4 1.02x torch.mv where 8x512
    gave 0.88; 4194304x32 256x32 1.01 vs 128x32 0.80); float32 16x512 with 8 warps where K allows."""
    if itemsize == 2:
        block_k = min(1024, triton.next_power_of_2(K))
        return max(8, min(256, 8192 // block_k)), block_k, 4
    block_k = min(512, triton.next_power_of_2(K))
    if block_k == 512:
        return 16, 512, 8
    return max(8, min(256, 4096 // block_k)), block_k, 4


def _split_tiles(M: int, K: int, itemsize: int):
    """The split variants' (and ``_split_default``'s count of row blocks): from K >= 4096, 4 x 2048
    tiles with 4 warps for every dtype (H100, docs/decisions/007-gemv-defaults.md, share of copy:
    fp32 4096^2 0.85 against 0.83 for 16x512/w8, 6144x4096 0.89 against 0.86; bf16 4096x14336 0.915
    against 0.89 for 8x1024/w4): 2-4x the programs, 16 loads a thread in flight. Below, ``_wide_tiles``."""
    return (4, 2048, 4) if K >= 4096 else _wide_tiles(M, K, itemsize)


def _row_tiles(M: int, K: int, itemsize: int):
    """``blocked_row``'s: 16-bit rows of 512 elements or more in 8 x 512 tiles with 4 warps where
    those make two waves of programs (on ``DEFAULT_SM_COUNT`` SMs: from 2105 rows); else the split
    variants' tiles. H200, x torch.mv: on eight weights of 5120-256000 rows (bf16) 1.021 geomean
    where 8x1024 and 4x2048 gave 0.910 (151936x1536 1.061 against 0.886; ``lab/sweep_gemv_rows.py``);
    on draws (bf16 seed 2, fp16 seed 5) old / new time 1.026 / 1.042 flushed from 2112 rows, but
    0.79 / 0.82 under them, where fewer programs left SMs idle (576x7168 0.65; decision 044). Rows on
    16 bytes of LONG_K or more take the split tiles: 16 loads a thread in flight where each program's
    rows are long (bf16 8192x28672 0.98 of a copy against 0.83; 7441x20056 0.96 against 0.77)."""
    if itemsize == 2 and 512 <= K and (K < LONG_K or K % 8) and cdiv(M, 8) >= 2 * DEFAULT_SM_COUNT:
        return 8, 512, 4
    return _split_tiles(M, K, itemsize)


def _phased_tiles(M: int, K: int, itemsize: int):
    """``phased``'s: a window of K plus a vector's phase, at most 64 elements, and as many rows (a
    multiple of the V sub-tiles) as make a program 4096 16-bit or 2048 float32 elements (32 and 16
    products a thread over 4 warps). Each sub-tile loads x's window element by element, shifted by
    its phase: a window as wide as K (up to 1024) left a sub-tile one row to share those loads with,
    and padded K = 572 to 1024 (0.23x `torch.mv` at 135839 x 572, H200). 64 x 128 16-bit tiles held
    64 products a thread and spilled (255 registers); 64 x 64 read 1.14x their speed (18 shapes of
    K 34-937, 1.02-1.29), float32 32 x 64 1.06x 32 x 128's (``lab/sweep_gemv_phased_tiles.py``,
    bench/results/logs/h200-2026-12-04-gemv-phased-tiles.json). From PHASED_LONG_K the window and the
    program are twice that (half the windows a row): bf16 13552 x 2263 ran 1.07x torch.mv on 64 x 128
    tiles and 0.77x on 64 x 64, 49988 x 19804 1.05x and 0.90x (seed 233: h200-2026-12-04-dense-base-gemv-*,
    then bench/results/logs/h200-2026-12-04-gemv-waves-first-bfloat16-s233.json.gz)."""
    v, scale = 16 // itemsize, 2 if K >= PHASED_LONG_K else 1
    block_k = min(64 * scale, triton.next_power_of_2(K + v - 1))
    return max(v, min(256, (4096 if itemsize == 2 else 2048) * scale // block_k)), block_k, 4


def _tall_tiles(M: int, K: int, itemsize: int):
    """A column-major A's: tiles tall along M (coalesced down each column)."""
    return 256, min(32, triton.next_power_of_2(K)), 8


# blocked_col's shortest K piece where it splits: its 256 x 32 tiles on a column-major A leave few
# programs (4096 rows: 16) unless K is split too. H200, x torch.mv on the same A, split / one piece:
# float32 4096 x 4096 0.77 / 0.10, 4096 x 14336 0.77 / 0.08, 32000 x 4096 0.96 / 0.58, 128256 x 4096
# 0.97 / 0.83; bfloat16 0.65-0.79 / 0.03-0.53, but 128256 x 4096 0.94 / 0.98 (H200, docs/decisions/007-gemv-defaults.md)
COL_PIECE = 256

# The split tiles' programs (4 x 2048, 4 warps: 112-128 registers) resident an SM, and the share of
# their slots a last wave fills at least, or the waves they make at least, for ``waves_balanced``
# (``_split_default``, ``split``); LONG_K: rows from which ``blocked_row`` reads them (``_row_tiles``).
# arch_sm_90.json; docs/decisions/007-gemv-defaults.md
SPLIT_PROGRAMS_PER_SM = 4
LAST_WAVE_MIN_FILL, WHOLE_WAVES = SM_90["gemv_last_wave_min_fill"], SM_90["gemv_whole_waves"]
LONG_K = SM_90["gemv_long_k"]
PHASED_LAST_MIN_M, PHASED_LAST_MIN_K, PHASED_LAST_MAX_FILL = SM_90["gemv_phased_last"]  # (``_phased_last_default``)
PHASED_LONG_K = 1024  # (``_phased_tiles``)

# variant -> (its tiles: (M, K, itemsize) -> (BLOCK_M, BLOCK_K, num_warps), the shortest K piece it
# splits K into (None: one piece; 0: one tile). split_k takes ``_split_tiles`` in pieces of one
# tile, as many as make 4 programs an SM: over few rows a program is latency, not bytes (H200,
# x torch.mv, 4 x 2048 tiles in pieces of one tile against the 8 x 1024 tiles in 4096-element
# pieces before: 12 x 43585 bf16 1.03 against 0.71, 4 x 38710 fp16 0.95 against 0.67, 320 x 63530
# fp16 1.16 against 0.85; lab/sweep_gemv_few_rows.py, docs/decisions/029-gemv-phased-and-batches.md)
TILING = {"blocked_row": (_row_tiles, None), "blocked_col": (_tall_tiles, COL_PIECE), "split_k": (_split_tiles, 0),
          "split_k_last": (_split_tiles, 0), "phased": (_phased_tiles, None), "phased_last": (_phased_tiles, 0)}
HANDS_OVER = ("split_k_last", "phased_last")  # (their pieces' sums: ``_hand_over``)
PHASED = ("phased", "phased_last")  # (phased's windows: ``_phased_sums``)


# ---------------------------------------------------------------------------------------------
# Kernel
# ---------------------------------------------------------------------------------------------
@triton.jit
def _gemv_kernel(
    # Pointers
    a_ptr, x_ptr, y_ptr,
    # Sizes
    M, K, PIECE,
    # Strides (and a batch's: product p reads a + p * stride_ab, x + p * stride_xb, writes y + p * stride_yb)
    stride_am, stride_ak, stride_ym, stride_ab, stride_xb, stride_yb,
    # Meta-parameters
    BLOCK_M: tl.constexpr, BLOCK_K: tl.constexpr, ROW_VEC: tl.constexpr, K_VEC: tl.constexpr,
):
    """Program (pid_m, pid_k) reduces rows pid_m*BLOCK_M.. over the K piece pid_k*PIECE..:
    a BLOCK_M x BLOCK_K tile of products accumulated in float32 over the piece, reduced across
    the tile once at the end, stored at y + m * stride_ym + pid_k. With one piece (PIECE >= K)
    that is y itself; split_k gives each row several pieces and sums them in a second kernel.
    A batch of GEMVs stacks its products' row tiles along the grid's first axis."""
    tiles_m = tl.cdiv(M, BLOCK_M)
    p = (tl.program_id(0) // tiles_m).to(tl.int64)
    pid_m = tl.program_id(0) % tiles_m
    pid_k = tl.program_id(1)
    y_ptr += p * stride_yb
    offs_m, mask_m, y = _piece_sums(a_ptr + p * stride_ab, x_ptr + p * stride_xb, M, K, PIECE, stride_am, stride_ak,
                                    pid_m, pid_k, BLOCK_M, BLOCK_K, ROW_VEC, K_VEC)
    tl.store(y_ptr + offs_m * stride_ym + pid_k, y.to(y_ptr.dtype.element_ty), mask=mask_m)


@triton.jit
def _piece_sums(a_ptr, x_ptr, M, K, PIECE, stride_am, stride_ak, pid_m, pid_k,
                BLOCK_M: tl.constexpr, BLOCK_K: tl.constexpr, ROW_VEC: tl.constexpr, K_VEC: tl.constexpr):
    """Rows pid_m * BLOCK_M.. of A times x over the K piece pid_k * PIECE..: (the rows, their mask,
    their float32 sums), a BLOCK_M x BLOCK_K tile of products reduced once at the end. Loads are
    16-byte vectors only where the compiler sees rows start on 16 bytes and the k mask hold for a
    whole vector: ROW_VEC is the row stride's known factor in elements and K_VEC K's (16 bytes'
    where the host saw it, else 1). Without them a K off a multiple of 16 elements made every load
    of A one element (``ld.global.b16`` at K = 1416 and K = 56, bf16, sm_90). One masked loop: a
    loop of whole tiles and a masked tail after it let ptxas issue the row's loads two or three at
    a time instead of all ten at once (1.4x the time at K >= 4096, H200)."""
    offs_m = pid_m.to(tl.int64) * BLOCK_M + tl.arange(0, BLOCK_M)
    mask_m = offs_m < M
    if ROW_VEC > 1:  # (as int64: the hint on the 32-bit argument did not reach the loads)
        stride_am = tl.multiple_of(stride_am.to(tl.int64), ROW_VEC)
    k_start = pid_k.to(tl.int64) * PIECE
    k_end = tl.minimum(k_start + PIECE, K)
    if K_VEC > 1:
        k_end = tl.multiple_of(k_end, K_VEC)
    acc = tl.zeros((BLOCK_M, BLOCK_K), dtype=tl.float32)
    rows = a_ptr + offs_m[:, None] * stride_am  # (64-bit offsets: M x K may pass 2^31 elements)
    for k0 in range(0, PIECE, BLOCK_K):
        offs_k = k_start + k0 + tl.arange(0, BLOCK_K).to(tl.int64)
        mask_k = offs_k < k_end
        a = tl.load(rows + offs_k[None, :] * stride_ak, mask=mask_m[:, None] & mask_k[None, :], other=0.0)
        acc += a.to(tl.float32) * tl.load(x_ptr + offs_k, mask=mask_k, other=0.0).to(tl.float32)[None, :]
    return offs_m, mask_m, tl.sum(acc, axis=1)


@triton.jit
def _gemv_last_kernel(a_ptr, x_ptr, y_ptr, flags_ptr, slots_ptr, M, K, PIECE, SPLITS, stride_am, stride_ak,
                      stride_ym, BLOCK_M: tl.constexpr, BLOCK_K: tl.constexpr, ROW_VEC: tl.constexpr,
                      K_VEC: tl.constexpr):
    """``split_k_last``: program (pid_m, pid_k) stores its piece's float32 sums in its slot and
    counts itself in its row block's flag; the block's last program to count adds the SPLITS slots
    in k order (the same bits whichever program is last), stores y and lowers the flag (zeros
    between calls: ``kernel_common.util.hand_over``). One launch, no sum kernel and no workspace
    allocated a call, where ``split_k``'s second launch costs a small call about 12 us of host
    time (docs/decisions/029-gemv-phased-and-batches.md). SPLITS is a runtime argument: one
    compiled kernel for every shape of a tile."""
    pid_m = tl.program_id(0)
    pid_k = tl.program_id(1)
    offs_m, mask_m, y = _piece_sums(a_ptr, x_ptr, M, K, PIECE, stride_am, stride_ak, pid_m, pid_k,
                                    BLOCK_M, BLOCK_K, ROW_VEC, K_VEC)
    _hand_over(y, tl.arange(0, BLOCK_M), y_ptr + offs_m * stride_ym, mask_m, flags_ptr, slots_ptr, pid_m, pid_k,
               SPLITS, BLOCK_M)


@triton.jit
def _hand_over(y, local, y_ptrs, mask, flags_ptr, slots_ptr, pid_m, pid_k, SPLITS, BLOCK_M: tl.constexpr):
    """A split program's end: its float32 sums ``y`` of its row block's rows ``local`` (0 to
    BLOCK_M - 1, any shape) go to its slot and it counts itself in the block's flag; the last to
    count adds the SPLITS slots in k order, stores them at ``y_ptrs`` and lowers the flag."""
    block = slots_ptr + pid_m.to(tl.int64) * (SPLITS * BLOCK_M) + local
    tl.store(block + pid_k * BLOCK_M, y)
    tl.debug_barrier()  # every thread's sums stored before the count goes up
    if tl.atomic_add(flags_ptr + pid_m, 1, sem="acq_rel") == SPLITS - 1:
        total = tl.zeros_like(y)
        for s in range(0, SPLITS):
            total += tl.load(block + s * BLOCK_M, cache_modifier=".cg")
        tl.store(y_ptrs, total.to(y_ptrs.dtype.element_ty), mask=mask)
        tl.store(flags_ptr + pid_m, 0)


@triton.jit
def _gemv_phased_kernel(a_ptr, x_ptr, y_ptr, M, K, stride_am, stride_ym, end,
                        BLOCK_M: tl.constexpr, BLOCK_K: tl.constexpr, V: tl.constexpr):
    """A row-major A whose rows do not start on 16 bytes (V elements). Rows m and m + V start at
    the same phase (m * stride_am mod V), so a tile's rows go in V sub-tiles (rows j, j + V, ...),
    the tile's first axis: a sub-tile's windows start at its rows' starts rounded down to V
    elements and are read as whole vectors, masked vector by vector to those that end inside A
    (``end``: one past its last element); x comes shifted by each sub-tile's phase, and a window's
    elements outside its row count as zeros. The V sub-tiles' loads of a window go out together
    (one after another, each had one vector a thread in flight: latency bound them). The vector
    that A's end cuts comes after the loop, element by element, where a row holds its elements
    (a whole-vector read of it ran past the allocation: memcheck)."""
    rows, mask_m, y = _phased_sums(a_ptr, x_ptr, M, K, stride_am, end, tl.program_id(0), 0, K + V - 1, K,
                                   BLOCK_M, BLOCK_K, V)
    tl.store(y_ptr + rows * stride_ym, y.to(y_ptr.dtype.element_ty), mask=mask_m)


@triton.jit
def _gemv_phased_last_kernel(a_ptr, x_ptr, y_ptr, flags_ptr, slots_ptr, M, K, stride_am, stride_ym, end, PIECE,
                             SPLITS, BLOCK_M: tl.constexpr, BLOCK_K: tl.constexpr, V: tl.constexpr):
    """``phased_last``: phased's windows over the piece pid_k * PIECE.. of the K + V - 1 window
    columns, its sums handed over as ``split_k_last``'s (``_hand_over``); the last piece also takes
    the vector A's end cuts."""
    pid_m, pid_k = tl.program_id(0), tl.program_id(1)
    start = pid_k * PIECE
    cut_k = tl.where(pid_k == SPLITS - 1, K, 0)  # (the cut vector's columns: the last piece's)
    rows, mask_m, y = _phased_sums(a_ptr, x_ptr, M, K, stride_am, end, pid_m, start,
                                   tl.minimum(start + PIECE, K + V - 1), cut_k, BLOCK_M, BLOCK_K, V)
    _hand_over(y, rows - pid_m.to(tl.int64) * BLOCK_M, y_ptr + rows * stride_ym, mask_m, flags_ptr, slots_ptr,
               pid_m, pid_k, SPLITS, BLOCK_M)


@triton.jit
def _phased_sums(a_ptr, x_ptr, M, K, stride_am, end, pid_m, k_start, k_stop, cut_k,
                 BLOCK_M: tl.constexpr, BLOCK_K: tl.constexpr, V: tl.constexpr):
    """Row block pid_m's (V, R) rows (above), their mask and their float32 sums over the window
    columns k_start..k_stop (multiples of BLOCK_K but the last), plus the vector A's end cuts in
    its columns under ``cut_k`` (K, or 0: none)."""
    R: tl.constexpr = BLOCK_M // V
    phases = tl.arange(0, V).to(tl.int64)
    first = pid_m.to(tl.int64) * BLOCK_M + tl.arange(0, R).to(tl.int64) * V  # the rows of phase 0 ..
    rows = phases[:, None] + first[None, :]  # (V, R): sub-tile j holds rows first + j
    mask_m = rows < M
    shift = phases * stride_am
    aligned = shift // V * V
    phase = shift - aligned  # (V,): where each sub-tile's rows start within their first vector
    base = first[None, :] * stride_am + aligned[:, None]  # (V, R), multiples of V: whole-vector loads
    offs_k = tl.arange(0, BLOCK_K)
    chunk = offs_k // V * V  # each element's vector, for masks whole along a vector
    acc = tl.zeros((V, R, BLOCK_K), dtype=tl.float32)
    for k0 in range(k_start, k_stop, BLOCK_K):  # (whole: K + the largest phase)
        xi = k0 - phase[:, None] + offs_k[None, :]  # (V, BLOCK_K): the x element under each window column
        in_row = (xi >= 0) & (xi < K)
        x = tl.load(x_ptr + xi, mask=in_row, other=0.0)
        a = tl.load(a_ptr + base[:, :, None] + (k0 + offs_k)[None, None, :],
                    mask=mask_m[:, :, None] & (base[:, :, None] + (k0 + chunk)[None, None, :] + V <= end), other=0.0)
        a = tl.where(in_row[:, None, :], a, 0.0)  # (a neighbour row's inf or NaN times 0 would not be 0)
        acc += a.to(tl.float32) * x.to(tl.float32)[:, None, :]
    y = tl.sum(acc, axis=2)
    # (in every program, masked: a branch to the one or two programs whose rows hold the cut vector's
    # elements ran 2% faster flushed and 6% slower back to back; decision 029)
    cut = end // V * V + tl.arange(0, V)  # the cut vector's elements (past end: none)
    k_cut = cut[None, None, :] - (rows * stride_am)[:, :, None]  # (V, R, V): their columns in each row
    take = mask_m[:, :, None] & (cut[None, None, :] < end) & (k_cut >= 0) & (k_cut < cut_k)
    a_cut = tl.load(a_ptr + cut[None, None, :] + 0 * k_cut, mask=take, other=0.0)
    y += tl.sum(a_cut.to(tl.float32) * tl.load(x_ptr + k_cut, mask=take, other=0.0).to(tl.float32), axis=2)
    return rows, mask_m, y


@triton.jit
def _sum_rows_kernel(p_ptr, y_ptr, M, SPLITS, BLOCK_M: tl.constexpr, BLOCK_S: tl.constexpr):
    """y[m] = sum of the SPLITS float32 partials of row m, in a fixed order (deterministic)."""
    offs_m = tl.program_id(0).to(tl.int64) * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_s = tl.arange(0, BLOCK_S)
    mask = (offs_m[:, None] < M) & (offs_s[None, :] < SPLITS)
    p = tl.load(p_ptr + offs_m[:, None] * SPLITS + offs_s[None, :], mask=mask, other=0.0)
    tl.store(y_ptr + offs_m, tl.sum(p, axis=1).to(y_ptr.dtype.element_ty), mask=offs_m < M)


# ---------------------------------------------------------------------------------------------
# Wrapper
# ---------------------------------------------------------------------------------------------
# variant=None: the first row that holds, the variant that reads A as it comes
RULES = (
    Rule("blocked_col", lambda a, x: matrix_layout(a) == "col", "column-major A: the tall tiles down its columns"),
    Rule("phased_last", lambda a, x: _phased_last_default(a),
         "16-bit rows off 16 bytes, a long K over rows too few for phased's wave: phased's windows in pieces "
         "of K (docs/decisions/029-gemv-phased-and-batches.md)"),
    Rule("split_k_last", lambda a, x: _split_default(a),
         "too few row blocks to fill the GPU: K in pieces, added up in the same launch "
         "(docs/decisions/007-gemv-defaults.md, 029)"),
    Rule("phased", lambda a, x: _phased_default(a),
         "row-major A whose rows do not start on 16 bytes, K at most 128 or a wave of programs "
         "(docs/decisions/029-gemv-phased-and-batches.md)"),
    Rule("blocked_row", always, "row-major A"),
)


def _split_default(a) -> bool:
    """K of at least two tiles where ``blocked_row``'s row blocks hold under two warps an SM, or up
    to 1024 rows over K >= 32768: over few rows a program is latency, not bytes. H200, dense GEMV
    draws seeds 2, 3, 5 paired with the draws before: the shapes it took 1.13-1.38x flushed by dtype
    (few rows up to 2.3x). A rule by blocks alone (under one an SM) also took 46-128 blocks of 8-warp
    float32 tiles and 96-128 of 16-bit ones, which read 0.82-0.93x: an SM's few programs still keep
    its share of the bytes in flight (decision 029). From K = 4096, where ``blocked_row`` reads the
    split tiles whole, also wherever their programs fail ``waves_balanced`` on rows on 16 bytes
    (``split`` then cuts K until they pass): on 68 bf16 shapes of 289-27648 rows (H200, flushed) the
    picks read 0.981 of each shape's fastest tile and split count against 0.943 (2197x25824 0.81 of
    a copy against 0.67, 351x13624 0.65 against 0.52); rows off 16 bytes, read element by element,
    lost in pieces
    (662x18996 21.9 -> 28.9 us, logs/h200-2026-12-04-gemv-waves-first-bfloat16-s233.json.gz)."""
    M, K = a.shape
    block_m, block_k, warps = _split_tiles(M, K, a.element_size())
    if K < 2 * block_k:
        return False
    programs = cdiv(M, block_m)
    return programs * warps < 2 * sm_count(a.device) or (M <= 1024 and K >= 8 * 4096) or (
        K >= 4096 and _row_tiles(M, K, a.element_size()) == (block_m, block_k, warps)
        and min(vectors(a.stride(0), K, a.element_size()).values()) > 1
        and not waves_balanced(programs, SPLIT_PROGRAMS_PER_SM * sm_count(a.device), LAST_WAVE_MIN_FILL, WHOLE_WAVES))


def _phased_default(a) -> bool:
    """Rows of a row-major A off 16 bytes, with K <= 128 or ``phased``'s programs a wave of the SMs
    (where it won on the forced draws; few programs over a long K, it lost: decision 029)."""
    M, K = a.shape
    return (matrix_layout(a) == "row" and a.stride(0) % (16 // a.element_size()) != 0
            and (K <= 128 or cdiv(M, _phased_tiles(M, K, a.element_size())[0]) >= sm_count(a.device)))


def _phased_last_default(a) -> bool:
    """16-bit rows of a row-major A off 16 bytes, K >= PHASED_LAST_MIN_K over PHASED_LAST_MIN_M rows
    or more, whose ``phased`` programs fill at most PHASED_LAST_MAX_FILL of the SMs: there
    ``blocked_row`` and ``split_k_last`` read each element alone, and ``phased`` alone leaves SMs
    idle. On the worst shapes of the H200 draws and 16 drawn from seeds 300-307 (bf16, H100) it ran
    1.02-1.69x their time; with fewer rows or a shorter K its pieces are short or its 64-row tiles
    mostly empty (0.53-0.99x), and where phased's programs come near a wave, splitting K paid
    nothing (0.89-1.05x; decision 029)."""
    M, K = a.shape
    return (a.element_size() == 2 and matrix_layout(a) == "row" and a.stride(0) % (16 // a.element_size()) != 0
            and M >= PHASED_LAST_MIN_M and K >= PHASED_LAST_MIN_K
            and cdiv(M, _phased_tiles(M, K, a.element_size())[0]) <= PHASED_LAST_MAX_FILL * sm_count(a.device))


def pick_variant(a, x) -> str:
    """What ``variant=None`` runs: the first of ``RULES`` that holds."""
    return first_rule(RULES, a, x).variant


def vectors(stride_am: int, K: int, itemsize: int) -> dict:
    """_gemv_kernel's ROW_VEC and K_VEC for a row stride and K: 16 bytes' elements where each is a
    multiple of them, else 1."""
    v = 16 // itemsize
    return dict(ROW_VEC=v if stride_am % v == 0 else 1, K_VEC=v if K % v == 0 else 1)


def plan_launches(variant: str, M: int, K: int, itemsize: int, sm_count: int,
                  stride_am: int | None = None) -> tuple[TritonLaunch, ...]:
    """The kernels, grids and meta-parameters of a variant: one program per BLOCK_M rows and K
    piece; split_k adds the fixed-order sum of the pieces. The pieces' count is ``splits()``.
    ``stride_am``: A's row stride as the kernel reads it (by default the layout's, contiguous)."""
    block_m, block_k, num_warps = TILING[variant][0](M, K, itemsize)
    stride_am = _row_stride(variant, K, stride_am)
    piece, splits = split(variant, M, K, itemsize, sm_count, stride_am)
    if variant in PHASED:
        phased = dict(BLOCK_M=block_m, BLOCK_K=block_k, V=16 // itemsize)
        if splits > 1:
            return (TritonLaunch(_gemv_phased_last_kernel, (cdiv(M, block_m), splits), phased, dict(num_warps=num_warps)),)
        return (TritonLaunch(_gemv_phased_kernel, (cdiv(M, block_m),), phased, dict(num_warps=num_warps)),)
    if variant == "split_k_last" and splits > 1:
        return (TritonLaunch(_gemv_last_kernel, (cdiv(M, block_m), splits),
                             dict(BLOCK_M=block_m, BLOCK_K=block_k, **vectors(stride_am, K, itemsize)),
                             dict(num_warps=num_warps)),)
    main = TritonLaunch(_gemv_kernel, (cdiv(M, block_m), splits),
                        dict(BLOCK_M=block_m, BLOCK_K=block_k, **vectors(stride_am, K, itemsize)),
                        dict(num_warps=num_warps))
    if splits == 1:
        return (main,)
    return main, TritonLaunch(_sum_rows_kernel, (cdiv(M, 64),),
                              dict(BLOCK_M=64, BLOCK_S=triton.next_power_of_2(splits)))


def _row_stride(variant: str, K: int, stride_am: int | None) -> int:
    """A's row stride as a variant's kernel reads it: ``stride_am``, by default its layout's, contiguous."""
    return stride_am if stride_am is not None else 1 if LAYOUT[variant] == "col" else K


def split(variant: str, M: int, K: int, itemsize: int, sm_count: int,
          stride_am: int | None = None) -> tuple[int, int]:
    """(piece, splits): the K range of one program, and how many there are per row (phased_last: of
    its K + V - 1 window columns, about 4 programs an SM; split_k and split_k_last: the fewest pieces
    of a tile at least whose programs share the bandwidth (``waves_balanced``; 4 programs an SM before: 1000x20000 bf16 0.70 of a copy in 3 pieces, 0.82 in
    2), on the 4 x 2048 tiles past the few rows ``_split_default`` names; few rows (decision 029's) and K
    off whole vectors, whose rows go element by element and want every program in flight, about 4
    programs an SM (508x55474 fp16 0.67x torch.mv in the fewest balanced pieces); blocked_col about 4
    programs an SM, pieces of ``COL_PIECE`` elements at least; otherwise one). ``stride_am``: A's row
    stride as the kernel reads it (by default the layout's, contiguous): rows off 16 bytes are read
    element by element as K off whole vectors is, the same test as ``_split_default``'s."""
    tiles, shortest = TILING[variant]
    block_m, block_k, warps = tiles(M, K, itemsize)
    programs, splits = cdiv(M, block_m), 1
    whole = min(vectors(_row_stride(variant, K, stride_am), K, itemsize).values()) > 1
    if variant == "phased_last":
        K += 16 // itemsize - 1  # (its pieces share out K + V - 1 window columns; rows go in vectors)
        whole = False
    if shortest == 0 and K >= 4096 and whole and programs * warps >= 2 * sm_count:
        while splits < cdiv(K, block_k) and not waves_balanced(programs * splits, SPLIT_PROGRAMS_PER_SM * sm_count,
                                                                LAST_WAVE_MIN_FILL, WHOLE_WAVES):
            splits += 1  # (the fewest pieces of a tile at least whose programs pass)
    elif shortest is not None:
        splits = max(1, min(cdiv(K, shortest or block_k), cdiv(4 * sm_count, cdiv(M, block_m))))
    piece = cdiv(cdiv(K, splits), block_k) * block_k
    return piece, cdiv(K, piece)


def _plan(inputs, variant, out) -> Plan:
    """Validate a call and plan it (once per distinct metadata)."""
    a, x = inputs
    check_gemv_args(a, x, dtypes=DTYPES)
    check_variant(variant, VARIANTS, "gemv")
    M, K = a.shape
    names = ("a", "x")
    check_output(out, (M,), {"a": a, "x": x}, need_cuda=not interpreting())
    if M == 0:
        return Plan((M,), a.dtype, a.device, lambda a, x, out: None, names)
    if K == 0:
        return Plan((M,), a.dtype, a.device, lambda a, x, out: out.zero_(), names)
    variant = variant or pick_variant(a, x)
    layout = LAYOUT[variant]
    a_laid = to_layout(a, layout)  # as every call of this plan will pass A: copied or not, same strides
    copy_a, copy_x = a_laid is not a, x.stride(0) != 1
    strides = a_laid.stride()
    piece, splits = split(variant, M, K, a.element_size(), sm_count(a.device), strides[0])
    launches = plan_launches(variant, M, K, a.element_size(), sm_count(a.device), strides[0])
    main = launches[0]
    blocks = main.grid[0]  # (split_k_last: its flags, and its slots' floats)
    slot_floats = blocks * splits * main.meta["BLOCK_M"]

    hands_over = variant in HANDS_OVER and splits > 1
    device, traced = a.device, is_fake(a)  # (a traced graph allocates its own hand-over pair)

    def bound(strides):
        """The main launch bound to the plan's sizes and A's strides (``TritonLaunch.bind``: a
        repeat call passes its pointers as ints, which Triton's launcher takes without asking
        the driver about each)."""
        if variant in PHASED:  # (row-major: the last element is K - 1 past the last row's start)
            return main.bind(M, K, strides[0], 1, (M - 1) * strides[0] + K, *((piece, splits) if hands_over else ()))
        if hands_over:
            return main.bind(M, K, piece, splits, *strides, 1)
        return main.bind(M, K, piece, *strides, splits, 0, 0, 0)  # (y's row stride: the pieces)

    total = launches[1].bind(M, splits) if len(launches) > 1 else None

    def run(a, x, out, go=bound(strides)):
        if copy_a:
            a = to_layout(a, layout)  # one documented copy if A comes in the other layout
        if copy_x:
            x = x.contiguous()
        if hands_over:
            go(a, x, out, *hand_over(device, blocks, slot_floats, own=traced))
        elif total is None:
            go(a, x, out)
        else:
            partial = torch.empty((M, splits), dtype=torch.float32, device=device)
            go(a, x, partial)
            total(partial, out)

    if interpreting() and a.dtype == torch.bfloat16:
        # numpy has no bfloat16: the interpreter computes on float32 copies (exact upcasts)
        def run_upcast(a, x, out, run=run):
            # (upcast first: a float copy of overlapping rows may come out column-major)
            a, y = to_layout(a.float(), layout), torch.empty((M,), dtype=torch.float32, device=a.device)
            run(a, x.float(), y, bound(a.stride()))  # (the copy has strides of its own)
            out.copy_(y)
        return Plan((M,), a.dtype, a.device, run_upcast, names)
    return Plan((M,), a.dtype, a.device, run, names)


_PLANS = PlanCache(_plan)


def launches(dtype):
    """(variant, TritonLaunch, arguments by name, shape) of each variant's launches at the shape its
    record names, on a GPU of ``DEFAULT_SM_COUNT`` SMs (``triton_impl.launches``)."""
    ptr = pointer_type(dtype)
    for name in VARIANTS:
        M, K = shown_at(RECORDS, "gemv", name)
        piece, splits = split(name, M, K, dtype.itemsize, DEFAULT_SM_COUNT)
        if name in PHASED:
            last = dict(flags_ptr="*i32", slots_ptr="*fp32", PIECE=piece, SPLITS=splits) if splits > 1 else {}
            yield name, plan_launches(name, M, K, dtype.itemsize, DEFAULT_SM_COUNT)[0], dict(
                a_ptr=ptr, x_ptr=ptr, y_ptr=ptr, M=M, K=K, stride_am=K, stride_ym=1, end=M * K, **last), (M, K)
            continue
        stride_am, stride_ak = (1, M) if LAYOUT[name] == "col" else (K, 1)
        first, *rest = plan_launches(name, M, K, dtype.itemsize, DEFAULT_SM_COUNT)
        if first.fn is _gemv_last_kernel:
            yield name, first, dict(a_ptr=ptr, x_ptr=ptr, y_ptr=ptr, flags_ptr="*i32", slots_ptr="*fp32", M=M, K=K,
                                    PIECE=piece, SPLITS=splits, stride_am=stride_am, stride_ak=stride_ak, stride_ym=1), (M, K)
            continue
        yield name, first, dict(a_ptr=ptr, x_ptr=ptr, y_ptr="*fp32" if splits > 1 else ptr, M=M, K=K,
                                PIECE=piece, stride_am=stride_am, stride_ak=stride_ak, stride_ym=splits,
                                stride_ab=0, stride_xb=0, stride_yb=0), (M, K)
        for launch in rest:  # the partial sums' sum
            yield name, launch, dict(p_ptr="*fp32", y_ptr=ptr, M=M, SPLITS=splits), (M, K)


def batch_variant(a3) -> str | None:
    """The variant that reads the batch a3's matrices as they lie (row- or column-major), or None."""
    layout = matrix_layout(a3[0]) if a3.shape[0] else None
    return {"row": "blocked_row", "col": "blocked_col"}.get(layout)


def batch_launch(a3, x_stride_b: int, y_stride_b: int):
    """launch(a3, x, y) of ``count`` GEMVs in one grid: y[p] (M,) = a3[p] (M, K) x[p] for the batch
    a3 (count, M, K) that ``batch_variant`` reads, each x[p] contiguous (x_stride_b apart) and y[p]
    too (y_stride_b apart); K in one piece: the batch fills the GPU (batched_mm's experts at
    decode, one token a product, are such a batch)."""
    count, M, K = a3.shape
    block_m, block_k, num_warps = TILING[batch_variant(a3)][0](M, K, a3.element_size())
    launch = TritonLaunch(_gemv_kernel, (cdiv(M, block_m) * count, 1),
                          dict(BLOCK_M=block_m, BLOCK_K=block_k, **vectors(a3.stride(1), K, a3.element_size())),
                          dict(num_warps=num_warps))
    return launch.bind(M, K, K, *a3.stride()[1:], 1, a3.stride(0), x_stride_b, y_stride_b)


def gemv(a: torch.Tensor, x: torch.Tensor, *, variant: str | None = None, out: torch.Tensor | None = None):
    """y = A x for A (M, K) and x (K,) of float32, float16 or bfloat16 (one dtype), accumulated
    in float32; returns y (M,) of A's dtype. CUDA tensors (CPU ones under TRITON_INTERPRET=1)."""
    return _PLANS((a, x), variant, out)
