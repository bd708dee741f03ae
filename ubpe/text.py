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
import hashlib
import itertools
import json
import os
import unicodedata
from collections import Counter, defaultdict
from collections.abc import Collection, Iterable
from typing import Any

import msgpack
import numpy as np

from . import encoder
from ._validate import check_int, expect_map, field_bytes, short
from .alphabet import Alphabet
from .errors import CorruptDataError, FormatVersionError, NotFittedError
from .tokenizer import MAX_TOKENS, Tokenizer

__all__ = ["PATTERNS", "NORMALIZATIONS", "TextTokenizer", "bytes_to_unicode"]

#: Named split patterns. "gpt2": GPT-2's (openai/gpt-2 encoder.py); "gpt4": cl100k_base's, as
#: minbpe spells it (possessive quantifiers; needs the ``regex`` package, as tiktoken and
#: Hugging Face's onig engine read it the same way).
PATTERNS = {
    "gpt2": r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+""",
    "gpt4": r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]++[\r\n]*|\s*[\r\n]|\s+(?!\S)|\s+""",
}
NORMALIZATIONS = ("NFC", "NFD", "NFKC", "NFKD")
TEXT_FORMAT_VERSION = 1
TEXT_MAGIC = "ubpe.text"
_WHERE = "text tokenizer"
_FIELDS = ("pattern", "normalize", "special_tokens", "tokenizer")
#: ``encode(allowed_special=...)`` value: no special token allowed, and one found raises (tiktoken's default)
NONE_RAISED = "none_raised"


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
    ) -> None:
        self.n_tokens = check_int("n_tokens", n_tokens, 256, MAX_TOKENS)
        self.n_candidates = check_int("n_candidates", n_candidates, 1, 1 << 20)
        self.min_count = check_int("min_count", min_count, 1)
        if pattern is not None and not isinstance(pattern, str):
            raise TypeError(f"pattern must be a str or None, got {type(pattern).__name__}")
        self.pattern: str | None = PATTERNS.get(pattern, pattern) if pattern is not None else None
        if self.pattern == "":
            raise ValueError("pattern must not be empty: pass pattern=None for no splitting")
        self._split_re = _compile(self.pattern) if self.pattern is not None else None
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
        if len(set(specials)) != len(specials):
            raise ValueError(f"special_tokens must be distinct, got {specials!r}")
        self.special_tokens: tuple[str, ...] = tuple(specials)
        self._tok: Tokenizer | None = None
        self._special_re_cache: dict[frozenset, Any] = {}

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

    def _special_re(self, tokens: frozenset) -> Any:
        if tokens not in self._special_re_cache:
            import regex

            alts = sorted(tokens, key=lambda s: (-len(s), s))  # longest first, then deterministic
            self._special_re_cache[tokens] = regex.compile("|".join(regex.escape(s) for s in alts))
        return self._special_re_cache[tokens]

    def _cut_specials(self, text: str, allowed: frozenset) -> list[str | int]:
        """``text`` as ordinary segments (str) and special-token ids (int), in order."""
        if not allowed:
            return [text]
        ids = self.special_ids if self._tok is not None else {s: i for i, s in enumerate(self.special_tokens)}
        out: list[str | int] = []
        start = 0
        for m in self._special_re(allowed).finditer(text):
            if m.start() > start:
                out.append(text[start : m.start()])
            out.append(ids[m.group()])
            start = m.end()
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

    def fit(self, texts: str | Iterable[str], *, progress: bool = False) -> TextTokenizer:
        """Learn the merges from ``texts`` (one str or an iterable of str); return ``self``.

        Special tokens found in the texts are cut out (never learnt). Each distinct piece is
        trained once with its number of occurrences (word-frequency training): the model equals
        training on every occurrence of every piece as its own document, at the cost of the
        distinct pieces. Raises ``TypeError`` for non-str texts, ``ValueError`` when there is
        no text at all.
        """
        if isinstance(texts, (bytes, bytearray, memoryview)):
            raise TypeError("texts must be str (or an iterable of str), got bytes: decode them first")
        if isinstance(texts, str):
            texts = [texts]
        counter: Counter[str] = Counter()
        specials = frozenset(self.special_tokens)
        for i, text in enumerate(texts):
            if not isinstance(text, str):
                raise TypeError(f"texts[{i}] must be a str, got {type(text).__name__}")
            for seg in self._cut_specials(text, specials):
                if isinstance(seg, str):
                    counter.update(self.pieces(seg))
        if not counter:
            raise ValueError("texts hold no text: fit needs at least one character outside special tokens")
        chunks = [p.encode("utf-8", "surrogatepass") for p in counter]
        lengths = np.fromiter((len(c) for c in chunks), dtype=np.int64, count=len(chunks))
        doc_offsets = np.concatenate(([0], np.cumsum(lengths))).astype(np.int64)
        ids = np.frombuffer(b"".join(chunks), dtype=np.uint8).astype(np.int32)
        weights = np.fromiter(counter.values(), dtype=np.int64, count=len(counter))
        tok = Tokenizer(Alphabet(256), self.n_tokens, n_candidates=self.n_candidates, min_count=self.min_count)
        tok._fit_ids(ids, doc_offsets, Alphabet(256), np.dtype(np.uint8), weights=weights,
                     n_docs=int(weights.sum()), progress=progress, token_ids="priority")
        self._tok = tok
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
        m = self._special_re(disallowed).search(text)
        if m is not None:
            token = m.group()
            raise ValueError(
                f"the text holds the special token {token!r} at character {m.start()}: pass "
                f"allowed_special={{{token!r}}} (or 'all') to encode it as that token, or "
                f"disallowed_special=() to encode it as ordinary text"
            )

    def encode(self, text: str, *, allowed_special: Any = NONE_RAISED, disallowed_special: Any = "all") -> np.ndarray:
        """Token ids (int32, 1-D) of ``text``; ``decode`` gives ``text`` back (normalised, if asked).

        Special tokens follow tiktoken: those in ``allowed_special`` (``"all"``, a set, or
        ``"none_raised"`` for none) become their ids; any other special token found in the text
        raises ``ValueError`` when it is in ``disallowed_special`` (``"all"``: every special
        token not allowed) and is otherwise encoded as ordinary text.
        """
        return self.encode_batch([text], allowed_special=allowed_special, disallowed_special=disallowed_special)[0]

    def encode_batch(self, texts: Iterable[str], *, allowed_special: Any = NONE_RAISED,
                     disallowed_special: Any = "all") -> list[np.ndarray]:
        """:meth:`encode` of every text, all distinct pieces in one kernel call."""
        tok = self._require()
        if isinstance(texts, str):
            raise TypeError("texts must be an iterable of str, got a str: use encode() for one text")
        allowed, disallowed = self._allowed(allowed_special, disallowed_special)
        # distinct piece -> its number, numbered on first sight (the lookups run in C: map, no Python loop)
        index: defaultdict[str, int] = defaultdict(itertools.count().__next__)
        plans: list[list[int]] = []  # per text: piece numbers, or -1 - special id
        for i, text in enumerate(texts):
            if not isinstance(text, str):
                raise TypeError(f"texts[{i}] must be a str, got {type(text).__name__}")
            self._check_disallowed(text, disallowed)
            plan: list[int] = []
            for seg in self._cut_specials(text, allowed):
                if isinstance(seg, int):
                    plan.append(-1 - seg)
                    continue
                plan.extend(map(index.__getitem__, self.pieces(seg)))
            plans.append(plan)
        starts, tokens = self._encode_pieces(tok, list(index))
        starts = np.append(starts, starts[-1])  # special entries read index 0 (and 1): always there
        out = []
        for plan in plans:
            p = np.array(plan, dtype=np.int64)
            special = p < 0
            which = np.where(special, 0, p)
            lens = np.where(special, 1, starts[which + 1] - starts[which])
            first = np.where(special, 0, starts[which])
            total = int(lens.sum())
            # gather: position j of the output reads tokens[first[k] + (j - offset of k)]
            offsets = np.cumsum(lens) - lens
            src = np.repeat(first - offsets, lens) + np.arange(total)
            res = tokens[src] if tokens.size else np.zeros(total, dtype=np.int32)
            if special.any():
                res[offsets[special]] = (-1 - p[special]).astype(np.int32)
            out.append(res.astype(np.int32, copy=False))
        return out

    @staticmethod
    def _encode_pieces(tok: Tokenizer, pieces: list[str]) -> tuple[np.ndarray, np.ndarray]:
        """Replay-encode ``pieces``: ``(bounds, tokens)``, piece k's tokens ``tokens[bounds[k]:bounds[k+1]]``."""
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

    def decode_bytes(self, ids: Any) -> bytes:
        """The bytes of a token sequence (special tokens as their UTF-8)."""
        tok = self._require()
        if isinstance(ids, (bytes, bytearray, memoryview, str)):
            raise TypeError("ids must be a sequence of integer ids, got text or bytes")
        arr = np.asarray(ids)
        if arr.size == 0:
            return b""
        if arr.dtype.kind not in "iu":
            raise TypeError(f"ids must be integers, got dtype {arr.dtype}")
        if arr.ndim != 1:
            raise ValueError(f"ids must be 1-D, got shape {arr.shape}")
        n = self.n_bpe
        bad = (arr < 0) | (arr >= self.vocab_size)
        if bad.any():
            i = int(np.argmax(bad))
            raise ValueError(f"token id {arr[i].item()} at position {i} is out of range: ids are in [0, {self.vocab_size})")
        arr = arr.astype(np.int64)
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

    # ==================== serialization

    def to_bytes(self) -> bytes:
        """The tokenizer as msgpack bytes (docs/text.md): front end plus the byte tokenizer's model
        bytes, under a SHA-256. Equal tokenizers give equal bytes."""
        body = msgpack.packb(
            {"pattern": self.pattern, "normalize": self.normalize, "special_tokens": list(self.special_tokens),
             "tokenizer": self._require().to_bytes()},
            use_bin_type=True,
        )
        return msgpack.packb({"magic": TEXT_MAGIC, "version": TEXT_FORMAT_VERSION, "body": body,
                              "sha256": hashlib.sha256(body).digest()}, use_bin_type=True)

    @classmethod
    def from_bytes(cls, data: bytes | bytearray | memoryview) -> TextTokenizer:
        """Inverse of :meth:`to_bytes`; ``CorruptDataError`` for anything malformed."""
        d = _unpack(data)
        if not isinstance(d, dict) or d.get("magic") != TEXT_MAGIC:
            raise CorruptDataError("not a ubpe text tokenizer (bad magic)")
        version = d.get("version")
        if type(version) is not int or version < 1:
            raise CorruptDataError(f"{_WHERE}: invalid version {short(version)}")
        if version > TEXT_FORMAT_VERSION:
            raise FormatVersionError("this text tokenizer", version, TEXT_FORMAT_VERSION)
        expect_map(d, _WHERE, ("magic", "version", "body", "sha256"))
        digest = field_bytes(d, "sha256", where=_WHERE, size=32)
        body = field_bytes(d, "body", where=_WHERE)
        if hashlib.sha256(body).digest() != digest:
            raise CorruptDataError(f"{_WHERE}: checksum mismatch (the bytes are damaged)")
        f = expect_map(_unpack(body), _WHERE, _FIELDS)
        tok = _check_byte_tokenizer(Tokenizer.from_bytes(field_bytes(f, "tokenizer", where=_WHERE)))
        specials = f["special_tokens"]
        if not isinstance(specials, list):
            raise CorruptDataError(f"{_WHERE}: 'special_tokens' must be a list, got {short(specials)}")
        try:
            out = cls(tok.n_tokens, pattern=f["pattern"], normalize=f["normalize"], special_tokens=specials,
                      n_candidates=tok.n_candidates, min_count=tok.min_count)
        except (TypeError, ValueError) as e:
            raise CorruptDataError(f"{_WHERE}: invalid parameters: {e}") from None
        out._set_tokenizer(tok)
        return out

    def _set_tokenizer(self, tok: Tokenizer) -> None:
        self._tok = _check_byte_tokenizer(tok)

    def save(self, path: str | os.PathLike) -> None:
        """Write :meth:`to_bytes` to ``path`` atomically."""
        from .io import write_atomic

        write_atomic(path, self.to_bytes(), overwrite=True)

    @classmethod
    def load(cls, path: str | os.PathLike) -> TextTokenizer:
        """Read a tokenizer written by :meth:`save`."""
        with open(path, "rb") as f:
            return cls.from_bytes(f.read())

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
        from .io import write_atomic

        data = json.dumps(self.hf_json(), ensure_ascii=False, indent=1) + "\n"
        write_atomic(path, data.encode("utf-8"), overwrite=True)

    @classmethod
    def import_hf(cls, path: str | os.PathLike) -> TextTokenizer:
        """Read a byte-level BPE ``tokenizer.json`` laid out as :meth:`export_hf` writes it: ids
        0-255 the bytes in byte order, merge ``k`` making id ``256 + k``, added tokens after.

        The pre-tokenizer may be a ``Split`` (regex or string, "Isolated", not inverted) and/or
        ``ByteLevel`` without a prefix space (its own regex, if on, is GPT-2's pattern); the
        normaliser one of NFC, NFD, NFKC, NFKD. Training statistics are not in such a file: the
        result encodes and decodes as the exported tokenizer did, but its counts are zero.
        ``ValueError`` for a layout that ubpe cannot reproduce exactly (another byte order,
        other pre-tokenizers or normalisers, a post-processor); ``CorruptDataError`` for a file
        that is not such JSON at all.
        """
        where = os.fspath(path)
        try:
            with open(path, encoding="utf-8") as f:
                d = json.load(f)
        except (UnicodeDecodeError, json.JSONDecodeError) as e:
            raise CorruptDataError(f"{where}: not JSON: {e}") from None
        try:
            return cls._from_hf(d, where)
        except (KeyError, TypeError, AttributeError, IndexError) as e:
            raise CorruptDataError(f"{where}: not a tokenizer.json of the expected shape: {e!r}") from None

    @classmethod
    def _from_hf(cls, d: Any, where: str) -> TextTokenizer:
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
        from .io import write_atomic

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
        return (self.n_tokens, self.pattern, self.normalize, self.special_tokens, self.n_candidates, self.min_count)

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
            self.__dict__.update(TextTokenizer.from_bytes(state["bytes"]).__dict__)
        else:
            n, pattern, normalize, specials, nc, mc = state["params"]
            self.__init__(n, pattern=pattern, normalize=normalize, special_tokens=specials, n_candidates=nc,
                          min_count=mc)


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


def _unpack(data: Any) -> Any:
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise TypeError(f"data must be bytes, got {type(data).__name__}")
    try:
        return msgpack.unpackb(bytes(data), raw=False, strict_map_key=True)
    except Exception as e:  # msgpack raises several unrelated types
        raise CorruptDataError(f"{_WHERE} bytes do not parse: {e}") from None
