// Matrix transpose: out (C x R, contiguous) = a (R x C)^T, for each of a batch of matrices.
//
// The input is read through its strides (sr, sc in elements; sb between matrices), so a .t()
// view or a slice with a step needs no copy. Matrix b of a batch is blockIdx.z (the launcher
// splits batches past gridDim.z's 65535); its output follows the previous one's. T is an
// unsigned integer of the element's size: transpose moves bits and never computes with them, so float16 and bfloat16 share the 2-byte instance, float32 and int32
// the 4-byte one, float64 the 8-byte one. Every index that can pass 2^31 is 64-bit.
//
// Launch geometry lives in cuda_ref/_transpose.py. Tiled kernels take a 1-D grid of tiles
// (gridDim.x allows 2^31 - 1 blocks; gridDim.y only 65535).

#include "transpose.cuh"

// Origin (r0, c0) of this block's TILE_R x TILE_C tile, tiles numbered row-major.
template <int TILE_R, int TILE_C>
__device__ __forceinline__ void tile_origin(i64 C, i64& r0, i64& c0) {
    const i64 tiles_c = (C + TILE_C - 1) / TILE_C;
    const i64 t = blockIdx.x;
    r0 = (t / tiles_c) * TILE_R;
    c0 = (t % tiles_c) * TILE_C;
}

// The same, tiles numbered down columns: consecutive blocks write consecutive segments of the
// same output rows (smem_tiled_vec: 0.95 -> 0.98 of copy at 16384^2, fp32 and fp16, H200), in
// bands of `group` columns of tiles, across a band before down it: the blocks in flight then read
// `group` tiles' width of each input row, where a matrix of more row tiles than blocks in flight
// (a tall one) would have them all read one tile's width of each row (group 1).
// (32-bit arithmetic: the tiles number gridDim.x < 2^31, a band at most all of them.)
__device__ __forceinline__ void tile_in_bands(unsigned tiles_r, unsigned tiles_c, unsigned group, i64& tr, i64& tc) {
    group = min(group, tiles_c);
    const unsigned band = group * tiles_r, first = blockIdx.x / band * group, in = blockIdx.x % band;
    const unsigned width = min(group, tiles_c - first);
    tr = in / width;
    tc = first + in % width;
}

template <int TILE>
__device__ __forceinline__ void tile_origin_down(i64 R, i64 C, int group, i64& r0, i64& c0) {
    i64 tr, tc;
    tile_in_bands((unsigned)((R + TILE - 1) / TILE), (unsigned)((C + TILE - 1) / TILE), group, tr, tc);
    r0 = tr * TILE;
    c0 = tc * TILE;
}

// Input row r becomes output column r, element by element: the work of one thread of per_row,
// and of the single thread of serial for each row in turn.
template <typename T>
__device__ __forceinline__ void copy_row(const T* __restrict__ a, T* __restrict__ out,
                                         i64 R, i64 C, i64 sr, i64 sc, i64 r) {
    for (i64 c = 0; c < C; ++c) out[c * R + r] = a[r * sr + c * sc];
}

// ---- serial: one thread does everything (a baseline to be ashamed of; the harness caps it) ----
template <typename T>
__global__ void transpose_serial(const T* __restrict__ a, T* __restrict__ out,
                                 i64 R, i64 C, i64 sr, i64 sc, i64 sb) {
    batch_matrix(a, out, R, C, sb);
    if (blockIdx.x != 0 || threadIdx.x != 0) return;
    for (i64 r = 0; r < R; ++r) copy_row(a, out, R, C, sr, sc, r);
}

// ---- per_row: one thread per input row. Neighbouring threads write neighbouring outputs
// (coalesced stores) but read addresses a whole row apart (uncoalesced loads). ----
template <typename T>
__global__ void transpose_per_row(const T* __restrict__ a, T* __restrict__ out,
                                  i64 R, i64 C, i64 sr, i64 sc, i64 sb) {
    batch_matrix(a, out, R, C, sb);
    const i64 r = blockIdx.x * (i64)blockDim.x + threadIdx.x;
    if (r < R) copy_row(a, out, R, C, sr, sc, r);
}

