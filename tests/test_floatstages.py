"""Lossless floats (issue 30): the decimal and binary modes, bit for bit, through compress and the
Stage protocol, checked against the plain-Python decoders of tests/reference_floats.py."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import reference_floats
import ubpe
from common import pack_any, unpack_any
from conftest import examples
from ubpe import frontend
from ubpe.frontend import floatcodes
from ubpe.coders import coders_for, decode_stream
from ubpe.planner import floats as float_choice
from ubpe.planner.settings import DEFAULT as SETTINGS
from ubpe import io as uio
from ubpe import compress, decompress, describe

FLOAT_DTYPES = ["<f2", "<f4", ">f4", "<f8", ">f8"]
LOSSLESS = ("floatgrid", "floatdec", "floatbin")


def bits_of(a: np.ndarray) -> bytes:
    """The values' bytes in native order (what "bit for bit" compares)."""
    a = np.ascontiguousarray(a)
    return a.astype(a.dtype.newbyteorder("=")).tobytes()


def float_arrays(dtype: str, min_size: int = 0, max_size: int = 60) -> st.SearchStrategy:
    """Arrays of ``dtype`` holding any bit pattern: NaN payloads (quiet and signalling), both
    zeros, infinities, subnormals, normals."""
    size = np.dtype(dtype).itemsize
    return hnp.arrays(f"<u{size}", st.integers(min_size, max_size)).map(
        lambda u: u.view(f"<f{size}").astype(dtype))


def classes(dtype: str) -> np.ndarray:
    """One value of every class of ``dtype``, by bit pattern."""
    size = np.dtype(dtype).itemsize
    w = 8 * size
    mant = {2: 10, 4: 23, 8: 52}[size]
    sign = 1 << (w - 1)
    expo = ((1 << (w - 1 - mant)) - 1) << mant
    patterns = [0, sign, 1, sign | 1, (1 << mant) - 1, expo, sign | expo,  # zeros, subnormals, infinities
                expo | 1, expo | (1 << (mant - 1)), sign | expo | 5, expo | ((1 << mant) - 1),  # NaNs: sNaN, qNaN, payloads
                1 << mant, (expo - (1 << mant)) | ((1 << mant) - 1)]  # smallest and largest normal
    return np.array(patterns, dtype=f"<u{size}").view(f"<f{size}").astype(dtype)


# ============================================================================ compress


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_every_class_of_float_round_trips(dtype):
    x = classes(dtype)
    for level in (1, 2):
        data = compress(x, level=level)
        y = decompress(data)
        assert y.dtype.str == np.dtype(dtype).str and bits_of(y) == bits_of(x)
        assert not describe(data).lossy


@settings(max_examples=examples(60), deadline=None)  # costly: conftest.examples
@given(st.sampled_from(FLOAT_DTYPES).flatmap(float_arrays))
@example(np.array([1e-6, 0.0], dtype="<f2"))  # a short decimal series: the "floatpack" container (CI, stop 39)
def test_any_bit_pattern_round_trips(x):
    data = compress(x, level=1)
    assert bits_of(decompress(data)) == bits_of(x)
    info = describe(data)
    assert not info.lossy
    # a lossless float stage in front, or the short series' own container, which has none
    assert info.coder == "floatpack" if not info.front else info.front[0]["stage"] in LOSSLESS


