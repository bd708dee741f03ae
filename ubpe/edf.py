"""EDF, EDF+ and BDF files (EEG, ECG, polysomnography), read and written here, byte for byte.

An EDF file is a header of ``256 * (ns + 1)`` ASCII bytes (the file's fields, then ``ns``
signals' fields, each field an array over the signals), then ``n`` data records, each holding
``spr[i]`` samples of every signal ``i`` in turn: 16-bit little-endian two's complement (EDF,
EDF+), or 24-bit (BDF, BDF+: version bytes ``b"\\xffBIOSEMI"``). EDF+ and BDF+ annotations are
a signal named ``"EDF Annotations"`` (``"BDF Annotations"``) whose samples are the bytes of
their text.

:func:`read` gives the *digital* samples (the file's integers: ``int16`` for EDF, ``int32`` for
BDF, annotation signals as their raw sample words) and a ``source`` map that holds the header
bytes as they are (padding, unusual characters and all) and any bytes after the last record, so
:func:`to_bytes` writes the same file back byte for byte. The values are laid out so that each
signal is one channel of ``ubpe.compress``'s ``(frames, channels)`` layout when every signal
has the same samples per record (``(n * spr, ns)``); signals of different rates are joined one
after the other in a 1-D array (``spr[0] * n`` samples of signal 0, then signal 1, ...), so
that each signal's samples stay in order, next to each other.

Malformed headers raise ``ValueError`` naming the file and the field (and its bytes).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from ._validate import field_bytes, field_str
from .errors import CorruptDataError

__all__ = ["EdfLayout", "read", "to_bytes", "check_source", "parse_header", "MAX_SIGNALS"]

#: Signals a header may declare (a source map keeps at most HEADER_PIECES pieces of the header).
PIECE = 1024
HEADER_PIECES = 28
MAX_SIGNALS = HEADER_PIECES * PIECE // 256 - 1
#: Bytes after the last record kept (an unfinished record, padding), in TAIL_PIECES pieces.
TAIL_PIECES = 2
#: Entries a container's source map holds (ubpe.format.fields.SOURCE_MAX_ENTRIES).
SOURCE_ENTRIES = 32
_BDF_VERSION = b"\xffBIOSEMI"
_EDF_VERSION = b"0       "

# The file's fields: (name, offset, width).
_FILE_FIELDS = (("version", 0, 8), ("patient", 8, 80), ("recording", 88, 80), ("start date", 168, 8),
                ("start time", 176, 8), ("header bytes", 184, 8), ("reserved", 192, 44),
                ("number of data records", 236, 8), ("duration of a data record", 244, 8),
                ("number of signals", 252, 4))
# Each signal's fields, in the order of the header's arrays: (name, width).
_SIGNAL_FIELDS = (("label", 16), ("transducer type", 80), ("physical dimension", 8), ("physical minimum", 8),
                  ("physical maximum", 8), ("digital minimum", 8), ("digital maximum", 8), ("prefiltering", 80),
                  ("samples per data record", 8), ("reserved", 32))


@dataclass(frozen=True)
class EdfLayout:
    """What a header says about the data: sample width (2: EDF, 3: BDF), the records, the
    samples per record of each signal, and which signals the values leave out (annotations
    kept apart, as text: :func:`read`)."""

    width: int
    records: int
    spr: tuple[int, ...]
    header_bytes: int
    apart: frozenset[int] = frozenset()

    def without(self, apart: frozenset[int]) -> EdfLayout:
        return EdfLayout(self.width, self.records, self.spr, self.header_bytes, apart)

    @property
    def kept(self) -> tuple[int, ...]:
        """The samples per record of the signals the values hold."""
        return tuple(s for i, s in enumerate(self.spr) if i not in self.apart)

    @property
    def record_bytes(self) -> int:
        return self.width * sum(self.spr)

    @property
    def data_bytes(self) -> int:
        return self.records * self.record_bytes

    @property
    def uniform(self) -> bool:
        """Whether every signal the values hold has the same samples per record (the 2-D layout)."""
        return len(set(self.kept)) == 1

    @property
    def dtype(self) -> np.dtype:
        return np.dtype(np.int16) if self.width == 2 else np.dtype(np.int32)

    @property
    def shape(self) -> tuple[int, ...]:
        """The values' shape: ``(records * spr, ns)``, or 1-D for signals of different rates."""
        if self.uniform:
            return (self.records * self.kept[0], len(self.kept))
        return (self.records * sum(self.kept),)


