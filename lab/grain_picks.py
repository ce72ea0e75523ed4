"""Does Triton's fitted config pick change when rows and K are taken up to their tiles' grain
(``kernel_common.plans.grain``, decision 043)? Draws shapes (M log-uniform 65-16384, N and K from
model widths), picks at M, K and at grain(M), grain(K), and prints the shapes whose pick changed
with the two picks' fitted times at M, K (no GPU needed).

Usage (CPU): python lab/grain_picks.py [--count 3000] [--seed 1]
"""

from __future__ import annotations

import argparse
import math
import random

from kernel_common.plans import grain
from triton_impl import _matmul_configs as mc

WIDTHS_N = [896, 1024, 1408, 2048, 3584, 4096, 5120, 6144, 7168, 8192, 11008, 14336, 18944, 28672, 32000, 50257,
            128256, 151936]
WIDTHS_K = [896, 1024, 1408, 1536, 2048, 3584, 4096, 5120, 7168, 8192, 14336, 18944]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--count", type=int, default=3000)
    p.add_argument("--seed", type=int, default=1)
    args = p.parse_args()
    rng = random.Random(args.seed)
    exact = mc._fitted_config.__wrapped__  # (the model itself, at the extents given)
    changed = []
    for _ in range(args.count):
        M = int(math.exp(rng.uniform(math.log(65), math.log(16384))))
        N, K = rng.choice(WIDTHS_N), rng.choice(WIDTHS_K)
        at, grained = exact(M, N, K, 132), exact(grain(M), N, grain(K), 132)
        if (at.kwargs, at.num_warps, at.num_stages) != (grained.kwargs, grained.num_warps, grained.num_stages):
            ratio = mc._fitted_seconds(grained, M, N, K, 132) / mc._fitted_seconds(at, M, N, K, 132)
            changed.append((ratio, M, N, K))
    print(f"{len(changed)} of {args.count} picks changed (seed {args.seed}); fitted time of the grain's pick "
          f"over the exact pick's, at the exact shape:")
    for ratio, M, N, K in sorted(changed, reverse=True):
        print(f"  {M}x{N}x{K}: {ratio:.4f}")


if __name__ == "__main__":
    main()
