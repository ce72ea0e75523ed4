"""Triton launches with the JIT's dispatch paid once per plan.

``kernel[grid](...)`` binds the arguments, computes a specialization key and looks the compiled
kernel up on every call (about 13 us of host time on an H200 host). A plan knows its grid,
meta-parameters and every specialization input (its key holds the shapes, strides and pointer
alignment), so after the first call it launches the compiled kernel directly (about 5 us).
"""

from __future__ import annotations

import contextlib
import threading

import torch
from triton import knobs

from kernel_common import current_device, current_stream, interpreting, single_gpu


def _hooked() -> bool:
    """Is a launch hook installed (proton and other profilers)? Then launch through the JIT,
    which calls it."""
    hook = knobs.runtime.launch_enter_hook
    return hook is not None and bool(getattr(hook, "calls", True))  # a HookChain, or a function set by hand


def _launcher(k):
    """(callable, the arguments between the stream and the kernel's) for the compiled
    kernel ``k``: the C launch function itself when the kernel needs no scratch memory (skipping
    the Python layer of Triton's CudaLauncher, about 1 us), else ``k.run``."""
    run = k.run
    direct = getattr(run, "launch", None)
    scratch = getattr(run, "global_scratch_size", 1) or getattr(run, "profile_scratch_size", 1)
    if direct is not None and not scratch:
        return direct, (k.function, run.launch_cooperative_grid, run.launch_pdl, None, None,
                        k.packed_metadata, None, None, None)
    return run, (k.function, k.packed_metadata, None, None, None)


def device_of(args):
    """The device of the first tensor argument, or of the first tensor descriptor's ``base``."""
    for a in args:
        t = a if isinstance(a, torch.Tensor) else getattr(a, "base", None)
        if isinstance(t, torch.Tensor):
            return t.device
    return None


class TritonLaunch:
    """``fn`` launched on a fixed grid with fixed meta-parameters (constexprs and ``num_warps``
    / ``num_stages``). Call it with the kernel's runtime arguments in order; the constexpr
    parameters must come last in the kernel's signature (the style of this package).

    ``view_as``: a dtype the JIT sees tensors as on the first call (transpose moves bits: one
    kernel per element size); the compiled kernel reads only the pointers afterwards.
    """

    def __init__(self, fn, grid, meta: dict, options: dict | None = None, view_as=None):
        # (under the interpreter there is no compiled kernel to launch, nor its constexpr list)
        constexprs = [n for i, n in enumerate(fn.arg_names) if i in getattr(fn, "constexprs", ())]
        assert constexprs == fn.arg_names[len(fn.arg_names) - len(constexprs):], \
            f"{fn.__name__}: constexpr parameters must come last"
        self.fn, self.meta, self.options, self.view_as = fn, meta, options or {}, view_as
        self.grid = (*grid, 1, 1)[:3]
        self.constants = tuple(meta[n] for n in constexprs)
        self.compiled = None  # (launch function, its leading arguments, device) after a first GPU call
        self._lock = threading.Lock()

    def __call__(self, *args) -> None:
        compiled = self.compiled
        if compiled is None or _hooked():  # the first call, or a profiler listens to launches
            self._jit(args)
            return
        launch, head, device = compiled
        if single_gpu() or current_device() == device:
            launch(*self.grid, current_stream(device), *head, *args, *self.constants)
        else:
            with torch.cuda.device(device):
                launch(*self.grid, current_stream(device), *head, *args, *self.constants)

    def _jit(self, args) -> None:
        if self.view_as is not None:
            args = [a.view(self.view_as) if isinstance(a, torch.Tensor) else a for a in args]
        device = device_of(args)
        on_gpu = device is not None and device.type == "cuda"
        with torch.cuda.device(device) if on_gpu else contextlib.nullcontext():
            k = self.fn[self.grid](*args, **self.meta, **self.options)
        if on_gpu and not interpreting() and k is not None:
            with self._lock:
                self.compiled = (*_launcher(k), device.index)
