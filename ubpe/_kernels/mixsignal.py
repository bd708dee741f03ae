"""Numba kernel of the level-3 signal coder (``ubpe.level3``): prediction as a mix, residuals by
context mixing. Its binary coder and primitives (tables, counters, the arithmetic coder, a bit's
cost, the value model's final mix) are ``mixcode``'s, which ``mixctx`` shares (the numba cache is
keyed by every kernel file, ``ubpe/_cache.py``). This text, ``mixcode`` and the code are normative
for the level-3 payload.

Every operation that decides a bit is integer (int64 with wrap-free bounds stated at each step),
so encoder and decoder compute the same predictions on every machine. The kernel is total: it
never raises and never indexes outside its arrays; corrupt input ends decoding with a negative
status. Its caller (``ubpe.level3``) validates every header field before it runs.

Signal. ``y`` int64 (n, C): symbols, per channel c in ``[lo[c], hi[c]]`` (the values minus their
minimum, or with a value table ``tab`` indices into it: the value of a symbol is ``tab[y]``).
Channels are coded interleaved (frame by frame, channel 0 first), so a channel's predictor sees
the other channels' past and, for channels before it, their current value. Working units:
``v = (value - off[c]) >> gs`` (off[c] the middle of the channel's values, gs a global shift
that keeps |v| <= 2**20); predictions carry 4 fractional bits of v ("Q4").

Prediction, per channel, each frame (prm = the parameter vector, ``PRM_*`` indices):

1. OLS1: least squares over the last ``p1`` values of the channel and, with ``cross`` = k > 0,
   the k nearest other channels (``lags`` of their values: from now when already coded, else from
   the one before; ``lags`` = ``xlags``, version 10, or two),
   fitted on a forgetting window: each frame adds its outer product with weight ``w (4096 +
   4096 (t mod T) / T) / 4096`` and every T frames the sums are halved (exponential forgetting
   in steps, T = ``_period(t1)``, up to 24 576 frames), w = ``_irls`` of the recent |error| (``irls`` > 0: weighted
   towards least absolute errors, after Sac), the sums int64 with a block exponent (kept in
   [2**40, 2**50]). Every ``k1`` frames the normal equations, normalized to a diagonal below
   2**30 and regularized by ``diag_max >> reg``, are solved by an integer LDL^T (L in Q20, the
   coefficients in Q24, every quantity clamped to its bound). With ``olsr`` = k > 0 (version 7),
   OLS1's and OLS3's solutions are then refined by up to k rounds against the sums at 46 bits
   (``_ols_solve_refined``: a round is kept only when the fit's squared error decreases).
1b. ``dcm`` = k > 0 (version 8): OLS1, OLS2 (not block LPC) and OLS3 fit the working values
   minus their channel's running mean dc (rounded to an integer v; the mean of the frames so far
   until 2**k of them, then exponential at rate 2**-k; channel k's own for OLS1's neighbour
   inputs), their predictions plus dc: the middle of a channel's range, the working zero, may
   lie far from its mean, and the least squares have no intercept.
2. OLS2: the same over the last ``p2`` own values with its own period and interval; or, with
   ``lpc`` = 1, block LPC in its place (forward-adaptive: each block's integer coefficients
   are stored, ``lord``/``lshift``/``lcoef``).
3. Q = P1 + g (P2 - P1) / 4096, g learned by sign-sign LMS in [-1024, 5120].
4. A cascade of up to 3 NLMS filters (``n1..n3`` taps, steps ``mu1..mu3`` / 4096, the input's
   power over the taps, or with ``powr`` from its recent past) on the residual of Q: stage k
   predicts its input from its past, its residual feeds stage k + 1. The tap weights are Q16,
   each update floored; with ``nlmsq`` = 1 (version 5) Q20, clamped to +-2**27, each update and
   each stage's prediction rounded to nearest, and the mixer's updates of step 5 rounded too
   (floored updates drift the weights towards -inf, most where many taps take small steps).
5. Pf = Q + sum m_k q_k over the stages' predictions and (``bias`` = 1) three bias estimates
   (the running mean error after the cascade in 18, 9 and 1 contexts), m (Q12) by NLMS.
5b. ``p3`` > 0 (version 2): OLS3, least squares over the last ``p3`` own values with its own
   period (``t4``) and interval (``k3``); its offset from Q is a seventh input of the mixer of
   step 5 (before the bias estimates), its distance from Pf a context of the residual coder.
5c. ``mixb`` = 1 (version 4): the mix Pl of step 5 blended with five fixed experts, the plain
   sum Q + q1 + q2 + q3 (+ OLS3's offset with ``p3``), Q + q1, Q, P1 + q1 + q2 + q3 and
   P2 + q1 + q2 + q3: each expert's running |error| a_k (Q8, rate 2**-MIXB_RATE; Pl's scaled by
   MIXB_FAV / 16) shifted so that the smallest lies in [2**7, 2**8), plus 1, capped at 4096,
   weighs w_k = min(2**40, 2**52 // a_k**4), and Pf = Pl + (sum w_k clamp(P_k - Pl, +-2**20)) //
   sum w_k (a soft choice of the stage structure the recent signal favours; the NLMS mixer
   still learns from Pl's error).
6. ``fmix`` = 1: Pf = P1 + sum w u instead, least squares over a short window (``t3``) of the
   offsets from P1 of P2, the mix above, the first stage, Q, the biases, a constant and the
   last value, one set of weights per hold state (frames since the value last changed: 0..3+).

The prediction (value units) is ``off + ((Pf << gs) + 8) >> 4`` clamped to the channel's
values; with a table, the symbol predicted is the index of the table's nearest value. The
residual e (symbols) is coded by binary decisions in a carry-less 32-bit arithmetic coder
(12-bit probabilities): first its sign (e < 0; impossible when the prediction is the lowest
symbol), then m = e or -e - 1: its bit length b in [0, bit_length(room on that side)] by steps
up or down from the bucket expected from the recent magnitudes, then the bits below b's
leading one. Each decision's probability is a gated mix of adaptive probabilities in
contexts (the fast and slow mean |e|, the long and short OLS's signed distance from Pf
relative to it, the last two residuals, the slope, the prediction's rounding), refined by an
APM (rate 2**-``apmr``); the contexts' state starts from a prior (``prior_signal``, coded once by
the caller). Version 2 (``p3`` > 0 or ``lvl`` = 1): the sign and bit-length mixers take two more
contexts, OLS3's distance from Pf and (``lvl``) the prediction's bucket among N_LV of its
channel's range, with their own weight rows, which start as version 1's with the new weights 0.
Version 3 (``vmod`` = 1, a symbol range of at most VM_MAX_RANGE): the value model, P(v) ~ f(v -
xp) g(v) over the symbols within 16 + 8 (slow mean |e|) of xp (at most VM_E), f a residual
histogram per octave of the slow mean |e| (counts halved past 2**20), g(v) in Q12 (1/16..16) the
symbol's observed count over the count the model expected (sum of f(v - xp) / Z; both halved
every VM_HALVE frames, recomputed over the window every 16 frames): every decision's
probability under it (its masses by prefix sums) and the coder's are mixed in the stretch
domain by a final mixer (weights per decision kind, starting as the coder's alone).
Version 9 (``vcls`` = k > 0, with ``vmod``; code classes: an ADC's unequal code widths follow a
pattern over the low bits): each symbol's value mod 2**k is its class, with observed and expected
counts of its own; a symbol's g starts from (is drawn towards, VM_CLS_PRIOR frames) its class's,
and each decision's value-model input is the coder's stretch plus st[P_fg] - st[P_f] (the
evidence of g alone, P_f the probability under f without g: ``_vcorr``, ``mixcode._vx1``); the
value model may then run on symbol ranges up to VM_CLS_RANGE (C times it at most VM_CLS_CELLS).
After the values, 16 check bits of a hash of the symbols seeded with ``chk0``, then the flush.
Version 6 with ``xctx`` = 1 (exact-value contexts after every decision's probability): ``mixctx``,
whose steps ``run`` takes where its last argument, their state, is not None. One loop serves every
version: numba compiles ``run``, ``_mix_code`` and ``_mix2_code`` once with None there (versions 1
to 5, and 6 with ``xctx`` = 0; its dead-branch pruning drops, before typing, every branch that an
``X is None`` test on that argument does not take: that kernel holds none of the contexts' steps)
and once with the state.

Memory: the coder's state (``new_tables``) 1.7 MiB whatever the input (the caller keeps one
more copy, the prior); per channel 8 (p1 + lags cross)**2 + 8 p2**2 + 8 p3**2 (+ 1.6 KiB with
``fmix``) bytes of least-squares state, 4 (2 (n1 + n2 + n3) + 3 * 256) bytes of NLMS state and
4 (max(p1, p2, p3, 32 with ``lpc``) + 256) bytes of the channel's own past (at most 1.3 KiB), at
most 105 KiB a channel with the largest parameters (21 KiB with the defaults; ``mixb``: 48 bytes more); with ``lpc``, 264
bytes a channel per 4096 frames of coefficients; with ``vmod``, 64 KiB + 24 (hi - lo + 1) bytes a
channel (at most 160 KiB; with ``vcls``, 24 (hi - lo + 1) bytes a channel, at most 12 MiB over the
channels, 4 KiB more for f's prefix sums and 16 bytes a class); with ``xctx``, ``mixctx.new_state``'s 1.1 MiB (below 64 values) to 26 MiB
(from 2**15 values; ``xctx`` = 2: 0.6 to 13 MiB); with ``olsr``, 84 KiB of the refinement's work arrays.
"""

