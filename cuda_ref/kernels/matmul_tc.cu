// Matrix multiplication on tensor cores: c (M x N, contiguous) = a (M x K) b (K x N), float16 or
// bfloat16 in, float32 accumulation, c in the input type. The second walk of cuda_ref's matmul
// (the first, matmul.cu, is float32 on CUDA cores); each kernel changes one thing of the one
// before it:
//
//   matmul_wmma           nvcuda::wmma's 16x16x16 fragments (as PTX: no CUDA headers here) read
//                         from padded shared-memory tiles
//   matmul_mma_sync       mma.sync.m16n8k16 fed by ldmatrix from XOR-swizzled tiles
//   matmul_mma_pipelined  the same, its tiles brought by cp.async into a ring of stages
//
// What every kernel takes (the launcher, cuda_ref/_matmul.py, makes it so, copying once where an
// operand is not):
//   a      M x K, row-major: element (m, k) at a[m * lda + k]
//   b      B_KMAJOR false: K x N row-major, (k, n) at b[k * ldb + n];
//          B_KMAJOR true: b^T (a weight W of W.t(), N x K) row-major, (k, n) at b[n * ldb + k]
//   lda and ldb are multiples of 8 elements and a, b 16-byte aligned, so 8 elements starting at a
//   column multiple of 8 are one 16-byte load. Any M, N, K: chunks past an edge load as zeros,
//   which add nothing, and stores are guarded. Offsets that can pass 2^31 are 64-bit.
//
// All three share one block tile, 128 x 128 x 32 by 8 warps (2 x 4) of 64 x 32 each, and visit
// the tiles in grouped order for L2 reuse.

#include "dtypes.cuh"
#include "tiles.cuh"
#include "tc.cuh"
#include "mma_sync.cuh"

namespace tc {

constexpr int BM = 128, BN = 128, BK = 32, THREADS = 256, WM = 64, WN = 32;

// 8 elements of row r of a rows x cols matrix x (row stride ld), from column c (a multiple of
// 8): one 16-byte load when all are in range, else element by element with zeros past the edge.
template <typename T>
__device__ __forceinline__ uint4 load8(const T* x, i64 rows, i64 cols, i64 ld, i64 r, i64 c) {
    uint4 v = {0u, 0u, 0u, 0u};
    if (r >= rows || c >= cols) return v;
    const T* p = x + r * ld + c;
    if (c + 8 <= cols) return *reinterpret_cast<const uint4*>(p);
    unsigned short h[8] = {};
    for (int j = 0; j < 8 && c + j < cols; ++j) h[j] = p[j].x;
    v.x = h[0] | (unsigned)h[1] << 16;
    v.y = h[2] | (unsigned)h[3] << 16;
    v.z = h[4] | (unsigned)h[5] << 16;
    v.w = h[6] | (unsigned)h[7] << 16;
    return v;
}

}  // namespace tc

// =================================================================================================
// wmma: each warp holds a 64 x 32 tile of c as 4 x 2 accumulator fragments of 16 x 16 and, per
// 16-deep step, loads 4 fragments of a and 2 of b from shared memory and issues 8 MMAs. Tiles
// are staged through registers into shared memory rows padded by 8 elements (16 bytes: rows that
// would sit 64 bytes apart no longer share banks). The epilogue goes through a 16 x 16 float
// scratch per warp, since a fragment's element-to-lane map is unspecified.
// =================================================================================================
template <typename T> struct Wmma;  // the PTX of one element type (fragments differ in size)

#define TC_R8(i) "=r"(x[i + 0]), "=r"(x[i + 1]), "=r"(x[i + 2]), "=r"(x[i + 3]), \
                 "=r"(x[i + 4]), "=r"(x[i + 5]), "=r"(x[i + 6]), "=r"(x[i + 7])
#define TC_F8(v) "+f"(v[0]), "+f"(v[1]), "+f"(v[2]), "+f"(v[3]), "+f"(v[4]), "+f"(v[5]), "+f"(v[6]), "+f"(v[7])

