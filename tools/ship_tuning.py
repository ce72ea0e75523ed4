"""Tune Triton's matmul over a grid of buckets and write the table a fresh install reads
(``triton_impl/tuned_<arch>.json``, ``triton_impl/_tuning.py``): no program then benchmarks on
first use, and an unseen shape of a model layer finds its bucket tuned. With ``--backend cuda``, the
same grid gives CUDA's measured picks of a variant (``cuda_ref/picks_<arch>.json``, ``cuda_ref/_picks.py``).

The grid: every bucket (N and K rounded up to powers of two) of the layers of ``bench/workloads.py``'s
models, each tuned at the layer of that bucket with the median N * K, times the M buckets from 16 to
16384, each tuned at three quarters of its top (12, 24, 48, ..., 12288: inside the bucket, not at
its edge). Draws (``--size-set dense --seed N``) check the table; their shapes are not its points.

Usage (GPU):
  python tools/ship_tuning.py tune --file T.json [--backend triton|cuda] [--shard I/N] [--dtype bfloat16 tf32] [--layout wt row] [--m 12 24 ...]
      tunes the grid's buckets (shard I of N: buckets I, I + N, ...) into T.json (a tuning file,
      entries kept as each is tuned: a run stopped by its time limit keeps what it did). CUDA: the
      variant each bucket ran fastest with (``cuda_ref/_picks.py``), among those with a bias epilogue
  python tools/ship_tuning.py ship T1.json T2.json ... --results FILE [--same float16=bfloat16] [--max-m 512]
      merges tuning files into the shipped table (its entries stay unless tuned again), keeping
      buckets of at most ``--max-m`` rows (``MAX_M``); ``--same`` copies one dtype's entries for
      another (the same kernels and tile rates: fp16 and bf16 on sm_90), said in the meta
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import sys
import time


# The table holds buckets of at most this many rows. On the same 396 cases (bf16 seed 1, both
# layouts), its configs against the heuristic's ran x1.06 (flushed) / x1.10 (back to back) below 64
# rows and x1.08 / x1.11 at 64-511 rows, but x0.96 / x0.98 at 512-4095 and x0.99 / x1.00 from 4096:
# there a bucket spans twice the rows, and the heuristic's time model sees the shape's waves
# (docs/decisions/025-shipped-tuning-grid.md names the runs).
MAX_M = 512
# The TMA family's buckets stop at 16 rows. Past 64 rows the fitted time model (_matmul_configs.
# _fitted_config) sees each shape's waves and picks within 0.98x of the fastest config (8-fold), where
# this table's entries ran 0.93x (docs/decisions/036-triton-fitted-tma-model.md). And at 17-64 rows
# the narrow rule (_matmul_configs.narrow_config) chooses among tiles of fewer rows than the grid's
# candidates held, flushed as a model's step reads W (docs/decisions/064-narrow-tiles-33-64-rows.md).
MAX_TMA_M = 16


def grid(dtypes, layouts, rows=None) -> list[tuple]:
    """(M, N, K, dtype, layout) of each bucket of the grid (see the module docstring)."""
    from bench import workloads
    from kernel_common import bucket

    layers: dict = {}
    for n, k in workloads.layer_shapes():
        layers.setdefault(bucket(n, k), []).append((n, k))
    middles = [sorted(group, key=lambda s: s[0] * s[1])[len(group) // 2] for _, group in sorted(layers.items())]
    ms = [3 << i for i in range(2, 13)]  # 12 .. 12288: buckets 16 .. 16384
    # the middle rows first, where the heuristic lost most (a run cut short by its time limit
    # leaves the ends, where it ran 0.9-1.1x torch: decision 025)
    ms.sort(key=lambda m: abs(m - 192) / m + abs(m - 192) / 192)
    ms = [m for m in ms if not rows or m in rows]
    # (as a draw caps M: a and c within MAX_ELEMENTS, the weight as its model has it)
    return [(m, n, k, dtype, layout) for m in ms for n, k in middles
            if m <= workloads.MAX_ELEMENTS // max(n, k) for dtype in dtypes for layout in layouts]


def _pick_cuda(shapes, args) -> None:
    """CUDA: per bucket, the fastest of ``cuda_ref._picks.CANDIDATES`` on the grid's point (timed as
    Triton's tuning times configs, ``_tuning.benchmark``: flushed and back to back, in turns, the
    rules' pick kept unless another runs 1.5% faster), written to the file after each bucket."""
    os.environ["CUDA_REF_SHIPPED_PICKS"] = "0"  # the rules' pick is the one to beat
    import torch

    import cupy

    import cuda_ref
    from cuda_ref import _matmul, _picks
    from triton_impl import _tuning

    picks = {}
    for done, (M, N, K, dtype, layout) in enumerate(shapes, 1):
        t = time.perf_counter()
        a = torch.randn(M, K, device="cuda", dtype=getattr(torch, dtype))
        w = torch.randn(N, K, device="cuda", dtype=a.dtype)
        b = w.t() if layout == "wt" else w.t().contiguous()
        c = torch.empty(M, N, device="cuda", dtype=a.dtype)
        rule = _matmul.pick_variant(a, b)
        best = _tuning.benchmark(lambda v: cuda_ref.matmul(a, b, variant=v, out=c), _picks.CANDIDATES, rule)
        picks[_picks.key_of(a, b)] = best
        with open(args.file, "w") as f:
            json.dump({"meta": {"torch": torch.__version__, "cupy": cupy.__version__},
                       torch.cuda.get_device_name(): picks}, f, indent=1)
        print(f"[{done}/{len(shapes)}] {M}x{N}x{K} {dtype} {layout}: {best} (rules: {rule}; "
              f"{time.perf_counter() - t:.1f} s)", flush=True)