def _ascii(raw: bytes, field: str, start: int, width: int, fail: Any) -> str:
    """The header field at ``raw[start:start + width]``, stripped; ``fail`` if it is not ASCII."""
    text = raw[start:start + width]
    try:
        return text.decode("ascii").strip()
    except UnicodeDecodeError:
        fail(f"header field {field} (bytes {start} to {start + width}) is not ASCII: {text!r}")
        raise AssertionError  # pragma: no cover - fail raises


def _integer(text: str, field: str, where: str, fail: Any, low: int, high: int) -> int:
    try:
        value = int(text)
    except ValueError:
        fail(f"header field {field} ({where}) is {text!r}, not an integer")
        raise AssertionError  # pragma: no cover
    if not low <= value <= high:
        fail(f"header field {field} ({where}) is {value}, not in [{low}, {high}]")
    return value


def _number(text: str, field: str, where: str, fail: Any) -> float:
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value):
        fail(f"header field {field} ({where}) is {text!r}, not a number")
    return value


def parse_header(raw: bytes, fail: Any, size: int | None = None) -> EdfLayout:
    """The layout of the EDF/BDF header at the start of ``raw``; ``fail(message)`` raises for a
    malformed one (message naming the field and its bytes). ``size``: the file's length, to
    check the records against (None: ``raw`` is the header alone)."""
    if len(raw) < 256:
        fail(f"{len(raw)} bytes, an EDF header has at least 256")
    version = raw[:8]
    if version == _BDF_VERSION:
        width = 3
    elif version == _EDF_VERSION:
        width = 2
    else:
        fail(f"header field 'version' (bytes 0 to 8) is {version!r}: EDF has b'0       ', BDF b'\\xffBIOSEMI'")
    text = {name: _ascii(raw, repr(name), start, w, fail) for name, start, w in _FILE_FIELDS[1:]}
    ns = _integer(text["number of signals"], "'number of signals'", "bytes 252 to 256", fail, 1, MAX_SIGNALS)
    header_bytes = _integer(text["header bytes"], "'header bytes'", "bytes 184 to 192", fail, 0, 1 << 40)
    if header_bytes != 256 * (ns + 1):
        fail(f"header field 'header bytes' (bytes 184 to 192) is {header_bytes}, but {ns} signals need "
             f"256 * ({ns} + 1) = {256 * (ns + 1)}")
    if len(raw) < header_bytes:
        fail(f"{len(raw)} bytes, shorter than the {header_bytes} of its header (truncated)")
    records = _integer(text["number of data records"], "'number of data records'", "bytes 236 to 244", fail,
                       -1, 1 << 40)
    _number(text["duration of a data record"], "'duration of a data record'", "bytes 244 to 252", fail)
    at = 256
    spr: tuple[int, ...] = ()
    for field, w in _SIGNAL_FIELDS:
        for i in range(ns):
            start = at + i * w
            where, label = f"bytes {start} to {start + w}", f"'{field}' of signal {i}"
            value = _ascii(raw, label, start, w, fail)
            if field in ("physical minimum", "physical maximum"):
                _number(value, label, where, fail)
            elif field in ("digital minimum", "digital maximum"):
                _integer(value, label, where, fail, -(1 << (8 * width - 1)), (1 << (8 * width - 1)) - 1)
            elif field == "samples per data record":
                spr += (_integer(value, label, where, fail, 1, 1 << 30),)
        at += ns * w
    layout = EdfLayout(width, records, spr, header_bytes)
    if size is not None:
        data = size - header_bytes
        if records == -1:  # EDF+ while recording: the records the file holds
            records = data // layout.record_bytes
            layout = EdfLayout(width, records, spr, header_bytes)
        if layout.data_bytes > data:
            fail(f"header field 'number of data records' (bytes 236 to 244) is {records} records of "
                 f"{layout.record_bytes} bytes, but the file holds {data} bytes after its header (truncated)")
    return layout  # (records -1 without a size: as many as the values hold)


def _samples(data: bytes, layout: EdfLayout) -> np.ndarray:
    """The records' samples as ``(records, sum(spr))`` integers of ``layout.dtype``."""
    return _from_sample_bytes(data, layout.width).reshape(layout.records, sum(layout.spr))


def _signal(records: np.ndarray, layout: EdfLayout, i: int) -> np.ndarray:
    """Signal ``i``'s samples, record after record (1-D)."""
    at = sum(layout.spr[:i])
    return records[:, at:at + layout.spr[i]].reshape(-1)


