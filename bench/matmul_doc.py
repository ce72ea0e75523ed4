"""cuda_ref/kernels/MATMUL.md, generated (``python -m bench matmul-doc``) from the newest results
files with float32 (the SGEMM walk) and bfloat16 (the tensor-core walk) matmul at 4096^3, and
from NVRTC's ptxas report of each instance."""

from __future__ import annotations

import pathlib
import re

import cuda_ref
from bench import nvrtc
from bench.results_io import Record, read_json, results_files
from bench.specs import SPECS
from bench.tables import fmt
from cuda_ref._matmul import TC_VARIANTS
from cuda_ref.catalog import RECORDS
from cuda_ref.compile import nvrtc_version
from kernel_common import DEFAULT_SM_COUNT

MATMUL_SHAPE = [4096, 4096, 4096]
MATMUL_DOC_SM_COUNT = DEFAULT_SM_COUNT  # which tile of a tile table 4096^3 gets: an H100 SXM / H200 (132 SMs)
_MATMUL = [r for r in RECORDS if r.algorithm == "matmul"]  # in the walk's order
IDEAS = {r.name: r.idea for r in _MATMUL}
# the walks, from the records: float32 (naive -> pipelined; the kernels for a few rows stand apart),
# the 16-bit tensor-core walk, and int8 (its own kernels, then the tensor-core ones that take it too)
FLOAT32_WALK = tuple(r.name for r in _MATMUL if "float32" in r.dtypes and r.max_m is None)
FLOAT32_ONLY = tuple(r.name for r in _MATMUL if "float16" not in r.dtypes and "int8" not in r.dtypes
                     and "int32" not in r.dtypes)
TC_WALK = tuple(r.name for r in _MATMUL if r.name in TC_VARIANTS)  # (wgmma_swap and the few-rows kernels stand apart)
INT8_WALK = (*(r.name for r in _MATMUL if r.dtypes == ("int8",)),
             *(r.name for r in _MATMUL if "int8" in r.dtypes and len(r.dtypes) > 1))


TC_DTYPE = "bfloat16"  # the tensor-core walk's table


def _launch(variant: str, shape, dtype: str):
    """The launch a call on contiguous row-major operands of ``shape`` makes (``cuda_ref.launch``)."""
    import torch

    M, N, K = shape
    a, b = (torch.empty(s, dtype=getattr(torch, dtype), device="meta") for s in ((M, K), (K, N)))
    return cuda_ref.launch("matmul", a, b, variant=variant)


def _compiled(arch: str) -> dict:
    """{file: NVRTC's result} of every matmul source, each instance its launchers ask for."""
    compiled = {}
    for file, names in cuda_ref.sources("matmul").items():
        compiled[file] = nvrtc.compile_file(file, tuple(names), arch=arch)
        if not compiled[file].ok:
            raise ValueError(f"{file} does not compile:\n{compiled[file].log}")
    return compiled


def _resources(compiled: dict, launch) -> str:
    """registers | smem (static plus the launch's dynamic) | spills of the instance ``launch`` runs."""
    res = next(c for c in compiled.values() if launch.name in c.lowered)
    k = res.kernels[res.lowered[launch.name]]
    return f"{k.registers} | {k.smem_bytes + launch.shared_mem} | {k.spill_stores} / {k.spill_loads}"


def _matmul_records(path, dtype: str = "float32") -> list[Record]:
    """``dtype`` at MATMUL_SHAPE with a row-major B (one record per variant: a run's B = W.t() ones stay out)."""
    return [r for r in read_json(path)["records"]
            if r.algorithm == "matmul" and r.dtype == dtype and list(r.shape) == MATMUL_SHAPE
            and SPECS["matmul"].case_layout_of(r.layout) == "row"]


