"""Validation of tensors and variant names, with messages that name the argument."""

from __future__ import annotations

import math

import torch

from kernel_common.util import dtype_name


def check_matrix(name: str, t, *, ndim, dtypes) -> None:
    """Check that ``t`` is a dense torch tensor of rank ``ndim`` (an int, or a tuple of the ranks
    allowed) with a supported dtype. Devices are checked last, by ``output``, so every other
    refusal also runs on a machine without a GPU."""
    if not isinstance(t, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor (or a CuPy array for cuda_ref), "
                        f"got {type(t).__name__}")
    _check_dense(name, t)
    ranks = (ndim,) if isinstance(ndim, int) else ndim
    if t.dim() not in ranks:
        expected = " or ".join(f"{n}-D" for n in ranks)
        raise ValueError(f"{name} must be {expected}, got {t.dim()}-D with shape {tuple(t.shape)}")
    if t.dtype not in dtypes:
        raise TypeError(f"{name} has dtype {dtype_name(t.dtype)}; "
                        f"expected one of: {', '.join(map(dtype_name, dtypes))}")


def _check_dense(name: str, t: torch.Tensor) -> None:
    """Kernels read memory through strides: sparse, nested or MKL-DNN tensors have none."""
    if t.layout != torch.strided:
        raise TypeError(f"{name} must be a dense (strided) tensor, got layout "
                        f"{dtype_name(t.layout)}")


def check_like(name: str, t: torch.Tensor, ref_name: str, ref: torch.Tensor) -> None:
    """Check that a second operand ``t`` has the dtype of the first, ``ref``: the kernels take
    one element type."""
    if t.dtype != ref.dtype:
        raise TypeError(f"{name} has dtype {dtype_name(t.dtype)}; expected "
                        f"{dtype_name(ref.dtype)} like {ref_name} (mixed dtypes)")


def check_inner_dims(a_name: str, a: torch.Tensor, b_name: str, b: torch.Tensor) -> None:
    """For a product ``a @ b`` (or ``a @ x``): the last extent of ``a`` must equal the first of ``b``."""
    if a.shape[-1] != b.shape[0]:
        raise ValueError(f"{b_name} must have shape[0] = {a.shape[-1]} (the columns of {a_name}, shape "
                         f"{tuple(a.shape)}), got shape {tuple(b.shape)}")


def extent(t: torch.Tensor) -> tuple[int, int] | None:
    """Byte range [lo, hi) that a tensor's elements can touch, from its data_ptr (None: no
    elements). It depends on the metadata only, so a plan can keep it."""
    if t.numel() == 0:
        return None
    size = t.element_size()
    lo = size * sum((n - 1) * st for n, st in zip(t.shape, t.stride()) if st < 0)
    return lo, lo + size * (1 + sum((n - 1) * abs(st) for n, st in zip(t.shape, t.stride())))


def overlaps(x: torch.Tensor, y: torch.Tensor, ex=None, ey=None) -> bool:
    """True when the memory that ``x`` and ``y`` can touch intersects (``ex``, ``ey``: their
    ``extent``s where known)."""
    if x.device != y.device:
        return False
    return extents_meet(x.data_ptr(), extent(x) if ex is None else ex, y.data_ptr(), extent(y) if ey is None else ey)


def extents_meet(p: int, ex, q: int, ey) -> bool:
    """Do the byte ranges ``ex`` from address ``p`` and ``ey`` from ``q`` intersect (``extent``'s;
    None: no elements)? For tensors known to share a device (a plan's key fixes it) without
    ``overlaps``' device check, on a repeat call's path."""
    return ex is not None and ey is not None and p + ex[0] < q + ey[1] and q + ey[0] < p + ex[1]


