"""Measured constants of Triton matmul's selection, per GPU architecture, kept as data
(``arch_sm_90.json`` beside this module), read and checked by ``kernel_common/arch.py``, which says
what the file holds and when ``check`` warns."""

from __future__ import annotations

from kernel_common import arch as _common
from kernel_common.arch import MEASURED

_warned: set = set()  # the architectures told already (a module global: tests reset it)


def load(arch: str = MEASURED) -> dict:
    """{name: value} of ``arch_<arch>.json`` beside this module."""
    return _common.load(_common.data_path(__file__, arch))


def check(device) -> None:
    """Warn once per architecture where the selection's numbers were not measured."""
    _common.check(device, _warned, "triton_impl", "tune the shapes you run (triton_impl.tune, TRITON_IMPL_TUNE=1)")


SM_90 = load(MEASURED)
