// Matrix-vector product y = A x, A (M x K), x (K), y (M); float accumulation for every type.
//
// A is read through (stride_am, stride_ak) in elements: row-major A has stride_ak == 1,
// column-major A (the .t() view of a contiguous (K, M) tensor) has stride_am == 1. Each variant
// reads best in one layout; cuda_ref/_gemv.py hands it that layout. x and y are contiguous.
// Launch geometry lives in cuda_ref/_gemv.py.

#include "dtypes.cuh"
#include "handover.cuh"

// ---- native and coalesced: one thread per row (seed 001, algorithms one and two), the same
// loop over two layouts. Over row-major A (native) thread i walks row i, so at each step the 32
// lanes of a warp read 32 addresses K elements apart; over column-major A (coalesced) they read
// 32 neighbouring elements of column k, one 128-byte line per warp. ----
template <typename T>
__global__ void gemv_thread_per_row(const T* __restrict__ a, const T* __restrict__ x,
                                    T* __restrict__ y, i64 M, i64 K, i64 stride_am, i64 stride_ak) {
    const i64 i = blockIdx.x * (i64)blockDim.x + threadIdx.x;
    if (i >= M) return;
    float acc = 0.f;
    for (i64 k = 0; k < K; ++k) acc += to_float(a[i * stride_am + k * stride_ak]) * to_float(x[k]);
    y[i] = from_float<T>(acc);
}

// ---- coalesced_const: x in __constant__ memory (algorithm three). Every lane reads the same
// x[k] at the same time, which the constant cache broadcasts. It is K, not M, that must fit:
// the launcher refuses K * sizeof(T) > X_CONST_BYTES and copies x in on the same stream. ----
#define X_CONST_BYTES 65536
__constant__ uint4 x_const[X_CONST_BYTES / 16];

template <typename T>
__global__ void gemv_coalesced_const(const T* __restrict__ a, T* __restrict__ y,
                                     i64 M, i64 K, i64 stride_am, i64 stride_ak) {
    const i64 i = blockIdx.x * (i64)blockDim.x + threadIdx.x;
    if (i >= M) return;
    const T* xc = reinterpret_cast<const T*>(x_const);
    float acc = 0.f;
    for (i64 k = 0; k < K; ++k) acc += to_float(a[i * stride_am + k * stride_ak]) * to_float(xc[k]);
    y[i] = from_float<T>(acc);
}

// ---- coalesced_shared: x staged through shared memory in CHUNK-element pieces (algorithm
// four). Unlike the seed, the last piece is bounds-checked (K need not be a multiple of CHUNK)
// and every thread, including those past M, reaches every barrier. ----
template <typename T, int CHUNK>
__global__ void gemv_coalesced_shared(const T* __restrict__ a, const T* __restrict__ x,
                                      T* __restrict__ y, i64 M, i64 K, i64 stride_am, i64 stride_ak) {
    __shared__ float xs[CHUNK];
    const i64 i = blockIdx.x * (i64)blockDim.x + threadIdx.x;
    const bool active = i < M;
    float acc = 0.f;
    for (i64 k0 = 0; k0 < K; k0 += CHUNK) {
        const int n = (int)min((i64)CHUNK, K - k0);
        __syncthreads();  // the previous piece is fully consumed
        for (int j = threadIdx.x; j < n; j += blockDim.x) xs[j] = to_float(x[k0 + j]);
        __syncthreads();
        if (active)
            for (int j = 0; j < n; ++j) acc += to_float(a[i * stride_am + (k0 + j) * stride_ak]) * xs[j];
    }
    if (active) y[i] = from_float<T>(acc);
}

