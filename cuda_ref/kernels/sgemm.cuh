// The float32 walk's shared pieces (matmul.cu): the operand as the kernels read it (blocktiled onward),
// the 16-byte loads and stores, a K-slice's staging and FMAs (vectorized onward), and the warp tiling
// (warptiled onward). The loader inlines this file after dtypes.cuh.
#pragma once

// An operand as the kernels read it: element (r, c) is p[r * sr + c * sc] for r < rows, c < cols.
// `vec`: unit column stride, 16-byte aligned base and a row stride that is a multiple of 4
// (checked by the launcher), so four in-range elements starting at a column multiple of 4 are
// one 16-byte load.
struct Operand {
    const float* __restrict__ p;
    i64 rows, cols, sr, sc;
    bool vec;
};

// ---- helpers of the 16-byte kernels (vectorized onward) --------------------------------------

// Four consecutive elements x[r][c .. c+3], zeros outside the matrix. With x.vec and all four in
// range (c is a multiple of 4) it is one 16-byte load; otherwise four predicated scalar loads
// through the strides (edge tiles, .t() views, slices with steps, unaligned rows).
template <bool EDGES = true>
__device__ __forceinline__ float4 load_quad(const Operand& x, i64 r, i64 c) {
    // EDGES = false: the launcher guarantees a whole tile inside the matrix and aligned rows
    if (!EDGES) return *reinterpret_cast<const float4*>(x.p + r * x.sr + c);
    float4 v = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    if (r >= x.rows) return v;
    const float* row = x.p + r * x.sr;
    if (x.vec && c + 4 <= x.cols) return *reinterpret_cast<const float4*>(row + c);
    if (c + 0 < x.cols) v.x = row[(c + 0) * x.sc];
    if (c + 1 < x.cols) v.y = row[(c + 1) * x.sc];
    if (c + 2 < x.cols) v.z = row[(c + 2) * x.sc];
    if (c + 3 < x.cols) v.w = row[(c + 3) * x.sc];
    return v;
}

// One thread's share of a K-slice, held in registers between the global load and the shared
// store: NA quads of the BM x BK tile of a (along K), NB quads of the BK x BN tile of b (along N).
template <int BM, int BN, int BK, int THREADS, bool EDGES = true>
struct Slice {
    static constexpr int KQ = BK / 4, NA = BM * KQ / THREADS, NB = BK * (BN / 4) / THREADS;
    static_assert(BK % 4 == 0 && BM % 16 == 0 && BN % 4 == 0, "quads along K and N, 16-row groups");
    static_assert(NA * THREADS == BM * KQ && NB * THREADS == BK * (BN / 4), "no thread idles");
    float4 a[NA], b[NB];

    // quad i of this thread in the A tile: rows go fastest in groups of 16 (a warp covers 16
    // rows x 2 quads: full 32-byte sectors, and with As rows 4 floats longer than BM the
    // transposed stores of a warp hit 32 different banks)
    __device__ static int a_row(int q) { return q % 16 + 16 * (q / (16 * KQ)); }
    __device__ static int a_col(int q) { return 4 * ((q / 16) % KQ); }

    __device__ void load(const Operand& A, const Operand& B, i64 m0, i64 n0, i64 k0) {
#pragma unroll
        for (int i = 0; i < NA; ++i) {
            const int q = threadIdx.x + i * THREADS;
            a[i] = load_quad<EDGES>(A, m0 + a_row(q), k0 + a_col(q));
        }
#pragma unroll
        for (int i = 0; i < NB; ++i) {
            const int q = threadIdx.x + i * THREADS;  // a warp reads 128 consecutive floats of a row
            b[i] = load_quad<EDGES>(B, k0 + q / (BN / 4), n0 + 4 * (q % (BN / 4)));
        }
    }

    // A goes in transposed, As[k][m], so that a thread's TM rows for one k are contiguous and
    // read back as float4; B keeps its layout, Bs[k][n], written as float4.
    template <int LDA>
    __device__ void store(float (*As)[LDA], float (*Bs)[BN]) const {
#pragma unroll
        for (int i = 0; i < NA; ++i) {
            const int q = threadIdx.x + i * THREADS, r = a_row(q), k = a_col(q);
            As[k + 0][r] = a[i].x;
            As[k + 1][r] = a[i].y;
            As[k + 2][r] = a[i].z;
            As[k + 3][r] = a[i].w;
        }
#pragma unroll
        for (int i = 0; i < NB; ++i) {
            const int q = threadIdx.x + i * THREADS;
            *reinterpret_cast<float4*>(&Bs[q / (BN / 4)][4 * (q % (BN / 4))]) = b[i];
        }
    }
};

// A thread's fragment of one k row of a shared tile: ITER runs of LEN consecutive floats, SUB
// apart, starting at row[base], read as float4 (LEN is a multiple of 4) into reg[ITER * LEN].
template <int ITER, int LEN, int SUB>
__device__ __forceinline__ void load_fragment(const float* row, int base, float* reg) {
    static_assert(LEN % 4 == 0, "fragments are read as float4");
#pragma unroll
    for (int it = 0; it < ITER; ++it)
#pragma unroll
        for (int i = 0; i < LEN; i += 4) {
            const float4 v = *reinterpret_cast<const float4*>(&row[base + it * SUB + i]);
            reg[it * LEN + i + 0] = v.x;
            reg[it * LEN + i + 1] = v.y;
            reg[it * LEN + i + 2] = v.z;
            reg[it * LEN + i + 3] = v.w;
        }
}

