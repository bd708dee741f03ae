"""ubpe on Dask: fit a tokenizer over a collection that does not fit one machine, compress its
chunks in parallel, and write or read a ubpe-compressed zarr array (``pip install "ubpe[dask]"``).

:func:`fit` trains by rounds. Each partition keeps its documents as token ids where they live
(a worker's memory: the data is never gathered); each round every partition applies the merges
accepted in the previous round and counts its adjacent pairs, the counts are summed on the
client, and the client selects the next batch exactly as the compiled trainer does (the rules
of docs/algorithm.md). The model bytes are therefore those of :meth:`ubpe.Tokenizer.fit` on
the same documents (``tests/test_dask.py`` checks it on a local cluster of two worker
processes). Each round moves only pair counts (at most one entry per distinct pair in a
partition) and the accepted merges.

With a ``distributed`` client active the rounds run on its workers; without one, in this
process on the computed partitions (the same bytes). Each round recounts the partitions' pairs
(numpy), so on data that fits one machine :meth:`ubpe.Tokenizer.fit` (compiled, incremental
counts) is much faster: 1.7 s against 38 s for 8 M values and 1000 merges in
``benchmarks/bench_dask.py``. Read zarr sources with ``da.from_zarr(path, inline_array=True)``:
otherwise every chunk task depends on one key holding the array, and the scheduler runs them
all on the worker that has it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from . import trainer
from .alphabet import Alphabet, dtype_for
from .tokenizer import Tokenizer, _default_dtype

__all__ = ["fit", "compress", "to_zarr", "from_zarr"]

_SEP = -1  # between documents in a partition's token array: no pair spans it
_DENSE_PAIRS = 1 << 23  # count pairs with a histogram when there are at most this many keys


class _Partition:
    """One partition's documents as one token array (documents separated by -1) with the idf
    unit of each position (a merged token keeps its first position's unit; units are local to
    the partition, which is enough: a unit never spans partitions)."""

    __slots__ = ("tok", "unit")

    def __init__(self, tok: np.ndarray, unit: np.ndarray) -> None:
        self.tok = tok
        self.unit = unit


def _load_partition(docs: list[np.ndarray], alphabet: Alphabet) -> tuple[_Partition, int, np.dtype | None]:
    """Documents to ids with separators, each position's unit its document (local index).
    Returns the partition, its number of documents and the dtype of its first non-empty one."""
    toks, units = [], []
    dtype = None
    for d, doc in enumerate(docs):
        arr = np.asarray(doc).reshape(-1)
        if dtype is None and arr.shape[0]:
            dtype = dtype_for([doc])
        ids = alphabet.to_ids(arr).astype(np.int32, copy=False)
        toks += [ids, np.array([_SEP], np.int32)]
        units += [np.full(ids.shape[0], d, dtype=np.int64), np.array([-1], np.int64)]
    if not toks:
        return _Partition(np.zeros(0, np.int32), np.zeros(0, np.int64)), 0, None
    return _Partition(np.concatenate(toks), np.concatenate(units)), len(docs), dtype


def _windowed(p: _Partition, window: int) -> tuple[_Partition, int]:
    """Units of ``window`` positions within each document (as ``Tokenizer.fit``'s windows);
    returns the partition and its number of units."""
    sep = np.flatnonzero(p.tok == _SEP)
    starts = np.concatenate(([0], sep[:-1] + 1))
    lengths = sep - starts
    per_doc = -(-lengths // window)
    base = np.concatenate(([0], np.cumsum(per_doc)[:-1]))
    unit = np.full(p.tok.shape[0], -1, dtype=np.int64)
    for d in range(sep.shape[0]):  # one numpy expression per document
        unit[starts[d]:sep[d]] = base[d] + np.arange(lengths[d], dtype=np.int64) // window
    return _Partition(p.tok, unit), int(per_doc.sum())


def _pair_counts(p: _Partition, v: int) -> tuple[np.ndarray, np.ndarray]:
    """Sorted keys ``left * v + right`` of the adjacent pairs and their (overlapping) counts."""
    t = p.tok
    if t.shape[0] < 2:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    left, right = t[:-1], t[1:]
    ok = (left >= 0) & (right >= 0)
    keys = left[ok].astype(np.int64) * v + right[ok]
    if v * v <= _DENSE_PAIRS:  # a histogram over every possible key beats sorting
        hist = np.bincount(keys, minlength=v * v)
        found = np.flatnonzero(hist)
        return found.astype(np.int64), hist[found].astype(np.int64)
    return np.unique(keys, return_counts=True)


def _apply(p: _Partition, keys: np.ndarray, new_ids: np.ndarray, v: int
           ) -> tuple[_Partition, np.ndarray, np.ndarray]:
    """Apply a batch of merges (pairs ``keys``, sorted, sharing no token; pair ``keys[j]``
    becomes ``new_ids[j]``) left to right without overlap. Returns the partition and, per
    merge, the occurrences replaced and the idf units they fell in."""
    t = p.tok
    m = keys.shape[0]
    if t.shape[0] < 2 or m == 0:
        return p, np.zeros(m, np.int64), np.zeros(m, np.int64)
    pk = t[:-1].astype(np.int64) * v + t[1:]
    valid = (t[:-1] >= 0) & (t[1:] >= 0)
    j = np.minimum(np.searchsorted(keys, pk), m - 1)
    hit = valid & (keys[j] == pk)
    # consecutive hits are occurrences of one pair (a, a) (the pairs share no token):
    # left to right without overlap keeps every other one from the start of each run
    idx = np.flatnonzero(hit)
    if idx.shape[0]:
        starts = np.ones(idx.shape[0], dtype=bool)
        starts[1:] = idx[1:] != idx[:-1] + 1
        run_start = idx[np.maximum.accumulate(np.where(starts, np.arange(idx.shape[0]), 0))]
        merged = idx[(idx - run_start) % 2 == 0]
    else:
        merged = idx
    which = j[merged]
    count = np.bincount(which, minlength=m).astype(np.int64)
    span = int(p.unit.max(initial=0)) + 1  # units of real positions are in [0, span)
    hit_units = np.unique(which.astype(np.int64) * span + p.unit[merged])  # distinct (merge, unit)
    df = np.bincount(hit_units // span, minlength=m).astype(np.int64)
    tok = t.copy()
    tok[merged] = new_ids[which]
    keep = np.ones(t.shape[0], dtype=bool)
    keep[merged + 1] = False
    return _Partition(tok[keep], p.unit[keep]), count, df


def _step(p: _Partition, keys: np.ndarray, new_ids: np.ndarray, v: int
          ) -> tuple[_Partition, np.ndarray, np.ndarray, tuple[np.ndarray, np.ndarray]]:
    """One round on one partition: apply the previous batch, then count the pairs."""
    p, count, df = _apply(p, keys, new_ids, v)
    return p, count, df, _pair_counts(p, v)


def _select(keys: np.ndarray, counts: np.ndarray, v: int, n_candidates: int, min_count: int
            ) -> list[tuple[int, int, int]]:
    """The batch the trainer accepts from summed pair counts (docs/algorithm.md): the top
    ``n_candidates`` pairs by (count desc, (left, right) asc) with count >= min_count, each
    kept unless it shares a token with an accepted pair or a border pair between them counts
    at least as much. Returns (left, right, count) in acceptance order."""
    eligible = np.flatnonzero(counts >= min_count)
    order = eligible[np.lexsort((keys[eligible], -counts[eligible]))][:n_candidates]
    lefts, rights = np.divmod(keys[order], v)
    # border[i, j]: the count of the pair (right of candidate i, left of candidate j)
    want = (rights[:, None] * v + lefts[None, :]).ravel()
    at = np.minimum(np.searchsorted(keys, want), max(keys.shape[0] - 1, 0))
    border = np.where(keys[at] == want, counts[at], 0).reshape(order.shape[0], order.shape[0])

    accepted: list[tuple[int, int, int]] = []
    taken: list[int] = []
    for i in range(order.shape[0]):
        l2, r2, c2 = int(lefts[i]), int(rights[i]), int(counts[order[i]])
        ok = True
        for j in taken:
            if {int(lefts[j]), int(rights[j])} & {l2, r2} or border[i, j] >= c2 or border[j, i] >= c2:
                ok = False
                break
        if ok:
            accepted.append((l2, r2, c2))
            taken.append(i)
    return accepted


def _sum_counts(parts: list[tuple[np.ndarray, np.ndarray]]) -> tuple[np.ndarray, np.ndarray]:
    """Pair counts of all partitions summed: sorted keys and counts."""
    if not parts:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    keys = np.concatenate([k for k, _ in parts])
    counts = np.concatenate([c for _, c in parts])
    uniq, inverse = np.unique(keys, return_inverse=True)
    sums = np.zeros(uniq.shape[0], dtype=np.int64)
    np.add.at(sums, inverse, counts)
    return uniq, sums


def _documents(block: Any) -> list[np.ndarray]:
    """A partition's documents: a 1-D chunk is one document, each row of a 2-D chunk is one,
    and a bag partition is a list of documents."""
    if isinstance(block, np.ndarray):
        if block.ndim == 1:
            return [block]
        if block.ndim == 2:
            return list(block)
        raise ValueError(f"ubpe.dask.fit takes 1-D or 2-D arrays, got a chunk of shape {block.shape}")
    return [np.asarray(d) for d in block]


def _partitions(collection: Any) -> list[Any]:
    """Delayed objects, one per partition, in order (dask array chunks row-major, bag partitions)."""
    import dask.array as da
    import dask.bag as db

    if isinstance(collection, da.Array):
        if collection.ndim == 2 and len(collection.chunks[1]) != 1:
            collection = collection.rechunk({1: -1})  # a row is one document: keep it whole
        if collection.ndim not in (1, 2):
            raise ValueError(f"ubpe.dask.fit takes 1-D or 2-D arrays, got {collection.ndim}-D")
        return list(collection.to_delayed().ravel())
    if isinstance(collection, db.Bag):
        return list(collection.to_delayed())
    raise TypeError(f"ubpe.dask.fit takes a dask array or a dask bag, got {type(collection).__name__}")


def fit(
    collection: Any,
    *,
    alphabet: Alphabet | int | Any = "range",
    n_tokens: int,
    n_candidates: int = 50,
    min_count: int = 2,
    weighting: str = "idf",
    window: int | None = None,
    progress: Callable[[int], None] | None = None,
    client: Any = None,
) -> Tokenizer:
    """Fit a :class:`ubpe.Tokenizer` over a dask collection without gathering it.

    ``collection`` is a dask array (each chunk of a 1-D array one document; each row of a 2-D
    array one document, rows rechunked whole) or a dask bag whose elements are documents.
    The result (model bytes included) equals ``Tokenizer(alphabet, n_tokens, ...).fit(docs)``
    on the same documents in the same order. ``alphabet``: an :class:`Alphabet`, a size, or
    values; ``"range"`` (default, integer arrays only) every integer from the array's minimum
    to its maximum, computed on the cluster in one pass (the partitions are never gathered). ``progress(n_merges)`` is
    called after every round. ``client``: a ``distributed.Client`` to run on; None (default)
    the active one if any; False runs the rounds in this process. Values outside the alphabet
    raise ``ValueError``.
    """
    import dask
    import dask.array as da

    if isinstance(alphabet, str) and alphabet == "range":
        if not isinstance(collection, da.Array) or collection.dtype.kind not in "iu":
            raise TypeError("alphabet='range' needs a dask array of integers; give a bag an Alphabet")
        lo, hi = (int(v) for v in dask.compute(collection.min(), collection.max()))
        alphabet = Alphabet(np.arange(lo, hi + 1, dtype=np.int64))
    tok = Tokenizer(alphabet, n_tokens, n_candidates=n_candidates, min_count=min_count,
                    weighting=weighting, window=window)
    alpha = tok.alphabet
    if alpha is None:
        raise TypeError("ubpe.dask.fit needs alphabet= (a size, values or an Alphabet)")
    a = len(alpha)
    parts = _partitions(collection)
    client = _client() if client is None else (client or None)
    v = n_tokens + max(1, n_candidates)  # every token id is below v
    no_keys, no_ids, no_order = np.zeros(0, np.int64), np.zeros(0, np.int32), np.zeros(0, np.int64)

    def load(block: Any) -> tuple[_Partition, int, np.dtype | None]:
        return _load_partition(_documents(block), alpha)

    # Round 0 loads the partitions where they live; what stays in this process is per-partition
    # statistics only. Tokenizer.fit's rule: a corpus of one document is cut into idf windows.
    if client is None:
        loaded = [load(b) for b in dask.compute(*parts)]
        info = [(n, dt) for _, n, dt in loaded]
        states: list[Any] = [p for p, _, _ in loaded]
    else:
        states = client.compute([dask.delayed(load)(p) for p in parts])
        info = client.gather([client.submit(_statistics, f, pure=False) for f in states])
    total_docs = sum(n for n, _ in info)
    if total_docs == 0:
        raise ValueError("corpus is empty: fit needs at least one value")
    unit_window = tok.window if tok.window is not None else (trainer.DEFAULT_WINDOW if total_docs == 1 else None)
    if unit_window is not None:
        if client is None:
            windowed = [_windowed(p, unit_window) for p in states]
            states = [p for p, _ in windowed]
            n_units = sum(u for _, u in windowed)
        else:
            states = [client.submit(_windowed_after, p, unit_window, pure=False) for p in states]
            n_units = sum(u for (u,) in client.gather([client.submit(_statistics, w, pure=False) for w in states]))
    else:
        n_units = total_docs
    dtype = next((dt for _, dt in info if dt is not None), np.dtype(np.int64))

    def step_all(states: list[Any], keys: np.ndarray, new_ids: np.ndarray, order: np.ndarray) -> tuple[list, list]:
        """Apply a batch and count pairs on every partition; (new states, [(count, df, pairs)])."""
        if client is None:
            outs = [_step_unsorted(p, keys, new_ids, v, order) for p in states]
            return [o[0] for o in outs], [o[1:] for o in outs]
        # a state future holds a whole step output (the partition first): no task to unpack it
        outs = [client.submit(_step_after, p, keys, new_ids, v, order, pure=False) for p in states]
        stats = client.gather([client.submit(_statistics, o, pure=False) for o in outs])
        return outs, stats

    merges: list[tuple[int, int]] = []
    batches: list[int] = []
    m_count: list[int] = []
    m_df: list[int] = []
    stopped_early = False
    states, stats = step_all(states, no_keys, no_ids, no_order)
    batch = 0
    while a + len(merges) < n_tokens:
        keys, counts = _sum_counts([pairs for _, _, pairs in stats])
        accepted = _select(keys, counts, v, n_candidates, min_count)
        if not accepted:
            stopped_early = True
            break
        new = np.arange(a + len(merges), a + len(merges) + len(accepted), dtype=np.int32)
        batch_keys = np.array([left * v + right for left, right, _ in accepted], dtype=np.int64)
        order = np.argsort(batch_keys, kind="stable")
        states, stats = step_all(states, batch_keys[order], new[order], order)
        merges += [(left, right) for left, right, _ in accepted]
        batches += [batch] * len(accepted)
        m_count += np.sum([c for c, _, _ in stats], axis=0).astype(np.int64).tolist()
        m_df += np.sum([d for _, d, _ in stats], axis=0).astype(np.int64).tolist()
        batch += 1
        if progress is not None:
            progress(len(merges))

    result = trainer.TrainResult(
        merges=np.array(merges, dtype=np.int32).reshape(-1, 2),
        batches=np.array(batches, dtype=np.int32),
        counts=np.array(m_count, dtype=np.int64),
        df=np.array(m_df, dtype=np.int64),
        n_units=int(n_units),
        stopped_early=stopped_early,
        stream=None,
    )
    return tok._adopt(result, alpha, _default_dtype(alpha, dtype), stacklevel=3)


def _statistics(out: tuple) -> tuple:
    """What a step output (the partition first) sends back to the client: all but the partition."""
    return out[1:]


def _step_after(out: tuple, keys: np.ndarray, new_ids: np.ndarray, v: int, order: np.ndarray) -> tuple:
    """:func:`_step_unsorted` on the partition of a previous step output."""
    return _step_unsorted(out[0], keys, new_ids, v, order)


def _windowed_after(out: tuple, window: int) -> tuple:
    return _windowed(out[0], window)


def _unsort(stats: np.ndarray, order: np.ndarray) -> np.ndarray:
    """Statistics indexed by sorted key position -> by acceptance position."""
    out = np.empty_like(stats)
    out[order] = stats
    return out


def _step_unsorted(p: _Partition, keys: np.ndarray, new_ids: np.ndarray, v: int, order: np.ndarray) -> tuple:
    """:func:`_step` with the per-merge statistics in acceptance order (``keys`` come sorted)."""
    p, count, df, pairs = _step(p, keys, new_ids, v)
    return p, _unsort(count, order), _unsort(df, order), pairs


def _client() -> Any:
    """The active ``distributed`` client, or None."""
    try:
        from distributed import get_client
    except ImportError:
        return None
    try:
        return get_client()
    except ValueError:
        return None


def compress(array: Any, tokenizer: Tokenizer, **kwargs: Any) -> list[Any]:
    """One lazy ubpe container per chunk of ``array`` (``dask.delayed`` bytes, chunks in
    row-major block order), each compressed with ``tokenizer`` and ``kwargs`` of
    :func:`ubpe.compress` (``embed=False`` by default: a container holds the model's digest;
    ``ubpe.decompress(c, tokenizer=tokenizer)`` reads it). ``dask.compute(*compress(a, tok))``
    runs them on the active scheduler (a ``distributed`` cluster's workers when one is active)."""
    import dask

    from . import api as container

    kwargs.setdefault("embed", False)
    one = dask.delayed(container.compress, pure=True)
    return [one(block, tokenizer=tokenizer, **kwargs) for block in array.to_delayed().ravel()]


def to_zarr(array: Any, path: str, tokenizer: Tokenizer | None = None, *, level: int = 1,
            overwrite: bool = False) -> None:
    """Write a dask array as a zarr (format 2) array on disk whose chunks are ubpe containers
    (:class:`ubpe.codec.UBPECodec`, the model in the array's configuration when given), one task
    per chunk, in parallel. Read it back lazily with :func:`from_zarr`."""
    import dask.array as da
    import zarr

    from .codec import UBPECodec

    z = zarr.create_array(path, shape=array.shape, chunks=tuple(c[0] for c in array.chunks), dtype=array.dtype,
                          zarr_format=2, compressors=UBPECodec(model=tokenizer, level=level),
                          overwrite=overwrite)
    da.store(array, z, lock=False)


def from_zarr(path: str) -> Any:
    """The zarr array at ``path`` as a lazy dask array (chunks decoded when computed)."""
    import dask.array as da

    return da.from_zarr(path)
