"""Nsight Compute's counters for the narrow transposes of a long fp16 matrix (13 x 3541196), both
backends and torch's, beside a same-size copy. Usage (GPU): ncu ... python lab/probe_narrow_ncu.py"""
import torch
import cuda_ref
import triton_impl

a = torch.randn(13, 3541196, device="cuda").half()
b = torch.empty_like(a)
for _ in range(2):
    cuda_ref.transpose(a)
    triton_impl.transpose(a)
    a.t().contiguous()
    b.copy_(a)
torch.cuda.synchronize()
