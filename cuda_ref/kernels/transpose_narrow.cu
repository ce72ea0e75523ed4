// Matrix transpose of a matrix with a narrow side (the `narrow` variant): out (C x R, contiguous) =
// a (R x C)^T through a's strides, batches as in transpose.cu (transpose.cuh). T is an unsigned
// integer of the element's size. Launch geometry: cuda_ref/_transpose.py.

#include "transpose.cuh"

// narrow: flat tiles for a matrix with a narrow side (3 x 1000003 coordinates, a point
// cloud's (N, 3), a few channels): a square tile over 3 rows idles most of its threads. A tile is
// n x w: n <= NARROW_N elements of the narrow side, and w = NARROW_TILE / n of the long side, so
// a block moves NARROW_TILE elements whatever n is. FEW_ROWS (R <= C): the block reads n runs of w
// along input rows and writes w output rows of n elements, one contiguous run when R <= NARROW_N;
// otherwise (C < R) it reads w input rows of n elements (one run for a contiguous input) and
// writes n runs of w along output rows. Shared memory turns one into the other (its rows padded
// by one). Slabs of the narrow side, past NARROW_N, take more tiles: any shape is valid.
// Each thread loads its NARROW_EACH elements before it stores any, so they are in flight together:
// a loop that stores each load before the next waits a memory latency an element (a 10 x 10
// matrix took twice torch's time so). cuda_ref/_transpose.py's _narrow_tiles mirrors the tile count.
constexpr int NARROW_N = 16, NARROW_TILE = 2048, NARROW_THREADS = 256, NARROW_EACH = NARROW_TILE / NARROW_THREADS;

// A thread's elements of a tile walked flat in runs of `len`: element j = threadIdx.x + u * NARROW_THREADS
// is (run, pos) = (j / len, j % len), stepped without a division a step.
struct FlatWalk {
    int run[NARROW_EACH], pos[NARROW_EACH];
    __device__ __forceinline__ explicit FlatWalk(int len) {
        int q = threadIdx.x / len, p = threadIdx.x % len;
        const int dq = NARROW_THREADS / len, dp = NARROW_THREADS % len;
#pragma unroll
        for (int u = 0; u < NARROW_EACH; ++u) {
            run[u] = q, pos[u] = p;
            q += dq, p += dp;
            if (p >= len) p -= len, ++q;
        }
    }
};

template <typename T, bool FEW_ROWS>
__global__ void __launch_bounds__(NARROW_THREADS) transpose_narrow(const T* __restrict__ a, T* __restrict__ out,
                                                                   i64 R, i64 C, i64 sr, i64 sc, i64 sb) {
    batch_matrix(a, out, R, C, sb);
    __shared__ T tile[NARROW_TILE + NARROW_N];
    const i64 N = FEW_ROWS ? R : C, L = FEW_ROWS ? C : R;  // the narrow side and the long one
    const int n_tile = (int)(N < NARROW_N ? N : NARROW_N);
    const int w_tile = NARROW_TILE / n_tile, stride = w_tile + 1;
    const i64 tiles_l = (L + w_tile - 1) / w_tile;
    const i64 t = blockIdx.x;
    const i64 n0 = (t / tiles_l) * n_tile, l0 = (t % tiles_l) * w_tile;
    const int n = (int)(N - n0 < n_tile ? N - n0 : n_tile), w = (int)(L - l0 < w_tile ? L - l0 : w_tile);
    const int count = n * w;
    // input rows from r0, columns from c0; the tile holds the narrow side by rows:
    // tile[k * stride + i], k of the narrow side, i of the long one
    const i64 r0 = FEW_ROWS ? n0 : l0, c0 = FEW_ROWS ? l0 : n0;
    T v[NARROW_EACH];
    {
        const FlatWalk in(FEW_ROWS ? w : n);  // along input rows: runs of w (FEW_ROWS) or of n
#pragma unroll
        for (int u = 0; u < NARROW_EACH; ++u)
            if ((int)threadIdx.x + u * NARROW_THREADS < count) v[u] = a[(r0 + in.run[u]) * sr + (c0 + in.pos[u]) * sc];
#pragma unroll
        for (int u = 0; u < NARROW_EACH; ++u)
            if ((int)threadIdx.x + u * NARROW_THREADS < count)
                tile[FEW_ROWS ? in.run[u] * stride + in.pos[u] : in.pos[u] * stride + in.run[u]] = v[u];
    }
    __syncthreads();
    const FlatWalk o(FEW_ROWS ? n : w);  // along output rows: runs of n (FEW_ROWS) or of w
#pragma unroll
    for (int u = 0; u < NARROW_EACH; ++u)
        if ((int)threadIdx.x + u * NARROW_THREADS < count)
            out[(c0 + o.run[u]) * R + r0 + o.pos[u]] = tile[FEW_ROWS ? o.pos[u] * stride + o.run[u] : o.run[u] * stride + o.pos[u]];
}

// The flat kernels' elements a block (at most) and their narrow side's extent (at most).
constexpr int FLAT_TILE = 4096, FLAT_N = 64;

