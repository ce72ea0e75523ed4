"""few_rows (K-major W) at 1-4 rows: each (MR, NC) tile against torch and the default, flushed and
back to back, bf16. Prints one line a shape; JSON with --json."""
import argparse, json
import torch
import cuda_ref
from cuda_ref import loader
from cuda_ref._matmul_few_rows import FEW_ROWS_FILE, FEW_ROWS_KERNEL, FEW_ROWS_THREADS
from cuda_ref._matmul_wgmma import TC_ARGS, BIAS_ARGS
from kernel_common import cdiv
from bench.timing import time_interleaved, time_loop

TILES = {1: [(1, 1), (1, 2), (1, 8)], 2: [(2, 2), (2, 4), (2, 8)], 3: [(4, 2), (4, 4), (4, 8)],
         4: [(4, 2), (4, 4), (4, 8)]}
SHAPES = [(1, n, k) for n in (4096, 5120, 6144, 8192, 9216, 11008, 12288, 14336, 18944, 28672, 32000, 151936)
          for k in (896, 2048, 4096)] + \
         [(m, n, k) for m in (2, 4) for n in (8192, 12288, 16384, 32000, 151936) for k in (896, 4096)] + \
         [(3, 28672, 4096), (3, 50257, 768)]
NAMES = tuple(sorted({FEW_ROWS_KERNEL.format(T=t, MR=mr, NC=nc) for t in ("bf16_t", "float") for ts in TILES.values()
                      for mr, nc in ts}))


def tile_fn(a, b, c, mr, nc):
    M, K = a.shape
    N = b.shape[1]
    name = FEW_ROWS_KERNEL.format(T=loader.CTYPE[a.dtype], MR=mr, NC=nc)
    launch = loader.Launch(name, (cdiv(cdiv(N, nc) * 32, FEW_ROWS_THREADS),), (FEW_ROWS_THREADS,), TC_ARGS + BIAS_ARGS)
    k = loader.kernel(FEW_ROWS_FILE, NAMES, launch, 0)
    return lambda: k(a.data_ptr(), b.data_ptr(), c.data_ptr(), M, N, K, a.stride(0), b.stride(1), 0, 0, 0)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--json")
    args = p.parse_args()
    rows = []
    for M, N, K, dt in [s + (torch.bfloat16,) for s in SHAPES]:  # (float32 keeps its tiles)
        a = torch.randn(M, K, device="cuda", dtype=dt)
        b = torch.randn(N, K, device="cuda", dtype=dt).t()
        ref = torch.mm(a.double(), b.double())
        fns, names = [lambda: torch.mm(a, b), lambda: cuda_ref.matmul(a, b)], ["torch", "default " + cuda_ref.describe("matmul", a, b)]
        for mr, nc in TILES[M]:
            c = torch.full((M, N), float("nan"), device="cuda", dtype=torch.bfloat16)
            f = tile_fn(a, b, c, mr, nc)
            f(); torch.cuda.synchronize()
            err = ((c.double() - ref).abs().max() / ref.abs().max()).item()
            assert err < 1e-2, (M, N, K, mr, nc, err)
            fns.append(f); names.append(f"{mr}x{nc}")
        times = time_interleaved(fns, warmup_ms=5, rep_ms=25)
        loops = [time_loop(f, calls=100, reps=3) for f in fns]
        t0 = times[0].median_ms
        gbs = N * K * 2 / t0 / 1e6
        rows.append({"shape": [M, N, K], "dtype": str(dt), "ms": {n: t.median_ms for n, t in zip(names, times)},
                     "loop_ms": dict(zip(names, loops))})
        print(f"{M}x{N}x{K} {str(dt)[6:]}: torch {t0*1e3:.1f} us ({gbs:.0f} GB/s) " + " ".join(
            f"{n.split()[0]} {t0 / t.median_ms:.2f}/{loops[0] / l:.2f}" for n, t, l in zip(names[1:], times[1:], loops[1:]))
            + " | " + names[1], flush=True)
    if args.json:
        json.dump({"device": torch.cuda.get_device_name(), "rows": rows}, open(args.json, "w"), indent=1)


if __name__ == "__main__":
    main()
