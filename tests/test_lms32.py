"""The adaptive stage's long LMS stages (order 17 and up, values of at most 32 bits), which run
with int32 weights and history and a split prediction sum (``ubpe._kernels.predict.lms_stage32``):
the same residuals as the plain-Python reference, and the inverse gives the values back."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import reference_predict as ref
from ubpe.frontend import adaptive

DTYPES = [np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32]


def signed_ints(x: np.ndarray) -> list[int]:
    """Each sample as the kernels see it: a signed one as itself, an unsigned one offset by
    ``-2**(bits-1)`` (the ``unsigned`` param 1)."""
    bits = 8 * x.dtype.itemsize
    if x.dtype.kind == "u":
        return [int(v) - (1 << (bits - 1)) for v in x.tolist()]
    return [ref.to_signed(int(v), bits) for v in x.tolist()]


@st.composite
def signals(draw, max_size=160, dtypes=tuple(DTYPES)):
    """Random, a smooth walk, or runs of the dtype's extremes (weights that grow fast), of one
    of ``dtypes`` and at most ``max_size`` samples."""
    dtype = np.dtype(draw(st.sampled_from(dtypes)))
    n = draw(st.integers(0, max_size))
    info = np.iinfo(dtype)
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    kind = draw(st.sampled_from(["random", "walk", "extremes"]))
    if kind == "random":
        return rng.integers(info.min, int(info.max) + 1, n, dtype=dtype)
    if kind == "extremes":
        return rng.choice(np.array([info.min, info.max, 0, 1], dtype=dtype), n)
    walk = np.cumsum(rng.integers(-40, 41, n)) + int(info.min) // 2 + int(info.max) // 2
    return np.clip(walk, info.min, info.max).astype(dtype)


STAGES = st.lists(st.tuples(st.integers(17, 70), st.integers(1, 28), st.integers(0, 1)), min_size=1, max_size=2)


@settings(max_examples=60, deadline=None)
@given(signals(), STAGES)
def test_long_stages_match_the_reference(x, stages):
    """Every shift, so both sides of bits + shift = 32 (sums modulo 2**32, or exact 64-bit products)."""
    r, params = adaptive.adaptive_forward(x, stages=stages)
    bits = 8 * x.dtype.itemsize
    expected = ref.cascade(signed_ints(x), bits, stages)
    assert r.tolist() == expected
    back = adaptive.adaptive_inverse(r, params)
    assert back.tobytes() == x.tobytes()


def test_long_stage_on_a_long_loud_signal_matches_the_reference():
    """Weights far from 0 (a loud tone, the fast normalized rule), past the warm-up."""
    t = np.arange(3000)
    x = (np.sin(t * 0.07) * 30000 + np.sin(t * 0.31) * 2000).astype(np.int16)
    stages = [(40, 20, 1), (24, 5, 1)]
    r, params = adaptive.adaptive_forward(x, stages=stages)
    assert r.tolist() == ref.cascade(signed_ints(x), 16, stages)
    assert np.array_equal(adaptive.adaptive_inverse(r, params), x)
