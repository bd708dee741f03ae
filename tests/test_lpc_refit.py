"""The lpc stage's refit (``ubpe.frontend.lpc.lpc_reweight``): it recomputes only the refitted
blocks' residuals (the rest copied) and reads the residual in its own width, with the same
residual and the same predictors as the whole-signal paths."""

from __future__ import annotations

import os

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ubpe._kernels import level1 as fast
from ubpe.frontend import lpc

SETTINGS = settings(deadline=None, max_examples=int(os.environ.get("UBPE_MAX_EXAMPLES", "100")),
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@st.composite
def bursty(draw) -> np.ndarray:
    """int16 or int32 noise with loud bursts (blocks whose loudness moves: refitted), 0-20 000 values."""
    n = draw(st.integers(0, 20000))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    dtype = draw(st.sampled_from([np.int16, np.int32]))
    t = np.arange(n)
    loud = (np.sin(t / draw(st.floats(20.0, 3000.0))) > draw(st.floats(-0.5, 0.9))).astype(np.float64)
    x = rng.normal(0, 5, n) + loud * 3000 * np.sin(t / draw(st.floats(2.0, 40.0)))
    return np.clip(np.round(x), -32768, 32767).astype(dtype)


@SETTINGS
@given(bursty(), st.sampled_from([256, 1024, 4096]))
def test_refit_residual_is_the_whole_signal_residual(x, block):
    # the refit writes only its refitted blocks' residuals (the rest copied): the same residual as
    # lpc_residual of the new params over every block, and the refit reads the residual in its
    # width: the same predictors as from its int64 copy
    from ubpe._kernels import predict
    from ubpe.frontend._common import as_signal

    r, p = lpc.lpc_forward(x, block=block, candidates=1, costed_every=4)
    got, params = lpc.lpc_reweight(x, r, p)
    s = as_signal(x)[0]
    b, orders, shifts, coefs = lpc.check_lpc_params(params, x.shape[0], np.dtype(x.dtype))
    expected = np.empty(x.shape[0], got.dtype)
    fast.lpc_residual(s, b, orders, shifts, coefs, 64 - 8 * x.dtype.itemsize, expected)
    assert np.array_equal(got, expected)
    assert np.array_equal(lpc.lpc_inverse(got, params), x)
    for lo in range(0, x.shape[0], block):
        hi = min(x.shape[0], lo + block)
        q1, q2 = np.zeros(32, np.int64), np.zeros(32, np.int64)
        sh = 64 - 8 * x.dtype.itemsize
        narrow = fast.reweight_fit(s, r, lo, hi, 32, 15, sh, 2, 16, 1024, 64, q1)
        wide = fast.reweight_fit(s, r.astype(np.int64), lo, hi, 32, 15, sh, 2, 16, 1024, 64, q2)
        assert narrow == wide and np.array_equal(q1, q2)
        assert narrow == predict.reweight_fit(s, r.astype(np.int64), lo, hi, 32, 15, sh, 2, 16, 1024, 64, q2)


@SETTINGS
@given(st.integers(1, 33), st.integers(1, 64), st.integers(1, 17), st.integers(0, 2**32 - 1), st.booleans())
def test_padded_gram_is_reweight_gram(p, quads, step, seed, zeros):
    from ubpe._kernels import predict

    rng = np.random.default_rng(seed)
    rows = 4 * quads
    first = p - 1 + int(rng.integers(0, 5))
    x = rng.normal(0, 1000, first + (rows - 1) * step + 1 + int(rng.integers(0, 3)))
    u = rng.random(rows)
    if zeros:  # (a caller pads with equations of weight 0)
        u[-int(rng.integers(1, 4)):] = 0.0
    expected = np.full((p, p), 7.0)
    predict.reweight_gram(x, first, step, u, np.empty((rows, p)), expected)
    wide = (p + 7) // 8 * 8
    got = np.full((p, wide), np.nan)
    fast.reweight_gram_padded(x, first, step, u, np.full((rows, wide), np.nan), got)
    lower = np.tril(np.ones((p, p), bool))
    assert np.array_equal(got[:, :p][lower], expected[lower])


@SETTINGS
@given(st.integers(1, 33), st.integers(1, 9), st.integers(1, 17), st.integers(0, 2**32 - 1))
def test_padded_gram_bits_are_reweight_grams(p, quads, step, seed):
    # two quads of equations and two rows a pass, an odd row or a last quad alone: the reference's
    # floats bit for bit (signs of zero too), every row count and parity of p and of quads
    from ubpe._kernels import predict

    rng = np.random.default_rng(seed)
    rows = 4 * quads
    first = p - 1 + int(rng.integers(0, 5))
    x = np.round(rng.normal(0, 1000, first + (rows - 1) * step + 1)) * rng.choice([1.0, -1.0, 0.0], 1)
    u = rng.random(rows) * (rng.random(rows) < 0.8)  # (some equations of weight 0, as a caller pads)
    expected = np.full((p, p), 7.0)
    predict.reweight_gram(x, first, step, u, np.empty((rows, p)), expected)
    wide = (p + 7) // 8 * 8
    got = np.full((p, wide), np.nan)
    fast.reweight_gram_padded(x, first, step, u, np.full((rows, wide), np.nan), got)
    lower = np.tril(np.ones((p, p), bool))
    assert np.array_equal(got[:, :p][lower].view(np.int64), expected[lower].view(np.int64))
