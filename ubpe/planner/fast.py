"""Level 1's plan: decide by estimates, code once (the package docstring, step 1c)."""

from __future__ import annotations

import numpy as np

from .. import frontend
from ..frontend import Stage
from .candidates import Candidate, CostFunction, bare_candidates
from .estimates import clearly_smaller, estimate_parts, likely_coders
from .lean import forward_shared
from .replay import ReplayEncoder, auto_max_merges, best_prefix, train
from .search import screen_sample
from .settings import Settings


def applies(x: np.ndarray, proposer: object) -> bool:
    """Whether :func:`fast_plan` plans ``x`` (``(channels, frames)``) at level 1: integers wider
    than a byte, the model's size automatic (bytes and text keep the exhaustive search, whose
    merges win there)."""
    return (type(proposer) is ReplayEncoder and proposer.n_tokens is None and x.dtype.kind in "iu"
            and x.dtype.itemsize > 1)


def pair_information(ids: np.ndarray, a: int) -> float:
    """The mutual information, in bits a value, between consecutive ids of ``ids`` (1-D, in
    ``[0, a)``, ``a * a`` within int64) from their pair counts, less the Miller-Madow bias of
    the plug-in estimate ((used pairs - used firsts - used seconds + 1) / (2 n ln 2)): about 0
    for independent ids."""
    n = ids.shape[0] - 1
    if n < 1 or a < 2:
        return 0.0
    first, second = ids[:-1].astype(np.int64), ids[1:]
    pairs = np.bincount(first * a + second, minlength=a * a)
    left, right = pairs.reshape(a, a).sum(axis=1), pairs.reshape(a, a).sum(axis=0)

    def plogp(c: np.ndarray) -> tuple[float, int]:
        c = c[c > 0].astype(np.float64)
        return float(np.dot(c, np.log2(c))), int(c.shape[0])

    joint, k2 = plogp(pairs)
    lt, kl = plogp(left)
    rt, kr = plogp(right)
    information = (joint - lt - rt) / n + np.log2(n)
    return information - (k2 - kl - kr + 1) / (2.0 * n * np.log(2.0))


def merges_may_pay(ids: np.ndarray, a: int, s: Settings) -> bool:
    """The cheap test before any training: merges may make the ids ``ids`` (1-D, alphabet of
    ``a``) smaller only where consecutive ids depend on each other: an alphabet of at most
    ``s.fast_merge_alphabet`` ids and :func:`pair_information` of at least
    ``s.fast_merge_information`` bits a value."""
    return 2 <= a <= s.fast_merge_alphabet and pair_information(ids, a) >= s.fast_merge_information


def merged_ratio(ids: np.ndarray, a: int, n: int, fit_options: dict, s: Settings) -> float:
    """The static coders' cost with merges over their cost without, estimated on the ids
    ``ids`` (a sample, alphabet of ``a``) of ``n`` values: a training run on them, its
    histogram scaled to ``n`` values, the best prefix of the probe's coarse ladder
    (:func:`best_prefix`, ``s.probe_ladders``) costed with its merge table. 1.0 when no merge
    is kept."""
    fit = train(a, ids, auto_max_merges(ids.shape[0], a, s), fit_options)
    if len(fit.merges) == 0:
        return 1.0
    hist = np.bincount(fit.stream, minlength=a + len(fit.merges)).astype(np.int64) * max(n // ids.shape[0], 1)
    costs: dict = {}
    k = best_prefix(hist, fit.merges, a, s.probe_ladders, cache=costs)
    return costs[k] / costs[0] if k and costs.get(0) else 1.0


def fast_plan(x: np.ndarray, chains: list[list[Stage]], cost: CostFunction, proposer: ReplayEncoder,
              s: Settings) -> Candidate:
    """Level 1's candidate for ``x`` (``(channels, frames)`` integers wider than a byte) over
    ``chains``, built on all the values and costed with ``cost``.

    1. With several chains, each one's output on the screen's sample (:func:`screen_sample`:
       all the values up to ``s.screen_sample``; chains that share leading stages share their
       forward pass, :func:`forward_shared`) gets the static estimate of
       :func:`estimate_parts` (no coder run); the smallest goes on, and those within
       ``s.fast_close`` of it (at most ``s.fast_keep`` in all).
    2. Each chain that goes on is put through all the values (the screen's output when the
       sample was every value) and offers its bare candidates (:func:`bare_candidates`): of
       the bare and dense ids one whose estimate is more than ``s.lean_layout_clear`` times
       the other's is not built, nor offered the coder rated ``s.lean_coder_clear`` times the
       other (:func:`likely_coders`; the estimates of all the values).
    3. The smallest exact candidate wins (ties: the earlier chain, the bare ids first)."""
    windows, joined, scale = screen_sample(x, s)
    whole = windows is x
    outputs: dict = {}
    screened: dict[int, tuple[np.ndarray, list[dict], tuple[float, float, float, float]]] = {}
    merged: set[int] = set()  # chains whose merges may pay: level 1's full procedure there
    proxy: dict[int, float] = {}
    inputs = {False: windows, True: joined}
    for i in range(len(chains)):
        y, record = forward_shared(inputs, chains, i, outputs)
        y = np.ascontiguousarray(y).reshape(-1)
        parts = estimate_parts(record, y, scale, s)
        screened[i] = (y, record, parts)
        proxy[i] = min(parts)
        small = small_ids(y, s.fast_merge_alphabet)
        if small is not None and merges_may_pay(*small, s):
            ratio = merged_ratio(*small, x.size, proposer.fit_options, s)
            if ratio < 1.0:
                merged.add(i)
                proxy[i] = min(proxy[i], parts[0] * ratio)
    ranked = sorted(proxy, key=lambda i: (proxy[i], i))
    kept = sorted(i for i in ranked[:s.fast_keep] if proxy[i] <= s.fast_close * proxy[ranked[0]])
    if not whole:
        outputs.clear()
    cands: list[Candidate] = []
    for i in kept:
        if whole:
            y, record, parts = screened[i]
        else:
            y, record = forward_shared({False: x, True: x}, chains, i, outputs)
            y = np.ascontiguousarray(y).reshape(-1)
            parts = estimate_parts(record, y, 1.0, s)
        if i in merged:
            cands += proposer.propose(record, y, 1, cost, False)
            continue
        found = bare_candidates(record, y)
        cands += likely_coders(clearly_smaller(found, (min(parts[:2]), min(parts[2:])), s), parts, s)
    return min(((cost(c).size, j, c) for j, c in enumerate(cands)), key=lambda t: t[:2])[2]


def small_ids(y: np.ndarray, limit: int) -> tuple[np.ndarray, int] | None:
    """The alphabet ids of the values ``y`` (1-D integers) and the alphabet's size, when it has
    at most ``limit`` values; else None."""
    if y.shape[0] < 2 or y.dtype.kind not in "iu":
        return None
    lo, hi = int(y.min()), int(y.max())
    if hi - lo >= 1 << 22 or hi >= 1 << 63:
        return None
    d = np.subtract(y, lo, dtype=np.int64)
    present = np.bincount(d) > 0
    a = int(np.count_nonzero(present))
    if a > limit:
        return None
    rank = (np.cumsum(present) - 1).astype(np.int32)
    return rank[d], a