template <> struct Wmma<half_t> {  // f16 fragments of a and b: 8 registers (f16x2)
    static constexpr int REGS = 8;
    __device__ static void load_a(unsigned* x, const void* p, int ld) {
        asm volatile("wmma.load.a.sync.aligned.row.m16n16k16.f16 {%0,%1,%2,%3,%4,%5,%6,%7}, [%8], %9;"
                     : TC_R8(0) : "l"(p), "r"(ld));
    }
    template <bool COL>
    __device__ static void load_b(unsigned* x, const void* p, int ld) {
        if (COL)
            asm volatile("wmma.load.b.sync.aligned.col.m16n16k16.f16 {%0,%1,%2,%3,%4,%5,%6,%7}, [%8], %9;"
                         : TC_R8(0) : "l"(p), "r"(ld));
        else
            asm volatile("wmma.load.b.sync.aligned.row.m16n16k16.f16 {%0,%1,%2,%3,%4,%5,%6,%7}, [%8], %9;"
                         : TC_R8(0) : "l"(p), "r"(ld));
    }
    template <bool COL>
    __device__ static void mma(float* d, const unsigned* a, const unsigned* b) {
        if (COL)
            asm volatile("wmma.mma.sync.aligned.row.col.m16n16k16.f32.f32 {%0,%1,%2,%3,%4,%5,%6,%7}, "
                         "{%8,%9,%10,%11,%12,%13,%14,%15}, {%16,%17,%18,%19,%20,%21,%22,%23}, "
                         "{%0,%1,%2,%3,%4,%5,%6,%7};"
                         : TC_F8(d) : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(a[4]), "r"(a[5]), "r"(a[6]),
                           "r"(a[7]), "r"(b[0]), "r"(b[1]), "r"(b[2]), "r"(b[3]), "r"(b[4]), "r"(b[5]), "r"(b[6]),
                           "r"(b[7]));
        else
            asm volatile("wmma.mma.sync.aligned.row.row.m16n16k16.f32.f32 {%0,%1,%2,%3,%4,%5,%6,%7}, "
                         "{%8,%9,%10,%11,%12,%13,%14,%15}, {%16,%17,%18,%19,%20,%21,%22,%23}, "
                         "{%0,%1,%2,%3,%4,%5,%6,%7};"
                         : TC_F8(d) : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(a[4]), "r"(a[5]), "r"(a[6]),
                           "r"(a[7]), "r"(b[0]), "r"(b[1]), "r"(b[2]), "r"(b[3]), "r"(b[4]), "r"(b[5]), "r"(b[6]),
                           "r"(b[7]));
    }
};

#define TC_R4(i) "=r"(x[i + 0]), "=r"(x[i + 1]), "=r"(x[i + 2]), "=r"(x[i + 3])

template <> struct Wmma<bf16_t> {  // bf16 fragments of a and b: 4 registers
    static constexpr int REGS = 4;
    __device__ static void load_a(unsigned* x, const void* p, int ld) {
        asm volatile("wmma.load.a.sync.aligned.row.m16n16k16.bf16 {%0,%1,%2,%3}, [%4], %5;"
                     : TC_R4(0) : "l"(p), "r"(ld));
    }
    template <bool COL>
    __device__ static void load_b(unsigned* x, const void* p, int ld) {
        if (COL)
            asm volatile("wmma.load.b.sync.aligned.col.m16n16k16.bf16 {%0,%1,%2,%3}, [%4], %5;"
                         : TC_R4(0) : "l"(p), "r"(ld));
        else
            asm volatile("wmma.load.b.sync.aligned.row.m16n16k16.bf16 {%0,%1,%2,%3}, [%4], %5;"
                         : TC_R4(0) : "l"(p), "r"(ld));
    }
    template <bool COL>
    __device__ static void mma(float* d, const unsigned* a, const unsigned* b) {
        if (COL)
            asm volatile("wmma.mma.sync.aligned.row.col.m16n16k16.f32.bf16.bf16.f32 {%0,%1,%2,%3,%4,%5,%6,%7}, "
                         "{%8,%9,%10,%11}, {%12,%13,%14,%15}, {%0,%1,%2,%3,%4,%5,%6,%7};"
                         : TC_F8(d) : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]), "r"(b[2]),
                           "r"(b[3]));
        else
            asm volatile("wmma.mma.sync.aligned.row.row.m16n16k16.f32.bf16.bf16.f32 {%0,%1,%2,%3,%4,%5,%6,%7}, "
                         "{%8,%9,%10,%11}, {%12,%13,%14,%15}, {%0,%1,%2,%3,%4,%5,%6,%7};"
                         : TC_F8(d) : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]), "r"(b[2]),
                           "r"(b[3]));
    }
};

