"""Where the command line reads and writes: files, standard streams and special files.

- ``-`` as an input is standard input; as an output, standard output.
- An output that is a character device (``/dev/null``) or a FIFO is written in place, never
  replaced: it needs no ``--overwrite``, and it stays what it was.
- Any other output is a regular file, written atomically (:func:`ubpe.io.write_atomic`); an
  existing one is replaced only with ``overwrite``.
- :func:`check_output` is called before any work: the output's directory must exist and be
  writable, so a long compression is not lost at the end; every error names the user's path.
"""

from __future__ import annotations

import errno
import os
import stat
import sys
from typing import Any

from . import io as uio

STDIO = "-"
#: The suffix ``ubpe compress`` appends to an input's name (``x.wav`` -> ``x.wav.ubpe``).
SUFFIX = ".ubpe"


def is_special(path: str) -> bool:
    """Whether ``path`` is an existing character device or FIFO (written in place)."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return False
    return stat.S_ISCHR(mode) or stat.S_ISFIFO(mode)


def check_output(path: str, *, overwrite: bool, inputs: tuple[str | None, ...] = ()) -> None:
    """Refuse early what :func:`write_output` would refuse late.

    Raises ``FileExistsError`` (an existing regular file without ``overwrite``, or one of the
    inputs), ``FileNotFoundError`` (no such directory), ``PermissionError`` (a directory we
    cannot write in), ``IsADirectoryError``.
    """
    if path == STDIO or is_special(path):
        return
    if os.path.isdir(path):
        raise IsADirectoryError(errno.EISDIR, "is a directory, not a file", path)
    parent = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(parent):
        raise FileNotFoundError(errno.ENOENT, "No such directory", os.path.dirname(path) or parent)
    if not os.access(parent, os.W_OK | os.X_OK):
        raise PermissionError(errno.EACCES, "cannot write in this directory", os.path.dirname(path) or parent)
    if os.path.lexists(path):
        for other in inputs:
            if other and other != STDIO and os.path.exists(other) and os.path.exists(path) and os.path.samefile(other, path):
                raise FileExistsError(
                    f"output {path} is the input file {other}: ubpe never writes over its inputs, "
                    "choose another output path"
                )
        if not overwrite:
            raise FileExistsError(f"{path} already exists; pass --overwrite to replace it")


def write_output(path: str, data: Any, *, overwrite: bool) -> None:
    """Write ``data`` (bytes, or a function writing them to the binary file it is given) to
    ``path``: standard output, a special file in place, or a regular file atomically (replacing
    an existing one only with ``overwrite``)."""
    if path == STDIO:
        out = sys.stdout.buffer
        data(out) if callable(data) else out.write(data)
        out.flush()
        return
    if is_special(path):
        if callable(data):
            with open(path, "wb") as f:  # buffered: its write() writes everything
                data(f)
            return
        with open(path, "wb", buffering=0) as f:  # a device or FIFO: no truncation, no rename
            view = memoryview(data)
            while view:
                view = view[f.write(view):]
        return
    uio.write_atomic(path, data, overwrite=overwrite)


def read_input(path: str) -> bytes:
    """All bytes of ``path`` (``-``: standard input)."""
    if path == STDIO:
        return sys.stdin.buffer.read()
    with open(path, "rb") as f:
        return f.read()


def input_size(path: str, fallback: int) -> int:
    """The size in bytes of the input file (``fallback`` for standard input or a special file)."""
    if path == STDIO:
        return fallback
    try:
        st = os.stat(path)
    except OSError:
        return fallback
    return st.st_size if stat.S_ISREG(st.st_mode) else fallback


def compressed_name(path: str) -> str:
    """Default output of ``ubpe compress PATH``: ``PATH.ubpe``."""
    return path + SUFFIX


def decompressed_name(path: str, stored_name: str | None) -> str:
    """Default output of ``ubpe decompress PATH``: ``PATH`` without ``.ubpe``; otherwise the
    name recorded in the container, beside ``PATH``. Raises ``ValueError`` when there is none."""
    if path.endswith(SUFFIX) and len(os.path.basename(path)) > len(SUFFIX):
        return path[: -len(SUFFIX)]
    if stored_name:
        return os.path.join(os.path.dirname(path), stored_name)
    raise ValueError(f"{path}: the name does not end in {SUFFIX} and the container records no file name: "
                     "give the output with -o OUTPUT")


def check_stored_name(name: object) -> str | None:
    """The file name a container records, if it is a plain file name (no directory part, not
    ``.``/``..``, printable); ``None`` otherwise (an untrusted field is never used as a path)."""
    if not isinstance(name, str) or not name or len(name) > 255:
        return None
    if name in (".", "..") or "/" in name or "\\" in name or "\x00" in name or not name.isprintable():
        return None
    return name
