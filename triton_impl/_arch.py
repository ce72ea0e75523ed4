"""Measured constants of Triton matmul's selection, per GPU architecture, kept as data
(``arch_sm_90.json`` beside this module), read and checked by ``kernel_common/arch.py``, which says
what the file holds and when ``check`` warns."""

from kernel_common.arch import Arch

ARCH = Arch(__file__, "triton_impl", "tune the shapes you run (triton_impl.tune, TRITON_IMPL_TUNE=1)")
SM_90, load, check = ARCH.values, ARCH.load, ARCH.check
