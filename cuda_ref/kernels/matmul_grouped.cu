// Grouped matrix multiplication for mixture-of-experts layers on Hopper's warpgroup MMA (sm_90a):
// F.grouped_mm's 2-D x 3-D form. a (T, K) holds every group's rows, sorted by group; offs (G,)
// the end of each group's rows; b (G, K, N) the groups' weights, row-major (N-major) or each the
// transpose of an (N, K) weight (K-major); c (T, N): rows offs[g-1]..offs[g] are a[rows] @ b[g].
// Launch geometry and checks live in cuda_ref/_grouped.py.
//
// matmul_fp8.cu's structure for 16-bit types: one block an SM, a producer warpgroup (one thread
// issues the TMA copies into a ring of 64-deep k-slices) and two consumer warpgroups of 64 rows, a
// tile 128 x TN. The group sizes live on the GPU (reading them on the host would wait for it): each
// block walks the list of every group's tiles (group by group, grouped order inside each), taking
// every gridDim.x-th, and finds a tile's group by reading offs as it goes. A group's end is clamped
// to [its start, T], so offsets that are not non-decreasing or pass T store nothing outside c.
// a through a 2-D map (a tile past its group's rows reads the next group's, whose products are not
// stored), b through a 3-D one, the group its outer extent (its K tail reads zeros); c by guarded
// stores up to the group's end.

#include "wgmma.cuh"

namespace wg {
// The walk over every group's tiles: `find(item)` moves to the group holding tile `item` of the
// list (items only grow), giving the group, its rows [start, end) and the tile's origin in c.
template <int TN>
struct GroupWalk {
    const int* offs;
    const i64 offs_stride, T, N;
    const int G, group_m;
    int g = -1;
    i64 start = 0, end = 0;
    unsigned seen = 0, tiles = 0;  // the tiles of the groups before g, and g's
    __device__ __forceinline__ GroupWalk(const int* offs, i64 offs_stride, i64 T, i64 N, int G, int group_m)
        : offs(offs), offs_stride(offs_stride), T(T), N(N), G(G), group_m(group_m) {}
    __device__ __forceinline__ bool find(unsigned item, i64& m0, i64& n0) {
        while (item >= seen + tiles) {
            if (g + 1 >= G) return false;
            seen += tiles;
            start = end;
            ++g;
            end = min(max((i64)__ldg(offs + g * offs_stride), start), T);
            tiles = (unsigned)((end - start + BM - 1) / BM) * (unsigned)((N + TN - 1) / TN);
        }
        grouped_origin_of<BM, TN>(item - seen, end - start, N, group_m, m0, n0);
        m0 += start;
        return true;
    }
};
}  // namespace wg

// B_NMAJOR: b (G, K, N) row-major, its 3-D map (N, K, G) in 64 x 64 boxes; else each b[g] K-major,
// the map (K, N, G) in boxes of 64 k x TN rows. `items`: the tiles the grid's blocks walk at most
// (the host's bound over any split); a block stops at the list's end.
template <typename T, bool B_NMAJOR, int STAGES, int TN>
__global__ void __launch_bounds__(384, 1)
matmul_grouped(const __grid_constant__ TensorMap map_a, const __grid_constant__ TensorMap map_b, T* __restrict__ c,
               i64 rows, i64 N, const int* __restrict__ offs, i64 offs_stride, int G, int group_m, unsigned k_tiles) {
    using namespace wg;
    static_assert(sizeof(T) == 2, "16-bit operands");
    static_assert(TN == BN || TN == 128, "tiles of 256 or 128 columns");
    extern __shared__ __align__(128) unsigned char ring[];
    unsigned char* smem = ring + ((1024 - (smem_addr(ring) & 1023)) & 1023);
    unsigned long long* full = reinterpret_cast<unsigned long long*>(smem + STAGES * stage_bytes<TN>);
    unsigned long long* empty = full + STAGES;
    const int group = threadIdx.x / 128, t = threadIdx.x % 128;
    init_ring<STAGES, 1>(full, empty, 2);

    if (group == 0) {  // producer
        asm volatile("setmaxnreg.dec.sync.aligned.u32 40;");
        if (t == 0) {
            int it = 0;  // k-slices issued so far, over every tile: stage it % STAGES, its use it / STAGES
            GroupWalk<TN> walk(offs, offs_stride, rows, N, G, group_m);
            i64 m0, n0;
            for (unsigned item = blockIdx.x; walk.find(item, m0, n0); item += gridDim.x) {
                for (int kt = 0; kt < (int)k_tiles; ++kt, ++it) {
                    const int s = it % STAGES;
                    mbar_wait(&empty[s], ((it / STAGES) & 1) ^ 1);  // (a fresh barrier's parity 1 is complete)
                    unsigned char* a = smem + s * stage_bytes<TN>;
                    unsigned char* b = a + A_BYTES;
                    mbar_expect_tx(&full[s], stage_bytes<TN>);
                    tma_load(a, &map_a, kt * bk_of<T>, (int)m0, &full[s]);
                    if (B_NMAJOR) {
#pragma unroll
                        for (int j = 0; j < TN / 64; ++j)
                            tma_load_3d(b + j * BOX_BYTES, &map_b, (int)n0 + 64 * j, kt * bk_of<T>, walk.g, &full[s]);
                    } else {
                        tma_load_3d(b, &map_b, kt * bk_of<T>, (int)n0, walk.g, &full[s]);
                    }
                }
            }
        }
        return;
    }
    asm volatile("setmaxnreg.inc.sync.aligned.u32 232;");
    const int half = group - 1, lane = t % 32;
    acc_t<T> d[TN / 2];
    auto release = [&](int s) {  // a warp hands stage s back to the producer
        if (lane == 0) mbar_arrive(&empty[s]);
    };
    int it = 0;
    GroupWalk<TN> walk(offs, offs_stride, rows, N, G, group_m);
    i64 m0, n0;
    for (unsigned item = blockIdx.x; walk.find(item, m0, n0); item += gridDim.x) {
        for (int kt = 0; kt < (int)k_tiles; ++kt, ++it) {
            const int s = it % STAGES;
            mbar_wait(&full[s], (it / STAGES) & 1);
            mma_stage<T, false, B_NMAJOR, TN>(d, smem, s, half, kt > 0);
            wgmma_wait<1>();  // the slice before's MMAs are done: hand its stage back
            if (kt > 0) release((it - 1) % STAGES);
        }
        drain<acc_t<T>, TN / 2>(d);
        release((it - 1) % STAGES);
        store_tile<T, T, TN>(d, c, walk.end, N, m0 + half * 64, n0, t);  // (rows up to the group's end)
    }
}

