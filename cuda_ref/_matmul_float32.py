"""The SGEMM walk's instances (kernels/matmul.cu, float32 only): each step's template and the launch
geometry it implies, the tiles chosen for each (every configuration tried and its figure in
docs/decisions/008-cuda-float32-walk.md), and the instance a call runs. ``cuda_ref/_matmul.py``
plans the calls.
"""

from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass

import torch

from cuda_ref import loader
from cuda_ref._arch import SM_90
from cuda_ref._transpose import transpose
from kernel_common import cdiv, rows_aligned16

# Every matmul kernel's parameters: a, b, c, then M, N, K and a's and b's strides (``struct`` codes;
# the 16-byte kernels add their three alignment flags).
_ARGS = "QQQqqqqqqq"


@dataclass(frozen=True)
class Config:
    """One template instance of a float32 kernel and the launch geometry it implies."""
    kernel: str       # the template's name in matmul.cu
    params: tuple     # its template arguments, in order
    bm: int           # block tile of c: BM x BN, one block per tile
    bn: int
    threads: int      # threads per block (1-D)
    vec: bool         # takes (vec_a, vec_b, vec_c): the 16-byte kernels
    bk: int = 0       # K slice (for whole-tile checks)
    edges: bool = True  # False: an instance without bounds checks, for whole tiles only
    smem: int = 0     # dynamic shared memory per block, bytes (pipelined's ring of stages)
    a_transposed: bool = False  # the kernel reads A^T (K x M) row by row: launch_config passes k_major(a)
    k_runs: bool = False  # takes K in runs (k_run, last; grid y: the runs): pipelined
    blocks_per_sm: int = 1  # the blocks an SM holds (its MIN_BLOCKS bound)
    b_kmajor: bool = False  # reads b K-major (W.t(): W's rows along k): matmul_pipelined_wt
    a_rows: bool = False  # pipelined reading a's rows where they lie, no A^T: matmul_pipelined_arow(_wt)

    @property
    def name(self) -> str:
        return f"{self.kernel}<{', '.join(map(str, self.params))}>"

    def plan_launch(self, M: int, N: int, runs: int = 1) -> loader.Launch:
        """One block per BM x BN tile of c, a 1-D grid (up to 2^31 - 1 tiles); ``runs`` of K (grid y)."""
        tiles = cdiv(M, self.bm) * cdiv(N, self.bn)
        return loader.Launch(self.name, (tiles, runs) if self.k_runs else (tiles,), (self.threads,),
                             _ARGS + ("iii" if self.vec else "") + ("q" if self.k_runs else ""), self.smem)


