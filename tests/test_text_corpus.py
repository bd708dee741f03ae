"""Training a TextTokenizer from iterators and files in bounded memory (docs/text.md, "Large corpora").

- counting in blocks, on threads or processes, gives the counts of the whole corpus, and the
  model equals training on those words held in memory (model bytes), whatever the block size,
  the number of threads or the kind of worker;
- a text file is one text with the GPT-2 / GPT-4 patterns (it is cut only where they always
  cut), its lines are texts otherwise; JSON lines and parquet columns give their fields;
- memory stays bounded by ``max_words`` and the blocks in flight (tracemalloc), not by the
  corpus;
- bad input (bytes that are not UTF-8, lines that are not JSON, a missing field, a failing
  worker) is a clear error naming the file and the byte offset.
"""

from __future__ import annotations

import json
import tracemalloc
from collections import Counter

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ubpe
from ubpe.text import TextTokenizer, WordCounts

EOT = "<|endoftext|>"
CORPUS = (
    "The quick brown fox jumps over the lazy dog. It's 2024; we'll see what they've done!\n"
    "def f(x):\n    return x ** 2  # square\n\n\n  indented\n"
    "Zwölf Boxkämpfer jagen Viktor quer über den großen Sylter Deich. "
    "Съешь же ещё этих мягких французских булок. 我能吞下玻璃而不伤身体。 "
    "e\u0301te\u0301 cafe\u0301 — naïve résumé 👩‍👩‍👧 👍🏽 \x00 tab\there  12345678 3.14159\r\n"
) * 8


def reference_counts(t: TextTokenizer, texts: list[str]) -> Counter:
    """Word counts as the in-memory path defines them: special tokens cut out (a regex
    alternation, longest first), then the pieces of the text between them."""
    import regex

    counts: Counter[str] = Counter()
    specials = sorted(t.special_tokens, key=lambda s: (-len(s), s))
    cut = regex.compile("|".join(map(regex.escape, specials))) if specials else None
    for text in texts:
        for seg in (cut.split(text) if cut else [text]):
            counts.update(t.pieces(seg))
    return counts


def in_memory(texts: list[str], n=400, **kwargs) -> TextTokenizer:
    """The reference model: trained on the words and their counts, held in memory."""
    t = TextTokenizer(n, **kwargs)
    return t.fit_word_counts(dict(reference_counts(t, texts)))


# ==================== the model equals the one trained in memory


small_texts = st.lists(st.lists(st.sampled_from(list("ab é'\n\r\t1!中") + ["ll", "\n\n", "  x", "\nx", EOT]),
                               max_size=40).map("".join), min_size=1, max_size=6)


