"""Counting the words (pre-token pieces) of a corpus in bounded memory, in parallel (docs/text.md).

:class:`ubpe.TextTokenizer` trains on word frequencies: every distinct piece once, with the
number of its occurrences. This module makes that table from texts in memory, from an iterator,
or from files (plain text, JSON lines, parquet), without ever holding the corpus:

- the corpus is cut into *blocks* of about ``chunk_size`` bytes, at points where no piece
  changes (below), and each block is counted by a compiled kernel (:mod:`ubpe._kernels.text`)
  into a table of its own, on ``num_threads`` threads or processes;
- the blocks' tables are added into one table *in corpus order*, whatever thread counted them,
  so the result never depends on the number of threads or on timing;
- that table holds at most ``max_words`` distinct words: when it would hold more, the words seen
  fewer than ``t`` times are dropped, ``t`` the smallest count that halves the table (as
  word2vec's vocabulary pruning); words seen later count from then on. A final cut keeps the
  ``max_words`` most frequent. Memory is then bounded by ``max_words`` words, plus the blocks
  in flight (about ``2 * num_threads * chunk_size`` bytes and their tables).

Where a text may be cut: with the GPT-2 or GPT-4 pattern, right after a line feed that has a
printable ASCII character (``!`` to ``~``) on each side: both patterns always end a piece there
and start the next as at the start of a text (and Unicode normalisation never joins across it),
so a text file is one document, read in blocks, and the counts equal those of the whole text.
With ``pattern=None`` or a pattern of your own, nothing can be cut safely: each *line* of a text
file is a document (with its line feed), and a text from an iterator is never cut. A file with no
place to cut for ``MAX_BLOCK_CHUNKS`` blocks is cut at a character boundary there (its pieces may
differ at that cut only), so that no read exceeds that many blocks.

Special tokens are cut out of each block (by the matcher of :mod:`ubpe.text_engine`); one that
holds a line break between printable characters could straddle a block cut and go unseen.
"""

from __future__ import annotations

import io
import json
import os
import re
import unicodedata
from collections.abc import Iterable, Iterator, Mapping
from concurrent.futures import Future, ProcessPoolExecutor, ThreadPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from typing import Any

import numpy as np

from ._kernels import text as _k
from ._validate import check_int
from .errors import CorruptDataError
from .text_engine import MODE_GIVEN, MODE_GPT2, MODE_GPT4, char_classes, regex_piece_bounds

__all__ = ["WordCounts", "FORMATS", "DEFAULT_MAX_WORDS", "DEFAULT_CHUNK_SIZE"]

FORMATS = ("text", "jsonl", "parquet")
#: distinct words kept by default (files): at about 9 bytes a word (the Linux sources' 1.04 M
#: words hold 9.4 MB), 2**22 words take about 0.4 GB to count and 1.2 GB to train on (about
#: 30 bytes a byte of word), so training stays under 2 GB
DEFAULT_MAX_WORDS = 1 << 22
#: bytes per block
DEFAULT_CHUNK_SIZE = 1 << 24
#: a block grows to at most this many chunks while looking for a place to cut; past that it is
#: cut at a character boundary (docs/text.md: the pieces at that cut may differ)
MAX_BLOCK_CHUNKS = 8
_SAFE_CUT = re.compile(rb"[!-~]\n[!-~]")


# ==================================================================================== the table


