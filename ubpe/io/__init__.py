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

import io
import os
from importlib import resources
from typing import Any

import numpy as np

from .._validate import QUANTIZE_HINT
from ..errors import CorruptDataError
from . import csv, npy, wav
from ._signal import Signal, integer_dtype
from .atomic import exists_error, write_atomic
from .npy import MAX_NPY_HEADER
from .wav import DEFAULT_WAV_RATE

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


#: Formats :func:`read_values` and :func:`write_values` know, and the extensions that select them.
FORMATS = ("npy", "wav", "csv", "raw", "bytes", "edf")
_EXTENSIONS = {".npy": "npy", ".wav": "wav", ".wave": "wav", ".csv": "csv", ".txt": "csv",
               ".edf": "edf", ".bdf": "edf", ".rec": "edf"}


DEMO_RATE = 360  # Hz, MIT-BIH
_DEMO_FILE = "mitbih_208_excerpt.npy"


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
        dt = integer_dtype(dtype, name)
        with open(name, "rb") as f:
            raw = f.read()
        if len(raw) % dt.itemsize:
            raise ValueError(
                f"{name}: {len(raw)} bytes is not a multiple of the {dt.itemsize}-byte item size "
                f"of dtype {dt.str}"
            )
        return Signal(np.frombuffer(raw, dtype=dt).copy(), None, {"format": "raw"})
    if kind == "npy":
        arr = npy.read(name)
        return Signal(arr, None, npy.source_of(name, arr))
    if kind == "wav":
        return wav.read(name)
    if kind == "edf":
        from .. import edf

        with open(name, "rb") as fh:
            values, rate, source = edf.read(name, fh.read())
        return Signal(values, int(rate) if rate is not None and rate == int(rate) else None, source)
    return csv.read(name, column)


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


def map_signal(path: str | os.PathLike, *, dtype: Any = None) -> Signal | None:
    """The values of an .npy file, or of a raw file of ``dtype``, memory-mapped (read from disk
    as they are used), with the source map :func:`read_signal` gives; None when the file cannot
    be mapped so (another format, floats, a 0-d array, a damaged or unusual .npy: read it with
    :func:`read_signal`)."""
    name = os.fspath(path)
    kind = format_for(name, "raw" if dtype is not None else None)
    try:
        if kind == "raw" and dtype is not None:
            dt = integer_dtype(dtype, name)
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
    if buf.getvalue() != header:  # as npy.source_of: another writer's header is kept when it parses
        try:
            if len(header) <= MAX_NPY_HEADER and npy.header_fields(header) == (
                    arr.shape, source.get("order") == "F", arr.dtype):
                source["header"] = header
        except CorruptDataError:
            pass
    return Signal(arr, None, source)


# ============================================================== writing


def cast_values(values: np.ndarray, dtype: Any, what: str = "values") -> np.ndarray:
    """``values`` as integer ``dtype``, refusing (``ValueError``) values that do not fit."""
    dt = integer_dtype(dtype, what)
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
    if "name" in source or "size" in source:  # the input file's name and size (any format): checked where used
        source = {k: v for k, v in source.items() if k not in ("name", "size")}
    kind = source.get("format")
    if kind == "wav":
        wav.check_source(source)
        return source
    if kind == "csv":
        return csv.check_source(source)
    if kind == "edf":
        from .. import edf

        edf.check_source(source)
        return source
    if kind == "npy":
        return npy.check_source(source)
    return None


def _to_bytes(values: np.ndarray, kind: str, name: str, rate: int | None, source: dict | None) -> bytes:
    if kind == "npy":
        return npy.to_bytes(values, source if source is not None and source.get("format") == "npy" else None)
    if kind == "wav":
        return wav.to_bytes(values, name, rate, source if source is not None and source.get("format") == "wav" else None)
    if kind == "csv":
        return csv.to_bytes(values, name, source if source is not None and source.get("format") == "csv" else None)
    if kind == "edf":
        from .. import edf

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
        raise exists_error(name)
    write_atomic(name, _to_bytes(arr, kind, name, rate, source), overwrite=overwrite)


# ============================================================== demo data


def demo_signal() -> np.ndarray:
    """The bundled demo signal: 60 s of ECG (MIT-BIH record 208, 360 Hz), ``int16``, 21 600 samples.

    Raw 11-bit ADC values; see ``ubpe/data/ATTRIBUTION.md`` for the source and the licence
    (ODC-By 1.0).
    """
    data = resources.files("ubpe").joinpath("data").joinpath(_DEMO_FILE).read_bytes()
    return np.load(io.BytesIO(data), allow_pickle=False)
