"""GEMV with short rows (K 256-2048: LM heads of narrow models, decode projections): each CUDA and Triton
variant against torch.mv, flushed in turns and back to back. Prints a line a shape; JSON with --json."""
import argparse, json
import torch
import cuda_ref, triton_impl
from bench.timing import time_interleaved, time_loop

SHAPES = [(151936, 896), (151936, 1536), (50257, 768), (32000, 896), (128256, 2048), (8192, 896), (32768, 512),
          (262144, 256), (65536, 1024), (14336, 896), (4864, 896), (100003, 1000)]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--json")
    args = p.parse_args()
    rows = []
    for dt in (torch.bfloat16, torch.float32):
        for M, K in SHAPES:
            a = torch.randn(M, K, device="cuda", dtype=dt)
            x = torch.randn(K, device="cuda", dtype=dt)
            ref = a.double() @ x.double()
            fns, names = [lambda: torch.mv(a, x)], ["torch"]
            for mod, tag in ((cuda_ref, "cuda"), (triton_impl, "triton")):
                names.append(f"{tag}:default({mod.describe('gemv', a, x).split()[0]})")
                fns.append(lambda mod=mod: mod.gemv(a, x))
                for v in ("warp_per_row", "rows_per_warp", "split_k"):
                    if v in mod.variants("gemv"):
                        y = mod.gemv(a, x, variant=v)
                        err = ((y.double() - ref).abs().max() / ref.abs().max()).item()
                        assert err < 2e-2, (M, K, v, err)
                        names.append(f"{tag}:{v}")
                        fns.append(lambda mod=mod, v=v: mod.gemv(a, x, variant=v))
            times = time_interleaved(fns, warmup_ms=5, rep_ms=25)
            loops = [time_loop(f, calls=100, reps=3) for f in fns]
            t0, l0 = times[0].median_ms, loops[0]
            rows.append({"shape": [M, K], "dtype": str(dt), "ms": {n: t.median_ms for n, t in zip(names, times)},
                         "loop_ms": dict(zip(names, loops))})
            print(f"{M}x{K} {str(dt)[6:]}: torch {t0 * 1e3:.1f} us ({M * K * a.element_size() / t0 / 1e6:.0f} GB/s) "
                  + " ".join(f"{n} {t0 / t.median_ms:.2f}/{l0 / l:.2f}" for n, t, l in zip(names[1:], times[1:], loops[1:])),
                  flush=True)
    if args.json:
        json.dump({"device": torch.cuda.get_device_name(), "rows": rows}, open(args.json, "w"), indent=1)


if __name__ == "__main__":
    main()
