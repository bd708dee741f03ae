"""TextTokenizer encoding as language-model training uses it (docs/text.md):

- the compiled GPT-2 / GPT-4 split equals the ``regex`` module's, and encode equals the tokenizer
  core replaying the merges on each regex piece;
- offsets (characters or bytes) tile the text, multi-byte characters split across tokens
  included (a character belongs to the token holding its last byte);
- streaming decode yields, per id, exactly the text that id completes;
- encode_batch (lists or flat arrays, any number of threads) equals encode of each text;
- BPE-dropout: p=0 is encode, a seed fixes the ids, any dropout encoding decodes to the text;
- max_token_length caps the tokens training makes; bytes outside the training text fall back
  to byte tokens;
- a tokenizer file's pattern and special tokens are bounded (a file is code).
"""

from __future__ import annotations

import multiprocessing
import threading
import time

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import ubpe
from ubpe.text_engine import run_threads
from ubpe.text import MAX_SPECIAL_BYTES, MAX_SPECIAL_LENGTH, MAX_SPECIAL_TOKENS, EncodedBatch, TextTokenizer

EOT = "<|endoftext|>"
FIM = "<|fim|>"
CORPUS = (
    "The quick brown fox jumps over the lazy dog. It's 2024; we'll see what they've done!\n"
    "def f(x):\n    return x ** 2  # square\n\n\n"
    "Zwölf Boxkämpfer jagen Viktor quer über den großen Sylter Deich. "
    "Съешь же ещё этих мягких французских булок. 我能吞下玻璃而不伤身体。 "
    "e\u0301te\u0301 cafe\u0301 — naïve résumé 👩‍👩‍👧 👍🏽 \x00 tab\there  12345678 3.14159\r\n"
) * 8

any_text = st.text(alphabet=st.one_of(st.characters(codec=None, categories=None),
                                      st.integers(0xD800, 0xDFFF).map(chr)), max_size=120)
# the characters the split patterns treat specially, so that every alternative is reached
tricky = st.lists(st.sampled_from(["a", "Z", "é", "'", "s", "S", "ll", "LL", "ve", "RE", "ſ", "1", "٣", "123456",
                                   " ", "  ", "\n", "\r\n", "\t", "\u00a0", "\u2028", "\x85", "!", "?!", ".",
                                   "👍", "中", "\ud800", "x\n", "\x0b", "e\u0301", "'ll", "'d"]),
                  max_size=30).map("".join)
texts = st.one_of(any_text, tricky)


@pytest.fixture(scope="module", params=["gpt4", "gpt2", None, r"\d+| ?\w+"])
def tok(request):
    return TextTokenizer(420, pattern=request.param, special_tokens=[EOT, FIM]).fit(CORPUS)


@pytest.fixture(scope="module")
def gpt4():
    return TextTokenizer(420, special_tokens=[EOT, FIM]).fit(CORPUS)


def reference_encode(t: TextTokenizer, text: str) -> list[int]:
    """The tokenizer core (ubpe.Tokenizer, replay) on each piece the regex pattern gives."""
    out: list[int] = []
    for piece in t.pieces(text):
        out += t.tokenizer.encode(np.frombuffer(piece.encode("utf-8", "surrogatepass"), dtype=np.uint8)).tolist()
    return out


# ==================== the compiled path equals the reference


@given(text=texts)
def test_encode_equals_the_core_on_regex_pieces(tok, text):
    assert tok.encode(text, disallowed_special=()).tolist() == reference_encode(tok, text)


@pytest.mark.parametrize("pattern", ["gpt4", "gpt2"])
def test_compiled_split_equals_regex_on_every_class_of_character(pattern):
    """Every 7th code point, in runs and between letters, spaces, apostrophes and line breaks."""
    t = TextTokenizer(256 + 200, pattern=pattern).fit(CORPUS)
    every = "".join(chr(c) for c in range(0, 0x110000, 7))
    for probe in (every, "a".join(every[::50]), " ".join(every[::30]), "'".join(every[::40]), "\n ".join(every[::60])):
        assert t.encode(probe).tolist() == reference_encode(t, probe)


