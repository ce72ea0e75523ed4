"""A 2-D operand copied into rows padded to 16 bytes, pad zeroed (kernels/copy_rows.cu): what a
tensor-core launcher hands its TMA maps where they cannot read the rows where they lie (row starts
off 16 bytes). A plan makes its copier once from the operand's metadata; the kernel is compiled on
the first copy. ``kmajor_copy``: an operand transposed into such rows."""

from __future__ import annotations

from collections.abc import Callable

import torch

from cuda_ref import loader
from kernel_common import cdiv, matrix_layout, padded

FILE = "copy_rows.cu"
UNROLL = 4  # words a thread moves a row (its loads issued before its stores)
THREADS = 256
WORDS = {1: "unsigned char", 2: "unsigned short", 4: "unsigned", 8: "uint2", 16: "uint4"}  # bytes -> the word type
NAME_EXPRESSIONS = tuple(f"copy_rows<{w}, {UNROLL}>" for w in WORDS.values())
SOURCES = {FILE: NAME_EXPRESSIONS}  # what the launches compile from (cuda_ref.sources)
MAX_GRID_Y = 65535


def word_bytes(t: torch.Tensor) -> int:
    """The widest word (16 bytes at most) that t's base, its row stride and a row's length are whole
    multiples of: a row then starts on a word, whatever the element size."""
    es = t.element_size()
    sizes = (t.data_ptr(), t.shape[1] * es) + ((t.stride(0) * es,) if t.shape[0] > 1 else ())
    return next(w for w in (16, 8, 4, 2, 1) if all(s % w == 0 for s in sizes))


def copy_launch(t: torch.Tensor) -> tuple[loader.Launch, tuple[int, int, int, int]]:
    """copy_rows' launch for an operand laid out as ``t`` (rows of unit stride) and its scalars
    (rows, words, the padded pitch and t's row stride, in words)."""
    (R, C), es, w = t.shape, t.element_size(), word_bytes(t)
    pitch = padded(R, C, t.dtype, "meta").stride(0) * es // w
    grid = (cdiv(pitch, THREADS * UNROLL), min(R, MAX_GRID_Y))
    return loader.Launch(f"copy_rows<{WORDS[w]}, {UNROLL}>", grid, (THREADS,), "QQqqqq"), \
        (R, C * es // w, pitch, t.stride(0) * es // w)


def aligned_copier(t: torch.Tensor) -> Callable[[torch.Tensor], torch.Tensor]:
    """A function copying a tensor laid out as the 2-D ``t`` (shape, strides, base within 16 bytes:
    what a plan's key holds) into a new one whose rows start every 16 bytes, the pad past each row
    zeroed: copy_rows on a CUDA device where rows have unit stride, else torch's copy."""
    R, C = t.shape
    if t.device.type != "cuda" or R * C == 0 or (t.stride(1) != 1 and C > 1):
        return lambda t: padded(R, C, t.dtype, t.device, zero_pad=True).copy_(t)
    launch, scalars = copy_launch(t)
    device = t.device.index
    kernel = None

    def copy(t: torch.Tensor) -> torch.Tensor:
        nonlocal kernel
        if kernel is None:
            kernel = loader.kernel(FILE, NAME_EXPRESSIONS, launch, device)
        out = padded(R, C, t.dtype, t.device)
        kernel(t.data_ptr(), out.data_ptr(), *scalars)
        return out
    return copy


def kmajor_copy(b: torch.Tensor, transposed, zero_pad: bool = True) -> torch.Tensor:
    """``b`` (K, N) as the .t() of an (N, K) row-major copy, rows padded to 16 bytes: what an int8
    tensor-core kernel reads (its MMAs take b K-major only), and the float32 walk's A^T (b = a) and
    row-major b (b = W, of a W.t()). The layout change runs this package's transpose (``transposed``:
    the plan's own, one for each operand) where the copy is contiguous, torch's copy into the padded
    rows otherwise. ``zero_pad``: the pad past each row zeroed (for kernels whose copies touch it)."""
    K, N = b.shape
    buf = padded(N, K, b.dtype, b.device, zero_pad=zero_pad)
    if buf.is_contiguous() and matrix_layout(b) == "row":
        transposed(b, out=buf)
    else:
        buf.copy_(b.t())
    return buf.t()
