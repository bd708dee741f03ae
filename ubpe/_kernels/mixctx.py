"""The exact-value contexts of the level-3 signal coder's version 6 (``ubpe.level3``, issue 29:
``xctx`` = 1, or 2 for their lighter set): their state and the steps that ``mixsignal.run`` takes
with them. There is one coding loop, ``mixsignal.run``; its last argument is None for versions 1 to
5 and this module's state (``new_state``) for a version-6 payload with ``xctx`` = 1 or 2. numba
compiles ``run`` (and its ``_mix_code``/``_mix2_code``) once per kind of that argument; where it is
None, numba's dead-branch pruning drops the branches that call this module before typing, so
version 5's kernel is the loop without any of its steps (``mixsignal``'s docstring).
This text, ``mixsignal``'s docstring and the code are normative for a version-6 payload with
``xctx`` = 1 or 2: everything of ``mixsignal`` (prediction, the residual coder, the value model, the
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
integer; the state starts empty in every payload (at most 26 MiB).

``xctx`` = 2 (``XC_LISTS``): the same without (a), the hashed contexts, and with three of the
lists, 0, 2 and 3 (``XL_LIGHT``: the last symbol's, the last two steps', the last step's; lists 1
and 4 read empty, their inputs -1, and count nothing): xb = 0 (the list model's adaptive
probabilities start at index 1), the mixers read po, the lists' inputs and the bias (the hashed
contexts' weights are neither read nor learned; the second APM's rows are the decision rows, list
1 being empty). Everything else is as with ``xctx`` = 1; the state is about half (its largest
table, 2**22 probabilities and counts, is gone), and the coder 1.3 to 1.6 times as fast where
the contexts' table outgrows the processor's caches, about as small on weather readings
(benchmarks/results/level3-xctx-speed.md).
"""

from __future__ import annotations

from collections import namedtuple

import numpy as np

from . import njit
from .intrinsics import prefetch
from .mixcode import VM_ROWS, _bitlen, _clamp, _code, _cost16, _counter_p, _counter_update, _tables, _vlearn, _vmix, _vx1

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


#: The exact-value contexts' state, ``mixsignal.run``'s last argument for a version-6 payload with
#: ``xctx`` = 1 or 2 (``new_state``; its arrays change as the payload is coded):
#: XB int64 (7 + XNI): [0] lb (2**lb successor lists), [1] the decision's key, [2:2 + XC_N] the
#: hashed contexts' bases of the value, [2 + XC_N:2 + XNI] the lists' inputs of the decision
#: (indices into XP past 2**xb, -1: none), [2 + XNI] and [3 + XNI] the count buckets of lists 0 and
#: 2, [4 + XNI] xb (2**xb hashed contexts; 0 with ``xctx`` = 2: none, one unused entry), [5 + XNI]
#: the first input the final stage reads (0, or XC_N with ``xctx`` = 2: the lists' alone), [6 + XNI]
#: the lists kept (bit k: list k; XL_ALL, or XL_LIGHT with ``xctx`` = 2: the others read empty
#: and count nothing); XP
#: uint16 and XN uint8 (2**xb + XL_SIZE) the adaptive probabilities (Q16) and their counts; XW int64
#: (2 VM_ROWS XC_CONF XC_W + 1) the two mixers' weights (Q16) and, last, the estimated saving (1/16
#: bits; the encoder's alone: decoding leaves it 0); XI int64 (2 XNI) the inputs' indices and
#: stretches of a decision; XA int32 (33 XA_ROWS) the APMs; LT int64 (2**lb) each list's key; LV
#: int64 and LC int32 (2**lb XL_K) the lists' symbols and counts; LB, LK, LO int64 (XL_N) the
#: value's lists: base in LV (-1: none), key, and the symbol the list's symbols are relative to (0
#: or the last symbol); GV, GC int64 (XL_N XL_K) and GN int64 (XL_N) a copy of the value's lists,
#: their entries of a count > 0 only (list k's GN[k] at k XL_K), symbols absolute: what every
#: decision of the value scans (the lists change only once the value is coded, ``_xcount``).
XState = namedtuple("XState", "XB XP XN XW XI XA LT LV LC LB LK LO GV GC GN")

