"""Replay encoding and decoding (ubpe/encoder.py) against the plain-Python oracle.

The oracle's ``encode``/``decode`` (tests/reference.py) are the spec: applying the merges in
priority order, each left to right without overlap, and expanding tokens recursively.
"""

from __future__ import annotations

import contextlib
import os

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from reference import decode as ref_decode
from reference import encode as ref_encode
from reference import train as ref_train
from reference import trim as ref_trim
from reference import weights as ref_weights

from ubpe import _kernels
from ubpe import encoder as E

SETTINGS = settings(deadline=None, max_examples=int(os.environ.get("UBPE_MAX_EXAMPLES", "100")))


@contextlib.contextmanager
def segmenting(segment_ids: int, parallel_min_ids: int | None, passes: tuple[int, int] | None = None):
    """Temporarily force small encoding segments, the two-thread path and, with ``passes``
    ``(min_ids, yield)``, where the group passes run and when they hand over to the sweep."""
    old = E.SEGMENT_IDS, E._PARALLEL_MIN_IDS, E.PASS_MIN_IDS, E.PASS_YIELD
    E.SEGMENT_IDS, E._PARALLEL_MIN_IDS = segment_ids, parallel_min_ids
    if passes is not None:
        E.PASS_MIN_IDS, E.PASS_YIELD = passes
    try:
        yield
    finally:
        E.SEGMENT_IDS, E._PARALLEL_MIN_IDS, E.PASS_MIN_IDS, E.PASS_YIELD = old


# (min ids, yield) of the group passes: none; every segment, to the last group; every segment,
# handing over to the sweep after the first pass, or after a pass merging < 1 id in 4; default
PASSES = [(0, 0), (1, 0), (1, 1), (2, 4), (E.PASS_MIN_IDS, E.PASS_YIELD)]


def as_merges(rows) -> np.ndarray:
    return np.array([r[:2] for r in rows], dtype=np.int32).reshape(-1, 2)


def check_model(merges: np.ndarray, a: int, seqs, max_table_values: int) -> None:
    """encode/decode of every sequence equal the oracle's; round trip; no growth; batch = single."""
    tables = E.build_encoder(merges, a)
    expansion = E.build_expansion(merges, a, max_table_values=max_table_values)
    rows = merges.tolist()
    encoded = []
    for seq in seqs:
        ids = np.array(seq, dtype=np.int32)
        tokens = E.encode(ids, tables)
        assert tokens.dtype == np.int32
        assert tokens.tolist() == ref_encode(seq, rows, a)
        assert len(tokens) <= len(seq)
        assert E.expanded_length(tokens, expansion) == len(seq)
        decoded = E.decode(tokens, expansion)
        assert decoded.dtype == np.int32
        assert decoded.tolist() == ref_decode(tokens.tolist(), rows, a) == list(seq)
        encoded.append(tokens)
    batch = E.encode_batch([np.array(s, dtype=np.int64) for s in seqs], tables)
    assert [b.tolist() for b in batch] == [t.tolist() for t in encoded]


@st.composite
def trained_models(draw):
    """A corpus, merges trained on it by the oracle (maybe trimmed), and other sequences."""
    a = draw(st.integers(1, 8))
    skew = draw(st.sampled_from([0.0, 0.5, 0.9]))  # skew makes long runs and deep merges
    symbol = st.one_of(st.just(0), st.integers(0, a - 1)) if skew else st.integers(0, a - 1)
    docs = draw(st.lists(st.lists(symbol, max_size=300), min_size=1, max_size=3))
    n_candidates = draw(st.sampled_from([1, 2, 50]))
    n_tokens = a + draw(st.integers(0, 40))
    rows, _ = ref_train(docs, a, n_tokens, n_candidates=n_candidates)
    if rows and draw(st.booleans()):
        keep = draw(st.integers(0, len(rows)))
        ws = ref_weights(rows, len(docs), draw(st.sampled_from(["idf", "count", "tfidf"])))
        rows, _ = ref_trim(rows, ws, a, a + keep)
    others = draw(st.lists(st.lists(st.integers(0, a - 1), max_size=300), max_size=2))
    return a, as_merges(rows), docs + others


@SETTINGS
@given(
    model=trained_models(),
    max_table_values=st.sampled_from([0, 3, 40, E.DEFAULT_MAX_TABLE_VALUES]),
    segment=st.sampled_from([1, 2, 5, 64, E.SEGMENT_IDS]),
    threads=st.booleans(),
    passes=st.sampled_from(PASSES),
)
def test_matches_oracle(model, max_table_values, segment, threads, passes):
    a, merges, seqs = model
    with segmenting(segment, 8 if threads else None, passes):
        check_model(merges, a, seqs, max_table_values)


@SETTINGS
@given(
    a=st.integers(1, 6),
    raw=st.lists(st.tuples(st.integers(0, 10**6), st.integers(0, 10**6)), max_size=30),
    seq=st.lists(st.integers(0, 10**6), max_size=200),
    segment=st.sampled_from([1, 3, E.SEGMENT_IDS]),
    passes=st.sampled_from(PASSES),
)
def test_arbitrary_merge_tables(a, raw, seq, segment, passes):
    """Any priority-ordered table, even with duplicate pairs and pairs that never occur."""
    rows = [(x % (a + k), y % (a + k)) for k, (x, y) in enumerate(raw)]
    with segmenting(segment, 16, passes):
        check_model(as_merges(rows), a, [[v % a for v in seq]], 5)


