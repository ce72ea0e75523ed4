"""Fuzz suite of strange views (issue 50): every public function of every backend, on inputs
that are not what a kernel expects to see, against the contract the README promises.

Each example draws an algorithm's shape (every extent <= 40: the interpreter is slow), a dtype
(usually one the backend takes, else any torch dtype at all), for each operand an input kind,
a variant (None, a named one, or junk) and an ``out`` kind, then makes one call and checks:

* input kinds: plain contiguous, a permuted view (``.t()``), a slice with steps, a storage
  offset, ``expand`` (stride 0), an overlapping ``as_strided`` view; any of those with the
  negative bit (``torch._neg_view``), ``z.conj().imag`` of a complex64 ``z`` (float32 with the
  negative bit), a zero tensor (``torch._efficientzerotensor``), a meta tensor; and optionally
  ``requires_grad=True`` (float dtypes);
* the outcome: the right answer, or a ``TypeError`` / ``ValueError``. Any other exception fails.
  A refusal is required (a result fails) for: an unsupported dtype or mixed dtypes (TypeError),
  a meta input, mismatched extents, a junk variant, an ``out`` with the negative bit, an ``out``
  that is a zero tensor, an ``out`` aliasing an input, an ``out`` with an input that requires
  grad (ValueError). A named variant may refuse any input (it cannot take every dtype or
  machine); ``variant=None`` with nothing to refuse must give the result;
* the right answer: a float64 reference computed by torch on the CPU from the resolved values
  (``resolve_neg()``, zeros for a zero tensor), compared by ``bench.specs.SPECS[alg].compare``
  (exact for transpose and integer matmul); a float result the spec's check rejects gets one
  second look with the same tolerance scaled per element by its own sum of |products| (the
  forward error bound: random signs can cancel an output far below max |ref|);
* guards: every input's whole storage (bytes), values and metadata are snapshotted before the
  call and must be unchanged after it; ``out`` is a view into a larger buffer of poison (NaN,
  INT_MIN; random bytes for odd dtypes) whose canary bytes around ``out`` must be unchanged,
  and every element of ``out`` must be overwritten (poison fails the comparison); a refusal
  writes nothing at all.

Tests: ``test_fuzz_{transpose,gemv,matmul}[backend]`` draw the examples above (hypothesis);
``test_every_dtype`` and ``test_every_kind`` sweep, once each whatever the fuzz draws, every torch
dtype (plain, with the negative bit, as a zero tensor) and every input kind, out kind, named
variant and junk variant, collecting every case that breaks the contract before failing;
``test_kinds_make_what_they_claim`` checks the input makers. On a GPU a CUDA fault (the context
is lost for the rest of the process) stops the run with the call that made it.

Knobs (environment): ``FUZZ_EXAMPLES`` examples per fuzz test (default 40 on a CPU, 25 on a GPU);
``FUZZ_SEED`` an integer seed for a random (not derandomized) run, so long GPU runs explore new
cases (default: derandomized, the same examples every run); ``FUZZ_COUNTS`` a JSON file each test
appends its counts to (examples, results, each clean error, the seed), e.g.
``FUZZ_EXAMPLES=2000 FUZZ_SEED=7 FUZZ_COUNTS=fuzz_counts.json pytest tests/test_fuzz.py``.
The counts are also printed (``pytest -s`` shows them). An H100 run's (seed 2026, 60 examples a
fuzz test, both backends, every test passing): ``bench/results/h100-2026-11-28-fuzz-counts.json``;
a CPU run's of Triton under the interpreter (seeds 21-25, 3000 examples each per function, 45,000
calls, all passing): ``bench/results/cpu-2026-11-28-fuzz-counts.json``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import importlib
import json
import math
import os
import time
from collections import Counter

import hypothesis
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import cuda_ref
import triton_impl
from bench.specs import SPECS, int_reference
from kernel_common import INT_BY_SIZE, matmul_out_dtype
from conftest import HAS_GPU, within_forward_bound

DEV = "cuda" if HAS_GPU else "cpu"
BACKENDS = {"triton": triton_impl, **({"cuda": cuda_ref} if HAS_GPU else {})}
ALGORITHMS = ("transpose", "gemv", "matmul")

N_EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES", 25 if HAS_GPU else 40))
SEED = os.environ.get("FUZZ_SEED")
COUNTS_PATH = os.environ.get("FUZZ_COUNTS")
SETTINGS = settings(max_examples=N_EXAMPLES, deadline=None, derandomize=SEED is None, database=None,
                    print_blob=True, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                                            HealthCheck.large_base_example])

# Every dtype torch defines (float8s, sub-byte ints, quantized ones, bits, ...): the ones a
# function does not take must be refused with a TypeError, however odd (filtered below to those
# this torch can hold on DEV at all: random bytes viewed as the dtype).
ALL_DTYPES = tuple(sorted({v for v in vars(torch).values() if isinstance(v, torch.dtype)}, key=str))
# dtypes whose inputs get well-behaved values (floats in +-[0.25, 1), integers over their range);
# every other dtype is random bytes (no function takes one, so no value is ever compared)
NICE = (torch.float16, torch.bfloat16, torch.float32, torch.float64, torch.int8, torch.int32)
JUNK_VARIANTS = (3, ["x"], "nope", "")
PHYSICAL = ("contig", "perm", "step", "offset", "expand", "overlap")
KINDS = (*PHYSICAL, "conj_imag", "zero", "meta")
OUT_KINDS = ("none", "plain", "neg", "zero", "alias")
CLEAN = (TypeError, ValueError)


def backend_dtypes(backend: str, alg: str) -> tuple:
    """The dtypes a backend's algorithm takes, from its module (``triton_impl._matmul.DTYPES``)."""
    return importlib.import_module(f"{BACKENDS[backend].__name__}._{alg}").DTYPES


