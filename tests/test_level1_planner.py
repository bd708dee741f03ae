"""Level 1's planner after issue 28's profile (benchmarks/results/level1-planner.md):

* beyond ``fast_whole`` values its screen rates each chain's dense ids alone for "mag"
  (``fast_screen_dense_only``): the same containers as the screen that rated both layouts, on
  real-data slices; on generated inputs round trips, and sizes within a small bound of it;
* ``ubpe.planner.plan`` hands level 1's plan the chains as built (``fast_plan`` makes their "lpc"
  stages from the settings itself): the same candidate as the chains refitted under the
  settings first (``with_settings``).
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ubpe
from test_level1 import small_signals
from ubpe.frontend.chains import PREDICTORS, build_chain
from ubpe.planner import ReplayEncoder, configured, current, fast
from ubpe.planner import plan as planner_plan

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))


def _both(x: np.ndarray, **changes) -> tuple[bytes, bytes]:
    """Level 1's container of ``x`` with the dense-only screen and with both layouts rated."""
    with configured(fast_screen_dense_only=True, **changes):
        a = ubpe.compress(x, level=1, threads=1)
    with configured(fast_screen_dense_only=False, **changes):
        b = ubpe.compress(x, level=1, threads=1)
    return a, b


def shared_signals() -> tuple[np.ndarray, np.ndarray, list[np.ndarray]]:
    """The shared data's ECG, seismogram and audio files (the test skipped without them)."""
    try:
        import _data

        return _data.ecg(), _data.seismic(), [x for x, _rate in _data.audio()]
    except Exception as e:  # (the shared data missing: nothing to compare on)
        pytest.skip(f"shared data not available: {e}")


def _real_slices() -> list[tuple[str, np.ndarray]]:
    ecg, seismic, audio = shared_signals()
    joined = np.concatenate([a.reshape(-1) for a in audio[:6]]).astype(np.int16)
    return [("ecg", ecg), ("ecg[20000:60000]", ecg[20000:60000]), ("seismic", seismic),
            ("seismic[3000:]", seismic[3000:]), ("audio joined", joined[:60000])]


def test_dense_only_screen_gives_the_same_containers_on_real_data():
    for name, x in _real_slices():
        assert x.size > current().fast_whole  # (the screen's sample path)
        a, b = _both(x)
        assert a == b, name
        assert np.array_equal(ubpe.decompress(a), x), name


def test_dense_only_screen_skips_the_bare_counts_of_a_sample():
    rng = np.random.default_rng(5)
    y = np.cumsum(rng.integers(-40, 41, 4000)).astype(np.int64)
    y[::7] += 1000  # (gaps in the span: the bare and dense ids differ)
    with configured(fast_screen_dense_only=True) as s:
        lp = fast._layout_pass(y, s, None, screen=True)
        assert lp.has_dense and not lp.bare_counted and not lp.stats[:2].any() and lp.raws[0] == 0
        parts = fast.static_parts([], y, 2.0, s, {}, screen=True)
        assert parts[1] == float("inf") and parts[3] < float("inf")
        full = fast._layout_pass(y, s, None)  # not a screen: both layouts counted
        assert full.bare_counted and full.stats[:2].any()
        assert np.array_equal(full.stats[2:], lp.stats[2:]) and full.raws[1] == lp.raws[1]
    with configured(fast_screen_dense_only=False) as s:
        assert fast._layout_pass(y, s, None, screen=True).bare_counted