def newest_matmul_results(results, dtype: str = "float32", variants=None, complete: bool = False) -> str | None:
    """``results`` itself if it is a file, else the newest file (by its run date) in that folder
    with ``dtype`` matmul records at 4096^3 of the CUDA walk (of one of ``variants``, if given: a
    Triton-only run does not count; with ``complete``, of every one: a compare of the default
    variant alone does not replace a walk's run), or None."""
    p = pathlib.Path(results)
    if p.is_file():
        return str(p)

    def has_walk(f) -> bool:
        ran = {r.variant for r in _matmul_records(f, dtype) if r.backend == "cuda"}
        if variants is None:
            return bool(ran)
        return set(variants) <= ran if complete else bool(ran & set(variants))
    found = [(read_json(f)["meta"].get("date", ""), f) for f in results_files(p) if has_walk(f)]
    return max(found)[1] if found else None


def _timing_line(source, dtype: str, ref: str) -> str:
    if not source:
        return f"Rates: not measured yet (no results file in bench/results/ has {dtype} matmul at 4096^3)."
    meta = read_json(source)["meta"]
    return (f"Rates: `bench/results/{pathlib.PurePath(source).name}` ({meta.get('device')}, "
            f"{meta.get('date', '')[:10]}"
            + (f", git {meta['git_commit'][:10]}" if meta.get("git_commit") else "")
            + (" with local changes" if meta.get("git_dirty") else "")
            + f"), {dtype} 4096^3, B row-major, median of CUDA-event timings with L2 flushed; x cuBLAS = "
            f"{ref} at the same shape in the same run; % of ceiling = of cuBLAS at 8192^3.")


def _rate(r) -> str:
    if r and r.ok and r.tflops:
        return f"{r.tflops:.1f} | {fmt(r.x_vs_ref, '.2f')} | {fmt(r.pct_of_ceiling, '.1f')}"
    if r and r.ok is False:
        return "FAIL | - | -"
    return "not measured yet | - | -"


def _reference_row(recs, name: str = "cuBLAS (`torch.matmul`)") -> list[str]:
    ref = next((r for r in recs.values() if r.backend == "torch" and r.tflops), None)
    return [f"| {name} | the reference | {ref.tflops:.1f} | 1.00 | "
            f"{fmt(ref.pct_of_ceiling, '.1f')} | | | | |"] if ref else []


def _walk_section(results, arch: str, dtype: str, variants, head: list[str], ref: str) -> list[str]:
    """A tensor-core-era walk's table: ``dtype`` at 4096^3 with B row-major, each variant's rate and
    the resources of the instance it runs there (from any of the matmul files)."""
    compiled = _compiled(arch)
    source = newest_matmul_results(results, dtype, variants, complete=True)
    recs = {r.variant: r for r in _matmul_records(source, dtype)} if source else {}
    unit = SPECS["matmul"].metric_of(dtype)
    lines = ["", *head, "", _timing_line(source, dtype, ref),
             f"Resources as above, for the {dtype} instance with B row-major.", "",
             f"| variant | idea | {unit} at 4096^3 | x torch | % of ceiling | instance | registers | smem "
             "| spills (st / ld) |",
             "|---|---|---:|---:|---:|---|---:|---:|---:|"]
    for v in variants:
        launch = _launch(v, MATMUL_SHAPE, dtype)
        idea = IDEAS[v] if (dtype, v) != ("int8", "wgmma") else \
            "wgmma's kernel with m64n256k32.s8 (128-byte slices, 128 k)"
        lines.append(f"| `{v}` | {idea} | {_rate(recs.get(v))} | `{launch.name}` | {_resources(compiled, launch)} |")
    return lines + _reference_row(recs, "cuBLAS (`torch.matmul`)" if dtype != "int8" else "cuBLASLt (`torch._int_mm`)")


def _tc_section(results, arch: str) -> list[str]:
    """The tensor-core walk: bfloat16 at 4096^3, its instances from matmul_tc.cu, matmul_wgmma.cu and matmul_wgmma_ws.cu."""
    head = ["# The tensor-core walk: float16 / bfloat16", "",
            "`cuda_ref/kernels/matmul_tc.cu`, `matmul_wgmma.cu` and `matmul_wgmma_ws.cu` (sm_90a): 16-bit inputs, float32 accumulation on "
            "tensor cores, for any M, N, K, B row-major or `W.t()`."]
    return _walk_section(results, arch, TC_DTYPE, TC_WALK, head, "torch.matmul")


