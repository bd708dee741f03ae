"""A lower bound of the "mag" coder's options at one running-mean rate (numba), for an exact
prune of the coder's rate search (:func:`ubpe.coders.mag._encode_mag`).

For a rate's counts ``stats[r]`` (``(N_CONTEXTS, N_BUCKETS)``, as ``mag_stats`` fills them),
every option :func:`ubpe._kernels.residual.mag_options_with` computes, at every precision, is
at least

* payload: the counts' empirical conditional entropy ``sum_c sum_b n_cb * log2(S_c / n_cb)``
  (Gibbs' inequality: each used row's frequencies, normalised to sum to ``2**t`` over its used
  buckets, are a probability law; the cross-entropy of the counts under any law is at least
  their entropy), plus
* table: :func:`~ubpe._kernels.residual.table_encode`'s bits that do not depend on the
  frequencies (the first and last context, the "used" bits, each used row's bucket range as two
  gamma codes: what ``mag_options_with`` calls ``base``), plus per used row the shift's unary
  code (at least its closing one: 1 bit) and one adaptive Rice code per bucket of its range but
  the last (each at least 1 bit).

So ``bound[r] + raw_bits`` never exceeds the least total ``ce + raw_bits + tbits`` of rate ``r``
(in exact arithmetic; the float sums differ from it by far less than the margin the coder takes).
"""

from __future__ import annotations

import numpy as np

from . import njit
from .residual import _gamma_bits, _zigzag


@njit(cache=True, nogil=True)
def mag_bounds(stats, log2, bound):
    """``bound[r]`` (float64, one per rate): the lower bound above of the payload + table bits
    of rate ``r``'s counts ``stats[r]`` (int64 ``(rates, N_CONTEXTS, N_BUCKETS)``, counts >= 0)
    at every precision. ``log2``: ``log2[v] = np.log2(v)`` for ``v`` below its length (larger
    counts are computed)."""
    nc, nb = stats.shape[1], stats.shape[2]
    nlog = log2.shape[0]
    for r in range(stats.shape[0]):
        h = 0.0
        bits = 0
        fc = -1
        lc = -1
        plo = 0
        phi = 0
        for c in range(nc):
            s = 0
            lo = -1
            hi = -1
            for b in range(nb):
                v = stats[r, c, b]
                if v > 0:
                    s += v
                    if lo < 0:
                        lo = b
                    hi = b
            if s == 0:
                continue
            if fc < 0:
                fc = c
            lc = c
            ls = log2[s] if s < nlog else np.log2(np.float64(s))
            for b in range(lo, hi + 1):
                v = stats[r, c, b]
                if v > 0:
                    h += v * (ls - (log2[v] if v < nlog else np.log2(np.float64(v))))
            bits += _gamma_bits(_zigzag(lo - plo)) + _gamma_bits(_zigzag(hi - phi))
            plo = lo
            phi = hi
            bits += 1 + (hi - lo)  # the shift's closing one, a Rice code a bucket but the last
        bits += 6 if fc < 0 else 12 + max(lc - fc - 1, 0)
        bound[r] = h + np.float64(bits)
