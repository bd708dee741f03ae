"""Numba kernels for bit packing (ubpe.format.bits), the rANS coder (ubpe.coders.rans) and the frequency-table bitstream.

Every kernel here is total: it never raises, never reads or writes outside the arrays it is
given (callers size them as each docstring requires), and reports malformed input through a
negative status code that its Python wrapper turns into ``CorruptDataError``.

Bit order everywhere is little-endian: bit ``j`` of the stream is bit ``j % 8`` of byte ``j // 8``.
"""

from __future__ import annotations

import numba
import numpy as np
from llvmlite import ir
from numba import types
from numba.extending import intrinsic

from . import njit
from .alloc import empty, full, zeros
from .intrinsics import bit_length, emit_bit_length, imax, imin, select

# Adaptive Golomb-Rice code parameters (part of the stored format; never change them).
RICE_LIMIT = 24  # unary quotients >= this escape to an explicit-length binary value
ESC_LEN_BITS = 6  # bit-length field of an escaped value
MAX_VALUE_BITS = 40  # escaped values have at most this many bits
RICE_RESET = 16  # halve the running statistics when the count reaches this
MAX_RICE_PARAM = 40

# Status codes of the decoding kernels.
OK = 0
ERR_TRUNCATED = -1
ERR_OVERSHOOT = -2
ERR_COUNT = -3
ERR_ESCAPE = -4
ERR_TRAILING = -5
ERR_RANGE = -6


# ----------------------------------------------------------------------------- bit packing


@njit(cache=True, nogil=True)
def pack_bits(values, width, out):
    """Write each of ``values`` (uint64) as ``width`` bits, little-endian, into ``out`` (uint8).

    Preconditions: 0 <= width <= 63, every value < 2**width, ``out`` is zero-filled and has
    exactly ceil(len(values) * width / 8) bytes. Bits past the last value stay zero.
    """
    acc = np.uint64(0)
    nacc = 0
    pos = 0
    lo_w = imin(width, 32)
    hi_w = width - lo_w
    lo_mask = np.uint64((1 << lo_w) - 1)
    for i in range(values.shape[0]):
        v = np.uint64(values[i])
        # low part (<= 32 bits) then high part, so the accumulator never holds > 39 + 32 bits
        acc |= (v & lo_mask) << np.uint64(nacc)
        nacc += lo_w
        while nacc >= 8:
            out[pos] = np.uint8(acc & np.uint64(0xFF))
            pos += 1
            acc >>= np.uint64(8)
            nacc -= 8
        if hi_w > 0:
            acc |= (v >> np.uint64(lo_w)) << np.uint64(nacc)
            nacc += hi_w
            while nacc >= 8:
                out[pos] = np.uint8(acc & np.uint64(0xFF))
                pos += 1
                acc >>= np.uint64(8)
                nacc -= 8
    if nacc > 0:
        out[pos] = np.uint8(acc & np.uint64(0xFF))


@njit(cache=True, nogil=True)
def unpack_bits(data, width, out):
    """Read ``len(out)`` values of ``width`` bits each from ``data`` (uint8) into ``out`` (int64).

    Preconditions: 0 <= width <= 63 and len(data) >= ceil(len(out) * width / 8); the caller
    has checked the length. Returns the number of nonzero padding bits after the last value
    (0 for a canonical stream).
    """
    n = out.shape[0]
    acc = np.uint64(0)
    nacc = 0
    pos = 0
    mask = np.uint64((1 << width) - 1)
    for i in range(n):
        # fill the accumulator to at least `width` bits; at most 56 + 8 bits are held
        while nacc < width:
            if nacc > 56:
                break
            acc |= np.uint64(data[pos]) << np.uint64(nacc)
            pos += 1
            nacc += 8
        if nacc >= width:
            out[i] = np.int64(acc & mask)
            acc >>= np.uint64(width)
            nacc -= width
        else:
            # 57..63 buffered bits but a wider value: take the low part, then the rest
            low = acc
            have = nacc
            acc = np.uint64(0)
            nacc = 0
            while nacc < width - have:
                acc |= np.uint64(data[pos]) << np.uint64(nacc)
                pos += 1
                nacc += 8
            need = width - have
            hi = acc & np.uint64((1 << need) - 1)
            out[i] = np.int64(low | (hi << np.uint64(have)))
            acc >>= np.uint64(need)
            nacc -= need
    bad = 0
    while nacc > 0:
        if acc & np.uint64(1):
            bad += 1
        acc >>= np.uint64(1)
        nacc -= 1
    for j in range(pos, data.shape[0]):
        b = data[j]
        while b:
            bad += b & 1
            b >>= 1
    return bad


