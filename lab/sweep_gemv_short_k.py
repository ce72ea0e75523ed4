"""gemv_warp_per_row's (LANES, ROWS, DEPTH, MIN_BLOCKS) on short rows (K 256-2048: LM heads of narrow
models), each instance launched directly, against torch.mv and the default, flushed in turns. For
the 16-bit case lab/probe_gemv_short_k.py left open (bf16 151936 x 896: every variant <= 0.70x):
several rows a lane group, as few_rows' 8 columns a warp did for matmul (decision 016).

    PYTHONPATH=. python lab/sweep_gemv_short_k.py [--shapes M K ...] [--configs L R D B ...] [--json F]
"""
import argparse, json
import torch
import cuda_ref
from cuda_ref import loader
from cuda_ref._gemv import FILE
from kernel_common import cdiv
from bench.timing import time_interleaved

TEMPLATE = "gemv_warp_per_row<{T}, {LANES}, {ROWS}, {DEPTH}, {MIN_BLOCKS}>"
CONFIGS = [(32, 1, 4, 2), (32, 2, 2, 2), (32, 4, 2, 2), (32, 8, 1, 2), (16, 4, 2, 2), (16, 8, 1, 2), (8, 8, 1, 2)]
SHAPES = [(151936, 896), (151936, 1536), (50257, 768), (32000, 896), (128256, 2048), (8192, 896), (32768, 512),
          (262144, 256), (65536, 1024), (14336, 896), (4864, 896), (100003, 1000)]
DTYPES = (torch.bfloat16, torch.float32)


def names(configs) -> tuple:
    """The instances the sweep compiles: the configs' in both dtypes."""
    return tuple(TEMPLATE.format(T=loader.CTYPE[d], LANES=l, ROWS=r, DEPTH=dp, MIN_BLOCKS=mb)
                 for d in DTYPES for l, r, dp, mb in configs)


NAMES = names(CONFIGS)


def instance_fn(a, x, y, cfg):
    lanes, rows, depth, min_blocks = cfg
    M, K = a.shape
    name = TEMPLATE.format(T=loader.CTYPE[a.dtype], LANES=lanes, ROWS=rows, DEPTH=depth, MIN_BLOCKS=min_blocks)
    launch = loader.Launch(name, (cdiv(M, 256 // lanes * rows),), (256,), "QQQqqqqi")
    k = loader.kernel(FILE, NAMES, launch, a.device.index)
    aligned = int(K * a.element_size() % 16 == 0)  # (the kernel's 16-byte path)
    return lambda: k(a.data_ptr(), x.data_ptr(), y.data_ptr(), M, K, a.stride(0), a.stride(1), aligned)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--json")
    p.add_argument("--shapes", type=int, nargs="+", help="M K pairs")
    p.add_argument("--configs", type=int, nargs="+", help="LANES ROWS DEPTH MIN_BLOCKS quadruples")
    args = p.parse_args()
    shapes = list(zip(args.shapes[::2], args.shapes[1::2])) if args.shapes else SHAPES
    configs = [tuple(args.configs[i:i + 4]) for i in range(0, len(args.configs), 4)] if args.configs else CONFIGS
    global NAMES
    NAMES = names(configs)  # (a MIN_BLOCKS of 4 caps registers at 64: bf16 16/4/2 keeps its loads batched, SASS)
    rows = []
    for dt in DTYPES:
        for M, K in shapes:
            a = torch.randn(M, K, device="cuda", dtype=dt)
            x = torch.randn(K, device="cuda", dtype=dt)
            ref = a.double() @ x.double()
            src = torch.randn(M * K, device="cuda", dtype=dt)
            dst = torch.empty_like(src)
            fns = [lambda: torch.mv(a, x), lambda: cuda_ref.gemv(a, x), lambda: cuda_ref.gemv(a, x, variant="warp_per_row"),
                   lambda: dst.copy_(src)]
            labels = ["torch", "default " + cuda_ref.describe("gemv", a, x), "warp_per_row", "copy"]
            for cfg in configs:
                y = torch.full((M,), float("nan"), device="cuda", dtype=dt)
                f = instance_fn(a, x, y, cfg)
                f()
                torch.cuda.synchronize()
                err = ((y.double() - ref).abs().max() / ref.abs().max()).item()
                assert err < 2e-2, (M, K, cfg, err)
                fns.append(f)
                labels.append("x".join(map(str, cfg)))
            t = time_interleaved(fns, warmup_ms=5, rep_ms=25)
            t0, copy = t[0].median_ms, t[3].median_ms
            rows.append({"shape": [M, K], "dtype": str(dt), "ms": {n: x.median_ms for n, x in zip(labels, t)}})
            # x torch, and (in brackets) the share of the same-size copy's bandwidth (read + write)
            print(f"{M}x{K} {str(dt)[6:]}: torch {t0 * 1e3:.1f} us " +
                  " ".join(f"{n.split()[0]} {t0 / x.median_ms:.2f} ({copy / 2 / x.median_ms:.2f})"
                           for n, x in zip(labels[1:], t[1:]) if n != "copy") + " | " + labels[1], flush=True)
    if args.json:
        json.dump({"device": torch.cuda.get_device_name(), "configs": configs, "rows": rows}, open(args.json, "w"), indent=1)


if __name__ == "__main__":
    main()
