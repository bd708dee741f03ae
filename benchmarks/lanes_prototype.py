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
+0.116 to +0.192 % on ecg, seismic, audio, neural), but this loop decodes slower with more lanes
(2 lanes 0.82-0.90x of "cms2", 4 lanes 0.64-0.75x). Why was not measured; a likely cause: one
decision is a few hundred instructions, about as many as the core's reorder window holds, so
the next lane's decision is issued too late to overlap (the lanes would have to be interleaved
statement by statement), and the per-lane state lives in arrays.
"""

from __future__ import annotations

import numpy as np

from ubpe._kernels import njit
from ubpe._kernels.alloc import empty, full, zeros
from ubpe._kernels.cmcore import _clamp_bits, _code_bit, _finish, _hash, _squash_table, _stretch_table
from ubpe._kernels.cmsignal2 import (
    APM_RATE, ERR_LENGTH, ERR_SYMBOL, LIMIT_O0, MAX_APM_BITS, MAX_O0_BITS, MAX_SLOT_BITS, MIN_APM_BITS,
    MIN_O0_BITS, MIN_SLOT_BITS, MIX_LR, MIX_LR_BOOST, MIX_W0, N_CONTEXTS, ORDERS, ROW, U, _adapt_table, _claim,
    _contexts, _dot, _moments, _rank, _train, header_bytes, parse_header, plan, MAX_HEADER, OK,
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
