"""pytest-benchmark entries: every registered implementation through the same registry.

Run with ``pytest --benchmark-only`` on a GPU. The timer synchronizes the device after each
call, so a round is a whole kernel, not a launch; CUDA-event timings (median/min/max with L2
flushed, as ``python -m bench compare`` measures them) go into ``extra_info``. Plain ``pytest``
skips these, and without a GPU they skip with a reason.
"""

import pytest
import torch

from bench import registry
from bench.specs import DTYPES, SPECS
from conftest import HAS_GPU

CASES = [
    ("transpose", (16384, 16384), "float32"),
    ("transpose", (4096, 4096), "float16"),
    ("gemv", (16384, 16384), "float32"),
    ("gemv", (64, 1 << 20), "float32"),
]
PARAMS = [pytest.param(impl, shape, dtype, id=f"{impl.algorithm}-{'x'.join(map(str, shape))}-{dtype}-"
                       f"{impl.backend}-{impl.variant}")
          for algorithm, shape, dtype in CASES for impl in registry.select(algorithm)]


@pytest.mark.parametrize("impl,shape,dtype", PARAMS)
def test_benchmark(benchmark, request, impl, shape, dtype):
    if not request.config.getoption("benchmark_only", False):
        pytest.skip("timing runs only under pytest --benchmark-only")
    if not HAS_GPU:
        pytest.skip("benchmarks need a CUDA GPU (none found)")
    spec = SPECS[impl.algorithm]
    reason = impl.fits(shape, spec.numel(shape))
    if reason:
        pytest.skip(f"{impl.variant}: {reason}")
    from bench.timing import time_gpu

    inputs = spec.prepare(spec.make_inputs(shape, DTYPES[dtype], "cuda", seed=0), impl.layout)
    out = spec.make_out(inputs)

    def run():
        impl.fn(*inputs, out=out)
        torch.cuda.synchronize()

    benchmark.group = f"{impl.algorithm} {'x'.join(map(str, shape))} {dtype}"
    t = time_gpu(lambda: impl.fn(*inputs, out=out))
    benchmark.extra_info.update(median_ms=t.median_ms, min_ms=t.min_ms, max_ms=t.max_ms,
                                gbps=spec.bytes(shape, DTYPES[dtype]) / (t.median_ms * 1e-3) / 1e9,
                                device=torch.cuda.get_device_name(0))
    benchmark.pedantic(run, warmup_rounds=3, rounds=20, iterations=1)