// Where a thread's results sit, for fma_slice and store_acc: WMITER x WNITER patches of TM x TN,
// WSUBM rows and WSUBN columns apart. vectorized has one patch (ThreadTile); the warp-tiled
// kernels have a patch per warp sub-tile (WarpTile, below).
template <int TM_, int TN_>
struct ThreadTile {
    static constexpr int TM = TM_, TN = TN_, WMITER = 1, WNITER = 1, WSUBM = TM, WSUBN = TN;
};

// acc += the K-slice's contribution to this thread's (WMITER * TM) x (WNITER * TN) results:
// block-tile rows rbase + wm * WSUBM + i and columns cbase + wn * WSUBN + j.
template <int BK, int LDA, int BN, typename L>
__device__ __forceinline__ void fma_slice(float (*As)[LDA], float (*Bs)[BN], int rbase, int cbase,
                                          float (&acc)[L::WMITER * L::TM][L::WNITER * L::TN]) {
    constexpr int TM = L::TM, TN = L::TN, WMITER = L::WMITER, WNITER = L::WNITER;
    constexpr int WSUBM = L::WSUBM, WSUBN = L::WSUBN;
#pragma unroll
    for (int k = 0; k < BK; ++k) {
        float regM[WMITER * TM], regN[WNITER * TN];
        load_fragment<WMITER, TM, WSUBM>(As[k], rbase, regM);
        load_fragment<WNITER, TN, WSUBN>(Bs[k], cbase, regN);
#pragma unroll
        for (int i = 0; i < WMITER * TM; ++i)
#pragma unroll
            for (int j = 0; j < WNITER * TN; ++j) acc[i][j] = fmaf(regM[i], regN[j], acc[i][j]);
    }
}

// Write this thread's results to c (contiguous M x N) at rows m + wm * WSUBM + i, columns
// n + wn * WSUBN + j: float4 stores when `vec_c` (N % 4 == 0, 16-byte aligned c) and all four
// columns are inside, guarded scalar stores otherwise.
template <typename L, bool EDGES = true>
__device__ __forceinline__ void store_acc(float* __restrict__ c, i64 M, i64 N, i64 m, i64 n, bool vec_c,
                                          const float (&acc)[L::WMITER * L::TM][L::WNITER * L::TN]) {
    constexpr int TM = L::TM, TN = L::TN, WMITER = L::WMITER, WNITER = L::WNITER;
    constexpr int WSUBM = L::WSUBM, WSUBN = L::WSUBN;
    if (!EDGES) vec_c = true;  // whole tiles, N % 4 == 0, aligned: the launcher checked
#pragma unroll
    for (int wm = 0; wm < WMITER; ++wm)
#pragma unroll
        for (int i = 0; i < TM; ++i) {
            const i64 r = m + wm * WSUBM + i;
            if (EDGES && r >= M) continue;
            float* crow = c + r * N;
            const float* v = acc[wm * TM + i];
#pragma unroll
            for (int wn = 0; wn < WNITER; ++wn)
#pragma unroll
                for (int j = 0; j < TN; j += 4) {
                    const i64 col = n + wn * WSUBN + j;
                    const float* s = v + wn * TN + j;
                    if (vec_c && (!EDGES || col + 4 <= N)) {
                        *reinterpret_cast<float4*>(crow + col) = make_float4(s[0], s[1], s[2], s[3]);
                    } else {
#pragma unroll
                        for (int q = 0; q < 4; ++q)
                            if (col + q < N) crow[col + q] = s[q];
                    }
                }
        }
}

// The warp tiling of warptiled, double_buffered and pipelined: a block of THREADS threads owns a
// BM x BN tile of c; warp w owns warp tile (w / (BN / WN), w % (BN / WN)) of WM x WN and sweeps
// it in WMITER x WNITER sub-tiles of WSUBM x WSUBN; lane l owns the TM x TN patch
// (l / (WSUBN / TN), l % (WSUBN / TN)) of each. origin() gives this thread's (rbase, cbase).
template <int BM, int BN, int WM, int WN, int WNITER_, int TM_, int TN_>
struct WarpTile {
    static constexpr int TM = TM_, TN = TN_, WNITER = WNITER_, THREADS = (BM / WM) * (BN / WN) * 32;
    static constexpr int WMITER = (WM * WN) / (32 * TM * TN * WNITER), WSUBM = WM / WMITER, WSUBN = WN / WNITER;
    static_assert(WMITER * 32 * TM * TN * WNITER == WM * WN && (WSUBM / TM) * (WSUBN / TN) == 32,
                  "a warp's 32 lanes tile each WSUBM x WSUBN sub-tile exactly");

    __device__ static __forceinline__ void origin(int& rbase, int& cbase) {
        const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
        rbase = (warp / (BN / WN)) * WM + (lane / (WSUBN / TN)) * TM;
        cbase = (warp % (BN / WN)) * WN + (lane % (WSUBN / TN)) * TN;
    }
};
