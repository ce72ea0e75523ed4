"""Exact float32 matmul on CUDA cores in Gluon, Triton's dialect with explicit layouts: ``fma_ws``.

``tl.dot`` on float32 with ``input_precision="ieee"`` becomes FFMAs over a layout Triton picks: a
16 x 4 piece of the tile a thread, and in the K loop the CTA-wide barriers that a TMA copy issued
by one thread costs. That ran 0.87-0.88x cuBLAS at 4096^3 and 8192^3 (H100) whatever the config.
This kernel makes two changes, each a step measured on its own (bench/NOTES.md, session 23):

- the accumulator's layout is written out: each thread holds an 8 x 8 piece (rows r..r+7, columns
  c..c+3 and c+64..c+67), so a k step takes 4 shared loads of 16 bytes for 64 FFMAs, not 5:
  0.885x / 0.895x;
- one producer warp issues the copies (``gl.warp_specialize``) into a ring of stages guarded by
  mbarriers, so the 8 consumer warps never wait at a barrier with it: 0.935x / 0.949x.

a and b are read row-major (the launcher copies an operand laid out otherwise: read K-major,
the 8 x 8 tile's shared loads ran at half the rate, 0.50x); c goes out through a descriptor where
its rows are 16-byte aligned, else by masked stores. Gluon does not run under Triton's
interpreter, and an older triton may lack it or the two calls used here: ``AVAILABLE`` (3.6 and
3.9 have them).
"""

from __future__ import annotations

try:
    from triton.experimental import gluon
    from triton.experimental.gluon import language as gl
    from triton.experimental.gluon.language.nvidia.hopper import fence_async_shared, mbarrier, tma
    AVAILABLE = hasattr(gl, "warp_specialize") and hasattr(gl, "dot_fma")
    # names that moved: a barrier of the warps that run it (gl.thread_barrier in triton 3.6,
    # gl.barrier later); TMA copies (tma.async_copy_global_to_shared / _shared_to_global in 3.6,
    # tma.async_load / async_store later)
    _warps_barrier = getattr(gl, "thread_barrier", None) or getattr(gl, "barrier", None)
    _tma_load = getattr(tma, "async_load", None) or tma.async_copy_global_to_shared
    _tma_store = getattr(tma, "async_store", None) or tma.async_copy_shared_to_global
except ImportError:  # triton without gluon
    AVAILABLE = False

# The tile (BLOCK_M x BLOCK_N x BLOCK_K), the ring's stages and the consumer warps: H100, x cuBLAS at
# 4096^3 / 8192^3, 128 x 128 x 64 in 3 stages 0.935 / 0.949, 2 stages 0.924 / 0.936, 128 x 128 x 32
# in 4 or 6 stages 0.905-0.917 (a k step's wait and hand-back costs the same for half the FFMAs).
BLOCK_M, BLOCK_N, BLOCK_K, STAGES, WARPS = 128, 128, 64, 3, 8
K_STEP = 16  # k columns a dot_fma takes at a time: the operands of one step stay in registers


def acc_layout():
    """8 consumer warps over a 128 x 128 tile, 8 x 8 elements a thread (two 8 x 4 pieces 64 columns
    apart: 16 lanes of a warp read 256 contiguous bytes of a row of b)."""
    return gl.BlockedLayout([8, 4], [2, 16], [WARPS, 1], [1, 0])


def shared_layout(block):
    """The NVMMA (TMA) layout of a float32 tile of shape ``block``."""
    return gl.NVMMASharedLayout.get_default_for(list(block), gl.float32)


