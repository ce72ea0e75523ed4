"""GEMV launchers: validate -> plan (layout, variant) -> launch. Kernels: kernels/gemv.cu.

Each variant reads A in one layout: "row" (row-major, stride along K is 1) or "col"
(column-major, the ``.t()`` view of a contiguous (K, M) tensor). Given A in the other layout,
``gemv`` makes one copy of A into the variant's layout (``a.contiguous()`` or
``a.t().contiguous().t()``); ``variant=None`` picks a variant that reads A as it comes, so it
never copies. A strided x is made contiguous (one copy of K elements).
"""

from __future__ import annotations

import threading

import numpy as np
import torch

from cuda_ref import _module
from kernel_common import (cdiv, check_gemv_args, check_variant, dtype_name, matrix_layout, nothing_to_compute,
                           output, rows_aligned16, to_layout)

FILE = "gemv.cu"
DTYPES = (torch.float32, torch.float16, torch.bfloat16)
X_CONST_BYTES = 65536  # the __constant__ buffer of gemv.cu
CHUNK = 1024           # coalesced_shared: x elements staged per piece (4 KiB of floats)

# variant -> (layout it reads, kernel template). The default for row-major A comes first.
KERNELS = {
    "warp_per_row": ("row", "gemv_warp_per_row<{T}, 32>"),
    "native": ("row", "gemv_thread_per_row<{T}>"),
    "coalesced": ("col", "gemv_thread_per_row<{T}>"),
    "coalesced_const": ("col", "gemv_coalesced_const<{T}>"),
    "coalesced_shared": ("col", f"gemv_coalesced_shared<{{T}}, {CHUNK}>"),
    "rows_per_warp": ("row", "gemv_warp_per_row<{T}, 8>"),
    "split_k": ("row", "gemv_split_k<{T}>"),
}
VARIANTS = tuple(KERNELS)
LAYOUT = {v: layout for v, (layout, _) in KERNELS.items()}
_TEMPLATES = sorted({t for _, t in KERNELS.values()} | {"gemv_split_k_reduce<{T}>"})
NAME_EXPRESSIONS = tuple(t.format(T=c) for t in _TEMPLATES for c in _module.CTYPE.values())


def pick_variant(a, x) -> str:
    """What ``variant=None`` runs (never a variant that needs a copy of A). Measured on an H200
    (bench/results/h200-2026-11-21-*.json), float32: column-major A -> coalesced_shared (38% of
    copy at 32768^2 vs 26% for coalesced; all three column variants reach 96% at 4194304x32).
    Row-major A: K <= 128 -> rows_per_warp (2.2x cuBLAS at 4194304x32, warp_per_row 0.56x); fewer
    than 4 rows per SM with K >= 4096 -> split_k (64x1048576: 0.91x cuBLAS, warp_per_row 0.05x);
    past 2^26 elements -> split_k, a block per row there (12345x6789 / 16384^2 / 32768^2: 3641 /
    4372 / 4601 GB/s vs 3540 / 4306 / 4401 for warp_per_row); otherwise warp_per_row (2525 vs
    2401 GB/s at 4096^2, 3706 vs 3612 at 8192^2)."""
    M, K = a.shape
    if matrix_layout(a) == "col":
        return "coalesced_shared"
    sms = torch.cuda.get_device_properties(a.device).multi_processor_count if a.is_cuda else 132
    if M < 4 * sms and K >= 4096:
        return "split_k"
    if K <= 128:
        return "rows_per_warp"
    if M * K > 1 << 26:
        return "split_k"
    return "warp_per_row"


