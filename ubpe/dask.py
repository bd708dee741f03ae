"""ubpe on Dask: fit a tokenizer over a collection that does not fit one machine, compress its
chunks in parallel, and write or read a ubpe-compressed zarr array (``pip install "ubpe[dask]"``).

:func:`fit` runs the compiled trainer split over the workers (:mod:`ubpe.stepwise`). Each worker
reads its partitions where they live and keeps them, as token ids with the trainer's incremental
pair counts, in one actor (a :class:`ubpe.stepwise.ShareTrainer`) for the whole fit: the data is
never gathered. Each round the client sums the count changes the workers report, selects the
next batch with the trainer's own selection, and sends it to every worker, which applies the
merges and reports only the counts they changed: a round costs what its merges replace, never a
recount. The model bytes are those of :meth:`ubpe.Tokenizer.fit` on the same documents
(``tests/test_dask.py`` checks it on a local cluster of two worker processes and without one).
Each round moves the batch (at most ``n_candidates`` pairs) one way and the count changes the
other. ``benchmarks/bench_dask.py`` measures it against :meth:`ubpe.Tokenizer.fit`.

With a ``distributed`` client active the rounds run on its workers; without one, in this process
(one share holding every partition: the same bytes). Read zarr sources with
``da.from_zarr(path, inline_array=True)``: otherwise every chunk task depends on one key holding
the array, and the scheduler runs them all on the worker that has it.
"""

from __future__ import annotations

import contextlib
import threading
import uuid
from collections.abc import Callable
from typing import Any

import numpy as np

from . import stepwise, trainer
from ._validate import as_sequence
from .alphabet import Alphabet, dtype_for
from .alphabet import distinct as distinct_values
from .tokenizer import Tokenizer, _default_dtype, _residuals

__all__ = ["fit", "compress", "to_zarr", "from_zarr", "fill_value"]

#: ``predictor="auto"`` chooses the chain on about this many values, whole partitions spread
#: over the collection (``Tokenizer.fit(predictor="auto")``'s choice on that sample).
AUTO_SAMPLE = 1 << 18

# Partitions read by a worker wait here, in the worker's process, for the actor that trains on
# them: {(fit id, worker address): {partition index: documents}}.
_STASH: dict[tuple[str, str], dict[int, list[np.ndarray]]] = {}
_STASH_LOCK = threading.Lock()


def _documents(block: Any) -> list[np.ndarray]:
    """A partition's documents: a 1-D chunk is one document, each row of a 2-D chunk is one,
    and a bag partition is a list of documents, each taken as ``Tokenizer.fit`` takes it (bytes
    as uint8, a list of ints as int64, a str as its characters)."""
    if isinstance(block, np.ndarray):
        if block.ndim == 1:
            return [block]
        if block.ndim == 2:
            return list(block)
        raise ValueError(f"ubpe.dask.fit takes 1-D or 2-D arrays, got a chunk of shape {block.shape}")
    return [as_sequence(d, "document") for d in block]


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


def _read(block: Any, predictor: str | None) -> list[np.ndarray]:
    """A partition's documents, through the front-end chain ``predictor`` when given."""
    docs = _documents(block)
    return _residuals(docs, predictor) if predictor is not None else docs


def _summary(docs: list[np.ndarray], distinct: bool) -> tuple:
    """What the client needs of a partition: document lengths (int64), the dtype of its first
    non-empty document (or None), the smallest and largest integer (None if none or not
    integers), and its distinct values (int64) when ``distinct``."""
    lengths = np.fromiter(map(len, docs), dtype=np.int64, count=len(docs))
    filled = [d for d in docs if len(d)]
    dtype = dtype_for(filled) if filled else None
    lo = hi = values = None
    if filled and all(isinstance(d, np.ndarray) and d.dtype.kind in "iu" for d in filled):
        lo = min(int(d.min()) for d in filled)
        hi = max(int(d.max()) for d in filled)
        if distinct:
            values = distinct_values(np.concatenate([distinct_values(d).astype(np.int64) for d in filled]))
    return lengths, dtype, lo, hi, values


def _stash(fit_id: str, index: int, block: Any, predictor: str | None, distinct: bool) -> tuple:
    """Task: read partition ``index`` and keep its documents in this worker's process for the
    actor of :func:`fit` ``fit_id``; returns (worker address, :func:`_summary`)."""
    from distributed import get_worker

    docs = _read(block, predictor)
    address = get_worker().address
    with _STASH_LOCK:
        _STASH.setdefault((fit_id, address), {})[index] = docs
    return address, _summary(docs, distinct)


