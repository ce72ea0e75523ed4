"""Host time of a matmul as a model reaches it: ``torch.mm`` with each backend's switch off and on,
beside the public functions called directly, on small operands (the GPU keeps up, so the host is
what is measured), for the plans a Llama step uses (grouped, TMA, TMA with rotating activation
addresses as a step's layers have). Then a cProfile of the Triton switch's call.

Usage (GPU): python lab/switch_host_cost.py
"""

from __future__ import annotations

import cProfile
import pstats

import torch

import cuda_ref
import triton_impl
from bench.timing import host_cost_us


def main() -> None:
    dt = torch.bfloat16
    cases = {}
    for name, (M, N, K) in {"64^3 (grouped)": (64, 64, 64), "256x512x128 (TMA)": (256, 512, 128)}.items():
        a = torch.randn(M, K, device="cuda", dtype=dt)
        w = torch.randn(N, K, device="cuda", dtype=dt)
        cases[name] = ([a], w.t())
        # eight activations at eight addresses, cycled: the layers of a step
        cases[name + ", 8 A addresses"] = ([torch.randn(M, K, device="cuda", dtype=dt) for _ in range(8)], w.t())
    print(f"{torch.cuda.get_device_name()}: host us per call (median of 5 x 2000 calls)")
    for name, (acts, b) in cases.items():
        it = [0]

        def nxt():
            it[0] = (it[0] + 1) % len(acts)
            return acts[it[0]]

        fns = {"torch.mm": lambda: torch.mm(nxt(), b),
               "triton_impl.matmul": lambda: triton_impl.matmul(nxt(), b),
               "cuda_ref.matmul": lambda: cuda_ref.matmul(nxt(), b)}
        out = dict(zip(fns, host_cost_us(list(fns.values()))))
        for label, mod in (("torch.mm, Triton switch", triton_impl), ("torch.mm, CUDA switch", cuda_ref)):
            with mod.enabled():
                out[label] = host_cost_us([lambda: torch.mm(nxt(), b)])[0]
        print(f"  {name}: " + ", ".join(f"{k} {v:.1f}" for k, v in out.items()), flush=True)
    acts, b = cases["256x512x128 (TMA), 8 A addresses"]
    with triton_impl.enabled():
        for _ in range(100):
            torch.mm(acts[0], b)
        prof = cProfile.Profile()
        prof.enable()
        for i in range(4000):
            torch.mm(acts[i % 8], b)
        prof.disable()
    torch.cuda.synchronize()
    pstats.Stats(prof).sort_stats("tottime").print_stats(18)


if __name__ == "__main__":
    main()
