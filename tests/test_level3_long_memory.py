"""Level 3 on sustained tones whose period is longer than the default NLMS stage (256 taps):
``level3.LONG_MEMORY`` (a 1 024-tap stage, longer least-squares memories) is a candidate of the
search on chunks, and the plain chain is measured with it before a front end is chosen
(Settings.level3_front_long), a stage that long measured ``level3_long_margin`` larger on
chunks. Everything decodes exactly and the switch never costs bytes."""

from __future__ import annotations

import numpy as np
from test_level3 import round_trip

from ubpe import level3
from ubpe.planner import settings


def sustained(n: int, period: int = 700, seed: int = 3) -> np.ndarray:
    """A tone of ``period`` frames (a fixed random waveform of 60 harmonics, slowly swelling)
    plus white noise, int16: one period spans more than the default 256-tap NLMS stage."""
    rng = np.random.default_rng(seed)
    t = np.arange(n)
    wave = np.zeros(n)
    for h in range(1, 61):
        wave += rng.normal(0, 1.0 / h) * np.sin(2 * np.pi * h * t / period + rng.uniform(0, 2 * np.pi))
    wave *= 3000 / np.abs(wave).max() * (1 + 0.3 * np.sin(t / 20000.0))
    return np.clip(wave + rng.normal(0, 8.0, n), -32768, 32767).astype(np.int16)


def test_long_memory_codes_a_long_period_smaller_than_the_defaults():
    x = sustained(40000)
    plain = level3.encode(x, search=False, front=None)
    long = level3.encode(x, params=level3.default_params(1), front=None)
    assert plain == long  # (the defaults as params: the same bytes)
    from ubpe._kernels import mixsignal as k

    prm = level3.default_params(1)
    for name, v in level3.LONG_MEMORY.items():
        prm[getattr(k, "PRM_" + name.upper())] = v
    longer = round_trip(x, params=prm, front=None)
    assert len(longer) < 0.99 * len(plain)


def test_chunk_search_with_and_without_the_long_margin_round_trips():
    x = sustained(30000)
    for margin in (0.0, 0.0075, 1.0):
        with settings.configured(level3_search_whole=1000, level3_long_margin=margin):
            round_trip(x, front=None)


def test_front_choice_with_and_without_the_long_memory_round_trips_and_never_larger():
    x = sustained(80000)
    with settings.configured(level3_front_long=False):
        before = round_trip(x)
    with settings.configured(level3_front_long=True):
        after = round_trip(x)
    assert len(after) <= len(before)
