"""The encoder's choice of Sac's recent-past NLMS power (``powr`` = 1) for a sustained tone
(``Settings.level3_tonal_powr``, ``encoder._search_whole``): where ``search.tonal`` fires and the
search kept the default power, the search's sample is coded once more with it and it is kept
when smaller by the search's margin. No format change: ``powr`` = 1 is a parameter every
version's header holds; the bytes must decode exactly and be what the setting off writes
wherever the cue does not fire."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from test_level3 import SETTINGS, round_trip, signals
from test_level3_v6 import params
from test_level3_v7 import tone, voiced

from ubpe import level3
from ubpe._kernels import mixsignal
from ubpe.level3 import encoder, search
from ubpe.planner import configured, settings


def _chosen(monkeypatch, x, **kw) -> tuple[bytes, list[int]]:
    """(the bytes of ``level3.encode(x, **kw)`` round-tripped, the parameter vector it wrote)."""
    seen = []
    orig = encoder._params_bytes

    def spy(prm, C, v):
        seen.append(list(prm))
        return orig(prm, C, v)

    monkeypatch.setattr(encoder, "_params_bytes", spy)
    data = round_trip(x, **kw)
    return data, seen[-1]


def test_chosen_on_a_voiced_tone_and_smaller(monkeypatch):
    x = voiced(12000)
    assert search.tonal(np.asarray(x, np.int64).reshape(-1, 1), settings.current())
    on, p_on = _chosen(monkeypatch, x, front=None)
    with configured(level3_tonal_t1=0):  # (the power alone, as the default tries it on this tone)
        alone, p_alone = _chosen(monkeypatch, x, front=None)
    assert alone == on and p_alone == p_on
    with configured(level3_tonal_powr=0):
        off, p_off = _chosen(monkeypatch, x, front=None)
    assert p_on[mixsignal.PRM_POWR] == 1 and p_off[mixsignal.PRM_POWR] == 19
    assert len(on) < len(off)
    assert [v for i, v in enumerate(p_on) if i != mixsignal.PRM_POWR] == \
        [v for i, v in enumerate(p_off) if i != mixsignal.PRM_POWR]


def test_not_tonal_same_bytes_as_off():
    for x in (tone(6000), np.cumsum(np.random.default_rng(5).integers(-30, 31, 8000)).astype(np.int16)):
        assert not search.tonal(np.asarray(x, np.int64).reshape(-1, 1), settings.current())
        new = level3.encode(x, front=None)
        with configured(level3_tonal_powr=0):
            assert level3.encode(x, front=None) == new


def test_deterministic_bytes():
    x = voiced(12000)
    assert level3.encode(x, front=None) == level3.encode(x, front=None)


@SETTINGS
@given(signals())
def test_round_trip_with_the_tonal_parameters_and_recent_past_power(x):
    C = 1 if x.ndim == 1 else x.shape[1]
    round_trip(x, params=params(C, powr=1, olsr=2, reg=18), front=None)
    round_trip(x, params=params(C, powr=1, dcm=10), front=None)
