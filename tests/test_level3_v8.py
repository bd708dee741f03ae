"""Version 8 of the level-3 bytes (``ubpe.level3``): the least squares fit the values minus their
channel's running mean (``dcm``, ``mixsignal.run`` step 1b), which must decode exactly on every
input, pay where the working zero (the middle of a channel's range) lies far from the signal's
mean, be chosen by its cue (``search.dc_ratio``) there and not on centred signals, and leave the
older versions' bytes as they were wherever it is off."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from test_level3 import SETTINGS, round_trip, signals
from test_level3_v5 import _uleb
from test_level3_v6 import _mask_at, _mode, params, refuses_damage
from test_level3_v7 import _mask_at_1d, tone, voiced

from ubpe import level3
from ubpe._kernels import mixsignal
from ubpe.errors import CorruptDataError
from ubpe.level3 import search
from ubpe.planner import configured, settings


def skewed(frames: int = 9000, seed: int = 3) -> np.ndarray:
    """A voiced tone with a quiet passage and a one-sided click every 2 500 frames, int16 (frames,):
    its range's middle lies about 9 000 units above its mean, over a hundred times its median
    deviation (a transient on one side of a baseline, as a biosignal's peaks or a plucked attack)."""
    x = voiced(frames, seed=seed).astype(np.int64) // 4
    x[frames // 3:frames // 2] //= 16
    x[::2500] += 20000
    return x.astype(np.int16)


@SETTINGS
@given(signals(), st.sampled_from([{}, {"reg": 24}, {"reg": 6}, {"k1": 1}, {"p3": 6, "t4": 8, "k3": 1},
                                   {"xctx": 1}, {"vmod": 1}, {"p1": 1, "cross": 0}, {"lpc": 1},
                                   {"olsr": 2, "reg": 20}, {"p2": 0}, {"cross": 4}]),
       st.integers(1, mixsignal.DCM_MAX))
def test_round_trip_with_the_running_mean(x, change, rate):
    """Every integer width, constant, alternating, full-scale and grid signals, 0 to 300 frames
    (length 1 among them), 1 to 8 channels; every rate of the running mean, with the neighbours'
    inputs, block LPC, the third least squares, the refined solve, the exact-value contexts and the
    value model."""
    channels = x.shape[1] if x.ndim == 2 else 1
    prm = params(channels, dcm=rate, **change)
    data = round_trip(x, params=prm, front=None)
    # version 8 for a model with the running mean (no values too); a range stored raw keeps version 5's bytes
    assert data[0] == (5 if _mode(data) == level3.format.MODE_RAW else 8)


@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32, np.int64, np.uint64])
def test_length_one_constant_alternating_and_full_scale(dtype):
    info = np.iinfo(dtype)
    skew = np.full(900, info.min, dtype)
    skew[::97] = info.max  # full-scale spikes on a floor: the mean far from the range's middle
    for x in (np.array([info.max], dtype), np.full(500, info.min, dtype),
              np.where(np.arange(700) % 2 == 0, info.min, info.max).astype(dtype), skew,
              np.where(np.arange(600).reshape(200, 3) % 5 == 0, info.max, info.min).astype(dtype)):
        channels = x.shape[1] if x.ndim == 2 else 1
        for rate in (1, 10, mixsignal.DCM_MAX):
            round_trip(x, params=params(channels, dcm=rate, k1=1, olsr=2, reg=20), front=None)


