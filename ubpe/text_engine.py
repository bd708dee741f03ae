"""The compiled path of :class:`ubpe.TextTokenizer`: split, encode, offsets, decode (docs/text.md).

One :class:`Engine` per fitted tokenizer holds the tables the kernels of
:mod:`ubpe._kernels.text` read (pair ranks, token lengths, token bytes). Encoding takes UTF-8
bytes cut into documents, so many texts go through one kernel call, and the kernels release the
GIL: :func:`run_threads` spreads documents over threads.

The GPT-2 and GPT-4 patterns run as compiled scanners (:func:`pattern_mode`); any other pattern
runs through the ``regex`` module and hands the kernel its piece bounds.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import numpy as np

from ._kernels import text as _k

MODE_WHOLE = _k.MODE_WHOLE
MODE_GPT2 = _k.MODE_GPT2
MODE_GPT4 = _k.MODE_GPT4
MODE_GIVEN = _k.MODE_GIVEN

# The piece cache of each thread: 2**CACHE_BITS slots, half of them usable, pieces of at most
# SHORT_PIECE bytes (about 3 MiB a thread). It is cleared whenever it fills.
CACHE_BITS = 17

_classes: np.ndarray | None = None
_classes_lock = threading.Lock()


def char_classes() -> np.ndarray:
    """uint8 (0x110000,): bit ``L_BIT`` for the code points ``\\p{L}`` matches, ``N_BIT`` for
    ``\\p{N}``, ``S_BIT`` for ``\\s``, as the installed ``regex`` module matches them (built once,
    about 0.3 s)."""
    global _classes
    if _classes is not None:
        return _classes
    with _classes_lock:
        if _classes is None:
            import regex

            every = np.arange(0x110000, dtype="<u4").tobytes().decode("utf-32-le", "surrogatepass")
            cls = np.zeros(0x110000, dtype=np.uint8)
            for bit, pattern in ((_k.L_BIT, r"\p{L}+"), (_k.N_BIT, r"\p{N}+"), (_k.S_BIT, r"\s+")):
                for m in regex.finditer(pattern, every):
                    cls[m.start():m.end()] |= bit
            _classes = cls
        return _classes


def pattern_mode(pattern: str | None, patterns: dict[str, str]) -> int:
    """The kernel mode of a split pattern: compiled for GPT-2, GPT-4 and None, else MODE_GIVEN."""
    if pattern is None:
        return MODE_WHOLE
    if pattern == patterns["gpt4"]:
        return MODE_GPT4
    if pattern == patterns["gpt2"]:
        return MODE_GPT2
    return MODE_GIVEN


def regex_piece_bounds(split_re: Any, buf_parts: Sequence[str], byte_starts: np.ndarray) -> np.ndarray:
    """Piece bounds (int64, byte offsets into the joined buffer) of each text of ``buf_parts``
    (that starts at ``byte_starts[i]``) as ``split_re`` cuts it (text between matches is a piece
    too), every text's start and end among them."""
    out: list[int] = [0]
    for text, start in zip(buf_parts, byte_starts.tolist()):
        pos = start
        if out[-1] != pos:
            out.append(pos)
        last = 0
        for m in split_re.finditer(text, concurrent=True):
            a, b = m.span()
            if a == b:
                continue
            if a > last:
                pos += len(text[last:a].encode("utf-8", "surrogatepass"))
                out.append(pos)
            pos += len(text[a:b].encode("utf-8", "surrogatepass"))
            out.append(pos)
            last = b
        if last < len(text):
            pos += len(text[last:].encode("utf-8", "surrogatepass"))
            out.append(pos)
    return np.asarray(out, dtype=np.int64)


def char_offsets(buf: np.ndarray) -> np.ndarray:
    """int64 (len(buf) + 1,): entry b is the number of characters of ``buf`` (UTF-8) that end at
    or before byte b. A token's character span is ``[co[start], co[end])``: a character belongs
    to the token holding its last byte."""
    out = np.zeros(buf.shape[0] + 1, dtype=np.int64)
    if buf.size:
        ends = np.empty(buf.shape[0], dtype=np.bool_)
        np.not_equal(buf[1:] & 0xC0, 0x80, out=ends[:-1])
        ends[-1] = True
        np.cumsum(ends, out=out[1:])
    return out


