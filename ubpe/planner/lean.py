"""Level 2's lean search: finalists by cheap estimates, about one full context-mixing run."""

from __future__ import annotations

from dataclasses import replace

import msgpack
import numpy as np

from .. import frontend
from ..alphabet import Alphabet
from ..frontend import Stage
from .candidates import (
    ADAPTIVE_CODERS, Candidate, CostFunction, bare_candidates, coded_whole, dense_cm_candidate, dense_cm_fits, extrapolated,
    forward_shared, run_threads, windows,
)
from .fast import bounds, costed_candidates, fast_stages, layouts, merges_may_pay, params_bytes, small_ids, static_parts
from .estimates import order0_bytes, raw_learnable, static_estimate, value_counts
from .search import screen_sample, screened_size
from .settings import Settings


def lean_plan(x: np.ndarray, chains: list[list[Stage]], cost: CostFunction, s: Settings,
              threads: int = 1) -> Candidate:
    """Level 2's search from ``s.lean_above`` to ``s.lean_upto`` values (the module docstring, step 1b):
    about one full context-mixing run and a few static costings. ``x`` is ``(channels,
    frames)`` integers wider than a byte; returns a candidate built on all the values and
    costed with ``cost`` (as :func:`plan`).

    1. Every chain's output on the screen's sample (:func:`screen_sample`; prefixes of stages
       computed once, :func:`forward_shared`; with ``s.lean_screen_fast_lpc``, on a sample that
       is not every value, its "lpc" stages as level 1's screen runs them) gets a rough size (:func:`order0_bytes` scaled
       to all the values, plus its stages' params); those within ``s.lean_prune`` of the smallest
       (``s.lean_prune_large`` from ``s.lean_cm_large`` values; the first chain within
       ``s.lean_prune_first`` when :func:`raw_learnable`, or always up to ``s.lean_small``
       values) are ranked by :func:`static_estimate` (no coder run; :func:`compiled_estimate`). The finalists are the
       smallest estimate (the ``s.lean_keep_large`` smallest from ``s.lean_cm_large`` values),
       those within ``s.lean_close`` (``s.lean_close_large``) of the last of them, and the first chain (no front end)
       within ``s.screen_first_within`` of the smallest (when its estimate is within
       ``s.lean_first_check``, by its exact :func:`screened_size`: raw values' estimates run
       high; beyond ``s.lean_small`` values only with at most ``s.lean_raw_distinct`` distinct
       values a value, :func:`raw_learnable`); up to ``s.lean_small`` values, the first chain
       always and every chain within ``s.lean_small_close`` of the smallest.
    2. Each finalist offers the context mixers one id layout: dense ids
       (:func:`dense_cm_candidate`) unless the bare ids' estimate times ``s.lean_dense_bias`` is at
       most the dense ids' (no static dense candidate: dense ids); sized on ``s.lean_cm_sample``
       values (``s.lean_cm_sample_large`` from ``s.lean_cm_large`` values; ``s.screen_windows``
       windows) when k finalists' samples and one full run code fewer values than k full runs,
       else on all of them; the best estimate is then built on all the values.
    3. Static candidates (all the values, no merges) on the chain of the best of those (exact
       size S), when its estimate is within ``s.lean_static_within`` of S and their near-exact
       size (:func:`~ubpe.planner.fast.layouts`) within ``s.lean_static_exact_within``: with
       ``s.lean_static_costed`` level 1's candidate of those sizes
       (:func:`~ubpe.planner.fast.costed_candidates`: the layout that sizes least, the coders within
       ``s.fast_exact_close``), else its bare and dense ids, every static coder (:func:`bare_candidates`). Beyond ``s.lean_static_finalists_above``
       values, on every finalist's chain, by their near-exact size alone.
    Beyond ``s.full_fit`` values the screen takes ``s.lean_long_screen`` values and the
    context-mixing finalists ``s.lean_long_cm_sample`` in ``s.lean_long_windows`` windows.
    4. The smallest exact candidate wins (ties: the earlier chain, static first); it carries
       :func:`level1_estimate` (``level1_estimate``), for the writer's ``s.level1_within``."""
    long = x.size > s.full_fit  # (the screen's sample scaled to a long input's length: lean_long_screen)
    separate, joined, scale = screen_sample(x, replace(s, screen_sample=s.lean_long_screen) if long else s)
    whole = separate is x

    inputs, outputs = {False: separate, True: joined}, {}
    screen_chains = chains
    if not whole and s.lean_screen_fast_lpc:  # (on all the values the screen's outputs are the finalists')

        screen_chains = [fast_stages(chain, s, screen=True) for chain in chains]

    memo: dict = {}  # the compiled statistics passes over the chains' outputs (fast._layout_pass), their bounds

    def front(i: int) -> tuple[np.ndarray, list[dict], float, np.ndarray | None]:
        y, record = forward_shared(inputs, screen_chains, i, outputs)
        y = np.ascontiguousarray(y).reshape(-1)
        # (the bounds in one compiled pass, kept for the estimate's: fast.bounds)
        counts = value_counts(y, bounds(y, memo)) if y.shape[0] and y.dtype.kind in "iu" else None
        # the stages' params count too ("rank" keeps its table there, not in the alphabet)
        return y, record, order0_bytes(y, s, counts) * scale + len(msgpack.packb(record, use_bin_type=True)), counts

    screened = run_threads(front, list(range(len(chains))), threads)
    rough = [t[2] for t in screened]
    prune = s.lean_prune_large if x.size >= s.lean_cm_large else s.lean_prune
    # the first chain (raw values): the context mixer models their context itself, which the
    # static estimate does not see, where that context may be learnt: short inputs, or few
    # distinct values (raw_learnable)
    learnable = x.size <= s.lean_small or raw_learnable(screened[0][0], s, screened[0][3])
    alive = [i for i in range(len(chains)) if rough[i] <= prune * min(rough) or
             (i == 0 and learnable and (rough[i] <= s.lean_prune_first * min(rough) or x.size <= s.lean_small))]
    spelt: dict = {}  # the params' spellings (spelt_bytes)
    estimates = dict(zip(alive, run_threads(lambda i: compiled_estimate(screened[i][1], screened[i][0], scale, s, memo,
                                                                        spelt),
                                            alive, threads)))
    proxy = {i: min(e) for i, e in estimates.items()}
    ranked = sorted(proxy, key=lambda i: (proxy[i], i))
    least = proxy[ranked[0]]
    # the smallest estimate (the lean_keep_large smallest from lean_cm_large values) and those
    # within lean_close of the last of them
    keep_n = s.lean_keep_large if x.size >= s.lean_cm_large else 1
    last = proxy[ranked[min(keep_n, len(ranked)) - 1]]
    close = s.lean_close_large if x.size >= s.lean_cm_large else s.lean_close
    keep = set(ranked[:keep_n]) | {i for i in ranked if proxy[i] <= last * close}
    learnable = learnable and 0 in proxy
    if learnable and (proxy[0] <= s.screen_first_within * least or x.size <= s.lean_small):
        keep.add(0)
    elif learnable and proxy[0] <= s.lean_first_check * least and \
            screened_size(screened[0][1], screened[0][0], cost, scale) <= s.screen_first_within * least:
        keep.add(0)  # the estimate overrates raw values by up to a third: their exact level-1 proxy decides
    if x.size <= s.lean_small:
        keep.update(i for i in ranked if proxy[i] <= s.lean_small_close * least)
    finalists = sorted(keep)
    cm_coders = ADAPTIVE_CODERS
    outputs.clear()
    full_outputs: dict[int, tuple[np.ndarray, list[dict]]] = {}

    def output(i: int) -> tuple[np.ndarray, list[dict]]:
        if whole:
            return screened[i][0], screened[i][1]
        if i not in full_outputs:
            y, record = forward_shared({False: x, True: x}, chains, i, outputs)
            full_outputs[i] = (np.ascontiguousarray(y).reshape(-1), record)
        return full_outputs[i]

    def static(i: int, bound: float) -> list[tuple[Candidate, float]]:
        y, record = output(i)

        found = layouts(y, s, None, memo)
        if found is not None and min(found.costs.values()) + params_bytes(record) > s.lean_static_exact_within * bound:
            return []  # their near-exact size (no coder run) is out of reach
        if found is not None and s.lean_static_costed:
            # level 1's rule: the layout that sizes least, the coders within fast_exact_close of it
            return [(c, float(cost(c).size)) for c in costed_candidates(record, found, s)]
        return [(c, float(cost(c).size)) for c in bare_candidates(record, y)]

    def context_mixed(i: int) -> tuple[Candidate, float]:
        y, record = output(i)
        # dense ids unless the static estimates prefer the alphabet clearly (so does the context
        # mixer, mostly); the alphabet of all the values and their candidate made only when needed
        # (the candidate when it is sized or rebuilt: most finalists are sized on a sample)
        bare = estimates[i][0] * s.lean_dense_bias <= estimates[i][1] < float("inf")
        alphabet = None if bare else Alphabet.from_data(y)
        dense = alphabet is not None and dense_cm_fits(y, len(alphabet), s)

        def full() -> Candidate:
            if dense:
                return coded_whole(dense_cm_candidate(record, y, len(alphabet), cm_coders, s))
            values = Alphabet.from_data(y) if alphabet is None else alphabet
            return Candidate(record, values, np.zeros((0, 2), np.int32), values.to_ids(y), cm_coders, "adaptive",
                             whole=True)

        n, k = y.shape[0], len(finalists)
        sample = s.lean_cm_sample_large if n >= s.lean_cm_large else s.lean_cm_sample
        sample, count = (s.lean_long_cm_sample, s.lean_long_windows) if long else (sample, s.screen_windows)
        if k * n <= k * sample + n:  # sizing k samples then one in full costs more than k in full
            built = full()
            return built, float(cost(built).size)
        ys = y[windows(y.shape[0], sample, count)]
        alphabet_s = Alphabet.from_data(ys)
        sized = dense_cm_candidate(record, ys, len(alphabet_s), cm_coders, s, always=True) if dense else None
        if sized is None:
            sized = Candidate(record, alphabet_s, np.zeros((0, 2), np.int32), alphabet_s.to_ids(ys), cm_coders, "adaptive")
        sized.rebuild = full
        # subtle: the sample keeps the record of all the values: its growing params ("mult"'s
        # digits) are full size already, only the stream scales
        return sized, extrapolated(cost(sized), n / ys.shape[0], frontend.growing_bytes(record))

    # the context-mixing candidates, those sized on a sample built on all the values where they
    # may win; then the static ones on the chain of the best of those, exact
    cm_of = dict(zip(finalists, run_threads(context_mixed, finalists, threads)))
    if any(c.rebuild is not None for c, _ in cm_of.values()):
        bound = min(size for _, size in cm_of.values())
        cm_of = {i: (c.rebuild(), None) for i, (c, size) in cm_of.items() if size <= bound}
        cm_of = {i: (c, float(cost(c).size)) for i, (c, _) in cm_of.items()}
    cm_best, cm_chain = min((size, i) for i, (_, size) in cm_of.items())
    # the static candidates of the best container's chain, where its estimate is within
    # lean_static_within of that container (no merges: with the context mixers, merges never won
    # on the bench sets and the unseen recordings)
    if x.size <= s.lean_static_finalists_above:
        static_of = {cm_chain: static(cm_chain, cm_best)} if proxy[cm_chain] <= s.lean_static_within * cm_best else {}
    else:
        # a long input's static estimates, on a small share of its values, rank the static
        # candidates less well: every finalist's (its output on all the values made already) by
        # their near-exact size alone, the context mixer's chain first
        static_of, bound = {}, cm_best
        for i in [cm_chain] + [i for i in finalists if i != cm_chain]:
            # (short inputs: not even their near-exact size where the estimate is out of reach)
            static_of[i] = static(i, bound) if proxy[i] <= s.lean_static_estimate_within * bound else []
            bound = min([bound] + [size for _, size in static_of[i]])
    # in chain order, each chain's static candidates before its context-mixing one (ties: the earlier)
    cands = [c for i in finalists for c in static_of.get(i, []) + ([cm_of[i]] if i in cm_of else [])]
    best = min(((size, j, c) for j, (c, size) in enumerate(cands)), key=lambda t: t[:2])[2]
    best.level1_estimate = level1_estimate(chains, screened, rough, proxy, s, spelt, memo)
    return best


