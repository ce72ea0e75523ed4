// short_k (cuda_ref/_matmul_short_k.py plans it): 16-bit products of K <= 16, a low-rank adapter's
// up projection (M x r times r x N). Writing c is the work: 4302 x 7168 x 8 writes 61.7 MB and
// reads 0.2 MB. So nothing is copied and nothing waits on a wide tile's pipeline: a and b are read
// where they lie, element by element through their strides (any layout, any alignment: their
// bytes are a few KiB a block), and c leaves in 16-byte stores of whole rows of a tile.
//
// A block owns 128 columns of c. It loads b's 16 x 128 slice once (zeros past K and N), keeps each
// warp's fragments of it in registers, and walks its row tiles of 64 (gridDim.y apart): a's 64 x 16
// tile into shared memory, one m16n8k16 per 16 x 8 piece (2 x 2 warps of 32 x 64), the sums
// (plus a bias, before the one rounding) into a shared tile of c, then c's rows out as 16-byte chunks
// where c's rows are 16-byte aligned, else element by element. mma.sync's pieces come from
// mma_sync.cuh. Tiles are padded rows (a: 16 + 8 elements, 48 bytes; a row-major b and c: 128 + 8,
// 272 bytes), so ldmatrix's eight rows fall on distinct banks.

#include "dtypes.cuh"
#include "tc.cuh"
#include "mma_sync.cuh"

namespace sk {
constexpr int BM = 64, BN = 128, KP = 16, THREADS = 128, PAD = 8;
constexpr int AK = KP + PAD;  // a's tile row (and a K-major b's): 16 k, padded
constexpr int CN = BN + PAD;  // c's tile row (and a row-major b's): 128 columns, padded
}  // namespace sk

template <typename T, bool B_KMAJOR>
__global__ void __launch_bounds__(sk::THREADS)
matmul_short_k(const T* __restrict__ a, const T* __restrict__ b, T* __restrict__ c, i64 M, i64 N, i64 K,
               i64 sam, i64 sak, i64 sbk, i64 sbn, const T* __restrict__ bias, i64 bsm, i64 bsn) {
    using namespace sk;
    using namespace tc;
    static_assert(sizeof(T) == 2, "16-bit types: m16n8k16");
    __shared__ __align__(16) unsigned short a_s[BM * AK];
    __shared__ __align__(16) unsigned short b_s[B_KMAJOR ? BN * AK : KP * CN];
    __shared__ __align__(16) unsigned short c_s[BM * CN];
    const unsigned short* a16 = reinterpret_cast<const unsigned short*>(a);
    const unsigned short* b16 = reinterpret_cast<const unsigned short*>(b);
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int wm = (warp / 2) * 32, wn = (warp % 2) * 64;
    const i64 n0 = (i64)blockIdx.x * BN;
    // b's slice, once: consecutive threads read along b's contiguous side
    for (int i = threadIdx.x; i < KP * BN; i += THREADS) {
        const int k = B_KMAJOR ? i % KP : i / BN, n = B_KMAJOR ? i / KP : i % BN;
        const unsigned short v = k < K && n0 + n < N ? b16[k * sbk + (n0 + n) * sbn] : 0;
        b_s[B_KMAJOR ? n * AK + k : k * CN + n] = v;
    }
    __syncthreads();
    unsigned fb[8][2];  // this warp's 64 columns as 8 MMA tiles of 8, all 16 k
#pragma unroll
    for (int j = 0; j < 8; j += 2) {
        unsigned x[4];
        if constexpr (B_KMAJOR)  // rows are n: (n 0-7, k 0-7), (n 0-7, k 8-15), (n 8-15, k 0-7), (n 8-15, k 8-15)
            ldmatrix_x4(x, b_s + (wn + 8 * j + lane % 8 + 8 * (lane / 16)) * AK + 8 * ((lane / 8) % 2));
        else  // rows are k: the same four matrices, transposed on the way
            ldmatrix_x4_trans(x, b_s + (lane % 16) * CN + wn + 8 * j + 8 * (lane / 16));
        fb[j][0] = x[0], fb[j][1] = x[1], fb[j + 1][0] = x[2], fb[j + 1][1] = x[3];
    }
    const bool vec = N % 8 == 0 && reinterpret_cast<unsigned long long>(c) % 16 == 0;

    for (i64 m0 = (i64)blockIdx.y * BM; m0 < M; m0 += (i64)gridDim.y * BM) {
        for (int i = threadIdx.x; i < BM * KP; i += THREADS) {
            const int r = i / KP, k = i % KP;
            a_s[r * AK + k] = k < K && m0 + r < M ? a16[(m0 + r) * sam + k * sak] : 0;
        }
        __syncthreads();  // a's tile is whole; the stores of the tile before have read c_s
#pragma unroll
        for (int i = 0; i < 2; ++i) {  // 16 rows at a time: 32 sums a thread live, not 64
            unsigned fa[4];
            ldmatrix_x4(fa, a_s + (wm + 16 * i + lane % 16) * AK + 8 * (lane / 16));
            float acc[8][4] = {};
#pragma unroll
            for (int j = 0; j < 8; ++j) mma_m16n8<T>(acc[j], fa, fb[j]);
#pragma unroll
            for (int j = 0; j < 8; ++j)
#pragma unroll
                for (int h = 0; h < 2; ++h) {  // lane l: rows l / 4 and l / 4 + 8, columns 2 (l % 4) and + 1
                    const int r = wm + 16 * i + lane / 4 + 8 * h, col = wn + 8 * j + 2 * (lane % 4);
                    float v0 = acc[j][2 * h], v1 = acc[j][2 * h + 1];
                    if (bias != nullptr && m0 + r < M) {
                        const i64 at = (m0 + r) * bsm + (n0 + col) * bsn;
                        if (n0 + col < N) v0 += to_float(bias[at]);
                        if (n0 + col + 1 < N) v1 += to_float(bias[at + bsn]);
                    }
                    *reinterpret_cast<unsigned*>(c_s + r * CN + col) =
                        (unsigned)from_float<T>(v0).x | (unsigned)from_float<T>(v1).x << 16;
                }
        }
        __syncthreads();  // c's tile is whole
        for (int i = threadIdx.x; i < BM * BN / 8; i += THREADS) {  // 16 chunks a row: a warp stores two rows
            const int r = i / (BN / 8), ch = i % (BN / 8);
            const i64 m = m0 + r, n = n0 + 8 * ch;
            if (m >= M || n >= N) continue;
            const unsigned short* src = c_s + r * CN + 8 * ch;
            unsigned short* dst = reinterpret_cast<unsigned short*>(c) + m * N + n;
            if (vec && n + 8 <= N) {
                *reinterpret_cast<uint4*>(dst) = *reinterpret_cast<const uint4*>(src);
            } else {
                for (int e = 0; e < 8 && n + e < N; ++e) dst[e] = src[e];
            }
        }
    }
}
