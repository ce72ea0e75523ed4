"""``python -m bench list | compare | overhead | tune | plot | resources | report | matmul-doc | model | merge |
warmup``."""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import random
import sys
import textwrap
import time

_ROOT = pathlib.Path(__file__).resolve().parent.parent


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m bench",
                                description="Check and time every kernel of both backends.")
    sub = p.add_subparsers(dest="command", required=True)

    ls = sub.add_parser("list", help="every registered (algorithm, backend, variant), the case layouts and size sets")
    ls.add_argument("--json", action="store_true", help="print JSON instead of a table")

    cmp = sub.add_parser("compare", help="check, then time, and print one table per shape")
    cmp.add_argument("--algorithm", action="append", help="repeatable; default: all")
    cmp.add_argument("--backend", action="append", choices=("cuda", "triton", "torch"),
                     help="repeatable; default: all")
    cmp.add_argument("--variant", action="append", help="repeatable; default: all")
    cmp.add_argument("--dtype", action="append", help="repeatable; default: the spec's defaults")
    cmp.add_argument("--size", action="append", nargs="+",
                     help="shapes such as 4096 or 12345x6789 (RxC, MxK, MxNxK); default: the spec's")
    cmp.add_argument("--size-set", metavar="NAME",
                     help="a named set of shapes of the algorithm (python -m bench list shows them), e.g. matmul's "
                          "models: Llama 3 8B / 70B projections; dense: shapes drawn from the algorithm's "
                          "workload with --seed (bench/workloads.py); lora (matmul, addmm): a low-rank adapter's "
                          "products drawn with --seed")
    cmp.add_argument("--layout", action="append", metavar="NAME",
                     help="repeatable; run only these case layouts (matmul: B row-major 'row', or 'wt', the W.t() "
                          "of an (N, K) weight); default: all")
    cmp.add_argument("--defaults-only", action="store_true",
                     help="per case, only what variant=None picks, with torch's reference and ceiling")
    cmp.add_argument("--seed", type=int,
                     help="the inputs' seed, and a drawn size set's; default: a new one each run (in the meta)")
    cmp.add_argument("--rows", nargs=2, type=int, metavar=("LO", "HI"),
                     help="with a drawn size set: only drawn shapes whose first extent (M) is LO to HI, the "
                          "draw's first 200 of them (a band of rows, as a user's batch sizes fall)")
    cmp.add_argument("--shard", metavar="I/N", type=_shard,
                     help="run the I-th of N interleaved parts of the shapes (1-based: shapes I, I+N, ...): a draw "
                          "longer than one GPU call, in N calls; python -m bench merge joins their results")
    cmp.add_argument("--rep-ms", type=float, default=100,
                     help="milliseconds of flushed calls per implementation and case (default 100; back to back "
                          "gets half); a draw of hundreds of shapes may take less")
    cmp.add_argument("--json", metavar="PATH", help="write the run's records and metadata")
    cmp.add_argument("--csv", metavar="PATH", help="write the records as CSV")
    cmp.add_argument("--sweep", action="store_true",
                     help="square sizes from 256 up to the largest that fits (bench/sweep.py) instead of "
                          "the spec's; a progress bar on stderr")
    cmp.add_argument("--plot", metavar="DIR", help="write PNG plots of this run (throughput against size, roofline)")
    cmp.add_argument("--resources", action="store_true",
                     help="also print registers, shared memory, spills and occupancy per kernel")

    cmp.add_argument("--no-tune", action="store_true",
                     help="time Triton's grouped matmul with its heuristic configs; by default each unseen "
                          "bucket is tuned on its first call (TRITON_IMPL_TUNE=1), as a tuned program runs")

    ovh = sub.add_parser("overhead", help="host cost per call of every public function, torch's in the same run")
    ovh.add_argument("--json", metavar="PATH", help="write the records and metadata")

    tune = sub.add_parser("tune", help="tune Triton's grouped matmul for the buckets of the shapes named and "
                                       "keep the configs on disk (TRITON_IMPL_TUNING_FILE)")
    tune.add_argument("--size", action="append", nargs="+", required=True, help="MxNxK shapes")
    tune.add_argument("--dtype", default="bfloat16", choices=("float32", "float16", "bfloat16"))
    tune.add_argument("--layout", default="row", choices=("row", "wt"),
                      help="B row-major, or the W.t() of an (N, K) weight")

    plot = sub.add_parser("plot", help="draw the PNG plots from results files, without running anything")
    plot.add_argument("results", nargs="+", metavar="RESULTS.json")
    plot.add_argument("--out", metavar="DIR", required=True, help="where the PNGs go")

    res = sub.add_parser("resources", help="registers, shared memory, spills and occupancy of every kernel "
                                           "as launched (NVRTC / Triton for sm_90 without a GPU)")
    res.add_argument("--algorithm", action="append", help="repeatable; default: all")
    res.add_argument("--backend", action="append", choices=("cuda", "triton"), help="repeatable; default: both")
    res.add_argument("--dtype", default="float32", choices=("float32", "float16", "bfloat16"))
    res.add_argument("--json", action="store_true", help="print JSON instead of a table")
    wrm = sub.add_parser("warmup", help="call the defaults once on the shapes a program will pass, so that their "
                                        "kernels are compiled and cached before it serves (bench/warmup.py)")
    wrm.add_argument("--backend", action="append", choices=("cuda", "triton"), help="repeatable; default: both")
    wrm.add_argument("--dtype", action="append", choices=("float32", "float16", "bfloat16"),
                     help="repeatable; default bfloat16")
    wrm.add_argument("--size", action="append", nargs="+",
                     help="MxNxK matmul shapes, b an (N, K) weight (default: the models size set, Llama 3 8B / 70B "
                          "projections at 1 to 8192 rows)")
    wrm.add_argument("--layout", default="wt", choices=("row", "wt"), help="b as W.t() (default) or row-major")
    mrg = sub.add_parser("merge", help="join the results files of one run's shards (compare --shard I/N) into one")
    mrg.add_argument("out", help="the results file to write")
    mrg.add_argument("inputs", nargs="+", help="the shards' results files: one device, seed, size set and commit")
    rep = sub.add_parser("report", help="regenerate docs/RESULTS.md's results sections and README.md's standing "
                                        "table from bench/results/")
    rep.add_argument("--check", action="store_true", help="exit 1 if docs/RESULTS.md or README.md is not current")
    rep.add_argument("--readme", "--doc", dest="readme", default=str(_ROOT / "docs" / "RESULTS.md"),
                     help="the file holding the generated sections (default docs/RESULTS.md)")
    rep.add_argument("--front", default=str(_ROOT / "README.md"),
                     help="the file holding the standing table (default README.md)")
    rep.add_argument("--results", default=str(_ROOT / "bench" / "results"))
    mdl = sub.add_parser("model", help="transformers models (random weights): prefill, decode (also as CUDA "
                                       "graphs' replays) and a training step, torch's kernels and each backend's "
                                       "switch in turns, logits against a float32 referee")
    mdl.add_argument("--model", action="append", help="repeatable; default: every model of bench/models.py's ARCHS")
    mdl.add_argument("--workload", action="append", choices=("prefill", "decode", "decode_graph", "train"),
                     help="repeatable; default: all four (bench/models.py WORKLOADS)")
    mdl.add_argument("--backend", action="append", choices=("triton", "cuda"), help="repeatable; default: both")
    mdl.add_argument("--dtype", action="append", choices=("float16", "bfloat16"), help="repeatable; default bfloat16")
    mdl.add_argument("--size", default="small", choices=("tiny", "small", "medium"))
    mdl.add_argument("--device", default="cuda", help="cuda (default); cpu runs the harness on torch's kernels alone")
    mdl.add_argument("--rounds", type=int, help="rounds in turns (default per workload: bench/models.py ROUNDS)")
    mdl.add_argument("--block", type=int, help="timed calls per switch per round (default per workload)")
    mdl.add_argument("--json", metavar="PATH", help="write the results: {meta, records}")
    mdl.add_argument("--llama-step", action="store_true",
                     help="the Llama training step alone (sizes: --step-size), with a pass-through switch "
                          "beside torch's and ours, 40 rounds of 5 steps: the measurement before the suite")
    mdl.add_argument("--step-size", action="append", choices=("small", "medium"),
                     help="with --llama-step: repeatable; default both")
    doc = sub.add_parser("matmul-doc", help="regenerate cuda_ref/kernels/MATMUL.md (rates from the newest "
                                            "results file with float32 matmul at 4096^3, resources from NVRTC)")
    doc.add_argument("--results", default=str(_ROOT / "bench" / "results"),
                     help="a results JSON file, or a folder to take the newest from")
    doc.add_argument("--output", default=str(_ROOT / "cuda_ref" / "kernels" / "MATMUL.md"))
    doc.add_argument("--check", action="store_true", help="exit 1 if the file is not current")
    return p


