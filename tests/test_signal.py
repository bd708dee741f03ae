"""ubpe.signal: delta / undelta and zigzag / unzigzag, exact for every integer dtype."""

from __future__ import annotations

from math import comb

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from ubpe.signal import delta, undelta, unzigzag, zigzag

INT_DTYPES = ["|i1", "|u1", "<i2", "<u2", "<i4", "<u4", "<i8", "<u8", ">i2", ">u2", ">i4", ">u4", ">i8", ">u8"]
SIGNED = [d for d in INT_DTYPES if "i" in d]
UNSIGNED = [d for d in INT_DTYPES if "u" in d]


def reference_delta(x: np.ndarray, k: int) -> list[int]:
    """The definition in exact integers: d[i] = sum_m (-1)**m C(j, m) x[i - m], j = min(i, k),
    reduced to the signed integers of the width of x."""
    bits = 8 * x.dtype.itemsize
    xs = [int(v) for v in x]
    out = []
    for i in range(len(xs)):
        j = min(i, k)
        v = sum((-1) ** m * comb(j, m) * xs[i - m] for m in range(j + 1)) % (1 << bits)
        out.append(v - (1 << bits) if v >= 1 << (bits - 1) else v)
    return out


def extremes(dtype: np.dtype) -> list[int]:
    info = np.iinfo(dtype)
    return sorted({int(info.min), int(info.min) + 1, -1 if info.min < 0 else 2, 0, 1,
                   int(info.max) - 1, int(info.max)})


# ============================================================================ delta


@given(
    hnp.arrays(dtype=st.sampled_from(INT_DTYPES).map(np.dtype),
               shape=hnp.array_shapes(min_dims=1, max_dims=1, min_side=0, max_side=60)),
    st.integers(0, 3),
)
def test_delta_roundtrip_and_definition(x, k):
    d = delta(x, k)
    assert d.dtype == np.dtype(f"i{x.dtype.itemsize}") and d.shape == x.shape
    assert d.tolist() == reference_delta(x, k)
    back = undelta(d, k, dtype=x.dtype)
    assert back.dtype == x.dtype and back.dtype.str == x.dtype.str
    assert np.array_equal(back, x)


@pytest.mark.parametrize("dtype", INT_DTYPES)
@given(data=st.data(), k=st.integers(0, 3))
def test_delta_roundtrip_extremes(dtype, data, k):
    dtype = np.dtype(dtype)
    pool = extremes(dtype)
    x = np.array(data.draw(st.lists(st.sampled_from(pool), max_size=40)), dtype=dtype)
    d = delta(x, k)
    assert d.tolist() == reference_delta(x, k)
    assert np.array_equal(undelta(d, k, dtype=dtype), x)


@pytest.mark.parametrize("dtype", INT_DTYPES)
@pytest.mark.parametrize("k", [0, 1, 2, 3, 7])
def test_delta_short_and_empty(dtype, k):
    dtype = np.dtype(dtype)
    for n in range(0, 5):
        x = np.array(extremes(dtype)[:n], dtype=dtype)
        d = delta(x, k)
        assert d.shape == (n,)
        assert d.tolist() == reference_delta(x, k)
        assert np.array_equal(undelta(d, k, dtype=dtype), x)


def test_delta_known_values():
    x = np.array([10, 12, 15, 19, 24], dtype=np.int16)
    assert delta(x, 0).tolist() == [10, 12, 15, 19, 24]
    assert delta(x, 1).tolist() == [10, 2, 3, 4, 5]
    assert delta(x, 2).tolist() == [10, 2, 1, 1, 1]
    assert delta(x, 3).tolist() == [10, 2, 1, 0, 0]
    # a cubic is predicted exactly from order 4 on
    t = np.arange(20, dtype=np.int64)
    assert set(delta(t ** 3 - 5 * t, 4)[4:].tolist()) == {0}
    # wrap-around: the step from 255 to 0 is +1 modulo 256, the step from 0 to 255 is -1
    assert delta(np.array([255, 0, 255], dtype=np.uint8)).tolist() == [-1, 1, -1]
    i64 = np.array([2**63 - 1, -(2**63)], dtype=np.int64)
    assert delta(i64).tolist() == [2**63 - 1, 1]
    u64 = np.array([0, 2**64 - 1, 0], dtype=np.uint64)
    d = delta(u64, 2)
    assert d.dtype == np.int64 and d.tolist() == [0, -1, 2]
    assert undelta(d, 2, dtype=np.uint64).tolist() == [0, 2**64 - 1, 0]


def test_delta_order0_is_the_signed_view():
    x = np.array([0, 200, 255], dtype=np.uint8)
    assert delta(x, 0).tolist() == [0, -56, -1]
    assert undelta(delta(x, 0), 0, dtype=np.uint8).tolist() == [0, 200, 255]


def test_delta_does_not_modify_its_input():
    x = np.array([5, 3, 8, 1], dtype=">i4")
    before = x.copy()
    d = delta(x, 2)
    undelta(d, 2, dtype=x.dtype)
    assert np.array_equal(x, before) and x.dtype.str == ">i4"
    d2 = d.copy()
    undelta(d, 2)
    assert np.array_equal(d, d2)


