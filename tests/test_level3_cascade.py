"""A held tone's NLMS cascade fitted to its period (``search.held_lag``, ``search.held_cascade``,
``search.cascade_steps``, ``encoder._search_whole``, ``encoder._held_choice``;
results/level3-tone.md): where the search on a prefix ran and the held part's period fires
``held_period``, the second NLMS stage 1.5 periods long, the short least squares' memory one code
longer and the bias stage on are coded once on the search's prefix and kept when smaller by the
margin; where kept, the first stage's step x 3/4 and the last's x 2 are coded once more on the held
part's sample and kept when smaller. No format change: every parameter set is one every version's
header holds; the bytes must decode exactly, be the same from 1 and 2 threads and two processes,
and be those of ``level3_cascade_spans`` = 0 wherever the cue does not fire."""

from __future__ import annotations

import hashlib
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from test_level3 import SETTINGS, round_trip
from test_level3_tonal_powr import _chosen
from test_level3_fast_parts import _spy
from test_level3_v7 import resonate, tone, voiced

import ubpe
from ubpe import level3
from ubpe._kernels import mixsignal
from ubpe.level3 import encoder, search
from ubpe.planner import configured, settings



def vibrato(frames: int = 16000, period: float = 110, depth: float = 0.01, noise: float = 1.0, seed: int = 7,
            rate: float = 5000.0) -> np.ndarray:
    """``test_level3_v7.voiced`` with a vibrato: pulses of +-10 % strength whose spacing is ``period``
    frames times 1 + ``depth`` sin(2 pi t / ``rate``) (a real instrument's pitch drifts; a pulse
    train of a fixed period repeats exactly), and noise through the same two resonances; int16."""
    rng = np.random.default_rng(seed)
    e = np.zeros(frames)
    t = 0.0
    while t < frames:
        e[int(t)] = 4000.0 * (1 + 0.1 * rng.normal())
        t += period * (1 + depth * np.sin(2 * np.pi * t / rate))
    e += rng.normal(0, noise, frames)
    x = resonate(e, period)
    return np.round(x * 3000 / np.abs(x).max()).astype(np.int16)


#: a held tone with a vibrato (period 110 frames, residual peak 0.67) on which the cascade and its
#: steps are kept
KEPT = dict(frames=16000, period=110, depth=0.01, noise=1.0)


def _y(x) -> np.ndarray:
    return np.asarray(x, np.int64).reshape(-1, 1)


@pytest.mark.parametrize("period", [110, 131, 160, 200])
def test_the_lag_is_the_period(period):
    """On a held voiced tone the lag is its period and its peak clears the cue's threshold."""
    s = settings.current()
    lag, peak = search.held_lag(_y(voiced(12000, period=period, noise=1.0)), s)
    assert lag == period and peak >= s.level3_period_residual


@pytest.mark.parametrize("x", [voiced(12000, period=131, noise=1.0), voiced(12000, period=97), voiced(12000, period=48),
                               tone(12000), np.random.default_rng(1).normal(0, 300, 12000).astype(np.int16),
                               np.cumsum(np.random.default_rng(2).integers(-30, 31, 12000)).astype(np.int16),
                               voiced(4000, period=131)])
def test_held_period_reads_the_lag(x):
    """``held_period`` is ``held_lag``'s lag against the span and its peak against the threshold
    (the refactor changed no decision); a short recording has no lag."""
    s = settings.current()
    lag, peak = search.held_lag(_y(x), s)
    for span in (128, 256, 400):
        assert search.held_period(_y(x), s, span) == (lag * s.level3_held_spans > span
                                                       and peak >= s.level3_period_residual)
    if x.shape[0] < s.level3_period_frames:
        assert (lag, peak) == (0, 0.0)


