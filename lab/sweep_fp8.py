"""FP8 with scales: how the float32 promotion and the tile move speed and error (decision 023).

Modes of the K loop: ``fast`` chains every slice in the MMA's accumulator (Triton's sm_90
default); ``promote`` has the compiler add each IMPRECISE-deep part into a float32 tile
(``max_num_imprecise_acc``); ``block`` is the product's block-scaled slice (acc += dot * sa * sb,
sb one value per 128 columns); ``skew`` adds slice k - 1's product while slice k's MMA runs.
``ws`` asks triton 3.6's Hopper warp specialization of the tile loop (``tl.range(...,
warp_specialize=True)``), where the promotion of one consumer may overlap the other's MMA.
Prints ms, TFLOP/s and max |err| / max |c| against float64, torch._scaled_mm beside.
"""
import torch
import triton
import triton.language as tl
from triton.tools.tensor_descriptor import TensorDescriptor

from triton_impl._matmul_tma import _grouped_tile

FAST, PROMOTE, BLOCK, SKEW = 0, 1, 2, 3


@triton.jit
def _k(a_desc, b_desc, c_ptr, sa_ptr, sb_ptr, M, N, K, programs, stride_sam, stride_sak, stride_sbk,
       BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, GROUP_M: tl.constexpr, MODE: tl.constexpr,
       IMPRECISE: tl.constexpr, WS: tl.constexpr):
    num_pid_m = tl.cdiv(M, BM)
    num_pid_n = tl.cdiv(N, BN)
    k_tiles = tl.cdiv(K, BK)
    for item in tl.range(tl.program_id(0), num_pid_m * num_pid_n, programs, flatten=True, warp_specialize=WS):
        pid_m, pid_n = _grouped_tile(item, num_pid_m, num_pid_n, GROUP_M)
        offs_m = pid_m * BM + tl.arange(0, BM)
        offs_n = pid_n * BN + tl.arange(0, BN)
        acc = tl.zeros((BM, BN), dtype=tl.float32)
        prev = tl.zeros((BM, BN), dtype=tl.float32)
        s_prev = tl.zeros((BM,), dtype=tl.float32)
        for kt in range(0, k_tiles):
            a = a_desc.load([pid_m * BM, kt * BK])
            b = b_desc.load([pid_n * BN, kt * BK]).T
            if MODE == 0:
                acc = tl.dot(a, b, acc)
            elif MODE == 1:
                acc = tl.dot(a, b, acc, max_num_imprecise_acc=IMPRECISE)
            elif MODE == 2:
                sa = tl.load(sa_ptr + offs_m * stride_sam + kt * stride_sak)
                sb = tl.load(sb_ptr + kt * stride_sbk + (pid_n * BN) // 128)
                acc += tl.dot(a, b) * (sa * sb)[:, None]
            else:
                sa = tl.load(sa_ptr + offs_m * stride_sam + kt * stride_sak)
                sb = tl.load(sb_ptr + kt * stride_sbk + (pid_n * BN) // 128)
                p = tl.dot(a, b)
                acc += prev * s_prev[:, None]
                prev = p
                s_prev = sa * sb
        if MODE == 3:
            acc += prev * s_prev[:, None]
        tl.store(c_ptr + offs_m[:, None].to(tl.int64) * N + offs_n[None, :], acc.to(tl.bfloat16),
                 mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))


def main():
    dev = torch.device("cuda")
    sms = torch.cuda.get_device_properties(dev).multi_processor_count
    for n in (4096, 8192):
        M = N = K = n
        a = (torch.randn(M, K, device=dev) * 4).to(torch.float8_e4m3fn)
        w = (torch.randn(N, K, device=dev) * 4).to(torch.float8_e4m3fn)
        kb, nb = K // 128, N // 128
        sa = torch.rand(M, kb, device=dev) + 0.5
        sb = torch.rand(kb, nb, device=dev) + 0.5
        one = torch.ones((), device=dev)
        ref_t = a.double() @ w.double().t()
        ref_b = (a.double() * sa.double().repeat_interleave(128, 1)) @ (
            w.double().t() * sb.double().repeat_interleave(128, 0).repeat_interleave(128, 1))
        flops = 2 * M * N * K
        for fast in (False, True):
            f = lambda: torch._scaled_mm(a, w.t(), one, one, out_dtype=torch.bfloat16, use_fast_accum=fast)
            ms = triton.testing.do_bench(f)
            err = ((f().double() - ref_t).abs().max() / ref_t.abs().max()).item()
            print(f"{n} torch._scaled_mm fast_accum={fast}: {ms:.4f} ms {flops / ms / 1e9:.0f} TFLOP/s err {err:.1e}")
        c = torch.empty(M, N, device=dev, dtype=torch.bfloat16)
        tries = []
        for (bm, bn, bk, w_, s) in ((128, 128, 128, 8, 4), (128, 256, 128, 8, 3), (256, 128, 128, 8, 3)):
            for mode, imp in ((FAST, 0), (PROMOTE, 128), (PROMOTE, 64), (BLOCK, 0), (SKEW, 0)):
                tries.append((bm, bn, bk, w_, s, mode, imp, False))
        # a 256-deep K step (promoted every 128 or every 256), and warp specialization
        tries += [(128, 128, 256, 8, 3, PROMOTE, 128, False), (128, 128, 256, 8, 3, PROMOTE, 256, False),
                  (256, 128, 256, 8, 2, PROMOTE, 128, False), (256, 128, 256, 8, 2, PROMOTE, 256, False),
                  (128, 128, 128, 8, 4, PROMOTE, 128, True), (256, 128, 128, 8, 3, PROMOTE, 128, True),
                  (128, 256, 128, 8, 3, FAST, 0, True), (128, 128, 128, 8, 4, BLOCK, 0, True)]
        for bm, bn, bk, w_, s, mode, imp, ws in tries:
            ad = TensorDescriptor(a, [M, K], [K, 1], [bm, bk])
            bd = TensorDescriptor(w, [N, K], [K, 1], [bn, bk])
            tiles = triton.cdiv(M, bm) * triton.cdiv(N, bn)
            progs = min(sms, tiles)
            f = lambda: _k[(progs,)](ad, bd, c, sa, sb, M, N, K, progs, kb, 1, nb, BM=bm, BN=bn, BK=bk, GROUP_M=8,
                                     MODE=mode, IMPRECISE=imp, WS=ws, num_warps=w_, num_stages=s)
            try:
                f()
                ms = triton.testing.do_bench(f)
            except Exception as e:  # noqa: BLE001 (a tile that does not fit)
                print(f"{n} {bm}x{bn}x{bk} w{w_} s{s} mode {mode}/{imp} ws {ws}: {type(e).__name__} {str(e)[:80]}")
                continue
            ref = ref_t if mode in (FAST, PROMOTE) else ref_b
            err = ((c.double() - ref).abs().max() / ref.abs().max()).item()
            print(f"{n} {bm}x{bn}x{bk} w{w_} s{s} mode {mode}/{imp} ws {ws}: {ms:.4f} ms {flops / ms / 1e9:.0f} TFLOP/s "
                  f"err {err:.1e}")


if __name__ == "__main__":
    main()
