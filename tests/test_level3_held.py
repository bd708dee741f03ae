"""A held tone's longer first NLMS stage, judged on its held part (``search.held_period``,
``encoder._held_tone``, ``encoder._held_choice``; results/level3-sac-gap-6.md): where a sustained
tone of at least ``Settings.level3_period_frames`` frames has a held part (its second half) whose
period the default first stage (256 taps) spans fewer than ``level3_held_spans`` times, a stage of
``level3_held_n1`` taps is coded on a sample of the held part against the search's vector and kept
when smaller; the search codes ``level3_held_spare`` fewer vectors of its prefix and the front-end
chains with stages are not compared. No format change: ``n1`` is a parameter every version's header
holds; the bytes must decode exactly, and be those of ``level3_held_n1`` = 0 wherever the cue does
not fire."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from test_level3 import SETTINGS, round_trip
from test_level3_tonal_powr import _chosen as _written
from test_level3_tonal_trial import held
from test_level3_v7 import tone, voiced

from ubpe import level3
from ubpe._kernels import mixsignal
from ubpe.level3 import encoder, search
from ubpe.planner import configured, settings


def _y(x) -> np.ndarray:
    return np.asarray(x, np.int64).reshape(-1, 1)


def test_the_cue_fires_on_a_long_period_only():
    """A voiced tone whose period (131, 160 frames) 256 taps span fewer than 2.5 times fires it;
    one of period 97 or 48 (spanned 2.6 and 5 times), a shorter recording, noise, a random walk
    and the cue switched off do not."""
    s = settings.current()
    span = level3.DEFAULTS["n1"]
    assert search.held_period(_y(voiced(12000, period=131, noise=1.0)), s, span)
    assert search.held_period(_y(voiced(12000, period=160, noise=8.0)), s, span)
    assert not search.held_period(_y(voiced(12000, period=97)), s, span)
    assert not search.held_period(_y(voiced(12000, period=48)), s, span)
    assert not search.held_period(_y(voiced(s.level3_period_frames - 1, period=131, noise=1.0)), s, span)
    rng = np.random.default_rng(1)
    assert not search.held_period(_y(rng.normal(0, 300, 12000)), s, span)
    assert not search.held_period(_y(np.cumsum(rng.integers(-30, 31, 12000))), s, span)
    assert not search.held_period(_y(voiced(12000, period=131, noise=1.0)), s, 400)  # (a stage spanning 3 periods)
    with configured(level3_held_spans=0):
        assert not search.held_period(_y(voiced(12000, period=131, noise=1.0)), settings.current(), span)


def test_the_cue_reads_the_second_half():
    """The same long period in the first half only (the second a period of 48 frames): not held."""
    x = np.concatenate([voiced(6000, period=160, noise=1.0), voiced(6000, period=48, noise=1.0)])
    assert not search.held_period(_y(x), settings.current(), level3.DEFAULTS["n1"])
    x = np.concatenate([voiced(6000, period=48, noise=1.0), voiced(6000, period=160, noise=1.0)])
    assert search.held_period(_y(x), settings.current(), level3.DEFAULTS["n1"])


@pytest.mark.parametrize("period,noise", [(131, 1.0), (160, 8.0)])
def test_the_choice_is_the_smaller_of_two_sample_codings(monkeypatch, period, noise):
    """``_held_choice`` codes the sample twice (the frames from 3/4 - 2 x 3/32 to 3/4 of the
    recording, the first 3/32 not counted), with the vector given and with n1 = level3_held_n1,
    and returns the smaller's parameters; nothing else is changed."""
    x = voiced(12000, period=period, noise=noise)
    y = _y(x) - int(x.min())
    s = settings.current()
    best = search.tonal_change(dict(level3.DEFAULTS), s)
    calls = []
    orig = encoder._coded_size

    def spy(sample, prm, table, skip=0, res=None):
        got = orig(sample, prm, table, skip, res)
        calls.append((sample.shape[0], skip, prm[mixsignal.PRM_N1], got))
        return got

    monkeypatch.setattr(encoder, "_coded_size", spy)
    got = encoder._held_choice(y, None, 0, 1, best, s)
    part = int(12000 * s.level3_held_part)
    assert [(c[0], c[1]) for c in calls] == [(2 * part, part)] * 2
    sizes = {c[2]: c[3] for c in calls}
    assert set(sizes) == {level3.DEFAULTS["n1"], s.level3_held_n1}
    if sizes[s.level3_held_n1] < sizes[level3.DEFAULTS["n1"]]:
        assert got == dict(best, n1=s.level3_held_n1)
    else:
        assert got == best
    # a vector whose first stage is not the default's is not tried
    calls.clear()
    other = dict(best, n1=512)
    assert encoder._held_choice(y, None, 0, 1, other, s) == other and not calls


