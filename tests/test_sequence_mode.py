"""Sequence mode (docs/algorithm.md, "Sequence mode") and compress choosing the encoding method.

Sequence-mode models fit, serialise, decode, encode by segmentation and compress; classic bytes
are unchanged; hostile sequence-mode model bytes and container ``method`` fields are refused;
``compress`` never picks a method whose container is larger than replay's, and reports it.
"""

import copy
import os
import pathlib
import pickle
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ubpe
from common import pack_any, unpack_any, pack_model_file as pack
from conftest import MAX_EXAMPLES
from ubpe import Model, Tokenizer, compress, decompress, describe
from ubpe.planner import settings as planner_settings

FIXTURES = pathlib.Path(__file__).parent / "fixtures"
MUTANTS = int(os.environ.get("UBPE_MODEL_FUZZ", 20000 if os.environ.get("UBPE_SLOW_TESTS") == "1" else 1500))


def fit(corpus, n_tokens, mode="sequence", method=None, **options):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # small corpora run out of pairs
        return Tokenizer(None, n_tokens, mode=mode, method=method, **options).fit(corpus)


corpora = st.lists(st.integers(0, 4), min_size=2, max_size=80)


# ============================================================ model: parameters, maps, bytes


def test_mode_and_method_arguments_are_validated():
    assert Tokenizer(4, 8).mode == "classic" and Tokenizer(4, 8).method == "replay"
    assert Tokenizer(4, 8, mode="sequence").method == "bits"
    assert Tokenizer(4, 8, mode="sequence", method="optimal").method == "optimal"
    with pytest.raises(ValueError, match="mode"):
        Tokenizer(4, 8, mode="seq")
    with pytest.raises(TypeError, match="mode"):
        Tokenizer(4, 8, mode=1)
    with pytest.raises(ValueError, match="method"):
        Tokenizer(4, 8, mode="classic", method="bits")  # classic replays
    with pytest.raises(ValueError, match="method"):
        Tokenizer(4, 8, mode="sequence", method="replay")
    with pytest.raises(TypeError, match="method"):
        Tokenizer(4, 8, mode="sequence", method=b"bits")
    with pytest.raises(ValueError, match="method"):
        Model(ubpe.Alphabet(4), np.zeros((0, 2), np.int32)).encode(np.zeros(3, np.int32), method="best")


def test_training_is_the_same_and_the_digest_names_the_mode():
    x = np.arange(600) * 7 % 13 % 6
    classic, seq = fit(x, 20, mode="classic"), fit(x, 20)
    assert np.array_equal(classic.merges, seq.merges) and np.array_equal(classic.token_ids, seq.token_ids)
    assert classic.digest != seq.digest  # the canonical bytes cover the mode
    assert fit(x, 20, method="optimal").digest == seq.digest  # ... not the method
    assert "sequence" in repr(seq) and "sequence" in repr(seq.model)


def test_backward_maps_a_token_to_its_whole_sequence():
    x = [0, 0, 0, 1, 3, 0, 0, 0, 1, 0, 2]
    classic = Tokenizer(4, 7, n_candidates=1).fit(x)
    seq = Tokenizer(4, 7, n_candidates=1, mode="sequence").fit(x)
    assert classic.backward == {4: (0, 0), 5: (0, 1), 6: (4, 5)}  # pairs of public ids
    assert seq.backward == {4: (0, 0), 5: (0, 1), 6: (0, 0, 0, 1)}  # alphabet ids, whole
    assert seq.forward == {(0, 0): 4, (0, 1): 5, (0, 0, 0, 1): 6}
    for t, values in seq.backward.items():
        assert seq.sequence(t).tolist() == list(values)


