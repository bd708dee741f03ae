"""Level 1's "mag" rate search (ubpe.coders.mag._searched_rates): the coder handed the planner's
counts of rates 3 and 5 costs the rates outward from them, not all seven."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from ubpe.coders import mag
from ubpe.planner import configured


def _known(tokens: np.ndarray, center: int, n: int) -> dict:
    rates = np.array([3, 5], np.int64)
    stats = np.zeros((2, mag._mag.N_CONTEXTS, mag._mag.N_BUCKETS), np.int64)
    raw = int(mag._fast.mag_stats(tokens, center, rates, stats))
    ces, tbits = mag.stream_options(stats, n)
    return {r: (stats[j], raw, center, (ces[j], tbits[j])) for j, r in enumerate(rates.tolist())}


def _tokens(seed: int, n: int, scale: int, bursty: bool) -> np.ndarray:
    rng = np.random.default_rng(seed)
    loud = np.where(np.arange(n) % 500 < 250, scale, 1 + scale // 8) if bursty else scale
    return (np.round(rng.laplace(0, 1, n) * loud) + 4 * scale).clip(0, None).astype(np.int32)


@settings(max_examples=80, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(2, 6000), st.sampled_from([1, 4, 40, 3000]), st.booleans())
def test_search_picks_the_full_searchs_stream_where_the_rates_costs_fall_then_rise(seed, n, scale, bursty):
    """Where each rate's least total (over the precisions) falls and then rises across the rates
    (no second dip), the search codes the same stream as costing every rate; in any case its
    stream decodes to the tokens, and its total is at most that of the best of rates 3 to 5."""
    tokens = _tokens(seed, n, scale, bursty)
    counts = np.bincount(tokens)
    center = int(np.searchsorted(np.cumsum(counts), n // 2, side="right"))
    known = _known(tokens, center, n)
    full = mag._encode_mag(tokens, 1 << 40, counts)
    with configured(fast_mag_rate_search=True):
        found = mag._encode_mag(tokens, 1 << 40, counts, known=known)
    assert found is not None
    back = mag._decode_mag(found, n, int(tokens.max()) + 1)
    assert np.array_equal(back, tokens)
    stats = np.zeros((mag.RATES.size, mag._mag.N_CONTEXTS, mag._mag.N_BUCKETS), np.int64)
    raw = int(mag._fast.mag_stats(tokens, center, mag.RATES, stats))
    ces, tbits = mag.stream_options(stats, n)
    least = (ces + raw + tbits).min(axis=1)
    k = int(np.argmin(least))
    falls_then_rises = all(least[i] > least[i + 1] for i in range(k)) and \
        all(least[i] < least[i + 1] for i in range(k, least.size - 1))
    if falls_then_rises:
        assert found == full
    size = len(found["payload"]) + len(found["raw"]) + len(found["table"])
    mid = float(least[1:4].min()) / 8.0  # rates 3, 4, 5: the search costs them all
    assert size <= mid * 1.001 + 8 + 16  # (the chosen pb may trade 0.05 % for a smaller table; words round up)


def test_search_off_or_no_known_counts_costs_every_rate():
    """Without the planner's counts, or with the search off, every rate is costed (the same stream
    as the coder's plain call); with counts for another center the search does not run."""
    tokens = _tokens(7, 4000, 40, True)
    counts = np.bincount(tokens)
    center = int(np.searchsorted(np.cumsum(counts), 2000, side="right"))
    full = mag._encode_mag(tokens, 1 << 40, counts)
    known = _known(tokens, center, 4000)
    assert mag._searched_rates(tokens, center + 1, known, 4000) is None
    rates = mag._searched_rates(tokens, center, known, 4000)[0]
    assert rates[0] <= 3 and rates[-1] >= 5 and np.array_equal(rates, np.arange(rates[0], rates[-1] + 1))
    with configured(fast_mag_rate_search=False):
        assert mag._encode_mag(tokens, 1 << 40, counts, known=known) == full
