// Matrix multiplication on Hopper's warpgroup MMA (wgmma), the tensor-core walk's step 4: float16
// or bfloat16 in, float32 accumulation, c in the input type. Compiled for sm_90a (wgmma exists on
// Hopper only; the loader gives this file -arch=sm_90a).
//
// matmul_wgmma: tiles of a and b come by TMA (cp.async.bulk.tensor: one thread asks, the copy
// engine moves a whole 2-D box into shared memory, swizzled for the MMA, zeros past the matrix
// edge) into a ring of STAGES stages, each with an mbarrier that completes when its bytes have
// landed. Two warpgroups (256 threads) compute a 128 x 256 tile of c, 64 rows each, by
// wgmma.m64n256k16 reading a and b straight from shared memory through matrix descriptors: no
// ldmatrix, no registers for the operands. The tensor maps (the boxes' global layout) are encoded
// on the host (cuda_ref/_matmul.py, cuTensorMapEncodeTiled) and passed by value.
//
//   a, A_MMAJOR false: M x K row-major (K-major), boxes of 128 rows x 64 k (128 bytes: the
//   128-byte swizzle). A_MMAJOR true: a^T (K x M row-major, an a.t() view), two boxes of 64 k x
//   64 m a stage, read transposed by wgmma (its imm-trans-a), as an N-major b is.
//   b, B_NMAJOR false: b^T (W of W.t(), N x K, K-major), boxes of 256 n x 64 k.
//   b, B_NMAJOR true: K x N row-major (N-major), four boxes of 64 k x 64 n a stage; wgmma reads it
//   transposed (its imm-trans-b).
// c is written from the accumulators with guarded stores (any M, N). K need not be a multiple of
// 64: TMA fills the tail with zeros.

#include "dtypes.cuh"
#include "tiles.cuh"
#include "tc.cuh"

struct alignas(64) TensorMap { unsigned long long opaque[16]; };  // CUtensorMap, without CUDA's headers

namespace wg {

// A K slice is 128 bytes of every row (one swizzle row): 64 k of a 16-bit type, 128 of int8.
constexpr int BM = 128, BN = 256, BK_BYTES = 128, THREADS = 256;
constexpr int A_BYTES = BM * BK_BYTES, B_BYTES = BN * BK_BYTES, STAGE_BYTES = A_BYTES + B_BYTES;
constexpr int BOX_BYTES = 64 * BK_BYTES;  // a 64-row box: the M-/N-major boxes, a warpgroup's rows of a
template <typename T>
constexpr int bk_of = BK_BYTES / (int)sizeof(T);

// ---- mbarriers: a stage's "full" barrier; one arrival (the thread that issues its copies, with
// the byte count it expects) and the copies' bytes complete a phase ----
__device__ __forceinline__ void mbar_init(unsigned long long* bar, int count) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(smem_addr(bar)), "r"(count));
}
__device__ __forceinline__ void mbar_expect_tx(unsigned long long* bar, int bytes) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(smem_addr(bar)), "r"(bytes)
                 : "memory");
}
__device__ __forceinline__ void mbar_wait(unsigned long long* bar, int phase) {
    asm volatile(
        "{\n.reg .pred done;\nWAIT_%=:\n"
        "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
        "@!done bra WAIT_%=;\n}\n" ::"r"(smem_addr(bar)), "r"(phase) : "memory");
}

// One TMA copy of the box at (c0 innermost, c1) of the tensor map into dst; completes on bar.
__device__ __forceinline__ void tma_load(void* dst, const TensorMap* map, int c0, int c1, unsigned long long* bar) {
    asm volatile(
        "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];"
        ::"r"(smem_addr(dst)), "l"(map), "r"(c0), "r"(c1), "r"(smem_addr(bar)) : "memory");
}

// A wgmma matrix descriptor of a 128-byte-swizzled tile in shared memory: the start address, the
// leading and stride byte offsets (for K-major tiles the stride is 1024 bytes, eight 128-byte
// rows; for N-major b the leading offset is the distance between 64-column boxes), swizzle mode 1.
__device__ __forceinline__ unsigned long long descriptor(const void* p, unsigned lead, unsigned stride) {
    return (unsigned long long)((smem_addr(p) & 0x3FFFF) >> 4) | (unsigned long long)((lead & 0x3FFFF) >> 4) << 16 |
           (unsigned long long)((stride & 0x3FFFF) >> 4) << 32 | 1ull << 62;
}

__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;" ::: "memory"); }
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory"); }
template <int N>
__device__ __forceinline__ void wgmma_wait() { asm volatile("wgmma.wait_group.sync.aligned %0;" ::"n"(N) : "memory"); }

