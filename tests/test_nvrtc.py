"""Every .cu file compiles for sm_90 through NVRTC (no GPU needed) with the loader's options and
name expressions, and no kernel spills registers to local memory."""

import os

import pytest

pytestmark = pytest.mark.cpu_only  # (CI runs these; a GPU machine's suite skips them)

from bench import nvrtc

import cuda_ref
from cuda_ref import compile as cuda_compile
from cuda_ref import _gemv as cuda_gemv
from cuda_ref import _matmul as cuda_matmul
from cuda_ref import _matmul_fp8 as cuda_fp8
from cuda_ref import _matmul_fp8_few_rows as cuda_fp8_few_rows
from cuda_ref import _transpose as cuda_transpose

# file -> every name expression its launchers ask for
CU_FILES = {
    cuda_matmul.FILE: cuda_matmul.NAME_EXPRESSIONS,
    **cuda_matmul.MORE_FILES,
    **cuda_transpose.SOURCES,
    cuda_gemv.FILE: cuda_gemv.NAME_EXPRESSIONS,
    **cuda_fp8.SOURCES,
    **cuda_ref.sources("grouped_mm"),
}


NVRTC_MISSING = not nvrtc.available()
if NVRTC_MISSING and os.environ.get("REQUIRE_NVRTC") == "1":
    raise RuntimeError("REQUIRE_NVRTC=1 but NVRTC (cuda-bindings + nvidia-cuda-nvrtc) cannot be loaded")


def test_every_cu_file_is_listed():
    on_disk = {p.name for p in cuda_compile.KERNEL_DIR.glob("*.cu")}
    assert on_disk == set(CU_FILES)


@pytest.mark.skipif(NVRTC_MISSING, reason="NVRTC (cuda-bindings + nvidia-cuda-nvrtc) not installed")
@pytest.mark.parametrize("arch", [a for a in cuda_compile.PREBUILT_ARCHS if a != "sm_90"])
def test_every_shipped_file_compiles_for_the_older_prebuilt_archs(arch):
    """The wheel's build compiles every exported file for each of PREBUILT_ARCHS where it runs
    (``runs_on``); the spill test below covers sm_90. One instance a file, as the build compiles it."""
    for filename, names in cuda_compile.instances().items():
        if cuda_compile.runs_on(filename, arch):
            result = cuda_compile.nvrtc_compile(cuda_compile.source(filename), filename, names[:1],
                                                cuda_compile.full_options(filename, arch))
            assert result.ok, (filename, arch, result.log[-1500:])


@pytest.mark.skipif(NVRTC_MISSING, reason="NVRTC (cuda-bindings + nvidia-cuda-nvrtc) not installed")
@pytest.mark.parametrize("filename", sorted(CU_FILES))
def test_compiles_without_spills(filename):
    result = nvrtc.compile_file(filename, CU_FILES[filename], arch="sm_90")
    assert result.ok, result.log
    assert set(result.lowered) == set(CU_FILES[filename])
    # ptxas's C7511: wgmma instructions serialized (a wait after each), for want of registers
    assert "C7511" not in result.log, result.log
    for name, lowered in result.lowered.items():
        res = result.kernels[lowered]
        assert res.spill_stores == 0 and res.spill_loads == 0, f"{name} spills: {res}"
        assert res.stack_bytes == 0, f"{name} uses a local-memory stack frame: {res}"
        assert res.registers > 0, f"no ptxas report parsed for {name}"


def test_generated_wgmma_widths_are_current():
    """kernels/wgmma_n.cuh is what tools/gen_wgmma_n.py writes, for the widths wgmma_swap launches."""
    import importlib.util
    path = cuda_compile.KERNEL_DIR.parents[1] / "tools" / "gen_wgmma_n.py"
    if not path.exists():
        pytest.skip("tools/ is not installed with the package")
    spec = importlib.util.spec_from_file_location("gen_wgmma_n", path)
    gen = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gen)
    from cuda_ref import _matmul_swap
    assert gen.TARGET.read_text() == gen.text(), "run python tools/gen_wgmma_n.py"
    assert set(_matmul_swap.SWAP_WIDTHS) <= set(gen.WIDTHS)


