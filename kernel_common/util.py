"""Small helpers both backends (and the harness) use: one definition each."""

from __future__ import annotations

import functools
import itertools
import os

import torch
from torch._subclasses.fake_tensor import FakeTensor
from torch._subclasses.functional_tensor import FunctionalTensor

# torch's current device and the raw handle of its current stream, without building Python objects
# (launches read them on every call; a CPU build of torch has neither, and launches nothing)
current_device = getattr(torch._C, "_cuda_getDevice", torch.cuda.current_device)
current_stream = getattr(torch._C, "_cuda_getCurrentRawStream", lambda d: torch.cuda.current_stream(d).cuda_stream)


@functools.lru_cache(maxsize=None)
def single_gpu() -> bool:
    """One visible GPU: the current device is always the launch's, so launches skip asking."""
    return torch.cuda.device_count() == 1


# The signed integer type of each element size: kernels that only move bits (transpose) view
# any dtype as the integer of its size.
INT_BY_SIZE = {1: torch.int8, 2: torch.int16, 4: torch.int32, 8: torch.int64}


# torch's C getter (the Python wrapper around it is one more frame on every call)
_legacy_precision = getattr(torch._C, "_get_float32_matmul_precision", torch.get_float32_matmul_precision)


def float32_matmul_precision() -> str:
    """torch's float32 matmul precision as the old getter names it: "highest" (exact float32),
    "high" (TF32 allowed) or "medium". torch 2.9+ also has per-backend settings
    (``torch.backends.cuda.matmul.fp32_precision = "tf32"``); once they are set apart from the old
    API, the old getter raises, so the setting is read from the new API then ("none": the
    global ``torch.backends.fp32_precision``)."""
    try:
        return _legacy_precision()
    except RuntimeError:
        precision = torch.backends.cuda.matmul.fp32_precision
        if precision == "none":
            precision = torch.backends.fp32_precision
        return "high" if precision == "tf32" else "highest"


def tf32_allowed() -> bool:
    """Does torch's float32 matmul precision allow TF32 ("high" or "medium")?"""
    return float32_matmul_precision() != "highest"


