// Matrix multiplication: c (M x N, contiguous) = a (M x K) b (K x N), float32 accumulation.
//
// a and b are read through their strides (in elements), so row- and column-major operands
// (a .t() view) and slices with a step need no copy. Every kernel is a template over the element
// type T (float, half_t, bf16_t of dtypes.cuh): all arithmetic is float32 FMA, whatever the
// storage. Every index that can pass 2^31 (M*K, K*N, M*N) is 64-bit.
//
// Launch geometry lives in cuda_ref/_matmul.py.

#include "dtypes.cuh"
#include "tiles.cuh"
#include "sgemm.cuh"

// ---- naive: one thread per element of c, threadIdx.x along N, so a warp reads 32 consecutive
// elements of a row of b and writes 32 consecutive elements of c (coalesced when b is
// row-major), while all its lanes read the same element of a (one broadcast). Every operand is
// reloaded from global memory (or L1/L2) K times per output: the baseline for smem_tiled. Rows
// beyond gridDim.y * blockDim.y are covered by a grid-stride loop (gridDim.y <= 65535). ----
template <typename T>
__global__ void matmul_naive(const T* __restrict__ a, const T* __restrict__ b, out_t<T>* __restrict__ c,
                             i64 M, i64 N, i64 K, i64 stride_am, i64 stride_ak, i64 stride_bk, i64 stride_bn) {
    const i64 n = blockIdx.x * (i64)blockDim.x + threadIdx.x;
    if (n >= N) return;  // no barrier in this kernel: an early exit is safe
    for (i64 m = blockIdx.y * (i64)blockDim.y + threadIdx.y; m < M; m += (i64)gridDim.y * blockDim.y) {
        acc_t<T> acc = 0;
        for (i64 k = 0; k < K; ++k)
            acc = madd(to_acc(a[m * stride_am + k * stride_ak]), to_acc(b[k * stride_bk + n * stride_bn]), acc);
        c[m * N + n] = from_acc<T>(acc);
    }
}

// ---- smem_tiled: seed 004's shared-memory tile, made safe for any shape. A block of BN x BM
// threads owns a BM x BN tile of c, one element per thread. For each BK-slice of K the block
// stages a BM x BK tile of a and a BK x BN tile of b in shared memory (converted to float once),
// so each loaded element is reused BN (resp. BM) times from shared memory instead of global.
// Out-of-range elements of edge tiles are loaded as zeros, which add nothing to the dot
// products; every thread runs the whole K loop and reaches both barriers (the loads are
// predicated, never skipped by an early return), and only the final store is guarded.
// As[ty][k] is the same word for the 32 lanes of a warp (a broadcast) and Bs[k][tx] 32
// consecutive words: no bank conflicts. The 1-D grid numbers tiles row-major (N fastest);
// gridDim.x allows 2^31 - 1 tiles. ----
template <typename T, int BM, int BN, int BK>
__global__ void __launch_bounds__(BM * BN)
matmul_smem_tiled(const T* __restrict__ a, const T* __restrict__ b, out_t<T>* __restrict__ c, i64 M, i64 N, i64 K,
                  i64 stride_am, i64 stride_ak, i64 stride_bk, i64 stride_bn) {
    constexpr int THREADS = BM * BN;
    __shared__ acc_t<T> As[BM][BK];
    __shared__ acc_t<T> Bs[BK][BN];
    const i64 tiles_n = (N + BN - 1) / BN;
    const i64 m0 = (blockIdx.x / tiles_n) * BM;
    const i64 n0 = (blockIdx.x % tiles_n) * BN;
    const int tx = threadIdx.x, ty = threadIdx.y;  // tx along N, ty along M
    const int tid = ty * BN + tx;

    acc_t<T> acc = 0;
    for (i64 k0 = 0; k0 < K; k0 += BK) {
        // cooperative loads, consecutive threads along the tile's rows (coalesced for row-major
        // operands); zeros outside the matrix
#pragma unroll
        for (int i = tid; i < BM * BK; i += THREADS) {
            const int r = i / BK, kk = i % BK;
            const i64 m = m0 + r, k = k0 + kk;
            As[r][kk] = (m < M && k < K) ? to_acc(a[m * stride_am + k * stride_ak]) : 0;
        }
#pragma unroll
        for (int i = tid; i < BK * BN; i += THREADS) {
            const int kk = i / BN, cc = i % BN;
            const i64 k = k0 + kk, n = n0 + cc;
            Bs[kk][cc] = (k < K && n < N) ? to_acc(b[k * stride_bk + n * stride_bn]) : 0;
        }
        __syncthreads();
#pragma unroll
        for (int kk = 0; kk < BK; ++kk) acc = madd(As[ty][kk], Bs[kk][tx], acc);
        __syncthreads();  // before the next slice overwrites the tiles
    }
    const i64 m = m0 + ty, n = n0 + tx;
    if (m < M && n < N) c[m * N + n] = from_acc<T>(acc);
}

