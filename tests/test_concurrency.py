"""Streams, CUDA graphs, devices and threads (issue 7, part 6), every public function of both
backends and every variant. GPU only, except the check that Triton's autotuner is entered by one
thread at a time (a fake autotuner, on the CPU).

- Side stream: the input is rewritten on a user stream after the GPU has been put to sleep on it
  (``torch.cuda._sleep``), then the function is called on that stream: a kernel launched on any
  other stream would read the old values.
- Graphs: capture once, replay on new data in the same buffers; float32, and float16 (the 16-bit
  instances) for every variant that takes it.
- A second device, where there is one: correct on cuda:1 while cuda:0 is current; operands on two
  devices are a ValueError naming the argument.
- First calls from several threads at once, in a fresh process (nothing compiled yet).
"""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys
import textwrap

import pytest
import torch

import cuda_ref
import triton_impl
from bench import registry
from bench.specs import SPECS
from conftest import requires_gpu

BACKENDS = {"cuda": cuda_ref, "triton": triton_impl}
ROOT = pathlib.Path(__file__).resolve().parents[1]
SHAPES = {"transpose": (513, 1031), "gemv": (513, 1031), "matmul": (257, 131, 129)}
ALL = [(b, alg, v) for b, mod in BACKENDS.items() for alg in registry.algorithms() for v in mod.variants(alg)]
IDS = [f"{b}-{alg}-{v}" for b, alg, v in ALL]


def shape_for(backend, alg, variant) -> tuple:
    return registry.within_k_cap(alg, backend, variant, SHAPES[alg])


# graphs: every variant in float32, and in float16 where the variant takes it (not the SGEMM walk;
# the tensor-core walk takes float16 only)
GRAPH = [(b, alg, v, d) for b, alg, v in ALL for d in ("float32", "float16")
         if registry.takes(alg, b, v, d, shape_for(b, alg, v))]


def dtype_of(backend, alg, variant) -> str:
    """float32, or float16 for a variant that takes 16-bit types only, int8 for the int8 ones."""
    return next((d for d in ("float32", "float16", "int8")
                 if registry.takes(alg, backend, variant, d, shape_for(backend, alg, variant))),
                "float32")  # (none: a size cap, which this test does not go through)
GRAPH_IDS = [f"{b}-{alg}-{v}-{d}" for b, alg, v, d in GRAPH]


def inputs_for(backend, alg, variant, seed=0, device="cuda", dtype="float32"):
    spec = SPECS[alg]
    return spec.make_inputs(shape_for(backend, alg, variant), spec.torch_dtype(dtype), device, seed)


def assert_ok(alg, out, inputs, where="", dtype="float32"):
    spec = SPECS[alg]
    with spec.context(dtype):
        cmp = spec.compare(out, spec.reference(inputs), inputs)
    assert cmp.ok, f"{where}: {cmp.detail}"


@requires_gpu
@pytest.mark.parametrize("backend,alg,variant", ALL, ids=IDS)
def test_side_stream_with_queued_work(backend, alg, variant):
    fn = getattr(BACKENDS[backend], alg)
    dtype = dtype_of(backend, alg, variant)
    old = inputs_for(backend, alg, variant, seed=0, dtype=dtype)
    new = inputs_for(backend, alg, variant, seed=1, dtype=dtype)
    with SPECS[alg].context(dtype):
        fn(*old, variant=variant)  # compile (and autotune) first, outside the timed-race window
    torch.cuda.synchronize()
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        torch.cuda._sleep(50_000_000)          # ~25 ms of GPU time queued before the new data
        for t, n in zip(old, new):
            t.copy_(n)                          # the inputs now hold `new`, on stream s only
        with SPECS[alg].context(dtype):
            out = fn(*old, variant=variant)
    torch.cuda.current_stream().wait_stream(s)
    torch.cuda.synchronize()
    assert_ok(alg, out, new, f"{backend} {alg} {variant}", dtype)


@requires_gpu
@pytest.mark.parametrize("backend,alg,variant,dtype", GRAPH, ids=GRAPH_IDS)
def test_cuda_graph_capture_and_replay(backend, alg, variant, dtype):
    fn = getattr(BACKENDS[backend], alg)
    spec = SPECS[alg]
    inputs = inputs_for(backend, alg, variant, seed=0, dtype=dtype)
    out = spec.make_out(inputs)
    with spec.context(dtype):
        fn(*inputs, variant=variant, out=out)   # compile and autotune outside the capture
        torch.cuda.synchronize()
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            fn(*inputs, variant=variant, out=out)
    for seed in (3, 4):                          # new data in the same buffers, replayed twice
        for t, n in zip(inputs, inputs_for(backend, alg, variant, seed=seed, dtype=dtype)):
            t.copy_(n)
        out.fill_(float("nan"))
        g.replay()
        torch.cuda.synchronize()
        assert_ok(alg, out, inputs, f"{backend} {alg} {variant} {dtype} replay seed {seed}", dtype)


