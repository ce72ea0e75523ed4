"""The cubins a wheel ships (cuda_ref/compile.py): the instance list the build reads is the
launchers', a built cubin is found for its own source, options and architecture only (an edited
source, other options or CUDA_REF_PREBUILT=0 find nothing, so the loader compiles instead), and on a
GPU a call runs from a shipped cubin with the results NVRTC's build gives."""

from __future__ import annotations

import json
import os
import shutil
import struct

import pytest
import torch

import cuda_ref
from cuda_ref import compile as cuda_compile
from cuda_ref import loader

from conftest import requires_gpu

try:
    from bench import nvrtc
    NVRTC = nvrtc.available()
except ImportError:  # pragma: no cover
    NVRTC = False

needs_nvrtc = pytest.mark.skipif(not NVRTC, reason="NVRTC (cuda-bindings, nvidia-cuda-nvrtc) not installed")

# one instance of an ordinary file (every architecture) and one of a file built for sm_90a only
TRANSPOSE = ("transpose.cu", cuda_ref.sources("transpose")["transpose.cu"][0])
WGMMA = ("matmul_wgmma.cu", cuda_ref.sources("matmul")["matmul_wgmma.cu"][0])


def test_instances_file_is_what_the_launchers_ask_for():
    table = {f: list(n) for alg in cuda_ref.ALGORITHMS for f, n in cuda_ref.sources(alg).items()}
    assert cuda_compile.instances() == table, "run: python -m cuda_ref.compile --instances"


def test_source_text_does_not_name_the_install_path():
    text = cuda_compile.source("transpose.cu")
    assert str(cuda_compile.KERNEL_DIR) not in text and text.startswith('#line 1 "transpose.cu"')


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    if not NVRTC:
        pytest.skip("NVRTC (cuda-bindings, nvidia-cuda-nvrtc) not installed")
    out = tmp_path_factory.mktemp("prebuilt")
    wanted = {TRANSPOSE[0]: [TRANSPOSE[1]], WGMMA[0]: [WGMMA[1]]}
    return out, cuda_compile.build(out, ("sm_80", "sm_90"), wanted, jobs=2)


@needs_nvrtc
def test_build_writes_an_elf_cubin_per_instance_and_arch(built):
    out, index = built
    archs = sorted((e["file"], e["arch"]) for e in index["entries"].values())
    # the wgmma file only for sm_90a; the others for each architecture asked for
    assert archs == [("matmul_wgmma.cu", "sm_90a"), ("transpose.cu", "sm_80"), ("transpose.cu", "sm_90")]
    assert json.loads((out / "index.json").read_text())["meta"]["nvrtc"] == list(cuda_compile.nvrtc_version())
    for k, entry in index["entries"].items():
        assert _elf_sm((out / f"{k}.cubin").read_bytes()) == int(entry["arch"][3:5])


@needs_nvrtc
def test_find_takes_only_a_cubin_of_this_source_options_and_arch(built, tmp_path, monkeypatch):
    out, index = built
    for arch in ("sm_80", "sm_90"):
        path, lowered = cuda_compile.find(*TRANSPOSE, arch, where=out)
        assert index["entries"][path.stem]["lowered"] == lowered and lowered.startswith("_Z")
    assert cuda_compile.find(*WGMMA, "sm_90", where=out) is not None
    assert cuda_compile.find(*WGMMA, "sm_80", where=out) is None  # (sm_90a code runs on 9.0 alone)
    assert cuda_compile.find(*TRANSPOSE, "sm_86", where=out) is None  # not built: NVRTC on first use
    monkeypatch.setenv("CUDA_REF_PREBUILT", "0")
    assert cuda_compile.find(*TRANSPOSE, "sm_90", where=out) is None
    monkeypatch.delenv("CUDA_REF_PREBUILT")
    # other options: another key
    monkeypatch.setattr(cuda_compile, "OPTIONS", cuda_compile.OPTIONS + ("-DSOMETHING",))
    assert cuda_compile.find(*TRANSPOSE, "sm_90", where=out) is None
    monkeypatch.undo()
    # an edited source, or a header it includes: the shipped cubin is stale and never found
    edited = tmp_path / "kernels"
    shutil.copytree(cuda_compile.KERNEL_DIR, edited)
    assert cuda_compile.find(*TRANSPOSE, "sm_90", where=out) is not None
    monkeypatch.setattr(cuda_compile, "KERNEL_DIR", edited)
    assert cuda_compile.find(*TRANSPOSE, "sm_90", where=out) is not None  # the same text elsewhere
    (edited / "transpose.cu").write_text((edited / "transpose.cu").read_text() + "\n// edited\n")
    assert cuda_compile.find(*TRANSPOSE, "sm_90", where=out) is None
    assert cuda_compile.find(*WGMMA, "sm_90", where=out) is not None
    header = edited / "wgmma.cuh"  # a header the wgmma file includes
    assert '#include "wgmma.cuh"' in (edited / WGMMA[0]).read_text()
    header.write_text(header.read_text() + "\n// edited\n")
    assert cuda_compile.find(*WGMMA, "sm_90", where=out) is None


