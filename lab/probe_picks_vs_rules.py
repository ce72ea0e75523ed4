"""A shipped CUDA pick against the rules' pick on given shapes (bf16, b = W.t()): x torch flushed in
turns (``bench.timing.time_interleaved``) and back to back (``time_loop``), the table read and not.
The data behind ``pick_variant``'s refusal of a table's few_rows past its rule's rows
(bench/results/logs/h200-2026-11-30-picks-few-rows.txt).

Usage (Hopper GPU): python lab/probe_picks_vs_rules.py [M N K ...]
"""

import sys

import torch

import cuda_ref
from bench.timing import time_interleaved, time_loop
from cuda_ref import _matmul as cm
from cuda_ref import _picks

SHAPES = ((13, 896, 896), (9, 1024, 1024), (12, 1024, 1024), (16, 1024, 1024), (12, 2048, 1024),
          (15, 1536, 1024), (12, 8192, 1024), (16, 6144, 1024))


def main() -> None:
    given = [int(x) for x in sys.argv[1:]]
    shapes = [tuple(given[i:i + 3]) for i in range(0, len(given) - 2, 3)] or SHAPES
    table_read = _picks.enabled
    for M, N, K in shapes:
        a = torch.randn(M, K, device="cuda", dtype=torch.bfloat16)
        b = torch.randn(N, K, device="cuda", dtype=torch.bfloat16).t()
        table_key = _picks.key_of(a, b)
        pick = _picks.lookup("sm_90", table_key) or cm.pick_variant(a, b)
        _picks.enabled = lambda: False
        rule = cm.pick_variant(a, b)
        _picks.enabled = table_read
        fns = [lambda: torch.mm(a, b), lambda: cuda_ref.matmul(a, b, variant=pick),
               lambda: cuda_ref.matmul(a, b, variant=rule)]
        t = time_interleaved(fns, warmup_ms=10, rep_ms=40)
        loop = [time_loop(f) for f in fns]
        print(M, N, K, "pick", pick, "rule", cm.describe(a, b, rule)[:60], "| x torch flushed",
              round(t[0].median_ms / t[1].median_ms, 2), round(t[0].median_ms / t[2].median_ms, 2), "loop",
              round(loop[0] / loop[1], 2), round(loop[0] / loop[2], 2), "torch us", round(t[0].median_ms * 1e3, 1),
              flush=True)


if __name__ == "__main__":
    main()