// ---- x[k0 .. k0 + VEC) for k0 = v * VEC + h (0 <= h < VEC), from x's aligned vectors lo (v) and
// hi (v + 1): the eight words of lo:hi shifted down by h elements, by selects of whole words and,
// for 16-bit types, a funnel shift by half a word (an array indexed by h would sit in local
// memory). ----
template <typename T>
__device__ __forceinline__ uint4 x_shifted(const uint4& lo, const uint4& hi, int h) {
    constexpr int PER_WORD = 4 / sizeof(T);
    const int words = h / PER_WORD;
    const unsigned c[8] = {lo.x, lo.y, lo.z, lo.w, hi.x, hi.y, hi.z, hi.w};
    unsigned e[6], f[5];
#pragma unroll
    for (int j = 0; j < 6; ++j) e[j] = (words & 2) ? c[j + 2] : c[j];
#pragma unroll
    for (int j = 0; j < 5; ++j) f[j] = (words & 1) ? e[j + 1] : e[j];
    if constexpr (PER_WORD == 1) {
        return make_uint4(f[0], f[1], f[2], f[3]);
    } else {
        const unsigned bits = 16 * (h % PER_WORD);
        return make_uint4(__funnelshift_r(f[0], f[1], bits), __funnelshift_r(f[1], f[2], bits),
                          __funnelshift_r(f[2], f[3], bits), __funnelshift_r(f[3], f[4], bits));
    }
}

// ---- The 16-byte loop of warp_per_row (and its PHASED twins) and split_k: acc[r] += row[r] . x over the vectors
// v = first, first + step, .. < nvec (vector v is elements v * VEC..). Each lane issues the loads of
// DEPTH vectors (x's and ROWS rows' of A) before their first FMA, so DEPTH * ROWS loads of A are in
// flight a lane. Written as one loop, the compiler interleaved loads and FMAs and kept 2 in
// flight; ptxas also sinks a batch's loads back among the FMAs unless the kernel has a launch
// bound (its MIN_BLOCKS; SASS, docs/decisions/007-gemv-defaults.md). PHASED: the rows'
// element h is their first on 16 bytes (row[r] points at it, the same h for every row), vector v is
// a row's elements h + v * VEC .., and the x under it is x's aligned vectors v and v + 1 shifted by h
// (x_shifted, once for all ROWS rows); the caller keeps x's vector nvec inside x. ----
template <typename T, int ROWS, int DEPTH, bool PHASED = false>
__device__ __forceinline__ void dot_vectors(const T* const (&row)[ROWS], const T* __restrict__ x,
                                            i64 first, i64 nvec, int step, float (&acc)[ROWS], int h = 0) {
    constexpr int VEC = 16 / sizeof(T);
    union Vec { uint4 u; T v[VEC]; };
    // vector v of p (two spellings of one address: each keeps its kernels' SASS as measured)
    const auto at = [](const T* p, i64 v) -> uint4 {
        if constexpr (PHASED) return reinterpret_cast<const uint4*>(p)[v];
        else return *reinterpret_cast<const uint4*>(p + v * VEC);
    };
    i64 v = first;
    for (; v + (DEPTH - 1) * (i64)step < nvec; v += DEPTH * (i64)step) {
        uint4 xlo[DEPTH], xhi[DEPTH];
        Vec av[DEPTH][ROWS];
#pragma unroll
        for (int d = 0; d < DEPTH; ++d) {
            xlo[d] = at(x, v + d * step);
            if constexpr (PHASED) xhi[d] = at(x, v + d * step + 1);
#pragma unroll
            for (int r = 0; r < ROWS; ++r) av[d][r].u = at(row[r], v + d * step);
        }
#pragma unroll
        for (int d = 0; d < DEPTH; ++d) {
            Vec xs;
            if constexpr (PHASED) xs.u = x_shifted<T>(xlo[d], xhi[d], h); else xs.u = xlo[d];
#pragma unroll
            for (int r = 0; r < ROWS; ++r)
#pragma unroll
                for (int j = 0; j < VEC; ++j) acc[r] += to_float(av[d][r].v[j]) * to_float(xs.v[j]);
        }
    }
    for (; v < nvec; v += step) {  // fewer than DEPTH vectors left for this lane
        Vec xs, av[ROWS];
        const uint4 lo = at(x, v), hi = PHASED ? at(x, v + 1) : lo;
#pragma unroll
        for (int r = 0; r < ROWS; ++r) av[r].u = at(row[r], v);
        if constexpr (PHASED) xs.u = x_shifted<T>(lo, hi, h); else xs.u = lo;
#pragma unroll
        for (int r = 0; r < ROWS; ++r)
#pragma unroll
            for (int j = 0; j < VEC; ++j) acc[r] += to_float(av[r].v[j]) * to_float(xs.v[j]);
    }
}

