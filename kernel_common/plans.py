"""Plan once, launch many: the plan cache both backends share.

Everything a call derives from its inputs' metadata (the checks, the variant and its config, the
grid, the kernel handle, the alignment flags) is worked out once per distinct metadata and kept
as a ``Plan``. A repeat call builds the key (dtypes, shapes, strides, devices, pointer alignment,
the variant, ``out``'s metadata), finds the plan and launches: no checks are repeated except the
one that depends on addresses rather than metadata (``out`` must not alias an input).

A call whose arguments are not all plain tensors (a list, a sparse tensor, a CuPy array) cannot
build a key; it goes the slow way, which validates and raises the documented error.

The kernels read memory as it lies, so what torch keeps beside it is resolved first: an input
with the negative bit (``z.conj().imag`` is such a view) or a zero tensor (``_efficientzerotensor``:
no memory at all) is replaced by one copy that holds its values (``resolve_lazy``); an ``out``
with either is refused.
"""

from __future__ import annotations

import functools
import math
import threading
import weakref
from typing import Callable

import torch

from kernel_common.ops import call_op, needs_op
from kernel_common.util import is_fake, make_room
from kernel_common.validate import (batch_view, check_batched_matmul_args, check_variant, extent, extents_meet,
                                   fold_batch, matmul_out_dtype, meta_like, check_output, overlaps)

# Bad input never reaches the cache: building its key raises one of these, or its plan does.
_KEY_ERRORS = (AttributeError, TypeError, RuntimeError, ValueError)


# The dtypes some function takes: only these are resolved (torch cannot negate or fill every
# dtype, and a dtype no function takes is refused by validation, with its TypeError)
_RESOLVABLE = frozenset((torch.float16, torch.bfloat16, torch.float32, torch.float64, torch.int8, torch.int16,
                         torch.int32, torch.int64, torch.uint8))


def _lazy(t) -> bool:
    """Do ``t``'s values differ from its memory: the negative bit, or a zero tensor (no memory)?
    (The conjugate bit needs a complex dtype, which every function refuses.)"""
    return t.is_neg() or t._is_zerotensor()


def resolve_lazy(inputs: tuple) -> tuple:
    """``inputs`` with every tensor whose values are not its memory (``_lazy``) replaced by a copy
    that holds them: the one copy such an input costs. Others (and anything that is not a tensor,
    left to validation) pass as they are; a call with no such input pays two method calls a tensor
    (0.47 us for two tensors on the CI machine's CPU, of a call's 20-50 us of host time).
    (torch.compile's tracer cannot record these queries, and needs no answer: the op it records
    reaches the kernels through the dispatcher, which resolves both.)"""
    if torch.compiler.is_compiling():
        return inputs
    for t in inputs:
        if isinstance(t, torch.Tensor) and _lazy(t) and t.dtype in _RESOLVABLE:
            return tuple(_materialize(t) if isinstance(t, torch.Tensor) and _lazy(t) and t.dtype in _RESOLVABLE
                         else t for t in inputs)
    return inputs


def _materialize(t: torch.Tensor) -> torch.Tensor:
    if t._is_zerotensor():
        return torch.zeros(t.shape, dtype=t.dtype, device=t.device).requires_grad_(t.requires_grad)
    return t.resolve_neg()  # (a differentiable op: a gradient flows back through it)


def check_out_memory(out) -> None:
    """``out`` is written where it lies: refuse one whose values are not its memory."""
    if isinstance(out, torch.Tensor) and not torch.compiler.is_compiling() and _lazy(out):
        what = "the negative bit (a view such as z.conj().imag)" if out.is_neg() else "no memory (a zero tensor)"
        raise ValueError(f"out must be a tensor whose memory holds its values, got one with {what}; "
                         "pass a plain tensor and copy it where needed")


