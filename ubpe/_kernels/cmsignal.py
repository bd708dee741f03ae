"""Numba kernels for the ``"cms"`` coder: context mixing for signal-like token streams.

Every kernel is total: it never raises, never indexes outside its arrays, and reports
malformed input through a negative status code (``ubpe.entropy`` raises ``CorruptDataError``).
All arithmetic that affects the output is integer, so the bytes are identical on every
machine. Nothing here is stored: every table size follows from ``n`` and ``V`` alone. This
text is normative for the ``"cms"`` payload (container format version 4). The "cm" kernels
(``ubpe._kernels.cm``) are not changed by it: this module reuses their helpers (``_hash``,
``_squash_table``, ``_stretch_table``, ``_clamp_bits``, ``_code_bit``, ``_match_step``, ``_finish``, normative as that module
defines them) and two of "cmt2"'s (``ubpe._kernels.cmtext``: ``_apm_init``, ``_conf``).

Model. As "cm" (bits of a token most significant first, nodes, groups of r0 then 4 bits, order
0 as a direct table, tokens before the start are the value V; 1 <= V <= 2**24), with these
differences. Token ids of a signal's stream are alphabet ids in value order, so differences of
ids follow differences of values; write t1..t4 for the tokens 1..4 back (V before the start),
sb(d) = 2 min(bit_length(|d|), 12) + (1 if d < 0) and ub(m) = min(bit_length(m), 15).

- C = 8 hashed contexts, each its own table (context hashes; the hash of a group start is
  ``_hash(context, node)`` as in "cm"):
  0. order 1: ``_hash(0, t1 + 1)``; 1. order 2: ``h2 = _hash(h1 + 0x3779B97F, t2 + 1)``;
  2. order 4: ``_hash(_hash(h2 + 2 * 0x3779B97F, t3 + 1) + 3 * 0x3779B97F, t4 + 1)`` (the "cm"
     hashes of orders 1, 2 and 4);
  3. sparse: ``_hash(_hash(t2 + 0x2222, t3 + 1), 0x2345678)``;
  4. linear prediction: lp = 2 t1 - t2 clamped to [-1, V + 1],
     ``_hash(_hash(lp + 0x3333, sb(t1 - t2)), 0x3456789)``;
  5. difference pattern: ``_hash(_hash(t1 + 0x4444, (sb(d1) * 32 + sb(d2)) * 32 + sb(d3)),
     0x456789A)`` with d1 = t1 - t2, d2 = t2 - t3, d3 = t3 - t4;
  6. magnitudes: a_k = ub(|16 t_k - mu| >> 4) for k = 1, 2, e = ub(en >> 2),
     ``_hash(_hash((a1 * 16 + a2) * 16 + e + 0x5555, [16 t1 < mu] + 2 [16 t2 < mu]), 0x56789AB)``;
  7. loudness: ``_hash(_hash(t1 + 0x6666, e), 0x6789ABC)``;
  where mu (the running mean of the tokens, 4 fractional bits) and en (the running mean of
  |t - t1|, 4 fractional bits) start at 0 and after each token t become
  mu += (16 t - mu) >> MU_SHIFT and en += (16 |t - t1| - en) >> 3 (|t - t1| = 0 for the
  first token; >> is the floor shift).
- tables: context c's table holds 2**SB 16-entry uint16 slots, SB = clamp(bit_length(min(n
  groups, 4 D) - 1), 10, MAX_SLOT_BITS), D = S (V + 1)**K_c (saturating once it reaches
  2**36; K_c = ``ORDERS[c]``, S the group-start nodes per token as "cm"). Entry 0 of a slot is
  a 16-bit check (0 never used; real checks 1..65535), entries 1.. as "cm" (12-bit probability,
  4-bit count; a reset entry is 1 << 15). At a group start the slot s = hash & mask is looked
  up (a 5-6 bit group spans 2-4 aligned slots and resets slot s on a mismatch, as "cm"). For a
  group of at most 4 bits, when slot s does not hold the check, slot s ^ 1 is tried; when
  neither holds it, the one whose entry 1 has the smaller count (s on ties) is reset and used.
  An entry with count c is updated p += ((y << 12) - p) * r >> 16 (then clamped to [1, 4095],
  c incremented up to 15) with r = rec[c] for c < SLOW_FROM and rec[16 c - 164] from it
  (rec[k] = 131072 // (2 k + 3): the last four steps adapt as counts 28, 44, 60 and 76);
- a match model exactly as "cm" (MATCH_MIN = 3, verified up to 32 back), its length bucketed
  as L below 16, 16 + (L - 16) // 4 below 76 and 31 above, its probability (22-bit, count
  limit LIMIT_MATCH) indexed by (bucket, expected bit);
- inputs (stretch of each 12-bit probability): order 0, the 8 contexts, the match model (0
  when it does not predict) and the bias 256: NI = 11;
- three mixers as "cmt2" (int weights, 16 fractional bits, start MIX_W0, rate MIX_LR +
  (MIX_LR_BOOST * 4096) // (4096 + i) while coding token i): one selected by (bit index,
  confidence of the order-4 entry, match state) as "cm", one by (the node's low min(b0, 12)
  bits as "cm", e), one by (min(match length, 15), confidence of the order-2 entry, confidence of
  the linear-prediction entry, match state), where an entry's confidence is 0, 1, 2, 3 for a
  count of 0, 1-2, 3-14, 15; the final mixer of "cmt2" (FINAL_W0, FINAL_LR, selected by
  (min(bit index, 7), match state));
- two APMs as "cmt2": one on (order-1 context, node), one on ``_hash(order-2 context, node)``;
  p = (2 squash(d) + 3 a1 + 3 a2 + 4) >> 3 clamped to [1, 4095] drives the coder of "cm",
  followed by the 16 check bits and the flush exactly as "cm".

Update order after each bit: the three mixers, the final mixer, the APMs (the nearer knot),
order 0, the hashed entries, the match model. After each token: the match model (extended or
dropped, then looked up), the check hash, mu, en.

Memory: O(n) up to a fixed cap: 8 hashed tables of at most 2**20 slots x 32 bytes (32 MiB
each, 256 MiB in all, reached for about n >= 2**19 tokens of two groups; "cm" caps its four
at 8 MiB each), 16 MiB of match positions, at most 16 MiB of order 0, 4.3 MiB of APMs and
about 6 MiB of mixer weights: about 300 MiB at most.
"""

