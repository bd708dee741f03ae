"""Small compiled passes of level 1's planner and of ``mult_detect``'s screen (issue 28: a short
input's fixed Python cost), each the integers a chain of small numpy calls made, in one call:

* :func:`digit_table`: ``mult_detect``'s digit histograms of every base (``np.bincount`` of
  ``x - floor(x / M) * M``, then five reshaped sums, ten more and a gather with
  ``np.add.reduceat``: about ten passes and their temporaries).
* :func:`quotient_counts`, :func:`mult_offsets`: ``mult_detect``'s exact test, every base at once.
* :func:`rank_present`: :func:`ubpe.planner.fast._layout_pass`'s ranks, present values and median
  from a histogram (``cumsum(counts > 0) - 1``, ``flatnonzero``, ``searchsorted(cumsum(counts))``).
* :func:`present_ranks`: ``rank_forward``'s values present and rank table (``flatnonzero``,
  ``cumsum``); :func:`min_max`: ``y.min()`` and ``y.max()`` in one pass.

Every output is integers (or integers as float64): the same numbers as the numpy they replace,
whatever the order of the additions. The floats computed from them (logarithms, sums of
products) stay numpy's, so the estimates are the same floats.
"""

from __future__ import annotations

import math

import numpy as np

from . import digits as _digits
from . import njit

#: ``ubpe.frontend.mult.MULT_MODULUS`` and its folds (``_MULT_FOLDS``), constants here
#: (:func:`digit_table`: divisions by constants are multiplies); that module checks they agree
MULT_MODULUS = 20160
MULT_FOLDS = (576, 320, 2880, 4032, 2240)


@njit(cache=True, nogil=True, inline="always")
def _fold(src, n, m, dst):
    """``dst[j] = sum of src[k] for k = j mod m, k < n`` (``n`` a multiple of ``m``): the
    ``m``-cell chunks of ``src`` added into a fresh accumulator (vectorized; the same sums)."""
    acc = np.zeros(m, np.int64)
    for start in range(0, n, m):
        chunk = src[start:start + m]
        for j in range(m):
            acc[j] += chunk[j]
    dst[:m] = acc


@njit(cache=True, nogil=True)
def digit_table(x, bases, fold_of, parent, out):
    """The digit histogram of each base of ``bases`` over the integers ``x`` (at most 32 bits, so
    exact as int64): row ``i`` of ``out`` (int64, ``(len(bases), >= max(bases))``; its first
    ``bases[i]`` cells written) counts the values of ``x mod bases[i]`` (floor modulus, in ``[0,
    bases[i])``). One pass over ``x`` counts its residues modulo :data:`MULT_MODULUS` (a
    constant divisor: a multiply), folded to each of :data:`MULT_FOLDS`; a row with ``parent[i] == i`` folds from
    ``MULT_FOLDS[fold_of[i]]`` (a multiple of its base), any other from row ``parent[i]``
    (itself folded from the folds: ``parent[parent[i]] == parent[i]``, its base a multiple of
    ``bases[i]``). The counts ``np.bincount`` of ``x mod MULT_MODULUS`` folded by reshaped sums
    gives (integers: any order). (``MULT_FOLDS[2]`` is a multiple of ``MULT_FOLDS[0]`` and of
    ``MULT_FOLDS[1]``; each fold divides ``MULT_MODULUS``.)"""
    hist = np.zeros(MULT_MODULUS, np.int64)
    for i in range(x.shape[0]):
        r = np.int64(x[i]) % MULT_MODULUS
        if r < 0:
            r += MULT_MODULUS
        hist[r] += 1
    # the folds: 2880's from the histogram, 576's and 320's from it (its multiples), 4032's and 2240's
    f2 = np.empty(MULT_FOLDS[2], np.int64)
    _fold(hist, MULT_MODULUS, MULT_FOLDS[2], f2)
    f0 = np.empty(MULT_FOLDS[0], np.int64)
    _fold(f2, MULT_FOLDS[2], MULT_FOLDS[0], f0)
    f1 = np.empty(MULT_FOLDS[1], np.int64)
    _fold(f2, MULT_FOLDS[2], MULT_FOLDS[1], f1)
    f3 = np.empty(MULT_FOLDS[3], np.int64)
    _fold(hist, MULT_MODULUS, MULT_FOLDS[3], f3)
    f4 = np.empty(MULT_FOLDS[4], np.int64)
    _fold(hist, MULT_MODULUS, MULT_FOLDS[4], f4)
    for i in range(bases.shape[0]):
        if parent[i] == i:
            f = fold_of[i]
            src = f0 if f == 0 else f1 if f == 1 else f2 if f == 2 else f3 if f == 3 else f4
            _fold(src, src.shape[0], bases[i], out[i])
    for i in range(bases.shape[0]):
        p = parent[i]
        if p != i:
            _fold(out[p], bases[p], bases[i], out[i])


