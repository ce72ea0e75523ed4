// What matmul_wgmma.cu and matmul_wgmma_ws.cu share: the tensor-map type, TMA copies, mbarriers,
// wgmma descriptors and instructions, the ring's layout and the guarded store of a tile. sm_90a.

#pragma once

#include "dtypes.cuh"
#include "tiles.cuh"
#include "tc.cuh"
#include "wgmma_n.cuh"

struct alignas(64) TensorMap { unsigned long long opaque[16]; };  // CUtensorMap, without CUDA's headers

namespace wg {

// A K slice is 128 bytes of every row (one swizzle row): 64 k of a 16-bit type, 128 of int8.
constexpr int BM = 128, BN = 256, BK_BYTES = 128, THREADS = 256;
constexpr int A_BYTES = BM * BK_BYTES, B_BYTES = BN * BK_BYTES, STAGE_BYTES = A_BYTES + B_BYTES;
constexpr int BOX_BYTES = 64 * BK_BYTES;  // a 64-row box: the M-/N-major boxes, a warpgroup's rows of a
// A stage of tiles TN wide (wgmma_ws's narrow tiles: 128 columns of c): a's BM rows, then b's TN
template <int TN>
constexpr int stage_bytes = A_BYTES + TN * BK_BYTES;
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
// A consumer's arrival (the specialized kernels' "empty" barriers count one a consumer warp)
__device__ __forceinline__ void mbar_arrive(unsigned long long* bar) {
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(smem_addr(bar)) : "memory");
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

// A tensor map (a __grid_constant__ parameter) fetched ahead: the first copy's TMA would read it
// from the parameters' memory behind a cold L2, in series with the copy's own data
__device__ __forceinline__ void prefetch_map(const TensorMap* map) {
    asm volatile("prefetch.tensormap [%0];" ::"l"(map) : "memory");
}

// The same for a 3-D tensor map: the box at (c0 innermost, c1, c2), as a batch's matrix c2.
__device__ __forceinline__ void tma_load_3d(void* dst, const TensorMap* map, int c0, int c1, int c2,
                                            unsigned long long* bar) {
    asm volatile(
        "cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4}], [%5];"
        ::"r"(smem_addr(dst)), "l"(map), "r"(c0), "r"(c1), "r"(c2), "r"(smem_addr(bar)) : "memory");
}

// A copy at (c0, c1) of a 2-D map, or of matrix z of a 3-D one (THREE_D: a batch's walk).
template <bool THREE_D>
__device__ __forceinline__ void tma_load_z(void* dst, const TensorMap* map, int c0, int c1, int z, unsigned long long* bar) {
    if constexpr (THREE_D)
        tma_load_3d(dst, map, c0, c1, z, bar);
    else
        tma_load(dst, map, c0, c1, bar);
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
// float32 sums) TAIL passes the scales and TRANS_A / TRANS_B (a's tile M-major, b's N-major); TF32
// (m64n256k8) the scales only, both tiles K-major; int8 (m64n256k32, int32 sums) neither. (The operand list is spelled out:
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
template <> struct Mma<float> {  // TF32 (m64n256k8: 32 bytes of k as well), a and b K-major only
    template <int TRANS_A, int TRANS_B>
    __device__ static void run(float* d, unsigned long long desc_a, unsigned long long desc_b, int add = 1) {
        static_assert(TRANS_A == 0 && TRANS_B == 0, "TF32 reads a and b K-major");
        WGMMA_M64N256("wgmma.mma_async.sync.aligned.m64n256k8.f32.tf32.tf32", ", 1, 1", "+f");
    }
};
template <> struct Mma<signed char> {
    template <int TRANS_A, int TRANS_B>  // (unused: 8-bit tiles are K-major)
    __device__ static void run(unsigned* d, unsigned long long desc_a, unsigned long long desc_b, int add = 1) {
        WGMMA_M64N256("wgmma.mma_async.sync.aligned.m64n256k32.s32.s8.s8", "", "+r");
    }
};

// The copy of k-tile kt of a's TILE_M rows from m0 into a stage's a (BM or 64 rows; a stage keeps
// its layout either way): one box of a row-major a, 64-row boxes of an M-major one. THREE_D: of
// matrix za of a batch's 3-D map.
template <typename T, bool A_MMAJOR, int TILE_M, bool THREE_D = false>
__device__ __forceinline__ void load_a(unsigned char* a, const TensorMap* map_a, int kt, i64 m0, unsigned long long* bar,
                                       int za = 0) {
    if (A_MMAJOR) {
#pragma unroll
        for (int j = 0; j < TILE_M / 64; ++j)
            tma_load_z<THREE_D>(a + j * BOX_BYTES, map_a, (int)m0 + 64 * j, kt * bk_of<T>, za, bar);
    } else {
        tma_load_z<THREE_D>(a, map_a, kt * bk_of<T>, (int)m0, za, bar);
    }
}

// The copies of k-tile kt of the block tile at (m0, n0), TN columns wide, into stage s of the ring
// (one thread); THREE_D: of a's matrix za and b's zb.
template <typename T, bool A_MMAJOR, bool B_NMAJOR, int TILE_M = BM, int TN = BN, bool THREE_D = false>
__device__ __forceinline__ void issue_stage(unsigned char* smem, int s, unsigned long long* bar, const TensorMap* map_a,
                                            const TensorMap* map_b, int kt, i64 m0, i64 n0, int za = 0, int zb = 0) {
    unsigned char* a = smem + s * stage_bytes<TN>;
    unsigned char* b = a + A_BYTES;
    mbar_expect_tx(bar, TILE_M * BK_BYTES + TN * BK_BYTES);
    load_a<T, A_MMAJOR, TILE_M, THREE_D>(a, map_a, kt, m0, bar, za);
    if (B_NMAJOR) {
#pragma unroll
        for (int j = 0; j < TN / 64; ++j)
            tma_load_z<THREE_D>(b + j * BOX_BYTES, map_b, (int)n0 + 64 * j, kt * bk_of<T>, zb, bar);
    } else {
        tma_load_z<THREE_D>(b, map_b, kt * bk_of<T>, (int)n0, zb, bar);
    }
}

// The four MMAs of stage s (32 bytes of k each) for a warpgroup (its 64 rows of the block tile, TN
// columns: 256, or 128 through wgmma_n.cuh's m64n128k16); d += a b, or d = a b where `add` is 0. From
// descriptors made once a kernel (in uniform registers where `half` is known uniform: broadcast from
// lane 0), da of stage 0's a rows of the warpgroup (``descriptor_a``), db of its b
// (``descriptor_b``): stage s and k step k lie s stage_bytes<TN> bytes, and 32 k bytes (K-major) or
// 16 x 128 k bytes (M- / N-major: 16 k-rows) further, added to the descriptors' start addresses (>> 4;
// no carry out of their 14 bits: shared memory ends below 256 KiB). Rebuilt a slice from the stage's
// address and a `half` from threadIdx, they were made in vector registers and moved over (8 R2UR a
// slice, 64 instructions from the stage's wait to its last MMA; matmul_fp8.cu's mma_stage_fp8 likewise).
template <bool MN_MAJOR>
constexpr unsigned long long desc_k_step = MN_MAJOR ? 16 * 128 / 16 : 32 / 16;
template <bool A_MMAJOR>
__device__ __forceinline__ unsigned long long descriptor_a(const unsigned char* smem, int half) {
    return A_MMAJOR ? descriptor(smem + half * BOX_BYTES, BOX_BYTES, 1024) : descriptor(smem + half * BOX_BYTES, 16, 1024);
}
template <bool B_NMAJOR>
__device__ __forceinline__ unsigned long long descriptor_b(const unsigned char* smem) {
    return B_NMAJOR ? descriptor(smem + A_BYTES, BOX_BYTES, 1024) : descriptor(smem + A_BYTES, 16, 1024);
}
template <typename T, bool A_MMAJOR, bool B_NMAJOR, int TN = BN>
__device__ __forceinline__ void mma_stage_at(acc_t<T>* d, unsigned long long da, unsigned long long db, int s,
                                             int add = 1) {
    const unsigned long long at = (unsigned long long)(s * (stage_bytes<TN> >> 4));
    wgmma_fence();
#pragma unroll
    for (int k = 0; k < BK_BYTES / 32; ++k) {
        const unsigned long long a = da + at + k * desc_k_step<A_MMAJOR>, b = db + at + k * desc_k_step<B_NMAJOR>;
        if constexpr (TN == BN)
            Mma<T>::template run<A_MMAJOR ? 1 : 0, B_NMAJOR ? 1 : 0>(d, a, b, k > 0 || add);
        else
            MmaN<T, TN>::template run<A_MMAJOR ? 1 : 0, B_NMAJOR ? 1 : 0>(d, a, b, k > 0 || add);
    }
    wgmma_commit();
}

// The MMAs of stage s for consumer warpgroup `half` (a's rows 64 half ..), TN columns, their
// descriptors made from the stage's address (the kernels not yet moved to mma_stage_at's).
template <typename T, bool A_MMAJOR, bool B_NMAJOR, int TN = BN>
__device__ __forceinline__ void mma_stage(acc_t<T>* d, unsigned char* smem, int s, int half, int add = 1) {
    mma_stage_at<T, A_MMAJOR, B_NMAJOR, TN>(d, descriptor_a<A_MMAJOR>(smem, half), descriptor_b<B_NMAJOR>(smem), s, add);
}

// The ring's next stage and the parity of its use, carried from slice to slice (it % STAGES and
// it / STAGES cost a division before each wait where STAGES is no power of two)
template <int STAGES>
__device__ __forceinline__ void next_stage(int& s, unsigned& phase) {
    if (++s == STAGES) s = 0, phase ^= 1;
}

// After the last MMAs: wait for them, then keep the compiler from reading d before (the wait names
// no registers).
__device__ __forceinline__ void touch(float& v) { asm volatile("" : "+f"(v)::"memory"); }
__device__ __forceinline__ void touch(unsigned& v) { asm volatile("" : "+r"(v)::"memory"); }
template <typename A, int REGS = BN / 2>
__device__ __forceinline__ void drain(A* d) {
    wgmma_wait<0>();
#pragma unroll
    for (int i = 0; i < REGS; ++i) touch(d[i]);
}

// A warpgroup's 64 x TN tile from d: lane l of warp w holds rows 16 w + l / 4 and + 8, columns
// 8 j + 2 (l % 4) and + 1. (Out: c's type, or float for split K's partial products.)
// A tile inside c whose rows are of even length stores its pairs unguarded, from two row pointers:
// the guarded path's 64-bit tests a pair cost about 470 instructions a warp a 64 x 128 tile, this
// path about 80 (matmul_fp8.cu's SASS, sm_90a).
template <typename T, typename Out, int TN = BN>
__device__ __forceinline__ void store_tile(const acc_t<T>* d, Out* c, i64 M, i64 N, i64 r0, i64 n0, int t) {
    const int warp = t / 32, lane = t % 32;
    const i64 r = r0 + 16 * warp + lane / 4;
    if (r0 + 64 <= M && n0 + TN <= N && (N & 1) == 0) {
        Out* p = c + r * N + n0 + 2 * (lane % 4);
#pragma unroll
        for (int j = 0; j < TN / 8; ++j) {
            put2(p + 8 * j, d[4 * j], d[4 * j + 1]);
            put2(p + 8 * N + 8 * j, d[4 * j + 2], d[4 * j + 3]);
        }
        return;
    }
#pragma unroll
    for (int j = 0; j < TN / 8; ++j) {
        const i64 col = n0 + 8 * j + 2 * (lane % 4);
        store2(c, M, N, r, col, d[4 * j], d[4 * j + 1]);
        store2(c, M, N, r + 8, col, d[4 * j + 2], d[4 * j + 3]);
    }
}

// c's bias added to a warpgroup's 64 x TN float32 sums (the tile store_tile writes), before their
// one rounding: bias element (r, n) at r * sbm + n * sbn (sbm = 0: a row of N, broadcast down M).
// The common bias, a contiguous row of N broadcast down M (nn.Linear's), takes one 32-bit load
// per column pair, shared by the thread's two rows: 32 loads, not 128 with 64-bit index math
// (rows past M get it too; they are never stored). PAIRS false keeps the element path alone: the
// one-consumer instance holds 232 registers, and NVRTC 13.0 spilled it with both paths.
template <bool PAIRS, typename B, int TN = BN>
__device__ __forceinline__ void add_bias(float* d, const B* __restrict__ bias, i64 sbm, i64 sbn, i64 M, i64 N,
                                         i64 r0, i64 n0, int t) {
    const int warp = t / 32, lane = t % 32;
    if (PAIRS && sbm == 0 && sbn == 1 && n0 + TN <= N && (reinterpret_cast<unsigned long long>(bias) & 3) == 0) {
        const unsigned* pairs = reinterpret_cast<const unsigned*>(bias + n0) + lane % 4;
#pragma unroll
        for (int j = 0; j < TN / 8; ++j) {
            const unsigned v = __ldg(pairs + 4 * j);
            const float lo = to_float(B{(unsigned short)(v & 0xFFFF)}), hi = to_float(B{(unsigned short)(v >> 16)});
            d[4 * j] += lo, d[4 * j + 2] += lo;
            d[4 * j + 1] += hi, d[4 * j + 3] += hi;
        }
        return;
    }
    const i64 r = r0 + 16 * warp + lane / 4;
#pragma unroll
    for (int j = 0; j < TN / 8; ++j) {
        const i64 col = n0 + 8 * j + 2 * (lane % 4);
#pragma unroll
        for (int h = 0; h < 2; ++h) {  // rows r and r + 8
            const i64 row = r + 8 * h;
            if (row >= M) continue;
            if (col < N) d[4 * j + 2 * h] += to_float(bias[row * sbm + col * sbn]);
            if (col + 1 < N) d[4 * j + 2 * h + 1] += to_float(bias[row * sbm + (col + 1) * sbn]);
        }
    }
}

// ---- c through shared memory and TMA stores (wgmma_ws's store_tma, the grouped weight gradient) ----
constexpr int C_BYTES = 2 * 2 * BOX_BYTES;  // c's staging: two 64 x 64 boxes for each consumer warpgroup

__device__ __forceinline__ void tma_store(const TensorMap* map, const void* src, int c0, int c1) {
    asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%1, %2}], [%3];"
                 ::"l"(map), "r"(c0), "r"(c1), "r"(smem_addr(src)) : "memory");
}
// The same into a 3-D tensor map at (c0 innermost, c1, c2): a batch's matrix c2, clipped at its edges.
__device__ __forceinline__ void tma_store_3d(const TensorMap* map, const void* src, int c0, int c1, int c2) {
    asm volatile("cp.async.bulk.tensor.3d.global.shared::cta.bulk_group [%0, {%1, %2, %3}], [%4];"
                 ::"l"(map), "r"(c0), "r"(c1), "r"(c2), "r"(smem_addr(src)) : "memory");
}