// =================================================================================================
// float32 only from here on: the SGEMM walk to cuBLAS class on CUDA cores (siboehm's SGEMM_CUDA
// series, made safe for any M, N, K and any strides). Each kernel keeps the previous one's
// structure and changes one thing; the shared pieces live in sgemm.cuh (from vectorized on) and
// right below, so two consecutive kernels differ only in the lines that carry their idea.
// =================================================================================================

// Stage a ROWS x COLS slice of x starting at (r0, c0) into s[ROWS][COLS], zeros outside the
// matrix: an edge tile then contributes nothing to the dot products, and every thread still runs
// the whole K loop and meets every barrier. Consecutive threads take consecutive columns
// (coalesced when sc == 1).
template <int ROWS, int COLS, int THREADS>
__device__ __forceinline__ void stage_scalar(float (*s)[COLS], const Operand& x, i64 r0, i64 c0) {
    static_assert(ROWS * COLS % THREADS == 0, "every thread stages the same number of elements");
#pragma unroll
    for (int j = 0; j < ROWS * COLS / THREADS; ++j) {
        const int i = threadIdx.x + j * THREADS;
        const i64 r = r0 + i / COLS, c = c0 + i % COLS;
        s[i / COLS][i % COLS] = (r < x.rows && c < x.cols) ? x.p[r * x.sr + c * x.sc] : 0.0f;
    }
}

// ---- blocktiled_1d: each thread computes a column of TM results instead of one. A block of
// BM * BN / TM threads owns a BM x BN tile of c; thread (row, col) accumulates rows
// row * TM .. + TM of column col in registers. Per K step it reads one Bs value and reuses it
// TM times from a register, so shared-memory traffic per FMA drops from 2 loads to 1 + 1/TM.
// The warp's 32 threads share `row` (BN >= 32): As reads are broadcasts, Bs reads consecutive. ----
template <int BM, int BN, int BK, int TM>
__global__ void __launch_bounds__(BM * BN / TM)
matmul_blocktiled_1d(const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ c,
                     i64 M, i64 N, i64 K, i64 stride_am, i64 stride_ak, i64 stride_bk, i64 stride_bn) {
    constexpr int THREADS = BM * BN / TM;
    static_assert(BN % 32 == 0 && BM % TM == 0, "a warp shares one row of threads");
    __shared__ float As[BM][BK];
    __shared__ float Bs[BK][BN];
    const Operand A{a, M, K, stride_am, stride_ak, false}, B{b, K, N, stride_bk, stride_bn, false};
    const i64 tiles_n = (N + BN - 1) / BN;
    const i64 m0 = (blockIdx.x / tiles_n) * BM, n0 = (blockIdx.x % tiles_n) * BN;
    const int col = threadIdx.x % BN, row = threadIdx.x / BN;

    float acc[TM] = {};
    for (i64 k0 = 0; k0 < K; k0 += BK) {
        stage_scalar<BM, BK, THREADS>(As, A, m0, k0);
        stage_scalar<BK, BN, THREADS>(Bs, B, k0, n0);
        __syncthreads();
#pragma unroll
        for (int k = 0; k < BK; ++k) {
            const float bk = Bs[k][col];  // one shared load, TM FMAs
#pragma unroll
            for (int i = 0; i < TM; ++i) acc[i] = fmaf(As[row * TM + i][k], bk, acc[i]);
        }
        __syncthreads();  // before the next slice overwrites the tiles
    }
    const i64 n = n0 + col;
#pragma unroll
    for (int i = 0; i < TM; ++i) {
        const i64 m = m0 + row * TM + i;
        if (m < M && n < N) c[m * N + n] = acc[i];
    }
}