// ---- per_element: one thread per element, threadIdx.x along columns. Loads are coalesced;
// stores land R elements apart, one 32-byte sector per element. ----
template <typename T>
__global__ void transpose_per_element(const T* __restrict__ a, T* __restrict__ out,
                                      i64 R, i64 C, i64 sr, i64 sc, i64 sb) {
    batch_matrix(a, out, R, C, sb);
    const i64 c = blockIdx.x * (i64)blockDim.x + threadIdx.x;
    if (c >= C) return;
    for (i64 r = blockIdx.y * (i64)blockDim.y + threadIdx.y; r < R; r += (i64)gridDim.y * blockDim.y)
        out[c * R + r] = a[r * sr + c * sc];
}

// ---- smem_tiled (PAD = 0) and smem_tiled_padded (PAD = 1): seed 003's 32x32 tile, 32x32
// threads, one element each. The tile is read from global row-wise and written to global
// row-wise, both coalesced; the transpose happens in shared memory. Reading tile[tx][ty]
// walks a column: with 32 words per row all 32 lanes hit one bank (32-way conflict); one
// padding word per row puts them in 32 different banks. Bounds are checked per element and
// the barrier is outside every branch, so any R x C works. ----
template <typename T, int PAD>
__global__ void transpose_smem_tiled(const T* __restrict__ a, T* __restrict__ out,
                                     i64 R, i64 C, i64 sr, i64 sc, i64 sb) {
    batch_matrix(a, out, R, C, sb);
    constexpr int TILE = 32;
    __shared__ T tile[TILE][TILE + PAD];
    i64 r0, c0;
    tile_origin<TILE, TILE>(C, r0, c0);
    const int tx = threadIdx.x, ty = threadIdx.y;

    if (r0 + ty < R && c0 + tx < C) tile[ty][tx] = a[(r0 + ty) * sr + (c0 + tx) * sc];
    __syncthreads();
    // Output row c0 + ty, column r0 + tx.
    if (c0 + ty < C && r0 + tx < R) out[(c0 + ty) * R + r0 + tx] = tile[tx][ty];
}

// ---- smem_tiled_rows: the padded 32x32 tile moved by 32x8 threads, 4 elements each
// (NVIDIA's transposeNoBankConflicts). Four independent loads per thread are in flight before
// the first store, and a quarter as many blocks amortise the index arithmetic. ----
template <typename T>
__global__ void transpose_smem_tiled_rows(const T* __restrict__ a, T* __restrict__ out,
                                          i64 R, i64 C, i64 sr, i64 sc, i64 sb) {
    batch_matrix(a, out, R, C, sb);
    constexpr int TILE = 32, ROWS = 8;
    __shared__ T tile[TILE][TILE + 1];
    i64 r0, c0;
    tile_origin<TILE, TILE>(C, r0, c0);
    const int tx = threadIdx.x, ty = threadIdx.y;

#pragma unroll
    for (int j = 0; j < TILE; j += ROWS)
        if (r0 + ty + j < R && c0 + tx < C) tile[ty + j][tx] = a[(r0 + ty + j) * sr + (c0 + tx) * sc];
    __syncthreads();
#pragma unroll
    for (int j = 0; j < TILE; j += ROWS)
        if (c0 + ty + j < C && r0 + tx < R) out[(c0 + ty + j) * R + r0 + tx] = tile[tx][ty + j];
}

// A read-only load that asks L2 to fetch the 128 bytes around it: a words tile reads 64 bytes
// (fp16) or 128 (fp32) of each row, and the tiles beside it read the rest (H100, 12345x6789 /
// 4097x4095: fp32 0.89 / 0.89 -> 0.92 / 0.91 of copy, fp16 0.83 / 0.77 -> 0.85 / 0.75; a 256-byte
// hint: 0.92 / 0.89 and 0.85 / 0.74; docs/decisions/006-transpose-defaults.md).
template <typename T>
__device__ __forceinline__ T ld_l2_128(const T* p) {
    if constexpr (sizeof(T) == 2) {
        unsigned short x;
        asm("ld.global.nc.L2::128B.u16 %0, [%1];" : "=h"(x) : "l"(p));
        return x;
    } else if constexpr (sizeof(T) == 4) {
        unsigned x;
        asm("ld.global.nc.L2::128B.u32 %0, [%1];" : "=r"(x) : "l"(p));
        return x;
    } else {
        return *p;
    }
}

