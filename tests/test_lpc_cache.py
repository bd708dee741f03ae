"""The lpc stage's analysis cache within a planner scope (``lpc.analysis_cache``): channels
are told apart by comparing them with a kept copy (up to ``_ANALYSED_HELD`` bytes of copies,
else by digest), so an analysis is reused exactly for an equal channel and never for another,
even one changed in place after its analysis."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ubpe import frontend
from ubpe.frontend import lpc as P


def _fresh(stage, x: np.ndarray):
    """The stage's output outside any scope: analysed afresh, nothing kept."""
    assert P._ANALYSIS.depth == 0
    return stage.forward(x)


def _same(a, b) -> bool:
    return np.array_equal(a[0], b[0]) and a[0].dtype == b[0].dtype and a[1] == b[1]


@pytest.mark.parametrize("held", [P._ANALYSED_HELD, 0])
@settings(max_examples=25)
@given(st.lists(st.integers(0, 3), min_size=1, max_size=7), st.integers(0, 2**32 - 1), st.booleans())
def test_cached_analyses_are_the_fresh_ones(held, order, seed, reweight):
    rng = np.random.default_rng(seed)
    # four channels of one length and dtype (one key but for the content), two of them equal
    base = np.cumsum(rng.integers(-40, 41, 700)).astype(np.int16)
    rows = [base, base.copy(), base[::-1].copy(), (base + 1).astype(np.int16)]
    stage = frontend.stage("lpc", reweight=reweight)
    expected = [_fresh(stage, frontend.to_channels(r)) for r in rows]
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(P, "_ANALYSED_HELD", held)
        P._ANALYSED.clear()
        with P.analysis_cache():
            for k in order:
                assert _same(stage.forward(frontend.to_channels(rows[k].copy())), expected[k])
            kept = [k for k, _ in P._ANALYSED.values()]
            assert all(isinstance(k, np.ndarray) for k in kept) if held else all(isinstance(k, bytes) for k in kept)
            # rows 0 and 1 are equal: at most 3 distinct channels analysed (twice with the refit)
            distinct = len({0 if k < 2 else k for k in order})
            assert len(P._ANALYSED) == distinct * (2 if reweight else 1)
        assert P._ANALYSED == {}


def test_a_channel_changed_in_place_is_analysed_again():
    rng = np.random.default_rng(3)
    x = frontend.to_channels(np.cumsum(rng.integers(-40, 41, 3000)).astype(np.int32))
    stage = frontend.stage("lpc")
    P._ANALYSED.clear()
    with P.analysis_cache():
        first = stage.forward(x)
        kept = next(iter(P._ANALYSED.values()))[0]
        assert isinstance(kept, np.ndarray) and not np.shares_memory(kept, x)  # a copy
        x[0, 100:200] = 0  # the caller's array changed after its analysis
        again = stage.forward(x)
        assert len(P._ANALYSED) == 2
    assert _same(again, _fresh(stage, x)) and not _same(again, first)
