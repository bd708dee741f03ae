"""Version 4 of the level-3 bytes (``ubpe.level3``): the stage mix blended with fixed experts by
their recent errors (``mixb``) and no bias estimates among the mixer's inputs by default; it must
decode exactly on every input, cost no header byte at its defaults, and leave version 3's bytes
and headers as they were."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from test_level3 import SETTINGS, round_trip, signals
from test_level3_v3 import rescaled

from ubpe import level3
from ubpe._kernels import mixsignal
from ubpe.errors import CorruptDataError
from ubpe.planner import configured


@pytest.fixture(scope="module", autouse=True)
def _version_4():
    """These tests specify version 4 (version 5 is written by default: tests/test_level3_v5.py)."""
    with configured(level3_version=4):
        yield


def params(channels: int, **change) -> list[int]:
    return level3.format._vector(dict(level3.DEFAULTS, **change), channels)


@SETTINGS
@given(signals(), st.sampled_from([dict(), dict(bias=1), dict(p3=6, t4=8, k3=2), dict(fmix=1, t3=6),
                                   dict(mixmu=0, n3=0), dict(vmod=1)]))
def test_round_trip_with_the_blended_mix(x, change):
    """Every integer width, constant, alternating, full-scale and grid signals, 0 to 300 frames,
    1 to 8 channels, the blend with and without the bias estimates, the third least-squares
    predictor, the least-squares mix and the value model."""
    channels = x.shape[1] if x.ndim == 2 else 1
    prm = params(channels, **change)
    assert prm[mixsignal.PRM_MIXB] == 1
    data = round_trip(x, params=prm, front=None)
    assert data[0] == 4


def test_version_4_defaults_are_its_base_and_change_the_bytes():
    x = rescaled(3000)
    new = round_trip(x, params=level3.default_params(1), front=None)
    assert level3.default_params(1) == level3.base_params(1, 4)
    with configured(level3_version=3):
        old = round_trip(x, params=level3.default_params(1), front=None)
        assert level3.default_params(1)[mixsignal.PRM_MIXB] == 0
        assert level3.default_params(1)[mixsignal.PRM_BIAS] == 1
    assert new[0] == 4 and old[0] == 3
    # each at its version's base: the same header but the version byte, the payloads differ
    assert new[1:10] == old[1:10] and new[20:] != old[20:]


def test_version_3_cannot_hold_the_blended_mix():
    x = rescaled(500)
    prm = params(1)
    with configured(level3_version=3):
        with pytest.raises(ValueError, match="version 4"):
            level3.encode(x, params=prm, front=None)


def test_a_version_3_mask_with_the_blended_mix_is_refused():
    x = np.arange(100, dtype=np.int16) % 7
    with configured(level3_version=3):
        data = level3.encode(x, params=level3.default_params(1), front=None)
    at = 11  # the mask (see test_level3_v2.test_a_mask_beyond_the_parameters_is_refused)
    assert data[at] == 0
    mask = 1 << mixsignal.PRM_MIXB
    enc = bytearray()
    while mask >= 0x80:
        enc.append(0x80 | (mask & 0x7F))
        mask >>= 7
    enc.append(mask)
    with pytest.raises(CorruptDataError, match="parameter mask"):
        level3.decode(data[:at] + bytes(enc) + bytes([1]) + data[at + 1:])
    # the same field in a version-4 header reads (mixb 0 differs from version 4's base)
    four = bytes([4]) + data[1:at] + bytes(enc) + bytes([0]) + data[at + 1:]
    with pytest.raises(CorruptDataError):  # parsed, the payload then fails its check
        level3.decode(four)
