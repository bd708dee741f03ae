"""Argument checks, field checks for untrusted data, and input normalisation: the one place.

One rule for the whole library:

- an argument of the wrong *type* raises ``TypeError``;
- an argument of the right type but a wrong *value* raises ``ValueError``;
- *data* that fails to parse or is inconsistent (container bytes, model bytes, any field read
  from outside) raises :class:`~ubpe.CorruptDataError`, and nothing else escapes a parser.

Argument checkers (``check_*``) name the parameter, the offending value and the range. Field
checkers (``field_*``, ``expect_map``) take a ``where`` that names the part of the data being
read ("container", "model", "stream", ...), so a message reads ``"stream: 'n' must be ..."``.
"""

from __future__ import annotations

import numbers
import reprlib
from collections.abc import Iterable
from typing import Any

import numpy as np

from .errors import CorruptDataError

QUANTIZE_HINT = (
    "ubpe tokenizes integer sequences: quantize floating-point signals first, for example "
    "np.round(x / step).astype(np.int32)"
)


def check_int(name: str, value: Any, low: int, high: int | None = None) -> int:
    """Return ``value`` as an int if it is an integer in [low, high], else raise."""
    if type(value) is not int:  # (a plain int first: the ABC test took about 0.3 us a call)
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
            raise TypeError(f"{name} must be an integer, got {type(value).__name__} {value!r}")
        value = int(value)
    if value < low or (high is not None and value > high):
        bound = f"[{low}, {high}]" if high is not None else f">= {low}"
        raise ValueError(f"{name} must be {bound}, got {value}")
    return value


def check_bool(name: str, value: Any) -> bool:
    """Return ``value`` as a bool if it is a Python or numpy bool, else raise ``TypeError``."""
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be a bool, got {type(value).__name__} {value!r}")
    return bool(value)


def check_choice(name: str, value: Any, choices: Iterable[Any]) -> Any:
    """Return ``value`` if it is one of ``choices``, else raise ``ValueError`` listing them."""
    options = tuple(choices)
    try:
        ok = value in options
    except TypeError:  # unhashable or uncomparable
        ok = False
    if not ok:
        raise ValueError(f"{name} must be one of {', '.join(map(repr, options))}, got {value!r}")
    return value


# ============================================================================ untrusted fields


#: How :func:`short` quotes a value: at most 3 levels and a few items of nested containers, so
#: that an untrusted value (a list nested a thousand deep, a huge map) costs a bounded message.
_QUOTE = reprlib.Repr()
_QUOTE.maxlevel, _QUOTE.maxlist, _QUOTE.maxtuple, _QUOTE.maxdict = 3, 4, 4, 4
_QUOTE.maxstring, _QUOTE.maxother, _QUOTE.maxlong = 40, 40, 40


def short(v: Any) -> str:
    """``repr(v)`` cut to 40 characters, for quoting untrusted values in messages (nested
    values are quoted to a bounded depth: never a recursion, never a long message)."""
    try:
        r = _QUOTE.repr(v)
    except Exception:  # noqa: BLE001 - a value whose repr fails is still reported
        r = f"<{type(v).__name__}>"
    return r if len(r) <= 40 else r[:37] + "..."


def expect_map(v: Any, where: str, keys: Iterable[str], optional: Iterable[str] = ()) -> dict:
    """``v`` if it is a map holding every key of ``keys``, any of ``optional`` and nothing else."""
    if not isinstance(v, dict):
        raise CorruptDataError(f"{where}: expected a map, got {type(v).__name__}")
    required = keys if isinstance(keys, tuple) else tuple(keys)
    if len(v) == len(required) and all(map(v.__contains__, required)):  # the usual case: exactly these keys
        return v
    missing = [k for k in required if k not in v]
    if missing:
        raise CorruptDataError(f"{where}: missing field(s) {missing}")
    allowed = optional if isinstance(optional, tuple) else tuple(optional)
    extra = [k for k in v if k not in required and k not in allowed]  # (short tuples: no sets built)
    if extra:
        raise CorruptDataError(f"{where}: unexpected field(s) {sorted(short(k) for k in extra)[:4]}")
    return v


def field_int(d: dict, key: str, lo: int, hi: int | None = None, *, where: str) -> int:
    """``d[key]`` if it is an int (not a bool) in ``[lo, hi]`` (``hi`` None: no upper bound)."""
    v = d[key]
    if type(v) is not int or v < lo or (hi is not None and v > hi):
        bound = f"in [{lo}, {hi}]" if hi is not None else f">= {lo}"
        raise CorruptDataError(f"{where}: '{key}' must be an int {bound}, got {short(v)}")
    return v


def field_bytes(d: dict, key: str, *, where: str, size: int | None = None, max_size: int | None = None) -> bytes:
    """``d[key]`` if it is bytes, of exactly ``size`` bytes and at most ``max_size`` when given."""
    v = d[key]
    if not isinstance(v, (bytes, bytearray)):
        raise CorruptDataError(f"{where}: '{key}' must be bytes, got {type(v).__name__}")
    v = bytes(v)
    if size is not None and len(v) != size:
        raise CorruptDataError(f"{where}: '{key}' has {len(v)} bytes, expected {size}")
    if max_size is not None and len(v) > max_size:
        raise CorruptDataError(f"{where}: '{key}' has {len(v)} bytes, at most {max_size} are allowed")
    return v


