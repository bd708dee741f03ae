"""Kernels that replaced numpy on the decoding path give what the numpy did: the rANS decoder's
model (ubpe._kernels.ransmodel) the integers of its numpy definitions in ubpe.coders.rans
(``_dequantize``, ``_normalize``, ``_check_histogram``), so the same tokens from the same bytes
and the same streams refused; the varint reader (``ubpe.format.bits.unpack_varints``) the values
and refusals of the numpy reader it replaced (:func:`numpy_varints`, kept here)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ubpe._kernels import ransmodel
from ubpe.coders import decode_stream, encode_stream
from ubpe.coders import rans as R
from ubpe.errors import CorruptDataError
from ubpe.format.bits import pack_varints, unpack_varints


def numpy_varints(data: bytes, count: int | None = None) -> np.ndarray | str:
    """The numpy reader of LEB128 varints that ``unpack_varints`` ran before its kernel: the
    values, or "count" / "overlong" for what it refused (in that order of checks)."""
    b = np.frombuffer(data, dtype=np.uint8)
    ends = np.flatnonzero(b < 0x80)
    if (count is not None and ends.shape[0] != count) or (ends.shape[0] and ends[-1] != b.shape[0] - 1) \
            or (not ends.shape[0] and b.shape[0]):
        return "count"
    if not ends.shape[0]:
        return np.zeros(0, np.uint64)
    starts = np.concatenate(([0], ends[:-1] + 1))
    lengths = ends - starts + 1
    if lengths.max() > 10 or ((lengths > 1) & (b[ends] == 0)).any() or ((lengths == 10) & (b[ends] > 1)).any():
        return "overlong"
    grp = np.arange(b.shape[0]) - np.repeat(starts, lengths)
    parts = (b & 0x7F).astype(np.uint64) << (np.uint64(7) * grp.astype(np.uint64))
    return np.add.reduceat(parts, starts)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(0, 2**41), min_size=2, max_size=300), st.integers(0, 40))
def test_dequantized_codes_equal_the_numpy_definition(codes, q):
    c = np.array(codes, dtype=np.int64)
    model = np.empty_like(c)
    total = ransmodel.dequantize_codes(c, q, model)
    expect = R._dequantize(c, q)
    if expect is None:
        assert total == -1
    else:
        assert np.array_equal(model, expect) and total == int(expect.sum())


@settings(max_examples=300, deadline=None)
@given(st.data(), st.integers(R.RANS_MIN_PB, R.RANS_MAX_PB))
def test_normalized_frequencies_equal_the_numpy_definition(data, pb):
    k = data.draw(st.integers(2, min(300, 1 << pb)))
    big = data.draw(st.sampled_from([3, 100, 2**20, R.RANS_MAX_TOTAL // k - 1]))
    counts = np.array(data.draw(st.lists(st.integers(0, big), min_size=k, max_size=k)), dtype=np.int64)
    counts[0] += counts.sum() == 0  # (a total of at least 1)
    freqs = R._frequencies(counts, int(counts.sum()), pb)
    expect = R._normalize(counts, pb)
    assert np.array_equal(freqs, expect) and int(freqs.sum()) == 1 << pb and freqs.min() >= 1


@pytest.mark.parametrize("k", [4096, 4097, 9000])
def test_normalized_frequencies_of_many_symbols_equal_the_numpy_definition(k):
    # (the heap of the shortfall's keys, many symbols)
    counts = np.random.default_rng(k).integers(0, 50, k).astype(np.int64)
    counts[0] += 1
    freqs = R._frequencies(counts, int(counts.sum()), 16)
    assert np.array_equal(freqs, R._normalize(counts, 16)) and int(freqs.sum()) == 1 << 16


def test_normalization_breaks_ties_of_remainders_toward_the_lower_index():
    counts = np.ones(5, dtype=np.int64)  # 4096 - 5 spare slots over 5 equal counts: 4091 = 5 * 818 + 1
    freqs = R._frequencies(counts, 5, 12)
    assert freqs.tolist() == [820, 819, 819, 819, 819] == R._normalize(counts, 12).tolist()


@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(0, 2**45), min_size=1, max_size=200), st.integers(0, 8), st.data())
def test_histogram_check_equals_the_numpy_definition(hist, q, data):
    h = np.array(hist, dtype=np.int64)
    codes = R._quantize(h, q)
    if data.draw(st.booleans()):  # a stored code that disagrees
        i = data.draw(st.integers(0, h.size - 1))
        codes[i] += data.draw(st.sampled_from([-1, 1, 7]))
    try:
        R._check_histogram(h, codes, q)
        expect = True
    except CorruptDataError:
        expect = False
    assert ransmodel.histogram_matches(h, codes, q) is expect


@pytest.mark.parametrize("seed", [5, 6])
def test_rans_streams_round_trip_and_a_damaged_table_is_refused(seed):
    rng = np.random.default_rng(seed)
    tokens = np.minimum(rng.geometric(0.05, 5000), 200) - 1
    stream = encode_stream(tokens, 200, coders=("packed", "rans"))
    assert stream["coder"] == "rans"
    assert np.array_equal(decode_stream(stream, 200), tokens)
    freq = bytearray(stream["freq"])
    freq[len(freq) // 2] ^= 0x10
    with pytest.raises(CorruptDataError):
        decode_stream({**stream, "freq": bytes(freq)}, 200)


@settings(max_examples=500, deadline=None)
@given(st.one_of(st.binary(max_size=40),
                 st.lists(st.integers(0, 2**64 - 1), max_size=20).map(lambda v: pack_varints(np.array(v, np.uint64)))),
       st.one_of(st.none(), st.integers(0, 25)), st.data())
def test_varints_read_as_the_numpy_reader_read_them(data, count, draw):
    if data and draw.draw(st.booleans()):  # a canonical stream damaged: cut, a byte changed or added
        i = draw.draw(st.integers(0, len(data) - 1))
        data = draw.draw(st.sampled_from([data[:i], data[:i] + bytes([draw.draw(st.integers(0, 255))]) + data[i + 1:],
                                          data + b"\x80\x00", data + b"\x80" * 10 + b"\x01"]))
    expect = numpy_varints(data, count)
    if isinstance(expect, str):
        with pytest.raises(CorruptDataError, match="does not hold exactly" if expect == "count" else "overlong"):
            unpack_varints(data, "test", count)
    else:
        got = unpack_varints(data, "test", count)
        assert got.dtype == np.uint64 and np.array_equal(got, expect)


def test_varints_at_the_64_bit_edge():
    top = pack_varints(np.array([2**64 - 1], np.uint64))
    assert len(top) == 10 and unpack_varints(top, "t").tolist() == [2**64 - 1]
    with pytest.raises(CorruptDataError, match="overlong"):
        unpack_varints(top[:9] + b"\x02", "t")  # bit 64
    with pytest.raises(CorruptDataError, match="overlong"):
        unpack_varints(b"\x80" * 10 + b"\x01", "t")  # 11 bytes
    with pytest.raises(CorruptDataError, match="overlong"):
        unpack_varints(b"\x81\x00", "t")  # not the shortest form
    with pytest.raises(CorruptDataError, match="does not hold exactly 2"):
        unpack_varints(b"\x05", "t", 2)


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(["i1", "i2", "i4", "i8", "u2", "u8"]), st.integers(1, 4), st.integers(1, 3), st.integers(0, 40),
       st.integers(0, 2**32))
def test_the_delta_stage_inverts_rows_as_undelta_does(dtype, order, channels, frames, seed):
    """The delta stage's inverse of (channels, frames) rows (its own path) equals
    ``ubpe.signal.undelta`` along the frames, in a new array."""
    from ubpe.frontend.delta import DeltaStage
    from ubpe.signal import undelta

    info = np.iinfo(dtype)
    y = np.random.default_rng(seed).integers(info.min, info.max, (channels, frames), dtype=dtype, endpoint=True)
    got = DeltaStage().inverse(y, {"order": order})
    expect = undelta(y, order, dtype=y.dtype, axis=-1)
    assert got.dtype == expect.dtype and np.array_equal(got, expect) and not np.shares_memory(got, y)


def leb128(values: list[int]) -> bytes:
    """The obviously-correct writer: 7 bits a byte, low group first, high bit on all but the last."""
    out = bytearray()
    for v in values:
        while v >= 0x80:
            out.append((v & 0x7F) | 0x80)
            v >>= 7
        out.append(v)
    return bytes(out)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(st.integers(0, 300), st.integers(0, 2**64 - 1)), max_size=60))
def test_varints_written_as_the_python_reference_writes_them(values):
    got = pack_varints(np.array(values, np.uint64))
    assert got == leb128(values)
    assert unpack_varints(got, "t").tolist() == values


def test_varints_of_signed_arrays_wrap_as_uint64():
    """A signed array is read as its uint64 bit pattern (the callers pass zigzagged or non-negative values)."""
    assert pack_varints(np.array([-1], np.int64)) == leb128([2**64 - 1])
    assert pack_varints(np.array([], np.int64)) == b""
