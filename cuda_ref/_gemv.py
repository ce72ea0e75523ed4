"""GEMV launchers: validate -> plan (layout, variant) -> launch. Kernels: kernels/gemv.cu.

Each variant reads A in one layout: "row" (row-major, stride along K is 1) or "col"
(column-major, the ``.t()`` view of a contiguous (K, M) tensor). Given A in the other layout,
``gemv`` makes one copy of A into the variant's layout (``a.contiguous()`` or
``a.t().contiguous().t()``); ``variant=None`` picks a variant that reads A as it comes, so it
never copies. A strided x is made contiguous (one copy of K elements).
"""

from __future__ import annotations

import threading
from typing import NamedTuple

import torch

from cuda_ref import loader
from cuda_ref._arch import SM_90
from cuda_ref.catalog import RECORDS
from kernel_common import (DEFAULT_SM_COUNT, base_phase, cdiv, check_gemv_args, check_variant, dtype_name, hand_over, matrix_layout,
                           check_output, rows_aligned16, sm_count, to_layout, waves_balanced)
from kernel_common.catalog import Rule, always, first_rule, lookup, names, shown_at
from kernel_common.plans import Plan, PlanCache

FILE = "gemv.cu"
DTYPES = (torch.float32, torch.float16, torch.bfloat16)
X_CONST_BYTES = 65536  # the __constant__ buffer of gemv.cu
CHUNK = 1024           # coalesced_shared: x elements staged per piece (4 KiB of floats)



class _Kernel(NamedTuple):
    template: str  # the instance, over the element type and the lanes, rows and depth below
    lanes: int     # of a row (rows_per_warp: 0, by element size and K: ``_config``); 1 for a thread per row
    threads: int   # a block's
    args: str      # the parameters in ``struct`` codes
    run: str       # how a plan calls it (``_plan``): "plain", "aligned" (+ a flag), "const", "split"


# variant -> its kernel; the layout each reads and the default are in cuda_ref/catalog.py
KERNELS = {
    "warp_per_row": _Kernel("gemv_warp_per_row<{T}, 32, {ROWS}, {DEPTH}, {MIN_BLOCKS}>", 32, 256, "QQQqqqqi",
                            "aligned"),
    "native": _Kernel("gemv_thread_per_row<{T}>", 1, 128, "QQQqqqq", "plain"),
    "coalesced": _Kernel("gemv_thread_per_row<{T}>", 1, 128, "QQQqqqq", "plain"),
    "coalesced_const": _Kernel("gemv_coalesced_const<{T}>", 1, 128, "QQqqqq", "const"),  # x: constant memory
    "coalesced_shared": _Kernel(f"gemv_coalesced_shared<{{T}}, {CHUNK}>", 1, 256, "QQQqqqq", "plain"),
    "rows_per_warp": _Kernel("gemv_warp_per_row<{T}, {LANES}, {ROWS}, {DEPTH}, {MIN_BLOCKS}>", 0, 256, "QQQqqqqi",
                             "aligned"),
    "split_k": _Kernel("gemv_split_k<{T}, {ROWS}, {DEPTH}, {MIN_BLOCKS}>", 0, 256, "QQQQQqqqqqii", "split"),
}
# Twins of the lane-group kernels for row-major A whose rows start off 16 bytes, which ``_plan`` runs
# in place of the variant's own kernel (gemv.cu):
# - "phased" (an "aligned" variant's, x on 16 bytes, rows of GEMV_PHASED_MIN_ROW_BYTES or more:
#   ``reads_phased``): 16-byte loads of A from each row's first boundary on, x's vectors shifted to match;
# - "masked" (rows_per_warp's, shorter rows of MASKED_MIN_ROW_BYTES or more: ``reads_masked``): every
#   element in 16-byte loads, the vectors that cover each row, its neighbours' elements masked off, x
#   staged in shared memory; MASKED_CONFIG its lanes a row, rows a lane group, depth and launch bound
#   (4 blocks an SM: unbounded, NVRTC 13.5 took 125 registers and ran slower than the element loop).
#   H100, same-run A/B against the element loop on the shapes it takes: bf16 1.054x / 1.086x, float32
#   1.126x flushed, geomeans of three draws (docs/decisions/071-cuda-gemv-masked-twin.md).
TWINS = {"phased": "gemv_warp_per_row<{T}, {LANES}, {ROWS}, {DEPTH}, {MIN_BLOCKS}, true>",
         "masked": "gemv_masked<{T}, {LANES}, {ROWS}, {DEPTH}, {MIN_BLOCKS}>"}