# Constructors: template arguments in the kernels' order, the thread count they imply.
def blocktiled_1d(BM, BN, BK, TM) -> Config:
    return Config("matmul_blocktiled_1d", (BM, BN, BK, TM), BM, BN, BM * BN // TM, False)


def blocktiled_2d(BM, BN, BK, TM, TN) -> Config:
    return Config("matmul_blocktiled_2d", (BM, BN, BK, TM, TN), BM, BN, (BM // TM) * (BN // TN), False)


def vectorized(BM, BN, BK, TM, TN) -> Config:
    return Config("matmul_vectorized", (BM, BN, BK, TM, TN), BM, BN, (BM // TM) * (BN // TN), True)


def warptiled(BM, BN, BK, WM, WN, WNITER, TM, TN) -> Config:
    return Config("matmul_warptiled", (BM, BN, BK, WM, WN, WNITER, TM, TN), BM, BN,
                  (BM // WM) * (BN // WN) * 32, True)


def double_buffered(BM, BN, BK, WM, WN, WNITER, TM, TN, PAD=4, GROUP_M=8, MIN_BLOCKS=1, EDGES=True) -> Config:
    return Config("matmul_double_buffered",
                  (BM, BN, BK, WM, WN, WNITER, TM, TN, PAD, GROUP_M, MIN_BLOCKS, str(EDGES).lower()),
                  BM, BN, (BM // WM) * (BN // WN) * 32, True, bk=BK, edges=EDGES)


def pipelined(BM, BN, BK, WM, WN, WNITER, TM, TN, PAD=4, GROUP_M=8, STAGES=3, MIN_BLOCKS=1, EDGES=True,
              B_KMAJOR=False, A_ROWS=False) -> Config:
    # B_KMAJOR: a stage holds Bt[BN][BK + 4] instead of Bs[BK][BN], and one Bs follows the ring;
    # A_ROWS: Ar[BM][BK + 4] instead of As[BK][BM + PAD], and one As follows (after the one Bs)
    a_floats = STAGES * BM * (BK + 4) + BK * (BM + PAD) if A_ROWS else STAGES * BK * (BM + PAD)
    b_floats = STAGES * BN * (BK + 4) + BK * BN if B_KMAJOR else STAGES * BK * BN
    return Config("matmul_pipelined" + "_arow" * A_ROWS + "_wt" * B_KMAJOR,
                  (BM, BN, BK, WM, WN, WNITER, TM, TN, PAD, GROUP_M, STAGES, MIN_BLOCKS, str(EDGES).lower()),
                  BM, BN, (BM // WM) * (BN // WN) * 32, True, bk=BK, edges=EDGES,
                  smem=(a_floats + b_floats) * 4, a_transposed=not A_ROWS, k_runs=True,
                  blocks_per_sm=MIN_BLOCKS, b_kmajor=B_KMAJOR, a_rows=A_ROWS)


def kmajor_b_twin(cfg: Config) -> Config:
    """The pipelined instance of ``cfg``'s tile that reads b K-major (W.t()) where it lies."""
    return pipelined(*cfg.params[:12], EDGES=cfg.edges, B_KMAJOR=True, A_ROWS=cfg.a_rows)


def rows_a_twin(cfg: Config) -> Config:
    """The pipelined instance of ``cfg``'s tile (and b layout) that reads a's rows where they lie,
    transposing each slice in shared memory as the _wt twin does b's: one launch, no A^T made."""
    return pipelined(*cfg.params[:12], EDGES=cfg.edges, B_KMAJOR=cfg.b_kmajor, A_ROWS=True)


# The tiles of the float32 walk: one line each with the figure that chose it (H200, 4096^3, x
# cuBLAS sgemm in the same run, lab/sweep_sgemm.py); every configuration tried and its figure
# is in docs/decisions/008-cuda-float32-walk.md, each variant's rate in MATMUL.md.
CONFIGS = {
    "blocktiled_1d": blocktiled_1d(64, 64, 8, 8),        # 512 threads, 8 results each (siboehm's; not swept)
    "blocktiled_2d": blocktiled_2d(128, 128, 8, 8, 8),   # 256 threads, 8 x 8 results each (not swept)
    "vectorized": vectorized(128, 128, 8, 8, 8),         # blocktiled_2d's tiles: what 16-byte accesses buy
    # 8 warps of 64 x 32: 0.597x (4 warps of 64 x 64 did 0.645x at 255 registers, at the edge of spilling)
    "warptiled": warptiled(128, 128, 16, 64, 32, 2, 8, 4),
}
# double_buffered picks by the number of block tiles: big tiles reuse more per load, but a grid of
# too few tiles leaves SMs idle, where 64 x 64 tiles (4 blocks per SM) fill them. pipelined picks its
# tile and K's runs by a fitted model (``pipelined_choice``). Whole tiles with aligned rows run the
# EDGES=false twin of the choice (no bounds checks).
DOUBLE_BUFFERED = {
    "large": double_buffered(128, 128, 16, 64, 32, 2, 8, 4),  # 0.715x; whole-tile twin 0.821x
    "small": double_buffered(64, 64, 16, 32, 32, 1, 8, 4, MIN_BLOCKS=4),  # for grids of few tiles
}
SMALL_GRID_TILES_PER_SM = 2  # double_buffered: below this many tiles an SM, "small"
PIPELINED = {
    # whole-tile twin 0.931-0.940x (0.950x at 8192^3) counting the transpose of A
    "large": pipelined(128, 128, 16, 64, 32, 2, 8, 4, STAGES=3),
    # 1024^3 (64 large tiles for 132 SMs): 0.985x against 0.613x for "large"
    "small": pipelined(64, 64, 16, 32, 32, 1, 8, 4, STAGES=3, MIN_BLOCKS=4),
    # large's 8 x 8 results a thread on half the rows: 4 warps of 32 x 64, 2 blocks an SM (255 registers)
    "mid": pipelined(64, 128, 16, 32, 64, 2, 8, 4, STAGES=3, MIN_BLOCKS=2),
    # a quarter of large's rows: 4 warps of 32 x 32 side by side, 3 blocks an SM (at 4 it spills)
    "short": pipelined(32, 128, 16, 32, 32, 1, 8, 4, STAGES=3, MIN_BLOCKS=3),
}
TILE_TABLES = {"double_buffered": DOUBLE_BUFFERED, "pipelined": PIPELINED}


def whole_tiles_twin(cfg: Config) -> Config:
    """The EDGES = false instance of a double_buffered or pipelined config (no bounds checks;
    EDGES is the last template argument)."""
    return dataclasses.replace(cfg, params=(*cfg.params[:-1], "false"), edges=False)


def instance_for(cfg: Config, M: int, N: int, K: int, aligned: bool) -> Config:
    """``cfg``'s whole-tile twin where every tile is whole and every row aligned, else ``cfg``."""
    if aligned and M % cfg.bm == 0 and N % cfg.bn == 0 and K % cfg.bk == 0:
        return whole_tiles_twin(cfg)  # the instance without edge checks
    return cfg


def float32_configs() -> tuple[Config, ...]:
    """Every float32 instance a launch can ask for."""
    kmajor = list(map(kmajor_b_twin, PIPELINED.values()))
    tabled = [cfg for table in TILE_TABLES.values() for cfg in table.values()] + kmajor + \
        [rows_a_twin(cfg) for cfg in (*PIPELINED.values(), *kmajor)]
    return (*CONFIGS.values(), *tabled, *map(whole_tiles_twin, tabled))


def config_for(variant: str, M: int, N: int, sm_count: int, K: int = 1, aligned: bool = False,
               b_kmajor: bool = False, a_rows: bool = False) -> Config:
    """The float32 instance ``variant`` runs for an M x N x K product on a GPU with ``sm_count``
    SMs; ``aligned``: every operand row 16-byte aligned (vec_flags all set); ``b_kmajor``:
    pipelined reading W.t() where it lies; ``a_rows``: pipelined reading a's rows where they lie."""
    table = TILE_TABLES.get(variant)
    if table is None:
        return CONFIGS[variant]
    if variant == "pipelined":
        cfg = pipelined_choice(M, N, K, sm_count, b_kmajor)[0]
        cfg = rows_a_twin(cfg) if a_rows else cfg
    else:
        cfg = table["large"]
        if cdiv(M, cfg.bm) * cdiv(N, cfg.bn) < SMALL_GRID_TILES_PER_SM * sm_count:
            cfg = table["small"]
    return instance_for(cfg, M, N, K, aligned)


# pipelined's tile and K's runs: the fewest modeled microseconds of each tile at 1-16 runs of at least
# RUN_MIN_K. An SM's time is the larger of its blocks' multiply-adds at its full rate (a) and its
# waves of blocks at one block's rate alone (b, slower: a lone block of 4-8 warps waits on its
# loads), plus the runs' sum (a second launch reading and writing M N floats a run). Fitted on
# every tile at 1-16 runs forced on drawn shapes (lab/fit_float32_tiles.py): PIPELINED_MODEL for
# matmul_pipelined (decision 059), PIPELINED_WT_MODEL for matmul_pipelined_wt (decision 060). W.t()
# reads W where it lies where that model's time is below the row-major kernel's plus a transposed
# copy of W (TRANSPOSED_COPY_US_PER_MELEM a million elements of W: read and written once more; N not
# a multiple of 4, rows padded, torch's strided copy: STRIDED_COPY_US_PER_MELEM).
PIPELINED_MODEL = SM_90["pipelined_model"]
PIPELINED_WT_MODEL = SM_90["pipelined_wt_model"]
TRANSPOSED_COPY_US_PER_MELEM = SM_90["transposed_copy_us_per_melem"]
STRIDED_COPY_US_PER_MELEM = SM_90["strided_copy_us_per_melem"]
RUN_MIN_K = 128
RUN_COUNTS = (1, 2, 3, 4, 6, 8, 12, 16)
RUNS_MAX_FLOATS = 1 << 26  # the runs' float32 sums at most (256 MB, kept by the stream: hand_over)


def k_run_of(cfg: Config, K: int, runs: int) -> int:
    """K a run: whole slices, none split between two runs."""
    return cdiv(cdiv(K, runs), cfg.bk) * cfg.bk


def pipelined_us(name: str, M: int, N: int, K: int, sm_count: int, runs: int, b_kmajor: bool = False) -> float:
    """The model's microseconds of PIPELINED[name] with K in ``runs`` (``b_kmajor``: of its
    matmul_pipelined_wt instance; the copies left out)."""
    full = PIPELINED_WT_MODEL if b_kmajor else PIPELINED_MODEL
    cfg, model = PIPELINED[name], full[name]
    blocks = cdiv(M, cfg.bm) * cdiv(N, cfg.bn) * runs
    work = k_run_of(cfg, K, runs) * cfg.bm * cfg.bn / 1e6
    kernel = max(cdiv(blocks, sm_count) * model["a_us"], cdiv(blocks, sm_count * cfg.blocks_per_sm) * model["b_us"])
    summed = full["sum_us_per_melem"] * M * N * runs / 1e6 + full["reduce_us"]
    return kernel * work + (summed if runs > 1 else 0.0)


@functools.lru_cache(maxsize=4096)
def pipelined_fastest(M: int, N: int, K: int, sm_count: int, b_kmajor: bool = False) -> tuple[str, int, float]:
    """(tile name, runs asked, modelled us) of the model's fastest pipelined plan."""
    options = [(name, runs) for name in PIPELINED for runs in RUN_COUNTS
               if runs == 1 or K // runs >= RUN_MIN_K and runs * M * N <= RUNS_MAX_FLOATS]
    us = {o: pipelined_us(o[0], M, N, K, sm_count, o[1], b_kmajor) for o in options}
    name, runs = min(us, key=us.get)
    return name, runs, us[name, runs]


def pipelined_choice(M: int, N: int, K: int, sm_count: int, b_kmajor: bool = False) -> tuple[Config, int]:
    """(tile, runs) of a pipelined call: the model's fastest (``b_kmajor``: matmul_pipelined_wt's)."""
    name, runs, _ = pipelined_fastest(M, N, K, sm_count, b_kmajor)
    cfg = PIPELINED[name]
    return kmajor_b_twin(cfg) if b_kmajor else cfg, cdiv(K, k_run_of(cfg, K, runs)) if runs > 1 else 1


def reads_w_in_place(M: int, N: int, K: int, sm_count: int) -> bool:
    """Is W.t() (W's rows aligned) faster read where it lies than transposed into a copy, by the
    models (the copy: TRANSPOSED_COPY_US_PER_MELEM or STRIDED_COPY_US_PER_MELEM a million elements)?"""
    per_melem = TRANSPOSED_COPY_US_PER_MELEM if N % 4 == 0 else STRIDED_COPY_US_PER_MELEM
    copied = pipelined_fastest(M, N, K, sm_count)[2] + per_melem * N * K / 1e6
    return pipelined_fastest(M, N, K, sm_count, True)[2] < copied


# pipelined reading a's rows where they lie (matmul_pipelined_arow: each slice transposed in shared
# memory, as the _wt twin does W's) in place of A^T copied a call: one launch, not two. Priced as its
# A^T twin's modelled time times ``share``, against that time plus the copy (TRANSPOSED_COPY_US_PER_MELEM
# a million elements of A) and its launch (``launch_us``); a's rows aligned (16-byte copies, as A^T's
# padded rows). The arch data has no entry until the sweep that fits them has run on a GPU
# (lab/sweep_float32_tiles.py --a-rows; decision 059): until then A^T is copied.
PIPELINED_AROW = SM_90.get("pipelined_arow")


def reads_a_in_place(M: int, N: int, K: int, sm_count: int, b_kmajor: bool = False) -> bool:
    """Is a (M, K) faster read where it lies than copied into A^T, by ``PIPELINED_AROW``'s pricing?"""
    if PIPELINED_AROW is None:
        return False
    kernel = pipelined_fastest(M, N, K, sm_count, b_kmajor)[2]
    copy = TRANSPOSED_COPY_US_PER_MELEM * M * K / 1e6 + PIPELINED_AROW["launch_us"]
    return kernel * (PIPELINED_AROW["share"] - 1) < copy


def float32_runs(cfg: Config, M: int, N: int, K: int, sm_count: int) -> tuple[int, int]:
    """(runs, k_run) of a call of ``cfg``: pipelined's choice (``pipelined_choice``), else K whole."""
    if not cfg.k_runs:
        return 1, K
    runs = pipelined_choice(M, N, K, sm_count, cfg.b_kmajor)[1]
    return runs, k_run_of(cfg, K, runs)


def k_major(a: torch.Tensor) -> torch.Tensor:
    """``a`` (M, K) as a view whose transpose, A^T (K, M), has rows that a kernel can read 16
    bytes at a time: ``a`` itself when it already is one (a ``.t()`` view of a contiguous (K, M)),
    else the ``.t()`` of a contiguous copy of A^T made by ``cuda_ref.transpose`` (an extra read
    and write of M * K elements, about 1% of a 4096^3 product's time)."""
    return a if rows_aligned16(a.t()) else transpose(a).t()


def vec_flags(a: torch.Tensor, b: torch.Tensor, out: torch.Tensor,
              a_transposed: bool = False) -> tuple[int, int, int]:
    """(vec_a, vec_b, vec_c) for the 16-byte kernels. An operand that fails (a .t() view, a
    slice with a step, an odd leading dimension, an offset view) is read by the same kernel
    through its strides with scalar, predicated loads: correct, slower, and no hidden copy. For
    full speed on such inputs pass ``a.contiguous()`` with K % 4 == 0 (and b with N % 4 == 0)."""
    M, N = out.shape
    vec_c = out.data_ptr() % 16 == 0 and (N % 4 == 0 or M == 1)  # out is contiguous (checked)
    vec_a = rows_aligned16(a.t() if a_transposed else a)
    return int(vec_a), int(rows_aligned16(b)), int(vec_c)
