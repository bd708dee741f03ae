"""ubpe.text.TextTokenizer: byte-level BPE for text (specification: docs/text.md).

- any str round-trips exactly (lone surrogates with ``errors="surrogatepass"``), or as its
  normalised form when ``normalize`` is set;
- no token crosses a piece of the split pattern, and special tokens are never merged, refused
  in ordinary text unless allowed (tiktoken's rules);
- word-frequency training is training on every occurrence of every piece as its own document;
- with ``n_candidates=1`` and no pattern the merges are classic BPE (a pure-Python reference);
- the Hugging Face and tiktoken exports encode to the same ids.
"""

from __future__ import annotations

import base64
import pickle
import unicodedata

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import ubpe
from common import pack_any
from ubpe import Alphabet, Tokenizer
from ubpe.text import PATTERNS, TextTokenizer, bytes_to_unicode

EOT = "<|endoftext|>"
FIM = "<|fim|>"

# A small corpus of its own (the tests must not need the shared data): prose, code, numbers,
# whitespace runs, several scripts, combining marks, emoji with joiners, NUL.
CORPUS = (
    "The quick brown fox jumps over the lazy dog. It's 2024; we'll see what they've done!\n"
    "def f(x):\n    return x ** 2  # square\n\n\n"
    "Zwölf Boxkämpfer jagen Viktor quer über den großen Sylter Deich. "
    "Съешь же ещё этих мягких французских булок. 我能吞下玻璃而不伤身体。 "
    "e\u0301te\u0301 cafe\u0301 — naïve résumé 👩‍👩‍👧 👍🏽 \x00 tab\there  12345678 3.14159\r\n"
) * 8


def fit(n_tokens=400, corpus=CORPUS, **kwargs) -> TextTokenizer:
    return TextTokenizer(n_tokens, **kwargs).fit(corpus)


@pytest.fixture(scope="module")
def tok():
    return fit(special_tokens=[EOT, FIM])


@pytest.fixture(scope="module")
def taylor(shared_data):
    return (shared_data / "text" / "taylorswift.txt").read_text(encoding="utf-8")


# every code point, lone surrogates often (hypothesis draws them rarely by itself)
any_text = st.text(alphabet=st.one_of(st.characters(codec=None, categories=None),
                                      st.integers(0xD800, 0xDFFF).map(chr)), max_size=200)
no_surrogates = st.text(max_size=200)
mixed_text = st.lists(st.sampled_from(["the", " ", "é", "e\u0301", "\x00", "👩‍👧", "\n", "'s", "12", "Σ", "\ud800",
                                       "\udfff", "...", "  ", "ﬁ"]), max_size=40).map("".join)


# ==================== round trips


@given(text=st.one_of(any_text, mixed_text))
def test_any_str_round_trips_with_surrogatepass(tok, text):
    ids = tok.encode(text)
    assert ids.dtype == np.int32 and ids.ndim == 1
    assert tok.decode(ids, errors="surrogatepass") == text
    assert tok.decode_bytes(ids) == text.encode("utf-8", "surrogatepass")


@given(text=no_surrogates)
def test_str_without_lone_surrogates_round_trips_with_the_default_errors(tok, text):
    assert tok.decode(tok.encode(text)) == text


def test_lone_surrogates_decode_as_replacement_characters_by_default(tok):
    ids = tok.encode("a\ud800b")
    assert tok.decode(ids) == "a\ufffd\ufffd\ufffdb"  # its 3 bytes are not UTF-8: one U+FFFD each
    with pytest.raises(UnicodeDecodeError):
        tok.decode(ids, errors="strict")


@pytest.mark.parametrize("text", ["", "\x00", "\x00\x00\x00", "e\u0301", "👩‍👩‍👧", " " * 50, "\r\n\r\n", EOT[:-1]])
def test_edge_texts_round_trip(tok, text):
    assert tok.decode(tok.encode(text)) == text


@pytest.mark.parametrize("form", ["NFC", "NFD", "NFKC", "NFKD"])
@given(text=st.one_of(mixed_text, no_surrogates))
def test_normalised_tokenizers_decode_to_the_normalised_text(form, text):
    t = NORMALISED[form]
    assert t.decode(t.encode(text), errors="surrogatepass") == unicodedata.normalize(form, text)


