"""Version 9 of the level-3 bytes (``ubpe.level3``): the value model's code classes (``vcls``,
``mixsignal.run``): each symbol's weight g drawn towards that of its value's class (its low
``vcls`` bits) and the model's evidence given as a correction of the coder's own stretch. It must
decode exactly on every input, pay on an ADC whose code widths follow a pattern over the low bits
(differential nonlinearity), be chosen there by its cue (``search.code_classes_cue``) and not on
a smooth signal, and leave the older versions' bytes as they were wherever it is off."""

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
from ubpe.level3 import search
from ubpe.planner import configured


def smooth(frames: int, seed: int = 5, scale: float = 600.0) -> np.ndarray:
    """Band-limited noise (two resonances), float (frames,), standard deviation about ``scale``."""
    rng = np.random.default_rng(seed)
    e = rng.normal(0, 1, frames + 200)
    u = np.zeros_like(e)
    for i in range(2, e.size):
        u[i] = 1.6 * u[i - 1] - 0.8 * u[i - 2] + e[i]
    u = u[200:]
    return u * scale / u.std()


def adc(signal: np.ndarray, bits: int = 16, seed: int = 11) -> np.ndarray:
    """``signal`` quantized by an ADC of ``bits`` bits whose code widths are unequal: a fixed pattern
    over the low 3 bits (the odd codes half as wide, code 4 mod 8 twice as wide) times a small
    per-code jitter; (frames,) int64 codes about the middle of the range."""
    rng = np.random.default_rng(seed)
    n = 1 << bits
    pattern = np.array([1.3, 0.5, 1.0, 0.5, 2.0, 0.5, 1.0, 0.7])
    width = pattern[np.arange(n) % 8] * rng.uniform(0.85, 1.15, n)
    edges = np.cumsum(width)
    edges -= edges[n // 2]
    return np.clip(np.searchsorted(edges, signal), 0, n - 1).astype(np.int64)


def dnl(frames: int = 20000, seed: int = 5) -> np.ndarray:
    """Band-limited noise of about 100 codes' deviation through ``adc``, uint16 (frames,)."""
    return adc(smooth(frames, seed, 100.0)).astype(np.uint16)


def dnl_wide(frames: int = 20000) -> np.ndarray:
    """A slow swing over 6 000 codes (an accelerometer's posture) plus band-limited noise of 20
    codes through ``adc``, uint16 (frames,): a range above VM_MAX_RANGE, where only the classes let
    the value model run."""
    t = np.arange(frames)
    return adc(3000 * np.sin(2 * np.pi * t / 7000) + smooth(frames, 5, 20.0)).astype(np.uint16)


@SETTINGS
@given(signals(), st.sampled_from([{}, {"xctx": 1}, {"xctx": 2}, {"dcm": 10}, {"lpc": 1}, {"p3": 6, "t4": 8, "k3": 1},
                                   {"olsr": 2, "reg": 20}, {"cross": 4}, {"p1": 1, "cross": 0}]),
       st.integers(1, mixsignal.VCLS_MAX))
def test_round_trip_with_code_classes(x, change, bits):
    """Every integer width, constant, alternating, full-scale and grid signals, 0 to 300 frames
    (length 1 among them), 1 to 8 channels; every number of class bits, with the exact-value
    contexts, the running mean, block LPC, the third least squares and the refined solve."""
    channels = x.shape[1] if x.ndim == 2 else 1
    data = round_trip(x, params=params(channels, vmod=1, vcls=bits, **change), front=None)
    if _mode(data) == level3.format.MODE_MODEL and x.size:
        span = int(np.ptp(x.reshape(x.shape[0], -1).astype(object), axis=0).max()) + 1
        fits = span <= mixsignal.VM_CLS_RANGE and channels * span <= mixsignal.VM_CLS_CELLS
        # version 9 where the value model fits (a table narrows the symbols: never wider)
        assert data[0] == 9 or not fits


@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32, np.int64, np.uint64])
def test_length_one_constant_alternating_and_full_scale(dtype):
    info = np.iinfo(dtype)
    for x in (np.array([info.max], dtype), np.full(500, info.min, dtype),
              np.where(np.arange(700) % 2 == 0, info.min, info.max).astype(dtype),
              np.where(np.arange(600).reshape(200, 3) % 5 == 0, info.max, info.min).astype(dtype)):
        channels = x.shape[1] if x.ndim == 2 else 1
        for bits in (1, 6, mixsignal.VCLS_MAX):
            round_trip(x, params=params(channels, vmod=1, vcls=bits), front=None)


