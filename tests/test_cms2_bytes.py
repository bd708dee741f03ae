"""A guard for same-bytes work on the "cms2" kernel (issue 28, target 2: level 2's speed from the
cost of a binary decision, ``ubpe._kernels.cmsignal2``): payloads of streams of other shapes than
test_cms2.test_frozen_bytes's, from one code length to seven groups of four, in modes 0 and 1,
must stay main's (dfda3ca) bytes, and decode exactly through the kernel. A kernel change that
alters any of them changes the format."""

from __future__ import annotations

import hashlib

import numpy as np
import pytest

from ubpe._kernels import cmsignal2

#: (case, bytes, the first 32 hex digits of the SHA-256 of the payload, mode, code length bound
#: L) from main at dfda3ca, before this change (run in a detached worktree of main)
MAIN = (
    ("two-ids", 70, "5c392a5698e0628106d8bfc1947365d9", 0, 1),
    ("short-walk", 27, "e27d039465cefa8589b5f69b30d11db5", 1, 8),
    ("wide-walk", 19521, "3211652944253809d32b6ee49678d4ed", 1, 28),
    ("audio-like", 29111, "138fdd9273ab2dfce2a1c0b3561a7bc1", 1, 22),
    ("heavy-tail", 7804, "6b8a8847091323d8fea6092d61e0fdb4", 0, 26),
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


@pytest.mark.parametrize("name,size,digest,mode,maxlen", MAIN)
def test_payloads_are_mains(cases, name, size, digest, mode, maxlen):
    """Each payload is main's (length, digest, header), and decodes to its tokens."""
    tokens, vocab = cases[name]
    tokens = np.ascontiguousarray(tokens, dtype=np.int32)
    buf = np.zeros(tokens.size * 4 + 256, dtype=np.uint8)
    length = cmsignal2.cms2_encode(tokens, vocab, buf)
    payload = buf[:length].tobytes()
    assert (len(payload), hashlib.sha256(payload).hexdigest()[:32]) == (size, digest)
    head = cmsignal2.parse_header(payload[:cmsignal2.MAX_HEADER], vocab)
    assert head is not None and (head[0], head[2].size - 1) == (mode, maxlen)
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
