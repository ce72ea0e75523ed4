"""FP8 with scales in Gluon: ``ws_fp8``, each consumer warpgroup a partition of its own.

``tma_fp8`` promotes each 128-deep slice's product into a float32 tile (torch._scaled_mm's default,
and block scales' only way); the slice's MMA is waited for before the add, and its two warpgroups
wait at the same time, so the tensor cores idle during the adds: 949 TFLOP/s against 1279 chained
at 8192^3 (H200, docs/decisions/023-fp8-scaled-matmul.md). Here each warpgroup waits apart
(``gl.warp_specialize``), as CUDA's ``wgmma_fp8`` does (decision 049: promoted, 2 consumers on
128 x 128 tiles 0.70-0.75x torch, 3 on 192 x 128 0.75-0.82x); the same design in both backends,
side by side:

- a producer warp brings, one 128-deep slice a stage, CONSUMERS 64-row pieces of a's tile and a
  ``BN``-row tile of b's transpose (K-major, as FP8's wgmma reads b) into a ring guarded by
  mbarriers;
- each of CONSUMERS (2 or 3) warpgroups multiplies its 64 rows: a slice's MMA into a fresh float32
  product, waited for, the stage handed back (its empty barrier counts every consumer), the product
  added to the tile (block scales: times its row and column scales); chained (``use_fast_accum``),
  the slices sum in the MMA's accumulator;
- each consumer scales (per tensor, row-wise) and stores its rows by masked stores.

Tiles persistent, in grouped order; TMA clips reads past the edges to zero (edge tiles, a K tail).
The ring's position comes from the tile's number, not from a count carried through the loops
(triton 3.6 dropped such a count in a partition: ``_matmul_fma._consumer``). Gluon does not run
under Triton's interpreter; ``AVAILABLE`` says whether this triton has the calls used here.
"""

from __future__ import annotations

import torch

from kernel_common import balanced_grid, cdiv, fp8, tma_rows
from kernel_common.plans import Plan
from kernel_common.util import padded
from triton_impl._launch import DescriptorSpec, TritonLaunch
from triton_impl._matmul_fp32 import fma_ws_runs

try:
    from triton.experimental import gluon
    from triton.experimental.gluon import language as gl
    from triton.experimental.gluon.language.nvidia.hopper import mbarrier, warpgroup_mma, warpgroup_mma_wait
    from triton_impl import _matmul_fma as fma
    AVAILABLE = fma.AVAILABLE
except ImportError:  # triton without gluon
    AVAILABLE = False

WG_M, BK = 64, 128  # rows of a consumer warpgroup's piece, and a stage's k: one block scale's slice
STAGES = 4  # the ring's: 4 x (3 x 8 + 16) KiB at most (three consumers, BN = 128)
# registers a thread (setmaxnreg), by consumers: each consumer's hold its float32 tile and a slice's
# product (BN / 2 each at m64) with room, the producer warp's group 24, within the SM's 65536; the
# launch asks for 65536 / its threads (warps: the consumers' and the producer's group)
REGS = {2: (232, 24, 168), 3: (160, 24, 128)}  # consumers: (consumer, producer, launch)
_GL = {torch.float8_e4m3fn: "float8e4nv", torch.float8_e5m2: "float8e5"}  # (gl's name of each FP8 dtype)


def acc_layout(bn: int):
    """A consumer warpgroup's 64 x bn float32 tile as wgmma m64 x bn x 32 (FP8) holds it."""
    return gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[4, 1], instr_shape=[16, bn, 32])


def shared_layout(block, dtype: str):
    """The NVMMA (TMA, wgmma) layout of an FP8 tile of shape ``block`` (``dtype``: gl's name)."""
    return gl.NVMMASharedLayout.get_default_for(list(block), getattr(gl, dtype))


