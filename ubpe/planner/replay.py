"""Candidates from BPE training and replay encoding, the size of a merge prefix, the encoding method."""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from .. import encoder, trainer
from .._kernels import prefix as _prefix
from ..alphabet import Alphabet
from ..coders import MAX_VOCAB, coders_for, counts_cost_bits
from ..format.bits import pack_merges
from ..model import Model
from ..tokenizer import Tokenizer
from .candidates import (
    ADAPTIVE_CODERS, STATIC_CODERS, Candidate, Cost, CostFunction, coded_whole, dense_candidate, dense_cm_candidate,
    windows,
)
from .settings import Settings


@dataclass
class _Training:
    """One training run: its merges (priority order) and the replay stream under all of them."""

    a: int
    merges: np.ndarray
    stream: np.ndarray
    #: best_prefix's costs of this run's prefixes (merges kept -> bits), shared by the probe and
    #: :meth:`rans_prefix` (the same histogram)
    costs: dict = field(default_factory=dict)

    def tokens(self, k: int) -> np.ndarray:
        """The replay encoding under the first ``k`` merges: the full stream with every later
        token expanded into earlier ones (decoded with the later merges over a + k ids)."""
        if k >= len(self.merges):
            return self.stream
        return encoder.decode(self.stream, encoder.build_expansion(self.merges[k:], self.a + k))

    def prefix(self, k: int) -> np.ndarray:
        return self.merges if k >= len(self.merges) else np.ascontiguousarray(self.merges[:k])

    def rans_prefix(self, ladders: tuple[float, ...]) -> int:
        """The prefix :func:`best_prefix` keeps for the static coder (on the given ``ladders``)."""
        if len(self.merges) == 0:
            return 0
        return best_prefix(np.bincount(self.stream, minlength=self.a + len(self.merges)), self.merges, self.a,
                           ladders, cache=self.costs)


