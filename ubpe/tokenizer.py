"""The UBPE tokenizer: fit a vocabulary of merged pairs over any alphabet, encode, decode, save."""

from __future__ import annotations

import heapq
import math
import os
import warnings
from collections.abc import Iterable
from typing import Any

import msgpack
import numpy as np

from . import encoder, trainer
from ._validate import as_documents, check_choice, check_ids, check_int
from .alphabet import Alphabet, dtype_for
from .errors import CorruptDataError, NotFittedError
from .format import modelfile
from .model import DEFAULT_MAX_OUTPUT_SIZE, Model, check_decode_dtype, check_mode

#: Version of the bytes written by :meth:`Tokenizer.to_bytes` (docs/format.md, "Model files").
MODEL_FORMAT_VERSION = modelfile.VERSION
MODEL_MAGIC = modelfile.MAGIC
WEIGHTINGS = ("idf", "count", "tfidf")
MAX_TOKENS = modelfile.MAX_TOKENS
#: The chains ``fit(predictor="auto")`` measures: those whose residuals mean the same in every
#: window (not "rank" or "grid", whose value maps belong to one window).
SHARED_PREDICTORS = ("none", "delta1", "delta2", "delta1+adaptive", "lpc", "lpc+adaptive", "rank+delta1")


def token_weights(counts: np.ndarray, df: np.ndarray, n_units: int, weighting: str) -> np.ndarray:
    """Weight of each merge (float64, shape (M,)); see docs/algorithm.md.

    idf takes ``math.log`` once per distinct ``df`` (numpy's vectorised log may differ in the last
    bit, and ties between weights decide ids), so the values equal the oracle's exactly.
    """
    if weighting == "count":
        return counts.astype(np.float64)
    distinct, index = np.unique(df, return_inverse=True)
    logs = np.array([math.log((1 + n_units) / (1 + d)) for d in distinct.tolist()], dtype=np.float64)
    idf = logs[index.reshape(-1)] if len(df) else np.zeros(0, dtype=np.float64)
    return idf if weighting == "idf" else counts.astype(np.float64) * idf


def trim_merges(merges: np.ndarray, weights: np.ndarray, alphabet_size: int, n_keep: int) -> np.ndarray:
    """Indices (ascending) of the merges kept when trimming to ``n_keep`` merges.

    Repeatedly removes the lowest-weight merged token that no kept merge uses as a child
    (ties: the latest merge first), so the kept set stays closed under its dependencies.
    """
    m = len(merges)
    if m <= n_keep:
        return np.arange(m)
    children = merges.astype(np.int64) - alphabet_size  # merge index of each child, < 0 for symbols
    users = np.bincount(children[children >= 0], minlength=m)
    kept = np.ones(m, dtype=bool)
    leaves = np.flatnonzero(users == 0)
    heap = list(zip(np.asarray(weights, dtype=np.float64)[leaves].tolist(), (-leaves).tolist()))
    heapq.heapify(heap)
    for _ in range(m - n_keep):
        _, neg_k = heapq.heappop(heap)
        k = -neg_k
        kept[k] = False
        for c in children[k]:
            if c >= 0:
                users[c] -= 1
                if users[c] == 0:
                    heapq.heappush(heap, (float(weights[c]), -int(c)))
    return np.flatnonzero(kept)


def renumber(merges: np.ndarray, kept: np.ndarray, alphabet_size: int) -> np.ndarray:
    """Merges ``kept`` (ascending indices, closed under dependencies) renumbered densely."""
    new_index = np.full(len(merges), -1, dtype=np.int64)
    new_index[kept] = np.arange(len(kept))
    sub = merges[kept].astype(np.int64)
    out = np.where(sub < alphabet_size, sub, alphabet_size + new_index[np.maximum(sub - alphabet_size, 0)])
    return out.astype(np.int32)