def _check_devices(inputs: dict, *, need_cuda: bool) -> None:
    """Every input on a device with data, all on the first input's device. Where they differ
    and the first is not on a GPU that a kernel needs, the first is named: it is the one to move."""
    where = "a CUDA device" if need_cuda else "a CUDA device (or the CPU under TRITON_INTERPRET=1)"
    for name, t in inputs.items():
        if t.device.type not in ("cuda", "cpu"):  # meta, ...: nothing to read
            raise ValueError(f"{name} must be on {where}, got device '{t.device}'")
    (a_name, a), *rest = inputs.items()
    for name, t in rest:
        if t.device != a.device:
            if need_cuda and a.device.type != "cuda":
                raise ValueError(f"{a_name} must be on a CUDA device, got device '{a.device}'")
            raise ValueError(f"{name} must be on device '{a.device}' like {a_name}, got '{t.device}'")


def matmul_out_dtype(dtype: torch.dtype) -> torch.dtype:
    """The dtype of a product of ``dtype`` operands: their own, except int8, whose products sum
    into int32 (as ``torch._int_mm`` returns)."""
    return torch.int32 if dtype == torch.int8 else dtype


def output(out, shape, inputs: dict, *, need_cuda: bool, dtype=None) -> torch.Tensor:
    """What a plan is made for: ``out`` once checked against ``shape``, ``dtype`` (default: the
    first input's) and the first input's device (``check_out``), or, where the call makes its
    result, a stand-in with that result's shape and dtype and no storage (a meta tensor: its
    address 0 is aligned, as the allocator's are). A new result made here only to be dropped took
    a new block of the allocator's for each new shape; ``Plan.output`` makes the call's own.

    Devices are checked here, after every other argument check (which needs no GPU), so a
    machine without one exercises each refusal: the inputs' devices, then ``out``, then (for
    kernels that need one) that the first input is on a CUDA device. ``need_cuda`` is False only
    for Triton under the interpreter, which takes CPU tensors.
    """
    check_output(out, shape, inputs, need_cuda=need_cuda, dtype=dtype)
    a = next(iter(inputs.values()))
    return torch.empty(shape, dtype=dtype or a.dtype, device="meta") if out is None else out


def check_output(out, shape, inputs: dict, *, need_cuda: bool, dtype=None) -> None:
    """``output``'s checks without its new tensor: for a plan that makes none (a new shape's plan
    allocated one only to drop it, a new block of the allocator's for each new row count)."""
    # out joins the device checks when it is a tensor (anything else gets check_out's TypeError)
    _check_devices({**inputs, "out": out} if isinstance(out, torch.Tensor) else inputs, need_cuda=need_cuda)
    if out is not None:
        a = next(iter(inputs.values()))
        check_out(out, shape=shape, dtype=dtype or a.dtype, device=a.device, inputs=inputs)
    check_devices(inputs, need_cuda=need_cuda)


def check_devices(inputs: dict, *, need_cuda: bool) -> None:
    """The inputs' device checks of ``output``: one device that holds data, a CUDA one where the
    kernels need it. (The fake implementations make them too: ``kernel_common/ops.py``.)"""
    _check_devices(inputs, need_cuda=need_cuda)
    a_name, a = next(iter(inputs.items()))
    if need_cuda and a.device.type != "cuda":
        raise ValueError(f"{a_name} must be on a CUDA device, got device '{a.device}'")


def check_out(out, *, shape, dtype, device, inputs: dict) -> None:
    """Check a caller-given ``out``: exact shape, dtype and device, contiguous, no aliasing."""
    if not isinstance(out, torch.Tensor):
        raise TypeError(f"out must be a torch.Tensor like the inputs, got {type(out).__name__}")
    _check_dense("out", out)
    if tuple(out.shape) != tuple(shape):
        raise ValueError(f"out must have shape {tuple(shape)}, got {tuple(out.shape)}")
    if out.dtype != dtype:
        raise TypeError(f"out must have dtype {dtype_name(dtype)}, got {dtype_name(out.dtype)}")
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


def check_transpose_args(a, *, dtypes) -> tuple:
    """a (R, C) or a batch (B, R, C): supported. Returns the result's shape, (C, R) or (B, C, R)."""
    check_matrix("a", a, ndim=(2, 3), dtypes=dtypes)
    return (*a.shape[:-2], a.shape[-1], a.shape[-2])