#: The part of the state that a decision's final stage (``_xcode``) reads and updates: the arrays
#: ``mixsignal``'s per-decision coders (``_mix_code``, ``_mix2_code``) take instead of all of
#: XState's (``code_state``), which they would receive flattened, 7 words an array, at every call.
XCode = namedtuple("XCode", "XB XP XN XW XI XA")
#: The part of the state that a decision's list inputs (``_xlist``) read and narrow.
XList = namedtuple("XList", "XB GV GC GN")

XC_FULL = 1  #: ``xctx`` = 1: the exact-value contexts, hashed contexts and successor lists
XC_LISTS = 2  #: ``xctx`` = 2: three of the successor lists alone (no hashed contexts: no 2**22-entry table)
XL_ALL = 0b11111  #: the successor lists ``xctx`` = 1 keeps (bit k: list k)
XL_LIGHT = 0b01101  #: those ``xctx`` = 2 keeps: lists 0, 2 and 3 (the last symbol, the last two steps, the last step)


def state_header(n: int, C: int, xctx: int) -> np.ndarray:
    """``new_state(n, C, xctx).XB`` (int64, ``7 + XNI``): the lists' table bits at 0, the hashed
    contexts' table bits at ``4 + XNI`` (0 with XC_LISTS), the contexts in use and the lists'
    set after them; the rest 0. ``xctx`` XC_FULL or XC_LISTS (not checked here)."""
    nbits = (n * C).bit_length()
    XB = np.zeros(7 + XNI, np.int64)
    XB[6 + XNI] = XL_ALL if xctx == XC_FULL else XL_LIGHT
    XB[0] = min(XL_BITS, max(8, nbits + 2))
    XB[4 + XNI] = min(XC_BITS, max(12, nbits + 6)) if xctx == XC_FULL else 0
    XB[5 + XNI] = 0 if xctx == XC_FULL else XC_N
    return XB


def new_state(n: int, C: int, xctx: int = XC_FULL) -> XState:
    """The exact-value contexts' state before any data, for n frames of C channels and ``xctx``
    (XC_FULL or XC_LISTS; its tables grow with n C: with XC_FULL 1.1 MiB below 64 values, 2 MiB at
    1 000, 26 MiB from 2**15 on; with XC_LISTS 0.6 MiB to 13 MiB)."""
    if xctx not in (XC_FULL, XC_LISTS):
        raise ValueError(f"xctx must be {XC_FULL} or {XC_LISTS}, got {xctx}")
    XB = state_header(n, C, xctx)
    xbits, lbits = int(XB[4 + XNI]), int(XB[0])
    sq = _tables()[0]
    apm = np.array([sq[min(max((j - 16) * 128, -2047), 2047) + 2047] * 16 for j in range(33)], np.int32)
    XW = np.zeros(2 * VM_ROWS * XC_CONF * XC_W + 1, np.int64)
    rows = XW[:-1].reshape(-1, XC_W)
    rows[:, 0] = 65536
    rows[:, 1 + XC_N:1 + XNI] = XC_W0
    size = (1 << xbits) + XL_SIZE
    return XState(XB, np.full(size, 32768, np.uint16), np.zeros(size, np.uint8), XW, np.zeros(2 * XNI, np.int64),
                  np.tile(apm, XA_ROWS), np.full(1 << lbits, -1, np.int64), np.zeros((1 << lbits) * XL_K, np.int64),
                  np.zeros((1 << lbits) * XL_K, np.int32), np.full(XL_N, -1, np.int64), np.zeros(XL_N, np.int64),
                  np.zeros(XL_N, np.int64), np.zeros(XL_N * XL_K, np.int64), np.zeros(XL_N * XL_K, np.int64),
                  np.zeros(XL_N, np.int64))