@njit(cache=True, nogil=True)
def rank_present(counts, half, rank, where, used):
    """From the histogram ``counts`` (int64): ``rank`` (int32, one cell a count) the running
    number of non-zero cells less one (``np.cumsum(counts > 0, dtype=np.int32) - 1``), ``where``
    (int64) the non-zero cells' indices and ``used`` (int64) their counts, in order (the first
    returned number of cells of each written); and the first index at which the running sum of
    the counts exceeds ``half`` (``np.searchsorted(np.cumsum(counts), half, side="right")``: the
    median's cell for ``half = n // 2``; ``len(counts)`` when none does). Returns ``(present,
    median)``."""
    a = 0
    total = 0
    middle = -1
    for d in range(counts.shape[0]):
        c = counts[d]
        if c > 0:
            where[a] = d
            used[a] = c
            a += 1
        rank[d] = a - 1
        total += c
        if middle < 0 and total > half:
            middle = d
    if middle < 0:
        middle = counts.shape[0]
    return a, middle


@njit(cache=True, nogil=True)
def _distinct_counts(steps, lo, hi, out, at):
    """The counts of the distinct values of ``steps`` (least ``lo``, largest ``hi``), in
    increasing order, written to ``out`` from ``at`` (grown, doubled, when short: the array
    returned); returns ``(out, at + their number)``. By a histogram over the span where it is
    at most ``4 len(steps) + 1024`` wide (its non-zero cells), else by sorting a copy (run
    lengths: ``np.unique``'s counts): the same integers either way."""
    n = steps.shape[0]
    if hi - lo < 4 * n + 1024:
        hist = np.zeros(hi - lo + 1, np.int64)
        for i in range(n):
            hist[steps[i] - lo] += 1
        for d in range(hist.shape[0]):
            if hist[d] > 0:
                if at == out.shape[0]:
                    grown = np.empty(2 * out.shape[0] + 16, np.int64)
                    grown[:at] = out[:at]
                    out = grown
                out[at] = hist[d]
                at += 1
        return out, at
    v = np.sort(steps)
    run = 1
    for i in range(1, n + 1):
        if i < n and v[i] == v[i - 1]:
            run += 1
            continue
        if at == out.shape[0]:
            grown = np.empty(2 * out.shape[0] + 16, np.int64)
            grown[:at] = out[:at]
            out = grown
        out[at] = run
        at += 1
        run = 1
    return out, at


@njit(cache=True, nogil=True)
def quotient_counts(wide, offsets, bases, ends, steps, seg):
    """For each ``j``, the counts of the distinct values, in increasing order, of the
    differences within each window of ``floor((wide - offsets[j]) / bases[j])``
    (:func:`ubpe._kernels.digits.quotient_steps`' ``steps``, with its preconditions; ``steps``
    its buffer, at least one cell): what ``mult_detect``'s ``_quotient_entropy`` counted, base
    after base, in one call (a short channel's twenty bases took about 45 us each in numpy's
    calls). Returns them one base after the other (int64); ``seg`` (int64, ``len(bases) + 1``
    cells) gets each base's start and the end."""
    out = np.empty(max(64, 4 * bases.shape[0]), np.int64)
    at = 0
    seg[0] = 0
    for j in range(bases.shape[0]):
        lo, hi = _digits.quotient_steps(wide, offsets[j], bases[j], ends, steps)
        out, at = _distinct_counts(steps, lo, hi, out, at)
        seg[j + 1] = at
    return out[:at]


@njit(cache=True, nogil=True)
def mult_offsets(digits, rows, bases, out):
    """:func:`ubpe._kernels.digits.mult_offset` of ``digits[rows[j], :bases[j]]`` for each ``j``,
    into ``out[j]`` (int64), in one call."""
    for j in range(rows.shape[0]):
        out[j] = _digits.mult_offset(digits[rows[j], :bases[j]])


