// short_k (cuda_ref/_matmul_short_k.py plans it): 16-bit products of K <= 16, a low-rank adapter's
// up projection (M x r times r x N). Writing c is the work: 4302 x 7168 x 8 writes 61.7 MB and
// reads 0.2 MB. So nothing is copied and nothing waits on a wide tile's pipeline: a and b are read
// where they lie, element by element through their strides (any layout, any alignment: their
// bytes are a few KiB a block), and c leaves in 16-byte stores of whole rows of a tile.
//
// A block owns 128 columns of c. It loads b's 16 x 128 slice once (zeros past K and N), keeps each
// warp's fragments of it in registers, and walks its row tiles of 64 (gridDim.y apart): a's 64 x 16
// tile into shared memory (each thread's loads all in flight at once; the first tile's beside b's), one m16n8k16 per
// 16 x 8 piece (2 x 2 warps of 32 x 64), the sums (plus a bias, before the one rounding) into a
// shared tile of c, then c's rows out as 16-byte chunks where c's rows are 16-byte aligned, else
// element by element with a warp's lanes on adjacent columns (an LM head's odd N, 30522 or 50257,
// stays coalesced). mma.sync's pieces come from
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
    // a's tile comes through registers, the first one's loads issued beside b's slice: one trip to
    // memory before the first MMA, not two (a few rows of c are that trip's latency)
    // Thread t loads k = t % 16 of a's rows t / 16 + 8 it, and stores chunk t % 16 of c's same rows.
    constexpr int A_LOADS = BM * KP / THREADS, ROW_STEP = THREADS / KP;
    const int t_row = threadIdx.x / KP, t_k = threadIdx.x % KP;
    unsigned short av[A_LOADS];
    auto load_a = [&](i64 m0) {
        const unsigned short* p = a16 + (m0 + t_row) * sam + t_k * sak;
#pragma unroll
        for (int it = 0; it < A_LOADS; ++it)
            av[it] = t_k < K && m0 + t_row + ROW_STEP * it < M ? p[ROW_STEP * it * sam] : 0;
    };
    const i64 m_first = (i64)blockIdx.y * BM;
    load_a(m_first);

    {  // b's slice, once: consecutive threads read along b's contiguous side, every load in flight at once
        constexpr int B_LOADS = KP * BN / THREADS;  // K-major: k = t % 16 of columns t / 16 + 8 it; else k = it of column t
        const int k0 = B_KMAJOR ? t_k : 0, c0 = B_KMAJOR ? t_row : threadIdx.x;
        const i64 k_step = B_KMAJOR ? 0 : sbk, n_step = B_KMAJOR ? ROW_STEP * sbn : 0;
        const unsigned short* p = b16 + k0 * sbk + (n0 + c0) * sbn;
        unsigned short bv[B_LOADS];
#pragma unroll
        for (int it = 0; it < B_LOADS; ++it) {
            const int k = B_KMAJOR ? k0 : it, n = B_KMAJOR ? c0 + ROW_STEP * it : c0;
            bv[it] = k < K && n0 + n < N ? p[it * (k_step + n_step)] : 0;
        }
#pragma unroll
        for (int it = 0; it < B_LOADS; ++it) {
            const int i = threadIdx.x + it * THREADS, k = B_KMAJOR ? i % KP : i / BN, n = B_KMAJOR ? i / KP : i % BN;
            b_s[B_KMAJOR ? n * AK + k : k * CN + n] = bv[it];
        }
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

    for (i64 m0 = m_first; m0 < M; m0 += (i64)gridDim.y * BM) {
        if (m0 != m_first) load_a(m0);
#pragma unroll
        for (int it = 0; it < A_LOADS; ++it) {
            const int i = threadIdx.x + it * THREADS;
            a_s[(i / KP) * AK + i % KP] = av[it];
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
        // vec: 16 chunks a row, a warp stores two rows of 256 bytes; rows off 16 bytes: element by
        // element, a warp's lanes on 16 adjacent columns of each of two rows
        const int first = vec ? 8 * t_k : t_k;  // this thread's first column of the tile
        unsigned short* row = reinterpret_cast<unsigned short*>(c) + (m0 + t_row) * N + n0 + first;
#pragma unroll 2
        for (int it = 0; it < BM / ROW_STEP; ++it) {
            const int r = t_row + ROW_STEP * it;
            if (m0 + r >= M || n0 + first >= N) break;
            const unsigned short* src = c_s + r * CN + first;
            unsigned short* dst = row + ROW_STEP * it * N;
            if (vec) {
                *reinterpret_cast<uint4*>(dst) = *reinterpret_cast<const uint4*>(src);
            } else {
#pragma unroll 1
                for (int e = 0; e < BN / KP && n0 + first + KP * e < N; ++e) dst[KP * e] = src[KP * e];
            }
        }
    }
}