def check_variant(variant, known: tuple[str, ...], algorithm: str) -> None:
    if variant is not None and variant not in known:
        raise ValueError(f"variant must be None or one of {', '.join(known)} for {algorithm}, "
                         f"got {variant!r}")


def check_gemv_args(a, x, *, dtypes) -> None:
    """a (M, K) and x (K,): supported, one dtype, matching K (the same messages as matmul's)."""
    check_matrix("a", a, ndim=2, dtypes=dtypes)
    check_matrix("x", x, ndim=1, dtypes=dtypes)
    check_like("x", x, "a", a)
    check_inner_dims("a", a, "x", x)


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


def check_matmul_args(a, b, *, dtypes) -> None:
    """a (M, K) and b (K, N): 2-D, supported, one dtype, matching K."""
    check_matrix("a", a, ndim=2, dtypes=dtypes)
    check_matrix("b", b, ndim=2, dtypes=dtypes)
    check_like("b", b, "a", a)
    check_inner_dims("a", a, "b", b)


def is_batch(a, b) -> bool:
    """Operands of a batched matmul: tensors, one of them of more than two dimensions (the plans
    and fakes send them to the batch's checks; anything else gets the 2-D checks and their errors)."""
    return isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor) and (a.dim() > 2 or b.dim() > 2)


def check_batched_matmul_args(a, b, *, dtypes) -> tuple:
    """a (..., M, K) and b (..., K, N) as ``torch.matmul`` takes them: each at least 2-D, one dtype,
    matching K, batch dimensions that broadcast. Returns the batch shape."""
    for name, t in (("a", a), ("b", b)):
        if isinstance(t, torch.Tensor) and t.dim() < 2:
            raise ValueError(f"{name} must be at least 2-D (a batch of matrices), got {t.dim()}-D "
                             f"with shape {tuple(t.shape)}")
        check_matrix(name, t, ndim=t.dim() if isinstance(t, torch.Tensor) else 2, dtypes=dtypes)
    check_like("b", b, "a", a)
    if a.shape[-1] != b.shape[-2]:
        raise ValueError(f"b must have shape[-2] = {a.shape[-1]} (the columns of a, shape {tuple(a.shape)}), "
                         f"got shape {tuple(b.shape)}")
    try:
        return tuple(torch.broadcast_shapes(a.shape[:-2], b.shape[:-2]))
    except RuntimeError:
        raise ValueError(f"a and b have batch dimensions {tuple(a.shape[:-2])} and {tuple(b.shape[:-2])}, "
                         f"which do not broadcast") from None


def batch_view(t: torch.Tensor, batch: tuple) -> torch.Tensor:
    """``t`` (..., R, C) over the broadcast ``batch`` as (B, R, C) with one batch stride (0 where
    ``t`` is broadcast): a view where one stride walks t's batch dimensions, else a contiguous copy
    (a broadcast between two batch dimensions), as ``torch.matmul`` makes."""
    r, c = t.shape[-2:]
    return t.expand(*batch, r, c).reshape(math.prod(batch), r, c)


def meta_like(t: torch.Tensor) -> torch.Tensor:
    """A tensor of ``t``'s metadata and no data (what a plan decides from, copying nothing)."""
    return torch.empty_strided(t.shape, t.stride(), dtype=t.dtype, device="meta")


def fold_batch(a, b, batch: tuple):
    """(a's rows as one (count x M, K) matrix, b's one matrix) where a batched product is one 2-D
    product: b the same matrix for every product and a's matrices row after row (or a copy of a
    that is, where no stride walks its batch), or a batch of one; else None. The metadata decides: meta tensors fold
    as the real ones do."""
    a3, b3 = batch_view(meta_like(a), batch), batch_view(meta_like(b), batch)
    count, (M, K) = a3.shape[0], a3.shape[1:]
    if count == 0 or (count > 1 and (b3.stride(0) != 0 or a3.stride(0) != M * a3.stride(1))):
        return None
    return batch_view(a, batch).as_strided((count * M, K), (a3.stride(1), a3.stride(2))), batch_view(b, batch)[0]


