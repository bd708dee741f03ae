"""File input and output: atomic writes, arrays from and to files, the bundled demo signal.

Formats, chosen by the file's extension unless ``fmt`` says otherwise:

========  ==================================================================================
``npy``   ``.npy`` (numpy's format, read with ``allow_pickle=False``); any shape, integer,
          bool or float dtype
``wav``   ``.wav``, read and written here (RIFF/WAVE): PCM 8 (``uint8``), 16 (``int16``), 24
          and 32 bit (``int32``; 24-bit values right-justified), float 32/64, plain or
          ``WAVE_FORMAT_EXTENSIBLE``; mono 1-D, else ``(frames, channels)``
``csv``   ``.csv`` and ``.txt``: a table, one row per line, separated by ``,`` ``;`` tab or
          spaces, with an optional header line; ``#`` starts a comment; ``int64`` or
          ``float64``; several columns are ``(frames, columns)``, ``column=`` picks one
``raw``   any other file, with an explicit ``dtype`` such as ``'<i2'``: the bare array bytes
``bytes`` any file as ``uint8`` values (``as_bytes=True``)
``edf``   ``.edf``, ``.bdf`` (and ``.rec``): EDF, EDF+ and BDF recordings, their digital samples
          (``int16``; BDF ``int32``), written back byte for byte (:mod:`ubpe.edf`)
========  ==================================================================================

:func:`read_signal` also returns a ``source`` map describing the file, which
``container.compress(..., source=...)`` stores and :func:`write_values` uses to write the
same file back (a WAV byte for byte). Problems with a file raise ``ValueError`` or
``TypeError`` naming the file; a missing file raises ``FileNotFoundError``; a damaged source
map raises ``CorruptDataError``.
"""

from __future__ import annotations

import errno
import io
import os
import re
import stat
import struct
import tempfile
import time
import warnings
from dataclasses import dataclass
from importlib import resources
from typing import Any, BinaryIO, Callable

import numpy as np

from ._validate import QUANTIZE_HINT, expect_map, field_bytes, field_int, field_str, short
from .errors import CorruptDataError

__all__ = [
    "DEFAULT_WAV_RATE",
    "FORMATS",
    "Signal",
    "cast_values",
    "check_source",
    "demo_signal",
    "format_for",
    "read_signal",
    "read_values",
    "write_atomic",
    "write_values",
]

#: Sample rate (Hz) written to a ``.wav`` file when none is given: containers keep samples, not rates.
DEFAULT_WAV_RATE = 44100

#: Formats :func:`read_values` and :func:`write_values` know, and the extensions that select them.
FORMATS = ("npy", "wav", "csv", "raw", "bytes", "edf")
_EXTENSIONS = {".npy": "npy", ".wav": "wav", ".wave": "wav", ".csv": "csv", ".txt": "csv",
               ".edf": "edf", ".bdf": "edf", ".rec": "edf"}


DEMO_RATE = 360  # Hz, MIT-BIH
_DEMO_FILE = "mitbih_208_excerpt.npy"


# ============================================================== atomic writes


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
        raise _exists(path)
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


def _exists(path: str) -> FileExistsError:
    return FileExistsError(f"{path} already exists; pass --overwrite (overwrite=True) to replace it")


def _rename_no_clobber(tmp: str, path: str) -> None:
    try:
        os.link(tmp, path)  # fails if path appeared since the check
    except FileExistsError:
        raise _exists(path) from None
    except OSError:  # no hard links on this file system: check, then rename
        if os.path.lexists(path):
            raise _exists(path) from None
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


# ============================================================== formats


def format_for(path: str | os.PathLike, fmt: str | None = None) -> str:
    """The format of ``path``: ``fmt`` if given, else from the extension (``"raw"`` if unknown)."""
    if fmt is not None:
        if fmt == "txt":
            return "csv"
        if fmt not in FORMATS:
            raise ValueError(f"unknown format {fmt!r}: use one of {', '.join(FORMATS)}")
        return fmt
    ext = os.path.splitext(os.fspath(path))[1].lower()
    return _EXTENSIONS.get(ext, "raw")


def _integer_dtype(dtype: Any, what: str) -> np.dtype:
    try:
        dt = np.dtype(dtype)
    except TypeError as e:
        raise TypeError(f"{what}: {dtype!r} is not a numpy dtype ({e})") from None
    if dt.kind in "fc":
        raise TypeError(f"{what}: dtype {dt} is floating-point; {QUANTIZE_HINT}")
    if dt.kind not in "iu":
        raise TypeError(f"{what}: dtype {dt} is not an integer dtype (use e.g. '<i2', 'u1', '<i4')")
    return dt


def _check_values(arr: np.ndarray, path: str, fmt: str) -> np.ndarray:
    if arr.dtype.kind == "c":
        raise TypeError(f"{path}: the {fmt} data is {arr.dtype} (complex); {QUANTIZE_HINT}")
    if arr.dtype.kind not in "iubf":
        raise TypeError(f"{path}: the {fmt} data has dtype {arr.dtype}; ubpe reads integer and float arrays only")
    if arr.ndim == 0:
        raise ValueError(f"{path}: the {fmt} file holds a single scalar, not a sequence")
    return arr


@dataclass(frozen=True)
class Signal:
    """Values read from a file, the sample rate when it has one, and how to write it back.

    ``source`` describes the file (``{"format": "wav", "rate": ..., "channels": ..., ...}``,
    ``{"format": "csv", "delimiter": ..., "header": ..., "column": ...}``, ``{"format": "npy"}``):
    pass it to ``container.compress(..., source=...)``, and give what
    ``container.describe(data).source`` returns to :func:`write_values` to write the same kind
    of file (a WAV byte for byte, header and other chunks included).
    """

    values: np.ndarray
    rate: int | None = None
    source: dict[str, Any] | None = None


