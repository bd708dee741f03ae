"""Validated Python driver of the compiled BPE trainer (spec: docs/algorithm.md).

``train`` validates its arguments, builds the per-position linked list and the pair tables with
the kernels of :mod:`ubpe._kernels.train`, then runs ``train_batches`` repeatedly: the kernel
returns to Python to report progress and whenever an array must grow (growing arrays inside a
numba hot loop is slow), and Python grows it and calls again. The result equals
``tests/reference.py::train`` exactly.
"""

from __future__ import annotations

import contextlib
import hashlib
import time
from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import Callable

import numpy as np

from ._kernels import train as _k
from ._validate import check_int

DEFAULT_WINDOW = 1024

_INT32_MAX = int(np.iinfo(np.int32).max)
_MAX_BATCHES_PER_CALL = 256  # return to Python (progress) at least this often...
_MAX_WORK_PER_CALL = 1 << 21  # ...or after this many replacements
# Initial capacities; the arrays grow on demand (tests shrink these to exercise growth).
_MIN_PID_CAP = 256
# The initial pair count indexes (left, right) directly when the alphabet has at most
# sqrt(_DENSE_MAX) symbols and the table is no larger than max(_DENSE_MIN, n) slots.
_DENSE_MAX = 1 << 20
_DENSE_MIN = 1 << 16
_POOL_SLACK = 1024
_POOL_SLACK_FRACTION = 0.25
_PEND_INIT = 1024
_MTAB_INIT = 1024


@dataclass(frozen=True)
class TrainResult:
    """Output of :func:`train`; merge ``k`` created token ``alphabet_size + k``."""

    merges: np.ndarray  # (M, 2) int32, priority space: row k created token A + k; children < A + k
    batches: np.ndarray  # (M,) int32, non-decreasing batch index (0, 1, ...)
    counts: np.ndarray  # (M,) int64, occurrences replaced by merge k
    df: np.ndarray  # (M,) int64, idf units holding at least one replaced occurrence (weighted)
    n_units: int  # number of idf units D (each counted with its document's multiplicity)
    stopped_early: bool  # no pair reached min_count before the vocabulary reached n_tokens
    stream: np.ndarray | None  # final training token stream (int32, concatenated docs), if asked


def _check_offsets(name: str, offsets, n: int) -> np.ndarray:
    offsets = np.asarray(offsets)
    if offsets.ndim != 1 or offsets.shape[0] < 1:
        raise ValueError(f"{name} must be a 1-D array of at least one offset, got shape {offsets.shape}")
    if offsets.dtype.kind not in "iu":
        raise TypeError(f"{name} must hold integers, got dtype {offsets.dtype}")
    offsets = np.ascontiguousarray(offsets, dtype=np.int64)
    if offsets[0] != 0 or offsets[-1] != n:
        raise ValueError(f"{name} must start at 0 and end at n={n}, got {offsets[0]} .. {offsets[-1]}")
    if offsets.shape[0] > 1 and np.any(np.diff(offsets) < 0):
        raise ValueError(f"{name} must be non-decreasing")
    return offsets


