"""Text through the byte alphabet: UTF-8 bytes, regex pieces, special tokens (docs/text.md).

A :class:`TextTokenizer` is a :class:`~ubpe.Tokenizer` over ``Alphabet(256)`` (byte ``b`` has id
``b``) with a text front end:

1. special tokens (``"<|endoftext|>"``) are cut out of the text first; they get the ids after the
   merged tokens and are never merged;
2. the rest is optionally Unicode-normalised (NFC, NFD, NFKC, NFKD);
3. a regex cuts it into pieces (the GPT-2 or GPT-4 split pattern, a pattern of your own, or
   none); no merge ever crosses a piece;
4. each piece is encoded as UTF-8 (lone surrogates as their 3-byte form, ``surrogatepass``) and
   replayed through the merges.

Merged tokens are numbered in merge order (id ``256 + k`` for merge ``k``), not by idf as a plain
:class:`~ubpe.Tokenizer` numbers them: id order is then a merge order, which is what Hugging Face
``tokenizers`` and ``tiktoken`` take as ranks, so :meth:`TextTokenizer.export_hf` and
:meth:`TextTokenizer.export_tiktoken` encode to the same ids.
"""

from __future__ import annotations

import base64
import json
import os
import unicodedata
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping
from typing import Any

import msgpack
import numpy as np

from . import encoder
from . import text_corpus as _corpus
from . import text_engine as _engine
from ._validate import check_ids, check_int, expect_map, field_bytes, short
from .alphabet import Alphabet
from .errors import CorruptDataError, NotFittedError, UBPEError
from .format.sealed import open_sealed, seal, unpack
from .text_corpus import DEFAULT_CHUNK_SIZE, DEFAULT_MAX_WORDS, FORMATS, WordCounts
from .text_engine import EncodedBatch
from .tokenizer import MAX_TOKENS, Tokenizer

__all__ = ["PATTERNS", "NORMALIZATIONS", "TextTokenizer", "EncodedBatch", "WordCounts", "UntrustedPatternError",
           "bytes_to_unicode"]

#: Named split patterns. "gpt2": GPT-2's (openai/gpt-2 encoder.py); "gpt4": cl100k_base's, as
#: minbpe spells it (possessive quantifiers; needs the ``regex`` package, as tiktoken and
#: Hugging Face's onig engine read it the same way).
PATTERNS = {
    "gpt2": r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+""",
    "gpt4": r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]++[\r\n]*|\s*[\r\n]|\s+(?!\S)|\s+""",
}
NORMALIZATIONS = ("NFC", "NFD", "NFKC", "NFKD")
#: Limits on special tokens (a tokenizer file is code, :meth:`TextTokenizer.from_bytes`): their
#: number, the characters of one, and their UTF-8 bytes together (the matcher's trie has a node
#: per byte). Hugging Face's and tiktoken's files hold at most a few thousand special tokens of
#: a few dozen characters.
MAX_SPECIAL_TOKENS = 1 << 14
MAX_SPECIAL_LENGTH = 256
MAX_SPECIAL_BYTES = 1 << 20
TEXT_FORMAT_VERSION = 1
TEXT_MAGIC = "ubpe.text"
_WHERE = "text tokenizer"
_FIELDS = ("pattern", "normalize", "special_tokens", "tokenizer")
_OPTIONAL_FIELDS = ("max_token_length",)
#: ``encode(allowed_special=...)`` value: no special token allowed, and one found raises (tiktoken's default)
NONE_RAISED = "none_raised"
_MIN_CHARS_PER_THREAD = 1 << 16  # encode_batch(num_threads=None): a thread per this many characters at most
_MIN_IDS_PER_THREAD = 1 << 16  # decode_batch(num_threads=None): a thread per this many ids at most
# decode_batch's ranges a thread, the last of each thread 2/3 the size of the first: each range
# of a helper costs a hand-over of the GIL, and the last ranges' str building ends the call
# (measured on 2 threads: docs/text.md)
_DECODE_RANGES_PER_THREAD = 2
_DECODE_TAPER = 2 / 3
_WORKERS = ("threads", "processes")


def _check_threads(n: Any) -> int:
    return check_int("num_threads", n, 1, 1024)


def _check_workers(w: Any) -> str:
    if w not in _WORKERS:
        raise ValueError(f"workers must be 'threads' or 'processes', got {w!r}")
    return w


def _check_chunk(n: Any) -> int:
    return check_int("chunk_size", n, 1 << 10, 1 << 34)


def _check_max_words(n: Any) -> int | None:
    return None if n is None else check_int("max_words", n, 2)


def _check_dropout(p: Any, seed: Any) -> tuple[int, int]:
    """The kernel's dropout threshold (p * 2**53) and a seed (a fresh one when None)."""
    if isinstance(p, bool) or not isinstance(p, (int, float, np.integer, np.floating)):
        raise TypeError(f"dropout must be a number in [0, 1), got {type(p).__name__}")
    if not 0.0 <= float(p) < 1.0:
        raise ValueError(f"dropout must be in [0, 1), got {p!r}")
    if seed is None:
        seed = int.from_bytes(os.urandom(8), "little") if p else 0
    elif isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
        raise TypeError(f"seed must be an int or None, got {type(seed).__name__}")
    return int(float(p) * (1 << 53)), int(seed)


def bytes_to_unicode() -> dict[int, str]:
    """GPT-2's byte -> printable character map (byte-level BPE's vocabulary spelling).

    Printable Latin-1 bytes map to themselves; the 68 others to ``chr(256 + i)`` in byte order.
    """
    keep = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    out, extra = {}, 0
    for b in range(256):
        if b in keep:
            out[b] = chr(b)
        else:
            out[b] = chr(256 + extra)
            extra += 1
    return out


def _compile(pattern: str) -> Any:
    import regex

    try:
        return regex.compile(pattern)
    except regex.error as e:
        raise ValueError(f"pattern does not compile: {e}") from None


def _special_set(name: str, value: Any, known: frozenset, expected: str) -> frozenset:
    """``value`` ("all", or a collection of special tokens) as a set; ``ValueError`` for other
    strings or unknown tokens, ``TypeError`` for other types. ``expected`` words the message."""
    if isinstance(value, str):
        if value != "all":
            raise ValueError(f"{name} must be {expected} special tokens, got {value!r}")
        return known
    if not isinstance(value, Collection):
        raise TypeError(f"{name} must be {expected} str, got {type(value).__name__}")
    out = frozenset(value)
    unknown = sorted(map(repr, out - known))
    if unknown:
        raise ValueError(f"{name} names tokens that are not special tokens: {', '.join(unknown)}")
    return out