@njit(cache=True, nogil=True)
def present_ranks(present, values, table):
    """From ``present`` (bool, one cell a value): ``values`` (uint64) the indices of its True
    cells, in order (``np.flatnonzero(present)``: the first returned number of cells written),
    and ``table[d]`` (uint16: ``len(present) <= 2**16``) the number of True cells up to ``d``
    less one, wrapped to the table's width (``np.cumsum(present) - 1``: 65535 for the cells before
    the first True one, which no value looks up). Returns the number of True cells."""
    a = 0
    for d in range(present.shape[0]):
        if present[d]:
            values[a] = d
            a += 1
        table[d] = a - 1
    return a


@njit(cache=True, nogil=True)
def min_max(y):
    """The least and the greatest of the integers ``y`` (1-D, not empty), as int64, in one pass:
    ``y.min()`` and ``y.max()``."""
    lo = np.int64(y[0])
    hi = lo
    for i in range(1, y.shape[0]):
        v = np.int64(y[i])
        if v < lo:
            lo = v
        if v > hi:
            hi = v
    return lo, hi


@njit(cache=True, nogil=True)
def mult_split(x, base, offset, q, r):
    """``ubpe.frontend.mult.mult_forward``'s split of the integers ``x`` (1-D, native, at most 32
    bits): ``q[i] = floor((x[i] - offset) / base)`` (``q`` the signed type of ``x``'s width: it
    fits for ``base >= 2``) and ``r[i] = x[i] - offset - base * q[i]`` (int64, in ``[0, base)``),
    ``2 <= base <= 2**16``, ``0 <= offset < base``. The quotient by a float division (the
    values' differences below 2**33 in magnitude, exact in float64) then corrected by one either
    way where the rounding left the remainder outside ``[0, base)``: the same integers as numpy's
    floor ``divmod`` of the int64 values (about 15 ns a value on the PLUX channels), vectorized."""
    fb = np.float64(base)
    for i in range(x.shape[0]):
        v = np.int64(x[i]) - offset
        k = np.int64(np.floor(np.float64(v) / fb))
        rem = v - k * base
        k += np.int64(rem >= base) - np.int64(rem < 0)
        q[i] = k
        r[i] = v - k * base


@njit(cache=True, nogil=True)
def mult_join(q, r, base, offset, out):
    """``ubpe.frontend.mult.mult_inverse`` in one pass: ``out[i] = base * q[i] + offset + r[i]``
    modulo ``2**bits`` of ``out``'s signed integers (1-D, native, as long as ``q``), the sum in
    int64 arithmetic that wraps modulo 2**64 (any ``q`` and ``r``: untrusted values wrap, never
    fault). ``q`` and ``r`` native integers of at most 64 bits, ``len(r) >= len(out)``."""
    b = np.int64(base)
    c = np.int64(offset)
    for i in range(out.shape[0]):
        out[i] = np.int64(q[i]) * b + (np.int64(r[i]) + c)  # (the store truncates to out's width)


@njit(cache=True, nogil=True)
def nonzero_ids(counts, out):
    """The indices of the non-zero cells of ``counts`` (1-D), ascending, written to ``out`` (int64,
    at least ``counts.shape[0]`` cells); returns how many: ``np.flatnonzero(counts)`` without its
    dispatch (``encode_stream``'s used ids, once a stream)."""
    k = 0
    for i in range(counts.shape[0]):
        out[k] = i
        k += np.int64(counts[i] != 0)
    return k


@njit(cache=True, nogil=True)
def gap_bit_count(where):
    """The bits of the Elias-gamma codes of the gaps of ``where`` (1-D increasing integers): the
    sum of ``2 * bit_length(g) - 1`` over ``g = where[i + 1] - where[i] >= 1``, an integer (0 for
    fewer than two values)."""
    total = np.int64(0)
    for i in range(1, where.shape[0]):
        g = np.int64(where[i]) - np.int64(where[i - 1])
        b = np.int64(0)
        while g:
            g >>= 1
            b += 1
        total += 2 * b - 1
    return total


@njit(cache=True, nogil=True)
def least_total(ces, raw_bits, tbitss):
    """``float((ces + raw_bits + tbitss).min())`` (``ces`` float64, ``tbitss`` int64, both 2-D of
    one shape, not empty; ``raw_bits`` an integer below 2**53): each element the same two float64
    additions in the same order (the integers converted to float64 first, as numpy does), the
    least of them exact in any order."""
    raw = np.float64(raw_bits)
    best = np.inf
    for i in range(ces.shape[0]):
        for j in range(ces.shape[1]):
            v = (ces[i, j] + raw) + np.float64(tbitss[i, j])
            if v < best:
                best = v
    return best


