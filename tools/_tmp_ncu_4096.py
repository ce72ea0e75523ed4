import torch
from cuda_ref import _matmul as mm
for M, N, K in ((4096, 4096, 4096), (2048, 11008, 4096)):
    a = torch.randn(M, K, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(N, K, device="cuda", dtype=torch.bfloat16).t()
    for _ in range(2):
        torch.mm(a, b)
        mm.matmul(a, b, variant="wgmma_ws")
torch.cuda.synchronize()