def test_one_to_eight_channels_of_a_skewed_tone():
    y = skewed(1500)
    for channels in range(1, 9):
        x = np.stack([np.roll(y, 7 * c) // (1 + c) + 300 * c for c in range(channels)], 1).astype(np.int16)
        data = round_trip(x, params=params(channels, dcm=10), front=None)
        assert data[0] == 8


def test_the_running_mean_pays_on_a_skewed_range():
    """On a tone whose range is skewed by one-sided clicks the centred least squares code it at least
    10 % smaller (measured: 4 053 -> 3 576 bytes at dcm 10); on a tone whose range is centred on its
    mean (three harmonics: dc_ratio 0.006) they change the size by less than 2 % (4 134 -> 4 172)."""
    x = skewed()
    plain = len(level3.encode(x, params=params(1), front=None))
    centred = len(level3.encode(x, params=params(1, dcm=10), front=None))
    assert centred < 0.9 * plain
    y = tone(9000)
    assert search.dc_ratio(y.reshape(-1, 1)) < 0.05
    a = len(level3.encode(y, params=params(1), front=None))
    b = len(level3.encode(y, params=params(1, dcm=10), front=None))
    assert abs(b - a) < 0.02 * a


def test_cue_fires_on_a_skewed_range_not_on_centred_signals():
    s = settings.current()
    rng = np.random.default_rng(5)
    n = 6000
    assert search.dc_ratio(skewed(n).reshape(-1, 1)) > 50
    assert search.dc_change({"reg": 16}, skewed(n).reshape(-1, 1), s) == {"reg": 16, "dcm": s.level3_dc_rate}
    noise = rng.integers(-3000, 3000, n).reshape(-1, 1)
    for x in (noise, tone(n).reshape(-1, 1), np.zeros((n, 1), np.int64), np.full((n, 2), 7), np.zeros((0, 1), np.int64)):
        assert search.dc_ratio(x) < s.level3_dc_ratio
        assert search.dc_change({}, x, s) == {}
    # two channels: the offsets and deviations summed (a centred channel dilutes a skewed one)
    both = np.stack([skewed(n), tone(n)], 1)
    assert 0 < search.dc_ratio(both) < search.dc_ratio(skewed(n).reshape(-1, 1))
    # off, or an older version: never
    with configured(level3_dc_ratio=2e6):
        assert search.dc_change({}, skewed(n).reshape(-1, 1), settings.current()) == {}
    with configured(level3_version=7):
        assert search.dc_change({}, skewed(n).reshape(-1, 1), settings.current()) == {}


def test_chosen_on_a_skewed_range_and_not_on_a_centred_tone():
    x = skewed(9000)
    data = round_trip(x, front=None)
    with configured(level3_dc_ratio=2e6, level3_dc_trial_db=0):  # (and the broadband trial off)
        off = round_trip(x, front=None)
    assert data[0] == 8 and off[0] in (5, 7) and len(data) < 0.9 * len(off)
    y = tone(9000)
    assert round_trip(y, front=None)[0] in (5, 7)


def test_off_writes_older_bytes_unchanged():
    """Where the running mean is off the bytes are version 7's (with the refined solve) or older,
    the same as ``Settings.level3_version = 7`` writes (the broadband trial, ``search.dc_trial``, off:
    ``test_level3_dctrial``)."""
    walk = np.cumsum(np.random.default_rng(3).integers(-40, 41, 5000))
    walk = (walk - (walk.min() + walk.max()) // 2).astype(np.int16)  # (centred: the cue does not fire)
    for x, kw in ((walk, {}), (tone(3000), {}), (tone(6000), {"front": None})):
        assert search.dc_ratio(np.asarray(x).reshape(len(x), -1)) < settings.current().level3_dc_ratio
        with configured(level3_dc_trial_db=0):
            new = level3.encode(x, **kw)
        with configured(level3_version=7):
            old = level3.encode(x, **kw)
        assert new == old and new[0] in (5, 6, 7)


def test_version_8_base():
    assert level3.base_params(2, 8) == level3.base_params(2, 5)[:mixsignal.N_PRM_V5] + [0, 0, 10, 0, 0]
    assert level3.base_params(2, 7)[mixsignal.PRM_DCM] == 0 and level3.base_params(2, 7)[mixsignal.PRM_OLSR] == 2
    x = skewed(800)
    data = level3.encode(x, params=params(1, dcm=10), front=None)
    plain = level3.encode(x, params=params(1), front=None)
    assert data[0] == 8 and plain[0] == 5
    at = _mask_at_1d(data)
    assert data[at] == 0 and plain[at] == 0  # dcm = 10 costs no byte in version 8


def test_version_7_cannot_hold_the_running_mean():
    with configured(level3_version=7), pytest.raises(ValueError, match="version 8"):
        level3.encode(skewed(300), params=params(1, dcm=10), front=None)


def test_malformed_version_8_headers_are_refused():
    x = np.stack([np.arange(400) % 9, np.arange(400) % 4], 1).astype(np.int16)
    five = level3.encode(x, params=params(2), front=None)
    eight = level3.encode(x, params=params(2, dcm=10), front=None)
    at = _mask_at(five)
    assert five[0] == 5 and eight[0] == 8 and five[at] == 0 and eight[at] == 0
    bit = _uleb(1 << mixsignal.PRM_DCM)
    # a version-7 (6, 5) mask with dcm's bit: beyond its parameters
    for v in (5, 6, 7):
        with pytest.raises(CorruptDataError, match="parameter mask"):
            level3.decode(bytes([v]) + five[1:at] + bit + bytes([1]) + five[at + 1:])
    # dcm out of its bounds, or marked changed but at its base (10)
    for v in (mixsignal.DCM_MAX + 1, 40, 127):
        with pytest.raises(CorruptDataError, match="outside"):
            level3.decode(eight[:at] + bit + bytes([v]) + eight[at + 1:])
    with pytest.raises(CorruptDataError, match="base value"):
        level3.decode(eight[:at] + bit + bytes([10]) + eight[at + 1:])
    # a mask beyond version 8's parameters, an unknown version
    with pytest.raises(CorruptDataError, match="parameter mask"):
        level3.decode(eight[:at] + _uleb(1 << mixsignal.N_PRM) + eight[at + 1:])
    with pytest.raises(CorruptDataError, match="version"):
        level3.decode(bytes([11]) + eight[1:])
    # the payload of one version read as the other's: the check bits (seeded with the header)
    with pytest.raises(CorruptDataError):
        level3.decode(bytes([5]) + eight[1:])
    # every truncation and a flipped byte of the payload
    refuses_damage(eight, at)


def test_a_version_8_header_with_the_running_mean_off_decodes(monkeypatch):
    """(never written: the encoder writes version 7 or older then) dcm = 0 marked in a version-8
    mask is version 7's model: the same payload as version 5's (the check bits seeded with the header)."""
    from ubpe.level3 import encoder

    x = np.stack([skewed(300), voiced(300)], 1)
    five = level3.encode(x, params=params(2), front=None)
    monkeypatch.setattr(encoder, "_payload_version", lambda version, prm: 8)
    eight = level3.encode(x, params=params(2), front=None)
    at = _mask_at(five)
    assert five[0] == 5 and eight[0] == 8
    assert eight[at:at + 6] == _uleb(1 << mixsignal.PRM_DCM) + bytes([0])
    assert np.array_equal(level3.decode(eight), x)
    with pytest.raises(CorruptDataError):  # the check bits cover the header
        level3.decode(bytes([8]) + five[1:at] + _uleb(1 << mixsignal.PRM_DCM) + bytes([0]) + five[at + 1:])


def test_the_frozen_fixture_holds_a_version_8_record():
    """tests/fixtures/v1_level3v8_skewed_int16 (make_fixtures.py): its level-3 record, after the
    container's 21-byte head, is version 8 (int16, one dimension), and it decodes to the signal."""
    import ubpe
    from test_fixtures import FIXTURES

    data = (FIXTURES / "v1_level3v8_skewed_int16.ubpe").read_bytes()
    values = np.load(FIXTURES / "v1_level3v8_skewed_int16.npy")
    assert data[21:24] == bytes([8, 2, 1])
    assert np.array_equal(ubpe.decompress(data), values)
    assert search.dc_ratio(values.reshape(-1, 1)) >= settings.current().level3_dc_ratio