// b's gradient, a product grouped over its reduction: c[g] (K, N) = a[rows of g]^T grad[rows of g],
// c (G, K, N) contiguous. Tiles of c[g] 128 (K) x TN (N), every group the same count; a block takes
// every gridDim.x-th of the G tile lists end to end. A tile's k-slices are its group's rows, 64 at a
// time from the group's start (rows [offs[g-1], offs[g]) clamped to [0, T], as triton_impl's
// weight_grad): a as the M-major operand (its rows of K the 128-byte lines of 64 x 64 boxes), grad
// as an N-major b. The last slice's lines past the group's end hold the next group's rows: the two
// consumer warpgroups zero them in shared memory (both operands: 0 x inf would be NaN) before its
// MMAs. An empty group's tiles are zeros. STORE_TMA: c goes out through shared boxes and TMA stores
// (map_c: (N, K, G), 64 x 64 boxes; c's rows 16-byte aligned), which drain while the next tile's
// MMAs run: with few rows a group the product is mostly c's bytes. Else guarded stores.
template <typename T, int STAGES, int TN, bool STORE_TMA>
__global__ void __launch_bounds__(384, 1)
matmul_grouped_wgrad(const __grid_constant__ TensorMap map_a, const __grid_constant__ TensorMap map_g,
                     const __grid_constant__ TensorMap map_c, T* __restrict__ c, i64 rows, i64 K, i64 N,
                     const int* __restrict__ offs, i64 offs_stride, int G, int group_m) {
    using namespace wg;
    static_assert(sizeof(T) == 2, "16-bit operands");
    static_assert(TN == BN || TN == 128, "tiles of 256 or 128 columns");
    extern __shared__ __align__(128) unsigned char ring[];
    unsigned char* smem = ring + ((1024 - (smem_addr(ring) & 1023)) & 1023);
    unsigned char* staging = smem + STAGES * stage_bytes<TN>;  // STORE_TMA: c's boxes
    unsigned long long* full = reinterpret_cast<unsigned long long*>(staging + C_BYTES);
    unsigned long long* empty = full + STAGES;
    const int group = threadIdx.x / 128, t = threadIdx.x % 128;
    init_ring<STAGES, 1>(full, empty, 2);
    const unsigned per_group = (unsigned)((K + BM - 1) / BM) * (unsigned)((N + TN - 1) / TN);
    // tile `item`'s group, its first row and row count, and the tile's origin in c[g] (32 bits:
    // the consumers keep 128 sums in the 168 registers a thread of 384 has before setmaxnreg)
    auto find = [&](unsigned item, int& g, int& start, int& count, int& m0, int& n0) {
        g = (int)(item / per_group);
        const int T = (int)rows;
        start = g > 0 ? min(max(__ldg(offs + (g - 1) * offs_stride), 0), T) : 0;
        count = min(max(__ldg(offs + g * offs_stride), start), T) - start;
        i64 m, n;
        grouped_origin_of<BM, TN>(item % per_group, K, N, group_m, m, n);
        m0 = (int)m, n0 = (int)n;
    };
    const unsigned items = per_group * (unsigned)G;

    if (group == 0) {  // producer
        asm volatile("setmaxnreg.dec.sync.aligned.u32 40;");
        if (t == 0) {
            int it = 0;
            for (unsigned item = blockIdx.x; item < items; item += gridDim.x) {
                int g, start, count, m0, n0;
                find(item, g, start, count, m0, n0);
                for (int r = start; r < start + count; r += 64, ++it) {
                    const int s = it % STAGES;
                    mbar_wait(&empty[s], ((it / STAGES) & 1) ^ 1);
                    unsigned char* a = smem + s * stage_bytes<TN>;
                    unsigned char* b = a + A_BYTES;
                    mbar_expect_tx(&full[s], stage_bytes<TN>);
                    tma_load(a, &map_a, m0, r, &full[s]);
                    tma_load(a + BOX_BYTES, &map_a, m0 + 64, r, &full[s]);
#pragma unroll
                    for (int j = 0; j < TN / 64; ++j) tma_load(b + j * BOX_BYTES, &map_g, n0 + 64 * j, r, &full[s]);
                }
            }
        }
        return;
    }
    asm volatile("setmaxnreg.inc.sync.aligned.u32 232;");
    const int half = group - 1, lane = t % 32;
    acc_t<T> d[TN / 2];
    auto release = [&](int s) {
        if (lane == 0) mbar_arrive(&empty[s]);
    };
    int it = 0;
    for (unsigned item = blockIdx.x; item < items; item += gridDim.x) {
        int g, start, count, m0, n0;
        find(item, g, start, count, m0, n0);
        const int slices = (count + 63) / 64;
        for (int kt = 0; kt < slices; ++kt, ++it) {
            const int s = it % STAGES;
            mbar_wait(&full[s], (it / STAGES) & 1);
            const int valid = min(count - 64 * kt, 64);
            if (valid < 64) {  // lines valid.. of every box of the stage: this warpgroup's a box, half of b's
                unsigned char* a = smem + s * stage_bytes<TN>;
                const int words = (64 - valid) * 8;  // 16-byte words a box from line `valid`
                for (int box = half; box < 2 + TN / 64; box += 2) {  // a's boxes are 0, 1; b's from 2
                    uint4* p = reinterpret_cast<uint4*>(a + box * BOX_BYTES + valid * BK_BYTES);
                    for (int i = t; i < words; i += 128) p[i] = make_uint4(0, 0, 0, 0);
                }
                asm volatile("fence.proxy.async.shared::cta;" ::: "memory");  // the MMAs read what these wrote
                asm volatile("bar.sync 3, 256;" ::: "memory");  // both warpgroups' zeros (1, 2: warpgroup_sync's)
            }
            mma_stage<T, true, true, TN>(d, smem, s, half, kt > 0);
            wgmma_wait<1>();
            if (kt > 0) release((it - 1) % STAGES);
        }
        drain<acc_t<T>, TN / 2>(d);  // (with no slices too: ptxas then needs no wait of its own)
        if (slices > 0) release((it - 1) % STAGES);
        // (an empty group's tile is zeros, written without touching d: zeroing d on one path and
        // not the other made ptxas spill it, and zeroing it always made it serialize the MMAs)
        if constexpr (STORE_TMA) {
            unsigned words[TN / 4];
            if (slices > 0) {
                pack<T, TN / 4>(d, words);
            } else {
#pragma unroll
                for (int p = 0; p < TN / 4; ++p) words[p] = 0;
            }
            unsigned char* boxes = staging + half * (C_BYTES / 2);
            store_box<0, true>(&map_c, words, boxes, t, half, m0 + half * 64, n0, g);
            store_box<1, true>(&map_c, words, boxes, t, half, m0 + half * 64, n0, g);
            if constexpr (TN > 128) {
                store_box<2, true>(&map_c, words, boxes, t, half, m0 + half * 64, n0, g);
                store_box<3, true>(&map_c, words, boxes, t, half, m0 + half * 64, n0, g);
            }
        } else if (slices > 0) {
            store_tile<T, T, TN>(d, c + (i64)g * K * N, K, N, m0 + half * 64, n0, t);
        } else {
            const i64 r = m0 + half * 64 + 16 * (t / 32) + t % 32 / 4;
#pragma unroll
            for (int j = 0; j < TN / 8; ++j) {
                const i64 col = n0 + 8 * j + 2 * (t % 4);
                store2(c + (i64)g * K * N, K, N, r, col, 0.f, 0.f);
                store2(c + (i64)g * K * N, K, N, r + 8, col, 0.f, 0.f);
            }
        }
    }
    if (STORE_TMA && t == 0) asm volatile("cp.async.bulk.wait_group 0;" ::: "memory");  // before the block's memory goes
}
