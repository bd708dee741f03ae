"""Numba kernels for the prediction stages (ubpe.frontend.lpc, ubpe.frontend.adaptive): block LPC analysis and filtering, sign-sign LMS cascades.

Every kernel is total: it never raises and never indexes outside the arrays it is given,
provided its caller (the stage module, which validates every parameter first) respects the
preconditions in each docstring.

Values travel as int64 holding the *signed* ``bits``-wide representation of each sample,
sign-extended. Predictions are summed in uint64, whose arithmetic wraps modulo 2**64 by
definition, then reinterpreted as int64 and shifted arithmetically; residuals and
reconstructions are wrapped to ``bits`` bits by :func:`wrap`. Encoder and decoder perform the
same operations on the same previous values, so the round trip is exact whatever wraps.
"""

from __future__ import annotations

import math

import numba
import numpy as np
from numba import types
from numba.extending import intrinsic

from . import njit
from .alloc import empty, zeros
from .lmstaps import split_taps
from .intrinsics import bit_length, imax, imin, select

#: index cast: an unsigned index spares numba's negative-index wrap-around (every index cast
#: with it is >= 0 by construction); indexing, not slicing, in the per-sample loops: a slice
#: there costs NRT reference counting calls every sample
U = np.uint64


def wrap(v, sh):
    """``v`` reduced modulo 2**(64 - sh) to its signed representative (sh in [0, 56])."""
    return np.int64(np.uint64(v) << np.uint64(sh)) >> np.int64(sh)


def wrap_add(a, b, sh):
    """``wrap(a + b, sh)``, the sum taken modulo 2**64 (a, b int64 or uint64)."""
    return wrap(np.int64(np.uint64(a) + np.uint64(b)), sh)


def wrap_sub(a, b, sh):
    """``wrap(a - b, sh)``, the difference taken modulo 2**64 (a, b int64 or uint64)."""
    return wrap(np.int64(np.uint64(a) - np.uint64(b)), sh)


# Compiled, wrap, wrap_add and wrap_sub are intrinsics: the same int64 operations emitted into
# the calling kernel, where an inlined copy of each (four conversions and two shifts) was typed
# and lowered at every call site (their definitions above run under NUMBA_DISABLE_JIT).
def _wrapping(op, args):
    """Typing and LLVM of ``wrap`` after ``op`` (None, "add" or "sub") of the int64 conversions
    of the integer ``args`` (the last one the shift)."""
    if not all(isinstance(a, types.Integer) for a in args):
        return None

    def codegen(context, builder, sig, vals):
        v, *rest, sh = [context.cast(builder, x, t, types.int64) for x, t in zip(vals, sig.args)]
        if op is not None:
            v = getattr(builder, op)(v, rest[0])  # (no nsw: wraps modulo 2**64)
        return builder.ashr(builder.shl(v, sh), sh)

    return types.int64(*[types.unliteral(a) for a in args]), codegen


@intrinsic
def _wrap(typingctx, v, sh):
    return _wrapping(None, (v, sh))


@intrinsic
def _wrap_add(typingctx, a, b, sh):
    return _wrapping("add", (a, b, sh))


@intrinsic
def _wrap_sub(typingctx, a, b, sh):
    return _wrapping("sub", (a, b, sh))


if not numba.config.DISABLE_JIT:
    wrap, wrap_add, wrap_sub = _wrap, _wrap_add, _wrap_sub  # noqa: F811


@njit(cache=True, nogil=True, inline="always")
def _lpc_predict(s, i, order, rev, shift):
    """sum_j rev[j] * s[i - order + j] (wrapping) >> shift, rev = the coefficients reversed.

    Walking both arrays forward lets LLVM vectorize the dot product. Needs i >= order.
    """
    acc = np.uint64(0)
    window = s[i - order:i]  # a slice: the loop's indices are known non-negative (no wrap checks)
    for j in range(order):
        acc += np.uint64(rev[j]) * np.uint64(window[j])
    return np.int64(acc) >> np.int64(shift)


@njit(cache=True, nogil=True)
def lpc_filter(src, block, orders, shifts, coefs, sh, inverse, dst):
    """Block LPC residual (``inverse=False``) or reconstruction (``inverse=True``).

    Forward: ``dst[i] = wrap(src[i] - pred(src))``; inverse: ``dst[i] = wrap(src[i] + pred(dst))``,
    where pred uses the block's coefficients on the ``order`` previous samples of the *signal*
    (the previous block's tail included). The first samples of the signal, ``i < order``, are
    predicted by the previous sample (``i >= 1``) or not at all (``i == 0``).

    The reconstruction is a serial chain (each sample feeds the next prediction), so its loop
    keeps the two newest samples in registers and reads only lags 3 and up back from ``dst``:
    a vector load of a sample stored one iteration earlier cannot be forwarded from the store
    and would wait for it on every sample. The sum is the same wrapping uint64 sum either way.
    The reconstruction may run in place (``dst`` is ``src``: ``src[i]`` is read before
    ``dst[i]`` is written), which callers do: two fresh arrays of one size lie a multiple of
    4096 bytes apart, and the CPU then takes each load of ``src[i]`` for a load of the
    ``dst[i]`` just stored (4K aliasing), which doubled the time on ECG. Samples of at most 32
    bits (``sh >= 32``) are summed as products of 32-bit operands (the same sums, vectorized).

    Preconditions: len(dst) == len(src) == n; block >= 1; len(orders) == len(shifts) ==
    ceil(n / block); orders in [0, 32]; shifts in [0, 63]; len(coefs) == sum(orders); sh in [0, 56].
    """
    n = src.shape[0]
    rev = zeros(32, np.uint64)
    # the reconstruction's samples of at most 32 bits (sh >= 32: each written wrapped to them)
    # and a block's coefficients of at most 32 (decoding's: at most 16, checked) multiply
    # exactly as int32 pairs, and the int64 sum wraps as the uint64 one does: the same sums
    rev32 = zeros(32, np.int64)
    c0 = 0
    for b in range(orders.shape[0]):
        order = np.int64(orders[b])
        shift = np.int64(shifts[b])
        narrow = inverse and sh >= 32
        for j in range(order):
            rev[order - 1 - j] = np.uint64(coefs[c0 + j])
            rev32[order - 1 - j] = coefs[c0 + j]
            narrow &= -(1 << 31) <= coefs[c0 + j] < (1 << 31)
        lo = b * block
        hi = imin(n, lo + block)
        c0 += order
        if not inverse:
            for i in range(lo, hi):
                if i >= order:
                    p = _lpc_predict(src, i, order, rev, shift)
                elif i >= 1:
                    p = src[i - 1]
                else:
                    p = np.int64(0)
                dst[i] = wrap_sub(src[i], p, sh)
            continue
        i = lo
        while i < hi and i < order:  # the signal's first samples: the previous one
            p = dst[i - 1] if i >= 1 else np.int64(0)
            dst[i] = wrap_add(src[i], p, sh)
            i += 1
        if i >= hi:
            continue
        if order == 0:
            for i in range(i, hi):
                dst[i] = wrap(src[i], sh)
            continue
        c1 = rev[order - 1]  # lag 1
        c2 = rev[order - 2] if order >= 2 else np.uint64(0)  # lag 2
        m = imax(order - 2, 0)  # lags order .. 3, read from dst
        p1 = np.uint64(dst[i - 1])
        p2 = np.uint64(dst[i - 2]) if i >= 2 else np.uint64(0)  # (order 1: c2 is 0)
        if narrow:  # (products of 32-bit operands, exact; a loop of its own, as LLVM vectorizes it)
            for i in range(i, hi):
                acc32 = np.int64(0)
                window = dst[i - order:i - order + m]
                for j in range(m):
                    acc32 += np.int64(np.int32(rev32[j])) * np.int64(np.int32(window[j]))
                acc = np.uint64(acc32) + (c2 * p2 + c1 * p1)
                v = wrap_add(src[i], np.int64(acc) >> np.int64(shift), sh)
                dst[i] = v
                p2 = p1
                p1 = np.uint64(v)
            continue
        for i in range(i, hi):
            acc = np.uint64(0)
            window = dst[i - order:i - order + m]  # a slice: no wrap-around checks in the loop
            for j in range(m):
                acc += rev[j] * np.uint64(window[j])
            acc += c2 * p2 + c1 * p1  # last: the sum of older lags does not wait for p1
            v = wrap_add(src[i], np.int64(acc) >> np.int64(shift), sh)
            dst[i] = v
            p2 = p1
            p1 = np.uint64(v)


