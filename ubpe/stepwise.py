"""The compiled trainer in steps, over a corpus split in shares (the engine of :func:`ubpe.dask.fit`).

A :class:`ShareTrainer` holds one share of the documents (one worker's partitions) with the
incremental state of the compiled trainer (:mod:`ubpe._kernels.train`: linked positions, pair
ids, counts and occurrence lists) between calls. It reports every pair count once, then, for
each batch, applies the merges and reports only the counts that changed: a round costs what its
merges replace, never a recount. A :class:`BatchSelector` sums what the shares report and selects
each batch with the kernel's own selection (``select_batch``, the code ``train_batches`` runs),
so :func:`train` over any split of the documents gives exactly :func:`ubpe.trainer.train` on all
of them: merges, batches, counts, df (``tests/test_stepwise.py`` checks it).

Exactness rests on two facts (docs/dask.md, "How fit runs"): the count of an existing pair only drops
(a pair holding token ``X`` is created by ``X``'s merge and never again), so the selector's lazy
heap needs each pair pushed once, when its creation round's counts have arrived; and a share
cannot know whether a pair rare in it is rare overall, so a share tracks every pair (the
in-process trainer drops pairs below ``min_count``; the selector applies ``min_count`` to the
sums instead).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from . import trainer as _trainer
from ._kernels import train as _k

_INT32_MAX = int(np.iinfo(np.int32).max)


class ShareTrainer:
    """One share of a corpus with the compiled trainer's state, kept between batches.

    ``ids`` (int32, (n,), values in ``[0, alphabet_size)``), ``doc_offsets`` (int64, (D+1,)) and
    ``unit_offsets`` (int64, (U+1,)) as :func:`ubpe.trainer.train` takes them (validated by the
    caller); ``V`` the key base, larger than every token id training can make (the same in every
    share and in the selector). Memory: about 30 bytes per value, for this share's values only.
    """

    def __init__(self, ids: np.ndarray, doc_offsets: np.ndarray, unit_offsets: np.ndarray,
                 alphabet_size: int, V: int) -> None:
        n = ids.shape[0]
        if n > _INT32_MAX - 1:
            raise ValueError(f"a share must hold fewer than {_INT32_MAX} values, got {n}")
        self.V = V
        self.n_values = n
        self.n_units = unit_offsets.shape[0] - 1
        self._uw = np.zeros(0, dtype=np.int64)  # every position counts once
        rec = np.empty((n, 4), dtype=np.int32)
        pu = np.empty(n, dtype=np.int32)
        _k.link_documents(ids, doc_offsets, unit_offsets, rec, pu)
        state = np.zeros(_k.S_SIZE, dtype=np.int64)
        n_pair_pos = n - (doc_offsets.shape[0] - 1) + int(np.count_nonzero(np.diff(doc_offsets) == 0))
        bound = max(1, min(n_pair_pos, alphabet_size * alphabet_size))
        a2 = alphabet_size * alphabet_size
        if a2 <= min(_trainer._DENSE_MAX, max(_trainer._DENSE_MIN, n)):
            dense = np.full(a2, -1, dtype=np.int32)
            cap = max(_trainer._MIN_PID_CAP, bound)
            table = np.zeros(0, dtype=np.int32)
        else:
            dense = np.zeros(0, dtype=np.int32)
            cap = max(_trainer._MIN_PID_CAP, min(bound, 1 << 16))
            table = _trainer._table_for(cap)
        keys = np.empty(cap, dtype=np.int64)
        cnt = np.empty(cap, dtype=np.int64)
        pos = 0
        while True:
            pos = _k.count_initial_pairs(rec, V, table, keys, cnt, pos, state, pu, self._uw, dense, alphabet_size)
            if pos >= n:
                break
            cap *= 2
            keys = _trainer._grown(keys, cap)
            cnt = _trainer._grown(cnt, cap)
            table = _trainer._table_for(cap)
            _k.rehash(keys, int(state[_k.S_NPIDS]), table)
        del dense
        n_pids = int(state[_k.S_NPIDS])
        cap = max(_trainer._MIN_PID_CAP, 2 * n_pids)
        self.keys = _trainer._grown(keys[:n_pids], cap)
        self.cnt = _trainer._grown(cnt[:n_pids], cap)
        self.table = _trainer._table_for(cap)
        _k.rehash(self.keys, n_pids, self.table)
        self.occ_s = np.empty(cap, dtype=np.int64)
        self.occ_e = np.empty(cap, dtype=np.int64)
        tracked = n_pair_pos if n else 0
        self.pool = np.empty(tracked + max(_trainer._POOL_SLACK, int(n * _trainer._POOL_SLACK_FRACTION)),
                             dtype=np.int32)
        state[_k.S_POOL] = _k.build_occurrences(rec, n_pids, self.occ_s, self.occ_e, self.pool)
        self.pend = np.empty((_trainer._PEND_INIT, 2), dtype=np.int32)
        self.mtab = np.full(_trainer._MTAB_INIT, -1, dtype=np.int32)
        self.marked = np.zeros(cap, dtype=np.int32)
        self.dirty = np.empty(cap, dtype=np.int32)
        self.reported = self.cnt.copy()  # initial() reports every count
        self.rec, self.pu, self.state = rec, pu, state

    def initial(self) -> tuple[np.ndarray, np.ndarray]:
        """Every pair of the share and its count: keys ``left * V + right`` (int64) and counts (int64)."""
        n_pids = int(self.state[_k.S_NPIDS])
        return self.keys[:n_pids].copy(), self.cnt[:n_pids].copy()

    def apply(self, merge_keys: np.ndarray, new_ids: np.ndarray
              ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Apply one batch: pair ``merge_keys[k]`` (int64 key) becomes token ``new_ids[k]``, in order.

        Returns ``(count, df, keys, delta)``: per merge the occurrences replaced and the idf units
        holding them (int64, (k,)), and the count change of every pair whose count changed
        (created pairs included), keys and deltas int64.
        """
        merge_keys = np.ascontiguousarray(merge_keys, dtype=np.int64)
        new_ids = np.ascontiguousarray(new_ids, dtype=np.int32)
        m_count = np.zeros(merge_keys.shape[0], dtype=np.int64)
        m_df = np.zeros(merge_keys.shape[0], dtype=np.int64)
        state = self.state
        state[_k.S_PHASE] = 0
        while True:
            status = _k.apply_merges(self.rec, self.pu, self.pool, self.pend, self.keys, self.cnt, self.occ_s,
                                     self.occ_e, self.table, self.mtab, state, merge_keys, new_ids, m_count, m_df,
                                     self.V, self._uw, self.marked, self.dirty, self.reported)
            if status == _k.DONE:
                break
            if status != _k.NEED_CAPACITY:  # pragma: no cover - kernel contract
                raise RuntimeError(f"unexpected trainer kernel status {status}")
            self._grow()
        nd = int(state[_k.S_NDIRTY])
        out_keys = np.empty(nd, dtype=np.int64)
        out_delta = np.empty(nd, dtype=np.int64)
        n = _k.take_changes(self.keys, self.cnt, self.reported, self.marked, self.dirty, state, out_keys, out_delta)
        return m_count, m_df, out_keys[:n], out_delta[:n]

    def _grow(self) -> None:
        """Grow what the kernel asked for (``state[S_NEED_*]``), as :func:`ubpe.trainer.train` does."""
        state = self.state
        need = int(state[_k.S_NEED_PIDS])
        if need > self.keys.shape[0]:
            cap = max(need, 2 * self.keys.shape[0])
            g = _trainer._grown
            self.keys, self.cnt, self.occ_s, self.occ_e = (g(a, cap) for a in (self.keys, self.cnt, self.occ_s,
                                                                              self.occ_e))
            self.dirty, self.reported = g(self.dirty, cap), g(self.reported, cap)
            marked = np.zeros(cap, dtype=np.int32)
            marked[: self.marked.shape[0]] = self.marked
            self.marked = marked
            self.table = _trainer._table_for(cap)
            _k.rehash(self.keys, int(state[_k.S_NPIDS]), self.table)
        need = int(state[_k.S_NEED_PEND])
        if need > self.pend.shape[0]:
            self.pend = np.empty((max(need, 2 * self.pend.shape[0]), 2), dtype=np.int32)
        need = int(state[_k.S_NEED_MTAB])
        if need > self.mtab.shape[0]:
            self.mtab = np.full(need, -1, dtype=np.int32)
        need = int(state[_k.S_NEED_POOL])
        if need > self.pool.shape[0]:
            self.pool = _trainer._grown(self.pool[: int(state[_k.S_POOL])], need)


