"""File input and output: atomic writes, integer arrays from and to files, the bundled demo signal.

Formats, chosen by the file's extension unless ``fmt`` says otherwise:

========  ==================================================================================
``npy``   ``.npy`` (numpy's format, read with ``allow_pickle=False``); any shape, integer dtype
``wav``   ``.wav``, integer PCM (8, 16, 24 or 32 bit); multi-channel files are 2-D
          ``(frames, channels)``; 24-bit samples are read as ``int32`` as scipy does
``csv``   ``.csv`` and ``.txt``: integers separated by any mix of commas, spaces, tabs and
          newlines (read as one flat ``int64`` sequence); ``#`` starts a comment
``raw``   any other file, with an explicit ``dtype`` such as ``'<i2'``: the bare array bytes
``bytes`` any file as ``uint8`` values (``as_bytes=True``)
========  ==================================================================================

Floating-point data is refused with a message pointing to quantization: ubpe compresses
integers. Problems with a file raise ``ValueError`` or ``TypeError`` naming the file; a
missing file raises ``FileNotFoundError``.
"""

from __future__ import annotations

import errno
import io
import os
import re
import stat
import time
import tempfile
import warnings
from dataclasses import dataclass
from importlib import resources
from typing import Any

import numpy as np

from ._validate import QUANTIZE_HINT