NORMALISED = {form: fit(300, normalize=form) for form in ("NFC", "NFD", "NFKC", "NFKD")}


def test_normalisation_merges_the_two_spellings_of_e_acute():
    t = NORMALISED["NFC"]
    assert t.encode("e\u0301te\u0301").tolist() == t.encode("\u00e9t\u00e9").tolist()
    assert fit(300).encode("e\u0301").tolist() != fit(300).encode("\u00e9").tolist()


def test_encode_batch_equals_encode(tok):
    texts = ["", "the fox", CORPUS[:500], "the fox", f"a{EOT}b"]
    got = tok.encode_batch(texts, allowed_special="all")
    assert [g.tolist() for g in got] == [tok.encode(t, allowed_special="all").tolist() for t in texts]


def test_training_compresses(tok):
    ids = tok.encode(CORPUS)
    assert tok.vocab_size == 402 and tok.n_bpe == 400
    assert len(ids) < len(CORPUS.encode()) / 2  # at least two bytes per token on its own corpus


# ==================== pieces


@pytest.mark.parametrize("pattern", ["gpt2", "gpt4", r"\d+|\w+"])
@given(text=st.one_of(any_text, mixed_text))
def test_pieces_cover_the_text(pattern, text):
    assert "".join(TextTokenizer(256, pattern=pattern).pieces(text)) == text


def test_gpt4_pattern_pieces():
    t = TextTokenizer(256)
    assert t.pieces("Hello world's 12345 !!!\n\n  x") == ["Hello", " world", "'s", " ", "123", "45", " !!!\n\n", " ", " x"]
    assert TextTokenizer(256, pattern="gpt2").pieces("Hello world's 12345") == ["Hello", " world", "'s", " 12345"]
    assert TextTokenizer(256, pattern=None).pieces("Hello world") == ["Hello world"]
    assert TextTokenizer(256, pattern=r"\d+").pieces("ab12cd") == ["ab", "12", "cd"]  # gaps are pieces


@pytest.mark.parametrize("pattern", ["gpt2", "gpt4"])
def test_no_token_crosses_a_piece(pattern):
    t = fit(500, pattern=pattern)
    text = CORPUS[:2000] + " hello  world's 2024!!"
    pieces = t.pieces(text)
    # encoding the text is encoding each piece on its own...
    assert t.encode(text).tolist() == [i for p in pieces for i in t.encode(p).tolist()]
    # ...and every merged token lies inside one piece of the training text
    trained = {p.encode("utf-8") for p in t.pieces(CORPUS)}
    for i in range(256, t.n_bpe):
        assert any(t.token_bytes(i) in p for p in trained), t.token_bytes(i)


def test_without_a_pattern_tokens_cross_words():
    t = fit(400, pattern=None)
    assert any(b" " in t.token_bytes(i).strip(b" ") for i in range(256, t.n_bpe))


# ==================== special tokens


def test_special_tokens_are_refused_in_ordinary_text(tok):
    with pytest.raises(ValueError, match=r"special token '<\|endoftext\|>'.*allowed_special"):
        tok.encode(f"hello{EOT}")
    with pytest.raises(ValueError, match="fim"):
        tok.encode(f"hello{FIM}", allowed_special={EOT})


def test_allowed_special_tokens_get_their_ids(tok):
    eot, fim = tok.special_ids[EOT], tok.special_ids[FIM]
    assert (eot, fim) == (400, 401)
    ids = tok.encode(f"a{EOT}{FIM}b{EOT}", allowed_special="all").tolist()
    assert ids == tok.encode("a").tolist() + [eot, fim] + tok.encode("b").tolist() + [eot]
    assert tok.encode(f"x{EOT}", allowed_special={EOT}).tolist()[-1] == eot
    assert tok.decode(ids) == f"a{EOT}{FIM}b{EOT}"


def test_disallowed_special_can_encode_them_as_text(tok):
    ids = tok.encode(f"a{EOT}", disallowed_special=())
    assert all(i < tok.n_bpe for i in ids.tolist()) and tok.decode(ids) == f"a{EOT}"
    ids = tok.encode(f"{EOT}{FIM}", allowed_special={FIM}, disallowed_special=()).tolist()
    assert ids[-1] == tok.special_ids[FIM] and tok.special_ids[EOT] not in ids


