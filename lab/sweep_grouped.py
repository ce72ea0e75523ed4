"""Grouped (MoE) matmul: which tile suits which tokens per group (decision 022).

Times triton_impl.grouped_mm under each config against F.grouped_mm on the moe set's shapes with
the harness's split, both layouts, L2 flushed (do_bench), and prints the ratios.
"""
import torch
import torch.nn.functional as F
import triton

import triton_impl
from bench.specs import GroupedSpec
from kernel_common.plans import PlanCache
from triton_impl import _grouped

SHAPES = ((128, 64, 1536, 2048), (128, 512, 1536, 2048), (32, 256, 4096, 7168), (8, 512, 28672, 4096),
          (8, 512, 4096, 14336), (128, 32768, 2048, 768), (32, 4096, 7168, 2048), (8, 8192, 4096, 14336))
CONFIGS = [(bm, bn, bk, w, s) for bm, bn, bk, w, s in (
    (128, 128, 64, 8, 4), (64, 128, 64, 4, 4), (64, 128, 128, 4, 4), (64, 256, 64, 4, 4),
    (128, 256, 64, 8, 3), (64, 64, 128, 4, 6), (128, 128, 128, 8, 3))]


def main():
    for shape in SHAPES:
        a, b, offs = GroupedSpec.make_inputs(shape, torch.bfloat16, torch.device("cuda"), 0)
        for layout in GroupedSpec.case_layouts:
            a, bl, offs = GroupedSpec.arrange((a, b, offs), layout)
            t_ref = triton.testing.do_bench(lambda: F.grouped_mm(a, bl, offs=offs))
            ref = F.grouped_mm(a, bl, offs=offs)
            line = []
            for bm, bn, bk, w, s in CONFIGS:
                cfg = triton.Config({"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "GROUP_M": 8}, num_warps=w,
                                    num_stages=s)
                _grouped.CONFIGS = {"few": cfg, "many": cfg}
                _grouped._PLANS = PlanCache(_grouped._plan)
                try:
                    out = triton_impl.grouped_mm(a, bl, offs)
                    t = triton.testing.do_bench(lambda: triton_impl.grouped_mm(a, bl, offs))
                except Exception as e:  # noqa: BLE001 (a tile that does not fit)
                    line.append(f"{bm}x{bn}x{bk}w{w}s{s} {type(e).__name__}")
                    continue
                bad = "" if torch.allclose(out[:int(offs[-1])].float(), ref[:int(offs[-1])].float(), rtol=2e-2,
                                           atol=2e-2) else " WRONG"
                line.append(f"{bm}x{bn}x{bk}w{w}s{s} {t_ref / t:.2f}{bad}")
            print("x".join(map(str, shape)), layout, f"torch {t_ref:.4f} ms |", " | ".join(line), flush=True)


if __name__ == "__main__":
    main()