# ----------------------------------------------------------------------------- bitstream


# One explicit signature each (arguments converted at every call site): without it numba
# compiled _put once per combination of argument types and literal constants (11 times).
@njit("int64(uint8[::1], int64, int64, int64)", cache=True, nogil=True, no_cpython_wrapper=True)
def _put(buf, pos, value, nbits):
    """Write the low ``nbits`` (<= 62) bits of ``value`` at bit ``pos``; return the new position.

    Preconditions: ``buf`` is zero-filled where written, or has length 0 (dry run: count only).
    When not a dry run, buf holds at least ceil((pos + nbits) / 8) bytes.
    """
    if buf.shape[0] == 0:
        return pos + nbits
    while nbits > 0:
        byte = pos >> 3
        off = pos & 7
        take = 8 - off
        if take > nbits:
            take = nbits
        buf[byte] |= np.uint8((value & ((1 << take) - 1)) << off)
        value >>= take
        pos += take
        nbits -= take
    return pos


@njit(types.int64(types.Array(types.uint8, 1, "C", readonly=True), types.int64, types.int64), cache=True, nogil=True)
def _get(buf, pos, nbits):
    """Read ``nbits`` (<= 62) bits at bit ``pos`` of ``buf``; return the value, or -1 if past the end.

    Preconditions: pos >= 0, 0 <= nbits <= 62.
    """
    if pos + nbits > buf.shape[0] * 8:
        return -1
    value = 0
    shift = 0
    while nbits > 0:
        byte = pos >> 3
        off = pos & 7
        take = 8 - off
        if take > nbits:
            take = nbits
        value |= ((np.int64(buf[byte]) >> off) & ((1 << take) - 1)) << shift
        shift += take
        pos += take
        nbits -= take
    return value


def _rice_param(a, n):
    """Smallest r with n * 2**r >= a (capped at MAX_RICE_PARAM): the adaptive Rice parameter.

    From the bit lengths, not a loop over r (a mispredicted exit per table entry): with d =
    bit_length(a) - bit_length(n), n << d has a's bit length, so r is d or d + 1.
    Preconditions: a >= 0, n >= 1, a < 2**62.

    Normative as written here (plain Python: ``NUMBA_DISABLE_JIT`` runs this). Compiled, it is
    the intrinsic below (the same int64 operations emitted into the calling kernel).
    """
    if a <= n:
        return 0
    d = int(a).bit_length() - int(n).bit_length()
    r = d if (n << d) >= a else d + 1
    return r if r < MAX_RICE_PARAM else MAX_RICE_PARAM


@intrinsic
def _rice_param_intrinsic(typingctx, a, n):
    """``_rice_param`` for integer ``a``, ``n`` (each converted to int64), returning int64."""
    if not isinstance(a, types.Integer) or not isinstance(n, types.Integer):
        return None

    def codegen(context, builder, sig, args):
        i64 = ir.IntType(64)
        av = context.cast(builder, args[0], sig.args[0], types.int64)
        nv = context.cast(builder, args[1], sig.args[1], types.int64)
        small = builder.icmp_signed("<=", av, nv)
        d = builder.sub(emit_bit_length(context, builder, av, types.int64),
                        emit_bit_length(context, builder, nv, types.int64))
        d = builder.select(small, ir.Constant(i64, 0), d)  # subtle: a shift in [0, 62] only
        r = builder.select(builder.icmp_signed(">=", builder.shl(nv, d), av), d, builder.add(d, ir.Constant(i64, 1)))
        cap = ir.Constant(i64, MAX_RICE_PARAM)
        r = builder.select(builder.icmp_signed("<", r, cap), r, cap)
        return builder.select(small, ir.Constant(i64, 0), r)

    return types.int64(types.unliteral(a), types.unliteral(n)), codegen


