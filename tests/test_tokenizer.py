"""Tokenizer: the public fit/encode/decode contract, checked against the plain-Python oracle."""

import pickle
import warnings

import numpy as np
import pytest
from conftest import EDGE_CASES
from hypothesis import given
from hypothesis import strategies as st
from reference import decode as ref_decode
from reference import encode as ref_encode
from reference import fit_model

import ubpe
from common import pack_any, pack_model_file, unpack_any
from ubpe import Alphabet, Tokenizer

# ==================== the oracle, end to end


@st.composite
def corpora(draw):
    a = draw(st.integers(1, 8))
    n_docs = draw(st.integers(1, 4))
    docs = [draw(st.lists(st.integers(0, a - 1), max_size=120)) for _ in range(n_docs)]
    if not any(docs):
        docs[0] = [0]
    n_tokens = a + draw(st.integers(0, 20))
    params = dict(
        n_candidates=draw(st.sampled_from([1, 2, 3, 50])),
        min_count=draw(st.integers(1, 3)),
        weighting=draw(st.sampled_from(["idf", "count", "tfidf"])),
        window=draw(st.sampled_from([None, 1, 3, 16])),
    )
    return a, docs, n_tokens, params


def fit_quietly(tok, corpus):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        return tok.fit(corpus)


@given(corpora())
def test_fit_equals_the_reference_merges_weights_and_ids(case):
    a, docs, n_tokens, params = case
    expected = fit_model(docs, a, n_tokens, **params)
    tok = fit_quietly(Tokenizer(a, n_tokens, **params), [np.array(d, dtype=np.int64) for d in docs])
    assert [tuple(m) for m in tok.merges.tolist()] == expected["merges"]
    assert tok.batches.tolist() == expected["batches"]
    assert tok.counts.tolist() == expected["counts"]
    assert tok.df.tolist() == expected["df"]
    assert tok.weights.tolist() == expected["weights"]
    assert tok.token_ids.tolist() == expected["token_ids"]
    assert tok.n_units == expected["n_units"]
    assert tok.vocab_size == (n_tokens if not expected["stopped_early"] else a + len(expected["merges"]))


@given(corpora(), st.lists(st.integers(0, 7), max_size=150))
def test_encode_equals_the_reference_replay(case, other):
    a, docs, n_tokens, params = case
    tok = fit_quietly(Tokenizer(a, n_tokens, **params), docs)
    merges = [tuple(m) for m in tok.merges.tolist()]
    ids = tok.token_ids.tolist()
    for seq in docs + [[v % a for v in other]]:
        expected = [ids[t] for t in ref_encode(seq, merges, a)]
        assert tok.encode(np.array(seq, dtype=np.int64)).tolist() == expected
        priority = {v: k for k, v in enumerate(ids)}
        assert ref_decode([priority[t] for t in expected], merges, a) == seq


# ==================== known answer


def test_wikipedia_aaabdaaabac_merges_and_tokens():
    a, b, c, d = 0, 1, 2, 3
    seq = [a, a, a, b, d, a, a, a, b, a, c]
    tok = Tokenizer(4, 7, n_candidates=1).fit(seq)
    assert tok.merges.tolist() == [[a, a], [a, b], [4, 5]]  # Z=aa, Y=ab, X=ZY
    x = tok.token_ids[6]
    assert tok.encode(seq).tolist() == [x, d, x, a, c]
    assert tok.sequence(int(x)).tolist() == [a, a, a, b]
    assert tok.backward[int(x)] == (int(tok.token_ids[4]), int(tok.token_ids[5]))
    assert tok.forward[(int(tok.token_ids[4]), int(tok.token_ids[5]))] == x


def test_batched_fit_rejects_candidates_sharing_a_token():
    seq = [0, 0, 0, 1, 3, 0, 0, 0, 1, 0, 2]
    tok = Tokenizer(4, 5, n_candidates=50).fit(seq)
    # (0,0):4 and (0,1):2 are the top two; (0,1) shares token 0 and waits for the next batch
    assert tok.merges.tolist() == [[0, 0]]
    assert tok.batches.tolist() == [0]


