"""Version 2 of the level-3 bytes (``ubpe.level3``): the parameter field as a mask against
``BASE_PARAMS``, and the model parameters it adds (a third least-squares predictor ``p3``/``t4``/
``k3``, the APMs' rate ``apmr``, the level context and bias ``lvl``), which must decode exactly on
every input, give the same bytes in every process, and leave version 1's bytes decodable."""

from __future__ import annotations

import hashlib
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from test_level3 import SETTINGS, round_trip, same, signals

from ubpe import level3
from ubpe._kernels import mixsignal
from ubpe.errors import CorruptDataError
from ubpe.planner import configured



@pytest.fixture(autouse=True, scope="module")
def version_2():
    """These tests write version 2's bytes (``Settings.level3_version``; version 3:
    tests/test_level3_v3.py)."""
    with configured(level3_version=2):
        yield


#: version 2's model parameters all on (each within its bounds)
ADDED = dict(p3=12, t4=12, k3=4, apmr=7, lvl=1)


def added_params(channels: int, **change) -> list[int]:
    return level3.format._vector(dict(level3.DEFAULTS, **dict(ADDED, **change)), channels)


def uleb(v: int) -> bytes:
    out = bytearray()
    while v >= 0x80:
        out.append(0x80 | (v & 0x7F))
        v >>= 7
    return bytes(out + bytes([v]))


def channels_of(x: np.ndarray) -> int:
    return x.shape[1] if x.ndim == 2 else 1


@SETTINGS
@given(signals(), st.integers(1, 32), st.integers(0, 27), st.integers(1, 64), st.integers(6, 8), st.integers(0, 1))
def test_round_trip_with_the_added_model_parameters(x, p3, t4, k3, apmr, lvl):
    """Every integer width, constant, alternating, full-scale and grid signals, 0 to 300 frames
    (blocks of one frame included), 1 to 8 channels."""
    data = round_trip(x, params=added_params(channels_of(x), p3=p3, t4=t4, k3=k3, apmr=apmr, lvl=lvl), front=None)
    assert data[0] == 2


@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32, np.int64, np.uint64])
def test_full_scale_alternation_and_one_frame_round_trip(dtype):
    info = np.iinfo(dtype)
    x = np.array([info.min, info.max] * 50, dtype=dtype)
    for signal in (x, x[:1], np.stack([x, x[::-1], np.full_like(x, info.max)], 1)):
        round_trip(signal, params=added_params(channels_of(signal)), front=None)


def test_version_2_stores_default_parameters_in_one_byte():
    rng = np.random.default_rng(5)
    x = np.cumsum(rng.integers(-40, 41, 3000)).astype(np.int16)
    prm = level3.default_params(1)
    assert prm == level3.base_params(1)
    new = round_trip(x, params=prm, front=None)
    with configured(level3_version=1):
        old = round_trip(x, params=prm, front=None)
    assert old[0] == 1 and new[0] == 2
    # the same payload: version 2 adds model parameters but its defaults code as version 1
    assert len(old) - len(new) == mixsignal.N_PRM_V1 + 5 - 1  # 23 LEB128 parameters (5 of 2 bytes) -> a mask
    assert old[-200:-8] == new[-200:-8]  # (the check bits at the end cover the header)


def test_version_1_cannot_hold_the_added_parameters():
    x = np.arange(100, dtype=np.int16)
    with configured(level3_version=1), pytest.raises(ValueError, match="version 2"):
        level3.encode(x, params=added_params(1), front=None)


def test_a_changed_parameter_marked_with_its_base_value_is_refused():
    x = np.arange(100, dtype=np.int16) % 7
    data = level3.encode(x, params=level3.default_params(1), front=None)
    base = level3.base_params(1)
    good = level3.encode(x, params=level3.format._vector(dict(level3.DEFAULTS, p2=9), 1), front=None)
    # the field in ``good``: mask (bit PRM_P2) then 9; rewrite 9 as the base value 8
    at = good.index(bytes([1 << mixsignal.PRM_P2, 9]))
    bad = good[:at + 1] + bytes([base[mixsignal.PRM_P2]]) + good[at + 2:]
    with pytest.raises(CorruptDataError, match="base value"):
        level3.decode(bad)
    same(level3.decode(data), x)


def test_a_mask_beyond_the_parameters_is_refused():
    x = np.arange(100, dtype=np.int16) % 7
    data = level3.encode(x, params=level3.default_params(1), front=None)
    # version, dtype, ndim, frames, mode, lo, step, table size, gs, the channel's low and range
    at = 11
    assert data[at] == 0
    with pytest.raises(CorruptDataError, match="corrupt payload"):  # p1 = 8 instead: the field is here
        level3.decode(data[:at] + bytes([1 << mixsignal.PRM_P1, 8]) + data[at + 1:])
    for mask in (1 << mixsignal.N_PRM, (1 << (mixsignal.N_PRM + 3)) - 1):
        enc = uleb(mask)
        with pytest.raises(CorruptDataError, match="parameter mask"):
            level3.decode(data[:at] + enc + data[at + 1:])


#: ``level3.encode`` of frozen_input() with added_params(2): frozen; a change to the model's
#: arithmetic that alters these bytes must become a new version, not an edit of this digest
FROZEN_DIGEST = "e56b63bb43d11bb910804536622ce9c0da46564b998e158e8cdc4286f42f07f5"


def frozen_input() -> np.ndarray:
    t = np.arange(1500)
    a = (900 * np.sin(t / 23.0) + 40 * np.sin(t / 3.1) + (t * 7919 % 61) - 30).astype(np.int64)
    return np.stack([a, (a * 3) // 4 + (t * 104729 % 17)], 1).astype(np.int16)


def test_frozen_bytes_of_the_added_model():
    x = frozen_input()
    data = round_trip(x, params=added_params(2), front=None)
    assert hashlib.sha256(data).hexdigest() == FROZEN_DIGEST


def test_same_bytes_in_another_process(tmp_path):
    """Integer arithmetic only: another process (a fresh numba cache load) writes the same bytes
    (the kernel run as plain Python: tests/test_level3.py, test_compiled_kernel_equals_its_plain_python_run)."""
    rng = np.random.default_rng(17)
    x = (np.cumsum(rng.integers(-300, 301, (150, 2)), axis=0) * 3).astype(np.int32)
    prm = level3.format._vector(dict(level3.DEFAULTS, p1=6, n1=16, n2=8, n3=4, p2=3, t1=6, t2=4, k1=4, **ADDED), 2)
    np.save(tmp_path / "x.npy", x)
    code = ("import json, numpy as np; from ubpe import level3; from ubpe.planner import configured\n"
            f"x = np.load({str(tmp_path / 'x.npy')!r})\n"
            "with configured(level3_version=2):\n"
            f"    print(json.dumps(level3.encode(x, params={prm}, front=None).hex()))")
    expected = level3.encode(x, params=prm, front=None).hex()
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600, check=True)
    assert out.stdout.strip().strip('"') == expected
