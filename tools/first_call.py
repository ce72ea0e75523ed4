"""Seconds a new process spends on import and on its first calls: what a new user waits once.

The calls of issue 55's table run in one process, each timed to its synchronize, then once more
(a warm call). CuPy's and Triton's caches sit in DIR: a fresh folder on the first run (nothing
cached), the same folder on a second run (caches filled). torch's first calls are timed in a
separate run (`--torch`), since torch's own first-use cost (cuBLAS handles) would otherwise be
paid by whichever backend went first.

The per-user files under ``~`` (triton_impl's kept Triton key and tuning file) are in DIR as well
(HOME is DIR/home), so an empty DIR is a new user's machine.

CUDA's first calls load shipped cubins where ``cuda_ref/prebuilt/`` has them (a wheel, or a
checkout after ``python -m cuda_ref.compile``), else compile through NVRTC; ``CUDA_REF_PREBUILT=0``
forces the latter. The JSON's meta says which.

Python's own cache of compiled modules (``.pyc``) is one of DIR's caches too
(``sys.pycache_prefix``), as a default Python keeps it: the lent GPU machine sets
PYTHONDONTWRITEBYTECODE=1 and its site-packages hold no ``.pyc``, so there every process compiles
each module it imports from source (Triton's Gluon modules, which its argument specializer imports
at a process's first launch: 0.13-0.17 s). ``--no-bytecode-cache`` keeps the environment's setting
instead; the meta says which.

Usage (GPU): python tools/first_call.py [--cache DIR] [--torch] [--no-bytecode-cache] [--profile N] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time


def _calls(mod, torch):
    """(label, thunk) for the table's calls, inputs made before any timing."""
    dev = "cuda"
    a16 = torch.randn(16, 4096, device=dev, dtype=torch.bfloat16)
    w16 = torch.randn(4096, 4096, device=dev, dtype=torch.bfloat16)
    a32 = torch.randn(512, 512, device=dev)
    b32 = torch.randn(512, 512, device=dev)
    t32 = torch.randn(1000, 1000, device=dev)
    m16 = torch.randn(4096, 4096, device=dev, dtype=torch.float16)
    x16 = torch.randn(4096, device=dev, dtype=torch.float16)
    if mod is torch:
        return [("matmul bf16 16x4096x4096 W.t()", lambda: torch.mm(a16, w16.t())),
                ("matmul fp32 512^3", lambda: torch.mm(a32, b32)),
                ("transpose fp32 1000^2", lambda: t32.t().contiguous()),
                ("gemv fp16 4096^2", lambda: torch.mv(m16, x16))]
    return [("matmul bf16 16x4096x4096 W.t()", lambda: mod.matmul(a16, w16.t())),
            ("matmul fp32 512^3", lambda: mod.matmul(a32, b32)),
            ("transpose fp32 1000^2", lambda: mod.transpose(t32)),
            ("gemv fp16 4096^2", lambda: mod.gemv(m16, x16))]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--cache", help="CuPy and Triton cache folder (default: a fresh one)")
    p.add_argument("--torch", action="store_true", help="time torch's first calls instead")
    p.add_argument("--no-bytecode-cache", action="store_true",
                   help="keep the environment's PYTHONDONTWRITEBYTECODE / PYTHONPYCACHEPREFIX")
    p.add_argument("--profile", type=int, default=0, metavar="N",
                   help="print each first call's N costliest functions (cProfile, cumulative)")
    p.add_argument("--json", help="write the timings here")
    args = p.parse_args()
    cache = args.cache or tempfile.mkdtemp(prefix="first-call-")
    if not args.no_bytecode_cache:  # before anything below is imported
        sys.pycache_prefix = os.path.join(cache, "pyc")
        sys.dont_write_bytecode = False
    bytecode = "in the cache folder (sys.pycache_prefix)"
    if args.no_bytecode_cache:
        bytecode = "the environment's: " + ("none written" if sys.dont_write_bytecode
                                            else str(sys.pycache_prefix or "beside the sources"))
    # before CuPy and Triton load: they read these once
    os.environ["CUPY_CACHE_DIR"] = os.path.join(cache, "cupy")
    os.environ["TRITON_CACHE_DIR"] = os.path.join(cache, "triton")
    filled = os.path.isdir(os.environ["TRITON_CACHE_DIR"])
    # the per-user files (triton_impl's Triton key and tuning file, the driver's JIT cache) in DIR too
    os.environ["HOME"] = os.path.join(cache, "home")
    rows = []

    def timed(label, fn):
        if args.profile and " first " in label:
            import cProfile
            import pstats
            profiler = cProfile.Profile()
            fn = (lambda f: lambda: profiler.runcall(f))(fn)
        t = time.perf_counter()
        fn()
        torch.cuda.synchronize()
        rows.append({"call": label, "s": time.perf_counter() - t})
        print(f"{label:48s} {rows[-1]['s']:8.3f} s", flush=True)
        if args.profile and " first " in label:
            pstats.Stats(profiler).sort_stats("cumulative").print_stats(args.profile)

    t = time.perf_counter()
    import torch
    torch.cuda.init()
    torch.empty(1, device="cuda")
    rows.append({"call": "import torch, CUDA context", "s": time.perf_counter() - t})
    print(f"{rows[-1]['call']:48s} {rows[-1]['s']:8.3f} s", flush=True)
    if args.torch:
        mods = [("torch", torch)]
    else:
        # issue 55's import target counts beyond these: time them apart (cuda_ref imports CuPy at its first call)
        t = time.perf_counter()
        import cupy  # noqa: F401
        import triton  # noqa: F401
        rows.append({"call": "import triton, cupy", "s": time.perf_counter() - t})
        print(f"{rows[-1]['call']:48s} {rows[-1]['s']:8.3f} s", flush=True)
        t = time.perf_counter()
        import cuda_ref
        import triton_impl
        rows.append({"call": "import cuda_ref, triton_impl", "s": time.perf_counter() - t})
        print(f"{rows[-1]['call']:48s} {rows[-1]['s']:8.3f} s", flush=True)
        mods = [("cuda_ref", cuda_ref), ("triton_impl", triton_impl)]
    total = time.perf_counter()
    for name, mod in mods:
        for label, fn in _calls(mod, torch):
            timed(f"{name} first {label}", fn)
            timed(f"{name} again {label}", fn)
    rows.append({"call": "whole process after import", "s": time.perf_counter() - total})
    print(f"{rows[-1]['call']:48s} {rows[-1]['s']:8.3f} s", flush=True)
    if args.json:
        from cuda_ref import compile as cuda_compile
        shipped = cuda_compile.enabled() and (cuda_compile.PREBUILT_DIR / "index.json").is_file()
        meta = {"device": torch.cuda.get_device_name(), "caches": "filled" if filled else "empty",
                "cuda_binaries": "shipped cubins" if shipped else "NVRTC on first use",
                # a checkout holds pyproject.toml beside its packages; a wheel's files do not
                "install": "checkout" if (cuda_compile.PREBUILT_DIR.parents[1] / "pyproject.toml").is_file() else "wheel",
                "bytecode_cache": bytecode, "torch": torch.__version__, "python": sys.version.split()[0]}
        with open(args.json, "w") as f:
            json.dump({"meta": meta, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