# ==================== properties


@st.composite
def typed_sequences(draw):
    dtype = draw(st.sampled_from([np.uint8, np.int8, np.int16, np.uint16, np.int32, np.int64, np.uint64]))
    info = np.iinfo(dtype)
    pool = draw(st.lists(st.integers(int(info.min), int(info.max)), min_size=1, max_size=6, unique=True))
    values = draw(st.lists(st.sampled_from(pool), min_size=1, max_size=400))
    return np.array(values, dtype=dtype)


@given(typed_sequences(), st.integers(0, 30), st.sampled_from([1, 50]))
def test_decode_encode_is_exact_in_values_and_dtype(x, extra, n_candidates):
    alphabet = Alphabet.from_data(x)
    tok = fit_quietly(Tokenizer(alphabet, len(alphabet) + extra, n_candidates=n_candidates), x)
    tokens = tok.encode(x)
    assert tokens.dtype == np.int32
    assert len(tokens) <= len(x)
    y = tok.decode(tokens)
    assert y.dtype == x.dtype
    np.testing.assert_array_equal(y, x)


@given(corpora())
def test_fit_and_encode_are_deterministic(case):
    a, docs, n_tokens, params = case
    t1 = fit_quietly(Tokenizer(a, n_tokens, **params), docs)
    t2 = fit_quietly(Tokenizer(a, n_tokens, **params), docs)
    assert t1.to_bytes() == t2.to_bytes()
    for d in docs:
        assert t1.encode(d).tolist() == t2.encode(d).tolist()


@given(corpora())
def test_trimmed_vocabulary_has_exactly_n_tokens_and_is_closed(case):
    a, docs, n_tokens, params = case
    params["min_count"] = 1  # every adjacent pair can merge, so batches overshoot and trim bites
    tok = fit_quietly(Tokenizer(a, n_tokens, **params), docs)
    total = sum(max(len(d) - 1, 0) for d in docs)
    if tok.vocab_size < n_tokens:  # only when no pair at all was left to merge
        assert total == 0 or all(len(s) <= 1 for s in tok.encode_batch(docs))
    else:
        assert tok.vocab_size == n_tokens
    m = tok.merges
    assert np.all(m < a + np.arange(len(m))[:, None])  # children are older tokens: closed
    assert sorted(tok.token_ids.tolist()) == list(range(tok.vocab_size))


@given(corpora())
def test_save_and_load_give_an_equal_tokenizer(tmp_path_factory, case):
    a, docs, n_tokens, params = case
    tok = fit_quietly(Tokenizer(a, n_tokens, **params), docs)
    path = tmp_path_factory.mktemp("model") / "model.ubpe"
    tok.save(path)
    loaded = Tokenizer.load(path)
    assert loaded == tok
    assert loaded.to_bytes() == tok.to_bytes()
    assert pickle.loads(pickle.dumps(tok)) == tok
    for d in docs:
        assert loaded.encode(d).tolist() == tok.encode(d).tolist()


# ==================== named edge cases


@pytest.mark.parametrize("name", list(EDGE_CASES))
def test_edge_cases_round_trip(name):
    x, a = EDGE_CASES[name]
    for n_candidates in (1, 50):
        tok = Tokenizer(a, a + 64, n_candidates=n_candidates, min_count=1)
        if len(x) == 0:
            with pytest.raises(ValueError, match="empty"):
                tok.fit(x)
            tok = fit_quietly(tok, [0] * 3)
        else:
            tok = fit_quietly(tok, x)
        tokens = tok.encode(x)
        assert len(tokens) <= len(x)
        np.testing.assert_array_equal(tok.decode(tokens, dtype=x.dtype), x)