@settings(max_examples=60, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(texts=small_texts, pattern=st.sampled_from(["gpt4", "gpt2", None]), chunk=st.sampled_from([1024, 1 << 20]),
       threads=st.sampled_from([1, 2]))
@pytest.mark.filterwarnings("ignore:fit stopped early")
def test_iterator_training_equals_training_in_memory(texts, pattern, chunk, threads):
    if not "".join(texts).replace(EOT, ""):
        return
    want = in_memory(texts, 300, pattern=pattern, special_tokens=[EOT], min_count=1)
    got = TextTokenizer(300, pattern=pattern, special_tokens=[EOT], min_count=1)
    got.fit(iter(texts), num_threads=threads)
    assert got.to_bytes() == want.to_bytes()
    counts = got.count_words(iter(texts), chunk_size=chunk, num_threads=threads)
    assert got.fit_word_counts(counts).to_bytes() == want.to_bytes()


@pytest.mark.parametrize("pattern", ["gpt4", "gpt2"])
@pytest.mark.parametrize("chunk", [1024, 4096, 1 << 24])
@pytest.mark.parametrize("threads", [1, 2])
def test_a_text_file_is_one_text_read_in_blocks(tmp_path, pattern, chunk, threads):
    text = CORPUS * 3 + "\n!tail\n\n \n" + EOT + "end"
    path = tmp_path / "corpus.txt"
    path.write_bytes(text.encode())
    got = TextTokenizer(500, pattern=pattern, special_tokens=[EOT]).fit_files(path, chunk_size=chunk,
                                                                               num_threads=threads)
    assert got.to_bytes() == in_memory([text], 500, pattern=pattern, special_tokens=[EOT]).to_bytes()
    assert got.to_bytes() == TextTokenizer(500, pattern=pattern, special_tokens=[EOT]).fit(text).to_bytes()


@given(a=st.text(max_size=40), last=st.characters(min_codepoint=33, max_codepoint=126),
       first=st.characters(min_codepoint=33, max_codepoint=126), b=st.text(max_size=40))
@pytest.mark.parametrize("pattern", ["gpt4", "gpt2"])
def test_the_patterns_always_cut_after_a_line_feed_between_printable_ascii(pattern, a, last, first, b):
    """Why a text file can be read in blocks cut there: the pieces of the whole are the pieces
    of the parts. (After a line feed alone, GPT-2 would not: "  \\n" ends one piece at the end of
    a text, but two before a letter.)"""
    a = a + last + "\n"
    t = TextTokenizer(256, pattern=pattern)
    assert t.pieces(a + first + b) == t.pieces(a) + t.pieces(first + b)
    for form in ("NFC", "NFKC", "NFD", "NFKD"):
        n = TextTokenizer(256, pattern=pattern, normalize=form)
        assert n.pieces(a + first + b) == n.pieces(a) + n.pieces(first + b)


@pytest.mark.parametrize("pattern", [None, r"\w+|\s+"])
def test_without_a_known_pattern_each_line_is_a_text(tmp_path, pattern):
    lines = [line + "\n" for line in CORPUS.split("\n")][:-1] + ["no line feed at the end"]
    path = tmp_path / "lines.txt"
    path.write_bytes("".join(lines).encode())
    got = TextTokenizer(400, pattern=pattern).fit_files([path], chunk_size=1024, num_threads=2)
    assert got.to_bytes() == in_memory(lines, 400, pattern=pattern).to_bytes()


def test_several_files_are_one_corpus(tmp_path):
    parts = [CORPUS[:700], CORPUS[700:2000], "", CORPUS[2000:]]
    paths = []
    for i, p in enumerate(parts):
        paths.append(tmp_path / f"part{i}.txt")
        paths[-1].write_bytes(p.encode())
    got = TextTokenizer(450).fit_files(paths, chunk_size=1024)
    assert got.to_bytes() == in_memory(parts, 450).to_bytes()


def test_json_lines_give_their_field(tmp_path):
    records = [{"text": CORPUS[i:i + 300], "id": i} for i in range(0, len(CORPUS), 250)]
    records.append({"text": f"with {EOT} inside", "id": -1})
    path = tmp_path / "c.jsonl"
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records) + "\n", encoding="utf-8")
    got = TextTokenizer(450, special_tokens=[EOT]).fit_files(path, format="jsonl", field="text", chunk_size=1024,
                                                             num_threads=2)
    want = in_memory([r["text"] for r in records], 450, special_tokens=[EOT])
    assert got.to_bytes() == want.to_bytes()


def test_parquet_columns_give_their_strings(tmp_path):
    pa = pytest.importorskip("pyarrow", reason="pyarrow is not installed")
    import pyarrow.parquet as pq

    values = [CORPUS[i:i + 300] for i in range(0, len(CORPUS), 170)] + [None, "", "é" * 40]
    table = pa.table({"text": pa.array(values, type=pa.string()), "n": list(range(len(values)))})
    pq.write_table(table, tmp_path / "c.parquet", row_group_size=7)
    pq.write_table(pa.table({"text": pa.array(values[:5], type=pa.large_string())}), tmp_path / "d.parquet")
    got = TextTokenizer(450).fit_files([tmp_path / "c.parquet", tmp_path / "d.parquet"], format="parquet",
                                       field="text", num_threads=2)
    want = in_memory([v for v in values if v] + values[:5], 450)
    assert got.to_bytes() == want.to_bytes()
    with pytest.raises(ubpe.CorruptDataError, match="no column 'body'"):
        TextTokenizer(450).fit_files(tmp_path / "c.parquet", format="parquet", field="body")
    with pytest.raises(ubpe.CorruptDataError, match="not strings"):
        TextTokenizer(450).fit_files(tmp_path / "c.parquet", format="parquet", field="n")


