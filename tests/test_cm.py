"""Spec tests for the "cm" coder: round trips, determinism, corruption and bounds handling."""

from __future__ import annotations

import os
import time
import zlib

import msgpack
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ubpe._kernels import cm as _cm
from ubpe.entropy import decode_stream, encode_stream
from ubpe.errors import CorruptDataError

SETTINGS = settings(
    deadline=None,
    max_examples=int(os.environ.get("UBPE_MAX_EXAMPLES", "100")),
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
CM = ("cm",)
WITH_CM = ("rans", "packed", "const", "cm")


def cm_bytes(tokens: np.ndarray, vocab: int) -> bytes:
    """The raw cm payload, whatever its size (the kernel, bypassing the coder choice)."""
    tokens = np.ascontiguousarray(tokens, dtype=np.int32)
    buf = np.zeros(tokens.size * 4 + 64, dtype=np.uint8)
    length = _cm.cm_encode(tokens, vocab, buf)
    assert 0 <= length <= buf.size
    return buf[:length].tobytes()


def cm_kernel_decode(payload: bytes, n: int, vocab: int) -> tuple[int, np.ndarray]:
    out = np.zeros(n, dtype=np.int32)
    status = _cm.cm_decode(np.frombuffer(payload, dtype=np.uint8).copy(), vocab, out)
    return status, out


def cm_fields(tokens: np.ndarray, vocab: int) -> dict:
    return {"coder": "cm", "n": int(len(tokens)), "payload": cm_bytes(tokens, vocab)}


@st.composite
def streams(draw, max_len: int = 3000, max_vocab: int = 70000):
    vocab = draw(st.integers(1, max_vocab))
    n = draw(st.integers(0, max_len))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    kind = draw(st.sampled_from(["uniform", "zipf", "few", "bounds", "repeat", "markov"]))
    if kind == "uniform":
        tokens = rng.integers(0, vocab, size=n)
    elif kind == "zipf":
        tokens = (np.minimum(rng.zipf(1.3, size=n) - 1, vocab - 1) * draw(st.integers(1, 7))) % vocab
    elif kind == "few":
        tokens = rng.choice(rng.integers(0, vocab, size=draw(st.integers(1, 4))), size=n)
    elif kind == "bounds":
        tokens = rng.choice(np.array([0, vocab - 1]), size=n)
    elif kind == "repeat":
        period = rng.integers(0, vocab, size=draw(st.integers(1, 50)))
        tokens = np.resize(period, n)
        flips = rng.random(n) < 0.02
        tokens[flips] = rng.integers(0, vocab, size=int(flips.sum()))
    else:
        step = rng.integers(0, vocab, size=8)
        tokens = np.zeros(n, dtype=np.int64)
        for i in range(1, n):
            tokens[i] = (tokens[i - 1] + step[tokens[i - 1] % 8]) % vocab
    return tokens.astype(np.int64), vocab


# ----------------------------------------------------------------------------- round trips


@SETTINGS
@given(streams())
def test_kernel_roundtrip(case):
    tokens, vocab = case
    payload = cm_bytes(tokens, vocab)
    status, out = cm_kernel_decode(payload, len(tokens), vocab)
    assert status == _cm.OK
    np.testing.assert_array_equal(out, tokens)


@SETTINGS
@given(streams())
def test_stream_roundtrip_with_cm_offered(case):
    tokens, vocab = case
    fields = encode_stream(tokens, vocab, coders=WITH_CM)
    packed = msgpack.packb(fields)
    for other in (("packed",), ("rans", "packed", "const")):
        assert len(packed) <= len(msgpack.packb(encode_stream(tokens, vocab, coders=other)))
    out = decode_stream(msgpack.unpackb(packed, raw=False), vocab, max_count=len(tokens))
    assert out.dtype == np.int32
    np.testing.assert_array_equal(out, tokens)


@pytest.mark.parametrize("vocab", [1, 2, 3, 255, 256, 257, 4096, 70000, 1 << 24])
def test_edges_roundtrip(vocab):
    rng = np.random.default_rng(vocab)
    for n in (0, 1, 2, 5, 700):
        tokens = rng.integers(0, vocab, size=n)
        if n > 2:
            tokens[:2] = (0, vocab - 1)
        payload = cm_bytes(tokens, vocab)
        status, out = cm_kernel_decode(payload, n, vocab)
        assert status == _cm.OK
        np.testing.assert_array_equal(out, tokens)
    assert cm_bytes(np.zeros(0, dtype=np.int64), vocab) == b""


def test_cm_wins_on_context_and_is_chosen():
    rng = np.random.default_rng(1)
    words = [rng.integers(0, 300, size=rng.integers(2, 6)) for _ in range(40)]
    tokens = np.concatenate([words[i] for i in rng.integers(0, 40, size=3000)])
    fields = encode_stream(tokens, 300, coders=WITH_CM)
    assert fields["coder"] == "cm"
    assert sorted(fields) == ["coder", "n", "payload"]
    rans = encode_stream(tokens, 300)
    assert len(fields["payload"]) < 0.8 * (len(rans["payload"]) + len(rans["freq"]))
    np.testing.assert_array_equal(decode_stream(fields, 300), tokens)
    assert encode_stream(tokens, 300)["coder"] != "cm"  # not a default candidate


def test_deterministic():
    rng = np.random.default_rng(2)
    tokens = np.resize(rng.integers(0, 1000, size=37), 5000)
    tokens[::97] = rng.integers(0, 1000, size=tokens[::97].size)
    a = encode_stream(tokens, 1000, coders=CM)
    b = encode_stream(tokens.astype(np.int32), 1000, coders=CM)
    assert a["coder"] == "cm" and a == b
    assert cm_bytes(tokens, 1000) == cm_bytes(tokens, 1000) == a["payload"]


@pytest.mark.parametrize(
    "vocab,size,crc", [(3, 208, 3949957791), (300, 1011, 1697440321), (70000, 1829, 3761557926)]
)
def test_frozen_bytes(vocab, size, crc):
    """The payload is a stored format: these bytes must never change (integer-only model)."""
    i = np.arange(4000)
    tokens = (i * 7919 % 97 * 13 + i // 50) % vocab
    fields = encode_stream(tokens, vocab, coders=CM)
    assert fields["coder"] == "cm"
    assert (len(fields["payload"]), zlib.crc32(fields["payload"])) == (size, crc)
    np.testing.assert_array_equal(decode_stream(fields, vocab), tokens)


# ----------------------------------------------------------------------------- corruption


def sample_fields():
    rng = np.random.default_rng(3)
    tokens = np.resize(rng.integers(0, 777, size=50), 2000)
    tokens[::13] = rng.integers(0, 777, size=tokens[::13].size)
    fields = encode_stream(tokens, 777, coders=CM)
    assert fields["coder"] == "cm"
    return tokens, fields


@pytest.fixture(scope="module")
def sample():
    return sample_fields()


def _decodes_or_refuses(fields: dict, vocab: int, n: int) -> None:
    try:
        out = decode_stream(fields, vocab, max_count=n)
    except CorruptDataError:
        return
    assert out.dtype == np.int32 and out.shape == (fields["n"],)
    assert out.size == 0 or (int(out.min()) >= 0 and int(out.max()) < vocab)


def test_every_strict_prefix_is_refused(sample):
    tokens, fields = sample
    payload = fields["payload"]
    for cut in range(len(payload)):
        _decodes_or_refuses(dict(fields, payload=payload[:cut]), 777, len(tokens))
        # the 16-bit check and the exact length refuse them all here (2**-16 chance each)
        with pytest.raises(CorruptDataError):
            decode_stream(dict(fields, payload=payload[:cut]), 777, max_count=len(tokens))
    with pytest.raises(CorruptDataError):
        decode_stream(dict(fields, payload=payload + b"\x00"), 777, max_count=len(tokens))


@SETTINGS
@given(st.data())
def test_random_byte_flips(sample, data):
    tokens, fields = sample
    payload = bytearray(fields["payload"])
    for _ in range(data.draw(st.integers(1, 4))):
        i = data.draw(st.integers(0, len(payload) - 1))
        payload[i] ^= data.draw(st.integers(1, 255))
    _decodes_or_refuses(dict(fields, payload=bytes(payload)), 777, len(tokens))


def test_byte_flips_are_detected():
    tokens, fields = sample_fields()
    payload = fields["payload"]
    rng = np.random.default_rng(5)
    accepted = 0
    for _ in range(300):
        bad = bytearray(payload)
        bad[int(rng.integers(0, len(bad)))] ^= int(rng.integers(1, 256))
        try:
            out = decode_stream(dict(fields, payload=bytes(bad)), 777, max_count=len(tokens))
        except CorruptDataError:
            continue
        accepted += 1
        assert not np.array_equal(out, tokens) or bytes(bad) == payload
    assert accepted <= 1


@SETTINGS
@given(st.binary(max_size=200), st.integers(0, 500), st.integers(1, 70000))
def test_garbage_payload_never_crashes(payload, n, vocab):
    _decodes_or_refuses({"coder": "cm", "n": n, "payload": payload}, vocab, n)
    status, out = cm_kernel_decode(payload, n, vocab)  # the kernel alone, without the guards
    assert status in (_cm.OK, _cm.ERR_SYMBOL, _cm.ERR_CHECK, _cm.ERR_LENGTH)


def test_decoded_id_out_of_range_is_refused():
    vocab = 5  # 3 bits per token: ids 5..7 are decodable but invalid
    rng = np.random.default_rng(4)
    for _ in range(100):
        payload = rng.integers(0, 256, size=8, dtype=np.uint8).tobytes()
        status, _ = cm_kernel_decode(payload, 20, vocab)
        if status == _cm.ERR_SYMBOL:
            break
    else:
        pytest.fail("no random payload decoded an id >= V")
    with pytest.raises(CorruptDataError, match="vocab_size"):
        decode_stream({"coder": "cm", "n": 20, "payload": payload}, vocab)
    # the same bytes are a fine stream for V = 8
    status, out = cm_kernel_decode(payload, 20, 8)
    assert status != _cm.ERR_SYMBOL and int(out.max()) >= 5


def test_fields_validated(sample):
    tokens, fields = sample
    for bad in ({"payload": "x"}, {"payload": 3}, {"n": -1}, {"n": 2.0}, {"n": True}):
        with pytest.raises(CorruptDataError):
            decode_stream(dict(fields, **bad), 777)
    with pytest.raises(CorruptDataError, match="missing"):
        decode_stream({"coder": "cm", "n": 3}, 777)
    with pytest.raises(CorruptDataError, match="unexpected"):
        decode_stream(dict(fields, freq=b""), 777)
    with pytest.raises(CorruptDataError, match="more than"):
        decode_stream(dict(fields, n=1, payload=bytes(100)), 777)


def test_n_refused_before_allocating(sample):
    tokens, fields = sample
    t = time.perf_counter()
    with pytest.raises(CorruptDataError, match="max_count"):
        decode_stream(dict(fields, n=10**15), 777, max_count=len(tokens))
    # without max_count, n must still be coherent with the payload length
    with pytest.raises(CorruptDataError, match="payload bytes can hold"):
        decode_stream(dict(fields, n=10**15), 777)
    with pytest.raises(CorruptDataError, match="payload bytes can hold"):
        decode_stream({"coder": "cm", "n": 10**9, "payload": b""}, 777)
    assert time.perf_counter() - t < 1.0


def test_long_constant_run_is_tiny_and_within_the_n_bound():
    tokens = np.full(200_000, 7, dtype=np.int64)
    tokens[0] = 3
    fields = encode_stream(tokens, 1 << 20, coders=CM)
    assert fields["coder"] == "cm" and len(fields["payload"]) < 1500
    np.testing.assert_array_equal(decode_stream(fields, 1 << 20, max_count=tokens.size), tokens)


# ----------------------------------------------------------------------------- "cmt": text


def text_stream(draw_bytes: bytes) -> tuple[np.ndarray, np.ndarray, int]:
    """Tokens = ids of the distinct byte values (sorted), classes from those values."""
    values = np.unique(np.frombuffer(draw_bytes, dtype=np.uint8)) if draw_bytes else np.array([65], np.uint8)
    ids = np.searchsorted(values, np.frombuffer(draw_bytes, dtype=np.uint8)).astype(np.int64)
    from ubpe.entropy import text_classes

    classes = text_classes(values.astype(np.int64))
    assert classes is not None
    return ids, classes, len(values)


@SETTINGS
@given(st.one_of(st.binary(max_size=3000),
                 st.text(max_size=1500).map(lambda t: t.encode("utf-8", "surrogatepass")),
                 st.lists(st.sampled_from([b"the ", b"cat ", b"\n", b"  x = 1\n", b"Word, ", b"\xc3\xa9"]),
                          max_size=400).map(b"".join)))
def test_cmt_round_trips_any_bytes(data):
    tokens, classes, vocab = text_stream(data)
    fields = encode_stream(tokens, vocab, coders=("cmt",), classes=classes)
    packed = msgpack.packb(fields)
    out = decode_stream(msgpack.unpackb(packed, raw=False), vocab, max_count=len(tokens), classes=classes)
    np.testing.assert_array_equal(out, tokens)


def test_cmt_beats_cm_on_text_and_needs_the_classes():
    import ubpe.container
    import ubpe.tokenizer

    text = open(ubpe.tokenizer.__file__, "rb").read() + open(ubpe.container.__file__, "rb").read()  # prose + code
    tokens, classes, vocab = text_stream(text)
    cm = encode_stream(tokens, vocab, coders=("cm",))
    cmt = encode_stream(tokens, vocab, coders=("cm", "cmt"), classes=classes)
    assert cmt["coder"] == "cmt" and len(cmt["payload"]) < 0.97 * len(cm["payload"])
    assert encode_stream(tokens, vocab, coders=("cm", "cmt"))["coder"] == "cm"  # no classes: not offered
    with pytest.raises(CorruptDataError, match="not bytes"):
        decode_stream(cmt, vocab)
    flipped = dict(cmt, payload=bytes([cmt["payload"][0] ^ 0x10]) + cmt["payload"][1:])
    try:
        out = decode_stream(flipped, vocab, classes=classes)
    except CorruptDataError:
        pass
    else:
        assert not np.array_equal(out, tokens)  # pragma: no cover - a 2**-16 chance
    other = classes.copy()
    other[other > 0] = 1 << 3  # different classes decode to different tokens (or are refused)
    try:
        assert not np.array_equal(decode_stream(cmt, vocab, classes=other), tokens)
    except CorruptDataError:
        pass


def test_text_classes():
    from ubpe._kernels.cm import text_class
    from ubpe.entropy import text_classes

    assert text_class(ord("a")) == text_class(ord("A")) == (ord("a") << 3) | (1 << 1)
    assert text_class(ord("7")) >> 3 == ord("7") and text_class(200) >> 3 == 200
    assert text_class(10) == (2 << 1) | 1 and text_class(32) == 2 << 1 and text_class(ord(",")) == 3 << 1
    assert text_class(0) == 0 and text_class(-1) == 0 and text_class(256) == 0
    assert text_classes(np.arange(257)) is None and text_classes([-1, 5]) is None
    assert text_classes(["a", "b"]) is None and text_classes([]) is None
    assert text_classes(np.array([97, 10])).tolist() == [text_class(97), text_class(10)]


# ----------------------------------------------------------------------------- "cmt2": text, v4


def cmt2_bytes(tokens: np.ndarray, classes: np.ndarray, vocab: int) -> bytes:
    """The raw "cmt2" payload, whatever its size (the kernel, bypassing the coder choice)."""
    from ubpe._kernels import cmtext

    tokens = np.ascontiguousarray(tokens, dtype=np.int32)
    buf = np.zeros(tokens.size * 4 + 64, dtype=np.uint8)
    length = cmtext.cmt2_encode(tokens, vocab, buf, np.ascontiguousarray(classes, dtype=np.int64))
    assert 0 <= length <= buf.size
    return buf[:length].tobytes()


def cmt2_round_trip(data: bytes) -> dict:
    tokens, classes, vocab = text_stream(data)
    fields = {"coder": "cmt2", "n": int(tokens.size), "payload": cmt2_bytes(tokens, classes, vocab)}
    packed = msgpack.packb(fields)
    out = decode_stream(msgpack.unpackb(packed, raw=False), vocab, max_count=len(tokens), classes=classes)
    np.testing.assert_array_equal(out, tokens)
    return fields


@SETTINGS
@given(st.one_of(st.binary(max_size=3000),
                 st.text(max_size=1500).map(lambda t: t.encode("utf-8", "surrogatepass")),
                 st.lists(st.sampled_from([b"the ", b"cat ", b"\n", b"  x = 1\n", b"Word, ", b"\xc3\xa9"]),
                          max_size=400).map(b"".join)))
def test_cmt2_round_trips_any_bytes(data):
    cmt2_round_trip(data)  # the kernel's own payload, whatever coder would win
    tokens, classes, vocab = text_stream(data)
    fields = encode_stream(tokens, vocab, coders=("cmt2",), classes=classes)
    out = decode_stream(msgpack.unpackb(msgpack.packb(fields), raw=False), vocab, max_count=len(tokens),
                        classes=classes)
    np.testing.assert_array_equal(out, tokens)


@pytest.mark.parametrize("data", [b"", b"x", b"\n", bytes(range(256)), bytes(range(256)) * 40,
                                  bytes(range(20)) * 300, bytes(range(60)) * 300,  # one 5 or 6-bit group
                                  b"a" * 100_000, b"ab" * 30_000, b"\x00" * 70_000 + b"\xff",
                                  bytes(np.random.default_rng(3).integers(0, 256, 50_000, dtype=np.uint8))])
def test_cmt2_edges_round_trip(data):
    """Empty, one byte, all 256 values (V = 256: 8-bit tokens), 20 and 60 values (one group of 5
    or 6 bits spanning several slots), long runs (both match models at their longest),
    incompressible bytes."""
    fields = cmt2_round_trip(data)
    if data[:2] == b"aa":
        assert len(fields["payload"]) < 200  # a long run costs almost nothing


def test_cmt2_beats_cmt_on_text_and_is_level_2s_choice():
    import ubpe.container
    import ubpe.tokenizer

    text = open(ubpe.tokenizer.__file__, "rb").read() + open(ubpe.container.__file__, "rb").read()  # prose + code
    tokens, classes, vocab = text_stream(text)
    cmt = encode_stream(tokens, vocab, coders=("cmt",), classes=classes)
    cmt2 = encode_stream(tokens, vocab, coders=("cm", "cmt", "cmt2"), classes=classes)
    assert cmt2["coder"] == "cmt2" and len(cmt2["payload"]) < 0.98 * len(cmt["payload"])
    assert encode_stream(tokens, vocab, coders=("cm", "cmt2"))["coder"] == "cm"  # no classes: not offered
    with pytest.raises(CorruptDataError, match="not bytes"):
        decode_stream(cmt2, vocab)
    # the same payload read as "cmt" (another model) is refused or decodes to other tokens
    try:
        assert not np.array_equal(decode_stream(dict(cmt2, coder="cmt"), vocab, classes=classes), tokens)
    except CorruptDataError:
        pass


@pytest.fixture(scope="module")
def cmt2_sample():
    import ubpe.tokenizer

    text = open(ubpe.tokenizer.__file__, "rb").read()[:6000]
    tokens, classes, vocab = text_stream(text)
    fields = {"coder": "cmt2", "n": int(tokens.size), "payload": cmt2_bytes(tokens, classes, vocab)}
    return fields, tokens, classes, vocab


def _cmt2_decodes_or_refuses(fields, tokens, classes, vocab) -> bool:
    """True when refused; a decode that returns must not be the original (2**-16 chance)."""
    try:
        out = decode_stream(fields, vocab, max_count=max(int(fields["n"]), 0), classes=classes)
    except CorruptDataError:
        return True
    return not np.array_equal(out, tokens)


def test_cmt2_truncated_and_extended_payloads_are_refused(cmt2_sample):
    fields, tokens, classes, vocab = cmt2_sample
    payload = fields["payload"]
    for cut in list(range(0, len(payload), max(len(payload) // 50, 1))) + [len(payload) - 1]:
        with pytest.raises(CorruptDataError):
            decode_stream(dict(fields, payload=payload[:cut]), vocab, classes=classes)
    for extra in (b"\x00", b"\x01", b"\xff" * 3):
        with pytest.raises(CorruptDataError):
            decode_stream(dict(fields, payload=payload + extra), vocab, classes=classes)


def test_cmt2_byte_flips_are_refused(cmt2_sample):
    fields, tokens, classes, vocab = cmt2_sample
    payload = fields["payload"]
    refused = 0
    positions = range(0, len(payload), max(len(payload) // 60, 1))
    for i in positions:
        for bit in (0, 3, 7):
            p = bytearray(payload)
            p[i] ^= 1 << bit
            refused += _cmt2_decodes_or_refuses(dict(fields, payload=bytes(p)), tokens, classes, vocab)
    assert refused == 3 * len(positions)


@SETTINGS
@given(st.binary(max_size=300), st.integers(0, 600), st.integers(1, 256))
def test_cmt2_garbage_payload_never_crashes(payload, n, vocab):
    classes = np.array([_cm.text_class(v) for v in range(vocab)], dtype=np.int64)
    try:
        out = decode_stream({"coder": "cmt2", "n": n, "payload": payload}, vocab, classes=classes)
    except CorruptDataError:
        return
    assert out.shape == (n,) and (n == 0 or int(out.max()) < vocab)


def test_cmt2_n_and_vocab_checked_before_decoding(cmt2_sample):
    fields, tokens, classes, vocab = cmt2_sample
    with pytest.raises(CorruptDataError, match="more tokens than"):
        decode_stream(dict(fields, n=10**12), vocab, classes=classes)
    with pytest.raises(CorruptDataError, match="exceeds max_count"):
        decode_stream(fields, vocab, max_count=int(fields["n"]) - 1, classes=classes)
    wide = np.zeros(300, dtype=np.int64)
    with pytest.raises(CorruptDataError, match="not bytes"):
        decode_stream(fields, 300, classes=wide)  # more than 256 symbols: not text
    for n in (int(fields["n"]) - 1, int(fields["n"]) + 1):
        assert _cmt2_decodes_or_refuses(dict(fields, n=n), tokens, classes, vocab)


#: (length, CRC-32) of test_cmt2_frozen_bytes's payload.
FROZEN_CMT2 = (1258, 218740474)


def test_cmt2_frozen_bytes():
    """The "cmt2" model is part of format version 4: these payloads never change."""
    rng = np.random.default_rng(7)
    words = [b"the ", b"Cat ", b"sat ", b"on ", b"a ", b"mat.", b"\n", b"1984 ", b"\xc3\xa9t\xc3\xa9 "]
    text = b"".join(words[int(i)] for i in rng.integers(0, len(words), 3000))
    tokens, classes, vocab = text_stream(text)
    payload = cmt2_bytes(tokens, classes, vocab)
    assert (len(payload), zlib.crc32(payload)) == FROZEN_CMT2
