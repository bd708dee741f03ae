"""The compiled trainer (ubpe.trainer) against the plain-Python oracle (tests/reference.py).

Specification: for every corpus, ``ubpe.trainer.train`` gives exactly the merges, batches,
counts, document frequencies and early-stop flag of ``reference.train``, and its final token
stream is what replaying the merges (``reference.encode``) on the training documents gives.
"""

from __future__ import annotations

import os

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from common import json_without_jit
from reference import encode, units_for
from reference import train as reference_train

from ubpe import trainer
from ubpe.trainer import DEFAULT_WINDOW, TrainResult, train, unit_offsets_for

MAX_EXAMPLES = int(os.environ.get("UBPE_MAX_EXAMPLES", "100"))


def offsets_of(docs):
    off = np.zeros(len(docs) + 1, dtype=np.int64)
    off[1:] = np.cumsum([len(d) for d in docs])
    return off


def reference_units(docs, window):
    """The oracle's idf units, with the single-document rule of window=None."""
    lengths = [len(d) for d in docs]
    if window is None and len(docs) == 1:
        window = DEFAULT_WINDOW
    return units_for(lengths, window)


def run_both(docs, alphabet_size, n_tokens, n_candidates=1, min_count=2, window=None):
    """Train with both implementations; return (compiled result, oracle merges, oracle stop)."""
    ids = np.array([t for d in docs for t in d], dtype=np.int32)
    off = offsets_of(docs)
    got = train(ids, off, unit_offsets_for(off, window), alphabet_size, n_tokens, n_candidates,
                min_count, return_stream=True)
    unit_of, n_units = reference_units(docs, window)
    want, stopped = reference_train(docs, alphabet_size, n_tokens, n_candidates, min_count, unit_of)
    assert got.n_units == n_units
    return got, want, stopped


def rows(result: TrainResult):
    return [
        (int(left), int(r), int(b), int(c), int(d))
        for (left, r), b, c, d in zip(result.merges, result.batches, result.counts, result.df)
    ]


def assert_same(docs, alphabet_size, n_tokens, n_candidates=1, min_count=2, window=None):
    got, want, stopped = run_both(docs, alphabet_size, n_tokens, n_candidates, min_count, window)
    assert rows(got) == want
    assert got.stopped_early == stopped
    # the replay of the merges on the training documents reproduces the training stream
    replay = [t for d in docs for t in encode(d, want, alphabet_size)]
    assert got.stream.tolist() == replay
    # output contract: dtypes, shapes, priority space
    m = len(want)
    assert got.merges.dtype == np.int32 and got.merges.shape == (m, 2)
    assert got.batches.dtype == np.int32 and got.counts.dtype == np.int64 and got.df.dtype == np.int64
    assert np.all(got.merges < alphabet_size + np.arange(m)[:, None])
    assert np.all(np.diff(got.batches) >= 0)
    return got


corpora = st.integers(1, 8).flatmap(
    lambda a: st.tuples(
        st.just(a),
        st.lists(st.lists(st.integers(0, a - 1), max_size=200), min_size=1, max_size=4),
    )
)


@settings(deadline=None, max_examples=MAX_EXAMPLES)
@given(
    corpus=corpora,
    extra=st.integers(0, 60),
    n_candidates=st.sampled_from([1, 2, 3, 50]),
    min_count=st.sampled_from([1, 2, 3]),
    window=st.one_of(st.none(), st.integers(1, 20)),
)
def test_equals_reference(corpus, extra, n_candidates, min_count, window):
    alphabet_size, docs = corpus
    assert_same(docs, alphabet_size, alphabet_size + extra, n_candidates, min_count, window)


