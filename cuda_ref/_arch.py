"""Measured thresholds of the CUDA matmul's selection, per GPU architecture, kept as data
(``arch_sm_90.json`` beside this module), read and checked by ``kernel_common/arch.py``, which says
what the file holds and when ``check`` warns."""

from kernel_common.arch import Arch

ARCH = Arch(__file__, "cuda_ref")
SM_90, load, check = ARCH.values, ARCH.load, ARCH.check