def _forget(fit_id: str) -> None:
    """Drop whatever partitions of :func:`fit` ``fit_id`` still wait in this process."""
    with _STASH_LOCK:
        for key in [k for k in _STASH if k[0] == fit_id]:
            del _STASH[key]


def _share(docs: list[np.ndarray], alphabet: Alphabet, window: int | None, n_docs: int, V: int
           ) -> stepwise.ShareTrainer:
    """The trainer's state for ``docs`` (a worker's partitions in order): ids, documents, idf units
    (``window`` as ``trainer.unit_offsets_for`` takes it, over a corpus of ``n_docs``)."""
    lengths = np.fromiter(map(len, docs), dtype=np.int64, count=len(docs))
    doc_offsets = np.concatenate(([0], np.cumsum(lengths))).astype(np.int64)
    ids = np.empty(int(doc_offsets[-1]), dtype=np.int32)
    for d, doc in enumerate(docs):
        if len(doc):
            ids[doc_offsets[d]:doc_offsets[d + 1]] = alphabet.to_ids(doc)
    unit_offsets = trainer.unit_offsets_for(doc_offsets, window, n_docs=n_docs)
    return stepwise.ShareTrainer(ids, doc_offsets, unit_offsets, len(alphabet), V)


class _ShareActor:
    """A worker's share of :func:`fit`, as a ``distributed`` actor: the partitions the worker
    read (from the stash), kept as a :class:`ubpe.stepwise.ShareTrainer` between rounds."""

    def __init__(self, fit_id: str, indices: list[int], alphabet: Alphabet, window: int | None, n_docs: int,
                 V: int) -> None:
        from distributed import get_worker

        key = (fit_id, get_worker().address)
        with _STASH_LOCK:
            parts = _STASH.pop(key, {})
        missing = [i for i in indices if i not in parts]
        if missing:
            raise RuntimeError(f"ubpe.dask.fit: partitions {missing[:5]} are no longer on worker {key[1]}")
        docs = [d for i in indices for d in parts[i]]
        del parts
        self._share = _share(docs, alphabet, window, n_docs, V)

    def initial(self, **_: Any) -> tuple[np.ndarray, np.ndarray]:
        return self._share.initial()

    def apply(self, merge_keys: np.ndarray, new_ids: np.ndarray, **_: Any) -> tuple:
        return self._share.apply(merge_keys, new_ids)

    def close(self, **_: Any) -> None:
        """Free the share's memory now (the actor itself goes when the scheduler forgets it,
        which may be after the next fit has started)."""
        self._share = None


def _on_actors(client: Any, actors: list[Any]) -> Callable[..., list]:
    """``call(method, *args)``: the answers of every actor to ``method(*args)``, the calls issued
    at once from the client's event loop (one hand-over between threads a round in this process,
    not a few per worker). Each call runs in its worker's event loop (``separate_thread=False``,
    taken by ``distributed`` from the keywords; the methods ignore it otherwise): no hand-over
    to another thread on the worker either. On a loaded machine each hand-over waits for a core,
    and a round is otherwise short."""

    async def gather(method: str, args: tuple) -> list:
        futures = [getattr(a, method)(*args, separate_thread=False) for a in actors]
        return [await f for f in futures]

    return lambda method, *args: client.sync(gather, method, args)


def _sample(parts: list[Any], values: int, compute: Callable[..., Any]) -> list[np.ndarray]:
    """Documents of whole partitions spread over ``parts``, in collection order, about ``values``
    values in all (the last document cut); computed eight partitions at a time by ``compute``
    (``dask.compute``'s signature), never more than needed. A collection of fewer values is
    taken whole."""
    n = len(parts)
    order: list[int] = []  # 0, n/2, n/4, 3n/4, ...: each index once, spread at every prefix
    seen: set[int] = set()
    m = 1
    while len(order) < n:
        for i in range(m):
            j = i * n // m
            if j not in seen:
                seen.add(j)
                order.append(j)
        m *= 2
    taken: dict[int, list[np.ndarray]] = {}
    total = 0
    for k in range(0, n, 8):
        if total >= values:
            break
        batch = order[k:k + 8]
        for i, block in zip(batch, compute(*[parts[i] for i in batch])):
            taken[i] = [np.asarray(d).reshape(-1) for d in _documents(block)]
            total += sum(d.size for d in taken[i])
    docs: list[np.ndarray] = []
    total = 0
    for i in sorted(taken):
        for d in taken[i]:
            if total < values:
                docs.append(d[: values - total])
                total += docs[-1].size
    return docs