// One wgmma of a warpgroup over 32 bytes of k: d (64 x 256 sums, 128 registers a thread, constraint C)
// += a b, both read from shared memory through their descriptors (d = a b where `add` is 0: a tile's
// first MMA starts its sums without 128 moves to zero them). For 16-bit types (m64n256k16,
// float32 sums) TAIL passes the scales and TRANS_A / TRANS_B (a's tile M-major, b's N-major); int8
// (m64n256k32, int32 sums) has neither, both tiles K-major. (The operand list is spelled out:
// inline PTX has no loops.)
#define WGMMA_M64N256(INSTR, TAIL, C)                                                                                                     \
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %132, 0;\n"                                                                      \
                 INSTR " "                                                    \
                 "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "                                       \
                 "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "                              \
                 "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "                              \
                 "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, "                              \
                 "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, "                              \
                 "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, "                              \
                 "%96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, "                  \
                 "%112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127}, "             \
                 "%128, %129, p" TAIL ";\n}\n"                                                                      \
                 :                                                                                                               \
                 C(d[0]), C(d[1]), C(d[2]), C(d[3]), C(d[4]), C(d[5]), C(d[6]), C(d[7]),                 \
                 C(d[8]), C(d[9]), C(d[10]), C(d[11]), C(d[12]), C(d[13]), C(d[14]), C(d[15]),           \
                 C(d[16]), C(d[17]), C(d[18]), C(d[19]), C(d[20]), C(d[21]), C(d[22]), C(d[23]),         \
                 C(d[24]), C(d[25]), C(d[26]), C(d[27]), C(d[28]), C(d[29]), C(d[30]), C(d[31]),         \
                 C(d[32]), C(d[33]), C(d[34]), C(d[35]), C(d[36]), C(d[37]), C(d[38]), C(d[39]),         \
                 C(d[40]), C(d[41]), C(d[42]), C(d[43]), C(d[44]), C(d[45]), C(d[46]), C(d[47]),         \
                 C(d[48]), C(d[49]), C(d[50]), C(d[51]), C(d[52]), C(d[53]), C(d[54]), C(d[55]),         \
                 C(d[56]), C(d[57]), C(d[58]), C(d[59]), C(d[60]), C(d[61]), C(d[62]), C(d[63]),         \
                 C(d[64]), C(d[65]), C(d[66]), C(d[67]), C(d[68]), C(d[69]), C(d[70]), C(d[71]),         \
                 C(d[72]), C(d[73]), C(d[74]), C(d[75]), C(d[76]), C(d[77]), C(d[78]), C(d[79]),         \
                 C(d[80]), C(d[81]), C(d[82]), C(d[83]), C(d[84]), C(d[85]), C(d[86]), C(d[87]),         \
                 C(d[88]), C(d[89]), C(d[90]), C(d[91]), C(d[92]), C(d[93]), C(d[94]), C(d[95]),         \
                 C(d[96]), C(d[97]), C(d[98]), C(d[99]), C(d[100]), C(d[101]), C(d[102]), C(d[103]),     \
                 C(d[104]), C(d[105]), C(d[106]), C(d[107]), C(d[108]), C(d[109]), C(d[110]), C(d[111]), \
                 C(d[112]), C(d[113]), C(d[114]), C(d[115]), C(d[116]), C(d[117]), C(d[118]), C(d[119]), \
                 C(d[120]), C(d[121]), C(d[122]), C(d[123]), C(d[124]), C(d[125]), C(d[126]), C(d[127])  \
                 : "l"(desc_a), "l"(desc_b), "n"(TRANS_A), "n"(TRANS_B), "r"(add))

template <typename T> struct Mma;
#define WGMMA_16BIT_TAIL ", 1, 1, %130, %131"
template <> struct Mma<half_t> {
    template <int TRANS_A, int TRANS_B>
    __device__ static void run(float* d, unsigned long long desc_a, unsigned long long desc_b, int add = 1) {
        WGMMA_M64N256("wgmma.mma_async.sync.aligned.m64n256k16.f32.f16.f16", WGMMA_16BIT_TAIL, "+f");
    }
};
template <> struct Mma<bf16_t> {
    template <int TRANS_A, int TRANS_B>
    __device__ static void run(float* d, unsigned long long desc_a, unsigned long long desc_b, int add = 1) {
        WGMMA_M64N256("wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16", WGMMA_16BIT_TAIL, "+f");
    }
};
template <> struct Mma<signed char> {
    template <int TRANS_A, int TRANS_B>  // (unused: 8-bit tiles are K-major)
    __device__ static void run(unsigned* d, unsigned long long desc_a, unsigned long long desc_b, int add = 1) {
        WGMMA_M64N256("wgmma.mma_async.sync.aligned.m64n256k32.s32.s8.s8", "", "+r");
    }
};

// The copy of k-tile kt of a's TILE_M rows from m0 into a stage's a (BM or 64 rows; a stage keeps
// its layout either way): one box of a row-major a, 64-row boxes of an M-major one.
template <typename T, bool A_MMAJOR, int TILE_M>
__device__ __forceinline__ void load_a(unsigned char* a, const TensorMap* map_a, int kt, i64 m0, unsigned long long* bar) {
    if (A_MMAJOR) {
#pragma unroll
        for (int j = 0; j < TILE_M / 64; ++j) tma_load(a + j * BOX_BYTES, map_a, (int)m0 + 64 * j, kt * bk_of<T>, bar);
    } else {
        tma_load(a, map_a, kt * bk_of<T>, (int)m0, bar);
    }
}

// The copies of k-tile kt of the block tile at (m0, n0) into stage s of the ring (one thread).
template <typename T, bool A_MMAJOR, bool B_NMAJOR, int TILE_M = BM>
__device__ __forceinline__ void issue_stage(unsigned char* smem, int s, unsigned long long* bar, const TensorMap* map_a,
                                            const TensorMap* map_b, int kt, i64 m0, i64 n0) {
    unsigned char* a = smem + s * STAGE_BYTES;
    unsigned char* b = a + A_BYTES;
    mbar_expect_tx(bar, TILE_M * BK_BYTES + B_BYTES);
    load_a<T, A_MMAJOR, TILE_M>(a, map_a, kt, m0, bar);
    if (B_NMAJOR) {
#pragma unroll
        for (int j = 0; j < BN / 64; ++j) tma_load(b + j * BOX_BYTES, map_b, (int)n0 + 64 * j, kt * bk_of<T>, bar);
    } else {
        tma_load(b, map_b, kt * bk_of<T>, (int)n0, bar);
    }
}

