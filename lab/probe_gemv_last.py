"""Why split_k_last runs slower than split_k's two launches on long pieces: the kernel with its
acq_rel count, with a release-only count, and with no count (wrong sums: timing only)."""
import torch
import triton
import triton.language as tl
import triton_impl
from bench.timing import time_interleaved
from kernel_common import hand_over
from triton_impl import _gemv as g
from triton_impl._launch import TritonLaunch


@triton.jit
def _last(a_ptr, x_ptr, y_ptr, flags_ptr, slots_ptr, M, K, PIECE, SPLITS, stride_am, stride_ak, stride_ym,
          BLOCK_M: tl.constexpr, BLOCK_K: tl.constexpr, ROW_VEC: tl.constexpr, K_VEC: tl.constexpr, SEM: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_k = tl.program_id(1)
    offs_m, mask_m, y = g._piece_sums(a_ptr, x_ptr, M, K, PIECE, stride_am, stride_ak, pid_m, pid_k,
                                      BLOCK_M, BLOCK_K, ROW_VEC, K_VEC)
    block = slots_ptr + pid_m.to(tl.int64) * (SPLITS * BLOCK_M) + tl.arange(0, BLOCK_M)
    tl.store(block + pid_k * BLOCK_M, y)
    if SEM == 0:
        return
    tl.debug_barrier()
    if SEM == 1:
        n = tl.atomic_add(flags_ptr + pid_m, 1, sem="acq_rel")
    else:
        n = tl.atomic_add(flags_ptr + pid_m, 1, sem="release")
    if n == SPLITS - 1:
        total = tl.zeros((BLOCK_M,), dtype=tl.float32)
        for s in range(0, SPLITS):
            total += tl.load(block + s * BLOCK_M, cache_modifier=".cg")
        tl.store(y_ptr + offs_m * stride_ym, total.to(y_ptr.dtype.element_ty), mask=mask_m)
        tl.store(flags_ptr + pid_m, 0)


for M, K, dt in [(927, 53485, torch.float32), (927, 53488, torch.float32), (768, 79167, torch.float16),
                 (320, 63530, torch.float16), (1024, 2304, torch.float16), (1536, 1536, torch.float32),
                 (12, 43585, torch.bfloat16), (85, 13723, torch.bfloat16)]:
    a = torch.randn(M, K, device="cuda").to(dt)
    x = torch.randn(K, device="cuda").to(dt)
    out = torch.empty(M, device="cuda", dtype=dt)
    (main,) = g.plan_launches("split_k_last", M, K, a.element_size(), 132, K)
    piece, splits = g.split("split_k_last", M, K, a.element_size(), 132)
    fns, names = [], []
    for sem in (1, 2, 0):
        launch = TritonLaunch(_last, main.grid, dict(main.meta, SEM=sem), main.options)
        flags, slots = hand_over(a.device, main.grid[0], main.grid[0] * splits * main.meta["BLOCK_M"])
        fns.append(lambda launch=launch, flags=flags, slots=slots: launch(a, x, out, flags, slots, M, K, piece, splits, K, 1, 1))
        names.append(f"sem{sem}")
    for v in ("split_k", "split_k_last", "blocked_row"):
        fns.append(lambda v=v: triton_impl.gemv(a, x, variant=v, out=out))
        names.append(v)
    fns.append(lambda: torch.mv(a, x, out=out))
    names.append("torch")
    t = [r.median_ms * 1e3 for r in time_interleaved(fns, warmup_ms=5, rep_ms=20)]
    print(f"{M}x{K} {dt} splits {splits} grid {main.grid}: " + ", ".join(f"{n} {v:.1f}" for n, v in zip(names, t)), flush=True)
