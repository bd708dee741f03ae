"""The split sum's taps as an intrinsic (``ubpe._kernels.lmstaps.split_taps``, issue 28, target 2)
equal the compiled loop they replace (``predict._split_taps``) and the plain-Python definition:
the same updated weights and the same uint64 sum, for every order that is a multiple of 16."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from test_lms_decode import check
from ubpe._kernels import lmstaps
from ubpe._kernels import predict as k

I32 = st.integers(-(1 << 31), (1 << 31) - 1)


@st.composite
def taps(draw):
    """(w, a, h, start, s, order): weights anywhere in int32, adaptation values anywhere in int32
    (the kernel wraps as the loop does), history values of at most 16 bits."""
    order = 16 * draw(st.integers(1, 20))
    start = draw(st.integers(0, 40))
    extra = draw(st.integers(0, 5))
    w = np.array(draw(st.lists(I32, min_size=order, max_size=order)), np.int32)
    a = np.array(draw(st.lists(st.one_of(st.integers(-64, 64), I32), min_size=start + order + extra,
                               max_size=start + order + extra)), np.int32)
    h = np.array(draw(st.lists(st.integers(-(1 << 15), (1 << 15) - 1), min_size=start + 2 + order + extra,
                               max_size=start + 2 + order + extra)), np.int32)
    return w, a, h, start, draw(st.sampled_from([-1, 0, 1])), order


@settings(max_examples=200, deadline=None)
@given(taps())
def test_intrinsic_equals_the_loop_and_the_definition(args):
    w, a, h, start, s, order = args
    w1, w2, w3 = w.copy(), w.copy(), w.copy()
    d1 = lmstaps.split_taps(w1, a, h, start, s, order)
    d2 = k._split_taps(w2, a, h, start, s, order)
    d3 = lmstaps._reference(w3, a, h, start, s, order)
    assert int(d1) == int(d2) == int(d3)
    assert w1.tobytes() == w2.tobytes() == w3.tobytes()


def test_extreme_weights_wrap_as_the_loop():
    """Weights at the int32 limits moved past them (wrapping) and the most negative history."""
    order = 32
    w = np.array([(1 << 31) - 1, -(1 << 31)] * 16, np.int32)
    a = np.array([64, -64] * 20, np.int32)
    h = np.full(40, -(1 << 15), np.int32)
    for s in (-1, 0, 1):
        w1, w2 = w.copy(), w.copy()
        assert int(lmstaps.split_taps(w1, a, h, 3, s, order)) == int(k._split_taps(w2, a, h, 3, s, order))
        assert w1.tobytes() == w2.tobytes()
    assert w1.tobytes() != w.tobytes()


@settings(max_examples=20, deadline=None)
@given(st.lists(st.integers(-(1 << 15), (1 << 15) - 1), min_size=1, max_size=600), st.sampled_from([64, 128, 256]),
       st.integers(10, 23), st.integers(0, 1))
def test_stage_with_the_intrinsic_matches_the_reference(xs, order, shift, rule):
    """Whole stages of orders that are multiples of 16 (the intrinsic's), 16-bit values with
    bits + shift <= 33 (the split sum), past the warm-up: forward against the plain-Python
    definition (tests/reference_predict.py) and back."""
    x = np.array(xs, np.int16)
    check(x, [(order, shift, rule)])
