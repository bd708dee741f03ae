"""``ubpe._kernels.borrow.borrowed``: the same data, shape and strides, and no reference counting."""

from __future__ import annotations

import sys

import numpy as np

from ubpe._kernels import njit
from ubpe._kernels.borrow import borrowed


@njit(nogil=True)
def _rows_sum(a, out):
    """out[r] = sum of row r of ``a``, through borrowed views (and written through one)."""
    a = borrowed(a)
    out = borrowed(out)
    for r in range(a.shape[0]):
        row = a[r]
        s = 0
        for j in range(row.shape[0]):
            s += row[j]
        out[r:r + 1][0] = s
    return out.shape[0]


def test_borrowed_reads_and_writes_the_same_data():
    a = np.arange(24, dtype=np.int64).reshape(4, 6)[:, ::2]  # strided: strides kept
    out = np.zeros(4, np.int64)
    assert _rows_sum(a, out) == 4
    assert np.array_equal(out, a.sum(axis=1))


def test_borrowed_leaves_the_owner_alone():
    a = np.ones((3, 5), np.int64)
    out = np.zeros(3, np.int64)
    before = sys.getrefcount(a), sys.getrefcount(out)
    for _ in range(1000):
        _rows_sum(a, out)
    assert (sys.getrefcount(a), sys.getrefcount(out)) == before
    assert np.array_equal(out, np.full(3, 5))
