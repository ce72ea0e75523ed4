"""Every TMA config and K split of ``triton_impl.matmul`` on a list of shapes, beside torch's: the
data behind the heuristic's choice (``triton_impl/_matmul_configs.py``, ``_heuristic_config``).

Each (shape, layout): torch's time, the heuristic's pick, then every 16-bit TMA candidate with
K whole and split 2, 3 or 4 ways (where ``_splits`` would allow that many), timed by
``bench.timing.time_gpu`` (median, L2 flushed). Writes JSON; prints the best few per shape.

Usage (GPU): python lab/sweep_tma_configs.py [--set models|steps|few|draw|odd|odd-tma|all] [--dtype tf32] [--json FILE]
    [--shapes M N K ...] [--all-tiles] [--in-turns] [--stream-k] [--narrow] [--rep-ms MS] [--max-mnk X]
(past 64 rows the configs are those the fitted model chooses from, ``_FITTED_16BIT``;
``--all-tiles`` is kept for the commands decision 036 records;
``--in-turns``: a shape's torch, default and configs timed in turns, as decision 036's sweeps ran;
``--stream-k``: each config with stream-K (``STREAM_K``) instead, where it shares tiles ("sk": its
programs and shared tiles); ``--two-part``: only the tiles of two parts (192 wide: ``N_TAIL``; the
shipped ones and ``TWO_PART_TRIED``);
the JSON is rewritten after each shape, so a run cut short keeps what it timed)
("few": the models set's M <= 64, the few-row ladder's shapes; "splits": up to ``--count`` drawn shapes
(``--seeds``, every few by rows) past 64 rows whose pick by the fitted model splits K; "draw": 16 shapes of ``--rows LO HI``
rows (default 64-511, where the shipped table ran 0.73-0.83x torch; 512-4095 ran the heuristic at
0.87-0.90x: docs/decisions/025-shipped-tuning-grid.md) from a draw of model shapes (``--seed``,
W.t()); "odd": issue 13's odd shapes, whose
rows TMA cannot read, through ``grouped``'s configs with their stages and 1 or 2; "odd-tma": the
same shapes through the TMA kernel, on 16-byte-row copies of a and b, c by masked stores; none of
these in "all")
"""

from __future__ import annotations

import argparse
import json
import os
import sys

import torch
import triton

from bench.specs import MODEL_SHAPES
from bench.timing import time_gpu, time_interleaved
from kernel_common import sm_count
from triton_impl import _matmul as mm
from triton_impl import _matmul_configs as mc
from triton_impl._matmul_configs import _fitted_config
from triton_impl._matmul_tma import stream_k_of

# The Llama steps of ``bench model`` (lab/model_calls.py), M >= 512: (M, N, K, a layout, b layout);
# "m": column-major (a transposed view), "k"/"n": row-major
STEP_SHAPES = (
    (1024, 1024, 1024, "k", "t"), (1024, 2816, 1024, "k", "t"), (2816, 1024, 1024, "m", "n"),
    (1024, 1024, 2816, "k", "n"), (1024, 1024, 32000, "k", "n"), (1024, 32000, 1024, "k", "t"),
    (4096, 2048, 2048, "k", "t"), (4096, 1024, 2048, "k", "t"), (4096, 5632, 2048, "k", "t"),
    (5632, 2048, 4096, "m", "n"), (4096, 2048, 5632, "k", "n"), (2048, 2048, 4096, "m", "n"),
    (1024, 2048, 4096, "m", "n"), (4096, 2048, 1024, "k", "n"), (4096, 2048, 32000, "k", "n"),
)


def _operands(M, N, K, a_major, b_major, dtype):
    a = torch.randn((M, K) if a_major == "k" else (K, M), device="cuda").to(dtype)
    a = a if a_major == "k" else a.t()
    b = torch.randn((K, N) if b_major == "n" else (N, K), device="cuda").to(dtype)
    return a, (b if b_major == "n" else b.t())


# issue 13's odd shapes: (M, N, K) with K and N odd, B row-major and W.t()
ODD_SHAPES = tuple((M, N, K, "k", b) for M, N, K in ((4097, 4095, 129), (495, 5333, 71)) for b in ("n", "t"))


# --two-part also times this form, not shipped: the swap-AB two-part tile in two warpgroups
# (decision 062; its one-warpgroup form is shipped)
TWO_PART_TRIED = [mc._tma_config_of(128, 192, 64, 8, 4, swap=True, subtile=True, n_tail=64)]


