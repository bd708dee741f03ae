"""Numba kernels for the ``"cm"`` coder: adaptive binary context mixing over token bits.

Every kernel is total: it never raises, never indexes outside its arrays, and reports
malformed input through a negative status code (``ubpe.entropy`` raises ``CorruptDataError``).
All arithmetic that affects the output is integer (fixed-point tables built by integer code),
so the bytes are identical on every machine. Nothing here is stored: every table size follows
from ``n`` and ``V`` alone. This text is normative for the ``"cm"`` payload.

Model. A token t in [0, V) is coded as B = max(1, bit_length(V - 1)) binary decisions, most
significant bit first; the *node* before a bit is 1 followed by the bits already coded. The
bits are cut into groups: the first group has B - 4 * (ceil(B / 4) - 1) bits (merged with the
next group when that leaves 1 or 2 bits and B > 4), every other group 4 bits. Predictions:

- order 0: a direct table of 2**b0 uint32 (22-bit probability, 10-bit count, count limit
  ``LIMIT_O0``), b0 = min(B, clamp(bit_length(2 n B - 1), 12, 22)), indexed by the node (nodes
  beyond the table, only for huge V and short streams, by a multiplicative hash);
- orders 1..4: one hashed table each, keyed by the k previous tokens (tokens before the start
  are the value V). At each group start the slot ``hash(context, node)`` is looked up: a slot
  holds 2**g uint16 entries (g = group bits; a 5-6 bit group spans 2-4 aligned 16-entry
  slots), entry 0 a 16-bit check, entries 1.. the group's nodes as 12-bit probability and
  4-bit count (limit ``LIMIT_HASHED``). A check mismatch resets the slot. Order k's table
  holds 2**SB 16-entry slots, SB = clamp(bit_length(min(n * groups, 4 * D_k) - 1), 10, 18),
  D_k = S * (V + 1)**k (S the number of possible group-start nodes per token; the product
  stops growing once it reaches 2**36);
- a match model: the last position after the same MATCH_MIN tokens (hash table of
  2**clamp(bit_length(n - 1), 10, 22) int32 positions, verified, extended up to 32 back);
  while the bits coded so far agree with the token that followed it, it predicts that
  token's next bit through an adaptive probability indexed by (min(length, 15), that bit).

Each probability p (12 bits) becomes stretch(p) = ln(p / (1 - p)) * 256 (integer table, the
inverse of the integer ``squash``). Two logistic mixers with int weights (16 fractional bits)
add these inputs and a bias: one selected by (bit index, confidence of the order-4 slot, match
state), one by the node's low min(b0, 12) bits; each learns from its own error and their
outputs are averaged in the stretch domain. The squashed sum, refined by an APM (33
interpolated knots) on the (order-1 context, node) pair and averaged 1:3 with it, drives a
carry-less binary arithmetic coder on 32-bit bounds (x1, x2): bit 1 keeps [x1, xmid], bit 0
[xmid + 1, x2], xmid = x1 + (r >> 12) * p + ((r & 4095) * p >> 12), r = x2 - x1, p in
[1, 4095]; while the top bytes of x1 and x2 agree it is output. After the n tokens (when n > 0) come 16 check
bits at p = 2048, bits 15..0 of h (h = 0, then h = _hash(h, t + 1) for each token t). At the
end the shortest k in 0..4 such that x1 rounded up to a multiple of 2**(32 - 8k) is <= x2 is
taken and the top k bytes of that value are written. The decoder reads zeros past the end
and insists on the check bits, exactly that length and those bytes.

Text ("cmt", container format 3): the same coder with ``cls`` non-empty, one class per
token (``text_class`` of the symbol's byte value: a word code w, a character class c, a line
feed flag). Six hashed contexts follow the four orders, each its own table sized as the others
but with up to 2**MAX_SLOT_BITS_TEXT slots: orders 6 and 8 (the order-4 hash extended by the
tokens 5..6 and 5..8 back, then hashed with a constant), the current word (hash of the word
codes since the last token with w = 0), that word with the previous one, and with the two
previous ones, and the column (tokens since the last line feed, capped at 255) with the token
at that column of the previous line (V if none). The second mixer is selected by (node, c of
the previous token) instead of the node's low bits. Everything else is as above; a "cm"
stream is coded exactly as before (``cls`` empty). Memory: up to 10 tables of 32 MiB.

Memory: O(n) bytes up to a fixed cap (about 32 MiB of hashed tables, 16 MiB of match
positions, 16 MiB of order 0).
"""

