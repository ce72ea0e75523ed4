"""Exact float32 matmul on CUDA cores in Gluon, Triton's dialect with explicit layouts: ``fma_ws``.

``tl.dot`` on float32 with ``input_precision="ieee"`` becomes FFMAs over a layout Triton picks: a
16 x 4 piece of the tile a thread, and in the K loop the CTA-wide barriers that a TMA copy issued
by one thread costs. That ran 0.87-0.88x cuBLAS at 4096^3 and 8192^3 (H100) whatever the config.
This kernel makes two changes, each a step measured on its own (docs/decisions/014-exact-float32-triton.md):

- the accumulator's layout is written out: each thread holds an 8 x 8 piece (rows r..r+7, columns
  c..c+3 and c+64..c+67), so a k step takes 4 shared loads of 16 bytes for 64 FFMAs, not 5:
  0.885x / 0.895x;
- one producer warp issues the copies (``gl.warp_specialize``) into a ring of stages guarded by
  mbarriers, so the 8 consumer warps never wait at a barrier with it: 0.935x / 0.949x;
- the tiles of a last partial wave are shared out in runs of k slices (stream-K), their partial
  sums added in a fixed order afterwards: few-tile products gain most (1024x1024x4096, 64 tiles:
  0.49x -> 0.92x), 4096^3 half a point (docs/decisions/010-split-k-and-stream-k.md).

a and b are read row-major (the launcher copies an operand laid out otherwise: read K-major,
the 8 x 8 tile's shared loads ran at half the rate, 0.50x); c goes out through a descriptor where
its rows are 16-byte aligned, else by masked stores.

``few_rows_ws`` is for a few rows of a (5-64) against W = b^T, K-major as ``nn.Linear`` keeps it or
read from a row-major b (GPT-2's Conv1D), where ``fma_ws``'s 128-row tile idles.
It sums pairs of rows, as ``_matmul.few_rows`` does, but with the layout written out: a producer
warp brings 16 k of a and of W a stage by TMA, and each consumer thread reads 16 rows of a and 2 of
W, every k in-thread, so no shuffle and no layout conversion (H100, (32, 4096, 4096): 1.09-1.13x
torch, few_rows 0.57x). Gluon does not run under Triton's
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


# few_rows_ws: 16 rows of a a program, 16 k a stage (64-byte rows, 64-byte swizzle: a 16-byte read
# down 8 rows hits 8 bank groups) in 4 stages, 2 rows of W a thread (``_matmul.few_rows_ws_config``
# picks the warps, 32 rows of W each). H100, exact float32, b = W.t(), x torch, 4 warps: 16 x 2 a
# thread 1.06 at (32, 4096, 4096), 8 x 2 on 128 rows of W 0.86, 4 x 2 on 64 0.62 (docs/decisions/014-exact-float32-triton.md)
ROWS_BM, ROWS_BK, ROWS_STAGES, ROWS_PER_THREAD = 16, 16, 4, 2


def rows_layout(warps: int, block_m: int = ROWS_BM):
    """[rows of a, rows of W, k] of a stage's products: 16 x 2 x 16 a thread (k all in-thread: each
    pair of rows is summed over the stage without a shuffle), the 32 lanes along W, the warps along
    W and, for a tile of more than 16 rows of a, along them too (the warps with the same rows of W
    share their stage of it)."""
    warps_m = block_m // ROWS_BM
    return gl.BlockedLayout([ROWS_BM, ROWS_PER_THREAD, ROWS_BK], [1, 32, 1], [warps_m, warps // warps_m, 1], [2, 1, 0])


if AVAILABLE:
    @gluon.jit
    def _grouped_tile(t, M, N, BM: gl.constexpr, BN: gl.constexpr, GROUP_M: gl.constexpr):
        """(row, column) offsets of tile ``t`` in grouped order, as _matmul._grouped_tile walks it
        (a @triton.jit function: Gluon calls none)."""
        num_pid_m = gl.cdiv(M, BM)
        in_group = GROUP_M * gl.cdiv(N, BN)
        first_m = (t // in_group) * GROUP_M
        size_m = min(num_pid_m - first_m, GROUP_M)
        return (first_m + (t % in_group) % size_m) * BM, ((t % in_group) // size_m) * BN

    @gluon.jit
    def _span(pid, N_DP, L, n_tiles, KT):
        """The k slices a program multiplies, numbered across tiles (tile t's are t*KT .. t*KT+KT-1):
        a whole tile for each of the first N_DP programs, then L slices each (stream-K)."""
        if pid < N_DP:
            lo = pid * KT
            hi = lo + KT
        else:
            lo = N_DP * KT + (pid - N_DP) * L
            hi = min(lo + L, n_tiles * KT)
        return lo, hi

    @gluon.jit
    def _ring_barriers(NSTAGE: gl.constexpr, CONSUMERS: gl.constexpr = 1):
        """(ready, empty): an mbarrier a stage for each direction of a ring, one arrival each (empty:
        one from each of CONSUMERS partitions that hand a stage back)."""
        ready = gl.allocate_shared_memory(gl.int64, [NSTAGE, 1], mbarrier.MBarrierLayout())
        empty = gl.allocate_shared_memory(gl.int64, [NSTAGE, 1], mbarrier.MBarrierLayout())
        for i in gl.static_range(NSTAGE):
            mbarrier.init(ready.index(i), count=1)
            mbarrier.init(empty.index(i), count=CONSUMERS)
        return ready, empty

    @gluon.jit
    def _slot(t, pid, N_DP, KT, L, J):
        """Where a stream-K program leaves its partial sum of tile t: the tile's J slots of the
        workspace, one for each program that multiplies some of its slices, in k order."""
        s = t - N_DP
        return s * J + (pid - N_DP) - (s * KT) // L

    @gluon.jit
    def _producer(a_desc, b_desc, a_s, b_s, ready, empty, lo, hi, M, N, KT,
                  BM: gl.constexpr, BN: gl.constexpr, BK: gl.constexpr, NSTAGE: gl.constexpr,
                  GROUP_M: gl.constexpr):
        """One warp: the program's slices in order into the ring (slice i into stage i % NSTAGE)
        once the consumers have handed the stage back."""
        nbytes: gl.constexpr = a_desc.block_type.nbytes + b_desc.block_type.nbytes
        i = 0
        for t in range(lo // KT, (hi - 1) // KT + 1):
            off_m, off_n = _grouped_tile(t, M, N, BM, BN, GROUP_M)
            for kt in range(max(lo - t * KT, 0), min(hi - t * KT, KT)):
                s = i % NSTAGE
                mbarrier.wait(empty.index(s), ((i // NSTAGE) & 1) ^ 1)  # (the first pass finds every stage free)
                mbarrier.expect(ready.index(s), nbytes)
                _tma_load(a_desc, [off_m, kt * BK], ready.index(s), a_s.index(s))
                _tma_load(b_desc, [kt * BK, off_n], ready.index(s), b_s.index(s))
                i += 1

    @gluon.jit
    def _multiply(a_s, b_s, ready, empty, first, n, BM: gl.constexpr, BN: gl.constexpr, BK: gl.constexpr,
                  NSTAGE: gl.constexpr, KS: gl.constexpr, ACC: gl.constexpr):
        """The 8 warps' FFMAs over ring slices first .. first+n-1: wait for a stage, multiply it KS
        columns at a time, hand it back."""
        acc = gl.zeros([BM, BN], gl.float32, ACC)
        for i in range(first, first + n):
            s = i % NSTAGE
            mbarrier.wait(ready.index(s), (i // NSTAGE) & 1)
            # (the stage's views made once: with .index(s) inside the k loop ptxas allocated the same
            # instructions' registers otherwise, and the kernel ran 2% slower)
            a_t = a_s.index(s)
            b_t = b_s.index(s)
            for kk in gl.static_range(BK // KS):
                a = a_t.slice(kk * KS, KS, dim=1).load(gl.DotOperandLayout(0, ACC, 0))
                b = b_t.slice(kk * KS, KS, dim=0).load(gl.DotOperandLayout(1, ACC, 0))
                acc = gl.dot_fma(a, b, acc)
            _warps_barrier()  # every consumer warp is done reading the stage (one thread arrives)
            mbarrier.arrive(empty.index(s), count=1)
        return acc

    @gluon.jit
    def _store_slot(acc, ws, slot, BM: gl.constexpr, BN: gl.constexpr, ACC: gl.constexpr):
        """A partial sum into its workspace slot (BM x BN floats, row-major)."""
        rows = gl.arange(0, BM, layout=gl.SliceLayout(1, ACC))
        cols = gl.arange(0, BN, layout=gl.SliceLayout(0, ACC))
        gl.store(ws + slot.to(gl.int64) * (BM * BN) + rows[:, None] * BN + cols[None, :], acc)

    @gluon.jit
    def _consumer(a_s, b_s, ready, empty, ws, pid, lo, hi, KT, N_DP, L, J,
                  BM: gl.constexpr, BN: gl.constexpr, BK: gl.constexpr,
                  NSTAGE: gl.constexpr, KS: gl.constexpr, ACC: gl.constexpr):
        """The program's tiles in order: every one but the last (a stream-K program's) to its
        workspace slot; the last one's sum returned. (One call of _multiply, in a loop: with a second
        call for the last tile, the k loop's 70 KB of code came twice, and programs running the two
        copies at once ran up to 2x slower, as if they shared an instruction cache; docs/decisions/014-exact-float32-triton.md.)"""
        t1 = (hi - 1) // KT
        acc = gl.zeros([BM, BN], gl.float32, ACC)
        for t in range(lo // KT, t1 + 1):
            # (the ring slices before this tile's, from lo: not a count carried through the loop,
            # which triton 3.6 dropped here, restarting the ring at 0 and hanging on its phases)
            first = max(t * KT - lo, 0)
            n = min(hi, t * KT + KT) - max(lo, t * KT)
            acc = _multiply(a_s, b_s, ready, empty, first, n, BM, BN, BK, NSTAGE, KS, ACC)
            if t < t1:
                _store_slot(acc, ws, _slot(t, pid, N_DP, KT, L, J), BM, BN, ACC)
        return (acc,)

    @gluon.jit
    def fma_ws_kernel(a_desc, b_desc, c, ws, M, N, K, N_DP, L, J,
                      BM: gl.constexpr, BN: gl.constexpr, BK: gl.constexpr, NSTAGE: gl.constexpr,
                      GROUP_M: gl.constexpr, KS: gl.constexpr, ACC: gl.constexpr, C_DESC: gl.constexpr):
        """Tiles of c (contiguous, N wide) in grouped order: the first N_DP programs one BM x BN tile
        each, whole; each program after them L k slices of the tiles left (stream-K, which evens out
        a last wave of tiles), its partial sums to its slots of ``ws`` (J a tile), added up
        afterwards in k order (``_matmul._sum_slots_kernel``). TMA clips reads past the edges to
        zero (edge tiles and a K tail add nothing). ``C_DESC``: c is a descriptor (its writes clipped
        at the edges too), else c's pointer, written by masked stores with 64-bit offsets."""
        pid = gl.program_id(0)
        KT = gl.cdiv(K, BK)
        n_tiles = gl.cdiv(M, BM) * gl.cdiv(N, BN)
        lo, hi = _span(pid, N_DP, L, n_tiles, KT)

        a_s = gl.allocate_shared_memory(gl.float32, [NSTAGE, BM, BK], a_desc.layout)
        b_s = gl.allocate_shared_memory(gl.float32, [NSTAGE, BK, BN], b_desc.layout)
        ready, empty = _ring_barriers(NSTAGE)
        res = gl.warp_specialize([
            (_consumer, (a_s, b_s, ready, empty, ws, pid, lo, hi, KT, N_DP, L, J, BM, BN, BK, NSTAGE, KS, ACC)),
            (_producer, (a_desc, b_desc, a_s, b_s, ready, empty, lo, hi, M, N, KT, BM, BN, BK, NSTAGE, GROUP_M)),
        ], [1], [24])
        acc = res[0]
        t = (hi - 1) // KT
        if pid >= N_DP:
            _store_slot(acc, ws, _slot(t, pid, N_DP, KT, L, J), BM, BN, ACC)
        elif C_DESC:
            off_m, off_n = _grouped_tile(t, M, N, BM, BN, GROUP_M)
            c_s = gl.allocate_shared_memory(gl.float32, [BM, BN], c.layout)
            c_s.store(acc)
            fence_async_shared()
            _tma_store(c, [off_m, off_n], c_s)
            tma.store_wait(0)
        else:
            off_m, off_n = _grouped_tile(t, M, N, BM, BN, GROUP_M)
            offs_m = off_m + gl.arange(0, BM, layout=gl.SliceLayout(1, ACC))
            offs_n = off_n + gl.arange(0, BN, layout=gl.SliceLayout(0, ACC))
            mask = (offs_m[:, None] < M) & (offs_n[None, :] < N)
            gl.store(c + offs_m[:, None].to(gl.int64) * N + offs_n[None, :], acc, mask=mask)

    @gluon.jit
    def _rows_producer(a_desc, w_desc, a_s, w_s, ready, empty, off_m, off_n, k_lo, n_steps,
                       BK: gl.constexpr, NSTAGE: gl.constexpr, W_KMAJOR: gl.constexpr):
        """One warp: the program's k steps of a and W into the ring (step i into stage i % NSTAGE)
        once the consumers have handed the stage back."""
        nbytes: gl.constexpr = a_desc.block_type.nbytes + w_desc.block_type.nbytes
        for i in range(n_steps):
            s = i % NSTAGE
            mbarrier.wait(empty.index(s), ((i // NSTAGE) & 1) ^ 1)  # (the first pass finds every stage free)
            mbarrier.expect(ready.index(s), nbytes)
            _tma_load(a_desc, [off_m, k_lo + i * BK], ready.index(s), a_s.index(s))
            if W_KMAJOR:
                _tma_load(w_desc, [off_n, k_lo + i * BK], ready.index(s), w_s.index(s))
            else:
                _tma_load(w_desc, [k_lo + i * BK, off_n], ready.index(s), w_s.index(s))

    @gluon.jit
    def _rows_consumer(a_s, w_s, ready, empty, n_steps, BM: gl.constexpr, BN: gl.constexpr,
                       NSTAGE: gl.constexpr, L3: gl.constexpr, W_KMAJOR: gl.constexpr):
        """Each stage read whole into registers (its rows of a and of W, every k in-thread), handed
        back, then each (row of a, row of W) pair summed over the stage's k. Without ``W_KMAJOR``
        a stage of W is a (k, n) tile of b, read through its transposed view."""
        acc = gl.zeros([BM, BN], gl.float32, gl.SliceLayout(2, L3))
        for i in range(n_steps):
            s = i % NSTAGE
            mbarrier.wait(ready.index(s), (i // NSTAGE) & 1)
            a = a_s.index(s).load(gl.SliceLayout(1, L3))
            if W_KMAJOR:
                w = w_s.index(s).load(gl.SliceLayout(0, L3))
            else:
                w = w_s.index(s).permute((1, 0)).load(gl.SliceLayout(0, L3))
            _warps_barrier()  # every consumer warp has read the stage (one thread arrives)
            mbarrier.arrive(empty.index(s), count=1)
            acc += gl.sum(gl.expand_dims(a, 1) * gl.expand_dims(w, 0), axis=2)
        return (acc,)

    @gluon.jit
    def few_rows_ws_kernel(a_desc, w_desc, c, M, N, K, k_per_split, split_stride,
                           BM: gl.constexpr, BN: gl.constexpr, BK: gl.constexpr, NSTAGE: gl.constexpr,
                           L3: gl.constexpr, W_KMAJOR: gl.constexpr = True):
        """A BM x BN tile of c = a @ W^T over K, or over split program_id(2)'s k_per_split of it into
        that split's partial sums (split_stride elements apart in a float32 workspace). w_desc reads
        W = b^T K-major in (BN, BK) tiles (``W_KMAJOR``), or b row-major in (BK, BN) tiles. TMA
        clips reads past the edges to zero (rows past M or N, a K tail); c is written by masked
        stores with 64-bit offsets."""
        n_tiles = gl.cdiv(N, BN)  # (N, M) tiles flattened on axis 0: a grid's y axis stops at 65535
        pid_n = gl.program_id(0) % n_tiles
        pid_m = gl.program_id(0) // n_tiles
        pid_k = gl.program_id(2)
        off_m = pid_m * BM
        off_n = pid_n * BN
        k_lo = pid_k * k_per_split
        n_steps = gl.cdiv(min(k_per_split, K - k_lo), BK)
        a_s = gl.allocate_shared_memory(gl.float32, [NSTAGE, BM, BK], a_desc.layout)
        if W_KMAJOR:
            w_s = gl.allocate_shared_memory(gl.float32, [NSTAGE, BN, BK], w_desc.layout)
        else:
            w_s = gl.allocate_shared_memory(gl.float32, [NSTAGE, BK, BN], w_desc.layout)
        ready, empty = _ring_barriers(NSTAGE)
        res = gl.warp_specialize([
            (_rows_consumer, (a_s, w_s, ready, empty, n_steps, BM, BN, NSTAGE, L3, W_KMAJOR)),
            (_rows_producer, (a_desc, w_desc, a_s, w_s, ready, empty, off_m, off_n, k_lo, n_steps, BK, NSTAGE,
                              W_KMAJOR)),
        ], [1], [24])
        acc = res[0]
        LC: gl.constexpr = gl.SliceLayout(2, L3)
        offs_m = off_m + gl.arange(0, BM, layout=gl.SliceLayout(1, LC))
        offs_n = off_n + gl.arange(0, BN, layout=gl.SliceLayout(0, LC))
        ptrs = c + pid_k.to(gl.int64) * split_stride + offs_m.to(gl.int64)[:, None] * N + offs_n[None, :]
        gl.store(ptrs, acc, mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))