def _model(args) -> int:
    import importlib.util

    import torch

    if importlib.util.find_spec("transformers") is None:
        print("error: bench model runs transformers' models: pip install transformers (the extra [models])",
              file=sys.stderr)
        return 2
    if args.llama_step or args.device == "cuda":
        _require_gpu("bench model times the models on a GPU (--device cpu: torch's kernels alone)")
    from bench import model, models
    from bench.compare import run_metadata
    if args.llama_step:  # the training step of bench/model.py, as it was measured before the suite
        results = []
        for size in args.step_size or ("small", "medium"):
            for backend in args.backend or ("triton", "cuda"):
                results.append(model.compare(backend, getattr(torch, (args.dtype or ["bfloat16"])[0]), size))
                print(model.report(results[-1]), flush=True)
        if args.json:
            pathlib.Path(args.json).write_text(json.dumps(results, indent=1))
        return 0
    unknown = set(args.model or ()) - set(models.ARCHS)
    if unknown:
        raise SystemExit(f"unknown model(s) {sorted(unknown)}; known: {', '.join(models.ARCHS)}")
    records = models.run_suite(
        models=args.model, workloads=tuple(args.workload or models.WORKLOADS),
        dtypes=tuple(getattr(torch, d) for d in args.dtype or ["bfloat16"]), size=args.size,
        backends=tuple(args.backend or ("triton", "cuda")), device=args.device, rounds=args.rounds,
        block=args.block, log=lambda line: print(line, flush=True))
    if args.json:
        meta = dict(run_metadata(), suite_size=args.size, suite_device=args.device)
        pathlib.Path(args.json).write_text(json.dumps({"meta": meta, "records": records}, indent=1))
    return 0


