"""variant=None's CUDA matmul as shipped against an earlier selection (``BEFORE``: the module
constants it had), on the drawn shapes where the two make different plans: each checked against
torch, timed beside torch flushed in turns and back to back (``lab.forced_plans.time_forced``: each
plan launched as planned). Prints each changed case and the geomeans; writes JSON.

EARLIER: "053", decision 053's before: wgmma_swap without 192-row tiles of W or pairs, its shape
model before the MMA term, no more than swap_max_blocks row blocks; "054", decision 054's before:
wgmma_swap's blocks only near the fewest, its shape model before the wave's term, never weighed
against wgmma_ws's model; "runs_4096": few_rows_mma's K in runs on a row-major b only from
K = 4096 (as on W.t()); "no_pairs": as shipped but without wgmma_swap's row blocks in pairs;
"no_cluster": as shipped but every split of wgmma_swap summed by the second launch (decision 052's);
"promotion_256": the same plans with their tensor maps' L2 promotion at 256 bytes (``--all``: every
case is timed, since the plans' descriptions do not change); "f32_tiles": exact float32 before decision
059 (double_buffered on small products whose A needs a copy; pipelined's large tile unless its tiles
were fewer than the SMs, then small; K in runs of at least 512 only to fill empty block slots).

Usage (Hopper GPU): PYTHONPATH=. python3 lab/ab_selection.py [--seed 105] [--count 200] [--rows 1 16384]
    [--layouts wt row] [--before 053|054|runs_4096|no_pairs|no_cluster|promotion_256|f32_tiles] [--all]
    [--dtype bfloat16|float16|float32] [--json F]  (float32: exact, torch's "highest")
"""

from __future__ import annotations

import json
import math

import torch

from bench.workloads import draw_matmul
from cuda_ref import _matmul as cm
from cuda_ref import _matmul_float32 as f32
from cuda_ref import _matmul_few_rows as fr
from cuda_ref import _matmul_swap as sw
from cuda_ref import _tma as tma
from lab.forced_plans import operands, parser, time_forced


def mid_model(fixed, row, mma):
    """A swap_mid_model of the form before decision 054: no wave, NR^2 or own split terms."""
    return {"fixed_us": fixed, "row_slice_us": row, "mma_us": mma, "wave_us": 0.0, "nr_sq_us": 0.0,
            "cluster_sum_us": sw.SWAP_CLUSTER_SUM_US, "cluster_row_us": sw.SWAP_CLUSTER_ROW_US,
            "reduce_us": sw.SWAP_REDUCE_US, "sum_us_mb": 1e3 / sw.SWAP_SUM_GBS}


def config_for_058(variant, M, N, sms, K=1, aligned=False):
    """The float32 walk's tile before decision 059 (pipelined: large, or small where large tiles are fewer than SMs)."""
    if variant != "pipelined":
        return f32.config_for(variant, M, N, sms, K, aligned)
    cfg = f32.PIPELINED["large"]
    if f32.cdiv(M, cfg.bm) * f32.cdiv(N, cfg.bn) < sms:
        cfg = f32.PIPELINED["small"]
    return f32.instance_for(cfg, M, N, K, aligned)