@settings(max_examples=40, deadline=None)
@given(st.sampled_from(["<f4", "<f8"]), st.integers(0, 4), st.integers(20, 300), st.data())
def test_decimal_columns_with_exceptions_round_trip(dtype, decimals, n, data):
    """Readings printed with ``decimals`` digits, a few replaced by NaN, infinities, -0.0 or
    values of more digits: the decimal mode codes the rest and patches those."""
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    ints = np.cumsum(rng.integers(-30, 31, n))
    x = np.array([float(f"{v / 10 ** decimals:.{decimals}f}") for v in ints]).astype(dtype)
    odd = data.draw(st.lists(st.integers(0, n - 1), max_size=max(1, n // 20)))
    for i in odd:
        x[i] = data.draw(st.sampled_from([np.nan, np.inf, -np.inf, -0.0, 1 / 3, 1e30, 5e-324]))
    out = compress(x, level=1)
    assert bits_of(decompress(out)) == bits_of(x)


def test_decimal_readings_take_the_decimal_mode():
    rng = np.random.default_rng(7)
    temps = np.round(15 + np.cumsum(rng.normal(0, 0.3, 5000)), 1)  # a thermometer's 0.1 C
    temps[[10, 2000, 4321]] = [np.nan, -0.0, 12.345]  # a gap, a sign, a finer reading
    data = compress(temps)
    assert bits_of(decompress(data)) == bits_of(temps)
    front = describe(data).front[0]
    assert front["stage"] == "floatdec" and front["base"] == [1]
    positions, raw = floatcodes._parse_exceptions(front["esc"], temps.size, 8, "test")
    odd = np.flatnonzero(np.isnan(temps) | np.signbit(temps) & (temps == 0) | (temps == 12.345))
    assert positions.tolist() == odd.tolist() and {10, 2000, 4321} <= set(odd.tolist())  # np.round makes -0.0 too
    assert bits_of(raw.view(np.float64)) == bits_of(temps[odd])
    tenths = np.rint(np.nan_to_num(temps) * 10).astype(np.int32)
    assert len(data) < len(compress(tenths)) + 24 + 12 * odd.size  # the integers' price, and the exceptions


def test_counts_times_a_calibration_factor_take_the_multiplier():
    rng = np.random.default_rng(3)
    counts = np.cumsum(rng.integers(-50, 51, 20000)).astype(np.float32)
    volts = counts * np.float32(0.7 / 32768)  # float32 products: no decimal and no binary grid
    data = compress(volts, level=1)
    assert bits_of(decompress(data)) == bits_of(volts)
    front = describe(data).front[0]
    assert front["stage"] == "floatdec" and type(front["base"][0]) is float
    assert len(data) < 1.1 * len(compress(counts.astype(np.int32), level=1))


def test_binary_floats_take_the_binary_mode():
    """A smooth signal of true binary floats (float32 arithmetic, no grid, no decimal)."""
    t = np.arange(30000, dtype=np.float32)
    x = (np.sin(t * np.float32(0.01)) * np.exp(-t / np.float32(20000))).astype(np.float32)
    data = compress(x, level=1)
    assert bits_of(decompress(data)) == bits_of(x)
    assert describe(data).front[0]["stage"] == "floatbin"
    assert len(data) < 0.75 * x.nbytes


def test_columns_keep_their_own_decimals():
    rng = np.random.default_rng(5)
    table = np.stack([np.round(rng.normal(20, 5, 3000), 1), np.round(rng.normal(1000, 10, 3000), 0),
                      np.round(rng.uniform(0, 1, 3000), 3)], axis=1)
    data = compress(table, level=1)
    assert bits_of(decompress(data)) == bits_of(table)
    front = describe(data).front[0]
    assert front["stage"] == "floatdec" and front["base"][0] == 1 and front["base"][2] == 3
    assert front["base"][1] in (0, -1, 1)


def test_the_same_floats_give_the_same_bytes():
    x = np.round(np.random.default_rng(9).normal(size=4000), 4)
    assert compress(x, threads=1) == compress(x, threads=2) == compress(x.copy())


@pytest.mark.parametrize("mode", ["decimal", "binary"])
def test_blocks_carry_their_own_exceptions(mode):
    rng = np.random.default_rng(11)
    if mode == "decimal":
        x = np.round(np.cumsum(rng.normal(0, 1, 12000)), 2)
    else:
        x = np.cumsum(rng.normal(0, 1, 12000)).astype(np.float32) * np.float32(1.37)
    x[[5, 4100, 9000]] = [np.nan, np.inf, -0.0]
    data = compress(x, block_size=4000, level=1)
    assert describe(data).blocks == 3
    assert bits_of(decompress(data)) == bits_of(x)
    assert bits_of(decompress(data, start=4050, stop=9050)) == bits_of(x[4050:9050])


def test_csv_columns_of_decimals_take_the_decimal_mode(tmp_path):
    rng = np.random.default_rng(2)
    rows = [f"{20 + v / 10:.1f},{1000 + w}" for v, w in zip(np.cumsum(rng.integers(-3, 4, 400)),
                                                          np.cumsum(rng.integers(-1, 2, 400)))]
    path = tmp_path / "weather.csv"
    path.write_text("temp,pressure\n" + "\n".join(rows) + "\n")
    signal = uio.read_signal(path)
    data = compress(signal.values, source=signal.source)
    back = decompress(data)
    assert bits_of(back) == bits_of(signal.values)
    assert describe(data).front[0]["stage"] == "floatdec" and describe(data).front[0]["base"][0] == 1
    out = tmp_path / "back.csv"
    uio.write_values(out, back, source=describe(data).source)
    assert np.array_equal(uio.read_signal(out).values, signal.values)


def test_lossy_path_is_unchanged():
    x = np.sin(np.arange(2000) / 50.0)
    data = compress(x, step=0.001)
    assert describe(data).lossy and describe(data).front[0]["stage"] == "quantize"
    with pytest.raises(ValueError, match="position 3"):
        compress(np.array([1.0, 2.0, 3.0, np.nan]), step=0.5)


# ============================================================================ the stages


def _reference_round_trip(stage: frontend.Stage, x: np.ndarray) -> None:
    """``stage`` on ``x`` ((C, F) native floats): its checked params invert it bit for bit, and so
    does the plain-Python decoder."""
    y, params = stage.forward(x)
    checked = stage.check(dict(params), x.dtype, x.shape)
    back = stage.inverse(y, checked)
    assert back.dtype == x.dtype and bits_of(back) == bits_of(x)
    if stage.name == "floatdec":
        tokens = None
        if "adj" in params:
            tokens = decode_stream(params["adj"], params["adjv"]).tolist()
        expected = reference_floats.decimal(y.astype(np.int64).tolist(), params, tokens)
    else:
        expected = reference_floats.binary(y.astype(np.int64).tolist(), params)
    expected = np.array(expected, dtype=f"<u{x.dtype.itemsize}")
    assert bits_of(expected.reshape(x.shape).view(f"<f{x.dtype.itemsize}")) == bits_of(x)


@settings(max_examples=80, deadline=None)
@given(st.sampled_from(["<f2", "<f4", "<f8"]).flatmap(lambda d: float_arrays(d, 1, 40)), st.data())
def test_decimal_stage_inverts_any_base_and_shift(x, data):
    channels = data.draw(st.integers(1, 2))
    x = x[: len(x) // channels * channels].reshape(channels, -1) if len(x) >= channels else x.reshape(1, -1)
    bases = data.draw(st.lists(st.one_of(st.integers(-floatcodes.MAX_DECIMAL_EXP, floatcodes.MAX_DECIMAL_EXP),
                                         st.floats(1e-30, 1e30)), min_size=x.shape[0], max_size=x.shape[0]))
    shifts = data.draw(st.lists(st.integers(0, 20), min_size=x.shape[0], max_size=x.shape[0]))
    _reference_round_trip(floatcodes.FloatDecimalStage(bases, shifts), x)


@settings(max_examples=80, deadline=None)
@given(st.sampled_from(["<f2", "<f4", "<f8"]).flatmap(lambda d: float_arrays(d, 1, 40)), st.data())
def test_decimal_stage_with_adjustments_inverts_any_values(x, data):
    channels = data.draw(st.integers(1, 2))
    x = x[: len(x) // channels * channels].reshape(channels, -1) if len(x) >= channels else x.reshape(1, -1)
    adjust = data.draw(st.sampled_from(["ulp", 1, 2, 3]))
    top = floatcodes.MAX_DECIMAL_EXP - (adjust if adjust != "ulp" else 0)  # |e + fine| <= MAX_DECIMAL_EXP
    ints = st.integers(-floatcodes.MAX_DECIMAL_EXP, top)
    base = ints if adjust != "ulp" else st.one_of(ints, st.floats(1e-30, 1e30))
    bases = data.draw(st.lists(base, min_size=x.shape[0], max_size=x.shape[0]))
    shifts = data.draw(st.lists(st.integers(0, 20), min_size=x.shape[0], max_size=x.shape[0]))
    level = data.draw(st.sampled_from([1, 2]))
    ulps = data.draw(st.integers(1, 300))
    _reference_round_trip(floatcodes.FloatDecimalStage(bases, shifts, adjust, coders_for(level), ulps), x)


def test_finer_digits_beyond_the_finest_decimal_exponent_are_refused_before_coding():
    x = np.array([[0.5, 0.25]])
    with pytest.raises(ValueError, match="finer digits need int bases"):
        floatcodes.FloatDecimalStage([floatcodes.MAX_DECIMAL_EXP - 1], None, 2).forward(x)
    with pytest.raises(ValueError, match="finer digits need int bases"):
        floatcodes.FloatDecimalStage([1e-3], None, 1).forward(x)


def test_adjustments_round_trip_every_class_of_float():
    x = np.array([[0.0, -0.0, np.inf, -np.inf, np.nan, 5e-324, -5e-324, 1.7976931348623157e308, 0.1,
                   0.30000000000000004, 1.23, 1.234, 1.2345, -7.77]])
    nan_payload = np.array([0x7FF0000000000123], dtype=np.uint64).view(np.float64)
    x = np.concatenate([x, nan_payload[None]], axis=1)
    with np.errstate(over="ignore", invalid="ignore"):  # float64 maximum and NaN to float32
        x32 = x.astype(np.float32)
    for adjust in ("ulp", 1, 2, 3):
        _reference_round_trip(floatcodes.FloatDecimalStage([2], None, adjust), x)
        _reference_round_trip(floatcodes.FloatDecimalStage([2], None, adjust), x32)


def _ulp_noisy_counts(n: int, seed: int) -> np.ndarray:
    """float32 counts times a calibration factor computed in float32, then a few ulps off in
    40 % of the values (a processed recording's arithmetic), as SAC traces hold them."""
    rng = np.random.default_rng(seed)
    x = np.cumsum(rng.integers(-20, 21, n)).astype(np.float32) * np.float32(0.00128)
    noise = np.where(rng.random(n) < 0.4, rng.integers(-3, 4, n), 0).astype(np.int32)
    return (x.view(np.int32) + noise).view(np.float32)


def _extra_digit_decimals(n: int, seed: int) -> np.ndarray:
    """Readings of 2 decimals, 2 % of them with 4 (a logger that prints more when it can)."""
    rng = np.random.default_rng(seed)
    walk = np.cumsum(rng.normal(0, 0.4, n))
    return np.where(rng.random(n) < 0.02, np.round(walk, 4), np.round(walk, 2))


def test_values_a_few_ulps_off_a_multiplier_take_the_ulp_adjustments():
    x = _ulp_noisy_counts(2000, 3)
    data = compress(x, level=2)
    entry = describe(data).front[0]
    assert entry["stage"] == "floatdec" and "adj" in entry and "fine" not in entry
    assert type(entry["base"][0]) is float
    assert bits_of(decompress(data)) == bits_of(x)
    # the adjustments cost less than exceptions: smaller than the stage without them
    plain = floatcodes.FloatDecimalStage(entry["base"], None).forward(x[None])[1]
    assert len(plain["esc"]) > len(data)


def test_decimals_with_an_extra_digit_take_the_fine_adjustments():
    x = _extra_digit_decimals(3000, 4)
    data = compress(x, level=1)
    entry = describe(data).front[0]
    assert entry["stage"] == "floatdec" and entry["base"] == [2] and entry.get("fine") == 2 and "esc" not in entry
    assert bits_of(decompress(data)) == bits_of(x)
    plain = floatcodes.FloatDecimalStage([2], None).forward(x[None])[1]
    assert len(plain["esc"]) > 8 * 50  # 2 % of 3 000 values as exceptions: 8 bytes and more each


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**32 - 1), st.sampled_from(["ulp", "fine"]))
def test_adjusted_containers_round_trip(seed, kind):
    x = _ulp_noisy_counts(300, seed) if kind == "ulp" else _extra_digit_decimals(300, seed)
    assert bits_of(decompress(compress(x, level=1))) == bits_of(x)


@settings(max_examples=80, deadline=None)
@given(st.sampled_from(["<f2", "<f4", "<f8"]).flatmap(lambda d: float_arrays(d, 1, 40)), st.data())
def test_binary_stage_inverts_any_grid(x, data):
    x = x.reshape(1, -1)
    lowest, precision, top = floatcodes.grid_stats(x.astype(np.float64))
    grid = data.draw(st.integers(max(lowest, top - 62), max(lowest, top - 62) + 40))
    _reference_round_trip(floatcodes.FloatBinaryStage(grid, lowest, precision), x)


def _chosen(x: np.ndarray) -> frontend.Stage:
    """The stage compress would choose for the floats ``x`` (``(C, F)``), finalists measured at level 2."""
    def measure(stage, sample):
        y, params = stage.forward(sample)
        return len(compress(y.T if y.shape[0] > 1 else y.reshape(-1), threads=1))

    return float_choice.choose(np.ascontiguousarray(x), SETTINGS, measure)


def test_chosen_stages_match_the_reference():
    rng = np.random.default_rng(1)
    for x in (np.round(rng.normal(size=(1, 500)), 2), (rng.normal(size=(1, 500)) * 3).astype(np.float32)):
        _reference_round_trip(_chosen(x), x)


# ============================================================================ damaged params


def _container(x: np.ndarray) -> dict:
    return unpack_any(compress(x, level=1))


@pytest.mark.parametrize("key, value, match", [
    ("base", [23], "base"), ("base", [1.5, 2.0], "base"), ("base", [-1.0], "base"), ("base", "1", "base"),
    ("bits", 32, "bits"), ("width", 12, "width"), ("shifts", [3], "shifts"),
    ("esc", b"\x05\x00", "esc"), ("esc", b"\x01\xff\x01\x01" + b"\x00" * 8, "position"),
    ("esc", b"\x01\x00\x01" + b"\x00" * 9, "esc"), ("esc", b"\x02\x00\x00\x01" + b"\x00" * 8 + b"\x00\x01", "distinct"),
    ("esc", b"\x02\x00\x00\x03" + b"\x00" * 24, "distinct"),
    ("extra", 1, "unexpected"),
])
def test_damaged_decimal_params_are_refused(key, value, match):
    x = np.round(np.random.default_rng(0).normal(size=200), 2)
    x[3] = np.nan
    d = _container(x)
    assert d["front"][0]["stage"] == "floatdec"
    d["front"][0][key] = value
    with pytest.raises(ubpe.CorruptDataError, match=match):
        decompress(pack_any(d))


def test_decimal_low_bits_must_match_the_shifts():
    x = np.round(np.random.default_rng(0).normal(size=(300, 1)), 2)
    d = _container(x)
    entry = d["front"][0]
    y, params = floatcodes.FloatDecimalStage([2], [3]).forward(frontend.to_channels(x))
    entry.update(shifts=[3], low=params["low"][:-1])
    with pytest.raises(ubpe.CorruptDataError, match="'low' has"):
        decompress(pack_any(d))
    entry.pop("low")
    with pytest.raises(ubpe.CorruptDataError, match="go together"):
        decompress(pack_any(d))


def test_damaged_adjustments_are_refused():
    x = _ulp_noisy_counts(500, 5)
    d = _container(x)
    entry = d["front"][0]
    assert "adj" in entry
    fine = _container(_extra_digit_decimals(500, 6))
    assert "fine" in fine["front"][0]
    stream = entry["adj"]
    for key, value, match in [("adjv", 1, "adjv"), ("adjv", 1 << 17, "adjv"), ("adjv", "2", "adjv"),
                              ("adj", dict(stream, n=stream["n"] - 1), "adjustments for"),
                              ("adj", b"\x00", "adj"), ("adj", {"coder": "none", "n": 500}, "unknown coder"),
                              ("fine", 1, "int bases"), ("fine", 4, "fine"),
                              ("adj", dict(stream, extra=1), "unexpected")]:
        bad = dict(d, front=[dict(entry, **{key: value})] + d["front"][1:])
        with pytest.raises(ubpe.CorruptDataError, match=match):
            decompress(pack_any(bad))
    for key in ("adj", "adjv"):
        bad = dict(d, front=[{k: v for k, v in entry.items() if k != key}] + d["front"][1:])
        with pytest.raises(ubpe.CorruptDataError, match="go together"):
            decompress(pack_any(bad))
    f_entry = fine["front"][0]
    bad = dict(fine, front=[{k: v for k, v in f_entry.items() if k not in ("adj", "adjv")}] + fine["front"][1:])
    with pytest.raises(ubpe.CorruptDataError, match="'fine' needs 'adj'"):
        decompress(pack_any(bad))
    if "payload" in stream:  # a damaged coded stream: refused by its coder, never a crash
        for cut in (stream["payload"][:-1], stream["payload"][: len(stream["payload"]) // 2]):
            bad = dict(d, front=[dict(entry, adj=dict(stream, payload=cut))] + d["front"][1:])
            with pytest.raises(ubpe.CorruptDataError):
                decompress(pack_any(bad))


def test_damaged_binary_params_are_refused():
    t = np.arange(3000, dtype=np.float32)
    x = np.sin(t * np.float32(0.01)) * np.float32(0.3)
    d = _container(x)
    entry = d["front"][0]
    assert entry["stage"] == "floatbin" and entry.get("raw")
    for key, value, match in [("raw", entry["raw"][:-1], "fewer bits"), ("raw", entry["raw"] + b"\x00", "more bits"),
                              ("precisions", 25, "precisions"), ("lo", -150, "'lo'"), ("exp", entry["lo"] - 1, "'exp'"),
                              ("bits", 64, "bits")]:
        bad = dict(d, front=[dict(entry, **{key: value})] + d["front"][1:])
        with pytest.raises(ubpe.CorruptDataError, match=match):
            decompress(pack_any(bad))


def test_the_frozen_adjusted_containers_hold_their_adjustments():
    """tests/fixtures' containers of the decimal mode with adjustments: in ulps, and finer digits."""
    from pathlib import Path

    here = Path(__file__).parent / "fixtures"
    ulp = describe((here / "v1_floatdec_ulp_float32.ubpe").read_bytes()).front[0]
    fine = describe((here / "v1_floatdec_fine_float64.ubpe").read_bytes()).front[0]
    assert "adj" in ulp and "fine" not in ulp and type(ulp["base"][0]) is float
    assert fine["base"] == [2] and fine["fine"] == 2
    for name in ("v1_floatdec_ulp_float32", "v1_floatdec_fine_float64"):
        expected = np.load(here / f"{name}.npy")
        assert bits_of(decompress((here / f"{name}.ubpe").read_bytes())) == bits_of(expected)
