"""Check every implementation, then time them: the engine behind ``python -m bench compare``.

Every version is validated before any is timed (llm.c's dev/cuda). A failed check stays in the
table as a failure; it is never dropped.
"""

from __future__ import annotations

import datetime
import os
import platform
import subprocess

import torch

from bench import registry, workloads
from bench.ceilings import ceiling_key, copy_bandwidth_gbs, cublas_tflops
from bench.results_io import SCHEMA, Record
from bench.specs import SPECS, Comparison
from bench.timing import FLUSH, LOOP_TURNS, TURNS, time_interleaved, time_loops

def git_state(path) -> tuple[str | None, bool | None]:
    """(HEAD commit, whether the working tree differs from it) for the checkout holding ``path``.
    A tree copied with a stale or no ``.git`` (a GPU machine's copy) must not pass for that
    commit: any modified or untracked, not ignored, file makes it dirty. (None, None) without
    git or history."""
    try:
        def git(*args):
            return subprocess.run(["git", *args], cwd=path, capture_output=True, text=True, timeout=20)
        commit = git("rev-parse", "HEAD").stdout.strip()
        # a copy of the tree without its history answers "HEAD": record nothing rather than that
        if not (len(commit) == 40 and all(c in "0123456789abcdef" for c in commit)):
            return None, None
        status = git("status", "--porcelain")
        return commit, (bool(status.stdout.strip()) if status.returncode == 0 else None)
    except (OSError, subprocess.SubprocessError):
        return None, None


def run_metadata() -> dict:
    meta = {
        "schema": SCHEMA,
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "host": platform.node(),
        "python": platform.python_version(),
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
    }
    for mod in ("triton", "cupy", "numpy"):
        try:
            meta[mod] = __import__(mod).__version__
        except Exception:  # noqa: BLE001 - absent packages are recorded as absent
            meta[mod] = None
    if torch.cuda.is_available():
        props = torch.cuda.get_device_properties(0)
        meta["device"] = props.name
        meta["sm_count"] = props.multi_processor_count
        meta["capability"] = f"{props.major}.{props.minor}"
        meta["flush"] = FLUSH  # records without the key were timed after do_bench's zeroing flush
        meta["turns"] = TURNS  # records without the key timed a case's implementations one after another
        meta["loop_turns"] = LOOP_TURNS  # records without the key timed each one's loop rounds alone (5)
        # Triton matmul's configs: tuned per bucket on first call (compare's default) or the heuristic's
        meta["triton_tuning"] = "first call" if os.environ.get("TRITON_IMPL_TUNE") == "1" else "off"
        # and the tables it reads first: the program's own file, then the one the package ships
        from triton_impl import _tuning
        meta["triton_tables"] = _tuning.state(torch.device("cuda", torch.cuda.current_device()))
        # and CUDA's measured picks of a variant (16-bit on Hopper)
        from cuda_ref import _picks
        meta["cuda_picks"] = _picks.state(f"sm_{props.major}{props.minor}")
        # and which NVRTC built the CUDA kernels (shipped cubins, else CuPy's at first call)
        from cuda_ref.compile import build_state
        meta["cuda_build"] = build_state()
        try:
            out = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                                 capture_output=True, text=True, timeout=20)
            meta["driver"] = out.stdout.strip().splitlines()[0] if out.returncode == 0 else None
        except (OSError, subprocess.SubprocessError, IndexError):
            meta["driver"] = None
    else:
        meta["device"] = "cpu (no GPU; Triton interpreter, no timings)"
    meta["git_commit"], meta["git_dirty"] = git_state(os.path.dirname(os.path.abspath(__file__)))
    return meta


def _pick(impl: registry.Impl, inputs) -> bool:
    """Does variant=None of this backend pick ``impl``'s variant for these inputs?"""
    if impl.backend not in ("cuda", "triton"):
        return False
    base = registry.base_algorithm(impl.algorithm)  # (addmm, bmm: matmul's pick, on a and b)
    try:
        if base != impl.algorithm:
            return registry.package(impl.backend).pick(base, *inputs[:2], biased=impl.algorithm == "addmm") == impl.variant
        return registry.package(impl.backend).pick(base, *inputs) == impl.variant
    except ValueError:  # variant=None refuses these inputs (cuda_ref's batches that run only by name)
        return False


