"""CUDA GEMV ``warp_per_row`` or ``split_k``: rows a warp or block (``ROWS``), 16-byte vectors a
lane loads before its first FMA (``DEPTH``) and the launch bound's blocks per SM (``MIN_BLOCKS``;
0: none), on the decode set's large matrices (``split_k``: its few-row and large float32 ones);
share of a device copy, x torch.mv and Triton's default beside, L2 flushed, each result checked.
Builds that spill are left out. (The bound is what lets ptxas keep the loads ahead of the FMAs.)

Usage (GPU): python lab/sweep_gemv_depth.py [--variant split_k] [--rounds N]
"""

from __future__ import annotations

import sys

import torch

import cuda_ref
import triton_impl
from bench import nvrtc
from bench.ceilings import copy_bandwidth_gbs
from bench.specs import GemvSpec
from bench.timing import time_gpu
from cuda_ref import _gemv as g
from cuda_ref import loader

SHAPES = {"warp_per_row": {torch.bfloat16: ((10240, 8192), (4096, 14336), (8192, 8192), (4096, 4096)),
                            torch.float32: ((4096, 4096), (6144, 4096), (8192, 8192))},
          "split_k": {torch.bfloat16: ((64, 2097152), (128, 1048576)),
                      torch.float32: ((64, 2097152), (128, 1048576), (12345, 6789), (16384, 16384))}}
BUILDS = {"warp_per_row": [(r, d, m) for r in (1, 2) for d in (1, 2, 4, 8) for m in (0, 2, 4, 8)],
          "split_k": [(2, d, m) for d in (1, 2, 4, 8) for m in (0, 2, 4)]}


def _instance(variant: str, dtype, rows: int, depth: int, min_blocks: int) -> str:
    lanes = "32, " if variant == "warp_per_row" else ""
    return f"gemv_{variant}<{loader.CTYPE[dtype]}, {lanes}{rows}, {depth}, {min_blocks}>"


def main() -> None:
    rounds = int(sys.argv[sys.argv.index("--rounds") + 1]) if "--rounds" in sys.argv else 2
    variant = sys.argv[sys.argv.index("--variant") + 1] if "--variant" in sys.argv else "warp_per_row"
    shape_set, build_set = SHAPES[variant], BUILDS[variant]
    names = {_instance(variant, d, *b) for d in shape_set for b in build_set}
    built = nvrtc.compile_file(g.FILE, tuple(sorted(names)))
    spills = {n for n, low in built.lowered.items() if built.kernels[low].spill_stores}
    builds = {d: [b for b in build_set if _instance(variant, d, *b) not in spills] for d in shape_set}
    g.NAME_EXPRESSIONS = tuple(sorted(set(g.NAME_EXPRESSIONS) | names))
    default = dict(g.ROWS), dict(g.DEPTH), dict(g.MIN_BLOCKS)
    copy = copy_bandwidth_gbs()
    print(torch.cuda.get_device_name(), variant, f"copy {copy:.0f} GB/s; default rows/depth/min_blocks "
          f"{g.ROWS[variant]}/{g.DEPTH[variant]}/{g.MIN_BLOCKS[variant]}")
    for dtype, shapes in shape_set.items():
        for M, K in shapes:
            a = torch.randn(M, K, device="cuda").to(dtype)
            x = torch.randn(K, device="cuda").to(dtype)
            ref = GemvSpec.reference((a, x))
            share = lambda ms: (M * K + K + M) * a.element_size() / (ms * 1e-3) / 1e9 / copy  # noqa: E731
            res: dict[str, list[float]] = {}
            for _ in range(rounds):
                res.setdefault("torch.mv", []).append(time_gpu(lambda: torch.mv(a, x)).median_ms)
                res.setdefault("triton", []).append(time_gpu(lambda: triton_impl.gemv(a, x)).median_ms)
                for rows, depth, mb in builds[dtype]:
                    g.ROWS[variant], g.DEPTH[variant], g.MIN_BLOCKS[variant] = rows, depth, mb
                    g._PLANS.clear()
                    cmp = GemvSpec.compare(cuda_ref.gemv(a, x, variant=variant), ref, (a, x))
                    assert cmp.ok, (rows, depth, mb, cmp)
                    t = time_gpu(lambda: cuda_ref.gemv(a, x, variant=variant)).median_ms
                    res.setdefault(f"{rows}/{depth}/{mb}", []).append(t)
            t_mv = min(res["torch.mv"])
            cells = " ".join(f"{k}:{share(min(v)):.3f}({t_mv / min(v):.2f}x)" for k, v in res.items())
            print(f"{str(dtype):15} {M}x{K}: copy share (x torch.mv), best of {rounds}: {cells}", flush=True)
    for table, saved in zip((g.ROWS, g.DEPTH, g.MIN_BLOCKS), default):
        table.update(saved)
    g._PLANS.clear()


if __name__ == "__main__":
    main()
