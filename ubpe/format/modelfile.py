"""The model file format, version 1: a fitted :class:`~ubpe.Tokenizer` as bytes, and back.

A msgpack map ``{"magic": "ubpe.tokenizer", "version": 1, "body": bin, "sha256": bin}`` whose
``body`` is the msgpack map of the model's fields (:data:`FIELDS`, plus :data:`OPTIONAL`) and
``sha256`` its SHA-256 (docs/format.md, "Model files"). :func:`pack` writes it from a
:class:`ModelRecord`; :func:`parse` checks untrusted bytes (checksum, every declared size
against the bytes before anything is allocated, the merge table's order, a dtype that holds the
alphabet's values) and returns the record, or raises :class:`~ubpe.CorruptDataError`
(:class:`~ubpe.FormatVersionError` for a newer version).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import msgpack
import numpy as np

from .._validate import expect_map, field_bytes, field_int, field_str, short
from ..alphabet import Alphabet
from ..errors import CorruptDataError
from ..model import check_decode_dtype, check_mode
from .sealed import open_sealed, seal, unpack

__all__ = ["MAGIC", "VERSION", "ModelRecord", "pack", "parse"]

MAGIC = "ubpe.tokenizer"
#: The model-file version this ubpe writes, and the newest it reads.
VERSION = 1
#: The body's fields.
FIELDS = ("alphabet", "dtype", "params", "n_units", "merges", "batches", "counts", "df", "token_ids")
#: The body's optional fields: ``mode`` and ``method`` of a sequence-mode model (written together,
#: never for classic), and ``front``, the front-end chain (a ``PREDICTORS`` name) it was fitted behind.
OPTIONAL = ("mode", "method", "front")
#: The training parameters a body's ``params`` holds.
PARAMS = ("n_tokens", "n_candidates", "min_count", "weighting", "window")
#: Most tokens a model may have.
MAX_TOKENS = 2**31 - 1
_WHERE = "tokenizer"


@dataclass(frozen=True)
class ModelRecord:
    """A fitted tokenizer's state as the file holds it (arrays in priority order, ``token_ids``
    the public id of every token, alphabet ids first)."""

    alphabet: Alphabet
    dtype: np.dtype
    params: dict[str, Any]
    n_units: int
    merges: np.ndarray  #: (M, 2) int32
    batches: np.ndarray  #: (M,) int32
    counts: np.ndarray  #: (M,) int64
    df: np.ndarray  #: (M,) int64
    token_ids: np.ndarray  #: (A + M,) int32
    mode: str = "classic"
    method: str | None = None
    front: str | None = None


def pack(r: ModelRecord) -> bytes:
    """The model file of ``r``; equal records give equal bytes."""
    a = len(r.alphabet)
    fields = {
        "alphabet": r.alphabet.to_dict(),
        "dtype": r.dtype.str,
        "params": {k: r.params[k] for k in PARAMS},
        "n_units": r.n_units,
        "merges": r.merges.astype("<i4").tobytes(),
        "batches": r.batches.astype("<i4").tobytes(),
        "counts": r.counts.astype("<i8").tobytes(),
        "df": r.df.astype("<i8").tobytes(),
        "token_ids": r.token_ids[a:].astype("<i4").tobytes(),
    }
    if r.mode != "classic":
        fields.update(mode=r.mode, method=r.method)
    if r.front is not None:
        fields["front"] = r.front
    body = msgpack.packb(fields, use_bin_type=True)
    return seal(MAGIC, VERSION, body)


def parse(data: Any, predictors: Any = ()) -> ModelRecord:
    """The checked record of a model file's bytes (``predictors``: the chain names a ``front``
    may hold). ``params`` are returned as read, their values for the caller to check."""
    _, body = open_sealed(data, MAGIC, VERSION, _WHERE)
    f = expect_map(unpack(body, _WHERE), _WHERE, FIELDS, OPTIONAL)
    alphabet = Alphabet.from_dict(f["alphabet"])
    a = len(alphabet)
    if a < 1:
        raise CorruptDataError("tokenizer: the alphabet is empty")
    params = expect_map(f["params"], "tokenizer params", PARAMS)
    dtype_str = field_str(f, "dtype", where=_WHERE)
    try:
        dtype = check_decode_dtype(alphabet, dtype_str)
    except (TypeError, ValueError) as e:
        raise CorruptDataError(f"tokenizer: dtype {short(dtype_str)} does not fit the alphabet: {e}") from None
    n_units = field_int(f, "n_units", 0, 2**63 - 1, where=_WHERE)
    flat = _array(f, "merges", "<i4", None)
    if len(flat) % 2:
        raise CorruptDataError("tokenizer: 'merges' must hold (left, right) pairs of <i4")
    merges = flat.reshape(-1, 2)
    m = len(merges)
    if a + m > MAX_TOKENS:
        raise CorruptDataError("tokenizer: too many merges")
    batches = _array(f, "batches", "<i4", m)
    counts = _array(f, "counts", "<i8", m)
    df = _array(f, "df", "<i8", m)
    ranked = _array(f, "token_ids", "<i4", m)
    limit = a + np.arange(m, dtype=np.int64)[:, None]
    if m and (np.any(merges < 0) or np.any(merges >= limit)):
        raise CorruptDataError("tokenizer: a merge uses a token not made by an earlier merge")
    if m and (np.any(np.diff(batches) < 0) or batches[0] < 0):
        raise CorruptDataError("tokenizer: batches must be non-negative and non-decreasing")
    if m and (np.any(counts < 0) or np.any(df < 0)):
        raise CorruptDataError("tokenizer: counts and df must be non-negative")
    if m and not np.array_equal(np.sort(ranked), a + np.arange(m)):
        raise CorruptDataError("tokenizer: token_ids must be a permutation of the merged ids")
    token_ids = np.concatenate((np.arange(a, dtype=np.int32), ranked.astype(np.int32)))
    mode, method = _parse_mode(f)
    front = f.get("front")
    if "front" in f and (not isinstance(front, str) or front not in predictors):
        raise CorruptDataError(f"tokenizer: 'front' must name a front-end chain, got {short(front)}")
    return ModelRecord(alphabet, dtype, dict(params), n_units, merges.astype(np.int32), batches.astype(np.int32),
                       counts.astype(np.int64), df.astype(np.int64), token_ids, mode, method, front)


def _parse_mode(d: dict) -> tuple[str, str | None]:
    """``mode`` and ``method`` of a body: both absent (classic) or both present with a sequence
    mode and one of its methods; one canonical form, so a file re-serialises to itself."""
    if "mode" not in d and "method" not in d:
        return "classic", None
    mode, method = d.get("mode"), d.get("method")
    if mode == "classic" or "mode" not in d or "method" not in d:
        raise CorruptDataError("tokenizer: 'mode' and 'method' are written together, for a sequence-mode model only")
    if not isinstance(mode, str) or not isinstance(method, str):
        raise CorruptDataError(f"tokenizer: 'mode' and 'method' must be str, got {short(mode)}, {short(method)}")
    try:
        return check_mode(mode, method)
    except ValueError as e:
        raise CorruptDataError(f"tokenizer: {e}") from None


def _array(d: dict, key: str, dtype: str, count: int | None) -> np.ndarray:
    itemsize = np.dtype(dtype).itemsize
    raw = field_bytes(d, key, where=_WHERE, size=None if count is None else count * itemsize)
    if len(raw) % itemsize:
        raise CorruptDataError(f"tokenizer: {key!r} has {len(raw)} bytes, not a multiple of {itemsize}")
    return np.frombuffer(raw, dtype=dtype)