class TextTokenizer:
    """Byte-level BPE for text: UTF-8 bytes as the alphabet, regex pieces, special tokens.

    Parameters
    ----------
    n_tokens : int
        Bytes plus merged tokens (``>= 256``); special tokens come on top.
    pattern : {"gpt4", "gpt2"}, str or None, default "gpt4"
        Split pattern (``regex`` syntax): a name of :data:`PATTERNS` or a pattern of your own.
        Text between matches is kept as pieces too (Hugging Face's "isolated" split), so nothing
        is lost; ``None`` makes every text (between special tokens) one piece.
    normalize : {"NFC", "NFD", "NFKC", "NFKD"} or None, default None
        Unicode normalisation applied to text before splitting (special tokens excluded).
    special_tokens : collection of str, default ()
        Strings with ids of their own, :attr:`n_bpe` ``+ i`` in the order given; never merged,
        matched before splitting (longest first where they overlap).
    n_candidates : int, default 1
        Pairs merged per training batch; 1 is classic BPE (:class:`~ubpe.Tokenizer`). On text,
        1 gives about 12 % fewer tokens at no cost in time (docs/text.md, "How it compares").
    min_count : int, default 2
        Pairs seen fewer times are never merged.
    max_token_length : int or None, default None
        Training never makes a token longer than this many bytes (for text without a split
        pattern: DNA, logs, code); None for no limit. Encoding is not affected.

    Examples
    --------
    >>> tok = TextTokenizer(260, special_tokens=["<|eot|>"]).fit("the cat sat on the mat " * 20)
    >>> ids = tok.encode("the cat<|eot|>", allowed_special="all")
    >>> tok.decode(ids)
    'the cat<|eot|>'
    >>> int(ids[-1]) == tok.special_ids["<|eot|>"]
    True
    """

    def __init__(
        self,
        n_tokens: int,
        *,
        pattern: str | None = "gpt4",
        normalize: str | None = None,
        special_tokens: Iterable[str] = (),
        n_candidates: int = 1,
        min_count: int = 2,
        max_token_length: int | None = None,
    ) -> None:
        self.n_tokens = check_int("n_tokens", n_tokens, 256, MAX_TOKENS)
        self.max_token_length = None if max_token_length is None else check_int(
            "max_token_length", max_token_length, 2, 1 << 30)
        self.n_candidates = check_int("n_candidates", n_candidates, 1, 1 << 20)
        self.min_count = check_int("min_count", min_count, 1)
        if pattern is not None and not isinstance(pattern, str):
            raise TypeError(f"pattern must be a str or None, got {type(pattern).__name__}")
        self.pattern: str | None = PATTERNS.get(pattern, pattern) if pattern is not None else None
        if self.pattern == "":
            raise ValueError("pattern must not be empty: pass pattern=None for no splitting")
        self._split_re = _compile(self.pattern) if self.pattern is not None else None
        self._mode = _engine.pattern_mode(self.pattern, PATTERNS)
        if normalize is not None and not isinstance(normalize, str):
            raise TypeError(f"normalize must be a str or None, got {type(normalize).__name__}")
        if normalize is not None and normalize not in NORMALIZATIONS:
            raise ValueError(f"normalize must be one of {', '.join(map(repr, NORMALIZATIONS))} or None, got {normalize!r}")
        self.normalize: str | None = normalize
        if isinstance(special_tokens, str):
            raise TypeError("special_tokens must be a collection of str, got a str (wrap it in a list)")
        specials = list(special_tokens)
        for s in specials:
            if not isinstance(s, str):
                raise TypeError(f"special tokens must be str, got {type(s).__name__} {s!r}")
            if not s:
                raise ValueError("a special token must not be empty")
        if len(specials) > MAX_SPECIAL_TOKENS:
            raise ValueError(f"at most {MAX_SPECIAL_TOKENS} special tokens are allowed, got {len(specials)}")
        long = next((s for s in specials if len(s) > MAX_SPECIAL_LENGTH), None)
        if long is not None:
            raise ValueError(f"a special token must have at most {MAX_SPECIAL_LENGTH} characters, got one of "
                             f"{len(long)}: {short(long)}")
        total = sum(len(s.encode("utf-8", "surrogatepass")) for s in specials)
        if total > MAX_SPECIAL_BYTES:
            raise ValueError(f"special tokens may take at most {MAX_SPECIAL_BYTES} UTF-8 bytes together, got {total}")
        if len(set(specials)) != len(specials):
            raise ValueError(f"special_tokens must be distinct, got {short(specials)}")
        self.special_tokens: tuple[str, ...] = tuple(specials)
        self._tok: Tokenizer | None = None
        self._special_re_cache: dict[Any, Any] = {}
        self._engine_cache: _engine.Engine | None = None

    # ==================== properties

    def _require(self) -> Tokenizer:
        if self._tok is None:
            raise NotFittedError("this TextTokenizer is not fitted yet: call fit(texts) or TextTokenizer.load(path)")
        return self._tok

    @property
    def is_fitted(self) -> bool:
        return self._tok is not None

    @property
    def tokenizer(self) -> Tokenizer:
        """The byte-level :class:`~ubpe.Tokenizer` (its public ids are this tokenizer's ids)."""
        return self._require()

    @property
    def n_bpe(self) -> int:
        """Bytes plus merged tokens: 256 + merges; the first special token's id."""
        return self._require().vocab_size

    @property
    def vocab_size(self) -> int:
        """Every id: bytes, merged tokens and special tokens (ids are ``0 .. vocab_size - 1``)."""
        return self.n_bpe + len(self.special_tokens)

    def __len__(self) -> int:
        return self.vocab_size

    @property
    def special_ids(self) -> dict[str, int]:
        """Special token -> its id."""
        n = self.n_bpe
        return {s: n + i for i, s in enumerate(self.special_tokens)}

    def token_bytes(self, token: int) -> bytes:
        """The bytes id ``token`` stands for (a special token's UTF-8)."""
        token = check_int("token", token, 0, self.vocab_size - 1)
        return self.decode_bytes([token])

    # ==================== text front end

    def _special_matcher(self, tokens: frozenset) -> _engine.SpecialMatcher:
        """The matcher of ``tokens`` (a subset of the special tokens), values their ids (built once)."""
        if tokens not in self._special_re_cache:
            n = self.n_bpe if self._tok is not None else 0
            ids = {s: n + i for i, s in enumerate(self.special_tokens)}
            ordered = sorted(tokens, key=lambda s: ids[s])
            self._special_re_cache[tokens] = _engine.SpecialMatcher(ordered, [ids[s] for s in ordered])
        return self._special_re_cache[tokens]

    def _find_specials(self, text: str, tokens: frozenset) -> list[tuple[int, int, int]]:
        """``(start, end, id)`` in characters of every special token of ``tokens`` in ``text``
        (the longest at each place, left to right)."""
        raw = text.encode("utf-8", "surrogatepass")
        buf = np.frombuffer(raw, dtype=np.uint8)
        hits = self._special_matcher(tokens).find(buf, np.zeros(1, dtype=np.int64),
                                                  np.array([buf.shape[0]], dtype=np.int64))
        if not hits.shape[0]:
            return []
        co = _engine.char_offsets(buf)
        return [(int(co[a]), int(co[b]), v) for a, b, v, _ in hits.tolist()]

    def _cut_specials(self, text: str, allowed: frozenset) -> list[str | int]:
        """``text`` as ordinary segments (str) and special-token ids (int), in order."""
        if not allowed:
            return [text]
        out: list[str | int] = []
        start = 0
        for a, b, sid in self._find_specials(text, allowed):
            if a > start:
                out.append(text[start:a])
            out.append(sid)
            start = b
        if start < len(text):
            out.append(text[start:])
        return out

    def pieces(self, text: str) -> list[str]:
        """The pieces ordinary ``text`` (no special tokens) is cut into, after normalisation.

        Their concatenation is the normalised text: text between two matches of the pattern is
        a piece too, and empty matches are dropped.
        """
        if not isinstance(text, str):
            raise TypeError(f"text must be a str, got {type(text).__name__}")
        if self.normalize is not None:
            text = unicodedata.normalize(self.normalize, text)
        if self._split_re is None:
            return [text] if text else []
        if self._split_re.groups == 0:  # findall gives whole matches: the fast path, when they cover the text
            found = self._split_re.findall(text)
            if sum(map(len, found)) == len(text):  # non-overlapping, in order: they tile the text
                return [p for p in found if p]
        out, start = [], 0
        for m in self._split_re.finditer(text):
            if m.start() == m.end():
                continue
            if m.start() > start:
                out.append(text[start : m.start()])
            out.append(m.group())
            start = m.end()
        if start < len(text):
            out.append(text[start:])
        return out

    # ==================== training

    def _spec(self, fmt: str = "text", field: str | None = None,
              chunk_size: int = DEFAULT_CHUNK_SIZE) -> _corpus.Spec:
        return _corpus.Spec(self._mode, self.pattern, self.special_tokens, self.normalize, fmt, field, chunk_size)

    def count_words(self, texts: str | Iterable[str], *, max_words: int | None = None, num_threads: int = 1,
                    workers: str = "threads", chunk_size: int = DEFAULT_CHUNK_SIZE,
                    progress: bool = False) -> WordCounts:
        """The distinct pieces of ``texts`` (one str or an iterable of str, read once) and their
        counts, special tokens cut out, after normalisation: what :meth:`fit` trains on.

        Counted in blocks of about ``chunk_size`` bytes on ``num_threads`` threads (``workers=
        "threads"``) or processes (``"processes"``), in bounded memory when ``max_words`` is set
        (at most that many distinct words kept; ``ubpe.text_corpus``, docs/text.md). The result
        does not depend on ``num_threads`` or ``workers``.
        """
        return _corpus.count(self._spec(chunk_size=_check_chunk(chunk_size)), texts=texts,
                             max_words=_check_max_words(max_words), num_threads=_check_threads(num_threads),
                             workers=_check_workers(workers), progress=progress)

    def count_files(self, paths: str | os.PathLike | Iterable[str | os.PathLike], *, format: str = "text",
                    field: str | None = None, max_words: int | None = DEFAULT_MAX_WORDS,
                    num_threads: int | None = None, workers: str = "threads",
                    chunk_size: int = DEFAULT_CHUNK_SIZE, progress: bool = False) -> WordCounts:
        """:meth:`count_words` of files, each read once in ``chunk_size`` blocks.

        ``format``: ``"text"`` (UTF-8; with the GPT-2 or GPT-4 pattern a file is one text, else
        each line is one), ``"jsonl"`` (one JSON object a line; the str ``field`` of each is a
        text) or ``"parquet"`` (the str column ``field``; needs ``pyarrow``). ``num_threads``
        None: every core. ``CorruptDataError`` names the file and byte offset of bytes that are
        not UTF-8 or a line that is not JSON with that field.
        """
        if not isinstance(format, str) or format not in FORMATS:
            raise ValueError(f"format must be one of {', '.join(map(repr, FORMATS))}, got {format!r}")
        if format != "text" and not isinstance(field, str):
            raise TypeError(f"format={format!r} needs field= (the name of the text field), got {field!r}")
        if format == "text" and field is not None:
            raise ValueError("field= applies to the jsonl and parquet formats only")
        spec = self._spec(format, field, _check_chunk(chunk_size))
        tasks = _corpus.file_tasks(paths, spec)
        threads = os.cpu_count() or 1 if num_threads is None else _check_threads(num_threads)
        return _corpus.count(spec, tasks=tasks, max_words=_check_max_words(max_words), num_threads=threads,
                             workers=_check_workers(workers), progress=progress)

    def fit(self, texts: str | Iterable[str], *, progress: bool = False, max_words: int | None = None,
            num_threads: int = 1, workers: str = "threads") -> TextTokenizer:
        """Learn the merges from ``texts`` (one str or an iterable of str, read once); return ``self``.

        Special tokens found in the texts are cut out (never learnt). Each distinct piece is
        trained once with its number of occurrences (word-frequency training): the model equals
        training on every occurrence of every piece as its own document, at the cost of the
        distinct pieces. :meth:`count_words` does the counting (``max_words``, ``num_threads``,
        ``workers`` are its arguments). Raises ``TypeError`` for non-str texts, ``ValueError``
        when there is no text at all.
        """
        counts = self.count_words(texts, max_words=max_words, num_threads=num_threads, workers=workers)
        return self.fit_word_counts(counts, progress=progress)

    def fit_files(self, paths: str | os.PathLike | Iterable[str | os.PathLike], *, format: str = "text",
                  field: str | None = None, max_words: int | None = DEFAULT_MAX_WORDS,
                  num_threads: int | None = None, workers: str = "threads", chunk_size: int = DEFAULT_CHUNK_SIZE,
                  progress: bool = False) -> TextTokenizer:
        """Learn the merges from files (:meth:`count_files`, then :meth:`fit_word_counts`);
        return ``self``. Memory is bounded by ``max_words`` and the blocks in flight, not by the
        size of the corpus."""
        counts = self.count_files(paths, format=format, field=field, max_words=max_words, num_threads=num_threads,
                                  workers=workers, chunk_size=chunk_size, progress=progress)
        return self.fit_word_counts(counts, progress=progress)

    def fit_word_counts(self, counts: WordCounts | Mapping[str, int], *, progress: bool = False) -> TextTokenizer:
        """Learn the merges from words and their counts (:class:`WordCounts`, or ``{word:
        count}``; each word is one piece: it is not split or normalised again); return ``self``.
        The model equals training on every occurrence of every word as its own document."""
        if not isinstance(counts, WordCounts):
            counts = WordCounts.from_mapping(counts)
        if not len(counts) or counts.data.shape[0] == 0:
            raise ValueError("texts hold no text: fit needs at least one character outside special tokens")
        ids = counts.data.astype(np.int32)
        weights = np.asarray(counts.counts, dtype=np.int64)
        tok = Tokenizer(Alphabet(256), self.n_tokens, n_candidates=self.n_candidates, min_count=self.min_count)
        tok._fit_ids(ids, np.asarray(counts.bounds, dtype=np.int64), Alphabet(256), np.dtype(np.uint8),
                     weights=weights, n_docs=int(weights.sum()), progress=progress, token_ids="priority",
                     max_token_length=self.max_token_length)
        self._set_tokenizer(tok)
        return self

    # ==================== encoding

    def _allowed(self, allowed_special: Any, disallowed_special: Any) -> tuple[frozenset, frozenset]:
        known = frozenset(self.special_tokens)
        if allowed_special == NONE_RAISED:
            allowed: frozenset = frozenset()
        else:
            allowed = _special_set("allowed_special", allowed_special, known, f"'all', {NONE_RAISED!r} or a set of")
        if disallowed_special == "all":
            disallowed = known - allowed
        else:
            disallowed = _special_set("disallowed_special", disallowed_special, known, "'all' or a collection of")
        return allowed, disallowed - allowed

    def _check_disallowed(self, text: str, disallowed: frozenset) -> None:
        if not disallowed:
            return
        found = self._find_specials(text, disallowed)
        if found:
            a, b, _ = found[0]
            self._refuse_special(text[a:b], a)

    @staticmethod
    def _refuse_special(token: str, at: int) -> None:
        raise ValueError(
            f"the text holds the special token {token!r} at character {at}: pass "
            f"allowed_special={{{token!r}}} (or 'all') to encode it as that token, or "
            f"disallowed_special=() to encode it as ordinary text"
        )

    def _engine(self) -> _engine.Engine:
        tok = self._require()
        if self._engine_cache is None:
            self._engine_cache = _engine.Engine(tok.merges, self.special_tokens, tok.model.expansion())
        return self._engine_cache

    def _run(self, texts: Any, allowed_special: Any, disallowed_special: Any, offsets: str | None,
             dropout: float, seed: int | None, num_threads: int | None,
             split: bool = False) -> EncodedBatch | list[np.ndarray]:
        """Encode a list of texts into one :class:`EncodedBatch` (threads over contiguous ranges),
        or with ``split`` into one int32 array a text (each range's cut in the calling thread
        as its encoding ends, with no joined copy)."""
        eng = self._engine()
        if isinstance(texts, str):
            raise TypeError("texts must be an iterable of str, got a str: use encode() for one text")
        if not isinstance(texts, (list, tuple)):
            texts = list(texts)
        allowed, disallowed = self._allowed(allowed_special, disallowed_special)
        if offsets not in (None, "char", "byte"):
            raise ValueError(f"offsets must be None, 'char' or 'byte', got {offsets!r}")
        drop, seed = _check_dropout(dropout, seed)
        sizes = None
        if num_threads is None:
            sizes = np.fromiter((len(t) if isinstance(t, str) else 0 for t in texts), dtype=np.int64, count=len(texts))
            threads = max(1, min(os.cpu_count() or 1, int(sizes.sum()) // _MIN_CHARS_PER_THREAD))
        else:
            threads = _check_threads(num_threads)
        if threads > 1 and sizes is None:
            sizes = np.fromiter((len(t) if isinstance(t, str) else 0 for t in texts), dtype=np.int64, count=len(texts))

        def work(a: int, b: int) -> tuple:
            return _engine.encode_texts(self, eng, texts[a:b], a, allowed, disallowed, offsets, drop, seed)

        if split:
            out: list[np.ndarray] = []
            for views in _engine.run_threads(len(texts), sizes, threads, work, _engine.split_part):
                out += views
            return out
        parts = _engine.run_threads(len(texts), sizes, threads, work)
        return EncodedBatch._join(parts, offsets)

    def encode(self, text: str, *, allowed_special: Any = NONE_RAISED, disallowed_special: Any = "all",
               dropout: float = 0.0, seed: int | None = None) -> np.ndarray:
        """Token ids (int32, 1-D) of ``text``; ``decode`` gives ``text`` back (normalised, if asked).

        Special tokens follow tiktoken: those in ``allowed_special`` (``"all"``, a set, or
        ``"none_raised"`` for none) become their ids; any other special token found in the text
        raises ``ValueError`` when it is in ``disallowed_special`` (``"all"``: every special
        token not allowed) and is otherwise encoded as ordinary text.

        ``dropout`` (BPE-dropout, Provilkov et al. 2020): skip each merge about to be applied
        with this probability (a skipped merge comes back after the next one applied), drawing
        from ``seed`` (an int; None: a fresh one): 0 gives :meth:`encode`'s ids, the same seed the
        same ids, and :meth:`decode` gives the text back from any of them.
        """
        eng = self._engine_cache  # None until the first call (which takes the general path)
        if (eng is not None and type(text) is str and allowed_special is NONE_RAISED and dropout == 0
                and type(disallowed_special) is str and disallowed_special == "all" and self.normalize is None
                and self._mode != _engine.MODE_GIVEN):
            # the common call, one compiled call (every special token refused): no batch machinery
            ids = eng.encode_text(text.encode("utf-8", "surrogatepass"), self._mode)
            if ids is not None:
                return ids
            # it holds a special token: the general path raises, naming it
        if not isinstance(text, str):
            raise TypeError(f"text must be a str, got {type(text).__name__}")
        return self._run([text], allowed_special, disallowed_special, None, dropout, seed, 1).ids

    def encode_with_offsets(self, text: str, *, offsets: str = "char", allowed_special: Any = NONE_RAISED,
                            disallowed_special: Any = "all", dropout: float = 0.0,
                            seed: int | None = None) -> tuple[np.ndarray, np.ndarray]:
        """``(ids, spans)``: :meth:`encode`'s ids and int64 ``(n, 2)`` ``[start, end)`` of each
        token in ``text`` (normalised, if the tokenizer normalises), in characters (``offsets=
        "char"``) or UTF-8 bytes (``"byte"``).

        The spans tile the text: ``"".join(text[s:e] for s, e in spans) == text``. A character
        whose bytes are split over several tokens belongs to the token holding its *last* byte
        (which is when :meth:`decode_stream` yields it); the tokens before hold an empty span at
        its start.
        """
        if not isinstance(text, str):
            raise TypeError(f"text must be a str, got {type(text).__name__}")
        if offsets not in ("char", "byte"):
            raise ValueError(f"offsets must be 'char' or 'byte', got {offsets!r}")
        batch = self._run([text], allowed_special, disallowed_special, offsets, dropout, seed, 1)
        return batch.ids, batch.offsets

    def encode_batch(self, texts: Iterable[str], *, allowed_special: Any = NONE_RAISED, disallowed_special: Any = "all",
                     num_threads: int | None = None, arrays: bool = False, offsets: str | None = None,
                     dropout: float = 0.0, seed: int | None = None) -> list[np.ndarray] | EncodedBatch:
        """:meth:`encode` of every text: a list of int32 arrays, or with ``arrays=True`` one
        :class:`EncodedBatch` (flat ids, bounds, and ``offsets`` "char" / "byte" spans as
        :meth:`encode_with_offsets` gives them, when asked).

        ``num_threads`` threads encode contiguous ranges of the texts (None: every core, one per
        64 K characters at most); the ids never depend on it. With ``dropout``, text ``i`` draws
        from ``seed`` and ``i``.
        """
        if not arrays and offsets is not None:
            raise ValueError("offsets= needs arrays=True (or use encode_with_offsets)")
        return self._run(texts, allowed_special, disallowed_special, offsets, dropout, seed, num_threads,
                         split=not arrays)

    @staticmethod
    def _encode_pieces(tok: Tokenizer, pieces: list[str]) -> tuple[np.ndarray, np.ndarray]:
        """Replay-encode ``pieces`` with the tokenizer core: ``(bounds, tokens)``, piece k's tokens
        ``tokens[bounds[k]:bounds[k+1]]`` (the reference the compiled path is tested against)."""
        chunks = [p.encode("utf-8", "surrogatepass") for p in pieces]
        bounds = np.zeros(len(chunks) + 1, dtype=np.int64)
        np.cumsum([len(c) for c in chunks], out=bounds[1:])
        ids = np.frombuffer(b"".join(chunks), dtype=np.uint8).astype(np.int32)
        if not ids.size:
            return np.zeros(len(chunks) + 1, dtype=np.int64), np.zeros(1, dtype=np.int32)
        out, out_bounds, bad = encoder._encode_concatenated(ids, bounds, tok.model.encoder_tables())
        if bad >= 0:  # pragma: no cover - bytes are always in the alphabet
            raise RuntimeError("byte outside the byte alphabet")
        out_bounds = np.asarray(out_bounds, dtype=np.int64)
        return out_bounds, tok.token_ids[out[: int(out_bounds[-1])]]

    # ==================== decoding

    def _check_ids(self, ids: Any) -> np.ndarray:
        return check_ids(ids, self.vocab_size, "ids", np.int64)

    def decode_bytes(self, ids: Any) -> bytes:
        """The bytes of a token sequence (special tokens as their UTF-8)."""
        tok = self._require()
        arr = self._check_ids(ids)
        if arr.size == 0:
            return b""
        eng = self._engine()
        if eng.flat is not None:
            data, _ = eng.decode_flat(arr, np.array([0, arr.shape[0]], dtype=np.int64))
            return data.tobytes()
        n = self.n_bpe
        special = np.flatnonzero(arr >= n)
        if not special.size:
            return tok.decode(arr, dtype=np.uint8).tobytes()
        parts, start = [], 0
        for k in special.tolist():
            if k > start:
                parts.append(tok.decode(arr[start:k], dtype=np.uint8).tobytes())
            parts.append(self.special_tokens[int(arr[k]) - n].encode("utf-8", "surrogatepass"))
            start = k + 1
        if start < arr.size:
            parts.append(tok.decode(arr[start:], dtype=np.uint8).tobytes())
        return b"".join(parts)

    def decode(self, ids: Any, errors: str = "replace") -> str:
        """The text of a token sequence. ``errors`` is that of ``bytes.decode``: ``"replace"``
        (default) turns bytes that are not UTF-8 (a token sequence cut inside a character, a
        lone surrogate) into U+FFFD; ``"surrogatepass"`` gives back any encoded str exactly,
        lone surrogates included; ``"strict"`` raises ``UnicodeDecodeError``."""
        if not isinstance(errors, str):
            raise TypeError(f"errors must be a str, got {type(errors).__name__}")
        return self.decode_bytes(ids).decode("utf-8", errors)

    def decode_batch(self, batch: EncodedBatch | Iterable[Any], *, errors: str = "replace",
                     num_threads: int | None = None) -> list[str]:
        """:meth:`decode` of every id sequence (an :class:`EncodedBatch`, or an iterable of id
        sequences), on ``num_threads`` threads (None: every core, when the batch is large)."""
        if not isinstance(errors, str):
            raise TypeError(f"errors must be a str, got {type(errors).__name__}")
        if isinstance(batch, EncodedBatch):
            ids, bounds = np.asarray(batch.ids), np.asarray(batch.bounds, dtype=np.int64)
            if ids.dtype.kind not in "iu" or ids.ndim != 1:
                raise TypeError(f"the batch's ids must be a 1-D integer array, got {ids.dtype} {ids.shape}")
            if ids.dtype not in (np.int32, np.int64):
                ids = ids.astype(np.int64)  # the kernels check the range (in the threads)
            if bounds.ndim != 1 or bounds.size < 1 or bounds[0] != 0 or bounds[-1] != ids.shape[0] \
                    or (np.diff(bounds) < 0).any():
                raise ValueError("the batch's bounds must rise from 0 to the number of ids")
        else:
            if isinstance(batch, (str, bytes)):
                raise TypeError("batch must be an EncodedBatch or an iterable of id sequences")
            seqs = [self._check_ids(s) for s in batch]
            bounds = np.zeros(len(seqs) + 1, dtype=np.int64)
            np.cumsum([s.shape[0] for s in seqs], out=bounds[1:])
            ids = np.concatenate(seqs) if seqs else np.zeros(0, dtype=np.int64)
        n = bounds.shape[0] - 1
        eng = self._engine()
        if eng.flat is None:
            self._check_ids(ids)
            return [self.decode(ids[bounds[i]:bounds[i + 1]], errors) for i in range(n)]
        if num_threads is None:
            threads = max(1, min(os.cpu_count() or 1, int(ids.shape[0]) // _MIN_IDS_PER_THREAD))
        else:
            threads = _check_threads(num_threads)

        def work(a: int, b: int, ended: np.ndarray) -> tuple[np.ndarray, np.ndarray]:  # compiled: on every thread
            return eng.decode_flat(ids, bounds[a:b + 1], ended)

        def finish(flat: tuple[np.ndarray, np.ndarray], pause: Callable[[], None]) -> list[str]:  # holds the GIL
            return _engine.texts_of(flat, errors, pause)

        out: list[str] = []
        for part in _engine.run_threads(n, np.diff(bounds), threads, work, finish,
                                        per_thread=_DECODE_RANGES_PER_THREAD, handover=True,
                                        taper=_DECODE_TAPER):
            out += part
        return out

    def decode_stream(self, ids: Iterable[Any], *, errors: str = "replace") -> Iterator[str]:
        """Decode ids as they arrive: yield, for each id, the text it completes (``""`` while a
        character's bytes are still incomplete), never a part of a character. Joined, the
        pieces are :meth:`decode` of all the ids; for ids from :meth:`encode_with_offsets`,
        piece ``i`` is ``text[start_i:end_i]``. Bytes left incomplete at the end are decoded by
        ``errors`` in a last piece."""
        import codecs

        if not isinstance(errors, str):
            raise TypeError(f"errors must be a str, got {type(errors).__name__}")
        self._require()
        decoder = codecs.getincrementaldecoder("utf-8")(errors)
        strings = self._token_byte_list()
        n = len(strings)
        for i, t in enumerate(ids):
            if isinstance(t, (bool, np.bool_)) or not isinstance(t, (int, np.integer)):
                raise TypeError(f"ids must be integers, got {type(t).__name__} at position {i}")
            if not 0 <= t < n:
                raise ValueError(f"token id {int(t)} at position {i} is out of range: ids are in [0, {n})")
            yield decoder.decode(strings[int(t)])
        tail = decoder.decode(b"", final=True)
        if tail:
            yield tail

    def _token_byte_list(self) -> list[bytes]:
        """The bytes of every id (special tokens included), by id (built once)."""
        eng = self._engine()
        if getattr(eng, "byte_list", None) is None:
            ids = np.arange(self.vocab_size, dtype=np.int64)
            raw = self.decode_bytes(ids)
            ends = np.cumsum(eng.tok_len).tolist()
            eng.byte_list = [raw[e - n:e] for e, n in zip(ends, eng.tok_len.tolist())]
        return eng.byte_list

    # ==================== serialization

    def to_bytes(self) -> bytes:
        """The tokenizer as msgpack bytes (docs/text.md): front end plus the byte tokenizer's model
        bytes, under a SHA-256. Equal tokenizers give equal bytes."""
        fields = {"pattern": self.pattern, "normalize": self.normalize, "special_tokens": list(self.special_tokens),
                  "tokenizer": self._require().to_bytes()}
        if self.max_token_length is not None:  # written only when set: older files stay byte-identical
            fields["max_token_length"] = self.max_token_length
        body = msgpack.packb(fields, use_bin_type=True)
        return seal(TEXT_MAGIC, TEXT_FORMAT_VERSION, body)

    @classmethod
    def from_bytes(cls, data: bytes | bytearray | memoryview, *, trust_pattern: bool = False) -> TextTokenizer:
        """Inverse of :meth:`to_bytes`; ``CorruptDataError`` for anything malformed.

        A tokenizer file is code: its split pattern runs on every text encoded, and a pattern
        such as ``(a|aa)+$`` takes exponential time. A pattern that is not one of
        :data:`PATTERNS` (or None) is refused with ``ValueError`` unless ``trust_pattern=True``
        (for files you made or trust): :class:`UntrustedPatternError`. Special tokens are bounded in number
        (:data:`MAX_SPECIAL_TOKENS`) and length (:data:`MAX_SPECIAL_LENGTH` characters).
        """
        _, body = open_sealed(data, TEXT_MAGIC, TEXT_FORMAT_VERSION, _WHERE)
        f = expect_map(unpack(body, _WHERE), _WHERE, _FIELDS, _OPTIONAL_FIELDS)
        _check_trusted_pattern(f["pattern"], trust_pattern, _WHERE)
        tok = _check_byte_tokenizer(Tokenizer.from_bytes(field_bytes(f, "tokenizer", where=_WHERE)))
        specials = f["special_tokens"]
        if not isinstance(specials, list):
            raise CorruptDataError(f"{_WHERE}: 'special_tokens' must be a list, got {short(specials)}")
        try:
            out = cls(tok.n_tokens, pattern=f["pattern"], normalize=f["normalize"], special_tokens=specials,
                      n_candidates=tok.n_candidates, min_count=tok.min_count,
                      max_token_length=f.get("max_token_length"))
        except (TypeError, ValueError) as e:
            raise CorruptDataError(f"{_WHERE}: invalid parameters: {e}") from None
        out._set_tokenizer(tok)
        return out

    def _set_tokenizer(self, tok: Tokenizer) -> None:
        self._tok = _check_byte_tokenizer(tok)
        self._engine_cache = None

    def save(self, path: str | os.PathLike) -> None:
        """Write :meth:`to_bytes` to ``path`` atomically."""
        from .io.atomic import write_atomic

        write_atomic(path, self.to_bytes(), overwrite=True)

    @classmethod
    def load(cls, path: str | os.PathLike, *, trust_pattern: bool = False) -> TextTokenizer:
        """Read a tokenizer written by :meth:`save` (``trust_pattern``: see :meth:`from_bytes`)."""
        with open(path, "rb") as f:
            return cls.from_bytes(f.read(), trust_pattern=trust_pattern)

    # ==================== interoperability

    def _token_strings(self) -> list[bytes]:
        """The bytes of every byte and merged token, by id; ``ValueError`` if two are equal
        (neither Hugging Face nor tiktoken can give two ids to the same bytes)."""
        tok = self._require()
        table = tok.model.expansion()
        ids = np.arange(tok.vocab_size, dtype=np.int32)
        flat = encoder.decode(ids, table)
        ends = np.cumsum(table.lengths[: tok.vocab_size])
        raw = flat.astype(np.uint8).tobytes()
        out = [raw[e - n : e] for e, n in zip(ends.tolist(), table.lengths[: tok.vocab_size].tolist())]
        seen: dict[bytes, int] = {}
        for i, b in enumerate(out):
            if b in seen:
                raise ValueError(f"tokens {seen[b]} and {i} both stand for {b!r}: Hugging Face and tiktoken "
                                 f"give one id to a byte string, so this vocabulary cannot be exported")
            seen[b] = i
        return out

    def hf_json(self) -> dict[str, Any]:
        """The Hugging Face ``tokenizer.json`` of :meth:`export_hf`, as a dict."""
        tok = self._require()
        strings = self._token_strings()
        spell = bytes_to_unicode()
        word = ["".join(spell[b] for b in s) for s in strings]
        merges = [f"{word[left]} {word[right]}" for left, right in tok.merges.tolist()]  # no spaces in the spelling
        split = [] if self.pattern is None else [
            {"type": "Split", "pattern": {"Regex": self.pattern}, "behavior": "Isolated", "invert": False}]
        return {
            "version": "1.0",
            "truncation": None,
            "padding": None,
            "added_tokens": [
                {"id": i, "content": s, "single_word": False, "lstrip": False, "rstrip": False,
                 "normalized": False, "special": True}
                for s, i in self.special_ids.items()
            ],
            "normalizer": None if self.normalize is None else {"type": self.normalize},
            "pre_tokenizer": {"type": "Sequence", "pretokenizers": split + [
                {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": False}]},
            "post_processor": None,
            "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True},
            "model": {
                "type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": None,
                "end_of_word_suffix": None, "fuse_unk": False, "byte_fallback": False, "ignore_merges": False,
                "vocab": {w: i for i, w in enumerate(word)},
                "merges": merges,
            },
        }

    def export_hf(self, path: str | os.PathLike) -> None:
        """Write a Hugging Face ``tokenizer.json``: byte-level BPE (Split with :attr:`pattern`, then
        ByteLevel without its own regex), GPT-2 byte spelling, merges in merge order, the same
        ids; special tokens as added tokens. ``tokenizers.Tokenizer.from_file(path).encode(text).ids``
        equals ``encode(text, allowed_special="all")``. ``ValueError`` if two tokens have the same
        bytes (see :meth:`export_tiktoken`)."""
        from .io.atomic import write_atomic

        data = json.dumps(self.hf_json(), ensure_ascii=False, indent=1) + "\n"
        write_atomic(path, data.encode("utf-8"), overwrite=True)

    @classmethod
    def import_hf(cls, path: str | os.PathLike, *, trust_pattern: bool = False) -> TextTokenizer:
        """Read a byte-level BPE ``tokenizer.json`` laid out as :meth:`export_hf` writes it: ids
        0-255 the bytes in byte order, merge ``k`` making id ``256 + k``, added tokens after.

        The pre-tokenizer may be a ``Split`` (regex or string, "Isolated", not inverted) and/or
        ``ByteLevel`` without a prefix space (its own regex, if on, is GPT-2's pattern); the
        normaliser one of NFC, NFD, NFKC, NFKD. Training statistics are not in such a file: the
        result encodes and decodes as the exported tokenizer did, but its counts are zero.
        ``ValueError`` for a layout that ubpe cannot reproduce exactly (another byte order,
        other pre-tokenizers or normalisers, a post-processor); ``CorruptDataError`` for a file
        that is not such JSON at all. A ``Split`` regex that is not one of :data:`PATTERNS` is
        refused unless ``trust_pattern=True`` (see :meth:`from_bytes`).
        """
        where = os.fspath(path)
        try:
            with open(path, encoding="utf-8") as f:
                d = json.load(f)
        except (UnicodeDecodeError, json.JSONDecodeError) as e:
            raise CorruptDataError(f"{where}: not JSON: {e}") from None
        try:
            return cls._from_hf(d, where, trust_pattern)
        except (KeyError, TypeError, AttributeError, IndexError) as e:
            raise CorruptDataError(f"{where}: not a tokenizer.json of the expected shape: {e!r}") from None

    @classmethod
    def _from_hf(cls, d: Any, where: str, trust_pattern: bool = False) -> TextTokenizer:
        model = d["model"]
        if model.get("type") != "BPE":
            raise ValueError(f"{where}: not a BPE model (type {short(model.get('type'))})")
        unsupported = {  # options that would make Hugging Face encode otherwise (unk_token never fires: every byte is a token)
            "dropout": model.get("dropout") not in (None, 0, 0.0),
            "continuing_subword_prefix": model.get("continuing_subword_prefix") not in (None, ""),
            "end_of_word_suffix": model.get("end_of_word_suffix") not in (None, ""),
            "byte_fallback": bool(model.get("byte_fallback", False)),
            "ignore_merges": bool(model.get("ignore_merges", False)),
        }
        for key, bad in unsupported.items():
            if bad:
                raise ValueError(f"{where}: BPE option {key}={short(model.get(key))} is not supported")
        spell = bytes_to_unicode()
        vocab = model["vocab"]
        if any(vocab.get(spell[b]) != b for b in range(256)):
            raise ValueError(f"{where}: ids 0-255 must be the 256 bytes in byte order (GPT-2 spelling)")
        merges = []
        for k, m in enumerate(model["merges"]):
            left, right = m.split(" ") if isinstance(m, str) else m
            if vocab.get(left + right) != 256 + k:
                raise ValueError(f"{where}: merge {k} ({left!r}, {right!r}) must make id {256 + k}")
            merges.append((vocab[left], vocab[right]))
        if len(vocab) != 256 + len(merges):
            raise ValueError(f"{where}: the vocabulary must be the bytes and one token per merge")
        pattern = None
        pre = d.get("pre_tokenizer")
        steps = [] if pre is None else pre["pretokenizers"] if pre["type"] == "Sequence" else [pre]
        for i, p in enumerate(steps):
            if p["type"] == "Split" and i == 0:
                if p.get("behavior") != "Isolated" or p.get("invert"):
                    raise ValueError(f"{where}: only an 'Isolated', non-inverted Split is supported")
                pat = p["pattern"]
                pattern = pat["Regex"] if "Regex" in pat else _escape(pat["String"])
                trust_pattern = trust_pattern or "Regex" not in pat  # a literal string cannot backtrack
            elif p["type"] == "ByteLevel" and i == len(steps) - 1:
                if p.get("add_prefix_space", True):
                    raise ValueError(f"{where}: ByteLevel with add_prefix_space is not supported")
                if p.get("use_regex", True):
                    if pattern is not None:
                        raise ValueError(f"{where}: a Split followed by ByteLevel's own regex is not supported")
                    pattern = PATTERNS["gpt2"]
            else:
                raise ValueError(f"{where}: pre-tokenizer {short(p['type'])} at step {i} is not supported "
                                 f"(Split, then ByteLevel)")
        _check_trusted_pattern(pattern, trust_pattern, where)
        norm = d.get("normalizer")
        normalize = None if norm is None else norm["type"]
        if normalize is not None and normalize not in NORMALIZATIONS:
            raise ValueError(f"{where}: normalizer {short(normalize)} is not supported ({', '.join(NORMALIZATIONS)})")
        if d.get("post_processor") is not None:
            raise ValueError(f"{where}: a post-processor adds tokens ubpe would not: not supported")
        added = sorted(d.get("added_tokens", []), key=lambda t: t["id"])
        n = 256 + len(merges)
        if [t["id"] for t in added] != list(range(n, n + len(added))):
            raise ValueError(f"{where}: added tokens must take the ids after the vocabulary")
        out = cls(n, pattern=pattern, normalize=normalize, special_tokens=[t["content"] for t in added])
        out._set_tokenizer(_byte_tokenizer(np.array(merges, dtype=np.int32).reshape(-1, 2), n,
                                           out.n_candidates, out.min_count))
        return out

    def tiktoken_ranks(self) -> dict[bytes, int]:
        """``mergeable_ranks`` for ``tiktoken.Encoding``: token bytes -> id (which is its rank)."""
        return {b: i for i, b in enumerate(self._token_strings())}

    def export_tiktoken(self, path: str | os.PathLike) -> None:
        """Write the tiktoken ranks file (``base64(token bytes) rank`` per line, by rank), for
        ``tiktoken.load.load_tiktoken_bpe``. With ``pat_str=``:attr:`pattern` (``r"[\\s\\S]+"`` when
        None) and ``special_tokens=``:attr:`special_ids`, ``tiktoken.Encoding`` encodes to the
        same ids; tiktoken does not normalise. ``ValueError`` if two tokens have the same bytes."""
        from .io.atomic import write_atomic

        lines = [base64.b64encode(b).decode("ascii") + f" {i}\n" for i, b in enumerate(self._token_strings())]
        write_atomic(path, "".join(lines).encode("ascii"), overwrite=True)

    # ==================== misc

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, TextTokenizer):
            return NotImplemented
        if self._tok is None or other._tok is None:
            return self._tok is other._tok and self._params() == other._params()
        return self.to_bytes() == other.to_bytes()

    __hash__ = None  # mutable (fit)

    def _params(self) -> tuple:
        return (self.n_tokens, self.pattern, self.normalize, self.special_tokens, self.n_candidates, self.min_count,
                self.max_token_length)

    def __repr__(self) -> str:
        size = f"vocab_size={self.vocab_size}" if self._tok is not None else "not fitted"
        name = next((k for k, v in PATTERNS.items() if v == self.pattern), None)
        pat = repr(name) if name is not None else short(self.pattern)
        return (f"TextTokenizer({self.n_tokens}, pattern={pat}, normalize={self.normalize!r}, "
                f"special_tokens={list(self.special_tokens)!r}, n_candidates={self.n_candidates})  # {size}")

    def __getstate__(self) -> dict[str, Any]:
        return {"bytes": self.to_bytes()} if self._tok is not None else {"params": self._params()}

    def __setstate__(self, state: dict[str, Any]) -> None:
        if "bytes" in state:
            self.__dict__.update(TextTokenizer.from_bytes(state["bytes"], trust_pattern=True).__dict__)
        else:
            n, pattern, normalize, specials, nc, mc, mtl = state["params"]
            self.__init__(n, pattern=pattern, normalize=normalize, special_tokens=specials, n_candidates=nc,
                          min_count=mc, max_token_length=mtl)


class UntrustedPatternError(UBPEError, ValueError):
    """A tokenizer file's split pattern is not one of :data:`PATTERNS`, and the caller did not
    pass ``trust_pattern=True`` (:meth:`TextTokenizer.from_bytes`)."""


def _check_trusted_pattern(pattern: Any, trusted: bool, where: str) -> None:
    """:class:`UntrustedPatternError` for a str split pattern that is not one of :data:`PATTERNS`,
    unless trusted (other values are left to the constructor's checks)."""
    if trusted or not isinstance(pattern, str) or pattern in PATTERNS.values():
        return
    raise UntrustedPatternError(f"{where}: the split pattern {short(pattern)} is not one of ubpe's known patterns "
                     f"({', '.join(PATTERNS)}): a pattern is code (a bad one can take exponential time), so "
                     f"it is refused unless you trust this file: pass trust_pattern=True")


def _check_byte_tokenizer(tok: Tokenizer) -> Tokenizer:
    """``tok`` if it can serve a TextTokenizer (bytes, classic, ids in merge order), else ``CorruptDataError``."""
    if tok.alphabet != Alphabet(256):
        raise CorruptDataError(f"{_WHERE}: the tokenizer's alphabet is not the 256 bytes")
    if tok.mode != "classic" or tok.predictor is not None:
        raise CorruptDataError(f"{_WHERE}: the byte tokenizer must be a classic model without a front end")
    if not np.array_equal(tok.token_ids, np.arange(tok.vocab_size)):
        raise CorruptDataError(f"{_WHERE}: merged tokens must be numbered in merge order")
    return tok


def _byte_tokenizer(merges: np.ndarray, n_tokens: int, n_candidates: int, min_count: int) -> Tokenizer:
    """A fitted byte Tokenizer with ``merges`` (priority = id) and no training statistics."""
    m = len(merges)
    tok = Tokenizer(Alphabet(256), n_tokens, n_candidates=n_candidates, min_count=min_count)
    try:
        tok._set_model(alphabet=Alphabet(256), dtype=np.dtype(np.uint8), merges=merges,
                       batches=np.arange(m, dtype=np.int32), counts=np.zeros(m, dtype=np.int64),
                       df=np.zeros(m, dtype=np.int64), n_units=0, token_ids=np.arange(256 + m, dtype=np.int32))
    except ValueError as e:
        raise ValueError(f"the merges do not form a BPE model: {e}") from None
    return tok


def _escape(s: str) -> str:
    import regex

    return regex.escape(s)


