"""Plain-Python reference of ubpe.predict's integer arithmetic (Python ints, explicit modulo).

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
