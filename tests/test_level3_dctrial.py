"""The running-mean trial on broadband signals (``search.dc_trial``, issue 29): where the working
zero's offset is too small against the signal's deviation for ``search.dc_ratio``'s cue but the
signal is noise-like (order-32 prediction gain below ``Settings.level3_dc_trial_db``), the search
codes its sample once more with ``dcm`` and keeps it when smaller. The format is version 8's as it
was; the bytes must decode, be deterministic, and be the old ones wherever the trial loses or does
not fire."""

from __future__ import annotations

import numpy as np
from test_level3 import round_trip
from test_level3_v7 import tone

from ubpe.level3 import search
from ubpe.planner import configured, settings


def broadband(frames: int = 70000, off: int = 60, seed: int = 7) -> np.ndarray:
    """Band-limited noise (a surface EMG's burst shape, standard deviation about 100, prediction
    gain under 1 dB), int16 (frames,), with one spike that puts the middle of its range about
    ``off`` + 20 units off its mean: about one median deviation, below ``dc_ratio``'s cue."""
    rng = np.random.default_rng(seed)
    e = rng.standard_normal(frames + 64)
    k = np.exp(-np.arange(8) / 2.0) * np.cos(np.arange(8) * 0.9)
    v = np.round(100 * np.convolve(e, k)[64:64 + frames]).astype(np.int64)
    v[frames // 2] = v.max() + 2 * off
    return v.astype(np.int16)


def test_cue_fires_on_broadband_noise_not_on_a_tone():
    s = settings.current()
    x = broadband(20000).reshape(-1, 1)
    assert search.dc_ratio(x) < s.level3_dc_ratio  # (the older cue is silent)
    assert search.tonal_stats(x)[0] < 3.0
    assert search.dc_trial({"reg": 16}, x, s) == {"reg": 16, "dcm": s.level3_dc_rate}
    assert search.dc_trial({"dcm": 4}, x, s) is None  # (centred already)
    y = tone(20000).reshape(-1, 1)  # a sustained tone: predictable, the predictor sums near 1
    with configured(level3_dc_trial_db=20.0):
        assert search.tonal_stats(y)[0] > 20.0
        assert search.dc_trial({}, y, settings.current()) is None
        assert search.dc_trial({}, x, settings.current()) is not None
    with configured(level3_dc_trial_db=0):
        assert search.dc_trial({}, x, settings.current()) is None
    with configured(level3_version=7):
        assert search.dc_trial({}, x, settings.current()) is None


def test_chosen_when_smaller_and_round_trips():
    """On the prefix search (70 000 frames) with the margin at 0 the trial is kept (version 8,
    smaller than without it); the same bytes twice and with two threads' settings unchanged."""
    x = broadband(70000)
    with configured(level3_search_margin=0.0):
        on = round_trip(x)
        with configured(level3_dc_trial_db=0):
            off = round_trip(x)
    assert on[0] == 8 and off[0] != 8 and len(on) < len(off)
    with configured(level3_search_margin=0.0):
        assert round_trip(x) == on


def test_off_or_losing_leaves_the_bytes():
    """With the default margin the trial loses on this noise (0.2 % whole, less on the chunks):
    the bytes are those without the trial; on a tone it does not fire."""
    x = broadband(70000)
    new = round_trip(x)
    with configured(level3_dc_trial_db=0):
        assert round_trip(x) == new
    y = tone(30000)
    new = round_trip(y)
    with configured(level3_dc_trial_db=0):
        assert round_trip(y) == new