def rank_ids(weights: np.ndarray, alphabet_size: int) -> np.ndarray:
    """Public id of every priority-space token (int32, shape (A + M,)).

    Alphabet ids are fixed; merged tokens are numbered by weight descending, then priority.
    """
    m = len(weights)
    order = np.lexsort((np.arange(m), -weights))
    ids = np.empty(alphabet_size + m, dtype=np.int32)
    ids[:alphabet_size] = np.arange(alphabet_size)
    ids[alphabet_size + order] = alphabet_size + np.arange(m)
    return ids


class Tokenizer:
    """Byte-pair encoding over any alphabet (UBPE).

    Parameters
    ----------
    alphabet : Alphabet, int, collection of values, or None
        The symbols: an :class:`Alphabet`, a size ``A`` (values ``0 .. A-1``), values to build one
        from, or ``None`` to take the distinct values of the corpus given to :meth:`fit`.
    n_tokens : int
        Size of the whole vocabulary, alphabet included (``>= len(alphabet)``).
    n_candidates : int, default 50
        Pairs considered per training iteration; several non-colliding ones are merged at once.
        ``1`` is classic BPE.
    min_count : int, default 2
        Pairs seen fewer times are never merged; training stops early (with a warning) when no
        pair reaches it.
    weighting : {"idf", "count", "tfidf"}, default "idf"
        Token weight, which orders public ids (lower id = higher weight) and decides what
        trimming removes.
    window : int or None, default None
        idf units: ``None`` uses the documents (a single document is cut into windows of
        1024 values); an int cuts every document into windows of that many values.
    mode : {"classic", "sequence"}, default "classic"
        "classic" encodes by replaying the merges; "sequence" uses each token's alphabet
        sequence whole and encodes by segmentation (docs/algorithm.md, "Sequence mode").
        Training and decoding are the same in both; the model bytes record the mode.
    method : {"bits", "optimal"}, optional
        Sequence mode only: how :meth:`encode` segments, with the fewest bits under the
        model's token frequencies ("bits", the default) or the fewest tokens ("optimal").

    Notes
    -----
    The training rules (overlapping counts, tie-breaks, batches, border rule, trimming,
    re-ranking) are specified in ``docs/algorithm.md``. Token ids are ``int32``: alphabet
    symbols keep ids ``0 .. A-1`` and merged tokens follow, most valuable first.

    Examples
    --------
    >>> tok = Tokenizer(4, 7, n_candidates=1).fit([0, 0, 0, 1, 3, 0, 0, 0, 1, 0, 2])
    >>> tok.merges.tolist()  # Z = aa, Y = ab, X = ZY
    [[0, 0], [0, 1], [4, 5]]
    >>> tok.encode([0, 0, 0, 1, 3]).tolist()
    [6, 3]
    >>> tok.decode([6, 3]).tolist()
    [0, 0, 0, 1, 3]
    >>> tok.sequence(6).tolist()
    [0, 0, 0, 1]
    """

    def __init__(
        self,
        alphabet: Alphabet | int | Iterable[Any] | None,
        n_tokens: int,
        *,
        n_candidates: int = 50,
        min_count: int = 2,
        weighting: str = "idf",
        window: int | None = None,
        mode: str = "classic",
        method: str | None = None,
    ) -> None:
        self.mode, self.method = check_mode(mode, method)
        if alphabet is not None and not isinstance(alphabet, Alphabet):
            alphabet = Alphabet(alphabet)
        self.alphabet: Alphabet | None = alphabet
        self.n_tokens = check_int("n_tokens", n_tokens, 1 if alphabet is None else len(alphabet), MAX_TOKENS)
        self.n_candidates = check_int("n_candidates", n_candidates, 1, 1 << 20)
        self.min_count = check_int("min_count", min_count, 1)
        if not isinstance(weighting, str):
            raise TypeError(f"weighting must be a str, got {type(weighting).__name__}")
        self.weighting = check_choice("weighting", weighting, WEIGHTINGS)
        self.window = None if window is None else check_int("window", window, 1)
        self._model: dict[str, Any] | None = None
        self._cache: dict[str, Any] = {}
        #: the front-end chain (a ``ubpe.frontend.chains.PREDICTORS`` name) :meth:`fit` learnt behind, or None
        self.predictor: str | None = None

    # ==================== training

    def fit(self, corpus: Any, *, progress: Any = False, predictor: str | None = None) -> Tokenizer:
        """Learn the vocabulary from ``corpus`` and return ``self``.

        ``corpus`` is one sequence (1-D integer array, list of ints, bytes, str) or an iterable
        of them (documents; pairs never cross a document). A 2-D array is one document per row.
        Refitting replaces the previous model. Identical documents are trained once, with their
        multiplicity: the model is that of the full corpus, the work that of its distinct documents.

        ``predictor`` (a ``ubpe.frontend.chains.PREDICTORS`` name such as ``"delta1"``): learn
        the residuals of that front-end chain, each document on its own, and record it in the
        model (model files keep it): ``ubpe.compress(x, tokenizer=self)`` then applies the same
        chain by itself, so one model serves every window of a sensor. Without a given alphabet,
        such a model's alphabet is every residual between the extremes seen when ``n_tokens``
        allows (a new window's unseen values inside that range need no escape). ``"auto"``: the chain
        of :data:`SHARED_PREDICTORS` whose model, fitted on every other document, codes the
        remaining ones smallest (held out, as a shared model is used; one document is cut in
        two halves; the size: their streams under the level-2 coders with out-of-alphabet values
        escaped, as ``compress(tokenizer=)`` codes them); a chain whose values outnumber ``n_tokens`` cannot be tried, and a
        ``UserWarning`` names it (a raw 16-bit signal often needs more than 256 tokens).

        ``progress``: ``True`` draws a tqdm bar over the merges; a callable is called as
        ``progress(merges_made, merges_at_most)`` while training runs.

        Raises ``TypeError`` for floats or other non-integer data, ``ValueError`` for an empty
        corpus or values outside the alphabet.
        """
        docs = as_documents(corpus)
        if predictor == "auto":
            predictor = self._choose_predictor(docs)
        if predictor is not None:
            docs = _residuals(docs, predictor)
        lengths = np.fromiter(map(len, docs), dtype=np.int64, count=len(docs))
        if not docs or lengths.sum() == 0:
            raise ValueError("corpus is empty: fit needs at least one value")
        alphabet = self.alphabet if self.alphabet is not None else Alphabet.from_data(docs)
        if self.alphabet is None and predictor is not None and len(alphabet) and alphabet.kind == "integers":
            # a shared model: cover every residual between the extremes seen when n_tokens allows,
            # so that a new window's unseen values inside that range need no escape
            lo, hi = int(alphabet.values[0]), int(alphabet.values[-1])
            if len(alphabet) < hi - lo + 1 <= self.n_tokens:
                alphabet = Alphabet(np.arange(lo, hi + 1, dtype=np.int64))
        if self.n_tokens < len(alphabet):
            raise ValueError(
                f"n_tokens must be >= the alphabet size {len(alphabet)}, got {self.n_tokens}"
            )
        doc_offsets = np.concatenate(([0], np.cumsum(lengths)))
        ids = _document_ids(docs, alphabet, doc_offsets)
        # identical documents are trained once with their multiplicity (same model, less work)
        ids, doc_offsets, weights = trainer.collapse_documents(ids, doc_offsets)
        self._fit_ids(ids, doc_offsets, alphabet, _default_dtype(alphabet, dtype_for(docs)),
                      weights=weights, n_docs=len(docs), progress=progress)
        self.predictor = predictor
        return self

    def _fit_ids(self, ids: np.ndarray, doc_offsets: np.ndarray, alphabet: Alphabet, dtype: np.dtype, *,
                 weights: np.ndarray | None = None, n_docs: int | None = None, progress: bool = False,
                 token_ids: str = "weight", max_token_length: int | None = None) -> None:
        """Train on alphabet ids (int32) cut into documents by ``doc_offsets`` (int64, D+1), each
        counted ``weights[d]`` times (``None``: once); ``n_docs`` documents in all (default D).

        ``token_ids="priority"`` numbers merged tokens in merge order instead of by weight.
        """
        unit_offsets = trainer.unit_offsets_for(doc_offsets, self.window, n_docs=n_docs)
        a = len(alphabet)

        bar = None
        callback = None
        if callable(progress):  # progress(merges made, merges at most)
            def callback(n_merges: int) -> None:
                progress(min(n_merges, self.n_tokens - a), self.n_tokens - a)
        elif progress:
            from tqdm.auto import tqdm

            bar = tqdm(total=self.n_tokens - a, unit="tok", desc="fit")

            def callback(n_merges: int) -> None:
                bar.update(min(n_merges, bar.total) - bar.n)

        try:
            result = trainer.train(
                ids, doc_offsets, unit_offsets, a, self.n_tokens, self.n_candidates,
                self.min_count, progress=callback, weights=weights, max_token_length=max_token_length,
            )
        finally:
            if bar is not None:
                bar.close()
        self._adopt(result, alphabet, dtype, token_ids=token_ids, stacklevel=4)

    def _adopt(self, result: trainer.TrainResult, alphabet: Alphabet, dtype: np.dtype, *,
               token_ids: str = "weight", stacklevel: int = 3) -> Tokenizer:
        """Weigh, trim and number a training result into this tokenizer's model: the end of
        :meth:`fit`, shared with :func:`ubpe.dask.fit`. ``dtype`` is the model's decode dtype;
        ``token_ids="priority"`` numbers merged tokens in merge order instead of by weight;
        ``stacklevel`` points the "stopped early" warning at the user's call. Returns ``self``."""
        a = len(alphabet)
        if result.stopped_early:
            warnings.warn(
                f"fit stopped early: no pair occurs min_count={self.min_count} times, so the "
                f"vocabulary has {a + len(result.merges)} tokens instead of n_tokens={self.n_tokens}",
                UserWarning,
                stacklevel=stacklevel,
            )
        merge_weights = token_weights(result.counts, result.df, result.n_units, self.weighting)
        kept = trim_merges(result.merges, merge_weights, a, self.n_tokens - a)
        self.alphabet = alphabet
        self._set_model(
            alphabet=alphabet,
            dtype=dtype,
            merges=renumber(result.merges, kept, a),
            batches=result.batches[kept],
            counts=result.counts[kept],
            df=result.df[kept],
            n_units=result.n_units,
            weights=merge_weights[kept],
            token_ids=np.arange(a + len(kept), dtype=np.int32) if token_ids == "priority" else None,
        )
        return self

    def _choose_predictor(self, docs: list) -> str:
        """The :data:`SHARED_PREDICTORS` chain that codes held-out documents smallest."""
        arrays = [np.asarray(d) for d in docs]
        if not arrays or any(a.dtype.kind not in "iu" or a.ndim != 1 for a in arrays):
            raise TypeError("predictor='auto' applies to 1-D integer documents")
        if len(arrays) == 1:
            half = len(arrays[0]) // 2
            arrays = [arrays[0][:half], arrays[0][half:]]
        train, test = arrays[0::2], [t for t in arrays[1::2] if t.size]
        best, best_size = None, None
        left_out: list[str] = []
        for name in SHARED_PREDICTORS:
            trial = Tokenizer(None, self.n_tokens, n_candidates=self.n_candidates, min_count=self.min_count,
                              weighting=self.weighting, window=self.window, mode=self.mode, method=self.method)
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")  # a trial stopping early says nothing to the caller
                    trial.fit(train, predictor=name)
            except ValueError:  # e.g. more residual values than n_tokens
                left_out.append(name)
                continue
            size = sum(_coded_bytes(trial, t, name) for t in test)
            if best_size is None or size < best_size:
                best, best_size = name, size
        if best is None:
            raise ValueError(f"predictor='auto': no chain of {', '.join(SHARED_PREDICTORS)} fits n_tokens="
                             f"{self.n_tokens}; raise n_tokens")
        if left_out:
            warnings.warn(
                f"predictor='auto' chose {best!r} without trying {', '.join(left_out)}: their values "
                f"outnumber n_tokens={self.n_tokens}; a larger n_tokens may compress better",
                UserWarning, stacklevel=3)
        return best

    def _set_model(self, *, alphabet, dtype, merges, batches, counts, df, n_units, token_ids=None, weights=None):
        a = len(alphabet)
        if weights is None:
            weights = token_weights(counts, df, n_units, self.weighting)
        if token_ids is None:
            token_ids = rank_ids(weights, a)
        priority = np.empty_like(token_ids)
        priority[token_ids] = np.arange(len(token_ids), dtype=np.int32)
        bpe = Model(alphabet, merges, mode=self.mode, method=self.method, token_ids=token_ids,
                    stats=dict(batches=batches, counts=counts, df=df, weights=weights))
        model = dict(
            dtype=np.dtype(dtype), merges=bpe.merges, batches=bpe.stats["batches"], counts=bpe.stats["counts"],
            df=bpe.stats["df"], n_units=int(n_units), weights=bpe.stats["weights"], token_ids=bpe.token_ids,
            priority=priority, model=bpe,
        )
        priority.flags.writeable = False
        self.alphabet = alphabet
        self._model = model
        self._cache = {}

    # ==================== model

    def _require(self) -> dict[str, Any]:
        if self._model is None:
            raise NotFittedError("this Tokenizer is not fitted yet: call fit(corpus) or Tokenizer.load(path)")
        return self._model

    @property
    def model(self) -> Model:
        """The fitted :class:`~ubpe.Model` (alphabet, merges, public ids in ``token_ids``, statistics).

        The public-id mapping lives in ``model.token_ids``; the model encodes and decodes in
        priority space, the tokenizer maps its tokens to and from public ids.
        """
        return self._require()["model"]

    @property
    def is_fitted(self) -> bool:
        return self._model is not None

    @property
    def vocab_size(self) -> int:
        """Tokens in the fitted vocabulary, alphabet included (``n_tokens`` unless training stopped early)."""
        return len(self.alphabet) + len(self._require()["merges"])

    def __len__(self) -> int:
        return self.vocab_size

    @property
    def dtype(self) -> np.dtype:
        """dtype :meth:`decode` returns by default: that of the data given to :meth:`fit`, or a wider
        one (int64, uint64 or object) when that cannot hold every alphabet value."""
        return self._require()["dtype"]

    @property
    def merges(self) -> np.ndarray:
        """(M, 2) int32 children of each merge in *priority space* (row k makes token A + k)."""
        return self._require()["merges"]

    @property
    def batches(self) -> np.ndarray:
        """(M,) int32 training batch of each merge, non-decreasing."""
        return self._require()["batches"]

    @property
    def counts(self) -> np.ndarray:
        """(M,) int64 occurrences each merge replaced during training."""
        return self._require()["counts"]

    @property
    def df(self) -> np.ndarray:
        """(M,) int64 idf units holding each merge when it was made."""
        return self._require()["df"]

    @property
    def n_units(self) -> int:
        """Number of idf units (documents or windows) seen by :meth:`fit`."""
        return self._require()["n_units"]

    @property
    def weights(self) -> np.ndarray:
        """(M,) float64 weight of each merge, in priority order."""
        return self._require()["weights"]

    @property
    def token_ids(self) -> np.ndarray:
        """(A + M,) int32 public id of each priority-space token."""
        return self._require()["token_ids"]

    @property
    def forward(self) -> dict[tuple[int, ...], int]:
        """The inverse of :attr:`backward`: pair (classic) or alphabet sequence (sequence mode) of
        public ids -> the public id of the merged token."""
        if "forward" not in self._cache:
            self._cache["forward"] = {v: k for k, v in self.backward.items()}
        return self._cache["forward"]

    @property
    def backward(self) -> dict[int, tuple[int, ...]]:
        """Public id of each merged token -> classic: the pair of public ids it was merged from;
        sequence mode: its whole alphabet sequence (alphabet ids, which are public ids too)."""
        if "backward" not in self._cache:
            if self.mode == "sequence":
                self._cache["backward"] = self._sequence_backward()
                return self._cache["backward"]
            m = self._require()
            a = len(self.alphabet)
            ids = m["token_ids"]
            pub = ids[m["merges"]].tolist()
            self._cache["backward"] = {int(ids[a + k]): (p[0], p[1]) for k, p in enumerate(pub)}
        return self._cache["backward"]

    def _sequence_backward(self) -> dict[int, tuple[int, ...]]:
        """Sequence mode's backward map, from one expansion of every merged token (refused, as
        decode would, when the sequences hold more than 4 GiB of int32 ids)."""
        m = self._require()
        a, expansion = len(self.alphabet), m["model"].expansion()
        merged = np.arange(a, a + len(m["merges"]), dtype=np.int32)
        total = encoder.expanded_length(merged, expansion) if len(merged) else 0
        if total * 4 > DEFAULT_MAX_OUTPUT_SIZE:
            raise ValueError(f"the merged tokens' sequences hold {total} alphabet ids, too many for a map")
        flat = encoder.decode(merged, expansion).tolist()
        ends = np.cumsum(expansion.lengths[a:]).tolist()
        ids = m["token_ids"].tolist()
        out, start = {}, 0
        for k, end in enumerate(ends):
            out[ids[a + k]] = tuple(flat[start:end])
            start = end
        return out

    def sequence(self, token: int) -> np.ndarray:
        """The alphabet values that public id ``token`` stands for."""
        token = check_int("token", token, 0, self.vocab_size - 1)
        return self.decode(np.array([token], dtype=np.int32))

    # ==================== encoding and decoding

    # Private aliases kept for callers not yet moved to ``self.model`` (container, planner).
    def _tables(self) -> encoder.EncoderTables:
        return self.model.encoder_tables()

    def _expansion(self) -> encoder.Expansion:
        return self.model.expansion()

    def _value_table(self, dtype: Any) -> np.ndarray:
        return self.model.value_table(dtype)

    def encode(self, seq: Any, *, method: str | None = None, top_n: int | None = None) -> Any:
        """Token ids (int32, 1-D) of one sequence.

        ``method``: ``"replay"`` replays the merges in priority order; ``"optimal"`` is a
        segmentation with the fewest tokens; ``"bits"`` one with the fewest bits under the
        model's token counts (:meth:`Model.token_counts`); default the model's own method
        (replay in classic mode, see ``mode``). All decode to ``seq``; docs/algorithm.md,
        "Segmentation", states the tie rules.

        ``top_n=k`` instead returns up to ``k`` segmentations as ``(tokens, score)`` pairs, best
        first, scored by tf-idf as the ``ubpe`` 0.3.0 peer's ``UBPE.encode(top_n=)`` does
        (:func:`ubpe.segment.top_n`: the tokens' idf weights, 0 for alphabet symbols).

        Raises ``ValueError`` naming the first value outside the alphabet and its position,
        ``TypeError`` for floating-point input.
        """
        m = self._require()
        ids = self.alphabet.to_ids(seq)
        if top_n is not None:
            if method is not None:
                raise ValueError("top_n ranks segmentations by tf-idf: it takes no method")
            from . import segment

            a = len(self.alphabet)
            weights = np.concatenate((np.zeros(a), np.maximum(np.asarray(m["weights"], dtype=np.float64), 0.0)))
            found = segment.top_n(ids, m["model"].expansion(), weights, top_n)
            return [(m["token_ids"][t], score) for t, score in found]
        return m["token_ids"][m["model"].encode(ids, method)]

    def encode_batch(self, seqs: Iterable[Any], *, method: str | None = None) -> list[np.ndarray]:
        """:meth:`encode` of several independent sequences, in one kernel call."""
        m = self._require()
        ids = [self.alphabet.to_ids(s) for s in seqs]
        if method is None and self.mode == "classic":
            method = "replay"
        return [m["token_ids"][t] for t in m["model"].encode_batch(ids, method)]

    def decode(self, tokens: Any, *, dtype: np.dtype | None = None, max_output_size: int | None = None) -> np.ndarray:
        """Values of a token sequence, as ``dtype`` (default: that of the fitted data), exactly.

        ``dtype`` must round-trip every alphabet value (:func:`ubpe.model.check_decode_dtype`):
        an integer dtype of either byte order that holds them, bool for values within {0, 1},
        object, or str for string symbols. Raises ``TypeError`` for another kind of dtype,
        ``ValueError`` for one too narrow, or naming the first token id outside
        ``[0, vocab_size)``, or when the values would exceed ``max_output_size`` bytes
        (``None``: 4 GiB), which is checked before anything is allocated.
        """
        m = self._require()
        tok = m["priority"][self._check_tokens(tokens)]
        return m["model"].decode(tok, m["dtype"] if dtype is None else dtype, max_output_size=max_output_size)

    def _check_tokens(self, tokens: Any) -> np.ndarray:
        return check_ids(tokens, self.vocab_size, "tokens", np.int32)

    # ==================== serialization

    def _record(self) -> modelfile.ModelRecord:
        m = self._require()
        params = {"n_tokens": self.n_tokens, "n_candidates": self.n_candidates, "min_count": self.min_count,
                  "weighting": self.weighting, "window": self.window}
        return modelfile.ModelRecord(self.alphabet, m["dtype"], params, m["n_units"], m["merges"], m["batches"],
                                     m["counts"], m["df"], m["token_ids"], self.mode,
                                     self.method if self.mode != "classic" else None, self.predictor)

    def to_bytes(self) -> bytes:
        """The model as bytes (docs/format.md, "Model files"); equal models give equal bytes."""
        return modelfile.pack(self._record())

    @property
    def digest(self) -> str:
        """Hex SHA-256 naming what decoding needs: ``self.model.digest`` (mode, alphabet, merges).

        Training parameters, statistics and public ids are not covered, so two tokenizers that
        decode priority-space tokens the same share a digest.
        """
        return self.model.digest

    @classmethod
    def from_bytes(cls, data: bytes | bytearray | memoryview) -> Tokenizer:
        """Inverse of :meth:`to_bytes`.

        Raises ``CorruptDataError`` for anything malformed or inconsistent (checksum, sizes,
        merges, a dtype that cannot hold the alphabet's values), and ``FormatVersionError`` for a
        model written by a newer ubpe. Every declared size is checked against the bytes before
        anything is allocated.
        """
        from .frontend.chains import PREDICTORS

        r = modelfile.parse(data, PREDICTORS)
        p = r.params
        try:
            tok = cls(r.alphabet, p["n_tokens"], n_candidates=p["n_candidates"], min_count=p["min_count"],
                      weighting=p["weighting"], window=p["window"], mode=r.mode, method=r.method)
        except (TypeError, ValueError) as e:
            raise CorruptDataError(f"tokenizer: invalid parameters: {e}") from None
        tok._set_model(alphabet=r.alphabet, dtype=r.dtype, merges=r.merges, batches=r.batches, counts=r.counts,
                       df=r.df, n_units=r.n_units, token_ids=r.token_ids)
        tok.predictor = r.front
        return tok

    def save(self, path: str | os.PathLike) -> None:
        """Write :meth:`to_bytes` to ``path`` atomically (temporary file, then rename)."""
        from .io.atomic import write_atomic

        write_atomic(path, self.to_bytes(), overwrite=True)

    @classmethod
    def load(cls, path: str | os.PathLike) -> Tokenizer:
        """Read a model written by :meth:`save`."""
        with open(path, "rb") as f:
            return cls.from_bytes(f.read())

    # ==================== misc

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Tokenizer):
            return NotImplemented
        if self._model is None or other._model is None:
            return self._model is None and other._model is None and self.__dict__ == other.__dict__
        return self.to_bytes() == other.to_bytes()

    __hash__ = None  # mutable (fit)

    def __repr__(self) -> str:
        size = f"vocab_size={self.vocab_size}" if self._model is not None else "not fitted"
        mode = f", mode={self.mode!r}, method={self.method!r}" if self.mode != "classic" else ""
        if self.predictor is not None:
            mode += f", predictor={self.predictor!r}"
        return (
            f"Tokenizer({self.alphabet!r}, n_tokens={self.n_tokens}, n_candidates={self.n_candidates}, "
            f"min_count={self.min_count}, weighting={self.weighting!r}, window={self.window}{mode})  # {size}"
        )

    def __getstate__(self) -> dict[str, Any]:
        if self._model is None:
            return {"unfitted": self.__dict__.copy()}
        return {"bytes": self.to_bytes()}

    def __setstate__(self, state: dict[str, Any]) -> None:
        if "bytes" in state:
            self.__dict__.update(Tokenizer.from_bytes(state["bytes"]).__dict__)
        else:
            self.__dict__.update(state["unfitted"])


