"""Compiled kernels (numba, ``cache=True``), one self-contained module per concern.

numba's on-disk cache goes to a per-user directory, never into the installed package: writing
beside the sources breaks a read-only site-packages, and files left there by one install shadow
the package after a reinstall. The directory is ``$NUMBA_CACHE_DIR`` when set (numba's own
setting), else ``$XDG_CACHE_HOME/ubpe/numba`` (default ``~/.cache/ubpe/numba``). numba fixes a
function's cache location when its decorator runs, so the setting is applied while the kernel
modules are imported here and then restored: other numba code in the process is not affected.
When no such directory can be created, numba's own fallback applies (its user-wide cache).
"""

from __future__ import annotations

import os

import numba


def cache_dir() -> str | None:
    """The directory ubpe's compiled kernels are cached in, or None for numba's own choice."""
    if os.environ.get("NUMBA_CACHE_DIR"):
        return os.environ["NUMBA_CACHE_DIR"]
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    path = os.path.join(base, "ubpe", "numba")
    try:
        os.makedirs(path, exist_ok=True)
    except OSError:
        return None
    return path if os.access(path, os.W_OK) else None


def is_cache_warm() -> bool:
    """Whether the kernels' cache holds index files already (so no compilation is needed)."""
    path = cache_dir()
    if path is None or not os.path.isdir(path):
        return False
    for _root, _dirs, files in os.walk(path):
        if any(name.endswith(".nbi") for name in files):
            return True
    return False


_previous = numba.config.CACHE_DIR
_dir = cache_dir()
if _dir is not None:
    numba.config.CACHE_DIR = _dir
try:
    from . import cm, encode, entropy, predict, residual, segment, train  # noqa: F401  (decorators run here)
finally:
    numba.config.CACHE_DIR = _previous
