"""Validation of tensors and variant names, with messages that name the argument."""

from __future__ import annotations

import torch


def _dtype_names(dtypes) -> str:
    return ", ".join(str(d).replace("torch.", "") for d in dtypes)


def check_matrix(name: str, t, *, ndim: int, dtypes, need_cuda: bool) -> None:
    """Check that ``t`` is a torch tensor of rank ``ndim`` with a supported dtype.

    ``need_cuda`` is False only for Triton under the interpreter, which runs on CPU tensors (or
    CUDA ones); other devices (meta, ...) have no data to read.
    """
    if not isinstance(t, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor (or a CuPy array for cuda_ref), "
                        f"got {type(t).__name__}")
    _check_dense(name, t)
    if t.dim() != ndim:
        raise ValueError(f"{name} must be {ndim}-D, got {t.dim()}-D with shape {tuple(t.shape)}")
    if t.dtype not in dtypes:
        raise TypeError(f"{name} has dtype {str(t.dtype).replace('torch.', '')}; "
                        f"expected one of: {_dtype_names(dtypes)}")
    if need_cuda and t.device.type != "cuda":
        raise ValueError(f"{name} must be on a CUDA device, got device '{t.device}'")
    if t.device.type not in ("cuda", "cpu"):
        raise ValueError(f"{name} must be on a CUDA device (or the CPU under TRITON_INTERPRET=1), "
                         f"got device '{t.device}'")


def _check_dense(name: str, t: torch.Tensor) -> None:
    """Kernels read memory through strides: sparse, nested or MKL-DNN tensors have none."""
    if t.layout != torch.strided:
        raise TypeError(f"{name} must be a dense (strided) tensor, got layout "
                        f"{str(t.layout).replace('torch.', '')}")


def check_like(name: str, t: torch.Tensor, ref_name: str, ref: torch.Tensor) -> None:
    """Check that a second operand ``t`` has the dtype (TypeError) and device (ValueError) of
    the first, ``ref``: the kernels take one element type and one device."""
    if t.dtype != ref.dtype:
        raise TypeError(f"{name} has dtype {str(t.dtype).replace('torch.', '')}; expected "
                        f"{str(ref.dtype).replace('torch.', '')} like {ref_name} (mixed dtypes)")
    if t.device != ref.device:
        raise ValueError(f"{name} must be on device '{ref.device}' like {ref_name}, got '{t.device}'")


def check_inner_dims(a_name: str, a: torch.Tensor, b_name: str, b: torch.Tensor) -> None:
    """For a product ``a @ b``: the last extent of ``a`` must equal the first of ``b``."""
    if a.shape[-1] != b.shape[0]:
        raise ValueError(f"{b_name} must have {a.shape[-1]} rows (the columns of {a_name}, shape "
                         f"{tuple(a.shape)}), got shape {tuple(b.shape)}")


def _span(t: torch.Tensor) -> tuple[int, int]:
    """Byte range [start, end) that a tensor's elements can touch."""
    if t.numel() == 0:
        return (t.data_ptr(), t.data_ptr())
    extent = 1 + sum((size - 1) * abs(stride) for size, stride in zip(t.shape, t.stride()))
    start = t.data_ptr() + t.element_size() * sum(
        (size - 1) * stride for size, stride in zip(t.shape, t.stride()) if stride < 0)
    return (start, start + extent * t.element_size())


def overlaps(x: torch.Tensor, y: torch.Tensor) -> bool:
    """True when the memory that ``x`` and ``y`` can touch intersects."""
    if x.device != y.device or x.numel() == 0 or y.numel() == 0:
        return False
    (a0, a1), (b0, b1) = _span(x), _span(y)
    return a0 < b1 and b0 < a1


def check_out(out, *, shape, dtype, device, inputs: dict) -> None:
    """Check a caller-given ``out``: exact shape, dtype and device, contiguous, no aliasing."""
    if not isinstance(out, torch.Tensor):
        raise TypeError(f"out must be a torch.Tensor like the inputs, got {type(out).__name__}")
    _check_dense("out", out)
    if tuple(out.shape) != tuple(shape):
        raise ValueError(f"out must have shape {tuple(shape)}, got {tuple(out.shape)}")
    if out.dtype != dtype:
        raise TypeError(f"out must have dtype {str(dtype).replace('torch.', '')}, "
                        f"got {str(out.dtype).replace('torch.', '')}")
    if out.device != device:
        raise ValueError(f"out must be on device '{device}', got '{out.device}'")
    if not out.is_contiguous():
        raise ValueError(f"out must be contiguous, got strides {out.stride()}")
    for name, t in inputs.items():
        if overlaps(out, t):
            raise ValueError(f"out must not alias the input {name}")
    if out.requires_grad and torch.is_grad_enabled():
        # as torch's own out= functions: the kernels' writes are invisible to autograd
        raise ValueError("out must not require grad (the write is not recorded by autograd); "
                         "pass out.detach() or call under torch.no_grad()")


def check_variant(variant, known: tuple[str, ...], algorithm: str) -> None:
    if variant is not None and variant not in known:
        raise ValueError(f"variant must be None or one of {', '.join(known)} for {algorithm}, "
                         f"got {variant!r}")


def check_gemv_args(a, x, *, dtypes, need_cuda: bool) -> None:
    """A (M, K) and x (K,): same dtype, same device, matching K."""
    check_matrix("a", a, ndim=2, dtypes=dtypes, need_cuda=need_cuda)
    check_matrix("x", x, ndim=1, dtypes=dtypes, need_cuda=need_cuda)
    if x.dtype != a.dtype:
        raise TypeError(f"x has dtype {str(x.dtype)[6:]} but a has {str(a.dtype)[6:]}; they must match")
    if x.device != a.device:
        raise ValueError(f"x is on '{x.device}' but a is on '{a.device}'; they must be on one device")
    if x.shape[0] != a.shape[1]:
        raise ValueError(f"x must have K = a.shape[1] = {a.shape[1]} elements, got {x.shape[0]}")


def matrix_layout(a) -> str | None:
    """'row' when a 2-D tensor is unit-stride along its columns (rows are contiguous runs), 'col'
    when unit-stride along its rows, None otherwise. Extents of 1 fit either."""
    if a.stride(1) == 1 or a.shape[1] <= 1:
        return "row"
    if a.stride(0) == 1 or a.shape[0] <= 1:
        return "col"
    return None


def to_layout(a, layout: str):
    """``a`` itself if it has ``layout``, else one copy into it (``a.contiguous()`` for 'row',
    ``a.t().contiguous().t()`` for 'col')."""
    if matrix_layout(a) == layout:
        return a
    return a.contiguous() if layout == "row" else a.t().contiguous().t()


def check_matmul_args(a, b, *, dtypes, need_cuda: bool) -> None:
    """a (M, K) and b (K, N): 2-D, supported, one dtype, one device, matching K."""
    check_matrix("a", a, ndim=2, dtypes=dtypes, need_cuda=need_cuda)
    check_matrix("b", b, ndim=2, dtypes=dtypes, need_cuda=need_cuda)
    check_like("b", b, "a", a)
    check_inner_dims("a", a, "b", b)


def variants_lookup(table: dict):
    """The ``variants(algorithm)`` function of a backend package, over its {algorithm: names}."""
    def variants(algorithm: str) -> tuple[str, ...]:
        """Variant names of ``algorithm``, the default first."""
        if algorithm not in table:
            raise ValueError(f"algorithm must be one of {', '.join(table)}, got {algorithm!r}")
        return table[algorithm]
    return variants