// ---- blocktiled_2d: each thread computes a TM x TN tile of results (an outer product per K
// step). A block of (BM / TM) * (BN / TN) threads owns BM x BN; per K step a thread loads TM
// values of As and TN of Bs into registers and does TM * TN FMAs: shared loads per FMA fall to
// 1/TN + 1/TM, and the bigger block tile halves global traffic per FMA again. (The scattered
// As[row * TM + i][k] and Bs[k][col * TN + j] reads still conflict in banks: the next step.) ----
template <int BM, int BN, int BK, int TM, int TN>
__global__ void __launch_bounds__((BM / TM) * (BN / TN))
matmul_blocktiled_2d(const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ c,
                     i64 M, i64 N, i64 K, i64 stride_am, i64 stride_ak, i64 stride_bk, i64 stride_bn) {
    constexpr int THREADS = (BM / TM) * (BN / TN);
    __shared__ float As[BM][BK];
    __shared__ float Bs[BK][BN];
    const Operand A{a, M, K, stride_am, stride_ak, false}, B{b, K, N, stride_bk, stride_bn, false};
    const i64 tiles_n = (N + BN - 1) / BN;
    const i64 m0 = (blockIdx.x / tiles_n) * BM, n0 = (blockIdx.x % tiles_n) * BN;
    const int col = threadIdx.x % (BN / TN), row = threadIdx.x / (BN / TN);

    float acc[TM][TN] = {};
    for (i64 k0 = 0; k0 < K; k0 += BK) {
        stage_scalar<BM, BK, THREADS>(As, A, m0, k0);
        stage_scalar<BK, BN, THREADS>(Bs, B, k0, n0);
        __syncthreads();
#pragma unroll
        for (int k = 0; k < BK; ++k) {
            float regM[TM], regN[TN];
#pragma unroll
            for (int i = 0; i < TM; ++i) regM[i] = As[row * TM + i][k];
#pragma unroll
            for (int j = 0; j < TN; ++j) regN[j] = Bs[k][col * TN + j];
#pragma unroll
            for (int i = 0; i < TM; ++i)
#pragma unroll
                for (int j = 0; j < TN; ++j) acc[i][j] = fmaf(regM[i], regN[j], acc[i][j]);
        }
        __syncthreads();
    }
#pragma unroll
    for (int i = 0; i < TM; ++i) {
        const i64 m = m0 + row * TM + i;
#pragma unroll
        for (int j = 0; j < TN; ++j) {
            const i64 n = n0 + col * TN + j;
            if (m < M && n < N) c[m * N + n] = acc[i][j];
        }
    }
}

