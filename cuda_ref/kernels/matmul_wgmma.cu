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

constexpr int BM = 128, BN = 256, BK = 64, THREADS = 256;
constexpr int A_BYTES = BM * BK * 2, B_BYTES = BN * BK * 2, STAGE_BYTES = A_BYTES + B_BYTES;

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

// One wgmma.m64n256k16 of a warpgroup: d (64 x 256 float32, 128 registers a thread) += a b, both
// read from shared memory through their descriptors; TRANS_A / TRANS_B: a's tile is M-major, b's N-major. (The operand
// list is spelled out: inline PTX has no loops.)
#define WGMMA_M64N256K16(TY)                                                                                                     \
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, 1, 0;\n"                                                                      \
                 "wgmma.mma_async.sync.aligned.m64n256k16.f32." TY "." TY " "                                                    \
                 "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "                                       \
                 "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "                              \
                 "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "                              \
                 "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, "                              \
                 "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, "                              \
                 "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, "                              \
                 "%96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, "                  \
                 "%112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127}, "             \
                 "%128, %129, p, 1, 1, %130, %131;\n}\n"                                                                      \
                 :                                                                                                               \
                 "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),                 \
                 "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),           \
                 "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),         \
                 "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),         \
                 "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),         \
                 "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),         \
                 "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),         \
                 "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]),         \
                 "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]),         \
                 "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]),         \
                 "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]),         \
                 "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]),         \
                 "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]),     \
                 "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111]), \
                 "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]), "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]), \
                 "+f"(d[120]), "+f"(d[121]), "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127])  \
                 : "l"(desc_a), "l"(desc_b), "n"(TRANS_A), "n"(TRANS_B))

template <typename T> struct Mma;
template <> struct Mma<half_t> {
    template <int TRANS_A, int TRANS_B>
    __device__ static void run(float* d, unsigned long long desc_a, unsigned long long desc_b) { WGMMA_M64N256K16("f16"); }
};
template <> struct Mma<bf16_t> {
    template <int TRANS_A, int TRANS_B>
    __device__ static void run(float* d, unsigned long long desc_a, unsigned long long desc_b) { WGMMA_M64N256K16("bf16"); }
};

// The copies of k-tile kt of the block tile at (m0, n0) into stage s of the ring (one thread).
template <bool A_MMAJOR, bool B_NMAJOR>
__device__ __forceinline__ void issue_stage(unsigned char* smem, int s, unsigned long long* bar, const TensorMap* map_a,
                                            const TensorMap* map_b, int kt, i64 m0, i64 n0) {
    unsigned char* a = smem + s * STAGE_BYTES;
    unsigned char* b = a + A_BYTES;
    mbar_expect_tx(bar, STAGE_BYTES);
    if (A_MMAJOR) {
#pragma unroll
        for (int j = 0; j < BM / 64; ++j) tma_load(a + j * (BK * 64 * 2), map_a, (int)m0 + 64 * j, kt * BK, bar);
    } else {
        tma_load(a, map_a, kt * BK, (int)m0, bar);
    }
    if (B_NMAJOR) {
#pragma unroll
        for (int j = 0; j < BN / 64; ++j) tma_load(b + j * (BK * 64 * 2), map_b, (int)n0 + 64 * j, kt * BK, bar);
    } else {
        tma_load(b, map_b, kt * BK, (int)n0, bar);
    }
}

// The four 16-deep MMAs of stage s for warpgroup `half` (rows 64 half .. + 64 of the block tile).
template <typename T, bool A_MMAJOR, bool B_NMAJOR>
__device__ __forceinline__ void mma_stage(float* d, unsigned char* smem, int s, int half) {
    unsigned char* a = smem + s * STAGE_BYTES;
    unsigned char* b = a + A_BYTES;
    wgmma_fence();
#pragma unroll
    for (int k = 0; k < BK / 16; ++k) {
        // a: this warpgroup's 64 rows (8 KiB in), 16 k further = 32 bytes along the swizzled row
        const unsigned long long da = A_MMAJOR ? descriptor(a + half * (BK * 64 * 2) + 16 * 128 * k, BK * 64 * 2, 1024)
                                               : descriptor(a + half * 64 * 128 + 32 * k, 16, 1024);
        const unsigned long long db = B_NMAJOR ? descriptor(b + 16 * 128 * k, BK * 64 * 2, 1024)  // 16 k-rows further
                                               : descriptor(b + 32 * k, 16, 1024);
        Mma<T>::template run<A_MMAJOR ? 1 : 0, B_NMAJOR ? 1 : 0>(d, da, db);
    }
    wgmma_commit();
}

// After the last MMAs: wait for them, then keep the compiler from reading d before (the wait names
// no registers).
__device__ __forceinline__ void drain(float* d) {
    wgmma_wait<0>();
#pragma unroll
    for (int i = 0; i < 128; ++i) asm volatile("" : "+f"(d[i])::"memory");
}

