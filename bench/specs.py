"""Per-algorithm specs: inputs, reference, tolerance, poisoned output and the work model."""

from __future__ import annotations

from dataclasses import dataclass

import torch

DTYPES = {
    "float16": torch.float16, "bfloat16": torch.bfloat16, "float32": torch.float32,
    "float64": torch.float64, "int32": torch.int32,
}
_BITS = {1: torch.int8, 2: torch.int16, 4: torch.int32, 8: torch.int64}


@dataclass
class Comparison:
    ok: bool
    max_rel_err: float
    detail: str = ""


def poison(shape, dtype, device) -> torch.Tensor:
    """An output full of values no correct kernel writes: NaN, or INT_MIN for integers."""
    if dtype.is_floating_point:
        return torch.full(shape, float("nan"), dtype=dtype, device=device)
    return torch.full(shape, torch.iinfo(dtype).min, dtype=dtype, device=device)


def max_rel_err(out: torch.Tensor, ref: torch.Tensor) -> float:
    """max |out - ref| / max |ref| in float64; NaN anywhere in out counts as infinite error."""
    if out.numel() == 0:
        return 0.0
    o, r = out.to(torch.float64), ref.to(torch.float64)
    if torch.isnan(o).any() and not torch.isnan(r).any():
        return float("inf")
    scale = r.abs().max().item() or 1.0
    return ((o - r).abs().max() / scale).item()


def first_mismatches(out: torch.Tensor, ref: torch.Tensor, bad: torch.Tensor, n: int = 3) -> str:
    idx = bad.nonzero()[:n].tolist()
    parts = [f"{tuple(i)}: got {out[tuple(i)].item()!r}, expected {ref[tuple(i)].item()!r}" for i in idx]
    return f"{int(bad.sum())} of {bad.numel()} differ; " + "; ".join(parts)


def parse_shape(text: str) -> tuple[int, ...]:
    """'16384x8192' -> (16384, 8192); '4096' -> (4096, 4096) for a 2-D algorithm."""
    try:
        dims = tuple(int(p) for p in text.lower().split("x"))
    except ValueError:
        raise ValueError(f"--size must look like 4096 or 12345x6789, got {text!r}") from None
    if any(d < 0 for d in dims):
        raise ValueError(f"--size must have non-negative extents, got {text!r}")
    return dims


class TransposeSpec:
    algorithm = "transpose"
    metric = "GB/s"
    ceiling = "copy"
    dtypes = ("float32", "float16", "bfloat16", "float64", "int32")
    default_dtypes = ("float32", "float16")
    # 16384^2 fp32 is 1 GiB, far past L2; 12345 x 6789 has no power-of-two factor in either
    # extent (edge tiles and unaligned rows); 4096^2 fp32 is 64 MiB, just past the 50-60 MB L2.
    gpu_sizes = ((16384, 16384), (12345, 6789), (4096, 4096))
    cpu_sizes = ((33, 65), (100, 3))

    @staticmethod
    def normalize_shape(dims):
        if len(dims) == 1:
            return (dims[0], dims[0])
        if len(dims) != 2:
            raise ValueError(f"--size for transpose is R or RxC, got {'x'.join(map(str, dims))}")
        return tuple(dims)

    @staticmethod
    def make_inputs(shape, dtype, device, seed: int):
        # drawn on the target device: a 1 GiB input from the CPU generator takes seconds
        g = torch.Generator(device=device).manual_seed(seed)
        if dtype.is_floating_point:
            # magnitudes in [1, 2) with random signs: never zero
            a = torch.rand(shape, generator=g, device=device) + 1
            a *= torch.randint(0, 2, shape, generator=g, device=device) * 2 - 1
            return (a.to(dtype),)
        return (torch.randint(1, 1 << 30, shape, generator=g, device=device, dtype=dtype),)

    @staticmethod
    def prepare(inputs, layout):
        return inputs

    @staticmethod
    def reduction_length(inputs):
        return None

    @staticmethod
    def make_out(inputs):
        (a,) = inputs
        return poison((a.shape[1], a.shape[0]), a.dtype, a.device)

    @staticmethod
    def reference(inputs):
        (a,) = inputs
        return a.t().contiguous()  # exact: a transpose is a permutation of bits

    @staticmethod
    def compare(out, ref, K=None) -> Comparison:
        if tuple(out.shape) != tuple(ref.shape) or out.dtype != ref.dtype:
            return Comparison(False, float("inf"),
                              f"got {tuple(out.shape)} {out.dtype}, expected {tuple(ref.shape)} {ref.dtype}")
        bits = _BITS[out.element_size()]
        bad = out.contiguous().view(bits) != ref.contiguous().view(bits)
        if not bad.any():
            return Comparison(True, 0.0)
        return Comparison(False, max_rel_err(out, ref), first_mismatches(out, ref, bad))

    @staticmethod
    def flops(shape) -> int:
        return 0

    @staticmethod
    def bytes(shape, dtype) -> int:
        R, C = shape
        return 2 * R * C * dtype.itemsize  # read a once, write out once

    @staticmethod
    def numel(shape) -> int:
        R, C = shape
        return R * C