class _Table:
    """Byte string -> count hash table (the arrays of ``_k.count_pieces``), growing as needed."""

    def __init__(self, entries: int = 1 << 12, arena: int = 1 << 16) -> None:
        self.slots = np.full(2 * _pow2(2 * entries), -1, dtype=np.int64)
        self.hashes = np.empty(entries, dtype=np.int64)
        self.starts = np.empty(entries, dtype=np.int64)
        self.lens = np.empty(entries, dtype=np.int64)
        self.counts = np.zeros(entries, dtype=np.int64)
        self.arena = np.empty(arena, dtype=np.uint8)
        self.state = np.zeros(2, dtype=np.int64)
        self.dropped = 0  # distinct words dropped by the bound (a word dropped twice counts twice)
        self.threshold = 0  # the largest count below which words were dropped

    @property
    def n(self) -> int:
        return int(self.state[0])

    def _arrays(self) -> tuple:
        return self.slots, self.hashes, self.starts, self.lens, self.counts, self.arena, self.state

    def _grow(self, piece_bytes: int) -> None:
        n, used = self.n, int(self.state[1])
        if n + 1 > self.hashes.shape[0] or 4 * (n + 1) > self.slots.shape[0]:
            cap = 2 * self.hashes.shape[0]
            self.hashes, self.starts, self.lens = (_grown(a, cap) for a in (self.hashes, self.starts, self.lens))
            counts = np.zeros(cap, dtype=np.int64)
            counts[:n] = self.counts[:n]
            self.counts = counts
            self.slots = np.full(2 * _pow2(2 * cap), -1, dtype=np.int64)
            _k.rehash(self.slots, self.hashes, self.lens, n)
        if used + piece_bytes > self.arena.shape[0]:
            self.arena = _grown(self.arena, max(2 * self.arena.shape[0], used + piece_bytes))

    def count(self, buf: np.ndarray, doc_bounds: np.ndarray, mode: int, piece_bounds: np.ndarray | None) -> None:
        """Count the pieces of ``buf``'s documents (or of ``piece_bounds`` in MODE_GIVEN)."""
        pb = piece_bounds if piece_bounds is not None else np.zeros(1, dtype=np.int64)
        doc, pos = 0, 0
        while True:
            status, doc, pos = _k.count_pieces(buf, doc_bounds, doc, pos, mode, char_classes(), pb,
                                               *self._arrays()[:6], self.state)
            if status == _k.OK:
                return
            stop = pb[doc + 1] if mode == MODE_GIVEN else doc_bounds[doc + 1]
            self._grow(int(stop - pos))

    def add(self, other: _Table) -> None:
        """Add every entry of ``other`` with its count."""
        first = 0
        while first < other.n:
            first = _k.add_table(other.hashes, other.starts, other.lens, other.counts, other.arena, first, other.n,
                                 *self._arrays()[:6], self.state)
            if first < other.n:
                self._grow(int(other.lens[first]))

    def keep(self, mask: np.ndarray) -> None:
        """Keep the entries where ``mask`` holds (in their order)."""
        n = self.n
        _k.compact(mask, self.hashes, self.starts, self.lens, self.counts, self.arena, self.state)
        self.counts[self.n:n] = 0
        self.slots[:] = -1
        _k.rehash(self.slots, self.hashes, self.lens, self.n)

    def prune(self, max_words: int) -> None:
        """Past ``max_words`` entries, drop those counted fewer than ``t`` times, ``t`` the
        smallest count that leaves at most ``max_words // 2``."""
        n = self.n
        if n <= max_words:
            return
        counts = self.counts[:n]
        half = max_words // 2
        t = int(np.partition(counts, n - 1 - half)[n - 1 - half]) + 1 if half < n else 1
        mask = counts >= t
        self.dropped += n - int(mask.sum())
        self.threshold = max(self.threshold, t)
        self.keep(mask)

    def cut(self, max_words: int) -> None:
        """Keep the ``max_words`` most frequent entries (ties: the first added)."""
        n = self.n
        if n <= max_words:
            return
        order = np.argsort(-self.counts[:n], kind="stable")
        mask = np.zeros(n, dtype=np.bool_)
        mask[order[:max_words]] = True
        self.dropped += n - max_words
        self.threshold = max(self.threshold, int(self.counts[order[max_words]]) + 1)
        self.keep(mask)

    def result(self) -> WordCounts:
        n = self.n
        bounds = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(self.lens[:n], out=bounds[1:])
        # entries' bytes lie in the arena in entry order, back to back (appended, or compacted)
        return WordCounts(self.arena[: int(self.state[1])].copy(), bounds, self.counts[:n].copy(),
                          dropped=self.dropped, threshold=self.threshold)

    def export(self) -> tuple:
        """The entries as arrays (to send from a worker process)."""
        n = self.n
        return (self.hashes[:n].copy(), self.starts[:n].copy(), self.lens[:n].copy(), self.counts[:n].copy(),
                self.arena[: int(self.state[1])].copy())

    @classmethod
    def from_export(cls, arrays: tuple) -> _Table:
        t = cls.__new__(cls)
        t.hashes, t.starts, t.lens, t.counts, t.arena = arrays
        t.state = np.array([t.hashes.shape[0], t.arena.shape[0]], dtype=np.int64)
        return t


def _pow2(n: int) -> int:
    return 1 << max(4, int(n - 1).bit_length())


def _grown(a: np.ndarray, cap: int) -> np.ndarray:
    out = np.empty(cap, dtype=a.dtype)
    out[: a.shape[0]] = a
    return out


