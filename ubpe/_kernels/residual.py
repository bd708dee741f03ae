"""Kernels of the "mag" coder: residual-like token streams by magnitude class (numba).

Every token t becomes z = zigzag(t - center) (0, -1, 1, -2, ... -> 0, 1, 2, 3, ...), split
into a *bucket* (a half-octave magnitude class: z itself below 2, else 2e - 2 + the bit below
the top one, e = bit length of z) and e - 2 raw low bits. Buckets are rANS-coded with a static
frequency table per *context*; the context is the bucket of 4 * the running mean of z
(m <- m - m >> rate + z, context = bucket(m >> (rate - 2)), capped), so the tables follow the
signal's loudness the way partitioned Rice coding does, at rANS precision. Raw bits go to a
separate little-endian bitstream. rANS: 64-bit state in [2**32, 2**64), 32-bit words, written
backwards by the encoder so the decoder reads forwards. The encoder and the statistics pass are
the fast level's (:mod:`ubpe._kernels.level1`); their first, plain form is the tests' reference
(``tests/reference_mag.py``).
"""

from __future__ import annotations

import numpy as np
from numba.cpython.unsafe.numbers import trailing_zeros

from . import njit
from .alloc import empty, full, zeros
from .entropy import ESC_LEN_BITS, RICE_LIMIT, _get, _get_rice, _put, _put_rice, _rice_param
from .intrinsics import bit_length, imax, imin, select

#: index cast: an unsigned index spares numba's negative-index wrap-around (every index cast
#: with it is >= 0 by construction)
U = np.uint64

N_BUCKETS = 50  #: buckets of z < 2**25 (tokens < 2**24 around a center < 2**24)
N_CONTEXTS = 56  #: contexts: buckets of 4 * mean(z) < 2**27
MIN_RATE = 2
MIN_PB = 8
MAX_PB = 13  #: keeps a decoding-table entry in 32 bits and the tables in L2
MAX_RATE = 8
SMALL_V = 2048  #: mag_decode looks up the context of running magnitudes below this in a table
RANS_L = 1 << 32

OK = 0
ERR_TRUNCATED = -1
ERR_RANGE = -2
ERR_CONTEXT = -3
ERR_SYMBOL = -4
ERR_TRAILING = -5
ERR_RAW = -6


@njit(cache=True, nogil=True)
def decode_tables(freqs, pb):
    """The "mag" decoder's tables for ``freqs`` (int64 ``(N_CONTEXTS, N_BUCKETS)``, each used
    context's row summing to ``2**pb``, ``pb <= MAX_PB``): ``(status, rowoff, table, small)``,
    ``rowoff[c]`` context ``c``'s first slot in ``table`` (-1: unused), ``table`` one uint64 a
    slot, ``small[v]`` the row of a running magnitude ``v < SMALL_V``; status ERR_RANGE (and
    empty tables) for a frequency outside ``[0, 2**pb]`` or a row summing to another total.
    Shared by :func:`mag_decode` and ``magrank.mag_rank_decode``."""
    size = 1 << pb
    rowoff = full(N_CONTEXTS, -1, np.int64)  # context -> its first slot in ``table``
    nrows = 0
    for c in range(N_CONTEXTS):
        s = 0
        for b in range(N_BUCKETS):
            f = freqs[c, b]
            if f < 0 or f > size:
                return ERR_RANGE, rowoff, empty(0, np.uint64), empty(0, np.int32)
            s += f
        if s == 0:
            continue
        if s != size:
            return ERR_RANGE, rowoff, empty(0, np.uint64), empty(0, np.int32)
        rowoff[c] = nrows * size
        nrows += 1
    # per used context: slot -> (freq - 1) << 51 | (slot - cum) << 38 | raw bits << 32 | the
    # bucket's smallest magnitude (its raw bits zero), one uint64 load per symbol (pb <=
    # MAX_PB = 13 makes each field fit): the magnitude is that value | the raw bits
    table = empty(imax(nrows, 1) * size, np.uint64)
    for c in range(N_CONTEXTS):
        r = rowoff[c]
        if r < 0:
            continue
        a = r
        for b in range(N_BUCKETS):
            f = freqs[c, b]
            if f == 0:
                continue
            nb = select(b >= 4, (b >> 1) - 1, 0)
            top = select(b >= 4, (2 | (b & 1)) << nb, b)
            base = np.uint64(((f - 1) << 51) | (nb << 32) | top)
            row = table[a:a + f]  # (a slice and a loop-invariant base: the fill is vectorised)
            for j in range(f):
                row[j] = base | (np.uint64(j) << np.uint64(38))
            a += f
    # the context's row of the running magnitudes v < SMALL_V, by bucket ranges (no bit counting)
    small = empty(SMALL_V, np.int32)  # (8 KB: the table is rebuilt per call)
    small[0] = rowoff[0]
    small[1] = rowoff[1]
    for c in range(2, N_CONTEXTS):
        e = (c + 2) >> 1
        lo = imin((2 + (c & 1)) << (e - 2), SMALL_V)
        hi = select(c < N_CONTEXTS - 1, imin((3 + (c & 1)) << (e - 2), SMALL_V), SMALL_V)
        small[lo:hi] = np.int32(rowoff[c])  # < 56 * 2**13
    return OK, rowoff, table, small


