"""A switch that routes a model's matmuls to our kernels: ``enable()``, ``disable()``, ``enabled()``.

It registers this package's implementations of the aten ops that 2-D matmuls, ``nn.Linear``,
matrix-vector and batched products reach (``mm``, ``addmm``, ``mv``, ``bmm``, ``baddbmm``;
``linear`` and ``matmul`` decompose to them) for CUDA tensors, through
``torch.library.Library("aten", "IMPL")``. A call our kernels take (CUDA operands of one supported
dtype, of a rank the backend's matmul takes) runs them; any other falls back to torch's own
kernel, reached through the op's ``out=`` overload, which the switch leaves alone. A backend with
a grouped kernel (both, on Hopper) also routes ``_grouped_mm`` (``F.grouped_mm``: mixture-of-
experts layers); that op has no ``out=`` overload, so its fallback is torch's products a group at
a time (``grouped_mm_loop``). Autograd sits
above the CUDA key, so backward passes (themselves mm calls) are routed too. ``counts()`` says how
many calls went where.

Scope: the switch is process-wide, as the aten registration under it is (and as torch's
``torch.backends`` flags are): while it is on, the calls of every thread route, autograd's
backward threads included. ``enable()`` / ``disable()`` set a process-wide flag; each open
``with enabled():`` block holds the switch on by a count of its own, so blocks nest and overlap
across threads, a block's exit never switches off another's, and an ``enable()`` inside a block
outlasts it. Calls our kernels refuse (a bad shape, say) go to torch's kernel, which raises
torch's own error.
"""

from __future__ import annotations

import contextlib
import threading
import warnings
from collections import Counter

import torch

from kernel_common.util import make_room