@dataclass(frozen=True)
class WordCounts:
    """Distinct words (UTF-8) and how often each occurs: what :class:`~ubpe.TextTokenizer` trains on.

    Word ``i`` is ``data[bounds[i]:bounds[i + 1]]`` (uint8, int64 (W + 1,)), seen ``counts[i]``
    times (int64 >= 1). ``dropped``: distinct words dropped to keep within ``max_words``, and
    ``threshold``: the count below which words were dropped (0: none were, and the counts are
    exact).
    """

    data: np.ndarray
    bounds: np.ndarray
    counts: np.ndarray
    dropped: int = 0
    threshold: int = 0

    def __len__(self) -> int:
        return int(self.counts.shape[0])

    @property
    def total(self) -> int:
        """Occurrences counted (of the words kept)."""
        return int(self.counts.sum())

    def items(self) -> Iterator[tuple[str, int]]:
        """``(word, count)`` pairs (``surrogatepass`` decoding, so any piece reads back)."""
        raw = self.data.tobytes()
        b = self.bounds.tolist()
        for i, c in enumerate(self.counts.tolist()):
            yield raw[b[i]: b[i + 1]].decode("utf-8", "surrogatepass"), c

    def to_dict(self) -> dict[str, int]:
        return dict(self.items())

    @classmethod
    def from_mapping(cls, counts: Mapping[str, int]) -> WordCounts:
        """From ``{word: count}`` (str keys, int counts >= 1; ``TypeError`` / ``ValueError``)."""
        if not isinstance(counts, Mapping):
            raise TypeError(f"word counts must be a mapping of str to int, got {type(counts).__name__}")
        chunks, values = [], []
        for w, c in counts.items():
            if not isinstance(w, str):
                raise TypeError(f"words must be str, got {type(w).__name__} {w!r}")
            if not w:
                raise ValueError("a word must not be empty")
            values.append(check_int(f"the count of {w!r}", c, 1))
            chunks.append(w.encode("utf-8", "surrogatepass"))
        bounds = np.zeros(len(chunks) + 1, dtype=np.int64)
        np.cumsum([len(c) for c in chunks], out=bounds[1:])
        return cls(np.frombuffer(b"".join(chunks), dtype=np.uint8).copy(), bounds,
                   np.array(values, dtype=np.int64).reshape(-1))


# ==================================================================================== blocks


@dataclass(frozen=True)
class Spec:
    """How to turn corpus bytes into counted pieces (sent to worker processes)."""

    mode: int
    pattern: str | None
    special_tokens: tuple[str, ...]
    normalize: str | None
    fmt: str = "text"
    field: str | None = None
    chunk_size: int = DEFAULT_CHUNK_SIZE

    @property
    def lines(self) -> bool:
        """Whether text files are cut into lines (no safe cut inside a text)."""
        return self.mode not in (MODE_GPT2, MODE_GPT4)

    def split_re(self) -> Any:
        key = ("split", self.pattern)
        if key not in _COMPILED:
            import regex

            _COMPILED[key] = regex.compile(self.pattern)
        return _COMPILED[key]

    def special_matcher(self) -> Any:
        key = ("special", self.special_tokens)
        if key not in _COMPILED:
            from .text_engine import SpecialMatcher

            _COMPILED[key] = SpecialMatcher(self.special_tokens, range(len(self.special_tokens))) \
                if self.special_tokens else None
        return _COMPILED[key]


_COMPILED: dict[tuple, Any] = {}  # compiled regexes of the specs seen in this process


def count_block(spec: Spec, table: _Table, buf: np.ndarray, doc_bounds: np.ndarray) -> None:
    """Count the pieces of documents ``buf[doc_bounds[d]:doc_bounds[d + 1]]`` (valid UTF-8, or
    surrogatepass-encoded str) into ``table``: special tokens cut out, text normalised, split."""
    matcher = spec.special_matcher()
    if matcher is not None:
        buf, doc_bounds = _cut_specials(matcher, buf, doc_bounds)
    if spec.normalize is not None:
        buf, doc_bounds = _normalized(spec.normalize, buf, doc_bounds)
    pieces = None
    if spec.mode == MODE_GIVEN:
        raw = buf.tobytes()
        b = doc_bounds.tolist()
        texts = [raw[b[i]:b[i + 1]].decode("utf-8", "surrogatepass") for i in range(len(b) - 1)]
        pieces = regex_piece_bounds(spec.split_re(), texts, doc_bounds[:-1])
        if pieces[-1] != buf.shape[0]:
            pieces = np.append(pieces, buf.shape[0])
    table.count(buf, doc_bounds, spec.mode, pieces)


