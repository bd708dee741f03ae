"""The level-1 LPC kernels' 32-bit predictions (``ubpe._kernels.level1._predict_chunk_narrow``) give
the residuals of the 64-bit ones wherever they are used: a predictor of shift ``shift`` on values of
``bits`` bits takes them when ``shift + bits <= 32``; beyond, the 64-bit path. Checked at the edges:
full-scale values, order 32, coefficients of 15 and 16 bits at their extremes, shifts on both sides
of the bound."""

from __future__ import annotations

import os

import numpy as np
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from ubpe._kernels import level1 as fast
from ubpe._kernels import predict

SETTINGS = settings(deadline=None, max_examples=int(os.environ.get("UBPE_MAX_EXAMPLES", "100")),
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@st.composite
def edge_blocks(draw):
    """(int64 samples of a ``bits``-bit signal, bits, block, orders, shifts, coefs, precision): the
    samples often at the width's extremes, the coefficients often at their precision's, orders
    often 32 and shifts often at the bound ``32 - bits`` or just past it."""
    bits = draw(st.sampled_from([8, 16, 24, 32]))
    n = draw(st.integers(1, 1500))
    block = draw(st.sampled_from([1, 7, 300, 1024, 4096]))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    lo, hi = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    kind = draw(st.sampled_from(["extreme", "uniform", "walk"]))
    if kind == "extreme":
        s = rng.choice([lo, hi], n)
    elif kind == "uniform":
        s = rng.integers(lo, hi + 1, n)
    else:
        s = np.clip(np.cumsum(rng.integers(-(hi // 64) - 1, hi // 64 + 2, n)), lo, hi)
    nb = -(-n // block)
    bound = 32 - bits
    orders = np.array([draw(st.sampled_from([0, 1, 4, 31, 32])) for _ in range(min(nb, 4))] * (-(-nb // 4)),
                      np.int64)[:nb]
    shifts = np.array([draw(st.sampled_from([0, max(bound - 1, 0), max(bound, 0), bound + 1, bound + 2, 31]))
                       for _ in range(nb)], np.int64)
    precision = draw(st.sampled_from([15, 16]))
    qlo, qhi = -(1 << (precision - 1)), (1 << (precision - 1)) - 1
    total = int(orders.sum())
    coefs = rng.choice([qlo, qhi], total) if draw(st.booleans()) else rng.integers(qlo, qhi + 1, total)
    return s.astype(np.int64), bits, block, orders, np.minimum(shifts, 31), coefs.astype(np.int64), precision


def _reference(s, bits, block, orders, shifts, coefs):
    out = np.empty_like(s)
    predict.lpc_filter(s, block, orders, shifts, coefs, 64 - bits, False, out)
    return out


@SETTINGS
@given(edge_blocks())
@example((np.array([-32768, 32767] * 40, np.int64), 16, 80, np.array([32]), np.array([16]),
          np.full(32, 32767, np.int64), 16))
def test_residual_is_the_64_bit_residual_at_the_bound(case):
    """Within the bound (every block's shift at most 32 - bits) the 32-bit predictions, forced on
    every block, are the reference's; the kernel as called (its own choice per block) is the
    reference's whatever the shifts."""
    s, bits, block, orders, shifts, coefs, _ = case
    want = _reference(s, bits, block, orders, shifts, coefs)
    got = np.empty_like(s)
    fast.lpc_residual(s, block, orders, shifts, coefs, 64 - bits, got)
    assert np.array_equal(got, want)
    within = np.minimum(shifts, max(32 - bits, 0)) if bits < 32 else np.zeros_like(shifts)
    want = _reference(s, bits, block, orders, within, coefs)
    forced = np.empty_like(s)
    fast.lpc_residual(s, block, orders, within, coefs, 64 - bits, forced, 63)  # every block in 32 bits
    assert np.array_equal(forced, want)


def test_beyond_the_bound_the_64_bit_path_is_taken():
    """One past the bound (int16 values, shift 17) the 32-bit sums would give other residuals (the
    sum's bit 32 reaches the residual): forced, they differ from the reference; as called, the
    kernel takes the 64-bit path and gives the reference's."""
    rng = np.random.default_rng(7)
    s = rng.choice([-32768, 32767], 4096).astype(np.int64)
    orders, shifts = np.array([32]), np.array([17])
    coefs = np.full(32, 32767, np.int64)  # 16-bit coefficients at their extreme: sums near 2**35
    want = _reference(s, 16, 4096, orders, shifts, coefs)
    got, forced = np.empty_like(s), np.empty_like(s)
    fast.lpc_residual(s, 4096, orders, shifts, coefs, 48, got)
    fast.lpc_residual(s, 4096, orders, shifts, coefs, 48, forced, 63)
    assert np.array_equal(got, want)
    assert not np.array_equal(forced, want)
    # at the bound itself (shift 16) the forced 32-bit path is exact on the same values
    want16 = _reference(s, 16, 4096, orders, np.array([16]), coefs)
    fast.lpc_residual(s, 4096, orders, np.array([16]), coefs, 48, forced, 63)
    assert np.array_equal(forced, want16)


@st.composite
def edge_signals(draw):
    """(int64 samples, bits) of full-scale signals the analysis fits to high orders and small
    shifts, and to large shifts (quiet or noisy), at 8, 16 and 32 bits."""
    bits = draw(st.sampled_from([8, 16, 32]))
    n = draw(st.integers(2, 5000))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    hi = (1 << (bits - 1)) - 1
    kind = draw(st.sampled_from(["tones", "noise", "extreme", "quiet"]))
    t = np.arange(n)
    if kind == "tones":
        x = sum(0.3 * hi * np.sin(t / rng.uniform(1.5, 60) + rng.uniform(0, 6)) for _ in range(3))
    elif kind == "noise":
        x = rng.normal(0, hi / 3, n)
    elif kind == "extreme":
        x = rng.choice([-hi - 1, hi], n)
    else:
        x = rng.normal(0, 2, n)
    return np.clip(np.round(x), -hi - 1, hi).astype(np.int64), bits


@SETTINGS
@given(edge_signals(), st.sampled_from([256, 1000, 4096]), st.sampled_from([(15, 16), (12, 15)]),
       st.sampled_from([(3, 1), (1, 4)]))
def test_analysis_makes_the_64_bit_choices_at_the_edges(signal, block, precisions, search):
    """The fast analysis, its costings in 32 bits where exact, makes the choices it makes with every
    costing in 64 bits (the hook ``narrow_max=-2``), at order 32 and precisions up to 16, at the
    level-2 search (3 orders costed on every sample: then also the reference kernel's choices) and
    level 1's (one order on a chunk in 4); the residual of its choice is the 64-bit filter's."""
    s, bits = signal
    ncand, every = search
    nb = -(-s.shape[0] // block)
    results = []
    for kernel, extra in ((fast.lpc_analyze, (ncand, every)), (fast.lpc_analyze, (ncand, every, -2)),
                          (predict.lpc_analyze, ())):
        if kernel is predict.lpc_analyze and search != (3, 1):
            continue
        out = [np.zeros(nb, np.int64) for _ in range(3)] + [np.zeros(nb * 32, np.int64)]
        used = kernel(s, block, 32, np.array([2], np.int64), np.array(precisions, np.int64), 64 - bits, *out, *extra)
        results.append((used, out))
    used, got = results[0]
    for other_used, other in results[1:]:
        assert other_used == used
        for a, b in zip(other, got):
            assert np.array_equal(a, b)
    orders, shifts, _, coefs = got
    want = _reference(s, bits, block, orders, shifts, coefs[:used])
    res = np.empty_like(s)
    fast.lpc_residual(s, block, orders, shifts, coefs[:used], 64 - bits, res)
    assert np.array_equal(res, want)
