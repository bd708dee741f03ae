"""Numba kernels for the ``"cmt2"`` coder: context mixing for text through its bytes.

Every kernel is total: it never raises, never indexes outside its arrays, and reports
malformed input through a negative status code (``ubpe.coders`` raises ``CorruptDataError``).
All arithmetic that affects the output is integer, so the bytes are identical on every
machine. Nothing here is stored: every table size follows from ``n`` and ``V`` alone. This
text is normative for the ``"cmt2"`` payload, with the shared parts of ``ubpe._kernels.cmcore``
(``_hash``, ``_squash_table``, ``_stretch_table``, ``_clamp_bits``, ``_code_bit``,
``_match_step``, ``_finish``), and it compiles only when text is coded. It is described in two
steps: the *base model* ("cm" below, a coder of development versions before format version 1,
whose constants it names are LIMIT_O0 = 255, LIMIT_HASHED = 15, MATCH_MIN = 3, MAX_SLOT_BITS =
18, MAX_SLOT_BITS_TEXT = 20), then what "cmt2" adds to it and changes.

The base model ("cm"). A token t in [0, V) is coded as B = max(1, bit_length(V - 1)) binary decisions, most
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

The base text model ("cmt"). Text: the base model with ``cls`` non-empty, one class per
token (``text_class`` of the symbol's byte value: a word code w, a character class c, a line
feed flag). Six hashed contexts follow the four orders, each its own table sized as the others
but with up to 2**MAX_SLOT_BITS_TEXT slots: orders 6 and 8 (the order-4 hash extended by the
tokens 5..6 and 5..8 back, then hashed with a constant), the current word (hash of the word
codes since the last token with w = 0), that word with the previous one, and with the two
previous ones, and the column (tokens since the last line feed, capped at 255) with the token
at that column of the previous line (V if none). The second mixer is selected by (node, c of
the previous token) instead of the node's low bits. Everything else is as above.

Model of "cmt2". As "cmt" (bits of a token most significant first, nodes, groups,
tokens before the start are the value V, ``cls`` the ``text_class`` of each symbol), with:

- contexts: order 0 (a direct table exactly as "cm"), and C = 11 hashed contexts: orders 1..4,
  orders 6 and 8, the current word, the word and the one before it, the word and the two
  before it, the column with the token above it (all hashed exactly as "cmt"), and the
  *class pattern*: ``_hash(_hash(P + 0x9999, t1 + 1), 0x5A6B7C8)`` where t1 is the previous
  token (V at the start) and P the classes c of the last 8 tokens, 2 bits each, newest in the
  low bits (``P = ((P << 2) | c) & 0xFFFF`` after each token, 0 at the start);
- hashed tables: context k's table holds 2**SB 16-entry slots of uint16, SB =
  clamp(bit_length(min(n * groups, 4 * D_k) - 1), 10, MAX_SLOT_BITS) as in "cm" (D_k with k
  the context's index + 1, the product of (V + 1) saturating once it reaches 2**36). Entry 0 of
  a slot is a 16-bit check (0: never used; real checks 1..65535, as "cm"), entries 1.. the
  bit-history state of the group's nodes (below; high byte 0). At a group start the slot s =
  hash(context, node) & mask is looked up (a 5-6 bit group spans 2-4 aligned slots, as "cm").
  For a group of at most 4 bits, when slot s does not hold the check, slot s ^ 1 is tried;
  when neither holds it, the one whose entry-1 state has the smaller n0 + n1 (s on ties) is
  reset (check written, every other entry of the group's 2**g to state 0) and used. Groups of
  5-6 bits reset slot s on a mismatch, as "cm";
- bit histories: the states are the (n0, n1) pairs reachable from (0, 0) by: after bit y,
  n_y += 1 (at most ``STATE_CAP``) and the other count m becomes (m + 2) // 2 when m > 2;
  numbered in breadth-first order (0 before 1 from each state), ``_state_table``, 216 states.
  Each context has a state map: 256 uint32 cells (22-bit probability, 10-bit count), cell s
  starting at ((8 n1 + 1) << 22) // (8 (n0 + n1) + 2) with count 0, updated like order 0 (p
  += ((y << 22) - p) * rec[count] >> 16) with count limit ``LIMIT_STATE``;
- two match models: the first as "cm" (MATCH_MIN = 3, verified up to 32 back); the second
  with its own table of the same size keyed by the last MATCH_MIN2 = 16 tokens, verified up
  to 64 back and accepted when at least 16 agree. A length L is bucketed as L for L < 16,
  16 + (L - 16) // 4 below 76 and 31 above (first model), 16 + (L - 16) // 8 below 136 and
  31 above (second); each model's adaptive probability (22-bit, count limit ``LIMIT_MATCH``,
  start 2**21) is indexed by (bucket, expected bit);
- inputs (stretch of each probability's top 12 bits): order 0, the 11 state maps'
  probabilities, the first and the second match model (0 when it does not predict), and the
  bias 256: NI = 15;
- three mixers, int weights (16 fractional bits, start ``MIX_W0``): one selected by (bit
  index, confidence of the order-4 entry, match state) as "cm", one by (node, class of the
  previous token) as "cmt", one by (min(first match length, 15), confidence of the order-2
  entry, confidence of the order-6 entry, match state); an entry's confidence is 0, 1, 2, 3
  for n0 + n1 of its state 0, 1-2, 3-14, 15 and more. Each computes and learns as the "cm"
  mixers, but with the rate MIX_LR + (MIX_LR_BOOST * 4096) // (4096 + i) while coding token i
  (faster while little is known). Their clamped outputs d1, d2, d3 feed a final mixer selected by
  (min(bit index, 7), match state) with three weights (start ``FINAL_W0``): d =
  clamp((sum w_j d_j) >> 16) to [-2047, 2047], then w_j += (d_j * e) >> 14 with e = ((y << 12)
  - squash(d)) * FINAL_LR;
- two APMs (33 interpolated knots, 16-bit, rate ``APM_RATE``, initialised as "cm") on d:
  one on (order-1 context, node) exactly as "cm" (2**clamp(bit_length(n groups - 1), 10, 12)
  cells), one on ``_hash(order-2 context, node)`` (2**clamp(bit_length(n groups - 1), 10, 16)
  cells). p = (2 squash(d) + 3 a1 + 3 a2 + 4) >> 3, clamped to [1, 4095], drives the coder of
  "cm" (``_code_bit``), followed by the 16 check bits and the flush exactly as "cm".

Update order after each bit: the three mixers, the final mixer, the APMs (the nearer knot),
order 0, each hashed entry's state (the next state of the coded bit), the state maps, the match
models. After each token: the match models (both extended or dropped, then both looked up), the
check hash, and the word, class and line state as "cmt", then P.

Memory: O(n) up to a fixed cap: 11 hashed tables of at most 2**20 slots x 32 bytes (32 MiB
each, 352 MiB in all, reached for n >= 2**19 tokens of two groups), 16 MiB for each of the two
match tables and 4.3 MiB of APMs (order 0 has at most 256 cells): about 390 MiB at most,

"""