from __future__ import annotations

import numba
import numpy as np
from llvmlite import ir
from numba import types
from numba.extending import intrinsic

from . import njit
from .alloc import empty

# Status codes of cm_decode.
OK = 0
ERR_SYMBOL = -1  # a decoded token is >= V
ERR_LENGTH = -2  # the payload is longer or shorter than the coder's output, or the flush differs
ERR_CHECK = -3  # the 16-bit check of the decoded tokens differs

# Model constants (part of the stored format; never change them).
N_HASHED = 4  # hashed contexts of orders 1..N_HASHED
LIMIT_O0 = 255
LIMIT_HASHED = 15
LIMIT_MATCH = 255
MATCH_MIN = 3
MATCH_MAX = 32
MIX_LR = 6
MIX_W0 = 21845
MIN_SLOT_BITS = 10
MAX_SLOT_BITS = 18  # 2**22 uint16 entries per hashed table
MIN_O0_BITS = 12
MAX_O0_BITS = 22
MIN_MATCH_BITS = 10
MAX_MATCH_BITS = 22
APM_RATE = 7
N_TEXT = 6  # "cmt": orders 6 and 8, word, word bigram, word trigram, column
MAX_SLOT_BITS_TEXT = 20
MIN_APM_BITS = 10
MAX_APM_BITS = 12


def _hash(h, x):
    """Mix ``x`` into the 32-bit hash ``h``; returns a value in [0, 2**32).

    Preconditions: 0 <= h < 2**32 and 0 <= x < 2**32 (products stay below 2**63).

    Normative as written here (plain Python: ``NUMBA_DISABLE_JIT`` runs this). Compiled, it is
    the intrinsic below: the same int64 operations emitted straight into the calling kernel,
    which spares numba typing and lowering an inlined copy of this function at each of the
    kernels' call sites (13 in the "cms2" loop).
    """
    v = ((h ^ x) & 0xFFFFFFFF) * 0x5BD1E995
    v = v ^ (v >> 29)
    v = (v & 0xFFFFFFFF) * 0x2F0B3A49
    return (v ^ (v >> 31)) & 0xFFFFFFFF


@intrinsic
def _hash_intrinsic(typingctx, h, x):
    """``_hash`` for integer ``h``, ``x`` (each converted to int64), returning int64."""
    if not isinstance(h, types.Integer) or not isinstance(x, types.Integer):
        return None

    def codegen(context, builder, sig, args):
        i64 = ir.IntType(64)
        hv = context.cast(builder, args[0], sig.args[0], types.int64)
        xv = context.cast(builder, args[1], sig.args[1], types.int64)
        low = ir.Constant(i64, 0xFFFFFFFF)
        # subtle: every value shifted is >= 0 and < 2**63, so the logical shift equals numba's
        # arithmetic one and the products cannot wrap
        v = builder.mul(builder.and_(builder.xor(hv, xv), low), ir.Constant(i64, 0x5BD1E995))
        v = builder.xor(v, builder.lshr(v, ir.Constant(i64, 29)))
        v = builder.mul(builder.and_(v, low), ir.Constant(i64, 0x2F0B3A49))
        return builder.and_(builder.xor(v, builder.lshr(v, ir.Constant(i64, 31))), low)

    return types.int64(h, x), codegen


_hash_python = _hash  # the definition, for tests
if not numba.config.DISABLE_JIT:
    _hash = _hash_intrinsic  # noqa: F811


#: The squash knots (``_squash_table``), a module constant: numba freezes a global array into
#: the compiled code (read-only), while a list literal in the kernel compiled a reflected list
#: and np.array's list overload.
_SQUASH_KNOTS = np.array([1, 2, 4, 6, 10, 17, 27, 45, 74, 120, 194, 311, 488, 747, 1102, 1546, 2048,
                           2550, 2994, 3349, 3608, 3785, 3902, 3976, 4022, 4051, 4069, 4079, 4086, 4090,
                           4092, 4094, 4095], dtype=np.int64)