from __future__ import annotations

import numpy as np

from . import mixctx as xc
from . import njit
from .mixcode import (  # noqa: F401  (the coder's primitives, normative with this module)
    N_SID,
    VC_OFF,
    VM_ROWS,
    _bitlen,
    _clamp,
    _code,
    _cost16,
    _counter_p,
    _counter_update,
    _tables,
    _vlearn,
    _vmix,
    _vx1,
)

OK = 0
ERR_RANGE = -1  #: a decoded value outside its channel's [lo, hi]
ERR_CHECK = -2  #: the check bits at the end differ
ERR_LENGTH = -3  #: the coder read past the payload by more than its flush

# parameter vector indices
PRM_P1, PRM_T1, PRM_K1, PRM_CROSS, PRM_P2, PRM_T2, PRM_K2, PRM_REG = 0, 1, 2, 3, 4, 5, 6, 7
PRM_N1, PRM_N2, PRM_N3, PRM_MU1, PRM_MU2, PRM_MU3, PRM_MIXMU, PRM_BIAS = 8, 9, 10, 11, 12, 13, 14, 15
PRM_LIMIT, PRM_LR, PRM_IRLS, PRM_POWR, PRM_FMIX, PRM_T3, PRM_LPC = 16, 17, 18, 19, 20, 21, 22
PRM_P3, PRM_T4, PRM_K3, PRM_APMR, PRM_LVL = 23, 24, 25, 26, 27  # added in version 2
PRM_VMOD = 28  # added in version 3
PRM_MIXB = 29  # added in version 4
PRM_NLMSQ = 30  # added in version 5
PRM_XCTX = 31  # added in version 6: ``run`` with ``mixctx``'s state (``run`` itself does not read it)
PRM_OLSR = 32  # added in version 7: rounds of refinement of OLS1's and OLS3's solve
PRM_DCM = 33  # added in version 8: the least squares on the values minus their running mean
PRM_VCLS = 34  # added in version 9: the value model's code classes (the values' low ``vcls`` bits)
PRM_XLAGS = 35  # added in version 10: the values OLS1 takes of each neighbour (0: two, versions 1 to 9)
N_PRM = 36
N_PRM_V9 = 35  #: parameters a version-9 header's mask covers; the rest read as 0 (version 9's model)
N_PRM_V8 = 34  #: parameters a version-8 header's mask covers; the rest read as 0 (version 8's model)
N_PRM_V7 = 33  #: parameters a version-7 header's mask covers; the rest read as 0 (version 7's model)
N_PRM_V6 = 32  #: parameters a version-6 header's mask covers; the rest read as 0 (version 6's model)
N_PRM_V5 = 31  #: parameters a version-5 header's mask covers; the rest read as 0 (version 5's model)
N_PRM_V4 = 30  #: parameters a version-4 header's mask covers; the rest read as 0 (version 4's model)
N_PRM_V3 = 29  #: parameters a version-3 header's mask covers; the rest read as 0 (version 3's model)
N_PRM_V2 = 28  #: parameters a version-2 header's mask covers; the rest read as 0 (version 2's model)
N_PRM_V1 = 23  #: parameters a version-1 header holds; the rest read as V1_TAIL (version 1's model)
V1_TAIL = (0, 0, 1, 6, 0)
XC_SETS = 2  #: ``xctx``'s largest value (1: ``mixctx.XC_FULL``, 2: ``mixctx.XC_LISTS``)
OLSR_MAX = 4  #: ``olsr``'s largest value (rounds of refinement)
DCM_MAX = 16  #: ``dcm``'s largest value (the running mean's rate 2**-dcm)
VCLS_MAX = 8  #: ``vcls``'s largest value (2**vcls code classes)
XLAGS_MAX = 16  #: ``xlags``' largest value (values of each neighbour in OLS1)
#: (low, high) bound of each parameter, checked by the caller
PRM_BOUNDS = ((0, 64), (0, 27), (1, 64), (0, 4), (0, 32), (0, 27), (1, 64), (6, 24),
              (0, 2048), (0, 256), (0, 64), (0, 4096), (0, 4096), (0, 4096), (0, 4096), (0, 1),
              (4, 255), (1, 32), (0, 24), (0, 31), (0, 1), (0, 19), (0, 1), (0, 32), (0, 27), (1, 64), (6, 8), (0, 1),
              (0, 1), (0, 1), (0, 1), (0, XC_SETS), (0, OLSR_MAX), (0, DCM_MAX), (0, VCLS_MAX), (0, XLAGS_MAX))
U3 = 1 << 18  #: the final least-squares mix's inputs are clamped to +-U3 (Q4)
MAX_DIM = 72  #: p1 + lags * cross (lags: ``xlags``, or 2 where it is 0), checked by the caller
#: Entries of the inputs vector the neighbour loop writes: p1 + 2 * lags * cross, at most MAX_DIM +
#: lags * cross (64 + 4 * 4 with two lags, 8 + 2 * 16 * 4 with XLAGS_MAX)
INPUT_SLOTS = MAX_DIM + 4 * XLAGS_MAX
HIST_PAD = 256  #: NLMS history buffers: taps + this, shifted back when full

N_KA = 192  #: fine log buckets of a magnitude (_flog)
N_REL = 48
N_KE = 42
N_MSEL = N_SID * 48


@njit(cache=True, nogil=True, inline="always")
def _flog(v):
    """A fine log bucket of v >= 0: 4 bit_length(v) + the two bits after the leading one
    (v itself below 4); < N_KA for v < 2**47."""
    if v < 4:
        return v
    b = _bitlen(v)
    r = 4 * b + ((v >> (b - 3)) & 3)
    return r if r < N_KA else N_KA - 1


@njit(cache=True, nogil=True, inline="always")
def _period(code):
    """The forgetting period T of a code in [0, 27]: (2 + (code & 1)) << (code >> 1), 2..24576 (the
    sums grow by at most T 2**46 between two rescales: below 2**62)."""
    return (2 + (code & 1)) << (code >> 1)


# ---------------------------------------------------------------- arithmetic coder


@njit(cache=True, nogil=True, inline="always")
def _relb(d, gs, kA):
    """A prediction's signed distance d (Q4 of v) from the final one, relative to the recent mean
    |e| (fine log kA): 16 for 0, else 16 +- (1 + one bucket an octave, 0..15) (0..32)."""
    if d == 0:
        return 16
    r = _clamp((_flog(abs(d) << gs) - kA + 24) >> 2, 0, 15)
    return 17 + r if d > 0 else 15 - r


@njit(cache=True, nogil=True, inline="always")
def _sgnb(e, A):
    """A past residual's sign and size against the recent mean |e| (A, Q4): 0..6, 3 for 0."""
    if e == 0:
        return 3
    a = abs(e) << 4
    lv = 1 if 2 * a <= A else (2 if a <= 2 * A else 3)
    return 3 + lv if e > 0 else 3 - lv


@njit(cache=True, nogil=True, inline="always")
def _sbk(e):
    """2 min(bit_length(|e|), 23) + (e < 0): 0..47."""
    return 2 * min(_bitlen(abs(e)), 23) + (1 if e < 0 else 0)