def field_str(d: dict, key: str, *, where: str, choices: Iterable[str] | None = None) -> str:
    """``d[key]`` if it is a str, one of ``choices`` when given."""
    v = d[key]
    if not isinstance(v, str):
        raise CorruptDataError(f"{where}: '{key}' must be a string, got {type(v).__name__}")
    if choices is not None:
        options = tuple(choices)
        if v not in options:
            raise CorruptDataError(f"{where}: '{key}' must be one of {list(options)}, got {short(v)}")
    return v


def is_scalar(x: Any) -> bool:
    """True for things that are one value rather than a sequence of values."""
    if isinstance(x, (str, bytes, bytearray, memoryview)):
        return False
    return np.ndim(x) == 0 if isinstance(x, (np.ndarray, np.generic)) else not isinstance(x, Iterable)


def as_sequence(seq: Any, name: str = "seq") -> np.ndarray | list:
    """One sequence as a 1-D numpy array (integer, bool, or object/str symbols) or a list.

    bytes-like input becomes uint8; ``str`` becomes a list of characters; float arrays raise
    ``TypeError`` pointing to quantization.
    """
    if isinstance(seq, (bytes, bytearray, memoryview)):
        return np.frombuffer(bytes(seq), dtype=np.uint8)
    if isinstance(seq, str):
        return list(seq)
    if not isinstance(seq, np.ndarray):
        if is_scalar(seq):
            raise TypeError(f"{name} must be a sequence of values, got the scalar {seq!r}")
        seq = list(seq)
        if all(isinstance(v, numbers.Integral) and not isinstance(v, (bool, np.bool_)) for v in seq):
            try:
                return np.asarray(seq, dtype=np.int64) if seq else np.zeros(0, dtype=np.int64)
            except OverflowError:
                return seq  # integers beyond 64 bits: handled as symbols
        if any(isinstance(v, (float, np.floating)) for v in seq):
            raise TypeError(f"{name} holds floating-point values; {QUANTIZE_HINT}")
        return seq
    if seq.ndim != 1:
        raise ValueError(
            f"{name} must be 1-D, got an array of shape {seq.shape}; flatten it with .ravel() "
            "or pass its rows as separate documents"
        )
    kind = seq.dtype.kind
    if kind in "fc":
        raise TypeError(f"{name} has dtype {seq.dtype}; {QUANTIZE_HINT}")
    if kind not in "iubOU":
        raise TypeError(f"{name} has unsupported dtype {seq.dtype}; use an integer dtype")
    return seq


def as_documents(corpus: Any) -> list[np.ndarray | list]:
    """A corpus as a list of documents.

    One sequence (a 1-D array, bytes, str, or a list of scalars) is one document; a 2-D array is
    one document per row; any other iterable is a collection of documents.
    """
    if isinstance(corpus, np.ndarray):
        if corpus.ndim == 2:
            return [as_sequence(row, "corpus row") for row in corpus]
        return [as_sequence(corpus, "corpus")]
    if isinstance(corpus, (bytes, bytearray, memoryview, str)):
        return [as_sequence(corpus, "corpus")]
    if is_scalar(corpus):
        raise TypeError(f"corpus must be a sequence or an iterable of sequences, got {corpus!r}")
    items = list(corpus)
    # fast path for the common corpus of 1-D integer arrays, which as_sequence returns as they are
    if items and {type(v) for v in items} == {np.ndarray}:
        shapes = {(v.ndim, v.dtype) for v in items}
        if all(ndim == 1 and dtype.kind in "iub" for ndim, dtype in shapes):
            return items
    if items and all(is_scalar(v) for v in items):
        return [as_sequence(items, "corpus")]
    return [as_sequence(doc, f"document {i}") for i, doc in enumerate(items)]


def dtype_of(doc: np.ndarray | list) -> np.dtype:
    """The dtype that decoding gives back for values like ``doc``'s."""
    if isinstance(doc, np.ndarray):
        return doc.dtype
    if doc and all(isinstance(v, str) for v in doc):
        return np.dtype("<U1") if all(len(v) == 1 for v in doc) else np.dtype(object)
    return np.dtype(object)


def check_ids(ids: Any, vocab_size: int, what: str, dtype: Any) -> np.ndarray:
    """``ids``, a 1-D sequence of integer token ids in ``[0, vocab_size)``, as ``dtype``.

    ``TypeError`` for text, bytes or non-integers, ``ValueError`` for another shape or an id out
    of range (naming the first one and its position); ``what`` names the argument ("tokens").
    """
    if isinstance(ids, (bytes, bytearray, memoryview, str)):
        raise TypeError(f"{what} must be a sequence of integer ids, got text or bytes")
    arr = np.asarray(ids)
    if arr.size == 0:
        return np.zeros(0, dtype=dtype)
    if arr.dtype.kind not in "iu":
        raise TypeError(f"{what} must be integers, got dtype {arr.dtype}")
    if arr.ndim != 1:
        raise ValueError(f"{what} must be 1-D, got shape {arr.shape}")
    if int(arr.min()) < 0 or int(arr.max()) >= vocab_size:  # reductions: no temporaries
        i = int(np.argmax((arr < 0) | (arr >= vocab_size)))
        raise ValueError(f"token id {arr[i].item()} at position {i} is out of range: ids are in [0, {vocab_size})")
    return arr.astype(dtype, copy=False)
