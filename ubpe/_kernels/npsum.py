"""Float sums over counts as numpy computes them, in one compiled pass (issue 28, level 1).

The planner ranks chains by order-0 sizes, ``n log2 n - sum(c log2 c)`` of a histogram's
non-zero counts ``c``, which numpy made as ``float((c * np.log2(c)).sum())``: a cast, a
``log2``, a product and a sum, each a pass and a temporary, about 10 us a call on a short
file's few hundred counts. These kernels give the same floats:

* the logarithms from a table of numpy's own ``np.log2`` of the integers below its length (built
  by the caller with numpy: numpy's vectorised ``log2`` differs from libm's in the last bit on
  about 1 in 18 000 integers, so numba's ``math.log2`` would not do), each the value numpy
  gives for that float wherever it sits in an array (tests/test_npsum.py checks);
* the sums in numpy's pairwise order (:func:`pairwise_sum`: ``np.add.reduce`` of a contiguous
  float64 array: blocks of at most 128 summed with 8 accumulators, halves at multiples of 8
  above), started from ``0.0`` as the reduction starts from the identity;
* each product ``c * log2(c)`` one IEEE multiplication, as numpy's.

A count outside ``[1, len(log2))`` gives the sentinel -1.0 (the caller then asks numpy).
"""

from __future__ import annotations

import numpy as np

from . import njit
from .alloc import empty

#: numpy's reduction block (``PW_BLOCKSIZE`` of its ``pairwise_sum``)
_BLOCK = 128


@njit(cache=True, nogil=True, no_cpython_wrapper=True)
def _block_sum(e, lo, n):
    """numpy's sum of a block of ``n <= 128`` floats ``e[lo:lo + n]`` (:func:`pairwise_sum`'s
    leaves)."""
    if n < 8:
        res = 0.0
        for i in range(lo, lo + n):
            res += e[i]
        return res
    r0, r1, r2, r3 = e[lo], e[lo + 1], e[lo + 2], e[lo + 3]
    r4, r5, r6, r7 = e[lo + 4], e[lo + 5], e[lo + 6], e[lo + 7]
    end = lo + n - n % 8
    i = lo + 8
    while i < end:
        r0 += e[i]
        r1 += e[i + 1]
        r2 += e[i + 2]
        r3 += e[i + 3]
        r4 += e[i + 4]
        r5 += e[i + 5]
        r6 += e[i + 6]
        r7 += e[i + 7]
        i += 8
    res = ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))
    while i < lo + n:
        res += e[i]
        i += 1
    return res


@njit(cache=True, nogil=True)
def pairwise_sum(e, lo, n):
    """``np.add.reduce(e[lo:lo + n])`` of float64 ``e`` (contiguous), the same float: numpy's
    pairwise summation (``n < 8``: in order from 0.0; ``n <= 128``: eight accumulators over
    strides of 8, combined ``((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))``, then the
    remainder in order; longer: the halves at ``n // 2`` rounded down to a multiple of 8, each
    summed so, then added). Its recursion walked with a stack of at most 64 halves (numba's
    cache does not keep a recursive kernel)."""
    if n <= _BLOCK:
        return _block_sum(e, lo, n)
    # a frame on top is a leaf or a half not yet split; below it, halves whose left half is
    # being summed (stage 0) or whose right half is (stage 1, the left's sum in ``left``)
    los = empty(64, np.int64)
    ns = empty(64, np.int64)
    stage = empty(64, np.int64)
    left = empty(64, np.float64)
    los[0], ns[0], stage[0] = lo, n, 0
    sp = 1
    out = 0.0
    while sp > 0:
        top = sp - 1
        m = ns[top]
        if m > _BLOCK:  # split: its left half first
            h = m // 2
            h -= h % 8
            los[sp], ns[sp], stage[sp] = los[top], h, 0
            sp += 1
            continue
        v = _block_sum(e, los[top], m)
        sp -= 1
        while sp > 0 and stage[sp - 1] == 1:  # the right half of its parent: the parent's sum
            v = left[sp - 1] + v
            sp -= 1
        if sp == 0:
            out = v
            break
        # the left half of its parent: kept, the parent's right half next
        p = sp - 1
        left[p] = v
        stage[p] = 1
        h = ns[p] // 2
        h -= h % 8
        los[sp], ns[sp], stage[sp] = los[p] + h, ns[p] - h, 0
        sp += 1
    return out


@njit(cache=True, nogil=True)
def plogp_sum(counts, log2):
    """``float((c * np.log2(c)).sum())`` of ``c = counts.astype(np.float64)`` (``counts`` 1-D
    integers), the same float, ``log2[k]`` numpy's ``np.log2(float(k))``; -1.0 when a count is
    outside ``[1, len(log2))``. Memory: one float64 a count."""
    n = counts.shape[0]
    e = empty(n, np.float64)
    nlog = log2.shape[0]
    for i in range(n):
        k = np.int64(counts[i])
        if k < 1 or k >= nlog:
            return -1.0
        e[i] = np.float64(k) * log2[k]
    return 0.0 + pairwise_sum(e, 0, n)


@njit(cache=True, nogil=True)
def order0_sums(counts, log2, cap, extra):
    """``(float((c * lc).sum()), float(np.minimum(lc + extra, cap).sum()))`` of ``c =
    counts.astype(np.float64)`` and ``lc = np.log2(c)`` (``counts`` 1-D integers), the same
    floats (the planner's order-0 bits and its table's: ``ubpe.planner.fast.static_parts``);
    ``(-1.0, -1.0)`` when a count is outside ``[1, len(log2))``. Memory: two float64 a count."""
    n = counts.shape[0]
    e = empty(n, np.float64)
    t = empty(n, np.float64)
    nlog = log2.shape[0]
    for i in range(n):
        k = np.int64(counts[i])
        if k < 1 or k >= nlog:
            return -1.0, -1.0
        lc = log2[k]
        e[i] = np.float64(k) * lc
        v = lc + extra
        t[i] = v if v < cap else cap
    return 0.0 + pairwise_sum(e, 0, n), 0.0 + pairwise_sum(t, 0, n)
