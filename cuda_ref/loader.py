"""The CUDA loader: one ``cupy.RawModule`` per template instance, compiled once per process.

A launcher names its file and the template instances it may ask for (``name_expressions``); the
first call of an instance loads its shipped cubin where one was built from this very source
(``cuda_ref/compile.py``), else compiles that instance alone with NVRTC; later calls reuse it. Kernels
run on torch's current stream, so they order correctly with torch work, in user streams and inside
CUDA-graph capture.
CuPy is imported on first launch only: importing ``cuda_ref`` needs no GPU and no CuPy.
"""

from __future__ import annotations

import math
import re
import threading
import warnings
from dataclasses import dataclass

import torch

from kernel_common import current_device, current_stream, single_gpu
from kernel_common.util import make_room

# Storage types by element size: transpose moves bits and never does arithmetic on them, so one
# instance per size serves float16/bfloat16, float32/int32 and float64.
UINT_BY_SIZE = {1: "unsigned char", 2: "unsigned short", 4: "unsigned int", 8: "unsigned long long"}

# Element types (dtypes.cuh) by torch dtype, for the arithmetic kernels.
CTYPE = {torch.float32: "float", torch.float16: "half_t", torch.bfloat16: "bf16_t", torch.int32: "int",
         torch.int8: "signed char", torch.float8_e4m3fn: "e4m3_t", torch.float8_e5m2: "e5m2_t"}

_lock = threading.Lock()
_modules: dict[tuple[str, str], tuple] = {}  # (file, instance) -> its cupy.RawModule, the kernel's name in it
_functions: dict[tuple[str, str, int], object] = {}
_streams: dict[tuple[int, int], object] = {}


def get_function(filename: str, name_expressions: tuple[str, ...], name: str, device: int):
    """The compiled kernel ``name`` (one of ``name_expressions``) of ``filename`` on ``device``.

    Each template instance compiles alone, on its first use: a program compiles only the kernels it
    launches. Whole files took NVRTC 0.5-6.3 s (transpose.cu's 48 instances 4.9 s), one instance
    0.06-0.23 s at the median and the sum of a file's instances about what the whole took
    (docs/decisions/015-nvrtc-compile-per-instance.md)."""
    key = (filename, name, device)
    fn = _functions.get(key)
    if fn is not None:
        return fn
    if name not in name_expressions:
        raise KeyError(f"{name} is not an instance {filename}'s launchers ask for")
    with _lock:  # two threads making the first call compile once
        fn = _functions.get(key)
        if fn is None:
            with _device(device):
                module, symbol = _module_of(filename, name, device)
                fn = module.get_function(symbol)
            _functions[key] = fn
    return fn


def _module_of(filename: str, name: str, device: int) -> tuple:
    """(the ``cupy.RawModule`` of one instance of ``filename``, the kernel's name in it), made
    under ``_lock``: the shipped cubin where one matches (``cuda_ref/compile.py``), else NVRTC."""
    entry = _modules.get((filename, name))
    if entry is None:
        import cupy

        from cuda_ref.compile import find, options, source
        major, minor = torch.cuda.get_device_capability(device)
        found = find(filename, name, f"sm_{major}{minor}")
        if found is not None:
            try:
                entry = (cupy.RawModule(path=str(found[0])), found[1])
                entry[0].get_function(found[1])  # loaded now: a cubin the driver refuses goes to NVRTC
            except Exception as e:  # noqa: BLE001  (CuPy's CUDADriverError)
                warnings.warn(f"cuda_ref: the shipped cubin of {name} did not load ({e}); compiling it", stacklevel=2)
                entry = None
        if entry is None:
            entry = (cupy.RawModule(code=source(filename), options=options(filename), name_expressions=(name,)), name)
        _modules[(filename, name)] = entry
    return entry


def _device(device: int):
    import cupy
    return cupy.cuda.Device(device)


class _StreamRef:
    """A raw stream handle in the CUDA stream protocol, for ``cupy.cuda.Stream.from_external``."""

    def __init__(self, ptr: int):
        self.ptr = ptr

    def __cuda_stream__(self):
        return (0, self.ptr)


def copy_to_symbol(filename: str, name_expressions, name: str, symbol: str, src: torch.Tensor,
                   device: int) -> None:
    """Copy ``src`` (contiguous, on ``device``) into the module global ``symbol`` of the instance
    ``name`` (each instance is its own module, with its own globals), on torch's current stream, so
    it is ordered with the launch that follows and is captured in graphs."""
    import cupy

    get_function(filename, name_expressions, name, device)  # compiled and loaded
    with cupy.cuda.Device(device):
        dst = _modules[(filename, name)][0].get_global(symbol)
        stream = _external_stream(device)
        cupy.cuda.runtime.memcpyAsync(dst.ptr, src.data_ptr(), src.numel() * src.element_size(),
                                      cupy.cuda.runtime.memcpyDeviceToDevice, stream.ptr)


