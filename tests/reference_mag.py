"""The "mag" coder's statistics pass and encoder in their first, plain form (numba), formerly
``ubpe._kernels.residual.mag_stats`` and ``mag_encode``: the reference the fast level's kernels
(:func:`ubpe._kernels.level1.mag_stats`, :func:`ubpe._kernels.level1.mag_encode`) are checked
against, count for count and byte for byte (``tests/test_level1_kernels.py``,
``tests/test_costing.py``, ``tests/reference_costing.py``). Never imported by the package.

The layout is :mod:`ubpe._kernels.residual`'s (its module docstring): every token t becomes
z = zigzag(t - center), split into a bucket (z below 2, else 2e - 2 + the bit below the top one,
e = bit length of z) and e - 2 raw low bits; the context is the bucket of the running magnitude
m >> (rate - 2), capped.
"""

from __future__ import annotations

import numpy as np

from ubpe._kernels import njit
from ubpe._kernels.alloc import empty, zeros
from ubpe._kernels.intrinsics import bit_length, imin
from ubpe._kernels.residual import MAX_RATE, MIN_RATE, N_BUCKETS, N_CONTEXTS, RANS_L  # noqa: F401  (re-exported)

#: index cast (every index cast with it is >= 0 by construction)
U = np.uint64


def bitlen_table() -> np.ndarray:
    """Bit lengths of 0..65535 as uint8 (the kernels' lookup table)."""
    t = np.zeros(65536, dtype=np.uint8)
    for e in range(1, 17):
        t[1 << (e - 1):1 << e] = e
    return t


#: :func:`bitlen_table`, the ``bl`` argument of the kernels below
BITLEN = bitlen_table()


@njit(cache=True, nogil=True, inline="always")
def _bucket(z, bl):
    """Bucket of z >= 0; ``bl`` = bit-length table of 0..65535 (uint8)."""
    if z < 2:
        return z
    e = np.int64(bl[U(z)]) if z < 65536 else bit_length(z)
    return 2 * e - 2 + ((z >> (e - 2)) & 1)


@njit(cache=True, nogil=True, inline="always")
def _context(m, sh, bl):
    """The context of the next token: the bucket of the running magnitude ``m >> sh``, capped."""
    c = _bucket(m >> sh, bl)
    return imin(c, N_CONTEXTS - 1)


@njit(cache=True, nogil=True, inline="always")
def _symbol(token, center, m, sh, bl):
    """The model's view of one token: (z, context, bucket), z = zigzag(token - center)."""
    d = np.int64(token) - center
    z = (d << 1) ^ (d >> 63)  # zigzag: 2d, or -2d - 1 below 0
    return z, _context(m, sh, bl), _bucket(z, bl)


@njit(cache=True, nogil=True)
def mag_stats(tokens, center, bl, rates, counts, m):
    """Add each token's (context, bucket) under every rate of ``rates`` (int64, each in
    [MIN_RATE, MAX_RATE]) to ``counts`` in one pass: int64, ``(len(rates), N_CONTEXTS,
    N_BUCKETS)``, ``counts[r]`` for rate ``rates[r]`` (a token's bucket and raw bits once, one
    running mean per rate). ``m``: int64 zeros, one per rate (the running means; the caller's
    array: no allocation compiled here).

    Returns the total number of raw bits (the same under every rate). Preconditions: tokens
    and center in [0, 2**24).
    """
    nr = counts.shape[0]
    raw = 0
    for i in range(tokens.shape[0]):
        d = np.int64(tokens[i]) - center
        z = (d << 1) ^ (d >> 63)  # zigzag: 2d, or -2d - 1 below 0
        b = _bucket(z, bl)
        if b >= 4:
            raw += (b >> 1) - 1
        for r in range(nr):
            rate = rates[r]
            mr = m[r]
            counts[r, U(_context(mr, rate - 2, bl)), U(b)] += 1  # (context and bucket >= 0)
            m[r] = mr + z - (mr >> rate)
    return raw


@njit(cache=True, nogil=True)
def mag_encode(tokens, center, rate, bl, freqs, pb, words, raw):
    """Encode; ``freqs`` (int64, N_CONTEXTS x N_BUCKETS) sum to 2**pb on every used context.

    ``words``: uint32, length >= len(tokens) + 2; ``raw``: uint8 zero-filled, large enough for
    the raw bits (from ``mag_stats``). Returns the first word index written (words[start:]).
    """
    n = tokens.shape[0]
    ctx = empty(n, np.uint8)
    bk = empty(n, np.uint8)
    m = 0
    sh = rate - 2
    acc = np.uint64(0)
    nacc = 0
    p = 0
    for i in range(n):
        z, c, b = _symbol(tokens[i], center, m, sh, bl)
        ctx[i] = c
        bk[i] = b
        if b >= 4:
            nb = (b >> 1) - 1
            acc |= np.uint64(z & ((1 << nb) - 1)) << np.uint64(nacc)
            nacc += nb
            while nacc >= 8:
                raw[p] = np.uint8(acc & np.uint64(255))
                acc >>= np.uint64(8)
                nacc -= 8
                p += 1
        m += z - (m >> rate)
    if nacc > 0:
        raw[p] = np.uint8(acc & np.uint64(255))
    cum = zeros((N_CONTEXTS, N_BUCKETS), np.uint64)
    for c in range(N_CONTEXTS):
        a = 0
        for b in range(N_BUCKETS):
            cum[c, b] = a
            a += freqs[c, b]
    upb = np.uint64(pb)
    shift = np.uint64(64 - pb)
    mask32 = np.uint64(0xFFFFFFFF)
    x = np.uint64(RANS_L)
    pos = words.shape[0]
    for i in range(n - 1, -1, -1):
        c = ctx[i]
        b = bk[i]
        if freqs[c, b] == 1 << pb:  # a certain bucket: the update is the identity, skip it
            continue
        f = np.uint64(freqs[c, b])
        if x >= (f << shift):
            pos -= 1
            words[pos] = np.uint32(x & mask32)
            x >>= np.uint64(32)
        x = ((x // f) << upb) + (x % f) + cum[c, b]
    pos -= 1
    words[pos] = np.uint32(x & mask32)
    pos -= 1
    words[pos] = np.uint32(x >> np.uint64(32))
    return pos


def encoder_outputs(encoders, n_tokens: int, freqs, pb: int, raw_bits: int) -> list[tuple[int, bytes, bytes]]:
    """(start, words, raw bytes) of each ``encode(freqs, pb, words, raw)`` of ``encoders``, each
    given fresh buffers for ``n_tokens`` tokens and ``raw_bits`` raw bits (the tests compare them)."""
    outs = []
    for encode in encoders:
        words = np.zeros(n_tokens + 2, np.uint32)
        raw = np.zeros((raw_bits + 7) // 8, np.uint8)
        start = encode(freqs, pb, words, raw)
        outs.append((start, words.tobytes(), raw.tobytes()))
    return outs
