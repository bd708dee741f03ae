"""The writer's choices: which front-end chain, vocabulary and coder give the smallest container.

Nothing here is part of the format: a reader never needs this module, and any choice it makes
decodes the same way. The format side (:mod:`ubpe.container`) hands the planner a costing
function that returns the exact packed size the format gives a candidate; the planner knows
no field names.

The procedure (also in ``docs/format.md``, "Writer choices")
------------------------------------------------------------
A *candidate* is (front-end chain) x (model: alphabet and merges) x (token stream) x (coders
offered to the entropy stage). It carries its own token stream, so any encoder can propose
candidates: replay (:class:`ReplayEncoder`, the only one today) proposes prefixes of one
training run; an optimal-parse encoder would propose its own streams, with no change to the
search.

1. Chains: the forced one (``delta=k`` or ``predictor=name``, :data:`PREDICTORS`), or every
   chain of :func:`auto_chains`. Beyond :data:`SCREEN_ABOVE` values each of them is first screened
   by the exact level-1 container size of its bare alphabet (no training) on all the values
   when they fit in :data:`SCREEN_SAMPLE`, else on a sample (:data:`SCREEN_SAMPLE` values in
   :data:`SCREEN_WINDOWS` windows, each put through the chain on its own: 4096 frames of one
   channel, long enough for the predictors to learn), and the :data:`SCREEN_KEEP` smallest (and
   any within :data:`SCREEN_CLOSE` of the last of them) go on to step 2 (at level 2, also the
   first chain, no front end, when its screened size is within :data:`SCREEN_FIRST_WITHIN` of
   the smallest, and the :data:`SCREEN_KEEP` smallest fast-decoding ones, which are level 1's: those that
   are not among the others get level 1's candidates only, no "cm" run). Level 1
   measures only chains whose stages all decode fast (no adaptive prediction). The costing
   function may code equal candidates once (the screen's bare alphabet on all the values is
   the chain's own bare candidate): the format's does, within one ``compress`` call.
1b. Level 2, automatic choice, from :data:`LEAN_ABOVE` to :data:`FULL_FIT` values wider than
   a byte (bytes and text keep the exhaustive search: merges and the text coders; so does the
   plan of the blocked form, made once on a sample of a longer input): the lean
   search (:func:`_lean_plan`) replaces steps 1 to 4, so that level 2 costs about one full
   context-mixing run plus a few static costings. Every chain is put through the screen's
   sample (all the values when they fit; chains that share leading stages share their
   forward pass, :func:`_forward_shared`) and ranked by a rough size, the order-0 entropy of
   its output plus :data:`LEAN_TABLE_BITS` a distinct value (:func:`_order0_bytes`) plus its
   stages' params; those within :data:`LEAN_PRUNE` of the smallest (:data:`LEAN_PRUNE_LARGE`
   from :data:`LEAN_CM_LARGE` values; the first chain, no front end, within
   :data:`LEAN_PRUNE_FIRST` when it has at most :data:`LEAN_RAW_DISTINCT` distinct values a
   value, or always up to :data:`LEAN_SMALL` values) get an *estimate* of
   step 1's level-1 proxy, no coder run (:func:`_static_estimate`: order-0 entropy and a count
   table of the bare ids, the "mag" coder's model bits from its own statistics pass at
   :data:`ESTIMATE_RATES`, on the bare and on the dense ids, the alphabet's gaps, the stages'
   params; mostly within 0.3 % below to 4.3 % above the exact proxy on predicted values, up to
   about a third over on raw ones). The finalists are the :data:`LEAN_KEEP` smallest estimates (:data:`LEAN_KEEP_LARGE`
   from LEAN_CM_LARGE values), those within :data:`LEAN_CLOSE` of the last of them and the
   first chain when within :data:`SCREEN_FIRST_WITHIN` of the smallest (its estimate within
   :data:`LEAN_FIRST_CHECK`: its exact proxy decides; beyond LEAN_SMALL values only when it has
   at most :data:`LEAN_RAW_DISTINCT` distinct values a value; always up to LEAN_SMALL values, with
   every chain within :data:`LEAN_SMALL_CLOSE` of the smallest). Each finalist offers the
   context mixers one id layout: dense ids when the values have at least
   :data:`DENSE_CM_ALPHABET` distinct values with holes in their range, unless the bare ids'
   estimate times :data:`LEAN_DENSE_BIAS` is at most the dense ids' (dense ids when no static
   dense candidate exists), sized on :data:`LEAN_CM_SAMPLE` values (:data:`LEAN_CM_WINDOWS`
   windows; :data:`LEAN_CM_SAMPLE_LARGE` from :data:`LEAN_CM_LARGE` values) when k
   finalists' samples and one full run cost fewer values than k full runs, else on all of
   them; the best estimate is built on all the values. Static candidates, built on all the values, only
   where they may win against the best context-mixing container (exact): that container's
   chain's bare candidates when its estimate is within :data:`LEAN_STATIC_WITHIN` of that
   size; level 1's (probe, merges, variants: step 3) on the fast chain ranked first only when
   its estimate is at least :data:`LEAN_LEVEL1_GAIN` times it. Of the bare and dense ids, one whose
   estimate is more than :data:`LEAN_LAYOUT_CLEAR` times the other's is not built
   (candidates with merges always are), and a static candidate is not offered the coder
   ("rans" or "mag") whose estimate is :data:`LEAN_CODER_CLEAR` times the other's. The
   smallest exact candidate wins (ties: the earlier chain, static first).
2. Values: each chain is applied per channel (``(channels, frames)``) and the output taken
   channel-major. Up to :data:`FULL_FIT` values every candidate is built on all the values and
   sized exactly; beyond, on a sample of :data:`SAMPLE` values (:data:`WINDOWS` evenly spaced
   windows), sized as (stream bytes) x (values / sample values) + (everything else); the
   format counts with the stream's bytes those that a stage codes in its params and that grow
   with the values (the digits of a ``mult`` stage), here and in the screen of step 1.
3. Candidates per chain, from one training run of up to ``min(65536, n // 8)`` merges, run
   only when a probe (:func:`_probe`: a run on :data:`PROBE_SAMPLE` of the values, its
   histogram scaled to all of them, :func:`best_prefix` on a coarse ladder) keeps a merge;
   otherwise from the bare alphabet alone:
   level 1, the prefix :func:`best_prefix` keeps, offered to the static coders; level 2, the
   same one, and the bare alphabet offered to the level-2 coders that level 1 lacks (the static
   ones measured it already, as level 1's bare candidate; for streams without text classes
   ``encode_stream`` runs "cms2" in place of "cm", no extra coder run; the context
   mixers model the values' context themselves, and with them merges never gave a smaller
   container on the benchmark data), and, with at least :data:`DENSE_CM_ALPHABET` distinct
   values and holes in their range, the dense ids over the range offered to the same coders
   (:func:`_dense_cm_candidate`: no list of distinct values stored); from
   :data:`CM_SAMPLE_ABOVE` to :data:`FULL_FIT` values these candidates are sized on
   :data:`CM_SAMPLE` of them. With
   ``n_tokens``, one candidate per chain: the model of exactly that size. With a given model,
   one candidate.
4. The smallest candidate wins (ties: the earlier one, chains in the order given, level 1's
   candidate first), so no candidate is ruled out without being measured, the automatic
   choice is never larger than any forced chain (up to :data:`SCREEN_ABOVE` values at level
   1, up to :data:`LEAN_ABOVE` at level 2), and level 2 (a superset of level 1's candidates
   on the same screened chains, the level-1 one computed once) is never larger than level 1,
   up to :data:`LEAN_ABOVE` values. Beyond, the lean search (step 1b) builds level 1's
   candidates only where its estimates call for them, so level 2 may be larger than level 1
   where those estimates are off (on the benchmark signals and the unseen recordings: never).
   The lean search rules out unmeasured what its estimates rate out of reach (a chain, static
   candidates more than LEAN_STATIC_WITHIN above the context mixer's exact size or off its
   chain, merges, an id layout more than LEAN_LAYOUT_CLEAR above the other), so an estimate
   off by more than those margins may cost bytes: against the exact-screened lean search it
   made before, the same containers on the unseen recordings and the bench sets but one audio
   file (+12 B); against the lean search that built level 1's candidates always and static
   candidates within 5 % (15 % of a sample's estimate) on every finalist, the same but one
   unseen recording (alsa-Front_Center, +25 B, +0.06 %). Context-mixing
   candidates sized on a sample are built on all the values only if they may win: those
   within :data:`CLOSE` of the best of them, compared exactly with the best candidate built
   on all the values. Beyond FULL_FIT, the winner on the sample is rebuilt on
   all the values, and so is the best candidate of the other coder family when within
   :data:`CLOSE` of it; the smallest of the rebuilt containers is kept.
5. The candidate kept, if it has merges, is re-encoded by each method of :data:`ENCODE_METHODS`
   (:func:`choose_method`, called once by the format after :func:`plan`) and the smallest
   container kept, ties to replay.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field, replace
from typing import Any, Callable

import msgpack
import numpy as np

from . import encoder, entropy, frontend, predict, trainer
from . import stages as _stages  # noqa: F401  (registers the prediction stages lpc, adaptive, rank)
from ._kernels import residual as _residual
from .alphabet import Alphabet
from .tokenizer import Tokenizer

_BITLEN = _residual.bitlen_table()

__all__ = [
    "Candidate", "Cost", "ReplayEncoder", "plan", "build_chain", "auto_chains", "is_fast", "has_grid",
    "GRID_CHAINS", "DECORRELATE_CHAINS", "MULT_CHAINS", "has_low_digits", "best_prefix", "AUTO_CHAINS",
    "PREDICTORS", "RANK_SPARSITY", "SCREEN_ABOVE", "SCREEN_SAMPLE", "SCREEN_KEEP", "SCREEN_WINDOWS", "SCREEN_CLOSE",
    "SCREEN_FIRST_WITHIN", "LEVEL_CODERS",
    "FULL_FIT", "SAMPLE", "WINDOWS", "CM_SAMPLE_ABOVE", "CM_SAMPLE", "CM_WINDOWS", "PREFIX_LADDERS", "CLOSE",
    "AUTO_MAX_MERGES", "AUTO_VALUES_PER_MERGE",
]

#: Front-end chains by name: ``compress(predictor=name)`` forces one (``"auto"``: the automatic choice).
PREDICTORS: dict[str, tuple[tuple[str, dict], ...]] = {
    "none": (),
    "delta1": (("delta", {"order": 1}),),
    "delta2": (("delta", {"order": 2}),),
    "lpc": (("lpc", {}),),
    "lpc+adaptive": (("lpc", {}), ("adaptive", {})),
    "delta1+adaptive": (("delta", {"order": 1}), ("adaptive", {})),
    "rank+delta1": (("rank", {}), ("delta", {"order": 1})),
}
# values on a grid offset + step * k as k, then predicted (offered when a channel has a step > 1)
GRID_CHAINS = ("grid+delta1", "grid+lpc", "grid+lpc+adaptive")
# channels predicted from channels, then in time (offered for two or more channels)
DECORRELATE_CHAINS = ("decorrelate+delta1", "decorrelate+lpc", "decorrelate+lpc+adaptive")
# codes split into quotient and skewed low digits, the quotient predicted (offered when
# :func:`ubpe.predict.mult_detect` proposes a split for some channel: :func:`has_low_digits`)
MULT_CHAINS = ("mult+delta1", "mult+lpc", "mult+lpc+adaptive")
for _name in GRID_CHAINS + DECORRELATE_CHAINS + MULT_CHAINS:
    _first, _rest = _name.split("+", 1)
    if _first in frontend.STAGES:  # registered by ubpe.stages
        PREDICTORS[_name] = ((_first, {}),) + PREDICTORS[_rest]
#: Chains the automatic choice measures on every integer input (:func:`auto_chains` adds
#: ``rank+delta1`` when the values are few relative to their span).
AUTO_CHAINS: tuple[tuple[tuple[str, dict], ...], ...] = tuple(
    PREDICTORS[k] for k in ("none", "delta1", "delta2", "lpc", "lpc+adaptive", "delta1+adaptive")
)
#: ``rank+delta1`` is tried when distinct values x RANK_SPARSITY <= max - min + 1.
RANK_SPARSITY = 4
#: Beyond SCREEN_ABOVE values, every chain is screened at level 1 on SCREEN_SAMPLE values
#: (SCREEN_WINDOWS windows of the input, each put through the chain on its own; all the values when
#: they fit), and only the SCREEN_KEEP smallest go through the full procedure. (SCREEN_ABOVE
#: was 2**14: from 2**13 the screen costs less than the full procedure on the chains it drops,
#: bytes unchanged on every bench set and unseen recording. Not lower: on the first 6 000
#: values of ``io.demo_signal()`` a screen ranks "delta1" out, whose "cms2" container, 3 512
#: bytes, is the smallest; screened, auto gave 3 556.)
SCREEN_ABOVE = 1 << 13
SCREEN_SAMPLE = 1 << 14
SCREEN_KEEP = 2
#: Level 2 keeps the first chain (no front end) beyond the screen only when its screened size is
#: within this factor of the smallest: on the neural recordings, where "cm" on the raw values
#: wins, it is within 1.24; on ECG, seismic and audio, where it never wins, 1.4 to 1.9.
SCREEN_FIRST_WITHIN = 1.3
#: Evenly spaced windows of the screening sample: SCREEN_SAMPLE / SCREEN_WINDOWS = 4096 frames
#: each for one channel, one LPC block (``lpc_forward``'s) and about the adaptation time of the
#: adaptive cascade's slow stage. The predictors restart in every window, so shorter windows
#: (WINDOWS = 16 of 1024 frames) charged the learning predictors a warm-up per window and
#: ranked them below chains that learn nothing (bvp-plux: "lpc+adaptive" 1.6 % smaller than
#: "lpc" on all the values, screened out behind "delta2"; seis-ayt-bhz likewise).
SCREEN_WINDOWS = 4
#: The screen ranks chains by a level-1 proxy (bare alphabet, static coders, a sample); chains
#: within SCREEN_CLOSE of the last one kept go on too: the proxy's error is about that large
#: against level 2's context mixing (shared/data seismic: "delta1+adaptive" 2.4 % behind
#: "lpc+adaptive" on the screen, 0.4 % ahead of it in full; a 24 000-value tonal signal: 0.06 %
#: behind, 0.5 % ahead).
SCREEN_CLOSE = 1.03
#: Level-1 id layouts proposed besides the static prefix (see ``ReplayEncoder.propose``).
LEVEL1_VARIANTS = ("bare", "dense")
#: Coders offered at each level (``entropy.encode_stream``'s ``coders``).
LEVEL_CODERS = {1: entropy.DEFAULT_CODERS, 2: entropy.LEVEL2_CODERS}
#: Static coders not offered again to level 2's bare-alphabet candidate: the same tokens are
#: level 1's bare candidate (its own or its "bare" variant), already measured with them.
MEASURED_AT_LEVEL_1 = ("rans", "mag")
#: Up to this many values every candidate is built and sized on all of them.
FULL_FIT = 1 << 19
#: Beyond FULL_FIT: candidates are sized on this many values, in WINDOWS evenly spaced windows.
SAMPLE = 1 << 18
WINDOWS = 16
#: Automatic model size: at most this many merges, and at most one per AUTO_VALUES_PER_MERGE values.
AUTO_MAX_MERGES = 1 << 16
AUTO_VALUES_PER_MERGE = 8
#: best_prefix: ratios of the successive geometric ladders of prefix sizes, coarse to fine
#: (each searches the bracket around the best of the one before).
PREFIX_LADDERS = (2 ** 0.5, 2 ** (1 / 8), 2 ** (1 / 32))
#: Level 2, from CM_SAMPLE_ABOVE to FULL_FIT values of a chain's output: its context-mixing
#: candidate is sized on CM_SAMPLE of them (CM_WINDOWS windows), and built on all the values
#: only if it may win (a context-mixing encode on all of them per chain cost most of level 2's
#: time).
CM_SAMPLE_ABOVE = 1 << 16
CM_SAMPLE = 1 << 15
CM_WINDOWS = 4
#: Level 2 from LEAN_ABOVE to FULL_FIT values of an automatic choice: the lean search of
#: :func:`_lean_plan` (finalists by a cheap proxy, context mixing sized on a sample, about one
#: full context-mixing run). (Not lower: on 260 to 1 020 values the lean search was about twice
#: as fast as the exhaustive one, 0.07 % larger in all on 90 slices of 20 signals, but it may be
#: larger than level 1, which the exhaustive search never is: the periodic example of
#: docs/format.md, 53 B against 51, merges on a chain it does not rank first; with every ranked
#: fast chain's level-1 candidates built too, still 2 of the 90, by 2 and 14 B.)
LEAN_ABOVE = 1 << 10
LEAN_KEEP = 1
#: The lean search first ranks chains by :func:`_order0_bytes` on the screen's sample and
#: screens exactly only those within LEAN_PRUNE of the smallest (the first chain, no front end,
#: within LEAN_PRUNE_FIRST: the context mixers model raw values' context, order 0 does not;
#: beyond LEAN_SMALL values only where that context is learnable, :func:`_raw_learnable`).
LEAN_PRUNE = 1.2
LEAN_PRUNE_FIRST = 2.0
#: Up to LEAN_SMALL values the first chain (no front end) is always a context-mixing finalist:
#: on short smooth signals "cms2" learns the raw values' context fastest (the first 2 000
#: values of the bundled ECG excerpt: 1 357 bytes with no front end, 1 372 with "delta1", whose
#: level-1 proxies are 2 096 and 1 421).
LEAN_SMALL = 1 << 11
#: Up to LEAN_SMALL values every chain whose level-1 proxy is within LEAN_SMALL_CLOSE of the
#: smallest is a finalist too: the context mixer's gain over the static coders differs by
#: chain by up to about 10 % on short inputs (2 000 values of the bundled ECG excerpt on a grid
#: of step 12: "grid+delta1" 8 % behind "grid+lpc" at level 1, 1.7 % ahead with "cms2").
LEAN_SMALL_CLOSE = 1.15
LEAN_TABLE_BITS = 12
#: Below LEAN_CM_LARGE values, context-mixing finalists are sized on LEAN_CM_SAMPLE values in
#: LEAN_CM_WINDOWS windows. (2**12 before: 2**11 gave the same containers on the bench sets and
#: the unseen recordings; 2**10 picked "delta1+adaptive" for one audio file, 1.4 % larger.)
LEAN_CM_SAMPLE = 1 << 11
LEAN_CM_WINDOWS = 4
#: Of the context-mixing candidates sized on a sample, only the best estimate is built on all
#: the values; from LEAN_CM_LARGE values they are sized on LEAN_CM_SAMPLE_LARGE values. (The
#: 2**12-value samples once needed a 1 % margin, the candidates within it built too: 4 neural
#: recordings, 0.26 % larger without it; those take 2**13-value samples now, and below
#: LEAN_CM_LARGE values the margin changed no container of the bench sets and the unseen
#: recordings, for a second full run on a third of the audio files sized on samples.)
LEAN_CM_LARGE = 1 << 15
LEAN_CM_SAMPLE_LARGE = 1 << 13
#: From LEAN_CM_LARGE values, where a context-mixing sample costs a fraction of the values,
#: the lean search keeps the LEAN_KEEP_LARGE smallest chains of the screen and screens those
#: within LEAN_PRUNE_LARGE of the smallest rough size: "cms2"'s gain differs by chain (the
#: 2**18-value plan sample of respiration-systole, 1.5 M values: "delta2" has a rough size 1.25
#: times "lpc"'s and a level-1 container 14 % smaller; with "cms2" 32 229 B against 38 570).
LEAN_KEEP_LARGE = 2
LEAN_PRUNE_LARGE = 1.5
#: The lean search builds static candidates (bare and dense ids) only on the chain of the best
#: context-mixing container (exact, built on all the values), and only when that chain's static
#: estimate is within LEAN_STATIC_WITHIN of its size: the static coders won by at most 0.3 %
#: where they won, always on that chain (8 of 66 bench signals and unseen recordings,
#: estimates 0.98 to 1.03 times the size, and one at 1.15: alsa-Front_Center, now 25 B larger).
LEAN_STATIC_WITHIN = 1.03
#: The lean search builds level 1's candidates (probe, merges, variants) on the fast chain it
#: ranks first only where that chain's static estimate is at least LEAN_LEVEL1_GAIN times the
#: best context-mixing size: where the context mixer gains that much over order-0 statistics,
#: the values have context that merges capture too (spo2-plux: merges 22 % below the bare ids,
#: 3 % above "cms2"). Merges won at level 2 on none of the 66 bench signals and unseen
#: recordings (and level 1's candidates, which the lean search built always before, on none).
LEAN_LEVEL1_GAIN = 1.2
#: The lean search's context-mixing finalists: the LEAN_KEEP smallest estimates and those within
#: LEAN_CLOSE of the last of them. (SCREEN_CLOSE's 3 % ran "cms2" on two or more chains for 15
#: of the 31 audio files searched lean; at 1 % the containers of the bench sets and of the
#: unseen recordings are the same.)
LEAN_CLOSE = 1.01
#: The first chain (raw values) is a finalist within SCREEN_FIRST_WITHIN of the smallest; its
#: estimate overrates raw values by up to a third (seis-mola-acc 1.35, seis-ale-vhz 1.29;
#: neural0 1.05, where it wins), so within LEAN_FIRST_CHECK its exact level-1 proxy decides.
LEAN_FIRST_CHECK = 1.5
#: Beyond LEAN_SMALL values the first chain is a context-mixing finalist on those two rules
#: (SCREEN_FIRST_WITHIN, LEAN_FIRST_CHECK) only when its values have at most
#: LEAN_RAW_DISTINCT distinct values a value (:func:`_raw_learnable`). "cms2" beats prediction
#: on raw values by learning which value follows which (its order-1 and order-2 contexts): a
#: context seen fewer than ~20 times on average teaches it little. Where raw values won (the
#: neural recordings, on a coarse inexact grid) they had 0.001 to 0.003 distinct values a value;
#: the audio files, ECG and EEG the rule drops, 0.09 to 0.72, and lost by 0.4 to 11 % where built.
LEAN_RAW_DISTINCT = 0.05
#: Of a chain's bare and dense ids (static coders), one whose estimate is more than
#: LEAN_LAYOUT_CLEAR times the other's is not costed (ecg-plux-1k: dropping the one 1-3 %
#: behind lost 0.17 %).
LEAN_LAYOUT_CLEAR = 1.03
#: The context mixer gets the dense ids unless the bare ids' estimate times LEAN_DENSE_BIAS is
#: at most theirs: "cms2" gains more from dense ids than the static coders (audio2: static
#: sizes 0.8 % apart, "cms2" 6 % smaller on dense ids). Bias 1.0: audio +0.25 %; 1.01:
#: +0.07 %; 1.02: +0.004 %, against the exact static sizes' choice.
LEAN_DENSE_BIAS = 1.02
#: Beyond FULL_FIT: the best candidate of the other coder family is also rebuilt on all the
#: values when its estimate is within this factor of the winner's.
CLOSE = 1.05
#: A chain's merges are trained on all its values only when a training run on PROBE_SAMPLE
#: of them keeps some (:func:`_probe`).
PROBE_SAMPLE = 1 << 14
PROBE_LADDERS = (4.0,)  #: best_prefix's ladder for the probe: does any prefix beat none?


@dataclass(frozen=True)
class Cost:
    """What the format says a candidate costs: ``size`` bytes in all, of which ``scalable``
    grow with the number of values (the token stream, and a ``mult`` stage's digits)."""

    size: int
    scalable: int


@dataclass
class Candidate:
    """One way to write the values: chain, model, token stream and the coders offered.

    ``family`` groups candidates for the final rebuild ("static" or "cm"); ``rebuild()`` gives
    the same candidate built on all the values (None when it was built on all of them), and
    ``scale`` is (values it stands for) / (values it was built on), by which its token stream's
    size is extrapolated. ``packed`` is the format's cache of the fields it built.
    """

    chain: list[dict[str, Any]]
    alphabet: Alphabet
    merges: np.ndarray
    tokens: np.ndarray
    coders: tuple[str, ...]
    family: str = "static"
    rebuild: Callable[[], Candidate] | None = None
    packed: Any = field(default=None, repr=False)
    estimate: float = 0.0
    scale: float = 1.0
    variant: str = ""  #: "" (the static prefix, or the bare alphabet for "cm"), "bare" or "dense" ids
    method: str = "replay"  #: how ``tokens`` encode the values (:func:`choose_method`)


CostFunction = Callable[[Candidate], Cost]


# ============================================================================ replay encoder


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

    def rans_prefix(self) -> int:
        """The prefix :func:`best_prefix` keeps for the static coder."""
        if len(self.merges) == 0:
            return 0
        return best_prefix(np.bincount(self.stream, minlength=self.a + len(self.merges)), self.merges, self.a,
                           cache=self.costs)


def _auto_max_merges(n: int, a: int) -> int:
    """The merges the automatic model size trains at most: min(65536, n // 8), within the vocabulary cap."""
    return max(min(AUTO_MAX_MERGES, n // AUTO_VALUES_PER_MERGE, entropy.MAX_VOCAB - a), 0)


def _train(a: int, ids: np.ndarray, max_merges: int, fit_options: dict) -> _Training:
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

    ``propose(chain, y, level, cost, sampled)`` returns candidates for the values ``y`` (1-D,
    the chain's output taken channel-major; a sample of it when ``sampled``; ``cost`` is there
    for encoders that search among their proposals, replay needs none); none when a fixed
    ``n_tokens`` is smaller than the alphabet of ``y``. ``rebuild(candidate, y, level)`` applies
    a candidate's recipe to all the values.
    """

    def __init__(self, n_tokens: int | None, fit_options: dict) -> None:
        self.n_tokens = n_tokens
        self.fit_options = fit_options

    def propose(self, chain: list[dict], y: np.ndarray, level: int, cost: CostFunction,
                sampled: bool) -> list[Candidate]:
        alphabet = Alphabet.from_data(y)
        a = len(alphabet)
        ids = alphabet.to_ids(y) if y.shape[0] else np.zeros(0, np.int32)
        coders = LEVEL_CODERS[level]
        if self.n_tokens is not None:
            if a > self.n_tokens:
                return []
            with warnings.catch_warnings():
                if sampled:  # a sample may not hold n_tokens tokens' worth of pairs
                    warnings.simplefilter("ignore", UserWarning)
                tok = Tokenizer(alphabet, self.n_tokens, **self.fit_options).fit(y)
            merges = tok.merges
            tokens = tok.model.encode(ids) if len(merges) else ids
            return [Candidate(chain, alphabet, merges, tokens, coders)]
        run, pays = _probe(y, a, ids, self.fit_options)
        if pays and run is None:
            run = _train(a, ids, _auto_max_merges(y.shape[0], a), self.fit_options)
        bare = _Training(a, np.zeros((0, 2), np.int32), ids)
        fit = run if pays else bare  # no training on all the values when a sample says no merge pays
        j = fit.rans_prefix()
        out = [Candidate(chain, alphabet, fit.prefix(j), fit.tokens(j), LEVEL_CODERS[1], "static")]
        # for the "mag" coder: bare ids (merges blur magnitude classes), and dense ids
        if j > 0 and "bare" in LEVEL1_VARIANTS:
            out.append(Candidate(chain, alphabet, fit.prefix(0), ids, LEVEL_CODERS[1], "static", variant="bare"))
        dense = _dense_candidate(chain, y, a) if "dense" in LEVEL1_VARIANTS else None
        if dense is not None:
            out.append(dense)
        if level == 1:
            return out
        # level 2: the bare alphabet with the level-2 coders (context mixing, "cms2" for signals,
        # the text coders for bytes), which model the values' context themselves: with them,
        # merges never made a smaller container on the benchmark data (benchmarks/README.md)
        coders = tuple(c for c in LEVEL_CODERS[2] if c not in MEASURED_AT_LEVEL_1)  # context mixers, "packed", "const"
        if sampled or y.shape[0] <= CM_SAMPLE_ABOVE:
            dense = _dense_cm_candidate(chain, y, a, coders)
            return out + [Candidate(chain, alphabet, bare.prefix(0), ids, coders, "cm")] + ([dense] if dense else [])
        # sized on a sample (CM_WINDOWS windows), built on all the values only if it may win (see plan)
        ys = y[_windows(y.shape[0], CM_SAMPLE, CM_WINDOWS)]
        alphabet_s = Alphabet.from_data(ys)
        c = Candidate(chain, alphabet_s, bare.prefix(0), alphabet_s.to_ids(ys), coders, "cm",
                      scale=y.shape[0] / ys.shape[0])
        c.rebuild = lambda: Candidate(chain, alphabet, bare.prefix(0), ids, coders, "cm")
        out.append(c)
        dense = _dense_cm_candidate(chain, ys, len(alphabet_s), coders)
        if dense is not None:
            dense.scale = c.scale
            dense.rebuild = lambda: (_dense_cm_candidate(chain, y, a, coders, always=True)
                                     or Candidate(chain, alphabet, bare.prefix(0), ids, coders, "cm"))
            out.append(dense)
        return out

    def rebuild(self, cand: Candidate, y: np.ndarray, level: int) -> Candidate:
        """``cand``'s recipe applied to all the values ``y`` (its chain's output)."""
        if self.n_tokens is not None:
            full = self.propose(cand.chain, y, level, _no_cost, sampled=False)
            if not full:  # the sample held fewer distinct values than all the values
                raise ValueError(f"n_tokens={self.n_tokens} is smaller than the alphabet of the values "
                                 "under the chosen front end; pass a larger n_tokens")
            return full[0]
        if cand.family == "static":
            full = self.propose(cand.chain, y, 1, _no_cost, sampled=False)
            return next((c for c in full if c.variant == cand.variant), full[0])
        alphabet = Alphabet.from_data(y)
        dense = _dense_cm_candidate(cand.chain, y, len(alphabet), cand.coders, always=True) \
            if cand.variant == "dense" else None
        if dense is not None:
            return dense
        return Candidate(cand.chain, alphabet, np.zeros((0, 2), np.int32), alphabet.to_ids(y), LEVEL_CODERS[2], "cm")


def _probe(y: np.ndarray, a: int, ids: np.ndarray, fit_options: dict) -> tuple[_Training | None, bool]:
    """Whether merges may make the values ``y`` (1-D, alphabet of ``a`` ids ``ids``) smaller
    under the static coders, answered on a training run over at most :data:`PROBE_SAMPLE` of
    them (:data:`WINDOWS` windows beyond): does :func:`best_prefix` on its coarse ladder
    (:data:`PROBE_LADDERS`), the histogram scaled to all the values (the stream grows with
    them, the merge table does not), keep any merge? Returns (the run when it covered all the
    values, else None; the answer)."""
    n = y.shape[0]
    if n <= PROBE_SAMPLE:
        fit = _train(a, ids, _auto_max_merges(n, a), fit_options)
        hist = np.bincount(fit.stream, minlength=a + len(fit.merges))
        return fit, len(fit.merges) > 0 and best_prefix(hist, fit.merges, a, PROBE_LADDERS, cache=fit.costs,
                                                        bound=True) > 0
    ys = y[_windows(n, PROBE_SAMPLE)]
    alphabet = Alphabet.from_data(ys)
    a_s = len(alphabet)
    fit = _train(a_s, alphabet.to_ids(ys), _auto_max_merges(ys.shape[0], a_s), fit_options)
    if len(fit.merges) == 0:
        return None, False
    hist = np.bincount(fit.stream, minlength=a_s + len(fit.merges)).astype(np.int64) * (n // ys.shape[0])
    return None, best_prefix(hist, fit.merges, a_s, PROBE_LADDERS, bound=True) > 0


def _no_cost(cand: Candidate) -> Cost:  # level 1 proposals never consult the cost
    raise AssertionError("unreachable")


# ============================================================================ the search


def _sample_take(n: int) -> np.ndarray:
    """Indices of WINDOWS evenly spaced windows of SAMPLE values in all."""
    return _windows(n, SAMPLE)


def _windows(n: int, total: int, count: int = WINDOWS) -> np.ndarray:
    """Indices of ``count`` evenly spaced windows of ``total`` values in all (``total < n``)."""
    length = total // count
    starts = (np.arange(count, dtype=np.int64) * (n - length)) // max(count - 1, 1)
    return (starts[:, None] + np.arange(length, dtype=np.int64)[None, :]).reshape(-1)


def build_chain(spec: tuple[tuple[str, dict], ...]) -> list[frontend.Stage]:
    """The stages of ``spec`` (name, writer options). An ``lpc`` stage that ends the chain (its
    residual goes to the coders) is built with ``reweight=True`` unless told: its predictors
    are refitted where the residual's loudness moves (:func:`ubpe.predict.lpc_reweight`); one
    followed by another stage ("lpc+adaptive") keeps the plain fit, on which the adaptive
    cascade does better (shared/data ecg: 56 344 B plain, 56 475 B reweighted). The rule holds
    wherever a chain is built (forced, automatic, a blocked container's blocks)."""
    stages = []
    for i, (name, opts) in enumerate(spec):
        if name == "lpc" and i == len(spec) - 1 and "reweight" not in opts:
            opts = {**opts, "reweight": True}
        stages.append(frontend.stage(name, **opts))
    return stages


def is_fast(spec: tuple[tuple[str, dict], ...]) -> bool:
    """Whether every stage of the chain ``spec`` inverts at memory speed (``Stage.fast_inverse``)."""
    return all(frontend.STAGES[name].fast_inverse for name, _ in spec)


def auto_chains(x: np.ndarray, level: int = 2) -> list[tuple[tuple[str, dict], ...]]:
    """The chains the automatic choice measures for ``x`` at ``level``: :data:`AUTO_CHAINS`
    (at level 1 only those that decode fast, :func:`is_fast`: level 1 is the fast-decoding
    level), and ``rank+delta1`` when its distinct values are few relative to their span (ranks
    only help values on a sparse, possibly inexact grid; on dense values they are the identity
    plus a table); with two or more channels, the ``decorrelate`` chains of
    :data:`DECORRELATE_CHAINS`; when a channel is on a grid with a step > 1 (:func:`has_grid`),
    the ``grid`` chains of :data:`GRID_CHAINS`; when a channel's codes have skewed low digits
    (:func:`has_low_digits`), the ``mult`` chains of :data:`MULT_CHAINS`."""
    specs = list(AUTO_CHAINS)
    if x.shape[0] >= 2:
        specs += [PREDICTORS[k] for k in DECORRELATE_CHAINS if k in PREDICTORS]
    if x.size and x.dtype.kind in "iu" and has_grid(x):
        specs += [PREDICTORS[k] for k in GRID_CHAINS if k in PREDICTORS]
    if x.size and x.dtype.kind in "iu" and has_low_digits(x):
        specs += [PREDICTORS[k] for k in MULT_CHAINS if k in PREDICTORS]
    specs = [spec for spec in specs if level != 1 or is_fast(spec)]
    if x.size and x.dtype.kind in "iu":
        if x.dtype.itemsize <= 2:
            lo, hi = int(x.min()), int(x.max())
            count = int(np.count_nonzero(np.bincount((x.reshape(-1).astype(np.int64) - lo))))
        else:
            u = np.unique(x)
            lo, hi, count = int(u[0]), int(u[-1]), u.shape[0]
        if count >= 2 and count * RANK_SPARSITY <= hi - lo + 1:
            specs.append(PREDICTORS["rank+delta1"])
    return specs


def has_grid(x: np.ndarray) -> bool:
    """Whether some channel of ``x`` (``(channels, frames)``, integers) takes values on a grid
    ``offset + step * k`` with ``step > 1``: the gcd of its differences to its minimum, exact
    (the values mapped to unsigned in order, differences taken modulo ``2**64``). A constant
    channel has no step."""
    for row in x:
        u = row.astype(np.uint64)
        if row.dtype.kind == "i":  # order-preserving: flip the sign bit of the 64-bit value
            u = row.astype(np.int64).view(np.uint64) ^ np.uint64(1 << 63)
        d = u - u.min()
        if int(np.gcd.reduce(d)) > 1:
            return True
    return False


def has_low_digits(x: np.ndarray) -> bool:
    """Whether some channel of ``x`` (``(channels, frames)``, integers) has codes whose low
    digits are skewed enough that splitting them off may pay (:func:`ubpe.predict.mult_detect`:
    exact digit histograms of a sample, a few milliseconds a channel)."""
    return any(predict.mult_detect(np.ascontiguousarray(row))[0] > 1 for row in x)


def _map(fn: Callable[[Any], Any], items: list, threads: int) -> list:
    """``[fn(i) for i in items]`` on up to ``threads`` threads, results in order (the kernels
    release the GIL; every candidate is costed on its own, so the result is the same)."""
    if threads <= 1 or len(items) <= 1:
        return [fn(i) for i in items]
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=min(threads, len(items))) as pool:
        return list(pool.map(fn, items))


def _dense_fits(a: int, lo: int, hi: int) -> bool:
    """Whether :func:`_dense_candidate` offers dense ids for ``a`` distinct values in [lo, hi]:
    the range larger than the alphabet, but not by much."""
    return a < hi - lo + 1 <= min(max(16 * a, 1 << 16), entropy.MAX_VOCAB) and hi < 1 << 63


def _dense_candidate(chain: list[dict], y: np.ndarray, a: int) -> Candidate | None:
    """The values ``y`` (alphabet of ``a`` symbols) as ids over every value in [min, max] with
    the static coders ("mag" spends nothing on the holes of the range, and no alphabet is
    stored), when that range is larger than the alphabet but not by much; else None."""
    lo, hi = (int(y.min()), int(y.max())) if y.shape[0] and y.dtype.kind in "iu" else (0, -1)
    if not _dense_fits(a, lo, hi):
        return None
    dense = Alphabet(np.arange(lo, hi + 1, dtype=np.int64))
    return Candidate(chain, dense, np.zeros((0, 2), np.int32), dense.to_ids(y), LEVEL_CODERS[1], "static",
                     variant="dense")


#: Level 2 also offers the context mixers the dense ids of :func:`_dense_cm_candidate` when the
#: values have at least this many distinct values (fewer cost a few bytes to list).
DENSE_CM_ALPHABET = 256


def _dense_cm_fits(y: np.ndarray, a: int, always: bool = False) -> bool:
    """Whether :func:`_dense_cm_candidate` offers dense ids for the values ``y`` (``a`` distinct)."""
    lo, hi = (int(y.min()), int(y.max())) if y.shape[0] and y.dtype.kind in "iu" else (0, -1)
    span = hi - lo + 1
    return not (hi >= 1 << 63 or span > entropy.MAX_VOCAB or span < 1 or not (always or DENSE_CM_ALPHABET <= a < span))


def _dense_cm_candidate(chain: list[dict], y: np.ndarray, a: int, coders: tuple[str, ...],
                        always: bool = False) -> Candidate | None:
    """The values ``y`` (alphabet of ``a`` symbols) as ids over every value in [min, max] for
    level 2's context mixers: no list of distinct values is stored, which for heavy-tailed
    residuals (a quiet seismometer and the rare large excursions of an event: each excursion
    a value of its own) costs more than the coder spends on the holes of the range ("cms2"
    codes an id by its distance from a predicted one, so a wide range costs it little; its
    memory does not grow with V). Offered when ``a >= DENSE_CM_ALPHABET`` and the range has
    holes (``always``: whenever the range fits, for a rebuild of such a candidate); else None.
    shared/data has none; seis-ale-vhz (28 887 int32 values, 1 607 distinct residuals over
    87 556): alphabet 1 290 B, dense ids 789 B smaller in all."""
    if not _dense_cm_fits(y, a, always):
        return None
    lo, hi = int(y.min()), int(y.max())
    dense = Alphabet(np.arange(lo, hi + 1, dtype=np.int64))
    return Candidate(chain, dense, np.zeros((0, 2), np.int32), dense.to_ids(y), coders, "cm", variant="dense")


def _bare_candidates(chain: list[dict], y: np.ndarray) -> list[Candidate]:
    """The screen's candidates for the values ``y``: their bare alphabet, and the dense ids of
    :func:`_dense_candidate` (no training), static coders."""
    alphabet = Alphabet.from_data(y)
    bare = Candidate(chain, alphabet, np.zeros((0, 2), np.int32), alphabet.to_ids(y), LEVEL_CODERS[1])
    dense = _dense_candidate(chain, y, len(alphabet))
    return [bare] if dense is None else [bare, dense]


def _screen_sample(x: np.ndarray) -> tuple[np.ndarray, np.ndarray, float]:
    """The screen's sample of ``x`` (``(channels, frames)``): SCREEN_WINDOWS evenly spaced windows
    of frames, SCREEN_SAMPLE values in all, as ``(windows, joined, scale)``: the windows as
    channels of their own (``(windows x channels, frames)``), the same windows joined in time
    with the channels kept (for chains that relate channels), and values / sample values.
    When the sample would be every value, both are ``x`` itself and ``scale`` is 1."""
    c, f = x.shape
    count = SCREEN_WINDOWS
    length = max(SCREEN_SAMPLE // (count * c), 1)
    if f <= count * length:  # the sample would be every value: screen them all, as they are
        return x, x, 1.0
    starts = (np.arange(count, dtype=np.int64) * (f - length)) // (count - 1)
    stacked = np.stack([x[:, s:s + length] for s in starts.tolist()], axis=1)  # (c, count, length)
    windows = stacked.reshape(count * c, length)
    # the stream grows with the values, the rest (tables) does not
    return windows, stacked.reshape(c, count * length), x.size / windows.size


def _screen(x: np.ndarray, chains: list[list[frontend.Stage]], cost: CostFunction,
            proposer: ReplayEncoder, keep_first: bool = False,
            threads: int = 1) -> tuple[list[list[frontend.Stage]], list[bool]]:
    """The SCREEN_KEEP chains whose level-1 container of a sample of ``x``, its stream scaled
    to all the values, is smallest (ties:
    the earlier), and those within SCREEN_CLOSE of the last of them, in their given order, and the first chain too when ``keep_first`` (level 2:
    the "cm" coder models the raw values' context itself, which a level-1 screen underrates;
    on neural recordings no front end with "cm" beats every predictor), with a flag per chain
    kept: True for a chain kept only because level 1 would keep it (``keep_first``: the
    SCREEN_KEEP smallest that decode fast), which then gets level 1's candidates only. The sample: SCREEN_WINDOWS
    evenly spaced windows of frames, SCREEN_SAMPLE values in all, each window put through the
    chain as channels of its own (chains that relate channels, "decorrelate", get the windows
    joined in time instead, the channels kept)."""
    windows, joined, scale = _screen_sample(x)

    def size(chain: list[frontend.Stage]) -> float:
        across = any(st.name == "decorrelate" for st in chain)
        y, record = frontend.forward(joined if across else windows, chain)
        return _screened_size(record, np.ascontiguousarray(y).reshape(-1), cost, scale)

    sizes = _map(size, chains, threads)
    ranked = sorted(range(len(chains)), key=lambda i: (sizes[i], i))
    keep = set(ranked[:SCREEN_KEEP])
    last = sizes[ranked[min(SCREEN_KEEP, len(ranked)) - 1]]
    keep.update(i for i in ranked[SCREEN_KEEP:] if sizes[i] <= last * SCREEN_CLOSE)
    static_only: set[int] = set()
    if keep_first and sizes[0] <= SCREEN_FIRST_WITHIN * sizes[ranked[0]]:
        keep.add(0)
    if keep_first:
        # level 2 also keeps the chains level 1 would keep (its fast ones), so that level 1's
        # candidate stays one of level 2's; those not kept on their own merit get level 1's
        # candidates only (no "cm" run)
        fast = [i for i in ranked if all(st.fast_inverse for st in chains[i])][:SCREEN_KEEP]
        static_only = set(fast) - keep
        keep.update(fast)
    return [chains[i] for i in sorted(keep)], [i in static_only for i in sorted(keep)]


def _screened_size(record: list[dict], y: np.ndarray, cost: CostFunction, scale: float,
                   parts: tuple[float, float, float, float] | None = None) -> float:
    """The screen's level-1 proxy of a chain whose output on the sample is ``y`` (1-D, with its
    ``record``): the smallest exact size of its bare candidates, the part that grows with the
    values scaled by ``scale`` (values / sample values). With ``parts`` (the chain's
    :func:`_estimate_parts`), of the bare and dense ids one rated more than
    :data:`LEAN_LAYOUT_CLEAR` larger is not costed (:func:`_clearly_smaller`), nor a coder
    rated LEAN_CODER_CLEAR larger than the other (:func:`_likely_coders`)."""
    found = _bare_candidates(record, y)
    if parts is not None:
        found = _likely_coders(_clearly_smaller(found, (min(parts[:2]), min(parts[2:]))), parts)
    return min((_extrapolated(cost(c), scale) for c in found), default=float("inf"))


def _clearly_smaller(found: list[Candidate], estimates: tuple[float, float]) -> list[Candidate]:
    """``found`` less the bare or dense ids (``Candidate.variant``) whose estimate (``estimates``:
    bare, dense) is more than :data:`LEAN_LAYOUT_CLEAR` times the other's; candidates with
    merges are kept."""
    bare, dense = estimates
    if dense > LEAN_LAYOUT_CLEAR * bare:
        return [c for c in found if c.variant != "dense"] or found
    if bare > LEAN_LAYOUT_CLEAR * dense:
        return [c for c in found if c.variant == "dense" or len(c.merges)] or found
    return found


def _value_counts(y: np.ndarray) -> np.ndarray:
    """How many times each distinct value of ``y`` (1-D integers, not empty) occurs, in value
    order: a histogram over their span when it is narrow, else ``np.unique``'s counts."""
    lo, hi = int(y.min()), int(y.max())
    if hi - lo < 1 << 22 and hi < 1 << 63:
        counts = np.bincount(np.subtract(y, lo, dtype=np.int64))
        return counts[counts > 0]
    return np.unique(y, return_counts=True)[1]


def _raw_learnable(y: np.ndarray, counts: np.ndarray | None = None) -> bool:
    """Whether the values ``y`` (1-D integers, the first chain's output on the screen's sample;
    ``counts``: their :func:`_value_counts`, when known) have at most
    :data:`LEAN_RAW_DISTINCT` distinct values a value."""
    if y.shape[0] == 0 or y.dtype.kind not in "iu":
        return False
    distinct = (_value_counts(y) if counts is None else counts).shape[0]
    return distinct <= LEAN_RAW_DISTINCT * y.shape[0]


def _order0_bytes(y: np.ndarray, counts: np.ndarray | None = None) -> float:
    """A rough size of the values ``y`` (1-D): their order-0 entropy, plus
    :data:`LEAN_TABLE_BITS` per distinct value (the table a static coder stores), in bytes
    (``counts``: their :func:`_value_counts`, when known). Values that are not integers (never
    the output of a chain on integers) rank last."""
    if y.shape[0] == 0 or y.dtype.kind not in "iu":
        return 0.0 if y.shape[0] == 0 else float("inf")
    counts = _value_counts(y) if counts is None else counts
    n = y.shape[0]
    bits = n * np.log2(n) - float(np.dot(counts, np.log2(counts)))
    return (bits + LEAN_TABLE_BITS * counts.shape[0]) / 8.0


#: :func:`_static_estimate`'s running-mean rates of the "mag" model (the coder tries
#: ``MIN_RATE..MAX_RATE``; the estimate takes the better of these two).
ESTIMATE_RATES = (3, 5)
_ESTIMATE_RATES = np.array(ESTIMATE_RATES, np.int64)


def _mag_bits(*coded: tuple[np.ndarray, int]) -> list[float]:
    """Bits the "mag" coder would spend on each ``(ids, center)`` of ``coded`` (``ids`` int64, in
    [0, 2**24), around ``center``, their median, as the coder's), the least over the
    running-mean shifts of :data:`ESTIMATE_RATES`: the magnitude classes' entropy in each
    loudness context (the compiled ``mag_stats`` pass the coder itself runs first, those rates
    only, in one pass), their raw low bits, and about 9 bits a table entry (13 per context used)."""
    rates = len(ESTIMATE_RATES)
    stats = np.zeros((len(coded) * rates, _residual.N_CONTEXTS, _residual.N_BUCKETS), np.int64)
    raws = [int(_residual.mag_stats(ids, center, _BITLEN, _ESTIMATE_RATES, stats[k * rates:(k + 1) * rates],
                                    np.zeros(rates, np.int64))) for k, (ids, center) in enumerate(coded)]
    # every row's terms at once (a row: one rate of one ``coded``); subtle: the entropies are still
    # one dot product a row over the same floats in the same order (slices of one contiguous
    # array), so the bits are those of a call a row
    nz = stats > 0
    per = stats.sum(axis=2)
    used = per > 0
    span = stats.shape[2] - np.argmax(nz[:, :, ::-1], axis=2) - np.argmax(nz, axis=2)  # last - first + 1
    tables = ((13 + 9 * span) * used).sum(axis=1).tolist()
    ends = [0] + np.cumsum(np.concatenate((used.sum(axis=1), nz.sum(axis=(1, 2))))).tolist()
    v = np.concatenate((per[used], stats[nz])).astype(np.float64)  # every row's totals, then its counts
    lv = np.log2(v)
    rows = stats.shape[0]
    bits = []
    for r in range(rows):
        p, c = slice(ends[r], ends[r + 1]), slice(ends[rows + r], ends[rows + r + 1])
        entropy_bits = float(np.dot(v[p], lv[p])) - float(np.dot(v[c], lv[c]))
        bits.append(entropy_bits + raws[r // rates] + stats.shape[1] + float(tables[r]))
    return [min(bits[k * rates:(k + 1) * rates]) for k in range(len(coded))]


def _extrapolated(cost: Cost, scale: float, counted: int = 0) -> float:
    """The size, in bytes, of a candidate built on a sample and costed ``cost``, extrapolated to
    ``scale`` times the values: the part that grows with them (``Cost.scalable``) scaled, less
    ``counted`` bytes of it that already stand for all the values (the growing params of a
    record made on all of them, :func:`ubpe.frontend.growing_bytes`)."""
    return cost.size + (cost.scalable - counted) * (scale - 1.0)


def _static_estimate(record: list[dict], y: np.ndarray, scale: float) -> tuple[float, float]:
    """:func:`_estimate_parts` as (bare ids, dense ids): each layout's smaller coder estimate."""
    parts = _estimate_parts(record, y, scale)
    return min(parts[0], parts[1]), min(parts[2], parts[3])


def _estimate_parts(record: list[dict], y: np.ndarray, scale: float) -> tuple[float, float, float, float]:
    """A cheap estimate, in bytes, of :func:`_screened_size` (the smallest exact container of
    the chain's bare candidates under the static coders; ``y`` 1-D, the chain's output on a
    sample with its ``record``, ``scale`` = values / sample values), for ranking chains: the
    smallest of the order-0 entropy with a count table of the bare ids ("rans"), and the
    "mag" model's bits (:func:`_mag_bits`, best of :data:`ESTIMATE_RATES`) of the bare ids
    and, where the dense candidate exists, of the dense ids; plus about an Elias-gamma code a
    gap of the alphabet (the bare ids' alphabet, the dense ids' rANS table of used ids); the stream's part scaled, plus the stages' params
    (their growing part, ``Stage.scalable``, scaled too). On the bench sets and the unseen
    recordings (every chain of 62 inputs) estimate / exact is 0.997 to 1.043 for 90 % of the
    predicting chains, 0.955 to 1.129 in all (heavy-tailed residuals run high), 1.0 to 1.17 on
    raw values; its first choice is the exact proxy's on 58 of the 62 (the others within
    SCREEN_CLOSE). About a third of an exact costing's time. Values that are not integers rank last. Returns
    (bare ids under "rans", bare ids under "mag", dense ids under "rans", dense ids under "mag";
    inf where there is no dense candidate): :func:`_static_estimate` takes each layout's smaller,
    :func:`_likely_coders` compares the two coders."""
    n = y.shape[0]
    params = len(msgpack.packb(record, use_bin_type=True))
    grows = frontend.growing_bytes(record)
    fixed = params - grows
    inf = float("inf")
    if n == 0:
        return float(fixed + grows * scale), inf, inf, inf
    if y.dtype.kind not in "iu":
        return inf, inf, inf, inf
    lo, hi = int(y.min()), int(y.max())
    span = hi - lo + 1
    if span <= 1 << 22 and hi < 1 << 63:
        d = np.subtract(y, lo, dtype=np.int64)
        counts = np.bincount(d)
        present = counts > 0
        rank = np.cumsum(present) - 1
        ids = rank[d]
        where = np.flatnonzero(present)
        counts = counts[present]
        middle = int(np.partition(d, n // 2)[n // 2])  # the median value; its rank is the ids' median
        center = int(rank[middle])
    else:
        where, ids, counts = np.unique(y, return_inverse=True, return_counts=True)
        ids = ids.astype(np.int64).reshape(-1)
        d = None
        center = int(np.partition(ids, n // 2)[n // 2])
    a = counts.shape[0]
    if a <= 1:
        return float(fixed + grows * scale + 8), inf, inf, inf
    c = counts.astype(np.float64)
    order0 = n * np.log2(n) - float(np.dot(c, np.log2(c)))
    table = float(np.minimum(np.log2(c) + 2.0, 8.0).sum())
    gaps = np.diff(where).astype(np.float64)  # consecutive values: gap 1
    alphabet = float((1.0 + 2.0 * np.floor(np.log2(gaps))).sum()) if gaps.size else 0.0
    has_dense = d is not None and _dense_fits(a, lo, hi)
    mag = _mag_bits((ids, center), (d, middle)) if has_dense else _mag_bits((ids, center))
    bare = (order0 + table + alphabet, mag[0] + alphabet)
    # rANS codes dense ids as it does bare ones, its table listing the used ids (about the
    # alphabet's cost); "mag" sees the holes as magnitude
    dense = (order0 + table + alphabet, mag[1]) if has_dense else (inf, inf)
    rest = fixed + grows * scale
    return tuple(bits / 8.0 * scale + rest for bits in bare + dense)


#: Static candidates built in full by the lean search are costed without "rans" where its
#: estimate is at least LEAN_CODER_CLEAR times "mag"'s, and without "mag" where the reverse
#: holds (:func:`_likely_coders`): on the predicted values of the bench sets and unseen
#: recordings the estimates' ratio is 0.011 below to 0.019 above the exact one (0.985 to 1.145),
#: and on raw values it runs up to 0.11 high (exact 1.000 for 1.113: both lost to "packed"),
#: never low. (1.05 first: the same containers on the 66 bench and unseen inputs at 1.03, and
#: float-step's static candidates, within 1.044, no longer costed twice.)
LEAN_CODER_CLEAR = 1.03


def _likely_coders(found: list[Candidate], parts: tuple[float, float, float, float]) -> list[Candidate]:
    """``found`` (bare and dense candidates, :func:`_bare_candidates`), each offered only the
    static coders whose estimate (``parts``, :func:`_estimate_parts`) is not LEAN_CODER_CLEAR
    times the other's ("packed" and "const" always)."""
    out = []
    for c in found:
        rans, mag = parts[2:] if c.variant == "dense" else parts[:2]
        drop = "rans" if rans >= LEAN_CODER_CLEAR * mag else ("mag" if mag >= LEAN_CODER_CLEAR * rans else None)
        out.append(c if drop is None or len(c.merges) else replace(c, coders=tuple(k for k in c.coders if k != drop)))
    return out


def _forward_shared(inputs: dict, chains: list[list[frontend.Stage]], i: int,
                    cache: dict) -> tuple[np.ndarray, list[dict]]:
    """``frontend.forward`` of chain ``i`` on its input (the joined windows for chains that relate
    channels, else the windows: ``inputs[True]`` and ``inputs[False]``), reusing the output of
    the longest prefix already computed (``cache``: (input, stage names and options) -> (output,
    record); "lpc+adaptive" starts from "lpc"'s output). Every stage's forward is a function
    of its input and options, so the result is the same as a forward pass of its own."""
    across = any(st.name == "decorrelate" for st in chains[i])
    key: tuple = (across,)
    x, record = inputs[across], []
    for st in chains[i]:
        key = key + ((st.name, repr(sorted(vars(st).items()))),)
        hit = cache.get(key)
        if hit is None:
            y, params = st.forward(x)
            hit = cache[key] = (y, record + [{"stage": st.name, **params}])
        x, record = hit
    return x, record


def _lean_plan(x: np.ndarray, chains: list[list[frontend.Stage]], cost: CostFunction,
               proposer: ReplayEncoder, threads: int = 1) -> Candidate:
    """Level 2's search from LEAN_ABOVE to FULL_FIT values (the module docstring, step 1b):
    about one full context-mixing run and a few static costings. ``x`` is ``(channels,
    frames)`` integers wider than a byte; returns a candidate built on all the values and
    costed with ``cost`` (as :func:`plan`).

    1. Every chain's output on the screen's sample (:func:`_screen_sample`; prefixes of stages
       computed once, :func:`_forward_shared`) gets a rough size (:func:`_order0_bytes` scaled
       to all the values, plus its stages' params); those within LEAN_PRUNE of the smallest
       (LEAN_PRUNE_LARGE from LEAN_CM_LARGE values; the first chain within LEAN_PRUNE_FIRST
       when :func:`_raw_learnable`, or always up to LEAN_SMALL values) are ranked by :func:`_static_estimate` (no coder
       run). The finalists are the LEAN_KEEP smallest (LEAN_KEEP_LARGE from LEAN_CM_LARGE
       values), those within LEAN_CLOSE of the last of them, and the first chain (no front
       end) within SCREEN_FIRST_WITHIN of the smallest (when its estimate is within
       LEAN_FIRST_CHECK, by its exact :func:`_screened_size`: raw values' estimates run high;
       beyond LEAN_SMALL values only with at most LEAN_RAW_DISTINCT distinct values a value,
       :func:`_raw_learnable`; always up to LEAN_SMALL values; up to LEAN_SMALL values also every chain within
       LEAN_SMALL_CLOSE of the smallest).
    2. Each finalist offers the context mixers one id layout: dense ids
       (:func:`_dense_cm_candidate`) unless the bare ids' estimate times LEAN_DENSE_BIAS is at
       most the dense ids' (no static dense candidate: dense ids); sized on LEAN_CM_SAMPLE
       values (LEAN_CM_SAMPLE_LARGE from LEAN_CM_LARGE values; LEAN_CM_WINDOWS windows) when
       k finalists' samples and one full run code fewer values than k full runs, else on all
       of them; the best estimate is then built on all the values.
    3. Static candidates (all the values) only where they may win against the best of those
       (exact size S): the bare candidates of S's chain when its estimate is within
       LEAN_STATIC_WITHIN of S; level 1's (probe, merges, variants) on the fast chain ranked
       first when its estimate is at least LEAN_LEVEL1_GAIN times S. Of the bare and dense ids, one whose estimate is
       over LEAN_LAYOUT_CLEAR times the other's is not built, nor offered the coder rated
       LEAN_CODER_CLEAR times the other (:func:`_likely_coders`).
    4. The smallest exact candidate wins (ties: the earlier chain, static first)."""
    windows, joined, scale = _screen_sample(x)
    whole = windows is x

    inputs, outputs = {False: windows, True: joined}, {}

    def front(i: int) -> tuple[np.ndarray, list[dict], float, np.ndarray | None]:
        y, record = _forward_shared(inputs, chains, i, outputs)
        y = np.ascontiguousarray(y).reshape(-1)
        counts = _value_counts(y) if y.shape[0] and y.dtype.kind in "iu" else None
        # the stages' params count too ("rank" keeps its table there, not in the alphabet)
        return y, record, _order0_bytes(y, counts) * scale + len(msgpack.packb(record, use_bin_type=True)), counts

    screened = _map(front, list(range(len(chains))), threads)
    rough = [s[2] for s in screened]
    least = min(rough)
    large = x.size >= LEAN_CM_LARGE
    prune = LEAN_PRUNE_LARGE if large else LEAN_PRUNE
    # the first chain (raw values) on the strength of the context mixer's own modelling only
    # where that context may be learnt: short inputs, or few distinct values (_raw_learnable)
    learnable = x.size <= LEAN_SMALL or _raw_learnable(screened[0][0], screened[0][3])
    alive = [i for i in range(len(chains)) if rough[i] <= prune * least or
             (i == 0 and learnable and (rough[i] <= LEAN_PRUNE_FIRST * least or x.size <= LEAN_SMALL))]

    parts = dict(zip(alive, _map(lambda i: _estimate_parts(screened[i][1], screened[i][0], scale), alive, threads)))
    estimates = {i: (min(p[:2]), min(p[2:])) for i, p in parts.items()}
    proxy = {i: min(e) for i, e in estimates.items()}
    ranked = sorted(alive, key=lambda i: (proxy[i], i))
    keep_n = LEAN_KEEP_LARGE if large else LEAN_KEEP
    keep = set(ranked[:keep_n])
    last = proxy[ranked[min(keep_n, len(ranked)) - 1]]
    keep.update(i for i in ranked if proxy[i] <= last * LEAN_CLOSE)
    raw = 0 in proxy and learnable
    if raw and (proxy[0] <= SCREEN_FIRST_WITHIN * proxy[ranked[0]] or x.size <= LEAN_SMALL):
        keep.add(0)
    elif raw and proxy[0] <= LEAN_FIRST_CHECK * proxy[ranked[0]] and \
            _screened_size(screened[0][1], screened[0][0], cost, scale, parts[0]) \
            <= SCREEN_FIRST_WITHIN * proxy[ranked[0]]:
        keep.add(0)  # the estimate overrates raw values by up to a third: their exact level-1 proxy decides
    if x.size <= LEAN_SMALL:
        keep.update(i for i in ranked if proxy[i] <= LEAN_SMALL_CLOSE * proxy[ranked[0]])
    first_fast = next((i for i in ranked if all(st.fast_inverse for st in chains[i])), None)
    finalists = sorted(keep | ({first_fast} if first_fast is not None else set()))
    cm_coders = tuple(c for c in LEVEL_CODERS[2] if c not in MEASURED_AT_LEVEL_1)
    outputs.clear()
    full_outputs: dict[int, tuple[np.ndarray, list[dict]]] = {}

    def output(i: int) -> tuple[np.ndarray, list[dict]]:
        if whole:
            return screened[i][0], screened[i][1]
        if i not in full_outputs:
            y, record = _forward_shared({False: x, True: x}, chains, i, outputs)
            full_outputs[i] = (np.ascontiguousarray(y).reshape(-1), record)
        return full_outputs[i]

    def static(i: int) -> list[tuple[Candidate, float]]:
        y, record = output(i)
        if i == level1_on:  # level 1's candidates on this chain (probe, merges, variants)
            found = proposer.propose(record, y, 1, cost, False)
        else:
            found = _bare_candidates(record, y)
        # of the bare and dense ids, one the estimates rate clearly larger is not costed, nor
        # a coder they rate clearly larger
        return [(c, float(cost(c).size)) for c in _likely_coders(_clearly_smaller(found, estimates[i]), parts[i])]

    def context_mixed(i: int) -> tuple[Candidate, float]:
        y, record = output(i)
        alphabet = Alphabet.from_data(y)
        a = len(alphabet)
        full = _dense_cm_candidate(record, y, a, cm_coders)
        if full is not None and estimates[i][0] * LEAN_DENSE_BIAS <= estimates[i][1] < float("inf"):
            full = None  # the static estimates prefer the alphabet clearly: so does the context mixer, mostly
        if full is None:
            full = Candidate(record, alphabet, np.zeros((0, 2), np.int32), alphabet.to_ids(y), cm_coders, "cm")
        n, k = y.shape[0], len(keep)
        sample = LEAN_CM_SAMPLE_LARGE if n >= LEAN_CM_LARGE else LEAN_CM_SAMPLE
        if k * n <= k * sample + n:  # sizing k samples then one in full costs more than k in full
            return full, float(cost(full).size)
        ys = y[_windows(y.shape[0], sample, LEAN_CM_WINDOWS)]
        alphabet_s = Alphabet.from_data(ys)
        sized = _dense_cm_candidate(record, ys, len(alphabet_s), cm_coders, always=True) \
            if full.variant == "dense" else None
        if sized is None:
            sized = Candidate(record, alphabet_s, np.zeros((0, 2), np.int32), alphabet_s.to_ids(ys), cm_coders, "cm")
        sized.rebuild = lambda: full
        # subtle: the sample keeps the record of all the values: its growing params ("mult"'s
        # digits) are full size already, only the stream scales
        return sized, _extrapolated(cost(sized), n / ys.shape[0], frontend.growing_bytes(record))

    # the context-mixing candidates, those sized on a sample built on all the values where they
    # may win; then the static ones only where they may win against the best of those, exact
    cm_of = dict(zip(sorted(keep), _map(context_mixed, sorted(keep), threads)))
    if any(c.rebuild is not None for c, _ in cm_of.values()):
        bound = min(size for _, size in cm_of.values())
        cm_of = {i: (c.rebuild(), None) for i, (c, size) in cm_of.items() if size <= bound}
        cm_of = {i: (c, float(cost(c).size)) for i, (c, _) in cm_of.items()}
    cm_best, cm_chain = min((size, i) for i, (_, size) in cm_of.items())
    # level 1's candidates (merges) on the fast chain ranked first only where the context mixer
    # gains LEAN_LEVEL1_GAIN over its estimate; the bare candidates on the best container's chain
    level1_on = first_fast if first_fast is not None and proxy[first_fast] >= LEAN_LEVEL1_GAIN * cm_best else None
    later = [i for i in finalists if i == level1_on or (i == cm_chain and proxy[i] <= LEAN_STATIC_WITHIN * cm_best)]
    parts = dict(zip(later, _map(static, later, threads)))
    # in chain order, each chain's static candidates before its context-mixing one (ties: the earlier)
    cands = [c for i in finalists for c in parts.get(i, []) + ([cm_of[i]] if i in cm_of else [])]
    return min(((size, j, c) for j, (c, size) in enumerate(cands)), key=lambda t: t[:2])[2]


def plan(x: np.ndarray, chains: list[list[frontend.Stage]], level: int, cost: CostFunction,
         proposer: ReplayEncoder, threads: int = 1, lean: bool = True) -> Candidate:
    """The smallest candidate for ``x`` (``(channels, frames)``, native integers): see the
    module docstring. ``cost`` is the format's exact costing function; ``proposer`` the encoder
    that proposes candidates (anything with ``propose`` and ``rebuild`` as ReplayEncoder's).
    The candidate returned was built on all the values and costed with ``cost``. ``threads``
    measure chains side by side; the result does not depend on it. ``lean=False`` keeps the
    exhaustive search at level 2 whatever the size: for a plan made once on a sample of a much
    longer input (the blocked form), whose cost is a small share of coding the whole. The
    chains share their LPC analyses during the search (:func:`ubpe.stages.analysis_cache`),
    dropped when it ends."""
    with _stages.analysis_cache():
        return _plan(x, chains, level, cost, proposer, threads, lean)


def _plan(x: np.ndarray, chains: list[list[frontend.Stage]], level: int, cost: CostFunction,
          proposer: ReplayEncoder, threads: int, lean: bool) -> Candidate:
    """:func:`plan`'s search."""
    if getattr(proposer, "n_tokens", None) is not None:
        threads = 1  # fitting a Tokenizer of n_tokens silences warnings: global state, one thread
    elif lean and level == 2 and LEAN_ABOVE < x.size <= FULL_FIT and x.dtype.itemsize > 1 and len(chains) > 1 \
            and type(proposer) is ReplayEncoder:
        return _lean_plan(x, chains, cost, proposer, threads)  # (bytes and text: the exhaustive search)
    if x.size > SCREEN_ABOVE and len(chains) > SCREEN_KEEP:
        chains, static_only = _screen(x, chains, cost, proposer, keep_first=level == 2, threads=threads)
    else:
        static_only = [False] * len(chains)
    n = x.size
    sampled = n > FULL_FIT
    take = _sample_take(n) if sampled else None
    scale = n / take.shape[0] if sampled else 1.0

    def chain_proposals(i: int) -> tuple[np.ndarray, list[Candidate]]:
        y, record = frontend.forward(x, chains[i])
        y = np.ascontiguousarray(y).reshape(-1)
        return y, proposer.propose(record, y[take] if sampled else y, 1 if static_only[i] else level, cost, sampled)

    cands: list[Candidate] = []
    for y, proposals in _map(chain_proposals, list(range(len(chains))), threads):
        for c in proposals:
            k = cost(c)
            # subtle: the record was made on all the values: its growing params do not scale
            c.estimate = _extrapolated(k, c.scale * scale, frontend.growing_bytes(c.chain))
            if sampled:
                c.rebuild = lambda c=c, y=y: proposer.rebuild(c, y, level)
            cands.append(c)
    if not cands:
        raise ValueError(
            "n_tokens is smaller than the alphabet of the values under every front end tried; "
            "pass a larger n_tokens"
        )
    order = sorted(range(len(cands)), key=lambda i: (cands[i].estimate, i))
    best = cands[order[0]]
    exact = next((cands[i] for i in order if cands[i].rebuild is None), None)
    rest = next((cands[i] for i in order if cands[i].rebuild is not None), None)
    if rest is None:
        return best
    if exact is not None:
        # "cm" candidates sized on a sample, whose estimates rank chains only roughly (the
        # model's learning cost does not scale with the sample): those
        # within CLOSE of the best is built on all the values, and compared exactly with the
        # best candidate built on all of them
        chosen: list[Candidate] = []
        for i in order:
            c = cands[i]
            if c.rebuild is not None and c.estimate <= rest.estimate * CLOSE and \
                    all(c.chain != d.chain or c.variant != d.variant for d in chosen):
                chosen.append(c)
        built = [exact] + _map(lambda c: c.rebuild(), chosen, threads)
        return min(built, key=lambda c: cost(c).size)
    chosen = [best]
    other = next((cands[i] for i in order if cands[i].family != best.family), None)
    if other is not None and other.estimate <= best.estimate * CLOSE:
        chosen.append(other)
    built = _map(lambda c: c.rebuild(), chosen, threads)
    return min(built, key=lambda c: cost(c).size)


# ============================================================================ prefix choice


def _cost_lower_bound(counts: np.ndarray) -> float:
    """A lower bound, in bits, of ``entropy.counts_cost_bits(counts)``: the smaller of the exact
    bit-packed size and n H + k + 33 (rANS's cross-entropy is at least the entropy n H, its
    flush 32 bits, its table a mode bit and at least one bit per used symbol's count code),
    less a bit of slack for rounding."""
    c = counts[counts > 0].astype(np.float64)
    if c.shape[0] <= 1:
        return 0.0
    n = float(c.sum())
    width = int(np.flatnonzero(counts)[-1]).bit_length()
    packed = 8.0 * ((int(n) * width + 7) // 8)
    h = n * np.log2(n) - float(np.dot(c, np.log2(c)))
    ans = h + c.shape[0] + 33.0
    return min(packed, ans) * (1.0 - 1e-9) - 1.0


def best_prefix(hist: np.ndarray, merges: np.ndarray, a: int, ladders: tuple[float, ...] = PREFIX_LADDERS,
                cache: dict | None = None, bound: bool = False) -> int:
    """Number of merges, a prefix of ``merges`` in priority order, that minimises the size.

    ``hist`` is the token histogram of the replay encoding under all merges. Dropping the last
    merge ``A + k`` turns each of its occurrences into its two children, so the histogram of
    every prefix follows by unrolling from the top; each candidate is costed as the entropy
    stage's estimate (``entropy.counts_cost_bits``) plus the packed merge table. Candidates
    form a geometric ladder (the ratio of :data:`PREFIX_LADDERS`' first), then the bracket
    around the best so far is searched with each finer ratio in turn. ``cache`` (prefix size ->
    cost, for this ``hist`` and ``merges`` only) keeps costs across calls: filled and read.
    ``bound`` (one ladder only, as the probe's: :data:`PROBE_LADDERS`): a prefix whose lower
    bound (:func:`_cost_lower_bound` plus its exact merge table) is at least the exact cost of
    no merges is not costed exactly: it cannot beat none (ties go to the smaller prefix), so
    whether the answer is 0 is the same as with every cost exact; the answer is then 0 or
    a prefix costed exactly.
    """
    m = len(merges)
    cache = {} if cache is None else cache
    if m == 0:
        return 0
    left = merges[:, 0].tolist()
    right = merges[:, 1].tolist()
    base = [int(c) for c in hist.tolist()]

    def cost(h: list[int], k: int) -> float:
        counts = np.asarray(h[: a + k], dtype=np.int64)
        model_bits = 8 * len(entropy.pack_merges(merges[:k], a)) if k else 0
        return entropy.counts_cost_bits(counts) + model_bits

    pending: list = []

    def sweep(ladder: list[int]) -> dict[int, float]:
        # one pass from all m merges down to min(ladder), costing each ladder point
        h = list(base)
        out = {}
        top = m
        for k in sorted(set(ladder), reverse=True):
            for t in range(a + top - 1, a + k - 1, -1):
                c = h[t]
                if c:
                    j = t - a
                    h[left[j]] += c
                    h[right[j]] += c
                    h[t] = 0
            top = k
            if k in cache:
                out[k] = cache[k]
            elif bound and k > 0 and 0 in ladder:
                counts = np.asarray(h[: a + k], dtype=np.int64)
                model_bits = 8 * len(entropy.pack_merges(merges[:k], a))
                pending.append((k, counts, _cost_lower_bound(counts) + model_bits, model_bits))
            else:
                cache[k] = out[k] = cost(h, k)
        for k, counts, low, model_bits in pending:
            if low >= out[0]:
                out[k] = low  # cannot beat no merges (not cached: a bound, not a cost)
            else:
                cache[k] = out[k] = entropy.counts_cost_bits(counts) + model_bits
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


# ============================================================================ encoding method

#: The encoding methods :func:`choose_method` tries for a candidate with merges, in order (ties:
#: the earlier). "optimal" (fewest tokens) is not tried: see docs/format.md, "Writer choices".
ENCODE_METHODS: tuple[str, ...] = ("replay", "bits")
#: Segmentations "bits" runs, each priced by the previous stream's token frequencies (the
#: first by replay's): a second pass still shrinks the container a little, more passes hardly
#: (benchmarks/README.md, "Encoding method").
BITS_PASSES = 2


def methods_to_try(cand: Candidate) -> tuple[str, ...]:
    """The methods worth measuring for ``cand``: :data:`ENCODE_METHODS` when it has merges (a
    bare alphabet encodes one way)."""
    return ENCODE_METHODS if len(cand.merges) else ENCODE_METHODS[:1]


def choose_method(cand: Candidate, cost: CostFunction) -> Candidate:
    """``cand`` (replay-encoded, built on all the values), or the same model and coders with the
    values re-encoded by the method of :func:`methods_to_try` whose container is smallest,
    measured exactly with ``cost`` (ties: the earlier method, so replay). Decoding never needs
    to know: every method's tokens expand to the same values."""
    methods = methods_to_try(cand)
    if len(methods) <= 1:
        return cand
    from .model import Model  # the planner itself needs no model object

    model = Model(cand.alphabet, cand.merges)
    ids = encoder.decode(cand.tokens, model.expansion())
    best, best_size = cand, cost(cand).size
    for method in methods:
        if method == cand.method:
            continue
        other = replace(cand, tokens=encode_with(model, ids, method, cand.tokens), method=method, packed=None)
        size = cost(other).size
        if size < best_size:
            best, best_size = other, size
    return best


def encode_with(model: Any, ids: np.ndarray, method: str, replay: np.ndarray) -> np.ndarray:
    """``ids`` encoded under ``model`` by ``method``, given their replay encoding ``replay``.

    "bits" prices each token by its frequency in ``replay`` (what the static coder would pay
    for that stream), then :data:`BITS_PASSES` - 1 more times by the previous segmentation's
    own frequencies, so that the segmentation aims at this container's stream rather than at
    training statistics."""
    if method == "replay":
        return replay
    if method == "optimal":
        return model._segment(ids, method)
    tokens = replay
    for _ in range(BITS_PASSES):
        tokens = model._segment(ids, method, np.bincount(tokens, minlength=model.vocab_size))
    return tokens
