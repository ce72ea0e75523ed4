"""Two draws of the same seed, paired shape by shape (``bench compare --size-set dense`` results):
for a backend's default, the geometric mean of new x-vs-torch over old, flushed and back to back,
split into the cases whose plan changed and those whose plan did not, the changed ones listed; then,
by the bands of rows (``bench.tables.ROW_BANDS``), the unchanged plans' own times and torch's, old
over new (how the machines or the runs differ); last, by the new default's variant, old over new
time (a kernel changed under the same plans).

Usage: python lab/pair_draws.py OLD.json NEW.json [--backend triton]
"""

from __future__ import annotations

import argparse
import math

import json
from bench.tables import ROW_BANDS
from bench.results_io import open_text


def _gm(values) -> float:
    return math.exp(sum(map(math.log, values)) / len(values)) if values else float("nan")


def _cases(path: str, backend: str, role: str = "impl") -> dict:
    return {(tuple(r["shape"]), r["layout"]): r for r in json.load(open_text(path))["records"]
            if r["role"] == role and (role != "impl" or r["backend"] == backend and r.get("default") and r["ok"])}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("old")
    p.add_argument("new")
    p.add_argument("--backend", default="triton", choices=("cuda", "triton"))
    args = p.parse_args(argv)
    old, new = _cases(args.old, args.backend), _cases(args.new, args.backend)
    ref_old, ref_new = _cases(args.old, "", "reference"), _cases(args.new, "", "reference")
    changed, same = [], []
    for k in sorted(old.keys() & new.keys()):
        o, n = old[k], new[k]
        pair = (n["x_vs_ref"] / o["x_vs_ref"], n["x_loop_vs_ref"] / o["x_loop_vs_ref"], k,
                o["extra"].get("config", ""), n["extra"].get("config", ""))
        (same if pair[3] == pair[4] else changed).append(pair)
    for name, group in (("unchanged", same), ("changed", changed)):
        print(f"{name}: {len(group)} cases, new / old x torch: flushed {_gm([g[0] for g in group]):.3f}, "
              f"back to back {_gm([g[1] for g in group]):.3f}")
    for flushed, loop, (shape, layout), was, now in changed:
        print(f"  {'x'.join(map(str, shape))} {layout}: {flushed:.3f} / {loop:.3f}  {was} -> {now}")
    for lo, hi in ROW_BANDS:
        keys = [g[2] for g in same if lo <= g[2][0][0] <= (hi or 1 << 62)]
        ours = _gm([old[k]["median_ms"] / new[k]["median_ms"] for k in keys])
        torch = _gm([ref_old[k]["median_ms"] / ref_new[k]["median_ms"] for k in keys if k in ref_old and k in ref_new])
        print(f"rows {lo}-{hi or ''}: {len(keys)} unchanged, old / new time: ours {ours:.3f}, torch {torch:.3f}")
    by_variant = {}  # (a kernel's own change shows under its variant, the plans being the same)
    for k in old.keys() & new.keys():
        by_variant.setdefault(new[k]["variant"], []).append(k)
    for variant, keys in sorted(by_variant.items()):
        ratio = {k: old[k]["median_ms"] / new[k]["median_ms"] for k in keys}
        worst = min(keys, key=ratio.get)
        print(f"{variant}: {len(keys)} cases, old / new time: flushed {_gm(ratio.values()):.3f}, back to back "
              f"{_gm([old[k]['loop_ms'] / new[k]['loop_ms'] for k in keys]):.3f}; worst {ratio[worst]:.3f} "
              f"({'x'.join(map(str, worst[0]))}), best {max(ratio.values()):.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
