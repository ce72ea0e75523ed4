"""What a wheel ships is enough to run: every source the CUDA loader reads at run time matches
pyproject's package data (checked on CPU, no build needed).

``cuda_ref/loader.py`` reads ``cuda_ref/kernels/<file>.cu`` and inlines each ``#include "x.cuh"``
from the same folder. An editable install reads them from the checkout, so a header left out of
``[tool.setuptools.package-data]`` only breaks a real install (``pip install .``, a wheel), with a
FileNotFoundError at the first launch. These tests model setuptools' selection (``packages`` +
``package-data`` globs, with ``include-package-data = false`` nothing else) and fail when a
source or a header the loader needs would be missing. ``.ci/run`` also builds the wheel, installs
it into a fresh environment and runs the NVRTC tests against it.

They read the checkout's pyproject.toml: from a copy of tests/ without it (the installed smoke
run) they skip.
"""

from __future__ import annotations

import glob
import importlib
import os
import pathlib
import pkgutil
import re
import shutil

import pytest

import cuda_ref
from cuda_ref import compile as cuda_compile

ROOT = pathlib.Path(__file__).resolve().parent.parent
PYPROJECT = ROOT / "pyproject.toml"
KERNELS = ROOT / "cuda_ref" / "kernels"

# any quoted include: the loader inlines "x.cuh" itself, anything else would be NVRTC's to find
QUOTED_INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.MULTILINE)

pytestmark = pytest.mark.skipif(not (PYPROJECT.is_file() and KERNELS.is_dir()),
                                reason="needs the checkout (pyproject.toml, cuda_ref/kernels/)")


def _setuptools_config() -> dict:
    try:
        import tomllib
    except ImportError:  # Python 3.10
        tomllib = pytest.importorskip("tomli")
    with open(PYPROJECT, "rb") as f:
        return tomllib.load(f)["tool"]["setuptools"]


def shipped_files(cfg: dict | None = None) -> set[pathlib.Path]:
    """The files setuptools puts in the wheel for this configuration: each listed package's
    modules and the files its package-data globs match (relative to the package's folder)."""
    cfg = _setuptools_config() if cfg is None else cfg
    packages = cfg.get("packages")
    assert isinstance(packages, list), "packages is not an explicit list: teach this test the discovery used"
    assert "package-dir" not in cfg, "package-dir is set: teach this test the mapping"
    assert cfg.get("include-package-data") is False, (
        "include-package-data must be false: then package-data is the whole list of non-.py files "
        "that ship, which is what this test models")
    data = cfg.get("package-data", {})
    excluded = cfg.get("exclude-package-data", {})
    files: set[pathlib.Path] = set()
    for package in packages:
        folder = ROOT.joinpath(*package.split("."))
        assert folder.is_dir(), f"package {package} listed in pyproject.toml has no folder {folder}"
        files |= set(folder.glob("*.py"))

        def matches(patterns):
            return {pathlib.Path(p) for pattern in patterns
                    for p in glob.glob(str(folder / pattern), recursive=True) if os.path.isfile(p)}

        # "" and "*" apply to every package
        files |= matches([*data.get("", []), *data.get("*", []), *data.get(package, [])])
        files -= matches([*excluded.get("", []), *excluded.get("*", []), *excluded.get(package, [])])
    return {p.resolve() for p in files}


def loader_files() -> dict[str, str]:
    """{.cu file: the cuda_ref module that launches it}, from every cuda_ref module's FILE."""
    out = {}
    for info in pkgutil.iter_modules(cuda_ref.__path__):
        module = importlib.import_module(f"cuda_ref.{info.name}")
        if isinstance(getattr(module, "FILE", None), str):
            out[module.FILE] = module.__name__
    return out


def missing_sources(ships: set[pathlib.Path]) -> list[str]:
    """The .cu files the launchers name and (transitively) every file they #include "...", that
    are absent from cuda_ref/kernels/ or from ``ships``; one message each."""
    launched = loader_files()
    assert launched, "no cuda_ref module names a FILE: the loader's sources are not found"
    todo = [(KERNELS / name, launched[name]) for name in sorted(launched)]
    seen, missing = set(), []
    while todo:
        path, needed_by = todo.pop()
        if path in seen:
            continue
        seen.add(path)
        if not path.is_file():
            missing.append(f"{needed_by} needs {path.name}, which is not in cuda_ref/kernels/")
            continue
        if path.resolve() not in ships:
            missing.append(f"{path.relative_to(ROOT)} (needed by {needed_by}) matches no "
                           f"[tool.setuptools.package-data] pattern of pyproject.toml: a wheel would not ship it")
        for name in QUOTED_INCLUDE.findall(path.read_text()):
            todo.append((path.parent / name, path.name))
    return missing


def test_every_launched_source_and_its_includes_ship():
    missing = missing_sources(shipped_files())
    assert not missing, "\n".join(missing)


def test_every_kernel_source_on_disk_ships():
    """A new .cu or .cuh in cuda_ref/kernels/ ships, launched yet or not."""
    ships = shipped_files()
    missing = [p.name for p in sorted(KERNELS.iterdir())
               if p.suffix in (".cu", ".cuh") and p.resolve() not in ships]
    assert not missing, f"cuda_ref/kernels/ files a wheel would not ship: {missing} (pyproject.toml package-data)"


def test_loader_reads_only_what_ships(tmp_path, monkeypatch):
    """The loader, pointed at a kernels folder holding only what the wheel would ship, reads
    every launcher's source with its includes inlined, as it will once installed."""
    installed = tmp_path / "kernels"
    installed.mkdir()
    for path in shipped_files():
        if path.parent == KERNELS.resolve():
            shutil.copy(path, installed / path.name)
    monkeypatch.setattr(cuda_compile, "KERNEL_DIR", installed)
    for name in loader_files():
        text = cuda_compile.source(name)  # FileNotFoundError: a source or header that does not ship
        assert not QUOTED_INCLUDE.search(text), f"{name}: an #include was left for NVRTC to find"


def test_the_check_catches_a_forgotten_header():
    """The check itself: the configuration this project once had (the .cu files only, dtypes.cuh
    forgotten) is reported."""
    cfg = _setuptools_config()
    cfg["package-data"] = {"cuda_ref.kernels": ["*.cu"]}
    missing = missing_sources(shipped_files(cfg))
    assert any("dtypes.cuh" in m for m in missing), missing


def test_no_module_of_the_product_passes_600_lines():
    """A module past 600 lines is split by family (as the matmul launchers are): the house's rule."""
    long = [f"{p.relative_to(ROOT)}: {n}" for pkg in ("cuda_ref", "triton_impl", "kernel_common", "bench")
            for p in sorted((ROOT / pkg).glob("*.py")) if (n := len(p.read_text().splitlines())) > 600]
    assert not long, long
