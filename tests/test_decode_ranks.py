"""Level 1's "rank" then "delta" streams decoded straight to the values
(:func:`ubpe.coders.mag.decode_with_ranks`, kernel :func:`ubpe._kernels.magrank.mag_rank_decode`):
the values, and the errors, that decoding the tokens, mapping them, summing the deltas and looking
the ranks up one step after the other gives, on random token streams, on hostile ones, on
containers and on the real neural recordings."""

from __future__ import annotations

import msgpack
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ubpe
from ubpe import frontend
from ubpe._kernels import magrank
from ubpe.coders import decode_stream, encode_stream
from ubpe.coders import mag
from ubpe.errors import CorruptDataError
from ubpe.format import container

from conftest import examples

_HEALTH = [HealthCheck.too_slow, HealthCheck.data_too_large]


def SETTINGS(full: int) -> settings:
    """Hypothesis settings of a property of ``full`` examples in the slow tier (conftest.examples)."""
    return settings(deadline=None, max_examples=examples(full), suppress_health_check=_HEALTH)


def reference(tokens: np.ndarray, lut: np.ndarray | None, lo: int, bits: int, order: int,
              tables: list[np.ndarray]) -> np.ndarray:
    """The values step by step: residuals (uint64, mod 2**64), each channel's running sums
    wrapped to ``bits`` bits (order 2: sample 1 as order 1), its table looked up; frame-major.
    IndexError for a rank outside its table."""
    channels = len(tables)
    frames = tokens.shape[0] // channels
    res = lut[tokens] if lut is not None else (np.uint64(lo % (1 << 64)) + tokens.astype(np.uint64))
    res = res.astype(np.uint64).reshape(channels, frames)
    wrap = (1 << bits) - 1
    out = np.empty((frames, channels), tables[0].dtype)
    for c, table in enumerate(tables):
        r = [0, 0]
        for k in range(frames):
            pred = r[-1] if order == 1 or k < 2 else 2 * r[-1] - r[-2]
            v = (int(res[c, k]) + pred) & wrap
            r = [r[-1], v]
            if v >= table.shape[0]:
                raise IndexError(v)
            out[k, c] = table[v]
    return out.reshape(-1)


@st.composite
def streams(draw):
    """(stream, vocab, lut, lo, bits, order, tables, tokens): a "mag" stream of random tokens
    (runs of small deltas around a center, bursts) and the layout to decode it with."""
    channels = draw(st.integers(1, 3))
    frames = draw(st.integers(1, 400))
    vocab = draw(st.integers(1, 600))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    center = draw(st.integers(0, vocab - 1))
    scale = draw(st.sampled_from([0.5, 3.0, 40.0]))
    tokens = np.clip(np.round(center + rng.laplace(0, scale, channels * frames)), 0, vocab - 1).astype(np.int32)
    stream = encode_stream(tokens, vocab, coders=("mag",))
    if stream["coder"] != "mag":
        stream = mag._encode_mag(tokens, budget=1 << 30)
    stream = msgpack.unpackb(msgpack.packb(stream), raw=False)  # as a container holds it
    bits = draw(st.sampled_from([8, 16, 32, 64, 5]))
    order = draw(st.sampled_from([1, 2]))
    dtype = np.dtype(draw(st.sampled_from(["int16", "uint8", "int32", "int64", "uint16"])))
    lo = draw(st.integers(-(1 << 40), 1 << 40))
    lut = None
    if draw(st.booleans()):
        lut = rng.integers(-(1 << 20), 1 << 20, vocab).astype(np.int64)
        if bits <= 8:
            lut %= 5
    # the tables: mostly large enough for every rank, sometimes one short (an error)
    full = draw(st.booleans())
    tables = []
    info = np.iinfo(dtype)
    for _ in range(channels):
        count = min(1 << bits, 300) if full else draw(st.integers(1, 300))
        tables.append(rng.integers(info.min, int(info.max) + 1, count, dtype=dtype))
    return stream, vocab, lut, lo, bits, order, tables, tokens


@SETTINGS(150)
@given(streams())
def test_decode_with_ranks_equals_step_by_step(case):
    stream, vocab, lut, lo, bits, order, tables, tokens = case
    assert np.array_equal(decode_stream(stream, vocab), tokens)
    dst = np.empty(tokens.shape[0], tables[0].dtype)
    try:
        expect = reference(tokens, lut, lo, bits, order, tables)
    except IndexError:
        with pytest.raises(CorruptDataError, match="rank"):
            mag.decode_with_ranks(stream, vocab, lut, lo, bits, order, tables, dst)
        return
    got = mag.decode_with_ranks(stream, vocab, lut, lo, bits, order, tables, dst)
    assert got is dst and np.array_equal(got, expect)