// ---- The element loop (rows off 16 bytes, a strided K, the K % VEC tail): acc[r] += row[r][k] x[k]
// over k = first, first + step, .. < K. Each lane issues the loads of N elements (x's and ROWS rows'
// of A) before their first FMA: one 2- or 4-byte load at a time left a row off 16 bytes at half a
// copy's bandwidth over several rows a lane group. Those kernels take N = DEPTH * VEC / 2, half the
// vector loop's elements (all of them spilled in bf16's short-K build); one row a warp keeps N = 1,
// the compiler's own loop (N = 8 cut float32 927 x 53485 from 73 to 110 us; the H200 A/B in
// docs/decisions/007-gemv-defaults.md). The adds keep k order. ----
template <typename T, int ROWS, int N>
__device__ __forceinline__ void dot_elements(const T* const (&row)[ROWS], const T* __restrict__ x, i64 first,
                                             i64 K, int step, i64 stride_ak, float (&acc)[ROWS]) {
    i64 k = first;
    for (; k + (N - 1) * (i64)step < K; k += N * (i64)step) {
        float xv[N], av[N][ROWS];
#pragma unroll
        for (int d = 0; d < N; ++d) {
            xv[d] = to_float(x[k + d * step]);
#pragma unroll
            for (int r = 0; r < ROWS; ++r) av[d][r] = to_float(row[r][(k + d * step) * stride_ak]);
        }
#pragma unroll
        for (int d = 0; d < N; ++d)
#pragma unroll
            for (int r = 0; r < ROWS; ++r) acc[r] += av[d][r] * xv[d];
    }
    for (; k < K; k += step) {
        const float xk = to_float(x[k]);
#pragma unroll
        for (int r = 0; r < ROWS; ++r) acc[r] += to_float(row[r][k * stride_ak]) * xk;
    }
}

// ---- A lane group's ROWS sums, shuffled to its lane 0, which writes y; group g of a block holds
// rows first, first + GROUPS, .. (rows past M write nothing). Every lane runs the shuffles. ----
template <typename T, int LANES, int ROWS>
__device__ __forceinline__ void store_rows(float (&acc)[ROWS], T* __restrict__ y, i64 first, i64 M, int lane) {
    constexpr int GROUPS = 256 / LANES;
#pragma unroll
    for (int r = 0; r < ROWS; ++r) {
#pragma unroll
        for (int off = LANES / 2; off > 0; off /= 2) acc[r] += __shfl_xor_sync(0xffffffffu, acc[r], off);
        const i64 i = first + r * GROUPS;
        if (i < M && lane == 0) y[i] = from_float<T>(acc[r]);
    }
}

