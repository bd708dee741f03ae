"""Atomic file writes: readers see the old file or the whole new one, never a part."""

from __future__ import annotations

import errno
import os
import re
import stat
import tempfile
import time
from collections.abc import Callable
from typing import Any, BinaryIO


def _umask() -> int:
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o022)  # no portable read-only query elsewhere
    os.umask(mask)
    return mask


def write_atomic(path: str | os.PathLike, data: bytes | bytearray | memoryview | Callable[[BinaryIO], Any], *,
                 overwrite: bool) -> None:
    """Write ``data`` to ``path`` so that readers see either the old file or the whole new one.

    The bytes go to a temporary file in the same directory, which is flushed, fsynced and then
    renamed over ``path``. If ``path`` exists and ``overwrite`` is false, raises
    ``FileExistsError`` and writes nothing (the final step uses a hard link, so a file created
    meanwhile is not clobbered either). On any failure the Python process sees (an exception,
    KeyboardInterrupt included) the temporary file is removed and ``path`` is left as it was.
    A process killed outright (SIGKILL, power loss) cannot remove it: the hidden
    ``.<name>.<random>.tmp`` file stays, and the next write to the same ``path`` removes such
    files of ours (same owner, exactly that pattern) once they are :data:`STALE_TEMP_SECONDS` old,
    so a concurrent writer's fresh temporary is never touched. ``data`` may be a function that
    writes the bytes to the binary file it is given (a stream too large to hold in memory).
    """
    path = os.fspath(path)
    if isinstance(path, bytes):
        path = os.fsdecode(path)
    if os.path.isdir(path):
        raise IsADirectoryError(errno.EISDIR, "is a directory, not a file", path)
    if not overwrite and os.path.lexists(path):
        raise exists_error(path)
    directory = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(directory):
        raise FileNotFoundError(errno.ENOENT, "No such directory", directory)
    _remove_stale_temporaries(directory, os.path.basename(path))
    fd, tmp = tempfile.mkstemp(dir=directory, prefix="." + os.path.basename(path) + ".", suffix=".tmp")
    try:
        try:
            os.fchmod(fd, 0o666 & ~_umask())  # mkstemp makes 0600 files; give the usual mode
        except (AttributeError, OSError):
            pass
        with os.fdopen(fd, "wb") as f:
            fd = -1  # owned by f now
            if callable(data):
                data(f)
            else:
                f.write(data)
            f.flush()
            os.fsync(f.fileno())
        if overwrite:
            os.replace(tmp, path)
        else:
            _rename_no_clobber(tmp, path)
    except BaseException:
        if fd >= 0:
            os.close(fd)
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    _fsync_dir(directory)


#: A temporary of :func:`write_atomic` this old (seconds) was left by a killed process.
STALE_TEMP_SECONDS = 3600


def _remove_stale_temporaries(directory: str, name: str) -> None:
    """Remove ``.<name>.XXXXXXXX.tmp`` files (mkstemp's pattern) that we own and that are stale."""
    pattern = re.compile(r"\." + re.escape(name) + r"\.[A-Za-z0-9_]{8}\.tmp")
    now = time.time()
    try:
        entries = list(os.scandir(directory))
    except OSError:
        return
    for entry in entries:
        if not pattern.fullmatch(entry.name):
            continue
        try:
            st = entry.stat(follow_symlinks=False)
            if (stat.S_ISREG(st.st_mode) and st.st_uid == os.getuid()
                    and now - st.st_mtime >= STALE_TEMP_SECONDS):
                os.unlink(entry.path)
        except OSError:
            pass  # gone meanwhile, or not ours to remove


def exists_error(path: str) -> FileExistsError:
    return FileExistsError(f"{path} already exists; pass --overwrite (overwrite=True) to replace it")


def _rename_no_clobber(tmp: str, path: str) -> None:
    try:
        os.link(tmp, path)  # fails if path appeared since the check
    except FileExistsError:
        raise exists_error(path) from None
    except OSError:  # no hard links on this file system: check, then rename
        if os.path.lexists(path):
            raise exists_error(path) from None
        os.replace(tmp, path)
        return
    os.unlink(tmp)


def _fsync_dir(directory: str) -> None:
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