// A warpgroup's 64 x 256 tile from d: lane l of warp w holds rows 16 w + l / 4 and + 8, columns
// 8 j + 2 (l % 4) and + 1.
template <typename T>
__device__ __forceinline__ void store_tile(const float* d, T* c, i64 M, i64 N, i64 r0, i64 n0, int t) {
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
matmul_wgmma(const __grid_constant__ TensorMap map_a, const __grid_constant__ TensorMap map_b, T* __restrict__ c,
             i64 M, i64 N, i64 K) {
    using namespace wg;
    // STAGES stages of a then b from a 1024-byte boundary (the swizzle's atoms), then the barriers;
    // the launcher asks for 1024 bytes of slack
    extern __shared__ __align__(128) unsigned char ring[];
    unsigned char* smem = ring + ((1024 - (smem_addr(ring) & 1023)) & 1023);
    unsigned long long* full = reinterpret_cast<unsigned long long*>(smem + STAGES * STAGE_BYTES);
    i64 m0, n0;
    grouped_origin<BM, BN, 8>(M, N, m0, n0);
    const int half = threadIdx.x / 128;
    const int k_tiles = (int)((K + BK - 1) / BK);
    if (threadIdx.x == 0) {
        for (int s = 0; s < STAGES; ++s) mbar_init(&full[s], 1);
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    __syncthreads();
    if (threadIdx.x == 0)
        for (int s = 0; s < STAGES && s < k_tiles; ++s) issue_stage<A_MMAJOR, B_NMAJOR>(smem, s, &full[s], &map_a, &map_b, s, m0, n0);

    float d[128];
#pragma unroll
    for (int i = 0; i < 128; ++i) d[i] = 0.f;
    for (int kt = 0; kt < k_tiles; ++kt) {
        const int s = kt % STAGES;
        mbar_wait(&full[s], (kt / STAGES) & 1);
        mma_stage<T, A_MMAJOR, B_NMAJOR>(d, smem, s, half);
        wgmma_wait<1>();  // the MMAs of k-tile kt - 1 are done: its stage may be refilled
        __syncthreads();
        const int refill = kt - 1 + STAGES;
        if (threadIdx.x == 0 && kt >= 1 && refill < k_tiles)
            issue_stage<A_MMAJOR, B_NMAJOR>(smem, refill % STAGES, &full[refill % STAGES], &map_a, &map_b, refill, m0, n0);
    }
    drain(d);
    store_tile(d, c, M, N, m0 + half * 64, n0, threadIdx.x % 128);
}

// =================================================================================================
// matmul_wgmma_ws: wgmma's tiles and MMAs, its warps specialized. A producer warpgroup (one thread
// of it issues every TMA copy; setmaxnreg gives its registers to the others) runs ahead through the
// ring, waiting only for a stage's "empty" barrier; two consumer warpgroups wait on "full", compute,
// and arrive on "empty" once their MMAs have read the stage. No block-wide barrier in the loop.
// The grid is persistent (one block per SM walks the tiles in grouped order), so the producer
// loads the next tile while the consumers store this one.
// =================================================================================================
namespace wg {
constexpr int WS_THREADS = 384, CONSUMER_WARPS = 8;
__device__ __forceinline__ void mbar_arrive(unsigned long long* bar) {
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(smem_addr(bar)) : "memory");
}
}  // namespace wg

template <typename T, bool A_MMAJOR, bool B_NMAJOR, int STAGES>
__global__ void __launch_bounds__(wg::WS_THREADS, 1)
matmul_wgmma_ws(const __grid_constant__ TensorMap map_a, const __grid_constant__ TensorMap map_b,
                T* __restrict__ c, i64 M, i64 N, i64 K) {
    using namespace wg;
    extern __shared__ __align__(128) unsigned char ring[];
    unsigned char* smem = ring + ((1024 - (smem_addr(ring) & 1023)) & 1023);
    unsigned long long* full = reinterpret_cast<unsigned long long*>(smem + STAGES * STAGE_BYTES);
    unsigned long long* empty = full + STAGES;
    const int group = threadIdx.x / 128, t = threadIdx.x % 128;
    const i64 tiles = ((M + BM - 1) / BM) * ((N + BN - 1) / BN);
    const int k_tiles = (int)((K + BK - 1) / BK);
    if (threadIdx.x == 0) {
        for (int s = 0; s < STAGES; ++s) {
            mbar_init(&full[s], 1);
            mbar_init(&empty[s], CONSUMER_WARPS);  // one arrival per consumer warp
        }
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    __syncthreads();

    if (group == 0) {  // producer
        asm volatile("setmaxnreg.dec.sync.aligned.u32 40;");
        if (t == 0) {
            int it = 0;  // k-tiles issued so far, over every tile: stage it % STAGES, its use it / STAGES
            for (i64 tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
                i64 m0, n0;
                grouped_origin_of<BM, BN, 8>(tile, M, N, m0, n0);
                for (int kt = 0; kt < k_tiles; ++kt, ++it) {
                    const int s = it % STAGES;
                    // a fresh barrier counts its "previous" phase (parity 1) as complete: no wait at first
                    mbar_wait(&empty[s], ((it / STAGES) & 1) ^ 1);
                    issue_stage<A_MMAJOR, B_NMAJOR>(smem, s, &full[s], &map_a, &map_b, kt, m0, n0);
                }
            }
        }
        return;
    }
    asm volatile("setmaxnreg.inc.sync.aligned.u32 232;");
    const int half = group - 1;
    int it = 0;
    float d[128];
    for (i64 tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
        i64 m0, n0;
        grouped_origin_of<BM, BN, 8>(tile, M, N, m0, n0);
#pragma unroll
        for (int i = 0; i < 128; ++i) d[i] = 0.f;
        for (int kt = 0; kt < k_tiles; ++kt, ++it) {
            const int s = it % STAGES;
            mbar_wait(&full[s], (it / STAGES) & 1);
            mma_stage<T, A_MMAJOR, B_NMAJOR>(d, smem, s, half);
            wgmma_wait<1>();  // the MMAs of the k-tile before are done: hand its stage back
            if (kt > 0 && t % 32 == 0) mbar_arrive(&empty[(it - 1) % STAGES]);
        }
        drain(d);
        if (t % 32 == 0) mbar_arrive(&empty[(it - 1) % STAGES]);  // the producer refills while we store
        store_tile(d, c, M, N, m0 + half * 64, n0, t);
    }
}
