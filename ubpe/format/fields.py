"""The container's field encodings: the alphabet, the merge table, escaped values, source metadata.

Each ``*_field`` function builds a field's value for the writer, and each ``parse_*`` checks an
untrusted one, raising :class:`~ubpe.CorruptDataError` for anything that is not exactly what
the writer could have written (docs/format.md has every field).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from .._kernels import ranks as _ranks
from .._validate import expect_map, field_bytes, field_int, short
from ..alphabet import Alphabet
from ..coders import MAX_VOCAB
from ..errors import CorruptDataError
from .bits import MAX_RICE_PARAM, pack_merges, pack_rice, pack_uints, pack_varints, unpack_rice, unpack_uints, unpack_varints

_U64 = (1 << 64) - 1
_I64_MIN = -(1 << 63)
_I64_MAX = (1 << 63) - 1
#: ``source``: at most this many entries, keys of at most SOURCE_MAX_KEY characters, str and
#: bytes values of at most SOURCE_MAX_VALUE characters / bytes.
SOURCE_MAX_ENTRIES = 32
SOURCE_MAX_KEY = 64
SOURCE_MAX_VALUE = 1024


# ============================================================================ alphabet

def alphabet_field(alphabet: Alphabet) -> dict:
    """The compact alphabet: first value, then gaps between consecutive values minus one. An
    integer alphabet's is made once and kept on it (alphabets do not change; level 1 sized its
    alphabet's field, then wrote it): a copy of the map is returned."""
    kept = getattr(alphabet, "_field", None)
    if kept is not None:
        return dict(kept)
    field = _alphabet_field(alphabet)
    if alphabet.kind == "integers":
        alphabet._field = dict(field)
    return field


def _alphabet_field(alphabet: Alphabet) -> dict:
    """:func:`alphabet_field` without its cache."""
    n = len(alphabet)
    if n == 0:
        return {"n": 0, "lo": 0, "w": 0, "gaps": b""}
    if alphabet.kind == "symbols":
        raise TypeError(
            "compress needs an integer alphabet; this tokenizer's alphabet holds symbols "
            f"({alphabet!r}): use it for tokenizing, not for compressing integer arrays"
        )
    if alphabet.kind == "range":
        return {"n": n, "lo": 0, "w": 0, "gaps": b""}
    lo, hi = (int(v) for v in alphabet.to_values(np.array([0, n - 1]), object))  # (exact, uint64 too)
    if hi - lo == n - 1:  # every value of [lo, hi] (sorted, distinct): all gaps 0, what the lines
        # below write, without copying and passing over a dense range of millions (level 2's
        # dense ids over a heavy-tailed residual's span)
        return {"n": n, "lo": lo, "w": 0, "gaps": b""}
    values = alphabet.values
    gaps = (np.diff(values).astype(np.uint64) - np.uint64(1)) if n > 1 else np.zeros(0, np.uint64)
    hi = int(gaps.max()) if gaps.size else 0
    if hi >= 1 << 63:
        return {"n": n, "lo": lo, "w": 64, "gaps": gaps.astype("<u8").tobytes()}
    width, data = pack_uints(gaps.astype(np.int64))
    rice = pack_rice(gaps.astype(np.int64)) if width > 1 else None
    if rice is not None and len(rice[1]) < len(data):
        # mostly consecutive values with a few far ones (prediction residuals' long tails): a
        # fixed width would pay for the largest gap on every gap
        return {"n": n, "lo": lo, "w": 0, "r": rice[0], "gaps": rice[1]}
    return {"n": n, "lo": lo, "w": width, "gaps": data}


