"""Small compiled passes over integers that numpy made with temporaries (issue 28): histograms
over a narrow span, lookups by table, token counts, bit packing.

* :func:`token_counts`: ``np.bincount`` of a token stream, reading the tokens in their own width:
  numpy's ``bincount`` first copies int32 tokens to an intp array (8 bytes a token: ECG's
  108 000 ids, 864 KB of fresh pages, faulted in at about 1.8 us a page on this machine).
* :func:`pack_bits`: ``ubpe.frontend.lpc._pack_coefs``' bit packing (each coefficient as
  ``width`` bits of two's complement, least significant first, the bytes little-endian in bit
  order), in one pass instead of a ``(coefficients, 16)`` bit matrix, a mask and ``np.packbits``.
* :func:`offset_counts`, :func:`nonzero_cells`, :func:`span_counts`, :func:`span_distinct`: the
  planner's and the alphabet's histograms (``estimates.value_counts``, ``alphabet.distinct``),
  each without ``y - lo``, ``np.bincount``'s bounds pass and a mask.
* :func:`gather_offsets` (unchecked) and :func:`table_ids` (checked): ids by a lookup table.
* :func:`median_cell`: the median's cell of a histogram (``searchsorted`` of its ``cumsum``).
* :func:`run_counts`: the counts of the distinct values of sorted integers (their runs).
"""

from __future__ import annotations

import numpy as np

from . import njit
from .alloc import empty, zeros


@njit(cache=True, nogil=True)
def token_counts(a, counts):
    """``counts[a[i]] += 1`` for every ``i``: with ``counts`` int64 zeros of ``vocab_size`` cells,
    ``np.bincount(a, minlength=vocab_size)`` (the same integers). Precondition: every ``a[i]`` in
    ``[0, len(counts))`` (the caller checked the tokens' range)."""
    for i in range(a.shape[0]):
        counts[a[i]] += 1


@njit(cache=True, nogil=True)
def pack_bits(values, widths, out):
    """Each ``values[i]`` (int64) as its low ``widths[i]`` bits (0 to 63), least significant
    first, one after the other into ``out`` (uint8 zeros of ``ceil(sum(widths) / 8)`` bytes; bit
    ``k`` of the stream is bit ``k % 8`` of byte ``k // 8``): ``np.packbits(bits,
    bitorder="little")`` of the same bit sequence, the last byte's spare bits zero."""
    pos = 0
    for i in range(values.shape[0]):
        v = np.uint64(values[i])
        w = widths[i]
        for t in range(w):
            if (v >> np.uint64(t)) & np.uint64(1):
                out[pos >> 3] |= np.uint8(1 << (pos & 7))
            pos += 1


@njit(cache=True, nogil=True)
def offset_counts(y, lo, counts):
    """``counts[y[i] - lo] += 1`` for every ``i``: with ``counts`` int64 zeros of ``hi - lo + 1``
    cells, ``np.bincount(y - lo, minlength=hi - lo + 1)`` (``lo``, ``hi``: the least and greatest
    of ``y``), the values read in their width and no ``y - lo`` array written."""
    for i in range(y.shape[0]):
        counts[np.int64(y[i]) - lo] += 1


@njit(cache=True, nogil=True)
def gather_offsets(y, lo, table, out):
    """``out[i] = table[y[i] - lo]`` for every ``i`` (``table[y - lo]``, each ``y[i] - lo`` in
    ``[0, len(table))``), the values read in their width: numpy's fancy indexing by ``y - lo``
    needed that intp array first."""
    for i in range(y.shape[0]):
        out[i] = table[np.int64(y[i]) - lo]


@njit(cache=True, nogil=True)
def offsets(y, lo, out):
    """``out[i] = y[i] - lo`` for every ``i`` (``out`` int32: each difference in ``[0, 2**31)``),
    the values read in their width: ``np.subtract(y, lo, dtype=np.int64).astype(np.int32)``
    without its int64 array."""
    for i in range(y.shape[0]):
        out[i] = np.int64(y[i]) - lo


