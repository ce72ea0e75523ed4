"""The CUDA sources as NVRTC compiles them, and the cubins made ahead of time.

A launch compiles one template instance of one ``.cu`` file (``cuda_ref/loader.py``). A wheel
ships those cubins already made for the architectures in use (``PREBUILT_ARCHS``; the wgmma
files for sm_90a only), built through NVRTC when the wheel is built (``setup.py``; NVRTC is a
pip package and needs no GPU). The loader takes a shipped cubin when its key matches: a hash of
the instance's source text (headers inlined), the NVRTC options and the architecture. An edited
source or other options give another key, so a stale cubin is never loaded; any other
architecture, a source that changed, or a cubin the driver refuses goes through NVRTC as before.

This module imports neither torch nor CuPy: the wheel's build loads it on its own.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import multiprocessing
import os
import pathlib
import re
import sys
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field

KERNEL_DIR = pathlib.Path(__file__).resolve().with_name("kernels")
# every instance the launchers ask for, {file: [name expression, ...]} (the wheel's build reads it
# without importing the launchers; tests/test_prebuilt.py keeps it equal to cuda_ref.sources)
INSTANCES_FILE = KERNEL_DIR / "instances.json"
PREBUILT_DIR = pathlib.Path(__file__).resolve().with_name("prebuilt")  # a wheel's cubins and index.json
PREBUILT_ARCHS = ("sm_80", "sm_90")  # A100, H100 / H200; other GPUs compile on first use

# Options handed to NVRTC through CuPy. CuPy adds its own (-arch=sm_XX for the device, -ftz=true,
# --device-as-default-execution-space); cubins made here and tests/test_nvrtc.py use the same set.
OPTIONS = ("--std=c++17",)
CUPY_ADDED_OPTIONS = ("-ftz=true", "--device-as-default-execution-space")
# Files compiled for one architecture rather than the device's: wgmma exists only in sm_90a code
# (ptxas refuses it for sm_90), which runs on compute capability 9.0 alone.
FILE_ARCH = {"matmul_wgmma.cu": "sm_90a", "matmul_wgmma_ws.cu": "sm_90a", "matmul_wgmma_swap.cu": "sm_90a",
             "matmul_fp8.cu": "sm_90a", "matmul_grouped.cu": "sm_90a"}

_INCLUDE = re.compile(r'^\s*#include\s+"([\w.]+\.cuh)"\s*$')


def options(filename: str) -> tuple[str, ...]:
    """NVRTC options of a file as the loader hands them to CuPy: the loader's, and its architecture
    where it names one (CuPy then adds none of its own)."""
    arch = FILE_ARCH.get(filename)
    return OPTIONS + ((f"-arch={arch}",) if arch else ())


def arch_for(filename: str, device_arch: str) -> str:
    """The architecture ``filename`` is compiled for on a GPU of ``device_arch`` ("sm_90")."""
    return FILE_ARCH.get(filename, device_arch)


# Files whose instructions need a newer GPU than the oldest of PREBUILT_ARCHS (FP8 conversions,
# cvt.f16x2.e4m3x2, from compute capability 8.9): built for those from this architecture only.
FILE_MIN_ARCH = {"matmul_fp8_few_rows.cu": 89}


def runs_on(filename: str, device_arch: str) -> bool:
    """Can ``filename``'s code run on a ``device_arch`` GPU? (sm_90a code on compute capability 9.0
    alone; FILE_MIN_ARCH's files from their architecture on)"""
    if int(device_arch.removeprefix("sm_")) < FILE_MIN_ARCH.get(filename, 0):
        return False
    return filename not in FILE_ARCH or FILE_ARCH[filename] == device_arch + "a"


def full_options(filename: str, device_arch: str) -> tuple[str, ...]:
    """Every NVRTC option of ``filename``'s instances on a ``device_arch`` GPU: the loader's, CuPy's, the architecture."""
    return (*OPTIONS, *CUPY_ADDED_OPTIONS, f"-arch={arch_for(filename, device_arch)}")


