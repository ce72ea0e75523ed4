// mma.sync's pieces, shared by the tensor-core kernels that feed it from shared memory
// (matmul_tc.cu's walk, matmul_few_rows_mma.cu): XOR-swizzled tiles, ldmatrix, the MMA itself, the
// fragments of a and b, and cp.async. The loader inlines this file after dtypes.cuh and tc.cuh.
#pragma once

namespace tc {

// A row of BK = 32 elements is 4 chunks: rows r and r + 2 share banks unswizzled, (r / 2) % 4 parts
// them. A row of BN = 128 elements (row-major b) is 16 chunks, all rows on the same banks: r % 8.
template <int CHUNKS>
__device__ __forceinline__ int swizzle(int r, int chunk) {
    return r * CHUNKS * 8 + 8 * (chunk ^ (CHUNKS == 4 ? (r >> 1) & 3 : r & 7));
}

// The tile of one operand in shared memory: ROWS x (CHUNKS * 8) elements, swizzled.
template <int ROWS, int CHUNKS>
struct Tile {
    unsigned short* s;
    __device__ unsigned short* at(int r, int chunk) const { return s + swizzle<CHUNKS>(r, chunk); }
};

__device__ __forceinline__ void ldmatrix_x4(unsigned* x, const void* p) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];"
                 : "=r"(x[0]), "=r"(x[1]), "=r"(x[2]), "=r"(x[3]) : "r"(smem_addr(p)));
}
__device__ __forceinline__ void ldmatrix_x4_trans(unsigned* x, const void* p) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];"
                 : "=r"(x[0]), "=r"(x[1]), "=r"(x[2]), "=r"(x[3]) : "r"(smem_addr(p)));
}

// One 16 x 8 MMA over 32 bytes of k: m16n8k16 for 16-bit types (float32 sums), m16n8k32 for int8
// (int32 sums). Both take a's and b's fragments in the same byte layout, so one ldmatrix serves both.
template <typename T>
__device__ __forceinline__ void mma_m16n8(acc_t<T>* d, const unsigned* a, const unsigned* b);
template <>
__device__ __forceinline__ void mma_m16n8<half_t>(float* d, const unsigned* a, const unsigned* b) {
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                 "{%0,%1,%2,%3};"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}
template <>
__device__ __forceinline__ void mma_m16n8<bf16_t>(float* d, const unsigned* a, const unsigned* b) {
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                 "{%0,%1,%2,%3};"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}
// float32 as TF32 (few_rows_mma): m16n8k8, 8 k of 4 bytes. Its fragments sit in the same lanes' words as
// m16n8k16's (a lane's word: k element lane % 4 of a 16-byte chunk, where m16n8k16's holds elements
// 2 (lane % 4) and 2 (lane % 4) + 1), so the ldmatrix loads above serve it; a transposed tile does not.
template <>
__device__ __forceinline__ void mma_m16n8<float>(float* d, const unsigned* a, const unsigned* b) {
    asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                 "{%0,%1,%2,%3};"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}
// float32 words rounded to TF32's 10 bits of mantissa, nearest (ties away), as they enter the MMA
__device__ __forceinline__ void round_tf32(unsigned* w, int n) {
#pragma unroll
    for (int i = 0; i < n; ++i) asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(w[i]) : "f"(__uint_as_float(w[i])));
}
template <>
__device__ __forceinline__ void mma_m16n8<signed char>(unsigned* d, const unsigned* a, const unsigned* b) {
    asm volatile("mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                 "{%0,%1,%2,%3};"
                 : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

// An MMA's operands over the 16-byte chunks kc and kc + 1 of a tile's rows (16 k of a 16-bit type):
// the 16 x 16 fragment of a (rows r0 ..) by one ldmatrix.x4, lanes 0-15 rows 0-15 of chunk kc, lanes
// 16-31 chunk kc + 1; and from a K-major tile (rows are n), the fragments of two 8-column MMA tiles
// (rows n0 .. n0 + 15), matrices (n 0-7, k 0-7), (n 0-7, k 8-15), (n 8-15, k 0-7), (n 8-15, k 8-15).
template <int ROWS, int CHUNKS>
__device__ __forceinline__ void load_a_frag(unsigned* f, const Tile<ROWS, CHUNKS>& t, int r0, int kc, int lane) {
    ldmatrix_x4(f, t.at(r0 + lane % 16, kc + lane / 16));
}
template <int ROWS, int CHUNKS>
__device__ __forceinline__ void load_b_frags_kmajor(unsigned (*f)[2], const Tile<ROWS, CHUNKS>& t, int n0, int kc,
                                                    int lane) {
    unsigned x[4];
    ldmatrix_x4(x, t.at(n0 + lane % 8 + 8 * (lane / 16), kc + (lane / 8) % 2));
    f[0][0] = x[0], f[0][1] = x[1], f[1][0] = x[2], f[1][1] = x[3];
}
// The same 16 x 16 fragment of a from a tile whose rows are k (a^T stored: a row-major b's W = b^T),
// transposed on the way: lanes 0-7 rows k 0-7 at a's rows r0 .. r0 + 7, 8-15 the same k at rows
// r0 + 8 .., 16-31 k 8-15.
template <int ROWS, int CHUNKS>
__device__ __forceinline__ void load_a_frag_trans(unsigned* f, const Tile<ROWS, CHUNKS>& t, int r0, int kc, int lane) {
    ldmatrix_x4_trans(f, t.at(8 * kc + lane % 8 + 8 * (lane / 16), r0 / 8 + (lane / 8) % 2));
}

// The 16 x 8 TF32 fragment of a (rows r0 ..) over chunks kc, kc + 1 (k 4 kc .. 4 kc + 7) from a tile of
// 4-byte elements whose rows are k, element by element (ldmatrix's transpose moves 16-bit halves): lane l
// takes a's rows r0 + l / 4 (+ 8) at k 4 kc + l % 4 (+ 4), m16n8k8's a0 .. a3.
template <int ROWS, int CHUNKS>
__device__ __forceinline__ void load_a_frag_trans_tf32(unsigned* f, const Tile<ROWS, CHUNKS>& t, int r0, int kc,
                                                       int lane) {
#pragma unroll
    for (int e = 0; e < 4; ++e) {
        const int k = 4 * kc + lane % 4 + 4 * (e / 2), r = r0 + lane / 4 + 8 * (e % 2);
        f[e] = reinterpret_cast<const unsigned*>(t.at(k, r / 4))[r % 4];
    }
}

// 16 bytes global -> shared, of which `bytes` (0..16) are read and the rest zero-filled. The
// source must be a valid address even when nothing is read: the caller passes a base then.
__device__ __forceinline__ void cp_async16(void* dst, const void* src, int bytes) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_addr(dst)), "l"(src), "r"(bytes));
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N>
__device__ __forceinline__ void cp_async_wait() { asm volatile("cp.async.wait_group %0;\n" ::"n"(N)); }

}  // namespace tc
