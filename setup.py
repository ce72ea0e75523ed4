"""The wheel's build: setuptools' own, plus the cubins of every CUDA instance for the
architectures in use (``cuda_ref/compile.py``), made with NVRTC from pip (no GPU needed) into the
wheel's ``cuda_ref/prebuilt/``. Not for an editable install (``python -m cuda_ref.compile`` builds
them in the checkout). ``CUDA_REF_PREBUILT=0`` builds a wheel without them; a build without NVRTC
warns and ships none: the loader then compiles on first use, as it does for other architectures."""

import importlib.util
import os
import pathlib
import sys

from setuptools import setup
from setuptools.command.build_py import build_py


class BuildPyWithCubins(build_py):
    def run(self):
        super().run()
        if getattr(self, "editable_mode", False) or os.environ.get("CUDA_REF_PREBUILT", "1") == "0":
            return
        # cuda_ref/compile.py alone: the package's __init__ imports torch, which the build has not
        spec = importlib.util.spec_from_file_location(
            "cuda_ref_compile", pathlib.Path(__file__).resolve().parent / "cuda_ref" / "compile.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module  # (its worker processes find their function by module name)
        spec.loader.exec_module(module)
        out = pathlib.Path(self.build_lib) / "cuda_ref" / "prebuilt"
        try:
            index = module.build(out)
        except ImportError as e:
            print(f"warning: no NVRTC in this build ({e}): the wheel ships no cubins", file=sys.stderr)
            return
        print(f"cuda_ref: {len(index['entries'])} cubins for {', '.join(module.PREBUILT_ARCHS)} "
              f"(NVRTC {index['meta']['nvrtc']})")


setup(cmdclass={"build_py": BuildPyWithCubins})