// The four MMAs of stage s (32 bytes of k each) for warpgroup `half` (rows 64 half .. + 64 of the
// block tile); d += a b, or d = a b where `add` is 0.
template <typename T, bool A_MMAJOR, bool B_NMAJOR>
__device__ __forceinline__ void mma_stage(acc_t<T>* d, unsigned char* smem, int s, int half, int add = 1) {
    unsigned char* a = smem + s * STAGE_BYTES;
    unsigned char* b = a + A_BYTES;
    wgmma_fence();
#pragma unroll
    for (int k = 0; k < BK_BYTES / 32; ++k) {
        // a: this warpgroup's 64 rows (8 KiB in), 32 bytes further along the swizzled row
        const unsigned long long da = A_MMAJOR ? descriptor(a + half * BOX_BYTES + 16 * 128 * k, BOX_BYTES, 1024)
                                               : descriptor(a + half * BOX_BYTES + 32 * k, 16, 1024);
        const unsigned long long db = B_NMAJOR ? descriptor(b + 16 * 128 * k, BOX_BYTES, 1024)  // 16 k-rows further
                                               : descriptor(b + 32 * k, 16, 1024);
        Mma<T>::template run<A_MMAJOR ? 1 : 0, B_NMAJOR ? 1 : 0>(d, da, db, k > 0 || add);
    }
    wgmma_commit();
}

// After the last MMAs: wait for them, then keep the compiler from reading d before (the wait names
// no registers).
__device__ __forceinline__ void touch(float& v) { asm volatile("" : "+f"(v)::"memory"); }
__device__ __forceinline__ void touch(unsigned& v) { asm volatile("" : "+r"(v)::"memory"); }
template <typename A>
__device__ __forceinline__ void drain(A* d) {
    wgmma_wait<0>();
#pragma unroll
    for (int i = 0; i < 128; ++i) touch(d[i]);
}

// A warpgroup's 64 x 256 tile from d: lane l of warp w holds rows 16 w + l / 4 and + 8, columns
// 8 j + 2 (l % 4) and + 1. (Out: c's type, or float for split K's partial products.)
template <typename T, typename Out>
__device__ __forceinline__ void store_tile(const acc_t<T>* d, Out* c, i64 M, i64 N, i64 r0, i64 n0, int t) {
    const int warp = t / 32, lane = t % 32;
    const i64 r = r0 + 16 * warp + lane / 4;
#pragma unroll
    for (int j = 0; j < BN / 8; ++j) {
        const i64 col = n0 + 8 * j + 2 * (lane % 4);
        store2(c, M, N, r, col, d[4 * j], d[4 * j + 1]);
        store2(c, M, N, r + 8, col, d[4 * j + 2], d[4 * j + 3]);
    }
}

}  // namespace wg

