"""Triton's cache key kept between processes (triton_impl/_triton_key.py): the stored key is
Triton's own, it serves a later process while Triton's files are unchanged, and any change to
them (size, mtime, inode) computes it again. CPU: nothing here compiles."""

import json

import pytest

pytestmark = pytest.mark.cpu_only

cache = pytest.importorskip("triton.runtime.cache")

from triton_impl import _triton_key  # noqa: E402


@pytest.fixture
def fresh(monkeypatch, tmp_path):
    """A new process's state: Triton's function as shipped, no memo installed, HOME in tmp."""
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("TRITON_IMPL_KEY_MEMO", raising=False)
    monkeypatch.setattr(cache, "triton_key", cache.triton_key)  # restored after the test
    monkeypatch.setattr(_triton_key, "_installed", False)
    return tmp_path / ".cache" / "gpu-kernels-reference" / "triton-key.json"


def test_first_process_computes_and_stores_tritons_key(fresh):
    expected = cache.triton_key()
    _triton_key.install()
    assert cache.triton_key() == expected
    stored = json.loads(fresh.read_text())
    assert stored == {"signature": _triton_key.signature(cache), "key": expected}


def test_later_process_reads_the_key_without_hashing(fresh, monkeypatch):
    fresh.parent.mkdir(parents=True)
    fresh.write_text(json.dumps({"signature": _triton_key.signature(cache), "key": "stored-key"}))

    def hashing():
        raise AssertionError("hashed Triton again")
    monkeypatch.setattr(cache, "triton_key", hashing)
    _triton_key.install()
    assert cache.triton_key() == "stored-key"


def test_a_changed_triton_computes_again(fresh, monkeypatch):
    fresh.parent.mkdir(parents=True)
    fresh.write_text(json.dumps({"signature": "another triton", "key": "stale"}))
    monkeypatch.setattr(cache, "triton_key", lambda: "recomputed")
    _triton_key.install()
    assert cache.triton_key() == "recomputed"
    assert json.loads(fresh.read_text())["key"] == "recomputed"


def test_a_missing_key_is_hashed_beside_the_first_call(fresh, monkeypatch):
    """Without a stored key, install() returns at once: the hash runs in a thread, and Triton's
    first use of its key waits for it (a failed thread: Triton's own function, on the caller)."""
    import threading
    release, threads = threading.Event(), []

    def slow():
        threads.append(threading.current_thread())
        assert release.wait(10)
        return "hashed"
    monkeypatch.setattr(cache, "triton_key", slow)
    _triton_key.install()  # (would block here if the hash ran on this thread)
    release.set()
    assert cache.triton_key() == "hashed"
    assert threads and threads[0] is not threading.current_thread()
    assert json.loads(fresh.read_text())["key"] == "hashed"

    def failing():
        if threading.current_thread() is not threading.main_thread():
            raise RuntimeError("no")
        return "own"
    monkeypatch.setattr(_triton_key, "_installed", False)
    monkeypatch.setattr(cache, "triton_key", failing)
    fresh.unlink()
    _triton_key.install()
    assert cache.triton_key() == "own"


def test_opt_out_and_a_broken_file_leave_triton_working(fresh, monkeypatch):
    fresh.parent.mkdir(parents=True)
    fresh.write_text("{not json")
    monkeypatch.setattr(cache, "triton_key", lambda: "computed")
    _triton_key.install()
    assert cache.triton_key() == "computed"
    monkeypatch.setattr(_triton_key, "_installed", False)
    monkeypatch.setenv("TRITON_IMPL_KEY_MEMO", "0")
    original = cache.triton_key = lambda: "own"
    _triton_key.install()
    assert cache.triton_key is original


def test_signature_follows_tritons_files(fresh, monkeypatch, tmp_path):
    """A copy of cache.py's folder layout: touching one hashed file changes the signature."""
    root = tmp_path / "triton"
    (root / "runtime").mkdir(parents=True)
    (root / "compiler").mkdir()
    (root / "_C").mkdir()
    (root / "runtime" / "cache.py").write_text("x")
    (root / "compiler" / "a.py").write_text("y")
    (root / "_C" / "libtriton.so").write_bytes(b"z")

    class Fake:
        __file__ = str(root / "runtime" / "cache.py")
    before = _triton_key.signature(Fake)
    assert _triton_key.signature(Fake) == before
    (root / "compiler" / "a.py").write_text("yy")
    assert _triton_key.signature(Fake) != before
