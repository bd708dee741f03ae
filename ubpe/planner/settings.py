"""The planner's tuning, in one place: :class:`Settings`.

Every threshold, sample size and margin the writer's search uses is a field here, documented
once with what it was measured to do (docs/format.md, "Writer choices", describes the
procedure and points here). Nothing here is part of the format: any settings give containers
that decode the same way; they only change which container the writer picks and how fast.

``compress`` reads :func:`current` once per call and hands the object down the search, so the
threads of one call see one object. :func:`configured` changes it for a block of code (tests,
A/B measurements):

    >>> from ubpe.planner import settings
    >>> with settings.configured(screen_keep=3) as s:
    ...     s.screen_keep, settings.current().screen_keep
    (3, 3)
    >>> settings.current().screen_keep
    2
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
from dataclasses import dataclass
from typing import Iterator

__all__ = ["Settings", "DEFAULT", "current", "configured"]


@dataclass(frozen=True)
class Settings:
    """The planner's tuning constants (see the module docstring). Sizes are counts of values."""

    #: Front-end chains the automatic choice measures on every integer input, by name
    #: (:data:`ubpe.frontend.chains.PREDICTORS`; ``auto_chains`` adds the decorrelate, grid,
    #: mult and rank chains where they apply).
    auto_chains: tuple[str, ...] = ("none", "delta1", "delta2", "lpc", "lpc+adaptive", "delta1+adaptive")
    #: ``rank+delta1`` is tried when distinct values x rank_sparsity <= max - min + 1.
    rank_sparsity: int = 4
    #: The mult chains are tried when one of at most this many evenly spaced channels has
    #: skewed low digits (the channels of one recording share their converter; testing every
    #: channel of a 1 024-electrode array costs seconds).
    digit_channels: int = 16
    #: Beyond screen_sample values, every chain is screened at level 1 on screen_sample values
    #: (screen_windows windows of the input, each put through the chain on its own), and only the
    #: screen_keep smallest go through the full procedure. (A screen of every value of shorter
    #: inputs, from 2**13 values, gave the same containers on the bench sets and the unseen
    #: recordings; below, it ranks out chains that win on short inputs: a 600-frame grid, 62
    #: bytes unscreened at level 1, 115 screened. Keeping 1 chain: respiration-systole 17 %
    #: larger.)
    screen_sample: int = 1 << 14
    screen_keep: int = 2
    #: Level 2 keeps the first chain (no front end) beyond the screen only when its screened size is
    #: within this factor of the smallest: on the neural recordings, where context mixing on the raw values
    #: wins, it is within 1.24; on ECG, seismic and audio, where it never wins, 1.4 to 1.9.
    screen_first_within: float = 1.3
    #: Evenly spaced windows of the screening sample: screen_sample / screen_windows = 4096 frames
    #: each for one channel, one LPC block (``lpc_forward``'s) and about the adaptation time of the
    #: adaptive cascade's slow stage. The predictors restart in every window, so shorter windows
    #: (windows = 16 of 1024 frames) charged the learning predictors a warm-up per window and
    #: ranked them below chains that learn nothing (audio-each: 2.2 % larger at level 2 with 16).
    #: The context-mixing samples (cm_sample, lean_cm_sample) take as many windows.
    screen_windows: int = 4
    #: The screen ranks chains by a level-1 proxy (bare alphabet, static coders, a sample, no
    #: merges); chains within screen_close of the last one kept go on too. (Without it, the same
    #: containers on the bench sets and the unseen recordings, but 20 000 values of the periodic
    #: example of docs/format.md, ``np.tile([3, -1, 4, 1, 5], 4000)``: 82 bytes at level 1
    #: instead of 52, the chain whose merges win ranked third on the screen.)
    screen_close: float = 1.03
    #: Level-1 id layouts proposed besides the static prefix (see ``ReplayEncoder.propose``).
    level1_variants: tuple[str, ...] = ("bare", "dense")
    #: Up to this many values every candidate is built and sized on all of them.
    full_fit: int = 1 << 19
    #: Beyond full_fit: candidates are sized on this many values, in windows evenly spaced windows.
    #: Blocked inputs: the model (chain, alphabet, merges, coders) is fitted on such a sample of
    #: frames joined in time. (4 windows: respiration-systole 2.2 % larger at level 1.)
    sample: int = 1 << 18
    windows: int = 16
    #: Automatic model size: at most this many merges, and at most one per auto_values_per_merge values.
    auto_max_merges: int = 1 << 16
    auto_values_per_merge: int = 8
    #: best_prefix: ratios of the successive geometric ladders of prefix sizes, coarse to fine
    #: (each searches the bracket around the best of the one before).
    prefix_ladders: tuple[float, ...] = (2 ** 0.5, 2 ** (1 / 8), 2 ** (1 / 32))
    #: Level 2, from cm_sample_above to full_fit values of a chain's output: its context-mixing
    #: candidate is sized on cm_sample of them (screen_windows windows), and built on all the
    #: values only if it is the best of them (a context-mixing encode on all of them per chain
    #: cost most of level 2's time).
    cm_sample_above: int = 1 << 16
    cm_sample: int = 1 << 15
    #: Level 2 from lean_above to full_fit values of an automatic choice: the lean search of
    #: :func:`~ubpe.planner.lean.lean_plan` (finalists by a cheap proxy, context mixing sized on a sample, about one
    #: full context-mixing run). (Not lower: on 260 to 1 020 values the lean search was about twice
    #: as fast as the exhaustive one, 0.07 % larger in all on 90 slices of 20 signals, but it may be
    #: larger than level 1, which the exhaustive search never is: the periodic example of
    #: docs/format.md, 53 B against 51, merges on a chain it does not rank first; with every ranked
    #: fast chain's level-1 candidates built too, still 2 of the 90, by 2 and 14 B.)
    lean_above: int = 1 << 10
    #: ... up to lean_upto values (beyond full_fit too: the lean search sizes its candidates on
    #: samples anyway and builds its winner on all the values, where the exhaustive search sized
    #: 8 candidates on a full_fit sample, "cms2" on each, and rebuilt the winner: speech-allison,
    #: 586 790 values, 0.17 M values/s against 0.86 on short audio, 7.6 s of 7.9 in that search).
    #: full_fit: the search before (exhaustive beyond full_fit).
    lean_upto: int = 1 << 62
    #: The lean search first ranks chains by :func:`~ubpe.planner.estimates.order0_bytes` on the screen's sample
    #: (order0_table_bits a distinct value, the table a static coder stores; level 1 prunes by it
    #: too, fast_prune) and estimates only those within lean_prune of the smallest
    #: (lean_prune_large from lean_cm_large values; the first chain, no front end, within
    #: lean_prune_first: the context mixers model raw values' context, order 0 does not; beyond
    #: lean_small values only where that context is learnable, lean_raw_distinct). (Every chain
    #: estimated: the same containers on the bench sets, unseen recordings and texts, +3.7 % of
    #: level 2's CPU, benchmarks/settings_cost.py.)
    #: Beyond the screen's values (the screen on a sample), the lean search's screen runs the
    #: "lpc" stages as level 1's screen does (:func:`~ubpe.planner.fast.fast_stages`: fewer
    #: predictors costed, no refit); the finalists run them in full on all the values. Off by
    #: default: on, seismic 1.19x and ECG 1.03x faster (in-process A/B) and the same bytes on the
    #: bench sets, unseen recordings and texts but float-q and float-step (+13 B, +0.07 %), but
    #: 20 000 values of the ECG excerpt times 4 (a grid of step 4) 1.0 % larger ("grid+lpc"
    #: ranked out of the context-mixing finalists).
    lean_screen_fast_lpc: bool = False
    lean_prune: float = 1.2
    lean_prune_first: float = 2.0
    lean_prune_large: float = 1.5
    order0_table_bits: int = 12
    #: Up to lean_small values the first chain (no front end) is always a context-mixing finalist:
    #: on short smooth signals "cms2" learns the raw values' context fastest (the first 2 000
    #: values of the bundled ECG excerpt: 1 357 bytes with no front end, 1 372 with "delta1", whose
    #: level-1 proxies are 2 096 and 1 421).
    lean_small: int = 1 << 11
    #: Up to lean_small values every chain whose level-1 proxy is within lean_small_close of the
    #: smallest is a finalist too: the context mixer's gain over the static coders differs by
    #: chain by up to about 10 % on short inputs (2 000 values of the bundled ECG excerpt on a grid
    #: of step 12: "grid+delta1" 8 % behind "grid+lpc" at level 1, 1.7 % ahead with "cms2").
    lean_small_close: float = 1.15
    #: Below lean_cm_large values, context-mixing finalists are sized on lean_cm_sample values in
    #: screen_windows windows. (2**12 before: 2**11 gave the same containers on the bench sets and
    #: the unseen recordings; 2**10 picked "delta1+adaptive" for one audio file, 1.4 % larger.)
    lean_cm_sample: int = 1 << 11
    #: Of the context-mixing candidates sized on a sample, only the best estimate is built on all
    #: the values; from lean_cm_large values they are sized on lean_cm_sample_large values. (The
    #: 2**12-value samples once needed a 1 % margin, the candidates within it built too: 4 neural
    #: recordings, 0.26 % larger without it; those take 2**13-value samples now, and below
    #: lean_cm_large values the margin changed no container of the bench sets and the unseen
    #: recordings, for a second full run on a third of the audio files sized on samples. One
    #: sample size, 2**11: alsa-Noise 0.37 % larger; 2**13: seis-ale-vhz 1.5 % larger.)
    lean_cm_large: int = 1 << 15
    lean_cm_sample_large: int = 1 << 13
    #: From lean_cm_large values, where a context-mixing sample costs a fraction of the values,
    #: the lean search's finalists are the lean_keep_large smallest estimates (below, the
    #: smallest): "cms2"'s gain differs by chain. (Keeping 1: the same containers on the bench
    #: sets and the unseen recordings, but ``np.tile([3, -1, 4, 1, 5], 20000)`` 624 bytes at
    #: level 2 instead of 173, and a sine on a grid of step 7, 60 000 values, 18 % larger.
    #: Keeping 2 below lean_cm_large: audio-each 0.09 % larger.)
    lean_keep_large: int = 2
    #: The lean search builds static candidates (bare and dense ids) only on the chain of the best
    #: context-mixing container (exact, built on all the values), and only when that chain's static
    #: estimate is within lean_static_within of its size: the static coders won by at most 0.3 %
    #: where they won, always on that chain (8 of 66 bench signals and unseen recordings,
    #: estimates 0.98 to 1.03 times the size, and one at 1.15: alsa-Front_Center, 25 B larger).
    #: (Built always: 37 B smaller in all on the bench sets, unseen recordings and texts, for
    #: +3.3 % of level 2's CPU, benchmarks/settings_cost.py.)
    lean_static_within: float = 1.03
    #: ... and only when their near-exact size (:func:`~ubpe.planner.fast.layouts`: the stream's
    #: cost from one statistics pass, no coder run, "mag" at two rates: at most about 0.6 % above
    #: the coder's; plus the params) is at most lean_static_exact_within times that container's.
    #: On the bench sets, unseen recordings and texts, 29 inputs came this far: where the static
    #: candidates won (5, by 0.003 to 0.27 %) their near-exact size was 0.997 to 1.0004 times the
    #: context mixer's; elsewhere up to 0.0047 above their exact size. 1.004 skips 11 of the 29
    #: codings (seismic: 1.0049, a mag and a rans pass, about a fifth of its compress time).
    lean_static_exact_within: float = 1.004
    #: ... and those static candidates are level 1's (:func:`~ubpe.planner.fast.costed_candidates`:
    #: the layout that sizes least near exactly, offered the coders within fast_exact_close of
    #: it) instead of both layouts offered every static coder (:func:`~ubpe.planner.candidates.bare_candidates`):
    #: the same bytes on the 93 inputs of benchmarks/sizes.py, /work/unseen2 and the weather
    #: recordings; level 2's compress 1.08x faster on seismic, 1.12x on audio
    #: (benchmarks/results/level2-search-3.md).
    lean_static_costed: bool = True
    #: Beyond lean_static_finalists_above values (full_fit: where the exhaustive search sized a
    #: sample before), every context-mixing finalist gets its static candidates, under the
    #: near-exact check alone (lean_static_exact_within; no estimate check: on a small share
    #: of the values the estimates missed by 4 %). speech-allison (586 790 values): the static
    #: coder wins on "delta1+adaptive", 0.44 % smaller than on "lpc+adaptive", the context
    #: mixer's best chain; an AR(2) signal of 544 288 values in loudness steps of 4 000 (tests/
    #: test_level2_long.py): "lpc" static 679 800 B, its estimate on the screen's sample
    #: 705 742, "cms2" on it 682 949.
    lean_static_finalists_above: int = 1 << 19
    #: Beyond full_fit values the lean search screens the chains on lean_long_screen values
    #: (screen_windows windows) instead of screen_sample: on speech-allison (586 790 values) the
    #: 2**14-value screen ranked "delta1+adaptive", whose static container wins, third (no
    #: finalist); 2**16 and 2**17 (also in 16 windows, and 2**18) ranked it second. With 2**17
    #: and the settings below, the containers of the recordings searched this way (unseen
    #: seis-0438, seis-kw1, seis-sts2, speech-allison, the groups of eeg64, music-oxygen and
    #: drum-hihat24) are the exhaustive search's or up to 0.027 % smaller.
    lean_long_screen: int = 1 << 17
    #: ... and sizes its context-mixing finalists on lean_long_cm_sample values in
    #: lean_long_windows windows (instead of lean_cm_sample_large in screen_windows: on
    #: music-oxygen's left channel, 645 517 values, 2**13 values in 4 windows rated "lpc" 1.2 %
    #: ahead of "lpc+adaptive", 4.5 % behind on all the values: its level-2 container 1.2 % larger
    #: than the exhaustive search's; 2**15 in 16 or 4 windows and 2**16 or 2**17 in 16 chose
    #: "lpc+adaptive", 306 055 B, the exhaustive search 306 061; CPU 0.59 s at 2**15, 0.82 at 2**16).
    lean_long_cm_sample: int = 1 << 15
    lean_long_windows: int = 16
    #: The lean search's context-mixing finalists: the smallest estimate(s) and those within
    #: lean_close of the last of them. (3 % ran "cms2" on two or more chains for 15 of the 31 audio files
    #: searched lean; at 1 % the containers of the bench sets and of the unseen recordings are the
    #: same; the smallest alone: seis-ayt-bhz 0.9 % larger.) The lean search builds no level-1
    #: candidate (merges): merges won at level 2 on none of the bench inputs.
    lean_close: float = 1.01
    #: ... lean_close_large from lean_cm_large values, where the lean_keep_large smallest are
    #: finalists anyway. 1.0 there drops ECG's third finalist (its chain through all the values
    #: and "cms2" on its sample): ECG 1.12x faster, the same containers on the bench sets, unseen
    #: recordings and texts, but 100 000 values of the ECG excerpt times 4 plus noise of +-20
    #: 0.73 % larger ("delta1" ranked third, then smallest); so 1.01 (lean_close 1.0 below
    #: lean_cm_large as well: audio-each/30 1.9 % and seis-ayt-bhz 0.9 % larger).
    lean_close_large: float = 1.01
    #: The first chain (raw values) is a finalist within screen_first_within of the smallest; its
    #: estimate overrates raw values by up to a third (seis-mola-acc 1.35, seis-ale-vhz 1.29;
    #: neural0 1.05, where it wins), so within lean_first_check its exact level-1 proxy decides.
    #: (Without it: neural24-each 0.1 % larger, three of its recordings 0.6 to 1.1 %.)
    lean_first_check: float = 1.5
    #: Beyond lean_small values the first chain is a context-mixing finalist on those two rules
    #: (screen_first_within, lean_first_check) only when its values have at most
    #: lean_raw_distinct distinct values a value (:func:`~ubpe.planner.estimates.raw_learnable`). "cms2" beats prediction
    #: on raw values by learning which value follows which (its order-1 and order-2 contexts): a
    #: context seen fewer than ~20 times on average teaches it little. Where raw values won (the
    #: neural recordings, on a coarse inexact grid) they had 0.001 to 0.003 distinct values a value;
    #: the audio files, ECG and EEG the rule drops, 0.09 to 0.72, and lost by 0.4 to 11 % where built.
    lean_raw_distinct: float = 0.05
    #: The context mixer gets the dense ids unless the bare ids' estimate times lean_dense_bias is
    #: at most theirs: "cms2" gains more from dense ids than the static coders (audio2: static
    #: sizes 0.8 % apart, "cms2" 6 % smaller on dense ids). Bias 1.0: audio +0.25 %; 1.01:
    #: +0.07 %; 1.02: +0.004 %, against the exact static sizes' choice.
    lean_dense_bias: float = 1.02
    #: Level 2 plans level 1 too (the package docstring's step 6) only when the lean search's
    #: estimate of level 1's container (:func:`~ubpe.planner.lean.level1_estimate`: 0 where level
    #: 1 may train merges) is at most level1_within times level 2's container (inf: always, level
    #: 2 never larger than level 1). Level 1's plan was 16-27 % of level 2's compress time. On the
    #: bench sets and the unseen recordings (64 inputs) level 1 won on one, eeg-plux (14 B of
    #: 310 752; estimate 0.83 times level 2's container); the estimate is 0.97 to 1.16 times level
    #: 1's exact size where it was within 10 % of it; at 0.98 level 1 is planned on 20 of the 64
    #: (merges possible: 15), at 1.0 on seismic too (estimate 0.988, level 1 1.7 % larger).
    level1_within: float = 0.97
    #: Up to level1_always_upto values level 2 plans level 1 whatever the estimate (its fast plan
    #: costs a few milliseconds there, and the lean search of a short input, short_lean_upto,
    #: may rank out the candidate level 1 codes): level 2 is never larger than level 1 on short inputs
    #: (at 1 << 10, 3 of 236 slices of 1 025 to 2 048 values were 1 to 21 B larger than level 1:
    #: the estimate rule, level1_within, did not plan it; about 2 ms a call more there).
    level1_always_upto: int = 1 << 11
    #: Up to min(short_lean_upto, lean_above) values level 2 runs the lean search widened
    #: (:func:`~ubpe.planner.lean.short_settings`) instead of the exhaustive one: every chain estimated and a context-mixing finalist, dense
    #: ids for the context mixer wherever they fit, every finalist's static candidates whose
    #: near-exact size is within short_static_exact_within of the best so far (no merges, no
    #: probe), level 1 planned always (level1_always_upto). The exhaustive search spent 20-50 us a
    #: value there (557 values of audio percussion-10: 21 ms, a training probe, static coders
    #: and two context-mixing layouts on 7 chains). On 261 slices of 300 to 1 000 values (the
    #: 32 audio files, ECG, seismic, the unseen recordings: benchmarks/short_slices.py) the same
    #: bytes in all (183 742 B) with short_static_exact_within 1.05; the lean
    #: search's default margins instead: +0.28 % (up to +11 % on a slice: chains and layouts
    #: ranked out). 0: the exhaustive search there, as before.
    short_lean_upto: int = 1 << 10
    short_static_exact_within: float = 1.05
    #: ... and, of those, only the finalists whose static estimate is within
    #: short_static_estimate_within of the best so far get the near-exact sizing (0.6 ms a chain
    #: on 557 values; the lean search beyond: lean_static_estimate_within, no check). On the 261
    #: slices: 1.2 the same bytes, 1.1 3 B more on one (the first 300 values of audio cembalo-11).
    short_static_estimate_within: float = 1.2
    lean_static_estimate_within: float = float("inf")
    #: Level 1 plans integers wider than a byte by estimates and codes one container
    #: (:func:`~ubpe.planner.fast.fast_plan`, step 1c); off, by the exhaustive search of steps 1
    #: to 4 (every chain's candidates coded: 10 to 30 times slower, level-1 sizes within 0.1 % on
    #: the bench signals and unseen recordings, -0.003 % in all).
    fast_level1: bool = True
    #: Level 1 (:func:`~ubpe.planner.fast.fast_plan`) screens the chains on all the values up to
    #: fast_whole values (the screen's sample beyond: its LPC analyses then cost a second pass),
    #: estimates those within fast_prune of the smallest order-0 size, and puts through all the
    #: values the one of smallest estimate and, of the next fast_keep - 1, those within
    #: fast_close of it (fast_refit_close when the screen ran their "lpc" stage without its
    #: refit, which gained up to 3 %: acc-plux, mult+lpc 2.8 % behind mult+delta1 on the
    #: sample unrefitted, 2.7 % ahead refitted). fast_close lets near ties through: events the
    #: sample misses rank them on all the values (a 16-bit walk that wraps: "grid+delta1" 0.1-0.3 %
    #: ahead of "delta1" on the sample, 0.56 % behind on all the values). (fast_prune 1.05: the same
    #: bytes on the bench signals, float-q and the 28 unseen recordings, ECG 14.0 -> 13.4 ms, but
    #: the 800 wide floats of tests/common.py's fuzz samples 3 663 -> 3 828 B: the float modes are
    #: compared by level 1's plans, 1.1 kept them.)
    #: (fast_keep 3 -> 2, fast_rank_close 1.05 -> 1.02 and fast_size_clear 1.03 -> 1.01, issue 28's
    #: pruning pass: the same level-1 bytes on the 112 inputs of the bench sets, both unseen sets
    #: and the weather set; compress 3-7 % faster on ECG and seismic, 1-3 % on the short audio
    #: files: benchmarks/results/level1-prune.md.)
    fast_whole: int = 1 << 14
    fast_prune: float = 1.2
    fast_keep: int = 2
    fast_close: float = 1.003
    fast_refit_close: float = 1.03
    #: Up to fast_whole values (the screen saw them all), the chains within fast_rank_close of the
    #: smallest static estimate (at most fast_keep) are ranked by their near-exact sizes
    #: (:func:`~ubpe.planner.fast.layouts`): the static estimates misranked chains by 1.4-5 %
    #: on 2 000-4 000-value inputs (grid+lpc, lpc against delta2, grid+delta1).
    fast_rank_close: float = 1.02
    #: Beyond fast_whole values, level 1's screen rates a chain's dense ids alone for "mag" where
    #: they fit (:func:`~ubpe.planner.fast._layout_pass`; the bare ids' "rans" estimate as before):
    #: the bare ids' counts, a second "mag" pass over the sample, ranked the chains no differently
    #: (the chains kept are sized on all the values, both layouts). The same level-1 bytes on the
    #: 112 inputs of benchmarks/level1_census.py; compress 4 % faster on ECG, 7 % on seismic
    #: (benchmarks/results/level1-planner.md). False: both layouts rated.
    fast_screen_dense_only: bool = True
    #: Level 1 counts a chain's bare and dense ids for "mag" in one pass where their magnitudes
    #: differ on at most 1/64 of the values (:func:`ubpe._kernels.layoutpair.pair_stats`: the
    #: bare ids' counts as the dense ids' plus corrections where a magnitude or a running mean
    #: differs; the same counts). ECG's "lpc" residual 923 -> 495 us, seismic's 284 -> 156 us.
    #: False: a mag_stats pass a layout.
    fast_pair_stats: bool = True
    #: Level 1 codes the chain's bare and dense ids both only when neither estimate is more than
    #: fast_layout_clear times the other's, and offers both static coders only when neither is
    #: rated fast_coder_clear times the other. On the
    #: bench signals and the unseen recordings, 1.01 against 1.03: +0.002 % in all (audio
    #: +0.03 %), a second coding (a "mag" pass of 15 ns a value) avoided on most inputs; 1.0
    #: (one candidate, one coder): audio +0.15 %.
    fast_layout_clear: float = 1.01
    fast_coder_clear: float = 1.01
    #: Of the layouts and coders, those whose static estimate is more than fast_size_clear times
    #: the best are not sized near exactly (:func:`~ubpe.planner.fast.layouts`).
    fast_size_clear: float = 1.01
    #: Level 1 sizes its chain's layouts and coders near exactly (no coder run:
    #: :func:`~ubpe.planner.fast.layout_costs`) and codes those within fast_exact_close of the
    #: smallest.
    fast_exact_close: float = 1.006
    #: Level 1's "lpc" stages cost fast_lpc_candidates orders (3 elsewhere) on one chunk of 256
    #: samples in fast_lpc_costed_every (every one elsewhere): on the bench signals and the unseen
    #: recordings +0.011 % in all (+0.08 % on the audio files), the analysis 2-3 times faster.
    fast_lpc_candidates: int = 1
    fast_lpc_costed_every: int = 4
    #: Level 1's "lpc" stages solve a block again without the Levinson recursion's white-noise
    #: floor (1e-9 of its energy) where it predicts the block to below this fraction of its
    #: energy, and cost both solutions' orders (:func:`ubpe.frontend.lpc.lpc_forward`'s
    #: ``high_gain``): a smooth, oversampled signal (a 20 Hz broadband seismometer, a 1 Hz one)
    #: whose spectrum spans more than the floor's 90 dB loses its high-order predictors to it
    #: (seis-tly-bhz: level 1 11 842 -> 11 132 B, ratio 4.28 -> 4.56 against FLAC -8's 4.52;
    #: seis-anmo-lhz -0.54 %; the 93 inputs of benchmarks/sizes.py -0.017 %). Level 2 keeps the
    #: floor: its "adaptive" stage after "lpc" did better on the floored predictors (+0.005 %).
    fast_lpc_high_gain: float = 1e-4
    #: Level 1's "lpc" stages try these block lengths (None: the stage's own,
    #: :data:`ubpe.frontend.lpc.LPC_BLOCKS`) and refit (``reweight``) only with fast_lpc_reweight.
    fast_lpc_blocks: tuple[int, ...] | None = None
    fast_lpc_reweight: bool = True
    #: Level 1's "mag" streams of more than fast_mag_rate_sample tokens choose their running-mean
    #: rate on a sample (:data:`ubpe.coders.mag.RATE_SAMPLE_ABOVE`, 2**18, at the other levels):
    #: the counts of seven rates over every token were 9 % of level 1's time on ECG. At 2**15 on
    #: the bench signals and unseen recordings: see benchmarks/results/level1-fast.md.
    fast_mag_rate_sample: int = 1 << 15
    #: Level 1's "mag" coder takes the counts its sizing made of the chosen ids
    #: (:func:`~ubpe.planner.fast.layouts`, the rates of estimate_rates) instead of counting them
    #: again (:attr:`ubpe.coders._base.Tokens.mag_stats`): the same bytes, a pass over the ids
    #: less when the coder picks one of those rates (seis-kw1-ehz, 936 001 values: 6.5 ms of
    #: 81). False: counted again.
    fast_reuse_mag_stats: bool = True
    #: Level 1's plan (:func:`~ubpe.planner.fast.fast_plan`) keeps the "lpc" stage's analyses by
    #: content (:func:`ubpe.frontend.lpc.analysis_cache`) only with fast_lpc_cache: on the bench
    #: signals (each), float-q and the 28 unseen recordings none was looked up again (368 lookups,
    #: 0 found), and each lookup hashed its channel (0.22 ms on ECG's 108 000 values). The same
    #: bytes either way (the cache only saves analyses).
    fast_lpc_cache: bool = False
    #: A blocked level-1 container's blocks run the "lpc" stage with level 1's search (as its
    #: plan on the sample did; unseen ecg-systole, 1.5 M values in 2 blocks: 206 -> 177 ms,
    #: +53 B); off, with the stage's own (3 orders costed on every sample: the writer before).
    fast_blocks_lpc: bool = True
    #: The "lpc" stage's refit where the residual's loudness moves (``reweight``: an "lpc" stage
    #: that ends its chain, :func:`ubpe.frontend.lpc.lpc_reweight`; the planner hands it these
    #: through :meth:`lpc_reweight_options`). A residual's coded cost is estimated with one
    #: geometric law per lpc_local_span samples (the coders follow its loudness: "mag"'s running
    #: mean, "cms2"'s magnitudes context), and its local scale for the weights is its mean
    #: magnitude over lpc_reweight_span samples (centred), plus one. A block is refitted only
    #: when the loudness of its residual moves: its cost per lpc_local_span samples is below its
    #: cost under one geometric law for the whole block by at least lpc_reweight_gate bits a
    #: sample. The refit makes lpc_reweight_iterations weighted least-squares passes (each weighs
    #: by the previous pass's residual) on at most lpc_reweight_equations equations (every
    #: ``step``-th sample's of a longer block), and is kept when its cost per lpc_local_span
    #: samples (coefficients included) is lower by more than lpc_reweight_margin bits a sample.
    lpc_local_span: int = 64
    lpc_reweight_span: int = 16
    lpc_reweight_iterations: int = 2
    lpc_reweight_equations: int = 1024
    lpc_reweight_gate: float = 0.05
    lpc_reweight_margin: float = 0.05
    #: Level 1 trains merges only on the chains whose output (on the screen's values) has at
    #: least fast_merge_repeats pairs of consecutive values a distinct pair, and consecutive values
    #: that share at least fast_merge_information bits (:func:`~ubpe.planner.fast.merges_may_pay`);
    #: there a training run on them rates merges (:func:`~ubpe.planner.fast.merged_ratio`).
    #: Where merges won at level 1 (respiration-systole, spo2-plux, repeated motifs) 8 to 1 000
    #: pairs a distinct pair and 0.36 to 6 bits on the winning chain; the chains of many distinct
    #: pairs are ruled out (most of the bench signals'), whose information the pair counts
    #: cannot judge; those below 0.3 bits gained nothing from merges (ECG, seismic: 0.07-0.28).
    fast_merge_repeats: int = 8
    fast_merge_information: float = 0.3
    #: ... and level 1's own plan (:func:`~ubpe.planner.fast.fast_plan`; the lean search of level 2
    #: keeps fast_merge_repeats) rates merges only where its ids have at least
    #: fast_merge_plan_repeats pairs a distinct pair on 2**14 ids, in proportion on fewer or more
    #: (:func:`~ubpe.planner.fast.plan_repeats`; never fewer than fast_merge_repeats). On the bench
    #: signals and unseen recordings (screen samples of 2**14 values) the chains rated had 7.6 to
    #: 683 pairs a distinct pair: merges were kept at 110-683 (respiration-systole, spo2-plux),
    #: rated and never kept at 7.6-44 (the 24 neural files at 8-12, rated 0.86-0.92 and their
    #: candidates built and costed; ECG's first 20 000 values, acc-plux, ppg-heartpy3,
    #: ppg-systole). 32: the same bytes on every one of them, ECG[:20000] 7.7 -> 5.7 ms. 0: the
    #: plan before (fast_merge_repeats alone). (Not in proportion, 32 missed the motifs of
    #: tests/test_planner.py's blocked model, 11 pairs a distinct pair on a 2 048-value sample:
    #: 25 820 B against 1 899 B.)
    fast_merge_plan_repeats: float = 32.0
    #: The training run that rates merges takes fast_merge_sample values (windows of them); merges
    #: rated above fast_merge_gain (their cost over the cost without) are not built: where they
    #: won, 0.4 to 0.85 (respiration-systole, spo2-plux); ppg-heartpy3's "lpc", rated 0.98, built
    #: a candidate larger than the one without.
    fast_merge_sample: int = 1 << 12
    fast_merge_gain: float = 0.95
    #: Level 1 trains a rated chain's merges on all its values only while a pair occurs at least
    #: fast_merge_min_count times (the fit's min_count when larger): a merge's table entry costs
    #: about two ids' bits, which a pair seen two or three times seldom repays. The run's merges
    #: are those of the run to min_count 2 but near the cut (its last batches differ: 163 of 184,
    #: 554 of 559 in common on test signals); best_prefix's ladder starts from fewer. On the
    #: held-out data the prefixes kept ended at counts of 7 (respiration-systole), 18 (solar),
    #: 71 (spo2-plux); spo2-plux trained 2 457 merges and kept 88. The exhaustive search (bytes,
    #: text) stops its run for the static coders there too (propose at level 1): the same bytes on
    #: the 115 inputs of level1_census.py, music-xblast-intro8 19 189 -> 7 088 merges trained.
    fast_merge_min_count: int = 4
    #: A chain's merges are trained on all its values only when a training run on probe_sample
    #: of them keeps some (:func:`~ubpe.planner.replay.probe`).
    probe_sample: int = 1 << 14
    #: best_prefix's ladder for the probe: does any prefix beat none?
    probe_ladders: tuple[float, ...] = (4.0,)
    #: Level 2 also offers the context mixers the dense ids of :func:`~ubpe.planner.candidates.dense_cm_candidate` when the
    #: values have at least this many distinct values (fewer cost a few bytes to list).
    dense_cm_alphabet: int = 256
    #: :func:`~ubpe.planner.estimates.static_estimate`'s running-mean rates of the "mag" model (the coder tries
    #: ``MIN_RATE..MAX_RATE``; the estimate takes the better of these two).
    estimate_rates: tuple[int, ...] = (3, 5)
    #: The encoding methods :func:`choose_method` tries for a candidate with merges, in order (ties:
    #: the earlier). "optimal" (fewest tokens) is not tried: see docs/format.md, "Writer choices".
    encode_methods: tuple[str, ...] = ("replay", "bits")
    #: Segmentations "bits" runs, each priced by the previous stream's token frequencies (the
    #: first by replay's): a second pass still shrinks the container a little, more passes hardly
    #: (benchmarks/README.md, "Encoding method").
    bits_passes: int = 2
    #: The encoding methods level 1's plan by estimates (:func:`~ubpe.planner.fast.fast_plan`)
    #: tries for a candidate with merges, instead of encode_methods: "bits" re-encoded every value
    #: twice (a fifth of level 1's time on the unseen spo2-plux) for 96 B of its 24 698 B, the only
    #: input of the bench signals and unseen recordings whose level-1 container it changed.
    fast_encode_methods: tuple[str, ...] = ("replay",)
    #: Lossless floats (:mod:`ubpe.planner.floats`): bits of prediction residual the chain keeps
    #: per value; the rest go raw (a decimal mode's ``shifts``, a binary mode's grid above the
    #: lowest bit).
    float_modelled_bits: int = 12
    #: The float modes are estimated on this many values, all channels together (all of them up
    #: to this many, else float_sample_windows evenly spaced windows of frames).
    float_sample: int = 1 << 16
    float_sample_windows: int = 16
    #: Largest share of exceptions a float mode may have to be considered.
    float_max_exception_share: float = 0.25
    #: Largest adjustment in ulps of the decimal mode's "adj" stream (0: no adjustments tried).
    float_adjust_ulps: int = 64
    #: The float candidates (with their variants) compressed to decide, on about float_measure
    #: values, all channels together (float_measure_windows windows of frames of a longer input).
    float_finalists: int = 3
    float_measure: int = 1 << 14
    float_measure_windows: int = 4
    #: Float values of a one-stream "floatdec" container, up to this many, are also written as a
    #: "floatpack" container (:mod:`ubpe.coders.floatpack`: no model, alphabet or front end; their
    #: decimal integers at one width), kept when smaller: a short series' container (0: never).
    float_packed_max_values: int = 1 << 16
    #: Level 3 (``ubpe.level3``): a recording of at most level3_search_whole values has its
    #: parameters searched by ``ubpe.level3.search.greedy`` on a prefix of it (the proxy: its
    #: first max(level3_search_prefix, level3_search_share x frames) frames, the whole recording
    #: when that is all of it; a short recording is all warm-up, which the prefix holds), with
    #: max(level3_search_evals, level3_search_floor / the proxy's values) codings of the proxy
    #: (at most 64); a candidate is kept when it codes the proxy level3_search_margin smaller than
    #: the best so far (exact, no margin, when the proxy is the whole). One coding is about 0.55 M
    #: values/s and the front-end chains and the final coding take about 2: the defaults (the
    #: proxy coded twice, the defaults and the first move) keep level 3's encode near 0.2 M values/s
    #: on the 32 short audio files (benchmarks/bench_level3_search.py measures the trade-off:
    #: results/level3-search-speed.md). level3_search_floor = 0 restores the search of containers
    #: written before the whole-recording search (none below level3_front_frames, chunks above);
    #: floor 2**19, prefix 2**16, share 1, evals 1, order_db 1e9, front_frames 8192 the exact
    #: whole-recording search of commit 08dcb7d (2.5 % smaller audio, 10 x slower).
    level3_search_floor: int = 1 << 12
    level3_search_whole: int = 1 << 16
    level3_search_prefix: int = 2048
    level3_search_share: float = 0.25
    #: 3 (2 before; results/level3-budget.md): the faster kernel's time spent on a third coding of
    #: the prefix, its moves ordered below. Alternated against main (bench_level3_ab.py): the 32
    #: audio files 0.161 % smaller (13 smaller, 3 larger), encode 0.259 -> 0.221 M values/s CPU;
    #: unseen -0.007 % (3 recordings, ppg-systole -4.8 %); ECG, seismic, neural the same bytes.
    #: 4 codings: the audio 0.202 % smaller, encode about 0.8x of main's (below 0.21 on a busy machine).
    level3_search_evals: int = 3
    #: ... the moves (``search.MOVES`` by name) the search on the prefix tries first, in
    #: this order (after the move a cue puts first, ``search.plan``; the rest in MOVES'
    #: order; () : MOVES' order). Each move coded alone from the search's start on the whole
    #: recording, the 47 of at most 65 536 values (audio, seismic, unseen): steps x2 and short
    #: window / 2 help most (summed gain 15.8 % and 14.0 %; best of the first two 0.60 % a
    #: recording on the mean against 0.44 % with MOVES' order), long NLMS / 2 helps 27. Not
    #: "regularization / 16": it wins most on the prefix but not on the whole (seis-ale-vhz
    #: +14.9 %, electric-piano-3 +1.4 %, trumpet-1 +1.9 % when the prefix chose it).
    level3_search_proxy_moves: tuple = ("steps x2", "short window / 2", "long NLMS / 2")
    #: ... or these when the recording's power is at least level3_search_smooth_db decibels above
    #: its first difference's (``search.smooth_db``: oversampled, low-pass signals; the 32
    #: audio files score -4 to 17 dB, the unseen biosignals 16 to 49, where steps x2 never helped
    #: by more than 0.1 % and regularization x16 up to 4.7 % (ppg-systole), steps / 2 0.8 %; a
    #: low-pitched tone scores high too: steps x2 stays among them). 1e9: never.
    level3_search_smooth_db: float = 15.0
    level3_search_smooth_moves: tuple = ("regularization x16", "steps x2", "steps / 2")
    #: The search starts from order 64 over a short window (the defaults not measured) when it
    #: predicts the recording this many dB better than order 32 (``search.order_gain_db``:
    #: more resonances than order 32 follows; on the () chain of the shared and unseen data it
    #: picked 10 recordings, all 0.4-11 % smaller with order 64, none larger; 1.17 % smaller audio
    #: against 0.91 % with order 64 only tried first), and tries it first from level3_search_order_db
    #: (a large value: never).
    #: 1.5 (2.5 before; with the order-64 move of order 64 solved every 64 frames over t1 = 13 and the
    #: short order 32 every 32 frames, was order 64 every 64 over t1 = 12): 3 more of the 32 short audio files
    #: (gummy-cat-2 1.7 dB, electric-piano-3 1.7, chord-7 2.2), none of the other recordings of at
    #: most 65 536 values (at most 0.54 dB).
    level3_search_order_db: float = 1.5
    level3_search_order_start: float = 1.5
    #: ... and then codes the proxy this many times fewer (``search.spare_codings``: from
    #: order 64, a further move helped few of the tonal audio files, and each coding is of order 64:
    #: 1 against 0 on the 32 short audio files 0.04 % larger, 10 % less CPU (with order 32 of the short
    #: least squares solved every 16 frames); the same bytes elsewhere).
    level3_search_order_spare: int = 1
    #: ... and the least-squares mix per hold state first (on chunks of a longer recording too)
    #: when this share of its frames repeat the one before (``search.hold_share``; above
    #: 1: never). Held values: 0.29-0.88 of the frames of 4 unseen biosignals (SpO2, respiration,
    #: EDA, a BVP), at most 0.23 of any other recording of the shared and unseen data.
    level3_search_hold: float = 0.25
    #: ... and from level3_long_cascade's NLMS stages (Sac's lengths, 512/256/32 taps, and its
    #: recent-past power, powr = 1) in place of the defaults' 256/32/8 when ``search.long_period``
    #: says the recording is a sustained tone whose period is longer than 256 frames: the
    #: strongest autocorrelation peak at lags 32-1024 beyond 256, of the values at least
    #: level3_period_raw of their power and of their order-32 LPC residual at least
    #: level3_period_residual, on at least level3_period_frames frames (a stage must span the
    #: period; percussive or noisy sources and short recordings lose with long stages, and the
    #: prefix the search codes misjudges them: tried as a move on it, audio +0.018 %).
    #: The whole encoder started there on every one of the 32 audio files: +0.504 % (25 larger:
    #: gummy-cat-2 +3.8 %, prompt +2.1 %; 6 smaller: klavichord-4 -5.0 %, trumpet-1 -0.5 %);
    #: 512/128/16 +0.284 %, with powr 1 +0.235 %. The cue fires on klavichord-4 (-5.01 %; at
    #: 4 096 frames, on cockchafer-gentleman-1 too, -0.15 %): the audio -0.24 % (bench_level3_ab.py); on no other
    #: recording of at most level3_search_whole values of the shared, unseen, unseen2 and weather
    #: data (longer ones are searched on chunks, without ``search.plan``: the same bytes).
    #: Such a recording decodes about a quarter slower (klavichord-4 0.51 -> 0.39 M values/s
    #: CPU) and encodes 0.27 -> 0.19. level3_period_raw above 1: never.
    level3_long_cascade: tuple = (("n1", 512), ("n2", 256), ("n3", 32), ("powr", 1))
    level3_period_raw: float = 0.5
    level3_period_residual: float = 0.1
    #: (8 192 frames: 16 times the long first stage's 512 taps, which must converge before they
    #: pay; on cockchafer-gentleman-1, 4 425 frames, the cue fired for -0.15 % and 0.3 less speed)
    level3_period_frames: int = 8192
    #: The parameters the search chose for a sustained tone (``search.tonal``: the autocorrelation
    #: of the order-32 prediction error peaks at lags 2-1024 at least level3_tonal_peak, on at
    #: least level3_tonal_frames frames, its autocorrelation swings at least level3_tonal_swing and
    #: the prediction gains at least level3_tonal_gain dB, all on the front-end chain's output;
    #: percussion, noise, random walks and smooth biosignals stay below 0.12) then take the long
    #: least squares' solve refined by level3_tonal_olsr rounds at 46 bits (``olsr``, version 7) and a ridge 2**-level3_tonal_reg times as large
    #: (``search.tonal_change``; results/level3-tonal.md). level3_tonal_peak above 1: never.
    #: Level 3's least squares on the values minus their running mean (``dcm``, version 8) where
    #: the working zero (the middle of a channel's range) lies at least level3_dc_ratio median
    #: deviations from the mean (``search.dc_ratio``) and the search's sample codes smaller with it
    #: (one coding more there); the running mean's rate 2**-level3_dc_rate (``search.dc_change``;
    #: results/level3-sac-gap-2.md). level3_dc_ratio above 1e6: never.
    level3_dc_ratio: float = 1.5
    level3_dc_rate: int = 10
    #: ... and, where that cue is silent (on a prefix search, ``encoder._fast_parts`` too), the
    #: same coding tried where the order-32 prediction gain is below
    #: level3_dc_trial_db decibels (a broadband, noise-like signal: ``search.dc_trial``; kept when
    #: smaller by the search's margin; results/level3-heldout-peers.md). 0: never.
    level3_dc_trial_db: float = 30.0
    level3_tonal_peak: float = 0.12
    level3_tonal_frames: int = 4096
    level3_tonal_swing: float = 0.45
    level3_tonal_gain: float = 10.0
    level3_tonal_olsr: int = 2
    level3_tonal_reg: int = 2
    #: ... and, where the search kept the default NLMS power (powr 19), the search's sample coded
    #: once more with powr = level3_tonal_powr (1: Sac's, the power weighted towards the recent
    #: past, which follows a tone's attack, note changes and decay), kept when smaller by the
    #: search's margin (only where the plan has ``encoder.DC_MIN_EVALS`` codings). Audio -0.044 %
    #: (trumpet-1 -0.49 %, cockchafer-gentleman-1 +0.18 %), the other groups the same bytes;
    #: applied blind, without the coding, audio +0.005 % (piano-3 +0.28 %): results/level3-sac-gap-3.md.
    #: 0: never.
    level3_tonal_powr: int = 1
    #: ... coded in that one coding with the long least squares' memory of Sac's OLS: its
    #: forgetting period ``t1`` = level3_tonal_t1 (15: the sums halved every 384 frames, Sac's
    #: lambda 0.998 a memory of about 500) and its ridge 2**-level3_tonal_trial_reg times as large
    #: again (before ``search.tonal_change``'s): a held tone drifts in pitch and level (vibrato, a
    #: decay of 30 dB in pipe's second half) faster than 768 frames of halving follow, and its
    #: sums are well conditioned. Kept as a whole or not at all (one coding, as before), only
    #: where the tone's order-32 prediction gains less than level3_tonal_trial_gain dB (real
    #: instruments 15-35 dB; noise-free synthetic tones, 38 dB, took the smaller ridge on the
    #: prefix and grew 1.6-3.5 %): else the power alone. results/level3-sac-gap-5.md.
    #: level3_tonal_t1 0: the power alone, always.
    level3_tonal_t1: int = 15
    level3_tonal_trial_reg: int = 2
    level3_tonal_trial_gain: float = 34.0
    #: A sustained tone of at least level3_period_frames frames whose held part (its second half)
    #: has a period longer than the first NLMS stage's taps over level3_held_spans (the stage spans
    #: fewer than that many periods: pipe's 162 frames, trumpet-1's 122 against 256 taps;
    #: ``search.held_period``: the order-32 prediction residual of the second half, its
    #: autocorrelation's peak at least level3_period_residual) has a first stage of level3_held_n1
    #: taps tried on a sample of the held part (``encoder._held_choice``): the frames from
    #: level3_held_end - 2 level3_held_part to level3_held_end of the recording, each vector coded
    #: from cold, the first level3_held_part a warm-up, the rest counted; kept when smaller. The
    #: search's prefix is the onset, where a stage spanning several periods loses (its slower
    #: start) what it gains in the held part. The sample's two codings (3/16 of the recording) are
    #: paid by level3_held_spare codings fewer of the search's prefix and, unless
    #: level3_held_chains, by the front-end chains with stages not compared (block LPC, for spectra
    #: that change fast; a held tone's do not: ``encoder._held_tone``). On the 32 audio files: 6
    #: smaller (pipe -0.83 %, trumpet-1 -0.63 %), none larger, the same encode speed
    #: (results/level3-sac-gap-6.md). level3_held_n1 0: never.
    level3_held_n1: int = 384
    level3_held_spans: float = 2.5
    level3_held_end: float = 0.75
    level3_held_part: float = 0.09375
    level3_held_spare: int = 1
    level3_held_chains: bool = False
    #: ... and, where the search on its prefix ran (``encoder._search_whole``), its NLMS cascade
    #: fitted to that period (``search.held_cascade``): the second stage level3_cascade_spans
    #: periods long (at most 256 taps and the first stage's), the short least squares' memory
    #: t2 + level3_cascade_t2 and, with level3_cascade_bias, the bias stage on, coded once on the
    #: search's prefix before the tone's refinement and kept when smaller by the margin, where the
    #: held part's residual peak (``search.held_lag``) is at most level3_cascade_peak (above: an
    #: excitation that repeats exactly, which the first stage predicts alone)
    #: (results/level3-tone.md; trumpet-1 -0.91 %, pipe -1.0 %). level3_cascade_spans 0: never.
    #: Where it is kept, the first NLMS stage's step times level3_cascade_mu1 and the last's times
    #: level3_cascade_mu3 (``search.cascade_steps``) are coded once more on the held part's sample
    #: (``encoder._held_choice``) and kept when smaller. Either 0: never.
    level3_cascade_spans: float = 1.5
    level3_cascade_t2: int = 1
    level3_cascade_peak: float = 0.8
    level3_cascade_bias: bool = True
    level3_cascade_mu1: float = 0.75
    level3_cascade_mu3: float = 2.0
    #: A longer recording's search (on chunks of it) codes about this many values per value of
    #: the recording (1.5 in containers before: 2.75-3 codings in all, below 0.2 M values/s; 0.75:
    #: the defaults and two candidates on a recording of at most 131 072 frames, whose chunks are
    #: n/16 frames; a longer one's chunks are capped by level3_search_chunk, so the same budget
    #: buys more codings: 35 on a 1.5 M-value ECG, the rest spent by a greedy descent).
    level3_search_budget: float = 0.75
    #: ... on SEARCH_CHUNKS chunks of n / 16 frames but at most this many (``ubpe.level3.encoder._search``;
    #: the rest of the budget buys more candidates: a recording of more than 16 x this many
    #: frames gets more than three codings; 1 << 30: the chunks before). 8 192 against 16 384:
    #: ecg-systole (1.5 M values) 0.91 % smaller than the defaults whole (t2 = 6 and the NLMS
    #: steps halved, found by the descent) against 0.17 %; the seismometers the same choice,
    level3_search_chunk: int = 1 << 13
    #: ... and at most this many for held values (``search.hold_share`` at least
    #: level3_search_hold: the least-squares mix per hold state learns each state on its share
    #: of a chunk): respiration-systole (1.5 M values, 0.29 of its frames held) 10.6 % smaller
    #: than the defaults whole with 16 384, 6.9 % with 8 192,
    level3_search_chunk_held: int = 1 << 14
    #: ... block LPC (``lpc``, forward-adaptive: no warm-up) on chunks measured this much larger
    #: than it codes them (the other predictors' long memories start empty on a chunk: on 15
    #: recordings of 68 k to 2.4 M values, LPC's chunks of 4 096 to 16 384 frames said it 1.0-1.3 %
    #: smaller, on the mean, than the whole recording did),
    level3_search_lpc_margin: float = 0.01
    #: ... and with the codings left after CANDIDATES and the best two combined, a coordinate
    #: descent (``search.greedy``, MOVES) from the best on the chunks (False: none).
    level3_search_descent: bool = True
    #: ... and, before that descent, ``encoder.QUIET_BACKGROUND`` (a ridge 16 times smaller and a
    #: first NLMS stage of 128 taps: a broadband background's) after CANDIDATES, where the plan has
    #: a coding for it (False: not tried, the bytes before).
    level3_search_quiet: bool = True
    #: ... and, after the search on chunks, the first NLMS stage's length and the long least
    #: squares' memory judged on one long piece from the middle of the recording
    #: (``encoder._piece_choice``): 2 x level3_piece frames, the first half a warm-up; the chosen
    #: vector, then "long NLMS x2" (up to LONG_MEMORY's 1 024 taps: longer ones cost decode speed)
    #: and "long window x2" in turn, each kept when smaller by level3_piece_margin. A stage of
    #: 256-512 taps on a stationary background converges over tens of thousands of frames: a chunk's
    #: 4 096 frames of warm-up misjudge it (seis-kw1: n1 512 -0.015 % on the chunks, -0.20 % on the
    #: piece, -0.19 % whole). Only where the piece's codings (three of 2 x level3_piece frames) are at
    #: most level3_piece_share of the recording's frames (524 288 frames and more);
    #: results/level3-sac-gap-7.md. level3_piece 0: never.
    level3_piece: int = 1 << 15
    level3_piece_share: float = 0.375
    level3_piece_margin: float = 0.0002
    #: ... and, where the search on chunks kept the defaults (``dcm`` aside) for one channel of a
    #: wide range (no value model, no exact-value contexts: none of their samples coded) of at most
    #: level3_ridge_values values whose order-32 prediction gains at least level3_ridge_gain dB (a
    #: well-predicted source: its covariance's small pivots are what the ridge biases; a 1 Hz
    #: seismometer at 20 dB refused the trial, speech at 48 kHz, 29 dB, took it), the whole
    #: recording coded once more with the long least squares' solve refined (``olsr`` =
    #: level3_tonal_olsr, version 7), a ridge 2**-level3_ridge_reg times as large and the memory's
    #: code ``t1`` level3_ridge_t1 lower (2 lower halves it; ``encoder._ridge_trial``), the smaller
    #: record kept (exact: the final coding is one of the two). A chunk of n / 16 frames is mostly
    #: warm-up, where a smaller ridge and a shorter memory look worse than they are (a ridge 16
    #: times smaller +5.5 % on alsa-Front_Center's chunks, -0.31 % whole); the chunks said nothing,
    #: so the whole decides once. alsa-Front_Center 43 651 -> 43 348 bytes (Sac 43 386); one coding
    #: more (about 1.2 us a value): results/level3-sac-gap-8.md. 0: never.
    level3_ridge_values: int = 1 << 17
    level3_ridge_reg: int = 6
    level3_ridge_gain: float = 24.0
    level3_ridge_t1: int = 3
    #: The search on a prefix, where it ends with ORDER_MOVE's short least squares (many
    #: resonances: order 32 solved every 32 frames) and ``search.dc_change`` codes nothing, tries in
    #: that coding's place the short least squares solved every 16 frames with the second NLMS stage
    #: twice as long (``encoder._fast_parts``), kept when smaller by the margin. On the 32 audio
    #: files: 6 smaller (trumpet-12 -0.56 %, chord-7 -1.12 %), none larger.
    #: results/level3-sac-gap-7.md. False: never.
    level3_order_trial: bool = True
    #: Level 3's front-end chains (block LPC, "mult") are compared on the search's proxy where
    #: level3_front_on_proxy says so (below), else on the middle
    #: max(level3_front_frames, frames / 8) frames (the second half counted); a recording of
    #: fewer frames is coded whole with each chain (8 192 in the containers before: 6 144 saves
    #: 0.15 codings of the short audio files for 0.08 % of their size); the sample is at most
    #: level3_front_share of the frames (0.5: 3 % faster on the short audio, 0.09 % larger).
    level3_front_frames: int = 6144
    level3_front_share: float = 0.5
    #: A recording of at least this many frames whose parameters the search measures on a prefix
    #: shorter than it (``search.proxy_plan``) has its chain chosen on that prefix (its
    #: second half counted), each chain coded with the parameters the search starts from
    #: (``ubpe.level3.front._choose_front_proxy``): the winner's coding is the search's first, no
    #: sample is coded for the chains alone, no recording coded whole with each chain (above
    #: level3_search_whole values: never; a large value: never, the chains' sample or whole
    #: codings above). 0 against never, alternated: the audio 0.179 -> 0.207 M values/s (CPU),
    #: 0.084 % larger (0.011 % with level3_front_proxy_skip 0.75); seismic the same bytes; the
    #: unseen recordings of at most 65 536 values 0.46 % smaller (one seismometer).
    level3_front_on_proxy: int = 0
    #: ... the chains compared on the prefix less this share of it at its start (the models' warm-up,
    #: which favours block LPC: it has none). Alternated on the recordings of at most 65 536 values:
    #: 0.75 against 0.5 the audio 0.073 % smaller (3 recordings change), seismic and unseen the same
    #: bytes; 0.25 the audio 0.076 % larger.
    level3_front_proxy_skip: float = 0.75
    #: ... and a chain with stages chosen only when it codes that part this much smaller than the
    #: chain without (within it the prefix does not tell them apart: on the 45 recordings of at
    #: most 65 536 values chosen on the proxy, block LPC against () differs between the prefix and
    #: the whole recording by 1.8 % on the median, either way; the () chain is the simpler).
    #: Alternated: 0.01 against 0 the audio 0.17 % smaller (cembalo-1 and pisk-down-cink back
    #: to (), electric-piano-3 1.1 % larger), seismic and unseen the same bytes; 0.02 the audio
    #: 0.16 % larger than 0.01 (trumpet-12 loses block LPC).
    level3_front_proxy_margin: float = 0.01
    #: Level 3's work before its final coding, bounded (``search.budget_plan``; issue 29's
    #: 0.2 M values/s on every recording): the front-end chains compared on the search's prefix
    #: and the search's codings of it take at most level3_search_work codings of the recording
    #: (a coding runs at 0.4-0.5 M values/s and is about 86 % of the encode's time on a short
    #: recording: the final coding and one more keep the encode near 0.2; 0: unbounded, the
    #: containers before, which spent 2.5-6 codings on recordings of 2 000 to 5 000 values and 10
    #: on percussion-10's 557). Over it: fewer codings, then a shorter prefix (not below
    #: level3_search_min_prefix frames), then fewer codings again (down to the start's alone).
    #: The chains with stages are coded on level3_front_proxy_part of the prefix, at least
    #: level3_front_part_min frames (``search.chain_part``: on 768 frames block LPC looked
    #: better than it codes cembalo-11, 7 % larger whole; on 1 024 not), and compared with the
    #: chain without on the same frames by its payload's length frame by frame (no coding more),
    #: and only on recordings of at least level3_front_stages_frames frames (on the 26 audio and 5
    #: unseen recordings below 20 000 values they won on none below 8 192 frames, on seis-tly-bhz's
    #: 12 684 by 14 %); the value model (``vmod``) is decided on the search's first coding of its
    #: prefix (the model on, its saving counted: no coding more) where level3_vmod_on_proxy
    #: (else by a coding of the first level3_vmod_sample frames: a whole coding more of a
    #: recording of at most 2**14 frames). Kernel values coded per value of the input, against
    #: the containers before: the audio 2.05 -> 1.75 (every recording at most 2.0, percussion-10
    #: 10 -> 1), +0.026 % bytes (percussion-12 +2.6 %, percussion-10 +1.0 %, gummy-cat-2 +0.5 %,
    #: cembalo-3 +0.4 %, cembalo-10 and -11 +0.2 %; work 1.25 with the stages on every length:
    #: +0.027 %, 2.25 codings of five of them); the unseen the same bytes (acc-plux and
    #: ecg-plux-1k 2.9 and 2.8 -> 2.1, seis-tly-bhz 3.0 -> 2.1); min_prefix 256: cembalo-11 +7 %.
    level3_search_work: float = 1.0
    #: ... lowered, where ``ubpe.level3.cost``'s deterministic model of the encoder's CPU time (the
    #: recording's shape and whether the exact-value contexts' sample will be coded) predicts an
    #: encode below issue 29's floor (0.2 M values/s), to the work that predicts 0.24, at least
    #: level3_search_model_least codings (``cost.search_share``; results/level3-floor.md). False:
    #: level3_search_work everywhere (the bytes before).
    level3_search_model: bool = True
    level3_search_model_least: float = 0.25
    #: ... the model counting, on a recording of at most level3_search_model_final frames where the
    #: contexts' sample will be coded, the final coding with the contexts too (``cost.XCTX_NS`` a
    #: value more: the contexts the sample keeps; ``encoder._search_shares``); the contexts' sample
    #: then keeps the frames of the plan before (a shorter sample flips their choice on
    #: temp-seattle and temp-sf: results/level3-floor.md), only the search's prefix and codings are
    #: cut. Up to 12 288 frames, the shared and held-out recordings whose sample the cue predicts
    #: are hourly or minutely weather, which keep the contexts; from 15 000 frames on, held
    #: biosignals, which mostly do not, and whose search a cut costs up to 56 % (eda-bitalino;
    #: results/level3-floor-4.md). 0: the model of results/level3-floor.md (the bytes before).
    level3_search_model_final: int = 12288
    level3_search_min_prefix: int = 1024
    level3_front_proxy_part: float = 0.5
    level3_front_part_min: int = 1024
    level3_front_stages_frames: int = 8192
    level3_vmod_on_proxy: bool = True
    #: Level 3's chains chosen on a middle sample (recordings above level3_search_whole values,
    #: ``level3.front._choose_front``): the chains with stages coded on this share of the sample (at
    #: least level3_front_part_min frames), against the chain without on the same frames by its
    #: payload's length frame by frame (1: each chain on all of the sample, as before). Against 1
    #: on the 51 recordings above 65 536 values (ECG, 24 neural, unseen, unseen2): kernel values
    #: coded per value 2.00 -> 1.94 (acoustic-plux 2.36 -> 2.11), the same bytes but
    #: seis-anmo-lhz's +0.09 % (level 2's size, which the container then is).
    level3_front_sample_part: float = 0.5
    #: Level 3, recordings whose chain is chosen on a middle sample (``level3.front._choose_front``):
    #: when a chain with stages codes the sample smaller than () at the default parameters, ()
    #: is coded once more with ``level3.LONG_MEMORY`` (a 1 024-tap NLMS stage, longer memories)
    #: and kept when that is smaller still (block LPC's residual loses the long partials of
    #: sustained band-limited music: results/level3-music.md). False: the chains at the
    #: defaults only (main before h/l3music).
    level3_front_long: bool = True
    #: Level 3's search on chunks: parameters with an NLMS stage of ``level3.LONG_MEMORY``'s length
    #: (1 024 taps) or more are measured this much larger (on chunks such a stage looked 0.56 %
    #: better on ecg-systole of /work/unseen-data and coded it 0.8 % larger whole; on music 1.1 to
    #: 2.8 % better on chunks and 1.8 to 4.7 % smaller whole: results/level3-music.md).
    level3_long_margin: float = 0.0075
    #: compress(level=3) codes the values with the level-3 coder first, then builds level 2's
    #: container too (the planner's search and coding) and keeps the smaller only where level 2
    #: may win or costs little beside level 3 (``planner.level3_pair.level2_wanted``): input of
    #: more than one channel, of at most level3_level2_small values or at least
    #: level3_level2_values (there level 2 costs 15-35 % of level 3's time; on the short audio
    #: files 30-70 %, its planner's fixed cost), and between them when the level-3 container takes
    #: at most level3_level2_bits bits a value (low-entropy signals with held values: an unseen EDA
    #: at 0.59 bits a value codes 10.6 % smaller at level 2; the audio takes 3.8-10.6). Alternated
    #: against building level 2 always (benchmarks/bench_level3_ab.py --compress, results/level3-skip.md):
    #: the 32 audio files 0.163 -> 0.219 M values/s (CPU), +0.044 % bytes: canary-long 0.12 % and
    #: cockchafer-gentleman-1 2.67 % larger than level 2's container; unseen +0.004 %: bvp-plux
    #: 0.04 %, ecg-plux-1k 0.20 %, seis-ale-vhz 0.57 % larger; ECG, seismic, neural the same bytes.
    #: On main 5d51d22 (level-3 version 4): audio 0.167 -> 0.205, the same bytes; unseen +0.001 %
    #: (seis-ale-vhz 0.27 % larger than level 2's container, the only one).
    #: level3_level2_small = 2**62: level 2 always.
    level3_level2_small: int = 1 << 11
    level3_level2_values: int = 1 << 16
    level3_level2_bits: float = 2.0
    #: compress(level=3) of more than one channel (``ubpe.api.level3_groups``): each channel
    #: grouping is measured with level 2's container of each group; the level-3 coder codes a
    #: grouping's groups (each keeping the smaller of its two containers) only when level 2's
    #: groups' bytes times the level-3 coder's ratio on the one stream (its bytes over level 2's)
    #: are within this share of the smallest container so far (a large value: every grouping).
    level3_group_margin: float = 0.005
    #: ... where the groups' level-3 bytes are estimated as level 2's times that ratio to the
    #: power level3_group_gain_share: the one stream's level-3 gain over level 2 is partly its
    #: cross-channel prediction, which groups split apart do not keep. The share kept, measured
    #: (log of the groups' level-3 bytes over level 2's, over the log of the stream's): acc3-cacc
    #: alone 0.38, as pairs 0.80; weather-pvgis-tmy alone 0.43; weather-tmy3-greensboro alone
    #: 0.51; solar-bsrn-payerne 2+1+1 0.73. At 1 (the whole gain, before) the estimates were 2 to
    #: 7 % too small: the level-3 codings of 4 groupings and the samples of 5 (stereo audio) that
    #: bought nothing but 0.06 % on solar-bsrn (results/level3-groups-cost.md). A grouping being
    #: coded is also given up once its coded groups project it past that bound
    #: (``ubpe.api.level3_groups._coded_while_it_may_win``).
    level3_group_gain_share: float = 0.5
    #: ... and, on a recording of at least level3_group_sample_frames / level3_group_sample_most
    #: frames, a grouping passing that test is first estimated on a sample (the middle
    #: max(level3_group_sample_frames, level3_group_sample_share x frames) frames): each group's
    #: level-3 size is the one stream's level-3 container scaled by the level-3 coder's payload of
    #: the group's sample over that of the stream's sample (the smaller of it and the group's
    #: level-2 container); its groups are coded in full only when that estimate is within
    #: level3_group_sample_margin of the smallest container so far (``ubpe.api.level3_groups``).
    #: The groups' payload over the stream's, on the sample against the whole (unseen2): drum-cymbal16
    #: 1.0004 / 1.0000, drum-kick24 1.055 / 1.044, jingle 1.019 / 1.001, drum-hihat24 1.0053 / 1.0064,
    #: music-oxygen-login 0.9962 / 0.9917, acc3's channels alone 0.958 / 0.956, solar's 1.0064 /
    #: 0.9974 (2+1+1 channels; level 2's groups won): errors up to 1.8 %, so a grouping the coder
    #: wins on by less than that may be missed (none of these: the same bytes).
    level3_group_sample_frames: int = 1 << 13
    #: (The channels alone over the stream, coder payloads, middle sample against whole: 1/8 of
    #: music-oxygen-login 0.9962 against 0.9917 whole, but 1/16 1.0004: its channels alone, 0.82 %
    #: smaller, missed; 4 or 8 windows spread evenly erred more (drum-hihat24 1.07-1.08 against
    #: 1.0064); 4 096 frames missed acc3's channels alone, 1.0023 against 0.956.)
    level3_group_sample_share: float = 0.125
    #: (most 0.2: acc3's sample, 27 % of its frames, cost more than the codings it saved: 0.081 ->
    #: 0.067 M values/s at 0.5.)
    level3_group_sample_most: float = 0.2
    level3_group_sample_margin: float = 0.0
    #: A longer recording's parameters are measured on chunks of it: a candidate is chosen when
    #: it codes them this much smaller than the defaults. 0.005 (the containers before) missed
    #: the ECG's least-absolute-errors fit (0.46 % smaller whole); 0.002 changed 3 of 39
    #: recordings of 65 536 to 1.5 M values, each smaller (the ECG, a neural file, a PPG).
    level3_search_margin: float = 0.002
    #: The level-3 bytes' version (``ubpe.level3``): 10 (version 9 and more values of each
    #: neighbouring channel in OLS1, ``xlags``, written only where they are on); 9 (version 8 and the value model's code
    #: classes, ``vcls``, written only where they are on); 8 (version 7 and the least squares on the
    #: values minus their running mean, ``dcm``, written only where it is on); 7 (version 6 and the refined least-squares
    #: solve, ``olsr``, written only where it is on); 6 (version 5 and the exact-value contexts,
    #: ``xctx``, written only where they are on); 5 (version 4 with the NLMS weights in Q20
    #: and their updates rounded to nearest, ``nlmsq``); 4 (version 3 with the stage mix blended with
    #: fixed experts, ``mixb``, and no bias estimates in the mix by default); 3 (version 2 and the
    #: value model, ``vmod``); 2 (a compact parameter field, a third least-squares predictor and
    #: the APMs' rate as parameters) and 1 write their versions' bytes.
    level3_version: int = 10
    #: Version 10: OLS1 takes this many values of the other channel, not two, where a recording
    #: has two channels that move together (``ubpe.level3.encoder._with_cross_lags``; 0 or 2: two,
    #: version 9's bytes). The search's parameters fixed, on 100 000 frames: music-oxygen-login
    #: -1.76 % at 8 (-1.80 % at 16), drum-hihat24 -0.69 % (-1.17 %), drum-kick24 -0.93 % (-1.17 %),
    #: jingle-psi-email -0.11 % (-0.25 %); the least-squares state grows from (32 + 2)**2 to
    #: (32 + 8)**2 (results/level3-cross-lags.md).
    level3_cross_lags: int = 8
    #: Version 6's exact-value contexts (``xctx``, ``ubpe.level3.encoder._choose_xctx``) are tried,
    #: on symbol ranges of at most 4 096, on this many first frames of a recording (one coding
    #: with them, the kernel counting what they saved; 0: never, version 5's bytes), where the
    #: sample's ``encoder.pair_recurrence`` is at least ``level3_xctx_recur`` (most audio is below 0.1,
    #: the hourly humidity of the PVGIS year 0.36: a coding less on recordings that values do not
    #: recur in).
    level3_xctx_sample: int = 1 << 13
    level3_xctx_recur: float = 0.3
    #: ... and its ``encoder.successor_recurrence`` at least this (a value the successor of the
    #: previous value's last occurrence: weather recordings and their channels alone 0.072 to 1, the
    #: seismic, EEG and chime records that pass ``level3_xctx_recur`` but whose contexts save nothing
    #: 0.019 to 0.054: their sample, a coding at twice a plain one's cost, spared; percussion-50 0.109
    #: and music-xblast 0.128 save nothing either but overlap weather channels, so are still sampled;
    #: results/level3-floor-5.md). 0: the bytes before.
    level3_xctx_successor: float = 0.06
    #: The full contexts (``xctx`` = 1, where the decoder's model keeps its floor) only where the
    #: encoder's model (``encoder._full_contexts_encode_ns``: the final coding at the decoder's model's
    #: ns, the contexts' sample, the least search) also keeps ``cost.ENC_MARGIN`` times the floor;
    #: else the lighter set (xctx = 2: a 0.42 against 0.28-0.30 M values/s final coding on temp-seattle
    #: and temp-sf; results/level3-floor-4.md). False: the decoder's model alone (the bytes before).
    level3_xctx_encode_floor: bool = True
    #: ... and kept when they save at least this share of the sample's bytes (they slow the coder
    #: about 3-fold: the ECG, 0.05 % smaller with them, decoded 3.6 times slower).
    level3_xctx_gain: float = 0.02
    #: Where ``_choose_xctx``'s sample would be at least this share of a recording's frames (a short
    #: recording whose sample is capped by the search's prefix: surfrad's 1 024 of 1 440), the contexts
    #: are decided on the final coding with ``xctx`` = 2 itself (``encoder._encode_xctx_final``), kept
    #: where they are chosen: no sample coded (surfrad: 11 of 35 ms); where they are not, the final
    #: coding is coded again. 0: never (always the sample; results/level3-floor-5.md).
    level3_xctx_in_final: float = 0.5
    #: Version 3's value model (``vmod``, ``ubpe.level3.encoder._choose_vmod``) is tried, on symbol ranges
    #: of at most 4 096, on this many first frames of a recording (one coding with the model, the
    #: kernel counting what it saved; 0: never, the bytes of version 2's model). 2**13 to 2**15
    #: frames decided alike on the ECG, the 24 neural and 11 unseen recordings of narrow range but
    #: one (ppg-heartpy2, on from 2**14); on: the 24 neural files (their 64-step grid's values
    #: unevenly hit), acc-plux, three PPGs.
    level3_vmod_sample: int = 1 << 14
    #: Version 9's code classes (``vcls``, ``ubpe.level3.encoder._choose_vcls``): the value model
    #: with this many low bits of the values as classes and its evidence as a correction of the
    #: coder's stretch, tried (a coding of the first ``level3_vcls_sample`` frames each way, or one
    #: where the value model is off, the kernel counting what it saved) where
    #: ``search.code_classes_cue`` finds the values' residues mod 8 uneven by at least
    #: ``level3_vcls_cue`` bits a value on a channel whose quartiles lie at least 32 codes apart
    #: (and the exact-value contexts' gates do not pass: values that recur)
    #: (an ADC's differential nonlinearity: code widths that follow a pattern over the low bits;
    #: a smooth density that wide gives even residues); kept when it codes the sample smaller by
    #: ``level3_vcls_margin`` of its bytes and 16 bytes. 0: never (version 8's bytes).
    level3_vcls_bits: int = 6
    level3_vcls_cue: float = 0.01
    level3_vcls_margin: float = 0.002
    level3_vcls_sample: int = 1 << 13
    #: Level 3's front-end chain (``ubpe.level3.front._choose_front``) and value model choices code, for a
    #: recording of more channels than this, this many of its channels spread evenly
    #: (``ubpe.level3.measure._channel_sample``; 0: all): with all of them, the choices cost 1.8 codings
    #: of a 64-channel EEG (9 760 frames: its whole length for the value model), on top of one.
    level3_sample_channels: int = 8
    # Channel groups (ubpe/api/groups.py: a grouped container, one stream per group of channels,
    # tried for integer input of more than one channel and kept when smaller).
    #: False: never tried (the one-stream container as before; benchmarks compare the two).
    channel_groups: bool = True
    #: Channels join a group when the correlation of their first differences is at least this
    #: (on group_sample frames, in group_windows windows).
    group_correlation: float = 0.5
    group_sample: int = 1 << 12
    group_windows: int = 4
    #: Up to this many channels, "each channel alone" is a candidate too.
    group_alone_channels: int = 32
    #: A grouping of more groups than this is not measured (each group costs a planner's run).
    group_max_groups: int = 256
    #: From this many channels (0: never), one stream with the chain "decorrelate+delta1" is a
    #: candidate when the planner's own chain does not decorrelate (its screen ranks it on a
    #: sample). Off by default: on the 1 024-electrode array the groups are smaller anyway, and it
    #: took compress memory from 2.9 to 4.5 times the input and a whole compression more.
    group_decorrelate_channels: int = 0
    #: Level 2 keeps its one-stream container without measuring any grouping when the largest
    #: group of correlated channels holds at least this share of them and the container is one
    #: block (``ubpe.api.groups._joined``; above 1: always measure). On /work/unseen2 the
    #: groupings lost on every input where that group held 0.98-1.0 of the channels (drum-kick24
    #: +6.2 %, jingle-psi-email +0.26 %, eeg64-eegmmidb 63 of 64 channels +0.03 %; each a second
    #: compression of the values: 2.0-2.4x faster) and won where it held at most 0.67 (acc3-cacc
    #: -4.1 %, solar-bsrn -2.5 %, weather-tmy3 -4.6 %; drum-cymbal16, 0.5, lost by 0.06 %);
    #: the blocked stereo inputs see group_blocked_alone. Level 3 keeps its containers by the
    #: same rule on level 2's one stream (``ubpe.api.groups.smaller``): its groupings lost there
    #: too (level-3 estimates drum-kick24 +6.2 %, eeg64-eegmmidb +10.6 %, jingle's sample +1.6 %),
    #: and measuring them took 13-20 % of the compress (results/level3-groups-cost.md).
    group_joined_share: float = 0.9
    #: Level 2 writes the channels each alone, without the one-stream container, when that would
    #: be blocked (more than ``block_size`` values) and each channel alone fits one block
    #: (``ubpe.api.groups.blocked_alone``): the grouping ``groups.smaller`` chose on both such
    #: inputs of /work/unseen2 (music-oxygen-login 645 517 x 2: -4.6 %, drum-hihat24 576 000 x 2:
    #: -1.05 % against the blocked one stream), the same bytes without its compression.
    group_blocked_alone: bool = True
    #: ... from this many frames: on shorter inputs (short blocks) the blocked one stream can be
    #: the smaller (tests/test_groups_level2.py: a walk and a square wave, 6 000 frames in blocks
    #: of 7 000 values, 1 573 bytes blocked, 1 651 each alone; 40 000 frames: 7 856 and 7 224).
    group_blocked_alone_frames: int = 1 << 18
    #: Level 2's blocked container: when the plan on the sample (``sample`` values in
    #: ``windows`` windows) chose a static coder, the first block is also coded by the adaptive
    #: coders and the smaller packed block kept, and so is every later block when the first
    #: took an adaptive coder (``ubpe.api.writer.blocked_parts``). An adaptive coder gains on a
    #: block's length (2**20 frames) what it cannot on the sample: ecg-systole (1 536 570
    #: values, 2 blocks) "mag" was 80 B smaller on the sample, "cms2" smaller in both blocks,
    #: -1 839 B (benchmarks/results/level2-search-3.md). Never larger, block by block; the cost
    #: is "cms2" on the first block, and on the others where it took it (ecg-systole: 0.57 ->
    #: 0.94-1.09 s CPU). False: the plan's coders alone.
    blocked_adaptive_offered: bool = True
    #: The "hold" coder (``ubpe.coders.hold``) is offered a stream only when its most frequent
    #: token is at least this share of its tokens: it models holds and steps, and on a stream of
    #: few holds each token costs a step decision more than an order-0 coder (at 60 M tokens/s it
    #: costs little to try). Sizes: benchmarks/results/weather.md.
    hold_min_share: float = 0.5
    #: Values on a grid coded as the values divided (tests/test_grid_values.py,
    #: benchmarks/bench_grid_values.py): "grid" followed by every chain the grid's indices get
    #: (:func:`ubpe.planner.auto_chains`), the grid's indices put where the predictors see the
    #: values divided (``ubpe.frontend.grid``), "cms2" offered the byte-valued outputs of wider
    #: values (``ubpe.api.writer``), level 3's chains after "grid" for channels on grids of their
    #: own (``ubpe.level3``). False: the writer before (the three ``GRID_CHAINS``, the least value
    #: as offset), which the fixtures frozen before it record. A 24-bit drum hit on a grid of 16:
    #: level 1 12 939 -> 11 801 B, level 2 11 793 -> 11 636 B (divided: 11 782, 11 617 B).
    grid_divided: bool = True
    #: With several channels all on grids, only the grid's chains are offered from this many
    #: frames; fewer frames also get the chains on the values themselves, since the grid's
    #: record (16 to 25 bytes a channel) can outweigh what it saves (15 channels of 15 int8
    #: values in {0, 2}: 199 B grouped with only the grid's chains at level 1, 50 B without).
    grid_only_frames: int = 1024

    def lpc_reweight_options(self) -> dict[str, int | float]:
        """The refit's tuning (lpc_local_span and lpc_reweight_*) as the keywords of
        :func:`ubpe.frontend.lpc.lpc_reweight` (and the "lpc" stage's ``reweight_options``)."""
        return {"local_span": self.lpc_local_span, "span": self.lpc_reweight_span,
                "iterations": self.lpc_reweight_iterations, "equations": self.lpc_reweight_equations,
                "gate": self.lpc_reweight_gate, "margin": self.lpc_reweight_margin}


#: The settings ``compress`` uses unless :func:`configured` says otherwise.
DEFAULT = Settings()
_CURRENT: contextvars.ContextVar[Settings] = contextvars.ContextVar("ubpe_planner_settings", default=DEFAULT)


def current() -> Settings:
    """The settings in force in this context (:data:`DEFAULT` unless :func:`configured`)."""
    return _CURRENT.get()


@contextlib.contextmanager
def configured(**changes: object) -> Iterator[Settings]:
    """Within the block, :func:`current` gives the current settings with ``changes`` (field
    names of :class:`Settings`; an unknown one raises ``TypeError``)."""
    new = dataclasses.replace(current(), **changes)
    token = _CURRENT.set(new)
    try:
        yield new
    finally:
        _CURRENT.reset(token)