def test_contractions_fold_case_as_the_regex_module_does():
    t = TextTokenizer(300).fit(CORPUS)  # gpt4: (?i:...), where U+017F LONG S matches s
    for text in ["'ſ", "'S", "'LL", "'lL", "'Ve", "'RE", "'x", "'l", "'", "it'ſ me"]:
        assert t.encode(text).tolist() == reference_encode(t, text), text


def test_long_pieces_and_repeats_use_the_same_merges():
    t = TextTokenizer(400, pattern=None).fit(["ab" * 500, "aaaa" * 300, CORPUS])
    for text in ["ab" * 2000, "a" * 1001, "aaab" * 77, CORPUS * 3]:
        assert t.encode(text).tolist() == reference_encode(t, text)


# ==================== the one-call path (encode with its default arguments)

short_texts = st.one_of(
    st.text(alphabet=st.one_of(st.characters(codec=None, categories=None), st.integers(0xD800, 0xDFFF).map(chr)),
            max_size=40),
    st.lists(st.sampled_from(["a", " the", "é", "'s", "\n", "  ", "👍", "\ud800", "\udfff", "12345", EOT, FIM,
                              "<|endof", "text|>", "<|fim", ""]), max_size=8).map("".join))


def _outcome(fn, text):
    """``fn(text)`` as a list of ids, or the message of the ValueError it raised."""
    try:
        return fn(text).tolist()
    except ValueError as e:
        return str(e)


@given(text=short_texts)
def test_the_one_call_path_equals_the_general_path_and_the_core(tok, text):
    """encode's one compiled call (default arguments, once the engine exists) gives the ids of
    the general path (encode_batch) and of the core on the regex pieces, and refuses a special
    token with the same message; empty strings, non-ASCII and lone surrogates included."""
    tok.encode("warm")
    fast = _outcome(tok.encode, text)
    assert fast == _outcome(lambda t: tok.encode_batch([t])[0], text)
    if isinstance(fast, str):
        assert EOT in text or FIM in text
        assert "special token" in fast
    else:
        assert fast == reference_encode(tok, text)
        assert tok.encode(text, disallowed_special=()).tolist() == fast
        assert tok.decode(np.asarray(fast, dtype=np.int32), errors="surrogatepass") == text


def test_the_default_call_takes_the_one_call_path(gpt4, monkeypatch):
    eng = gpt4._engine()
    seen = []
    real = type(eng).encode_text
    monkeypatch.setattr(eng, "encode_text", lambda data, mode: seen.append(data) or real(eng, data, mode))
    ids = gpt4.encode("Zwölf Boxkämpfer")
    assert seen == ["Zwölf Boxkämpfer".encode()] and ids.dtype == np.int32
    assert ids.tolist() == reference_encode(gpt4, "Zwölf Boxkämpfer")
    with pytest.raises(ValueError, match=r"special token '<\|fim\|>' at character 2"):
        gpt4.encode(f"ab{FIM}")  # found by the compiled call, raised by the general path
    assert len(seen) == 2
    for kwargs in ({"allowed_special": "all"}, {"disallowed_special": ()}, {"dropout": 0.5, "seed": 1}):
        gpt4.encode("abc", **kwargs)
    assert len(seen) == 2


def test_a_full_piece_cache_starts_afresh(monkeypatch):
    """A piece cache of 32 slots (16 pieces, 128 key bytes, 64 tokens) empties itself many times
    over: the ids stay the core's, in both the one-call and the batch path."""
    from ubpe import text_engine

    monkeypatch.setattr(text_engine, "CACHE_BITS", 5)
    t = TextTokenizer.from_bytes(TextTokenizer(420, special_tokens=[EOT, FIM]).fit(CORPUS).to_bytes())
    t.encode("warm")
    words = CORPUS.split(" ")
    texts = [" ".join(words[i:i + 3]) for i in range(len(words) - 3)] + ["x" * 64, "é" * 40, "ab" * 70]
    for text in texts:
        assert t.encode(text).tolist() == reference_encode(t, text)
    assert [a.tolist() for a in t.encode_batch(texts)] == [reference_encode(t, x) for x in texts]
    assert t._engine().cache().shape[0] == text_engine._k.CACHE_HEAD + 6 * 32


