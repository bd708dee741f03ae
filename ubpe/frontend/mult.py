"""Codes split as ``base * q + offset + r``, the front-end stage ``"mult"``.

For codes whose low digits are skewed (an ADC's noisy extra bits): ``q`` goes on down the chain
and is predicted, the digits ``r`` are coded in the stage's params. :func:`mult_detect` finds a
channel's split from exact digit histograms of a sample.
"""

from __future__ import annotations

import contextlib
import hashlib
from typing import Any, ClassVar

import numpy as np

from .. import _memo, coders
from .._kernels import digits as _digits
from .._kernels import l1plan as _l1plan
from .._validate import expect_map, field_int
from ..errors import CorruptDataError
from ._stage import SIGNED_OF_WIDTH, Stage, register

#: Largest base a ``mult`` split may declare (its low digits are one coded symbol each).
MAX_MULT_BASE = 1 << 16


#: Every base :func:`mult_detect` considers divides this (2**6 * 3**2 * 5 * 7): one histogram of
#: ``x mod MULT_MODULUS`` gives the histogram of ``x mod m`` for all of them at once.
MULT_MODULUS = 20160


#: Bases :func:`mult_detect` considers: the divisors of MULT_MODULUS from 2 to 64.
MULT_BASES = tuple(m for m in range(2, 65) if MULT_MODULUS % m == 0)


#: :func:`mult_detect` measures at most this many values (MULT_WINDOWS evenly spaced windows).
MULT_SAMPLE = 1 << 16


MULT_WINDOWS = 8


#: Estimated bits a value the split must save (first differences' empirical entropy) to be proposed.
MULT_MIN_GAIN = 0.1


#: Among the bases that pay, the smallest whose gain is within this fraction of the best one's
#: (a larger base also "gains" from the shape of the values' distribution at its scale, which
#: the digits' order-0 code cannot keep).
MULT_NEAR = 0.9


def _entropy_of(v: np.ndarray, own: bool = False) -> float:
    """Order-0 entropy, bits a value, of the values ``v``: the empirical one plus the
    Miller-Madow correction ``(K - 1) / (2 N ln 2)`` for ``K`` distinct values in ``N`` (a short
    sample of widely spread values underrates its entropy far more than one of few values).
    ``own``: ``v`` (int64) may be overwritten (one temporary the size of ``v`` less)."""
    if v.size == 0:
        return 0.0
    lo, hi = int(v.min()), int(v.max())
    if hi - lo < 4 * v.size + 1024:  # a histogram is cheaper than sorting
        counts = np.bincount(np.subtract(v, lo, out=v) if own else v - lo)
        counts = counts[counts > 0]
    else:
        _, counts = np.unique(v, return_counts=True)
    return _entropy_of_counts(counts, v.size)


def _entropy_of_counts(counts: np.ndarray, size: int) -> float:
    """:func:`_entropy_of` of ``size`` values from their distinct values' counts (int64, in
    increasing order of the values, none zero)."""
    p = counts / size
    return float(-(p * np.log2(p)).sum()) + (counts.size - 1) / (2.0 * size * np.log(2.0))


def _quotient_entropy(wide: np.ndarray, offset: int, base: int, ends: np.ndarray, steps: np.ndarray) -> float:
    """:func:`_entropy_of` of the differences within each window (ends ``ends``) of
    ``floor((wide - offset) / base)`` (``wide`` int64 below 2**32 in magnitude; ``steps`` a
    buffer of their number), the same float: the differences and the counts of their distinct
    values, in the same order, in one compiled call (:func:`ubpe._kernels.l1plan.quotient_counts`;
    a short channel's 20 bases took about 45 us each in numpy's calls), their entropy by
    :func:`_entropy_of_counts` as before."""
    if steps.shape[0] == 0:
        return 0.0
    seg = np.empty(2, np.int64)
    counts = _l1plan.quotient_counts(wide, np.array([offset], np.int64), np.array([base], np.int64), ends, steps, seg)
    return _entropy_of_counts(counts, steps.shape[0])


def _digit_entropy(h: np.ndarray) -> float:
    p = h[h > 0] / h.sum()
    return float(-(p * np.log2(p)).sum())