@njit(cache=True, nogil=True, _nrt=False)
def _final_code(ac, buf, dec, want, pf, pv, FW, frow, sq, st, lr):
    """Code a bit with the coder's probability pf, or (pv > 0: the value model's probability, version
    3) with a final mix of the stretches of pf and pv and a bias by the weights FW[frow:frow + 3]
    (Q16), learned from its error. FW[3 VM_ROWS] accumulates the cost of pf minus that of the
    final probability (1/16 bits; an estimate for the encoder's choice, no part of the bytes)."""
    if pv <= 0:
        return _code(ac, buf, pf, want, dec)
    x0 = st[pf]
    x1 = _vx1(pf, pv, st)
    p = _vmix(x0, x1, FW, frow, sq)
    bit = _code(ac, buf, p, want, dec)
    _vlearn(x0, x1, pf, p, bit, FW, frow, lr)
    return bit


@njit(cache=True, nogil=True, _nrt=False)
def _xfinal_code(ac, buf, dec, want, pf, pv, FW, frow, sq, st, lr, rt, X):
    """``mixctx._xcode`` (X: its ``XCode``) in a function of its own, compiled without NRT: inlined in
    ``run``, its arrays' reference counts would be taken and dropped at every call."""
    return xc._xcode(ac, buf, dec, want, pf, pv, FW, frow, sq, st, lr, rt, X)


@njit(cache=True, nogil=True, _nrt=False)
def _mix_code(ac, buf, dec, want, CP, CN, ci, nin, MW, msel, APM, abase, sq, st, rt, limit, lr, xs, ar,
              pv, FW, frow, X):
    """One binary decision from the adaptive probabilities CP[ci[:nin]]: their stretches and a
    bias mixed by the weights MW[msel:msel + nin + 1], refined by the APM at abase (33 knots;
    none when abase < 0: p = (mix + 3 apm) / 4), coded (``_final_code``, or with the exact-value
    contexts' state X, not None, ``mixctx._xcode``); then every part updated."""
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
    if X is None:  # (a branch numba removes before typing where X is None: versions 1 to 5)
        bit = _final_code(ac, buf, dec, want, pf, pv, FW, frow, sq, st, lr) if pv > 0 else _code(ac, buf, pf, want, dec)
    else:
        bit = xc._xcode(ac, buf, dec, want, pf, pv, FW, frow, sq, st, lr, rt, X)
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


@njit(cache=True, nogil=True, _nrt=False)
def _mix2_code(ac, buf, dec, want, CP, CN, ci, nin, MW, msel, msel2, APM, abase, abase2, sq, st, rt, limit, lr, xs,
               ar, pv, FW, frow, X):
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
    if X is None:  # (a branch numba removes before typing where X is None: versions 1 to 5)
        bit = _final_code(ac, buf, dec, want, pf, pv, FW, frow, sq, st, lr) if pv > 0 else _code(ac, buf, pf, want, dec)
    else:
        bit = xc._xcode(ac, buf, dec, want, pf, pv, FW, frow, sq, st, lr, rt, X)
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


#: 2**12 * 2**(-i / 16), i in [0, 16): the weights of _irls
_INV16 = np.array([4096, 3922, 3756, 3597, 3444, 3298, 3158, 3025, 2896, 2774, 2656, 2543, 2435, 2332,
                   2233, 2139], dtype=np.int64)


@njit(cache=True, nogil=True, inline="always")
def _irls(es, beta):
    """A least-squares sample's weight (Q12, 1..4096): about 4096 (es / 16 + 2)**(-beta / 16) for the
    running |error| es (Q4), a piecewise-linear log2 of 16 steps an octave (weighted least squares
    that approach least absolute errors as beta grows, after Sac's OLS)."""
    if beta == 0:
        return np.int64(4096)
    x = es + 32
    b = _bitlen(x)
    l16 = 16 * (b - 6) + ((x >> (b - 5)) & 15)  # 16 log2(x / 16) for x >= 32
    e16 = (l16 * beta) >> 4
    sh = e16 >> 4
    if sh >= 12:
        return np.int64(1)
    return max(np.int64(1), _INV16[e16 & 15] >> sh)


@njit(cache=True, nogil=True, inline="always")
def _dot32(w, h, n):
    """sum w[j] h[j] of two int32 vectors, in int64 (each product below 2**53)."""
    acc = np.int64(0)
    for j in range(n):
        acc += np.int64(w[j]) * np.int64(h[j])
    return acc


@njit(cache=True, nogil=True, inline="always")
def _nlms_step(w, h, n, f):
    """w[j] += (f h[j]) >> 24, clamped to +-2**30 (|f| <= 2**31, |h| <= 2**22)."""
    lim = np.int64(1) << 30
    for j in range(n):
        v = np.int64(w[j]) + ((f * np.int64(h[j])) >> 24)
        w[j] = np.int32(lim if v > lim else (-lim if v < -lim else v))


@njit(cache=True, nogil=True, inline="always")
def _nlms_step_q20(w, h, n, f):
    """w[j] += round(f h[j] / 2**20), clamped to +-2**27 (weights in Q20; |f| <= 2**31, |h| <=
    2**22: each product below 2**53, a dot product of 2048 taps below 2**61)."""
    lim = np.int64(1) << 27
    half = np.int64(1) << 19
    for j in range(n):
        v = np.int64(w[j]) + ((f * np.int64(h[j]) + half) >> 20)
        w[j] = np.int32(lim if v > lim else (-lim if v < -lim else v))


@njit(cache=True, nogil=True)
def _wpow(hv, pr, n):
    """sum over j < n of ((hv[j] ** 2) >> 8) pr[j]: the stage input's power weighted towards the
    recent past (``powr`` = 1; hv oldest first, pr the weights reversed; each term below 2**52)."""
    acc = np.int64(0)
    for j in range(n):
        s = np.int64(hv[j])
        acc += ((s * s) >> 8) * pr[j]
    return acc


@njit(cache=True, nogil=True, inline="always")
def _value(tab, ntab, sym):
    """The value of a symbol: tab[sym] with a table, else the symbol itself."""
    return tab[sym] if ntab > 0 else sym


@njit(cache=True, nogil=True)
def _nearest(tab, ilo, ihi, v):
    """The index in [ilo, ihi] of tab's value nearest v (the lower one on ties); tab increasing."""
    a = ilo
    b = ihi
    while a < b:  # the first index with tab >= v, or ihi
        mid = (a + b) >> 1
        if tab[mid] < v:
            a = mid + 1
        else:
            b = mid
    if a > ilo and v - tab[a - 1] <= tab[a] - v:
        return a - 1
    return a


# ---------------------------------------------------------------- least squares


@njit(cache=True, nogil=True, inline="always")
def _row_span(i, dim):
    """Entries of row i of a least-squares sum matrix that _ols_add and _ols_rescale update: the
    lower triangle's i + 1, rounded up to a multiple of 8 where the row has room (whole vectors,
    no scalar remainder). The entries past the diagonal mirror the lower triangle (the same
    products and shifts as their transposes: as bounded); nothing reads them."""
    n = (i + 8) & ~7
    return n if n <= dim else i + 1


@njit(cache=True, nogil=True, _nrt=False)
def _ols_add(R, bv, dim, a, target, cw, ex):
    """R[i, j] += (a_i cw a_j) >> ex (j < _row_span(i)), bv[i] += (a_i cw target) >> ex. |a|,
    |target| < 2**20, cw < 2**14 and ex >= 2 (bit_length(max |v|) - 16) keep each product below
    2**46 (a int32: the products vectorize)."""
    for i in range(dim):
        ui = np.int64(a[i]) * cw
        n = _row_span(i, dim)
        row = R[i * dim:i * dim + n]
        av = a[:n]
        if ex == 0:
            for j in range(n):
                row[j] += ui * np.int64(av[j])
            bv[i] += ui * target
        else:
            for j in range(n):
                row[j] += (ui * np.int64(av[j])) >> ex
            bv[i] += (ui * target) >> ex