def _hostile(stream: dict, rng: np.random.Generator) -> dict:
    """``stream`` with one of its byte fields cut, extended or with a byte changed."""
    out = dict(stream)
    name = ["payload", "raw", "table"][rng.integers(3)]
    b = bytearray(out[name])
    kind = rng.integers(4)
    if kind == 0 and b:
        del b[rng.integers(len(b)):]
    elif kind == 1:
        b += bytes(rng.integers(0, 256, rng.integers(1, 9), dtype=np.uint8))
    elif b:
        i = rng.integers(len(b))
        b[i] ^= 1 << rng.integers(8) if kind == 2 else 0xFF
    out[name] = bytes(b)
    return out


def _outcome(fn):
    try:
        return fn()
    except CorruptDataError as e:
        return str(e)


@SETTINGS(300)
@given(streams(), st.integers(0, 2**32 - 1))
def test_hostile_streams_fail_as_the_token_decoder_does(case, seed):
    """A corrupt stream: the same error (message) as decoding its tokens (the statuses are the
    "mag" kernel's, in its order); a stream whose tokens decode gives the step-by-step values
    or the rank error."""
    stream, vocab, lut, lo, bits, order, tables, tokens = case
    bad = _hostile(stream, np.random.default_rng(seed))
    n = tokens.shape[0]
    want = _outcome(lambda: decode_stream(bad, vocab, max_count=n))
    dst = np.empty(n, tables[0].dtype)
    got = _outcome(lambda: mag.decode_with_ranks(bad, vocab, lut, lo, bits, order, tables, dst))
    if isinstance(want, str):
        assert got == want
        return
    try:
        expect = reference(want, lut, lo, bits, order, tables)
    except IndexError:
        assert isinstance(got, str) and "rank" in got
        return
    assert not isinstance(got, str) and np.array_equal(got, expect)


def test_raw_bits_short_or_left_over_are_refused():
    rng = np.random.default_rng(4)
    tokens = np.clip(np.round(50 + rng.laplace(0, 30, 3000)), 0, 99).astype(np.int32)
    stream = mag._encode_mag(tokens, budget=1 << 30)
    table = [np.arange(1 << 16, dtype=np.int64)]
    dst = np.empty(3000, np.int64)
    assert np.array_equal(mag.decode_with_ranks(stream, 100, None, -50, 16, 1, table, dst),
                          np.cumsum(tokens.astype(np.int64) - 50) % (1 << 16))
    assert len(stream["raw"]) > 8
    for raw in (stream["raw"][:-1], stream["raw"][:-5], stream["raw"] + b"\0", stream["raw"] + b"\0" * 4,
                stream["raw"][:-1] + bytes([stream["raw"][-1] | 0x80])):
        with pytest.raises(CorruptDataError, match="field 'raw'") as e:
            mag.decode_with_ranks({**stream, "raw": raw}, 100, None, -50, 16, 1, table, dst)
        with pytest.raises(CorruptDataError) as want:
            decode_stream({**stream, "raw": raw}, 100)
        assert str(e.value) == str(want.value)


def test_bad_arguments_are_refused_before_the_kernel():
    tokens = np.full(10, 3, np.int32)
    stream = mag._encode_mag(tokens, budget=1 << 30)
    t16 = np.arange(10, dtype=np.int16)
    ok = np.empty(10, np.int16)
    with pytest.raises(CorruptDataError, match="rank"):  # (ranks 3, 6, ..., 30: past the 10 values)
        mag.decode_with_ranks(stream, 4, None, 0, 16, 1, [t16], ok)
    assert np.array_equal(mag.decode_with_ranks(stream, 4, None, -3, 16, 1, [t16], ok), np.zeros(10))  # all rank 0
    with pytest.raises(ValueError):
        mag.decode_with_ranks(stream, 4, None, 0, 16, 3, [t16], ok)  # order
    with pytest.raises(ValueError):
        mag.decode_with_ranks(stream, 4, None, 0, 0, 1, [t16], ok)  # bits
    with pytest.raises(ValueError):
        mag.decode_with_ranks(stream, 4, None, 0, 16, 1, [t16], np.empty(9, np.int16))  # length
    with pytest.raises(ValueError):
        mag.decode_with_ranks(stream, 4, None, 0, 16, 1, [t16], np.empty(20, np.int16)[::2])  # strided
    with pytest.raises(ValueError):
        mag.decode_with_ranks(stream, 4, None, 0, 16, 1, [t16.astype(np.int32)], ok)  # table dtype
    with pytest.raises(ValueError):
        mag.decode_with_ranks(stream, 4, None, 0, 16, 1, [t16[:0]], ok)  # empty table
    with pytest.raises(ValueError):
        mag.decode_with_ranks(stream, 4, None, 0, 16, 1, [t16] * 3, ok)  # 10 values, 3 channels
    with pytest.raises(ValueError):
        mag.decode_with_ranks(stream, 4, np.zeros(3, np.int64), 0, 16, 1, [t16], ok)  # lut length
    # the kernel's own refusal of a layout it cannot fill (the wrapper never passes one)
    words, raw = np.zeros(2, np.uint32), np.zeros(2, np.uint32)
    freqs = np.zeros((56, 50), np.int64)
    for vstart, values, dst in ((np.array([0]), t16, ok), (np.array([0, 11]), t16, ok), (np.array([0, 0]), t16, ok),
                                (np.array([0, 5, 10]), t16, np.empty(9, np.int16))):
        status = magrank.mag_rank_decode(words, raw, 0, 0, 2, freqs, 8, 4, np.zeros(0, np.uint64), np.uint64(0), 16, 1,
                                         values, vstart, dst)
        assert status == magrank.ERR_LAYOUT


