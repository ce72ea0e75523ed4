// What every transpose kernel shares (transpose.cu, transpose_narrow.cu): out (C x R, contiguous) =
// a (R x C)^T for each of a batch of matrices, matrix b of a batch being blockIdx.z, its output
// following the previous one's.

typedef long long i64;

// This block's matrix of the batch.
template <typename In, typename Out>  // (the kernels' __restrict__ pointers)
__device__ __forceinline__ void batch_matrix(In& a, Out& out, i64 R, i64 C, i64 sb) {
    a += blockIdx.z * sb;
    out += blockIdx.z * R * C;
}
