"""The sustained tone's trial with Sac's least-squares memory (``search.tonal_trial``,
``encoder._search_whole``; results/level3-sac-gap-5.md): where ``search.tonal`` fires, the search
kept the default NLMS power and the tone's order-32 prediction gains less than
``Settings.level3_tonal_trial_gain`` dB, the one coding of the prefix that tried Sac's recent-past
power tries it with the long least squares' forgetting period ``t1`` = ``level3_tonal_t1`` and a
ridge ``2**-level3_tonal_trial_reg`` smaller, kept or refused as a whole. No format change:
``t1``, ``reg`` and ``powr`` are parameters every version's header holds; the bytes must decode
exactly, and be those of the power alone (``level3_tonal_t1`` = 0) wherever the trial is not made."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from test_level3 import SETTINGS, round_trip, signals
from test_level3_v6 import params
from test_level3_tonal_powr import _chosen as _written
from test_level3_v7 import resonate, tone, voiced

from ubpe import level3
from ubpe._kernels import mixsignal
from ubpe.level3 import encoder, search
from ubpe.planner import configured, settings


def held(frames: int = 12000, period: float = 97.0, seed: int = 3, out: float = 5.0) -> np.ndarray:
    """A held note: a pulse every ``period`` frames whose pitch wobbles by 2 % (vibrato, a cycle of
    2 000 frames) through two resonances, decaying 20 dB, plus noise of ``out`` after them (a
    microphone's); int16 (frames,). Its order-32 prediction gains about 29 dB (``out`` 5): real
    instruments' range, not a noise-free synthetic tone's 38."""
    rng = np.random.default_rng(seed)
    t = np.arange(frames)
    phase = np.cumsum((1 + 0.02 * np.sin(2 * np.pi * t / 2000)) / period)
    e = np.where(np.diff(np.floor(phase), prepend=0) > 0, 4000.0, 0.0)
    x = resonate(e, period)
    x = x * 3000 / np.abs(x).max() * np.exp(-2.3 * t / frames) + rng.normal(0, out, frames)
    return np.round(x).astype(np.int16)


def test_the_trial_vector():
    s = settings.current()
    named = dict(level3.DEFAULTS, reg=16)
    alt = search.tonal_trial(named, s, 25.0)
    assert alt == dict(named, powr=s.level3_tonal_powr, t1=s.level3_tonal_t1, reg=16 + s.level3_tonal_trial_reg)
    assert named["t1"] == level3.DEFAULTS["t1"] and named["powr"] == level3.DEFAULTS["powr"]  # not changed in place
    assert search.tonal_trial(dict(named, reg=24), s, 25.0)["reg"] == 24  # (the bound)
    assert search.tonal_trial(named, s, s.level3_tonal_trial_gain) == dict(named, powr=s.level3_tonal_powr)
    with configured(level3_tonal_t1=0):
        assert search.tonal_trial(named, settings.current(), 25.0) == dict(named, powr=s.level3_tonal_powr)


def test_the_trial_is_one_coding_and_decides(monkeypatch):
    """On a held note under the gain ceiling the prefix is coded once, after the search's codings,
    with the trial vector (Sac's power and memory, the ridge one step smaller; the solve refined
    only in what is written), and the vector written is that one with ``tonal_change``'s refinement
    and ridge step exactly when kept; refused, the search's with them (the power alone is not
    tried again)."""
    x = held()
    y = np.asarray(x, np.int64).reshape(-1, 1)
    s = settings.current()
    assert search.tonal(y, s) and search.tonal_stats(y)[0] < s.level3_tonal_trial_gain
    sizes = []
    orig = encoder._coded_size

    def spy(sample, prm, *a, **kw):
        got = orig(sample, prm, *a, **kw)
        sizes.append(list(prm))
        return got

    monkeypatch.setattr(encoder, "_coded_size", spy)
    data, written = _written(monkeypatch, x, front=None)
    trial = [i for i, p in enumerate(sizes) if p[mixsignal.PRM_T1] == s.level3_tonal_t1]
    assert len(trial) == 1 and trial[0] > 0
    p = sizes[trial[0]]
    assert p[mixsignal.PRM_POWR] == s.level3_tonal_powr and p[mixsignal.PRM_OLSR] == 0
    fields = (mixsignal.PRM_T1, mixsignal.PRM_POWR)
    if written[mixsignal.PRM_T1] == s.level3_tonal_t1:  # kept
        assert [written[i] for i in fields] == [p[i] for i in fields]
        assert written[mixsignal.PRM_REG] == min(24, p[mixsignal.PRM_REG] + s.level3_tonal_reg)
    else:
        assert written[mixsignal.PRM_POWR] == level3.DEFAULTS["powr"]
        assert written[mixsignal.PRM_REG] == min(24, p[mixsignal.PRM_REG] - s.level3_tonal_trial_reg
                                                 + s.level3_tonal_reg)
    assert written[mixsignal.PRM_OLSR] == s.level3_tonal_olsr


def test_pipe_takes_it_and_is_smaller(shared_data):
    """pipe (a held organ-pipe tone, decaying 30 dB in its second half; Sac 9 053 bytes at its
    strongest): the trial is kept and it codes smaller than the power alone (9 226 bytes)."""
    import wave

    with wave.open(str(shared_data / "audio" / "pipe.wav")) as w:
        x = np.frombuffer(w.readframes(w.getnframes()), "<i2").astype(np.int16)
    with configured(level3_cascade_spans=0):  # (the trial alone: the held cascade, kept on pipe, off)
        on = level3.encode(x)
        with configured(level3_tonal_t1=0):
            alone = level3.encode(x)
    assert len(on) < len(alone) * 0.99
    assert level3.decode(on).tobytes() == x.tobytes()


@pytest.mark.parametrize("x", [voiced(12000), voiced(12000, period=131, noise=1.0)])
def test_noise_free_tones_keep_the_power_alone(x):
    """38 dB synthetic tones: above the gain ceiling, the bytes of the power alone."""
    y = np.asarray(x, np.int64).reshape(-1, 1)
    assert search.tonal(y, settings.current())
    assert search.tonal_stats(y)[0] >= settings.current().level3_tonal_trial_gain
    new = level3.encode(x, front=None)
    with configured(level3_tonal_t1=0):
        assert level3.encode(x, front=None) == new


def test_not_tonal_same_bytes_as_the_power_alone():
    for x in (tone(6000), np.cumsum(np.random.default_rng(5).integers(-30, 31, 8000)).astype(np.int16),
              held(3000)):  # (a tone too short for the cue)
        assert not search.tonal(np.asarray(x, np.int64).reshape(-1, 1), settings.current())
        new = level3.encode(x, front=None)
        with configured(level3_tonal_t1=0):
            assert level3.encode(x, front=None) == new


def test_deterministic_bytes():
    x = held()
    assert level3.encode(x) == level3.encode(x)
    assert level3.decode(level3.encode(x)).tobytes() == x.tobytes()


@SETTINGS
@given(signals())
def test_round_trip_with_the_trial_parameters(x):
    C = 1 if x.ndim == 1 else x.shape[1]
    round_trip(x, params=params(C, powr=1, t1=15, olsr=2, reg=20), front=None)
    round_trip(x, params=params(C, powr=1, t1=15, olsr=2, reg=20, dcm=10), front=None)


@SETTINGS
@given(st.integers(0, 2048), st.integers(0, 2**32 - 1), st.sampled_from([1, 1 << 10, 1 << 22]))
def test_weighted_power_kernel(n, seed, top):
    """``mixsignal._wpow`` (the recent-past power of ``powr`` = 1): the exact integer sum of
    ((s * s) >> 8) w over a stage's inputs |s| <= 2**22 and weights at most 2**16 (``ptab``'s),
    in int64 (the kernel's sums stay far below 2**63: its weights decay as (1 + j)**-0.8)."""
    rng = np.random.default_rng(seed)
    hv = rng.integers(-top, top + 1, n).astype(np.int32)
    pr = rng.integers(0, (1 << 16) + 1, max(n, 1)).astype(np.int64)
    want = sum(((int(s) * int(s)) >> 8) * int(w) for s, w in zip(hv, pr[:n]))
    assert mixsignal._wpow(hv, pr, n) == (want + (1 << 63)) % (1 << 64) - (1 << 63)
