"""Per-algorithm specs: inputs, reference, tolerance, poisoned output and the work model."""

from __future__ import annotations

import contextlib
import math
from dataclasses import dataclass

import torch

from kernel_common import INT_BY_SIZE, dtype_name, matmul_out_dtype
from kernel_common.catalog import F16
from kernel_common.util import float32_matmul_precision as torch_float32_precision

DTYPES = {
    "float16": torch.float16, "bfloat16": torch.bfloat16, "float32": torch.float32,
    "float64": torch.float64, "int32": torch.int32, "int8": torch.int8,
}



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


def terms_scale(a: torch.Tensor, x: torch.Tensor, rows: int = 4096) -> float:
    """max over rows i of sqrt(sum_j (a_ij x_j)^2): how large the partial sums of a row's products
    grow when their signs are random (what a float32 accumulation rounds), in float64, a block of
    rows at a time."""
    x2 = x.double().square()
    return max(((a[i:i + rows].double().square() @ x2).sqrt().max().item() for i in range(0, a.shape[0], rows)),
               default=0.0)


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


class Spec:
    """Hooks with defaults; a spec overrides what its algorithm needs.

    A spec's dtype names are usually torch dtypes; a name may also stand for a mode (matmul's
    "tf32": float32 tensors with TF32 allowed), which ``torch_dtype`` and ``context`` resolve.
    """

    @staticmethod
    def torch_dtype(dtype_name: str) -> torch.dtype:
        """The dtype of the tensors ``make_inputs`` gets for this dtype name."""
        return DTYPES[dtype_name]

    @staticmethod
    def context(dtype_name: str):
        """A context manager around every check, timing and ceiling of this dtype name."""
        return contextlib.nullcontext()

    @classmethod
    def metric_of(cls, dtype_name: str) -> str:
        """The headline rate of this dtype name's records: the spec's, TOPS for integer FLOPs."""
        return cls.metric
    # Every case runs once per case layout (None: once, the inputs as make_inputs draws them);
    # ``arrange`` makes them, every implementation and torch's reference get the same.
    case_layouts: tuple = (None,)
    case_operand = ""  # the input the case layouts are layouts of, as tables name it
    # Named shape lists for compare --size-set.
    size_sets: dict[str, tuple] = {}

    @staticmethod
    def arrange(inputs, case_layout):
        """The inputs in this case layout: the same values, other strides."""
        return inputs

    @classmethod
    def case_layout_of(cls, layout):
        """The case layout a record of this spec with ``layout`` ran in: None for a spec without
        case layouts (gemv's layouts are its implementations'); the first for files from before
        case layouts, whose records say None."""
        return None if cls.case_layouts == (None,) else layout or cls.case_layouts[0]

    @staticmethod
    def prepare(inputs, layout):
        """The inputs as an implementation with this ``layout`` reads them (made outside timing)."""
        return inputs

    @classmethod
    def normalize_shape(cls, dims) -> tuple:
        """``--size``'s extents as the spec's shape: one extent N is the square (cube) of N."""
        ndim = cls.size_form.count("x") + 1
        if len(dims) == 1:
            return (dims[0],) * ndim
        if len(dims) != ndim:
            raise ValueError(f"--size for {cls.algorithm} is N or {cls.size_form}, got {'x'.join(map(str, dims))}")
        return tuple(dims)

    @staticmethod
    def shape_of(inputs) -> tuple:
        """The spec's shape tuple of these inputs (R, C), (M, K) or (M, N, K)."""
        if len(inputs) == 2 and inputs[1].dim() == 2:  # matmul: a (M, K), b (K, N)
            (M, K), N = inputs[0].shape, inputs[1].shape[1]
            return (M, N, K)
        return tuple(inputs[0].shape)


