"""Processes that share the kernel cache compile each kernel once (ubpe._cache.compile_lock):
one that needs a kernel another is compiling waits, then loads it from the cache."""

import os
import shutil
import subprocess
import sys
import textwrap
import time

import pytest

from ubpe import _cache

pytestmark = pytest.mark.skipif(_cache.fcntl is None, reason="no fcntl (Windows): each process compiles")

KERNEL = "ubpe._kernels.tally.token_counts"

# Holds the kernel's lock, says so, and compiles the kernel only once told to (a file appears).
HOLDER = textwrap.dedent("""
    import os, sys, time
    import numpy as np
    from numba.core.compiler_lock import global_compiler_lock
    from ubpe._cache import compile_lock
    from ubpe._kernels import tally
    with global_compiler_lock, compile_lock(sys.argv[1]):
        print("locked", flush=True)
        while not os.path.exists(sys.argv[2]):
            time.sleep(0.01)
        tally.token_counts(np.zeros(4, np.int32), np.zeros(2, np.int64))
""")

# Needs the kernel: prints how its dispatcher got it (hits, misses).
NEEDER = textwrap.dedent("""
    import numpy as np
    from ubpe._kernels import tally
    print("calling", flush=True)
    tally.token_counts(np.zeros(4, np.int32), np.zeros(2, np.int64))
    print(sum(tally.token_counts.stats.cache_hits.values()), sum(tally.token_counts.stats.cache_misses.values()))
""")


def _child(code: str, *args: str, env: dict) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", code, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=env)


def test_a_kernel_another_process_is_compiling_is_loaded_from_the_cache_not_compiled_again(tmp_path):
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "cache")}  # (a cold cache of their own)
    go = tmp_path / "go"
    holder = _child(HOLDER, KERNEL, str(go), env=env)
    try:
        assert holder.stdout.readline().strip() == "locked"
        needer = _child(NEEDER, env=env)
        assert needer.stdout.readline().strip() == "calling"
        time.sleep(0.5)  # (the needer at the kernel by now: without the lock it would compile it)
        assert needer.poll() is None, "the needer did not wait for the holder's compile"
        go.write_text("")
        out, err = needer.communicate(timeout=300)
        assert needer.returncode == 0, err
        assert out.split() == ["1", "0"]  # one cache hit, no compile of its own
    finally:
        go.write_text("")
        holder.communicate(timeout=300)
    assert holder.returncode == 0


def test_the_lock_is_given_up_after_its_wait_and_the_kernel_compiled_anyway(monkeypatch, tmp_path):
    if _cache.cache_dir() is None:
        pytest.skip("no writable kernel cache here")
    name = f"tests.stuck_{os.getpid()}"
    holder = _child(textwrap.dedent("""
        import sys, time
        from ubpe._cache import compile_lock
        with compile_lock(sys.argv[1]):
            print("locked", flush=True)
            time.sleep(60)
    """), name, env=dict(os.environ))
    try:
        assert holder.stdout.readline().strip() == "locked"
        monkeypatch.setattr(_cache, "COMPILE_LOCK_WAIT", 0.3)
        t0 = time.monotonic()
        with _cache.compile_lock(name):
            waited = time.monotonic() - t0
            assert _cache._HELD[name] == 1
        assert 0.3 <= waited < 30  # (waited its while, then went on without the lock)
        assert name not in _cache._HELD
    finally:
        holder.kill()
        holder.communicate()


def test_a_lock_held_by_this_process_is_taken_again_without_waiting(monkeypatch):
    if _cache.cache_dir() is None:
        pytest.skip("no writable kernel cache here")
    monkeypatch.setattr(_cache, "COMPILE_LOCK_WAIT", 30.0)
    name = f"tests.again_{os.getpid()}"
    t0 = time.monotonic()
    with _cache.compile_lock(name):
        with _cache.compile_lock(name):  # (numba types a recursive kernel while compiling it)
            assert _cache._HELD[name] == 2
        assert _cache._HELD[name] == 1
    assert time.monotonic() - t0 < 5
    assert name not in _cache._HELD


def test_without_a_writable_cache_there_is_no_lock_and_no_file(monkeypatch, tmp_path):
    monkeypatch.setattr(_cache, "cache_dir", lambda: None)
    with _cache.compile_lock("tests.nowhere"):
        assert _cache._HELD["tests.nowhere"] == 1
    assert "tests.nowhere" not in _cache._HELD
    # a cache folder whose lock folder cannot be made (a file in its place): no lock either
    (tmp_path / "locks").write_text("")
    monkeypatch.setattr(_cache, "cache_dir", lambda: str(tmp_path))
    assert _cache._locked_file("tests.nowhere") is None


def test_a_lock_folder_removed_after_its_first_lock_is_made_again(monkeypatch, tmp_path):
    """The folders found writable are remembered (no check a lock), but a lock folder removed
    since is made again rather than the kernel compiled without its lock."""
    monkeypatch.setattr(_cache, "cache_dir", lambda: str(tmp_path))
    for _ in range(2):
        fd = _cache._locked_file("tests.again")
        assert fd is not None and (tmp_path / "locks" / "tests.again.lock").exists()
        os.close(fd)
        assert str(tmp_path / "locks") in _cache._WRITABLE
        shutil.rmtree(tmp_path / "locks")


def test_the_cache_folder_is_checked_once_a_process(monkeypatch, tmp_path):
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path))
    made = []
    real = os.makedirs
    monkeypatch.setattr(_cache.os, "makedirs", lambda p, **k: (made.append(p), real(p, **k)))
    first = _cache.cache_dir()
    assert first is not None and first.startswith(str(tmp_path)) and made == [first]
    assert _cache.cache_dir() == first and made == [first]  # (the second call: no check)
