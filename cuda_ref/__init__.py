"""Raw CUDA C kernels launched through CuPy, one ``.cu`` file per algorithm.

Functions accept torch CUDA tensors or CuPy arrays and return the kind they were given;
``scaled_mm`` (FP8 with scales, ``cuda_ref/_matmul_fp8.py``) and ``grouped_mm`` (mixture-of-experts
layers, ``cuda_ref/_grouped.py``) take torch tensors.
"""

from cuda_ref import _gemv, _grouped, _matmul, _matmul_fp8, _transpose
from cuda_ref._gemv import gemv
from cuda_ref._grouped import grouped_mm
from cuda_ref._matmul import matmul
from cuda_ref._matmul_fp8 import scaled_mm
from cuda_ref._transpose import transpose
from kernel_common import ops as _ops
from kernel_common import look_inside, variants_lookup
from kernel_common.switch import Switch

# variants(algorithm): the variant names, the default first
_MODULES = {"transpose": _transpose, "gemv": _gemv, "matmul": _matmul, "scaled_mm": _matmul_fp8,
            "grouped_mm": _grouped}
ALGORITHMS = tuple(_MODULES)  # what the package computes (each algorithm's sources, launches, variants)
variants = variants_lookup({name: m.VARIANTS for name, m in _MODULES.items()})
# pick(algorithm, *inputs): the variant variant=None runs; describe(algorithm, *inputs, variant=None):
# what a call runs (variant and config), without running it; launch(algorithm, *inputs, variant=None):
# the launch it makes; plans(algorithm): the plan cache calls go through (kernel_common/validate.py)
pick, describe, launches, sources, launch, plans = look_inside(_MODULES)

# torch.ops.cuda_ref.<name>: autograd and torch.compile go through these (kernel_common/ops.py)
ops = _ops.register("cuda_ref", {name: (m._PLANS, m.DTYPES, m.VARIANTS) for name, m in
                                 (("transpose", _transpose), ("gemv", _gemv), ("matmul", _matmul))},
                   need_cuda=True)

# a model's mm / addmm / mv on CUDA tensors to our kernels: enable(), disable(), `with enabled():`
# (kernel_common/switch.py); routed() counts the calls
_switch = Switch("cuda_ref", _matmul._PLANS, _gemv._PLANS, _matmul.FLOAT_DTYPES, grouped=_grouped.switch_call)
enable, disable, enabled, routed = _switch.enable, _switch.disable, _switch.enabled, _switch.counts
switch = _switch  # the object itself (reset_counts(), what bench model times)

__all__ = ["ALGORITHMS", "describe", "disable", "enable", "enabled", "gemv", "grouped_mm", "launch", "launches", "matmul", "ops", "pick",
           "plans", "routed", "scaled_mm", "sources", "switch", "transpose", "variants"]
