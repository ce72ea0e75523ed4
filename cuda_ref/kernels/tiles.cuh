// Tile order shared by the matmul files (the loader inlines this file after dtypes.cuh).
#pragma once

// Tile number -> origin (m0, n0) of the block tile in c, in groups of group_m tile rows walked
// column by column (the Triton tutorial's grouped order): the blocks running at one time share
// GROUP_M row panels of a and a few column panels of b, so far more of their loads hit in L2
// than in row-major order (which sweeps all of b for every tile row).
// Tile numbers and counts fit 32 bits (a grid's blocks, or a persistent walk's tiles), so the
// divisions are 32-bit: a 64-bit one is a called subroutine of many registers.
template <int BM, int BN>
__device__ __forceinline__ void grouped_origin_of(unsigned t, i64 M, i64 N, int group_m, i64& m0, i64& n0) {
    const unsigned tiles_m = (unsigned)((M + BM - 1) / BM), tiles_n = (unsigned)((N + BN - 1) / BN);
    const unsigned per_group = (unsigned)group_m * tiles_n;
    const unsigned first_m = t / per_group * group_m;
    const unsigned rows = min((unsigned)group_m, tiles_m - first_m);  // the last group may be shorter
    m0 = (i64)(first_m + t % per_group % rows) * BM;
    n0 = (i64)(t % per_group / rows) * BN;
}

// The block's own tile (one block per tile).
template <int BM, int BN, int GROUP_M>
__device__ __forceinline__ void grouped_origin(i64 M, i64 N, i64& m0, i64& n0) {
    grouped_origin_of<BM, BN>(blockIdx.x, M, N, GROUP_M, m0, n0);
}