// ---- warp_per_row: a group of LANES lanes per row (a whole warp when LANES = 32; several
// groups per warp for short K), 16-byte loads of A and x, a shuffle reduction. A group reduces
// ROWS rows at once: each x vector it loads serves ROWS rows (x is re-read once per ROWS rows,
// from L1/L2), and each lane has ROWS loads of A in flight. Block b's groups g take rows
// b * GROUPS * ROWS + r * GROUPS + g, so for each r a warp's loads are neighbouring rows.
// `vec` says every row of A and x start 16-byte aligned with unit stride along K; otherwise,
// and for the K % VEC tail, lanes take scalar loads.
// PHASED (the instances named phased twins): a row-major A whose rows start off 16 bytes, x on 16
// bytes: element by element those rows reached 0.65 (bf16) / 0.77 (float32) of a copy over 64 MB
// on an H200. A row's first h elements (h < VEC, up to its first 16-byte boundary, from its
// address: A's base need only be element-aligned) and its last K % VEC + VEC - h go element by
// element; the K / VEC - 1 vectors between are 16-byte loads (dot_vectors' PHASED), the last of
// which needs x's vector K / VEC - 1, inside x. A group's rows lie GROUPS apart, a multiple of
// VEC, so they share h; a row past M reads the group's first row (or row M - 1 where all are past
// it), of the same h. There `vec` says A has unit stride along K and x starts on 16 bytes. ----
template <typename T, int LANES, int ROWS, int DEPTH, int MIN_BLOCKS, bool PHASED = false>
__global__ void __launch_bounds__(256, MIN_BLOCKS)  // (0: no bound)
gemv_warp_per_row(const T* __restrict__ a, const T* __restrict__ x, T* __restrict__ y,
                  i64 M, i64 K, i64 stride_am, i64 stride_ak, int vec) {
    constexpr int VEC = 16 / sizeof(T), GROUPS = 256 / LANES, ELEMENTS = ROWS > 1 ? DEPTH * VEC / 2 : 1;
    static_assert(!PHASED || GROUPS % VEC == 0, "a lane group's rows start at one offset from 16 bytes");
    const int lane = threadIdx.x % LANES;
    const i64 first = blockIdx.x * (i64)(GROUPS * ROWS) + threadIdx.x / LANES, spare = min(first, M - 1);
    // Rows past M read an in-bounds row (PHASED: of the same h) and store nothing.
    const T* row[ROWS];
    float acc[ROWS];
#pragma unroll
    for (int r = 0; r < ROWS; ++r) {
        const i64 i = first + r * GROUPS;
        if constexpr (PHASED) row[r] = a + (i < M ? i : spare) * stride_am;
        else row[r] = a + min(i, M - 1) * stride_am;
        acc[r] = 0.f;
    }
    i64 k_tail = 0;
    if (vec && !PHASED) {
        dot_vectors<T, ROWS, DEPTH>(row, x, lane, K / VEC, LANES, acc);
        k_tail = K / VEC * VEC;
    } else if (vec) {
        const int h = (int)((VEC - reinterpret_cast<unsigned long long>(row[0]) / sizeof(T) % VEC) % VEC);
        const i64 nvec = max(K / VEC - 1, (i64)0);
        dot_elements<T, ROWS, 1>(row, x, lane, min((i64)h, K), LANES, 1, acc);
        const T* vrow[ROWS];
#pragma unroll
        for (int r = 0; r < ROWS; ++r) vrow[r] = row[r] + h;
        dot_vectors<T, ROWS, DEPTH, true>(vrow, x, lane, nvec, LANES, acc, h);
        k_tail = h + nvec * VEC;
    }
    dot_elements<T, ROWS, ELEMENTS>(row, x, k_tail + lane, K, LANES, stride_ak, acc);
    store_rows<T, LANES, ROWS>(acc, y, first, M, lane);
}