@njit(cache=True, nogil=True)
def code_state(X):
    """``XCode`` of the state X (the same arrays), or None where X is None (versions 1 to 5: numba
    prunes the branch by X's type, so that the result's type is None's too)."""
    if X is None:
        return None
    return XCode(X.XB, X.XP, X.XN, X.XW, X.XI, X.XA)


@njit(cache=True, nogil=True)
def list_state(X):
    """``XList`` of the state X (the same arrays), or None where X is None (as ``code_state``)."""
    if X is None:
        return None
    return XList(X.XB, X.GV, X.GC, X.GN)


@njit(cache=True, nogil=True, inline="always")
def _xmix(h, v):
    """A 32-bit hash of a 32-bit hash h and an integer v (its low 32 bits)."""
    h = ((h ^ (v & 0xFFFFFFFF)) * XC_MUL) & 0xFFFFFFFF
    return h ^ (h >> 15)


@njit(cache=True, nogil=True, _nrt=False)
def _xlist(X, key, kind, xp, s, a1, b1, a0, b0):
    """A decision's key (XB[1] = key) and the list model's inputs: the decision's set of values
    (magnitudes [a0, b0] on side s: values xp + m, or xp - 1 - m; s = 2: values [a0, b0]) and its "yes" part
    ([a1, b1]); for each successor list k (base LB[k], < 0: none) the counts in the set and in
    its "yes" part, as the index of an adaptive probability (XB[2 + XC_N + k]; -1: no count in
    the set) by the set's count bucket and the share of the "yes" part in 32nds; XB[2 + XNI] and
    XB[3 + XNI] the count buckets of lists 0 and 2 (the final mixers' rows). The counts come from
    the value's copy of its lists (GV, GC, GN: ``_xbases``), which a bit length's or a low bit's
    decision (kind 1, 2) narrows to its set: the yes part lies in the set, and every later decision
    of the value asks about a part of the set this one's answer leaves (the sign's, kind 0, may
    not: the side's magnitudes can reach past the channel's range), so the counts are those of the
    whole lists."""
    XB, GV, GC, GN = X.XB, X.GV, X.GC, X.GN
    XB[1] = key
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
        if GN[k] > 0:
            mt = np.int64(0)
            m1 = np.int64(0)
            g = k * XL_K
            for j in range(k * XL_K, k * XL_K + GN[k]):  # (without branches: the values' order is data)
                v = GV[j]
                cj = GC[j]
                i0 = np.int64(v >= v0) & np.int64(v <= w0)  # v in the set
                i1 = i0 & np.int64(v >= v1) & np.int64(v <= w1)  # v in its "yes" part
                mt += cj & -i0
                m1 += cj & -i1
                if kind > 0:  # (a bit length's or a low bit's set holds every later one of the value)
                    GV[g] = v  # (g <= j: a slot already read; kept where v is in the set)
                    GC[g] = cj
                    g += i0
            if kind > 0:
                GN[k] = g - k * XL_K
            if mt > 0:
                nb = min(_bitlen(mt), XL_NB - 1)
                r = (m1 * 32 + (mt >> 1)) // mt
                XB[2 + XC_N + k] = (1 << XB[4 + XNI]) + ((k * XL_NB + nb) * 33 + r) * 3 + kind
        if nb == 0:
            XB[2 + XC_N + k] = -1
        if k == 0:
            XB[2 + XNI] = nb
        if k == 2:
            XB[3 + XNI] = nb


