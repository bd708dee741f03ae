"""Version 3 of the level-3 bytes (``ubpe.level3``): the value model (``vmod``: the distribution
of the next value as the residuals' histogram times each symbol's learned weight, its
probabilities mixed with the coder's), which must decode exactly on every input, be chosen where
neighbouring values' counts are uneven (a rescaled grid), and leave version 2's bytes as they were."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given
from test_level3 import SETTINGS, round_trip, signals

from ubpe import level3
from ubpe._kernels import mixsignal
from ubpe.errors import CorruptDataError
from ubpe.planner import configured


def vmod_params(channels: int, **change) -> list[int]:
    return level3.format._vector(dict(level3.DEFAULTS, vmod=1, **change), channels)


def rescaled(frames: int = 12000) -> np.ndarray:
    """An AR(2) resonance in integers, rescaled by 3/4 and rounded: every third or fourth value
    of the grid is hit by two integers, the others by one."""
    rng = np.random.default_rng(2029)
    e = rng.normal(0, 6, frames)
    a = np.zeros(frames)
    for t in range(2, frames):
        a[t] = 1.2 * a[t - 1] - 0.5 * a[t - 2] + e[t]
    return np.round(np.round(a) * 0.75).astype(np.int16)


@SETTINGS
@given(signals())
def test_round_trip_with_the_value_model(x):
    """Every integer width, constant, alternating, full-scale and grid signals, 0 to 300 frames,
    1 to 8 channels; the model is dropped (vmod 0 in the header) on ranges above VM_MAX_RANGE."""
    channels = x.shape[1] if x.ndim == 2 else 1
    data = round_trip(x, params=vmod_params(channels), front=None)
    assert data[0] == 5  # (version 6 is written only with its exact-value contexts on)


def test_the_value_model_round_trips_a_long_narrow_signal_with_outliers():
    x = rescaled(5000)
    x[::97] = 1500  # residuals beyond the model's window (VM_E)
    x[1::89] = -1500
    round_trip(x, params=vmod_params(1), front=None)
    round_trip(np.stack([x, x[::-1]], 1), params=vmod_params(2, cross=1), front=None)


def test_the_value_model_is_chosen_where_neighbouring_values_are_uneven():
    x = rescaled()
    on = round_trip(x)
    with configured(level3_vmod_sample=0):
        off = round_trip(x)
    assert len(on) < len(off) * 0.99


def test_version_2_writes_its_own_bytes_and_cannot_hold_the_value_model():
    x = rescaled(3000)
    with configured(level3_version=2):
        data = round_trip(x, params=level3.default_params(1), front=None)
        assert data[0] == 2
        with pytest.raises(ValueError, match="version 3"):
            level3.encode(x, params=vmod_params(1), front=None)
    # version 3 with the model off: the same payload as version 2 (its defaults)
    with configured(level3_version=3):
        new = round_trip(x, params=level3.default_params(1), front=None)
    assert new[0] == 3 and len(new) == len(data) and new[-200:-8] == data[-200:-8]


def test_a_version_2_mask_with_the_value_model_is_refused():
    x = np.arange(100, dtype=np.int16) % 7
    with configured(level3_version=2):
        data = level3.encode(x, params=level3.default_params(1), front=None)
    at = 11  # the mask (see test_level3_v2.test_a_mask_beyond_the_parameters_is_refused)
    assert data[at] == 0
    mask = 1 << mixsignal.PRM_VMOD
    enc = bytearray()
    while mask >= 0x80:
        enc.append(0x80 | (mask & 0x7F))
        mask >>= 7
    enc.append(mask)
    with pytest.raises(CorruptDataError, match="parameter mask"):
        level3.decode(data[:at] + bytes(enc) + bytes([1]) + data[at + 1:])


def test_the_value_model_on_a_wide_range_is_refused():
    wide = (np.arange(300) * 37 % 9000).astype(np.int16)
    data = level3.encode(wide, params=vmod_params(1), front=None)
    assert data == level3.encode(wide, params=level3.default_params(1), front=None)  # the model dropped
    np.testing.assert_array_equal(level3.decode(data), wide)
    narrow = (np.arange(300) * 37 % 900).astype(np.int16)
    good = level3.encode(narrow, params=vmod_params(1), front=None)
    # the header's channel range field (2 bytes before the mask 1 << PRM_VMOD and the value 1:
    # 891) rewritten as 8 999
    at = good.index(bytes([0x80, 0x80, 0x80, 0x80, 0x01, 0x01])) - 2
    assert good[at:at + 2] == bytes([0xFB, 0x06])
    bad = good[:at] + bytes([0xA7, 0x46]) + good[at + 2:]
    with pytest.raises(CorruptDataError, match="value model"):
        level3.decode(bad)


def test_same_bytes_in_another_process(tmp_path):
    x = rescaled(3000)
    np.save(tmp_path / "x.npy", x)
    prm = vmod_params(1)
    code = ("import numpy as np; from ubpe import level3\n"
            f"print(level3.encode(np.load({str(tmp_path / 'x.npy')!r}), params={prm}, front=None).hex())")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600, check=True)
    assert out.stdout.strip() == level3.encode(x, params=prm, front=None).hex()


def test_compiled_kernel_equals_its_plain_python_run(tmp_path):
    """The kernel run as plain Python (NUMBA_DISABLE_JIT: Python integers, which never wrap)
    writes the same bytes: no int64 product in it overflows on these inputs, with the mixer of
    the least-squares predictors (fmix), with version 2's added model (a third least-squares
    predictor, the APMs' rate, the level context), and with version 3's value model on a narrow
    signal of two channels with outliers beyond the model's window. One plain-Python process for
    all three: most of its time is the coder's prior, computed once."""
    from common import json_without_jit

    rng = np.random.default_rng(11)
    x = (np.cumsum(rng.integers(-300, 301, (120, 2)), axis=0) * 3).astype(np.int32)
    y = (np.cumsum(np.random.default_rng(17).integers(-300, 301, (150, 2)), axis=0) * 3).astype(np.int32)
    z = np.stack([rescaled(400), rescaled(400)[::-1] // 2], 1)
    z[::37, 0] = 1200
    base = dict(level3.DEFAULTS, p1=6, n1=16, n2=8, n3=4, p2=3, t1=6, t2=4, k1=4)
    prm_x = level3.format._vector(dict(base, fmix=1, t3=5), 2)
    prm_y = level3.format._vector(dict(base, p3=12, t4=12, k3=4, apmr=7, lvl=1), 2)
    prm_z = vmod_params(2, p1=6, n1=16, n2=8, n3=4, p2=3, t1=6, t2=4, k1=4)
    for name, a in (("x", x), ("y", y), ("z", z)):
        np.save(tmp_path / f"{name}.npy", a)
    code = ("import json, numpy as np; from ubpe import level3\n"
            + "".join(f"{n} = np.load({str(tmp_path / (n + '.npy'))!r})\n" for n in "xyz")
            + f"print(json.dumps([level3.encode(x, params={prm_x}).hex(), "
            f"level3.encode(y, params={prm_y}, front=None).hex(), "
            f"level3.encode(z, params={prm_z}, front=None).hex()]))")
    expected = [level3.encode(x, params=prm_x), level3.encode(y, params=prm_y, front=None),
                level3.encode(z, params=prm_z, front=None)]
    off = level3.encode(z, params=prm_z[:mixsignal.PRM_VMOD] + [0] + prm_z[mixsignal.PRM_VMOD + 1:], front=None)
    assert expected[2][0] == 5 and prm_z[mixsignal.PRM_MIXB] == 1 and len(expected[2]) != len(off)  # the value model on
    assert json_without_jit(code, tmp_path) == [e.hex() for e in expected]
