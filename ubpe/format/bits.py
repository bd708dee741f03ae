"""Bit-level layouts of the container's fields: fixed-width packing, Rice codes, the merge table.

These are the format's own encodings (docs/format.md, "Bit packing"), used for the alphabet's
gaps, the merge table and some coders' side tables. Bit order is little-endian throughout:
bit ``j`` of a stream is bit ``j % 8`` of byte ``j // 8``. Every unpacking function checks the
byte count and the padding bits, and raises :class:`~ubpe.CorruptDataError` for anything else.
"""

from __future__ import annotations

import numpy as np

from .._kernels import entropy as _k
from .._kernels import varints as _kv
from ..errors import CorruptDataError

__all__ = ["pack_uints", "unpack_uints", "pack_rice", "unpack_rice", "pack_merges", "unpack_merges", "pack_varints",
           "unpack_varints", "read_varints",
           "RICE_VALUE_LIMIT", "MAX_RICE_PARAM"]

#: Messages of the table and merge kernels' status codes.
TABLE_ERRORS = {
    _k.ERR_TRUNCATED: "truncated",
    _k.ERR_OVERSHOOT: "run of ids past vocab_size",
    _k.ERR_COUNT: "number of used ids differs from field 'k'",
    _k.ERR_ESCAPE: "bad escaped value",
    _k.ERR_RANGE: "value out of range",
    _k.ERR_TRAILING: "trailing bytes or nonzero padding",
}

#: Values a Rice sequence (:func:`pack_rice`) holds are below this.
RICE_VALUE_LIMIT = 1 << _k.MAX_VALUE_BITS


#: Largest Rice parameter of :func:`pack_rice`.
MAX_RICE_PARAM = _k.MAX_RICE_PARAM