def _matmul_doc(args) -> int:
    from bench.matmul_doc import matmul_doc

    _in_checkout("matmul-doc", "cuda_ref/kernels/MATMUL.md", (args.results, "--results (and --output)"))
    text = matmul_doc(args.results)
    path = pathlib.Path(args.output)
    if args.check:
        ok = path.exists() and path.read_text() == text
        print(f"{path} is current" if ok else f"{path} is stale: run python -m bench matmul-doc")
        return 0 if ok else 1
    path.write_text(text)
    print(f"wrote {path}")
    return 0


def _in_checkout(command: str, writes: str, *given) -> None:
    """report and matmul-doc rewrite a file of the repository's checkout from its bench/results/;
    installed from a wheel, their defaults point into site-packages, which holds neither."""
    for path, flag in given:
        if not pathlib.Path(path).exists():
            raise ValueError(f"bench {command} rewrites {writes} of a checkout from its bench/results/, and "
                             f"{path} does not exist: run it from the repository root, or give {flag}")


def _shard(text: str) -> tuple[int, int]:
    """--shard's I/N as (I, N), 1 <= I <= N."""
    try:
        i, n = (int(x) for x in text.split("/"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"--shard takes I/N such as 1/3, got {text!r}") from None
    if not 1 <= i <= n:
        raise argparse.ArgumentTypeError(f"--shard I/N needs 1 <= I <= N, got {text!r}")
    return i, n


def _merge(args) -> int:
    from bench.results_io import merge_shards, read_json, write_json

    merged = merge_shards([(path, read_json(path)) for path in args.inputs])
    write_json(args.out, merged["meta"], merged["ceilings"], merged["records"])
    print(f"{args.out}: {len(merged['records'])} records from shards {', '.join(merged['meta']['shards'])}")
    return 0


def _report(args) -> int:
    from bench.readme import update_readme, update_standing

    _in_checkout("report", "docs/RESULTS.md", (args.readme, "--readme"), (args.front, "--front"),
                 (args.results, "--results"))
    if args.check:
        ok = True
        for path, update in ((args.readme, update_readme), (args.front, update_standing)):
            current = update(path, args.results, check=True)
            print(f"{path}: generated sections are current" if current
                  else f"{path}: generated sections are stale: run python -m bench report")
            ok &= current
        return 0 if ok else 1
    update_readme(args.readme, args.results)
    update_standing(args.front, args.results)
    print(f"updated {args.readme} and {args.front}")
    return 0


def _plot(args) -> int:
    from bench.plots import plot_files

    for path in plot_files(args.results, args.out):
        print(f"wrote {path}")
    return 0


def _resources(args) -> int:
    from bench import registry
    from bench.resources import format_resources, resources

    rows = resources(_one_of("--algorithm", args.algorithm, registry.algorithms()), args.backend, args.dtype,
                     progress=lambda m: print(m, file=sys.stderr, flush=True))
    print(json.dumps([r.as_dict() for r in rows], indent=1) if args.json else format_resources(rows))
    return 0


def _one_of(flag: str, given, default, known=None) -> list:
    """``given`` (``default`` when None), each name checked to be one of ``known`` (default's)."""
    known = known or default
    for a in given or ():
        if a not in known:
            raise ValueError(f"{flag} must be one of {', '.join(known)}, got {a!r}")
    return list(given or default)


def _list(args) -> int:
    from bench import registry
    from bench.specs import SPECS

    rows = [{"algorithm": i.algorithm, "backend": i.backend, "variant": i.variant, "role": i.role,
             "layout": i.layout, "max_elems": i.max_elems, "needs_gpu": i.needs_gpu,
             "dtypes": list(i.dtypes) if i.dtypes else None} for i in registry.TABLE]
    specs = {a: SPECS[a] for a in registry.known_algorithms()}

    def own(a, field):  # a derived algorithm's (addmm, bmm) where it is not its base's
        base = registry.base_algorithm(a)
        return getattr(specs[a], field) if a == base or getattr(specs[a], field) != getattr(specs[base], field) else None
    layouts = {a: list(own(a, "case_layouts")) for a in specs if (own(a, "case_layouts") or (None,)) != (None,)}
    size_sets = {a: {name: [list(shape) for shape in shapes] for name, shapes in own(a, "size_sets").items()}
                 for a in specs if own(a, "size_sets")}
    if args.json:
        print(json.dumps({"implementations": rows, "case_layouts": layouts, "size_sets": size_sets}, indent=1))
        return 0
    for r in rows:
        extra = f"  ({r['role']})" if r["role"] != "impl" else ""
        layout = f"  [{r['layout']}-major A]" if r["layout"] else ""
        dtypes = f"  ({', '.join(r['dtypes'])} only)" if r["dtypes"] else ""
        print(f"{r['algorithm']:<10} {r['backend']:<7} {r['variant']}{layout}{dtypes}{extra}")
    print()
    for a, names in layouts.items():
        print(f"{a}: every case runs for each layout of {specs[a].case_operand} (--layout): {', '.join(names)}")
    for a, sets in size_sets.items():
        for name, shapes in sets.items():
            print(f"{a} size set {name!r} ({len(shapes)} shapes, {specs[a].size_form}; --size-set {name}):")
            print(textwrap.fill(" ".join("x".join(map(str, shape)) for shape in shapes), 100,
                                initial_indent="  ", subsequent_indent="  "))
    print("every algorithm: size set 'dense' (--size-set dense --seed N): shapes drawn from its workload, "
          "bench/workloads.py; matmul and addmm: 'lora', a low-rank adapter's products drawn the same way")
    return 0


def _interrupt_on_stop() -> None:
    """SIGINT and SIGTERM (``timeout``'s, at a GPU machine's limit) raise KeyboardInterrupt, which
    ``compare`` turns into a run of the cases done: a GPU run inherited SIGINT at its default
    (killed: nothing written) and ``timeout`` sends SIGTERM unless told."""
    import signal

    def stop(signum, frame):
        raise KeyboardInterrupt(signal.Signals(signum).name)
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, stop)


