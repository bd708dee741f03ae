"""Shared models for small windows: what a window would otherwise pay for alone, fitted once.

A fleet of sensors sends short windows (a thousand values). Compressed alone, each window pays
for its front-end parameters, its coder's tables and, above all, an adaptive coder that starts
cold. A :class:`SharedModel`, fitted on a few windows (:func:`fit_shared`), carries all three:

* up to :data:`DEFAULT_VARIANTS` *variants*, chosen by the size they give on held-out training
  windows among: a fixed integer linear predictor (none, delta 1, delta 2, or LPC coefficients
  fitted on the training windows), with or without the "adaptive" stage's LMS cascade after it;
  residual tokens over a range (``[lo, lo + size)``, a margin of half the training residuals'
  span each side) or, *dense*, over the distinct training residuals (when they are fewer than
  half their span: values on a grid); and the "cms2" coder's binary code (mode, center, code
  lengths) fitted on them. Each window takes the variant that codes it smallest;
* a *split* ("mult", for an ADC's noisy low digits ``x = base * q + offset + d``) when it pays
  on the training windows: split variants predict ``q`` and code the digits ``d`` in a stream of
  their own with a code fitted on the training digits;
* the *history*: the training windows' last values (at most ``history``), run through the
  variant's chain before the window, so that the LMS weights are warm and the history's
  residual tokens, the *primer*, warm the context mixer: a window is coded as the continuation
  of the training data.

Priming needs no change to the coder: the "cms2" kernel codes ``primer + window`` in one
stream; the bytes it emits while coding the primer depend on the primer alone (a carry-less
arithmetic coder never revises a byte it wrote), so the container stores only ``skip`` (how many
leading bytes equal those of ``primer + zeros``, which the reader recomputes) and the bytes
after them. The reader codes ``primer + zeros(n)`` (cached per window length), joins the two,
decodes ``primer + window`` and checks the primer came back. A window unlike the training
data's end (a drifting recording) may be coded *cold*: without the primer, when that is smaller.

:func:`compress_window` writes the *window container* (docs/format.md, "Window containers"),
or the ordinary container of ``ubpe.compress`` when that is not larger (never larger than
compressing alone); :func:`decompress_window` reads it. ``ubpe.compress(x, tokenizer=model)``
and ``ubpe.decompress(data, tokenizer=model)`` call them for a :class:`SharedModel`.
"""

from __future__ import annotations

import hashlib
import threading
from dataclasses import dataclass, field
from typing import Any, Sequence

import msgpack
import numpy as np

from ._validate import check_int
from .errors import CorruptDataError, FormatVersionError
from .format.sealed import open_sealed, seal, unpack

__all__ = ["SharedModel", "fit_shared", "compress_window", "decompress_window", "WINDOW_MAGIC", "MODEL_MAGIC",
           "DEFAULT_PRIMER", "DEFAULT_TRAINING_WINDOWS"]

#: The first 4 bytes of a window container (an ordinary container starts with ``b"ubpe"``).
WINDOW_MAGIC = b"ubpw"
#: The window-container version this ubpe writes, and the newest it reads (1 and 2 are read too).
WINDOW_VERSION = 3
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
#: Variants :func:`fit_shared` keeps by default (the best on held-out training windows).
DEFAULT_VARIANTS = 3
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
    from ._kernels.cmsignal2 import header_bytes, parse_header

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
        from .frontend.mult import MAX_MULT_BASE

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


# ============================================================================ prediction


def _residual(x: np.ndarray, shift: int, coefs: np.ndarray) -> np.ndarray:
    """``x[i] - (sum_j coefs[j] x[i-1-j] >> shift)`` as int64 (mod 2**64; the first ``order``
    values predicted by the previous one): ``ubpe._kernels.predict.lpc_filter``, one block."""
    from ._kernels import predict

    s = np.ascontiguousarray(x, dtype=np.int64)
    out = np.empty_like(s)
    if s.size:
        predict.lpc_filter(s, s.size, np.array([coefs.size], np.int64), np.array([shift], np.int64),
                           np.ascontiguousarray(coefs, np.int64), 0, False, out)
    return out


def _restore(r: np.ndarray, shift: int, coefs: np.ndarray) -> np.ndarray:
    """The inverse of :func:`_residual` (int64)."""
    from ._kernels import predict

    out = np.empty_like(r)
    if r.size:
        predict.lpc_filter(np.ascontiguousarray(r), r.size, np.array([coefs.size], np.int64),
                           np.array([shift], np.int64), np.ascontiguousarray(coefs, np.int64), 0, True, out)
    return out


def _lms(r: np.ndarray, inverse: bool) -> np.ndarray:
    """The "adaptive" stage's default sign-sign LMS cascade over int64 ``r`` (or its inverse)."""
    from .frontend.adaptive import DEFAULT_STAGES, adaptive_rows

    return adaptive_rows(r.reshape(1, -1), [list(st) for st in DEFAULT_STAGES], inverse=inverse)[0].astype(np.int64)


def _quotients(model: Variant, x: np.ndarray) -> np.ndarray:
    """``x`` (int64), or of a split variant its quotients ``(x - offset) // base``."""
    return (x - model.offset) // model.base if model.base > 1 else x