def test_ten_thousand_identical_values_collapse_to_few_tokens():
    x = np.zeros(10_000, dtype=np.uint8)
    with pytest.warns(UserWarning, match="stopped early"):
        tok = Tokenizer(1, 20, n_candidates=1).fit(x)
    assert tok.merges.tolist()[:3] == [[0, 0], [1, 1], [2, 2]]  # doubling chain
    assert len(tok.encode(x)) < 40
    np.testing.assert_array_equal(tok.decode(tok.encode(x)), x)


def test_alphabet_of_size_one_and_no_merges():
    tok = Tokenizer(1, 1).fit([0, 0, 0])
    assert tok.vocab_size == 1 and len(tok.merges) == 0
    assert tok.encode([0, 0]).tolist() == [0, 0]


def test_negative_and_64_bit_values():
    x = np.array([-(2**62), 5, -1, 2**62, 5, -1, 2**62, 5, -1, 2**62], dtype=np.int64)
    tok = Tokenizer(None, 6).fit(x)
    assert len(tok.alphabet) == 4
    assert len(tok.encode(x)) < len(x)
    np.testing.assert_array_equal(tok.decode(tok.encode(x)), x)
    big = np.array([2**64 - 1, 0, 2**64 - 1, 0, 7], dtype=np.uint64)
    tok = Tokenizer(None, 4).fit(big)
    np.testing.assert_array_equal(tok.decode(tok.encode(big)), big)


def test_alphabet_of_characters():
    text = "the cat sat on the mat, the end"
    tok = fit_quietly(Tokenizer(Alphabet(sorted(set(text))), 30), text)
    tokens = tok.encode(text)
    assert len(tokens) < len(text)
    assert "".join(tok.decode(tokens)) == text
    assert "".join(tok.sequence(int(tokens[0]))) == text[: len(tok.sequence(int(tokens[0])))]
    assert Tokenizer.from_bytes(tok.to_bytes()).encode(text).tolist() == tokens.tolist()


def test_bytes_and_lists_are_sequences():
    data = b"abracadabra abracadabra"
    tok = fit_quietly(Tokenizer(256, 270), data)
    assert bytes(tok.decode(tok.encode(data))) == data
    assert tok.encode(list(data)).tolist() == tok.encode(data).tolist()


def test_documents_do_not_share_pairs():
    # (1, 2) only ever occurs across the boundary of the two documents
    tok = fit_quietly(Tokenizer(3, 10, n_candidates=1), [[0, 0, 1], [2, 0, 0]])
    assert [1, 2] not in tok.merges.tolist()


def test_idf_over_windows_of_a_single_long_document():
    x = np.concatenate([np.tile([0, 1], 2000), np.tile([2, 3], 100)])
    tok = Tokenizer(4, 6, n_candidates=50, window=100).fit(x)
    assert tok.n_units == 42
    weight = dict(zip(map(tuple, tok.merges.tolist()), tok.weights.tolist()))
    assert weight[(2, 3)] > weight[(0, 1)]  # the rarer pair is worth more under idf
    assert tok.token_ids[4 + tok.merges.tolist().index([2, 3])] == 4  # and gets the lowest id


# ==================== errors


def test_errors_name_the_problem():
    with pytest.raises(TypeError, match="quantize"):
        Tokenizer(256, 300).fit(np.array([0.5, 1.5]))
    with pytest.raises(ValueError, match="n_tokens"):
        Tokenizer(256, 100)
    with pytest.raises(ValueError, match="n_candidates"):
        Tokenizer(256, 300, n_candidates=0)
    with pytest.raises(ValueError, match="empty"):
        Tokenizer(256, 300).fit([])
    with pytest.raises(ValueError, match="weighting"):
        Tokenizer(256, 300, weighting="tf")
    tok = Tokenizer(4, 6).fit([0, 1, 0, 1, 0, 1])
    with pytest.raises(ValueError, match=r"token id 6 at position 1"):
        tok.decode([0, 6])
    with pytest.raises(ValueError, match=r"value 9 at position 2"):
        tok.encode([0, 1, 9])
    with pytest.raises(TypeError, match="quantize"):
        tok.encode(np.array([1.0]))
    with pytest.raises(ubpe.NotFittedError):
        Tokenizer(4, 6).encode([0])


