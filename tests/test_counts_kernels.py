"""The compiled passes that replaced numpy ones on level 2's search path (issue 28, target 2):
``counts.span_counts`` (``estimates.value_counts``), ``counts.span_distinct``
(``alphabet.distinct``), ``counts.table_ids`` (``Alphabet.to_ids`` by a lookup table) and
``cmsignal2._plan_compiled`` (``cmsignal2.plan``), each against the numpy computation it
replaces, written out here (hypothesis)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ubpe import alphabet
from ubpe._kernels import cmsignal2
from ubpe._kernels import tally as counts
from ubpe.alphabet import Alphabet
from ubpe.planner.estimates import value_counts

DTYPES = [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64]


@st.composite
def narrow_values(draw, min_size: int = 1, max_size: int = 3000) -> np.ndarray:
    """1-D integers of a dtype of DTYPES over a span that fits it, anywhere in its range
    (uint64 below 2**63: the paths' precondition), some spans far narrower than the count."""
    dtype = np.dtype(draw(st.sampled_from(DTYPES)))
    info = np.iinfo(dtype)
    top = min(int(info.max), (1 << 63) - 1)
    span = draw(st.integers(1, min(top - int(info.min) + 1, 1 << 12)))
    lo = draw(st.integers(int(info.min), top - span + 1))
    n = draw(st.integers(min_size, max_size))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    kind = draw(st.sampled_from(["uniform", "few", "walk"]))
    if kind == "uniform":
        off = rng.integers(0, span, n)
    elif kind == "few":
        off = rng.choice(rng.integers(0, span, 5), n)
    else:
        off = np.clip(np.cumsum(rng.integers(-3, 4, n)) + span // 2, 0, span - 1)
    off[draw(st.integers(0, n - 1))] = span - 1  # (the span's both ends present sometimes)
    y = (np.int64(lo) + off.astype(np.int64)).astype(dtype) if dtype != np.uint64 else \
        (np.uint64(lo) + off.astype(np.uint64))
    if draw(st.booleans()):  # the other byte order (the compiled passes take native ones only)
        y = y.astype(y.dtype.newbyteorder("S"))
    return y


@given(narrow_values())
def test_value_counts_is_numpys(y):
    lo = int(y.min())
    ref = np.bincount(np.subtract(y, lo, dtype=np.int64))
    got = value_counts(y)
    assert got.dtype == np.int64
    assert np.array_equal(got, ref[ref > 0])
    assert np.array_equal(got, np.unique(y, return_counts=True)[1])
    # a strided view: the same counts
    assert np.array_equal(value_counts(y[::2]), np.unique(y[::2], return_counts=True)[1])


@given(narrow_values(min_size=4096, max_size=9000))
def test_distinct_is_numpys(y):
    if y.dtype.kind == "u" and y.dtype.itemsize == 8:
        y = y.astype(np.int64)  # (span_distinct's precondition: below 2**63)
    got = alphabet.distinct(y)
    assert got.dtype == np.int64
    assert np.array_equal(got, np.unique(y).astype(np.int64))
    native = y.astype(y.dtype.newbyteorder("="))
    assert np.array_equal(counts.span_distinct(native, int(y.min()), int(y.max()) - int(y.min()) + 1), got)


@settings(deadline=None)
@given(st.sampled_from(["int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64", "bool",
                        "float64"]),
       st.integers(0, 9000), st.integers(0, 64), st.integers(0, 2**64 - 1), st.randoms(use_true_random=False))
def test_distinct_equals_numpys_unique_for_every_dtype_span_and_size(dtype, n, bits, base, rnd):
    """alphabet.distinct is np.unique: the same sorted values (int64 for integers below 2**63 and
    bools, uint64 for uint64, numpy's own dtype else), whether the values span fewer cells than
    their count (the histogram), more (the sort), sit at uint64's top, or are none at all."""
    dt = np.dtype(dtype)
    if dt.kind == "f":
        y = np.array([rnd.gauss(0, 1) for _ in range(n)], dt)
    elif dt.kind == "b":
        y = np.array([rnd.random() < 0.5 for _ in range(n)], dt)
    else:
        info = np.iinfo(dt)
        width = min(bits, info.bits)
        lo = max(int(info.min), min(int(info.max) - (1 << width) + 1, int(info.min) + base % (int(info.max) - int(info.min) + 1)))
        y = np.array([lo + rnd.getrandbits(width) if width else lo for _ in range(n)], dt)
    got = alphabet.distinct(y.reshape(-1, 1) if n % 2 else y)
    ref = np.unique(y)
    assert np.array_equal(got, ref)
    want = ref.dtype if dt.kind == "f" else np.dtype(np.uint64) if dt == np.uint64 else np.dtype(np.int64)
    assert got.dtype == want


def _numpy_ids(a: Alphabet, seq: np.ndarray) -> np.ndarray | tuple[int, int]:
    """The table path's ids as numpy computed them, or (value, position) of the error it raised:
    the first value off the table's span, else the first in it but not in the alphabet."""
    lo, table = a._lo, a._table
    s64 = seq.astype(np.int64)
    off = s64 - lo
    outside = (off < 0) | (off >= len(table))
    if outside.any():
        i = int(np.argmax(outside))
        return int(seq[i]), i
    ids = table[off]
    if (ids < 0).any():
        i = int(np.argmax(ids < 0))
        return int(seq[i]), i
    return ids


@given(narrow_values(max_size=2000), st.data())
def test_table_ids_are_numpys(y, data):
    if y.dtype.kind == "u" and y.dtype.itemsize == 8:
        y = y.astype(np.int64)
    a = Alphabet.from_data(y)
    assert a._table is not None
    assert np.array_equal(a.to_ids(y), np.searchsorted(a.values, y))
    # values off the alphabet (inside and outside its span): the numpy path's error, its position
    values = np.asarray(a.values, dtype=np.int64)
    seq = data.draw(st.lists(st.integers(int(values[0]) - 3, int(values[-1]) + 3), min_size=1, max_size=40))
    info = np.iinfo(y.dtype)
    seq = np.array([min(max(v, int(info.min)), int(info.max)) for v in seq], dtype=y.dtype)
    expected = _numpy_ids(a, seq)
    if isinstance(expected, tuple):
        with pytest.raises(ValueError, match=rf"^value {expected[0]} at position {expected[1]} is not"):
            a.to_ids(seq)
    else:
        assert np.array_equal(a.to_ids(seq), expected)


def _plan_numpy(tokens: np.ndarray, vocab_size: int) -> tuple[int, int, np.ndarray]:
    """cmsignal2.plan's numpy path (before _plan_compiled): the lower median by np.partition, the
    ranks' histograms, each sorted and coded, the first mode of least cost."""
    t = np.ascontiguousarray(tokens, dtype=np.int32)
    n = t.size
    center = int(np.partition(t, (n - 1) // 2)[(n - 1) // 2])
    best = None
    for mode, c in enumerate(cmsignal2._rank_counts(t, vocab_size, center)):
        if c.size == 1:
            c = np.append(c, 0)
        w = np.sort(c)
        lengths = cmsignal2._code_lengths(w)
        cost = int((w[::-1] * lengths).sum())
        if best is None or cost < best[0]:
            best = (cost, mode, lengths)
    _, mode, lengths = best
    return mode, center, np.bincount(lengths, minlength=int(lengths[-1]) + 1).astype(np.int64)


@st.composite
def token_streams(draw) -> tuple[np.ndarray, int]:
    vocab = draw(st.integers(2, 40000))
    n = draw(st.integers(1, 3000))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    kind = draw(st.sampled_from(["uniform", "residual", "walk", "constant", "skewed"]))
    if kind == "uniform":
        t = rng.integers(0, vocab, n)
    elif kind == "residual":
        t = np.clip(np.round(rng.laplace(vocab / 2, max(1.0, vocab / 50), n)), 0, vocab - 1)
    elif kind == "walk":
        t = np.clip(np.cumsum(rng.integers(-5, 6, n)) + vocab // 2, 0, vocab - 1)
    elif kind == "constant":
        t = np.full(n, rng.integers(0, vocab))
    else:  # a few ids with wildly different counts: long codes, the halving loop
        ids = rng.integers(0, vocab, 40)
        t = ids[np.minimum(rng.geometric(0.35, n) - 1, 39)]
    return t.astype(np.int32), vocab


@settings(max_examples=200)
@given(token_streams())
def test_cms2_plan_is_numpys(stream):
    t, vocab = stream
    mode, center, cnt, bits = cmsignal2._plan_compiled(t, vocab)
    ref = _plan_numpy(t, vocab)
    assert (int(mode), int(center)) == ref[:2]
    assert cnt.dtype == np.int64 and np.array_equal(cnt, ref[2])
    # the static code's bits from the plan's histogram: those of the token by token count
    assert int(bits) == int(cmsignal2._static_bits(t, vocab, ref[0], ref[1], ref[2]))
    got = cmsignal2.plan(t, vocab)
    assert got[:2] == ref[:2] and np.array_equal(got[2], ref[2])
    got = cmsignal2.planned(t, vocab)
    assert got[:2] == ref[:2] and np.array_equal(got[2], ref[2]) and got[3] == int(bits)


def test_cms2_plan_long_codes_and_fallbacks(monkeypatch):
    # Fibonacci-like counts force codes past MAX_LEN: the halving loop, both paths alike
    fib = [1, 1]
    while len(fib) < 34:
        fib.append(fib[-1] + fib[-2])
    t = np.repeat(np.arange(34, dtype=np.int32), fib)  # (9.2 million tokens)
    np.random.default_rng(1).shuffle(t)
    # mode 0's ranks are a bijection of the ids: its weights are these, halved until they fit
    assert cmsignal2._huff_lengths(np.sort(np.bincount(t)).astype(np.int64))[0] > cmsignal2.MAX_LEN
    ref = _plan_numpy(t, 34)
    assert int(ref[2].shape[0]) - 1 <= cmsignal2.MAX_LEN
    mode, center, cnt, bits = cmsignal2._plan_compiled(t, 34)
    assert (int(mode), int(center)) == ref[:2] and np.array_equal(cnt, ref[2])
    assert int(bits) == int(cmsignal2._static_bits(t, 34, ref[0], ref[1], ref[2]))
    # an id outside [0, V): the compiled pass declines, the numpy path answers
    bad = np.array([0, 1, 5], np.int32)
    assert cmsignal2._plan_compiled(bad, 3)[0] == -1
    # a vocabulary too wide for the histograms: the numpy path, the same header
    t = np.array([3, 70000, 5, 123456], np.int32)
    assert 200000 > cmsignal2.PLAN_HISTOGRAM_SPAN * 4 + cmsignal2.PLAN_HISTOGRAM_MIN
    got, ref = cmsignal2.plan(t, 200000), _plan_numpy(t, 200000)
    assert got[:2] == ref[:2] and np.array_equal(got[2], ref[2])
    got = cmsignal2.planned(t, 200000)  # (the numpy path counts the bits token by token)
    assert got[3] == int(cmsignal2._static_bits(t, 200000, ref[0], ref[1], ref[2]))
    monkeypatch.setattr(cmsignal2, "PLAN_HISTOGRAM_SPAN", 10**9)
    got = cmsignal2.plan(t, 200000)
    assert got[:2] == ref[:2] and np.array_equal(got[2], ref[2])


@settings(max_examples=200)
@given(st.lists(st.one_of(st.integers(0, 70), st.integers(0, 10**6)), min_size=2, max_size=300))
def test_cms2_plan_entropy_floor_is_below_every_code(counts):
    # _plan_compiled skips a mode whose entropy floor is at least the best cost so far: the
    # floor must never exceed the mode's own (length-limited Huffman) cost
    c = np.array(counts, np.int64)
    if c.sum() == 0:
        c[0] = 1
    n = int(c.sum())
    logs = np.array([k * np.log2(max(k, 1)) for k in range(64)], np.float64)
    w = np.sort(c)
    lengths = cmsignal2._code_lengths(w)
    cost = int((w[::-1] * lengths).sum())
    assert cmsignal2._entropy_floor(c, c.shape[0], n, logs) <= cost