@dataclass(frozen=True)
class Values:
    """Maps alphabet ids to values: ``lo + id`` (``table`` None) or ``table[id]``."""

    size: int
    lo: int
    table: np.ndarray | None  # int64 or uint64 values

    def to_values(self, ids: np.ndarray, dtype: np.dtype) -> np.ndarray:
        """Values of ``ids`` (int32, validated) in native ``dtype``, reduced modulo 2**bits.

        Working modulo 2**bits is exact for every value the dtype holds and turns values it
        cannot hold into wrong ones, which the CRC then refuses.
        """
        unsigned = _UNSIGNED_OF_SIZE[1 if dtype.kind == "b" else dtype.itemsize]
        if self.table is None:
            out = ids.astype(unsigned)
            if self.lo % (1 << (8 * unsigned.itemsize)):
                out += unsigned.type(self.lo % (1 << (8 * unsigned.itemsize)))
        else:
            lut = self.table.astype(unsigned)  # integer casts wrap: modulo 2**bits
            out = np.take(lut, ids, mode="clip")  # ids are validated; "clip" is the fastest mode
        return out.view(dtype if dtype.isnative else dtype.newbyteorder("="))


_UNSIGNED_OF_SIZE = {size: np.dtype(f"u{size}") for size in (1, 2, 4, 8)}


def parse_alphabet(field: Any) -> Values:
    d = expect_map(field, "alphabet", ("n", "lo", "w", "gaps"), optional=("r",))
    n = field_int(d, "n", 0, MAX_VOCAB, where="alphabet")
    lo = field_int(d, "lo", _I64_MIN, _U64, where="alphabet")
    w = field_int(d, "w", 0, 64, where="alphabet")
    gaps_raw = field_bytes(d, "gaps", where="alphabet")
    n_gaps = max(n - 1, 0)
    if n == 0 and (lo or w or gaps_raw or "r" in d):
        raise CorruptDataError("alphabet: an empty alphabet must have lo = 0, w = 0, no r and no gaps")
    if "r" in d:
        r = field_int(d, "r", 0, MAX_RICE_PARAM, where="alphabet")
        if w != 0:
            raise CorruptDataError("alphabet: 'w' must be 0 when the gaps are Rice-coded ('r')")
        gaps = unpack_rice(gaps_raw, n_gaps, r)
    elif w == 0:
        if gaps_raw:
            raise CorruptDataError("alphabet: 'gaps' must be empty when 'w' is 0")
        last = lo + n_gaps
        _check_domain(lo, last)
        return Values(n, lo, None)
    elif w == 64:
        if len(gaps_raw) != 8 * n_gaps:
            raise CorruptDataError(f"alphabet: 'gaps' has {len(gaps_raw)} bytes, expected {8 * n_gaps}")
        gaps = np.frombuffer(gaps_raw, dtype="<u8").astype(np.uint64)
    else:
        gaps = unpack_uints(gaps_raw, n_gaps, w).astype(np.uint64)
    steps = gaps + np.uint64(1)  # wraps to 0 only for a gap of 2**64 - 1: refused below
    offsets = np.empty(n, np.uint64)
    offsets[0] = 0
    np.cumsum(steps, dtype=np.uint64, out=offsets[1:])
    # each step is in [1, 2**64): an overflow of the running sum makes it decrease (none can
    # when every step is at most 2**w, w < 64, and n - 1 of them stay below 2**64)
    if n > 1 and (w == 0 or w == 64 or n_gaps << w >= 1 << 64) and not np.all(offsets[1:] > offsets[:-1]):
        raise CorruptDataError("alphabet: values overflow 64 bits")
    last = lo + int(offsets[-1])
    _check_domain(lo, last)
    if lo >= 0 and last > _I64_MAX:
        table = offsets + np.uint64(lo)
    else:  # two's complement: exact because every value fits in int64
        offsets += np.uint64(lo % (1 << 64))  # (in place: offsets is this function's own)
        table = offsets.view(np.int64)
    return Values(n, lo, table)


def _check_domain(lo: int, last: int) -> None:
    if lo < 0 and last > _I64_MAX:
        raise CorruptDataError("alphabet: values span beyond the int64 range")
    if last > _U64:
        raise CorruptDataError("alphabet: values exceed 2**64 - 1")


def alphabet_values(alphabet: Alphabet) -> Values:
    """The id -> value map of a (trusted) tokenizer's alphabet."""
    if alphabet.kind == "range":
        return Values(len(alphabet), 0, None)
    if alphabet.kind != "integers":
        raise TypeError(f"the tokenizer's alphabet holds symbols ({alphabet!r}): it cannot decode integer arrays")
    return Values(len(alphabet), 0, alphabet.values)