class BatchSelector:
    """The summed pair counts of all shares, and the selection of each batch from them.

    ``V``: the shares' key base; ``n_candidates`` (>= 1) and ``min_count`` (>= 1) as in
    :func:`ubpe.trainer.train`. Feed it every share's :meth:`ShareTrainer.initial`, then after
    each batch every share's changes (:meth:`add`, in any order); :meth:`select` gives the next
    batch.
    """

    def __init__(self, V: int, n_candidates: int, min_count: int) -> None:
        self.V = V
        self.n_candidates = n_candidates
        self.min_count = min_count
        cap = _trainer._MIN_PID_CAP
        self.keys = np.empty(cap, dtype=np.int64)
        self.cnt = np.empty(cap, dtype=np.int64)
        self.table = _trainer._table_for(cap)
        self.hsnap = np.empty(cap, dtype=np.int64)
        self.hkey = np.empty(cap, dtype=np.int64)
        self.hpid = np.empty(cap, dtype=np.int32)
        self.state = np.zeros(_k.S_SIZE, dtype=np.int64)
        self.cand_pid = np.empty(n_candidates, dtype=np.int32)
        self.cand_cnt = np.empty(n_candidates, dtype=np.int64)
        self.cand_ok = np.empty(n_candidates, dtype=np.bool_)
        self._first_new = 0  # pairs from here on are not in the heap yet

    def add(self, keys: np.ndarray, delta: np.ndarray) -> None:
        """Add count changes (``keys`` int64 ``left * V + right``, ``delta`` int64) of one share."""
        n_pids = int(self.state[_k.S_NPIDS])
        need = n_pids + keys.shape[0]
        if need > self.keys.shape[0] or 2 * need > self.table.shape[0]:
            cap = max(need, 2 * self.keys.shape[0])
            g = _trainer._grown
            self.keys, self.cnt, self.hsnap, self.hkey, self.hpid = (
                g(a, cap) for a in (self.keys, self.cnt, self.hsnap, self.hkey, self.hpid))
            self.table = _trainer._table_for(cap)
            _k.rehash(self.keys, n_pids, self.table)
        self.state[_k.S_NPIDS] = _k.add_counts(self.table, self.keys, self.cnt, n_pids,
                                               np.ascontiguousarray(keys, dtype=np.int64),
                                               np.ascontiguousarray(delta, dtype=np.int64))

    def select(self) -> np.ndarray:
        """The next batch: keys of the accepted pairs (int64) in acceptance order; empty when no
        pair counts ``min_count`` (training stops early)."""
        nc = _k.select_next(self.keys, self.cnt, self.table, self.hsnap, self.hkey, self.hpid, self.state,
                            self._first_new, self.cand_pid, self.cand_cnt, self.cand_ok, self.n_candidates,
                            self.min_count, self.V)
        self._first_new = int(self.state[_k.S_NPIDS])
        return self.keys[self.cand_pid[:nc][self.cand_ok[:nc]]].copy()