MASKED_CONFIG = (16, 4, 1, 4)
# Rows of K <= ROWS_PER_WARP_SHORT_K: 8 lanes a row (1-4 vectors a lane), from MASKED_MIN_ROW_BYTES (rows
# of 8 vectors or more: shorter ones keep the element loop). H100, same-run A/B against the element loop
# on the shapes it takes: float32 1.079x, bf16 1.169x x torch flushed (decision 071).
MASKED_SHORT_CONFIG = (8, 4, 1, 4)
MASKED_MIN_ROW_BYTES = 128
# ... but 16 lanes from rows of 24 vectors (float32 K 96-128), where they read such rows faster than 8
# (arch_sm_90.json, decision 071)
GEMV_MASKED_WIDE_MIN_ROW_BYTES = SM_90["gemv_masked_wide_min_row_bytes"]
MASKED_MAX_K = 2048  # gemv.cu's GEMV_MASKED_MAX_K: x's floats in shared memory
VARIANTS = names(RECORDS, "gemv")
LAYOUT = {v: lookup(RECORDS, "gemv", v).layout for v in VARIANTS}


def _config(variant: str, itemsize: int, K: int) -> tuple[int, int, int, int]:
    """(lanes a row, rows a lane group or block, depth, min blocks) of the instance a variant runs.
    rows_per_warp: up to K = 128 its 8 lanes hold a 32-float row in one 16-byte load each, and
    16-bit rows of the same bytes take 4 (with 8, half the lanes idled at K = 32: 4194304x32 bf16
    ran 0.49x torch.mv); past that, ``ROWS_PER_WARP_WIDE``."""
    if variant == "rows_per_warp" and K > ROWS_PER_WARP_SHORT_K:
        return ROWS_PER_WARP_WIDE
    lanes = KERNELS[variant].lanes or (8 if itemsize == 4 else 4)
    return lanes, ROWS.get(variant, 1), DEPTH.get(variant, 1), MIN_BLOCKS.get(variant, 0)