@njit(cache=True, nogil=True)
def undelta_rows(w, order):
    """Undo ``order`` passes of differencing along each row of ``w`` (2-D, an unsigned integer
    dtype), in place, modulo 2**bits: pass ``j = order - 1 .. 0`` replaces ``w[r, j:]`` by its
    running sum (:func:`ubpe.signal.undelta`, one compiled loop instead of numpy's cumsum,
    which took ~2 ns a value). Preconditions: 0 <= order < w.shape[1] (or order 0)."""
    n = w.shape[1]
    for r in range(w.shape[0]):
        row = w[r]
        for j in range(order - 1, -1, -1):
            acc = np.uint64(row[j])
            for i in range(j + 1, n):
                acc += np.uint64(row[i])  # modulo 2**64, stored modulo 2**bits: the same sums
                row[i] = acc


@njit(cache=True, nogil=True)
def lpc_unpack(head, data, coefs):
    """Check untrusted LPC block headers and unpack their coefficients (decoding's one pass).

    ``head``: uint8 (3, nb), each block's order, shift and precision; ``data``: the packed
    coefficients (each ``precision`` bits of two's complement, little-endian bit order);
    ``coefs``: int64 of length sum(orders), filled. Returns 0, or the first failed check in
    this order: -1 an order above 32, -2 a block of order 0 with a precision or shift, -3 a
    precision outside [2, 16], -4 a shift above 31, -5 ``data`` not exactly
    ceil(sum(order * precision) / 8) bytes, -6 nonzero padding bits. Reads nothing out of range.
    """
    nb = head.shape[1]
    bad = 0
    total = 0
    for b in range(nb):
        order = np.int64(head[0, b])
        shift = np.int64(head[1, b])
        prec = np.int64(head[2, b])
        if order > 32:
            return -1
        if order == 0:
            if prec != 0 or shift != 0:
                bad = select((bad == 0) | (bad < -2), -2, bad)
        elif prec < 2 or prec > 16:
            bad = select((bad == 0) | (bad < -3), -3, bad)
        if shift > 31 and bad == 0:
            bad = -4
        total += order * prec
    if bad != 0:
        return bad
    if data.shape[0] != (total + 7) >> 3:
        return -5
    if total & 7 and (np.int64(data[data.shape[0] - 1]) >> (total & 7)) != 0:
        return -6
    pos = 0
    c = 0
    for b in range(nb):
        w = np.int64(head[2, b])
        for _ in range(np.int64(head[0, b])):
            v = np.int64(0)
            got = 0
            while got < w:  # at most 3 bytes
                byte = (pos + got) >> 3
                off = (pos + got) & 7
                take = imin(8 - off, w - got)
                v |= ((np.int64(data[byte]) >> off) & ((1 << take) - 1)) << got
                got += take
            coefs[c] = v - ((v >> (w - 1)) << w)  # the top bit set: v - 2**w
            c += 1
            pos += w
    return 0


@njit(cache=True, nogil=True)
def _geometric_bits(total, n):
    """Entropy in bits of n values from a geometric law of mean total / n (the residual cost)."""
    if n == 0:
        return 0.0
    m = total / n
    if m <= 0.0:
        return 0.0
    return n * ((1.0 + m) * np.log2(1.0 + m) - m * np.log2(m))


#: Samples per pass of :func:`_residual_bits`'s predictions (a buffer that stays in L1).
_CHUNK = 256


@njit(cache=True, nogil=True)
def _residual_bits(s, lo, hi, order, q, shift, sh, acc):
    """Estimated bits of the zigzagged residuals of s[lo:hi] under one quantized predictor.
    ``acc``: uint64 scratch of _CHUNK values.

    The predictions are summed a chunk of samples at a time, coefficient by coefficient (a
    loop over samples that LLVM vectorizes, no horizontal sum per sample): sums modulo 2**64,
    the same whatever their order, so the same predictions as :func:`lpc_filter`'s; the bits
    are then added sample by sample, in order (the same float sum)."""
    total = 0.0
    for c0 in range(lo, hi, _CHUNK):
        c1 = imin(hi, c0 + _CHUNK)
        start = imax(c0, order)  # samples from here on are predicted by the coefficients
        for t in range(c1 - c0):
            acc[t] = 0
        dst = acc[start - c0:c1 - c0]  # slices: no wrap-around checks in the loops
        j = 0
        while j + 4 <= order:  # four lags a pass over the chunk (fewer loads and stores of acc)
            q0, q1, q2, q3 = np.uint64(q[j]), np.uint64(q[j + 1]), np.uint64(q[j + 2]), np.uint64(q[j + 3])
            s0 = s[start - 1 - j:c1 - 1 - j]  # lag j + 1
            s1 = s[start - 2 - j:c1 - 2 - j]
            s2 = s[start - 3 - j:c1 - 3 - j]
            s3 = s[start - 4 - j:c1 - 4 - j]
            for t in range(c1 - start):
                dst[t] += q0 * np.uint64(s0[t]) + q1 * np.uint64(s1[t]) + q2 * np.uint64(s2[t]) + q3 * np.uint64(s3[t])
            j += 4
        for j in range(j, order):
            qj = np.uint64(q[j])
            sj = s[start - 1 - j:c1 - 1 - j]
            for t in range(c1 - start):
                dst[t] += qj * np.uint64(sj[t])
        for i in range(c0, c1):
            if i >= order:
                p = np.int64(acc[i - c0]) >> np.int64(shift)
            elif i >= 1:
                p = s[i - 1]
            else:
                p = np.int64(0)
            r = wrap_sub(s[i], p, sh)
            total += 2.0 * abs(float(r))  # zigzag magnitude, near enough
    return _geometric_bits(total, hi - lo)


@njit(cache=True, nogil=True, no_cpython_wrapper=True)
def _quantize(lp, order, precision, q):
    """FLAC-style quantization with error feedback; returns the shift (q[:order] filled)."""
    cmax = 0.0
    for j in range(order):
        a = abs(lp[j])
        if a > cmax:  # (numba's max(cmax, a): a if a > cmax else cmax, without compiling its overload)
            cmax = a
    if cmax <= 0.0:
        for j in range(order):
            q[j] = 0
        return 0
    log2cmax = np.int64(np.floor(np.log2(cmax))) + 1  # cmax < 2**log2cmax (np.int64: int()'s overload compiled)
    shift = precision - 1 - log2cmax
    if shift > 30:
        shift = 30
    if shift < 0:
        shift = 0
    qmax = (1 << (precision - 1)) - 1
    qmin = -(1 << (precision - 1))
    err = 0.0
    for j in range(order):
        v = lp[j] * (1 << shift) + err
        fr = np.rint(v)  # = np.round (llvm.rint, half to even), without its ndigits path to compile
        # clamped as a float: converting an out-of-range float is undefined
        if fr > qmax:
            fr = float(qmax)
        if fr < qmin:
            fr = float(qmin)
        r = np.int64(fr)
        err = v - fr
        q[j] = r
    return shift


@njit(cache=True, nogil=True, no_cpython_wrapper=True)
def _window(w, m, kind):
    """Fill w[:m] with window ``kind``: 0 none, 1 Welch, 2 Tukey(0.5), 3 Hann, 4 Tukey(0.25).

    A Tukey window's two tapers are mirror images computed once: sample ``i`` of the left taper
    (``i < edge``) is ``0.5 - 0.5 cos(pi i / edge)`` and sample ``m - 1 - j`` of the right one
    (``j < edge``, which is ``m - 1 - j > m - 1 - edge``, exactly: ``edge`` a multiple of 1/8
    below 2**24) the same expression of ``j``: one cosine for both, the same floats, where each
    sample computed its own (a 16 384-sample Tukey(0.5) window 8 192 cosines, not 16 384; the
    left taper's value where the two would overlap, as the first test gave it)."""
    if kind == 2 or kind == 4:
        edge = (0.25 if kind == 2 else 0.125) * m
        taper = 0  # the left taper's samples: i < edge (and < m)
        while taper < m and taper < edge:
            taper += 1
        for i in range(taper, m):
            w[i] = 1.0
        for j in range(taper):
            v = 0.5 - 0.5 * np.cos(np.pi * j / edge)
            w[j] = v
            if m - 1 - j >= taper:  # (the right taper's sample, unless the left one holds it)
                w[m - 1 - j] = v
        return
    for i in range(m):
        if kind == 1:
            t = (2.0 * i - (m - 1)) / (m + 1.0)
            w[i] = 1.0 - t * t
        elif kind == 3:
            w[i] = 0.5 - 0.5 * np.cos(2.0 * np.pi * (i + 0.5) / m)
        else:
            w[i] = 1.0