# ---- counts --------------------------------------------------------------------------------
class Counts:
    """What one test's examples did: a result, each clean error (required or a named variant's
    own refusal), by algorithm and backend. Printed, and appended to $FUZZ_COUNTS when set."""

    def __init__(self, test: str, alg: str, backend: str):
        self.test, self.alg, self.backend = test, alg, backend
        self.c = Counter()
        self.t0 = time.perf_counter()

    def add(self, *keys):
        for k in keys:
            self.c[k] += 1

    def report(self):
        entry = {"test": self.test, "algorithm": self.alg, "backend": self.backend, "device": DEV,
                 "gpu": torch.cuda.get_device_name() if HAS_GPU else None,
                 "seed": int(SEED) if SEED is not None else "derandomized", "max_examples": N_EXAMPLES,
                 "examples": self.c["examples"], "results": self.c["result"],
                 "errors": {k: self.c[k] for k in ("TypeError", "ValueError")},
                 "refusals_required": self.c["required"], "named_variant_refused": self.c["variant_refused"],
                 "detail": dict(sorted((k, v) for k, v in self.c.items() if ":" in k)),
                 "seconds": round(time.perf_counter() - self.t0, 2),
                 "torch": torch.__version__, "hypothesis": hypothesis.__version__}
        print(f"\nFUZZ {json.dumps(entry)}")
        if COUNTS_PATH:
            entries = []
            if os.path.exists(COUNTS_PATH):
                with open(COUNTS_PATH) as f:
                    entries = json.load(f)
            entries.append(entry)
            tmp = f"{COUNTS_PATH}.tmp{os.getpid()}"
            with open(tmp, "w") as f:
                json.dump(entries, f, indent=1)
            os.replace(tmp, COUNTS_PATH)


# ---- memory and values ---------------------------------------------------------------------
def random_bytes(n: int, gen: torch.Generator) -> torch.Tensor:
    return torch.randint(0, 256, (n,), generator=gen, dtype=torch.uint8).to(DEV)


def buffer(n: int, dtype: torch.dtype, gen: torch.Generator) -> torch.Tensor:
    """A 1-D buffer of ``n`` elements on DEV: poison (NaN, INT_MIN) for NICE dtypes, random bytes
    for any other dtype."""
    if dtype in NICE:
        fill = float("nan") if dtype.is_floating_point else torch.iinfo(dtype).min
        return torch.full((n,), fill, dtype=dtype, device=DEV)
    return random_bytes(n * dtype.itemsize, gen).view(dtype)


def _holdable(dtype: torch.dtype) -> bool:
    try:
        buffer(4, dtype, torch.Generator().manual_seed(0))[1:3].view(2, 1)
        return True
    except (RuntimeError, TypeError):
        return False


ALL_DTYPES = tuple(d for d in ALL_DTYPES if _holdable(d))


def nice_values(shape, dtype: torch.dtype, gen: torch.Generator) -> torch.Tensor:
    if dtype.is_floating_point:
        v = torch.rand(shape, generator=gen) * 0.75 + 0.25
        v *= torch.randint(0, 2, shape, generator=gen) * 2 - 1
        return v.to(dtype).to(DEV)
    info = torch.iinfo(dtype)
    return torch.randint(info.min, info.max, shape, generator=gen, dtype=torch.int64).to(dtype).to(DEV)


