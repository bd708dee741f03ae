"""Where the compiled kernels are cached (``ubpe._kernels`` says why keyed so), without importing
numba: the command line asks whether compiling is ahead before anything compiles."""

from __future__ import annotations

import functools
import hashlib
import importlib.metadata
import os
import sys


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
    try:
        os.makedirs(path, exist_ok=True)
    except OSError:
        return None
    return path if os.access(path, os.W_OK) else None


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
