"""Host time of ``transpose_as_copy`` (a side of 1: the transpose is a plain copy) beside torch's
own ``a.transpose(-1, -2)`` then ``clone()`` / ``contiguous()``, on CPU tensors of a few elements,
where the copy itself is negligible: what the checks and the view cost a call. Best of 7 rounds.

Usage (no GPU): PYTHONPATH=. python lab/as_copy_host.py
"""

from __future__ import annotations

import time

import torch

from bench.registry import _torch_contiguous as torch_own  # the harness's torch reference
from kernel_common.plans import transpose_as_copy
from triton_impl._transpose import DTYPES


def us_a_call(fn, calls: int = 200_000, rounds: int = 7) -> float:
    for _ in range(1000):
        fn()
    best = float("inf")
    for _ in range(rounds):
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        best = min(best, (time.perf_counter() - start) / calls * 1e6)
    return best


def main() -> None:
    for shape in [(6, 1), (1, 6), (2, 5, 1)]:
        a = torch.randn(*shape).half()
        print(f"{shape} float16: torch {us_a_call(lambda: torch_own(a)):.2f} us, "
              f"transpose_as_copy {us_a_call(lambda: transpose_as_copy(a, None, None, DTYPES, True)):.2f} us",
              flush=True)


if __name__ == "__main__":
    main()
