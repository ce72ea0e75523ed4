"""Host time of the parts of a public call beside torch's own call, on inputs small enough that the
GPU keeps up: torch's op with and without out=, ours with and without out=, the plan's run alone
(no lookup), the lookup alone (``PlanCache._planned``), and the result's allocation
(``empty_like`` of the plan's one-element view, and ``torch.empty``).

Usage (GPU): PYTHONPATH=. python lab/host_parts.py
"""

from __future__ import annotations

import torch

import triton_impl
from bench.timing import host_cost_us
from triton_impl import _gemv, _matmul


def parts(name, torch_fn, ours, cache, inputs, out):
    ours(*inputs)
    ours(*inputs, out=out)
    plan = cache._planned(inputs, None, None)
    fns = {"torch": lambda: torch_fn(*inputs), "torch out=": lambda: torch_fn(*inputs, out=out),
           "ours": lambda: ours(*inputs), "ours out=": lambda: ours(*inputs, out=out),
           "run": lambda: plan.run(*inputs, out), "lookup": lambda: cache._planned(inputs, None, None),
           "empty_like": lambda: torch.empty_like(plan._like),
           "torch.empty": lambda: torch.empty(out.shape, dtype=out.dtype, device=out.device)}
    host = host_cost_us(list(fns.values()))
    print(f"{name}: " + ", ".join(f"{k} {v:.2f}" for k, v in zip(fns, host)), flush=True)


def main() -> None:
    print(torch.cuda.get_device_name(), "host us a call")
    a = torch.randn(64, 256, device="cuda", dtype=torch.bfloat16)
    x = torch.randn(256, device="cuda", dtype=torch.bfloat16)
    parts("gemv 64x256 bf16", torch.mv, triton_impl.gemv, _gemv._PLANS, (a, x), torch.empty(64, device="cuda", dtype=a.dtype))
    b = torch.randn(256, 256, device="cuda", dtype=torch.bfloat16).t()
    a = torch.randn(16, 256, device="cuda", dtype=torch.bfloat16)
    parts("matmul 16x256x256 bf16 W.t()", torch.mm, triton_impl.matmul, _matmul._PLANS, (a, b),
          torch.empty(16, 256, device="cuda", dtype=a.dtype))


if __name__ == "__main__":
    main()