def _document_ids(docs: list, alphabet: Alphabet, doc_offsets: np.ndarray) -> np.ndarray:
    """All documents' alphabet ids in one int32 array (documents at ``doc_offsets``). Many
    documents of one integer dtype take one call; a value outside the alphabet is reported with
    its document's index."""
    ids = np.empty(int(doc_offsets[-1]), dtype=np.int32)
    arrays = all(issubclass(t, np.ndarray) for t in {type(d) for d in docs})
    if len(docs) > 1 and arrays and len({d.dtype for d in docs}) == 1 and docs[0].dtype.kind in "iub":
        try:
            # joining the buffers costs far less per document than np.concatenate
            joined = np.frombuffer(b"".join(docs), dtype=docs[0].dtype)
        except (TypeError, BufferError):  # a non-contiguous document
            joined = np.concatenate([d.reshape(-1) for d in docs])
        try:
            alphabet.to_ids(joined, out=ids)
            return ids
        except ValueError:
            pass  # the loop below names the first bad document
    for d, doc in enumerate(docs):
        try:
            alphabet.to_ids(doc, out=ids[doc_offsets[d] : doc_offsets[d + 1]])
        except ValueError as e:
            raise ValueError(f"document {d}: {e}" if len(docs) > 1 else str(e)) from None
    return ids