from __future__ import annotations

import numpy as np
from . import njit

from .cmcore import _clamp_bits, _code_bit, _finish, _hash, _match_step, _squash_table, _stretch_table

# Status codes (as ubpe._kernels.cmcore).
OK = 0
ERR_SYMBOL = -1
ERR_LENGTH = -2
ERR_CHECK = -3

# Model constants (part of the stored format; never change them).
N_HASHED = 4
N_CONTEXTS = 11
LIMIT_O0 = 255
LIMIT_MATCH = 255
LIMIT_STATE = 1023
STATE_CAP = 30
MATCH_MIN = 3
MATCH_MAX = 32
MATCH_MIN2 = 16
MATCH_MAX2 = 64
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


@njit(cache=True, nogil=True)
def _state_table():
    """Bit-history states (module docstring): ``(next, n0, n1)``, next[2 s + y] the state
    after bit y in state s; entries past the last state are 0."""
    idx = np.full((STATE_CAP + 1) * (STATE_CAP + 1), -1, dtype=np.int64)
    q0 = np.zeros(256, dtype=np.int64)
    q1 = np.zeros(256, dtype=np.int64)
    nxt = np.zeros(512, dtype=np.int64)
    idx[0] = 0
    cnt = 1
    head = 0
    while head < cnt:
        a = q0[head]
        b = q1[head]
        for y in range(2):
            if y:
                nb = b + 1 if b < STATE_CAP else b
                na = (a + 2) // 2 if a > 2 else a
            else:
                na = a + 1 if a < STATE_CAP else a
                nb = (b + 2) // 2 if b > 2 else b
            k = na * (STATE_CAP + 1) + nb
            if idx[k] < 0:
                idx[k] = cnt
                q0[cnt] = na
                q1[cnt] = nb
                cnt += 1  # subtle: 216 states for STATE_CAP 30, so cnt stays below 256
            nxt[head * 2 + y] = idx[k]
        head += 1
    return nxt, q0, q1


