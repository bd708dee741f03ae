"""The writer's choices: which front-end chain, vocabulary and coder give the smallest container.

Nothing here is part of the format: a reader never needs this package, and any choice it makes
decodes the same way. :mod:`ubpe.api` hands the planner a costing function that returns the
exact packed size the format gives a candidate; the planner knows no field names. Every tuning
constant below (``a_name``) is a field of :class:`~ubpe.planner.settings.Settings`, documented
there once with what it was measured to do.

Modules: :mod:`~ubpe.planner.settings` (the tuning), :mod:`~ubpe.planner.candidates` (what is
searched), :mod:`~ubpe.planner.chains` (which chains), :mod:`~ubpe.planner.replay` (candidates
from training, prefixes, encoding methods), :mod:`~ubpe.planner.estimates` (cheap sizes),
:mod:`~ubpe.planner.search` (steps 1 to 4), :mod:`~ubpe.planner.lean` (step 1b).

The procedure (also in ``docs/format.md``, "Writer choices")
------------------------------------------------------------
A *candidate* is (front-end chain) x (model: alphabet and merges) x (token stream) x (coders
offered to the entropy stage). It carries its own token stream, so any encoder can propose
candidates: replay (:class:`ReplayEncoder`, the only one today) proposes prefixes of one
training run; an optimal-parse encoder would propose its own streams, with no change to the
search.

1. Chains: the forced one (``delta=k`` or ``predictor=name``, :data:`PREDICTORS`), or every
   chain of :func:`auto_chains`. Beyond ``screen_sample`` values each of them is first screened
   by the exact level-1 container size of its bare alphabet (no training) on a sample
   (``screen_sample`` values in ``screen_windows`` windows, each put through the chain on its
   own: 4096 frames of one channel, long enough for the predictors to learn), and the
   ``screen_keep`` smallest (and any within ``screen_close`` of the last of them) go on to
   step 2 (at level 2, also the first chain, no front end,
   when its screened size is within ``screen_first_within`` of the smallest, and the
   ``screen_keep`` smallest fast-decoding ones, which are level 1's: those that are not among
   the others get level 1's candidates only, no context-mixing run). Level 1 measures only
   chains whose stages all decode fast (no adaptive prediction). The costing function may code
   equal candidates once: the format's does, within one ``compress`` call.
1b. Level 2, automatic choice, from ``lean_above`` to ``lean_upto`` values wider than
   a byte (bytes and text keep the exhaustive search: merges and the text coders; so does the
   plan of the blocked form, made once on a sample of a longer input; beyond ``full_fit``
   values the screen takes ``lean_long_screen`` values, the context-mixing finalists are sized
   on ``lean_long_cm_sample`` values in ``lean_long_windows`` windows, and every finalist gets
   its static candidates by their near-exact size alone, ``lean_static_finalists_above``): the lean
   search (:func:`~ubpe.planner.lean.lean_plan`) replaces steps 1 to 4, so that level 2 costs about one full
   context-mixing run plus a few static costings. Every chain is put through the screen's
   sample (all the values when they fit; chains that share leading stages share their
   forward pass, :func:`~ubpe.planner.candidates.forward_shared`; with ``lean_screen_fast_lpc``,
   off by default, on a sample its "lpc" stages as level 1's screen runs them) and gets a rough size, the order-0
   entropy of its output plus ``order0_table_bits`` a distinct value
   (:func:`~ubpe.planner.estimates.order0_bytes`) plus its stages' params; those within
   ``lean_prune`` of the smallest (``lean_prune_large`` from ``lean_cm_large`` values; the
   first chain, no front end, within ``lean_prune_first`` when it has at most
   ``lean_raw_distinct`` distinct values a value, always up to ``lean_small`` values) get an *estimate* of
   step 1's level-1 proxy, no coder run (:func:`~ubpe.planner.estimates.static_estimate`: order-0 entropy and a count
   table of the bare ids, the "mag" coder's model bits from its own statistics pass at
   ``estimate_rates``, on the bare and on the dense ids, the alphabet's gaps, the stages'
   params; mostly within 0.3 % below to 4.3 % above the exact proxy on predicted values, up to
   about a third over on raw ones). The finalists are the smallest estimate (the
   ``lean_keep_large`` smallest from ``lean_cm_large`` values), those within
   ``lean_close`` of the last of them and the first chain when within ``screen_first_within`` of the
   smallest (its estimate within ``lean_first_check``: its exact proxy decides; beyond
   ``lean_small`` values only with at most ``lean_raw_distinct`` distinct values a value; always up to
   ``lean_small`` values, with every chain within ``lean_small_close`` of the smallest). Each
   finalist offers the context mixers one id layout: dense ids when the values have at least
   ``dense_cm_alphabet`` distinct values with holes in their range, unless the bare ids'
   estimate times ``lean_dense_bias`` is at most the dense ids' (dense ids when no static
   dense candidate exists), sized on ``lean_cm_sample`` values (``screen_windows``
   windows; ``lean_cm_sample_large`` from ``lean_cm_large`` values) when k
   finalists' samples and one full run cost fewer values than k full runs, else on all of
   them; the best estimate is built on all the values. Then the static candidates (bare and
   dense ids, no merges), built on all the values, of the best context-mixing container's
   chain, when its estimate is within ``lean_static_within`` of that container's size and their
   near-exact size (:func:`~ubpe.planner.fast.layouts`) within ``lean_static_exact_within``. The
   smallest exact candidate wins (ties: the earlier chain, static first).
1c. Level 1, automatic model size, integers wider than a byte (:func:`~ubpe.planner.fast.fast_plan`:
   decide by estimates, code once) replaces steps 1 to 4. Its chains' "lpc" stages search
   fewer predictors (``fast_lpc_candidates`` orders costed on one chunk in
   ``fast_lpc_costed_every``). Each chain is put through the screen's values (all of them up to
   ``fast_whole``, else the screen's sample, its "lpc" stages unrefitted) and ranked by order-0
   size (plus ``order0_table_bits`` a distinct value); those within ``fast_prune`` of the smallest (and those whose ids are few and
   consecutive ids repeat as pairs and share information, ``fast_merge_repeats``, ``fast_merge_information``,
   rated by a training run on the sample) get the static estimate. The smallest, and of the
   next ``fast_keep - 1`` those within ``fast_close`` of it (``fast_refit_close`` when its LPC
   went unrefitted), are put through all the values; the one of smallest estimate is kept.
   Its layouts (bare or dense ids) and coders, those rated within ``fast_size_clear`` of the
   best, are sized near exactly without coding (:func:`~ubpe.planner.fast.layouts`); the cheapest layout is built, offered the coders within
   ``fast_exact_close`` of its best: one container coded. A chain whose merges were rated
   gets step 3's level-1 candidates. Bytes and text keep the exhaustive search (merges win
   there).
2. Values: each chain is applied per channel (``(channels, frames)``) and the output taken
   channel-major. Up to ``full_fit`` values every candidate is built on all the values and
   sized exactly; beyond, on a sample of ``sample`` values (``windows`` evenly spaced
   windows), sized as (stream bytes) x (values / sample values) + (everything else); the
   format counts with the stream's bytes those that a stage codes in its params and that grow
   with the values (the digits of a ``mult`` stage), here and in the screen of step 1.
3. Candidates per chain, from one training run of up to ``min(auto_max_merges, n //
   auto_values_per_merge)`` merges, run
   only when a probe (:func:`~ubpe.planner.replay.probe`: a run on ``probe_sample`` of the values, its
   histogram scaled to all of them, :func:`best_prefix` on a coarse ladder) keeps a merge;
   otherwise from the bare alphabet alone:
   level 1, the prefix :func:`best_prefix` keeps, offered to the static coders; level 2, the
   same one, and the bare alphabet offered to the level-2 coders that level 1 lacks (the static
   ones measured it already, as level 1's bare candidate; for streams without text classes
   ``encode_stream`` runs "cms2", no extra coder run; the context
   mixers model the values' context themselves, and with them merges never gave a smaller
   container on the benchmark data), and, with at least ``dense_cm_alphabet`` distinct
   values and holes in their range, the dense ids over the range offered to the same coders
   (:func:`~ubpe.planner.candidates.dense_cm_candidate`: no list of distinct values stored); from
   ``cm_sample_above`` to ``full_fit`` values these candidates are sized on
   ``cm_sample`` of them. With
   ``n_tokens``, one candidate per chain: the model of exactly that size. With a given model,
   one candidate.
4. The smallest candidate wins (ties: the earlier one, chains in the order given, level 1's
   candidate first), so no candidate is ruled out without being measured, and the automatic
   choice is never larger than any forced chain, from ``short_lean_upto`` to ``lean_above`` values at
   level 2 (up to ``short_lean_upto`` values level 2 runs the lean search widened,
   :func:`~ubpe.planner.lean.short_settings`, and always plans level 1, ``level1_always_upto``) (level
   1's, step 1c, decides by estimates: within a few bytes of its best forced chain on the
   benchmark inputs). The lean search rules out unmeasured what its estimates rate out of reach
   (a chain, static candidates off the context mixer's best chain or more than
   ``lean_static_within`` above its exact size, merges), so an estimate off
   by more than its margins may cost bytes. Context-mixing candidates sized on a sample: the
   best of them is built on all the values and compared exactly with the best candidate built
   on all the values. Beyond ``full_fit``, the winner on the sample is rebuilt on all the
   values.
5. The candidate kept, if it has merges, is re-encoded by each method of ``encode_methods``
   (:func:`choose_method`, called once by the format after :func:`plan`) and the smallest
   container kept, ties to replay.
6. Level 2 is never larger than level 1 where it plans level 1 too: the format plans level 1 (its
   chains, :func:`~ubpe.planner.fast.level1_chains`, and the same steps) and keeps level 1's
   container when it is smaller (equal candidates are coded once, the format's costing memo),
   so for every input a single stream covers. After the lean search it does so only when the
   search's estimate of level 1's container (:func:`~ubpe.planner.lean.level1_estimate`: the
   static estimates of level 1's chains, or 0 where level 1 may train merges) is at most
   ``level1_within`` times level 2's (``level1_within = inf``: always, by construction). A blocked container's model is planned once on a
   sample: there level 2's plan is never larger than level 1's on the sample, and the blocks
   follow the plan.
"""