template <int BYTES> struct WordOf { using type = unsigned; };
template <> struct WordOf<8> { using type = unsigned long long; };

// ---- smem_tiled_words: tall tiles (TILE_R input rows x TILE_C columns, numbered down the
// columns) for rows at any alignment, the output rows stored in 4-byte words (8-byte for 8-byte
// elements). Tall, because each output row's segment is TILE_R elements: a row that starts
// mid-sector pays a partial sector at each end of few long segments (smem_tiled_rows writes 32
// elements a segment). Words, because a word holds PACK = 4 / sizeof(T) consecutive elements of
// an output row, that is, the same column of PACK consecutive input rows: each thread loads its
// column element by element down SPAN rows and packs words in registers, so shared memory and
// the global stores see whole words. Output row c starts p elements past a word boundary (p
// alternates between rows when R is odd); its word k then holds tile rows PACK * k - p ..., so a
// thread loads PACK - 1 rows above its span and packs by its column's p. The partial words at the
// two ends of a row's segment go element by element. For 2-byte elements that is 2 load, 1 shared
// store, 1 shared load and 1 global store instructions per 128 bytes, where element by element
// takes 8 (H100, 12345x6789 fp16: 0.82 of copy against 0.65 for the element-wise tall tile and
// 0.76 for smem_tiled_vec's shifted vectors, 0.85 with ld_l2_128's hint); for 4- and 8-byte
// elements PACK is 1 and the kernel is the element-wise tall tile (fp32 0.89, 0.92 with the
// hint; docs/decisions/006-transpose-defaults.md). ----
template <typename T, int TILE_R, int TILE_C>
__global__ void __launch_bounds__(256) transpose_smem_tiled_words(const T* __restrict__ a, T* __restrict__ out,
                                                                  i64 R, i64 C, i64 sr, i64 sc, i64 sb) {
    batch_matrix(a, out, R, C, sb);
    using W = typename WordOf<sizeof(T)>::type;
    constexpr int PACK = sizeof(W) / sizeof(T), BITS = 8 * sizeof(T);
    constexpr int GROUPS = 256 / TILE_C, SPAN = TILE_R / GROUPS, LEAD = PACK - 1;
    constexpr int WORDS = TILE_R / PACK + (PACK > 1);  // + the word a shifted row spills into
    static_assert(256 % TILE_C == 0 && TILE_R % GROUPS == 0 && SPAN % PACK == 0, "whole words per thread");
    __shared__ W tile[TILE_C][WORDS | 1];  // an odd row stride in words: a warp's columns hit 32 banks
    const i64 tiles_r = (R + TILE_R - 1) / TILE_R;
    const i64 r0 = (blockIdx.x % tiles_r) * TILE_R, c0 = (blockIdx.x / tiles_r) * TILE_C;
    const int cc = threadIdx.x % TILE_C, g = threadIdx.x / TILE_C;
    // p of output row c0 + cc: its segment's first element past a word boundary
    auto phase_of = [&](i64 c) {
        return (int)((reinterpret_cast<unsigned long long>(out + c * R + r0) / sizeof(T)) % PACK);
    };

    if (c0 + cc < C) {
        T v[LEAD + SPAN];  // tile rows g * SPAN - LEAD ... g * SPAN + SPAN - 1 of column cc
        const i64 rs = r0 + g * SPAN - LEAD;
        const T* src = a + rs * sr + (c0 + cc) * sc;
        if (rs >= 0 && rs + LEAD + SPAN <= R) {  // (rows above r0 load too: their positions are never stored)
#pragma unroll
            for (int j = 0; j < LEAD + SPAN; ++j, src += sr) v[j] = ld_l2_128(src);
        } else {
#pragma unroll
            for (int j = 0; j < LEAD + SPAN; ++j, src += sr) v[j] = rs + j >= 0 && rs + j < R ? *src : T(0);
        }
        const int p = phase_of(c0 + cc);
        // word k = g * SPAN / PACK + i holds tile rows PACK * k - p + e, e < PACK: v[LEAD + PACK * i - p + e]
        auto word = [&](int i) {
            W w = 0;
#pragma unroll
            for (int s = 0; s < PACK; ++s) {
                W x = 0;
#pragma unroll
                for (int e = 0; e < PACK; ++e) {
                    const int j = LEAD + PACK * i - s + e;
                    if (j < LEAD + SPAN) x |= (W)v[j] << (BITS * e);  // (rows past the span: the next tile's)
                }
                if (p == s) w = x;
            }
            return w;
        };
#pragma unroll
        for (int i = 0; i < SPAN / PACK; ++i) tile[cc][g * (SPAN / PACK) + i] = word(i);
        if (PACK > 1 && g == GROUPS - 1) tile[cc][TILE_R / PACK] = word(SPAN / PACK);
    }
    __syncthreads();
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int n = (int)min((i64)TILE_R, R - r0);  // the output positions this tile holds: [r0, r0 + n)
    for (int m = warp; m < TILE_C && c0 + m < C; m += 8) {
        const int p = phase_of(c0 + m);
        T* dst = out + (c0 + m) * R + r0 - p + PACK * lane;  // word `lane` of the row's segment: aligned
#pragma unroll
        for (int k0 = 0; k0 < WORDS; k0 += 32) {
            const int k = k0 + lane, pos = PACK * k - p;  // pos: the word's first element, from r0
            if (k >= WORDS) break;
            const W w = tile[m][k];
            if (pos >= 0 && pos + PACK <= n) {
                *reinterpret_cast<W*>(dst + PACK * k0) = w;
            } else {
#pragma unroll
                for (int e = 0; e < PACK; ++e)
                    if (pos + e >= 0 && pos + e < n) dst[PACK * k0 + e] = T(w >> (BITS * e));
            }
        }
    }
}

