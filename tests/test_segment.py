"""Segmentation (ubpe.segment): exact optima against enumeration, and the peer's top-n beam."""

from __future__ import annotations

import numpy as np
import pytest
import reference_segment as R
from conftest import examples
from hypothesis import given, settings
from hypothesis import strategies as st

import ubpe
from ubpe import encoder as E
from ubpe import segment as S


@st.composite
def vocabularies(draw, max_a=4, max_m=8):
    """(merges (M, 2) priority space, A): any merge table, duplicates of sequences included."""
    a = draw(st.integers(1, max_a))
    m = draw(st.integers(0, max_m))
    rows = [(draw(st.integers(0, a + k - 1)), draw(st.integers(0, a + k - 1))) for k in range(m)]
    return np.array(rows, dtype=np.int64).reshape(m, 2), a


def expansion(merges, a):
    return E.build_expansion(merges, a)


@given(vocabularies(), st.data())
def test_optima_equal_enumeration(vocab, data):
    merges, a = vocab
    seqs = R.sequences(merges.tolist(), a)
    ids = data.draw(st.lists(st.integers(0, a - 1), max_size=9))
    counts = np.array(data.draw(st.lists(st.integers(0, 50), min_size=len(seqs), max_size=len(seqs))), np.int64)
    e = expansion(merges, a)
    arr = np.array(ids, dtype=np.int64)
    fewest = S.fewest_tokens(arr, e)
    assert fewest.tolist() == R.best(ids, seqs, [1] * len(seqs))
    cost = R.code_lengths(counts.tolist())
    assert S.code_lengths(counts).tolist() == cost
    assert S.fewest_bits(arr, e, counts).tolist() == R.best(ids, seqs, cost)


@given(vocabularies(max_a=6, max_m=30), st.data())
def test_never_worse_than_replay(vocab, data):
    merges, a = vocab
    ids = np.array(data.draw(st.lists(st.integers(0, a - 1), max_size=200)), dtype=np.int64)
    e = expansion(merges, a)
    replay = E.encode(ids, E.build_encoder(merges, a))
    counts = np.bincount(replay, minlength=e.n_tokens).astype(np.int64)
    cost = S.code_lengths(counts)
    fewest, bits = S.fewest_tokens(ids, e), S.fewest_bits(ids, e, counts)
    for tokens in (fewest, bits):
        assert np.array_equal(E.decode(tokens, e), ids)
    assert len(fewest) <= len(replay)
    assert cost[bits].sum() <= cost[replay].sum()