class GemvSpec:
    algorithm = "gemv"
    metric = "GB/s"
    ceiling = "copy"   # GEMV reads A once: it is bandwidth-bound at every size
    dtypes = ("float32", "float16", "bfloat16")
    default_dtypes = ("float32",)
    # Seed 001's squares 2^12..2^15 (2^15 fp32 is 4 GiB), then the awkward ones: few rows and a
    # long K, many rows and a short K, and odd extents.
    gpu_sizes = ((4096, 4096), (8192, 8192), (16384, 16384), (32768, 32768),
                 (64, 1 << 20), (1 << 22, 32), (12345, 6789))
    cpu_sizes = ((67, 45), (1, 300))

    @staticmethod
    def normalize_shape(dims):
        if len(dims) == 1:
            return (dims[0], dims[0])
        if len(dims) != 2:
            raise ValueError(f"--size for gemv is MxK or N, got {'x'.join(map(str, dims))}")
        return tuple(dims)

    @staticmethod
    def make_inputs(shape, dtype, device, seed: int):
        """A uniform in +-[0.5, 1), x the same over sqrt(K): y stays O(1) for any K."""
        M, K = shape
        g = torch.Generator(device=device).manual_seed(seed)

        def draw(*size, scale=1.0):
            v = (torch.rand(size, generator=g, device=device) * 0.5 + 0.5) * scale
            return (v * (torch.randint(0, 2, size, generator=g, device=device) * 2 - 1)).to(dtype)
        return (draw(M, K), draw(K, scale=max(K, 1) ** -0.5))

    @staticmethod
    def prepare(inputs, layout):
        """The inputs as a variant reads them: A row-major or column-major (made outside timing)."""
        from kernel_common import to_layout
        a, x = inputs
        return inputs if layout is None else (to_layout(a, layout), x)

    @staticmethod
    def reduction_length(inputs):
        return inputs[0].shape[1]

    @staticmethod
    def make_out(inputs):
        a, _ = inputs
        return poison((a.shape[0],), a.dtype, a.device)

    @staticmethod
    def reference(inputs):
        a, x = inputs
        return (a.double() @ x.double()) if a.shape[1] else torch.zeros(a.shape[0], dtype=torch.float64, device=a.device)

    @staticmethod
    def tolerance(dtype, K) -> float:
        """Relative to max|y|: the output's rounding (float16 2^-11, bfloat16 2^-8) plus float32
        accumulation error growing like sqrt(K), with a safety factor of 4."""
        out_eps = {torch.float32: 0.0, torch.float16: 2.0 ** -11, torch.bfloat16: 2.0 ** -8}[dtype]
        return 4 * (out_eps + 2.0 ** -24 * max(K, 1) ** 0.5) + 1e-6

    @classmethod
    def compare(cls, out, ref, K=None) -> Comparison:
        if tuple(out.shape) != tuple(ref.shape):
            return Comparison(False, float("inf"), f"got shape {tuple(out.shape)}, expected {tuple(ref.shape)}")
        err = max_rel_err(out, ref)
        tol = cls.tolerance(out.dtype, K if K is not None else 1 << 20)
        if err <= tol:
            return Comparison(True, err)
        bad = (out.double() - ref.double()).abs() > tol * max(ref.double().abs().max().item(), 1e-30)
        bad |= torch.isnan(out.double()) != torch.isnan(ref.double())
        return Comparison(False, err, f"max rel err {err:.2e} > tol {tol:.1e}; " + first_mismatches(out, ref, bad))

    @staticmethod
    def flops(shape) -> int:
        M, K = shape
        return 2 * M * K

    @staticmethod
    def bytes(shape, dtype) -> int:
        M, K = shape
        return (M * K + K + M) * dtype.itemsize

    @staticmethod
    def numel(shape) -> int:
        M, K = shape
        return M * K


SPECS = {"transpose": TransposeSpec, "gemv": GemvSpec}
