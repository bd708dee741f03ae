"""Spec tests for what the context-mixing coders share (``ubpe._kernels.cmcore``, normative for the
"cms2" and "cmt2" payloads): the squash and stretch tables, the binary arithmetic coder and the
end of a stream, the match model's step, the text classes of byte values. (The "cm" and "cmt"
coders that first had these parts are gone; "cms2" and "cmt2" have their own test files.)"""

from __future__ import annotations

import numba
import numpy as np
import pytest

from ubpe._kernels import cmcore
from ubpe.coders import text_classes


@numba.njit
def _tables():
    sq = cmcore._squash_table()
    return sq, cmcore._stretch_table(sq)


def test_squash_is_the_logistic_in_4096ths_and_stretch_its_inverse():
    """squash(d) ~ 4096 / (1 + exp(-d / 256)) on [-2047, 2047], in [1, 4095], non-decreasing;
    stretch(p) is the smallest d with squash(d) >= p (2047 if none)."""
    sq, st = _tables()
    d = np.arange(-2047, 2048)
    assert sq.shape == (4095,) and st.shape == (4096,)
    assert sq.min() >= 1 and sq.max() <= 4095 and (np.diff(sq) >= 0).all()
    logistic = 4096 / (1 + np.exp(-d / 256))
    assert np.abs(sq - logistic).max() < 20  # 33 knots, linearly interpolated
    assert sq[2047] == 2048  # squash(0) = 1/2
    for p in range(4096):
        at_least = np.flatnonzero(sq >= p)
        want = int(d[at_least[0]]) if at_least.size else 2047
        assert st[p] == want
    assert (sq[st[sq] + 2047] == sq).all()  # squash(stretch(squash(d))) = squash(d)


@numba.njit
def _code_bits(bits, probs, chk, buf):
    """Encode ``bits`` at ``probs`` then the end of the stream; return the length written."""
    x1, x2, x, pos = np.int64(0), np.int64(0xFFFFFFFF), np.int64(0), 0
    nb = buf.shape[0]
    for i in range(bits.shape[0]):
        x1, x2, x, pos, _ = cmcore._code_bit(x1, x2, x, pos, buf, nb, probs[i], bits[i], False)
    return cmcore._finish(x1, x2, x, pos, buf, nb, bits.shape[0], chk, False)


@numba.njit
def _decode_bits(buf, probs, chk, out):
    """Decode ``out.shape[0]`` bits at ``probs`` from ``buf`` (length checked); return the status."""
    nb = buf.shape[0]
    x = np.int64(0)
    for j in range(4):
        x = (x << 8) | (np.int64(buf[j]) if j < nb else 0)
    x1, x2, pos = np.int64(0), np.int64(0xFFFFFFFF), 0
    for i in range(out.shape[0]):
        x1, x2, x, pos, y = cmcore._code_bit(x1, x2, x, pos, buf, nb, probs[i], 0, True)
        out[i] = y
    return cmcore._finish(x1, x2, x, pos, buf, nb, out.shape[0], chk, True)


@pytest.mark.parametrize("n, seed", [(0, 0), (1, 1), (7, 2), (5000, 3)])
def test_arithmetic_coder_round_trips_and_checks_the_end(n, seed):
    """Bits coded at any probabilities in [1, 4095] decode back; the payload's exact length, its
    final bytes and the 16 check bits are insisted on."""
    rng = np.random.default_rng(seed)
    probs = rng.integers(1, 4096, n).astype(np.int64)
    bits = (rng.integers(0, 4096, n) < probs).astype(np.int64)  # drawn at those probabilities
    chk = int(rng.integers(0, 1 << 16))
    buf = np.zeros(n + 64, np.uint8)
    length = _code_bits(bits, probs, chk, buf)
    assert 0 <= length <= n // 8 + 8 if n < 100 else length < 0.9 * n / 8  # well coded: below 1 bit each
    payload = buf[:length].copy()
    out = np.zeros(n, np.int64)
    assert _decode_bits(payload, probs, chk, out) == cmcore.OK and np.array_equal(out, bits)
    assert _decode_bits(np.concatenate([payload, [0]]).astype(np.uint8), probs, chk, out) == cmcore.ERR_LENGTH
    if n:
        assert _decode_bits(payload, probs, chk ^ 1, out) == cmcore.ERR_CHECK
        assert all(_decode_bits(payload[:k].copy(), probs, chk, out) != cmcore.OK for k in range(length))


def test_match_model_finds_a_repeat_and_predicts_what_followed():
    """After ``min_len`` tokens of a repeat the match model points at the token that followed
    them before; in a stretch of new tokens it has no match (matches are verified)."""
    min_len, max_len, top = 4, 32, 1 << 20
    rng = np.random.default_rng(4)
    first = rng.permutation(1000)[:60]
    tokens = np.concatenate([first, first]).astype(np.int32)
    table = np.zeros(1 << 10, np.int32)
    mlen, mptr = 0, 0
    for i, tok in enumerate(tokens[:-1].tolist()):
        pt = (int(tokens[mptr]) | top) if mlen > 0 else 0
        mlen, mptr = cmcore._match_step(tokens, i, tok, pt, top, mlen, mptr, table, table.size - 1,
                                        min_len, max_len)
        if i < 60:
            assert mlen == 0  # no token repeats in the first copy
        elif i >= 60 + min_len - 1:
            assert mlen >= min_len and tokens[mptr] == tokens[i + 1]
    assert mlen == 59  # extended by one with every correctly predicted token


def test_text_classes():
    """A byte's class: word code (lower-case letter, digit or the byte from 128), character class
    (other, word byte, space or line feed, punctuation), line-feed bit."""
    text_class = cmcore.text_class
    assert text_class(ord("a")) == text_class(ord("A")) == (ord("a") << 3) | (1 << 1)
    assert text_class(ord("7")) >> 3 == ord("7") and text_class(200) >> 3 == 200
    assert text_class(10) == (2 << 1) | 1 and text_class(32) == 2 << 1 and text_class(ord(",")) == 3 << 1
    assert text_class(0) == 0 and text_class(-1) == 0 and text_class(256) == 0
    assert text_classes(np.arange(257)) is None and text_classes([-1, 5]) is None
    assert text_classes(["a", "b"]) is None and text_classes([]) is None
    assert text_classes(np.array([97, 10])).tolist() == [text_class(97), text_class(10)]
    assert text_classes(np.arange(256)).tolist() == [text_class(v) for v in range(256)]


def test_hash_mixes_every_bit():
    """The context hash is a 32-bit value; flipping one input bit changes about half its bits."""
    rng = np.random.default_rng(6)
    flips = []
    for _ in range(300):
        h, x, b = int(rng.integers(0, 1 << 32)), int(rng.integers(0, 1 << 32)), int(rng.integers(0, 32))
        a = cmcore._hash_python(h, x)
        assert 0 <= a < 1 << 32
        flips.append(bin(a ^ cmcore._hash_python(h, x ^ (1 << b))).count("1"))
    assert 12 < sum(flips) / len(flips) < 20 and min(flips) > 0