@settings(max_examples=examples(30), deadline=None)
@given(vocabularies(max_a=3, max_m=8), st.integers(9, 10), st.data())
def test_a_repetitive_input_with_tokens_hundreds_long_has_the_same_optima(vocab, doublings, data):
    """Once a token is longer than WALK_LONGEST, the tokens starting at each position are found
    by the reversed automaton instead of a walk as long as the match: the same optima, ties
    included, as the plain dynamic programme over suffixes."""
    merges, a = vocab
    rows = merges.tolist()
    t = data.draw(st.integers(0, a + len(rows) - 1))
    for _ in range(doublings):  # t, tt, tttt, ...: at least 512 ids
        rows.append([t, t])
        t = a + len(rows) - 1
    for _ in range(data.draw(st.integers(0, 3))):  # the long token extended by others
        rows.append([t, data.draw(st.integers(0, a + len(rows) - 1))])
    seqs = R.sequences(rows, a)
    pieces = data.draw(st.lists(st.one_of(st.integers(0, len(seqs) - 1), st.integers(-a, -1)), max_size=12))
    ids: list[int] = []
    for p in pieces:  # token sequences and single ids, joined (a repetitive signal)
        ids += list(seqs[p]) if p >= 0 else [-p - 1]
    ids = ids[:1200]
    counts = np.array(data.draw(st.lists(st.integers(0, 50), min_size=len(seqs), max_size=len(seqs))), np.int64)
    e = expansion(np.array(rows, dtype=np.int64), a)
    assert S.build_trie(e).longest > S.WALK_LONGEST
    arr = np.array(ids, dtype=np.int64)
    assert S.fewest_tokens(arr, e).tolist() == R.best_by_suffixes(ids, seqs, [1] * len(seqs))
    assert S.fewest_bits(arr, e, counts).tolist() == R.best_by_suffixes(ids, seqs, R.code_lengths(counts.tolist()))
    docs = [arr[: len(ids) // 3], arr[len(ids) // 3:]]
    assert [d.tolist() for d in S.fewest_tokens_batch(docs, e)] == [S.fewest_tokens(d, e).tolist() for d in docs]


def test_fixed_log2_is_exact_at_powers_and_monotone():
    xs = np.array([1, 2, 3, 4, 1000, 1 << 31, (1 << 31) + 1, (1 << 40) - 1], dtype=np.int64)
    got = [int(S._k.fixed_log2(int(x))) for x in xs]
    assert got == [R.fixed_log2(int(x)) for x in xs]
    assert got[0] == 0 and got[1] == S.COST_ONE and got[3] == 2 * S.COST_ONE
    assert got == sorted(got)
    assert abs(got[4] / S.COST_ONE - np.log2(1000)) < 2 ** -15


@given(vocabularies(max_a=3, max_m=6), st.data())
def test_top_n_is_the_peer_beam(vocab, data):
    merges, a = vocab
    seqs = R.sequences(merges.tolist(), a)
    ids = data.draw(st.lists(st.integers(0, a - 1), max_size=8))
    k = data.draw(st.integers(1, 6))
    w = np.array([0.0] * a + data.draw(st.lists(st.sampled_from([0.0, 0.5, 1.0, 2.25]), min_size=len(merges),
                                                 max_size=len(merges))))
    got = S.top_n(np.array(ids, dtype=np.int64), expansion(merges, a), w, k)
    want = R.beam(ids, seqs, w.tolist(), k, S._LOG_STEP)
    assert [(t.tolist(), s) for t, s in got] == want
    segs = [tuple(t.tolist()) for t, _ in got]
    assert len(set(segs)) == len(segs) and 1 <= len(segs) <= k
    for t, s in got:
        assert np.array_equal(E.decode(t, expansion(merges, a)), np.array(ids, dtype=np.int32))
        assert s == pytest.approx(R.tfidf(t.tolist(), w.tolist()), rel=1e-12, abs=1e-12)
    scores = [(-s, len(t)) for t, s in got]
    assert scores == sorted(scores)


def test_top_n_is_exhaustive_when_k_is_large():
    """With k at least the number of segmentations, the beam keeps them all."""
    merges = np.array([[0, 1], [2, 0], [0, 0], [4, 1]], dtype=np.int64)
    a = 3
    ids = [0, 1, 2, 0, 0, 1, 0, 1]
    seqs = R.sequences(merges.tolist(), a)
    every = R.all_segmentations(ids, seqs)
    w = np.array([0, 0, 0, 1.0, 0.5, 2.0, 1.5])
    got = S.top_n(np.array(ids), expansion(merges, a), w, len(every) + 3)
    assert sorted(t.tolist() for t, _ in got) == sorted(every)


def test_batch_equals_one_by_one():
    rng = np.random.default_rng(5)
    x = np.cumsum(rng.integers(-2, 3, 4000)).astype(np.int64)
    tok = ubpe.Tokenizer(None, 300).fit(x)
    e = tok.model.expansion()
    docs = [tok.alphabet.to_ids(x[i:j]) for i, j in ((0, 0), (0, 1), (5, 900), (900, 4000))]
    counts = np.bincount(tok.model.encode(tok.alphabet.to_ids(x)), minlength=e.n_tokens).astype(np.int64)
    assert [t.tolist() for t in S.fewest_tokens_batch(docs, e)] == [S.fewest_tokens(d, e).tolist() for d in docs]
    assert [t.tolist() for t in S.fewest_bits_batch(docs, e, counts)] == [
        S.fewest_bits(d, e, counts).tolist() for d in docs]


def test_long_tokens_are_left_out_and_still_decode():
    a = 2
    merges = np.array([[0, 0]] + [[a + k, a + k] for k in range(12)], dtype=np.int64)  # lengths 2 .. 2**13
    e = expansion(merges, a)
    ids = np.zeros(3 * 4096 + 5, dtype=np.int64)
    trie = S.build_trie(e, max_token_length=1024)
    assert trie.longest == 1024 and trie.left_out == 3
    tokens = S.fewest_tokens(ids, e)  # the default bound keeps every token here
    assert len(tokens) == 4 and np.array_equal(E.decode(tokens, e), ids)  # 8192 + 4096 + 4 + 1


def test_bad_arguments():
    e = expansion(np.array([[0, 1]], dtype=np.int64), 2)
    with pytest.raises(ValueError, match=r"ids\[1\] = 2 is out of range"):
        S.fewest_tokens(np.array([0, 2]), e)
    with pytest.raises(TypeError):
        S.fewest_tokens([0, 1], e)
    with pytest.raises(ValueError, match="shape"):
        S.fewest_bits(np.array([0, 1]), e, np.ones(2, np.int64))
    with pytest.raises(ValueError, match="finite"):
        S.top_n(np.array([0, 1]), e, np.array([0, 0, np.nan]), 2)
    with pytest.raises(ValueError):
        S.top_n(np.array([0, 1]), e, np.zeros(3), 0)
    with pytest.raises(MemoryError, match="max_nodes"):
        S.top_n(np.zeros(50, np.int64), expansion(np.array([[0, 0]], dtype=np.int64), 1),
                np.array([0.0, 1.0]), 4, max_nodes=16)


def test_tokenizer_methods_and_top_n():
    """The public face: Tokenizer.encode(method=, top_n=) and encode_batch(method=) in public ids."""
    rng = np.random.default_rng(2)
    x = np.cumsum(rng.integers(-2, 3, 6000)).astype(np.int16)
    tok = ubpe.Tokenizer(None, 200).fit(x)
    window = x[1000:3000]
    replay = tok.encode(window)
    assert np.array_equal(tok.encode(window, method="replay"), replay)
    optimal = tok.encode(window, method="optimal")
    bits = tok.encode(window, method="bits")
    for t in (optimal, bits):
        assert np.array_equal(tok.decode(t), window)
    assert len(optimal) <= len(replay)
    ids = tok.alphabet.to_ids(window)
    assert np.array_equal(optimal, tok.token_ids[S.fewest_tokens(ids, tok.model.expansion())])
    docs = [x[:10], x[10:900], x[900:901], x[:0]]
    for method in ("replay", "optimal", "bits"):
        assert [t.tolist() for t in tok.encode_batch(docs, method=method)] == [
            tok.encode(d, method=method).tolist() for d in docs]
    best = tok.encode(window[:300], top_n=4)
    assert 1 <= len(best) <= 4
    for t, score in best:
        assert np.array_equal(tok.decode(t), window[:300]) and score >= 0
    assert [s for _, s in best] == sorted((s for _, s in best), reverse=True)
    with pytest.raises(ValueError):
        tok.encode(window, method="fastest")
    with pytest.raises(ValueError, match="top_n"):
        tok.encode(window, method="bits", top_n=2)


def test_tokens_with_the_same_sequence_are_priced_each():
    """(00)0 and 0(00) are both 000: "bits" takes the cheaper under the counts, whichever id it has
    (found by hypothesis: the trie once kept only the lowest id of a sequence)."""
    merges = np.array([[0, 0], [0, 1], [1, 0]], dtype=np.int64)  # 1 = 00, 2 = 0 00, 3 = 00 0
    e = expansion(merges, 1)
    ids = np.zeros(3, dtype=np.int64)
    counts = np.array([0, 0, 0, 5], dtype=np.int64)  # token 3 is the frequent one
    assert S.fewest_bits(ids, e, counts).tolist() == [3]
    assert S.fewest_tokens(ids, e).tolist() == [2]  # equal cost: the lowest id
    got = S.top_n(ids, e, np.array([0.0, 0.0, 1.0, 2.0]), 3)
    assert [t.tolist() for t, _ in got][:2] == [[3], [2]]


def _reference_trie(seqs: list[tuple[int, ...]], a: int) -> tuple[list[tuple[int, ...]], dict]:
    """Breadth-first nodes (each named by its prefix; children by symbol) and the tokens ending
    at each prefix, from the token sequences alone."""
    prefixes = sorted({s[:d] for s in seqs for d in range(len(s) + 1)}, key=lambda p: (len(p), p))
    ending: dict[tuple[int, ...], list[int]] = {}
    for t, s in enumerate(seqs):
        ending.setdefault(s, []).append(t)
    return prefixes, ending


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 3), st.lists(st.tuples(st.integers(0, 40), st.integers(0, 40)), min_size=1, max_size=12),
       st.integers(0, 6))