def test_delta_lists_and_axis():
    assert delta([1, 4, 9, 16], 2).tolist() == [1, 3, 2, 2]  # a list of ints is int64
    x = np.arange(24, dtype=np.int32).reshape(2, 3, 4) ** 2
    for axis in (0, 1, 2, -1, -2):
        d = delta(x, 2, axis=axis)
        moved = np.moveaxis(x, axis, -1)
        want = np.array([reference_delta(r, 2) for r in moved.reshape(-1, moved.shape[-1])])
        assert np.array_equal(np.moveaxis(d, axis, -1), want.reshape(moved.shape)), axis
        assert np.array_equal(undelta(d, 2, dtype=x.dtype, axis=axis), x)


@pytest.mark.parametrize("bad, exc", [
    (np.array([True, False]), TypeError),
    (np.array([1.0, 2.0]), TypeError),
    (np.array(["a"]), TypeError),
    (np.array(5, dtype=np.int16), ValueError),  # 0-d
])
def test_delta_refuses(bad, exc):
    with pytest.raises(exc):
        delta(bad)
    with pytest.raises(exc):
        undelta(bad)


def test_order_and_dtype_checks():
    x = np.arange(5, dtype=np.int16)
    for bad, exc in [(-1, ValueError), (1.0, TypeError), (True, TypeError), ("1", TypeError)]:
        with pytest.raises(exc):
            delta(x, bad)
        with pytest.raises(exc):
            undelta(x, bad)
    with pytest.raises(ValueError, match="bytes"):
        undelta(x, 1, dtype=np.int32)
    with pytest.raises(TypeError):
        undelta(x, 1, dtype=np.float16)
    with pytest.raises(ValueError, match="axis"):
        delta(x, 1, axis=1)
    with pytest.raises(TypeError):
        delta(x, 1, axis=0.0)


# ============================================================================ zigzag


@given(hnp.arrays(dtype=st.sampled_from(SIGNED).map(np.dtype),
                  shape=hnp.array_shapes(min_dims=0, max_dims=2, min_side=0, max_side=30)))
def test_zigzag_roundtrip_and_definition(x):
    z = zigzag(x)
    assert z.dtype == np.dtype(f"u{x.dtype.itemsize}") and z.shape == x.shape
    assert [int(v) for v in z.reshape(-1)] == [2 * v if v >= 0 else -2 * v - 1 for v in map(int, x.reshape(-1))]
    back = unzigzag(z)
    assert back.dtype == np.dtype(f"i{x.dtype.itemsize}")
    assert np.array_equal(back, x)


@pytest.mark.parametrize("dtype", UNSIGNED)
def test_unzigzag_is_a_bijection_over_extremes(dtype):
    dtype = np.dtype(dtype)
    z = np.array(extremes(dtype), dtype=dtype)
    assert np.array_equal(zigzag(unzigzag(z)), z)


def test_zigzag_known_values():
    assert zigzag(np.array([0, -1, 1, -2, 2], np.int16)).tolist() == [0, 1, 2, 3, 4]
    assert zigzag(np.array([-(2**63), 2**63 - 1], np.int64)).tolist() == [2**64 - 1, 2**64 - 2]
    assert unzigzag(np.array([2**64 - 1, 2**64 - 2], np.uint64)).tolist() == [-(2**63), 2**63 - 1]
    with pytest.raises(TypeError):
        zigzag(np.array([1, 2], np.uint8))
    with pytest.raises(TypeError):
        unzigzag(np.array([1, 2], np.int8))
    with pytest.raises(TypeError):
        zigzag(np.array([True]))


def test_undelta_long_arrays_and_input_untouched():
    """undelta's running sums (8- and 16-bit ones accumulated in uint32, buffered by numpy in
    chunks) equal the sums in the values' own width over long arrays, on any axis, and leave
    ``d`` as it was."""
    rng = np.random.default_rng(44)
    for dtype in ("i1", "u1", "<i2", ">u2", "i4", "u8"):
        for shape, axis in (((70_001,), -1), ((3, 30_001), 1), ((20_001, 3), 0)):
            for k in (1, 2, 3):
                d = rng.integers(-(2 ** 62), 2 ** 62, shape).astype(dtype)
                before = d.copy()
                u = np.array(d, dtype=d.dtype.newbyteorder("="), copy=True).view(f"u{d.dtype.itemsize}")
                w = np.moveaxis(u, axis, -1)
                for j in range(k - 1, -1, -1):  # the definition, pass by pass in the width
                    w[..., j:] = np.add.accumulate(w[..., j:], axis=-1, dtype=u.dtype)
                got = undelta(d, k, axis=axis)
                assert got.dtype == d.dtype and np.array_equal(got, u.view(d.dtype.newbyteorder("="))), (dtype, shape, k)
                assert np.array_equal(d, before) and d.dtype == before.dtype


def test_public_names():
    """ubpe.signal is the users' door to the front end's own transforms (the same functions)."""
    from ubpe import signal
    from ubpe.frontend import delta as delta_stage
    from ubpe.frontend import floats

    assert set(signal.__all__) == {"delta", "undelta", "zigzag", "unzigzag", "quantize", "Quantizer"}
    assert (signal.delta, signal.undelta, signal.zigzag, signal.unzigzag) == \
        (delta_stage.delta, delta_stage.undelta, delta_stage.zigzag, delta_stage.unzigzag)
    assert (signal.quantize, signal.Quantizer) == (floats.quantize, floats.Quantizer)