template <typename T, bool A_MMAJOR, bool B_NMAJOR, int STAGES>
__global__ void __launch_bounds__(wg::THREADS)
matmul_wgmma(const __grid_constant__ TensorMap map_a, const __grid_constant__ TensorMap map_b,
             out_t<T>* __restrict__ c, i64 M, i64 N, i64 K) {
    using namespace wg;
    static_assert(sizeof(T) == 2 || (!A_MMAJOR && !B_NMAJOR), "8-bit wgmma reads K-major tiles only");
    // STAGES stages of a then b from a 1024-byte boundary (the swizzle's atoms), then the barriers;
    // the launcher asks for 1024 bytes of slack
    extern __shared__ __align__(128) unsigned char ring[];
    unsigned char* smem = ring + ((1024 - (smem_addr(ring) & 1023)) & 1023);
    unsigned long long* full = reinterpret_cast<unsigned long long*>(smem + STAGES * STAGE_BYTES);
    i64 m0, n0;
    grouped_origin<BM, BN, 8>(M, N, m0, n0);
    const int half = threadIdx.x / 128;
    const int k_tiles = (int)((K + bk_of<T> - 1) / bk_of<T>);
    if (threadIdx.x == 0) {
        for (int s = 0; s < STAGES; ++s) mbar_init(&full[s], 1);
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    __syncthreads();
    if (threadIdx.x == 0)
        for (int s = 0; s < STAGES && s < k_tiles; ++s) issue_stage<T, A_MMAJOR, B_NMAJOR>(smem, s, &full[s], &map_a, &map_b, s, m0, n0);

    acc_t<T> d[128];
#pragma unroll
    for (int i = 0; i < 128; ++i) d[i] = 0;
    for (int kt = 0; kt < k_tiles; ++kt) {
        const int s = kt % STAGES;
        mbar_wait(&full[s], (kt / STAGES) & 1);
        mma_stage<T, A_MMAJOR, B_NMAJOR>(d, smem, s, half);
        wgmma_wait<1>();  // the MMAs of k-tile kt - 1 are done: its stage may be refilled
        __syncthreads();
        const int refill = kt - 1 + STAGES;
        if (threadIdx.x == 0 && kt >= 1 && refill < k_tiles)
            issue_stage<T, A_MMAJOR, B_NMAJOR>(smem, refill % STAGES, &full[refill % STAGES], &map_a, &map_b, refill, m0, n0);
    }
    drain(d);
    store_tile<T>(d, c, M, N, m0 + half * 64, n0, threadIdx.x % 128);
}

// =================================================================================================
// matmul_wgmma_ws: wgmma's tiles and MMAs, its warps specialized. A producer warpgroup (one thread
// of it issues every TMA copy; setmaxnreg gives its registers to the others) runs ahead through the
// ring, waiting only for a stage's "empty" barrier; two consumer warpgroups wait on "full", compute,
// and arrive on "empty" once their MMAs have read the stage. No block-wide barrier in the loop.
// The grid is persistent (one block per SM walks the tiles in grouped order), so the producer
// loads the next tile while the consumers store this one.
//   CLUSTER 2: the blocks run in pairs (a thread-block cluster) on tiles m0, m0 + 128 of the same
//   columns; each block brings half of the shared b tile and TMA multicasts it into both, so L2
//   serves b once for two tiles. A stage is free only when the consumers of both blocks are done
//   with it: every consumer warp arrives on the empty barrier of both.
//   splits > 1 (split K, for grids of few tiles: a few rows of a, or few columns): a unit is a
//   tile and one of `splits` runs of k-slices. With `flags` (a few runs, each unit its own pair:
//   unit u on pair u), every run but the last hands its float32 sums over in its pair's slot, as
//   stream-K's parts do, and the last run's pair adds them in k order and stores the tile. Without,
//   each run's sums go to partial[s] (M x N each) and matmul_split_reduce adds them. Either way the
//   order is fixed, so results repeat bit for bit.
//   The walk's counts come from the host (in the constant bank they hold no registers): `tiles`
//   units of CLUSTER tiles stacked in M (a pair's two tiles share their columns), and `k_tiles`
//   slices of K (a split's runs: none empty). 32-bit throughout: a 64-bit division is a called
//   subroutine, and the producer has 40 registers.
//   sk > 0 (stream-K, where the last wave would leave most pairs idle): the last sk units are not
//   walked whole; after the whole units, their k-slices, in one run, are shared evenly by all the
//   pairs, so every pair ends at the same time. A unit that several pairs share is finished by the
//   one with its first slice, at the end of its share; each of the others puts its part's sums in
//   its slot of `partial` (float32, in the accumulators' layout) and raises its flag, and the
//   finisher waits on each flag in turn, adds the slots in k order (results repeat bit for bit) and
//   lowers the flag (so `flags` is all zeros between calls). A pair waits only on pairs after it,
//   and the last never waits, so this finishes wherever every block of the grid is resident at
//   once (the grid is one block per SM).
//   CONSUMERS 1: one consumer warpgroup, tiles of 64 x 256, for a few rows of a (at M = 16 a 128-row
//   tile's MMAs would be seven eighths zeros); a stage keeps its layout, half of a's part unused.
//   store_tma: each consumer warpgroup writes its 64 x 256 tile 64 columns at a time into one of
//   two 8 KiB shared boxes (128-byte swizzled: conflict-free) and one thread hands each box to TMA
//   (cp.async.bulk.tensor store, clipped at the matrix edge), which drains while the warpgroup goes
//   on. store_tma 2: the tile is packed to c's type in registers, and its four boxes go out one
//   after each of the next tile's first four k-slices is issued, while those MMAs run, rather than
//   with the tensor cores idle. Needs c's rows 16-byte aligned; otherwise c is written from the
//   accumulators with guarded stores.
// =================================================================================================
namespace wg {
constexpr int C_BYTES = 2 * 2 * BOX_BYTES;  // c's staging: two 64 x 64 boxes for each consumer warpgroup

__device__ __forceinline__ void mbar_arrive(unsigned long long* bar) {
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(smem_addr(bar)) : "memory");
}
__device__ __forceinline__ void tma_store(const TensorMap* map, const void* src, int c0, int c1) {
    asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%1, %2}], [%3];"
                 ::"l"(map), "r"(c0), "r"(c1), "r"(smem_addr(src)) : "memory");
}
// Arrive on the barrier at the same shared offset in cluster block `rank` (itself included). The
// default semantics (release at CTA scope, as CUTLASS's cluster barrier): with .release.cluster
// (and the producer's wait .acquire.cluster) the pairs ran 1.5x slower (docs/decisions/009-cuda-16bit-wgmma-ws.md).
__device__ __forceinline__ void mbar_arrive_cluster(unsigned long long* bar, unsigned rank) {
    asm volatile(
        "{\n.reg .b32 remote;\nmapa.shared::cluster.u32 remote, %0, %1;\n"
        "mbarrier.arrive.shared::cluster.b64 _, [remote];\n}\n" ::"r"(smem_addr(bar)), "r"(rank) : "memory");
}
// tma_load into the same shared offset of every block in `mask`, completing on each one's bar.
__device__ __forceinline__ void tma_load_multicast(void* dst, const TensorMap* map, int c0, int c1,
                                                   unsigned long long* bar, unsigned short mask) {
    asm volatile(
        "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster"
        " [%0], [%1, {%2, %3}], [%4], %5;" ::"r"(smem_addr(dst)), "l"(map), "r"(c0), "r"(c1), "r"(smem_addr(bar)),
        "h"(mask) : "memory");
}
__device__ __forceinline__ void cluster_sync() {
    asm volatile("barrier.cluster.arrive;\nbarrier.cluster.wait;" ::: "memory");
}
__device__ __forceinline__ unsigned cluster_rank() {
    unsigned r;
    asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
    return r;
}

