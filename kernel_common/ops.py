"""The public functions as torch ops: gradients and ``torch.compile``.

Each backend registers its three functions as ops, ``torch.ops.<package>.<name>``: Triton's as
``torch.library.triton_op``s, whose implementation torch.compile traces into (its kernels become
nodes of the graph, launched by inductor's code: ``triton_impl/_launch.py``), CUDA's as opaque
``custom_op``s with a fake implementation (the result's shape and dtype, after the same argument
checks). (Under Triton's interpreter, a CPU machine's, there is no kernel to record: Triton's ops
are custom ops there too.) Each has a backward made of the same package's ops: matmul
dA = dC B^T, dB = A^T dC (a batch's summed over its broadcast dimensions); gemv dA = dy x^T,
dx = A^T dy; transpose, its own inverse. A public call goes through its op only where it must:
when an input requires grad (the result then carries a grad_fn) or when ``torch.compile`` traces
it (the call becomes part of the graph, not a break). Every other call keeps the direct path,
since the dispatcher's layer costs host time on every call.
"""

from __future__ import annotations

import contextlib
from typing import Optional

import torch
import torch._library.triton

from kernel_common.util import interpreting, is_fake
from kernel_common.validate import (check_batched_matmul_args, check_devices, check_gemv_args, check_matmul_args,
                                   check_transpose_args, check_variant, is_batch, matmul_out_dtype)

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


def _fake(name: str, dtypes, variants, need_cuda):
    """Shapes only, after the checks the real call makes (the same errors while tracing, and for a
    meta operand, which the real call refuses)."""
    def devices(inputs: dict):
        check_devices(inputs, need_cuda=need_cuda if need_cuda is not None else not interpreting())

    def transpose(a, variant=None):
        shape = check_transpose_args(a, dtypes=dtypes)
        check_variant(variant, variants, name)
        devices({"a": a})
        return a.new_empty(shape)

    def gemv(a, x, variant=None):
        check_gemv_args(a, x, dtypes=dtypes)
        check_variant(variant, variants, name)
        devices({"a": a, "x": x})
        return a.new_empty((a.shape[0],))

    def matmul(a, b, variant=None):
        if is_batch(a, b):  # (torch.matmul's broadcasting)
            shape = (*check_batched_matmul_args(a, b, dtypes=dtypes), a.shape[-2], b.shape[-1])
        else:
            check_matmul_args(a, b, dtypes=dtypes)
            shape = (a.shape[0], b.shape[1])
        check_variant(variant, variants, name)
        devices({"a": a, "b": b})
        return a.new_empty(shape, dtype=matmul_out_dtype(a.dtype))
    return {"transpose": transpose, "gemv": gemv, "matmul": matmul}[name]


def _impl(name: str, plans, opaque=None):
    """The op's real implementation: the plan cache's direct call (validation included). Typed, as
    ``triton_op`` reads its schema from the annotations. Traced (fake tensors), the same code plans
    the call afresh (a fake has no address for a plan's key) and records its launches, or, for a
    plan whose launches cannot be recorded, calls ``opaque``."""
    def call(inputs, variant):
        if opaque is None or not is_fake(inputs[0]):
            return plans.direct(inputs, variant, None)
        plan = plans.get(inputs, variant, None)
        return plans.launch(plan, inputs, None) if plan.traceable else opaque(*inputs, variant)

    def transpose(a: torch.Tensor, variant: Optional[str] = None) -> torch.Tensor:
        return call((a,), variant)

    def gemv(a: torch.Tensor, x: torch.Tensor, variant: Optional[str] = None) -> torch.Tensor:
        return call((a, x), variant)

    def matmul(a: torch.Tensor, b: torch.Tensor, variant: Optional[str] = None) -> torch.Tensor:
        return call((a, b), variant)
    return {"transpose": transpose, "gemv": gemv, "matmul": matmul}[name]


def _custom_op(qualname: str, name: str, plans, dtypes, variants, need_cuda):
    op = torch.library.custom_op(qualname, _impl(name, plans), mutates_args=(), schema=SCHEMAS[name])
    op.register_fake(_fake(name, dtypes, variants, need_cuda))
    return op


@contextlib.contextmanager
def _kernels_not_scanned(impl):
    """While ``triton_op`` registers ``impl``: torch's scan of an implementation's source for the
    Triton kernels it calls (``get_inner_triton_kernels``, in torch 2.11 and 2.13; the list goes
    into the AOTAutograd cache's key) answers ``[]`` for ``impl`` without scanning. The scan
    imports ``torch._inductor`` (about 0.8 s, most of the import of this package) and finds
    nothing in ours: their kernels launch through plan objects, and it follows only calls by
    name. Any other function (another thread's op) is scanned as before."""
    scan = getattr(torch._library.triton, "get_inner_triton_kernels", None)
    if scan is None:  # a torch without the scan
        yield
        return

    def scan_others(fn):
        return [] if fn is impl else scan(fn)
    torch._library.triton.get_inner_triton_kernels = scan_others
    try:
        yield
    finally:
        torch._library.triton.get_inner_triton_kernels = scan


def register(namespace: str, algorithms: dict, traceable: bool = False, need_cuda: bool | None = None) -> dict:
    """Define ``namespace::<name>`` for each of ``algorithms`` ({name: (plan cache, dtypes, variants)}),
    with backwards, and route the plan caches' calls that need it through them (``need_cuda``: the
    kernels take only CUDA tensors; None: CPU ones too under Triton's interpreter): ``triton_op``s
    where ``traceable`` (the implementation is its own fake), else custom ops with fakes. Returns
    {name: op}.

    A traceable op's plans that launch TMA kernels are not recorded: a ``TensorDescriptor`` made
    inside a ``triton_op`` reaches torch 2.11's tracer without its metadata (a KeyError in its
    mutation analysis, then wrong results; torch's pull request 193608, 2026-08, reworks how that
    path captures descriptors).
    Traced, those calls go through ``namespace::<name>_opaque``, a custom op of the same call."""
    ops = {}
    for name, (plans, dtypes, variants) in algorithms.items():
        if traceable:
            opaque = _custom_op(f"{namespace}::{name}_opaque", name, plans, dtypes, variants, need_cuda)
            impl = _impl(name, plans, opaque)
            with _kernels_not_scanned(impl):
                op = torch.library.triton_op(f"{namespace}::{name}", impl, mutates_args=())
        else:
            op = _custom_op(f"{namespace}::{name}", name, plans, dtypes, variants, need_cuda)
        ops[name] = op

    def save(ctx, inputs, output):
        ctx.save_for_backward(*[t for t in inputs if isinstance(t, torch.Tensor)])

    def matmul_backward(ctx, grad):
        a, b = ctx.saved_tensors
        mm = ops["matmul"]
        # (a batch: each operand's gradient summed over the dimensions it was broadcast along)
        return (mm(grad, b.mT).sum_to_size(a.shape) if ctx.needs_input_grad[0] else None,
                mm(a.mT, grad).sum_to_size(b.shape) if ctx.needs_input_grad[1] else None, None)

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