def read_signal(
    path: str | os.PathLike,
    *,
    fmt: str | None = None,
    dtype: Any = None,
    as_bytes: bool = False,
    column: int | str | None = None,
) -> Signal:
    """Like :func:`read_values`, but returns a :class:`Signal`: values, rate and ``source`` map.

    ``column`` (CSV only) selects one column by header name or 0-based index.
    """
    name = os.fspath(path)
    if as_bytes:
        if dtype is not None:
            raise ValueError("pass either dtype (raw binary) or as_bytes, not both")
        fmt = "bytes"
    kind = format_for(name, fmt)
    if dtype is not None and kind not in ("raw",):
        raise ValueError(
            f"{name}: a dtype applies to raw binary files only, but this file is read as {kind} "
            "(from its extension); pass fmt='raw' to read its bytes as raw values"
        )
    if column is not None and kind != "csv":
        raise ValueError(f"{name}: a column applies to CSV files only, but this file is read as {kind}")
    if kind == "bytes":
        with open(name, "rb") as f:
            return Signal(np.frombuffer(f.read(), dtype=np.uint8).copy(), None, {"format": "bytes"})
    if kind == "raw":
        if dtype is None:
            raise ValueError(
                f"{name}: cannot tell the format from the extension (.npy, .wav, .csv and .txt "
                "are known): give the dtype of its raw values (--dtype, e.g. '<i2') or read it "
                "as bytes (--bytes)"
            )
        dt = _integer_dtype(dtype, name)
        with open(name, "rb") as f:
            raw = f.read()
        if len(raw) % dt.itemsize:
            raise ValueError(
                f"{name}: {len(raw)} bytes is not a multiple of the {dt.itemsize}-byte item size "
                f"of dtype {dt.str}"
            )
        return Signal(np.frombuffer(raw, dtype=dt).copy(), None, {"format": "raw"})
    if kind == "npy":
        arr = _read_npy(name)
        return Signal(arr, None, _npy_source(name, arr))
    if kind == "wav":
        return _read_wav(name)
    if kind == "edf":
        from . import edf

        with open(name, "rb") as fh:
            values, rate, source = edf.read(name, fh.read())
        return Signal(values, int(rate) if rate is not None and rate == int(rate) else None, source)
    return _read_csv(name, column)


def read_values(
    path: str | os.PathLike,
    *,
    fmt: str | None = None,
    dtype: Any = None,
    as_bytes: bool = False,
    column: int | str | None = None,
) -> np.ndarray:
    """Integer values stored in ``path``.

    Parameters
    ----------
    path : path-like
    fmt : {"npy", "wav", "csv", "raw", "bytes"} or None
        Overrides the extension (``.npy``, ``.wav``, ``.csv``/``.txt``; anything else is raw).
    dtype : numpy dtype or None
        The item type of a raw binary file, e.g. ``'<i2'``; required for raw files. The file
        length must be a multiple of its size.
    as_bytes : bool
        Read any file as its bytes (``uint8``), whatever its extension.
    column : str or int, optional
        CSV only: the column to read, by header name or 0-based index. Without it every
        column is read, as a 2-D ``(frames, columns)`` array (1-D when there is one column, or
        one line of values and no header).

    Raises ``FileNotFoundError`` for a missing file, ``TypeError`` for data that is not
    numbers (objects, complex), ``ValueError`` for anything else wrong with the file; every
    message names the file (and, for CSV, the line and column).
    """
    return read_signal(path, fmt=fmt, dtype=dtype, as_bytes=as_bytes, column=column).values


def _read_npy(name: str) -> np.ndarray:
    with open(name, "rb") as f:  # FileNotFoundError as such
        raw = f.read()
    if raw[:4] == b"PK\x03\x04":
        raise ValueError(f"{name}: is an .npz archive, not a single .npy array")
    if raw[:6] != b"\x93NUMPY":
        raise ValueError(f"{name}: not a readable .npy file (no NUMPY magic at its start)")
    try:
        arr = np.load(io.BytesIO(raw), allow_pickle=False)
    except ValueError as e:
        if "allow_pickle" in str(e):
            raise TypeError(f"{name}: the .npy file holds Python objects; ubpe reads integer arrays only") from None
        raise ValueError(f"{name}: not a readable .npy file ({e})") from None
    except Exception as e:  # numpy raises several types for damaged headers
        raise ValueError(f"{name}: not a readable .npy file ({e})") from None
    return _check_values(arr, name, ".npy")


#: Longest .npy header kept in a source map to write the file back byte for byte.
MAX_NPY_HEADER = 1024


def _npy_bytes(values: np.ndarray, source: dict | None) -> bytes:
    """An .npy file of ``values``: numpy's own, or laid out as the file read (``source``)."""
    order = "F" if source and source.get("order") == "F" and values.ndim > 1 else "C"
    if source and "header" in source:
        header = source["header"]
        shape, fortran, dtype = _npy_header_fields(header)
        if shape == values.shape and dtype == values.dtype and fortran == (order == "F"):
            return header + values.tobytes(order=order)
    buf = io.BytesIO()
    np.save(buf, np.asfortranarray(values) if order == "F" else values, allow_pickle=False)
    return buf.getvalue()


def _npy_header_fields(header: bytes) -> tuple[tuple[int, ...], bool, np.dtype]:
    buf = io.BytesIO(header)
    try:
        version = np.lib.format.read_magic(buf)
        read = {(1, 0): np.lib.format.read_array_header_1_0, (2, 0): np.lib.format.read_array_header_2_0}
        if version not in read:
            raise ValueError(f"version {version} is not kept")
        shape, fortran, dtype = read[version](buf, max_header_size=MAX_NPY_HEADER)
    except Exception as e:  # numpy raises several types for damaged headers
        raise CorruptDataError(f"source (npy metadata): the stored header does not parse ({e})") from None
    if buf.tell() != len(header):
        raise CorruptDataError("source (npy metadata): the stored header has trailing bytes")
    return tuple(shape), bool(fortran), np.dtype(dtype)