def test_the_cascade_vector():
    """n2 = 1.5 periods (rounded), t2 + 1 and bias 1; nothing else changes; within the kernel's
    bounds; None where off, without a lag, beyond 256 taps or the first stage, or not longer."""
    s = settings.current()
    named = dict(level3.DEFAULTS, n1=384, mu1=1600)
    got = search.held_cascade(named, 122, s)
    assert got == dict(named, n2=183, t2=named["t2"] + 1, bias=1)
    prm = encoder._vector(got, 1)
    assert all(lo <= v <= hi for v, (lo, hi) in zip(prm, mixsignal.PRM_BOUNDS))
    assert search.held_cascade(dict(named, n1=256), 171, s)["n2"] == 256
    assert search.held_cascade(dict(named, n1=256), 172, s) is None  # (258 taps: beyond the bound)
    assert search.held_cascade(dict(named, n1=128), 122, s) is None  # (longer than the first stage)
    assert search.held_cascade(dict(named, n2=184), 122, s) is None  # (not longer)
    assert search.held_cascade(named, 0, s) is None
    assert search.held_cascade(named, 122, s, 0.8) is not None
    assert search.held_cascade(named, 122, s, 0.81) is None  # (an excitation that repeats exactly)
    with configured(level3_cascade_spans=0):
        assert search.held_cascade(named, 122, settings.current()) is None
    with configured(level3_cascade_bias=False, level3_cascade_t2=0):
        assert search.held_cascade(named, 122, settings.current()) == dict(named, n2=183)


def test_the_steps_vector():
    s = settings.current()
    named = dict(level3.DEFAULTS, mu1=1600, mu3=400)
    assert search.cascade_steps(named, s) == dict(named, mu1=1200, mu3=800)
    assert search.cascade_steps(dict(named, mu3=3000), s)["mu3"] == 4096
    assert search.cascade_steps(dict(named, mu1=1), s)["mu1"] == 1
    with configured(level3_cascade_mu1=0):
        assert search.cascade_steps(named, settings.current()) is None
    with configured(level3_cascade_mu1=1.0, level3_cascade_mu3=1.0):
        assert search.cascade_steps(named, settings.current()) is None  # (nothing changes)


@SETTINGS
@given(st.integers(0, 2**32 - 1), st.integers(1, 12), st.floats(0.0, 0.01))
def test_the_descent_never_returns_worse_than_its_start(seed, evals, margin):
    """``search.greedy`` on a random size of the parameters: its result's size is the size of its
    parameters and never above the start's."""
    rng = np.random.default_rng(seed)
    weights = {k: rng.normal() for k in level3.DEFAULTS}

    def size(named):
        return 1000.0 + sum(w * np.log1p(abs(named[k])) for k, w in weights.items())

    best, got = search.greedy(size, dict(level3.DEFAULTS), evals, margin)
    assert got == size(best) <= size(dict(level3.DEFAULTS))


def _proxy_sizes(monkeypatch, x, cascade_size=None):
    """The sizes ``_search_whole`` measures on its prefix while encoding ``x`` (a list of (n2, size)),
    with the cascade's coding replaced by ``cascade_size`` times the smallest before it when given,
    and the vector written."""
    calls = []
    orig = encoder._coded_size
    lag = search.held_lag(_y(x) - int(x.min()), settings.current())[0]
    n2 = int(round(settings.current().level3_cascade_spans * lag))

    def spy(y, prm, table, skip=0, res=None):
        got = orig(y, prm, table, skip, res)
        if skip == 0 and prm[mixsignal.PRM_N2] == n2 and cascade_size is not None:
            got = cascade_size * min(c[1] for c in calls)
        if skip == 0:
            calls.append((prm[mixsignal.PRM_N2], got))
        return got

    monkeypatch.setattr(encoder, "_coded_size", spy)
    _, written = _chosen(monkeypatch, x)
    return calls, written, n2


@pytest.mark.parametrize("factor,kept", [(1.01, False), (0.999, False), (0.99, True)])
def test_kept_only_when_smaller_by_the_margin(monkeypatch, factor, kept):
    """The cascade is coded once on the prefix (after every other coding of it) and written only
    when its size is below the best's by the margin (``level3_search_margin``, 0.2 %): a coding
    made larger, or smaller by less than the margin, leaves the vector without it."""
    x = vibrato(**KEPT)
    calls, written, n2 = _proxy_sizes(monkeypatch, x, factor)
    assert [c[0] for c in calls].count(n2) == 1 and calls[-1][0] == n2
    assert (written[mixsignal.PRM_N2] == n2) == kept
    with configured(level3_cascade_spans=0):
        _, off = _chosen(monkeypatch, x)
    if not kept:
        assert written == off


