"""Spec tests for level 3 (``ubpe.level3``): lossless round trips of every integer width and
shape, the parameter search, the value table, the least-squares solve against a float
reference, bad arguments, corrupt and truncated bytes, determinism across processes."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from reference_level3 import golomb_bytes, least_squares

from ubpe import level3
from ubpe._kernels import mixsignal
from ubpe.errors import CorruptDataError

SETTINGS = settings(deadline=None, max_examples=int(os.environ.get("UBPE_MAX_EXAMPLES", "100")) // 2 or 1,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
DTYPES = [np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32, np.int64, np.uint64]


def same(got: np.ndarray, expected: np.ndarray) -> None:
    assert got.dtype == expected.dtype and got.shape == expected.shape
    assert np.array_equal(got, expected)


def round_trip(x: np.ndarray, **kwargs) -> bytes:
    data = level3.encode(x, **kwargs)
    same(level3.decode(data), x)
    return data


@st.composite
def signals(draw):
    """(frames,) or (frames, channels) arrays of every integer dtype: random walks, noise,
    constants, alternations and full-scale jumps; 0 to 300 frames, 1 to 8 channels."""
    dtype = np.dtype(draw(st.sampled_from(DTYPES)))
    info = np.iinfo(dtype)
    frames = draw(st.sampled_from([0, 1, 2, 3, 17, draw(st.integers(0, 300))]))
    channels = draw(st.integers(1, 8))
    two_d = channels > 1 or draw(st.booleans())
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    kind = draw(st.sampled_from(["walk", "noise", "constant", "alternate", "extremes", "grid"]))
    shape = (frames, channels)
    lo, hi = int(info.min), int(info.max)
    mid = (lo + hi) // 2
    if kind == "walk":
        step = draw(st.integers(1, 1 << min(20, dtype.itemsize * 8 - 2)))
        v = np.cumsum(rng.integers(-step, step + 1, shape), axis=0).astype(object) + mid
    elif kind == "noise":
        v = rng.integers(lo, hi, shape, endpoint=True, dtype=dtype).astype(object)
    elif kind == "constant":
        v = np.full(shape, draw(st.integers(lo, hi)), dtype=object)
    elif kind == "alternate":
        v = np.where(np.arange(frames)[:, None] % 2 == 0, 0, 1).astype(object) * (hi - lo) + lo + np.zeros(shape, int)
    elif kind == "extremes":
        v = rng.choice(np.array([lo, hi, max(lo, 0), mid], dtype=object), shape)
    else:  # values on a scaled grid (k * 64.3): the value table
        k = np.cumsum(rng.integers(-3, 4, shape), axis=0).astype(object)
        v = (k * 643) // 10 + mid
    v = np.asarray(v, dtype=object).reshape(shape)
    x = np.array([[min(max(int(e), lo), hi) for e in row] for row in v], dtype=object).reshape(shape).astype(dtype)
    return x if two_d else x[:, 0]


@SETTINGS
@given(signals())
def test_round_trip(x):
    data = round_trip(x)
    # version 6 with the exact-value contexts on (values that recur), else version 5's bytes
    assert data[0] in (5, level3.VERSION)


@SETTINGS
@given(signals(), st.integers(0, 2**16))
def test_round_trip_any_valid_parameters(x, seed):
    """Every parameter vector within the bounds decodes exactly (the search only picks one)."""
    rng = np.random.default_rng(seed)
    prm = [int(rng.integers(lo, hi + 1)) for lo, hi in mixsignal.PRM_BOUNDS]
    prm[mixsignal.PRM_LPC] = 0 if x.size == 0 else prm[mixsignal.PRM_LPC]
    lags = prm[mixsignal.PRM_XLAGS] or 2  # (values of each neighbour: version 10's xlags, else two)
    prm[mixsignal.PRM_P1] = max(0, min(prm[mixsignal.PRM_P1], mixsignal.MAX_DIM - lags * prm[mixsignal.PRM_CROSS]))
    if prm[mixsignal.PRM_P1] + lags * prm[mixsignal.PRM_CROSS] > mixsignal.MAX_DIM:
        prm[mixsignal.PRM_XLAGS] = 0
    prm[mixsignal.PRM_VCLS] *= prm[mixsignal.PRM_VMOD]  # (code classes need the value model: version 9)
    round_trip(x, params=prm)


@pytest.mark.parametrize("lags", [0, 16])
def test_the_widest_inputs_vector_round_trips(lags):
    """p1 = 64 own values and cross = 4 neighbours a side (each two lags): the neighbour loop
    fills p1 + 4 * cross = 80 inputs; and 16 values of 4 neighbours a side (version 10's xlags,
    p1 8): 8 + 2 * 16 * 4 = 136 = INPUT_SLOTS (the CI's bounds-checked pass catches a shorter
    vector)."""
    rng = np.random.default_rng(3)
    x = np.cumsum(rng.integers(-3, 4, (300, 9)), axis=0).astype(np.int16)
    prm = [int(rng.integers(lo, hi + 1)) for lo, hi in mixsignal.PRM_BOUNDS]
    prm[mixsignal.PRM_P1], prm[mixsignal.PRM_CROSS] = mixsignal.MAX_DIM - (lags or 2) * 4, 4
    prm[mixsignal.PRM_XLAGS] = lags
    prm[mixsignal.PRM_VCLS] *= prm[mixsignal.PRM_VMOD]  # (code classes need the value model: version 9)
    round_trip(x, params=prm)


@pytest.mark.parametrize("dtype", DTYPES)
def test_round_trip_full_scale_and_short(dtype):
    info = np.iinfo(dtype)
    for x in (np.array([], dtype), np.array([info.max], dtype), np.array([info.min, info.max] * 9, dtype),
              np.full((5, 3), info.min, dtype), np.array([[info.min, info.max], [info.max, info.min]], dtype)):
        round_trip(x)


def test_a_real_signal_beats_its_raw_size_and_the_search_never_hurts_much():
    t = np.arange(20000)
    rng = np.random.default_rng(7)
    x = (3000 * np.sin(t / 9.0) + 800 * np.sin(t / 2.3) + rng.normal(0, 4, t.size)).astype(np.int16)
    searched = round_trip(x)
    plain = round_trip(x, search=False)
    assert len(searched) < x.nbytes / 3
    assert len(searched) <= len(plain) * 1.01


def test_channels_are_predicted_from_each_other():
    """Two channels that differ by small noise cost little more than one."""
    rng = np.random.default_rng(3)
    a = np.cumsum(rng.integers(-40, 41, 30000)).astype(np.int32)
    b = a + rng.integers(-2, 3, a.size)
    one = len(level3.encode(a))
    two = len(round_trip(np.stack([a, b], axis=1).astype(np.int32)))
    assert two < one * 1.6


def test_sparse_values_use_the_table():
    """Values on a grid that is not exactly regular (round(k * 64.3)) code about as small as k."""
    rng = np.random.default_rng(5)
    k = np.cumsum(rng.integers(-2, 3, 40000))
    grid = np.round(k * 64.3).astype(np.int32)
    assert len(round_trip(grid, search=False)) < len(level3.encode(k.astype(np.int32), search=False)) * 1.02
    round_trip(grid)


# ------------------------------------------------------------------ components against references


@pytest.mark.parametrize("k", [0, 1, 3, 7])
def test_golomb_pack_matches_reference(k):
    values = [0, 1, 5, 2, 40, 3, 0, 200, 1 << 30][: 3 + k]
    out = np.zeros(64, np.uint8)
    used = mixsignal.golomb_pack(np.array(values, np.int64), k, out)
    assert out[:used].tobytes() == golomb_bytes(values, k)
    back = np.zeros(len(values), np.int64)
    assert mixsignal.golomb_unpack(out[:used], 0, len(values), k, 1 << 40, back) == used
    assert back.tolist() == values


@pytest.mark.parametrize("seed", range(6))
def test_integer_least_squares_matches_float_solution(seed):
    rng = np.random.default_rng(seed)
    dim = int(rng.integers(1, 24))
    X = rng.normal(0, 1000, (400, dim)) @ rng.normal(0, 1, (dim, dim))
    w_true = rng.normal(0, 0.5, dim)
    y = X @ w_true + rng.normal(0, 1, 400)
    R = np.zeros(dim * dim, np.int64)  # row-major, the lower triangle read
    full = np.round(X.T @ X).astype(np.int64)
    for i in range(dim):
        R[i * dim:i * dim + i + 1] = full[i, :i + 1]
    b = np.round(X.T @ y).astype(np.int64)
    w = np.zeros(dim, np.int64)
    work = [np.zeros(mixsignal.MAX_DIM ** 2 + mixsignal.MAX_DIM, np.int64), np.zeros(mixsignal.MAX_DIM ** 2, np.int64),
            np.zeros(mixsignal.MAX_DIM, np.int64), np.zeros(mixsignal.MAX_DIM, np.int64)]
    mixsignal._ols_solve(R, b, dim, 16, w, *work)
    expected = least_squares(full, b[:dim], 16)
    got = w[:dim] / 2.0 ** 24
    assert np.max(np.abs(X @ got - X @ expected)) <= 1e-3 * np.max(np.abs(X @ expected)) + 0.05


# ------------------------------------------------------------------ bad arguments and bad bytes


def test_bad_arguments():
    with pytest.raises(TypeError):
        level3.encode(np.zeros(4, np.float32))
    with pytest.raises(TypeError):
        level3.encode(np.zeros(4, bool))
    with pytest.raises(ValueError):
        level3.encode(np.zeros((2, 2, 2), np.int16))
    with pytest.raises(ValueError):
        level3.encode(np.zeros(4, np.int16), params=[0] * 3)
    bad = level3.default_params(1)
    bad[mixsignal.PRM_P1] = 99
    with pytest.raises(ValueError):
        level3.encode(np.zeros(4, np.int16), params=bad)
    with pytest.raises(TypeError):
        level3.decode("not bytes")


def _sample() -> tuple[np.ndarray, bytes]:
    rng = np.random.default_rng(2)
    x = np.cumsum(rng.integers(-50, 51, (600, 2)), axis=0).astype(np.int16)
    return x, level3.encode(x)


def test_truncated_bytes_raise():
    _, data = _sample()
    for cut in range(len(data)):
        with pytest.raises(CorruptDataError):
            level3.decode(data[:cut])


def test_corrupt_bytes_raise_or_never_crash():
    """A changed byte in the header or the payload is refused (the payload's check bits and exact
    length catch what the model decodes to valid-looking values)."""
    x, data = _sample()
    rng = np.random.default_rng(9)
    for pos in list(range(min(len(data), 60))) + list(rng.integers(0, len(data), 60)):
        for delta in (1, 0x80):
            bad = bytearray(data)
            bad[pos] ^= delta
            with pytest.raises(CorruptDataError):
                level3.decode(bytes(bad))
    with pytest.raises(CorruptDataError):
        level3.decode(data + b"\x00")


def test_size_cap():
    x = np.zeros(1000, np.int16)
    data = level3.encode(x)
    same(level3.decode(data, max_values=1000), x)
    with pytest.raises(CorruptDataError):
        level3.decode(data, max_values=999)


def test_same_bytes_from_two_processes(tmp_path):
    x, data = _sample()
    np.save(tmp_path / "x.npy", x)
    code = ("import hashlib, numpy as np; from ubpe import level3; "
            f"print(hashlib.sha256(level3.encode(np.load({str(tmp_path / 'x.npy')!r}))).hexdigest())")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600, check=True)
    assert out.stdout.strip() == hashlib.sha256(data).hexdigest()
