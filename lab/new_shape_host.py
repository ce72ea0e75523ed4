"""Host time of a call on a shape the process has not seen (its plan made in the call), beside a
call on a seen one, and torch's: what a mixture-of-experts training step pays, where each expert's
row count moves with its router every step (Mixtral's step ran 0.81x / 0.74x torch with the GPU
busy as long under both: lab/model_calls.py --arch mixtral). Per (N, K) and layout, rows M from a
range walked once (every call a new shape), then again (every call a seen one); each call timed
on the host alone (the kernels are small; the GPU is synchronized between calls, not timed). Then
the first pass again under cProfile: where a new shape's host time goes.

With ``--timers``, the first case's new shapes through each backend's public call, with the
time inside each of ``TIMED``'s functions added up (inclusive; a function wrapped wherever a
module holds it): where a plan's host time goes, without a profiler's own cost.
With ``--parts``, the first case's new shapes timed stage by stage instead: Triton's pick, config,
run made, first run (through the JIT) and second run; CUDA's plan made, first and second run.

Usage (GPU): PYTHONPATH=. python lab/new_shape_host.py [--backend triton cuda] [--profile N] [--parts | --timers]
    [--dump DIR]  (each backend's and case's profile of 100 new shapes kept in DIR as pstats files)
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import statistics
import time

import torch

import cuda_ref
import triton_impl

# Mixtral small's expert projections (hidden 1024, expert width 1408) as a training step runs them:
# forward x @ W.t(), backward dy @ W and x.t() @ dy
CASES = [("x @ W.t()", 1408, 1024, "wt"), ("dy @ W", 1024, 1408, "row"), ("x.t() @ dy", 1024, 1408, "at")]


def operands(M, N, K, layout, dtype=torch.bfloat16):
    if layout == "at":  # a = x.t(), b = dy: M is the hidden width, K the tokens
        return torch.randn(K, M, device="cuda", dtype=dtype).t(), torch.randn(K, N, device="cuda", dtype=dtype)
    a = torch.randn(M, K, device="cuda", dtype=dtype)
    b = torch.randn(N, K, device="cuda", dtype=dtype).t() if layout == "wt" else torch.randn(K, N, device="cuda", dtype=dtype)
    return a, b


def host_us(fn, args_list) -> list[float]:
    out = []
    for args in args_list:
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        fn(*args)
        out.append((time.perf_counter() - t0) * 1e6)
    torch.cuda.synchronize()
    return out


# (module, attribute path) of the functions --timers times
TIMED = [("kernel_common.plans", "PlanCache._made"),
         ("triton_impl._matmul", "pick_variant"), ("triton_impl._matmul", "config_for"),
         ("triton_impl._matmul", "_make_run"), ("triton_impl._matmul_configs", "_fitted_config"),
         ("triton_impl._matmul_tma", "_tma_transposed"), ("triton_impl._matmul", "_family_config"),
         ("triton_impl._launch", "TritonLaunch.__init__"), ("triton_impl._launch", "TritonLaunch._jit"),
         ("triton_impl._launch", "_launcher"), ("kernel_common.validate", "output"),
         ("kernel_common.validate", "check_matmul_args"), ("triton_impl._tuning", "lookup"),
         ("cuda_ref._matmul", "pick_variant"), ("cuda_ref._matmul", "_tc_plan"), ("cuda_ref._matmul", "_tc_launch"),
         ("cuda_ref._matmul", "_tc_layout"), ("cuda_ref._matmul_wgmma", "wgmma_ws_plan"),
         ("cuda_ref._matmul_wgmma", "ws_tile_n"), ("cuda_ref._matmul_wgmma", "ws_splits"),
         ("cuda_ref._matmul_wgmma", "ws_stream_k"), ("cuda_ref.loader", "Kernel.__init__"),
         ("cuda_ref.loader", "kernel"), ("cuda_ref._tma", "encode_2d")]


def timers(walks) -> None:
    import importlib
    import sys
    totals: dict = {}

    def wrap(label, fn):
        def timed(*args, **kw):
            t0 = time.perf_counter()
            try:
                return fn(*args, **kw)
            finally:
                n, t = totals.get(label, (0, 0.0))
                totals[label] = (n + 1, t + time.perf_counter() - t0)
        return timed
    for module, path in TIMED:
        owner = importlib.import_module(module)
        *outer, name = path.split(".")
        for part in outer:
            owner = getattr(owner, part)
        fn = getattr(owner, name)
        timed = wrap(f"{module}.{path}", fn)
        if outer:  # a method: the class holds it
            setattr(owner, name, timed)
            continue
        for m in list(sys.modules.values()):  # wherever a module imported it by name
            if getattr(m, name, None) is fn:
                setattr(m, name, timed)
    _, N, K, layout = CASES[0]
    mods = {"triton": triton_impl, "cuda": cuda_ref}
    for rows in walks:
        for b, fn in mods.items():
            inputs = [operands(M, N, K, layout) for M in rows]
            totals.clear()
            call = host_us(fn.matmul, inputs)
            print(f"{b}, rows {rows.start}-{rows.stop} step {rows.step}: {statistics.median(call):.1f} us a call "
                  f"(median); inside, us a call:")
            for label, (n, t) in sorted(totals.items(), key=lambda kv: -kv[1][1]):
                print(f"  {label:45} {t / len(inputs) * 1e6:8.1f}  ({n / len(inputs):.1f} calls)")


def _stages(fns, inputs) -> list[float]:
    """Median host us of each stage over the inputs: ``fns`` a list of stage(state) callables, each
    taking the previous stage's result (the first: the operands), the GPU synchronized between."""
    times = [[] for _ in fns]
    for args in inputs:
        state = args
        for i, fn in enumerate(fns):
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            state = fn(state)
            times[i].append((time.perf_counter() - t0) * 1e6)
    torch.cuda.synchronize()
    return [statistics.median(t) for t in times]


