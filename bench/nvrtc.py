"""Compile a ``.cu`` file through NVRTC without a GPU and read ptxas's resource report.

Uses pip's ``cuda-bindings`` and ``nvidia-cuda-nvrtc``; needs no driver. The options are the
loader's plus those CuPy adds (``cuda_ref/compile.py``), so what compiles here is what CuPy compiles on the GPU.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field

from cuda_ref.compile import full_options, nvrtc_compile, source


@dataclass
class KernelResources:
    registers: int = 0
    stack_bytes: int = 0
    spill_stores: int = 0
    spill_loads: int = 0
    smem_bytes: int = 0
    serialized: bool = False  # ptxas's C75xx: its wgmma instructions serialized (a wait after each)


@dataclass
class CompileResult:
    ok: bool
    log: str
    # lowered (mangled) name -> resources; and name expression -> lowered name
    kernels: dict[str, KernelResources] = field(default_factory=dict)
    lowered: dict[str, str] = field(default_factory=dict)
    cubin: bytes = b""  # the compiled module (for cuobjdump -sass)


def available() -> bool:
    try:
        from cuda.bindings import nvrtc  # noqa: F401
        return nvrtc.nvrtcVersion()[0] == nvrtc.nvrtcResult.NVRTC_SUCCESS
    except Exception:  # noqa: BLE001 - any failure to load means "not available"
        return False


def _parse_ptxas(log: str) -> dict[str, KernelResources]:
    out: dict[str, KernelResources] = {}
    current = None
    for line in log.splitlines():
        m = re.search(r"\(C75\d\d\).*wgmma.*function '(\S+)'", line)
        if m:  # (before the function's own lines)
            out.setdefault(m.group(1), KernelResources()).serialized = True
            continue
        m = re.search(r"Function properties for (\S+)", line)
        if m:
            current = out.setdefault(m.group(1), KernelResources())
            continue
        m = re.search(r"Compiling entry function '(\S+)'", line)
        if m:
            current = out.setdefault(m.group(1), KernelResources())
            continue
        if current is None:
            continue
        m = re.search(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads", line)
        if m:
            current.stack_bytes, current.spill_stores, current.spill_loads = map(int, m.groups())
        m = re.search(r"Used (\d+) registers", line)
        if m:
            current.registers = int(m.group(1))
        m = re.search(r"(\d+) bytes smem", line)
        if m:
            current.smem_bytes = int(m.group(1))
    return out


def compile_file(filename: str, name_expressions, arch: str = "sm_90") -> CompileResult:
    """NVRTC's result for ``name_expressions`` of ``filename`` (kept per process by source text:
    MATMUL.md, bench resources and the tests ask for the same files again)."""
    return _compile(source(filename), filename, tuple(name_expressions),
                    (*full_options(filename, arch), "--ptxas-options=-v"))


@functools.lru_cache(maxsize=32)
def _compile(text: str, filename: str, name_expressions: tuple, opts: tuple) -> CompileResult:
    built = nvrtc_compile(text, filename, name_expressions, opts)
    result = CompileResult(ok=built.ok, log=built.log, lowered=built.lowered, cubin=built.cubin)
    if built.ok:
        result.kernels = _parse_ptxas(built.log)
    return result
