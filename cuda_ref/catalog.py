"""Every CUDA variant of the three algorithms, declared once (``kernel_common.catalog.Variant``): its
idea, the dtypes and layout it takes, its caps and which is the default. The kernels and launches
live in each algorithm's module; every CUDA variant needs a GPU."""

from functools import partial

from kernel_common.catalog import F16 as _F16, F32 as _F32, FEW_ROWS_LONG_K, FLOATS as _FLOATS, I8 as _I8, I32 as _I32
from kernel_common.catalog import Variant as _Variant

Variant = partial(_Variant, gpu_only=True)

RECORDS = (
    # ---- transpose ---------------------------------------------------------------------------------
    Variant("transpose", "serial",
            "one thread does everything (capped at 65536 elements by the harness)", max_elems=65536),
    Variant("transpose", "per_row",
            "one thread per input row: coalesced stores, row-strided loads"),
    Variant("transpose", "per_element",
            "one thread per element: coalesced loads, stores R elements apart"),
    Variant("transpose", "smem_tiled",
            "seed 003's 32x32 shared tile, 32x32 threads (32-way bank conflicts on the read-back)"),
    Variant("transpose", "smem_tiled_padded",
            "the same tile as `[32][33]`: no bank conflicts"),
    Variant("transpose", "smem_tiled_rows",
            "padded tile moved by 32x8 threads, 4 elements each"),
    Variant("transpose", "smem_tiled_words",
            "tall tiles (256 input rows x 32 columns) numbered down the columns, so output segments are long "
            "(512 bytes of fp16); each thread loads a column element by element and packs consecutive output "
            "elements into 4-byte words, so shared memory and the stores move words; the partial words at a "
            "row's two ends element by element; interior loads ask L2 for 128 bytes (`ld.global.nc.L2::128B`). "
            "The default for tall contiguous matrices of 11-32 columns whose rows pass 20 bytes (or of 40-byte rows)"),
    Variant("transpose", "smem_tiled_sheared",
            "every global load and store an aligned 16-byte chunk on rows at any alignment, without shifts: "
            "each input row's part of the tile is the aligned chunks around its columns (64; 32 for 8-byte "
            "elements), copied to shared memory as they are (so the tile is sheared row by row), and each "
            "output row's part is the 32-byte-aligned run of input rows that falls to this tile, gathered "
            "element by element from shared memory and packed into chunks; rows and chunks no output row "
            "needs are not loaded (none, on aligned rows), and the 16-byte loads ask L2 for 256 bytes (2-byte"
            " elements) or 128 (4- and 8-byte ones; 1-byte elements move 8-byte chunks, without the hint). "
            "The default for rows that start off 16 bytes"),
    Variant("transpose", "smem_tiled_vec",
            "16-byte loads and stores, each thread transposes a VECxVEC block in registers, XOR-swizzled "
            "16-byte shared chunks, tiles walked down the columns; rows that start off 16 bytes still move in"
            " aligned vectors (funnel-shifted pairs, the row ends element by element)", default=True),
    Variant("transpose", "narrow",
            "flat tiles for a narrow side: up to 16 elements of it by 2048 / n of the long side, so a 3-row "
            "matrix fills its blocks; runs of the long side in and out, shared memory between, each thread's "
            "8 loads in flight together; matrices of 2-64 unit-stride rows (or contiguous ones of 2-64 "
            "columns) move in 16-byte chunks both ways instead, a block's part of the output one contiguous "
            "run gathered from the rows (or each output row's segment from the flat input run); a side of 1 "
            "(the result is the elements in order) is one device copy, no kernel. The default where a side "
            "is at most 16, and for some sides of 17-64 (2-byte rows, columns up to 32), but for tall matrices "
            "of longer rows (`smem_tiled_words`)"),
    # ---- gemv --------------------------------------------------------------------------------------
    Variant("gemv", "native",
            "seed 001's algorithm one: a thread per row (lanes read addresses K apart)", layout="row"),
    Variant("gemv", "coalesced",
            "the same loop over column-major A: a warp reads one 128-byte line per k", layout="col"),
    Variant("gemv", "coalesced_const",
            "x in `__constant__` memory (K x itemsize <= 64 KiB; a clear error past it)",
            layout="col", max_k=16384),
    Variant("gemv", "coalesced_shared",
            "x staged through shared memory in 1024-element pieces, the last one bounds-checked", layout="col"),
    Variant("gemv", "warp_per_row",
            "a warp per row, 16-byte loads (4 a lane issued before their FMAs), shuffle reduction; rows off 16 "
            "bytes (1024 bytes a row or more) in 16-byte loads from their first boundary against x shifted to "
            "match; scalar ends, shorter rows off 16 bytes, strided K and x off 16 bytes", layout="row", default=True),
    Variant("gemv", "rows_per_warp",
            "4 rows a lane group: 8 lanes a float32 row (4 a 16-bit row) to K = 128, 16 lanes past it: for short K; "
            "rows off 16 bytes as `warp_per_row` reads them, but those of 128 to 1023 bytes all in 16-byte loads: "
            "the aligned vectors that cover each row (16 lanes a row past K = 128 or from 384 bytes, 8 below), its "
            "neighbours' elements in the head and tail ones masked off, x staged in shared memory (`071`)", layout="row"),
    Variant("gemv", "split_k",
            "rows split over several blocks along K, float32 partials summed in a fixed order by each row group's "
            "last block, in the same launch: for few rows",
            layout="row", shown_at=FEW_ROWS_LONG_K),
    # ---- matmul ------------------------------------------------------------------------------------
    Variant("matmul", "naive",
            "one thread per element of C, threadIdx.x along N (coalesced B and C)", dtypes=_FLOATS + _I32),
    Variant("matmul", "smem_tiled",
            "32x32 tiles of A and B staged in shared memory, zero-filled at the edges, barriers outside every"
            " branch", dtypes=_FLOATS + _I32),
    Variant("matmul", "blocktiled_1d",
            "float32 only from here: each thread computes a column of 8 results (64x64 block tile)", dtypes=_F32),
    Variant("matmul", "blocktiled_2d",
            "each thread an 8x8 outer product from registers (128x128 block tile)", dtypes=_F32),
    Variant("matmul", "vectorized",
            "float4 global and shared loads, A transposed in shared memory", dtypes=_F32),
    Variant("matmul", "warptiled",
            "an explicit warp tile between block and thread tile: conflict-free fragment reads", dtypes=_F32),
    Variant("matmul", "double_buffered",
            "two shared stages with register prefetch, padded As, grouped tile order, tile size by grid size",
            dtypes=_F32),
    Variant("matmul", "pipelined",
            "cp.async into a ring of 3 shared stages; A^T made once (by `cuda_ref.transpose`, or none for a "
            "`.t()` view) so A streams with 16-byte copies like B (b too, in aligned rows); tiles inside the "
            "matrix without edge checks; 128 x 128, 64 x 128, 64 x 64 or 32 x 128 tiles and K in 1-16 runs "
            "by a fitted model", dtypes=_F32, default=True),
    Variant("matmul", "wmma",
            "float16 / bfloat16 only from here (the tensor-core walk, `matmul_tc.cu`): 16x16x16 wmma "
            "fragments from padded shared tiles, 128x128 block tiles", dtypes=_F16),
    Variant("matmul", "mma_sync",
            "`mma.sync.m16n8k16` fed by `ldmatrix` from XOR-swizzled shared tiles", dtypes=_F16),
    Variant("matmul", "mma_pipelined",
            "the same fed by a cp.async ring of 4 stages", dtypes=_F16),
    Variant("matmul", "wgmma",
            "Hopper (sm_90a, `matmul_wgmma.cu`): `wgmma.m64n256k16` from 128-byte-swizzled shared tiles that "
            "TMA brings into 4 stages (mbarriers); tensor maps encoded on the host", dtypes=_F16 + _I8),
    Variant("matmul", "wgmma_ws",
            "warp-specialized: a producer warpgroup for the TMA copies, two consumers, full / empty barriers,"
            " a persistent grid (as few blocks as keep its waves); c through shared memory and TMA stores; "
            "blocks in pairs (clusters of 2) sharing b's tile by TMA multicast where a's 128-row tiles are even in count, or from 6144 rows; 64-row tiles "
            "(one consumer) up to 64 rows; K split on grids of few tiles (a few rows of a), up to 3 runs "
            "summed in the kernel, more by a second launch; in pairs, where the last wave would leave "
            "most pairs idle, its k-slices shared by all of them (stream-K). The 16-bit default on Hopper "
            "(MATMUL.md); by name, a batch of products (bmm) in one walk over every product's tiles, through 3-D tensor maps;"
            " float32 as TF32 where torch's precision allows it (`m64nNk8`, a and b K-major: an operand laid out "
            "otherwise copied once a call; c from the accumulators; 2-D, no bias)",
            dtypes=(*_F16, "tf32"), bias=True, batch=True),
    Variant("matmul", "dp4a",
            "int8 only (int32 result): `dp4a` on CUDA cores, four int8 multiply-adds an instruction, 128x128 "
            "tiles; a row-major B transposed in 4x4 byte blocks in registers", dtypes=_I8),
    Variant("matmul", "mma_int8",
            "int8 on tensor cores: `mma_pipelined`'s ring with `mma.sync.m16n8k32.s8`; `wgmma` takes int8 too"
            " (`m64n256k32.s8`); both read B K-major, so a row-major B is transposed once a call", dtypes=_I8),
    Variant("matmul", "few_rows",
            "a few rows of a (decode) on CUDA cores: a GEMV over W = b^T with M vectors, a warp dotting 1-2 "
            "K-major rows of W with 1-4 rows of a in 16-byte loads; a row-major B read where it lies at any "
            "alignment, 8 warps of a block taking every 8th k of its 64-256 columns; W read once (float32 "
            "too, exact FMA); one row of a against a K-major b, without a bias, runs this package's GEMV on W = b^T",
            dtypes=_F32 + _F16, max_m=1024, bias=True),
    Variant("matmul", "few_rows_mma",
            "2-32 rows of a (one where K runs; 9-64 on a row-major B off 16 bytes) on tensor cores with the roles swapped: "
            "c^T = W a^T by `mma.sync`, W's rows the "
            "MMA's 16-row side and a's rows (16, 32 or 64, zero past M) its 8-column side; a block per 32 rows of"
            " W, its four warps sharing each 256-deep slice of k and adding their sums in a fixed order; a "
            "cp.async ring of 96 KiB (two blocks an SM). B = W.t() or row-major, read where it lies (rows off 16 "
            "bytes as aligned chunks, shifted into the tile in shared memory); on a "
            "row-major B its blocks take 64 rows of W (columns of B) where they still fill the SMs. Where its "
            "blocks are few, K in runs (gridDim.z), each tile's last run to finish adding their float32 sums "
            "in order; float32 as TF32 where torch's precision allows it (`m16n8k8`, each fragment rounded once; a "
            "row-major B's fragments from shared memory element by element), B in either layout with rows "
            "aligned", dtypes=(*_F16, "tf32"), max_m=1024, bias=True),
    Variant("matmul", "wgmma_swap",
            "one to a few thousand rows of a on Hopper's wgmma with the roles swapped: c^T = W a^T, W's rows the MMA's"
            " 64-row side (192, 128 or 64 a block: three consumer warpgroups to one; 192 in 16 bits past 64 rows,"
            " `053`) and a block's share of a's rows "
            "its N side, a multiple of 16 from 16 to 176, so M is padded by at most 15 rows a block where 64- or "
            "128-row tiles pad it by up to 127 (cuBLAS's tiles there are as tight: 256x88, 64x72); the blocks "
            "(past 64 rows of any width from 64: `054`), the tile of W and K's runs from a model of the bytes each SM brings in and its MMAs; a producer "
            "warpgroup's TMA "
            "copies into a ring of 4-8 stages (200 KiB); a persistent grid, the ring running on from a tile into"
            " the next; an even count of row blocks in pairs (clusters of 2) sharing W's stages by TMA multicast"
            " (`053`); 2-4 runs of K on 128-row tiles that fill one wave are a thread-block cluster's blocks,"
            " adding their sums through shared memory in one launch (`052`), other runs summed by a second"
            " launch; c written transposed from the accumulators, at constant offsets from one pointer"
            " (`055`); float32 as TF32 (m64nNk8, b read K-major) where torch's precision allows TF32",
            dtypes=(*_F16, "tf32"),
            bias=True),
    Variant("matmul", "short_k",
            "K <= 16 (a low-rank adapter's up projection), where writing c is the work: a block per 128 columns "
            "keeps b's 16 x 128 slice in registers as `mma.sync` fragments and walks row tiles of 64, a and b "
            "read element by element through their strides (any layout and alignment, never copied), c staged "
            "in shared memory and stored in 16-byte chunks of whole rows", dtypes=_F16, max_k=16,
            shown_at=(4096, 4096, 16), bias=True),
)
