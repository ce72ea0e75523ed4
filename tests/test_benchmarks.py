"""pytest-benchmark entries: every registered implementation through the same registry.

Run with ``pytest --benchmark-only`` on a GPU. The timer synchronizes the device after each
call, so a round is a whole kernel, not a launch (the host-cost entries, ``test_host_cost``, time
calls without a synchronize: a round is the host's share); CUDA-event timings (median/min/max with L2
flushed, as ``python -m bench compare`` measures them) go into ``extra_info``. Plain ``pytest``
skips these, and without a GPU they skip with a reason.
"""

import pytest
import torch

from bench import registry
from bench.specs import SPECS
from conftest import HAS_GPU

CASES = [
    ("transpose", (16384, 16384), "float32"),
    ("transpose", (4096, 4096), "float16"),
    ("gemv", (16384, 16384), "float32"),
    ("gemv", (64, 1 << 20), "float32"),
    ("matmul", (4096, 4096, 4096), "float32"),
    ("matmul", (4096, 4096, 4096), "tf32"),
    ("matmul", (4096, 4096, 4096), "float16"),
    ("matmul", (4096, 4096, 4096), "bfloat16"),
]
PARAMS = [pytest.param(impl, shape, dtype, id=f"{impl.algorithm}-{'x'.join(map(str, shape))}-{dtype}-"
                       f"{impl.backend}-{impl.variant}")
          for algorithm, shape, dtype in CASES for impl in registry.select(algorithm) if impl.takes(dtype)]


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

    torch_dtype = spec.torch_dtype(dtype)
    inputs = spec.prepare(spec.make_inputs(shape, torch_dtype, "cuda", seed=0), impl.layout)
    out = spec.make_out(inputs)

    def run():
        impl.fn(*inputs, out=out)
        torch.cuda.synchronize()

    benchmark.group = f"{impl.algorithm} {'x'.join(map(str, shape))} {dtype}"
    with spec.context(dtype):  # e.g. matmul's tf32: float32 tensors with TF32 allowed
        t = time_gpu(lambda: impl.fn(*inputs, out=out))
        seconds = t.median_ms * 1e-3
        benchmark.extra_info.update(median_ms=t.median_ms, min_ms=t.min_ms, max_ms=t.max_ms,
                                    gbps=spec.bytes(shape, torch_dtype) / seconds / 1e9,
                                    device=torch.cuda.get_device_name(0))
        if spec.flops(shape):
            benchmark.extra_info["tflops"] = spec.flops(shape) / seconds / 1e12
        benchmark.pedantic(run, warmup_rounds=3, rounds=20, iterations=1)


def _host_cases():
    from bench.overhead import CASES as OVERHEAD_CASES
    return [pytest.param(alg, dtype, shape, who, id=f"host-{alg}-{'x'.join(map(str, shape))}-{dtype}-{who}")
            for alg, dtype, shape in OVERHEAD_CASES for who in ("torch", "cuda", "triton")]


@pytest.mark.parametrize("algorithm,dtype,shape,who", _host_cases())
def test_host_cost(benchmark, request, algorithm, dtype, shape, who):
    """The host's time per call (no synchronize inside the timed calls) on a small input, for
    each backend's default and torch's equivalent: what a program's loop pays per call."""
    if not request.config.getoption("benchmark_only", False):
        pytest.skip("timing runs only under pytest --benchmark-only")
    if not HAS_GPU:
        pytest.skip("benchmarks need a CUDA GPU (none found)")
    import importlib

    spec = SPECS[algorithm]
    inputs = spec.make_inputs(shape, spec.torch_dtype(dtype), "cuda", seed=0)
    if who == "torch":
        fn = next(i for i in registry.select(algorithm, "torch") if i.role == "reference").fn
    else:
        fn = getattr(importlib.import_module(registry.PACKAGES[who]), algorithm)
    benchmark.group = f"host cost {algorithm} {'x'.join(map(str, shape))} {dtype}"
    benchmark.extra_info["device"] = torch.cuda.get_device_name(0)
    benchmark.pedantic(lambda: fn(*inputs), warmup_rounds=1, rounds=5, iterations=1000)
    torch.cuda.synchronize()