def _residuals(docs: list, predictor: Any) -> list[np.ndarray]:
    """Each document through the front-end chain ``predictor`` (one channel each)."""
    from . import frontend
    from .frontend.chains import PREDICTORS, build_chain

    if not isinstance(predictor, str):
        raise TypeError(f"predictor must be a str, got {type(predictor).__name__}")
    check_choice("predictor", predictor, tuple(PREDICTORS) + ("auto",))
    chain = build_chain(PREDICTORS[predictor])
    out = []
    for d, doc in enumerate(docs):
        arr = np.asarray(doc)
        if arr.dtype.kind not in "iu" or arr.ndim != 1:
            raise TypeError(f"document {d}: a predictor applies to 1-D integer arrays, got {arr.dtype} "
                            f"with shape {arr.shape}")
        out.append(frontend.forward(np.ascontiguousarray(arr).reshape(1, -1), chain)[0].reshape(-1) if arr.size else arr)
    return out


def _default_dtype(alphabet: Alphabet, dtype: np.dtype) -> np.dtype:
    """``dtype`` if it can hold every alphabet value, else the widest dtype of the alphabet's kind."""
    try:
        return check_decode_dtype(alphabet, dtype)
    except (TypeError, ValueError):
        if alphabet.kind == "symbols":
            return np.dtype(object)
        return np.dtype(np.uint64) if alphabet.kind == "integers" and alphabet.values.dtype == np.uint64 else np.dtype(np.int64)


def _coded_bytes(tok: Tokenizer, x: np.ndarray, predictor: str) -> int:
    """Bytes of ``x`` (1-D integers) coded with ``tok`` behind ``predictor``: its stream under the
    level-2 coders and its escaped values (values outside the alphabet), as
    ``compress(x, tokenizer=tok)`` codes them (the container's fixed fields aside)."""
    from . import coders
    from .format.fields import escape_field, escaped_ids

    y = _residuals([x], predictor)[0]
    ids, positions = escaped_ids(tok.alphabet, np.ascontiguousarray(y))
    tokens = tok.model.encode(ids) if len(tok.merges) else ids
    stream = coders.encode_stream(tokens, tok.vocab_size, coders=coders.coders_for(2))
    return len(msgpack.packb(stream, use_bin_type=True)) + (len(escape_field(y, positions)) if positions.size else 0)