def test_special_tokens_are_never_learnt():
    corpus = (f"{CORPUS[:300]}{EOT}" * 200) + f"{EOT}{EOT}{EOT}"
    t = TextTokenizer(400, special_tokens=[EOT], pattern=None).fit(corpus)
    assert all(b"<|" not in t.token_bytes(i) and b"|>" not in t.token_bytes(i) for i in range(256, t.n_bpe))
    assert t.encode(corpus, allowed_special="all").tolist().count(t.special_ids[EOT]) == 203


def test_longest_special_token_wins():
    t = TextTokenizer(256, special_tokens=["<a>", "<a>>"]).fit("xx yy")
    assert t.encode("<a>>", allowed_special="all").tolist() == [t.special_ids["<a>>"]]


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        (dict(allowed_special="some"), ValueError, "allowed_special"),
        (dict(allowed_special={"<|nope|>"}), ValueError, "not special tokens"),
        (dict(allowed_special=3), TypeError, "allowed_special"),
        (dict(disallowed_special="none"), ValueError, "disallowed_special"),
        (dict(disallowed_special={"<|nope|>"}), ValueError, "not special tokens"),
    ],
)
def test_bad_special_arguments_raise(tok, kwargs, error, match):
    with pytest.raises(error, match=match):
        tok.encode("x", **kwargs)


# ==================== word-frequency training


@pytest.mark.parametrize("n_candidates", [1, 50])
@pytest.mark.parametrize("pattern", ["gpt4", None])
def test_word_frequency_training_equals_training_on_every_piece(n_candidates, pattern):
    texts = [CORPUS, "the the the the fox", CORPUS[:300], "the the the the fox", CORPUS[:300]]
    t = TextTokenizer(450, pattern=pattern, n_candidates=n_candidates).fit(texts)
    # the full stream: every occurrence of every piece its own document, none collapsed
    pieces = [p for text in texts for p in t.pieces(text)]
    assert len(pieces) > len(set(pieces))  # so the word-frequency path really collapsed some
    chunks = [p.encode("utf-8") for p in pieces]
    ids = np.frombuffer(b"".join(chunks), dtype=np.uint8).astype(np.int32)
    offsets = np.concatenate(([0], np.cumsum([len(c) for c in chunks]))).astype(np.int64)
    full = Tokenizer(Alphabet(256), 450, n_candidates=n_candidates)
    full._fit_ids(ids, offsets, Alphabet(256), np.dtype(np.uint8), token_ids="priority")
    assert full.n_units == len(pieces) == t.tokenizer.n_units
    assert t.tokenizer.to_bytes() == full.to_bytes()


# ==================== classic BPE on a real text


def reference_bpe(data: bytes, n_merges: int) -> list[tuple[int, int]]:
    """Classic BPE: count adjacent pairs (overlapping), merge the most frequent (ties: the
    smallest (left, right)) left to right without overlap; repeat. Each id is one character
    (``chr(id)``) of a string, so that ``str.replace`` makes the merge: left to right, without
    overlap."""
    text = "".join(map(chr, data))
    merges = []
    for k in range(n_merges):
        ids = np.frombuffer(text.encode("utf-32-le"), dtype="<u4").astype(np.int64)
        pairs, counts = np.unique(ids[:-1] << 32 | ids[1:], return_counts=True)  # (left, right), sorted
        left, right = divmod(int(pairs[counts == counts.max()][0]), 1 << 32)
        text = text.replace(chr(left) + chr(right), chr(256 + k))
        merges.append((left, right))
    return merges


def test_reference_bpe_on_wikipedias_example():
    a, b, c, d = b"abcd"
    assert reference_bpe(b"aaabdaaabac", 3) == [(a, a), (a, b), (256, 257)]


def test_first_64_merges_are_classic_bpe_on_taylorswift(taylor):
    t = TextTokenizer(256 + 64, pattern=None, n_candidates=1).fit(taylor)
    want = reference_bpe(taylor.encode("utf-8"), 64)
    assert [tuple(m) for m in t.tokenizer.merges.tolist()] == want
    assert t.tokenizer.merges[0].tolist() == [101, 32]  # "e ": the most frequent pair of this text


# ==================== serialization


