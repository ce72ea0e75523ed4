"""A backend's measured selection constants, per GPU architecture, kept as data: ``arch_<arch>.json``
beside the backend's modules, each entry with its value, what it means, the results file it was
measured in and the decision record that explains it. ``triton_impl/_arch.py`` and
``cuda_ref/_arch.py`` read theirs through this module, so the loader and the warning live once.

Only Hopper (sm_90) has been measured. On another architecture a selection runs on sm_90's numbers,
and the first plan made on such a device says so once (``check``): its choices there are a fallback,
not measurements.
"""

from __future__ import annotations

import json
import pathlib
import warnings

import torch

MEASURED = "sm_90"


def data_path(module_file: str, arch: str = MEASURED) -> pathlib.Path:
    """``arch_<arch>.json`` beside ``module_file`` (a backend module's ``__file__``)."""
    return pathlib.Path(module_file).with_name(f"arch_{arch}.json")


def load(path) -> dict:
    """{name: value} of the arch file at ``path`` (its entries' values; the files and records they cite
    stay in the file)."""
    data = json.loads(pathlib.Path(path).read_text())
    return {k: v["value"] for k, v in data.items() if isinstance(v, dict) and "value" in v}


def check(device, warned: set, package: str, advice: str = "") -> None:
    """Warn once per architecture (``warned``: the ones told already) where ``package``'s selection
    numbers were not measured: a CUDA device other than sm_90. Any other device (the CPU, the Triton
    interpreter's, meta) is not a GPU and returns before torch.cuda is asked anything. ``advice``
    ends the message where the package has some."""
    device = torch.device(device)
    if device.type != "cuda":
        return
    major, minor = torch.cuda.get_device_capability(device)
    arch = f"sm_{major}{minor}"
    if arch == MEASURED or arch in warned:
        return
    warned.add(arch)
    # stacklevel 4: past this function, Arch.check and the plan that asks
    warnings.warn(f"{package}: matmul's selection constants were measured on {MEASURED} only; on this "
                  f"{arch} GPU it uses {MEASURED}'s ({package}/arch_{MEASURED}.json)"
                  + (f"; {advice}" if advice else ""), stacklevel=4)


class Arch:
    """One backend's measured data: ``values`` (sm_90's, what its selection computes with), ``load``
    of another architecture's file, and ``check``, which warns once per unmeasured architecture
    (``warned``: those told already)."""

    def __init__(self, module_file: str, package: str, advice: str = ""):
        self.module_file, self.package, self.advice = module_file, package, advice
        self.values = self.load()
        self.warned: set = set()

    def load(self, arch: str = MEASURED) -> dict:
        """{name: value} of ``arch_<arch>.json`` beside the backend's modules."""
        return load(data_path(self.module_file, arch))

    def check(self, device) -> None:
        check(device, self.warned, self.package, self.advice)
