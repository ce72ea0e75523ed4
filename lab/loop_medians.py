"""Back-to-back times of the small shapes of a transpose results file: per backend (each default,
torch's reference), the median and 90th percentile of ``loop_ms`` over the shapes whose torch time
is under 6 us flushed, apart for the shapes with a side of 1 (a plain copy) and the rest. The
figures decisions 001 and 032 cite.

Usage: python lab/loop_medians.py RESULTS.json[.gz] ...
"""

from __future__ import annotations

import json
import statistics
import sys

from bench.results_io import open_text


def main(paths) -> None:
    for path in paths:
        recs = json.load(open_text(path))["records"]
        ref = {tuple(r["shape"]): r for r in recs if r["role"] == "reference" and r.get("median_ms")}
        small = {s for s, r in ref.items() if r["median_ms"] < 0.006}
        side1 = {s for s in small if s[-1] == 1 or s[-2] == 1}
        for name, shapes in (("no side of 1", small - side1), ("side of 1", side1)):
            for backend in ("torch", "cuda", "triton"):
                us = sorted(r["loop_ms"] * 1e3 for r in recs if r["backend"] == backend and r.get("loop_ms")
                            and (r.get("default") or r["role"] == "reference") and tuple(r["shape"]) in shapes)
                if us:
                    print(f"{path.split('/')[-1]}: {name}, {backend} ({len(us)} shapes): loop median "
                          f"{statistics.median(us):.1f} us, p90 {us[9 * len(us) // 10]:.1f}")


if __name__ == "__main__":
    main(sys.argv[1:])
