"""Triton's own cache key, kept between processes.

Triton keys every compiled kernel on disk with ``triton.runtime.cache.triton_key()``: a hash of
its compiler's and language's sources and of ``libtriton`` (hundreds of MB), computed once per
process. On an H200 host that was 0.40 s of the 0.53 s a process's first Triton call took with
the kernel already on disk (``bench/results/logs/h200-2026-11-29-triton-first-call-profile.txt``).

``install()`` keeps that hash in a file beside a signature of what it read: the path, size,
modification time and inode of every file Triton hashes (a few milliseconds of ``stat``). While
the signature holds, a new process takes the stored hash; any reinstall or edit of Triton
changes the signature, and the hash is computed again. The hash goes in as Triton's own worker
processes put theirs (``triton.runtime.cache.triton_key = lambda: key``). Where no stored hash
holds (a new install, empty caches: 0.44 s of the first call's 1.9 s, beside 0.83 s of Triton's C
builds of its driver and launcher and 0.2 s of its Gluon import; ``tools/first_call.py --profile``,
``bench/results/logs/h200-2026-11-30-first-call-profile.txt``), it is computed in a thread while
the rest of that first call runs, and Triton's first use of its key waits for it.
``TRITON_IMPL_KEY_MEMO=0`` leaves Triton's function alone.
"""

from __future__ import annotations

import hashlib
import json
import os
import pathlib
import threading

_lock = threading.Lock()
_installed = False


def _path() -> pathlib.Path:
    return pathlib.Path.home() / ".cache" / "gpu-kernels-reference" / "triton-key.json"


def signature(cache_module) -> str:
    """A hash of (path, size, mtime, inode) of each file ``triton_key`` reads: cache.py itself,
    the .py files under compiler/, backends/ and language/, and libtriton."""
    root = pathlib.Path(cache_module.__file__).resolve().parent.parent
    files = [pathlib.Path(cache_module.__file__).resolve()]
    for sub in ("compiler", "backends", "language"):
        for folder, _, names in os.walk(root / sub):
            files += [pathlib.Path(folder) / n for n in names if n.endswith(".py")]
    files += sorted((root / "_C").glob("libtriton*"))
    h = hashlib.sha256(getattr(cache_module, "__version__", "").encode())
    for f in sorted(files):
        st = f.stat()
        h.update(f"{f}\0{st.st_size}\0{st.st_mtime_ns}\0{st.st_ino}\n".encode())
    return h.hexdigest()


def install() -> None:
    """Once a process, before its first Triton compile or cache lookup: Triton's key from the
    file where its signature still holds, else computed (and written) as Triton computes it, in a
    thread beside the rest of the first call (``_computing``)."""
    global _installed
    if _installed:
        return
    with _lock:
        if _installed or os.environ.get("TRITON_IMPL_KEY_MEMO", "1") == "0":
            _installed = True
            return
        try:
            from triton.runtime import cache
            original = getattr(cache.triton_key, "__wrapped__", cache.triton_key)
            sig = signature(cache)
            path = _path()
            try:
                stored = json.loads(path.read_text())
            except (OSError, ValueError):
                stored = {}
            key = stored.get("key") if stored.get("signature") == sig else None
            if isinstance(key, str):
                cache.triton_key = lambda: key
            else:
                cache.triton_key = _computing(original, sig, path)
        except Exception:  # noqa: BLE001 - a Triton whose layout differs keeps its own function
            pass
        _installed = True


def _computing(original, sig: str, path: pathlib.Path):
    """Triton's key computed (and written) in a thread, and a function that waits for it. The first
    call's other work runs meanwhile: the driver's and the launcher's C builds, the Gluon import,
    the kernel's compile up to its cache lookup (hashing and reading release the GIL)."""
    box: dict = {}

    def compute():
        try:
            box["key"] = original()
        except Exception:  # noqa: BLE001 - raised again where Triton asks, on its own thread
            return
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_suffix(f".{os.getpid()}.tmp")
            tmp.write_text(json.dumps({"signature": sig, "key": box["key"]}))
            os.replace(tmp, path)  # (atomic: a process reading meanwhile sees the old file or this one)
        except OSError:
            pass  # an unwritable home: the key still serves this process
    worker = threading.Thread(target=compute, name="triton-key", daemon=True)
    worker.start()

    def key() -> str:
        worker.join()
        return box["key"] if "key" in box else original()  # (the thread failed: Triton's own, here)
    return key