def gemv(a, x, *, variant: str | None = None, out=None):
    """y = A x for A (M, K) and x (K,), accumulated in float32; returns y (M,) of A's dtype.

    ``a`` and ``x``: torch CUDA tensors or CuPy arrays of float32, float16 or bfloat16 (the
    same dtype). The result is of the kind given. See the module docstring for layouts.
    """
    a, was_cupy = _module.from_user(a, "a")
    x, _ = _module.from_user(x, "x")
    check_gemv_args(a, x, dtypes=DTYPES)
    check_variant(variant, VARIANTS, "gemv")
    M, K = a.shape
    if variant == "coalesced_const" and K * a.element_size() > X_CONST_BYTES:
        raise ValueError(f"variant coalesced_const keeps x in {X_CONST_BYTES} bytes of constant memory: "
                         f"K must be <= {X_CONST_BYTES // a.element_size()} for {dtype_name(a.dtype)}, got K={K}")
    out = output(_module.from_user_out(out), (M,), {"a": a, "x": x}, need_cuda=True)
    if nothing_to_compute(out, K):
        return _module.to_user(out, was_cupy)
    variant = variant or pick_variant(a, x)

    a = to_layout(a, LAYOUT[variant])
    x = x.contiguous()
    _launch(variant, a, x, out)
    return _module.to_user(out, was_cupy)


def _launch(variant: str, a, x, out) -> None:
    M, K = a.shape
    ctype = _module.CTYPE[a.dtype]
    device = a.device.index
    fn = _module.get_function(FILE, NAME_EXPRESSIONS, KERNELS[variant][1].format(T=ctype), device)
    i64, ptr = _module.i64, _module.ptr
    sizes = [i64(M), i64(K), i64(a.stride(0)), i64(a.stride(1))]
    vec = 16 // a.element_size()
    aligned = rows_aligned16(a) and x.data_ptr() % 16 == 0

    if variant in ("native", "coalesced"):
        _module.launch(fn, (cdiv(M, 128),), (128,), [ptr(a), ptr(x), ptr(out), *sizes], device=device)
    elif variant == "coalesced_const":
        _launch_const(fn, a, x, out, sizes, device)
    elif variant == "coalesced_shared":
        _module.launch(fn, (cdiv(M, 256),), (256,), [ptr(a), ptr(x), ptr(out), *sizes], device=device)
    elif variant in ("warp_per_row", "rows_per_warp"):
        lanes = 32 if variant == "warp_per_row" else 8
        _module.launch(fn, (cdiv(M * lanes, 256),), (256,),
                       [ptr(a), ptr(x), ptr(out), *sizes, np.int32(aligned)], device=device)
    else:  # split_k: enough blocks for about 8 per SM, pieces of at least 4096 elements
        sms = torch.cuda.get_device_properties(a.device).multi_processor_count
        splits = max(1, min(cdiv(K, 4096), cdiv(8 * sms, M)))
        piece = cdiv(cdiv(K, splits), vec) * vec
        splits = cdiv(K, piece)
        partial = torch.empty((M, splits), dtype=torch.float32, device=a.device)
        _module.launch(fn, (M * splits,), (256,),
                       [ptr(a), ptr(x), ptr(partial), *sizes, i64(piece), np.int32(splits), np.int32(aligned)],
                       device=device)
        reduce = _module.get_function(FILE, NAME_EXPRESSIONS, f"gemv_split_k_reduce<{ctype}>", device)
        _module.launch(reduce, (cdiv(M, 256),), (256,), [ptr(partial), ptr(out), i64(M), np.int32(splits)],
                       device=device)


# x_const is one buffer per device, shared by every caller: two threads (or two streams) copying
# their x into it could each run on the other's x. Copy + launch happen under a lock (in order on
# one stream), and the copy waits for the last kernel that read the buffer, on whatever stream it
# ran (an event). Inside CUDA-graph capture no event is waited on or recorded (an event from
# outside the capture cannot be); the graph's copy and kernel replay in order on its stream.
_const_lock = threading.Lock()
_const_last_use: dict[int, torch.cuda.Event] = {}


def _launch_const(fn, a, x, out, sizes, device: int) -> None:
    M = a.shape[0]
    ptr = _module.ptr
    with _const_lock:
        stream = torch.cuda.current_stream(device)
        with torch.cuda.device(device):
            capturing = torch.cuda.is_current_stream_capturing()
        last = _const_last_use.get(device)
        if last is not None and not capturing:
            stream.wait_event(last)
        _module.copy_to_symbol(FILE, NAME_EXPRESSIONS, "x_const", x, device)
        _module.launch(fn, (cdiv(M, 128),), (128,), [ptr(a), ptr(out), *sizes], device=device)
        if not capturing:
            done = torch.cuda.Event()
            done.record(stream)
            _const_last_use[device] = done
