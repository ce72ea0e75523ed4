// Matrix transpose: out (C x R, contiguous) = a (R x C)^T.
//
// The input is read through its strides (sr, sc in elements), so a .t() view or a slice with a
// step needs no copy. T is an unsigned integer of the element's size: transpose moves bits and
// never computes with them, so float16 and bfloat16 share the 2-byte instance, float32 and int32
// the 4-byte one, float64 the 8-byte one. Every index that can pass 2^31 is 64-bit.
//
// Launch geometry lives in cuda_ref/transpose.py. Tiled kernels take a 1-D grid of tiles
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

// Grouped tile order: GROUP row-tiles at a time, walked column by column, so the blocks that
// run together cover a GROUP-tall band of whole tiles: each input row is read and each output
// row written in runs of GROUP * tile-width elements instead of one tile's width, which keeps
// DRAM pages open (the same idea as GROUP_M in a matmul's launch order).
template <int TILE_R, int TILE_C, int GROUP>
__device__ __forceinline__ void tile_origin_grouped(i64 R, i64 C, i64& r0, i64& c0) {
    const i64 tiles_r = (R + TILE_R - 1) / TILE_R, tiles_c = (C + TILE_C - 1) / TILE_C;
    const i64 t = blockIdx.x, per_group = (i64)GROUP * tiles_c;
    const i64 first_r = (t / per_group) * GROUP;
    const i64 rows = min((i64)GROUP, tiles_r - first_r);
    const i64 in_group = t % per_group;
    r0 = (first_r + in_group % rows) * TILE_R;
    c0 = (in_group / rows) * TILE_C;
}

// ---- serial: one thread does everything (a baseline to be ashamed of; the harness caps it) ----
template <typename T>
__global__ void transpose_serial(const T* __restrict__ a, T* __restrict__ out,
                                 i64 R, i64 C, i64 sr, i64 sc) {
    if (blockIdx.x != 0 || threadIdx.x != 0) return;
    for (i64 r = 0; r < R; ++r)
        for (i64 c = 0; c < C; ++c)
            out[c * R + r] = a[r * sr + c * sc];
}

// ---- per_row: one thread per input row. Neighbouring threads write neighbouring outputs
// (coalesced stores) but read addresses a whole row apart (uncoalesced loads). ----
template <typename T>
__global__ void transpose_per_row(const T* __restrict__ a, T* __restrict__ out,
                                  i64 R, i64 C, i64 sr, i64 sc) {
    const i64 r = blockIdx.x * (i64)blockDim.x + threadIdx.x;
    if (r >= R) return;
    for (i64 c = 0; c < C; ++c)
        out[c * R + r] = a[r * sr + c * sc];
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

// ---- smem_tiled_vec: a TILE_R x TILE_C tile, THREADS threads, 16-byte loads and stores. Each
// thread moves 16 bytes per access (4 floats, 8 halves, 2 doubles), with all of its loads issued
// before its first shared-memory store. Vector accesses need a full tile and aligned rows:
// `vec_in` says the input's rows are 16-byte aligned and unit-stride, `vec_out` the same of the
// output rows (R a multiple of the vector). Edge tiles and unaligned inputs take the scalar
// path. Both branches are uniform across the block, and the barrier sits between them. ----
template <typename T, int TILE_R, int TILE_C, int THREADS, int GROUP>
__global__ void __launch_bounds__(THREADS)
transpose_smem_tiled_vec(const T* __restrict__ a, T* __restrict__ out,
                         i64 R, i64 C, i64 sr, i64 sc, int vec_in, int vec_out) {
    constexpr int VEC = 16 / sizeof(T);                  // elements per 16-byte access
    constexpr int TPR_IN = TILE_C / VEC, RPP_IN = THREADS / TPR_IN;    // threads per row, rows per pass
    constexpr int TPR_OUT = TILE_R / VEC, RPP_OUT = THREADS / TPR_OUT;
    constexpr int PASSES_IN = TILE_R / RPP_IN, PASSES_OUT = TILE_C / RPP_OUT;
    constexpr int PAD = sizeof(T) >= 4 ? 1 : 2;          // one 4-byte (or 8-byte) word per row
    static_assert(PASSES_IN >= 1 && PASSES_OUT >= 1, "tile too small for the block");
    // The union makes each access one 128-bit instruction (LDG.128 / STG.128); copying a
    // struct of T[VEC] instead compiled to four 4-byte stores per vector (seen in the SASS).
    union Vec { uint4 u; T v[VEC]; };

    __shared__ T tile[TILE_R][TILE_C + PAD];
    i64 r0, c0;
    tile_origin_grouped<TILE_R, TILE_C, GROUP>(R, C, r0, c0);
    const int tid = threadIdx.x;
    const bool full = r0 + TILE_R <= R && c0 + TILE_C <= C;

    if (full && vec_in) {
        const int tr = tid / TPR_IN, tc = (tid % TPR_IN) * VEC;
        Vec buf[PASSES_IN];
#pragma unroll
        for (int p = 0; p < PASSES_IN; ++p)
            buf[p].u = *reinterpret_cast<const uint4*>(a + (r0 + tr + p * RPP_IN) * sr + c0 + tc);
#pragma unroll
        for (int p = 0; p < PASSES_IN; ++p)
#pragma unroll
            for (int j = 0; j < VEC; ++j) tile[tr + p * RPP_IN][tc + j] = buf[p].v[j];
    } else {
        for (int i = tid; i < TILE_R * TILE_C; i += THREADS) {
            const int rr = i / TILE_C, cc = i % TILE_C;
            if (r0 + rr < R && c0 + cc < C) tile[rr][cc] = a[(r0 + rr) * sr + (c0 + cc) * sc];
        }
    }
    __syncthreads();
    // Output tile: TILE_C rows (input columns c0..), TILE_R columns (input rows r0..).
    if (full && vec_out) {
        const int tr = tid / TPR_OUT, tc = (tid % TPR_OUT) * VEC;
#pragma unroll
        for (int p = 0; p < PASSES_OUT; ++p) {
            const int oc = tr + p * RPP_OUT;
            Vec v;
#pragma unroll
            for (int j = 0; j < VEC; ++j) v.v[j] = tile[tc + j][oc];
            *reinterpret_cast<uint4*>(out + (c0 + oc) * R + r0 + tc) = v.u;
        }
    } else {
        for (int i = tid; i < TILE_R * TILE_C; i += THREADS) {
            const int oc = i / TILE_R, orr = i % TILE_R;
            if (c0 + oc < C && r0 + orr < R) out[(c0 + oc) * R + r0 + orr] = tile[orr][oc];
        }
    }
}
