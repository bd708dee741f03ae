"""The alphabet: a bijection between input values and symbol ids ``0 .. A-1``."""

from __future__ import annotations

import numbers
from collections.abc import Hashable, Iterable
from typing import Any

import numpy as np

from ._kernels import tally as _tally
from ._validate import as_documents, as_sequence, check_int, dtype_of, short
from .errors import CorruptDataError

#: Integer alphabets spanning at most this many values map through a lookup table.
_TABLE_SPAN = 1 << 22
_INT64_MAX = np.iinfo(np.int64).max
#: Largest range alphabet :meth:`Alphabet.from_dict` accepts. A range declares its size in a few
#: bytes, and decoding allocates about 40 bytes per symbol (expansion lengths, offsets, values,
#: public ids), so untrusted data may not declare more than this (about 670 MB at the cap).
MAX_DECLARED_RANGE = 1 << 24


def distinct(a: np.ndarray) -> np.ndarray:
    """``np.unique(a)``: the sorted distinct values of ``a`` (any shape), int64 for integers of at
    most 63 bits and bools, uint64 for uint64, ``np.unique``'s own dtype for other kinds. Integers
    by a histogram when the values span fewer than their count (from 4096 of them: one compiled
    pass, ``tally.span_distinct``), else by a sort and a mask of the changes. numpy 2.3+'s unique
    hashes integers and is 10 to 60 times slower on wide ones (100 000 24-bit values: 10-20 ms
    against 0.5-1.2 ms; 2 000 ids of a million: 120 us against 12 us); a histogram costs about as
    much per value of its span as a sort per value."""
    flat = a.reshape(-1)
    if flat.dtype.kind not in "iub":
        return np.unique(flat)
    if not flat.size:
        return np.zeros(0, flat.dtype if flat.dtype == np.uint64 else np.int64)
    lo, hi = int(flat.min()), int(flat.max())
    wide = flat.dtype == np.uint64  # (may hold values of 2**63 and more: sorted as they are)
    if hi - lo < flat.size and flat.size >= 4096 and not wide:
        if flat.dtype.kind in "iu":  # (one compiled pass reading the values in their width)
            native = np.ascontiguousarray(flat, flat.dtype.newbyteorder("="))
            return _tally.span_distinct(native, lo, hi - lo + 1)
        return np.flatnonzero(np.bincount(flat.astype(np.int64) - lo, minlength=hi - lo + 1)) + lo
    s = np.sort(flat)
    keep = np.empty(s.size, dtype=bool)
    keep[0] = True
    np.not_equal(s[1:], s[:-1], out=keep[1:])
    return s[keep] if wide else s[keep].astype(np.int64)


class _OutsideAlphabet(Exception):
    """(value, position) of the first value of a chunk that is not in the alphabet."""