// ---- vectorized: blocktiled_2d's tiles and thread tiles, with 16-byte accesses. Global loads
// are float4 (a quad along K of A, along N of B) staged through registers; A is stored
// transposed, As[BK][BM], so a thread's TM values for one k are contiguous, and both fragments
// come out of shared memory as float4: a quarter of the load instructions of blocktiled_2d.
// Edges and operands without unit stride / 16-byte alignment take load_quad's scalar path. ----
template <int BM, int BN, int BK, int TM, int TN>
__global__ void __launch_bounds__((BM / TM) * (BN / TN))
matmul_vectorized(const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ c,
                  i64 M, i64 N, i64 K, i64 stride_am, i64 stride_ak, i64 stride_bk, i64 stride_bn,
                  int vec_a, int vec_b, int vec_c) {
    constexpr int THREADS = (BM / TM) * (BN / TN);
    __shared__ __align__(16) float As[BK][BM];
    __shared__ __align__(16) float Bs[BK][BN];
    const Operand A{a, M, K, stride_am, stride_ak, vec_a != 0}, B{b, K, N, stride_bk, stride_bn, vec_b != 0};
    const i64 tiles_n = (N + BN - 1) / BN;
    const i64 m0 = (blockIdx.x / tiles_n) * BM, n0 = (blockIdx.x % tiles_n) * BN;
    const int rbase = threadIdx.x / (BN / TN) * TM, cbase = threadIdx.x % (BN / TN) * TN;

    float acc[TM][TN] = {};
    Slice<BM, BN, BK, THREADS> slice;
    for (i64 k0 = 0; k0 < K; k0 += BK) {
        slice.load(A, B, m0, n0, k0);
        slice.store(As, Bs);
        __syncthreads();
        fma_slice<BK, BM, BN, ThreadTile<TM, TN>>(As, Bs, rbase, cbase, acc);
        __syncthreads();
    }
    store_acc<ThreadTile<TM, TN>>(c, M, N, m0 + rbase, n0 + cbase, vec_c != 0, acc);
}

// ---- warptiled: vectorized plus an explicit warp tile between the block tile and the thread
// tile (siboehm's kernel 10). Each warp owns a WM x WN region of the block tile and sweeps it
// in WMITER x WNITER sub-tiles; a lane's TN columns are adjacent to its neighbours', so a
// quarter-warp's float4 reads of Bs are 128 consecutive bytes and of As two broadcast float4s:
// no bank conflicts (vectorized's thread layout has 2-way conflicts on Bs), and a warp's
// fragments are a compact 2-D patch of the tiles, which keeps each warp's shared traffic small
// as BK grows (BK = 16: half the barriers per FMA of vectorized). ----
template <int BM, int BN, int BK, int WM, int WN, int WNITER, int TM, int TN>
__global__ void __launch_bounds__(WarpTile<BM, BN, WM, WN, WNITER, TM, TN>::THREADS)
matmul_warptiled(const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ c,
                 i64 M, i64 N, i64 K, i64 stride_am, i64 stride_ak, i64 stride_bk, i64 stride_bn,
                 int vec_a, int vec_b, int vec_c) {
    using W = WarpTile<BM, BN, WM, WN, WNITER, TM, TN>;
    __shared__ __align__(16) float As[BK][BM];
    __shared__ __align__(16) float Bs[BK][BN];
    const Operand A{a, M, K, stride_am, stride_ak, vec_a != 0}, B{b, K, N, stride_bk, stride_bn, vec_b != 0};
    const i64 tiles_n = (N + BN - 1) / BN;
    const i64 m0 = (blockIdx.x / tiles_n) * BM, n0 = (blockIdx.x % tiles_n) * BN;
    int rbase, cbase;
    W::origin(rbase, cbase);

    float acc[W::WMITER * TM][W::WNITER * TN] = {};
    Slice<BM, BN, BK, W::THREADS> slice;
    for (i64 k0 = 0; k0 < K; k0 += BK) {
        slice.load(A, B, m0, n0, k0);
        slice.store(As, Bs);
        __syncthreads();
        fma_slice<BK, BM, BN, W>(As, Bs, rbase, cbase, acc);
        __syncthreads();
    }
    store_acc<W>(c, M, N, m0 + rbase, n0 + cbase, vec_c != 0, acc);
}

