"""Version 6's lighter exact-value contexts (``xctx`` = 2, ``mixctx.XC_LISTS``: the successor
lists without the hashed contexts), issue 29's speed floor: they must decode exactly on every
input, be refused outside the parameter's bounds with a typed error, and be what the encoder's
decode-cost model (``encoder.xctx_decode_ns``) picks where the full set would decode below the
floor (the parameter asserted, never a timing)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from test_level3 import SETTINGS, round_trip, signals
from test_level3_v5 import _uleb
from test_level3_v6 import _mask_at, _mode, hourly, params

from ubpe import level3
from ubpe._kernels import mixctx, mixsignal
from ubpe.errors import CorruptDataError
from ubpe.level3 import encoder


def _xctx_of(data: bytes, channels: int) -> int:
    """The ``xctx`` of a level-3 model header (its parameters read back)."""
    r = level3.format._Reader(data)
    version = r.byte("version")
    r.byte("dtype")
    ndim = r.byte("ndim")
    r.uleb("frames", 1 << 62)
    if ndim == 2:
        r.uleb("channels", 1 << 62)
    assert r.byte("mode") == level3.format.MODE_MODEL
    r.zig("lo", 1 << 64), r.uleb("step", 1 << 40)
    if level3.format._read_table(r, (1 << 40) - 1) is not None:
        r.byte("table mode")
    r.byte("gs")
    for _ in range(2 * channels):
        r.uleb("c", 1 << 40)
    return level3.format._read_params(r, channels, version)[mixsignal.PRM_XCTX]


@SETTINGS
@given(signals(), st.sampled_from([{}, {"vmod": 1}, {"p3": 6, "t4": 8, "k3": 2}, {"fmix": 1, "t3": 6},
                                   {"mixb": 0, "bias": 1, "nlmsq": 0}, {"lpc": 1}]))
def test_round_trip_with_the_lighter_contexts(x, change):
    """Every integer width, constant, alternating, full-scale and grid signals, 0 to 300 frames,
    1 to 8 channels, with the value model, OLS3, the least-squares mix, version 3's mix, block LPC."""
    channels = x.shape[1] if x.ndim == 2 else 1
    data = round_trip(x, params=params(channels, xctx=2, **change), front=None)
    assert data[0] == (6 if _mode(data) == level3.format.MODE_MODEL else 5)


# (length one, constant and full-scale inputs with xctx = 2: test_level3_v6.test_length_one_constant_and_full_scale)


def test_lighter_one_to_eight_channels_of_hourly_readings():
    y = hourly(1500)
    for channels in range(1, 9):
        x = np.ascontiguousarray(np.tile(y, (1, 4))[:, :channels]) + np.arange(channels, dtype=np.int16)
        full = round_trip(x, params=params(channels, xctx=1), front=None)
        light = round_trip(x, params=params(channels, xctx=2), front=None)
        assert light[0] == 6 and _xctx_of(light, channels) == 2 and _xctx_of(full, channels) == 1
        assert light != full  # (another model: the payloads differ)
        assert abs(len(light) / len(full) - 1) < 0.05  # (the lists carry most of the contexts' gain)


def test_the_lighter_state_has_no_hashed_table():
    full, light = mixctx.new_state(35040, 1, mixctx.XC_FULL), mixctx.new_state(35040, 1, mixctx.XC_LISTS)
    assert full.XP.size == (1 << mixctx.XC_BITS) + mixctx.XL_SIZE
    assert light.XP.size == 1 + mixctx.XL_SIZE and light.LV.size == full.LV.size
    assert light.XB[5 + mixctx.XNI] == mixctx.XC_N and full.XB[5 + mixctx.XNI] == 0
    for bad in (0, 3, -1):
        with pytest.raises(ValueError, match="xctx"):
            mixctx.new_state(10, 1, bad)


def test_bad_values_of_xctx_are_refused():
    """A version-6 header's xctx beyond 2 is refused before the kernel runs (CorruptDataError
    naming the bound); 2 in place of 1 is a valid header whose payload then fails its check bits."""
    x = np.stack([np.arange(400) % 9, np.arange(400) % 4], 1).astype(np.int16)
    six = level3.encode(x, params=params(2, xctx=1), front=None)
    light = level3.encode(x, params=params(2, xctx=2), front=None)
    at = _mask_at(six)
    bit = _uleb(1 << mixsignal.PRM_XCTX)
    assert six[at] == 0 and light[at:at + len(bit) + 1] == bit + bytes([2])
    assert np.array_equal(level3.decode(light), x)
    for v in (3, 4, 127, 200):
        with pytest.raises(CorruptDataError, match="outside"):
            level3.decode(six[:at] + bit + _uleb(v) + six[at + 1:])
    with pytest.raises(CorruptDataError):  # (the full set's payload read with the lighter set)
        level3.decode(six[:at] + bit + bytes([2]) + six[at + 1:])
    for cut in (1, 2, 5):
        with pytest.raises(CorruptDataError):
            level3.decode(light[:-cut])
    with pytest.raises(ValueError, match="outside"):
        level3.encode(x, params=params(2, xctx=3), front=None)


def test_cost_model_is_monotone_and_deterministic():
    ns = encoder.xctx_decode_ns
    assert ns(2.0, 100, 1) < ns(4.0, 100, 1) < ns(4.0, encoder.XCTX_BIG, 1)
    assert ns(3.0, encoder.XCTX_BIG // 4, 4) == ns(3.0, encoder.XCTX_BIG, 1) > ns(3.0, encoder.XCTX_BIG - 1, 1)
    assert ns(-1.0, 10, 1) == ns(0.0, 10, 1) == encoder.XCTX_NS[0]


def test_cost_model_picks_the_lighter_contexts_on_a_long_multichannel_recording(monkeypatch):
    """A year of hourly readings of 2 channels (17 520 values: the full set's 2**22-entry table)
    gets the lighter set; its first 3 000 hours (6 000 values, about 2.7 bits a value in the
    sample: a 2**19-entry table) the full one. Both by the model, from the sample's size and the
    shape; with a model that predicts every decode slow, or fast, the other way round. (The
    decoder's model alone: ``level3_xctx_encode_floor`` off; with it on, the encoder's model takes
    the lighter set on the short one too: its sample is half of it, results/level3-floor-4.md.)"""
    from ubpe.planner import settings as cfg

    with cfg.configured(level3_dc_trial_db=0, level3_cross_lags=0):  # (versions 8's trial, 10's lags off)
        x = hourly()
        short = np.ascontiguousarray(x[:3000])
        assert x.size >= encoder.XCTX_BIG > short.size
        with cfg.configured(level3_xctx_encode_floor=False):
            data = level3.encode(x, front=None)
            assert data[0] == 6 and _xctx_of(data, 2) == mixctx.XC_LISTS
            data = level3.encode(short, front=None)
            assert data[0] == 6 and _xctx_of(data, 2) == mixctx.XC_FULL
        data = level3.encode(short, front=None)
        assert data[0] == 6 and _xctx_of(data, 2) == mixctx.XC_LISTS
        assert np.array_equal(level3.decode(data), short)
        with cfg.configured(level3_xctx_encode_floor=False):
            monkeypatch.setattr(encoder, "XCTX_NS", (1e9, 0.0, 0.0))
            assert _xctx_of(level3.encode(short, front=None), 2) == mixctx.XC_LISTS
            monkeypatch.setattr(encoder, "XCTX_NS", (0.0, 0.0, 0.0))
            assert _xctx_of(level3.encode(x, front=None), 2) == mixctx.XC_FULL
