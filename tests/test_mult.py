"""The "mult" stage: codes split as ``base * q + offset + r``, the skewed low
digits ``r`` coded in the stage's params; its detection, its checks and the planner's offer."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import ubpe
from chain_containers import compress_chains
from common import assert_same_array, check_mutations, pack_any, unpack_any, unpack_block
from ubpe import CorruptDataError, compress, decompress, frontend
from ubpe.api import groups as api_groups
from ubpe.api import writer
from ubpe.format.container import FORMAT_VERSION, MAGIC
from ubpe.frontend import mult as predict
from ubpe.frontend.chains import MULT_CHAINS, PREDICTORS, build_chain
from ubpe.frontend.mult import MultStage
from ubpe.planner import DEFAULT, Candidate, auto_chains, candidates

INT_DTYPES = ["int8", "uint8", "<i2", ">i2", "uint16", "<i4", ">u4", "int64", "uint64"]


def skewed_codes(n: int, seed: int, base: int = 4, mode: int = 0, rare: float = 0.08) -> np.ndarray:
    """A smooth signal times ``base`` whose low digit is ``mode`` except for a fraction ``rare``
    of the values (an ADC with a noisy extra bit or two), int16."""
    rng = np.random.default_rng(seed)
    t = np.arange(n)
    smooth = np.round(900 * np.sin(t / 41.0) + 300 * np.sin(t / 7.3) + np.cumsum(rng.normal(0, 3, n)))
    digits = np.where(rng.random(n) < rare, rng.integers(0, base, n), mode)
    return (smooth * base + digits).astype(np.int16)


def split_roundtrip(x: np.ndarray, base: int, offset: int) -> None:
    q, r = predict.mult_forward(x, base, offset)
    assert q.dtype == np.dtype(f"i{x.dtype.itemsize}")
    assert r.dtype == np.int64 and r.shape == x.shape
    if x.size:
        assert 0 <= int(r.min()) and int(r.max()) < base
    assert_same_array(predict.mult_inverse(q, r, base, offset, x.dtype.newbyteorder("=")),
                      x.astype(x.dtype.newbyteorder("=")))
    if base > 1 and x.size:  # the quotient is the exact floor of (x - offset) / base
        exact = [(int(v) - offset) // base for v in x[:50].tolist()]
        assert q[:50].tolist() == exact


@pytest.mark.parametrize("dtype", INT_DTYPES)
def test_split_is_exact_at_the_extremes_of_every_dtype(dtype):
    info = np.iinfo(np.dtype(dtype))
    x = np.array([info.min, info.min + 1, -1 if info.min < 0 else 1, 0, 1, info.max - 1, info.max],
                 dtype=dtype)
    for base in (1, 2, 3, 4, 7, 64, 255, predict.MAX_MULT_BASE):
        for offset in {0, 1 % base, base // 2, base - 1}:
            split_roundtrip(x, base, offset)


@settings(max_examples=100, deadline=None)
@given(dtype=st.sampled_from(INT_DTYPES), seed=st.integers(0, 2**32 - 1), base=st.integers(1, predict.MAX_MULT_BASE))
def test_inverse_of_any_quotients_wraps_as_int64_arithmetic(dtype, seed, base):
    """mult_inverse of untrusted quotients and digits (any values of their dtypes: a corrupt
    stream's) is ``base * q + offset + r`` in int64 arithmetic wrapping modulo 2**64, then cut to
    the width: numpy's own int64 arithmetic, the reference."""
    dt = np.dtype(dtype).newbyteorder("=")
    info = np.iinfo(dt)
    rng = np.random.default_rng(seed)
    q = rng.integers(info.min, info.max, 300, dtype=dt, endpoint=True)
    r = rng.integers(0, base, 300).astype(rng.choice([np.int32, np.int64]))
    offset = int(rng.integers(0, base))
    with np.errstate(over="ignore"):
        want = (q.astype(np.int64) * np.int64(base) + (r.astype(np.int64) + np.int64(offset)))
    want = want.astype(np.dtype(f"i{dt.itemsize}")).view(dt)
    got = predict.mult_inverse(q, r, base, offset, dt)
    assert got.dtype == dt and np.array_equal(got, want)


@settings(max_examples=150, deadline=None)
@given(dtype=st.sampled_from(INT_DTYPES), data=st.data(),
       base=st.integers(1, predict.MAX_MULT_BASE), frac=st.floats(0, 1, exclude_max=True))
def test_split_round_trips_any_values(dtype, data, base, frac):
    x = data.draw(hnp.arrays(np.dtype(dtype), st.integers(0, 40)))
    split_roundtrip(x, base, int(frac * base))


@settings(max_examples=60, deadline=None)
@given(dtype=st.sampled_from(INT_DTYPES), data=st.data(), channels=st.integers(1, 3))
def test_stage_round_trips_through_the_container_checks(dtype, data, channels):
    """forward, then the untrusted-params path (parse_chain) and inverse: exact for any values,
    lengths 0 and 1 included, whatever split each channel got."""
    frames = data.draw(st.integers(0, 60))
    x = data.draw(hnp.arrays(np.dtype(dtype), (channels, frames))).astype(np.dtype(dtype).newbyteorder("="))
    y, record = frontend.forward(x, [MultStage()])
    assert y.dtype == np.dtype(f"i{x.dtype.itemsize}") and y.shape == x.shape
    packed = unpack_any(pack_any(record))
    chain = frontend.parse_chain(packed, x.dtype, x.shape)
    assert_same_array(frontend.inverse(y, chain, x.dtype), x)


@pytest.mark.parametrize("dtype", INT_DTYPES)
def test_containers_round_trip_every_dtype_constant_and_short(dtype):
    rng = np.random.default_rng(1)
    info = np.iinfo(np.dtype(dtype))
    walk = np.cumsum(rng.integers(-5, 6, (700, 2)), axis=0) * 4 + (rng.random((700, 2)) < 0.1)
    if info.min == 0:
        walk -= walk.min()
    cases = [walk.clip(info.min, info.max).astype(dtype), np.full(300, info.max, dtype), np.zeros(0, dtype),
             np.array([info.min], dtype), rng.integers(info.min, info.max, 500, dtype=np.dtype(dtype).newbyteorder("="),
                                                         endpoint=True).astype(dtype)]
    for x in cases:
        for predictor in MULT_CHAINS:
            data = compress(x, predictor=predictor, level=1)
            assert_same_array(decompress(data), x)
            assert data[:5] == MAGIC + bytes([FORMAT_VERSION]) and unpack_any(data)["front"][0]["stage"] == "mult"


def test_detect_finds_skewed_digits_and_nothing_else():
    assert predict.mult_detect(skewed_codes(20000, 1)) == (4, 2)  # digit 0, cut across from it
    assert predict.mult_detect(skewed_codes(20000, 2, base=8, mode=7))[0] == 8
    rng = np.random.default_rng(3)
    walk = np.cumsum(rng.integers(-40, 41, 20000)).astype(np.int32)
    assert predict.mult_detect(walk) == (1, 0)  # digits uniform: nothing to split off
    assert predict.mult_detect(walk * 4) == (1, 0)  # an exact grid is the grid stage's
    assert predict.mult_detect(np.zeros(5000, np.int16)) == (1, 0)
    assert predict.mult_detect(np.zeros(3, np.int16)) == (1, 0)
    assert predict.mult_detect(skewed_codes(20000, 1).astype(np.uint64) + np.uint64(2**63)) == (4, 2)
    with pytest.raises(TypeError):
        predict.mult_detect(np.zeros(10, np.float32))


def test_detect_cache_is_keyed_by_content_and_bounded():
    x = skewed_codes(5000, 16)
    assert predict.mult_detect(x) == predict._mult_detect(x) == (4, 2)
    y = x.copy()
    y[:] = np.cumsum(np.random.default_rng(0).integers(-40, 41, 5000))  # same buffer size, new content
    assert predict.mult_detect(y) == (1, 0)
    assert predict.mult_detect(x.astype(np.int32)) == (4, 2)  # other dtype: its own entry
    for seed in range(40):
        predict.mult_detect(skewed_codes(300, seed))
    assert len(predict._DETECTED) <= predict._DETECTED_MAX


@pytest.mark.parametrize("level, block_size", [(1, None), (2, None), (1, 8000)])
def test_a_compress_detects_each_channel_content_once(monkeypatch, level, block_size):
    """The chain choice (``has_low_digits``) and the plans (both levels' at level 2) share one
    scope of detections: each distinct content is tested once a ``compress`` on one thread."""
    x = skewed_codes(30000, 4)
    seen: list[bytes] = []
    exact = predict._mult_exact

    def counted(arr, screened):
        seen.append(arr.tobytes())
        return exact(arr, screened)

    monkeypatch.setattr(predict, "_mult_exact", counted)
    # (one thread: two threads may both miss the cache on the same content and both test it)
    data = compress(x, level=level, block_size=block_size, threads=1)
    assert_same_array(decompress(data), x)
    if block_size is None:
        assert ubpe.describe(data).front[0]["stage"] == "mult"
    assert seen and len(seen) == len(set(seen)), [len(v) for v in seen]


@pytest.mark.parametrize("level", [1, 2])
def test_a_compress_of_channel_groups_detects_each_channel_once(monkeypatch, level):
    """Several channels: the one-stream container and the channel groups' containers that
    ``compress`` weighs against it share the call's scope of detections (each channel's
    digits were tested once for each container before), and the groups were tried."""
    x = np.stack([skewed_codes(12000, 7), skewed_codes(12000, 8, base=8, mode=5), skewed_codes(12000, 9) // 3],
                 axis=1)
    seen: list[bytes] = []
    exact = predict._mult_exact
    tried = []
    smaller = api_groups.smaller

    def counted(arr, screened):
        seen.append(arr.tobytes())
        return exact(arr, screened)

    def spied(values, data, **options):
        tried.append(len(seen))
        return smaller(values, data, **options)

    monkeypatch.setattr(predict, "_mult_exact", counted)
    monkeypatch.setattr(api_groups, "smaller", spied)
    data = compress(x, level=level, threads=1)
    assert_same_array(decompress(data), x)
    assert tried and seen and len(seen) == len(set(seen)), [len(v) for v in seen]


def test_auto_choice_takes_the_split_and_is_smaller_than_without_it():
    """On codes with skewed low digits the automatic choice (both levels) picks a "mult" chain,
    and the container is smaller than the best the planner finds without the stage."""
    x = skewed_codes(30000, 4)
    xc = frontend.to_channels(x)
    assert any(spec[:1] and spec[0][0] == "mult" for spec in auto_chains(xc, 2, DEFAULT))
    walk = np.cumsum(np.random.default_rng(5).integers(-9, 10, 30000)).astype(np.int16)
    assert not any(spec[:1] and spec[0][0] == "mult" for spec in auto_chains(frontend.to_channels(walk), 2, DEFAULT))
    for level in (1, 2):
        data = compress(x, level=level)
        assert_same_array(decompress(data), x)
        assert ubpe.describe(data).front[0]["stage"] == "mult"
        others = [spec for spec in auto_chains(xc, level, DEFAULT) if not (spec and spec[0][0] == "mult")]
        without = compress_chains(x, others, level)
        assert ubpe.describe(without).front[0]["stage"] != "mult"
        assert len(data) < 0.95 * len(without), (level, len(data), len(without))


def test_blocked_containers_hold_the_stage_in_every_block():
    x = skewed_codes(5000, 6)
    data = compress(x, predictor="mult+lpc", level=1, block_size=1000)
    tree = unpack_any(data)
    assert len(tree["blocks"]) == 5
    assert_same_array(decompress(data), x)
    assert_same_array(decompress(data, start=1500, stop=3200), x[1500:3200])
    for raw in tree["blocks"]:
        assert unpack_block(raw, 1000)["front"][0]["stage"] == "mult"


def _mult_tree(x: np.ndarray) -> dict:
    return unpack_any(compress(x, predictor="mult+delta1", level=1))


def test_check_refuses_corrupt_params():
    x = np.stack([skewed_codes(3000, 8), skewed_codes(3000, 9, base=8, mode=5)], axis=1)
    tree = _mult_tree(x)
    entry = tree["front"][0]
    assert [c["base"] for c in entry["channels"]] == [4, 8]
    assert [c["offset"] for c in entry["channels"]] == [2, 1]
    stage = MultStage()
    dtype, shape = np.dtype(np.int16), (2, 3000)
    stage.check({k: v for k, v in entry.items() if k != "stage"}, dtype, shape)  # the original passes

    def refused(change, match):
        params = unpack_any(pack_any({k: v for k, v in entry.items() if k != "stage"}))
        change(params)
        with pytest.raises(CorruptDataError, match=match):
            stage.check(params, dtype, shape)

    refused(lambda p: p.pop("low"), "missing|low")
    refused(lambda p: p.update(extra=1), "extra|unexpected")
    refused(lambda p: p.update(channels=p["channels"][:1]), "list of 2")
    refused(lambda p: p.update(channels={}), "list of 2")
    refused(lambda p: p["channels"][0].update(base=0), "base")
    refused(lambda p: p["channels"][0].update(base=predict.MAX_MULT_BASE + 1), "base")
    refused(lambda p: p["channels"][0].update(base=True), "base")
    refused(lambda p: p["channels"][0].update(offset=4), "offset")
    refused(lambda p: p["channels"][0].update(offset=-1), "offset")
    refused(lambda p: p["channels"][0].pop("offset"), "offset|missing")
    refused(lambda p: p["channels"][1].update(base=1, offset=0), "low.*max_count")  # 3000 digits too many
    refused(lambda p: p["channels"][0].update(base=2, offset=0), "below its channel's base")  # digits up to 3
    refused(lambda p: p["channels"][1].update(base=4, offset=0), "low.*outside")  # vocabulary 4: digits up to 7
    refused(lambda p: p.update(low=b"\x00"), "stream map")
    refused(lambda p: p["low"].update(n=p["low"]["n"] - 1), "digits|n|payload|rans")
    refused(lambda p: p["low"].update(coder="nope"), "coder")
    with pytest.raises(CorruptDataError, match="not defined"):
        stage.check({k: v for k, v in entry.items() if k != "stage"}, np.dtype(np.float32), shape)


def test_checked_params_keep_the_plain_fields_and_decode_once():
    x = skewed_codes(1000, 10)
    entry = _mult_tree(x)["front"][0]
    params = MultStage().check({k: v for k, v in entry.items() if k != "stage"}, np.dtype(np.int16), (1, 1000))
    assert params["low"] == entry["low"] and set(params) == {"channels", "low"}
    assert params["low"].digits.shape == (1000,)
    assert ubpe.describe(compress(x, predictor="mult+lpc", level=1)).front[0]["low"] == \
        unpack_any(compress(x, predictor="mult+lpc", level=1))["front"][0]["low"]


def test_mutated_mult_containers_raise_library_errors_or_decode_exactly():
    x = skewed_codes(1500, 11)
    stereo = np.stack([skewed_codes(2000, 12), skewed_codes(2000, 13, base=3, mode=1)], axis=1)
    samples = [(x, compress(x, predictor="mult+lpc", level=1)), (x, compress(x, level=2)),
               (stereo, compress(stereo, predictor="mult+delta1", level=1))]
    assert all(unpack_any(d)["front"][0]["stage"] == "mult" for _, d in samples)
    assert check_mutations(samples, seed=21, n_mutations=1500) > 0


def test_digits_payload_counts_as_growing_with_the_values():
    """The planner's cost of a mult candidate puts the digits' payload with the stream's bytes
    (scaled when a candidate is sized on a sample)."""
    x = frontend.to_channels(skewed_codes(4000, 14))
    y, record = frontend.forward(x, build_chain(PREDICTORS["mult+delta1"]))
    payload = len(record[0]["low"]["payload"])
    assert payload > 100
    cost = writer.cost_function({"dtype": "<i2", "shape": [4000], "crc": 0, "front": []})
    flat = np.ascontiguousarray(y).reshape(-1)
    cand = candidates.bare_candidates(record, flat)[0]
    plain = candidates.bare_candidates([], flat)[0]
    k, k0 = cost(cand), cost(plain)
    assert k.scalable - k0.scalable == payload


def test_inspect_names_the_split_not_the_digit_bytes():
    from ubpe.cli.report import _describe_stage

    x = np.stack([skewed_codes(3000, 15), np.cumsum(np.random.default_rng(1).integers(-50, 51, 3000))], axis=1)
    entry = unpack_any(compress(x.astype(np.int16), predictor="mult+lpc", level=1))["front"][0]
    text = _describe_stage(entry)
    payload = len(entry["low"]["payload"])
    assert text == f"mult(4q+2+r, none; digits: {entry['low']['coder']}, {payload} bytes)"


def test_a_sample_sized_on_the_whole_record_scales_its_stream_only():
    """The lean search sizes a chain's context-mixing candidate on a sample of its output but
    with the record made on all the values: the digits' payload there stands for all of them
    already, so only the stream is extrapolated (scaling the payload too overrated "mult"
    chains several times over against the others)."""
    from ubpe.alphabet import Alphabet

    x = frontend.to_channels(skewed_codes(40000, 15))
    y, record = frontend.forward(x, build_chain(PREDICTORS["mult+lpc"]))
    y = np.ascontiguousarray(y).reshape(-1)
    cost = writer.cost_function({"dtype": "<i2", "shape": [y.size], "crc": 0, "front": []})
    coders = ("cms2",)

    def cm(values):
        alphabet = Alphabet.from_data(values)
        return Candidate(record, alphabet, np.zeros((0, 2), np.int32), alphabet.to_ids(values), coders, "cm")

    exact = cost(cm(y)).size
    ys = y[candidates.windows(y.size, DEFAULT.lean_cm_sample_large, DEFAULT.screen_windows)]
    sized = cost(cm(ys))
    grows = frontend.growing_bytes(record)
    assert grows == MultStage.scalable(record[0]) > 1000
    estimate = candidates.extrapolated(sized, y.size / ys.size, grows)
    assert abs(estimate / exact - 1) < 0.05, (estimate, exact)
    assert candidates.extrapolated(sized, y.size / ys.size) > exact + 3 * grows  # the payload scaled again
    assert candidates.extrapolated(sized, 1.0) == sized.size