def test_save_load_is_exact_and_deterministic(tok, tmp_path):
    tok.save(tmp_path / "a.ubpe")
    back = TextTokenizer.load(tmp_path / "a.ubpe")
    assert back == tok and back.to_bytes() == tok.to_bytes() == fit(special_tokens=[EOT, FIM]).to_bytes()
    assert back.special_tokens == (EOT, FIM) and back.pattern == PATTERNS["gpt4"]
    assert back.encode(CORPUS, allowed_special="all").tolist() == tok.encode(CORPUS, allowed_special="all").tolist()
    assert pickle.loads(pickle.dumps(tok)) == tok


def test_normalisation_and_pattern_are_saved():
    t = fit(300, normalize="NFKC", pattern=r"\w+")
    back = TextTokenizer.from_bytes(t.to_bytes(), trust_pattern=True)  # a pattern of one's own: trusted
    assert (back.normalize, back.pattern) == ("NFKC", r"\w+")
    assert back.decode(back.encode("ﬁne")) == "fine"


def test_corrupt_bytes_raise_corrupt_data_error(tok):
    data = tok.to_bytes()
    for k in range(0, len(data), max(1, len(data) // 50)):
        with pytest.raises(ubpe.CorruptDataError):
            TextTokenizer.from_bytes(data[:k])
    damaged = bytearray(data)
    damaged[len(data) // 2] ^= 0xFF
    with pytest.raises(ubpe.CorruptDataError):
        TextTokenizer.from_bytes(bytes(damaged))
    with pytest.raises(ubpe.CorruptDataError, match="magic"):
        TextTokenizer.from_bytes(tok.tokenizer.to_bytes())  # a plain model is not a text tokenizer


# ==================== errors


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        (dict(n_tokens=255), ValueError, "n_tokens"),
        (dict(n_tokens=300.0), TypeError, "n_tokens"),
        (dict(pattern=3), TypeError, "pattern"),
        (dict(pattern="("), ValueError, "pattern"),
        (dict(pattern=""), ValueError, "pattern"),
        (dict(normalize="nfc"), ValueError, "normalize"),
        (dict(special_tokens=EOT), TypeError, "special_tokens"),
        (dict(special_tokens=[EOT, EOT]), ValueError, "distinct"),
        (dict(special_tokens=[""]), ValueError, "empty"),
        (dict(special_tokens=[b"x"]), TypeError, "str"),
        (dict(n_candidates=0), ValueError, "n_candidates"),
    ],
)
def test_bad_constructor_arguments_raise(kwargs, error, match):
    args = dict(n_tokens=300) | kwargs
    with pytest.raises(error, match=match):
        TextTokenizer(args.pop("n_tokens"), **args)


def test_bad_call_arguments_raise(tok):
    with pytest.raises(ubpe.NotFittedError):
        TextTokenizer(300).encode("x")
    with pytest.raises(TypeError, match="bytes"):
        TextTokenizer(300).fit(b"abc")
    with pytest.raises(TypeError, match=r"texts\[1\]"):
        TextTokenizer(300).fit(["a", 1])
    with pytest.raises(ValueError, match="no text"):
        TextTokenizer(300, special_tokens=[EOT]).fit([EOT, ""])
    with pytest.raises(TypeError, match="str"):
        tok.encode(b"abc")
    with pytest.raises(TypeError, match="encode"):
        tok.encode_batch("abc")
    with pytest.raises(ValueError, match="out of range"):
        tok.decode([0, tok.vocab_size])
    with pytest.raises(TypeError, match="integers"):
        tok.decode([1.5])
    with pytest.raises(TypeError, match="errors"):
        tok.decode([1], errors=None)


# ==================== interoperability


def test_gpt2_byte_spelling():
    spell = bytes_to_unicode()
    assert len(set(spell.values())) == 256
    assert spell[ord(" ")] == "Ġ" and spell[ord("\n")] == "Ċ" and spell[ord("a")] == "a"


def test_duplicate_token_bytes_cannot_be_exported():
    t = fit(300)
    # ((a, b), c) and (a, (b, c)) are distinct tokens with the same bytes
    merges = np.array([[97, 98], [98, 99], [256, 99], [97, 257]], dtype=np.int32)
    from ubpe.text import _byte_tokenizer

    t._set_tokenizer(_byte_tokenizer(merges, 260, 1, 2))
    with pytest.raises(ValueError, match="cannot be exported"):
        t.tiktoken_ranks()


def corpus_texts(shared_data_text: str | None) -> list[str]:
    texts = [CORPUS, "ﬁne café\r\n\r\n  x   y\t\tz 1234567 it's WE'LL 👍🏽", "e\u0301\u0301\u0301"]
    return texts + ([shared_data_text] if shared_data_text else [])


@pytest.fixture(scope="module")
def parity_corpus(request):
    """The shared Taylor Swift text when present (plus the small corpus), else the small corpus."""
    try:
        text = request.getfixturevalue("taylor")
    except pytest.skip.Exception:
        text = None
    return text


CONFIGS = [
    dict(pattern="gpt4"),
    dict(pattern="gpt2"),
    dict(pattern=None),
    dict(pattern="gpt4", n_candidates=1),
    dict(pattern="gpt4", normalize="NFC"),
]


@pytest.mark.parametrize("config", CONFIGS, ids=lambda c: "-".join(f"{v}" for v in c.values()))
def test_hugging_face_export_encodes_to_the_same_ids(config, parity_corpus, tmp_path):
    tokenizers = pytest.importorskip("tokenizers", reason="Hugging Face tokenizers is not installed")
    train = parity_corpus or CORPUS
    t = TextTokenizer(1000 if parity_corpus else 400, special_tokens=[EOT, FIM], **config).fit(train)
    t.export_hf(tmp_path / "tokenizer.json")
    hf = tokenizers.Tokenizer.from_file(str(tmp_path / "tokenizer.json"))
    for text in corpus_texts(parity_corpus) + [f"one{EOT}two{FIM}"]:
        assert hf.encode(text).ids == t.encode(text, allowed_special="all").tolist()
    ids = t.encode(CORPUS).tolist()
    assert hf.decode(ids) == t.decode(ids)
    # and back: the file reads into a tokenizer that encodes the same
    back = TextTokenizer.import_hf(tmp_path / "tokenizer.json")
    assert back.special_ids == t.special_ids and back.normalize == t.normalize and back.pattern == t.pattern
    assert np.array_equal(back.tokenizer.merges, t.tokenizer.merges)
    assert back.encode(train[:5000]).tolist() == t.encode(train[:5000]).tolist()


@pytest.mark.parametrize("config", [c for c in CONFIGS if "normalize" not in c],
                         ids=lambda c: "-".join(f"{v}" for v in c.values()))
def test_tiktoken_export_encodes_to_the_same_ids(config, parity_corpus, tmp_path):
    tiktoken = pytest.importorskip("tiktoken", reason="tiktoken is not installed")
    train = parity_corpus or CORPUS
    t = TextTokenizer(1000 if parity_corpus else 400, special_tokens=[EOT, FIM], **config).fit(train)
    t.export_tiktoken(tmp_path / "ranks.tiktoken")
    lines = (tmp_path / "ranks.tiktoken").read_text().splitlines()
    ranks = {base64.b64decode(tok): int(rank) for tok, rank in (line.split() for line in lines)}
    assert ranks == t.tiktoken_ranks() and len(ranks) == t.n_bpe
    enc = tiktoken.Encoding("ubpe-test", pat_str=t.pattern or r"[\s\S]+", mergeable_ranks=ranks,
                            special_tokens=t.special_ids)
    for text in corpus_texts(parity_corpus):
        assert enc.encode(text) == t.encode(text).tolist()
    text = f"one{EOT}two{FIM}"
    assert enc.encode(text, allowed_special="all") == t.encode(text, allowed_special="all").tolist()
    with pytest.raises(ValueError):
        enc.encode(text)  # tiktoken refuses them too
    assert enc.decode(t.encode(CORPUS).tolist()) == CORPUS


# (docs/text.md's examples run in tests/test_docs.py::test_doc_page_examples_run)


def edited_export(tmp_path, edit):
    import json

    t = fit(300, special_tokens=[EOT])
    t.export_hf(tmp_path / "t.json")
    d = json.loads((tmp_path / "t.json").read_text(encoding="utf-8"))
    edit(d)
    (tmp_path / "e.json").write_text(json.dumps(d), encoding="utf-8")
    return t, tmp_path / "e.json"


def test_import_hf_reads_byte_level_without_split_as_gpt2(tmp_path):
    def byte_level_regex(d):
        d["pre_tokenizer"] = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True}

    _, path = edited_export(tmp_path, byte_level_regex)
    assert TextTokenizer.import_hf(path).pattern == PATTERNS["gpt2"]


