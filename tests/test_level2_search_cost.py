"""What level 2's lean search skips to cost less than the coding it chooses: level 1's plan where
its estimate of level 1's container rules it out (``level1_within``), and the static candidates'
coding where their near-exact size does (``lean_static_exact_within``). Through ``compress``,
``plan`` and the format's costing function (tests/test_planner.py's Recorder)."""

from __future__ import annotations

import pathlib

import numpy as np

import ubpe
from common import check_roundtrip
from test_planner import Recorder, planned
from ubpe import compress, frontend
from ubpe.frontend.chains import build_chain
from ubpe.planner import DEFAULT, ReplayEncoder, auto_chains, configured, plan

EXCERPT = pathlib.Path(ubpe.__file__).parent / "data" / "mitbih_208_excerpt.npy"


def _ecg_like() -> np.ndarray:
    """20 000 values of the ECG excerpt, times 4 plus a little noise: no merges pay at level 1."""
    rng = np.random.default_rng(3)
    x = np.resize(np.load(EXCERPT), 20_000).astype(np.int32) * 4 + rng.integers(-2, 3, 20_000)
    return x.astype(np.int16)


def _lean_candidate(x: np.ndarray):
    """The candidate level 2's plan gives ``x`` (its lean search: ``x`` has more than
    ``lean_above`` values wider than a byte) under the current settings."""
    s = ubpe.planner.current()
    xc = frontend.to_channels(x)
    rec = Recorder(x)
    return plan(xc, [build_chain(spec) for spec in auto_chains(xc, 2, s)], 2, rec, ReplayEncoder(None, {}, s), s), rec


def test_lean_search_estimates_level_1s_container():
    """The lean search's candidate carries its estimate of level 1's container: near its size
    where level 1 trains no merges (many distinct pairs of residuals)."""
    x = _ecg_like()
    assert x.size > DEFAULT.lean_above
    best, rec = _lean_candidate(x)
    one = len(compress(x, level=1))
    assert 0.9 * one <= best.level1_estimate <= 1.2 * one
    assert best.level1_estimate > DEFAULT.level1_within * rec(best).size  # level 1 not planned


def test_level_1_is_planned_where_it_may_train_merges():
    """Where level 1 may train merges (a repeated motif: few distinct pairs, each telling the
    next), the estimate is 0: level 1 is planned and its container kept when smaller."""
    x = np.tile(np.array([3, -1, 4, 1, 5, 9, -2, 6], np.int16), 3000)
    best, _ = _lean_candidate(x)
    assert best.level1_estimate == 0.0
    assert len(check_roundtrip(x, level=2)) <= len(compress(x, level=1))


def test_level1_within_decides_whether_level_1_is_planned():
    """``level1_within = inf`` plans level 1 after every lean search (level 2 never larger than
    level 1, by construction); 0 never after a lean search where level 1 trains no merges. Here
    level 2's container is smaller than level 1's, so all three give the same bytes."""
    x = _ecg_like()
    data = check_roundtrip(x, level=2)
    for within in (0.0, float("inf")):
        with configured(level1_within=within):
            assert compress(x, level=2) == data
    assert len(data) < len(compress(x, level=1))


def test_static_candidates_coded_only_within_their_near_exact_reach():
    """The static candidates of the best chain are coded only when their near-exact size (no
    coder run) is within ``lean_static_exact_within`` of the context-mixing container: never with
    0, as ``lean_static_within`` lets them with a large one; the container is then that one."""
    x = np.resize(np.load(EXCERPT), 12_000)

    def static_full(s_exact: float) -> tuple[int, list]:
        with configured(lean_close=1.5, lean_static_within=10.0, lean_static_exact_within=s_exact):
            size, rec = planned(x)
        return size, [c for c in rec.coded if c.family == "static" and c.tokens.shape[0] == x.size]

    size_all, coded = static_full(10.0)
    size_none, none = static_full(0.0)
    assert coded and not none
    assert size_none >= size_all


def test_lean_close_large_decides_the_finalists_from_lean_cm_large_values():
    """From ``lean_cm_large`` values the finalists are the ``lean_keep_large`` smallest estimates
    and those within ``lean_close_large`` of the last of them (``lean_close`` below)."""
    x = np.resize(np.load(EXCERPT), 12_000)

    def sampled_runs(**changes: float) -> int:
        with configured(lean_cm_large=10_000, lean_cm_sample_large=3000, lean_keep_large=1, **changes):
            _, rec = planned(x)
        return rec.cm_runs().count(3000)

    assert sampled_runs(lean_close_large=1.5, lean_close=1.0) > sampled_runs(lean_close_large=1.0, lean_close=1.5)


def test_level1_estimate_reuses_the_search_passes_exactly(monkeypatch):
    """The lean search hands its statistics passes to ``level1_estimate``: ``small_ids`` then
    reads the ids a pass made (the same array as made afresh) and the estimate is the same as
    without them, on outputs that rate merges and on those that do not."""
    from ubpe.planner import fast, lean

    rng = np.random.default_rng(11)
    motif = np.tile(np.array([3, -1, 4, 1, 5, 9, -2, 6], np.int16), 400)
    xs = [_ecg_like()[:3000], motif, (motif + rng.integers(-1, 2, motif.size)).astype(np.int16),
          (rng.laplace(0, 40, 2500)).astype(np.int16)]
    calls = []

    def checked(y, limit, memo=None):
        got, want = fast.small_ids(y, limit, memo), fast.small_ids(y, limit)
        assert (got is None) == (want is None)
        if got is not None:
            assert got[1] == want[1] and got[0].dtype == want[0].dtype and np.array_equal(got[0], want[0])
        calls.append(memo is not None and id(y) in memo)
        return got

    monkeypatch.setattr(lean, "small_ids", checked)
    for x in xs:
        with_passes, _ = _lean_candidate(x)
        monkeypatch.setattr(lean, "level1_estimate",
                            lambda *a, _f=lean.level1_estimate: _f(*a[:6]))  # (no passes)
        without, _ = _lean_candidate(x)
        monkeypatch.undo()
        monkeypatch.setattr(lean, "small_ids", checked)
        assert with_passes.level1_estimate == without.level1_estimate
    assert any(calls)  # some ids came from a pass
