"""Grouped matmul for mixture-of-experts layers (kernels/matmul_grouped.cu, sm_90a):
``torch.nn.functional.grouped_mm``'s 2-D x 3-D form, ``triton_impl.grouped_mm``'s call (the checks,
the grid for any split and b's padded copy are ``kernel_common/grouped.py``'s).

a (T, K) holds every group's rows, sorted by group; ``offs`` (G,) int32 the end of each group's
rows; b (G, K, N) row-major, or each b[g] the transpose of an (N, K) weight (K-major). One
persistent launch whatever the split (the sizes stay on the GPU); operands a tensor map cannot
read where they lie are copied first (rows padded to 16 bytes).

H200, bf16, the ``moe`` set, x ``F.grouped_mm`` flushed (geomean / p10 / worst): row 1.14 / 0.99 /
0.90, kt 1.12 / 0.98 / 0.94 (``bench/results/h200-2026-12-01-grouped-cuda.json.gz``). Gradients:
a's by the same product on b's transpose, b's by ``matmul_grouped_wgrad`` (``weight_grad``: a
group's rows its k-slices), through ``kernel_common/grouped.py``'s ``Backend`` (docs/decisions/050).
"""
from __future__ import annotations

import torch

from cuda_ref import loader
from cuda_ref._copy import SOURCES as COPY_SOURCES, aligned_copier
from cuda_ref._matmul_wgmma import _hopper_only, _kept_maps, ring_smem
from kernel_common import DEFAULT_SM_COUNT, balanced_grid, base_phase, cdiv, grouped, sm_count, tma_batch_view, tma_rows
from kernel_common.plans import Plan, PlanCache
from kernel_common.util import padded
from kernel_common.validate import check_output

FILE = "matmul_grouped.cu"
DTYPES = grouped.DTYPES
VARIANTS = ("wgmma_grouped",)
TILE = (128, 256, 64)  # c's tile (two consumer warpgroups of 64 rows) and a k-slice: Triton's "many" tile
STAGES = 4             # the ring: 4 stages of 48 KiB
GROUP_M = 8
ARGS = "128s128sQqqQqiiI"


def instance(dtype, b_nmajor: bool) -> str:
    return f"matmul_grouped<{loader.CTYPE[dtype]}, {str(b_nmajor).lower()}, {STAGES}, {TILE[1]}>"


def weight_grad_instance(dtype, store_tma: bool) -> str:
    return f"matmul_grouped_wgrad<{loader.CTYPE[dtype]}, {STAGES}, {TILE[1]}, {str(store_tma).lower()}>"


NAME_EXPRESSIONS = (tuple(instance(d, nm) for d in DTYPES for nm in (False, True))
                    + tuple(weight_grad_instance(d, st) for d in DTYPES for st in (False, True)))
WEIGHT_GRAD_ARGS = "128s128s128sQqqqQqii"
WEIGHT_GRAD_SMEM = ring_smem(STAGES, TILE[0] + TILE[1]) + 2 * 2 * 64 * 128  # the ring, c's staging boxes
SOURCES = {FILE: NAME_EXPRESSIONS, **COPY_SOURCES}  # (the padded copies' kernel too)


def _b_layout(b) -> str | None:
    """How a 3-D map reads b where it lies: "n" (each b[g] row-major), "k" (each b[g] K-major, a
    batch of W.t() views), or None (a copy): ``tma_batch_view``'s strides, the base 16-byte aligned."""
    view = tma_batch_view(b) if base_phase(b) == 0 else None
    return None if view is None else "k" if view else "n"


