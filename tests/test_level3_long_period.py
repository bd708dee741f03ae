"""Level 3's long NLMS cascade chosen per recording (issue 29): ``search.long_period`` fires on a
sustained tone whose period is longer than the first NLMS stage (256 taps), and then
``search.plan`` starts the search from ``Settings.level3_long_cascade`` (512/256/32 taps, the
recent-past power); elsewhere the start, and so the bytes, are as before. The parameters are
the header's: everything decodes exactly."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from test_level3 import SETTINGS, round_trip

from ubpe import level3
from ubpe.level3 import search
from ubpe.planner import settings


def plucked(n: int, period: int, seed: int = 5, channels: int = 1) -> np.ndarray:
    """A sustained tone of ``period`` frames, (n, channels) int16: a soft pulse every period (a
    bowed string's or a reed's excitation) through a resonance (two poles at 0.05 of the rate,
    radius 0.995), plus white noise of 20 units; the channels differ in their noise."""
    rng = np.random.default_rng(seed)
    e = np.zeros(n)
    e[::period] = 1.0
    e = np.convolve(e, np.exp(-np.arange(40) / 8.0))[:n]
    r, w = 0.995, 2 * np.pi * 0.05
    b1, b2 = 2 * r * np.cos(w), -r * r
    y = np.zeros(n)
    for i in range(n):  # (the resonator, in floats: a fixed sequence)
        y[i] = e[i] + b1 * (y[i - 1] if i else 0.0) + b2 * (y[i - 2] if i > 1 else 0.0)
    y *= 8000 / np.abs(y).max()
    out = np.stack([y + rng.normal(0, 20, n) for _ in range(channels)], 1)
    return np.round(out).astype(np.int16)


S = settings.current()


@pytest.mark.parametrize("period", [300, 343, 450, 700])
def test_the_cue_fires_on_a_sustained_tone_longer_than_the_first_stage(period):
    assert search.long_period(plucked(16384, period), S, level3.DEFAULTS["n1"])


def test_the_cue_fires_on_every_channel_of_a_stereo_tone():
    assert search.long_period(plucked(16384, 343, channels=2), S, 256)


@pytest.mark.parametrize("period", [60, 100, 200])
def test_the_cue_does_not_fire_on_a_period_the_first_stage_spans(period):
    assert not search.long_period(plucked(16384, period), S, level3.DEFAULTS["n1"])


def test_the_cue_does_not_fire_on_white_noise_a_walk_or_a_constant():
    rng = np.random.default_rng(0)
    assert not search.long_period(rng.integers(-1000, 1000, (16384, 1)), S, 256)
    assert not search.long_period(np.cumsum(rng.integers(-50, 51, (16384, 2)), 0), S, 256)
    assert not search.long_period(np.full((16384, 1), 7), S, 256)


def test_the_cue_needs_enough_frames_and_can_be_turned_off():
    x = plucked(16384, 343)
    assert S.level3_period_frames == 8192  # (16 times the long first stage's taps)
    assert not search.long_period(x[:8191], S, 256) and search.long_period(x[:8192], S, 256)
    with settings.configured(level3_period_frames=1) as s:  # (4 periods of PERIOD_MOST at least)
        assert not search.long_period(x[:4095], s, 256) and search.long_period(x[:4096], s, 256)
    with settings.configured(level3_period_frames=20000) as s:
        assert not search.long_period(x, s, 256)
    with settings.configured(level3_period_raw=2.0) as s:
        assert not search.long_period(x, s, 256)
    with settings.configured(level3_period_residual=0.99) as s:
        assert not search.long_period(x, s, 256)


def test_plan_starts_from_the_long_cascade_only_where_the_cue_fires():
    long = dict(S.level3_long_cascade)
    assert long == {"n1": 512, "n2": 256, "n3": 32, "powr": 1}
    start, _ = search.plan(plucked(16384, 343), S, level3.DEFAULTS)
    assert {k: start[k] for k in long} == long
    start, _ = search.plan(plucked(16384, 100), S, level3.DEFAULTS)
    assert {k: start[k] for k in long} == {k: level3.DEFAULTS[k] for k in long}
    with settings.configured(level3_period_raw=2.0) as s:  # off: the start before
        assert search.plan(plucked(16384, 343), s, level3.DEFAULTS)[0] == search.plan(
            plucked(16384, 100)[:16], s, level3.DEFAULTS)[0]


def test_a_start_from_order_64_or_the_long_cascade_spares_the_same_coding():
    order = dict(level3.DEFAULTS, **dict(search.MOVES)[search.ORDER_MOVE](level3.DEFAULTS))
    spare = S.level3_search_order_spare
    assert search.spare_codings(order, level3.DEFAULTS, S) == spare
    assert search.spare_codings(dict(order, **dict(S.level3_long_cascade)), level3.DEFAULTS, S) == spare
    assert search.spare_codings(dict(level3.DEFAULTS, **dict(S.level3_long_cascade)), level3.DEFAULTS, S) == spare
    assert search.spare_codings(dict(level3.DEFAULTS), level3.DEFAULTS, S) == 0


def test_a_tone_that_fires_the_cue_round_trips_and_codes_smaller_than_from_the_defaults():
    x = plucked(12000, 343)[:, 0]
    with_cue = round_trip(x)
    # (the held part's sample off too: without the cue it tries 384 taps there, 10 861 bytes)
    with settings.configured(level3_period_raw=2.0, level3_held_n1=0):
        without = round_trip(x)
    assert with_cue != without  # (the cue changed the search's start)
    assert len(with_cue) < len(without)


def test_where_the_cue_does_not_fire_the_bytes_are_those_without_it():
    x = plucked(12000, 100)[:, 0]
    with settings.configured(level3_period_raw=2.0):
        assert round_trip(x) == level3.encode(x)


@SETTINGS
@given(period=st.integers(20, 1000), frames=st.integers(4096, 9000), channels=st.integers(1, 2),
       seed=st.integers(0, 2**16))
def test_tones_of_any_period_round_trip_and_the_cue_is_a_bool(period, frames, channels, seed):
    x = plucked(frames, period, seed, channels)
    fired = search.long_period(x, S, 256)
    assert isinstance(fired, bool)
    if period <= 128:
        assert not fired
    round_trip(x if channels > 1 else x[:, 0])
