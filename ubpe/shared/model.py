"""The shared model (:class:`SharedModel`, its :class:`Variant`) and its file: the constants of
shared models and window containers, the model file's parser (every field checked)."""

from __future__ import annotations

import hashlib
import threading
from dataclasses import dataclass, field
from typing import Any

import msgpack
import numpy as np

from ..errors import CorruptDataError
from ..format.sealed import open_sealed, seal, unpack

#: The first 4 bytes of a window container of versions 1 to 4 (an ordinary container starts with ``b"ubpe"``).
WINDOW_MAGIC = b"ubpw"
#: From version 5 a window container starts with the one byte ``WINDOW_LEAD | version`` (0xF5 for
#: version 5) in place of :data:`WINDOW_MAGIC` and the version byte: 4 bytes less a window (as
#: zstd's magicless frames for small records; no ubpe file starts with a byte above 0xF4).
WINDOW_LEAD = 0xF0
#: The newest window-container version this ubpe writes and reads (1 to 4 are read too, and
#: written by ``compress_window(..., version=)`` to reproduce old files).
WINDOW_VERSION = 5
#: The ``magic`` of a shared-model file.
MODEL_MAGIC = "ubpe.shared"
#: The newest shared-model file version this ubpe reads; it writes 2 for a model with a split
#: ("mult") variant, else 1 (the same bytes as before splits existed).
MODEL_VERSION = 2
#: History values a model keeps by default (the last ones of the training windows): a window
#: costs the coding of ``primer + window`` twice to write and to read (the reader's first pass
#: is cached per window length).
DEFAULT_PRIMER = 1 << 15
#: Windows ``ubpe fit --shared`` trains on by default (the first ones of the input).
DEFAULT_TRAINING_WINDOWS = 10
#: Most history values a model file may hold.
MAX_HISTORY = 1 << 20
#: Most residual values the model's alphabet spans (wider residuals escape).
MAX_SIZE = 1 << 16
#: Most variants a model holds.
MAX_VARIANTS = 8
#: Variants :func:`fit_shared` keeps by default (the best on held-out training windows; 4 rather
#: than 3: 31 recordings of benchmarks/bench_windows.py at 1 000 values, 377 948 -> 377 799 B, each
#: window coded once more a variant).
DEFAULT_VARIANTS = 4
#: Bytes of the model digest a window container of version 1 stores.
REF_BYTES = 8
#: Bytes of the model digest a window container of version 2 stores (a wrong model that shared
#: them would still fail the primer check and the CRC).
REF_BYTES_V2 = 4
#: Bytes of the model digest a window container of version 3 stores (a wrong model that shared
#: them fails the primer check and the CRC: the digest only names the model in the error).
REF_BYTES_V3 = 2
#: Version 3's extras byte (present when the low bit of the count varint is set): a shape, escapes,
#: a source follow.
_V3_SHAPE, _V3_ESC, _V3_SOURCE = 0x01, 0x02, 0x04
#: Version 2's flags byte: the dtype index (low 4 bits), then whether a shape, escapes, a source follow.
_HAS_SHAPE, _HAS_ESC, _HAS_SOURCE = 0x10, 0x20, 0x40
#: Version 2's flag of a window coded *cold*: its tokens alone, without the primer (a window unlike
#: the training data's last values codes smaller so; the predictor still runs over the history).
_COLD = 0x80
#: Integer dtypes a window may have (their values fit int64 and the predictor's products too).
DTYPES = ("|i1", "|u1", "<i2", "<u2", "<i4", "<u4", ">i2", ">u2", ">i4", ">u4")
_MAX_ORDER = 32
_MAX_COEF = 1 << 15
_SMOOTH = 8
_MARGIN = 2


# ============================================================================ the model


