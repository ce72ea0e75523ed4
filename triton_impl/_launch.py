"""Triton launches with the JIT's dispatch paid once per plan.

``kernel[grid](...)`` binds the arguments, computes a specialization key and looks the compiled
kernel up on every call (about 13 us of host time on an H200 host). A plan knows its grid,
meta-parameters and every specialization input (its key holds the shapes, strides and pointer
alignment), so after the first call it launches the compiled kernel directly (about 5 us). A
plan's run goes further (``bind``): its sizes fixed, it keeps each call's whole argument list by
the tensors' addresses and the stream, so a repeat call looks once and launches.

Tensor descriptors (TMA): building a ``TensorDescriptor`` and encoding its CUtensorMap cost about
3-4 us each, three per matmul (H200 host, docs/decisions/004-plans-and-launch-path.md). A plan fixes each descriptor's shape,
strides and block (a ``DescriptorSpec`` per leading descriptor argument), so a call passes the
plain tensor, and the encoded arguments depend only on its address: a launch keeps the last few
encodings by address and re-encodes only on a miss; a loop that reuses its weight and whose
activations come back at the same addresses (the caching allocator) encodes nothing.

Traced: when ``torch.compile`` traces a ``triton_op`` of ours, the arguments are fake tensors
with no address; the launch then goes through ``torch.library.wrap_triton``, which records the
kernel, its grid and arguments in the graph (inductor launches it from its own code).
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import threading
from typing import NamedTuple

import torch
from triton import knobs

from kernel_common import current_device, current_stream, hand_over, interpreting, is_fake, single_gpu
from kernel_common.util import make_room
from triton_impl import _triton_key


# Compile options every kernel here takes: floating-point contraction on (a * b + c as one FMA), as
# every kernel was written, tested and timed with it. Triton 3.9 warns that its default turns off in
# 3.10, which would change the float32 kernels' bits and slow their inner loops; said here, it stays.
COMPILE_OPTIONS = {"enable_fp_fusion": True}


def _hooked() -> bool:
    """Is a launch hook installed (proton and other profilers)? Then launch through the JIT,
    which calls it."""
    hook = knobs.runtime.launch_enter_hook
    return hook is not None and bool(getattr(hook, "calls", True))  # a HookChain, or a function set by hand


class DescriptorSpec(NamedTuple):
    """How a launch reads one tensor argument through a TMA descriptor: what
    ``TensorDescriptor(base, shape, strides, block_shape)`` takes besides the tensor, as tuples.
    ``layout``: a Gluon kernel's shared-memory layout for the tile (its descriptors carry one)."""
    shape: tuple
    strides: tuple
    block_shape: tuple
    layout: object = None

    def build(self, base: torch.Tensor):
        if self.layout is not None:
            from triton.experimental.gluon.nvidia.hopper import TensorDescriptor as GluonDescriptor
            return GluonDescriptor(base, list(self.shape), list(self.strides), list(self.block_shape), self.layout)
        from triton.tools.tensor_descriptor import TensorDescriptor
        return TensorDescriptor(base, list(self.shape), list(self.strides), list(self.block_shape))


@functools.cache
def _tensordesc_maker():
    """(Triton's make_tensordesc_arg, its parameter count), or (None, 0) where this Triton has none:
    asked once a process (``inspect.signature`` cost each new plan's first call 10-20 us)."""
    try:
        from triton.backends.nvidia.driver import make_tensordesc_arg
        return make_tensordesc_arg, len(inspect.signature(make_tensordesc_arg).parameters)
    except (ImportError, TypeError, ValueError):
        return None, 0


def _descriptor_encoder(launch):
    """(the C launcher under Triton's descriptor wrapper, {argument index: descriptor metadata},
    encode(descriptor, metadata) -> the launcher's arguments for it), or None where this Triton
    does not wrap the launcher the way 3.6 does (then descriptors go through its wrapper)."""
    code, cells = getattr(launch, "__code__", None), getattr(launch, "__closure__", None)
    if code is None or not cells:
        return None
    free = dict(zip(code.co_freevars, (c.cell_contents for c in cells)))
    make_tensordesc_arg, params = _tensordesc_maker()
    if make_tensordesc_arg is None:
        return None
    metas, indices = free.get("tensordesc_meta"), free.get("tensordesc_indices")
    if free.get("launcher") is None or params != 2 or not metas or indices is None or None in metas:
        return None
    return free["launcher"], dict(zip(sorted(indices), metas)), make_tensordesc_arg


