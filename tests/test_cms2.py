"""Spec tests for the "cms2" signal coder: the fitted binary code and its header, round trips, its
place in level 2, determinism, corrupt and truncated payloads, frozen bytes."""

from __future__ import annotations

import zlib

import msgpack
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from coder_streams import SETTINGS, signal, streams
from common import json_without_jit
from conftest import SLOW

from ubpe._kernels import cmcore, cmsignal2
from ubpe.coders import coders_for, decode_stream, encode_stream, text_classes
from ubpe.coders._cm import within_bound
from ubpe.errors import CorruptDataError

LEVEL2_CODERS = coders_for(2)


def cms2_bytes(tokens: np.ndarray, vocab: int) -> bytes:
    """The raw "cms2" payload, whatever its size (the kernel, bypassing the coder choice)."""
    tokens = np.ascontiguousarray(tokens, dtype=np.int32)
    buf = np.zeros(tokens.size * 4 + 256, dtype=np.uint8)
    length = cmsignal2.cms2_encode(tokens, vocab, buf)
    assert 0 <= length <= buf.size
    return buf[:length].tobytes()


def cms2_fields(tokens: np.ndarray, vocab: int) -> dict:
    return {"coder": "cms2", "n": int(len(tokens)), "payload": cms2_bytes(tokens, vocab)}


def residuals(n: int, seed: int = 4) -> tuple[np.ndarray, int]:
    """Ids of white Laplacian noise around the middle: a residual stream (the center wins)."""
    rng = np.random.default_rng(seed)
    x = np.round(rng.laplace(0, 6, n)).astype(np.int64)
    values, ids = np.unique(x, return_inverse=True)
    return ids.astype(np.int64), len(values)


def decode(fields: dict, vocab: int) -> np.ndarray:
    return decode_stream(msgpack.unpackb(msgpack.packb(fields), raw=False), vocab, max_count=int(fields["n"]))


# ------------------------------------------------------------------ round trips


@SETTINGS
@given(streams())
def test_kernel_round_trip(case):
    tokens, vocab = case
    out = decode(cms2_fields(tokens, vocab), vocab)
    assert out.dtype == np.int32
    np.testing.assert_array_equal(out, tokens)


@SETTINGS
@given(streams(max_len=600, max_vocab=1 << 24))
def test_kernel_round_trip_wide_vocabularies(case):
    tokens, vocab = case
    np.testing.assert_array_equal(decode(cms2_fields(tokens, vocab), vocab), tokens)


@SETTINGS
@given(streams())
def test_stream_round_trip_at_level_2(case):
    tokens, vocab = case
    fields = encode_stream(tokens, vocab, coders=LEVEL2_CODERS)
    assert fields["coder"] != "cmt2"  # no text classes: not offered
    np.testing.assert_array_equal(decode(fields, vocab), tokens)


@pytest.mark.parametrize("vocab", [1, 2, 3, 16, 17, 31, 32, 33, 255, 256, 257, 4096, 70000,
                                   (1 << 24) - 1, 1 << 24])
