"""Numba kernel for the decimal float stage's inverse with ulp adjustments (ubpe.frontend.floatcodes,
``floatdec`` with ``adj`` and no ``shifts`` or ``fine``): each integer divided (or multiplied) by its
channel's scale, rounded to the values' float dtype, and its adjustment added to the float's bits,
in one pass instead of a dozen numpy calls (whose fixed cost was most of a 1 000-value channel's
time)."""

from __future__ import annotations

import numpy as np

from . import njit


@njit(cache=True, nogil=True)
def decimal_ulps(k, divide, scale, tokens, floats, bits):
    """``floats[c, f] = k[c, f] / scale[c]`` where ``divide[c]``, else ``k[c, f] * scale[c]``
    (IEEE float64, round to nearest, then rounded to ``floats``' dtype: numpy's ``np.divide(k,
    scale, dtype=float64).astype(dtype)``), then ``bits[c, f] += zigzag⁻¹(tokens[c * F + f])``
    modulo ``2**bits`` (``t >> 1`` for even ``t``, ``-((t + 1) >> 1)`` for odd).

    ``k``: int64 ``(C, F)``; ``divide``: bool ``(C,)``; ``scale``: float64 ``(C,)``; ``tokens``:
    int32 ``(C * F,)``, each >= 0; ``floats``: float32 or float64 ``(C, F)``, C-contiguous;
    ``bits``: ``floats`` viewed as the unsigned integer of its width (the same memory)."""
    channels, frames = k.shape
    i = 0
    for c in range(channels):
        sc = scale[c]
        dv = divide[c]
        for f in range(frames):
            v = np.float64(k[c, f])
            floats[c, f] = v / sc if dv else v * sc
            t = np.int64(tokens[i])
            i += 1
            bits[c, f] += np.uint64((t >> 1) ^ -(t & 1))  # (two's complement: modulo 2**bits)