// A warpgroup's named barrier (ids 1, 2; 0 is __syncthreads').
__device__ __forceinline__ void warpgroup_sync(int half) {
    asm volatile("bar.sync %0, 128;" ::"r"(1 + half) : "memory");
}

// The hand-over of a warpgroup's 64 x TN sums (wgmma_ws's stream-K parts and split K's runs, FP8's runs) through a slot of
// 64 TN floats: thread t's TN / 2 as TN / 8 float4s, 128 threads apart (each store instruction writes
// 2 KiB in a row). `live`: the thread's rows are in c (a warp's 16 rows past M move nothing: at 16
// rows of a, three warps of four).
template <int TN>
__device__ __forceinline__ void slot_put(const float* d, float* slot, unsigned* flag, int t, int half, bool live) {
    float4* p = reinterpret_cast<float4*>(slot);
    if (live) {
#pragma unroll
        for (int i = 0; i < TN / 8; ++i) p[128 * i + t] = make_float4(d[4 * i], d[4 * i + 1], d[4 * i + 2], d[4 * i + 3]);
    }
    __threadfence();
    warpgroup_sync(half);
    if (t == 0) asm volatile("st.release.gpu.global.u32 [%0], %1;" ::"l"(flag), "r"(1u) : "memory");
}
template <int TN>
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
    for (int i = 0; i < TN / 8; ++i) {
        const float4 v = __ldcg(p + 128 * i + t);  // from L2: this SM's L1 never held it
        d[4 * i] += v.x, d[4 * i + 1] += v.y, d[4 * i + 2] += v.z, d[4 * i + 3] += v.w;
    }
}

