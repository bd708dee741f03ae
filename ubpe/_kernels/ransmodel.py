"""Numba kernels for the rANS decoder's model (ubpe.coders.rans): the count codes to the model
counts, the counts to frequencies summing to ``2**pb``, and the decoded histogram checked against
the codes, each in one pass instead of a dozen numpy calls (a short stream's decode is dominated
by those calls' fixed cost).

Each kernel computes exactly the integers of the numpy definition it replaces in
``ubpe.coders.rans`` (``_dequantize``, ``_normalize``, ``_check_histogram``), int64 arithmetic
wrapping as numpy's does; tests/test_decode_kernels.py holds them equal.
"""

from __future__ import annotations

import numpy as np

from . import njit
from .intrinsics import bit_length


@njit(cache=True, nogil=True)
def dequantize_codes(codes, q, model):
    """Count codes (int64, each >= 0) to the counts they stand for, into ``model`` (int64, same
    length): with ``q = 0`` a code is its count; else a code below ``2**(q+1)`` is its count and
    a larger one ``(code - e * 2**q) << e`` with ``e = (code >> q) - 1``. Returns the counts' sum
    (int64, wrapping as numpy's sum), or -1 when some ``e + q + 1`` exceeds 52 (nothing written
    then: ``_dequantize`` returns None). Preconditions: ``0 <= q <= 40``."""
    k = codes.shape[0]
    if q == 0:
        total = np.int64(0)
        for i in range(k):
            model[i] = codes[i]
            total += codes[i]
        return total
    for i in range(k):
        e = (codes[i] >> q) - 1
        if e < 0:
            e = 0
        if e + q + 1 > 52:
            return -1
    top = np.int64(1) << (q + 1)
    total = np.int64(0)
    for i in range(k):
        c = codes[i]
        if c < top:
            m = c
        else:
            e = (c >> q) - 1
            m = (c - e * (np.int64(1) << q)) << e
        model[i] = m
        total += m
    return total


@njit(cache=True, nogil=True)
def normalize_counts(counts, total, pb, freqs):
    """Model counts to rANS frequencies before the shortfall, into ``freqs`` (int64, same
    length): ``1 + c * (M - k) // total`` (``M = 2**pb``, ``k`` counts). Returns the shortfall
    ``M - sum(freqs)``, which the caller gives one each to the largest remainders ``c * (M - k)
    mod total``, ties to the lower index (a selection numpy does without compiling a sort:
    ``ubpe.coders.rans``). Preconditions: ``total`` the counts' sum, ``total >= 1``, ``k <= M``,
    ``total * M < 2**63``."""
    k = counts.shape[0]
    spare = (np.int64(1) << pb) - k
    acc = np.int64(0)
    for i in range(k):
        f = 1 + (counts[i] * spare) // total
        freqs[i] = f
        acc += f
    return (np.int64(1) << pb) - acc


@njit(cache=True, nogil=True)
def histogram_matches(hist, codes, q):
    """Whether every decoded count (``hist``, int64) is at least 1 and quantises with ``q``
    mantissa bits (``ubpe.coders.rans._quantize``; ``q = 0``: the count itself) to exactly its
    stored code (``codes``, int64, same length). Preconditions: counts below ``2**53``."""
    top = np.int64(1) << (q + 1)
    for i in range(hist.shape[0]):
        c = hist[i]
        if c < 1:
            return False
        if q == 0:
            if c != codes[i]:
                return False
            continue
        e = bit_length(c) - (q + 1)
        if e <= 0:
            code = c
        else:
            mant = (c + (np.int64(1) << (e - 1))) >> e
            if mant == top:
                e += 1
                mant = np.int64(1) << q
            code = e * (np.int64(1) << q) + mant
        if code != codes[i]:
            return False
    return True
