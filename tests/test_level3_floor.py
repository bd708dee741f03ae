"""Issue 29's speed floor, the encoder's cheap gates: ``encoder.pair_recurrence`` (whether the
exact-value contexts are worth a coding of a sample) counts distinct pairs of consecutive values by
one integer key a pair; it must give exactly what counting distinct rows of pairs gives, on every
input (the bytes follow from it), including ranges too wide for the key (the rows' path)."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from ubpe.level3 import encoder


def _reference(y: np.ndarray) -> float:
    """The share as the encoder counted it before the keys: distinct rows of (value, next value)."""
    if y.shape[0] < 2:
        return 0.0
    best = 0.0
    for c in range(y.shape[1]):
        v = y[:, c].astype(np.int64)
        pairs = np.stack([v[:-1], v[1:]], 1)
        best = max(best, 1.0 - np.unique(pairs, axis=0).shape[0] / pairs.shape[0])
    return best


@st.composite
def symbol_arrays(draw):
    frames = draw(st.integers(0, 300))
    channels = draw(st.integers(1, 8))
    lo = draw(st.integers(-(1 << 40), 1 << 40))
    # narrow (values recur), 16-bit-like, and wider than the key's 2**31 (the rows' path)
    span = draw(st.sampled_from([1, 2, 5, 300, 1 << 16, (1 << 31) - 1, 1 << 31, 1 << 40]))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    y = lo + rng.integers(0, span, (frames, channels), dtype=np.int64)
    if draw(st.booleans()) and frames:  # a held stretch: many repeated pairs
        y[frames // 2:] = y[frames // 2]
    return y


@settings(max_examples=300, deadline=None)
@given(symbol_arrays())
def test_pair_recurrence_is_the_rows_count(y):
    got = encoder.pair_recurrence(y)
    assert got == _reference(y)
    assert 0.0 <= got < 1.0


def test_pair_recurrence_known_values():
    # 0 1 0 1 0 1: pairs (0,1) (1,0) (0,1) (1,0) (0,1): 2 distinct of 5 -> 1 - 2/5
    y = np.array([[0], [1], [0], [1], [0], [1]], np.int64)
    assert encoder.pair_recurrence(y) == 1.0 - 2 / 5
    # the largest share over the channels: a constant channel beside a ramp
    two = np.stack([np.zeros(11, np.int64), np.arange(11)], 1)
    assert encoder.pair_recurrence(two) == 1.0 - 1 / 10
    # extreme values: the range of int64 symbols the encoder keeps (below 2**40) and beyond the key
    wide = np.array([[0], [1 << 40], [0], [1 << 40]], np.int64)
    assert encoder.pair_recurrence(wide) == 1.0 - 2 / 3
    assert encoder.pair_recurrence(np.zeros((1, 3), np.int64)) == 0.0


# ---------------------------------------------------------------- the encode-cost model


def _weather(frames: int = 8760, channels: int = 4, seed: int = 29) -> np.ndarray:
    """Hourly readings on a coarse grid in several channels (values recur exactly: the contexts'
    cue fires), (frames, channels) int16."""
    from test_level3_v6 import hourly

    cols = [hourly(frames, seed + k)[:, k % 2] for k in range(channels)]
    return np.stack(cols, 1)


def test_search_share_is_the_bound_where_the_model_predicts_room():
    from ubpe.level3 import cost
    from ubpe.planner import settings as cfg

    s = cfg.current()
    # a long one-channel recording without the contexts' sample: well above the floor
    assert cost.search_share(60_000, 1, 0, s) == s.level3_search_work
    # the same shape with a sample of a quarter of it: the model's prediction goes up ...
    assert cost.encode_ns(8760, 4, 1.0, 8760) > cost.encode_ns(8760, 4, 1.0, 0)
    # ... and four channels with their sample predict below the floor: the bound lowered, not below the least
    low = cost.search_share(8760, 4, 8760, s)
    assert s.level3_search_model_least <= low < s.level3_search_work
    target = 1e9 / (cost.FLOOR * cost.ENC_MARGIN)  # (the least, or the work that predicts 0.24 M values/s)
    assert low == s.level3_search_model_least or abs(cost.encode_ns(8760, 4, low, 8760) - target) < 1e-6 * target
    with cfg.configured(level3_search_model=False):
        assert cost.search_share(8760, 4, 8760, cfg.current()) == s.level3_search_work


def test_weather_years_search_less_same_plan_off():
    """The multi-channel weather shape: the cue fires, the plan is the least (the prefix's floor, one
    coding), and with the model off the plan and the bytes are the bound's (level3_search_work)."""
    from ubpe import level3
    from ubpe.level3 import encoder
    from ubpe.level3.search import budget_plan
    from ubpe.planner import settings as cfg

    x = _weather()
    s = cfg.current()
    share = encoder._search_shares(x)[0]
    assert share < s.level3_search_work
    on = budget_plan(x.shape[0], x.shape[1], s, 2, share)
    off = budget_plan(x.shape[0], x.shape[1], s, 2)
    assert on[0] * on[1] < off[0] * off[1]
    data = level3.encode(x)
    assert np.array_equal(level3.decode(data), x)
    with cfg.configured(level3_search_model=False):
        assert encoder._search_shares(x)[0] == s.level3_search_work
        old = level3.encode(x)
    assert np.array_equal(level3.decode(old), x)
    assert level3.encode(x) == data  # deterministic
