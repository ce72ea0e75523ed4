"""A one-call GPU smoke of Triton's matmul after a move of its code: every variant that takes the
input, on both layouts of b, three dtypes and a few shapes (few rows, odd rows, split, large), and
the switch's addmm with a bias, each against float64. Prints the failures (none expected).
Usage (GPU): PYTHONPATH=. python lab/gpu_smoke.py
"""
import torch, triton_impl
torch.manual_seed(0)
bad = []
for dt in (torch.float32, torch.bfloat16, torch.float16):
    for (M, N, K) in ((1, 4096, 4096), (16, 4096, 4096), (48, 520, 130), (333, 6144, 4096), (2048, 2048, 2048), (300, 521, 130)):
        a = torch.randn(M, K, device="cuda", dtype=dt); w = torch.randn(N, K, device="cuda", dtype=dt)
        for b in (w.t(), w.t().contiguous()):
            for v in triton_impl.variants("matmul"):
                try:
                    c = triton_impl.matmul(a, b, variant=v)
                except (TypeError, ValueError):
                    continue
                ref = a.double() @ b.double()
                err = ((c.double() - ref).abs().max() / ref.abs().max()).item()
                if err > (2e-2 if dt != torch.float32 else 1e-4):
                    bad.append((dt, M, N, K, v, err))
        bias = torch.randn(N, device="cuda", dtype=dt)
        sw = triton_impl._switch
        got = sw._addmm(bias, a, w.t()); ref = a.double() @ w.double().t() + bias.double()
        err = ((got.double() - ref).abs().max() / ref.abs().max()).item()
        if err > (2e-2 if dt != torch.float32 else 1e-4):
            bad.append((dt, M, N, K, "addmm", err))
print("routed", sw.counts(), "bad", bad)