@pytest.mark.skipif(NVRTC_MISSING, reason="NVRTC (cuda-bindings + nvidia-cuda-nvrtc) not installed")
def test_wgmma_ws_trace_build_compiles(monkeypatch):
    """lab/trace_wgmma.py's build (-DWS_TRACE) of the 16-bit default instance."""
    monkeypatch.setattr(cuda_compile, "OPTIONS", cuda_compile.OPTIONS + ("-DWS_TRACE",))
    name = "matmul_wgmma_ws<bf16_t, false, false, 4, 2, 2>"
    assert name in CU_FILES["matmul_wgmma_ws.cu"]
    result = nvrtc.compile_file("matmul_wgmma_ws.cu", (name,))
    assert result.ok, result.log


@pytest.mark.skipif(NVRTC_MISSING, reason="NVRTC not installed")
def test_compile_error_is_reported(tmp_path, monkeypatch):
    (tmp_path / "broken.cu").write_text("__global__ void k() { this is not C++; }\n")
    monkeypatch.setattr(cuda_compile, "KERNEL_DIR", tmp_path)
    result = nvrtc.compile_file("broken.cu", ())
    assert not result.ok
    assert "broken.cu" in result.log  # the #line directive names the file


def test_ptxas_parser():
    log = """ptxas info    : Compiling entry function '_Z3fooPf' for 'sm_90'
ptxas info    : Function properties for _Z3fooPf
    8 bytes stack frame, 4 bytes spill stores, 4 bytes spill loads
ptxas info    : Used 40 registers, used 1 barriers, 4224 bytes smem"""
    res = nvrtc._parse_ptxas(log)["_Z3fooPf"]
    assert (res.registers, res.stack_bytes, res.spill_stores, res.spill_loads, res.smem_bytes) == (40, 8, 4, 4, 4224)


def _ptx_params(filename: str, names) -> dict[str, list[int]]:
    """{instance: the byte size of each of its kernel's parameters}, from NVRTC's PTX of ``names``
    (compiled for the virtual architecture of the file's, with the loader's options)."""
    import re

    arch = cuda_compile.arch_for(filename, "sm_90").replace("sm_", "compute_")
    built = cuda_compile.nvrtc_compile(cuda_compile.source(filename), filename, tuple(names),
                                       (*cuda_compile.OPTIONS, *cuda_compile.CUPY_ADDED_OPTIONS, f"-arch={arch}"))
    assert built.ok and built.ptx, built.log
    sizes = {"8": 1, "16": 2, "32": 4, "64": 8}
    out = {}
    for name in names:
        head = built.ptx[built.ptx.index(f".entry {built.lowered[name]}("):]
        head = head[:head.index(")")]
        params = re.findall(r"\.param (?:\.align \d+ )?\.[a-z](\d+) \S+?_param_\d+(?:\[(\d+)\])?", head)
        out[name] = [sizes[bits] * int(count or 1) for bits, count in params]
    return out


def _struct_sizes(arg_types: str) -> list[int]:
    """The byte size of each argument a launch packs (``loader.Kernel``'s struct codes)."""
    import re
    return [int(n or 1) if code == "s" else {"Q": 8, "q": 8, "i": 4, "I": 4}[code]
            for n, code in re.findall(r"(\d*)([a-zA-Z])", arg_types)]