def _cut_specials(matcher: Any, buf: np.ndarray, doc_bounds: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The documents with every special token cut out (a document holding k becomes k + 1)."""
    hits = matcher.find(buf, doc_bounds[:-1], doc_bounds[1:])
    if not hits.shape[0]:
        return buf, doc_bounds
    # documents are [cuts[2j], cuts[2j+1]): the text between special tokens
    cuts = np.sort(np.concatenate([doc_bounds[:-1], doc_bounds[1:], hits[:, 0], hits[:, 1]]))
    pairs = cuts.reshape(-1, 2)
    lens = pairs[:, 1] - pairs[:, 0]
    idx = np.repeat(pairs[:, 0] - (np.cumsum(lens) - lens), lens) + np.arange(int(lens.sum()))
    out = buf[idx]
    bounds = np.zeros(len(pairs) + 1, dtype=np.int64)
    np.cumsum(lens, out=bounds[1:])
    return out, bounds


def _normalized(form: str, buf: np.ndarray, doc_bounds: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    raw = buf.tobytes()
    b = doc_bounds.tolist()
    parts = [unicodedata.normalize(form, raw[b[i]:b[i + 1]].decode("utf-8", "surrogatepass")).encode(
        "utf-8", "surrogatepass") for i in range(len(b) - 1)]
    bounds = np.zeros(len(parts) + 1, dtype=np.int64)
    np.cumsum([len(p) for p in parts], out=bounds[1:])
    return np.frombuffer(b"".join(parts), dtype=np.uint8), bounds


def text_blocks(texts: Iterable[str], spec: Spec) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """``(buf, doc_bounds)`` blocks of about ``chunk_size`` bytes from an iterable of str; a text
    longer than that is cut at safe points (GPT-2 / GPT-4 patterns) or kept whole."""
    if isinstance(texts, (bytes, bytearray, memoryview)):
        raise TypeError("texts must be str (or an iterable of str), got bytes: decode them first")
    if isinstance(texts, str):
        texts = [texts]
    chunk = spec.chunk_size
    parts: list[bytes] = []
    size = 0
    for i, text in enumerate(texts):
        if not isinstance(text, str):
            raise TypeError(f"texts[{i}] must be a str, got {type(text).__name__}")
        raw = text.encode("utf-8", "surrogatepass")
        if len(raw) > chunk and not spec.lines:
            start = 0
            arr = np.frombuffer(raw, dtype=np.uint8)
            while len(raw) - start > chunk:
                cut = _k.last_safe_cut(arr, start, start + chunk)
                if cut < 0:
                    cut = _k.last_safe_cut(arr, start, min(len(raw), start + MAX_BLOCK_CHUNKS * chunk))
                if cut < 0:
                    break
                if parts:
                    yield _joined(parts)
                    parts, size = [], 0
                yield _joined([raw[start:cut]])
                start = cut
            raw = raw[start:]
        parts.append(raw)
        size += len(raw)
        if size >= chunk:
            yield _joined(parts)
            parts, size = [], 0
    if parts:
        yield _joined(parts)


def _joined(parts: list[bytes]) -> tuple[np.ndarray, np.ndarray]:
    bounds = np.zeros(len(parts) + 1, dtype=np.int64)
    np.cumsum([len(p) for p in parts], out=bounds[1:])
    return np.frombuffer(b"".join(parts), dtype=np.uint8), bounds


# ==================================================================================== files


@dataclass(frozen=True)
class Task:
    """One unit of work: bytes ``[start, stop)`` of a file (moved to the next cut point, so the
    tasks of a file split it exactly), or one row group of a parquet file."""

    path: str
    start: int
    stop: int
    row_group: int = -1

    def __str__(self) -> str:
        if self.row_group >= 0:
            return f"{self.path} (row group {self.row_group})"
        return f"{self.path} (bytes {self.start}-{self.stop})"


def file_tasks(paths: Iterable[str | os.PathLike], spec: Spec) -> list[Task]:
    """The tasks of ``paths``, in corpus order (each file's ranges, ``chunk_size`` bytes each)."""
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    tasks: list[Task] = []
    for p in paths:
        if not isinstance(p, (str, os.PathLike)):
            raise TypeError(f"paths must be str or os.PathLike, got {type(p).__name__}")
        path = os.fspath(p)
        if spec.fmt == "parquet":
            pq = _pyarrow_parquet()
            n = pq.ParquetFile(path).metadata.num_row_groups
            tasks += [Task(path, 0, 0, g) for g in range(n)]
            continue
        size = os.path.getsize(path)
        tasks += [Task(path, a, min(a + spec.chunk_size, size)) for a in range(0, max(size, 1), spec.chunk_size)]
    return tasks


def _pyarrow_parquet() -> Any:
    try:
        import pyarrow.parquet as pq
    except ImportError:
        raise ImportError("reading parquet files needs pyarrow (pip install pyarrow); "
                          "the text and jsonl formats need nothing more") from None
    return pq


def _next_cut(f: io.BufferedReader, at: int, size: int, lines: bool, limit: int) -> int:
    """The first cut point ``>= at`` of the open file (0 and ``size`` are cut points); when there
    is none before ``at + limit``, the first character boundary from there (a non-decreasing
    function of ``at``, so the tasks of a file always split it exactly)."""
    if at <= 0:
        return 0
    pos = max(0, at - 2)
    while pos < size:
        if pos >= at + limit:
            f.seek(at + limit)
            tail = f.read(4)
            skip = next((i for i, b in enumerate(tail) if b & 0xC0 != 0x80), len(tail))
            return min(size, at + limit + skip)
        f.seek(pos)
        data = f.read(1 << 16)
        if not data:
            break
        if lines:
            i = data.find(b"\n")
            if i >= 0:
                return pos + i + 1
        else:
            m = _SAFE_CUT.search(data)
            if m is not None:
                return pos + m.start() + 2
        pos += len(data) - 2 if len(data) > 2 else 1
    return size


def count_task(spec: Spec, task: Task) -> tuple:
    """Count one task into a table of its own; return it exported (``_Table.export``)."""
    table = _Table()
    if spec.fmt == "parquet":
        _count_parquet(spec, task, table)
        return table.export()
    with open(task.path, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        lines = spec.lines or spec.fmt == "jsonl"
        limit = MAX_BLOCK_CHUNKS * spec.chunk_size
        start = _next_cut(f, task.start, size, lines, limit)
        stop = _next_cut(f, task.stop, size, lines, limit) if task.stop < size else size
        if stop <= start:
            return table.export()
        f.seek(start)
        data = np.frombuffer(f.read(stop - start), dtype=np.uint8)
    bad = _k.utf8_error(data, 0, data.shape[0])
    if bad >= 0:
        raise CorruptDataError(f"{task.path}: not UTF-8 at byte {start + bad} "
                               f"(bytes {data[bad:bad + 4].tobytes()!r})")
    if spec.fmt == "jsonl":
        _count_jsonl(spec, task, table, data, start)
    elif spec.lines:
        ends = np.flatnonzero(data == 10) + 1
        bounds = np.unique(np.concatenate(([0], ends, [data.shape[0]]))).astype(np.int64)
        count_block(spec, table, data, bounds)
    else:
        count_block(spec, table, data, np.array([0, data.shape[0]], dtype=np.int64))
    return table.export()


def _count_jsonl(spec: Spec, task: Task, table: _Table, data: np.ndarray, start: int) -> None:
    raw = data.tobytes()
    texts: list[str] = []
    pos = 0
    for line in raw.splitlines(keepends=True):
        at = start + pos
        pos += len(line)
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as e:
            raise CorruptDataError(f"{task.path}: not a JSON line at byte {at}: {e}") from None
        if not isinstance(record, dict) or spec.field not in record:
            raise CorruptDataError(f"{task.path}: the JSON line at byte {at} has no field {spec.field!r}")
        value = record[spec.field]
        if not isinstance(value, str):
            raise CorruptDataError(f"{task.path}: field {spec.field!r} of the JSON line at byte {at} is "
                                   f"{type(value).__name__}, not a string")
        texts.append(value)
    for buf, bounds in text_blocks(texts, spec):
        count_block(spec, table, buf, bounds)


def _count_parquet(spec: Spec, task: Task, table: _Table) -> None:
    import pyarrow as pa

    pq = _pyarrow_parquet()
    pf = pq.ParquetFile(task.path)
    if spec.field not in pf.schema_arrow.names:
        raise CorruptDataError(f"{task.path}: no column {spec.field!r} (columns: {', '.join(pf.schema_arrow.names)})")
    rows = max(1, spec.chunk_size // 1024)  # batches of about chunk_size bytes for 1 KB texts
    for batch in pf.iter_batches(batch_size=rows, row_groups=[task.row_group], columns=[spec.field]):
        arr = batch.column(0)
        if pa.types.is_dictionary(arr.type):
            arr = arr.dictionary_decode()
        if not (pa.types.is_string(arr.type) or pa.types.is_large_string(arr.type)):
            raise CorruptDataError(f"{task.path}: column {spec.field!r} holds {arr.type}, not strings")
        if arr.null_count:
            arr = arr.drop_null()
        if len(arr) == 0:
            continue
        wide = pa.types.is_large_string(arr.type)
        offsets = np.frombuffer(arr.buffers()[1], dtype=np.int64 if wide else np.int32)[arr.offset: arr.offset + len(arr) + 1]
        data = np.frombuffer(arr.buffers()[2], dtype=np.uint8)[offsets[0]: offsets[-1]]
        bounds = (offsets - offsets[0]).astype(np.int64)
        bad = _k.utf8_error(data, 0, data.shape[0])
        if bad >= 0:
            raise CorruptDataError(f"{task.path}: column {spec.field!r} is not UTF-8 at byte {bad} of row group "
                                   f"{task.row_group}")
        count_block(spec, table, data, bounds)


# ==================================================================================== driving


def count(spec: Spec, *, texts: Iterable[str] | None = None, tasks: list[Task] | None = None,
          max_words: int | None = DEFAULT_MAX_WORDS, num_threads: int = 1, workers: str = "threads",
          progress: bool = False) -> WordCounts:
    """Count the words of ``texts`` (an iterable of str) or of ``tasks`` (files) in parallel;
    the result depends on neither ``num_threads`` nor ``workers`` (module docstring)."""
    table = _Table()
    bar = None
    if progress:
        from tqdm.auto import tqdm

        bar = tqdm(total=len(tasks) if tasks is not None else None, unit="block", desc="count")

    def merge(result: tuple | _Table) -> None:
        table.add(result if isinstance(result, _Table) else _Table.from_export(result))
        if max_words is not None:
            table.prune(max_words)
        if bar is not None:
            bar.update(1)

    def count_buffer(buf: np.ndarray, bounds: np.ndarray) -> tuple:
        t = _Table()
        count_block(spec, t, buf, bounds)
        return t.export()

    try:
        if texts is not None:
            jobs: Iterator[tuple] = ((count_buffer, block) for block in text_blocks(texts, spec))
        else:
            jobs = ((count_task, (spec, task)) for task in tasks or [])
        if num_threads <= 1:
            for fn, args in jobs:
                merge(fn(*args))
        else:
            _run_pool(jobs, merge, num_threads, workers, spec)
    finally:
        if bar is not None:
            bar.close()
    if max_words is not None:
        table.cut(max_words)
    return table.result()


def _run_pool(jobs: Iterator[tuple], merge: Any, num_threads: int, workers: str, spec: Spec) -> None:
    """Run ``jobs`` (``(fn, args)``) on a pool, at most ``2 * num_threads`` in flight, merging
    their results in job order."""
    if workers == "processes":
        import multiprocessing

        pool: Any = ProcessPoolExecutor(num_threads, mp_context=multiprocessing.get_context("spawn"))
    else:
        pool = ThreadPoolExecutor(num_threads)
    pending: list[tuple[Future, Any]] = []
    try:
        for fn, args in jobs:
            if fn is not count_task and workers == "processes":
                fn, args = _count_buffer_in_process, (spec, *args)
            try:
                pending.append((pool.submit(fn, *args), args))
            except BrokenProcessPool as e:
                raise _died(args) from e
            while len(pending) >= 2 * num_threads:
                merge(_result(*pending.pop(0)))
        while pending:
            merge(_result(*pending.pop(0)))
    finally:
        for fut, _ in pending:
            fut.cancel()
        pool.shutdown(wait=True, cancel_futures=True)


def _count_buffer_in_process(spec: Spec, buf: np.ndarray, bounds: np.ndarray) -> tuple:
    t = _Table()
    count_block(spec, t, buf, bounds)
    return t.export()


def _result(fut: Future, args: Any) -> Any:
    try:
        return fut.result()
    except BrokenProcessPool as e:
        raise _died(args) from e


def _died(args: Any) -> RuntimeError:
    what = args[1] if len(args) > 1 and isinstance(args[1], Task) else "a block of texts"
    return RuntimeError(f"a counting worker process died while counting {what} or before (killed, or out of "
                        f"memory?); the run is stopped")