def _configs(M, N, K, variant="split_k", element_size=2, stream_k=False, two_part=False, narrow=False):
    if stream_k:  # each tile with its last wave shared (stream-K), where it shares any
        return [mm._with_stream_k(cfg) for cfg in mm.candidates(element_size, "tma", M)
                if stream_k_of(cfg.kwargs, M, N, K, sm_count(torch.device("cuda")))[1]]
    if variant == "grouped":
        return [mm._config_of(c.kwargs["BLOCK_M"], c.kwargs["BLOCK_N"], c.kwargs["BLOCK_K"], c.num_warps, st)
                for c in mm.candidates(2, "grouped") for st in sorted({1, 2, c.num_stages})]
    out, configs = [], mc._TWO_PART_16BIT + TWO_PART_TRIED if two_part else mm.candidates(element_size, "tma", M)
    if narrow and M <= 64:  # the few-row tiles of fewer rows too: a's rows in 2-4 tiles, more programs
        configs = configs + [cfg for bm in (16, 32) if bm < M for cfg in mm.candidates(element_size, "tma", bm)]
    for cfg in configs:
        k_tiles = triton.cdiv(K, cfg.kwargs["BLOCK_K"])
        for s in (1, 2, 3, 4):
            if s == 1 or (k_tiles // 4 >= s):
                out.append(mm._with_split(cfg, s))
    return out


def sweep(shapes, variant="split_k", dtype=torch.bfloat16, rep_ms=40.0, in_turns=False, done=None,
          stream_k=False, two_part=False, narrow=False) -> list:
    """``in_turns``: a shape's torch, default and configs timed in turns (``time_interleaved``),
    each ``rep_ms``; else one after the other. ``done(rows)`` after each shape (a partial file)."""
    rows = []
    for M, N, K, am, bm in shapes:
        a, b = _operands(M, N, K, am, bm, dtype)
        c = torch.empty((M, N), dtype=a.dtype, device="cuda")
        flops = 2 * M * N * K
        expected = torch.mm(a, b)
        row = {"shape": [M, N, K], "a": am, "b": bm, "default": mm.describe(a, b), "configs": []}
        fns = [lambda: torch.mm(a, b, out=c), lambda: mm.matmul(a, b, out=c)]
        for cfg in _configs(M, N, K, variant, a.element_size(), stream_k, two_part, narrow):
            try:
                run = mm._make_run(variant, cfg, a, b, "tf32", c)
                c.fill_(float("nan"))
                run(a, b, c)
                # (against the largest |c|: TF32 rounds its inputs, so small entries differ most)
                assert (c.float() - expected.float()).abs().max() <= 1e-2 * expected.float().abs().max(), cfg
                ms = None if in_turns else time_gpu(lambda: run(a, b, c), warmup_ms=10, rep_ms=rep_ms).median_ms
            except Exception as e:  # noqa: BLE001 - a config that does not fit (shared memory)
                row["configs"].append({"config": str(cfg.kwargs), "error": type(e).__name__})
                continue
            kw = cfg.kwargs
            row["configs"].append({"bm": kw["BLOCK_M"], "bn": kw["BLOCK_N"], "bk": kw["BLOCK_K"],
                                   "warps": cfg.num_warps, "stages": cfg.num_stages, "swap": kw.get("SWAP_AB", False),
                                   "sub": kw.get("EPILOGUE_SUBTILE", False), "split": kw.get("SPLIT_K", 1), "ms": ms,
                                   "n_tail": kw.get("N_TAIL", 0),
                                   "sk": stream_k_of(kw, M, N, K, sm_count(a.device)) if kw.get("STREAM_K") else None})
            fns.append(lambda run=run: run(a, b, c))
        if in_turns:
            times = [t.median_ms for t in time_interleaved(fns, warmup_ms=5, rep_ms=rep_ms)]
            for entry, ms in zip((e for e in row["configs"] if "bm" in e), times[2:]):
                entry["ms"] = ms
            ref, row["default_ms"] = times[0], times[1]
        else:
            ref = time_gpu(fns[0]).median_ms
            row["default_ms"] = time_gpu(fns[1]).median_ms
        row["torch_ms"] = ref
        best = sorted((c for c in row["configs"] if "ms" in c), key=lambda c: c["ms"])[:5]
        print(f"{M}x{N}x{K} a{am} b{bm}: torch {ref * 1e3:.1f} us ({flops / ref / 1e9:.0f} TF), default "
              f"{row['default_ms'] * 1e3:.1f} ({ref / row['default_ms']:.2f}x) [{row['default']}]; best "
              + "; ".join(f"{c['bm']}x{c['bn']}x{c['bk']} w{c['warps']} s{c['stages']} S{c['split']}{' SK' if c['sk'] else ''}"
                          f"{' swap' if c['swap'] else ''} {c['ms'] * 1e3:.1f} ({ref / c['ms']:.2f}x)" for c in best),
              flush=True)
        rows.append(row)
        if done:
            done(rows)
    return rows


def main(argv=None) -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--set", default="all", choices=("models", "steps", "few", "draw", "splits", "odd", "odd-tma", "all"))
    p.add_argument("--seeds", type=int, nargs="+", default=[32, 36, 40, 41],
                   help="--set splits: the draws whose shapes past 64 rows the fitted model splits")
    p.add_argument("--seed", type=int, default=5, help="the draw of --set draw")
    p.add_argument("--rows", type=int, nargs=2, default=(64, 512), metavar=("LO", "HI"),
                   help="--set draw: shapes of LO <= M < HI rows")
    p.add_argument("--layout", nargs="+", default=["t"], choices=("t", "n"),
                   help="--set draw: b as W.t() (t) and / or row-major (n)")
    p.add_argument("--dtype", default="bfloat16", choices=("bfloat16", "tf32"),
                   help="tf32: float32 operands, torch and ours on TF32 tensor cores")
    p.add_argument("--count", type=int, default=16, help="--set draw: shapes drawn")
    p.add_argument("--shapes", type=int, nargs="+", metavar="M N K", help="these shapes (W.t()), not a --set")
    p.add_argument("--all-tiles", action="store_true",
                   help="no longer changes anything (past 64 rows candidates() gives every config the fitted model "
                        "chooses from); kept so that decision 036's recorded commands run as written")
    p.add_argument("--in-turns", action="store_true", help="a shape's configs timed in turns with torch")
    p.add_argument("--max-mnk", type=float, default=float("inf"), help="--set draw: M N K at most")
    p.add_argument("--stream-k", action="store_true", help="each tile with stream-K instead (where it shares tiles)")
    p.add_argument("--two-part", action="store_true", help="only the tiles of two parts (N_TAIL), beside torch and the default")
    p.add_argument("--narrow", action="store_true",
                   help="up to 64 rows, also the ladder's tiles of 16 and 32 rows (a's rows in several tiles)")
    p.add_argument("--rep-ms", type=float, default=40.0)
    p.add_argument("--json")
    args = p.parse_args(argv)
    if args.dtype == "tf32":
        torch.set_float32_matmul_precision("high")
    shapes = [(*args.shapes[i:i + 3], "k", "t") for i in range(0, len(args.shapes or []) - 2, 3)]
    if args.shapes:
        args.set = "shapes"
    if args.set in ("steps", "all"):
        shapes += list(STEP_SHAPES)
    if args.set in ("models", "all"):
        shapes += [(M, N, K, "k", "t") for M, N, K in MODEL_SHAPES if M >= 128]
    if args.set == "few":
        shapes += [(M, N, K, "k", "t") for M, N, K in MODEL_SHAPES if M <= 64]
    if args.set == "draw":
        from bench.workloads import draw_matmul
        lo, hi = args.rows
        drawn = [(M, N, K) for M, N, K in draw_matmul(1000, args.seed) if lo <= M < hi
                 and M * N * K <= args.max_mnk][:args.count]
        shapes += [(M, N, K, "k", b) for M, N, K in drawn for b in args.layout]
    if args.set == "splits":
        from bench.workloads import draw_matmul
        sms = sm_count(torch.device("cuda"))
        drawn = [(M, N, K) for seed in args.seeds for M, N, K in draw_matmul(1000, seed)
                 if M > 64 and M * N * K > mm.SMALL_PRODUCT and _fitted_config(M, N, K, sms).kwargs["SPLIT_K"] > 1]
        drawn = sorted(set(drawn))  # (every few, by rows: the band of rows they span)
        shapes += [(M, N, K, "k", b) for M, N, K in drawn[::max(1, len(drawn) // args.count)][:args.count]
                   for b in args.layout]
    if args.set in ("odd", "odd-tma"):
        shapes += list(ODD_SHAPES)

    def write(rows):
        if args.json:
            with open(args.json, "w") as f:
                # the command as typed, its output named without the machine's folder
                command = " ".join(os.path.basename(w) if w == args.json else w for w in sys.argv)
                json.dump({"device": torch.cuda.get_device_name(), "command": command,
                           "rows": rows}, f, indent=1)
    sweep(shapes, "grouped" if args.set == "odd" else "split_k", torch.float32 if args.dtype == "tf32" else torch.bfloat16,
          args.rep_ms, args.in_turns, write, args.stream_k, args.two_part, args.narrow)
    return 0


if __name__ == "__main__":
    sys.exit(main())