// The copies of k-tile kt for a block of a pair: a as issue_stage does, b's half `rank` (rows
// BN / 2 rank .. of a K-major tile, or its 64-column boxes 2 rank, 2 rank + 1 of an N-major one)
// multicast to both blocks. The stage's barrier expects the whole stage: the other half comes
// from the other block.
template <typename T, bool A_MMAJOR, bool B_NMAJOR>
__device__ __forceinline__ void issue_stage_pair(unsigned char* smem, int s, unsigned long long* bar, const TensorMap* map_a,
                                                 const TensorMap* map_b, int kt, i64 m0, i64 n0, unsigned rank) {
    unsigned char* a = smem + s * STAGE_BYTES;
    unsigned char* b = a + A_BYTES;
    mbar_expect_tx(bar, STAGE_BYTES);
    load_a<T, A_MMAJOR, BM>(a, map_a, kt, m0, bar);
    if (B_NMAJOR) {
#pragma unroll
        for (int j = 0; j < 2; ++j)
            tma_load_multicast(b + (2 * rank + j) * BOX_BYTES, map_b, (int)n0 + 64 * (2 * rank + j), kt * bk_of<T>, bar, 3);
    } else {
        tma_load_multicast(b + rank * (B_BYTES / 2), map_b, kt * bk_of<T>, (int)n0 + (BN / 2) * rank, bar, 3);
    }
}

// This block's pair, read afresh at each use (a register held through the MMAs would be one too many).
template <int CLUSTER>
__device__ __forceinline__ unsigned pair_index() {
    unsigned block;
    asm volatile("mov.u32 %0, %%ctaid.x;" : "=r"(block));
    return block / CLUSTER;
}

// Stream-K's shares: pair p's starts at share_begin(p), `share` k-slices long (one more for the first
// `longer` pairs). (The host divides: a division here would hold registers the MMAs need.)
__device__ __forceinline__ unsigned share_begin(unsigned p, unsigned share, unsigned longer) {
    return p * share + min(p, longer);
}

// The segments a pair walks, each a unit and a run of its k-slices: whole units (each in `splits`
// runs) from `pair` on, a grid of pairs apart, then the pair's share of the stream-K slices of the
// last sk units (numbered from the first of them). One cursor for both, the top bit set for the
// slices; counts are derived on use (the consumers' registers are short). Host: slices < 2^31.
template <int CLUSTER>
struct Walk {
    static constexpr unsigned SLICES = 1u << 31;
    unsigned at;
    const unsigned pairs, tiles, splits, sk, share, longer, k_tiles;
    __device__ __forceinline__ Walk(unsigned pairs, unsigned tiles, unsigned splits, unsigned sk, unsigned share,
                                    unsigned longer, unsigned k_tiles)
        : at(pair_index<CLUSTER>()), pairs(pairs), tiles(tiles), splits(splits), sk(sk), share(share),
          longer(longer), k_tiles(k_tiles) {}
    __device__ __forceinline__ bool next(unsigned& tile, int& k_first, int& k_end) {
        if (!(at & SLICES)) {
            if (at < tiles * splits - sk) {
                tile = at % tiles;
                const unsigned k_run = (k_tiles + splits - 1) / splits;
                k_first = (int)(at / tiles * k_run);
                k_end = (int)min(k_tiles, k_first + k_run);
                at += pairs;
                return true;
            }
            at = SLICES | share_begin(pair_index<CLUSTER>(), share, longer);
        }
        const unsigned slice = at & ~SLICES, end = share_begin(pair_index<CLUSTER>() + 1, share, longer);
        if (slice >= end) return false;
        const unsigned i = slice / k_tiles, k0 = i * k_tiles;
        tile = tiles - sk + i;
        k_first = (int)(slice - k0);
        k_end = (int)min(end - k0, k_tiles);
        at = SLICES | (k0 + k_end);
        return true;
    }
};

// A warpgroup's named barrier (ids 1, 2; 0 is __syncthreads').
__device__ __forceinline__ void warpgroup_sync(int half) {
    asm volatile("bar.sync %0, 128;" ::"r"(1 + half) : "memory");
}

// The packed tile's registers, free again where no new tile is packed into them. Every box of it
// is stored by then, but the compiler cannot tell, and would keep its 64 registers live through
// stream-K's adds; a value written here ends the old one's life (an empty asm would not: ptxas
// would take its output as live from the kernel's start).
__device__ __forceinline__ void forget(unsigned* w) {
#pragma unroll
    for (int p = 0; p < 64; ++p) w[p] = 0;
}

// A warpgroup's 64 x 256 tile of sums, rounded to c's type: word p holds d[2 p] and d[2 p + 1].
template <typename T>
__device__ __forceinline__ void pack(const float* d, unsigned* w) {
#pragma unroll
    for (int p = 0; p < 64; ++p) w[p] = from_float<T>(d[2 * p]).x | (unsigned)from_float<T>(d[2 * p + 1]).x << 16;
}