def short_settings(s: Settings) -> Settings:
    """``s`` widened for the lean search of a short input (up to ``s.short_lean_upto`` values):
    no chain pruned by its rough size, every chain a context-mixing finalist,
    dense ids for the context mixer wherever they fit, every finalist's static candidates within
    ``s.short_static_exact_within`` of the best so far by their near-exact size, those whose
    static estimate is within ``s.short_static_estimate_within`` of it."""
    inf = float("inf")
    return replace(s, lean_prune=inf, lean_small_close=inf, lean_dense_bias=inf, lean_static_finalists_above=0,
                   lean_static_exact_within=s.short_static_exact_within,
                   lean_static_estimate_within=s.short_static_estimate_within)


def spelt_bytes(record: list[dict], memo: dict, params: dict | None = None) -> int:
    """The bytes by which msgpack's spelling of ``record`` (the estimates') exceeds a container's
    (:func:`~ubpe.planner.fast.params_bytes`: by number), kept in ``memo`` by the list's identity;
    ``params``: ``params_bytes``' memo (the search's, which sizes the record for its estimate too),
    else ``memo``."""

    if id(record) not in memo:
        size = params_bytes(record, memo if params is None else params)
        memo[id(record)] = (record, len(msgpack.packb(record, use_bin_type=True)) - size)
    return memo[id(record)][1]