def map_signal(path: str | os.PathLike, *, dtype: Any = None) -> Signal | None:
    """The values of an .npy file, or of a raw file of ``dtype``, memory-mapped (read from disk
    as they are used), with the source map :func:`read_signal` gives; None when the file cannot
    be mapped so (another format, floats, a 0-d array, a damaged or unusual .npy: read it with
    :func:`read_signal`)."""
    name = os.fspath(path)
    kind = format_for(name, "raw" if dtype is not None else None)
    try:
        if kind == "raw" and dtype is not None:
            dt = _integer_dtype(dtype, name)
            size = os.path.getsize(name)
            if size == 0 or size % dt.itemsize:
                return None
            return Signal(np.memmap(name, dtype=dt, mode="r"), None, {"format": "raw"})
        if kind != "npy":
            return None
        arr = np.load(name, mmap_mode="r", allow_pickle=False)
    except Exception:  # read_signal reports the problem in its own words
        return None
    if (not isinstance(arr, np.memmap) or arr.dtype.kind not in "iub" or arr.ndim == 0
            or os.path.getsize(name) != arr.offset + arr.nbytes):
        return None
    source: dict[str, Any] = {"format": "npy"}
    if arr.ndim > 1 and arr.flags.f_contiguous and not arr.flags.c_contiguous:
        source["order"] = "F"
    with open(name, "rb") as f:
        header = f.read(arr.offset)
    buf = io.BytesIO()
    fields = np.lib.format.header_data_from_array_1_0(arr)
    try:  # np.save's header: version 1.0 when it fits, else 2.0
        np.lib.format.write_array_header_1_0(buf, fields)
    except ValueError:
        buf = io.BytesIO()
        np.lib.format.write_array_header_2_0(buf, fields)
    if buf.getvalue() != header:  # as _npy_source: another writer's header is kept when it parses
        try:
            if len(header) <= MAX_NPY_HEADER and _npy_header_fields(header) == (
                    arr.shape, source.get("order") == "F", arr.dtype):
                source["header"] = header
        except CorruptDataError:
            pass
    return Signal(arr, None, source)


def _npy_source(name: str, arr: np.ndarray) -> dict[str, Any]:
    """{"format": "npy"}, plus "order": "F" for a Fortran-ordered file, plus the file's own header
    bytes when numpy would write another one (another writer's padding or version), so that the
    file comes back byte for byte."""
    source: dict[str, Any] = {"format": "npy"}
    if arr.ndim > 1 and arr.flags.f_contiguous and not arr.flags.c_contiguous:
        source["order"] = "F"
    with open(name, "rb") as f:
        raw = f.read()
    mine = _npy_bytes(arr, source)
    if mine != raw:
        header = raw[: len(raw) - arr.nbytes] if arr.nbytes <= len(raw) else b""
        if 0 < len(header) <= MAX_NPY_HEADER and raw[len(header):] == arr.tobytes(order=source.get("order", "C")):
            try:
                if _npy_header_fields(header) == (arr.shape, source.get("order") == "F", arr.dtype):
                    source["header"] = header
            except CorruptDataError:
                pass  # a header we cannot check is not kept: the file comes back in numpy's layout
    return source


def _check_npy_source(source: dict) -> dict:
    where = "source (npy metadata)"
    expect_map(source, where, ("format",), ("order", "header"))
    if "order" in source:
        field_str(source, "order", where=where, choices=("C", "F"))
    if "header" in source:
        field_bytes(source, "header", where=where, max_size=MAX_NPY_HEADER)
        _npy_header_fields(source["header"])
    return source


# ============================================================== WAV (RIFF/WAVE, read and written here)

#: Channels a ``.wav`` file may declare (WAVE_FORMAT_WAVE_EXTENSIBLE's channel mask names 18; beyond
#: a few hundred a header is more likely damaged than real).
MAX_WAV_CHANNELS = 1024
#: Bytes of the non-``data`` chunks (``fmt `` included) kept in a container's source map, in
#: pieces of the container's per-value limit; larger sets are dropped with a warning.
MAX_WAV_CHUNK_BYTES = 16 * 1024
_PIECE = 1024  # container.SOURCE_MAX_VALUE

_WAVE_PCM, _WAVE_FLOAT, _WAVE_EXTENSIBLE = 1, 3, 0xFFFE
#: The 14 bytes after the format code in the subformat GUID of WAVE_FORMAT_WAVE_EXTENSIBLE.
_GUID_TAIL = b"\x00\x00\x00\x00\x10\x00\x80\x00\x00\xaa\x00\x38\x9b\x71"
_TAG_NAMES = {2: "Microsoft ADPCM", 6: "A-law", 7: "mu-law", 0x11: "IMA ADPCM", 0x31: "GSM 6.10",
              0x50: "MPEG", 0x55: "MPEG layer 3", 0x161: "WMA"}
#: Sample dtype by (float?, bytes per sample); 3-byte samples are read into int32.
_WAV_SAMPLE = {(False, 1): np.dtype(np.uint8), (False, 2): np.dtype("<i2"), (False, 3): np.dtype("<i4"),
               (False, 4): np.dtype("<i4"), (True, 4): np.dtype("<f4"), (True, 8): np.dtype("<f8")}


@dataclass(frozen=True)
class _WavFormat:
    """The fields of a ``fmt `` chunk that decide the sample layout."""

    tag: int  # 1 PCM, 3 float, 0xFFFE extensible
    channels: int
    rate: int
    byte_rate: int
    block_align: int
    bits: int  # bits per sample of the container (8, 16, 24, 32; float 32, 64)
    valid_bits: int  # extensible's wValidBitsPerSample, else bits
    is_float: bool

    @property
    def width(self) -> int:
        return self.bits // 8


def _riff_chunks(blob: bytes, start: int, end: int, fail: Any, *, last_pad_optional: bool = False
                 ) -> list[tuple[bytes, int, int, int]]:
    """The chunks of ``blob[start:end]``: (id, body start, body end, chunk end incl. pad byte)."""
    chunks = []
    pos = start
    while pos < end:
        if end - pos < 8:
            fail(f"{end - pos} stray bytes at offset {pos} where a chunk header (8 bytes) should be")
        cid = blob[pos:pos + 4]
        size = int.from_bytes(blob[pos + 4:pos + 8], "little")
        body = pos + 8
        if size > end - body:
            fail(f"chunk {cid!r} at offset {pos} declares {size} bytes but only {end - body} remain "
                 "(truncated)")
        stop = body + size + (size & 1)
        if stop > end:
            if not (last_pad_optional and cid == b"data"):
                fail(f"chunk {cid!r} at offset {pos} has an odd size and no pad byte (truncated)")
            stop = end
        chunks.append((cid, body, body + size, stop))
        pos = stop
    return chunks