def fill(view: torch.Tensor, gen: torch.Generator) -> torch.Tensor:
    """Values into ``view`` (NICE dtypes; others keep their random bytes)."""
    if view.dtype in NICE and view.numel():
        view.copy_(nice_values(tuple(view.shape), view.dtype, gen))
    return view


def storage_bytes(t: torch.Tensor) -> torch.Tensor:
    s = t.untyped_storage()
    return torch.empty(0, dtype=torch.uint8, device=t.device).set_(s, 0, (s.nbytes(),)).clone()


def value_bits(t: torch.Tensor):
    """``t``'s values as integers of its width (so NaN compares equal), or None for an odd dtype."""
    if t.dtype not in NICE:
        return None
    return t.detach().resolve_neg().contiguous().view(INT_BY_SIZE[t.element_size()]).clone()


def has_memory(t: torch.Tensor) -> bool:
    return t.device.type != "meta" and not t._is_zerotensor()


# ---- input kinds ---------------------------------------------------------------------------
@dataclasses.dataclass
class Operand:
    """How one input is made. ``kind`` is one of KINDS; the rest are its layout's parameters (each
    kind reads those it needs), ``neg``: the negative bit on top, ``rg``: requires_grad."""
    kind: str = "contig"
    neg: bool = False
    rg: bool = False
    tail: int = 1          # poison elements past the end
    off: int = 1           # storage offset (offset, overlap)
    steps: tuple = (1, 1, 1)
    offs: tuple = (0, 0, 0)
    perm: tuple = (1, 0)   # the memory order of a "perm" view (2-D: .t())
    mask: tuple = (True, False, False)    # expanded dims
    strides: tuple = (1, 1, 1)            # overlap's strides (each 0..2: rows share memory)
    conj_t: bool = False   # conj_imag of a transposed complex tensor


def operand_strategy(ndim: int):
    # (kind weights: the physical kinds first, the lazy ones and meta less often)
    return st.builds(
        Operand,
        kind=st.sampled_from(PHYSICAL * 5 + ("conj_imag",) * 3 + ("zero",) * 3 + ("meta",)),
        neg=st.sampled_from((False, False, True)), rg=st.sampled_from((False,) * 5 + (True,)),
        tail=st.integers(0, 3), off=st.integers(1, 5),
        steps=st.tuples(*[st.integers(1, 3)] * ndim), offs=st.tuples(*[st.integers(0, 2)] * ndim),
        perm=st.permutations(range(ndim)).map(tuple), mask=st.tuples(*[st.booleans()] * ndim),
        strides=st.tuples(*[st.integers(0, 2)] * ndim), conj_t=st.booleans())


def make_physical(shape: tuple, dtype: torch.dtype, o: Operand, gen: torch.Generator) -> tuple[torch.Tensor, str]:
    """A tensor of ``shape`` and ``dtype`` on DEV laid out as ``o.kind`` says (the negative bit
    and requires_grad come later). Returns it and the kind made: a kind a dtype cannot make
    (a zero tensor of a quantized dtype, ...) falls back to contig."""
    try:
        return _make_physical(shape, dtype, o, gen), o.kind
    except (RuntimeError, TypeError, NotImplementedError):
        if o.kind == "contig":
            raise
        return _make_physical(shape, dtype, dataclasses.replace(o, kind="contig"), gen), "contig"