def source(filename: str, _inlined: set | None = None) -> str:
    """The file's text with #line directives, so compiler errors point at the real line.

    ``#include "x.cuh"`` of a file in kernels/ is inlined here rather than left to NVRTC: CuPy's
    on-disk cache and ``key`` hash the source text, so an edited header must change that text. A
    header is inlined once (each says ``#pragma once``, which inlined text no longer honours). The
    directives name the file, not its path: the text (and its key) is the same wherever the
    package is installed."""
    inlined = set() if _inlined is None else _inlined
    lines = [f'#line 1 "{filename}"']
    for number, line in enumerate((KERNEL_DIR / filename).read_text().splitlines(), start=1):
        m = _INCLUDE.match(line)
        if m:
            if m.group(1) not in inlined:
                inlined.add(m.group(1))
                lines.append(source(m.group(1), inlined))
            lines.append(f'#line {number + 1} "{filename}"')
        else:
            lines.append(line)
    return "\n".join(lines) + "\n"


def key(filename: str, name: str, device_arch: str) -> str:
    """What a shipped cubin of instance ``name`` must have been built from to be loaded."""
    blob = json.dumps([source(filename), full_options(filename, device_arch), name])
    return hashlib.sha256(blob.encode()).hexdigest()[:32]


@dataclass
class Compiled:
    ok: bool
    log: str
    cubin: bytes = b""  # for a real architecture (-arch=sm_XX)
    ptx: str = ""       # for a virtual one (-arch=compute_XX)
    lowered: dict[str, str] = field(default_factory=dict)  # name expression -> lowered (mangled) name


def nvrtc_compile(text: str, filename: str, names, opts) -> Compiled:
    """``text`` compiled by NVRTC (pip's ``cuda-bindings``; no GPU needed) with ``opts``: the log,
    the cubin (the PTX where ``-arch`` names a virtual architecture) and each of ``names``' lowered
    names."""
    from cuda.bindings import nvrtc

    err, prog = nvrtc.nvrtcCreateProgram(text.encode(), filename.encode(), 0, [], [])
    assert err == nvrtc.nvrtcResult.NVRTC_SUCCESS, err
    try:
        for name in names:
            (err,) = nvrtc.nvrtcAddNameExpression(prog, name.encode())
            assert err == nvrtc.nvrtcResult.NVRTC_SUCCESS, (name, err)
        encoded = [o.encode() for o in opts]
        (err,) = nvrtc.nvrtcCompileProgram(prog, len(encoded), encoded)
        _, size = nvrtc.nvrtcGetProgramLogSize(prog)
        buf = b" " * size
        nvrtc.nvrtcGetProgramLog(prog, buf)
        result = Compiled(ok=err == nvrtc.nvrtcResult.NVRTC_SUCCESS, log=buf.decode(errors="replace").rstrip("\x00 \n"))
        if result.ok and any(o.startswith("-arch=compute_") for o in opts):
            _, size = nvrtc.nvrtcGetPTXSize(prog)
            ptx = b" " * size
            nvrtc.nvrtcGetPTX(prog, ptx)
            result.ptx = ptx.decode(errors="replace").rstrip("\x00")
        elif result.ok:
            _, size = nvrtc.nvrtcGetCUBINSize(prog)
            result.cubin = b" " * size
            nvrtc.nvrtcGetCUBIN(prog, result.cubin)
        if result.ok:
            for name in names:
                _, lowered = nvrtc.nvrtcGetLoweredName(prog, name.encode())
                result.lowered[name] = lowered.decode()
        return result
    finally:
        nvrtc.nvrtcDestroyProgram(prog)


def nvrtc_version() -> tuple[int, int]:
    from cuda.bindings import nvrtc
    _, major, minor = nvrtc.nvrtcVersion()
    return (major, minor)


def instances() -> dict[str, list[str]]:
    return json.loads(INSTANCES_FILE.read_text())


def _build_one(job) -> tuple[str, dict, bytes, str]:
    filename, name, device_arch = job
    opts = full_options(filename, device_arch)
    result = nvrtc_compile(source(filename), filename, (name,), opts)
    if not result.ok:
        raise RuntimeError(f"{filename} {name} for {device_arch}:\n{result.log}")
    entry = {"file": filename, "name": name, "arch": arch_for(filename, device_arch), "lowered": result.lowered[name]}
    return key(filename, name, device_arch), entry, result.cubin, result.log


