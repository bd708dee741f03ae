"""The "mag" coder's context table in plain Python, from its description (docs/format.md,
"mag" table): the tests' reference for ``ubpe._kernels.residual.table_encode`` /
``table_decode`` and for the table bits and row precisions ``mag_options`` chooses.

A bit list, one int a bit, written and read least significant bit first, as the kernels'
``_put`` / ``_get`` do; no shortcuts (no 64-bit window, no unsigned tricks), so slow.
"""

from __future__ import annotations

import math

import numpy as np

from ubpe._kernels import residual as R
from ubpe._kernels.entropy import ESC_LEN_BITS, MAX_RICE_PARAM, MAX_VALUE_BITS, RICE_LIMIT

NO_CONTEXT = 63


def rice_param(a: int, n: int) -> int:
    """The smallest r with n << r >= a, capped at MAX_RICE_PARAM."""
    r = 0
    while (n << r) < a and r < MAX_RICE_PARAM:
        r += 1
    return r


def _put(bits: list[int], value: int, n: int) -> None:
    bits.extend((value >> i) & 1 for i in range(n))


def _put_rice(bits: list[int], v: int, r: int) -> None:
    q = v >> r
    if q < RICE_LIMIT:
        _put(bits, 0, q)
        _put(bits, 1, 1)
        _put(bits, v, r)
    else:
        _put(bits, 0, RICE_LIMIT)
        _put(bits, v.bit_length(), ESC_LEN_BITS)
        _put(bits, v, v.bit_length())


def _put_gamma(bits: list[int], v: int) -> None:
    x = v + 1
    L = x.bit_length() - 1
    _put(bits, 0, L)
    _put(bits, 1, 1)
    _put(bits, x, L)  # its low L bits


def zigzag(d: int) -> int:
    return 2 * d if d >= 0 else -2 * d - 1