def _set(path, value):
    def edit(d):
        obj = d
        for key in path[:-1]:
            obj = obj[key]
        obj[path[-1]] = value
    return edit


@pytest.mark.parametrize(
    "edit, error, match",
    [
        (_set(["normalizer"], {"type": "Lowercase"}), ValueError, "normalizer"),
        (_set(["model", "ignore_merges"], True), ValueError, "ignore_merges"),
        (_set(["model", "dropout"], 0.1), ValueError, "dropout"),
        (_set(["model", "type"], "WordPiece"), ValueError, "BPE"),
        (_set(["post_processor"], {"type": "ByteLevel"}), ValueError, "post-processor"),
        (_set(["pre_tokenizer", "pretokenizers", 1, "add_prefix_space"], True), ValueError, "add_prefix_space"),
        (_set(["pre_tokenizer", "pretokenizers", 0, "behavior"], "Removed"), ValueError, "Isolated"),
        (_set(["pre_tokenizer"], {"type": "Whitespace"}), ValueError, "Whitespace"),
        (lambda d: d["model"]["vocab"].update({"!": 1, '"': 0}), ValueError, "byte order"),
        (lambda d: d["model"]["merges"].reverse(), ValueError, "merge 0"),
        (lambda d: d["added_tokens"][0].update(id=5000), ValueError, "added tokens"),
        (lambda d: d.pop("model"), ubpe.CorruptDataError, "expected shape"),
    ],
)
def test_import_hf_refuses_what_it_cannot_reproduce(tmp_path, edit, error, match):
    _, path = edited_export(tmp_path, edit)
    with pytest.raises(error, match=match):
        TextTokenizer.import_hf(path)