def _chain_forward(model: Variant, v: np.ndarray, restart: bool = False) -> np.ndarray:
    """The residuals of ``history + v`` (int64), predicted by the model's chain (of the
    quotients ``(x - offset) // base`` of a split variant). ``restart`` (window containers from
    version 3): the window's first value is predicted as without it, from the history; from the
    second on, the linear predictor uses no value before the window (the next ``order - 1``
    values predicted by the value before, as at the start of a block): a window is rarely the
    continuation of the history, and a predictor of order 32 fed the jump at the join pays for
    it 32 times. (The same residuals as without restart for no predictor and delta 1.) The LMS
    cascade runs on over the join."""
    if not restart or not model.history.size or not v.size:
        r = _residual(_quotients(model, np.concatenate((model.history, v))), model.shift, model.coefs)
    else:
        hq = _quotients(model, model.history)
        q = _quotients(model, v)
        window = _residual(q, model.shift, model.coefs)
        window[:1] = q[:1] - np.int64(_first_prediction(model, hq))
        r = np.concatenate((_residual(hq, model.shift, model.coefs), window))
    return _lms(r, False) if model.adaptive else r


def _first_prediction(model: Variant, hq: np.ndarray) -> int:
    """The prediction (int64) of the value after the history's (quotients) ``hq``: the linear
    predictor over its last values (as :func:`_residual` over ``hq`` joined with that value)."""
    tail = np.concatenate((hq[max(0, hq.size - model.coefs.size):], np.zeros(1, np.int64)))
    return -int(_residual(tail, model.shift, model.coefs)[-1])


def _chain_inverse(model: Variant, r: np.ndarray, restart: bool = False) -> np.ndarray:
    """The values (int64) of the window residuals ``r`` (:func:`_chain_forward` inverted; of a
    split variant: the quotients)."""
    h = model.history.size
    full = np.concatenate((_primer_residuals(model), r))
    if model.adaptive:
        full = _lms(full, True)
    if not restart or not h or not r.size:
        return _restore(full, model.shift, model.coefs)[h:]
    window = full[h:].copy()
    window[:1] += np.int64(_first_prediction(model, _quotients(model, model.history)))  # (wraps, as the filter)
    return _restore(window, model.shift, model.coefs)


def _primer_residuals(model: Variant) -> np.ndarray:
    """The history's residuals (cached)."""
    r = model._cache.get("primer_residuals")
    if r is None:
        r = _chain_forward(model, np.zeros(0, np.int64))
        model._cache["primer_residuals"] = r
    return r


def _primer(model: Variant) -> np.ndarray:
    """The primer tokens: the history's residuals as tokens (cached)."""
    t = model._cache.get("primer")
    if t is None:
        t = model.tokens(_primer_residuals(model))[0]
        model._cache["primer"] = t
    return t


# ============================================================================ the primed coder


def _kernels():
    from ._kernels import cmsignal2

    return cmsignal2


def _encode_tokens(model: Variant, tokens: np.ndarray) -> bytes:
    """The "cms2" coder's bytes (no header: the model's code) for ``tokens`` (int32, in [0, size))."""
    k = _kernels()
    n = int(tokens.size)
    size = n * 4 + 64
    while True:
        buf = np.zeros(size, np.uint8)
        length = int(k._code(tokens, n, model.size, buf, False, model.mode, model.center, model.counts,
                             k._adapt_table()))
        if length <= size:
            return buf[:length].tobytes()
        size = length


def _skip_bound(model: Variant) -> int:
    """Most leading bytes a window may take from the reader's ``primer + zeros``: the bytes the
    primer takes coded alone, plus a margin (bounds the reader's work: :func:`_check_work`)."""
    bound = model._cache.get("skip_bound")
    if bound is None:
        bound = len(_encode_tokens(model, _primer(model))) + 64 if _primer(model).size else 0
        model._cache["skip_bound"] = bound
    return bound


def _zeros_stream(model: Variant, n: int) -> bytes:
    """The first :func:`_skip_bound` bytes of ``primer + zeros(n)`` coded (cached per ``n``)."""
    key = ("zeros", n)
    z = model._cache.get(key)
    if z is None:
        tokens = np.concatenate((_primer(model), np.zeros(n, np.int32)))
        z = _encode_tokens(model, tokens)[:_skip_bound(model)]
        with model._lock:
            if len(model._cache) > 64:  # window lengths seen: keep a few
                for old in [k for k in model._cache if isinstance(k, tuple)][:32]:
                    model._cache.pop(old, None)
            model._cache[key] = z
    return z


def _check_work(n_all: int, nbytes: int) -> bool:
    """Whether ``n_all`` tokens may come from ``nbytes`` coder bytes (``cms2``'s bound)."""
    from .coders._cm import within_bound

    return within_bound(n_all, nbytes)


def _primed_stream(model: Variant, tokens: np.ndarray, cold: bool = False) -> tuple[int, bytes] | None:
    """(skip, rest) of ``tokens`` coded after the primer (``cold``: without it, skip 0), or None
    when the reader's work bound refuses them (a window that codes to almost nothing: the
    ordinary container takes it)."""
    n = int(tokens.size)
    if cold:
        rest = _encode_tokens(model, tokens)
        return (0, rest) if _check_work(n, len(rest)) else None
    full = _encode_tokens(model, np.concatenate((_primer(model), tokens)))
    z = _zeros_stream(model, n)
    limit = min(len(z), len(full))
    a = np.frombuffer(full[:limit], np.uint8)
    b = np.frombuffer(z[:limit], np.uint8)
    diff = np.flatnonzero(a != b)
    skip = int(diff[0]) if diff.size else limit
    rest = full[skip:]
    if not _check_work(_primer(model).size + n, skip + len(rest)):
        return None
    return skip, rest


