"""ubpe._kernels.tally.offset_counts and offsets give the numbers of the numpy passes they replace
in the fast planner (ubpe.planner.fast._histogram, Layouts.dense): ``np.subtract(y, lo,
dtype=np.int64)`` and its ``np.bincount`` over the span, for every integer width, one value, a
constant input and values at a width's extremes."""

from __future__ import annotations

import os

import numpy as np
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from ubpe._kernels import tally
from ubpe.planner import fast as planner_fast

SETTINGS = settings(deadline=None, max_examples=int(os.environ.get("UBPE_MAX_EXAMPLES", "100")),
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
DTYPES = [np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32, np.int64, np.uint64]


@st.composite
def arrays(draw):
    dtype = np.dtype(draw(st.sampled_from(DTYPES)))
    info = np.iinfo(dtype)
    top = min(int(info.max), (1 << 63) - 1)
    n = draw(st.integers(1, 2000))
    kind = draw(st.sampled_from(["narrow", "constant", "top", "bottom"]))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    width = min(draw(st.integers(0, 5000)), top - int(info.min))
    if kind == "constant":
        base = draw(st.integers(int(info.min), top))
        return np.full(n, base, dtype)
    if kind == "top":
        base = top - width
    elif kind == "bottom":
        base = int(info.min)
    else:
        base = draw(st.integers(int(info.min), top - width))
    offsets = rng.integers(0, width + 1, n, dtype=np.uint64)
    return np.array([base + int(o) for o in offsets], dtype)


@SETTINGS
@given(arrays(), st.booleans())
@example(np.array([7], np.int8), False)
@example(np.array([-128, 127], np.int8), True)
@example(np.array([0, (1 << 63) - 1 - 3], np.uint64)[[0, 0]], False)
def test_offsets_and_their_counts_are_subtract_and_bincount(y, strided):
    if strided:  # (a row of a larger array, as a channel's values may be)
        y = np.repeat(y, 2)[::2]
    lo, hi = int(y.min()), int(y.max())
    d = np.empty(y.shape[0], np.int32)  # (spans of at most 5 000 here: int32, as Layouts.dense)
    counts = np.zeros(hi - lo + 1, np.int64)
    tally.offsets(y, lo, d)
    tally.offset_counts(y, lo, counts)
    expected_d = np.subtract(y, lo, dtype=np.int64)
    assert np.array_equal(d, expected_d)
    assert np.array_equal(counts, np.bincount(expected_d, minlength=hi - lo + 1))
    assert counts.dtype == np.bincount(expected_d).dtype


def test_planner_histogram_as_before():
    """_histogram's three results (it no longer writes d = y - lo: tally.offset_counts), for
    the spans it takes and None past them."""
    y = np.array([5, -3, 5, 9, -3, -3], np.int16)
    lo, hi, counts = planner_fast._histogram(y, None)
    assert (lo, hi) == (-3, 9)
    assert counts.tolist() == [3, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 1]
    assert planner_fast._histogram(np.array([0, 1 << 22], np.int64), None) is None
    assert planner_fast._histogram(np.array([], np.int32), None) is None