def test_the_one_call_path_from_several_threads_at_once(gpt4):
    """Each thread has its own piece cache: encoding from 4 threads at once (the kernel releases
    the GIL) gives the ids of one thread."""
    from concurrent.futures import ThreadPoolExecutor

    words = CORPUS.split(" ")
    texts = [" ".join(words[i:i + 1 + i % 7]) for i in range(len(words))]
    want = [gpt4.encode(t).tolist() for t in texts]
    with ThreadPoolExecutor(4) as pool:
        got = list(pool.map(lambda k: [gpt4.encode(t).tolist() for t in texts[k::4]], range(4)))
    assert [got[i % 4][i // 4] for i in range(len(texts))] == want


def test_direct_entry_falls_back_to_the_kernel():
    from ubpe import text_engine

    def plain(x):
        return x + 1

    assert text_engine.direct_entry(plain, (1,)) is plain


# ==================== offsets


def char_spans_reference(text: str, byte_spans: np.ndarray) -> list[tuple[int, int]]:
    """Characters in [start, end) bytes: those whose last byte lies there."""
    ends = []  # the end byte (exclusive) of each character
    pos = 0
    for ch in text:
        pos += len(ch.encode("utf-8", "surrogatepass"))
        ends.append(pos)
    import bisect

    return [(bisect.bisect_right(ends, s), bisect.bisect_right(ends, e)) for s, e in byte_spans.tolist()]


@given(text=texts, allow=st.booleans())
def test_offsets_tile_the_text(gpt4, text, allow):
    text = text + (EOT if allow else "")
    kw = dict(allowed_special="all") if allow else dict(disallowed_special=())
    ids, spans = gpt4.encode_with_offsets(text, **kw)
    ids_b, bspans = gpt4.encode_with_offsets(text, offsets="byte", **kw)
    assert ids.tolist() == ids_b.tolist() == gpt4.encode(text, **kw).tolist()
    assert spans.shape == bspans.shape == (len(ids), 2) and spans.dtype == np.int64
    # characters: contiguous, and they join back to the text
    assert "".join(text[s:e] for s, e in spans.tolist()) == text
    assert (spans[1:, 0] == spans[:-1, 1]).all() and (spans[:, 1] >= spans[:, 0]).all()
    # bytes: each token's bytes are its slice of the UTF-8
    raw = text.encode("utf-8", "surrogatepass")
    assert [raw[s:e] for s, e in bspans.tolist()] == [gpt4.token_bytes(i) for i in ids.tolist()]
    # a character belongs to the token holding its last byte
    assert [tuple(x) for x in spans.tolist()] == char_spans_reference(text, bspans)


@pytest.mark.filterwarnings("ignore:fit stopped early")
def test_a_character_split_over_tokens_goes_to_the_token_of_its_last_byte():
    t = TextTokenizer(300).fit("plain ascii text only " * 40)
    text = "a\U0001f9ecb"  # 🧬: 4 bytes never seen in training, so one token per byte
    ids, spans = t.encode_with_offsets(text)
    assert [t.token_bytes(i) for i in ids.tolist()] == [b"a", b"\xf0", b"\x9f", b"\xa7", b"\xac", b"b"]
    assert spans.tolist() == [[0, 1], [1, 1], [1, 1], [1, 1], [1, 2], [2, 3]]
    ids, spans = t.encode_with_offsets(text, offsets="byte")
    assert spans.tolist() == [[0, 1], [1, 2], [2, 3], [3, 4], [4, 5], [5, 6]]


def test_offsets_of_normalised_text_index_the_normalised_text():
    t = TextTokenizer(300, normalize="NFKC").fit(CORPUS)
    text = "ﬁne café"
    ids, spans = t.encode_with_offsets(text)
    norm = "fine café"
    assert "".join(norm[s:e] for s, e in spans.tolist()) == norm


# ==================== streaming decode


@given(text=texts)
def test_stream_decode_yields_each_tokens_text(gpt4, text):
    ids, spans = gpt4.encode_with_offsets(text, disallowed_special=())
    pieces = list(gpt4.decode_stream(ids.tolist(), errors="surrogatepass"))
    assert pieces == [text[s:e] for s, e in spans.tolist()]


@given(ids=st.lists(st.integers(0, 421), max_size=60), errors=st.sampled_from(["replace", "surrogatepass", "ignore"]))
def test_stream_decode_of_any_ids_joins_to_decode(gpt4, ids, errors):
    """Ids cut inside characters, lone continuation bytes, special tokens: the pieces join to
    decode()'s text, and no piece holds part of a character (each is a whole str)."""
    try:
        whole = gpt4.decode(ids, errors=errors)
    except UnicodeDecodeError:
        return
    assert "".join(gpt4.decode_stream(iter(ids), errors=errors)) == whole


def test_stream_decode_checks_ids(gpt4):
    with pytest.raises(ValueError, match="out of range"):
        list(gpt4.decode_stream([1, 10**6]))
    with pytest.raises(TypeError, match="integers"):
        list(gpt4.decode_stream([1, "x"]))
    assert list(gpt4.decode_stream(np.array([104, 105], dtype=np.int32))) == ["h", "i"]


# ==================== batches


batch_texts = st.lists(st.one_of(texts, st.sampled_from([EOT, f"a{EOT}b{FIM}", "<|endof", "text|>", ""])),
                       max_size=12)


@given(items=batch_texts, threads=st.sampled_from([1, 2, 3, None]))
def test_encode_batch_equals_encode_of_each(tok, items, threads):
    want = [tok.encode(t, allowed_special="all").tolist() for t in items]
    got = tok.encode_batch(items, allowed_special="all", num_threads=threads)
    assert [g.tolist() for g in got] == want and all(g.dtype == np.int32 for g in got)
    flat = tok.encode_batch(items, allowed_special="all", num_threads=threads, arrays=True, offsets="char")
    assert isinstance(flat, EncodedBatch) and len(flat) == len(items) and flat.tolist() == want
    assert flat.ids.dtype == np.int32 and flat.bounds.tolist()[0] == 0 and flat.bounds[-1] == len(flat.ids)
    for i, t in enumerate(items):
        assert flat[i].tolist() == want[i]
        assert flat.offsets[flat.bounds[i]:flat.bounds[i + 1]].tolist() == \
            tok.encode_with_offsets(t, allowed_special="all")[1].tolist()
    assert tok.decode_batch(flat, errors="surrogatepass", num_threads=threads) == \
        [tok.decode(w, errors="surrogatepass") for w in want]
    assert tok.decode_batch(got, errors="surrogatepass") == tok.decode_batch(flat, errors="surrogatepass")


def test_a_special_token_spanning_two_texts_of_a_batch_is_no_special_token(gpt4):
    items = ["abc<|endof", "text|>def", f"x{EOT}"]
    got = gpt4.encode_batch(items, allowed_special="all")
    assert [g.tolist() for g in got] == [gpt4.encode(t, allowed_special="all").tolist() for t in items]
    assert gpt4.special_ids[EOT] not in got[0].tolist() + got[1].tolist()
    with pytest.raises(ValueError, match=r"at character 1"):
        gpt4.encode_batch(items)  # the third text holds one, disallowed


def test_batches_split_over_threads_give_the_same_arrays(gpt4):
    items = [CORPUS[i:i + 700] for i in range(0, len(CORPUS), 350)] * 4
    one = gpt4.encode_batch(items, num_threads=1, arrays=True, offsets="byte")
    two = gpt4.encode_batch(items, num_threads=2, arrays=True, offsets="byte")
    assert np.array_equal(one.ids, two.ids) and np.array_equal(one.bounds, two.bounds)
    assert np.array_equal(one.offsets, two.offsets)
    assert gpt4.decode_batch(one, num_threads=2) == items


def test_thread_ranges_come_back_in_order_from_helpers_kept_between_calls():
    workers: set[threading.Thread] = set()

    def work(a: int, b: int) -> list[int]:
        workers.add(threading.current_thread())
        return list(range(a, b))

    for _ in range(4):
        parts = run_threads(61, np.arange(61) % 7, 3, work)
        assert [x for part in parts for x in part] == list(range(61))
    # this thread and at most two helpers, the same ones every call (their piece caches stay warm)
    assert threading.current_thread() in workers and len(workers) <= 3


def test_the_finishing_step_runs_in_the_calling_thread_in_range_order():
    finished: list[tuple[int, threading.Thread]] = []

    def finish(part: list[int]) -> list[int]:
        finished.append((part[0], threading.current_thread()))
        return part

    for threads in (1, 2, 3):
        finished.clear()
        parts = run_threads(50, None, threads, lambda a, b: list(range(a, b)), finish)
        assert [x for part in parts for x in part] == list(range(50))
        assert [first for first, _ in finished] == sorted(first for first, _ in finished)
        assert {t for _, t in finished} == {threading.current_thread()}


def test_a_helper_whose_compiled_part_ended_is_handed_the_gil_at_the_next_pause():
    # ``ended`` set, a helper still has to return (it needs the GIL, held by the finishing step):
    # after ``pause()`` every such range has returned, so the helper did not wait behind it
    returned: set[int] = set()
    ended_by_helper: dict[int, np.ndarray] = {}
    checked: list[int] = []

    def work(a: int, b: int, ended: np.ndarray) -> list[int]:
        ended[0] = 1
        if threading.current_thread() is not threading.main_thread():
            ended_by_helper[a] = ended
        time.sleep(0.001)  # the hand-over's own work
        returned.add(a)
        return list(range(a, b))

    def finish(part: list[int], pause) -> list[int]:
        for _ in range(20):
            pause()
            late = [a for a in list(ended_by_helper) if a not in returned]
            assert late == []
            checked.append(len(ended_by_helper))
            time.sleep(0.0002)
        return part

    for threads in (2, 3):
        parts = run_threads(90, None, threads, work, finish, per_thread=3, handover=True)
        assert [x for part in parts for x in part] == list(range(90))
    assert ended_by_helper and max(checked) > 0  # helpers took ranges while pauses ran


def test_on_one_thread_a_handover_finish_gets_no_pause():
    got = run_threads(10, None, 1, lambda a, b, ended: (a, b, int(ended[0])), lambda r, pause: (r, pause),
                      handover=True)
    assert got == [((0, 10, 0), None)]


def test_tapered_ranges_end_smaller_and_still_cover_every_item_in_order():
    seen: list[tuple[int, int]] = []

    def work(a: int, b: int) -> list[int]:
        seen.append((a, b))
        return list(range(a, b))

    parts = run_threads(100, None, 2, work, per_thread=2, taper=0.5)
    assert [x for part in parts for x in part] == list(range(100))
    sizes = [b - a for a, b in sorted(seen)]
    assert sizes == [33, 34, 16, 17]
    parts = run_threads(100, np.ones(100), 2, lambda a, b: list(range(a, b)), per_thread=2, taper=0.5)
    assert [len(p) for p in parts][:2] > [len(p) for p in parts][2:]


def test_decoded_bytes_raise_the_end_flag_also_on_a_bad_id(gpt4):
    eng = gpt4._engine()
    ids = np.array(gpt4.encode("hello world").tolist() * 3, dtype=np.int64)
    ended = np.zeros(1, np.int8)
    data, bounds = eng.decode_flat(ids, np.array([0, 2, ids.shape[0]], dtype=np.int64), ended)
    assert ended[0] == 1 and data.tobytes() == ("hello world" * 3).encode()
    ended[0] = 0
    with pytest.raises(ValueError, match="out of range"):
        eng.decode_flat(np.array([1, gpt4.vocab_size], dtype=np.int64), np.array([0, 2], dtype=np.int64), ended)
    assert ended[0] == 1


@pytest.mark.parametrize("threads", [2, 3])
def test_decode_batch_of_thousands_of_texts_over_threads_equals_decode_of_each(gpt4, threads):
    rng = np.random.default_rng(7)
    items = [CORPUS[i:i + int(rng.integers(1, 60))] for i in rng.integers(0, len(CORPUS) - 60, 3000)]
    seqs = [gpt4.encode(t, allowed_special="all").tolist() for t in items]
    want = [gpt4.decode(s) for s in seqs]
    batch = EncodedBatch(np.array([x for s in seqs for x in s], dtype=np.int32),
                         np.cumsum([0] + [len(s) for s in seqs]))
    assert gpt4.decode_batch(batch, num_threads=threads) == want
    assert gpt4.decode_batch(seqs, num_threads=threads, errors="replace") == want


def test_an_error_in_the_finishing_step_stops_the_helpers_and_is_raised():
    started: list[int] = []
    at_error: list[int] = []

    def work(a: int, b: int) -> int:
        started.append(a)
        return a

    def finish(a: int) -> int:
        if a >= 10:
            at_error.append(len(started))
            raise UnicodeError(a)
        return a

    with pytest.raises(UnicodeError):
        run_threads(400, None, 2, work, finish)
    assert len(started) <= at_error[0] + 1  # at most the one a helper took as it failed


def test_an_error_in_a_thread_range_is_raised_by_the_caller_and_stops_new_ranges():
    started: list[int] = []
    at_error: list[int] = []

    def work(a: int, b: int) -> int:
        started.append(a)
        if a >= 20:
            at_error.append(len(started))
            raise KeyError(a)
        return a

    with pytest.raises(KeyError) as info:
        run_threads(40, None, 2, work)
    # the first failure in range order; after the first failure, only a range already taken
    assert info.value.args[0] >= 20 and len(started) <= at_error[0] + 1


def test_concurrent_batches_on_shared_helpers_each_get_their_own_ids(gpt4):
    items = [CORPUS[i:i + 300] for i in range(0, len(CORPUS), 150)]
    want = gpt4.encode_batch(items, num_threads=1, arrays=True)
    got: list = [None] * 4

    def call(k: int) -> None:
        got[k] = gpt4.encode_batch(items[k:] + items[:k], num_threads=2, arrays=True)

    threads = [threading.Thread(target=call, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for k in range(4):
        assert got[k].tolist() == want.tolist()[k:] + want.tolist()[:k]


def _encode_in_child(tok, items, queue) -> None:
    queue.put(tok.encode_batch(items, num_threads=2, arrays=True).ids.tolist())


@pytest.mark.skipif("fork" not in multiprocessing.get_all_start_methods(), reason="no fork here")
def test_a_forked_child_encodes_batches_on_threads_of_its_own(gpt4):
    items = [CORPUS[i:i + 300] for i in range(0, len(CORPUS), 150)]
    want = gpt4.encode_batch(items, num_threads=2, arrays=True).ids.tolist()  # the parent's helpers exist
    ctx = multiprocessing.get_context("fork")
    queue = ctx.Queue()
    child = ctx.Process(target=_encode_in_child, args=(gpt4, items, queue))
    child.start()
    got = queue.get(timeout=60)
    child.join(60)
    assert child.exitcode == 0 and got == want


def test_batch_argument_errors(gpt4):
    with pytest.raises(TypeError, match=r"texts\[1\]"):
        gpt4.encode_batch(["a", 3, "b"])
    with pytest.raises(TypeError, match=r"texts\[2\]"):
        gpt4.encode_batch(["a", "b", None], num_threads=2)
    with pytest.raises(ValueError, match="offsets"):
        gpt4.encode_batch(["a"], offsets="word", arrays=True)
    with pytest.raises(ValueError, match="arrays=True"):
        gpt4.encode_batch(["a"], offsets="char")
    with pytest.raises(ValueError, match="num_threads"):
        gpt4.encode_batch(["a"], num_threads=0)
    with pytest.raises(ValueError, match="out of range"):
        gpt4.decode_batch([[1, 2], [gpt4.vocab_size]])
    with pytest.raises(ValueError, match="bounds"):
        gpt4.decode_batch(EncodedBatch(np.array([1, 2], dtype=np.int32), np.array([0, 3])))
    assert gpt4.encode_batch([]) == [] and gpt4.decode_batch([]) == []
    assert len(gpt4.encode_batch([], arrays=True)) == 0


# ==================== BPE-dropout


@given(text=texts, p=st.sampled_from([0.1, 0.5, 0.9]), seed=st.integers(0, 2**64 - 1))
def test_dropout_decodes_to_the_text_and_the_seed_fixes_the_ids(tok, text, p, seed):
    ids = tok.encode(text, disallowed_special=(), dropout=p, seed=seed)
    assert tok.decode(ids, errors="surrogatepass") == text
    assert tok.encode(text, disallowed_special=(), dropout=p, seed=seed).tolist() == ids.tolist()
    # (no bound on the length: BPE is greedy, and a skipped merge can give fewer tokens,
    # e.g. '\r\n\nZ' as '\r\n', '\nZ' instead of '\r', '\n\n', 'Z')
    assert tok.encode(text, disallowed_special=(), dropout=0.0, seed=seed).tolist() == \
        tok.encode(text, disallowed_special=()).tolist()


def test_dropout_varies_with_the_seed_and_grows_with_p(gpt4):
    text = CORPUS[:3000]
    plain = len(gpt4.encode(text))
    runs = {tuple(gpt4.encode(text, dropout=0.1, seed=s).tolist()) for s in range(5)}
    assert len(runs) == 5  # five seeds, five segmentations
    lengths = [np.mean([len(gpt4.encode(text, dropout=p, seed=s)) for s in range(3)]) for p in (0.05, 0.3, 0.9)]
    assert plain < lengths[0] < lengths[1] < lengths[2] <= len(text.encode())


def test_dropout_in_a_batch_draws_per_text(gpt4):
    items = [CORPUS[:500], CORPUS[:500], f"x{EOT}{CORPUS[:200]}"]
    got = gpt4.encode_batch(items, allowed_special="all", dropout=0.4, seed=7)
    assert got[0].tolist() != got[1].tolist()  # same text, another draw
    again = gpt4.encode_batch(items, allowed_special="all", dropout=0.4, seed=7, num_threads=2)
    assert [g.tolist() for g in got] == [g.tolist() for g in again]
    assert gpt4.decode_batch(got) == items


@pytest.mark.parametrize("kwargs, error", [(dict(dropout=1.0), ValueError), (dict(dropout=-0.1), ValueError),
                                           (dict(dropout="0.1"), TypeError), (dict(dropout=0.1, seed=1.5), TypeError)])
def test_dropout_argument_errors(gpt4, kwargs, error):
    with pytest.raises(error):
        gpt4.encode("abc", **kwargs)


# ==================== token length cap, byte fallback


@pytest.mark.parametrize("n_candidates", [1, 50])
def test_max_token_length_caps_what_training_makes(n_candidates):
    dna = "".join(np.random.default_rng(0).choice(list("ACGT"), 20000).tolist())
    dna = (dna[:2000] * 10) + dna
    free = TextTokenizer(600, pattern=None, n_candidates=n_candidates).fit(dna)
    capped = TextTokenizer(600, pattern=None, max_token_length=6, n_candidates=n_candidates).fit(dna)
    assert max(len(free.token_bytes(i)) for i in range(free.n_bpe)) > 6
    assert max(len(capped.token_bytes(i)) for i in range(capped.n_bpe)) == 6
    assert capped.n_bpe == 600  # the vocabulary still fills
    assert capped.decode(capped.encode(dna)) == dna
    back = TextTokenizer.from_bytes(capped.to_bytes())
    assert back.max_token_length == 6 and back == capped


def test_without_a_cap_the_file_bytes_do_not_change():
    """max_token_length is written only when set: a tokenizer without it saves as before."""
    t = TextTokenizer(300).fit(CORPUS)
    assert b"max_token_length" not in t.to_bytes()


@pytest.mark.filterwarnings("ignore:fit stopped early")
def test_text_outside_the_training_alphabet_falls_back_to_bytes():
    t = TextTokenizer(400).fit("only ascii here, nothing else " * 50)
    text = "中文 🧬 ελληνικά"
    ids = t.encode(text)
    pieces = [t.token_bytes(i) for i in ids.tolist()]
    assert all(len(p) == 1 for p in pieces if max(p) >= 0x80)  # every byte of those characters: a byte token
    assert b"".join(pieces) == text.encode() and t.decode(ids, errors="strict") == text


# ==================== loading untrusted files


@pytest.mark.filterwarnings("ignore:fit stopped early")
def test_an_unknown_pattern_is_refused_unless_trusted(tmp_path):
    evil = TextTokenizer(300, pattern=r"(a|aa)+$").fit("a a a " * 30)
    path = tmp_path / "evil.ubpe"
    evil.save(path)
    with pytest.raises(ubpe.text.UntrustedPatternError, match="trust_pattern=True"):
        TextTokenizer.load(path)
    assert TextTokenizer.load(path, trust_pattern=True).pattern == r"(a|aa)+$"
    for name in ("gpt2", "gpt4", None):  # the known ones load as they are
        t = TextTokenizer(300, pattern=name).fit(CORPUS)
        assert TextTokenizer.from_bytes(t.to_bytes()) == t
    evil.export_hf(tmp_path / "evil.json")
    with pytest.raises(ubpe.text.UntrustedPatternError):
        TextTokenizer.import_hf(tmp_path / "evil.json")
    assert TextTokenizer.import_hf(tmp_path / "evil.json", trust_pattern=True).pattern == r"(a|aa)+$"


def test_special_tokens_are_bounded_in_number_and_length():
    with pytest.raises(ValueError, match="at most"):
        TextTokenizer(300, special_tokens=[f"<{i}>" for i in range(MAX_SPECIAL_TOKENS + 1)])
    with pytest.raises(ValueError, match="characters"):
        TextTokenizer(300, special_tokens=["x" * (MAX_SPECIAL_LENGTH + 1)])
    with pytest.raises(ValueError, match="bytes together"):
        TextTokenizer(300, special_tokens=[f"{i:05d}" + "é" * 120 for i in range(MAX_SPECIAL_BYTES // 240 + 1)])


def test_a_file_with_100000_special_tokens_is_refused_at_once(gpt4):
    from test_text import _text_bytes

    body = dict(pattern=gpt4.pattern, normalize=None, special_tokens=[f"<|t{i}|>" for i in range(100_000)],
                tokenizer=gpt4.tokenizer.to_bytes())
    with pytest.raises(ubpe.CorruptDataError, match="special tokens"):
        TextTokenizer.from_bytes(_text_bytes(body))


def test_the_most_special_tokens_allowed_still_encode(gpt4):
    specials = [f"<|t{i}|>" for i in range(MAX_SPECIAL_TOKENS)]
    t = TextTokenizer(420, special_tokens=specials).fit(CORPUS)
    text = "hello <|t5|> and <|t16383|>!"
    ids = t.encode(text, allowed_special="all")
    assert t.special_ids["<|t5|>"] in ids.tolist() and t.decode(ids) == text


@given(specials=st.lists(st.text(alphabet="ab<é", min_size=1, max_size=4), min_size=1, max_size=6, unique=True),
       pieces=st.lists(st.text(alphabet="ab<é x", max_size=6), max_size=8))
def test_special_tokens_are_found_as_a_regex_alternation_finds_them(specials, pieces):
    """The longest special token at each place, left to right (tiktoken's regex of the tokens,
    longest first), however the tokens overlap or prefix one another."""
    import regex

    t = TextTokenizer(260, special_tokens=specials).fit("ab ab a b é<" * 5)
    text = "".join(p + specials[i % len(specials)] * (i % 2) for i, p in enumerate(pieces))
    alternation = regex.compile("|".join(regex.escape(s) for s in sorted(specials, key=lambda s: (-len(s), s))))
    want: list[int] = []
    start = 0
    for m in alternation.finditer(text):
        want += t.encode(text[start:m.start()], disallowed_special=()).tolist() + [t.special_ids[m.group()]]
        start = m.end()
    want += t.encode(text[start:], disallowed_special=()).tolist()
    assert t.encode(text, allowed_special="all").tolist() == want
    first = alternation.search(text)
    if first is None:
        assert t.encode(text).tolist() == want
    else:
        with pytest.raises(ValueError, match=rf"at character {first.start()}:"):
            t.encode(text)
