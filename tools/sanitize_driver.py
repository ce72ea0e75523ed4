"""The workload that tools/sanitize_all.sh runs under compute-sanitizer: every variant of one
backend, every algorithm, on small odd shapes (compute-sanitizer slows kernels 10-100x), with a
light correctness check so a run that silently computes garbage fails too.

    python -m tools.sanitize_driver --backend cuda            # what the sanitizer runs
    python -m tools.sanitize_driver --backend triton --list   # the cases, no GPU needed
    python -m tools.sanitize_driver --selftest                # one deliberate OOB write

Shapes: transpose 33x65, 100x3 (edge tiles, scalar paths), 64x96 (the 16-byte vector path),
130x261 (rows off 16 bytes: the shifted vector path), 13x701 (narrow's flat kernel) and a batch 3x67x45,
with a transposed view; batched matmul's walks (BATCH_SHAPES);
gemv 67x45 and 1025x1030 (K % 8 != 0: vector tails) in both layouts, 5x9000 (split_k in three
pieces) and 300x191 (rows_per_warp's masked twin: vectors that pass A's ends read element by element); matmul 67x45x33 and 3x45x33 (few_rows) with row- and column-major b; scaled_mm (FP8)
per scaling (FP8_SHAPES); grouped_mm both layouts of b (GROUPED_SHAPES). Element
sizes: the transpose kernels exist per size (1, 2, 4, 8 bytes); gemv and matmul per dtype
(float32, float16; bfloat16 differs from float16 only in the conversion), and matmul's integer
kernels (int8, int32). Exit status: 0 when
every case ran and matched the reference, 1 otherwise.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

# PYTORCH_NO_CUDA_MEMORY_CACHING must be set before torch allocates: without it memcheck and
# initcheck see torch's big cached blocks, not our tensors (an overrun lands inside a block).
os.environ.setdefault("PYTORCH_NO_CUDA_MEMORY_CACHING", "1")

import torch  # noqa: E402

from bench.specs import SPECS  # noqa: E402
from kernel_common import dtype_name  # noqa: E402

# (130, 261): rows off 16 bytes in and out, interior and edge tiles of the shifted vector path;
# (387, 133): interior tiles of Triton's word-pairs kernel (128 x 32, two row tiles down);
# (3, 67, 45): a batch
TRANSPOSE_SHAPES = [(33, 65), (100, 3), (64, 96), (130, 261), (387, 133), (3, 67, 45), (13, 701)]
TRANSPOSE_DTYPES = [torch.float32, torch.float16, torch.float64, torch.int8]  # one kernel per element size
GEMV_SHAPES = [(67, 45), (1025, 1030), (5, 9000), (300, 191), (300, 97)]  # the masked twin: 16 lanes at 191, 8 at 97 (float32: 16; 8 at 45)
# 67x45x33: edges only; 256x256x64: whole 128 x 128 tiles, aligned rows (the EDGES=false twin);
# 300x520x200: several tiles and K slices of the tensor-core kernels, with edges (a persistent
# wgmma_ws block walks more than one tile on small grids too); 1030x520x72: wgmma_ws's blocks in
# pairs (M >= 1024), the last pair's second tile past M; 17x300x1100: wgmma_ws's 64-row tiles
# splitting K into runs (float32 partial products, then their reduction); 4097x4095x129 (float32 only, it is slow
# under the tools): full tiles and edges together
MATMUL_SHAPES = [(67, 45, 33), (3, 45, 33), (256, 256, 64), (300, 520, 200), (1030, 520, 72), (17, 300, 1100),
                 (4097, 4095, 129)]
# stream-K (its rules need a large product), wgmma_ws (16-bit): 70 pair units on an H100's 66 pairs,
# the last 4 shared by all in shares of 8 slices, with a K tail; fma_ws (float32): 252 tiles, the
# last 120 shared in runs of 121 slices across tiles, with a K tail
STREAM_K_SHAPE = (1030, 3584, 8450)
# persistent grids of fewer programs than SMs, several tiles each (balanced_grid): wgmma_ws's 144
# pair units on 48 of 66 pairs, the TMA kernel's 272 tiles on 91 programs; edges, K one slice
BALANCED_SHAPE = (2100, 4000, 64)
# wgmma_ws's tiles of 192 columns (the model's pick here): in pairs, a row-major b's three boxes
# brought two and one, N past the last tile's edge, a K tail
MIDDLE_SHAPE = (390, 5000, 72)
# few_rows_mma's K in runs that fill the slots (K >= 4096): 18 blocks, 9 runs of 512, their sums in order
RUNS_SHAPE = (5, 576, 4608)
# wgmma_swap's K in four runs summed in a cluster's shared memory (3 row blocks x 8 tiles x 4 runs)
CLUSTER_RUNS_SHAPE = (212, 1000, 4100)
# short_k (K <= 16 only): 68 row tiles walked by fewer blocks, N off its 128-column tile; edges and K = 3
SHORT_K_SHAPES = [(4302, 1000, 8), (67, 45, 3)]
PERSISTENT_SHAPES = {"wgmma_ws": [STREAM_K_SHAPE, BALANCED_SHAPE, MIDDLE_SHAPE], "fma_ws": [STREAM_K_SHAPE],
                     "tma_persistent": [BALANCED_SHAPE], "few_rows_mma": [RUNS_SHAPE],
                     "wgmma_swap": [CLUSTER_RUNS_SHAPE], "short_k": SHORT_K_SHAPES}
# scaled_mm (FP8), each scaling: one tile with edges, K off 128 (a short last slice) and off 16
# bytes (a copied), 544 tiles on fewer blocks (several tiles a block, the ring's phases across them),
# and few tiles over a deep K (4 runs of K a tile, handed over in one launch: fp8.split_runs)
FP8_SHAPES = [(67, 45, 256), (33, 16, 130), (2100, 4000, 256), (200, 300, 4100)]
# grouped_mm (G, T, N, K), both layouts of b: a router's uneven split with K and N off the tiles, and
# more tiles than blocks (several a block, the groups walked across them)
GROUPED_SHAPES = [(3, 70, 24, 40), (8, 8192, 1100, 72)]
# b's gradient (weight_grad) on those, and with several tiles of c[g] a block (most groups ending
# inside a k-slice: its rows past the group cut while the other warpgroup may store a tile)
WEIGHT_GRAD_SHAPES = GROUPED_SHAPES + [(8, 560, 2048, 512)]
ARITH_DTYPES = [torch.float32, torch.float16]
MATMUL_DTYPES = ARITH_DTYPES + [torch.int8, torch.int32]
# the kernels that take float32 only as TF32 (wgmma_swap, few_rows_mma, wgmma_ws) run these under TF32 ("tf32" cases):
# edges, few rows, several tiles and K slices
TF32_SHAPES = [(67, 45, 33), (3, 45, 33), (17, 300, 1100), (300, 520, 200)]


def cases(backend: str, small: bool = False, device=None):
    """(algorithm, variant, shape, dtype, layout) for every case the driver runs (on ``device``
    where given: "cpu" leaves out the GPU-only Triton variants)."""
    import cuda_ref
    import triton_impl

    mod = {"cuda": cuda_ref, "triton": triton_impl}[backend]
    out = []
    for variant in mod.variants("transpose"):
        for shape in TRANSPOSE_SHAPES:
            for dtype in TRANSPOSE_DTYPES:
                for layout in ("row", "t"):
                    out.append(("transpose", variant, shape, dtype, layout))
    for variant in mod.variants("gemv"):
        for shape in GEMV_SHAPES:
            for dtype in ARITH_DTYPES:
                for layout in ("row", "col"):
                    if variant == "coalesced_const" and shape[1] * dtype.itemsize > 65536:
                        continue  # refused by design (x must fit in constant memory)
                    out.append(("gemv", variant, shape, dtype, layout))
    from bench import registry
    for variant in mod.variants("matmul"):
        for shape in MATMUL_SHAPES + PERSISTENT_SHAPES.get(variant, []):
            for dtype in MATMUL_DTYPES:
                if shape[0] * shape[1] * shape[2] > 1 << 30 and dtype != torch.float32 and shape != STREAM_K_SHAPE:
                    continue
                if not registry.takes("matmul", backend, variant, dtype_name(dtype), shape, device):
                    continue  # refused by design (the float32-only SGEMM kernels)
                for layout in ("row", "col"):  # b row- or column-major
                    out.append(("matmul", variant, shape, dtype, layout))
            tf32_only = not registry.takes("matmul", backend, variant, "float32", shape, device)
            if tf32_only and registry.takes("matmul", backend, variant, "tf32", shape, device) and shape in TF32_SHAPES:
                for layout in ("row", "col"):  # a TF32 kernel: float32 tensors under TF32 precision
                    out.append(("matmul", variant, shape, "tf32", layout))
    for variant in mod.variants("scaled_mm"):
        if not registry.takes("scaled_mm", backend, variant, "float8_e4m3fn", FP8_SHAPES[0], device):
            continue  # (GPU-only: ws_fp8 is Gluon)
        for shape in FP8_SHAPES:
            for layout in SPECS["scaled_mm"].case_layouts:  # the scalings
                out.append(("scaled_mm", variant, shape, torch.float8_e4m3fn, layout))
    try:
        grouped_variants = mod.variants("grouped_mm")
    except ValueError:
        grouped_variants = ()  # (a backend without it)
    for variant in grouped_variants:
        for shape in GROUPED_SHAPES:
            for dtype in (torch.float16, torch.bfloat16):
                for layout in SPECS["grouped_mm"].case_layouts:
                    out.append(("grouped_mm", variant, shape, dtype, layout))
    if small:  # at most 2^20 elements in any operand: what the slow tools can cover quickly
        out = [c for c in out if max(c[2][0], 1) * max(c[2][-1], 1) <= 1 << 20
               and (len(c[2]) < 3 or c[2][0] * c[2][1] <= 1 << 20)]
    return out


def make(alg, shape, dtype, layout, device):
    spec = SPECS[alg]
    inputs = spec.make_inputs(shape, dtype, device, seed=7)
    if alg == "transpose" and layout == "t":  # each matrix column-major
        (a,) = spec.make_inputs((*shape[:-2], shape[-1], shape[-2]), dtype, device, seed=7)
        inputs = (a.transpose(-1, -2),)
    elif alg == "gemv" and layout == "col":
        inputs = (inputs[0].t().contiguous().t(), inputs[1])
    elif alg == "matmul" and layout == "col":
        inputs = (inputs[0], inputs[1].t().contiguous().t())
    elif alg in ("scaled_mm", "grouped_mm"):
        inputs = spec.arrange(inputs, layout)
    return inputs


def select(all_cases, algorithm=None, variant=None, shape=None):
    """The cases of one algorithm / variant / shape (each None: all)."""
    return [c for c in all_cases if (algorithm is None or c[0] == algorithm)
            and (variant is None or c[1] == variant) and (shape is None or tuple(c[2]) == tuple(shape))]


def run(backend: str, device: str = "cuda", verbose: bool = True, small: bool = False,
        algorithm=None, variant=None, shape=None) -> int:
    import cuda_ref
    import triton_impl

    mod = {"cuda": cuda_ref, "triton": triton_impl}[backend]
    failures = 0
    all_cases = select(cases(backend, small, device), algorithm, variant, shape)
    if not all_cases:
        print(f"no case matches {algorithm} {variant} {shape}", flush=True)
        return 1
    t0 = time.time()
    for alg, variant, shape, dtype, layout in all_cases:
        spec = SPECS[alg]
        name = dtype if isinstance(dtype, str) else dtype_name(dtype)  # ("tf32": float32 tensors)
        inputs = make(alg, shape, spec.torch_dtype(name), layout, device)
        out = spec.make_out(inputs)
        with spec.context(name):  # matmul float32: exact, no TF32
            getattr(mod, alg)(*inputs, variant=variant, out=out)
            if device == "cuda":
                torch.cuda.synchronize()  # a fault shows here, attributed to this case
            cmp = spec.compare(out, spec.reference(inputs), inputs)
        if not cmp.ok:
            failures += 1
            print(f"MISMATCH {backend} {alg} {variant} {shape} {dtype} {layout}: {cmp.detail}", flush=True)
    if algorithm in (None, "matmul") and shape is None and (backend == "triton" or device == "cuda"):
        failures += bias_cases(backend, device, variant)
        failures += batch_cases(backend, device, variant)
        if backend == "cuda" and variant in (None, "pipelined"):
            failures += a_rows_cases(device)
    if algorithm in (None, "grouped_mm") and shape is None and any(c[0] == "grouped_mm" for c in all_cases):
        failures += weight_grad_cases(mod, device)
    if verbose:
        print(f"{backend}: {len(all_cases)} cases, {failures} mismatches, {time.time() - t0:.1f} s", flush=True)
    return 1 if failures else 0


def weight_grad_cases(mod, device: str) -> int:
    """grouped_mm's b gradient (``weight_grad``: a product grouped over the rows, a group's last
    slice cut inside the ring) on GROUPED_SHAPES, each dtype, against float64. Returns the mismatches."""
    from bench.specs import MatmulSpec, max_rel_err
    failures = 0
    for G, T, N, K in WEIGHT_GRAD_SHAPES:
        for dtype in (torch.float16, torch.bfloat16):
            a, _, offs = make("grouped_mm", (G, T, N, K), dtype, "row", device)
            grad = MatmulSpec.make_inputs((T, N, 1), dtype, device, seed=8)[0]
            got = mod._grouped.weight_grad(a, grad, offs)
            if device == "cuda":
                torch.cuda.synchronize()
            ends = offs.tolist()
            ref = torch.stack([a[s:e].double().T @ grad[s:e].double() for s, e in zip([0, *ends[:-1]], ends)])
            err, tol = max_rel_err(got, ref), MatmulSpec.tolerance(dtype_name(dtype), T)
            if not err <= tol:
                failures += 1
                print(f"MISMATCH weight_grad {(G, T, N, K)} {dtype}: {err:.2e} > {tol:.2e}", flush=True)
    return failures


# batched matmul, a batch that does not fold (each product its own b): 3 x 400 x 520 x 136 (CUDA: tiles
# in pairs, a pair's second tile past its product's rows); 2 x 67 x 45 x 33, edges only (CUDA: c's
# rows off 16 bytes, stored from the accumulators)
BATCH_SHAPES = [(3, 400, 520, 136), (2, 67, 45, 33)]


def batch_cases(backend: str, device: str, variant=None) -> int:
    """Each batch variant of the backend (CUDA: wgmma_ws's walk, asked by name; Triton: its batch
    walks) on BATCH_SHAPES in float16, a and b row-major and b's matrices K-major, against float64;
    a refusal (a walk that is Hopper's elsewhere) is skipped. Returns the mismatches."""
    import cuda_ref
    import triton_impl
    from bench.specs import MatmulSpec
    from triton_impl import _matmul_batched
    mod = {"cuda": cuda_ref, "triton": triton_impl}[backend]
    walks = ("wgmma_ws",) if backend == "cuda" else tuple(v for v, w in _matmul_batched.BATCH.items() if w)
    failures = 0
    for name in walks:
        if variant is not None and name != variant:
            continue
        for count, M, N, K in BATCH_SHAPES:
            a = MatmulSpec.make_inputs((count * M, 1, K), torch.float16, device, seed=11)[0].reshape(count, M, K)
            b = MatmulSpec.make_inputs((count * K, 1, N), torch.float16, device, seed=12)[0].reshape(count, K, N)
            for b_in in (b, b.mT.contiguous().mT):
                try:
                    got = mod.matmul(a, b_in, variant=name)
                except (TypeError, ValueError):
                    continue
                if device == "cuda":
                    torch.cuda.synchronize()
                with MatmulSpec.context("float16"):
                    cmp = MatmulSpec.compare(got, torch.matmul(a.double(), b.double()), (a.reshape(-1, K),))
                if not cmp.ok:
                    failures += 1
                    print(f"MISMATCH {backend} batched matmul {name} {(count, M, N, K)} b strides {b_in.stride()}: "
                          f"{cmp.detail}", flush=True)
    return failures


def bias_cases(backend: str, device: str, variant=None) -> int:
    """The bias epilogue (the switch's addmm) through the backend's public plan cache: each variant
    that takes a float16 bias here (a refusal, as TMA's off Hopper or a CUDA kernel without an
    epilogue, is skipped), a row bias and a full (M, N) one, on MATMUL_SHAPES. Returns the mismatches."""
    import importlib
    mod = importlib.import_module({"triton": "triton_impl", "cuda": "cuda_ref"}[backend])
    plans, failures = mod.plans("matmul"), 0
    spec = SPECS["matmul"]
    for name in mod.variants("matmul"):
        if variant is not None and name != variant:
            continue
        for shape in MATMUL_SHAPES:
            a, b = make("matmul", shape, torch.float16, "row", device)
            for bias in (torch.randn(shape[1], device=device).half(), torch.randn(shape[:2], device=device).half()):
                try:
                    got = plans((a, b, bias), name, None)
                except (TypeError, ValueError):
                    continue  # the variant refuses these inputs here (dtype, architecture)
                if device == "cuda":
                    torch.cuda.synchronize()
                cmp = spec.compare(got, spec.reference((a, b)) + bias.double(), (a, b))
                if not cmp.ok:
                    failures += 1
                    print(f"MISMATCH {backend} matmul+bias {name} {shape} bias {tuple(bias.shape)}: {cmp.detail}",
                          flush=True)
    return failures


def a_rows_cases(device: str) -> int:
    """pipelined reading a's rows where they lie (matmul_pipelined_arow, _arow_wt on W.t()), forced
    by a pricing that always takes it, on MATMUL_SHAPES of float32 past few_rows' (edges, whole tiles,
    K in runs), both layouts of b. Returns the mismatches."""
    from cuda_ref import _matmul, _matmul_float32
    spec, failures, priced = SPECS["matmul"], 0, _matmul_float32.PIPELINED_AROW
    _matmul_float32.PIPELINED_AROW = {"share": 1.0, "launch_us": float("inf")}
    _matmul._PLANS.clear()
    try:
        for shape in MATMUL_SHAPES[2:-1]:
            for layout in ("row", "col"):
                a, b = make("matmul", shape, torch.float32, layout, device)
                out = spec.make_out((a, b))
                with spec.context("float32"):
                    _matmul.matmul(a, b, variant="pipelined", out=out)
                    if device == "cuda":
                        torch.cuda.synchronize()
                    cmp = spec.compare(out, spec.reference((a, b)), (a, b))
                if not cmp.ok:
                    failures += 1
                    print(f"MISMATCH cuda matmul pipelined a-rows {shape} {layout}: {cmp.detail}", flush=True)
    finally:
        _matmul_float32.PIPELINED_AROW = priced
        _matmul._PLANS.clear()
    return failures


def selftest() -> int:
    """Write one float past the end of a 1-element allocation: memcheck must report it (the
    script uses this to show the sanitizer is really watching)."""
    import cupy

    kernel = cupy.RawKernel(r'extern "C" __global__ void oob(float* p) { p[1 << 20] = 1.0f; }', "oob")
    buf = cupy.empty(1, dtype=cupy.float32)
    kernel((1,), (1,), (buf,))
    cupy.cuda.runtime.deviceSynchronize()
    return 0


def selftest_race() -> int:
    """Two warps write the same shared-memory words with no barrier between: racecheck must
    report it. The kernel's name starts with ``matmul_`` so that it passes the same kernel-name
    filter as the matmul kernels (sanitize_all.sh)."""
    import cupy

    src = r'''extern "C" __global__ void matmul_selftest_race(float* out) {
        __shared__ float s[32];
        s[threadIdx.x % 32] = (float)threadIdx.x;  // warps 0 and 1 write the same words
        out[threadIdx.x] = s[(threadIdx.x + 1) % 32];
    }'''
    kernel = cupy.RawKernel(src, "matmul_selftest_race")
    out = cupy.empty(64, dtype=cupy.float32)
    kernel((1,), (64,), (out,))
    cupy.cuda.runtime.deviceSynchronize()
    return 0


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--backend", choices=("cuda", "triton"), default="cuda")
    p.add_argument("--list", action="store_true", help="print the cases and exit (no GPU needed)")
    p.add_argument("--selftest", action="store_true", help="one deliberate out-of-bounds write")
    p.add_argument("--selftest-race", action="store_true", help="one deliberate shared-memory race")
    p.add_argument("--small", action="store_true", help="only cases of at most 2^20 elements per operand")
    p.add_argument("--algorithm", help="only this algorithm's cases")
    p.add_argument("--variant", help="only this variant's cases")
    p.add_argument("--shape", type=int, nargs="+", help="only cases of this shape, e.g. 4097 4095 129")
    args = p.parse_args(argv)
    if args.list:
        for case in select(cases(args.backend, args.small), args.algorithm, args.variant, args.shape):
            print(*case)
        return 0
    if args.selftest:
        return selftest()
    if args.selftest_race:
        return selftest_race()
    if not torch.cuda.is_available():
        print("sanitize_driver: no CUDA GPU", file=sys.stderr)
        return 2
    return run(args.backend, small=args.small, algorithm=args.algorithm, variant=args.variant, shape=args.shape)


if __name__ == "__main__":
    sys.exit(main())