def new_cache(bits: int | None) -> np.ndarray:
    """An empty packed piece cache of ``2**bits`` slots (``_k.CACHE_HEAD``), or with ``bits``
    None, none (the header alone)."""
    size = 0 if bits is None else 1 << bits
    cache = np.zeros(_k.CACHE_HEAD + 6 * size, dtype=np.int64)
    cache[_k.CACHE_HEAD:_k.CACHE_HEAD + 2 * size] = -1
    return cache


class _Cache(threading.local):
    """Each thread's packed piece cache (``new_cache(CACHE_BITS)``, made at its first use)."""

    cache: np.ndarray | None = None


_ZERO = np.zeros(1, dtype=np.int64)


def pack_tables(bits: int, n_tokens: int, parts: Sequence[np.ndarray]) -> np.ndarray:
    """The int64 array of ``_k.T_*``: the header, then ``parts`` (in ``_k.P_*`` order)."""
    assert len(parts) == _k.N_PARTS
    sizes = [p.shape[0] for p in parts]
    offsets = _k.TABLES_HEAD + np.concatenate(([0], np.cumsum(sizes))).astype(np.int64)
    return np.concatenate([np.array([bits, n_tokens], dtype=np.int64), offsets,
                           *(np.asarray(p, dtype=np.int64) for p in parts)])


def direct_entry(kernel: Any, example: tuple) -> Callable:
    """``kernel``'s compiled entry point for the argument types of ``example`` (numba's CPython
    wrapper, compiled or loaded from the cache now): a call skips the dispatcher's typing of
    each argument (0.19 us of a 1.2 us ``encode`` of 26 characters). It does not check the
    types it is given: call it only with arguments of exactly these types. ``kernel`` itself
    where numba offers no entry point (``NUMBA_DISABLE_JIT``, another numba)."""
    try:
        import numba

        entry = kernel.compile(tuple(numba.typeof(a) for a in example))
    except Exception:  # noqa: BLE001 - the dispatcher is always right, if slower
        return kernel
    return entry if callable(entry) else kernel


_encode_text: Callable | None = None  # _k.encode_text entered directly, once asked for


def _encode_text_entry() -> Callable:
    global _encode_text
    if _encode_text is None:
        _encode_text = direct_entry(_k.encode_text, (b"", MODE_GPT4, char_classes(), _ZERO, np.empty(0, np.int32),
                                                     new_cache(None)))
    return _encode_text