class Switch:
    """The switch of one backend: ``plans`` are its matmul and gemv plan caches, ``dtypes`` what
    they take. ``addmm`` rounds once, as torch's does: the matmul plan adds the bias to the float32
    product (``bias_epilogue``), or torch's kernel takes the call."""

    def __init__(self, name: str, matmul_plans, gemv_plans, dtypes, bias_epilogue: bool = True, grouped=None):
        self.name, self.matmul_plans, self.gemv_plans, self.dtypes = name, matmul_plans, gemv_plans, dtypes
        # grouped(a, b, offs): aten::_grouped_mm's product where the backend takes it, else None or
        # a TypeError / ValueError (the switch then routes _grouped_mm on Hopper; None: left to torch)
        self.grouped = grouped
        # do the matmul plans take (a, b, bias), adding the bias before the one rounding? (else
        # addmm with a bias goes to torch: adding it to a rounded product would round twice)
        self.bias_epilogue = bias_epilogue
        # a call's key (``_call``) -> its plan's bound call, or None for torch's kernel
        self._mm_calls = matmul_plans.table() if matmul_plans is not None else {}
        self._mv_calls = gemv_plans.table() if gemv_plans is not None else {}
        self._lib = None
        self._on = False  # enable() / disable()
        self._blocks = 0  # open ``with enabled():`` blocks, of any thread
        self._lock = threading.Lock()
        self._counts: Counter = Counter()

    # ---- the switch ----
    def enable(self) -> None:
        """Route calls from now on, process-wide, until ``disable()``."""
        with self._lock:
            self._on = True
            self._register()

    def disable(self) -> None:
        """Undo ``enable()``. Open ``with enabled():`` blocks keep routing until they close."""
        with self._lock:
            self._on = False
            self._register()

    def is_enabled(self) -> bool:
        return self._lib is not None

    @contextlib.contextmanager
    def enabled(self):
        """``with backend.enabled(): ...`` routes calls while the block is open (see the module's
        docstring for threads and nesting)."""
        with self._lock:
            self._blocks += 1
            self._register()
        try:
            yield self
        finally:
            with self._lock:
                self._blocks -= 1
                self._register()

    def _register(self) -> None:
        """The aten registration present exactly while the flag or an open block asks for it (the
        caller holds the lock)."""
        want = self._on or self._blocks > 0
        if want and self._lib is None:
            lib = torch.library.Library("aten", "IMPL")
            # (overriding torch's CUDA kernels is what the user asked for: torch's warning that a
            # kernel is overridden says nothing to them)
            with warnings.catch_warnings():
                # (torch's message starts "Warning only once for all operators,...\n": (?s) spans the line)
                warnings.filterwarnings("ignore", message="(?s).*Overriding a previously registered kernel")
                for name in ("mm", "addmm", "mv", "bmm", "baddbmm"):
                    lib.impl(name, getattr(self, f"_{name}"), "CUDA")
                if self.grouped is not None and _hopper_grouped_mm():
                    lib.impl("_grouped_mm", self._grouped_mm, "CUDA")
            self._lib = lib
        elif not want and self._lib is not None:
            self._lib._destroy()
            self._lib = None

    def counts(self) -> dict:
        """Calls routed so far: {"mm": n, "mm fallback": n, ...}."""
        return dict(self._counts)

    def reset_counts(self) -> None:
        self._counts.clear()

    # ---- the implementations ----
    # A model calls these hundreds of times a step, and on a small model each call's host time
    # shows in the step (docs/decisions/005-switch-fast-table.md). So a call reads what fixes its plan in as
    # few reads of the tensors as it can (variant None and no out are implied), and one dict
    # lookup gives the plan's bound call, or None where torch's own kernel takes the call; the
    # checks and the plan cache's fuller key run once per key.
    def _call(self, calls: dict, plans, a, b, bias=None):
        """The bound call of ``(a, b)`` (or ``(a, b, bias)``: the product plus a bias) from ``calls``
        (a table of ``plans``), or None."""
        # the dtype first: other dtypes (float64, ...) go to torch before anything else is read
        if plans is None or a.dtype not in self.dtypes or b.dtype != a.dtype:
            return None
        extra = plans.extra_key
        key = (a.dtype, a.get_device(), b.get_device(), a.shape, a.stride(), b.shape, b.stride(),
               a.data_ptr() & 15, b.data_ptr() & 15, a.is_neg(), b.is_neg(),
               extra() if extra is not None else None)
        if bias is not None:
            key += (bias.dtype, bias.get_device(), bias.shape, bias.stride(), bias.data_ptr() & 15, bias.is_neg())
        call = calls.get(key, _UNSEEN)
        if call is _UNSEEN:  # ours (its plan made, the call validated), or torch's
            call = None
            inputs = (a, b) if bias is None else (a, b, bias)
            # torch's kernel takes operands on two devices, with the negative bit (it resolves it),
            # and those our checks refuse (it raises torch's own error for them)
            if all(t.get_device() == a.get_device() and not t.is_neg() for t in inputs):
                try:
                    call = plans.get(inputs, None, None).bound()
                except (TypeError, ValueError):
                    pass
            make_room(calls, plans.max_plans)
            calls[key] = call
        return call

    def _mm(self, a, b):
        call = self._call(self._mm_calls, self.matmul_plans, a, b)
        if call is not None:
            self._counts["mm"] += 1
            return call(a, b)
        self._counts["mm fallback"] += 1
        return torch.mm(a, b, out=a.new_empty((a.shape[0], b.shape[1]), dtype=torch.promote_types(a.dtype, b.dtype)))

    def _addmm(self, bias, a, b, *, beta=1, alpha=1):
        # beta * bias + a b, rounded once (torch's cuBLAS epilogue): the kernels add the bias to the
        # float32 product, a beta other than 1 scales it in float32 first; alpha other than 1 goes to torch
        # (docs/decisions/018-addmm-bias-epilogue.md)
        call = added = None
        if alpha == 1 and bias.dtype == a.dtype:
            if beta == 0:  # (the bias is ignored, NaN or not, as torch does)
                call = self._call(self._mm_calls, self.matmul_plans, a, b)
            elif self.bias_epilogue:
                # (a new tensor: float() of a float32 bias is the bias itself)
                added = bias if beta == 1 else bias.float() * beta
                call = self._call(self._mm_calls, self.matmul_plans, a, b, added)  # (a longer key than mm's)
        if call is not None:
            self._counts["addmm"] += 1
            return call(a, b) if added is None else call(a, b, added)
        self._counts["addmm fallback"] += 1
        out = a.new_empty((a.shape[0], b.shape[1]), dtype=torch.promote_types(bias.dtype, a.dtype))
        return torch.addmm(bias, a, b, beta=beta, alpha=alpha, out=out)

    def _bmm(self, a, b):
        # (torch's bmm takes one batch extent, no broadcasting: other calls get torch's error)
        batched = a.dim() == 3 and b.dim() == 3 and a.shape[0] == b.shape[0]
        call = self._call(self._mm_calls, self.matmul_plans, a, b) if batched else None
        if call is not None:
            self._counts["bmm"] += 1
            return call(a, b)
        self._counts["bmm fallback"] += 1
        out = a.new_empty((a.shape[0], a.shape[1], b.shape[-1]), dtype=torch.promote_types(a.dtype, b.dtype))
        return torch.bmm(a, b, out=out)

    def _baddbmm(self, bias, a, b, *, beta=1, alpha=1):
        # beta 0, alpha 1 (attention written as baddbmm into an empty tensor): a batched product;
        # others go to torch (no batched bias epilogue yet)
        if beta == 0 and alpha == 1 and bias.dtype == a.dtype:
            return self._bmm(a, b)
        self._counts["baddbmm fallback"] += 1
        out = a.new_empty((a.shape[0], a.shape[1], b.shape[-1]), dtype=torch.promote_types(bias.dtype, a.dtype))
        return torch.baddbmm(bias, a, b, beta=beta, alpha=alpha, out=out)

    def _grouped_mm(self, a, b, offs=None, bias=None, out_dtype=None):
        # (F.grouped_mm: mixture-of-experts layers, transformers' default for its experts; the
        # backward's products are _grouped_mm calls too)
        c = None
        if bias is None and out_dtype in (None, a.dtype):
            try:
                c = self.grouped(a, b, offs)
            except (TypeError, ValueError):
                pass
        if c is not None:
            self._counts["grouped_mm"] += 1
            return c
        self._counts["grouped_mm fallback"] += 1
        return grouped_mm_loop(a, b, offs, bias, out_dtype)

    def _mv(self, a, x):
        call = self._call(self._mv_calls, self.gemv_plans, a, x)
        if call is not None:
            self._counts["mv"] += 1
            return call(a, x)
        self._counts["mv fallback"] += 1
        return torch.mv(a, x, out=a.new_empty((a.shape[0],), dtype=torch.promote_types(a.dtype, x.dtype)))


