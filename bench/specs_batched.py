"""The harness's specs of products over many matrices: batched (``torch.bmm``'s) and grouped
(mixture-of-experts, ``F.grouped_mm``'s), each matmul's tolerance by dtype and K."""
from __future__ import annotations

import torch

from bench.specs import Comparison, MatmulSpec, poison
from kernel_common import matmul_out_dtype
from kernel_common.catalog import F16


# Attention's two batched products, (batch x heads, M, N, K): scores q k^T (S, S, head_dim) and
# their product with v (S, head_dim, S), at head dims 64 and 128, the batch x heads shrinking as
# the sequence grows (about 2^19 to 2^20 query rows in all)
ATTENTION_SHAPES = tuple(shape for D in (64, 128) for BH, S in ((256, 512), (128, 1024), (64, 2048), (16, 4096))
                         for shape in ((BH, S, S, D), (BH, S, D, S)))

# Mixture-of-experts decode as transformers' batched_mm runs it: one gathered expert matrix per
# routed token, (S = tokens x top-k, out, 1, in) (the M == 1 form, (S, 1, out, in), where the weights
# are stored transposed): Mixtral 8x7B at 8 tokens (top 2), Qwen3-30B-A3B-sized experts (d_model
# 2048, d_ff 768, top 8) at 8 and 64 tokens, and the model suite's small Mixtral at 64 tokens
EXPERTS_DECODE = ((16, 28672, 1, 4096), (16, 4096, 1, 14336), (64, 1536, 1, 2048), (512, 1536, 1, 2048),
                  (512, 2048, 1, 768), (128, 5632, 1, 1024), (128, 1024, 1, 2816), (128, 1, 5632, 1024),
                  (512, 1, 2048, 768))


class BmmSpec(MatmulSpec):
    """c (B, M, N) = a (B, M, K) b (B, K, N), torch.bmm's product: the batch variants of matmul (their
    records' ``batch``) against torch.bmm. Shapes (B, M, N, K); B row-major, or ``kt`` (each b the
    .mT of a contiguous (N, K): attention's k^T); matmul's tolerance by dtype and K."""
    algorithm = "bmm"
    dtypes = ("float32", "tf32", "float16", "bfloat16")
    default_dtypes = F16
    size_form = "BxMxNxK"
    gpu_sizes = ((64, 2048, 2048, 128), (64, 2048, 128, 2048), (7, 67, 45, 33))
    cpu_sizes = ((3, 17, 13, 9), (2, 1, 30, 7))
    size_sets = {"attention": ATTENTION_SHAPES, "experts_decode": EXPERTS_DECODE}
    case_layouts = ("row", "kt")

    @staticmethod
    def make_inputs(shape, dtype, device, seed: int):
        B, M, N, K = shape
        a, b = MatmulSpec.make_inputs((B * M, B * N, K), dtype, device, seed)  # (matmul's values)
        return a.reshape(B, M, K), b.reshape(K, B, N).permute(1, 0, 2).contiguous()

    @staticmethod
    def arrange(inputs, case_layout):
        a, b = inputs
        return (a, b.mT.contiguous().mT) if case_layout == "kt" else inputs

    @staticmethod
    def make_out(inputs):
        a, b = inputs
        return poison((a.shape[0], a.shape[1], b.shape[2]), matmul_out_dtype(a.dtype), a.device)

    @staticmethod
    def reference(inputs):
        a, b = inputs
        return torch.bmm(a.double(), b.double())

    @classmethod
    def compare(cls, out, ref, inputs=None) -> Comparison:
        return MatmulSpec.compare(out, ref, None if inputs is None else (inputs[0][0],))  # (K: a matrix's columns)

    @staticmethod
    def shape_of(inputs) -> tuple:
        (B, M, K), N = inputs[0].shape, inputs[1].shape[2]
        return (B, M, N, K)

    @staticmethod
    def flops(shape) -> int:
        B, *mnk = shape
        return B * MatmulSpec.flops(mnk)

    @staticmethod
    def bytes(shape, dtype) -> int:
        B, *mnk = shape
        return B * MatmulSpec.bytes(mnk, dtype)

    @staticmethod
    def numel(shape) -> int:
        B, *mnk = shape
        return B * MatmulSpec.numel(mnk)


