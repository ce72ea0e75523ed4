"""wgmma_ws's stream-K units and tile width, forced, on drawn products where variant=None takes
wgmma_ws with 128-row tiles: the data behind ``ws_stream_k``'s choice among shared-unit counts
(``cuda_ref/_matmul_wgmma.py``; its constants in arch_sm_90.json).

A persistent grid of P pairs over U units runs ceil(U / P) waves; where U is a little past a
multiple of P (68 units on 66 pairs) the last wave holds a few units and every pair waits for them.
Stream-K of the last wave's units alone gives each pair too few k-slices there; sharing the last
wave and one full wave before it (sk = U mod P + P) levels the work at the cost of more hand-overs.
Each shape: torch, the default, and wgmma_ws at each (tile columns, sk) of: the columns of
--widths (256, 192, 128), sk 0, the last wave's units, that plus one wave, all units; timed flushed
in turns (``bench.timing.time_interleaved``) and back to back (``time_loop``), each result checked against
torch's. Writes JSON; prints each shape's times, the split model's time and the fastest.

Usage (Hopper GPU): python lab/sweep_ws_stream_k.py [--seed 70] [--count 40] [--rows 129 16384]
    [--changed-only] [--shapes M N K ...] [--layout wt] [--rep-ms 20] [--widths 256 192 128] [--splits] [--json F]
"""

from __future__ import annotations

import torch

from cuda_ref import _matmul as cm
from cuda_ref import _matmul_wgmma as wg
from kernel_common import cdiv
from lab.forced_plans import operands, parser, shapes_of, time_forced, write_rows

MODEL = (wg.ws_tile_n, cm.ws_splits, cm.ws_stream_k)
WIDTHS = (256, 192, 128)  # the tile widths tried (--widths)


def forced(plan):
    """wgmma_ws's (tile columns, stream-K units[, runs of K]) for the plans made next (K whole by
    default); None: the model's."""
    if plan is None:
        wg.ws_tile_n = cm.ws_tile_n = MODEL[0]
        cm.ws_splits, cm.ws_stream_k = MODEL[1], MODEL[2]
    else:
        bn, sk, splits = (plan + (1,))[:3]
        wg.ws_tile_n = cm.ws_tile_n = lambda *args, **kw: bn
        cm.ws_splits = lambda *args, **kw: splits
        cm.ws_stream_k = lambda *args, **kw: sk
    cm._PLANS.clear()


def tried(M, N, K, sms, splits=False):
    """The (columns, sk, runs) tried: each width's sk of none, the last wave, it and one wave more,
    all; with ``splits``, K in 2 and 3 runs handed over in the kernel (widths that take them) where the
    runs keep one wave and each takes at least WS_SPLIT_MIN_SLICES k-slices."""
    pairs, k_tiles = sms // wg.ws_cluster(M), cdiv(K, 64)
    out = []
    for bn in WIDTHS:
        units = wg._units(M, N, False, bn)
        tail = units % pairs
        for sk in sorted({0, tail, tail + pairs, units}):
            if sk <= units and sk * k_tiles < 1 << 31 and (sk == 0 or sk * k_tiles >= pairs):
                out.append((bn, sk, 1))
        for s in (2, 3) if splits and wg.WS_SHARES_K.get(bn, True) else ():
            if units * s <= pairs and k_tiles // s >= wg.WS_SPLIT_MIN_SLICES:
                out.append((bn, 0, s))
    return out


def model_us(M, N, K, sms, bn, sk, splits=1):
    return wg.ws_split_time(M, N, K, 2, sms, False, splits, bn, sk)


def main() -> None:
    p = parser(__doc__, 70, (129, 16384))
    p.add_argument("--changed-only", action="store_true",
                   help="only shapes where some forced plan's model time is under 0.9 of the default's")
    p.add_argument("--rep-ms", type=float, default=20)
    p.add_argument("--widths", type=int, nargs="+", default=WIDTHS)
    p.add_argument("--splits", action="store_true", help="K in 2 and 3 runs too (named ...s2, ...s3)")
    args = p.parse_args()
    globals()["WIDTHS"] = tuple(args.widths)
    sms = torch.cuda.get_device_properties(0).multi_processor_count

    def keep(M, N, K, a, b):
        if cm.pick_variant(a, b) != "wgmma_ws" or wg.ws_consumers(M) != 2:
            return False
        now = wg.ws_split_time(M, N, K, 2, sms, False, wg.ws_splits(M, N, K, 2, sms), wg.ws_tile_n(M, N, K, 2, sms),
                               wg.ws_stream_k(M, N, K, 2, sms))
        return not args.changed_only or min(model_us(M, N, K, sms, *t) for t in tried(M, N, K, sms)) <= 0.9 * now
    shapes = shapes_of(args.shapes, args.seed, args.count, args.rows, 4e11, keep)
    rows = []
    for M, N, K in shapes:
        a, b = operands(M, N, K, args.layout)
        plans = {f"n{bn}sk{sk}" + (f"s{s}" if s > 1 else ""): (bn, sk, s)
                 for bn, sk, s in tried(M, N, K, sms, args.splits)}
        ms, loop_ms = time_forced("wgmma_ws", a, b, plans, forced, args.rep_ms)
        names = list(ms)
        model = {name: model_us(M, N, K, sms, *plan) for name, plan in plans.items()}
        best = min(names[2:], key=ms.get)
        rows.append({"shape": [M, N, K], "layout": args.layout, "cluster": wg.ws_cluster(M), "ms": ms,
                     "loop_ms": loop_ms, "model_us": model})
        write_rows(args, __doc__, rows)
        t0, l0 = ms["torch"], loop_ms["torch"]
        print(f"{M}x{N}x{K} c{wg.ws_cluster(M)}: torch {t0 * 1e3:.1f} us, default {t0 / ms[names[1]]:.2f} / loop "
              f"{l0 / loop_ms[names[1]]:.2f}, best {best} {t0 / ms[best]:.2f} / loop {l0 / loop_ms[best]:.2f} | "
              + " ".join(f"{n} {ms[n] * 1e3:.1f}/{loop_ms[n] * 1e3:.1f}({model[n]:.0f})" for n in names[2:]),
              flush=True)


if __name__ == "__main__":
    main()