from __future__ import annotations

import numpy as np
from . import njit

from .cm import _clamp_bits, _code_bit, _finish, _hash, _match_step, _squash_table, _stretch_table
from .cmtext import _apm_init, _conf

# Status codes (as ubpe._kernels.cm).
OK = 0
ERR_SYMBOL = -1
ERR_LENGTH = -2
ERR_CHECK = -3

# Model constants (part of the stored format; never change them).
N_CONTEXTS = 8
#: how many tokens each context's table size counts (the sparse one 2, the others as order 2+)
ORDERS = (1, 2, 4, 2, 2, 4, 2, 2)
LIMIT_O0 = 255
LIMIT_MATCH = 255
SLOW_FROM = 12  # hashed entries: count c >= SLOW_FROM adapts at rec[16 c - 164]
MATCH_MIN = 3
MATCH_MAX = 32
MIX_LR = 6
MIX_LR_BOOST = 16
FINAL_LR = 2
MIX_W0 = 5461
FINAL_W0 = 21845
MIN_SLOT_BITS = 10
MAX_SLOT_BITS = 20
MIN_O0_BITS = 12
MAX_O0_BITS = 22
MIN_MATCH_BITS = 10
MAX_MATCH_BITS = 22
APM_RATE = 7
MIN_APM_BITS = 10
MAX_APM_BITS = 12
MAX_APM2_BITS = 16
MU_SHIFT = 5


@njit(cache=True, nogil=True, inline="always")
def _sbucket(d, cap):
    """Signed log bucket of ``d``: 2 * min(bit_length(|d|), cap) + (d < 0)."""
    m = d if d >= 0 else -d
    b = 0
    while m > 0 and b < cap:
        b += 1
        m >>= 1
    return 2 * b + (1 if d < 0 else 0)


@njit(cache=True, nogil=True, inline="always")
def _ubucket(m, cap):
    """min(bit_length(m), cap) for m >= 0."""
    b = 0
    while m > 0 and b < cap:
        b += 1
        m >>= 1
    return b