template <typename T, bool B_KMAJOR>
__global__ void __launch_bounds__(tc::THREADS)
matmul_wmma(const T* __restrict__ a, const T* __restrict__ b, T* __restrict__ c, i64 M, i64 N, i64 K, i64 lda,
            i64 ldb) {
    using namespace tc;
    constexpr int PAD = 8, LDA = BK + PAD, LDB = B_KMAJOR ? BK + PAD : BN + PAD;
    // (wmma.load wants 32-byte aligned fragment addresses: rows of 80 or 272 bytes keep that)
    __shared__ __align__(128) unsigned short As[BM][LDA];
    __shared__ __align__(128) unsigned short Bs[B_KMAJOR ? BN : BK][LDB];
    __shared__ __align__(128) float Cs[THREADS / 32][16 * 16];
    i64 m0, n0;
    grouped_origin<BM, BN, 8>(M, N, m0, n0);
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int wm = (warp / (BN / WN)) * WM, wn = (warp % (BN / WN)) * WN;

    float acc[WM / 16][WN / 16][8] = {};
    for (i64 k0 = 0; k0 < K; k0 += BK) {
        for (int i = threadIdx.x; i < BM * BK / 8; i += THREADS) {  // a: BM rows of BK
            const int r = i / (BK / 8), col = 8 * (i % (BK / 8));
            *reinterpret_cast<uint4*>(&As[r][col]) = load8(a, M, K, lda, m0 + r, k0 + col);
        }
        for (int i = threadIdx.x; i < BK * BN / 8; i += THREADS) {  // b: BK x BN either way round
            if (B_KMAJOR) {
                const int r = i / (BK / 8), col = 8 * (i % (BK / 8));
                *reinterpret_cast<uint4*>(&Bs[r][col]) = load8(b, N, K, ldb, n0 + r, k0 + col);
            } else {
                const int r = i / (BN / 8), col = 8 * (i % (BN / 8));
                *reinterpret_cast<uint4*>(&Bs[r][col]) = load8(b, K, N, ldb, k0 + r, n0 + col);
            }
        }
        __syncthreads();
#pragma unroll
        for (int kk = 0; kk < BK; kk += 16) {
            unsigned fa[WM / 16][8], fb[WN / 16][8];
#pragma unroll
            for (int i = 0; i < WM / 16; ++i) Wmma<T>::load_a(fa[i], &As[wm + 16 * i][kk], LDA);
#pragma unroll
            for (int j = 0; j < WN / 16; ++j)
                Wmma<T>::template load_b<B_KMAJOR>(fb[j], B_KMAJOR ? &Bs[wn + 16 * j][kk] : &Bs[kk][wn + 16 * j], LDB);
#pragma unroll
            for (int i = 0; i < WM / 16; ++i)
#pragma unroll
                for (int j = 0; j < WN / 16; ++j) Wmma<T>::template mma<B_KMAJOR>(acc[i][j], fa[i], fb[j]);
        }
        __syncthreads();
    }
    // epilogue: fragment by fragment through the warp's scratch, two elements a lane per row pass
#pragma unroll
    for (int i = 0; i < WM / 16; ++i)
#pragma unroll
        for (int j = 0; j < WN / 16; ++j) {
            float* s = Cs[warp];
            asm volatile("wmma.store.d.sync.aligned.row.m16n16k16.f32 [%0], {%1,%2,%3,%4,%5,%6,%7,%8}, 16;"
                         ::"l"(s), "f"(acc[i][j][0]), "f"(acc[i][j][1]), "f"(acc[i][j][2]), "f"(acc[i][j][3]),
                         "f"(acc[i][j][4]), "f"(acc[i][j][5]), "f"(acc[i][j][6]), "f"(acc[i][j][7]) : "memory");
            __syncwarp();
#pragma unroll
            for (int e = 2 * lane; e < 256; e += 64)
                store2(c, M, N, m0 + wm + 16 * i + e / 16, n0 + wn + 16 * j + e % 16, s[e], s[e + 1]);
            __syncwarp();
        }
}