def test_import_hf_refuses_what_is_not_json(tmp_path):
    (tmp_path / "x.json").write_bytes(b"\xff{")
    with pytest.raises(ubpe.CorruptDataError, match="JSON"):
        TextTokenizer.import_hf(tmp_path / "x.json")


@pytest.fixture(scope="module", params=["gpt4", "gpt2"])
def exported(request, tmp_path_factory):
    """A tokenizer on the small corpus and its Hugging Face and tiktoken twins."""
    tokenizers = pytest.importorskip("tokenizers", reason="Hugging Face tokenizers is not installed")
    tiktoken = pytest.importorskip("tiktoken", reason="tiktoken is not installed")
    t = TextTokenizer(400, pattern=request.param, special_tokens=[EOT]).fit(CORPUS)
    path = tmp_path_factory.mktemp("hf") / "tokenizer.json"
    t.export_hf(path)
    enc = tiktoken.Encoding("ubpe-test", pat_str=t.pattern, mergeable_ranks=t.tiktoken_ranks(),
                            special_tokens=t.special_ids)
    return t, tokenizers.Tokenizer.from_file(str(path)), enc


@given(text=st.one_of(no_surrogates, mixed_text.map(lambda s: s.replace("\ud800", "").replace("\udfff", ""))))
def test_exports_encode_any_text_to_the_same_ids(exported, text):
    """Any str without lone surrogates (which neither peer takes as they are): same ids."""
    t, hf, enc = exported
    ours = t.encode(text, disallowed_special=()).tolist()
    assert enc.encode(text, disallowed_special=()) == ours
    if EOT not in text:  # Hugging Face always treats added tokens as special
        assert hf.encode(text).ids == ours


@given(text=st.one_of(no_surrogates, mixed_text.map(lambda s: s.replace("\ud800", "").replace("\udfff", "")),
                      st.sampled_from(["", " ", "a", "\n", EOT, f"x {EOT} y", "<|endof", "é👍"])))
