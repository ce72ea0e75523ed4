"""What the probes of a LoRA draw's products share (``probe_narrow_n.py``, ``probe_narrow_tma.py``,
``probe_short_k.py``): each case checked against float64, timed flushed in turns and back to back,
printed as x torch.mm; then the columns' geomean / p10 / worst by layout, and the cases as JSON.
"""
import argparse
import json

import torch

from bench.timing import time_interleaved, time_loop
from bench.workloads import draw_lora, summarize


def time_case(fns: dict, a, b, layout: str, rep_ms: float, **extra) -> dict:
    """{name: fn} (torch's first) checked against float64 and timed: the case's record, printed."""
    ref = torch.mm(a.double(), b.double())
    (m, k), n = a.shape, b.shape[1]
    for name, fn in fns.items():
        err = (fn().double() - ref).abs().max().item() / ref.abs().max().item()
        assert err < 2e-2, (name, m, n, k, layout, err)
    t = time_interleaved(list(fns.values()), rep_ms=rep_ms)
    loop = [time_loop(fn) for fn in fns.values()]
    case = {"shape": [m, n, k], "layout": layout, **extra,
            "flushed_us": {name: tt.median_ms * 1e3 for name, tt in zip(fns, t)},
            "loop_us": {name: ms * 1e3 for name, ms in zip(fns, loop)}}
    f = case["flushed_us"]
    print(f"{m:>6} {n:>6} {k:>6} {layout:>3} torch {f['torch']:7.1f} us  " +
          "  ".join(f"{x} {f['torch'] / f[x]:.2f}" for x in fns if x != "torch"), flush=True)
    return case


def report(cases: list, args, title: str) -> None:
    """Each column's x torch.mm geomean / p10 / worst (its shape) by timing and layout; ``args.json``."""
    names = list(dict.fromkeys(x for c in cases for x in c["flushed_us"] if x != "torch"))
    print(f"{args.dtype}, seed {args.seed}, {title}: x torch.mm, geomean / p10 / worst (worst's shape)")
    for mode in ("flushed_us", "loop_us"):
        for layout in ("wt", "row"):
            for x in names:
                sel = [c for c in cases if c["layout"] == layout and x in c[mode]]
                r = [c[mode]["torch"] / c[mode][x] for c in sel]
                if not r:
                    continue
                s = summarize(r)
                worst = sel[min(range(len(r)), key=r.__getitem__)]["shape"]
                print(f"{mode[:-3]:>8} {layout:>3} {x:>16} {s['geomean']:.3f} / {s['p10']:.2f} / {s['worst']:.2f} {worst}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"device": torch.cuda.get_device_name(), "seed": args.seed, "dtype": args.dtype,
                       "cases": cases}, f, indent=1)


def parser(doc: str, seed: int, count: int) -> argparse.ArgumentParser:
    """The options every such probe takes: the draw's seed and size, the dtype, the timing, the JSON."""
    p = argparse.ArgumentParser(description=doc.splitlines()[0])
    p.add_argument("--seed", type=int, default=seed)
    p.add_argument("--count", type=int, default=count, help="shapes drawn (the probe's among them run)")
    p.add_argument("--dtype", default="bfloat16")
    p.add_argument("--rep-ms", type=float, default=10)
    p.add_argument("--json")
    return p


def operands(args, keep):
    """(a, b, layout) of each distinct drawn (M, N, K) that ``keep`` takes, b = W.t() of an (N, K) W
    ("wt") and its row-major copy ("row"), random in ``args.dtype``."""
    dtype = getattr(torch, args.dtype)
    torch.manual_seed(0)
    for (m, n, k) in sorted({s for s in draw_lora(args.count, args.seed) if keep(*s)}):
        a = torch.randn(m, k, device="cuda", dtype=dtype)
        w = torch.randn(n, k, device="cuda", dtype=dtype)  # the adapter's weight
        for layout in ("wt", "row"):
            yield a, (w.t() if layout == "wt" else w.t().contiguous()), layout
