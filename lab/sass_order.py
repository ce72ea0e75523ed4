"""The order of global loads and floating-point math in a kernel's SASS, as NVRTC builds it for
sm_90 (no GPU needed): how many 16-byte loads a thread issues before it first waits on one.

Each instance is compiled alone (``bench.nvrtc``) and disassembled with ``cuobjdump -sass`` (the
CUDA toolkit's, or the copy that ships with Triton). The sequence prints run-length coded: ``8L``
eight global loads in a row, ``64F`` sixty-four FFMA / FMUL / FADD.

Usage: PYTHONPATH=. python lab/sass_order.py FILE.cu 'instance<...>' ['instance<...>' ...]
   e.g. PYTHONPATH=. python lab/sass_order.py gemv.cu 'gemv_warp_per_row<bf16_t, 32, 1, 4, 2>'
"""

from __future__ import annotations

import itertools
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile

from bench import nvrtc


def cuobjdump() -> str:
    found = shutil.which("cuobjdump")
    if found:
        return found
    import triton
    bundled = pathlib.Path(triton.__file__).parent / "backends" / "nvidia" / "bin" / "cuobjdump"
    if bundled.exists():
        return str(bundled)
    raise SystemExit("no cuobjdump: install the CUDA toolkit or triton")


def order(filename: str, name: str) -> str:
    built = nvrtc.compile_file(filename, (name,))
    if not built.ok:
        raise SystemExit(built.log)
    res = built.kernels[built.lowered[name]]
    with tempfile.NamedTemporaryFile(suffix=".cubin") as f:
        f.write(built.cubin)
        f.flush()
        sass = subprocess.run([cuobjdump(), "-sass", f.name], capture_output=True, text=True, check=True).stdout
    ops = re.findall(r"/\*[0-9a-f]{4}\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9]*)", sass)
    marks = ["L" if op == "LDG" else "F" for op in ops if op in ("LDG", "FFMA", "FMUL", "FADD")]
    runs = " ".join(f"{len(list(g))}{k}" for k, g in itertools.groupby(marks))
    return f"{name}: {res.registers} registers, {res.spill_stores} bytes spilled; {runs}"


def main() -> None:
    filename, names = sys.argv[1], sys.argv[2:]
    for name in names:
        print(order(filename, name), flush=True)


if __name__ == "__main__":
    main()