@pytest.mark.skipif(NVRTC_MISSING, reason="NVRTC (cuda-bindings + nvidia-cuda-nvrtc) not installed")
@pytest.mark.parametrize("algorithm", cuda_ref.ALGORITHMS)
def test_launches_pack_the_arguments_their_kernels_take(algorithm):
    """Each variant's launch (``cuda_ref.launches``, every dtype it takes) packs as many arguments,
    of the sizes, as its kernel declares (NVRTC's PTX): a parameter added to a kernel but not to its
    launch, or the reverse, fails here rather than as a wrong result on a GPU."""
    import torch

    wanted: dict = {}
    for dtype in (torch.float32, torch.float16, torch.bfloat16, torch.int8, torch.int32, torch.float64,
                  torch.float8_e4m3fn, torch.float8_e5m2):
        try:
            launches = cuda_ref.launches(algorithm, dtype)
        except (KeyError, TypeError, ValueError):
            continue
        for _, launch, _ in launches:
            # (a dtype the algorithm refuses names an instance no launcher asks for: never launched)
            file = next((f for f, names in cuda_ref.sources(algorithm).items() if launch.name in names), None)
            if file is not None:
                wanted.setdefault(file, {})[launch.name] = launch.arg_types
    if algorithm == "matmul":  # the split sum, launched inside the plans that split K into a buffer
        from cuda_ref import _matmul_wgmma
        for dtype in (torch.float32, *_matmul_wgmma.TC_DTYPES):
            launch = _matmul_wgmma.split_reduce_launch(dtype, 1000, 132)
            wanted.setdefault(_matmul_wgmma.SPLIT_REDUCE_FILE, {})[launch.name] = launch.arg_types
        from cuda_ref import _matmul_batched  # wgmma_ws's batch walk, asked by name
        for dtype in _matmul_wgmma.TC_DTYPES:
            for M, N in ((16, 4096), (300, 200), (2048, 64), (2048, 2048)):
                for a_mmajor in (False, True):
                    for b_nmajor in (False, True):
                        launch = _matmul_batched.batch_launch(8, M, N, 128, dtype, 132, a_mmajor, b_nmajor)
                        wanted.setdefault(_matmul_wgmma.WS_FILE, {})[launch.name] = launch.arg_types
        from cuda_ref import _copy  # the padded copy of an operand off 16 bytes, one word size each
        for cols, dtype in ((1, torch.int8), (1, torch.bfloat16), (2, torch.bfloat16), (4, torch.bfloat16),
                            (8, torch.bfloat16)):
            launch = _copy.copy_launch(torch.empty(2, cols, dtype=dtype))[0]
            wanted.setdefault(_copy.FILE, {})[launch.name] = launch.arg_types
        assert set(wanted[_copy.FILE]) == set(_copy.NAME_EXPRESSIONS)
    if algorithm == "gemv":  # the twins, launched in place of a variant's own kernel on rows off 16 bytes
        from cuda_ref import _gemv
        for dtype in _gemv.DTYPES:
            for variant, twin in (("warp_per_row", "phased"), ("rows_per_warp", "phased"), ("rows_per_warp", "masked")):
                for K in (97, 191):  # (the masked twin's 8- and 16-lane geometries)
                    launch = _gemv.plan_launches(variant, 4096, K, dtype, 132, twin)[0]
                    wanted.setdefault(_gemv.FILE, {})[launch.name] = launch.arg_types
    if algorithm == "grouped_mm":  # b's gradient, launched by the backward (weight_grad)
        from cuda_ref import _grouped
        for dtype in _grouped.DTYPES:
            for store_tma in (False, True):
                launch = _grouped.weight_grad_launch(dtype, 8, 4096, 14336, 132, store_tma)
                wanted.setdefault(_grouped.FILE, {})[launch.name] = launch.arg_types
    assert wanted
    for file, launches in wanted.items():
        params = _ptx_params(file, tuple(launches))
        for name, arg_types in launches.items():
            assert _struct_sizes(arg_types) == params[name], (name, arg_types, params[name])


@pytest.mark.skipif(NVRTC_MISSING, reason="NVRTC (cuda-bindings + nvidia-cuda-nvrtc) not installed")
def test_fp8_few_rows_launches_pack_the_arguments_its_kernel_takes():
    """cuda_ref/_matmul_fp8_few_rows.py's launches against its kernel's PTX:
    each scaling, both row blocks, K in runs and whole."""
    import torch

    launches = {}
    for M, K in ((5, 8192), (30, 512)):
        for scaling in cuda_fp8_few_rows.SCALING_CODE:
            launch = cuda_fp8_few_rows.launch_of(M, 4096, K, torch.float8_e4m3fn, torch.float8_e4m3fn,
                                                 torch.bfloat16, scaling, 132)
            launches[launch.name] = launch.arg_types
    params = _ptx_params(cuda_fp8_few_rows.FILE, tuple(launches))
    for name, arg_types in launches.items():
        assert _struct_sizes(arg_types) == params[name], (name, arg_types, params[name])