def test_the_steps_are_the_smallest_of_three_sample_codings(monkeypatch):
    """With ``cascade`` the held part's sample is coded three times (the vector, n1 = 384, and the
    smaller's steps moved to the last stage) and the smallest returned; without it twice."""
    x = vibrato(**KEPT)
    y = _y(x) - int(x.min())
    s = settings.current()
    best = search.tonal_change(search.held_cascade(dict(level3.DEFAULTS, mu1=1600, mu3=400), 110, s), s)
    calls = _spy(monkeypatch, (mixsignal.PRM_N1, mixsignal.PRM_MU1, mixsignal.PRM_MU3))
    got = encoder._held_choice(y, None, 0, 1, best, s, True)
    assert len(calls) == 3
    n1, mu1, mu3, _ = min(calls, key=lambda c: (c[3], c[1] == best["mu1"]))  # (a tie: the earlier)
    assert (got["n1"], got["mu1"], got["mu3"]) == (n1, mu1, mu3)
    assert calls[2][1:3] == (1200, 800)
    calls.clear()
    encoder._held_choice(y, None, 0, 1, best, s)
    assert len(calls) == 2


def test_written_round_trips_and_is_reproduced(monkeypatch):
    """On a held tone where the cascade and its steps are kept: the vector written has them, the
    bytes decode exactly, the same vector given as ``params`` codes the same bytes, and the bytes
    are smaller than with the cascade off."""
    x = vibrato(**KEPT)
    data, written = _chosen(monkeypatch, x)
    p = {name: written[getattr(mixsignal, "PRM_" + name.upper())] for name in ("n2", "t2", "bias", "mu1", "mu3")}
    assert p == dict(n2=165, t2=level3.DEFAULTS["t2"] + 1, bias=1, mu1=600, mu3=400)
    assert level3.encode(x, params=written) == data
    with configured(level3_cascade_spans=0):
        off = round_trip(x)
    assert len(data) < len(off)


def test_same_bytes_from_threads_and_processes(tmp_path):
    x = vibrato(**KEPT)
    data = ubpe.compress(x, level=3, threads=1)
    assert ubpe.compress(x, level=3, threads=2) == data
    assert np.array_equal(ubpe.decompress(data), x)
    np.save(tmp_path / "x.npy", x)
    code = ("import hashlib, numpy as np, ubpe; "
            f"print(hashlib.sha256(ubpe.compress(np.load({str(tmp_path / 'x.npy')!r}), level=3, threads=2)).hexdigest())")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600, check=True)
    assert out.stdout.strip() == hashlib.sha256(data).hexdigest()


@pytest.mark.parametrize("x", [tone(6000), voiced(12000, period=97), voiced(12000, period=48),
                               voiced(12000, period=200, noise=1.0), voiced(9000, period=131, noise=1.0),
                               vibrato(16000, period=122),
                               np.cumsum(np.random.default_rng(5).integers(-30, 31, 12000)).astype(np.int16)])
def test_where_the_cue_does_not_fire_the_bytes_are_as_before(x):
    """No held period, one whose 1.5 periods exceed 256 taps (200 frames), or an excitation that
    repeats (residual peak 0.84-0.89): the same bytes with the cascade off."""
    data = round_trip(x)
    with configured(level3_cascade_spans=0):
        assert level3.encode(x) == data


@SETTINGS
@given(st.sampled_from([110, 122, 131, 160]), st.sampled_from([8192, 9000, 12000]), st.floats(0.5, 8.0),
       st.integers(0, 2**16), st.booleans())
def test_held_tones_round_trip(period, frames, noise, seed, stereo):
    x = voiced(frames, period=period, seed=seed, noise=noise)
    if stereo:
        rng = np.random.default_rng(seed + 1)
        x = np.stack([x, np.clip(x // 2 + rng.integers(-3, 4, frames), -32768, 32767).astype(np.int16)], 1)
    round_trip(x)


@pytest.mark.parametrize("name,sac", [("trumpet-1", 16782), ("pipe", 9053)])
def test_held_instruments_below_sac(shared_data, name, sac):
    """trumpet-1 (period 122 frames) and pipe (162): the cascade kept, level 3 smaller than Sac at
    its strongest (results/level3-peers-sac.json; coder bytes) and than with the cascade off."""
    import wave

    with wave.open(str(shared_data / "audio" / f"{name}.wav")) as w:
        x = np.frombuffer(w.readframes(w.getnframes()), "<i2").astype(np.int16)
    on = level3.encode(x)
    with configured(level3_cascade_spans=0):
        off = level3.encode(x)
    assert len(on) < sac and len(on) < len(off)
    assert level3.decode(on).tobytes() == x.tobytes()