@njit(cache=True, nogil=True, inline="always")
def _squash_table():
    """Integer squash: sq[d + 2047] = 4096 / (1 + exp(-d / 256)) for d in [-2047, 2047].

    Built by linear interpolation (7 fractional bits) of 33 hard-coded integer knots, so it is
    the same everywhere. Values lie in [1, 4095] and never decrease.
    """
    knots = _SQUASH_KNOTS
    sq = empty(4095, np.int64)
    for d in range(-2047, 2048):
        w = d & 127
        i = (d >> 7) + 16
        sq[d + 2047] = (knots[i] * (128 - w) + knots[i + 1] * w + 64) >> 7
    return sq


@njit(cache=True, nogil=True, inline="always")
def _stretch_table(sq):
    """stretch[p] for p in [0, 4096): the smallest d with squash(d) >= p (2047 if none).

    Precondition: ``sq`` from ``_squash_table`` (non-decreasing). Results lie in [-2047, 2047].
    """
    st = empty(4096, np.int64)
    pi = 0
    for d in range(-2047, 2048):
        v = sq[d + 2047]
        for j in range(pi, v + 1):
            st[j] = d
        if v + 1 > pi:
            pi = v + 1
    for j in range(pi, 4096):
        st[j] = 2047
    return st


@njit(cache=True, nogil=True, inline="always")
def _clamp_bits(need, lo, hi):
    """Smallest b in [lo, hi] with 2**b >= need (hi if none)."""
    b = lo
    while b < hi and (1 << b) < need:
        b += 1
    return b


@njit(cache=True, nogil=True, inline="always")
def _code_bit(x1, x2, x, pos, buf, nb, p, y, decoding):
    """Code one bit with probability ``p / 4096`` of a 1 in the carry-less 32-bit coder.

    Encoding codes ``y`` and writes settled bytes to ``buf[pos]`` while ``pos < nb``; decoding
    ignores ``y``, decides the bit from ``x`` and reads ``buf`` (zeros past ``nb``). Returns
    ``(x1, x2, x, pos, bit)``. Preconditions: ``0 <= x1 <= x2 < 2**32``, ``1 <= p <= 4095``.
    """
    rng = x2 - x1
    xmid = x1 + (rng >> 12) * p + (((rng & 0xFFF) * p) >> 12)
    if decoding:
        y = 1 if x <= xmid else 0
    if y:
        x2 = xmid
    else:
        x1 = xmid + 1
    # subtle: shift out every leading byte on which x1 and x2 agree: it can no longer change
    while ((x1 ^ x2) & 0xFF000000) == 0:
        if decoding:
            q = pos + 4
            x = ((x << 8) & 0xFFFFFFFF) | (np.int64(buf[q]) if q < nb else 0)
        elif pos < nb:
            buf[pos] = np.uint8(x1 >> 24)
        pos += 1
        x1 = (x1 << 8) & 0xFFFFFFFF
        x2 = ((x2 << 8) & 0xFFFFFFFF) | 255
    return x1, x2, x, pos, y


@njit(cache=True, nogil=True, inline="always")
def _match_step(tokens, i, tok, pt, top, mlen, mptr, MT, mmask, min_len, max_len):
    """A match model after token ``i`` (``tok``): the match is extended when it predicted
    ``tok`` (``pt``, its predicted token | ``top``), else dropped; then the last position after
    the newest ``min_len`` tokens is looked up in ``MT`` (hashed, ``mmask``) and, with no match
    running, verified backwards up to ``max_len`` tokens and taken when ``min_len`` agree.
    Returns ``(mlen, mptr)``; ``MT`` is updated to ``i + 1``."""
    if mlen > 0 and (pt ^ top) == tok:
        mlen += 1
        mptr += 1
    else:
        mlen = 0
    if i + 1 >= min_len:
        hm = 0
        for k in range(min_len):
            hm = _hash(hm, np.int64(tokens[i - k]))
        hm &= mmask
        if mlen == 0:
            cand = np.int64(MT[hm])
            if cand > 0:
                L = 0
                while L < max_len and L < cand and tokens[cand - 1 - L] == tokens[i - L]:
                    L += 1
                if L >= min_len:
                    mlen = L
                    mptr = cand  # subtle: cand <= i, so tokens[mptr] is always known
        MT[hm] = i + 1
    return mlen, mptr


