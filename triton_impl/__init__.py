"""Triton kernels with blocked tiles. Same public API as ``cuda_ref`` (torch tensors only), with
``scaled_mm`` (FP8 with scales, ``triton_impl/_matmul_fp8.py``) and ``grouped_mm``
(mixture-of-experts products, ``triton_impl/_grouped.py``), as cuda_ref has."""

from kernel_common import ops as _ops
from kernel_common import interpreting, look_inside, variants_lookup
from kernel_common.switch import Switch
from triton_impl import _gemv, _grouped, _matmul, _matmul_fp8, _transpose, _tuning
from triton_impl._gemv import gemv
from triton_impl._grouped import grouped_mm
from triton_impl._matmul import matmul, tune
from triton_impl._matmul_fp8 import scaled_mm
from triton_impl._transpose import transpose

# variants(algorithm): the variant names, the default first
variants = variants_lookup({"transpose": _transpose.VARIANTS, "gemv": _gemv.VARIANTS, "matmul": _matmul.VARIANTS,
                            "grouped_mm": _grouped.VARIANTS, "scaled_mm": _matmul_fp8.VARIANTS})
# pick(algorithm, *inputs): the variant variant=None runs; describe(algorithm, *inputs, variant=None):
# what a call runs (variant and config), without running it; plans(algorithm): the plan cache calls
# go through (kernel_common/validate.py)
pick, describe, launches, _, _, plans = look_inside({"transpose": _transpose, "gemv": _gemv, "matmul": _matmul,
                                                     "grouped_mm": _grouped, "scaled_mm": _matmul_fp8})

# the tuning tables: where they live (the user's file, the shipped one per architecture), their buckets
tuning = _tuning

# torch.ops.triton_impl.<name>: autograd and torch.compile go through these (kernel_common/ops.py);
# triton_ops that torch.compile traces into, except under the interpreter (nothing to record)
ops = _ops.register("triton_impl", {name: (m._PLANS, m.DTYPES, m.VARIANTS) for name, m in
                                    (("transpose", _transpose), ("gemv", _gemv), ("matmul", _matmul))},
                    traceable=not interpreting())

# a model's mm / addmm / mv on CUDA tensors to our kernels: enable(), disable(), `with enabled():`
# (kernel_common/switch.py); routed() counts the calls
_switch = Switch("triton_impl", _matmul._PLANS, _gemv._PLANS, _matmul.FLOAT_DTYPES, grouped=_grouped.switch_call)
enable, disable, enabled, routed = _switch.enable, _switch.disable, _switch.enabled, _switch.counts
switch = _switch  # the object itself (reset_counts(), what bench model times)

__all__ = ["describe", "disable", "enable", "enabled", "gemv", "grouped_mm", "launches", "matmul", "ops", "pick",
           "plans", "routed", "scaled_mm", "switch", "transpose", "tune", "tuning", "variants"]
