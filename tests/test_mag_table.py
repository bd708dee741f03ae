"""The "mag" coder's context table (docs/format.md, "mag" table): the kernels
(``ubpe._kernels.residual.table_encode`` / ``table_decode`` / ``mag_options``) against the plain
reference of tests/reference_mag_table.py, the table bits the coder chooses by against the bits
it writes, and hostile tables: every bad field refused with its status, in bounds, and as a
CorruptDataError through ``decode_stream``."""

from __future__ import annotations

import os

import numpy as np
import pytest
import reference_mag_table as ref
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ubpe._kernels import residual as R
from ubpe.coders import decode_stream, encode_stream
from ubpe.coders import mag as M
from ubpe.errors import CorruptDataError

SETTINGS = settings(
    deadline=None,
    max_examples=int(os.environ.get("UBPE_MAX_EXAMPLES", "100")),
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
EMPTY = np.zeros(0, np.uint8)


@st.composite
def count_tables(draw):
    """Per-context bucket counts as ``mag_stats`` fills them: a few used contexts (none, one,
    or up to all), each a run of buckets, some zero inside, counts from 1 to 2**30."""
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    counts = np.zeros((R.N_CONTEXTS, R.N_BUCKETS), np.int64)
    used = draw(st.sampled_from([0, 1, 2, 5, 20, R.N_CONTEXTS]))
    top = draw(st.sampled_from([1, 3, 40, 1000, 1 << 20, 1 << 30]))
    for c in rng.choice(R.N_CONTEXTS, size=used, replace=False):
        lo = int(rng.integers(0, R.N_BUCKETS))
        hi = int(rng.integers(lo, min(R.N_BUCKETS, lo + draw(st.sampled_from([1, 4, 16, 50])))))
        counts[c, lo:hi + 1] = np.where(rng.random(hi - lo + 1) < 0.8, rng.integers(1, top + 1, hi - lo + 1), 0)
        counts[c, lo] = max(int(counts[c, lo]), 1)
    return counts


def encoded(freqs: np.ndarray, pb: int) -> np.ndarray:
    nbits = R.table_encode(freqs, pb, EMPTY)
    buf = np.zeros((nbits + 7) // 8, np.uint8)
    assert R.table_encode(freqs, pb, buf) == nbits
    return buf


@SETTINGS
@given(count_tables(), st.integers(R.MIN_PB, R.MAX_PB))
def test_table_roundtrip_against_reference(counts, pb):
    # the coder's frequencies (each row at its own precision) coded as the reference codes them,
    # decoded back by the kernel and by the reference
    freqs = M._mag_freqs(counts, pb)
    assert ((freqs > 0) == (counts > 0)).all()
    assert set(freqs.sum(axis=1).tolist()) <= {0, 1 << pb}
    buf = encoded(freqs, pb)
    want, nbits = ref.encode(freqs, pb)
    assert buf.tobytes() == want and (nbits + 7) // 8 == buf.size
    back = np.zeros_like(freqs)
    assert R.table_decode(buf, pb, back) == R.OK
    np.testing.assert_array_equal(back, freqs)
    status, back = ref.decode(want, pb)
    assert status == R.OK
    np.testing.assert_array_equal(back, freqs)


@SETTINGS
@given(count_tables(), st.integers(R.MIN_PB, R.MAX_PB))
def test_any_valid_table_roundtrips(counts, pb):
    # frequencies the coder would not choose (every row at pb, odd and even): the same coding
    freqs = np.zeros_like(counts)
    for c in range(R.N_CONTEXTS):
        if counts[c].any():
            freqs[c] = ref.normalize([int(v) for v in counts[c]], 1 << pb)
    buf = encoded(freqs, pb)
    assert buf.tobytes() == ref.encode(freqs, pb)[0]
    back = np.zeros_like(freqs)
    assert R.table_decode(buf, pb, back) == R.OK
    np.testing.assert_array_equal(back, freqs)


@SETTINGS
@given(count_tables())
def test_chosen_table_bits_are_the_written_bits(counts):
    # the planner's and the coder's table bits (mag_options, every precision in one call) are
    # the bits table_encode writes for the frequencies chosen at that precision, and the
    # reference's choice of each row's precision gives the same frequencies and cross-entropy
    pbs = R.MAX_PB + 1 - R.MIN_PB
    ce, tbits = np.empty((1, pbs)), np.empty((1, pbs), np.int64)
    R.mag_options(counts[None], R.MIN_PB, ce, tbits, np.zeros((0, R.N_BUCKETS), np.int64))
    for j in range(pbs):
        pb = R.MIN_PB + j
        freqs = M._mag_freqs(counts, pb)
        assert R.table_encode(freqs, pb, EMPTY) == tbits[0, j]
        want, want_ce, want_bits = ref.choose(counts, pb)
        np.testing.assert_array_equal(freqs, want)
        assert want_bits == tbits[0, j] and want_ce == ce[0, j]


def test_rows_at_lower_precision_cost_fewer_bits():
    # a row of few counts is coded at the precision its counts need: 3 tokens in 2 buckets
    # cost about as much at pb 13 as at pb 8 (the shift grows by a bit per precision)
    counts = np.zeros((R.N_CONTEXTS, R.N_BUCKETS), np.int64)
    counts[5, 3:5] = (2, 1)
    bits = [R.table_encode(M._mag_freqs(counts, pb), pb, EMPTY) for pb in (R.MIN_PB, R.MAX_PB)]
    assert bits[1] - bits[0] == R.MAX_PB - R.MIN_PB
    # context range 12, bucket steps 5 + 7, shift, one value: under half the former coding's
    # 56 used bits + 12 bounds + two Rice values
    assert bits[0] <= 12 + 5 + 7 + 8 + 6


def test_empty_table():
    freqs = np.zeros((R.N_CONTEXTS, R.N_BUCKETS), np.int64)
    buf = encoded(freqs, 10)
    assert buf.tolist() == [R.NO_CONTEXT]
    back = np.full_like(freqs, 0)
    assert R.table_decode(buf, 10, back) == R.OK and not back.any()


# ----------------------------------------------------------------------------- hostile tables


def bits_to_buf(fields: list[tuple[int, int]]) -> np.ndarray:
    """``(value, nbits)`` pairs, LSB first, to zero-padded bytes."""
    bits: list[int] = []
    for value, n in fields:
        bits += [(value >> i) & 1 for i in range(n)]
    out = np.zeros((len(bits) + 7) // 8, np.uint8)
    for i, b in enumerate(bits):
        out[i >> 3] |= b << (i & 7)
    return out


def gamma(v: int) -> list[tuple[int, int]]:
    x = v + 1
    L = x.bit_length() - 1
    return [(1 << L, L + 1), (x & ((1 << L) - 1), L)]


def one_row(lo_step: int, hi_step: int, shift: int, values: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """A table of one used context (3): its fields as given (zigzagged steps, unary shift)."""
    return [(3, 6), (3, 6)] + gamma(lo_step) + gamma(hi_step) + [(1 << shift, shift + 1)] + values


HOSTILE = {
    # (a good one-row table: buckets 0..1 at t = 1, values 1 | 1 implied)
    "good": (one_row(0, 2, 7, [(0b10, 2)]), R.OK),
    "first context past the last": ([(56, 6), (56, 6)], R.ERR_RANGE),
    "last before first": ([(9, 6), (8, 6)], R.ERR_RANGE),
    "last past the contexts": ([(9, 6), (60, 6)], R.ERR_RANGE),
    "no context then bits": ([(R.NO_CONTEXT, 6), (1, 2)], R.ERR_TRAILING),
    "negative first bucket": (one_row(1, 2, 7, [(0b10, 2)]), R.ERR_RANGE),
    "last bucket before first": ([(3, 6), (3, 6)] + gamma(4) + gamma(1) + [(1, 1)], R.ERR_RANGE),
    "last bucket past the buckets": ([(3, 6), (3, 6)] + gamma(0) + gamma(100), R.ERR_RANGE),
    "gamma past its zeros": ([(3, 6), (3, 6), (0, 8), (1, 1), (0, 8)], R.ERR_RANGE),
    "shift past pb": (one_row(0, 2, 9, []) + [(0, 8)], R.ERR_RANGE),
    "value takes the whole row": (one_row(0, 2, 7, [(0b100, 3)]), R.ERR_RANGE),  # 2 of t = 1's 2
    "first bucket zero": (one_row(0, 2, 7, [(0b1, 1)]), R.ERR_RANGE),
    "truncated in the bounds": ([(3, 6), (3, 6), (0, 3)], R.ERR_TRUNCATED),
    "truncated in the used bits": ([(3, 6), (40, 6)], R.ERR_TRUNCATED),
    "a byte past the end": (one_row(0, 2, 7, [(0b10, 2)]) + [(0, 8), (0, 1)], R.ERR_TRAILING),
    "nonzero padding": (one_row(0, 2, 7, [(0b10, 2)]) + [(1, 1)], R.ERR_TRAILING),
}


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_hostile_table_fields(name):
    fields, status = HOSTILE[name]
    buf = bits_to_buf(fields)
    freqs = np.zeros((R.N_CONTEXTS, R.N_BUCKETS), np.int64)
    assert R.table_decode(buf, R.MIN_PB, freqs) == status
    assert ref.decode(buf.tobytes(), R.MIN_PB)[0] == status
    if status == R.OK:
        assert freqs[3, :2].tolist() == [1 << 7, 1 << 7] and freqs.sum() == 1 << R.MIN_PB


@pytest.fixture(scope="module")
def stream():
    rng = np.random.default_rng(11)
    tokens = np.clip(np.round(rng.laplace(500, np.exp(2 * np.sin(np.arange(3000) / 300.0)) * 6)), 0, 1023)
    fields = encode_stream(tokens.astype(np.int64), 1024, coders=("mag",))
    assert fields["coder"] == "mag"
    return tokens, fields


@pytest.mark.parametrize("name", sorted(set(HOSTILE) - {"good"}))
def test_hostile_table_in_a_stream_is_corrupt_data(stream, name):
    _, fields = stream
    bad = dict(fields, table=bits_to_buf(HOSTILE[name][0]).tobytes(), pb=R.MIN_PB)
    with pytest.raises(CorruptDataError, match="table"):
        decode_stream(bad, 1024)


def test_stream_table_mutations_match_reference(stream):
    # every cut, every single bit flipped and appended bytes of a real table: the kernel's
    # status (and frequencies) are the reference's; a stream with a bad table never decodes
    tokens, fields = stream
    good = np.frombuffer(fields["table"], np.uint8)
    pb = fields["pb"]
    bufs = [good[:cut] for cut in range(good.size)] + [np.append(good, np.uint8(v)) for v in (0, 1, 128)]
    for i in range(good.size * 8):
        flipped = good.copy()
        flipped[i >> 3] ^= np.uint8(1 << (i & 7))
        bufs.append(flipped)
    statuses = set()
    for buf in bufs:
        freqs = np.zeros((R.N_CONTEXTS, R.N_BUCKETS), np.int64)
        st = R.table_decode(np.ascontiguousarray(buf), pb, freqs)
        want_st, want = ref.decode(buf.tobytes(), pb)
        assert st == want_st
        statuses.add(st)
        if st == R.OK:
            np.testing.assert_array_equal(freqs, want)
        try:
            out = decode_stream(dict(fields, table=buf.tobytes()), 1024)
        except CorruptDataError:
            continue
        assert st == R.OK  # a table that decodes may still decode the stream, in bounds
        assert out.shape == tokens.shape
    assert {R.ERR_TRUNCATED, R.ERR_RANGE, R.ERR_TRAILING} <= statuses


@SETTINGS
@given(st.binary(max_size=64), st.sampled_from([R.MIN_PB, R.MAX_PB, 30]))
def test_random_bytes_match_reference(data, pb):
    freqs = np.zeros((R.N_CONTEXTS, R.N_BUCKETS), np.int64)
    st_ = R.table_decode(np.frombuffer(data, np.uint8), pb, freqs)
    want_st, want = ref.decode(data, pb)
    assert st_ == want_st
    if st_ == R.OK:
        np.testing.assert_array_equal(freqs, want)
        used = freqs.sum(axis=1)
        assert set(used.tolist()) <= {0, 1 << pb}