def _digit_coder(model: Variant, primed: bool = False) -> Variant:
    """The code of a split variant's digits ``(x - offset) % base``, cached: without primer, or
    (``primed``, window containers from version 3) with the history's digits as its primer."""
    key = "digits_primed" if primed else "digits"
    c = model._cache.get(key)
    if c is None:
        mode, center, counts = model.digits
        c = Variant(model.dtype, 0, np.zeros(0, np.int64), 0, model.base, mode, center, counts, np.zeros(0, np.int64))
        if primed:  # (the digits of a noisy ADC are near independent: their statistics are what the primer gives)
            c._cache["primer"] = ((model.history - model.offset) % model.base).astype(np.int32)
        model._cache[key] = c
    return c


def _primed_decode(model: Variant, n: int, skip: int, rest: bytes, cold: bool = False) -> np.ndarray:
    """The ``n`` window tokens of (skip, rest) (``cold``: ``rest`` codes them without the primer)."""
    from .coders._cm import raise_status

    k = _kernels()
    if cold:
        if not _check_work(n, len(rest)):
            raise CorruptDataError(f"window: {n} values cannot come from {len(rest)} coder bytes")
        out = np.empty(n, np.int32)
        raise_status(int(k._code(out, n, model.size, np.frombuffer(rest, np.uint8).copy(), True, model.mode,
                                 model.center, model.counts, k._adapt_table())), model.size)
        return out
    p = int(_primer(model).size)
    if skip > _skip_bound(model):
        raise CorruptDataError(f"window: skip = {skip} is more than the model's primer can give ({_skip_bound(model)})")
    if not _check_work(p + n, skip + len(rest)):
        raise CorruptDataError(f"window: {n} values cannot come from {skip + len(rest)} coder bytes")
    z = _zeros_stream(model, n)
    if skip > len(z):
        raise CorruptDataError(f"window: skip = {skip} is more than the {len(z)} bytes the model's primer gives")
    buf = np.frombuffer(z[:skip] + rest, np.uint8).copy()
    out = np.empty(p + n, np.int32)
    raise_status(int(k._code(out, p + n, model.size, buf, True, model.mode, model.center, model.counts,
                             k._adapt_table())), model.size)
    if not np.array_equal(out[:p], _primer(model)):
        raise CorruptDataError("window: the primer did not decode as the model's (a different model, or damaged bytes)")
    return out[p:]


# ============================================================================ fitting