if AVAILABLE:
    @gluon.jit
    def _producer(a_desc, b_desc, a_s, b_s, ready, empty, M, N, K, programs, CONSUMERS: gl.constexpr,
                  BN: gl.constexpr, STAGES: gl.constexpr, GROUP_M: gl.constexpr):
        """One warp: each of the program's tiles' slices into the ring (slice i into stage i %
        STAGES: a's CONSUMERS pieces at a_s[s * CONSUMERS + c], b's tile at b_s[s]) once every
        consumer has handed the stage back."""
        WG_M: gl.constexpr = a_desc.block_type.shape[0]
        BK: gl.constexpr = a_desc.block_type.shape[1]
        BM: gl.constexpr = CONSUMERS * WG_M
        pid = gl.program_id(0)
        KT = gl.cdiv(K, BK)
        tiles = gl.cdiv(M, BM) * gl.cdiv(N, BN)
        nbytes: gl.constexpr = CONSUMERS * a_desc.block_type.nbytes + b_desc.block_type.nbytes
        for t in range(pid, tiles, programs):
            off_m, off_n = fma._grouped_tile(t, M, N, BM, BN, GROUP_M)
            first = (t - pid) // programs * KT  # (this tile's first ring slice)
            for kt in range(KT):
                i = first + kt
                s = i % STAGES
                mbarrier.wait(empty.index(s), ((i // STAGES) & 1) ^ 1)  # (the first pass finds every stage free)
                mbarrier.expect(ready.index(s), nbytes)
                for c in gl.static_range(CONSUMERS):
                    fma._tma_load(a_desc, [off_m + c * WG_M, kt * BK], ready.index(s), a_s.index(s * CONSUMERS + c))
                fma._tma_load(b_desc, [off_n, kt * BK], ready.index(s), b_s.index(s))

    @gluon.jit
    def _consumer(a_s, b_s, ready, empty, c_ptr, sa_ptr, sb_ptr, M, N, K, programs, stride_cm,
                  stride_sam, stride_sak, stride_sbk, stride_sbn, WG: gl.constexpr, CONSUMERS: gl.constexpr,
                  BN: gl.constexpr, STAGES: gl.constexpr, GROUP_M: gl.constexpr, BLOCK_SCALES: gl.constexpr,
                  FAST_ACCUM: gl.constexpr, ACC: gl.constexpr):
        """One warpgroup: rows WG * 64 .. WG * 64 + 63 of each of the program's tiles. Promoted (not
        FAST_ACCUM): each slice's product a fresh float32 tile added to the sum once waited for;
        chained (FAST_ACCUM): the slices summed in the MMA's accumulator, a slice's MMA issued
        before the one before is waited for (its stage then handed back). The epilogue scales (per
        tensor, row-wise: scale_a[m * stride_sam], scale_b[n * stride_sbn]) and stores."""
        WG_M: gl.constexpr = a_s.type.shape[1]
        BK: gl.constexpr = a_s.type.shape[2]
        BM: gl.constexpr = CONSUMERS * WG_M
        pid = gl.program_id(0)
        KT = gl.cdiv(K, BK)
        tiles = gl.cdiv(M, BM) * gl.cdiv(N, BN)
        part = gl.zeros([WG_M, BN], gl.float32, ACC)  # (a slice's product: the previous one's registers)
        for t in range(pid, tiles, programs):
            off_m, off_n = fma._grouped_tile(t, M, N, BM, BN, GROUP_M)
            rows = off_m + WG * WG_M + gl.arange(0, WG_M, layout=gl.SliceLayout(1, ACC))
            first = (t - pid) // programs * KT
            acc = gl.zeros([WG_M, BN], gl.float32, ACC)
            for kt in range(KT):
                i = first + kt
                s = i % STAGES
                mbarrier.wait(ready.index(s), (i // STAGES) & 1)
                a = a_s.index(s * CONSUMERS + WG)
                b = b_s.index(s).permute((1, 0))  # (b's transpose tile read as the K-major b)
                if FAST_ACCUM:
                    # the slice's MMA left in flight: the one before is done, its stage handed back
                    acc = warpgroup_mma(a, b, acc, is_async=True)
                    acc = warpgroup_mma_wait(num_outstanding=1, deps=(acc,))
                    if kt > 0:
                        fma._warps_barrier()
                        mbarrier.arrive(empty.index((i - 1) % STAGES), count=1)
                else:
                    part = warpgroup_mma(a, b, part, use_acc=False, is_async=True)
                    if BLOCK_SCALES:  # (loaded while the MMA runs)
                        sa = gl.load(sa_ptr + rows * stride_sam + kt * stride_sak, mask=rows < M, other=0.0)
                        sb = gl.load(sb_ptr + kt * stride_sbk + (off_n // BN) * stride_sbn)
                    part = warpgroup_mma_wait(num_outstanding=0, deps=(part,))
                    fma._warps_barrier()  # every warp of the group is done with the stage (one thread arrives)
                    mbarrier.arrive(empty.index(s), count=1)
                    if BLOCK_SCALES:
                        acc += part * (sa * sb)[:, None]
                    else:
                        acc += part
            if FAST_ACCUM:  # the last slice's MMA, and its stage (none where K = 0: no slice)
                acc = warpgroup_mma_wait(num_outstanding=0, deps=(acc,))
                if KT > 0:
                    fma._warps_barrier()
                    mbarrier.arrive(empty.index((first + KT - 1) % STAGES), count=1)
            cols = off_n + gl.arange(0, BN, layout=gl.SliceLayout(0, ACC))
            if not BLOCK_SCALES:
                sa = gl.load(sa_ptr + rows * stride_sam, mask=rows < M, other=0.0)
                sb = gl.load(sb_ptr + cols * stride_sbn, mask=cols < N, other=0.0)
                acc = acc * sa[:, None] * sb[None, :]
            gl.store(c_ptr + rows[:, None].to(gl.int64) * stride_cm + cols[None, :], acc.to(c_ptr.dtype.element_ty),
                     mask=(rows[:, None] < M) & (cols[None, :] < N))

    @gluon.jit
    def fp8_ws_kernel(a_desc, b_desc, c_ptr, sa_ptr, sb_ptr, M, N, K, programs, stride_cm,
                      stride_sam, stride_sak, stride_sbk, stride_sbn,
                      CONSUMERS: gl.constexpr, BN: gl.constexpr, STAGES: gl.constexpr, GROUP_M: gl.constexpr,
                      BLOCK_SCALES: gl.constexpr, FAST_ACCUM: gl.constexpr, ACC: gl.constexpr):
        """c = (a * scale_a) @ (b * scale_b) in tiles of CONSUMERS x 64 rows: a_desc reads a (M, K)
        in 64 x 128 pieces, b_desc b's transpose (N, K) in BN x 128 tiles; c (M, N) row-major,
        stride_cm apart. Block scales: scale_a (M, K / 128) and scale_b (K / 128, N / 128) by their
        strides, BN = 128 (a scale a tile). The partitions' registers: ``REGS``."""
        WG_M: gl.constexpr = a_desc.block_type.shape[0]
        BK: gl.constexpr = a_desc.block_type.shape[1]
        gl.static_assert(not BLOCK_SCALES or BN == BK, "a block scale's slice is one stage of one column tile")
        gl.static_assert(CONSUMERS == 2 or CONSUMERS == 3, "two or three consumer warpgroups")
        gl.static_assert(not (BLOCK_SCALES and FAST_ACCUM), "block scales promote each slice")
        a_s = gl.allocate_shared_memory(a_desc.dtype, [STAGES * CONSUMERS, WG_M, BK], a_desc.layout)
        b_s = gl.allocate_shared_memory(b_desc.dtype, [STAGES, BN, BK], b_desc.layout)
        ready, empty = fma._ring_barriers(STAGES, CONSUMERS)
        # (REGS's figures written out: a kernel reads no plain global; and a literal list, an entry a
        # consumer: warp_specialize's partitions are not built in a loop)
        if CONSUMERS == 2:
            gl.warp_specialize([
                (_consumer, (a_s, b_s, ready, empty, c_ptr, sa_ptr, sb_ptr, M, N, K, programs, stride_cm, stride_sam,
                             stride_sak, stride_sbk, stride_sbn, 0, CONSUMERS, BN, STAGES, GROUP_M, BLOCK_SCALES,
                             FAST_ACCUM, ACC)),
                (_consumer, (a_s, b_s, ready, empty, c_ptr, sa_ptr, sb_ptr, M, N, K, programs, stride_cm, stride_sam,
                             stride_sak, stride_sbk, stride_sbn, 1, CONSUMERS, BN, STAGES, GROUP_M, BLOCK_SCALES,
                             FAST_ACCUM, ACC)),
                (_producer, (a_desc, b_desc, a_s, b_s, ready, empty, M, N, K, programs, CONSUMERS, BN, STAGES,
                             GROUP_M)),
            ], [4, 1], [232, 24])
        else:
            gl.warp_specialize([
                (_consumer, (a_s, b_s, ready, empty, c_ptr, sa_ptr, sb_ptr, M, N, K, programs, stride_cm, stride_sam,
                             stride_sak, stride_sbk, stride_sbn, 0, CONSUMERS, BN, STAGES, GROUP_M, BLOCK_SCALES,
                             FAST_ACCUM, ACC)),
                (_consumer, (a_s, b_s, ready, empty, c_ptr, sa_ptr, sb_ptr, M, N, K, programs, stride_cm, stride_sam,
                             stride_sak, stride_sbk, stride_sbn, 1, CONSUMERS, BN, STAGES, GROUP_M, BLOCK_SCALES,
                             FAST_ACCUM, ACC)),
                (_consumer, (a_s, b_s, ready, empty, c_ptr, sa_ptr, sb_ptr, M, N, K, programs, stride_cm, stride_sam,
                             stride_sak, stride_sbk, stride_sbn, 2, CONSUMERS, BN, STAGES, GROUP_M, BLOCK_SCALES,
                             FAST_ACCUM, ACC)),
                (_producer, (a_desc, b_desc, a_s, b_s, ready, empty, M, N, K, programs, CONSUMERS, BN, STAGES,
                             GROUP_M)),
            ], [4, 4, 1], [160, 160, 24])


def consumers_for(chained: bool) -> int:
    """The plan's consumer warpgroups by default, as CUDA's ``wgmma_fp8`` measured them (decision
    049): 3 (192 x 128 tiles) for promoted sums, 2 chained."""
    return 2 if chained else 3


def plan(a, b, scaling: str, scale_a, scale_b, out_dtype, fast_accum: bool, sms: int, bn: int = 128,
         consumers: int | None = None, stages: int = STAGES) -> Plan:
    """ws_fp8's plan: descriptors over a (M, K) and b's transpose (N, K), each copied into rows
    padded to 16 bytes where a descriptor cannot read it as it lies (``fp8.kmajor_operands``); a
    persistent grid of as few programs as keep its waves (``balanced_grid``). ``bn``, ``consumers``,
    ``stages``: the tile's columns (128; 256 only chained on two consumers: a promoted 64 x 256
    piece and its slice's product take 256 registers a thread), its 64-row warpgroups (2 or 3; by
    default ``consumers_for``) and the ring's stages."""
    if not fma_ws_runs(a.device):
        raise ValueError("variant ws_fp8 needs a Hopper GPU and a triton with Gluon's warp_specialize, and does not "
                         "run under Triton's interpreter; variant=None runs what does")
    block = scaling == fp8.BLOCK  # (block scales promote each slice whatever use_fast_accum says)
    chained = fast_accum and not block
    consumers = consumers or consumers_for(chained)
    if bn != 128 and (not chained or consumers != 2):
        raise ValueError(f"ws_fp8 takes 128-column tiles for block scales, promoted sums and three consumers, got {bn}")
    (M, K), N = a.shape, b.shape[1]
    bt = b.t()  # (N, K): what b_desc reads
    copy_a, copy_b = not tma_rows(a), not tma_rows(bt)
    lda = padded(M, K, a.dtype, "meta").stride(0) if copy_a else a.stride(0)
    ldb = padded(N, K, b.dtype, "meta").stride(0) if copy_b else bt.stride(0)
    specs = (DescriptorSpec((M, K), (lda, 1), (WG_M, BK), shared_layout((WG_M, BK), _GL[a.dtype])),
             DescriptorSpec((N, K), (ldb, 1), (bn, BK), shared_layout((bn, BK), _GL[b.dtype])))
    programs = balanced_grid(cdiv(M, consumers * WG_M) * cdiv(N, bn), sms)
    meta = dict(CONSUMERS=consumers, BN=bn, STAGES=stages, GROUP_M=8, BLOCK_SCALES=block, FAST_ACCUM=chained,
                ACC=acc_layout(bn))
    launch = TritonLaunch(fp8_ws_kernel, (programs,), meta, dict(num_warps=4, maxnreg=REGS[consumers][2]),
                          descriptors=specs)
    bound = launch.bind(M, N, K, programs, N, *fp8.scale_strides(scaling, scale_a, scale_b))  # (c contiguous)

    def run(a, b, scale_a, scale_b, out):
        a, bt = fp8.kmajor_operands(a, b, copy_a, copy_b)
        bound(a, bt, out, scale_a, scale_b)
    return Plan((M, N), out_dtype, a.device, run, fp8.NAMES, traceable=False)