// =================================================================================================
// mma_sync: the same tiles, computed by mma.sync.m16n8k16 (the PTX under wmma, with a documented
// register layout): 4 x 4 MMAs of 16 x 8 per warp per 16-deep step, their operands loaded by
// ldmatrix (a warp reads four 8 x 8 matrices of 16-byte rows in one instruction). Shared rows are
// unpadded and XOR-swizzled instead: the 16-byte chunk j of row r sits at chunk j ^ f(r), so the
// 8 rows an ldmatrix reads (and a warp's stores) fall in 8 different bank groups. The epilogue
// writes from the accumulators directly: lane l holds rows l / 4 and l / 4 + 8, columns
// 2 (l % 4) and 2 (l % 4) + 1 of each 16 x 8 tile.
// =================================================================================================
namespace tc {

// The shared tiles of one stage: a as BM rows of BK, b as BN rows of BK (k-major) or BK rows of BN.
template <bool B_KMAJOR>
struct Stage {
    static constexpr int ELEMS = BM * BK + BK * BN;
    Tile<BM, BK / 8> A;
    Tile<B_KMAJOR ? BN : BK, B_KMAJOR ? BK / 8 : BN / 8> B;
    __device__ explicit Stage(unsigned short* s) : A{s}, B{s + BM * BK} {}
};

// One step of a warp's 64 x 32 tile over the 16-byte chunks kc and kc + 1 of the rows (16 k of a
// 16-bit type, 32 of int8): 4 ldmatrix.x4 for a (one per 16-row MMA tile), 2 for b (each covering
// two 8-column MMA tiles), 16 MMAs.
template <typename T, bool B_KMAJOR>
__device__ __forceinline__ void mma_step(const Stage<B_KMAJOR>& st, int wm, int wn, int kc, int lane,
                                         acc_t<T> (&acc)[WM / 16][WN / 8][4]) {
    unsigned fa[WM / 16][4], fb[WN / 8][2];
#pragma unroll
    for (int i = 0; i < WM / 16; ++i) load_a_frag(fa[i], st.A, wm + 16 * i, kc, lane);
#pragma unroll
    for (int j = 0; j < WN / 16; ++j) {
        if (B_KMAJOR) {
            load_b_frags_kmajor(fb + 2 * j, st.B, wn + 16 * j, kc, lane);
        } else {  // rows are k (16-bit only), transposed on the way: the same four matrices
            unsigned x[4];
            ldmatrix_x4_trans(x, st.B.at(8 * kc + lane % 8 + 8 * ((lane / 8) % 2), (wn + 16 * j) / 8 + lane / 16));
            fb[2 * j][0] = x[0], fb[2 * j][1] = x[1], fb[2 * j + 1][0] = x[2], fb[2 * j + 1][1] = x[3];
        }
    }
#pragma unroll
    for (int i = 0; i < WM / 16; ++i)
#pragma unroll
        for (int j = 0; j < WN / 8; ++j) mma_m16n8<T>(acc[i][j], fa[i], fb[j]);
}

template <typename T>
__device__ __forceinline__ void store_acc(out_t<T>* c, i64 M, i64 N, i64 r0, i64 c0, int lane,
                                          const acc_t<T> (&acc)[WM / 16][WN / 8][4]) {
#pragma unroll
    for (int i = 0; i < WM / 16; ++i)
#pragma unroll
        for (int j = 0; j < WN / 8; ++j) {
            const i64 r = r0 + 16 * i + lane / 4, col = c0 + 8 * j + 2 * (lane % 4);
            store2(c, M, N, r, col, acc[i][j][0], acc[i][j][1]);
            store2(c, M, N, r + 8, col, acc[i][j][2], acc[i][j][3]);
        }
}

}  // namespace tc

