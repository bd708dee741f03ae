"""The "mag" encoder's one-rate count that keeps each token's magnitude, class and context
(``level1.mag_stats_kept``) and the encoding from them (``level1.mag_encode_kept``) give the
reference kernels' counts, raw bits, words and raw bytes (``tests/reference_mag.py``), and
``level1.mag_stats`` still gives the reference's counts for the token widths the planner passes
(int16, int32, int64)."""

from __future__ import annotations

import os

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import reference_mag
from ubpe._kernels import level1 as fast
from ubpe.coders import mag

SETTINGS = settings(deadline=None, max_examples=int(os.environ.get("UBPE_MAX_EXAMPLES", "100")),
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@st.composite
def token_streams(draw, dtype=np.int64):
    """(tokens, center): tokens in [0, 2**24) (or in the dtype's non-negative range), as drawn,
    near the center (a residual's shape) or a few small values."""
    hi = min(2**24 - 1, np.iinfo(dtype).max)
    n = draw(st.integers(1, 3000))
    seed = draw(st.integers(0, 2**32 - 1))
    kind = draw(st.sampled_from(["as drawn", "near the center", "small", "laplace"]))
    rng = np.random.default_rng(seed)
    center = draw(st.integers(0, hi))
    if kind == "as drawn":
        tokens = rng.integers(0, hi + 1, n)
    elif kind == "near the center":
        tokens = np.clip(center + rng.integers(-1000, 1001, n), 0, hi)
    elif kind == "small":
        tokens, center = rng.integers(0, 7, n), center % 7
    else:  # loudness that varies: the contexts move
        scale = np.exp(rng.uniform(0, 8) * np.sin(np.arange(n) / rng.uniform(5, 200)))
        tokens = np.clip(center + np.round(rng.laplace(0, scale)), 0, hi)
    return tokens.astype(dtype), int(center)


def _reference_counts(tokens, center, rates):
    expected = np.zeros((len(rates), fast.N_CONTEXTS, fast.N_BUCKETS), np.int64)
    raw = reference_mag.mag_stats(tokens.astype(np.int64), center, reference_mag.BITLEN, np.array(rates, np.int64),
                                  expected, np.zeros(len(rates), np.int64))
    return raw, expected


@SETTINGS
@given(st.sampled_from([np.int16, np.int32, np.int64]).flatmap(token_streams),
       st.lists(st.integers(2, 8), min_size=1, max_size=7, unique=True))
def test_mag_statistics_of_every_token_width_are_the_reference(stream, rates):
    tokens, center = stream
    raw, expected = _reference_counts(tokens, center, rates)
    got = np.ones_like(expected)  # (added to)
    assert fast.mag_stats(tokens, center, np.array(rates, np.int64), got) == raw
    assert np.array_equal(got - 1, expected)


@SETTINGS
@given(st.sampled_from([np.int32, np.int64]).flatmap(token_streams),
       st.lists(st.integers(2, 8), min_size=1, max_size=7, unique=True), st.data())
def test_kept_count_and_encoding_are_the_reference(stream, rates, data):
    tokens, center = stream
    n = tokens.size
    raw_bits, expected = _reference_counts(tokens, center, rates)
    counts = np.zeros_like(expected)
    zs, bk, ctx = np.empty(n, np.uint32), np.empty(n, np.uint8), np.empty((len(rates), n), np.uint8)
    assert fast.mag_stats_kept(tokens, center, np.array(rates, np.int64), counts, zs, bk, ctx) == raw_bits
    assert np.array_equal(counts, expected)
    row = data.draw(st.integers(0, len(rates) - 1))
    rate = rates[row]
    # what it kept: each token's (z, context under rates[row], bucket) as the reference's model sees it
    m, symbols = 0, []
    for t in tokens.tolist():
        z, c, b = reference_mag._symbol(t, center, m, rate - 2, reference_mag.BITLEN)
        symbols.append((z, c, b))
        m += z - (m >> rate)
    assert list(zip(zs.tolist(), ctx[row].tolist(), bk.tolist())) == symbols
    pb = mag._mag_pb_cap(n)
    freqs = mag._mag_freqs(counts[row], pb)
    outs = reference_mag.encoder_outputs(
        (lambda *a: reference_mag.mag_encode(tokens.astype(np.int64), center, rate, reference_mag.BITLEN, *a),
         lambda *a: fast.mag_encode(tokens, center, rate, *a),
         lambda *a: fast.mag_encode_kept(zs, bk, ctx[row], *a)), n, freqs, pb, raw_bits)
    assert outs[0] == outs[1] == outs[2]


@SETTINGS
@given(st.sampled_from([np.int32, np.int64]).flatmap(token_streams), st.integers(1, 9), st.integers(1, 400),
       st.lists(st.integers(2, 8), min_size=1, max_size=7, unique=True), st.booleans())
def test_window_statistics_are_each_window_counted_alone(stream, windows, width, rates, strided):
    """mag_stats_rows: the sum of mag_stats of each row, running means from zero in each."""
    tokens, center = stream
    width = min(width, tokens.size // windows) or 1
    if tokens.size < windows * width:
        return
    sample = tokens[:windows * width].reshape(windows, width)
    if strided:  # rows of a longer reshape, cut (the coder's sample when n divides evenly)
        sample = tokens[:windows * (tokens.size // windows)].reshape(windows, -1)[:, :width]
    rates = np.array(rates, np.int64)
    expected = np.zeros((rates.size, fast.N_CONTEXTS, fast.N_BUCKETS), np.int64)
    raw = sum(fast.mag_stats(np.ascontiguousarray(w), center, rates, expected) for w in sample)
    got = np.zeros_like(expected)
    assert fast.mag_stats_rows(sample, center, rates, got) == raw
    assert np.array_equal(got, expected)


@SETTINGS
@given(token_streams(np.int32), st.sampled_from([1, 16, 64, 1 << 18]),
       st.lists(st.integers(2, 8), max_size=3, unique=True))
def test_the_stream_is_the_same_whichever_counts_are_known_and_decodes(stream, sample_above, known_rates):
    """The coder's stream (its rate counted here and coded from the kept contexts, or taken
    from the known counts and coded by mag_encode) is the same as with nothing known, and
    decodes to the tokens; beyond ``sample_above`` tokens the one rate a sample chose."""
    tokens, center = stream
    vocab = int(tokens.max()) + 1
    plain = mag._encode_mag(tokens, 1 << 40, sample_above=sample_above)
    assert plain is not None
    assert np.array_equal(mag.decode(plain, tokens.size, vocab, None), tokens)
    middle = int(np.partition(tokens, tokens.size // 2)[tokens.size // 2])
    known = {}
    for r in known_rates:
        counts = np.zeros((1, fast.N_CONTEXTS, fast.N_BUCKETS), np.int64)
        raw = fast.mag_stats(tokens, middle, np.array([r], np.int64), counts)
        known[r] = (counts[0], raw, middle)
    assert mag._encode_mag(tokens, 1 << 40, sample_above=sample_above, known=known) == plain