// ---- double_buffered: warptiled with two shared-memory stages, so the global loads of slice
// s + 1 are in flight (in registers) while the FMAs of slice s run, and one barrier per slice
// instead of two: slice s + 1 goes into the stage nobody reads during slice s. Two smaller
// changes ride along: As rows are PAD floats longer than BM (PAD = 4: the transposed stores of a
// warp hit 32 different banks instead of 2 per bank), and tiles are visited in grouped order (tiles.cuh)
// (GROUP_M) for L2 reuse. EDGES = false compiles an instance without bounds checks or scalar
// fallbacks (fewer registers and instructions) that the launcher runs only when every tile is
// whole and every operand row is 16-byte aligned; other shapes run the EDGES = true instance. ----
template <int BM, int BN, int BK, int WM, int WN, int WNITER, int TM, int TN, int PAD, int GROUP_M, int MIN_BLOCKS,
          bool EDGES>
__global__ void __launch_bounds__(WarpTile<BM, BN, WM, WN, WNITER, TM, TN>::THREADS, MIN_BLOCKS)
matmul_double_buffered(const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ c,
                       i64 M, i64 N, i64 K, i64 stride_am, i64 stride_ak, i64 stride_bk, i64 stride_bn,
                       int vec_a, int vec_b, int vec_c) {
    using W = WarpTile<BM, BN, WM, WN, WNITER, TM, TN>;
    static_assert(PAD % 4 == 0, "As rows stay 16-byte aligned for the float4 fragment reads");
    __shared__ __align__(16) float As[2][BK][BM + PAD];
    __shared__ __align__(16) float Bs[2][BK][BN];
    const Operand A{a, M, K, stride_am, stride_ak, vec_a != 0}, B{b, K, N, stride_bk, stride_bn, vec_b != 0};
    i64 m0, n0;
    grouped_origin<BM, BN, GROUP_M>(M, N, m0, n0);
    int rbase, cbase;
    W::origin(rbase, cbase);

    float acc[W::WMITER * TM][W::WNITER * TN] = {};
    Slice<BM, BN, BK, W::THREADS, EDGES> slice;
    slice.load(A, B, m0, n0, 0);
    slice.store(As[0], Bs[0]);
    __syncthreads();
    const i64 slices = (K + BK - 1) / BK;
    int stage = 0;
    for (i64 s = 0; s < slices; ++s) {
        const bool more = s + 1 < slices;  // the same for the whole block: no divergent barrier
        if (more) slice.load(A, B, m0, n0, (s + 1) * BK);  // lands in registers during the FMAs
        fma_slice<BK, BM + PAD, BN, W>(As[stage], Bs[stage], rbase, cbase, acc);
        // the other stage was last read in slice s - 1, and every thread has passed the barrier
        // that ended it: writing it now races with nobody
        if (more) slice.store(As[stage ^ 1], Bs[stage ^ 1]);
        __syncthreads();
        stage ^= 1;
    }
    store_acc<W, EDGES>(c, M, N, m0 + rbase, n0 + cbase, vec_c != 0, acc);
}

// ---- helpers of the cp.async kernel (pipelined) ----------------------------------------------

// cp.async (sm_80+): copy global -> shared without passing through registers. `take` false reads
// nothing and fills the destination with zeros (zfill): edge tiles get their zeros for free. The
// source must be a valid address either way, so callers pass the operand's base for a skipped
// element.
template <int BYTES>
__device__ __forceinline__ void cp_async(float* dst, const float* src, bool take) {
    static_assert(BYTES == 4 || BYTES == 16, "4-byte (.ca) or 16-byte (.cg, bypasses L1) copies");
    const unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(dst));
    if (BYTES == 16)
        asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(s), "l"(src), "r"(take ? 16 : 0));
    else
        asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(s), "l"(src), "r"(take ? 4 : 0));
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N>  // wait until at most N of this thread's committed groups are still in flight
__device__ __forceinline__ void cp_async_wait() { asm volatile("cp.async.wait_group %0;\n" ::"n"(N)); }

