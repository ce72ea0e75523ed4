"""Registers of the shipped instances as this machine's NVRTC builds them (``cuda_ref.compile``'s options,
sm_90), written as JSON; given a second file, the instances whose counts differ. The same source can
build very differently under two NVRTC versions (decision 071: 125 registers under 13.5, 58 under 13.0),
and a lab probe compiled by CuPy on the GPU machine uses that machine's NVRTC, not the one that built
the shipped cubins.

Usage (no GPU): PYTHONPATH=. python lab/nvrtc_registers.py FILE.cu [...] --json regs135.json
Another NVRTC (pip download nvidia-cuda-nvrtc==13.0.88, unzipped to DIR), then compared:
  LD_LIBRARY_PATH=DIR/nvidia/cu13/lib LD_PRELOAD=DIR/nvidia/cu13/lib/libnvrtc.so.13 \\
    PYTHONPATH=. python lab/nvrtc_registers.py FILE.cu [...] --json regs130.json --against regs135.json
"""

from __future__ import annotations

import argparse
import json

from bench import nvrtc
from cuda_ref import compile as cuda_compile


def registers(filename: str) -> dict[str, int]:
    """{instance: registers} of ``filename``'s shipped instances, built for sm_90 as the cubins are."""
    names = cuda_compile.instances()[filename]
    built = nvrtc.compile_file(filename, names)
    assert built.ok, built.log[-2000:]
    return {n: built.kernels[built.lowered[n]].registers for n in names}


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("files", nargs="+", help="kernel files (cuda_ref/kernels/instances.json's keys)")
    p.add_argument("--json", required=True)
    p.add_argument("--against", help="another build's JSON: print the instances whose registers differ")
    args = p.parse_args()
    from cuda.bindings import nvrtc as bindings
    _, major, minor = bindings.nvrtcVersion()
    regs = {n: r for f in args.files for n, r in registers(f).items()}
    with open(args.json, "w") as fh:
        json.dump({"nvrtc": [major, minor], "registers": regs}, fh, indent=1)
    if args.against:
        other = json.load(open(args.against))
        differ = [(n, r, other["registers"].get(n)) for n, r in regs.items() if other["registers"].get(n) != r]
        print(f"NVRTC {major}.{minor} against {other['nvrtc']}: {len(differ)} of {len(regs)} instances differ")
        for n, r, o in sorted(differ, key=lambda t: -abs(t[1] - (t[2] or 0))):
            print(f"  {r:>4} against {o}  {n}")


if __name__ == "__main__":
    main()
