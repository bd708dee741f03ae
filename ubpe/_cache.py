"""Where the compiled kernels are cached (``ubpe._kernels`` says why keyed so), without importing
numba: the command line asks whether compiling is ahead before anything compiles; and the
cache's per-kernel locks, so that processes sharing the cache compile each kernel once."""

from __future__ import annotations

import contextlib
import functools
import hashlib
import importlib.metadata
import os
import sys
import time
from collections.abc import Iterator

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: no locks, each process compiles what it lacks
    fcntl = None  # type: ignore[assignment]


@functools.lru_cache(maxsize=1)
def cache_key() -> str:
    """A digest of every kernel module's source (this package's ``*.py``, by name) and of
    ubpe's, numba's and Python's versions: 16 hex digits."""
    from . import __version__

    try:
        numba_version = importlib.metadata.version("numba")
    except importlib.metadata.PackageNotFoundError:  # pragma: no cover - numba is a dependency
        numba_version = "?"
    h = hashlib.blake2b(digest_size=8)
    h.update(f"ubpe {__version__} numba {numba_version} python {sys.version_info[:2]}".encode())
    folder = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_kernels")
    for name in sorted(os.listdir(folder)):
        if name.endswith(".py"):
            h.update(name.encode() + b"\0")
            with open(os.path.join(folder, name), "rb") as f:
                h.update(f.read())
    return h.hexdigest()


def cache_dir() -> str | None:
    """The directory ubpe's compiled kernels are cached in (``<root>/<cache_key()>``, the module
    docstring), or None for numba's own choice."""
    root = os.environ.get("NUMBA_CACHE_DIR")
    if not root:
        base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        root = os.path.join(base, "ubpe", "numba")
    path = os.path.join(root, cache_key())
    return path if _writable_folder(path) else None


#: The folders :func:`_writable_folder` found writable in this process (each kernel's first call
#: asks for the cache's lock folder: 60 folder checks, about 3 ms, in a warm process's first
#: compress, before these were remembered).
_WRITABLE: set[str] = set()


def _writable_folder(path: str) -> bool:
    """Whether the folder ``path`` exists, made if need be, and is writable; a folder found so
    is not checked again in this process (one found otherwise is: it may become writable)."""
    if path in _WRITABLE:
        return True
    try:
        os.makedirs(path, exist_ok=True)
    except OSError:
        return False
    if not os.access(path, os.W_OK):
        return False
    _WRITABLE.add(path)
    return True


def kernels_subdir() -> str:
    """The folder, inside :func:`cache_dir`, in which numba caches this installation's kernels:
    numba names it after the kernels' directory and a SHA-1 of its absolute path (numba's
    ``UserProvidedCacheLocator``), so two installations (two virtual environments, two
    checkouts) of the same sources never share it."""
    folder = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_kernels")
    return "_kernels_" + hashlib.sha1(folder.encode()).hexdigest()


def is_cache_warm() -> bool:
    """Whether this installation's kernels are cached already (index files in its folder of
    the cache, :func:`kernels_subdir`), so that no compilation is ahead. Another
    installation's cache in the same directory does not count: numba would compile afresh."""
    path = cache_dir()
    if path is None:
        return False
    mine = os.path.join(path, kernels_subdir())
    try:
        return any(name.endswith(".nbi") for name in os.listdir(mine))
    except OSError:
        return False


#: How long :func:`compile_lock` waits for another process's compile of a kernel before it
#: compiles the kernel itself (seconds; the largest kernel compiles in about 3 s cold, and a
#: stopped or stuck process must not stop this one: numba's cache writes are atomic, so two
#: processes compiling one kernel each write a whole one).
COMPILE_LOCK_WAIT = 120.0

#: The locks this process holds, by kernel name, and how many times (a kernel typed again
#: while it compiles, as numba does for recursion, takes its own lock again without waiting).
_HELD: dict[str, int] = {}


@contextlib.contextmanager
def compile_lock(name: str) -> Iterator[None]:
    """Hold the cache's lock of the kernel ``name`` (a module-qualified function name) while it
    compiles: another process sharing the cache (test workers, a local Dask cluster's worker
    processes, command lines run side by side) that needs the kernel meanwhile waits, then
    loads it from the cache instead of compiling it too. A lock file a kernel in
    ``<cache_dir()>/locks`` (``flock``: the system releases it when its process ends); none
    where there is no cache directory or no ``fcntl`` (Windows), and none after
    :data:`COMPILE_LOCK_WAIT` seconds of waiting. Callers hold numba's compiler lock, so one
    thread of a process compiles at a time (as numba itself ensures) and :data:`_HELD` needs no
    lock of its own. Processes never deadlock: a kernel's compile waits only on the kernels it
    calls, and calls never cycle."""
    if name in _HELD:
        _HELD[name] += 1
        try:
            yield
        finally:
            _HELD[name] -= 1
        return
    fd = _locked_file(name)
    _HELD[name] = 1
    try:
        yield
    finally:
        del _HELD[name]
        if fd is not None:
            fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(fd)


def _locked_file(name: str) -> int | None:
    """The lock file of kernel ``name``, opened and locked (its descriptor), or None (no lock:
    :func:`compile_lock`)."""
    path = cache_dir() if fcntl is not None else None
    if path is None:
        return None
    folder = os.path.join(path, "locks")
    fd = None
    for _ in range(2):  # (a second time when the folder was removed since it was found writable)
        if not _writable_folder(folder):
            return None
        try:
            fd = os.open(os.path.join(folder, name + ".lock"), os.O_RDWR | os.O_CREAT, 0o644)
            break
        except OSError:
            _WRITABLE.discard(folder)
    if fd is None:
        return None
    deadline = time.monotonic() + COMPILE_LOCK_WAIT
    pause = 0.002
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return fd
        except BlockingIOError:
            if time.monotonic() >= deadline:
                os.close(fd)
                return None
            time.sleep(pause)
            pause = min(2 * pause, 0.05)
        except OSError:  # a file system without locks
            os.close(fd)
            return None