class TransposeSpec(Spec):
    algorithm = "transpose"
    metric = "GB/s"
    ceiling = "copy"
    dtypes = ("float32", "float16", "bfloat16", "float64", "int32", "int8")
    default_dtypes = ("float32", "float16")
    # 16384^2 fp32 is 1 GiB, far past L2; 12345 x 6789 has no power-of-two factor in either
    # extent (edge tiles and unaligned rows); 4096^2 fp32 is 64 MiB, just past the 50-60 MB L2.
    gpu_sizes = ((16384, 16384), (12345, 6789), (4096, 4096))
    # rows whose length is no multiple of a vector (and one past a power of two), and a batch of
    # them as attention code transposes one (B, R, C): issue 16's shapes
    size_sets = {"odd": ((12345, 6789), (4097, 4095), (6789, 12345), (1025, 1023), (64, 1024, 1000))}
    cpu_sizes = ((33, 65), (100, 3), (3, 17, 9))

    size_form = "[Bx]RxC"

    @classmethod
    def normalize_shape(cls, dims) -> tuple:
        """N (the square), RxC, or BxRxC (a batch)."""
        if len(dims) == 1:
            return (dims[0],) * 2
        if len(dims) not in (2, 3):
            raise ValueError(f"--size for transpose is N, RxC or BxRxC, got {'x'.join(map(str, dims))}")
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
        return (torch.randint(1, torch.iinfo(dtype).max, shape, generator=g, device=device, dtype=dtype),)

    @staticmethod
    def make_out(inputs):
        (a,) = inputs
        return poison((*a.shape[:-2], a.shape[-1], a.shape[-2]), a.dtype, a.device)

    @staticmethod
    def reference(inputs):
        (a,) = inputs
        return a.transpose(-1, -2).contiguous()  # exact: a transpose is a permutation of bits

    @staticmethod
    def compare(out, ref, inputs=None) -> Comparison:
        if tuple(out.shape) != tuple(ref.shape) or out.dtype != ref.dtype:
            return Comparison(False, float("inf"),
                              f"got {tuple(out.shape)} {out.dtype}, expected {tuple(ref.shape)} {ref.dtype}")
        bits = INT_BY_SIZE[out.element_size()]
        bad = out.contiguous().view(bits) != ref.contiguous().view(bits)
        if not bad.any():
            return Comparison(True, 0.0)
        return Comparison(False, max_rel_err(out, ref), first_mismatches(out, ref, bad))

    @staticmethod
    def flops(shape) -> int:
        return 0

    @staticmethod
    def bytes(shape, dtype) -> int:
        return 2 * math.prod(shape) * dtype.itemsize  # read a once, write out once

    @staticmethod
    def numel(shape) -> int:
        return math.prod(shape)


class GemvSpec(Spec):
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
    # "decode": one token through Llama 3 8B / 70B (A = a weight, out x in features: qkv, o,
    # gate/up, down and the 128256-word LM head; MODEL_SHAPES below), and tall-and-narrow /
    # short-and-wide matrices of the same bytes
    size_sets = {"decode": tuple((N, K) for H, inter, qkv in ((4096, 14336, 6144), (8192, 28672, 10240))
                                 for N, K in ((qkv, H), (H, H), (inter, H), (H, inter), (128256, H)))
                 + ((1 << 22, 32), (64, 1 << 21))}

    size_form = "MxK"

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
    def compare(cls, out, ref, inputs=None) -> Comparison:
        if tuple(out.shape) != tuple(ref.shape):
            return Comparison(False, float("inf"), f"got shape {tuple(out.shape)}, expected {tuple(ref.shape)}")
        err = max_rel_err(out, ref)
        tol = cls.tolerance(out.dtype, inputs[0].shape[1] if inputs is not None else 1 << 20)
        if err <= tol:
            return Comparison(True, err)
        scale = ref.double().abs().max().item()
        if math.isfinite(err) and inputs is not None:
            # few rows can all cancel far below the partial sums a float32 accumulation rounds (a
            # row of 12291 terms of ~1 summing to 0.4): the error is judged against those instead
            scale = max(scale, terms_scale(*inputs))
            err = (out.double() - ref.double()).abs().max().item() / scale
            if err <= tol:
                return Comparison(True, err)
        bad = (out.double() - ref.double()).abs() > tol * max(scale, 1e-30)
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



