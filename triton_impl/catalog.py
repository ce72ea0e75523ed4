"""Every Triton variant of the three algorithms, declared once (``kernel_common.catalog.Variant``): its
idea, the dtypes and layout it takes, its caps and which is the default. The kernels and launches
live in each algorithm's module; all but the Gluon ones also run under Triton's interpreter."""

from kernel_common.catalog import F16 as _F16, F32 as _F32, FEW_ROWS_LONG_K, FLOATS as _FLOATS, I8 as _I8
from kernel_common.catalog import Variant
from triton_impl._arch import SM_90

RECORDS = (
    # ---- transpose ---------------------------------------------------------------------------------
    Variant("transpose", "per_row",
            "no tiling: a program per row, strided stores"),
    Variant("transpose", "blocked",
            "2-D block load, `tl.trans`, 2-D block store, tiles walked down the columns; block shape by "
            "element size and alignment; divisibility hints where rows are whole 16-byte vectors", default=True),
    Variant("transpose", "words",
            "the CUDA words idea in Triton for 1- and 2-byte elements (4- and 8-byte elements: the blocked "
            "tile): tiles of whole input rows 2k - 1, 2k and 2k + 1 paired by each output row's phase into "
            "4-byte words, so `tl.trans` and the stores move words; the partial words at a segment's ends "
            "element by element. 2- and 4-byte elements in unit-stride rows load words of two elements too (4"
            " and 8 bytes; 128 x 32 and 128 x 64 tiles): rows of one parity share a phase, so each output "
            "word is two halves of words loaded from two row tiles, and a column of phase 1 owns the tile's "
            "rows shifted up by one, so an interior tile's words are all whole and unmasked. The default for "
            "2-byte elements in unaligned rows of unit stride (4-byte ones move faster in blocked's tile), "
            f"from {SM_90['words_min_rows']} rows where the rows in are unaligned too (blocked leads on shorter "
            "output rows)"),
    Variant("transpose", "narrow",
            "the blocked kernel with a flat tile for a narrow side: its 1-16 elements (a power of two) by "
            "4096 / that of the long side, so a 3-row matrix fills its programs; 2-4 or 9-16 rows whose output "
            "rows are not whole 16-byte vectors put the tile in the output's order in registers and store "
            "it flat, in vectors; a side of 1 (the result is the elements in order) is one device copy, no "
            "kernel. The default where a side is at most 16"),
    # ---- gemv --------------------------------------------------------------------------------------
    Variant("gemv", "blocked_row",
            "BLOCK_M rows x BLOCK_K columns per step (16-bit rows of 512 or more 8x512 where those tiles make two"
            " waves of programs; else 4x2048 from K = 4096; below, 8x1024 for 16-bit, 16x512 for float32), float32"
            " tile accumulator, one reduction at the end", layout="row", default=True),
    Variant("gemv", "blocked_col",
            "the same kernel with tall tiles, coalesced down the columns", layout="col"),
    Variant("gemv", "split_k",
            "K split across programs, partials summed by a second kernel", layout="row", shown_at=FEW_ROWS_LONG_K),
    Variant("gemv", "split_k_last",
            "K split across programs in one launch: each stores its partial sums and counts itself in its row "
            "block's flag, and the last to count adds the block's partials in k order; the default over few row "
            "blocks",
            layout="row", shown_at=FEW_ROWS_LONG_K),
    Variant("gemv", "phased",
            "row-major A whose rows do not start on 16 bytes (an odd K): a tile's rows in 16 / itemsize "
            "sub-tiles of one phase each, read in windows that start on 16 bytes (whole-vector loads) against "
            "x shifted by the phase; the default for such rows where K <= 128 or its programs fill a wave", layout="row",
            shown_at=(245481, 67)),
    Variant("gemv", "phased_last",
            "phased's windows with K in pieces across programs, summed as split_k_last's in one launch: rows "
            "off 16 bytes read in vectors where few row blocks need K split to fill the GPU; the 16-bit default "
            "for such rows at 256 rows or more, K >= 16384, phased's programs at most half the SMs", layout="row",
            shown_at=(289, 31291)),
    # ---- matmul ------------------------------------------------------------------------------------
    Variant("matmul", "blocked",
            "tutorial-03 tile loop of `tl.dot`, one fixed config, row-major tile order; int32 (no dot): the "
            "tile product made elementwise and summed along K", bias=True, batch=True),
    Variant("matmul", "grouped",
            "the same kernel, grouped tile order (GROUP_M = 8) for L2 reuse, autotuned per element size; a "
            "batch of one-row or one-column products (decode's gathered experts) runs the GEMV kernel over the batch",
            bias=True, batch=True),
    Variant("matmul", "tma_persistent",
            "Hopper: host tensor descriptors, a persistent grid in grouped order (at most one program per SM,"
            " as few as keep its waves: a GPU at its power cap gives the busy SMs the clock the idle ones "
            "leave), its tiles' K loops one software pipeline (the next tile's loads in flight during this "
            "one's epilogue); 16-bit tiles 192 wide as two dots a k-slice (128 + 64 columns of b, each its own "
            "descriptor; their loops nested), where 128 or 256 would leave a wave part empty; "
            "`W.t()` read as K-major tiles; swap-AB tiles of 16-128 columns for few rows; "
            "operands whose rows are not 16-byte aligned read from one copy each (rows padded, each in its "
            "own major order), and such a c written by masked stores; a batch of 16-bit operands through 3-D "
            "descriptors (the batch the outer dimension), its products' tiles one persistent loop",
            dtypes=_FLOATS + _I8, default=True, bias=True, batch=_F16),
    Variant("matmul", "split_k",
            "the same kernel with K in slices, summed in a fixed order (bitwise repeatable): in the launch by "
            "each tile's last slice, or by a second kernel where that one SM's sum would outlast it; 16-bit "
            "products of c's few columns (up to 32; past 64 rows up to 128) on 64-row tiles as wide as c up to 64, "
            "in the slices that fill a wave",
            dtypes=_FLOATS + _I8, bias=True),
    Variant("matmul", "stream_k",
            "against wave quantization, in one launch: the TMA kernel's whole waves of tiles with K whole, "
            "then the k-slices of the tiles left over (with the wave before them where they are few) cut "
            "into even shares, one a program; a tile's parts hand their float32 sums to the program holding"
            " its last part (a slot and a flag each, in the stream's buffers), which adds them in order "
            "(bitwise repeatable)", dtypes=_FLOATS, bias=True),
    Variant("matmul", "tail_split",
            "against wave quantization: the rows whose tiles fill whole waves with K whole, the row blocks "
            "left over split along K (2-4 slices, summed in a fixed order) so that their tiles share the last"
            " wave; two launches of the same kernel on row slices of a and c", dtypes=_FLOATS + _I8, bias=True),
    Variant("matmul", "few_rows",
            "a few rows of a (decode) on CUDA cores, no dot: multiply-adds broadcast over a 3-D tile (rows of"
            " a x rows of W = b^T x 64 k) and summed over k once at the end, so W's rows are read along K "
            "(16-byte loads where b is K-major) and never staged; the next k step's loads in flight during "
            "this one's; K split into slices where the tiles alone leave SMs idle, each tile's slices added "
            "in a fixed order by its last slice in the same launch; one row of a against a row-major b in "
            "tiles up to 256 columns wide; one row of a against a K-major b runs this package's GEMV (`blocked_row` /"
            " `split_k_last`) on W = b^T. Any float dtype and strides; exact float32 whatever torch's precision "
            "setting", dtypes=_FLOATS, max_m=1024),
    Variant("matmul", "fma_ws",
            "exact float32 only, Hopper, in Gluon (Triton's dialect with explicit layouts; "
            "`triton_impl/_matmul_fma.py`): an 8x8 piece of the tile a thread (`tl.dot`'s own layout gives "
            "16x4), and a producer warp that issues the TMA copies into a ring of 3 stages, so the 8 warps of"
            " FMAs never wait at a barrier with it; a and b read row-major (one copy of an operand laid out "
            "otherwise), c through a descriptor or by masked stores; where the last wave of tiles would leave"
            " SMs idle, its tiles shared out in runs of k slices (stream-K) and their partial sums added in k"
            " order by a second kernel. No interpreter: GPU only. It runs at 0.93-0.95x cuBLAS at 4096^3 and "
            "8192^3, either layout of b (the float32 rows below): cuBLAS's float32 kernel is SASS scheduled "
            "by hand, and ptxas's schedule of ours stalls more at dispatch "
            "(`docs/decisions/014-exact-float32-triton.md`)", dtypes=_F32, gpu_only=True),
    Variant("matmul", "few_rows_ws",
            "exact float32, 5-64 rows of a against W = b^T, K-major (`W.t()`) or read from a row-major b's (k, n) "
            "tiles, in Gluon: a producer warp brings 16 k of a and of W a stage by TMA (4 stages); each consumer thread (4 warps up "
            "to 16 rows, else 8) reads 16 rows of a and 2 of W whole, every k in-thread, and sums each pair "
            "over the stage (no shuffle, no layout conversion); 16 x 256 or 16 x 512 tiles of c (forced past 64 "
            "rows, 64 x 128: the warps in 4 rows of 16), K split "
            "where the tiles are few (a fixed-order sum). Layouts no descriptor reads through one copy each "
            "(`_LayoutCopy`); Hopper only, not under the interpreter", dtypes=_F32, gpu_only=True, max_m=1024),
)
