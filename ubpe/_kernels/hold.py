"""The "hold" coder's loop (``ubpe.coders.hold``), normative for its payload after the header.

A slow reading on a coarse grid (station pressure in whole hPa, a temperature in tenths at one
minute) holds its value for a while and then steps, often back (a value on the edge of two
levels flickers): its prediction residual is one *hold* token ``z`` most of the time. The chance
of a step depends on how long the value has held, so each token is coded as binary decisions
with the carry-less arithmetic coder of :mod:`ubpe._kernels.cmcore`, each decision's
probability from a pair of counts in one context:

1. *step*: ``token != z``, in the context of the hold's length so far ``r`` (tokens since the
   last step, or since the start), bucketed in half octaves: ``b = 2 k + [v**2 >= 2**(2 k + 1)]``
   with ``v = min(r + 1, 2**24)`` and ``k = bit_length(v) - 1``, at most ``RUN_BUCKETS - 1``;
2. after a step, *up*: ``token > z``, in the context of the last step's direction (0 none yet,
   1 down, 2 up);
3. its size ``m = |token - z|`` (``1 <= m <= mx``: ``mx = V - 1 - z`` up, ``z`` down) as an Elias
   gamma code: ``L = bit_length(m)`` in unary, the bits ``[L > k]`` for ``k = 1, 2, ...`` up to
   the first 0 or up to ``k = bit_length(mx) - 1`` (no bit when ``L`` reaches
   ``bit_length(mx)``), each in the context ``(up, k)``; then the ``L - 1`` bits of ``m`` below
   its leading 1, most significant first, the first in the context ``(up, L)``, the others at
   p = 1/2. A decoded step with ``mx = 0`` or ``m > mx`` is ERR_SYMBOL.

Counts ``(c0, c1)`` start at 0; a 1 is predicted with ``p = clamp(((2 c1 + 1) * 4096) //
(2 (c0 + c1) + 2), 1, 4095)`` (in 4096ths); after the bit ``y``, ``c_y += 1`` and, when ``c0 +
c1 > COUNT_LIMIT``, both are halved rounding up. After the ``n`` tokens: the check bits and the
flush of ``cmcore._finish`` (the running hash ``chk = _hash(chk, token + 1)`` from 0).
"""

from __future__ import annotations

import numpy as np

from . import njit
from .alloc import zeros
from .cmcore import _code_bit, _finish, _hash
from .intrinsics import bit_length, clamp, imin, select

#: contexts of the step decision (half octaves of the hold's length: 2**24 tokens)
RUN_BUCKETS = 48
#: counts are halved beyond this total (a slow drift of the step rate is followed, a stationary one
#: counted nearly exactly)
COUNT_LIMIT = 1020
ERR_SYMBOL = -1


@njit(cache=True, nogil=True, inline="always")
def _p(c, k):
    """Probability of a 1 (4096ths) from the counts ``c[2k], c[2k + 1]``."""
    return clamp(((2 * c[2 * k + 1] + 1) << 12) // (2 * (c[2 * k] + c[2 * k + 1]) + 2), 1, 4095)


@njit(cache=True, nogil=True, inline="always")
def _count(c, k, y):
    c[2 * k + y] += 1
    if c[2 * k] + c[2 * k + 1] > COUNT_LIMIT:
        c[2 * k] = (c[2 * k] + 1) >> 1
        c[2 * k + 1] = (c[2 * k + 1] + 1) >> 1


@njit(cache=True, nogil=True, inline="always")
def _bucket(r):
    v = imin(r + 1, 1 << 24)
    k = bit_length(v) - 1
    return imin(2 * k + select(v * v >= (np.int64(1) << (2 * k + 1)), 1, 0), RUN_BUCKETS - 1)


@njit(cache=True, nogil=True)
def hold_code(tokens, n, vocab_size, z, buf, decoding):
    """Encode ``tokens[:n]`` (int32, each in [0, vocab_size)) into ``buf`` (uint8) and return the
    coder's length (possibly > len(buf): it did not fit), or decode ``n`` tokens from ``buf``
    (any content; never written) into ``tokens`` and return cmcore's OK, ERR_SYMBOL,
    ERR_CHECK or ERR_LENGTH. Preconditions: 1 <= vocab_size <= 2**24, 0 <= z < vocab_size,
    len(tokens) >= n."""
    nb = buf.shape[0]
    x1 = np.int64(0)
    x2 = np.int64(0xFFFFFFFF)
    x = np.int64(0)
    pos = 0
    if decoding:
        for k in range(4):
            x = (x << 8) | (np.int64(buf[pos]) if pos < nb else 0)
            pos += 1
        pos = 0
    cs = zeros(2 * RUN_BUCKETS, np.int64)
    cu = zeros(2 * 3, np.int64)
    cl = zeros(2 * 128, np.int64)
    cm = zeros(2 * 128, np.int64)
    z = np.int64(z)
    up_max = np.int64(vocab_size) - 1 - z
    run = np.int64(0)
    last = 0
    chk = np.int64(0)
    for i in range(n):
        t = np.int64(0) if decoding else np.int64(tokens[i])
        b = _bucket(run)
        x1, x2, x, pos, y = _code_bit(x1, x2, x, pos, buf, nb, _p(cs, b), select(t != z, 1, 0), decoding)
        _count(cs, b, y)
        tok = z
        if y == 0:
            run += 1
        else:
            x1, x2, x, pos, up = _code_bit(x1, x2, x, pos, buf, nb, _p(cu, last), select(t > z, 1, 0), decoding)
            _count(cu, last, up)
            mx = select(up == 1, up_max, z)
            if mx <= 0:
                return ERR_SYMBOL  # (never when encoding: the token lies on that side)
            m = select(t > z, t - z, z - t)
            lmax = bit_length(mx)
            length = bit_length(m)
            k = 1
            while k < lmax:
                c = up * 64 + k
                x1, x2, x, pos, yb = _code_bit(x1, x2, x, pos, buf, nb, _p(cl, c), select(length > k, 1, 0),
                                               decoding)
                _count(cl, c, yb)
                if yb == 0:
                    break
                k += 1
            mm = np.int64(1)
            for j in range(k - 2, -1, -1):
                yb = (m >> j) & 1
                if j == k - 2:
                    c = up * 64 + k
                    x1, x2, x, pos, yb = _code_bit(x1, x2, x, pos, buf, nb, _p(cm, c), yb, decoding)
                    _count(cm, c, yb)
                else:
                    x1, x2, x, pos, yb = _code_bit(x1, x2, x, pos, buf, nb, 2048, yb, decoding)
                mm = 2 * mm + yb
            if mm > mx:
                return ERR_SYMBOL
            tok = select(up == 1, z + mm, z - mm)
            run = 0
            last = 1 + up
        if decoding:
            tokens[i] = tok
        chk = _hash(chk, tok + 1)
    return _finish(x1, x2, x, pos, buf, nb, n, chk, decoding)
