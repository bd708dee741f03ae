"""Histograms of integers over a narrow span, each one compiled call (the planner's and the
alphabet's numpy passes: a bound, a cast, a subtraction, ``np.bincount`` with its own bounds
pass, a mask; ``estimates.value_counts`` and ``alphabet._distinct``)."""

from __future__ import annotations

import numpy as np

from . import njit
from .alloc import empty, zeros


@njit(cache=True, nogil=True)
def span_counts(y, lo, span):
    """How many times each value of ``y`` occurs, the values that occur only, in value order
    (int64, a new array): ``c = np.bincount(y - lo)`` (int64 differences) then ``c[c > 0]``.
    Preconditions: ``y`` 1-D integers below 2**63 with every ``y[i] - lo`` in ``[0, span)``."""
    counts = zeros(span, np.int64)
    for i in range(y.shape[0]):
        counts[np.int64(y[i]) - lo] += 1
    k = 0
    for j in range(span):
        if counts[j] != 0:
            counts[k] = counts[j]
            k += 1
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