// Copy a ROWS x COLS slice of x starting at (r0, c0) into s[ROWS][LD] with cp.async: 16 bytes
// at a time along a row (x.vec and all four in range), else four 4-byte copies with zfill.
// Consecutive threads take consecutive quads: a warp copies 512 consecutive bytes of a row.
template <int ROWS, int COLS, int LD, int THREADS, bool EDGES>
__device__ __forceinline__ void copy_slice(float (*s)[LD], const Operand& x, i64 r0, i64 c0) {
    constexpr int N = ROWS * (COLS / 4) / THREADS;
    static_assert(COLS % 4 == 0 && N * THREADS == ROWS * (COLS / 4), "no thread idles");
#pragma unroll
    for (int i = 0; i < N; ++i) {
        const int q = threadIdx.x + i * THREADS, r = q / (COLS / 4), col = 4 * (q % (COLS / 4));
        const i64 gr = r0 + r, gc = c0 + col;
        if (!EDGES || (x.vec && gr < x.rows && gc + 4 <= x.cols)) {
            cp_async<16>(&s[r][col], x.p + gr * x.sr + gc, true);
        } else {
#pragma unroll
            for (int j = 0; j < 4; ++j) {
                const bool in = gr < x.rows && gc + j < x.cols;
                cp_async<4>(&s[r][col + j], in ? x.p + gr * x.sr + (gc + j) * x.sc : x.p, in);
            }
        }
    }
}

// ---- pipelined: double_buffered's warp layout and As[k][m] / Bs[k][n] tiles, filled by cp.async
// into a ring of STAGES shared stages (dynamic shared memory): no staging registers, no shared
// stores, and STAGES - 1 slices in flight while one is computed. cp.async copies bytes as they
// lie, so it cannot transpose 16 bytes of A on the way; the kernel therefore reads A^T (K x M),
// which the launcher passes as it is when A is a .t() view of a contiguous (K, M) tensor and
// otherwise makes once with cuda_ref.transpose (one extra read and write of A, ~1% of the time
// at 4096^3). Then A^T and B are copied alike, row for row, 16 bytes at a time (with A^T 0.93x
// cuBLAS at 4096^3 on an H200, without it 0.75x at best: docs/decisions/008-cuda-float32-walk.md).
// Per slice: wait for this thread's copies of slice s, one barrier (everyone's copies landed,
// and everyone finished slice s - 1), issue the copies of slice s + STAGES - 1 into the stage
// slice s - 1 used, compute slice s. ----
// A slice copied as it lies along k (ROWS rows of COLS k, rows LDS floats apart: LDS = COLS + 4 puts
// a warp's float4 reads of 8 rows on 32 distinct banks) turned into dst[k][row] for the FMAs;
// consecutive threads take consecutive rows, so the stores are conflict-free too.
template <int ROWS, int COLS, int LDS, int LDD, int THREADS>
__device__ __forceinline__ void transpose_slice(const float (*src)[LDS], float (*dst)[LDD]) {
    constexpr int QUADS = ROWS * COLS / 4;
    static_assert(COLS % 4 == 0 && QUADS % THREADS == 0, "every thread moves the same number of quads");
#pragma unroll
    for (int i = 0; i < QUADS / THREADS; ++i) {
        const int q = threadIdx.x + i * THREADS, r = q % ROWS, k = 4 * (q / ROWS);
        const float4 v = *reinterpret_cast<const float4*>(&src[r][k]);
        dst[k][r] = v.x;
        dst[k + 1][r] = v.y;
        dst[k + 2][r] = v.z;
        dst[k + 3][r] = v.w;
    }
}