@dataclass(frozen=True, eq=False)
class Variant:
    """One predictor and code of a :class:`SharedModel` (a window uses the variant that codes it
    smallest).

    ``shift`` and ``coefs`` (int64, at most 32, each in [-2**15, 2**15)) define the linear
    predictor ``sum(coefs[j] * x[i-1-j]) >> shift`` (no coefficient: no prediction), then
    ``adaptive`` (0 or 1) the "adaptive" stage's LMS cascade; residual tokens are ``r - lo``
    in ``[0, size)``, or with ``values`` (sorted int64, ``size`` of them) the index of ``r``
    there (others escape); ``mode``, ``center`` and ``counts`` (k_0..k_L) are the "cms2" code
    (``ubpe._kernels.cmsignal2``). ``history`` (int64) is the model's.
    """

    dtype: np.dtype
    shift: int
    coefs: np.ndarray
    lo: int
    size: int
    mode: int
    center: int
    counts: np.ndarray
    history: np.ndarray
    adaptive: int = 0
    values: np.ndarray | None = None
    base: int = 1
    offset: int = 0
    digits: tuple[int, int, np.ndarray] | None = None
    _cache: dict = field(default_factory=dict, repr=False, compare=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def fields(self) -> dict[str, Any]:
        out = {"shift": self.shift, "coefs": [int(c) for c in self.coefs], "adaptive": self.adaptive,
               "lo": self.lo, "size": self.size, "mode": self.mode, "center": self.center,
               "counts": [int(k) for k in self.counts]}
        if self.values is not None:
            out["values"] = self.values.astype("<i8").tobytes()
        if self.base > 1:
            mode, center, counts = self.digits
            out.update(base=self.base, offset=self.offset, digits=[mode, center, [int(k) for k in counts]])
        return out

    def tokens(self, r: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(tokens, positions outside): the int32 tokens of the residuals ``r`` (int64), a
        residual the variant has no token for given the nearest (range: clipped; ``values``:
        the first value at or above it, else the last) and its position listed."""
        if self.values is None:
            t = r - self.lo
            return np.clip(t, 0, self.size - 1).astype(np.int32), np.flatnonzero((t < 0) | (t >= self.size))
        idx = np.minimum(np.searchsorted(self.values, r), self.size - 1)
        return idx.astype(np.int32), np.flatnonzero(self.values[idx] != r)

    def residuals(self, tokens: np.ndarray) -> np.ndarray:
        """The residuals (int64) the tokens stand for."""
        return tokens.astype(np.int64) + self.lo if self.values is None else self.values[tokens]

    @property
    def predictor(self) -> str:
        """The predictor in words: "none", "delta1", "delta2" or "lpc order N", "+adaptive"."""
        c = [int(v) for v in self.coefs]
        name = "none" if not c else (f"delta{len(c)}" if self.shift == 0 and c in ([1], [2, -1])
                                     else f"lpc order {len(c)}")
        return (("mult+" if self.base > 1 else "") + name + ("+adaptive" if self.adaptive else "")
                + (" (dense)" if self.values is not None else ""))


@dataclass(frozen=True, eq=False)
class SharedModel:
    """A model shared by many small windows (module docstring): the values' ``dtype``, the
    ``history`` (int64: the training windows' last values, whose residuals prime the coder)
    and one to :data:`MAX_VARIANTS` :class:`Variant` (predictor and code). Build one with
    :func:`fit_shared`; :meth:`to_bytes` / :meth:`save` and :meth:`from_bytes` / :meth:`load`."""

    dtype: np.dtype
    history: np.ndarray
    variants: tuple[Variant, ...]
    _cache: dict = field(default_factory=dict, repr=False, compare=False)

    def body(self) -> bytes:
        """The msgpack body the file holds (and the digest covers)."""
        cached = self._cache.get("body")
        if cached is None:
            cached = msgpack.packb({
                "dtype": self.dtype.str, "history": self.history.astype(self.dtype.newbyteorder("<")).tobytes(),
                "variants": [v.fields() for v in self.variants]}, use_bin_type=True)
            self._cache["body"] = cached
        return cached

    @property
    def digest(self) -> str:
        """SHA-256 of the body, hex; a window container stores its first :data:`REF_BYTES` bytes."""
        return hashlib.sha256(self.body()).hexdigest()

    @property
    def ref(self) -> bytes:
        return bytes.fromhex(self.digest)[:REF_BYTES]

    def to_bytes(self) -> bytes:
        """The model file (docs/format.md, "Shared-model files"); equal models, equal bytes."""
        body = self.body()
        return seal(MODEL_MAGIC, 2 if any(v.base > 1 for v in self.variants) else 1, body)

    @classmethod
    def from_bytes(cls, data: Any) -> "SharedModel":
        """The model of a file's bytes, every field checked (CorruptDataError, FormatVersionError)."""
        return _parse_model(data)

    def save(self, path: str) -> None:
        with open(path, "wb") as f:
            f.write(self.to_bytes())

    @classmethod
    def load(cls, path: str) -> "SharedModel":
        with open(path, "rb") as f:
            return cls.from_bytes(f.read())

    def __repr__(self) -> str:
        return (f"SharedModel(dtype={self.dtype.str!r}, history={self.history.size}, "
                f"variants={[v.predictor for v in self.variants]})")


def is_shared_model_file(data: bytes) -> bool:
    """Whether ``data`` starts as a shared-model file (its msgpack map's first key and magic)."""
    head = msgpack.packb({"magic": MODEL_MAGIC}, use_bin_type=True)[1:]  # without the map's length byte
    return len(data) > len(head) and bytes(data[1:1 + len(head)]) == head


def _parse_model(data: Any) -> SharedModel:
    version, body = open_sealed(data, MODEL_MAGIC, MODEL_VERSION, "shared model")
    f = unpack(body, "shared model body")
    if not isinstance(f, dict) or set(f) != {"dtype", "history", "variants"}:
        raise CorruptDataError("shared model: the body must hold exactly 'dtype', 'history' and 'variants'")
    if f["dtype"] not in DTYPES:
        raise CorruptDataError(f"shared model: dtype must be one of {DTYPES}, got {str(f['dtype'])[:20]!r}")
    dtype = np.dtype(f["dtype"])
    raw = f["history"]
    little = dtype.newbyteorder("<")
    if not isinstance(raw, bytes) or len(raw) % little.itemsize or len(raw) // little.itemsize > MAX_HISTORY:
        raise CorruptDataError(f"shared model: 'history' must be bytes of at most {MAX_HISTORY} {little.str} values")
    history = np.frombuffer(raw, little).astype(np.int64)
    variants = f["variants"]
    if not isinstance(variants, list) or not 1 <= len(variants) <= MAX_VARIANTS:
        raise CorruptDataError(f"shared model: 'variants' must be a list of 1 to {MAX_VARIANTS} maps")
    parsed = tuple(_parse_variant(v, dtype, history) for v in variants)
    if version < 2 and any(v.base > 1 for v in parsed):
        raise CorruptDataError("shared model: a split variant ('base') needs a version-2 file")
    return SharedModel(dtype, history, parsed)


def _parse_variant(f: Any, dtype: np.dtype, history: np.ndarray) -> Variant:
    keys = {"shift", "coefs", "adaptive", "lo", "size", "mode", "center", "counts"}
    split = {"base", "offset", "digits"}
    if not isinstance(f, dict) or not keys <= set(f) <= keys | {"values"} | split or (split & set(f) and not split <= set(f)):
        raise CorruptDataError(f"shared model: a variant must hold exactly {sorted(keys)}, optionally 'values', "
                               "optionally 'base', 'offset' and 'digits' together")
    shift = _int(f, "shift", 0, 31)
    coefs = f["coefs"]
    if not isinstance(coefs, list) or len(coefs) > _MAX_ORDER or not all(
            type(c) is int and -_MAX_COEF <= c < _MAX_COEF for c in coefs):
        raise CorruptDataError(f"shared model: 'coefs' must be at most {_MAX_ORDER} ints in [-2**15, 2**15)")
    adaptive = _int(f, "adaptive", 0, 1)
    lo = _int(f, "lo", -(1 << 62), 1 << 62)
    size = _int(f, "size", 2, MAX_SIZE)
    mode = _int(f, "mode", 0, 2)
    center = _int(f, "center", 0, size - 1)
    counts = f["counts"]
    if not isinstance(counts, list) or not all(type(k) is int and 0 <= k <= size for k in counts):
        raise CorruptDataError("shared model: 'counts' must be a list of ints in [0, size]")
    from .._kernels.cmsignal2 import header_bytes, parse_header

    cnt = np.array(counts, np.int64)
    if not 2 <= cnt.size <= 31 or parse_header(header_bytes(mode, center, cnt), size) is None:
        raise CorruptDataError("shared model: 'counts' is not a complete prefix code for 'size' tokens")
    if int(cnt.sum()) != size:
        raise CorruptDataError("shared model: the code must cover every token (sum of 'counts' = size)")
    values = None
    if "values" in f:
        raw = f["values"]
        if not isinstance(raw, bytes) or len(raw) != 8 * size:
            raise CorruptDataError("shared model: 'values' must be bytes of 'size' <i8")
        values = np.frombuffer(raw, "<i8").astype(np.int64)
        if np.any(np.diff(values) <= 0):
            raise CorruptDataError("shared model: 'values' must be strictly increasing")
        if lo != 0:
            raise CorruptDataError("shared model: 'lo' is 0 when a variant lists its 'values'")
    base, offset, digits = 1, 0, None
    if "base" in f:
        from ..frontend.mult import MAX_MULT_BASE

        base = _int(f, "base", 2, MAX_MULT_BASE)
        offset = _int(f, "offset", 0, base - 1)
        d = f["digits"]
        if not (isinstance(d, list) and len(d) == 3 and type(d[0]) is int and 0 <= d[0] <= 2 and type(d[1]) is int
                and 0 <= d[1] < base and isinstance(d[2], list) and all(type(k) is int and 0 <= k <= base for k in d[2])):
            raise CorruptDataError("shared model: 'digits' must be [mode, center, counts] of a code of 'base' tokens")
        dc = np.array(d[2], np.int64)
        if not 2 <= dc.size <= 31 or int(dc.sum()) != base or parse_header(header_bytes(d[0], d[1], dc), base) is None:
            raise CorruptDataError("shared model: 'digits' is not a complete prefix code for 'base' tokens")
        digits = (d[0], d[1], dc)
    return Variant(dtype, shift, np.array(coefs, np.int64), lo, size, mode, center, cnt, history, adaptive, values,
                   base, offset, digits)


def _int(d: dict, key: str, lo: int, hi: int) -> int:
    v = d[key]
    if type(v) is not int or not lo <= v <= hi:
        raise CorruptDataError(f"shared model: {key!r} must be an int in [{lo}, {hi}]")
    return v