def stage_by_stage(data: bytes) -> np.ndarray:
    """A one-stream container's values decoded one step after the other (tokens, their values,
    the chain inverted)."""
    p = container.parse(data, 1 << 40)
    assert p.block == 0 and p.m == 0 and p.esc is None
    tokens = decode_stream(p.stream, p.a)
    coded = frontend.chain_dtypes(p.chain, p.native)[-1]
    y = p.values.to_values(tokens, coded).reshape(p.channels, -1)
    return frontend.from_channels(frontend.inverse(y, p.chain, p.native), p.shape).astype(p.dtype)


def _sparse(rng: np.random.Generator, frames: int, channels: int, dtype: str, levels: int) -> np.ndarray:
    info = np.iinfo(dtype)
    grid = np.sort(rng.choice(np.arange(info.min, int(info.max) + 1, max(1, (int(info.max) - info.min) // 5000),
                                        dtype=np.int64), levels, replace=False))
    walk = np.cumsum(rng.integers(-2, 3, (frames, channels)), axis=0) + levels // 2
    return grid[np.clip(walk, 0, levels - 1)].astype(dtype)


@SETTINGS(60)
@given(st.integers(0, 2**32 - 1), st.sampled_from(["int16", "uint16", "int32", "uint8", "int8"]),
       st.integers(1, 3), st.integers(8, 3000), st.integers(2, 120))
def test_rank_containers_decode_as_stage_by_stage(seed, dtype, channels, frames, levels):
    rng = np.random.default_rng(seed)
    levels = min(levels, 2 ** (8 * np.dtype(dtype).itemsize) // 2)
    x = _sparse(rng, frames, channels, dtype, levels)
    if channels == 1:
        x = x[:, 0]
    data = ubpe.compress(x, level=1, predictor="rank+delta1")
    info = ubpe.describe(data)
    y = ubpe.decompress(data)
    assert y.dtype == x.dtype and np.array_equal(y, x)
    if info.coders == ("mag",) and info.n_merges == 0 and [s["stage"] for s in info.front] == ["rank", "delta"]:
        assert np.array_equal(stage_by_stage(data), y)
    # blocked: each whole block written in place, a frame range through the block's copy
    blocked = ubpe.compress(x, level=1, predictor="rank+delta1", block_size=max(64, frames // 3) * channels)
    for threads in (1, 2):
        assert np.array_equal(ubpe.decompress(blocked, threads=threads), x)
    lo, hi = frames // 5, frames - frames // 7
    assert np.array_equal(ubpe.decompress(blocked, start=lo, stop=hi, threads=1), x[lo:hi])


def test_corrupt_rank_container_is_refused():
    """A rank past its channel's values (the last value cut from a container's rank table):
    the rank error, before the checksum's."""
    rng = np.random.default_rng(2)
    x = _sparse(rng, 4000, 1, "int16", 60)[:, 0]
    data = ubpe.compress(x, level=1, predictor="rank+delta1")
    named = container.fields_of(data)
    assert [s["stage"] for s in named["front"]] == ["rank", "delta"] and named["stream"]["coder"] == "mag"
    params = named["front"][0]["channels"][0]
    assert params["count"] == 60
    values = params["values"][:-1]
    while values and values[-1] & 0x80:  # the last varint's continuation bytes
        values = values[:-1]
    params["count"], params["values"] = 59, values
    with pytest.raises(CorruptDataError, match="rank"):
        ubpe.decompress(container.pack(named))


@pytest.mark.parametrize("files", [[0], [3, 4], [11]])
def test_neural_slices_decode_as_stage_by_stage(shared_data, files):
    """Real neural recordings (level 1 chooses "rank+delta1" for them): the values, and the
    step-by-step decoding's, equal the input; blocked, each block written in place."""
    from scipy.io import wavfile

    paths = sorted((shared_data / "neural").glob("*.wav"), key=lambda p: p.name.encode())
    if len(paths) < 12:
        pytest.skip("fewer than 12 neural recordings")
    x = np.concatenate([wavfile.read(paths[i])[1] for i in files])[:150_000]
    data = ubpe.compress(x, level=1, predictor="rank+delta1")
    assert np.array_equal(ubpe.decompress(data), x)
    if ubpe.describe(data).coders == ("mag",):
        assert np.array_equal(stage_by_stage(data), x)
    blocked = ubpe.compress(x, level=1, block_size=40_000)
    assert np.array_equal(ubpe.decompress(blocked, threads=1), x)
    assert np.array_equal(ubpe.decompress(blocked, start=30_000, stop=95_000, threads=2), x[30_000:95_000])