// ---- masked: row-major A whose short rows start off 16 bytes (an odd K), every element read in
// 16-byte loads, as a copy reads them. Row i's vectors are the aligned ones that cover it: vector u
// holds its elements u * VEC - h .. (h: how far the row starts past 16 bytes), the head and tail
// vectors partly a neighbour's, whose elements a select drops (x is 0 there too, but an inf or NaN
// of a neighbour times 0 would not vanish). x is staged once a block as floats in shared memory, VEC
// zeros either side, so the x under vector u is xs[u * VEC - h ..] with no shuffles. A group's rows
// lie GROUPS apart (a multiple of VEC): one h for all of them. Blocks walk row blocks grid-stride;
// only the first and last row blocks can hold a vector that passes A's ends, and there such a vector
// is read element by element. Each lane issues DEPTH x ROWS loads of A before their first FMA. ----
#define GEMV_MASKED_MAX_K 2048
template <typename T, int ROWS, int DEPTH, bool EDGES>
__device__ __forceinline__ void dot_masked(const T* const (&vb)[ROWS], const float* __restrict__ xs, int h, int K,
                                           int nu, int first, int step, float (&acc)[ROWS], const T* lo, const T* hi) {
    constexpr int VEC = 16 / sizeof(T);
    union Vec { uint4 u; T v[VEC]; };
    const auto load = [&](const T* p) -> uint4 {
        if constexpr (EDGES) {
            if (p < lo || p + VEC > hi) {
                Vec t;
#pragma unroll
                for (int j = 0; j < VEC; ++j) t.v[j] = p + j >= lo && p + j < hi ? p[j] : from_float<T>(0.f);
                return t.u;
            }
        }
        return *reinterpret_cast<const uint4*>(p);
    };
    const auto add = [&](const Vec (&av)[ROWS], int u) {  // vector u of each row times the x under it
        float xv[VEC];
        bool ok[VEC];
#pragma unroll
        for (int j = 0; j < VEC; ++j) {
            xv[j] = xs[u * VEC + j];
            ok[j] = (unsigned)(u * VEC + j - h) < (unsigned)K;
        }
#pragma unroll
        for (int r = 0; r < ROWS; ++r)
#pragma unroll
            for (int j = 0; j < VEC; ++j) acc[r] += (ok[j] ? to_float(av[r].v[j]) : 0.f) * xv[j];
    };
    int u = first;
    for (; u + (DEPTH - 1) * step < nu; u += DEPTH * step) {
        Vec av[DEPTH][ROWS];
#pragma unroll
        for (int d = 0; d < DEPTH; ++d)
#pragma unroll
            for (int r = 0; r < ROWS; ++r) av[d][r].u = load(vb[r] + (i64)(u + d * step) * VEC);
#pragma unroll
        for (int d = 0; d < DEPTH; ++d) add(av[d], u + d * step);
    }
    for (; u < nu; u += step) {
        Vec av[ROWS];
#pragma unroll
        for (int r = 0; r < ROWS; ++r) av[r].u = load(vb[r] + (i64)u * VEC);
        add(av, u);
    }
}

template <typename T, int LANES, int ROWS, int DEPTH, int MIN_BLOCKS>
__global__ void __launch_bounds__(256, MIN_BLOCKS)  // (0: no bound)
gemv_masked(const T* __restrict__ a, const T* __restrict__ x, T* __restrict__ y, i64 M, i64 K, i64 stride_am) {
    constexpr int VEC = 16 / sizeof(T), GROUPS = 256 / LANES;
    static_assert(GROUPS % VEC == 0, "a lane group's rows start at one offset from 16 bytes");
    __shared__ float xs[GEMV_MASKED_MAX_K + 2 * VEC];
    for (int k = threadIdx.x; k < K + 2 * VEC; k += blockDim.x)
        xs[k] = k >= VEC && k < K + VEC ? to_float(x[k - VEC]) : 0.f;
    __syncthreads();
    const int lane = threadIdx.x % LANES;
    const T *lo = a, *hi = a + (M - 1) * stride_am + K;  // A's first element and one past its last
    const i64 blocks = (M + GROUPS * ROWS - 1) / (GROUPS * ROWS);
    for (i64 b = blockIdx.x; b < blocks; b += gridDim.x) {
        const i64 first = b * (GROUPS * ROWS) + threadIdx.x / LANES, spare = min(first, M - 1);
        const T* vb[ROWS];  // rows past M read an in-bounds row of the same h and store nothing
        float acc[ROWS];
#pragma unroll
        for (int r = 0; r < ROWS; ++r) {
            const i64 i = first + r * GROUPS;
            vb[r] = a + (i < M ? i : spare) * stride_am;
            acc[r] = 0.f;
        }
        const int h = (int)(reinterpret_cast<unsigned long long>(vb[0]) / sizeof(T) % VEC);
#pragma unroll
        for (int r = 0; r < ROWS; ++r) vb[r] -= h;
        const int nu = (int)((h + K + VEC - 1) / VEC);
        if (b == 0 || b == blocks - 1)
            dot_masked<T, ROWS, DEPTH, true>(vb, xs + VEC - h, h, (int)K, nu, lane, LANES, acc, lo, hi);
        else
            dot_masked<T, ROWS, DEPTH, false>(vb, xs + VEC - h, h, (int)K, nu, lane, LANES, acc, lo, hi);
        store_rows<T, LANES, ROWS>(acc, y, first, M, lane);
    }
}

