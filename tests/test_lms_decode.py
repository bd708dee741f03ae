"""The LMS kernels as level 2's decoder runs them (issue 28, target 2): the order-4 stage in
scalars (``predict.lms_stage4``), the split int32 sum of the long stages for values of at most
16 bits (``predict.lms_stage32``, bits + shift <= 33), and the cascade's shared scratch with
the last stage writing ``dst`` (``predict.lms_cascade_rows``) give the values of the plain-Python
definition (tests/reference_predict.py), and the inverse gives the signal back."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import reference_predict as ref
from test_lms32 import signals
from ubpe._kernels import predict as k
from ubpe.frontend import adaptive

SMALL = [np.int8, np.uint8, np.int16, np.uint16]
ALL = SMALL + [np.int32, np.uint32, np.int64, np.uint64]


def signed_ints(x: np.ndarray) -> list[int]:
    """Each sample as the kernels see it (an unsigned one offset by ``-2**(bits-1)``)."""
    bits = 8 * x.dtype.itemsize
    if x.dtype.kind == "u":
        return [int(v) - (1 << (bits - 1)) for v in x.tolist()]
    return [ref.to_signed(int(v), bits) for v in x.tolist()]


def check(x: np.ndarray, stages: list) -> None:
    """Forward equals the reference cascade; the inverse restores ``x`` bit for bit."""
    r, params = adaptive.adaptive_forward(x, stages=stages)
    bits = 8 * x.dtype.itemsize
    assert r.tolist() == ref.cascade(signed_ints(x), bits, stages)
    assert adaptive.adaptive_inverse(r, params).tobytes() == x.tobytes()


@settings(max_examples=80, deadline=None)
@given(signals(200, ALL), st.integers(1, 28), st.integers(0, 1))
def test_order_4_stage_matches_the_reference(x, shift, rule):
    """Every width (64-bit sums wrapping included) and both rules."""
    check(x, [(4, shift, rule)])


@settings(max_examples=25, deadline=None)
@given(signals(420, SMALL), st.integers(k.LMS32_MIN_ORDER, 130), st.integers(1, 28), st.integers(0, 1))
def test_split_sum_long_stage_matches_the_reference(x, order, shift, rule):
    """Orders from LMS32_MIN_ORDER, values of 8 or 16 bits, every shift: both sides of
    bits + shift = 33 (the split int32 sums, or exact 64-bit products), past the warm-up."""
    check(x, [(order, shift, rule)])


def test_split_sum_on_a_long_loud_signal_matches_the_reference():
    """Weights far from 0 (a loud tone, the fast normalized rule) and 16-bit values at
    bits + shift = 33 exactly, over many samples past the warm-up, then level 2's cascade."""
    t = np.arange(1500)
    x = (np.sin(t * 0.07) * 30000 + np.sin(t * 0.31) * 2000).astype(np.int16)
    check(x, [(64, 17, 1)])
    check(x[:700], [(256, 17, 1), (32, 14, 1), (4, 11, 1)])


@settings(max_examples=30, deadline=None)
@given(st.integers(1, 3), st.integers(0, 90), st.lists(
    st.tuples(st.sampled_from([1, 3, 4, 5, 17, 64, 70]), st.integers(1, 28), st.integers(0, 1)),
    min_size=0, max_size=4), st.integers(0, 2**32 - 1))
def test_cascade_rows_match_the_reference_row_by_row(rows, n, stages, seed):
    """Any number of stages (the last writing ``dst`` from either parity), several rows."""
    rng = np.random.default_rng(seed)
    x = np.cumsum(rng.integers(-300, 301, (rows, n)), axis=1).astype(np.int16)
    st_arr = np.array(stages, np.int64).reshape(-1, 3)
    src = x.astype(np.int64)
    fwd = np.empty_like(src)
    k.lms_cascade_rows(src, st_arr[:, 0].copy(), st_arr[:, 1].copy(), st_arr[:, 2].copy(), 48, False, fwd)
    for c in range(rows):
        assert fwd[c].tolist() == ref.cascade(x[c].tolist(), 16, stages)
    back = np.empty_like(src)
    k.lms_cascade_rows(fwd, st_arr[:, 0].copy(), st_arr[:, 1].copy(), st_arr[:, 2].copy(), 48, True, back)
    assert np.array_equal(back, src)


@settings(max_examples=30, deadline=None)
@given(signals(700, [np.int16, np.uint16, np.int8]), st.booleans())
def test_default_cascade_in_one_loop_matches_the_reference(x, default):
    """The forward cascade through its kernel as the "adaptive" stage calls it (``adaptive_rows``):
    the default cascade on 16-bit values runs in one loop (``predict._cascade3_forward``, past
    its 257-sample warm-up), 8-bit values and another cascade of its shape stage by stage; the
    reference's residuals, the values back."""
    stages = [list(t) for t in adaptive.DEFAULT_STAGES] if default else [[64, 16, 1], [32, 9, 0], [4, 11, 1]]
    unsigned = int(x.dtype.kind == "u")
    r = adaptive.adaptive_rows(x.reshape(1, -1), stages, unsigned=unsigned)
    bits = 8 * x.dtype.itemsize
    assert r[0].tolist() == ref.cascade(signed_ints(x), bits, [tuple(t) for t in stages])
    back = adaptive.adaptive_rows(r, stages, inverse=True, unsigned=unsigned)
    assert back.view(x.dtype)[0].tobytes() == x.tobytes()