def _wav_format(body: bytes, fail: Any, float_error: Any) -> _WavFormat:
    """Parse a ``fmt `` chunk body; ``fail(msg)`` for damaged or unsupported ones."""
    if len(body) < 16:
        fail(f"the fmt chunk has {len(body)} bytes, at least 16 are needed")
    tag, channels, rate, byte_rate, block_align, bits = struct.unpack_from("<HHIIHH", body)
    code, valid = tag, bits
    if tag == _WAVE_EXTENSIBLE:
        if len(body) < 40:
            fail(f"the fmt chunk of WAVE_FORMAT_WAVE_EXTENSIBLE has {len(body)} bytes, 40 are needed")
        cb_size, valid = struct.unpack_from("<HH", body, 16)
        if cb_size < 22:
            fail(f"the fmt chunk's cbSize is {cb_size}, WAVE_FORMAT_WAVE_EXTENSIBLE needs 22")
        code = int.from_bytes(body[24:26], "little")
        if body[26:40] != _GUID_TAIL:
            fail(f"WAVE_FORMAT_WAVE_EXTENSIBLE subformat GUID {body[24:40].hex()} is not a standard one")
        if not 0 < valid <= bits:
            fail(f"valid bits per sample {valid} is not in [1, bits_per_sample = {bits}]")
    if code not in (_WAVE_PCM, _WAVE_FLOAT):
        what = _TAG_NAMES.get(code, "unknown")
        fail(f"format tag {code} ({what}) is not supported: ubpe reads integer PCM "
             "(8, 16, 24, 32 bit) and float WAV")
    is_float = code == _WAVE_FLOAT
    if is_float:
        float_error()
        if bits not in (32, 64):
            fail(f"bits_per_sample {bits} is not supported for float WAV (32 or 64)")
    elif bits not in (8, 16, 24, 32):
        fail(f"bits_per_sample {bits} is not supported (8, 16, 24 or 32)")
    if not 1 <= channels <= MAX_WAV_CHANNELS:
        fail(f"channels is {channels}, not in [1, {MAX_WAV_CHANNELS}]")
    if rate < 1:
        fail("sample rate is 0")
    if block_align != channels * bits // 8:
        fail(f"block_align is {block_align}, but {channels} channels of {bits} bits need "
             f"{channels * bits // 8}")
    return _WavFormat(tag, channels, rate, byte_rate, block_align, bits, valid, is_float)


def _wav_samples(payload: bytes, f: _WavFormat) -> np.ndarray:
    """The samples of a ``data`` chunk payload: mono 1-D, else (frames, channels)."""
    n = len(payload) // f.width
    if f.width == 3:
        padded = np.zeros((n, 4), dtype=np.uint8)
        padded[:, 1:] = np.frombuffer(payload, dtype=np.uint8).reshape(n, 3)
        values = padded.view("<i4").reshape(n) >> 8  # arithmetic shift: sign-extended, right-justified
    else:
        values = np.frombuffer(payload, dtype=_WAV_SAMPLE[f.is_float, f.width]).copy()
    values = values.astype(values.dtype.newbyteorder("="))
    return values if f.channels == 1 else values.reshape(-1, f.channels)