def fit(
    collection: Any,
    *,
    alphabet: Alphabet | int | Any = "range",
    n_tokens: int,
    n_candidates: int = 50,
    min_count: int = 2,
    weighting: str = "idf",
    window: int | None = None,
    predictor: str | None = None,
    progress: Callable[[int], None] | None = None,
    client: Any = None,
) -> Tokenizer:
    """Fit a :class:`ubpe.Tokenizer` over a dask collection without gathering it.

    ``collection`` is a dask array (each chunk of a 1-D array one document; each row of a 2-D
    array one document, rows rechunked whole) or a dask bag whose elements are documents.
    The result (model bytes included) equals ``Tokenizer(alphabet, n_tokens, ...).fit(docs,
    predictor=predictor)`` on the same documents. ``alphabet``: an :class:`Alphabet`, a size, or
    values; ``"range"`` (default, integer arrays only) every integer from the smallest to the
    largest value, found in the pass that reads the partitions (never gathered); with a
    ``predictor``, ``Tokenizer.fit``'s choice for the residuals instead (every integer between
    their extremes when ``n_tokens`` allows, else the distinct residuals).

    ``predictor``: a front-end chain of ``ubpe.planner.PREDICTORS`` (``"delta1"``, ``"lpc"``,
    ...): every document is learnt through it and the model records it, so ``ubpe.compress(x,
    tokenizer=tok)``, :func:`compress` and :func:`to_zarr` apply it by themselves; ``"auto"``: the
    chain ``Tokenizer.fit(predictor="auto")`` picks on a sample of :data:`AUTO_SAMPLE` values
    (whole partitions spread over the collection). ``progress(n_merges)`` is called after every
    round. ``client``: a ``distributed.Client`` to run on; None (default) the active one if any;
    False runs in this process. Values outside the alphabet raise ``ValueError``.
    """
    import dask

    parts = _partitions(collection)
    if isinstance(alphabet, str) and alphabet == "range":
        import dask.array as da

        if not isinstance(collection, da.Array) or collection.dtype.kind not in "iu":
            raise TypeError("alphabet='range' needs a dask array of integers; give a bag an Alphabet")
        alphabet = None
    elif alphabet is None:
        raise TypeError("ubpe.dask.fit needs alphabet= (a size, values or an Alphabet)")
    check = Tokenizer(alphabet, n_tokens, n_candidates=n_candidates, min_count=min_count, weighting=weighting,
                      window=window)  # validates the arguments before any work
    client = _client() if client is None else (client or None)
    shares: Any = None
    if predictor == "auto":
        compute = dask.compute if client is None else (lambda *objs: client.gather(client.compute(list(objs))))
        predictor = check._choose_predictor(_sample(parts, AUTO_SAMPLE, compute))
    elif predictor is not None:
        _residuals([np.zeros(0, dtype=np.int64)], predictor)  # validates the name
    distinct = alphabet is None and predictor is not None
    fit_id = uuid.uuid4().hex

    # Read every partition where it lives (kept there: only a summary comes back).
    if client is None:
        local = [_read(b, predictor) for b in dask.compute(*parts)]
        summaries = [("", _summary(docs, distinct)) for docs in local]
    else:
        one = dask.delayed(_stash, pure=False)
        futures = client.compute([one(fit_id, i, p, predictor, distinct) for i, p in enumerate(parts)])
    try:
        if client is not None:
            summaries = client.gather(futures)
            del futures
        lengths = np.concatenate([s[0] for _, s in summaries]) if summaries else np.zeros(0, np.int64)
        n_docs = int(lengths.shape[0])
        n_values = int(lengths.sum())
        if n_values == 0:
            raise ValueError("corpus is empty: fit needs at least one value")
        if alphabet is None:
            lo = min(s[2] for _, s in summaries if s[2] is not None)
            hi = max(s[3] for _, s in summaries if s[3] is not None)
            if distinct and hi - lo + 1 > n_tokens:  # Tokenizer.fit's alphabet of residuals
                alphabet = Alphabet(np.unique(np.concatenate([s[4] for _, s in summaries if s[4] is not None])))
            elif hi - lo + 1 > n_tokens:
                raise ValueError(f"n_tokens={n_tokens} is smaller than the alphabet: every integer from {lo} to "
                                 f"{hi} ({hi - lo + 1} values); raise n_tokens to at least that, fit behind a "
                                 f"predictor, or give alphabet=")
            else:
                alphabet = Alphabet(np.arange(lo, hi + 1, dtype=np.int64))
        tok = Tokenizer(alphabet, n_tokens, n_candidates=n_candidates, min_count=min_count, weighting=weighting,
                        window=window)
        alpha = tok.alphabet
        a = len(alpha)
        dtype = next((s[1] for _, s in summaries if s[1] is not None), np.dtype(np.int64))
        nc = max(1, min(n_candidates, n_values))
        V = n_tokens + nc  # every token id is below V: left * V + right is a pair's key
        if V > np.iinfo(np.int32).max:
            raise ValueError(f"n_tokens + n_candidates must be <= {np.iinfo(np.int32).max}, got {V}")
        # idf units as Tokenizer.fit takes them: a corpus of one document is cut into windows
        unit_offsets = trainer.unit_offsets_for(np.concatenate(([0], np.cumsum(lengths))), tok.window,
                                                n_docs=n_docs)
        n_units = unit_offsets.shape[0] - 1
        if client is None:
            shares = [_share([d for docs in local for d in docs], alpha, tok.window, n_docs, V)]
            del local
        else:
            by_worker: dict[str, list[int]] = {}
            for i, (address, _) in enumerate(summaries):
                by_worker.setdefault(address, []).append(i)
            actors = [client.submit(_ShareActor, fit_id, indices, alpha, tok.window, n_docs, V, actor=True,
                                    workers=[address], allow_other_workers=False, pure=False)
                      for address, indices in by_worker.items()]
            with client.as_current():  # actor handles bind to the current client
                shares = _on_actors(client, [f.result() for f in actors])
        result = stepwise.train(shares, alphabet_size=a, n_tokens=n_tokens, n_candidates=nc, min_count=min_count,
                                V=V, n_units=n_units, progress=progress)
    finally:
        if client is not None:
            with contextlib.suppress(Exception):  # a failed clean-up must not hide the error
                if callable(shares):
                    shares("close")
                client.run(_forget, fit_id)
    tok._adopt(result, alpha, _default_dtype(alpha, dtype), stacklevel=3)
    tok.predictor = predictor
    return tok


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
    (:class:`ubpe.codec.UBPECodec` at ``level``, the model in the array's configuration when
    given: a model fitted with a ``predictor`` applies its chain to every chunk), one task per
    chunk, in parallel. Read it back lazily with :func:`from_zarr`.

    zarr stores the last partial chunk of an axis whole, padded with the array's fill value;
    with a model, the fill value is one the model codes without escapes (:func:`fill_value`)."""
    import dask.array as da
    import zarr

    from .codec import UBPECodec

    fill = 0 if tokenizer is None else fill_value(tokenizer, array.dtype)
    chunks = tuple(c[0] for c in array.chunks)
    if any(len(set(c[:-1])) > 1 or c[-1] > c[0] for c in array.chunks):
        # one task per zarr chunk: two tasks writing parts of one chunk would race (lock=False)
        array = array.rechunk(chunks)
    z = zarr.create_array(_absolute(path), shape=array.shape, chunks=chunks, dtype=array.dtype,
                          zarr_format=2, compressors=UBPECodec(model=tokenizer, level=level),
                          fill_value=fill, overwrite=overwrite)
    da.store(array, z, lock=False)


def fill_value(tokenizer: Tokenizer, dtype: Any) -> int:
    """The zarr fill value for an array of ``dtype`` stored with ``tokenizer`` as shared model: zarr
    pads the last partial chunk of an axis with it, so it should cost no escape. Without a front
    end, the value of the model's (integer) alphabet nearest 0 that ``dtype`` holds (0 when the
    alphabet has it); behind one (``tokenizer.predictor``), 0: a constant run predicts to
    residuals 0 whatever its value. Falls back to 0."""
    alphabet = tokenizer.alphabet
    dtype = np.dtype(dtype)
    if tokenizer.predictor is not None or alphabet is None or alphabet.kind == "symbols" or dtype.kind not in "iu":
        return 0
    if alphabet.kind == "range":  # 0 .. A-1
        return 0
    values = alphabet.values  # sorted, int64 (or uint64: all >= 0)
    at = int(np.searchsorted(values, 0)) if values.dtype.kind == "i" else 0
    info = np.iinfo(dtype)
    near = [v for v in values[max(0, at - 1):at + 1].tolist() if info.min <= v <= info.max]  # around 0
    return int(min(near, key=abs)) if near else 0


def from_zarr(path: str) -> Any:
    """The zarr array at ``path`` as a lazy dask array (chunks decoded when computed)."""
    import dask.array as da

    return da.from_zarr(_absolute(path))


def _absolute(path: Any) -> Any:
    """A local path made absolute: workers resolve a relative one in their own working folder."""
    import os

    if isinstance(path, (str, os.PathLike)) and "://" not in str(path):
        return os.path.abspath(path)
    return path
