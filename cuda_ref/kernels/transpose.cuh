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

// 1-byte elements move 8 at a time: 16 would make a 256 x 256 tile, 64 KiB of shared memory.
template <int BYTES> struct VecOf;
template <> struct VecOf<16> { using type = uint4; };
template <> struct VecOf<8> { using type = uint2; };

// A chunk: BYTES of consecutive elements in one vector register set.
template <typename T>
struct Chunk {
    static constexpr int BYTES = sizeof(T) == 1 ? 8 : 16, VEC = BYTES / sizeof(T), WORDS = BYTES / 4;
    using V = typename VecOf<BYTES>::type;
};

// A chunk seen as its elements.
template <typename T>
union Elems { typename Chunk<T>::V u; T v[Chunk<T>::VEC]; };

__device__ __forceinline__ unsigned word(const uint4& v, int k) { return k == 0 ? v.x : k == 1 ? v.y : k == 2 ? v.z : v.w; }
__device__ __forceinline__ unsigned word(const uint2& v, int k) { return k == 0 ? v.x : v.y; }
__device__ __forceinline__ void set_word(uint4& v, int k, unsigned x) { (k == 0 ? v.x : k == 1 ? v.y : k == 2 ? v.z : v.w) = x; }
__device__ __forceinline__ void set_word(uint2& v, int k, unsigned x) { (k == 0 ? v.x : v.y) = x; }

template <typename T>
__device__ __forceinline__ typename Chunk<T>::V load(const T* p) {  // p aligned to the chunk
    return *reinterpret_cast<const typename Chunk<T>::V*>(p);
}

template <typename T>
__device__ __forceinline__ typename Chunk<T>::V load_global(const T* p) {  // read-only path (ld.global.nc)
    return __ldg(reinterpret_cast<const typename Chunk<T>::V*>(p));
}

template <typename T>
__device__ __forceinline__ void store(T* p, const typename Chunk<T>::V& v) {  // p aligned to the chunk
    *reinterpret_cast<typename Chunk<T>::V*>(p) = v;
}

// The same to global memory through the intrinsic (inline PTX): a plain vector store to a global
// address computed in 64 bits came out of the compiler as 4-byte stores (PTX of sm_90, NVRTC 13).
template <typename T>
__device__ __forceinline__ void store_global(T* p, const typename Chunk<T>::V& v) {
    __stwb(reinterpret_cast<typename Chunk<T>::V*>(p), v);
}

// Elements [col, col + VEC) of a row of n elements (col aligned): a vector where all lie in the row.
template <typename T>
__device__ __forceinline__ typename Chunk<T>::V load_chunk(const T* row, i64 n, i64 col) {
    if (col >= 0 && col + Chunk<T>::VEC <= n) return load_global(row + col);
    Elems<T> c;
#pragma unroll
    for (int e = 0; e < Chunk<T>::VEC; ++e)
        c.v[e] = (col + e >= 0 && col + e < n) ? row[col + e] : T(0);
    return c.u;
}

// Elements [col, col + VEC) of an output row segment (col aligned), those below n only.
template <typename T>
__device__ __forceinline__ void store_chunk(T* row, int col, int n, const typename Chunk<T>::V& v) {
    if (col + Chunk<T>::VEC <= n) {
        store_global(row + col, v);
    } else {
        Elems<T> c;
        c.u = v;
#pragma unroll
        for (int e = 0; e < Chunk<T>::VEC; ++e)
            if (col + e < n) row[col + e] = c.v[e];
    }
}
