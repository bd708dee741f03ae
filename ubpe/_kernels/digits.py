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