@njit(cache=True, nogil=True)
def nonzero_cells(counts, out):
    """The non-zero cells of ``counts`` in index order, written to ``out`` (of at least as many
    cells); returns how many: ``counts[counts > 0]`` (counts are never negative) without the
    boolean mask and numpy's masked copy (17 us for 7 604 cells, this machine)."""
    k = 0
    for i in range(counts.shape[0]):
        v = counts[i]
        out[k] = v
        k += select_nonzero(v)
    return k


@njit(cache=True, nogil=True)
def run_counts(s, out):
    """The lengths of the runs of equal values of ``s`` (1-D, sorted), in order, written to
    ``out`` (of at least as many cells); returns how many: the non-zero cells of the histogram
    of ``s`` over its span, in value order (``np.unique(s, return_counts=True)[1]``)."""
    n = s.shape[0]
    k = 0
    start = 0
    for i in range(1, n):
        if s[i] != s[i - 1]:
            out[k] = i - start
            k += 1
            start = i
    if n:
        out[k] = n - start
        k += 1
    return k


@njit(cache=True, nogil=True)
def median_cell(counts, half):
    """The least ``i`` with ``counts[0] + ... + counts[i] > half`` (``len(counts)`` when none):
    ``np.searchsorted(np.cumsum(counts), half, side="right")`` of counts that are never negative
    (the "mag" coder's center from the tokens' histogram), without the cumulative array."""
    acc = np.int64(0)
    for i in range(counts.shape[0]):
        acc += counts[i]
        if acc > half:
            return i
    return counts.shape[0]


@njit(cache=True, nogil=True, inline="always")
def select_nonzero(v):
    """1 where ``v`` is not zero, else 0 (no branch)."""
    return np.int64(v != 0)


@njit(cache=True, nogil=True)
def span_counts(y, lo, span):
    """How many times each value of ``y`` occurs, the values that occur only, in value order
    (int64, a new array): ``c = np.bincount(y - lo)`` (int64 differences) then ``c[c > 0]``.
    Preconditions: ``y`` 1-D integers below 2**63 with every ``y[i] - lo`` in ``[0, span)``."""
    counts = zeros(span, np.int64)
    offset_counts(y, lo, counts)
    k = nonzero_cells(counts, counts)  # (in place: cell k is written after cell j >= k is read)
    out = empty(k, np.int64)
    for j in range(k):
        out[j] = counts[j]
    return out


@njit(cache=True, nogil=True)
def span_distinct(y, lo, span):
    """The sorted distinct values of ``y`` (int64): ``np.flatnonzero(np.bincount(y - lo)) + lo``.
    Preconditions: ``y`` 1-D integers below 2**63 with every ``y[i] - lo`` in ``[0, span)``."""
    seen = zeros(span, np.uint8)
    for i in range(y.shape[0]):
        seen[np.int64(y[i]) - lo] = 1
    k = 0
    for j in range(span):
        k += seen[j]
    out = empty(k, np.int64)
    k = 0
    for j in range(span):
        if seen[j]:
            out[k] = lo + j
            k += 1
    return out


@njit(cache=True, nogil=True)
def table_ids(seq, lo, table, out):
    """``out[i] = table[seq[i] - lo]`` (an integer alphabet's ids by its lookup table), one
    pass; returns -1, or the first position whose value is off the table or maps to a
    negative id (``out`` then partly written: the caller reports it). Preconditions: ``seq`` 1-D
    integers below 2**63, ``out`` int32 of its length."""
    m = table.shape[0]
    for i in range(seq.shape[0]):
        off = np.int64(seq[i]) - lo
        if off < 0 or off >= m:
            return i
        v = table[off]
        if v < 0:
            return i
        out[i] = v
    return -1