def _checkpoint(path, every_s: float = 10.0):
    """compare's checkpoint: the results so far written to ``path`` at most every ``every_s``
    seconds, the meta saying the run had not ended (a GPU run killed outright, past any
    KeyboardInterrupt, keeps them); the run's own write replaces the file. None without a path."""
    if not path:
        return None
    from bench.results_io import write_json
    last = [time.monotonic()]

    def write(meta, ceilings, records):
        if time.monotonic() - last[0] >= every_s:
            write_json(path, {**meta, "interrupted": f"not ended: written after {len(records)} records"},
                       ceilings, records)
            last[0] = time.monotonic()
    return write


def _compare(args) -> int:
    import torch

    from bench import registry
    from bench.specs import parse_shape

    gpu = torch.cuda.is_available()
    if not gpu:
        # Must be set before triton_impl is imported: @triton.jit reads it at decoration time.
        os.environ.setdefault("TRITON_INTERPRET", "1")
    elif not args.no_tune:
        os.environ.setdefault("TRITON_IMPL_TUNE", "1")
    algorithms = _one_of("--algorithm", args.algorithm, registry.algorithms(), registry.known_algorithms())
    sizes = [parse_shape(s) for group in (args.size or ()) for s in group] or None
    if sum(map(bool, (args.sweep, sizes, args.size_set))) > 1:
        raise SystemExit("--sweep, --size and --size-set each pick the sizes: give one of them")

    from bench.compare import chosen, compare
    # a name of no implementation, or a choice that leaves nothing to run here, would be an empty run
    _one_of("--variant", args.variant, dict.fromkeys(i.variant for a in algorithms for i in registry.select(a)))
    picked = [i for a in algorithms for i in chosen(a, args.backend, args.variant)]
    if not picked:
        raise ValueError(f"no implementation of {', '.join(algorithms)} is of --backend "
                         f"{' '.join(args.backend or ['any'])} and --variant {' '.join(args.variant or ['any'])} "
                         f"(python -m bench list shows them)")
    if all(i.needs_gpu for i in picked):
        _require_gpu(f"compare: the {' and '.join(dict.fromkeys(i.backend for i in picked))} kernels chosen "
                     f"need a GPU")
    if not gpu:
        print("No CUDA GPU found: checking the Triton kernels under the interpreter on small CPU "
              "shapes; CUDA kernels and timings need a GPU.")
    else:
        print(f"GPU: {torch.cuda.get_device_name(0)}")

    from bench.results_io import write_csv, write_json
    from bench.tables import format_summary, format_tables

    if args.seed is None:
        args.seed = random.SystemRandom().randrange(1 << 31)
    print(f"seed {args.seed}")

    if args.sweep:
        from bench.sweep import run_sweep
        meta, ceilings, records = run_sweep(algorithms, args.backend, args.variant, args.dtype, seed=args.seed,
                                            layouts=args.layout, defaults_only=args.defaults_only)
    else:
        _interrupt_on_stop()
        meta, ceilings, records = compare(algorithms, args.backend, args.variant, args.dtype, sizes,
                                          seed=args.seed, progress=lambda m: print(m, file=sys.stderr),
                                          size_set=args.size_set, layouts=args.layout,
                                          defaults_only=args.defaults_only, shard=args.shard, rep_ms=args.rep_ms,
                                          rows=args.rows, checkpoint=_checkpoint(args.json))
    if args.json:
        write_json(args.json, meta, ceilings, records)
    if args.csv:
        write_csv(args.csv, meta, records)
    print(format_tables(records, ceilings))
    print(format_summary(records))
    if meta.get("interrupted"):
        print(f"(interrupted {meta['interrupted']}: the results cover the shapes before it)")
    if args.plot:
        try:
            import matplotlib  # noqa: F401
        except ImportError:  # a GPU image without it: the files above are enough to draw them later
            print("matplotlib is not installed: no plots; draw them from the results file with "
                  "python -m bench plot RESULTS.json --out DIR", file=sys.stderr)
        else:
            from bench.plots import plot_runs
            written = plot_runs([{"meta": meta, "ceilings": ceilings, "records": records}], args.plot)
            print(f"plots: {', '.join(map(str, written))}" if written else "plots: nothing was timed, no plots")
    if args.resources:
        from bench.resources import format_resources, resources
        print()
        print(format_resources(resources(algorithms, [b for b in args.backend or ("cuda", "triton") if b != "torch"])))
    failed = [r for r in records if r.ok is False]
    if failed:
        print(f"{len(failed)} check(s) FAILED", file=sys.stderr)
        return 1
    return 0


