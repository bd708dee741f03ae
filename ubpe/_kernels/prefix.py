"""Compiled passes of the merge-prefix search (:func:`ubpe.planner.replay.best_prefix`), each the
integers its Python loops made (issue 28: a few-valued channel's merge search on a held-out file):

* :func:`unroll`: a prefix's token histogram from a longer prefix's, each dropped merge's count
  handed back to its two children (the same integer additions in the same order);
* :func:`table_bits`: the bits of the merge table (``entropy.merges_encode``'s truncated-binary
  rows) of every prefix at once, where ``pack_merges`` was called once a prefix.
"""

from __future__ import annotations

import numpy as np

from . import njit
from .entropy import _put_trunc


@njit(cache=True, nogil=True)
def unroll(h, left, right, a, top, k):
    """Drop merges ``top - 1`` down to ``k`` (``0 <= k <= top``) from the histogram ``h`` (int64,
    at least ``a + top`` cells): for ``t = a + top - 1`` down to ``a + k``, the count of token
    ``t`` is added to ``h[left[t - a]]`` and to ``h[right[t - a]]`` (both below ``t``), then
    ``h[t] = 0``. ``left``, ``right``: the merges' children (int64, at least ``top`` each)."""
    for t in range(a + top - 1, a + k - 1, -1):
        c = h[t]
        if c:
            j = t - a
            h[left[j]] += c
            h[right[j]] += c
            h[t] = 0


@njit(cache=True, nogil=True)
def table_bits(left, right, a, out):
    """``out[k]`` (int64, ``len(left) + 1`` cells) = the bits ``entropy.merges_encode`` writes for
    the first ``k`` merges (children ``left``, ``right``, int64, each below ``a + row``; ``a >= 1``),
    for every ``k``: row ``i``'s truncated-binary code of ``left * R + right`` over ``R * R``
    values, ``R = a + i`` (a dry run of the same code: no buffer)."""
    empty = np.zeros(0, np.uint8)
    pos = np.int64(0)
    out[0] = 0
    for i in range(left.shape[0]):
        r = np.int64(a) + i
        pos = _put_trunc(empty, pos, left[i] * r + right[i], r * r)
        out[i + 1] = pos