def test_a_wide_range_round_trips_up_to_the_classes_bound():
    """The value model with classes runs on ranges above VM_MAX_RANGE (4 096), up to VM_CLS_RANGE."""
    x = adc(smooth(3000, 5, 3000.0)).astype(np.uint16)
    span = int(x.max()) - int(x.min()) + 1
    assert mixsignal.VM_MAX_RANGE < span <= mixsignal.VM_CLS_RANGE
    data = round_trip(x, params=params(1, vmod=1, vcls=6), front=None)
    assert data[0] == 9
    # without classes the value model stays off on that range (version 5's bytes)
    assert round_trip(x, params=params(1, vmod=1), front=None)[0] == 5


def test_the_classes_pay_on_an_adc_with_unequal_code_widths():
    """On a 16-bit ADC whose code widths follow a pattern over the low 3 bits the classes code the
    signal at least 1.5 % smaller than without the value model and smaller than the value model
    alone (measured: 17 476, 17 194 -> 17 142 bytes at vcls 6); on the same signal through an
    ideal ADC they change the size by less than 1 % (17 258 -> 17 296)."""
    x = dnl()
    plain = len(level3.encode(x, params=params(1), front=None))
    alone = len(level3.encode(x, params=params(1, vmod=1), front=None))
    classes = len(level3.encode(x, params=params(1, vmod=1, vcls=6), front=None))
    assert classes < 0.985 * plain and classes < alone
    ideal = np.round(smooth(20000, 5, 100.0)).astype(np.int64) + 32768
    a = len(level3.encode(ideal.astype(np.uint16), params=params(1), front=None))
    b = len(level3.encode(ideal.astype(np.uint16), params=params(1, vmod=1, vcls=6), front=None))
    assert abs(b - a) < 0.01 * a


def test_cue_fires_on_unequal_code_widths_not_on_smooth_or_narrow_signals():
    assert search.code_classes_cue(dnl().reshape(-1, 1).astype(np.int64), 0.01)
    ideal = (np.round(smooth(20000, 5, 100.0)) + 32768).astype(np.int64).reshape(-1, 1)
    assert not search.code_classes_cue(ideal, 0.01)
    # a narrow signal (quartiles 2 codes apart: residues uneven by its shape alone), a short one
    assert not search.code_classes_cue((np.round(smooth(20000, 5, 1.5)) + 100).astype(np.int64).reshape(-1, 1), 0.01)
    assert not search.code_classes_cue(dnl(3000).reshape(-1, 1).astype(np.int64), 0.01)


def test_chosen_on_unequal_code_widths_and_smaller():
    """Measured: 12 041 -> 11 727 bytes (-2.6 %)."""
    x = dnl_wide()
    assert np.ptp(x) + 1 > mixsignal.VM_MAX_RANGE
    data = level3.encode(x)
    assert level3.format.model_params(data)[mixsignal.PRM_VCLS] == 6
    with configured(level3_vcls_bits=0):
        off = level3.encode(x)
    assert level3.format.model_params(off)[mixsignal.PRM_VCLS] == 0
    assert len(data) < len(off)
    assert np.array_equal(level3.decode(data), x)


def test_off_on_a_smooth_signal_the_bytes_of_before():
    """Where the cue is silent the bytes are those with the classes never tried (version 8's
    encoder): an ideal ADC's noise, and a tone."""
    for x in ((np.round(smooth(20000, 7)) + 32768).astype(np.uint16),
              np.round(3000 * np.sin(np.arange(9000) * 0.05)).astype(np.int16)):
        data = level3.encode(x)
        with configured(level3_vcls_bits=0):
            assert level3.encode(x) == data
        with configured(level3_version=8):
            assert level3.encode(x) == data


def test_same_bytes_from_one_and_two_threads():
    x = np.stack([dnl(12000, 5), dnl(12000, 6)], 1)
    one = ubpe.compress(x, level=3, threads=1)
    assert ubpe.compress(x, level=3, threads=2) == one
    assert np.array_equal(ubpe.decompress(one, threads=2), x)


def test_version_8_cannot_hold_the_classes():
    with configured(level3_version=8), pytest.raises(ValueError, match="version 9"):
        level3.encode(dnl(300), params=params(1, vmod=1, vcls=6), front=None)


