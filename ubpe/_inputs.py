"""How the command line reads its inputs: each one once, from the start to the end, so that
standard input, pipes, FIFOs and devices (``/dev/stdin``) work as regular files do.

- A regular file is read where it is (and memory-mapped when that is asked for).
- Anything else (``-``, a FIFO, a character device, ``/dev/stdin``) is a *stream*: it can be
  read once only. ``ubpe compress`` copies it, in pieces of :data:`PIECE` bytes, to a temporary
  file of the same name (:func:`spooled`), and reads that as it would read the file: memory
  stays bounded whatever its size, and the format is told by the name (by the first bytes for
  standard input). ``ubpe decompress`` and ``ubpe test`` read a container stream through
  :class:`Rewindable`, which keeps only what the container's head needs to be read again: a
  blocked container is decoded block by block as it arrives (:func:`ubpe.decompress_to`).
- No output name is ever derived from a device (``/dev/...``, ``/proc/...``, a character
  device) or from standard input: :func:`names_output` says whether one may be.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
import sys
import tempfile
from collections.abc import Iterator
from typing import BinaryIO

STDIO = "-"
#: Bytes copied at a time from a stream.
PIECE = 1 << 20


def is_stream(path: str) -> bool:
    """Whether ``path`` can be read only once: ``-``, or not a regular file (a FIFO, a device)."""
    if path == STDIO:
        return True
    try:
        return not stat.S_ISREG(os.stat(path).st_mode)
    except OSError:
        return False  # a missing file: reading it reports the error


def names_output(path: str) -> bool:
    """Whether an output name may be derived from the input ``path``: not standard input, not a
    character device and nothing under ``/dev`` or ``/proc`` (``/dev/stdin`` would give
    ``/dev/stdin.ubpe``, or a name beside it in ``/dev``)."""
    if path == STDIO:
        return False
    full = os.path.abspath(path)
    if full.startswith(("/dev/", "/proc/")):
        return False
    try:
        return not stat.S_ISCHR(os.stat(path).st_mode)
    except OSError:
        return True


def open_input(path: str) -> BinaryIO:
    """The binary stream of ``path`` (``-``: standard input, left open when closed)."""
    if path == STDIO:
        return open(sys.stdin.buffer.fileno(), "rb", closefd=False)
    return open(path, "rb")


def sniff_suffix(head: bytes) -> str:
    """The extension standard input is read as, from its first bytes (``.txt``: numbers if it
    parses as such, else bytes)."""
    if head.startswith(b"\x93NUMPY"):
        return ".npy"
    if head[:4] == b"RIFF" and head[8:12] == b"WAVE":
        return ".wav"
    return ".txt"


@contextlib.contextmanager
def spooled(path: str, *, sniff: bool = True) -> Iterator[str]:
    """``path`` itself when it is a regular file; else the path of a temporary copy of the
    stream, read once in pieces, named as ``path`` is (standard input: ``stdin`` with the
    extension :func:`sniff_suffix` gives, unless ``sniff`` is false), removed afterwards."""
    if not is_stream(path):
        yield path
        return
    with tempfile.TemporaryDirectory(prefix="ubpe-input-") as tmp, open_input(path) as src:
        head = src.read(16)
        if path == STDIO:
            name = "stdin" + (sniff_suffix(head) if sniff else "")
        else:
            name = os.path.basename(os.path.realpath(path)) or "input"
        copy = os.path.join(tmp, name)
        with open(copy, "wb") as f:
            f.write(head)
            shutil.copyfileobj(src, f, PIECE)
        yield copy


class Rewindable:
    """A stream read once that can go back to its start while it keeps what it reads (the
    default: the head of a container, or a whole one-stream container, which is read whole
    anyway); :meth:`forget` keeps nothing more from then on, so memory stays bounded."""

    def __init__(self, raw: BinaryIO) -> None:
        self._raw = raw
        self._kept = bytearray()  # the stream's bytes from position self._base on
        self._base = 0
        self._pos = 0  # position in the stream
        self._keeping = True

    def read(self, n: int | None = -1) -> bytes:
        whole = n is None or n < 0
        out = b""
        end = self._base + len(self._kept)
        if self._pos < end:  # replay what was kept
            stop = end if whole else min(end, self._pos + n)
            out = bytes(self._kept[self._pos - self._base:stop - self._base])
            self._pos = stop
            if not whole:
                n -= len(out)
                if n == 0:
                    return out
            if not self._keeping and self._pos == end:
                self._base, self._kept = end, bytearray()
        more = self._raw.read() if whole else self._raw.read(n)
        if self._keeping:
            self._kept += more
        else:
            self._base += len(more)
        self._pos += len(more)
        return out + more

    def tell(self) -> int:
        return self._pos

    def seek(self, pos: int, whence: int = 0) -> int:
        if whence != 0 or not self._base <= pos <= self._base + len(self._kept):
            raise OSError("a stream goes back only to what it kept")
        self._pos = pos
        return pos

    def forget(self) -> None:
        """Keep nothing more: what was kept and read again is dropped, and what is read from
        now on is not kept (the stream cannot go back before the current position)."""
        self._keeping = False
        del self._kept[:self._pos - self._base]
        self._base = self._pos

    def readable(self) -> bool:
        return True