def check_out_apart(out: torch.Tensor, inputs: tuple) -> None:
    """``out`` shares no memory with an input that has memory (a zero tensor has none)."""
    for t in inputs:
        if isinstance(t, torch.Tensor) and not t._is_zerotensor() and overlaps(out, t):
            raise ValueError("out must not alias an input (it would be written while it is read)")


def is_plain_copy(shape) -> bool:
    """Is the transpose of an (R, C) or (B, R, C) array of this shape its elements in the order
    they are: a side of 1, whose transposed view is contiguous wherever the array is? (A shape:
    each ``a.shape`` builds a new object.)"""
    return shape[-1] == 1 or shape[-2] == 1


def transpose_as_copy(a, variant, out, dtypes, device_ok: bool):
    """The transpose of ``a`` where it is a plain copy (``is_plain_copy``), as torch's one device
    copy (a cudaMemcpyAsync where ``a`` is contiguous), for a call that asks nothing more: a plain
    tensor of a taken dtype on a device the backend runs (``device_ok``), no ``out``, the default
    or ``narrow`` variant (the variant=None pick for such shapes), no autograd. Else None: the call
    goes the plan's way, whose narrow plan copies too. A launch of the narrow kernel costs a
    side-of-1 call 12-18 us of host time where torch's clone costs 1.6-3.3 (H200 host, back to
    back; docs/decisions/032-transpose-plain-copy.md). The copy resolves a negative bit and
    materializes a zero tensor, so such views need no check; under torch.compile the view and copy
    are traced as torch's own ops. Its own cost: the cheapest checks first, the shape read once,
    the view as ``mT`` (no argument parsing, as ``transpose(-1, -2)`` has): 2.8-3.0 us a call on a
    CPU where torch's own takes 2.5-2.7 (decision 032)."""
    if out is not None or not device_ok or type(a) is not torch.Tensor or variant not in (None, "narrow"):
        return None
    shape = a.shape
    if not 2 <= len(shape) <= 3 or not is_plain_copy(shape) or a.dtype not in dtypes or a.requires_grad:
        return None
    t = a.mT
    return t.clone() if t.is_contiguous() else t.contiguous()  # (clone keeps a contiguous view's layout)


def copy_plan(shape, a) -> Plan:
    """The narrow variant's plan where the transpose is a plain copy: one device copy into out, of
    the flat elements where a is contiguous (torch's copy of the transposed view took 5x its
    contiguous clone's time at (13, 1) float16, flushed: decision 032)."""
    if a.is_contiguous():
        return Plan(shape, a.dtype, a.device, lambda a, out: out.view(-1).copy_(a.view(-1)), ("a",))
    return Plan(shape, a.dtype, a.device, lambda a, out: out.copy_(a.transpose(-1, -2)), ("a",))


def tensor_key(t: torch.Tensor) -> tuple:
    """What a plan may depend on in a tensor, and none of its data: dtype, shape, strides,
    device, where its base sits within 16 bytes (vector and Triton's divisibility paths)."""
    return (t.dtype, t.shape, t.stride(), t.device, t.data_ptr() & 15, t.requires_grad)


