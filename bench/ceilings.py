"""Ceilings measured in the same run on the same GPU: never a datasheet figure."""

from __future__ import annotations

import torch

from bench.timing import time_gpu


def copy_bandwidth_gbs(device="cuda", nbytes: int = 1 << 30) -> float:
    """Device-to-device copy of ``nbytes`` (>= 1 GiB), counting bytes read + bytes written."""
    src = torch.rand(nbytes // 4, device=device) + 1  # random, never zeros
    dst = torch.empty_like(src)
    t = time_gpu(lambda: dst.copy_(src))
    del src, dst
    return 2 * nbytes / (t.median_ms * 1e-3) / 1e9