if not numba.config.DISABLE_JIT:
    _rice_param = _rice_param_intrinsic  # noqa: F811


# _put_rice and _get_rice: one compiled function each (no explicit signature: those load at
# import; every call site passes the same types), called, not inlined, by the table and Rice
# kernels of both coders: inlined, each call site compiled a copy (4 of _get_rice).
@njit(cache=True, nogil=True, no_cpython_wrapper=True)
def _put_rice(buf, pos, v, r):
    """Write v >= 0 (v < 2**MAX_VALUE_BITS) with Rice parameter r and the escape rule.

    Layout: q = v >> r; if q < RICE_LIMIT: q zero bits, a one bit, the low r bits of v.
    Otherwise RICE_LIMIT zero bits, L = bit_length(v) in ESC_LEN_BITS bits, then L bits of v.
    Same buffer preconditions as ``_put``.
    """
    q = v >> r
    if q < RICE_LIMIT:
        pos = _put(buf, pos, 0, q)
        pos = _put(buf, pos, 1, 1)
        pos = _put(buf, pos, v & ((1 << r) - 1), r)
        return pos
    pos = _put(buf, pos, 0, RICE_LIMIT)
    length = bit_length(v)
    pos = _put(buf, pos, length, ESC_LEN_BITS)
    pos = _put(buf, pos, v, length)
    return pos


@njit(cache=True, nogil=True)
def _get_rice(buf, pos, r, res):
    """Read one value written by ``_put_rice``; store (value, new pos) in res[0], res[1].

    Returns OK or a negative status (truncated stream, bad escape length). Preconditions:
    0 <= r <= MAX_RICE_PARAM, len(res) >= 2. Never reads past the end of ``buf``.
    """
    q = 0
    while True:
        b = _get(buf, pos, 1)
        if b < 0:
            return ERR_TRUNCATED
        pos += 1
        if b == 1:
            break
        q += 1
        if q == RICE_LIMIT:
            break
    if q < RICE_LIMIT:
        low = _get(buf, pos, r)
        if low < 0:
            return ERR_TRUNCATED
        pos += r
        v = (q << r) | low
        if v >= (1 << MAX_VALUE_BITS):
            return ERR_RANGE
        res[0] = v
        res[1] = pos
        return OK
    length = _get(buf, pos, ESC_LEN_BITS)
    if length < 0:
        return ERR_TRUNCATED
    pos += ESC_LEN_BITS
    if length == 0 or length > MAX_VALUE_BITS:
        return ERR_ESCAPE
    v = _get(buf, pos, length)
    if v < 0:
        return ERR_TRUNCATED
    pos += length
    if (v >> (length - 1)) != 1:  # canonical: top bit set
        return ERR_ESCAPE
    res[0] = v
    res[1] = pos
    return OK


@njit(cache=True, nogil=True)
def table_encode(ids, codes, vocab_size, mode, buf):
    """Write the frequency table bitstream; return its length in bits.

    ``ids``: sorted distinct used symbol ids in [0, vocab_size); ``codes``: their (quantised)
    counts, each in [1, 2**MAX_VALUE_BITS]. mode 0 = bitmap of used ids, 1 = alternating run
    lengths. ``buf``: zero-filled uint8 of the size a dry run (length-0 ``buf``) reported.
    """
    k = ids.shape[0]
    pos = _put(buf, 0, mode, 1)
    if mode == 0:
        if buf.shape[0] == 0:
            pos += vocab_size
        else:
            for i in range(k):
                b = pos + ids[i]
                buf[b >> 3] |= np.uint8(1 << (b & 7))
            pos += vocab_size
    else:
        first_used = 1 if (k > 0 and ids[0] == 0) else 0
        pos = _put(buf, pos, first_used, 1)
        # statistics per run type: index 0 = unused runs, 1 = used runs
        sa = full(2, 4, np.int64)  # subtle: not np.array([4, 4]), whose list
        sn = full(2, 1, np.int64)  # literal compiles a reflected list (compile time)
        i = 0
        cur = 0
        state = first_used
        while cur < vocab_size:
            if state == 1:
                j = i
                while j + 1 < k and ids[j + 1] == ids[j] + 1:
                    j += 1
                run = j - i + 1
                i = j + 1
            else:
                nxt = ids[i] if i < k else vocab_size
                run = nxt - cur
            r = _rice_param(sa[state], sn[state])
            pos = _put_rice(buf, pos, run - 1, r)
            sa[state] += run - 1
            sn[state] += 1
            if sn[state] >= RICE_RESET:
                sa[state] >>= 1
                sn[state] >>= 1
            cur += run
            state = 1 - state
    a = 4
    n = 1
    for i in range(k):
        v = codes[i] - 1
        r = _rice_param(a, n)
        pos = _put_rice(buf, pos, v, r)
        a += v
        n += 1
        if n >= RICE_RESET:
            a >>= 1
            n >>= 1
    return pos