@njit(cache=True, nogil=True, _nrt=False)
def _ols_rescale(R, bv, dim, ex, floor):
    """Halve the sums (the end of a forgetting period), then keep the largest diagonal entry in
    [2**40, 2**50] by shifting by 2 and moving the block exponent ex (returned; never below
    floor, the exponent that keeps a wide signal's products below 2**46). Rows as _ols_add's."""
    md = np.int64(0)
    for i in range(dim):
        row = R[i * dim:i * dim + _row_span(i, dim)]
        for j in range(row.shape[0]):
            row[j] >>= 1
        bv[i] >>= 1
        if R[i * dim + i] > md:
            md = R[i * dim + i]
    while md > (np.int64(1) << 50) and ex < 40:
        for i in range(dim):
            row = R[i * dim:i * dim + _row_span(i, dim)]
            for j in range(row.shape[0]):
                row[j] >>= 2
            bv[i] >>= 2
        md >>= 2
        ex += 2
    while md < (np.int64(1) << 40) and ex >= floor + 2 and md > 0:
        for i in range(dim):
            row = R[i * dim:i * dim + _row_span(i, dim)]
            for j in range(row.shape[0]):
                row[j] <<= 2
            bv[i] <<= 2
        md <<= 2
        ex -= 2
    return ex


@njit(cache=True, nogil=True, _nrt=False)
def _ols_solve(R, bv, dim, reg, w, A, L, dg, z):
    """Solve the regularized normal equations into w (Q24, clamped to +-2**31); w is kept when
    the factorization fails (a pivot <= 0). R (dim x dim, row-major, lower triangle), bv (dim);
    work arrays A (MAX_DIM**2 + MAX_DIM), L (MAX_DIM**2), dg, z (MAX_DIM)."""
    md = np.int64(0)
    for i in range(dim):
        if R[i * dim + i] > md:
            md = R[i * dim + i]
    if md <= 0:
        return
    s = _bitlen(md) - 30
    lim = np.int64(1) << 31
    # (the inner loops index row slices by their range variable: a computed index row + k
    # compiles to a wraparound select per element, which blocks vectorization)
    for i in range(dim):
        Ai = A[i * MAX_DIM:i * MAX_DIM + i + 1]
        Ri = R[i * dim:i * dim + i + 1]
        if s >= 0:
            for j in range(i + 1):
                Ai[j] = Ri[j] >> s
            z[i] = _clamp(bv[i] >> s, -lim, lim)
        else:
            for j in range(i + 1):
                Ai[j] = Ri[j] << (-s)
            z[i] = _clamp(bv[i] << (-s), -lim, lim)
    mdn = md >> s if s >= 0 else md << (-s)
    rg = (mdn >> reg) + 1
    for i in range(dim):
        A[i * MAX_DIM + i] += rg
    # LDL^T: A[i, j] (i >= j) becomes U_ij = L_ij d_j, L in Q20
    # (the sums over k < j run to j rounded up to a multiple of 8, whole vectors: L[j, k >= j]
    # is 0, as L's upper triangle and diagonal are never written, so the extra terms are 0)
    for j in range(dim):
        rj = j * MAX_DIM
        j8 = (j + 7) & ~7 if j >= 8 else j
        Lj = L[rj:rj + j8]
        for i in range(j, dim):
            Ai = A[i * MAX_DIM:i * MAX_DIM + j8 + 1]
            acc = Ai[j]
            for k in range(j8):
                acc -= (Lj[k] * Ai[k]) >> 20
            Ai[j] = _clamp(acc, -lim, lim)
        d = A[rj + j]
        if d <= 0:
            return
        dg[j] = d
        # L_ij = U_ij 2**20 / d by one reciprocal, inv = 2**62 // d split in 31-bit halves (a
        # division per entry cost more than the rest of the factorization)
        inv = (np.int64(1) << 62) // d
        ih = inv >> 31
        il = inv & 0x7FFFFFFF
        for i in range(j + 1, dim):
            u = A[i * MAX_DIM + j]
            lij = _clamp(((u * ih) >> 11) + ((u * il) >> 42), -lim, lim)
            L[i * MAX_DIM + j] = lij
            A[rj + i] = lij  # L transposed in A's unused upper triangle, for the back substitution
    # forward: L z' = b
    for i in range(dim):
        i8 = (i + 7) & ~7 if i >= 8 else i
        Li = L[i * MAX_DIM:i * MAX_DIM + i8]  # (0 past k = i - 1, as above)
        acc = z[i]
        for k in range(i8):
            acc -= (Li[k] * z[k]) >> 20
        z[i] = _clamp(acc, -lim, lim)
    # diagonal and back substitution: w = L^-T (z' / d), Q24
    wv = A[MAX_DIM * MAX_DIM:MAX_DIM * MAX_DIM + dim]  # the row after the matrix: w so far
    for i in range(dim - 1, -1, -1):
        acc = (z[i] << 24) // dg[i]
        Lc = A[i * MAX_DIM + i + 1:i * MAX_DIM + dim]  # L[i + 1:, i]
        wk = wv[i + 1:dim]
        for k in range(dim - 1 - i):
            acc -= (Lc[k] * wk[k]) >> 20
        wv[i] = _clamp(acc, -lim, lim)
    for i in range(dim):
        w[i] = wv[i]


@njit(cache=True, nogil=True, _nrt=False)
def _ldl_apply(A, L, dg, dim, z, q, out):
    """out = 2**q (A30)^-1 z by the factors ``_ols_solve`` left in A (L transposed in its upper
    triangle), L (Q20) and dg (the pivots, 30-bit scale): the forward substitution in z (|z| <
    2**31 in, clamped to +-2**31), then ``(z << q) // d`` and the back substitution, each entry
    clamped to +-2**31. q <= 31 keeps ``z << q`` below 2**62; |L| <= 2**31 each product below
    2**62. Returns whether an entry of out reached the clamp."""
    lim = np.int64(1) << 31
    for i in range(dim):
        i8 = (i + 7) & ~7 if i >= 8 else i
        Li = L[i * MAX_DIM:i * MAX_DIM + i8]  # (0 past k = i - 1: never written)
        acc = z[i]
        for k in range(i8):
            acc -= (Li[k] * z[k]) >> 20
        z[i] = _clamp(acc, -lim, lim)
    hit = False
    for i in range(dim - 1, -1, -1):
        acc = (z[i] << q) // dg[i]
        Lc = A[i * MAX_DIM + i + 1:i * MAX_DIM + dim]
        ok = out[i + 1:dim]
        for k in range(dim - 1 - i):
            acc -= (Lc[k] * ok[k]) >> 20
        if acc >= lim or acc <= -lim:
            hit = True
        out[i] = _clamp(acc, -lim, lim)
    return hit


@njit(cache=True, nogil=True, inline="always")
def _ols_residual(Rh, Rl, b, dim, w, r):
    """r = b - A w / 2**24 (46-bit scale; w Q24, |w| <= 2**31), A = Rh 2**23 + Rl full symmetric
    (rows MAX_DIM apart), |Rh| <= 2**24, 0 <= Rl < 2**23: each product below 2**55, a row's sum
    of at most MAX_DIM below 2**62; r clamped to +-2**60."""
    lim = np.int64(1) << 60
    for i in range(dim):
        rh = Rh[i * MAX_DIM:i * MAX_DIM + dim]
        rl = Rl[i * MAX_DIM:i * MAX_DIM + dim]
        sh = np.int64(0)
        sl = np.int64(0)
        for j in range(dim):
            sh += rh[j] * w[j]
            sl += rl[j] * w[j]
        r[i] = _clamp(b[i] - ((sh >> 1) + (sl >> 24)), -lim, lim)