// A warpgroup's 64 x TN tile of sums, rounded to c's type: word p holds d[2 p] and d[2 p + 1].
template <typename T, int WORDS>
__device__ __forceinline__ void pack(const float* d, unsigned* w) {
#pragma unroll
    for (int p = 0; p < WORDS; ++p) w[p] = from_float<T>(d[2 * p]).x | (unsigned)from_float<T>(d[2 * p + 1]).x << 16;
}

// Columns 64 j .. 64 j + 63 of a packed 64 x TN tile into a 64 x 64 box: rows of 128 bytes,
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

// Box J of a tile of BOXES boxes through buffer J % 2: wait until the store that last used it has
// read it, fill it, make it visible to the TMA unit, and store it at (m0, n0 + 64 J) (THREE_D: of
// matrix c2). The store before box 0 is the last tile's box BOXES - 1: with BOXES odd it used
// buffer 0 too, so box 0 waits for every store (a 192-column tile's box 2, still being read by
// TMA while the next tile's box 0 was written over it, corrupted c at short K, where boxes go out
// back to back).
template <int J, bool THREE_D = false, int BOXES = 4>
__device__ __forceinline__ void store_box(const TensorMap* map, const unsigned* w, unsigned char* boxes, int t, int half,
                                          i64 m0, i64 n0, int c2 = 0) {
    unsigned char* box = boxes + (J % 2) * BOX_BYTES;
    if constexpr (J == 0 && BOXES % 2 == 1) {
        if (t == 0) asm volatile("cp.async.bulk.wait_group.read 0;" ::: "memory");
    } else {
        if (t == 0) asm volatile("cp.async.bulk.wait_group.read 1;" ::: "memory");
    }
    warpgroup_sync(half);
    stage_box<J>(w, box, t);
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    warpgroup_sync(half);
    if (t == 0) {
        if constexpr (THREE_D)
            tma_store_3d(map, box, (int)n0 + 64 * J, (int)m0, c2);
        else
            tma_store(map, box, (int)n0 + 64 * J, (int)m0);
        asm volatile("cp.async.bulk.commit_group;" ::: "memory");
    }
}

