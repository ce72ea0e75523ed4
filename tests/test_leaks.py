"""No leaks (issue 7, part 7): GPU memory (torch's allocated and reserved bytes) and host memory
(resident set size) stay flat over 10,000 calls of each public function of both backends on a
tiny input, after 100 warm-up calls; then 2,000 calls of every named variant, with ``out=``, and
(cuda_ref) CuPy arrays in and out. GPU only, slow (about a minute)."""

from __future__ import annotations

import gc
import os

import pytest
import torch

import cuda_ref
import triton_impl
from bench import registry
from bench.specs import SPECS
from conftest import requires_gpu

pytestmark = [requires_gpu, pytest.mark.slow]
BACKENDS = {"cuda": cuda_ref, "triton": triton_impl}
SHAPES = {"transpose": (33, 65), "gemv": (67, 45), "matmul": (67, 45, 33)}
WARMUP, CALLS, VARIANT_CALLS = 100, 10_000, 2_000
# After the warm-up nothing should grow at all. The slack must stay well under what a leak of one
# allocation per call adds up to: torch's smallest block is 512 bytes, 1 MB over 2,000 calls (a
# 1 MiB slack let exactly that pass).
GPU_SLACK = 64 << 10     # bytes: 128 of the smallest blocks
RSS_SLACK = 16 << 20     # bytes: Python's own arenas may grow a little (objects: counted below)


def rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def memory():
    gc.collect()
    torch.cuda.synchronize()
    return torch.cuda.memory_allocated(), torch.cuda.memory_reserved(), rss_bytes(), len(gc.get_objects())


def assert_flat(call, n, where):
    for _ in range(WARMUP):
        call()
    before = memory()
    for _ in range(n):
        call()
    after = memory()
    alloc, reserved, rss, objects = (b - a for a, b in zip(before, after))
    assert alloc <= GPU_SLACK, f"{where}: torch.cuda.memory_allocated grew by {alloc} bytes over {n} calls"
    assert reserved <= GPU_SLACK, f"{where}: torch.cuda.memory_reserved grew by {reserved} bytes over {n} calls"
    assert rss <= RSS_SLACK, f"{where}: host RSS grew by {rss / 2 ** 20:.1f} MiB over {n} calls"
    # a small Python object kept per call (a cache entry, a tuple of arguments) is far below the RSS
    # slack (16 MiB over 10,000 calls is 1.6 KB each) but shows here as thousands of objects
    assert objects <= n // 10, f"{where}: {objects} more gc-tracked Python objects after {n} calls"


@pytest.mark.parametrize("alg", registry.algorithms())
@pytest.mark.parametrize("backend", list(BACKENDS))
def test_default_variant_10000_calls(backend, alg):
    fn = getattr(BACKENDS[backend], alg)
    inputs = SPECS[alg].make_inputs(SHAPES[alg], torch.float32, "cuda", 0)
    assert_flat(lambda: fn(*inputs), CALLS, f"{backend} {alg}")


@pytest.mark.parametrize("alg", registry.algorithms())
@pytest.mark.parametrize("backend", list(BACKENDS))
def test_every_variant_with_out(backend, alg):
    from bench import registry
    mod = BACKENDS[backend]
    fn = getattr(mod, alg)
    for dtype in (torch.float32, torch.float16):  # the tensor-core walk takes 16-bit types only
        inputs = SPECS[alg].make_inputs(SHAPES[alg], dtype, "cuda", 0)
        out = SPECS[alg].make_out(inputs)
        for variant in mod.variants(alg):
            if registry.takes(alg, backend, variant, str(dtype)[6:], SHAPES[alg]) and \
                    (dtype == torch.float32 or not registry.takes(alg, backend, variant, "float32", SHAPES[alg])):
                assert_flat(lambda: fn(*inputs, variant=variant, out=out), VARIANT_CALLS,
                            f"{backend} {alg} {variant} {dtype}")


@pytest.mark.parametrize("alg", registry.algorithms())
def test_cupy_in_cupy_out(alg):
    cupy = pytest.importorskip("cupy")
    fn = getattr(cuda_ref, alg)
    inputs = tuple(cupy.from_dlpack(t) for t in SPECS[alg].make_inputs(SHAPES[alg], torch.float32, "cuda", 0))

    def call():
        fn(*inputs)

    # CuPy's own pool is not torch's: check it too
    pool = cupy.get_default_memory_pool()
    for _ in range(WARMUP):
        call()
    cupy.cuda.Device().synchronize()
    used = pool.used_bytes()
    assert_flat(call, CALLS, f"cuda {alg} cupy")
    assert pool.used_bytes() <= used + GPU_SLACK