// ---- smem_tiled_vec: 16-byte accesses everywhere, no bank conflicts. With VEC elements per
// 16 bytes (4 floats, 8 halves, 2 doubles), each of 16 x 16 threads owns a VEC x VEC block of
// the tile: it loads VEC input rows as 16-byte vectors, transposes the block in registers, and
// stores VEC 16-byte vectors into a shared tile that already holds the transposed layout. After
// the barrier each thread reads 16-byte vectors along the transposed rows and stores them to
// global memory. Shared memory is addressed in 16-byte chunks, XOR-swizzled by row so that the
// 8 lanes of each quarter-warp hit 8 different chunk columns (all 32 banks) in both phases:
// padding cannot do that for 16-byte accesses (the scalar version with a padded 64-wide tile had
// 2-way conflicts that cost a third of its bandwidth). Tiles go down the columns, so the blocks
// in flight write long runs of the same output rows: 0.98 of device copy at fp32 and fp16
// 16384^2 on an H200 (0.95 in row order, docs/decisions/006-transpose-defaults.md).
//
// Rows that do not start on a 16-byte boundary (a row length that is no multiple of VEC, an
// offset view) move in aligned 16-byte vectors too. SHIFT_IN: a row's tile segment [c0, c0 + TILE)
// lies `ph` elements past a boundary; each lane loads the two aligned chunks that hold its VEC
// elements and shifts the pair by ph elements (a funnel shift). SHIFT_OUT: the mirror image on
// the output rows; each lane stores the aligned chunk that straddles its tile chunk and its left
// neighbour's, and the VEC elements at the two ends of the row's segment, which belong half to
// the neighbouring tiles' chunks, go one per lane. Without the flags every row is aligned.
// `vec_in`: unit stride along input rows; a strided input loads element by element into the
// same swizzled tile. Stores are vectors always (the output is contiguous). ----
template <int VEC, int TILE>
__device__ __forceinline__ int swizzled(int row, int col) {  // element (row, col) of the T-tile
    return row * TILE + ((((col / VEC) ^ (row / VEC)) & 7) | ((col / VEC) & ~7)) * VEC + col % VEC;
}

