"""Tensor maps for TMA (cp.async.bulk.tensor), encoded on the host by the driver.

A tensor map describes a 2-D tensor in global memory (base address, extents, row stride) and the
box one TMA copy moves into shared memory (its extents and swizzle). It is 128 bytes that a kernel
takes by value (a ``const __grid_constant__`` parameter). ``cuTensorMapEncodeTiled`` is called
through ctypes on the driver library itself: no CUDA Python package is needed where a GPU is.
"""

from __future__ import annotations

import ctypes
import functools
import threading

import torch

# CUtensorMapDataType, CUtensorMapSwizzle, CUtensorMapL2promotion (cuda.h)
_DATA_TYPE = {torch.float16: 6, torch.bfloat16: 9, torch.float32: 7, torch.int8: 0,  # int8, FP8: UINT8 (bytes)
              torch.float8_e4m3fn: 0, torch.float8_e5m2: 0}
SWIZZLE_128B = 3
# A copy's L2 misses fetch 128 bytes (a k-slice's row). 256 (DeepGEMM's choice: the next slice's row
# fetched with it) ran 0.993x as fast flushed and level back to back (decision 057).
L2_PROMOTION_128B, L2_PROMOTION_256B = 2, 3
L2_PROMOTION = L2_PROMOTION_128B
MAP_BYTES = 128

_lock = threading.Lock()
_encode = None


def _encoder():
    global _encode
    with _lock:
        if _encode is None:
            lib = ctypes.CDLL("libcuda.so.1")
            fn = lib.cuTensorMapEncodeTiled
            fn.restype = ctypes.c_int
            fn.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_uint32, ctypes.c_void_p,
                           ctypes.POINTER(ctypes.c_uint64), ctypes.POINTER(ctypes.c_uint64),
                           ctypes.POINTER(ctypes.c_uint32), ctypes.POINTER(ctypes.c_uint32),
                           ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_int]
            _encode = fn
    return _encode


@functools.lru_cache(maxsize=1024)
def encode_2d(ptr: int, dtype: torch.dtype, rows: int, cols: int, row_stride: int, box_rows: int,
              box_cols: int, swizzle: int = SWIZZLE_128B) -> bytes:
    """The tensor map of a rows x cols row-major matrix at ``ptr`` (``row_stride`` elements apart,
    a multiple of 16 bytes; ``ptr`` 16-byte aligned), copied in boxes of box_rows x box_cols.
    Reads past the matrix's edge fill the box with zeros. Its bytes are the arguments' alone, so
    they are kept: a new shape's plan finds its weight's map made by the plans before it (each
    encoding through ctypes cost 10-15 us of host time)."""
    size = dtype.itemsize
    buf = ctypes.create_string_buffer(MAP_BYTES + 64)  # the driver wants the map 64-byte aligned
    at = (ctypes.addressof(buf) + 63) & ~63
    dims = (ctypes.c_uint64 * 2)(cols, rows)        # innermost first
    strides = (ctypes.c_uint64 * 1)(row_stride * size)  # bytes, of every dimension but the first
    box = (ctypes.c_uint32 * 2)(box_cols, box_rows)
    steps = (ctypes.c_uint32 * 2)(1, 1)
    err = _encoder()(at, _DATA_TYPE[dtype], 2, ptr, dims, strides, box, steps, 0, swizzle, L2_PROMOTION, 0)
    if err != 0:
        raise RuntimeError(f"cuTensorMapEncodeTiled failed with CUresult {err} (rows {rows}, cols {cols}, "
                           f"row stride {row_stride}, box {box_rows} x {box_cols})")
    return ctypes.string_at(at, MAP_BYTES)


@functools.lru_cache(maxsize=1024)
def encode_3d(ptr: int, dtype: torch.dtype, extents: tuple, strides: tuple, box: tuple,
              swizzle: int = SWIZZLE_128B) -> bytes:
    """The tensor map of a 3-D tensor at ``ptr``: ``extents`` innermost first, the element
    ``strides`` of the outer two (multiples of 16 bytes), copied in boxes of ``box`` (innermost
    first). Reads past an extent fill the box with zeros (a batch's K tail reads zeros, not the
    next matrix's rows)."""
    size = dtype.itemsize
    buf = ctypes.create_string_buffer(MAP_BYTES + 64)
    at = (ctypes.addressof(buf) + 63) & ~63
    dims = (ctypes.c_uint64 * 3)(*extents)
    byte_strides = (ctypes.c_uint64 * 2)(*(s * size for s in strides))
    boxes = (ctypes.c_uint32 * 3)(*box)
    steps = (ctypes.c_uint32 * 3)(1, 1, 1)
    err = _encoder()(at, _DATA_TYPE[dtype], 3, ptr, dims, byte_strides, boxes, steps, 0, swizzle, L2_PROMOTION, 0)
    if err != 0:
        raise RuntimeError(f"cuTensorMapEncodeTiled failed with CUresult {err} (extents {extents}, strides {strides}, "
                           f"box {box})")
    return ctypes.string_at(at, MAP_BYTES)