def _make_physical(shape, dtype, o: Operand, gen):
    nd, numel = len(shape), math.prod(shape)
    if o.kind == "contig":
        return fill(buffer(numel + o.tail, dtype, gen)[:numel].view(shape), gen)
    if o.kind == "offset":
        return fill(buffer(o.off + numel + o.tail, dtype, gen)[o.off:o.off + numel].view(shape), gen)
    if o.kind == "perm":
        perm = o.perm[:nd] if sorted(o.perm[:nd]) == list(range(nd)) else tuple(reversed(range(nd)))
        if nd == 2 or perm == tuple(range(nd)):
            perm = tuple(reversed(range(nd)))  # never the identity; 1-D: the same tensor
        inner = _make_physical(tuple(shape[i] for i in perm), dtype, Operand(tail=o.tail), gen)
        if nd == 2:
            return inner.t()
        return inner.permute(tuple(sorted(range(nd), key=lambda j: perm[j])))
    if o.kind == "step":
        full = tuple(off + n * s + 1 for n, s, off in zip(shape, o.steps, o.offs))
        buf = buffer(math.prod(full), dtype, gen).view(full)
        return fill(buf[tuple(slice(off, off + n * s, s) for n, s, off in zip(shape, o.steps, o.offs))], gen)
    if o.kind == "expand":
        mask = o.mask[:nd] if any(o.mask[:nd]) else (True,) + (False,) * (nd - 1)
        small = tuple(1 if m else n for n, m in zip(shape, mask))
        return _make_physical(small, dtype, Operand(tail=o.tail), gen).expand(shape)
    if o.kind == "overlap":
        strides = o.strides[:nd]
        span = o.off + (sum((n - 1) * s for n, s in zip(shape, strides)) + 1 if numel else 0)
        buf = buffer(span + o.tail, dtype, gen)
        fill(buf[o.off:span], gen)
        return buf.as_strided(shape, strides, o.off)
    if o.kind == "zero":
        return torch._efficientzerotensor(shape, dtype=dtype, device=DEV)
    if o.kind == "meta":
        return torch.empty(shape, dtype=dtype, device="meta")
    if o.kind == "conj_imag":  # (float32 only; make_input sends other dtypes elsewhere)
        cshape = (*shape[:-2], shape[-1], shape[-2]) if o.conj_t and nd >= 2 else shape  # (its last two swapped back below)
        imag = nice_values(cshape, dtype, gen)
        z = torch.complex(torch.full(cshape, float("nan"), device=DEV), imag)  # real parts: poison
        t = z.conj().imag
        t = t.transpose(-1, -2) if o.conj_t and nd >= 2 else t
        assert t.is_neg() and t.dtype == torch.float32
        return t
    raise AssertionError(o.kind)


def finish(t: torch.Tensor, neg: bool, rg: bool) -> torch.Tensor:
    """The negative bit and requires_grad on top of a made tensor (rg only where torch allows it)."""
    if neg:
        t = torch._neg_view(t)
        assert t.is_neg()
    if rg and (t.dtype.is_floating_point or t.dtype.is_complex):
        try:
            t = t.detach().requires_grad_(True)
        except RuntimeError:
            pass
    return t


@dataclasses.dataclass
class Input:
    t: torch.Tensor
    kind: str
    neg: bool

    @property
    def memory(self) -> bool:
        return has_memory(self.t)

    def describe(self) -> str:
        t = self.t
        if t.device.type == "meta":
            where = "meta"
        elif t._is_zerotensor():
            where = "zerotensor"
        else:
            where = f"offset={t.storage_offset()} storage={t.untyped_storage().nbytes()}B"
        return (f"{self.kind}{'+neg' if t.is_neg() else ''}{'+rg' if t.requires_grad else ''} "
                f"shape={tuple(t.shape)} stride={t.stride()} {where} dtype={t.dtype}")


def make_input(shape, dtype, o: Operand, gen) -> Input:
    kind, neg = o.kind, o.neg
    if kind == "conj_imag" and dtype != torch.float32:
        o, kind, neg = dataclasses.replace(o, kind="contig"), "contig", True  # the negative bit by hand
    if kind in ("zero", "meta", "conj_imag"):
        neg = False  # (conj_imag has the bit already: one more would clear it)
    t, kind = make_physical(tuple(shape), dtype, dataclasses.replace(o, kind=kind), gen)
    return Input(finish(t, neg, o.rg), kind, neg)


def rehome(inp: Input, out_dtype, out_shape) -> torch.Tensor:
    """Move ``inp`` onto a storage big enough to hold an ``out`` that starts at its first element,
    and return that ``out`` (contiguous, ``out_dtype``): an out aliasing an input."""
    t = inp.t
    isz, osz = t.element_size(), out_dtype.itemsize
    first = t.storage_offset() * isz  # (strides are never negative here)
    at = first // osz
    old = storage_bytes(t)
    big = torch.zeros(max(old.numel(), (at + math.prod(out_shape)) * osz), dtype=torch.uint8, device=DEV)
    big[:old.numel()] = old
    moved = torch.empty(0, dtype=t.dtype, device=DEV).set_(big.untyped_storage(), t.storage_offset(),
                                                           t.shape, t.stride())
    inp.t = finish(moved, t.is_neg(), t.requires_grad)
    return torch.empty(0, dtype=out_dtype, device=DEV).set_(big.untyped_storage(), at, out_shape,
                                                            contiguous_strides(out_shape))


def contiguous_strides(shape) -> tuple:
    strides, step = [], 1
    for n in reversed(shape):
        strides.append(step)
        step *= max(n, 1)
    return tuple(reversed(strides))