@njit(cache=True, nogil=True, inline="always")
def _xcode(ac, buf, dec, want, pf, pv, FW, frow, sq, st, lr, rt, X):
    """Code a bit with the coder's probability pf, or with the value model's mix (``_final_code``:
    pv > 0), that probability po refined by the exact-value contexts (state X, ``XState`` or its ``XCode``): XC_N
    adaptive probabilities (XP, Q16; counts XN) at hashes of the value's bases XB[2:2 + XC_N] and
    the decision's key XB[1], mixed with po in the stretch domain by the weights XW[row:row + XC_W]
    (Q16; row by the decision row frow / 3 and the order-1 context's count bucket), learned from
    its error. XW[-1] accumulates the cost of po minus that of the coded probability (1/16 bits;
    an estimate for the encoder's choice)."""
    XB, XP, XN, XW, XI, XA = X.XB, X.XP, X.XN, X.XW, X.XI, X.XA
    po = pf
    x0 = np.int64(0)
    x1 = np.int64(0)
    if pv > 0:
        x0 = st[pf]
        x1 = _vx1(pf, pv, st)
        po = _vmix(x0, x1, FW, frow, sq)
    nk = XB[1]
    sh = 32 - XB[4 + XNI]
    NI = XNI
    k0 = XB[5 + XNI]  # the first input read: 0, or XC_N without the hashed contexts (xctx = 2)
    for k in range(k0, XC_N):
        XI[k] = _xmix(XB[2 + k], nk) >> sh
    for k in range(XL_N):
        XI[XC_N + k] = XB[2 + XC_N + k]
    row = ((frow // 3) * XC_CONF + XB[2 + NI]) * XC_W
    row2 = ((VM_ROWS + frow // 3) * XC_CONF + XB[3 + NI]) * XC_W
    xs0 = st[po]
    dot = XW[row] * xs0 + XW[row + XC_W - 1] * 256
    dot2 = XW[row2] * xs0 + XW[row2 + XC_W - 1] * 256
    for k in range(k0, NI):
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
    if not dec:  # (the encoder's estimate, no part of the bytes)
        XW[XW.shape[0] - 1] += _cost16(po, bit) - _cost16(p, bit)
    err = ((bit << 12) - sq[dot + 2047]) * lr
    err2 = ((bit << 12) - sq[dot2 + 2047]) * lr
    XW[row] += (xs0 * err) >> XC_SH
    XW[row2] += (xs0 * err2) >> XC_SH
    for k in range(k0, NI):
        XW[row + 1 + k] += (XI[NI + k] * err) >> XC_SH
        XW[row2 + 1 + k] += (XI[NI + k] * err2) >> XC_SH
    XW[row + XC_W - 1] += (256 * err) >> XC_SH
    XW[row2 + XC_W - 1] += (256 * err2) >> XC_SH
    for k in range(k0, NI):
        if XI[k] >= 0:
            _counter_update(XP, XN, XI[k], bit, rt, XC_LIMIT)
    if pv > 0:  # the value model's mix learns as in _final_code
        _vlearn(x0, x1, pf, po, bit, FW, frow, lr)
    return bit


@njit(cache=True, nogil=True, _nrt=False)
def _xbases(X, y, t, c, xp):
    """The value's hashed contexts' bases and successor lists (y[t, c] about to be coded with the
    symbol xp predicted): the last values of the channel, exactly, and xp's offset from the last."""
    XB, LT, LB, LK, LO = X.XB, X.LT, X.LB, X.LK, X.LO
    C = y.shape[1]
    lbits = XB[0]
    y1 = y[t - 1, c] if t >= 1 else np.int64(0)
    y2 = y[t - 2, c] if t >= 2 else np.int64(0)
    y3 = y[t - 3, c] if t >= 3 else np.int64(0)
    keep = XB[6 + XNI]
    # (what a set does not read is not computed, nor its lists' keys looked up in LT: with xctx = 2
    # the hashed contexts' bases, which only _xcode's inputs before XB[5 + XNI] read, and lists 1, 4)
    if XB[5 + XNI] == 0:
        h0 = _xmix(_xmix(np.int64(c + 1), xp - y1), 0x100)
        XB[2] = _xmix(h0, y1)
        XB[3] = _xmix(_xmix(h0 ^ 0x5555, y1), y2)
        XB[4] = _xmix(_xmix(h0 ^ 0xAAAA, y1 - y2), y2 - y3)
    LK[0] = _xmix(_xmix(np.int64(c + 1), 0x200), y1)
    if (keep >> 1) & 1 != 0:
        LK[1] = _xmix(LK[0], y2)
    LK[2] = _xmix(_xmix(_xmix(np.int64(c + 1), 0x300), y1 - y2), y2 - y3)
    LK[3] = _xmix(_xmix(np.int64(c + 1), 0x400), y1 - y2)
    if (keep >> 4) & 1 != 0:
        yn = y[t, c - 1] if c > 0 else (y[t - 1, C - 1] if t >= 1 and C > 1 else y2)
        LK[4] = _xmix(_xmix(LK[0], 0x600), yn)
    LO[2] = y1
    LO[3] = y1
    LV, LC, GV, GC, GN = X.LV, X.LC, X.GV, X.GC, X.GN
    for k in range(XL_N):
        sl = LK[k] >> (32 - lbits)
        LB[k] = sl * XL_K if (keep >> k) & 1 != 0 and LT[sl] == LK[k] else -1
        g = k * XL_K
        if LB[k] >= 0:
            o = LO[k]
            bs = LB[k]
            for j in range(XL_K):  # (without branches; g <= k XL_K + j: a slot already read or this one)
                cj = np.int64(LC[bs + j])
                GV[g] = LV[bs + j] + o
                GC[g] = cj
                g += np.int64(cj > 0)
        GN[k] = g - k * XL_K


@njit(cache=True, nogil=True, _nrt=False)
def _xprefetch(X, y, t, c):
    """A hint, no part of the model: fetch into the cache the successor lists (LT, LV, LC) of the
    value y[t, c] that ``_xbases`` and ``_xcount`` will read and write (the lists kept; t < y's
    frames), by their keys as ``_xbases`` computes them: every symbol they read is coded already
    when ``run`` calls this after the value before (t, c - 1, or t - 1, C - 1). The lists are 2**lb
    slots spread over up to 12 MiB: a value's lists would otherwise wait on memory
    (results/level3-floor-6.md)."""
    XB, LT, LV, LC = X.XB, X.LT, X.LV, X.LC
    C = y.shape[1]
    if t >= y.shape[0]:
        return
    lbits = XB[0]
    keep = XB[6 + XNI]
    y1 = y[t - 1, c] if t >= 1 else np.int64(0)
    y2 = y[t - 2, c] if t >= 2 else np.int64(0)
    y3 = y[t - 3, c] if t >= 3 else np.int64(0)
    k0 = _xmix(_xmix(np.int64(c + 1), 0x200), y1)
    for k in range(XL_N):
        if (keep >> k) & 1 == 0:
            continue
        if k == 0:
            key = k0
        elif k == 1:
            key = _xmix(k0, y2)
        elif k == 2:
            key = _xmix(_xmix(_xmix(np.int64(c + 1), 0x300), y1 - y2), y2 - y3)
        elif k == 3:
            key = _xmix(_xmix(np.int64(c + 1), 0x400), y1 - y2)
        else:
            yn = y[t, c - 1] if c > 0 else (y[t - 1, C - 1] if t >= 1 and C > 1 else y2)
            key = _xmix(_xmix(k0, 0x600), yn)
        sl = key >> (32 - lbits)
        prefetch(LT, sl)
        bs = sl * XL_K
        prefetch(LV, bs)  # (a list's 16 symbols span 128 bytes: up to three cache lines)
        prefetch(LV, bs + XL_K // 2)
        prefetch(LV, bs + XL_K - 1)
        prefetch(LC, bs)
        prefetch(LC, bs + XL_K - 1)


@njit(cache=True, nogil=True, _nrt=False)
def _xcount(X, v):
    """The successor lists after a value: the symbol v counted in the lists of its contexts."""
    LT, LV, LC, LK, LO = X.LT, X.LV, X.LC, X.LK, X.LO
    lbits = X.XB[0]
    for k in range(XL_N):
        if (X.XB[6 + XNI] >> k) & 1 == 0:  # (a list the set does not keep)
            continue
        yt = v - LO[k]
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
