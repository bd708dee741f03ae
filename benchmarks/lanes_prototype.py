"""A prototype, not a format: "cms2" with L lanes decoded in one loop (issue 28.2).

The token stream is cut into L contiguous lanes; each step codes one binary decision of every
unfinished lane in turn (lane 0, 1, ..., L - 1), with one arithmetic coder. The five hashed
context tables are shared by the lanes (the slow learners: a lane's second half of the signal
uses what its first half learnt); each lane has its own history (t1, t2, running means), order-0
table, two mixers and APM (the fast learners, which a mixture of two parts of a signal would
blur). Everything else is "cms2"'s model (``ubpe._kernels.cmsignal2``, whose parts it calls): the
same binarization, the same contexts, the same updates. With L = 1 it codes the same decisions
in the same order as "cms2" and writes the same bytes (``bench_lanes.py`` checks it).

Why: a "cms2" decision is a serial chain (bit -> node -> slots -> mixers -> APM -> coder), ~50-60
ns; L independent chains in one loop might overlap on one core. Measured
(benchmarks/results/level2-budget.md): sizes within budget (2 lanes -0.005 to +0.107 %, 4 lanes
+0.116 to +0.192 % on ecg, seismic, audio, neural), but every layout decodes slower than "cms2":
``lanes_code`` with 2 lanes 0.71-0.86x, with 4 lanes 0.48-0.73x, ``pair_code`` (below: both
lanes' steps side by side) 0.52-0.88x.
"""

from __future__ import annotations

import numpy as np

from ubpe._kernels import njit
from ubpe._kernels.alloc import empty, full, zeros
from ubpe._kernels.cmcore import _clamp_bits, _code_bit, _finish, _hash, _squash_table, _stretch_table
from ubpe._kernels.cmsignal2 import (
    APM_RATE, ERR_LENGTH, ERR_SYMBOL, LIMIT_O0, MAX_APM_BITS, MAX_O0_BITS, MAX_SLOT_BITS, MIN_APM_BITS,
    MIN_O0_BITS, MIN_SLOT_BITS, MIX_LR, MIX_LR_BOOST, MIX_W0, N_CONTEXTS, ORDERS, ROW, U, _adapt_table, _claim,
    _contexts, _dot, _moments, _rank, _train, header_bytes, parse_header, plan, MAX_HEADER,
)
from ubpe._kernels.intrinsics import clamp, imax, imin, select