def _plan(inputs, variant, out) -> Plan:
    a, b, offs = inputs
    grouped.check(a, b, offs, variant, VARIANTS)
    (T, K), (G, _, N) = a.shape, b.shape
    names = ("a", "b", "offs")
    check_output(out, (T, N), dict(zip(names, inputs)), need_cuda=True)
    if T == 0 or N == 0 or G == 0:
        return Plan((T, N), a.dtype, a.device, lambda *args: None, names)
    if K == 0:  # empty sums: the groups' rows are zeros
        return Plan((T, N), a.dtype, a.device, lambda a, b, offs, out: out.zero_(), names)
    _hopper_only(variant or VARIANTS[0], a.device)
    # plan: where a and b lie for the tensor maps (copies padded to 16-byte rows)
    copy_a, layout = not tma_rows(a), _b_layout(b)
    copy_b = layout is None
    a_meta = padded(T, K, a.dtype, "meta") if copy_a else a
    b_meta = grouped.b_copy(G, K, N, b.dtype, "meta") if copy_b else b
    b_nmajor = copy_b or layout == "n"
    a_copy = aligned_copier(a) if copy_a else None
    bm, bn, bk = TILE
    sms = sm_count(a.device)
    launch = loader.Launch(instance(a.dtype, b_nmajor), (grouped.grid_size(T, N, G, bm, bn, sms),), (384,), ARGS,
                           ring_smem(STAGES, bm + bn))
    kernel = loader.kernel(FILE, NAME_EXPRESSIONS, launch, a.device.index)
    from cuda_ref import _tma
    lda, (sg, sk, sn) = a_meta.stride(0), b_meta.stride()

    def encode(ptr, which):
        if which == "a":  # boxes of 128 rows x 64 k
            return _tma.encode_2d(ptr, a.dtype, T, K, lda, bm, bk)
        if b_nmajor:  # (N, K, G) in 64 x 64 boxes
            return _tma.encode_3d(ptr, b.dtype, (N, K, G), (sk, sg), (64, bk, 1))
        return _tma.encode_3d(ptr, b.dtype, (K, N, G), (sn, sg), (bk, bn, 1))  # 64 k x 256 rows
    tensor_map = _kept_maps(encode)
    k_tiles = cdiv(K, bk)

    def run(a, b, offs, out):
        if copy_a:
            a = a_copy(a)
        if copy_b:
            b = grouped.b_copy(G, K, N, b.dtype, b.device).copy_(b)
        kernel(tensor_map(a.data_ptr(), "a"), tensor_map(b.data_ptr(), "b"), out.data_ptr(), T, N,
               offs.data_ptr(), offs.stride(0), G, GROUP_M, k_tiles)
    return Plan((T, N), a.dtype, a.device, run, names, traceable=False)


_PLANS = PlanCache(_plan)


def weight_grad_launch(dtype, G: int, K: int, N: int, sms: int, store_tma: bool) -> loader.Launch:
    """b's gradient (G, K, N): a persistent grid over every group's tiles of c[g]."""
    bm, bn, _ = TILE
    grid = (balanced_grid(G * cdiv(K, bm) * cdiv(N, bn), sms),)
    return loader.Launch(weight_grad_instance(dtype, store_tma), grid, (384,), WEIGHT_GRAD_ARGS, WEIGHT_GRAD_SMEM)