// ---- blocks in pairs (a thread-block cluster of 2): wgmma_ws's, matmul_fp8's and wgmma_swap's ----
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
// The same from matrix z of a 3-D map (THREE_D), else tma_load_multicast.
template <bool THREE_D>
__device__ __forceinline__ void tma_load_multicast_z(void* dst, const TensorMap* map, int c0, int c1, int z,
                                                     unsigned long long* bar, unsigned short mask) {
    if constexpr (THREE_D)
        asm volatile(
            "cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster"
            " [%0], [%1, {%2, %3, %4}], [%5], %6;" ::"r"(smem_addr(dst)), "l"(map), "r"(c0), "r"(c1), "r"(z),
            "r"(smem_addr(bar)), "h"(mask) : "memory");
    else
        tma_load_multicast(dst, map, c0, c1, bar, mask);
}
__device__ __forceinline__ void cluster_sync() {
    asm volatile("barrier.cluster.arrive;\nbarrier.cluster.wait;" ::: "memory");
}
__device__ __forceinline__ unsigned cluster_rank() {
    unsigned r;
    asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
    return r;
}
// The address of `p` (this block's shared memory) in cluster block `rank`'s, and a float read there.
__device__ __forceinline__ unsigned cluster_address(const void* p, unsigned rank) {
    unsigned remote;
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(remote) : "r"(smem_addr(p)), "r"(rank));
    return remote;
}
__device__ __forceinline__ float ld_cluster(unsigned address) {
    float v;
    asm volatile("ld.shared::cluster.f32 %0, [%1];" : "=f"(v) : "r"(address) : "memory");
    return v;
}

