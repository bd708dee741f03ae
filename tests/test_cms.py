"""Spec tests for the "cms" signal coder (format version 4): round trips, its place among the coders,
determinism, corrupt and truncated payloads, frozen bytes."""

from __future__ import annotations

import zlib

import msgpack
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from test_cm import SETTINGS, streams

from ubpe._kernels import cmsignal
from ubpe.entropy import DEFAULT_CODERS, decode_stream, encode_stream
from ubpe.errors import CorruptDataError

#: level 2's coders while "cms" was its signal coder (format version 4; "cms2" took its place in 5)
CMS_LEVEL2 = DEFAULT_CODERS + ("cm", "cmt", "cmt2", "cms")


def cms_bytes(tokens: np.ndarray, vocab: int) -> bytes:
    """The raw "cms" payload, whatever its size (the kernel, bypassing the coder choice)."""
    tokens = np.ascontiguousarray(tokens, dtype=np.int32)
    buf = np.zeros(tokens.size * 4 + 64, dtype=np.uint8)
    length = cmsignal.cms_encode(tokens, vocab, buf)
    assert 0 <= length <= buf.size
    return buf[:length].tobytes()


def cms_fields(tokens: np.ndarray, vocab: int) -> dict:
    return {"coder": "cms", "n": int(len(tokens)), "payload": cms_bytes(tokens, vocab)}


def signal(n: int, seed: int = 3) -> tuple[np.ndarray, int]:
    """Ids (in value order) of a noisy AR(2) oscillation: the kind of stream "cms" is for."""
    rng = np.random.default_rng(seed)
    x = np.zeros(n)
    e = rng.normal(0, 3, n)
    for i in range(2, n):
        x[i] = 1.8 * x[i - 1] - 0.9 * x[i - 2] + e[i]
    values, ids = np.unique(np.round(x).astype(np.int64), return_inverse=True)
    return ids.astype(np.int64), len(values)


@SETTINGS
@given(streams())
def test_kernel_round_trip(case):
    tokens, vocab = case
    fields = cms_fields(tokens, vocab)
    out = decode_stream(msgpack.unpackb(msgpack.packb(fields), raw=False), vocab, max_count=len(tokens))
    assert out.dtype == np.int32
    np.testing.assert_array_equal(out, tokens)


@SETTINGS
@given(streams())
def test_stream_round_trip_at_level_2(case):
    tokens, vocab = case
    fields = encode_stream(tokens, vocab, coders=CMS_LEVEL2)
    assert fields["coder"] != "cm"  # "cms" takes its place for streams without text classes
    out = decode_stream(msgpack.unpackb(msgpack.packb(fields), raw=False), vocab, max_count=len(tokens))
    np.testing.assert_array_equal(out, tokens)


@pytest.mark.parametrize("vocab", [1, 2, 3, 16, 17, 31, 32, 33, 64, 65, 255, 256, 257, 4096, 70000,
                                   (1 << 24) - 1, 1 << 24])
def test_edges_round_trip(vocab):
    rng = np.random.default_rng(vocab)
    for n in (0, 1, 2, 5, 700):
        tokens = rng.integers(0, vocab, size=n)
        if n > 2:
            tokens[:2] = (0, vocab - 1)
        fields = cms_fields(tokens, vocab)
        np.testing.assert_array_equal(decode_stream(fields, vocab), tokens)
    assert cms_bytes(np.zeros(0, dtype=np.int64), vocab) == b""


def test_long_constant_run_is_tiny():
    tokens = np.full(200_000, 7, dtype=np.int64)
    tokens[0] = 3
    fields = cms_fields(tokens, 1 << 20)
    assert len(fields["payload"]) < 1500
    np.testing.assert_array_equal(decode_stream(fields, 1 << 20, max_count=tokens.size), tokens)


def test_cms_beats_cm_on_a_signal_and_replaces_it_at_level_2():
    tokens, vocab = signal(20000)
    cm = encode_stream(tokens, vocab, coders=("cm",))
    cms = encode_stream(tokens, vocab, coders=CMS_LEVEL2)
    assert cm["coder"] == "cm" and cms["coder"] == "cms"
    assert sorted(cms) == ["coder", "n", "payload"]
    assert len(cms["payload"]) < 0.98 * len(cm["payload"])
    np.testing.assert_array_equal(decode_stream(cms, vocab), tokens)
    assert encode_stream(tokens, vocab)["coder"] != "cms"  # not a level-1 candidate
    # with text classes "cm" stays (beside the text coders) and "cms" is not run
    from ubpe.entropy import text_classes

    classes = text_classes(np.arange(vocab, dtype=np.int64) % 256)
    if classes is not None:
        assert encode_stream(tokens, vocab, coders=("cm", "cms"), classes=classes)["coder"] in ("cm", "rans", "mag")


