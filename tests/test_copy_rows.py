"""The tensor-core launchers' copy of an operand into rows padded to 16 bytes (cuda_ref/_copy.py,
kernels/copy_rows.cu): every element where it was, the pad zeroed, at any alignment of the rows."""

import pytest
import torch

from conftest import requires_gpu
from cuda_ref import _copy


@pytest.mark.parametrize("cols, dtype, offset, step, word", [
    (30522, torch.bfloat16, 0, 1, 4),   # an LM head's row-major b: rows 4 bytes apart from 16
    (50257, torch.bfloat16, 0, 1, 2),   # an odd count of 2-byte elements
    (4100, torch.float32, 0, 1, 16),    # rows of whole 16 bytes (a base off 16 takes the copy)
    (4100, torch.float32, 1, 1, 4),     # a view starting one element in
    (1001, torch.int8, 0, 1, 1),
    (1000, torch.float16, 4, 2, 8),     # every other row of a view 8 bytes in
])
def test_launch_takes_the_widest_word_the_rows_allow(cols, dtype, offset, step, word):
    base = torch.empty(6, cols + offset, dtype=dtype)
    t = base[::step, offset:]
    es = t.element_size()
    assert _copy.word_bytes(t) == word
    launch, (rows, words, pitch, sa) = _copy.copy_launch(t)
    assert (rows, words, sa) == (t.shape[0], cols * es // word, t.stride(0) * es // word)
    assert pitch * word % 16 == 0 and cols * es <= pitch * word < cols * es + 16
    assert launch.name == f"copy_rows<{_copy.WORDS[word]}, {_copy.UNROLL}>"
    assert launch.grid[0] * _copy.THREADS * _copy.UNROLL >= pitch and launch.grid[1] == rows


@requires_gpu
@pytest.mark.parametrize("dtype", [torch.int8, torch.float16, torch.bfloat16, torch.float32, torch.float64])
@pytest.mark.parametrize("rows, cols, offset, step", [
    (1, 1, 0, 1), (7, 13, 0, 1), (129, 4095, 1, 1), (1025, 30522, 0, 1), (300, 50257, 3, 2), (70000, 3, 0, 1),
])
def test_copy_is_exact_and_zeroes_the_pad(dtype, rows, cols, offset, step, monkeypatch):
    g = torch.Generator(device="cuda").manual_seed(rows * 7 + cols)
    base = torch.randn(rows * step, cols + offset, device="cuda", generator=g).mul(50).to(dtype)
    t = base[::step, offset:]
    made_by = _copy.padded

    def poisoned(*args, **kw):  # the copy's buffer, pad included, all bytes 0xFF (NaN, or -1) before it runs
        buf = made_by(*args, **kw)
        buf.as_strided((buf.shape[0], buf.stride(0)), (buf.stride(0), 1)).view(torch.uint8).fill_(0xFF)
        return buf
    monkeypatch.setattr(_copy, "padded", poisoned)
    made = _copy.aligned_copier(t)(t)
    assert made.shape == t.shape and made.stride(1) == 1
    assert made.stride(0) * made.element_size() % 16 == 0 and made.data_ptr() % 16 == 0
    assert torch.equal(made, t)
    wide = made.as_strided((rows, made.stride(0)), (made.stride(0), 1))
    assert not wide[:, cols:].any(), "the pad past each row is zeroed"