template <typename T, bool B_KMAJOR>
__global__ void __launch_bounds__(tc::THREADS)
matmul_mma_sync(const T* __restrict__ a, const T* __restrict__ b, T* __restrict__ c, i64 M, i64 N, i64 K,
                i64 lda, i64 ldb) {
    using namespace tc;
    __shared__ __align__(128) unsigned short smem[Stage<B_KMAJOR>::ELEMS];
    const Stage<B_KMAJOR> st(smem);
    i64 m0, n0;
    grouped_origin<BM, BN, 8>(M, N, m0, n0);
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int wm = (warp / (BN / WN)) * WM, wn = (warp % (BN / WN)) * WN;

    float acc[WM / 16][WN / 8][4] = {};
    for (i64 k0 = 0; k0 < K; k0 += BK) {
        for (int i = threadIdx.x; i < BM * BK / 8; i += THREADS) {
            const int r = i / (BK / 8), ch = i % (BK / 8);
            *reinterpret_cast<uint4*>(st.A.at(r, ch)) = load8(a, M, K, lda, m0 + r, k0 + 8 * ch);
        }
        for (int i = threadIdx.x; i < BK * BN / 8; i += THREADS) {
            if (B_KMAJOR) {
                const int r = i / (BK / 8), ch = i % (BK / 8);
                *reinterpret_cast<uint4*>(st.B.at(r, ch)) = load8(b, N, K, ldb, n0 + r, k0 + 8 * ch);
            } else {
                const int r = i / (BN / 8), ch = i % (BN / 8);
                *reinterpret_cast<uint4*>(st.B.at(r, ch)) = load8(b, K, N, ldb, k0 + r, n0 + 8 * ch);
            }
        }
        __syncthreads();
#pragma unroll
        for (int kc = 0; kc < BK / 8; kc += 2) mma_step<T, B_KMAJOR>(st, wm, wn, kc, lane, acc);
        __syncthreads();
    }
    store_acc<T>(c, M, N, m0 + wm, n0 + wn, lane, acc);
}

