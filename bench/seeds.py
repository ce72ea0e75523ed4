"""The seeds' reported figures beside what the harness measured: README's "claims, checked".

The figures below are transcribed from the seed posts, the blog posts this project grew from,
cited by their titles in SEEDS (the only numbers in the project typed by hand; each says where
in its post it comes from). Everything they are compared with comes from bench/results/*.json.
"""

from __future__ import annotations

from dataclasses import dataclass

from bench.results_io import OPS_METRICS, Record
from bench.specs import SPECS

# seed -> (the post's title, what it holds)
SEEDS = {
    "000": ("CUDA:矩阵乘法与瓦片化处理", "matmul, naive one-thread-per-element kernel and a 7x7 shared tile"),
    # no title in the post: its first two lines
    "001": ("1. 介绍 - 矩阵向量乘法: A * X = Y", "GEMV, four kernels vs cublasSgemv, float32, M = K"),
    "002": ("CUDA 프로그래밍 Study Ch 10. CUDA 공유 메모리를 활용한 행렬 곱셈 프로그램",
            "matmul, int data, 16x16 shared-memory tiles with zero-filled edges"),
    "003": ("利用共享存储单元优化应用利用共享存储单元进行矩阵转", "transpose, Udacity's tiled transpose through a shared tile"),
    # the title under the site's breadcrumb line
    "004": ("cuda编程[5]:矩阵乘法--使用静态共享内存优化", "matmul, 32x32 static shared-memory tiles, float32, 4096 x 4096"),
}


@dataclass(frozen=True)
class SeedFigure:
    seed: str
    algorithm: str
    shape: tuple
    backend: str                     # our implementation of the seed's kernel
    variant: str
    kernel_ms: float | None = None   # the seed's time for its kernel; None: no figure reported
    cublas_ms: float | None = None   # the seed's cuBLAS time on the same input, if it gave one
    dtype: str = "float32"


FIGURES = (
    # Seed 000 prints no timing at all.
    SeedFigure("000", "matmul", (4096, 4096, 4096), "cuda", "naive"),
    SeedFigure("000", "matmul", (4096, 4096, 4096), "cuda", "smem_tiled"),
    # Seed 001, "4. 测试数据", first table (M = K = 2^14, the size whose cublasSgemv time, 8.55 ms,
    # matches its second table): kernel_native 87.9 ms (9.70% of cublasSgemv), kernel_Coalesced
    # 7.54 ms (113%), kernel_CoalescedConst 7.19 ms (119%), kernel_CoalescedShared 7.15 ms (119.50%).
    SeedFigure("001", "gemv", (16384, 16384), "cuda", "native", 87.9, 8.55),
    SeedFigure("001", "gemv", (16384, 16384), "cuda", "coalesced", 7.54, 8.55),
    SeedFigure("001", "gemv", (16384, 16384), "cuda", "coalesced_const", 7.19, 8.55),
    SeedFigure("001", "gemv", (16384, 16384), "cuda", "coalesced_shared", 7.15, 8.55),
    # Seed 001, second table: cublasSgemv / kernel_CoalescedShared ms at M = K = 2^12, 2^13, 2^15
    # (0.59 / 0.78 = 75.60%, 2.18 / 2.05 = 106%, 34.24 / 33.2 = 103%; 2^14 is the row above).
    SeedFigure("001", "gemv", (4096, 4096), "cuda", "coalesced_shared", 0.78, 0.59),
    SeedFigure("001", "gemv", (8192, 8192), "cuda", "coalesced_shared", 2.05, 2.18),
    SeedFigure("001", "gemv", (32768, 32768), "cuda", "coalesced_shared", 33.2, 34.24),
    # Seed 002 prints no timing and names no size: our int32 smem_tiled (its algorithm, the thread
    # mapping made coalesced, 32x32 tiles) at a square and at an odd shape its zero fill must cover.
    SeedFigure("002", "matmul", (2048, 2048, 2048), "cuda", "smem_tiled", dtype="int32"),
    SeedFigure("002", "matmul", (4097, 4095, 129), "cuda", "smem_tiled", dtype="int32"),
    # Seed 003 prints no timing.
    SeedFigure("003", "transpose", (16384, 16384), "cuda", "smem_tiled"),
    # Seed 004, "结果分析": "Input size is:4096 x 4096", "matmul in gpu without shared memory
    # <<<256, 16>>> uses 184.976639 ms" (its untiled kernel; the GPU is not named). The text ends
    # before the shared-memory kernel's time: no figure reported for it.
    SeedFigure("004", "matmul", (4096, 4096, 4096), "cuda", "naive", 184.976639),
    SeedFigure("004", "matmul", (4096, 4096, 4096), "cuda", "smem_tiled"),
)

# A ratio to cuBLAS "held" if the harness measured at least this share of the seed's figure.
HELD_WITHIN = 0.9


@dataclass
class Check:
    figure: SeedFigure
    record: Record | None         # our newest record of that kernel, dtype and shape

    @property
    def claimed_x(self):
        f = self.figure
        return f.cublas_ms / f.kernel_ms if f.kernel_ms and f.cublas_ms else None

    @property
    def claimed_rate(self) -> str:
        f = self.figure
        if not f.kernel_ms:
            return "no figure reported"
        spec = SPECS[f.algorithm]
        seconds = f.kernel_ms * 1e-3
        if spec.metric == "TFLOP/s":
            rate = f"{spec.flops(f.shape) / seconds / 1e12:.2f} TFLOP/s"
        else:
            rate = f"{spec.bytes(f.shape, spec.torch_dtype(f.dtype)) / seconds / 1e9:.0f} GB/s"
        return f"{f.kernel_ms:g} ms = {rate}"

    @property
    def measured_x(self):
        return self.record.x_vs_ref if self.record else None

    @property
    def verdict(self) -> str:
        if self.record is None or not self.record.median_ms:
            return "not measured"
        if self.claimed_x is not None:
            return "held" if self.measured_x >= HELD_WITHIN * self.claimed_x else "did not hold"
        if self.figure.kernel_ms:
            return "time on an unnamed GPU, no cuBLAS figure: not comparable"
        return "no figure reported"