@settings(deadline=None, max_examples=30)
@given(st.integers(300, 2500), st.integers(0, 3), st.integers(0, 2**32 - 1))
def test_dense_only_screen_round_trips_and_stays_near(n, kind, seed):
    rng = np.random.default_rng(seed)
    if kind == 0:
        x = np.cumsum(rng.integers(-3, 4, n)).astype(np.int16)
    elif kind == 1:
        x = rng.normal(0, rng.uniform(1, 500), n).astype(np.int16)
    elif kind == 2:
        x = (np.cumsum(rng.normal(0, 5, n)) // 3 * 7).astype(np.int32)
    else:
        x = (300 * np.sin(np.arange(n) / rng.uniform(3, 50)) + rng.normal(0, rng.uniform(0.5, 30), n)).astype(np.int16)
    a, b = _both(x, fast_whole=256)  # (a sample screened: inputs beyond 256 values)
    assert np.array_equal(ubpe.decompress(a), x)
    # the screen's ranking may differ only where the dense and bare estimates differ, a few per
    # mille (200 such inputs: every container the same)
    assert len(a) <= 1.01 * len(b) + 16


def test_plan_without_with_settings_gives_the_same_candidate():
    rng = np.random.default_rng(11)
    x = np.cumsum(rng.integers(-30, 31, (1, 30000)), axis=1).astype(np.int16)
    chains = [build_chain(PREDICTORS[k]) for k in ("delta1", "delta2", "lpc")]
    from ubpe.api.writer import cost_function

    base = {"dtype": "<i2", "shape": [30000], "crc": 0, "front": []}
    with configured(lpc_reweight_span=48) as s:  # (tuning other than the stages' own)
        assert chains[2][0].reweight_options != s.lpc_reweight_options()
        got = planner_plan(x, chains, 1, cost_function(base), ReplayEncoder(None, {}, s), s)
        refit = [fast.with_settings(c, s) for c in chains]
        want = fast.fast_plan(x, refit, cost_function(base), ReplayEncoder(None, {}, s), s)
    assert got.chain == want.chain
    assert np.array_equal(got.tokens, want.tokens) and got.coders == want.coders


def _pair_reference(y: np.ndarray, rates: np.ndarray):
    """Two mag_stats passes (the bare ids rank[y - lo] about rank[median], the dense ids y - lo about
    the median), as _layout_pass made them: counts (4, contexts, buckets), raw bits, and the
    pair kernel's arguments."""
    from ubpe._kernels import level1 as k

    lo = int(y.min())
    d = y.astype(np.int64) - lo
    counts = np.bincount(d)
    rank = (np.cumsum(counts > 0) - 1).astype(np.int32)
    middle = int(np.searchsorted(np.cumsum(counts), y.shape[0] // 2, side="right"))
    ref = np.zeros((4, k.N_CONTEXTS, k.N_BUCKETS), np.int64)
    raw_bare = k.mag_stats(rank[d], int(rank[middle]), rates, ref[:2])
    raw_dense = k.mag_stats(y, lo + middle, rates, ref[2:])
    return ref, (raw_bare, raw_dense), (lo, rank, int(rank[middle]), middle)


def _check_pair(y: np.ndarray, rates: np.ndarray, limit: int) -> bool:
    from ubpe._kernels import layoutpair

    ref, raws, (lo, rank, cb, cd) = _pair_reference(y, rates)
    got = np.zeros_like(ref)
    hist = np.bincount(y.astype(np.int64) - lo)
    raw_bare, raw_dense, paired = layoutpair.pair_stats(y, lo, rank, hist, cb, cd, rates, got, limit)
    if paired:
        assert np.array_equal(got, ref)
        assert (raw_bare, raw_dense) == raws
    else:
        assert not got.any() and (raw_bare, raw_dense) == (0, 0)
        assert limit < y.shape[0]
    return paired


@settings(deadline=None, max_examples=200)
@given(st.lists(st.integers(-300, 300), min_size=2, max_size=400), st.integers(0, 3), st.sampled_from([2, 3, 4, 5, 6, 7, 8]),
       st.sampled_from([2, 3, 4, 5, 6, 7, 8]), st.sampled_from(["<i2", "<i4", "<i8"]), st.integers(0, 400))
def test_pair_stats_counts_both_layouts_as_two_passes(values, spread, ra, rb, dtype, limit):
    y = np.array(values, np.int64)
    y[::5] *= 1 + 30 * spread  # (tails with gaps: the bare and dense magnitudes differ there)
    y = y.astype(dtype)
    assert _check_pair(y, np.array([ra, rb], np.int64), limit) or limit < y.shape[0]
    assert _check_pair(y, np.array([ra, rb], np.int64), y.shape[0])  # (no limit: always paired)


def test_pair_stats_on_real_residuals_and_the_layout_pass():
    try:
        import _data

        inputs = [_data.ecg(), _data.seismic()] + [x for x, _rate in _data.audio()[:4]]
    except Exception as e:
        pytest.skip(f"shared data not available: {e}")
    from ubpe.planner.fast import fast_stages

    with configured() as s:
        stage = fast_stages(build_chain(PREDICTORS["lpc"]), s)[0]
        rates = np.array(s.estimate_rates, np.int64)
        for x in inputs:
            y = stage.forward(x.reshape(1, -1))[0].reshape(-1)
            assert _check_pair(y, rates, y.shape[0])
            on, off = fast._layout_pass(y, s, None), None
            with configured(fast_pair_stats=False) as s2:
                off = fast._layout_pass(y, s2, None)
            assert np.array_equal(on.stats, off.stats) and on.raws == off.raws
            assert np.array_equal(on.bare_ids(), off.bare_ids())
    # ECG's residual differs in few tokens: paired (no bare ids made by the pass)
    y = stage.forward(inputs[0].reshape(1, -1))[0].reshape(-1)
    with configured() as s:
        assert fast._layout_pass(y, s, None).ids is None


@settings(deadline=None, max_examples=40)
@given(st.data())
def test_pair_stats_writes_the_same_containers_as_two_passes(data):
    """``fast_pair_stats`` off: a ``mag_stats`` pass a layout; on: one paired pass. The same
    container, byte for byte, on the level-1 tests' short signals, screened whole and, at
    ``fast_whole=256``, on a sample."""
    x = data.draw(small_signals())
    whole = data.draw(st.sampled_from([{}, {"fast_whole": 256}]))
    with configured(fast_pair_stats=False, **whole):
        other = ubpe.compress(x, level=1, threads=1)
    with configured(**whole):
        got = ubpe.compress(x, level=1, threads=1)
    assert got == other
    assert np.array_equal(ubpe.decompress(got), x)