// Bytes [sh, sh + BYTES) of the pair lo:hi, 0 <= sh < BYTES (sh a multiple of sizeof(T)).
// The word index is a run-time value: selects over unrolled constants keep the words in registers.
template <typename T>
__device__ __forceinline__ typename Chunk<T>::V funnel(const typename Chunk<T>::V& lo, const typename Chunk<T>::V& hi,
                                                       int sh) {
    constexpr int N = Chunk<T>::WORDS;
    unsigned w[2 * N];
#pragma unroll
    for (int k = 0; k < N; ++k) { w[k] = word(lo, k); w[N + k] = word(hi, k); }
    const int d = sh >> 2, bits = (sh & 3) * 8;
    typename Chunk<T>::V r;
#pragma unroll
    for (int k = 0; k < N; ++k) {
        unsigned x = w[k], y = w[k + 1];
#pragma unroll
        for (int s = 1; s < N; ++s)
            if (d == s) { x = w[k + s]; y = w[k + s + 1]; }
        set_word(r, k, __funnelshift_r(x, y, bits));
    }
    return r;
}

// The next lane's vector, within groups of 16 lanes.
__device__ __forceinline__ uint4 shfl_down16(const uint4& v) {
    return make_uint4(__shfl_down_sync(0xffffffffu, v.x, 1, 16), __shfl_down_sync(0xffffffffu, v.y, 1, 16),
                      __shfl_down_sync(0xffffffffu, v.z, 1, 16), __shfl_down_sync(0xffffffffu, v.w, 1, 16));
}
__device__ __forceinline__ uint2 shfl_down16(const uint2& v) {
    return make_uint2(__shfl_down_sync(0xffffffffu, v.x, 1, 16), __shfl_down_sync(0xffffffffu, v.y, 1, 16));
}

// Elements p lies past a BYTES boundary.
template <typename T>
__device__ __forceinline__ int phase(const T* p) {
    return (int)((reinterpret_cast<unsigned long long>(p) % Chunk<T>::BYTES) / sizeof(T));
}

