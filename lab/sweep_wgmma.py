"""The CUDA wgmma kernels against cuBLAS on the shapes of issue 14: ``wgmma`` and each build of
``wgmma_ws`` (c stored from the accumulators or through TMA stores),
timed flushed (``bench.timing.time_gpu``) and back to back (``time_loop``), each result checked
against torch's. Writes JSON; prints a table.

With ``--rounds R`` each shape's implementations are timed R times in turn (torch, wgmma, each
build, torch, ...) and the medians reported: one pass over a power-limited GPU drifts by more than
the differences looked for. ``--interleaved`` times the flushed calls of all of them in turns,
call by call (``bench.timing.time_interleaved``). ``--baseline REV[,REV...]`` times ``wgmma_ws``
built from the kernel sources of each git revision (or directory of kernels) against the working
tree's (``after``), in one process, so a kernel change is read against the same GPU state.
``--tail`` times the rows of a last block that one consumer alone holds; ``--bias`` the switch's
addmm (a bias row in the epilogue) against ``torch.addmm``.

Usage (Hopper GPU): python lab/sweep_wgmma.py [--json FILE] [--quick | --few | --middle] [--rounds R]
                                              [--interleaved] [--groups | --sk | --baseline REV]
                                              [--tail] [--bias]
"""

from __future__ import annotations

import argparse
import json
import pathlib
import statistics
import subprocess
import tempfile

import torch

from bench.timing import time_gpu, time_interleaved, time_loop
from cuda_ref import _matmul as mm
from cuda_ref import _matmul_wgmma as wg
from cuda_ref import compile as cuda_compile
from cuda_ref import loader

# (M, N, K, layout of b, layout of a): "wt" a W.t() view of an (N, K) weight, "row" (K, N);
# a "t": an a.t() view of a (K, M) matrix, as a backward pass gives
SHAPES = (
    (4096, 4096, 4096, "row", "k"), (4096, 4096, 4096, "wt", "k"),
    (8192, 8192, 8192, "row", "k"), (8192, 8192, 8192, "wt", "k"),
    (2048, 11008, 4096, "wt", "k"), (8192, 4096, 11008, "wt", "k"),
    (4096, 5632, 2048, "wt", "k"), (4096, 2048, 5632, "row", "k"), (5632, 2048, 4096, "row", "t"),
    (4097, 4095, 129, "row", "k"), (300, 520, 200, "wt", "k"), (640, 264, 72, "row", "t"),
)
# (M, N, K, b, a) of few rows (decode and small batches) and the model step's LM-head dW: the
# grids of few tiles where wgmma_ws splits K
FEW = (
    (16, 4096, 4096, "wt", "k"), (64, 4096, 4096, "wt", "k"), (128, 4096, 4096, "wt", "k"), (16, 14336, 4096, "wt", "k"),
    (16, 4096, 14336, "wt", "k"), (128, 4096, 14336, "wt", "k"), (64, 8192, 8192, "wt", "k"),
    (128, 8192, 28672, "wt", "k"), (1024, 1024, 32000, "row", "k"), (1024, 2048, 4096, "row", "t"),
    (2048, 2048, 4096, "wt", "k"), (16, 14336, 8192, "wt", "k"),
)
# the builds of wgmma_ws: the launcher's settings each runs with (pairs of blocks, c through TMA
# stores, the fewest rows for pairs, the fewest k-slices a split run)
_PAIRS_WHOLE = dict(WS_CLUSTER=2, WS_PAIRS_MIN_M=0, WS_PAIRS_ODD_MIN_M=0, WS_SPLIT_MIN_SLICES=1 << 30)
BUILDS = {"ws_pairs_tma": dict(_PAIRS_WHOLE, WS_STORE_TMA=1), "ws_pairs_defer": dict(_PAIRS_WHOLE, WS_STORE_TMA=2)}
# the tile order: groups of WS_GROUP_M 128-row tiles (pairs: WS_GROUP_M / 2 units), walked column by column
GROUP_BUILDS = {f"group{g}": dict(WS_GROUP_M=g) for g in (4, 8, 16, 32)}
# stream-K for a part-full last wave, off and on
SK_BUILDS = {"ws_whole": dict(WS_STREAM_K=False), "ws_stream_k": dict(WS_STREAM_K=True, WS_SK_MAX_FILL=1.0)}
FEW_BUILDS = {"ws_nosplit": dict(WS_SPLIT_MIN_SLICES=1 << 30, WS_ONE_CONSUMER_MAX_M=0),
              "ws_split": dict(WS_ONE_CONSUMER_MAX_M=0), "ws_split_64rows": {}}
# the middle rows (a prefill chunk, a batch of requests: 96-1500 rows against a model's weights),
# where 128-row tiles leave most SMs idle (200 x 6144 x 4096: 48 tiles on 132 SMs) and neither
# split K (a third of the SMs or fewer) nor stream-K (from 1024 rows) is taken: each forced
MIDDLE = tuple((M, N, K, "wt", "k") for M, N, K in (
    (128, 4096, 4096), (200, 6144, 4096), (256, 14336, 4096), (333, 4096, 14336), (384, 4096, 4096),
    (512, 4096, 14336), (640, 1536, 7168), (777, 6144, 4096), (1000, 4096, 4096), (1500, 14336, 4096)))