def parts(rows) -> None:
    from cuda_ref import _matmul as cm
    from triton_impl import _matmul as tm
    _, N, K, layout = CASES[0]
    inputs = [operands(M, N, K, layout) for M in rows]
    out = {}

    def first(ab_run):  # c allocated, the run's first call (a new launch: through Triton's JIT)
        (a, b), run = ab_run
        c = torch.empty(a.shape[0], b.shape[1], device="cuda", dtype=a.dtype)
        run(a, b, c)
        return (a, b), run, c

    def second(state):
        (a, b), run, c = state
        run(a, b, c)
        return state

    def t_pick(ab):
        return ab, tm.pick_variant(*ab)

    def t_config(state):
        ab, v = state
        p = tm._input_precision(ab[0].dtype)
        return ab, v, p, tm.config_for(v, *ab, p)

    def t_make(state):
        ab, v, p, cfg = state
        return ab, tm._make_run(v, cfg, *ab, p)
    out["triton pick / config / make run / first run / second run"] = _stages([t_pick, t_config, t_make, first, second], inputs)

    def t_plan(ab):  # through the plan cache, as a call makes it (rows the stages above did not see)
        return ab, tm._PLANS.get(ab, None, None).run
    out["triton plan / first run / second run"] = _stages([t_plan, first, second],
                                                          [operands(M + 240, N, K, layout) for M in rows])

    def c_plan(ab):
        return ab, cm._PLANS.get(ab, None, None).run
    out["cuda plan / first run / second run"] = _stages([c_plan, first, second], inputs)
    for k, v in out.items():
        print(f"{k}: " + " / ".join(f"{x:.1f}" for x in v), flush=True)
    if rows.start % 2:  # the odd walk (kernels compiled): where the stages' time goes, new shapes again
        for name, stage in (("triton pick", lambda ab: tm.pick_variant(*ab)),
                            ("triton plan and first run", lambda ab: first((ab, tm._PLANS.get(ab, None, None).run))),
                            ("cuda plan and first run", lambda ab: first((ab, cm._PLANS.get(ab, None, None).run)))):
            shapes = [operands(M + 480, N, K, layout) for M in rows]  # (rows no walk planned)
            prof = cProfile.Profile()
            prof.enable()
            for ab in shapes:
                stage(ab)
            prof.disable()
            torch.cuda.synchronize()
            print(f"\n{name}, {len(shapes)} new shapes, by own time")
            pstats.Stats(prof).sort_stats("tottime").print_stats(25)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--backend", nargs="+", default=["triton", "cuda"])
    p.add_argument("--rows", type=int, nargs=2, default=[160, 400])
    p.add_argument("--profile", type=int, default=15, help="functions listed from the profile")
    p.add_argument("--parts", action="store_true")
    p.add_argument("--timers", action="store_true")
    p.add_argument("--dump", help="a folder: each backend's and case's profile of new shapes, as pstats files")
    args = p.parse_args()
    if args.timers:
        # even rows, then odd: the second walk's kernels compiled by the first
        timers([range(args.rows[0], args.rows[1], 2), range(args.rows[0] + 1, args.rows[1], 2)])
        return
    if args.parts:
        for start in (0, 1):  # even rows, then odd: the second walk's kernels compiled by the first
            print("rows", "even" if start == 0 else "odd (kernels compiled)")
            parts(range(args.rows[0] + start, args.rows[1], 2))
        return
    mods = {"triton": triton_impl, "cuda": cuda_ref}
    print(torch.cuda.get_device_name(), "host us a call (median), new shapes / seen shapes")
    for name, N, K, layout in CASES:
        rows = range(*args.rows)
        if layout == "at":  # the tokens are K: they move; M and N are the widths
            shapes = [(1024, N, t) for t in rows]
        else:
            shapes = [(t, N, K) for t in rows]
        warm = operands(64, N, K, layout) if layout != "at" else operands(1024, N, 64, layout)
        for fn in [torch.mm] + [mods[b].matmul for b in args.backend]:
            fn(*warm)  # kernels compiled before the walk
        inputs = [operands(M, N_, K_, layout) for M, N_, K_ in shapes]
        line = f"{name:12} N {N} K {K}:"
        new = statistics.median(host_us(torch.mm, inputs))
        line += f" torch new {new:.1f} seen {statistics.median(host_us(torch.mm, inputs)):.1f}"
        for b in args.backend:
            fn = mods[b].matmul
            new = statistics.median(host_us(fn, inputs))
            seen = statistics.median(host_us(fn, inputs))
            line += f" | {b} new {new:.1f} seen {seen:.1f}"
        print(line, flush=True)
    for b in args.backend:
        name, N, K, layout = CASES[0]
        inputs = [operands(M, N, K, layout) for M in range(args.rows[1], args.rows[1] + 100)]
        prof = cProfile.Profile()
        prof.enable()
        host_us(mods[b].matmul, inputs)
        prof.disable()
        print(f"\n{b}: 100 new shapes of {name}, cumulative")
        pstats.Stats(prof).sort_stats("cumulative").print_stats(args.profile)
        print(f"{b}: by own time")
        pstats.Stats(prof).sort_stats("tottime").print_stats(args.profile)
        if args.dump:  # (each case's profile of new shapes, the first one's as printed)
            prof.dump_stats(f"{args.dump}/{b}-{layout}.prof")
            for _, n, k, kind in CASES[1:]:
                rows = range(args.rows[1], args.rows[1] + 100)
                later = [operands(M, n, k, kind) if kind != "at" else operands(1024, n, M, kind) for M in rows]
                dumped = cProfile.Profile()
                dumped.enable()
                host_us(mods[b].matmul, later)
                dumped.disable()
                dumped.dump_stats(f"{args.dump}/{b}-{kind}.prof")


if __name__ == "__main__":
    main()
