"""Kernels of :func:`ubpe.frontend.mult.mult_detect` (numba): each base's quotients and their
differences in one pass, and their histogram, where numpy took about ten passes a base."""

from __future__ import annotations

import math

import numpy as np

from . import njit
from .alloc import empty
from .intrinsics import imax, imin


@njit(cache=True, nogil=True)
def quotient_steps(wide, offset, base, ends, steps):
    """``steps`` = the differences of ``q = floor((wide - offset) / base)`` within each window
    of ``wide`` (window ``k`` ends before ``ends[k]``, the first starts at 0): a window of ``L``
    values gives its ``L - 1`` differences, in order, windows after each other; returns their
    least and largest (0, -1 when there are none). ``q`` by float64 division, as
    :func:`ubpe.frontend.mult._floor_div` computes it (exact for ``|wide - offset| < 2**33``),
    all of them first (a loop LLVM vectorizes), then the differences. Preconditions: ``wide``
    int64 with ``|values| < 2**32``; ``1 <= base``; ``ends`` increasing, the last
    ``len(wide)``; ``steps`` int64 of ``len(wide) - len(ends)``."""
    n = wide.shape[0]
    fb = float(base)
    q = empty(n, np.int64)
    for i in range(n):
        q[i] = np.int64(math.floor(float(wide[i] - offset) / fb))
    lo = np.int64(1) << 62
    hi = -lo
    start = 0
    at = 0
    for k in range(ends.shape[0]):
        end = ends[k]
        if end - start >= 2:
            cur = q[start + 1:end]
            prev = q[start:end - 1]
            out = steps[at:at + end - start - 1]
            for i in range(end - start - 1):
                d = cur[i] - prev[i]
                out[i] = d
                lo = imin(lo, d)
                hi = imax(hi, d)
            at += end - start - 1
        start = end
    if at == 0:
        return np.int64(0), np.int64(-1)
    return lo, hi


@njit(cache=True, nogil=True)
def step_counts(steps, lo, counts):
    """``counts[v - lo] += 1`` for each ``v`` of ``steps`` (``np.bincount(steps - lo)`` added to
    ``counts``). Preconditions: every ``v - lo`` in ``[0, len(counts))``."""
    for i in range(steps.shape[0]):
        counts[steps[i] - lo] += 1


@njit(cache=True, nogil=True)
def mult_offset(h):
    """:func:`ubpe.frontend.mult._mult_offset_reference` of the digit histogram ``h`` (int64, ``m
    = len(h) >= 1`` digits): the cut ``c`` in ``[0, m)`` that separates the fewest values from
    the most common digit ``p`` (the first of equal counts), the first ``c`` of least cost: each
    cut's cost from running sums of the digits ordered about ``p`` (integers: the same cost as
    the numpy table's ``m x m`` product, which took about 20 us a base of 64 in fresh arrays and
    a matmul, and as the loop over the cuts and digits that replaced it)."""
    m = h.shape[0]
    p = 0
    for s in range(1, m):
        if h[s] > h[p]:
            p = s
    half = m // 2
    # the digits in order of their signed circular distance dev from p (-half .. m - half - 1),
    # as running sums: a cut c (its base (p - c) % m) separates the digits of dev < -base and
    # those of dev >= m - base, two ends of that order (O(m) for the m x m loop over the cuts
    # and digits, about 60 us a 64-digit base: the same integer costs)
    run = np.empty(m + 1, np.int64)
    run[0] = 0
    for j in range(m):
        run[j + 1] = run[j] + h[(p + j - half) % m]
    best = 0
    best_cost = np.int64(-1)
    for c in range(m):
        base = (p - c) % m
        cost = run[max(half - base, 0)] + (run[m] - run[min(m - base + half, m)])
        if best_cost < 0 or cost < best_cost:
            best, best_cost = c, cost
    return best