def test_edges_round_trip(vocab):
    rng = np.random.default_rng(vocab)
    # at the widest vocabularies the encoder's setup costs about 2 s of CPU whatever the length:
    # there, the 2- and 5-token streams (covered at every other width here, and at widths up to
    # 2**24 by test_kernel_round_trip_wide_vocabularies) run in the broad tier (UBPE_SLOW_TESTS)
    lengths = (0, 1, 2, 5, 700) if SLOW or vocab < 1 << 23 else (0, 1, 700)
    for n in lengths:
        tokens = rng.integers(0, vocab, size=n)
        if n > 2:
            tokens[:2] = (0, vocab - 1)
        fields = cms2_fields(tokens, vocab)
        np.testing.assert_array_equal(decode_stream(fields, vocab), tokens)
        const = np.full(n, vocab // 2)
        np.testing.assert_array_equal(decode_stream(cms2_fields(const, vocab), vocab), const)
    assert cms2_bytes(np.zeros(0, dtype=np.int64), vocab) == b""


def test_long_constant_run_is_tiny_and_beyond_the_format_bound():
    """A predictable run costs almost nothing: so little that it holds more tokens per payload
    bit than the format allows (MAX_TOKENS_PER_BIT): the reader refuses such a stream and the
    writer codes it otherwise; a run within the bound round-trips."""
    tokens = np.full(200_000, 7, dtype=np.int64)
    tokens[0] = 3
    fields = cms2_fields(tokens, 1 << 20)
    assert len(fields["payload"]) < 400
    with pytest.raises(CorruptDataError, match="a bit"):
        decode_stream(fields, 1 << 20, max_count=tokens.size)
    assert encode_stream(tokens, 1 << 20, coders=("packed", "cms2"))["coder"] == "packed"
    short = tokens[:8000]
    fields = cms2_fields(short, 1 << 20)
    assert within_bound(short.size, len(fields["payload"]))
    np.testing.assert_array_equal(decode_stream(fields, 1 << 20, max_count=short.size), short)


# ------------------------------------------------------------------ the fitted code


def walk(n: int, seed: int = 7) -> tuple[np.ndarray, int]:
    """Ids of a random walk: the previous token predicts best (mode 1)."""
    x = np.cumsum(np.random.default_rng(seed).integers(-5, 6, n))
    values, ids = np.unique(x, return_inverse=True)
    return ids.astype(np.int64), len(values)


def test_mode_follows_the_stream():
    """A random walk is coded around the previous token (mode 1), an oscillation around the linear
    prediction (mode 2), residuals around the center (mode 0)."""
    (w, vw), (osc, vo), (res, vr) = walk(5000), signal(5000, seed=2), residuals(5000)
    assert (cms2_bytes(w, vw)[0], cms2_bytes(osc, vo)[0], cms2_bytes(res, vr)[0]) == (1, 2, 0)
    mode, center, cnt = cmsignal2.plan(res, vr)
    assert mode == 0 and center == int(np.sort(res)[(res.size - 1) // 2])
    assert cmsignal2.header_bytes(mode, center, cnt) == cms2_bytes(res, vr)[:len(cmsignal2.header_bytes(mode, center, cnt))]


def test_code_is_complete_and_short():
    """The lengths form a complete prefix code over u, and the mean code length (decisions per
    token) is within a bit of the ranks' entropy, far below bit_length(V - 1)."""
    tokens, vocab = signal(20000, seed=6)
    mode, center, cnt = cmsignal2.plan(tokens, vocab)
    L = cnt.size - 1
    assert sum(int(k) << (L - ll) for ll, k in enumerate(cnt)) == 1 << L and int(cnt.sum()) <= vocab
    t = tokens.astype(np.int64)
    P = np.full(t.size, center)
    assert mode == 2
    P[1] = t[0]
    P[2:] = np.clip(2 * t[1:-1] - t[:-2], 0, vocab - 1)
    u = cmsignal2._ranks(t, P, vocab)
    assert u.max() < cnt.sum()
    lengths = np.repeat(np.arange(L + 1), cnt)
    mean = float(lengths[u].mean())
    p = np.bincount(u) / u.size
    entropy = float(-(p[p > 0] * np.log2(p[p > 0])).sum())
    assert entropy <= mean < entropy + 1 < (vocab - 1).bit_length()


def test_ranks_are_a_bijection():
    for vocab in (1, 2, 3, 10, 11):
        for P in range(vocab):
            u = cmsignal2._ranks(np.arange(vocab), np.full(vocab, P), vocab)
            assert sorted(u.tolist()) == list(range(vocab))
            assert u[P] == 0 and (P + 1 >= vocab or u[P + 1] == 1)


@pytest.mark.parametrize("n, vocab, seed", [(1, 2, 0), (2, 3, 1), (3, 2, 2), (50, 17, 3), (3000, 1000, 4),
                                            (3000, 5, 5), (200, 1 << 20, 6)])
def test_rank_counts_are_the_histograms_of_the_ranks(n, vocab, seed):
    """The encoder's compiled histograms of u in modes 0, 1 and 2 (the first token predicted by any
    center, the second by the first in mode 2) equal np.bincount of _ranks, array for array."""
    rng = np.random.default_rng(seed)
    walk = np.clip(np.cumsum(rng.integers(-3, 4, n)) + vocab // 2, 0, vocab - 1)
    for t in (rng.integers(0, vocab, n), walk, np.full(n, vocab - 1)):
        t = t.astype(np.int32)
        center = int(rng.integers(0, vocab))
        P1 = np.concatenate([[center], t[:-1]]).astype(np.int64)
        P2 = P1.copy()
        P2[2:] = np.clip(2 * P1[2:] - t[:-2], 0, vocab - 1)
        want = [np.bincount(cmsignal2._ranks(t.astype(np.int64), P, vocab)) for P in (np.int64(center), P1, P2)]
        got = cmsignal2._rank_counts(t, vocab, center)
        assert len(got) == 3
        for g, w in zip(got, want):
            assert g.dtype == np.int64 and np.array_equal(g, w)


def test_encode_bit_is_the_shared_coders_encoding():
    """The encoder's coder step (_encode_bit, with 4 bytes of room) gives cmcore._code_bit's
    interval and position and the same settled bytes, for every number (0..4) of bytes shifted out."""
    _code_bit = cmcore._code_bit

    rng = np.random.default_rng(7)
    states = [(0, 0xFFFFFFFF), (0x00FFFFFF, 0x01000000), (0x12345678, 0x12345679),
              (0x12345678, 0x12345678), (0xABCDEF00, 0xABCDEFFF)]
    for _ in range(3000):
        x1 = int(rng.integers(0, 1 << 32))
        x2 = int(rng.integers(x1, min(x1 + (1 << int(rng.integers(1, 33))), 1 << 32)))
        states.append((x1, x2))
    shifted = set()
    for k, (x1, x2) in enumerate(states):
        p, y, pos = int(rng.integers(1, 4096)), k & 1, int(rng.integers(0, 4))
        want, got = np.zeros(8, np.uint8), np.zeros(8, np.uint8)
        w1, w2, _, wpos, _ = _code_bit(x1, x2, 0, pos, want, 8, p, y, False)
        g1, g2, gpos = cmsignal2._encode_bit(x1, x2, pos, got, p, y)
        assert (g1, g2, gpos) == (w1, w2, wpos)
        assert np.array_equal(got[:gpos], want[:wpos])
        shifted.add(wpos - pos)
    assert shifted == {0, 1, 2, 3, 4}


def test_adapt_table_is_the_slot_entry_update():
    """Entry e (in memory count c << 12 | probability p) after bit y is p += ((y << 12) - p) * r
    >> 16 with r = 131072 // (2k + 3), k = c below 12 and 16c - 164 from 12, clamped to [1,
    4095], and c + 1 up to 15: for every one of the 2**17 (y, e), and read-only."""
    nxt = cmsignal2._adapt_table()
    assert nxt.dtype == np.uint16 and nxt.shape == (1 << 17,) and not nxt.flags.writeable
    assert cmsignal2._adapt_table() is nxt  # built once
    want = np.empty(1 << 17, np.int64)
    for y in (0, 1):
        for e in range(1 << 16):
            p, c = e & 4095, e >> 12
            r = 131072 // (2 * (c if c < 12 else 16 * c - 164) + 3)
            p = min(max(p + ((((y << 12) - p) * r) >> 16), 1), 4095)
            want[(y << 16) | e] = (min(c + 1, 15) << 12) | p
    assert np.array_equal(nxt, want)
    assert cmsignal2.RESET == 2048
    assert nxt[(1 << 16) | 2048] == (1 << 12) | 3413  # a reset entry after a 1: r = 43690


def header(mode, center, counts):
    return cmsignal2.header_bytes(mode, center, np.array([0] + counts, dtype=np.int64))


@pytest.mark.parametrize("data, vocab", [
    (b"", 10),
    (header(3, 0, [2]), 10),  # mode 3 is not defined
    (header(0, 10, [2]), 10),  # center >= V
    (header(0, 0, [1]), 10),  # incomplete code
    (header(0, 0, [1, 3]), 10),  # over-complete code
    (header(0, 0, [0, 4, 0]), 10),  # k_L = 0
    (header(0, 0, [0, 0, 0, 16]), 10),  # U = 16 > V
    (bytes([0, 0, 0]), 10),  # L = 0 needs V = 1
    (bytes([0, 0, 1, 2]), 1),  # V = 1 needs L = 0
    (bytes([0, 0, 31]) + bytes(31), 1 << 24),  # L > 30
    (bytes([0, 0x80, 0x00, 1, 2]), 10),  # a center of two bytes that fits one (not minimal)
    (bytes([0, 0, 1, 0x82, 0x00]), 10),  # not minimal count
    (bytes([0, 0, 2, 1]), 10),  # truncated
    (bytes([0, 0x80, 0x80, 0x80, 0x80, 0x01]), 1 << 24),  # center of 5 bytes
])
def test_invalid_headers_are_refused(data, vocab):
    assert cmsignal2.parse_header(data, vocab) is None
    with pytest.raises(CorruptDataError):
        decode_stream({"coder": "cms2", "n": 3, "payload": data + bytes(8)}, vocab)


def test_valid_headers_parse():
    assert cmsignal2.parse_header(bytes([0, 0, 0]), 1)[0:2] == (0, 0)
    mode, center, cnt, length = cmsignal2.parse_header(header(1, 300, [1, 1, 2]) + b"rest", 1000)
    assert (mode, center, cnt.tolist(), length) == (1, 300, [0, 1, 1, 2], 7)


# ------------------------------------------------------------------ level 2, determinism, speed


def test_is_level_2s_choice_on_a_signal():
    """On a predictable signal's ids "cms2" is much smaller than level 1's coders; it is not
    offered at level 1 nor to streams with text classes."""
    tokens, vocab = signal(20000)
    static = encode_stream(tokens, vocab, coders=coders_for(1))
    cms2 = encode_stream(tokens, vocab, coders=LEVEL2_CODERS)
    assert static["coder"] in ("rans", "mag") and cms2["coder"] == "cms2"
    assert sorted(cms2) == ["coder", "n", "payload"]
    assert len(msgpack.packb(cms2)) < 0.7 * len(msgpack.packb(static))  # 0.61 measured
    np.testing.assert_array_equal(decode_stream(cms2, vocab), tokens)
    classes = text_classes(np.arange(vocab, dtype=np.int64) % 256)
    assert classes is not None
    assert encode_stream(tokens, vocab, coders=("packed", "cms2"), classes=classes)["coder"] == "packed"


def test_deterministic():
    tokens, vocab = signal(20000, seed=5)
    a = encode_stream(tokens, vocab, coders=("cms2",))
    b = encode_stream(tokens.astype(np.int32), vocab, coders=("cms2",))
    assert a["coder"] == "cms2" and a == b == cms2_fields(tokens, vocab)


def test_one_compiled_loop_for_both_directions():
    """Encoding and decoding run the same compiled loop (no second compilation)."""
    tokens, vocab = signal(3000, seed=8)
    fields = cms2_fields(tokens, vocab)
    decode_stream(fields, vocab)
    cms2_fields(tokens[:100], vocab)
    assert len(cmsignal2._code.signatures) == 1


# ------------------------------------------------------------------ malformed payloads


@pytest.fixture(scope="module")
def sample():
    tokens, vocab = signal(4000, seed=9)
    return cms2_fields(tokens, vocab), tokens, vocab


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
    for cut in list(range(0, len(payload), max(len(payload) // 50, 1))) + list(range(1, 12)) + [len(payload) - 1]:
        with pytest.raises(CorruptDataError):
            decode_stream(dict(fields, payload=payload[:cut]), vocab)
    for extra in (b"\x00", b"\x01", b"\xff" * 3):
        with pytest.raises(CorruptDataError):
            decode_stream(dict(fields, payload=payload + extra), vocab)


def test_byte_flips_are_refused(sample):
    fields, tokens, vocab = sample
    payload = fields["payload"]
    refused = 0
    positions = list(range(12)) + list(range(12, len(payload), max(len(payload) // 60, 1)))
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
        out = decode_stream({"coder": "cms2", "n": n, "payload": payload}, vocab)
    except CorruptDataError:
        return
    assert out.shape == (n,) and (n == 0 or int(out.max()) < vocab)


@SETTINGS
@given(st.integers(0, 1), st.integers(0, 20), st.lists(st.integers(0, 5), min_size=1, max_size=8),
       st.binary(max_size=60), st.integers(0, 300))
def test_garbage_after_a_valid_header_never_crashes(mode, center, counts, body, n):
    """Any complete code over any vocabulary: decoding garbage is refused or yields ids < V."""
    L = len(counts)
    counts[-1] += 1
    kraft = sum(k << (L - 1 - ll) for ll, k in enumerate(counts))
    if kraft > 1 << L:
        return
    counts[-1] += (1 << L) - kraft  # complete the code with codes of length L
    vocab = max(sum(counts), center + 1)
    head = header(mode, center, counts)
    assert cmsignal2.parse_header(head, vocab) is not None
    try:
        out = decode_stream({"coder": "cms2", "n": n, "payload": head + body}, vocab)
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
    with pytest.raises(CorruptDataError, match="not bytes"):  # read as "cmt2": no text classes
        decode_stream(dict(fields, coder="cmt2"), vocab)
    classes = text_classes(np.arange(vocab) % 256)  # another model: refused or other tokens
    try:
        assert not np.array_equal(decode_stream(dict(fields, coder="cmt2"), vocab, classes=classes), tokens)
    except CorruptDataError:
        pass


#: (length, CRC-32) of test_frozen_bytes's payloads: an oscillation (mode 2), residuals (mode 0),
#: a walk over 70000 ids (mode 1; codes of up to about 12 bits: three groups), and a longer
#: oscillation whose tables reach the largest size (2**13 slots each). Changed on purpose by
#: the lighter model of issue 28 (3 contexts, tables of 2**13 slots at most, the APM a flag, the
#: flat flags F, set in each; benchmarks/results/level2-lite.md).
#: The residuals' flags from the first 2 048 of their 6 000 tokens since FLAT_PREFIX 2 048 (issue
#: 28: F 15904 -> 15184, 3 818 -> 3 820 bytes).
FROZEN_CMS2 = ((2948, 2064919183), (3820, 2957675288), (3695, 3032692559), (18977, 4150465298))
#: F of each (test_frozen_bytes; the last from the encoder's first pass over 10 000 of its 40 000
#: tokens since FLAT_PREFIX 8 192: F 49160 -> 16392, the same length)
FROZEN_FLAGS = (3080, 15184, 3840, 16392)


def test_frozen_bytes():
    """The "cms2" model is part of the format: these payloads never change."""
    tokens, vocab = signal(6000, seed=11)
    a = cms2_bytes(tokens, vocab)
    res, vr = residuals(6000, seed=13)
    b = cms2_bytes(res, vr)
    rng = np.random.default_rng(12)
    wide = np.cumsum(rng.integers(-400, 401, 3000)) % 70000
    c = cms2_bytes(wide, 70000)
    long, vl = signal(40000, seed=14)
    d = cms2_bytes(long, vl)
    assert (a[0], b[0], c[0], d[0]) == (2, 0, 1, 2)
    got = tuple((len(p), zlib.crc32(p)) for p in (a, b, c, d))
    assert got == FROZEN_CMS2
    heads = [cmsignal2.parse_header(p[:cmsignal2.MAX_HEADER], v, flags=True) for p, v in
             ((a, vocab), (b, vr), (c, 70000), (d, vl))]
    assert tuple(h[3] for h in heads) == FROZEN_FLAGS
    assert np.array_equal(decode(cms2_fields(long, vl), vl), long)


def test_the_flags_measure_needs_no_coding():
    """The first pass measured with an empty buffer (nothing coded) counts exactly what a coded
    first pass counts, so the flags, and the payload, are the same."""
    for tokens, vocab in (signal(6000, seed=11), residuals(6000, seed=13)):
        t = np.ascontiguousarray(tokens, dtype=np.int32)
        mode, center, cnt, bits = cmsignal2.planned(t, vocab)
        assert bits == int(cmsignal2._static_bits(t, vocab, mode, center, cnt))
        m = cmsignal2._prefix(t.size)
        assert m < t.size
        costs = []
        for buf in (np.zeros(0, np.uint8), np.zeros(8 * m + 256, np.uint8)):
            cost = np.zeros(4096 + 2 * (cnt.size - 1) + 3, np.int64)
            cost[:4096] = cmsignal2._cost_table()
            cmsignal2._encode_pass(t[:m], vocab, buf, mode, center, cnt, 0, cost)
            costs.append(cost)
        assert np.array_equal(costs[0], costs[1]) and costs[0][-1] > 0


def _payload(tokens, vocab, **kw) -> bytes:
    t = np.ascontiguousarray(tokens, dtype=np.int32)
    buf = np.zeros(t.size * 4 + 256, dtype=np.uint8)
    length = cmsignal2.cms2_encode(t, vocab, buf, **kw)
    assert 0 <= length <= buf.size
    return buf[:length].tobytes()


def _sine(n: int, seed: int) -> tuple[np.ndarray, int]:
    """Ids of a noisy sine of period 12 (mode 1): the model codes its flat bits (the step's sign,
    known from the last two values) below a bit, so its measure sets no flag, as a neural
    recording's raw values."""
    rng = np.random.default_rng(seed)
    x = np.round(100 * np.sin(2 * np.pi * np.arange(n) / 12) + rng.normal(0, 1.5, n)).astype(np.int64)
    values, ids = np.unique(x, return_inverse=True)
    return ids.astype(np.int64), len(values)


@pytest.mark.parametrize("make, n, seed", [(signal, 9000, 21), (residuals, 9000, 22), (_sine, 9000, 23),
                                           (_sine, 40000, 24), (signal, 2600, 25), (residuals, 2048, 26)])
def test_the_first_pass_either_way_gives_one_payload(make, n, seed):
    """The flags' first pass measured alone or coded on past the prefix (optimistic, where the
    prefix's tables are all the tokens'): the same payload either way, and the default's."""
    tokens, vocab = make(n, seed)
    want = _payload(tokens, vocab, optimistic=False)
    assert _payload(tokens, vocab, optimistic=True) == want == _payload(tokens, vocab)


def test_optimistic_pass_skips_the_second_where_no_flag_is_set():
    """A stream whose measure sets no flag: the optimistic first pass is the payload (F = 0, no
    second pass); tables of the prefix unlike all the tokens': not optimistic (its model would
    not be the prefix pass's: the payload would differ)."""
    tokens, vocab = _sine(40000, 24)
    t = np.ascontiguousarray(tokens, dtype=np.int32)
    mode, _center, cnt, _bits = cmsignal2.planned(t, vocab)
    assert mode != 0 and cmsignal2._optimistic(mode)
    calls = []
    real = cmsignal2._encode_pass

    def counted(*args):
        calls.append(args[0].shape[0])
        return real(*args)

    cmsignal2._encode_pass = counted
    try:
        payload = _payload(t, vocab, optimistic=True)
    finally:
        cmsignal2._encode_pass = real
    assert calls == [t.size]  # one pass over all the tokens
    assert cmsignal2.parse_header(payload[:cmsignal2.MAX_HEADER], vocab, flags=True)[3] == 0
    maxlen = cnt.size - 1
    m = cmsignal2._prefix(t.size)
    assert cmsignal2._table_bits(m, maxlen, vocab, 0) == cmsignal2._table_bits(t.size, maxlen, vocab, 0)
    # a short stream of a narrow code: order 0's table grows past the prefix (no optimistic pass)
    assert cmsignal2._table_bits(2048, 3, 9, 0) != cmsignal2._table_bits(3000, 3, 9, 0)


# ------------------------------------------------------------------ kernel helpers


def test_buckets_are_capped_bit_lengths():
    """The contexts' leading-zero buckets: _ub(m) = min(bit_length(m), cap), at every bit
    length's edges and across the range the contexts feed them."""
    from numba import njit

    @njit
    def both(vals, cap):
        out = np.empty((vals.shape[0], 1), np.int64)
        for i in range(vals.shape[0]):
            v = vals[i]
            out[i, 0] = cmsignal2._ub(v if v >= 0 else -v, cap)
        return out

    edges = [0, 1] + [(1 << k) + e for k in range(1, 40) for e in (-1, 0, 1)]
    vals = sorted({s * v for v in edges for s in (1, -1)} | set(range(-5000, 5000)))
    for cap in (12, 15):
        out = both(np.array(vals, np.int64), cap)
        ub = [min(abs(v).bit_length(), cap) for v in vals]
        assert out[:, 0].tolist() == ub
        assert out[:, 0].max() == cap  # the cap is reached: the comparison covers it


def test_pure_python_kernels_code_the_same(tmp_path):
    """Under NUMBA_DISABLE_JIT (debugging) the "cms2" and LMS kernels run as Python: their
    leading-zero bit lengths (an LLVM intrinsic) fall back to int.bit_length, the prefetch hints
    to no-ops, and the bytes and residuals are the compiled ones."""
    code = (
        "import json, numpy as np\n"
        "from ubpe.frontend.adaptive import adaptive_forward\n"
        "from ubpe._kernels import cmsignal2\n"
        "x = np.cumsum(np.random.default_rng(3).integers(-40, 41, 300)).astype(np.int16)\n"
        "r, p = adaptive_forward(x)\n"
        "t = np.clip(np.round(np.random.default_rng(4).laplace(20, 4, 120)), 0, 40).astype(np.int32)\n"
        "buf = np.zeros(2000, np.uint8)\n"
        "n = cmsignal2.cms2_encode(t, 41, buf)\n"
        "print(json.dumps([r.tolist(), buf[:n].tolist()]))\n"
    )
    from ubpe.frontend.adaptive import adaptive_forward

    x = np.cumsum(np.random.default_rng(3).integers(-40, 41, 300)).astype(np.int16)
    r, _p = adaptive_forward(x)
    t = np.clip(np.round(np.random.default_rng(4).laplace(20, 4, 120)), 0, 40).astype(np.int32)
    assert json_without_jit(code, tmp_path) == [r.tolist(), list(cms2_bytes(t, 41))]


def _header_reference(mode: int, center: int, cnt: np.ndarray) -> bytes:
    """The header as the module docstring spells it: mode, LEB128 center, L, LEB128 k_1..k_L."""
    out = bytearray([mode]) + cmsignal2._leb128(center) + bytes([cnt.size - 1])
    for k in cnt[1:]:
        out += cmsignal2._leb128(int(k))
    return bytes(out)


@given(st.integers(0, 2), st.integers(0, (1 << 24) - 1),
       st.lists(st.one_of(st.integers(0, 127), st.integers(0, 1 << 25)), min_size=1, max_size=31))
def test_header_bytes_is_the_leb128_spelling(mode, center, counts):
    # header_bytes' one-call path for counts below 128 (and the LEB128 path above) spell the
    # header byte for byte as the reference loop
    cnt = np.array(counts, np.int64)
    assert cmsignal2.header_bytes(mode, center, cnt) == _header_reference(mode, center, cnt)


def test_encode_pass_makes_the_header_it_is_not_given():
    # _encode_pass with the header made by cms2_encode once, or by itself: the same payload
    tokens, vocab = residuals(3000)
    tokens = np.ascontiguousarray(tokens, dtype=np.int32)
    mode, center, cnt, _bits = cmsignal2.planned(tokens, vocab)
    a = np.zeros(tokens.size * 4 + 256, np.uint8)
    b = np.zeros_like(a)
    la = cmsignal2._encode_pass(tokens, vocab, a, mode, center, cnt, 0, cmsignal2.NO_COST)
    lb = cmsignal2._encode_pass(tokens, vocab, b, mode, center, cnt, 0, cmsignal2.NO_COST,
                                cmsignal2.header_bytes(mode, center, cnt))
    assert la == lb and a[:la].tobytes() == b[:lb].tobytes()


def test_frozen_tables_are_cmcores():
    # _code reads squash, stretch and rec from module constants (frozen into the kernel): the
    # same integers as cmcore's tables and the module docstring's rec, which each call built
    from numba import njit

    @njit
    def tables():
        sq = cmcore._squash_table()
        return sq, cmcore._stretch_table(sq)

    sq, st = tables()
    assert cmsignal2._SQUASH.dtype == cmsignal2._STRETCH.dtype == cmsignal2._REC.dtype == np.int64
    assert np.array_equal(cmsignal2._SQUASH, sq) and np.array_equal(cmsignal2._STRETCH, st)
    assert cmsignal2._REC.tolist() == [131072 // (2 * k + 3) for k in range(1024)]
    assert not cmsignal2._SQUASH.flags.writeable


def test_a_second_shorter_call_gives_the_first_calls_bytes():
    # nothing a call leaves behind (tables, constants) moves a later call's bytes: a short stream
    # coded alone, and again after a longer one, the same payload; both decode
    long_tokens, vocab = residuals(5000, seed=8)
    short = np.ascontiguousarray(long_tokens[:700], dtype=np.int32)
    first = cms2_bytes(short, vocab)
    cms2_bytes(long_tokens, vocab)
    assert cms2_bytes(short, vocab) == first
    out = np.zeros(short.size, np.int32)
    assert cmsignal2.cms2_decode(np.frombuffer(first, np.uint8).copy(), vocab, out) == cmcore.OK
    assert np.array_equal(out, short)