def _external_stream(device: int):
    """CuPy's view of torch's current stream (cached by handle; the handle is all it holds)."""
    import cupy

    ptr = torch.cuda.current_stream(device).cuda_stream
    stream = _streams.get((ptr, device))
    if stream is None:
        from_external = getattr(cupy.cuda.Stream, "from_external", None)
        if from_external is not None:  # CuPy >= 14
            stream = from_external(_StreamRef(ptr))
        else:
            stream = cupy.cuda.ExternalStream(ptr, device)
        _streams[(ptr, device)] = stream
    return stream


# Dynamic shared memory past 48 KiB per block, less the kernel's static shared memory, must be
# opted into per kernel (cuFuncSetAttribute); done once per compiled function, for the largest
# size asked so far.
DEFAULT_DYNAMIC_SMEM = 48 * 1024
_dynamic_smem: dict[int, int] = {}


_setups: dict = {}  # (id(fn), arg_types, shared_mem, device) -> what every Kernel of it shares, and fn (_setup)


def _setup(fn, arg_types: str, shared_mem: int, device: int) -> tuple:
    """(the function's pointer, the arguments' ``struct``, each argument's offset in the buffer where
    one is a by-value blob, else None): made once a kernel and geometry-free setting, since a plan
    of a shape not seen before makes a Kernel on its call's host time (the device switch and the
    packing's parsing cost that about 80 us, H200 host; lab/new_shape_host.py --timers)."""
    key = (id(fn), arg_types, shared_mem, device)  # (fn kept in the value: its id stays its own)
    made = _setups.get(key)
    if made is None:
        import struct

        import cupy

        with cupy.cuda.Device(device):  # a RawKernel's function is its current device's
            _allow_dynamic_smem(fn, shared_mem, device)
            ptr = fn.kernel.ptr
        offsets = None
        if "s" in arg_types:
            # a by-value blob (a TMA tensor map): passed as kernelParams, one pointer per argument into
            # the same buffer (through ``extra`` such a kernel read zeros: H200, driver 580)
            codes = re.findall(r"\d*[a-zA-Z]", arg_types)
            # where native packing put each argument: the size up to and including it, less its own
            offsets = [struct.calcsize("@" + "".join(codes[:i + 1])) - struct.calcsize("@" + c)
                       for i, c in enumerate(codes)]
            # a blob packs with no alignment of its own; a tensor map wants 64 bytes (put blobs first)
            assert all(o % 64 == 0 for o, c in zip(offsets, codes) if c.endswith("s")), arg_types
        made = _setups[key] = (ptr, struct.Struct("@" + arg_types), offsets, fn)
    return made[:3]


def _allow_dynamic_smem(fn, shared_mem: int, device: int) -> None:
    """(with ``device`` current: a RawKernel acts on its current device's function)"""
    if (shared_mem and _dynamic_smem.get((id(fn), device), 0) < shared_mem
            and shared_mem + fn.shared_size_bytes > DEFAULT_DYNAMIC_SMEM):
        with _lock:
            fn.max_dynamic_shared_size_bytes = shared_mem
            _dynamic_smem[(id(fn), device)] = shared_mem


# cuLaunchKernel's ``extra`` markers: the arguments come as one buffer laid out as the C ABI does.
_PARAM_BUFFER_POINTER, _PARAM_BUFFER_SIZE, _PARAM_END = 1, 2, 0
_CUDA_ERROR_INVALID_CONTEXT = 201


