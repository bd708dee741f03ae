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


def test_cascade_into_kept_arrays_equals_the_cascade():
    """``lms_cascade_rows_into`` with work arrays full of another call's leftovers gives
    ``lms_cascade_rows``'s output (forward and back), and refuses work arrays of other lengths."""
    rng = np.random.default_rng(5)
    x = rng.integers(-3000, 3000, (2, 900)).astype(np.int64)
    o, sf, rl = np.array([256, 32, 4]), np.array([17, 14, 11]), np.array([1, 1, 1])
    want = np.empty_like(x)
    k.lms_cascade_rows(x, o, sf, rl, 48, False, want)
    tmp, scratch = rng.integers(-9, 9, 900), rng.integers(-9, 9, 1000)
    got = np.empty_like(x)
    assert k.lms_cascade_rows_into(x, o, sf, rl, 48, False, got, tmp, scratch)
    assert np.array_equal(got, want)
    back = np.empty_like(x)
    assert k.lms_cascade_rows_into(got, o, sf, rl, 48, True, back, tmp, scratch)
    assert np.array_equal(back, x)
    assert not k.lms_cascade_rows_into(x, o, sf, rl, 48, False, got, tmp[:899], scratch)
    assert not k.lms_cascade_rows_into(x, o, sf, rl, 48, False, got, tmp, scratch[:899])


def test_adaptive_rows_with_the_threads_kept_arrays():
    """``adaptive_rows`` keeps its work arrays between calls (rows of at most KEEP_VALUES): a long
    call, a shorter one, a longer one and one above the limit, each in its own thread too, all
    invert to their input."""
    import threading

    from ubpe.frontend import adaptive

    stages = [list(s) for s in adaptive.DEFAULT_STAGES]
    rng = np.random.default_rng(6)
    lengths = [700, 300, 1200, adaptive.KEEP_VALUES + 1]
    signals = [(np.cumsum(rng.integers(-40, 41, (1, n)), axis=1) % 20000 - 10000).astype(np.int16)
               for n in lengths]
    fails = []

    def run():
        for x in signals:
            r = adaptive.adaptive_rows(x, stages)
            if not np.array_equal(adaptive.adaptive_rows(r, stages, inverse=True), x):
                fails.append(x.shape)

    if hasattr(adaptive._work, "pair"):  # (this thread's kept arrays from earlier tests: start without)
        del adaptive._work.pair
    run()
    assert adaptive._work.pair[0].shape[0] == 1200  # kept: the longest at most KEEP_VALUES
    threads = [threading.Thread(target=run) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert fails == []
