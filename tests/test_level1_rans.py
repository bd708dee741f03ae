"""Level 1's "mag" encoder without branches on the data (ubpe._kernels.level1.mag_encode): its
rANS division by a reciprocal (rans_reciprocals, mulhi) gives the quotient and state of the
division it replaces for every 64-bit state, its branch-free class (bucket_select) is the
class, and the encoder writes the reference kernel's words and raw bytes for every precision,
token width and length (none, one token, one value repeated, values at the coder's limits)."""

from __future__ import annotations

import os

import numpy as np
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import reference_mag
from ubpe._kernels import level1 as fast
from ubpe._kernels import njit
from ubpe._kernels import residual as _mag
from ubpe.coders import mag

SETTINGS = settings(deadline=None, max_examples=int(os.environ.get("UBPE_MAX_EXAMPLES", "100")),
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
ONES = (1 << 64) - 1


@njit(nogil=True)
def _updates(xs, k, tables, pb, out, quotients):
    """mag_encode's state update of each ``xs[i]`` (uint64) in cell ``k`` of ``tables``
    (rans_reciprocals'), and the quotient estimate ``mulhi(x, reciprocal)`` it corrects."""
    for i in range(xs.shape[0]):
        x = xs[i]
        q = fast.mulhi(x, tables[1, k])
        f = tables[0, k]
        quotients[i] = q
        corrected = x - q * f >= f
        out[i] = x + tables[3, k] + q * tables[4, k] + (tables[4, k] if corrected else np.uint64(0))


@njit(nogil=True)
def _buckets(zs, out):
    for i in range(zs.shape[0]):
        out[i] = fast.bucket_select(zs[i])


def _one_row(f: int, pb: int, cell: int) -> np.ndarray:
    """freqs with context 0 holding ``f`` at bucket ``cell`` and the rest of 2**pb before it."""
    freqs = np.zeros((fast.N_CONTEXTS, fast.N_BUCKETS), np.int64)
    freqs[0, cell] = f
    if f < 1 << pb:
        freqs[0, 0 if cell else 1] = (1 << pb) - f
    return freqs


@SETTINGS
@given(st.integers(_mag.MIN_PB, _mag.MAX_PB), st.data())
@example(8, None)
def test_reciprocal_update_is_the_division(pb, data):
    """For f from 1 to 2**pb and states x up to 2**64 - 1 (past the renormalization bound too):
    the estimate is x // f or one less, and the update is (x // f) * 2**pb + x % f + cum."""
    if data is None:  # every frequency of 2**8, at the bound's edges
        fs = list(range(1, 257))
    else:
        fs = data.draw(st.lists(st.integers(1, 1 << pb), min_size=1, max_size=20))
    for f in fs:
        cell = 3
        freqs = _one_row(f, pb, cell)
        tables = np.empty((5, fast.N_CONTEXTS * fast.N_BUCKETS), np.uint64)
        fast.rans_reciprocals(freqs, pb, tables)
        bound = (f << (64 - pb)) - 1 if f < 1 << pb else ONES
        assert int(tables[2, cell]) == bound
        cum = int(tables[3, cell])
        assert cum == (0 if cell == 0 or f == 1 << pb else (1 << pb) - f)
        rng = np.random.default_rng(f * 31 + pb)
        xs = [1 << 32, bound, bound - 1, ONES, ONES - 1, f, f - 1, 2 * f - 1, 1 << 63, (1 << 63) - 1]
        xs += [int(v) for v in rng.integers(0, ONES, 40, dtype=np.uint64, endpoint=True)]
        xs += [(int(v) // f) * f + r for v in rng.integers(0, ONES // 2, 10, dtype=np.uint64) for r in (0, f - 1)]
        xs = [x for x in xs if 1 <= x <= ONES]
        arr = np.array(xs, np.uint64)
        out = np.empty_like(arr)
        quotients = np.empty_like(arr)
        _updates(arr, cell, tables, pb, out, quotients)
        for x, q, new in zip(xs, quotients.tolist(), out.tolist()):
            assert q in (x // f, x // f - 1), (x, f)
            if x <= bound:  # (a state the encoder updates: renormalized below its bound)
                assert new == (x // f) * (1 << pb) + x % f + cum, (x, f, pb)


def test_bucket_select_is_the_bucket():
    zs = [0, 1, 2, 3, 4, 5, 6, 7, 8, (1 << 62) - 1, 1 << 61]
    zs += [v for e in range(2, 62) for v in ((1 << e) - 1, 1 << e, (1 << e) + 1, (3 << e) >> 1)]
    zs += [int(v) for v in np.random.default_rng(1).integers(0, 1 << 62, 2000)]
    arr = np.array(zs, np.int64)
    out = np.empty_like(arr)
    _buckets(arr, out)
    expected = [z if z < 2 else 2 * z.bit_length() - 2 + ((z >> (z.bit_length() - 2)) & 1) for z in zs]
    assert out.tolist() == expected


@SETTINGS
@given(st.lists(st.integers(0, 2**24 - 1), min_size=0, max_size=3000), st.integers(0, 2**24 - 1),
       st.integers(_mag.MIN_RATE, _mag.MAX_RATE), st.integers(_mag.MIN_PB, _mag.MAX_PB),
       st.sampled_from(["as drawn", "near the center", "small", "one value", "extremes"]),
       st.sampled_from([np.int32, np.int64]))
@example([], 0, 2, 8, "as drawn", np.int64)
@example([5], 5, 4, 13, "as drawn", np.int32)
@example([2**24 - 1] * 50, 0, 8, 13, "as drawn", np.int64)
def test_mag_encode_is_the_reference_at_every_precision(tokens, center, rate, pb, kind, dtype):
    """The same start, words (all of them) and raw bytes as the reference kernel, for each
    precision the coder may choose (the frequencies normalised to 2**pb from the counts), int32
    and int64 tokens, no token, one, one value repeated (a certain bucket: the update skipped)."""
    tokens = np.array(tokens, np.int64)
    if kind == "near the center":
        tokens = np.clip(center + (tokens % 2001) - 1000, 0, 2**24 - 1)
    elif kind == "small":
        tokens, center = tokens % 7, center % 7
    elif kind == "one value":
        tokens = np.full(tokens.size, center, np.int64)
    elif kind == "extremes":
        tokens = np.where(tokens % 2 == 0, 0, 2**24 - 1)
    tokens = tokens.astype(dtype)
    counts = np.zeros((1, fast.N_CONTEXTS, fast.N_BUCKETS), np.int64)
    raw_bits = fast.mag_stats(tokens, center, np.array([rate], np.int64), counts)
    freqs = mag._mag_freqs(counts[0], pb)
    outs = reference_mag.encoder_outputs(
        (lambda *a: reference_mag.mag_encode(tokens.astype(np.int64), center, rate, reference_mag.BITLEN, *a),
         lambda *a: fast.mag_encode(tokens, center, rate, *a)), tokens.size, freqs, pb, raw_bits)
    assert outs[0] == outs[1]
    if pb > mag._mag_pb_cap(tokens.size):  # (a precision the coder never chooses for so few tokens)
        return
    back = mag.decode(fast_fields(tokens, center, rate, pb, freqs, outs[1]), tokens.size, 2**24, None)
    assert np.array_equal(back, tokens.astype(np.int64))


def fast_fields(tokens, center, rate, pb, freqs, out) -> dict:
    """The "mag" stream's fields of the encoder's output (its table from ``freqs``)."""
    start, words, raw = out
    tbits = np.empty((1, _mag.MAX_PB + 1 - _mag.MIN_PB), np.int64)
    stats = np.zeros((1, fast.N_CONTEXTS, fast.N_BUCKETS), np.int64)
    fast.mag_stats(tokens, center, np.array([rate], np.int64), stats)
    _mag.mag_options(stats, _mag.MIN_PB, np.empty(tbits.shape), tbits, np.zeros((0, _mag.N_BUCKETS), np.int64))
    tbuf = np.zeros((int(tbits[0, pb - _mag.MIN_PB]) + 7) // 8, np.uint8)
    _mag.table_encode(freqs, pb, tbuf)
    payload = np.frombuffer(words, np.uint32)[start:].astype("<u4").tobytes()
    return {"coder": "mag", "n": int(tokens.size), "center": center, "rate": rate, "pb": pb,
            "table": tbuf.tobytes(), "payload": payload, "raw": raw}
