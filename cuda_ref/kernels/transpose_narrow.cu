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
// cuda_ref/_transpose.py's _narrow_tiles mirrors the tile count.
constexpr int NARROW_N = 16, NARROW_TILE = 4096;

template <typename T, bool FEW_ROWS>
__global__ void __launch_bounds__(256) transpose_narrow(const T* __restrict__ a, T* __restrict__ out,
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
    // the tile's runs of the long side go by threadIdx.x; its n x w elements in (long, narrow) order
    // (a contiguous run in memory) go j = threadIdx.x, + 256, ... with (l, r) = (j / n, j % n)
    // stepped without a division a step
    const int count = n * w, step_l = blockDim.x / n, step_r = blockDim.x % n;
    int l = threadIdx.x / n, r = threadIdx.x % n;
    if (FEW_ROWS) {
        for (int k = 0; k < n; ++k)  // n runs of w along input rows
            for (int i = threadIdx.x; i < w; i += blockDim.x)
                tile[k * stride + i] = a[(n0 + k) * sr + (l0 + i) * sc];
        __syncthreads();
        for (int j = threadIdx.x; j < count; j += blockDim.x) {  // w output rows, n elements each
            out[(l0 + l) * R + n0 + r] = tile[r * stride + l];
            l += step_l, r += step_r;
            if (r >= n) r -= n, ++l;
        }
    } else {
        for (int j = threadIdx.x; j < count; j += blockDim.x) {  // w input rows, n elements each
            tile[r * stride + l] = a[(l0 + l) * sr + (n0 + r) * sc];
            l += step_l, r += step_r;
            if (r >= n) r -= n, ++l;
        }
        __syncthreads();
        for (int k = 0; k < n; ++k)  // n runs of w along output rows
            for (int i = threadIdx.x; i < w; i += blockDim.x)
                out[(n0 + k) * R + l0 + i] = tile[k * stride + i];
    }
}