# Rows a lane group (warp_per_row, rows_per_warp) or a block (split_k) reduces at once, sharing
# each x vector it loads among them; split_k's blocks per SM. From a sweep, H200, x torch.mv
# (docs/decisions/007-gemv-defaults.md): rows_per_warp 4194304x32 1 -> 4 rows 0.87 -> 1.15x bf16, 1.98 ->
# 2.37x fp32 (each lane had one 16-byte load in flight); split_k 64x2097152 (1 row, 8 blocks/SM)
# -> (2 rows, 4 blocks/SM) 0.92 -> 1.04x bf16, 0.84 -> 1.00x fp32 (8 blocks/SM ran two waves);
# warp_per_row stays at 1 row (2 rows: 0.86-1.13x against 1.00-1.10x). split_k's blocks never pass
# SPLIT_BLOCKS_PER_SM per SM: a few blocks past a whole number per SM leave those SMs a last
# round alone (H100, 64x2097152 fp32: 17 pieces, 4.12 blocks an SM, 0.95x; 16 pieces, 3.88, 1.02x;
# `lab/sweep_gemv_split.py --splits`, docs/decisions/007-gemv-defaults.md).
ROWS = {"warp_per_row": 1, "rows_per_warp": 4, "split_k": 2}
# DEPTH: 16-byte vectors a lane loads before using the first (gemv.cu's dot_vectors); MIN_BLOCKS:
# the kernel's launch bound in blocks per SM (0: none), without which ptxas sinks those loads back
# among the FMAs. warp_per_row 4 / 2 (H100, share of copy against one vector at a time with no
# bound, the build nearest the loop before: bf16 4096x14336 0.904 against 0.826, 10240x8192 0.935
# against 0.893, fp32 4096^2 0.848 against 0.775; two rows a warp lost; lab/sweep_gemv_depth.py,
# docs/decisions/007-gemv-defaults.md). split_k gained nothing from
# either (a bound of 2 cut fp32 64x2097152 from 0.97 to 0.89: it runs 4 blocks an SM by design).
DEPTH = {"warp_per_row": 4, "rows_per_warp": 1, "split_k": 2}
MIN_BLOCKS = {"warp_per_row": 2, "rows_per_warp": 0, "split_k": 0}
SPLIT_BLOCKS_PER_SM = 4
# rows_per_warp past K = ROWS_PER_WARP_SHORT_K: 16 lanes a row, 4 rows a lane group (8 a warp), 2
# vectors in flight, 2 blocks an SM: a short row gives a whole warp too few vectors to keep loads in
# flight, so a lane group takes four rows and shares each x vector among them. variant=None takes it
# where K <= GEMV_ROWS_PER_WARP_MAX_K (past it, warp_per_row's one row a warp streams as fast) and its
# 64-row blocks fill GEMV_ROWS_PER_WARP_MIN_FILL of the SMs (fewer blocks leave bandwidth idle);
# the sweeps and figures: docs/decisions/007-gemv-defaults.md, arch_sm_90.json.
ROWS_PER_WARP_SHORT_K = 128
ROWS_PER_WARP_WIDE = (16, 4, 2, 2)
GEMV_ROWS_PER_WARP_MAX_K = SM_90["gemv_rows_per_warp_max_k"]
GEMV_ROWS_PER_WARP_MIN_FILL = SM_90["gemv_rows_per_warp_min_fill"]
GEMV_PHASED_MIN_ROW_BYTES = SM_90["gemv_phased_min_row_bytes"]  # shorter rows: the masked twin or the element loop
# split_k in place of warp_per_row (``_split_balances``): from K of GEMV_SPLIT_MIN_K (GEMV_SPLIT_TAIL_MIN_K
# past one wave), where warp_per_row's blocks fail ``waves_balanced`` (a last wave under
# GEMV_LAST_WAVE_MIN_FILL of the slots, fewer than GEMV_WHOLE_WAVES waves); its 16-bit instance takes
# 56 registers: WPR_BLOCKS_PER_SM blocks of 256 an SM
GEMV_SPLIT_MIN_K, GEMV_SPLIT_WIDE_PIECE = SM_90["gemv_split_min_k"], SM_90["gemv_split_wide_piece"]
GEMV_SPLIT_TAIL_MIN_K = SM_90["gemv_split_tail_min_k"]
GEMV_LAST_WAVE_MIN_FILL, GEMV_WHOLE_WAVES = SM_90["gemv_last_wave_min_fill"], SM_90["gemv_whole_waves"]
WPR_BLOCKS_PER_SM = 4


def masked_config(K: int, itemsize: int) -> tuple[int, int, int, int]:
    """(lanes a row, rows a lane group, depth, min blocks) of rows_per_warp's masked twin at rows of K
    elements of ``itemsize`` bytes."""
    short = K <= ROWS_PER_WARP_SHORT_K and K * itemsize < GEMV_MASKED_WIDE_MIN_ROW_BYTES
    return MASKED_SHORT_CONFIG if short else MASKED_CONFIG


def has_twin(variant: str, twin: str) -> bool:
    return (KERNELS[variant].run == "aligned") if twin == "phased" else variant == "rows_per_warp"


