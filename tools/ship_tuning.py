"""Tune Triton's matmul over the buckets of a seeded draw of model shapes and write the table a fresh
install reads (``triton_impl/tuned_<arch>.json``, ``triton_impl/_tuning.py``): no program then
benchmarks on first use in those buckets. Entries already in the table stay unless tuned again;
the meta names the device, triton, the seed and the date. Check the result on a draw of another
seed (``python -m bench compare --size-set dense --seed M --no-tune``), never on the draw it was
tuned on, and name that results file in the meta's "results" when committing.

Usage (GPU): python tools/ship_tuning.py --seed N [--count 200] [--dtype bfloat16 ...]
             [--layout wt row] [--out FILE]
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import sys
import tempfile
import time


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seed", type=int, required=True, help="the draw's seed (bench/workloads.py)")
    p.add_argument("--count", type=int, default=200, help="shapes drawn")
    p.add_argument("--dtype", nargs="+", default=["bfloat16"], choices=("float16", "bfloat16", "float32"))
    p.add_argument("--layout", nargs="+", default=["wt", "row"], choices=("wt", "row"))
    p.add_argument("--out", help="the table to write (default: the package's for this GPU's architecture)")
    args = p.parse_args()
    # tune into a file of this run's own, the shipped table unread: every bucket benchmarked here
    os.environ["TRITON_IMPL_TUNING_FILE"] = os.path.join(tempfile.mkdtemp(), "tuning.json")
    os.environ["TRITON_IMPL_SHIPPED_TUNING"] = "0"

    import torch
    import triton

    from bench import workloads
    from triton_impl import tune, tuning

    device = torch.device("cuda")
    seen, start = set(), time.perf_counter()
    for M, N, K in workloads.draw_matmul(args.count, args.seed):
        for dtype in args.dtype:
            for layout in args.layout:
                mark = (dtype, layout, tuning.bucket(M, N, K))
                if mark in seen:
                    continue
                seen.add(mark)
                t = time.perf_counter()
                cfg = tune(M, N, K, dtype=getattr(torch, dtype), b_layout=layout)
                print(f"{M}x{N}x{K} {dtype} {layout}: {cfg} ({time.perf_counter() - t:.1f} s)", flush=True)
    tuned = json.loads(open(os.environ["TRITON_IMPL_TUNING_FILE"]).read())[tuning.device_key(device)]
    out = args.out or str(tuning.shipped_path(tuning.arch_of(device)))
    table = json.loads(open(out).read()) if os.path.exists(out) else {"entries": {}}
    table["entries"].update(tuned)
    table["meta"] = {"device": torch.cuda.get_device_name(device), "triton": triton.__version__,
                     "torch": torch.__version__, "seed": args.seed, "count": args.count, "dtypes": args.dtype,
                     "layouts": args.layout, "date": datetime.datetime.now(datetime.timezone.utc).isoformat(),
                     "command": "python tools/ship_tuning.py " + " ".join(sys.argv[1:]),
                     "results": table.get("meta", {}).get("results")}
    with open(out, "w") as f:
        json.dump(table, f, indent=1, sort_keys=True)
    print(f"{len(tuned)} buckets tuned in {time.perf_counter() - start:.0f} s; {len(table['entries'])} in {out}")


if __name__ == "__main__":
    main()