def test_stopping_early_warns():
    with pytest.warns(UserWarning, match="stopped early"):
        tok = Tokenizer(4, 100, min_count=2).fit([0, 1, 2, 3])
    assert tok.vocab_size == 4


def test_corrupt_or_newer_model_bytes_raise_library_errors():
    tok = Tokenizer(4, 7, n_candidates=1).fit([0, 0, 0, 1, 3, 0, 0, 0, 1, 0, 2])
    data = tok.to_bytes()
    for cut in range(len(data)):
        with pytest.raises(ubpe.CorruptDataError):
            Tokenizer.from_bytes(data[:cut])

    outer = unpack_any(data)
    outer["version"] = 99
    with pytest.raises(ubpe.FormatVersionError) as info:
        Tokenizer.from_bytes(pack_any(outer))
    assert info.value.found == 99
    fields = unpack_any(outer["body"])
    fields["merges"] = np.array([[0, 0], [0, 1], [6, 5]], dtype="<i4").tobytes()  # 6 is not made yet
    with pytest.raises(ubpe.CorruptDataError, match="earlier merge"):
        Tokenizer.from_bytes(pack_model_file(fields))
    for key, bad in [("merges", 7), ("merges", b"\x00" * 12), ("counts", "x"), ("alphabet", []), ("params", None),
                     ("token_ids", np.array([4, 4, 6], dtype="<i4").tobytes()), ("n_units", -1), ("dtype", "zip")]:
        broken = dict(fields, merges=np.array([[0, 0], [0, 1], [4, 5]], dtype="<i4").tobytes())
        broken[key] = bad
        with pytest.raises(ubpe.CorruptDataError):
            Tokenizer.from_bytes(pack_model_file(broken))
    outer["version"], outer["magic"] = 1, "zip"
    with pytest.raises(ubpe.CorruptDataError, match="magic"):
        Tokenizer.from_bytes(pack_any(outer))


@given(st.data())
def test_mutated_model_bytes_load_or_raise_a_library_error(data):
    tok = Tokenizer(4, 7, n_candidates=2).fit([0, 0, 0, 1, 3, 0, 0, 0, 1, 0, 2, 3, 3, 1, 0, 0, 1])
    raw = bytearray(tok.to_bytes())
    for _ in range(data.draw(st.integers(1, 4))):
        i = data.draw(st.integers(0, len(raw) - 1))
        raw[i] = data.draw(st.integers(0, 255))
    try:
        loaded = Tokenizer.from_bytes(bytes(raw))
    except ubpe.UBPEError:
        return
    x = np.array([0, 0, 0, 1, 3, 0, 1], dtype=np.int64)  # a loaded model must still work safely
    try:
        np.testing.assert_array_equal(loaded.decode(loaded.encode(x), dtype=np.int64), x)
    except ValueError as e:  # e.g. a mutated alphabet no longer holds these values
        assert "not in the alphabet" in str(e)


# ==================== identical documents are trained once, with their multiplicity


@given(corpora(), st.lists(st.integers(0, 3), min_size=1, max_size=12))
def test_repeated_documents_give_the_reference_model(case, picks):
    """A corpus of many copies of few documents (collapsed internally) fits exactly the
    oracle's model of the full corpus."""
    a, docs, n_tokens, params = case
    corpus = docs + [docs[p % len(docs)] for p in picks]
    expected = fit_model(corpus, a, n_tokens, **params)
    tok = fit_quietly(Tokenizer(a, n_tokens, **params), [np.array(d, dtype=np.int64) for d in corpus])
    assert [tuple(m) for m in tok.merges.tolist()] == expected["merges"]
    assert tok.counts.tolist() == expected["counts"] and tok.df.tolist() == expected["df"]
    assert tok.token_ids.tolist() == expected["token_ids"] and tok.n_units == expected["n_units"]