def _mult_offset(h: np.ndarray) -> int:
    """The offset ``c`` in ``[0, m)`` of the cut between digit classes for the digit histogram
    ``h`` (``h[s]``: values with ``x mod m == s``): a value whose digit lies within ``m / 2`` of the
    most common digit ``p`` (circularly) keeps the same quotient as that digit when the cut does
    not fall between them; the cut that separates the fewest values from ``p`` wins (ties: the
    smallest ``c``, so 0 for bits that only flip away from a constant pattern). All ``m`` cuts
    are counted in one compiled loop (:func:`ubpe._kernels.digits.mult_offset`; integers: the
    same counts as the ``m x m`` table of which digits each cut separates that numpy made)."""
    return int(_digits.mult_offset(np.ascontiguousarray(h, dtype=np.int64)))


def _mult_offset_reference(h: np.ndarray) -> int:
    """:func:`_mult_offset` as a loop over the cuts (its definition; kept for the tests)."""
    m = h.shape[0]
    p = int(np.argmax(h))
    s = np.arange(m)
    dev = (s - p + m // 2) % m - m // 2
    best, best_cost = 0, None
    for c in range(m):
        pos = (p - c) % m + dev
        cost = int(h[(pos < 0) | (pos >= m)].sum())
        if best_cost is None or cost < best_cost:
            best, best_cost = c, cost
    return best


#: Multiples of the bases (divisors of MULT_MODULUS): each base divides one of them, so its digit
#: histogram folds from theirs (:func:`_digit_histograms`).
_MULT_FOLDS = (576, 320, 2880, 4032, 2240)


_MULT_FOLD_OF = tuple(next(f for f in _MULT_FOLDS if f % m == 0) for m in MULT_BASES)


#: How much an estimated digit entropy may differ from :func:`_digit_entropy`'s (the same sum,
#: in another order: about 1e-15 bits) for the screen to stay exact.
_SCREEN_MARGIN = 1e-6


#: The bases of MULT_BASES that divide no other (their digits fold from _MULT_FOLDS), as
#: (row, fold); every other base's digits fold from one of theirs (:func:`_digit_folds`).
_MULT_TOPS = tuple((i, f) for i, (m, f) in enumerate(zip(MULT_BASES, _MULT_FOLD_OF))
                   if not any(b != m and b % m == 0 for b in MULT_BASES))


def _digit_folds() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The other bases' digit histograms from the top bases' (:data:`_MULT_TOPS`) in one
    gather and sum: ``(take, starts, put)``, indices into the ``(len(MULT_BASES), 64)`` table
    flattened: ``add.reduceat(table[take], starts)`` are the digits' counts, written at ``put``
    (a base's digit ``s`` sums its top's digits ``s, s + m, ...``: every group non-empty)."""
    take, starts, put = [], [], []
    for i, m in enumerate(MULT_BASES):
        row, top = next((r, MULT_BASES[r]) for r, _ in _MULT_TOPS if MULT_BASES[r] % m == 0)
        if row == i:
            continue
        for s in range(m):
            starts.append(len(take))
            take.extend(row * 64 + j for j in range(s, top, m))
            put.append(i * 64 + s)
    return np.array(take, np.int64), np.array(starts, np.int64), np.array(put, np.int64)


_DIGIT_TAKE, _DIGIT_STARTS, _DIGIT_PUT = _digit_folds()


def _digit_histograms(hist: np.ndarray) -> np.ndarray:
    """The digit histogram of every base of MULT_BASES from ``hist`` (the histogram of
    ``x mod MULT_MODULUS``): row i, int64, the first ``MULT_BASES[i]`` of 64 columns (the rest 0)."""
    folds = {f: hist.reshape(-1, f).sum(axis=0) for f in _MULT_FOLDS}
    out = np.zeros((len(MULT_BASES), 64), dtype=np.int64)
    for i, f in _MULT_TOPS:
        out[i, :MULT_BASES[i]] = folds[f].reshape(-1, MULT_BASES[i]).sum(axis=0)
    flat = out.reshape(-1)
    flat[_DIGIT_PUT] = np.add.reduceat(flat[_DIGIT_TAKE], _DIGIT_STARTS)
    return out


def _digit_histograms_of(sample: np.ndarray) -> np.ndarray:
    """:func:`_digit_histograms` of the histogram of ``sample mod MULT_MODULUS`` (``sample``
    native integers of at most 32 bits), in one compiled call from the values
    (:func:`ubpe._kernels.l1plan.digit_table`: the same counts, without the 20 160-cell histogram)."""
    out = np.zeros((len(MULT_BASES), 64), dtype=np.int64)
    _l1plan.digit_table(np.ascontiguousarray(sample), _TABLE_BASES, _TABLE_FOLD_OF, _TABLE_PARENT, out)
    return out


#: :func:`ubpe._kernels.l1plan.digit_table`'s plan: the bases, each top base's fold
#: (index into the folds) and each base's parent row (itself for a top base, else the first top
#: base it divides, as :func:`_digit_folds`)
if (_l1plan.MULT_MODULUS, _l1plan.MULT_FOLDS) != (MULT_MODULUS, _MULT_FOLDS):
    raise AssertionError("ubpe._kernels.l1plan's folds differ from mult_detect's")
_TABLE_BASES = np.array(MULT_BASES, np.int64)
_TABLE_FOLD_OF = np.array([_MULT_FOLDS.index(f) for f in _MULT_FOLD_OF], np.int64)
_TABLE_PARENT = np.array([next(r for r, _ in _MULT_TOPS if MULT_BASES[r] % m == 0) for m in MULT_BASES], np.int64)


def _digit_entropies(hists: np.ndarray) -> np.ndarray:
    """:func:`_digit_entropy` of each row of ``hists`` (non-zero rows), all at once: the same
    terms summed in another order, so within :data:`_SCREEN_MARGIN` of it (a screen only)."""
    p = hists / hists.sum(axis=1, keepdims=True)
    return -(p * np.log2(np.where(hists > 0, p, 1.0))).sum(axis=1)


#: ``np.log2`` of each base of MULT_BASES (float64), :func:`_mult_screen`'s bound
_LOG2_BASES = np.log2(np.array(MULT_BASES, dtype=np.float64))


#: The last few splits :func:`mult_detect` chose, by the channel's bytes (the planner puts the
#: same channel through several chains that start with the stage): digest -> (base, offset);
#: kept only within :func:`detection_cache` (the planner's scope), so that nothing outlives a
#: ``compress`` call.
_DETECTION = _memo.CallScope()
_DETECTED: dict[tuple, tuple[int, int]] = _DETECTION.entries


_DETECTED_MAX = 16


def detection_cache() -> contextlib.AbstractContextManager[None]:
    """Within it (any thread), :func:`mult_detect` keeps its last :data:`_DETECTED_MAX` results
    by the channel's content; they are dropped when the last open scope ends."""
    return _DETECTION.open()


def mult_detect(x: Any) -> tuple[int, int]:
    """The split ``x = base * q + offset + r`` (``0 <= r < base``) that pays for a channel, or
    ``(1, 0)`` (none).

    Physics: an ADC of fewer bits than its 16-bit word (or a calibrated one) writes codes whose
    low digits mostly take one value, the few noisy extra bits flipping now and then,
    independently of the signal. Predicting such codes spends ``log2(base)`` bits a value on
    digits that are almost constant; split, the quotient ``q`` is predicted as the signal and
    the digits ``r`` cost their own (small) entropy.

    Exact and cheap: one histogram of ``x mod MULT_MODULUS`` on at most :data:`MULT_SAMPLE`
    values (:data:`MULT_WINDOWS` windows) gives the digit histogram of every base of
    :data:`MULT_BASES`; each base whose digits are neither uniform nor constant (a constant
    digit is an exact grid: the ``grid`` stage's case) is scored by the bits a value it saves:
    the order-0 entropy (Miller-Madow corrected, :func:`_entropy_of`) of the first differences
    of ``x``, minus that of ``q``'s plus the digits' entropy. When the best score is at least
    :data:`MULT_MIN_GAIN` bits a value, the smallest base scoring within :data:`MULT_NEAR` of
    it is returned, with the offset of :func:`_mult_offset`.
    The writer measures the result by size like any other candidate; this only proposes it.
    Within :func:`detection_cache`, the last :data:`_DETECTED_MAX` results are kept by the
    channel's content (a digest of its bytes), so the chains that share the stage detect once.
    """
    arr = np.asarray(x)
    if arr.dtype.kind not in "iu":
        raise TypeError(f"x must be an integer array, got dtype {arr.dtype}")
    if arr.ndim != 1:
        raise ValueError(f"x must be 1-D, got shape {arr.shape}")
    n = arr.shape[0]
    if n < 2 * MULT_WINDOWS:
        return 1, 0
    screened = _mult_screen(arr)
    if screened is None:  # (no base can pay: decided before the channel's digest, which cost more)
        return 1, 0
    if not _DETECTION.depth:
        return _mult_exact(arr, screened)
    key = (arr.dtype.str, n, hashlib.blake2b(np.ascontiguousarray(arr).view(np.uint8), digest_size=16).digest())
    found = _DETECTED.get(key)
    if found is None:
        found = _mult_exact(arr, screened)
        with _DETECTION.lock:
            if _DETECTION.depth:  # (else the scope ended while this detection ran)
                if len(_DETECTED) >= _DETECTED_MAX:
                    _DETECTED.pop(next(iter(_DETECTED)), None)
                _DETECTED[key] = found
    return found


#: ``np.log2(m)`` of each base, as :func:`_mult_exact`'s loop computes it
_LOG2_OF = {m: np.log2(m) for m in MULT_BASES}


_LN2 = np.log(2.0)  #: (_entropy_of_counts' ``np.log(2.0)``)


def _entropies_in(counts: np.ndarray, seg: np.ndarray, total: np.ndarray | int) -> list[float]:
    """``-(p * log2(p)).sum()`` with ``p = counts[seg[j]:seg[j + 1]] / total`` for each ``j``
    (``total`` an int or one number a segment): every segment's float as that expression on it
    alone (the same elementwise terms, each segment summed by its own ``sum``)."""
    p = counts / (np.repeat(total, np.diff(seg)) if isinstance(total, np.ndarray) else total)
    terms = p * np.log2(p)
    bounds = seg.tolist()
    return [float(-terms[a:b].sum()) for a, b in zip(bounds[:-1], bounds[1:])]


def _batched_gains(digits: np.ndarray, rows: np.ndarray, wide: np.ndarray, ends: np.ndarray, steps: np.ndarray,
                   raw: float) -> dict[tuple[int, int], float]:
    """:func:`_mult_exact`'s gains of the bases of the rows ``rows`` of ``digits`` (``wide`` the
    sample as int64 of at most 32 bits): the loop's numbers for each base (its digits' entropy
    :func:`_digit_entropy`, its offset :func:`_mult_offset`, :func:`_quotient_entropy`), the same
    floats, from three compiled calls and a few numpy calls for all of them (a 557-value channel's
    19 bases took 0.9 ms one by one)."""
    if rows.shape[0] == 0:
        return {}
    sub = digits[rows]
    present = sub > 0
    seg = np.zeros(rows.shape[0] + 1, np.int64)
    np.cumsum(present.sum(axis=1), out=seg[1:])
    his = _entropies_in(sub[present], seg, sub.sum(axis=1))  # (_digit_entropy's: h[h > 0] / h.sum())
    keep = [(int(i), hr) for i, hr in zip(rows.tolist(), his)
            if not (hr == 0.0 or _LOG2_OF[MULT_BASES[i]] - hr < MULT_MIN_GAIN)]
    if not keep:
        return {}
    at = np.array([i for i, _ in keep], np.int64)
    bases = np.array([MULT_BASES[i] for i, _ in keep], np.int64)
    offsets = np.empty(at.shape[0], np.int64)
    _l1plan.mult_offsets(digits, at, bases, offsets)
    seg = np.empty(at.shape[0] + 1, np.int64)
    counts = _l1plan.quotient_counts(wide, offsets, bases, ends, steps, seg)
    n = steps.shape[0]
    hqs = _entropies_in(counts, seg, n)
    gains = {}
    for (i, hr), c, hq, k in zip(keep, offsets.tolist(), hqs, np.diff(seg).tolist()):
        # (_entropy_of_counts: the entropy plus the Miller-Madow term)
        gains[(MULT_BASES[i], c)] = raw - (hq + (k - 1) / (2.0 * n * _LN2)) - hr
    return gains


def _floor_div(v: np.ndarray, m: int, itemsize: int) -> np.ndarray:
    """``v // m`` (int64) for ``v`` int64 and ``m`` in [1, MULT_MODULUS]; through float64 (about
    twice as fast as numpy's integer division) when ``itemsize <= 4`` promises ``|v| < 2**33``:
    exact then, as a quotient that is not an integer lies at least ``1/m`` (relatively more
    than 2**-34) from the integers, far beyond float64's rounding (2**-53)."""
    if itemsize > 4:
        return v // m
    return np.floor(v / float(m)).astype(np.int64)


def _mult_detect(arr: np.ndarray) -> tuple[int, int]:
    """:func:`mult_detect` without its cache (``arr`` 1-D integers of at least 16 values)."""
    screened = _mult_screen(arr)
    return (1, 0) if screened is None else _mult_exact(arr, screened)


def _mult_screen(arr: np.ndarray) -> tuple | None:
    """:func:`mult_detect`'s sample of ``arr`` (1-D integers of at least 16 values) and digit
    histograms, and which bases may pay (``(windows, sample, digits, maybe)``); None when none
    may (most signals: the exact test is not run). The digits of a native sample of at most
    32 bits in one compiled call (:func:`_digit_histograms_of`)."""
    n = arr.shape[0]
    if n > MULT_SAMPLE:
        length = MULT_SAMPLE // MULT_WINDOWS
        starts = (np.arange(MULT_WINDOWS, dtype=np.int64) * (n - length)) // (MULT_WINDOWS - 1)
        windows = [arr[s:s + length] for s in starts.tolist()]
    else:
        windows = [arr]
    # the windows joined: differences within a window only (:func:`steps_of`), quotients of all at once
    sample = windows[0] if len(windows) == 1 else np.concatenate(windows)
    if arr.dtype == np.uint64:
        hist = np.bincount((sample % np.uint64(MULT_MODULUS)).astype(np.int64), minlength=MULT_MODULUS)
        digits = _digit_histograms(hist)
    elif arr.dtype.itemsize <= 4 and arr.dtype.isnative:
        digits = _digit_histograms_of(sample)
    else:
        wide = sample.astype(np.int64)
        digits = _digit_histograms(np.bincount(wide - _floor_div(wide, MULT_MODULUS, arr.dtype.itemsize) * MULT_MODULUS,
                                               minlength=MULT_MODULUS))
    # the screen: a base whose estimated gain bound is below MULT_MIN_GAIN by more than the
    # estimate's error cannot pass the exact test below (most bases of most signals)
    # (one compiled call: the terms of _digit_entropies summed in another order, within the
    # margin; about 1 % of a short audio file's compress was its eight numpy calls)
    maybe = np.empty(len(MULT_BASES), np.bool_)
    if not _l1plan.digit_screen(digits, _LOG2_BASES, MULT_MIN_GAIN - _SCREEN_MARGIN, maybe):
        return None
    return windows, sample, digits, maybe


def _mult_exact(arr: np.ndarray, screened: tuple) -> tuple[int, int]:
    """:func:`mult_detect`'s exact test of the bases :func:`_mult_screen` let through."""
    windows, sample, digits, maybe = screened
    if arr.dtype.itemsize <= 4 and arr.dtype.isnative:
        from ..planner.estimates import log2_table  # (the planner imports the front end)

        # every base's gain estimated in one compiled call (the same integers, libm's log2), the
        # answer taken where no comparison lies within _SCREEN_MARGIN of its threshold (a short
        # audio file's exact test below was about a tenth of its compress, for (1, 0))
        rows = np.flatnonzero(maybe)
        found = np.zeros(2, np.int64)
        decided = _l1plan.mult_decide(np.ascontiguousarray(sample), _window_ends(windows), digits, rows,
                                      _TABLE_BASES[rows], MULT_MIN_GAIN, MULT_NEAR, _SCREEN_MARGIN, log2_table(), found)
        if decided == 0:
            return 1, 0
        if decided == 2:
            return int(found[0]), int(found[1])
    return _mult_exact_floats(arr, screened)


def _window_ends(windows: list[np.ndarray]) -> np.ndarray:
    """The ends of the windows joined (int64, increasing, the last the sample's length)."""
    return np.cumsum(np.array([w.shape[0] for w in windows], np.int64))


def _mult_exact_floats(arr: np.ndarray, screened: tuple) -> tuple[int, int]:
    """:func:`_mult_exact` by numpy's floats (the definition; decides where the estimate cannot)."""
    windows, sample, digits, maybe = screened
    wide = sample.view(np.int64) if arr.dtype == np.uint64 else sample.astype(np.int64)
    # every base tried puts its quotients and their differences in the same buffers: fresh
    # arrays of a sample's size cost more than the arithmetic (page faults)
    q = np.empty_like(wide)
    steps = np.empty(wide.shape[0] - len(windows), np.int64)
    ends = np.cumsum([w.shape[0] for w in windows]).tolist()
    spans = [(a, b, a - k) for k, (a, b) in enumerate(zip([0] + ends[:-1], ends))]  # (from, to, at)

    def steps_of(v: np.ndarray) -> np.ndarray:
        """The differences of ``v`` (int64, the sample's) within each window, in ``steps``
        (modulo 2**64)."""
        with np.errstate(over="ignore"):
            for a, b, at in spans:
                np.subtract(v[a + 1:b], v[a:b - 1], out=steps[at:at + b - a - 1])
        return steps

    raw = _entropy_of(steps_of(wide), own=True)
    ends_array = np.array(ends, np.int64)
    gains: dict[tuple[int, int], float] = {}
    if arr.dtype.itemsize <= 4:  # every base at once (_batched_gains: _quotient_entropy's floats)
        gains = _batched_gains(digits, np.flatnonzero(maybe), wide, ends_array, steps, raw)
    for i, m in enumerate(MULT_BASES if arr.dtype.itemsize > 4 else ()):  # wider: quotients of any width
        if not maybe[i]:
            continue
        h = digits[i, :m]
        hr = _digit_entropy(h)
        if hr == 0.0 or np.log2(m) - hr < MULT_MIN_GAIN:  # constant digits, or no gain possible
            continue
        c = _mult_offset(h)
        q[:] = mult_forward(sample, m, c)[0]
        gains[(m, c)] = raw - _entropy_of(steps_of(q), own=True) - hr
    top = max(gains.values(), default=0.0)
    if top < MULT_MIN_GAIN:
        return 1, 0
    return min(k for k, g in gains.items() if g >= MULT_NEAR * top)


def mult_forward(x: Any, base: int, offset: int) -> tuple[np.ndarray, np.ndarray]:
    """``x = base * q + offset + r`` with ``0 <= r < base`` (floor division of ``x - offset``,
    exact for every value of every integer dtype): ``q`` as the signed integer type of the
    input's width (it always fits for ``base >= 2``; ``base == 1`` gives ``x``'s bits
    reinterpreted), ``r`` as int64 in ``[0, base)``.

    ``base`` in ``[1, MAX_MULT_BASE]``, ``offset`` in ``[0, base)``."""
    arr = np.asarray(x)
    if arr.dtype.kind not in "iu" or arr.ndim != 1:
        raise TypeError(f"x must be a 1-D integer array, got {arr.dtype} of shape {arr.shape}")
    if not 1 <= base <= MAX_MULT_BASE or not 0 <= offset < base:
        raise ValueError(f"base must be in [1, {MAX_MULT_BASE}] and offset in [0, base), got {base}, {offset}")
    arr = arr.astype(arr.dtype.newbyteorder("="), copy=False)
    signed = np.dtype(f"i{arr.dtype.itemsize}")
    if base == 1:
        return arr.view(signed) if arr.dtype.kind == "u" else arr.astype(signed), np.zeros(arr.shape[0], np.int64)
    if arr.dtype.itemsize <= 4:  # (one compiled pass: the divmod below, its temporaries and casts)
        q, r = np.empty(arr.shape[0], signed), np.empty(arr.shape[0], np.int64)
        _l1plan.mult_split(np.ascontiguousarray(arr), base, offset, q, r)
        return q, r
    if arr.dtype == np.uint64:
        q0, r0 = np.divmod(arr, np.uint64(base))
        q0, r0 = q0.astype(np.int64), r0.astype(np.int64)  # q0 < 2**63 for base >= 2
    else:
        q0, r0 = np.divmod(arr.astype(np.int64), base)
    below = r0 < offset  # x - offset lies in the quotient below: never overflows (q0 > int64 min)
    q = q0 - below
    r = r0 - offset + base * below
    return q.astype(signed), r


def mult_inverse(q: Any, r: np.ndarray, base: int, offset: int, dtype: Any) -> np.ndarray:
    """``base * q + offset + r`` modulo ``2**bits``, as ``dtype`` (the input's): exact inverse of
    :func:`mult_forward` (int64 arithmetic wraps modulo 2**64, and the true value fits the
    width). Untrusted ``q`` (any value) wraps and cannot fault."""
    dtype = np.dtype(dtype)
    signed = np.dtype(f"i{dtype.itemsize}")
    qn, rn = np.asarray(q), np.asarray(r)
    if _joinable(qn, rn):  # (one compiled pass: the numpy below took five, 30 % of a PLUX file's decode)
        out = np.empty(qn.shape[0], signed)
        _l1plan.mult_join(qn, rn, base, offset, out)
        return out.view(dtype)
    qa = qn.astype(np.int64)
    with np.errstate(over="ignore"):
        v = qa * np.int64(base) + (np.asarray(r, np.int64) + np.int64(offset))
    return v.astype(signed).view(dtype)


def _joinable(q: np.ndarray, r: np.ndarray) -> bool:
    """Whether :func:`ubpe._kernels.l1plan.mult_join` takes ``q`` and ``r`` as they are: 1-D
    native integers, as many digits as quotients."""
    return (q.ndim == 1 and r.ndim == 1 and q.shape[0] == r.shape[0] and q.dtype.kind in "iu"
            and r.dtype.kind in "iu" and q.dtype.isnative and r.dtype.isnative)


class _Low(dict):
    """A checked ``low`` stream map (equal to the plain map, and written the same) with
    ``digits``: the digits it decodes to."""

    __slots__ = ("digits",)


@register
class MultStage(Stage):
    """Codes whose low digits are skewed: each channel split as ``x = base * q + offset + r``
    (``0 <= r < base``, :func:`mult_forward`); ``q`` goes on down the chain (it is
    the stage's output, the signed type of the input's width) and the digits ``r`` are coded
    in the params by :func:`ubpe.coders.encode_stream` with the static coders (the digits of
    an ADC's noisy extra bits are nearly independent of the signal and of each other, so an
    order-0 code is what they need).

    Parameters: ``{"channels": [{"base": m, "offset": c}, ...], "low": stream}``: ``base`` in
    ``[1, MAX_MULT_BASE]`` and ``offset`` in ``[0, base)`` per channel (``base == 1``: the
    channel passes unchanged, its bits reinterpreted as signed, and it has no digits);
    ``low`` one stream over the vocabulary ``max(base)`` holding the digits of every channel
    with ``base > 1``, channel-major (``frames`` each), every digit below its channel's base (a
    stream map as a container's: its ``coder`` written by number, its ``n`` always written).
    The writer chooses each channel's split with :func:`mult_detect`.
    """

    name = "mult"
    number = 6  #: its number on the wire (``ubpe.format.container.STAGES``)
    #: Coders the digits are offered (static: they decode at memory speed).
    CODERS: ClassVar[tuple[str, ...]] = ("rans", "packed", "const", "mag")


    def forward(self, x: np.ndarray) -> tuple[np.ndarray, dict[str, Any]]:
        if x.dtype.kind not in "iu":
            raise TypeError(f"the mult stage takes integer values, got dtype {x.dtype}")
        out = np.empty(x.shape, dtype=self.output_dtype(x.dtype, {}))
        channels, digits = [], []
        for i, row in enumerate(x):
            row = np.ascontiguousarray(row)
            base, offset = mult_detect(row)
            out[i], r = mult_forward(row, base, offset)
            channels.append({"base": base, "offset": offset})
            if base > 1:
                digits.append(r)
        vocab = max((c["base"] for c in channels), default=1)
        r = np.concatenate(digits) if digits else np.zeros(0, np.int64)
        return out, {"channels": channels, "low": coders.encode_stream(r, vocab, coders=self.CODERS)}

    def inverse(self, y: np.ndarray, params: dict[str, Any]) -> np.ndarray:
        return self.inverse_into(y, params, np.empty(y.shape, dtype=self.output_dtype(y.dtype, {})))

    def inverse_into(self, y: np.ndarray, params: dict[str, Any], out: np.ndarray) -> np.ndarray:
        """:meth:`inverse` written to ``out`` (``(channels, frames)``, the signed integers of the
        values' width) and returned, from quotients ``y`` of that width or wider (each congruent
        to the quotient modulo ``2**bits`` of ``out``: a fused decoder's int64 reconstruction)."""
        digits = getattr(params["low"], "digits", None)  # decoded and checked by :meth:`check`
        if digits is None:
            digits = self._digits(params, y.shape)
        at = 0
        for i, c in enumerate(params["channels"]):
            base, offset = c["base"], c["offset"]
            if base == 1:
                out[i] = y[i].view(out.dtype) if y.dtype.itemsize == out.dtype.itemsize else y[i].astype(out.dtype)
                continue
            r = digits[at:at + y.shape[1]]
            at += y.shape[1]
            row = out[i]
            if row.flags.c_contiguous and _joinable(y[i], r):  # (written in place: no temporary)
                _l1plan.mult_join(y[i], r, base, offset, row)
            else:
                out[i] = mult_inverse(y[i], r, base, offset, out.dtype)
        return out

    def _digits(self, params: dict[str, Any], shape: tuple[int, int]) -> np.ndarray:
        where = "front: mult"
        split = [c for c in params["channels"] if c["base"] > 1]
        vocab = max((c["base"] for c in params["channels"]), default=1)
        need = len(split) * shape[1]
        try:
            r = coders.decode_stream(params["low"], vocab, max_count=need)
        except CorruptDataError as e:
            raise CorruptDataError(f"{where}: 'low': {e}") from None
        if r.shape[0] != need:
            raise CorruptDataError(f"{where}: 'low' holds {r.shape[0]} digits, the channels need {need}")
        at = 0
        for c in split:
            if shape[1] and int(r[at:at + shape[1]].max()) >= c["base"]:
                raise CorruptDataError(f"{where}: a digit is not below its channel's base {c['base']}")
            at += shape[1]
        return r

    def check(self, params: dict[str, Any], dtype: np.dtype, shape: tuple[int, int]) -> dict[str, Any]:
        """The params, their ``low`` a :class:`_Low` holding the decoded digits (int32), every
        field checked."""
        where = "front: mult"
        expect_map(params, where, ("channels", "low"))
        if dtype.kind not in "iu":
            raise CorruptDataError(f"{where}: not defined for {dtype} values")
        channels = params["channels"]
        if not isinstance(channels, list) or len(channels) != shape[0]:
            raise CorruptDataError(f"{where}: 'channels' must be a list of {shape[0]} params maps")
        for c in channels:
            expect_map(c, where, ("base", "offset"))
            base = field_int(c, "base", 1, MAX_MULT_BASE, where=where)
            field_int(c, "offset", 0, base - 1, where=where)
        if not isinstance(params["low"], dict):
            raise CorruptDataError(f"{where}: 'low' must be a stream map")
        low = _Low(params["low"])
        low.digits = self._digits(params, shape)
        return {**params, "low": low}

    @staticmethod
    def scalable(params: dict[str, Any]) -> int:
        """Bytes of the params that grow with the number of values (the digits' payload): the
        planner scales them with the token stream when it sizes a sample."""
        low = params.get("low")
        return len(low.get("payload", b"")) if isinstance(low, dict) else 0

    def output_dtype(self, dtype: np.dtype, params: dict[str, Any]) -> np.dtype:
        return SIGNED_OF_WIDTH[np.dtype(dtype).itemsize]