def _require_gpu(what: str) -> None:
    """A command (or a choice of kernels) that needs a GPU ends, without one, in main's error line."""
    import torch

    if not torch.cuda.is_available():
        raise ValueError(f"{what} (none found)")


def _overhead(args) -> int:
    _require_gpu("host cost is measured on a GPU")
    from bench.compare import run_metadata
    from bench.overhead import format_overhead, measure, measure_loops, measure_new_shapes
    from bench.results_io import write_json

    progress = lambda m: print(m, file=sys.stderr)  # noqa: E731
    records = measure(progress) + measure_loops(progress) + measure_new_shapes(progress)
    if args.json:
        write_json(args.json, dict(run_metadata(), kind="overhead"), {}, records)
    print(format_overhead(records))
    return 0


def _tune(args) -> int:
    import torch

    _require_gpu("tuning times kernels on a GPU")
    from bench.specs import SPECS, parse_shape
    from triton_impl import tune

    for group in args.size:
        for size in group:
            M, N, K = SPECS["matmul"].normalize_shape(parse_shape(size))
            cfg = tune(M, N, K, dtype=getattr(torch, args.dtype), b_layout=args.layout)
            print(f"{M}x{N}x{K} {args.dtype} B {args.layout}: {cfg}")
    return 0


def _warmup(args) -> int:
    _require_gpu("warmup compiles and loads kernels for a GPU")
    from bench.specs import MODEL_SHAPES, SPECS, parse_shape
    from bench.warmup import warm

    shapes = ([SPECS["matmul"].normalize_shape(parse_shape(s)) for group in args.size for s in group]
              if args.size else list(MODEL_SHAPES))
    start = time.perf_counter()
    records = warm(args.backend or ["cuda", "triton"], args.dtype or ["bfloat16"], shapes, args.layout)
    print(f"{len(records)} first calls in {time.perf_counter() - start:.1f} s")
    return 0


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    try:
        commands = {"list": _list, "compare": _compare, "overhead": _overhead, "tune": _tune, "plot": _plot,
                    "resources": _resources, "report": _report, "matmul-doc": _matmul_doc,
                    "model": _model, "merge": _merge, "warmup": _warmup}
        return commands[args.command](args)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
