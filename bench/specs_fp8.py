"""The harness's spec of FP8 products with scales (``torch._scaled_mm``'s, and block scales)."""
from __future__ import annotations

import torch

from bench.specs import MODEL_SHAPES, Comparison, MatmulSpec, max_rel_err, poison

SCALE_BLOCK = 128


def fp8_values(rows: int, cols: int, device, seed: int) -> torch.Tensor:
    """(rows, cols) float8_e4m3fn values spread over the format's range, none zero."""
    g = torch.Generator(device=device).manual_seed(seed)
    x = torch.randn(rows, cols, generator=g, device=device) * 4
    return torch.where(x.abs() < 0.05, torch.full_like(x, 0.25), x).to(torch.float8_e4m3fn)


def is_block(scale_a, scale_b, N: int) -> bool:
    """Do the scales cover blocks (1 x 128 of a, 128 x 128 of b)? (Where a block scaling's shapes
    are a row-wise or per-tensor one's, the products are the same.)"""
    return not (scale_a.numel() == 1 and scale_b.numel() == 1) and tuple(scale_b.shape) != (1, N)


class ScaledMmSpec(MatmulSpec):
    """c (M, N) bfloat16 = (a * scale_a) @ (b * scale_b), a and b float8_e4m3fn, b K-major (W.t()),
    as ``torch._scaled_mm`` takes them. The case layouts are the scalings: ``tensor`` (one scale
    each), ``row`` ((M, 1) and (1, N)) and ``block`` ((M, ceil(K/128)) on a: 1 x 128; (ceil(K/128),
    ceil(N/128)) on b: 128 x 128). The reference: the dequantized operands' float64 product. The
    tolerance: c's bfloat16 rounding (2^-8 of the largest value) plus the FP8 MMA's shorter sum, 1e-2
    of max |c|. The ceiling: torch._scaled_mm per tensor at 8192^3."""
    algorithm = "scaled_mm"
    dtypes = ("float8_e4m3fn",)
    default_dtypes = ("float8_e4m3fn",)
    gpu_sizes = ((4096, 4096, 4096), (8192, 8192, 8192), (4097, 4095, 1000))
    cpu_sizes = ((67, 45, 256), (33, 16, 130))
    size_sets = {"models": MODEL_SHAPES}
    case_layouts = ("tensor", "row", "block")
    case_operand = "scales"
    TOL = 1e-2

    @staticmethod
    def torch_dtype(dtype_name: str) -> torch.dtype:
        return torch.float8_e4m3fn

    @staticmethod
    def make_inputs(shape, dtype, device, seed: int):
        """a, b = W.t() and every scaling's scales (``arrange`` keeps one pair)."""
        M, N, K = shape
        a, b = fp8_values(M, K, device, seed), fp8_values(N, K, device, seed + 1).t()
        g = torch.Generator(device=device).manual_seed(seed + 2)
        kb, nb = -(-K // SCALE_BLOCK), -(-N // SCALE_BLOCK)
        scales = [torch.rand(s, generator=g, device=device) + 0.5 for s in ((), (), (M, 1), (1, N), (M, kb), (kb, nb))]
        return (a, b, *scales)

    @staticmethod
    def arrange(inputs, case_layout):
        a, b, *scales = inputs
        i = ScaledMmSpec.case_layouts.index(case_layout)
        return a, b, scales[2 * i], scales[2 * i + 1]

    @staticmethod
    def make_out(inputs):
        a, b = inputs[:2]
        return poison((a.shape[0], b.shape[1]), torch.bfloat16, a.device)

    @staticmethod
    def reference(inputs):
        a, b, sa, sb = inputs
        K, N = b.shape
        sa, sb = sa.double(), sb.double()
        if is_block(sa, sb, N):
            sa = sa.repeat_interleave(SCALE_BLOCK, 1)[:, :K]
            sb = sb.repeat_interleave(SCALE_BLOCK, 0)[:K].repeat_interleave(SCALE_BLOCK, 1)[:, :N]
        return (a.double() * sa) @ (b.double() * sb)

    @classmethod
    def compare(cls, out, ref, inputs=None) -> Comparison:
        err = max_rel_err(out, ref)
        ok = err <= cls.TOL
        return Comparison(ok, err, "" if ok else f"max rel err {err:.2e} > {cls.TOL:.0e}")

    @staticmethod
    def shape_of(inputs) -> tuple:
        (M, K), N = inputs[0].shape, inputs[1].shape[1]
        return (M, N, K)

    @staticmethod
    def bytes(shape, dtype) -> int:
        M, N, K = shape
        return M * K + K * N + 2 * M * N  # (fp8 in, bfloat16 out)