@njit(cache=True, nogil=True)
def lpc_analyze(s, block, max_order, windows, precisions, sh, orders, shifts, precs, coefs, high_gain=0.0):
    """Choose each block's order, precision, shift and quantized coefficients.

    For each window of ``windows`` (0 none, 1 Welch, 2 Tukey(0.5), 3 Hann, 4 Tukey(0.25)):
    autocorrelation of the windowed block, Levinson-Durbin in float64, candidate orders ranked
    by the Levinson error plus coefficient bits, then the best candidates re-costed on the exact
    integer residual for every precision in ``precisions``; the cheapest predictor over all
    windows wins (FLAC's apodization search). The recursion has a white-noise floor of 1e-9 of
    the block's energy; where its error at the highest usable order is below ``high_gain`` of
    the energy (0: never), it is solved again without the floor and those orders are costed
    too. ``coefs`` must hold nblocks * max_order values; returns how many it used.

    Preconditions: block >= 1; 0 <= max_order <= 32; windows non-empty, in [0, 4]; precisions
    in [2, 16]; output arrays of length ceil(n / block).
    """
    n = s.shape[0]
    nb = orders.shape[0]
    c0 = 0
    wlen = imax(1, imin(block, n))  # never more than the signal: block may be up to 2**24
    w = empty(wlen, np.float64)
    xw = empty(wlen, np.float64)
    r = zeros(max_order + 1, np.float64)
    a = zeros(max_order + 1, np.float64)
    tmp = zeros(max_order + 1, np.float64)
    lps = zeros((max_order + 1, max_order), np.float64)
    errs = zeros(max_order + 1, np.float64)
    q = zeros(max_order, np.int64)
    best_q = zeros(max_order, np.int64)
    pred = empty(_CHUNK, np.uint64)  # _residual_bits's scratch
    w_len, w_kind = np.int64(-1), np.int64(-1)  # the window w holds
    for b in range(nb):
        lo = b * block
        hi = imin(n, lo + block)
        m = hi - lo
        # the order-0 fallback is always a candidate
        zero = np.int64(0)  # not a literal 0: one compiled _residual_bits for every call
        best_bits = _residual_bits(s, lo, hi, zero, q, zero, sh, pred)
        best_order = 0
        best_shift = 0
        best_prec = 0
        for wi in range(windows.shape[0]):
            if m != w_len or windows[wi] != w_kind:  # (a window is the same for every full block)
                _window(w, m, windows[wi])
                w_len, w_kind = m, windows[wi]
            for i in range(m):
                xw[i] = float(s[lo + i]) * w[i]
            kmax = select(m > 1, imin(max_order, m - 1), 0)
            # r[k] = sum of xw[i + k] * xw[i] over i = 0 .. m - 1 - k, each lag's sum in that order;
            # subtle: the lags advance together, sample by sample: independent sums side by
            # side (a vector), where one lag after another waited on each addition's latency
            for k in range(kmax + 1):
                r[k] = 0.0
            for i in range(m):
                v0 = xw[i]
                h0 = xw[i:i + imin(kmax, m - 1 - i) + 1]  # a slice: no wrap-around checks
                for k in range(h0.shape[0]):
                    r[k] += h0[k] * v0
            # Levinson-Durbin: errs[k] is the prediction error energy at order k
            # the Levinson recursion with a white-noise floor of 1e-9 of the energy (stable); then,
            # where that predicts the block to below high_gain of its energy (a smooth, oversampled
            # signal whose spectrum spans more than the floor), again without it, its orders costed too
            for floor_pass in range(2):
                white = 1e-9 if floor_pass == 0 else 0.0
                errs[0] = r[0]
                for j in range(max_order + 1):
                    a[j] = 0.0
                usable = 0
                if r[0] > 0.0 and np.isfinite(r[0]):
                    err = r[0] * (1.0 + white)  # the white-noise floor of this pass
                    for k in range(1, kmax + 1):
                        acc = r[k]
                        for j in range(1, k):
                            acc -= a[j] * r[k - j]
                        refl = acc / err
                        if not np.isfinite(refl) or abs(refl) >= 1.0:
                            break
                        for j in range(1, k):
                            tmp[j] = a[j] - refl * a[k - j]
                        for j in range(1, k):
                            a[j] = tmp[j]
                        a[k] = refl
                        err *= 1.0 - refl * refl
                        errs[k] = err
                        for j in range(k):
                            lps[k, j] = a[j + 1]
                        usable = k
                        if err <= 0.0:
                            break
                if usable == 0:
                    break
                # rank the orders by estimate, then cost the best few exactly
                p0 = precisions[0]
                est = empty(usable, np.float64)
                for k in range(1, usable + 1):
                    e = errs[k] / max(errs[0], 1e-300)
                    est[k - 1] = 0.5 * m * np.log2(max(e, 1e-12)) + k * p0
                for c in range(imin(3, usable)):
                    # the c-th smallest estimate (ties: the lower order), as a stable sort ranks it;
                    # chosen orders are marked +inf (a selection, not np.argsort: numba's sort
                    # compiles for seconds)
                    k = np.int64(1)  # (a literal 1 would compile _quantize and _residual_bits again)
                    for j in range(1, usable):
                        if est[j] < est[k - 1]:
                            k = j + 1
                    est[k - 1] = np.inf
                    for pi in range(precisions.shape[0]):
                        prec = precisions[pi]
                        shift = _quantize(lps[k], k, prec, q)
                        bits = _residual_bits(s, lo, hi, k, q, shift, sh, pred) + k * prec + 10
                        if bits < best_bits:
                            best_bits = bits
                            best_order = k
                            best_shift = shift
                            best_prec = prec
                            for j in range(k):
                                best_q[j] = q[j]
                if not (high_gain > 0.0 and errs[usable] < high_gain * errs[0]):
                    break
        orders[b] = best_order
        shifts[b] = best_shift
        precs[b] = best_prec
        for j in range(best_order):
            coefs[c0 + j] = best_q[j]
        c0 += best_order
    return c0