def check_case(spec, impls, inputs) -> dict:
    """Run every impl once on the same inputs (each in its own layout) into a poisoned out;
    compare with the float64 (or exact) reference and with the torch reference's output.
    Returns {key: (Comparison, output or None)}."""
    ref = spec.reference(inputs)
    results = {}
    for impl in impls:
        own = spec.prepare(inputs, impl.layout)
        snapshot = [x.clone() for x in own]
        try:
            out = impl.fn(*own, out=spec.make_out(own))
            if out.is_cuda:
                torch.cuda.synchronize(out.device)
            cmp = spec.compare(out, ref, inputs) if impl.role != "ceiling" else Comparison(True, 0.0)
        except Exception as exc:  # noqa: BLE001 - a crash is a failed check, shown in the table
            out, cmp = None, Comparison(False, float("inf"), f"{type(exc).__name__}: {exc}")
        if not all(torch.equal(x, s) for x, s in zip(own, snapshot)):
            cmp = Comparison(False, cmp.max_rel_err, "modified its input; " + cmp.detail)
        results[impl.key] = (cmp, out)
    # cross-check: every backend against the torch reference's output on the same input
    refs = [results[i.key][1] for i in impls if i.role == "reference" and results[i.key][1] is not None]
    for impl in impls:
        cmp, out = results[impl.key]
        if impl.role == "impl" and cmp.ok and refs:
            cross = spec.compare(out, refs[0], inputs)
            if not cross.ok:
                results[impl.key] = (Comparison(False, cross.max_rel_err, "disagrees with torch: " + cross.detail), out)
    return results


def case_shapes(spec, sizes=None, size_set=None, gpu=True, seed: int = 0, rows=None) -> list[tuple]:
    """The shapes compare runs for ``spec``: ``--size``'s, a named size set's (``dense``, ``lora``:
    drawn with ``seed``, bench/workloads.py's ``DRAWN_SETS``; ``rows`` (lo, hi): only the
    drawn shapes whose first extent, matmul's and gemv's M, lies in [lo, hi], the draw's first
    DRAW_COUNT of them), or the spec's own for this device. Without a GPU a draw is short and its
    extents cut to ``CPU_DRAW_EXTENT`` (the interpreter is slow)."""
    if sizes and size_set:
        raise ValueError("give --size or --size-set, not both")
    draw = workloads.DRAWN_SETS.get(size_set, {}).get(spec.algorithm)
    if rows is not None and draw is None:
        raise ValueError("--rows narrows a drawn size set (--size-set dense)")
    if draw is not None:
        count = CPU_DRAW_COUNT if not gpu else workloads.DRAW_COUNT
        drawn = draw(count if rows is None else ROWS_POOL * count, seed)
        if rows is not None:
            drawn = [s for s in drawn if rows[0] <= s[0] <= rows[1]][:count]
        if not gpu:
            return [tuple(min(e, CPU_DRAW_EXTENT) for e in shape) for shape in drawn]
        return list(drawn)
    if size_set is not None:
        if size_set not in spec.size_sets:
            names = (*spec.size_sets, *(n for n, d in workloads.DRAWN_SETS.items() if spec.algorithm in d))
            raise ValueError(f"--size-set for {spec.algorithm} must be one of {', '.join(names)}, got {size_set!r}")
        return list(spec.size_sets[size_set])
    if sizes:
        return [spec.normalize_shape(s) for s in sizes]
    return list(spec.gpu_sizes if gpu else spec.cpu_sizes)


ROWS_POOL = 50          # --rows: shapes drawn a shape kept, at most (the kept ones are the first in the band)
CPU_DRAW_COUNT = 6      # a draw's shapes under the interpreter,
CPU_DRAW_EXTENT = 48    # each extent cut to this


def case_layouts(spec, layouts=None) -> tuple:
    """The spec's case layouts, or those of them named by ``--layout``."""
    for name in layouts or ():
        if name not in spec.case_layouts:
            raise ValueError(f"--layout for {spec.algorithm} must be one of {', '.join(spec.case_layouts)}, "
                             f"got {name!r}" if spec.case_layouts != (None,)
                             else f"--layout: {spec.algorithm} has no case layouts")
    return tuple(dict.fromkeys(layouts)) if layouts else spec.case_layouts  # each once


def chosen(algorithm, backends=None, variants=None, gpu: bool = True) -> list[registry.Impl]:
    """The implementations of ``algorithm`` that compare runs: those of ``backends`` and ``variants``
    (None: all), less those that need a GPU when there is none."""
    return [i for i in registry.select(algorithm)
            if (not backends or i.backend in backends) and (not variants or i.variant in variants)
            and (gpu or not i.needs_gpu)]


