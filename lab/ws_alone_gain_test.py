"""Decision 009's CPU check: wgmma_ws's blocks alone put to the split model's stream-K gain test
(``ws_sk_wave_gain``, which the unmeasured branch of ``_last_wave_units`` uses) in the measured
branch too, over the shapes ``lab/sweep_ws_pairs.py --whole`` timed: which plans the test changes,
and what their measured arms give (the arm "alone", the rule's plan, against the arm whose plan the
test makes: "alone_whole", stream-K off, where it matches). Plans are made on meta tensors for
``DEFAULT_SM_COUNT`` SMs, as the GPU made them (each file's alone plans are checked against it).

Usage: PYTHONPATH=. python lab/ws_alone_gain_test.py bench/results/logs/h100-2026-12-07-ws-pairs-whole-*.json
"""

from __future__ import annotations

import argparse
import json
import math

import torch

from cuda_ref import _matmul as cm
from cuda_ref import _matmul_wgmma as wg
from kernel_common import DEFAULT_SM_COUNT, cdiv
from lab.sweep_ws_pairs import forced

RULE = wg._last_wave_units


def gain_tested(M, N, K, itemsize, sms, a_mmajor, bn) -> int:
    """``_last_wave_units``, but a last wave of blocks alone shared only where the split model gives
    at most WS_SK_WAVE_GAIN of the time whole (and there is more than one wave)."""
    sk = RULE(M, N, K, itemsize, sms, a_mmajor, bn)
    cluster = wg.ws_cluster(M)
    pairs, k_tiles = sms // cluster, cdiv(K, 128 // itemsize)
    units = wg._units(M, N, a_mmajor, bn)
    tail = units % pairs
    measured_alone = (cluster == 1 and M >= wg.WS_SK_MIN_M and sk == tail and 0 < tail <= wg.WS_SK_MAX_FILL * pairs
                      and tail * k_tiles >= wg.WS_SK_MIN_SLICES * pairs)
    if not measured_alone:
        return sk
    shared, whole = (wg.ws_split_time(M, N, K, itemsize, sms, a_mmajor, 1, bn, s) for s in (sk, 0))
    return sk if units > pairs and shared <= wg.WS_SK_WAVE_GAIN * whole else 0


def plan(M, N, K, layout, rule) -> str:
    wg._last_wave_units = rule
    try:
        forced((1, True))  # blocks alone, stream-K on (the sweep's arm "alone")
        a = torch.empty(M, K, device="meta", dtype=torch.bfloat16)  # (the sweep's operands, as metadata)
        b = (torch.empty(N, K, device="meta", dtype=torch.bfloat16).t() if layout == "wt"
             else torch.empty(K, N, device="meta", dtype=torch.bfloat16))
        return cm.describe(a, b, variant="wgmma_ws")
    finally:
        wg._last_wave_units = RULE
        forced(None)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("files", nargs="+")
    args = p.parse_args()
    assert DEFAULT_SM_COUNT == 132, "the sweeps ran on an H100 (132 SMs)"
    flushed, loop = [], []
    for path in args.files:
        with open(path) as fh:
            rows = json.load(fh)["rows"]
        for row in rows:
            (M, N, K), plans = row["shape"], row["plans"]
            rule, tested = plan(M, N, K, row["layout"], RULE), plan(M, N, K, row["layout"], gain_tested)
            assert rule == plans["alone"], (row["shape"], rule, plans["alone"])
            if tested == rule:
                continue
            arm = next((name for name, made in plans.items() if made == tested), None)
            if arm is None:
                print(f"{M}x{N}x{K}: {rule} -> {tested} (not timed)")
                continue
            f, b = row["ms"]["alone"] / row["ms"][arm], row["loop_ms"]["alone"] / row["loop_ms"][arm]
            flushed.append(f)
            loop.append(b)
            print(f"{M}x{N}x{K}: {rule.split('grid ')[1]} -> {arm} ({tested.split('grid ')[1]}): "
                  f"{f:.3f} flushed, {b:.3f} back to back")
    if flushed:
        gm = lambda v: math.exp(sum(map(math.log, v)) / len(v))  # noqa: E731
        print(f"{len(flushed)} plans change (timed): new over old speed {gm(flushed):.3f} flushed, "
              f"{gm(loop):.3f} back to back")


if __name__ == "__main__":
    torch.set_grad_enabled(False)
    main()
