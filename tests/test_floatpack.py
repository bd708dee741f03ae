"""The "floatpack" container (ubpe.coders.floatpack): a short float series as its decimal integers
at one width, without model, alphabet or front end. compress writes it when it is smaller than the
"floatdec" container, decompress gives the floats back bit for bit, and every container compress
cannot have written (each field of the payload damaged, a strict prefix) is refused."""

from __future__ import annotations

import os

import msgpack
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ubpe
from ubpe.coders import floatpack
from ubpe.errors import CorruptDataError
from ubpe.format.bits import pack_varints
from ubpe.format.container import CODERS, DTYPES as FORMAT_DTYPES, KEYS
from ubpe.frontend.floatcodes import MAX_DECIMAL_EXP
from ubpe.planner import configured

from common import check_truncations
from conftest import examples

SETTINGS = settings(deadline=None, max_examples=int(os.environ.get("UBPE_MAX_EXAMPLES", "60")),
                    suppress_health_check=[HealthCheck.too_slow])
#: For the costly property (two compress calls per example, level 2 included): a third of the
#: examples in the default tier, all of them in the slow tier (CI's broad tier runs it so).
COSTLY = settings(SETTINGS, max_examples=examples(SETTINGS.max_examples))
KEY = {name: i for i, name in enumerate(KEYS)}


def trace(n: int = 100, seed: int = 7) -> np.ndarray:
    """A short float32 seismic-like trace: counts times a calibration factor computed in float32."""
    rng = np.random.default_rng(seed)
    counts = np.round(rng.normal(170, 24, n)).astype(np.float32)
    return counts * np.float32(1.431e-5)


def same(got: np.ndarray, expected: np.ndarray) -> None:
    assert got.dtype == expected.dtype and got.shape == expected.shape
    assert got.tobytes() == expected.tobytes()


def test_a_short_float32_trace_is_written_as_floatpack_and_round_trips():
    x = trace()
    packed = ubpe.compress(x, level=1)
    for level in (1, 2, 3):
        data = ubpe.compress(x, level=level)
        info = ubpe.describe(data)
        assert info.coder == "floatpack" and info.front == () and info.alphabet_size is None
        same(ubpe.decompress(data), x)
    with configured(float_packed_max_values=0):  # the "floatdec" container it replaces
        other = ubpe.compress(x, level=1)
    assert ubpe.describe(other).coder != "floatpack" and len(packed) <= len(other) - 15


def test_floatpack_is_kept_only_when_smaller():
    for x in (trace(100), trace(3000), np.round(np.cumsum(np.random.default_rng(1).normal(0, 0.3, 5000)), 1)):
        on = ubpe.compress(x, level=1)
        with configured(float_packed_max_values=0):
            off = ubpe.compress(x, level=1)
        assert len(on) <= len(off)
        assert (ubpe.describe(on).coder == "floatpack") == (len(on) < len(off))
        same(ubpe.decompress(on), x)


@st.composite
def decimal_series(draw):
    """Short float series on one base: decimals k / 10**e (float64, float32, float16, either byte
    order), or counts times a multiplier computed in the dtype; 1-D or two channels."""
    dtype = np.dtype(draw(st.sampled_from(["<f8", "<f4", ">f8", ">f4", "<f2"])))
    n = draw(st.integers(1, 300))
    k = np.array(draw(st.lists(st.integers(-3000, 3000), min_size=n, max_size=n)), dtype=np.int64)
    if draw(st.booleans()):
        e = draw(st.integers(0, 3))
        x = (k / 10.0 ** e).astype(dtype)
    else:
        c = draw(st.sampled_from([1.431e-5, 0.00128, 0.3, 2.5e-3]))
        x = k.astype(dtype) * np.array(c, dtype=dtype)
    if draw(st.booleans()) and n % 2 == 0 and n >= 4:  # (one frame of two channels is refused)
        x = x.reshape(-1, 2)
    return x


@COSTLY
@given(decimal_series(), st.sampled_from([1, 2]))
def test_decimal_series_round_trip_bit_for_bit(x, level):
    data = ubpe.compress(x, level=level)
    same(ubpe.decompress(data), x)
    with configured(float_packed_max_values=0):
        assert len(data) <= len(ubpe.compress(x, level=level))


@SETTINGS
@given(st.lists(st.integers(-2**53, 2**53), min_size=1, max_size=50), st.integers(-MAX_DECIMAL_EXP, MAX_DECIMAL_EXP))
def test_the_stream_decodes_what_it_encodes(ks, e):
    """encode_values then decode_values on any decimal exponent, integers up to 2**53."""
    x = (np.array(ks, dtype=np.int64).astype(np.float64) / 10.0 ** e) if e >= 0 else \
        np.array(ks, dtype=np.int64).astype(np.float64) * 10.0 ** -e
    stream = floatpack.encode_values(x, e)
    if stream is None:  # some k not recovered from its float (e.g. a product that rounds)
        return
    same(floatpack.decode_values(stream, np.dtype(np.float64), x.shape[0]), x)


