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

#include "wgmma.cuh"

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
