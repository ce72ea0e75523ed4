// Matrix transpose: out (C x R, contiguous) = a (R x C)^T.
//
// The input is read through its strides (sr, sc in elements), so a .t() view or a slice with a
// step needs no copy. T is an unsigned integer of the element's size: transpose moves bits and
// never computes with them, so float16 and bfloat16 share the 2-byte instance, float32 and int32
// the 4-byte one, float64 the 8-byte one. Every index that can pass 2^31 is 64-bit.
//
// Launch geometry lives in cuda_ref/_transpose.py. Tiled kernels take a 1-D grid of tiles
// (gridDim.x allows 2^31 - 1 blocks; gridDim.y only 65535).

typedef long long i64;

// Origin (r0, c0) of this block's TILE_R x TILE_C tile, tiles numbered row-major.
template <int TILE_R, int TILE_C>
__device__ __forceinline__ void tile_origin(i64 C, i64& r0, i64& c0) {
    const i64 tiles_c = (C + TILE_C - 1) / TILE_C;
    const i64 t = blockIdx.x;
    r0 = (t / tiles_c) * TILE_R;
    c0 = (t % tiles_c) * TILE_C;
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
                                 i64 R, i64 C, i64 sr, i64 sc) {
    if (blockIdx.x != 0 || threadIdx.x != 0) return;
    for (i64 r = 0; r < R; ++r) copy_row(a, out, R, C, sr, sc, r);
}

// ---- per_row: one thread per input row. Neighbouring threads write neighbouring outputs
// (coalesced stores) but read addresses a whole row apart (uncoalesced loads). ----
template <typename T>
__global__ void transpose_per_row(const T* __restrict__ a, T* __restrict__ out,
                                  i64 R, i64 C, i64 sr, i64 sc) {
    const i64 r = blockIdx.x * (i64)blockDim.x + threadIdx.x;
    if (r < R) copy_row(a, out, R, C, sr, sc, r);
}

// ---- per_element: one thread per element, threadIdx.x along columns. Loads are coalesced;
// stores land R elements apart, one 32-byte sector per element. ----
template <typename T>
__global__ void transpose_per_element(const T* __restrict__ a, T* __restrict__ out,
                                      i64 R, i64 C, i64 sr, i64 sc) {
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
                                     i64 R, i64 C, i64 sr, i64 sc) {
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
                                          i64 R, i64 C, i64 sr, i64 sc) {
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

// ---- smem_tiled_vec: 16-byte accesses everywhere, no bank conflicts. With VEC elements per
// 16 bytes (4 floats, 8 halves, 2 doubles), each of 16 x 16 threads owns a VEC x VEC block of
// the tile: it loads VEC input rows as 16-byte vectors, transposes the block in registers, and
// stores VEC 16-byte vectors into a shared tile that already holds the transposed layout. After
// the barrier each thread reads 16-byte vectors along the transposed rows and stores them to
// global memory. Shared memory is addressed in 16-byte chunks, XOR-swizzled by row so that the
// 8 lanes of each quarter-warp hit 8 different chunk columns (all 32 banks) in both phases:
// padding cannot do that for 16-byte accesses (the scalar version with a padded 64-wide tile had
// 2-way conflicts that cost a third of its bandwidth). 0.95 of device copy at fp32 16384^2 on an
// H200, where every tile-shaped kernel stops (bench/NOTES.md, Transpose).
// `vec_in`: input rows 16-byte aligned with unit stride; `vec_out`: R a multiple of VEC. Edge
// tiles and other inputs take the scalar path through the same swizzled tile. ----
template <int VEC, int TILE>
__device__ __forceinline__ int swizzled(int row, int col) {  // element (row, col) of the T-tile
    return row * TILE + ((((col / VEC) ^ (row / VEC)) & 7) | ((col / VEC) & ~7)) * VEC + col % VEC;
}

// 1-byte elements move 8 at a time: 16 would make a 256 x 256 tile, 64 KiB of shared memory.
template <int BYTES> struct VecOf;
template <> struct VecOf<16> { using type = uint4; };
template <> struct VecOf<8> { using type = uint2; };

template <typename T>
__global__ void __launch_bounds__(256)  // no blocks-per-SM bound: forcing 32 registers gave 0.917 vs 0.95 (H200)
transpose_smem_tiled_vec(const T* __restrict__ a, T* __restrict__ out,
                         i64 R, i64 C, i64 sr, i64 sc, int vec_in, int vec_out) {
    constexpr int BYTES = sizeof(T) == 1 ? 8 : 16;
    constexpr int VEC = BYTES / sizeof(T), TILE = 16 * VEC;  // 64x64 fp32, 128x128 fp16 and int8, 32x32 fp64
    using V = typename VecOf<BYTES>::type;
    union Vec { V u; T v[VEC]; };
    __shared__ __align__(16) T tile_t[TILE * TILE];        // the tile, already transposed
    i64 r0, c0;
    tile_origin<TILE, TILE>(C, r0, c0);
    const int ty = threadIdx.x / 16, tx = threadIdx.x % 16;  // this thread's block: rows ty*VEC.., cols tx*VEC..
    const bool full = r0 + TILE <= R && c0 + TILE <= C;

    if (full && vec_in) {
        Vec in[VEC];
#pragma unroll
        for (int i = 0; i < VEC; ++i)
            in[i].u = *reinterpret_cast<const V*>(a + (r0 + ty * VEC + i) * sr + c0 + tx * VEC);
#pragma unroll
        for (int q = 0; q < VEC; ++q) {  // transposed row tx*VEC + q holds input column tx*VEC + q
            Vec o;
#pragma unroll
            for (int i = 0; i < VEC; ++i) o.v[i] = in[i].v[q];
            *reinterpret_cast<V*>(&tile_t[swizzled<VEC, TILE>(tx * VEC + q, ty * VEC)]) = o.u;
        }
    } else {
        for (int i = threadIdx.x; i < TILE * TILE; i += 256) {
            const int rr = i / TILE, cc = i % TILE;
            if (r0 + rr < R && c0 + cc < C)
                tile_t[swizzled<VEC, TILE>(cc, rr)] = a[(r0 + rr) * sr + (c0 + cc) * sc];
        }
    }
    __syncthreads();
    if (full && vec_out) {
#pragma unroll
        for (int p = 0; p < VEC; ++p) {
            const int oc = ty + 16 * p;  // output row within the tile
            const V v = *reinterpret_cast<const V*>(&tile_t[swizzled<VEC, TILE>(oc, tx * VEC)]);
            *reinterpret_cast<V*>(out + (c0 + oc) * R + r0 + tx * VEC) = v;
        }
    } else {
        for (int i = threadIdx.x; i < TILE * TILE; i += 256) {
            const int oc = i / TILE, orr = i % TILE;
            if (c0 + oc < C && r0 + orr < R) out[(c0 + oc) * R + r0 + orr] = tile_t[swizzled<VEC, TILE>(oc, orr)];
        }
    }
}