template <typename T, bool SHIFT_IN, bool SHIFT_OUT>
// Aligned: no blocks-per-SM bound (forcing 32 registers gave 0.917 of copy vs 0.95, H200).
// Shifted: two blocks, else ptxas holds the int8 instance to 64 registers and spills (three:
// 80 registers for 16-bit, 0.74 of copy at 12345x6789 against 0.76, H100).
__global__ void __launch_bounds__(256, SHIFT_IN ? 2 : 0)  // (0: no bound)
transpose_smem_tiled_vec(const T* __restrict__ a, T* __restrict__ out,
                         i64 R, i64 C, i64 sr, i64 sc, i64 sb, int vec_in, int group) {
    batch_matrix(a, out, R, C, sb);
    using V = typename Chunk<T>::V;
    constexpr int VEC = Chunk<T>::VEC, TILE = 16 * VEC;  // 64x64 fp32, 128x128 fp16 and int8, 32x32 fp64
    __shared__ __align__(16) T tile_t[TILE * TILE];        // the tile, already transposed
    i64 r0, c0;
    tile_origin_down<TILE>(R, C, group, r0, c0);
    const int ty = threadIdx.x / 16, tx = threadIdx.x % 16;  // this thread's block: rows ty*VEC.., cols tx*VEC..

    if (vec_in) {
        // Every load is issued before the first shift. Edge tiles stay on vectors too (one at a
        // time they were the run's tail): rows past R load row R - 1 again (never stored), and
        // chunks that leave the row are read element by element.
        Elems<T> in[VEC];
        const bool interior = r0 + TILE <= R && (SHIFT_IN ? c0 >= VEC && c0 + TILE + VEC <= C : c0 + TILE <= C);
        if (SHIFT_IN) {
            // The right-hand chunk of each pair: loaded again (4-byte elements), or taken from
            // the next lane, lane 15 loading the one past the tile (16-bit: 0.62 -> 0.73 of copy
            // at 12344x6789, fp32 0.72 either way; H200).
            constexpr bool SHUFFLE = sizeof(T) == 2;
            V hi[VEC];
            int ph[VEC];
#pragma unroll
            for (int i = 0; i < VEC; ++i) {
                const T* row = a + min(r0 + ty * VEC + i, R - 1) * sr;
                ph[i] = phase(row + c0);
                const i64 col = c0 - ph[i] + tx * VEC;  // aligned: the chunk holding element c0 + tx * VEC
                in[i].u = interior ? load_global(row + col) : load_chunk(row, C, col);
                if (!SHUFFLE || tx == 15) hi[i] = interior ? load_global(row + col + VEC) : load_chunk(row, C, col + VEC);
            }
            if (SHUFFLE) {
#pragma unroll
                for (int i = 0; i < VEC; ++i) {
                    const V next = shfl_down16(in[i].u);
                    if (tx != 15) hi[i] = next;
                }
            }
#pragma unroll
            for (int i = 0; i < VEC; ++i)
                if (ph[i]) in[i].u = funnel<T>(in[i].u, hi[i], ph[i] * (int)sizeof(T));
        } else {
#pragma unroll
            for (int i = 0; i < VEC; ++i) {
                const T* row = a + min(r0 + ty * VEC + i, R - 1) * sr;
                in[i].u = interior ? load_global(row + c0 + tx * VEC) : load_chunk(row, C, c0 + tx * VEC);
            }
        }
#pragma unroll
        for (int q = 0; q < VEC; ++q) {  // transposed row tx*VEC + q holds input column tx*VEC + q
            Elems<T> o;
#pragma unroll
            for (int i = 0; i < VEC; ++i) o.v[i] = in[i].v[q];
            store(&tile_t[swizzled<VEC, TILE>(tx * VEC + q, ty * VEC)], o.u);
        }
    } else {
        // element by element, BATCH loads in flight per thread (one at a time, a 128 x 128 fp16
        // tile waited out 64 load latencies, 30 us on an H200). A thread's elements share a
        // column, STEP rows apart.
        constexpr int STEP = 256 / TILE, PER = TILE / STEP, BATCH = PER < 8 ? PER : 8;
        const int cc = threadIdx.x % TILE, rr0 = threadIdx.x / TILE;
        const bool col_in = c0 + cc < C;
        const T* p = a + (r0 + rr0) * sr + (c0 + cc) * sc;
        for (int k0 = 0; k0 < PER; k0 += BATCH) {
            T v[BATCH];
#pragma unroll
            for (int k = 0; k < BATCH; ++k)
                v[k] = col_in && r0 + rr0 + (k0 + k) * STEP < R ? p[(i64)(k0 + k) * STEP * sr] : T(0);
#pragma unroll
            for (int k = 0; k < BATCH; ++k) tile_t[swizzled<VEC, TILE>(cc, rr0 + (k0 + k) * STEP)] = v[k];
        }
    }
    __syncthreads();
    const int n = (int)min((i64)TILE, R - r0);  // the output positions this tile holds: [r0, r0 + n)
#pragma unroll
    for (int p = 0; p < VEC; ++p) {
        const int oc = ty + 16 * p;  // output row within the tile
        if (c0 + oc >= C) break;     // (the same for the 16 lanes of the row, and for every later p)
        T* row = out + (c0 + oc) * R + r0;
        const V cur = load(&tile_t[swizzled<VEC, TILE>(oc, tx * VEC)]);
        const int ph = SHIFT_OUT ? phase(row) : 0;
        if (!ph) {
            store_chunk(row, tx * VEC, n, cur);
        } else {
            // aligned chunk tx: the left neighbour's last ph elements, then this one's first VEC - ph
            const V prev = load(&tile_t[swizzled<VEC, TILE>(oc, (tx + 15) % 16 * VEC)]);
            if (tx > 0) store_chunk(row, tx * VEC - ph, n, funnel<T>(prev, cur, (int)sizeof(T) * (VEC - ph)));
            // the segment's first VEC - ph and last ph elements, one per lane
            if (tx < VEC) {
                const int pos = tx < VEC - ph ? tx : TILE - VEC + tx;
                if (pos < n) row[pos] = tile_t[swizzled<VEC, TILE>(oc, pos)];
            }
        }
    }
}

// A 16-byte read-only load that asks L2 to fetch the BYTES around it (128 or 256): a sheared
// tile reads 144 bytes of each row (64 columns of fp16), and the tiles beside it read the rest.
template <int BYTES>
__device__ __forceinline__ uint4 ld_l2_vec(const void* p) {
    uint4 v;
    if constexpr (BYTES == 256)
        asm("ld.global.nc.L2::256B.v4.u32 {%0, %1, %2, %3}, [%4];" : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p));
    else
        asm("ld.global.nc.L2::128B.v4.u32 {%0, %1, %2, %3}, [%4];" : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p));
    return v;
}