// One block tile (m0, n0) over k in [k_first, k_end); E = false: whole inside the matrix, K whole
// slices, every row aligned. BT: b is K-major (W.t(), B the (N x K) W), its slices copied as they
// lie, 16 bytes along k, into Bt[n][k] and transposed in shared memory into one Bs[k][n] that every
// stage's FMAs read (a second barrier a slice); W is then read once, where a transposed copy a call
// reads it twice and writes it once. AR: A (M x K) read the same way, its rows where they lie (into
// Ar[m][k], then one As[k][m]): no copy of A^T before the kernel, so a call is one launch.
template <int BM, int BN, int BK, int STAGES, int PAD, typename W, bool E, bool BT, bool AR>
__device__ __forceinline__ void pipelined_tile(float* smem, const Operand& A, const Operand& B, float* __restrict__ c,
                                               i64 M, i64 N, i64 k_first, i64 k_end, i64 m0, i64 n0, bool vec_c) {
    // floats a stage: As[BK][LDA] or Ar[BM][LDT], then Bs[BK][BN] or Bt[BN][LDT]; after the ring, the
    // one Bs (BT) and the one As (AR) that the FMAs read
    constexpr int LDA = BM + PAD, LDT = BK + 4, A_FLOATS = AR ? BM * LDT : BK * LDA;
    constexpr int STAGE = A_FLOATS + (BT ? BN * LDT : BK * BN);
    int rbase, cbase;
    W::origin(rbase, cbase);
    auto As = [&](int st) {
        return reinterpret_cast<float(*)[LDA]>(AR ? smem + STAGES * STAGE + (BT ? BK * BN : 0) : smem + st * STAGE);
    };
    auto Ar = [&](int st) { return reinterpret_cast<float(*)[LDT]>(smem + st * STAGE); };
    auto Bs = [&](int st) { return reinterpret_cast<float(*)[BN]>(BT ? smem + STAGES * STAGE : smem + st * STAGE + A_FLOATS); };
    auto Bt = [&](int st) { return reinterpret_cast<float(*)[LDT]>(smem + st * STAGE + A_FLOATS); };
    auto copy = [&](int st, i64 k0) {
        if constexpr (AR)
            copy_slice<BM, BK, LDT, W::THREADS, E>(Ar(st), A, m0, k0);
        else
            copy_slice<BK, BM, LDA, W::THREADS, E>(As(st), A, k0, m0);
        if constexpr (BT)
            copy_slice<BN, BK, LDT, W::THREADS, E>(Bt(st), B, n0, k0);
        else
            copy_slice<BK, BN, BN, W::THREADS, E>(Bs(st), B, k0, n0);
    };

    const i64 slices = (k_end - k_first + BK - 1) / BK;
#pragma unroll
    for (int s = 0; s < STAGES - 1; ++s) {  // prologue: slices 0 .. STAGES - 2 in flight
        if (s < slices) copy(s, k_first + (i64)s * BK);
        cp_async_commit();  // one group per slice, empty or not: the wait count below stays exact
    }
    float acc[W::WMITER * W::TM][W::WNITER * W::TN] = {};
    int stage = 0, next = STAGES - 1;  // the stages of slice s and of slice s + STAGES - 1
    for (i64 s = 0; s < slices; ++s) {
        cp_async_wait<STAGES - 2>();  // this thread's copies of slice s have landed
        __syncthreads();              // everyone's have; and everyone finished slice s - 1
        if (s + STAGES - 1 < slices) copy(next, k_first + (s + STAGES - 1) * BK);  // nobody reads `next` now
        cp_async_commit();
        if constexpr (AR || BT) {  // the K-major slices into the one As / Bs (read last in slice s - 1)
            if constexpr (AR) transpose_slice<BM, BK, LDT, LDA, W::THREADS>(Ar(stage), As(0));
            if constexpr (BT) transpose_slice<BN, BK, LDT, BN, W::THREADS>(Bt(stage), Bs(0));
            __syncthreads();
        }
        fma_slice<BK, LDA, BN, W>(As(AR ? 0 : stage), Bs(BT ? 0 : stage), rbase, cbase, acc);
        stage = stage + 1 == STAGES ? 0 : stage + 1;
        next = next + 1 == STAGES ? 0 : next + 1;
    }
    cp_async_wait<0>();  // no copy outlives the block (the trailing groups are empty)
    store_acc<W, E>(c, M, N, m0 + rbase, n0 + cbase, vec_c, acc);
}