@njit(cache=True, nogil=True)
def table_decode(buf, vocab_size, ids, codes):
    """Parse a ``table_encode`` stream of exactly len(ids) used symbols into ``ids`` and ``codes``.

    Preconditions: vocab_size >= 1, len(ids) == len(codes) == k with 1 <= k <= vocab_size.
    Returns OK, or a negative status: truncated, run past vocab_size, used-symbol count
    differing from k, bad escape, value out of range, or nonzero/extra trailing bits.
    """
    k = ids.shape[0]
    res = zeros(2, np.int64)
    mode = _get(buf, 0, 1)
    if mode < 0:
        return ERR_TRUNCATED
    pos = 1
    if mode == 0:
        if pos + vocab_size > buf.shape[0] * 8:
            return ERR_TRUNCATED
        found = 0
        for s in range(vocab_size):
            b = pos + s
            if (buf[b >> 3] >> (b & 7)) & 1:
                if found >= k:
                    return ERR_COUNT
                ids[found] = s
                found += 1
        pos += vocab_size
        if found != k:
            return ERR_COUNT
    else:
        state = _get(buf, pos, 1)
        if state < 0:
            return ERR_TRUNCATED
        pos += 1
        sa = full(2, 4, np.int64)  # subtle: not np.array([4, 4]), whose list
        sn = full(2, 1, np.int64)  # literal compiles a reflected list (compile time)
        cur = 0
        found = 0
        while cur < vocab_size:
            r = _rice_param(sa[state], sn[state])
            st = _get_rice(buf, pos, r, res)
            if st != OK:
                return st
            pos = res[1]
            run = res[0] + 1
            if run > vocab_size - cur:
                return ERR_OVERSHOOT
            if state == 1:
                if found + run > k:
                    return ERR_COUNT
                for s in range(cur, cur + run):
                    ids[found] = s
                    found += 1
            sa[state] += run - 1
            sn[state] += 1
            if sn[state] >= RICE_RESET:
                sa[state] >>= 1
                sn[state] >>= 1
            cur += run
            state = 1 - state
        if found != k:
            return ERR_COUNT
    a = 4
    n = 1
    for i in range(k):
        r = _rice_param(a, n)
        st = _get_rice(buf, pos, r, res)
        if st != OK:
            return st
        pos = res[1]
        v = res[0]
        codes[i] = v + 1
        a += v
        n += 1
        if n >= RICE_RESET:
            a >>= 1
            n >>= 1
    return _canonical_end(buf, pos)


# ----------------------------------------------------------------------------- merges


@njit(cache=True, nogil=True, inline="always")
def _canonical_end(buf, pos):
    """OK if a bit stream of ``pos`` bits fills exactly ``ceil(pos / 8)`` bytes of ``buf``
    with zero padding, else ERR_TRAILING. Precondition: ``pos <= 8 * len(buf)``.
    """
    if (pos + 7) >> 3 != buf.shape[0]:
        return ERR_TRAILING
    if pos & 7 and buf[pos >> 3] >> (pos & 7):
        return ERR_TRAILING
    return OK


@njit(cache=True, nogil=True)
def merges_encode(merges, alphabet_size, buf):
    """Write merge rows with truncated-binary codes; return the length in bits.

    Row i holds (left, right), each < R = alphabet_size + i; the pair is the single number
    left * R + right < R*R, written in truncated binary over R*R values.
    Preconditions: alphabet_size >= 1, values in range (checked by the caller), R*R < 2**62,
    ``buf`` zero-filled of the size a dry run (length-0 ``buf``) reported.
    """
    pos = 0
    for i in range(merges.shape[0]):
        rng = alphabet_size + i
        pos = _put_trunc(buf, pos, merges[i, 0] * rng + merges[i, 1], rng * rng)
    return pos