def tune_grid(args) -> None:
    if args.backend == "cuda" and "tf32" in args.dtype:
        sys.exit("error: --dtype tf32 tunes Triton only (CUDA's TF32 has one kernel, wgmma_swap: no pick to make)")
    i, n = args.shard
    shapes = grid(args.dtype, args.layout, args.m)[i - 1::n]
    start = time.perf_counter()
    if args.backend == "cuda":
        _pick_cuda(shapes, args)
        print(f"{len(shapes)} buckets picked in {time.perf_counter() - start:.0f} s into {args.file}")
        return
    os.environ["TRITON_IMPL_TUNING_FILE"] = os.path.abspath(args.file)
    os.environ["TRITON_IMPL_SHIPPED_TUNING"] = "0"  # every bucket benchmarked here, none read
    import torch
    import triton

    from bench.specs import MatmulSpec
    from triton_impl import _tuning, tune

    _tuning.TUNE_ROUNDS = args.rounds
    with open(args.file, "w") as f:  # (store() keeps what else the file holds: this meta too)
        json.dump({"meta": {"triton": triton.__version__, "torch": torch.__version__}}, f)
    for done, (M, N, K, dtype, layout) in enumerate(shapes, 1):
        t = time.perf_counter()
        with MatmulSpec.context(dtype):  # tf32: float32 operands, TF32 allowed (its keys say "float32 tf32")
            cfg = tune(M, N, K, dtype=torch.float32 if dtype == "tf32" else getattr(torch, dtype), b_layout=layout)
        print(f"[{done}/{len(shapes)}] {M}x{N}x{K} {dtype} {layout}: {cfg} ({time.perf_counter() - t:.1f} s)",
              flush=True)
    print(f"{len(shapes)} buckets tuned in {time.perf_counter() - start:.0f} s into {args.file}")


def ship(args) -> None:
    from cuda_ref import _picks
    from triton_impl import tuning

    out = args.out or str(_picks.table_path("sm_90") if args.backend == "cuda" else tuning.shipped_path("sm_90"))
    old = json.loads(open(out).read()) if os.path.exists(out) else {"entries": {}, "meta": {}}
    entries, devices = old["entries"], set(old["meta"].get("device", []))  # kept unless tuned again
    # the tuning machine's versions (triton, torch, cupy), from its files (else the table's own)
    versions = {k: old["meta"][k] for k in ("triton", "torch", "cupy") if k in old["meta"]}
    for path in args.files:
        tuned = json.loads(open(path).read())
        versions = tuned.pop("meta", {})
        for device, table in tuned.items():
            devices.add(device)
            entries.update(table)
    entries = {key: e for key, e in entries.items() if int(key.split()[-1].split("x")[0])
               <= (min(args.max_m, MAX_TMA_M) if key.split()[0] == "tma" else args.max_m)}
    for pair in args.same:
        to, frm = pair.split("=")
        entries.update({" ".join(to if word == frm else word for word in key.split()): e
                        for key, e in list(entries.items()) if frm in key.split()})
    table = {"entries": dict(sorted(entries.items())), "meta": {
        **versions, "device": sorted(devices), "grid": "tools/ship_tuning.py grid()",
        "same": args.same, "max_m": args.max_m, "max_tma_m": MAX_TMA_M, "results": args.results, "note": args.note,
        "date": datetime.datetime.now(datetime.timezone.utc).date().isoformat(),
        "command": "python tools/ship_tuning.py " + " ".join(sys.argv[1:])}}
    with open(out, "w") as f:
        json.dump(table, f, indent=1, sort_keys=True)
    print(f"{len(entries)} entries from {len(args.files)} files in {out}")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="command", required=True)
    t = sub.add_parser("tune", help="tune the grid's buckets (a shard of them) into a tuning file")
    t.add_argument("--file", required=True, help="the tuning file to write (TRITON_IMPL_TUNING_FILE; CUDA: its picks)")
    t.add_argument("--backend", default="triton", choices=("triton", "cuda"),
                   help="triton: tile configs (triton_impl/tuned_sm_90.json); cuda: variants (cuda_ref/picks_sm_90.json)")
    t.add_argument("--shard", default="1/1", type=lambda s: tuple(map(int, s.split("/"))), help="I/N")
    t.add_argument("--dtype", nargs="+", default=["bfloat16"], choices=("float16", "bfloat16", "tf32"),
                   help="tf32: Triton only (CUDA's TF32 has one kernel, wgmma_swap)")
    t.add_argument("--layout", nargs="+", default=["wt", "row"], choices=("wt", "row"))
    t.add_argument("--m", nargs="+", type=int, help="only these M of the grid (12, 24, ..., 12288)")
    t.add_argument("--rounds", type=int, default=2, help="rounds of the candidates in turns (_tuning.TUNE_ROUNDS)")
    s = sub.add_parser("ship", help="merge tuning files into the shipped table")
    s.add_argument("files", nargs="*", help="tuning files (none: the table as it is, filtered again)")
    s.add_argument("--backend", default="triton", choices=("triton", "cuda"), help="which table (as tune's)")
    s.add_argument("--max-m", type=int, default=MAX_M,
                   help=f"leave out buckets of more rows (default {MAX_M}: see MAX_M)")
    s.add_argument("--results", required=True, help="the results file of the draw that checked the table")
    s.add_argument("--same", action="append", default=[], metavar="TO=FROM", help="e.g. float16=bfloat16")
    s.add_argument("--note", help="what the results file checked, where it is not this table as written")
    s.add_argument("--out", help="default: the package's table for sm_90")
    args = p.parse_args()
    tune_grid(args) if args.command == "tune" else ship(args)


if __name__ == "__main__":
    main()