def _launcher(k):
    """(callable, the arguments between the stream and the kernel's, descriptor encoder or None)
    for the compiled kernel ``k``: the C launch function itself when the kernel needs no scratch
    memory (skipping the Python layer of Triton's CudaLauncher, about 1 us), else ``k.run``."""
    run = k.run
    direct = getattr(run, "launch", None)
    scratch = getattr(run, "global_scratch_size", 1) or getattr(run, "profile_scratch_size", 1)
    if direct is not None and not scratch:
        head = (k.function, run.launch_cooperative_grid, run.launch_pdl, None, None, k.packed_metadata,
                None, None, None)
        encoder = _descriptor_encoder(direct)
        return (encoder[0] if encoder else direct), head, (encoder[1:] if encoder else None)
    return run, (k.function, k.packed_metadata, None, None, None), None


# Compiled kernels by ``TritonLaunch._shared_key``: a new plan's first call (a shape the process has
# not seen, as a mixture of experts' row counts make every step) launches a kernel another plan
# compiled without Triton's JIT, whose dispatch took about 200 us of host time there (H200 host,
# new row counts of 1408 x 1024 products; lab/new_shape_host.py --timers)
_SHARED: dict = {}


def _int_key(v: int) -> tuple:
    """What Triton may specialize an int argument on: being 1, a multiple of 16, its width."""
    return v == 1, v % 16 == 0, -(1 << 31) <= v < (1 << 31), v < (1 << 63)


def _arg_key(a, view_as=None):
    """``_int_key`` of an int; a tensor's dtype (as the JIT sees it) and 16-byte alignment; a bool,
    a float's type, None as they are; TypeError for anything else."""
    if isinstance(a, torch.Tensor):
        return view_as or a.dtype, a.data_ptr() % 16 == 0
    if a is None or isinstance(a, bool):
        return a
    if isinstance(a, int):
        return _int_key(a)
    if isinstance(a, float):
        return float
    raise TypeError(type(a).__name__)


_ENCODINGS_KEPT = 64  # per launch: a loop's few live addresses per operand
_CALLS_KEPT = 256  # per bound run (TritonLaunch.bind): combinations of those addresses
_address = torch.Tensor.data_ptr


def device_of(args):
    """The device of the first tensor argument, or of the first tensor descriptor's ``base``."""
    for a in args:
        t = a if isinstance(a, torch.Tensor) else getattr(a, "base", None)
        if isinstance(t, torch.Tensor):
            return t.device
    return None


def pointer_type(dtype) -> str:
    """Triton's pointer type for a tensor of ``dtype`` ("*fp32", "*bf16", ...): the signature a
    launch compiles for (``launches``)."""
    return "*" + {"float32": "fp32", "float16": "fp16", "bfloat16": "bf16", "int8": "i8", "int32": "i32"}[
        str(dtype).removeprefix("torch.")]


@functools.cache
def _constexpr_names(fn) -> list:
    """``fn``'s constexpr parameters, in order, which must come last in its signature."""
    # (under the interpreter there is no compiled kernel to launch, nor its constexpr list)
    constexprs = [n for i, n in enumerate(fn.arg_names) if i in getattr(fn, "constexprs", ())]
    assert constexprs == fn.arg_names[len(fn.arg_names) - len(constexprs):], \
        f"{fn.__name__}: constexpr parameters must come last"
    return constexprs