@njit(cache=True, nogil=True)
def reweight_scales(e, step, span, u):
    """``u[j] = 1 / (1 + mean|e|)**2``, the mean over the ``span`` samples around sample
    ``i = j * step`` of ``e`` (``e[i - span//2]`` to ``e[i + (span-1)//2]``, zeros beyond the
    ends): the loudness weights of :func:`reweight_fit`'s equations. Each window is summed in
    order, then divided by ``span``: when ``span`` is a power of two and ``e`` holds integers
    with ``span * max|e| < 2**53`` every partial sum is exact, and the means are those of
    ``np.convolve(|e|, ones(span) / span, "same")[::step]`` (``len(e) >= span``) to the bit
    (else within rounding). ``u[j]`` for ``j < ceil(len(e) / step)`` (``u`` no shorter; the rest
    untouched); ``step, span >= 1``."""
    n = e.shape[0]
    for j in range((n + step - 1) // step):
        i = j * step
        t = 0.0
        for v in range(imax(i - span // 2, 0), imin(i + (span - 1) // 2 + 1, n)):
            t += abs(e[v])
        scale = t / span + 1.0
        u[j] = 1.0 / (scale * scale)


@njit(cache=True, nogil=True)
def reweight_gram(x, first, step, u, W, G):
    """The lower triangle of the weighted Gram matrix of the equations ``x[i - p + 1], ...,
    x[i]`` (oldest first; ``p = G.shape[0]``, ``i = first + t * step`` for ``t < len(u)``),
    weighted by ``u[t]``: ``G[a, b] = sum_t x[j + a] * (u[t] * x[j + b])``, ``j = i - p + 1``,
    for ``b <= a`` (the strict upper triangle is left as it was).

    The weighted equations are written to ``W`` first, then summed four at a time in their
    order (``((t0 + t1) + t2) + t3``, then added; equations of weight 0, which a caller pads
    with, add nothing): each update of a row of ``G`` is a loop over ``b`` that LLVM vectorizes,
    and four equations an update load and store ``G`` a quarter as often (about a third of the
    time of one equation an update, on 1024 x 33; equations read newest first took a third
    more). Preconditions: ``p >= 1``; ``len(u)`` a multiple of 4; ``first >= p - 1``; ``first
    + (len(u) - 1) * step < len(x)``; ``step >= 1``; ``W`` float64 of ``len(u)`` rows of ``p``."""
    p = G.shape[0]
    for t in range(u.shape[0]):
        j = first - p + 1 + t * step
        xt = x[j:j + p]  # (slices: no wrap-around checks in the loops)
        wt = W[t]
        ut = u[t]
        for b in range(p):
            wt[b] = ut * xt[b]
    for a in range(p):
        for b in range(a + 1):
            G[a, b] = 0.0
    for t in range(0, u.shape[0], 4):
        j = first - p + 1 + t * step
        x0 = x[j:j + p]
        x1 = x[j + step:j + step + p]
        x2 = x[j + 2 * step:j + 2 * step + p]
        x3 = x[j + 3 * step:j + 3 * step + p]
        w0, w1, w2, w3 = W[t], W[t + 1], W[t + 2], W[t + 3]
        for a in range(p):
            z0, z1, z2, z3 = x0[a], x1[a], x2[a], x3[a]
            g = G[a]
            for b in range(a + 1):
                g[b] += z0 * w0[b] + z1 * w1[b] + z2 * w2[b] + z3 * w3[b]


@njit(cache=True, nogil=True)
def reweight_fit(s, r, lo, hi, order, precision, sh, passes, span, equations, local, q):
    """The predictor of block ``[lo, hi)`` of the signal ``s`` by loudness-weighted least squares
    (``ubpe.frontend.lpc.lpc_reweight``'s refit), in compiled loops (no BLAS: the same floats on
    any machine and thread count).

    Each sample's prediction equation (samples ``fit_lo = max(lo, order)`` to ``hi``, every
    ``step``-th when there are more than ``equations``) is weighted by ``1 / scale**2``,
    ``scale`` the residual's local scale (:func:`reweight_scales`), starting from the residual
    ``r`` (int64, the whole signal's) of those samples. ``passes`` passes, each weighted by the
    previous pass's residual; per pass: the weighted Gram matrix (:func:`reweight_gram`), the
    Cholesky factor of the regressors' part after the diagonal's floor (``1e-9`` of its mean,
    plus ``1e-300``, as the Levinson recursion's), the forward solve that gives the weighted
    error at every order, the order minimising ``m/2 log2`` of that error's ratio to order 0's
    (``m`` samples) plus ``precision`` bits a coefficient, the back solve for its coefficients,
    their quantization (:func:`_quantize`), and the block's residual as :func:`lpc_filter`
    computes it within the signal, costed by one geometric law per ``local`` samples from
    ``lo`` (its bits summed in order), plus the coefficients' bits. A pass whose system is
    singular ends the refit.

    Returns the cheapest pass's ``(bits, order, shift)`` with its coefficients in ``q[:order]``,
    or order 0 when the block is too short to fit (``hi - fit_lo <= 2 * order``) or the first
    pass failed. Preconditions: ``s``, ``r`` int64 of one length ``>= hi``; ``0 <= lo < hi``;
    ``0 <= order <= 32``; ``precision`` in [2, 16]; ``sh`` in [0, 56]; ``span``, ``equations``,
    ``local >= 1``; ``len(q) >= order``.
    """
    fit_lo = imax(lo, order)
    m = hi - fit_lo
    if m <= 2 * order or order == 0:
        return 0.0, 0, 0
    step = (m + equations - 1) // equations
    rows = ((m + step - 1) // step + 3) // 4 * 4  # the equations, padded to a multiple of 4 (weights 0)
    p = order + 1
    base = fit_lo - order
    # the block and the order samples before it as floats, then zeros to the padding's last equation
    x = zeros(imax(order + m, order + (rows - 1) * step + 1), np.float64)
    for i in range(base, hi):
        x[i - base] = float(s[i])
    u = zeros(rows, np.float64)  # the weights (reweight_scales writes all but the padding's)
    W = empty((rows, p), np.float64)  # reweight_gram's scratch
    H = empty((p, p), np.float64)  # reweight_gram's (oldest first: H[a, b] pairs lags order - a, order - b)
    G = empty((p, p), np.float64)  # lower triangle; index 0 the sample, 1.. its lags
    L = zeros((order, order), np.float64)
    z = empty(order, np.float64)
    c = empty(order, np.float64)
    qk = empty(order, np.int64)
    e = empty(m, np.float64)
    for j in range(m):
        e[j] = float(r[fit_lo + j])
    start = imax(lo, 1)  # samples lo.. predicted: from the previous sample below order
    acc = empty(hi - start, np.uint64)
    best_bits, best_k, best_shift = np.inf, 0, 0
    for _ in range(passes):
        reweight_scales(e, step, span, u)
        reweight_gram(x, order, step, u, W, H)
        for a in range(p):
            for b in range(a + 1):
                G[a, b] = H[order - b, order - a]
        # subtle: G is finite (samples of at most 2**63 in magnitude, weights at most 1, at most
        # 2**24 equations: every sum below 2**150); e0 is 0 when the samples fitted are all zero
        e0 = G[0, 0]
        if not e0 > 0.0:
            break
        trace = 0.0
        for a in range(1, p):
            trace += G[a, a]
        floor = 1e-9 * trace / order + 1e-300
        ok = True  # Cholesky of the regressors' A = G[1:, 1:] + floor = L L^T
        for j in range(order):
            d = G[j + 1, j + 1] + floor
            for v in range(j):
                d -= L[j, v] * L[j, v]
            if not d > 0.0:
                ok = False
                break
            d = math.sqrt(d)
            L[j, j] = d
            for i in range(j + 1, order):
                w = G[i + 1, j + 1]
                for v in range(j):
                    w -= L[i, v] * L[j, v]
                L[i, j] = w / d
        if not ok:
            break
        k, cost, explained = np.int64(0), np.inf, 0.0  # (not a literal 0: _quantize's one compilation serves)
        for i in range(order):  # L z = g: the weighted error at order k is e0 - sum(z[:k]**2)
            w = G[i + 1, 0]
            for v in range(i):
                w -= L[i, v] * z[v]
            z[i] = w / L[i, i]
            explained += z[i] * z[i]
            here = 0.5 * m * math.log2(max(e0 - explained, e0 * 1e-12) / e0) + (i + 1) * precision
            if here < cost:
                k, cost = i + 1, here
        finite = True
        for i in range(k - 1, -1, -1):  # L[:k, :k]^T c = z[:k], i.e. A[:k, :k] c = g[:k]
            w = z[i]
            for v in range(i + 1, k):
                w -= L[v, i] * c[v]
            c[i] = w / L[i, i]
            finite &= math.isfinite(c[i])
        if not finite:  # (_quantize needs finite coefficients)
            break
        shift = _quantize(c, k, precision, qk)
        # lpc_filter's residual: predictions summed lag by lag over all the samples (loops
        # LLVM vectorizes; sums modulo 2**64, the same in any order), then sample by sample its
        # bits (one geometric law per local samples, in order) and the next pass's weights
        first = imax(lo, k)  # samples from here on are predicted by the coefficients
        for t in range(hi - start):
            acc[t] = 0
        for j in range(k):
            qj = np.uint64(qk[j])
            src = s[first - 1 - j:hi - 1 - j]
            dst = acc[first - start:]
            for t in range(hi - first):
                dst[t] += qj * np.uint64(src[t])
        bits, total, count = 0.0, 0.0, 0
        for i in range(lo, hi):
            if i >= k:
                pred = np.int64(acc[i - start]) >> np.int64(shift)
            elif i >= 1:
                pred = s[i - 1]
            else:
                pred = np.int64(0)
            v = float(wrap_sub(s[i], pred, sh))
            if i >= fit_lo:
                e[i - fit_lo] = v
            total += 2.0 * abs(v)
            count += 1
            if count == local or i == hi - 1:
                bits += _geometric_bits(total, count)
                total, count = 0.0, 0
        bits += k * precision
        if bits < best_bits:
            best_bits, best_k, best_shift = bits, k, shift
            for j in range(k):
                q[j] = qk[j]
    return best_bits, best_k, best_shift



#: The order from which :func:`lms_stage` runs :func:`lms_stage32` (where it applies): below it
#: the per-sample work outweighs the taps' (on ECG, order 17: 1.35 ms against 1.15 for the int64
#: loop; order 64: 1.58 against 1.80; order 256: 3.75 against 5.2). Order 32, the default
#: cascade's middle stage, since the split sum's own loop (``_split_run``): forward 1.40 times as
#: fast on audio, ECG and seismic (audio 3.39 -> 2.43 ms), inverse 1.02; 24-bit values at orders 32
#: and 48, 1.04-1.15 (benchmarks/results/l2aud.md)
LMS32_MIN_ORDER = 32

#: The "adaptive" stage's default cascade, (order, shift, rule) a stage (``ubpe.frontend.adaptive``
#: writes it): :func:`_cascade3_forward` compiles its numbers in
DEFAULT_CASCADE = ((256, 17, 1), (32, 14, 1), (4, 11, 1))


@njit(cache=True, nogil=True, inline="always")
def _adaptation(v, mag, rule):
    """A sample's adaptation value under an LMS stage's ``rule`` and the running magnitude after it:
    ``(value, mag)`` (int64). Rule 0: the sign of ``v``. Rule 1: ``mag += |v| - (mag >> 4)`` (|v| held
    to 2**50, the most negative int64 taken as the largest), then ``sign(v) min(16 |v| >>
    bit_length(mag >> 4), 64)``; ``mag`` unchanged under rule 0. One definition for the stages'
    loops, inlined (lms_pair_ab.py on ECG against the four copies it replaced: orders 256 and 32
    and the cascade within 1 %, order 4 at 0.97, 0.015 ms a decode)."""
    if rule == 0:
        return np.int64(v > 0) - np.int64(v < 0), mag
    av = abs(v)
    if av < 0:  # the most negative int64
        av = np.int64(0x7FFFFFFFFFFFFFFF)
    if av > (np.int64(1) << 50):
        av = np.int64(1) << 50
    mag += av - (mag >> 4)
    q = imin((av << 4) >> bit_length(mag >> 4), 64)
    return select(v >= 0, q, -q), mag


@njit(cache=True, nogil=True, inline="always")
def _split_taps(w, a, h, start, s_prev, order):
    """The split sum's taps (:func:`_lms_stage32`): each weight ``w[m]`` (m < order) updated by
    ``s_prev * a[start + m]``, then ``2 sum (x >> 1) h + sum (x & 1) h`` over ``h[start + 2 +
    m]`` as uint64 (congruent to the full sum modulo 2**33)."""
    da = np.uint32(0)  # sum (x >> 1) h, modulo 2**32
    db = np.int32(0)  # sum (x & 1) h, exact
    for m in range(order):  # (inverse: h[i] is still 0 here)
        x = np.int32(w[U(m)] + s_prev * a[U(start + m)])
        w[U(m)] = x
        hm = h[U(start + 2 + m)]
        da = np.uint32(da + np.uint32(np.int32(x >> 1) * hm))
        db = np.int32(db + np.int32(x & 1) * hm)
    return np.uint64(2 * np.int64(da)) + np.uint64(np.int64(db))


@njit(cache=True, nogil=True)
def _split_run(src, dst, w, a, h, i0, order, shift, rule, sh, inverse, mag, d, c, s_prev):
    """:func:`_lms_stage32`'s samples ``i0 .. n - 1`` (``i0 = order + 1``: past the warm-up)
    with the split sum (order a multiple of 16: :func:`split_taps`), from its state before
    sample ``i0`` (``mag``, ``d``, ``c``, ``s_prev``): the same ``dst``, ``w``, ``a`` and ``h``
    as its own loop, in a function of its own: that loop, with the warm-up's and the full sums'
    paths beside it, kept many more values live and spilled them every sample (ECG's inverse
    order-256 stage: 3.0 -> 2.8 ms; ``benchmarks/results/level2-decode-ecg-2.md``)."""
    n = src.shape[0]
    rnd = np.int64(1) << np.int64(shift - 1)
    last = U(order - 1)
    for i in range(i0, n):
        p = np.int64(np.uint64(rnd) + d + np.uint64(s_prev * np.int64(c))) >> np.int64(shift)
        if inverse:
            v = wrap_add(src[U(i)], p, sh)
            dst[U(i)] = v
            e = src[U(i)]
        else:
            e = wrap_sub(src[U(i)], p, sh)
            dst[U(i)] = e
            v = src[U(i)]
        ai, mag = _adaptation(v, mag, rule)
        a[U(i)] = ai
        s = np.int64(e > 0) - np.int64(e < 0)
        if i + 1 == n:
            break
        d = split_taps(w, a, h, i - 1 - order, s_prev, order)
        if inverse:
            d += np.uint64(np.int64(w[last]) * v)
            h[U(i)] = np.int32(v)
        c += np.uint64(np.int64(a[U(i - 1)]) * v)
        c -= np.uint64(np.int64(a[U(i - 1 - order)]) * np.int64(h[U(i - order)]))
        s_prev = s


@njit(cache=True, nogil=True)
def lms_stage32(src, order, shift, rule, sh, inverse, dst):
    """:func:`_lms_stage32` with scratch of its own."""
    return _lms_stage32(src, order, shift, rule, sh, inverse, dst, empty(src.shape[0], np.int64))


@njit(cache=True, nogil=True)
def _lms_stage32(src, order, shift, rule, sh, inverse, dst, scratch):
    """:func:`lms_stage` (the same ``dst``, to the bit) with int32 weights and history, for values
    of ``bits = 64 - sh <= 32`` and ``n <= 2**25`` samples: a weight moves by at most 64 a sample
    (rule 0: by 1), so it never leaves int32, and each product of two int32 is exact in int64 (a
    32 x 32 -> 64-bit vector multiply, half the bytes a tap), summed modulo 2**64 as
    :func:`lms_stage` sums. Returns False, ``dst`` unspecified, when a forward ``src`` value is
    outside int32 (not a ``bits``-bit value), True when done.

    The sum is split so that the serial chain from one residual to the next prediction is a few
    scalar operations: with ``U_j`` the weights after sample ``j``'s update (``U_j = U_{j-1} +
    s_j A_j``, ``s_j`` the residual's sign, ``A_j = a[j-order .. j-1]``) and ``H_j = h[j-order ..
    j-1]``, ``pred_i = rnd + U_{i-2}.H_i + s_{i-1} C_i`` (modulo 2**64, exactly), where
    ``C_i = A_{i-1}.H_i = sum a[t] h[t+1]`` over ``t`` in ``[i-1-order, i-2]`` is a sliding sum
    (one term in, one out, a sample). The loop over the taps (update by ``s_{i-1}``, then the
    product) does not wait for sample ``i``'s residual and overlaps the next sample's scalar
    work; in the inverse the newest history value (``h[i]``, just decoded) is added after it.

    *Split sum* (values of at most 16 bits, ``bits + shift <= 33``, order <= 1024, every value
    within ``bits`` bits): the output depends on the prediction modulo 2**bits only (``wrap``),
    so on the sum modulo 2**(bits + shift), a divisor of 2**33. With ``x = 2 (x >> 1) + (x & 1)``
    for each weight, ``U.H = 2 sum (x >> 1) h + sum (x & 1) h``: the first sum is needed modulo
    2**32 only (int32 products and sum, wrapping), the second is exact in int32 (at most 1024
    terms of magnitude <= 2**15). Both are 16-lane int32 vector operations, where the 64-bit
    products took twice the registers (ECG, order 256: 3.67 -> 3.35-3.42 ms). ``d`` then
    differs from the full sum by a multiple of 2**33: the same ``dst``.

    ``scratch``: int64, at least n values, overwritten (the int32 ``a`` and ``h`` below).

    Preconditions: :func:`lms_stage`'s, and those above."""
    n = src.shape[0]
    w = zeros(order, np.int32)
    s32 = scratch.view(np.int32)
    a = s32[0:n]  # (a[t] is written at sample t, read from sample t + 1 on)
    h = s32[n:2 * n]  # the history as int32 (inverse: written after each sample's taps)
    for i in range(n):
        h[i] = 0
    bits = 64 - sh
    split = bits <= 16 and bits + shift <= 33 and order <= 1024
    if not inverse:
        half = np.int64(1) << np.int64(bits - 1)
        for i in range(n):
            v = src[i]
            if v < -0x80000000 or v > 0x7FFFFFFF:
                return False
            if v < -half or v >= half:
                split = False  # (not a bits-bit value: the sums in full)
            h[i] = np.int32(v)
    mag = np.int64(0)  # 16 x running mean of |h|, saturating
    d = np.uint64(0)  # U_{i-2}.H_i (split: congruent modulo 2**33)
    c = np.uint64(0)  # C_i
    s_prev = np.int64(0)  # s_{i-1}
    if split and (order & 15) == 0 and n > order + 1:  # (the split sum's samples past the warm-up)
        mag, d, c, s_prev = _lms32_loop(src, dst, w, a, h, 0, order + 1, order, shift, rule, sh, inverse, split,
                                        mag, d, c, s_prev)
        _split_run(src, dst, w, a, h, order + 1, order, shift, rule, sh, inverse, mag, d, c, s_prev)
    else:
        _lms32_loop(src, dst, w, a, h, 0, n, order, shift, rule, sh, inverse, split, mag, d, c, s_prev)
    return True


@njit(cache=True, nogil=True)
def _lms32_loop(src, dst, w, a, h, i0, i1, order, shift, rule, sh, inverse, split, mag, d, c, s_prev):
    """:func:`_lms_stage32`'s samples ``i0 .. i1 - 1`` (the warm-up's partial taps below sample
    ``order + 1``, then the split or full sums), from its state before sample ``i0``, returned as
    it is before sample ``i1`` (when ``i1 < n``): ``(mag, d, c, s_prev)``."""
    n = src.shape[0]
    rnd = np.int64(1) << np.int64(shift - 1)
    for i in range(i0, i1):
        p = np.int64(np.uint64(rnd) + d + np.uint64(s_prev * np.int64(c))) >> np.int64(shift)
        if inverse:
            v = wrap_add(src[i], p, sh)
            dst[i] = v
            e = src[i]
        else:
            e = wrap_sub(src[i], p, sh)
            dst[i] = e
            v = src[i]
        ai, mag = _adaptation(v, mag, rule)
        a[i] = ai
        s = np.int64(e > 0) - np.int64(e < 0)
        if i + 1 == n:
            break
        # U_{i-1} = U_{i-2} + s_{i-1} A_{i-1}, then d = U_{i-1}.H_{i+1}: taps m0 .. order - 1
        # are live (a weight is 0 until a[j - order + m], j >= 0, has moved it); slices leave
        # loops over non-negative indices that LLVM vectorizes
        if split and i >= order + 1:  # (after the warm-up: every tap, a loop of fixed length)
            start = i - 1 - order
            if (order & 15) == 0:
                d = split_taps(w, a, h, start, s_prev, order)
            else:
                d = _split_taps(w, a, h, start, s_prev, order)
        else:
            m0 = imax(order + 1 - i, 0)
            k = order - m0
            start = i - 1 - order + m0
            d = np.uint64(0)
            for m in range(k):  # (inverse: h[i] is still 0 here)
                x = np.int32(w[U(m0 + m)] + s_prev * a[U(start + m)])
                w[U(m0 + m)] = x
                d += np.uint64(np.int64(x) * np.int64(h[U(start + 2 + m)]))
        if inverse:
            d += np.uint64(np.int64(w[order - 1]) * v)
            h[i] = np.int32(v)
        if i >= 1:  # C_{i+1} = C_i + a[i-1] h[i] - a[i-1-order] h[i-order]
            c += np.uint64(np.int64(a[i - 1]) * v)
        if i - 1 - order >= 0:
            c -= np.uint64(np.int64(a[i - 1 - order]) * np.int64(h[i - order]))
        s_prev = s
    return mag, d, c, s_prev


@njit(cache=True, nogil=True)
def lms_stage4(src, shift, rule, sh, inverse, dst):
    """:func:`lms_stage` of order 4 (the same ``dst``, to the bit, for every input it accepts):
    the weights, the last 4 values and their adaptation values in scalars (registers), where
    :func:`lms_stage`'s loops over 4-element slices cost more than their taps (ECG inverse,
    level 2's last stage: 1.14 -> 0.48 ms). Values before the first sample count as 0 with
    adaptation value 0, so their taps add 0 and their weights do not move, as :func:`lms_stage`
    leaves the taps of the warm-up out.

    Preconditions: :func:`lms_stage`'s."""
    rnd = np.int64(1) << np.int64(shift - 1)
    state = STATE4
    for i in range(src.shape[0]):
        dst[i], state = _step4(src[i], state, rnd, shift, rule, sh, inverse)


#: :func:`_step4`'s state before the first sample: running magnitude, weights, values and
#: their adaptation values all 0
STATE4 = (np.int64(0),) * 13


@njit(cache=True, nogil=True, inline="always")
def _step4(x, state, rnd, shift, rule, sh, inverse):
    """One sample ``x`` of an order-4 stage (:func:`lms_stage4`; ``rnd = 2**(shift - 1)``):
    its output (forward the residual, inverse the value) and the state after it, ``(mag, w0 ..
    w3, h1 .. h4, a1 .. a4)``: ``w[j]`` the weight of ``h[i - 1 - j]``, ``h1`` the last value,
    ``a1`` its adaptation value."""
    mag, w0, w1, w2, w3, h1, h2, h3, h4, a1, a2, a3, a4 = state
    acc = (np.uint64(rnd) + np.uint64(w0) * np.uint64(h1) + np.uint64(w1) * np.uint64(h2)
           + np.uint64(w2) * np.uint64(h3) + np.uint64(w3) * np.uint64(h4))
    p = np.int64(acc) >> np.int64(shift)
    if inverse:
        e = np.int64(x)
        v = wrap_add(e, p, sh)
        out = v
    else:
        v = np.int64(x)
        e = wrap_sub(v, p, sh)
        out = e
    ai, mag = _adaptation(v, mag, rule)
    s = np.int64(e > 0) - np.int64(e < 0)
    return out, (mag, w0 + s * a1, w1 + s * a2, w2 + s * a3, w3 + s * a4, v, h1, h2, h3, ai, a1, a2, a3)


@njit(cache=True, nogil=True)
def lms_stage(src, order, shift, rule, sh, inverse, dst):
    """:func:`_lms_stage` with scratch of its own (the definition: there)."""
    _lms_stage(src, order, shift, rule, sh, inverse, dst, empty(src.shape[0], np.int64))


@njit(cache=True, nogil=True)
def _lms_stage(src, order, shift, rule, sh, inverse, dst, scratch):
    """One LMS stage: forward ``dst = wrap(src - pred)``, inverse ``dst = wrap(src + pred)``.

    ``pred[i] = (sum_j w[j] * h[i - 1 - j] + 2**(shift - 1)) >> shift`` over the stage's input
    history ``h`` (``src`` forward, ``dst`` inverse); weights start at zero and, after each
    sample, move by ``sign(e[i]) * a[i - 1 - j]`` where ``e`` is the stage's residual and ``a``
    the adaptation value of each input sample:

    * ``rule == 0`` (sign-sign): ``a = sign(h)``;
    * ``rule == 1`` (sign-error, normalized): ``a = sign(h) * min(64, (|h| << 4) >> m)`` where
      ``m`` is the bit length of the input's running mean magnitude (a power-of-two NLMS: the
      step no longer depends on the signal's level).

    Weights are int64 and move by at most 64 per sample, so they cannot overflow for any
    n < 2**50 samples; they are not clamped (a branch-free update loop vectorizes).

    From order :data:`LMS32_MIN_ORDER`, for values of at most 32 bits and at most 2**25
    samples, :func:`lms_stage32` computes the same ``dst`` faster; at order 4,
    :func:`lms_stage4`.

    ``scratch`` (int64, at least len(src) values, overwritten) holds the per-sample
    adaptation values: a cascade passes the same scratch to every stage, whose memory is then
    touched (page faults, zeroing) once a call, not once a stage (ECG: about 1 ms of a 7 ms
    inverse cascade was the first touches of fresh arrays).

    Preconditions: len(dst) == len(src); order >= 1; 1 <= shift <= 28; rule in {0, 1};
    sh in [0, 56]; src, dst and scratch distinct.
    """
    n = src.shape[0]
    if order == 4:
        lms_stage4(src, shift, rule, sh, inverse, dst)
        return
    if order >= LMS32_MIN_ORDER and sh >= 32 and n <= (1 << 25):
        if _lms_stage32(src, order, shift, rule, sh, inverse, dst, scratch):
            return
    h = src if not inverse else dst
    # The weights are kept reversed, wr[order - 1 - j] = w[j], so that both the prediction and
    # the update walk memory forwards (wr[m] pairs with h[i - order + m] and a[i - order + m]);
    # one loop over slices does both, tap by tap, and LLVM vectorizes it (reversed loops were
    # about 4x slower at order 256; this loop and the bit length by leading zeros took 15-20 %
    # off the two forward loops of before). The
    # update after sample i is done right after it, before the prediction of sample i + 1, as
    # the definition says: each tap's weight is updated before its product is summed. The sum
    # is taken modulo 2**64, so its order does not change it: the residuals are the ones the
    # definition above gives. Positions m < order - i were never updated and hold 0, so during
    # the warm-up (i < order) the loop starts at m0 = order - i.
    wr = zeros(order, np.int64)
    a = scratch[0:n]
    for i in range(n):
        a[i] = 0
    rnd = np.int64(1) << np.int64(shift - 1)
    mag = np.int64(0)  # 16 x running mean of |h|, saturating
    acc = np.uint64(rnd)  # the prediction sum of sample 0: no history
    for i in range(n):
        p = np.int64(acc) >> np.int64(shift)
        if inverse:
            dst[i] = wrap_add(src[i], p, sh)
            e = src[i]
        else:
            e = wrap_sub(src[i], p, sh)
            dst[i] = e
        # this sample's adaptation value, for the updates that follow
        v = h[i]
        a[i], mag = _adaptation(v, mag, rule)
        if i + 1 == n:
            break
        # taps m0 .. order - 1 are live (m0 = order - i in the warm-up, else 0): wr[m] pairs
        # with a[i - order + m] for this update and h[i + 1 - order + m] for the next
        # prediction. Slicing first leaves loops over non-negative indices that LLVM
        # vectorizes (an index that may be negative costs a wrap-around check per element).
        m0 = imax(order - i, 0)
        k = order - m0
        start = i - order + m0
        wv = wr[m0:]
        adapt = a[start:start + k]
        hv = h[start + 1:start + 1 + k]
        # one pass: each weight's update (by 0 when e == 0), then its product
        acc = np.uint64(rnd)
        sgn = np.int64(e > 0) - np.int64(e < 0)  # (np.int64 each: numpy refuses bool - bool)
        for m in range(k):
            w = wv[m] + sgn * adapt[m]
            wv[m] = w
            acc += np.uint64(w) * np.uint64(hv[m])


@njit(cache=True, nogil=True)
def lms_cascade_rows(src, orders, shifts, rules, sh, inverse, dst):
    """:func:`lms_stage` cascades over every row of ``src`` (C, F): forward runs the stages in
    order, inverse in reverse order; one call for all channels (no per-channel dispatch).

    Each row's stages alternate between one temporary signal and the row of ``dst`` (the
    first stage reads the row of ``src``, the last writes the row of ``dst``), and share one
    scratch: two n-value arrays a call, every page of them touched once (fresh arrays per stage
    cost their first touches: about 1 ms of ECG's inverse).

    Preconditions: src and dst int64 of the same 2-D shape, distinct; orders, shifts, rules of
    one length (at most 8) meeting :func:`lms_stage`'s preconditions; sh in [0, 56].
    """
    n = src.shape[1]
    lms_cascade_rows_into(src, orders, shifts, rules, sh, inverse, dst, empty(n, np.int64), empty(n, np.int64))


@njit(cache=True, nogil=True, inline="always")
def _cascade3_applies(n, orders, shifts, rules, sh):
    """Whether ``orders``, ``shifts`` and ``rules`` are :data:`DEFAULT_CASCADE`'s, on 16-bit values
    (``sh`` 48) of a row of ``n`` samples, longer than the first stage's warm-up and at most 2**25:
    where :func:`_cascade3_forward` and :func:`_cascade3_inverse` apply."""
    (oa, sa, ra), (ob, sb, rb), (o4, s4, r4) = DEFAULT_CASCADE
    return (orders.shape[0] == 3 and sh == 48 and oa + 1 < n <= (1 << 25)
            and orders[0] == oa and orders[1] == ob and orders[2] == o4 and shifts[0] == sa
            and shifts[1] == sb and shifts[2] == s4 and rules[0] == ra and rules[1] == rb and rules[2] == r4)


@njit(cache=True, nogil=True, inline="always")
def _cascade3_state(n, scratch, tmp):
    """The two long stages' state: each one's taps (zero, int32) and its two int32 arrays of
    ``n`` cells, the first's in ``scratch``, the second's in ``tmp``."""
    va = scratch.view(np.int32)
    vb = tmp.view(np.int32)
    return (zeros(DEFAULT_CASCADE[0][0], np.int32), va[0:n], va[n:2 * n],
            zeros(DEFAULT_CASCADE[1][0], np.int32), vb[0:n], vb[n:2 * n])


@njit(cache=True, nogil=True)
def _cascade3_forward(src, orders, shifts, rules, sh, dst, tmp, scratch):
    """The default cascade (:data:`DEFAULT_CASCADE`: two long stages, then order 4) forward on
    16-bit values (``sh`` 48), its numbers compiled in, in one loop over the samples past the
    first stage's warm-up: the same ``dst`` as the stages one after the other
    (:func:`_lms_stage32` twice, :func:`lms_stage4`), where each stage's serial chain from one
    residual to the next prediction (the sign, the taps, the sums) waited on itself and the
    next stage's work could not overlap it (audio and ECG's forward cascades 1.25-1.27 times as
    fast; with the numbers as variables, 1.07-1.09: ``benchmarks/results/l2aud.md``). Each long
    stage's state, ``w``, ``a``, ``h`` as :func:`_lms_stage32` keeps them (the first's in
    ``scratch``, the second's in ``tmp``, as int32); the second's history written as the first
    makes it (a wrapped residual, within 16 bits: its split sum holds), then its taps as
    :func:`_split_run`'s. Returns False, ``dst`` unspecified, where this does not apply (then
    the stages run one after the other): other stages or widths, a value outside 16 bits, rows
    of at most 257 or more than 2**25 samples. Preconditions: :func:`lms_cascade_rows_into`'s,
    one row."""
    (oa, sa, ra), (ob, sb, rb), (o4, s4, r4) = DEFAULT_CASCADE
    n = src.shape[0]
    if not _cascade3_applies(n, orders, shifts, rules, sh):
        return False
    wa, aa, ha, wb, ab, hb = _cascade3_state(n, scratch, tmp)
    for i in range(n):
        v = src[i]
        if v < -32768 or v >= 32768:
            return False
        ha[i] = np.int32(v)
    z = np.uint64(0)
    # the first long stage's warm-up, then the second's and the order-4 stage's on its outputs
    # (each a row's length: the stages' loops stop short only at a row's last sample; the first's
    # outputs in dst, read by the second before the last stage writes them)
    pa = oa + 1
    ea = dst
    eb = empty(n, np.int64)
    # (the arguments typed as _lms_stage32's: one compilation of _lms32_loop serves both)
    i64, no, yes = np.int64, sh < 0, sh == 48
    state_a = _lms32_loop(src, ea, wa, aa, ha, 0, i64(pa), i64(oa), i64(sa), i64(ra), i64(48), no, yes, i64(0), z, z,
                          i64(0))
    for i in range(pa):
        hb[i] = np.int32(ea[i])
    state_b = _lms32_loop(ea, eb, wb, ab, hb, 0, i64(pa), i64(ob), i64(sb), i64(rb), i64(48), no, yes, i64(0), z, z,
                          i64(0))
    state4 = STATE4
    for i in range(pa):
        dst[i], state4 = _step4(eb[i], state4, np.int64(1) << np.int64(s4 - 1), s4, r4, 48, False)
    _cascade3_run(src, dst, wa, aa, ha, wb, ab, hb, pa, oa, ob, sa, sb, s4, ra, rb, r4, 48, state_a + state_b + (state4,))
    return True


@njit(cache=True, nogil=True, inline="always")
def _cascade3_run(src, dst, wa, aa, ha, wb, ab, hb, i0, oa, ob, sha, shb, sh4, rua, rub, ru4, sh, state):
    """:func:`_cascade3_forward`'s samples from ``i0`` (past the first stage's warm-up) to the
    row's end, the three stages at once, from their ``state`` before sample ``i0``; inlined
    (at a call whose orders, shifts, rules and ``sh`` are constants they are compiled in)."""
    n = src.shape[0]
    ma, da, ca, sa_prev, mb, db, cb, sb_prev, s4 = state
    ra = np.int64(1) << np.int64(sha - 1)
    rb = np.int64(1) << np.int64(shb - 1)
    r4 = np.int64(1) << np.int64(sh4 - 1)
    for i in range(i0, n):
        v = src[U(i)]
        p = np.int64(np.uint64(ra) + da + np.uint64(sa_prev * np.int64(ca))) >> np.int64(sha)
        e = wrap_sub(v, p, sh)
        ai, ma = _adaptation(v, ma, rua)
        aa[U(i)] = ai
        s = np.int64(e > 0) - np.int64(e < 0)
        hb[U(i)] = np.int32(e)
        q = np.int64(np.uint64(rb) + db + np.uint64(sb_prev * np.int64(cb))) >> np.int64(shb)
        f = wrap_sub(e, q, sh)
        bi, mb = _adaptation(e, mb, rub)
        ab[U(i)] = bi
        t = np.int64(f > 0) - np.int64(f < 0)
        dst[U(i)], s4 = _step4(f, s4, r4, sh4, ru4, sh, False)
        if i + 1 == n:
            break
        da = split_taps(wa, aa, ha, i - 1 - oa, sa_prev, oa)
        ca += np.uint64(np.int64(aa[U(i - 1)]) * v)
        ca -= np.uint64(np.int64(aa[U(i - 1 - oa)]) * np.int64(ha[U(i - oa)]))
        sa_prev = s
        db = split_taps(wb, ab, hb, i - 1 - ob, sb_prev, ob)
        cb += np.uint64(np.int64(ab[U(i - 1)]) * e)
        cb -= np.uint64(np.int64(ab[U(i - 1 - ob)]) * np.int64(hb[U(i - ob)]))
        sb_prev = t


@njit(cache=True, nogil=True)
def _cascade3_inverse(src, orders, shifts, rules, sh, dst, tmp, scratch):
    """:func:`_cascade3_forward`'s inverse: the default cascade undone on 16-bit values, the
    stages' inverses (order 4, then the second long stage, then the first) in one loop over the
    samples past the first stage's warm-up, the same ``dst`` as the stages one after the other.
    Each stage's prediction of a sample depends on its own past outputs only, so the three are
    computed side by side, and only the three additions that undo them wait on each other.
    Returns False, ``dst`` unspecified, where :func:`_cascade3_forward` would (other stages,
    ``sh``, rows of at most 257 or more than 2**25 samples); any residual is accepted, as the
    stages accept it. Preconditions: :func:`lms_cascade_rows_into`'s, one row."""
    (oa, sa, ra), (ob, sb, rb), (o4, s4, r4) = DEFAULT_CASCADE
    n = src.shape[0]
    if not _cascade3_applies(n, orders, shifts, rules, sh):
        return False
    wa, aa, ha, wb, ab, hb = _cascade3_state(n, scratch, tmp)
    for i in range(n):  # (inverse: each history value is written after its sample's taps)
        ha[i] = 0
        hb[i] = 0
    z = np.uint64(0)
    # the warm-up, stage after stage: the order-4 stage's values in dst, the second long stage's
    # in eb, then the first's over dst (each loop a row's length: they stop short only at a
    # row's last sample, so each returns its state before sample pa)
    pa = oa + 1
    state4 = STATE4
    for i in range(pa):
        dst[i], state4 = _step4(src[i], state4, np.int64(1) << np.int64(s4 - 1), s4, r4, 48, True)
    eb = empty(n, np.int64)
    # (the arguments typed as _lms_stage32's: one compilation of _lms32_loop serves all)
    i64, yes = np.int64, sh == 48
    state_b = _lms32_loop(dst, eb, wb, ab, hb, 0, i64(pa), i64(ob), i64(sb), i64(rb), i64(48), yes, yes, i64(0), z, z,
                          i64(0))
    state_a = _lms32_loop(eb, dst, wa, aa, ha, 0, i64(pa), i64(oa), i64(sa), i64(ra), i64(48), yes, yes, i64(0), z, z,
                          i64(0))
    _cascade3_inverse_run(src, dst, wa, aa, ha, wb, ab, hb, pa, oa, ob, sa, sb, s4, ra, rb, r4, 48,
                          state_a + state_b + (state4,))
    return True


@njit(cache=True, nogil=True, inline="always")
def _cascade3_inverse_run(src, dst, wa, aa, ha, wb, ab, hb, i0, oa, ob, sha, shb, sh4, rua, rub, ru4, sh, state):
    """:func:`_cascade3_inverse`'s samples from ``i0`` to the row's end, the three stages at
    once, from their ``state`` before sample ``i0`` (each long stage as :func:`_split_run`
    inverts it); inlined, its numbers compiled in at a call with constants."""
    n = src.shape[0]
    ma, da, ca, sa_prev, mb, db, cb, sb_prev, s4 = state
    ra = np.int64(1) << np.int64(sha - 1)
    rb = np.int64(1) << np.int64(shb - 1)
    r4 = np.int64(1) << np.int64(sh4 - 1)
    lasta = U(oa - 1)
    lastb = U(ob - 1)
    for i in range(i0, n):
        p = np.int64(np.uint64(ra) + da + np.uint64(sa_prev * np.int64(ca))) >> np.int64(sha)
        q = np.int64(np.uint64(rb) + db + np.uint64(sb_prev * np.int64(cb))) >> np.int64(shb)
        f, s4 = _step4(src[U(i)], s4, r4, sh4, ru4, sh, True)
        e = wrap_add(f, q, sh)  # the second long stage: residual f, value e
        bi, mb = _adaptation(e, mb, rub)
        ab[U(i)] = bi
        t = np.int64(f > 0) - np.int64(f < 0)
        v = wrap_add(e, p, sh)  # the first: residual e, value v
        dst[U(i)] = v
        ai, ma = _adaptation(v, ma, rua)
        aa[U(i)] = ai
        s = np.int64(e > 0) - np.int64(e < 0)
        if i + 1 == n:
            break
        da = split_taps(wa, aa, ha, i - 1 - oa, sa_prev, oa) + np.uint64(np.int64(wa[lasta]) * v)
        ha[U(i)] = np.int32(v)
        ca += np.uint64(np.int64(aa[U(i - 1)]) * v)
        ca -= np.uint64(np.int64(aa[U(i - 1 - oa)]) * np.int64(ha[U(i - oa)]))
        sa_prev = s
        db = split_taps(wb, ab, hb, i - 1 - ob, sb_prev, ob) + np.uint64(np.int64(wb[lastb]) * e)
        hb[U(i)] = np.int32(e)
        cb += np.uint64(np.int64(ab[U(i - 1)]) * e)
        cb -= np.uint64(np.int64(ab[U(i - 1 - ob)]) * np.int64(hb[U(i - ob)]))
        sb_prev = t


@njit(cache=True, nogil=True)
def lms_cascade_rows_into(src, orders, shifts, rules, sh, inverse, dst, tmp, scratch):
    """:func:`lms_cascade_rows` with its temporary signal ``tmp`` (int64, exactly a row's
    length) and ``scratch`` (int64, at least a row's length) given, both overwritten, distinct
    from each other, ``src`` and ``dst``: a caller that decodes again and again keeps them
    (``ubpe.frontend.adaptive``). Returns False, nothing done, when their lengths are not
    those; else True."""
    n_rows, n = src.shape
    m = orders.shape[0]
    if tmp.shape[0] != n or scratch.shape[0] < n:
        return False
    for c in range(n_rows):
        if m == 0:
            for i in range(n):
                dst[c, i] = src[c, i]
        if m == 3 and not inverse and _cascade3_forward(src[c], orders, shifts, rules, sh, dst[c], tmp, scratch):
            continue
        if m == 3 and inverse and _cascade3_inverse(src[c], orders, shifts, rules, sh, dst[c], tmp, scratch):
            continue
        for t in range(m):
            k = select(inverse, m - 1 - t, t)
            out_dst = ((m - 1 - t) & 1) == 0  # (the last stage writes dst)
            if t == 0 and out_dst:
                _lms_stage(src[c], orders[k], shifts[k], rules[k], sh, inverse, dst[c], scratch)
            elif t == 0:
                _lms_stage(src[c], orders[k], shifts[k], rules[k], sh, inverse, tmp, scratch)
            elif out_dst:
                _lms_stage(tmp, orders[k], shifts[k], rules[k], sh, inverse, dst[c], scratch)
            else:
                _lms_stage(dst[c], orders[k], shifts[k], rules[k], sh, inverse, tmp, scratch)
    return True
