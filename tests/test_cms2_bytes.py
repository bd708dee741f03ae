"""A guard for same-bytes work on the "cms2" kernel (issue 28, target 2: level 2's speed from the
cost of a binary decision, ``ubpe._kernels.cmsignal2``): payloads of streams of other shapes than
test_cms2.test_frozen_bytes's, from one code length to seven groups of four, in modes 0 and 1,
must stay these bytes, and decode exactly through the kernel. A kernel change that alters any of
them changes the format.

The expectations changed once on purpose, with the lighter model of issue 28 (h/l2lite: three
hashed contexts, tables of 2**13 slots at most, the APM and the flat bits' bypass as header
flags F; benchmarks/results/level2-lite.md). Each case now also states its F: the first has the
APM on and its one code length flat (every bit bypassed), the second the APM and a length, the
others bypass some lengths."""

from __future__ import annotations

import hashlib

import numpy as np
import pytest

from ubpe._kernels import cmsignal2

#: (case, bytes, the first 32 hex digits of the SHA-256 of the payload, mode, code length bound
#: L, flags F) of the lighter model (h/l2lite; main at d991b9d had 70, 27, 19521, 29111 and 7804
#: bytes); audio-like's flags from the encoder's first pass over 8 192 tokens, not all 30 000
#: (FLAT_PREFIX 32 768 -> 8 192: F 2146432 -> 2137216, 29 074 -> 29 076 bytes); heavy-tail's
#: from its first 2 048 of 8 000 tokens since FLAT_PREFIX 2 048 (issue 28: F 16320 -> 33570752,
#: 7 764 -> 7 767 bytes)
MAIN = (
    ("two-ids", 70, "721094f9636abf69880c63b50dfc5811", 0, 1, 3),
    ("short-walk", 27, "555d4bc090c07c17b17e3b9440f5d234", 1, 8, 5),
    ("wide-walk", 19482, "d94a2029cd55239c85a4176b338f1846", 1, 28, 32704),
    ("audio-like", 29076, "aa01deb731416515d69b2bf3cc33823b", 1, 22, 2137216),
    ("heavy-tail", 7767, "c51cf19be3f0ce841422d6076c5aaecb", 0, 26, 33570752),
)


def _cases() -> dict[str, tuple[np.ndarray, int]]:
    """(tokens, V) of each case, drawn in this order from one generator."""
    rng = np.random.default_rng(28)
    out = {"two-ids": (rng.integers(0, 2, 500), 2)}
    out["short-walk"] = (np.cumsum(rng.integers(-2, 3, 40)) + 20, 64)
    x = np.round(np.cumsum(rng.laplace(0, 40, 20000))).astype(np.int64)
    x -= x.min()
    out["wide-walk"] = (x, int(x.max()) + 1)
    t = np.arange(30000)
    s = np.round(3000 * np.sin(t / 37.0) * np.sin(t / 1111.0) + rng.normal(0, 25, t.size)).astype(np.int64)
    s -= s.min()
    out["audio-like"] = (s, int(s.max()) + 1)
    heavy = np.round(rng.standard_t(2, 8000) * 30).astype(np.int64)
    heavy -= heavy.min()
    out["heavy-tail"] = (heavy, int(heavy.max()) + 1)
    return out


@pytest.fixture(scope="module")
def cases():
    return _cases()


@pytest.mark.parametrize("name,size,digest,mode,maxlen,flags", MAIN)
def test_payloads_are_mains(cases, name, size, digest, mode, maxlen, flags):
    """Each payload is the frozen one (length, digest, header), and decodes to its tokens."""
    tokens, vocab = cases[name]
    tokens = np.ascontiguousarray(tokens, dtype=np.int32)
    buf = np.zeros(tokens.size * 4 + 256, dtype=np.uint8)
    length = cmsignal2.cms2_encode(tokens, vocab, buf)
    payload = buf[:length].tobytes()
    assert (len(payload), hashlib.sha256(payload).hexdigest()[:32]) == (size, digest)
    head = cmsignal2.parse_header(payload[:cmsignal2.MAX_HEADER], vocab, flags=True)
    assert head is not None and (head[0], head[2].size - 1, head[3]) == (mode, maxlen, flags)
    out = np.full(tokens.size, -1, dtype=np.int32)
    assert cmsignal2.cms2_decode(np.frombuffer(payload, np.uint8).copy(), vocab, out) == cmsignal2.OK
    np.testing.assert_array_equal(out, tokens)


