"""The public functions as torch ops: gradients and ``torch.compile``.

Each backend registers its three functions as custom ops, ``torch.ops.<package>.<name>``, with a
fake implementation (the result's shape and dtype, after the same argument checks, for tracing)
and a backward made of the same package's ops: matmul dA = dC B^T, dB = A^T dC; gemv dA = dy x^T,
dx = A^T dy; transpose, its own inverse. A public call goes through its op only where it must:
when an input requires grad (the result then carries a grad_fn) or when ``torch.compile`` traces
it (the call becomes one node of the graph, not a break). Every other call keeps the direct path,
since the dispatcher's layer costs host time on every call.
"""

from __future__ import annotations

import torch

from kernel_common.validate import (check_gemv_args, check_matmul_args, check_transpose_args, check_variant,
                                   matmul_out_dtype)

SCHEMAS = {
    "transpose": "(Tensor a, str? variant=None) -> Tensor",
    "gemv": "(Tensor a, Tensor x, str? variant=None) -> Tensor",
    "matmul": "(Tensor a, Tensor b, str? variant=None) -> Tensor",
}


def needs_op(inputs) -> bool:
    """Must this call go through its op: an input requires grad, or torch.compile traces it? (On
    every call: a plain loop, 0.35 us on a CPU host where a generator expression took 0.71.)"""
    for t in inputs:
        if getattr(t, "requires_grad", False):
            return torch.is_grad_enabled()
    return torch.compiler.is_compiling()


def call_op(op, inputs, variant, out):
    """A public call through its op. ``out=`` cannot carry a gradient (as in torch): refused when an
    input requires grad; while tracing, the op's result is copied into it."""
    if out is not None and torch.is_grad_enabled() and any(t.requires_grad for t in inputs):
        raise ValueError("out must be None when an input requires grad: the result would carry no grad_fn")
    result = op(*inputs, variant)
    return result if out is None else out.copy_(result)


def _fake(name: str, dtypes, variants):
    """Shapes only, after the checks the real call makes first (the same errors while tracing)."""
    def transpose(a, variant=None):
        shape = check_transpose_args(a, dtypes=dtypes)
        check_variant(variant, variants, name)
        return a.new_empty(shape)

    def gemv(a, x, variant=None):
        check_gemv_args(a, x, dtypes=dtypes)
        check_variant(variant, variants, name)
        return a.new_empty((a.shape[0],))

    def matmul(a, b, variant=None):
        check_matmul_args(a, b, dtypes=dtypes)
        check_variant(variant, variants, name)
        return a.new_empty((a.shape[0], b.shape[1]), dtype=matmul_out_dtype(a.dtype))
    return {"transpose": transpose, "gemv": gemv, "matmul": matmul}[name]


def _impl(name: str, plans):
    """The op's real implementation: the plan cache's direct call (validation included)."""
    def transpose(a, variant=None):
        return plans.direct((a,), variant, None)

    def gemv(a, x, variant=None):
        return plans.direct((a, x), variant, None)

    def matmul(a, b, variant=None):
        return plans.direct((a, b), variant, None)
    return {"transpose": transpose, "gemv": gemv, "matmul": matmul}[name]


def register(namespace: str, algorithms: dict) -> dict:
    """Define ``namespace::<name>`` for each of ``algorithms`` ({name: (plan cache, dtypes, variants)}),
    with fakes and backwards, and route the plan caches' calls that need it through them. Returns
    {name: op}."""
    ops = {}
    for name, (plans, dtypes, variants) in algorithms.items():
        op = torch.library.custom_op(f"{namespace}::{name}", _impl(name, plans), mutates_args=(),
                                     schema=SCHEMAS[name])
        op.register_fake(_fake(name, dtypes, variants))
        ops[name] = op

    def save(ctx, inputs, output):
        ctx.save_for_backward(*[t for t in inputs if isinstance(t, torch.Tensor)])

    def matmul_backward(ctx, grad):
        a, b = ctx.saved_tensors
        mm = ops["matmul"]
        return (mm(grad, b.t()) if ctx.needs_input_grad[0] else None,
                mm(a.t(), grad) if ctx.needs_input_grad[1] else None, None)

    def gemv_backward(ctx, grad):
        a, x = ctx.saved_tensors
        return (ops["matmul"](grad[:, None], x[None, :]) if ctx.needs_input_grad[0] else None,
                ops["gemv"](a.t(), grad) if ctx.needs_input_grad[1] else None, None)

    def transpose_backward(ctx, grad):
        return ops["transpose"](grad), None

    backwards = {"matmul": matmul_backward, "gemv": gemv_backward, "transpose": transpose_backward}
    for name, op in ops.items():
        op.register_autograd(backwards[name], setup_context=save)
        algorithms[name][0].op = op
    return ops
