// A block's float32 sums handed over to the last block of its group, inside one launch (the
// buffers are kernel_common.util.hand_over's: counts zero on entry, and zero again on exit).
#pragma once

// K in runs (or pieces) summed inside the kernel that computes them (few_rows_mma, gemv_split_k):
// true in the block of a group's last run to finish, which then sees every run's sums and adds
// them in run order, then sets the group's count back to zero. `count`: the group's, zero on
// entry; `runs`: the group's runs; `sync`: a barrier of the threads that wrote this run's sums,
// `leader` one of them. The count picks the block that adds, never the order of the adds: the
// same bits on every call.
template <typename Sync>
__device__ __forceinline__ bool last_run(unsigned* count, unsigned runs, bool leader, Sync sync) {
    __shared__ bool last;
    __threadfence();  // this run's sums are seen GPU-wide before it counts itself done
    sync();
    if (leader) last = atomicAdd(count, 1u) == runs - 1;
    sync();
    if (last) __threadfence();
    return last;
}
