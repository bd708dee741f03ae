"""The binary coder of the level-3 kernels (``mixsignal``, ``mixctx``) and its primitives:
the squash and stretch tables, adaptive counters (Q16 probabilities, update rates by count),
the carry-less 32-bit arithmetic coder, a coded bit's cost, and the value model's final mix.
Normative with ``mixsignal`` for every level-3 payload (moved here unchanged, so that ``mixctx``
and ``mixsignal`` share them without importing each other).
"""

from __future__ import annotations

import numpy as np

from . import njit
from .cmcore import _stretch_table
from .intrinsics import bit_length, imax

N_SID = 16  #: decision steps of the bit-length code: 0 first, 1..7 up, 8..15 down
VM_ROWS = 1 + N_SID + 16  #: the final mix's weight rows: the sign, the bit-length steps, the low bits

_SQUASH_KNOTS = np.array([1, 2, 4, 6, 10, 17, 27, 45, 74, 120, 194, 311, 488, 747, 1102, 1546, 2048,
                          2550, 2994, 3349, 3608, 3785, 3902, 3976, 4022, 4051, 4069, 4079, 4086, 4090,
                          4092, 4094, 4095], dtype=np.int64)


@njit(cache=True, nogil=True)
def _tables():
    """(squash, stretch, rate): squash[d + 2047] = 4096 / (1 + exp(-d / 256)) by integer
    interpolation of 33 knots; stretch[p] the smallest d with squash(d) >= p; rate[c] =
    131072 // (2 c + 3), a counter's step after c updates."""
    sq = np.empty(4095, np.int64)
    for d in range(-2047, 2048):
        w = d & 127
        i = (d >> 7) + 16
        sq[d + 2047] = (_SQUASH_KNOTS[i] * (128 - w) + _SQUASH_KNOTS[i + 1] * w + 64) >> 7
    st = _stretch_table(sq)
    rt = np.empty(256, np.int64)
    for c in range(256):
        rt[c] = 131072 // (2 * c + 3)
    return sq, st, rt


@njit(cache=True, nogil=True, inline="always")
def _bitlen(v):
    """Bits of ``v`` (0 for 0), and 0 for a negative ``v``: the one bit-length helper
    (``intrinsics.bit_length``) with the negatives this kernel's callers may pass clamped."""
    return bit_length(imax(v, 0))


@njit(cache=True, nogil=True, inline="always")
def _clamp(v, lo, hi):
    return lo if v < lo else (hi if v > hi else v)


@njit(cache=True, nogil=True, inline="always")
def _code(ac, buf, p, y, dec):
    """Code one bit (probability p / 4096 of a 1, 1 <= p <= 4095) with coder state ac = [x1, x2,
    x, pos]; encoding writes settled bytes to buf while pos < len(buf), decoding reads them
    (zeros past the end). Returns the bit."""
    x1 = ac[0]
    x2 = ac[1]
    rng = x2 - x1
    xmid = x1 + (rng >> 12) * p + (((rng & 0xFFF) * p) >> 12)
    if dec:
        y = 1 if ac[2] <= xmid else 0
    if y:
        x2 = xmid
    else:
        x1 = xmid + 1
    nb = buf.shape[0]
    while ((x1 ^ x2) & 0xFF000000) == 0:
        pos = ac[3]
        if dec:
            q = pos + 4
            ac[2] = ((ac[2] << 8) & 0xFFFFFFFF) | (np.int64(buf[q]) if q < nb else 0)
        elif pos < nb:
            buf[pos] = np.uint8(x1 >> 24)
        ac[3] = pos + 1
        x1 = (x1 << 8) & 0xFFFFFFFF
        x2 = ((x2 << 8) & 0xFFFFFFFF) | 255
    ac[0] = x1
    ac[1] = x2
    return y


@njit(cache=True, nogil=True, inline="always")
def _counter_p(P, i):
    """12-bit probability of counter i (Q16 stored), in [1, 4095]."""
    p = np.int64(P[i]) >> 4
    return 1 if p < 1 else (4095 if p > 4095 else p)


@njit(cache=True, nogil=True, inline="always")
def _counter_update(P, N, i, y, rt, limit):
    n = np.int64(N[i])
    p = np.int64(P[i])
    p += (((y << 16) - y - p) * rt[n]) >> 16
    P[i] = np.uint16(p)
    if n < limit:
        N[i] = np.uint8(n + 1)


@njit(cache=True, nogil=True, inline="always")
def _cost16(p, bit):
    """About 16 log2(4096 / q) (q = p for a 1, else 4096 - p): a coded bit's cost in 1/16 bits."""
    q = p if bit else 4096 - p
    b = _bitlen(q)
    l16 = 16 * (b - 1) + (((q << 4) >> (b - 1)) & 15)  # 16 log2(q), piecewise linear
    return 192 - l16


VC_OFF = 8192  #: a value-model input ``pv`` > 4095 is a correction ``pv - VC_OFF`` of the coder's stretch (``_vx1``)


@njit(cache=True, nogil=True, inline="always")
def _vx1(pf, pv, st):
    """The final mix's value-model input: the stretch of the value model's probability pv in [1,
    4095], or (pv in [VC_OFF - 4094, VC_OFF + 4094], version 9's code classes) the coder's stretch
    st[pf] plus the correction pv - VC_OFF, clamped to [-2047, 2047]: the coder's probability
    weighed by g."""
    if pv > 4095:
        return _clamp(st[pf] + pv - VC_OFF, -2047, 2047)
    return st[pv]


@njit(cache=True, nogil=True, inline="always")
def _vmix(x0, x1, FW, frow, sq):
    """The final mix of the stretches x0 of the coder's probability and x1 of the value model's and
    a bias, by the weights FW[frow:frow + 3] (Q16): a probability in [1, 4095]."""
    d = _clamp((FW[frow] * x0 + FW[frow + 1] * x1 + FW[frow + 2] * 256) >> 16, -2047, 2047)
    return _clamp(sq[d + 2047], 1, 4095)


@njit(cache=True, nogil=True, inline="always")
def _vlearn(x0, x1, pf, p, bit, FW, frow, lr):
    """``_vmix``'s weights learned from its probability p's error on the bit coded; FW[3 VM_ROWS]
    accumulates the cost of the coder's probability pf minus that of p (1/16 bits)."""
    FW[3 * VM_ROWS] += _cost16(pf, bit) - _cost16(p, bit)
    err = ((bit << 12) - p) * lr
    FW[frow] += (x0 * err) >> 10
    FW[frow + 1] += (x1 * err) >> 10
    FW[frow + 2] += (256 * err) >> 10
