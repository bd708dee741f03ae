"""Plain-Python reference of the prediction stages' integer arithmetic (ubpe.frontend.lpc,
adaptive, grid and rank: Python ints, explicit modulo).

Slow and obviously correct: the kernels must agree with it value for value.
"""


def to_signed(v, bits):
    """``v`` modulo 2**bits, as its signed representative."""
    v %= 1 << bits
    return v - (1 << bits) if v >= 1 << (bits - 1) else v


def lpc_residual(x, bits, block, orders, shifts, coefs, inverse=False):
    """Forward: residuals of signed samples ``x``; inverse: samples from residuals ``x``."""
    n = len(x)
    out = [0] * n
    hist = out if inverse else x
    c0 = 0
    for b, (order, shift) in enumerate(zip(orders, shifts)):
        c = coefs[c0:c0 + order]
        for i in range(b * block, min(n, (b + 1) * block)):
            if i >= order:
                acc = to_signed(sum(c[j] * hist[i - 1 - j] for j in range(order)), 64)
                p = acc >> shift  # Python's >> on a negative int is the arithmetic shift
            elif i >= 1:
                p = hist[i - 1]
            else:
                p = 0
            out[i] = to_signed(x[i] + p if inverse else x[i] - p, bits)
        c0 += order
    return out


def lms_stage(x, bits, order, shift, rule=0, inverse=False):
    """One LMS stage (see ubpe._kernels.predict.lms_stage): rule 0 sign-sign, 1 normalized."""
    n = len(x)
    out = [0] * n
    hist = out if inverse else x
    w = [0] * order
    a = [0] * n
    mag = 0
    sign = lambda v: (v > 0) - (v < 0)  # noqa: E731
    for i in range(n):
        k = min(order, i)
        acc = to_signed((1 << (shift - 1)) + sum(w[j] * hist[i - 1 - j] for j in range(k)), 64)
        p = acc >> shift
        if inverse:
            out[i] = to_signed(x[i] + p, bits)
            e = x[i]
        else:
            e = out[i] = to_signed(x[i] - p, bits)
        for j in range(k):
            w[j] += sign(e) * a[i - 1 - j]
        v = hist[i]
        if rule == 0:
            a[i] = sign(v)
        else:
            av = min(abs(v), 1 << 50)
            mag += av - (mag >> 4)
            a[i] = sign(v) * min(64, (av << 4) >> (mag >> 4).bit_length())
    return out


def cascade(x, bits, stages, inverse=False):
    for order, shift, rule in (reversed(stages) if inverse else stages):
        x = lms_stage(x, bits, order, shift, rule, inverse)
    return x