@njit(cache=True, nogil=True)
def merges_decode(buf, alphabet_size, out):
    """Parse ``merges_encode`` output into ``out`` (M, 2) int64; return OK or a negative status.

    Preconditions: alphabet_size >= 1 and (alphabet_size + M)**2 < 2**62. Rejects values out
    of range, a truncated stream, and extra or nonzero trailing bits.
    """
    pos = 0
    res = zeros(2, np.int64)
    for i in range(out.shape[0]):
        rng = alphabet_size + i
        st = _get_trunc(buf, pos, rng * rng, res)
        if st != OK:
            return st
        pos = res[1]
        out[i, 0] = res[0] // rng
        out[i, 1] = res[0] % rng
    return _canonical_end(buf, pos)


@njit(cache=True, nogil=True, inline="always")
def _put_trunc(buf, pos, v, m):
    """Truncated binary code of 0 <= v < m (m >= 1, m < 2**62): the first u = 2**(b+1) - m
    values take b = floor(log2 m) bits, the others b + 1 bits (written as v + u). Same buffer
    preconditions as ``_put``. The high-order bit is written first so a reader can stop
    after b bits; bits are still packed little-endian.
    """
    if m <= 1:
        return pos
    b = bit_length(m) - 1
    u = (2 << b) - m
    if v < u:
        return _put_msb(buf, pos, v, b)
    return _put_msb(buf, pos, v + u, b + 1)


@njit(cache=True, nogil=True, inline="always")
def _put_msb(buf, pos, v, nbits):
    """Write the low ``nbits`` of v most-significant bit first. Same preconditions as ``_put``.

    Used by the truncated binary code, whose prefix decides the code length.
    Preconditions: 0 <= nbits <= 62.
    """
    for j in range(nbits - 1, -1, -1):
        pos = _put(buf, pos, (v >> j) & 1, 1)
    return pos


@njit(cache=True, nogil=True, inline="always")
def _get_trunc(buf, pos, m, res):
    """Read a ``_put_trunc`` value for modulus m; store (value, new pos) in res[0], res[1].

    Returns OK, ERR_TRUNCATED or ERR_RANGE. Preconditions: 1 <= m < 2**62, len(res) >= 2.
    Never reads past the end of ``buf``.
    """
    if m <= 1:
        res[0] = 0
        res[1] = pos
        return OK
    b = bit_length(m) - 1
    u = (2 << b) - m
    if pos + b > buf.shape[0] * 8:
        return ERR_TRUNCATED
    v = 0
    for _ in range(b):
        v = (v << 1) | _get(buf, pos, 1)
        pos += 1
    if v >= u:
        bit = _get(buf, pos, 1)
        if bit < 0:
            return ERR_TRUNCATED
        pos += 1
        v = ((v << 1) | bit) - u
        if v >= m:
            return ERR_RANGE
    res[0] = v
    res[1] = pos
    return OK


# ----------------------------------------------------------------------------- rANS

RANS_L = 1 << 32  # lower bound of the normalised state; states live in [2**32, 2**64)