// ---- split_k: for few rows and a long K, one row alone cannot fill the GPU. Block b reduces
// piece s = b % splits of rows (b / splits) * ROWS.. with all its threads. With splits = 1 it
// writes y; else it writes one float partial per row, and the row group's last block to finish
// (a count a group, last_run) adds the pieces in piece order and writes y: one launch, the same
// bits on every call (no atomics on the sums). Each x vector loaded serves ROWS rows. ----
template <typename T, int ROWS, int DEPTH, int MIN_BLOCKS>
__global__ void __launch_bounds__(256, MIN_BLOCKS)  // (0: no bound)
gemv_split_k(const T* __restrict__ a, const T* __restrict__ x, T* __restrict__ y, float* partial,
             unsigned* counts, i64 M, i64 K, i64 stride_am, i64 stride_ak, i64 piece, int splits, int vec) {
    constexpr int VEC = 16 / sizeof(T), THREADS = 256, ELEMENTS = DEPTH * VEC / 2;
    static_assert(ROWS <= THREADS / 32, "the last block adds a row's pieces a warp");
    __shared__ float warp_sums[ROWS][THREADS / 32];
    const i64 group = blockIdx.x / splits, first = group * ROWS, s = blockIdx.x % splits;
    const i64 k0 = s * piece, k1 = min(K, k0 + piece);
    const T* row[ROWS];
    float acc[ROWS];
#pragma unroll
    for (int r = 0; r < ROWS; ++r) {
        row[r] = a + min(first + r, M - 1) * stride_am;  // rows past M: read row M - 1, store nothing
        acc[r] = 0.f;
    }
    i64 k_tail = k0;
    if (vec) {  // piece is a multiple of VEC, so every piece starts aligned
        const T* piece_row[ROWS];
#pragma unroll
        for (int r = 0; r < ROWS; ++r) piece_row[r] = row[r] + k0;
        dot_vectors<T, ROWS, DEPTH>(piece_row, x + k0, threadIdx.x, (k1 - k0) / VEC, THREADS, acc);
        k_tail = k0 + (k1 - k0) / VEC * VEC;
    }
    dot_elements<T, ROWS, ELEMENTS>(row, x, k_tail + threadIdx.x, k1, THREADS, stride_ak, acc);
#pragma unroll
    for (int r = 0; r < ROWS; ++r) {
#pragma unroll
        for (int off = 16; off > 0; off /= 2) acc[r] += __shfl_xor_sync(0xffffffffu, acc[r], off);
        if (threadIdx.x % 32 == 0) warp_sums[r][threadIdx.x / 32] = acc[r];
    }
    __syncthreads();
    const bool mine = threadIdx.x < ROWS && first + threadIdx.x < M;
    float total = 0.f;
    if (mine) {
#pragma unroll
        for (int w = 0; w < THREADS / 32; ++w) total += warp_sums[threadIdx.x][w];
    }
    if (splits == 1) {
        if (mine) y[first + threadIdx.x] = from_float<T>(total);
        return;
    }
    if (mine) partial[(first + threadIdx.x) * splits + s] = total;
    if (last_run(counts + group, splits, threadIdx.x == 0, [] { __syncthreads(); })) {
        // Warp r adds row r's pieces: lane l the pieces l, l + 32, .. in order, then a fixed
        // shuffle tree (one thread alone waited on hundreds of L2 loads in turn at M = 1).
        const int r = threadIdx.x / 32, lane = threadIdx.x % 32;
        if (r < ROWS && first + r < M) {
            const float* pieces = partial + (first + r) * splits;
            float sum = 0.f;  // (__ldcg: the other blocks' sums, from L2, never a stale L1 line)
            for (int p = lane; p < splits; p += 32) sum += __ldcg(pieces + p);
#pragma unroll
            for (int off = 16; off > 0; off /= 2) sum += __shfl_xor_sync(0xffffffffu, sum, off);
            if (lane == 0) y[first + r] = from_float<T>(sum);
        }
        if (threadIdx.x == 0) counts[group] = 0;  // (the next call's count starts from zero)
    }
}