def test_three_stages_in_one_loop_on_loud_audio_like_signals():
    """Level 2's default cascade past the warm-up on a loud tone (weights far from 0), 8 and
    16 bits, and the kernel itself: it runs (True) and gives what the stages one after the
    other give."""
    t = np.arange(2500)
    x = (np.sin(t * 0.07) * 30000 + np.sin(t * 0.31) * 2000).astype(np.int16)
    check(x, [list(s) for s in adaptive.DEFAULT_STAGES])
    check((x >> 8).astype(np.int8), [list(s) for s in adaptive.DEFAULT_STAGES])
    st_arr = np.array(adaptive.DEFAULT_STAGES, np.int64)
    o, sf, rl = st_arr[:, 0].copy(), st_arr[:, 1].copy(), st_arr[:, 2].copy()
    src = x.astype(np.int64)
    fused = np.empty_like(src)
    assert k._cascade3_forward(src, o, sf, rl, 48, fused, np.empty_like(src), np.empty_like(src))
    one = src
    for order, shift, rule in adaptive.DEFAULT_STAGES:
        nxt = np.empty_like(src)
        k.lms_stage(one, order, shift, rule, 48, False, nxt)
        one = nxt
    assert np.array_equal(fused, one)
    assert not k._cascade3_forward(src[:257], o, sf, rl, 48, fused[:257], np.empty(257, np.int64),
                                   np.empty(257, np.int64))  # (no sample past the warm-up)
    # several rows through the cascade's kernel (each row fused, the work arrays shared), and back
    rows = np.stack([src, src[::-1].copy(), src // 3])
    out = np.empty_like(rows)
    k.lms_cascade_rows(rows, o, sf, rl, 48, False, out)
    assert np.array_equal(out[0], one)
    for c in range(3):
        expected = np.empty((1, rows.shape[1]), np.int64)
        k.lms_cascade_rows(rows[c:c + 1].copy(), o[:1], sf[:1], rl[:1], 48, False, expected)
        for j in (1, 2):
            nxt = np.empty_like(expected)
            k.lms_cascade_rows(expected, o[j:j + 1], sf[j:j + 1], rl[j:j + 1], 48, False, nxt)
            expected = nxt
        assert np.array_equal(out[c], expected[0])
    back = np.empty_like(rows)
    k.lms_cascade_rows(out, o, sf, rl, 48, True, back)
    assert np.array_equal(back, rows)


def test_inverse_in_one_loop_equals_the_stages_one_after_the_other():
    """The default cascade's inverse in one loop (``predict._cascade3_inverse``) runs past the
    warm-up (True) and gives what the inverse stages give one after the other: on a loud tone's
    residuals (the tone back) and on arbitrary int64 residuals (hostile input: the same values
    as the stages make of them, whatever they are); not on a row with no sample past the warm-up."""
    st_arr = np.array(adaptive.DEFAULT_STAGES, np.int64)
    o, sf, rl = st_arr[:, 0].copy(), st_arr[:, 1].copy(), st_arr[:, 2].copy()
    t = np.arange(3000)
    x = (np.sin(t * 0.07) * 30000 + np.sin(t * 0.31) * 2000).astype(np.int16).astype(np.int64)
    tone = np.empty_like(x)
    assert k._cascade3_forward(x, o, sf, rl, 48, tone, np.empty_like(x), np.empty_like(x))
    wild = np.random.default_rng(5).integers(-(2**62), 2**62, 1200)
    for residuals, values in ((tone, x), (wild, None)):
        one = residuals
        for order, shift, rule in reversed(adaptive.DEFAULT_STAGES):
            nxt = np.empty_like(one)
            k.lms_stage(one, order, shift, rule, 48, True, nxt)
            one = nxt
        fused = np.empty_like(residuals)
        assert k._cascade3_inverse(residuals, o, sf, rl, 48, fused, np.empty_like(residuals),
                                   np.empty_like(residuals))
        assert np.array_equal(fused, one)
        if values is not None:
            assert np.array_equal(fused, values)
    assert not k._cascade3_inverse(wild[:257], o, sf, rl, 48, np.empty(257, np.int64), np.empty(257, np.int64),
                                   np.empty(257, np.int64))
    assert not k._cascade3_inverse(wild, o[::-1].copy(), sf, rl, 48, np.empty_like(wild), np.empty_like(wild),
                                   np.empty_like(wild))


@pytest.mark.parametrize("order", [4, 32, 48, 64, 256])
def test_public_stage_kernels_allocate_their_own_scratch(order):
    """``lms_stage`` and ``lms_stage32`` (their own scratch) agree with the reference."""
    rng = np.random.default_rng(order)
    x = np.cumsum(rng.integers(-200, 201, 600)).astype(np.int64)
    expected = ref.lms_stage(x.tolist(), 16, order, 17, 1)
    out = np.empty_like(x)
    k.lms_stage(x, order, 17, 1, 48, False, out)
    assert out.tolist() == expected
    out32 = np.empty_like(x)
    assert k.lms_stage32(x, order, 17, 1, 48, False, out32)
    assert out32.tolist() == expected
    back = np.empty_like(x)
    k.lms_stage(out, order, 17, 1, 48, True, back)
    assert np.array_equal(back, x)


def test_adaptive_inverse_one_group_and_several_groups():
    """The inverse without gather (every channel alike) and with (two cascades) restores each
    channel as its own inverse does."""
    rng = np.random.default_rng(5)
    x = np.cumsum(rng.integers(-500, 501, (3, 400)), axis=1).astype(np.int16)
    stage = adaptive.AdaptiveStage()
    y, params = stage.forward(x)
    assert np.array_equal(stage.inverse(y, params), x)
    other = [[8, 12, 0]]
    y2 = y.copy()
    y2[1] = adaptive.adaptive_rows(x[1:2], other)[0]
    params2 = {"channels": [params["channels"][0], {"stages": other, "unsigned": 0}, params["channels"][2]]}
    out = stage.inverse(y2, params2)
    assert out.dtype == x.dtype and np.array_equal(out, x)