def instance(variant: str, dtype, K: int, twin: str | None = None) -> str:
    """The template instance a variant launches for ``dtype`` and rows of K; ``twin``: its twin of
    that name (``TWINS``), for rows off 16 bytes."""
    if twin is not None and not has_twin(variant, twin):
        raise ValueError(f"variant {variant} has no {twin} twin")
    lanes, rows, depth, min_blocks = (masked_config(K, dtype.itemsize) if twin == "masked"
                                      else _config(variant, dtype.itemsize, K))
    return (TWINS[twin] if twin else KERNELS[variant].template).format(
        T=loader.CTYPE[dtype], LANES=lanes, ROWS=rows, DEPTH=depth, MIN_BLOCKS=min_blocks)


NAME_EXPRESSIONS = tuple(sorted({instance(v, d, k, twin) for v in VARIANTS for twin in (None, *TWINS)
                                 if twin is None or has_twin(v, twin)
                                 for d in DTYPES for k in (1, ROWS_PER_WARP_SHORT_K + 1)}))


# variant=None: the first row that holds (never a variant that needs a copy of A). Measured on an
# H200 (docs/decisions/007-gemv-defaults.md).
RULES = (
    Rule("coalesced_shared", lambda a, x: matrix_layout(a) == "col",
         "column-major A: float32 38% of copy at 32768^2 against coalesced's 26%; all three 96% at 4194304x32"),
    Rule("split_k", lambda a, x: a.shape[0] < 4 * sm_count(a.device) and a.shape[1] >= 4096,
         "fewer than 4 rows an SM, K >= 4096: 64x1048576 0.91x cuBLAS, warp_per_row 0.05x"),
    Rule("rows_per_warp", lambda a, x: a.shape[1] <= 128,
         "K <= 128: 2.2x cuBLAS at 4194304x32, warp_per_row 0.56x"),
    Rule("rows_per_warp", lambda a, x: a.shape[1] <= GEMV_ROWS_PER_WARP_MAX_K and _rpw_fills(a),
         "K <= 1024 where its blocks fill the SMs: 16 lanes a row, 4 rows a lane group; bf16 151936x896 1.05x "
         "torch, warp_per_row 0.71x; rows off 16 bytes 1048576x129 1.89x against 0.64x"),
    Rule("split_k", lambda a, x: _split_balances(a, x),
         "16-bit rows and x on 16 bytes, K >= 4096, where warp_per_row's blocks of 8 rows leave a last wave under "
         "half its slots: 4608x36864 bf16 0.95 of a copy against 0.77, 700x50000 0.79 against 0.50"),
    Rule("split_k", lambda a, x: a.shape[0] * a.shape[1] > 1 << 26 and a.element_size() == 4,
         "float32 past 2^26 elements, a block per ROWS rows: 12345x6789 / 16384^2 / 32768^2 3641 / 4372 / 4601 GB/s "
         "against warp_per_row's 3540 / 4306 / 4401 (16-bit stays: 128256x4096 bf16 1.03x torch against 0.86x)"),
    Rule("warp_per_row", always, "the rest: 2525 against 2401 GB/s at 4096^2, 3706 against 3612 at 8192^2"),
)


def _rpw_fills(a) -> bool:
    M, K = a.shape
    blocks = cdiv(M, rows_per_block("rows_per_warp", a.element_size(), K))
    return blocks >= GEMV_ROWS_PER_WARP_MIN_FILL * sm_count(a.device)