class Plan:
    """What one call of a given metadata does: the result's shape, dtype and device, and
    ``run(*inputs, out)``, which launches the kernels (or does nothing for an empty result).
    ``traceable``: torch.compile can record its launches (``kernel_common/ops.py``)."""

    __slots__ = ("shape", "dtype", "device", "run", "names", "traceable", "_like", "_extents", "_out_extents")

    def __init__(self, shape, dtype, device, run: Callable, names: tuple[str, ...], traceable: bool = True):
        self.shape, self.dtype, self.device, self.run, self.names = tuple(shape), dtype, device, run, names
        self.traceable = traceable
        # one element seen as the result's shape: empty_like of it is a new contiguous result, and
        # costs about 3 us of host time where torch.empty(shape, dtype=, device=) costs 5 (H200 host)
        self._like = (torch.empty(1, dtype=dtype, device=device).expand(self.shape) if all(self.shape)
                      else torch.empty(self.shape, dtype=dtype, device=device))
        self._extents, self._out_extents = None, {}  # (output: extent of each input and of out)

    def output(self, out, inputs) -> torch.Tensor:
        """A new result tensor, or ``out`` once checked not to alias an input (its metadata was
        checked when the plan was made)."""
        if out is None:
            return torch.empty_like(self._like)  # (of a view that overlaps itself: contiguous)
        # the extents come from metadata, fixed for the plan's inputs (its key) and kept per shape
        # and stride of out: computed on every call, two of them took ~10 us of a matmul's host time
        if self._extents is None:
            self._extents = [extent(t) for t in inputs]
        key = (out.shape, out.stride())
        e_out = self._out_extents.get(key)
        if e_out is None:
            e_out = self._out_extents[key] = extent(out)
        p = out.data_ptr()  # (the plan's key puts out on the inputs' device: no device check)
        for name, t, e in zip(self.names, inputs, self._extents):
            if extents_meet(p, e_out, t.data_ptr(), e):
                raise ValueError(f"out must not alias the input {name}")
        return out

    def bound(self) -> Callable:
        """``call(*inputs) -> result``: a new result and the launch, in one frame, for a caller that
        has already matched the inputs to this plan by a key of its own (the aten switch)."""
        like, run, empty_like = self._like, self.run, torch.empty_like

        def call(*inputs):
            out = empty_like(like)
            run(*inputs, out)
            return out
        return call


def through_aligned(plan: Plan) -> Plan:
    """``plan`` for an ``out`` whose base is not 16-byte aligned: kernels that store c in pieces of
    several elements from an aligned base (CUDA's tensor-core kernels) write c to an aligned tensor
    first, copied into ``out`` (one copy, where a caller passes such an out)."""
    inner = plan.run

    def run(*args):
        *inputs, out = args
        c = torch.empty(plan.shape, dtype=plan.dtype, device=out.device)
        inner(*inputs, c)
        out.copy_(c)
    return Plan(plan.shape, plan.dtype, plan.device, run, plan.names, plan.traceable)


class _Table(dict):
    """A dict that a ``PlanCache`` can hold weakly (a plain dict cannot be), in a set by identity."""
    __hash__ = object.__hash__
    __eq__ = object.__eq__


_making = threading.local()  # memo: what ``per_plan`` functions gave while this thread makes a plan


def per_plan(fn):
    """``fn`` (a pure function of its arguments and its module's constants) remembered while one
    plan is made (``PlanCache`` makes each inside such a scope): a selection that asks for one
    derived value from several places computes it once a plan (CUDA's wgmma_ws tile width was asked
    for six times a plan, each a run of its split model: a shape a process had not seen, a
    mixture-of-experts row count, paid it on the host of its call). Outside a plan it computes
    afresh, so that constants changed between plans (tests patch them) are read again. Tensor
    arguments are told apart by identity."""
    @functools.wraps(fn)
    def remembered(*args):
        memo = getattr(_making, "memo", None)
        if memo is None:
            return fn(*args)
        # (a tensor by its id, never compared by value; the memo holds the arguments, so that a
        # temporary one's id is not another's later in the plan)
        key = (fn, *[id(a) if isinstance(a, torch.Tensor) else a for a in args])
        if key not in memo:
            memo[key] = fn(*args), args
        return memo[key][0]
    return remembered


GRAIN = 16  # every tile's rows and K step in either backend is a multiple of this