def auto_max_merges(n: int, a: int, s: Settings) -> int:
    """The merges the automatic model size trains at most: min(``s.auto_max_merges``, n //
    ``s.auto_values_per_merge``), within the vocabulary cap."""
    return max(min(s.auto_max_merges, n // s.auto_values_per_merge, MAX_VOCAB - a), 0)


def train(a: int, ids: np.ndarray, max_merges: int, fit_options: dict) -> _Training:
    """Train up to ``max_merges`` merges on ``ids`` (one document) with the fit options."""
    if max_merges <= 0 or ids.shape[0] < 2:
        return _Training(a, np.zeros((0, 2), np.int32), ids)
    probe = Tokenizer(None, 1, **fit_options)
    doc_offsets = np.array([0, ids.shape[0]], dtype=np.int64)
    result = trainer.train(
        ids, doc_offsets, trainer.unit_offsets_for(doc_offsets, probe.window), a, a + max_merges,
        probe.n_candidates, probe.min_count, return_stream=True,
    )
    return _Training(a, result.merges, result.stream)


class ReplayEncoder:
    """Candidates from BPE training and replay encoding (``classic`` mode).

    ``propose(chain, y, level, cost, sampled, rated)`` returns candidates for the values ``y`` (1-D,
    the chain's output taken channel-major; a sample of it when ``sampled``; ``cost`` is there
    for encoders that search among their proposals, replay needs none; ``rated``: merges were
    rated worth building already, no :func:`probe`); none when a fixed
    ``n_tokens`` is smaller than the alphabet of ``y``. ``rebuild(candidate, y, level)`` applies
    a candidate's recipe to all the values.
    """

    def __init__(self, n_tokens: int | None, fit_options: dict, settings: Settings) -> None:
        self.n_tokens = n_tokens
        self.fit_options = fit_options
        self.settings = settings

    def propose(self, chain: list[dict], y: np.ndarray, level: int, cost: CostFunction,
                sampled: bool, rated: bool = False) -> list[Candidate]:
        alphabet = Alphabet.from_data(y)
        a = len(alphabet)
        ids = alphabet.to_ids(y) if y.shape[0] else np.zeros(0, np.int32)
        s = self.settings
        offered = coders_for(level)
        if self.n_tokens is not None:
            if a > self.n_tokens:
                return []
            with warnings.catch_warnings():
                # "fit stopped early" says nothing to compress's caller: the container's vocabulary
                # is what describe() reports (plan() fits these on one thread: the filter is global)
                warnings.simplefilter("ignore", UserWarning)
                tok = Tokenizer(alphabet, self.n_tokens, **self.fit_options).fit(y)
            merges = tok.merges
            tokens = tok.model.encode(ids) if len(merges) else ids
            return [Candidate(chain, alphabet, merges, tokens, offered)]
        # rated: a training run on a sample of these values already rated merges worth building
        # (level 1's fast_plan, merged_ratio): the probe would ask again, so merges are trained on
        # all the values; where the probe would have said no, the bare ids are still offered
        # beside the merges' best prefix, so the smallest candidate is never larger
        run, pays = (None, True) if rated else probe(y, a, ids, self.fit_options, s)
        if pays and run is None:
            fit_options = self.fit_options
            if rated or level == 1:  # (the static coders only: pairs seen fewer than
                # fast_merge_min_count times not merged; the probe's run keeps the fit's min_count)
                fit_options = {**fit_options, "min_count": max(int(fit_options.get("min_count", 2)),
                                                               s.fast_merge_min_count)}
            run = train(a, ids, auto_max_merges(y.shape[0], a, s), fit_options)
        bare = _Training(a, np.zeros((0, 2), np.int32), ids)
        fit = run if pays else bare  # no training on all the values when a sample says no merge pays
        j = fit.rans_prefix(s.prefix_ladders)
        out = [Candidate(chain, alphabet, fit.prefix(j), fit.tokens(j), STATIC_CODERS, "static")]
        # for the "mag" coder: bare ids (merges blur magnitude classes), and dense ids
        if j > 0 and "bare" in s.level1_variants:
            out.append(Candidate(chain, alphabet, fit.prefix(0), ids, STATIC_CODERS, "static", variant="bare"))
        dense = dense_candidate(chain, y, a) if "dense" in s.level1_variants else None
        if dense is not None:
            out.append(dense)
        if level == 1:
            return out
        # level 2: the bare alphabet with the level-2 coders (context mixing, "cms2" for signals,
        # the text coders for bytes), which model the values' context themselves: with them,
        # merges never made a smaller container on the benchmark data (benchmarks/README.md)
        cm = ADAPTIVE_CODERS
        if sampled or y.shape[0] <= s.cm_sample_above:  # (sampled: y is the search's sample of windows)
            dense = dense_cm_candidate(chain, y, a, cm, s)
            cms = [Candidate(chain, alphabet, bare.prefix(0), ids, cm, "adaptive")] + ([dense] if dense else [])
            return out + (cms if sampled else [coded_whole(c) for c in cms])
        # sized on a sample (s.screen_windows windows), built on all the values only if it may win (see plan)
        ys = y[windows(y.shape[0], s.cm_sample, s.screen_windows)]
        alphabet_s = Alphabet.from_data(ys)
        c = Candidate(chain, alphabet_s, bare.prefix(0), alphabet_s.to_ids(ys), cm, "adaptive",
                      scale=y.shape[0] / ys.shape[0])
        c.rebuild = lambda: Candidate(chain, alphabet, bare.prefix(0), ids, cm, "adaptive", whole=True)
        out.append(c)
        dense = dense_cm_candidate(chain, ys, len(alphabet_s), cm, s)
        if dense is not None:
            dense.scale = c.scale
            dense.rebuild = lambda: coded_whole(dense_cm_candidate(chain, y, a, cm, s, always=True)
                                                or Candidate(chain, alphabet, bare.prefix(0), ids, cm, "adaptive"))
            out.append(dense)
        return out

    def rebuild(self, cand: Candidate, y: np.ndarray, level: int) -> Candidate:
        """``cand``'s recipe applied to all the values ``y`` (its chain's output)."""
        if self.n_tokens is not None:
            full = self.propose(cand.chain, y, level, _no_cost, sampled=False)
            if not full:  # the sample held fewer distinct values than all the values
                raise ValueError(f"n_tokens={self.n_tokens} is smaller than the alphabet of the values "
                                 f"under the chosen front end: the smallest n_tokens that works is "
                                 f"{len(Alphabet.from_data(y))} (the alphabet, no merges)")
            return full[0]
        if cand.family == "static":
            full = self.propose(cand.chain, y, 1, _no_cost, sampled=False)
            return next((c for c in full if c.variant == cand.variant), full[0])
        alphabet = Alphabet.from_data(y)
        dense = dense_cm_candidate(cand.chain, y, len(alphabet), cand.coders, self.settings, always=True) \
            if cand.variant == "dense" else None
        if dense is not None:
            return coded_whole(dense)
        return Candidate(cand.chain, alphabet, np.zeros((0, 2), np.int32), alphabet.to_ids(y), coders_for(2), "adaptive",
                         whole=True)


def probe(y: np.ndarray, a: int, ids: np.ndarray, fit_options: dict, s: Settings) -> tuple[_Training | None, bool]:
    """Whether merges may make the values ``y`` (1-D, alphabet of ``a`` ids ``ids``) smaller
    under the static coders, answered on a training run over at most ``probe_sample`` of
    them (``windows`` windows beyond): does :func:`best_prefix` on its coarse ladder
    (``probe_ladders``), the histogram scaled to all the values (the stream grows with
    them, the merge table does not), keep any merge? Returns (the run when it covered all the
    values, else None; the answer)."""
    n = y.shape[0]
    if n <= s.probe_sample:
        fit = train(a, ids, auto_max_merges(n, a, s), fit_options)
        hist = np.bincount(fit.stream, minlength=a + len(fit.merges))
        return fit, len(fit.merges) > 0 and best_prefix(hist, fit.merges, a, s.probe_ladders, cache=fit.costs,
                                                        bound=True) > 0
    ys = y[windows(n, s.probe_sample, s.windows)]
    alphabet = Alphabet.from_data(ys)
    a_s = len(alphabet)
    fit = train(a_s, alphabet.to_ids(ys), auto_max_merges(ys.shape[0], a_s, s), fit_options)
    if len(fit.merges) == 0:
        return None, False
    hist = np.bincount(fit.stream, minlength=a_s + len(fit.merges)).astype(np.int64) * (n // ys.shape[0])
    return None, best_prefix(hist, fit.merges, a_s, s.probe_ladders, bound=True) > 0


def _no_cost(cand: Candidate) -> Cost:  # level 1 proposals never consult the cost
    raise AssertionError("unreachable")


def _cost_lower_bound(counts: np.ndarray) -> float:
    """A lower bound, in bits, of ``counts_cost_bits(counts)``: the smaller of the exact
    bit-packed size and n H + k + 33 (rANS's cross-entropy is at least the entropy n H, its
    flush 32 bits, its table a mode bit and at least one bit per used symbol's count code),
    less a bit of slack for rounding."""
    c = counts[counts > 0].astype(np.float64)
    if c.shape[0] <= 1:
        return 0.0
    n = float(c.sum())
    width = int(np.flatnonzero(counts)[-1]).bit_length()
    packed = 8.0 * ((int(n) * width + 7) // 8)
    h = n * np.log2(n) - float((c * np.log2(c)).sum())  # (not np.dot: BLAS threads)
    ans = h + c.shape[0] + 33.0
    return min(packed, ans) * (1.0 - 1e-9) - 1.0


def best_prefix(hist: np.ndarray, merges: np.ndarray, a: int, ladders: tuple[float, ...],
                cache: dict | None = None, bound: bool = False) -> int:
    """Number of merges, a prefix of ``merges`` in priority order, that minimises the size.

    ``hist`` is the token histogram of the replay encoding under all merges. Dropping the last
    merge ``A + k`` turns each of its occurrences into its two children, so the histogram of
    every prefix follows by unrolling from the top; each candidate is costed as the entropy
    stage's estimate (``counts_cost_bits``) plus the packed merge table; a prefix whose lower
    bound (:func:`_cost_lower_bound` plus its exact merge table) is above the least exact cost
    the call has seen is not costed exactly (it can be neither the answer nor tie it, and the
    brackets follow the points, not their costs: the answer is the one of every prefix costed
    exactly; the bound is not cached). Candidates
    form a geometric ladder (the ratio of ``prefix_ladders``' first), then the bracket
    around the best so far is searched with each finer ratio in turn. ``cache`` (prefix size ->
    cost, for this ``hist`` and ``merges`` only) keeps costs across calls: filled and read.
    ``bound`` (one ladder only, as the probe's: ``probe_ladders``): a prefix whose lower
    bound (:func:`_cost_lower_bound` plus its exact merge table) is at least the exact cost of
    no merges is not costed exactly: it cannot beat none (ties go to the smaller prefix), so
    whether the answer is 0 is the same as with every cost exact; the answer is then 0 or
    a prefix costed exactly.
    """
    m = len(merges)
    cache = {} if cache is None else cache
    if m == 0:
        return 0
    left = np.ascontiguousarray(merges[:, 0], dtype=np.int64)
    right = np.ascontiguousarray(merges[:, 1], dtype=np.int64)
    if a + m >= 1 << 30 or min(int(left.min()), int(right.min())) < 0 \
            or np.any(np.maximum(left, right) >= a + np.arange(m)):
        pack_merges(merges, a)  # (refuses them, as each prefix's table did)
    base = np.asarray(hist, dtype=np.int64)
    # the merge table's bits of every prefix (pack_merges' length is its method byte and these
    # bits in whole bytes): one compiled pass, not one pack_merges a prefix costed
    table = np.empty(m + 1, np.int64)
    _prefix.table_bits(left, right, a, table)

    def table_bytes(k: int) -> int:  # len(pack_merges(merges[:k], a)), k >= 1
        return 1 + (int(table[k]) + 7) // 8

    def cost(counts: np.ndarray, k: int) -> float:
        model_bits = 8 * table_bytes(k) if k else 0
        return counts_cost_bits(counts) + model_bits

    pending: list = []
    later: list = []
    least = [float("inf")]  # the least exact cost this call has seen
    # the histogram at each prefix this call costed (k -> its first a + k cells; the rest are 0):
    # a later sweep starts from the least of them at or above its points instead of from all m
    # merges (the same integers: unrolling is a function of the histogram above k). At most
    # the ladder's points, each a + k cells: about 3.5 (a + m) integers on the first ladder.
    states: dict[int, np.ndarray] = {}

    def sweep(ladder: list[int]) -> dict[int, float]:
        # one pass from the least costed prefix at or above max(ladder) (else all m merges) down
        # to min(ladder), costing each ladder point
        points = sorted(set(ladder), reverse=True)
        top = min((k for k in states if k >= points[0]), default=m)
        h = np.zeros(a + m, np.int64)
        h[: a + top] = base[: a + top] if top == m else states[top]
        out = {}
        for k in points:
            _prefix.unroll(h, left, right, a, top, k)  # (the histogram at k: unrolled from top)
            top = k
            if k in cache:
                out[k] = cache[k]
                least[0] = min(least[0], cache[k])
                continue
            counts = h[: a + k].copy()
            states[k] = counts
            if k == 0:  # (always exact: the bounded probe compares its prefixes with it)
                cache[k] = out[k] = cost(counts, k)
                least[0] = min(least[0], out[k])
                continue
            model_bits = 8 * table_bytes(k)
            low = _cost_lower_bound(counts) + model_bits
            (pending if bound and 0 in ladder else later).append((low, k, counts, model_bits))
        # the points costed exactly in the order of their lower bounds: one whose bound is above
        # the least exact cost of this call cannot be the answer (nor tie it), and the brackets
        # are the same (they follow the points, not their costs): its bound stands for its cost
        # (not cached). The answer is the one of every point costed exactly.
        for low, k, counts, model_bits in sorted(later, key=lambda t: t[:2]):
            if low > least[0]:
                out[k] = low
            else:
                cache[k] = out[k] = counts_cost_bits(counts) + model_bits
                least[0] = min(least[0], out[k])
        later.clear()
        for low, k, counts, model_bits in pending:
            if low >= out[0]:
                out[k] = low  # cannot beat no merges (not cached: a bound, not a cost)
            else:
                cache[k] = out[k] = counts_cost_bits(counts) + model_bits
                least[0] = min(least[0], out[k])
        pending.clear()
        return out

    def ladder(hi: int, lo: int, ratio: float) -> list[int]:
        points, x = [hi], float(hi)
        while True:
            x /= ratio
            k = int(round(x))
            if k <= lo:
                break
            if k < points[-1]:
                points.append(k)
        points.append(lo)
        return points

    costs: dict[int, float] = {}
    lo, hi = 0, m
    for ratio in ladders:
        if hi - lo <= 2 and costs:
            break
        costs.update(sweep([k for k in ladder(hi, lo, ratio) if k not in costs] or [hi]))
        keys = sorted(k for k in costs if lo <= k <= hi)
        best = min(keys, key=lambda k: (costs[k], k))
        i = keys.index(best)
        lo, hi = keys[max(i - 1, 0)], keys[min(i + 1, len(keys) - 1)]
    return min(costs, key=lambda k: (costs[k], k))


def methods_to_try(cand: Candidate, s: Settings) -> tuple[str, ...]:
    """The methods worth measuring for ``cand``: ``encode_methods`` when it has merges (a
    bare alphabet encodes one way)."""
    return s.encode_methods if len(cand.merges) else s.encode_methods[:1]


def choose_method(cand: Candidate, cost: CostFunction, s: Settings) -> Candidate:
    """``cand`` (replay-encoded, built on all the values), or the same model and coders with the
    values re-encoded by the method of :func:`methods_to_try` whose container is smallest,
    measured exactly with ``cost`` (ties: the earlier method, so replay). Decoding never needs
    to know: every method's tokens expand to the same values."""
    methods = methods_to_try(cand, s)
    if len(methods) <= 1:
        return cand

    model = Model(cand.alphabet, cand.merges)
    ids = encoder.decode(cand.tokens, model.expansion())
    best, best_size = cand, cost(cand).size
    for method in methods:
        if method == cand.method:
            continue
        other = replace(cand, tokens=encode_with(model, ids, method, cand.tokens, s.bits_passes), method=method, packed=None)
        size = cost(other).size
        if size < best_size:
            best, best_size = other, size
    return best


def encode_with(model: Any, ids: np.ndarray, method: str, replay: np.ndarray, passes: int) -> np.ndarray:
    """``ids`` encoded under ``model`` by ``method``, given their replay encoding ``replay``.

    "bits" prices each token by its frequency in ``replay`` (what the static coder would pay
    for that stream), then ``passes`` - 1 more times by the previous segmentation's
    own frequencies, so that the segmentation aims at this container's stream rather than at
    training statistics."""
    if method == "replay":
        return replay
    if method == "optimal":
        return model.encode(ids, method)
    tokens = replay
    for _ in range(passes):
        tokens = model.encode(ids, method, np.bincount(tokens, minlength=model.vocab_size))
    return tokens

