"""Version 5 of the level-3 bytes (``ubpe.level3``): the NLMS cascade's tap weights in Q20 with
every update rounded to nearest (``nlmsq``, on by default); it must decode exactly on every
input, cost no header byte at its defaults, leave version 4's bytes as they were, and its
weight update must be the rounded one of the reference."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from reference_level3 import nlms_step_q20
from test_level3 import SETTINGS, round_trip, signals
from test_level3_v3 import rescaled

from ubpe import level3
from ubpe._kernels import mixsignal
from ubpe.errors import CorruptDataError
from ubpe.planner import configured


def params(channels: int, **change) -> list[int]:
    return level3.format._vector(dict(level3.DEFAULTS, **change), channels)


@SETTINGS
@given(signals(), st.sampled_from([dict(), dict(mixb=0, bias=1), dict(p3=6, t4=8, k3=2), dict(fmix=1, t3=6),
                                   dict(n1=2048, mu1=4096, powr=1), dict(mixmu=0, n3=0), dict(vmod=1)]))
def test_round_trip_with_rounded_nlms_weights(x, change):
    """Every integer width, constant, alternating, full-scale and grid signals, 0 to 300 frames,
    1 to 8 channels, with version 4's mix and bias estimates, the third least-squares
    predictor, the least-squares mix, the longest NLMS stage at its largest step, no mixer
    and the value model."""
    channels = x.shape[1] if x.ndim == 2 else 1
    prm = params(channels, **change)
    assert prm[mixsignal.PRM_NLMSQ] == 1
    data = round_trip(x, params=prm, front=None)
    assert data[0] == 5


def test_full_scale_steps_round_trip():
    """The weights' clamp (+-2**27) and the stage inputs' (+-2**22) reached: full-scale int64
    alternation under the largest steps."""
    x = np.where(np.arange(2000) % 3 == 0, np.iinfo(np.int64).max, np.iinfo(np.int64).min).astype(np.int64)
    data = round_trip(x, params=params(1, mu1=4096, mu2=4096, mu3=4096, powr=0), front=None)
    assert data[0] == 5


def test_version_5_defaults_are_its_base_and_change_the_bytes():
    x = rescaled(3000)
    new = round_trip(x, params=level3.default_params(1), front=None)
    assert level3.default_params(1) == level3.base_params(1, 5)
    with configured(level3_version=4):
        old = round_trip(x, params=level3.default_params(1), front=None)
        assert level3.default_params(1)[mixsignal.PRM_NLMSQ] == 0
    assert new[0] == 5 and old[0] == 4
    # each at its version's base: the same header but the version byte, the payloads differ
    assert new[1:10] == old[1:10] and new[20:] != old[20:]


def test_rounded_weights_code_a_tone_smaller():
    """A sustained tone in noise: its NLMS stages take many small steps, where floored updates
    drift (the reason for version 5)."""
    rng = np.random.default_rng(5)
    t = np.arange(20000)
    x = (2000 * np.sin(t * 0.0731) + 900 * np.sin(t * 0.2193 + 1) + rng.normal(0, 30, t.size)).astype(np.int16)
    new = len(level3.encode(x, params=params(1), front=None))
    old = len(level3.encode(x, params=params(1, nlmsq=0), front=None))
    assert new < old


def test_version_4_cannot_hold_rounded_weights():
    x = rescaled(500)
    prm = params(1)  # (version 5's vector: nlmsq = 1)
    with configured(level3_version=4):
        with pytest.raises(ValueError, match="version 5"):
            level3.encode(x, params=prm, front=None)


def _uleb(v: int) -> bytes:
    out = bytearray()
    while v >= 0x80:
        out.append(0x80 | (v & 0x7F))
        v >>= 7
    out.append(v)
    return bytes(out)


def test_a_version_4_mask_with_rounded_weights_is_refused():
    x = np.arange(100, dtype=np.int16) % 7
    with configured(level3_version=4):
        data = level3.encode(x, params=level3.default_params(1), front=None)
    at = 11  # the mask (see test_level3_v2.test_a_mask_beyond_the_parameters_is_refused)
    assert data[at] == 0
    enc = _uleb(1 << mixsignal.PRM_NLMSQ)
    with pytest.raises(CorruptDataError, match="parameter mask"):
        level3.decode(data[:at] + enc + bytes([1]) + data[at + 1:])
    # the same field in a version-5 header reads (nlmsq 0 differs from version 5's base): the
    # version-4 payload, decoded exactly
    five = bytes([5]) + data[1:at] + enc + bytes([0]) + data[at + 1:]
    with pytest.raises(CorruptDataError):  # (the check bits are seeded with the header's CRC)
        level3.decode(five)


def test_old_versions_still_decode():
    x = rescaled(2000)
    for version in (1, 2, 3, 4):
        with configured(level3_version=version):
            data = round_trip(x)
        assert data[0] == version
        assert np.array_equal(level3.decode(data), x)  # decoded under version 5's settings


@SETTINGS
@given(st.lists(st.integers(-(1 << 27), 1 << 27), min_size=1, max_size=40),
       st.integers(-(1 << 31), 1 << 31), st.data())
def test_the_weight_update_is_the_reference(w, f, data):
    h = data.draw(st.lists(st.integers(-(1 << 22), 1 << 22), min_size=len(w), max_size=len(w)))
    got = np.array(w, np.int32)
    mixsignal._nlms_step_q20(got, np.array(h, np.int32), len(w), np.int64(f))
    assert got.tolist() == nlms_step_q20(w, h, f)