def _values(records: np.ndarray, layout: EdfLayout) -> np.ndarray:
    """The records' samples of the signals kept, in the values' layout (module docstring)."""
    kept = [i for i in range(len(layout.spr)) if i not in layout.apart]
    if layout.uniform:
        return np.stack([_signal(records, layout, i) for i in kept], axis=1)
    return np.concatenate([_signal(records, layout, i) for i in kept])


def _records(values: np.ndarray, apart: dict[int, np.ndarray], layout: EdfLayout) -> np.ndarray:
    """The inverse of :func:`_values`, with the signals kept apart (``apart[i]``, 1-D) put back:
    ``(records, sum(spr))``."""
    out = np.empty((layout.records, sum(layout.spr)), dtype=values.dtype)
    at, col, j = 0, 0, 0
    for i, s in enumerate(layout.spr):
        if i in layout.apart:
            series = apart[i]
        elif layout.uniform:
            series = values[:, j]
            j += 1
        else:
            series = values[at:at + layout.records * s]
            at += layout.records * s
        out[:, col:col + s] = series.reshape(layout.records, s)
        col += s
    return out


def _annotation_signals(header: bytes, layout: EdfLayout) -> frozenset[int]:
    """The EDF+/BDF+ annotation signals of a (parsed) header, by label."""
    ns = len(layout.spr)
    labels = [header[256 + 16 * i:256 + 16 * (i + 1)].strip() for i in range(ns)]
    return frozenset(i for i, label in enumerate(labels) if label in (b"EDF Annotations", b"BDF Annotations"))


def _sample_bytes(series: np.ndarray, width: int) -> bytes:
    """Samples as the file stores them (16-bit, or 24-bit little-endian)."""
    if width == 2:
        return series.astype("<i2").tobytes()
    return np.ascontiguousarray(series.astype("<i4").reshape(-1, 1).view(np.uint8)[:, :3]).tobytes()


def _from_sample_bytes(raw: bytes, width: int) -> np.ndarray:
    if width == 2:
        return np.frombuffer(raw, dtype="<i2").astype(np.int16)
    n = len(raw) // 3
    padded = np.zeros((n, 4), dtype=np.uint8)
    padded[:, 1:] = np.frombuffer(raw, dtype=np.uint8).reshape(n, 3)
    return (padded.view("<i4").reshape(n) >> 8).astype(np.int32)


