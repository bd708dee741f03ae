"""Spec tests for ``ubpe.compress(level=3)``: the container whose stream is the level-3 signal
coder ("mixsignal", ``ubpe.level3``), its round trips through compress/decompress and the CLI,
the level-2 container wherever level 3 does not apply or is not smaller, and the refusal of
containers that compress cannot have written (checked before the kernel runs)."""

from __future__ import annotations

import os

import msgpack
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ubpe
from ubpe import cli, level3
from ubpe.format.container import CODERS, DTYPES as FORMAT_DTYPES, KEYS
from ubpe.errors import CorruptDataError

SETTINGS = settings(deadline=None, max_examples=int(os.environ.get("UBPE_MAX_EXAMPLES", "100")) // 5 or 1,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
DTYPES = ["|i1", "|u1", "<i2", ">i2", "<u2", "<i4", ">u4", "<i8", "<u8", ">i8"]
KEY = {name: i for i, name in enumerate(KEYS)}
MIX = CODERS.index(level3.CODER)


def signal(frames: int = 3000, seed: int = 20251123) -> np.ndarray:
    """A noisy sine on a grid of 8, int16 (the fixtures' signal): level 3's stream is the
    smaller one on it."""
    t = np.arange(frames)
    rng = np.random.default_rng(seed)
    return (np.round(300 * np.sin(t / 37.0) + rng.normal(0, 20, t.size)) // 8 * 8).astype(np.int16)


def same(got: np.ndarray, expected: np.ndarray) -> None:
    assert got.dtype == expected.dtype and got.shape == expected.shape
    assert np.array_equal(got, expected)


def head_and_map(data: bytes) -> tuple[bytes, dict]:
    """A compact container's 5-byte prefix and its map (keys by number)."""
    return data[:5], msgpack.unpackb(data[5:], raw=False, strict_map_key=False)


def repacked(prefix: bytes, fields: dict) -> bytes:
    return prefix + msgpack.packb(fields, use_bin_type=True)


@pytest.fixture(scope="module")
def mixed() -> tuple[np.ndarray, bytes]:
    x = signal()
    data = ubpe.compress(x, level=3)
    assert ubpe.describe(data).coder == level3.CODER
    return x, data


@st.composite
def arrays(draw):
    """Integer arrays of every width and byte order, 1 to 3 axes, walks, constants and noise."""
    dtype = np.dtype(draw(st.sampled_from(DTYPES)))
    info = np.iinfo(dtype)
    ndim = draw(st.integers(1, 3))
    least = 1 if ndim == 1 else 9  # (no more channels than frames)
    frames = draw(st.sampled_from([least, least + 1, 40, draw(st.integers(least, 400))]))
    shape = (frames,) + tuple(draw(st.integers(1, 3)) for _ in range(ndim - 1))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    kind = draw(st.sampled_from(["walk", "constant", "noise"]))
    if kind == "walk":
        v = np.cumsum(rng.integers(-50, 51, shape), axis=0) + (int(info.min) + int(info.max)) // 2
        v = np.clip(v, max(int(info.min), -2**62), min(int(info.max), 2**62))
        return v.astype(dtype)
    if kind == "constant":
        return np.full(shape, draw(st.integers(int(info.min), int(info.max))), dtype=dtype)
    return rng.integers(int(info.min), int(info.max), shape, endpoint=True, dtype=dtype.newbyteorder("=")).astype(dtype)


@SETTINGS
@given(arrays())
def test_level_3_round_trips_and_is_never_larger_than_level_2(x):
    data = ubpe.compress(x, level=3)
    same(ubpe.decompress(data), x)
    assert len(data) <= len(ubpe.compress(x, level=2))


def test_a_signal_is_coded_by_the_level_3_stream(mixed):
    x, data = mixed
    info = ubpe.describe(data)
    assert (info.coder, info.model, info.front, info.n_tokens) == (level3.CODER, 0, (), x.size)
    assert len(data) < len(ubpe.compress(x, level=2))
    same(ubpe.decompress(data), x)
    same(ubpe.decompress(data, start=100, stop=130), x[100:130])


def test_channels_and_axes_keep_their_order_and_byte_order():
    s = signal().astype(np.int32)
    pair = np.stack([s, np.roll(s, 1)], 1).astype(">i4")
    grid = np.stack([pair, pair // 2], 2)  # (frames, 2, 2): 4 channels
    for x in (pair, grid):
        data = ubpe.compress(x, level=3)
        assert ubpe.describe(data).coder == level3.CODER
        same(ubpe.decompress(data), x)


def test_same_bytes_from_one_and_two_threads(mixed):
    x, data = mixed
    assert ubpe.compress(x, level=3, threads=1) == data == ubpe.compress(x, level=3, threads=2)


def test_input_level_3_does_not_take_gets_level_2s_container():
    x = signal()
    wave = np.sin(np.arange(500) / 20.0)
    assert ubpe.compress(x, level=3, delta=1) == ubpe.compress(x, level=2, delta=1)
    assert ubpe.compress(x, level=3, predictor="lpc") == ubpe.compress(x, level=2, predictor="lpc")
    assert ubpe.compress(x > 0, level=3) == ubpe.compress(x > 0, level=2)
    assert ubpe.compress(wave, level=3, step=0.01) == ubpe.compress(wave, level=2, step=0.01)
    assert ubpe.compress(np.zeros(0, np.int16), level=3) == ubpe.compress(np.zeros(0, np.int16), level=2)
    assert ubpe.compress(np.int16(5), level=3) == ubpe.compress(np.int16(5), level=2)
    for bad in (0, 4, -1):
        with pytest.raises(ValueError, match="level"):
            ubpe.compress(x, level=bad)
    with pytest.raises(TypeError):
        ubpe.compress(x, level="3")


def test_the_cli_compresses_at_level_3(tmp_path, mixed):
    x, data = mixed
    src, packed, back = tmp_path / "x.npy", tmp_path / "x.ubpe", tmp_path / "y.npy"
    np.save(src, x)
    assert cli.main(["-q", "compress", "--level", "3", str(src), "-o", str(packed)]) == 0
    assert ubpe.describe(packed.read_bytes()).coder == level3.CODER
    assert cli.main(["-q", "decompress", str(packed), "-o", str(back)]) == 0
    same(np.load(back), x)
    best = tmp_path / "best.ubpe"
    assert cli.main(["-q", "compress", "--best", str(src), "-o", str(best)]) == 0
    assert best.read_bytes() == packed.read_bytes()


def edits(data: bytes):
    """(what, container) pairs: the level-3 container with one field changed, each one that
    compress cannot have written."""
    prefix, d = head_and_map(data)
    stream = d[KEY["stream"]]

    def changed(**change) -> bytes:
        e = {k: (dict(v) if isinstance(v, dict) else v) for k, v in d.items()}
        for name, value in change.items():
            if name.startswith("stream_"):
                if value is None:
                    e[KEY["stream"]].pop(KEY[name[7:]], None)
                else:
                    e[KEY["stream"]][KEY[name[7:]]] = value
            else:
                e[KEY[name]] = value
        return repacked(prefix, e)

    n = ubpe.describe(data).n_values
    payload = stream[KEY["payload"]]
    yield "n written at its count", changed(stream_n=n)
    yield "n not the count", changed(stream_n=n - 1)
    yield "an extra stream field", changed(stream_freq=b"\x00")
    yield "no payload", changed(stream_payload=None)
    yield "a payload of another type", changed(stream_payload=5)
    yield "a float dtype", changed(dtype=FORMAT_DTYPES.index("<f4"))
    yield "a front end", changed(front=[{KEY["stage"]: 0, KEY["order"]: 1}])
    yield "escapes", changed(esc=b"\x00")
    yield "a wrong crc", changed(crc=(d[KEY["crc"]] + 1) % 2**32)
    yield "another shape", changed(shape=[n // 2, 2])
    yield "a flipped payload byte", changed(stream_payload=payload[:40] + bytes([payload[40] ^ 0x10]) + payload[41:])
    yield "a payload of more values", changed(stream_payload=level3.encode(np.zeros(n + 1, np.int16)))
    yield "a payload of another dtype", changed(stream_payload=level3.encode(np.zeros(n, np.int32)))
    yield "a payload of two channels", changed(stream_payload=level3.encode(np.zeros((n // 2, 2), np.int16)))
    yield "a model beside it", changed(alphabet={KEY["n"]: 3, KEY["lo"]: 0})
    yield "a method", changed(method="optimal")


def test_containers_compress_cannot_write_are_refused(mixed):
    _, data = mixed
    for what, bad in edits(data):
        with pytest.raises(CorruptDataError):
            ubpe.decompress(bad)
            pytest.fail(what)


def test_truncated_containers_are_refused(mixed):
    _, data = mixed
    for size in range(len(data)):
        with pytest.raises(CorruptDataError):
            ubpe.decompress(data[:size])


def test_the_output_cap_is_checked_before_decoding(mixed):
    x, data = mixed
    with pytest.raises(CorruptDataError, match="max_output_size"):
        ubpe.decompress(data, max_output_size=x.nbytes - 1)
    same(ubpe.decompress(data, max_output_size=x.nbytes), x)


def test_a_block_cannot_hold_the_level_3_stream():
    x = signal(4000)
    data = ubpe.compress(x, level=1, block_size=2000)
    prefix, d = head_and_map(data)
    blocks = d[KEY["blocks"]]
    first = msgpack.unpackb(blocks[0], raw=False, strict_map_key=False)
    first[KEY["stream"]] = {KEY["coder"]: MIX, KEY["payload"]: level3.encode(x[:2000])}
    d[KEY["blocks"]] = [msgpack.packb(first, use_bin_type=True), *blocks[1:]]
    bad = repacked(prefix, d)
    with pytest.raises(CorruptDataError):
        ubpe.decompress(bad)
    with pytest.raises(CorruptDataError):
        ubpe.describe(bad)


def test_the_level_3_head_names_dtype_and_shape_before_decoding():
    x = signal(50)
    for v in (x, np.stack([x, x], 1).astype(np.uint32)):
        data = level3.encode(v, search=False)
        assert level3.describe_head(data) == (v.dtype, v.shape)
        with pytest.raises(CorruptDataError):
            level3.describe_head(data, max_values=v.size - 1)
    for cut in range(3):
        with pytest.raises(CorruptDataError):
            level3.describe_head(level3.encode(x)[:cut])