def test_the_default_encode_matches_the_exports(exported, text):
    """The default call (every special token refused; ubpe's one compiled call once the engine
    exists) gives tiktoken's ``encode`` and Hugging Face's ids, and refuses what tiktoken
    refuses."""
    t, hf, enc = exported
    t.encode("warm")  # builds the engine: the calls below take the one-call path
    if EOT in text:
        with pytest.raises(ValueError, match="special token"):
            t.encode(text)
        with pytest.raises(ValueError):
            enc.encode(text)
        return
    ours = t.encode(text)
    assert ours.dtype == np.int32 and ours.ndim == 1
    assert enc.encode(text) == ours.tolist() and hf.encode(text).ids == ours.tolist()


@given(
    corpus=st.lists(st.text(alphabet="aab c\n", min_size=1, max_size=60), min_size=1, max_size=6),
    probes=st.lists(st.text(alphabet="aabc \n", max_size=80), max_size=10),
    extra=st.integers(1, 60),
    n_candidates=st.sampled_from([1, 2, 3, 50]),
    min_count=st.sampled_from([1, 2]),
    pattern=st.sampled_from([None, "gpt4"]),
)
def test_exports_match_on_small_random_vocabularies(tmp_path_factory, corpus, probes, extra, n_candidates,
                                                    min_count, pattern):
    """Tiny alphabets make long merge chains, overlapping runs (aaaa), batches and a trimmed last
    batch: the pair rule (ubpe, Hugging Face) and tiktoken's rule by bytes still agree."""
    import warnings

    tokenizers = pytest.importorskip("tokenizers", reason="Hugging Face tokenizers is not installed")
    tiktoken = pytest.importorskip("tiktoken", reason="tiktoken is not installed")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        t = TextTokenizer(256 + extra, pattern=pattern, n_candidates=n_candidates, min_count=min_count).fit(corpus)
    enc = tiktoken.Encoding("ubpe-test", pat_str=t.pattern or r"[\s\S]+", mergeable_ranks=t.tiktoken_ranks(),
                            special_tokens={})
    path = tmp_path_factory.mktemp("hf") / "tokenizer.json"
    t.export_hf(path)
    hf = tokenizers.Tokenizer.from_file(str(path))
    for text in corpus + probes:
        ours = t.encode(text).tolist()
        assert enc.encode(text) == ours and hf.encode(text).ids == ours


def test_patterns_with_groups_still_give_whole_pieces():
    assert TextTokenizer(256, pattern=r"(\d)+|([a-z])+").pieces("ab12 cd") == ["ab", "12", " ", "cd"]


def _text_bytes(body: dict, version: int = 1) -> bytes:
    import hashlib


    raw = pack_any(body, use_bin_type=True)
    return pack_any({"magic": "ubpe.text", "version": version, "body": raw,
                          "sha256": hashlib.sha256(raw).digest()}, use_bin_type=True)


def test_inconsistent_fields_raise_corrupt_data_error(tok):
    good = dict(pattern=tok.pattern, normalize=None, special_tokens=[EOT], tokenizer=tok.tokenizer.to_bytes())
    assert TextTokenizer.from_bytes(_text_bytes(good)).special_tokens == (EOT,)
    plain = Tokenizer(256, 300).fit(CORPUS.encode())  # public ids by idf, not merge order
    with pytest.raises(ubpe.text.UntrustedPatternError, match="trust_pattern"):
        TextTokenizer.from_bytes(_text_bytes(dict(good, pattern="(")))
    with pytest.raises(ubpe.CorruptDataError, match="pattern"):
        TextTokenizer.from_bytes(_text_bytes(dict(good, pattern="(")), trust_pattern=True)
    for key, bad, match in [("pattern", 5, "pattern"), ("normalize", "nfc", "normalize"),
                            ("special_tokens", EOT, "list"), ("special_tokens", [EOT, EOT], "distinct"),
                            ("tokenizer", b"junk", "tokenizer"), ("tokenizer", plain.to_bytes(), "merge order"),
                            ("tokenizer", Tokenizer(4, 6).fit([0, 1, 0, 1, 2, 3, 2, 3]).to_bytes(), "256 bytes")]:
        with pytest.raises(ubpe.CorruptDataError, match=match):
            TextTokenizer.from_bytes(_text_bytes(dict(good, **{key: bad})))
    with pytest.raises(ubpe.CorruptDataError):
        TextTokenizer.from_bytes(_text_bytes(dict(good, extra=1)))
    with pytest.raises(ubpe.FormatVersionError):
        TextTokenizer.from_bytes(_text_bytes(good, version=2))
