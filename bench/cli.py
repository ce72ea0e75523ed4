"""``python -m bench list [--json]`` and ``python -m bench compare ...``."""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import sys

_ROOT = pathlib.Path(__file__).resolve().parent.parent


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m bench",
                                description="Check and time every kernel of both backends.")
    sub = p.add_subparsers(dest="command", required=True)

    ls = sub.add_parser("list", help="every registered (algorithm, backend, variant)")
    ls.add_argument("--json", action="store_true", help="print JSON instead of a table")

    cmp = sub.add_parser("compare", help="check, then time, and print one table per shape")
    cmp.add_argument("--algorithm", action="append", help="repeatable; default: all")
    cmp.add_argument("--backend", action="append", choices=("cuda", "triton", "torch"),
                     help="repeatable; default: all")
    cmp.add_argument("--variant", action="append", help="repeatable; default: all")
    cmp.add_argument("--dtype", action="append", help="repeatable; default: the spec's defaults")
    cmp.add_argument("--size", action="append", nargs="+",
                     help="shapes such as 4096 or 12345x6789 (RxC, MxK, MxNxK); default: the spec's")
    cmp.add_argument("--seed", type=int, default=0)
    cmp.add_argument("--json", metavar="PATH", help="write the run's records and metadata")
    cmp.add_argument("--csv", metavar="PATH", help="write the records as CSV")
    rep = sub.add_parser("report", help="regenerate the README's results section from bench/results/")
    rep.add_argument("--check", action="store_true", help="exit 1 if the README is not current")
    rep.add_argument("--readme", default=str(_ROOT / "README.md"))
    rep.add_argument("--results", default=str(_ROOT / "bench" / "results"))
    doc = sub.add_parser("matmul-doc", help="regenerate cuda_ref/kernels/MATMUL.md (rates from the newest "
                                            "results file with float32 matmul at 4096^3, resources from NVRTC)")
    doc.add_argument("--results", default=str(_ROOT / "bench" / "results"),
                     help="a results JSON file, or a folder to take the newest from")
    doc.add_argument("--output", default=str(_ROOT / "cuda_ref" / "kernels" / "MATMUL.md"))
    doc.add_argument("--check", action="store_true", help="exit 1 if the file is not current")
    return p


def _matmul_doc(args) -> int:
    from bench.report import matmul_doc

    text = matmul_doc(args.results)
    path = pathlib.Path(args.output)
    if args.check:
        ok = path.exists() and path.read_text() == text
        print(f"{path} is current" if ok else f"{path} is stale: run python -m bench matmul-doc")
        return 0 if ok else 1
    path.write_text(text)
    print(f"wrote {path}")
    return 0


def _report(args) -> int:
    from bench.report import update_readme

    if args.check:
        ok = update_readme(args.readme, args.results, check=True)
        print("README results section is current" if ok else "README results section is stale: run python -m bench report")
        return 0 if ok else 1
    update_readme(args.readme, args.results)
    print(f"updated {args.readme}")
    return 0


def _list(args) -> int:
    from bench import registry

    rows = [{"algorithm": i.algorithm, "backend": i.backend, "variant": i.variant, "role": i.role,
             "layout": i.layout, "max_elems": i.max_elems, "needs_gpu": i.needs_gpu,
             "dtypes": list(i.dtypes) if i.dtypes else None} for i in registry.TABLE]
    if args.json:
        print(json.dumps(rows, indent=1))
    else:
        for r in rows:
            extra = f"  ({r['role']})" if r["role"] != "impl" else ""
            layout = f"  [{r['layout']}-major A]" if r["layout"] else ""
            dtypes = f"  ({', '.join(r['dtypes'])} only)" if r["dtypes"] else ""
            print(f"{r['algorithm']:<10} {r['backend']:<7} {r['variant']}{layout}{dtypes}{extra}")
    return 0


def _compare(args) -> int:
    import torch

    from bench import registry
    from bench.specs import parse_shape

    gpu = torch.cuda.is_available()
    if not gpu:
        # Must be set before triton_impl is imported: @triton.jit reads it at decoration time.
        os.environ.setdefault("TRITON_INTERPRET", "1")
        print("No CUDA GPU found: checking the Triton kernels under the interpreter on small CPU "
              "shapes; CUDA kernels and timings need a GPU.")
    else:
        print(f"GPU: {torch.cuda.get_device_name(0)}")
    known = registry.algorithms()
    for a in args.algorithm or ():
        if a not in known:
            raise SystemExit(f"--algorithm must be one of {', '.join(known)}, got {a!r}")
    sizes = [parse_shape(s) for group in (args.size or ()) for s in group] or None

    from bench.compare import compare
    from bench.report import format_tables, write_csv, write_json

    meta, ceilings, records = compare(args.algorithm, args.backend, args.variant, args.dtype, sizes,
                                      seed=args.seed, progress=lambda m: print(m, file=sys.stderr))
    if args.json:
        write_json(args.json, meta, ceilings, records)
    if args.csv:
        write_csv(args.csv, meta, records)
    print(format_tables(records, ceilings))
    failed = [r for r in records if r.ok is False]
    if failed:
        print(f"{len(failed)} check(s) FAILED", file=sys.stderr)
        return 1
    return 0


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return {"list": _list, "compare": _compare, "report": _report,
                "matmul-doc": _matmul_doc}[args.command](args)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
