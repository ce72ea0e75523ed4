"""Measured constants of Triton matmul's selection, per GPU architecture, kept as data
(``arch_sm_90.json`` beside this module): each with the results file it was measured in and the
decision record that explains it.

Only Hopper (sm_90) has been measured. On another architecture the selection runs on sm_90's
numbers, and the first plan made on such a device says so once (``check``): its choices there are
a fallback, not measurements.
"""

from __future__ import annotations

import json
import pathlib
import warnings

import torch

MEASURED = "sm_90"
_warned: set = set()


def load(arch: str = MEASURED) -> dict:
    """{name: value} of ``arch_<arch>.json`` (its entries' values; the files and records they cite
    stay in the file)."""
    data = json.loads((pathlib.Path(__file__).with_name(f"arch_{arch}.json")).read_text())
    return {k: v["value"] for k, v in data.items() if isinstance(v, dict) and "value" in v}


def check(device) -> None:
    """Warn once per architecture where the selection's numbers were not measured (a CUDA device
    other than sm_90; CPU devices, the interpreter's, are not GPUs and pass)."""
    device = torch.device(device)
    if device.type != "cuda":
        return
    major, minor = torch.cuda.get_device_capability(device)
    arch = f"sm_{major}{minor}"
    if arch == MEASURED or arch in _warned:
        return
    _warned.add(arch)
    warnings.warn(f"triton_impl: matmul's selection constants were measured on {MEASURED} only; on this "
                  f"{arch} GPU it uses {MEASURED}'s (triton_impl/arch_{MEASURED}.json); tune the shapes you "
                  f"run (triton_impl.tune, TRITON_IMPL_TUNE=1)", stacklevel=3)


SM_90 = load(MEASURED)