def _split_balances(a, x) -> bool:
    """split_k (2 rows a block, 8 blocks an SM) in place of warp_per_row's long blocks of 8 rows where
    those leave the bandwidth unshared (``waves_balanced`` on its WPR_BLOCKS_PER_SM slots an SM): under
    one wave of them from K = GEMV_SPLIT_MIN_K, past it from GEMV_SPLIT_TAIL_MIN_K (shorter blocks
    refill the last wave soon enough: 6144x4096 and 14336x4096 bf16 ran 0.88 and 0.92x warp_per_row's
    speed on split_k: bench/results/logs/h200-2026-12-04-gemv-waves-first-bfloat16-s233.json.gz). On 68 bf16 shapes of 289-27648 rows and K 1600-76973 (two probes, H200,
    flushed) the picks read 0.987 of each shape's fastest of the two kernels and split counts
    against 0.920 before, worst 0.87 against 0.63 (docs/decisions/007-gemv-defaults.md)."""
    M, K = a.shape
    if not (a.element_size() == 2 and K >= GEMV_SPLIT_MIN_K and rows_aligned16(a) and x.is_contiguous()
            and base_phase(x) == 0):
        return False
    blocks, slots = cdiv(M, rows_per_block("warp_per_row", 2, K)), WPR_BLOCKS_PER_SM * sm_count(a.device)
    return ((blocks < slots or K >= GEMV_SPLIT_TAIL_MIN_K)
            and not waves_balanced(blocks, slots, GEMV_LAST_WAVE_MIN_FILL, GEMV_WHOLE_WAVES))


def pick_variant(a, x) -> str:
    """What ``variant=None`` runs: the first of ``RULES`` that holds."""
    return first_rule(RULES, a, x).variant