__all__ = [
    "DEFAULT_WAV_RATE",
    "FORMATS",
    "Signal",
    "cast_values",
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
FORMATS = ("npy", "wav", "csv", "raw", "bytes")
_EXTENSIONS = {".npy": "npy", ".wav": "wav", ".wave": "wav", ".csv": "csv", ".txt": "csv"}

#: Integer dtypes a ``.wav`` file can hold as PCM (8-bit WAV is unsigned, the others signed).
_WAV_DTYPES = (np.dtype(np.uint8), np.dtype(np.int16), np.dtype(np.int32))

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


def write_atomic(path: str | os.PathLike, data: bytes | bytearray | memoryview, *, overwrite: bool) -> None:
    """Write ``data`` to ``path`` so that readers see either the old file or the whole new one.

    The bytes go to a temporary file in the same directory, which is flushed, fsynced and then
    renamed over ``path``. If ``path`` exists and ``overwrite`` is false, raises
    ``FileExistsError`` and writes nothing (the final step uses a hard link, so a file created
    meanwhile is not clobbered either). On any failure the Python process sees (an exception,
    KeyboardInterrupt included) the temporary file is removed and ``path`` is left as it was.
    A process killed outright (SIGKILL, power loss) cannot remove it: the hidden
    ``.<name>.<random>.tmp`` file stays, and the next write to the same ``path`` removes such
    files of ours (same owner, exactly that pattern) once they are :data:`STALE_TEMP_SECONDS` old,
    so a concurrent writer's fresh temporary is never touched.
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
    if arr.dtype.kind in "fc":
        raise TypeError(f"{path}: the {fmt} data is {arr.dtype} (floating-point); {QUANTIZE_HINT}")
    if arr.dtype.kind not in "iub":
        raise TypeError(f"{path}: the {fmt} data has dtype {arr.dtype}; ubpe reads integer arrays only")
    if arr.ndim == 0:
        raise ValueError(f"{path}: the {fmt} file holds a single scalar, not a sequence")
    return arr


@dataclass(frozen=True)
class Signal:
    """Values read from a file, with the sample rate when the file has one (``.wav``)."""

    values: np.ndarray
    rate: int | None = None


def read_signal(
    path: str | os.PathLike, *, fmt: str | None = None, dtype: Any = None, as_bytes: bool = False
) -> Signal:
    """Like :func:`read_values`, but also returns the sample rate of a ``.wav`` file."""
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
    if kind == "bytes":
        with open(name, "rb") as f:
            return Signal(np.frombuffer(f.read(), dtype=np.uint8).copy())
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
        return Signal(np.frombuffer(raw, dtype=dt).copy())
    if kind == "npy":
        return Signal(_read_npy(name))
    if kind == "wav":
        return _read_wav(name)
    return Signal(_read_csv(name))


def read_values(
    path: str | os.PathLike, *, fmt: str | None = None, dtype: Any = None, as_bytes: bool = False
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

    Raises ``FileNotFoundError`` for a missing file, ``TypeError`` for floating-point or
    non-integer data, ``ValueError`` for anything else wrong with the file; every message
    names the file.
    """
    return read_signal(path, fmt=fmt, dtype=dtype, as_bytes=as_bytes).values


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


def _read_wav(name: str) -> Signal:
    from scipy.io import wavfile

    with open(name, "rb") as f:  # FileNotFoundError as such
        raw = f.read()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # unknown chunks are skipped silently
            rate, data = wavfile.read(io.BytesIO(raw))
    except Exception as e:  # scipy raises ValueError, struct.error, EOFError... for damaged files
        raise ValueError(f"{name}: not a readable WAV file ({e or type(e).__name__})") from None
    data = np.asarray(data)
    if data.dtype.kind == "f":
        raise TypeError(f"{name}: the WAV file holds floating-point samples; {QUANTIZE_HINT}")
    return Signal(_check_values(data, name, ".wav"), int(rate))


_SPLIT = re.compile(r"[,\s]+")
_INT = re.compile(r"[+-]?\d+\Z")
_COMMENT = re.compile(r"#[^\n]*")
_FLOAT = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?|[+-]?(nan|inf|infinity)", re.I)


def _read_csv(name: str) -> np.ndarray:
    with open(name, "rb") as f:
        raw = f.read()
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise ValueError(f"{name}: not a UTF-8 text file ({e}); read binary files with --dtype or --bytes") from None
    text = _COMMENT.sub("", text)
    fields = [t for t in _SPLIT.split(text) if t]
    if not fields:
        return np.zeros(0, dtype=np.int64)
    try:
        return np.array(fields).astype(np.int64)
    except (ValueError, OverflowError):
        pass
    for t in fields:  # find the first bad field for the message
        if _INT.match(t) and -(2**63) <= int(t) < 2**63:
            continue
        where = f"{name}: line {1 + text[: _field_position(text, t)].count(chr(10))}"
        if _INT.match(t):
            raise ValueError(f"{where}: {t} does not fit in a 64-bit integer")
        if _FLOAT.fullmatch(t):
            raise TypeError(f"{where}: {t!r} is not an integer; {QUANTIZE_HINT}")
        raise ValueError(f"{where}: {t!r} is not an integer")
    raise ValueError(f"{name}: could not parse the integers")  # pragma: no cover


def _field_position(text: str, field: str) -> int:
    m = re.search(r"(?:^|(?<=[,\s]))" + re.escape(field) + r"(?=$|[,\s])", text)
    return m.start() if m else 0


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


def _wav_array(values: np.ndarray, name: str) -> np.ndarray:
    if values.ndim not in (1, 2):
        raise ValueError(f"{name}: a WAV file holds 1-D (mono) or 2-D (frames, channels) data, got shape {values.shape}")
    if values.dtype in _WAV_DTYPES:
        return values
    if values.dtype.kind == "b":
        return values.astype(np.uint8)
    if values.dtype.kind not in "iu":
        raise TypeError(f"{name}: cannot write dtype {values.dtype} as integer PCM")
    if values.size == 0:
        return values.astype(np.int16)
    lo, hi = int(values.min()), int(values.max())
    for dt in (np.int16, np.int32):
        info = np.iinfo(dt)
        if info.min <= lo and hi <= info.max:
            return values.astype(dt)
    raise ValueError(
        f"{name}: values range from {lo} to {hi}, beyond 32-bit PCM; write .npy or raw instead"
    )


def _to_bytes(values: np.ndarray, kind: str, name: str, rate: int | None) -> bytes:
    if kind == "npy":
        buf = io.BytesIO()
        np.save(buf, values, allow_pickle=False)
        return buf.getvalue()
    if kind == "wav":
        from scipy.io import wavfile

        rate = DEFAULT_WAV_RATE if rate is None else rate
        if not isinstance(rate, (int, np.integer)) or isinstance(rate, bool) or not 1 <= rate < 2**32:
            raise ValueError(f"the WAV sample rate must be an integer in [1, 2**32), got {rate!r}")
        buf = io.BytesIO()
        wavfile.write(buf, int(rate), _wav_array(values, name))
        return buf.getvalue()
    if kind == "csv":
        if values.dtype.kind not in "iub":
            raise TypeError(f"{name}: CSV output holds integers, got dtype {values.dtype}")
        ints = values.astype(np.int64) if values.dtype.kind == "b" else values
        if ints.ndim == 1:
            lines = map(str, ints.tolist())
        elif ints.ndim == 2:
            lines = (",".join(map(str, row)) for row in ints.tolist())
        else:
            raise ValueError(f"{name}: CSV output holds 1-D or 2-D data, got shape {values.shape}")
        return "".join(line + "\n" for line in lines).encode("ascii")
    # raw and bytes: the array's own bytes, C order
    if values.dtype.kind not in "iub":
        raise TypeError(f"{name}: raw output holds integer arrays, got dtype {values.dtype}")
    return np.ascontiguousarray(values).tobytes()


def write_values(
    path: str | os.PathLike,
    values: Any,
    *,
    fmt: str | None = None,
    overwrite: bool = False,
    rate: int | None = None,
) -> None:
    """Write integer ``values`` to ``path`` atomically, in the format its extension names.

    ``.npy`` keeps dtype and shape; ``.wav`` writes integer PCM at ``rate`` Hz (default
    :data:`DEFAULT_WAV_RATE`), as ``uint8``/``int16``/``int32`` samples (other integer dtypes
    are narrowed to the smallest of ``int16``/``int32`` that holds every value); ``.csv`` and
    ``.txt`` write one value per line (2-D: one comma-separated row per line); anything else
    gets the array's raw bytes in its own dtype and C order (cast first with
    :func:`cast_values` to choose the layout, e.g. ``'>i2'``).

    An existing ``path`` is replaced only when ``overwrite`` is true (see :func:`write_atomic`).
    """
    name = os.fspath(path)
    kind = format_for(name, fmt)
    arr = np.asarray(values)
    if arr.dtype.kind in "fc":
        raise TypeError(f"{name}: values are {arr.dtype}; {QUANTIZE_HINT}")
    if not overwrite and os.path.lexists(name):  # fail before any serialization work
        raise _exists(name)
    write_atomic(name, _to_bytes(arr, kind, name, rate), overwrite=overwrite)


# ============================================================== demo data


def demo_signal() -> np.ndarray:
    """The bundled demo signal: 60 s of ECG (MIT-BIH record 208, 360 Hz), ``int16``, 21 600 samples.

    Raw 11-bit ADC values; see ``ubpe/data/ATTRIBUTION.md`` for the source and the licence
    (ODC-By 1.0).
    """
    data = resources.files("ubpe").joinpath("data").joinpath(_DEMO_FILE).read_bytes()
    return np.load(io.BytesIO(data), allow_pickle=False)