class Alphabet:
    """Maps values to ids in ``[0, len(alphabet))`` and back, vectorised for numpy arrays.

    Three kinds, chosen by what you pass:

    - ``Alphabet(256)``: a *range*, value ``v`` has id ``v`` for ``0 <= v < 256``;
    - ``Alphabet([-5, 7, 2**40])``: *integers* (any int64, or uint64 when all are non-negative),
      ids in ascending order of value;
    - ``Alphabet("abc")`` or ``Alphabet(["x", ("y", 1)])``: *symbols*, any hashables, ids in the
      order given (duplicates dropped; a ``set`` is sorted first so that ids are deterministic).

    ``Alphabet.from_data(x, y, ...)`` takes the sorted distinct values of the data.

    Examples
    --------
    >>> a = Alphabet([10, -3, 7])
    >>> len(a), a.to_ids(np.array([7, -3, 10])).tolist()
    (3, [1, 0, 2])
    >>> a.to_values(np.array([2, 1]), dtype=np.int16).tolist()
    [10, 7]
    """

    #: (``_field``: :func:`ubpe.format.fields.alphabet_field`'s map, kept there when first made)
    __slots__ = ("_kind", "_size", "_values", "_index", "_table", "_lo", "_span", "_field")

    def __getattr__(self, name: str) -> Any:
        """Only for a slot never set: ``_span`` (the first value of an alphabet made by
        :meth:`span`) is None for any other alphabet; a span's ``_values`` are made when first
        read (its ids and values are offsets from ``_span``: none are needed to map them)."""
        if name == "_span":
            return None
        if name == "_values" and self._span is not None:
            values = np.arange(self._size, dtype=np.int64)
            values += np.int64(self._span)  # (in place: the last value + 1 may be 2**63)
            self._values = values
            return values
        if name == "_table":  # (an integer alphabet's lookup table, made when first read)
            self._table = table = self._lookup_table()
            return table
        raise AttributeError(name)

    def _lookup_table(self) -> np.ndarray | None:
        """The lookup table of an integer alphabet (:meth:`_set_integers`'): int32 over the span
        of the values from ``_lo``, each value's id, -1 where none; None beyond ``_TABLE_SPAN``
        or when empty."""
        values = self._values
        if not (self._kind == "integers" and self._size and int(values[-1]) - int(values[0]) < _TABLE_SPAN):
            return None
        table = np.full(int(values[-1]) - self._lo + 1, -1, dtype=np.int32)
        table[(values - values[0]).astype(np.int64)] = np.arange(self._size, dtype=np.int32)
        return table

    def __init__(self, values: int | Iterable[Any]) -> None:
        self._index: dict[Any, int] | None = None
        self._table: np.ndarray | None = None
        self._lo = 0
        if isinstance(values, numbers.Integral) and not isinstance(values, (bool, np.bool_)):
            self._kind = "range"
            self._size = check_int("alphabet size", values, 0, 2**31 - 1)
            self._values = None
            return
        if isinstance(values, (set, frozenset)):
            try:
                values = sorted(values)
            except TypeError:
                raise TypeError("a set of alphabet values must be sortable; pass a list to fix the order")
        if isinstance(values, np.ndarray) and values.ndim != 1:
            raise ValueError(f"alphabet values must be 1-D, got shape {values.shape}")
        if (isinstance(values, np.ndarray) and values.dtype.kind in "iu" and values.dtype != np.uint64
                and values.size and bool(np.all(values[1:] > values[:-1]))):
            self._set_integers(values.astype(np.int64))  # sorted distinct integers: no per-item checks
            return
        items = list(values) if not isinstance(values, str) else list(values)
        if items and all(
            isinstance(v, numbers.Integral) and not isinstance(v, (bool, np.bool_)) for v in items
        ):
            ints = [int(v) for v in items]
            lo, hi = min(ints), max(ints)
            if lo >= -(2**63) and hi <= _INT64_MAX:
                self._set_integers(distinct(np.asarray(ints, dtype=np.int64)))
                return
            if lo >= 0 and hi < 2**64:
                self._set_integers(distinct(np.asarray(ints, dtype=np.uint64)))
                return
        self._kind = "symbols"
        unique: dict[Any, int] = {}
        for v in items:
            if not isinstance(v, Hashable):
                raise TypeError(f"alphabet values must be hashable, got {v!r}")
            unique.setdefault(v, len(unique))
        self._index = unique
        self._values = list(unique)
        self._size = len(unique)
        if self._size > 2**31 - 1:
            raise ValueError("an alphabet holds at most 2**31 - 1 values")

    def _set_integers(self, values: np.ndarray) -> None:
        self._kind = "integers"
        self._values = values
        self._size = len(values)
        if self._size and int(values[-1]) - int(values[0]) < _TABLE_SPAN:
            self._lo = int(values[0])
            # the lookup table made when first read (__getattr__: :meth:`_lookup_table`): level 1's
            # alphabets are sized and written, their ids made another way (a table over a 60 000-value
            # span took about 40 us, for nothing)
            try:
                del self._table
            except AttributeError:
                pass

    @classmethod
    def sorted_integers(cls, values: np.ndarray) -> Alphabet:
        """The alphabet of ``values``, int64, 1-D, strictly increasing (the caller's
        guarantee, not checked: e.g. ``np.flatnonzero`` of a histogram plus its first value):
        ``Alphabet(values)`` without its check of the order and its copy."""
        out = cls.__new__(cls)
        out._index, out._table, out._lo = None, None, 0
        out._set_integers(values)
        return out

    # ==================== construction

    @classmethod
    def span(cls, lo: int, hi: int) -> Alphabet:
        """The alphabet of every integer in ``[lo, hi]`` (``-2**63 <= lo <= hi < 2**63``): equal to
        ``Alphabet(np.arange(lo, hi + 1))`` without checking the values' order or copying them (a
        dense range of millions: level 2's dense ids)."""
        lo, hi = check_int("lo", lo, -(2**63), _INT64_MAX), check_int("hi", hi, -(2**63), _INT64_MAX)
        if hi < lo or hi - lo >= 2**31 - 1:
            raise ValueError(f"span [{lo}, {hi}] must hold 1 to 2**31 - 2 values")
        out = cls.__new__(cls)
        out._index, out._table, out._lo = None, None, 0
        # "integers" whose values are made only if read (:meth:`__getattr__`): ids and values
        # map by an offset (level 2's dense ids: spans of millions, one per candidate, of which
        # only a few thousand ids are ever mapped)
        out._kind, out._size, out._span = "integers", hi - lo + 1, lo
        return out

    @classmethod
    def from_data(cls, *corpora: Any) -> Alphabet:
        """The sorted distinct values of one or more sequences (or corpora of sequences)."""
        arrays, others = [], []
        for corpus in corpora:
            for doc in as_documents(corpus):
                (arrays if isinstance(doc, np.ndarray) and doc.dtype.kind in "iub" else others).append(doc)
        if others:
            values = set()
            for doc in arrays:
                values.update(np.unique(doc).tolist())
            for doc in others:
                values.update(doc)
            return cls(values)
        arrays = [a for a in arrays if len(a)]
        if not arrays:
            return cls([])
        if all(a.dtype != np.uint64 for a in arrays):  # (kinds i, u, b)
            uniques = [distinct(a) for a in arrays]
            merged = uniques[0] if len(uniques) == 1 else distinct(np.concatenate(uniques))
            alphabet = cls.__new__(cls)
            alphabet._index = None
            alphabet._table = None
            alphabet._lo = 0
            alphabet._set_integers(merged)
            return alphabet
        return cls({int(v) for a in arrays for v in distinct(a).tolist()})

    # ==================== properties

    @property
    def kind(self) -> str:
        """``"range"``, ``"integers"`` or ``"symbols"``."""
        return self._kind

    @property
    def values(self) -> np.ndarray | list:
        """The value of each id: ``np.arange(A)``, a sorted int array, or a list of symbols."""
        if self._kind == "range":
            return np.arange(self._size, dtype=np.int64)
        return self._values if self._kind == "symbols" else self._values.copy()

    def __len__(self) -> int:
        return self._size

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Alphabet):
            return NotImplemented
        return self.to_dict() == other.to_dict()

    def __hash__(self) -> int:
        return hash((self._kind, self._size))

    def __repr__(self) -> str:
        if self._kind == "range":
            return f"Alphabet({self._size})"
        shown = list(self.values[:4]) if self._kind == "symbols" else self._values[:4].tolist()
        more = ", ..." if self._size > 4 else ""
        return f"Alphabet([{', '.join(map(repr, shown))}{more}])  # {self._size} values"

    # ==================== mapping

    def to_ids(self, seq: Any, out: np.ndarray | None = None) -> np.ndarray:
        """Ids (int32, shape (n,)) of the values in ``seq``, written into ``out`` if given.

        Numeric arrays are mapped in chunks of ``2**20`` values, so temporaries stay small.
        Raises ``ValueError`` naming the first value outside the alphabet and its position.
        """
        seq = as_sequence(seq)
        if out is None:
            out = np.empty(len(seq), dtype=np.int32)
        elif out.shape != (len(seq),) or out.dtype != np.int32:
            raise ValueError(f"out must be int32 of shape ({len(seq)},), got {out.dtype} {out.shape}")
        if self._kind == "symbols" or not isinstance(seq, np.ndarray) or seq.dtype.kind not in "iub":
            out[:] = self._symbols_to_ids(seq)
            return out
        step = 1 << 20
        for start in range(0, len(seq), step):
            try:
                out[start : start + step] = self._numeric_to_ids(seq[start : start + step])
            except _OutsideAlphabet as e:
                value, i = e.args
                raise ValueError(
                    f"value {value!r} at position {start + i} is not in the alphabet ({self!r})"
                ) from None
        return out

    def _numeric_to_ids(self, seq: np.ndarray) -> np.ndarray:
        if seq.dtype.kind == "b":
            seq = seq.astype(np.uint8)
        if len(seq) == 0:
            return np.zeros(0, dtype=np.int32)
        if self._kind == "range":
            if (seq.dtype.kind == "i" and seq.min() < 0) or seq.max() >= self._size:
                self._raise_if_any(seq, (seq < 0) | (seq >= self._size) if seq.dtype.kind == "i" else seq >= self._size)
            return seq.astype(np.int32, copy=False)  # to_ids copies it into its output
        if self._span is not None and seq.dtype != np.uint64:  # a span: ids are offsets from its first value
            lo = self._span
            s64 = seq.astype(np.int64, copy=False)
            self._raise_if_any(seq, (s64 < lo) | (s64 > lo + (self._size - 1)))
            return (s64 - np.int64(lo)).astype(np.int32)
        values = self._values
        if values.dtype == np.int64 and seq.dtype == np.uint64:
            self._raise_if_any(seq, seq > np.uint64(_INT64_MAX))
            seq = seq.astype(np.int64)
        elif values.dtype == np.uint64 and seq.dtype.kind == "i":
            self._raise_if_any(seq, seq < 0)
            seq = seq.astype(np.uint64)
        if (self._table is not None and seq.dtype.kind in "iu" and seq.dtype.isnative and seq.dtype != np.uint64
                and values.dtype == np.int64):
            ids = np.empty(len(seq), dtype=np.int32)  # (one compiled pass; a value off the table: below)
            if _tally.table_ids(np.ascontiguousarray(seq), self._lo, self._table, ids) < 0:
                return ids
        if self._table is not None:
            hi = self._lo + len(self._table) - 1
            lo_ok = seq >= self._lo if (self._lo > 0 or seq.dtype.kind == "i") else True
            inside = lo_ok & (seq <= hi)
            self._raise_if_any(seq, ~inside)
            # subtract in the input's own dtype first: a uint64 value above 2**63 must not wrap
            offset = (seq - seq.dtype.type(self._lo)) if seq.dtype.kind == "u" and self._lo >= 0 else (
                seq.astype(np.int64) - self._lo
            )
            ids = self._table[offset.astype(np.int64)]
            self._raise_if_any(seq, ids < 0)
            return ids
        seq = seq.astype(values.dtype)
        pos = np.searchsorted(values, seq)
        pos_clipped = np.minimum(pos, len(values) - 1)
        self._raise_if_any(seq, values[pos_clipped] != seq)
        return pos.astype(np.int32)

    def _symbols_to_ids(self, seq: Any) -> np.ndarray:
        index = self._index
        if index is None:  # integer alphabet given Python ints beyond 64 bits or objects
            index = {v: i for i, v in enumerate(self.values.tolist())}
        items = seq.tolist() if isinstance(seq, np.ndarray) else seq
        out = np.empty(len(items), dtype=np.int32)
        for i, v in enumerate(items):
            try:
                out[i] = index[v]
            except (KeyError, TypeError):
                raise ValueError(
                    f"value {v!r} at position {i} is not in the alphabet ({self!r})"
                ) from None
        return out

    def _raise_if_any(self, seq: np.ndarray, bad: np.ndarray) -> None:
        if np.any(bad):
            i = int(np.argmax(bad))
            raise _OutsideAlphabet(seq[i].item(), i)

    def to_values(self, ids: np.ndarray, dtype: np.dtype | None = None) -> np.ndarray:
        """Values of ``ids`` (already validated to lie in ``[0, A)``), cast to ``dtype`` if given."""
        ids = np.asarray(ids)
        if self._kind == "range":
            out = ids
        elif self._span is not None:  # (values not made: an offset)
            out = ids.astype(np.int64) + np.int64(self._span)
        elif self._kind == "integers":
            out = self._values[ids]
        else:
            symbols = np.empty(self._size, dtype=object)
            symbols[:] = self._values
            out = symbols[ids]
            if dtype is not None and np.dtype(dtype) != object:
                return np.array(out.tolist(), dtype=dtype) if len(out) else np.zeros(0, dtype=dtype)
            return out
        return out.astype(dtype if dtype is not None else np.int64, copy=False)

    # ==================== serialization

    def to_dict(self) -> dict[str, Any]:
        """A msgpack-safe description (see docs/format.md)."""
        if self._kind == "range":
            return {"kind": "range", "size": self._size}
        if self._kind == "integers":
            dt = "<i8" if self._values.dtype == np.int64 else "<u8"
            return {"kind": "integers", "dtype": dt, "values": self._values.astype(dt).tobytes()}
        for v in self._values:
            if not isinstance(v, (str, bytes, int)) or isinstance(v, bool):
                raise TypeError(
                    f"alphabet symbol {v!r} cannot be saved: symbols must be str, bytes or int"
                )
            if isinstance(v, int) and not -(2**63) <= v < 2**64:
                raise TypeError(f"alphabet symbol {v!r} cannot be saved: integers beyond 64 bits")
        return {"kind": "symbols", "values": list(self._values)}

    @classmethod
    def from_dict(cls, d: Any, *, max_range: int = MAX_DECLARED_RANGE) -> Alphabet:
        """Inverse of :meth:`to_dict`; malformed input raises ``CorruptDataError``.

        A range alphabet may declare at most ``max_range`` symbols (a cap, since its size costs no
        bytes); integer and symbol alphabets are bounded by the bytes that list their values.
        """
        max_range = check_int("max_range", max_range, 0, 2**31 - 1)
        if not isinstance(d, dict) or not isinstance(d.get("kind"), str):
            raise CorruptDataError("alphabet: expected a map with a 'kind'")
        kind = d["kind"]
        fields = {"range": ("kind", "size"), "integers": ("kind", "dtype", "values"), "symbols": ("kind", "values")}
        if kind in fields and set(d) != set(fields[kind]):
            raise CorruptDataError(f"alphabet: a {kind!r} alphabet holds exactly the fields {list(fields[kind])}")
        if kind == "range":
            size = d.get("size")
            if type(size) is not int or not 0 <= size <= max_range:
                raise CorruptDataError(f"alphabet: range size must be an int in [0, {max_range}], got {short(size)}")
            return cls(size)
        if kind == "integers":
            dt, raw = d.get("dtype"), d.get("values")
            if dt not in ("<i8", "<u8") or not isinstance(raw, bytes) or len(raw) % 8:
                raise CorruptDataError("alphabet: integer values must be <i8/<u8 bytes")
            values = np.frombuffer(raw, dtype=dt).astype(dt[1:])
            if len(values) > 1 and not np.all(values[1:] > values[:-1]):
                raise CorruptDataError("alphabet: integer values must be strictly increasing")
            alphabet = cls.__new__(cls)
            alphabet._index = None
            alphabet._table = None
            alphabet._lo = 0
            alphabet._set_integers(values.astype(np.int64 if dt == "<i8" else np.uint64))
            return alphabet
        if kind == "symbols":
            values = d.get("values")
            if not isinstance(values, list) or not all(
                isinstance(v, (str, bytes, int)) and not isinstance(v, bool) for v in values
            ):
                raise CorruptDataError("alphabet: symbols must be a list of str, bytes or int")
            if len(set(values)) != len(values):
                raise CorruptDataError("alphabet: symbols must be distinct")
            alphabet = cls.__new__(cls)
            alphabet._kind = "symbols"
            alphabet._values = list(values)
            alphabet._index = {v: i for i, v in enumerate(values)}
            alphabet._size = len(values)
            alphabet._table = None
            alphabet._lo = 0
            return alphabet
        raise CorruptDataError(f"alphabet: unknown kind {kind!r}")


def dtype_for(docs: list) -> np.dtype:
    """The dtype decoding should give back for a corpus: that of its first non-empty document."""
    for doc in docs:
        if len(doc):
            return dtype_of(doc)
    return dtype_of(docs[0]) if docs else np.dtype(np.int64)