@njit(cache=True, nogil=True)
def lanes_code(tokens, n, vocab_size, buf, decoding, mode, center, cnt, nxt, L):
    """Encode (returns the byte length) or decode (returns a status) ``tokens[:n]`` in ``L``
    lanes (module docstring). Preconditions as ``cmsignal2._code``, 1 <= L <= 8."""
    sq = _squash_table()
    st = _stretch_table(sq)
    rec = empty(1024, np.int64)
    for i in range(1024):
        rec[i] = 131072 // (2 * i + 3)
    maxlen = cnt.shape[0] - 1
    fc = zeros(maxlen + 2, np.int64)
    lim = zeros(maxlen + 2, np.int64)
    bs = zeros(maxlen + 2, np.int64)
    for ll in range(maxlen + 1):
        lim[ll] = fc[ll] + cnt[ll]
        fc[ll + 1] = lim[ll] * 2
        bs[ll + 1] = bs[ll] + cnt[ll]
    C = N_CONTEXTS
    G = imax((maxlen + 3) // 4, 1)
    o0bits = _clamp_bits(2 * n * imax(maxlen, 1), MIN_O0_BITS, MAX_O0_BITS)
    o0mask = (1 << o0bits) - 1
    T0 = full((1 << o0bits) * L, (1 << 31), np.uint32)
    smask = zeros(C, np.int64)
    toff = zeros(C + 1, np.int64)
    for c in range(C):
        distinct = 16
        for k in range(ORDERS[c]):
            if distinct < (1 << 36):
                distinct *= vocab_size + 1
        need = imin(n * G, 4 * distinct)
        sb = _clamp_bits(need, MIN_SLOT_BITS, MAX_SLOT_BITS)
        smask[c] = (1 << sb) - 1
        toff[c + 1] = toff[c] + (1 << sb) * 16
    TH = zeros(toff[C] + 32, np.uint16)
    ta = ((-TH.ctypes.data) & 63) >> 1
    TH = TH[ta:ta + toff[C]]
    NSET2 = 1 << imin(o0bits, 12)
    WB = empty(((16 * 4 + NSET2) * L + 1) * ROW, np.int64)
    for j in range(WB.shape[0]):
        WB[j] = MIX_W0
    wa = ((-WB.ctypes.data) & 63) >> 3
    W = WB[wa:wa + 16 * 4 * ROW * L]
    W2 = WB[wa + 16 * 4 * ROW * L:wa + (16 * 4 + NSET2) * ROW * L]
    ab = _clamp_bits(n * G, MIN_APM_BITS, MAX_APM_BITS)
    amask = (1 << ab) - 1
    AP = empty((1 << ab) * 33 * L, np.uint16)
    pat = empty(4 * 33, np.uint16)
    for k in range(33):
        d = (k - 16) * 128
        d = clamp(d, -2047, 2047)
        v = np.uint16(sq[d + 2047] * 16)
        for r in range(4):
            pat[r * 33 + k] = v
    for j in range((1 << (ab - 2)) * L):
        for k in range(4 * 33):
            AP[U(j * 132 + k)] = pat[k]

    cl = 0
    ch = 0xFFFFFFFF
    x = 0
    pos = 0
    nb = buf.shape[0]
    if decoding:
        for k in range(4):
            x = (x << 8) | (np.int64(buf[pos]) if pos < nb else 0)
            pos += 1
        pos = 0
    o0, o1, o2, o3, o4 = toff[0], toff[1], toff[2], toff[3], toff[4]
    m0, m1, m2, m3, m4 = smask[0], smask[1], smask[2], smask[3], smask[4]
    vm1 = vocab_size - 1
    chk = 0
    # per-lane state: token index and its end, the decision's depth, code value, slot entry
    # (sub), slot bases, context hashes, prediction, running means, encoder's code
    cur = zeros(L, np.int64)
    end = zeros(L, np.int64)
    start = zeros(L, np.int64)
    DEP = zeros(L, np.int64)
    CV = zeros(L, np.int64)
    SUB = zeros(L, np.int64)
    B = zeros((L, 5), np.int64)
    Q = zeros((L, 5), np.int64)
    PP = zeros(L, np.int64)
    MM = zeros(L, np.int64)
    MU = zeros(L, np.int64)
    EN = zeros(L, np.int64)
    CODE = zeros(L, np.int64)
    LN = zeros(L, np.int64)
    live = 0
    for l in range(L):
        cur[l] = n * l // L
        start[l] = cur[l]
        end[l] = n * (l + 1) // L
        if cur[l] < end[l]:
            live += 1
    # the first token of every lane: its contexts and prediction
    for l in range(L):
        if cur[l] >= end[l]:
            continue
        i = cur[l]
        q0, q1, q2, q3, q4, lp = _contexts(vocab_size, vocab_size, 0, 0, vocab_size)
        Q[l, 0] = q0
        Q[l, 1] = q1
        Q[l, 2] = q2
        Q[l, 3] = q3
        Q[l, 4] = q4
        PP[l] = center
        MM[l] = imin(center, vm1 - center)
        if not decoding:
            u = _rank(np.int64(tokens[i]), center, MM[l])
            ln = 0
            while u >= bs[ln + 1]:
                ln += 1
            LN[l] = ln
            CODE[l] = fc[ln] + u - bs[ln]
    while live > 0:
        for l in range(L):
            i = cur[l]
            if i >= end[l]:
                continue
            depth = DEP[l]
            cv = CV[l]
            sub = SUB[l]
            node = (1 << depth) | cv
            if (depth & 3) == 0:
                g0 = _hash(Q[l, 0], node)
                g1 = _hash(Q[l, 1], node)
                g2 = _hash(Q[l, 2], node)
                g3 = _hash(Q[l, 3], node)
                g4 = _hash(Q[l, 4], node)
                b0 = o0 + (g0 & m0) * 16
                b1 = o1 + (g1 & m1) * 16
                b2 = o2 + (g2 & m2) * 16
                b3 = o3 + (g3 & m3) * 16
                b4 = o4 + (g4 & m4) * 16
                k0 = np.int64(TH[U(b0)])
                k1 = np.int64(TH[U(b1)])
                k2 = np.int64(TH[U(b2)])
                k3 = np.int64(TH[U(b3)])
                k4 = np.int64(TH[U(b4)])
                b0 = _claim(TH, b0, g0, k0)
                b1 = _claim(TH, b1, g1, k1)
                b2 = _claim(TH, b2, g2, k2)
                b3 = _claim(TH, b3, g3, k3)
                b4 = _claim(TH, b4, g4, k4)
                B[l, 0] = b0
                B[l, 1] = b1
                B[l, 2] = b2
                B[l, 3] = b3
                B[l, 4] = b4
                sub = 1
            else:
                b0 = B[l, 0]
                b1 = B[l, 1]
                b2 = B[l, 2]
                b3 = B[l, 3]
                b4 = B[l, 4]
            h1 = Q[l, 0]
            i0 = select(node <= o0mask, node, ((node * 0x9E3779B1) >> 11) & o0mask) + l * (o0mask + 1)
            z = np.int64(T0[U(i0)])
            e0 = np.int64(TH[U(b0 + sub)])
            e1 = np.int64(TH[U(b1 + sub)])
            e2 = np.int64(TH[U(b2 + sub)])
            e3 = np.int64(TH[U(b3 + sub)])
            e4 = np.int64(TH[U(b4 + sub)])
            x0 = st[U(z >> 20)]
            x1 = st[U(e0 >> 4)]
            x2 = st[U(e1 >> 4)]
            x3 = st[U(e2 >> 4)]
            x4 = st[U(e3 >> 4)]
            x5 = st[U(e4 >> 4)]
            cn = e1 & 15
            conf = np.int64(cn > 0) + np.int64(cn >= 3) + np.int64(cn >= 15)
            ms1 = (imin(depth, 15) * 4 + conf + l * 64) * ROW
            ms2 = ((node & (NSET2 - 1)) + l * NSET2) * ROW
            dot1 = _dot(W, ms1, x0, x1, x2, x3, x4, x5) >> 16
            dot1 = clamp(dot1, -2047, 2047)
            dot2 = _dot(W2, ms2, x0, x1, x2, x3, x4, x5) >> 16
            dot2 = clamp(dot2, -2047, 2047)
            dot = (dot1 + dot2) >> 1
            pm = sq[U(dot + 2047)]
            dd = dot + 2048
            lo = dd >> 7
            wt = dd & 127
            ai = (((h1 * 0x9E3 + node * 0x3B9) & amask) + l * (amask + 1)) * 33
            pa = (np.int64(AP[U(ai + lo)]) * (128 - wt) + np.int64(AP[U(ai + lo + 1)]) * wt) >> 11
            p = (pm + 3 * pa + 2) >> 2
            p = clamp(p, 1, 4095)
            y = 0
            if not decoding:
                y = (CODE[l] >> (LN[l] - 1 - depth)) & 1
            cl, ch, x, pos, y = _code_bit(cl, ch, x, pos, buf, nb, p, y, decoding)
            lr = MIX_LR + (MIX_LR_BOOST * 4096) // (4096 + i - start[l])
            _train(W, ms1, ((y << 12) - sq[U(dot1 + 2047)]) * lr, x0, x1, x2, x3, x4, x5)
            _train(W2, ms2, ((y << 12) - sq[U(dot2 + 2047)]) * lr, x0, x1, x2, x3, x4, x5)
            near = ai + lo + (wt >> 6)
            aj = np.int64(AP[U(near)])
            AP[U(near)] = np.uint16(aj + (((y << 16) - aj) >> APM_RATE))
            pr = z >> 10
            cn = z & 1023
            pr += (((y << 22) - pr) * rec[U(cn)]) >> 16
            if cn < LIMIT_O0:
                cn += 1
            T0[U(i0)] = np.uint32((pr << 10) | cn)
            TH[U(b0 + sub)] = nxt[U((y << 16) | e0)]
            TH[U(b1 + sub)] = nxt[U((y << 16) | e1)]
            TH[U(b2 + sub)] = nxt[U((y << 16) | e2)]
            TH[U(b3 + sub)] = nxt[U((y << 16) | e3)]
            TH[U(b4 + sub)] = nxt[U((y << 16) | e4)]
            sub = sub * 2 + y
            cv = cv * 2 + y
            depth += 1
            if depth > maxlen:
                return ERR_SYMBOL
            if cv >= lim[depth]:  # an inner node: the token goes on
                DEP[l] = depth
                CV[l] = cv
                SUB[l] = sub
                continue
            # the token is complete
            P = PP[l]
            t1 = np.int64(tokens[i - 1]) if i > start[l] else vocab_size
            if decoding:
                m = MM[l]
                u = bs[depth] + cv - fc[depth]
                if u <= 2 * m:
                    tok = select(u & 1, P + ((u + 1) >> 1), P - (u >> 1))
                else:
                    tok = select(P < vm1 - P, P + (u - m), P - (u - m))
                if tok < 0 or tok >= vocab_size:
                    return ERR_SYMBOL
                tokens[i] = tok
            else:
                tok = np.int64(tokens[i])
            chk = _hash(chk, tok + 1)
            mu, en = _moments(MU[l], EN[l], tok, t1, i - start[l])
            MU[l] = mu
            EN[l] = en
            DEP[l] = 0
            CV[l] = 0
            SUB[l] = 1
            i += 1
            cur[l] = i
            if i >= end[l]:
                live -= 1
                continue
            q0, q1, q2, q3, q4, lp = _contexts(tok, t1, mu, en, vocab_size)
            Q[l, 0] = q0
            Q[l, 1] = q1
            Q[l, 2] = q2
            Q[l, 3] = q3
            Q[l, 4] = q4
            li = i - start[l]
            if mode == 0:
                P = center
            elif mode == 1 or li == 1:
                P = tok
            else:
                P = clamp(lp, 0, vm1)
            PP[l] = P
            m = imin(P, vm1 - P)
            MM[l] = m
            if not decoding:
                u = _rank(np.int64(tokens[i]), P, m)
                ln = 0
                while u >= bs[ln + 1]:
                    ln += 1
                LN[l] = ln
                CODE[l] = fc[ln] + u - bs[ln]
    return _finish(cl, ch, x, pos, buf, nb, n, chk, decoding)


def encode(tokens, vocab_size, buf, L):
    """The payload (cms2's header, then the lanes' coder bytes) of ``tokens`` in ``buf``: its length."""
    n = tokens.shape[0]
    mode, center, cnt = plan(tokens, vocab_size)
    head = np.frombuffer(header_bytes(mode, center, cnt), dtype=np.uint8)
    buf[:head.size] = head
    return head.size + int(lanes_code(tokens, n, vocab_size, buf[head.size:], False, mode, center, cnt,
                                      _adapt_table(), L))


def decode(buf, vocab_size, out, L):
    """Decode ``len(out)`` tokens: a status as ``cmsignal2.cms2_decode``."""
    head = parse_header(buf[:MAX_HEADER].tobytes(), vocab_size)
    if head is None:
        return ERR_LENGTH
    mode, center, cnt, hl = head
    return lanes_code(out, out.shape[0], vocab_size, buf[hl:], True, mode, center, cnt, _adapt_table(), L)


# ------------------------------------------------------------------ two lanes side by side
# The same model as lanes_code with L = 2, but each step first claims both lanes' slots, then
# computes both lanes' probabilities, then codes lane 0's bit and lane 1's, then updates both:
# the two lanes' loads and products are adjacent in the instruction stream, so that they can
# overlap (lanes_code issues one lane's whole decision before the other's). Reads of the shared
# tables happen before either lane's updates in a step: other bytes than lanes_code's, the
# same for encoder and decoder (one kernel).


@njit(cache=True, nogil=True)
def _slots(TH, q0, q1, q2, q3, q4, node, o0, o1, o2, o3, o4, m0, m1, m2, m3, m4):
    g0 = _hash(q0, node)
    g1 = _hash(q1, node)
    g2 = _hash(q2, node)
    g3 = _hash(q3, node)
    g4 = _hash(q4, node)
    b0 = o0 + (g0 & m0) * 16
    b1 = o1 + (g1 & m1) * 16
    b2 = o2 + (g2 & m2) * 16
    b3 = o3 + (g3 & m3) * 16
    b4 = o4 + (g4 & m4) * 16
    k0 = np.int64(TH[U(b0)])
    k1 = np.int64(TH[U(b1)])
    k2 = np.int64(TH[U(b2)])
    k3 = np.int64(TH[U(b3)])
    k4 = np.int64(TH[U(b4)])
    b0 = _claim(TH, b0, g0, k0)
    b1 = _claim(TH, b1, g1, k1)
    b2 = _claim(TH, b2, g2, k2)
    b3 = _claim(TH, b3, g3, k3)
    b4 = _claim(TH, b4, g4, k4)
    return b0, b1, b2, b3, b4


@njit(cache=True, nogil=True)
def _predict(l, node, depth, sub, b0, b1, b2, b3, b4, h1, T0, TH, W, W2, AP, st, sq, o0mask, NSET2, amask):
    i0 = select(node <= o0mask, node, ((node * 0x9E3779B1) >> 11) & o0mask) + l * (o0mask + 1)
    z = np.int64(T0[U(i0)])
    e0 = np.int64(TH[U(b0 + sub)])
    e1 = np.int64(TH[U(b1 + sub)])
    e2 = np.int64(TH[U(b2 + sub)])
    e3 = np.int64(TH[U(b3 + sub)])
    e4 = np.int64(TH[U(b4 + sub)])
    x0 = st[U(z >> 20)]
    x1 = st[U(e0 >> 4)]
    x2 = st[U(e1 >> 4)]
    x3 = st[U(e2 >> 4)]
    x4 = st[U(e3 >> 4)]
    x5 = st[U(e4 >> 4)]
    cn = e1 & 15
    conf = np.int64(cn > 0) + np.int64(cn >= 3) + np.int64(cn >= 15)
    ms1 = (imin(depth, 15) * 4 + conf + l * 64) * ROW
    ms2 = ((node & (NSET2 - 1)) + l * NSET2) * ROW
    dot1 = _dot(W, ms1, x0, x1, x2, x3, x4, x5) >> 16
    dot1 = clamp(dot1, -2047, 2047)
    dot2 = _dot(W2, ms2, x0, x1, x2, x3, x4, x5) >> 16
    dot2 = clamp(dot2, -2047, 2047)
    dot = (dot1 + dot2) >> 1
    pm = sq[U(dot + 2047)]
    dd = dot + 2048
    lo = dd >> 7
    wt = dd & 127
    ai = (((h1 * 0x9E3 + node * 0x3B9) & amask) + l * (amask + 1)) * 33
    pa = (np.int64(AP[U(ai + lo)]) * (128 - wt) + np.int64(AP[U(ai + lo + 1)]) * wt) >> 11
    p = clamp((pm + 3 * pa + 2) >> 2, 1, 4095)
    return p, i0, z, e0, e1, e2, e3, e4, x0, x1, x2, x3, x4, x5, ms1, ms2, dot1, dot2, ai + lo + (wt >> 6)


@njit(cache=True, nogil=True)
def _update(y, lr, i0, z, e0, e1, e2, e3, e4, x0, x1, x2, x3, x4, x5, ms1, ms2, dot1, dot2, near, sub,
            b0, b1, b2, b3, b4, T0, TH, W, W2, AP, sq, rec, nxt):
    _train(W, ms1, ((y << 12) - sq[U(dot1 + 2047)]) * lr, x0, x1, x2, x3, x4, x5)
    _train(W2, ms2, ((y << 12) - sq[U(dot2 + 2047)]) * lr, x0, x1, x2, x3, x4, x5)
    aj = np.int64(AP[U(near)])
    AP[U(near)] = np.uint16(aj + (((y << 16) - aj) >> APM_RATE))
    pr = z >> 10
    cn = z & 1023
    pr += (((y << 22) - pr) * rec[U(cn)]) >> 16
    if cn < LIMIT_O0:
        cn += 1
    T0[U(i0)] = np.uint32((pr << 10) | cn)
    TH[U(b0 + sub)] = nxt[U((y << 16) | e0)]
    TH[U(b1 + sub)] = nxt[U((y << 16) | e1)]
    TH[U(b2 + sub)] = nxt[U((y << 16) | e2)]
    TH[U(b3 + sub)] = nxt[U((y << 16) | e3)]
    TH[U(b4 + sub)] = nxt[U((y << 16) | e4)]


@njit(cache=True, nogil=True)
def _start(tokens, i, first, tok, t1, mu, en, vocab_size, mode, center, bs, fc, decoding):
    """Contexts, prediction and (encoding) code of token i of a lane whose first is ``first``
    (``tok``, ``t1``: the two tokens before it in the lane, V where none)."""
    q0, q1, q2, q3, q4, lp = _contexts(tok, t1, mu, en, vocab_size)
    vm1 = vocab_size - 1
    li = i - first
    if mode == 0 or li == 0:
        P = center
    elif mode == 1 or li == 1:
        P = tok
    else:
        P = clamp(lp, 0, vm1)
    m = imin(P, vm1 - P)
    ln = 0
    code = 0
    if not decoding:
        u = _rank(np.int64(tokens[i]), P, m)
        while u >= bs[ln + 1]:
            ln += 1
        code = fc[ln] + u - bs[ln]
    return q0, q1, q2, q3, q4, P, m, ln, code


@njit(cache=True, nogil=True)
def pair_code(tokens, n, vocab_size, buf, decoding, mode, center, cnt, nxt):
    """``lanes_code`` with L = 2, the lanes side by side (comment above). n >= 2."""
    L = 2
    sq = _squash_table()
    st = _stretch_table(sq)
    rec = empty(1024, np.int64)
    for i in range(1024):
        rec[i] = 131072 // (2 * i + 3)
    maxlen = cnt.shape[0] - 1
    fc = zeros(maxlen + 2, np.int64)
    lim = zeros(maxlen + 2, np.int64)
    bs = zeros(maxlen + 2, np.int64)
    for ll in range(maxlen + 1):
        lim[ll] = fc[ll] + cnt[ll]
        fc[ll + 1] = lim[ll] * 2
        bs[ll + 1] = bs[ll] + cnt[ll]
    C = N_CONTEXTS
    G = imax((maxlen + 3) // 4, 1)
    o0bits = _clamp_bits(2 * n * imax(maxlen, 1), MIN_O0_BITS, MAX_O0_BITS)
    o0mask = (1 << o0bits) - 1
    T0 = full((1 << o0bits) * L, (1 << 31), np.uint32)
    smask = zeros(C, np.int64)
    toff = zeros(C + 1, np.int64)
    for c in range(C):
        distinct = 16
        for k in range(ORDERS[c]):
            if distinct < (1 << 36):
                distinct *= vocab_size + 1
        need = imin(n * G, 4 * distinct)
        sb = _clamp_bits(need, MIN_SLOT_BITS, MAX_SLOT_BITS)
        smask[c] = (1 << sb) - 1
        toff[c + 1] = toff[c] + (1 << sb) * 16
    TH = zeros(toff[C] + 32, np.uint16)
    ta = ((-TH.ctypes.data) & 63) >> 1
    TH = TH[ta:ta + toff[C]]
    NSET2 = 1 << imin(o0bits, 12)
    WB = empty(((16 * 4 + NSET2) * L + 1) * ROW, np.int64)
    for j in range(WB.shape[0]):
        WB[j] = MIX_W0
    wa = ((-WB.ctypes.data) & 63) >> 3
    W = WB[wa:wa + 16 * 4 * ROW * L]
    W2 = WB[wa + 16 * 4 * ROW * L:wa + (16 * 4 + NSET2) * ROW * L]
    ab = _clamp_bits(n * G, MIN_APM_BITS, MAX_APM_BITS)
    amask = (1 << ab) - 1
    AP = empty((1 << ab) * 33 * L, np.uint16)
    pat = empty(4 * 33, np.uint16)
    for k in range(33):
        d = (k - 16) * 128
        d = clamp(d, -2047, 2047)
        v = np.uint16(sq[d + 2047] * 16)
        for r in range(4):
            pat[r * 33 + k] = v
    for j in range((1 << (ab - 2)) * L):
        for k in range(4 * 33):
            AP[U(j * 132 + k)] = pat[k]
    cl = 0
    ch = 0xFFFFFFFF
    x = 0
    pos = 0
    nb = buf.shape[0]
    if decoding:
        for k in range(4):
            x = (x << 8) | (np.int64(buf[pos]) if pos < nb else 0)
            pos += 1
        pos = 0
    o0, o1, o2, o3, o4 = toff[0], toff[1], toff[2], toff[3], toff[4]
    m0, m1, m2, m3, m4 = smask[0], smask[1], smask[2], smask[3], smask[4]
    vm1 = vocab_size - 1
    chk = 0
    V = vocab_size
    # lane A: tokens [0, h), lane B: [h, n)
    h = n // 2
    iA, endA, iB, endB = 0, h, h, n
    muA = enA = muB = enB = 0
    qA0, qA1, qA2, qA3, qA4, PA, mA, lnA, codeA = _start(tokens, 0, 0, V, V, 0, 0, V, mode, center, bs, fc, decoding)
    qB0, qB1, qB2, qB3, qB4, PB, mB, lnB, codeB = _start(tokens, h, h, V, V, 0, 0, V, mode, center, bs, fc, decoding)
    dA = cA = dB = cB = 0
    sA = sB = 1
    bA0 = bA1 = bA2 = bA3 = bA4 = bB0 = bB1 = bB2 = bB3 = bB4 = 0
    aliveA = iA < endA
    aliveB = iB < endB
    while aliveA or aliveB:
        nodeA = (1 << dA) | cA
        nodeB = (1 << dB) | cB
        if aliveA and (dA & 3) == 0:
            bA0, bA1, bA2, bA3, bA4 = _slots(TH, qA0, qA1, qA2, qA3, qA4, nodeA, o0, o1, o2, o3, o4, m0, m1, m2, m3, m4)
            sA = 1
        if aliveB and (dB & 3) == 0:
            bB0, bB1, bB2, bB3, bB4 = _slots(TH, qB0, qB1, qB2, qB3, qB4, nodeB, o0, o1, o2, o3, o4, m0, m1, m2, m3, m4)
            sB = 1
        (pA, iA0, zA, eA0, eA1, eA2, eA3, eA4, xA0, xA1, xA2, xA3, xA4, xA5, msA1, msA2, dtA1, dtA2,
         nearA) = _predict(0, nodeA, dA, sA, bA0, bA1, bA2, bA3, bA4, qA0, T0, TH, W, W2, AP, st, sq, o0mask, NSET2,
                           amask)
        (pB, iB0, zB, eB0, eB1, eB2, eB3, eB4, xB0, xB1, xB2, xB3, xB4, xB5, msB1, msB2, dtB1, dtB2,
         nearB) = _predict(1, nodeB, dB, sB, bB0, bB1, bB2, bB3, bB4, qB0, T0, TH, W, W2, AP, st, sq, o0mask, NSET2,
                           amask)
        yA = 0
        yB = 0
        if aliveA:
            if not decoding:
                yA = (codeA >> (lnA - 1 - dA)) & 1
            cl, ch, x, pos, yA = _code_bit(cl, ch, x, pos, buf, nb, pA, yA, decoding)
            lr = MIX_LR + (MIX_LR_BOOST * 4096) // (4096 + iA)
            _update(yA, lr, iA0, zA, eA0, eA1, eA2, eA3, eA4, xA0, xA1, xA2, xA3, xA4, xA5, msA1, msA2, dtA1, dtA2,
                    nearA, sA, bA0, bA1, bA2, bA3, bA4, T0, TH, W, W2, AP, sq, rec, nxt)
        if aliveB:
            if not decoding:
                yB = (codeB >> (lnB - 1 - dB)) & 1
            cl, ch, x, pos, yB = _code_bit(cl, ch, x, pos, buf, nb, pB, yB, decoding)
            lr = MIX_LR + (MIX_LR_BOOST * 4096) // (4096 + iB - h)
            _update(yB, lr, iB0, zB, eB0, eB1, eB2, eB3, eB4, xB0, xB1, xB2, xB3, xB4, xB5, msB1, msB2, dtB1, dtB2,
                    nearB, sB, bB0, bB1, bB2, bB3, bB4, T0, TH, W, W2, AP, sq, rec, nxt)
        if aliveA:
            sA = sA * 2 + yA
            cA = cA * 2 + yA
            dA += 1
            if dA > maxlen:
                return ERR_SYMBOL
            if cA < lim[dA]:  # lane A's token is complete
                t1 = np.int64(tokens[iA - 1]) if iA > 0 else V
                if decoding:
                    u = bs[dA] + cA - fc[dA]
                    if u <= 2 * mA:
                        tok = select(u & 1, PA + ((u + 1) >> 1), PA - (u >> 1))
                    else:
                        tok = select(PA < vm1 - PA, PA + (u - mA), PA - (u - mA))
                    if tok < 0 or tok >= V:
                        return ERR_SYMBOL
                    tokens[iA] = tok
                else:
                    tok = np.int64(tokens[iA])
                chk = _hash(chk, tok + 1)
                muA, enA = _moments(muA, enA, tok, t1, iA)
                iA += 1
                dA = 0
                cA = 0
                sA = 1
                aliveA = iA < endA
                if aliveA:
                    qA0, qA1, qA2, qA3, qA4, PA, mA, lnA, codeA = _start(tokens, iA, 0, tok, t1, muA, enA, V, mode,
                                                                         center, bs, fc, decoding)
        if aliveB:
            sB = sB * 2 + yB
            cB = cB * 2 + yB
            dB += 1
            if dB > maxlen:
                return ERR_SYMBOL
            if cB < lim[dB]:
                t1 = np.int64(tokens[iB - 1]) if iB > h else V
                if decoding:
                    u = bs[dB] + cB - fc[dB]
                    if u <= 2 * mB:
                        tok = select(u & 1, PB + ((u + 1) >> 1), PB - (u >> 1))
                    else:
                        tok = select(PB < vm1 - PB, PB + (u - mB), PB - (u - mB))
                    if tok < 0 or tok >= V:
                        return ERR_SYMBOL
                    tokens[iB] = tok
                else:
                    tok = np.int64(tokens[iB])
                chk = _hash(chk, tok + 1)
                muB, enB = _moments(muB, enB, tok, t1, iB - h)
                iB += 1
                dB = 0
                cB = 0
                sB = 1
                aliveB = iB < endB
                if aliveB:
                    qB0, qB1, qB2, qB3, qB4, PB, mB, lnB, codeB = _start(tokens, iB, h, tok, t1, muB, enB, V, mode,
                                                                         center, bs, fc, decoding)
    return _finish(cl, ch, x, pos, buf, nb, n, chk, decoding)


def pair_encode(tokens, vocab_size, buf):
    n = tokens.shape[0]
    mode, center, cnt = plan(tokens, vocab_size)
    head = np.frombuffer(header_bytes(mode, center, cnt), dtype=np.uint8)
    buf[:head.size] = head
    return head.size + int(pair_code(tokens, n, vocab_size, buf[head.size:], False, mode, center, cnt, _adapt_table()))


def pair_decode(buf, vocab_size, out):
    head = parse_header(buf[:MAX_HEADER].tobytes(), vocab_size)
    if head is None:
        return ERR_LENGTH
    mode, center, cnt, hl = head
    return pair_code(out, out.shape[0], vocab_size, buf[hl:], True, mode, center, cnt, _adapt_table())