def pack_rice(values: np.ndarray) -> tuple[int, bytes] | None:
    """Rice-code non-negative ints (< RICE_VALUE_LIMIT) with the parameter that gives the fewest
    bytes; return (parameter, bytes), or None when a value is out of range.

    Layout per value: the Rice code of the stream's count tables (``q = v >> r`` in unary up to
    ``RICE_LIMIT`` zeros and a one, then the low ``r`` bits; quotients from ``RICE_LIMIT`` on
    escape to a 6-bit length and the value's bits), least significant bit first; padding bits
    zero; exactly ceil(bits / 8) bytes.
    """
    arr = np.ascontiguousarray(values, dtype=np.int64)
    if arr.size and (int(arr.min()) < 0 or int(arr.max()) >= RICE_VALUE_LIMIT):
        return None
    top = int(arr.max()).bit_length() if arr.size else 0
    best, bits = _rice_choice(arr, min(top, _k.MAX_RICE_PARAM))
    buf = np.zeros((bits + 7) // 8, np.uint8)
    _k.rice_pack_all(arr, best, buf)
    return best, buf.tobytes()


def _rice_choice(arr: np.ndarray, top: int) -> tuple[int, int]:
    """(r, bits): the Rice parameter in [0, top] whose code of ``arr`` (int64, each in [0,
    RICE_VALUE_LIMIT)) has the fewest bits, ties to the smaller r, and that bit count: every r
    sized in one compiled pass (:func:`ubpe._kernels.entropy.rice_bits`; numpy's (top + 1) x n
    arrays took ~25 us for an alphabet's 1 000 gaps)."""
    bits = np.zeros(top + 1, dtype=np.int64)
    _k.rice_bits(arr, bits)
    best = int(np.argmin(bits))
    return best, int(bits[best])


def unpack_rice(data: bytes, count: int, r: int) -> np.ndarray:
    """The ``count`` values :func:`pack_rice` wrote with parameter ``r`` into ``data`` (uint64).

    Raises ``CorruptDataError`` unless ``data`` holds exactly those values: every code valid,
    no bytes beyond the last one, padding bits zero.
    """
    if not 0 <= r <= _k.MAX_RICE_PARAM:
        raise CorruptDataError(f"Rice parameter {r} is outside [0, {_k.MAX_RICE_PARAM}]")
    if count > 8 * len(data):  # every value takes at least one bit: checked before allocating
        raise CorruptDataError(f"{len(data)} bytes cannot hold {count} Rice-coded values")
    buf = np.frombuffer(data, dtype=np.uint8)
    out = np.zeros(count, np.int64)
    end = _k.rice_unpack_all(buf, r, out)
    if end < 0:
        raise CorruptDataError("invalid Rice-coded values (truncated or a bad escape)")
    if (end + 7) // 8 != len(data) or (end % 8 and int(buf[-1]) >> (end % 8)):
        raise CorruptDataError("Rice-coded values: trailing bytes or non-zero padding bits")
    return out.astype(np.uint64)


def pack_uints(values: np.ndarray, width: int | None = None) -> tuple[int, bytes]:
    """Pack non-negative ints into ``width`` bits each, little-endian; return (width, bytes).

    ``width`` defaults to the bit length of the largest value (0 for none or all zeros) and
    must be in [0, 63]. Output has exactly ceil(len * width / 8) bytes, padding bits zero.
    """
    arr = np.asarray(values)
    if arr.ndim != 1:
        raise ValueError(f"values must be 1-D, got shape {arr.shape}")
    if arr.size and arr.dtype.kind not in "iu":
        raise TypeError(f"values must have an integer dtype, got {arr.dtype}")
    hi = 0
    if arr.size:
        if int(arr.min()) < 0:
            raise ValueError("values must be non-negative")
        hi = int(arr.max())
    if width is None:
        width = hi.bit_length()
    if isinstance(width, bool) or not isinstance(width, (int, np.integer)) or not 0 <= width <= 63:
        raise ValueError(f"width must be an int in [0, 63], got {width!r}")
    width = int(width)
    if hi >> width:
        raise ValueError(f"value {hi} does not fit in {width} bits")
    out = np.zeros((arr.size * width + 7) // 8, dtype=np.uint8)
    if width and arr.size:
        _k.pack_bits(arr.astype(np.uint64), width, out)
    return width, out.tobytes()


def unpack_uints(data: bytes, count: int, width: int) -> np.ndarray:
    """Inverse of :func:`pack_uints`: ``count`` values of ``width`` bits as int64.

    Raises ``CorruptDataError`` unless ``len(data) == ceil(count * width / 8)`` and the
    padding bits are zero. ``count`` and ``width`` come from the caller (validated first).
    """
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise CorruptDataError(f"packed data must be bytes, got {type(data).__name__}")
    for name, v, hi in (("count", count, None), ("width", width, 63)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 0 or (hi is not None and v > hi):
            raise CorruptDataError(f"packed {name} invalid: {v!r}")
    count, width = int(count), int(width)
    expect = (count * width + 7) // 8
    if len(data) != expect:
        raise CorruptDataError(
            f"packed data has {len(data)} bytes, expected {expect} for {count} values of {width} bits"
        )
    out = np.zeros(count, dtype=np.int64)
    if width and count:
        if _k.unpack_bits(np.frombuffer(data, dtype=np.uint8), width, out):
            raise CorruptDataError("packed data has nonzero padding bits")
    return out


_MERGES_TRUNCATED_BINARY = 0


def pack_merges(merges: np.ndarray, alphabet_size: int) -> bytes:
    """Serialise a merge table: row i = (left, right), both < alphabet_size + i.

    Layout: one method byte (0), then per row the number left * R + right (R = A + i) in
    truncated binary over R*R values, as one little-endian bitstream (high bit of each code
    first), zero padding. About log2(R*R) bits per row, never more than ceil(log2(R*R)).
    """
    arr = np.asarray(merges)
    if arr.size == 0:
        arr = arr.reshape(0, 2)
    if arr.ndim != 2 or arr.shape[1] != 2:
        raise ValueError(f"merges must have shape (M, 2), got {arr.shape}")
    if arr.size and arr.dtype.kind not in "iu":
        raise TypeError(f"merges must have an integer dtype, got {arr.dtype}")
    if isinstance(alphabet_size, bool) or not isinstance(alphabet_size, (int, np.integer)) or alphabet_size < 1:
        raise ValueError(f"alphabet_size must be a positive int, got {alphabet_size!r}")
    alphabet_size = int(alphabet_size)
    m = arr.shape[0]
    if (alphabet_size + m) >= 1 << 30:
        raise ValueError("alphabet_size + number of merges must be below 2**30")
    arr = arr.astype(np.int64)
    if m:
        limit = alphabet_size + np.arange(m, dtype=np.int64)
        bad = np.flatnonzero((arr < 0).any(axis=1) | (arr >= limit[:, None]).any(axis=1))
        if bad.size:
            i = int(bad[0])
            raise ValueError(f"merge {i} = {tuple(arr[i])} has a child outside [0, {alphabet_size + i})")
    empty = np.zeros(0, dtype=np.uint8)
    bits = _k.merges_encode(arr, alphabet_size, empty)
    buf = np.zeros((bits + 7) // 8, dtype=np.uint8)
    _k.merges_encode(arr, alphabet_size, buf)
    return bytes([_MERGES_TRUNCATED_BINARY]) + buf.tobytes()


def unpack_merges(data: bytes, n_merges: int, alphabet_size: int) -> np.ndarray:
    """Inverse of :func:`pack_merges`; returns (n_merges, 2) int32 with row i's children < A + i.

    Raises ``CorruptDataError`` for an unknown method byte, a truncated stream, extra bytes
    or nonzero padding. ``n_merges`` must already be bounded by the caller (it allocates).
    """
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise CorruptDataError(f"merge table must be bytes, got {type(data).__name__}")
    for name, v in (("n_merges", n_merges), ("alphabet_size", alphabet_size)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < (0 if name == "n_merges" else 1):
            raise CorruptDataError(f"merge table {name} invalid: {v!r}")
    n_merges, alphabet_size = int(n_merges), int(alphabet_size)
    if alphabet_size + n_merges >= 1 << 30:
        raise CorruptDataError("merge table: alphabet_size + n_merges too large")
    data = bytes(data)
    if not data:
        raise CorruptDataError("merge table: empty (missing method byte)")
    if data[0] != _MERGES_TRUNCATED_BINARY:
        raise CorruptDataError(f"merge table: unknown method {data[0]}")
    body = np.frombuffer(data, dtype=np.uint8)[1:]
    # every row takes at least floor(log2(R*R)) >= 2*floor(log2 A) bits: cheap early refusal
    min_bits = n_merges * 2 * (alphabet_size.bit_length() - 1)
    if (min_bits + 7) // 8 > body.size:
        raise CorruptDataError("merge table: truncated")
    out = np.zeros((n_merges, 2), dtype=np.int64)
    status = _k.merges_decode(body, alphabet_size, out)
    if status != _k.OK:
        raise CorruptDataError(f"merge table: {TABLE_ERRORS.get(status, 'malformed')}")
    return out.astype(np.int32)



def pack_varints(values: np.ndarray) -> bytes:
    """LEB128 of each uint64 (7 bits a byte, low group first, high bit = more bytes follow), the
    shortest form of each."""
    v = np.ascontiguousarray(np.asarray(values).astype(np.uint64, copy=False))
    out = np.empty(10 * v.shape[0], np.uint8)
    return out[:_kv.encode_varints(v, out)].tobytes()


def read_varints(b: np.ndarray, count: int, where: str) -> tuple[np.ndarray, int]:
    """The first ``count`` varints of the bytes ``b`` (uint8) and how many bytes they take;
    CorruptDataError naming ``where`` for a cut, overlong or non-shortest one."""
    ends = np.flatnonzero(b < 0x80)
    if ends.shape[0] < count:
        raise CorruptDataError(f"{where}: the varints are cut short")
    if count == 0:
        return np.zeros(0, np.uint64), 0
    used = int(ends[count - 1]) + 1
    return unpack_varints(b[:used].tobytes(), where, count), used


def unpack_varints(data: bytes, where: str, count: int | None = None) -> np.ndarray:
    """The uint64 values of :func:`pack_varints` filling ``data`` (exactly ``count`` of them when
    given); CorruptDataError naming ``where`` for a cut, overlong or non-shortest varint."""
    b = np.frombuffer(data, dtype=np.uint8)
    out = np.empty(b.shape[0], np.uint64)
    got, overlong = _kv.decode_varints(b, out)
    if got == _kv.ERR_CUT or (count is not None and got != count):
        raise CorruptDataError(f"{where}: does not hold exactly {'the' if count is None else count} varints")
    if overlong:
        raise CorruptDataError(f"{where}: an overlong or non-shortest varint")
    return out[:got]