def read(name: str, raw: bytes) -> tuple[np.ndarray, float | None, dict[str, Any]]:
    """(values, rate, source) of the EDF/BDF file ``raw`` (named ``name`` in messages): see the
    module docstring. ``rate`` is the sample rate in Hz when every signal has the same one."""

    def fail(message: str) -> None:
        raise ValueError(f"{name}: not a readable EDF/BDF file: {message}")

    layout = parse_header(raw, fail, len(raw))
    end = layout.header_bytes + layout.data_bytes
    tail = raw[end:]
    if len(tail) > TAIL_PIECES * PIECE:
        fail(f"{len(tail)} bytes after the last of its {layout.records} data records (at most "
             f"{TAIL_PIECES * PIECE} are kept): the header's 'number of data records' does not describe the file")
    header = raw[:layout.header_bytes]
    if len(header) > HEADER_PIECES * PIECE:  # pragma: no cover - MAX_SIGNALS keeps it within
        fail(f"a header of {len(header)} bytes is more than a container keeps")
    records = _samples(raw[layout.header_bytes:end], layout)
    source: dict[str, Any] = {"format": "edf"}
    for i in range(0, len(header), PIECE):
        source[_key("header", i // PIECE)] = header[i:i + PIECE]
    for i in range(0, len(tail), PIECE):
        source[_key("tail", i // PIECE)] = tail[i:i + PIECE]
    notes = _annotation_signals(header, layout)
    if notes and len(notes) < len(layout.spr):  # annotations as text, compressed on their own
        from .api import compress

        text = b"".join(_sample_bytes(_signal(records, layout, i), layout.width) for i in sorted(notes))
        packed = compress(np.frombuffer(text, dtype=np.uint8), threads=1)
        room = SOURCE_ENTRIES - len(source) - 1  # one entry left for the file's name (the CLI's)
        if len(packed) <= room * PIECE:
            for i in range(0, len(packed), PIECE):
                source[_key("notes", i // PIECE)] = packed[i:i + PIECE]
            layout = layout.without(notes)
    values = _values(records, layout)
    duration = float(raw[244:252].decode("ascii").strip())
    rate = layout.spr[0] / duration if layout.uniform and duration > 0 else None
    return values, rate, source


def _key(kind: str, i: int) -> str:
    return kind if i == 0 else f"{kind}{i}"


def _pieces(source: dict, kind: str, limit: int) -> bytes:
    where = "source (edf metadata)"
    parts = []
    while _key(kind, len(parts)) in source:
        if len(parts) >= limit:
            raise CorruptDataError(f"{where}: more than {limit} pieces of {kind!r}")
        parts.append(field_bytes(source, _key(kind, len(parts)), where=where, max_size=PIECE))
    if any(len(p) != PIECE for p in parts[:-1]):
        raise CorruptDataError(f"{where}: the {kind!r} pieces are not all full but the last")
    return b"".join(parts)


def check_source(source: dict) -> tuple[bytes, bytes, EdfLayout]:
    """The header, tail and layout of an edf source map; CorruptDataError if any is bad."""
    where = "source (edf metadata)"
    keys = [k for k in source if k != "format"]
    header = _pieces(source, "header", HEADER_PIECES)
    tail = _pieces(source, "tail", TAIL_PIECES)
    notes = _pieces(source, "notes", SOURCE_ENTRIES)
    known = ({_key("header", i) for i in range(HEADER_PIECES)} | {_key("tail", i) for i in range(TAIL_PIECES)}
             | {_key("notes", i) for i in range(SOURCE_ENTRIES)})
    extra = [k for k in keys if k not in known]
    if extra:
        raise CorruptDataError(f"{where}: unexpected field(s) {sorted(map(str, extra))[:4]}")
    field_str(source, "format", where=where, choices=("edf",))

    def fail(message: str) -> None:
        raise CorruptDataError(f"{where}: the stored header: {message}")

    layout = parse_header(header, fail)
    if len(header) != layout.header_bytes:
        fail(f"{len(header)} bytes stored, the header declares {layout.header_bytes}")
    if notes:
        apart = _annotation_signals(header, layout)
        if not apart or len(apart) == len(layout.spr):
            raise CorruptDataError(f"{where}: 'notes' stored, but the header has no annotation signal to put them in "
                                   "(or nothing else)")
        layout = layout.without(apart)
    return header, tail, layout


def _notes(source: dict, layout: EdfLayout) -> dict[int, np.ndarray]:
    """The annotation signals kept apart in ``source`` (checked), by signal."""
    if not layout.apart:
        return {}
    from .api import decompress

    where = "source (edf metadata)"
    text = decompress(_pieces(source, "notes", SOURCE_ENTRIES))
    need = [layout.records * layout.spr[i] * layout.width for i in sorted(layout.apart)]
    if text.dtype != np.uint8 or text.ndim != 1 or text.size != sum(need):
        raise CorruptDataError(f"{where}: 'notes' hold {text.size} values of {text.dtype}, the annotation "
                               f"signals need {sum(need)} bytes")
    out, at = {}, 0
    for i, size in zip(sorted(layout.apart), need):
        out[i] = _from_sample_bytes(text[at:at + size].tobytes(), layout.width)
        at += size
    return out


def to_bytes(values: np.ndarray, name: str, source: dict | None) -> bytes:
    """The EDF/BDF file of ``values`` laid out as ``source`` (from :func:`read`) records."""
    if source is None:
        raise ValueError(f"{name}: an EDF/BDF file is written from the header of the file it was read "
                         "from (a container's source map); these values carry none")
    header, tail, layout = check_source(source)
    arr = np.asarray(values)
    if layout.records == -1:  # EDF+ while recording: the records the values hold
        per_record = sum(layout.kept) if not layout.uniform else layout.kept[0]
        count = (arr.shape[0] if arr.ndim else 0) // per_record
        layout = dataclasses.replace(layout, records=count)
    if arr.shape != layout.shape:
        raise ValueError(f"{name}: values of shape {arr.shape} do not fit the EDF header, which needs "
                         f"{layout.shape}")
    if arr.dtype.kind not in "iu":
        raise TypeError(f"{name}: EDF samples are integers, got dtype {arr.dtype}")
    lo, hi = -(1 << (8 * layout.width - 1)), (1 << (8 * layout.width - 1)) - 1
    if arr.size and (int(arr.min()) < lo or int(arr.max()) > hi):
        raise ValueError(f"{name}: values range from {int(arr.min())} to {int(arr.max())}, beyond the "
                         f"{8 * layout.width}-bit samples of this file [{lo}, {hi}]")
    records = _records(arr.astype(layout.dtype), _notes(source, layout), layout)
    return header + _sample_bytes(records.reshape(-1), layout.width) + tail
