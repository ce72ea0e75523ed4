"""Per kernel as launched: registers, shared memory, spills, block size and the occupancy they allow.

CUDA: on a GPU from the CuPy function's attributes; without one from ptxas's report through NVRTC
for sm_90 (``bench/nvrtc.py``: the same options, the same numbers). Triton: the kernel compiled
for the GPU's architecture (sm_90 without a GPU) through ``triton.compile``, then Triton's own
ptxas run with ``-v`` on its PTX (registers, spills; without a GPU ``CompiledKernel`` cannot load
the binary that would report them), and ``metadata.shared`` (Triton's shared memory is dynamic).

The launches come from each backend's ``launches(algorithm, dtype)``: every variant's, at the shape
its catalog record names, with the block sizes and meta-parameters its plan picks there;
``python -m bench resources`` prints them.
"""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys
from dataclasses import asdict, dataclass

import torch

from kernel_common import cdiv

# H100 / H200 (sm_90) per-SM limits (CUDA C Programming Guide, compute capability 9.0; the
# occupancy calculator's allocation granularities).
REGS_PER_SM = 65536
REG_ALLOC_UNIT = 256            # registers are allocated per warp in units of 256
SMEM_PER_SM = 228 * 1024
SMEM_PER_BLOCK = 227 * 1024     # the most one block may use
SMEM_RESERVED_PER_BLOCK = 1024  # the runtime reserves 1 KiB per resident block
SMEM_ALLOC_UNIT = 128
THREADS_PER_SM = 2048
BLOCKS_PER_SM = 32
WARPS_PER_SM = THREADS_PER_SM // 32


