"""Numba kernel of the level-3 signal coder's version 6 (``ubpe.level3``, issue 29): ``mixsignal.run``
with the exact-value contexts (``xctx`` = 1), in a module of its own so that version 5's kernel
(``mixsignal.run``, which payloads with ``xctx`` = 0 keep) compiles and runs exactly as before.
This text, ``mixsignal``'s docstring and the code are normative for a version-6 payload with
``xctx`` = 1: everything of ``mixsignal`` (prediction, the residual coder, the value model, the
check bits), and every decision's probability then refined as follows.

Exact-value contexts: every decision's probability (the coder's, or the value model's mix) po
is mixed again (``_xcode``) with (a) XC_N adaptive probabilities (Q16, counts to XC_LIMIT) at
hashes of the decision's key (sign; side, step and bit length; side, bit length and the
magnitude's bits so far) with a base per value: the channel and xp minus the last symbol, and the
last symbol, the last two, or the last two steps; 2**xb entries, xb = min(XC_BITS, max(12,
bit_length(n C) + 6)); (b) XL_N successor lists (2**lb lists, lb = min(XL_BITS, max(8,
bit_length(n C) + 2)), of XL_K symbols and counts each, keyed by a 32-bit hash of the channel and
the last symbol, the last two, the last two steps (symbols relative to the last), the last step
(likewise), the last symbol and the neighbour's (channel c - 1's symbol of this frame; for channel
0 the last channel's of the frame before, or with one channel the symbol before the last); a
list whose key differs reads empty, and is cleared when the value is counted): the
counts of the symbols the decision still allows, and of those it answers 1 with, as the index of
an adaptive probability (``_xlist``: the count's bucket, the share in 32nds, the kind of
decision); a value is counted +2 (a new one: 1, in the slot of the least count, the first such),
every count of a list halved when one passes XL_CAP. Two mixers (Q16 weight rows by the decision
row and the count bucket of list 0, or of list 2; po's weight starting at 1, the lists' at XC_W0 /
2**16, the hashed contexts' at 0; learning rate lr / 2**XC_SH), averaged in the stretch domain,
then two APMs (rate 2**-XA_RATE, rows by the index of list 0's input, or of list 1's, or
without one the decision row): p = (2 mix + 3 apm0 + 3 apm1) / 8. Every operation is
integer; the state starts empty in every payload (at most
26 MiB).
"""

from __future__ import annotations

import numpy as np

from . import njit
from .mixsignal import (
    _INV16,
    ERR_CHECK,
    ERR_LENGTH,
    ERR_RANGE,
    HIST_PAD,
    INPUT_SLOTS,
    MAX_DIM,
    MIXB_FAV,
    MIXB_K,
    MIXB_RATE,
    N_KA,
    N_KE,
    N_LV,
    N_SID,
    OK,
    PRM_APMR,
    PRM_BIAS,
    PRM_CROSS,
    PRM_FMIX,
    PRM_IRLS,
    PRM_K1,
    PRM_K2,
    PRM_K3,
    PRM_LIMIT,
    PRM_LR,
    PRM_LVL,
    PRM_MIXB,
    PRM_MIXMU,
    PRM_MU1,
    PRM_N1,
    PRM_NLMSQ,
    PRM_P1,
    PRM_P2,
    PRM_P3,
    PRM_POWR,
    PRM_REG,
    PRM_T1,
    PRM_T2,
    PRM_T3,
    PRM_T4,
    PRM_VMOD,
    PRM_XCTX,
    U3,
    VM_E,
    VM_HALVE,
    VM_MAX_RANGE,
    VM_NB,
    VM_PRIOR,
    VM_ROWS,
    _bitlen,
    _bmax,
    _bmin,
    _clamp,
    _code,
    _copy_rows,
    _cost16,
    _counter_p,
    _counter_update,
    _dot32,
    _final_code,
    _flog,
    _irls,
    _mmass,
    _nearest,
    _nlms_step,
    _nlms_step_q20,
    _ols_add,
    _ols_rescale,
    _ols_solve,
    _period,
    _relb,
    _sbk,
    _sgnb,
    _tables,
    _value,
    _vmass,
    _vprob,
)

XC_BITS = 22  #: the exact-value contexts' table: 2**XC_BITS adaptive probabilities
XC_N = 3  #: exact-value contexts a decision
XL_N = 5  #: successor lists a value (orders 1 and 2 of the values and of the steps, the neighbour's)
XL_K = 16  #: values a successor list holds
XL_BITS = 16  #: 2**XL_BITS successor lists
XL_CAP = 60  #: a list's counts are halved when one passes this
XL_NB = 8  #: count buckets of a list's mass in a decision's set
XL_SIZE = XL_N * XL_NB * 33 * 3  #: the list model's adaptive probabilities (after the contexts')
XA_RATE = 6  #: the final APM's rate 2**-XA_RATE
XA_ROWS = 2 * (XL_SIZE + 33)  #: the final APMs' rows (list 0's, then list 1's)
XNI = XC_N + XL_N  #: the final stage's inputs besides the coder's
XC_CONF = 8  #: the final stage's weight rows per decision row: the order-1 list's count bucket
XC_W = XNI + 2  #: the final stage's weights a row: the coder's stretch, the inputs', a bias
XC_W0 = 16384  #: the list inputs' first weight (Q16)
XC_SH = 10  #: the final stage's learning rate: its error * lr >> XC_SH
XC_LIMIT = 255  #: the exact-value contexts' count limit (their rate, rt[count])
XC_MUL = 0x2F0B3A49  #: the hash's multiplier (odd, below 2**31: products of 32-bit words below 2**63)


@njit(cache=True, nogil=True, inline="always")
def _xmix(h, v):
    """A 32-bit hash of a 32-bit hash h and an integer v (its low 32 bits)."""
    h = ((h ^ (v & 0xFFFFFFFF)) * XC_MUL) & 0xFFFFFFFF
    return h ^ (h >> 15)


@njit(cache=True, nogil=True, inline="always")
def _lmass(LV, LC, base, v1, v2):
    """The counts of a successor list (LV values, LC counts at base .. base + XL_K) in [v1, v2]."""
    acc = np.int64(0)
    for j in range(XL_K):
        v = LV[base + j]
        if LC[base + j] > 0 and v1 <= v <= v2:
            acc += LC[base + j]
    return acc


@njit(cache=True, nogil=True)
def _xlist(XB, LV, LC, LB, LO, kind, xp, s, a1, b1, a0, b0):
    """The list model's inputs of a decision (xctx): the decision's set of values (magnitudes
    [a0, b0] on side s: values xp + m, or xp - 1 - m; s = 2: values [a0, b0]) and its "yes" part
    ([a1, b1]); for each successor list k (base LB[k], < 0: none) the counts in the set and in
    its "yes" part, as the index of an adaptive probability (XB[2 + XC_N + k]; -1: no count in
    the set) by the set's count bucket and the share of the "yes" part in 32nds; XB[2 + XNI] and
    XB[3 + XNI] the count buckets of lists 0 and 2 (the final mixers' rows)."""
    if s == 0:
        v0 = xp + a0
        w0 = xp + b0
        v1 = xp + a1
        w1 = xp + b1
    elif s == 1:
        v0 = xp - 1 - b0
        w0 = xp - 1 - a0
        v1 = xp - 1 - b1
        w1 = xp - 1 - a1
    else:
        v0 = a0
        w0 = b0
        v1 = a1
        w1 = b1
    for k in range(XL_N):
        nb = 0
        bs = LB[k]
        if bs >= 0:
            o = LO[k]
            mt = _lmass(LV, LC, bs, v0 - o, w0 - o)
            if mt > 0:
                m1 = _lmass(LV, LC, bs, v1 - o, w1 - o)
                nb = min(_bitlen(mt), XL_NB - 1)
                r = (m1 * 32 + (mt >> 1)) // mt
                XB[2 + XC_N + k] = (1 << XB[4 + XNI]) + ((k * XL_NB + nb) * 33 + r) * 3 + kind
        if nb == 0:
            XB[2 + XC_N + k] = -1
        if k == 0:
            XB[2 + XNI] = nb
        if k == 2:
            XB[3 + XNI] = nb