def chain(a: int, m: int, symbol: int = 0) -> np.ndarray:
    """Left-deep chain: token a + k = (a + k - 1, symbol), expanding to k + 2 symbols."""
    rows = [(symbol, symbol)] + [(a + k - 1, symbol) for k in range(1, m)]
    return as_merges(rows)


def doubling(a: int, m: int) -> np.ndarray:
    """Token a + k = (a + k - 1, a + k - 1), expanding to 2**(k + 1) zeros."""
    return as_merges([(0, 0)] + [(a + k - 1, a + k - 1) for k in range(1, m)])


@pytest.mark.parametrize("passes", PASSES)
@pytest.mark.parametrize("segment", [1, E.SEGMENT_IDS])
@pytest.mark.parametrize(
    "name, values, a",
    [
        ("empty", [], 3),
        ("length1", [2], 3),
        ("length2", [1, 1], 3),
        ("identical10k", [0] * 10_000, 1),
        ("alternating", [2, 5] * 500, 8),
        ("odd_run", [0] * 7 + [1] + [0] * 9, 2),
    ],
)
def test_edge_cases(name, values, a, segment, passes):
    models = [np.zeros((0, 2), np.int32), chain(a, 60), doubling(a, 13)]
    if a > 5:
        models.append(as_merges([(2, 5), (a, a), (5, 2), (a + 1, a + 1)]))
    with segmenting(segment, 16, passes):
        for merges in models:
            check_model(merges, a, [values], E.DEFAULT_MAX_TABLE_VALUES)


def test_self_overlap():
    tables = E.build_encoder(as_merges([(0, 0)]), 1)
    assert E.encode(np.zeros(3, np.int32), tables).tolist() == [1, 0]
    assert E.encode(np.zeros(4, np.int32), tables).tolist() == [1, 1]


@SETTINGS
@given(a=st.integers(1, 6), raw=st.lists(st.tuples(st.integers(0, 10**6), st.integers(0, 10**6)), max_size=40))
def test_rank_groups_are_maximal_runs_of_independent_merges(a, raw):
    """A group shares no child between two merges and uses no token made inside it; the next
    merge after a group would break that (so the passes are as few as the rule allows)."""
    rows = [(x % (a + k), y % (a + k)) for k, (x, y) in enumerate(raw)]
    merges = as_merges(rows)
    starts = _kernels.encode.rank_groups(merges[:, 0].copy(), merges[:, 1].copy(), a).tolist()
    assert starts[0] == 0 and starts[-1] == len(rows) and starts == sorted(set(starts))

    def independent(ks) -> bool:
        sets = [set(rows[k]) for k in ks]
        made = {a + k for k in ks}
        return all(not sets[i] & sets[j] for i in range(len(sets)) for j in range(i)) \
            and not made & set().union(*sets)

    for g in range(len(starts) - 1):
        ks = range(starts[g], starts[g + 1])
        assert independent(ks)
        if starts[g + 1] < len(rows):
            assert not independent(range(starts[g], starts[g + 1] + 1))


