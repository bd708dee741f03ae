"""Each value's rank among its channel's distinct values, the front-end stage ``"rank"``.

For signals on an inexact grid (an ADC whose levels are ~64 apart with 65 now and then) the
distinct values are the grid that exists: prediction then works on levels, not on raw codes.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._kernels import l1plan as _l1plan
from .._kernels import ranks as _ranks
from .._validate import expect_map, field_bytes, field_int
from ..errors import CorruptDataError
from ..format.bits import pack_varints, unpack_varints
from ._common import PerChannel, bits_of, field_unsigned, ordered
from ._stage import UNSIGNED_OF_WIDTH, register

#: rank_forward counts values wider than 16 bits with a table over their span when it is at most
#: RANK_TABLE times their number and RANK_TABLE_SPAN (narrower ones: RANK_TABLE_NARROW); other
#: inputs are sorted instead (same result). (A 24-bit hi-hat channel, 576 000 values over a span of 1.5 M: 9 ms against
#: 56 ms sorted; a kick, 96 000 over 3.9 M: sorted, 6 ms against 11.)
RANK_TABLE = 16

#: rank_forward counts values of at most 16 bits with a table over the whole dtype when it has at
#: least 2**bits / RANK_TABLE_NARROW values (the same ranks and values as sorting): on 16-bit
#: values the table's fixed cost (2**16 cells) beat sorting from about 600 values (2 000 values:
#: 79 -> 38 us, 4 000: 161 -> 41 us; the short audio files' "rank" outputs), where the former
#: RANK_TABLE sorted below 4 096
RANK_TABLE_NARROW = 64
RANK_TABLE_SPAN = 1 << 22


def _spans_table(u: np.ndarray) -> bool:
    """Whether :func:`rank_forward` ranks the uint64 values ``u`` (not empty) by a table over
    their span rather than by sorting."""
    span = int(u.max()) - int(u.min()) + 1
    return span <= min(RANK_TABLE * u.shape[0], RANK_TABLE_SPAN)


def _narrow_flip(arr: np.ndarray) -> tuple[np.ndarray, int]:
    """``arr`` (1-D integers of at most 16 bits) read as the unsigned integers of its width
    (native, contiguous: a view where it is one) and the bit whose flip maps them
    order-preservingly to those integers, as :func:`ordered` maps them to uint64 (the sign bit of
    a signed width, else 0)."""
    dtype = arr.dtype.newbyteorder("=")
    k = dtype.itemsize
    a = np.ascontiguousarray(arr, dtype=dtype).view(f"u{k}")
    return a, (1 << (8 * k - 1) if dtype.kind == "i" else 0)


def rank_forward(x: Any) -> tuple[np.ndarray, dict]:
    """Each value's rank among the distinct values of ``x``, and the distinct values.

    Returns
    -------
    k : ndarray of the smallest unsigned dtype that holds ``count - 1``, same length as ``x``
    params : dict
        ``count`` (distinct values), ``bits`` (8, 16, 32 or 64) and ``unsigned`` (0 or 1) of the
        original dtype, and ``values``: the distinct values in increasing order as LEB128
        varints, the first as its distance to the dtype's minimum, then each gap minus one.
    """
    arr = np.asarray(x)
    if arr.dtype.kind not in "iu":
        raise TypeError(f"x must be an integer array, got dtype {arr.dtype}")
    if arr.ndim != 1:
        raise ValueError(f"x must be 1-D, got shape {arr.shape}")
    bits = 8 * arr.dtype.itemsize
    if bits <= 16 and arr.shape[0] * RANK_TABLE_NARROW >= 1 << bits:  # a table over the dtype beats sorting
        # (the values as their own width's order-preserving unsigned integers, not widened to
        # uint64 and intp: a third of the time on a million 16-bit values; the same ranks)
        # (compiled passes reading the values in their width, the sign bit flipped as they are
        # read: numpy's bincount and fancy indexing each made an 8-byte copy first; the same ranks)
        a, flip = _narrow_flip(arr)
        present = np.zeros(1 << bits, np.bool_)
        _ranks.mark_present(a, flip, present)
        # (the values present and every value's rank in one compiled pass over the table:
        # np.flatnonzero, np.cumsum, its - 1 and astype took four passes over 2**16 cells; the
        # ranks, below 2**16, as uint16, read into the ranks' dtype: the same numbers)
        values = np.empty(present.shape[0], np.uint64)
        table = np.empty(present.shape[0], np.uint16)
        count = int(_l1plan.present_ranks(present, values, table))
        values = values[:count]
        ktype = np.uint8 if count <= 256 else np.uint16
        k = np.empty(a.shape[0], ktype)
        _ranks.gather_ranks(a, flip, table, k)
        gaps = np.concatenate((values[:1], values[1:] - values[:-1] - np.uint64(1)))
        params = {"count": int(count), "bits": bits, "unsigned": int(arr.dtype.kind == "u"),
                  "values": pack_varints(gaps)}
        return k, params
    u, bits = ordered(arr)  # order-preserving uint64: the first value is its distance to the minimum
    if bits > 16 and u.shape[0] and _spans_table(u):  # wider values over a span the table covers
        lo = u.min()
        d = (u - lo).astype(np.intp)
        present = np.zeros(int(d.max()) + 1, np.bool_)
        present[d] = True
        values = np.flatnonzero(present).astype(np.uint64) + lo
        k = (np.cumsum(present, dtype=np.int32) - 1)[d]  # (ranks < RANK_TABLE_SPAN)
    else:
        values, k = np.unique(u, return_inverse=True)
    gaps = np.concatenate((values[:1], values[1:] - values[:-1] - np.uint64(1)))
    kdtype = next(t for t in (np.uint8, np.uint16, np.uint32, np.uint64) if values.shape[0] <= np.iinfo(t).max + 1)
    params = {"count": int(values.shape[0]), "bits": bits, "unsigned": int(arr.dtype.kind == "u"),
              "values": pack_varints(gaps)}
    return k.reshape(-1).astype(kdtype), params


def check_rank_params(params: Any, n: int, dtype: Any) -> np.ndarray:
    """Validate untrusted rank params for ``n`` ranks; the distinct values in the original dtype.

    Checked: the field set, ``bits`` in {8, 16, 32, 64}, ``count`` in [1, n] (0 only when n is
    0), ``values`` exactly ``count`` canonical varints whose running sum stays in the dtype.
    """
    where = "rank params"
    bits_of(dtype)
    p = expect_map(params, where, ("count", "bits", "unsigned", "values"))
    bits = field_int(p, "bits", 8, 64, where=where)
    if bits not in (8, 16, 32, 64):
        raise CorruptDataError(f"{where}: 'bits' must be 8, 16, 32 or 64, got {bits}")
    unsigned = field_unsigned(p, where)
    count = field_int(p, "count", 1 if n else 0, max(n, 0), where=where)
    data = field_bytes(p, "values", where=where, max_size=10 * count)
    gaps = unpack_varints(data, f"{where}: 'values'", count)
    # the exact sum (Python ints) only when a float64 sum cannot tell (its relative error is
    # below count * 2**-53: a sum under half the range is certainly in it)
    if count and (float(gaps.sum(dtype=np.float64)) + count >= 2.0 ** (bits - 1)
                  and int(gaps.astype(object).sum()) + count - 1 > (1 << bits) - 1):
        raise CorruptDataError(f"{where}: the values run past the {bits}-bit range")
    u = np.cumsum(gaps + np.uint64(1), dtype=np.uint64) - np.uint64(1)
    if not unsigned:
        u ^= np.uint64(1 << (bits - 1))
    return u.astype(f"u{bits // 8}").view(f"{'u' if unsigned else 'i'}{bits // 8}")


def rank_inverse(k: Any, params: Any) -> np.ndarray:
    """Undo :func:`rank_forward`: ``values[k]``; CorruptDataError for a rank >= count."""
    arr = np.asarray(k)
    if arr.dtype.kind not in "iu":
        raise TypeError(f"k must be an integer array, got dtype {arr.dtype}")
    if arr.ndim != 1:
        raise ValueError(f"k must be 1-D, got shape {arr.shape}")
    values = check_rank_params(params, arr.shape[0], arr.dtype)
    if arr.size and (int(arr.min()) < 0 or int(arr.max()) >= values.shape[0]):
        raise CorruptDataError(f"rank: a rank lies outside [0, {values.shape[0]})")
    return values[arr.astype(np.intp)]



def _rank_dtype(count: int) -> np.dtype:
    """The smallest unsigned dtype holding ranks ``0 .. count - 1``."""
    return next(t for t in UNSIGNED_OF_WIDTH.values() if count <= 1 << (8 * t.itemsize))


@register
class RankStage(PerChannel):
    """Ranks among each channel's distinct values (:func:`rank_forward`)."""

    name = "rank"
    number = 3  #: its number on the wire (``ubpe.format.container.STAGES``)
    _forward = staticmethod(rank_forward)
    _inverse = staticmethod(rank_inverse)
    _check = staticmethod(check_rank_params)

    def output_dtype(self, dtype: np.dtype, params: dict[str, Any]) -> np.dtype:
        counts = [p["count"] for p in params.get("channels", [])]
        return _rank_dtype(max(counts, default=0))

    def _check_channel(self, p: Any, dtype: np.dtype, frames: int) -> np.ndarray:
        where = self._where()
        values = check_rank_params(p, frames, np.dtype(np.uint64))
        if p["bits"] != 8 * dtype.itemsize or p["unsigned"] != int(dtype.kind == "u"):
            raise CorruptDataError(f"{where}: 'bits' or 'unsigned' contradicts the {dtype} input")
        return values

    def _inverse_checked(self, y: np.ndarray, parsed: list, channels: list) -> np.ndarray:
        if not parsed:
            return np.zeros(y.shape, dtype=y.dtype)
        out = np.empty(y.shape, dtype=parsed[0].dtype)  # every channel's: checked against the input
        for c, values in enumerate(parsed):
            k = y[c]
            if k.size and (int(k.max()) >= values.shape[0] or (k.dtype.kind == "i" and int(k.min()) < 0)):
                raise CorruptDataError(f"rank: a rank lies outside [0, {values.shape[0]})")
            np.take(values, k, out=out[c])
        return out
