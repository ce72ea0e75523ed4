"""A variant declared once: the record each backend's catalog (``cuda_ref/catalog.py``,
``triton_impl/catalog.py``) holds for every variant it has, and what is derived from the records.

A record says what a variant is for the people and programs that choose one: its idea (the README's
line), the dtypes and the layout of ``a`` it takes, whether it needs a GPU, and the sizes it is
capped at. From the records come a backend's ``variants(algorithm)`` (the default first), the
harness registry's rows, and the README's variant tables (``markdown_table``; a test keeps the
README equal to it). How a variant launches stays in its algorithm's module.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

# the harness's dtype names (bench/specs.py): "tf32" is float32 tensors under TF32 precision
F32 = ("float32", "tf32")
F16 = ("float16", "bfloat16")
FLOATS = (*F32, *F16)
I8 = ("int8",)
I32 = ("int32",)


@dataclass(frozen=True)
class Variant:
    algorithm: str
    name: str
    idea: str                             # one line: what it adds to the variants before it
    dtypes: tuple[str, ...] | None = None  # the harness's dtype names it takes (None: all the algorithm's)
    layout: str | None = None             # gemv: the layout of a it reads ("row" / "col")
    gpu_only: bool = False                # no CPU path (CUDA's kernels; Gluon has no interpreter)
    default: bool = False                 # the usual choice of variant=None: variants(algorithm)[0]
    max_elems: int | None = None          # the harness skips larger inputs (the one-thread kernel)
    max_k: int | None = None              # ... and longer reductions (x in 64 KiB of constant memory)
    max_m: int | None = None              # ... and more rows of a (the kernels for a few rows)
    shown_at: tuple | None = None         # the shape its launches are described at (else SHOWN_AT's)
    bias: bool = False                    # matmul: its epilogue adds the switch's addmm bias before the one rounding
    # matmul: one launch walks a batch of products (True), or of these dtype names only, each
    # operand's rows on 16 bytes (a walk by tensor descriptors)
    batch: bool | tuple[str, ...] = False


# The shapes ``launches`` (``bench resources``) describes each algorithm's launches at.
SHOWN_AT = {"transpose": (16384, 16384), "gemv": (16384, 16384), "matmul": (4096, 4096, 4096)}
FEW_ROWS_LONG_K = (64, 1 << 20)  # a GEMV split along K is for few rows and a long K


def shown_at(records, algorithm: str, name: str) -> tuple:
    """The shape ``name``'s launches are described at: its record's, else its algorithm's."""
    return lookup(records, algorithm, name).shown_at or SHOWN_AT[algorithm]


def names(records, algorithm: str) -> tuple[str, ...]:
    """The variant names of ``algorithm`` among ``records``: the default first, then in the records'
    order (the walk's). Exactly one record of an algorithm is its default."""
    mine = [r for r in records if r.algorithm == algorithm]
    defaults = [r.name for r in mine if r.default]
    if len(defaults) != 1:
        raise ValueError(f"{algorithm}: one default variant expected, got {defaults}")
    return (defaults[0], *(r.name for r in mine if not r.default))


def lookup(records, algorithm: str, name: str) -> Variant:
    """The record of ``algorithm``'s variant ``name`` (a KeyError when there is none)."""
    for r in records:
        if r.algorithm == algorithm and r.name == name:
            return r
    raise KeyError(f"no {algorithm} variant named {name!r}")


def markdown_table(rows) -> str:
    """The README's variant table over ``(backend, record)`` rows: a layout column where any row has one."""
    rows = list(rows)
    with_layout = any(r.layout for _, r in rows)
    head = "| backend | variant | layout | idea |" if with_layout else "| backend | variant | idea |"
    lines = [head, "|---|---|---|---|" if with_layout else "|---|---|---|"]
    for backend, r in rows:
        cells = [backend, f"`{r.name}`", *([r.layout or ""] if with_layout else []), r.idea]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def check_dtype(records, algorithm: str, variant: str, dtype, every: tuple[str, ...]) -> None:
    """A TypeError where ``variant``'s record does not take ``dtype`` (``every``: the algorithm's
    dtype names, for records that name none), naming the variants that do. float32 goes by torch's
    float32 matmul precision: a record that names "tf32" and not "float32" (a TF32 kernel) takes it
    only where the precision allows TF32; one that names "float32" (exact sums) takes it always."""
    from kernel_common.util import dtype_name, tf32_allowed

    def tf32_only(record) -> bool:  # a TF32 kernel: float32 under TF32 precision only
        return "float32" not in (record.dtypes or every)

    def ok(v) -> bool:
        record = lookup(records, algorithm, v)
        return dtype in torch_dtypes(record, every) and not (
            dtype_name(dtype) == "float32" and tf32_only(record) and not tf32_allowed())
    if not ok(variant):
        record = lookup(records, algorithm, variant)
        shown = ["tf32" if dtype_name(d) == "float32" and tf32_only(record) else dtype_name(d)
                 for d in torch_dtypes(record, every)]
        hint = " (it runs float32 as TF32: torch's float32 matmul precision 'high' or 'medium')" if "tf32" in shown else ""
        others = [v for v in names(records, algorithm) if ok(v)]
        raise TypeError(f"variant {variant} supports {', '.join(shown)} only, got {dtype_name(dtype)}{hint}; "
                        f"use variant=None or one of {', '.join(others)}")


def torch_dtypes(record: Variant, every: tuple[str, ...]) -> tuple:
    """The torch dtypes ``record`` takes (``every``: the algorithm's dtype names, for a record that
    names none), in order, without repeats ("tf32" is float32 tensors)."""
    import torch
    names = record.dtypes or every
    return tuple(dict.fromkeys(getattr(torch, "float32" if n == "tf32" else n) for n in names))


@dataclass(frozen=True)
class Rule:
    """One row of a backend's selection table: ``variant=None`` runs ``variant`` for inputs where
    ``when(*inputs)`` holds and no row before it does (the last row holds always). ``why``: what
    was measured, in a line; the numbers live in the architecture's data file beside the module."""
    variant: str
    when: Callable
    why: str


def always(*inputs) -> bool:
    return True


def first_rule(rules, *inputs) -> Rule:
    """The row of ``rules`` that decides for ``inputs``: the first whose condition holds."""
    return next(r for r in rules if r.when(*inputs))
