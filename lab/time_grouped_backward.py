"""Grouped (MoE) matmul's backward: each backend's grouped_mm forward and backward against
F.grouped_mm's, on the moe set's shapes (the harness's split), bf16, both layouts of b, L2
flushed (do_bench). Prints each gradient's error against F.grouped_mm's and the step's time ratio;
``--json F`` keeps the rows (decisions 022, 050).
"""
import argparse
import json

import torch
import torch.nn.functional as F
import triton

import cuda_ref
import triton_impl
from bench.specs import GroupedSpec, max_rel_err
from bench.specs_batched import MOE_SHAPES


def step(fn, a, b, offs, grad):
    a.grad = b.grad = None
    fn(a, b, offs).backward(grad)


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--json", help="write the rows here")
    args = p.parse_args()
    fns = {"torch": lambda a, b, offs: F.grouped_mm(a, b, offs=offs), "triton": triton_impl.grouped_mm,
           "cuda": cuda_ref.grouped_mm}
    rows = []
    for shape in MOE_SHAPES:
        a0, b0, offs = GroupedSpec.make_inputs(shape, torch.bfloat16, torch.device("cuda"), 0)
        grad = torch.randn(a0.shape[0], b0.shape[2], device="cuda", dtype=torch.bfloat16)
        grad[int(offs[-1]):] = 0  # (rows in no group: F.grouped_mm leaves them undefined)
        for layout in GroupedSpec.case_layouts:
            _, b1, _ = GroupedSpec.arrange((a0, b0, offs), layout)
            a, b = a0.clone().requires_grad_(), b1.detach().requires_grad_()
            grads, times = {}, {}
            for name, fn in fns.items():
                step(fn, a, b, offs, grad)
                grads[name] = (a.grad.clone(), b.grad.clone())
                times[name] = triton.testing.do_bench(lambda: step(fn, a, b, offs, grad))
            row = {"shape": list(shape), "layout": layout, "device": torch.cuda.get_device_name(), "ms": times}
            for name in ("triton", "cuda"):
                row[name] = {"x": times["torch"] / times[name],
                             "err_da": max_rel_err(grads[name][0], grads["torch"][0].double()),
                             "err_db": max_rel_err(grads[name][1], grads["torch"][1].double())}
            rows.append(row)
            print("x".join(map(str, shape)), layout, f"torch {times['torch']:.3f} ms;",
                  "; ".join(f"{n} {times[n]:.3f} ms x {row[n]['x']:.2f} (err dA {row[n]['err_da']:.1e} "
                            f"dB {row[n]['err_db']:.1e})" for n in ("triton", "cuda")), flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"what": "grouped_mm forward + backward, bf16, L2 flushed (triton.testing.do_bench)",
                       "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