# the last row block's tail: M mod 128 in 1-64 (a 128-row block whose second consumer has no rows
# of c) beside M mod 128 in 65-127 and whole blocks, on W.t() of Llama-3-8B's weights
TAIL = tuple((M, N, K, "wt", "k") for M, (N, K) in
             ((M, NK) for M in (135, 200, 271, 333, 400, 600, 777, 1100, 1500, 2049, 5067)
              for NK in ((4096, 14336), (6144, 4096))))
# a bias row added in the epilogue (--bias): long N, short K, where the epilogue weighs most
BIAS = ((5067, 32768, 512, "wt", "k"), (4096, 4096, 1024, "wt", "k"), (2048, 11008, 2048, "wt", "k"),
        (8192, 4096, 512, "row", "k"), (777, 6144, 4096, "wt", "k"), (4096, 50257, 768, "wt", "k"))


def _forced_splits(s):
    return lambda M, N, K, itemsize, sms, a_mmajor=False: s


MIDDLE_BUILDS = {"ws_whole": dict(ws_splits=_forced_splits(1), ws_stream_k=lambda *args, **kw: 0),
                 **{f"ws_split{s}": dict(ws_splits=_forced_splits(s), ws_stream_k=lambda *args, **kw: 0)
                    for s in (2, 3, 4, 6)},
                 "ws_stream_k": dict(ws_splits=_forced_splits(1), ws_stream_k=lambda *args, **kw: _last_wave(*args, **kw)),
                 "ws_default": {}}  # the split model's own choice (ws_splits), beside the forced ones