def _row_values(bits: list[int], row: list[int], lo: int, hi: int, d: int, t: int) -> None:
    """Buckets lo .. hi - 1 of ``row`` (>> d) as adaptive Rice codes, the row's own state."""
    a, cnt = max((1 << t) // (hi - lo + 1), 1), 1
    for b in range(lo, hi):
        v = row[b] >> d
        _put_rice(bits, v, rice_param(a, cnt))
        a += v
        cnt += 1
        if cnt >= 16:
            a >>= 1
            cnt >>= 1


def encode(freqs: np.ndarray, pb: int) -> tuple[bytes, int]:
    """The table of ``freqs`` (each used row summing to 2**pb) and its bit count."""
    rows = [[int(v) for v in freqs[c]] for c in range(R.N_CONTEXTS)]
    used = [c for c in range(R.N_CONTEXTS) if any(rows[c])]
    bits: list[int] = []
    if not used:
        _put(bits, NO_CONTEXT, 6)
    else:
        _put(bits, used[0], 6)
        _put(bits, used[-1], 6)
        for c in range(used[0] + 1, used[-1]):
            _put(bits, int(c in used), 1)
        plo = phi = 0
        for c in used:
            nz = [b for b, v in enumerate(rows[c]) if v]
            lo, hi = nz[0], nz[-1]
            _put_gamma(bits, zigzag(lo - plo))
            _put_gamma(bits, zigzag(hi - phi))
            plo, phi = lo, hi
            d = min((rows[c][b] & -rows[c][b]).bit_length() - 1 for b in nz)  # fewest trailing zeros
            _put(bits, 0, d)
            _put(bits, 1, 1)
            _row_values(bits, rows[c], lo, hi, d, pb - d)
    out = bytearray((len(bits) + 7) // 8)
    for i, bit in enumerate(bits):
        out[i >> 3] |= bit << (i & 7)
    return bytes(out), len(bits)


class _Reader:
    def __init__(self, buf: bytes):
        self.buf, self.pos = bytes(buf), 0

    def bit(self) -> int:
        if self.pos >= 8 * len(self.buf):
            raise _Stop(R.ERR_TRUNCATED)
        b = (self.buf[self.pos >> 3] >> (self.pos & 7)) & 1
        self.pos += 1
        return b

    def get(self, n: int) -> int:
        return sum(self.bit() << i for i in range(n))

    def zeros(self, limit: int) -> int:
        """Zero bits before a one; ERR_RANGE past ``limit`` zeros (the bits there read first)."""
        q = 0
        while self.bit() == 0:
            q += 1
            if q > limit:
                raise _Stop(R.ERR_RANGE)
        return q

    def rice(self, r: int) -> int:
        q = 0
        while self.bit() == 0:
            q += 1
            if q == RICE_LIMIT:
                length = self.get(ESC_LEN_BITS)
                if length == 0 or length > MAX_VALUE_BITS:
                    raise _Stop(R.ERR_RANGE)
                v = self.get(length)
                if v >> (length - 1) != 1:
                    raise _Stop(R.ERR_RANGE)
                return v
        v = (q << r) | self.get(r)
        if v >= 1 << MAX_VALUE_BITS:
            raise _Stop(R.ERR_RANGE)
        return v


class _Stop(Exception):
    def __init__(self, status: int):
        self.status = status


def decode(buf: bytes, pb: int) -> tuple[int, np.ndarray]:
    """``(status, freqs)``: the kernel's statuses, bit by bit (freqs as far as decoded)."""
    freqs = np.zeros((R.N_CONTEXTS, R.N_BUCKETS), np.int64)
    rd = _Reader(buf)
    try:
        first = rd.get(6)
        if first != NO_CONTEXT:
            if first >= R.N_CONTEXTS:
                return R.ERR_RANGE, freqs
            last = rd.get(6)
            if last < first or last >= R.N_CONTEXTS:
                return R.ERR_RANGE, freqs
            used = [first] + [c for c in range(first + 1, last) if rd.get(1)] + ([last] if last > first else [])
            plo = phi = 0
            for c in used:
                z = rd.zeros(7)
                z = ((1 << z) | rd.get(z)) - 1
                lo = plo + (z >> 1 if z % 2 == 0 else -(z + 1) // 2)
                z = rd.zeros(7)
                z = ((1 << z) | rd.get(z)) - 1
                hi = phi + (z >> 1 if z % 2 == 0 else -(z + 1) // 2)
                if lo < 0 or hi < lo or hi >= R.N_BUCKETS:
                    return R.ERR_RANGE, freqs
                plo, phi = lo, hi
                d = rd.zeros(pb)
                t = pb - d
                left = 1 << t
                a, cnt = max((1 << t) // (hi - lo + 1), 1), 1
                for b in range(lo, hi):
                    v = rd.rice(rice_param(a, cnt))
                    if v >= left:
                        return R.ERR_RANGE, freqs
                    freqs[c, b] = v << d
                    left -= v
                    a += v
                    cnt += 1
                    if cnt >= 16:
                        a >>= 1
                        cnt >>= 1
                freqs[c, hi] = left << d
                if freqs[c, lo] == 0:
                    return R.ERR_RANGE, freqs
    except _Stop as stop:
        return stop.status, freqs
    if (rd.pos + 7) // 8 != len(rd.buf) or (rd.pos & 7 and rd.buf[rd.pos >> 3] >> (rd.pos & 7)):
        return R.ERR_TRAILING, freqs
    return R.OK, freqs


def normalize(row: list[int], size: int) -> list[int]:
    """``row``'s counts to frequencies summing to ``size``: f = 1 + floor(c (size - k) / S), the
    shortfall one at a time to the largest remaining remainder, ties to the lower bucket."""
    k, s = sum(v > 0 for v in row), sum(row)
    f = [0] * len(row)
    rem = [-1] * len(row)
    for b, v in enumerate(row):
        if v > 0:
            f[b] = 1 + v * (size - k) // s
            rem[b] = v * (size - k) % s
    for _ in range(size - sum(f)):
        best = max((b for b in range(len(row)) if rem[b] >= 0), key=lambda b: (rem[b], -b))
        f[best] += 1
        rem[best] = -1
    return f


def choose(counts: np.ndarray, pb: int) -> tuple[np.ndarray, float, int]:
    """The coder's table for ``counts`` at precision ``pb``: ``(freqs, payload cross-entropy,
    table bits)``. Each used row at the precision t (its k used buckets <= 2**t <= 2**pb, t at
    most one bit past its count S's bit length unless k needs more) of the least cross-entropy +
    bits the row costs in the table (its shift and values; the lowest t on ties); the
    cross-entropy summed row by row, bucket by bucket."""
    freqs = np.zeros_like(counts)
    ce = 0.0
    for c in range(counts.shape[0]):
        row = [int(v) for v in counts[c]]
        k = sum(v > 0 for v in row)
        if k == 0:
            continue
        best = None
        top = max((k - 1).bit_length(), min(sum(row).bit_length() + 1, pb))  # one bit past its count's
        for t in range((k - 1).bit_length(), top + 1):
            f = normalize(row, 1 << t)
            rc = 0.0
            for b, v in enumerate(row):
                if v > 0:
                    rc += v * (t - math.log2(f[b]))
            d = min((v & -v).bit_length() - 1 for v in f if v)
            nz = [b for b, v in enumerate(f) if v]
            bits: list[int] = []
            _row_values(bits, f, nz[0], nz[-1], d, t - d)
            cost = rc + float(len(bits) + pb - t + d + 1)
            if best is None or cost < best[0]:
                best = (cost, rc, t, f)
        _, rc, t, f = best
        ce += rc
        freqs[c] = [v << (pb - t) for v in f]
    return freqs, ce, encode(freqs, pb)[1]