def check_bias(bias, a: torch.Tensor, shape: tuple) -> tuple[int, int]:
    """A bias added to an (M, N) product in its epilogue (the switch's ``addmm``): a's dtype or
    float32 (a bias the caller scaled in float32), at most 2-D, broadcastable to ``shape`` as
    ``torch.addmm``'s input is. Returns its (row, column) strides as the product's (M, N) reads them
    (0 along a broadcast dimension)."""
    check_matrix("bias", bias, ndim=(0, 1, 2), dtypes=(a.dtype, torch.float32))
    try:
        wide = bias.expand(shape)
    except RuntimeError:
        raise ValueError(f"bias must broadcast to the product's shape {tuple(shape)}, got shape "
                         f"{tuple(bias.shape)}") from None
    return wide.stride()


def _of_algorithm(table: dict, algorithm: str):
    """``table[algorithm]``, or a ValueError naming the algorithms a backend has."""
    if algorithm not in table:
        raise ValueError(f"algorithm must be one of {', '.join(table)}, got {algorithm!r}")
    return table[algorithm]


def variants_lookup(table: dict):
    """The ``variants(algorithm)`` function of a backend package, over its {algorithm: names}."""
    def variants(algorithm: str) -> tuple[str, ...]:
        """Variant names of ``algorithm``, the default first."""
        return _of_algorithm(table, algorithm)
    return variants


def look_inside(modules: dict):
    """``pick(algorithm, *inputs)`` and ``describe(algorithm, *inputs, variant=None)`` of a backend
    package, over its {algorithm: module}: what ``variant=None`` runs for these inputs, and what a
    call runs (the variant and, where the module says, its config: tiles, splits), without running
    it. The harness reads a backend through these, not through its private modules."""
    def pick(algorithm: str, *inputs, **options) -> str:
        """The variant ``variant=None`` runs for ``inputs`` (tensors on the device the call would use;
        ``options``: matmul's ``biased``, for a call with a bias)."""
        return _of_algorithm(modules, algorithm).pick_variant(*inputs, **options)

    def describe(algorithm: str, *inputs, variant: str | None = None) -> str:
        """What a call on ``inputs`` runs: the variant, and its config where the algorithm has one."""
        m = _of_algorithm(modules, algorithm)
        if hasattr(m, "describe"):
            return m.describe(*inputs, variant=variant)
        return variant or m.pick_variant(*inputs)

    def launches(algorithm: str, dtype) -> list[tuple]:
        """Each variant's launches for ``dtype`` at the shape its record names (``shown_at``), as
        its plan makes them on a GPU of ``DEFAULT_SM_COUNT`` SMs: (variant, launch, shape) for a
        CUDA launch, (variant, launch, arguments by name, shape) for a Triton one, whose arguments
        are what ``triton.compile`` specializes on (what ``bench resources`` compiles)."""
        return list(_of_algorithm(modules, algorithm).launches(dtype))

    def sources(algorithm: str) -> dict:
        """{source file: its instances' names}: what an algorithm's launches compile from (CUDA)."""
        return dict(_of_algorithm(modules, algorithm).SOURCES)

    def launch(algorithm: str, *inputs, variant: str | None = None):
        """The launch a call on ``inputs`` makes (CUDA: its instance, grid, block, arguments and
        dynamic shared memory), planning nothing; ``inputs`` may be meta tensors."""
        return _of_algorithm(modules, algorithm).launch_for(*inputs, variant=variant)

    def plans(algorithm: str):
        """The plan cache every call of ``algorithm`` goes through, as the switch and the ops use it:
        ``plans(inputs, variant, out)``; matmul's Triton plans take ``(a, b, bias)`` too (the
        switch's addmm), the variants without a bias epilogue refusing it."""
        return _of_algorithm(modules, algorithm)._PLANS
    return pick, describe, launches, sources, launch, plans