@settings(deadline=None, max_examples=MAX_EXAMPLES)
@given(
    corpus=corpora,
    extra=st.integers(0, 60),
    n_candidates=st.sampled_from([1, 2, 50]),
    min_count=st.sampled_from([1, 2]),
)
def test_equals_reference_while_growing_every_array(corpus, extra, n_candidates, min_count):
    """Tiny initial capacities force every grow / compact / resume path of the driver (the
    other tests take the direct-index initial count, these the hashed one)."""
    alphabet_size, docs = corpus
    with pytest.MonkeyPatch.context() as mp:
        for name, value in [("_MIN_PID_CAP", 1), ("_POOL_SLACK", 0), ("_POOL_SLACK_FRACTION", 0.0),
                            ("_PEND_INIT", 0), ("_MTAB_INIT", 16), ("_MAX_BATCHES_PER_CALL", 2),
                            ("_DENSE_MAX", 0)]:  # the hashed initial count, which grows
            mp.setattr(trainer, name, value)
        assert_same(docs, alphabet_size, alphabet_size + extra, n_candidates, min_count, 3)


def test_known_answer_aaabdaaabac():
    a, b, c, d = 0, 1, 2, 3
    docs = [[a, a, a, b, d, a, a, a, b, a, c]]
    for n_candidates in (1, 50):
        got = assert_same(docs, 4, 7, n_candidates)
        assert got.merges.tolist() == [[0, 0], [0, 1], [4, 5]]
        assert got.counts.tolist() == [2, 2, 2]
        assert got.df.tolist() == [1, 1, 1]
        assert got.stream.tolist() == [6, 3, 6, 0, 2]
        assert not got.stopped_early


def test_empty_documents():
    got = assert_same([[], [], []], 4, 10)
    assert got.merges.shape == (0, 2) and got.stopped_early and got.n_units == 3
    assert_same([[], [1, 1, 1, 1], []], 4, 10, 2, 1)


def test_no_documents():
    got = train(np.zeros(0, np.int32), np.zeros(1, np.int64), np.zeros(1, np.int64), 4, 10, 1, 2)
    assert got.merges.shape == (0, 2) and got.stopped_early and got.n_units == 0


def test_length_one():
    got = assert_same([[3]], 4, 10, min_count=1)
    assert got.stopped_early and got.stream.tolist() == [3]


def test_ten_thousand_identical_values():
    got = assert_same([[0] * 10_000], 1, 20, 50, 2)
    assert got.counts.tolist()[:3] == [5000, 2500, 1250]  # (0,0), (1,1), (2,2): halves each time


def test_alternating_pair():
    got = assert_same([[2, 5] * 500], 8, 12, 50)
    assert got.merges[0].tolist() == [2, 5] and got.counts[0] == 500


def test_alphabet_of_size_one():
    got = assert_same([[0] * 37, [0] * 5], 1, 10, 3, 1)
    assert got.merges[0].tolist() == [0, 0]


def test_no_merges_when_n_tokens_is_the_alphabet_size():
    got = assert_same([[0, 1, 0, 1, 0, 1]], 2, 2)
    assert got.merges.shape == (0, 2) and not got.stopped_early
    assert got.stream.tolist() == [0, 1, 0, 1, 0, 1]


def test_min_count_never_reached_stops_early():
    got = assert_same([[0, 1, 2, 3, 4, 5]], 6, 20, 1, 2)
    assert got.merges.shape == (0, 2) and got.stopped_early


def test_last_batch_may_overshoot():
    got = assert_same([[0, 1, 2, 3] * 10 + [4, 5, 6, 7] * 10], 8, 9, 50, 2)
    assert len(got.counts) > 1 and set(got.batches.tolist()) == {0}


def test_progress_reports_merges():
    seen = []
    ids = np.tile(np.arange(4, dtype=np.int32), 100)
    off = np.array([0, ids.size], np.int64)
    got = train(ids, off, unit_offsets_for(off, None), 4, 40, 1, 2, progress=seen.append)
    assert seen and seen[-1] == len(got.counts) and seen == sorted(seen)