def compare(algorithms=None, backends=None, variants=None, dtypes=None, sizes=None, *,
            seed: int = 0, progress=print, ceilings=None, size_set=None, layouts=None,
            defaults_only: bool = False, shard: tuple[int, int] | None = None,
            rep_ms: float = 100, checkpoint=None, rows=None) -> tuple[dict, dict, list[Record]]:
    """Check and time. Returns (metadata, ceilings, records). Without a GPU: the Triton and
    torch rows on the spec's small CPU shapes under the interpreter, checked, not timed.
    ``size_set`` names one of each spec's ``size_sets``; ``layouts`` limits the case layouts;
    ``defaults_only`` keeps, per case, only what ``variant=None`` picks and torch's rows;
    ``shard`` (i, n) keeps shapes i, i + n, ... of each algorithm's list (1-based); ``rows`` (lo,
    hi) keeps a draw's shapes of lo to hi rows (``case_shapes``); ``rep_ms``: the
    flushed timing's budget per implementation and case, half of it back to back; ``checkpoint(meta,
    ceilings, records)`` after each case (a process killed outright keeps what it wrote)."""
    gpu = torch.cuda.is_available()
    device = "cuda" if gpu else "cpu"
    algorithms = algorithms or registry.algorithms()
    # every argument checked for every algorithm before anything runs
    plan = {a: (case_shapes(SPECS[a], sizes, size_set, gpu, seed, rows), case_layouts(SPECS[a], layouts))
            for a in algorithms}
    meta = run_metadata()
    if shard is not None:
        i, n = shard
        plan = {a: (shapes[i - 1::n], layouts) for a, (shapes, layouts) in plan.items()}
        meta["shard"] = f"{i}/{n}"
    meta["seed"] = seed  # the inputs' (and a drawn size set's shapes')
    meta["rep_ms"] = rep_ms
    if size_set is not None:
        meta["size_set"] = size_set
    if rows is not None:
        meta["rows"] = list(rows)
    ceilings = dict(ceilings or {})
    records: list[Record] = []
    try:
        _run(algorithms, plan, backends, variants, dtypes, gpu, device, seed, meta, ceilings, progress,
             defaults_only, records, checkpoint)
    except KeyboardInterrupt:  # (timeout -s INT): the cases done are kept, and the meta says so
        meta["interrupted"] = f"after {len(records)} records"
        progress(f"interrupted: keeping the {len(records)} records done")
    return meta, ceilings, records


def _run(algorithms, plan, backends, variants, dtypes, gpu, device, seed, meta, ceilings, progress, defaults_only,
         records, checkpoint=None):
    """``compare``'s cases, each one's records appended to ``records`` as it ends."""
    for algorithm in algorithms:
        spec = SPECS[algorithm]
        impls = chosen(algorithm, backends, variants, gpu)
        if not impls:
            continue
        if gpu and spec.ceiling == "copy" and "copy_gbs" not in ceilings:
            progress("measuring the device-copy ceiling (1 GiB)...")
            ceilings["copy_gbs"] = copy_bandwidth_gbs()
        shapes, layouts_here = plan[algorithm]
        for dtype_name in dtypes or spec.default_dtypes:
            if dtype_name not in spec.dtypes:
                raise ValueError(f"--dtype for {algorithm} must be one of {', '.join(spec.dtypes)}, got {dtype_name!r}")
            dtype = spec.torch_dtype(dtype_name)
            # the spec's mode for this dtype name (matmul's tf32) covers checks, timings, ceiling
            with spec.context(dtype_name):
                key = ceiling_key(spec, dtype_name)
                if gpu and spec.ceiling == "cublas" and key not in ceilings:
                    progress(f"measuring the cuBLAS {dtype_name} ceiling (8192^3)...")
                    value = cublas_tflops(dtype)
                    if value is not None:  # (int32: none)
                        ceilings[key] = value
                takes = [i for i in impls if i.takes(dtype_name)]  # e.g. the float32-only SGEMM walk
                for shape in shapes:
                    for case_layout in layouts_here:
                        records += _one_case(spec, takes, shape, dtype, dtype_name, case_layout, device, seed,
                                             meta, ceilings, progress, defaults_only)
                        if checkpoint:
                            checkpoint(meta, ceilings, records)