# ============================================================================ model


def model_field(merges: np.ndarray, a: int) -> dict:
    """The ``model`` field of ``merges`` over an alphabet of ``a`` values."""
    m = len(merges)
    return {"a": a, "m": m, "merges": pack_merges(merges, max(a, 1)) if m else b""}


def min_merge_bits(m: int, a: int) -> int:
    """A lower bound of the bits ``pack_merges`` needs for ``m`` rows: row i takes at least
    floor(log2((a + i)**2)) >= 2 * floor(log2(a + i)) bits."""
    total, lo, hi = 0, a, a + m  # rows cover R = a .. a + m - 1
    while lo < hi:
        b = lo.bit_length() - 1  # floor(log2(lo))
        end = min(hi, 1 << (b + 1))
        total += 2 * b * (end - lo)
        lo = end
    return total



# ============================================================================ escapes

#: Values converted at a time by :func:`escaped_ids` (its int64 temporaries stay this small).
ESCAPE_CHUNK = 1 << 16


def escaped_ids(alphabet: Alphabet, flat: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(ids, positions): the alphabet ids of ``flat``, a value outside the alphabet replaced by the
    nearest alphabet value at or above it (else the largest), and the positions so replaced.
    Memory: the int32 ids and int64 temporaries of :data:`ESCAPE_CHUNK` values."""
    a = len(alphabet)
    ids = np.empty(flat.shape[0], np.int32)
    outside = np.empty(flat.shape[0], bool)
    table = alphabet.values if alphabet.kind != "range" else None  # sorted int64
    lookup = None
    if table is not None and a and flat.dtype.itemsize <= 4 and -(1 << 40) <= table[0] and table[-1] <= 1 << 40:
        lo, span = int(table[0]), int(table[-1]) - int(table[0]) + 1
        if span <= max(ESCAPE_CHUNK, 2 * flat.shape[0]):  # a table over the alphabet's span: no search
            grid = np.arange(lo, lo + span, dtype=np.int64)
            nearest = np.searchsorted(table, grid).astype(np.int32)  # at or above (within the span: < a)
            lookup = (lo, span, nearest, table[nearest] == grid)
            if flat.shape[0] and int(flat.min()) >= lo and int(flat.max()) < lo + span:
                # every value within the span: one table gives a value's id, negated (~id) where the
                # value is not in the alphabet (the lookup's ids and positions below; 3 passes, not 10)
                coded = np.where(lookup[3], nearest, ~nearest)
                # (one compiled pass reading the values in their width, where numpy's per-chunk
                # intp copies and fancy indexing were: escaped_ids of a million neural int16 values
                # 1.73 -> 1.16 ms)
                _ranks.lookup_coded(np.ascontiguousarray(flat, flat.dtype.newbyteorder("=")), lo, coded, ids, outside)
                return ids, np.flatnonzero(outside)
    for start in range(0, flat.shape[0], ESCAPE_CHUNK):
        part = flat[start:start + ESCAPE_CHUNK]
        out, bad = ids[start:start + part.shape[0]], outside[start:start + part.shape[0]]
        if table is None:
            if part.dtype.kind == "u":
                np.greater_equal(part, a, out=bad)
                out[:] = np.minimum(part, a - 1)
            else:
                bad[:] = (part < 0) | (part >= a)
                out[:] = np.clip(part, 0, a - 1)
            continue
        if lookup is not None:  # the same ids and positions as the search below
            lo, span, nearest, exact = lookup
            w = part.astype(np.int64) - lo
            inside = (w >= 0) & (w < span)
            np.clip(w, 0, span - 1, out=w)
            out[:] = nearest[w]
            bad[:] = ~(inside & exact[w])
            continue
        if part.dtype == np.uint64:  # compare in the values' own domain
            big = part > np.uint64(np.iinfo(np.int64).max)
            wide = np.where(big, np.uint64(np.iinfo(np.int64).max), part).astype(np.int64)
        else:
            big = False
            wide = part.astype(np.int64)
        idx = np.minimum(np.searchsorted(table, wide), a - 1)
        bad[:] = big | (table[idx] != wide)
        out[:] = idx
    return ids, np.flatnonzero(outside)


def escape_field(values: np.ndarray, positions: np.ndarray) -> bytes:
    """The ``esc`` field: LEB128 varints of the count, the position gaps and the zigzagged values."""
    v = np.ascontiguousarray(values[positions])
    w = v.view(np.int64) if v.dtype == np.uint64 else v.astype(np.int64)
    zig = (w.astype(np.uint64) << np.uint64(1)) ^ (w >> np.int64(63)).astype(np.uint64)
    gaps = np.diff(positions, prepend=-1) - 1  # positions strictly increase: gaps >= 0
    head = np.array([positions.shape[0]], dtype=np.uint64)
    return pack_varints(np.concatenate((head, gaps.astype(np.uint64), zig)))  # all uint64: no float promotion


def parse_escapes(raw: Any, n: int, coded: np.dtype) -> tuple[np.ndarray, np.ndarray]:
    """(positions, values) of a container's ``esc`` field, checked against its ``n`` values."""
    if not isinstance(raw, bytes):
        raise CorruptDataError(f"esc: expected bytes, got {type(raw).__name__}")
    if len(raw) > 2 + 20 * max(n, 1):
        raise CorruptDataError(f"esc: {len(raw)} bytes, more than {n} escapes can need")
    u = unpack_varints(raw, "esc")
    if u.size == 0:
        raise CorruptDataError("esc: empty (it holds at least a count and one escape)")
    k = int(u[0])
    if not 1 <= k <= n or u.size != 1 + 2 * k:
        raise CorruptDataError(f"esc: {u.size} varints for a count of {k} (at most {n}), expected 1 + 2 x count")
    gaps = u[1:1 + k]
    if np.any(gaps >= np.uint64(n)):
        raise CorruptDataError(f"esc: a position gap beyond the {n} values")
    positions = np.cumsum(gaps.astype(np.int64) + 1) - 1
    if positions[-1] >= n:
        raise CorruptDataError(f"esc: positions beyond the {n} values")
    zig = u[1 + k:]
    w = (zig >> np.uint64(1)).astype(np.int64) ^ -(zig & np.uint64(1)).astype(np.int64)
    if coded == np.uint64:
        return positions, w.view(np.uint64)
    info = np.iinfo(coded) if coded.kind in "iu" else None
    if info is None or w.min() < info.min or w.max() > info.max:
        raise CorruptDataError(f"esc: a value outside the range of {coded}")
    return positions, w.astype(coded)



# ============================================================================ source

def argument_error(message: str, type_error: bool = False) -> Exception:
    return TypeError(message) if type_error else ValueError(message)


def data_error(message: str, type_error: bool = False) -> Exception:
    return CorruptDataError(f"source: {message}")


def check_source(source: Any, error: Any) -> dict[str, Any]:
    """``source`` if it is a valid source map; else raise ``error(message, is_type_error)``."""
    if not isinstance(source, dict):
        raise error(f"source must be a dict, got {type(source).__name__}", True)
    if len(source) > SOURCE_MAX_ENTRIES:
        raise error(f"source has {len(source)} entries, at most {SOURCE_MAX_ENTRIES} are allowed")
    for key, value in source.items():
        if not isinstance(key, str):
            raise error(f"source keys must be str, got {type(key).__name__} {short(key)}", True)
        if not 1 <= len(key) <= SOURCE_MAX_KEY:
            raise error(f"source key {short(key)} must have 1 to {SOURCE_MAX_KEY} characters")
        if isinstance(value, bool) or isinstance(value, float):
            continue
        if isinstance(value, int):
            if not _I64_MIN <= value <= _U64:
                raise error(f"source[{key!r}] = {short(value)} does not fit in 64 bits")
        elif isinstance(value, (str, bytes)):
            if len(value) > SOURCE_MAX_VALUE:
                raise error(f"source[{key!r}] has {len(value)} characters/bytes, at most {SOURCE_MAX_VALUE}")
        else:
            raise error(f"source[{key!r}] must be an int, float, bool, str or bytes, got {type(value).__name__}", True)
    return dict(source)

