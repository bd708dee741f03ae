"""Small compiled passes on level 1's path that numpy made with temporaries (issue 28, target 1).

* :func:`token_counts`: ``np.bincount`` of a token stream, reading the tokens in their own width:
  numpy's ``bincount`` first copies int32 tokens to an intp array (8 bytes a token: ECG's
  108 000 ids, 864 KB of fresh pages, faulted in at about 1.8 us a page on this machine).
* :func:`pack_bits`: ``ubpe.frontend.lpc._pack_coefs``' bit packing (each coefficient as
  ``width`` bits of two's complement, least significant first, the bytes little-endian in bit
  order), in one pass instead of a ``(coefficients, 16)`` bit matrix, a mask and ``np.packbits``.
"""

from __future__ import annotations

import numpy as np

from . import njit


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


@njit(cache=True, nogil=True, inline="always")
def select_nonzero(v):
    """1 where ``v`` is not zero, else 0 (no branch)."""
    return np.int64(v != 0)
