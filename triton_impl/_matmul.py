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

This module holds the pointer kernel (``grouped`` / ``blocked``), the default's choice, tuning and
the plan; the families live beside it: ``_matmul_tma`` (the TMA kernel, split-K's sum, the
operand copies, the shared tile helpers and bias epilogue), ``_matmul_fp32`` (exact float32's
few-rows kernel and the runs of the Gluon kernels in ``_matmul_fma``), ``_matmul_configs`` (tile
configs and the heuristic).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch
import triton
import triton.language as tl

from kernel_common import (bucket, cdiv, check_bias, check_matmul_args, check_variant, dtype_name,
                           float32_matmul_precision, interpreting, is_batch, matmul_out_dtype, check_output, sm_count,
                           tf32_allowed)
from kernel_common.catalog import F16, F32, I8, I32, Rule, always, check_dtype, first_rule, shown_at
from kernel_common.plans import Plan, PlanCache, per_plan, row_group_choice
from triton_impl import _tuning
from triton_impl._arch import SM_90, check as _check_arch
from triton_impl.catalog import RECORDS
from triton_impl._launch import TritonLaunch, pointer_type
from triton_impl._gemv import pick_variant as _gemv_variant
from triton_impl._matmul_configs import (_blocked_config, candidates, _CONFIG_INT32, _CONFIG_INTERPRETER, _config_of,
                                         FEW_ROWS, few_rows_split, _heuristic_config, ladder_fills, narrow_n,
                                         narrow_n_config, NARROW_N_ANY_PICK_M, short_k, _splits, tail_split_parts,
                                         _TMA_INTERPRETER, tile_text, _UNALIGNED_16BIT, VARIANTS, _with_split,
                                         _with_stream_k)
from triton_impl._matmul_tma import (bias_mode, _c_size, _grouped_tile, _major, _plus_bias, _rows_fit, _tma_note,
                                     _tma_ok, _tma_run, _tma_transposed, _unaligned, _with_bias)
from triton_impl._matmul_fp32 import (_check_gluon, few_rows_config, few_rows_grouped, FEW_ROWS_WS, few_rows_ws_config,
                                      _few_rows_gemv, _few_rows_grid, _few_rows_run, _few_rows_ws_run,
                                      _few_rows_ws_split, _fma_ws_run, fma_ws_pays, fma_ws_runs, fma_ws_stream_k,
                                      few_rows_ws_fills, _hopper, TF32_ROW_FEW)

FLOAT_DTYPES = (torch.float32, torch.float16, torch.bfloat16)
DTYPES = (*FLOAT_DTYPES, torch.int32, torch.int8)
DTYPE_NAMES = (*F32, *F16, *I32, *I8)  # the harness's names of DTYPES: what a record naming none takes


