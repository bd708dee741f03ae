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
from typing import Any, BinaryIO

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


def read_for_compress(path: str, *, dtype: Any = None, as_bytes: bool = False, column: str | int | None = None,
                      shown: str | None = None) -> tuple[Any, int, str | None]:
    """How ``ubpe compress`` (and ``ubpe bench``) read the regular file ``path``: its
    :class:`ubpe.io.Signal` (values, rate, source map), the bytes of the file the values stand for
    (the file itself; with ``column``, the one-column CSV ``decompress`` writes back), and a note
    for the user or None. ``shown`` names the file in messages (default ``path``).

    A .csv/.txt file that is not numbers, and a file whose extension names no format when no
    ``dtype`` is given, are read as bytes, with a note: they come back as the same bytes. A CSV
    whose numbers would not be written back byte for byte (other spacing, "+1", "1.50", CRLF...)
    is read as bytes too, unless ``column`` asks for one column.
    """
    import re

    from . import io as uio

    shown = path if shown is None else shown
    kind = uio.format_for(path, "bytes" if as_bytes else ("raw" if dtype is not None else None))
    note = None
    read_bytes = False
    if kind == "raw" and dtype is None:
        read_bytes, note = True, ("not .npy, .wav or .csv/.txt: compressed as bytes (if it holds raw "
                                  "numbers, give their type with --dtype, e.g. '<i2')")
    sig = None
    if not read_bytes:
        try:
            sig = uio.read_signal(path, dtype=dtype, as_bytes=as_bytes, column=column)
        except ValueError as e:
            # a .csv of numbers from its first lines on, then a bad line: a damaged table, said as
            # such; a .txt (or standard input) that is not all numbers is a text
            line = re.search(r"line (\d+)", str(e))
            damaged_table = os.path.splitext(path)[1].lower() == ".csv" and line is not None and int(line.group(1)) > 2
            if kind != "csv" or column is not None or damaged_table:
                raise ValueError(str(e).replace(path, shown)) from e
            read_bytes, note = True, f"not numbers ({str(e).replace(path, shown)}): compressed as bytes"
    if sig is not None and kind == "csv" and column is None:
        with open(path, "rb") as f:
            original = f.read()
        try:
            same = uio.values_bytes(path, sig.values, source=sig.source) == original
        except (ValueError, TypeError):
            same = False
        if not same:
            read_bytes, sig = True, None
            note = "its numbers would not be written back byte for byte: compressed as bytes"
    if read_bytes:
        sig = uio.read_signal(path, as_bytes=True)
    size = os.path.getsize(path)
    if column is not None and kind == "csv":  # the file decompress gives back: that column
        try:
            size = len(uio.values_bytes(path, sig.values, source=sig.source))
        except (ValueError, TypeError):
            pass
    return uio.Signal(sig.values, sig.rate, dict(sig.source or {})), size, note