@njit(cache=True, nogil=True, inline="always")
def _finish(x1, x2, x, pos, buf, nb, n, chk, decoding):
    """The end of a stream, shared by every cm coder: 16 check bits of ``chk`` at p = 2048 (when
    n > 0), then the flush (the shortest k-byte prefix of a value in [x1, x2]). Encoding returns
    the payload length; decoding OK, ERR_CHECK or ERR_LENGTH."""
    # check: 16 bits of the tokens' hash at probability 1/2 (2 bytes), so that corrupt data
    # decoding to other tokens is refused but for a 2**-16 chance
    for j in range(16 if n > 0 else 0):
        yc = (chk >> (15 - j)) & 1
        x1, x2, x, pos, y = _code_bit(x1, x2, x, pos, buf, nb, 2048, yc, decoding)
        if y != yc:
            return ERR_CHECK
    # flush: the shortest k-byte prefix v of a value in [x1, x2] (zeros follow it)
    k = 4
    v = x1
    for kk in range(5):
        sh = 32 - 8 * kk
        vv = ((x1 + (1 << sh) - 1) >> sh) << sh
        if vv <= x2:
            k = kk
            v = vv
            break
    if not decoding:
        for j in range(k):
            if pos < nb:
                buf[pos] = np.uint8((v >> (24 - 8 * j)) & 255)
            pos += 1
        return pos
    if pos + k != nb:
        return ERR_LENGTH
    for j in range(k):
        if np.int64(buf[pos + j]) != ((v >> (24 - 8 * j)) & 255):
            return ERR_LENGTH
    return OK