@njit(cache=True, nogil=True)
def _code(tokens, n, vocab_size, buf, decoding):
    """Shared encoder/decoder loop of "cms" (module docstring). Encoding (``decoding`` False)
    reads ``tokens[:n]`` and returns the full payload length (possibly > len(buf): then it did
    not fit); decoding writes ``tokens[:n]`` and returns OK, ERR_SYMBOL, ERR_CHECK or
    ERR_LENGTH. Preconditions: len(tokens) >= n, 1 <= V <= 2**24."""
    sq = _squash_table()
    st = _stretch_table(sq)
    rec = np.empty(1024, dtype=np.int64)
    for i in range(1024):
        rec[i] = 131072 // (2 * i + 3)
    drec = np.empty(16, dtype=np.int64)
    for i in range(16):
        drec[i] = rec[i] if i < SLOW_FROM else rec[16 * i - 164]  # counts 28, 44, 60, 76 from 12
    nbits = 1
    while (1 << nbits) < vocab_size:
        nbits += 1
    ng = (nbits + 3) // 4
    r0 = nbits - 4 * (ng - 1)
    if ng > 1 and r0 <= 2:
        ng -= 1
        r0 += 4
    C = N_CONTEXTS
    o0bits = _clamp_bits(2 * n * nbits, MIN_O0_BITS, MAX_O0_BITS)
    if o0bits > nbits:
        o0bits = nbits
    o0mask = (1 << o0bits) - 1
    T0 = np.full(1 << o0bits, (1 << 31), dtype=np.uint32)
    starts = 1
    acc = 0
    for g in range(ng - 1):
        acc += r0 if g == 0 else 4
        starts += 1 << acc
    smask = np.zeros(C, dtype=np.int64)
    toff = np.zeros(C + 1, dtype=np.int64)
    for c in range(C):
        distinct = starts
        for k in range(ORDERS[c]):
            if distinct < (1 << 36):
                distinct *= vocab_size + 1
        need = n * ng if n * ng < 4 * distinct else 4 * distinct
        sb = _clamp_bits(need, MIN_SLOT_BITS, MAX_SLOT_BITS)
        smask[c] = (1 << sb) - 1
        toff[c + 1] = toff[c] + (1 << sb) * 16
    TH = np.full(toff[C], 1 << 15, dtype=np.uint16)
    for s in range(toff[C] // 16):
        TH[s * 16] = 0
    mb = _clamp_bits(n, MIN_MATCH_BITS, MAX_MATCH_BITS)
    mmask = (1 << mb) - 1
    MT = np.zeros(1 << mb, dtype=np.int32)
    MS = np.full(64, 1 << 31, dtype=np.uint32)
    NI = 1 + C + 2  # order 0, contexts, match, bias
    IM = 1 + C
    W = np.full(24 * 4 * 3 * NI, MIX_W0, dtype=np.int64)
    NSET2 = 1 << (o0bits if o0bits < 12 else 12)
    W2 = np.full(NSET2 * 16 * NI, MIX_W0, dtype=np.int64)
    W3 = np.full(16 * 4 * 4 * 3 * NI, MIX_W0, dtype=np.int64)
    WF = np.full(8 * 3 * 3, FINAL_W0, dtype=np.int64)
    ab = _clamp_bits(n * ng, MIN_APM_BITS, MAX_APM_BITS)
    amask = (1 << ab) - 1
    AP = _apm_init(ab, sq)
    ab2 = _clamp_bits(n * ng, MIN_APM_BITS, MAX_APM2_BITS)
    amask2 = (1 << ab2) - 1
    AP2 = _apm_init(ab2, sq)

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
    mu = 0  # running mean of the tokens (4 fractional bits)
    en = 0  # running mean of |t - previous t| (4 fractional bits)
    top = 1 << nbits
    for i in range(n):
        t1 = np.int64(tokens[i - 1]) if i >= 1 else vocab_size
        t2 = np.int64(tokens[i - 2]) if i >= 2 else vocab_size
        t3 = np.int64(tokens[i - 3]) if i >= 3 else vocab_size
        t4 = np.int64(tokens[i - 4]) if i >= 4 else vocab_size
        h = _hash(0, t1 + 1)
        hctx[0] = h  # order 1 (as "cm")
        h = _hash(h + 0x3779B97F, t2 + 1)
        hctx[1] = h  # order 2
        h = _hash(h + 2 * 0x3779B97F, t3 + 1)
        hctx[2] = _hash(h + 3 * 0x3779B97F, t4 + 1)  # order 4
        d1 = t1 - t2
        d2 = t2 - t3
        d3 = t3 - t4
        hctx[3] = _hash(_hash(t2 + 0x2222, t3 + 1), 0x2345678)  # sparse: 2 and 3 back
        lp = 2 * t1 - t2
        lp = -1 if lp < -1 else (vocab_size + 1 if lp > vocab_size + 1 else lp)
        hctx[4] = _hash(_hash(lp + 0x3333, _sbucket(d1, 12)), 0x3456789)  # linear prediction
        pat = (_sbucket(d1, 12) * 32 + _sbucket(d2, 12)) * 32 + _sbucket(d3, 12)
        hctx[5] = _hash(_hash(t1 + 0x4444, pat), 0x456789A)  # difference pattern
        a1 = _ubucket(abs(t1 * 16 - mu) >> 4, 15)
        a2 = _ubucket(abs(t2 * 16 - mu) >> 4, 15)
        eb = _ubucket(en >> 2, 15)
        sides = (1 if t1 * 16 < mu else 0) + 2 * (1 if t2 * 16 < mu else 0)
        hctx[6] = _hash(_hash((a1 * 16 + a2) * 16 + eb + 0x5555, sides), 0x56789AB)  # magnitudes
        hctx[7] = _hash(_hash(t1 + 0x6666, eb), 0x6789ABC)  # previous token and loudness
        pt = np.int64(tokens[mptr]) | top if mlen > 0 else -1
        mlb = mlen if mlen < 16 else (16 + (mlen - 16) // 4 if mlen < 76 else 31)
        ml4 = mlen if mlen < 16 else 15
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
                    reset = True
                    if gs <= 4:
                        # subtle: s ^ 1 stays inside the table (its size is a power of 2 >= 2)
                        b2 = toff[c] + (s ^ 1) * 16
                        if np.int64(TH[b2]) == ck:
                            b = b2
                            reset = False
                        elif (np.int64(TH[b2 + 1]) & 15) < (np.int64(TH[b + 1]) & 15):
                            b = b2
                    if reset:
                        TH[b] = np.uint16(ck)
                        for j in range(1, 1 << gs):
                            TH[b + j] = np.uint16(1 << 15)
                base[c] = b
            sub = 1
            for _b in range(gs):
                i0 = node
                if node > o0mask:
                    i0 = ((node * 0x9E3779B1) >> 11) & o0mask
                xs[0] = st[np.int64(T0[i0]) >> 20]
                for c in range(C):
                    xs[1 + c] = st[np.int64(TH[base[c] + sub]) >> 4]
                conf = _conf(np.int64(TH[base[2] + sub]) & 15)
                c2 = _conf(np.int64(TH[base[1] + sub]) & 15)
                c6 = _conf(np.int64(TH[base[4] + sub]) & 15)
                shift = nbits - bitpos
                mi = -1
                mstate = 0
                xs[IM] = 0
                if pt >= 0 and (pt >> shift) == node:
                    ebit = (pt >> (shift - 1)) & 1
                    mi = mlb * 2 + ebit
                    xs[IM] = st[np.int64(MS[mi]) >> 20]
                    mstate = 1 + ebit
                bp = bitpos if bitpos < 24 else 23
                ms1 = ((bp * 4 + conf) * 3 + mstate) * NI
                ms2 = ((node & (NSET2 - 1)) * 16 + eb) * NI
                ms3 = (((ml4 * 4 + c2) * 4 + c6) * 3 + mstate) * NI
                dot1 = 0
                dot2 = 0
                dot3 = 0
                for k in range(NI):
                    xk = xs[k]
                    dot1 += W[ms1 + k] * xk
                    dot2 += W2[ms2 + k] * xk
                    dot3 += W3[ms3 + k] * xk
                dot1 >>= 16
                dot1 = -2047 if dot1 < -2047 else (2047 if dot1 > 2047 else dot1)
                dot2 >>= 16
                dot2 = -2047 if dot2 < -2047 else (2047 if dot2 > 2047 else dot2)
                dot3 >>= 16
                dot3 = -2047 if dot3 < -2047 else (2047 if dot3 > 2047 else dot3)
                fs = ((bitpos if bitpos < 8 else 7) * 3 + mstate) * 3
                fd = (WF[fs] * dot1 + WF[fs + 1] * dot2 + WF[fs + 2] * dot3) >> 16
                dot = -2047 if fd < -2047 else (2047 if fd > 2047 else fd)
                pm = sq[dot + 2047]
                dd = dot + 2048
                lo = dd >> 7
                wt = dd & 127
                ai = ((hctx[0] * 0x9E3 + node * 0x3B9) & amask) * 33
                pa = (np.int64(AP[ai + lo]) * (128 - wt) + np.int64(AP[ai + lo + 1]) * wt) >> 11
                ai2 = (_hash(hctx[1], node) & amask2) * 33
                pa2 = (np.int64(AP2[ai2 + lo]) * (128 - wt) + np.int64(AP2[ai2 + lo + 1]) * wt) >> 11
                p = (2 * pm + 3 * pa + 3 * pa2 + 4) >> 3
                if p < 1:
                    p = 1
                if p > 4095:
                    p = 4095
                y = 0 if decoding else (np.int64(tokens[i]) >> (shift - 1)) & 1
                x1, x2, x, pos, y = _code_bit(x1, x2, x, pos, buf, nb, p, y, decoding)
                # updates
                lr = MIX_LR + (MIX_LR_BOOST * 4096) // (4096 + i)  # faster at first
                err1 = ((y << 12) - sq[dot1 + 2047]) * lr
                err2 = ((y << 12) - sq[dot2 + 2047]) * lr
                err3 = ((y << 12) - sq[dot3 + 2047]) * lr
                for k in range(NI):
                    xk = xs[k]
                    W[ms1 + k] += (xk * err1) >> 14
                    W2[ms2 + k] += (xk * err2) >> 14
                    W3[ms3 + k] += (xk * err3) >> 14
                errf = ((y << 12) - pm) * FINAL_LR
                WF[fs] += (dot1 * errf) >> 14
                WF[fs + 1] += (dot2 * errf) >> 14
                WF[fs + 2] += (dot3 * errf) >> 14
                ya = y << 16
                near = lo + (1 if wt >= 64 else 0)
                # subtle: a knot moves 1/128 of the way to 0 or 65536: it stays in [0, 65520]
                aj = np.int64(AP[ai + near])
                AP[ai + near] = np.uint16(aj + ((ya - aj) >> APM_RATE))
                aj = np.int64(AP2[ai2 + near])
                AP2[ai2 + near] = np.uint16(aj + ((ya - aj) >> APM_RATE))
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
                    pr += (((y << 12) - pr) * drec[cn]) >> 16
                    # subtle: keep 12-bit probabilities inside [1, 4095] so stretch stays finite
                    if pr < 1:
                        pr = 1
                    if pr > 4095:
                        pr = 4095
                    if cn < 15:
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
        mu += ((tok << 4) - mu) >> MU_SHIFT
        dt = tok - t1 if i >= 1 else 0
        en += (((dt if dt >= 0 else -dt) << 4) - en) >> 3
    return _finish(x1, x2, x, pos, buf, nb, n, chk, decoding)


# plain functions over the compiled loop (as ``cm``'s entry points): one compilation of
# ``_code`` serves both directions, and no wrapper is compiled
def cms_encode(tokens, vocab_size, buf):
    """Encode all of ``tokens`` (int32, each in [0, vocab_size)) into ``buf`` (uint8). Returns
    the payload length L (the payload is ``buf[:L]`` when L <= len(buf); otherwise it did not
    fit). Preconditions: 1 <= vocab_size <= 2**24."""
    return _code(tokens, tokens.shape[0], vocab_size, buf, False)


def cms_decode(buf, vocab_size, out):
    """Decode len(out) tokens from ``buf`` (uint8, any content; writable, never written) into
    ``out`` (int32). Returns OK, ERR_SYMBOL, ERR_CHECK or ERR_LENGTH as ``cm.cm_decode``.
    Preconditions as ``cms_encode``."""
    return _code(out, out.shape[0], vocab_size, buf, True)
