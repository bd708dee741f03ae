"""Spec tests for the "cmt2" text coder: round trips of any bytes, its place at level 2 (text
only, through its classes), truncated, extended and corrupt payloads, frozen bytes."""

from __future__ import annotations

import zlib

import msgpack
import numpy as np
import pytest
from coder_streams import SETTINGS, text_stream
from hypothesis import given
from hypothesis import strategies as st

from ubpe._kernels import cmcore
from ubpe.coders import coders_for, decode_stream, encode_stream
from ubpe.coders._cm import within_bound
from ubpe.errors import CorruptDataError


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


def prose_and_code() -> bytes:
    import ubpe.api
    import ubpe.tokenizer

    return open(ubpe.tokenizer.__file__, "rb").read() + open(ubpe.api.__file__, "rb").read()


@SETTINGS
@given(st.one_of(st.binary(max_size=3000),
                 st.text(max_size=1500).map(lambda t: t.encode("utf-8", "surrogatepass")),
                 st.lists(st.sampled_from([b"the ", b"cat ", b"\n", b"  x = 1\n", b"Word, ", b"\xc3\xa9"]),
                          max_size=400).map(b"".join)))
def test_round_trips_any_bytes(data):
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
def test_edges_round_trip(data):
    """Empty, one byte, all 256 values (V = 256: 8-bit tokens), 20 and 60 values (one group of 5
    or 6 bits spanning several slots), long runs (both match models at their longest),
    incompressible bytes. A stream of more tokens per payload bit than the format allows (the
    long runs) is refused by the reader and never written."""
    tokens, classes, vocab = text_stream(data)
    payload = cmt2_bytes(tokens, classes, vocab)
    if within_bound(tokens.size, len(payload)):
        cmt2_round_trip(data)
        return
    assert data[:2] in (b"aa", b"ab", b"\x00\x00")  # only the long runs code so densely
    fields = {"coder": "cmt2", "n": int(tokens.size), "payload": payload}
    with pytest.raises(CorruptDataError, match="a bit"):
        decode_stream(fields, vocab, max_count=len(tokens), classes=classes)
    assert encode_stream(tokens, vocab, coders=coders_for(2), classes=classes)["coder"] != "cmt2"


def test_is_level_2s_choice_on_text_and_needs_the_classes():
    tokens, classes, vocab = text_stream(prose_and_code())
    static = encode_stream(tokens, vocab, coders=coders_for(1), classes=classes)
    cmt2 = encode_stream(tokens, vocab, coders=coders_for(2), classes=classes)
    assert cmt2["coder"] == "cmt2" and len(msgpack.packb(cmt2)) < 0.45 * len(msgpack.packb(static))  # 0.38 measured
    assert encode_stream(tokens, vocab, coders=coders_for(2))["coder"] != "cmt2"  # no classes: not offered
    with pytest.raises(CorruptDataError, match="not bytes"):
        decode_stream(cmt2, vocab)
    # the same payload read as "cms2" (another model) is refused or decodes to other tokens
    try:
        assert not np.array_equal(decode_stream(dict(cmt2, coder="cms2"), vocab), tokens)
    except CorruptDataError:
        pass
    other = classes.copy()
    other[other > 0] = 1 << 3  # different classes decode to different tokens (or are refused)
    try:
        assert not np.array_equal(decode_stream(cmt2, vocab, classes=other), tokens)
    except CorruptDataError:
        pass


def test_deterministic():
    tokens, classes, vocab = text_stream(prose_and_code()[:8000])
    a = encode_stream(tokens, vocab, coders=("cmt2",), classes=classes)
    b = encode_stream(tokens.astype(np.int32), vocab, coders=("cmt2",), classes=classes.copy())
    assert a["coder"] == "cmt2" and a == b and a["payload"] == cmt2_bytes(tokens, classes, vocab)