@requires_gpu
def test_gemv_const_buffer_shared_by_streams():
    """coalesced_const keeps x in one __constant__ buffer per device: calls on two streams with
    different x must not run on each other's x."""
    a, _ = SPECS["gemv"].make_inputs((4096, 2048), torch.float32, "cuda", 0)
    xs = [SPECS["gemv"].make_inputs((1, 2048), torch.float32, "cuda", s)[1] for s in range(8)]
    cuda_ref.gemv(a, xs[0], variant="coalesced_const")
    torch.cuda.synchronize()
    streams = [torch.cuda.Stream() for _ in range(2)]
    outs = []
    for i, x in enumerate(xs):
        with torch.cuda.stream(streams[i % 2]):
            torch.cuda._sleep(2_000_000 if i % 2 == 0 else 0)  # stream 0 lags: its kernels run late
            outs.append(cuda_ref.gemv(a, x, variant="coalesced_const"))
    torch.cuda.synchronize()
    for i, (x, y) in enumerate(zip(xs, outs)):
        assert_ok("gemv", y, (a, x), f"call {i} on stream {i % 2}")


# ---- a second device ----------------------------------------------------------------------------
@requires_gpu
@pytest.mark.parametrize("backend,alg,variant", ALL, ids=IDS)
def test_second_device(backend, alg, variant):
    if torch.cuda.device_count() < 2:
        pytest.skip(f"needs 2 GPUs, found {torch.cuda.device_count()}")
    fn = getattr(BACKENDS[backend], alg)
    dtype = dtype_of(backend, alg, variant)
    inputs = inputs_for(backend, alg, variant, seed=0, device="cuda:1", dtype=dtype)
    with torch.cuda.device(0), SPECS[alg].context(dtype):   # cuda:0 current, tensors on cuda:1
        out = fn(*inputs, variant=variant)
        torch.cuda.synchronize(1)
    assert out.device == torch.device("cuda:1")
    assert_ok(alg, out, inputs, f"{backend} {alg} {variant} on cuda:1", dtype)
    if alg != "transpose":  # the second operand on the other device: a clear error naming it
        other = (inputs[0], inputs[1].to("cuda:0"))
        with pytest.raises(ValueError, match=r"^(x|b)\b"):
            fn(*other, variant=variant)
    with pytest.raises(ValueError, match="^out"):
        fn(*inputs, variant=variant, out=SPECS[alg].make_out(inputs).to("cuda:0"))


@requires_gpu
@pytest.mark.parametrize("backend,alg,variant", ALL, ids=IDS)
def test_a_thread_whose_first_cuda_work_is_our_call(backend, alg, variant):
    """A new thread has no current CUDA context until something on it asks the runtime for one; a
    thread whose first CUDA work was a planned CUDA call (inputs made elsewhere, the result's
    memory from torch's cache) failed with CUDA_ERROR_INVALID_CONTEXT (session 33)."""
    import threading
    dtype = dtype_of(backend, alg, variant)
    fn, inputs = getattr(BACKENDS[backend], alg), inputs_for(backend, alg, variant, dtype=dtype)
    fn(*inputs, variant=variant)  # planned and compiled here
    torch.cuda.synchronize()
    got = []

    def work():
        try:
            got.append(fn(*inputs, variant=variant))
            torch.cuda.synchronize()
        except Exception as e:  # noqa: BLE001
            got.append(e)
    t = threading.Thread(target=work)
    t.start()
    t.join()
    assert isinstance(got[0], torch.Tensor), repr(got[0])
    assert_ok(alg, got[0], inputs, "first call on a new thread", dtype)


# ---- first calls from several threads ------------------------------------------------------------
THREADS_SCRIPT = textwrap.dedent("""
    import sys, threading, torch
    sys.path.insert(0, {root!r})
    import cuda_ref, triton_impl
    from bench import registry
    from bench.specs import SPECS
    N = 4
    shapes = {{"transpose": (257, 131), "gemv": (257, 131), "matmul": (67, 45, 33)}}
    failures = []
    for name, mod in (("cuda", cuda_ref), ("triton", triton_impl)):
        for alg in ("transpose", "gemv", "matmul"):
            for variant in mod.variants(alg):
                spec, fn = SPECS[alg], getattr(mod, alg)
                shape = registry.within_k_cap(alg, name, variant, shapes[alg])
                dtype = next((getattr(torch, d) for d in ("float32", "float16", "int8")
                              if registry.takes(alg, name, variant, d, shape)), torch.float32)
                barrier = threading.Barrier(N)
                def work(i):
                    inputs = spec.make_inputs(shape, dtype, "cuda", i)
                    try:
                        barrier.wait()
                        out = fn(*inputs, variant=variant)   # the first call: compiles
                        torch.cuda.synchronize()
                        cmp = spec.compare(out, spec.reference(inputs), inputs)
                        if not cmp.ok:
                            failures.append(f"{{name}} {{alg}} {{variant}} thread {{i}}: {{cmp.detail}}")
                    except Exception as e:  # noqa: BLE001
                        failures.append(f"{{name}} {{alg}} {{variant}} thread {{i}}: {{type(e).__name__}}: {{e}}")
                threads = [threading.Thread(target=work, args=(i,)) for i in range(N)]
                for t in threads: t.start()
                for t in threads: t.join()
    print("\\n".join(failures) or "ok")
    sys.exit(1 if failures else 0)
""")


def test_the_threads_script_parses():
    # the script runs only on a GPU machine; a slip in its text shows here, on the CPU
    compile(THREADS_SCRIPT.format(root="."), "<threads script>", "exec")


@requires_gpu
def test_first_call_from_threads_in_a_fresh_process():
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    env.pop("TRITON_INTERPRET", None)
    res = subprocess.run([sys.executable, "-c", THREADS_SCRIPT.format(root=str(ROOT))], env=env,
                         capture_output=True, text=True, timeout=900)
    assert res.returncode == 0, res.stdout[-4000:] + res.stderr[-4000:]