# ---- one call, checked ---------------------------------------------------------------------
@dataclasses.dataclass
class Case:
    alg: str
    backend: str
    shapes: list            # one per operand
    dtypes: list            # one per operand
    operands: list          # Operand per operand
    variant: object = None
    out_kind: str = "none"
    pad: tuple = (1, 1)     # out's canary elements before and after it
    seed: int = 0
    mismatch: bool = False  # (extents that do not fit: shapes made so)
    alias_to: int = 0       # the input an "alias" out overlaps (else the first one with memory)


def out_shape_of(alg, shapes):
    if alg == "transpose":
        s = shapes[0]
        return (*s[:-2], s[-1], s[-2])
    if alg == "gemv":
        return (shapes[0][0],)
    return (shapes[0][0], shapes[1][1])


def reference(alg, resolved):
    """float64 (or exact) reference from resolved CPU values: the spec's."""
    if alg == "transpose":
        return resolved[0].transpose(-1, -2).contiguous()
    if alg == "gemv":
        return SPECS["gemv"].reference(resolved)
    a, b = resolved
    return a.double() @ b.double() if a.dtype.is_floating_point else int_reference(a, b)


def matches(alg, got, ref, resolved, counts) -> tuple[bool, str]:
    spec = SPECS[alg]
    if alg == "transpose" or not ref.dtype.is_floating_point:
        cmp = spec.compare(got, ref, resolved)
        return cmp.ok, cmp.detail
    if got.dtype != resolved[0].dtype:
        return False, f"got dtype {got.dtype}, expected {resolved[0].dtype}"
    cmp = spec.compare(got, ref, resolved)
    if cmp.ok:
        return True, ""
    if within_forward_bound(alg, got, ref, resolved):  # (cancellation: compare scales by max |ref|)
        counts.add("detail:cancellation_second_look")
        return True, ""
    return False, cmp.detail