from __future__ import annotations

import numpy as np

from ..frontend import Stage
from ..frontend.lpc import analysis_cache
from ..frontend.mult import detection_cache
from .candidates import Candidate, Cost, CostFunction
from .chains import auto_chains, has_grid, has_low_digits
from .replay import ReplayEncoder, best_prefix, choose_method, encode_with, methods_to_try
from .fast import applies as _fast_applies, fast_plan, level1_chains, with_settings
from .lean import lean_plan, short_settings
from .search import exhaustive_plan
from .settings import DEFAULT, Settings, configured, current

__all__ = [
    "Candidate", "Cost", "CostFunction", "ReplayEncoder", "Settings", "DEFAULT", "auto_chains", "best_prefix",
    "choose_method", "configured", "current", "encode_with", "has_grid", "has_low_digits", "level1_chains",
    "methods_to_try", "plan",
]


def plan(x: np.ndarray, chains: list[list[Stage]], level: int, cost: CostFunction,
         proposer: ReplayEncoder, s: Settings, threads: int = 1, lean: bool = True) -> Candidate:
    """The smallest candidate for ``x`` (``(channels, frames)``, native integers): see the
    package docstring. ``cost`` is the format's exact costing function; ``proposer`` the encoder
    that proposes candidates (anything with ``propose`` and ``rebuild`` as ReplayEncoder's).
    The candidate returned was built on all the values and costed with ``cost``. ``threads``
    measure chains side by side; the result does not depend on it. ``lean=False`` keeps the
    exhaustive search at level 2 whatever the size: for a plan made once on a sample of a much
    longer input (the blocked form), whose cost is a small share of coding the whole. The
    chains share their LPC analyses during the search (:func:`ubpe.frontend.lpc.analysis_cache`)
    and the "mult" stage's detections (:func:`ubpe.frontend.mult.detection_cache`), dropped when
    it ends: nothing outlives the call. ``s``: the settings (:mod:`ubpe.planner.settings`; the
    "lpc" stages of ``chains`` refit under its tuning, :func:`~ubpe.planner.fast.with_settings`)."""
    with detection_cache():
        return _plan(x, chains, level, cost, proposer, s, threads, lean)


