"""Input normalisation and checks shared by the public API.

Every function here either returns data in the one shape the rest of the library expects, or
raises a builtin ``TypeError``/``ValueError`` whose message names the parameter, the offending
value and the fix.
"""

from __future__ import annotations

import numbers
from collections.abc import Iterable
from typing import Any

import numpy as np

QUANTIZE_HINT = (
    "ubpe tokenizes integer sequences: quantize floating-point signals first, for example "
    "np.round(x / step).astype(np.int32)"
)


def check_int(name: str, value: Any, low: int, high: int | None = None) -> int:
    """Return ``value`` as an int if it is an integer in [low, high], else raise."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an integer, got {type(value).__name__} {value!r}")
    value = int(value)
    if value < low or (high is not None and value > high):
        bound = f"[{low}, {high}]" if high is not None else f">= {low}"
        raise ValueError(f"{name} must be {bound}, got {value}")
    return value


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