def test_processes_count_as_threads_do(tmp_path):
    path = tmp_path / "corpus.txt"
    path.write_bytes((CORPUS * 4).encode())
    t = TextTokenizer(500)
    one = t.count_files(path, chunk_size=2048, num_threads=1)
    procs = t.count_files(path, chunk_size=2048, num_threads=2, workers="processes")
    assert procs.to_dict() == one.to_dict() == dict(reference_counts(t, [CORPUS * 4]))
    texts = TextTokenizer(500).count_words([CORPUS] * 4, chunk_size=2048, num_threads=2, workers="processes")
    assert texts.to_dict() == dict(reference_counts(t, [CORPUS] * 4))


def test_word_counts_are_the_pieces_and_their_counts():
    t = TextTokenizer(300, special_tokens=[EOT])
    wc = t.count_words([f"the cat{EOT} the", "cat the"])
    assert isinstance(wc, WordCounts) and wc.to_dict() == {"the": 1, " cat": 1, " the": 2, "cat": 1}
    assert wc.total == 5 and len(wc) == 4 and wc.threshold == 0 and wc.dropped == 0
    assert TextTokenizer(300).fit_word_counts(wc).to_bytes() == TextTokenizer(300).fit_word_counts(wc.to_dict()).to_bytes()


# ==================== bounded memory


def write_zipf_corpus(path, n_words: int, seed: int = 0) -> None:
    """Words drawn by a Zipf law over a huge vocabulary (many seen once), plus a few planted
    frequent words."""
    rng = np.random.default_rng(seed)
    ranks = rng.zipf(1.1, n_words) % 50_000_000
    letters = "abcdefghijklmnopqrstuvwxyz"

    def word(r: int) -> str:  # the rank in base 26, in letters: one piece of the GPT-4 pattern
        out = "q"
        while r:
            r, d = divmod(r, 26)
            out += letters[d]
        return out

    with open(path, "w", encoding="utf-8") as f:
        for start in range(0, n_words, 1000):
            words = [word(r) for r in ranks[start:start + 1000].tolist()]
            f.write(" ".join(words) + " planted planted common\n")


def peak_while(fn) -> tuple[int, object]:
    tracemalloc.start()
    try:
        out = fn()
        return tracemalloc.get_traced_memory()[1], out
    finally:
        tracemalloc.stop()


def test_counting_memory_is_bounded_by_max_words_not_the_corpus(tmp_path):
    small, large = tmp_path / "small.txt", tmp_path / "large.txt"
    write_zipf_corpus(small, 300_000)
    write_zipf_corpus(large, 1_200_000)  # 4 times as many words, many more distinct
    t = TextTokenizer(300)
    kw = dict(max_words=20_000, chunk_size=1 << 18, num_threads=1)
    t.count_words("warm up: the character tables are built once, at first use")
    peak_small, wc_small = peak_while(lambda: t.count_files(small, **kw))
    peak_large, wc_large = peak_while(lambda: t.count_files(large, **kw))
    exact = t.count_words(open(large, encoding="utf-8").read())  # unbounded, for comparison
    assert len(exact) > 10 * 20_000 and 0 < len(wc_large) <= 20_000
    assert large.stat().st_size > 3 * small.stat().st_size
    assert peak_large < 1.3 * peak_small  # the corpus grew 4 times; the memory did not
    assert peak_large < 24 << 20  # max_words and a few blocks in flight, far less than the corpus
    # the words kept are the most frequent, and the frequent ones are counted exactly
    exact_d, kept = exact.to_dict(), wc_large.to_dict()
    assert kept[" planted"] == exact_d[" planted"] and kept[" common"] == exact_d[" common"]
    assert wc_large.threshold > 1 and wc_large.dropped > 0
    assert min(kept.values()) >= 2 and all(exact_d[w] >= c for w, c in kept.items())


