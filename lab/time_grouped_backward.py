"""Grouped (MoE) matmul's backward: triton_impl.grouped_mm's forward and backward against
F.grouped_mm's, on the moe set's shapes (the harness's split), bf16, both layouts of b, L2
flushed (do_bench). Prints each gradient's error against F.grouped_mm's and the step's time ratio
(decision 022).
"""
import torch
import torch.nn.functional as F
import triton

import triton_impl
from bench.specs import GroupedSpec, max_rel_err
from bench.specs_batched import MOE_SHAPES


def step(fn, a, b, offs, grad):
    a.grad = b.grad = None
    fn(a, b, offs).backward(grad)


def main():
    for shape in MOE_SHAPES:
        a0, b0, offs = GroupedSpec.make_inputs(shape, torch.bfloat16, torch.device("cuda"), 0)
        grad = torch.randn(a0.shape[0], b0.shape[2], device="cuda", dtype=torch.bfloat16)
        grad[int(offs[-1]):] = 0  # (rows in no group: F.grouped_mm leaves them undefined)
        for layout in GroupedSpec.case_layouts:
            _, b1, _ = GroupedSpec.arrange((a0, b0, offs), layout)
            a, b = a0.clone().requires_grad_(), b1.detach().requires_grad_()
            fns = {"torch": lambda a, b, offs: F.grouped_mm(a, b, offs=offs), "ours": triton_impl.grouped_mm}
            grads, times = {}, {}
            for name, fn in fns.items():
                step(fn, a, b, offs, grad)
                grads[name] = (a.grad.clone(), b.grad.clone())
                times[name] = triton.testing.do_bench(lambda: step(fn, a, b, offs, grad))
            errs = [max_rel_err(o, t.double()) for o, t in zip(grads["ours"], grads["torch"])]
            print("x".join(map(str, shape)), layout, f"torch {times['torch']:.3f} ms, ours {times['ours']:.3f} ms, "
                  f"x {times['torch'] / times['ours']:.2f}; err dA {errs[0]:.1e} dB {errs[1]:.1e}", flush=True)


if __name__ == "__main__":
    main()