if AVAILABLE:
    @gluon.jit
    def _producer(a_desc, b_desc, a_s, b_s, ready, empty, off_m, off_n, k_tiles,
                  BK: gl.constexpr, NSTAGE: gl.constexpr):
        """One warp: k slice kt into stage kt % NSTAGE once the consumers have handed it back."""
        nbytes: gl.constexpr = a_desc.block_type.nbytes + b_desc.block_type.nbytes
        for kt in range(k_tiles):
            s = kt % NSTAGE
            mbarrier.wait(empty.index(s), ((kt // NSTAGE) & 1) ^ 1)  # (the first pass finds every stage free)
            mbarrier.expect(ready.index(s), nbytes)
            _tma_load(a_desc, [off_m, kt * BK], ready.index(s), a_s.index(s))
            _tma_load(b_desc, [kt * BK, off_n], ready.index(s), b_s.index(s))

    @gluon.jit
    def _consumer(a_s, b_s, ready, empty, k_tiles, BM: gl.constexpr, BN: gl.constexpr, BK: gl.constexpr,
                  NSTAGE: gl.constexpr, KS: gl.constexpr, ACC: gl.constexpr):
        """The 8 warps of FFMAs: wait for a stage, multiply it KS columns at a time, hand it back."""
        acc = gl.zeros([BM, BN], gl.float32, ACC)
        for kt in range(k_tiles):
            s = kt % NSTAGE
            mbarrier.wait(ready.index(s), (kt // NSTAGE) & 1)
            # (the stage's views made once: with .index(s) inside the k loop ptxas allocated the same
            # instructions' registers otherwise, and the kernel ran 2% slower; session 23)
            a_t = a_s.index(s)
            b_t = b_s.index(s)
            for kk in gl.static_range(BK // KS):
                a = a_t.slice(kk * KS, KS, dim=1).load(gl.DotOperandLayout(0, ACC, 0))
                b = b_t.slice(kk * KS, KS, dim=0).load(gl.DotOperandLayout(1, ACC, 0))
                acc = gl.dot_fma(a, b, acc)
            _warps_barrier()  # every consumer warp is done reading the stage (one thread arrives)
            mbarrier.arrive(empty.index(s), count=1)
        return (acc,)

    @gluon.jit
    def fma_ws_kernel(a_desc, b_desc, c, M, N, K,
                      BM: gl.constexpr, BN: gl.constexpr, BK: gl.constexpr, NSTAGE: gl.constexpr,
                      GROUP_M: gl.constexpr, KS: gl.constexpr, ACC: gl.constexpr, C_DESC: gl.constexpr):
        """One BM x BN tile of c (contiguous, N wide) a program, in grouped order. TMA clips reads
        past the edges to zero (edge tiles and a K tail add nothing). ``C_DESC``: c is a descriptor
        (its writes clipped at the edges too), else c's pointer, written by masked stores with
        64-bit offsets."""
        # grouped order, as _matmul._grouped_tile walks it (a @triton.jit function: Gluon calls none)
        pid = gl.program_id(0)
        num_pid_m = gl.cdiv(M, BM)
        num_pid_n = gl.cdiv(N, BN)
        in_group = GROUP_M * num_pid_n
        first_m = (pid // in_group) * GROUP_M
        size_m = min(num_pid_m - first_m, GROUP_M)
        pid_m = first_m + (pid % in_group) % size_m
        pid_n = (pid % in_group) // size_m
        off_m = pid_m * BM
        off_n = pid_n * BN

        a_s = gl.allocate_shared_memory(gl.float32, [NSTAGE, BM, BK], a_desc.layout)
        b_s = gl.allocate_shared_memory(gl.float32, [NSTAGE, BK, BN], b_desc.layout)
        ready = gl.allocate_shared_memory(gl.int64, [NSTAGE, 1], mbarrier.MBarrierLayout())
        empty = gl.allocate_shared_memory(gl.int64, [NSTAGE, 1], mbarrier.MBarrierLayout())
        for i in gl.static_range(NSTAGE):
            mbarrier.init(ready.index(i), count=1)
            mbarrier.init(empty.index(i), count=1)
        k_tiles = gl.cdiv(K, BK)
        res = gl.warp_specialize([
            (_consumer, (a_s, b_s, ready, empty, k_tiles, BM, BN, BK, NSTAGE, KS, ACC)),
            (_producer, (a_desc, b_desc, a_s, b_s, ready, empty, off_m, off_n, k_tiles, BK, NSTAGE)),
        ], [1], [24])
        acc = res[0]
        if C_DESC:
            c_s = gl.allocate_shared_memory(gl.float32, [BM, BN], c.layout)
            c_s.store(acc)
            fence_async_shared()
            _tma_store(c, [off_m, off_n], c_s)
            tma.store_wait(0)
        else:
            offs_m = off_m + gl.arange(0, BM, layout=gl.SliceLayout(1, ACC))
            offs_n = off_n + gl.arange(0, BN, layout=gl.SliceLayout(0, ACC))
            mask = (offs_m[:, None] < M) & (offs_n[None, :] < N)
            gl.store(c + offs_m[:, None].to(gl.int64) * N + offs_n[None, :], acc, mask=mask)