// A pair's block `rank` brings its half of k-tile kt of a TN-row operand tile (b's, or wgmma_swap's
// W) and multicasts it into both blocks: rows TN / 2 rank .. of a K-major tile, or its 64-column
// boxes TN / 128 rank .. of an N-major one, block 0 also the last box of an odd count. The stage's
// barrier expects the whole tile: the other half comes from the other block.
template <typename T, bool B_NMAJOR, int TN, bool THREE_D = false>
__device__ __forceinline__ void load_b_half(unsigned char* b, const TensorMap* map_b, int kt, i64 n0,
                                            unsigned long long* bar, unsigned rank, int zb = 0) {
    constexpr int HALF_BOXES = TN / 128;  // an N-major b's 64-column boxes a block brings (TN 192: two, one)
    if (B_NMAJOR) {
        // (trip counts known at compile time: the producer has 40 registers)
#pragma unroll
        for (int j = 0; j < HALF_BOXES; ++j)
            tma_load_multicast_z<THREE_D>(b + (HALF_BOXES * rank + j) * BOX_BYTES, map_b,
                                          (int)n0 + 64 * (HALF_BOXES * rank + j), kt * bk_of<T>, zb, bar, 3);
        if constexpr (TN % 128 != 0) {  // the odd box: block 0's, the last
            if (rank == 0)
                tma_load_multicast_z<THREE_D>(b + (TN / 64 - 1) * BOX_BYTES, map_b, (int)n0 + TN - 64, kt * bk_of<T>, zb,
                                              bar, 3);
        }
    } else {
        tma_load_multicast_z<THREE_D>(b + rank * (TN * BK_BYTES / 2), map_b, kt * bk_of<T>, (int)n0 + (TN / 2) * rank, zb,
                                      bar, 3);
    }
}