def float32_runs_058(cfg, M, N, K, sms):
    """K's runs before decision 059: as many as fill empty block slots, each at least 512 long."""
    if not cfg.k_runs:
        return 1, K
    runs = max(1, min(sms * cfg.blocks_per_sm // (f32.cdiv(M, cfg.bm) * f32.cdiv(N, cfg.bn)), K // 512))
    k_run = f32.k_run_of(cfg, K, runs)
    return f32.cdiv(K, k_run), k_run


RULES_058 = (*cm.RULES[:-1], cm.Rule("double_buffered", lambda a, b: a.numel() * b.shape[1] <= cm.SMALL_PRODUCT
                                     and not cm.rows_aligned16(a.t()), "before decision 059"), cm.RULES[-1])

BEFORE_054 = {(sw, "SWAP_ANY_WIDTH"): False, (sw, "SWAP_VS_WS_MAX_M"): 0}
EARLIER = {"053": {(sw, "SWAP_WIDE_TILE"): None,
                   (sw, "SWAP_MID_MODEL"): mid_model(sw.SWAP_FIXED_US, sw.SWAP_ROW_SLICE_US, 0.0),
                   (sw, "SWAP_ONE_WAVE_MAX_BLOCKS"): sw.SWAP_MAX_BLOCKS, (sw, "SWAP_PAIRS"): False, **BEFORE_054},
           "054": {(sw, "SWAP_MID_MODEL"): mid_model(6.65, 0.000978, 8.13e-6), **BEFORE_054},
           "runs_4096": {(fr, "FEW_ROWS_MMA_MIN_K_ROW"): 4096},
           "no_pairs": {(sw, "SWAP_PAIRS"): False},
           "no_cluster": {(sw, "SWAP_CLUSTER_RUNS"): ()},
           "promotion_256": {(tma, "L2_PROMOTION"): tma.L2_PROMOTION_256B},
           "f32_tiles": {(cm, "config_for"): config_for_058, (cm, "float32_runs"): float32_runs_058,
                         (cm, "RULES"): RULES_058}}
BEFORE: dict = {}
SHIPPED: dict = {}


def forced(before):
    """The earlier selection (True) or the shipped one (False, None) for the plans made next."""
    for (module, name), value in (BEFORE if before else SHIPPED).items():
        setattr(module, name, value)
    cm._PLANS.clear()
    tma.encode_2d.cache_clear()  # (maps made under the other selection's constants)
    tma.encode_3d.cache_clear()


def geomean(xs):
    return math.exp(sum(map(math.log, xs)) / len(xs)) if xs else float("nan")


def main() -> None:
    p = parser(__doc__, 105, (1, 16384))
    p.add_argument("--layouts", nargs="+", default=["wt", "row"])
    p.add_argument("--before", default="053", choices=EARLIER, help="the earlier selection (EARLIER)")
    p.add_argument("--all", action="store_true", help="time every case, not only those planned differently")
    p.add_argument("--dtype", default="bfloat16", choices=("bfloat16", "float16", "float32"))
    args = p.parse_args()
    BEFORE.update(EARLIER[args.before])
    SHIPPED.update({key: getattr(*key) for key in BEFORE})
    rows = []
    for M, N, K in draw_matmul(args.count, args.seed):
        if not args.rows[0] <= M <= args.rows[1]:
            continue
        for lay in args.layouts:
            a, b = operands(M, N, K, lay, getattr(torch, args.dtype))
            forced(False)
            new = cm.describe(a, b)
            forced(True)
            old = cm.describe(a, b)
            forced(None)
            if new == old and not args.all:
                continue
            ms, loop_ms = time_forced(None, a, b, {"new": False, "before": True}, forced, 30)
            t, tl = ms["torch"], loop_ms["torch"]
            rows.append({"shape": [M, N, K], "layout": lay, "new_plan": new, "before_plan": old, "ms": ms,
                         "loop_ms": loop_ms})
            print(f"{M}x{N}x{K} {lay}: x torch {t / ms['before']:.2f} -> {t / ms['new']:.2f}, back to back "
                  f"{tl / loop_ms['before']:.2f} -> {tl / loop_ms['new']:.2f} | {old} -> {new}", flush=True)
            write(args, rows)  # (each case: a cut run keeps what it timed)
    for key in ("ms", "loop_ms"):
        ratio = [r[key]["before"] / r[key]["new"] for r in rows]
        print(f"{key}: {len(rows)} cases, new / before speed geomean {geomean(ratio):.3f}, "
              f"min {min(ratio, default=float('nan')):.2f}; x torch before {geomean([r[key]['torch'] / r[key]['before'] for r in rows]):.3f}"
              f" -> {geomean([r[key]['torch'] / r[key]['new'] for r in rows]):.3f}")


def write(args, rows) -> None:
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"device": torch.cuda.get_device_name(), "seed": args.seed, "count": args.count,
                       "before": args.before, "dtype": args.dtype, "what": __doc__.splitlines()[0], "rows": rows},
                      f, indent=1)


if __name__ == "__main__":
    main()