@njit(cache=True, nogil=True, inline="always")
def _conf(cn):
    return 0 if cn == 0 else (1 if cn < 3 else (2 if cn < 15 else 3))


@njit(cache=True, nogil=True)
def _apm_init(bits, sq):
    ap = np.empty((1 << bits) * 33, dtype=np.uint16)
    for j in range(1 << bits):
        for k in range(33):
            d = (k - 16) * 128
            d = -2047 if d < -2047 else (2047 if d > 2047 else d)
            ap[j * 33 + k] = np.uint16(sq[d + 2047] * 16)
    return ap


@njit(cache=True, nogil=True)
def _code(tokens, n, vocab_size, buf, decoding, cls):
    """Shared encoder/decoder loop of "cmt2" (module docstring): as ``cm._code`` with ``cls``
    one ``text_class`` per symbol. Preconditions: len(tokens) >= n, 1 <= V <= 256,
    len(cls) == V."""
    sq = _squash_table()
    st = _stretch_table(sq)
    nxt, sn0, sn1 = _state_table()
    rec = np.empty(1024, dtype=np.int64)
    for i in range(1024):
        rec[i] = 131072 // (2 * i + 3)
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
    distinct = starts
    for c in range(C):
        if distinct < (1 << 36):
            distinct *= vocab_size + 1
        need = n * ng if n * ng < 4 * distinct else 4 * distinct
        sb = _clamp_bits(need, MIN_SLOT_BITS, MAX_SLOT_BITS)
        smask[c] = (1 << sb) - 1
        toff[c + 1] = toff[c] + (1 << sb) * 16
    TH = np.zeros(toff[C], dtype=np.uint16)  # entry 0 of a slot: check (0: never used); others: state
    SM = np.empty(C * 256, dtype=np.uint32)
    for c in range(C):
        for s in range(256):
            p = ((sn1[s] * 8 + 1) << 22) // (8 * (sn0[s] + sn1[s]) + 2)
            SM[c * 256 + s] = np.uint32(p << 10)
    mb = _clamp_bits(n, MIN_MATCH_BITS, MAX_MATCH_BITS)
    mmask = (1 << mb) - 1
    MT = np.zeros(1 << mb, dtype=np.int32)
    MT2 = np.zeros(1 << mb, dtype=np.int32)
    MS = np.full(64, 1 << 31, dtype=np.uint32)
    MS2 = np.full(64, 1 << 31, dtype=np.uint32)
    NI = 1 + C + 3  # order 0, states, match, match 2, bias
    IM = 1 + C  # the first match input
    W = np.full(24 * 4 * 3 * NI, MIX_W0, dtype=np.int64)
    W2 = np.full((1 << nbits) * 4 * NI, MIX_W0, dtype=np.int64)
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
    smi = np.zeros(C, dtype=np.int64)
    xs = np.zeros(NI, dtype=np.int64)
    xs[NI - 1] = 256
    mptr = 0
    mlen = 0
    mptr2 = 0
    mlen2 = 0
    chk = 0
    wh = 0
    pwh = 0
    ppwh = 0
    pcls = 0
    cpat = 0
    lstart = 0
    plstart = 0
    top = 1 << nbits
    for i in range(n):
        h = 0
        for c in range(N_HASHED):
            t = np.int64(tokens[i - 1 - c]) if i - 1 - c >= 0 else vocab_size
            h = _hash(h + c * 0x3779B97F, t + 1)
            hctx[c] = h
        for c in range(N_HASHED, 8):
            t = np.int64(tokens[i - 1 - c]) if i - 1 - c >= 0 else vocab_size
            h = _hash(h + c * 0x3779B97F, t + 1)
            if c == 5:
                hctx[4] = _hash(h, 0x1234567)  # order 6
        hctx[5] = _hash(h, 0x789ABCD)  # order 8
        hctx[6] = _hash(wh + 0x55555, 0x2345678)  # the word so far
        hctx[7] = _hash(_hash(wh, pwh + 1), 0x3456789)  # and the word before
        hctx[8] = _hash(_hash(ppwh, _hash(pwh, wh + 1)), 0x6789ABC)  # and two
        col = i - lstart
        above = np.int64(tokens[plstart + col]) if plstart + col < lstart else vocab_size
        hctx[9] = _hash(_hash(col if col < 255 else 255, above + 1), 0x89ABCDE)  # column
        t1 = np.int64(tokens[i - 1]) if i >= 1 else vocab_size
        hctx[10] = _hash(_hash(cpat + 0x9999, t1 + 1), 0x5A6B7C8)  # class pattern
        pt = np.int64(tokens[mptr]) | top if mlen > 0 else -1
        mlb = mlen if mlen < 16 else (16 + (mlen - 16) // 4 if mlen < 76 else 31)
        ml4 = mlen if mlen < 16 else 15
        pt2 = np.int64(tokens[mptr2]) | top if mlen2 > 0 else -1
        mlb2 = mlen2 if mlen2 < 16 else (16 + (mlen2 - 16) // 8 if mlen2 < 136 else 31)
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
                        else:
                            e1 = np.int64(TH[b + 1])
                            e2 = np.int64(TH[b2 + 1])
                            if sn0[e2] + sn1[e2] < sn0[e1] + sn1[e1]:
                                b = b2
                    if reset:
                        TH[b] = np.uint16(ck)
                        for j in range(1, 1 << gs):
                            TH[b + j] = 0
                base[c] = b
            sub = 1
            for _b in range(gs):
                i0 = node
                if node > o0mask:
                    i0 = ((node * 0x9E3779B1) >> 11) & o0mask
                xs[0] = st[np.int64(T0[i0]) >> 20]
                for c in range(C):
                    sidx = c * 256 + np.int64(TH[base[c] + sub])
                    smi[c] = sidx
                    xs[1 + c] = st[np.int64(SM[sidx]) >> 20]
                e = np.int64(TH[base[N_HASHED - 1] + sub])
                conf = _conf(sn0[e] + sn1[e])
                e = np.int64(TH[base[1] + sub])
                c2 = _conf(sn0[e] + sn1[e])
                e = np.int64(TH[base[4] + sub])
                c6 = _conf(sn0[e] + sn1[e])
                shift = nbits - bitpos
                mi = -1
                mstate = 0
                xs[IM] = 0
                if pt >= 0 and (pt >> shift) == node:
                    eb = (pt >> (shift - 1)) & 1
                    mi = mlb * 2 + eb
                    xs[IM] = st[np.int64(MS[mi]) >> 20]
                    mstate = 1 + eb
                mi2 = -1
                xs[IM + 1] = 0
                if pt2 >= 0 and (pt2 >> shift) == node:
                    eb2 = (pt2 >> (shift - 1)) & 1
                    mi2 = mlb2 * 2 + eb2
                    xs[IM + 1] = st[np.int64(MS2[mi2]) >> 20]
                bp = bitpos if bitpos < 24 else 23
                ms1 = ((bp * 4 + conf) * 3 + mstate) * NI
                ms2 = (node * 4 + pcls) * NI
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
                    TH[jj] = np.uint16(nxt[np.int64(TH[jj]) * 2 + y])
                for c in range(C):
                    e = np.int64(SM[smi[c]])
                    pr = e >> 10
                    cn = e & 1023
                    pr += (((y << 22) - pr) * rec[cn]) >> 16
                    if cn < LIMIT_STATE:
                        cn += 1
                    SM[smi[c]] = np.uint32((pr << 10) | cn)
                if mi >= 0:
                    e = np.int64(MS[mi])
                    pr = e >> 10
                    cn = e & 1023
                    pr += (((y << 22) - pr) * rec[cn]) >> 16
                    if cn < LIMIT_MATCH:
                        cn += 1
                    MS[mi] = np.uint32((pr << 10) | cn)
                if mi2 >= 0:
                    e = np.int64(MS2[mi2])
                    pr = e >> 10
                    cn = e & 1023
                    pr += (((y << 22) - pr) * rec[cn]) >> 16
                    if cn < LIMIT_MATCH:
                        cn += 1
                    MS2[mi2] = np.uint32((pr << 10) | cn)
                sub = sub * 2 + y
                node = node * 2 + y
                bitpos += 1
        tok = node - top
        if decoding:
            if tok >= vocab_size:
                return ERR_SYMBOL
            tokens[i] = tok
        # match models: extend, or look up the last occurrence of the newest tokens
        mlen, mptr = _match_step(tokens, i, tok, pt, top, mlen, mptr, MT, mmask, MATCH_MIN, MATCH_MAX)
        mlen2, mptr2 = _match_step(tokens, i, tok, pt2, top, mlen2, mptr2, MT2, mmask, MATCH_MIN2, MATCH_MAX2)
        chk = _hash(chk, tok + 1)
        k = cls[tok]
        wc = k >> 3
        if wc > 0:
            wh = _hash(wh + 0x777, wc)
        elif wh != 0:
            ppwh = pwh
            pwh = wh
            wh = 0
        pcls = (k >> 1) & 3
        cpat = ((cpat << 2) | pcls) & 0xFFFF
        if k & 1:
            plstart = lstart
            lstart = i + 1
    return _finish(x1, x2, x, pos, buf, nb, n, chk, decoding)


@njit(cache=True, nogil=True)
def cmt2_encode(tokens, vocab_size, buf, cls):
    """Encode all of ``tokens`` (int32, each in [0, vocab_size)) into ``buf`` (uint8) with the
    text classes ``cls`` (int64, one ``text_class`` per symbol). Returns the payload length L
    (the payload is ``buf[:L]`` when L <= len(buf); otherwise it did not fit).
    Preconditions: 1 <= vocab_size <= 256, len(cls) == vocab_size."""
    return _code(tokens, tokens.shape[0], vocab_size, buf, False, cls)


@njit(cache=True, nogil=True)
def cmt2_decode(buf, vocab_size, out, cls):
    """Decode len(out) tokens from ``buf`` (uint8, any content; writable, never written) into
    ``out`` (int32). Returns OK, ERR_SYMBOL, ERR_CHECK or ERR_LENGTH as ``cm.cm_decode``.
    Preconditions as ``cmt2_encode``."""
    return _code(out, out.shape[0], vocab_size, buf, True, cls)