def unit_offsets_for(doc_offsets: np.ndarray, window: int | None, *, n_docs: int | None = None) -> np.ndarray:
    """idf units as offsets (int64, starts at 0, ends at n).

    ``window=None``: the documents, except that a single-document corpus is cut into windows of
    ``DEFAULT_WINDOW`` positions; ``window=W``: every document cut into windows of ``W`` positions
    (an empty document then has no unit). Matches ``reference.units_for``. ``n_docs`` is the
    number of documents the corpus stands for (default: as many as ``doc_offsets`` delimits;
    with multiplicities, their sum), which decides the single-document case.
    """
    doc_offsets = np.asarray(doc_offsets)
    if doc_offsets.ndim != 1 or doc_offsets.shape[0] < 1 or doc_offsets.dtype.kind not in "iu":
        raise ValueError("doc_offsets must be a 1-D integer array of at least one offset")
    doc_offsets = np.ascontiguousarray(doc_offsets, dtype=np.int64)
    if n_docs is None:
        n_docs = doc_offsets.shape[0] - 1
    if window is None:
        if n_docs != 1:
            return doc_offsets.copy()
        window = DEFAULT_WINDOW
    window = check_int("window", window, 1, np.iinfo(np.int64).max)
    starts = doc_offsets[:-1]
    lengths = np.diff(doc_offsets)
    if np.any(lengths < 0):
        raise ValueError("doc_offsets must be non-decreasing")
    per_doc = -(-lengths // window)  # windows per document, 0 for an empty one
    first = np.repeat(starts, per_doc)
    rank = np.arange(first.shape[0], dtype=np.int64) - np.repeat(np.cumsum(per_doc) - per_doc, per_doc)
    out = np.empty(first.shape[0] + 1, dtype=np.int64)
    out[:-1] = first + rank * window
    out[-1] = doc_offsets[-1]
    return out


def _unit_weights(weights, doc_offsets: np.ndarray, unit_offsets: np.ndarray) -> np.ndarray:
    """The multiplicity (int64, (U,)) of every idf unit: that of its document; empty if unweighted.

    A unit's positions all count its multiplicity, so units must lie inside documents.
    """
    empty = np.zeros(0, dtype=np.int64)
    if weights is None:
        return empty
    w = np.asarray(weights)
    n_docs = doc_offsets.shape[0] - 1
    if w.dtype.kind not in "iu" or w.ndim != 1:
        raise TypeError(f"weights must be a 1-D integer array, got dtype {w.dtype} with shape {w.shape}")
    if w.shape[0] != n_docs:
        raise ValueError(f"weights must hold one multiplicity per document ({n_docs}), got {w.shape[0]}")
    if n_docs and (int(w.min()) < 1 or int(w.max()) > _INT32_MAX):
        raise ValueError(f"weights must be in [1, {_INT32_MAX}]")
    w = w.astype(np.int64)
    if np.array_equal(unit_offsets, doc_offsets):  # units are the documents (empty ones too)
        return w
    # the document of each unit: that of its first position; a non-empty unit must end in it too
    starts, ends = unit_offsets[:-1], unit_offsets[1:]
    first = np.searchsorted(doc_offsets, starts, side="right") - 1
    last = np.searchsorted(doc_offsets, np.maximum(ends - 1, starts), side="right") - 1
    if np.any((ends > starts) & (first != last)):
        raise ValueError("with weights, every idf unit must lie inside one document")
    # an empty unit at a document boundary belongs to the (empty) document starting there
    first = np.minimum(first, n_docs - 1) if n_docs else first
    uw = w[first] if n_docs else np.zeros(len(starts), dtype=np.int64)
    return np.ascontiguousarray(uw, dtype=np.int64)


def _grown(arr: np.ndarray, size: int) -> np.ndarray:
    out = np.empty(size, dtype=arr.dtype)
    out[: arr.shape[0]] = arr
    return out


def _table_for(n_pids_cap: int) -> np.ndarray:
    size = 1 << max(4, int(2 * n_pids_cap - 1).bit_length())
    return np.full(size, -1, dtype=np.int32)


class TrainingReuse:
    """Training runs kept by :func:`reuse_training`, and the seconds spent training.

    ``seconds`` counts only runs that trained (a reused or derived result costs nothing);
    ``runs`` and ``reused`` count calls of :func:`train` inside the context.
    """

    def __init__(self) -> None:
        self._runs: dict[tuple, tuple[int, TrainResult]] = {}
        self.seconds = 0.0
        self.runs = 0
        self.reused = 0

    @staticmethod
    def key(ids: np.ndarray, doc_offsets: np.ndarray, unit_offsets: np.ndarray, alphabet_size: int,
            n_candidates: int, min_count: int, multiplicities: np.ndarray) -> tuple:
        h = hashlib.sha256()
        for arr in (ids, doc_offsets, unit_offsets, multiplicities):
            h.update(str(arr.shape[0]).encode())
            h.update(np.ascontiguousarray(arr).tobytes())
        return (h.hexdigest(), alphabet_size, n_candidates, min_count)

    def lookup(self, key: tuple, alphabet_size: int, n_tokens: int, need_stream: bool) -> TrainResult | None:
        """The result ``train`` would return for ``n_tokens``, when a kept run determines it."""
        if key not in self._runs:
            return None
        kept_tokens, r = self._runs[key]
        if kept_tokens == n_tokens and (r.stream is not None or not need_stream):
            return replace(_prefix(r, len(r.merges), r.stopped_early),
                           stream=None if r.stream is None else r.stream.copy())
        if need_stream:  # the final stream of a shorter run is not kept
            return None
        m = len(r.merges)
        want = n_tokens - alphabet_size
        if want <= 0:
            return _prefix(r, 0, False)
        if want <= m:  # training stops after the batch that reaches n_tokens (docs/algorithm.md)
            last_batch = r.batches[want - 1]
            return _prefix(r, int(np.searchsorted(r.batches, last_batch, side="right")), False)
        if r.stopped_early:  # the heap ran dry before n_tokens: any larger n_tokens stops there too
            return _prefix(r, m, True)
        return None

    def keep(self, key: tuple, n_tokens: int, result: TrainResult) -> None:
        old = self._runs.get(key)
        if old is None or n_tokens >= old[0]:
            self._runs[key] = (n_tokens, result)


def _prefix(r: TrainResult, m: int, stopped_early: bool) -> TrainResult:
    return replace(r, merges=r.merges[:m].copy(), batches=r.batches[:m].copy(), counts=r.counts[:m].copy(),
                   df=r.df[:m].copy(), stopped_early=stopped_early, stream=None)


_reuse: TrainingReuse | None = None


@contextlib.contextmanager
def reuse_training() -> Iterator[TrainingReuse]:
    """Within the context, :func:`train` keeps each run and answers a repeated call, or a call
    for fewer tokens on the same ids, documents, alphabet size, candidates and min_count, from
    the kept run: the batches training makes do not depend on ``n_tokens``, which only decides
    after which batch it stops, so the shorter run is exactly a prefix of batches of the longer
    one (``tests/test_trainer.py`` checks it). Call with the largest ``n_tokens`` first.
    Used by :func:`ubpe.experiments.sweep`; not thread-safe. Contexts do not nest."""
    global _reuse
    if _reuse is not None:
        raise RuntimeError("reuse_training contexts do not nest")
    _reuse = TrainingReuse()
    try:
        yield _reuse
    finally:
        _reuse = None


def collapse_documents(ids: np.ndarray, doc_offsets: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """Identical documents merged into their first occurrence: ``(ids, doc_offsets, weights)``.

    ``ids`` int32 (n,), ``doc_offsets`` int64 (D+1,). The distinct documents keep the order of
    their first copies; ``weights[d]`` (int64) counts the documents equal to distinct document
    ``d``; ``weights`` is None (and the inputs come back unchanged) when every document is
    distinct. Training on the result with these multiplicities gives exactly the model of the
    full corpus (:func:`train`, ``weights``).
    """
    n_docs = doc_offsets.shape[0] - 1
    if n_docs < 2:
        return ids, doc_offsets, None
    ids = np.ascontiguousarray(ids, dtype=np.int32)
    doc_offsets = np.ascontiguousarray(doc_offsets, dtype=np.int64)
    owner = np.empty(n_docs, dtype=np.int64)  # first copy of each document
    table = np.full(1 << (2 * n_docs - 1).bit_length(), -1, dtype=np.int64)
    if _k.first_copies(ids, doc_offsets, table, np.empty(n_docs, dtype=np.int64), owner) == n_docs:
        return ids, doc_offsets, None
    first = owner == np.arange(n_docs)
    weights = np.bincount(owner, minlength=n_docs)[first].astype(np.int64)
    lengths = np.diff(doc_offsets)
    new_offsets = np.concatenate(([0], np.cumsum(lengths[first]))).astype(np.int64)
    return ids[np.repeat(first, lengths)], new_offsets, weights


def train(
    ids: np.ndarray,
    doc_offsets: np.ndarray,
    unit_offsets: np.ndarray,
    alphabet_size: int,
    n_tokens: int,
    n_candidates: int,
    min_count: int,
    *,
    progress: Callable[[int], None] | None = None,
    return_stream: bool = False,
    weights: np.ndarray | None = None,
) -> TrainResult:
    """Train BPE merges on ``ids`` (int32, values in ``[0, alphabet_size)``, checked by caller).

    ``doc_offsets`` (int64, D+1) delimits documents (pairs never cross one); ``unit_offsets``
    (int64, U+1) the idf units. Training runs while ``alphabet_size + M < n_tokens``; the last
    batch may overshoot by up to ``n_candidates - 1``. ``progress(n_merges)`` is called as
    training advances.

    ``weights`` (D integers >= 1, optional) is each document's multiplicity: the result equals
    training on the corpus where document ``d`` appears ``weights[d]`` times (each copy its own
    document, and its units that many units), merges, counts, df and ``n_units`` alike, at the
    cost of the distinct documents only. Units must then lie inside documents.
    """
    ids = np.asarray(ids)
    if ids.ndim != 1:
        raise ValueError(f"ids must be 1-D, got shape {ids.shape}")
    if ids.dtype.kind not in "iu":
        raise TypeError(f"ids must hold integers, got dtype {ids.dtype}")
    alphabet_size = check_int("alphabet_size", alphabet_size, 1, _INT32_MAX)
    n_tokens = check_int("n_tokens", n_tokens, 0, _INT32_MAX)
    n_candidates = check_int("n_candidates", n_candidates, 1, np.iinfo(np.int64).max)
    min_count = check_int("min_count", min_count, 1, np.iinfo(np.int64).max)
    n = ids.shape[0]
    if n > _INT32_MAX - 1:
        raise ValueError(f"ids must have fewer than {_INT32_MAX} values, got {n}")
    doc_offsets = _check_offsets("doc_offsets", doc_offsets, n)
    unit_offsets = _check_offsets("unit_offsets", unit_offsets, n)
    n_units = unit_offsets.shape[0] - 1
    if n_units > _INT32_MAX:
        raise ValueError(f"unit_offsets must delimit at most {_INT32_MAX} units, got {n_units}")
    uw = _unit_weights(weights, doc_offsets, unit_offsets)
    if weights is not None:
        n_units = int(uw.sum())
    if n and (ids.min() < 0 or ids.max() >= alphabet_size):
        raise ValueError(f"ids must be in [0, alphabet_size={alphabet_size})")
    ids = np.ascontiguousarray(ids, dtype=np.int32)
    reuse = _reuse
    if reuse is None:
        return _train(ids, doc_offsets, unit_offsets, n_units, alphabet_size, n_tokens, n_candidates,
                      min_count, progress, return_stream, uw)
    # subtle: with the offsets, the unit multiplicities determine every count (units lie inside
    # documents, and an empty document's weight only enters n_units, which is their sum)
    key = reuse.key(ids, doc_offsets, unit_offsets, alphabet_size, n_candidates, min_count, uw)
    reuse.runs += 1
    found = reuse.lookup(key, alphabet_size, n_tokens, return_stream)
    if found is not None:
        reuse.reused += 1
        if progress is not None and len(found.merges):
            progress(len(found.merges))
        return found
    t0 = time.perf_counter()
    result = _train(ids, doc_offsets, unit_offsets, n_units, alphabet_size, n_tokens, n_candidates,
                    min_count, progress, return_stream, uw)
    reuse.seconds += time.perf_counter() - t0
    reuse.keep(key, n_tokens, result)
    return result


def _train(ids: np.ndarray, doc_offsets: np.ndarray, unit_offsets: np.ndarray, n_units: int,
           alphabet_size: int, n_tokens: int, n_candidates: int, min_count: int,
           progress: Callable[[int], None] | None, return_stream: bool, uw: np.ndarray) -> TrainResult:
    """:func:`train` on validated arguments (``uw``: multiplicity per unit, empty if unweighted)."""
    n = ids.shape[0]
    # A batch accepts at most one candidate per distinct pair, and there are < n pairs.
    nc = max(1, min(n_candidates, n))
    max_merges = max(0, min(n_tokens - alphabet_size - 1 + nc, n - 1))
    if n_tokens - alphabet_size <= 0:
        max_merges = 0
    V = n_tokens + nc  # every token id is < V, so left * V + right is a unique key
    if V > _INT32_MAX:
        raise ValueError(f"n_tokens + min(n_candidates, len(ids)) must be <= {_INT32_MAX}, got {V}")

    rec = np.empty((n, 4), dtype=np.int32)
    pu = np.empty(n, dtype=np.int32)  # unit of each position
    _k.link_documents(ids, doc_offsets, unit_offsets, rec, pu)
    state = np.zeros(_k.S_SIZE, dtype=np.int64)

    # pair ids of the initial stream; resumable so that the tables start small
    n_pair_pos = n - (doc_offsets.shape[0] - 1) + int(np.count_nonzero(np.diff(doc_offsets) == 0))
    bound = max(1, min(n_pair_pos, alphabet_size * alphabet_size))
    A2 = alphabet_size * alphabet_size
    if A2 <= min(_DENSE_MAX, max(_DENSE_MIN, n)):  # a direct index of every (left, right) pair
        dense = np.full(A2, -1, dtype=np.int32)
        pid_cap = max(_MIN_PID_CAP, bound)  # never grows
        table = np.zeros(0, dtype=np.int32)
    else:
        dense = np.zeros(0, dtype=np.int32)
        pid_cap = max(_MIN_PID_CAP, min(bound, 1 << 16))
        table = _table_for(pid_cap)
    keys = np.empty(pid_cap, dtype=np.int64)
    cnt = np.empty(pid_cap, dtype=np.int64)
    pos = 0
    while True:
        pos = _k.count_initial_pairs(rec, V, table, keys, cnt, pos, state, pu, uw, dense, alphabet_size)
        if pos >= n:
            break
        pid_cap *= 2
        keys = _grown(keys, pid_cap)
        cnt = _grown(cnt, pid_cap)
        table = _table_for(pid_cap)
        _k.rehash(keys, int(state[_k.S_NPIDS]), table)
    # pairs below min_count can never be selected nor block one: leave them untracked
    n_pids, tracked = _k.drop_rare_pairs(rec, keys, cnt, int(state[_k.S_NPIDS]), min_count,
                                         np.empty(int(state[_k.S_NPIDS]), dtype=np.int64))
    state[_k.S_NPIDS] = n_pids
    pid_cap = max(_MIN_PID_CAP, 2 * n_pids)
    keys = _grown(keys[:n_pids], pid_cap)
    cnt = _grown(cnt[:n_pids], pid_cap)
    table = _table_for(pid_cap)
    _k.rehash(keys, n_pids, table)
    occ_s = np.empty(pid_cap, dtype=np.int64)
    occ_e = np.empty(pid_cap, dtype=np.int64)
    pool = np.empty(tracked + max(_POOL_SLACK, int(n * _POOL_SLACK_FRACTION)), dtype=np.int32)
    state[_k.S_POOL] = _k.build_occurrences(rec, n_pids, occ_s, occ_e, pool)
    hsnap = np.empty(pid_cap, dtype=np.int64)
    hkey = np.empty(pid_cap, dtype=np.int64)
    hpid = np.empty(pid_cap, dtype=np.int32)
    state[_k.S_HEAP] = _k.heapify(cnt, keys, n_pids, min_count, hsnap, hkey, hpid)
    pend = np.empty((_PEND_INIT, 2), dtype=np.int32)  # positions given new pairs in a merge, and the pair
    mtab = np.full(_MTAB_INIT, -1, dtype=np.int32)
    state[_k.S_PHASE] = -1

    cand_pid = np.empty(nc, dtype=np.int32)
    cand_cnt = np.empty(nc, dtype=np.int64)
    cand_ok = np.empty(nc, dtype=np.bool_)
    m_left = np.empty(max_merges, dtype=np.int32)
    m_right = np.empty(max_merges, dtype=np.int32)
    m_batch = np.empty(max_merges, dtype=np.int32)
    m_count = np.empty(max_merges, dtype=np.int64)
    m_df = np.empty(max_merges, dtype=np.int64)

    stopped_early = False
    reported = 0
    while alphabet_size < n_tokens:
        status = _k.train_batches(
            rec, pu, pool, pend, keys, cnt, occ_s, occ_e, table, mtab, hsnap, hkey, hpid,
            cand_pid, cand_cnt, cand_ok, m_left, m_right, m_batch, m_count, m_df, state,
            alphabet_size, n_tokens, V, nc, min_count, _MAX_BATCHES_PER_CALL, _MAX_WORK_PER_CALL, uw,
        )
        n_merges = int(state[_k.S_MERGES])
        if progress is not None and n_merges != reported:
            progress(n_merges)
            reported = n_merges
        if status == _k.DONE:
            break
        if status == _k.STOPPED:
            stopped_early = True
            break
        if status == _k.NEED_CAPACITY:
            need = int(state[_k.S_NEED_PIDS])
            if need > keys.shape[0]:
                pid_cap = max(need, 2 * keys.shape[0])
                keys, cnt, occ_s, occ_e = (_grown(a, pid_cap) for a in (keys, cnt, occ_s, occ_e))
                hsnap, hkey, hpid = (_grown(a, pid_cap) for a in (hsnap, hkey, hpid))
                table = _table_for(pid_cap)
                _k.rehash(keys, int(state[_k.S_NPIDS]), table)
            need = int(state[_k.S_NEED_PEND])
            if need > pend.shape[0]:
                pend = np.empty((max(need, 2 * pend.shape[0]), 2), dtype=np.int32)
            need = int(state[_k.S_NEED_MTAB])
            if need > mtab.shape[0]:
                mtab = np.full(need, -1, dtype=np.int32)
            need = int(state[_k.S_NEED_POOL])
            if need > pool.shape[0]:
                pool = _grown(pool[: int(state[_k.S_POOL])], need)
        elif status != _k.YIELD:  # pragma: no cover - kernel contract
            raise RuntimeError(f"unexpected trainer kernel status {status}")

    m = int(state[_k.S_MERGES])
    stream = None
    if return_stream:
        tok = rec[:, _k.TOK]
        stream = np.ascontiguousarray(tok[tok >= 0])
    return TrainResult(
        merges=np.stack([m_left[:m], m_right[:m]], axis=1).astype(np.int32, copy=False).reshape(m, 2),
        batches=m_batch[:m].copy(),
        counts=m_count[:m].copy(),
        df=m_df[:m].copy(),
        n_units=n_units,
        stopped_early=stopped_early,
        stream=stream,
    )