_UNSEEN = object()  # a key not in a switch's table yet


def _hopper_grouped_mm() -> bool:
    """Does this torch have aten::_grouped_mm, and the GPU the Hopper that the grouped kernels need?"""
    return (hasattr(torch.ops.aten, "_grouped_mm") and torch.cuda.is_available()
            and torch.cuda.get_device_capability()[0] == 9)


def grouped_mm_loop(a, b, offs=None, bias=None, out_dtype=None):
    """aten::_grouped_mm by torch's products, a group at a time (offs read on the host): the
    switch's fallback, as the op has no out= overload that reaches torch's own kernel, which the
    switch replaces. Forms: 2-D x 3-D (offs split a's rows), 2-D x 2-D (offs split K: a (G, M, N)
    of products), 3-D x 2-D (offs split b's columns), 3-D x 3-D (a batch, no offs)."""
    if bias is not None:
        raise RuntimeError("Bias tensor provided, but it is not supported yet.")
    dtype = out_dtype or a.dtype
    if offs is None:
        return torch.bmm(a, b).to(dtype)
    ends = offs.tolist()
    spans = list(enumerate(zip([0, *ends[:-1]], ends)))
    if a.dim() == 2 and b.dim() == 3:
        out = a.new_zeros((a.shape[0], b.shape[2]), dtype=dtype)
        for g, (s, e) in spans:
            out[s:e] = a[s:e] @ b[g]
    elif a.dim() == 2:
        out = a.new_zeros((len(ends), a.shape[0], b.shape[1]), dtype=dtype)
        for g, (s, e) in spans:
            out[g] = a[:, s:e] @ b[s:e]
    else:
        out = a.new_zeros((a.shape[1], b.shape[1]), dtype=dtype)
        for g, (s, e) in spans:
            out[:, s:e] = a[g] @ b[:, s:e]
    return out