def _last_wave(M, N, K, itemsize, sms, a_mmajor=False):
    """Stream-K over the last wave's units (the only wave's, where they are fewer than the pairs),
    whatever its fill and rows."""
    cluster = wg.ws_cluster(M)
    units = -(-M // (64 * wg.ws_consumers(M, a_mmajor) * cluster)) * -(-N // 256)
    return units % (sms // cluster)


def _owner(name):
    """The module whose global ``name`` is: the launcher's (cuda_ref._matmul) or the wgmma family's."""
    return mm if hasattr(mm, name) else wg


def operands(M, N, K, b_layout, a_layout, dtype):
    a = torch.randn((M, K) if a_layout == "k" else (K, M), device="cuda").to(dtype)
    a = a if a_layout == "k" else a.t()
    b = torch.randn((K, N) if b_layout == "row" else (N, K), device="cuda").to(dtype)
    return a, (b if b_layout == "row" else b.t())


def measure(fn, flops, ref, M, N, t=None):
    """One implementation's record; ``t``: its flushed median (ms) if timed already."""
    out = fn()
    err = ((out.float() - ref).abs().max() / ref.abs().max()).item()
    small = M * N < 1 << 22
    t = time_gpu(fn).median_ms if t is None else t
    loop = time_loop(fn, calls=50 if not small else 200)
    return {"ms": t, "tflops": flops / t / 1e9, "loop_ms": loop, "max_rel_err": err}


def planned_call(plan, inputs):
    """A call of ``plan`` on ``inputs`` ((a, b) or (a, b, bias)), a fresh output each time."""
    def fn():
        out = plan.output(None, inputs)
        plan.run(*inputs, out)
        return out
    return fn


def build_fn(inputs, settings, defaults):
    """A call of wgmma_ws planned under ``settings`` (the launcher's module settings), which the
    plan keeps: builds can then be called in any order."""
    for k, v in {**defaults, **settings}.items():
        setattr(_owner(k), k, v)
    try:
        plan = mm._plan(inputs, "wgmma_ws", None)
    finally:
        for k, v in defaults.items():
            setattr(_owner(k), k, v)

    return planned_call(plan, inputs)


_BASELINE_PLANS = []  # kept alive: the loader notes a kernel's shared-memory opt-in by id(function)


def baseline_fn(inputs, rev: str, variant: str = "wgmma_ws"):
    """A ``variant`` call planned on the kernels of git revision ``rev``, or of the directory ``rev``
    (compiled into their own modules; the loader's caches are left as they were)."""
    old = pathlib.Path(rev)
    if not old.is_dir():
        old = pathlib.Path(tempfile.mkdtemp(prefix="kernels-"))
        for f in cuda_compile.KERNEL_DIR.iterdir():
            path = f"{rev}:cuda_ref/kernels/{f.name}"
            (old / f.name).write_bytes(subprocess.run(["git", "show", path], capture_output=True, check=True).stdout)
    saved = cuda_compile.KERNEL_DIR, dict(loader._modules), dict(loader._functions)
    cuda_compile.KERNEL_DIR = old
    loader._modules.clear(), loader._functions.clear()
    try:
        plan = mm._plan(inputs, variant, None)
    finally:
        cuda_compile.KERNEL_DIR = saved[0]
        loader._modules.clear(), loader._functions.clear()
        loader._modules.update(saved[1]), loader._functions.update(saved[2])
    _BASELINE_PLANS.append(plan)

    return planned_call(plan, inputs)


def _median_of(runs):
    if any("error" in r for r in runs):
        return next(r for r in runs if "error" in r)
    out = {k: statistics.median(r[k] for r in runs) for k in ("ms", "tflops", "loop_ms")}
    out["max_rel_err"] = max(r["max_rel_err"] for r in runs)
    out["ms_each"] = [r["ms"] for r in runs]
    out["loop_ms_each"] = [r["loop_ms"] for r in runs]
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--json")
    ap.add_argument("--quick", action="store_true", help="4096^3, 8192^3 and the two W.t() shapes of issue 14 only")
    ap.add_argument("--dtype", default="bfloat16")
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--few", action="store_true",
                    help="few-row shapes, wgmma_ws without and with split K, and with 64-row tiles")
    ap.add_argument("--groups", action="store_true", help="wgmma_ws's tile order: WS_GROUP_M 4, 8, 16, 32")
    ap.add_argument("--sk", action="store_true", help="wgmma_ws without and with stream-K (WS_STREAM_K)")
    ap.add_argument("--middle", action="store_true",
                    help="96-1500 rows on W.t(): wgmma_ws whole, in 2-6 forced K runs, and in stream-K")
    ap.add_argument("--tail", action="store_true", help="M mod 128 in 1-64 beside other M (TAIL), W.t()")
    ap.add_argument("--bias", action="store_true", help="addmm: a bias row in the epilogue (the BIAS shapes "
                    "unless another set is named), torch.addmm beside")
    ap.add_argument("--baseline", metavar="REV", help="wgmma_ws on the kernels of each of these git revisions or "
                    "directories (comma-separated) and on the tree's (after)")
    ap.add_argument("--interleaved", action="store_true",
                    help="time the implementations' flushed calls in turns (bench.timing.time_interleaved)")
    args = ap.parse_args()
    dtype = getattr(torch, args.dtype)
    shapes = MIDDLE if args.middle else FEW if args.few else TAIL if args.tail else BIAS if args.bias else \
        SHAPES[:6] if args.quick else SHAPES
    builds = MIDDLE_BUILDS if args.middle else SK_BUILDS if args.sk else FEW_BUILDS if args.few else \
        GROUP_BUILDS if args.groups else {"after": {}} if args.baseline else BUILDS
    rows = []
    defaults = {k: getattr(_owner(k), k) for k in {k for settings in builds.values() for k in settings}}
    print(torch.cuda.get_device_name(), "SMs", torch.cuda.get_device_properties(0).multi_processor_count)
    for M, N, K, bl, al in shapes:
        a, b = operands(M, N, K, bl, al, dtype)
        inputs = (a, b, torch.randn(N, device="cuda").to(dtype)) if args.bias else (a, b)
        ref = torch.mm(a.double(), b.double()).float()
        if args.bias:
            ref += inputs[2].float()
        flops = 2 * M * N * K
        row = {"shape": [M, N, K], "layout": bl, "a": al, "dtype": args.dtype}
        if args.middle:  # what the split model predicts, to read against the forced runs' times
            sms = torch.cuda.get_device_properties(0).multi_processor_count
            row["model"] = {"splits": wg.ws_splits(M, N, K, a.element_size(), sms),
                            "us": {s: wg.ws_split_time(M, N, K, a.element_size(), sms, False, s) for s in (1, 2, 3, 4, 6)}}
            print(f"{M}x{N}x{K}: the model picks S{row['model']['splits']}; its us by S: "
                  + ", ".join(f"S{s} {t:.1f}" for s, t in row["model"]["us"].items()), flush=True)
        fns = {"torch": lambda: torch.addmm(inputs[2], a, b)} if args.bias else \
            {"torch": lambda: torch.mm(a, b), "wgmma": lambda: mm.matmul(a, b, variant="wgmma")}
        for rev in args.baseline.split(",") if args.baseline else ():
            fns[pathlib.Path(rev).name] = baseline_fn(inputs, rev)
        fns.update({name: build_fn(inputs, settings, defaults) for name, settings in builds.items()})
        runs = {name: [] for name in fns}
        for _ in range(args.rounds):
            flushed = dict(zip(fns, (t.median_ms for t in time_interleaved(list(fns.values()))))) \
                if args.interleaved else {}
            for name, fn in fns.items():
                try:
                    runs[name].append(measure(fn, flops, ref, M, N, flushed.get(name)))
                except Exception as e:  # noqa: BLE001  (a build that fails is a result too)
                    runs[name].append({"error": repr(e)[:300]})
        row.update({name: _median_of(r) for name, r in runs.items()})
        rows.append(row)
        t = row["torch"]["ms"]
        print(f"{M}x{N}x{K} {bl} a={al}: torch {t * 1e3:.1f} us  " + "  ".join(
            f"{k} {t / v['ms']:.3f}x/{row['torch']['loop_ms'] / v['loop_ms']:.3f}x e{v['max_rel_err']:.0e}"
            if "ms" in v else f"{k} ERR" for k, v in row.items() if isinstance(v, dict) and k != "torch"), flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"device": torch.cuda.get_device_name(), "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
