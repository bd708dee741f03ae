"""Level 1's plan: decide by estimates, code once (the package docstring, step 1c)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

import msgpack

from .. import frontend
from .._kernels import l1plan as _l1plan
from .._kernels import layoutpair as _pair
from .._kernels import npsum as _npsum
from .._kernels import level1 as _k
from .._kernels import tally as _tally
from ..coders import mag, packed_width, rans
from ..format import container
from ..format.fields import alphabet_field
from ..frontend import Stage
from ..frontend.lpc import LpcStage
from ..alphabet import Alphabet
from .candidates import (STATIC_CODERS, Candidate, CostFunction, bare_candidates, dense_fits, dense_mag_fits,
                         forward_shared)
from .candidates import windows as window_take
from .estimates import estimate_parts, likely_coders, log2_of, log2_table, order0_bytes, value_counts
from .replay import ReplayEncoder, auto_max_merges, best_prefix, train
from .screening import screen_forward, whole_outputs
from .search import screen_sample
from .settings import Settings


def applies(x: np.ndarray, proposer: object, s: Settings) -> bool:
    """Whether :func:`fast_plan` plans ``x`` (``(channels, frames)``) at level 1: integers wider
    than a byte, the model's size automatic (bytes and text keep the exhaustive search, whose
    merges win there), unless ``s.fast_level1`` is off."""
    return (s.fast_level1 and type(proposer) is ReplayEncoder and proposer.n_tokens is None
            and x.dtype.kind in "iu" and x.dtype.itemsize > 1)


def level1_chains(chains: list[list[Stage]]) -> list[list[Stage]]:
    """The chains level 1 measures of those level 2 measures: the ones whose stages all decode
    fast (:func:`ubpe.planner.auto_chains` at level 1: the same, in the same order), or all of
    them when none does (a forced chain, which level 1 takes as it is)."""
    fast = [c for c in chains if all(st.fast_inverse for st in c)]
    return fast or chains


def with_settings(chain: list[Stage], s: Settings) -> list[Stage]:
    """``chain`` with its "lpc" stages refitting under ``s``'s tuning
    (:meth:`~ubpe.planner.settings.Settings.lpc_reweight_options`); the other stages as they are."""
    options = s.lpc_reweight_options()
    return [LpcStage(window=st.window, blocks=st.blocks, reweight=st.reweight, candidates=st.candidates,
                     costed_every=st.costed_every, reweight_options=options, high_gain=st.high_gain)
            if isinstance(st, LpcStage) and st.reweight and st.reweight_options != options else st for st in chain]


def fast_stages(chain: list[Stage], s: Settings, screen: bool = False) -> list[Stage]:
    """``chain`` as level 1 runs it: its "lpc" stages search fewer predictors
    (``s.fast_lpc_candidates`` orders costed on one chunk in ``s.fast_lpc_costed_every``:
    :func:`ubpe.frontend.lpc.lpc_forward`), and on the screen's sample of a longer input
    (``screen``) do not refit (no ``reweight``: it ranks chains about alike, at a third of the
    stage's time). The same format: only the writer's search differs."""
    out = []
    for st in chain:
        if isinstance(st, LpcStage):
            options = s.lpc_reweight_options()
            blocks = tuple(s.fast_lpc_blocks or st.blocks)
            reweight = st.reweight and s.fast_lpc_reweight and not screen
            key = (st.window, blocks, reweight, s.fast_lpc_candidates, s.fast_lpc_costed_every,
                   tuple(options.items()), s.fast_lpc_high_gain)
            found = _FAST_LPC.get(key)
            if found is None:
                if len(_FAST_LPC) >= _FAST_LPC_MAX:
                    _FAST_LPC.clear()
                found = _FAST_LPC[key] = LpcStage(window=st.window, blocks=blocks, reweight=reweight,
                                                  candidates=s.fast_lpc_candidates,
                                                  costed_every=s.fast_lpc_costed_every,
                                                  reweight_options=options, high_gain=s.fast_lpc_high_gain)
            st = found
        out.append(st)
    return out


#: :func:`fast_stages`' "lpc" stages by their options, built once a process (a stage is not
#: changed once built; the same options, the same stage: about 12 us a stage, and the repr of its
#: options in :func:`~ubpe.planner.candidates.stage_key` about 8 us more, several a plan).
_FAST_LPC: dict[tuple, LpcStage] = {}
_FAST_LPC_MAX = 64


@dataclass
class _LayoutPass:
    """The counts of :func:`ubpe._kernels.level1.layout_stats` over the values ``y`` (by two
    :func:`~ubpe._kernels.level1.mag_stats` passes, one a layout) and the histogram around it,
    shared by :func:`static_parts` and :func:`layouts` (``memo``)."""

    lo: int
    hi: int
    y: np.ndarray  #: the values (1-D integers); ``d = y - lo`` below, never made as an array
    counts: np.ndarray  #: histogram of d over the span
    used: np.ndarray  #: its non-zero cells (int64), in order: ``counts[counts > 0]``
    rank: np.ndarray  #: int32: a value's bare id, by d
    where: np.ndarray  #: the values present, less lo
    middle: int  #: the median of d
    has_dense: bool  #: the dense ids are sized for "mag" (:func:`dense_mag_fits`)
    dense_rans: bool  #: and for "rans" too (:func:`~ubpe.planner.candidates.dense_fits`)
    stats: np.ndarray | None  #: layout_stats' counts (None: a single value)
    raws: tuple[int, int]
    ids: np.ndarray | None = None  #: int32 ``rank[d]``, the bare ids (None: not made, a single value)
    #: layout ("bare", "dense") -> its "mag" options at the two rates (:meth:`mag_options`)
    options: dict = field(default_factory=dict, repr=False)
    #: the bare ids' "mag" counts were made (False: a screen that rated the dense ids alone,
    #: ``stats[:2]`` zero; :func:`static_parts` then rates no bare "mag")
    bare_counted: bool = True

    def mag_options(self, layout: str) -> tuple[np.ndarray, np.ndarray]:
        """:func:`ubpe.coders.mag.stream_options` of the layout's counts (``stats[:2]`` bare,
        ``stats[2:]`` dense), computed once: :func:`static_parts` rates the layouts by them and
        :func:`layouts` sizes them and hands them to the coder (the same counts: one
        ``mag_options`` pass, where each made its own)."""
        found = self.options.get(layout)
        if found is None:
            rows = self.stats[:2] if layout == "bare" else self.stats[2:]
            found = self.options[layout] = mag.stream_options(rows, self.y.shape[0])
        return found

    def mag_options_both(self) -> tuple[tuple[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]:
        """:meth:`mag_options` of "bare" and of "dense", in one ``mag_options`` pass where neither
        was made (the same numbers: each rate's row is costed from its counts alone; a context's
        row equal in both layouts, as about a third of the short audio files' are, is costed once)."""
        if not self.options and self.stats.shape[0] == 4:
            ces, tbitss = mag.stream_options(self.stats, self.y.shape[0])
            self.options["bare"], self.options["dense"] = (ces[:2], tbitss[:2]), (ces[2:], tbitss[2:])
        return self.mag_options("bare"), self.mag_options("dense")

    def bare_ids(self) -> np.ndarray:
        """``rank[d]`` (int32): :attr:`ids`, made here when the pass did not."""
        if self.ids is None:
            self.ids = np.empty(self.y.shape[0], np.int32)
            _tally.gather_offsets(self.y, self.lo, self.rank, self.ids)
        return self.ids


def _histogram(y: np.ndarray, memo: dict | None) -> tuple[int, int, np.ndarray] | None:
    """``(lo, hi, counts)`` of the values ``y`` (1-D integers): their least and greatest and the
    histogram of ``d = y - lo`` over the span (``np.bincount(d, minlength=hi - lo + 1)``; ``d``
    not made: :func:`ubpe._kernels.tally.offset_counts`); None when they span more than 2**22
    values or reach 2**63 (or are not integers, or none). Kept in ``memo`` by the array's identity (with the array: its id stays its), for
    :func:`fast_plan`'s value counts, :func:`_layout_pass` and :func:`small_ids` of one output."""
    key = ("histogram", id(y))
    if memo is not None and key in memo:
        return memo[key][1]
    found = None
    if y.shape[0] and y.dtype.kind in "iu":
        lo, hi = bounds(y, memo)
        if hi - lo < 1 << 22 and hi < 1 << 63:
            counts = np.zeros(hi - lo + 1, np.int64)
            # (np.bincount's numbers, one pass reading the values in their width; ECG's d = y - lo
            # took 864 KB of int64 an output, kept through the plan)
            _tally.offset_counts(y, lo, counts)
            found = (lo, hi, counts)
    if memo is not None:
        memo[key] = (y, found)
    return found


def bounds(y: np.ndarray, memo: dict | None = None) -> tuple[int, int]:
    """``(int(y.min()), int(y.max()))`` of the integers ``y`` (1-D, not empty), in one compiled
    pass where they are native and at most 32 bits (:func:`ubpe._kernels.l1plan.min_max`); kept
    in ``memo`` by the array's identity (with the array), as :func:`_histogram`'s."""
    key = ("bounds", id(y))
    if memo is not None and key in memo:
        return memo[key][1]
    if y.dtype.itemsize <= 4 and y.dtype.isnative and y.flags.c_contiguous:
        lo, hi = _l1plan.min_max(y)
        found = int(lo), int(hi)
    else:
        found = int(y.min()), int(y.max())
    if memo is not None:
        memo[key] = (y, found)
    return found


#: :func:`_value_counts` sorts the values where they span more than this many cells a value (and
#: no histogram of them is kept): a histogram's cells are zeroed and scanned, 8 bytes each (an
#: int32 seismic channel's screen sample, 16 384 values over 485 395 to 626 635 cells: about 1 ms
#: a chain for the histogram and its non-zero cells, against about 0.2 ms for a sort)
_SORT_SPAN = 16


def _value_counts(y: np.ndarray, memo: dict | None) -> np.ndarray:
    """:func:`~ubpe.planner.estimates.value_counts` of ``y`` (1-D integers, not empty), from
    :func:`_histogram` where it applies (the same counts: the histogram's non-zero cells), or
    where the values span more than :data:`_SORT_SPAN` cells a value and no histogram of them
    is kept, from their sorted copy (the same counts: its runs, :func:`ubpe._kernels.tally.run_counts`;
    the histogram is made if :func:`static_parts` asks for it)."""
    if (memo is None or ("histogram", id(y)) not in memo) and y.dtype.kind in "iu":
        lo, hi = bounds(y, memo)
        if hi - lo >= _SORT_SPAN * y.shape[0] and hi - lo < 1 << 22 and hi < 1 << 63:
            sorted_y = np.sort(y)
            out = np.empty(y.shape[0], np.int64)
            return out[:_tally.run_counts(sorted_y, out)]
    h = _histogram(y, memo)
    if h is None:
        return value_counts(y)
    counts = h[2]
    # (at most a non-zero cell a value, and nonzero_cells writes each cell at the next free place,
    # a zero one too: a value's cells and one more, not the span's)
    out = np.empty(min(counts.shape[0], y.shape[0] + 1), np.int64)
    return out[:_tally.nonzero_cells(counts, out)]  # (counts[counts > 0], one compiled pass)


def _layout_pass(y: np.ndarray, s: Settings, memo: dict | None, screen: bool = False) -> _LayoutPass:
    """The shared pass over ``y`` (1-D integers spanning at most 2**22, ``s.estimate_rates`` two
    rates), kept in ``memo`` by the array's identity (with the array itself: its id stays its).
    ``screen``: ``y`` is a screen's sample, rated and dropped (never sized by :func:`layouts`):
    where dense ids fit and ``s.fast_screen_dense_only``, the bare ids' "mag" counts are not made
    (``bare_counted`` False)."""
    if memo is not None and id(y) in memo:
        return memo[id(y)][1]
    n = y.shape[0]
    lo, hi, counts = _histogram(y, memo)
    # the ranks (np.cumsum(counts > 0, dtype=np.int32) - 1), the values present (np.flatnonzero),
    # their counts and the median (d's (n // 2)-th smallest: np.searchsorted(np.cumsum(counts),
    # n // 2, side="right")) in one compiled pass over the span (four numpy passes and their
    # temporaries took about 0.1 ms a chain on a short audio file's 65 536-value span)
    rank = np.empty(counts.shape[0], np.int32)
    where = np.empty(min(counts.shape[0], n), np.int64)  # (at most a value present a value)
    used = np.empty(where.shape[0], np.int64)
    a, middle = _l1plan.rank_present(counts, n // 2, rank, where, used)
    where, used = where[:a], used[:a]
    has_dense = dense_mag_fits(where.shape[0], lo, hi)
    dense_rans = has_dense and dense_fits(where.shape[0], lo, hi)
    stats, raws, ids = None, (0, 0), None
    bare_counted = True
    if where.shape[0] > 1 and screen and has_dense and s.fast_screen_dense_only \
            and where.shape[0] != hi - lo + 1:
        # the dense ids alone (d = y - lo about the median, no ids made): the screen ranks chains
        # by their smallest estimate, and the dense ids' "mag" is within a few per mille of the
        # bare ids' where both fit
        stats = np.zeros((4, _k.N_CONTEXTS, _k.N_BUCKETS), np.int64)
        rates = np.array(s.estimate_rates, np.int64)
        raws = (0, int(_k.mag_stats(y, lo + middle, rates, stats[2:])))
        bare_counted = False
    elif where.shape[0] > 1 and has_dense and where.shape[0] != hi - lo + 1 and s.fast_pair_stats:
        # both layouts' counts from the dense ids' pass, the bare ids' only where they differ
        # (:func:`ubpe._kernels.layoutpair.pair_stats`: the same counts and raw bits; no bare ids
        # made: :meth:`_LayoutPass.bare_ids` when asked); where their magnitudes differ on more
        # than 1/64 of the values (short noisy files), the two passes below
        stats = np.zeros((4, _k.N_CONTEXTS, _k.N_BUCKETS), np.int64)
        rates = np.array(s.estimate_rates, np.int64)
        raw_bare, raw_dense, paired = _pair.pair_stats(y, lo, rank, counts, int(rank[middle]), int(middle), rates, stats,
                                                       n // 64)
        if paired:
            raws = (int(raw_bare), int(raw_dense))
        else:
            stats = None
    if stats is None and where.shape[0] > 1:
        # layout_stats' counts, by one mag_stats pass a layout (magnitudes and classes first, then
        # both rates; 1.22 -> 0.85 ms on ECG's LPC residual)
        stats = np.zeros((4 if has_dense else 2, _k.N_CONTEXTS, _k.N_BUCKETS), np.int64)
        rates = np.array(s.estimate_rates, np.int64)
        ids = np.empty(n, np.int32)  # rank[d] (kept: layouts' bare ids, the same array, not made again)
        _tally.gather_offsets(y, lo, rank, ids)
        raw = int(_k.mag_stats(ids, int(rank[middle]), rates, stats[:2]))
        if has_dense and where.shape[0] == hi - lo + 1:  # every value of the span present: rank[d] is d
            stats[2:] = stats[:2]
            raws = (raw, raw)
        else:
            # the dense ids d = y - lo about their median: y about lo + middle, the same
            # differences token - center, so the same counts and raw bits (no d array made)
            raws = (raw, int(_k.mag_stats(y, lo + middle, rates, stats[2:])) if has_dense else 0)
    found = _LayoutPass(lo, hi, y, counts, used, rank, where, int(middle), has_dense, dense_rans, stats, raws, ids,
                        bare_counted=bare_counted)
    if memo is not None:
        memo[id(y)] = (y, found)
    return found


def static_parts(record: list[dict], y: np.ndarray, scale: float,
                 s: Settings, memo: dict | None = None, screen: bool = False) -> tuple[float, float, float, float]:
    """:func:`~ubpe.planner.estimates.estimate_parts` (the same four numbers but for the params,
    counted as a container packs them, :func:`params_bytes`), its "mag"
    statistics of the bare and the dense ids at the two rates of ``s.estimate_rates`` in one
    compiled pass (:func:`ubpe._kernels.level1.layout_stats`), the median from the histogram;
    values spanning more than 2**22 (or other rates) by ``estimate_parts`` itself. ``screen``:
    ``y`` is a screen's sample (:func:`_layout_pass`'s; the bare ids' "mag" part may be inf)."""
    n = y.shape[0]
    h = _histogram(y, memo) if len(s.estimate_rates) == 2 else None  # (None: no values, or a span beyond 2**22)
    if h is None:
        return estimate_parts(record, y, scale, s)
    lo, hi = h[0], h[1]
    span = hi - lo + 1
    params = params_bytes(record, memo)
    grows = frontend.growing_bytes(record)
    fixed = params - grows
    inf = float("inf")
    lp = _layout_pass(y, s, memo, screen)
    counts, where, has_dense, raws = lp.used, lp.where, lp.has_dense, lp.raws
    a = counts.shape[0]
    if a <= 1:
        return float(fixed + grows * scale + 8), inf, inf, inf
    # (c = counts as float64, lc = np.log2(c): float((c * lc).sum()) and float(np.minimum(lc + 2.0,
    # 8.0).sum()), the same floats in one compiled pass where every count has a place in the table)
    plogp, table = _npsum.order0_sums(counts, log2_table(), 8.0, 2.0)
    if plogp < 0.0:
        c = counts.astype(np.float64)
        lc = np.log2(c)  # (once for both sums: the same floats)
        plogp, table = (c * lc).sum(), np.minimum(lc + 2.0, 8.0).sum()
    order0 = n * log2_of(n) - float(plogp)  # (no BLAS: see pair_information)
    table = float(table)
    alphabet = gap_bits(where)
    if lp.bare_counted and has_dense:
        both = lp.mag_options_both()
        mags = (_mag_bits(both[0], raws[0]), _mag_bits(both[1], raws[1]))
    else:
        mags = (_mag_bits(lp.mag_options("bare"), raws[0]) if lp.bare_counted else inf,
                _mag_bits(lp.mag_options("dense"), raws[1]) if has_dense else inf)
    # "packed", which every stream is offered, where it beats the order-0 table (noise, short
    # streams): 102 int32 values of noise on a grid of 2 were ranked by the table alone, "grid"
    # rated 251 B and coded 211 B with "packed", "grid+delta1" rated 238 B and coded 256 B
    packed = 8.0 * _FRAMING["packed"]
    bare = (min(order0 + table, n * packed_width(a - 1) + packed) + alphabet, mags[0] + alphabet)
    dense = (min(order0 + table + alphabet if lp.dense_rans else inf, n * packed_width(span - 1) + packed),
             mags[1]) if has_dense else (inf, inf)
    rest = fixed + grows * scale
    return tuple(bits / 8.0 * scale + rest for bits in bare + dense)


def gap_bits(where: np.ndarray) -> float:
    """The bits of the gamma-coded gaps of the values present ``where`` (1-D increasing integers
    spanning less than 2**22): ``float((1.0 + 2.0 * np.floor(np.log2(gaps))).sum())`` of
    ``gaps = np.diff(where)`` as float64, the same float by fewer numpy passes: ``floor(log2(g))``
    is ``np.frexp``'s exponent less one for the integers ``g >= 1`` (tests/test_l1plan.py checks
    every one up to 2**23), and a sum of integers below 2**53 is exact in float64 in any order."""
    return float(_l1plan.gap_bit_count(where))  # (bit_length(g) is frexp's exponent: one compiled pass)


def params_bytes(record: list[dict], memo: dict | None = None) -> int:
    """The bytes a chain's recorded params take in a container (its stages and keys by number:
    :func:`ubpe.format.container.compact`; "lpc"'s keys spelt out took about 55 bytes more).
    ``memo``: :func:`fast_plan`'s, where the number is kept by the record's identity (with the
    record: its id stays its; the plan sizes a chain's params up to three times, and records
    are not changed once made)."""
    key = ("params", id(record))
    if memo is not None and key in memo:
        return memo[key][1]
    size = len(msgpack.packb(container.compact({"front": record}, None), use_bin_type=True))
    if memo is not None:
        memo[key] = (record, size)
    return size


def _framing(stream: dict, payloads: int) -> int:
    """The bytes of a stream map in a container besides its payloads: its keys and numbers by
    number, a bin header per payload (``payloads`` of them, most large: 5 bytes)."""
    return len(msgpack.packb(container.compact({"stream": stream}, 1), use_bin_type=True)) + 3 * payloads


#: The bytes of a stream map besides its payloads, about: "rans" (two), "mag" (three),
#: "packed" (one).
_FRAMING = {"rans": _framing({"coder": "rans", "n": 1, "k": 300, "q": 3, "pb": 16, "freq": b"", "payload": b""}, 2),
            "mag": _framing({"coder": "mag", "n": 1, "center": 300, "rate": 4, "pb": 12, "table": b"",
                             "payload": b"", "raw": b""}, 3),
            "packed": _framing({"coder": "packed", "n": 1, "width": 12, "payload": b""}, 1)}


@dataclass
class Layouts:
    """The static id layouts of a chain's output and what each costs (:func:`layouts`):
    ``costs`` maps ``("bare" | "dense", "rans" | "mag")`` to bytes; ``alphabet`` and ``ids``
    are the bare ids', ``dense`` the dense ids' alphabet and ids (None where they do not fit)."""

    costs: dict[tuple[str, str], float]
    alphabet: Alphabet
    #: the pass whose bare ids (:meth:`_LayoutPass.bare_ids`) are the bare layout's: :attr:`ids`
    bare: _LayoutPass
    #: ``(lo, hi, y)`` of the dense ids ``y - lo`` where they fit (``y`` the values), else None:
    #: :attr:`dense` makes them when asked (most outputs take the bare ids: ECG's 108 000 dense
    #: ids, an int32 array, were made and dropped)
    dense_span: tuple[int, int, np.ndarray] | None
    #: "bare" and "dense" -> the "mag" counts the sizing made of those ids, as the coder takes
    #: them (:attr:`ubpe.coders._base.Tokens.mag_stats`: ``{rate: (counts, raw bits, center,
    #: options)}``, the options :func:`ubpe.coders.mag.stream_options`' rows where the layout was
    #: sized for "mag", else None)
    mag_stats: dict[str, dict] | None = None

    @property
    def ids(self) -> np.ndarray:
        """The bare ids (int32), made when first asked where the layout pass did not make them
        (:func:`ubpe._kernels.layoutpair.pair_stats`: most outputs take the dense ids)."""
        return self.bare.bare_ids()

    @property
    def dense(self) -> tuple[Alphabet, np.ndarray] | None:
        """The dense ids' alphabet (every value of ``[lo, hi]``) and ids (int32 ``d``), or None."""
        if self.dense_span is None:
            return None
        lo, hi, y = self.dense_span
        ids = np.empty(y.shape[0], np.int32)
        _tally.offsets(y, lo, ids)  # (d = y - lo in int32, no int64 array first)
        return Alphabet.span(lo, hi), ids


def layouts(y: np.ndarray, s: Settings, parts: tuple[float, float, float, float] | None = None,
            memo: dict | None = None) -> Layouts | None:
    """The bytes each static layout and coder gives the values ``y`` (1-D integers, the chain's
    output on all of them), near exact, no coder run: the alphabet's field plus the stream
    ("rans": its table and cross-entropy, :func:`ubpe.coders.rans.stream_bits`; "mag": its best
    option at the rates of ``s.estimate_rates``, :func:`ubpe.coders.mag.stream_bits`, which
    the coder, trying more rates, beats by up to about 0.6 %; both layouts' statistics in one
    compiled pass, :func:`ubpe._kernels.level1.layout_stats`); the dense ids where they fit
    (:func:`dense_fits`). With ``parts`` (their :func:`static_parts`), a layout and coder rated
    more than ``s.fast_size_clear`` times the best is not sized (nor coded). None when the
    values span more than 2**22, take one value, or other rates are set (then
    :func:`static_parts` decides)."""
    n = y.shape[0]
    h = _histogram(y, memo) if n >= 2 and len(s.estimate_rates) == 2 else None  # (None: a span beyond 2**22)
    if h is None:
        return None
    lo, hi = h[0], h[1]
    span = hi - lo + 1
    lp = _layout_pass(y, s, memo)
    rank, where, has_dense, stats = lp.rank, lp.where, lp.has_dense, lp.stats
    a = where.shape[0]
    if a <= 1:
        return None
    used = lp.used
    raw_bare, raw_dense = lp.raws
    alphabet = Alphabet.sorted_integers(where + lo)  # (increasing: the histogram's cells present)
    rated = dict(zip((("bare", "rans"), ("bare", "mag"), ("dense", "rans"), ("dense", "mag")), parts or (0.0,) * 4))
    bound = s.fast_size_clear * min(rated.values())
    costs: dict[tuple[str, str], float] = {}
    options: dict[str, tuple[np.ndarray, np.ndarray]] = {}  # layout -> its "mag" options at the two rates
    shared: dict = {}  # (rans.stream_bits of both layouts: the same counts, their parts made once)
    if rated[("bare", "rans")] <= bound or rated[("bare", "mag")] <= bound:
        bare_field = len(msgpack.packb(alphabet_field(alphabet), use_bin_type=True))
        rans_bits = rans.stream_bits(np.arange(a, dtype=np.int64), used, a, shared) \
            if rated[("bare", "rans")] <= bound else None
        if rans_bits is not None:
            costs[("bare", "rans")] = bare_field + rans_bits / 8.0 + _FRAMING["rans"]
        if rated[("bare", "mag")] <= bound:
            options["bare"] = lp.mag_options("bare")  # (stream_bits' numbers, kept for the coder)
            costs[("bare", "mag")] = bare_field + _mag_bits(options["bare"], raw_bare) / 8.0 + _FRAMING["mag"]
    dense = None
    if has_dense:
        dense_field = len(msgpack.packb({"n": span, "lo": lo, "w": 0, "gaps": b""}, use_bin_type=True))
        rans_bits = rans.stream_bits(where, used, span, shared) if lp.dense_rans and rated[("dense", "rans")] <= bound \
            else None
        if rans_bits is not None:
            costs[("dense", "rans")] = dense_field + rans_bits / 8.0 + _FRAMING["rans"]
        if rated[("dense", "mag")] <= bound:
            options["dense"] = lp.mag_options("dense")
            costs[("dense", "mag")] = dense_field + _mag_bits(options["dense"], raw_dense) / 8.0 + _FRAMING["mag"]
        dense = (lo, hi, y)
    # "packed", which every stream is offered (short streams: no table to pay for)
    packed_bytes = (n * packed_width(a - 1) + 7) // 8 + _FRAMING["packed"]
    if costs and packed_bytes < min(costs.values()):
        costs[("bare", "packed")] = len(msgpack.packb(alphabet_field(alphabet), use_bin_type=True)) + packed_bytes
        if dense is not None:
            costs[("dense", "packed")] = dense_field + (n * packed_width(span - 1) + 7) // 8 + _FRAMING["packed"]
    if not costs:
        return None
    rates = [int(r) for r in s.estimate_rates]
    def rows(layout: str, j: int) -> tuple[np.ndarray, np.ndarray] | None:
        found = options.get(layout)
        return None if found is None else (found[0][j], found[1][j])

    known = {"bare": {r: (stats[j], raw_bare, int(rank[lp.middle]), rows("bare", j)) for j, r in enumerate(rates)}}
    if has_dense:
        known["dense"] = {r: (stats[2 + j], raw_dense, lp.middle, rows("dense", j)) for j, r in enumerate(rates)}
    return Layouts(costs, alphabet, lp, dense, known if s.fast_reuse_mag_stats else None)


def _mag_bits(options: tuple[np.ndarray, np.ndarray], raw_bits: int) -> float:
    """:func:`ubpe.coders.mag.stream_bits` from its :func:`~ubpe.coders.mag.stream_options`."""
    ces, tbitss = options
    return float(_l1plan.least_total(ces, raw_bits, tbitss))  # (the same float, one compiled call)


def costed_candidates(record: list[dict], found: Layouts, s: Settings) -> list[Candidate]:
    """The candidate of the layout of :func:`layouts` that costs least, offered the coders of it
    within ``s.fast_exact_close`` of its smallest ("const" and "packed" always)."""
    layout = min(found.costs, key=found.costs.get)[0]
    least = min(size for (lay, _), size in found.costs.items() if lay == layout)
    names = {c for (lay, c), size in found.costs.items() if lay == layout and size <= s.fast_exact_close * least}
    offered = tuple(c for c in STATIC_CODERS if c in ("const", "packed") or c in names)
    none = np.zeros((0, 2), np.int32)
    known = None if found.mag_stats is None else found.mag_stats.get(layout)
    if layout == "bare":
        return [Candidate(record, found.alphabet, none, found.ids, offered, mag_stats=known)]
    alphabet, ids = found.dense
    return [Candidate(record, alphabet, none, ids, offered, "static", variant="dense", mag_stats=known)]


#: :func:`pair_information` counts the pairs of an alphabet above 255 ids in a table of this many
#: cells (a prime), by their code modulo it: a few pairs may share a cell, which only lowers the
#: information a little.
_PAIR_CELLS = 65521


def pair_information(ids: np.ndarray, a: int) -> tuple[float, int]:
    """The mutual information, in bits a value, between consecutive ids of ``ids`` (1-D, in
    ``[0, a)``) from their pair counts (pairs sharing a cell of :data:`_PAIR_CELLS` counted
    together), less the Miller-Madow bias of the plug-in estimate ((used pairs - used firsts -
    used seconds + 1) / (2 n ln 2)): about 0 for independent ids; and the number of distinct
    pairs (cells used). (Its sums are numpy's, not ``np.dot``'s: OpenBLAS runs a dot product of
    10 000 values or more on its threads, 3 to 8 ms of CPU time a call on a busy machine, against
    0.02 ms.)"""
    n = ids.shape[0] - 1
    if n < 1 or a < 2:
        return 0.0, 0
    # the non-zero counts of the pairs' cells (every pair a cell of its own when a * a <= _PAIR_CELLS),
    # of the first and of the second ids, in cell order: np.bincount's (of first * a + second,
    # modulo _PAIR_CELLS beyond), from one compiled pass (four numpy passes and their int64 copies
    # took about 0.1 ms a call on 16 384 ids); summed by numpy as before
    cells = a * a if a * a <= _PAIR_CELLS else _PAIR_CELLS
    out = np.empty(min(cells, n) + 2 * a, np.float64)  # (n pairs use at most n cells)
    k2, kl, kr = _k.pair_counts(np.ascontiguousarray(ids), a, cells, out)
    # (copies: the fresh arrays numpy's c[c > 0].astype(np.float64) made, for its log2 and sum)
    pairs, left, right = out[:k2].copy(), out[k2:k2 + kl].copy(), out[k2 + kl:k2 + kl + kr].copy()

    def plogp(c: np.ndarray) -> tuple[float, int]:
        # (numpy's float((c * np.log2(c)).sum()) of these integral floats, one compiled pass
        # where each has a place in the table: :func:`~ubpe.planner.estimates.plogp`)
        found = _npsum.plogp_sum(c, log2_table())
        return (float(found) if found >= 0.0 else float((c * np.log2(c)).sum())), int(c.shape[0])

    joint, k2 = plogp(pairs)
    lt, kl = plogp(left)
    rt, kr = plogp(right)
    information = (joint - lt - rt) / n + np.log2(n)
    return information - (k2 - kl - kr + 1) / (2.0 * n * np.log(2.0)), k2


def merges_may_pay(ids: np.ndarray, a: int, s: Settings, size: float = 0.0, best: float = float("inf"),
                   repeats: float | None = None) -> bool:
    """The cheap test before any training: merges may make the ids ``ids`` (1-D, alphabet of
    ``a``) smaller only where consecutive ids repeat as pairs and depend on each other: at
    least ``repeats`` (``s.fast_merge_repeats`` unless given) pairs a distinct pair (else too varied for merges to pay,
    and too sparse for the information to be judged), and :func:`pair_information` of at
    least ``s.fast_merge_information`` bits a value; and, for a chain whose static size is
    ``size`` where another's is ``best``, only when taking from its size the share of its
    order-0 entropy that the information is would bring it within reach of ``best`` (a guess:
    where consecutive ids tell each other more, merges cut more)."""
    if a < 2 or ids.shape[0] < 2:
        return False
    information, distinct = pair_information(ids, a)
    repeats = s.fast_merge_repeats if repeats is None else repeats
    if distinct * repeats > ids.shape[0] - 1 or information < s.fast_merge_information:
        return False
    c = np.zeros(a, np.int64)
    _tally.token_counts(ids, c)  # (np.bincount's counts, the ids read in their width)
    c = c.astype(np.float64)
    c = c[c > 0]
    n = float(ids.shape[0])
    entropy = np.log2(n) - float((c * np.log2(c)).sum()) / n
    return size * max(0.0, 1.0 - information / max(entropy, 1e-9)) <= best


def plan_repeats(n: int, s: Settings) -> float:
    """The pairs a distinct pair :func:`fast_plan` asks of ``n`` ids before it rates merges on
    them: ``s.fast_merge_plan_repeats`` on 2**14 ids (the screen's sample), in proportion on
    fewer or more (a source's pairs repeat more in a longer stretch of it), and at least
    ``s.fast_merge_repeats`` (the cheap test's own floor)."""
    return max(float(s.fast_merge_repeats), s.fast_merge_plan_repeats * n / (1 << 14))


def merged_ratio(ids: np.ndarray, a: int, n: int, fit_options: dict, s: Settings) -> float:
    """The static coders' cost with merges over their cost without, estimated on the ids
    ``ids`` (a sample, alphabet of ``a``) of ``n`` values: a training run on them, its
    histogram scaled to ``n`` values, the best prefix of the probe's coarse ladder
    (:func:`best_prefix`, ``s.probe_ladders``, its lower bounds pruning the prefixes that
    cannot beat none) costed with its merge table. 1.0 when no merge is kept."""
    fit = train(a, ids, auto_max_merges(ids.shape[0], a, s), fit_options)
    if len(fit.merges) == 0:
        return 1.0
    hist = np.bincount(fit.stream, minlength=a + len(fit.merges)).astype(np.int64) * max(n // ids.shape[0], 1)
    costs: dict = {}
    k = best_prefix(hist, fit.merges, a, s.probe_ladders, cache=costs, bound=True)
    return costs[k] / costs[0] if k and costs.get(0) else 1.0


def fast_plan(x: np.ndarray, chains: list[list[Stage]], cost: CostFunction, proposer: ReplayEncoder,
              s: Settings) -> Candidate:
    """Level 1's candidate for ``x`` (``(channels, frames)`` integers wider than a byte) over
    ``chains``, built on all the values and costed with ``cost``. The chains run as
    :func:`fast_stages` makes them.

    1. Each chain's output on the screen's values (all of them up to ``s.fast_whole``, else the
       screen's sample, :func:`screen_sample`, its "lpc" stages without their refit, its leading
       "rank" or "grid" stages on all the values and the rest on the sample of their output,
       :func:`~ubpe.planner.screening.screen_forward`; chains that
       share leading stages share their forward pass, :func:`forward_shared`) gets a rough size
       (:func:`order0_bytes` scaled to all the values, plus its stages' params). Where
       :func:`merges_may_pay` (with the pairs a distinct pair of :func:`plan_repeats`), a
       training run on the sample rates merges
       (:func:`merged_ratio`).
    2. The chains within ``s.fast_prune`` of the smallest rough size, and those whose merges
       were rated, get the static estimate of :func:`static_parts` (no coder run; with
       merges, its bare "rans" part times their ratio). The smallest goes on, and of the next
       ``s.fast_keep - 1`` those within ``s.fast_close`` of it (within ``s.fast_refit_close``
       when the screen ran its "lpc" stage without the refit: the refit gains up to a few %).
    3. Each chain that goes on is put through all the values (the screen's output when it saw
       them all); of several, the one of smallest estimate on all the values is kept (all of
       them when one has merges rated: their candidates are then costed exactly).
    4. A chain with merges rated offers level 1's candidates of the exhaustive search
       (:meth:`ReplayEncoder.propose`); any other its bare candidates
       (:func:`bare_candidates`), of the bare and dense ids one whose estimate is more than
       ``s.fast_layout_clear`` times the other's not built, nor offered the coder rated
       ``s.fast_coder_clear`` times the other (:func:`likely_coders`).
    5. The smallest exact candidate wins (ties: the earlier chain, the bare ids first)."""
    whole = x.size <= s.fast_whole
    windows, joined, scale = (x, x, 1.0) if whole else screen_sample(x, s)
    full = [fast_stages(chain, s) for chain in chains]
    screen_chains = full if whole else [fast_stages(chain, s, screen=True) for chain in chains]
    unfitted = [not whole and any(isinstance(st, LpcStage) and st.reweight for st in c) for c in full]
    outputs: dict = {}
    inputs = {False: windows, True: joined}
    screened: dict[int, tuple[np.ndarray, list[dict]]] = {}
    rough: dict[int, float] = {}
    counted: dict[int, np.ndarray | None] = {}
    # the histograms and layout passes over the chains' outputs (:func:`_histogram`, :func:`_layout_pass`)
    memo: dict = {}
    for i in range(len(chains)):
        y, record = screen_forward(x, inputs, screen_chains, i, outputs, s)
        y = np.ascontiguousarray(y).reshape(-1)
        screened[i] = (y, record)
        counted[i] = counts = _value_counts(y, memo) if y.shape[0] and y.dtype.kind in "iu" else None
        rough[i] = order0_bytes(y, s, counts) * scale + params_bytes(record, memo)
    # merges may pay only on a chain of few distinct values repeated: its order-0 size may be well
    # above the smallest (merges halved respiration-systole's "delta2", 1.2 times "lpc"'s size)
    least = min(rough.values())
    # (a chain of fewer pairs a distinct pair than :func:`plan_repeats` is not rated: nor are its
    # distinct values fewer, each at most a distinct pair)
    parts = {i: static_parts(screened[i][1], screened[i][0], scale, s, memo, not whole) for i in range(len(chains))
             if rough[i] <= s.fast_prune * least or (counted[i] is not None and counted[i].shape[0]
                                                      * plan_repeats(screened[i][0].shape[0], s) <= screened[i][0].shape[0])}
    static_best = min(min(p) for p in parts.values())
    merged: dict[int, float] = {}  # chains whose merges may pay -> the ratio a training run gives them
    for i, p in parts.items():
        y = screened[i][0]
        repeats = plan_repeats(y.shape[0], s)
        if counted[i] is None or counted[i].shape[0] * repeats > y.shape[0]:
            continue
        small = small_ids(y, y.shape[0], memo)
        if small is not None and merges_may_pay(*small, s, p[0], static_best, repeats):
            ids, a = small
            if ids.shape[0] > s.fast_merge_sample:  # rated on fast_merge_sample values (windows)
                ids = np.ascontiguousarray(ids[window_take(ids.shape[0], s.fast_merge_sample, s.windows)])
            ratio = merged_ratio(ids, a, x.size, proposer.fit_options, s)
            # merges that leave the chain behind another, or gain within the rating's error, are not built
            if ratio <= s.fast_merge_gain and p[0] * ratio < static_best:
                merged[i] = ratio
    parts = {i: p for i, p in parts.items() if rough[i] <= s.fast_prune * least or i in merged}
    proxy = {i: min(min(p), p[0] * merged.get(i, 1.0)) for i, p in parts.items()}
    ranked = sorted(proxy, key=lambda i: (proxy[i], i))
    best = proxy[ranked[0]]
    close = [s.fast_rank_close if whole else (s.fast_refit_close if unfitted[i] else s.fast_close) for i in ranked]
    kept = [ranked[0]] + [i for i, c in zip(ranked[1:s.fast_keep], close[1:]) if proxy[i] <= c * best]
    if ranked[0] in merged:  # (a rating of merges is rough: the best chain without them is costed too)
        kept = list(dict.fromkeys(kept + [i for i in ranked if i not in merged][:1]))
    if not whole:
        outputs = whole_outputs(outputs)  # (the screen's outputs on the sample dropped)
        for i in kept:
            y, record = forward_shared({False: x, True: x}, full, i, outputs)
            y = np.ascontiguousarray(y).reshape(-1)
            screened[i] = (y, record)
            parts[i] = static_parts(record, y, 1.0, s, memo)
    # the chains kept sized near exactly (their layouts' costs and their params); a chain whose
    # merges were rated, or whose layouts cannot be sized so, is costed exactly
    cands: list[Candidate] = []
    sized: dict[int, tuple[float, Layouts]] = {}
    for i in sorted(kept):
        y, record = screened[i]
        if i in merged:
            cands += proposer.propose(record, y, 1, cost, False, rated=True)
            continue
        found = layouts(y, s, parts[i], memo)
        if found is None:
            cands += static_candidates(record, y, parts[i], s)
        else:
            sized[i] = (min(found.costs.values()) + params_bytes(record, memo), found)
    if sized:
        i = min(sized, key=lambda i: (sized[i][0], i))
        cands += costed_candidates(screened[i][1], sized[i][1], s)
    return min(((cost(c).size, j, c) for j, c in enumerate(cands)), key=lambda t: t[:2])[2]


def static_candidates(record: list[dict], y: np.ndarray, parts: tuple[float, float, float, float],
                      s: Settings) -> list[Candidate]:
    """The bare candidates of the values ``y`` (:func:`bare_candidates`: bare ids, dense ids
    where they fit) that the estimates ``parts`` (:func:`static_parts`) call for: of the bare
    and dense ids one rated more than ``s.fast_layout_clear`` times the other is not built,
    nor offered the coder rated ``s.fast_coder_clear`` times the
    other (:func:`likely_coders`)."""
    bare, dense = min(parts[:2]), min(parts[2:])
    if dense > s.fast_layout_clear * bare or dense == float("inf"):  # (the dense ids not built)
        alphabet = Alphabet.from_data(y)
        found = [Candidate(record, alphabet, np.zeros((0, 2), np.int32), alphabet.to_ids(y), STATIC_CODERS)]
    elif bare > s.fast_layout_clear * dense:
        found = [c for c in bare_candidates(record, y) if c.variant == "dense"] or bare_candidates(record, y)
    else:
        found = bare_candidates(record, y)
    return likely_coders(found, parts, s)


def small_ids(y: np.ndarray, limit: int, memo: dict | None = None) -> tuple[np.ndarray, int] | None:
    """The alphabet ids of the values ``y`` (1-D integers) and the alphabet's size, when it has
    at most ``limit`` values; else None. ``memo``: :func:`fast_plan`'s, where :func:`_layout_pass`
    may have ranked the values already (the same ids: int32, a value's rank among those present)."""
    if y.shape[0] < 2 or y.dtype.kind not in "iu":
        return None
    lp = memo.get(id(y)) if memo is not None else None
    if lp is not None:
        lp = lp[1]
        a = int(lp.where.shape[0])
        return None if a > limit else (lp.bare_ids(), a)
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