@njit(cache=True, nogil=True, _nrt=False)
def _ols_solve_refined(R, bv, dim, reg, w, A, L, dg, z, rounds, W):
    """``_ols_solve`` (alone with rounds = 0), then up to ``rounds`` rounds of iterative refinement (``olsr``, version 7):
    the sums normalized to a diagonal below 2**46 (not 30), regularized alike (``diag_max >>
    reg`` + 1), split A = Rh 2**23 + Rl so that every product stays below 2**62; a round takes
    the residual r = b - A w at that scale, solves A dw = r with the 30-bit factors (r shifted
    so that |r| < 2**28, the correction in Q32, in Q24 where Q32 reaches the clamp) and keeps w
    + dw only when the fit's squared error decreases, ``dw . (r + r') > 0`` (r' the new
    residual; both scaled down so each product stays below 2**56), else keeps w and stops; it
    stops too when the residual is 0 or at least 2**43 (the 30-bit solve far off). A sustained
    tone's covariance has pivots 2**-20 of its diagonal and smaller, of which the 30-bit solve
    keeps a few bits: two rounds take its coefficients' error against float least squares from
    units to hundredths (results/level3-tonal.md). W: work (2 MAX_DIM**2 + 5 MAX_DIM) int64."""
    if rounds <= 0:
        _ols_solve(R, bv, dim, reg, w, A, L, dg, z)
        return
    dg[dim - 1] = 0  # (written, > 0, only when the factorization completes)
    _ols_solve(R, bv, dim, reg, w, A, L, dg, z)
    if dg[dim - 1] <= 0:  # the factorization failed: w kept, nothing to refine
        return
    md = np.int64(0)
    for i in range(dim):
        if R[i * dim + i] > md:
            md = R[i * dim + i]
    s = _bitlen(md) - 46
    MM = MAX_DIM * MAX_DIM
    Rh = W[:MM]
    Rl = W[MM:2 * MM]
    b = W[2 * MM:2 * MM + MAX_DIM]
    r0 = W[2 * MM + MAX_DIM:2 * MM + 2 * MAX_DIM]
    r1 = W[2 * MM + 2 * MAX_DIM:2 * MM + 3 * MAX_DIM]
    wc = W[2 * MM + 3 * MAX_DIM:2 * MM + 4 * MAX_DIM]
    dw = W[2 * MM + 4 * MAX_DIM:2 * MM + 5 * MAX_DIM]
    l47 = np.int64(1) << 47
    l52 = np.int64(1) << 52
    mdn = md >> s if s >= 0 else md << (-s)
    rg = (mdn >> reg) + 1
    for i in range(dim):
        for j in range(i + 1):
            v = R[i * dim + j]
            v = _clamp(v >> s if s >= 0 else v << (-s), -l47, l47)
            if j == i:
                v += rg
            h = v >> 23
            lo_ = v - (h << 23)
            Rh[i * MAX_DIM + j] = h
            Rl[i * MAX_DIM + j] = lo_
            Rh[j * MAX_DIM + i] = h
            Rl[j * MAX_DIM + i] = lo_
        v = bv[i]
        b[i] = _clamp(v >> s if s >= 0 else v << (-s), -l52, l52)
        wc[i] = w[i]
    lim = np.int64(1) << 31
    _ols_residual(Rh, Rl, b, dim, wc, r0)
    for _ in range(rounds):
        mr = np.int64(0)
        for i in range(dim):
            mr = max(mr, abs(r0[i]))
        if mr == 0:
            break
        sh = max(0, _bitlen(mr) - 28)
        if sh > 15:
            break
        for i in range(dim):
            z[i] = r0[i] >> sh
        q = sh + 16  # dw in Q32: A46 = A30 2**16, dw = A30^-1 z 2**sh / 2**16
        if _ldl_apply(A, L, dg, dim, z, q, dw):
            for i in range(dim):
                z[i] = r0[i] >> sh
            q -= 8  # dw in Q24
            _ldl_apply(A, L, dg, dim, z, q, dw)
        else:
            for i in range(dim):
                dw[i] = (dw[i] + 128) >> 8
        for i in range(dim):
            dw[i] = _clamp(wc[i] + dw[i], -lim, lim) - wc[i]  # the step taken, |dw| <= 2**32
            wc[i] += dw[i]
        _ols_residual(Rh, Rl, b, dim, wc, r1)
        mt = np.int64(0)
        mw = np.int64(0)
        for i in range(dim):
            mt = max(mt, abs(r0[i] + r1[i]))
            mw = max(mw, abs(dw[i]))
        st = max(0, _bitlen(mt) - 24)
        sd = max(0, _bitlen(mw) - 31)
        dot = np.int64(0)
        for i in range(dim):
            dot += ((r0[i] + r1[i]) >> st) * (dw[i] >> sd)
        if dot <= 0:  # the fit's squared error did not decrease: undone, the refinement ends
            for i in range(dim):
                wc[i] -= dw[i]
            break
        for i in range(dim):
            r0[i] = r1[i]
    for i in range(dim):
        w[i] = wc[i]


@njit(cache=True, nogil=True)
def ols_solve(R, bv, dim, reg, rounds):
    """The coefficients (Q24, int64 (dim,)) ``run`` solves from the sums R (dim x dim, row-major
    int64, lower triangle read) and bv (dim,), ``rounds`` of refinement (0: ``_ols_solve``
    alone); zeros when the factorization fails. For tests and measurements."""
    w = np.zeros(dim, np.int64)
    A = np.zeros(MAX_DIM * MAX_DIM + MAX_DIM, np.int64)
    L = np.zeros(MAX_DIM * MAX_DIM, np.int64)
    dg = np.zeros(MAX_DIM, np.int64)
    z = np.zeros(MAX_DIM, np.int64)
    W = np.zeros(2 * MAX_DIM * MAX_DIM + 5 * MAX_DIM, np.int64)
    _ols_solve_refined(R, bv, dim, reg, w, A, L, dg, z, rounds, W)
    return w


MIXB_K = 6  #: mixb's experts: the learned mix and five fixed sums
MIXB_RATE = 4  #: mixb's running errors: rate 2**-MIXB_RATE
MIXB_FAV = 10  #: the learned mix's running error is scaled by MIXB_FAV / 16 in the blend

N_LV = 32  #: level buckets of the prediction in its channel's range (``lvl`` = 1)
N_CTX = N_KA * N_SID * 9 + 33 * 48 * N_SID * 2 + 48 * 48 * N_SID + 16 * 49 + 32 * 33 + 33 * 33 \
    + N_KE * 3 * (N_KA + 66) + 64 * 48 * N_SID + 343 * N_SID + 49 * 16 + 33 * 7 * 4 \
    + 33 * 48 * N_SID + 16 * 33 + N_LV * 48 * N_SID + N_LV * 16
N_MW = N_SID * 48 * 8 + 16 * 24 * 8 + N_KE * 3 * 8 + N_SID * 48 * 8 + 49 * 8 + 2 * N_SID * 48 * 10 \
    + 16 * 24 * 9 + 49 * 9
N_APM = N_SID * N_KA * 33 + 16 * 33 * 33 + N_SID * 33 * 33 + 49 * 16 * 33


@njit(cache=True, nogil=True)
def _copy_rows(MW, oWB, oWB2, oWS, oWS2, oWB3, oWB4, oWS3, oWS4):
    """Version 2's mixer rows (two more inputs) start as version 1's, the new weights 0: the
    bit-length rows (7 inputs and a bias -> 9 and a bias), the sign rows (6 -> 8)."""
    for r in range(N_SID * 48):
        for k in range(2):
            src = (oWB if k == 0 else oWB2) + 8 * r
            dst = (oWB3 if k == 0 else oWB4) + 10 * r
            for j in range(7):
                MW[dst + j] = MW[src + j]
            MW[dst + 7] = 0
            MW[dst + 8] = 0
            MW[dst + 9] = MW[src + 7]
    for r in range(16 * 24 + 49):
        src = oWS + 8 * r if r < 16 * 24 else oWS2 + 8 * (r - 16 * 24)
        dst = oWS3 + 9 * r if r < 16 * 24 else oWS4 + 9 * (r - 16 * 24)
        for j in range(6):
            MW[dst + j] = MW[src + j]
        MW[dst + 6] = 0
        MW[dst + 7] = 0
        MW[dst + 8] = MW[src + 6]