@pytest.mark.parametrize("window", [None, 4])
def test_collapsing_identical_documents_keeps_the_training(window):
    # training once per distinct document with its multiplicity gives the training of every copy
    rng = np.random.default_rng(7)
    distinct = [rng.integers(0, 6, size=n) for n in (0, 1, 5, 40, 40, 300)]
    corpus = [distinct[i] for i in rng.integers(0, len(distinct), size=200)]
    ids = np.concatenate(corpus).astype(np.int32)
    offsets = np.concatenate(([0], np.cumsum([len(d) for d in corpus])))
    short_ids, collapsed, weights = ubpe.trainer.collapse_documents(ids, offsets)
    assert len(collapsed) - 1 == len(distinct) and weights.sum() == 200  # it does collapse
    full = ubpe.trainer.train(ids, offsets, ubpe.trainer.unit_offsets_for(offsets, window), 6, 40, 50, 2)
    fast = ubpe.trainer.train(short_ids, collapsed, ubpe.trainer.unit_offsets_for(collapsed, window), 6, 40, 50, 2,
                              weights=weights)
    for name in ("merges", "batches", "counts", "df"):
        assert np.array_equal(getattr(fast, name), getattr(full, name)), name
    assert fast.n_units == full.n_units == (200 if window is None else full.n_units)
    assert Tokenizer(6, 40, window=window).fit(corpus).n_units == full.n_units


def _collapse_by_dict(ids, offsets):
    """collapse_documents spelled out with a dict (the definition the kernel must match)."""
    first: dict[tuple, int] = {}
    owner = [first.setdefault(tuple(ids[offsets[d] : offsets[d + 1]].tolist()), d) for d in range(len(offsets) - 1)]
    keep = sorted(set(owner))
    weights = [owner.count(d) for d in keep]
    docs = [ids[offsets[d] : offsets[d + 1]] for d in keep]
    return docs, weights


@given(st.lists(st.lists(st.integers(0, 2), max_size=4), min_size=2, max_size=40))
def test_collapse_documents_keeps_first_copies_in_order(docs):
    """Distinct documents in the order of their first copies, each weighted by its copies;
    prefixes of one another and empty documents stay apart."""
    ids = np.array([v for d in docs for v in d], dtype=np.int32)
    offsets = np.concatenate(([0], np.cumsum([len(d) for d in docs]))).astype(np.int64)
    new_ids, new_offsets, weights = ubpe.trainer.collapse_documents(ids, offsets)
    want_docs, want_weights = _collapse_by_dict(ids, offsets)
    if weights is None:
        assert len(want_docs) == len(docs) and new_ids is ids and new_offsets is offsets
        return
    assert weights.dtype == np.int64 and weights.tolist() == want_weights
    assert new_ids.dtype == np.int32 and new_offsets.dtype == np.int64
    got = [new_ids[new_offsets[d] : new_offsets[d + 1]].tolist() for d in range(len(new_offsets) - 1)]
    assert got == [d.tolist() for d in want_docs]


def test_fit_on_strided_documents_equals_contiguous_copies():
    """Documents that are views with a stride (no single buffer) take the concatenating path."""
    rng = np.random.default_rng(3)
    base = rng.integers(0, 5, size=(30, 40)).astype(np.int32)
    strided = [row[::2] for row in base] + [base[0, ::2]]
    copies = [np.ascontiguousarray(d) for d in strided]
    assert not strided[0].flags.c_contiguous
    assert Tokenizer(5, 30).fit(strided).to_bytes() == Tokenizer(5, 30).fit(copies).to_bytes()
    bad = [row[::2] for row in base] + [np.array([0, 7], dtype=np.int32)]
    with pytest.raises(ValueError, match="document 30"):
        Tokenizer(5, 30).fit(bad)
