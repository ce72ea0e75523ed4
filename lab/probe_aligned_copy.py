"""(Measured with loader.copy_rows, a cudaMemcpy2DAsync since removed: decision 035.)
The tensor-core kernels' copy of an operand whose rows are off 16 bytes (cuda_ref/_matmul.py's
_aligned_copy): a zeroed buffer and torch's copy_ (before), the pad alone zeroed and torch's copy_,
the pad zeroed and one pitched copy (loader.copy_rows); then variant=None's whole call on row-major
b of that kind, each way, against torch. Flushed, in turns. JSON with --json."""
import argparse, json
import torch
import cuda_ref
from cuda_ref import _matmul as cm, loader
from bench.timing import time_interleaved
from kernel_common import padded


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--json")
    args = p.parse_args()
    out = {"device": torch.cuda.get_device_name(), "copies": [], "calls": []}
    for K, N in ((1024, 30522), (768, 30522), (4096, 50257), (129, 4095), (7168, 1025)):
        src = torch.randn(K, N, device="cuda", dtype=torch.bfloat16)
        full = lambda: torch.zeros((K, (N + 7) // 8 * 8), dtype=src.dtype, device="cuda")[:, :N].copy_(src)
        pad = lambda: padded(K, N, src.dtype, src.device, zero_pad=True).copy_(src)
        rows = lambda: loader.copy_rows(padded(K, N, src.dtype, src.device, zero_pad=True), src)
        assert torch.equal(rows(), src) and torch.equal(pad(), src)
        t = time_interleaved([full, pad, rows], warmup_ms=5, rep_ms=30)
        us = [x.median_ms * 1e3 for x in t]
        out["copies"].append({"shape": [K, N], "us": dict(zip(("zeros+copy_", "pad+copy_", "pad+memcpy2D"), us))})
        print(f"copy {K}x{N}: zeros+copy_ {us[0]:.1f} us, pad+copy_ {us[1]:.1f}, pad+memcpy2D {us[2]:.1f} "
              f"({2 * K * N * 2 / us[2] / 1e3:.0f} GB/s)", flush=True)
    for M, N, K in ((28, 30522, 1024), (44, 30522, 768), (333, 4095, 129), (2048, 50257, 4096), (300, 1025, 7168)):
        a = torch.randn(M, K, device="cuda", dtype=torch.bfloat16)
        b = torch.randn(K, N, device="cuda", dtype=torch.bfloat16)
        fns = [lambda: torch.mm(a, b)]
        for flag in (False, True):
            loader.ROWS_BY_MEMCPY2D = flag
            cm._PLANS.clear()
            c = cuda_ref.matmul(a, b)
            assert ((c.float() - torch.mm(a, b).float()).abs().max() / c.float().abs().max()).item() < 2e-2
            plan = cm._PLANS.get((a, b), None, None)
            fns.append(lambda plan=plan, flag=flag: (setattr(loader, "ROWS_BY_MEMCPY2D", flag),
                                                     cm._PLANS.launch(plan, (a, b), None)))
        loader.ROWS_BY_MEMCPY2D = True
        t = time_interleaved(fns, warmup_ms=5, rep_ms=30)
        us = [x.median_ms * 1e3 for x in t]
        out["calls"].append({"shape": [M, N, K], "describe": cuda_ref.describe("matmul", a, b),
                             "us": dict(zip(("torch", "copy_", "memcpy2D"), us))})
        print(f"{M}x{N}x{K} row: torch {us[0]:.1f} us; copy_ {us[0] / us[1]:.2f}x, memcpy2D {us[0] / us[2]:.2f}x | "
              + cuda_ref.describe("matmul", a, b), flush=True)
    if args.json:
        json.dump(out, open(args.json, "w"), indent=1)


if __name__ == "__main__":
    main()