def _int8_section(results, arch: str) -> list[str]:
    """The int8 walk: dp4a on CUDA cores, then mma.sync and wgmma in s8."""
    head = ["# int8: from dp4a to wgmma", "",
            "int8 inputs, int32 sums and result (exact), for any M, N, K. The tensor-core kernels read b K-major "
            "(`W.t()`) only: a row-major b is transposed once a call (`cuda_ref.transpose`), inside the time below. "
            "x torch is against `torch._int_mm` on the same layout; it is far faster on `W.t()` "
            "(`bench/results/h200-2026-11-22-s6-int8.json` has both)."]
    return _walk_section(results, arch, "int8", INT8_WALK, head, "torch._int_mm")


def matmul_doc(results, arch: str = "sm_90") -> str:
    """MATMUL.md: the CUDA matmul variants in walk order, each with its one idea
    (its catalog record), its rate at 4096^3 from the newest results file, and the ptxas
    resources of the instance it runs there (NVRTC for ``arch``, the loader's options)."""
    compiled = _compiled(arch)
    walk = {v: _launch(v, MATMUL_SHAPE, "float32") for v in FLOAT32_WALK}
    source = newest_matmul_results(results, "float32", FLOAT32_ONLY)
    recs = {r.variant: r for r in _matmul_records(source)} if source else {}
    timing = _timing_line(source, "float32", "torch.matmul (TF32 off)")
    made_with = ".".join(map(str, nvrtc_version()))
    lines = [
        "# CUDA matmul, float32: from the shared-memory tile to cuBLAS class",
        "",
        "<!-- generated by `python -m bench matmul-doc`; do not edit (tests/test_harness.py checks it) -->",
        "",
        "Each variant adds one idea to the one above it (`cuda_ref/kernels/matmul.cu`, read two "
        "consecutive kernels side by side). All are exact float32 FMA on CUDA cores, for any M, N, K "
        "and strides.",
        "",
        timing,
        f"Resources: ptxas for {arch} through NVRTC {made_with} with the loader's options, for the "
        f"template instance the launcher runs at 4096^3 ({MATMUL_DOC_SM_COUNT} SMs); smem is the "
        f"shared memory per block in bytes (static, plus the dynamic ring of `pipelined`).",
        "",
        "| variant | idea | TFLOP/s at 4096^3 | x cuBLAS | % of ceiling | instance | registers | smem | spills (st / ld) |",
        "|---|---|---:|---:|---:|---|---:|---:|---:|",
    ]
    for v, launch in walk.items():
        lines.append(f"| `{v}` | {IDEAS[v]} | {_rate(recs.get(v))} | `{launch.name}` | {_resources(compiled, launch)} |")
    lines += _reference_row(recs)
    shown = {launch.name for launch in walk.values()}
    from cuda_ref._matmul_float32 import float32_configs
    reached = {cfg.name: cfg.plan_launch(1, 1) for cfg in float32_configs() if cfg.name not in shown}
    others = [reached[n] for n in cuda_ref.sources("matmul")["matmul.cu"] if n in reached]  # the file's order
    if others:
        lines += ["", "Other instances in the tile table (picked by shape):", "",
                  "| instance | registers | smem | spills (st / ld) |", "|---|---:|---:|---:|"]
        lines += [f"| `{launch.name}` | {_resources(compiled, launch)} |" for launch in others]
    lines += _tc_section(results, arch) + _int8_section(results, arch)
    return "\n".join(lines) + "\n"


def doc_nvrtc_version(text: str) -> str | None:
    """The NVRTC version a generated MATMUL.md was made with (ptxas figures depend on it)."""
    m = re.search(r"through NVRTC (\d+\.\d+)", text)
    return m.group(1) if m else None