// narrow_flat: `narrow` of R <= FLAT_N rows (R < C) in unit-stride rows, into an output whose
// matrices start on 16 bytes (a batch as in transpose.cu), moved in chunks (16 bytes; 8 for 1-byte
// elements) both ways. The block's columns [c0, c0 + L) are one contiguous run of the output, L * R
// elements (L a multiple of VEC, so every run starts on a chunk). Each input row's part is loaded as
// the aligned chunks that hold it and kept as it lies in shared memory, shifted right by the row's
// phase e_i (elements past c0's chunk boundary, as smem_tiled_sheared does); each output chunk is gathered
// element by element from the rows in turn, the (column, row) of its first element from one
// division and the rest by a step. `narrow` moved elements one by one, with 64-bit index math:
// bound by its instructions (13 x 3541196 fp16: 91 instructions an element, 0.30 of a copy).
template <typename T>
__global__ void __launch_bounds__(NARROW_THREADS) transpose_narrow_flat(const T* __restrict__ a, T* __restrict__ out,
                                                                        i64 R, i64 C, i64 sr, i64 sb, int L) {
    batch_matrix(a, out, R, C, sb);
    constexpr int VEC = Chunk<T>::VEC;
    constexpr int CAP = FLAT_TILE + FLAT_N * 3 * VEC + FLAT_N;  // L * R <= FLAT_TILE, rows at row_at
    __shared__ __align__(16) T tile[CAP];
    __shared__ int phase_of[FLAT_N];
    // a row's pitch: L + 2 VEC (the shift and the chunk past it), an odd number of chunks, so that
    // rows start 16 bytes apart in the banks (11 x 1905595 fp16, rows 384 elements apart, all on
    // one bank: 0.55 of copy where 13 rows read 0.75), and a chunk more every VEC rows: the lanes
    // of a warp start their chunks VEC rows apart where VEC divides R
    const int rows = (int)R, pitch = (L / VEC + 2) % 2 ? L + 2 * VEC : L + 3 * VEC;
    auto row_at = [&](int i) { return i * pitch + i / VEC * VEC; };
    const i64 c0 = (i64)blockIdx.x * L;
    const int w = (int)(C - c0 < L ? C - c0 : L);  // this block's columns
    // load: row i, chunks k of [c0 - e_i, c0 - e_i + L + VEC), thread by thread over (i, k)
    const int chunks = L / VEC + 1;
    for (int j = threadIdx.x; j < rows * chunks; j += NARROW_THREADS) {
        const int i = j / chunks, k = j - i * chunks;
        const T* row = a + i * sr;
        const int e = (int)((reinterpret_cast<unsigned long long>(row + c0) / sizeof(T)) % VEC);
        if (k == 0) phase_of[i] = e;
        store(&tile[row_at(i) + k * VEC], load_chunk(row, C, c0 - e + (i64)k * VEC));
    }
    __syncthreads();
    // store: output chunk q holds elements q VEC ... of the run, element m being (column m / R, row m % R)
    const int count = w * rows;
    T* dst = out + c0 * R;
    for (int q = threadIdx.x; q * VEC < count; q += NARROW_THREADS) {
        int col = q * VEC / rows, i = q * VEC - col * rows;
        Elems<T> x;
#pragma unroll
        for (int u = 0; u < VEC; ++u) {
            x.v[u] = tile[row_at(i) + phase_of[i] + col];
            if (++i == rows) i = 0, ++col;
        }
        store_chunk(dst, q * VEC, count, x.u);
    }
}

// narrow_flat_tall: `narrow` of contiguous matrices of C <= FLAT_N columns (C < R), moved in
// chunks: the block's rows [r0, r0 + L) are one contiguous run of a, L * C elements, loaded as
// the aligned chunks that hold it (the tile shifted right by the run's phase e); each output row c
// takes its segment [r0, r0 + L) as the aligned chunks that cover it, the two at its ends (shared
// with the blocks beside) element by element. Lanes go across the output rows first (chunk g of
// rows c = 0, 1, ...): their elements are neighbours in the tile, where lanes down one row would
// read it C elements apart (a power-of-two C: one bank).
template <typename T>
__global__ void __launch_bounds__(NARROW_THREADS) transpose_narrow_flat_tall(const T* __restrict__ a, T* __restrict__ out,
                                                                             i64 R, i64 C, int L) {
    batch_matrix(a, out, R, C, R * C);
    constexpr int VEC = Chunk<T>::VEC;
    __shared__ __align__(16) T tile[FLAT_TILE + 2 * VEC];
    const int cols = (int)C;
    const i64 r0 = (i64)blockIdx.x * L, n = R * C;
    const int w = (int)(R - r0 < L ? R - r0 : L);  // this block's rows
    const T* run = a + r0 * C;
    const int e = (int)((reinterpret_cast<unsigned long long>(run) / sizeof(T)) % VEC);
    for (int k = threadIdx.x; k * VEC < w * cols + e; k += NARROW_THREADS) {
        store(&tile[k * VEC], load_chunk(a, n, r0 * C - e + (i64)k * VEC));  // (a's flat order)
    }
    __syncthreads();
    const int per_row = L / VEC + 1;  // chunks a segment touches, at most
    for (int j = threadIdx.x; j < cols * per_row; j += NARROW_THREADS) {
        const int g = j / cols, c = j - g * cols;
        T* seg = out + c * R + r0;  // the segment: positions [0, w) from here
        const int t = (int)((reinterpret_cast<unsigned long long>(seg) / sizeof(T)) % VEC);
        const int p0 = g * VEC - t;  // the chunk's first position in the segment
        if (p0 >= w) continue;
        Elems<T> x;
#pragma unroll
        for (int u = 0; u < VEC; ++u) {
            const int p = p0 + u < 0 ? 0 : p0 + u < w ? p0 + u : w - 1;  // (clamped: not stored)
            x.v[u] = tile[e + p * cols + c];
        }
        if (p0 >= 0 && p0 + VEC <= w) {
            store_global(seg + p0, x.u);
        } else {
#pragma unroll
            for (int u = 0; u < VEC; ++u)
                if (p0 + u >= 0 && p0 + u < w) seg[p0 + u] = x.v[u];
        }
    }
}