// Columns 64 j .. 64 j + 63 of a packed 64 x 256 tile into a 64 x 64 box: rows of 128 bytes,
// their 16-byte chunks XOR-swizzled by the row (TMA's 128-byte swizzle), so the 8 rows x 4 lanes
// of one store land in 32 different banks.
template <int J>
__device__ __forceinline__ void stage_box(const unsigned* w, unsigned char* box, int t) {
    const int warp = t / 32, lane = t % 32;
    const int r = 16 * warp + lane / 4;
#pragma unroll
    for (int q = 0; q < 8; ++q) {  // q: the 16-byte chunk (8 columns) of the box row
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            const int row = r + 8 * h;
            *reinterpret_cast<unsigned*>(box + row * 128 + ((q ^ (row % 8)) << 4) + 4 * (lane % 4)) = w[2 * (8 * J + q) + h];
        }
    }
}

// Box J of the tile through buffer J % 2: wait until the store that last used it has read it,
// fill it, make it visible to the TMA unit, and store it at (m0, n0 + 64 J).
template <int J>
__device__ __forceinline__ void store_box(const TensorMap* map, const unsigned* w, unsigned char* boxes, int t, int half,
                                          i64 m0, i64 n0) {
    unsigned char* box = boxes + (J % 2) * BOX_BYTES;
    if (t == 0) asm volatile("cp.async.bulk.wait_group.read 1;" ::: "memory");
    warpgroup_sync(half);
    stage_box<J>(w, box, t);
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    warpgroup_sync(half);
    if (t == 0) {
        tma_store(map, box, (int)n0 + 64 * J, (int)m0);
        asm volatile("cp.async.bulk.commit_group;" ::: "memory");
    }
}

// The hand-over of a warpgroup's 64 x 256 sums (stream-K's parts, split K's runs) through a slot of
// 16384 floats: thread t's 128 as 32 float4s, 128 threads apart (each store instruction writes 2 KiB
// in a row). `live`: the thread's rows are in c (a warp's 16 rows past M move nothing: at 16 rows
// of a, three warps of four).
__device__ __forceinline__ void slot_put(const float* d, float* slot, unsigned* flag, int t, int half, bool live) {
    float4* p = reinterpret_cast<float4*>(slot);
    if (live) {
#pragma unroll
        for (int i = 0; i < 32; ++i) p[128 * i + t] = make_float4(d[4 * i], d[4 * i + 1], d[4 * i + 2], d[4 * i + 3]);
    }
    __threadfence();
    warpgroup_sync(half);
    if (t == 0) asm volatile("st.release.gpu.global.u32 [%0], %1;" ::"l"(flag), "r"(1u) : "memory");
}
__device__ __forceinline__ void slot_add(float* d, const float* slot, unsigned* flag, int t, int half, bool live) {
    if (t == 0) {
        unsigned up;
        do {
            asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(up) : "l"(flag) : "memory");
        } while (!up);
        *flag = 0;  // the slot's pair writes it again in the next call only
    }
    warpgroup_sync(half);
    if (!live) return;
    const float4* p = reinterpret_cast<const float4*>(slot);
#pragma unroll
    for (int i = 0; i < 32; ++i) {
        const float4 v = __ldcg(p + 128 * i + t);  // from L2: this SM's L1 never held it
        d[4 * i] += v.x, d[4 * i + 1] += v.y, d[4 * i + 2] += v.z, d[4 * i + 3] += v.w;
    }
}
}  // namespace wg

// c = the sum of `splits` float32 partial products (each MN elements), added in order.
template <typename T>
__global__ void __launch_bounds__(256) matmul_split_reduce(const float* __restrict__ partial, T* __restrict__ c,
                                                           i64 MN, int splits) {
    for (i64 i = blockIdx.x * (i64)blockDim.x + threadIdx.x; i < MN; i += (i64)gridDim.x * blockDim.x) {
        float v = partial[i];
        for (int s = 1; s < splits; ++s) v += partial[s * MN + i];
        c[i] = from_float<T>(v);
    }
}

// tools/trace_wgmma.py compiles with -DWS_TRACE: the first consumer warpgroup's thread 0 notes
// clock64 at each of its first six tiles' steps (slots 5 i + 1 ..: before the first k-slice's wait,
// after it, after the drain, after the tile's store or hand-over, and the cycles spent waiting for
// the later k-slices), then the tiles walked (33) and %globaltimer at the start and the end (34, 35),
// so a tile's MMA time reads against the tensor cores' 1024 cycles a slice. ws_copy[block][i][j]:
// for tile i < 3 and its k-slice ws_copy_at's j-th, when the producer issued it, when the consumer
// had it, and when the consumer began to wait for it (the same SM's clock): a copy's latency
// through a tile.
#ifdef WS_TRACE
constexpr int WS_TRACE_SLOTS = 36;
__device__ unsigned long long ws_trace[1024][WS_TRACE_SLOTS];
__device__ __forceinline__ unsigned long long globaltimer() {
    unsigned long long ns;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(ns));
    return ns;
}
#define WS_MARK(slot, value) \
    do { if (threadIdx.x == 128) ws_trace[blockIdx.x][slot] = (value); } while (0)