@njit(cache=True, nogil=True)
def new_tables():
    """The coder's adaptive state before any data: (CP, CN, MW, APM, LP, LN): probabilities 1/2,
    counts 0, mixer weights 20000 (Q16), APMs the identity."""
    sq = _tables()[0]
    APM = np.empty(N_APM, np.int32)
    for i in range(N_APM // 33):
        for j in range(33):
            APM[i * 33 + j] = sq[_clamp((j - 16) * 128, -2047, 2047) + 2047] * 16
    return (np.full(N_CTX, 32768, np.uint16), np.zeros(N_CTX, np.uint8), np.full(N_MW, 20000, np.int64), APM,
            np.full(N_KE * N_KE, 32768, np.uint16), np.zeros(N_KE * N_KE, np.uint8))


@njit(cache=True, nogil=True)
def prior_signal(n):
    """The synthetic recording the coder's prior is trained on (normative): n frames of an AR(2)
    resonance (Q12 coefficients 2 r cos(w), -r**2 from the table below, changing every 512
    frames) driven by two-sided geometric noise whose scale doubles every 512 frames from 1
    (magnitude = trailing zeros of a xorshift32 word times the scale plus a uniform part), as
    int64 values around 0."""
    a1s = np.array([7700, 6900, 5600, 3800, 7900, 1700, 6200, 4700], np.int64)
    a2s = np.array([-3700, -3900, -4000, -3600, -3960, -3300, -3850, -3800], np.int64)
    out = np.zeros(n, np.int64)
    st = np.int64(2463534242)
    v1 = np.int64(0)
    v2 = np.int64(0)
    for t in range(n):
        seg = (t >> 9) & 7
        scale = np.int64(1) << min(t >> 9, 12)
        st ^= (st << 13) & 0xFFFFFFFF
        st ^= st >> 17
        st ^= (st << 5) & 0xFFFFFFFF
        w = st
        tz = 0
        while tz < 24 and (w >> tz) & 1 == 0:
            tz += 1
        mag = tz * scale + ((st >> 8) % scale)
        noise = -mag if (st >> 31) & 1 else mag
        v = (a1s[seg] * v1 + a2s[seg] * v2) >> 12
        v = _clamp(v + noise, -(1 << 24), 1 << 24)
        out[t] = v
        v2 = v1
        v1 = v
    return out


@njit(cache=True, nogil=True)
def relax_counts(CN, LN, cap):
    """Counts above cap set to cap: a prior's probabilities then yield quickly to the data."""
    for i in range(CN.shape[0]):
        if CN[i] > cap:
            CN[i] = cap
    for i in range(LN.shape[0]):
        if LN[i] > cap:
            LN[i] = cap


VM_E = 255  #: the value model's residual histogram covers e in [-VM_E, VM_E]; its window of values
VM_NB = 16  #: the value model's residual histograms, by the slow mean |e|'s octave
VM_HALVE = 1 << 15  #: the value model's per-value statistics are halved every this many frames
VM_MAX_RANGE = 1 << 12  #: the value model's largest symbol range (hi - lo + 1)
VM_PRIOR = np.int64(4) << 24  #: g's prior: 4 frames of an observed and an expected count of 1
VM_CLS_RANGE = 1 << 16  #: with code classes (``vcls`` > 0), the value model's largest symbol range
VM_CLS_CELLS = 1 << 19  #: with code classes, the most symbols over all channels (C (hi - lo + 1))
VM_CLS_PRIOR = np.int64(8) << 24  #: with code classes, g's prior: 8 frames at the class's weight


@njit(cache=True, nogil=True, inline="always")
def _vmass(S, lov, hiv, v1, v2):
    """The value model's mass of the values [v1, v2] (prefix sums S over [lov, hiv])."""
    if v1 < lov:
        v1 = lov
    if v2 > hiv:
        v2 = hiv
    if v1 > v2:
        return np.int64(0)
    return S[v2 - lov + 1] - S[v1 - lov]


@njit(cache=True, nogil=True, inline="always")
def _mmass(S, lov, hiv, xp, s, a, b):
    """The value model's mass of the magnitudes m in [a, b] on side s (v = xp + m, or xp - 1 - m)."""
    if s == 0:
        return _vmass(S, lov, hiv, xp + a, xp + b)
    return _vmass(S, lov, hiv, xp - 1 - b, xp - 1 - a)


@njit(cache=True, nogil=True, inline="always")
def _vprob(m1, tot):
    """12-bit probability m1 / tot in [1, 4095] (0: no mass, the model abstains)."""
    if tot <= 0:
        return np.int64(0)
    sh = max(0, _bitlen(tot) - 40)
    p = ((m1 >> sh) * 4096) // max(np.int64(1), tot >> sh)
    return _clamp(p, np.int64(1), np.int64(4095))


@njit(cache=True, nogil=True)
def _vcorr(m1, tot, f1, ftot, st):
    """Version 9 (code classes): the value model's input as a correction of the coder's stretch,
    VC_OFF + st[P_fg] - st[P_f] (P_fg = m1 / tot under f g, P_f = f1 / ftot under f alone: the
    evidence of g alone), or 0 (abstain) where either has no mass."""
    a = _vprob(m1, tot)
    b = _vprob(f1, ftot)
    if a == 0 or b == 0:
        return np.int64(0)
    return VC_OFF + st[a] - st[b]


@njit(cache=True, nogil=True)
def _vprefix_cls(fh, gv, m, SV, SF):
    """Version 9: the window's prefix sums SV of (f + 1) g and SF of (f + 1) 2**12 over its m
    symbols; SF's total. (A function of its own, not inlined: ``run`` stays as compiled before.)"""
    acc = np.int64(0)
    acc2 = np.int64(0)
    SV[0] = 0
    SF[0] = 0
    for j in range(m):
        acc += (fh[j] + 1) * gv[j]
        SV[j + 1] = acc
        acc2 += (fh[j] + 1) << 12
        SF[j + 1] = acc2
    return acc2


@njit(cache=True, nogil=True)
def _vexpect_cls(fh, xv, inv, m, exc, tab, ntab, lov, kmask):
    """Version 9: each window symbol's expected count ``((f + 1) inv) >> 24`` added to its own (xv)
    and to its class's (exc, by ``value & kmask``)."""
    for j in range(m):
        dv = ((fh[j] + 1) * inv) >> 24
        xv[j] += dv
        exc[_value(tab, ntab, lov + j) & kmask] += dv


@njit(cache=True, nogil=True)
def _vweights_cls(ob, xv, gv, m, obc, exc, GC, nk, tab, ntab, lov, kmask):
    """Version 9: the class weights GC from their counts, then each window symbol's g with a prior
    of VM_CLS_PRIOR frames at its class's weight."""
    for j in range(nk):
        GC[j] = _clamp(((obc[j] + VM_PRIOR) << 12) // (exc[j] + VM_PRIOR), 256, 65535)
    for j in range(m):
        pr = (VM_CLS_PRIOR * GC[_value(tab, ntab, lov + j) & kmask]) >> 12
        gv[j] = _clamp(((ob[j] + pr) << 12) // (xv[j] + VM_CLS_PRIOR), 256, 65535)


@njit(cache=True, nogil=True, inline="always")
def _bmin(b):
    """The smallest magnitude of bit length b."""
    return np.int64(0) if b == 0 else np.int64(1) << (b - 1)


@njit(cache=True, nogil=True, inline="always")
def _bmax(b):
    """The largest magnitude of bit length b."""
    return (np.int64(1) << b) - 1


# ---------------------------------------------------------------- the coder


@njit(cache=True, nogil=True)
def run(y, lo, hi, gs, prm, buf, dec, res, chk0, tab, tables, lblock, lord, lshift, lcoef, X, KC):
    """Encode ``y`` into ``buf`` (dec False: returns the payload length, or -1 when buf is too
    short) or decode ``buf`` into ``y`` (dec True: returns OK or a negative status).

    Preconditions (checked by ``ubpe.level3``): y int64 (n, C), C >= 1; lo, hi int64 (C,) with
    0 <= lo <= hi < 2**40, every y[:, c] in [lo[c], hi[c]] when encoding; gs in [0, 24] with
    (value range) >> gs < 2**21; prm int64 (N_PRM,) within PRM_BOUNDS; buf uint8; res int64, (n, C)
    to receive the residuals (a diagnostic; (n, 2 C): and the payload's length after each value;
    (n, 3 C): and the value model's estimated saving so far, 1/16 bits; (n, 4 C) with X: and the
    exact-value contexts') or (0, 0); chk0 seeds the check (the header's CRC-32,
    so that the 16 check bits at the end cover the header as well as the values); tab the value
    table (int64, increasing) when y holds symbols, else empty; tables the coder's adaptive state
    (``new_tables``, or ``prior_tables``), updated in place; lblock > 0: block LPC of the working
    values v in OLS2's place, block lblock, per channel and block lord (C, nb) orders <= 32,
    lshift (C, nb) shifts <= 31 and lcoef (C, nb, 32) coefficients |c| < 2**16 (lag j + 1 at
    j), nb = ceil(n / lblock); else lord, lshift, lcoef of any shape. X: None (versions 1 to 5,
    and version 6 with ``xctx`` = 0), or with ``xctx`` = 1 or 2 the exact-value contexts' state
    (``mixctx.new_state(n, C, xctx)``), updated in place. Every step of theirs stands in an ``if X is not
    None`` (or ``X is None``) branch on the argument itself, which numba's dead-branch pruning
    removes before typing where X is None: version 5's kernel compiles without them. KC: None, or
    (version 9, ``vcls`` > 0 with ``vmod``) any array: the code classes' steps, likewise in ``if KC
    is (not) None`` branches (the kernel without them is version 8's, as compiled before; their
    state is allocated here, ``vcls`` read from prm and clamped to [1, VCLS_MAX]).
    """
    n, C = y.shape
    sq, st, rt = _tables()
    p1 = prm[PRM_P1]
    cross = min(prm[PRM_CROSS], C - 1)
    xlags = prm[PRM_XLAGS] if prm.shape[0] > PRM_XLAGS else 0
    lags = xlags if xlags > 0 else 2  # (values of each neighbour: version 10's xlags, else two)
    dim1 = p1 + lags * cross
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
    # dcm = k > 0 (version 8): OLS1, OLS2 (not block LPC) and OLS3 fit the working values minus
    # their channel's running mean dci (the mean of the frames so far until 2**k of them, then
    # an exponential mean of rate 2**-k, rounded to an integer v): the working zero, the middle
    # of the channel's range, is not the signal's mean (a skewed range: on trumpet-1 3 516 units
    # from it, twice its mean |value|), and the offset, which the least squares have no intercept
    # for, swells the normal equations' diagonal, hence their relative ridge, and eats the
    # solve's 30 bits. |v - dci| <= the range: one more bit of shift before the products.
    dcm = prm[PRM_DCM] if prm.shape[0] > PRM_DCM else 0
    exfloor = 2 * max(0, _bitlen(vr) - (16 if dcm else 17))  # |v| above 2**16: products shifted right
    dcq = np.zeros(C, np.int64)  # the running mean, Q16 of v
    dci = np.zeros(C, np.int64)  # rounded to an integer v (0 before the first frame)
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
    olsr = prm[PRM_OLSR]  # rounds of refinement of OLS1's and OLS3's solve (version 7)
    wW = np.zeros(2 * MM + 5 * MAX_DIM if olsr > 0 else 1, np.int64)
    # the OLS inputs, |v| <= 2**20: p1 own values, then ``lags`` values of each of up to 2 * cross
    # neighbours, p1 + 2 * lags * cross <= INPUT_SLOTS entries (the predictor reads the first dim1)
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
    oc = np.zeros(max(nown, 1), np.int32)  # dcm: the channel's past minus its running mean
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
    prev = np.zeros((3, max(nmax, 1)), np.int64)  # stage k's tap weights oldest first: ptab reversed
    for k in range(3):
        acc_ = np.int64(0)
        for j in range(ntaps[k]):
            acc_ += ptab[j]
            prev[k, ntaps[k] - 1 - j] = ptab[j]
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
    if KC is None:  # (a branch numba removes before typing: the kernel of versions 1 to 8 has no classes)
        if VR > VM_MAX_RANGE:
            vmod = 0  # (the caller refuses such a header)
    else:
        if VR > VM_CLS_RANGE or C * VR > VM_CLS_CELLS:
            vmod = 0  # (the caller refuses such a header)
    CV = C if vmod else 1
    VS = VR if vmod else 1
    # code classes (vcls = k > 0, version 9): the symbols' values mod 2**k, each with its own
    # observed and expected counts; a symbol's g starts from (is drawn towards) its class's
    # (an ADC's code widths follow a pattern over the low bits: differential nonlinearity)
    vcls = np.int64(0)
    if KC is not None:
        vcls = min(max(prm[PRM_VCLS] if prm.shape[0] > PRM_VCLS else 1, 1), VCLS_MAX)
    NK = np.int64(1) << vcls
    kmask = NK - 1
    OBC = np.zeros((CV, NK), np.int64)
    EXC = np.zeros((CV, NK), np.int64)
    GC = np.full(NK, 4096, np.int64)
    SF = np.zeros(2 * VM_E + 2, np.int64)
    ftot = np.int64(0)
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

    ac = np.zeros(4, np.int64)
    ac[1] = 0xFFFFFFFF
    Xc = xc.code_state(X)  # (the final stage's arrays alone, for the per-decision coders; None where X is)
    Xl = xc.list_state(X)  # (the list inputs' arrays alone, for _xlist)
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
            dc = dci[c]
            if dcm:
                for j in range(nown):
                    oc[j] = own[j] - dc
                ols_in = oc
            else:
                ols_in = own
            for j in range(p1):
                a[j] = ols_in[j]
            m = p1
            for r in range(1, cross + 1):
                for sgn in range(2):
                    k = c - r if sgn == 0 else c + r
                    if k < 0 or k >= C:
                        k = c + r if sgn == 0 else c - r  # reflect at the edges
                    if k < 0 or k >= C or k == c:
                        for j in range(lags):
                            a[m + j] = 0
                    else:
                        base = t if k < c else t - 1
                        for j in range(lags):
                            a[m + j] = ((_value(tab, ntab, y[base - j, k]) - off[k]) >> gs) - dci[k] \
                                if base >= j else 0
                    m += lags
            # ---- predictions (Q4 of v)
            acc = np.int64(0)
            for j in range(dim1):
                acc += w1[c, j] * a[j]
            P1 = (acc >> 20) + (dc << 4)
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
                    acc += w2[c, j] * ols_in[j]
                P2 = (acc >> 20) + (dc << 4) if p2 > 0 else P1
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
                    acc += w4[c, j] * ols_in[j]
                P3 = _clamp((acc >> 20) + (dc << 4), -(1 << 26), 1 << 26)
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
                if KC is not None:  # and of f alone (the correction's reference)
                    ftot = _vprefix_cls(fh, gv, hiv - lov + 1, SV, SF)
                    acc = SV[hiv - lov + 1]
                else:
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
            if X is not None:
                xc._xbases(X, y, t, c, xp)
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
                if KC is not None:
                    if vmod:
                        pv = _vcorr(_vmass(SV, lov, hiv, lo[c], xp - 1), vtot, _vmass(SF, lov, hiv, lo[c], xp - 1),
                                    ftot, st)
                elif vmod:
                    pv = _vprob(_vmass(SV, lov, hiv, lo[c], xp - 1), vtot)
                if X is not None:
                    xc._xlist(Xl, 1, 0, xp, 2, lo[c], xp - 1, lo[c], hi[c])
                s = _mix2_code(ac, buf, dec, s, CP, CN, ci, nin_s, MW, wS1 + (frac * 24 + (kA >> 3)) * ws,
                               wS2 + (dd1 * 7 + dd2) * ws, APM, oAS + (frac * 33 + rd1) * 33,
                               oAS2 + ((dd1 * 7 + dd2) * 16 + frac) * 33, sq, st, rt, limit, lr, xs, ar,
                               pv, FW, 0, Xc)
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
                    if KC is not None:
                        if up != 0:
                            f1 = _mmass(SF, lov, hiv, xp, s, _bmin(cur + 1), _bmax(bhi))
                        else:
                            f1 = _mmass(SF, lov, hiv, xp, s, _bmin(blo), _bmax(cur - 1))
                        pv = _vcorr(m1, _mmass(SV, lov, hiv, xp, s, _bmin(blo), _bmax(bhi)), f1,
                                    _mmass(SF, lov, hiv, xp, s, _bmin(blo), _bmax(bhi)), st)
                    else:
                        pv = _vprob(m1, _mmass(SV, lov, hiv, xp, s, _bmin(blo), _bmax(bhi)))
                if X is not None:
                    key = 2 + 4 * (s + 2 * (sid + 16 * cur))
                    if up != 0:
                        xc._xlist(Xl, key, 1, xp, s, _bmin(cur + 1), _bmax(bhi), _bmin(blo), _bmax(bhi))
                    else:
                        xc._xlist(Xl, key, 1, xp, s, _bmin(blo), _bmax(cur - 1), _bmin(blo), _bmax(bhi))
                bit = _mix2_code(ac, buf, dec, want, CP, CN, ci, nin_b, MW, wB1 + (sid * 48 + (kA >> 2)) * wb,
                                 wB2 + (sid * 48 + se1) * wb, APM, (sid * N_KA + kA) * 33,
                                 oAB2 + (sid * 33 + r1) * 33, sq, st, rt, limit, lr, xs, ar, pv, FW, 3 * (1 + sid),
                                 Xc)
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
                    if KC is not None:
                        pv = _vcorr(_mmass(SV, lov, hiv, xp, s, (2 * mag + 1) << (r_ - 1), ((mag + 1) << r_) - 1),
                                    _mmass(SV, lov, hiv, xp, s, mag << r_, ((mag + 1) << r_) - 1),
                                    _mmass(SF, lov, hiv, xp, s, (2 * mag + 1) << (r_ - 1), ((mag + 1) << r_) - 1),
                                    _mmass(SF, lov, hiv, xp, s, mag << r_, ((mag + 1) << r_) - 1), st)
                    else:
                        pv = _vprob(_mmass(SV, lov, hiv, xp, s, (2 * mag + 1) << (r_ - 1), ((mag + 1) << r_) - 1),
                                    _mmass(SV, lov, hiv, xp, s, mag << r_, ((mag + 1) << r_) - 1))
                frow = 3 * (1 + N_SID + min(i, 15))
                if X is not None:
                    r_ = b - 1 - i
                    xc._xlist(Xl, 3 + 4 * ((s + 2 * (b + 64 * mag)) & 0x3FFFFFFF), 2, xp, s,
                              (2 * mag + 1) << (r_ - 1), ((mag + 1) << r_) - 1, mag << r_, ((mag + 1) << r_) - 1)
                if i < 2:
                    part = b * 3 + (0 if i == 0 else 1 + (mag & 1))
                    ci[0] = oM1 + part * N_KA + kA
                    ci[1] = oM2 + part * 33 + r1
                    ci[2] = oM3 + part * 33 + r2
                    bit = _mix_code(ac, buf, dec, want, CP, CN, ci, 3, MW, oWM + part * 8,
                                    APM, -1, sq, st, rt, limit, lr, xs, ar, pv, FW, frow, Xc)
                else:
                    li = b * N_KE + min(i, N_KE - 1)
                    if X is None:
                        bit = _final_code(ac, buf, dec, want, _counter_p(LP, li), pv, FW, frow, sq, st, lr)
                    else:
                        bit = _xfinal_code(ac, buf, dec, want, _counter_p(LP, li), pv, FW, frow, sq, st, lr, rt, Xc)
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
                if X is not None:
                    if res.shape[1] == 4 * C:
                        res[t, 3 * C + c] = X.XW[X.XW.shape[0] - 1]
            chk = (chk * 0x2F0B3A49 + y[t, c] + 1) & 0xFFFFFFFF

            if vmod:  # the value model: expected counts (f / Z), observed count, histogram
                inv = (np.int64(1) << 48) // max(np.int64(1), vtot >> 12)
                fh = FH[c, kb, lov - xp + VM_E:hiv - xp + VM_E + 1]
                xv = EXPV[c, lov - lo[c]:hiv - lo[c] + 1]
                if KC is not None:
                    _vexpect_cls(fh, xv, inv, hiv - lov + 1, EXC[c], tab, ntab, lov, kmask)
                    OBC[c, _value(tab, ntab, y[t, c]) & kmask] += np.int64(1) << 24
                else:
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
                    if KC is not None:
                        for j in range(NK):
                            OBC[c, j] >>= 1
                            EXC[c, j] >>= 1
                if vcount[c] % 16 == 0:  # g of the window's symbols
                    ob = OBS[c, lov - lo[c]:hiv - lo[c] + 1]
                    xv = EXPV[c, lov - lo[c]:hiv - lo[c] + 1]
                    gv = GV[c, lov - lo[c]:hiv - lo[c] + 1]
                    if KC is not None:  # each symbol's prior: VM_CLS_PRIOR frames at its class's weight
                        _vweights_cls(ob, xv, gv, hiv - lov + 1, OBC[c], EXC[c], GC, NK, tab, ntab, lov, kmask)
                    else:
                        for j in range(hiv - lov + 1):
                            gv[j] = _clamp(((ob[j] + VM_PRIOR) << 12) // (xv[j] + VM_PRIOR), 256, 65535)
            if X is not None:  # the successor lists: the value counted in its contexts' lists
                xc._xcount(X, y[t, c])
                if c + 1 < C:  # (a hint: the next value's lists fetched while this one's updates run)
                    xc._xprefetch(X, y, t, c + 1)
                else:
                    xc._xprefetch(X, y, t + 1, 0)

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
                    wsum = _wpow(H[c, k, hp - nk:hp], prev[k], nk)
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
                _ols_add(R1[c], b1[c], dim1, a, vt - dc, cw, ex1[c])
                if ph1 == T1 - 1:
                    ex1[c] = _ols_rescale(R1[c], b1[c], dim1, ex1[c], exfloor)
                if kc1 == K1 - 1:
                    _ols_solve_refined(R1[c], b1[c], dim1, reg, w1[c], wA, wL, wd, wz, olsr, wW)
            if p2 > 0 and lblock == 0:
                cw = max(1, (_irls(es2[c], irls) * fw2) >> 12)
                _ols_add(R2[c], b2[c], p2, ols_in, vt - dc, cw, ex2[c])
                if ph2 == T2 - 1:
                    ex2[c] = _ols_rescale(R2[c], b2[c], p2, ex2[c], exfloor)
                if kc2 == K2 - 1:
                    _ols_solve(R2[c], b2[c], p2, reg, w2[c], wA, wL, wd, wz)
            if p3 > 0:
                es4[c] += (min(abs(V - P3), np.int64(1) << 24) - es4[c]) >> 1
                cw = max(1, (_irls(es4[c], irls) * fw4) >> 12)
                _ols_add(R4[c], b4[c], p3, ols_in, vt - dc, cw, ex4[c])
                if ph4 == T4 - 1:
                    ex4[c] = _ols_rescale(R4[c], b4[c], p3, ex4[c], exfloor)
                if kc3 == K3 - 1:
                    _ols_solve_refined(R4[c], b4[c], p3, reg, w4[c], wA, wL, wd, wz, olsr, wW)
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
            if dcm:  # the running mean: of the t + 1 frames so far, then exponential (rate 2**-dcm)
                if t < (1 << dcm):
                    dcq[c] += ((vt << 16) - dcq[c]) // (t + 1)
                else:
                    dcq[c] += ((vt << 16) - dcq[c]) >> dcm
                dci[c] = (dcq[c] + (1 << 15)) >> 16

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


# ---------------------------------------------------------------- the value table


@njit(cache=True, nogil=True)
def golomb_pack(r, k, out):
    """Pack r >= 0 (int64, each below 2**48) as exponential-Golomb codes of order k (w = v + 2**k:
    bit_length(w) - k - 1 zeros, then w's bits, most significant first; bytes filled from their
    top bit) into out (zeroed uint8, long enough); returns the bytes used."""
    pos = 0
    for i in range(r.shape[0]):
        w = r[i] + (np.int64(1) << k)
        nb = _bitlen(w)
        pos += nb - k - 1
        for j in range(nb - 1, -1, -1):
            if (w >> j) & 1:
                out[pos >> 3] |= np.uint8(128 >> (pos & 7))
            pos += 1
    return (pos + 7) >> 3


@njit(cache=True, nogil=True)
def golomb_unpack(data, start, count, k, cap, out):
    """Read ``count`` codes of ``golomb_pack`` from data[start:] into out, each below cap (<=
    2**48); returns the bytes read, or -1 (past the end, a value >= cap) or -2 (nonzero
    padding)."""
    nb = data.shape[0] - start
    pos = 0
    for i in range(count):
        z = 0
        while True:
            if (pos >> 3) >= nb:
                return -1
            if (np.int64(data[start + (pos >> 3)]) >> (7 - (pos & 7))) & 1:
                break
            z += 1
            pos += 1
            if z + k > 48:
                return -1
        w = np.int64(0)
        for _ in range(z + k + 1):
            if (pos >> 3) >= nb:
                return -1
            w = (w << 1) | ((np.int64(data[start + (pos >> 3)]) >> (7 - (pos & 7))) & 1)
            pos += 1
        v = w - (np.int64(1) << k)
        if v >= cap:
            return -1
        out[i] = v
    used = (pos + 7) >> 3
    if pos & 7 and (np.int64(data[start + used - 1]) & ((1 << (8 - (pos & 7))) - 1)) != 0:
        return -2
    return used


# the exact-value contexts (version 6) build on this module's coder: their module imports it, and
# ``run`` reaches them through the module (resolved when it compiles), imported last