# ---------------------------------------------------------------------------------------------
# Kernel
# ---------------------------------------------------------------------------------------------
# M stays specialized (on M % 16 == 0 and M == 1): without it bf16 4096^3 ran 0.216 ms against
# 0.185 (H200, same config); a new M compiles at most once per class, and Triton's disk cache
# serves a new process.
@triton.jit
def _matmul_kernel(
    # Pointers (bias_ptr: read only with HAS_BIAS)
    a_ptr, b_ptr, c_ptr, bias_ptr,
    # Sizes
    M, N, K,
    # Strides (in elements; c is contiguous); a batch's matrix strides (0: one matrix for every product)
    stride_am, stride_ak, stride_bk, stride_bn, stride_biasm, stride_biasn, stride_ab, stride_bb,
    # Meta-parameters
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
    GROUP_M: tl.constexpr, INPUT_PRECISION: tl.constexpr, INT_SUMS: tl.constexpr, DOT: tl.constexpr,
    HAS_BIAS: tl.constexpr,  # 0: none; 1, 2: _plus_bias
):
    """One BLOCK_M x BLOCK_N tile of c per program. GROUP_M = 1 numbers the tiles row-major
    (`blocked`); GROUP_M > 1 walks GROUP_M rows of tiles column by column (`grouped`), so the
    programs running at once share the same few tiles of a and b in L2. INT_SUMS: int32 sums
    (integer inputs); DOT False: no tl.dot for the type (int32), an elementwise product summed.
    A batch: the programs of product p follow those of p - 1, c's matrices contiguous one after another."""
    # -- map the program id to a product and a tile of its c: grouped launch order for L2 reuse --
    num_pid_m, num_pid_n = tl.cdiv(M, BLOCK_M), tl.cdiv(N, BLOCK_N)
    pid = tl.program_id(0)
    p = (pid // (num_pid_m * num_pid_n)).to(tl.int64)
    pid_m, pid_n = _grouped_tile(pid % (num_pid_m * num_pid_n), num_pid_m, num_pid_n, GROUP_M)
    a_ptr += p * stride_ab
    b_ptr += p * stride_bb
    c_ptr += p * M * N

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
# Plans and the public wrapper
# ---------------------------------------------------------------------------------------------
def _input_precision(dtype) -> str:
    """tl.dot's input_precision for this call. float32 follows torch's matmul setting; for 16-bit
    inputs the argument does not change the math, so they keep Triton's default ("tf32")."""
    return "ieee" if dtype == torch.float32 and not tf32_allowed() else "tf32"


# Small products of many rows stay on grouped, where three descriptors cost more host time than
# they save, unless few rows (split-K and swap-AB win there) or a float32 W.t() (grouped reads it
# at 0.41x). A TMA call costs ~1 us more host time than grouped (decision 012), and at 1024^3 bf16
# its kernel saves 3.6 (H100, flushed: 64x128 tiles 10.9 us, grouped 14.5): the line sits below 1024^3.
SMALL_PRODUCT = SM_90["small_product"]


def _exact32(a) -> bool:
    return a.dtype == torch.float32 and _input_precision(a.dtype) == "ieee"


def _small_many_rows(a, b, out) -> bool:
    """Descriptors read a, b and c where they lie, yet the product is small and of many rows
    (``SMALL_PRODUCT``): never int8 (grouped reads a row-major int8 b at a tenth of the TMA
    kernel's rate, 104 against 1004 TOPS at 4096^3 on an H200) nor float32 on a W.t()."""
    (M, K), N = a.shape, b.shape[1]
    return _tma_ok(a, b, out) and M > 256 and M * N * K <= SMALL_PRODUCT and \
        (a.element_size() == 2 or (a.element_size() == 4 and not _tma_transposed(b)))


# the GEMV at 1.088 / 0.94 / 0.87 x torch.mm, the TMA kernel 1.024 / 0.90 / 0.67 (H200, decision 044)
ONE_ROW = Rule("few_rows", lambda a, b, out: a.element_size() == 2 and _few_rows_gemv(a, b),
               "16-bit, one row of a against W.t() (no bias): the GEMV on W")

# What variant=None runs: the first row whose condition holds (``pick_variant``).
RULES = (
    Rule("grouped", lambda a, b, out: a.dtype == torch.int32 or not _hopper(a.device),
         "int32 (no dot takes it), or no TMA: the pointer kernel"),
    ONE_ROW,
    Rule("grouped", lambda a, b, out: a.dtype.is_floating_point and short_k(a.shape[1], a.element_size()),
         "16-bit, K <= 16 (a LoRA up projection): c's bytes bound it, one K slice of 16 on 64 x 128 tiles"),
    TF32_ROW_FEW,
    Rule("grouped", lambda a, b, out: _exact32(a) and not _major(b) and a.shape[0] <= FEW_ROWS
         and few_rows_grouped(a.shape[0], b.shape[1], sm_count(a.device), whole_wave=True),
         "exact float32, few rows, b row-major: 16 x 128 tiles where they fill every SM"),
    Rule("few_rows_ws", lambda a, b, out: _exact32(a) and FEW_ROWS_WS[0] <= a.shape[0] <= FEW_ROWS_WS[1]
         and fma_ws_runs(a.device) and _tma_transposed(a) is False and _tma_transposed(b) is not None
         and few_rows_ws_fills(a.shape[0], b.shape[1], a.shape[1], sm_count(a.device)),
         "exact float32, 5-64 rows: the Gluon kernel, where descriptors read a and b as they lie and it fills the SMs"),
    Rule("grouped", lambda a, b, out: _exact32(a) and not _major(b) and a.shape[0] <= FEW_ROWS
         and few_rows_grouped(a.shape[0], b.shape[1], sm_count(a.device)),
         "exact float32, few rows, b row-major: 16-row tiles where they fill the SMs"),
    Rule("few_rows", lambda a, b, out: _exact32(a) and not _major(b) and a.shape[0] <= FEW_ROWS,
         "exact float32, few rows, b row-major: W read along K on CUDA cores"),
    Rule("few_rows", lambda a, b, out: _exact32(a) and _major(b) and a.shape[0] < FEW_ROWS,
         "exact float32, few rows on W.t()"),
    Rule("fma_ws", lambda a, b, out: fma_ws_pays(a, b, out),
         "exact float32 where its tiles and stream-K runs fill the SMs (fma_ws_pays)"),
    Rule("grouped", lambda a, b, out: not _tma_ok(a, b, out) and not _unaligned_tma(a, b),
         "descriptors cannot read the operands as they lie, and copies would not pay (_unaligned_tma)"),
    Rule("stream_k", lambda a, b, out: _exact32(a),
         "exact float32 on the TMA kernel: the last wave's tiles shared out (decision 061)"),
    Rule("grouped", _small_many_rows, "a small product of many rows: three descriptors cost more host time"),
    Rule("split_k", lambda a, b, out: _split_pays(a, b),
         "the TMA kernel's tiles alone would leave over half the SMs idle: K in slices (_splits, few_rows_split)"),
    Rule("tma_persistent", always, "the TMA kernel, K whole"),
)


def pick_variant(a, b, out=None, biased: bool = False) -> str:
    """What ``variant=None`` runs: the first of ``RULES`` that holds (each rule's text says where;
    ``biased``: not the one-row GEMV, which has no bias epilogue), but split_k's narrow tiles for 16-bit
    products of c's few columns (``narrow_n``; decision 067). A batch: ``_matmul_batched.pick``."""
    if is_batch(a, b):
        from triton_impl import _matmul_batched
        return _matmul_batched.pick(a, b, out)
    variant = _rules_pick(a, b, out, biased)
    if _narrow_n(a, b) and (variant in ("grouped", "tma_persistent") or a.shape[0] > NARROW_N_ANY_PICK_M):
        return "split_k"  # (its config: narrow_n_config's, K whole where one wave is full)
    return variant


def _rules_pick(a, b, out=None, biased: bool = False) -> str:
    return first_rule(tuple(r for r in RULES if r is not ONE_ROW) if biased else RULES, a, b, out).variant


def _narrow_n(a, b) -> bool:
    return a.dtype.is_floating_point and _hopper(a.device) and narrow_n(
        a.shape[0], b.shape[1], a.shape[1], a.element_size(), _tma_transposed(a) is not None, sm_count(a.device))


def _narrow_tiles(a, b) -> bool:
    """Does split_k run ``narrow_n_config``'s tiles? Where variant=None takes them and where a caller names
    split_k on such a product, but not on the few-row ladder's split that the rules themselves pick."""
    return _narrow_n(a, b) and (a.shape[0] > NARROW_N_ANY_PICK_M or _rules_pick(a, b, biased=True) != "split_k")


def _split_pays(a, b) -> bool:
    """Does the TMA kernel take K in slices: its config's split, or few rows' (``few_rows_split``)?"""
    cfg, (M, K), N = _family_config("split_k", a, b, _input_precision(a.dtype)), a.shape, b.shape[1]
    return few_rows_split(cfg, M, N, K, sm_count(a.device), a.element_size()) > 1


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
    not measured: it stays on grouped. 16-bit few rows whose only misfit is c's (an odd N: LM heads)
    copy nothing and store c by pointers, small or not, where the ladder's tiles fill (decision 045)."""
    (M, K), N = a.shape, b.shape[1]
    copies = (M * K if _tma_transposed(a) is None else 0) + (K * N if _tma_transposed(b) is None else 0)
    return (a.element_size() == 2 or _exact32(a)) and 256 * copies <= M * N * K and \
        (M * N * K > SMALL_PRODUCT or a.element_size() == 2 and copies == 0 and M <= FEW_ROWS
         and ladder_fills(M, N, 2, sm_count(a.device)))


def _tuning_key(variant, M, N, K, a, b, precision) -> str:
    """The bucket a tuned config serves: the variant, dtype, dot precision, which operands are
    K- / N-major, and each extent to the next power of two."""
    bm, bn, bk = bucket(M, N, K)
    a_major, b_major = "ak" if a.stride(1) == 1 else "am", "bn" if b.stride(1) == 1 else "bk"
    return f"{PLANNERS[variant].family} {dtype_name(a.dtype)} {precision} {a_major} {b_major} {bm}x{bn}x{bk}"


def _family_config(variant: str, a, b, precision: str) -> triton.Config:
    """The tuned config of the call's bucket, else the heuristic one (the TMA variants share one: its
    SPLIT_K is what tuning, ``_splits`` or the fitted model chose); asked twice a plan (rule, pick)."""
    return _config_of_family(PLANNERS[variant].family, a, b, precision)


@per_plan
def _config_of_family(family: str, a, b, precision: str) -> triton.Config:
    (M, K), N = a.shape, b.shape[1]
    if a.dtype == torch.int32:
        return _CONFIG_INT32
    if interpreting():
        return _with_split(_TMA_INTERPRETER, _splits(_TMA_INTERPRETER, M, N, K, sm_count(a.device), a.element_size())) \
            if family == "tma" else _CONFIG_INTERPRETER
    variant = next(v for v, r in PLANNERS.items() if r.family == family)  # (its runs time the candidates)
    key = _tuning_key(variant, M, N, K, a, b, precision)
    cfg = _tuning.lookup(a.device, key)
    if cfg is None and _tuning.enabled() and not torch.cuda.is_current_stream_capturing():
        cfg = _tune(variant, a, b, precision, key)
    return cfg if cfg is not None else _heuristic_of(family, a, b, precision)


def _heuristic_of(family: str, a, b, precision: str) -> triton.Config:
    """``_heuristic_config`` for these operands."""
    (M, K), N = a.shape, b.shape[1]
    return _heuristic_config(M, N, K, a.element_size(), sm_count(a.device), family, _unaligned(a, b),
                             b.stride(1) != 1, tf32=a.dtype == torch.float32 and precision == "tf32")


def config_for(variant: str, a, b, precision: str) -> triton.Config:
    """The config of a call: the variant's fixed one, else its family's (tuned or heuristic)."""
    return PLANNERS[variant].config(variant, a, b, precision)


# ---- launches ----------------------------------------------------------------------------------
def plan_launch(cfg: triton.Config, M: int, N: int, precision: str, dtype=torch.float32,
                has_bias: int = 0, batch: int = 1) -> TritonLaunch:
    """``grouped`` / ``blocked`` with ``cfg``: one program per BLOCK_M x BLOCK_N tile of c, for each
    of ``batch`` products."""
    meta = dict(cfg.kwargs, INPUT_PRECISION=precision, INT_SUMS=not dtype.is_floating_point,
                DOT=dtype != torch.int32, HAS_BIAS=has_bias)  # (0, 1 or 2: bias_mode)
    grid = (batch * cdiv(M, meta["BLOCK_M"]) * cdiv(N, meta["BLOCK_N"]),)
    return TritonLaunch(_matmul_kernel, grid, meta, dict(num_warps=cfg.num_warps, num_stages=cfg.num_stages))


def _pointer_run(cfg, a, b, precision, bias_strides=None):
    """run(a, b, out) of ``grouped`` / ``blocked``: pointers and strides, any layout
    (``bias_strides``: run(a, b, bias, out), the bias added in the epilogue)."""
    (M, K), N = a.shape, b.shape[1]
    launch = plan_launch(cfg, M, N, precision, a.dtype, bias_mode(bias_strides))
    return _with_bias(launch.bind(M, N, K, *a.stride(), *b.stride(), *(bias_strides or (0, 0)), 0, 0), bias_strides)


def _make_run(variant, cfg, a, b, precision, out=None, bias_strides=None):
    """run(a, b, out) of ``variant`` with ``cfg`` on operands of ``a`` and ``b``'s metadata
    (``bias_strides``: run(a, b, bias, out), for a variant whose epilogue adds a bias)."""
    record = PLANNERS[variant]
    assert bias_strides is None or BIAS[variant], variant
    return record.run(cfg, a, b, precision, out, bias_strides)


def _tune(variant, a, b, precision: str, key: str) -> triton.Config:
    """Benchmark the candidates on this call's operands (into a scratch c) and keep the best (the
    heuristic's pick unless another is clearly faster: ``_tuning.benchmark``)."""
    (M, K), N = a.shape, b.shape[1]
    c = torch.empty((M, N), dtype=matmul_out_dtype(a.dtype), device=a.device)
    family = PLANNERS[variant].family
    configs = candidates(a.element_size(), family, M)
    if a.element_size() == 2 and family == "grouped" and _unaligned(a, b):
        configs = configs + list(_UNALIGNED_16BIT.values())  # element loads: the heuristic's tiles too
    if family == "tma":  # each tile config with K whole and split by _splits
        sms = sm_count(a.device)
        configs = [_with_split(cfg, s) for cfg in configs
                   for s in sorted({1, _splits(cfg, M, N, K, sms, a.element_size())})]
    # one plan per config, made before timing: a run made afresh each call goes through the JIT,
    # and on small products the candidates were then ranked by that host time, not the kernel's
    runs = {str(cfg): _make_run(variant, cfg, a, b, precision) for cfg in configs}
    best = _tuning.benchmark(lambda cfg: runs[str(cfg)](a, b, c), configs, preferred=_heuristic_of(family, a, b, precision))
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
    if PLANNERS[variant].family is None:  # a fixed config: nothing to tune
        return config_for(variant, a, b, precision)
    cfg = _tune(variant, a, b, precision, _tuning_key(variant, M, N, K, a, b, precision))
    _PLANS.clear()  # plans made before hold the config they had
    return cfg


def describe(a, b, variant: str | None = None) -> str:
    """What a call on these operands runs: the variant and its config (the harness records it)."""
    if is_batch(a, b):
        from triton_impl import _matmul_batched
        return _matmul_batched.describe(a, b, variant)
    variant = variant or pick_variant(a, b)
    record = PLANNERS.get(variant)
    if record is None:
        return variant
    cfg = record.config(variant, a, b, _input_precision(a.dtype))
    return record.note(f"{variant} {tile_text(cfg)}", cfg, a, b)


# ---- each variant's plan: its config, its run, what it refuses, what describe says ------------
@dataclass(frozen=True)
class Planner:
    """How one variant plans a call (``PLANNERS``; its idea and dtypes are its catalog record).
    ``config(variant, a, b, precision)``: its config; ``run(cfg, a, b, precision, out,
    bias_strides)``: run(a, b, out), or run(a, b, bias, out) with ``bias_strides``;
    ``check(a, variant)`` raises for an input it cannot take beyond the dtypes of its catalog record
    (which ``_plan`` checks: int32 has no dot, the Gluon kernels are exact float32); ``family``: the tuned configs it
    draws from ("tma", "grouped"; None: a fixed config, nothing to tune); ``note(text, cfg, a,
    b)``: ``describe``'s words; ``descriptors``: it launches with host descriptors (not traced by
    torch.compile: kernel_common/ops.py). Whether its epilogue adds a bias is its catalog record's
    (``BIAS``)."""
    config: Callable
    run: Callable
    family: str | None = None
    check: Callable = lambda a, variant: None
    note: Callable = lambda text, cfg, a, b: text
    descriptors: bool = False


def _blocked_fixed(variant, a, b, precision) -> triton.Config:
    bm, bn, bk, warps, stages = _blocked_config(a.dtype)
    return _config_of(bm, bn, bk, warps, stages, group_m=1)


def _fma_ws_fixed(variant, a, b, precision) -> triton.Config:
    from triton_impl import _matmul_fma as f  # (imported on first use: Gluon's import is heavy)
    return _config_of(f.BLOCK_M, f.BLOCK_N, f.BLOCK_K, f.WARPS, f.STAGES)


def _split_k_config(variant, a, b, precision) -> triton.Config:
    """The family's config, split along K by ``_splits`` where tuning or the heuristic kept K whole."""
    (M, K), N = a.shape, b.shape[1]
    if _narrow_tiles(a, b):
        return narrow_n_config(M, N, K, sm_count(a.device))
    cfg = _family_config(variant, a, b, precision)
    if cfg.kwargs["SPLIT_K"] > 1:
        return cfg
    return _with_split(cfg, _splits(cfg, M, N, K, sm_count(a.device), a.element_size()))


def _few_rows_note(text, cfg, a, b) -> str:
    if _few_rows_gemv(a, b):
        return f"few_rows: gemv {_gemv_variant(b.t(), a[0])}"
    (M, K), N = a.shape, b.shape[1]
    return text + f" S{_few_rows_grid(cfg, M, N, K, sm_count(a.device))[2]}"


def _few_rows_ws_note(text, cfg, a, b) -> str:
    (M, K), N = a.shape, b.shape[1]
    return text + f" S{_few_rows_ws_split(cfg, M, N, K, sm_count(a.device))[1]}"


def _pointer_planned(cfg, a, b, precision, out, bias_strides):
    return _pointer_run(cfg, a, b, precision, bias_strides)


def _tma_planned(cfg, a, b, precision, out, bias_strides):
    return _tma_run(cfg, a, b, precision, sm_count(a.device), _rows_fit(b.shape[1], _c_size(a), out), bias_strides)


def _tail_parts(cfg, a, b, out=None) -> tuple[int, int]:
    """``tail_split``'s (M0, S) for these operands: none split where descriptors cannot read them
    where they lie (each part would copy them)."""
    (M, K), N = a.shape, b.shape[1]
    if not _tma_ok(a, b, out):
        return M, 1
    return tail_split_parts(cfg, M, N, K, sm_count(a.device), a.element_size())


def _tail_split_planned(cfg, a, b, precision, out, bias_strides):
    """Two TMA launches: rows [0, M0) with K whole, the rest split S ways (``tail_split_parts``)."""
    M = a.shape[0]
    rows, split = _tail_parts(cfg, a, b, out)
    if rows == M or split == 1:
        return _tma_planned(cfg, a, b, precision, out, bias_strides)
    tail = _tma_planned(_with_split(cfg, split), a[rows:], b, precision, None, bias_strides)
    if rows == 0:
        return tail
    whole = _tma_planned(cfg, a[:rows], b, precision, None, bias_strides)
    if bias_strides is None:
        def run(a, b, out):
            whole(a[:rows], b, out[:rows])
            tail(a[rows:], b, out[rows:])
        return run
    sliced = bias_strides[0] != 0  # (a bias of M rows: each part reads its own)

    def run_bias(a, b, bias, out):
        whole(a[:rows], b, bias[:rows] if sliced else bias, out[:rows])
        tail(a[rows:], b, bias[rows:] if sliced else bias, out[rows:])
    return run_bias


def _tail_split_note(text, cfg, a, b) -> str:
    rows, split = _tail_parts(cfg, a, b)
    return _tma_note(text, cfg, a, b) + (f", rows {rows}-{a.shape[0]} in {split} K slices" if split > 1 else "")


BIAS = {r.name: r.bias for r in RECORDS if r.algorithm == "matmul"}  # whose epilogue adds a bias (its record)
PLANNERS = {
    "blocked": Planner(_blocked_fixed, _pointer_planned),
    "grouped": Planner(_family_config, _pointer_planned, "grouped"),
    "tma_persistent": Planner(lambda v, a, b, p: _with_split(_family_config(v, a, b, p), 1), _tma_planned, "tma",
                              note=_tma_note, descriptors=True),
    "split_k": Planner(_split_k_config, _tma_planned, "tma", note=_tma_note, descriptors=True),
    "stream_k": Planner(lambda v, a, b, p: _with_stream_k(_family_config(v, a, b, p)), _tma_planned, "tma",
                        note=_tma_note, descriptors=True),
    "tail_split": Planner(lambda v, a, b, p: _with_split(_family_config(v, a, b, p), 1), _tail_split_planned, "tma",
                          note=_tail_split_note, descriptors=True),
    "few_rows": Planner(lambda v, a, b, p: few_rows_config(a.shape[0], b.shape[1], a.shape[1], sm_count(a.device)),
                        lambda cfg, a, b, p, out, bs: _few_rows_run(cfg, a, b), note=_few_rows_note),
    "fma_ws": Planner(_fma_ws_fixed, lambda cfg, a, b, p, out, bs: _fma_ws_run(a, b, _rows_fit(b.shape[1], _c_size(a), out)),
                      check=_check_gluon, descriptors=True),
    "few_rows_ws": Planner(lambda v, a, b, p: few_rows_ws_config(a.shape[0]),
                           lambda cfg, a, b, p, out, bs: _few_rows_ws_run(cfg, a, b), check=_check_gluon,
                           note=_few_rows_ws_note, descriptors=True),
}
assert set(PLANNERS) == set(VARIANTS), "a catalog record without its planner, or the reverse"


def _choice(a, b, out, precision: str, upcast: bool, biased: bool) -> tuple[str, triton.Config]:
    """variant=None's variant and config (under the interpreter's upcast, the float32 copies')."""
    variant = pick_variant(a, b, out, biased)
    return variant, config_for(variant, *((a.float(), b.float()) if upcast else (a, b)), precision)


def _plan(inputs, variant, out) -> Plan:
    """Validate a call and plan it (once per distinct metadata and float32 precision). Inputs
    (a, b, bias): the switch's addmm, the bias added by the epilogue before c's one rounding."""
    a, b, *bias = inputs
    bias = bias[0] if bias else None
    if bias is None and is_batch(a, b):
        from triton_impl import _matmul_batched  # (it plans on this module's kernels)
        return _matmul_batched.plan(a, b, variant, out)
    check_matmul_args(a, b, dtypes=DTYPES if bias is None else FLOAT_DTYPES)
    check_variant(variant, VARIANTS, "matmul")
    if variant is not None:
        check_dtype(RECORDS, "matmul", variant, a.dtype, DTYPE_NAMES)
        PLANNERS[variant].check(a, variant)
    (M, K), N = a.shape, b.shape[1]
    named = {"a": a, "b": b}
    bias_strides = None
    if bias is not None:
        bias_strides = check_bias(bias, a, (M, N))
        named["bias"] = bias
    names = tuple(named)
    dtype = matmul_out_dtype(a.dtype)
    check_output(out, (M, N), named, need_cuda=not interpreting(), dtype=dtype)
    if M == 0 or N == 0:
        return Plan((M, N), dtype, a.device, lambda *args: None, names)
    if K == 0:  # an empty sum (plus the bias)
        run = (lambda a, b, out: out.zero_()) if bias is None else (lambda a, b, bias, out: out.copy_(bias))
        return Plan((M, N), dtype, a.device, run, names)
    _check_arch(a.device)  # (once per architecture the selection's numbers were not measured on)
    # the interpreter cannot compute in bfloat16: it runs on float32 copies (exact upcasts)
    upcast = a.dtype == torch.bfloat16 and interpreting()
    precision = "ieee" if upcast else _input_precision(a.dtype)
    biased = bias is not None
    variant, cfg = (variant, None) if variant else row_group_choice(_PLANS, _choice, a, b, out, precision, upcast, biased)
    record = PLANNERS[variant]
    if record.family == "tma" and not _hopper(a.device):
        raise ValueError(f"variant {variant} needs a Hopper GPU (TMA); variant=None runs grouped here")
    if upcast:
        a, b = a.float(), b.float()
    cfg = cfg or config_for(variant, a, b, precision)
    if upcast:  # (the bias, if any, is added to the float32 product by run_upcast below)
        bias_strides = None
    if bias is not None and not BIAS[variant] and not upcast:
        # exact float32's own variants (few rows, fma_ws) have no bias epilogue: the bias is added
        # after, in float32 (two roundings of float32, as an unfused product and add make)
        product = _make_run(variant, cfg, a, b, precision, out)

        def run(a, b, bias, out):
            product(a, b, out)
            out.add_(bias)
    else:
        run = _make_run(variant, cfg, a, b, precision, out, bias_strides)
    if not upcast:  # (torch.compile records pointer kernels' launches, not descriptors': kernel_common/ops.py)
        return Plan((M, N), dtype, a.device, run, names, traceable=not record.descriptors)

    def run_upcast(a, b, *rest):
        *bias, out = rest
        c = torch.empty((M, N), dtype=torch.float32, device=a.device)
        run(a.float(), b.float(), c)
        if bias:
            c += bias[0]  # in float32, before the one rounding
        out.copy_(c)  # round to nearest even, as the GPU kernel's store does
    return Plan((M, N), torch.bfloat16, a.device, run_upcast, names)


_PLANS = PlanCache(_plan, extra_key=float32_matmul_precision)


def launches(dtype):
    """(variant, TritonLaunch, arguments by name, shape) of the pointer kernel's variants: ``blocked``'s
    one config and every config ``grouped`` chooses from for ``dtype``, at the shape their records
    name, in torch's default float32 precision (exact) (``triton_impl.launches``)."""
    ptr = pointer_type(dtype)
    precision = "ieee" if dtype == torch.float32 else "tf32"
    for name in [v for v, r in PLANNERS.items() if r.run is _pointer_planned]:
        M, N, K = shown_at(RECORDS, "matmul", name)
        args = dict(a_ptr=ptr, b_ptr=ptr, c_ptr=ptr, bias_ptr=ptr, M=M, N=N, K=K, stride_am=K, stride_ak=1,
                    stride_bk=N, stride_bn=1, stride_biasm=0, stride_biasn=0, stride_ab=0, stride_bb=0)
        a = torch.empty((M, K), dtype=dtype, device="meta")
        b = torch.empty((K, N), dtype=dtype, device="meta")
        configs = [config_for(name, a, b, precision)] if PLANNERS[name].family is None else \
            candidates(dtype.itemsize, PLANNERS[name].family)
        for cfg in configs:
            yield name, plan_launch(cfg, M, N, precision), args, (M, N, K)


def matmul(a: torch.Tensor, b: torch.Tensor, *, variant: str | None = None,
           out: torch.Tensor | None = None):
    """Return ``a @ b`` as a new contiguous (M, N) tensor (or write it into ``out``).

    ``a`` (M, K) and ``b`` (K, N): 2-D CUDA tensors (CPU tensors under ``TRITON_INTERPRET=1``)
    of one dtype, float32, float16, bfloat16, int32 or int8, any strides; the result has their
    dtype, int32 for int8 (sums in int32: exact while they stay within it, always for K < 2^17).
    int32 sums wrap modulo 2^32 as C's int arithmetic does.
    Batched: a (..., M, K) and b (..., K, N), batch dimensions broadcast as ``torch.matmul``'s,
    give (..., M, N) (``triton_impl/_matmul_batched.py``: one 2-D product where b is one matrix,
    else ``grouped`` or ``blocked`` over the batch in one launch).
    ``variant=None`` runs the TMA kernel on a Hopper GPU when descriptors can read a, b and c
    (``split_k`` when the tiles alone would leave SMs idle), else ``grouped``, each with the
    config tuned for the call's bucket or a heuristic one (see ``triton_impl/_tuning.py``:
    ``TRITON_IMPL_TUNE=1`` and ``tune``). Under the interpreter, which cannot compute in
    bfloat16, bfloat16 inputs are upcast to float32 (exact) and the float32 result rounded to
    bfloat16: the same float32 accumulation.
    """
    return _PLANS((a, b), variant, out)
