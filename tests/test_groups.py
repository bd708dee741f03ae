"""Channel groups (issue 30.3/30.4): ``compress`` writes one stream per group of channels (a
grouped container, docs/format.md "Grouped containers") when that is smaller than one stream,
never larger; ``decompress``, ``decompress_to`` and ``describe`` read it; hostile grouped
containers are refused with ``CorruptDataError`` before any group is decoded."""

from __future__ import annotations

import io
import random

import msgpack
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ubpe
from ubpe import CorruptDataError, FormatVersionError, decompress, describe, edf
from ubpe.cli import main
from ubpe.api.groups import grouped_bytes
from ubpe.planner import configured

from common import assert_same_array, check_mutations, check_truncations
from test_edf import edf_file, some_signals


def unrelated(frames: int, seed: int = 0) -> np.ndarray:
    """Three channels that share nothing: a random walk, a two-level square wave, steps."""
    rng = np.random.default_rng(seed)
    return np.stack([np.cumsum(rng.integers(-3, 4, frames)), rng.integers(0, 2, frames) * 400,
                     np.repeat(rng.integers(-900, 900, -(-frames // 100)), 100)[:frames]], 1).astype(np.int16)


def one_stream(values: np.ndarray, **options) -> bytes:
    with configured(channel_groups=False):
        return ubpe.compress(values, **options)


def round_trip(values: np.ndarray, data: bytes) -> None:
    assert_same_array(decompress(data), values)
    out = io.BytesIO()
    dtype, shape = ubpe.decompress_to(out, io.BytesIO(data))
    assert (dtype, shape) == (values.dtype, values.shape)
    assert out.getvalue() == np.ascontiguousarray(values).tobytes()


# ============================================================================ writing


def test_level_2_is_never_larger_than_its_one_stream():
    x = unrelated(3000)
    data = ubpe.compress(x, level=2)
    assert len(data) <= len(one_stream(x, level=2))
    round_trip(x, data)


@pytest.mark.parametrize("level", [1])
def test_unrelated_channels_get_a_stream_each_and_the_container_is_smaller(level):
    x = unrelated(3000)
    data = ubpe.compress(x, level=level)
    info = describe(data)
    assert data[:5] == b"ubpg\x01" and info.groups == 3 and info.shape == (3000, 3)
    assert len(data) < len(one_stream(x, level=level))
    assert info.size == len(data) == info.header + info.model + info.freq + info.payload
    round_trip(x, data)
    assert_same_array(decompress(data, start=100, stop=-7), x[100:-7])


def test_big_endian_values_and_their_source_come_back():
    # (3000 frames: at 2000 one stream, 1 308 B, beats the groups since issue 28's "mag" tables)
    x = unrelated(3000, seed=1).astype(">i4")
    data = ubpe.compress(x, level=1, source={"format": "npy", "note": "three"})
    assert data[:4] == b"ubpg"
    round_trip(x, data)
    assert describe(data).source == {"format": "npy", "note": "three"} and describe(data).dtype == ">i4"


@pytest.mark.parametrize("channels", [1, 2, 7, 64, 1024])
def test_never_larger_than_one_stream_from_1_to_1024_channels(channels):
    rng = np.random.default_rng(channels)
    frames = max(400, channels + 8)
    common = np.cumsum(rng.integers(-5, 6, frames))
    x = (common[:, None] * rng.integers(0, 3, channels) + np.cumsum(rng.integers(-2, 3, (frames, channels)), axis=0))
    x = x.astype(np.int16)
    data = ubpe.compress(x, level=1)
    assert len(data) <= len(one_stream(x, level=1))
    round_trip(x, data)


def test_correlated_channels_keep_one_stream_or_a_smaller_container():
    rng = np.random.default_rng(3)
    base = np.cumsum(rng.integers(-9, 10, 4000))
    x = np.stack([base + rng.integers(-2, 3, 4000) for _ in range(6)], 1).astype(np.int32)
    data = ubpe.compress(x, level=1)
    assert len(data) <= len(one_stream(x, level=1))
    round_trip(x, data)


def test_options_that_fix_the_chain_or_the_model_keep_one_stream():
    x = unrelated(3000)
    for options in ({"predictor": "delta1"}, {"delta": 1}, {"n_tokens": 40}):
        assert ubpe.compress(x, level=1, **options)[:4] == b"ubpe"


def test_the_one_stream_candidate_may_decorrelate_when_the_planner_did_not():
    """From Settings.group_decorrelate_channels channels (off by default), "decorrelate+delta1" is measured too:
    the container is never larger than either."""
    rng = np.random.default_rng(5)
    src = np.cumsum(rng.integers(-20, 21, (3000, 3)), axis=0)
    x = (src @ rng.integers(-2, 3, (3, 12)) + rng.integers(-3, 4, (3000, 12))).astype(np.int32)
    with configured(group_decorrelate_channels=8):
        data = ubpe.compress(x, level=1)
    assert len(data) <= min(len(one_stream(x, level=1)), len(one_stream(x, level=1, predictor="decorrelate+delta1")))
    round_trip(x, data)


def test_a_groups_own_container_is_one_stream_even_of_unrelated_channels():
    x = np.concatenate([unrelated(3000, seed=1), unrelated(3000, seed=2)], axis=1)
    data = grouped_bytes(x, [(3000, [0, 1, 2], None), (3000, [3, 4, 5], None)], level=1)
    assert describe(data).groups == 2
    round_trip(x, data)


@settings(max_examples=25, deadline=None)
@given(st.integers(1, 5), st.integers(5, 300), st.sampled_from(["<i2", ">i2", "|u1", "<i8", "<u4"]),
       st.integers(0, 2**31))
def test_hypothesis_grouped_containers_round_trip(k, frames, dtype, seed):
    """Any partition of the columns into groups, each group's container on its own: exact."""
    rng = np.random.default_rng(seed)
    info = np.iinfo(np.dtype(dtype))
    x = rng.integers(max(info.min, -1000), min(info.max, 1000), (frames, k), endpoint=True).astype(dtype)
    order = rng.permutation(k).tolist()
    cut = sorted(rng.choice(np.arange(1, k), rng.integers(0, k), replace=False).tolist()) if k > 1 else []
    parts = [order[a:b] for a, b in zip([0] + cut, cut + [k])]
    data = grouped_bytes(x, [(frames, cols, None) for cols in parts], level=1)
    round_trip(x, data)


# ============================================================================ EDF


def test_an_edf_files_signals_of_different_rates_are_grouped_and_come_back_byte_for_byte(tmp_path):
    rng = np.random.default_rng(4)
    spr = [200, 200, 50]  # a walk, a square wave, small noise at a quarter of the rate
    sigs = some_signals(rng, 20, spr, scale=3000)
    sigs[1] = (np.arange(20 * 200) % 40 < 20).astype(np.int32) * 1000
    sigs[2] = rng.integers(-3, 4, 20 * 50).astype(np.int32)
    raw = edf_file(sigs, spr)
    (tmp_path / "night.edf").write_bytes(raw)
    values, _, source = edf.read("night.edf", raw)
    assert values.ndim == 1
    data = ubpe.compress(values, source=source, level=1)
    assert data[:4] == b"ubpg" and describe(data).groups >= 2
    assert len(data) < len(one_stream(values, source=source, level=1))
    back = edf.to_bytes(decompress(data), "night.edf", describe(data).source)
    assert back == raw
    assert main(["-q", "compress", str(tmp_path / "night.edf"), "-o", str(tmp_path / "n.ubpe")]) == 0
    assert main(["-q", "decompress", str(tmp_path / "n.ubpe"), "-o", str(tmp_path / "back.edf")]) == 0
    assert (tmp_path / "back.edf").read_bytes() == raw


# ============================================================================ hostile


def runs_container() -> tuple[np.ndarray, bytes]:
    rng = np.random.default_rng(9)
    x = np.cumsum(rng.integers(-3, 4, 900)).astype(np.int16)
    return x, grouped_bytes(x, [(300, [0, 0], [0, 300]), (300, [0], [600])], level=1)


def fields(data: bytes) -> dict:
    return msgpack.unpackb(data[5:], raw=False)


def repack(d: dict, version: int = 1) -> bytes:
    return b"ubpg" + bytes([version]) + msgpack.packb(d, use_bin_type=True)


def test_runs_of_one_column_round_trip():
    x, data = runs_container()
    round_trip(x, data)
    assert describe(data).groups == 2


def test_every_strict_prefix_is_refused():
    _, data = runs_container()
    assert check_truncations(data) == len(data)


def test_a_newer_version_is_refused_as_such_and_version_0_as_corrupt():
    _, data = runs_container()
    with pytest.raises(FormatVersionError):
        decompress(data[:4] + b"\x02" + data[5:])
    with pytest.raises(CorruptDataError):
        decompress(data[:4] + b"\x00" + data[5:])


def _u4(*cols: int) -> bytes:
    return np.array(cols, "<u4").tobytes()


def _u8(*starts: int) -> bytes:
    return np.array(starts, "<u8").tobytes()


@pytest.mark.parametrize("change, words", [
    (lambda d: d["groups"][0].__setitem__(1, _u4(0, 1)), "out of range"),  # column 1 of 1
    (lambda d: d["groups"][0].__setitem__(2, _u8(0, 250)), "cover"),  # overlapping runs
    (lambda d: d["groups"][1].__setitem__(2, _u8(500)), "cover"),  # a gap, and beyond the end
    (lambda d: d["groups"][1].__setitem__(2, _u8(601)), "starts"),  # runs past the last frame
    (lambda d: d["groups"][1].__setitem__(2, _u8(0)), "starts"),  # all 0 must be nil
    (lambda d: d["groups"][1].__setitem__(0, 301), "starts"),  # a length its runs overflow
    (lambda d: d["groups"][1].__setitem__(0, 0), "frames"),
    (lambda d: d["groups"][0].__setitem__(1, b"\x00\x00\x00"), "columns"),
    (lambda d: d["groups"][0].__setitem__(1, b""), "columns"),
    (lambda d: d["groups"][0].__setitem__(1, _u4(*([0] * 3))), "starts"),  # 3 runs, 2 starts
    (lambda d: d["groups"][0].__setitem__(3, b"ubpw\x01"), "ordinary container"),
    (lambda d: d["groups"][0].__setitem__(3, d["groups"][1][3]), "shape"),  # another group's container
    (lambda d: d["groups"].pop(), "cover"),
    (lambda d: d.__setitem__("groups", []), "groups"),
    (lambda d: d["groups"].append(d["groups"][1]), "cover"),  # a run twice
    (lambda d: d.__setitem__("dtype", "<i4"), "needs <i4"),
    (lambda d: d.__setitem__("shape", [900, 1]), "CRC"),  # (1 channel of 900 frames: the checksum's line differs)
    (lambda d: d.__setitem__("shape", [0]), "shape"),
    (lambda d: d.__setitem__("crc", -1), "crc"),
    (lambda d: d.__setitem__("extra", 1), "unexpected"),
    (lambda d: d["groups"][0].pop(), "must be"),
])
def test_malformed_fields_are_refused_before_any_group_is_decoded(change, words):
    _, data = runs_container()
    d = fields(data)
    change(d)
    bad = repack(d)
    with pytest.raises(CorruptDataError) as e:
        decompress(bad)
    assert words in str(e.value), str(e.value)
    with pytest.raises(CorruptDataError):
        ubpe.decompress_to(io.BytesIO(), io.BytesIO(bad))
    if words != "CRC":  # describe checks every field but the checksum
        with pytest.raises(CorruptDataError):
            describe(bad)


def test_swapped_groups_fail_the_checksum():
    x = unrelated(1000)
    data = grouped_bytes(x, [(1000, [0], None), (1000, [1], None), (1000, [2], None)], level=1)
    d = fields(data)
    d["groups"][0][3], d["groups"][2][3] = d["groups"][2][3], d["groups"][0][3]
    with pytest.raises(CorruptDataError, match="CRC"):
        decompress(repack(d))


def test_a_declared_size_beyond_the_cap_is_refused_before_decoding():
    # (1 000 frames: one stream is smaller, "grid+mult+delta1", 746 B against 756 B; since issue
    # 28's "mag" tables one stream wins at 2 000 frames too)
    x = unrelated(3000)
    data = ubpe.compress(x, level=1)
    assert data[:4] == b"ubpg"
    with pytest.raises(CorruptDataError, match="max_output_size"):
        decompress(data, max_output_size=x.nbytes - 1)
    d = fields(data)
    d["shape"] = [2**40, 3]
    with pytest.raises(CorruptDataError, match="max_output_size"):
        decompress(repack(d))


def test_mutations_are_refused_or_decode_exactly():
    x, data = runs_container()
    y = unrelated(1000)
    samples = [(x, data), (y, ubpe.compress(y, level=1))]
    assert check_mutations(samples, seed=11, n_mutations=400) > 0
    rng = random.Random(3)
    for _ in range(200):  # and decompress_to agrees with decompress
        from common import mutate

        bad = mutate(data, rng)
        try:
            full = decompress(bad)
        except ubpe.UBPEError:
            full = None
        out = io.BytesIO()
        try:
            ubpe.decompress_to(out, io.BytesIO(bad))
            streamed = out.getvalue()
        except ubpe.UBPEError:
            streamed = None
        assert (full is None) == (streamed is None)
        if full is not None:
            assert streamed == full.tobytes()