def test_values_not_on_the_base_are_not_written_so():
    """NaN, infinities, -0.0 and a value off the base have no integer that gives their bits
    back: the series is not "floatpack" (compress writes the "floatdec" stage's exceptions)."""
    x = trace()
    with configured(float_packed_max_values=0):
        c = ubpe.describe(ubpe.compress(x, level=1)).front[0]["base"][0]  # the "floatdec" stage's
    assert floatpack.encode_values(x, c) is not None
    for bad in (np.nan, np.inf, -np.inf, -0.0, float(np.nextafter(x[3], np.float32(1)))):
        y = x.copy()
        y[5] = bad
        assert floatpack.encode_values(y, c) is None
        data = ubpe.compress(y, level=1)
        assert ubpe.describe(data).coder != "floatpack"
        same(ubpe.decompress(data), y)
    assert floatpack.MAX_DECIMAL_EXP == MAX_DECIMAL_EXP


def test_a_multiplier_is_written_in_4_bytes_when_a_float32_does():
    x = trace()
    with configured(float_packed_max_values=0):
        c = ubpe.describe(ubpe.compress(x, level=1)).front[0]["base"][0]  # the "floatdec" stage's
    stream = floatpack.encode_values(x, c)
    assert stream["payload"][1] == floatpack.TAG_FLOAT32
    y = np.arange(-50, 50) * 0.1  # float64 decimals by a float64 multiplier that is no float32
    stream = floatpack.encode_values(y, 0.1)
    assert stream["payload"][1] == floatpack.TAG_FLOAT64
    same(floatpack.decode_values(stream, np.dtype(np.float64), 100), y)


# ----------------------------------------------------------------------------- hostile containers

def payload_of(width: int, tag: int, base_bytes: bytes, zz: int, body: bytes) -> bytes:
    return bytes([width, tag]) + base_bytes + pack_varints(np.array([zz], np.uint64)) + body