def split(M: int, K: int, itemsize: int, sm_count: int) -> tuple[int, int]:
    """split_k's (piece, splits): as many blocks as fit in SPLIT_BLOCKS_PER_SM per SM, each a whole
    number of 16-byte vectors; pieces of at least 4096 elements under a block an SM, and of at
    least GEMV_SPLIT_WIDE_PIECE past it (there one piece ran 1.05-1.25x two at 550-1000 rows)."""
    vec = 16 // itemsize
    blocks = cdiv(M, ROWS["split_k"])
    most = cdiv(K, 4096) if blocks < sm_count else K // GEMV_SPLIT_WIDE_PIECE
    splits = max(1, min(most, SPLIT_BLOCKS_PER_SM * sm_count // blocks))
    piece = cdiv(cdiv(K, splits), vec) * vec
    return piece, cdiv(K, piece)


def plan_launches(variant: str, M: int, K: int, dtype, sm_count: int, twin: str | None = None) -> tuple[loader.Launch, ...]:
    """The instances and geometry a variant launches (one launch each); ``twin``: its twin's of that name."""
    kernel, name = KERNELS[variant], instance(variant, dtype, K, twin)
    if kernel.run == "split":  # a block per ROWS rows and K piece; a row group's last block adds the pieces
        _, splits = split(M, K, dtype.itemsize, sm_count)
        return (loader.Launch(name, (cdiv(M, ROWS[variant]) * splits,), (kernel.threads,), kernel.args),)
    args = "QQQqqq" if twin == "masked" else kernel.args  # (a, x, y, M, K, A's row stride)
    return (loader.Launch(name, (cdiv(M, rows_per_block(variant, dtype.itemsize, K, twin)),), (kernel.threads,), args),)


def rows_per_block(variant: str, itemsize: int, K: int, twin: str | None = None) -> int:
    """Rows a block of a lane-group variant (warp_per_row, rows_per_warp) or its twin reduces."""
    lanes, rows, _, _ = masked_config(K, itemsize) if twin == "masked" else _config(variant, itemsize, K)
    return KERNELS[variant].threads // lanes * rows


def reads_phased(a_laid, x_laid) -> bool:
    """Does an "aligned" variant run its phased twin on these laid-out operands: row-major A
    whose rows do not all start on 16 bytes (each row's offset is taken from its address, so A's
    base need only be element-aligned), x on 16 bytes, rows of GEMV_PHASED_MIN_ROW_BYTES or more?"""
    return (a_laid.stride(1) == 1 and not rows_aligned16(a_laid) and base_phase(x_laid) == 0
            and base_phase(a_laid) % a_laid.element_size() == 0
            and a_laid.shape[1] * a_laid.element_size() >= GEMV_PHASED_MIN_ROW_BYTES)


def reads_masked(a_laid) -> bool:
    """Does rows_per_warp run its masked twin on this laid-out A: row-major, rows that do not all start
    on 16 bytes (A's base element-aligned), of MASKED_MIN_ROW_BYTES or more and shorter than
    GEMV_PHASED_MIN_ROW_BYTES, none overlapping the next (x is read element by element)?"""
    M, K = a_laid.shape
    return (a_laid.stride(1) == 1 and not rows_aligned16(a_laid) and base_phase(a_laid) % a_laid.element_size() == 0
            and K <= MASKED_MAX_K and MASKED_MIN_ROW_BYTES <= K * a_laid.element_size() < GEMV_PHASED_MIN_ROW_BYTES
            and (M == 1 or a_laid.stride(0) >= K))


def twin(variant: str, a_laid, x_laid) -> str | None:
    """The twin (``TWINS``) a variant runs in place of its kernel on these laid-out operands, if any."""
    if has_twin(variant, "masked") and reads_masked(a_laid):
        return "masked"
    return "phased" if has_twin(variant, "phased") and reads_phased(a_laid, x_laid) else None


def launch_for(a, x, variant: str | None = None) -> loader.Launch | None:
    """The launch of a call on these operands (``cuda_ref.launch``), planning nothing (meta tensors
    will do); None where the call launches nothing (M or K of 0)."""
    M, K = a.shape
    if M == 0 or K == 0:
        return None
    variant = variant or pick_variant(a, x)
    layout = LAYOUT[variant]
    # an operand the call copies: the copy's fresh, aligned storage, as a meta tensor (no copy here)
    a_laid = a if matrix_layout(a) == layout else to_layout(a.to("meta"), layout)
    x_laid = x if x.is_contiguous() else x.to("meta").contiguous()
    return plan_launches(variant, M, K, a.dtype, sm_count(a.device), twin(variant, a_laid, x_laid))[0]


def describe(a, x, variant: str | None = None) -> str:
    """What a call runs (results' "config"): the variant and the instance it launches, which names
    a twin, so two runs that differ only there read as different plans (lab/pair_draws.py)."""
    variant = variant or pick_variant(a, x)
    launch = launch_for(a, x, variant)
    return variant if launch is None else f"{variant} {launch.name} grid {launch.grid[0]}"


def _plan(inputs, variant, out) -> Plan:
    """Validate a call and plan it (once per distinct metadata)."""
    a, x = inputs
    check_gemv_args(a, x, dtypes=DTYPES)
    check_variant(variant, VARIANTS, "gemv")
    M, K = a.shape
    if variant is not None and KERNELS[variant].run == "const" and K * a.element_size() > X_CONST_BYTES:
        raise ValueError(f"variant coalesced_const keeps x in {X_CONST_BYTES} bytes of constant memory: "
                         f"K must be <= {X_CONST_BYTES // a.element_size()} for {dtype_name(a.dtype)}, got K={K}")
    check_output(out, (M,), {"a": a, "x": x}, need_cuda=True)
    if M == 0:
        return Plan((M,), a.dtype, a.device, lambda a, x, out: None, ("a", "x"))
    if K == 0:
        return Plan((M,), a.dtype, a.device, lambda a, x, out: out.zero_(), ("a", "x"))
    variant = variant or pick_variant(a, x)
    layout = LAYOUT[variant]
    # The laid-out operands as every call of this plan will see them: a copy has fresh, aligned
    # storage; an operand passed as it is has the alignment its key recorded.
    a_laid, x_laid = to_layout(a, layout), x.contiguous()
    twin_ = twin(variant, a_laid, x_laid)
    sizes = (M, K, *a_laid.stride())
    # (the phased twin's flag: unit stride along K and x on 16 bytes, which reads_phased checked)
    aligned = int(twin_ == "phased" or (rows_aligned16(a_laid) and x_laid.data_ptr() % 16 == 0))
    device = a.device.index
    launches = plan_launches(variant, M, K, a.dtype, sm_count(a.device), twin_)
    kernels = [loader.kernel(FILE, NAME_EXPRESSIONS, launch, device) for launch in launches]

    run = KERNELS[variant].run
    if run == "plain":
        def launch(a, x, out):
            kernels[0](a.data_ptr(), x.data_ptr(), out.data_ptr(), *sizes)
    elif twin_ == "masked":
        def launch(a, x, out):
            kernels[0](a.data_ptr(), x.data_ptr(), out.data_ptr(), *sizes[:3])
    elif run == "aligned":
        def launch(a, x, out):
            kernels[0](a.data_ptr(), x.data_ptr(), out.data_ptr(), *sizes, aligned)
    elif run == "const":
        def launch(a, x, out):
            _launch_const(kernels[0], launches[0].name, a, x, out, sizes, device)
    else:
        piece, splits = split(M, K, a.element_size(), sm_count(a.device))
        groups, device = cdiv(M, ROWS["split_k"]), a.device

        def launch(a, x, out):
            # the pieces' sums and a count a row group in the stream's hand-over pair (no allocation
            # and no second launch a call: decision 007's addendum)
            counts, partial = hand_over(device, groups, M * splits) if splits > 1 else (None, None)
            kernels[0](a.data_ptr(), x.data_ptr(), out.data_ptr(), 0 if partial is None else partial.data_ptr(),
                       0 if counts is None else counts.data_ptr(), *sizes, piece, splits, aligned)

    if a_laid is a and x_laid is x:
        return Plan((M,), a.dtype, a.device, launch, ("a", "x"))
    return Plan((M,), a.dtype, a.device,
                lambda a, x, out: launch(to_layout(a, layout), x.contiguous(), out), ("a", "x"))


_PLANS = PlanCache(_plan)
SOURCES = {FILE: NAME_EXPRESSIONS}  # what the launches compile from (cuda_ref.sources)


def launches(dtype):
    """(variant, Launch, shape) of each variant's launches at the shape its record names, on a GPU
    of ``DEFAULT_SM_COUNT`` SMs (``cuda_ref.launches``)."""
    for name in VARIANTS:
        M, K = shown_at(RECORDS, "gemv", name)
        for launch in plan_launches(name, M, K, dtype, DEFAULT_SM_COUNT):
            yield name, launch, (M, K)


def gemv(a, x, *, variant: str | None = None, out=None):
    """y = A x for A (M, K) and x (K,), accumulated in float32; returns y (M,) of A's dtype.

    ``a`` and ``x``: torch CUDA tensors or CuPy arrays of float32, float16 or bfloat16 (the
    same dtype). The result is of the kind given. See the module docstring for layouts.
    """
    return loader.call(_PLANS, (a, x), ("a", "x"), variant, out)


# x_const is one buffer per instance and device, shared by every caller: two threads (or two streams) copying
# their x into it could each run on the other's x. Copy + launch happen under a lock (in order on
# one stream), and the copy waits for the last kernel that read the buffer, on whatever stream it
# ran (an event). Inside CUDA-graph capture no event is waited on or recorded (an event from
# outside the capture cannot be); the graph's copy and kernel replay in order on its stream.
_const_lock = threading.Lock()
_const_last_use: dict[int, torch.cuda.Event] = {}


def _launch_const(kernel: loader.Kernel, name: str, a, x, out, sizes, device: int) -> None:
    with _const_lock:
        stream = torch.cuda.current_stream(device)
        with torch.cuda.device(device):
            capturing = torch.cuda.is_current_stream_capturing()
        last = _const_last_use.get(device)
        if last is not None and not capturing:
            stream.wait_event(last)
        loader.copy_to_symbol(FILE, NAME_EXPRESSIONS, name, "x_const", x, device)  # (the instance's own buffer)
        kernel(a.data_ptr(), out.data_ptr(), *sizes)
        if not capturing:
            done = torch.cuda.Event()
            done.record(stream)
            _const_last_use[device] = done