def _share(r: Record, ceiling: str) -> str:
    """' (23.7% of copy)', or nothing where the run measured no ceiling (int32: no cuBLAS GEMM)."""
    return f" ({r.pct_of_ceiling:.1f}% of {ceiling})" if r.pct_of_ceiling is not None else ""


def _rate(r: Record) -> str:
    if r.metric in OPS_METRICS:
        return f"{r.tflops:.2f} {r.metric}"
    return f"{r.gbps:.0f} GB/s"


def _size(shape) -> str:
    """16384^2 (2^14), 4096^3 (2^12), or 12345x6789."""
    n = shape[0]
    if len(set(shape)) == 1 and n & (n - 1) == 0:
        return f"{n}^{len(shape)} (2^{n.bit_length() - 1})"
    return "x".join(map(str, shape))


def checks(runs_by_algorithm: dict) -> list[Check]:
    """Each seed figure with our newest record of the same kernel, dtype and shape."""
    out = []
    for f in FIGURES:
        run = runs_by_algorithm.get(f.algorithm)
        rec = None
        if run:
            # the spec's first case layout: the seeds' matmuls read a row-major B
            spec = SPECS[f.algorithm]
            rec = next((r for r in run["records"] if r.backend == f.backend and r.variant == f.variant
                        and r.dtype == f.dtype and tuple(r.shape) == tuple(f.shape)
                        and spec.case_layout_of(r.layout) == spec.case_layouts[0]), None)
        out.append(Check(f, rec))
    return out


def seed_line(seed: str, rows: list[Check]) -> str:
    """One sentence on what held and what did not, made from the numbers; each figure named with
    the device of its own record (the newest record of a shape may come from another run than the
    newest run of its algorithm)."""
    timed = [c for c in rows if c.record and c.record.median_ms]
    claims = [c for c in timed if c.claimed_x is not None]
    parts = []
    if claims:
        top = max(claims, key=lambda c: c.claimed_x)
        held = sum(c.verdict == "held" for c in claims)
        parts.append(f"claimed `{top.figure.variant}` at {top.claimed_x:.2f}x cuBLAS ({_size(top.figure.shape)}); "
                     f"measured {top.measured_x:.2f}x torch's cuBLAS call on {top.record.device}; "
                     f"{held} of {len(claims)} ratios held")
        same = [c for c in claims if c.figure.shape == top.figure.shape]
        if len(same) > 2:
            said = [c.figure.variant for c in sorted(same, key=lambda c: c.claimed_x)]
            seen = [c.figure.variant for c in sorted(same, key=lambda c: c.measured_x)]
            parts.append("its ranking (slowest first: " + " < ".join(f"`{v}`" for v in said) + ") "
                         + ("held" if said == seen else "did not hold: measured " + " < ".join(f"`{v}`" for v in seen)))
    else:
        reported = [c for c in rows if c.figure.kernel_ms]
        for c in reported:
            parts.append(f"reported `{c.figure.variant}` at {c.claimed_rate} ({_size(c.figure.shape)}, GPU not named, "
                         f"no cuBLAS figure): not comparable")
        if not reported:
            parts.append("no figure reported")
        if timed:
            ceiling = "cuBLAS" if timed[0].record.metric in OPS_METRICS else "copy"
            one = len({c.record.device for c in timed}) == 1
            parts.append((f"measured on {timed[0].record.device}: " if one else "measured: ") + ", ".join(
                f"`{c.figure.variant}` {c.figure.dtype} {_size(c.figure.shape)} {_rate(c.record)}{_share(c.record, ceiling)}"
                + ("" if one else f" on {c.record.device}") for c in timed))
    return f"- **Seed {seed}**: " + "; ".join(parts) + "."


def markdown(runs_by_algorithm: dict) -> str:
    rows = checks(runs_by_algorithm)
    out = ["| seed | kernel (ours) | size | seed's figure | seed: x cuBLAS | measured | measured: x torch | verdict |",
           "|---|---|---|---|---:|---|---:|---|"]
    for c in rows:
        f, r = c.figure, c.record
        measured = "-"
        if r and r.median_ms:
            ceiling = "cuBLAS" if r.metric in OPS_METRICS else "copy"
            measured = f"{r.median_ms:.3g} ms = {_rate(r)}{_share(r, ceiling)}"
        out.append(f"| {f.seed} | {f.backend} `{f.variant}` {f.dtype} | {_size(f.shape)} | {c.claimed_rate} | "
                   f"{'-' if c.claimed_x is None else f'{c.claimed_x:.2f}'} | {measured} | "
                   f"{'-' if c.measured_x is None else f'{c.measured_x:.2f}'} | {c.verdict} |")
    out.append("")
    for seed in SEEDS:
        out.append(seed_line(seed, [c for c in rows if c.figure.seed == seed]))
    out.append("")
    out.append("Seeds: " + "; ".join(f'{k} = "{title}" ({about})' for k, (title, about) in SEEDS.items())
               + ". x cuBLAS: the seed's cuBLAS time / its kernel's time; x torch: the torch reference's time / "
               "ours on the same input (torch.mv and torch.matmul are cuBLAS; transpose's is "
               f"`a.t().contiguous()`). A ratio holds when the measured one reaches {HELD_WITHIN:.0%} of the seed's.")
    return "\n".join(out) + "\n"