def test_malformed_version_9_headers_are_refused():
    x = np.stack([np.arange(400) % 9, np.arange(400) % 4], 1).astype(np.int16)
    eight = level3.encode(x, params=params(2, dcm=10), front=None)
    nine = level3.encode(x, params=params(2, vmod=1, vcls=level3.format.VCLS_BASE), front=None)
    at = _mask_at(eight)
    assert eight[0] == 8 and nine[0] == 9 and eight[at] == 0 and nine[at] == 0
    bit = _uleb(1 << mixsignal.PRM_VCLS)
    # a version-8 mask with vcls's bit: beyond its parameters
    with pytest.raises(CorruptDataError, match="parameter mask"):
        level3.decode(eight[:at] + _uleb((1 << mixsignal.PRM_VCLS) | (1 << mixsignal.PRM_DCM)) + eight[at + 1:])
    # vcls out of its bounds, or marked changed but at its base (3)
    for v in (mixsignal.VCLS_MAX + 1, 40, 127):
        with pytest.raises(CorruptDataError, match="outside"):
            level3.decode(nine[:at] + bit + bytes([v]) + nine[at + 1:])
    with pytest.raises(CorruptDataError, match="base value"):
        level3.decode(nine[:at] + bit + bytes([level3.format.VCLS_BASE]) + nine[at + 1:])
    # classes without the value model (vmod's base is 1 in version 9: its bit marks it 0)
    with pytest.raises(CorruptDataError, match="without the value model"):
        level3.decode(nine[:at] + _uleb(1 << mixsignal.PRM_VMOD) + bytes([0]) + nine[at + 1:])
    with pytest.raises(CorruptDataError, match="parameter mask"):
        level3.decode(nine[:at] + _uleb(1 << mixsignal.N_PRM) + nine[at + 1:])
    with pytest.raises(CorruptDataError, match="version"):
        level3.decode(bytes([11]) + nine[1:])
    # the payload read as version 8's: the check bits (seeded with the header)
    with pytest.raises(CorruptDataError):
        level3.decode(bytes([8]) + nine[1:])
    refuses_damage(nine, at)


def test_a_range_above_the_classes_bound_is_refused():
    """A header whose channels' ranges exceed VM_CLS_RANGE, or VM_CLS_CELLS over the channels, with the
    value model on is refused before the kernel runs (its memory bound)."""
    prm = params(1, vmod=1, vcls=6)
    assert level3.format.vmod_fits(prm, 1, mixsignal.VM_CLS_RANGE)
    assert not level3.format.vmod_fits(prm, 1, mixsignal.VM_CLS_RANGE + 1)
    assert not level3.format.vmod_fits(prm, 9, mixsignal.VM_CLS_CELLS // 8)
    assert not level3.format.vmod_fits(params(1, vmod=1), 1, mixsignal.VM_MAX_RANGE + 1)
    wide = np.array([0, 1, 2, mixsignal.VM_CLS_RANGE + 5] * 50, np.int32)
    data = level3.encode(wide, params=params(1), front=None)  # a table narrows it: the symbols
    assert level3.decode(data).tolist() == wide.tolist()


def test_the_frozen_fixture_holds_a_version_9_record():
    """tests/fixtures/v1_level3v9_dnl_uint16 (make_fixtures.py): its level-3 record (uint16, one
    dimension) holds a version-9 model record with code classes, and it decodes to the signal."""
    from test_fixtures import FIXTURES

    data = (FIXTURES / "v1_level3v9_dnl_uint16.ubpe").read_bytes()
    values = np.load(FIXTURES / "v1_level3v9_dnl_uint16.npy")
    assert data[21:24] == bytes([9, 3, 1])  # (the level-3 record after the container's 21-byte head: uint16, 1-D)
    assert level3.format.model_params(data[21:])[mixsignal.PRM_VCLS] == 6
    assert np.array_equal(ubpe.decompress(data), values)
    assert search.code_classes_cue(values.reshape(-1, 1).astype(np.int64), 0.01)


def test_version_9_base():
    assert level3.base_params(2, 9) == (level3.base_params(2, 5)[:mixsignal.PRM_VMOD] + [1]
                                        + level3.base_params(2, 5)[mixsignal.PRM_VMOD + 1:mixsignal.N_PRM_V5]
                                        + [0, 0, 0, level3.format.VCLS_BASE, 0])  # (xlags: version 10's)
    assert level3.base_params(2, 8)[mixsignal.PRM_VCLS] == 0