# Decoder projections (M tokens, N out features, K in features) from the public config.json of
# Llama 3 8B (hidden 4096, intermediate 14336, 32 heads and 8 KV heads of 128: fused qkv out
# 4096 + 2 * 8 * 128 = 6144) and Llama 3 70B (8192, 28672, 64 heads, 8 KV heads: qkv out 10240).
_LLAMA3 = ((4096, 14336, 6144), (8192, 28672, 10240))  # (hidden, intermediate, qkv out)
_TOKENS = (1, 16, 128, 2048, 8192)  # decode to long prefill
MODEL_SHAPES = tuple((M, N, K) for H, inter, qkv in _LLAMA3
                     for N, K in ((qkv, H), (H, H), (inter, H), (H, inter))  # qkv, o, gate/up, down
                     for M in _TOKENS)


def int_reference(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """a @ b for int8 or int32 a and b, exactly, as int32 with C's wrapping arithmetic (the sum
    modulo 2^32), from float64 products on a's device. int8: every sum is below 2^53 (K < 2^38).
    int32: each operand split into 16-bit halves, x = xh 2^16 + xl, whose products sum exactly in
    float64 for K <= 2^20; modulo 2^32, a b = al bl + 2^16 (ah bl + al bh) (ah bh 2^32 vanishes)."""
    K = a.shape[1]
    if a.dtype == torch.int8 or K == 0:
        exact = (a.double() @ b.double()).long()
    else:
        if K > 1 << 20:
            raise ValueError(f"int_reference: K = {K} past 2^20, where float64 sums of 32-bit halves round")
        lo = lambda x: (x.long() & 0xFFFF).double()  # noqa: E731
        hi = lambda x: (x.long() >> 16).double()  # noqa: E731
        low = (lo(a) @ lo(b)).long()
        mid = ((hi(a) @ lo(b)).long() + (lo(a) @ hi(b)).long()) & 0xFFFFFFFF
        exact = low + (mid << 16)
    wrapped = (exact & 0xFFFFFFFF)
    return torch.where(wrapped >= 1 << 31, wrapped - (1 << 32), wrapped).to(torch.int32)


@contextlib.contextmanager
def float32_matmul_precision(precision: str):
    """torch.set_float32_matmul_precision(precision) inside the block, restored after. It sets
    cuBLAS's TF32 switch (torch.backends.cuda.matmul.allow_tf32) too, and triton_impl.matmul
    reads it."""
    before = torch_float32_precision()
    torch.set_float32_matmul_precision(precision)
    try:
        yield
    finally:
        torch.set_float32_matmul_precision(before)


class MatmulSpec(Spec):
    """c (M, N) = a (M, K) b (K, N). Shapes are (M, N, K).

    Tolerance, relative to max |ref| (a float64 product of the same inputs), by dtype and K:
    ``BASE_TOL[kind] + 2e-6 * sqrt(K)``. The sqrt(K) term is float32 accumulation (rounding errors
    of K additions grow like a random walk: an estimated max ~1.5e-5 at K = 8192, 10x margin);
    the base is one rounding of the output and of what torch's own call adds, doubled because
    outputs are also cross-checked against torch's (float16 / bfloat16 output ulps are 2^-10 /
    2^-7; TF32 truncates inputs to 10 mantissa bits, a biased ~1e-3). float32 stays below TF32's
    error at every K up to 6e5, so a TF32 dot where exact float32 was asked for fails the check.
    """
    algorithm = "matmul"
    metric = "TFLOP/s"
    ceiling = "cublas"
    # "tf32": float32 tensors under torch.set_float32_matmul_precision("high") (see context);
    # int8 (int32 result) and int32 are exact, run when asked for (--dtype int8 int32)
    dtypes = ("float32", "tf32", "float16", "bfloat16", "int8", "int32")
    default_dtypes = ("float32", "tf32", "float16", "bfloat16")
    gpu_sizes = (
        (1024, 1024, 1024),    # 12 MiB fp32: fits in L2
        (2048, 2048, 2048),
        (4096, 4096, 4096),
        (8192, 8192, 8192),    # cuBLAS's ceiling shape
        (67, 45, 33),          # every extent one past a power of two: edge tiles only
        (495, 5333, 71),       # K not a multiple of BLOCK_K, N prime-ish and wide
        (4097, 4095, 129),     # one past / one short of the tile in M and N
    )
    cpu_sizes = ((67, 45, 33), (1, 300, 7))  # the interpreter is slow: small odd shapes
    size_sets = {"models": MODEL_SHAPES}
    # B row-major (K, N), and B = W.t() of a contiguous (N, K) weight, as nn.Linear keeps it
    case_layouts = ("row", "wt")
    case_operand = "B"
    BASE_TOL = {"float32": 1e-6, "tf32": 5e-3, "float16": 1e-2, "bfloat16": 3e-2}

    @staticmethod
    def torch_dtype(dtype_name: str) -> torch.dtype:
        return torch.float32 if dtype_name == "tf32" else DTYPES[dtype_name]

    @staticmethod
    def context(dtype_name: str):
        """float32 runs exact ("highest"), tf32 with TF32 allowed ("high"); 16-bit types are not
        affected by the setting."""
        if dtype_name == "tf32":
            return float32_matmul_precision("high")
        if dtype_name == "float32":
            return float32_matmul_precision("highest")
        return contextlib.nullcontext()

    size_form = "MxNxK"

    @classmethod
    def metric_of(cls, dtype_name: str) -> str:
        return "TOPS" if dtype_name.startswith("int") else cls.metric

    @staticmethod
    def make_inputs(shape, dtype, device, seed: int):
        M, N, K = shape
        g = torch.Generator(device=device).manual_seed(seed)
        if not dtype.is_floating_point:
            # any value but zero, random signs: int32 over its whole range, so sums wrap
            top = torch.iinfo(dtype).max

            def draw_int(rows, cols):
                x = torch.randint(1, top + 1, (rows, cols), generator=g, device=device, dtype=torch.int64)
                x *= torch.randint(0, 2, (rows, cols), generator=g, device=device) * 2 - 1
                return x.to(dtype)
            return (draw_int(M, K), draw_int(K, N))
        # magnitudes in [0.25, 1) with random signs, never zero, scaled by K^-1/4 each, so every
        # entry of c is a sum of K terms of variance ~1/K: |c| stays near 1 for any K
        scale = max(K, 1) ** -0.25

        def draw(rows, cols):
            x = torch.rand((rows, cols), generator=g, device=device) * 0.75 + 0.25
            x *= torch.randint(0, 2, (rows, cols), generator=g, device=device) * 2 - 1
            return (x * scale).to(dtype)

        return (draw(M, K), draw(K, N))

    @staticmethod
    def arrange(inputs, case_layout):
        a, b = inputs
        return (a, b.t().contiguous().t()) if case_layout == "wt" else inputs

    @staticmethod
    def make_out(inputs):
        a, b = inputs
        return poison((a.shape[0], b.shape[1]), matmul_out_dtype(a.dtype), a.device)

    @staticmethod
    def reference(inputs):
        a, b = inputs
        if a.dtype.is_floating_point:
            return a.double() @ b.double()  # the inputs are exact in float64: only the sum rounds
        return int_reference(a, b)

    @classmethod
    def tolerance(cls, kind: str, K: int) -> float:
        """Max error relative to max |ref| for a dtype name (float32, tf32, ...) and K."""
        return cls.BASE_TOL[kind] + 2e-6 * math.sqrt(K)

    @classmethod
    def compare(cls, out, ref, inputs=None) -> Comparison:
        """``inputs`` give K; float32 counts as tf32 when the precision mode allows TF32 (compare
        runs inside ``context(dtype_name)``). Integer products are compared exactly."""
        if not ref.dtype.is_floating_point:
            if tuple(out.shape) != tuple(ref.shape) or out.dtype != ref.dtype:
                return Comparison(False, float("inf"), f"got {tuple(out.shape)} {out.dtype}, expected "
                                                       f"{tuple(ref.shape)} {ref.dtype}")
            bad = out != ref
            return Comparison(True, 0.0) if not bad.any() else \
                Comparison(False, max_rel_err(out, ref), "exact: " + first_mismatches(out, ref, bad))
        if tuple(out.shape) != tuple(ref.shape) or not out.dtype.is_floating_point:
            return Comparison(False, float("inf"),
                              f"got {tuple(out.shape)} {out.dtype}, expected {tuple(ref.shape)}")
        K = inputs[0].shape[1] if inputs is not None else 1 << 13
        kind = dtype_name(out.dtype)
        if kind == "float32" and torch_float32_precision() != "highest":
            kind = "tf32"
        tol = cls.tolerance(kind, K)
        err = max_rel_err(out, ref)
        if err <= tol:
            return Comparison(True, err)
        o, r = out.double(), ref.double()
        scale = r.abs().max().item() or 1.0
        bad = ((o - r).abs() > tol * scale) | (torch.isnan(o) != torch.isnan(r))
        return Comparison(False, err, f"tolerance {tol:.1e} ({kind}, K={K}): " + first_mismatches(out, ref, bad))

    @staticmethod
    def flops(shape) -> int:
        M, N, K = shape
        return 2 * M * N * K

    @staticmethod
    def bytes(shape, dtype) -> int:
        M, N, K = shape
        # read a and b once, write c once
        return (M * K + K * N) * dtype.itemsize + M * N * matmul_out_dtype(dtype).itemsize

    @staticmethod
    def numel(shape) -> int:
        """Multiply-adds: what a size cap limits."""
        M, N, K = shape
        return M * N * K


class AddmmSpec(MatmulSpec):
    """c = a b + bias, the bias a row of N elements in a's dtype (nn.Linear's addmm), rounded once:
    the epilogues the switch's addmm runs, against torch.addmm. Shapes (M, N, K), case layouts,
    size sets and tolerance are matmul's; 16-bit only (where a model's addmm runs in a bias)."""
    algorithm = "addmm"
    dtypes = default_dtypes = F16

    @staticmethod
    def make_inputs(shape, dtype, device, seed: int):
        a, b = MatmulSpec.make_inputs(shape, dtype, device, seed)
        g = torch.Generator(device=device).manual_seed(seed + 1)
        bias = torch.rand(shape[1], generator=g, device=device) * 0.75 + 0.25  # |c|'s scale, never zero
        bias *= torch.randint(0, 2, (shape[1],), generator=g, device=device) * 2 - 1
        return a, b, bias.to(dtype)

    @staticmethod
    def arrange(inputs, case_layout):
        return (*MatmulSpec.arrange(inputs[:2], case_layout), inputs[2])

    @staticmethod
    def make_out(inputs):
        return MatmulSpec.make_out(inputs[:2])

    @staticmethod
    def reference(inputs):
        return MatmulSpec.reference(inputs[:2]) + inputs[2].double()

    @classmethod
    def compare(cls, out, ref, inputs=None) -> Comparison:
        return MatmulSpec.compare(out, ref, None if inputs is None else inputs[:2])

    @staticmethod
    def bytes(shape, dtype) -> int:
        return MatmulSpec.bytes(shape, dtype) + shape[1] * dtype.itemsize


# the products of many matrices, built on MatmulSpec above (bench/specs_batched.py)
from bench.specs_batched import BmmSpec, GroupedSpec  # noqa: E402
from bench.specs_fp8 import ScaledMmSpec  # noqa: E402

SPECS = {"transpose": TransposeSpec, "gemv": GemvSpec, "matmul": MatmulSpec, "addmm": AddmmSpec, "bmm": BmmSpec,
         "grouped_mm": GroupedSpec, "scaled_mm": ScaledMmSpec}