def test_the_encoder_writes_the_choice(monkeypatch):
    """A held voiced tone: the vector written has n1 = 384 exactly when the sample said so (the
    two codings spied), and the bytes round-trip."""
    x = voiced(12000, period=160, noise=8.0)
    s = settings.current()
    seen = []
    orig = encoder._held_choice

    def spy(*a, **kw):
        got = orig(*a, **kw)
        seen.append(got["n1"])
        return got

    monkeypatch.setattr(encoder, "_held_choice", spy)
    _, written = _written(monkeypatch, x)
    assert len(seen) == 1
    assert written[mixsignal.PRM_N1] == seen[0] in (level3.DEFAULTS["n1"], s.level3_held_n1)


def test_no_chains_compared_for_a_held_tone(monkeypatch):
    """``_held_tone``: the chains with stages are not compared (only the chain without stages
    reaches ``_choose_front_proxy``); with ``level3_held_chains`` they are, as before."""
    x = voiced(12000, period=131, noise=1.0)
    got = []
    orig = encoder._choose_front_proxy

    def spy(x2, chains, *a, **kw):
        got.append(list(chains))
        return orig(x2, chains, *a, **kw)

    monkeypatch.setattr(encoder, "_choose_front_proxy", spy)
    assert encoder._held_tone(_y(x))
    round_trip(x)
    assert got and got[-1] == [()]
    got.clear()
    with configured(level3_held_chains=True):
        assert not encoder._held_tone(_y(x))
        round_trip(x)
    assert got and len(got[-1]) > 1


@pytest.mark.parametrize("x", [tone(6000), voiced(12000, period=97), voiced(12000, period=48), held(12000),
                               np.cumsum(np.random.default_rng(5).integers(-30, 31, 12000)).astype(np.int16)])
def test_where_the_cue_does_not_fire_the_bytes_are_as_before(x):
    data = round_trip(x)
    with configured(level3_held_n1=0):
        assert level3.encode(x) == data


@SETTINGS
@given(st.sampled_from([110, 131, 160, 200, 250]), st.sampled_from([8192, 9000, 12000]),
       st.floats(0.5, 16.0), st.integers(0, 2**16), st.booleans())
def test_held_tones_round_trip(period, frames, noise, seed, stereo):
    """Held voiced tones of long periods (where the cue fires or nearly), mono or two channels
    (the second a scaled, noisier copy): every output decodes to the input exactly."""
    x = voiced(frames, period=period, seed=seed, noise=noise)
    if stereo:
        rng = np.random.default_rng(seed + 1)
        x = np.stack([x, np.clip(x // 2 + rng.integers(-3, 4, frames), -32768, 32767).astype(np.int16)], 1)
    round_trip(x)


def test_pipe_takes_the_longer_stage_and_is_below_sac(shared_data):
    """pipe (an organ pipe's held tone, period 162 frames; Sac v0.7.25 at its strongest 9 053 bytes,
    cached in results/level3.json): the sample keeps 384 taps and level 3 codes it in fewer bytes
    than Sac and than without the choice (9 110)."""
    import wave

    with wave.open(str(shared_data / "audio" / "pipe.wav")) as w:
        x = np.frombuffer(w.readframes(w.getnframes()), "<i2").astype(np.int16)
    assert encoder._held_tone(_y(x))
    on = level3.encode(x)
    with configured(level3_held_n1=0):
        off = level3.encode(x)
    assert len(on) < 9053 < len(off)
    assert level3.decode(on).tobytes() == x.tobytes()