def _read_wav(name: str, raw: bytes | None = None) -> Signal:
    if raw is None:
        with open(name, "rb") as fh:  # FileNotFoundError as such
            raw = fh.read()

    def fail(message: str) -> None:
        raise ValueError(f"{name}: not a readable WAV file: {message}")

    if raw[:4] in (b"RF64", b"BW64"):
        fail(f"{raw[:4].decode()} (64-bit RIFF) is not supported; convert it to a RIFF WAV under 4 GiB")
    if raw[:4] == b"RIFX":
        fail("big-endian RIFX is not supported")
    if len(raw) < 12 or raw[:4] != b"RIFF" or raw[8:12] != b"WAVE":
        fail("no RIFF/WAVE header")
    riff_end = 8 + int.from_bytes(raw[4:8], "little")
    if riff_end > len(raw):
        fail(f"the RIFF header declares {riff_end} bytes but the file has {len(raw)} (truncated)")
    if riff_end < len(raw):
        warnings.warn(f"{name}: {len(raw) - riff_end} bytes after the end of the RIFF chunk are not "
                      "part of the WAV and are ignored", stacklevel=3)
    chunks = _riff_chunks(raw, 12, riff_end, fail, last_pad_optional=True)
    fmts = [c for c in chunks if c[0] == b"fmt "]
    datas = [c for c in chunks if c[0] == b"data"]
    if len(fmts) != 1 or len(datas) != 1:
        fail(f"{len(fmts)} fmt chunks and {len(datas)} data chunks (one of each is needed)")

    def float_error() -> None:
        pass  # float samples are read; compress needs step/bits unless they lie on a grid

    f = _wav_format(raw[fmts[0][1]:fmts[0][2]], fail, float_error)
    _, dstart, dend, dstop = datas[0]
    if (dend - dstart) % f.block_align:
        fail(f"the data chunk has {dend - dstart} bytes, not a multiple of block_align {f.block_align}")
    values = _wav_samples(raw[dstart:dend], f)
    data_index = chunks.index(datas[0])
    pre = b"".join(raw[c[1] - 8:c[3]] for c in chunks[:data_index])
    post = b"".join(raw[c[1] - 8:c[3]] for c in chunks[data_index + 1:])
    pad = -1 if dstop == dend else raw[dend]
    if len(pre) + len(post) > MAX_WAV_CHUNK_BYTES:
        names = [c[0].decode("latin-1") for c in chunks if c[0] not in (b"fmt ", b"data")]
        warnings.warn(f"{name}: its chunks other than data take {len(pre) + len(post)} bytes, more than "
                      f"the {MAX_WAV_CHUNK_BYTES} a container keeps: {', '.join(names)} will not be "
                      "written back (the fmt chunk is)", stacklevel=3)
        pre, post = raw[fmts[0][1] - 8:fmts[0][3]], b""
    blob = pre + post
    source: dict[str, Any] = {
        "format": "wav", "rate": f.rate, "channels": f.channels, "width": f.width, "bits": f.bits,
        "valid_bits": f.valid_bits, "float": f.is_float, "extensible": f.tag == _WAVE_EXTENSIBLE,
        "data_at": len(pre), "data_pad": pad,
    }
    for i in range(0, len(blob), _PIECE):
        source[_piece_key(i // _PIECE)] = blob[i:i + _PIECE]
    return Signal(values, f.rate, source)


def _piece_key(i: int) -> str:
    return "chunks" if i == 0 else f"chunks{i}"


_WAV_KEYS = ("format", "rate", "channels", "width", "bits", "valid_bits", "float", "extensible",
             "data_at", "data_pad")


def _check_wav_source(source: dict) -> tuple[bytes, int, _WavFormat]:
    """The chunk bytes, data offset and format of a wav source map; CorruptDataError if bad."""

    def fail(message: str) -> None:
        raise CorruptDataError(f"source (wav metadata): {message}")

    n_pieces = 0
    while _piece_key(n_pieces) in source:
        n_pieces += 1
    expect_map(source, "source (wav metadata)", _WAV_KEYS, [_piece_key(i) for i in range(n_pieces)])
    for i in range(n_pieces):
        field_bytes(source, _piece_key(i), where="source (wav metadata)", max_size=_PIECE)
    blob = b"".join(source[_piece_key(i)] for i in range(n_pieces))
    if any(len(source[_piece_key(i)]) != _PIECE for i in range(n_pieces - 1)):
        fail("the chunk pieces are not all full but the last")
    data_at = field_int(source, "data_at", 0, len(blob), where="source (wav metadata)")
    field_int(source, "data_pad", -1, 255, where="source (wav metadata)")
    chunks = _riff_chunks(blob, 0, len(blob), fail)
    if data_at not in {0, *(c[3] for c in chunks)}:
        fail(f"data_at {data_at} is not a chunk boundary")
    if any(c[0] == b"data" for c in chunks):
        fail("a data chunk among the other chunks")
    fmts = [c for c in chunks if c[0] == b"fmt "]
    if len(fmts) != 1:
        fail(f"{len(fmts)} fmt chunks, exactly one is needed")
    f = _wav_format(blob[fmts[0][1]:fmts[0][2]], fail, lambda: None)
    stated = {k: source[k] for k in _WAV_KEYS[1:8]}
    actual = {"rate": f.rate, "channels": f.channels, "width": f.width, "bits": f.bits,
              "valid_bits": f.valid_bits, "float": f.is_float, "extensible": f.tag == _WAVE_EXTENSIBLE}
    for key, value in actual.items():
        if type(stated[key]) is not type(value) or stated[key] != value:
            fail(f"{key!r} is {short(stated[key])} but the fmt chunk says {value}")
    return blob, data_at, f


def _wav_payload(values: np.ndarray, f: _WavFormat, name: str) -> bytes:
    """``values`` as the bytes of a data chunk in format ``f`` (ValueError if they do not fit)."""
    if values.ndim not in (1, 2) or (values.ndim == 1) != (f.channels == 1) or (
            values.ndim == 2 and values.shape[1] != f.channels):
        raise ValueError(f"{name}: values of shape {values.shape} do not fit a WAV of {f.channels} "
                         "channel(s) (mono is 1-D, else (frames, channels))")
    if f.is_float:
        if values.dtype.kind != "f":
            raise TypeError(f"{name}: a float WAV needs floating-point values, got {values.dtype}")
        return np.ascontiguousarray(values, dtype=_WAV_SAMPLE[True, f.width]).tobytes()
    if values.dtype.kind not in "iub":
        raise TypeError(f"{name}: cannot write dtype {values.dtype} as integer PCM")
    if f.width == 1:
        lo, hi = 0, 255
    else:
        lo, hi = -(1 << (f.bits - 1)), (1 << (f.bits - 1)) - 1
    if values.size and (int(values.min()) < lo or int(values.max()) > hi):
        raise ValueError(f"{name}: values range from {int(values.min())} to {int(values.max())}, "
                         f"beyond {f.bits}-bit PCM [{lo}, {hi}]")
    flat = values.reshape(-1)
    if f.width == 3:
        return np.ascontiguousarray(flat.astype("<i4").view(np.uint8).reshape(-1, 4)[:, :3]).tobytes()
    return flat.astype(_WAV_SAMPLE[False, f.width]).tobytes()


def _default_wav_format(values: np.ndarray, name: str, rate: int) -> _WavFormat:
    if values.ndim not in (1, 2):
        raise ValueError(f"{name}: a WAV file holds 1-D (mono) or 2-D (frames, channels) data, got shape {values.shape}")
    channels = 1 if values.ndim == 1 else values.shape[1]
    if not 1 <= channels <= MAX_WAV_CHANNELS:
        raise ValueError(f"{name}: {channels} channels, a WAV holds 1 to {MAX_WAV_CHANNELS}")
    if values.dtype.kind == "f":
        bits, is_float = (64 if values.dtype.itemsize == 8 else 32), True
    elif values.dtype == np.uint8 or values.dtype.kind == "b":
        bits, is_float = 8, False
    elif values.dtype.kind in "iu":  # int16 and int32 as they are; others in the narrower that holds them
        bits, is_float = (32 if values.dtype == np.int32 else 16), False
        if values.size and values.dtype not in (np.dtype(np.int16), np.dtype(np.int32)):
            lo, hi = int(values.min()), int(values.max())
            if not (-(2**15) <= lo and hi < 2**15):
                bits = 32
            if not (-(2**31) <= lo and hi < 2**31):
                raise ValueError(f"{name}: values range from {lo} to {hi}, beyond 32-bit PCM; write .npy or raw instead")
    else:
        raise TypeError(f"{name}: cannot write dtype {values.dtype} as integer PCM")
    align = channels * bits // 8
    return _WavFormat(_WAVE_FLOAT if is_float else _WAVE_PCM, channels, rate, _byte_rate(rate, align), align,
                      bits, bits, is_float)


def _byte_rate(rate: int, block_align: int) -> int:
    if rate * block_align >= 2**32:
        raise ValueError(f"a WAV at {rate} Hz with {block_align}-byte frames has a byte rate beyond 32 bits")
    return rate * block_align


def _fmt_body(f: _WavFormat) -> bytes:
    return struct.pack("<HHIIHH", f.tag, f.channels, f.rate, f.byte_rate, f.block_align, f.bits)


def _check_rate(rate: Any) -> int:
    if not isinstance(rate, (int, np.integer)) or isinstance(rate, bool) or not 1 <= rate < 2**32:
        raise ValueError(f"the WAV sample rate must be an integer in [1, 2**32), got {rate!r}")
    return int(rate)


def _wav_bytes(values: np.ndarray, name: str, rate: int | None, source: dict | None) -> bytes:
    """A whole WAV file: laid out as ``source`` records (header and other chunks byte for byte)."""
    if source is None:
        f = _default_wav_format(values, name, DEFAULT_WAV_RATE if rate is None else _check_rate(rate))
        fmt = _fmt_body(f)
        pre, post, pad = b"fmt " + len(fmt).to_bytes(4, "little") + fmt, b"", 0
    else:
        blob, data_at, f = _check_wav_source(source)
        pad = source["data_pad"]
        if rate is not None:  # --rate overrides the recorded rate (and so the byte rate)
            rate = _check_rate(rate)
            at = next(c[1] for c in _riff_chunks(blob, 0, len(blob), None) if c[0] == b"fmt ")
            blob = blob[:at + 4] + struct.pack("<II", rate, _byte_rate(rate, f.block_align)) + blob[at + 12:]
        pre, post = blob[:data_at], blob[data_at:]
    payload = _wav_payload(values, f, name)
    if len(payload) & 1 and pad == -1 and post:
        pad = 0  # a chunk follows: the pad byte is needed
    tail = b"" if not len(payload) & 1 or pad == -1 else bytes([pad])
    body = b"WAVE" + pre + b"data" + len(payload).to_bytes(4, "little") + payload + tail + post
    if len(body) >= 2**32:
        raise ValueError(f"{name}: {len(body)} bytes do not fit in a RIFF WAV (4 GiB)")
    return b"RIFF" + len(body).to_bytes(4, "little") + body


# ============================================================== CSV

#: Field separators tried on the first data line, in this order; none of them: whitespace.
CSV_DELIMITERS = (",", ";", "\t")
_INT = re.compile(r"[+-]?\d+\Z")
_FLOAT = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?|[+-]?(nan|inf|infinity)", re.I)


#: How a CSV column's numbers are written, when every field of it has one form (the writer then
#: gives back the same text): canonical integers, or decimals with a fixed number of digits after
#: the point (the decimal float mode then codes them as integers, ``ubpe.frontend.floatcodes``).
_CANONICAL_INT = re.compile(r"-?(0|[1-9]\d*)\Z")
_FIXED_DECIMALS = re.compile(r"-?(0|[1-9]\d*)\.(\d+)\Z")
#: Most digits after the point a fixed-decimal column may have (float64's exact decimals).
MAX_CSV_DECIMALS = 15


def _column_format(texts: list[str]) -> str:
    """How every field of one column is written: "d" (canonical integers), the digits after the
    point of decimals that all have that many (e.g. "2"), or "r" (any other form: written back
    as Python's shortest repr of the float)."""
    if all(_CANONICAL_INT.match(t) for t in texts):
        return "d"
    first = _FIXED_DECIMALS.match(texts[0]) if texts else None
    if first is not None and len(first.group(2)) <= MAX_CSV_DECIMALS:
        d = len(first.group(2))
        if all((m := _FIXED_DECIMALS.match(t)) is not None and len(m.group(2)) == d for t in texts):
            return str(d)
    return "r"


def _is_number(field: str) -> bool:
    return bool(_INT.match(field) or _FLOAT.fullmatch(field))


def _split(line: str, delimiter: str) -> list[str]:
    return line.split() if delimiter == " " else [t.strip() for t in line.split(delimiter)]


def _read_csv(name: str, column: int | str | None = None) -> Signal:
    with open(name, "rb") as fh:
        raw = fh.read()
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise ValueError(f"{name}: not a UTF-8 text file ({e}); read binary files with --dtype or --bytes") from None
    lines = [(i, line.split("#", 1)[0].strip()) for i, line in enumerate(text.splitlines(), 1)]
    lines = [(i, line) for i, line in lines if line]
    if not lines:
        if column is not None:
            raise ValueError(f"{name}: no columns to select (the file holds no values)")
        return Signal(np.zeros(0, dtype=np.int64), None, {"format": "csv"})
    delimiter = next((d for d in CSV_DELIMITERS if d in lines[0][1]), " ")
    rows = [(i, _split(line, delimiter)) for i, line in lines]
    header: list[str] | None = None
    if not all(_is_number(t) for t in rows[0][1]):
        header, rows = rows[0][1], rows[1:]
    width = len(header) if header is not None else len(rows[0][1])
    for i, fields in rows:
        if len(fields) != width:
            first = "the header" if header is not None else f"line {rows[0][0]}"
            raise ValueError(f"{name}: line {i}: {len(fields)} fields, but {first} has {width} "
                             f"(separator {delimiter!r})")
    flat = header is None and len(rows) == 1  # one line of values: a flat sequence
    index = _csv_column(name, column, header, 1 if flat else width)
    if flat:
        fields = [(rows[0][0], j, t) for j, t in enumerate(rows[0][1])]
        n_cols = 1
    else:
        cols = range(width) if index is None else [index]
        fields = [(i, j, row[j]) for i, row in rows for j in cols]
        n_cols = len(cols)
    values = _parse_numbers(name, fields, header)
    if n_cols > 1:
        values = values.reshape(-1, n_cols)
    source: dict[str, Any] = {"format": "csv", "delimiter": delimiter, "columns": 1 if flat else width}
    if values.dtype.kind == "f":  # each column's written form, so that the writer gives the same text
        by_column: dict[int, list[str]] = {}
        for _, j, t in fields:
            by_column.setdefault(j, []).append(t)
        source["formats"] = ",".join(_column_format(by_column[j]) for j in sorted(by_column))
    if "\r\n" in text and text.count("\r\n") == text.count("\n"):
        source["newline"] = "\r\n"
    if header is not None:
        line = delimiter.join(header) if delimiter != " " else " ".join(header)
        if len(line) <= _PIECE:
            source["header"] = line
        else:
            warnings.warn(f"{name}: the header line has {len(line)} characters, more than the {_PIECE} a "
                          "container keeps: it will not be written back", stacklevel=3)
    if index is not None and not flat:
        source["column"] = index
    return Signal(values, None, source)


def _csv_column(name: str, column: int | str | None, header: list[str] | None, width: int) -> int | None:
    """The 0-based index ``column`` selects (a header name, or an index), None for all."""
    if column is None:
        return None
    if isinstance(column, str):
        if header is not None and column in header:
            return header.index(column)
        if not column.strip().isdigit():
            names = ", ".join(map(repr, header)) if header is not None else "none: the file has no header line"
            raise ValueError(f"{name}: no column named {column!r} (columns: {names})")
        column = int(column)
    if isinstance(column, bool) or not isinstance(column, (int, np.integer)):
        raise TypeError(f"column must be a name (str) or a 0-based index (int), got {type(column).__name__}")
    if not 0 <= column < width:
        raise ValueError(f"{name}: column index {column} is out of range: the file has {width} column(s), "
                         f"indices 0 to {width - 1}")
    return int(column)


def _parse_numbers(name: str, fields: list[tuple[int, int, str]], header: list[str] | None) -> np.ndarray:
    """int64 if every field is an integer, float64 if some are floats; errors name line and column."""
    texts = [t for _, _, t in fields]
    try:
        return np.array(texts).astype(np.int64) if texts else np.zeros(0, np.int64)
    except (ValueError, OverflowError):
        pass
    is_float = False
    for line, col, t in fields:
        where = f"{name}: line {line}, column {col if header is None else repr(header[col])}"
        if _INT.match(t):
            if not -(2**63) <= int(t) < 2**63:
                raise ValueError(f"{where}: {t} does not fit in a 64-bit integer")
        elif _FLOAT.fullmatch(t):
            is_float = True
        else:
            raise ValueError(f"{where}: {t!r} is not a number" if t else f"{where}: empty field")
    if is_float:  # compress needs step=/bits= (--step/--bits) unless they lie on an exact grid
        return np.array([float(t) for t in texts], dtype=np.float64)
    return np.array(texts).astype(np.int64)  # pragma: no cover (the fast path took these)


_CSV_KEYS = ("format", "delimiter", "columns")


def _check_csv_source(source: dict) -> dict:
    where = "source (csv metadata)"
    expect_map(source, where, _CSV_KEYS, ("header", "column", "formats", "newline"))
    field_str(source, "delimiter", where=where, choices=(*CSV_DELIMITERS, " "))
    width = field_int(source, "columns", 1, 2**31, where=where)
    if "column" in source:
        field_int(source, "column", 0, width - 1, where=where)
    if "newline" in source:
        field_str(source, "newline", where=where, choices=("\r\n",))
    if "formats" in source:
        forms = field_str(source, "formats", where=where).split(",")
        if len(forms) not in (1, width) or not all(f in ("d", "r") or (f.isdigit() and 1 <= int(f) <= MAX_CSV_DECIMALS)
                                                   for f in forms):
            raise CorruptDataError(f"{where}: 'formats' {short(source['formats'])} does not describe "
                                   f"{width} column(s)")
    if "header" in source:
        names = _split(field_str(source, "header", where=where), source["delimiter"])
        if len(names) != width or not all(names) or "\n" in source["header"] or "#" in source["header"]:
            raise CorruptDataError(f"{where}: the header {short(source['header'])} does not name "
                                   f"{width} column(s)")
    return source


def _format_number(v: Any, form: str = "r") -> str:
    """``v`` written as a column of ``form`` writes it (:func:`_column_format`)."""
    if form == "d":
        return str(int(v)) if isinstance(v, float) and v == v and abs(v) != float("inf") else str(v)
    if form != "r" and isinstance(v, float):
        return f"{v:.{int(form)}f}"
    return repr(float(v)) if isinstance(v, float) else str(v)


def _csv_bytes(values: np.ndarray, name: str, source: dict | None) -> bytes:
    if values.dtype.kind not in "iubf":
        raise TypeError(f"{name}: CSV output holds numbers, got dtype {values.dtype}")
    items = values.astype(np.int64) if values.dtype.kind == "b" else values
    if items.ndim not in (1, 2):
        raise ValueError(f"{name}: CSV output holds 1-D or 2-D data, got shape {values.shape}")
    delimiter, head, forms, newline = ",", None, None, "\n"
    if source is not None:
        delimiter = source["delimiter"]
        newline = source.get("newline", "\n")
        if "formats" in source:
            forms = source["formats"].split(",")
        if "header" in source:
            names = _split(source["header"], delimiter)
            if "column" in source and items.ndim == 1:
                head = names[source["column"]]
            elif len(names) == (items.shape[1] if items.ndim == 2 else 1):
                head = source["header"]
    lines = [head] if head is not None else []
    if items.ndim == 1:
        form = forms[source["column"]] if forms and "column" in source and len(forms) > 1 else (
            forms[0] if forms and len(forms) == 1 else "r")
        lines += (_format_number(v, form) for v in items.tolist())
    elif forms is not None and len(forms) == items.shape[1]:
        lines += (delimiter.join(_format_number(v, f) for v, f in zip(row, forms)) for row in items.tolist())
    else:
        lines += (delimiter.join(map(_format_number, row)) for row in items.tolist())
    return "".join(line + newline for line in lines).encode("utf-8")


# ============================================================== writing


def cast_values(values: np.ndarray, dtype: Any, what: str = "values") -> np.ndarray:
    """``values`` as integer ``dtype``, refusing (``ValueError``) values that do not fit."""
    dt = _integer_dtype(dtype, what)
    arr = np.asarray(values)
    if arr.dtype == dt:
        return arr
    if arr.size:
        if arr.dtype.kind not in "iub":
            raise TypeError(f"{what} have dtype {arr.dtype}, not integers")
        lo, hi = int(arr.min()), int(arr.max())
        info = np.iinfo(dt)
        if lo < info.min or hi > info.max:
            raise ValueError(
                f"{what} range from {lo} to {hi}, which does not fit in dtype {dt.str} "
                f"([{info.min}, {info.max}])"
            )
    return arr.astype(dt)


def check_source(source: Any) -> dict[str, Any] | None:
    """The part of a container's ``source`` map this module writes files from, checked.

    Returns ``source`` when its ``"format"`` is ``"wav"`` or ``"csv"`` and every field is
    consistent (the WAV chunks parse, the stated rate/channels/width match the ``fmt `` chunk;
    the CSV header names its columns), ``None`` for a map without such a format (metadata of
    someone else, or ``npy``/``raw``/``bytes``, which need nothing to be written back). The map
    comes from outside the container's checksum: a damaged one raises ``CorruptDataError``.
    """
    if source is None:
        return None
    if not isinstance(source, dict):
        raise CorruptDataError(f"source: expected a map, got {type(source).__name__}")
    if "name" in source:  # the input's file name (any format): checked where it is used
        source = {k: v for k, v in source.items() if k != "name"}
    kind = source.get("format")
    if kind == "wav":
        _check_wav_source(source)
        return source
    if kind == "csv":
        return _check_csv_source(source)
    if kind == "edf":
        from . import edf

        edf.check_source(source)
        return source
    if kind == "npy":
        return _check_npy_source(source)
    return None


def _to_bytes(values: np.ndarray, kind: str, name: str, rate: int | None, source: dict | None) -> bytes:
    if kind == "npy":
        return _npy_bytes(values, source if source is not None and source.get("format") == "npy" else None)
    if kind == "wav":
        return _wav_bytes(values, name, rate, source if source is not None and source.get("format") == "wav" else None)
    if kind == "csv":
        return _csv_bytes(values, name, source if source is not None and source.get("format") == "csv" else None)
    if kind == "edf":
        from . import edf

        return edf.to_bytes(values, name, source if source is not None and source.get("format") == "edf" else None)
    # raw and bytes: the array's own bytes, C order
    if values.dtype.kind not in "iubf":
        raise TypeError(f"{name}: raw output holds numeric arrays, got dtype {values.dtype}")
    return np.ascontiguousarray(values).tobytes()


def values_bytes(
    path: str | os.PathLike,
    values: Any,
    *,
    fmt: str | None = None,
    rate: int | None = None,
    source: dict[str, Any] | None = None,
) -> bytes:
    """The bytes :func:`write_values` would write to ``path`` (same arguments), without writing."""
    name = os.fspath(path)
    kind = format_for(name, fmt)
    arr = np.asarray(values)
    if arr.dtype.kind == "c":
        raise TypeError(f"{name}: values are {arr.dtype}; {QUANTIZE_HINT}")
    return _to_bytes(arr, kind, name, rate, check_source(source))


def write_values(
    path: str | os.PathLike,
    values: Any,
    *,
    fmt: str | None = None,
    overwrite: bool = False,
    rate: int | None = None,
    source: dict[str, Any] | None = None,
) -> None:
    """Write ``values`` to ``path`` atomically, in the format its extension names.

    ``.npy`` keeps dtype and shape. ``.wav``: with a wav ``source`` map (from
    :func:`read_signal`, or a container's ``describe(data).source``) the file is laid out as
    the one read: same ``fmt `` chunk, sample width, other chunks and their order, so the same
    samples give the same bytes; ``rate`` then overrides the recorded rate. Without one: PCM
    at ``rate`` Hz (default :data:`DEFAULT_WAV_RATE`), 8-bit for ``uint8``, 16- and 32-bit for
    ``int16``/``int32``, other integers the narrower of the two that holds every value; float values as 32/64-bit float WAV (format 3). ``.csv``
    and ``.txt``: one value per line (2-D: one row per line), floats in ``repr`` (exact); a csv
    ``source`` puts back the header line (one column: its name) and the separator. Anything
    else gets the array's raw bytes in its own dtype and C order (cast first with
    :func:`cast_values` to choose the layout, e.g. ``'>i2'``). A ``source`` of another format
    is ignored; a damaged one raises ``CorruptDataError`` (see :func:`check_source`).

    An existing ``path`` is replaced only when ``overwrite`` is true (see :func:`write_atomic`).
    """
    name = os.fspath(path)
    kind = format_for(name, fmt)
    arr = np.asarray(values)
    if arr.dtype.kind == "c":
        raise TypeError(f"{name}: values are {arr.dtype}; {QUANTIZE_HINT}")
    source = check_source(source)
    if not overwrite and os.path.lexists(name):  # fail before any serialization work
        raise _exists(name)
    write_atomic(name, _to_bytes(arr, kind, name, rate, source), overwrite=overwrite)


# ============================================================== demo data


def demo_signal() -> np.ndarray:
    """The bundled demo signal: 60 s of ECG (MIT-BIH record 208, 360 Hz), ``int16``, 21 600 samples.

    Raw 11-bit ADC values; see ``ubpe/data/ATTRIBUTION.md`` for the source and the licence
    (ODC-By 1.0).
    """
    data = resources.files("ubpe").joinpath("data").joinpath(_DEMO_FILE).read_bytes()
    return np.load(io.BytesIO(data), allow_pickle=False)