def _code_of(tokens: np.ndarray, size: int) -> tuple[int, int, np.ndarray]:
    """(mode, center, counts) of a "cms2" code over every token of ``[0, size)``, fitted to
    ``tokens`` (as ``cmsignal2.plan``, each rank's count scaled by 8 plus one: every rank
    gets a code)."""
    k = _kernels()
    t = np.ascontiguousarray(tokens, np.int32)
    center = int(np.partition(t, (t.size - 1) // 2)[(t.size - 1) // 2]) if t.size else size // 2
    best = None
    ranks = k._rank_counts(t, size, center) if t.size else (np.zeros(0, np.int64),) * 3
    for mode, counts in enumerate(ranks):
        full = np.zeros(size, np.int64)
        full[:counts.size] = counts[:size]
        w = np.sort(full * _SMOOTH + 1)
        lengths = k._code_lengths(w)
        cost = int((w[::-1] * lengths).sum())
        if best is None or cost < best[0]:
            best = (cost, mode, lengths)
    _, mode, lengths = best
    return mode, center, np.bincount(lengths, minlength=int(lengths[-1]) + 1).astype(np.int64)


def _predictors(train: np.ndarray, dtype: np.dtype) -> list[tuple[int, np.ndarray]]:
    """The candidate predictors: none, delta 1, delta 2, and LPC fitted on ``train``."""
    from .frontend.lpc import check_lpc_params, lpc_forward

    out = [(0, np.zeros(0, np.int64)), (0, np.array([1], np.int64)), (0, np.array([2, -1], np.int64))]
    if train.size >= 64:
        block = min(train.size, 1 << 24)
        _, params = lpc_forward(train.astype(dtype.newbyteorder("=")), block=block, max_order=_MAX_ORDER)
        _, orders, shifts, coefs = check_lpc_params(params, train.size, dtype.newbyteorder("="))
        order = int(orders[0])
        if order and np.all(np.abs(coefs[:order]) < _MAX_COEF):
            out.append((int(shifts[0]), coefs[:order].astype(np.int64)))
    return out


def _split_of(joined: np.ndarray, dtype: np.dtype) -> tuple[int, int]:
    """``(base, offset)`` of the "mult" split that pays on the training values (``mult_detect``),
    or ``(1, 0)``."""
    from .frontend.mult import mult_detect

    if joined.size < 64:
        return 1, 0
    return tuple(int(v) for v in mult_detect(joined.astype(dtype.newbyteorder("="))))


def _model_for(values: list[np.ndarray], dtype: np.dtype, shift: int, coefs: np.ndarray, adaptive: int,
               history: int, dense: bool = False, split: tuple[int, int] = (1, 0)) -> Variant | None:
    """The model of the predictor ``(shift, coefs, adaptive)`` fitted on the windows ``values``
    (int64): its residuals' range with a margin of half their span each side, or (``dense``)
    the distinct residuals with a few more on their grid beyond each end (None when they are
    not fewer than half their span: the range then), the code, the last ``history`` values."""
    joined = np.concatenate(values)
    base, offset = split
    digits = None
    if base > 1:
        digits = _code_of(((joined - offset) % base).astype(np.int32), base)
    bare = Variant(dtype, shift, coefs, 0, 2, 0, 0, np.array([0, 2], np.int64), np.zeros(0, np.int64), adaptive,
                   None, base, offset, digits)
    flat = _chain_forward(bare, joined)
    lo, hi = int(flat.min()), int(flat.max())
    table = None
    if dense:
        distinct = np.unique(flat)
        if distinct.size < 2 or 2 * distinct.size > hi - lo + 1 or 2 * distinct.size > MAX_SIZE:
            return None
        gap = max(1, int(np.median(np.diff(distinct))))
        more = max(2, distinct.size // 4)
        steps = gap * np.arange(1, more + 1, dtype=np.int64)
        table = np.concatenate((lo - steps[::-1], distinct, hi + steps))
        lo, size = 0, int(table.size)
    else:
        margin = max(2, int((hi - lo) / _MARGIN))
        lo, hi = lo - margin, hi + margin
        if hi - lo + 1 > MAX_SIZE:  # the central residuals; the others escape
            mid = int(np.median(flat))
            lo, hi = mid - MAX_SIZE // 2, mid + MAX_SIZE // 2 - 1
        size = hi - lo + 1
    kept = flat[flat.size - min(history, flat.size):]
    v = Variant(dtype, shift, coefs, lo, size, 0, 0, np.array([0, 2], np.int64), bare.history, adaptive, table)
    mode, center, counts = _code_of(v.tokens(kept)[0], size)
    return Variant(dtype, shift, coefs, lo, size, mode, center, counts,
                   np.ascontiguousarray(joined[joined.size - min(history, joined.size):]), adaptive, table,
                   base, offset, digits)


def fit_shared(windows: Sequence[Any], *, history: int = DEFAULT_PRIMER, variants: int = DEFAULT_VARIANTS) -> SharedModel:
    """A :class:`SharedModel` fitted on ``windows`` (a sequence of 1-D integer arrays of one
    dtype, of :data:`DTYPES`; e.g. 10 windows like the ones it will code).

    Every predictor (none, delta 1, delta 2 or LPC fitted on all the windows, each with or
    without the "adaptive" LMS cascade after it; and when the values' low digits are skewed, as
    ``ubpe.frontend.mult.mult_detect`` finds, the same of the quotients, split variants whose
    digits are coded apart) is sized on the last fifth of the windows,
    primed with the others; the model keeps the ``variants`` smallest, and the smallest
    without a predictor when none of them is (CRLZ seismometer at 1 000 values: -2.9 % ->
    -4.0 %: windows of noise after an event; at most :data:`MAX_VARIANTS`) (refitted on all the
    windows: each window is then coded by the one of them that codes it smallest) and the
    last ``history`` values of the windows (joined), whose residuals prime the coder (0: no
    primer). Deterministic.
    """
    if isinstance(windows, np.ndarray) and windows.ndim == 1:
        raise TypeError("windows must be a sequence of 1-D arrays (pass [x] for one window)")
    ws = [np.asarray(w) for w in windows]
    if not ws:
        raise ValueError("windows must hold at least one window")
    history = check_int("history", history, 0, MAX_HISTORY)
    variants = check_int("variants", variants, 1, MAX_VARIANTS)
    dtypes = {w.dtype.str for w in ws}
    if len(dtypes) != 1 or ws[0].dtype.str not in DTYPES:
        raise TypeError(f"windows must share one dtype of {DTYPES}, got {sorted(dtypes)}")
    if any(w.ndim != 1 for w in ws):
        raise ValueError("every window must be 1-D")
    if sum(w.size for w in ws) < 2:
        raise ValueError("the windows must hold at least 2 values")
    dtype = ws[0].dtype
    values = [w.astype(np.int64) for w in ws]
    held = max(1, len(ws) // 5) if len(ws) >= 2 else 0
    ranked = []
    joined = np.concatenate(values)
    candidates = [((1, 0), p) for p in _predictors(joined, dtype)]
    split = _split_of(joined, dtype)
    if split[0] > 1:  # an ADC's noisy low digits: the quotients predicted, the digits coded apart
        candidates += [(split, p) for p in _predictors((joined - split[1]) // split[0], dtype)]
    for i, (split, (shift, coefs)) in enumerate(candidates):
        for j, (adaptive, dense) in enumerate(((0, False), (1, False), (0, True), (1, True))):
            if _model_for(values, dtype, shift, coefs, adaptive, history, dense, split) is None:
                continue  # (dense: not fewer distinct residuals than half their span)
            cost = 0
            if held:  # (primed: a window coded cold is rarer, and ranking on it picked worse variants)
                trial = _model_for(values[:-held], dtype, shift, coefs, adaptive, history, dense, split)
                for w in ws[-held:]:
                    coded = None if trial is None else _variant_bytes(trial, w, version=WINDOW_VERSION)
                    cost += len(coded[1]) + len(coded[2] or b"") if coded is not None else 10 * w.size
            ranked.append((cost, 4 * i + j, shift, coefs, adaptive, dense, split))
    ranked.sort(key=lambda r: r[:2])
    picked = ranked[:variants]
    nones = [r for r in ranked if len(r[3]) == 0]  # (no predictor: the context mixer on the values)
    if nones and not any(len(r[3]) == 0 for r in picked) and len(picked) < MAX_VARIANTS:
        picked.append(nones[0])  # for windows of noise, which held-out windows may not show
    chosen = [_model_for(values, dtype, shift, coefs, adaptive, history, dense, split)
              for _, _, shift, coefs, adaptive, dense, split in picked]
    return SharedModel(dtype, chosen[0].history, tuple(chosen))


# ============================================================================ window containers


def _variant_bytes(v: Variant, arr: np.ndarray, cold: bool = False, version: int = 2,
                   restart: bool | None = None) -> tuple[int, bytes, bytes | None] | None:
    """(skip, rest, esc) of ``arr`` coded with the variant ``v`` (``cold``: the coder without
    the primer, skip 0), or None when it cannot. A split variant's ``rest`` starts with the
    digits' stream: its length (varint), then it; from ``version`` 3 the digits are primed with
    the history's: ``bound - skip`` of their stream (varint) first, then its length and rest."""
    from .format.fields import escape_field

    flat = np.ascontiguousarray(arr.reshape(-1)).astype(np.int64)
    r = _chain_forward(v, flat, restart=version >= 3 if restart is None else restart)[v.history.size:]
    tokens, outside = v.tokens(r)
    coded = _primed_stream(v, tokens, cold)
    if coded is None:
        return None
    esc = escape_field(r, outside) if outside.size else None
    if v.base == 1:
        return coded[0], coded[1], esc
    digit_tokens = ((flat - v.offset) % v.base).astype(np.int32)
    if version >= 3:
        dc = _digit_coder(v, primed=True)
        primed = _primed_stream(dc, digit_tokens)
        if primed is None:
            return None
        skip, digits = primed
        return coded[0], _varint(_skip_bound(dc) - skip) + _varint(len(digits)) + digits + coded[1], esc
    digits = _encode_tokens(_digit_coder(v), digit_tokens)
    if not _check_work(flat.size, len(digits)):
        return None
    return coded[0], _varint(len(digits)) + digits + coded[1], esc


def _window_bytes(model: SharedModel, arr: np.ndarray, source: dict | None = None,
                  version: int = WINDOW_VERSION) -> bytes | None:
    """The window container (``version`` 1, 2 or 3) of ``arr`` (any shape, a dtype of
    :data:`DTYPES`) with the variant that gives the smallest (the first on ties), or None when
    no variant can code it."""
    from .format.container import values_crc

    if arr.dtype.str not in DTYPES or arr.size == 0:
        return None
    native = np.ascontiguousarray(arr.reshape(-1)).astype(arr.dtype.newbyteorder("<"), copy=False)
    crc = values_crc(arr.dtype, list(arr.shape), native)
    dtype = DTYPES.index(arr.dtype.str)
    shape = None if arr.ndim == 1 else [int(d) for d in arr.shape]
    best = None
    for i, v in enumerate(model.variants):
        if version == 1 and v.base > 1:
            continue  # (version 1 has no digits' stream)
        for cold in (False, True) if version >= 2 and v.history.size else (False,):
            coded = _variant_bytes(v, native, cold, version)
            if coded is None:
                continue
            skip, rest, esc = coded
            if version == 1:
                fields = [model.ref, i, dtype, shape, int(arr.size), skip, rest, esc, crc]
                body = msgpack.packb(fields + ([source] if source is not None else []), use_bin_type=True)
            elif version >= 3:
                body = _body_v3(model.ref[:REF_BYTES_V3], i, dtype, shape, int(arr.size),
                                None if cold else _skip_bound(v) - skip, rest, esc, crc, source)
            else:
                body = _body_v2(model.ref[:REF_BYTES_V2], i, dtype, shape, int(arr.size),
                                None if cold else _skip_bound(v) - skip, rest, esc, crc, source)
            if best is None or len(body) < len(best):
                best = body
    return None if best is None else WINDOW_MAGIC + bytes([version]) + best


def _varint(v: int) -> bytes:
    """LEB128 of ``v >= 0``."""
    out = bytearray()
    while True:
        out.append((v & 0x7F) | (0x80 if v > 0x7F else 0))
        v >>= 7
        if not v:
            return bytes(out)


def _body_tail(shape: list | None, esc: bytes | None, source: dict | None, crc: int, rest: bytes) -> list[bytes]:
    """The end of a version-2 or version-3 body: the optional shape, escapes and source, each
    length first, then the CRC and the coder bytes."""
    out = []
    if shape is not None:
        out += [_varint(len(shape))] + [_varint(d) for d in shape]
    if esc is not None:
        out += [_varint(len(esc)), esc]
    if source is not None:
        packed = msgpack.packb(source, use_bin_type=True)
        out += [_varint(len(packed)), packed]
    return out + [int(crc).to_bytes(4, "little"), rest]


def _body_v2(ref: bytes, index: int, dtype: int, shape: list | None, n: int, below: int | None, rest: bytes,
             esc: bytes | None, crc: int, source: dict | None) -> bytes:
    """Version 2's body (docs/format.md, "Window containers"): ``below`` = skip bound - skip,
    None for a window coded cold (no primer)."""
    flags = dtype | (_HAS_SHAPE if shape is not None else 0) | (_HAS_ESC if esc is not None else 0) | (
        _HAS_SOURCE if source is not None else 0) | (_COLD if below is None else 0)
    out = [ref, bytes([flags, index]), _varint(n)] + ([] if below is None else [_varint(below)])
    return b"".join(out + _body_tail(shape, esc, source, crc, rest))


def _body_v3(ref: bytes, index: int, dtype: int, shape: list | None, n: int, below: int | None, rest: bytes,
             esc: bytes | None, crc: int, source: dict | None) -> bytes:
    """Version 3's body (docs/format.md, "Window containers"): one byte ``16 dtype + 2 variant +
    cold``, the varint ``2 n + extras``, ``below`` (not when cold), the extras byte and fields
    when any, the CRC, the coder bytes."""
    extras = (_V3_SHAPE if shape is not None else 0) | (_V3_ESC if esc is not None else 0) | (
        _V3_SOURCE if source is not None else 0)
    out = [ref, bytes([16 * dtype + 2 * index + (below is None)]), _varint(2 * n + (extras != 0))]
    if below is not None:
        out.append(_varint(below))
    if extras:
        out.append(bytes([extras]))
    return b"".join(out + _body_tail(shape, esc, source, crc, rest))


def compress_window(values: Any, model: SharedModel, alone: bytes, *, source: dict | None = None,
                    lossy: bool = False, progress: Any = None, version: int = WINDOW_VERSION) -> bytes:
    """``values`` coded with ``model`` (what ``ubpe.compress(values, tokenizer=model, ...)``
    does): the window container, or ``alone`` (the ordinary container of ``values``, which
    :func:`ubpe.compress` builds) when that is not larger. The window container is tried for a
    numpy integer array of :data:`DTYPES` when the compression is not ``lossy`` (``step`` or
    ``bits``); it keeps ``source``. Never larger than compressing alone. ``version``: the
    window-container version to write (1 to 3; 1 and 2 only to reproduce old files)."""
    from .format.fields import argument_error, check_source

    if not isinstance(model, SharedModel):
        raise TypeError(f"model must be a ubpe.SharedModel, got {type(model).__name__}")
    version = check_int("version", version, 1, WINDOW_VERSION)
    arr = values if isinstance(values, np.ndarray) else None
    if arr is not None and not lossy:
        shared = _window_bytes(model, arr, None if source is None else check_source(source, argument_error), version)
        if shared is not None and len(shared) < len(alone):
            alone = shared
    if progress is not None:
        progress(int(arr.shape[0]) if arr is not None and arr.ndim else 1)
    return alone


def fit_inputs(docs: Sequence[np.ndarray], window: int | None = None, windows: int | None = None,
               history: int = DEFAULT_PRIMER) -> tuple[SharedModel, int]:
    """``ubpe fit --shared``: the model of ``docs`` (1-D integer arrays) cut into windows of
    ``window`` values (None: each document one window), the first ``windows`` of them (None:
    :data:`DEFAULT_TRAINING_WINDOWS`); returns the model and the windows it was fitted on."""
    if window is not None:
        check_int("window", window, 1)
    pieces = []
    for d in docs:
        d = np.asarray(d).reshape(-1)
        step = window or max(d.size, 1)
        pieces += [d[i:i + step] for i in range(0, d.size, step)]
    count = DEFAULT_TRAINING_WINDOWS if windows is None else check_int("windows", windows, 1)
    chosen = [p for p in pieces if p.size][:count]
    return fit_shared(chosen, history=history), len(chosen)


def is_window(data: Any) -> bool:
    """Whether ``data`` starts as a window container."""
    return isinstance(data, (bytes, bytearray, memoryview)) and bytes(data[:4]) == WINDOW_MAGIC


def _window_fields(data: bytes) -> list:
    """The fields of a window container: ref, variant, dtype index, shape, n, skip, rest, esc,
    crc, source (None when absent, else checked). Version 2 gives ``-1 - (skip bound - skip)``
    for skip (the bound is the variant's: :func:`_resolve_skip`), None for a window coded cold."""
    from .format.fields import check_source, data_error

    if data[4] >= 2:
        return _fields_v2(data)  # (and version 3's)
    d = unpack(data[5:], "window container")
    if not isinstance(d, list) or len(d) not in (9, 10):
        raise CorruptDataError("window: expected an array of 9 or 10 fields")
    if len(d) == 9:
        return d + [None]
    if d[9] is None:
        raise CorruptDataError("window: a 10th field (source) is a map, never nil")
    return d[:9] + [check_source(d[9], data_error)]


def _fields_v2(data: bytes) -> list:
    """:func:`_window_fields` of a version-2 container (every length checked against the bytes)."""
    from .format.fields import check_source, data_error

    pos = 5

    def take(k: int) -> bytes:
        nonlocal pos
        if k < 0 or pos + k > len(data):
            raise CorruptDataError(f"window: truncated ({len(data)} bytes; a field needs {k} more at {pos})")
        pos += k
        return data[pos - k:pos]

    def varint() -> int:
        nonlocal pos
        v = shift = 0
        while True:
            if pos >= len(data):
                raise CorruptDataError("window: truncated inside a varint")
            b = data[pos]
            pos += 1
            v |= (b & 0x7F) << shift
            shift += 7
            if not b & 0x80:
                return v
            if shift >= 63:
                raise CorruptDataError("window: a varint longer than 9 bytes")

    if data[4] >= 3:
        ref = take(REF_BYTES_V3)
        head = take(1)[0]
        count = varint()
        n, index, cold = count >> 1, (head >> 1) & 7, head & 1
        below = None if cold else varint()
        extras = take(1)[0] if count & 1 else None
        if extras is not None and (extras == 0 or extras & ~(_V3_SHAPE | _V3_ESC | _V3_SOURCE)):
            raise CorruptDataError(f"window: the extras byte must be a non-empty set of its 3 flags, got {extras}")
        extras = extras or 0
        flags = (head >> 4) | (_HAS_SHAPE if extras & _V3_SHAPE else 0) | (_HAS_ESC if extras & _V3_ESC else 0) | (
            _HAS_SOURCE if extras & _V3_SOURCE else 0)
    else:
        ref = take(REF_BYTES_V2)
        flags, index = take(2)
        n = varint()
        below = None if flags & _COLD else varint()
    shape = None
    if flags & _HAS_SHAPE:
        dims = varint()
        if dims > 32:
            raise CorruptDataError("window: a shape of more than 32 dims")
        shape = [varint() for _ in range(dims)]
    esc = take(varint()) if flags & _HAS_ESC else None
    source = None
    if flags & _HAS_SOURCE:
        source = check_source(unpack(take(varint()), "window source"), data_error)
    crc = int.from_bytes(take(4), "little")
    return [ref, index, flags & 0x0F, shape, n, None if below is None else -1 - below, data[pos:], esc, crc, source]


def _read_varint(data: bytes) -> tuple[int, int]:
    """(value, bytes used) of the LEB128 varint that starts ``data`` (at most 9 bytes)."""
    v = 0
    for i in range(min(len(data), 9)):
        v |= (data[i] & 0x7F) << (7 * i)
        if not data[i] & 0x80:
            return v, i + 1
    raise CorruptDataError("window: a truncated or overlong varint")


def _resolve_skip(v: Variant, skip: int) -> int:
    """The skip of a field from :func:`_window_fields` (version 2's ``-1 - below``) for variant ``v``."""
    if skip >= 0:
        return skip
    below = -1 - skip
    if below > _skip_bound(v):
        raise CorruptDataError(f"window: skip below the bound by {below}, more than the bound ({_skip_bound(v)})")
    return _skip_bound(v) - below


def describe_window(data: Any) -> Any:
    """The :class:`~ubpe.ContainerInfo` of a window container (``ubpe.describe``): the model
    referenced by its digest prefix, ``coder`` "cms2", ``front`` empty (the model's predictor),
    ``payload`` the coder's bytes. Nothing is decoded."""
    from .format.describe import ContainerInfo
    from .format.fields import parse_escapes

    data = bytes(data)
    _check_prefix(data)
    ref, index, dtype_str, shape, n, skip, rest, esc, crc, source = _window_fields(data)
    if not isinstance(ref, bytes) or type(n) is not int or n < 1 or not isinstance(rest, bytes):
        raise CorruptDataError("window: malformed fields")
    dtype = _window_dtype(dtype_str)
    dims = tuple(shape) if isinstance(shape, list) else (n,)
    escapes = int(parse_escapes(esc, n, np.dtype(np.int64))[0].size) if esc is not None else 0
    esc_bytes = len(msgpack.packb(esc, use_bin_type=True)) if esc is not None else 0
    payload = len(msgpack.packb(rest, use_bin_type=True))
    itemsize = dtype.itemsize
    recorded = source.get("size") if isinstance(source, dict) else None
    file_size = recorded if type(recorded) is int and recorded >= 0 else None
    return ContainerInfo(
        version=data[4], dtype=dtype.str, shape=dims, n_values=n,
        original_size=n * itemsize, size=len(data), header=len(data) - payload, model=0, freq=0, payload=payload,
        ratio=((file_size if file_size is not None else n * itemsize) / len(data)), embedded=False,
        digest=ref.hex(), alphabet_size=None, n_merges=None, coder="cms2", n_tokens=n, source=source,
        escapes=escapes, escape_bytes=esc_bytes, file_size=file_size)


def _window_dtype(index: Any) -> np.dtype:
    if type(index) is not int or not 0 <= index < len(DTYPES):
        raise CorruptDataError(f"window: the dtype must be an index into {DTYPES}")
    return np.dtype(DTYPES[index])


def _check_prefix(data: bytes) -> None:
    if not is_window(data):
        raise CorruptDataError("not a ubpe window container (bad magic)")
    if len(data) < 5:
        raise CorruptDataError("window: truncated (no version byte)")
    if data[4] > WINDOW_VERSION:
        raise FormatVersionError("this window container", data[4], WINDOW_VERSION)
    if data[4] < 1:
        raise CorruptDataError("window: invalid version 0")


def decompress_window(data: Any, model: Any, max_output_size: int | None = None) -> np.ndarray:
    """The values of a window container (``model``: the :class:`SharedModel` it references)."""
    from .format.container import values_crc
    from .format.fields import parse_escapes
    from .model import DEFAULT_MAX_OUTPUT_SIZE

    data = bytes(data)
    _check_prefix(data)
    cap = DEFAULT_MAX_OUTPUT_SIZE if max_output_size is None else check_int("max_output_size", max_output_size, 0)
    ref, index, dtype_str, shape, n, skip, rest, esc, crc, _ = _window_fields(data)
    ref_bytes = {1: REF_BYTES, 2: REF_BYTES_V2}.get(data[4], REF_BYTES_V3)
    if not isinstance(ref, bytes) or len(ref) != ref_bytes:
        raise CorruptDataError(f"window: the model reference must be {ref_bytes} bytes")
    if model is None:
        raise CorruptDataError(f"this window container references shared model {ref.hex()}...: pass "
                               "tokenizer=ubpe.SharedModel.load(path) (the model it was compressed with)")
    if not isinstance(model, SharedModel):
        raise TypeError(f"a window container needs its ubpe.SharedModel, got {type(model).__name__}")
    if ref != model.ref[:ref_bytes]:
        raise CorruptDataError(f"this window container references shared model {ref.hex()}..., "
                               f"not the given one ({model.ref.hex()}...)")
    if type(index) is not int or not 0 <= index < len(model.variants):
        raise CorruptDataError(f"window: variant {str(index)[:20]} is not one of the model's {len(model.variants)}")
    v = model.variants[index]
    dtype = _window_dtype(dtype_str)
    if type(n) is not int or n < 1:
        raise CorruptDataError("window: the value count must be a positive int")
    if n * dtype.itemsize > cap:
        raise CorruptDataError(f"window: {n} values are more than max_output_size={cap} bytes")
    if shape is None:
        dims = [n]
    elif isinstance(shape, list) and len(shape) != 1 and len(shape) <= 32 and all(
            type(s) is int and s >= 0 for s in shape) and int(np.prod(shape, dtype=object)) == n:
        dims = shape
    else:
        raise CorruptDataError("window: shape must be nil (1-D) or a list of other dims whose product is the count")
    cold = skip is None and data[4] >= 2
    if not cold and (type(skip) is not int or (skip < 0 and data[4] == 1)):
        raise CorruptDataError("window: skip must be a non-negative int")
    skip = 0 if cold else _resolve_skip(v, skip)
    if not isinstance(rest, bytes):
        raise CorruptDataError("window: the coder bytes must be bytes")
    if type(crc) is not int or not 0 <= crc < 1 << 32:
        raise CorruptDataError("window: crc must be a 32-bit unsigned int")
    digits = None
    if v.base > 1:
        if data[4] == 1:
            raise CorruptDataError("window: a version-1 container cannot use a split variant")
        if data[4] >= 3:  # the digits primed with the history's
            dc = _digit_coder(v, primed=True)
            below, used_below = _read_varint(rest)
            length, used = _read_varint(rest[used_below:])
            used += used_below
            if used + length > len(rest):
                raise CorruptDataError(f"window: a digits' stream of {length} bytes (of {len(rest) - used} left)")
            digits = _primed_decode(dc, n, _resolve_skip(dc, -1 - below), rest[used:used + length])
        else:
            length, used = _read_varint(rest)
            if used + length > len(rest) or not _check_work(n, length):
                raise CorruptDataError(f"window: a digits' stream of {length} bytes (of {len(rest) - used} left)")
            k = _kernels()
            dc = _digit_coder(v)
            digits = np.empty(n, np.int32)
            from .coders._cm import raise_status

            raise_status(int(k._code(digits, n, dc.size, np.frombuffer(rest[used:used + length], np.uint8).copy(),
                                     True, dc.mode, dc.center, dc.counts, k._adapt_table())), dc.size)
        rest = rest[used + length:]
    tokens = _primed_decode(v, n, skip, rest, cold)
    r = v.residuals(tokens)
    if esc is not None:
        positions, values = parse_escapes(esc, n, np.dtype(np.int64))
        r[positions] = values.astype(np.int64)
    x = _chain_inverse(v, r, restart=data[4] >= 3)
    if digits is not None:
        x = x * v.base + v.offset + digits
    native = dtype.newbyteorder("=")
    info = np.iinfo(native)
    if x.size and (int(x.min()) < info.min or int(x.max()) > info.max):
        raise CorruptDataError("window: the decoded values do not fit the dtype (damaged bytes)")
    out = x.astype(native)
    if values_crc(dtype, dims, out.astype(native.newbyteorder("<"), copy=False)) != crc:
        raise CorruptDataError("window: CRC mismatch (damaged bytes)")
    return out.astype(dtype).reshape(dims)