def build(out: pathlib.Path, archs=PREBUILT_ARCHS, wanted: dict | None = None, jobs: int | None = None) -> dict:
    """Compile every instance (``wanted``, default ``instances()``) for each of ``archs`` into
    ``out``: one ``<key>.cubin`` each and ``index.json`` ({key: file, name, arch, lowered}, and
    the NVRTC version in its meta). A file built for one architecture (``FILE_ARCH``) is built for
    the devices of that architecture only."""
    wanted = instances() if wanted is None else wanted
    jobs_list = sorted({(f, n, a) for a in archs for f, names in wanted.items() for n in names
                        if runs_on(f, a)})
    out = pathlib.Path(out)
    out.mkdir(parents=True, exist_ok=True)
    entries = {}
    workers = jobs or min(len(jobs_list), os.cpu_count() or 1) or 1
    # fork: the workers inherit this module even where the wheel's build loaded it from its path
    context = multiprocessing.get_context("fork") if "fork" in multiprocessing.get_all_start_methods() else None
    with ProcessPoolExecutor(workers, mp_context=context) as pool:
        for k, entry, cubin, _ in pool.map(_build_one, jobs_list):
            (out / f"{k}.cubin").write_bytes(cubin)
            entries[k] = entry
    index = {"meta": {"nvrtc": list(nvrtc_version()), "archs": list(archs)}, "entries": entries}
    (out / "index.json").write_text(json.dumps(index, indent=1, sort_keys=True) + "\n")
    return index


_index_cache: dict[pathlib.Path, dict] = {}


def _index(where: pathlib.Path) -> dict:
    index = _index_cache.get(where)
    if index is None:
        path = where / "index.json"
        index = json.loads(path.read_text())["entries"] if path.is_file() else {}
        _index_cache[where] = index
    return index


def enabled() -> bool:
    """Shipped cubins are used unless ``CUDA_REF_PREBUILT=0``."""
    return os.environ.get("CUDA_REF_PREBUILT", "1") != "0"


def build_state(where: pathlib.Path | None = None) -> dict:
    """Which NVRTC built the kernels a run loads: the shipped cubins' (their index's meta; None where
    none ship or ``CUDA_REF_PREBUILT=0``) and CuPy's, which compiles any instance without one. The
    same source built by two NVRTC versions can differ by tens of registers (decision 071), so
    results record both."""
    where = PREBUILT_DIR if where is None else where
    path = where / "index.json"
    shipped = json.loads(path.read_text())["meta"].get("nvrtc") if enabled() and path.is_file() else None
    try:
        from cupy.cuda import nvrtc as cupy_nvrtc
        runtime = list(cupy_nvrtc.getVersion())
    except Exception:  # noqa: BLE001 - no CuPy (CPU runs): nothing compiles at run time
        runtime = None
    return {"prebuilt_nvrtc": shipped, "runtime_nvrtc": runtime}


def find(filename: str, name: str, device_arch: str, where: pathlib.Path | None = None):
    """(the cubin's path, its kernel's lowered name) of a shipped instance built from this very
    source and these options for ``device_arch``, or None."""
    if not enabled() or not runs_on(filename, device_arch):
        return None
    where = PREBUILT_DIR if where is None else where
    index = _index(where)
    if not index:
        return None
    k = key(filename, name, device_arch)
    entry = index.get(k)
    path = where / f"{k}.cubin"
    if entry is None or entry["name"] != name or not path.is_file():
        return None
    return path, entry["lowered"]


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m cuda_ref.compile", description=(
        "Build the cubins a wheel ships (into cuda_ref/prebuilt/ by default: an editable checkout "
        "then loads them too), or rewrite kernels/instances.json from the launchers."))
    p.add_argument("--out", type=pathlib.Path, default=PREBUILT_DIR)
    p.add_argument("--arch", nargs="+", default=list(PREBUILT_ARCHS))
    p.add_argument("--instances", action="store_true", help="rewrite kernels/instances.json (imports cuda_ref)")
    args = p.parse_args(argv)
    if args.instances:
        import cuda_ref
        table = {f: list(names) for alg in cuda_ref.ALGORITHMS for f, names in cuda_ref.sources(alg).items()}
        INSTANCES_FILE.write_text(json.dumps(table, indent=1) + "\n")
        print(f"wrote {INSTANCES_FILE} ({sum(map(len, table.values()))} instances)")
        return 0
    index = build(args.out, tuple(args.arch))
    print(f"{len(index['entries'])} cubins for {', '.join(args.arch)} in {args.out} (NVRTC {index['meta']['nvrtc']})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