@njit(cache=True, nogil=True)
def digit_screen(digits, log2_bases, threshold, maybe):
    """``mult_detect``'s screen: ``maybe[i] = log2_bases[i] - H_i >= threshold`` for each row ``i``
    of ``digits`` (int64 digit histograms; ``H_i`` the entropy in bits of the row's distribution,
    its terms ``p * log2(p)`` of the non-zero cells summed in index order; a row of no counts is
    not ``maybe``); returns whether any is. The same terms as ``ubpe.frontend.mult._digit_entropies``,
    summed in another order (about 1e-15 bits apart: the screen's margin is 1e-6)."""
    found = False
    for i in range(digits.shape[0]):
        s = np.int64(0)
        for b in range(digits.shape[1]):
            s += digits[i, b]
        if s <= 0:
            maybe[i] = False
            continue
        fs = np.float64(s)
        h = 0.0
        for b in range(digits.shape[1]):
            v = digits[i, b]
            if v > 0:
                p = np.float64(v) / fs
                h -= p * np.log2(p)
        maybe[i] = log2_bases[i] - h >= threshold
        found |= maybe[i]
    return found


@njit(cache=True, nogil=True)
def spread_gcd(y, n):
    """The gcd of ``y[i] - min(y[:n])`` for ``i < n`` (``y`` 1-D integers of at most 32 bits,
    ``1 <= n <= y.shape[0]``; 0 when those values are all equal): ``np.gcd.reduce`` of the
    differences to their least, stopping at 1 (``has_grid``'s test, about six numpy calls a
    channel)."""
    lo = np.int64(y[0])
    for i in range(1, n):
        lo = min(lo, np.int64(y[i]))
    g = np.int64(0)
    for i in range(n):
        b = np.int64(y[i]) - lo
        a = g
        while b:
            a, b = b, a % b
        g = a
        if g == 1:
            break
    return g


@njit(cache=True, nogil=True)
def mag_choice(ces, raw_bits, tbitss):
    """The "mag" coder's option ``(i, j, total)`` (rate row, precision column, its total) of ``totals = ces +
    raw_bits + tbitss`` (``ces`` float64, ``tbitss`` int64, both 2-D of one shape, not empty;
    each total the same two float64 additions as numpy's): the least column ``j`` holding a total
    within ``max(8.0, 5e-4 * least)`` of the least, then the row of least total in that column
    (the first on ties): ``ubpe.coders.mag._encode_mag``'s numpy choice in one call."""
    raw = np.float64(raw_bits)
    nr, nc = ces.shape
    totals = np.empty((nr, nc), np.float64)
    least = np.inf
    for i in range(nr):
        for j in range(nc):
            v = (ces[i, j] + raw) + np.float64(tbitss[i, j])
            totals[i, j] = v
            if v < least:
                least = v
    cut = least + max(8.0, 5e-4 * least)
    for j in range(nc):
        best = -1
        for i in range(nr):
            if totals[i, j] <= cut and (best < 0 or totals[i, j] < totals[best, j]):
                best = i
        if best >= 0:
            return best, j, totals[best, j]
    return -1, -1, np.nan


@njit(cache=True, nogil=True)
def _log2_int(c, table):
    """``log2(c)`` of an integer ``c >= 1``: ``table[c]`` (numpy's ``log2`` of the integers below
    its length) or libm's beyond it."""
    return table[c] if c < table.shape[0] else math.log2(np.float64(c))