def run_case(case: Case, counts: Counts) -> None:
    alg, backend = case.alg, case.backend
    fn = getattr(BACKENDS[backend], alg)
    gen = torch.Generator().manual_seed(case.seed)
    inputs = [make_input(s, d, o, gen) for s, d, o in zip(case.shapes, case.dtypes, case.operands)]
    dtype = case.dtypes[0]
    takes = backend_dtypes(backend, alg)
    named = isinstance(case.variant, str) and case.variant in BACKENDS[backend].variants(alg)
    junk = case.variant is not None and not named

    # out: none, a poisoned view inside canaries, its negative view, a zero tensor, or an alias
    out_dtype = matmul_out_dtype(dtype) if alg == "matmul" else dtype
    oshape = out_shape_of(alg, case.shapes)
    onumel = math.prod(oshape)
    out_kind, out, buf = case.out_kind, None, None
    if out_kind == "alias":
        target = next((i for i in (inputs[case.alias_to % len(inputs)], *inputs) if i.memory and i.t.numel()), None)
        if target is None or onumel == 0:
            out_kind = "plain"  # nothing to overlap: an alias cannot be made
        else:
            out = rehome(target, out_dtype, oshape)
    if out_kind in ("plain", "neg"):
        lo, hi = case.pad
        buf = buffer(lo + onumel + hi, out_dtype, gen)
        out = buf[lo:lo + onumel].view(oshape)
        out = torch._neg_view(out) if out_kind == "neg" else out
    elif out_kind == "zero":
        try:
            out = torch._efficientzerotensor(oshape, dtype=out_dtype, device=DEV)
        except RuntimeError:  # (no zero tensor of a quantized dtype): a plain out instead
            out_kind, buf = "plain", buffer(sum(case.pad) + onumel, out_dtype, gen)
            out = buf[case.pad[0]:case.pad[0] + onumel].view(oshape)

    # the refusals the contract requires
    reasons = {"dtype": any(d not in takes for d in case.dtypes), "mixed_dtypes": len(set(case.dtypes)) > 1,
               "meta": any(i.t.device.type == "meta" for i in inputs), "mismatch": case.mismatch,
               "junk_variant": junk, f"out_{out_kind}": out_kind in ("neg", "zero", "alias"),
               # out= cannot carry a gradient (as torch's out= functions)
               "out_with_grad": out is not None and any(i.t.requires_grad for i in inputs)}
    reasons = [r for r, on in reasons.items() if on]
    required = {TypeError if r in ("dtype", "mixed_dtypes") else ValueError for r in reasons}
    allowed = (required | {TypeError, ValueError}) if named else required

    where = (f"{backend}.{alg}(variant={case.variant!r}, out={out_kind}"
             f"{f' shape={oshape} dtype={out_dtype}' if out is not None else ''}) on "
             + "; ".join(f"[{n}] {i.describe()}" for n, i in enumerate(inputs)) + f" (seed={case.seed})")

    # snapshots: every input's storage, values, metadata; the out buffer
    def meta_of(t):
        return (tuple(t.shape), t.stride(), t.dtype, t.device, t.is_neg(), t._is_zerotensor(), t.requires_grad,
                t.storage_offset() if t.device.type != "meta" else None)
    before = [(meta_of(i.t), storage_bytes(i.t) if i.memory else None, value_bits(i.t) if i.memory else None)
              for i in inputs]
    buf_before = storage_bytes(buf) if buf is not None else None

    ctx = SPECS["matmul"].context("float32") if alg == "matmul" and dtype == torch.float32 else contextlib.nullcontext()
    counts.add("examples", f"detail:out={out_kind}", *(f"detail:required={r}" for r in reasons),
               f"detail:variant={'named' if named else 'junk' if junk else 'None'}",
               f"detail:dtype={'taken' if dtype in takes else 'refused'}",
               *(f"detail:input={i.kind}{'+neg' if i.t.is_neg() else ''}" for i in inputs))
    with ctx:
        try:
            got, err = fn(*[i.t for i in inputs], variant=case.variant, out=out), None
            if HAS_GPU:
                torch.cuda.synchronize()  # (a kernel's fault shows here, on the call that made it)
        except CLEAN as e:
            got, err = None, e
        except Exception as e:  # noqa: BLE001 - any other type breaks the contract
            if HAS_GPU and "CUDA error" in str(e):
                # the process's CUDA context is lost: every later call would fail the same way
                pytest.exit(f"{where}: raised {type(e).__name__}: {e}; the CUDA context is unusable, "
                            "stopping the run", returncode=1)
            raise AssertionError(f"{where}: raised {type(e).__name__}: {e}") from e

        # inputs are never written (nor the memory around them)
        for n, (i, (m, sb, vb)) in enumerate(zip(inputs, before)):
            assert meta_of(i.t) == m, f"{where}: input [{n}]'s metadata changed"
            if sb is not None:
                assert torch.equal(storage_bytes(i.t), sb), f"{where}: input [{n}]'s storage was written"
            if vb is not None:
                assert torch.equal(value_bits(i.t), vb), f"{where}: input [{n}]'s values changed"

        if err is not None:
            counts.add(type(err).__name__)
            if buf is not None:
                assert torch.equal(storage_bytes(buf), buf_before), f"{where}: raised {err!r} after writing out"
            if required:
                counts.add("required")
                assert isinstance(err, tuple(allowed)), \
                    f"{where}: raised {type(err).__name__} ({err}), expected {sorted(e.__name__ for e in allowed)}"
                return
            assert named, \
                f"{where}: variant={case.variant!r} refused an input it must take: {type(err).__name__}: {err}"
            counts.add("variant_refused")
            return

        counts.add("result")
        assert not required, (f"{where}: returned a tensor where {sorted(e.__name__ for e in required)} was "
                              f"required")
        assert isinstance(got, torch.Tensor), f"{where}: returned {type(got).__name__}"
        if out is not None:
            assert got is out, f"{where}: did not return out"
            lo = case.pad[0] * out_dtype.itemsize
            hi = lo + onumel * out_dtype.itemsize
            after = storage_bytes(buf)
            assert torch.equal(after[:lo], buf_before[:lo]) and torch.equal(after[hi:], buf_before[hi:]), \
                f"{where}: wrote outside out (the canaries changed)"
        assert got.device.type == DEV and not got.is_neg() and not got._is_zerotensor(), \
            f"{where}: result on {got.device}, is_neg={got.is_neg()}, zerotensor={got._is_zerotensor()}"
        assert tuple(got.shape) == oshape and got.dtype == out_dtype and got.is_contiguous(), \
            f"{where}: result shape {tuple(got.shape)} dtype {got.dtype} strides {got.stride()}"
        resolved = [torch.zeros(i.t.shape, dtype=i.t.dtype) if i.t._is_zerotensor()
                    else i.t.detach().resolve_neg().cpu() for i in inputs]
        ok, detail = matches(alg, got.detach().cpu(), reference(alg, resolved), resolved, counts)
        assert ok, f"{where}: wrong result: {detail}"


# ---- the fuzz tests ------------------------------------------------------------------------
def extent(upper: int = 40):
    """0, 1 and the edges of 32-wide tiles more often than chance would pick them."""
    return st.one_of(st.sampled_from([0, 1, 2, 31, 32, 33]), st.integers(0, upper))


