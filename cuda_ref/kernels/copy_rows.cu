// Rows moved to a wider pitch: out[r][w] = a[r][w] for w < words, 0 for words <= w < pitch. The
// tensor-core launchers copy an operand whose rows a TMA map cannot read where they lie (row starts
// off 16 bytes: an LM head's 50257 or 30522 columns) into rows padded to 16 bytes, pad zeroed
// (cuda_ref/_copy.py). W is an unsigned type of the widest access that a's base, its row stride and
// the row's length all allow (1, 2, 4, 8 or 16 bytes): the warp's 32 lanes move 32 consecutive words
// of a row, so loads and stores fill whole sectors at any alignment of a's rows. torch's copy into the
// padded view ran at 0.42x its contiguous clone (1024 x 30522 bf16, H200), an element a thread.
//
// Block (x, y): words [x * 256 * UNROLL, ...) of rows y, y + gridDim.y, ... (gridDim.y at most 65535).

#include "dtypes.cuh"

template <typename W, int UNROLL>
__global__ void __launch_bounds__(256) copy_rows(const W* __restrict__ a, W* __restrict__ out, i64 rows, i64 words,
                                                 i64 pitch, i64 sa) {
    const i64 w0 = (i64)blockIdx.x * 256 * UNROLL + threadIdx.x;
    for (i64 r = blockIdx.y; r < rows; r += gridDim.y) {
        const W* src = a + r * sa;
        W* dst = out + r * pitch;
        W v[UNROLL];
#pragma unroll
        for (int u = 0; u < UNROLL; ++u)  // (every load issued before the first store)
            if (w0 + u * 256 < words) v[u] = src[w0 + u * 256];
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) {
            const i64 w = w0 + u * 256;
            if (w < words)
                dst[w] = v[u];
            else if (w < pitch)
                dst[w] = W{};
        }
    }
}
