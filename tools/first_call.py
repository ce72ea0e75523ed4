"""Seconds of the first CUDA 16-bit matmul call of a process (NVRTC compiling what it launches),
with CuPy's kernel cache in a fresh folder, then of a second call: what a new user waits once.

Usage (Hopper GPU): python tools/first_call.py
"""

from __future__ import annotations

import os
import tempfile
import time

os.environ["CUPY_CACHE_DIR"] = tempfile.mkdtemp()  # before CuPy loads: nothing cached

import torch  # noqa: E402

import cuda_ref  # noqa: E402


def main() -> None:
    a = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16)
    w = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16)
    for label, fn in (("first call (4096^3, W.t())", lambda: cuda_ref.matmul(a, w.t())),
                      ("second call", lambda: cuda_ref.matmul(a, w.t())),
                      ("first call of a new instance (16 rows)", lambda: cuda_ref.matmul(a[:16], w.t()))):
        t = time.perf_counter()
        fn()
        torch.cuda.synchronize()
        print(f"{label}: {time.perf_counter() - t:.2f} s", flush=True)


if __name__ == "__main__":
    main()