def test_stream_only_when_asked():
    ids = np.array([0, 0, 0], np.int32)
    off = np.array([0, 3], np.int64)
    assert train(ids, off, off, 1, 2, 1, 1).stream is None


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(ids=np.array([[0]], np.int32)), "ids"),
        (dict(ids=np.array([0, 4], np.int32)), "alphabet_size"),
        (dict(ids=np.array([-1, 0], np.int32)), "alphabet_size"),
        (dict(doc_offsets=np.array([0, 1], np.int64)), "doc_offsets"),
        (dict(doc_offsets=np.array([0, 2, 1, 2], np.int64)), "doc_offsets"),
        (dict(unit_offsets=np.array([1, 2], np.int64)), "unit_offsets"),
        (dict(alphabet_size=0), "alphabet_size"),
        (dict(n_candidates=0), "n_candidates"),
        (dict(min_count=0), "min_count"),
        (dict(n_tokens=-1), "n_tokens"),
    ],
)
def test_invalid_arguments_raise(kwargs, match):
    args = dict(ids=np.array([0, 1], np.int32), doc_offsets=np.array([0, 2], np.int64),
                unit_offsets=np.array([0, 2], np.int64), alphabet_size=4, n_tokens=8,
                n_candidates=1, min_count=2)
    args.update(kwargs)
    with pytest.raises(ValueError, match=match):
        train(**args)


@settings(deadline=None, max_examples=MAX_EXAMPLES)
@given(
    lengths=st.lists(st.integers(0, 3000), min_size=0, max_size=5),
    window=st.one_of(st.none(), st.integers(1, 1500)),
)
def test_unit_offsets_match_reference_units(lengths, window):
    off = np.zeros(len(lengths) + 1, np.int64)
    off[1:] = np.cumsum(lengths)
    got = unit_offsets_for(off, window)
    unit_of, n_units = units_for(lengths, DEFAULT_WINDOW if window is None and len(lengths) == 1 else window)
    assert got.dtype == np.int64 and got[0] == 0 and got[-1] == off[-1] and got.size == n_units + 1
    # the unit of every position: the last unit starting at or before it
    pos = np.arange(off[-1])
    mine = np.searchsorted(got, pos, side="right") - 1
    theirs = np.array([u for units in unit_of for u in units], dtype=np.int64)
    assert np.array_equal(mine, theirs)


def test_unit_offsets_examples():
    assert unit_offsets_for(np.array([0, 3, 3, 7]), None).tolist() == [0, 3, 3, 7]
    assert unit_offsets_for(np.array([0, 2500]), None).tolist() == [0, 1024, 2048, 2500]
    assert unit_offsets_for(np.array([0, 3, 3, 7]), 2).tolist() == [0, 2, 3, 5, 7]
    with pytest.raises(ValueError, match="window"):
        unit_offsets_for(np.array([0, 3]), 0)


# ---------------------------------------------------------------------------- multiplicities

def train_docs(docs, alphabet_size, n_tokens, n_candidates, min_count, window, weights=None):
    ids = np.array([t for d in docs for t in d], dtype=np.int32)
    off = offsets_of(docs)
    n_docs = None if weights is None else int(sum(weights))
    units = unit_offsets_for(off, window, n_docs=n_docs)
    w = None if weights is None else np.array(weights, dtype=np.int64)
    return train(ids, off, units, alphabet_size, n_tokens, n_candidates, min_count, weights=w)


def assert_weighted_equals_repeated(docs, weights, alphabet_size, n_tokens, n_candidates, min_count, window):
    """Training on distinct documents with multiplicities equals training on every copy."""
    repeated = [d for d, k in zip(docs, weights) for _ in range(k)]
    want = train_docs(repeated, alphabet_size, n_tokens, n_candidates, min_count, window)
    got = train_docs(docs, alphabet_size, n_tokens, n_candidates, min_count, window, weights)
    assert rows(got) == rows(want)
    assert got.n_units == want.n_units and got.stopped_early == want.stopped_early
    return got


@settings(deadline=None, max_examples=MAX_EXAMPLES)
@given(
    corpus=corpora,
    data=st.data(),
    extra=st.integers(0, 60),
    n_candidates=st.sampled_from([1, 2, 50]),
    min_count=st.sampled_from([1, 2, 5]),
    window=st.one_of(st.none(), st.integers(1, 20)),
)
def test_weights_equal_repeated_documents(corpus, data, extra, n_candidates, min_count, window):
    alphabet_size, docs = corpus
    weights = data.draw(st.lists(st.integers(1, 4), min_size=len(docs), max_size=len(docs)))
    assert_weighted_equals_repeated(docs, weights, alphabet_size, alphabet_size + extra, n_candidates,
                                    min_count, window)