@given(corpora, st.integers(5, 30), st.sampled_from(["bits", "optimal"]), st.integers(1, 4))
def test_sequence_models_round_trip_through_bytes(corpus, n_tokens, method, n_candidates):
    tok = fit(corpus, n_tokens, method=method, n_candidates=n_candidates, min_count=1)
    data = tok.to_bytes()
    back = Tokenizer.from_bytes(data)
    assert (back.mode, back.method) == ("sequence", method)
    assert back.to_bytes() == data and back == tok and back.digest == tok.digest
    assert back.backward == tok.backward
    assert pickle.loads(pickle.dumps(tok)).to_bytes() == data
    body = unpack_any(unpack_any(data)["body"])
    assert (body["mode"], body["method"]) == ("sequence", method) and list(body)[-2:] == ["mode", "method"]


def test_save_and_load_keep_the_mode(tmp_path):
    tok = fit(np.arange(300) % 17 % 5, 16, method="optimal")
    tok.save(tmp_path / "m.model")
    back = Tokenizer.load(tmp_path / "m.model")
    assert (back.mode, back.method) == ("sequence", "optimal") and back == tok


def test_classic_model_bytes_hold_no_mode_fields():
    # a classic model's body holds exactly its nine fields (no "mode", "method" or "front"); the
    # frozen model files load as they were written and save to the same bytes
    signal = np.cumsum(np.random.default_rng(3).integers(-3, 4, 3000)).astype(np.int16)
    tok = Tokenizer(None, len(np.unique(signal)) + 64, n_candidates=4).fit(signal)
    body = unpack_any(unpack_any(tok.to_bytes())["body"])
    assert list(body) == ["alphabet", "dtype", "params", "n_units", "merges", "batches", "counts", "df",
                          "token_ids"]
    models = sorted(FIXTURES.glob("*.model"))
    assert models
    for path in models:
        loaded = Tokenizer.from_bytes(path.read_bytes())
        assert loaded.to_bytes() == path.read_bytes()
    assert {Tokenizer.from_bytes(p.read_bytes()).mode for p in models} == {"classic", "sequence"}


# ============================================================ encoding and decoding


@given(st.lists(st.integers(0, 5), min_size=0, max_size=200), corpora,
       st.sampled_from([("classic", None), ("sequence", "bits"), ("sequence", "optimal")]))
def test_decode_encode_is_the_identity_in_both_modes(x, corpus, mode_method):
    mode, method = mode_method
    tok = Tokenizer(6, 24, n_candidates=3, min_count=1, mode=mode, method=method)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        tok.fit(corpus + [5])
    tokens = tok.encode(x)
    assert tokens.dtype == np.int32
    assert tok.decode(tokens).tolist() == x
    if mode == "sequence":  # segmentation: never more tokens than replay (optimal) on any input
        replay = tok.model.encode(tok.alphabet.to_ids(x), method="replay")
        if method == "optimal":
            assert len(tokens) <= len(replay)
    assert [t.tolist() for t in tok.encode_batch([x, x[::-1], []])] == [
        tokens.tolist(), tok.encode(x[::-1]).tolist(), []]


def test_sequence_mode_encodes_by_the_recorded_method():
    x = np.tile(np.arange(400) * 7 % 13 % 6, 3)
    seq = fit(x, 40, method="optimal")
    ids = seq.alphabet.to_ids(x)
    assert np.array_equal(seq.model.encode(ids), seq.model.encode(ids, method="optimal"))
    assert np.array_equal(seq.encode(x), seq.token_ids[seq.model.encode(ids, method="optimal")])
    classic = fit(x, 40, mode="classic")
    assert np.array_equal(classic.model.encode(ids), classic.model.encode(ids, method="replay"))


# ============================================================ hostile model bytes


def _sequence_bases():
    return [
        fit([0, 0, 0, 1, 3, 0, 0, 0, 1, 0, 2, 3, 3, 1, 0, 0, 1], 7, n_candidates=1),
        fit(np.array([1000, 2000, 3000, 1000, 2000] * 4), 8, n_candidates=2, min_count=1, method="optimal"),
        fit("abracadabra abracadabra", 8, n_candidates=2, min_count=1),
        fit((np.arange(300) % 50).astype(">i4"), 60),
    ]