def test_the_trie_holds_every_token_sequence_breadth_first(a, pairs, chain):
    """Nodes in breadth-first order, children by symbol, each node's tokens (also a chain of one
    token far longer than the others, the trie's single-token tail)."""
    merges = []
    for left, right in pairs:  # each merge joins earlier tokens
        merges.append([left % (a + len(merges)), right % (a + len(merges))])
    for _ in range(chain):  # the last token doubled again and again
        merges.append([a + len(merges) - 1, a + len(merges) - 1])
    e = expansion(np.array(merges, dtype=np.int64), a)
    _assert_the_trie_of(e, a)


def _assert_the_trie_of(e, a: int) -> None:
    seqs = [tuple(E.decode(np.array([t]), e).tolist()) for t in range(e.n_tokens)]
    trie = S.build_trie(e, max_token_length=1 << 16)
    prefixes, ending = _reference_trie(seqs, a)
    node = {p: i for i, p in enumerate(prefixes)}
    assert trie.n_children.shape[0] == len(prefixes) and trie.longest == max(map(len, seqs))
    children_of: dict[tuple[int, ...], list[tuple[int, ...]]] = {}
    for q in prefixes[1:]:  # breadth-first, so each node's children come sorted
        children_of.setdefault(q[:-1], []).append(q)
    for p, v in node.items():
        children = children_of.get(p, [])
        assert trie.n_children[v] == len(children)
        if children:
            assert trie.first[v] == node[children[0]]
            assert [int(trie.symbol[node[q]]) for q in children] == [q[-1] for q in children]
        tokens = ending.get(p, [])
        assert int(trie.token[v]) == (tokens[0] if tokens else -1)
        first, count = int(trie.token_first[v]), int(trie.token_count[v])
        assert trie.tokens[first:first + count].tolist() == tokens


@pytest.mark.parametrize("seed", range(4))
def test_a_large_vocabulary_with_several_long_tokens_is_the_same_trie(seed):
    """Hundreds of short tokens (built a depth at a time) and several tokens hundreds of ids long
    that share prefixes (the tail, built at once) against the reference."""
    rng = np.random.default_rng(seed)
    a = int(rng.integers(2, 9))
    merges: list[list[int]] = []
    for _ in range(int(rng.integers(150, 400))):
        n = a + len(merges)
        merges.append([int(rng.integers(0, n)), int(rng.integers(0, n))])
    for _ in range(int(rng.integers(3, 9))):  # long tokens: an existing token doubled, then extended
        t = a + len(merges) - 1 - int(rng.integers(0, 20))
        merges.append([t, t])
        merges.append([a + len(merges) - 1, int(rng.integers(0, a))])
    e = expansion(np.array(merges, dtype=np.int64), a)
    assert np.sum(e.lengths > 20) > S.TAIL_TOKENS and e.lengths.max() > 150  # both ways of building
    _assert_the_trie_of(e, a)