def edits(data: bytes):
    """(what, container) pairs: the "floatpack" container with one field changed, each one that
    compress cannot have written."""
    prefix, d = data[:5], msgpack.unpackb(data[5:], raw=False, strict_map_key=False)
    stream = d[KEY["stream"]]
    payload = stream[KEY["payload"]]
    n = ubpe.describe(data).n_values

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
        return prefix + msgpack.packb(e, use_bin_type=True)

    width, tag = payload[0], payload[1]
    c32 = payload[2:6]
    rest = payload[6:]  # lo's varint, then the values
    body = rest[1:] if rest[0] < 0x80 else rest[2:]
    yield "n written at its count", changed(stream_n=n)
    yield "n not the count", changed(stream_n=n - 1)
    yield "an extra stream field", changed(stream_width=7)
    yield "no payload", changed(stream_payload=None)
    yield "a payload of another type", changed(stream_payload=5)
    yield "an integer dtype", changed(dtype=FORMAT_DTYPES.index("<i4"))
    yield "a front end", changed(front=[{KEY["stage"]: 9, KEY["bits"]: 32, KEY["base"]: [1], KEY["width"]: 16}])
    yield "front written empty", changed(front=[])
    yield "escapes", changed(esc=b"\x00")
    yield "a method", changed(method="bits")
    yield "a model beside it", changed(alphabet={KEY["n"]: 3, KEY["lo"]: 0})
    yield "a wrong crc", changed(crc=(d[KEY["crc"]] + 1) % 2**32)
    yield "another shape", changed(shape=[n // 2, 2])
    yield "no values", changed(shape=[0])
    yield "a width above 54", changed(stream_payload=bytes([55]) + payload[1:])
    yield "a wider width", changed(stream_payload=bytes([width + 1]) + payload[1:])
    yield "an unknown base tag", changed(stream_payload=bytes([width, floatpack.TAG_FLOAT64 + 1]) + payload[2:])
    yield "a float32 multiplier in 8 bytes", changed(stream_payload=bytes([width, floatpack.TAG_FLOAT64])
                                                     + np.frombuffer(c32, "<f4").astype("<f8").tobytes() + rest)
    for bad in (0.0, -1.0, np.inf, np.nan):
        yield f"a multiplier {bad}", changed(stream_payload=bytes([width, tag])
                                             + np.array([bad], "<f4").tobytes() + rest)
    yield "lo beyond 2**53", changed(stream_payload=payload_of(width, tag, c32, 2**54 + 2, body))
    yield "lo not the shortest varint", changed(stream_payload=bytes([width, tag]) + c32
                                                + bytes([rest[0] | 0x80, 0]) + rest[1:] if rest[0] < 0x80 else
                                                bytes([width, tag]) + c32 + rest[:2] + b"\x00" + body)
    yield "a byte of values missing", changed(stream_payload=payload[:-1])
    yield "a byte of values more", changed(stream_payload=payload + b"\x00")
    yield "nonzero padding bits", changed(stream_payload=payload[:-1] + bytes([payload[-1] | 0x80]))
    yield "a flipped value bit", changed(stream_payload=payload[:20] + bytes([payload[20] ^ 0x01]) + payload[21:])
    yield "a head cut", changed(stream_payload=payload[:2])
    yield "a multiplier cut", changed(stream_payload=payload[:5])


def test_containers_compress_cannot_write_are_refused():
    data = ubpe.compress(trace(), level=1)
    assert ubpe.describe(data).coder == "floatpack"
    assert data[:5] + msgpack.packb(msgpack.unpackb(data[5:], raw=False, strict_map_key=False),
                                    use_bin_type=True) == data  # (the edits repack as the writer packs)
    count = 0
    for what, bad in edits(data):
        count += 1
        with pytest.raises(CorruptDataError):
            ubpe.decompress(bad)
            pytest.fail(what)
    assert count >= 25


def test_every_strict_prefix_is_refused():
    rng = np.random.default_rng(3)
    for x in (trace(), np.round(rng.normal(15, 3, 60), 1).astype(">f8"), (rng.integers(-500, 500, 80) / 100).astype(np.float32)):
        data = ubpe.compress(x, level=1)
        assert ubpe.describe(data).coder == "floatpack"
        assert check_truncations(data) == len(data)


def test_the_output_cap_is_checked_before_decoding():
    x = trace()
    data = ubpe.compress(x, level=1)
    with pytest.raises(CorruptDataError, match="max_output_size"):
        ubpe.decompress(data, max_output_size=x.nbytes - 1)
    same(ubpe.decompress(data, max_output_size=x.nbytes), x)


def test_a_token_stream_cannot_name_it():
    from ubpe.coders import decode_stream, encode_stream

    assert encode_stream(np.arange(200) % 7, 7, coders=tuple(CODERS))["coder"] != "floatpack"
    with pytest.raises(CorruptDataError, match="values, not tokens"):
        decode_stream({"coder": "floatpack", "n": 3, "payload": b"\x01"}, 7)


def test_the_cli_round_trips_and_inspects_it(capsys, tmp_path):
    from ubpe import cli

    x = trace()
    src, packed, back = tmp_path / "x.npy", tmp_path / "x.ubpe", tmp_path / "y.npy"
    np.save(src, x)
    assert cli.main(["-q", "compress", str(src), "-o", str(packed)]) == 0
    assert cli.main(["-q", "decompress", str(packed), "-o", str(back)]) == 0
    same(np.load(back), x)
    capsys.readouterr()
    assert cli.main(["inspect", str(packed)]) == 0
    out = capsys.readouterr().out
    assert "floatpack" in out and "model        none (" in out


def map_bytes(pairs: list) -> bytes:
    """A msgpack map of ``pairs`` (key, packed value bytes) as written, keys twice included."""
    packer = msgpack.Packer(use_bin_type=True)
    return packer.pack_map_header(len(pairs)) + b"".join(packer.pack(k) + v for k, v in pairs)


def test_a_key_written_twice_is_refused():
    """The reader's own pass over a "floatpack" container (its map read without naming keys)
    still refuses a key twice, at the top or in the stream, as every container's reader does."""
    data = ubpe.compress(trace(), level=1)
    d = msgpack.unpackb(data[5:], raw=False, strict_map_key=False)
    pack = msgpack.Packer(use_bin_type=True).pack
    top = [(k, pack(v)) for k, v in d.items()]
    stream = d[KEY["stream"]]
    inner = [(k, pack(v)) for k, v in stream.items()]
    twice = [
        top + [(KEY["crc"], pack(d[KEY["crc"]]))],
        top[:1] + top,
        [(k, map_bytes(inner + [(KEY["payload"], pack(stream[KEY["payload"]]))]) if k == KEY["stream"] else v)
         for k, v in top],
    ]
    assert data[5:] == map_bytes(top)  # (the pairs as the writer packs them)
    for pairs in twice:
        with pytest.raises(CorruptDataError, match="twice"):
            ubpe.decompress(data[:5] + map_bytes(pairs))


def test_numbers_in_a_longer_form_than_the_writers_still_decode():
    """msgpack allows wider forms of a number than the shortest (the writer's): the reader takes
    them as the same numbers, whatever path reads the container."""
    x = trace()
    data = ubpe.compress(x, level=1)
    d = msgpack.unpackb(data[5:], raw=False, strict_map_key=False)
    pack = msgpack.Packer(use_bin_type=True).pack
    crc, dtype = d[KEY["crc"]], d[KEY["dtype"]]
    wide = {KEY["crc"]: b"\xcf" + crc.to_bytes(8, "big"), KEY["dtype"]: b"\xd1" + dtype.to_bytes(2, "big")}
    for key, form in wide.items():
        body = map_bytes([(k, form if k == key else pack(v)) for k, v in d.items()])
        assert body != data[5:]
        same(ubpe.decompress(data[:5] + body), x)


def reference_values(payload: bytes, dtype: np.dtype, n: int) -> np.ndarray:
    """The floats of a "floatpack" payload by the format's definition (docs/format.md), in
    plain Python and numpy: k = lo + u, then float64(k) / 10**e (e >= 0), * 10**-e or * c,
    rounded to the dtype."""
    width, tag = payload[0], payload[1]
    at = 2
    if tag == floatpack.TAG_FLOAT32 or tag == floatpack.TAG_FLOAT64:
        size = 4 if tag == floatpack.TAG_FLOAT32 else 8
        base = float(np.frombuffer(payload[at:at + size], "<f4" if size == 4 else "<f8")[0])
        at += size
    else:
        base = tag - MAX_DECIMAL_EXP
    zz = shift = 0
    while True:
        b = payload[at]
        zz |= (b & 0x7F) << shift
        at += 1
        shift += 7
        if b < 0x80:
            break
    lo = zz // 2 if zz % 2 == 0 else -(zz + 1) // 2
    bits = int.from_bytes(payload[at:], "little")
    k = np.array([lo + ((bits >> (i * width)) & ((1 << width) - 1)) for i in range(n)], dtype=np.int64)
    kf = k.astype(np.float64)
    with np.errstate(over="ignore"):
        if type(base) is int:
            v = kf / 10.0 ** base if base >= 0 else kf * 10.0 ** -base
        else:
            v = kf * base
        return v.astype(dtype)


@SETTINGS
@given(st.data(), st.sampled_from(["<f8", "<f4", "<f2"]), st.integers(1, 80), st.integers(0, 54),
       st.integers(-2**53, 2**53))
def test_any_payload_decodes_as_its_definition(data, dtype, n, width, lo):
    """decode_values on payloads of every width, lo, base form and float dtype (float32
    overflowing to infinity included) gives the floats of the format's definition bit for bit."""
    dtype = np.dtype(dtype)
    base_kind = data.draw(st.sampled_from(["e", "f32", "f64"]))
    if base_kind == "e":
        tag, base_bytes = data.draw(st.integers(-MAX_DECIMAL_EXP, MAX_DECIMAL_EXP)) + MAX_DECIMAL_EXP, b""
    else:
        c = data.draw(st.floats(1e-30, 1e30, allow_nan=False, allow_infinity=False))
        if base_kind == "f32":
            tag, base_bytes = floatpack.TAG_FLOAT32, np.array([c], "<f4").tobytes()
        else:
            c = c if float(np.float32(c)) != c else np.nextafter(c, 2 * c)
            tag, base_bytes = floatpack.TAG_FLOAT64, np.array([c], "<f8").tobytes()
    hi = min((1 << width) - 1, 2**53 - lo)  # (|k| <= 2**53)
    u = data.draw(st.lists(st.integers(0, hi), min_size=n, max_size=n))
    bits = sum(v << (i * width) for i, v in enumerate(u))
    body = bits.to_bytes((n * width + 7) // 8, "little")
    zz = 2 * lo if lo >= 0 else -2 * lo - 1
    payload = bytes([width, tag]) + base_bytes + pack_varints(np.array([zz], np.uint64)) + body
    got = floatpack.decode_values({"coder": "floatpack", "n": n, "payload": payload}, dtype, n)
    same(got, reference_values(payload, dtype, n))


def test_integers_spanning_more_than_54_bits_are_not_written_so():
    """k from -2**53 to 2**53 spans 2**54 + 1 values, one bit more than a payload's widest
    values: not "floatpack" (which decoding would refuse), and compress round-trips them."""
    x = np.array([2.0**53, -2.0**53, 0.0, 1.0] * 5)
    assert floatpack.encode_values(x, 0) is None
    assert floatpack.encode_values(x[x > 0], 0) is not None
    data = ubpe.compress(x, level=1)
    same(ubpe.decompress(data), x)
