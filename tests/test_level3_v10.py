"""Version 10 of the level-3 bytes (``ubpe.level3``): OLS1 takes ``xlags`` values of each
neighbouring channel, not two (``mixsignal.run``). It must decode exactly on every input and
every number of lags, refuse a header whose least squares would exceed ``MAX_DIM``, be chosen on
two channels that move together (stereo) and not on channels that do not, and leave the older
versions' bytes as they were wherever it is off."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from test_level3 import SETTINGS, round_trip, signals
from test_level3_v5 import _uleb
from test_level3_v6 import _mask_at, _mode, params, refuses_damage

import ubpe
from ubpe import level3
from ubpe._kernels import mixsignal
from ubpe.errors import CorruptDataError
from ubpe.planner import configured


def stereo(frames: int = 12000, seed: int = 3, together: bool = True) -> np.ndarray:
    """Two channels of one resonant source, the second the first filtered over a few frames with
    noise of its own (``together``), or two independent sources; (frames, 2) int16."""
    rng = np.random.default_rng(seed)

    def source() -> np.ndarray:
        e = rng.normal(0, 1, frames + 200)
        u = np.zeros_like(e)
        for i in range(2, e.size):
            u[i] = 1.7 * u[i - 1] - 0.85 * u[i - 2] + e[i]
        return u[200:] * 300 / u[200:].std()

    left = source()
    right = (0.7 * left + 0.4 * np.roll(left, 3) - 0.2 * np.roll(left, 6) if together else source()) \
        + rng.normal(0, 20, frames)
    return np.stack([left, right], 1).round().astype(np.int16)


@SETTINGS
@given(signals(), st.integers(1, mixsignal.XLAGS_MAX), st.integers(1, 4),
       st.sampled_from([{}, {"xctx": 1}, {"dcm": 10}, {"vmod": 1, "vcls": 3}, {"olsr": 2}]))
def test_round_trip_with_more_values_of_each_neighbour(x, lags, cross, change):
    """Every integer width, constant, alternating, full-scale and grid signals, 0 to 300 frames
    (length 1 among them), 1 to 8 channels; 1 to 16 values of 1 to 4 neighbours each side, with
    the least-squares order cut to fit MAX_DIM; with the exact-value contexts, the running mean,
    the code classes and the refined solve."""
    channels = x.shape[1] if x.ndim == 2 else 1
    p1 = min(32, mixsignal.MAX_DIM - lags * cross)
    data = round_trip(x, params=params(channels, p1=p1, cross=cross, xlags=lags, **change), front=None)
    if _mode(data) == level3.format.MODE_MODEL and x.size:
        assert data[0] == 10


@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32, np.int64, np.uint64])
def test_length_one_constant_alternating_and_full_scale(dtype):
    info = np.iinfo(dtype)
    for x in (np.array([[info.max, info.min]], dtype), np.full((500, 2), info.min, dtype),
              np.where(np.arange(1400).reshape(700, 2) % 3 == 0, info.min, info.max).astype(dtype),
              np.where(np.arange(600).reshape(200, 3) % 5 == 0, info.max, info.min).astype(dtype)):
        for lags in (1, 8, mixsignal.XLAGS_MAX):
            round_trip(x, params=params(x.shape[1], cross=1, xlags=lags), front=None)


def test_the_order_and_lags_beyond_the_least_squares_bound_are_refused():
    with pytest.raises(ValueError, match="order"):
        level3.encode(stereo(300), params=params(2, p1=64, cross=1, xlags=9), front=None)
    level3.encode(stereo(300), params=params(2, p1=64, cross=1, xlags=8), front=None)  # (64 + 8 = MAX_DIM)
    with pytest.raises(ValueError, match="outside"):
        level3.encode(stereo(300), params=params(2, cross=1, xlags=mixsignal.XLAGS_MAX + 1), front=None)


def test_chosen_on_channels_that_move_together_and_smaller():
    x = stereo()
    data = level3.encode(x, front=None)
    assert level3.format.model_params(data)[mixsignal.PRM_XLAGS] == 8
    with configured(level3_cross_lags=0):
        off = level3.encode(x, front=None)
    assert level3.format.model_params(off)[mixsignal.PRM_XLAGS] == 0
    assert len(data) < 0.995 * len(off)
    assert np.array_equal(level3.decode(data), x)


def test_chosen_behind_a_front_end_chain_by_the_recording_s_channels():
    """The cue reads the recording, not the chain's output (residuals, whose channels correlate
    less): the same choice with the chain forced."""
    x = stereo()
    data = level3.encode(x, front=["lpc"])
    assert _mode(data) == level3.format.MODE_FRONT
    with configured(level3_cross_lags=0):
        assert len(level3.encode(x, front=["lpc"])) > len(data)
    assert np.array_equal(level3.decode(data), x)


def test_off_on_channels_that_share_nothing_the_bytes_of_before():
    x = stereo(together=False)
    data = level3.encode(x)
    with configured(level3_cross_lags=0):
        assert level3.encode(x) == data
    with configured(level3_version=9):
        assert level3.encode(x) == data
    one = x[:, 0].copy()
    with configured(level3_version=9):
        assert level3.encode(one) == level3.encode(one)


def test_same_bytes_from_one_and_two_threads():
    x = stereo(9000)
    one = ubpe.compress(x, level=3, threads=1)
    assert ubpe.compress(x, level=3, threads=2) == one
    assert np.array_equal(ubpe.decompress(one, threads=2), x)


def test_version_9_cannot_hold_the_lags():
    with configured(level3_version=9), pytest.raises(ValueError, match="version 10"):
        level3.encode(stereo(300), params=params(2, cross=1, xlags=8), front=None)


def test_malformed_version_10_headers_are_refused():
    x = np.stack([np.arange(400) % 9, np.arange(400) % 4], 1).astype(np.int16)
    nine = level3.encode(x, params=params(2, vmod=1, vcls=level3.format.VCLS_BASE), front=None)
    ten = level3.encode(x, params=params(2, vmod=1, vcls=level3.format.VCLS_BASE, cross=1,
                                         xlags=level3.format.XLAGS_BASE), front=None)
    at = _mask_at(nine)
    assert nine[0] == 9 and ten[0] == 10 and nine[at] == 0 and ten[at] == 0
    bit = _uleb(1 << mixsignal.PRM_XLAGS)
    # a version-9 mask with xlags' bit: beyond its parameters
    with pytest.raises(CorruptDataError, match="parameter mask"):
        level3.decode(nine[:at] + bit + bytes([4]) + nine[at + 1:])
    # xlags out of its bounds, marked changed but at its base, or past MAX_DIM with p1
    for v in (mixsignal.XLAGS_MAX + 1, 100):
        with pytest.raises(CorruptDataError, match="outside"):
            level3.decode(ten[:at] + bit + bytes([v]) + ten[at + 1:])
    with pytest.raises(CorruptDataError, match="base value"):
        level3.decode(ten[:at] + bit + bytes([level3.format.XLAGS_BASE]) + ten[at + 1:])
    with pytest.raises(CorruptDataError, match="order"):
        level3.decode(ten[:at] + _uleb((1 << mixsignal.PRM_P1) | (1 << mixsignal.PRM_XLAGS)) + bytes([64, 16])
                      + ten[at + 1:])
    with pytest.raises(CorruptDataError, match="parameter mask"):
        level3.decode(ten[:at] + _uleb(1 << mixsignal.N_PRM) + ten[at + 1:])
    with pytest.raises(CorruptDataError, match="version"):
        level3.decode(bytes([11]) + ten[1:])
    # the payload read as version 9's: the check bits (seeded with the header)
    with pytest.raises(CorruptDataError):
        level3.decode(bytes([9]) + ten[1:])
    refuses_damage(ten, at)


def test_version_10_base():
    assert level3.base_params(2, 10) == level3.base_params(2, 9)[:mixsignal.N_PRM_V9] + [level3.format.XLAGS_BASE]
    assert level3.base_params(2, 9)[mixsignal.PRM_XLAGS] == 0
