"""Sweep smem_tiled_vec's (TILE_R, TILE_C, THREADS) on a GPU; the launcher's table quotes it.

    PYTHONPATH=. python3 bench/tools/sweep_transpose_cuda.py
"""

import cupy
import numpy as np
import torch

from bench.ceilings import copy_bandwidth_gbs
from bench.timing import time_gpu
from cuda_ref import _module

CONFIGS = [(tr, tc, th) for tr in (32, 64, 128) for tc in (32, 64, 128) for th in (128, 256, 512)]
names = {}
for size, ctype in _module.UINT_BY_SIZE.items():
    for tr, tc, th in CONFIGS:
        vec = 16 // size
        if (tc // vec) > th or (tr // vec) > th or (th // (tc // vec)) > tr or (th // (tr // vec)) > tc:
            continue
        if tr * (tc + 2) * size > 48 * 1024:
            continue
        names[(size, tr, tc, th)] = f"transpose_smem_tiled_vec<{ctype}, {tr}, {tc}, {th}>"
mod = cupy.RawModule(code=_module.source("transpose.cu"), options=_module.OPTIONS,
                     name_expressions=list(names.values()))
copy = copy_bandwidth_gbs()
print(f"{torch.cuda.get_device_name(0)}: copy {copy:.0f} GB/s")
for dtype, (R, C) in [(torch.float32, (16384, 16384)), (torch.float16, (16384, 16384)),
                      (torch.float64, (8192, 16384))]:
    a = torch.rand(R, C, device="cuda").to(dtype)
    out = torch.empty(C, R, device="cuda", dtype=dtype)
    size = a.element_size()
    res = []
    for (sz, tr, tc, th), name in names.items():
        if sz != size:
            continue
        fn = mod.get_function(name)
        grid = (((R + tr - 1) // tr) * ((C + tc - 1) // tc),)
        args = (_module.ptr(a), _module.ptr(out), np.int64(R), np.int64(C), np.int64(C), np.int64(1),
                np.int32(1), np.int32(1))
        run = lambda: _module.launch(fn, grid, (th,), args, device=0)
        out.zero_()
        run()
        assert torch.equal(out, a.t()), name
        t = time_gpu(run)
        res.append((2 * a.numel() * size / t.median_ms / 1e6 / copy, tr, tc, th, fn.num_regs))
    res.sort(reverse=True)
    print(f"{str(dtype):14} {R}x{C}: " + "  ".join(f"{tr}x{tc}/{th}t/{rg}r:{f:.3f}" for f, tr, tc, th, rg in res[:10]))
    print("   worst: " + "  ".join(f"{tr}x{tc}/{th}t/{rg}r:{f:.3f}" for f, tr, tc, th, rg in res[-4:]))
