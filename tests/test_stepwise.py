"""ubpe.stepwise: the compiled trainer split over shares of the documents gives exactly
ubpe.trainer.train on all of them (merges, batches, counts, df, idf units, stopping early),
whatever the split; a share reports only the counts that changed."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from ubpe import stepwise, trainer


def offsets(docs):
    return np.concatenate(([0], np.cumsum([len(d) for d in docs]))).astype(np.int64)


def ids_of(docs):
    return np.concatenate(docs).astype(np.int32) if docs else np.zeros(0, dtype=np.int32)


def train_split(docs, groups, alphabet_size, n_tokens, n_candidates, min_count, window=None):
    """stepwise.train with share ``g`` holding the documents ``groups[g]`` (in that order)."""
    n = sum(len(d) for d in docs)
    nc = max(1, min(n_candidates, n))
    V = n_tokens + nc
    shares, n_units = [], 0
    for g in groups:
        part = [docs[i] for i in g]
        units = trainer.unit_offsets_for(offsets(part), window, n_docs=len(docs))
        n_units += units.shape[0] - 1
        shares.append(stepwise.ShareTrainer(ids_of(part), offsets(part), units, alphabet_size, V))
    return stepwise.train(shares, alphabet_size=alphabet_size, n_tokens=n_tokens, n_candidates=nc,
                          min_count=min_count, V=V, n_units=n_units)


def train_whole(docs, alphabet_size, n_tokens, n_candidates, min_count, window=None):
    off = offsets(docs)
    return trainer.train(ids_of(docs), off, trainer.unit_offsets_for(off, window), alphabet_size, n_tokens,
                         n_candidates, min_count)


def assert_same(got, expected):
    for field in ("merges", "batches", "counts", "df"):
        assert np.array_equal(getattr(got, field), getattr(expected, field)), field
    assert got.n_units == expected.n_units
    assert got.stopped_early == expected.stopped_early


@settings(max_examples=150, deadline=None)
@given(st.data(), st.integers(1, 7), st.integers(1, 8), st.integers(0, 80), st.integers(1, 5), st.integers(1, 3),
       st.sampled_from([None, 3]))
def test_any_split_of_the_documents_trains_as_the_whole_corpus(data, alphabet_size, n_docs, extra, n_candidates,
                                                               min_count, window):
    docs = [np.array(data.draw(st.lists(st.integers(0, alphabet_size - 1), max_size=50)), dtype=np.int32)
            for _ in range(n_docs)]
    if sum(len(d) for d in docs) == 0:
        return
    order = data.draw(st.permutations(range(n_docs)))
    n_groups = data.draw(st.integers(1, n_docs))
    cuts = sorted(data.draw(st.lists(st.integers(1, max(1, n_docs - 1)), min_size=n_groups - 1,
                                     max_size=n_groups - 1))) if n_docs > 1 else []
    groups = [list(g) for g in np.split(np.array(order), cuts)]  # some may be empty
    n_tokens = alphabet_size + extra
    assert_same(train_split(docs, groups, alphabet_size, n_tokens, n_candidates, min_count, window),
                train_whole(docs, alphabet_size, n_tokens, n_candidates, min_count, window))


def test_a_signal_split_over_shares_trains_as_one_corpus():
    """Long enough for the shares' arrays to grow and their pools to be compacted."""
    rng = np.random.default_rng(3)
    x = (np.cumsum(rng.integers(-3, 4, 400_000)) % 300).astype(np.int32)
    docs = [x[i:i + 20_000] for i in range(0, x.size, 20_000)]
    expected = train_whole(docs, 300, 3000, 50, 2)
    assert len(expected.merges) >= 2700
    for groups in ([list(range(20))], [list(range(0, 20, 2)), list(range(1, 20, 2))], [[i] for i in range(20)]):
        assert_same(train_split(docs, groups, 300, 3000, 50, 2), expected)
    one = [x[:100_000]]  # one document: idf over windows, one share or a share per half
    assert_same(train_split(one, [[0]], 300, 1000, 7, 3), train_whole(one, 300, 1000, 7, 3))


def test_a_share_reports_every_count_then_only_the_changes():
    docs = [np.array([0, 1, 0, 1, 0, 1, 2, 2], dtype=np.int32)]
    V = 10
    share = stepwise.ShareTrainer(ids_of(docs), offsets(docs), np.array([0, 8]), 3, V)
    keys, counts = share.initial()
    assert dict(zip(keys.tolist(), counts.tolist())) == {0 * V + 1: 3, 1 * V + 0: 2, 1 * V + 2: 1, 2 * V + 2: 1}
    count, df, keys, delta = share.apply(np.array([0 * V + 1]), np.array([3]))  # (0, 1) -> 3: 3 3 3 2 2
    assert count.tolist() == [3] and df.tolist() == [1]
    assert dict(zip(keys.tolist(), delta.tolist())) == {0 * V + 1: -3, 1 * V + 0: -2, 1 * V + 2: -1,
                                                        3 * V + 3: 2, 3 * V + 2: 1}
    count, df, keys, delta = share.apply(np.array([9 * V + 9]), np.array([4]))  # a pair absent here
    assert count.tolist() == [0] and df.tolist() == [0] and keys.size == 0 and delta.size == 0
