"""Version 7 of the level-3 bytes (``ubpe.level3``): the long least squares' solve refined at 46
bits (``olsr``, ``mixsignal._ols_solve_refined``), which must decode exactly on every input, come
close to float least squares where the 30-bit solve does not (a sustained tone's normal
equations), be chosen by the tonal cue (``search.tonal``) on tones and not on noise, random walks,
percussion or constants, and leave the older versions' bytes as they were wherever it is off."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from test_level3 import SETTINGS, round_trip, signals
from test_level3_v5 import _uleb
from test_level3_v6 import _mask_at, _mode, hourly, params, refuses_damage

from ubpe import level3
from ubpe._kernels import mixsignal
from ubpe.errors import CorruptDataError
from ubpe.level3 import search
from ubpe.planner import configured, settings


def tone(frames: int = 12000, period: float = 97.3, seed: int = 7, noise: float = 2.0) -> np.ndarray:
    """A sustained tone of three harmonics and a little noise, int16 (frames,)."""
    rng = np.random.default_rng(seed)
    t = np.arange(frames)
    w = 2 * np.pi * t / period
    x = 3000 * np.sin(w) + 1500 * np.sin(3 * w + 1) + 600 * np.sin(5 * w + 2) + rng.normal(0, noise, frames)
    return np.round(x).astype(np.int16)


def voiced(frames: int = 12000, period: int = 97, seed: int = 7, noise: float = 2.0) -> np.ndarray:
    """A sustained voiced tone: a pulse every ``period`` frames (a reed's, a bow's, a glottis's)
    and a little noise through two resonances, int16 (frames,). Its order-32 prediction error
    keeps the period (the pulses), which the harmonics alone (``tone``) would not."""
    rng = np.random.default_rng(seed)
    e = np.zeros(frames)
    e[::period] = 4000.0
    e += rng.normal(0, noise, frames)
    x = resonate(e, period)
    return np.round(x * 3000 / np.abs(x).max()).astype(np.int16)


def resonate(e: np.ndarray, period: float) -> np.ndarray:
    """``e`` (float64, (frames,)) through two resonances in series, at 3 and 7 times the pitch of
    ``period`` frames (poles of radius 0.97 and 0.95: an instrument body's formants)."""
    frames = e.shape[0]
    a1, a2 = 2 * 0.97 * np.cos(2 * np.pi * 3 / period), -0.97 ** 2
    b1, b2 = 2 * 0.95 * np.cos(2 * np.pi * 7 / period), -0.95 ** 2
    u = np.zeros(frames)
    x = np.zeros(frames)
    for t in range(2, frames):
        u[t] = a1 * u[t - 1] + a2 * u[t - 2] + e[t]
        x[t] = b1 * x[t - 1] + b2 * x[t - 2] + u[t]
    return x


@SETTINGS
@given(signals(), st.sampled_from([{}, {"reg": 24}, {"reg": 6}, {"k1": 1}, {"p3": 6, "t4": 8, "k3": 1},
                                   {"xctx": 1}, {"vmod": 1}, {"p1": 1, "cross": 0}]),
       st.integers(1, mixsignal.OLSR_MAX))
def test_round_trip_with_the_refined_solve(x, change, rounds):
    """Every integer width, constant, alternating, full-scale and grid signals, 0 to 300 frames
    (length 1 among them), 1 to 8 channels; solved every frame (k1 = 1), the third least squares
    refined too, the largest and smallest ridges, with the exact-value contexts and the value model."""
    channels = x.shape[1] if x.ndim == 2 else 1
    prm = params(channels, olsr=rounds, **change)
    data = round_trip(x, params=prm, front=None)
    # version 7 for a model with the refinement (no values too); a range stored raw keeps version 5's bytes
    assert data[0] == (5 if _mode(data) == level3.format.MODE_RAW else 7)


@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32, np.int64, np.uint64])
def test_length_one_constant_alternating_and_full_scale(dtype):
    info = np.iinfo(dtype)
    for x in (np.array([info.max], dtype), np.full(500, info.min, dtype),
              np.where(np.arange(700) % 2 == 0, info.min, info.max).astype(dtype),
              np.where(np.arange(600).reshape(200, 3) % 5 == 0, info.max, info.min).astype(dtype)):
        channels = x.shape[1] if x.ndim == 2 else 1
        for k1 in (1, 16):
            round_trip(x, params=params(channels, olsr=2, k1=k1, reg=20), front=None)


