"""Kernels of the ``"rank"`` stage's forward pass on values of at most 16 bits
(:func:`ubpe.frontend.rank.rank_forward`): the values present, and each value's rank by a table,
each in one pass over the values, reading them in their own width (the order-preserving flip of
a signed value's sign bit done in the pass). numpy's ``np.bincount`` and fancy indexing, which
they replace, first converted a million 16-bit values to an 8 MB intp array each (neural
recordings, a million int16 values: 1.24 + 1.46 ms of their 3.2 ms, this machine).
"""

from __future__ import annotations

import numpy as np

from . import njit


@njit(cache=True, nogil=True)
def mark_present(a, flip, present):
    """``present[a[i] ^ flip] = True`` for every ``i`` (``a``: 1-D uint8 or uint16; ``flip``: 0,
    or the sign bit of the width, 2**7 or 2**15, for signed values read as unsigned; ``present``:
    bool, at least ``2**(8 * a.itemsize)`` cells, False where no value falls: ``np.bincount(a ^
    flip, minlength=len(present)) > 0`` when it starts all False)."""
    for i in range(a.shape[0]):
        present[a[i] ^ flip] = True


@njit(cache=True, nogil=True)
def gather_ranks(a, flip, table, out):
    """``out[i] = table[a[i] ^ flip]`` (``table[a ^ flip]`` with ``out`` of ``table``'s dtype;
    ``a`` and ``flip`` as for :func:`mark_present`; ``table`` at least ``2**(8 * a.itemsize)``
    entries; ``out`` of ``len(a)``)."""
    for i in range(a.shape[0]):
        out[i] = table[a[i] ^ flip]


@njit(cache=True, nogil=True)
def mark_offsets(a, lo, present):
    """``present[a[i] - lo] = True`` for every ``i`` (``a``: 1-D integers, each ``a[i] - lo`` in
    ``[0, len(present))``; ``present`` bool: with all False at the start, ``np.bincount(a - lo,
    minlength=len(present)) > 0``), reading the values in their width (no int64 copy)."""
    for i in range(a.shape[0]):
        present[a[i] - lo] = True


@njit(cache=True, nogil=True)
def lookup_coded(a, lo, coded, ids, outside):
    """``g = coded[a[i] - lo]`` for every ``i``: ``ids[i] = g`` and ``outside[i] = False`` where
    ``g >= 0``, else ``ids[i] = ~g`` and ``outside[i] = True`` (:func:`ubpe.format.fields.escaped_ids`'
    table: an alphabet id, or its complement for a value outside the alphabet). Preconditions:
    every ``a[i] - lo`` in ``[0, len(coded))``; ``ids`` (int32) and ``outside`` (bool) of
    ``len(a)``."""
    for i in range(a.shape[0]):  # (no branch: g ^ (g >> 63) is g, or ~g when g < 0)
        g = np.int64(coded[a[i] - lo])
        ids[i] = g ^ (g >> 63)
        outside[i] = g < 0