@njit(cache=True, nogil=True)
def rans_encode(dense, freqs, total_bits, out):
    """rANS-encode ``dense`` (symbol indices into ``freqs``) with 64-bit state, 32-bit words.

    Words are written backwards into ``out`` (uint32, length >= len(dense) + 2) so that the
    decoder reads ``out[start:]`` forwards; returns ``start``. Preconditions: freqs >= 1 sum
    to 2**total_bits, 1 <= total_bits <= 31, every dense index < len(freqs).
    """
    k = freqs.shape[0]
    cum = zeros(k, np.uint64)
    acc = np.uint64(0)
    for i in range(k):
        cum[i] = acc
        acc += np.uint64(freqs[i])
    pb = np.uint64(total_bits)
    shift = np.uint64(64 - total_bits)
    mask32 = np.uint64(0xFFFFFFFF)
    x = np.uint64(RANS_L)
    pos = out.shape[0]
    for i in range(dense.shape[0] - 1, -1, -1):
        s = dense[i]
        f = np.uint64(freqs[s])
        if x >= (f << shift):
            pos -= 1
            out[pos] = np.uint32(x & mask32)
            x >>= np.uint64(32)
        x = ((x // f) << pb) + (x % f) + cum[s]
    pos -= 1
    out[pos] = np.uint32(x & mask32)
    pos -= 1
    out[pos] = np.uint32(x >> np.uint64(32))
    return pos


#: The decoder's coarse table has 2**RANS_BUCKET_BITS entries (16 KB of uint64: stays in L1).
RANS_BUCKET_BITS = 11


@njit(cache=True, nogil=True)
def rans_decode(words, freqs, ids, total_bits, out, hist, sym):
    """Decode len(out) tokens from ``words`` (uint32) written by ``rans_encode``; out = ids[symbol].

    Also counts the decoded symbols: ``hist[s]`` += 1 for each (``hist``: int64, length k,
    zero-filled by the caller), so the caller needs no second pass to check the histogram.
    ``sym`` is scratch for the slot -> symbol table: 2**total_bits entries of an integer
    dtype holding k - 1 (the caller picks uint16 when it can, to halve its cache footprint;
    one compiled specialisation per dtype, so the caller allocates it).
    Returns OK, ERR_TRUNCATED (ran out of words or fewer than 2), ERR_RANGE (initial state
    below 2**32; or, a caller's error, checked anyway: ``sym`` of the wrong length, freqs not
    >= 1 summing to 2**total_bits), or ERR_TRAILING (words left over or final state not the
    initial one). Preconditions: 1 <= total_bits <= 24, len(ids) == len(freqs) == len(hist).

    The state update x' = f[s] * (x >> pb) + slot - cum[s] is a serial chain, so its speed is
    the latency of the table lookups on it. Most of the time they come from a coarse table
    of 2**RANS_BUCKET_BITS buckets of consecutive slots: a bucket lying inside one symbol's
    slots holds (f[s], first slot - cum[s]), enough for the update, in one load that hits
    L1; the symbol itself (for the output and the histogram only) comes from ``sym``, off
    the chain. Buckets that straddle symbols hold 0 and take the exact path through
    ``sym``, ``f32`` and ``cum32``. When too few buckets are whole to pay for the extra
    branch, every bucket is set to 0. Every index is in range by construction: slots are
    masked to total_bits, ``sym`` entries are < k, and ``words`` is read only below its length.
    """
    if sym.shape[0] != 1 << total_bits:
        return ERR_RANGE
    k = freqs.shape[0]
    m = 1 << total_bits
    f32 = empty(k, np.uint32)
    cum32 = empty(k, np.uint32)
    acc = 0
    for i in range(k):
        f = freqs[i]
        if f < 1 or f > m - acc:
            return ERR_RANGE
        f32[i] = f
        cum32[i] = acc
        sym[acc:acc + f] = i
        acc += f
    if acc != m:  # every slot written exactly once, with a symbol < k
        return ERR_RANGE
    bshift = imax(total_bits - RANS_BUCKET_BITS, 0)
    if out.shape[0] < m >> bshift:  # fewer tokens than buckets: filling them costs more than they save
        bshift = total_bits  # (one bucket, whole only for k = 1: every token takes the exact path)
    nb = m >> bshift
    last = (1 << bshift) - 1
    bucket = zeros(nb, np.uint64)
    whole = 0
    for b in range(nb):
        lo = b << bshift
        s = sym[lo]
        if sym[lo + last] == s:  # f >= 1, so a used entry is never 0
            bucket[b] = (np.uint64(f32[s]) << np.uint64(32)) | np.uint64(lo - cum32[s])
            whole += 1
    # measured break-even: about half the buckets whole; with a 2**17+ slot table in L2,
    # the exact path costs more and a quarter suffices
    if whole * select(total_bits <= 16, 2, 4) < nb:
        bucket[:] = 0
    nw = words.shape[0]
    if nw < 2:
        return ERR_TRUNCATED
    x = (np.uint64(words[0]) << np.uint64(32)) | np.uint64(words[1])
    if x < np.uint64(RANS_L):
        return ERR_RANGE
    pos = 2
    pb = np.uint64(total_bits)
    mask = np.uint64(m - 1)
    bs = np.uint64(bshift)
    in_bucket = np.uint64(last)
    low32 = np.uint64(0xFFFFFFFF)
    low = np.uint64(RANS_L)
    for i in range(out.shape[0]):
        slot = x & mask
        e = bucket[slot >> bs]
        s = np.intp(sym[slot])
        out[i] = ids[s]
        hist[s] += 1
        if e != 0:
            x = (e >> np.uint64(32)) * (x >> pb) + (slot & in_bucket) + (e & low32)
        else:
            x = np.uint64(f32[s]) * (x >> pb) + slot - np.uint64(cum32[s])
        if x < low:
            if pos >= nw:
                return ERR_TRUNCATED
            x = (x << np.uint64(32)) | np.uint64(words[pos])
            pos += 1
    if pos != nw or x != low:
        return ERR_TRAILING
    return OK


# ----------------------------------------------------------------------------- Rice sequences


@njit(cache=True, nogil=True)
def rice_pack_all(values, r, buf):
    """Write every value (0 <= v < 2**MAX_VALUE_BITS) with ``_put_rice`` and parameter ``r``;
    return the bit length. ``buf`` of length 0 only counts (dry run)."""
    pos = np.int64(0)  # not a literal 0: _put_rice compiles for int64 positions only
    for i in range(values.shape[0]):
        pos = _put_rice(buf, pos, values[i], r)
    return pos


@njit(cache=True, nogil=True)
def rice_bits(values, bits):
    """Add to ``bits[r]`` (int64) the bit length :func:`rice_pack_all` writes for ``values`` (each
    0 <= v < 2**MAX_VALUE_BITS) with parameter r, for every r < len(bits), in one pass: (v >> r)
    + 1 + r bits a value, or RICE_LIMIT + ESC_LEN_BITS + bit_length(v) escaped (``_put_rice``).
    Preconditions: len(bits) <= 64."""
    nr = bits.shape[0]
    for i in range(values.shape[0]):
        v = np.int64(values[i])
        length = bit_length(v)
        for r in range(nr):
            q = v >> r
            bits[r] += select(q < RICE_LIMIT, q + 1 + r, RICE_LIMIT + ESC_LEN_BITS + length)


@njit(cache=True, nogil=True)
def rice_unpack_all(buf, r, out):
    """Read ``len(out)`` values written by :func:`rice_pack_all`; return the bit position after
    the last one, or a negative status. Never reads past the end of ``buf``.

    Preconditions: 0 <= r <= MAX_RICE_PARAM.
    """
    res = zeros(2, np.int64)
    pos = 0
    for i in range(out.shape[0]):
        status = _get_rice(buf, pos, r, res)
        if status != OK:
            return status
        out[i] = res[0]
        pos = res[1]
    return pos


# ----------------------------------------------------------------------------- count model


@njit(cache=True, nogil=True)
def quantize_counts(counts, q, out, model):
    """Count -> code with ``q >= 1`` mantissa bits, into ``out`` (int64, same length): a count
    below ``2**(q+1)`` is its own code; a larger one, of bit length ``b``, has exponent
    ``e = b - (q+1)`` and mantissa ``(count + 2**(e-1)) >> e`` (rounded half up; a mantissa
    reaching ``2**(q+1)`` becomes ``2**q`` with ``e + 1``), and its code is ``e * 2**q + mantissa``.
    The rule of ``ubpe.coders.rans._quantize``, in integers. ``model``: empty, or int64 of the same
    length, then the count each code stands for (``ubpe.coders.rans._dequantize``: a small count
    itself, else ``mantissa << e``). Preconditions: counts in [0, 2**53)."""
    top = np.int64(1) << (q + 1)
    dequantize = model.shape[0] > 0
    for i in range(counts.shape[0]):
        c = np.int64(counts[i])
        e = bit_length(c) - (q + 1)
        if e <= 0:
            out[i] = c
            if dequantize:
                model[i] = c
            continue
        mant = (c + (np.int64(1) << (e - 1))) >> e
        if mant == top:
            e += 1
            mant = np.int64(1) << q
        out[i] = e * (np.int64(1) << q) + mant
        if dequantize:
            model[i] = mant << e