def _elf_sm(cubin: bytes) -> int:
    """The SM version a CUDA ELF is for (e_flags' second byte)."""
    assert cubin[:4] == b"\x7fELF" and int.from_bytes(cubin[18:20], "little") == 190  # EM_CUDA
    return (struct.unpack_from("<I", cubin, 48)[0] >> 8) & 0xFF


def test_build_state_names_the_nvrtc_of_the_shipped_cubins(tmp_path, monkeypatch):
    """compare's meta "cuda_build": the cubins' NVRTC from their index, none without an index or
    with CUDA_REF_PREBUILT=0 (every kernel then compiles at its first call)."""
    assert cuda_compile.build_state(tmp_path)["prebuilt_nvrtc"] is None
    (tmp_path / "index.json").write_text(json.dumps({"meta": {"nvrtc": [13, 7]}, "entries": {}}))
    assert cuda_compile.build_state(tmp_path)["prebuilt_nvrtc"] == [13, 7]
    monkeypatch.setenv("CUDA_REF_PREBUILT", "0")
    assert cuda_compile.build_state(tmp_path)["prebuilt_nvrtc"] is None


def test_the_shipped_cubins_cover_every_instance():
    """An installed wheel's cubins (``.ci/run`` installs one and sets REQUIRE_PREBUILT=1): one for
    every instance and architecture, found for the installed sources (their keys match), each an
    ELF for its architecture, made by an NVRTC of the major version this machine's has."""
    index_file = cuda_compile.PREBUILT_DIR / "index.json"
    if not index_file.is_file():
        if os.environ.get("REQUIRE_PREBUILT") == "1":
            pytest.fail(f"no {index_file}: the wheel was built without its cubins")
        pytest.skip("no shipped cubins here (a wheel has them; a checkout: python -m cuda_ref.compile)")
    meta = json.loads(index_file.read_text())["meta"]
    count = 0
    for arch in cuda_compile.PREBUILT_ARCHS:
        for filename, names in cuda_compile.instances().items():
            for name in names:
                if not cuda_compile.runs_on(filename, arch):
                    continue
                found = cuda_compile.find(filename, name, arch)
                assert found is not None, f"no shipped cubin of {name} ({filename}) for {arch}"
                assert _elf_sm(found[0].read_bytes()) == int(arch[3:5]), (name, arch)
                count += 1
    assert count == len(json.loads(index_file.read_text())["entries"])
    if NVRTC:
        assert meta["nvrtc"][0] == cuda_compile.nvrtc_version()[0], "cubins of another CUDA major version"


@requires_gpu
@needs_nvrtc
def test_a_call_runs_from_a_shipped_cubin(tmp_path, monkeypatch):
    """Every transpose instance built for this GPU, then a new loader state: the call's kernel comes
    from the cubin (its lowered name), and the result is exact."""
    major, minor = torch.cuda.get_device_capability()
    arch = f"sm_{major}{minor}"
    cuda_compile.build(tmp_path, (arch,), {"transpose.cu": cuda_ref.sources("transpose")["transpose.cu"]})
    monkeypatch.setattr(cuda_compile, "PREBUILT_DIR", tmp_path)
    monkeypatch.setattr(loader, "_modules", {})
    monkeypatch.setattr(loader, "_functions", {})
    cuda_ref.plans("transpose").clear()
    try:
        x = torch.randn(333, 517, device="cuda")
        got = cuda_ref.transpose(x)
        torch.cuda.synchronize()
        assert torch.equal(got, x.t())
        used = [(k, symbol) for k, (_, symbol) in loader._modules.items()]
        assert used and all(symbol.startswith("_Z") for _, symbol in used), used  # lowered: the cubin's
    finally:
        cuda_ref.plans("transpose").clear()  # its plans hold kernels of the patched loader state