__device__ unsigned long long ws_copy[1024][3][12][3];
__device__ __forceinline__ int ws_copy_at(int k) {  // the index of k-slice k among those noted, or -1
    const int at[12] = {0, 1, 2, 3, 4, 8, 16, 32, 60, 61, 62, 63};
    for (int j = 0; j < 12; ++j) if (at[j] == k) return j;
    return -1;
}
#define WS_COPY(tile, k, who, value) \
    do { const int j_ = ws_copy_at(k); if ((tile) < 3 && j_ >= 0) ws_copy[blockIdx.x][tile][j_][who] = (value); } while (0)
#else
#define WS_COPY(tile, k, who, value) do {} while (0)
#define WS_MARK(slot, value) do {} while (0)
#endif
template <typename T, bool A_MMAJOR, bool B_NMAJOR, int STAGES, int CLUSTER, int CONSUMERS>
__global__ void __launch_bounds__(128 * (1 + CONSUMERS), 1) __cluster_dims__(CLUSTER, 1, 1)
matmul_wgmma_ws(const __grid_constant__ TensorMap map_a, const __grid_constant__ TensorMap map_b,
                const __grid_constant__ TensorMap map_c, out_t<T>* __restrict__ c, i64 M, i64 N, i64 K,
                float* __restrict__ partial, int splits, int store_tma, int group_m,
                unsigned tiles, unsigned k_tiles, unsigned sk, unsigned sk_share, unsigned sk_longer,
                unsigned* __restrict__ flags) {
    using namespace wg;
    static_assert(sizeof(T) == 2, "wgmma_ws is 16-bit only");
    static_assert(CLUSTER == 1 || CLUSTER == 2, "blocks run alone or in pairs");
    static_assert(CONSUMERS == 2 || (CONSUMERS == 1 && CLUSTER == 1), "64-row tiles run alone");
    constexpr int TILE_M = 64 * CONSUMERS;  // a block's rows of c: a consumer warpgroup's 64 each
    extern __shared__ __align__(128) unsigned char ring[];
    unsigned char* smem = ring + ((1024 - (smem_addr(ring) & 1023)) & 1023);
    unsigned char* staging = smem + STAGES * STAGE_BYTES;  // store_tma: c's boxes
    unsigned long long* full = reinterpret_cast<unsigned long long*>(staging + C_BYTES);
    unsigned long long* empty = full + STAGES;
    const int group = threadIdx.x / 128, t = threadIdx.x % 128;
    const unsigned rank = CLUSTER == 1 ? 0 : cluster_rank();
    const unsigned pairs = gridDim.x / CLUSTER;
    if (threadIdx.x == 0) {
        for (int s = 0; s < STAGES; ++s) {
            mbar_init(&full[s], 1);
            mbar_init(&empty[s], 4 * CONSUMERS * CLUSTER);  // one arrival per consumer warp of the pair
        }
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    if (CLUSTER > 1) cluster_sync();  // the other block's barriers are ready before any copy targets them
    else __syncthreads();

    if (group == 0) {  // producer
        asm volatile("setmaxnreg.dec.sync.aligned.u32 40;");
        if (t == 0) {
            int it = 0;  // k-tiles issued so far, over every tile: stage it % STAGES, its use it / STAGES
            unsigned tile;
            int k_first, k_end;
            Walk<CLUSTER> walk(pairs, tiles, splits, sk, sk_share, sk_longer, k_tiles);
            unsigned traced = 0;  // (WS_TRACE only)
            while (walk.next(tile, k_first, k_end)) {
                i64 m0, n0;
                grouped_origin_of<CLUSTER * TILE_M, BN>(tile, M, N, group_m, m0, n0);
                m0 += rank * TILE_M;
                for (int kt = k_first; kt < k_end; ++kt, ++it) {
                    const int s = it % STAGES;
                    // a fresh barrier counts its "previous" phase (parity 1) as complete: no wait at first
                    mbar_wait(&empty[s], ((it / STAGES) & 1) ^ 1);
                    if (CLUSTER == 1)
                        issue_stage<T, A_MMAJOR, B_NMAJOR, TILE_M>(smem, s, &full[s], &map_a, &map_b, kt, m0, n0);
                    else
                        issue_stage_pair<T, A_MMAJOR, B_NMAJOR>(smem, s, &full[s], &map_a, &map_b, kt, m0, n0, rank);
                    WS_COPY(traced, kt - k_first, 0, clock64());
                }
                ++traced;
            }
        }
        if (CLUSTER > 1) cluster_sync();  // (see the end)
        return;
    }
    asm volatile("setmaxnreg.inc.sync.aligned.u32 232;");
    const int half = group - 1;
    unsigned char* boxes = staging + half * (C_BYTES / 2);
    int it = 0;
    acc_t<T> d[128];
    // store_tma: the last tile, packed to c's type, and how many of its four boxes are stored; with
    // store_tma 2 box j goes out after the MMAs of the next tile's k-slice j are issued, so the
    // tensor cores are not idle while the warpgroup stores
    unsigned w[64];
    int stored = 4;
    int w_r0 = 0, w_n0 = 0;  // (TMA coordinates are 32-bit)
    auto store_next = [&]() {
        switch (stored++) {
            case 0: store_box<0>(&map_c, w, boxes, t, half, w_r0, w_n0); break;
            case 1: store_box<1>(&map_c, w, boxes, t, half, w_r0, w_n0); break;
            case 2: store_box<2>(&map_c, w, boxes, t, half, w_r0, w_n0); break;
            default: store_box<3>(&map_c, w, boxes, t, half, w_r0, w_n0); break;
        }
    };
    // a warp hands stage s back to the producer of each block of the pair (lane r to block r)
    auto release = [&](int s) {
        if (CLUSTER == 1 && t % 32 == 0) mbar_arrive(&empty[s]);
        if (CLUSTER > 1 && t % 32 < CLUSTER) mbar_arrive_cluster(&empty[s], t % 32);
    };
    unsigned tile;
    int k_first, k_end;
    unsigned walked = 0;  // (WS_TRACE only)
    WS_MARK(34, globaltimer());
    Walk<CLUSTER> walk(pairs, tiles, splits, sk, sk_share, sk_longer, k_tiles);
    bool more = walk.next(tile, k_first, k_end);  // (the host makes no empty runs)
    while (more) {
        const unsigned mark = 1 + 5 * min(walked++, 5u);
        WS_MARK(mark, clock64());
#ifdef WS_TRACE
        unsigned long long waited = 0;
#endif
        for (int kt = k_first; kt < k_end; ++kt, ++it) {
            const int s = it % STAGES;
#ifdef WS_TRACE
            const unsigned long long before = clock64();
#endif
            mbar_wait(&full[s], (it / STAGES) & 1);
#ifdef WS_TRACE
            if (kt > k_first) waited += clock64() - before;
#endif
            if (kt == k_first) WS_MARK(mark + 1, clock64());
#ifdef WS_TRACE
            if (threadIdx.x == 128) {
                WS_COPY(walked - 1, kt - k_first, 1, clock64());
                WS_COPY(walked - 1, kt - k_first, 2, before);
            }
#endif
            mma_stage<T, A_MMAJOR, B_NMAJOR>(d, smem, s, half, kt > k_first);
            if (stored < 4) store_next();
            wgmma_wait<1>();  // the MMAs of the k-tile before are done: hand its stage back
            if (kt > k_first) release((it - 1) % STAGES);
        }
        while (stored < 4) store_next();  // (a run of fewer than four k-slices)
        // While the last MMAs run: this tile's origin (not held through the MMAs: registers are
        // short there), and the walk's next step, so little is left between this tile's drain and
        // the next tile's first MMAs (tools/trace_wgmma.py).
        const unsigned done = tile;
        const int done_first = k_first, done_end = k_end;
        i64 m0, n0;
        grouped_origin_of<CLUSTER * TILE_M, BN>(done, M, N, group_m, m0, n0);
        m0 += rank * TILE_M;
        more = walk.next(tile, k_first, k_end);
        drain(d);
        WS_MARK(mark + 2, clock64());
        WS_MARK(mark + 4, waited);
        release((it - 1) % STAGES);  // the producer refills while we store
        // the hand-over slots (stream-K, split K in the kernel): one a warpgroup of every block, (pair, rank, half)
        const auto slot = [&](unsigned p) { return (p * CLUSTER + rank) * CONSUMERS + half; };
        // this warp's rows of the tile in c; evaluated at each use: held as a value, it spilled the
        // one-consumer instance (232 registers) under NVRTC 13.0
        const auto live = [&]() { return m0 + half * 64 + 16 * (t / 32) < M; };
        if (splits > 1 && !flags) {  // split K, summed by matmul_split_reduce
            const i64 run = done_first / ((k_tiles + splits - 1) / splits);
            store_tile<T>(d, partial + run * M * N, M, N, m0 + half * 64, n0, t);
            continue;
        }
        // a part handed over: stream-K's later parts of a shared unit (to the pair with its first);
        // split K's runs but the last (to the pair with the last run)
        if (splits > 1 ? done_end < (int)k_tiles : done_first > 0) {
            const unsigned pair = pair_index<CLUSTER>();
            slot_put(d, partial + (i64)slot(pair) * (64 * BN), flags + slot(pair), t, half, live());
            forget(w);
            WS_MARK(mark + 3, clock64());
            continue;
        }
        if (splits > 1) {  // split K's last run: the others' sums, in k order (run r is unit done + r tiles)
            for (unsigned r = 0; r + 1 < (unsigned)splits; ++r)
                slot_add(d, partial + (i64)slot(done + r * tiles) * (64 * BN), flags + slot(done + r * tiles), t, half,
                         live());
        } else if (done_end < (int)k_tiles) {  // stream-K: the first part; the later ones from the pairs after this
            const unsigned unit_end = (done + sk - tiles + 1) * k_tiles;  // in the stream-K slices
            for (unsigned p = pair_index<CLUSTER>() + 1; share_begin(p, sk_share, sk_longer) < unit_end; ++p)
                slot_add(d, partial + (i64)slot(p) * (64 * BN), flags + slot(p), t, half, live());
        }
        if (store_tma) {
            pack<T>(d, w);
            w_r0 = (int)(m0 + half * 64), w_n0 = (int)n0, stored = 0;
            if (store_tma == 1)
                while (stored < 4) store_next();
        } else {
            store_tile<T>(d, c, M, N, m0 + half * 64, n0, t);
            forget(w);
        }
        WS_MARK(mark + 3, clock64());
    }
    while (stored < 4) store_next();
    if (store_tma && t == 0) asm volatile("cp.async.bulk.wait_group 0;" ::: "memory");  // before the block's memory goes
    WS_MARK(33, walked);
    WS_MARK(35, globaltimer());
    // a block of a pair leaves only once the other no longer arrives on its barriers or copies into it
    if (CLUSTER > 1) cluster_sync();
}
