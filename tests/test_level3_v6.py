"""Version 6 of the level-3 bytes (``ubpe.level3``): the exact-value contexts (``xctx``: hashed
contexts of the last symbols and successor lists of the values that followed them, mixed after
the coder's probability), which must decode exactly on every input, be chosen on a coarse grid
whose values recur (hourly weather readings), and leave version 5's bytes as they were wherever
they are off."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from test_level3 import SETTINGS, round_trip, signals
from test_level3_v3 import rescaled
from test_level3_v5 import _uleb

from ubpe import level3
from ubpe._kernels import mixsignal
from ubpe.errors import CorruptDataError
from ubpe.planner import configured


def params(channels: int, **change) -> list[int]:
    return level3.format._vector(dict(level3.DEFAULTS, **change), channels)


def hourly(frames: int = 8760, seed: int = 29) -> np.ndarray:
    """A year of hourly readings on a coarse grid: a daily cycle and weather in whole degrees
    Fahrenheit converted to tenths of a degree Celsius (the values recur exactly, steps of 5 or 6),
    and a humidity in whole percent that saturates at 100, (frames, 2) int16."""
    rng = np.random.default_rng(seed)
    t = np.arange(frames)
    slow = np.cumsum(rng.normal(0, 0.6, frames))
    slow -= np.convolve(slow, np.ones(240) / 240, "same")
    f = np.round(50 + 12 * np.sin(2 * np.pi * (t % 24) / 24) + slow + rng.normal(0, 0.7, frames))
    temp = np.round((f - 32) * 50 / 9).astype(np.int16)
    hum = np.clip(np.round(80 - 15 * np.sin(2 * np.pi * (t % 24) / 24) - 0.8 * slow), 0, 100).astype(np.int16)
    return np.stack([temp, hum], 1)


@SETTINGS
@given(signals(), st.sampled_from([{}, {"vmod": 1}, {"p3": 6, "t4": 8, "k3": 2}, {"fmix": 1, "t3": 6},
                                   {"mixb": 0, "bias": 1, "nlmsq": 0}, {"lpc": 1}]))
def test_round_trip_with_the_exact_value_contexts(x, change):
    """Every integer width, constant, alternating, full-scale and grid signals, 0 to 300 frames
    (length 1 among them), 1 to 8 channels, with the value model, the third least-squares
    predictor, the least-squares mix, version 3's mix and block LPC."""
    channels = x.shape[1] if x.ndim == 2 else 1
    prm = params(channels, xctx=1, **change)
    data = round_trip(x, params=prm, front=None)
    # version 6 for a model with the contexts; a range stored raw keeps version 5's bytes
    assert data[0] == (6 if _mode(data) == level3.format.MODE_MODEL else 5)


def _mode(data: bytes) -> int:
    r = level3.format._Reader(data)
    r.byte("version"), r.byte("dtype")
    ndim = r.byte("ndim")
    r.uleb("frames", 1 << 62)
    if ndim == 2:
        r.uleb("channels", 1 << 62)
    return r.byte("mode")


@pytest.mark.parametrize("xctx", [1, 2])  # the full exact-value contexts and the lighter set
@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32, np.int64, np.uint64])
def test_length_one_constant_and_full_scale(dtype, xctx):
    info = np.iinfo(dtype)
    for x in (np.array([info.max], dtype), np.full(500, info.min, dtype),
              np.where(np.arange(700) % 2 == 0, info.min, info.max).astype(dtype),
              np.where(np.arange(600).reshape(200, 3) % 5 == 0, info.max, info.min).astype(dtype)):
        channels = x.shape[1] if x.ndim == 2 else 1
        round_trip(x, params=params(channels, xctx=xctx), front=None)


def test_one_to_eight_channels_of_hourly_readings():
    y = hourly(1500)
    for channels in range(1, 9):
        x = np.ascontiguousarray(np.tile(y, (1, 4))[:, :channels]) + np.arange(channels, dtype=np.int16)
        data = round_trip(x, params=params(channels, xctx=1), front=None)
        assert data[0] == 6


def test_chosen_on_hourly_readings_and_smaller():
    x = hourly()
    with configured(level3_dc_trial_db=0, level3_cross_lags=0):  # (versions 8's broadband trial, 10's lags off)
        on = round_trip(x, front=None)
        with configured(level3_xctx_sample=0):
            off = round_trip(x, front=None)
    assert on[0] == 6 and off[0] == 5
    assert len(on) < 0.97 * len(off)