// =================================================================================================
// mma_pipelined: mma_sync's compute, its tiles copied by cp.async (global -> shared, no registers,
// zero fill past an edge) into a ring of STAGES stages in dynamic shared memory: STAGES - 1 slices
// in flight while one is computed, one barrier per slice (the loop of matmul.cu's pipelined).
// =================================================================================================
namespace tc {

// The 16-byte chunk (r, col) of a rows x cols matrix x into dst: the elements in range, zeros after.
template <typename T>
__device__ __forceinline__ void copy_chunk(void* dst, const T* x, i64 rows, i64 cols, i64 ld, i64 r, i64 col) {
    const i64 in = (r < rows && col < cols) ? min((i64)(16 / sizeof(T)), cols - col) : 0;
    cp_async16(dst, in ? x + r * ld + col : x, (int)(sizeof(T) * in));
}

// The K slice of mma_pipelined: 64 bytes of every row (4 chunks), 32 k of a 16-bit type, 64 of int8.
template <typename T>
constexpr int bk_of = 64 / (int)sizeof(T);

template <bool B_KMAJOR, typename T>
__device__ __forceinline__ void copy_stage(const Stage<B_KMAJOR>& st, const T* a, const T* b, i64 M, i64 N,
                                           i64 K, i64 lda, i64 ldb, i64 m0, i64 n0, i64 k0) {
    static_assert(BM * BK % (8 * THREADS) == 0 && BK * BN % (8 * THREADS) == 0, "no thread idles");
    constexpr int E = 16 / sizeof(T);  // elements a chunk
#pragma unroll
    for (int it = 0; it < BM * BK / 8 / THREADS; ++it) {
        const int i = threadIdx.x + it * THREADS, r = i / (BK / 8), ch = i % (BK / 8);
        copy_chunk(st.A.at(r, ch), a, M, K, lda, m0 + r, k0 + E * ch);
    }
#pragma unroll
    for (int it = 0; it < BK * BN / 8 / THREADS; ++it) {
        const int i = threadIdx.x + it * THREADS;
        if (B_KMAJOR) {
            const int r = i / (BK / 8), ch = i % (BK / 8);
            copy_chunk(st.B.at(r, ch), b, N, K, ldb, n0 + r, k0 + E * ch);
        } else {
            const int r = i / (BN / 8), ch = i % (BN / 8);
            copy_chunk(st.B.at(r, ch), b, K, N, ldb, k0 + r, n0 + E * ch);
        }
    }
}

}  // namespace tc

template <typename T, bool B_KMAJOR, int STAGES>
__global__ void __launch_bounds__(tc::THREADS)
matmul_mma_pipelined(const T* __restrict__ a, const T* __restrict__ b, out_t<T>* __restrict__ c, i64 M, i64 N,
                     i64 K, i64 lda, i64 ldb) {
    using namespace tc;
    static_assert(STAGES >= 2, "one slice in flight at least");
    static_assert(sizeof(T) == 2 || B_KMAJOR, "an int8 b must be K-major: ldmatrix transposes 16-bit elements only");
    constexpr int BKT = bk_of<T>;
    extern __shared__ __align__(128) unsigned short ring[];  // STAGES * Stage::ELEMS (the launcher)
    auto stage = [&](int s) { return Stage<B_KMAJOR>(ring + s * Stage<B_KMAJOR>::ELEMS); };
    i64 m0, n0;
    grouped_origin<BM, BN, 8>(M, N, m0, n0);
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int wm = (warp / (BN / WN)) * WM, wn = (warp % (BN / WN)) * WN;

    const i64 slices = (K + BKT - 1) / BKT;
#pragma unroll
    for (int s = 0; s < STAGES - 1; ++s) {  // prologue: slices 0 .. STAGES - 2 in flight
        if (s < slices) copy_stage(stage(s), a, b, M, N, K, lda, ldb, m0, n0, (i64)s * BKT);
        cp_async_commit();  // one group per slice, empty or not: the wait count stays exact
    }
    acc_t<T> acc[WM / 16][WN / 8][4] = {};
    int cur = 0, next = STAGES - 1;
    for (i64 s = 0; s < slices; ++s) {
        cp_async_wait<STAGES - 2>();  // this thread's copies of slice s have landed
        __syncthreads();              // everyone's have, and everyone is done with slice s - 1
        if (s + STAGES - 1 < slices)
            copy_stage(stage(next), a, b, M, N, K, lda, ldb, m0, n0, (s + STAGES - 1) * BKT);
        cp_async_commit();
        const Stage<B_KMAJOR> st = stage(cur);
#pragma unroll
        for (int kc = 0; kc < BK / 8; kc += 2) mma_step<T, B_KMAJOR>(st, wm, wn, kc, lane, acc);
        cur = cur + 1 == STAGES ? 0 : cur + 1;
        next = next + 1 == STAGES ? 0 : next + 1;
    }
    cp_async_wait<0>();
    store_acc<T>(c, M, N, m0 + wm, n0 + wn, lane, acc);
}