def _mutate(rng, fields):
    from test_model_fuzz import ODD, Mutator

    f = copy.deepcopy(fields)
    r = int(rng.integers(4))
    if r == 0:  # the mode fields themselves
        key = ["mode", "method"][int(rng.integers(2))]
        choice = int(rng.integers(4))
        if choice == 0:
            f.pop(key)
        elif choice == 1:
            f[key] = ["classic", "sequence", "replay", "bits", "optimal", "Sequence", ""][int(rng.integers(7))]
        else:
            f[key] = ODD[int(rng.integers(len(ODD)))]
        return f
    mutator = Mutator(int(rng.integers(2**32)))
    return {**mutator.fields(f), **({} if r == 1 else {k: f[k] for k in ("mode", "method") if k in f})}


def test_hostile_sequence_mode_bytes_fail_only_with_library_errors():
    rng = np.random.default_rng(20261123)
    bases = [unpack_any(unpack_any(t.to_bytes())["body"]) for t in _sequence_bases()]
    accepted = refused = 0
    for i in range(MUTANTS):
        data = pack(_mutate(rng, bases[i % len(bases)]))
        try:
            tok = Tokenizer.from_bytes(data)
        except (ubpe.CorruptDataError, ubpe.FormatVersionError):
            refused += 1
            continue
        accepted += 1
        values = tok.decode(np.arange(min(tok.vocab_size, 12)))
        again = tok.decode(tok.encode(values))
        assert again.tolist() == values.tolist() if values.dtype == object else np.array_equal(again, values)
        assert Tokenizer.from_bytes(tok.to_bytes()).to_bytes() == tok.to_bytes()
    assert accepted > MUTANTS // 30 and refused > MUTANTS // 4


@pytest.mark.parametrize("change, message", [
    ({"mode": "classic"}, "mode"),
    ({"mode": "sequence", "method": "replay"}, "method"),
    ({"mode": "sequence", "method": 3}, "str"),
    ({"mode": ["sequence"], "method": "bits"}, "str"),
    ({"method": "bits"}, "together"),
    ({"mode": "sequence"}, "together"),
])
def test_invalid_mode_fields_are_refused(change, message):
    data = Tokenizer(4, 7, n_candidates=1).fit([0, 0, 0, 1, 3, 0, 0, 0, 1]).to_bytes()
    fields = unpack_any(unpack_any(data)["body"])
    fields.update(change)
    with pytest.raises(ubpe.CorruptDataError, match=message):
        Tokenizer.from_bytes(pack(fields))


# ============================================================ compress


def _signal(n=6000, seed=1):
    rng = np.random.default_rng(seed)
    t = np.arange(n)
    return (np.round(200 * np.sin(t / 29.0) + rng.normal(0, 6, n))).astype(np.int16)


@pytest.mark.parametrize("method", ["bits", "optimal"])
@pytest.mark.parametrize("embed", [True, False])
def test_compress_with_a_sequence_model(method, embed):
    x = _signal()
    d = np.diff(x, prepend=0).astype(np.int16)
    tok = fit(d, 200, method=method)
    data = compress(x, tokenizer=tok, embed=embed, delta=1, level=1)
    # the model's method, or its merges left unused when the bare values code smaller
    assert describe(data).method in (method, "bare")
    out = decompress(data, tokenizer=None if embed else tok)
    assert np.array_equal(out, x) and out.dtype == x.dtype
    classic = compress(x, tokenizer=fit(d, 200, mode="classic"), embed=embed, delta=1, level=1)
    assert describe(classic).method in ("replay", "bare") and "method" not in unpack_any(classic)
    if embed:  # the same merges, only the token stream differs
        assert unpack_any(data)["model"] == unpack_any(classic)["model"]


