"""Front-end chains (ubpe.frontend): stages, the (channels, frames) layout, untrusted chains."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import ubpe
from chain_containers import compress_chain
from common import assert_same_array, check_roundtrip, pack_any, unpack_any
from ubpe import frontend
from ubpe.errors import CorruptDataError
from ubpe.frontend.delta import DeltaStage
from ubpe.signal import delta


def walk(n, seed=0, channels=None):
    rng = np.random.default_rng(seed)
    shape = (n,) if channels is None else (n, channels)
    return np.cumsum(rng.integers(-30, 31, shape), axis=0).astype(np.int16)


# ============================================================================ layout


@pytest.mark.parametrize("shape", [(), (0,), (5,), (0, 3), (3, 0), (2, 5), (7, 3, 2), (1, 100), (100, 1), (4, 0, 2)])
def test_layout_round_trips(shape):
    x = np.arange(int(np.prod(shape)), dtype=np.int32).reshape(shape)
    y = frontend.to_channels(x)
    assert y.ndim == 2 and y.flags.c_contiguous
    if x.ndim >= 2:
        assert y.shape == (int(np.prod(shape[1:])), shape[0])
        if x.size:
            assert np.array_equal(y[:, 0], x[0].reshape(-1))  # row c is channel c over time
    else:
        assert y.shape[0] == 1
    assert_same_array(frontend.from_channels(y, shape), x)


def test_layout_native_byte_order():
    x = np.arange(12, dtype=">i4").reshape(4, 3)
    y = frontend.to_channels(x)
    assert y.dtype == np.dtype("<i4") and np.array_equal(y, x.astype("<i4").T)


# ============================================================================ stages


def test_delta_stage_per_channel():
    x = frontend.to_channels(walk(200, seed=1, channels=3))
    y, params = DeltaStage(2).forward(x)
    assert params == {"order": 2} and y.dtype == np.int16
    for c in range(3):
        assert np.array_equal(y[c], delta(x[c], 2))  # each channel on its own
    assert_same_array(DeltaStage().inverse(y, params), x)


@given(st.sampled_from(["i1", "u1", "<i2", ">u2", "<i8", "<u8"]).flatmap(
    lambda dt: hnp.arrays(np.dtype(dt), hnp.array_shapes(min_dims=2, max_dims=2, min_side=0, max_side=6))),
    st.integers(1, DeltaStage.MAX_ORDER))
def test_delta_chain_inverts_exactly(x, k):
    """Any values (extremes included), any order: the chain inverts bit-exactly per channel."""
    native = x.dtype.newbyteorder("=")
    xn = np.ascontiguousarray(x, dtype=native)
    y, record = frontend.forward(xn, [DeltaStage(k)])
    assert record == [{"stage": "delta", "order": k}]
    back = frontend.inverse(y, frontend.parse_chain(record, native, xn.shape), native)
    assert_same_array(back, xn)


def test_stage_arguments():
    with pytest.raises(ValueError, match="order"):
        DeltaStage(0)
    with pytest.raises(TypeError, match="order"):
        DeltaStage(1.0)
    with pytest.raises(ValueError, match="unknown front-end stage"):
        frontend.stage("no-such-stage")
    assert isinstance(frontend.stage("delta", order=3), DeltaStage)
    with pytest.raises(ValueError, match="already registered"):
        frontend.register(DeltaStage)


@pytest.mark.parametrize("front, dtype, match", [
    ({}, "<i2", "list"),
    ([1], "<i2", "stage"),
    ([{"stage": "delta", "order": 1}], "|b1", "not defined"),
    ([{"stage": "delta", "order": 1}], "<f8", "floating"),
    ([], "<f4", "quantiz"),
    ([{"stage": "nope"}], "<i2", "not defined"),
    ([{"stage": "delta", "order": 1}] * (frontend.MAX_STAGES + 1), "<i2", "at most"),
])
def test_parse_chain_refuses(front, dtype, match):
    with pytest.raises(CorruptDataError, match=match):
        frontend.parse_chain(front, np.dtype(dtype), (2, 10))


# ============================================================================ a new stage


class _Offset(frontend.Stage):
    """A test stage with per-channel parameters and a wider output dtype: x - min(x) per channel,
    as int32 (from int16)."""

    name = "test-offset"

    def forward(self, x):
        lo = x.min(axis=1).astype(np.int64) if x.shape[1] else np.zeros(x.shape[0], np.int64)
        return (x.astype(np.int32) - lo[:, None].astype(np.int32)), {"lo": [int(v) for v in lo]}

    def inverse(self, y, params):
        return (y + np.asarray(params["lo"], np.int32)[:, None]).astype(np.int16)

    def check(self, params, dtype, shape):
        lo = params.get("lo")
        if set(params) != {"lo"} or not isinstance(lo, list) or not all(type(v) is int for v in lo):
            raise CorruptDataError("front: test-offset: 'lo' must be a list of ints")
        if len(lo) != shape[0]:
            raise CorruptDataError("front: test-offset: one 'lo' per channel")
        if np.dtype(dtype) != np.int16:
            raise CorruptDataError("front: test-offset takes int16")
        return params

    def output_dtype(self, dtype, params):
        return np.dtype(np.int32)


def test_a_registered_stage_needs_no_container_or_planner_edit(monkeypatch):
    """Writing a stage and registering it is all: the planner measures it as a chain, the
    container records it, and decompress validates and inverts it."""
    monkeypatch.setitem(frontend.STAGES, _Offset.name, _Offset)  # registered for this test only
    x = walk(300, seed=5, channels=2)
    data = compress_chain(x, [_Offset()])
    info = ubpe.describe(data)
    assert info.front[0]["stage"] == "test-offset" and len(info.front[0]["lo"]) == 2
    assert_same_array(ubpe.decompress(data), x)
    d = unpack_any(data)
    for bad in ("x", [0], [0, 0, 0]):  # per-channel params are checked against the layout
        d["front"][0]["lo"] = bad
        with pytest.raises(CorruptDataError, match="test-offset"):
            ubpe.decompress(pack_any(d))
    monkeypatch.delitem(frontend.STAGES, _Offset.name)
    with pytest.raises(CorruptDataError, match="test-offset"):  # unregistered: not defined
        ubpe.decompress(data)


# ============================================================================ channels in containers


def test_channels_are_predicted_apart():
    """Two interleaved random walks: channel by channel is far smaller than the flat stream."""
    x = walk(20_000, seed=3, channels=2)
    x[:, 1] = walk(20_000, seed=4) * 3  # a different walk, at another scale
    per_channel = check_roundtrip(x, level=1)
    # the channels interleaved as one flat stream, at its best delta order
    interleaved = min((ubpe.compress(x.reshape(-1), delta=k, level=1) for k in (0, 1, 2)), key=len)
    assert len(per_channel) < 0.6 * len(interleaved)
    info = ubpe.describe(per_channel)
    assert info.channels == 2
    # first differences of each channel (after the grid stage, which finds channel 1's step 3)
    assert info.front[-1] == {"stage": "delta", "order": 1}


@pytest.mark.parametrize("shape", [(0, 3), (3, 0), (50, 3), (7, 1), (50, 2), (9, 4, 3), (6, 1, 1), (0,), ()])
@pytest.mark.parametrize("delta_order", [None, 0, 2])
def test_every_shape_round_trips(shape, delta_order):
    rng = np.random.default_rng(len(shape) * 7 + sum(shape))
    x = rng.integers(-5, 6, shape).astype(np.int16)
    for level in (1, 2):
        check_roundtrip(x, delta=delta_order, level=level)
    check_roundtrip(x.astype(">u4"), delta=delta_order, level=1)


@settings(max_examples=150, deadline=None)
@given(st.sampled_from(["i1", "u1", "<i2", "<u2", "<i4", "<u4", "<i8", "<u8"]), st.integers(1, 4),
       st.integers(0, 4), st.integers(0, 40), st.integers(0, 2**32 - 1))
def test_delta_inverse_matches_undelta(dtype, order, channels, frames, seed):
    # the delta stage's compiled running sums give signal.undelta's values on every width,
    # order and shape (a row shorter than the order included), leaving the input unchanged
    from ubpe.signal import undelta

    rng = np.random.default_rng(seed)
    y = rng.integers(0, 256, size=(channels, frames * np.dtype(dtype).itemsize), dtype=np.uint8).view(dtype)
    before = y.copy()
    got = DeltaStage().inverse(y, {"order": order})
    want = undelta(y, order, dtype=y.dtype, axis=-1)
    assert got.dtype == y.dtype and got.shape == y.shape
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(y, before)
    if channels and frames > 1:
        np.testing.assert_array_equal(DeltaStage().inverse(y.T.copy().T, {"order": order}), want)  # F order


# ============================================================================ the registry


def test_every_stage_of_the_format_registers_itself():
    """Importing ubpe.frontend registers every stage the format names, with nothing else of the
    writer imported (a fresh interpreter): decoding never depends on what else was imported."""
    import pathlib
    import subprocess
    import sys

    from ubpe.format.container import STAGES as FORMAT_STAGES

    assert sorted(frontend.STAGES) == sorted(FORMAT_STAGES)
    for name, cls in frontend.STAGES.items():
        assert cls.name == name and issubclass(cls, frontend.Stage)
    code = ("import sys, ubpe.frontend as f\n"
            "print(sorted(f.STAGES), sorted(m for m in ('ubpe.planner', 'ubpe.api', 'ubpe.frontend.chains')"
            " if m in sys.modules))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         cwd=pathlib.Path(__file__).parents[1], timeout=300)
    assert out.stdout.strip() == f"{sorted(FORMAT_STAGES)} []", out.stdout


def test_chain_dtypes_and_growing_bytes():
    """chain_dtypes gives the dtype entering each stage and the output's; growing_bytes the
    recorded params that grow with the values ("mult"'s digits; no other stage's)."""
    rng = np.random.default_rng(2)
    codes = walk(3000, seed=2).astype(np.int32) * 4 + (rng.random(3000) < 0.1) * rng.integers(1, 4, 3000)
    x = frontend.to_channels(codes.astype(np.int16))
    y, record = frontend.forward(x, [frontend.stage("grid"), DeltaStage(1)])
    dtypes = frontend.chain_dtypes(record, x.dtype)
    assert dtypes == [np.dtype(np.int16), np.dtype(np.uint16), np.dtype(np.int16)] and y.dtype == dtypes[-1]
    assert frontend.growing_bytes(record) == 0
    y, record = frontend.forward(x, [frontend.stage("mult"), DeltaStage(1)])
    assert [c["base"] for c in record[0]["channels"]] == [4]
    assert 0 < frontend.growing_bytes(record) <= len(pack_any(record[0]["low"]))
