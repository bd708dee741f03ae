"""Floats: the lossy quantizer's bound, exact-grid detection, and both float stages in containers."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import ubpe
from common import pack_any, unpack_any
from conftest import MAX_EXAMPLES, examples
from ubpe import compress, decompress, describe, signal
from ubpe.frontend.floats import MAX_GRID_INT, MIN_STEP, Quantizer, exact_grid, quantize

# ============================================================================ the reference


def reference_q(x: float, step: float, offset: float) -> Fraction:
    """The exact ``(x - offset) / step``, the quantity ``q`` rounds (obviously correct: Fractions)."""
    return (Fraction(x) - Fraction(offset)) / Fraction(step)


def stated_bound(x: float, step: float, offset: float) -> Fraction:
    """The bound of Quantizer.dequantize on the float64 value ``w``, in exact arithmetic."""
    x_, o_ = Fraction(x), Fraction(offset)
    return (Fraction(step) / 2 + Fraction(1, 2**51) * (abs(x_ - o_) + abs(x_))) * (1 + Fraction(1, 2**50))


def check_bound(x: np.ndarray, q: np.ndarray, qz: Quantizer) -> None:
    """Every q is within one of the exact rounding of (x - offset) / step, and the float64
    reconstruction ``w`` within the stated bound of x; the returned floats are ``w`` rounded
    to the dtype."""
    w = qz.offset + q.astype(np.float64) * qz.step
    y = qz.dequantize(q)
    assert y.dtype == np.dtype(qz.dtype).newbyteorder("=")
    assert np.array_equal(y, w.astype(y.dtype))
    for xi, qi, wi in zip(x.astype(np.float64).reshape(-1).tolist(), q.reshape(-1).tolist(), w.reshape(-1).tolist()):
        exact = reference_q(xi, qz.step, qz.offset)
        assert abs(qi - exact) <= Fraction(1, 2) + Fraction(1, 2**40) * (1 + abs(exact)), (xi, qi, float(exact))
        assert abs(Fraction(wi) - Fraction(xi)) <= stated_bound(xi, qz.step, qz.offset), (xi, qi, wi)


# ============================================================================ quantize

floats64 = hnp.arrays(np.float64, st.integers(0, 60),
                      elements=st.floats(-1e12, 1e12, allow_nan=False, allow_infinity=False))
floats32 = hnp.arrays(np.float32, st.integers(0, 60),
                      elements=st.floats(-3e6, 3e6, allow_nan=False, allow_infinity=False, width=32))
steps = st.floats(1e-6, 1e4, allow_nan=False, allow_infinity=False)


@given(floats64, steps)
def test_step_bound_float64(x, step):
    q, qz = quantize(x, step=step)
    assert qz.step == step and qz.offset == 0.0 and qz.dtype == "<f8"
    check_bound(x, q, qz)
    # the typical case the docstring promises: step large against the values' ulp
    if x.size and step >= 2.0 ** -30 * float(np.abs(x).max()):
        assert float(np.abs(qz.dequantize(q) - x).max()) <= step / 2 * (1 + 2.0 ** -20)


@given(floats32, st.floats(1e-3, 1e3))
def test_step_bound_float32(x, step):
    q, qz = quantize(x, step=step)
    assert qz.dtype == "<f4"
    check_bound(x, q, qz)


@given(floats64, st.integers(1, 64))
def test_bits_fit_and_bound(x, bits):
    q, qz = quantize(x, bits=bits)
    if x.size:
        assert -(2 ** (bits - 1)) <= int(q.min()) and int(q.max()) <= 2 ** (bits - 1) - 1
        span = float(x.max()) / 2 - float(x.min()) / 2
        if span > 0:  # the step is the range over 2**bits - 1 levels, grown by at most a little
            assert qz.step >= span / ((2.0 ** bits - 1) / 2)
            # (never below MIN_STEP, the smallest step quantize takes: subnormal ranges get it)
            assert qz.step <= max(span / ((2.0 ** bits - 1) / 2) * 1.001, MIN_STEP) or bits == 1
    check_bound(x, q, qz)


@given(hnp.arrays(np.float64, st.integers(1, 30), elements=st.floats(-1e300, 1e300)), st.integers(1, 64))
def test_bits_on_huge_ranges(x, bits):
    """Ranges wider than the float64 maximum: halves first, no overflow, the bound holds."""
    q, qz = quantize(x, bits=bits)
    assert math.isfinite(qz.step) and math.isfinite(qz.offset)
    check_bound(x, q, qz)


@given(st.floats(1e-300, 1e-3), st.floats(-1e-3, 1e-3))
def test_tiny_steps(step, value):
    x = np.array([value, -value, value / 3, 0.0])
    try:
        q, qz = quantize(x, step=step)
    except ValueError as e:  # q beyond int64: the message names the remedy
        assert "larger step" in str(e)
        assert abs(value / step) >= 2.0 ** 62
        return
    check_bound(x, q, qz)


def test_ints_take_the_smallest_signed_dtype():
    assert quantize(np.array([-128.0, 127.0]), step=1)[0].dtype == np.int8
    assert quantize(np.array([-129.0, 127.0]), step=1)[0].dtype == np.int16
    assert quantize(np.array([0.0, 40000.0]), step=1)[0].dtype == np.int32
    assert quantize(np.array([0.0, 2.0**40]), step=1)[0].dtype == np.int64
    q, qz = quantize(np.zeros(0, np.float32), bits=8)
    assert q.shape == (0,) and q.dtype == np.int8 and qz.dequantize(q).dtype == np.float32


def test_shape_and_dtype_are_kept():
    x = np.linspace(-1, 1, 24, dtype=np.float32).reshape(2, 3, 4)
    q, qz = quantize(x, bits=10)
    assert q.shape == x.shape and qz.dequantize(q).shape == x.shape and qz.dequantize(q).dtype == np.float32
    x16 = np.array([1.5, -2.25, 100.0], np.float16)
    q, qz = quantize(x16, step=0.25)
    assert np.array_equal(qz.dequantize(q), x16) and qz.dtype == "<f2"


def test_constant_input_is_exact():
    x = np.full(7, 3.14159)
    q, qz = quantize(x, bits=4)
    assert np.array_equal(qz.dequantize(q), x) and qz.offset == 3.14159 and set(q.tolist()) == {0}


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_nan_and_infinities_name_their_position(bad):
    x = np.arange(10.0)
    x[6] = bad
    for kwargs in ({"step": 0.5}, {"bits": 8}):
        with pytest.raises(ValueError, match="position 6"):
            quantize(x, **kwargs)
    with pytest.raises(ValueError, match=r"position \(1, 1\)"):
        quantize(x.reshape(2, 5), step=1)
    with pytest.raises(ValueError, match="position 6"):
        compress(x, step=1.0)
    assert bits_of(decompress(compress(x))) == bits_of(x)  # lossless: NaN and infinities kept


@pytest.mark.parametrize("kwargs, exc, match", [
    ({}, ValueError, "exactly one"),
    ({"step": 1.0, "bits": 8}, ValueError, "exactly one"),
    ({"step": 0.0}, ValueError, "step"),
    ({"step": -1.0}, ValueError, "step"),
    ({"step": math.inf}, ValueError, "step"),
    ({"step": math.nan}, ValueError, "step"),
    ({"step": 1e-310}, ValueError, "2\\*\\*-1022"),
    ({"step": "1"}, TypeError, "step"),
    ({"step": True}, TypeError, "step"),
    ({"bits": 0}, ValueError, "bits"),
    ({"bits": 65}, ValueError, "bits"),
    ({"bits": 8.0}, TypeError, "bits"),
])
def test_bad_arguments(kwargs, exc, match):
    with pytest.raises(exc, match=match):
        quantize(np.arange(5.0), **kwargs)


def test_bad_values_argument():
    with pytest.raises(TypeError, match="float"):
        quantize(np.arange(5), step=1)
    with pytest.raises(TypeError, match="float"):
        quantize(np.array([1 + 1j]), step=1)
    q, qz = quantize([0.5, 1.5], step=0.5)  # a list of numbers is float64
    assert q.tolist() == [1, 3] and qz.dtype == "<f8"


def test_overflowing_q_asks_for_a_larger_step():
    with pytest.raises(ValueError, match="larger step"):
        quantize(np.array([1e300]), step=1.0)
    with pytest.raises(ValueError, match="smaller step"):  # float16 cannot hold 65504 + a large step / 2
        quantize(np.array([65504.0], np.float16), step=100000.0)


def test_quantizer_dict_round_trip_and_checks():
    qz = quantize(np.array([0.1, 0.7, -3.3], ">f4"), bits=12)[1]
    d = qz.to_dict()
    assert d["dtype"] == ">f4" and Quantizer.from_dict(d) == qz
    assert unpack_any(pack_any(d)) == d  # floats travel exactly
    for bad, exc in [({**d, "step": 0.0}, ValueError), ({**d, "offset": math.nan}, ValueError),
                     ({**d, "dtype": "<i4"}, ValueError), ({**d, "dtype": 4}, TypeError),
                     ({**d, "extra": 1}, ValueError), ([1], TypeError), ({**d, "step": "1"}, TypeError)]:
        with pytest.raises(exc):
            Quantizer.from_dict(bad)


def test_public_names():
    assert signal.quantize is quantize and signal.Quantizer is Quantizer
    assert {"quantize", "Quantizer"} <= set(signal.__all__)


# ============================================================================ exact grid


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64, ">f4", ">f8"])
def test_integers_stored_as_floats_are_on_the_zero_grid(dtype):
    x = np.array([0, 1, -7, 300, 2000], dtype=dtype)
    assert exact_grid(x) == 0
    assert exact_grid(x * 8) == 3  # every value a multiple of 8
    assert exact_grid(x + 0.5) == -1
    assert exact_grid(np.array([8, 16, -64], dtype=dtype)) == 3


def test_power_of_two_steps_are_found():
    assert exact_grid(np.arange(-20, 20) * 0.125) == -3
    assert exact_grid(np.array([0.5, 1.25, -0.75], np.float32)) == -2
    assert exact_grid(np.zeros(5)) == 0 and exact_grid(np.zeros(0)) == 0
    assert exact_grid(np.array([5e-324, 1e-323])) == -1074  # subnormals are exact too
    assert exact_grid(np.array([2.0**1000, 3 * 2.0**1000])) == 1000


@pytest.mark.parametrize("x", [
    np.arange(10) * 0.1,  # 0.1 is not a binary fraction: values span too many bits
    np.array([1.0, np.nan]),
    np.array([np.inf, 1.0]),
    np.array([1.0, 2.0**-60]),  # k = 2**60 > 2**53
    np.array([2.0**-30, 2.0**40], np.float32),
])
def test_off_grid(x):
    assert exact_grid(x) is None


@given(hnp.arrays(st.sampled_from([np.float16, np.float32, np.float64]), st.integers(0, 80),
                  elements=st.floats(-1e4, 1e4, allow_nan=False, width=16)))
def test_grid_detection_is_exact(x):
    """Whatever the grid found, k * 2**e rebuilds the bytes; and float16 values in [-1e4, 1e4]
    always lie on one (their lowest bit is >= 2**-24, their highest < 2**14)."""
    e = exact_grid(x)
    assert e is not None
    k = np.ldexp(x.astype(np.float64), -e)
    assert np.all(k == np.round(k)) and np.abs(k).max(initial=0) <= MAX_GRID_INT
    back = np.copysign(np.ldexp(k, e), x.astype(np.float64))  # -0.0 keeps its sign
    assert np.array_equal(back.astype(x.dtype).view(np.uint8), x.view(np.uint8))


# ============================================================================ containers


def bits_of(a: np.ndarray) -> bytes:
    return np.ascontiguousarray(a).tobytes()


@settings(max_examples=examples(MAX_EXAMPLES))  # costly: conftest.examples
@given(hnp.arrays(st.sampled_from(["<f2", "<f4", ">f4", "<f8", ">f8"]),
                  hnp.array_shapes(min_dims=1, max_dims=2, min_side=0, max_side=40),
                  elements=st.one_of(st.integers(-5000, 5000).map(lambda v: v / 8), st.just(-0.0))))
@example(np.array([10.0, 20.0, 30.0], dtype="<f4"))  # a short decimal series: the "floatpack" container
def test_lossless_grid_round_trip_is_bit_exact(x):
    if x.ndim == 2 and x.shape[1] > x.shape[0] > 0:
        x = x.T.copy()
    data = compress(x, level=1)
    y = decompress(data)
    assert y.dtype.str == x.dtype.str and y.shape == x.shape and bits_of(y) == bits_of(x)
    info = describe(data)
    assert not info.lossy and info.quantizer is None
    # the smallest lossless mode: a float stage in front, or a short decimal series' own container
    # ("floatpack", which has no front stage: ten times 1, 2, 3 are the decimal integers 1, 2, 3)
    assert info.coder == "floatpack" if not info.front else info.front[0]["stage"] in ("floatgrid", "floatdec", "floatbin")


@pytest.mark.parametrize("dtype", ["<f2", ">f4", "<f8"])
def test_negative_zeros_come_back(dtype):
    """np.round makes -0.0; the grid keeps the sign of every zero (params "negzero")."""
    rng = np.random.default_rng(2)
    x = np.round(np.cumsum(rng.normal(0, 0.4, 3000)) / 4).astype(dtype)
    assert np.any((x == 0) & np.signbit(x)) and np.any((x == 0) & ~np.signbit(x))
    assert exact_grid(x) == 0
    data = compress(x, level=1)
    assert bits_of(decompress(data)) == bits_of(x)
    assert describe(data).front[0]["negzero"] == 1
    plain = compress(np.abs(x) * np.sign(x) + 0.0, level=1)  # the same values, zeros all +0.0
    assert "negzero" not in describe(plain).front[0]
    d = unpack_any(data)
    for bad in (0, 2, True, 1.0, "1"):
        d["front"][0]["negzero"] = bad
        with pytest.raises(ubpe.CorruptDataError, match="negzero"):
            decompress(pack_any(d))


def test_lossless_counts_as_floats_compress_like_the_integers():
    rng = np.random.default_rng(4)
    counts = np.cumsum(rng.integers(-40, 41, 5000)).astype(np.int32)
    data_f = compress(counts.astype(np.float32), level=1)
    data_i = compress(counts, level=1)
    assert bits_of(decompress(data_f)) == bits_of(counts.astype(np.float32))
    assert len(data_f) <= len(data_i) + 40  # the float stage costs a few header bytes only
    stage = describe(data_f).front[0]
    assert stage["stage"] == "floatgrid" and stage["exp"] == 0
    assert np.dtype(f"i{stage['width'] // 8}") == ubpe.signal.quantize(counts.astype(np.float32), step=1)[0].dtype


@pytest.mark.parametrize("x", [np.arange(10) * 0.1, np.array([1.0, 2.0**-60])])
def test_off_grid_floats_are_lossless_too(x):
    """Floats off any exact grid take the decimal or binary mode (tests/test_floatstages.py)."""
    data = compress(x)
    assert bits_of(decompress(data)) == bits_of(x) and not describe(data).lossy


@given(hnp.arrays(st.sampled_from(["<f4", ">f8", "<f8"]), st.integers(0, 300),
                  elements=st.floats(-1e5, 1e5, allow_nan=False, width=32)),
       st.floats(1e-3, 1e3))
def test_lossy_round_trip_within_the_bound(x, step):
    data = compress(x, step=step, level=1)
    y = decompress(data)
    q, qz = quantize(x, step=step)
    assert y.dtype.str == x.dtype.str and y.shape == x.shape
    assert np.array_equal(y, qz.dequantize(q))  # decompress returns exactly the dequantized values
    check_bound(x, q, qz)
    info = describe(data)
    assert info.lossy and info.quantizer == qz.to_dict() and info.front[0]["stage"] == "quantize"


def test_lossy_bits_2d_and_the_crc_covers_the_output():
    rng = np.random.default_rng(9)
    x = np.cumsum(rng.normal(size=(3000, 2)), axis=0)
    data = compress(x, bits=12)
    y = decompress(data)
    assert y.shape == x.shape and describe(data).channels == 2
    q, qz = quantize(x, bits=12)
    assert np.array_equal(y, qz.dequantize(q))
    assert np.abs(y - x).max() <= qz.step / 2 * (1 + 2.0 ** -30)
    # the CRC is of the dequantized values: a stored offset moved by one ulp is refused
    d = unpack_any(data)
    d["front"][0]["offset"] = float(np.nextafter(d["front"][0]["offset"], np.inf))
    with pytest.raises(ubpe.CorruptDataError, match="checksum"):
        decompress(pack_any(d))


def test_float_chain_is_planned_on_the_integers():
    """The planner picks the rest of the chain on the quantized integers (a smooth signal gets
    a predictor), and forced predictors apply after the float stage."""
    t = np.arange(20000)
    x = 1000 * np.sin(t / 300.0)
    info = describe(compress(x, step=0.01))
    assert info.front[0]["stage"] == "quantize" and len(info.front) >= 2
    info = describe(compress(x, step=0.01, predictor="lpc", level=1))
    assert [s["stage"] for s in info.front] == ["quantize", "lpc"]
    info = describe(compress(x, step=0.01, delta=0, level=1))
    assert [s["stage"] for s in info.front] == ["quantize"]


def test_float_arguments_are_checked():
    with pytest.raises(ValueError, match="floating-point"):
        compress(np.arange(10), step=1.0)
    with pytest.raises(ValueError, match="not both"):
        compress(np.arange(10.0), step=1.0, bits=8)
    with pytest.raises(ValueError, match="step"):
        compress(np.arange(10.0), step=-1.0)
    with pytest.raises(ValueError, match="bits"):
        compress(np.arange(10.0), bits=0)
    with pytest.raises(TypeError, match="float16, float32 and float64"):
        compress(np.arange(3, dtype=np.complex64))
    with pytest.raises(TypeError, match="float16, float32 and float64"):
        compress(np.arange(3, dtype=np.longdouble)) if np.dtype(np.longdouble).itemsize > 8 else compress(1j)


def test_empty_and_scalar_floats():
    for x in (np.zeros(0, np.float32), np.zeros((0, 3)), np.array(2.5)):
        y = decompress(compress(x))
        assert y.dtype == x.dtype and y.shape == x.shape and bits_of(y) == bits_of(x)
        y = decompress(compress(x, step=0.5))
        assert y.dtype == x.dtype and y.shape == x.shape


# ============================================================================ untrusted float params


def _tree(x, **kwargs) -> dict:
    return unpack_any(compress(x, level=1, **kwargs))


@pytest.mark.parametrize("stage_index, key, value", [
    ("floatgrid", "exp", -1075), ("floatgrid", "exp", 1024), ("floatgrid", "exp", 1.0), ("floatgrid", "exp", None),
    ("floatgrid", "width", 12), ("floatgrid", "width", 64.0), ("floatgrid", "width", True),
    ("quantize", "step", 0.0), ("quantize", "step", -1.0), ("quantize", "step", math.inf),
    ("quantize", "step", math.nan), ("quantize", "step", 1e-310), ("quantize", "step", 1),
    ("quantize", "offset", math.nan), ("quantize", "offset", -math.inf), ("quantize", "offset", "0"),
    ("quantize", "width", 7), ("quantize", "extra", 1),
])
def test_corrupt_float_params_are_refused(stage_index, key, value):
    x = np.arange(64, dtype=np.float32) * 0.25
    d = _tree(x, step=0.25) if stage_index == "quantize" else _tree(x)
    assert d["front"][0]["stage"] == stage_index
    d["front"][0][key] = value
    data = pack_any(d)
    with pytest.raises(ubpe.CorruptDataError, match=f"front: {stage_index}"):
        decompress(data)
    with pytest.raises(ubpe.CorruptDataError):
        describe(data)


def test_float_stage_placement_is_checked():
    x = np.arange(64, dtype=np.float32) * 0.25
    d = _tree(x)
    # a float stage needs float input: on the integers of an int container, or second in a chain
    d_int = _tree(np.arange(64, dtype=np.int16))
    d_int["front"] = [d["front"][0]]
    with pytest.raises(ubpe.CorruptDataError, match="floatgrid"):
        decompress(pack_any(d_int))
    d2 = dict(d)
    d2["front"] = [d["front"][0], d["front"][0]]
    with pytest.raises(ubpe.CorruptDataError):
        decompress(pack_any(d2))
    # a float dtype without its float stage, or with a non-float stage first
    d3 = dict(d)
    d3["front"] = d["front"][1:]
    with pytest.raises(ubpe.CorruptDataError, match="floating-point|quantiz"):
        decompress(pack_any(d3))
    # a smaller exponent than written decodes to other floats: the CRC refuses them
    d4 = unpack_any(pack_any(d))
    d4["front"][0]["exp"] -= 1
    with pytest.raises(ubpe.CorruptDataError, match="checksum"):
        decompress(pack_any(d4))


def test_float_containers_mutated():
    """Mutated float containers (bytes and fields, the float params among them): a library error
    or exactly the values the original decodes to."""
    from common import check_mutations

    rng = np.random.default_rng(12)
    counts = (np.cumsum(rng.integers(-5, 6, 400)) / 4).astype(">f4")
    smooth = np.sin(np.arange(400) / 9.0) + rng.normal(0, 0.01, 400)
    lossy = compress(smooth, step=0.001, level=1)
    samples = [(counts, compress(counts, level=1)), (decompress(lossy), lossy),
               (np.float16(counts), compress(counts.astype(np.float16)))]
    assert check_mutations(samples, seed=21, n_mutations=600) > 0


def test_float_values_with_a_given_tokenizer():
    """A tokenizer fitted on the quantized integers encodes the float container's integers."""
    rng = np.random.default_rng(6)
    x = (np.cumsum(rng.integers(-3, 4, 2000)) * 0.5).astype(">f2")
    q, qz = quantize(x, step=0.5)
    tok = ubpe.Tokenizer(None, len(np.unique(q)) + 20).fit(q.astype(np.int64))
    for kwargs in ({}, {"step": 0.5}):
        data = compress(x, tokenizer=tok, level=1, **kwargs)
        y = decompress(data)
        assert y.dtype.str == ">f2" and bits_of(y) == bits_of(x)  # the grid is exact either way
        assert describe(data).front[0]["stage"] == ("quantize" if kwargs else "floatgrid")
        assert describe(data).lossy == bool(kwargs)