def draw_case(data, alg: str, backend: str) -> Case:
    takes = backend_dtypes(backend, alg)
    rare = data.draw(st.integers(0, 4), label="any_dtype") == 0
    dtype = data.draw(st.sampled_from(ALL_DTYPES if rare else takes), label="dtype")
    which = data.draw(st.sampled_from(("none",) * 10 + ("named",) * 8 + ("junk",) * 2), label="which_variant")
    variant = None if which == "none" else data.draw(
        st.sampled_from(BACKENDS[backend].variants(alg) if which == "named" else JUNK_VARIANTS), label="variant")
    out_kind = data.draw(st.sampled_from(("none",) * 6 + ("plain",) * 6 + ("neg", "zero", "alias")), label="out")
    pad = data.draw(st.tuples(st.integers(0, 3), st.integers(1, 3)), label="pad")
    seed = data.draw(st.integers(0, 2 ** 16), label="seed")
    odd = data.draw(st.sampled_from(("",) * 28 + ("mixed", "mismatch")), label="odd")
    if alg == "transpose":
        batch = data.draw(st.sampled_from((None, None, None, 1, 2, 3)), label="batch")
        R, C = data.draw(extent(), label="R"), data.draw(extent(), label="C")
        shapes = [(R, C) if batch is None else (batch, R, C)]
        odd = ""
    else:
        M, K = data.draw(extent(), label="M"), data.draw(extent(), label="K")
        kx = K + 1 if odd == "mismatch" else K
        if alg == "gemv":
            shapes = [(M, K), (kx,)]
        else:
            shapes = [(M, K), (kx, data.draw(extent(), label="N"))]
    dtypes = [dtype] * len(shapes)
    if odd == "mixed":
        dtypes[1] = data.draw(st.sampled_from([d for d in ALL_DTYPES if d != dtype]), label="dtype2")
    operands = [data.draw(operand_strategy(len(s)), label=f"operand{n}") for n, s in enumerate(shapes)]
    if any(o.kind == "meta" for o in operands) and data.draw(st.booleans(), label="rg_beside_meta"):
        operands = [o if o.kind == "meta" else dataclasses.replace(o, rg=True) for o in operands]
    alias_to = data.draw(st.integers(0, len(shapes) - 1), label="alias_to") if out_kind == "alias" else 0
    return Case(alg, backend, shapes, dtypes, operands, variant, out_kind, pad, seed, mismatch=odd == "mismatch",
                alias_to=alias_to)


def fuzz(alg: str, backend: str):
    counts = Counts(f"test_fuzz_{alg}", alg, backend)

    @SETTINGS
    @given(data=st.data())
    def example(data):
        run_case(draw_case(data, alg, backend), counts)

    if SEED is not None:
        example = hypothesis.seed(int(SEED))(example)
    example()
    counts.report()


@pytest.mark.parametrize("backend", list(BACKENDS))
def test_fuzz_transpose(backend):
    fuzz("transpose", backend)


@pytest.mark.parametrize("backend", list(BACKENDS))
def test_fuzz_gemv(backend):
    fuzz("gemv", backend)


@pytest.mark.parametrize("backend", list(BACKENDS))
def test_fuzz_matmul(backend):
    fuzz("matmul", backend)


# ---- sweeps: every case the contract names, once each, whatever the fuzz drew ----------------
def base_case(alg, backend, dtype, batch=None, **kw) -> Case:
    shapes = {"transpose": [(5, 7) if batch is None else (batch, 5, 7)], "gemv": [(5, 7), (7,)],
              "matmul": [(5, 7), (7, 6)]}[alg]
    operands = [Operand() for _ in shapes]
    return Case(alg, backend, shapes, [dtype] * len(shapes), operands, **kw)


class Sweep:
    """Runs cases, keeps every contract failure (not just the first), fails at the end."""

    def __init__(self, test, alg, backend):
        self.counts, self.failures, self.seed = Counts(test, alg, backend), [], 0

    def run(self, case: Case, **operands) -> None:
        """``case`` with operands replaced ({"a0": Operand, ...}: by position)."""
        self.seed += 1
        case.seed = self.seed
        for pos, o in operands.items():
            case.operands[int(pos[1:])] = o
        try:
            run_case(case, self.counts)
        except AssertionError as e:
            self.failures.append(str(e).splitlines()[0])

    def finish(self):
        self.counts.report()
        assert not self.failures, f"{len(self.failures)} cases broke the contract:\n" + "\n".join(self.failures[:25])