@settings(deadline=None, max_examples=MAX_EXAMPLES // 2)
@given(corpus=corpora, data=st.data(), n_candidates=st.sampled_from([1, 50]))
def test_weights_equal_repeated_documents_while_growing_every_array(corpus, data, n_candidates):
    alphabet_size, docs = corpus
    weights = data.draw(st.lists(st.integers(1, 5), min_size=len(docs), max_size=len(docs)))
    with pytest.MonkeyPatch.context() as mp:
        for name, value in [("_MIN_PID_CAP", 1), ("_POOL_SLACK", 0), ("_POOL_SLACK_FRACTION", 0.0),
                            ("_PEND_INIT", 0), ("_MTAB_INIT", 16), ("_MAX_BATCHES_PER_CALL", 2),
                            ("_DENSE_MAX", 0)]:  # the hashed initial count, which grows
            mp.setattr(trainer, name, value)
        assert_weighted_equals_repeated(docs, weights, alphabet_size, alphabet_size + 40, n_candidates, 2, 3)


def test_one_document_many_times_is_many_documents():
    """A single distinct document of multiplicity 3 stands for three documents: its idf units are
    the copies, not windows of one long document."""
    got = assert_weighted_equals_repeated([[0, 1, 0, 1, 0]], [3], 2, 4, 1, 2, None)
    assert got.n_units == 3 and got.counts.tolist()[0] == 6 and got.df.tolist()[0] == 3


def test_weights_of_ones_change_nothing():
    docs = [[0, 1, 2, 0, 1], [2, 2, 2, 0, 1], []]
    plain = train_docs(docs, 3, 8, 2, 1, None)
    ones = train_docs(docs, 3, 8, 2, 1, None, [1, 1, 1])
    assert rows(plain) == rows(ones) and plain.n_units == ones.n_units == 3


@pytest.mark.parametrize(
    "weights, error, match",
    [
        (np.array([1.0, 2.0]), TypeError, "weights"),
        (np.array([1]), ValueError, "one multiplicity per document"),
        (np.array([1, 0]), ValueError, "weights must be in"),
        (np.array([[1, 1]]), TypeError, "weights"),
    ],
)
def test_invalid_weights_raise(weights, error, match):
    ids = np.array([0, 1, 0, 1], np.int32)
    off = np.array([0, 2, 4], np.int64)
    with pytest.raises(error, match=match):
        train(ids, off, off, 2, 4, 1, 1, weights=weights)


def test_weights_need_units_inside_documents():
    ids = np.array([0, 1, 0, 1], np.int32)
    with pytest.raises(ValueError, match="inside one document"):
        train(ids, np.array([0, 2, 4]), np.array([0, 3, 4]), 2, 4, 1, 1, weights=np.array([1, 2]))


def test_pure_python_kernels_train_the_same(tmp_path):
    """Under NUMBA_DISABLE_JIT (debugging) the kernels run as Python; the prefetch hint, an LLVM
    intrinsic, is then a no-op and training gives the same merges."""
    code = (
        "import json, numpy as np\n"
        "from ubpe import trainer\n"
        "ids = np.array([0, 1, 2, 0, 1, 2, 0, 1, 1, 1, 2, 0, 1], dtype=np.int32)\n"
        "off = np.array([0, 6, 6, 13])\n"
        "r = trainer.train(ids, off, off, 3, 9, 2, 1, weights=np.array([2, 1, 3]))\n"
        "print(json.dumps([r.merges.tolist(), r.counts.tolist(), r.df.tolist()]))\n"
    )
    ids = np.array([0, 1, 2, 0, 1, 2, 0, 1, 1, 1, 2, 0, 1], dtype=np.int32)
    off = np.array([0, 6, 6, 13])
    r = train(ids, off, off, 3, 9, 2, 1, weights=np.array([2, 1, 3]))
    assert json_without_jit(code, tmp_path) == [r.merges.tolist(), r.counts.tolist(), r.df.tolist()]