def _weight_grad_plan(inputs, variant, out) -> Plan:
    """``weight_grad``'s call: validated, a and grad copied where a tensor map cannot read them,
    then one persistent launch (tiles of c[g] 128 x 256; a group's rows its k-slices)."""
    a, grad, offs = inputs
    grouped.check_weight_grad(a, grad, offs)
    (T, K), N, G = a.shape, grad.shape[1], offs.shape[0]
    names = ("a", "grad", "offs")
    check_output(out, (G, K, N), dict(zip(names, inputs)), need_cuda=True)
    if G * K * N == 0:
        return Plan((G, K, N), a.dtype, a.device, lambda *args: None, names)
    if T == 0:  # no rows: every group's sums are empty
        return Plan((G, K, N), a.dtype, a.device, lambda a, grad, offs, out: out.zero_(), names)
    _hopper_only(VARIANTS[0], a.device)
    # plan: both read as row-major (T, X) matrices in 64 x 64 boxes (a the M-major operand, grad N-major)
    copy_a, copy_g = not tma_rows(a), not tma_rows(grad)
    lda = padded(T, K, a.dtype, "meta").stride(0) if copy_a else a.stride(0)
    ldg = padded(T, N, grad.dtype, "meta").stride(0) if copy_g else grad.stride(0)
    a_copy, g_copy = (aligned_copier(t) if copy else None for t, copy in ((a, copy_a), (grad, copy_g)))
    store_tma = tma_rows(out.view(G * K, N)) if out is not None else N * a.element_size() % 16 == 0
    launch = weight_grad_launch(a.dtype, G, K, N, sm_count(a.device), store_tma)
    kernel = loader.kernel(FILE, NAME_EXPRESSIONS, launch, a.device.index)
    from cuda_ref import _tma

    def encode(ptr, which):  # 64 x 64 boxes: a's and grad's (T, X) rows, c's (N, K, G)
        if which == "c":
            return _tma.encode_3d(ptr, a.dtype, (N, K, G), (N, K * N), (64, 64, 1))
        return _tma.encode_2d(ptr, a.dtype, T, *((K, lda) if which == "a" else (N, ldg)), 64, 64)
    tensor_map = _kept_maps(encode)
    unused_c = bytes(_tma.MAP_BYTES)  # (guarded stores: c's map never read)

    def run(a, grad, offs, out):
        if copy_a:
            a = a_copy(a)
        if copy_g:
            grad = g_copy(grad)
        kernel(tensor_map(a.data_ptr(), "a"), tensor_map(grad.data_ptr(), "g"),
               tensor_map(out.data_ptr(), "c") if store_tma else unused_c, out.data_ptr(), T, K, N,
               offs.data_ptr(), offs.stride(0), G, GROUP_M)
    return Plan((G, K, N), a.dtype, a.device, run, names, traceable=False)


_WEIGHT_GRAD_PLANS = PlanCache(_weight_grad_plan)
_BACKEND = grouped.Backend(_PLANS, _WEIGHT_GRAD_PLANS)  # gradients (autograd) and the switch's call
switch_call = _BACKEND.switch_call


def pick_variant(a, b, offs, out=None) -> str:
    return VARIANTS[0]


def launches(dtype):
    """(variant, Launch, shape) at Mixtral's 8 experts of 4096 x 14336, 8192 rows, both layouts of b,
    on a GPU of ``DEFAULT_SM_COUNT`` SMs."""
    if dtype not in DTYPES:
        raise TypeError(f"grouped_mm takes {DTYPES}, not {dtype}")
    grid = (grouped.grid_size(8192, 14336, 8, TILE[0], TILE[1], DEFAULT_SM_COUNT),)
    for b_nmajor in (False, True):
        yield VARIANTS[0], loader.Launch(instance(dtype, b_nmajor), grid, (384,), ARGS,
                                         ring_smem(STAGES, TILE[0] + TILE[1])), (8, 8192, 14336, 4096)


def grouped_mm(a: torch.Tensor, b: torch.Tensor, offs: torch.Tensor, *, variant: str | None = None,
               out: torch.Tensor | None = None) -> torch.Tensor:
    """c (T, N) with rows offs[g-1]:offs[g] = a[those rows] @ b[g]: ``triton_impl.grouped_mm``'s call,
    on a Hopper GPU. Rows past offs[-1] are not written. Where a or b requires grad, the result
    carries a grad_fn (b's gradient: ``weight_grad``); ``out`` must then be None."""
    return _BACKEND.grouped_mm(a, b, offs, variant, out)


def weight_grad(a: torch.Tensor, grad: torch.Tensor, offs: torch.Tensor, *,
                out: torch.Tensor | None = None) -> torch.Tensor:
    """(G, K, N), G = len(offs): for each group g, a[rows of g].T @ grad[rows of g] (grouped_mm's
    gradient of b; zeros for an empty group): ``triton_impl``'s ``weight_grad``, on a Hopper GPU."""
    return _BACKEND.weight_grad(a, grad, offs, out)
