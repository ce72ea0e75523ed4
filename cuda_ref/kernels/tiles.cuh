// Tile order shared by the matmul files (the loader inlines this file after dtypes.cuh).
#pragma once

// Tile number -> origin (m0, n0) of the block tile in c, in groups of GROUP_M tile rows walked
// column by column (the Triton tutorial's grouped order): the blocks running at one time share
// GROUP_M row panels of a and a few column panels of b, so far more of their loads hit in L2
// than in row-major order (which sweeps all of b for every tile row).
template <int BM, int BN>
__device__ __forceinline__ void grouped_origin_of(i64 tile, i64 M, i64 N, int group_m, i64& m0, i64& n0) {
    const i64 tiles_m = (M + BM - 1) / BM, tiles_n = (N + BN - 1) / BN;
    const i64 per_group = (i64)group_m * tiles_n;
    const i64 first_m = tile / per_group * group_m;
    const i64 rows = min((i64)group_m, tiles_m - first_m);  // the last group may be shorter
    m0 = (first_m + (tile % per_group) % rows) * BM;
    n0 = ((tile % per_group) / rows) * BN;
}

// The block's own tile (one block per tile).
template <int BM, int BN, int GROUP_M>
__device__ __forceinline__ void grouped_origin(i64 M, i64 N, i64& m0, i64& n0) {
    grouped_origin_of<BM, BN>(blockIdx.x, M, N, GROUP_M, m0, n0);
}
