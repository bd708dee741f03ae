"""Both id layouts' "mag" statistics from one pass (issue 28: level 1's planner).

Level 1 sizes a chain's output ``y`` under two layouts of its ids: the bare ids ``rank[y - lo]``
(the values present, numbered) about ``rank[middle]``, and the dense ids ``y - lo`` about
``middle``. Each was a :func:`ubpe._kernels.level1.mag_stats` pass (an ids gather, each token's
magnitude and class, then two running means a token). Where the span has no gap about the median
(a residual's holes are in its tails), a token's zigzagged magnitude is the same in both layouts
(``rank[d] - rank[middle] == d - middle`` when every value between them is present), and so are
the running means, the contexts and the counts, for every token until the magnitudes first
differ, and again once both running means meet. :func:`pair_stats` counts the dense ids, and
the bare ids only where their magnitude or a running mean differs, as corrections: the same
integers as the two passes. On ECG's "lpc" residual 30 of 108 000 tokens differ and the means
differ on 523 (rate 3) and 1 364 (rate 5); on short audio files a fifth or more do, and the
caller keeps the two passes (``limit``).
"""

from __future__ import annotations

import numpy as np

from . import njit
from .alloc import empty, zeros
from .intrinsics import select
from .level1 import N_BUCKETS, N_CONTEXTS, _bucket, _context, bucket_select


@njit(cache=True, nogil=True)
def pair_stats(y, lo, rank, hist, center_bare, center_dense, rates, counts, limit):
    """Fill ``counts`` (int64 zeros, ``(4, N_CONTEXTS, N_BUCKETS)``) as
    ``mag_stats(rank[y - lo], center_bare, rates, counts[:2])`` and ``mag_stats(y, lo +
    center_dense, rates, counts[2:])`` fill it (:func:`ubpe._kernels.level1.mag_stats`), and return
    ``(raw bits of the bare ids, raw bits of the dense ids, True)``; or ``(0, 0, False)``, with
    ``counts`` still zeros, when more than ``limit`` tokens' magnitudes differ between the two
    layouts (then the two passes cost less; told from ``hist`` before any pass over ``y``).
    Preconditions: ``y`` 1-D integers in ``[lo, lo + len(rank))``, ``rank`` the bare ids by ``y -
    lo`` (int32, increasing where present), ``hist`` the histogram of ``y - lo`` (``len(rank)``
    cells), both
    centers and every id in ``[0, 2**24)``, exactly two rates, each in [2, 8]."""
    n = y.shape[0]
    span = rank.shape[0]
    # the run of values present about the median: within it a token's bare magnitude is its
    # dense one (rank[d] - rank[middle] == d - middle), outside it never (a gap lies between)
    low = center_dense
    while low > 0 and (rank[low - 1] != rank[low - 2] if low >= 2 else rank[0] == 0):
        low -= 1
    high = center_dense
    while high + 1 < span and rank[high + 1] != rank[high]:
        high += 1
    outside = 0  # the tokens outside the run
    for d in range(low):
        outside += hist[d]
    for d in range(high + 1, span):
        outside += hist[d]
    if outside > limit:
        return 0, 0, False
    zs = empty(n, np.uint32)  # the dense ids' zigzagged magnitudes
    bk = empty(n, np.uint8)  # and classes
    raw_dense = 0
    for i in range(n):
        d = np.int64(y[i]) - lo
        e = d - center_dense
        z = (e << 1) ^ (e >> 63)
        b = bucket_select(z)
        zs[i] = z
        bk[i] = b
        raw_dense += select(b >= 4, (b >> 1) - 1, 0)
    at = empty(outside + 1, np.int64)  # the tokens whose bare magnitude differs, in order
    zb_at = empty(outside + 1, np.int64)  # and that magnitude
    raw_delta = 0  # the bare ids' raw bits less the dense ids'
    m = 0
    if outside:
        for i in range(n):
            d = np.int64(y[i]) - lo
            if d < low or d > high:
                f = np.int64(rank[d]) - center_bare
                zb = (f << 1) ^ (f >> 63)
                at[m] = i
                zb_at[m] = zb
                bb = _bucket(zb)
                b = np.int64(bk[i])
                raw_delta += select(bb >= 4, (bb >> 1) - 1, 0) - select(b >= 4, (b >> 1) - 1, 0)
                m += 1
    at[m] = n  # (the sentinel: no token)
    ra = rates[0]
    rb = rates[1]
    sa = ra - 2
    sb = rb - 2
    dense_a = counts[2]
    dense_b = counts[3]
    corr = zeros((2, N_CONTEXTS, N_BUCKETS), np.int64)  # the bare counts less the dense ones
    ma = np.int64(0)  # the dense ids' running means
    mb = np.int64(0)
    i = 0
    k = 0
    while i < n:
        # in step: the bare ids' counts are the dense ids' (no correction), up to the next token
        # whose magnitudes differ
        nxt = at[k]
        for j in range(i, nxt):
            b = np.uint64(bk[j])
            z = np.int64(zs[j])
            dense_a[np.uint64(_context(ma, sa)), b] += 1
            dense_b[np.uint64(_context(mb, sb)), b] += 1
            ma = ma + z - (ma >> ra)
            mb = mb + z - (mb >> rb)
        i = nxt
        if i >= n:
            break
        # out of step from token i: both counted (the bare ids as corrections) until the running
        # means meet again, the next token's magnitudes alike
        pa = ma
        pb = mb
        while i < n:
            b = np.int64(bk[i])
            z = np.int64(zs[i])
            ca = _context(ma, sa)
            cb = _context(mb, sb)
            dense_a[ca, b] += 1
            dense_b[cb, b] += 1
            zb = z
            bb = b
            if i == at[k]:
                zb = zb_at[k]
                bb = _bucket(zb)
                k += 1
            qa = _context(pa, sa)
            qb = _context(pb, sb)
            corr[0, qa, bb] += 1
            corr[0, ca, b] -= 1
            corr[1, qb, bb] += 1
            corr[1, cb, b] -= 1
            ma = ma + z - (ma >> ra)
            mb = mb + z - (mb >> rb)
            pa = pa + zb - (pa >> ra)
            pb = pb + zb - (pb >> rb)
            i += 1
            if pa == ma and pb == mb and i != at[k]:
                break
    for r in range(2):
        for c in range(N_CONTEXTS):
            for j in range(N_BUCKETS):
                counts[r, c, j] += counts[2 + r, c, j] + corr[r, c, j]
    return raw_dense + raw_delta, raw_dense, True