def grid(values):
    """(offset, step, k) of values on offset + step * k; step 1 (identity) when there is none."""
    if not values:
        return 0, 1, list(values)
    lo = min(values)
    step = 0
    for v in values:
        a, b = step, v - lo
        while b:
            a, b = b, a % b
        step = a
    if step <= 1:
        return 0, 1, list(values)
    return lo, step, [(v - lo) // step for v in values]


def ranks(values):
    """(distinct values in increasing order, each value's rank among them)."""
    distinct = sorted(set(values))
    index = {v: i for i, v in enumerate(distinct)}
    return distinct, [index[v] for v in values]


def quantize(c, precision):
    """FLAC's quantization with error feedback (``ubpe._kernels.predict._quantize``): ``(q, shift)``."""
    import math

    cmax = max(abs(v) for v in c)
    if cmax <= 0.0:
        return [0] * len(c), 0
    shift = min(max(precision - 1 - (math.floor(math.log2(cmax)) + 1), 0), 30)
    qmax, qmin = (1 << (precision - 1)) - 1, -(1 << (precision - 1))
    q, err = [], 0.0
    for v in c:
        v = v * (1 << shift) + err
        fr = min(max(float(round(v)), qmin), qmax)  # round: half to even, as np.rint
        q.append(int(fr))
        err = v - fr
    return q, shift


def local_scale(e, span):
    """Mean magnitude of the float array ``e`` over ``span`` samples around each (``e[i - span//2]``
    to ``e[i + (span-1)//2]``, zeros beyond the ends): ``np.convolve(|e|, ones/span, "same")``
    (which returns ``span`` values for fewer samples: then from cumulative sums)."""
    import numpy as np

    a = np.abs(e)
    n = a.shape[0]
    if n >= span:
        return np.convolve(a, np.full(span, 1.0 / span), "same")
    c = np.concatenate(([0.0], np.cumsum(a)))
    i = np.arange(n)
    return (c[np.minimum(i + (span - 1) // 2 + 1, n)] - c[np.maximum(i - span // 2, 0)]) / span


def weighted_fit(s, lo, hi, r, order, precision, bits):
    """``ubpe._kernels.predict.reweight_fit`` in numpy (what ``ubpe.frontend.lpc`` ran before it,
    with BLAS and LAPACK: the same arithmetic up to float rounding): ``(bits, order, shift,
    coefs)`` of the cheapest pass, or None. ``s``, ``r``: the signal and its residual (int64
    arrays), ``bits`` the sample width; the tuning is the planner's default settings'
    (``ubpe.planner.settings.DEFAULT``)."""
    import numpy as np

    from ubpe.frontend import lpc as P
    from ubpe.planner.settings import DEFAULT as S

    fit_lo = max(lo, order)
    m = hi - fit_lo
    if m <= 2 * order or order == 0:
        return None
    step = -(-m // S.lpc_reweight_equations)
    # Z[t] = s[i], s[i-1], ..., s[i-order] for i = fit_lo + t * step: y and its regressors
    Z = np.lib.stride_tricks.sliding_window_view(s[fit_lo - order:hi].astype(np.float64), order + 1)[::step, ::-1]
    e = r[fit_lo:hi].astype(np.float64)
    best = None
    for _ in range(S.lpc_reweight_iterations):
        scale = local_scale(e, S.lpc_reweight_span)[::step] + 1.0
        G = Z.T @ (Z / (scale * scale)[:, None])
        e0, g, A = G[0, 0], G[1:, 0], G[1:, 1:]
        A[np.diag_indices(order)] += 1e-9 * np.trace(A) / order + 1e-300
        if not (e0 > 0 and np.isfinite(G).all()):
            break
        try:
            low = np.linalg.cholesky(A)
        except np.linalg.LinAlgError:
            break
        z = np.linalg.solve(low, g)  # the weighted error at order k: e0 - sum(z[:k]**2)
        errs = np.maximum(e0 - np.cumsum(z * z), e0 * 1e-12)
        k = int(np.argmin(0.5 * m * np.log2(errs / e0) + np.arange(1, order + 1) * precision)) + 1
        c = np.linalg.solve(A[:k, :k], g[:k])
        if not np.isfinite(c).all():
            break
        q, shift = quantize(c.tolist(), precision)
        start = max(lo - k, 0)  # (the samples before lo: the prediction's history only)
        res = np.array(lpc_residual(s[start:hi].tolist(), bits, hi, [k], [shift], q)[lo - start:], np.int64)
        cost = P._local_bits(res, S.lpc_local_span) + k * precision
        if best is None or cost < best[0]:
            best = (cost, k, shift, q)
        e = res[fit_lo - lo:].astype(np.float64)
    return best


def channels_predicted(x, bits, refs, weights, shift=12, inverse=False):
    """The "decorrelate" stage for C != 2 on ``x`` (a list of C lists of signed ints): channel
    ``c`` minus (forward) or plus (inverse) ``(sum_j w_j * x[r_j] + 2**(shift - 1)) >> shift``,
    the sum taken modulo 2**64, the result modulo 2**bits; the inverse restores channels in
    increasing order from those already restored."""
    out = [list(row) for row in x]
    source = out if inverse else x
    for c, (rs, ws) in enumerate(zip(refs, weights)):
        if not rs:
            continue
        for i in range(len(x[c])):
            acc = to_signed(sum(w * source[r][i] for r, w in zip(rs, ws)) + (1 << (shift - 1)), 64)
            p = acc >> shift
            out[c][i] = to_signed(x[c][i] + p if inverse else x[c][i] - p, bits)
    return out