def _plan(x: np.ndarray, chains: list[list[Stage]], level: int, cost: CostFunction,
          proposer: ReplayEncoder, s: Settings, threads: int, lean: bool) -> Candidate:
    """:func:`plan` within its scope of "mult" detections."""
    fast = level == 1 and _fast_applies(x, proposer, s)
    if fast and not s.fast_lpc_cache:  # (level 1's plan analyses each channel once: nothing to keep)
        # (not refitted under s by with_settings first: fast_plan runs each chain as fast_stages
        # makes it, its "lpc" stages built from their window, blocks and reweight under s's tuning;
        # an "lpc" stage made again was about 20 us a chain, a short file's 0.6 %)
        return fast_plan(x, chains, cost, proposer, s)
    chains = [with_settings(chain, s) for chain in chains]
    with analysis_cache():
        if fast:
            return fast_plan(x, chains, cost, proposer, s)
        if getattr(proposer, "n_tokens", None) is not None:
            threads = 1  # fitting a Tokenizer of n_tokens silences warnings: global state, one thread
        elif (lean and level == 2 and s.lean_above < x.size <= s.lean_upto and x.dtype.itemsize > 1
              and len(chains) > 1 and type(proposer) is ReplayEncoder):
            return lean_plan(x, chains, cost, s, threads)  # (bytes and text: the exhaustive search)
        elif (lean and level == 2 and 0 < x.size <= min(s.short_lean_upto, s.lean_above)
              and x.dtype.itemsize > 1 and len(chains) > 1 and type(proposer) is ReplayEncoder):
            return lean_plan(x, chains, cost, short_settings(s), threads)  # (the writer plans level 1 too)
        return exhaustive_plan(x, chains, level, cost, proposer, s, threads)