def test_deterministic():
    tokens, vocab = signal(20000, seed=5)
    a = encode_stream(tokens, vocab, coders=("cms",))
    b = encode_stream(tokens.astype(np.int32), vocab, coders=("cms",))
    assert a["coder"] == "cms" and a == b == cms_fields(tokens, vocab)


@pytest.fixture(scope="module")
def sample():
    tokens, vocab = signal(4000, seed=9)
    return cms_fields(tokens, vocab), tokens, vocab


def _decodes_or_refuses(fields, tokens, vocab) -> bool:
    """True when refused; a decode that returns must not be the original (2**-16 chance)."""
    try:
        out = decode_stream(fields, vocab, max_count=max(int(fields["n"]), 0))
    except CorruptDataError:
        return True
    return not np.array_equal(out, tokens)


def test_truncated_and_extended_payloads_are_refused(sample):
    fields, tokens, vocab = sample
    payload = fields["payload"]
    for cut in list(range(0, len(payload), max(len(payload) // 50, 1))) + [len(payload) - 1]:
        with pytest.raises(CorruptDataError):
            decode_stream(dict(fields, payload=payload[:cut]), vocab)
    for extra in (b"\x00", b"\x01", b"\xff" * 3):
        with pytest.raises(CorruptDataError):
            decode_stream(dict(fields, payload=payload + extra), vocab)


def test_byte_flips_are_refused(sample):
    fields, tokens, vocab = sample
    payload = fields["payload"]
    refused = 0
    positions = range(0, len(payload), max(len(payload) // 60, 1))
    for i in positions:
        for bit in (0, 3, 7):
            p = bytearray(payload)
            p[i] ^= 1 << bit
            refused += _decodes_or_refuses(dict(fields, payload=bytes(p)), tokens, vocab)
    assert refused == 3 * len(positions)


@SETTINGS
@given(st.binary(max_size=300), st.integers(0, 600), st.sampled_from([1, 2, 17, 300, 70000, 1 << 24]))
def test_garbage_payload_never_crashes(payload, n, vocab):
    try:
        out = decode_stream({"coder": "cms", "n": n, "payload": payload}, vocab)
    except CorruptDataError:
        return
    assert out.shape == (n,) and (n == 0 or int(out.max()) < vocab)


def test_fields_and_n_checked_before_decoding(sample):
    fields, tokens, vocab = sample
    with pytest.raises(CorruptDataError, match="more tokens than"):
        decode_stream(dict(fields, n=10**12), vocab)
    with pytest.raises(CorruptDataError, match="exceeds max_count"):
        decode_stream(fields, vocab, max_count=int(fields["n"]) - 1)
    with pytest.raises(CorruptDataError, match="unexpected fields"):
        decode_stream(dict(fields, center=3), vocab)
    with pytest.raises(CorruptDataError, match="more than n="):
        decode_stream(dict(fields, payload=fields["payload"] * 40), vocab)
    for n in (int(fields["n"]) - 1, int(fields["n"]) + 1):
        assert _decodes_or_refuses(dict(fields, n=n), tokens, vocab)
    # the same payload read as "cm" is another model: refused (or other tokens)
    assert _decodes_or_refuses(dict(fields, coder="cm"), tokens, vocab)


#: (length, CRC-32) of test_frozen_bytes's payloads: a signal, and tokens of 5-bit groups.
FROZEN_CMS = ((3328, 1033643666), (3117, 991330892))


def test_frozen_bytes():
    """The "cms" model is part of format version 4: these payloads never change."""
    tokens, vocab = signal(6000, seed=11)
    a = cms_bytes(tokens, vocab)
    rng = np.random.default_rng(12)
    wide = np.cumsum(rng.integers(-40, 41, 3000)) % 70000
    b = cms_bytes(wide, 70000)
    assert ((len(a), zlib.crc32(a)), (len(b), zlib.crc32(b))) == FROZEN_CMS