// EDGES: a tile wholly inside runs the checks-free path when K is whole slices and every row is
// aligned (an edge-checked copy issues four times the instructions of a 16-byte one). K in runs
// (gridDim.y > 1, k_run a multiple of BK): run blockIdx.y writes its sums to c + blockIdx.y * M * N
// (the launcher's float32 partial sums, added in run order by matmul_split_reduce). BT: b is K-major
// (matmul_pipelined_wt; vec_b: W's rows aligned). AR: a's rows read where they lie
// (matmul_pipelined_arow; vec_a: a's rows aligned), else a is A^T (vec_a: A^T's rows aligned).
template <int BM, int BN, int BK, int WM, int WN, int WNITER, int TM, int TN, int PAD, int GROUP_M, int STAGES,
          bool EDGES, bool BT, bool AR>
__device__ __forceinline__ void pipelined_body(const float* __restrict__ a, const float* __restrict__ b,
                                               float* __restrict__ c, i64 M, i64 N, i64 K, i64 stride_am,
                                               i64 stride_ak, i64 stride_bk, i64 stride_bn, int vec_a, int vec_b,
                                               int vec_c, i64 k_run) {
    using W = WarpTile<BM, BN, WM, WN, WNITER, TM, TN>;
    static_assert(PAD % 4 == 0 && STAGES >= 2, "16-byte aligned rows; one slice in flight at least");
    extern __shared__ __align__(16) float smem[];  // STAGES stages (the launcher)
    // A's strides as the other kernels take them (along m, along k); as A^T, element (k, m) is
    // at a[k * stride_ak + m * stride_am]
    const Operand A = AR ? Operand{a, M, K, stride_am, stride_ak, vec_a != 0} : Operand{a, K, M, stride_ak, stride_am, vec_a != 0};
    const Operand B = BT ? Operand{b, N, K, stride_bn, stride_bk, vec_b != 0} : Operand{b, K, N, stride_bk, stride_bn, vec_b != 0};
    i64 m0, n0;
    grouped_origin<BM, BN, GROUP_M>(M, N, m0, n0);
    const i64 k_first = blockIdx.y * k_run, k_end = min(K, k_first + k_run);
    c += blockIdx.y * M * N;
    if (EDGES && !(m0 + BM <= M && n0 + BN <= N && K % BK == 0 && vec_a && vec_b && vec_c))
        pipelined_tile<BM, BN, BK, STAGES, PAD, W, true, BT, AR>(smem, A, B, c, M, N, k_first, k_end, m0, n0, vec_c != 0);
    else
        pipelined_tile<BM, BN, BK, STAGES, PAD, W, false, BT, AR>(smem, A, B, c, M, N, k_first, k_end, m0, n0, true);
}

// The pipelined kernels: a as A^T or its rows where they lie (_arow), b row-major or K-major (_wt).
#define PIPELINED_KERNEL(NAME, BT, AR)                                                                              \
    template <int BM, int BN, int BK, int WM, int WN, int WNITER, int TM, int TN, int PAD, int GROUP_M, int STAGES, \
              int MIN_BLOCKS, bool EDGES>                                                                           \
    __global__ void __launch_bounds__(WarpTile<BM, BN, WM, WN, WNITER, TM, TN>::THREADS, MIN_BLOCKS)               \
    NAME(const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ c, i64 M, i64 N, i64 K,     \
         i64 stride_am, i64 stride_ak, i64 stride_bk, i64 stride_bn, int vec_a, int vec_b, int vec_c, i64 k_run) { \
        pipelined_body<BM, BN, BK, WM, WN, WNITER, TM, TN, PAD, GROUP_M, STAGES, EDGES, BT, AR>(                    \
            a, b, c, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, vec_a, vec_b, vec_c, k_run);              \
    }
PIPELINED_KERNEL(matmul_pipelined, false, false)
PIPELINED_KERNEL(matmul_pipelined_wt, true, false)
PIPELINED_KERNEL(matmul_pipelined_arow, false, true)
PIPELINED_KERNEL(matmul_pipelined_arow_wt, true, true)
#undef PIPELINED_KERNEL