// ---- smem_tiled_sheared: every global access an aligned chunk (16 bytes; 8 for 1-byte
// elements), on rows at any alignment, with no shifts in registers. The tile is sheared instead:
// input row r's part is the aligned chunks that hold its columns [c0, c0 + TILE_C), one chunk
// more than TILE_C / VEC, copied to shared memory as they are, so column c of row r sits e_r
// places right of where it would sit in an aligned row (e_r: the row's phase at c0). Output row
// c takes from this tile the rows r whose r + t_c lies in [r0, r0 + TILE_R), t_c being its phase
// within a 32-byte sector, so its part is whole chunks in whole sectors (16-byte phases left a
// partial sector at each end of a segment: 0.834 against 0.826 of copy); the tile holds S rows
// above r0 for that. Each element belongs to one tile (the one holding r + t_c and c), and each
// output chunk is gathered by one thread element by element down the tile's rows: e_r repeats
// every VEC rows, so a thread's chunks are the same places apart. Every VEC rows the shared row
// pitch steps one chunk further, which spreads the lanes of an output row over the banks (2-way
// conflicts remain on odd shapes). Loads past the matrix (its column edges) go element by element;
// so does the whole input where its rows are strided (vec_in = 0). H100, fp16 12345x6789: 0.915
// of copy (smem_tiled_words 0.856); 0.888 without the L2 hint; before the cuts in index arithmetic
// (32-bit tile and phase arithmetic, stepped row pointers, an interior path without checks) it
// issued 79M instructions and ran 0.83 (docs/decisions/006-transpose-defaults.md). ----
template <typename T, int TILE_R, int TILE_C>
__global__ void __launch_bounds__(256) transpose_smem_tiled_sheared(const T* __restrict__ a, T* __restrict__ out,
                                                                    i64 R, i64 C, i64 sr, i64 sc, i64 sb, int vec_in, int group) {
    batch_matrix(a, out, R, C, sb);
    using V = typename Chunk<T>::V;
    constexpr int VEC = Chunk<T>::VEC, S = 32 / sizeof(T);  // S: a 32-byte sector's elements
    constexpr int ROWS = TILE_R + S, CHUNKS = TILE_C / VEC + 1, P = TILE_C + 2 * VEC;
    constexpr int RPP = 256 / CHUNKS, PASSES = (ROWS + RPP - 1) / RPP;  // input rows a pass of the block
    constexpr int LPC = 256 / TILE_C, PER = TILE_R / VEC / LPC;        // lanes an output row, its chunks a lane
    static_assert(256 % TILE_C == 0 && TILE_R % (VEC * LPC) == 0 && TILE_R % S == 0, "whole chunks per thread");
    __shared__ __align__(16) T tile[ROWS * P + ROWS];
    auto at = [](int rho) { return rho * P + rho / VEC * VEC; };  // tile row rho: input row r0 - S + rho
    i64 tr, tc;
    tile_in_bands((unsigned)((R + S - 1 + TILE_R - 1) / TILE_R), (unsigned)((C + TILE_C - 1) / TILE_C), group, tr, tc);
    const i64 r0 = tr * TILE_R, c0 = tc * TILE_C;
    // e_r, row r's phase at c0: low bits only, so 32-bit arithmetic will do (r may be < 0)
    const unsigned a_c0 = (unsigned)(reinterpret_cast<unsigned long long>(a) / sizeof(T)) + (unsigned)c0;
    auto e_of = [&](i64 r) { return vec_in ? (int)((a_c0 + (unsigned)r * (unsigned)sr) % VEC) : 0; };
    // Interior tiles: every chunk of every row in the matrix, every output chunk whole.
    const bool interior = vec_in && r0 >= S && r0 + TILE_R <= R && c0 >= VEC && c0 + TILE_C + VEC <= C;

    // Thread: chunk k of rows rho0 + RPP * l. Every load is issued before the first shared store.
    // Rows above r0 that no output row of the tile reaches, and a last chunk past the tile's
    // columns (e_r = 0), are not loaded: on aligned rows that is all of both (16384^2 fp16: 0.86
    // -> 0.94 of copy); on odd shapes nearly every one is needed.
    const int k = threadIdx.x % CHUNKS, rho0 = threadIdx.x / CHUNKS;
    const int t_max = R % S ? S - 1 : (int)((reinterpret_cast<unsigned long long>(out + c0 * R + r0) / sizeof(T)) % S);
    auto wanted = [&](int rho, int e) { return rho >= S - t_max && rho < ROWS && (k < CHUNKS - 1 || e); };
    const bool loads = threadIdx.x < RPP * CHUNKS;
    V in[PASSES];
    bool got[PASSES];
    if (interior) {
        // row pointers step by RPP rows, phases by RPP rows' worth of elements (mod VEC)
        const T* p = a + (r0 - S + rho0) * sr + c0 + k * VEC;
        const unsigned e0 = a_c0 + (unsigned)(r0 - S + rho0) * (unsigned)sr, de = RPP * (unsigned)sr;
        const i64 step = RPP * sr;
#pragma unroll
        for (int l = 0; l < PASSES; ++l, p += step) {
            const int e = (int)((e0 + de * l) % VEC);
            got[l] = loads && wanted(rho0 + RPP * l, e);
            if (got[l]) {
                if constexpr (sizeof(V) == 16) in[l] = ld_l2_vec<sizeof(T) <= 2 ? 256 : 128>(p - e);
                else in[l] = load_global(p - e);
            }
        }
    } else {
#pragma unroll
        for (int l = 0; l < PASSES; ++l) {
            const i64 r = r0 - S + rho0 + RPP * l;
            const i64 col = c0 - e_of(r) + k * VEC;
            got[l] = loads && wanted(rho0 + RPP * l, e_of(r)) && r >= 0 && r < R;
            if (!got[l]) continue;
            const T* row = a + r * sr;
            if (vec_in && col >= 0 && col + VEC <= C) {
                in[l] = load_global(row + col);
            } else {
                Elems<T> e;
#pragma unroll
                for (int x = 0; x < VEC; ++x) e.v[x] = col + x >= 0 && col + x < C ? row[(col + x) * sc] : T(0);
                in[l] = e.u;
            }
        }
    }
#pragma unroll
    for (int l = 0; l < PASSES; ++l)
        if (got[l]) store(&tile[at(rho0 + RPP * l) + k * VEC], in[l]);
    __syncthreads();

    const int m = threadIdx.x / LPC, q0 = threadIdx.x % LPC;  // output row c0 + m, chunks q0 + LPC * i
    if (c0 + m >= C) return;
    T* dst = out + (c0 + m) * R;
    const int t = (int)((reinterpret_cast<unsigned long long>(dst + r0) / sizeof(T)) % S);
    dst += r0 - t;  // chunk q: output positions r0 - t + VEC * q ..., the segment 32-byte aligned
    const T* src[VEC];  // element j of chunk 0 (input row r0 - t + j) in the tile; chunk q adds VEC * (P + 1) * q
#pragma unroll
    for (int j = 0; j < VEC; ++j) src[j] = tile + at(S - t + j) + m + e_of(r0 - t + j);
    auto gather = [&](int q) {
        Elems<T> v;
        if constexpr (sizeof(T) == 2) {  // one PRMT a word (element by element, the compiler masks and shifts)
#pragma unroll
            for (int w = 0; w < VEC / 2; ++w)
                set_word(v.u, w, __byte_perm(src[2 * w][VEC * (P + 1) * q], src[2 * w + 1][VEC * (P + 1) * q], 0x5410));
        } else {
#pragma unroll
            for (int j = 0; j < VEC; ++j) v.v[j] = src[j][VEC * (P + 1) * q];
        }
        return v;
    };
    if (interior) {
#pragma unroll
        for (int i = 0; i < PER; ++i) store_global(dst + VEC * (q0 + LPC * i), gather(q0 + LPC * i).u);
        return;
    }
#pragma unroll
    for (int i = 0; i < PER; ++i) {
        const int q = q0 + LPC * i;
        const Elems<T> v = gather(q);
        const i64 pos = r0 - t + VEC * q;  // the chunk's first output position (input row)
        if (pos >= 0 && pos + VEC <= R) {
            store_global(dst + VEC * q, v.u);
        } else {
#pragma unroll
            for (int j = 0; j < VEC; ++j)
                if (pos + j >= 0 && pos + j < R) dst[VEC * q + j] = v.v[j];
        }
    }
}