@pytest.mark.parametrize("backend", list(BACKENDS))
@pytest.mark.parametrize("alg", ALGORITHMS)
def test_every_dtype(alg, backend):
    """Every torch dtype, plain, into a canaried out, with the negative bit and as a zero tensor
    (each operand): the right answer or a TypeError."""
    sweep = Sweep("test_every_dtype", alg, backend)
    npos = 1 if alg == "transpose" else 2
    for dtype in ALL_DTYPES:
        for out_kind in ("none", "plain"):
            sweep.run(base_case(alg, backend, dtype, out_kind=out_kind))
        for pos in range(npos):
            for o in (Operand(neg=True), Operand(kind="zero")):
                sweep.run(base_case(alg, backend, dtype), **{f"a{pos}": o})
    sweep.finish()


@pytest.mark.parametrize("backend", list(BACKENDS))
@pytest.mark.parametrize("alg", ALGORITHMS)
def test_every_kind(alg, backend):
    """For each of the backend's dtypes, once each: every input kind with and without the negative
    bit on each operand (meta also beside a requires_grad operand); every out kind beside plain,
    negative-bit, conj-imag, overlapping and broadcast inputs; every named variant and junk, with
    and without requires_grad."""
    sweep = Sweep("test_every_kind", alg, backend)
    npos = 1 if alg == "transpose" else 2
    for dtype in backend_dtypes(backend, alg):
        floating = dtype.is_floating_point
        for batch in ((None, 3) if alg == "transpose" else (None,)):
            for pos in range(npos):
                for kind in KINDS:
                    for neg in (False, True):
                        o = Operand(kind=kind, neg=neg, steps=(2, 3, 2), offs=(1, 2, 1), perm=(2, 0, 1),
                                    mask=(pos == 0, pos == 1, False), strides=(1, 1, 1))
                        others = {}
                        if kind == "meta" and floating and npos > 1:
                            others = {f"a{1 - pos}": Operand(rg=True)}
                        sweep.run(base_case(alg, backend, dtype, batch), **{f"a{pos}": o}, **others)
        for out_kind in OUT_KINDS:
            for pos in range(npos):
                for o in (Operand(), Operand(neg=True), Operand(kind="conj_imag"), Operand(kind="perm"),
                          Operand(kind="overlap", strides=(1, 1, 1)), Operand(kind="expand")):
                    sweep.run(base_case(alg, backend, dtype, out_kind=out_kind, alias_to=pos), **{f"a{pos}": o})
        for variant in (*BACKENDS[backend].variants(alg), *JUNK_VARIANTS):
            for rg in ((False, True) if floating else (False,)):
                sweep.run(base_case(alg, backend, dtype, variant=variant), a0=Operand(rg=rg))
    sweep.finish()


def test_kinds_make_what_they_claim():
    """The input kinds have the strides and bits they are named for."""
    gen = torch.Generator().manual_seed(0)
    f32 = torch.float32
    t = make_input((3, 4), f32, Operand(kind="perm"), gen).t
    assert t.stride() == (1, 3)
    t = make_input((2, 3, 4), f32, Operand(kind="perm", perm=(2, 0, 1)), gen).t
    assert t.shape == (2, 3, 4) and t.stride(2) == 6 and t.stride(0) == 3
    t = make_input((3, 4), f32, Operand(kind="step", steps=(2, 3), offs=(1, 2)), gen).t
    assert t.stride() == (2 * (2 + 4 * 3 + 1), 3) and t.storage_offset() == 1 * 15 + 2
    t = make_input((3, 4), f32, Operand(kind="expand", mask=(True, False)), gen).t
    assert t.stride() == (0, 1)
    t = make_input((3, 4), f32, Operand(kind="overlap", strides=(1, 1), off=2), gen).t
    assert t.stride() == (1, 1) and t.storage_offset() == 2 and not torch.isnan(t).any()
    t = make_input((3, 4), f32, Operand(kind="conj_imag"), gen).t
    assert t.is_neg() and t.dtype == f32 and t.stride() == (8, 2) and not torch.isnan(t.resolve_neg()).any()
    t = make_input((3, 4), torch.int8, Operand(kind="offset", neg=True, rg=True), gen).t
    assert t.is_neg() and t.storage_offset() == 1 and not t.requires_grad
    t = make_input((3, 4), torch.bfloat16, Operand(kind="zero", rg=True), gen).t
    assert t._is_zerotensor() and t.requires_grad
    assert make_input((3, 4), f32, Operand(kind="meta"), gen).t.device.type == "meta"
    inp = make_input((3, 4), torch.int8, Operand(kind="step", steps=(1, 2), offs=(1, 1)), gen)
    out = rehome(inp, torch.int32, (3, 3))
    from kernel_common import overlaps
    assert overlaps(out, inp.t) and out.is_contiguous() and out.dtype == torch.int32