@njit(cache=True, nogil=True)
def _xcode(ac, buf, dec, want, pf, pv, FW, frow, sq, st, lr, rt, XB, XP, XN, XW, XI, XA):
    """Code a bit with the coder's probability pf, or with the value model's mix (``_final_code``:
    pv > 0), that probability po refined (``xctx`` = 1, version 6; its callers code with po when 0) by the
    exact-value contexts: XC_N adaptive probabilities (XP, Q16; counts XN) at hashes of the
    value's bases XB[2:2 + XC_N] and the decision's key XB[1], mixed with po in the stretch
    domain by the weights XW[row:row + XC_W] (Q16; row by the decision row frow / 3 and the
    order-1 context's count bucket), learned from its error. XW[-1] accumulates the cost of po
    minus that of the coded probability (1/16 bits; an estimate for the encoder's choice)."""
    po = pf
    x0 = np.int64(0)
    x1 = np.int64(0)
    if pv > 0:
        x0 = st[pf]
        x1 = st[pv]
        d = _clamp((FW[frow] * x0 + FW[frow + 1] * x1 + FW[frow + 2] * 256) >> 16, -2047, 2047)
        po = _clamp(sq[d + 2047], 1, 4095)
    nk = XB[1]
    sh = 32 - XB[4 + XNI]
    NI = XNI
    for k in range(XC_N):
        XI[k] = _xmix(XB[2 + k], nk) >> sh
    for k in range(XL_N):
        XI[XC_N + k] = XB[2 + XC_N + k]
    row = ((frow // 3) * XC_CONF + XB[2 + NI]) * XC_W
    row2 = ((VM_ROWS + frow // 3) * XC_CONF + XB[3 + NI]) * XC_W
    xs0 = st[po]
    dot = XW[row] * xs0 + XW[row + XC_W - 1] * 256
    dot2 = XW[row2] * xs0 + XW[row2 + XC_W - 1] * 256
    for k in range(NI):
        XI[NI + k] = st[_counter_p(XP, XI[k])] if XI[k] >= 0 else 0
        dot += XW[row + 1 + k] * XI[NI + k]
        dot2 += XW[row2 + 1 + k] * XI[NI + k]
    dot = _clamp(dot >> 16, -2047, 2047)
    dot2 = _clamp(dot2 >> 16, -2047, 2047)
    dm = (dot + dot2) >> 1
    pm = sq[dm + 2047]
    # the APM: the mix refined in the context of the first list's input (its index, else none)
    ab = (XI[XC_N] - (1 << XB[4 + NI]) if XI[XC_N] >= 0 else XL_SIZE + frow // 3) * 33
    sa = dm + 2048
    lo_i = sa >> 7
    wt = sa & 127
    pa = (XA[ab + lo_i] * (128 - wt) + XA[ab + lo_i + 1] * wt) >> 11
    ab2 = (XL_SIZE + 33 + (XI[XC_N + 1] - (1 << XB[4 + NI]) if XI[XC_N + 1] >= 0 else XL_SIZE + frow // 3)) * 33
    pb = (XA[ab2 + lo_i] * (128 - wt) + XA[ab2 + lo_i + 1] * wt) >> 11
    p = _clamp((2 * pm + 3 * pa + 3 * pb + 4) >> 3, 1, 4095)
    bit = _code(ac, buf, p, want, dec)
    ak = ab + lo_i + (1 if wt >= 64 else 0)
    XA[ak] += ((bit << 16) - bit - XA[ak]) >> XA_RATE
    ak = ab2 + lo_i + (1 if wt >= 64 else 0)
    XA[ak] += ((bit << 16) - bit - XA[ak]) >> XA_RATE
    XW[XW.shape[0] - 1] += _cost16(po, bit) - _cost16(p, bit)
    err = ((bit << 12) - sq[dot + 2047]) * lr
    err2 = ((bit << 12) - sq[dot2 + 2047]) * lr
    XW[row] += (xs0 * err) >> XC_SH
    XW[row2] += (xs0 * err2) >> XC_SH
    for k in range(NI):
        XW[row + 1 + k] += (XI[NI + k] * err) >> XC_SH
        XW[row2 + 1 + k] += (XI[NI + k] * err2) >> XC_SH
    XW[row + XC_W - 1] += (256 * err) >> XC_SH
    XW[row2 + XC_W - 1] += (256 * err2) >> XC_SH
    for k in range(NI):
        if XI[k] >= 0:
            _counter_update(XP, XN, XI[k], bit, rt, XC_LIMIT)
    if pv > 0:  # the value model's mix learns as in _final_code
        FW[3 * VM_ROWS] += _cost16(pf, bit) - _cost16(po, bit)
        err = ((bit << 12) - po) * lr
        FW[frow] += (x0 * err) >> 10
        FW[frow + 1] += (x1 * err) >> 10
        FW[frow + 2] += (256 * err) >> 10
    return bit


@njit(cache=True, nogil=True)
def _mix_code(ac, buf, dec, want, CP, CN, ci, nin, MW, msel, APM, abase, sq, st, rt, limit, lr, xs, ar,
              pv, FW, frow, XB, XP, XN, XW, XI, XA):
    """One binary decision from the adaptive probabilities CP[ci[:nin]]: their stretches and a
    bias mixed by the weights MW[msel:msel + nin + 1], refined by the APM at abase (33 knots;
    none when abase < 0: p = (mix + 3 apm) / 4), coded; then every part updated."""
    dot = np.int64(0)
    for u in range(nin):
        xs[u] = st[_counter_p(CP, ci[u])]
        dot += MW[msel + u] * xs[u]
    dot += MW[msel + nin] * 256
    dot = _clamp(dot >> 16, -2047, 2047)
    pm = sq[dot + 2047]
    if abase >= 0:
        sa = dot + 2048
        lo_i = sa >> 7
        wt = sa & 127
        pa = (APM[abase + lo_i] * (128 - wt) + APM[abase + lo_i + 1] * wt) >> 11
        pf = _clamp((pm + 3 * pa + 2) >> 2, 1, 4095)
    else:
        pf = _clamp(pm, 1, 4095)
    if XB[0] == 0:
        bit = _final_code(ac, buf, dec, want, pf, pv, FW, frow, sq, st, lr) if pv > 0 else _code(ac, buf, pf, want, dec)
    else:
        bit = _xcode(ac, buf, dec, want, pf, pv, FW, frow, sq, st, lr, rt, XB, XP, XN, XW, XI, XA)
    err = ((bit << 12) - pm) * lr
    for u in range(nin):
        MW[msel + u] += (xs[u] * err) >> 10
    MW[msel + nin] += (256 * err) >> 10
    if abase >= 0:
        ak = abase + lo_i + (1 if wt >= 64 else 0)
        APM[ak] += ((bit << 16) - bit - APM[ak]) >> ar
    for u in range(nin):
        _counter_update(CP, CN, ci[u], bit, rt, limit)
    return bit


@njit(cache=True, nogil=True)
def _mix2_code(ac, buf, dec, want, CP, CN, ci, nin, MW, msel, msel2, APM, abase, abase2, sq, st, rt, limit, lr, xs,
               ar, pv, FW, frow, XB, XP, XN, XW, XI, XA):
    """``_mix_code`` with two mixers (weight rows at msel and msel2, selected by different
    contexts), their outputs averaged in the stretch domain before the APM; each mixer learns
    from its own error."""
    d1 = np.int64(0)
    d2 = np.int64(0)
    for u in range(nin):
        xs[u] = st[_counter_p(CP, ci[u])]
        d1 += MW[msel + u] * xs[u]
        d2 += MW[msel2 + u] * xs[u]
    d1 = _clamp((d1 + MW[msel + nin] * 256) >> 16, -2047, 2047)
    d2 = _clamp((d2 + MW[msel2 + nin] * 256) >> 16, -2047, 2047)
    dot = (d1 + d2) >> 1
    pm = sq[dot + 2047]
    sa = dot + 2048
    lo_i = sa >> 7
    wt = sa & 127
    pa = (APM[abase + lo_i] * (128 - wt) + APM[abase + lo_i + 1] * wt) >> 11
    pb = (APM[abase2 + lo_i] * (128 - wt) + APM[abase2 + lo_i + 1] * wt) >> 11
    pf = _clamp((2 * pm + 3 * pa + 3 * pb + 4) >> 3, 1, 4095)
    if XB[0] == 0:
        bit = _final_code(ac, buf, dec, want, pf, pv, FW, frow, sq, st, lr) if pv > 0 else _code(ac, buf, pf, want, dec)
    else:
        bit = _xcode(ac, buf, dec, want, pf, pv, FW, frow, sq, st, lr, rt, XB, XP, XN, XW, XI, XA)
    err1 = ((bit << 12) - sq[d1 + 2047]) * lr
    err2 = ((bit << 12) - sq[d2 + 2047]) * lr
    for u in range(nin):
        MW[msel + u] += (xs[u] * err1) >> 10
        MW[msel2 + u] += (xs[u] * err2) >> 10
    MW[msel + nin] += (256 * err1) >> 10
    MW[msel2 + nin] += (256 * err2) >> 10
    ak = abase + lo_i + (1 if wt >= 64 else 0)
    APM[ak] += ((bit << 16) - bit - APM[ak]) >> ar
    ak = abase2 + lo_i + (1 if wt >= 64 else 0)
    APM[ak] += ((bit << 16) - bit - APM[ak]) >> ar
    for u in range(nin):
        _counter_update(CP, CN, ci[u], bit, rt, limit)
    return bit


@njit(cache=True, nogil=True)
def run(y, lo, hi, gs, prm, buf, dec, res, chk0, tab, tables, lblock, lord, lshift, lcoef):
    """Encode ``y`` into ``buf`` (dec False: returns the payload length, or -1 when buf is too
    short) or decode ``buf`` into ``y`` (dec True: returns OK or a negative status).

    Preconditions (checked by ``ubpe.level3``): y int64 (n, C), C >= 1; lo, hi int64 (C,) with
    0 <= lo <= hi < 2**40, every y[:, c] in [lo[c], hi[c]] when encoding; gs in [0, 24] with
    (value range) >> gs < 2**21; prm int64 (N_PRM,) within PRM_BOUNDS; buf uint8; res int64, (n, C)
    to receive the residuals (a diagnostic; (n, 2 C): and the payload's length after each value;
    (n, 3 C): and the value model's estimated saving so far, 1/16 bits; (n, 4 C): and the
    exact-value contexts' (``xctx``)) or (0, 0); chk0 seeds the check (the header's CRC-32,
    so that the 16 check bits at the end cover the header as well as the values); tab the value
    table (int64, increasing) when y holds symbols, else empty; tables the coder's adaptive state
    (``new_tables``, or ``prior_tables``), updated in place; lblock > 0: block LPC of the working
    values v in OLS2's place, block lblock, per channel and block lord (C, nb) orders <= 32,
    lshift (C, nb) shifts <= 31 and lcoef (C, nb, 32) coefficients |c| < 2**16 (lag j + 1 at
    j), nb = ceil(n / lblock); else lord, lshift, lcoef of any shape.
    """
    n, C = y.shape
    sq, st, rt = _tables()
    p1 = prm[PRM_P1]
    cross = min(prm[PRM_CROSS], C - 1)
    dim1 = p1 + 2 * cross
    T1 = _period(prm[PRM_T1])
    K1 = prm[PRM_K1]
    p2 = prm[PRM_P2]
    T2 = _period(prm[PRM_T2])
    K2 = prm[PRM_K2]
    reg = prm[PRM_REG]
    ntaps = np.zeros(3, np.int64)
    mus = np.zeros(3, np.int64)
    for k in range(3):
        ntaps[k] = prm[PRM_N1 + k]
        mus[k] = prm[PRM_MU1 + k]
    mixmu = prm[PRM_MIXMU]
    use_bias = prm[PRM_BIAS]
    limit = prm[PRM_LIMIT]
    lr = prm[PRM_LR]
    ar = prm[PRM_APMR]  # the APMs' rate: 2**-ar

    ntab = tab.shape[0]
    off = np.empty(C, np.int64)
    vlo = np.empty(C, np.int64)
    vhi = np.empty(C, np.int64)
    for c in range(C):
        vlo[c] = tab[lo[c]] if ntab > 0 else lo[c]
        vhi[c] = tab[hi[c]] if ntab > 0 else hi[c]
        off[c] = (vlo[c] + vhi[c]) >> 1

    # least-squares state, per channel
    MM = MAX_DIM * MAX_DIM
    D1 = max(dim1, 1)
    R1 = np.zeros((C, D1 * D1), np.int64)  # each (dim x dim), row-major
    b1 = np.zeros((C, D1), np.int64)
    w1 = np.zeros((C, D1), np.int64)
    vr = np.int64(0)
    for c in range(C):
        vr = max(vr, (vhi[c] - vlo[c]) >> gs)
    exfloor = 2 * max(0, _bitlen(vr) - 17)  # |v| above 2**16: products shifted right
    ex1 = np.full(C, exfloor, np.int64)
    C2 = C if p2 > 0 and lblock == 0 else 1  # (no OLS2 state when it is unused)
    D2 = max(p2, 1)
    R2 = np.zeros((C2, D2 * D2), np.int64)
    b2 = np.zeros((C2, D2), np.int64)
    w2 = np.zeros((C2, D2), np.int64)
    ex2 = np.full(C, exfloor, np.int64)
    wA = np.zeros(MM + MAX_DIM, np.int64)
    wL = np.zeros(MM, np.int64)
    wd = np.zeros(MAX_DIM, np.int64)
    wz = np.zeros(MAX_DIM, np.int64)
    # the OLS inputs, |v| <= 2**20: p1 own values, then two lags of each of up to 2 * cross
    # neighbours, p1 + 4 * cross <= INPUT_SLOTS entries (the predictor reads the first dim1)
    a = np.zeros(INPUT_SLOTS, np.int32)
    g = np.full(C, 2048, np.int64)
    es1 = np.zeros(C, np.int64)  # running |error| of each OLS (Q4), for its weights
    es2 = np.zeros(C, np.int64)
    irls = prm[PRM_IRLS]
    # OLS3 (p3 > 0): a third least-squares predictor over the own past, its offset from Q an
    # input of the mixer and its distance from Pf a context of the residual coder
    p3 = prm[PRM_P3]
    T4 = _period(prm[PRM_T4])
    K3 = prm[PRM_K3]
    C4 = C if p3 > 0 else 1
    D4 = max(p3, 1)
    R4 = np.zeros((C4, D4 * D4), np.int64)
    b4 = np.zeros((C4, D4), np.int64)
    w4 = np.zeros((C4, D4), np.int64)
    ex4 = np.full(C, exfloor, np.int64)
    es4 = np.zeros(C, np.int64)
    P3 = np.int64(0)
    rd3 = 16
    use_lvl = prm[PRM_LVL]  # the prediction's level in its channel's range: a context (lvl = 1)
    ext = p3 > 0 or use_lvl > 0
    lb = 0
    nown = max(max(p1, 32 if lblock > 0 else p2), p3)  # own past values the predictors read
    # each channel's past working values, newest first from OH[c, hpo[c]] (the predictors' view
    # ``own``, lag 1 first: zeros before the start); pushed at the front, moved back when full
    OH = np.zeros((C, nown + HIST_PAD), np.int32)
    hpo = np.full(C, HIST_PAD, np.int64)
    fmix = prm[PRM_FMIX]
    T3 = _period(prm[PRM_T3])
    # one least-squares mix per channel and hold state (how many frames the value has not
    # changed: 0, 1, 2, 3+), so that a held or upsampled signal gets its own weights
    C3 = 4 * C if fmix else 1
    R3 = np.zeros((C3, 49), np.int64)
    b3 = np.zeros((C3, 7), np.int64)
    w3 = np.zeros((C3, 7), np.int64)
    for c in range(C3):
        w3[c, 1] = np.int64(1) << 24  # start as the NLMS mix
    ex3 = np.full(C3, exfloor, np.int64)
    hrun = np.zeros(C, np.int64)
    vmean = np.zeros(C, np.int64)  # 16 x a running mean of V (rate 1/512)
    cnt3 = np.zeros(C3, np.int64)
    u3 = np.zeros(7, np.int32)
    Pn = np.int64(0)
    # NLMS cascade, per channel and stage: weights (reversed) and history
    nmax = max(ntaps[0], max(ntaps[1], ntaps[2]))
    HW = nmax + HIST_PAD
    W = np.zeros((C, 3, max(nmax, 1)), np.int32)  # Q16, clamped to +-2**30
    H = np.zeros((C, 3, HW), np.int32)  # stage inputs, |s| <= 2**22
    hpos = np.zeros((C, 3), np.int64)
    for c in range(C):
        for k in range(3):
            hpos[c, k] = ntaps[k]
    hpow = np.zeros((C, 3), np.int64)
    hema = np.zeros((C, 3), np.int64)
    # tap weights of the recent-past power (powr == 1): 2**16 (1 + j)**(-13/16), by the
    # piecewise-linear log2 of _irls; psum[k] their sum over stage k's taps, / 2**16
    ptab = np.zeros(max(nmax, 1), np.int64)
    for j in range(ptab.shape[0]):
        x_ = np.int64(j + 1) << 5
        b_ = _bitlen(x_)
        l16 = 16 * (b_ - 6) + ((x_ >> (b_ - 5)) & 15)
        e16 = (l16 * 13) >> 4
        ptab[j] = (_INV16[e16 & 15] << 4) >> (e16 >> 4) if (e16 >> 4) < 16 else 0
    psum = np.ones(3, np.int64)
    for k in range(3):
        acc_ = np.int64(0)
        for j in range(ntaps[k]):
            acc_ += ptab[j]
        psum[k] = max(np.int64(1), acc_ >> 16)
    powr = prm[PRM_POWR]
    mixw = np.zeros((C, 7), np.int64)
    # mixb = 1 (version 4, step 5c): the mix of step 5 (Pl) blended with five fixed sums of the
    # stages, each weighted by about its running |error| to the power -4
    mixb = prm[PRM_MIXB] if prm.shape[0] > PRM_MIXB else 0
    # nlmsq = 1 (version 5): the NLMS weights in Q20 (not Q16), clamped to +-2**27, their
    # updates and the stages' predictions rounded to nearest (not floored: no drift of the
    # weights towards -inf, which many taps with small steps accumulate)
    nlmsq = prm[PRM_NLMSQ] if prm.shape[0] > PRM_NLMSQ else 0
    EB = np.zeros((C, MIXB_K), np.int64)  # the experts' running |error| (Q8: fine below one unit)
    PE = np.zeros(MIXB_K, np.int64)
    Pl = np.int64(0)
    for c in range(C):
        for k in range(3):
            mixw[c, k] = 4096
    q = np.zeros(7, np.int64)  # the mixer's inputs: 3 cascade stages, 3 bias estimates, OLS3
    # bias: the mean error after the cascade in 3 context sets (18 + 9 + 1 contexts)
    bias = np.zeros((C, 28), np.int64)
    biasn = np.zeros((C, 28), np.int64)
    bix = np.zeros(3, np.int64)
    # per channel recent state
    e1 = np.zeros(C, np.int64)
    e2 = np.zeros(C, np.int64)
    vq1 = np.zeros(C, np.int64)  # last V (Q4)
    vq2 = np.zeros(C, np.int64)
    mA = np.zeros(C, np.int64)
    mB = np.zeros(C, np.int64)

    # coder tables: adaptive probabilities (CP, CN), mixer weights (MW), APMs (APM)
    oB1 = 0
    oB2 = oB1 + N_KA * 8 * N_SID
    oB3 = oB2 + N_KA * N_SID
    oB4 = oB3 + 33 * 48 * N_SID
    oB5 = oB4 + 33 * 48 * N_SID
    oS1 = oB5 + 48 * 48 * N_SID
    oS2 = oS1 + 16 * 49
    oS3 = oS2 + 16 * 33
    oS4 = oS3 + 16 * 33
    oM1 = oS4 + 33 * 33
    oM2 = oM1 + N_KE * 3 * N_KA
    oM3 = oM2 + N_KE * 3 * 33
    oB6 = oM3 + N_KE * 3 * 33
    oB7 = oB6 + 64 * 48 * N_SID
    oS5 = oB7 + 343 * N_SID
    oS6 = oS5 + 49 * 16
    oB8 = oS6 + 33 * 7 * 4
    oS7 = oB8 + 33 * 48 * N_SID
    oB9 = oS7 + 16 * 33
    oS8 = oB9 + N_LV * 48 * N_SID
    CP, CN, MW, APM, LP, LN = tables
    oWB = 0
    oWS = oWB + N_SID * 48 * 8
    oWM = oWS + 16 * 24 * 8
    oWB2 = oWM + N_KE * 3 * 8
    oWS2 = oWB2 + N_SID * 48 * 8
    # version 2's contexts (ext: p3 > 0 or lvl = 1): the bit-length mixers' rows of 9 inputs
    # and a bias, the sign's of 8 and a bias
    oWB3 = oWS2 + 49 * 8
    oWB4 = oWB3 + N_SID * 48 * 10
    oWS3 = oWB4 + N_SID * 48 * 10
    oWS4 = oWS3 + 16 * 24 * 9
    # the sign's and the bit length's mixers: inputs and weight rows (version 2's with ext)
    nin_s, wS1, wS2, ws, nin_b, wB1, wB2, wb = 6, oWS, oWS2, 8, 7, oWB, oWB2, 8
    if ext:
        _copy_rows(MW, oWB, oWB2, oWS, oWS2, oWB3, oWB4, oWS3, oWS4)
        nin_s, wS1, wS2, ws, nin_b, wB1, wB2, wb = 8, oWS3, oWS4, 9, 9, oWB3, oWB4, 10
    oAS = N_SID * N_KA * 33
    oAB2 = oAS + 16 * 33 * 33
    oAS2 = oAB2 + N_SID * 33 * 33
    eprev = np.zeros(C, np.int64)
    xs = np.zeros(9, np.int64)
    ci = np.zeros(9, np.int64)
    # the value model (vmod = 1, version 3): P(v) ~ f(v - xp) g(v) over a window of symbols
    # around the prediction, f the residual histogram of the slow mean |e|'s octave, g(v) the
    # symbol's observed count over the count f predicted (an ADC's unequal code widths, a
    # rescaled grid that hits some values twice); its probability of each decision is mixed
    # with the coder's by a final mixer (_final_code)
    vmod = prm[PRM_VMOD] if prm.shape[0] > PRM_VMOD else 0
    VR = np.int64(1)
    for c in range(C):
        VR = max(VR, hi[c] - lo[c] + 1)
    if VR > VM_MAX_RANGE:
        vmod = 0  # (the caller refuses such a header)
    CV = C if vmod else 1
    VS = VR if vmod else 1
    FH = np.zeros((CV, VM_NB, 2 * VM_E + 1), np.int64)
    FT = np.zeros((CV, VM_NB), np.int64)
    OBS = np.zeros((CV, VS), np.int64)
    EXPV = np.zeros((CV, VS), np.int64)
    GV = np.full((CV, VS), 4096, np.int64)
    SV = np.zeros(2 * VM_E + 2, np.int64)
    FW = np.zeros(3 * VM_ROWS + 1, np.int64)
    for r in range(VM_ROWS):
        FW[3 * r] = 65536
    vcount = np.zeros(CV, np.int64)
    pv = np.int64(0)
    kb = 0
    lov = np.int64(0)
    hiv = np.int64(-1)
    vtot = np.int64(0)

    # xctx (version 6): the exact-value contexts, a final stage after the value model's mix
    xctx = prm[PRM_XCTX] if prm.shape[0] > PRM_XCTX else 0
    # the tables' sizes grow with the values coded (a short recording allocates little)
    nbits = _bitlen(n * C)
    xbits = min(XC_BITS, max(12, nbits + 6))
    lbits = min(XL_BITS, max(8, nbits + 2))
    XB = np.zeros(5 + XNI, np.int64)
    XB[0] = xctx
    XB[4 + XNI] = xbits
    XI = np.zeros(2 * XNI, np.int64)
    XS = (1 << xbits) + XL_SIZE if xctx else 1
    XP = np.full(XS, 32768, np.uint16)
    XN = np.zeros(XS, np.uint8)
    XA = np.empty(XA_ROWS * 33 if xctx else 1, np.int32)
    for i in range(XA_ROWS if xctx else 0):
        for j in range(33):
            XA[i * 33 + j] = sq[_clamp((j - 16) * 128, -2047, 2047) + 2047] * 16
    LS = (1 << lbits) if xctx else 1
    LT = np.full(LS, -1, np.int64)  # each list's key (its context's 32-bit hash)
    LV = np.zeros(LS * XL_K, np.int64)
    LC = np.zeros(LS * XL_K, np.int32)
    LB = np.full(XL_N, -1, np.int64)
    LK = np.zeros(XL_N, np.int64)
    LO = np.zeros(XL_N, np.int64)  # what a list's values are relative to: 0 or the last value
    XW = np.zeros(2 * VM_ROWS * XC_CONF * XC_W + 1 if xctx else 1, np.int64)
    for r in range(2 * VM_ROWS * XC_CONF if xctx else 0):
        XW[r * XC_W] = 65536
        for k in range(XL_N):
            XW[r * XC_W + 1 + XC_N + k] = XC_W0

    ac = np.zeros(4, np.int64)
    ac[1] = 0xFFFFFFFF
    if dec:
        for j in range(4):
            ac[2] = (ac[2] << 8) | (np.int64(buf[j]) if j < buf.shape[0] else 0)
    chk = np.int64(chk0) & 0xFFFFFFFF

    # t modulo the forgetting periods and the solving intervals, counted (no division a frame),
    # and the forgetting weights 4096 + 4096 (t mod T) / T of the frame
    ph1 = ph2 = ph3 = ph4 = kc1 = kc2 = kc3 = -1
    fw1 = fw2 = fw3 = fw4 = np.int64(4096)
    for t in range(n):
        ph1 = ph1 + 1 if ph1 + 1 < T1 else 0
        ph2 = ph2 + 1 if ph2 + 1 < T2 else 0
        ph3 = ph3 + 1 if ph3 + 1 < T3 else 0
        ph4 = ph4 + 1 if ph4 + 1 < T4 else 0
        kc1 = kc1 + 1 if kc1 + 1 < K1 else 0
        kc2 = kc2 + 1 if kc2 + 1 < K2 else 0
        kc3 = kc3 + 1 if kc3 + 1 < K3 else 0
        if dim1 > 0:
            fw1 = 4096 + (4096 * ph1) // T1
        if p2 > 0 and lblock == 0:
            fw2 = 4096 + (4096 * ph2) // T2
        if fmix:
            fw3 = 4096 + (4096 * ph3) // T3
        if p3 > 0:
            fw4 = 4096 + (4096 * ph4) // T4
        for c in range(C):
            offc = off[c]
            # ---- OLS input vector: own past, then the neighbours
            own = OH[c, hpo[c]:hpo[c] + nown]
            for j in range(p1):
                a[j] = own[j]
            m = p1
            for r in range(1, cross + 1):
                for sgn in range(2):
                    k = c - r if sgn == 0 else c + r
                    if k < 0 or k >= C:
                        k = c + r if sgn == 0 else c - r  # reflect at the edges
                    if k < 0 or k >= C or k == c:
                        a[m] = 0
                        a[m + 1] = 0
                    else:
                        base = t if k < c else t - 1
                        a[m] = (_value(tab, ntab, y[base, k]) - off[k]) >> gs if base >= 0 else 0
                        a[m + 1] = (_value(tab, ntab, y[base - 1, k]) - off[k]) >> gs if base >= 1 else 0
                    m += 2
            # ---- predictions (Q4 of v)
            acc = np.int64(0)
            for j in range(dim1):
                acc += w1[c, j] * a[j]
            P1 = acc >> 20
            acc = np.int64(0)
            if lblock > 0:
                # the block LPC (forward-adaptive, its integer coefficients stored) in OLS2's place
                bk = t // lblock
                lo_ = lord[c, bk]
                if t >= lo_:
                    for j in range(lo_):
                        acc += lcoef[c, bk, j] * np.int64(own[j])
                    P2 = (acc << 4) >> lshift[c, bk]
                else:
                    P2 = np.int64(own[0]) << 4 if t >= 1 else np.int64(0)
            else:
                for j in range(p2):
                    acc += w2[c, j] * own[j]
                P2 = acc >> 20 if p2 > 0 else P1
            P1 = _clamp(P1, -(1 << 26), 1 << 26)
            P2 = _clamp(P2, -(1 << 26), 1 << 26)
            Q = P1 + ((g[c] * (P2 - P1)) >> 12)
            csum = np.int64(0)
            qpow = np.int64(1)
            for k in range(3):
                nk = ntaps[k]
                if nk == 0:
                    q[k] = 0
                    continue
                acc = _dot32(W[c, k, :nk], H[c, k, hpos[c, k] - nk:hpos[c, k]], nk)
                if nlmsq:
                    q[k] = _clamp((acc + (1 << 19)) >> 20, -(1 << 22), 1 << 22)
                else:
                    q[k] = _clamp(acc >> 16, -(1 << 22), 1 << 22)
                csum += (mixw[c, k] * q[k]) >> 12
                qpow += (q[k] * q[k]) >> 8
            if p3 > 0:
                acc = np.int64(0)
                for j in range(p3):
                    acc += w4[c, j] * own[j]
                P3 = _clamp(acc >> 20, -(1 << 26), 1 << 26)
                q[6] = _clamp(P3 - Q, -(1 << 22), 1 << 22)
                csum += (mixw[c, 6] * q[6]) >> 12
                qpow += (q[6] * q[6]) >> 8
            Pm = Q + csum
            if use_bias:
                s1 = vq1[c] - vq2[c]
                se1 = 0 if e1[c] < 0 else (1 if e1[c] == 0 else 2)
                se2 = 0 if e2[c] < 0 else (1 if e2[c] == 0 else 2)
                bix[0] = se1 + 3 * (0 if s1 < 0 else (1 if s1 == 0 else 2)) + 9 * (1 if Pm > vq1[c] else 0)
                bix[1] = 18 + se1 + 3 * se2
                bix[2] = 27
                for k in range(3):
                    q[3 + k] = bias[c, bix[k]] >> 8
                    csum += (mixw[c, 3 + k] * q[3 + k]) >> 12
                    qpow += (q[3 + k] * q[3 + k]) >> 8
            Pf = Q + csum
            if mixb:
                Pl = Pf
                PE[0] = Pl
                PE[1] = Q + q[0] + q[1] + q[2] + (q[6] if p3 > 0 else 0)
                PE[2] = Q + q[0]
                PE[3] = Q
                PE[4] = P1 + q[0] + q[1] + q[2]
                PE[5] = P2 + q[0] + q[1] + q[2]
                xe = EB[c, 0]
                for k in range(1, MIXB_K):
                    xe = min(xe, EB[c, k])
                shb = max(0, _bitlen(xe) - 8)  # the best expert's error in [2**7, 2**8)
                num = np.int64(0)
                den = np.int64(0)
                for k in range(MIXB_K):
                    ak = min((EB[c, k] >> shb) + 1, np.int64(4096))
                    if k == 0:
                        ak = max(np.int64(1), (ak * MIXB_FAV) >> 4)
                    a2 = ak * ak
                    iv = min(np.int64(1) << 40, (np.int64(1) << 52) // (a2 * a2))  # ~ a**-4, a2**2 <= 2**48
                    den += iv
                    num += iv * _clamp(PE[k] - Pl, -(1 << 20), 1 << 20)
                Pf = Pl + num // den
            if fmix:
                # the final mix by least squares: Pf = P1 + sum w3 u over the predictions'
                # offsets from P1 (short window); ef for the NLMS mixer stays its own error
                Pn = Pf
                u3[0] = _clamp(P2 - P1, -U3, U3)
                u3[1] = _clamp(Pn - P1, -U3, U3)
                u3[2] = _clamp(q[0], -U3, U3)
                u3[3] = _clamp(Q - P1, -U3, U3)
                u3[4] = _clamp(q[3] + q[4] + q[5], -U3, U3)
                u3[5] = 16
                u3[6] = _clamp(vq1[c] - P1, -U3, U3)  # hold: the last value again
                hs = 4 * c + min(hrun[c], 3)
                acc = np.int64(0)
                for j in range(7):
                    acc += w3[hs, j] * u3[j]
                Pf = P1 + (acc >> 24)
            Pb = Pf
            xp = offc + (((Pb << gs) + 8) >> 4)
            xp = _clamp(xp, vlo[c], vhi[c])
            if use_lvl:
                lb = ((xp - vlo[c]) * N_LV) // (vhi[c] - vlo[c] + 1)
            if ntab > 0:  # the symbol predicted: the table's value nearest xp
                xp = _nearest(tab, lo[c], hi[c], xp)
            if vmod:  # the value model's masses, prefix sums over the window of symbols
                kb = min(_bitlen(mB[c] >> 3), VM_NB - 1)
                wv = min(VM_E, 16 + (mB[c] >> 1))  # 16 + 8 times the slow mean |e|
                lov = max(lo[c], xp - wv)
                hiv = min(hi[c], xp + wv)
                acc = np.int64(0)
                SV[0] = 0
                fh = FH[c, kb, lov - xp + VM_E:hiv - xp + VM_E + 1]  # (slices: no wraparound selects)
                gv = GV[c, lov - lo[c]:hiv - lo[c] + 1]
                for j in range(hiv - lov + 1):
                    acc += (fh[j] + 1) * gv[j]
                    SV[j + 1] = acc
                vtot = acc

            # ---- contexts of the residual coder
            A = mA[c]
            kA = _flog(A)
            kB = _flog(mB[c])
            rd1 = _relb(P1 - Pf, gs, kA)
            rd2 = _relb(P2 - Pf, gs, kA)
            if p3 > 0:
                rd3 = _relb(P3 - Pf, gs, kA)
            frac = ((Pf << gs) + 8) & 15  # the prediction's place between integers, in 16ths
            # the last three steps of the signal (symbols), each clamped to [-3, 3]: a slow,
            # finely sampled signal's quantization steps follow a pattern
            dd1 = _clamp(y[t - 1, c] - y[t - 2, c], -3, 3) + 3 if t >= 2 else 3
            dd2 = _clamp(y[t - 2, c] - y[t - 3, c], -3, 3) + 3 if t >= 3 else 3
            dd3 = _clamp(y[t - 3, c] - y[t - 4, c], -3, 3) + 3 if t >= 4 else 3
            lvl = _relb(vq1[c] - (vmean[c] >> 4), gs, kA)  # the signal's side of its running mean
            fineb = frac >> 1 if kA < 32 else 0  # it matters only when |e| is small
            if kA >= 32:
                frac &= 12
            if xctx:  # the exact-value contexts' bases: the last values, exactly, and xp's offset
                y1 = y[t - 1, c] if t >= 1 else np.int64(0)
                y2 = y[t - 2, c] if t >= 2 else np.int64(0)
                y3 = y[t - 3, c] if t >= 3 else np.int64(0)
                h0 = _xmix(_xmix(np.int64(c + 1), xp - y1), 0x100)
                XB[2] = _xmix(h0, y1)
                XB[3] = _xmix(_xmix(h0 ^ 0x5555, y1), y2)
                XB[4] = _xmix(_xmix(h0 ^ 0xAAAA, y1 - y2), y2 - y3)
                LK[0] = _xmix(_xmix(np.int64(c + 1), 0x200), y1)
                LK[1] = _xmix(LK[0], y2)
                LK[2] = _xmix(_xmix(_xmix(np.int64(c + 1), 0x300), y1 - y2), y2 - y3)
                LK[3] = _xmix(_xmix(np.int64(c + 1), 0x400), y1 - y2)
                yn = y[t, c - 1] if c > 0 else (y[t - 1, C - 1] if t >= 1 and C > 1 else y2)
                LK[4] = _xmix(_xmix(LK[0], 0x600), yn)
                LO[2] = y1
                LO[3] = y1
                for k in range(XL_N):
                    sl = LK[k] >> (32 - lbits)
                    LB[k] = sl * XL_K if LT[sl] == LK[k] else -1
            if dec:
                e = np.int64(0)
            else:
                e = y[t, c] - xp
            # ---- sign first: s = e < 0, then m = e or -e - 1 (impossible when xp == lo)
            s = 1 if e < 0 else 0
            if xp > lo[c]:
                ci[0] = oS1 + frac * 49 + _sgnb(e1[c], A) * 7 + _sgnb(e2[c] if c == 0 else eprev[c - 1], A)
                ci[1] = oS2 + frac * 33 + rd1
                ci[2] = oS3 + frac * 33 + rd2
                ci[3] = oS4 + rd1 * 33 + rd2
                ci[4] = oS5 + (dd1 * 7 + dd2) * 16 + frac
                ci[5] = oS6 + (lvl * 7 + dd1) * 4 + (frac >> 2)
                ci[6] = oS7 + frac * 33 + rd3
                ci[7] = oS8 + lb * 16 + frac
                if vmod:
                    pv = _vprob(_vmass(SV, lov, hiv, lo[c], xp - 1), vtot)
                XB[1] = 1
                if xctx:
                    _xlist(XB, LV, LC, LB, LO, 0, xp, 2, lo[c], xp - 1, lo[c], hi[c])
                s = _mix2_code(ac, buf, dec, s, CP, CN, ci, nin_s, MW, wS1 + (frac * 24 + (kA >> 3)) * ws,
                               wS2 + (dd1 * 7 + dd2) * ws, APM, oAS + (frac * 33 + rd1) * 33,
                               oAS2 + ((dd1 * 7 + dd2) * 16 + frac) * 33, sq, st, rt, limit, lr, xs, ar,
                               pv, FW, 0, XB, XP, XN, XW, XI, XA)
            if s == 0:
                m = e
                bm = _bitlen(hi[c] - xp)
                r1 = rd1
                r2 = rd2
                r3 = rd3
                pe1 = e1[c]
                pe2 = e2[c] if c == 0 else eprev[c - 1]
            else:
                m = -e - 1
                bm = _bitlen(xp - lo[c] - 1)
                r1 = 32 - rd1
                r2 = 32 - rd2
                r3 = 32 - rd3
                pe1 = -e1[c]
                pe2 = -(e2[c] if c == 0 else eprev[c - 1])
            se1 = _sbk(pe1)
            se2 = _sbk(pe2)
            pdd = (dd1 * 7 + dd2) * 7 + dd3 if s == 0 else ((6 - dd1) * 7 + 6 - dd2) * 7 + 6 - dd3
            ksl = _clamp(_flog(abs(vq1[c] - vq2[c]) << gs) - kA + 32, 0, 63)  # the slope against |e|
            j0 = min(_bitlen(A >> 4), bm)
            b = _bitlen(m)
            # ---- bit length b of m in [0, bm]: steps from j0
            sid = 0
            cur = j0
            up = -1  # unknown direction
            blo = 0  # the bit lengths still possible (the value model's)
            bhi = bm
            while True:
                # the question at this step: up: "b > cur?" ; down: "b < cur?"
                if up == -1:
                    if cur >= bm:
                        up = 0  # b > bm is impossible: go down
                        if cur == 0:
                            break
                        sid = 8
                        continue
                    want = 1 if b > cur else 0
                elif up == 1:
                    if cur >= bm:
                        break
                    want = 1 if b > cur else 0
                else:
                    if cur <= 0:
                        break
                    want = 1 if b < cur else 0
                ci[0] = oB1 + (kA * 8 + fineb) * N_SID + sid
                ci[1] = oB2 + kB * N_SID + sid
                ci[2] = oB3 + (r1 * 48 + (kA >> 2)) * N_SID + sid
                ci[3] = oB4 + (r2 * 48 + (kA >> 2)) * N_SID + sid
                ci[4] = oB5 + (se1 * 48 + se2) * N_SID + sid
                ci[5] = oB6 + (ksl * 48 + (kA >> 2)) * N_SID + sid
                ci[6] = oB7 + pdd * N_SID + sid
                ci[7] = oB8 + (r3 * 48 + (kA >> 2)) * N_SID + sid
                ci[8] = oB9 + (lb * 48 + (kA >> 2)) * N_SID + sid
                if vmod:
                    if up != 0:  # "b > cur?"
                        m1 = _mmass(SV, lov, hiv, xp, s, _bmin(cur + 1), _bmax(bhi))
                    else:  # "b < cur?"
                        m1 = _mmass(SV, lov, hiv, xp, s, _bmin(blo), _bmax(cur - 1))
                    pv = _vprob(m1, _mmass(SV, lov, hiv, xp, s, _bmin(blo), _bmax(bhi)))
                XB[1] = 2 + 4 * (s + 2 * (sid + 16 * cur))
                if xctx:
                    if up != 0:
                        _xlist(XB, LV, LC, LB, LO, 1, xp, s, _bmin(cur + 1), _bmax(bhi), _bmin(blo), _bmax(bhi))
                    else:
                        _xlist(XB, LV, LC, LB, LO, 1, xp, s, _bmin(blo), _bmax(cur - 1), _bmin(blo), _bmax(bhi))
                bit = _mix2_code(ac, buf, dec, want, CP, CN, ci, nin_b, MW, wB1 + (sid * 48 + (kA >> 2)) * wb,
                                 wB2 + (sid * 48 + se1) * wb, APM, (sid * N_KA + kA) * 33,
                                 oAB2 + (sid * 33 + r1) * 33, sq, st, rt, limit, lr, xs, ar, pv, FW, 3 * (1 + sid),
                                 XB, XP, XN, XW, XI, XA)
                if up != 0:
                    if bit:
                        blo = cur + 1
                    else:
                        bhi = cur
                elif bit:
                    bhi = cur - 1
                else:
                    blo = cur
                if up == -1:
                    if bit:
                        up = 1
                        cur += 1
                        sid = 1
                    else:
                        up = 0
                        sid = 8
                        if cur == 0:
                            break
                        continue
                elif up == 1:
                    if bit:
                        cur += 1
                        sid = min(sid + 1, 7)
                    else:
                        break
                else:
                    if bit:
                        cur -= 1
                        sid = min(sid + 1, N_SID - 1)
                    else:
                        break
            if dec:
                b = cur
            # ---- the bits below the leading one
            mag = np.int64(1) if b > 0 else np.int64(0)
            for i in range(b - 1):
                want = (m >> (b - 2 - i)) & 1
                if vmod:
                    r_ = b - 1 - i
                    pv = _vprob(_mmass(SV, lov, hiv, xp, s, (2 * mag + 1) << (r_ - 1), ((mag + 1) << r_) - 1),
                                _mmass(SV, lov, hiv, xp, s, mag << r_, ((mag + 1) << r_) - 1))
                frow = 3 * (1 + N_SID + min(i, 15))
                XB[1] = 3 + 4 * ((s + 2 * (b + 64 * mag)) & 0x3FFFFFFF)
                if xctx:
                    r_ = b - 1 - i
                    _xlist(XB, LV, LC, LB, LO, 2, xp, s, (2 * mag + 1) << (r_ - 1), ((mag + 1) << r_) - 1,
                           mag << r_, ((mag + 1) << r_) - 1)
                if i < 2:
                    part = b * 3 + (0 if i == 0 else 1 + (mag & 1))
                    ci[0] = oM1 + part * N_KA + kA
                    ci[1] = oM2 + part * 33 + r1
                    ci[2] = oM3 + part * 33 + r2
                    bit = _mix_code(ac, buf, dec, want, CP, CN, ci, 3, MW, oWM + part * 8,
                                    APM, -1, sq, st, rt, limit, lr, xs, ar, pv, FW, frow, XB, XP, XN, XW, XI, XA)
                else:
                    li = b * N_KE + min(i, N_KE - 1)
                    if xctx:
                        bit = _xcode(ac, buf, dec, want, _counter_p(LP, li), pv, FW, frow, sq, st, lr, rt, XB, XP,
                                     XN, XW, XI, XA)
                    else:
                        bit = _final_code(ac, buf, dec, want, _counter_p(LP, li), pv, FW, frow, sq, st, lr)
                    _counter_update(LP, LN, li, bit, rt, limit)
                mag = (mag << 1) | bit
            if dec:
                m = mag
                e = m if s == 0 else -m - 1
            ae = abs(e)
            if dec:
                val = xp + e
                if val < lo[c] or val > hi[c]:
                    return ERR_RANGE
                y[t, c] = val
            yv = _value(tab, ntab, y[t, c])
            if res.shape[0] > 0:
                res[t, c] = e
                if res.shape[1] >= 2 * C:
                    res[t, C + c] = ac[3]
                if res.shape[1] >= 3 * C:
                    res[t, 2 * C + c] = FW[3 * VM_ROWS]
                if res.shape[1] == 4 * C:
                    res[t, 3 * C + c] = XW[XW.shape[0] - 1]
            chk = (chk * 0x2F0B3A49 + y[t, c] + 1) & 0xFFFFFFFF

            if vmod:  # the value model: expected counts (f / Z), observed count, histogram
                inv = (np.int64(1) << 48) // max(np.int64(1), vtot >> 12)
                fh = FH[c, kb, lov - xp + VM_E:hiv - xp + VM_E + 1]
                xv = EXPV[c, lov - lo[c]:hiv - lo[c] + 1]
                for j in range(hiv - lov + 1):
                    xv[j] += ((fh[j] + 1) * inv) >> 24
                OBS[c, y[t, c] - lo[c]] += np.int64(1) << 24
                ev = _clamp(e, -VM_E, VM_E) + VM_E
                FH[c, kb, ev] += 32
                FT[c, kb] += 32
                if FT[c, kb] > (1 << 20):
                    tot_ = np.int64(0)
                    for j in range(2 * VM_E + 1):
                        FH[c, kb, j] >>= 1
                        tot_ += FH[c, kb, j]
                    FT[c, kb] = tot_
                vcount[c] += 1
                if vcount[c] % VM_HALVE == 0:
                    for j in range(VR):
                        OBS[c, j] >>= 1
                        EXPV[c, j] >>= 1
                if vcount[c] % 16 == 0:  # g of the window's symbols
                    ob = OBS[c, lov - lo[c]:hiv - lo[c] + 1]
                    xv = EXPV[c, lov - lo[c]:hiv - lo[c] + 1]
                    gv = GV[c, lov - lo[c]:hiv - lo[c] + 1]
                    for j in range(hiv - lov + 1):
                        gv[j] = _clamp(((ob[j] + VM_PRIOR) << 12) // (xv[j] + VM_PRIOR), 256, 65535)

            if xctx:  # the successor lists: the value counted in its contexts' lists
                for k in range(XL_N):
                    yt = y[t, c] - LO[k]
                    sl = LK[k] >> (32 - lbits)
                    bs = sl * XL_K
                    if LT[sl] != LK[k]:
                        LT[sl] = LK[k]
                        for j in range(XL_K):
                            LV[bs + j] = 0
                            LC[bs + j] = 0
                    jm = 0
                    hit = -1
                    for j in range(XL_K):
                        if LC[bs + j] > 0 and LV[bs + j] == yt:
                            hit = j
                        if LC[bs + j] < LC[bs + jm]:
                            jm = j
                    if hit < 0:
                        LV[bs + jm] = yt
                        LC[bs + jm] = 1
                    else:
                        LC[bs + hit] += 2
                        if LC[bs + hit] > XL_CAP:
                            for j in range(XL_K):
                                LC[bs + j] >>= 1
            # ---- updates: coder state
            eprev[c] = e
            mA[c] = A + (((min(ae, np.int64(1) << 40) << 4) - A) >> 4)
            mB[c] += ((min(ae, np.int64(1) << 40) << 4) - mB[c]) >> 7
            e2[c] = e1[c]
            e1[c] = e
            # ---- predictor updates (Q4 of v)
            V = ((yv - offc) << 4) >> gs
            vt = (yv - offc) >> gs
            if use_bias:
                lim = (mA[c] >> gs) + 16  # |error| clamped to the recent mean |e| (Q4 of v)
                eb = _clamp(V - Pm, -lim, lim) << 8
                for k in range(3):
                    bk = bix[k]
                    nb_ = biasn[c, bk]
                    bias[c, bk] += ((eb - bias[c, bk]) * rt[nb_]) >> 16
                    if nb_ < 60:
                        biasn[c, bk] = nb_ + 1
            # the OLS mix
            eq = V - Q
            es1[c] += (min(abs(V - P1), np.int64(1) << 24) - es1[c]) >> 1
            es2[c] += (min(abs(V - P2), np.int64(1) << 24) - es2[c]) >> 1
            dq = P2 - P1
            if eq != 0 and dq != 0:
                g[c] = _clamp(g[c] + (16 if (eq > 0) == (dq > 0) else -16), -1024, 5120)
            # cascade: stage inputs and NLMS updates
            s_in = _clamp(V - Q, -(1 << 22), 1 << 22)
            ef = V - Pf
            if mixb:
                ef = V - Pl
                for k in range(MIXB_K):
                    EB[c, k] += ((min(abs(V - PE[k]), np.int64(1) << 30) << 4) - EB[c, k]) >> MIXB_RATE
            for k in range(3):
                nk = ntaps[k]
                if nk == 0:
                    continue
                hp = hpos[c, k]
                ek = s_in - q[k]
                pw = hpow[c, k]
                den = pw
                if powr == 1:  # Sac's: the power weighted towards the recent past, (1 + j)**-0.8
                    wsum = np.int64(0)
                    hv = H[c, k, hp - nk:hp]
                    for j in range(nk):
                        sj = np.int64(hv[nk - 1 - j])
                        wsum += ((sj * sj) >> 8) * ptab[j]
                    den = (nk * (wsum >> 16)) // psum[k]
                elif powr > 0:  # the input's power from its recent past: nk times a running mean
                    den = nk * hema[c, k]
                    if powr >= 16:
                        den = max(den, pw)
                f = _clamp(((ek * mus[k]) << 20) // (den + 4096), -(1 << 31), 1 << 31)
                if nlmsq:
                    _nlms_step_q20(W[c, k, :nk], H[c, k, hp - nk:hp], nk, f)
                else:
                    _nlms_step(W[c, k, :nk], H[c, k, hp - nk:hp], nk, f)
                old = np.int64(H[c, k, hp - nk])
                hpow[c, k] = pw + ((s_in * s_in) >> 8) - ((old * old) >> 8)
                hema[c, k] += (((s_in * s_in) >> 8) - hema[c, k]) >> (powr & 15)
                H[c, k, hp] = np.int32(s_in)
                hp += 1
                if hp == HW:
                    for j in range(nk):
                        H[c, k, j] = H[c, k, HW - nk + j]
                    hp = nk
                hpos[c, k] = hp
                s_in = _clamp(ek, -(1 << 22), 1 << 22)
            if fmix:
                ef = V - Pn
                _ols_add(R3[hs], b3[hs], 7, u3, _clamp(V - P1, -U3, U3), fw3, ex3[hs])
                if ph3 == T3 - 1:
                    for h in range(4 * c, 4 * c + 4):
                        ex3[h] = _ols_rescale(R3[h], b3[h], 7, ex3[h], exfloor)
                cnt3[hs] += 1
                if cnt3[hs] & 1 == 0:  # every other update of this state's sums
                    _ols_solve(R3[hs], b3[hs], 7, reg, w3[hs], wA, wL, wd, wz)
            if mixmu > 0:
                fm = _clamp(((ef * mixmu) << 16) // qpow, -(1 << 31), 1 << 31)
                rnd = (np.int64(1) << 23) if nlmsq else np.int64(0)  # (nlmsq: rounded to nearest)
                for k in range(6 if use_bias else 3):
                    mixw[c, k] = _clamp(mixw[c, k] + ((fm * q[k] + rnd) >> 24), -8192, 16384)
                if p3 > 0:
                    mixw[c, 6] = _clamp(mixw[c, 6] + ((fm * q[6]) >> 24), -8192, 16384)
            # OLS sums
            if dim1 > 0:
                cw = max(1, (_irls(es1[c], irls) * fw1) >> 12)
                _ols_add(R1[c], b1[c], dim1, a, vt, cw, ex1[c])
                if ph1 == T1 - 1:
                    ex1[c] = _ols_rescale(R1[c], b1[c], dim1, ex1[c], exfloor)
                if kc1 == K1 - 1:
                    _ols_solve(R1[c], b1[c], dim1, reg, w1[c], wA, wL, wd, wz)
            if p2 > 0 and lblock == 0:
                cw = max(1, (_irls(es2[c], irls) * fw2) >> 12)
                _ols_add(R2[c], b2[c], p2, own, vt, cw, ex2[c])
                if ph2 == T2 - 1:
                    ex2[c] = _ols_rescale(R2[c], b2[c], p2, ex2[c], exfloor)
                if kc2 == K2 - 1:
                    _ols_solve(R2[c], b2[c], p2, reg, w2[c], wA, wL, wd, wz)
            if p3 > 0:
                es4[c] += (min(abs(V - P3), np.int64(1) << 24) - es4[c]) >> 1
                cw = max(1, (_irls(es4[c], irls) * fw4) >> 12)
                _ols_add(R4[c], b4[c], p3, own, vt, cw, ex4[c])
                if ph4 == T4 - 1:
                    ex4[c] = _ols_rescale(R4[c], b4[c], p3, ex4[c], exfloor)
                if kc3 == K3 - 1:
                    _ols_solve(R4[c], b4[c], p3, reg, w4[c], wA, wL, wd, wz)
            vmean[c] += ((V << 4) - vmean[c]) >> 9
            hrun[c] = hrun[c] + 1 if V == vq1[c] else 0
            vq2[c] = vq1[c]
            vq1[c] = V
            if nown > 0:  # the value joins the channel's past
                hp = hpo[c]
                if hp == 0:
                    for j in range(nown - 1):
                        OH[c, HIST_PAD + 1 + j] = OH[c, j]
                    hp = HIST_PAD + 1
                hp -= 1
                OH[c, hp] = np.int32(vt)
                hpo[c] = hp

    # ---- the end: 16 check bits, then the flush
    for j in range(16 if n * C > 0 else 0):
        yc = (chk >> (15 - j)) & 1
        bit = _code(ac, buf, 2048, yc, dec)
        if bit != yc:
            return ERR_CHECK
    x1 = ac[0]
    x2 = ac[1]
    kk = 4
    v = x1
    for k in range(5):
        sh = 32 - 8 * k
        vv = ((x1 + (np.int64(1) << sh) - 1) >> sh) << sh
        if vv <= x2:
            kk = k
            v = vv
            break
    pos = ac[3]
    if not dec:
        for j in range(kk):
            if pos < buf.shape[0]:
                buf[pos] = np.uint8((v >> (24 - 8 * j)) & 255)
            pos += 1
        return pos if pos <= buf.shape[0] else -1
    if pos + kk != buf.shape[0]:
        return ERR_LENGTH
    return OK