def test_one_to_eight_channels_of_a_tone():
    y = tone(1500)
    for channels in range(1, 9):
        x = np.stack([np.roll(y, 7 * c) // (1 + c) for c in range(channels)], 1)
        data = round_trip(x, params=params(channels, olsr=2, reg=20), front=None)
        assert data[0] == 7


def _normal_equations(x: np.ndarray, dim: int, scale_bits: int = 45):
    """Integer sums (R row-major, b) of predicting x[t] from x[t - 1 .. t - dim], scaled to a diagonal
    near 2**scale_bits as the kernel keeps them, and the float versions."""
    n = x.size - dim
    X = np.stack([x[dim - 1 - j:dim - 1 - j + n] for j in range(dim)], 1).astype(np.float64)
    y = x[dim:].astype(np.float64)
    Rf, bf = X.T @ X, X.T @ y
    sc = 2.0 ** scale_bits / Rf.diagonal().max()
    return np.round(Rf * sc).astype(np.int64).ravel(), np.round(bf * sc).astype(np.int64), Rf * sc, bf * sc, X


@pytest.mark.parametrize("reg", [16, 20])
def test_refinement_approaches_float_least_squares_on_a_tone(reg):
    """On a sustained tone's normal equations (pivots far below the diagonal) two rounds take the
    prediction's distance from float least squares (same ridge) to a fraction of the 30-bit solve's
    (reg 20: mean 1.8 units, 0.44 after one round, 0.15 after two), four rounds closer still."""
    x = tone(20000, noise=2.0).astype(np.int64)
    dim = 32
    R, b, Rf, bf, X = _normal_equations(x, dim)
    ridge = Rf.diagonal().max() / 2.0 ** reg
    wf = np.linalg.solve(Rf + ridge * np.eye(dim), bf)
    err = {}
    for rounds in (0, 1, 2, 4):
        w = mixsignal.ols_solve(R, b, dim, reg, rounds) / 2.0 ** 24
        err[rounds] = float(np.abs(X @ (w - wf)).mean())
    assert err[0] > 0.1  # the 30-bit solve is off by a tenth of a unit and more
    assert err[1] < err[0] / 3 and err[2] < err[1] / 2 and err[2] < err[0] / 8 and err[4] < err[2]
    # deterministic, and rounds = 0 is the 30-bit solve (the older versions' coefficients)
    assert np.array_equal(mixsignal.ols_solve(R, b, dim, reg, 2), mixsignal.ols_solve(R, b, dim, reg, 2))


def test_refinement_keeps_an_exact_solution_and_a_failed_factorization():
    dim = 8
    R = np.zeros(dim * dim, np.int64)
    for i in range(dim):
        R[i * dim + i] = 1 << 44
    b = (np.arange(dim, dtype=np.int64) - 3) << 40
    w0 = mixsignal.ols_solve(R, b, dim, 24, 0)
    w2 = mixsignal.ols_solve(R, b, dim, 24, 2)
    expect = np.round((b / 2.0 ** 44) / (1 + 2.0 ** -24) * 2 ** 24)
    assert np.abs(w2 - expect).max() <= np.abs(w0 - expect).max() and np.abs(w2 - expect).max() <= 2
    # all-zero sums: no factorization, the coefficients stay 0
    assert not mixsignal.ols_solve(np.zeros(dim * dim, np.int64), b, dim, 16, 2).any()
    # the largest sums the kernel keeps (diagonal 2**50, off-diagonal at the Cauchy-Schwarz bound)
    R = np.full(dim * dim, (1 << 50) - 1, np.int64)
    w = mixsignal.ols_solve(R, np.full(dim, 1 << 50, np.int64), dim, 6, 4)
    assert np.abs(w).max() <= 1 << 31


def test_cue_fires_on_tones_not_on_noise_walks_percussion_or_constants():
    s = settings.current()
    rng = np.random.default_rng(5)
    n = 12000
    assert search.tonal(voiced(n).reshape(-1, 1), s)
    assert search.tonal(np.stack([voiced(n), voiced(n, period=131, seed=8)], 1), s)
    noise = rng.integers(-3000, 3000, n).reshape(-1, 1)
    walk = np.cumsum(rng.integers(-40, 41, n)).reshape(-1, 1)
    smooth = np.round(1000 * np.convolve(rng.normal(0, 1, n + 400), np.hanning(400), "valid")[:n]).reshape(-1, 1)
    hits = np.zeros(n)
    hits[::1500] = 1  # a drum struck every 1 500 frames: a decaying noise burst each time
    drum = np.round(8000 * np.convolve(hits, np.exp(-np.arange(600) / 80.0))[:n] * rng.normal(0, 1, n))
    for x in (noise, walk, smooth, drum.reshape(-1, 1), np.zeros((n, 1), np.int64), np.full((n, 2), 7)):
        assert not search.tonal(x, s)
    assert search.tonal_stats(np.zeros((n, 1))) == (0.0, 0.0, 0.0)
    # too short, off, or an older version: never
    assert not search.tonal(voiced(s.level3_tonal_frames - 1).reshape(-1, 1), s)
    with configured(level3_tonal_peak=2.0):
        assert not search.tonal(voiced(n).reshape(-1, 1), settings.current())
    with configured(level3_version=6):
        assert not search.tonal(voiced(n).reshape(-1, 1), settings.current())


def test_chosen_on_a_tone_and_not_on_a_walk():
    x = voiced(9000)
    with configured(level3_dc_ratio=2e6):  # (the voiced tone's range is skewed: version 8's cue too)
        data = round_trip(x, front=None)
    assert data[0] == 7
    with configured(level3_tonal_peak=2.0, level3_dc_ratio=2e6):
        off = round_trip(x, front=None)
    assert off[0] == 5
    walk = np.cumsum(np.random.default_rng(2).integers(-40, 41, 9000)).astype(np.int16)
    with configured(level3_dc_ratio=2e6):
        assert round_trip(walk)[0] == 5


def test_off_writes_older_bytes_unchanged():
    """Where the refinement is off the bytes are version 6's (with the contexts) or 5's, the same as
    ``Settings.level3_version = 6`` writes."""
    walk = np.cumsum(np.random.default_rng(3).integers(-40, 41, 5000)).astype(np.int16)
    for x, kw in ((walk, {}), (hourly(2000), {"front": None}), (voiced(3000), {})):
        with configured(level3_dc_ratio=2e6, level3_cross_lags=0):  # (versions 8's running mean, 10's lags off)
            new = level3.encode(x, **kw)
        with configured(level3_version=6):
            old = level3.encode(x, **kw)
        assert new == old and new[0] in (5, 6)


def test_version_7_base():
    assert level3.base_params(2, 7)[:mixsignal.N_PRM_V7] == level3.base_params(2, 5)[:mixsignal.N_PRM_V5] + [0, 2]
    assert level3.base_params(2, 6)[mixsignal.PRM_OLSR] == 0
    x = tone(800)
    data = level3.encode(x, params=params(1, olsr=2), front=None)
    plain = level3.encode(x, params=params(1), front=None)
    assert data[0] == 7 and plain[0] == 5
    at = _mask_at_1d(data)
    assert data[at] == 0 and plain[at] == 0  # olsr = 2 costs no byte in version 7


def test_version_6_cannot_hold_the_refinement():
    with configured(level3_version=6), pytest.raises(ValueError, match="version 7"):
        level3.encode(tone(300), params=params(1, olsr=2), front=None)


def _mask_at_1d(data: bytes) -> int:
    r = level3.format._Reader(data)
    r.byte("v"), r.byte("d"), r.byte("n")
    r.uleb("frames", 1 << 40)
    assert r.byte("mode") == level3.format.MODE_MODEL
    r.uleb("lo", 1 << 64), r.uleb("step", 1 << 40)
    assert r.uleb("table", 1 << 40) == 0
    r.byte("gs")
    r.uleb("c", 1 << 40), r.uleb("c", 1 << 40)
    return r.pos


def test_malformed_version_7_headers_are_refused():
    x = np.stack([np.arange(400) % 9, np.arange(400) % 4], 1).astype(np.int16)
    five = level3.encode(x, params=params(2), front=None)
    seven = level3.encode(x, params=params(2, olsr=2), front=None)
    at = _mask_at(five)
    assert five[0] == 5 and seven[0] == 7 and five[at] == 0 and seven[at] == 0
    bit = _uleb(1 << mixsignal.PRM_OLSR)
    # a version-6 (or 5) mask with olsr's bit: beyond its parameters
    for v in (5, 6):
        with pytest.raises(CorruptDataError, match="parameter mask"):
            level3.decode(bytes([v]) + five[1:at] + bit + bytes([1]) + five[at + 1:])
    # olsr out of its bounds, or marked changed but at its base (2)
    for v in (mixsignal.OLSR_MAX + 1, 9, 127):
        with pytest.raises(CorruptDataError, match="outside"):
            level3.decode(seven[:at] + bit + bytes([v]) + seven[at + 1:])
    with pytest.raises(CorruptDataError, match="base value"):
        level3.decode(seven[:at] + bit + bytes([2]) + seven[at + 1:])
    # a mask beyond version 7's parameters, an unknown version
    with pytest.raises(CorruptDataError, match="parameter mask"):
        level3.decode(seven[:at] + _uleb(1 << mixsignal.N_PRM) + seven[at + 1:])
    with pytest.raises(CorruptDataError, match="version"):
        level3.decode(bytes([11]) + seven[1:])
    # the payload of one version read as the other's: the check bits (seeded with the header)
    with pytest.raises(CorruptDataError):
        level3.decode(bytes([5]) + seven[1:])
    # every truncation and a flipped byte of the payload
    refuses_damage(seven, at)


def test_a_version_7_header_with_the_refinement_off_decodes(monkeypatch):
    """(never written: the encoder writes version 5 or 6 then) olsr = 0 marked in a version-7 mask
    is version 6's model: the same payload as version 5's (the check bits seeded with the header)."""
    from ubpe.level3 import encoder

    x = hourly(300)
    five = level3.encode(x, params=params(2), front=None)
    monkeypatch.setattr(encoder, "_payload_version", lambda version, prm: 7)
    seven = level3.encode(x, params=params(2), front=None)
    at = _mask_at(five)
    assert five[0] == 5 and seven[0] == 7
    assert seven[at:at + 6] == _uleb(1 << mixsignal.PRM_OLSR) + bytes([0])
    assert np.array_equal(level3.decode(seven), x)
    with pytest.raises(CorruptDataError):  # the check bits cover the header
        level3.decode(bytes([7]) + five[1:at] + _uleb(1 << mixsignal.PRM_OLSR) + bytes([0]) + five[at + 1:])


def test_the_frozen_fixture_holds_a_version_7_record():
    """tests/fixtures/v1_level3v7_voiced_int16 (make_fixtures.py): its level-3 record, after the
    container's 21-byte head, is version 7 (int16, one dimension), and it decodes to the tone."""
    import ubpe
    from test_fixtures import FIXTURES

    data = (FIXTURES / "v1_level3v7_voiced_int16.ubpe").read_bytes()
    values = np.load(FIXTURES / "v1_level3v7_voiced_int16.npy")
    assert data[21:24] == bytes([7, 2, 1])
    assert np.array_equal(ubpe.decompress(data), values)
    assert search.tonal(values.reshape(-1, 1), settings.current())