@njit(cache=True, nogil=True)
def mag_decode(words, raw, center, rate, freqs, pb, vocab_size, out, lpc):
    """Decode len(out) tokens; returns OK or a negative status, never reads out of bounds.

    ``freqs`` as for ``mag_encode`` (rows of unused contexts all zero; checked here: each row
    is zero or sums to 2**pb). ``raw`` must be exactly the raw bitstream (whole bytes, zero
    padding). Statuses: ERR_RANGE (bad table or initial state), ERR_CONTEXT (a context whose
    table is empty), ERR_SYMBOL (token outside [0, vocab_size)), ERR_TRUNCATED (words ran
    out: reported at the end, or as whichever of the others the tokens decoded past the last
    word fail first), ERR_TRAILING (words left over, final state wrong), ERR_RAW (raw bits
    short, left over or nonzero padding).
    Preconditions: MIN_PB <= pb <= MAX_PB, 0 <= center < 2**24, MIN_RATE <= rate <= MAX_RATE.

    ``lpc``: the tuple ``(fused, lut, lo, sh, blocks, bstart, orders, shifts, cstart, coefs,
    dst)``, always passed (one compiled specialization). ``fused`` False: tokens go to ``out``
    (int32) and the rest is ignored (``NO_LPC``). ``fused`` True: ``out`` is ignored and
    :func:`ubpe._kernels.predict.lpc_filter`'s reconstruction is done as each token is decoded:
    ``dst`` (int64, len(dst) tokens) receives the signal, each token ``t`` being the residual
    ``lut[t]`` (``lo + t`` when ``lut`` is empty), taken modulo 2**(64 - sh); channel ``c`` is
    ``dst[c * F:(c + 1) * F]`` (F = len(dst) // len(blocks)), reconstructed with block length
    ``blocks[c]``, its blocks' orders and shifts at ``bstart[c]:bstart[c + 1]`` and its
    coefficients at ``cstart[c]:cstart[c + 1]``, all as :func:`lpc_filter` takes them. The
    two serial chains, the coder's and the predictor's, then overlap (25 % faster than two
    passes). Preconditions, beyond lpc_filter's: len(lut) == vocab_size or 0, F * len(blocks)
    == len(dst), per channel ceil(F / block) blocks and sum(orders) coefficients.

    Arrays in the loop are indexed by unsigned ints (every index there is checked or built
    non-negative): a signed index costs numba's negative-index test, on the serial chain for
    the context and table loads (10 % of the loop's time on audio). Each token's context
    depends on the previous token's magnitude, so the coder is one serial chain, kept short: the context's row comes from a table of the small running magnitudes
    (else from a leading-zero count), each slot's entry holds its bucket's raw-bit count and
    smallest magnitude (the magnitude is that | the raw bits, no branch), and raw bits are
    read 32 at a time whenever fewer are buffered.
    """
    status, rowoff, table, small = decode_tables(freqs, pb)
    if status != OK:
        return status
    size = 1 << pb
    nw = words.shape[0]
    if nw < 2:
        return ERR_TRUNCATED
    x = (np.uint64(words[0]) << np.uint64(32)) | np.uint64(words[1])
    if x < np.uint64(RANS_L):
        return ERR_RANGE
    wp = 2
    upb = np.uint64(pb)
    mask = np.uint64(size - 1)
    low = np.uint64(RANS_L)
    one = np.uint64(1)
    nraw = raw.shape[0]
    acc = np.uint64(0)
    nacc = 0
    p = 0
    m = 0
    sh = rate - 2
    fused, lut, lo, wsh, blocks, bstart, orders, shifts, cstart, coefs, dst = lpc
    uselut = lut.shape[0] > 0
    rev = zeros(32, np.uint64)
    # the coefficients as int64 again, for the narrow sum: samples of at most 32 bits (wsh >= 32,
    # every dst value sign-extended from them) and a block's coefficients of at most 32 (decoding's
    # are of at most MAX_PRECISION, checked) multiply exactly as int32 pairs, and the int64 sum
    # wraps as the uint64 one does: the same prediction modulo 2**64
    rev32 = zeros(32, np.int64)
    narrow_ok = fused and wsh >= 32
    narrow = False
    # the reconstruction's layout; without it, one channel of one block of order 0
    n = select(fused, dst.shape[0], out.shape[0])
    channels = select(fused, blocks.shape[0], 1)
    frames = (n // channels if channels else 0) if fused else n
    for ch in range(channels):
        base = ch * frames
        nblk = bstart[ch + 1] - bstart[ch] if fused else 1
        c0 = cstart[ch] if fused else 0
        p1 = np.uint64(0)  # the channel's last two samples
        p2 = np.uint64(0)
        for bi in range(nblk):
            order = 0
            shift = 0
            c1 = np.uint64(0)
            c2 = np.uint64(0)
            mm = 0
            if not fused:
                hi = n
            else:
                order = np.int64(orders[bstart[ch] + bi])
                shift = np.int64(shifts[bstart[ch] + bi])
                narrow = narrow_ok
                for j in range(order):
                    rev[order - 1 - j] = np.uint64(coefs[c0 + j])
                    rev32[order - 1 - j] = coefs[c0 + j]
                    narrow &= -(1 << 31) <= coefs[c0 + j] < (1 << 31)
                c0 += order
                hi = base + imin(frames, (bi + 1) * blocks[ch])
                c1 = rev[order - 1] if order >= 1 else np.uint64(0)  # lag 1
                c2 = rev[order - 2] if order >= 2 else np.uint64(0)  # lag 2
                mm = imax(order - 2, 0)  # lags order .. 3, read back from out
            i = base + (bi * blocks[ch] if fused else 0)
            while i < hi:
                v = m >> sh  # the context: _bucket(v), capped
                if v < SMALL_V:
                    off = np.int64(small[np.uint64(v)])
                else:
                    e = bit_length(v)
                    c = 2 * e - 2 + ((v >> (e - 2)) & 1)
                    off = rowoff[imin(c, N_CONTEXTS - 1)]
                if off < 0:
                    return ERR_CONTEXT
                slot = x & mask
                en = table[np.uint64(off) + slot]
                x = ((en >> np.uint64(51)) + one) * (x >> upb) + ((en >> np.uint64(38)) & np.uint64(8191))
                nb = np.int64((en >> np.uint64(32)) & np.uint64(31))  # raw bits of this bucket
                # renormalise without a branch (it went either way at random, a misprediction
                # every few tokens): a word past the end reads the last one again, and wp > nw
                # is ERR_TRUNCATED at the end (unless the garbage decoded since fails first)
                need = x < low
                w = np.uint64(words[np.uint64(imin(wp, nw - 1))])
                x = select(need, (x << np.uint64(32)) | w, x)
                wp += np.int64(need)
                if nacc < 32 and p + 4 <= nraw:  # 32 bits at once (nacc + 32 < 64)
                    up = np.uint64(p)
                    acc |= (np.uint64(raw[up]) | (np.uint64(raw[up + np.uint64(1)]) << np.uint64(8))
                            | (np.uint64(raw[up + np.uint64(2)]) << np.uint64(16))
                            | (np.uint64(raw[up + np.uint64(3)]) << np.uint64(24))) << np.uint64(nacc)
                    nacc += 32
                    p += 4
                while nacc < nb:  # the stream's last bytes
                    if p >= nraw:
                        return ERR_RAW
                    acc |= np.uint64(raw[p]) << np.uint64(nacc)
                    nacc += 8
                    p += 1
                bits = np.int64(acc & ((one << np.uint64(nb)) - one))
                z = np.int64(en & np.uint64(0xFFFFFFFF)) | bits
                acc >>= np.uint64(nb)
                nacc -= nb
                t = center + ((z >> 1) ^ -(z & 1))  # zigzag undone without a branch
                if t < 0 or t >= vocab_size:
                    return ERR_SYMBOL
                m += z - (m >> rate)
                if not fused:
                    out[np.uint64(i)] = t
                else:  # lpc_filter's reconstruction of sample i (lags 1, 2 in registers)
                    res = np.uint64(lut[np.uint64(t)]) if uselut else lo + np.uint64(t)
                    k = i - base
                    if k >= order and order > 0:
                        pred = np.uint64(0)
                        ub = np.uint64(i - order)  # >= base: lags order .. 3
                        if narrow:  # (products of 32-bit operands: one vpmuldq per two lags)
                            acc32 = np.int64(0)
                            for j in range(mm):
                                acc32 += np.int64(np.int32(rev32[j])) * np.int64(np.int32(dst[ub + np.uint64(j)]))
                            pred = np.uint64(acc32)
                        else:
                            for j in range(mm):
                                pred += rev[j] * np.uint64(dst[ub + np.uint64(j)])
                        pred += c2 * p2 + c1 * p1
                        pred = np.uint64(np.int64(pred) >> np.int64(shift))
                    elif k >= 1 and order > 0:
                        pred = p1
                    else:
                        pred = np.uint64(0)
                    val = np.int64((res + pred) << np.uint64(wsh)) >> np.int64(wsh)
                    dst[np.uint64(i)] = val
                    p2 = p1
                    p1 = np.uint64(val)
                i += 1
    if wp > nw:
        return ERR_TRUNCATED
    if wp != nw or x != low:
        return ERR_TRAILING
    while nacc >= 8:  # whole bytes read ahead: unread, so they must be zero and are given back
        if (acc >> np.uint64(nacc - 8)) != np.uint64(0):
            return ERR_RAW
        nacc -= 8
        p -= 1
    if p != nraw or acc != np.uint64(0):
        return ERR_RAW
    return OK


#: Table field: the 6-bit "first used context" that means no context is used (an empty stream)
NO_CONTEXT = 63
#: Table field: a gamma code's longest run of zeros (its values, zigzagged bucket steps, are < 2**7)
MAX_GAMMA_ZEROS = 7


@njit(cache=True, nogil=True, inline="always")
def _zigzag(d):
    """0, -1, 1, -2, ... -> 0, 1, 2, 3, ... (|d| < 2**62)."""
    return select(d >= 0, d << 1, ((-d) << 1) - 1)


@njit(cache=True, nogil=True, inline="always")
def _gamma_bits(v):
    """Bits of the Elias gamma code of ``v + 1`` (v >= 0): ``2 * bit_length(v + 1) - 1``."""
    return 2 * bit_length(v + 1) - 1


@njit(cache=True, nogil=True, inline="always")
def _row_init(t, span):
    """A row's first adaptive-Rice sum: its mean value ``2**t // span``, at least 1 (count 1)."""
    return imax((np.int64(1) << t) // span, 1)


@njit(cache=True, nogil=True)
def table_encode(freqs, pb, buf):
    """Write the context tables of ``freqs`` (int64 ``(N_CONTEXTS, N_BUCKETS)``, each used row
    summing to ``2**pb``, unused rows zero); returns the bit count (``buf`` of length 0: dry run).

    Layout (LSB-first bits; docs/format.md, "mag" table): the first and the last used context
    (6 bits each; first = NO_CONTEXT and nothing more when none is used), one "used" bit per
    context strictly between them; then per used context, in order: the first and last nonzero
    bucket ``lo``, ``hi`` as Elias gamma codes of the zigzagged steps from the previous used
    row's (0, 0 before the first row), the row's shift ``d`` in unary (``d`` zeros, a one: the
    row is coded at precision ``t = pb - d``, ``d`` the fewest trailing zeros of its
    frequencies, so every value ``f >> d``), then the values of buckets ``lo .. hi - 1`` at
    precision ``t``, adaptive Rice codes (sum and count reset per row to ``2**t // (hi - lo +
    1)``, 1; halved at 16 as elsewhere); bucket ``hi``'s value is ``2**t`` minus their sum.
    """
    first = -1
    last = -1
    for c in range(N_CONTEXTS):
        for b in range(N_BUCKETS):
            if freqs[c, b] > 0:
                if first < 0:
                    first = c
                last = c
                break
    if first < 0:
        return _put(buf, 0, NO_CONTEXT, 6)
    pos = _put(buf, 0, first, 6)
    pos = _put(buf, pos, last, 6)
    for c in range(first + 1, last):
        u = 0
        for b in range(N_BUCKETS):
            if freqs[c, b] > 0:
                u = 1
                break
        pos = _put(buf, pos, u, 1)
    plo = 0
    phi = 0
    for c in range(first, last + 1):
        lo = -1
        hi = -1
        d = pb
        for b in range(N_BUCKETS):
            v = freqs[c, b]
            if v > 0:
                if lo < 0:
                    lo = b
                hi = b
                d = imin(d, bit_length(v & -v) - 1)
        if lo < 0:
            continue
        pos = _put_gamma(buf, pos, _zigzag(lo - plo))
        pos = _put_gamma(buf, pos, _zigzag(hi - phi))
        plo = lo
        phi = hi
        pos = _put(buf, pos, 1 << d, d + 1)  # unary d: d zeros, a one
        t = pb - d
        a = _row_init(t, hi - lo + 1)
        cnt = 1
        for b in range(lo, hi):
            v = freqs[c, b] >> d
            pos = _put_rice(buf, pos, v, _rice_param(a, cnt))
            a += v
            cnt += 1
            if cnt >= 16:
                a >>= 1
                cnt >>= 1
    return pos


@njit(cache=True, nogil=True, no_cpython_wrapper=True)
def _put_gamma(buf, pos, v):
    """Elias gamma of ``v + 1`` (``v`` >= 0, ``v + 1 < 2**(MAX_GAMMA_ZEROS + 1)``): L = its bit
    length - 1 zero bits, a one, then its low L bits."""
    x = v + 1
    L = bit_length(x) - 1
    pos = _put(buf, pos, 1 << L, L + 1)
    return _put(buf, pos, x & ((1 << L) - 1), L)


@njit(cache=True, nogil=True, inline="always")
def _peek(buf, pos):
    """The bits of ``buf`` from bit ``pos`` on (at least 57 of them; zeros past the end), as
    the low bits of a uint64, little-endian bit order. Precondition: pos >= 0."""
    i = pos >> 3
    n = buf.shape[0]
    w = np.uint64(0)
    if i + 8 <= n:
        for k in range(8):
            w |= np.uint64(buf[i + k]) << np.uint64(8 * k)
    else:
        for k in range(imax(n - i, 0)):
            w |= np.uint64(buf[i + k]) << np.uint64(8 * k)
    return w >> np.uint64(pos & 7)


@njit(cache=True, nogil=True, inline="always")
def _read_gamma(buf, pos, nbits):
    """``(status, value, new pos)`` of a :func:`_put_gamma` code at bit ``pos``: ERR_RANGE past
    MAX_GAMMA_ZEROS zeros, ERR_TRUNCATED past the buffer's ``nbits`` bits."""
    w = _peek(buf, pos)
    L = np.int64(trailing_zeros(w))  # (64 for 0)
    if L > MAX_GAMMA_ZEROS:
        return select(pos + MAX_GAMMA_ZEROS + 1 <= nbits, ERR_RANGE, ERR_TRUNCATED), 0, pos
    if pos + 2 * L + 1 > nbits:
        return ERR_TRUNCATED, 0, pos
    x = (np.int64(1) << L) | np.int64((w >> np.uint64(L + 1)) & np.uint64((1 << L) - 1))
    return OK, x - 1, pos + 2 * L + 1


@njit(cache=True, nogil=True)
def table_decode(buf, pb, freqs):
    """Inverse of ``table_encode`` into zero-filled ``freqs``; OK or a negative status.

    Checks: context and bucket bounds (ERR_RANGE), a row's shift at most ``pb``, each value at
    most what its row has left of ``2**t``, the row's first and last bucket nonzero (so every
    used row sums to ``2**pb``), canonical end (no bytes beyond the last, zero padding:
    ERR_TRAILING); ERR_TRUNCATED when the bits run out.

    Bits are read from a 64-bit window (:func:`_peek`): a Rice code whose quotient, end bit
    and low bits all lie in the buffer, quotient below the escape, in one step; any other
    (an escape, the buffer's end) through ``_get_rice``, bit by bit.
    """
    res = zeros(2, np.int64)
    nbits = buf.shape[0] * 8
    first = _get(buf, 0, 6)
    if first < 0:
        return ERR_TRUNCATED
    pos = 6
    if first != NO_CONTEXT:
        if first >= N_CONTEXTS:
            return ERR_RANGE
        last = _get(buf, 6, 6)
        if last < 0:
            return ERR_TRUNCATED
        if last < first or last >= N_CONTEXTS:
            return ERR_RANGE
        pos = 12
        mid = imax(last - first - 1, 0)
        mask = _get(buf, pos, mid)  # bit c - first - 1: context c used (54 bits at most)
        if mask < 0:
            return ERR_TRUNCATED
        pos += mid
        plo = 0
        phi = 0
        for c in range(first, last + 1):
            if c != first and c != last and (mask >> (c - first - 1)) & 1 == 0:
                continue
            st, z, pos = _read_gamma(buf, pos, nbits)
            if st != OK:
                return st
            lo = plo + ((z >> 1) ^ -(z & 1))
            st, z, pos = _read_gamma(buf, pos, nbits)
            if st != OK:
                return st
            hi = phi + ((z >> 1) ^ -(z & 1))
            if lo < 0 or hi < lo or hi >= N_BUCKETS:
                return ERR_RANGE
            plo = lo
            phi = hi
            w = _peek(buf, pos)
            d = np.int64(trailing_zeros(w))  # the row's shift, unary
            if d > pb:
                return select(pos + pb + 1 <= nbits, ERR_RANGE, ERR_TRUNCATED)
            if pos + d + 1 > nbits:
                return ERR_TRUNCATED
            pos += d + 1
            t = pb - d
            left = np.int64(1) << t  # what the row has left to give
            a = _row_init(t, hi - lo + 1)
            cnt = 1
            for b in range(lo, hi):
                r = _rice_param(a, cnt)
                w = _peek(buf, pos)
                q = np.int64(trailing_zeros(w))  # (64 for 0)
                if q < RICE_LIMIT and pos + q + 1 + r <= nbits and q + 1 + r <= 57:
                    v = (q << r) | np.int64((w >> np.uint64(q + 1)) & np.uint64((1 << r) - 1))
                    pos += q + 1 + r
                else:
                    st = _get_rice(buf, pos, r, res)
                    if st != OK:
                        return select(st != ERR_TRUNCATED, ERR_RANGE, ERR_TRUNCATED)
                    pos = res[1]
                    v = res[0]
                if v >= left:  # (the last bucket keeps at least one)
                    return ERR_RANGE
                freqs[c, b] = v << d
                left -= v
                a += v
                cnt += 1
                if cnt >= 16:
                    a >>= 1
                    cnt >>= 1
            freqs[c, hi] = left << d
            if freqs[c, lo] == 0:
                return ERR_RANGE
    if (pos + 7) // 8 != buf.shape[0]:
        return ERR_TRAILING
    if pos & 7 and (np.int64(buf[pos >> 3]) >> (pos & 7)) != 0:
        return ERR_TRAILING
    return OK


@njit(cache=True, nogil=True)
def _log2_table(n):
    """``np.log2`` of the integers 0 .. ``n - 1`` (float64; -inf at 0), each computed as
    :func:`mag_options_with` would compute it in place: the same scalar call on the same float."""
    out = empty(n, np.float64)
    for i in range(n):
        out[i] = np.log2(np.float64(i))
    return out


_LOG2: np.ndarray | None = None  #: :func:`_log2_table` of 2**MAX_PB + 1 integers, built at first use


def mag_options(stats, pb_lo, ce, tbits, freqs, choices=None):
    """:func:`mag_options_with` (the same arguments and results) with its table of logarithms
    (:func:`_log2_table` of the frequencies up to 2**MAX_PB, built once a process)."""
    global _LOG2
    table = _LOG2
    if table is None:  # (two threads may both build it: the same values; either is kept)
        table = _LOG2 = _log2_table((1 << MAX_PB) + 1)
    if choices is None:
        mag_options_with(stats, pb_lo, ce, tbits, freqs, table)
    else:
        mag_options_with(stats, pb_lo, ce, tbits, freqs, table, choices)


@njit(cache=True, nogil=True)
def mag_options_with(stats, pb_lo, ce, tbits, freqs, log2, choices=None):
    """The "mag" coder's options in one pass: for each rate's counts ``stats[r]`` (as
    :func:`mag_stats` fills them) and each precision ``pb = pb_lo + j`` (``j < ce.shape[1]``),
    the frequencies summing to 2**pb on every used context, their payload cross-entropy
    ``ce[r, j]`` (sum over contexts of each row's sum of count * (t - log2 q), bucket by bucket)
    and ``tbits[r, j]``, :func:`table_encode`'s bit count of them (exactly: the tests check it).
    ``freqs``: no rows, or int64 of ``stats[0]``'s shape, then overwritten with the last
    option's frequencies (one rate and one pb: that option's).

    Each used row (k used buckets, S counts) is normalised at every precision t from
    ``bit_length(k - 1)`` to ``_top_t`` (one bit past S's bit length, at most pb) by the rule of
    ``ubpe.coders.rans._normalize``: q = 1 + floor(c * (2**t - k) / S); the shortfall goes one
    each to the largest remainders, ties to the lower bucket. At precision pb the row takes the t
    <= pb of least cross-entropy + its table bits (shift and values, :func:`_row_bits`; the
    lowest t on ties), its frequencies ``q << (pb - t)``: rows of few tokens coded coarsely, in
    a few bits. Each rate's used buckets are listed once, each row's precisions costed once
    for every pb. Preconditions: ``ce`` float64 and ``tbits`` int64 of
    shape (stats.shape[0], k); counts >= 0, at most 64 buckets, each context's used buckets
    <= 2**pb_lo, pb_lo >= 6, context sums * 2**pb < 2**63 for every pb.

    ``log2``: float64, ``log2[f]`` = ``np.log2(float(f))`` as this kernel computes it, for the
    frequencies ``f`` below its length (a lookup, a fifth of the kernel's time when each was a
    libm call); larger ones are computed. Every quotient is of non-negative integers, taken
    unsigned (the signed floor division's sign fix-ups, about a fifth more): the same values.

    ``choices`` (int64 ``(stats.shape[0], ce.shape[1], stats.shape[1])``, or None): given each
    used row's precision t in each option, ``choices[r, j, c]`` (unused rows' cells unwritten):
    what :func:`mag_freqs_chosen` makes an option's frequencies from, the same as this kernel's
    ``freqs`` for a call of that rate alone at that pb (a row's choice at pb does not depend on
    the finer precisions offered)."""
    nc, nb = stats.shape[1], stats.shape[2]
    nlog = log2.shape[0]
    pb_hi = pb_lo + ce.shape[1] - 1
    used_b = empty(nc * nb, np.int64)  # each context's used buckets, ascending, context by context
    used_v = empty(nc * nb, np.int64)  # their counts
    f = empty(nc * nb, np.int64)  # their frequencies
    keys = empty(128, np.int64)  # (_normalize_row's scratch: nb <= 64 keys and their counts)
    first = empty(nc + 1, np.int64)  # context c's used buckets: first[c] .. first[c + 1] - 1
    nr = ce.shape[0]
    sums_of = empty((nr, nc), np.int64)  # each rate's context sums (sums: the current rate's)
    # a row's cross-entropy at precision t, its values' Rice bits (coded at t - rtz) and the
    # fewest trailing zeros of its frequencies at t, by rate (a row equal to an earlier rate's
    # takes that one's: the same integers and floats, computed once)
    rce_of = empty((nr, nc, pb_hi + 1), np.float64)
    rbits_of = empty((nr, nc, pb_hi + 1), np.int64)
    rtz_of = empty((nr, nc, pb_hi + 1), np.int64)
    choice = empty(nc, np.int64)  # each row's precision in the last option
    for r in range(nr):
        sums = sums_of[r]
        rce, rbits, rtz = rce_of[r], rbits_of[r], rtz_of[r]
        u = 0
        for c in range(nc):
            first[c] = u
            s = 0
            for b in range(nb):
                v = stats[r, c, b]
                if v > 0:
                    used_b[u] = b
                    used_v[u] = v
                    s += v
                    u += 1
            sums[c] = s
        first[nc] = u
        # the bits every option shares: context range, "used" bits, each row's bucket range
        fc = -1
        lc = -1
        base = 0
        plo = 0
        phi = 0
        for c in range(nc):
            lo, hi = first[c], first[c + 1]
            if hi == lo:
                continue
            if fc < 0:
                fc = c
            lc = c
            base += _gamma_bits(_zigzag(used_b[lo] - plo)) + _gamma_bits(_zigzag(used_b[hi - 1] - phi))
            plo = used_b[lo]
            phi = used_b[hi - 1]
            same = _equal_row_before(stats, sums_of, r, c)
            if same >= 0:  # (the bare and the dense ids' rows of a context are often equal)
                for t in range(bit_length(hi - lo - 1), _top_t(hi - lo, sums[c], pb_hi) + 1):
                    rce[c, t] = rce_of[same, c, t]
                    rbits[c, t] = rbits_of[same, c, t]
                    rtz[c, t] = rtz_of[same, c, t]
                continue
            # the row at every precision t it fits (k buckets <= 2**t <= 2**pb_hi) up to one
            # bit past its count's (finer rows paid more table bits than they saved)
            # subtle: a precision whose cost (less the pb every option adds) cannot come within a
            # bit of the least of the coarser ones' is never chosen, at any pb that offers it
            # (those offer the coarser ones too; the bit: the float sums of the choice below
            # cannot reorder them): its Rice bits are not counted (each value's code is at least
            # bit_length(v) + 1 bits, the bound), it is marked UNREACHABLE
            least = 0.0
            for t in range(bit_length(hi - lo - 1), _top_t(hi - lo, sums[c], pb_hi) + 1):
                _normalize_row(used_v, lo, hi, sums[c], np.int64(1) << t, f, keys)
                rc = 0.0
                tz = t
                for i in range(lo, hi):
                    ft = f[i]
                    rc += used_v[i] * (t - (log2[ft] if ft < nlog else np.log2(ft)))
                    tz = imin(tz, bit_length(ft & -ft) - 1)
                rce[c, t] = rc
                rtz[c, t] = tz
                bound = used_b[hi - 1] - used_b[lo]  # a bit a value, then the values' lengths
                for i in range(lo, hi - 1):
                    bound += bit_length(f[i] >> tz)
                fixed = rc + np.float64(rtz[c, t] - t + 1)
                if t > bit_length(hi - lo - 1) and fixed + np.float64(bound) > least + 1.0:
                    rbits[c, t] = UNREACHABLE
                    continue
                rbits[c, t] = _row_bits(used_b, f, lo, hi, t - tz, tz)
                if t == bit_length(hi - lo - 1) or fixed + np.float64(rbits[c, t]) < least:
                    least = fixed + np.float64(rbits[c, t])
        base += 6 if fc < 0 else 12 + imax(lc - fc - 1, 0)
        for j in range(ce.shape[1]):
            pb = pb_lo + j
            total_ce = 0.0
            pos = base
            for c in range(nc):
                lo, hi = first[c], first[c + 1]
                if hi == lo:
                    continue
                # the precision of least payload + table bits (ties: the lowest)
                best = -1
                cost = 0.0
                for t in range(bit_length(hi - lo - 1), imin(pb, _top_t(hi - lo, sums[c], pb_hi)) + 1):
                    ct = rce[c, t] + np.float64(rbits[c, t] + pb - t + rtz[c, t] + 1)
                    if best < 0 or ct < cost:
                        best = t
                        cost = ct
                choice[c] = best
                if choices is not None:
                    choices[r, j, c] = best
                total_ce += rce[c, best]
                pos += rbits[c, best] + pb - best + rtz[c, best] + 1
            ce[r, j] = total_ce
            tbits[r, j] = pos
    if freqs.shape[0] > 0:  # the last option's frequencies (its rows' precisions in ``choice``)
        for c in range(nc):
            for b in range(nb):
                freqs[c, b] = 0
            lo, hi = first[c], first[c + 1]
            if hi == lo:
                continue
            _normalize_row(used_v, lo, hi, sums[c], np.int64(1) << choice[c], f, keys)
            for t in range(lo, hi):
                freqs[c, used_b[t]] = f[t] << (pb_hi - choice[c])


@njit(cache=True, nogil=True, inline="always")
def _equal_row_before(stats, sums, r, c):
    """The first rate ``q < r`` whose row ``c`` of ``stats`` equals rate ``r``'s (``sums[q, c]``
    its sum, filled for every ``q <= r``), or -1."""
    for q in range(r):
        if sums[q, c] != sums[r, c]:
            continue
        equal = True
        for b in range(stats.shape[2]):
            if stats[q, c, b] != stats[r, c, b]:
                equal = False
                break
        if equal:
            return q
    return -1


@njit(cache=True, nogil=True)
def mag_freqs_chosen(counts, pb, choice, freqs):
    """``freqs`` (int64, ``counts``' shape ``(N_CONTEXTS, N_BUCKETS)``, overwritten): each used row
    of ``counts`` normalised at precision ``choice[c]`` (:func:`_normalize_row`) and shifted to
    sum to ``2**pb``; unused rows zero. With ``choice`` a :func:`mag_options_with` call's
    ``choices[r, j]`` for these counts and ``pb = pb_lo + j``: that option's frequencies, those
    its ``freqs`` gave for the rate alone at ``pb`` (the "mag" coder's chosen option, without
    costing its rows at every precision again). Preconditions: ``choice[c]`` in
    ``[bit_length(used - 1), pb]`` for each used row, at most 64 buckets."""
    nc, nb = counts.shape[0], counts.shape[1]
    used_b = empty(nb, np.int64)
    used_v = empty(nb, np.int64)
    f = empty(nb, np.int64)
    keys = empty(128, np.int64)
    for c in range(nc):
        u = 0
        s = 0
        for b in range(nb):
            v = counts[c, b]
            freqs[c, b] = 0
            if v > 0:
                used_b[u] = b
                used_v[u] = v
                s += v
                u += 1
        if u == 0:
            continue
        t = choice[c]
        _normalize_row(used_v, 0, u, s, np.int64(1) << t, f, keys)
        for i in range(u):
            freqs[c, used_b[i]] = f[i] << (pb - t)


#: :func:`mag_options_with`'s table bits of a row at a precision that cannot be chosen
UNREACHABLE = 1 << 40


@njit(cache=True, nogil=True, inline="always")
def _top_t(k, s, pb):
    """The finest precision a row of ``k`` used buckets and ``s`` counts is offered at (the coarsest,
    ``bit_length(k - 1)``, is always offered): ``bit_length(s) + 1``, at most ``pb``."""
    return imax(bit_length(k - 1), imin(bit_length(s) + 1, pb))


@njit(cache=True, nogil=True, inline="always")
def _normalize_row(used_v, lo, hi, s, size, f, keys):
    """``f[lo:hi]``: the counts ``used_v[lo:hi]`` (all > 0, summing to ``s``) normalised to sum to
    ``size`` >= hi - lo by the rule of ``ubpe.coders.rans._normalize``: f = 1 + floor(c *
    (size - k) / s), the shortfall one each to the largest remainders, ties to the lower bucket.
    ``keys``: int64 scratch of 128 values (``hi - lo <= 64``)."""
    k = hi - lo
    spare = size - k
    total = 0
    for t in range(lo, hi):
        sc = used_v[t] * spare
        q = np.int64(np.uint64(sc) // np.uint64(s))  # (sc >= 0, s > 0: sc // s)
        f[t] = 1 + q
        total += 1 + q
        # the rule's key, remainder * 64 + (63 - bucket); subtle: with the bucket's rank among
        # the used ones for the bucket: the same order
        keys[t - lo] = (sc - q * s) * 64 + (63 - (t - lo))
    short = size - total
    if short:
        # one each to the ``short`` largest keys (the largest remainders): the keys are
        # distinct, so a key is among them when fewer than ``short`` exceed it (counted: no
        # sort's unpredictable branches). Eight keys' counts at a time, each kept in a register
        # over a pass through the keys (the keys padded to a multiple of 8, the pads' counts
        # unread; the counts in ``keys[64:]``): where each key's count was a vector loop over the
        # others, a scalar remainder and a horizontal sum (46 % of the kernel's samples under
        # perf; audio's coder calls 7.32 -> 6.27 ms), the same frequencies
        kp = (k + 7) & ~7
        for i in range(k, kp):
            keys[i] = 0
        for c in range(0, kp, 8):
            k0, k1, k2, k3 = keys[c], keys[c + 1], keys[c + 2], keys[c + 3]
            k4, k5, k6, k7 = keys[c + 4], keys[c + 5], keys[c + 6], keys[c + 7]
            a0 = a1 = a2 = a3 = a4 = a5 = a6 = a7 = 0
            for i2 in range(k):
                v = keys[i2]
                a0 += v > k0
                a1 += v > k1
                a2 += v > k2
                a3 += v > k3
                a4 += v > k4
                a5 += v > k5
                a6 += v > k6
                a7 += v > k7
            keys[64 + c] = a0
            keys[65 + c] = a1
            keys[66 + c] = a2
            keys[67 + c] = a3
            keys[68 + c] = a4
            keys[69 + c] = a5
            keys[70 + c] = a6
            keys[71 + c] = a7
        for i in range(k):
            if keys[64 + i] < short:
                f[lo + i] += 1


@njit(cache=True, nogil=True, inline="always")
def _row_bits(used_b, f, lo, hi, t, tz):
    """:func:`table_encode`'s Rice bits of one row's values: used buckets ``used_b[lo:hi]``
    (ascending) of frequencies ``f[lo:hi]``, each ``>> tz`` at precision ``t``; the buckets
    between them zero, the last bucket's value implied."""
    blo = used_b[lo]
    bhi = used_b[hi - 1]
    a = _row_init(t, bhi - blo + 1)
    cnt = 1
    pos = 0
    i = lo
    for b in range(blo, bhi):
        v = np.int64(0)
        if used_b[i] == b:
            v = f[i] >> tz
            i += 1
        rp = _rice_param(a, cnt)
        q = v >> rp
        pos += select(q < RICE_LIMIT, q + 1 + rp, RICE_LIMIT + ESC_LEN_BITS + bit_length(v))
        a += v
        cnt += 1
        if cnt >= 16:
            a >>= 1
            cnt >>= 1
    return pos
