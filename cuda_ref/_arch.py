"""Measured thresholds of the CUDA matmul's selection, per GPU architecture, kept as data
(``arch_sm_90.json`` beside this module), read and checked by ``kernel_common/arch.py``, which says
what the file holds and when ``check`` warns."""

import functools

import torch

from kernel_common.arch import Arch

ARCH = Arch(__file__, "cuda_ref")
SM_90, load, check = ARCH.values, ARCH.load, ARCH.check


@functools.lru_cache(maxsize=None)
def dram_gbs(device: torch.device) -> float:
    """Peak DRAM bandwidth of a CUDA ``device`` in GB/s (memory clock x bus width, double data rate: an
    H100 SXM's 3352, an H200's 4800), infinite for a device that is not a GPU. Two sm_90 parts differ
    there, and some entries of the arch data hold for the slower one only."""
    if device.type != "cuda":
        return float("inf")
    import cupy

    attrs = cupy.cuda.Device(torch.cuda.current_device() if device.index is None else device.index).attributes
    return 2 * attrs["MemoryClockRate"] * 1e3 * attrs["GlobalMemoryBusWidth"] / 8 / 1e9
