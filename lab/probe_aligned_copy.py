"""The tensor-core kernels' copy of an operand whose rows are off 16 bytes into rows padded to 16
bytes (decision 035): torch's copy_ into the padded view (the pad alone zeroed; before), copy_rows
(cuda_ref/_copy.py; kept) and a contiguous clone of the same bytes (the ceiling); then variant=None's
whole call on a row-major b of that kind, its copy by copy_rows and by torch's copy_, against torch.
Flushed, in turns. JSON with --json."""
import argparse, json
import torch
import cuda_ref
from cuda_ref._copy import aligned_copier
from bench.timing import time_interleaved
from kernel_common import padded

COPIES = ((1024, 30522), (768, 30522), (4096, 50257), (129, 4095), (7168, 1025), (4096, 4100), (3000, 1001))
CALLS = ((81, 30522, 1024), (179, 30522, 768), (28, 30522, 1024), (300, 50257, 768), (2048, 50257, 4096),
         (333, 4095, 129), (300, 1025, 7168))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--json")
    args = p.parse_args()
    out = {"device": torch.cuda.get_device_name(), "copies": [], "calls": []}
    for K, N in COPIES:
        for dtype in (torch.bfloat16, torch.float32):
            src = torch.randn(K, N, device="cuda", dtype=dtype)
            torch_copy = lambda: padded(K, N, src.dtype, src.device, zero_pad=True).copy_(src)
            rows = aligned_copier(src)
            made = rows(src)
            assert torch.equal(made, src) and made.stride(0) * made.element_size() % 16 == 0
            wide = made.as_strided((K, made.stride(0)), (made.stride(0), 1))
            assert not wide[:, N:].any(), "the pad is zeroed"
            t = time_interleaved([torch_copy, lambda: rows(src), lambda: src.clone()], warmup_ms=5, rep_ms=30)
            us = [x.median_ms * 1e3 for x in t]
            out["copies"].append({"shape": [K, N], "dtype": str(dtype),
                                  "us": dict(zip(("copy_", "copy_rows", "clone"), us))})
            print(f"copy {K}x{N} {dtype}: copy_ {us[0]:.1f} us, copy_rows {us[1]:.1f} ({2 * src.nbytes / us[1] / 1e3:.0f}"
                  f" GB/s), clone {us[2]:.1f}", flush=True)
    for M, N, K in CALLS:
        a = torch.randn(M, K, device="cuda", dtype=torch.bfloat16)
        b = torch.randn(K, N, device="cuda", dtype=torch.bfloat16)
        before = lambda: cuda_ref.matmul(a, padded(K, N, b.dtype, b.device, zero_pad=True).copy_(b))
        c = cuda_ref.matmul(a, b)
        assert ((c.float() - torch.mm(a, b).float()).abs().max() / c.float().abs().max()).item() < 2e-2
        t = time_interleaved([lambda: torch.mm(a, b), lambda: cuda_ref.matmul(a, b), before], warmup_ms=5, rep_ms=30)
        us = [x.median_ms * 1e3 for x in t]
        out["calls"].append({"shape": [M, N, K], "describe": cuda_ref.describe("matmul", a, b),
                             "us": dict(zip(("torch", "copy_rows", "copy_"), us))})
        print(f"{M}x{N}x{K} row: torch {us[0]:.1f} us; copy_rows {us[0] / us[1]:.2f}x, copy_ {us[0] / us[2]:.2f}x | "
              + cuda_ref.describe("matmul", a, b), flush=True)
    if args.json:
        json.dump(out, open(args.json, "w"), indent=1)


if __name__ == "__main__":
    main()
