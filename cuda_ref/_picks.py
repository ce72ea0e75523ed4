"""``variant=None``'s measured picks for 16-bit matmuls on Hopper: where the package ships a table
for the GPU's architecture (``picks_<arch>.json`` beside this module, made on a GPU by
``tools/ship_tuning.py tune --backend cuda`` over a grid of model-layer buckets), the variant that
ran fastest at its bucket's point comes before the rule table (``_matmul.RULES``). The rules were
fitted to a few measured points; a bucket's pick was measured inside it.

A bucket: the dtype, which operands are K- or N-major, whether b's rows are 16-byte aligned (an
unaligned b is copied by the tensor-map kernels), and M, N, K each rounded up to a power of two
(at least 16), as Triton's tuning keys. A table: ``{"meta": {...}, "entries": {bucket: variant}}``.
An entry naming anything but one of ``CANDIDATES`` is ignored with one warning.
``CUDA_REF_SHIPPED_PICKS=0`` leaves the table unread: the rules decide.
"""

from __future__ import annotations

import json
import os
import pathlib
import warnings

from kernel_common import bucket, dtype_name, tma_rows

# what a measured pick may name: the 16-bit variants with a bias epilogue (the switch's addmm
# plans on the same pick), each running any shape on Hopper (few_rows_mma a block per 16-64 rows
# of a). Not few_rows, a pass over W each 4 rows: its 1-4 rows are the rules' (measured apart, and
# the grid starts at 12), and past them it ran 0.26-0.37x torch where a table had picked it at 12
# rows (decision 026)
CANDIDATES = ("wgmma_ws", "few_rows_mma")

_tables: dict = {}   # {arch: its entries ({} where none ships or it is unreadable)}
_warned: set = set()


def enabled() -> bool:
    return os.environ.get("CUDA_REF_SHIPPED_PICKS", "1") != "0"


def table_path(arch: str) -> pathlib.Path:
    return pathlib.Path(__file__).with_name(f"picks_{arch}.json")


def bucket_key(dtype_name: str, a_kmajor: bool, b_nmajor: bool, b_aligned: bool, M: int, N: int, K: int) -> str:
    """"bfloat16 ak bn al 256x4096x16384": the bucket of an (M, K) @ (K, N) product."""
    extents = "x".join(map(str, bucket(M, N, K)))
    return f"{dtype_name} {'ak' if a_kmajor else 'am'} {'bn' if b_nmajor else 'bk'} {'al' if b_aligned else 'un'} {extents}"


def key_of(a, b) -> str:
    """The bucket of ``a @ b`` (2-D tensors)."""
    (M, K), N = a.shape, b.shape[1]
    b_nmajor = b.stride(1) == 1
    return bucket_key(dtype_name(a.dtype), a.stride(1) == 1, b_nmajor, tma_rows(b if b_nmajor else b.t()), M, N, K)


def _warn_once(path, problem: str) -> None:
    if (str(path), problem) not in _warned:
        _warned.add((str(path), problem))
        warnings.warn(f"cuda_ref picks {path}: ignored: {problem}", UserWarning, stacklevel=4)


def _entries(arch: str) -> dict:
    if arch not in _tables:
        path = table_path(arch)
        try:
            entries = json.loads(path.read_text()).get("entries", {})
        except FileNotFoundError:
            entries = {}
        except (OSError, ValueError, AttributeError) as e:
            _warn_once(path, f"the whole file, not a table of picks ({e})")
            entries = {}
        _tables[arch] = entries if isinstance(entries, dict) else {}
    return _tables[arch]


def lookup(arch: str, key: str) -> str | None:
    """The measured pick of ``key`` in ``arch``'s table, or None (no table, no entry, read off)."""
    if not enabled():
        return None
    variant = _entries(arch).get(key)
    if variant is None:
        return None
    if variant not in CANDIDATES:
        _warn_once(table_path(arch), f"entry {key!r}: {variant!r} is not one of {', '.join(CANDIDATES)}")
        return None
    return variant


def state(arch: str) -> str:
    """What ``variant=None`` reads on ``arch``, for a results file's meta (compare's "cuda_picks"):
    "off", "none", or the table's entries, date and the results file that checked it."""
    if not enabled():
        return "off"
    try:
        meta = json.loads(table_path(arch).read_text()).get("meta", {})
    except (OSError, ValueError, AttributeError):
        return "none"
    return f"{len(_entries(arch))} entries, {meta.get('date')}, checked by {meta.get('results')}"


def forget() -> None:
    """Drop the tables read (tests point ``table_path`` elsewhere)."""
    _tables.clear()