class Kernel:
    """One compiled kernel with its launch geometry, launched with the least host work.

    ``arg_types`` spells the kernel's parameters in ``struct`` codes ('Q' a pointer, 'q' int64,
    'i' int32); native alignment in ``struct`` is the C ABI's, so packing them gives the bytes
    cuLaunchKernel expects. A launch packs into a buffer made once and calls the driver on
    torch's current stream: no CuPy stream or device objects, no per-argument conversions
    (a CuPy RawKernel call costs 8-9 us of host time, this about 5, H200 host).
    """

    __slots__ = ("fn", "ptr", "grid", "block", "shared_mem", "device", "_struct", "_buffer", "_size",
                 "_extra", "_extra_ptr", "_params", "_param_array", "_lock", "_launch", "_head")

    def __init__(self, fn, grid, block, arg_types: str, *, device: int, shared_mem: int = 0):
        import ctypes

        from cupy.cuda import driver

        self.fn = fn
        self.ptr, self._struct, offsets = _setup(fn, arg_types, shared_mem, device)
        self._launch = driver.launchKernel
        self.grid = (*grid, 1, 1)[:3]
        self.block = (*block, 1, 1)[:3]
        self.shared_mem, self.device = shared_mem, device
        self._buffer = ctypes.create_string_buffer(max(self._struct.size, 8))
        self._size = ctypes.c_size_t(self._struct.size)
        self._extra = (ctypes.c_void_p * 5)(_PARAM_BUFFER_POINTER, ctypes.addressof(self._buffer),
                                            _PARAM_BUFFER_SIZE, ctypes.addressof(self._size), _PARAM_END)
        self._extra_ptr = ctypes.addressof(self._extra)
        self._params = 0
        if offsets is not None:
            base = ctypes.addressof(self._buffer)
            self._param_array = (ctypes.c_void_p * len(offsets))(*[base + o for o in offsets])
            self._params, self._extra_ptr = ctypes.addressof(self._param_array), 0
        self._lock = threading.Lock()  # one buffer: two threads must not pack into it at once
        self._head = (self.ptr, *self.grid, *self.block, shared_mem)  # cuLaunchKernel's arguments before the stream

    def __call__(self, *args) -> None:
        with self._lock:
            self._struct.pack_into(self._buffer, 0, *args)
            if single_gpu() or current_device() == self.device:
                try:
                    self._launch(*self._head, current_stream(self.device), self._params, self._extra_ptr)
                except Exception as e:  # noqa: BLE001  (CuPy's CUDADriverError; anything else is raised)
                    if getattr(e, "status", None) != _CUDA_ERROR_INVALID_CONTEXT:
                        raise
                    # a thread whose first CUDA work this is has no current context (the driver
                    # call does not make one, as the runtime's calls do): its device's, then again
                    import cupy
                    cupy.cuda.runtime.setDevice(self.device)
                    self._launch(*self._head, current_stream(self.device), self._params, self._extra_ptr)
            else:  # the function belongs to its device's context
                with torch.cuda.device(self.device):
                    self._launch(*self._head, current_stream(self.device), self._params, self._extra_ptr)


@dataclass(frozen=True)
class Launch:
    """One kernel launch as a launcher plans it from metadata alone: the template instance, its
    grid and block, its parameters in ``struct`` codes, its dynamic shared memory. Plans bind it
    to a device (``kernel``); ``bench/resources.py`` reads it to report what runs."""
    name: str
    grid: tuple
    block: tuple
    arg_types: str
    shared_mem: int = 0

    @property
    def threads(self) -> int:
        return math.prod(self.block)


def kernel(filename: str, name_expressions, launch: Launch, device: int) -> Kernel:
    """``launch``'s instance of ``filename`` compiled for ``device`` and bound to its geometry: one
    Kernel for every plan that launches the same function on the same geometry (a new row count
    inside the same tiles: a mixture's experts every step), not one a plan."""
    fn = get_function(filename, name_expressions, launch.name, device)
    key = (id(fn), launch, device)
    made = _kernels.get(key)
    if made is None or made.fn is not fn:  # (a function of a loader state since replaced: its id reused)
        made = Kernel(fn, launch.grid, launch.block, launch.arg_types, device=device, shared_mem=launch.shared_mem)
        with _lock:
            make_room(_kernels, KERNELS_KEPT)
            _kernels[key] = made
    return made


_kernels: dict = {}  # (id(fn), launch, device) -> its Kernel (``kernel``)
KERNELS_KEPT = 4096


def call(plans, inputs: tuple, names: tuple[str, ...], variant, out):
    """A public function's call: torch tensors or CuPy arrays in (CuPy through DLPack, zero-copy),
    the plan cache's call, the result as the kind the first input was."""
    was_cupy = False
    for t in inputs:
        if not isinstance(t, torch.Tensor):
            was_cupy = from_user(inputs[0], names[0])[1]
            inputs = tuple(from_user(t, name)[0] for t, name in zip(inputs, names))
            break
    if out is not None and not isinstance(out, torch.Tensor):
        out = from_user(out, "out")[0]
    out = plans(inputs, variant, out)
    return to_user(out, was_cupy) if was_cupy else out


def from_user(x, name: str):
    """Accept a torch tensor or a CuPy array; return (torch tensor, was_cupy). Zero-copy."""
    if isinstance(x, torch.Tensor):
        return x, False
    if type(x).__module__.startswith("cupy") and hasattr(x, "__dlpack__"):
        return torch.from_dlpack(x), True
    raise TypeError(f"{name} must be a torch CUDA tensor or a CuPy array, got {type(x).__name__}")


def to_user(t: torch.Tensor, was_cupy: bool):
    if not was_cupy:
        return t
    import cupy

    return cupy.from_dlpack(t)