def test_off_writes_version_5_bytes_unchanged():
    """Where the contexts are off (not tried, or not chosen) the bytes are version 5's: the same
    as ``Settings.level3_version = 5`` writes."""
    rng = np.random.default_rng(3)
    noise = rng.integers(-30000, 30000, 3000).astype(np.int16)  # (a range the encoder does not try)
    for x, kw in ((rescaled(3000), {"front": None}), (hourly(2000), {"front": None}), (noise, {})):
        with configured(level3_xctx_sample=0, level3_cross_lags=0):  # (version 10's lags off too)
            new = level3.encode(x, **kw)
        with configured(level3_version=5):
            old = level3.encode(x, **kw)
        assert new == old and new[0] == 5
    assert level3.encode(noise)[0] == 5


def test_version_6_base_is_version_5_with_the_contexts():
    assert level3.base_params(2, 6) == level3.base_params(2, 5)[:mixsignal.N_PRM_V5] + [1, 0, 0, 0, 0]
    assert level3.base_params(2, 5)[mixsignal.PRM_XCTX] == 0
    # a version-6 header at its base (xctx 1) spends no byte on it: the mask of the defaults
    x = hourly(800)
    data = level3.encode(x, params=params(2, xctx=1), front=None)
    plain = level3.encode(x, params=params(2), front=None)
    assert data[0] == 6 and plain[0] == 5 and len(data[:20]) == len(plain[:20])


def test_version_5_cannot_hold_the_contexts():
    with configured(level3_version=5), pytest.raises(ValueError, match="version 6"):
        level3.encode(hourly(300), params=params(2, xctx=1), front=None)


def refuses_damage(data: bytes, at: int) -> None:
    """Every truncation of the level-3 payload ``data`` (its parameter mask at ``at``) and a
    flipped byte of its coded part, every seventh of it, raise CorruptDataError."""
    for cut in (1, 2, 5, len(data) - at - 2):
        with pytest.raises(CorruptDataError):
            level3.decode(data[:-cut])
    for pos in range(at + 2, len(data), max(1, (len(data) - at) // 7)):
        bad = bytearray(data)
        bad[pos] ^= 0x5A
        with pytest.raises(CorruptDataError):
            level3.decode(bytes(bad))


def _mask_at(data: bytes) -> int:
    """The offset of the parameter mask in a mode-0 header of a (frames, 2) int16 recording with
    no table (version, dtype, ndim, frames, channels, mode, lo, step, table 0, gs, 2 channels)."""
    r = level3.format._Reader(data)
    r.byte("v"), r.byte("d"), r.byte("n")
    r.uleb("frames", 1 << 40), r.uleb("channels", 1 << 40)
    assert r.byte("mode") == level3.format.MODE_MODEL
    r.uleb("lo", 1 << 64), r.uleb("step", 1 << 40)
    assert r.uleb("table", 1 << 40) == 0
    r.byte("gs")
    for _ in range(4):
        r.uleb("c", 1 << 40)
    return r.pos


def test_hostile_fields_are_refused():
    x = np.stack([np.arange(400) % 9, np.arange(400) % 4], 1).astype(np.int16)
    five = level3.encode(x, params=params(2), front=None)
    six = level3.encode(x, params=params(2, xctx=1), front=None)
    at = _mask_at(five)
    assert five[0] == 5 and six[0] == 6 and five[at] == 0 and six[at] == 0
    bit = _uleb(1 << mixsignal.PRM_XCTX)
    # a version-5 mask with the contexts' bit: beyond its parameters
    with pytest.raises(CorruptDataError, match="parameter mask"):
        level3.decode(five[:at] + bit + bytes([1]) + five[at + 1:])
    # a version-6 xctx out of its bounds (3: 2 is the lighter set, tests/test_level3_xctx2.py), or
    # marked changed but at its base (1)
    for v in (3, 127):
        with pytest.raises(CorruptDataError, match="outside"):
            level3.decode(six[:at] + bit + bytes([v]) + six[at + 1:])
    with pytest.raises(CorruptDataError, match="base value"):
        level3.decode(six[:at] + bit + bytes([1]) + six[at + 1:])
    # the payload of one version read as the other's: the check bits (seeded with the header)
    with pytest.raises(CorruptDataError):
        level3.decode(bytes([6]) + five[1:at] + bit + bytes([0]) + five[at + 1:])
    with pytest.raises(CorruptDataError):
        level3.decode(bytes([5]) + six[1:])
    # every truncation and a flipped byte of the payload
    refuses_damage(six, at)


def test_a_version_6_header_with_the_contexts_off_decodes():
    """(never written: the encoder writes version 5 then) xctx = 0 marked in a version-6 mask is
    version 5's model; the check bits are seeded with the header, so re-encode to compare."""
    x = hourly(300)
    prm = params(2)
    five = level3.encode(x, params=prm, front=None)
    at = _mask_at(five)
    assert five[at] == 0
    six = bytes([6]) + five[1:at] + _uleb(1 << mixsignal.PRM_XCTX) + bytes([0]) + five[at + 1:]
    with pytest.raises(CorruptDataError):  # the check bits cover the header
        level3.decode(six)