def grain(n: int) -> int:
    """An extent past 64 taken up to a multiple of ``GRAIN``: the rows (or K) a choice of tiles sees.
    Tile counts and K steps are the same at n and grain(n); only the modelled bytes of at most 15
    rows differ (docs/decisions/043-choices-by-tile-rows.md)."""
    return n if n <= 64 else -(-n // GRAIN) * GRAIN


_BY_MODULE: dict = {}  # id of a module's globals -> [their ids as last seen, its by_tiles memos]
PLANS_KEPT = 4096  # the plans a PlanCache keeps, and the choices a by_tiles memo keeps, before make_room


def by_tiles(fn):
    """``fn(M, N, K, *rest)``, a choice of tiles (a pure function of its arguments, none a tensor,
    and its module's globals), taken at ``grain(M)``, N, ``grain(K)``, and kept across plans: a
    shape the process has not seen (a mixture's expert rows, new every step) then finds its
    choice made for a neighbour with the same tiles, where each model run cost its call 50-100 us
    of host time. Kept while the module's globals are the objects they were (checked once a plan:
    a constant or function a test patches empties it); outside a plan it computes afresh."""
    kept: dict = {}
    names = fn.__globals__
    module = _BY_MODULE.setdefault(id(names), [None, []])  # (its globals as last seen, its choices' memos)
    module[1].append(kept)

    @functools.wraps(fn)
    def chosen(M, N, K, *rest):
        args = (grain(M), N, grain(K), *rest)
        memo = getattr(_making, "memo", None)
        if memo is None:
            return fn(*args)
        if id(names) not in memo:  # (once a plan and module: are the globals they read still those?)
            memo[id(names)] = None
            now = tuple(map(id, names.values()))
            if now != module[0]:
                for choices in module[1]:
                    choices.clear()
                module[0] = now
        value = kept.get(args, kept)
        if value is kept:
            make_room(kept, PLANS_KEPT)
            value = kept[args] = fn(*args)
        return value
    return chosen


def row_group_choice(plans: "PlanCache", choose: Callable, a, b, out, *extra):
    """``choose(a, b, out, *extra)``: variant=None's choice for a 2-D a @ b. Past 64 rows, each group
    of 16 row counts (65-80, 81-96, ...: the same tiles in every variant, ``grain``), and of K past
    64 likewise, takes the choice made on views of its first row count and K (a[:M0, :K0],
    b[:K0], out[:M0]), once for the group (``plans.choices``, emptied with the plans): a new row
    count in a seen group (a mixture's expert rows, new every step; the tokens that are K in the
    weight's gradient) makes no selection, and the choice does not depend on which came first
    (docs/decisions/043-choices-by-tile-rows.md). ``extra``: what else the choice reads (hashable).
    (Where a's or b's strides hold K, each K is a key of its own.)"""
    M, K = a.shape
    if M <= 64 or is_fake(a) or is_fake(b):  # (a traced call's fakes have no address)
        return choose(a, b, out, *extra)
    key = (grain(M), grain(K), a.dtype, a.stride(), a.device, a.data_ptr() & 15, b.dtype, b.shape[1], b.stride(),
           b.device, b.data_ptr() & 15, None if out is None else (out.dtype, out.stride(), out.data_ptr() & 15),
           *extra, plans.extra_key() if plans.extra_key is not None else None)
    kept = plans.choices.get(key)
    if kept is None:
        m0, k0 = (n if n <= 64 else grain(n) - GRAIN + 1 for n in (M, K))
        kept = choose(a[:m0, :k0], b[:k0], None if out is None else out[:m0], *extra)
        with plans._lock:
            make_room(plans.choices, plans.max_plans)
            plans.choices[key] = kept
    return kept


class PlanCache:
    """Plans by call metadata, for one public function.

    ``make(inputs, variant, out) -> Plan`` validates the call (raising the documented errors) and
    plans it; it runs once per key. ``extra_key()`` adds process state a plan depends on (torch's
    float32 matmul precision). Most programs meet few distinct shapes; one that meets more than
    ``max_plans`` (a plan holds its kernel handles and a one-element tensor on its device) drops
    its oldest plans rather than grow without bound (``make_room``).
    """

    def __init__(self, make: Callable, extra_key: Callable | None = None, max_plans: int = PLANS_KEPT):
        self._make = make
        self.max_plans = max_plans
        self.extra_key = extra_key
        self._plans: dict = {}
        self.choices: dict = {}  # variant=None's choices by group of row counts (``row_group_choice``)
        self._tables = weakref.WeakSet()  # callers' keys to plans' bound calls (``table``), each while its caller lives
        self._lock = threading.Lock()
        self.op = None  # the torch op calls that need autograd or tracing go through (ops.register)

    def get(self, inputs, variant, out) -> Plan:
        """The plan of this call, made (and the call validated) on the first call of its key. A
        traced call (fakes: no address for a key, and a plan must not keep a fake) plans afresh."""
        if type(inputs[0]) is not torch.Tensor and is_fake(inputs[0]):  # (plain tensors: no call)
            return self._made(inputs, variant, out)
        try:  # the key: tensor_key of each tensor, inlined, since this runs on every call
            key = (variant, *[(t.dtype, t.shape, t.stride(), t.device, t.data_ptr() & 15, t.requires_grad)
                              for t in inputs])
            if out is not None:
                key += (tensor_key(out), torch.is_grad_enabled())
            if self.extra_key is not None:
                key += (self.extra_key(),)
            plan = self._plans.get(key)
        except _KEY_ERRORS:  # not all plain tensors (or an unhashable variant): no key, no cache
            key = plan = None
        if plan is None:
            plan = self._made(inputs, variant, out)  # validates: bad input raises here
            if key is not None:
                with self._lock:
                    make_room(self._plans, self.max_plans)
                    self._plans.setdefault(key, plan)
        return plan

    def _made(self, inputs, variant, out) -> Plan:
        """A new plan, made inside one ``per_plan`` scope (a plan made inside another's shares it)."""
        outer = getattr(_making, "memo", None)
        _making.memo = {} if outer is None else outer
        try:
            return self._make(inputs, variant, out)
        finally:
            _making.memo = outer

    def _planned(self, inputs, variant, out):
        """The plan of a call whose inputs (and ``out``) are plain tensors holding their values,
        none needing autograd, once its key has been planned; else None (``__call__``'s full way
        decides). The key is ``get``'s, built in the same pass as the checks: one walk over the
        inputs where resolve_lazy, check_out_memory, needs_op and get took one each (0.7 us less
        host time a repeat call without out, of 4.8, on the CI machine's CPU)."""
        key = [variant]
        grad = None
        for t in inputs:
            if type(t) is not torch.Tensor or t.is_neg() or t._is_zerotensor():
                return None
            if t.requires_grad and (grad := torch.is_grad_enabled() if grad is None else grad):
                return None
            key.append((t.dtype, t.shape, t.stride(), t.device, t.data_ptr() & 15, t.requires_grad))
        if out is not None:
            if type(out) is not torch.Tensor or out.is_neg() or out._is_zerotensor():
                return None
            key += ((out.dtype, out.shape, out.stride(), out.device, out.data_ptr() & 15, out.requires_grad),
                    torch.is_grad_enabled() if grad is None else grad)
        if self.extra_key is not None:
            key.append(self.extra_key())
        return self._plans.get(tuple(key))

    def __call__(self, inputs, variant, out):
        """The call itself: its plan (validating and planning a new key), its result tensor, the
        launch. Returns the result. A call that needs autograd or is being traced by torch.compile
        goes through the function's torch op instead (``kernel_common.ops``)."""
        if not torch.compiler.is_compiling():
            try:
                plan = self._planned(inputs, variant, out)
            except _KEY_ERRORS:
                plan = None
            if plan is not None:
                out = plan.output(out, inputs)
                plan.run(*inputs, out)
                return out
        given, inputs = inputs, resolve_lazy(inputs)
        if out is not None:
            check_out_memory(out)
            if inputs is not given:  # (the plan checks out against the copies: here, the caller's memory)
                check_out_apart(out, given)
        if self.op is not None and needs_op(inputs):
            # the direct path's errors first, where the op's dispatch would raise others: its schema
            # for a variant that is not a string, torch's negation for a dtype no function takes
            unresolved = not torch.compiler.is_compiling() and any(
                isinstance(t, torch.Tensor) and _lazy(t) for t in inputs)
            if unresolved or (variant is not None and not isinstance(variant, str)):
                self._made(inputs, variant, out)
            return call_op(self.op, inputs, variant, out)
        return self.launch(self.get(inputs, variant, out), inputs, out)

    def direct(self, inputs, variant, out):
        """The call on the direct path (the op's implementation, and the backward's calls)."""
        inputs = resolve_lazy(inputs)
        return self.launch(self.get(inputs, variant, out), inputs, out)

    @staticmethod
    def launch(plan: Plan, inputs, out):
        """``plan``'s result tensor (or ``out``, checked), its kernels launched on ``inputs``."""
        out = plan.output(out, inputs)
        plan.run(*inputs, out)
        return out

    def table(self) -> dict:
        """A dict for a caller's own key -> a plan's bound call (``Plan.bound``), emptied whenever
        the plans are (a tuned config replaces them), as its calls hold them. The caller bounds
        its size by ``max_plans``; the cache holds it weakly (a program may make many callers)."""
        table = _Table()
        self._tables.add(table)
        return table

    def clear(self) -> None:
        with self._lock:
            self._plans.clear()
            self.choices.clear()
            for table in list(self._tables):
                table.clear()

    def __len__(self) -> int:
        return len(self._plans)


class PlanOnce:
    """Another algorithm's kernel inside a plan (matmul's transposed copy of an operand), the same in
    both backends: the other cache's plan is looked up (and the call validated) on the first call
    only, then run directly. The owning plan's key fixes the operand's metadata, so that one plan
    fits every later call; a public call would validate and look it up again each time."""
    __slots__ = ("plans", "plan")

    def __init__(self, plans: PlanCache):
        self.plans, self.plan = plans, None

    def __call__(self, *inputs, out=None):
        plan = self.plan
        if plan is None:
            plan = self.plan = self.plans.get(inputs, None, out)
        if out is None:
            out = plan.output(None, inputs)
        plan.run(*inputs, out)
        return out


def batched_plan(a, b, variant, out, *, plans, dtypes, variants, check_dtype: Callable, need_cuda: bool,
                 walk: Callable) -> Plan:
    """A batched matmul's plan, a (..., M, K) @ b (..., K, N) with ``torch.matmul``'s broadcasting
    into (..., M, N): validated (``check_dtype(variant, dtype)``: the backend's refusal of a dtype
    its variant does not take, as its 2-D plan makes it), empty cases done, then one 2-D product
    (``plans``: the backend's 2-D plan cache) where the batch folds into one (``fold_batch``), else
    ``walk(a, b, variant, batch, out)``'s run(a, b, out) over the (..., M, N) out, or its refusal (a
    ValueError)."""
    batch = check_batched_matmul_args(a, b, dtypes=dtypes)
    check_variant(variant, variants, "matmul")
    if variant is not None:
        check_dtype(variant, a.dtype)
    M, K, N, count = a.shape[-2], a.shape[-1], b.shape[-1], math.prod(batch)
    shape, dtype = (*batch, M, N), matmul_out_dtype(a.dtype)
    if 0 in shape:
        run = lambda *args: None  # noqa: E731
    elif K == 0:  # empty sums
        run = lambda a, b, out: out.zero_()  # noqa: E731
    elif (two_d := fold_batch(meta_like(a), meta_like(b), batch)) is not None:
        rows = two_d[0].shape, two_d[0].stride()  # (a's metadata fixes them: the plan's key)

        def run(a, b, out):  # one product of every row of the batch
            plans((batch_view(a, batch).as_strided(*rows), batch_view(b, batch)[0]), variant, out.view(count * M, N))
    else:
        run = walk(a, b, variant, batch, out)
    check_output(out, shape, {"a": a, "b": b}, need_cuda=need_cuda, dtype=dtype)  # (devices last, as every check)
    return Plan(shape, dtype, a.device, run, ("a", "b"), traceable=False)