class TritonLaunch:
    """``fn`` launched on a fixed grid with fixed meta-parameters (constexprs and ``num_warps``
    / ``num_stages``). Call it with the kernel's runtime arguments in order; the constexpr
    parameters must come last in the kernel's signature (the style of this package).

    ``view_as``: a dtype the JIT sees tensors as on the first call (transpose moves bits: one
    kernel per element size); the compiled kernel reads only the pointers afterwards.
    ``descriptors``: a DescriptorSpec for each of the kernel's leading tensor-descriptor
    parameters (they come first, the style of this package); a call passes those arguments as
    plain tensors.

    A launch belongs to one plan, and a traced call's plan is made afresh (``PlanCache.get``), so
    a launch sees either fakes only or real tensors only: after its first real call it never
    looks for fakes again.
    """

    def __init__(self, fn, grid, meta: dict, options: dict | None = None, view_as=None,
                 descriptors: tuple = ()):
        constexprs = _constexpr_names(fn)
        self.fn, self.meta, self.options, self.view_as = fn, meta, options or {}, view_as
        self.descriptors = tuple(descriptors)
        self.grid = (*grid, 1, 1)[:3]
        self.constants = tuple(meta[n] for n in constexprs)
        # (launch function, its leading arguments, descriptor encoder, device) after a first GPU call
        self.compiled = None
        self._encoded: dict = {}  # (argument index, address) -> encoded arguments
        # each descriptor argument's first equal spec: a tensor passed twice alike is encoded once
        self._spec_of = [self.descriptors.index(spec) for spec in self.descriptors]
        self._templates: list = [None] * len(self.descriptors)  # a built descriptor per argument, its base swapped
        self._lock = threading.Lock()

    def __call__(self, *args) -> None:
        compiled = self.compiled
        if compiled is None or _hooked():  # the first call, a traced one, or a profiler listens
            if is_fake(args[0]):
                self._record(args)
            else:
                self._jit(args)
            return
        launch, head, encoder, device = compiled
        if self.descriptors:
            args = self._encode(args, *encoder) if encoder is not None else self._built(args)
        if single_gpu() or current_device() == device:
            launch(*self.grid, current_stream(device), *head, *args, *self.constants)
        else:
            with torch.cuda.device(device):
                launch(*self.grid, current_stream(device), *head, *args, *self.constants)

    def bind(self, *trailing):
        """``run(*tensors)``: this launch with ``trailing`` (a plan's sizes) after the leading
        tensor arguments, for a plan's calls. After the first GPU call, a run with the addresses and
        stream of an earlier one reuses its whole argument list (descriptors encoded, pointers as
        ints, which Triton's launcher takes without asking the driver about them), so a repeat
        call reads the addresses and the stream, looks once, and launches. (Inside a model's step,
        ``__call__`` spent 3.4 us on its encoding lookups and about 4 on the rest beside the C
        launcher's 6.1; the step's gain with this is in docs/decisions/005-switch-fast-table.md.)"""
        calls: dict = {}
        n_desc = len(self.descriptors)

        def run(*tensors):
            compiled = self.compiled
            if compiled is None or _hooked() or (n_desc and compiled[2] is None):
                return self(*tensors, *trailing)
            launch, head, encoder, device = compiled
            stream = current_stream(device)
            key = (*map(_address, tensors), stream)
            args = calls.get(key)
            if args is None:
                make_room(calls, _CALLS_KEPT)
                leading = self._encode(tensors[:n_desc], *encoder) if n_desc else []
                args = calls[key] = (*self.grid, stream, *head, *leading, *key[n_desc:-1], *trailing,
                                     *self.constants)
            if single_gpu() or current_device() == device:
                launch(*args)
            else:
                with torch.cuda.device(device):
                    launch(*args)
        return run

    def bind_handing_over(self, trailing, flag_count: int, floats: int, own: bool = False):
        """``run(*tensors)`` of a launch whose blocks hand float32 sums over through the stream's
        pair of buffers (``kernel_common.hand_over``: ``flag_count`` flags, ``floats`` slots), with
        ``trailing(flags, slots)`` after the leading tensors: bound (``bind``) once to each pair it
        meets (a stream's pair changes only when outgrown), so a repeat call looks its arguments up
        once. Inside a CUDA graph capture, or ``own`` (a call traced by torch.compile), the call takes
        a pair of its own and launches unbound (no plan keeps that pair)."""
        bound: dict = {}

        def run(*tensors):
            flags, slots = hand_over(tensors[0].device, flag_count, floats, own=own)
            key = (flags.data_ptr(), slots.data_ptr())
            go = bound.get(key)
            if go is None:
                if own or (flags.is_cuda and torch.cuda.is_current_stream_capturing()):
                    return self(*tensors, *trailing(flags, slots))
                make_room(bound, 8)
                go = bound[key] = self.bind(*trailing(flags, slots))
            go(*tensors)
        return run

    def _built(self, args) -> list:
        """The arguments with a ``TensorDescriptor`` in place of each descriptor argument."""
        n = len(self.descriptors)
        return [spec.build(a) for spec, a in zip(self.descriptors, args)] + list(args[n:])

    def _encode(self, args, metas: dict, encode) -> list:
        """The launcher's arguments: each descriptor argument replaced by its (cached) encoding."""
        out = []
        cache = self._encoded
        for i, spec in enumerate(self.descriptors):
            a = args[i]
            key = (self._spec_of[i], a.data_ptr())
            encoded = cache.get(key)
            if encoded is None:
                make_room(cache, _ENCODINGS_KEPT)
                encoded = cache[key] = self._encode_new(i, a, metas[i], encode)
            out += encoded
        out += args[len(self.descriptors):]
        return out

    def _encode_new(self, i, a, meta, encode) -> list:
        """Argument ``i``'s encoding at a new address. The descriptor is built (and checked) once;
        a new address swaps its base, since the encoder reads only the base's address, the shape,
        strides and padding: a model's activations meet new addresses on most calls, and building
        a ``TensorDescriptor`` cost more than encoding it. The base is dropped afterwards, so the
        template holds no tensor's memory."""
        with self._lock:
            template = self._templates[i]
            if template is None:
                template = self._templates[i] = self.descriptors[i].build(a)
            template.base = a
            try:
                return encode(template, meta)
            finally:
                template.base = None

    def _jit(self, args) -> None:
        key = self._shared_key(args)
        compiled = _SHARED.get(key) if key is not None else None
        if compiled is not None and not _hooked():  # another launch of this kernel and specialization: no JIT
            with self._lock:
                self.compiled = compiled
            self(*args)
            return
        args = self._built(args)
        if self.view_as is not None:
            args = [a.view(self.view_as) if isinstance(a, torch.Tensor) else a for a in args]
        device = device_of(args)
        on_gpu = device is not None and device.type == "cuda"
        if on_gpu and not interpreting():
            _triton_key.install()  # (once a process: Triton's cache key without hashing libtriton again)
        with torch.cuda.device(device) if on_gpu else contextlib.nullcontext():
            k = self.fn[self.grid](*args, **self.meta, **COMPILE_OPTIONS, **self.options)
        if on_gpu and not interpreting() and k is not None:
            launch, head, encoder = _launcher(k)
            # _encode takes the descriptors as the leading arguments, in order: the kernel's own say so
            assert encoder is None or sorted(encoder[0]) == list(range(len(self.descriptors))), \
                f"{self.fn.__name__}: tensor-descriptor parameters must come first"
            with self._lock:
                self.compiled = (launch, head, encoder, device.index)
            if key is not None:
                _SHARED[key] = self.compiled

    def _shared_key(self, args):
        """What the compiled kernel of a call depends on, finer than Triton's own key: the kernel,
        its constants and options, the device, and of each argument what Triton may specialize on
        (a tensor's dtype and 16-byte alignment; an int's being 1, a multiple of 16, its width; a
        descriptor's block and layout, and those of each extent and stride). None off the GPU, or
        for an argument of another kind (that launch goes through the JIT)."""
        device = device_of(args)
        if device is None or device.type != "cuda" or interpreting():
            return None
        n = len(self.descriptors)
        try:
            desc = tuple((spec.block_shape, tuple(map(_int_key, spec.shape)), tuple(map(_int_key, spec.strides)),
                          repr(spec.layout), a.dtype, a.data_ptr() % 16 == 0)
                         for spec, a in zip(self.descriptors, args))
            rest = tuple(_arg_key(a, self.view_as) for a in args[n:])
        except TypeError:
            return None
        return (self.fn, self.constants, tuple(sorted(self.options.items())), device.index, desc, rest)

    def _record(self, args) -> None:
        """The launch as a traced graph records it (``wrap_triton``), on the tensors as they are:
        not ``view_as`` views, whose writes a traced graph lost (torch 2.11: the results read
        uninitialized memory). Tensor descriptors: see ``kernel_common/ops.py``."""
        from torch.library import wrap_triton
        assert not self.descriptors, "a TMA launch is not traced"
        wrap_triton(self.fn)[self.grid](*args, **self.meta, **self.options)