def test_training_on_a_bounded_count_equals_training_on_those_words(tmp_path):
    path = tmp_path / "c.txt"
    write_zipf_corpus(path, 200_000)
    t = TextTokenizer(600)
    wc = t.count_files(path, max_words=5000, chunk_size=1 << 17)
    got = TextTokenizer(600).fit_files(path, max_words=5000, chunk_size=1 << 17, num_threads=2)
    assert got.to_bytes() == TextTokenizer(600).fit_word_counts(wc.to_dict()).to_bytes()


# ==================== errors


def test_bytes_that_are_not_utf8_name_the_file_and_offset(tmp_path):
    good = CORPUS.encode() * 3
    path = tmp_path / "bad.txt"
    at = len(good) - 500
    path.write_bytes(good[:at] + b"\xff\xfe" + good[at:])
    for threads, workers in ((1, "threads"), (2, "threads"), (2, "processes")):
        with pytest.raises(ubpe.CorruptDataError, match=rf"bad\.txt: not UTF-8 at byte {at}\b"):
            TextTokenizer(400).fit_files([tmp_path / "bad.txt"], chunk_size=1024, num_threads=threads,
                                         workers=workers)
    path.write_bytes(good + "é".encode()[:1])  # truncated at the very end
    with pytest.raises(ubpe.CorruptDataError, match=rf"not UTF-8 at byte {len(good)}\b"):
        TextTokenizer(400).fit_files(path)


@pytest.mark.parametrize("line, match", [
    (b"{not json}\n", r"not a JSON line at byte \d+"),
    (b'{"other": "x"}\n', r"at byte \d+ has no field 'text'"),
    (b'{"text": 5}\n', r"field 'text' of the JSON line at byte \d+ is int"),
    (b'["text"]\n', r"has no field 'text'"),
])
def test_bad_json_lines_name_the_file_and_offset(tmp_path, line, match):
    good = b"".join(json.dumps({"text": CORPUS[i:i + 100]}).encode() + b"\n" for i in range(0, 3000, 100))
    (tmp_path / "c.jsonl").write_bytes(good + line + good)
    with pytest.raises(ubpe.CorruptDataError, match=match) as info:
        TextTokenizer(300).fit_files(tmp_path / "c.jsonl", format="jsonl", field="text", chunk_size=1024,
                                     num_threads=2)
    assert "c.jsonl: " in str(info.value) and f"byte {len(good)}" in str(info.value)


def test_a_failing_worker_stops_the_run_with_its_error(tmp_path):
    paths = []
    for i in range(6):
        paths.append(tmp_path / f"f{i}.txt")
        paths[-1].write_bytes(CORPUS.encode() * 2)
    paths[3].write_bytes(b"ok\n\xc3(")  # invalid continuation byte, in the fourth of six files
    for workers in ("threads", "processes"):
        with pytest.raises(ubpe.CorruptDataError, match=r"f3\.txt: not UTF-8 at byte 3"):
            TextTokenizer(300).fit_files(paths, chunk_size=1024, num_threads=2, workers=workers)
    missing = tmp_path / "missing.txt"
    with pytest.raises(FileNotFoundError):
        TextTokenizer(300).fit_files([paths[0], missing])


def test_an_iterator_that_fails_stops_the_run():
    def texts():
        yield CORPUS
        raise OSError("the source went away")

    with pytest.raises(OSError, match="went away"):
        TextTokenizer(300).fit(texts(), num_threads=2)


@pytest.mark.parametrize("kwargs, error, match", [
    (dict(format="csv"), ValueError, "format"),
    (dict(format="jsonl"), TypeError, "field"),
    (dict(field="text"), ValueError, "field"),
    (dict(max_words=1), ValueError, "max_words"),
    (dict(num_threads=0), ValueError, "num_threads"),
    (dict(workers="fibers"), ValueError, "workers"),
    (dict(chunk_size=10), ValueError, "chunk_size"),
])
def test_bad_arguments_raise(tmp_path, kwargs, error, match):
    (tmp_path / "c.txt").write_text(CORPUS)
    with pytest.raises(error, match=match):
        TextTokenizer(300).fit_files(tmp_path / "c.txt", **kwargs)