def _make_code(text):
    """The shared encoder/decoder loop with the text contexts on (``text`` True: "cmt") or off
    ("cm"). ``text`` is a compile-time constant of the kernel (a closure constant), so the "cm"
    loop has no text branches and fixed-length context loops (about 1.25x faster than one loop
    deciding at run time, same bytes), and coding a signal never compiles the text loop."""

    @njit(cache=True, nogil=True)
    def code(tokens, n, vocab_size, buf, decoding, cls):
        """Shared encoder/decoder loop: code ``n`` tokens through ``buf`` (uint8).

        ``text`` (a constant of this compiled loop) turns on the text contexts (module
        docstring), for which ``cls`` holds one entry per token (``text_class``).

        Encoding (``decoding`` False): reads ``tokens[:n]`` (all in [0, V)), writes at most
        len(buf) bytes and returns the full payload length (possibly > len(buf): then it did not
        fit). Decoding: reads ``buf`` (any bytes; zeros past its end), writes ``tokens[:n]``,
        returns OK, ERR_SYMBOL, ERR_CHECK or ERR_LENGTH.
        Preconditions: len(tokens) >= n, 1 <= V <= 2**24.
        """
        sq = _squash_table()
        st = _stretch_table(sq)
        rec = np.empty(1024, dtype=np.int64)
        for i in range(1024):
            rec[i] = 131072 // (2 * i + 3)  # 65536 / (count + 1.5)
        nbits = 1
        while (1 << nbits) < vocab_size:
            nbits += 1
        ng = (nbits + 3) // 4
        r0 = nbits - 4 * (ng - 1)
        if ng > 1 and r0 <= 2:
            # subtle: a 1-2 bit first group would waste a whole slot (and a cache miss) per
            # context; it joins the next group as one 5-6 bit group spanning 2-4 aligned slots
            ng -= 1
            r0 += 4
        C = N_HASHED + (N_TEXT if text else 0)
        max_sb = MAX_SLOT_BITS_TEXT if text else MAX_SLOT_BITS
        o0bits = _clamp_bits(2 * n * nbits, MIN_O0_BITS, MAX_O0_BITS)
        if o0bits > nbits:
            o0bits = nbits
        o0mask = (1 << o0bits) - 1
        T0 = np.full(1 << o0bits, (1 << 31), dtype=np.uint32)
        # subtle: order k has at most V**k * starts distinct slots (starts = group-start nodes per
        # token), so low orders get smaller tables: fewer cache misses, same predictions
        starts = 1
        acc = 0
        for g in range(ng - 1):
            acc += r0 if g == 0 else 4
            starts += 1 << acc
        smask = np.zeros(C, dtype=np.int64)
        toff = np.zeros(C + 1, dtype=np.int64)
        distinct = starts
        for c in range(C):
            if distinct < (1 << 36):  # saturate: 4 * distinct stays below 2**63
                distinct *= vocab_size + 1  # + 1: the "before the start" value V
            need = n * ng if n * ng < 4 * distinct else 4 * distinct  # load <= 1/4: few collisions
            sb = _clamp_bits(need, MIN_SLOT_BITS, max_sb)
            smask[c] = (1 << sb) - 1
            toff[c + 1] = toff[c] + (1 << sb) * 16
        TH = np.full(toff[C], 1 << 15, dtype=np.uint16)
        for s in range(toff[C] // 16):
            TH[s * 16] = 0  # check 0 never matches a real check (those are >= 1)
        mb = _clamp_bits(n, MIN_MATCH_BITS, MAX_MATCH_BITS)
        mmask = (1 << mb) - 1
        MT = np.zeros(1 << mb, dtype=np.int32)
        MS = np.full(32, 1 << 31, dtype=np.uint32)
        NI = C + 3  # order 0, hashed orders, match, bias
        NSET = 24 * 4 * 3
        W = np.full(NSET * NI, MIX_W0, dtype=np.int64)
        NSET2 = 1 << (o0bits if o0bits < 12 else 12)
        if text:
            NSET2 = (1 << nbits) * 4  # (node, class of the previous token); text has V <= 256
        W2 = np.full(NSET2 * NI, MIX_W0, dtype=np.int64)
        # APM: 33 knots per (order-1 hashed context, node) cell, 16-bit probabilities
        ab = _clamp_bits(n * ng, MIN_APM_BITS, MAX_APM_BITS)
        amask = (1 << ab) - 1
        AP = np.empty((1 << ab) * 33, dtype=np.uint16)
        for j in range(1 << ab):
            for k in range(33):
                d = (k - 16) * 128
                d = -2047 if d < -2047 else (2047 if d > 2047 else d)
                AP[j * 33 + k] = np.uint16(sq[d + 2047] * 16)

        x1 = 0
        x2 = 0xFFFFFFFF
        x = 0
        pos = 0
        nb = buf.shape[0]
        if decoding:
            for k in range(4):
                x = (x << 8) | (np.int64(buf[pos]) if pos < nb else 0)
                pos += 1
            pos = 0  # subtle: pos counts shifted-out bytes, exactly as the encoder's output position
        hctx = np.zeros(C, dtype=np.int64)
        base = np.zeros(C, dtype=np.int64)
        xs = np.zeros(NI, dtype=np.int64)
        xs[NI - 1] = 256
        mptr = 0
        mlen = 0
        chk = 0
        wh = 0  # text: hash of the current word (0 outside a word), and of the two before it
        pwh = 0
        ppwh = 0
        pcls = 0  # text: class of the previous token
        lstart = 0  # text: where the current and the previous line start
        plstart = 0
        top = 1 << nbits
        for i in range(n):
            h = 0
            for c in range(N_HASHED):
                t = np.int64(tokens[i - 1 - c]) if i - 1 - c >= 0 else vocab_size
                h = _hash(h + c * 0x3779B97F, t + 1)
                hctx[c] = h
            if text:
                for c in range(N_HASHED, 8):
                    t = np.int64(tokens[i - 1 - c]) if i - 1 - c >= 0 else vocab_size
                    h = _hash(h + c * 0x3779B97F, t + 1)
                    if c == 5:
                        hctx[N_HASHED] = _hash(h, 0x1234567)  # order 6
                hctx[N_HASHED + 1] = _hash(h, 0x789ABCD)  # order 8
                hctx[N_HASHED + 2] = _hash(wh + 0x55555, 0x2345678)  # the word so far
                hctx[N_HASHED + 3] = _hash(_hash(wh, pwh + 1), 0x3456789)  # and the word before
                hctx[N_HASHED + 4] = _hash(_hash(ppwh, _hash(pwh, wh + 1)), 0x6789ABC)  # and two
                col = i - lstart
                above = np.int64(tokens[plstart + col]) if plstart + col < lstart else vocab_size
                hctx[N_HASHED + 5] = _hash(_hash(col if col < 255 else 255, above + 1), 0x89ABCDE)  # column
            pt = np.int64(tokens[mptr]) | top if mlen > 0 else -1
            mlb = mlen if mlen < 15 else 15
            node = 1
            bitpos = 0
            for g in range(ng):
                gs = r0 if g == 0 else 4
                for c in range(C):
                    hh = _hash(hctx[c], node)
                    s = hh & smask[c]
                    if gs > 4:
                        s &= ~((1 << (gs - 4)) - 1)
                    b = toff[c] + s * 16
                    ck = hh >> 16
                    if ck == 0:
                        ck = 1  # subtle: 0 marks a never-used slot, so real checks are 1..65535
                    if np.int64(TH[b]) != ck:
                        TH[b] = np.uint16(ck)
                        for j in range(1, 1 << gs):
                            TH[b + j] = np.uint16(1 << 15)
                    base[c] = b
                sub = 1
                for _b in range(gs):
                    i0 = node
                    if node > o0mask:
                        # subtle: only when 2**B > the table (huge V, short stream): hash deep nodes
                        i0 = ((node * 0x9E3779B1) >> 11) & o0mask
                    xs[0] = st[np.int64(T0[i0]) >> 20]
                    conf = 0
                    for c in range(C):
                        e = np.int64(TH[base[c] + sub])
                        xs[1 + c] = st[e >> 4]
                    cn = np.int64(TH[base[N_HASHED - 1] + sub]) & 15
                    conf = 0 if cn == 0 else (1 if cn < 3 else (2 if cn < 15 else 3))
                    shift = nbits - bitpos
                    mi = -1
                    mstate = 0
                    xs[C + 1] = 0
                    if pt >= 0 and (pt >> shift) == node:
                        eb = (pt >> (shift - 1)) & 1
                        mi = mlb * 2 + eb
                        xs[C + 1] = st[np.int64(MS[mi]) >> 20]
                        mstate = 1 + eb
                    bp = bitpos if bitpos < 24 else 23
                    ms = ((bp * 4 + conf) * 3 + mstate) * NI
                    dot1 = 0
                    ms2 = (node * 4 + pcls) * NI if text else (node & (NSET2 - 1)) * NI
                    dot2 = 0
                    for k in range(NI):
                        dot1 += W[ms + k] * xs[k]
                        dot2 += W2[ms2 + k] * xs[k]
                    dot1 >>= 16
                    dot1 = -2047 if dot1 < -2047 else (2047 if dot1 > 2047 else dot1)
                    dot2 >>= 16
                    dot2 = -2047 if dot2 < -2047 else (2047 if dot2 > 2047 else dot2)
                    dot = (dot1 + dot2) >> 1
                    pm = sq[dot + 2047]
                    # APM on (order-1 context, node): interpolate between two of 33 knots
                    ai = ((hctx[0] * 0x9E3 + node * 0x3B9) & amask) * 33
                    dd = dot + 2048
                    lo = dd >> 7
                    wt = dd & 127
                    pa = (np.int64(AP[ai + lo]) * (128 - wt) + np.int64(AP[ai + lo + 1]) * wt) >> 11
                    p = (pm + 3 * pa + 2) >> 2
                    if p < 1:
                        p = 1
                    if p > 4095:
                        p = 4095
                    y = 0 if decoding else (np.int64(tokens[i]) >> (shift - 1)) & 1
                    x1, x2, x, pos, y = _code_bit(x1, x2, x, pos, buf, nb, p, y, decoding)
                    # updates
                    err = ((y << 12) - sq[dot1 + 2047]) * MIX_LR
                    err2 = ((y << 12) - sq[dot2 + 2047]) * MIX_LR
                    for k in range(NI):
                        W[ms + k] += (xs[k] * err) >> 14
                        W2[ms2 + k] += (xs[k] * err2) >> 14
                    ya = y << 16
                    j = ai + lo + (1 if wt >= 64 else 0)
                    # subtle: a knot moves 1/128 of the way to 0 or 65536, so it stays in [0, 65520]
                    # and fits uint16 (initial knots are at most 4095 * 16 = 65520)
                    aj = np.int64(AP[j])
                    AP[j] = np.uint16(aj + ((ya - aj) >> APM_RATE))
                    e = np.int64(T0[i0])
                    pr = e >> 10
                    cn = e & 1023
                    pr += (((y << 22) - pr) * rec[cn]) >> 16
                    if cn < LIMIT_O0:
                        cn += 1
                    T0[i0] = np.uint32((pr << 10) | cn)
                    for c in range(C):
                        jj = base[c] + sub
                        e = np.int64(TH[jj])
                        pr = e >> 4
                        cn = e & 15
                        pr += (((y << 12) - pr) * rec[cn]) >> 16
                        # subtle: keep 12-bit probabilities inside [1, 4095] so stretch stays finite
                        if pr < 1:
                            pr = 1
                        if pr > 4095:
                            pr = 4095
                        if cn < LIMIT_HASHED:
                            cn += 1
                        TH[jj] = np.uint16((pr << 4) | cn)
                    if mi >= 0:
                        e = np.int64(MS[mi])
                        pr = e >> 10
                        cn = e & 1023
                        pr += (((y << 22) - pr) * rec[cn]) >> 16
                        if cn < LIMIT_MATCH:
                            cn += 1
                        MS[mi] = np.uint32((pr << 10) | cn)
                    sub = sub * 2 + y
                    node = node * 2 + y
                    bitpos += 1
            tok = node - top
            if decoding:
                if tok >= vocab_size:
                    return ERR_SYMBOL
                tokens[i] = tok
            mlen, mptr = _match_step(tokens, i, tok, pt, top, mlen, mptr, MT, mmask, MATCH_MIN, MATCH_MAX)
            chk = _hash(chk, tok + 1)
            if text:
                k = cls[tok]
                wc = k >> 3
                if wc > 0:
                    wh = _hash(wh + 0x777, wc)
                elif wh != 0:
                    ppwh = pwh
                    pwh = wh
                    wh = 0
                pcls = (k >> 1) & 3
                if k & 1:
                    plstart = lstart
                    lstart = i + 1
        return _finish(x1, x2, x, pos, buf, nb, n, chk, decoding)

    return code


_code_cm = _make_code(False)
_code_cmt = _make_code(True)
# plain functions over the two kernels: a compiled wrapper would cost its own compilation
_NO_CLASSES = np.zeros(0, dtype=np.int64)


def cm_encode(tokens, vocab_size, buf):
    """Encode all of ``tokens`` (int32, each in [0, vocab_size)) into ``buf`` (uint8).

    Returns the payload length L; the payload is ``buf[:L]`` when L <= len(buf), otherwise
    it did not fit (nothing past len(buf) is written). Preconditions: 1 <= vocab_size <= 2**24.
    """
    return _code_cm(tokens, tokens.shape[0], vocab_size, buf, False, _NO_CLASSES)


def cm_decode(buf, vocab_size, out):
    """Decode len(out) tokens from ``buf`` (uint8, any content) into ``out`` (int32).

    Returns OK, ERR_SYMBOL (a token >= vocab_size; ``out`` is partly written), ERR_CHECK (the
    tokens' 16-bit check differs) or ERR_LENGTH (the payload is not exactly the coder's
    output). Preconditions: 1 <= vocab_size <= 2**24; ``buf`` writable (shared code with the
    encoder) but never written.
    """
    return _code_cm(out, out.shape[0], vocab_size, buf, True, _NO_CLASSES)


def cmt_encode(tokens, vocab_size, buf, cls):
    """``cm_encode`` with the text contexts: ``cls`` (int64, one ``text_class`` per token).

    Preconditions: as ``cm_encode``, vocab_size <= 256, len(cls) == vocab_size.
    """
    return _code_cmt(tokens, tokens.shape[0], vocab_size, buf, False, cls)


def cmt_decode(buf, vocab_size, out, cls):
    """``cm_decode`` with the text contexts; preconditions as ``cmt_encode``."""
    return _code_cmt(out, out.shape[0], vocab_size, buf, True, cls)


def text_class(value: int) -> int:
    """The class of a byte value for the text contexts: ``(w << 3) | (c << 1) | newline`` where
    w is the word code (the lower-case ASCII letter, the digit, or the byte itself from 128
    up; 0 for any other byte), c the character class (0 other, 1 word byte, 2 space or line
    feed, 3 ASCII punctuation) and newline 1 for a line feed (10). Values outside [0, 255]
    get 0 (other)."""
    if not 0 <= value <= 255:
        return 0
    ch = chr(value)
    if value >= 128 or ch.isalnum():
        w, c = (ord(ch.lower()) if value < 128 else value), 1
    elif value in (32, 10):
        w, c = 0, 2
    elif 33 <= value <= 126:
        w, c = 0, 3
    else:
        w, c = 0, 0
    return (w << 3) | (c << 1) | (1 if value == 10 else 0)
