// int8 matrix multiplication on CUDA cores: c (M x N int32, contiguous) = a (M x K) b (K x N), both
// int8, sums in int32. Every index that can pass 2^31 is 64-bit.
//
// Launch geometry lives in cuda_ref/_matmul.py.

#include "dtypes.cuh"
#include "tiles.cuh"

// ---- dp4a: int8 in, int32 out, on CUDA cores. dp4a multiplies the four int8 pairs packed in two
// 32-bit words and adds the four products to a 32-bit sum: four multiply-adds an instruction. A
// block of 256 threads owns a 128 x 128 tile of c, 8 x 8 results a thread (rows 4 ty.. and
// 64 + 4 ty.., columns 4 tx.. and 64 + 4 tx..: 16-byte shared reads, broadcast or conflict-free),
// over 32-deep K slices held as words: As[w][m] packs a's k = 4w .. 4w + 3 of row m, Bs[w][n] b's
// of column n. a is read along its rows (K contiguous, 16 bytes a thread). b is read where it
// lies: K-major (a W.t() view) like a, row-major as 4 x 4 byte blocks, four 4-byte row pieces
// transposed in registers by byte permutes (prmt). Bytes past an edge load as zeros; vec_a /
// vec_b (rows 16- / 4-byte aligned) allow the vector loads. ----
namespace i8 {
constexpr int BM = 128, BN = 128, BK = 32, THREADS = 256, KW = BK / 4, LDS = BM + 4;  // +4: no conflicts

__device__ __forceinline__ unsigned prmt(unsigned x, unsigned y, unsigned sel) {
    unsigned d;
    asm("prmt.b32 %0, %1, %2, %3;" : "=r"(d) : "r"(x), "r"(y), "r"(sel));
    return d;
}
__device__ __forceinline__ unsigned dp4a(unsigned a, unsigned b, unsigned acc) {
    unsigned d;
    asm("dp4a.s32.s32 %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(acc));
    return d;
}

// BYTES bytes of row r of a rows x cols int8 matrix x (row stride ld) from column col, packed
// little-endian into words; one vector load when `vec` and all are in range, zeros past an edge.
template <int BYTES>
__device__ __forceinline__ void load_row(unsigned (&w)[BYTES / 4], const signed char* x, i64 rows, i64 cols, i64 ld,
                                         i64 r, i64 col, bool vec) {
#pragma unroll
    for (int i = 0; i < BYTES / 4; ++i) w[i] = 0;
    if (r >= rows || col >= cols) return;
    const signed char* p = x + r * ld + col;
    if (vec && col + BYTES <= cols) {
        if constexpr (BYTES == 16) {
            const uint4 v = *reinterpret_cast<const uint4*>(p);
            w[0] = v.x, w[1] = v.y, w[2] = v.z, w[3] = v.w;
        } else {
            w[0] = *reinterpret_cast<const unsigned*>(p);
        }
        return;
    }
#pragma unroll
    for (int j = 0; j < BYTES; ++j)  // (unrolled: w stays in registers)
        if (col + j < cols) w[j / 4] |= (unsigned)(unsigned char)p[j] << (8 * (j % 4));
}
}  // namespace i8

template <bool B_KMAJOR>
__global__ void __launch_bounds__(i8::THREADS)
matmul_dp4a(const signed char* __restrict__ a, const signed char* __restrict__ b, int* __restrict__ c, i64 M, i64 N,
            i64 K, i64 lda, i64 ldb, int vec_a, int vec_b) {
    using namespace i8;
    __shared__ __align__(16) unsigned As[KW][LDS];
    __shared__ __align__(16) unsigned Bs[KW][LDS];
    i64 m0, n0;
    grouped_origin<BM, BN, 8>(M, N, m0, n0);
    const int t = threadIdx.x, tx = t % 16, ty = t / 16;
    unsigned acc[8][8] = {};
    for (i64 k0 = 0; k0 < K; k0 += BK) {
        {  // a: row t / 2, k-words 4 (t % 2) .. + 3
            unsigned w[4];
            load_row<16>(w, a, M, K, lda, m0 + t / 2, k0 + 16 * (t % 2), vec_a);
#pragma unroll
            for (int j = 0; j < 4; ++j) As[4 * (t % 2) + j][t / 2] = w[j];
        }
        if (B_KMAJOR) {  // b^T: row (column of b) t / 2, like a
            unsigned w[4];
            load_row<16>(w, b, N, K, ldb, n0 + t / 2, k0 + 16 * (t % 2), vec_b);
#pragma unroll
            for (int j = 0; j < 4; ++j) Bs[4 * (t % 2) + j][t / 2] = w[j];
        } else {  // rows k = 4 kw .. + 3, columns 4 nw .. + 3: a warp reads 128-byte row pieces
            const int kw = t / 32, nw = t % 32;
            unsigned r[4][1];
#pragma unroll
            for (int i = 0; i < 4; ++i) load_row<4>(r[i], b, K, N, ldb, k0 + 4 * kw + i, n0 + 4 * nw, vec_b);
            const unsigned t0 = prmt(r[0][0], r[1][0], 0x5140), t1 = prmt(r[2][0], r[3][0], 0x5140);
            const unsigned t2 = prmt(r[0][0], r[1][0], 0x7362), t3 = prmt(r[2][0], r[3][0], 0x7362);
            uint4 v;  // word q: the four k of column 4 nw + q
            v.x = prmt(t0, t1, 0x5410), v.y = prmt(t0, t1, 0x7632), v.z = prmt(t2, t3, 0x5410), v.w = prmt(t2, t3, 0x7632);
            *reinterpret_cast<uint4*>(&Bs[kw][4 * nw]) = v;
        }
        __syncthreads();
#pragma unroll
        for (int w = 0; w < KW; ++w) {
            const uint4 a0 = *reinterpret_cast<const uint4*>(&As[w][4 * ty]);
            const uint4 a1 = *reinterpret_cast<const uint4*>(&As[w][64 + 4 * ty]);
            const uint4 b0 = *reinterpret_cast<const uint4*>(&Bs[w][4 * tx]);
            const uint4 b1 = *reinterpret_cast<const uint4*>(&Bs[w][64 + 4 * tx]);
            const unsigned fa[8] = {a0.x, a0.y, a0.z, a0.w, a1.x, a1.y, a1.z, a1.w};
            const unsigned fb[8] = {b0.x, b0.y, b0.z, b0.w, b1.x, b1.y, b1.z, b1.w};
#pragma unroll
            for (int i = 0; i < 8; ++i)
#pragma unroll
                for (int j = 0; j < 8; ++j) acc[i][j] = dp4a(fa[i], fb[j], acc[i][j]);
        }
        __syncthreads();  // before the next slice overwrites the tiles
    }
#pragma unroll
    for (int i = 0; i < 8; ++i) {
        const i64 m = m0 + (i < 4 ? 4 * ty + i : 64 + 4 * ty + i - 4);
        if (m >= M) continue;
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            const i64 n = n0 + 64 * h + 4 * tx;
            int* p = c + m * N + n;
            if (n + 4 <= N && N % 4 == 0) {
                int4 v;
                v.x = acc[i][4 * h], v.y = acc[i][4 * h + 1], v.z = acc[i][4 * h + 2], v.w = acc[i][4 * h + 3];
                *reinterpret_cast<int4*>(p) = v;
            } else {
                for (int j = 0; j < 4 && n + j < N; ++j) p[j] = acc[i][4 * h + j];
            }
        }
    }
}