def cdiv(a: int, b: int) -> int:
    """Ceiling division of non-negative ints: the number of b-sized tiles covering a."""
    return -(-a // b)


MAX_GRID_YZ = 65535  # CUDA's limit on gridDim.y and gridDim.z


def bucket(*extents: int) -> tuple[int, ...]:
    """Each extent rounded up to a power of two (at least 16): the shapes one tuned entry serves
    (Triton's tuning, CUDA's measured picks)."""
    return tuple(max(16, 1 << (n - 1).bit_length()) for n in extents)


def batch_chunks(B: int) -> list[tuple[int, int]]:
    """(first, count) of the launches a batch of B matrices takes, one per grid axis's worth."""
    return [(b, min(MAX_GRID_YZ, B - b)) for b in range(0, B, MAX_GRID_YZ)]


def make_room(d: dict, limit: int) -> None:
    """Before a new key goes into ``d``, bounded at ``limit`` entries: at the limit the oldest
    quarter (insertion order) goes, not all of it, so a program that meets new keys steadily (a
    mixture's expert row counts, every step) keeps those it met last and does not plan its whole
    step again at once."""
    if len(d) >= limit:
        for key in list(itertools.islice(d, max(1, limit // 4))):
            d.pop(key, None)


def interpreting() -> bool:
    """Triton runs under its CPU interpreter (``TRITON_INTERPRET=1``)."""
    return os.environ.get("TRITON_INTERPRET", "0") == "1"


def dtype_name(dtype: torch.dtype) -> str:
    """``torch.float32`` -> ``"float32"``: the name in messages, tables and C type maps."""
    return str(dtype).removeprefix("torch.")


def is_fake(t) -> bool:
    """Is ``t`` a tensor with no address: a fake that torch.compile traces with? (A plain tensor
    answers at once; subclasses, parameters among them, are asked. A plain FakeTensorMode's fake
    answers ``data_ptr()`` with 0 and a warning, a traced one raises.)"""
    if type(t) is torch.Tensor or not isinstance(t, torch.Tensor):
        return False
    if isinstance(t, (FakeTensor, FunctionalTensor)):
        return True
    try:
        t.data_ptr()
    except RuntimeError:
        return True
    return False


def base_phase(t: torch.Tensor) -> int:
    """Bytes by which ``t``'s first element sits past a 16-byte boundary. A tensor that torch.compile
    traces (a fake) has no address: its storage counts as aligned (torch's allocators align to far
    more than 16 bytes), so its offset decides."""
    if is_fake(t):
        return (t.storage_offset() * t.element_size()) & 15
    return t.data_ptr() & 15


def rows_aligned16(t: torch.Tensor) -> bool:
    """A kernel can read every row of the 2-D ``t``, or of each matrix of a 3-D batch, 16 bytes at
    a time: unit stride along a row, a 16-byte aligned base, and row (and matrix) strides of whole
    16-byte units (irrelevant for one row, or one matrix)."""
    *batch, rows, _ = t.shape
    *sb, sr, sc = t.stride()
    es = t.element_size()
    return (sc == 1 and (rows == 1 or (sr * es) % 16 == 0) and base_phase(t) == 0
            and (not batch or batch[0] == 1 or (sb[0] * es) % 16 == 0))


def tma_rows(t: torch.Tensor) -> bool:
    """Can a TMA tensor map (or a 16-byte vector path) read the rows of the 2-D ``t`` where they
    lie: unit stride along a row, a row stride of whole 16 bytes (even for one row: a tensor map
    wants it) and a 16-byte aligned base?"""
    return t.stride(1) == 1 and (t.stride(0) * t.element_size()) % 16 == 0 and base_phase(t) == 0


def tma_batch_view(t3: torch.Tensor) -> bool | None:
    """How a 3-D tensor map reads the batch ``t3`` (B, R, C) where it lies: False as it lies (unit
    stride along a row), True through its matrices' transposes (unit stride down a column), None
    where none can (no unit stride, or another stride not whole 16 bytes; the base is the caller's
    to check: ``base_phase``)."""
    for transposed, (unit, other) in ((False, (2, 1)), (True, (1, 2))):
        if t3.stride(unit) == 1 and all(t3.stride(d) * t3.element_size() % 16 == 0 for d in (0, other)):
            return transposed
    return None


def padded(rows: int, cols: int, dtype, device, zero_pad: bool = False) -> torch.Tensor:
    """An empty (rows, cols) row-major tensor whose rows start every 16 bytes (a view of a wider
    one where ``cols`` elements are not whole 16 bytes): where a kernel that reads or writes rows
    16 bytes at a time puts an operand it cannot use where it lies. ``zero_pad``: the pad past
    each row is written (zeros), for kernels whose 16-byte copies touch it (cp.async with a
    partial source size reads only the bytes in range, but compute-sanitizer's initcheck counts
    the whole access); the pad alone, not the whole buffer (docs/decisions/035-aligned-copy-pad.md)."""
    step = 16 // dtype.itemsize
    if cols % step == 0:  # (slicing a view costs host time on every call)
        return torch.empty((rows, cols), dtype=dtype, device=device)
    wide = torch.empty((rows, cdiv(cols, step) * step), dtype=dtype, device=device)
    if zero_pad:
        wide[:, cols:].zero_()  # (the pad only: the caller writes the rest)
    return wide[:, :cols]


# H100 / H200 SXM: the SM count plans and reports assume where no GPU answers (CPU runs).
DEFAULT_SM_COUNT = 132


@functools.lru_cache(maxsize=None)
def sm_count(device: torch.device) -> int:
    """Streaming multiprocessors of ``device`` (a CUDA device), or ``DEFAULT_SM_COUNT`` for others."""
    if device.type != "cuda":
        return DEFAULT_SM_COUNT
    return torch.cuda.get_device_properties(device).multi_processor_count


@functools.lru_cache(maxsize=None)
def capability(device: torch.device) -> tuple[int, int]:
    """``torch.cuda.get_device_capability`` of a CUDA ``device``, kept as ``sm_count`` is (a new
    shape's plan asks several times, each a few us of host time)."""
    return torch.cuda.get_device_capability(device)


@functools.lru_cache(maxsize=None)
def device_name(device: torch.device) -> str:
    """``torch.cuda.get_device_name`` of a CUDA ``device``, kept as ``capability`` is."""
    return torch.cuda.get_device_name(device)


def balanced_grid(items: int, slots: int) -> int:
    """Programs of a persistent grid for ``items`` equal work items on at most ``slots``: the fewest
    that keep the waves ``ceil(items / slots)``, so every program takes the same count. The call
    takes as long (its last wave sets it) and the SMs left idle draw no power: an H200 at its
    power cap runs the rest at a higher clock (4096^3 bf16, 512 tiles on 128 SMs against 132:
    CUDA 1.006-1.011x cuBLAS against 0.995-0.999x; docs/decisions/011-balanced-persistent-grid.md)."""
    return cdiv(items, cdiv(items, slots)) if items > 0 else 0


def waves_balanced(blocks: int, slots: int, min_fill: float, whole_waves: int) -> bool:
    """Do ``blocks`` long blocks of a memory-bound launch on ``slots`` resident places share the
    bandwidth evenly: their last wave fills at least ``min_fill`` of the slots, or they make at
    least ``whole_waves`` waves (the last then costs a small share)? A last wave of few blocks
    leaves SMs with too few loads in flight to draw their share, and the launch waits on them
    (GEMV: docs/decisions/007-gemv-defaults.md)."""
    if blocks <= 0:
        return True
    return blocks >= whole_waves * slots or ((blocks - 1) % slots + 1) >= min_fill * slots


def back_to_back_ms(fn, calls: int) -> float:
    """Milliseconds a call of ``calls`` calls of ``fn`` in a row between two CUDA events, no L2
    flush: what a program's loop sees, host time included where it outlasts the kernels."""
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    torch.cuda.synchronize()
    start.record()
    for _ in range(calls):
        fn()
    end.record()
    end.synchronize()
    return start.elapsed_time(end) / calls


def hand_over(device: torch.device, flags: int, floats: int, own: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
    """The buffers through which a call's blocks hand over float32 sums: ``flags`` int32 flags or
    counts (zeros, and zeros again after every call: the block that waited on or finished each
    lowers it) and ``floats`` float32 sums (written before their flag is raised, read only after).
    CUDA's wgmma_ws stream-K and split K (slots of a consumer warpgroup's 64 x 256 sums), its
    few_rows_mma's K runs (M x N sums a run; the tile's last run adds them) and the runs that
    matmul_split_reduce adds in a second launch (``flags`` 0); Triton's stream-K (a tile's sums a
    program), its one-launch K split (a tile's slices; a count a tile) and the GEMV's
    ``split_k_last`` (a row block's pieces; a count a block).

    Outside a CUDA graph capture, one pair serves every call of a stream (the calls of a stream run
    one after another): no clearing launch and no allocation a call (inside a small model's step
    an allocation took 4-7 us of host time, docs/decisions/009-cuda-16bit-wgmma-ws.md). Per stream,
    since calls on two streams may run at once; the last HAND_OVER_STREAMS streams keep theirs, and
    a pair outgrown or dropped is freed (torch's allocator reuses it only in its stream's order,
    after the calls that use it). Inside a capture, the call takes a pair of its own from the
    graph's memory pool, zeroed by a node of the graph: two graphs never share one, however they
    replay, and the graph frees it. ``own``: a new pair in any case (a call traced by torch.compile,
    whose graph must allocate its own rather than hold the stream's). (Off a GPU, the
    interpreter's: a new pair a call.)"""
    if own or device.type != "cuda" or torch.cuda.is_current_stream_capturing():
        return _new_pair(device, flags, floats)
    key = (device.index, current_stream(device.index))
    pair = _HAND_OVER.get(key)
    if pair is not None and pair[2] >= flags and pair[3] >= floats:
        if next(reversed(_HAND_OVER)) != key:  # (the dict's order is the streams' recency)
            _HAND_OVER[key] = _HAND_OVER.pop(key)
        return pair[:2]
    pair = _new_pair(device, max(flags, pair[2] if pair else 0), max(floats, pair[3] if pair else 0))
    _HAND_OVER.pop(key, None)
    _HAND_OVER[key] = (*pair, pair[0].numel(), pair[1].numel())
    if len(_HAND_OVER) > HAND_OVER_STREAMS:
        _HAND_OVER.pop(next(iter(_HAND_OVER)), None)
    return pair


def kept_hand_over(device_index: int, stream: int):
    """The pair ``hand_over`` keeps for ``stream`` now, or None: a launch that kept the arguments
    naming a pair checks that the stream still holds that pair (not outgrown, not dropped)."""
    pair = _HAND_OVER.get((device_index, stream))
    return pair[:2] if pair is not None else None


def _new_pair(device: torch.device, flags: int, floats: int) -> tuple[torch.Tensor, torch.Tensor]:
    return (torch.zeros(flags, dtype=torch.int32, device=device),
            torch.empty(floats, dtype=torch.float32, device=device))


# (device, stream) -> (flags, floats, their sizes): a repeat call reads the sizes without asking the tensors
_HAND_OVER: dict[tuple[int, int], tuple[torch.Tensor, torch.Tensor, int, int]] = {}
HAND_OVER_STREAMS = 8  # streams whose pairs are kept (a program uses a few; more only allocate)
