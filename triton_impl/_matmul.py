"""Matrix multiplication in Triton: c (M, N) = a (M, K) b (K, N), float32 accumulation.

Follows triton's tutorial 03: each program computes a BLOCK_M x BLOCK_N tile of c with a loop
of ``tl.dot`` over BLOCK_K-deep slices of a and b. Unlike the tutorial, every edge is masked
(M, N and K need not be multiples of the blocks), offsets are 64-bit, and a and b are read
through their strides (row- or column-major, slices with a step: no copy).

float32 inputs follow torch's float32 matmul precision (either of torch's APIs for it:
``kernel_common.float32_matmul_precision``): "highest" (torch's default) runs an exact float32 dot
(``input_precision="ieee"``), "high" and "medium" allow TF32 tensor cores, as torch.matmul does.
float16 and bfloat16 run on tensor cores with a float32 accumulator.

Integers: int8 runs on tensor cores too (``tl.dot`` on int8 tiles into an int32 accumulator) and
returns int32; int32 has no tensor-core dot, so ``blocked`` and ``grouped`` multiply its tiles
elementwise and sum along K (``tl.sum``), in 32-bit arithmetic that wraps modulo 2^32 as C's does.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from kernel_common import (balanced_grid, base_phase, check_bias, check_matmul_args, check_variant, dtype_name,
                           float32_matmul_precision, interpreting, matmul_out_dtype, matrix_layout, output, padded,
                           sm_count, tma_rows)
from kernel_common.plans import Plan, PlanCache
from triton_impl import _matmul_fma, _tuning
from triton_impl._launch import DescriptorSpec, TritonLaunch
from triton_impl._gemv import _PLANS as _GEMV_PLANS, pick_variant as _gemv_variant
from triton_impl._transpose import _PLANS as _TRANSPOSE_PLANS

FLOAT_DTYPES = (torch.float32, torch.float16, torch.bfloat16)
DTYPES = (*FLOAT_DTYPES, torch.int32, torch.int8)


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


# ---------------------------------------------------------------------------------------------
# Kernel
# ---------------------------------------------------------------------------------------------
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


def bias_stages(cfg, element_size: int, mode: int) -> int:
    """The TMA kernel's stages with a bias tile (mode 2): one fewer where the tile's layout conversion
    (BLOCK_M x BLOCK_N float32) and the stages would pass an SM's 227 KiB of shared memory (128 x 256
    with 4 stages: 262176 bytes, tests/test_triton_compile.py)."""
    kw = cfg.kwargs
    stage = (kw["BLOCK_M"] + kw["BLOCK_N"]) * kw["BLOCK_K"] * element_size
    if mode == 2 and cfg.num_stages * stage + kw["BLOCK_M"] * kw["BLOCK_N"] * 4 > 227 * 1024:
        return cfg.num_stages - 1
    return cfg.num_stages


# M stays specialized (on M % 16 == 0 and M == 1): without it bf16 4096^3 ran 0.216 ms against
# 0.185 (H200, same config); a new M compiles at most once per class, and Triton's disk cache
# serves a new process.
@triton.jit
def _matmul_kernel(
    # Pointers (bias_ptr: read only with HAS_BIAS)
    a_ptr, b_ptr, c_ptr, bias_ptr,
    # Sizes
    M, N, K,
    # Strides (in elements; c is contiguous)
    stride_am, stride_ak, stride_bk, stride_bn, stride_biasm, stride_biasn,
    # Meta-parameters
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
    GROUP_M: tl.constexpr, INPUT_PRECISION: tl.constexpr, INT_SUMS: tl.constexpr, DOT: tl.constexpr,
    HAS_BIAS: tl.constexpr,  # 0: none; 1, 2: _plus_bias
):
    """One BLOCK_M x BLOCK_N tile of c per program. GROUP_M = 1 numbers the tiles row-major
    (`blocked`); GROUP_M > 1 walks GROUP_M rows of tiles column by column (`grouped`), so the
    programs running at once share the same few tiles of a and b in L2. INT_SUMS: int32 sums
    (integer inputs); DOT False: no tl.dot for the type (int32), an elementwise product summed."""
    # -- map the program id to a tile of c: grouped launch order for L2 reuse --
    pid_m, pid_n = _grouped_tile(tl.program_id(0), tl.cdiv(M, BLOCK_M), tl.cdiv(N, BLOCK_N), GROUP_M)

    # -- pointers to the first K slice; 64-bit offsets: M*K, K*N or M*N may pass 2^31 --
    offs_m = pid_m.to(tl.int64) * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n.to(tl.int64) * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    mask_m = offs_m < M
    mask_n = offs_n < N
    a_ptrs = a_ptr + offs_m[:, None] * stride_am + offs_k[None, :].to(tl.int64) * stride_ak
    b_ptrs = b_ptr + offs_k[:, None].to(tl.int64) * stride_bk + offs_n[None, :] * stride_bn
    a_step = tl.cast(stride_ak, tl.int64) * BLOCK_K
    b_step = tl.cast(stride_bk, tl.int64) * BLOCK_K

    # -- accumulate in float32 whatever the float type (int32 for integers); masked elements
    #    load as 0 and add nothing, so edge tiles and a K that is not a multiple of BLOCK_K are exact --
    if INT_SUMS:
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.int32)
    else:
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        mask_k = offs_k < K - k0
        a = tl.load(a_ptrs, mask=mask_m[:, None] & mask_k[None, :], other=0)
        b = tl.load(b_ptrs, mask=mask_k[:, None] & mask_n[None, :], other=0)
        if DOT:
            acc = tl.dot(a, b, acc, input_precision=INPUT_PRECISION, out_dtype=acc.dtype)
        else:
            acc += tl.sum(a[:, :, None] * b[None, :, :], axis=1)
        a_ptrs += a_step
        b_ptrs += b_step

    # -- write back with a mask, in the output's dtype (the bias added first: one rounding) --
    if HAS_BIAS:
        acc = _plus_bias(acc, bias_ptr, offs_m, offs_n, M, N, stride_biasm, stride_biasn, HAS_BIAS)
    c_ptrs = c_ptr + offs_m[:, None] * N + offs_n[None, :]
    tl.store(c_ptrs, acc.to(c_ptr.dtype.element_ty), mask=mask_m[:, None] & mask_n[None, :])


# ---------------------------------------------------------------------------------------------
# TMA, persistent: tutorial 09's road (host-side tensor descriptors, at most one program per SM)
# ---------------------------------------------------------------------------------------------
@triton.jit(do_not_specialize=["programs"])
def _tma_persistent_kernel(
    # Tensor descriptors (made on the host, one per call): a, b and c as the kernel reads them
    a_desc, b_desc, c_desc,
    # the epilogue's bias, read only with HAS_BIAS
    bias_ptr,
    # Sizes
    M, N, K,
    # the grid's programs: a runtime argument, since ``balanced_grid`` sizes it by the shape (a
    # constexpr would compile once per size)
    programs,
    stride_biasm, stride_biasn,
    # Meta-parameters
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,
    SPLIT_K: tl.constexpr, SWAP_AB: tl.constexpr, EPILOGUE_SUBTILE: tl.constexpr,
    A_T: tl.constexpr, B_T: tl.constexpr, INPUT_PRECISION: tl.constexpr, INT_SUMS: tl.constexpr,
    C_PTR: tl.constexpr = False, FUSE_K: tl.constexpr = False, HAS_BIAS: tl.constexpr = 0,
):
    """``programs`` programs loop over the work items: every BLOCK_M x BLOCK_N tile of c, times SPLIT_K
    slices of K. Operands come in by TMA: ``A_T`` / ``B_T`` say a / b are read through a
    descriptor of their transpose (a column-major a; b = W.t() of a row-major (N, K) W), whose
    tiles are transposed in shared memory for free. With SPLIT_K > 1, c_desc is a float32
    workspace holding each slice's partial tile at rows split * (padded M) + m, summed after.
    ``SWAP_AB`` computes the tile of c^T = b^T a^T: M sits in the MMA's narrow N slot (few-row
    products). (It does not make a row-major float32 b the K-major operand a TF32 wgmma needs:
    0.21x cuBLAS with or without it, H200; the plan copies b K-major instead.)
    ``C_PTR``: c_desc is c's pointer (contiguous, N wide), written by masked stores: for a c whose
    rows no descriptor can write (not 16-byte aligned), with SPLIT_K = 1.
    ``FUSE_K``: every item's K loop has the same bounds (SPLIT_K = 1), so ``flatten`` fuses the
    item and K loops into one software pipeline: the next tile's first loads are in flight during
    this tile's epilogue (with bounds computed per item the loops stay nested, and each tile waits
    for its first loads). Off where a program has one item (nothing to overlap) and for masked
    stores of c (fused, their layout conversion cannot reuse the stages' shared memory). Measured
    in docs/decisions/012-triton-matmul-selection.md.
    ``HAS_BIAS``: c = a b + bias, added to the float32 tile before its one rounding (SPLIT_K = 1;
    split, the sum of the slices adds it)."""
    tl.static_assert(SPLIT_K == 1 or not FUSE_K, "FUSE_K runs every item over all of K")
    tl.static_assert(SPLIT_K == 1 or not HAS_BIAS, "a split's bias goes to the sum of its slices")
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    num_tiles = num_pid_m * num_pid_n
    k_tiles = tl.cdiv(K, BLOCK_K)
    k_per_split = tl.cdiv(k_tiles, SPLIT_K)
    # TMA clips out-of-bounds reads to zero and out-of-bounds writes to nothing: edge tiles and a
    # K tail need no masks
    # flatten: with FUSE_K the K loops of consecutive items form one software pipeline (loads of
    # the next tile overlap the epilogue of this one)
    for item in tl.range(tl.program_id(0), num_tiles * SPLIT_K, programs, flatten=True):
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
        c_type = c_desc.dtype.element_ty if C_PTR else c_desc.dtype
        acc = tl.zeros((BLOCK_N, BLOCK_M) if SWAP_AB else (BLOCK_M, BLOCK_N),
                       dtype=c_type if INT_SUMS else tl.float32)
        for kt in range(k_lo, k_hi):
            off_k = kt * BLOCK_K
            a = a_desc.load([off_k, off_m]).T if A_T else a_desc.load([off_m, off_k])
            b = b_desc.load([off_n, off_k]).T if B_T else b_desc.load([off_k, off_n])
            if SWAP_AB:
                acc = tl.dot(b.T, a.T, acc, input_precision=INPUT_PRECISION, out_dtype=acc.dtype)
            else:
                acc = tl.dot(a, b, acc, input_precision=INPUT_PRECISION, out_dtype=acc.dtype)
        c = acc.T if SWAP_AB else acc
        if HAS_BIAS:
            c = _plus_bias(c, bias_ptr, off_m + tl.arange(0, BLOCK_M), off_n + tl.arange(0, BLOCK_N), M, N,
                           stride_biasm, stride_biasn, HAS_BIAS)
        c = c.to(c_type)
        row = split * (num_pid_m * BLOCK_M) + off_m
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
                     split_stride, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    """``few_rows``: a BLOCK_M x BLOCK_N tile of c over K, or over split program_id(2)'s k_per_split
    of it into that split's partial sums (split_stride elements apart in a float32 workspace), for
    a few rows of a. No dot: multiply-adds broadcast over [BLOCK_M, BLOCK_N, BLOCK_K] and summed over
    BLOCK_K once, at the end, so each row of W = b^T is read along K (16-byte loads where b is
    K-major) and never staged; the next k step's loads are issued before this step's multiply-adds,
    so two steps of W are in flight."""
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
    c_ptrs = c_ptr + pid_k.to(tl.int64) * split_stride + offs_m[:, None] * N + offs_n[None, :]
    tl.store(c_ptrs, c.to(c_ptr.dtype.element_ty), mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))


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


# ---------------------------------------------------------------------------------------------
# Plans and the public wrapper
# ---------------------------------------------------------------------------------------------
# The TMA variants launch one kernel, each a step: ``tma_persistent`` (descriptors, persistent
# grid), ``split_k`` (the same with K split across programs when the tiles alone leave SMs idle).
# ``fma_ws`` (exact float32 only): the Gluon kernel of ``_matmul_fma``, an explicit thread tile and
# a producer warp. ``few_rows`` (floats): a few rows of a against W = b^T on CUDA cores, no dot.
# ``few_rows_ws`` (exact float32 only): the same pairs of rows in Gluon, staged by TMA, k in-thread.
VARIANTS = ("tma_persistent", "split_k", "fma_ws", "few_rows", "few_rows_ws", "grouped", "blocked")  # the usual default first
TMA_VARIANTS = ("tma_persistent", "split_k")
DESCRIPTOR_VARIANTS = (*TMA_VARIANTS, "fma_ws", "few_rows_ws")  # launches with host descriptors (not traced: ops.py)
BIAS_VARIANTS = (*TMA_VARIANTS, "grouped", "blocked")  # those whose epilogue adds a bias (addmm_plan)


def _input_precision(dtype) -> str:
    """tl.dot's input_precision for this call. float32 follows torch's matmul setting; for 16-bit
    inputs the argument does not change the math, so they keep Triton's default ("tf32")."""
    if dtype == torch.float32 and float32_matmul_precision() == "highest":
        return "ieee"
    return "tf32"


# ---- TMA eligibility: what a descriptor needs --------------------------------------------------
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
        self._plan = None  # the transpose's (one key: the operand's metadata is the matmul plan's)

    def _laid_out(self, buf):
        return buf.t() if self.kmajor else buf

    def __call__(self, t) -> torch.Tensor:
        buf = padded(self.rows, self.cols, self.dtype, t.device)
        src = t.t() if self.kmajor else t
        if buf.is_contiguous() and src.stride(0) == 1:  # src is a transposed view: transpose it back
            if self._plan is None:
                self._plan = _TRANSPOSE_PLANS.get((src.t(),), None, buf)
            self._plan.run(src.t(), buf)  # (buf is new: no alias to check)
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
        self.tiles = [triton.cdiv(rows, self.BLOCK_R) * triton.cdiv(cols, self.BLOCK_C)
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


def _hopper(device) -> bool:
    return interpreting() or torch.cuda.get_device_capability(device)[0] >= 9


def fma_ws_runs(device) -> bool:
    """Can ``fma_ws`` run on ``device``: a Hopper GPU, a triton with the Gluon calls it uses
    (``_matmul_fma.AVAILABLE``), not Triton's interpreter (Gluon has none)."""
    return (not interpreting() and _matmul_fma.AVAILABLE and torch.device(device).type == "cuda"
            and torch.cuda.get_device_capability(device)[0] >= 9)


# Small products of many rows stay on grouped, where three descriptors cost more host time than
# they save, unless few rows (split-K and swap-AB win there) or a float32 W.t() (grouped reads it
# at 0.41x). Since launches cache their encodings a TMA call costs ~1 us more host time than
# grouped (docs/decisions/012-triton-matmul-selection.md), and at 1024^3 bf16 its kernel saves 3.6 (H100, flushed: 64x128 tiles
# 10.9 us, grouped 14.5; tools/sweep_tma_configs.py): the line sits below 1024^3 now.
SMALL_PRODUCT = 1 << 28


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
FEW_ROWS, FEW_ROWS_TILE = 64, 16
# Rows of a where few_rows_ws runs a K-major b (where Gluon runs, a and W readable by descriptors as
# they lie): H100, x torch, against the default before it (few_rows; fma_ws from 64 rows): (16, 4096,
# 4096) 1.46 / 1.17, (16, 11008, 4096) 1.26 / 0.86, (32, 4096, 4096) 1.10 / 0.57, (32, 14336, 4096)
# 1.41 / 0.69, (64, 4096, 4096) 0.89 / 0.44, (64, 14336, 4096) 0.76 / 0.40. Below 16 rows its 16-row
# tile idles (8 rows: 0.41 against few_rows' 1.31); past 64 rows fma_ws was not beaten by its 4-warp
# form ((96, 4096, 4096) 0.69 / 0.66, (128, 11008, 4096) 0.57 / 0.64). docs/decisions/014-exact-float32-triton.md
FEW_ROWS_WS = (16, 64)


def pick_variant(a, b, out=None) -> str:
    """What ``variant=None`` runs: ``fma_ws`` for exact float32 where it pays (``_fma_ws_pays``);
    exact float32 on a K-major b (W.t()): ``few_rows_ws`` with ``FEW_ROWS_WS`` rows of a where it
    runs (``fma_ws_runs``) and descriptors read a and W as they lie, else ``few_rows`` under
    ``FEW_ROWS``; up to ``FEW_ROWS`` rows on a row-major b: ``grouped`` (16-row tiles) where
    ``_few_rows_grouped``, else ``few_rows``; else on Hopper,
    the TMA kernel where descriptors can read a and b and write c where they lie (``split_k`` when
    its tiles alone would fill under half the SMs) and the product is not a small one of many rows
    (``SMALL_PRODUCT``), else ``grouped`` (int32 always: no dot takes it). 16-bit and exact float32
    rows that are not 16-byte aligned (an odd K or N): the TMA kernel too, on copies of a and b with
    16-byte rows and writing c by masked stores, where the product is not small and the copies are
    small beside it (``_unaligned_tma``)."""
    if a.dtype == torch.int32 or not _hopper(a.device):
        return "grouped"
    (M, K), N = a.shape, b.shape[1]
    if a.dtype == torch.float32 and _input_precision(a.dtype) == "ieee":
        if not _major(b):
            if M <= FEW_ROWS:
                return "grouped" if _few_rows_grouped(M, N, sm_count(a.device)) else "few_rows"
        elif FEW_ROWS_WS[0] <= M <= FEW_ROWS_WS[1] and fma_ws_runs(a.device) and \
                _tma_transposed(a) is False and _tma_transposed(b) is True:
            return "few_rows_ws"
        elif M < FEW_ROWS:
            return "few_rows"
    if _fma_ws_pays(a, b, out):
        return "fma_ws"
    if not _tma_ok(a, b, out):
        if not _unaligned_tma(a, b):
            return "grouped"
    elif M > 256 and M * N * K <= SMALL_PRODUCT:
        # (never int8: grouped reads a row-major int8 b at a tenth of the TMA kernel's rate, 104 against
        # 1004 TOPS at 4096^3 on an H200)
        if a.element_size() == 2 or (a.element_size() == 4 and not _tma_transposed(b)):
            return "grouped"
    cfg = _family_config("split_k", a, b, _input_precision(a.dtype))
    return "split_k" if cfg.kwargs["SPLIT_K"] > 1 else "tma_persistent"


def _few_rows_grouped(M: int, N: int, sms: int) -> bool:
    """Exact float32, up to ``FEW_ROWS`` rows of a, b row-major: does ``grouped`` (16-row tiles) beat
    ``few_rows``? From 17 rows always; below, where its 16 x 64 tiles fill the SMs (twice at one row)."""
    tiles = triton.cdiv(M, FEW_ROWS_TILE) * triton.cdiv(N, _FEW_ROWS_FP32[-1].kwargs["BLOCK_N"])
    return M > FEW_ROWS_TILE or tiles >= (2 if M == 1 else 1) * sms


def _fma_ws_pays(a, b, out=None) -> bool:
    """Does an exact float32 product run ``fma_ws``? Where it runs at all (``fma_ws_runs``), K is 16
    of its slices (1024) or more, M is 64 or more, its programs (whole tiles and stream-K runs,
    ``fma_ws_stream_k``) fill 0.6 of the SMs and c's rows are 16-byte aligned. H100, x torch, b
    row-major / W.t(), against the best of tma_persistent and grouped (docs/decisions/014-exact-float32-triton.md):
    with stream-K it wins on few tiles where K is long: 1024x1024x4096 0.92 / 0.88 against 0.81 /
    0.69, 512x512x4096 0.84 / 0.82 against 0.44 / 0.45, 768x768x8192 0.93 / 0.89 against 0.47 /
    0.41, 128x11008x4096 1.04 / 0.64 against 0.67 / 0.30, 64x4096x4096 0.54 / 0.44 against 0.43 /
    0.19; at K = 1024 it ties or wins (1024x4096x1024 0.88 / 0.84 against 0.89 / 0.85, 1024^3 0.99 /
    0.95 against 1.03 / 0.87); under it tma_persistent wins (2048x2048x512 0.83 / 0.81 against 0.89
    / 0.87, 4096x4096x256 0.89 / 0.92 against 0.90 / 0.93)."""
    if a.dtype != torch.float32 or _input_precision(a.dtype) != "ieee" or not fma_ws_runs(a.device):
        return False
    (M, K), N = a.shape, b.shape[1]
    f = _matmul_fma
    if K < 16 * f.BLOCK_K or M < 64 or not _rows_fit(N, 4, out):
        return False
    sms = sm_count(a.device)
    tiles = triton.cdiv(M, f.BLOCK_M) * triton.cdiv(N, f.BLOCK_N)
    return 10 * fma_ws_stream_k(tiles, triton.cdiv(K, f.BLOCK_K), sms)[3] >= 6 * sms


def _unaligned_tma(a, b) -> bool:
    """Does a 16-bit or exact float32 product whose a, b or c descriptors cannot take where they
    lie run the TMA kernel on copies (``_tma_run``)? Where it is not small (``SMALL_PRODUCT``) and
    the copies of a and b come to at most 1/256 of its multiply-adds: copying an element (4 bytes
    moved at ~3 TB/s) takes about as long as ~500 of them at ~700 TFLOP/s. H100, x torch, b
    row-major / W.t(): bf16 4097x4095x129 0.88x / 0.78x (grouped) against 1.32x / 1.41x this way;
    495x5333x71 (small) 0.83x / 0.84x against 0.64x / 0.67x (docs/decisions/012-triton-matmul-selection.md). Exact
    float32 (ten odd shapes, docs/decisions/012-triton-matmul-selection.md): the TMA kernel ahead on 18 of 20 cases, 0.62-0.88x
    against grouped's 0.31-0.44x with W.t() and 0.67-0.88x against 0.48-0.83x row-major; behind
    at 1024x1023x1025 and 1000x1030x777 row-major (0.78x / 0.40x against 0.86x / 0.41x). TF32 was
    not measured: it stays on grouped."""
    (M, K), N = a.shape, b.shape[1]
    copies = (M * K if _tma_transposed(a) is None else 0) + (K * N if _tma_transposed(b) is None else 0)
    exact32 = a.dtype == torch.float32 and _input_precision(a.dtype) == "ieee"
    return (a.element_size() == 2 or exact32) and M * N * K > SMALL_PRODUCT and 256 * copies <= M * N * K


# ---- configs -----------------------------------------------------------------------------------
# (warp specialization, tl.range(..., warp_specialize=True), ran within 1% of the same config at
# bf16 4096^3 and 8192^3 on an H200: not kept; docs/decisions/012-triton-matmul-selection.md.
# triton 3.6 makes no producer partition of this kernel for sm_90: no setmaxnreg in its PTX)
def _tma_config_of(bm, bn, bk, warps, stages, swap=False, subtile=False, group_m=8):
    return triton.Config({"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "GROUP_M": group_m, "SPLIT_K": 1,
                          "SWAP_AB": swap, "EPILOGUE_SUBTILE": subtile}, num_warps=warps, num_stages=stages)


def _with_split(cfg, split_k: int) -> triton.Config:
    return triton.Config(dict(cfg.kwargs, SPLIT_K=split_k), num_warps=cfg.num_warps, num_stages=cfg.num_stages)


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
# float32 (exact or TF32): 32-deep slices are 128 bytes, one TMA swizzle row
_TMA_FP32 = [
    _tma_config_of(128, 128, 32, 8, 3), _tma_config_of(128, 256, 32, 8, 3, subtile=True),
    _tma_config_of(128, 128, 32, 8, 4), _tma_config_of(128, 128, 16, 8, 4), _tma_config_of(64, 256, 32, 8, 3),
    _tma_config_of(256, 64, 32, 8, 3), _tma_config_of(128, 128, 32, 4, 4), _tma_config_of(128, 64, 32, 4, 4),
    _tma_config_of(64, 128, 32, 4, 4), _tma_config_of(64, 64, 32, 4, 4),
]
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


# 65 to 256 rows (a prefill chunk, a batch of requests), 16-bit. The widths, from 128-deep slices
# of each (H200, bf16 W.t(), docs/decisions/012-triton-matmul-selection.md): (128, 14336, 4096) 128x128 43.4 us,
# 128x64 47.7; (128, 6144, 4096) 128x64 26.7; (128, 4096, 4096) 64x64 22.0, 128x64 23.3. These
# products stream W: an SM's rate is the bytes of W it has in flight, and a's rows take most of each
# stage, so the 128x128 tile now takes 64-deep slices in 6 stages (5 x 16 KB of W in flight against
# 2 x 32 KB in 3 stages of 128-deep ones): (128, 10240, 8192) 49.0 us against 57.8, torch 46.9
# (docs/decisions/012-triton-matmul-selection.md)
_MID_ROWS_16BIT = [_tma_config_of(128, 128, 64, 4, 6, swap=True, subtile=True),
                   _tma_config_of(128, 64, 128, 4, 4, swap=True), _tma_config_of(64, 64, 128, 4, 4)]
# On a long K, two K slices of 128-row tiles beat 64-row tiles that read b twice ((128, 4096, 14336):
# 47.5 us against 54.3); shorter, the split's second launch and workspace cost more than they save
LONG_K = 8192


def candidates(element_size: int, variant: str = "grouped", M: int = 1 << 20) -> list:
    """The configs a variant chooses from (and tuning benchmarks) for this element size and M
    (int8: no swap-AB ladder, no split; int32 runs its one config)."""
    if element_size == 1:
        return _TMA_8BIT if variant in TMA_VARIANTS else _CONFIGS_8BIT
    if variant in TMA_VARIANTS and M <= 64:  # the ladder, and deeper slices of its ends
        bm, bk = max(16, triton.next_power_of_2(M)), 128 if element_size == 2 else 64
        return _swap_ladder(M, element_size) + [_tma_config_of(bm, 32, 4 * bk, 4, 3, swap=True),
                                                    _tma_config_of(bm, 128, 2 * bk, 4, 3, swap=True)]
    if variant in TMA_VARIANTS:
        if element_size == 2:
            return (_MID_ROWS_16BIT if M <= 256 else []) + _TMA_16BIT
        return _TMA_FP32
    if element_size == 4 and M <= FEW_ROWS:
        return _FEW_ROWS_FP32 + _CONFIGS_FP32
    return _CONFIGS_16BIT if element_size == 2 else _CONFIGS_FP32


def _tiles(cfg, M, N) -> int:
    return triton.cdiv(M, cfg.kwargs["BLOCK_M"]) * triton.cdiv(N, cfg.kwargs["BLOCK_N"])


# grouped on 16-bit operands whose rows a 16-byte load cannot read (K or N not a multiple of 8, a
# base off 16 bytes): element loads. Large products of such rows run the TMA kernel on copies
# (_unaligned_tma), so these are for small ones. At (495, 5333, 71), bf16 and fp16, in turns x torch
# (H100, docs/decisions/012-triton-matmul-selection.md): 32x256x32 with 8 warps 0.95x for a row-major B (128x128x32,
# the fastest at (4097, 4095, 129) in docs/decisions/012-triton-matmul-selection.md, 0.89-0.90x); 64x128x128 with 4 warps 0.91x for a
# K-major one (64x128x32 0.83-0.84x; the same tile ran 0.13x on a row-major B).
_UNALIGNED_16BIT = {False: _config_of(32, 256, 32, 8, 2), True: _config_of(64, 128, 128, 4, 3)}


def _heuristic_config(M: int, N: int, K: int, element_size: int, sms: int, variant: str = "grouped",
                      unaligned: bool = False, b_kmajor: bool = False) -> triton.Config:
    """Without tuning. Few rows (TMA): the widest rung of the row class's ladder whose tiles keep
    half the SMs busy. 16-bit TMA past 256 rows: the tile and K split of least modelled time
    (``_modelled_seconds``), 128x256 whole in 4 stages from ``DEEP_K``. 16-bit grouped where a
    or b has rows not 16-byte aligned (``unaligned``): ``_UNALIGNED_16BIT``'s tile for B's layout
    where its tiles fill every SM.
    Otherwise the first (largest) config of the list whose tiles fill every SM,
    else the one with the most tiles (small problems: more programs beat bigger tiles), of those
    the one with the fewest rows. The TMA kernel splits K by ``_splits``."""
    if variant == "grouped" and element_size == 2 and unaligned:
        cfg = _UNALIGNED_16BIT[b_kmajor]
        if _tiles(cfg, M, N) >= sms:
            return cfg
    ladder = None
    if element_size == 1:
        pass
    elif variant in TMA_VARIANTS and M <= 64:
        ladder = _swap_ladder(M, element_size)
    elif variant in TMA_VARIANTS and M <= 256 and element_size == 2:
        ladder = _MID_ROWS_16BIT
    if ladder:
        cfg = next((c for c in ladder if 2 * _tiles(c, M, N) >= sms), ladder[-1])
        if ladder is _MID_ROWS_16BIT and cfg is ladder[-1] and K >= LONG_K:
            cfg = ladder[-2]  # few 128-row tiles, which _splits cuts along K
    elif variant in TMA_VARIANTS and element_size == 2:
        # (stages are not modelled: on a tie the first config wins, whose splits fit)
        cfg = min((_with_split(c, s) for c in _TMA_16BIT for s in range(1, 5)),
                  key=lambda c: _modelled_seconds(c, M, N, K, sms))
        return _TMA_16BIT[1] if K >= DEEP_K and cfg.kwargs == _TMA_16BIT[0].kwargs else cfg
    else:
        configs = candidates(element_size, variant, M)
        cfg = next((c for c in configs if _tiles(c, M, N) >= sms),
                   max(configs, key=lambda c: (_tiles(c, M, N), -c.kwargs["BLOCK_M"])))
    return _with_split(cfg, _splits(cfg, M, N, K, sms, element_size)) if variant in TMA_VARIANTS else cfg


# Each 16-bit TMA tile's rate per SM by (BLOCK_M, BLOCK_N, warps), as a share of 128x256's (H100,
# median over the shapes where K stays whole and the tiles run 3 waves or more;
# tools/sweep_tma_configs.py, docs/decisions/012-triton-matmul-selection.md)
_TILE_RATE = {(128, 256, 8): 1.0, (256, 128, 8): 0.95, (128, 128, 4): 0.93, (128, 128, 8): 0.89, (64, 128, 4): 0.59,
              (128, 64, 4): 0.53, (64, 64, 4): 0.42}
_SM_FLOPS = 5.6e12      # one SM's 16-bit dense rate on 128x256 tiles (~740 TFLOP/s on 132 SMs)
_SPLIT_SECONDS = 4e-6   # the sum's launch, beside its bytes
_SPLIT_BYTES_PER_S = 2.5e12


def _modelled_seconds(cfg, M: int, N: int, K: int, sms: int) -> float:
    """Time of a 16-bit TMA config: waves of work items (tiles x K slices) on ``sms`` SMs, each
    item its slice's FLOPs at the tile's rate, and for a split the float32 partials written and
    read once more plus a launch. Stages are not modelled. (The sweep's 31 shapes of 1024-8192
    rows: the pick within 3% of the fastest config on 26, 3-5% on 4, 14% on 8192x10240x8192 where
    4 stages beat the picked 3; the rule before ran 64x64 or 128x64 tiles that "fill every SM"
    where 128x128 or 128x256 tiles, in K slices where few, ran 1.7-2.2x faster.)"""
    kw = cfg.kwargs
    bm, bn, bk, split = kw["BLOCK_M"], kw["BLOCK_N"], kw["BLOCK_K"], kw["SPLIT_K"]
    k_slice = triton.cdiv(triton.cdiv(K, split), bk) * bk
    if split > 1 and k_slice < 4 * bk:
        return float("inf")
    waves = triton.cdiv(_tiles(cfg, M, N) * split, sms)
    seconds = waves * 2 * bm * bn * k_slice / (_TILE_RATE[bm, bn, cfg.num_warps] * _SM_FLOPS)
    if split > 1:
        seconds += _SPLIT_SECONDS + 2 * split * M * N * 4 / _SPLIT_BYTES_PER_S
    return seconds


def _splits(cfg, M: int, N: int, K: int, sms: int, element_size: int) -> int:
    """Slices of K for ``cfg``'s tiles, where the tiles alone would leave over half the SMs idle:
    the count that keeps the most SMs busy across the waves of work items (fewest slices on a
    tie), each slice at least 4 BLOCK_K deep, and the float32 partials (written and read once
    more) under a quarter of b's bytes: few-row products only. The ladders of narrower tiles come
    first: a split costs a workspace and a second launch, about 25 us more host time a call (H200,
    back to back, (1, 4096, 4096): 65.6 us a call in two slices of 16x64 tiles, torch 24.0; the
    plan's run alone, whole on 16x32 tiles, 15.7)."""
    tiles, k_tiles = _tiles(cfg, M, N), triton.cdiv(K, cfg.kwargs["BLOCK_K"])
    most = min(16, k_tiles // 4, (K * N) // (16 * M * N))  # b's bytes / 4 >= S * M * N * 4 (16-bit b)
    if element_size == 1:
        return 1  # int8: not built (the workspace and its sum are float32)

    def busy(s):  # the share of SM time doing work across the waves of tiles * s items
        items = tiles * s
        return items / (triton.cdiv(items, sms) * sms)
    if busy(1) >= 0.5:
        return 1
    return max(range(1, max(1, most) + 1), key=lambda s: (round(busy(s), 2), -s))


def _tuning_key(variant, M, N, K, a, b, precision) -> str:
    """The bucket a tuned config serves: the variant, dtype, dot precision, which operands are
    K- / N-major, and each extent to the next power of two."""
    bm, bn, bk = _tuning.bucket(M, N, K)
    a_major, b_major = "ak" if a.stride(1) == 1 else "am", "bn" if b.stride(1) == 1 else "bk"
    family = "tma" if variant in TMA_VARIANTS else variant  # the TMA variants share their tile configs
    return f"{family} {dtype_name(a.dtype)} {precision} {a_major} {b_major} {bm}x{bn}x{bk}"


def _family_config(variant: str, a, b, precision: str) -> triton.Config:
    """The tuned config of the call's bucket, else the heuristic one (the TMA variants share one:
    its SPLIT_K is what tuning or ``_splits`` chose)."""
    (M, K), N = a.shape, b.shape[1]
    sms = sm_count(a.device)
    if a.dtype == torch.int32:
        return _CONFIG_INT32
    if interpreting():
        return _with_split(_TMA_INTERPRETER, _splits(_TMA_INTERPRETER, M, N, K, sms, a.element_size())) \
            if variant in TMA_VARIANTS else _CONFIG_INTERPRETER
    key = _tuning_key(variant, M, N, K, a, b, precision)
    cfg = _tuning.lookup(a.device, key)
    if cfg is None and _tuning.enabled() and not torch.cuda.is_current_stream_capturing():
        cfg = _tune(variant, a, b, precision, key)
    return cfg if cfg is not None else _heuristic_of(variant, a, b)


def _heuristic_of(variant: str, a, b) -> triton.Config:
    """``_heuristic_config`` for these operands."""
    (M, K), N = a.shape, b.shape[1]
    return _heuristic_config(M, N, K, a.element_size(), sm_count(a.device), variant, _unaligned(a, b),
                             b.stride(1) != 1)


def config_for(variant: str, a, b, precision: str) -> triton.Config:
    """The config of a call: blocked's fixed one, else the family's, with ``tma_persistent``
    keeping K whole and ``split_k`` splitting it (by ``_splits`` where the family's does not)."""
    if variant == "blocked":
        bm, bn, bk, warps, stages = _blocked_config(a.dtype)
        return _config_of(bm, bn, bk, warps, stages, group_m=1)
    if variant == "fma_ws":  # one tile, fixed (_matmul_fma): nothing to tune
        f = _matmul_fma
        return _config_of(f.BLOCK_M, f.BLOCK_N, f.BLOCK_K, f.WARPS, f.STAGES)
    if variant == "few_rows":  # by M, fixed: nothing to tune
        return few_rows_config(a.shape[0])
    if variant == "few_rows_ws":  # by M, fixed: nothing to tune
        return few_rows_ws_config(a.shape[0])
    cfg = _family_config(variant, a, b, precision)
    if variant == "tma_persistent":
        return _with_split(cfg, 1)
    if variant == "split_k" and cfg.kwargs["SPLIT_K"] == 1:
        (M, K), N = a.shape, b.shape[1]
        return _with_split(cfg, _splits(cfg, M, N, K, sm_count(a.device), a.element_size()))
    return cfg


# ---- launches ----------------------------------------------------------------------------------
def plan_launch(cfg: triton.Config, M: int, N: int, precision: str, dtype=torch.float32,
                has_bias: int = 0) -> TritonLaunch:
    """``grouped`` / ``blocked`` with ``cfg``: one program per BLOCK_M x BLOCK_N tile of c."""
    meta = dict(cfg.kwargs, INPUT_PRECISION=precision, INT_SUMS=not dtype.is_floating_point,
                DOT=dtype != torch.int32, HAS_BIAS=has_bias)  # (0, 1 or 2: bias_mode)
    grid = (triton.cdiv(M, meta["BLOCK_M"]) * triton.cdiv(N, meta["BLOCK_N"]),)
    return TritonLaunch(_matmul_kernel, grid, meta, dict(num_warps=cfg.num_warps, num_stages=cfg.num_stages))


def _with_bias(bound, bias_strides):
    """The plan's run over ``bound(a, b, c, bias)``: run(a, b, out) where there is no bias (out
    stands in for the pointer the kernel does not read), else run(a, b, bias, out)."""
    if bias_strides is None:
        return lambda a, b, out: bound(a, b, out, out)
    return lambda a, b, bias, out: bound(a, b, out, bias)


def _pointer_run(cfg, a, b, precision, bias_strides=None):
    """run(a, b, out) of ``grouped`` / ``blocked``: pointers and strides, any layout
    (``bias_strides``: run(a, b, bias, out), the bias added in the epilogue)."""
    (M, K), N = a.shape, b.shape[1]
    launch = plan_launch(cfg, M, N, precision, a.dtype, bias_mode(bias_strides))
    return _with_bias(launch.bind(M, N, K, *a.stride(), *b.stride(), *(bias_strides or (0, 0))), bias_strides)


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
    c_block = (bm, bn // 2) if kw["EPILOGUE_SUBTILE"] else (bm, bn)
    rows = triton.cdiv(M, bm) * bm  # a split's workspace: each slice's rows in whole tiles
    # what the kernel writes: the split's workspace, or out (contiguous) through a descriptor or,
    # where its rows are not 16-byte aligned, by masked stores (C_PTR)
    c = padded(split_k * rows, N, torch.float32, "meta") if split_k > 1 else None
    c_ptr = c is None and not c_fits
    c_spec = DescriptorSpec(*(((M, N), (N, 1)) if c is None else (tuple(c.shape), (c.stride(0), 1))), c_block)
    items = triton.cdiv(M, bm) * triton.cdiv(N, bn) * split_k
    programs = balanced_grid(items, sms)
    has_bias = bias_mode(bias_strides)
    biases = bias_strides or (0, 0)
    meta = dict(kw, A_T=a_t, B_T=b_t, INPUT_PRECISION=precision, INT_SUMS=a.dtype == torch.int8,
                C_PTR=c_ptr, FUSE_K=split_k == 1 and items > programs and not c_ptr,
                HAS_BIAS=has_bias if split_k == 1 else 0)
    launch = TritonLaunch(_tma_persistent_kernel, (programs,), meta,
                          dict(num_warps=cfg.num_warps, num_stages=bias_stages(cfg, a.element_size(), meta["HAS_BIAS"])),
                          descriptors=(_descriptor(a, a_t, [bm, bk]), _descriptor(b, b_t, [bk, bn]))
                          + (() if c_ptr else (c_spec,)))
    if not (copy_a or copy_b or c is not None):
        return _with_bias(launch.bind(M, N, K, programs, *biases), bias_strides)

    def operands(a, b):
        pa, pb = pads(a, b)
        return (pa if copy_a else a), (reorder_b(b) if reorder_b else pb if copy_b else b)

    if split_k == 1:
        return _with_bias(lambda a, b, out, bias: launch(*operands(a, b), out, bias, M, N, K, programs, *biases),
                          bias_strides)

    block = 1024
    sum_launch = TritonLaunch(_sum_splits_kernel, (triton.cdiv(M * N, block),),
                              dict(SPLIT_K=split_k, BLOCK=block, HAS_BIAS=has_bias), dict(num_warps=4))

    def run(a, b, out, bias):
        ws = padded(split_k * rows, N, torch.float32, a.device)
        launch(*operands(a, b), ws, ws, M, N, K, programs, 0, 0)
        sum_launch(ws, out, bias, N, M * N, ws.stride(0), rows * ws.stride(0), *biases)
    return _with_bias(run, bias_strides)


# A stream-K run's slices at least, and the slices a shared wave must save an SM at least (it
# costs the partial sums' stores and their sum): runs of 8 ran 1024^3 at 0.99x torch; sharing a
# wave 0.94 full lost (2048^3 0.89x against 0.91x whole: 2 slices saved), 0.76 full won at K =
# 4096 (15 slices saved: 0.932x against 0.927x), not at K = 1024 (4: 0.925x against 0.928x);
# H100, docs/decisions/010-split-k-and-stream-k.md
SK_MIN_SLICES = 8


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
    run = triton.cdiv(shared * k_slices, sms)
    saved = (sms - rem) * k_slices  # slices of idle SMs in the last wave of whole tiles
    if rem == 0 or run < SK_MIN_SLICES or saved < SK_MIN_SLICES * sms or tiles * k_slices >= 1 << 31:
        return tiles, 1, 1, tiles
    return tiles - shared, run, triton.cdiv(k_slices, run) + 1, tiles - shared + triton.cdiv(shared * k_slices, run)


def _fma_ws_run(a, b, c_fits: bool):
    """run(a, b, out) of ``fma_ws``: descriptors over a and b, row-major (a row-major copy of one
    laid out otherwise, ``_LayoutCopy``), 128 x 128 tiles of c shared out by ``fma_ws_stream_k``,
    written through a descriptor where ``c_fits`` (rows 16-byte aligned), else by masked stores;
    tiles shared by several programs are summed from a workspace afterwards (``_sum_slots_kernel``)."""
    (M, K), N = a.shape, b.shape[1]
    f = _matmul_fma
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
    tiles, k_slices = triton.cdiv(M, f.BLOCK_M) * triton.cdiv(N, f.BLOCK_N), triton.cdiv(K, f.BLOCK_K)
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


def few_rows_ws_config(M: int) -> triton.Config:
    """``few_rows_ws``'s tile: 16 rows of a against 256 rows of W (4 consumer warps) up to 16 rows,
    past them 512 (8 warps). H100, exact float32, W.t(), in turns, x torch, 4 / 8 warps: (16, 4096,
    4096) 1.52 / 1.35, (17, 11008, 4096) 0.94 / 1.03, (32, 4096, 4096) 1.09 / 1.13, (64, 4096, 4096)
    0.84 / 0.90, (64, 14336, 4096) 0.68 / 0.76 (docs/decisions/014-exact-float32-triton.md)."""
    f = _matmul_fma
    warps = 4 if M <= 16 else 8
    return _config_of(f.ROWS_BM, 32 * warps * f.ROWS_PER_THREAD, f.ROWS_BK, warps, f.ROWS_STAGES)


def _few_rows_ws_split(cfg, M: int, N: int, K: int, sms: int) -> tuple:
    """(k per slice, slices) of ``few_rows_ws`` with ``cfg``: the most slices, up to 16, that keep
    tiles x slices within one program an SM (a program holds an SM's registers), each 16 stages
    or more."""
    bk = cfg.kwargs["BLOCK_K"]
    tiles = _tiles(cfg, M, N)
    split = 1
    while split < 16 and tiles * split * 2 <= sms and K >= 2 * split * 16 * bk:
        split *= 2
    k_per = triton.cdiv(triton.cdiv(K, split), bk) * bk
    return k_per, triton.cdiv(K, k_per)


def _few_rows_ws_run(cfg, a, b):
    """run(a, b, out) of ``few_rows_ws`` with ``cfg``: descriptors over a (row-major) and W = b^T (b
    K-major; a copy of either laid out otherwise, ``_LayoutCopy``), K split by ``_few_rows_ws_split``
    (``_sliced``)."""
    (M, K), N = a.shape, b.shape[1]
    f = _matmul_fma
    bm, bn, bk = (cfg.kwargs[k] for k in ("BLOCK_M", "BLOCK_N", "BLOCK_K"))
    copy_a = _LayoutCopy(a, False) if _tma_transposed(a) is not False else None
    copy_b = _LayoutCopy(b, True) if _tma_transposed(b) is not True else None
    a_m = copy_a.meta if copy_a else a
    b_m = copy_b.meta if copy_b else b
    specs = (_descriptor(a_m, False, (bm, bk), f.shared_layout((bm, bk))),
             _descriptor(b_m, True, (bk, bn), f.shared_layout((bn, bk))))
    k_per, split = _few_rows_ws_split(cfg, M, N, K, sm_count(a.device))
    meta = dict(BM=bm, BN=bn, BK=bk, NSTAGE=cfg.num_stages, L3=f.rows_layout(cfg.num_warps))
    launch = TritonLaunch(f.few_rows_ws_kernel, (triton.cdiv(N, bn) * triton.cdiv(M, bm), 1, split),
                          meta, dict(num_warps=cfg.num_warps), descriptors=specs)
    sliced = _sliced(launch, (M, N, K, k_per, M * N), split, M, N)
    if not (copy_a or copy_b):
        return sliced

    def run(a, b, out):
        sliced(copy_a(a) if copy_a else a, copy_b(b) if copy_b else b, out)
    return run


def _check_gluon(a, variant: str) -> None:
    """The Gluon variants (``fma_ws``, ``few_rows_ws``) take float32 (an exact dot whatever torch's
    precision setting) where they run (``fma_ws_runs``)."""
    if a.dtype != torch.float32:
        raise TypeError(f"variant {variant} supports float32 only, got {dtype_name(a.dtype)} (it is an exact "
                        f"float32 dot on CUDA cores); use variant=None")
    if not fma_ws_runs(a.device):
        raise ValueError(f"variant {variant} needs a Hopper GPU and a triton with Gluon's warp_specialize and "
                         "dot_fma, and does not run under Triton's interpreter; variant=None runs what does")


def few_rows_config(M: int) -> triton.Config:
    """``few_rows``'s tile: one row of a and 16 of W at M = 1, else 16 rows of a (fewer where M is)
    and 128 of them in all. Swept on the H200 with b = W.t(), exact float32, in turns, x torch:
    (1, 4096, 4096) 1x16 1.05 (one row on W.t() now runs the GEMV; this tile serves a row-major b),
    (16, 4096, 4096) 8x16 1.19 and 16x8 1.18, (16, 11008, 4096) 16x8 0.86, with 64 k a step and the
    next step's loads in flight (without them 8x16 0.98) (docs/decisions/014-exact-float32-triton.md)."""
    bm = 1 if M == 1 else min(16, triton.next_power_of_2(M))
    return _config_of(bm, 16 if M == 1 else 128 // bm, 64, 4, 1)


def _few_rows_splits(tiles: int, K: int, block_k: int, sms: int) -> int:
    """K slices of ``few_rows``: the most, up to 8, that keep tiles x slices within 4 programs an SM
    and slices of 8 k steps or more (a weight's bytes in flight over more programs; H200, W.t(),
    1x16 tiles: (1, 4096, 4096) in 4 slices 1.05x torch, 2 1.04x, whole 0.56x in the first form;
    (1, 32000, 4096), 2000 tiles, whole 1.14x)."""
    split = 1
    while split < 8 and tiles * split * 2 <= 4 * sms and K >= 2 * split * 8 * block_k:
        split *= 2
    return split


def _few_rows_gemv(a, b) -> bool:
    """Does ``few_rows`` run the GEMV (one row of a, b K-major)?"""
    return a.shape[0] == 1 and matrix_layout(b.t()) == "row"


def _few_rows_grid(cfg, M: int, N: int, K: int, sms: int) -> tuple:
    """(BLOCK_N, k per slice, slices) of ``few_rows`` with ``cfg``."""
    bm, bn, bk = (cfg.kwargs[k] for k in ("BLOCK_M", "BLOCK_N", "BLOCK_K"))
    split = _few_rows_splits(triton.cdiv(M, bm) * triton.cdiv(N, bn), K, bk, sms)
    k_per = triton.cdiv(triton.cdiv(K, split), bk) * bk
    return bn, k_per, triton.cdiv(K, k_per)


def _few_rows_run(cfg, a, b):
    """run(a, b, out) of ``few_rows`` with ``cfg``: any strides; K split by ``_few_rows_splits``
    into a float32 workspace, its slices added in a fixed order (``_sum_splits_kernel``). One row of
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
    launch = TritonLaunch(_few_rows_kernel, (triton.cdiv(N, bn) * triton.cdiv(M, bm), 1, split),
                          dict(BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk), dict(num_warps=cfg.num_warps))
    return _sliced(launch, (M, N, K, *a.stride(), *b.stride(), k_per, M * N), split, M, N)


def _sliced(launch, scalars: tuple, split: int, M: int, N: int):
    """run(a, b, out) of ``launch(a, b, c, *scalars)``, whose K slices write ``split`` float32
    partial products of c (M x N, contiguous) into a workspace, added afterwards in a fixed order
    (``_sum_splits_kernel``); with one slice it writes out itself."""
    if split == 1:
        return launch.bind(*scalars)
    sum_launch = TritonLaunch(_sum_splits_kernel, (triton.cdiv(M * N, 1024),),
                              dict(SPLIT_K=split, BLOCK=1024, HAS_BIAS=0), dict(num_warps=4))

    def run(a, b, out):
        ws = torch.empty((split, M, N), dtype=torch.float32, device=a.device)
        launch(a, b, ws, *scalars)
        sum_launch(ws, out, out, N, M * N, N, M * N, 0, 0)
    return run


def _make_run(variant, cfg, a, b, precision, out=None, bias_strides=None):
    """run(a, b, out) of ``variant`` with ``cfg`` on operands of ``a`` and ``b``'s metadata
    (``bias_strides``: run(a, b, bias, out), for ``BIAS_VARIANTS``)."""
    if bias_strides is not None:
        assert variant in BIAS_VARIANTS, variant
    if variant == "fma_ws":
        return _fma_ws_run(a, b, _rows_fit(b.shape[1], _c_size(a), out))
    if variant == "few_rows":
        return _few_rows_run(cfg, a, b)
    if variant == "few_rows_ws":
        return _few_rows_ws_run(cfg, a, b)
    if variant not in TMA_VARIANTS:
        return _pointer_run(cfg, a, b, precision, bias_strides)
    return _tma_run(cfg, a, b, precision, sm_count(a.device), _rows_fit(b.shape[1], _c_size(a), out), bias_strides)


def _tune(variant, a, b, precision: str, key: str) -> triton.Config:
    """Benchmark the candidates on this call's operands (into a scratch c) and keep the best (the
    heuristic's pick unless another is clearly faster: ``_tuning.benchmark``)."""
    (M, K), N = a.shape, b.shape[1]
    c = torch.empty((M, N), dtype=matmul_out_dtype(a.dtype), device=a.device)
    configs = candidates(a.element_size(), variant, M)
    if a.element_size() == 2 and variant not in TMA_VARIANTS and _unaligned(a, b):
        configs = configs + list(_UNALIGNED_16BIT.values())  # element loads: the heuristic's tiles too
    if variant in TMA_VARIANTS:  # each tile config with K whole and split by _splits
        sms = sm_count(a.device)
        configs = [_with_split(cfg, s) for cfg in configs
                   for s in sorted({1, _splits(cfg, M, N, K, sms, a.element_size())})]
    # one plan per config, made before timing: a run made afresh each call goes through the JIT,
    # and on small products the candidates were then ranked by that host time, not the kernel's
    runs = {str(cfg): _make_run(variant, cfg, a, b, precision) for cfg in configs}
    best = _tuning.benchmark(lambda cfg: runs[str(cfg)](a, b, c), configs, preferred=_heuristic_of(variant, a, b))
    _tuning.store(a.device, key, best)
    return best


def tune(M: int, N: int, K: int, *, dtype=torch.bfloat16, b_layout: str = "row", variant: str | None = None,
         device="cuda") -> triton.Config:
    """Tune a variant (``variant=None``: the one the default runs for these operands) for the
    bucket of an (M, K) @ (K, N) product (``b_layout``: "row" for a row-major B, "wt" for the
    ``W.t()`` of an (N, K) weight) and keep it on disk; later calls in that bucket, in this
    process or another, run the tuned config without benchmarking."""
    a = torch.randn((M, K), device=device).to(dtype)
    b = torch.randn((K, N), device=device).to(dtype) if b_layout == "row" else \
        torch.randn((N, K), device=device).to(dtype).t()
    precision = _input_precision(dtype)
    variant = variant or pick_variant(a, b)
    check_variant(variant, VARIANTS, "matmul")
    if variant in ("fma_ws", "few_rows", "few_rows_ws"):
        return config_for(variant, a, b, precision)
    cfg = _tune(variant, a, b, precision, _tuning_key(variant, M, N, K, a, b, precision))
    _PLANS.clear()  # plans made before hold the config they had
    return cfg


def describe(a, b, variant: str | None = None) -> str:
    """What a call on these operands runs: the variant and its config (the harness records it)."""
    variant = variant or pick_variant(a, b)
    if variant not in VARIANTS:
        return variant
    cfg = config_for(variant, a, b, _input_precision(a.dtype))
    kw = cfg.kwargs
    text = f"{variant} {kw['BLOCK_M']}x{kw['BLOCK_N']}x{kw['BLOCK_K']} w{cfg.num_warps} s{cfg.num_stages}"
    if variant == "few_rows":
        if _few_rows_gemv(a, b):
            return f"few_rows: gemv {_gemv_variant(b.t(), a[0])}"
        (M, K), N = a.shape, b.shape[1]
        text += f" S{_few_rows_grid(cfg, M, N, K, sm_count(a.device))[2]}"
    if variant == "few_rows_ws":
        (M, K), N = a.shape, b.shape[1]
        text += f" S{_few_rows_ws_split(cfg, M, N, K, sm_count(a.device))[1]}"
    if variant in TMA_VARIANTS:
        c_ptr = kw["SPLIT_K"] == 1 and not _rows_fit(b.shape[1], _c_size(a), None)  # (_tma_run's C_PTR)
        text += f" S{kw['SPLIT_K']}" + (" swap" if kw["SWAP_AB"] else "") + \
            (" c-stores" if c_ptr else " sub" if kw["EPILOGUE_SUBTILE"] else "")
    return text


def _plan(inputs, variant, out) -> Plan:
    """Validate a call and plan it (once per distinct metadata and float32 precision). Inputs
    (a, b, bias): the switch's addmm, the bias added by the epilogue before c's one rounding."""
    a, b, *bias = inputs
    bias = bias[0] if bias else None
    check_matmul_args(a, b, dtypes=DTYPES if bias is None else FLOAT_DTYPES)
    check_variant(variant, VARIANTS, "matmul")
    if variant in TMA_VARIANTS and a.dtype == torch.int32:
        raise TypeError(f"variant {variant} supports float32, float16, bfloat16 and int8, got int32 (no dot "
                        f"takes it); use variant=None, grouped or blocked")
    if variant in ("fma_ws", "few_rows_ws"):
        _check_gluon(a, variant)
    if variant == "few_rows" and not a.dtype.is_floating_point:
        raise TypeError(f"variant few_rows supports float32, float16 and bfloat16 only, got {dtype_name(a.dtype)}; "
                        f"use variant=None")
    (M, K), N = a.shape, b.shape[1]
    named = {"a": a, "b": b}
    bias_strides = None
    if bias is not None:
        bias_strides = check_bias(bias, a, (M, N))
        named["bias"] = bias
    names = tuple(named)
    dtype = matmul_out_dtype(a.dtype)
    output(out, (M, N), named, need_cuda=not interpreting(), dtype=dtype)
    if M == 0 or N == 0:
        return Plan((M, N), dtype, a.device, lambda *args: None, names)
    if K == 0:  # an empty sum (plus the bias)
        run = (lambda a, b, out: out.zero_()) if bias is None else (lambda a, b, bias, out: out.copy_(bias))
        return Plan((M, N), dtype, a.device, run, names)
    variant = variant or pick_variant(a, b, out)
    if variant in TMA_VARIANTS and not _hopper(a.device):
        raise ValueError(f"variant {variant} needs a Hopper GPU (TMA); variant=None runs grouped here")
    # the interpreter cannot compute in bfloat16: it runs on float32 copies (exact upcasts)
    upcast = a.dtype == torch.bfloat16 and interpreting()
    if upcast:
        a, b = a.float(), b.float()
    precision = "ieee" if upcast else _input_precision(a.dtype)
    cfg = config_for(variant, a, b, precision)
    if bias is not None and variant not in BIAS_VARIANTS:
        # exact float32's own variants (few rows, fma_ws) have no bias epilogue: the bias is added
        # after, in float32 (two roundings of float32, as an unfused product and add make)
        product = _make_run(variant, cfg, a, b, precision, out)

        def run(a, b, bias, out):
            product(a, b, out)
            out.add_(bias)
    else:
        run = _make_run(variant, cfg, a, b, precision, out, bias_strides)
    if not upcast:  # (torch.compile records pointer kernels' launches, not descriptors': kernel_common/ops.py)
        return Plan((M, N), dtype, a.device, run, names, traceable=variant not in DESCRIPTOR_VARIANTS)

    def run_upcast(a, b, *rest):
        *bias, out = rest
        c = torch.empty((M, N), dtype=torch.float32, device=a.device)
        run(a.float(), b.float(), *[t.float() for t in bias], c)
        out.copy_(c)  # round to nearest even, as the GPU kernel's store does
    return Plan((M, N), torch.bfloat16, a.device, run_upcast, names)


_PLANS = PlanCache(_plan, extra_key=float32_matmul_precision)


def matmul(a: torch.Tensor, b: torch.Tensor, *, variant: str | None = None,
           out: torch.Tensor | None = None):
    """Return ``a @ b`` as a new contiguous (M, N) tensor (or write it into ``out``).

    ``a`` (M, K) and ``b`` (K, N): 2-D CUDA tensors (CPU tensors under ``TRITON_INTERPRET=1``)
    of one dtype, float32, float16, bfloat16, int32 or int8, any strides; the result has their
    dtype, int32 for int8 (sums in int32: exact while they stay within it, always for K < 2^17).
    int32 sums wrap modulo 2^32 as C's int arithmetic does.
    ``variant=None`` runs the TMA kernel on a Hopper GPU when descriptors can read a, b and c
    (``split_k`` when the tiles alone would leave SMs idle), else ``grouped``, each with the
    config tuned for the call's bucket or a heuristic one (see ``triton_impl/_tuning.py``:
    ``TRITON_IMPL_TUNE=1`` and ``tune``). Under the interpreter, which cannot compute in
    bfloat16, bfloat16 inputs are upcast to float32 (exact) and the float32 result rounded to
    bfloat16: the same float32 accumulation.
    """
    return _PLANS((a, b), variant, out)
