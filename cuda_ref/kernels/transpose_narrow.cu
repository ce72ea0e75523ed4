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