def test_group_passes_encode_long_smooth_sequences_like_the_sweep():
    """A merge-heavy signal (a slow ramp, trained merges) and a byte text, encoded by passes
    only, by passes handing over to the sweep, and by the sweep alone: the same tokens."""
    ramp = (np.arange(30_000) // 7 % 13).astype(np.int32)
    text = np.frombuffer(b"the cat sat on the mat; the rat ate the hat. " * 400, np.uint8).astype(np.int32)
    for ids, a in ((ramp, 13), (text, 256)):
        rows, _ = ref_train([ids[:3_000].tolist()], a, a + 60, n_candidates=8)
        tables = E.build_encoder(as_merges(rows), a)
        results = []
        for passes in ((0, 0), (1, 0), (1, 2), (E.PASS_MIN_IDS, E.PASS_YIELD)):
            with segmenting(E.SEGMENT_IDS, None, passes):
                results.append(E.encode(ids, tables).tolist())
        assert len(results[0]) < len(ids) // 2  # the merges fire: the passes are exercised
        assert all(r == results[0] for r in results[1:])
        assert results[0] == ref_encode(ids.tolist(), rows, a)


def test_no_merges_is_identity():
    ids = np.array([3, 1, 4, 1, 5], dtype=np.int16)
    assert E.encode(ids, E.build_encoder(np.zeros((0, 2), np.int32), 6)).tolist() == ids.tolist()
    expansion = E.build_expansion(np.zeros((0, 2), np.int64), 6)
    assert E.decode(ids.astype(np.int32), expansion).tolist() == ids.tolist()


def test_deep_chain_expansion_is_compact():
    """A chain of 65 536 merges would need 2**31 table entries; the table stays within budget."""
    a, m = 2, 65_536
    merges = chain(a, m)
    expansion = E.build_expansion(merges, a)
    assert expansion.values.size <= E.DEFAULT_MAX_TABLE_VALUES
    top = np.array([a + m - 1, 1, a + 5], dtype=np.int32)
    assert E.expanded_length(top, expansion) == (m + 1) + 1 + 7
    out = E.decode(top, expansion)
    assert out.tolist() == [0] * (m + 1) + [1] + [0] * 7
    ids = np.zeros(10_000, np.int32)
    tokens = E.encode(ids, E.build_encoder(merges, a))
    assert tokens.tolist() == [a] * 5_000  # (0, 0) pairs everything; (a, 0) never occurs


def test_doubling_lengths_saturate():
    a, m = 1, 64
    expansion = E.build_expansion(doubling(a, m), a)
    assert E.expanded_length(np.array([a + 20], np.int32), expansion) == 2**21
    assert E.expanded_length(np.array([a + 40, a + 40], np.int32), expansion) == 2**42
    for tokens in ([a + m - 1], [a + 59, a + 59, 0]):  # 2**64 values; 2**61 + 1 values
        with pytest.raises(ValueError, match="2\\*\\*61 values or more"):
            E.expanded_length(np.array(tokens, np.int32), expansion)
        with pytest.raises(ValueError, match="2\\*\\*61 values or more"):
            E.decode(np.array(tokens, np.int32), expansion)


def test_decode_into_out():
    merges = as_merges([(0, 1), (2, 2)])
    expansion = E.build_expansion(merges, 2)
    tokens = np.array([3, 0, 2], np.int32)
    out = np.full(10, -7, np.int32)
    result = E.decode(tokens, expansion, out=out)
    assert result.tolist() == [0, 1, 0, 1, 0, 0, 1]
    assert np.shares_memory(result, out) and out[7:].tolist() == [-7] * 3
    with pytest.raises(ValueError, match="out has 3 elements"):
        E.decode(tokens, expansion, out=np.empty(3, np.int32))
    with pytest.raises(TypeError, match="out"):
        E.decode(tokens, expansion, out=np.empty(10, np.int64))


def test_real_text_roundtrip():
    """Bytes of a sentence, merges from the oracle on a repeated text, long input."""
    text = b"the cat sat on the mat; the rat ate the hat. " * 4
    rows, _ = ref_train([list(text)], 256, 256 + 40)
    merges = as_merges(rows)
    tables = E.build_encoder(merges, 256)
    expansion = E.build_expansion(merges, 256)
    long = np.frombuffer(text * 500, np.uint8)
    with segmenting(100, 1000):
        tokens = E.encode(long, tables)
    assert tokens.tolist() == E.encode(long, tables).tolist()
    assert E.decode(tokens, expansion).tobytes() == long.astype(np.int32).tobytes()
    short = list(text[:90])
    assert E.encode(np.array(short), tables).tolist() == ref_encode(short, rows, 256)


def test_invalid_arguments():
    merges = as_merges([(0, 1)])
    tables = E.build_encoder(merges, 2)
    expansion = E.build_expansion(merges, 2)
    with pytest.raises(ValueError, match=r"ids\[1\] = 2 is out of range: valid ids are \[0, 2\)"):
        E.encode(np.array([0, 2, 1], np.int32), tables)
    with pytest.raises(ValueError, match=r"ids\[0\] = -1"):
        E.encode(np.array([-1], np.int64), tables)
    with pytest.raises(ValueError, match=r"ids\[0\] = 4294967296"):
        E.encode(np.array([2**32], np.int64), tables)
    with pytest.raises(ValueError, match=r"docs\[1\]\[2\] = 5"):
        E.encode_batch([np.array([0, 1]), np.array([1, 1, 5], np.int32)], tables)
    with pytest.raises(TypeError, match="integer dtype"):
        E.encode(np.array([0.0, 1.0]), tables)
    with pytest.raises(ValueError, match="1-D"):
        E.encode(np.zeros((2, 2), np.int32), tables)
    with pytest.raises(TypeError, match="EncoderTables"):
        E.encode(np.zeros(2, np.int32), expansion)
    with pytest.raises(TypeError, match="sequence of 1-D arrays"):
        E.encode_batch(np.zeros(3, np.int32), tables)
    with pytest.raises(ValueError, match=r"tokens\[0\] = 3 is out of range: valid values are \[0, 3\)"):
        E.decode(np.array([3], np.int32), expansion)
    with pytest.raises(ValueError, match=r"merges\[1\] = \[3, 0\]: children must be in \[0, 3\)"):
        E.build_encoder(as_merges([(0, 1), (3, 0)]), 2)
    with pytest.raises(ValueError, match="shape \\(M, 2\\)"):
        E.build_expansion(np.zeros((2, 3), np.int32), 2)
    with pytest.raises(ValueError, match=r"alphabet_size must be \["):
        E.build_encoder(merges, 0)
    with pytest.raises(TypeError, match="alphabet_size must be an int"):
        E.build_encoder(merges, 2.0)
    assert E.encode_batch([], tables) == []