// The copies of k-tile kt for a block of a pair: a as issue_stage does, b's half `rank`
// (``load_b_half``); THREE_D as issue_stage.
template <typename T, bool A_MMAJOR, bool B_NMAJOR, int TN, bool THREE_D = false>
__device__ __forceinline__ void issue_stage_pair(unsigned char* smem, int s, unsigned long long* bar, const TensorMap* map_a,
                                                 const TensorMap* map_b, int kt, i64 m0, i64 n0, unsigned rank,
                                                 int za = 0, int zb = 0) {
    unsigned char* a = smem + s * stage_bytes<TN>;
    unsigned char* b = a + A_BYTES;
    mbar_expect_tx(bar, stage_bytes<TN>);
    load_a<T, A_MMAJOR, BM, THREE_D>(a, map_a, kt, m0, bar, za);
    load_b_half<T, B_NMAJOR, TN, THREE_D>(b, map_b, kt, n0, bar, rank, zb);
}

// The specialized kernels' ring barriers (wgmma_ws, matmul_fp8), set up by thread 0: a stage's
// "full" (the producer's arrival and the copies' bytes) and "empty" (one arrival per consumer warp
// of the pair: `consumers` warpgroups a block), ready in every block of the cluster before any
// copy targets them.
template <int STAGES, int CLUSTER>
__device__ __forceinline__ void init_ring(unsigned long long* full, unsigned long long* empty, int consumers) {
    if (threadIdx.x == 0) {
        for (int s = 0; s < STAGES; ++s) {
            mbar_init(&full[s], 1);
            mbar_init(&empty[s], 4 * consumers * CLUSTER);
        }
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    if (CLUSTER > 1) cluster_sync();
    else __syncthreads();
}

}  // namespace wg