MIN_REPS = 10  # flushed calls of each implementation at least, when a slow one in the turns cuts the count


def _one_case(spec, impls, shape, dtype, dtype_name, case_layout, device, seed, meta, ceilings, progress,
              defaults_only):
    case = f"{spec.algorithm} {dtype_name} {'x'.join(map(str, shape))}"
    if case_layout:
        case += f" {spec.case_operand} {case_layout}"
    # the same values in every case layout (same seed), so one float64 reference fits them all
    inputs = spec.arrange(spec.make_inputs(shape, dtype, device, seed), case_layout)
    if defaults_only:
        impls = [i for i in impls if i.role != "impl" or _pick(i, inputs)]
    progress(f"{case}: checking {len(impls)} implementations")
    skip = {i.key: i.skips(shape, spec.numel(shape), case_layout) for i in impls}
    fits = [i for i in impls if skip[i.key] is None]
    checked = check_case(spec, fits, inputs)
    recs = []
    for impl in impls:
        # an implementation's own layout (gemv's A) is what it read; otherwise the case's
        rec = Record(spec.algorithm, impl.backend, impl.variant, impl.role, dtype_name, list(shape),
                     meta["device"], layout=impl.layout or case_layout, metric=spec.metric_of(dtype_name))
        if skip[impl.key]:
            rec.detail = f"skipped: {skip[impl.key]}"
        else:
            cmp, _ = checked[impl.key]
            rec.ok = None if impl.role == "ceiling" else cmp.ok
            rec.max_rel_err = None if impl.role == "ceiling" else cmp.max_rel_err
            rec.detail = cmp.detail
            rec.default = _pick(impl, inputs)
        recs.append(rec)
    del checked
    if device != "cuda":
        return recs
    progress(f"{case}: timing")
    prepared, timed = {}, []
    for impl, rec in zip(impls, recs):
        if rec.ok is False or skip[impl.key]:
            continue
        if impl.layout not in prepared:  # layout copies are made once, outside the timed region
            prepared[impl.layout] = spec.prepare(inputs, impl.layout)
        own = prepared[impl.layout]
        timed.append((impl, rec, own, spec.make_out(own)))
    flushed = time_interleaved([lambda impl=impl, own=own, out=out: impl.fn(*own, out=out)
                                for impl, _, own, out in timed], warmup_ms=meta["rep_ms"] / 4,
                               rep_ms=meta["rep_ms"], min_reps=MIN_REPS) if timed else []
    # as a program calls it, allocating its result: 200 calls, fewer where each takes long
    # (LOOP_REPS rounds of a quarter of rep_ms each: about the time 5 rounds of half took)
    calls = [max(3, min(200, int(meta["rep_ms"] / 4 / max(t.median_ms, 1e-3)))) for t in flushed]
    loops = time_loops([lambda impl=impl, own=own: impl.fn(*own) for impl, _, own, _ in timed],
                       calls=calls) if timed else []
    for (impl, rec, own, _), t, loop_ms in zip(timed, flushed, loops):
        rec.median_ms, rec.min_ms, rec.max_ms, rec.loop_ms = t.median_ms, t.min_ms, t.max_ms, loop_ms
        if impl.backend in registry.PACKAGES:  # the config that ran: a tuned one may differ from the heuristic's
            base = registry.base_algorithm(impl.algorithm)
            rec.extra["config"] = registry.package(impl.backend).describe(
                base, *(own[:2] if base != impl.algorithm else own), variant=impl.variant)
        seconds = t.median_ms * 1e-3
        rec.gbps = spec.bytes(shape, dtype) / seconds / 1e9
        flops = spec.flops(shape)
        rec.tflops = flops / seconds / 1e12 if flops else None
        key = ceiling_key(spec, dtype_name)
        if spec.ceiling == "copy" and key in ceilings:
            rec.ceiling, rec.pct_of_ceiling = "copy", 100 * rec.gbps / ceilings[key]
        elif spec.ceiling == "cublas" and key in ceilings and rec.tflops:
            rec.ceiling, rec.pct_of_ceiling = key, 100 * rec.tflops / ceilings[key]
    ref = next((r for r in recs if r.role == "reference" and r.median_ms), None)
    if ref:
        for rec in recs:
            if rec.median_ms:
                rec.x_vs_ref = ref.median_ms / rec.median_ms
                rec.x_loop_vs_ref = ref.loop_ms / rec.loop_ms
    return recs
