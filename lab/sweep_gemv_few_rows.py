"""Triton GEMV over few rows and a long K: ``_gemv_kernel``'s tile (BLOCK_M x BLOCK_K, 4 warps) and
its K piece (the split: pieces of PIECE elements, summed by ``_sum_rows_kernel``) forced, beside
the default, ``split_k``, ``split_k_last`` and torch.mv, L2 flushed, in turns (and those four back
to back); each forced result checked.

Usage (GPU): PYTHONPATH=. python lab/sweep_gemv_few_rows.py [--json OUT]
"""

from __future__ import annotations

import argparse
import json

import torch

import triton_impl
from bench.specs import GemvSpec
from bench.timing import time_interleaved, time_loop
from kernel_common import cdiv
from triton_impl import _gemv as g
from triton_impl._launch import TritonLaunch

# (M, K, dtype): the GEMV draws' few-row, long-K shapes (seeds 1-5) and a few beside them
SHAPES = [(2, 15790, "bfloat16"), (7, 4439, "bfloat16"), (12, 43585, "bfloat16"), (27, 4841, "bfloat16"),
          (60, 7715, "bfloat16"), (85, 13723, "bfloat16"), (32, 6354, "bfloat16"), (128, 16384, "bfloat16"),
          (14, 13931, "float32"), (83, 15614, "float32"), (107, 25485, "float32"), (63, 4147, "float32"),
          (4, 38710, "float16"), (8, 62495, "float16"), (320, 63530, "float16"), (858, 6134, "float16"),
          (512, 8192, "bfloat16"), (1024, 4096, "bfloat16")]
TILES = [(1, 2048), (2, 2048), (4, 2048), (8, 1024), (2, 1024), (4, 1024)]
PIECES = (1, 2, 4)  # a piece: this many BLOCK_K tiles (and K whole: None)


def forced(a, x, bm, bk, piece_tiles):
    """run(out) of the kernel with this tile and K in pieces of piece_tiles * bk (None: whole)."""
    M, K = a.shape
    piece = K if piece_tiles is None else piece_tiles * bk
    piece = cdiv(piece, bk) * bk
    splits = cdiv(K, piece)
    vec = g.vectors(a.stride(0), K, a.element_size())
    main = TritonLaunch(g._gemv_kernel, (cdiv(M, bm), splits), dict(BLOCK_M=bm, BLOCK_K=bk, **vec), dict(num_warps=4))
    if splits == 1:
        return (lambda out: main(a, x, out, M, K, piece, *a.stride(), 1, 0, 0, 0)), 1
    total = TritonLaunch(g._sum_rows_kernel, (cdiv(M, 64),), dict(BLOCK_M=64, BLOCK_S=1 << (splits - 1).bit_length()))

    def run(out):
        partial = torch.empty((M, splits), dtype=torch.float32, device=a.device)
        main(a, x, partial, M, K, piece, *a.stride(), splits, 0, 0, 0)
        total(partial, out, M, splits)
    return run, splits


def sweep(shapes, variants, forced_runs, json_path=None, show=None) -> list:
    """For each (M, K, dtype name) of ``shapes``: torch.mv, the default, each of ``variants`` and
    each forced run of ``forced_runs(a, x)`` (a list of (name, run(out)), each result checked),
    L2 flushed and in turns, and all but the forced back to back; a line each (the ``show``
    fastest forced runs, or all), the rows written to ``json_path``. (lab/sweep_gemv_phased_rows.py
    takes it too.)"""
    rows = []
    print(torch.cuda.get_device_name())
    for M, K, dt in shapes:
        dtype = getattr(torch, dt)
        a = torch.randn(M, K, device="cuda").to(dtype)
        x = torch.randn(K, device="cuda").to(dtype)
        ref = GemvSpec.reference((a, x))
        out = torch.empty(M, device="cuda", dtype=dtype)
        names = ["torch", "default", *variants]
        fns = [lambda: torch.mv(a, x), lambda: triton_impl.gemv(a, x, out=out),
               *(lambda v=v: triton_impl.gemv(a, x, variant=v, out=out) for v in variants)]
        called = len(fns)
        for name, run in forced_runs(a, x):
            out.fill_(float("nan"))
            run(out)
            assert GemvSpec.compare(out, ref, (a, x)).ok, (M, K, dt, name)
            names.append(name)
            fns.append(lambda run=run: run(out))
        times = [t.median_ms * 1e3 for t in time_interleaved(fns, warmup_ms=5, rep_ms=15)]
        t = dict(zip(names, times))
        loop = {n: time_loop(f) * 1e3 for n, f in zip(names[:called], fns[:called])}  # back to back: the host's share
        best = sorted(names[called:], key=t.get)[:show]
        print(f"{M}x{K} {dt} (default {g.pick_variant(a, x)}): " + "; ".join(
            f"{n} {t[n]:.1f} us ({t['torch'] / t[n]:.2f}x)" for n in [*names[:called], *best])
            + "; back to back " + ", ".join(f"{n} {v:.1f}" for n, v in loop.items()), flush=True)
        rows.append({"shape": [M, K], "dtype": dt, "us": t, "loop_us": loop})
    if json_path:
        with open(json_path, "w") as fh:
            json.dump({"device": torch.cuda.get_device_name(), "rows": rows}, fh, indent=1)
    return rows


def forced_tiles(a, x):
    """Each of TILES in pieces of PIECES tiles and with K whole."""
    runs = []
    for bm, bk in TILES:
        for p in (*PIECES, None):
            run, splits = forced(a, x, bm, bk, p)
            runs.append((f"{bm}x{bk} S{splits}", run))
    return runs


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json")
    args = ap.parse_args()
    sweep(SHAPES, ["split_k", "split_k_last"], forced_tiles, args.json, show=4)


if __name__ == "__main__":
    main()