def _replay_only(x, **options):
    with planner_settings.configured(encode_methods=("replay",)):
        return compress(x, **options)


def _text(n_words=2000, seed=5):
    """Words of 1 to 3 syllables, Zipf-distributed: text whose replay stream "bits" shortens."""
    rng = np.random.default_rng(seed)
    syllables = ["an", "re", "to", "the", "in", "er", "on", "st", "ing", "a", "e", "o", "s", "t", "ed"]
    words = np.array(["".join(rng.choice(syllables, rng.integers(1, 4))) for _ in range(300)])
    p = 1 / np.arange(1, 301)
    return np.frombuffer(" ".join(words[rng.choice(300, n_words, p=p / p.sum())]).encode(), np.uint8)


@settings(max_examples=min(MAX_EXAMPLES, 12))
@given(st.integers(0, 2**32 - 1), st.integers(200, 2000), st.sampled_from([1, 2]), st.booleans())
def test_compress_never_picks_a_method_larger_than_replay(seed, n, level, fixed_size):
    rng = np.random.default_rng(seed)
    x = _text(n // 8, seed) if seed % 2 else np.cumsum(rng.integers(-3, 4, n)).astype(np.int16) // 2 * 2
    options = dict(level=level, n_tokens=len(np.unique(x)) + 40) if fixed_size else dict(level=level)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # a fixed size may exceed what training finds
        data = compress(x, **options)
        replay = _replay_only(x, **options)
    assert len(data) <= len(replay)
    info = describe(data)
    assert (info.method == "replay") == (data == replay)
    assert np.array_equal(decompress(data), x)


def test_compress_reports_a_segmenting_method_when_it_wins():
    # text, whose replay stream the fewest-bits segmentation shortens: the method is written,
    # reported, and the container is smaller than replay's
    x = _text()
    data, replay = compress(x, level=1), _replay_only(x, level=1)
    info = describe(data)
    assert info.method == "bits" == unpack_any(data)["method"] and info.n_merges > 0
    assert len(data) < len(replay)
    assert np.array_equal(decompress(data), x)


@pytest.mark.parametrize("value, message", [("replay", "method"), ("BITS", "method"), (1, "method"),
                                            (None, "method")])
def test_container_method_field_is_validated(value, message):
    fields = unpack_any(_replay_only(_text(), level=1))
    assert fields["model"]["m"] > 0
    fields["method"] = value
    with pytest.raises(ubpe.CorruptDataError, match=message):
        decompress(pack_any(fields, use_bin_type=True))


def test_container_method_needs_merges_and_is_only_informational():
    x = _text()
    fields = unpack_any(_replay_only(x, level=1))
    fields["method"] = "optimal"  # informational: a replay stream still decodes
    data = pack_any(fields, use_bin_type=True)
    assert np.array_equal(decompress(data), x) and describe(data).method == "optimal"
    bare = unpack_any(compress(np.arange(50, dtype=np.int16) % 3, n_tokens=3, level=1))
    assert bare["model"]["m"] == 0
    bare["method"] = "bits"
    with pytest.raises(ubpe.CorruptDataError, match="merges"):
        decompress(pack_any(bare, use_bin_type=True))


def test_token_counts_are_the_training_streams_histogram():
    # with n_candidates=1 and nothing trimmed, replay on the corpus reproduces training: the
    # counts "bits" prices merged tokens by are that stream's histogram
    x = np.tile(np.arange(500) * 7 % 13 % 6, 4)
    tok = Tokenizer(None, 25, n_candidates=1, mode="sequence").fit(x)
    model, a = tok.model, len(tok.alphabet)
    stream = model.encode(tok.alphabet.to_ids(x), method="replay")
    hist = np.bincount(stream, minlength=model.vocab_size)
    assert np.array_equal(model.token_counts()[a:], hist[a:]) and not model.token_counts()[:a].any()
    assert not Model(tok.alphabet, tok.merges).token_counts().any()  # no statistics: all floors