# Mixture-of-experts layers as one GPU holds them, (G experts, T routed rows, N, K): each model's
# gate-and-up projection (K = d_model, N = 2 x d_ff: the two fused) and down projection (K = d_ff),
# at a prefill's and a decode batch's tokens x top-k. Mixtral 8x7B (8 experts, d_model 4096, d_ff
# 14336, top 2: 4096 and 256 tokens); DeepSeek-V3 (256 experts, d_model 7168, d_ff 2048, top 8) with
# its experts over 8 GPUs (32 each, 4096 and 16384 routed rows); Qwen3-30B-A3B (128 experts,
# d_model 2048, d_ff 768, top 8, 4096 tokens); and decode's few rows over many experts (DeepSeek-V3
# at 32 tokens a GPU, Qwen3 at 8: most groups empty or of one row)
MOE_SHAPES = ((8, 8192, 28672, 4096), (8, 8192, 4096, 14336), (8, 512, 28672, 4096), (8, 512, 4096, 14336),
              (32, 4096, 4096, 7168), (32, 4096, 7168, 2048), (32, 16384, 4096, 7168), (32, 16384, 7168, 2048),
              (128, 32768, 1536, 2048), (128, 32768, 2048, 768), (32, 256, 4096, 7168), (128, 64, 1536, 2048))


class GroupedSpec(MatmulSpec):
    """c (T, N): rows of each group g times b[g] (G, K, N), ``F.grouped_mm``'s 2-D x 3-D product
    (mixture-of-experts layers). Shapes (G, T, N, K); the T rows split over the groups as a router
    splits tokens (uneven, by the seed: some groups empty at many groups); b row-major, or ``kt``
    (each b[g] the .mT of a contiguous (N, K): nn.Linear's weights); matmul's tolerance by dtype and K."""
    algorithm = "grouped_mm"
    dtypes = ("float16", "bfloat16")
    default_dtypes = ("bfloat16",)
    size_form = "GxTxNxK"
    gpu_sizes = ((8, 8192, 28672, 4096), (32, 4096, 7168, 2048), (5, 999, 200, 72))
    cpu_sizes = ((3, 70, 24, 40), (4, 33, 16, 48))
    size_sets = {"moe": MOE_SHAPES}
    case_layouts = ("row", "kt")

    @staticmethod
    def make_inputs(shape, dtype, device, seed: int):
        G, T, N, K = shape
        a, b = MatmulSpec.make_inputs((T, G * N, K), dtype, device, seed)  # (matmul's values)
        g = torch.Generator().manual_seed(seed)
        # a router's split: each group's share from a log-normal popularity, T rows drawn by it
        share = torch.randn(G, generator=g).exp()
        sizes = torch.bincount(torch.multinomial(share, T, replacement=True, generator=g), minlength=G)
        offs = sizes.cumsum(0).to(device=device, dtype=torch.int32)
        return a, b.reshape(K, G, N).permute(1, 0, 2).contiguous(), offs

    @staticmethod
    def arrange(inputs, case_layout):
        a, b, offs = inputs
        return (*BmmSpec.arrange((a, b), case_layout), offs)  # (b's matrices as bmm's case layout has them)

    @staticmethod
    def make_out(inputs):
        a, b, _ = inputs
        return poison((a.shape[0], b.shape[2]), a.dtype, a.device)

    @staticmethod
    def reference(inputs):
        a, b, offs = inputs
        ends = offs.tolist()
        return torch.cat([a[s:e].double() @ b[i].double() for i, (s, e) in enumerate(zip([0] + ends[:-1], ends))])

    @classmethod
    def compare(cls, out, ref, inputs=None) -> Comparison:
        return MatmulSpec.compare(out, ref, None if inputs is None else (inputs[0],))

    @staticmethod
    def shape_of(inputs) -> tuple:
        (T, K), (G, _, N) = inputs[0].shape, inputs[1].shape
        return (G, T, N, K)

    @staticmethod
    def flops(shape) -> int:
        G, T, N, K = shape
        return MatmulSpec.flops((T, N, K))

    @staticmethod
    def bytes(shape, dtype) -> int:
        G, T, N, K = shape
        return (T * K + G * K * N + T * N) * dtype.itemsize  # read a and every b[g] once, write c once

    @staticmethod
    def numel(shape) -> int:
        G, T, N, K = shape
        return T * N * K  # (multiply-adds, as matmul's)