def occupancy(threads: int, registers: int | None, smem_bytes: int) -> tuple[int, float, str]:
    """(resident blocks per SM, % of the SM's 64 warps, what limits it) on sm_90."""
    warps = cdiv(threads, 32)
    if smem_bytes > SMEM_PER_BLOCK:
        return 0, 0.0, "shared memory (over 227 KiB: cannot launch)"
    limits = {"threads": WARPS_PER_SM // warps}
    if registers:
        regs_per_warp = cdiv(registers * 32, REG_ALLOC_UNIT) * REG_ALLOC_UNIT
        limits["registers"] = (REGS_PER_SM // regs_per_warp) // warps
    if smem_bytes:
        per_block = cdiv(smem_bytes + SMEM_RESERVED_PER_BLOCK, SMEM_ALLOC_UNIT) * SMEM_ALLOC_UNIT
        limits["shared memory"] = SMEM_PER_SM // per_block
    limits["blocks"] = BLOCKS_PER_SM
    limiter = min(limits, key=limits.get)  # ties: the first listed
    blocks = limits[limiter]
    return blocks, 100.0 * blocks * warps / WARPS_PER_SM, limiter


@dataclass
class KernelUse:
    algorithm: str
    backend: str
    variant: str
    kernel: str                 # the template instance, or the Triton kernel and its meta-parameters
    shape: str                  # the representative input shape it was launched for
    threads: int                # threads per block
    registers: int | None = None
    smem_static: int | None = None
    smem_dynamic: int | None = None
    spill_stores: int | None = None
    spill_loads: int | None = None
    local_bytes: int | None = None  # stack frame / local memory per thread
    source: str = ""
    blocks_per_sm: int | None = None
    occupancy_pct: float | None = None
    limiter: str | None = None

    def finish(self) -> "KernelUse":
        if self.registers is not None:
            smem = (self.smem_static or 0) + (self.smem_dynamic or 0)
            self.blocks_per_sm, self.occupancy_pct, self.limiter = occupancy(self.threads, self.registers, smem)
        return self

    def as_dict(self) -> dict:
        return asdict(self)


# ---- measuring -------------------------------------------------------------------------------
def _capability() -> int:
    if torch.cuda.is_available():
        major, minor = torch.cuda.get_device_capability(0)
        return 10 * major + minor
    return 90


def cuda_resources(algorithm: str, dtype) -> list[KernelUse]:
    from bench import nvrtc
    from cuda_ref import loader

    import cuda_ref

    gpu = torch.cuda.is_available()
    files = cuda_ref.sources(algorithm)  # the files of the algorithm (matmul has several) and the names each compiles
    compiled = {}
    if not gpu and nvrtc.available():
        for file, names in files.items():
            compiled[file] = nvrtc.compile_file(file, names, "sm_90")
            if not compiled[file].ok:
                raise RuntimeError(f"NVRTC failed on {file}:\n{compiled[file].log}")
    rows = []
    for variant, launch, shape in cuda_ref.launches(algorithm, dtype):
        name = launch.name
        file = next(f for f, names in files.items() if name in names)
        row = KernelUse(algorithm, "cuda", variant, name, "x".join(map(str, shape)), launch.threads,
                        smem_dynamic=launch.shared_mem)
        if gpu:
            fn = loader.get_function(file, files[file], name, torch.cuda.current_device())
            row.registers, row.smem_static, row.local_bytes = fn.num_regs, fn.shared_size_bytes, fn.local_size_bytes
            row.source = f"CuPy, sm_{_capability()}"
        elif compiled:
            res = compiled[file].kernels[compiled[file].lowered[name]]
            row.registers, row.smem_static, row.local_bytes = res.registers, res.smem_bytes, res.stack_bytes
            row.spill_stores, row.spill_loads = res.spill_stores, res.spill_loads
            row.source = "NVRTC ptxas, sm_90"
        else:
            row.source = "unavailable: no GPU and no NVRTC"
        rows.append(row.finish())
    return rows


def _triton_compile(fn, args: dict, meta: dict, num_warps: int, num_stages: int, capability: int):
    """Compile ``fn`` as the JIT would for these arguments: ints equal to 1 become constants,
    pointers and ints divisible by 16 carry the divisibility hint."""
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    from triton_impl._launch import COMPILE_OPTIONS
    names = fn.arg_names
    sig, const, attrs = {}, {}, {}
    for i, name in enumerate(names):
        value = meta[name] if name in meta else args[name]
        if name in meta or value == 1:
            sig[name], const[(i,)] = "constexpr", value
        elif isinstance(value, str):
            sig[name], attrs[(i,)] = value, [["tt.divisibility", 16]]
        else:
            sig[name] = "i32" if abs(value) < 2**31 else "i64"
            if value % 16 == 0:
                attrs[(i,)] = [["tt.divisibility", 16]]
    return triton.compile(ASTSource(fn, sig, const, attrs), target=GPUTarget("cuda", capability, 32),
                          options={"num_warps": num_warps, "num_stages": num_stages, **COMPILE_OPTIONS})


def _ptxas_report(ptx: str, capability: int):
    """Triton's own ptxas run with -v on the kernel's PTX: registers, stack, spills."""
    import tempfile

    from triton.backends.nvidia.compiler import get_ptxas, sm_arch_from_capability

    from bench.nvrtc import _parse_ptxas
    with tempfile.TemporaryDirectory() as tmp:
        src = pathlib.Path(tmp) / "kernel.ptx"
        src.write_text(ptx)
        run = subprocess.run([get_ptxas(capability).path, "-v", f"--gpu-name={sm_arch_from_capability(capability)}",
                              str(src), "-o", str(src.with_suffix(".cubin"))], capture_output=True, text=True)
    if run.returncode != 0:
        raise RuntimeError(f"ptxas failed:\n{run.stderr}")
    return _parse_ptxas(run.stdout + run.stderr)


def triton_resources(algorithm: str, dtype) -> list[KernelUse]:
    import triton_impl

    capability = _capability()
    rows = []
    for variant, launch, args, shape in triton_impl.launches(algorithm, dtype):
        fn, meta = launch.fn, launch.meta
        warps, stages = launch.options.get("num_warps", 4), launch.options.get("num_stages", 3)
        k = _triton_compile(fn, args, meta, warps, stages, capability)
        res = next(iter(_ptxas_report(k.asm["ptx"], capability).values()))
        blocks = "x".join(str(meta[b]) for b in ("BLOCK_M", "BLOCK_N", "BLOCK_K", "BLOCK_R", "BLOCK_C", "BLOCK_S")
                          if b in meta)
        kernel = f"{fn.__name__} {blocks} w{warps}" + (f" s{stages}" if algorithm == "matmul" else "")
        rows.append(KernelUse(algorithm, "triton", variant, kernel, "x".join(map(str, shape)), 32 * warps,
                              registers=res.registers, smem_static=res.smem_bytes, smem_dynamic=k.metadata.shared,
                              spill_stores=res.spill_stores, spill_loads=res.spill_loads,
                              local_bytes=res.stack_bytes, source=f"triton.compile + ptxas, sm_{capability}").finish())
    return rows


def _triton_in_subprocess(algorithms, dtype_name: str) -> list[KernelUse]:
    """Under TRITON_INTERPRET=1 the kernels are interpreter objects, not compilable: ask a fresh
    interpreter without it (``python -m bench resources --backend triton --json``)."""
    root = pathlib.Path(__file__).resolve().parent.parent
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env["PYTHONPATH"] = str(root) + os.pathsep + env.get("PYTHONPATH", "")
    cmd = [sys.executable, "-m", "bench", "resources", "--backend", "triton", "--dtype", dtype_name, "--json"]
    for a in algorithms:
        cmd += ["--algorithm", a]
    run = subprocess.run(cmd, cwd=root, env=env, capture_output=True, text=True)
    if run.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed:\n{run.stderr[-4000:]}")
    return [KernelUse(**d) for d in json.loads(run.stdout)]


def resources(algorithms, backends=None, dtype_name: str = "float32", progress=lambda m: None) -> list[KernelUse]:
    """Every launch's row; ``progress`` hears of each (algorithm, backend) before its compiles, which
    take about a minute in all."""
    from bench.specs import DTYPES

    dtype = DTYPES[dtype_name]
    backends = backends or ("cuda", "triton")
    rows = []
    for algorithm in algorithms:
        if "cuda" in backends:
            progress(f"{algorithm} cuda: compiling its kernels")
            rows += cuda_resources(algorithm, dtype)
        if "triton" in backends and os.environ.get("TRITON_INTERPRET", "0") != "1":
            progress(f"{algorithm} triton: compiling its kernels")
            rows += triton_resources(algorithm, dtype)
    if "triton" in backends and os.environ.get("TRITON_INTERPRET", "0") == "1":
        progress(f"{', '.join(algorithms)} triton: compiling their kernels in a fresh interpreter "
                 f"(TRITON_INTERPRET is set here)")
        triton_rows = _triton_in_subprocess(algorithms, dtype_name)
        rows = [r for a in algorithms for r in rows + triton_rows if r.algorithm == a]
    return rows


COLUMNS = ("algorithm", "backend", "variant", "kernel", "shape", "threads", "regs", "smem static",
           "smem dyn", "spills st/ld", "local", "blocks/SM", "occupancy", "limited by")


def _cells(r: KernelUse) -> list[str]:
    def n(x):
        return "-" if x is None else str(x)
    spills = "-" if r.spill_stores is None else f"{r.spill_stores}/{r.spill_loads}"
    occ = "-" if r.occupancy_pct is None else f"{r.occupancy_pct:.0f}%"
    return [r.algorithm, r.backend, r.variant, r.kernel, r.shape, str(r.threads), n(r.registers),
            n(r.smem_static), n(r.smem_dynamic), spills, n(r.local_bytes), n(r.blocks_per_sm), occ, n(r.limiter)]


def format_resources(rows: list[KernelUse]) -> str:
    """One table, CUDA and Triton side by side; bytes for memory, per thread for registers."""
    table = [list(COLUMNS)] + [_cells(r) for r in rows]
    widths = [max(len(row[i]) for row in table) for i in range(len(COLUMNS))]
    lines = []
    for i, row in enumerate(table):
        lines.append("  ".join(c.ljust(w) if j < 5 or j == 13 else c.rjust(w)
                               for j, (c, w) in enumerate(zip(row, widths))))
        if i == 0:
            lines.append("  ".join("-" * w for w in widths))
    sources = ", ".join(dict.fromkeys(r.source for r in rows))
    lines.append("")
    lines.append(f"regs per thread; shared memory and local (stack) memory in bytes per block / thread; "
                 f"occupancy with sm_90 limits (65536 regs, 228 KiB smem, 2048 threads, 32 blocks per SM). "
                 f"From: {sources}")
    return "\n".join(lines)
