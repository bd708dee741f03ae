"""The writer's choices (ubpe.planner): honest, measured, and never worse than a forced choice.

The planner's tuning is ubpe.planner.settings.Settings: a test changes it for ``compress`` with
``settings.configured(...)``, or passes a Settings object to the planner's functions. What the
search measures is observed through its public parameters: the costing function ``plan`` is
given (every candidate the format sizes passes through it) and the encoder that proposes
candidates."""

from __future__ import annotations

import pathlib
from dataclasses import replace

import msgpack
import numpy as np
import pytest

import ubpe
from common import assert_same_array, check_roundtrip, unpack_any
from ubpe import compress, decompress, describe, frontend
from ubpe.alphabet import Alphabet
from ubpe.api import writer
from ubpe.coders import coders_for, counts_cost_bits
from ubpe.coders.mag import estimate_bits
from ubpe.format.bits import pack_merges
from ubpe.format.container import values_crc
from ubpe.frontend.chains import DECORRELATE_CHAINS, GRID_CHAINS, PREDICTORS, build_chain, is_fast
from ubpe.planner import (
    DEFAULT, Candidate, Cost, ReplayEncoder, auto_chains, best_prefix, choose_method, configured, has_grid, plan,
)
from ubpe.planner import candidates, estimates, lean, replay, search

FIXTURES = pathlib.Path(__file__).parent / "fixtures"
EXCERPT = pathlib.Path(ubpe.__file__).parent / "data" / "mitbih_208_excerpt.npy"
CONTEXT_MIXERS = {"cms2", "cmt2"}


