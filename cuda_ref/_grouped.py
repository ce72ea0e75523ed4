"""Grouped matmul for mixture-of-experts layers (kernels/matmul_grouped.cu, sm_90a):
``torch.nn.functional.grouped_mm``'s 2-D x 3-D form, ``triton_impl.grouped_mm``'s call (the checks,
the grid for any split and b's padded copy are ``kernel_common/grouped.py``'s).

a (T, K) holds every group's rows, sorted by group; ``offs`` (G,) int32 the end of each group's
rows; b (G, K, N) row-major, or each b[g] the transpose of an (N, K) weight (K-major). One
persistent launch whatever the split (the sizes stay on the GPU); operands a tensor map cannot
read where they lie are copied first (rows padded to 16 bytes).

Not yet run on a GPU: built and compile-checked (NVRTC, sm_90a); not exported from ``cuda_ref``
until tests/test_grouped.py's CUDA cases pass on one.
"""
from __future__ import annotations

import torch

from cuda_ref import loader
from cuda_ref._matmul_wgmma import _hopper_only, _kept_maps, ring_smem
from kernel_common import DEFAULT_SM_COUNT, cdiv, grouped, sm_count, tma_rows
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


NAME_EXPRESSIONS = tuple(instance(d, nm) for d in DTYPES for nm in (False, True))
SOURCES = {FILE: NAME_EXPRESSIONS}


def _b_layout(b) -> str | None:
    """How a 3-D map reads b where it lies: "n" (each b[g] row-major), "k" (each b[g] K-major, a
    batch of W.t() views), or None (a copy): the inner extent contiguous, the other two strides
    multiples of 16 bytes, the base 16-byte aligned."""
    step = 16 // b.element_size()
    if b.data_ptr() % 16:
        return None
    g, k, n = b.stride()
    if n == 1 and k % step == 0 and g % step == 0:
        return "n"
    if k == 1 and n % step == 0 and g % step == 0:
        return "k"
    return None


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
            a = padded(T, K, a.dtype, a.device).copy_(a)
        if copy_b:
            b = grouped.b_copy(G, K, N, b.dtype, b.device).copy_(b)
        kernel(tensor_map(a.data_ptr(), "a"), tensor_map(b.data_ptr(), "b"), out.data_ptr(), T, N,
               offs.data_ptr(), offs.stride(0), G, GROUP_M, k_tiles)
    return Plan((T, N), a.dtype, a.device, run, names, traceable=False)


_PLANS = PlanCache(_plan)


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
    """c (T, N) with rows offs[g-1]:offs[g] = a[those rows] @ b[g]: ``triton_impl.grouped_mm``'s call
    (no gradients yet), on a Hopper GPU. Rows past offs[-1] are not written."""
    return _PLANS((a, b, offs), variant, out)