class Engine:
    """Kernel tables of one fitted byte-level BPE (merges in rank order, ids ``256 + k``) and its
    special tokens (ids from ``256 + M``), packed into :attr:`tables` (``_k.T_*``); ``pairs``,
    ``left``, ``right`` and ``tok_len`` are views of it."""

    def __init__(self, merges: np.ndarray, special_tokens: Sequence[str], expansion: Any) -> None:
        m = merges.shape[0]
        self.n_bpe = 256 + m
        left = np.ascontiguousarray(merges[:, 0], dtype=np.int64)
        right = np.ascontiguousarray(merges[:, 1], dtype=np.int64)
        self.bits = max(1, int(2 * max(m, 1) - 1).bit_length())
        pairs = _k.build_pair_table(left, right, self.n_bpe, self.bits)
        lengths = np.asarray(expansion.lengths[: self.n_bpe], dtype=np.int64)
        specials = [s.encode("utf-8", "surrogatepass") for s in special_tokens]
        tok_len = np.concatenate([lengths, np.array([len(s) for s in specials], dtype=np.int64)])
        trie = SpecialMatcher(special_tokens, range(self.n_bpe, self.n_bpe + len(specials)))  # every one, refused
        self.tables = pack_tables(self.bits, self.n_bpe, [pairs, left, right, tok_len, trie.edges, trie.terminal,
                                                          trie.first])
        self.pairs, self.left, self.right, self.tok_len = (self._part(k) for k in range(4))
        # whole expansions for the decode kernel, when every token is tabled
        self.flat: np.ndarray | None = None
        self.tok_start: np.ndarray | None = None
        if expansion.max_table_length >= (int(lengths.max()) if lengths.size else 0):
            flat = np.asarray(expansion.values, dtype=np.uint8)
            extra = np.frombuffer(b"".join(specials), dtype=np.uint8)
            starts = np.asarray(expansion.offsets[: self.n_bpe], dtype=np.int64)
            sp_starts = flat.shape[0] + np.concatenate(([0], np.cumsum([len(s) for s in specials])[:-1])).astype(np.int64) \
                if specials else np.zeros(0, dtype=np.int64)
            self.flat = np.concatenate([flat, extra, np.zeros(8, dtype=np.uint8)])  # slack for 8-byte copies
            self.tok_start = np.concatenate([starts, sp_starts])
        self._cache = _Cache()

    def _part(self, k: int) -> np.ndarray:
        return self.tables[self.tables[_k.T_PARTS + k]:self.tables[_k.T_PARTS + k + 1]]

    def cache(self) -> np.ndarray:
        """This thread's packed piece cache."""
        c = self._cache.cache
        if c is None:
            c = self._cache.cache = new_cache(CACHE_BITS)
        return c

    # ---------------------------------------------------------------- encoding

    def encode(self, buf: np.ndarray, doc_starts: np.ndarray, doc_ends: np.ndarray, mode: int,
               piece_bounds: np.ndarray | None, want_ends: bool, drop: int = 0,
               seeds: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Encode the documents ``buf[doc_starts[d]:doc_ends[d]]`` (int64, increasing, disjoint)
        in this thread (``_k.encode_docs``).

        Returns ``(tokens int32, doc_tokens int64 (D+1,), ends int64)``: document d's tokens are
        ``tokens[doc_tokens[d]:doc_tokens[d+1]]``, token t ends at byte ``ends[t]`` of ``buf``
        (``ends`` empty unless ``want_ends``)."""
        n = buf.shape[0]
        out = np.empty(max(n, 1), dtype=np.int32)
        ends = np.empty(max(n, 1) if want_ends else 0, dtype=np.int64)
        doc_tokens = np.empty(doc_starts.shape[0] + 1, dtype=np.int64)
        pb = piece_bounds if piece_bounds is not None else _ZERO
        sd = seeds if seeds is not None else np.zeros(doc_starts.shape[0], dtype=np.uint64)
        cache = self.cache() if drop == 0 else new_cache(None)
        count = _k.encode_docs(buf, doc_starts, doc_ends, mode, char_classes(), pb, self.tables, out, ends, doc_tokens,
                               want_ends, drop, sd, cache)
        return out[:count], doc_tokens, ends[:count] if want_ends else ends

    def encode_text(self, data: bytes, mode: int) -> np.ndarray | None:
        """The tokens (int32) of the UTF-8 ``data`` as one document (GPT-2, GPT-4 or no split;
        ``_k.encode_text``), or None when it holds a special token (nothing is encoded). Its
        fixed cost is most of a short text's: one compiled call, entered directly
        (:func:`direct_entry`), and one array."""
        out = np.empty(len(data), np.int32)
        cache = self._cache.cache
        if cache is None:
            cache = self.cache()
        # (the callee first: _encode_text_entry() makes _classes)
        count = (_encode_text or _encode_text_entry())(data, mode, _classes, self.tables, out, cache)
        return out[:count] if count >= 0 else None

    # ---------------------------------------------------------------- decoding

    def decode_flat(self, ids: np.ndarray, bounds: np.ndarray,
                    ended: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """The bytes of each sequence ``ids[bounds[d]:bounds[d+1]]``: ``(data uint8, byte_bounds
        int64 (D+1,))``; ``ValueError`` naming the first id out of range. Needs :attr:`flat`.
        ``ended``: an int8 array whose item 0 the compiled part sets to 1 as it ends (the
        :func:`run_threads` hand-over hint)."""
        assert self.flat is not None and self.tok_start is not None
        if ended is None:
            ended = np.zeros(1, np.int8)
        data, byte_bounds, bad = _k.decode_flat(ids, bounds, self.tok_start, self.tok_len, self.flat, ended)
        if bad >= 0:
            raise ValueError(f"token id {int(ids[bad])} at position {bad} is out of range: ids are in "
                             f"[0, {self.tok_len.shape[0]})")
        return data[:-8], byte_bounds


def texts_of(flat: tuple[np.ndarray, np.ndarray], errors: str,
             pause: Callable[[], None] | None = None) -> list[str]:
    """The str of each ``data[byte_bounds[d]:byte_bounds[d+1]]`` of :meth:`Engine.decode_flat`'s
    ``(data, byte_bounds)`` (``bytes.decode`` with ``errors``, one call a text: decoding all the
    bytes at once and slicing the str was 2.7 times slower, its slices being re-narrowed to
    ASCII). It holds the GIL throughout, but calls ``pause`` (:func:`run_threads`' hand-over)
    after every ``TEXTS_PER_PAUSE`` texts."""
    data, bb = flat
    raw = data.tobytes()
    cuts = bb.tolist()
    n = len(cuts) - 1
    if pause is None:
        return [raw[cuts[i]:cuts[i + 1]].decode("utf-8", errors) for i in range(n)]
    out: list[str] = []
    for first in range(0, n, TEXTS_PER_PAUSE):
        out += [raw[cuts[i]:cuts[i + 1]].decode("utf-8", errors) for i in range(first, min(n, first + TEXTS_PER_PAUSE))]
        pause()
    return out


#: :func:`texts_of`'s texts between two hand-overs (about 70 us of str building at 1 kB a text)
TEXTS_PER_PAUSE = 256


#: ranges per thread: the GIL-held part of one range (building str and list objects) then
#: overlaps the compiled part of another range on the other thread
RANGES_PER_THREAD = 8


class _Helpers:
    """The helper threads of :func:`run_threads`, kept between calls: each keeps its piece cache
    (:meth:`Engine.cache`, a few MiB) warm, where a pool made per call started every thread
    cold and paid for a new cache. Grown to the most helpers asked for; made again in a child
    after ``fork``."""

    lock = threading.Lock()
    pool: ThreadPoolExecutor | None = None
    size = 0

    @classmethod
    def get(cls, n: int) -> ThreadPoolExecutor:
        with cls.lock:
            if cls.pool is None or cls.size < n:
                old, cls.pool, cls.size = cls.pool, ThreadPoolExecutor(n, thread_name_prefix="ubpe-text"), n
                if old is not None:
                    old.shutdown(wait=False)
            return cls.pool

    @classmethod
    def forget(cls) -> None:
        cls.lock = threading.Lock()
        cls.pool, cls.size = None, 0


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_Helpers.forget)


def run_threads(n_items: int, weights: np.ndarray | None, num_threads: int,
                work: Callable[..., Any], finish: Callable[..., Any] | None = None, *,
                per_thread: int = RANGES_PER_THREAD, handover: bool = False, taper: float = 1.0) -> list[Any]:
    """``finish(work(first, stop))`` (``finish`` None: ``work(first, stop)``) of contiguous ranges
    of ``range(n_items)`` of about equal total ``weights`` (``per_thread`` a thread), in range
    order; one range, in this thread, when ``num_threads`` is 1. ``taper``: the last
    ``num_threads`` ranges' share of the weight, relative to each other range's (below 1: the
    last ranges smaller, so that the threads end together).

    ``work`` runs on ``num_threads`` threads: this one and ``num_threads - 1`` helpers kept
    between calls (:class:`_Helpers`), each taking the next range not taken. ``finish`` runs in
    this thread, range by range as their ``work`` ends, between ranges of its own ``work``: give
    it the part that holds the GIL (building Python objects), so that it overlaps the other
    threads' compiled ``work`` instead of queueing for the GIL behind it. A helper still busy
    with another call takes none of this call's ranges (this thread does them), so concurrent
    calls never wait on each other. An exception in any range is raised here (the first in
    range order), and no range starts after it.

    ``handover``: ``work`` is called as ``work(first, stop, ended)`` and must set ``ended[0]``
    (an int8 array) to 1 as its compiled part ends; ``finish`` as ``finish(result, pause)`` and
    must call ``pause()`` every few tens of microseconds (``pause`` is None on one thread). A helper whose compiled part has ended
    needs the GIL to return its result and start its next range; ``pause`` lets it have the GIL
    then, where it would otherwise wait for the interpreter's switch interval (5 ms) behind
    ``finish`` (``decode_batch``: docs/text.md)."""
    def run(first: int, stop: int, ended: np.ndarray) -> Any:
        return work(first, stop, ended) if handover else work(first, stop)

    def end(result: Any, pause: Callable[[], None] | None) -> Any:
        if finish is None:
            return result
        return finish(result, pause) if handover else finish(result)

    if num_threads <= 1 or n_items <= 1:
        return [end(run(0, n_items, np.zeros(1, np.int8)), None)]
    k = min(num_threads * per_thread, n_items)
    share = np.ones(k)
    if k > num_threads:
        share[k - num_threads:] = taper
    at = np.cumsum(share[:-1]) / share.sum()  # the cuts' fractions of the weight
    if weights is None:
        cuts = [0] + [round(f * n_items) for f in at] + [n_items]
    else:
        cum = np.cumsum(weights, dtype=np.int64)
        total = int(cum[-1]) if cum.size else 0
        cuts = [0] + [int(np.searchsorted(cum, total * f, side="left")) + 1 for f in at] + [n_items]
    cuts = sorted(min(max(c, 0), n_items) for c in cuts)
    ranges = [(a, b) for a, b in zip(cuts[:-1], cuts[1:]) if b > a]
    if len(ranges) == 1:
        return [end(run(*ranges[0], np.zeros(1, np.int8)), None)]
    n_ranges = len(ranges)
    results: list[Any] = [None] * n_ranges
    done = [threading.Event() for _ in range(n_ranges)]
    ended = np.zeros(n_ranges, np.int8)  # set by a range's compiled part as it ends
    by_helper = [False] * n_ranges
    errors: dict[int, BaseException] = {}
    lock = threading.Lock()
    state = [0]  # the next range not taken

    def take_one(helper: bool = False) -> bool:
        """Run the next range not taken; False when none is left (or one has failed)."""
        with lock:
            if errors or state[0] >= n_ranges:
                return False
            i = state[0]
            state[0] += 1
        by_helper[i] = helper
        try:
            results[i] = run(*ranges[i], ended[i:i + 1])
        except BaseException as exc:  # raised in the calling thread below
            errors[i] = exc
        done[i].set()
        return True

    def helper() -> None:
        while take_one(True):
            pass

    def pause() -> None:
        """Give up the GIL while a helper's range has ended its compiled part but not returned."""
        for i in range(n_ranges):
            if ended[i] and by_helper[i]:
                while not done[i].is_set():
                    time.sleep(0)  # releases the GIL
                by_helper[i] = False

    pool = _Helpers.get(num_threads - 1)
    futures = [pool.submit(helper) for _ in range(min(num_threads, n_ranges) - 1)]
    out: list[Any] = []
    try:
        for i in range(n_ranges):
            while not done[i].is_set():
                if not take_one():
                    if i >= state[0]:  # never taken: a range failed
                        break
                    done[i].wait()
            if errors:
                break
            out.append(end(results[i], pause))
            results[i] = None
    except BaseException as exc:
        errors[-1] = exc  # stops the helpers' next ranges
        raise
    finally:
        for f in futures:
            if not f.cancel():  # started: it may hold a range of ours
                f.result()
    if errors:
        raise errors[min(errors)]
    return out


@dataclass(frozen=True)
class EncodedBatch:
    """Many texts' tokens as flat arrays (:meth:`TextTokenizer.encode_batch` with ``arrays=True``).

    ``ids``: int32, every text's tokens one after the other; text ``i``'s are
    ``ids[bounds[i]:bounds[i + 1]]`` (``bounds`` int64, ``len(texts) + 1``). ``offsets``: None,
    or int64 ``(len(ids), 2)``: each token's ``[start, end)`` in its own text (characters or
    bytes, as asked).
    """

    ids: np.ndarray
    bounds: np.ndarray
    offsets: np.ndarray | None = None

    def __len__(self) -> int:
        return int(self.bounds.shape[0] - 1)

    def __getitem__(self, i: int) -> np.ndarray:
        """Text ``i``'s ids."""
        i = range(len(self))[i]
        return self.ids[self.bounds[i]: self.bounds[i + 1]]

    def split(self) -> list[np.ndarray]:
        """The ids of each text, as a list of int32 arrays (views into :attr:`ids`)."""
        ids, b = self.ids, self.bounds.tolist()
        return [ids[b[i]:b[i + 1]] for i in range(len(b) - 1)]

    def tolist(self) -> list[list[int]]:
        """The ids of each text, as lists of int."""
        flat = self.ids.tolist()
        b = self.bounds.tolist()
        return [flat[b[i]: b[i + 1]] for i in range(len(self))]

    @classmethod
    def _join(cls, parts: list[tuple], offsets: str | None) -> EncodedBatch:
        if len(parts) == 1:
            ids, bounds, starts, ends = parts[0]
        else:
            ids = np.concatenate([p[0] for p in parts])
            shift = np.cumsum([0] + [p[1][-1] for p in parts[:-1]])
            bounds = np.concatenate([parts[0][1][:1]] + [p[1][1:] + s for p, s in zip(parts, shift)])
            starts = np.concatenate([p[2] for p in parts]) if offsets else None
            ends = np.concatenate([p[3] for p in parts]) if offsets else None
        spans = np.stack([starts, ends], axis=1) if offsets else None
        return cls(np.ascontiguousarray(ids, dtype=np.int32), np.asarray(bounds, dtype=np.int64), spans)


# ==================================================================================== special tokens


class SpecialMatcher:
    """Finds special tokens in UTF-8 bytes: a byte trie of their UTF-8 (``_k.build_trie``), the
    longest one at each position, left to right, never across a range's ends. Its cost is
    linear in the text (times the length of the longest token at worst), whatever the number
    of tokens: a regex alternation of 16 384 tokens took 2 s on 11 KB of text."""

    def __init__(self, tokens: Sequence[str], values: Sequence[int]) -> None:
        raw = [t.encode("utf-8", "surrogatepass") for t in tokens]
        self.tokens = list(tokens)
        data = np.frombuffer(b"".join(raw), dtype=np.uint8)
        bounds = np.zeros(len(raw) + 1, dtype=np.int64)
        np.cumsum([len(r) for r in raw], out=bounds[1:])
        size = 1 << max(4, int(2 * (data.shape[0] + 1) - 1).bit_length())
        self.edges = np.full(2 * size, -1, dtype=np.int64)
        self.terminal = np.full(data.shape[0] + 1, -1, dtype=np.int64)
        self.first = np.zeros(256, dtype=np.bool_)
        _k.build_trie(data, bounds, np.asarray(values, dtype=np.int64), self.edges, self.terminal, self.first)

    def find(self, buf: np.ndarray, starts: np.ndarray, stops: np.ndarray) -> np.ndarray:
        """int64 ``(m, 4)`` rows ``(start, end, value, range)`` of the matches in each range."""
        rows = 64
        while True:
            out = np.empty((rows, 4), dtype=np.int64)
            n = _k.find_strings(buf, starts, stops, self.edges, self.terminal, self.first, out)
            if n >= 0:
                return out[:n]
            rows *= 8


# ==================================================================================== batches


def mix_seeds(seed: int, text_index: np.ndarray, part_index: np.ndarray) -> np.ndarray:
    """uint64 seed of each (text, part): splitmix64 of the seed and the two indices."""
    with np.errstate(over="ignore"):
        z = (np.uint64(seed & 0xFFFFFFFFFFFFFFFF) + text_index.astype(np.uint64) * np.uint64(0x9E3779B97F4A7C15)
             + part_index.astype(np.uint64) * np.uint64(0xD1B54A32D192ED03))
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return z ^ (z >> np.uint64(31))


def encode_texts(tk: Any, eng: Engine, texts: Sequence[str], first_index: int, allowed: frozenset,
                 disallowed: frozenset, offsets: str | None, drop: int, seed: int) -> tuple:
    """Encode ``texts`` (``texts[i]`` is text ``first_index + i`` of the caller's batch) in this
    thread. Returns ``(ids int32, bounds int64 (n+1,), starts, ends)``: text i's tokens are
    ``ids[bounds[i]:bounds[i+1]]``; with ``offsets`` ("byte" or "char") ``starts``/``ends``
    (int64 per token) are offsets into that text (normalised, if the tokenizer normalises),
    else None. ``tk``: the TextTokenizer (its front end)."""
    n = len(texts)
    cuts: list[tuple[int, int, int, int]] = []  # (start, end, special id, text) of allowed special tokens
    if tk.normalize is None:
        try:
            raw = [t.encode("utf-8", "surrogatepass") for t in texts]
        except AttributeError:
            i = next(i for i, t in enumerate(texts) if not isinstance(t, str))
            raise TypeError(f"texts[{first_index + i}] must be a str, got {type(texts[i]).__name__}") from None
        data = b"".join(raw)
        lens = np.fromiter(map(len, raw), dtype=np.int64, count=n)
        tb_arr = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(lens, out=tb_arr[1:])
        tb = tb_arr.tolist()
        if disallowed or allowed:
            view = np.frombuffer(data, dtype=np.uint8)
        if disallowed:
            hits = tk._special_matcher(disallowed).find(view, tb_arr[:-1], tb_arr[1:])
            if hits.shape[0]:
                s, _, sid, i = hits[0].tolist()
                tk._refuse_special(tk.special_tokens[sid - eng.n_bpe],
                                   len(data[tb[i]:s].decode("utf-8", "surrogatepass")))
        if allowed:
            cuts = [tuple(row) for row in tk._special_matcher(allowed).find(view, tb_arr[:-1], tb_arr[1:]).tolist()]
    else:
        chunks: list[bytes] = []
        tb = [0]
        pos = 0
        for i, text in enumerate(texts):
            if not isinstance(text, str):
                raise TypeError(f"texts[{first_index + i}] must be a str, got {type(text).__name__}")
            tk._check_disallowed(text, disallowed)
            for seg in tk._cut_specials(text, allowed):
                if isinstance(seg, int):
                    b = tk.special_tokens[seg - eng.n_bpe].encode("utf-8", "surrogatepass")
                    cuts.append((pos, pos + len(b), seg, i))
                else:
                    import unicodedata

                    b = unicodedata.normalize(tk.normalize, seg).encode("utf-8", "surrogatepass")
                chunks.append(b)
                pos += len(b)
            tb.append(pos)
        data = b"".join(chunks)
    buf = np.frombuffer(data, dtype=np.uint8)
    text_bounds = np.asarray(tb, dtype=np.int64)
    # documents: each text, less its special tokens
    if cuts:
        starts_l: list[int] = []
        ends_l: list[int] = []
        doc_text: list[int] = []
        c = 0
        for i in range(n):
            starts_l.append(tb[i])
            doc_text.append(i)
            while c < len(cuts) and cuts[c][3] == i:
                ends_l.append(cuts[c][0])
                starts_l.append(cuts[c][1])
                doc_text.append(i)
                c += 1
            ends_l.append(tb[i + 1])
        doc_starts = np.asarray(starts_l, dtype=np.int64)
        doc_ends = np.asarray(ends_l, dtype=np.int64)
        docs_of_text = np.asarray(doc_text, dtype=np.int64)
    else:
        doc_starts = text_bounds[:-1]
        doc_ends = text_bounds[1:]
        docs_of_text = None
    # pieces (custom patterns): text between special tokens, split by the regex
    piece_bounds = None
    if tk._mode == MODE_GIVEN:
        parts = [data[a:b].decode("utf-8", "surrogatepass") for a, b in zip(doc_starts.tolist(), doc_ends.tolist())]
        piece_bounds = np.union1d(regex_piece_bounds(tk._split_re, parts, doc_starts),
                                  np.concatenate([doc_starts, doc_ends]))
    seeds = None
    if drop:
        if docs_of_text is None:
            t_idx = np.arange(first_index, first_index + n, dtype=np.int64)
            p_idx = np.zeros(n, dtype=np.int64)
        else:
            t_idx = docs_of_text + first_index
            p_idx = np.arange(docs_of_text.shape[0], dtype=np.int64) - np.searchsorted(docs_of_text, docs_of_text)
        seeds = mix_seeds(seed, t_idx, p_idx)
    tokens, doc_tokens, ends = eng.encode(buf, doc_starts, doc_ends, tk._mode, piece_bounds, offsets is not None,
                                          drop, seeds)
    if not cuts:
        ids, tok_bounds, tok_ends = tokens, doc_tokens, ends
    else:
        ids, tok_bounds, tok_ends = _interleave(tokens, doc_tokens, ends if offsets else None, cuts, n,
                                                docs_of_text)
    starts_out = ends_out = None
    if offsets is not None:
        tok_text = np.repeat(np.arange(n, dtype=np.int64), np.diff(tok_bounds))
        abs_ends = tok_ends
        abs_starts = abs_ends - eng.tok_len[ids]
        if offsets == "char":
            co = char_offsets(buf)
            starts_out = co[abs_starts] - co[text_bounds[:-1]][tok_text]
            ends_out = co[abs_ends] - co[text_bounds[:-1]][tok_text]
        else:
            starts_out = abs_starts - text_bounds[:-1][tok_text]
            ends_out = abs_ends - text_bounds[:-1][tok_text]
    return ids, tok_bounds, starts_out, ends_out


def split_part(part: tuple) -> list[np.ndarray]:
    """The ids of each text of one :func:`encode_texts` result: int32 views, one a text."""
    return EncodedBatch(part[0], part[1]).split()


def _interleave(tokens: np.ndarray, doc_tokens: np.ndarray, ends: np.ndarray | None,
                cuts: list[tuple[int, int, int, int]], n: int, docs_of_text: np.ndarray) -> tuple:
    """Tokens of every text: its documents' tokens with the special tokens between them."""
    n_docs = docs_of_text.shape[0]
    n_sp = len(cuts)
    sp = np.asarray(cuts, dtype=np.int64).reshape(-1, 4)
    ext_ids = np.concatenate([tokens, sp[:, 2].astype(np.int32)])
    # items in order: doc, special, doc, ..., doc for each text; specials follow every doc but a text's last
    doc_len = np.diff(doc_tokens)
    last_doc = np.ones(n_docs, dtype=np.bool_)
    last_doc[:-1] = docs_of_text[1:] != docs_of_text[:-1]
    n_items = n_docs + n_sp
    item_first = np.empty(n_items, dtype=np.int64)
    item_len = np.empty(n_items, dtype=np.int64)
    is_doc = np.ones(n_items, dtype=np.bool_)
    # position of each doc among the items: docs before it plus specials before it
    doc_pos = np.arange(n_docs) + np.concatenate(([0], np.cumsum(~last_doc)[:-1]))
    is_doc[:] = False
    is_doc[doc_pos] = True
    item_first[doc_pos] = doc_tokens[:-1]
    item_len[doc_pos] = doc_len
    sp_pos = np.flatnonzero(~is_doc)
    item_first[sp_pos] = tokens.shape[0] + np.arange(n_sp)
    item_len[sp_pos] = 1
    total = int(item_len.sum())
    starts_in_out = np.cumsum(item_len) - item_len
    src = np.repeat(item_first - starts_in_out, item_len) + np.arange(total)
    ids = ext_ids[src]
    text_of_item = np.empty(n_items, dtype=np.int64)
    text_of_item[doc_pos] = docs_of_text
    text_of_item[sp_pos] = sp[:, 3]
    per_text = np.bincount(text_of_item, weights=item_len, minlength=n).astype(np.int64)
    bounds = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(per_text, out=bounds[1:])
    out_ends = None
    if ends is not None:
        out_ends = np.concatenate([ends, sp[:, 1]])[src]
    return ids, bounds, out_ends