def _real_inputs() -> dict[str, np.ndarray]:
    """Small real inputs that exist without ../shared: the bundled ECG excerpt and slices of
    it, the frozen fixtures' values (each distinct array once), and a few 2-D, int8 and uint64
    arrays."""
    ecg = np.load(EXCERPT)
    rng = np.random.default_rng(7)
    out = {
        "ecg_2000": ecg[:2000],
        "ecg_tail_1500": ecg[-1500:],
        "ecg_step3": ecg[::3][:3000],
        "ecg_as_2ch": ecg[:4000].reshape(2000, 2),
        "ecg_int8": (ecg[:3000] // 16).astype(np.int8),
        "ecg_uint64": ecg[:1500].astype(np.int64).astype(np.uint64) + np.uint64(2**63),
        "walk_2d": np.cumsum(rng.integers(-3, 4, (800, 3)), axis=0).astype(np.int32),
        "ecg_on_grid": ecg[:2000] * 12 - 7,
    }
    seen = set()
    for path in sorted(FIXTURES.glob("v1_*.npy")):
        x = np.load(path, allow_pickle=False)
        key = (x.dtype.str, x.shape, x.tobytes())
        if 0 < x.size <= 5000 and x.dtype.kind in "iub" and key not in seen:
            seen.add(key)
            out[path.stem] = x.T if x.ndim == 2 and x.shape[1] > x.shape[0] else x  # axis 0 is time
    return out


INPUTS = _real_inputs()
#: Inputs on which level 2's lean search (from ``lean_above`` values) misses the smallest
#: container: its estimates rule out, unmeasured, the candidate that wins (the package docstring
#: of ubpe.planner, step 4, allows it). Found when the fixtures were regenerated as format 1.
#: Level 2 stays at most level 1 on these too (level 1's container, kept when smaller; tested
#: below): two former shortfalls, where level 1's candidates won and were not built, now pass
#: (v1_blocks_lpc_frames_int16, v1_source_stereo_delta1_cms2); the one left misses by closeness only.
LEAN_SHORTFALLS = {
    "v1_lpc_mag_int16": "raw values with cms2 win (3 297 B, the exhaustive search's) but are no lean finalist: "
                        "4 000 values > lean_small and not raw_learnable; lean: delta1 + cms2, 3 379 B (+2.5 %)",
}


# ---------------------------------------------------------------------------- the search, observed


class Recorder:
    """The format's costing function (exact sizes, as ``compress`` uses it), recording every
    candidate whose stream it codes (equal candidates are coded once, as in ``compress``)."""

    def __init__(self, x: np.ndarray) -> None:
        flat = np.ascontiguousarray(x.reshape(-1), dtype=x.dtype.newbyteorder("="))
        base = {"dtype": x.dtype.str, "shape": list(x.shape), "crc": values_crc(x.dtype, list(x.shape), flat),
                "front": []}
        self.memo: dict = {}
        self.cost = writer.cost_function(base, self.memo)
        self.coded: list[Candidate] = []

    def __call__(self, c: Candidate) -> Cost:
        before = len(self.memo)
        cost = self.cost(c)
        if len(self.memo) > before:
            self.coded.append(c)
        return cost

    def cm_runs(self) -> list[int]:
        """Tokens of every context-mixing stream coded, in order."""
        return [int(c.tokens.shape[0]) for c in self.coded if CONTEXT_MIXERS & set(c.coders)]


def planned(x: np.ndarray, level: int = 2, predictor: str | None = None, s=None) -> tuple[int, Recorder]:
    """The size of the container ``compress(x, level=level, predictor=predictor)`` writes under the
    settings ``s`` (default: the current ones), planned through ``plan`` with a :class:`Recorder`."""
    s = s or ubpe.planner.current()
    xc = frontend.to_channels(np.asarray(x))
    specs = [PREDICTORS[predictor]] if predictor else auto_chains(xc, level, s)
    rec = Recorder(np.asarray(x))
    best = plan(xc, [build_chain(spec) for spec in specs], level, rec, ReplayEncoder(None, {}, s), s)
    return rec(choose_method(best, rec, s)).size, rec


def test_plan_through_its_public_parameters_is_compress():
    """The recorded plan is the search ``compress`` runs: the same container size."""
    x = np.load(EXCERPT)[:3000]
    for level in (1, 2):
        size, rec = planned(x, level)
        assert size == len(compress(x, level=level)) and rec.coded


# ---------------------------------------------------------------------------- never worse


@pytest.mark.parametrize("level", [1, 2])
def test_automatic_choice_is_never_larger_than_a_forced_one(level):
    """On real inputs, the automatic container is the best forced chain it measures (every
    ``predictor=`` of auto_chains): at level 2 by the exhaustive search (here on every input:
    ``lean_above`` and ``short_lean_upto`` out of the way), at level 1 by the fast plan's near-exact sizes of the chains
    its estimates rank within ``fast_rank_close`` (here the same containers; the exhaustive
    level 1, ``fast_level1=False``, by exact sizes). Level 1 has no lean search."""
    assert "v1_grid_2d_bigendian" in INPUTS and len(INPUTS) >= 12
    assert DEFAULT.fast_level1
    autos = {}
    for fast in (True, False) if level == 1 else (True,):
        with configured(lean_above=1 << 30, short_lean_upto=0, fast_level1=fast) as s:
            for name, x in INPUTS.items():
                # level 2 under these settings is the exhaustive container of _containers
                auto = _containers(name)[None][1] if level == 2 else compress(x, level=level)
                autos.setdefault(name, auto)
                specs = auto_chains(frontend.to_channels(np.asarray(x)), level, s)
                names = ("none",) if x.dtype.kind == "b" else [k for k, v in PREDICTORS.items() if v in specs]
                forced = {k: len(compress(x, predictor=k, level=level)) for k in names}
                assert len(auto) == min(forced.values()), (name, fast, len(auto), forced)  # the same candidates
    if level == 1:  # no lean search at level 1: the same containers whatever lean_above
        assert all(_containers(name)[None][2] == autos[name] for name in INPUTS)


_CONTAINERS: dict[str, dict] = {}


def _containers(name: str) -> dict:
    """delta -> (lean level 2, exhaustive level 2, level 1) containers of ``INPUTS[name]``
    (``delta`` None or 0), computed once for the tests below: the lean and the exhaustive search
    are level 2 under the default settings and under ``lean_above=1 << 30, short_lean_upto=0``; level 1 has no
    lean search (the same container whatever ``lean_above``: test_automatic_choice_...[1])."""
    if name not in _CONTAINERS:
        x, out = INPUTS[name], {}
        for delta in (None, 0):
            lean_container = compress(x, level=2, delta=delta)
            with configured(lean_above=1 << 30, short_lean_upto=0):
                exhaustive = compress(x, level=2, delta=delta)
            out[delta] = (lean_container, exhaustive, compress(x, level=1, delta=delta))
        _CONTAINERS[name] = out
    return _CONTAINERS[name]


def _lean_sizes(name: str) -> dict:
    """delta -> (lean level 2, exhaustive level 2, level 1) sizes of ``INPUTS[name]``."""
    return {delta: tuple(len(c) for c in three) for delta, three in _containers(name).items()}


@pytest.mark.parametrize("name", list(INPUTS))
def test_lean_search_is_at_most_level_1_and_at_least_the_exhaustive_one(name):
    """Level 2's lean search is never above level 1 (level 1's container, kept when smaller: by
    construction, on every input, the lean shortfalls below included) nor below the exhaustive
    search; up to ``short_lean_upto`` values (the lean search widened, level 1 always planned)
    the same container as the exhaustive search on these inputs."""
    for delta, (lean_size, exhaustive, one) in _lean_sizes(name).items():
        assert exhaustive <= lean_size <= one, (delta, lean_size, exhaustive, one)
        if INPUTS[name].size <= DEFAULT.short_lean_upto:
            assert lean_size == exhaustive, delta


@pytest.mark.parametrize("name", [pytest.param(k, marks=pytest.mark.xfail(reason=LEAN_SHORTFALLS[k], strict=True))
                                  if k in LEAN_SHORTFALLS else k for k in INPUTS])
def test_lean_search_is_close_to_the_exhaustive_one(name):
    """Beyond ``lean_above`` values level 2's lean search sizes context mixing on samples and
    builds static candidates only where its estimates call for them: on real inputs it stays
    within 1 % of the exhaustive search."""
    for delta, (lean_size, exhaustive, _) in _lean_sizes(name).items():
        assert lean_size <= 1.01 * exhaustive, (delta, lean_size, exhaustive)


def test_level_1_measures_only_chains_that_decode_fast():
    x = frontend.to_channels(np.load(EXCERPT)[:3000])
    fast = auto_chains(x, 1, DEFAULT)
    assert fast and all(is_fast(spec) for spec in fast)
    assert PREDICTORS["lpc"] in fast
    assert PREDICTORS["lpc+adaptive"] not in fast
    assert PREDICTORS["lpc+adaptive"] in auto_chains(x, 2, DEFAULT)
    # beyond screen_sample too: level 1 never chooses adaptive prediction
    info = describe(compress(np.resize(np.load(EXCERPT), DEFAULT.screen_sample + 4000), level=1))
    assert all(stage["stage"] != "adaptive" for stage in info.front), info.front


def test_auto_chains_setting_names_the_chains_measured():
    """``auto_chains`` lists the chains measured on every integer input, by name."""
    x = np.load(EXCERPT)[:3000]
    xc = frontend.to_channels(x)
    assert [spec for spec in auto_chains(xc, 2, DEFAULT)][:6] == [PREDICTORS[k] for k in DEFAULT.auto_chains]
    with configured(auto_chains=("delta2",)) as s:
        assert auto_chains(xc, 2, s) == [PREDICTORS["delta2"]]
        assert describe(compress(x, level=1)).front == ({"stage": "delta", "order": 2},)


def test_level_2_is_never_larger_than_level_1_on_real_inputs():
    """Level 2 plans level 1 too and keeps its container when smaller: never larger, after the
    exhaustive search and after the lean search alike."""
    for name, x in INPUTS.items():
        for delta, (lean_container, exhaustive, one) in _containers(name).items():
            for how, two in (("lean", lean_container), ("exhaustive", exhaustive)):
                assert_same_array(decompress(two), x)
                assert len(two) <= len(one), (name, delta, how)


# ---------------------------------------------------------------------------- training runs


def _training_lengths(monkeypatch) -> list[int]:
    """The number of values of every training run the planner starts, in order (a spy on the
    planner's training function: no parameter of the search shows its runs)."""
    lengths: list[int] = []
    real = replay.train

    def spy(a, ids, max_merges, fit_options):
        lengths.append(int(ids.shape[0]))
        return real(a, ids, max_merges, fit_options)

    monkeypatch.setattr(replay, "train", spy)
    return lengths


def test_level_1_candidate_is_computed_once(monkeypatch):
    """Level 2's exhaustive search (up to ``lean_above`` values) trains once per chain (its
    candidates of level 1's kind share the run); the fast level 1 trains none where its cheap
    test rules merges out (the ECG: many distinct pairs of residuals), and neither does the lean
    search (level 1's container, which level 2 compares, covers merges)."""
    runs = _training_lengths(monkeypatch)
    x = np.load(EXCERPT)[:3000]
    chans = frontend.to_channels(x)
    with configured(fast_level1=False):
        compress(x, level=1)
    assert len(runs) == len(auto_chains(chans, 1, DEFAULT)) < len(DEFAULT.auto_chains)
    runs.clear()
    compress(x, level=1)
    assert runs == []
    with configured(lean_above=x.size):
        compress(x, level=2)
    assert len(runs) == len(auto_chains(chans, 2, DEFAULT)) == len(DEFAULT.auto_chains)
    runs.clear()
    assert x.size > DEFAULT.lean_above
    compress(x, level=2)
    assert runs == []


def test_probe_skips_training_on_all_values_when_no_merge_pays(monkeypatch):
    """Smooth-signal residuals: the probe (a run on ``probe_sample`` values, in ``windows``
    windows) keeps no merge, so no run covers all the values and the container has none (the
    exhaustive level 1; the fast one trains none: its cheap test rules merges out)."""
    lengths = _training_lengths(monkeypatch)
    x = np.load(EXCERPT)[:12000]
    with configured(probe_sample=2048, fast_level1=False):
        c = check_roundtrip(x, level=1, predictor="lpc")
    assert lengths and max(lengths) <= 2048, lengths
    assert describe(c).n_merges == 0
    lengths.clear()
    assert describe(check_roundtrip(x, level=1, predictor="lpc")).n_merges == 0 and lengths == []


def test_probe_trains_on_all_values_when_merges_pay(monkeypatch):
    """A repeated motif: merges pay on the probe, so the chain's run covers all the values and
    the container keeps merges, exactly as without a probe (a probe of every value). (The
    exhaustive level 1: the fast one rates merges on a sample itself and probes no chain it
    rated, tests/test_level1_merge_search.py.)"""
    rng = np.random.default_rng(3)
    motifs = rng.integers(0, 200, (6, 9))
    x = motifs[rng.integers(0, 6, 1500)].reshape(-1).astype(np.int16)  # 13 500 values
    lengths = _training_lengths(monkeypatch)
    # (fast_merge_min_count at the fit's 2: level 1's run over all the values stops there, the
    # probe's run keeps the fit's min_count, tests/test_level1_merge_search.py)
    with configured(probe_sample=2048, fast_level1=False, fast_merge_min_count=2):
        c = check_roundtrip(x, level=1, predictor="none")
    assert x.size in lengths and min(lengths) < x.size, lengths
    assert describe(c).n_merges > 0
    lengths.clear()
    with configured(probe_sample=1 << 20, fast_level1=False, fast_merge_min_count=2):  # the probe is the chain's run
        assert compress(x, level=1, predictor="none") == c
    assert lengths == [x.size]
    with configured(probe_sample=2048, fast_level1=False):
        assert describe(check_roundtrip(x, level=1, predictor="none")).n_merges > 0


def test_probe_on_a_short_input_is_its_only_training_run(monkeypatch):
    """Up to ``probe_sample`` values the probe's run is the chain's run: one run per chain."""
    lengths = _training_lengths(monkeypatch)
    rng = np.random.default_rng(5)
    x = np.tile(rng.integers(0, 50, 40), 60).astype(np.int16)  # 2 400 values, merges pay
    c = check_roundtrip(x, level=1, predictor="none")
    assert lengths == [x.size]
    assert describe(c).n_merges > 0


def test_automatic_model_size_is_capped(monkeypatch):
    """The automatic model trains at most ``auto_max_merges`` merges and at most one per
    ``auto_values_per_merge`` values (a training batch may overshoot: see below)."""
    rng = np.random.default_rng(5)
    x = np.tile(rng.integers(0, 50, 40), 60).astype(np.int16)  # 2 400 values, merges pay

    def merges(**fit_options) -> int:
        return describe(compress(x, level=1, predictor="none", **fit_options)).n_merges

    # (n_candidates=1: the trainer's last batch of n_candidates merges may overshoot the cap by
    # up to n_candidates - 1, ubpe.trainer.train)
    assert merges(n_candidates=1) > 20
    with configured(auto_max_merges=20):
        assert 0 < merges(n_candidates=1) <= 20
        assert merges() < 20 + 50  # the default n_candidates: 50
    with configured(auto_values_per_merge=x.size // 10):
        assert 0 < merges(n_candidates=1) <= 10
    with configured(auto_values_per_merge=x.size + 1):
        assert merges() == 0


def test_probe_pruning_gives_the_exact_answer():
    """best_prefix(bound=True) (the probe, on ``probe_ladders``) prunes prefixes whose lower
    bound cannot beat no merges: whether a merge pays is the same as with every prefix costed
    exactly, on inputs where merges pay and where they do not."""
    s = DEFAULT
    ecg = np.load(EXCERPT)
    rng = np.random.default_rng(3)
    answers = []
    for x in (ecg[:12_000], np.tile(np.array([5, 5, 7, 1, 1, 1], np.int16), 3000),
              rng.integers(-300, 300, 20_000).astype(np.int16), (ecg[:12_000] // 64).astype(np.int16)):
        for name in ("none", "delta1", "lpc"):
            y, _ = frontend.forward(frontend.to_channels(x), build_chain(PREDICTORS[name]))
            y = y.reshape(-1)
            alphabet = Alphabet.from_data(y)
            a = len(alphabet)
            fit = replay.train(a, alphabet.to_ids(y), replay.auto_max_merges(y.size, a, s), {})
            hist = np.bincount(fit.stream, minlength=a + len(fit.merges))
            exact = best_prefix(hist, fit.merges, a, s.probe_ladders, cache={}, bound=False)
            pruned = best_prefix(hist, fit.merges, a, s.probe_ladders, cache={}, bound=True)
            answers.append((exact > 0, pruned > 0))
    assert all(a == b for a, b in answers), answers
    assert {a for a, _ in answers} == {True, False}  # both answers were checked


@pytest.mark.parametrize("seed", range(6))
def test_cost_lower_bound_never_exceeds_the_exact_cost(seed):
    """The probe's pruning bound is at most coders.counts_cost_bits on skewed, flat, sparse and
    tiny histograms."""
    rng = np.random.default_rng(seed)
    for _ in range(40):
        v = int(rng.integers(1, 3000))
        kind = rng.integers(0, 3)
        if kind == 0:
            counts = rng.geometric(rng.uniform(0.01, 0.9), v) - 1
        elif kind == 1:
            counts = rng.integers(0, 50, v)
        else:
            counts = np.zeros(v, np.int64)
            counts[rng.integers(0, v, int(rng.integers(1, 6)))] = rng.integers(1, 10**6)
        counts = counts.astype(np.int64)
        if counts.sum() == 0:
            counts[0] = 1
        assert replay._cost_lower_bound(counts) <= counts_cost_bits(counts)


def test_prefix_ladders_search_coarse_to_fine():
    """best_prefix searches the ladders' brackets coarse to fine: a finer last ladder finds a
    prefix at least as good (by the costs it measured) as the coarse ladder alone."""
    rng = np.random.default_rng(5)
    x = np.tile(rng.integers(0, 50, 40), 60).astype(np.int64)
    alphabet = Alphabet.from_data(x)
    a = len(alphabet)
    fit = replay.train(a, alphabet.to_ids(x), 300, {})
    hist = np.bincount(fit.stream, minlength=a + len(fit.merges))

    def bits(k: int) -> float:
        h = np.bincount(fit.tokens(k), minlength=a + k)
        return counts_cost_bits(h) + (8 * len(pack_merges(fit.merges[:k], a)) if k else 0)

    coarse = best_prefix(hist, fit.merges, a, (4.0,))
    fine = best_prefix(hist, fit.merges, a, DEFAULT.prefix_ladders)
    assert 0 < fine <= len(fit.merges) and bits(fine) <= bits(coarse)


# ---------------------------------------------------------------------------- what is measured


def test_every_chain_is_measured(monkeypatch):
    """No chain is ruled out unmeasured: up to ``lean_above`` values the costing function sees
    every chain; beyond, the lean search ranks every chain's output by its rough size
    (order0_bytes) before the costing function sees the closest."""
    seen = set()
    x = np.load(EXCERPT)[:2000]

    def cost_spy(c):
        seen.add(tuple((e["stage"], e.get("order")) for e in c.chain))
        return Cost(len(msgpack.packb(c.tokens.tolist())), 0)

    specs = [PREDICTORS[name] for name in DEFAULT.auto_chains]
    chains = [build_chain(spec) for spec in specs]
    everyone = {tuple((name, opts.get("order")) for name, opts in spec) for spec in specs}
    s = replace(DEFAULT, lean_above=x.size)
    plan(frontend.to_channels(x), chains, 2, cost_spy, ReplayEncoder(None, {}, s), s)
    assert seen == everyone
    s = replace(DEFAULT, lean_above=x.size - 1)
    rough, real = [], estimates.order0_bytes
    monkeypatch.setattr(lean, "order0_bytes", lambda y, s, counts=None: rough.append(y.shape[0]) or real(y, s, counts))
    seen.clear()
    plan(frontend.to_channels(x), chains, 2, cost_spy, ReplayEncoder(None, {}, s), s)
    assert rough == [x.size] * len(chains)
    assert seen and seen <= everyone


class _OtherEncoder(ReplayEncoder):
    """A stand-in for a future encoder: proposes its own stream (the bare alphabet), no replay."""

    def propose(self, chain, y, level, cost, sampled):
        alphabet = Alphabet.from_data(y)
        ids = alphabet.to_ids(y)
        return [Candidate(chain, alphabet, np.zeros((0, 2), np.int32), ids, coders_for(level))]


def test_any_encoder_plugs_in_by_proposing_candidates():
    x = np.load(EXCERPT)[:2000]
    sizes = {}

    def cost(c):
        size = len(msgpack.packb(c.tokens.tolist())) + 10 * len(c.chain)
        sizes[id(c)] = size
        return Cost(size, size)

    chains = [build_chain(PREDICTORS[name]) for name in DEFAULT.auto_chains]
    best = plan(frontend.to_channels(x), chains, 1, cost, _OtherEncoder(None, {}, DEFAULT), DEFAULT)
    assert len(best.merges) == 0 and best.tokens.shape[0] == x.size
    assert sizes[id(best)] == min(sizes.values())


def test_level_2_context_mixing_candidates_have_no_merges():
    """Level 2 offers its context-mixing coders the bare alphabet only (they model the values'
    context themselves): every context-mixing candidate, on a signal whose static candidate
    keeps merges, has none."""
    rng = np.random.default_rng(5)
    x = np.tile(rng.integers(0, 50, 40), 60).astype(np.int16)  # 2 400 values, merges pay
    size, rec = planned(x, 2, "none")
    assert size == len(check_roundtrip(x, level=2, predictor="none"))
    static = [c for c in rec.coded if c.family == "static" and not c.variant]
    cm = [c for c in rec.coded if c.family == "adaptive"]
    assert static and len(static[0].merges) > 0
    assert cm and all(len(c.merges) == 0 for c in cm)
    assert all(np.array_equal(c.tokens, c.alphabet.to_ids(x.astype(np.int64))) for c in cm)


def test_level_2_does_not_cost_the_bare_alphabet_twice_with_the_static_coders():
    """Level 2's context-mixing candidate (the bare alphabet) is offered the context mixers,
    "packed" and "const" only: level 1's bare candidate, the same tokens, already measured the
    static coders. The container is still never larger than level 1's."""
    x = np.load(EXCERPT)[:4000]
    with configured(lean_above=x.size):
        size, rec = planned(x, 2)
        assert size == len(check_roundtrip(x, level=2))
    offered = [c.coders for c in rec.coded]
    context = [c for c in offered if CONTEXT_MIXERS & set(c)]
    assert context and all("rans" not in c and "mag" not in c and "packed" in c for c in context)
    assert any("rans" in c for c in offered)
    assert size <= len(compress(x, level=1))


def test_level1_variants_are_the_id_layouts_offered():
    """Level 1 proposes, besides the static prefix, the id layouts of ``level1_variants``."""
    rng = np.random.default_rng(5)
    x = (np.tile(rng.integers(0, 50, 40), 60) * 3).astype(np.int16)  # merges pay; holes in the range
    variants = {}
    for layouts in (("bare", "dense"), ("dense",), ()):
        s = replace(DEFAULT, level1_variants=layouts)
        _, rec = planned(x, 1, "none", s)
        variants[layouts] = {c.variant for c in rec.coded}
    assert variants == {("bare", "dense"): {"", "bare", "dense"}, ("dense",): {"", "dense"}, (): {""}}


def test_encode_methods_and_bits_passes():
    """The candidate kept, with merges, is re-encoded by each of ``encode_methods`` and the
    smallest kept (ties: replay, the writer's own); "bits" runs ``bits_passes`` segmentations,
    each priced by the previous stream's frequencies. (Level 1's run over all the values to
    min_count 2, as the figures were measured: fast_merge_min_count's run keeps other merges.)"""
    x = (np.load(EXCERPT)[:12_000] // 64).astype(np.int16)
    rec = Recorder(x)
    s2 = replace(DEFAULT, fast_merge_min_count=2)
    best = plan(frontend.to_channels(x), [build_chain(PREDICTORS["none"])], 1, rec, ReplayEncoder(None, {}, s2), s2)
    assert len(best.merges) > 0 and best.method == "replay"
    assert replay.methods_to_try(best, DEFAULT) == DEFAULT.encode_methods == ("replay", "bits")
    assert choose_method(best, rec, replace(DEFAULT, encode_methods=("replay",))) is best
    one = choose_method(best, rec, replace(DEFAULT, bits_passes=1))
    two = choose_method(best, rec, DEFAULT)
    assert one.method == two.method == "bits" and DEFAULT.bits_passes == 2
    assert rec(two).size < rec(one).size < rec(best).size  # 1 434, 1 441 and 1 464 B measured
    model = ubpe.Model(best.alphabet, best.merges)
    for c in (one, two):
        assert np.array_equal(model.decode(c.tokens), model.decode(best.tokens))
    # level 1's plan by estimates re-encodes by fast_encode_methods (replay alone by default)
    with configured(fast_merge_min_count=2):
        assert len(compress(x, level=1, predictor="none")) == rec(best).size
    with configured(fast_encode_methods=DEFAULT.encode_methods, fast_merge_min_count=2):
        assert len(compress(x, level=1, predictor="none")) == rec(two).size


# ---------------------------------------------------------------------------- samples


def test_sample_beyond_full_fit_is_deterministic():
    """Beyond ``full_fit`` values the exhaustive search (``lean_upto = full_fit``; level 2's lean
    search runs to ``lean_upto``) sizes candidates on ``sample`` values in ``windows`` windows."""
    x = np.load(EXCERPT)[:12000]
    with configured(full_fit=3000, sample=2048, lean_upto=3000):
        a = check_roundtrip(x, level=2)
        assert a == compress(x, level=2)
        size, rec = planned(x, 2)
    assert size == len(a)
    assert describe(a).front  # a front end is chosen on this smooth signal
    sampled = {c.tokens.shape[0] for c in rec.coded if c.rebuild is not None}
    assert 2048 in sampled and max(sampled) <= 2048  # sized on the sample (merges: fewer tokens)
    assert any(c.tokens.shape[0] == x.size for c in rec.coded)  # the winner rebuilt on all the values
    with configured(full_fit=3000, sample=2048, windows=2, lean_upto=3000):
        assert compress(x, level=2) != a  # other windows, another sample: another estimate


def test_n_tokens_smaller_than_the_full_alphabet_beyond_the_sample():
    """A sample can hold fewer distinct values than all the values: a clear ValueError."""
    x = np.zeros(12_000, np.int16)
    x[700:710] = np.arange(10) * 37 + 5  # between the sample's first two windows (0-127, 791-918)
    a = len(np.unique(x))
    with configured(full_fit=3000, sample=2048):
        with pytest.raises(ValueError, match="n_tokens"):
            compress(x, n_tokens=3, delta=0, level=1)
        check_roundtrip(x, n_tokens=a + 4, delta=0, level=1)


def test_cm_candidate_on_a_sample_keeps_level_2_at_most_level_1_and_is_deterministic():
    """From ``cm_sample_above`` values a chain's context-mixing candidate is sized on
    ``cm_sample`` of them (``screen_windows`` windows); only the winner is built on all the values
    and compared exactly with the best candidate built on all of them."""
    ecg = np.load(EXCERPT)
    for x in (ecg[:6000], ecg[-5000:].reshape(2500, 2)):
        with configured(cm_sample_above=2000, cm_sample=1024, lean_above=1 << 20):
            size, rec = planned(x, 2)
            two = check_roundtrip(x, level=2)
            assert two == compress(x, level=2) and size == len(two)
        runs = rec.cm_runs()
        assert 1024 in runs and x.size in runs, runs  # sized on the sample, one rebuilt
        assert len(two) <= len(compress(x, level=1))
        with configured(cm_sample_above=2000, cm_sample=1024, lean_above=1 << 20, screen_windows=1):
            _, one_window = planned(x, 2)

        def sampled(r: Recorder) -> list[np.ndarray]:
            return [c.tokens for c in r.coded if c.family == "adaptive" and c.tokens.shape[0] == 1024]

        assert sampled(one_window) and sampled(rec)  # screen_windows: other windows, another sample
        assert not np.array_equal(sampled(one_window)[0], sampled(rec)[0])
        assert runs.count(x.size) == 1 < len(runs)  # of the sampled ones only the best rebuilt


def _name(c: Candidate) -> tuple:
    return tuple((e["stage"], e.get("order")) for e in c.chain)


def test_screen_beyond_screen_sample():
    """Beyond ``screen_sample`` values every chain is first screened at level 1 on a sample;
    only the ``screen_keep`` smallest (and those within ``screen_close``) go on."""
    x = np.cumsum(np.random.default_rng(4).integers(-9, 10, 20_000)).astype(np.int32)
    with configured(lean_above=1 << 30, short_lean_upto=0, fast_level1=False) as s:
        _, rec = planned(x, 1)
    chains_built = {_name(c) for c in rec.coded if c.tokens.shape[0] == x.size}
    assert x.size > s.screen_sample and len(chains_built) <= s.screen_keep + 1 < len(auto_chains(
        frontend.to_channels(x), 1, s))
    with configured(lean_above=1 << 30, short_lean_upto=0, screen_sample=1 << 30, fast_level1=False):
        _, every = planned(x, 1)
    assert len({_name(c) for c in every.coded}) == len(auto_chains(
        frontend.to_channels(x), 1, DEFAULT))


class _Recording(frontend.decorrelate.DecorrelateStage):
    """The decorrelate stage, recording the shape of every input it is given."""

    shapes: list = []

    def forward(self, x):
        type(self).shapes.append(x.shape)
        return super().forward(x)


def test_screen_keeps_channels_together_for_decorrelate():
    """Beyond ``screen_sample`` values the screen samples windows; a chain relating channels sees them
    as the input's channels (not windows as channels), so near-identical channels pick it."""
    rng = np.random.default_rng(11)
    left = np.cumsum(rng.integers(-40, 41, 40_000)).astype(np.int32)
    x = np.stack([left, left + rng.integers(-1, 2, left.size)], axis=1)
    assert x.size > DEFAULT.screen_sample
    chains = [build_chain(PREDICTORS[k]) for k in ("delta1", "lpc")] + [[_Recording()] + build_chain(
        PREDICTORS["delta1"])]
    _Recording.shapes = []
    search.screen(frontend.to_channels(x), chains, _packed_cost, DEFAULT)
    assert _Recording.shapes and all(s[0] == 2 for s in _Recording.shapes), _Recording.shapes  # the two channels
    data = check_roundtrip(x, level=1)
    assert describe(data).front[0]["stage"] == "decorrelate"
    assert len(data) <= len(compress(x, predictor="delta1", level=1))


def test_screen_windows_are_long_enough_to_learn_and_close_chains_go_on():
    """The screen's windows hold ``screen_sample / screen_windows`` frames of one channel (4096:
    an LPC block, time for the adaptive cascade to learn); besides the ``screen_keep`` smallest,
    every chain within ``screen_close`` of the last of them goes on (the level-1 proxy errs by
    about that much)."""
    s = DEFAULT
    assert s.screen_sample // s.screen_windows >= 4096
    x = frontend.to_channels(np.cumsum(np.random.default_rng(4).integers(-9, 10, 40_000)).astype(np.int32))
    windows, joined, scale = search.screen_sample(x, s)
    assert windows.shape == (s.screen_windows, s.screen_sample // s.screen_windows)
    assert joined.shape == (1, s.screen_sample)
    assert search.screen_sample(x, replace(s, screen_windows=8, screen_sample=4096))[0].shape == (8, 512)
    assert scale == x.size / s.screen_sample
    assert np.array_equal(windows[0], x[0, :windows.shape[1]]) and np.array_equal(windows[-1], x[0, -windows.shape[1]:])
    names = ["none", "delta1", "delta2", "lpc", "delta1+adaptive", "lpc+adaptive"]
    chains = [build_chain(PREDICTORS[k]) for k in names]

    def runs(sizes: list[float], **changes) -> list[str]:
        """The chains kept when the screen's cost of chain i is sizes[i] (by its stage names)."""
        by_stages = {tuple(st.name for st in ch): v for ch, v in zip(chains, sizes)}

        def cost(c):
            return Cost(int(by_stages[tuple(e["stage"] for e in c.chain)]), 0)

        kept, _ = search.screen(x, chains, cost, replace(s, **changes))
        return [names[chains.index(k)] for k in kept]

    # delta1 and delta2 share their stage names: give them the same size
    close = int(808 * s.screen_close)
    assert runs([1000, 900, 900, 800, 808, 900]) == ["lpc", "delta1+adaptive"]
    assert runs([1000, 900, 900, 800, 808, close]) == ["lpc", "delta1+adaptive", "lpc+adaptive"]
    assert runs([1000, 900, 900, 800, 808, close + 1]) == ["lpc", "delta1+adaptive"]
    assert runs([1000, 900, 900, 800, 808, close + 1], screen_keep=3) == ["lpc", "delta1+adaptive", "lpc+adaptive"]
    assert runs([1000, 900, 900, 800, 808, 900], screen_close=1.2) == names[1:]


def test_screen_keeps_the_raw_values_at_level_2_when_close():
    """Level 2's screen also keeps the first chain (no front end) when within
    ``screen_first_within`` of the smallest, and level 1's fast chains (level 1's candidates only)."""
    x = frontend.to_channels(np.cumsum(np.random.default_rng(4).integers(-9, 10, 40_000)).astype(np.int32))
    names = ["none", "delta1", "lpc", "lpc+adaptive"]
    chains = [build_chain(PREDICTORS[k]) for k in names]
    sizes = {(): 1200, ("delta",): 1000, ("lpc",): 1100, ("lpc", "adaptive"): 950}

    def cost(c):
        return Cost(sizes[tuple(e["stage"] for e in c.chain)], 0)

    def kept(level: int, **changes):
        out, static_only = search.screen(x, chains, cost, replace(DEFAULT, **changes), keep_first=level == 2)
        return [names[chains.index(k)] for k in out], static_only

    assert kept(1) == (["delta1", "lpc+adaptive"], [False, False])
    assert kept(2) == (["none", "delta1", "lpc", "lpc+adaptive"], [False, False, True, False])
    assert kept(2, screen_first_within=1.2)[0] == ["delta1", "lpc", "lpc+adaptive"]  # 1 200 > 1.2 x 950


def test_one_window_samples_start_at_the_first_frame():
    """A sample of one window (``screen_windows``, ``windows`` 1) is the first frames,
    without a division by zero (found by this suite: numpy warned and happened to give 0)."""
    import warnings

    x = frontend.to_channels(np.cumsum(np.random.default_rng(4).integers(-9, 10, 40_000)).astype(np.int32))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        windows, joined, _ = search.screen_sample(x, replace(DEFAULT, screen_windows=1))
        assert windows.shape == (1, DEFAULT.screen_sample) and np.array_equal(windows[0], x[0, :DEFAULT.screen_sample])
        with configured(sample=2048, windows=1, screen_windows=1):
            data = compress(x[0], level=1, block_size=6000)
    assert np.array_equal(ubpe.decompress(data), x[0])


def test_blocked_model_is_fitted_on_a_sample():
    """A blocked container's one model is planned on ``sample`` values in ``windows``
    windows: one window at the start sees only the first half's motifs,
    two windows both halves; a sample of 512 values trains at most 512 / 8 merges."""
    rng = np.random.default_rng(3)
    first, second = rng.integers(0, 200, (6, 9)), rng.integers(200, 400, (6, 9))
    x = np.concatenate([first[rng.integers(0, 6, 2000)].reshape(-1),
                        second[rng.integers(0, 6, 2000)].reshape(-1)]).astype(np.int16)  # 36 000 values

    def blocked(**changes) -> bytes:
        with configured(**changes):
            data = compress(x, level=1, predictor="none", block_size=6000, n_candidates=1)
        assert np.array_equal(ubpe.decompress(data), x) and describe(data).blocks == 6
        return data

    default, one, two, small = blocked(), blocked(sample=2048, windows=1), \
        blocked(sample=2048, windows=2), blocked(sample=512, windows=2)
    assert len(two) < 0.2 * len(one)  # 1 899 B against 13 664 measured
    assert describe(small).n_merges <= 512 // DEFAULT.auto_values_per_merge and len(default) < 0.3 * len(small)


def _quiet_with_events(n: int, seed: int = 12) -> np.ndarray:
    """A quiet int32 noise floor with rare large excursions (a seismometer between events):
    most of the distinct residuals are the excursions, each a value of its own."""
    rng = np.random.default_rng(seed)
    d = rng.normal(0, 30, n)
    events = rng.choice(n, n // 16, replace=False)
    d[events] += rng.normal(0, 200_000, events.size)
    return np.round(np.cumsum(d)).astype(np.int32)


@pytest.mark.parametrize("sizes", ["full", "cm_sample"])
def test_level2_offers_dense_ids_to_the_context_mixers(sizes):
    """A heavy-tailed residual's alphabet (its excursions, each a distinct value) costs more
    than the holes of its range cost "cms2": level 2 offers the dense ids over [min, max] (no
    alphabet stored), sized on all the values or on a coder sample (the best sampled candidate
    rebuilt); the container is exact and smaller than without the offer (``dense_cm_alphabet``
    above every alphabet) when sized on all the values, at most as large on a sample."""
    changes = {"cm_sample_above": 4096, "cm_sample": 4096} if sizes == "cm_sample" else {}
    x = _quiet_with_events(12_000)
    with configured(**changes):
        data = check_roundtrip(x, level=2, predictor="delta1")
        _, rec = planned(x, 2, "delta1")
    with configured(dense_cm_alphabet=1 << 30, **changes):
        without = compress(x, level=2, predictor="delta1")
    if sizes == "cm_sample":
        assert any(c.variant == "dense" and c.family == "adaptive" and c.tokens.shape[0] == 4096 for c in rec.coded)
        assert len(data) <= len(without)
        return
    d = unpack_any(data)
    # the dense "cms2" candidate on all the values, exact; the container no larger (since the
    # "mag" table coding of issue 28 the static "mag" on the same dense ids wins: 12 409 B
    # against "cms2"'s 12 414)
    dense_cm = [rec.cost(c).size for c in rec.coded
                if c.variant == "dense" and c.family == "adaptive" and c.tokens.shape[0] == x.size]
    assert dense_cm and len(data) <= min(dense_cm) and len(data) <= len(without)
    assert d["stream"]["coder"] in ("cms2", "mag")
    a = d["model"]["a"]
    residual = np.diff(x.astype(np.int64))
    assert a == int(residual.max()) - int(residual.min()) + 1 > np.unique(residual).size  # every value of the range


def test_dense_ids_are_not_offered_for_small_alphabets():
    y = np.array([0, 5, 5, 9, 0, 100], np.int64)
    assert candidates.dense_cm_candidate([], y, 4, ("cms2",), DEFAULT) is None  # 4 < dense_cm_alphabet
    assert candidates.dense_cm_candidate([], y, 4, ("cms2",), replace(DEFAULT, dense_cm_alphabet=4)) is not None
    c = candidates.dense_cm_candidate([], y, 4, ("cms2",), DEFAULT, always=True)
    assert len(c.alphabet) == 101 and c.tokens.tolist() == [0, 5, 5, 9, 0, 100] and c.variant == "dense"
    wide = np.array([0, 1 << 40], np.int64)
    assert candidates.dense_cm_candidate([], wide, 2, ("cms2",), DEFAULT, always=True) is None  # beyond MAX_VOCAB


def test_dense_ids_beyond_full_fit_round_trip():
    """Beyond ``full_fit`` a dense candidate sized on the sample and rebuilt on all the values
    (whose range may be wider) is exact."""
    x = _quiet_with_events(12_000, seed=5)
    with configured(full_fit=8192, sample=4096, dense_cm_alphabet=2):
        check_roundtrip(x, level=2, predictor="delta1")
        _, rec = planned(x, 2, "delta1")
    assert any(c.variant == "dense" and c.family == "adaptive" and c.tokens.shape[0] == 4096 for c in rec.coded)


def _packed_cost(c):
    size = len(msgpack.packb(c.tokens.tolist()))
    return Cost(size, size)


# ---------------------------------------------------------------------------- the lean search


def test_lean_search_runs_about_one_full_context_mixing_pass():
    """Beyond ``lean_above`` values level 2 sizes its context-mixing candidates on samples of at
    most ``lean_cm_sample`` values and builds on all the values only the best estimate; the
    exhaustive search runs the coder on all the values of every chain it screens in. The lean
    container stays within 1 % of the exhaustive one and at most level 1's."""
    x = np.resize(np.load(EXCERPT), 12_000)
    s = DEFAULT
    assert x.size > max(s.lean_above, s.lean_cm_sample, s.lean_small)
    with configured(lean_close=1.05):  # several finalists, sized on samples
        size, rec = planned(x)
        lean_data = check_roundtrip(x, level=2)
        assert size == len(lean_data)
        assert compress(x, level=2) == lean_data == compress(x, level=2, threads=2)  # deterministic
    runs = rec.cm_runs()
    full = [r for r in runs if r == x.size]
    sampled = [r for r in runs if r != x.size]
    assert len(full) == 1 and len(sampled) >= 2 and all(r <= s.lean_cm_sample for r in sampled), runs
    with configured(lean_close=1.05, lean_above=x.size):
        exhaustive, rec = planned(x)
    assert rec.cm_runs().count(x.size) > len(full)
    assert exhaustive <= len(lean_data) <= 1.01 * exhaustive
    assert len(lean_data) <= len(compress(x, level=1))


def test_lean_search_sizes_context_mixing_on_a_sample():
    """With a small ``lean_cm_sample``, the finalists' context-mixing candidates are sized on a
    sample (``screen_windows`` windows), the winner rebuilt on all the values: exact,
    deterministic, at most level 1."""
    ecg = np.load(EXCERPT)
    for x in (ecg[:6000], ecg[-5000:].reshape(2500, 2)):
        with configured(lean_cm_sample=1024, lean_close=1.5):  # several finalists, so samples are compared
            size, rec = planned(x)
            two = check_roundtrip(x, level=2)
            assert two == compress(x, level=2) and size == len(two)
        runs = rec.cm_runs()
        assert 1024 in runs and x.size in runs, runs
        assert len(two) <= len(compress(x, level=1))
        with configured(lean_cm_sample=1024, lean_close=1.5, screen_windows=1024):  # one value a window
            _, other = planned(x)

        def samples(r: Recorder) -> list[np.ndarray]:
            return [c.tokens for c in r.coded if CONTEXT_MIXERS & set(c.coders) and c.tokens.shape[0] == 1024]

        assert len(samples(other)) == len(samples(rec)) > 1
        assert not any(np.array_equal(a, b) for a, b in zip(samples(other), samples(rec)))  # other windows


def test_lean_search_on_large_inputs_takes_larger_samples():
    """From ``lean_cm_large`` values the context mixers are sized on ``lean_cm_sample_large``
    values, the ``lean_keep_large`` smallest estimates are finalists and the chains within
    ``lean_prune_large`` are estimated."""
    x = np.resize(np.load(EXCERPT), 12_000)
    with configured(lean_cm_large=10_000, lean_cm_sample_large=3000, lean_keep_large=3) as s:
        _, rec = planned(x)
        check_roundtrip(x, level=2)
    runs = rec.cm_runs()
    assert x.size >= s.lean_cm_large and 3000 in runs and s.lean_cm_sample not in runs, runs
    assert len([r for r in runs if r == 3000]) >= 3
    with configured(lean_cm_large=10_000, lean_cm_sample_large=3000, lean_keep_large=1, lean_prune_large=1.0,
                    lean_close=1.0, screen_first_within=0.5, lean_first_check=0.5):
        _, one = planned(x)
    assert one.cm_runs() == [x.size]  # one finalist: sized on all the values at once


def test_order0_bytes_ranks_by_entropy_and_table():
    """The rough size of the lean search and level 1: order-0 entropy plus ``order0_table_bits`` per
    distinct value."""
    y = np.array([0, 0, 0, 1], np.int64)
    for bits in (DEFAULT.order0_table_bits, 0, 20):
        s = replace(DEFAULT, order0_table_bits=bits)
        expected = (4 * np.log2(4) - 3 * np.log2(3) + 2 * bits) / 8
        assert estimates.order0_bytes(y, s) == pytest.approx(expected)
        assert estimates.order0_bytes(np.zeros(0, np.int64), s) == 0.0
        wide = np.array([0, 1 << 40, 0, 1 << 40], np.int64)  # beyond a histogram: unique counts
        assert estimates.order0_bytes(wide, s) == pytest.approx((4 + 2 * bits) / 8)
        top = np.array([2**64 - 1, 2**64 - 2], np.uint64)
        assert estimates.order0_bytes(top, s) == pytest.approx((2 + 2 * bits) / 8)
        for v in (y, wide, top):  # the counts level 1 computes once give the same size
            assert estimates.value_counts(v).tolist() == np.unique(v, return_counts=True)[1].tolist()
            assert estimates.order0_bytes(v, s, estimates.value_counts(v)) == estimates.order0_bytes(v, s)


def _lean_outputs(x: np.ndarray) -> list[tuple[list, np.ndarray, list[dict]]]:
    """(chain, output on the screen's sample, record) for every chain the lean search ranks."""
    xc = frontend.to_channels(np.asarray(x))
    windows, joined, scale = search.screen_sample(xc, DEFAULT)
    out = []
    for spec in auto_chains(xc, 2, DEFAULT):
        chain = build_chain(spec)
        across = any(st.name == "decorrelate" for st in chain)
        y, record = frontend.forward(joined if across else windows, chain)
        out.append((chain, np.ascontiguousarray(y).reshape(-1), record))
    return out


def _cost_of(dtype: str):
    return writer.cost_function({"dtype": dtype, "shape": [1], "crc": 0, "front": []})


def test_forward_passes_share_prefixes_and_give_the_same_output():
    """The lean search's forward passes reuse the longest computed prefix ("lpc+adaptive" from
    "lpc"): the output and record of every chain are those of its own forward pass, and each
    distinct prefix runs once."""
    ecg = np.load(EXCERPT)
    for x in (ecg[:20_000], ecg[:6000].reshape(3000, 2)):
        xc = frontend.to_channels(x)
        specs = auto_chains(xc, 2, DEFAULT)
        chains = [build_chain(spec) for spec in specs]
        cache: dict = {}
        inputs = {False: xc, True: xc}
        for i, chain in enumerate(chains):
            y, record = lean.forward_shared(inputs, chains, i, cache)
            y0, record0 = frontend.forward(xc, build_chain(specs[i]))
            assert np.array_equal(y, y0) and y.dtype == y0.dtype and record == record0, record0
        prefixes = {tuple((st.name, repr(sorted(vars(st).items()))) for st in c[:k])
                    for c in chains for k in range(1, len(c) + 1)}
        forwards = [k for k in cache if isinstance(k[0], bool)]  # (the cache keeps each stage's key too)
        assert len(forwards) == len(prefixes) < sum(len(c) for c in chains)
        assert all(cache[("stage key", id(st))][1] == (st.name, repr(sorted(vars(st).items())))
                   for c in chains for st in c)


def test_static_estimate_tracks_the_exact_level_1_proxy():
    """The lean search ranks chains by static_estimate instead of costing them exactly: on the
    bundled ECG excerpt (whole and on a grid) every predicting chain's estimate is within 5 % of
    the exact proxy (screened_size), and the chain it ranks first is within ``screen_close`` of
    the exact best. Values that are not integers rank last; an empty output costs its params
    only."""
    ecg = np.load(EXCERPT)
    cost = _cost_of("<i2")
    for x in (ecg, ecg[:5000] * 12 - 7):
        outs = _lean_outputs(x)
        exact = [search.screened_size(rec, y, cost, 1.0) for _, y, rec in outs]
        est = [min(estimates.static_estimate(rec, y, 1.0, DEFAULT)) for _, y, rec in outs]
        for (chain, _, _), e, s in zip(outs, est, exact):
            # raw values (no chain, or the grid's indices alone): the estimate may overrate them
            # (the lean search checks those exactly)
            if [st.name for st in chain] not in ([], ["grid"]):
                assert 0.95 * s <= e <= 1.05 * s, ([st.name for st in chain], e, s)
        assert exact[int(np.argmin(est))] <= DEFAULT.screen_close * min(exact), (est, exact)
    assert min(estimates.static_estimate([], np.zeros(4, np.float64), 1.0, DEFAULT)) == float("inf")
    assert estimates.static_estimate([], np.zeros(0, np.int64), 1.0, DEFAULT)[0] == 1.0  # msgpack's empty list


def test_estimate_rates_are_the_mag_coders_rates_tried():
    """The "mag" estimate takes the best of ``estimate_rates``: more rates, never more bits."""
    rng = np.random.default_rng(11)
    loud = np.abs(np.cumsum(rng.integers(-40, 41, 5000))).astype(np.int64) % 4000
    y = loud - 2000
    few = estimates.estimate_parts([], y, 1.0, replace(DEFAULT, estimate_rates=(3,)))
    every = estimates.estimate_parts([], y, 1.0, replace(DEFAULT, estimate_rates=tuple(range(2, 9))))
    default = estimates.estimate_parts([], y, 1.0, DEFAULT)
    assert every[1] <= default[1] <= few[1] and every[0] == default[0] == few[0]  # "rans" does not depend on it
    assert every[1] < few[1]


def test_mag_bits_of_several_inputs_are_each_ones_own():
    """mag.estimate_bits of several (ids, center) at once gives each the bits of a call of its
    own, to the last bit, and the least over the rates: a louder second input does not move the
    first's bits."""
    rng = np.random.default_rng(11)
    rates = DEFAULT.estimate_rates
    quiet = rng.integers(90, 110, 3000).astype(np.int64)
    loud = np.abs(np.cumsum(rng.integers(-40, 41, 5000))).astype(np.int64) % 4000
    alone = [estimate_bits([(ids, int(np.median(ids)))], rates)[0] for ids in (quiet, loud)]
    assert estimate_bits([(quiet, 100), (loud, int(np.median(loud)))], rates)[0] == \
        estimate_bits([(quiet, 100)], rates)[0]
    assert estimate_bits([(quiet, int(np.median(quiet))), (loud, int(np.median(loud)))], rates) == alone
    assert alone[0] < alone[1] and len(estimate_bits([(loud, 0), (quiet, 0), (loud, 0)], rates)) == 3
    assert min(estimate_bits([(loud, 2000)], (r,))[0] for r in rates) == estimate_bits([(loud, 2000)], rates)[0]
    with pytest.raises(ValueError, match="rates"):
        estimate_bits([(quiet, 100)], (0,))


def test_static_estimate_of_dense_ids_counts_rans():
    """Values on a coarse grid (holes between every two): the dense ids' "mag" bits see the
    holes as magnitude, rANS does not; the dense estimate is within 5 % of the exact dense
    candidate, as the bare one of the bare candidate."""
    rng = np.random.default_rng(5)
    y = (np.cumsum(rng.integers(-2, 3, 8000)) % 97 * 8).astype(np.int64)
    y = np.diff(y)
    cost = _cost_of("<i8")
    found = candidates.bare_candidates([], y)
    assert [c.variant for c in found] == ["", "dense"]
    exact = [cost(c).size for c in found]
    est = estimates.static_estimate([], y, 1.0, DEFAULT)
    for e, s in zip(est, exact):
        assert 0.95 * s <= e <= 1.05 * s, (est, exact)


def test_likely_coders_drop_only_a_coder_that_loses():
    """Level 1 costs a static candidate without the coder its estimates rate
    ``fast_coder_clear`` larger than the other (likely_coders): on every chain's output of the
    bundled ECG excerpt, of the excerpt on a coarse grid and of white noise, a coder dropped
    would not have given the smaller container, and the container is the one with every coder.
    Where neither is rated clearly larger, both are kept; candidates with merges keep theirs."""
    cost = _cost_of("<i2")
    rng = np.random.default_rng(8)
    ecg = np.load(EXCERPT)
    dropped = 0
    for x in (ecg, ecg[:5000] * 12 - 7, rng.integers(-500, 500, 6000).astype(np.int16)):
        for _, y, rec in _lean_outputs(x):
            parts = estimates.estimate_parts(rec, y, 1.0, DEFAULT)
            found = candidates.bare_candidates(rec, y)
            for full, kept in zip(found, estimates.likely_coders(found, parts, DEFAULT)):
                assert set(kept.coders) <= set(full.coders) and {"packed", "const"} <= set(kept.coders)
                gone = set(full.coders) - set(kept.coders)
                dropped += len(gone)
                assert cost(kept).size == cost(replace(full, packed=None)).size, (gone, parts)
    assert dropped > 0
    c = candidates.bare_candidates([], np.arange(100, dtype=np.int64) % 7)[0]
    inf = float("inf")
    assert estimates.likely_coders([c], (100.0, 100.0, inf, inf), DEFAULT)[0].coders == c.coders
    assert "rans" not in estimates.likely_coders([c], (104.0, 100.0, inf, inf), DEFAULT)[0].coders
    assert estimates.likely_coders([c], (104.0, 100.0, inf, inf), replace(DEFAULT, fast_coder_clear=1.05))[0].coders \
        == c.coders
    merged = replace(c, merges=np.array([[0, 1]], np.int32))
    assert estimates.likely_coders([merged], (100.0, 10.0, inf, inf), DEFAULT)[0].coders == c.coders


def test_raw_values_are_a_context_mixing_finalist_only_where_their_context_is_learnable():
    """Beyond ``lean_small`` values the first chain (raw values) is sized with "cms2" on the
    strength of its estimate only when it has at most ``lean_raw_distinct`` distinct values a
    value (raw_learnable): a few levels repeated (a coarse grid) qualify, a smooth recording
    with a distinct value every few samples does not, and then no "cms2" run is spent on it."""
    rng = np.random.default_rng(12)
    few = (rng.integers(0, 60, 20_000) * 97).astype(np.int16)
    assert estimates.raw_learnable(few.astype(np.int64), DEFAULT)
    ecg = np.resize(np.load(EXCERPT), 12_000)
    assert not estimates.raw_learnable(ecg.astype(np.int64), DEFAULT)
    k = int(DEFAULT.lean_raw_distinct * 1000)
    edge = np.arange(1000, dtype=np.int64) % k
    assert estimates.raw_learnable(edge, DEFAULT)
    assert not estimates.raw_learnable(np.arange(1000, dtype=np.int64) % (k + 1), DEFAULT)
    assert not estimates.raw_learnable(np.zeros(0, np.int64), DEFAULT)

    def raw_runs(rec: Recorder) -> int:
        return sum(1 for c in rec.coded if CONTEXT_MIXERS & set(c.coders) and not c.chain)

    with configured(screen_first_within=10.0):  # raw values within reach by their estimate
        gated, gated_rec = planned(ecg)
        with configured(lean_raw_distinct=float("inf")):
            ungated, ungated_rec = planned(ecg)
    assert raw_runs(gated_rec) == 0 < raw_runs(ungated_rec)
    assert gated <= 1.01 * ungated


def test_lean_search_on_short_inputs_keeps_raw_values_and_close_chains():
    """Up to ``lean_small`` values the first chain (raw values) is always a context-mixing
    finalist, and so is every chain within ``lean_small_close`` of the smallest estimate."""
    x = np.load(EXCERPT)[:2000]
    assert DEFAULT.lean_above < x.size <= DEFAULT.lean_small
    _, rec = planned(x)
    finalists = {tuple(e["stage"] for e in c.chain) for c in rec.coded if CONTEXT_MIXERS & set(c.coders)}
    assert () in finalists
    with configured(lean_small=1024):  # beyond lean_small: raw values only on their estimate
        _, beyond = planned(x)
    fewer = {tuple(e["stage"] for e in c.chain) for c in beyond.coded if CONTEXT_MIXERS & set(c.coders)}
    assert len(fewer) < len(finalists)
    with configured(lean_small_close=1.0):
        _, only = planned(x)
    narrower = {tuple(e["stage"] for e in c.chain) for c in only.coded if CONTEXT_MIXERS & set(c.coders)}
    assert () in narrower and len(narrower) < len(finalists)  # 2 finalists, 5 at 1.15 (measured)


def test_raw_values_whose_estimate_runs_high_are_checked_exactly():
    """The raw values' estimate runs high (here, on a grid of 40, the grid's indices alone: 2.8 to
    2.9 times the smallest; the values themselves, before the grid chains followed every chain
    of the divided values: 3.05 times, exact 2.65 times): within ``lean_first_check`` of the
    smallest their exact level-1 proxy decides against ``screen_first_within``."""
    x = (np.resize(np.load(EXCERPT), 20_000) // 40 * 40).astype(np.int16)  # few levels: learnable

    def raw_is_a_finalist(lean_first_check: float) -> bool:
        with configured(screen_first_within=2.8, lean_prune=10.0, lean_prune_first=10.0,
                        lean_first_check=lean_first_check):
            _, rec = planned(x)
        return any([e["stage"] for e in c.chain] in ([], ["grid"]) and CONTEXT_MIXERS & set(c.coders)
                   for c in rec.coded)

    assert raw_is_a_finalist(2.9) and not raw_is_a_finalist(2.8)


def test_lean_search_prunes_by_the_rough_size():
    """Chains whose rough size is beyond ``lean_prune`` times the smallest are not estimated
    (the first chain: beyond ``lean_prune_first``)."""
    x = np.resize(np.load(EXCERPT), 12_000)
    counted = {}
    for prune in (1.0, 1.2, 10.0):
        with configured(lean_prune=prune, lean_prune_first=prune):
            _, rec = planned(x)
        counted[prune] = len({tuple(e["stage"] for e in c.chain) for c in rec.coded})
    assert counted[1.0] <= counted[1.2] <= counted[10.0] and counted[1.0] < counted[10.0]


def test_lean_static_candidates_only_on_the_best_chain_where_they_may_win():
    """The lean search builds static candidates (bare and dense ids, no merges) on all the values
    only on the chain of the best context-mixing container, and only when their estimate is
    within ``lean_static_within`` of its size (and their near-exact size within
    ``lean_static_exact_within``: tests/test_level2_search_cost.py)."""
    x = np.resize(np.load(EXCERPT), 12_000)
    with configured(lean_close=1.5, lean_static_within=10.0, lean_static_exact_within=10.0):  # static built
        _, rec = planned(x)
    with configured(lean_close=1.5, lean_static_within=0.0):
        _, none = planned(x)

    def static_full(r: Recorder) -> list[Candidate]:
        return [c for c in r.coded if c.family == "static" and c.tokens.shape[0] == x.size]

    cm_full = [c for c in rec.coded if CONTEXT_MIXERS & set(c.coders) and c.tokens.shape[0] == x.size]
    assert len({_name(c) for c in rec.coded if CONTEXT_MIXERS & set(c.coders)}) > 1
    assert static_full(rec) and all(len(c.merges) == 0 for c in static_full(rec))
    assert {_name(c) for c in static_full(rec)} == {_name(c) for c in cm_full}  # the best chain's
    assert not static_full(none)


def test_lean_search_offers_the_context_mixer_one_id_layout():
    """Each finalist offers the context mixers dense ids unless the bare ids' estimate times
    ``lean_dense_bias`` is at most the dense ids'."""
    x = np.resize(np.load(EXCERPT), 12_000) * 3  # holes in the range: a static dense candidate exists
    variants = {}
    for bias in (0.0, DEFAULT.lean_dense_bias):
        with configured(lean_dense_bias=bias, dense_cm_alphabet=2):
            _, rec = planned(x)
        variants[bias] = {c.variant for c in rec.coded if c.family == "adaptive"}
    assert variants == {0.0: {""}, DEFAULT.lean_dense_bias: {"dense"}}


# ---------------------------------------------------------------------------- chains offered


def test_weighting_needs_n_tokens_and_changes_what_is_kept():
    x = np.load(EXCERPT)[:4000]
    with pytest.raises(ValueError, match="n_tokens"):
        compress(x, weighting="count")
    a = len(np.unique(np.diff(x))) + 1
    sizes = {}
    for weighting in ("idf", "count"):
        sizes[weighting] = check_roundtrip(x, n_tokens=a + 200, weighting=weighting, delta=1, level=1)
    assert sizes["idf"] != sizes["count"]
    with pytest.raises(ValueError, match="weighting"):
        compress(x, n_tokens=a + 200, weighting="nope")


def test_multichannel_input_offers_decorrelate_chains():
    x = np.load(EXCERPT)[:4000]
    mono = frontend.to_channels(x)
    stereo = frontend.to_channels(x.reshape(2000, 2))
    for level in (1, 2):
        assert not any(spec[0][0] == "decorrelate" for spec in auto_chains(mono, level, DEFAULT) if spec)
        offered = [spec for spec in auto_chains(stereo, level, DEFAULT) if spec and spec[0][0] == "decorrelate"]
        assert offered and all(spec in PREDICTORS.values() for spec in offered)
        assert all(is_fast(spec) for spec in offered) or level == 2
    assert PREDICTORS["decorrelate+lpc+adaptive"] in auto_chains(stereo, 2, DEFAULT)
    assert PREDICTORS["decorrelate+lpc+adaptive"] not in auto_chains(stereo, 1, DEFAULT)


def test_rank_chain_offered_for_sparse_values():
    """``rank+delta1`` is offered when distinct values x ``rank_sparsity`` <= the span."""
    rng = np.random.default_rng(3)
    levels = np.sort(rng.choice(4000, 100, replace=False))
    x = frontend.to_channels(levels[rng.integers(0, 100, 3000)].astype(np.int16))
    span = int(x.max()) - int(x.min()) + 1
    assert 100 * DEFAULT.rank_sparsity <= span
    assert PREDICTORS["rank+delta1"] in auto_chains(x, 1, DEFAULT)
    assert PREDICTORS["rank+delta1"] not in auto_chains(x, 1, replace(DEFAULT, rank_sparsity=span // 100 + 1))


@pytest.mark.parametrize("dtype", [np.int8, np.int16, np.int64, np.uint16, np.uint64])
def test_grid_chains_offered_only_when_a_step_above_one_exists(dtype):
    info = np.iinfo(dtype)
    rng = np.random.default_rng(3)
    k = rng.integers(0, 5, 500)
    for step, offset, expected in ((1, 0, False), (3, 0, True), (2, int(info.min) + 1, True)):
        x = (np.asarray(offset, dtype=object) + step * k.astype(object)).astype(dtype)
        chans = frontend.to_channels(x)
        assert has_grid(chans) is expected, (step, offset)
        grid = [spec for spec in auto_chains(chans, 2, DEFAULT) if spec and spec[0][0] == "grid"]
        assert bool(grid) is expected
    # the extremes of the dtype: the difference spans the whole range, gcd exact
    ends = np.array([info.min, info.max], dtype=dtype)
    assert has_grid(frontend.to_channels(ends)) is (int(info.max) - int(info.min) > 1)
    assert not has_grid(frontend.to_channels(np.full(10, info.max, dtype)))  # constant: no step
    # one channel on a grid is enough
    two = np.stack([k * 4, k + np.arange(500) % 2], axis=1).astype(dtype)
    assert has_grid(frontend.to_channels(two))


def test_forced_grid_and_decorrelate_chains_round_trip():
    x = np.load(EXCERPT)[:3000]
    on_grid = x * 6 + 11
    for name in GRID_CHAINS:
        data = check_roundtrip(on_grid, predictor=name, level=1 if is_fast(PREDICTORS[name]) else 2)
        assert [e["stage"] for e in describe(data).front][0] == "grid"
    # on values on a grid of step 6 the grid chain's symbols are consecutive but for the first
    # difference (the first index, put where the predictors see the values divided: an outlier):
    # its alphabet's gaps are a third of those first differences alone store (a gap per symbol);
    # the coders see the same token statistics either way, so the sizes stay close
    with_grid = compress(on_grid, predictor="grid+delta1", level=1)
    without = compress(on_grid, predictor="delta1", level=1)
    grid_alphabet, plain_alphabet = unpack_any(with_grid)["alphabet"], unpack_any(without)["alphabet"]
    assert grid_alphabet["w"] == 0 and 3 * len(grid_alphabet["gaps"]) <= len(plain_alphabet["gaps"])
    assert len(with_grid) <= 1.01 * len(without)
    stereo = x.reshape(1500, 2)
    for name in DECORRELATE_CHAINS:
        data = check_roundtrip(stereo, predictor=name, level=2)
        assert [e["stage"] for e in describe(data).front][0] == "decorrelate"