def _each(shares: Sequence[Any]) -> Callable[..., list]:
    """Call a method of every share in turn: ``call("apply", keys, ids)`` -> their answers."""
    return lambda method, *args: [getattr(s, method)(*args) for s in shares]


def train(shares: Sequence[Any] | Callable[..., list], *, alphabet_size: int, n_tokens: int, n_candidates: int,
          min_count: int, V: int, n_units: int, progress: Callable[[int], None] | None = None
          ) -> _trainer.TrainResult:
    """Train over ``shares``: :class:`ShareTrainer` objects, or a function ``call(method, *args)``
    returning the answers of every share to ``ShareTrainer.<method>(*args)`` (how
    :func:`ubpe.dask.fit` reaches its workers' actors, all at once).

    ``n_candidates`` is the trainer's ``min(n_candidates, total values)`` (at least 1), ``V``
    the key base the shares use (``n_tokens + n_candidates``); ``n_units`` the idf units of all
    shares. The result equals :func:`ubpe.trainer.train` on all the shares' documents.
    """
    call = shares if callable(shares) else _each(shares)
    selector = BatchSelector(V, n_candidates, min_count)
    for keys, counts in call("initial"):
        selector.add(keys, counts)
    merges: list[np.ndarray] = []
    batches: list[np.ndarray] = []
    m_count: list[np.ndarray] = []
    m_df: list[np.ndarray] = []
    n_merges = 0
    stopped_early = False
    batch = 0
    while alphabet_size + n_merges < n_tokens:
        chosen = selector.select()
        if chosen.shape[0] == 0:
            stopped_early = True
            break
        new_ids = np.arange(alphabet_size + n_merges, alphabet_size + n_merges + chosen.shape[0], dtype=np.int32)
        answers = call("apply", chosen, new_ids)
        count = np.zeros(chosen.shape[0], dtype=np.int64)
        df = np.zeros(chosen.shape[0], dtype=np.int64)
        for c, d, keys, delta in answers:
            count += c
            df += d
            selector.add(keys, delta)
        left = chosen // V
        merges.append(np.stack([left, chosen - left * V], axis=1).astype(np.int32))
        batches.append(np.full(chosen.shape[0], batch, dtype=np.int32))
        m_count.append(count)
        m_df.append(df)
        n_merges += chosen.shape[0]
        batch += 1
        if progress is not None:
            progress(n_merges)

    def cat(parts, dtype):
        return np.concatenate(parts) if parts else np.zeros(0, dtype=dtype)

    return _trainer.TrainResult(
        merges=cat(merges, np.int32).reshape(-1, 2),
        batches=cat(batches, np.int32),
        counts=cat(m_count, np.int64),
        df=cat(m_df, np.int64),
        n_units=int(n_units),
        stopped_early=stopped_early,
        stream=None,
    )
