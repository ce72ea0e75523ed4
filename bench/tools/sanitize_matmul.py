"""Run every CUDA matmul variant once in float32 on two shapes, for compute-sanitizer.

    PYTHONPATH=. compute-sanitizer --tool memcheck python3 bench/tools/sanitize_matmul.py

bench/sanitize.sh runs it under memcheck and racecheck. Shapes: 67x45x33 (every tile an edge
tile) and 4097x4095x129 (full tiles and edges; K % 4 != 0, so the scalar load path), each with
row-major inputs and again with a 16-byte aligned row-major pair (256x260x132: the float4 paths)
and an offset / column-major pair (the strided scalar path). Exits 1 if a result is wrong.
"""

import importlib
import sys

import torch

import cuda_ref
from bench.specs import MatmulSpec

cuda_matmul = importlib.import_module("cuda_ref.matmul")


def variants_of_inputs(a, b):
    yield "row-major", a, b
    big = torch.full((a.shape[0] + 1, a.shape[1] + 1), float("nan"), device=a.device)
    big[1:, 1:] = a  # an offset view: unaligned base and row stride K + 1
    yield "offset a, column-major b", big[1:, 1:], b.t().contiguous().t()


def main() -> int:
    torch.backends.cuda.matmul.allow_tf32 = False
    failures = 0
    cases = [(67, 45, 33), (4097, 4095, 129), (256, 260, 132)]
    for shape in cases:
        a, b = MatmulSpec.make_inputs(shape, torch.float32, "cuda", seed=0)
        ref = MatmulSpec.reference((a, b))
        for label, x, y in variants_of_inputs(a, b):
            for variant in cuda_ref.variants("matmul"):
                out = cuda_ref.matmul(x, y, variant=variant)
                torch.cuda.synchronize()
                cmp = MatmulSpec.compare(out, ref, (a, b))
                cfg = (cuda_matmul.config_for(variant, shape[0], shape[1],
                                              torch.cuda.get_device_properties(0).multi_processor_count).name
                       if variant in cuda_matmul.FLOAT32_ONLY else variant)
                print(f"{'x'.join(map(str, shape)):>14} {label:26} {variant:16} {cfg:60} "
                      f"{'ok' if cmp.ok else 'FAIL'} {cmp.max_rel_err:.1e}", flush=True)
                failures += not cmp.ok
    print(f"{failures} wrong result(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