def test_word_count_mappings_are_checked():
    with pytest.raises(ValueError, match="count"):
        TextTokenizer(300).fit_word_counts({"ab": 0})
    with pytest.raises(TypeError, match="str"):
        TextTokenizer(300).fit_word_counts({b"ab": 2})
    with pytest.raises(ValueError, match="no text"):
        TextTokenizer(300).fit_word_counts({})


@pytest.mark.parametrize("pattern", ["gpt4", None])
def test_a_file_without_a_place_to_cut_is_still_read_in_bounded_blocks(tmp_path, pattern):
    """No line break for 8 blocks: the file is cut at a character boundary there (the pieces at
    that cut may differ from the whole's), and every byte is still counted exactly once."""
    text = "ab cd é, " * 20_000  # 200 KB on one line; blocks of 1 KB, so cut every 8 KB
    path = tmp_path / "one-line.txt"
    path.write_bytes(text.encode())
    wc = TextTokenizer(300, pattern=pattern).count_files(path, chunk_size=1024, num_threads=2)
    sizes = np.diff(wc.bounds)
    assert int((sizes * wc.counts).sum()) == len(text.encode())
    if pattern is None:
        assert sizes.max() <= 8 * 1024 + 4 + 1024  # a block at most 8 chunks (and a character) past its start


@pytest.mark.parametrize("kwargs", [dict(pattern="gpt4", normalize="NFKC"), dict(pattern="gpt2", normalize="NFD"),
                                    dict(pattern=r"\w+|\s+", normalize="NFC"), dict(pattern=None)])
@pytest.mark.parametrize("threads", [1, 2])
def test_long_texts_normalisation_and_special_tokens_count_as_in_memory(tmp_path, kwargs, threads):
    """Texts longer than a block (cut at safe points, or kept whole), normalisation, special
    tokens between blocks, a pattern of one's own: the counts of the whole."""
    texts = [CORPUS * 3 + EOT + "ﬁne" * 50, "short", EOT * 3, "x\n" + CORPUS[:900] + EOT + CORPUS[900:]]
    t = TextTokenizer(300, special_tokens=[EOT], **kwargs)
    want = dict(reference_counts(t, texts))
    assert t.count_words(texts, chunk_size=1024, num_threads=threads).to_dict() == want
    path = tmp_path / "c.jsonl"
    path.write_text("".join(json.dumps({"t": x}) + "\n" for x in texts), encoding="utf-8")
    assert t.count_files(path, format="jsonl", field="t", chunk_size=1024, num_threads=threads).to_dict() == want


def _is_pool_worker(proc) -> bool:
    """A process pool's worker (not multiprocessing's resource tracker)."""
    try:
        line = " ".join(proc.cmdline())
    except Exception:  # noqa: BLE001 - it may have ended
        return False
    return "spawn_main" in line and "resource_tracker" not in line


def test_a_worker_process_that_dies_stops_the_run_with_a_clear_error(tmp_path):
    psutil = pytest.importorskip("psutil")
    import os
    import signal
    import threading

    path = tmp_path / "big.txt"
    path.write_bytes(CORPUS.encode() * 3000)  # 12 MB in 12 288 blocks of 1 KiB: the run lasts
    errors: list[BaseException] = []

    def run() -> None:
        try:
            TextTokenizer(300).count_files(path, chunk_size=1024, num_threads=2, workers="processes")
        except BaseException as e:  # noqa: BLE001 - the test looks at it
            errors.append(e)

    me = psutil.Process()
    before = {c.pid for c in me.children(recursive=True)}
    worker = threading.Thread(target=run)
    worker.start()
    victim = None
    while worker.is_alive() and victim is None:  # the first worker process the run starts
        new = [c for c in me.children(recursive=True) if c.pid not in before and _is_pool_worker(c)]
        victim = new[-1] if new else None
        worker.join(0.05)
    assert victim is not None, "the run ended before a worker could be stopped"
    os.kill(victim.pid, signal.SIGKILL)
    worker.join(120)
    assert not worker.is_alive()
    assert len(errors) == 1 and isinstance(errors[0], RuntimeError)
    assert "worker process died" in str(errors[0]) and "big.txt" in str(errors[0])
