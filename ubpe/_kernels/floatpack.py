"""Kernel of the "floatpack" coder (:mod:`ubpe.coders.floatpack`): its packed integers back to
floats in one pass, with one allocation (the output), instead of unpacking to int64, adding
``lo``, converting and rounding in four numpy passes, whose fixed costs dominated the short
series it codes (100 values: about half a call's time).

Self-contained (numba caches per file): nothing is imported from the other kernel files.
"""

from __future__ import annotations

import numpy as np

from . import njit


@njit(cache=True, nogil=True)
def decode(data, at, width, lo, divide, scale, out):
    """``out[i] = float64(lo + u_i) / scale`` when ``divide``, else ``* scale``, rounded to
    ``out``'s dtype (float32 or float64; IEEE binary64 arithmetic, round to nearest: numpy's
    ``k.astype(float64) / scale`` then ``astype``), ``u_i`` the ``i``-th value of ``width`` bits
    of ``data`` (``bytes``: numba reads them without an array made of them) from byte ``at`` on,
    LSB-first. Returns the padding bits after the last value (0 for a canonical stream).

    Preconditions (checked by the caller): ``0 <= width <= 54``, ``len(data) - at ==
    ceil(len(out) * width / 8)``, ``|lo| <= 2**53``, ``scale`` positive and finite."""
    n = out.shape[0]
    acc = np.uint64(0)
    held = 0  # bits in acc: below width before a read, so at most 53 + 8 after one
    mask = (np.uint64(1) << np.uint64(width)) - np.uint64(1)
    for i in range(n):
        while held < width:
            acc |= np.uint64(data[at]) << np.uint64(held)
            at += 1
            held += 8
        v = np.float64(np.int64(acc & mask) + lo)
        acc >>= np.uint64(width)
        held -= width
        out[i] = v / scale if divide else v * scale
    return acc