def compiled_estimate(record: list[dict], y: np.ndarray, scale: float, s: Settings,
                      memo: dict, spelt: dict | None = None) -> tuple[float, float]:
    """:func:`~ubpe.planner.estimates.static_estimate`, the same numbers from one compiled pass
    (:func:`~ubpe.planner.fast.static_parts`, which counts the params as a container packs
    them; here as ``static_estimate`` does, msgpack's spelling); ``memo``: the passes, by array;
    ``spelt``: :func:`spelt_bytes`' memo."""

    if y.shape[0] == 0 or y.dtype.kind not in "iu" or len(s.estimate_rates) != 2:
        return static_estimate(record, y, scale, s)
    lo, hi = bounds(y, memo)  # (kept in memo by the array: front's, static_parts')
    if hi - lo >= 1 << 22 or hi >= 1 << 63:
        return static_estimate(record, y, scale, s)  # (static_parts would fall back to it)
    parts = static_parts(record, y, scale, s, memo)
    extra = spelt_bytes(record, {} if spelt is None else spelt, memo)
    return min(parts[0], parts[1]) + extra, min(parts[2], parts[3]) + extra


def level1_estimate(chains: list[list[Stage]], screened: list, rough: list[float], proxy: dict[int, float],
                    s: Settings, memo: dict | None = None, passes: dict | None = None) -> float:
    """The lean search's estimate of level 1's container (for the writer's ``s.level1_within``):
    the smallest static estimate of the chains that decode fast (level 1's chains; the rough
    order-0 size of those the search pruned), or 0.0 (unknown: level 1 is planned) when level 1
    may train merges on one of them (:func:`~ubpe.planner.fast.merges_may_pay` on its output on
    the screen's sample, as :func:`~ubpe.planner.fast.fast_plan` decides). ``memo``:
    :func:`spelt_bytes`' memo; ``passes``: the search's memo of its statistics passes, whose ids
    of an output are :func:`~ubpe.planner.fast.small_ids`' (the same array, not made again)."""

    fast = [i for i in range(len(chains)) if all(st.fast_inverse for st in chains[i])]
    if not fast:
        return 0.0
    # (the estimates count the params as msgpack spells them; a container packs them by number)
    memo = {} if memo is None else memo
    out = min(proxy.get(i, rough[i]) - spelt_bytes(screened[i][1], memo) for i in fast)
    for i in fast:
        y, _record, _rough, counts = screened[i]
        if counts is None:
            return 0.0
        if counts.shape[0] * s.fast_merge_repeats > y.shape[0]:
            continue
        small = small_ids(y, y.shape[0], passes)
        if small is not None and merges_may_pay(*small, s, proxy.get(i, rough[i]), out):
            return 0.0
    return out

