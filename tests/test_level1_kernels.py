"""The fast level's kernels (ubpe._kernels.level1) give the results of the kernels they stand for:
the same LPC choices and residuals, refits, "mag" statistics and span sums, on hypothesis signals
and on the bundled ECG excerpt."""

from __future__ import annotations

import os
import pathlib

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import reference_mag
import ubpe
from ubpe._kernels import level1 as fast
from ubpe._kernels import predict, residual
from ubpe.coders import mag
from ubpe.frontend import lpc

SETTINGS = settings(deadline=None, max_examples=int(os.environ.get("UBPE_MAX_EXAMPLES", "100")),
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
EXCERPT = pathlib.Path(ubpe.__file__).parent / "data" / "mitbih_208_excerpt.npy"


@st.composite
def signals(draw, max_size: int = 3000) -> tuple[np.ndarray, int]:
    """(int64 samples of a ``bits``-bit signal, bits): a random walk with sines and noise, or raw
    noise; sometimes at the extremes of the width (the residuals then wrap)."""
    bits = draw(st.sampled_from([8, 16, 24, 32]))
    n = draw(st.integers(0, max_size))
    seed = draw(st.integers(0, 2**32 - 1))
    kind = draw(st.sampled_from(["walk", "tone", "noise", "extreme", "smooth"]))
    rng = np.random.default_rng(seed)
    hi = (1 << (bits - 1)) - 1
    t = np.arange(n)
    if kind == "walk":
        x = np.cumsum(rng.integers(-50, 51, n)) * rng.integers(1, 9)
    elif kind == "tone":
        x = 0.4 * hi * np.sin(t / rng.uniform(2, 80)) * np.exp(-t / max(n, 1)) + rng.normal(0, 3, n)
    elif kind == "smooth":  # oversampled: predicted to far below 1e-4 of its energy
        x = 0.3 * hi * np.sin(t / rng.uniform(40, 400)) + 0.1 * hi * np.sin(t / rng.uniform(15, 40) + 1.0) \
            + rng.normal(0, 0.5, n)
    elif kind == "noise":
        x = rng.normal(0, hi / 8, n)
    else:
        x = rng.choice([-hi - 1, hi, 0], n)
    return np.clip(np.round(x), -hi - 1, hi).astype(np.int64), bits


def _analyze(kernel, s, bits, block, precisions=(12, 15), high_gain=0.0):
    nb = -(-s.shape[0] // block)
    out = [np.zeros(nb, np.int64) for _ in range(3)] + [np.zeros(nb * 32, np.int64)]
    used = kernel(s, block, 32, np.array([2], np.int64), np.array(precisions, np.int64), 64 - bits, *out,
                  high_gain=high_gain)
    return used, out


@SETTINGS
@given(signals(), st.sampled_from([64, 1000, 4096]), st.sampled_from([0.0, 1e-4, 0.5]))
def test_lpc_analysis_and_residual_are_the_reference_kernels(signal, block, high_gain):
    s, bits = signal
    used, (orders, shifts, precs, coefs) = _analyze(predict.lpc_analyze, s, bits, block, high_gain=high_gain)
    fast_used, fast_out = _analyze(fast.lpc_analyze, s, bits, block, high_gain=high_gain)
    assert fast_used == used
    for a, b in zip(fast_out, (orders, shifts, precs, coefs)):
        assert np.array_equal(a, b)
    expected = np.empty(s.shape[0], np.int64)
    predict.lpc_filter(s, block, orders, shifts, coefs[:used], 64 - bits, False, expected)
    got = np.empty(s.shape[0], np.int64)
    fast.lpc_residual(s, block, orders, shifts, coefs[:used], 64 - bits, got)
    assert np.array_equal(got, expected)


def test_lpc_search_options_cost_less_and_decode_alike():
    """Fewer orders costed, on one chunk in four: another predictor (the writer's search), the
    same format: the stage inverts it exactly."""
    x = np.load(EXCERPT)[:20000]
    full, params = lpc.lpc_forward(x)
    quick, quick_params = lpc.lpc_forward(x, candidates=1, costed_every=4)
    assert np.array_equal(lpc.lpc_inverse(quick, quick_params), x)
    assert np.array_equal(lpc.lpc_inverse(full, params), x)
    default_again, _ = lpc.lpc_forward(x, candidates=3, costed_every=1)
    assert np.array_equal(default_again, full)


def test_a_smooth_signal_predicts_better_solved_without_the_white_noise_floor():
    """An oversampled 24-bit signal (two slow tones, noise of about one step), whose spectrum
    spans more than the Levinson recursion's floor (1e-9 of the energy): solved again without
    it where the first solution predicts a block to below ``high_gain`` of its energy, the
    residual is smaller (the costing keeps the better of both), it inverts exactly, and
    ``high_gain=0`` is the analysis without the second solve."""
    rng = np.random.default_rng(8)
    t = np.arange(12_000)
    x = np.round(2e6 * np.sin(t / 150.0) + 6e5 * np.sin(t / 23.0 + 1.0) + rng.normal(0, 0.7, t.shape[0]))
    x = x.astype(np.int32)
    floored, p0 = lpc.lpc_forward(x, high_gain=0.0)
    both, p1 = lpc.lpc_forward(x, high_gain=1e-4)
    assert np.array_equal(lpc.lpc_inverse(both, p1), x)
    assert np.abs(both.astype(np.int64)).sum() < 0.9 * np.abs(floored.astype(np.int64)).sum()
    plain, p2 = lpc.lpc_forward(x)
    assert np.array_equal(plain, floored) and p2 == p0
    for bad, error in ((1.0, ValueError), (-0.1, ValueError), ("1e-4", TypeError), (True, TypeError)):
        with pytest.raises(error, match="high_gain"):
            lpc.lpc_forward(x, high_gain=bad)


@SETTINGS
@given(signals(max_size=5000), st.sampled_from([1024, 4096]))
def test_reweight_fit_is_the_reference_kernel(signal, block):
    s, bits = signal
    if bits > 32 or s.shape[0] < 64:
        return
    residual_of, params = lpc.lpc_forward(s.astype(f"i{bits // 8}") if bits in (8, 16, 32) else s.astype(np.int32),
                                          block=block)
    r = residual_of.astype(np.int64)
    for lo in range(0, s.shape[0], block):
        hi = min(s.shape[0], lo + block)
        q1, q2 = np.zeros(32, np.int64), np.zeros(32, np.int64)
        width = 64 - 8 * residual_of.dtype.itemsize
        got = fast.reweight_fit(s, r, lo, hi, 32, 15, width, 2, 16, 1024, 64, q1)
        expected = predict.reweight_fit(s, r, lo, hi, 32, 15, width, 2, 16, 1024, 64, q2)
        assert got == expected and np.array_equal(q1, q2)


@SETTINGS
@given(st.lists(st.integers(0, 5000), min_size=1, max_size=3000), st.integers(0, 5000),
       st.lists(st.integers(2, 8), min_size=1, max_size=7, unique=True))
def test_mag_statistics_are_the_reference_kernels(tokens, center, rates):
    tokens = np.array(tokens, np.int64)
    rates = np.array(sorted(rates), np.int64)
    expected = np.zeros((len(rates), fast.N_CONTEXTS, fast.N_BUCKETS), np.int64)
    raw = reference_mag.mag_stats(tokens, center, reference_mag.BITLEN, rates, expected, np.zeros(len(rates), np.int64))
    got = np.zeros_like(expected)
    assert fast.mag_stats(tokens, center, rates, got) == raw
    assert np.array_equal(got, expected)
    assert (fast.N_CONTEXTS, fast.N_BUCKETS) == (residual.N_CONTEXTS, residual.N_BUCKETS)


@SETTINGS
@given(st.lists(st.integers(-3000, 3000), min_size=2, max_size=3000), st.sampled_from([(3, 5), (2, 8), (4, 4)]))
def test_layout_statistics_are_mag_statistics_of_both_layouts(values, rates):
    """One pass gives the "mag" counts of the bare ids (ranks) and of the dense ids (values -
    min) at two rates, as two mag_stats passes do."""
    y = np.array(values, np.int64)
    lo = int(y.min())
    d = y - lo
    present = np.bincount(d) > 0
    rank = np.cumsum(present) - 1
    ids = rank[d]
    middle = int(np.partition(d, d.shape[0] // 2)[d.shape[0] // 2])
    center = int(rank[middle])
    counts = np.zeros((4, fast.N_CONTEXTS, fast.N_BUCKETS), np.int64)
    raws = fast.layout_stats(d, rank, center, middle, rates[0], rates[1], True, counts)
    for k, (stream, c) in enumerate(((ids, center), (d, middle))):
        expected = np.zeros((2, fast.N_CONTEXTS, fast.N_BUCKETS), np.int64)
        raw = reference_mag.mag_stats(stream, c, reference_mag.BITLEN, np.array(rates, np.int64), expected, np.zeros(2, np.int64))
        assert raws[k] == raw and np.array_equal(counts[2 * k:2 * k + 2], expected)


@SETTINGS
@given(st.lists(st.integers(-(2**31), 2**31 - 1), max_size=2000), st.integers(1, 300), st.integers(1, 100))
def test_span_magnitudes_sum_each_span_of_each_block(values, block, span):
    r = np.array(values, np.int32)
    n = r.shape[0]
    expected = [int(np.abs(r[s0:min(s0 + span, b0 + block, n)].astype(np.int64)).sum())
                for b0 in range(0, n, block) for s0 in range(b0, min(b0 + block, n), span)]
    out = np.empty(len(expected), np.int64)
    assert fast.span_magnitudes(r, block, span, out) == len(expected)
    assert out.tolist() == expected


@SETTINGS
@given(st.lists(st.integers(0, 2**24 - 1), min_size=1, max_size=3000), st.integers(0, 2**24 - 1), st.integers(2, 8),
       st.sampled_from(["as drawn", "near the center", "small"]))
def test_mag_encoding_is_the_reference_kernels(tokens, center, rate, kind):
    """The fast level's "mag" encoder writes the reference kernel's words and raw bits."""
    tokens = np.array(tokens, np.int64)
    if kind == "near the center":
        tokens = np.clip(center + (tokens % 2001) - 1000, 0, 2**24 - 1)
    elif kind == "small":
        tokens = tokens % 7
        center = center % 7
    counts = np.zeros((1, fast.N_CONTEXTS, fast.N_BUCKETS), np.int64)
    raw_bits = fast.mag_stats(tokens, center, np.array([rate], np.int64), counts)
    pb = mag._mag_pb_cap(tokens.size)
    freqs = mag._mag_freqs(counts[0], pb)
    outs = reference_mag.encoder_outputs(
        (lambda *a: reference_mag.mag_encode(tokens, center, rate, reference_mag.BITLEN, *a),
         lambda *a: fast.mag_encode(tokens, center, rate, *a)), tokens.size, freqs, pb, raw_bits)
    assert outs[0] == outs[1]
