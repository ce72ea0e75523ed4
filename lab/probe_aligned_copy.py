"""The tensor-core kernels' copy of an operand whose rows are off 16 bytes (cuda_ref/_matmul.py's
_aligned_copy; decision 035): a zeroed buffer and torch's copy_ (before), the pad alone zeroed and
torch's copy_ (kept), the pad zeroed and one pitched cudaMemcpy2DAsync (measured, not kept); then
variant=None's whole call on a row-major b of that kind with torch's copy_ and with the pitched one,
against torch. Flushed, in turns. JSON with --json."""
import argparse, json
import cupy
import torch
import cuda_ref
from cuda_ref import _matmul as cm
from bench.timing import time_interleaved
from kernel_common import padded


def pitched_copy(dst, src):
    """dst.copy_(src) as one cudaMemcpy2DAsync on torch's current stream (rows contiguous in both)."""
    size = src.element_size()
    cupy.cuda.runtime.memcpy2DAsync(dst.data_ptr(), dst.stride(0) * size, src.data_ptr(), src.stride(0) * size,
                                    src.shape[1] * size, src.shape[0], cupy.cuda.runtime.memcpyDeviceToDevice,
                                    torch.cuda.current_stream().cuda_stream)
    return dst


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--json")
    args = p.parse_args()
    out = {"device": torch.cuda.get_device_name(), "copies": [], "calls": []}
    for K, N in ((1024, 30522), (768, 30522), (4096, 50257), (129, 4095), (7168, 1025)):
        src = torch.randn(K, N, device="cuda", dtype=torch.bfloat16)
        full = lambda: torch.zeros((K, (N + 7) // 8 * 8), dtype=src.dtype, device="cuda")[:, :N].copy_(src)
        pad = lambda: padded(K, N, src.dtype, src.device, zero_pad=True).copy_(src)
        rows = lambda: pitched_copy(padded(K, N, src.dtype, src.device, zero_pad=True), src)
        assert torch.equal(rows(), src) and torch.equal(pad(), src)
        t = time_interleaved([full, pad, rows], warmup_ms=5, rep_ms=30)
        us = [x.median_ms * 1e3 for x in t]
        out["copies"].append({"shape": [K, N], "us": dict(zip(("zeros+copy_", "pad+copy_", "pad+memcpy2D"), us))})
        print(f"copy {K}x{N}: zeros+copy_ {us[0]:.1f} us, pad+copy_ {us[1]:.1f}, pad+memcpy2D {us[2]:.1f} "
              f"({2 * K * N * 2 / us[2] / 1e3:.0f} GB/s)", flush=True)
    kept = cm._aligned_copy
    pitched = lambda t: pitched_copy(padded(*t.shape, t.dtype, t.device, zero_pad=True), t)  # noqa: E731
    for M, N, K in ((28, 30522, 1024), (44, 30522, 768), (333, 4095, 129), (2048, 50257, 4096), (300, 1025, 7168)):
        a = torch.randn(M, K, device="cuda", dtype=torch.bfloat16)
        b = torch.randn(K, N, device="cuda", dtype=torch.bfloat16)
        fns = [lambda: torch.mm(a, b)]
        for copy in (kept, pitched):
            def call(copy=copy):
                cm._aligned_copy = copy  # (the plan's operands() looks the module's name up a call)
                return cuda_ref.matmul(a, b)
            c = call()
            assert ((c.float() - torch.mm(a, b).float()).abs().max() / c.float().abs().max()).item() < 2e-2
            fns.append(call)
        t = time_interleaved(fns, warmup_ms=5, rep_ms=30)
        cm._aligned_copy = kept
        us = [x.median_ms * 1e3 for x in t]
        out["calls"].append({"shape": [M, N, K], "describe": cuda_ref.describe("matmul", a, b),
                             "us": dict(zip(("torch", "copy_", "memcpy2D"), us))})
        print(f"{M}x{N}x{K} row: torch {us[0]:.1f} us; copy_ {us[0] / us[1]:.2f}x, memcpy2D {us[0] / us[2]:.2f}x | "
              + cuda_ref.describe("matmul", a, b), flush=True)
    if args.json:
        json.dump(out, open(args.json, "w"), indent=1)


if __name__ == "__main__":
    main()