@pytest.fixture(scope="module")
def sample():
    import ubpe.tokenizer

    text = open(ubpe.tokenizer.__file__, "rb").read()[:6000]
    tokens, classes, vocab = text_stream(text)
    fields = {"coder": "cmt2", "n": int(tokens.size), "payload": cmt2_bytes(tokens, classes, vocab)}
    return fields, tokens, classes, vocab


def _decodes_or_refuses(fields, tokens, classes, vocab) -> bool:
    """True when refused; a decode that returns must not be the original (2**-16 chance)."""
    try:
        out = decode_stream(fields, vocab, max_count=max(int(fields["n"]), 0), classes=classes)
    except CorruptDataError:
        return True
    return not np.array_equal(out, tokens)


def test_truncated_and_extended_payloads_are_refused(sample):
    fields, tokens, classes, vocab = sample
    payload = fields["payload"]
    for cut in list(range(0, len(payload), max(len(payload) // 50, 1))) + [len(payload) - 1]:
        with pytest.raises(CorruptDataError):
            decode_stream(dict(fields, payload=payload[:cut]), vocab, classes=classes)
    for extra in (b"\x00", b"\x01", b"\xff" * 3):
        with pytest.raises(CorruptDataError):
            decode_stream(dict(fields, payload=payload + extra), vocab, classes=classes)


def test_byte_flips_are_refused(sample):
    fields, tokens, classes, vocab = sample
    payload = fields["payload"]
    refused = 0
    positions = range(0, len(payload), max(len(payload) // 60, 1))
    for i in positions:
        for bit in (0, 3, 7):
            p = bytearray(payload)
            p[i] ^= 1 << bit
            refused += _decodes_or_refuses(dict(fields, payload=bytes(p)), tokens, classes, vocab)
    assert refused == 3 * len(positions)


@SETTINGS
@given(st.binary(max_size=300), st.integers(0, 600), st.integers(1, 256))
def test_garbage_payload_never_crashes(payload, n, vocab):
    classes = np.array([cmcore.text_class(v) for v in range(vocab)], dtype=np.int64)
    try:
        out = decode_stream({"coder": "cmt2", "n": n, "payload": payload}, vocab, classes=classes)
    except CorruptDataError:
        return
    assert out.shape == (n,) and (n == 0 or int(out.max()) < vocab)


def test_n_and_vocab_checked_before_decoding(sample):
    fields, tokens, classes, vocab = sample
    with pytest.raises(CorruptDataError, match="more tokens than"):
        decode_stream(dict(fields, n=10**12), vocab, classes=classes)
    with pytest.raises(CorruptDataError, match="exceeds max_count"):
        decode_stream(fields, vocab, max_count=int(fields["n"]) - 1, classes=classes)
    wide = np.zeros(300, dtype=np.int64)
    with pytest.raises(CorruptDataError, match="not bytes"):
        decode_stream(fields, 300, classes=wide)  # more than 256 symbols: not text
    with pytest.raises(CorruptDataError, match="unexpected fields"):
        decode_stream(dict(fields, freq=b""), vocab, classes=classes)
    with pytest.raises(CorruptDataError, match="missing"):
        decode_stream({"coder": "cmt2", "n": 3}, vocab, classes=classes)
    for n in (int(fields["n"]) - 1, int(fields["n"]) + 1):
        assert _decodes_or_refuses(dict(fields, n=n), tokens, classes, vocab)


#: (length, CRC-32) of test_frozen_bytes's payload.
FROZEN_CMT2 = (1258, 218740474)


def test_frozen_bytes():
    """The "cmt2" model is part of the format: these payloads never change."""
    rng = np.random.default_rng(7)
    words = [b"the ", b"Cat ", b"sat ", b"on ", b"a ", b"mat.", b"\n", b"1984 ", b"\xc3\xa9t\xc3\xa9 "]
    text = b"".join(words[int(i)] for i in rng.integers(0, len(words), 3000))
    tokens, classes, vocab = text_stream(text)
    payload = cmt2_bytes(tokens, classes, vocab)
    assert (len(payload), zlib.crc32(payload)) == FROZEN_CMT2