def test_a_payload_cut_short_is_refused(cases):
    """The audio-like payload less its last byte is refused (the end's check and length)."""
    tokens, vocab = cases["audio-like"]
    tokens = np.ascontiguousarray(tokens, dtype=np.int32)
    buf = np.zeros(tokens.size * 4 + 256, dtype=np.uint8)
    length = cmsignal2.cms2_encode(tokens, vocab, buf)
    out = np.zeros(tokens.size, dtype=np.int32)
    assert cmsignal2.cms2_decode(buf[:length - 1].copy(), vocab, out) != cmsignal2.OK


def _pass(tokens, vocab, f):
    """The payload of ``tokens`` with the header's flags forced to ``f`` (the encoder's own
    second pass, ``cmsignal2._encode_pass``)."""
    mode, center, cnt = cmsignal2.plan(tokens, vocab)
    buf = np.zeros(tokens.size * 4 + 256, dtype=np.uint8)
    length = cmsignal2._encode_pass(tokens, vocab, buf, mode, center, cnt, f, cmsignal2.NO_COST)
    return buf[:length].copy(), cnt.size - 1


@pytest.mark.parametrize("name", ["short-walk", "audio-like", "heavy-tail"])
def test_every_flag_choice_decodes(cases, name):
    """Whatever F a writer chose (none, the APM alone, every length flat, both), the payload
    decodes to its tokens; every flat length set bypasses decisions, so the bytes differ."""
    tokens, vocab = cases[name]
    tokens = np.ascontiguousarray(tokens, dtype=np.int32)
    seen = set()
    cnt = cmsignal2.plan(tokens, vocab)[2]
    every = sum(1 << ll for ll in range(1, cnt.size) if cnt[ll] >= 2)  # the lengths with flat bits
    for f in (0, 1, every, every | 1):
        payload, _ = _pass(tokens, vocab, f)
        assert cmsignal2.parse_header(payload[:cmsignal2.MAX_HEADER].tobytes(), vocab, flags=True)[3] == f
        out = np.full(tokens.size, -1, dtype=np.int32)
        assert cmsignal2.cms2_decode(payload, vocab, out) == cmsignal2.OK
        np.testing.assert_array_equal(out, tokens)
        seen.add(payload.tobytes())
    assert len(seen) == 4


def test_bad_flags_are_refused(cases):
    """F past 2**(L + 1), F not minimal (a trailing zero byte), a flat flag of a length with
    fewer than 2 codes (no flat bits: the flag would change nothing, so F stays canonical) and F
    cut off are refused as ERR_LENGTH, before the kernel."""
    tokens, vocab = cases["short-walk"]
    tokens = np.ascontiguousarray(tokens, dtype=np.int32)
    mode, center, cnt = cmsignal2.plan(tokens, vocab)
    head = cmsignal2.header_bytes(mode, center, cnt)
    good, maxlen = _pass(tokens, vocab, 0)
    body = good.tobytes()[len(head) + 1:]  # F = 0 takes one byte
    out = np.zeros(tokens.size, dtype=np.int32)
    no_flat = [ll for ll in range(1, cnt.size) if cnt[ll] < 2]  # a flag there has no effect: refused
    assert no_flat
    for f in (bytes([0x80, 0x00]), cmsignal2._leb128(2 << maxlen), cmsignal2._leb128(1 << 40),
              cmsignal2._leb128(1 << no_flat[0])):
        bad = np.frombuffer(head + f + body, np.uint8).copy()
        assert cmsignal2.cms2_decode(bad, vocab, out) == cmsignal2.ERR_LENGTH
    assert cmsignal2.cms2_decode(np.frombuffer(head, np.uint8).copy(), vocab, out) == cmsignal2.ERR_LENGTH
    assert cmsignal2.cms2_decode(good.copy(), vocab, out) == cmsignal2.OK
