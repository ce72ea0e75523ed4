"""Issue 16's unaligned transposes against a device copy of their own bytes: both backends' defaults and
``dst.copy_(src)`` of the same size timed in turns (flushed medians of 3 rounds), beside the 1 GiB copy
ceiling of the same run. A transpose of tens of MB cannot pass a copy of its own size, which itself stays
under the 1 GiB copy's rate (bench/results/logs/h200-2026-11-27-s32-transpose-vs-copy.txt).
Usage: PYTHONPATH=. python lab/transpose_vs_copy.py"""
import statistics

import torch

import cuda_ref
import triton_impl
from bench.ceilings import copy_bandwidth_gbs
from bench.timing import time_interleaved

SHAPES = ((4097, 4095), (12345, 6789), (64, 1024, 1000))


def main() -> None:
    print(torch.cuda.get_device_name(), flush=True)
    ceiling = copy_bandwidth_gbs()
    print(f"1 GiB copy: {ceiling:.0f} GB/s", flush=True)
    for shape in SHAPES:
        for dt in (torch.float32, torch.float16):
            x = torch.randn(*shape, device="cuda").to(dt)
            src, out_shape = x.flatten().clone(), (*shape[:-2], shape[-1], shape[-2])
            dst = torch.empty_like(src)
            outs = [torch.empty(out_shape, device="cuda", dtype=dt) for _ in range(2)]
            fns = [lambda: dst.copy_(src), lambda: cuda_ref.transpose(x, out=outs[0]),
                   lambda: triton_impl.transpose(x, out=outs[1])]
            rounds = [[t.median_ms for t in time_interleaved(fns)] for _ in range(3)]
            med = [statistics.median(r[j] for r in rounds) for j in range(3)]
            gbs = [2 * x.numel() * x.element_size() / (m * 1e-3) / 1e9 for m in med]
            print(f"{'x'.join(map(str, shape))} {str(dt)[6:]}: same-size copy {med[0] * 1e3:.1f} us, "
                  f"{gbs[0] / ceiling:.3f} of the ceiling; CUDA {gbs[1] / ceiling:.3f} ({gbs[1] / gbs[0]:.3f} of "
                  f"the copy), Triton {gbs[2] / ceiling:.3f} ({gbs[2] / gbs[0]:.3f} of the copy)", flush=True)


if __name__ == "__main__":
    main()
