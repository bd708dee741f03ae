"""Issue 28, target 1 (h/l1fast): level 1 chooses the "mag" coder's running-mean rate on a sample
of a shorter stream than the other levels (``Settings.fast_mag_rate_sample``); the streams decode
to the same tokens, and a stream no longer than the threshold is the one the coder writes anyway."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import ubpe
from ubpe.coders import decode_stream, encode_stream
from ubpe.coders import mag
from ubpe.planner import configured


def _loud_residual(n: int, seed: int) -> np.ndarray:
    """Laplacian tokens whose loudness moves every 300 values (a residual the rate matters for),
    as ids in [0, vocab)."""
    rng = np.random.default_rng(seed)
    loud = np.repeat(rng.uniform(0.5, 60, n // 300 + 1), 300)[:n]
    t = np.round(rng.laplace(0, loud)).astype(np.int64)
    return t - t.min()


@settings(deadline=None, max_examples=25)
@given(st.integers(2, 6000), st.integers(16, 1 << 13), st.integers(0, 10_000))
def test_mag_rate_sampled_above_a_threshold_decodes_to_the_tokens(n, above, seed):
    tokens = _loud_residual(n, seed)
    vocab = int(tokens.max()) + 1
    stream = encode_stream(tokens, vocab, coders=("mag",), rate_sample_above=above)
    assert np.array_equal(decode_stream(stream, vocab), tokens)
    if n <= above:  # not sampled: the coder's own stream, every rate counted
        assert stream == encode_stream(tokens, vocab, coders=("mag",))


def test_mag_rate_sample_picks_among_the_coder_rates():
    """Sampled or not, the stream is a "mag" stream of one of the coder's rates, the same size
    within a few tenths of a percent on a residual whose loudness moves."""
    tokens = _loud_residual(120_000, 7)
    vocab = int(tokens.max()) + 1
    full = encode_stream(tokens, vocab, coders=("mag",))
    sampled = encode_stream(tokens, vocab, coders=("mag",), rate_sample_above=1 << 12)
    assert full["coder"] == sampled["coder"] == "mag"
    assert sampled["rate"] in mag.RATES.tolist()
    size = lambda s: len(s["payload"]) + len(s["raw"]) + len(s["table"])  # noqa: E731
    assert size(full) <= size(sampled) <= 1.01 * size(full)


def test_level_1_rate_sample_setting_round_trips_and_is_deterministic():
    """Level 1 with the setting at its default, lower and at the coder's own threshold: every
    container decodes to the values (one stream and blocks), the same bytes twice; with the
    threshold at or above the stream's length, the bytes of the coder's own choice."""
    rng = np.random.default_rng(11)
    n = 70_000
    loud = np.repeat(rng.uniform(1, 50, n // 400 + 1), 400)[:n]
    x = np.cumsum(np.round(rng.laplace(0, loud))).astype(np.int32)
    out = {}
    for above in (1 << 10, 1 << 15, 1 << 18):
        with configured(fast_mag_rate_sample=above):
            for block_size in (None, 1 << 15):
                data = ubpe.compress(x, level=1, block_size=block_size)
                assert data == ubpe.compress(x, level=1, block_size=block_size)
                assert np.array_equal(ubpe.decompress(data), x)
                out[above, block_size] = data
    with configured(fast_mag_rate_sample=n):
        assert ubpe.compress(x, level=1) == out[1 << 18, None]


# ----------------------------------------------------------------------------- mult_detect's quotients


def reference_quotient_steps(wide: np.ndarray, offset: int, base: int, ends: list[int]) -> np.ndarray:
    """The differences within each window of ``(wide - offset) // base`` (integer floor division)."""
    starts = [0] + ends[:-1]
    parts = [np.diff((wide[a:b] - offset) // base) for a, b in zip(starts, ends)]
    return np.concatenate(parts) if parts else np.zeros(0, np.int64)


@settings(deadline=None, max_examples=150)
@given(st.lists(st.integers(-(1 << 31), (1 << 31) - 1), min_size=1, max_size=300),
       st.integers(0, 63), st.sampled_from([1, 2, 3, 4, 5, 7, 8, 9, 16, 63, 64]),
       st.lists(st.integers(1, 80), min_size=1, max_size=6), st.booleans())
def test_quotient_entropy_is_the_entropy_of_the_quotients_steps(values, offset, base, cuts, narrow):
    """``_quotient_entropy`` (two compiled passes) is exactly ``_entropy_of`` of the reference's
    differences: the same counts, the same float; also over spans that take the sorting path."""
    from ubpe.frontend import mult

    wide = np.array(values, np.int64)
    if narrow:  # few distinct differences: the histogram path
        wide = np.cumsum(wide % 7 - 3)
    ends = sorted({min(c * 7, wide.shape[0]) for c in cuts} | {wide.shape[0]})
    want = reference_quotient_steps(wide, offset, base, ends)
    steps = np.empty(wide.shape[0] - len(ends), np.int64)
    got = mult._quotient_entropy(wide, offset, base, np.array(ends, np.int64), steps)
    assert got == (mult._entropy_of(want.copy()) if want.size else 0.0)
    if want.size:
        assert np.array_equal(steps, want)


# ----------------------------------------------------------------------------- encoding methods


def test_level_1_encodes_merges_by_the_fast_methods():
    """Level 1's plan by estimates re-encodes a candidate with merges by
    ``Settings.fast_encode_methods`` (replay alone by default): a container of motifs that
    "bits" encodes smaller when it may (the same model) decodes either way, the default one by
    replay."""
    rng = np.random.default_rng(2)
    for _ in range(3):
        motifs = [rng.integers(0, 40, int(rng.integers(3, 9))) for _ in range(12)]
        x = np.concatenate([motifs[i] for i in rng.integers(0, 12, 6000)]).astype(np.int16)
    default = ubpe.compress(x, level=1)
    with configured(fast_encode_methods=("replay", "bits")):
        both = ubpe.compress(x, level=1)
    info, info_both = ubpe.describe(default), ubpe.describe(both)
    assert info.n_merges == info_both.n_merges > 0
    assert info.method == "replay" and info_both.method == "bits" and len(both) < len(default)
    for data in (default, both):
        assert np.array_equal(ubpe.decompress(data), x)


def test_rate_sample_above_must_be_a_positive_int():
    import pytest

    tokens = _loud_residual(1000, 1)
    vocab = int(tokens.max()) + 1
    with pytest.raises(TypeError, match="rate_sample_above"):
        encode_stream(tokens, vocab, coders=("mag",), rate_sample_above=1.5)
    with pytest.raises(ValueError, match="rate_sample_above"):
        encode_stream(tokens, vocab, coders=("mag",), rate_sample_above=0)
    with pytest.raises(TypeError, match="rate_sample_above"):
        encode_stream(tokens, vocab, coders=("mag",), rate_sample_above=True)