@njit(cache=True, nogil=True)
def _step_entropy(steps, lo, hi, table):
    """``(h, k)``: the ``k`` distinct values of ``steps`` (least ``lo``, largest ``hi``; not empty)
    and the entropy, bits a value, of their counts ``c`` (the counts :func:`_distinct_counts`
    gives, by a histogram or a sorted copy, none kept) as ``log2(n) - sum(c log2 c) / n``
    with :func:`_log2_int`: within about ``1e-12`` of numpy's ``-(p * log2(p)).sum()`` for ``n``
    up to 2**17 (an estimate for a bound with a margin, not that float)."""
    n = steps.shape[0]
    s = 0.0
    k = 0
    if hi - lo < 16 * n + 4096:  # (a histogram's cells cost less than sorting, a wider span here)
        # four histograms, one per value of i mod 4, summed cell by cell: a signal's steps are
        # mostly a few values, and one histogram's increments of one cell waited on each other
        # (each a load of the store before it: 1.7 -> 1.05 ms for the 22 bases of a PLUX channel)
        # (one histogram where its cells outnumber the values: four would cost 4 x span cells)
        span = hi - lo + 1
        ways = 4 if span <= n else 1
        hist = np.zeros(ways * span, np.int32)
        n4 = n - n % 4 if ways == 4 else 0
        for i in range(0, n4, 4):
            hist[steps[i] - lo] += 1
            hist[span + steps[i + 1] - lo] += 1
            hist[2 * span + steps[i + 2] - lo] += 1
            hist[3 * span + steps[i + 3] - lo] += 1
        for i in range(n4, n):
            hist[steps[i] - lo] += 1
        for d in range(span):
            c = hist[d] + hist[span + d] + hist[2 * span + d] + hist[3 * span + d] if ways == 4 else hist[d]
            if c > 0:
                s += c * _log2_int(c, table)
                k += 1
    else:
        v = np.sort(steps)
        run = 1
        for i in range(1, n + 1):
            if i < n and v[i] == v[i - 1]:
                run += 1
                continue
            s += run * _log2_int(run, table)
            k += 1
            run = 1
    return _log2_int(n, table) - s / n, k


@njit(cache=True, nogil=True)
def mult_decide(sample, ends, digits, rows, bases, min_gain, near, margin, table, found):
    """``ubpe.frontend.mult._mult_exact``'s choice of split for the native integers ``sample`` (at
    most 32 bits; windows ending before ``ends``, each of at least two values) and the bases
    ``bases[j]`` (increasing) of the rows ``rows[j]`` of ``digits``, estimated in one call: the same
    integers (differences, digit histograms, offsets, quotient counts), their entropies from
    ``table`` (:func:`ubpe.planner.estimates.log2_table`; :func:`_step_entropy`), so each gain within ``margin`` of the exact one where ``margin`` is far
    above the rounding (``1e-6`` against about ``1e-11``). Returns 0 when no base can pay (every
    estimated gain below ``min_gain`` by more than ``margin``: the answer ``(1, 0)``), 2 when the
    answer is decided with ``found = (base, offset)`` (the best gain above ``min_gain`` and every
    gain away from ``near`` times it by more than ``2 margin``), 1 when a comparison is within the
    margin (the caller runs the exact test). Memory: ``len(sample)`` int64 twice."""
    n = sample.shape[0]
    wide = np.empty(n, np.int64)
    for i in range(n):
        wide[i] = np.int64(sample[i])
    steps = np.empty(max(n - ends.shape[0], 1), np.int64)
    ns = n - ends.shape[0]
    lo, hi = _digits.quotient_steps(wide, 0, 1, ends, steps)  # (base 1: the values' own differences)
    ln2 = math.log(2.0)
    hs, k = _step_entropy(steps[:ns], lo, hi, table)
    raw = hs + (k - 1) / (2.0 * ns * ln2)
    gains = np.full(bases.shape[0], -np.inf)
    offsets = np.zeros(bases.shape[0], np.int64)
    undecided = False
    top = 0.0
    kept = 0
    for j in range(rows.shape[0]):
        m = bases[j]
        h = digits[rows[j], :m]
        total = 0
        nz = 0
        for s in range(m):
            total += h[s]
            nz += np.int64(h[s] > 0)
        if nz <= 1:  # constant digits (an entropy of exactly 0.0 either way)
            continue
        hr = 0.0
        for s in range(m):
            if h[s] > 0:
                hr += h[s] * _log2_int(h[s], table)
        hr = _log2_int(total, table) - hr / total
        bound = math.log2(m) - hr
        if bound < min_gain - margin:
            continue
        if bound < min_gain + margin:
            undecided = True
        c = _digits.mult_offset(h)
        lo, hi = _digits.quotient_steps(wide, c, m, ends, steps)
        hs, k = _step_entropy(steps[:ns], lo, hi, table)
        g = raw - (hs + (k - 1) / (2.0 * ns * ln2)) - hr
        gains[j] = g
        offsets[j] = c
        if kept == 0 or g > top:
            top = g
        kept += 1
    if kept == 0 or top < min_gain - margin:  # (the exact test keeps a subset of these bases)
        return 0
    if undecided or top < min_gain + margin:
        return 1
    cut = near * top
    for j in range(bases.shape[0]):
        if gains[j] != -np.inf and abs(gains[j] - cut) <= 2.0 * margin:
            return 1
    for j in range(bases.shape[0]):
        if gains[j] >= cut:
            found[0] = bases[j]
            found[1] = offsets[j]
            return 2
    return 1
