"""The order of the moves level 3's search on a prefix tries first (ubpe.level3.search.greedy's
``order``, move_order, smooth_db; Settings.level3_search_proxy_moves, level3_search_smooth_db,
level3_search_smooth_moves): which moves a small budget measures, the cue that picks the list,
and that a searched recording still round-trips and is deterministic."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from ubpe import level3
from ubpe.level3.search import MOVES, greedy, move_order, smooth_db
from ubpe.planner import settings


def _sizes_of_calls(order, evals, first=None):
    calls = []

    def size(p):
        calls.append(dict(p))
        return 1000.0 - len(calls)  # every candidate a little smaller than the one before

    greedy(size, dict(level3.DEFAULTS), evals, 0.0, first=first, order=order)
    return calls


def test_the_ordered_moves_are_measured_first_in_their_order():
    names = ("short window / 2", "long NLMS / 2")
    calls = _sizes_of_calls(names, 3)
    moves = dict(MOVES)
    assert len(calls) == 3
    for call, name in zip(calls[1:], names):
        assert call == dict(level3.DEFAULTS, **moves[name](level3.DEFAULTS))


def test_the_cue_move_goes_before_the_ordered_ones():
    calls = _sizes_of_calls(("short window / 2",), 3, first="steps / 2")
    moves = dict(MOVES)
    assert calls[1] == dict(level3.DEFAULTS, **moves["steps / 2"](level3.DEFAULTS))
    assert calls[2] == dict(level3.DEFAULTS, **moves["short window / 2"](level3.DEFAULTS))


def test_no_order_keeps_the_order_of_moves():
    calls = _sizes_of_calls((), 2)
    assert calls[1] == dict(level3.DEFAULTS, **MOVES[0][1](level3.DEFAULTS))


def test_every_default_ordered_move_is_a_move():
    s = settings.DEFAULT
    assert set(s.level3_search_proxy_moves) <= set(dict(MOVES))
    assert set(s.level3_search_smooth_moves) <= set(dict(MOVES))


def test_smooth_signals_score_high_and_white_noise_low():
    t = np.arange(20000)
    slow = np.round(1000 * np.sin(2 * np.pi * t / 2000)).astype(np.int64).reshape(-1, 1)
    noise = np.random.default_rng(3).integers(-1000, 1001, (20000, 1))
    assert smooth_db(slow) > 40
    assert smooth_db(noise) < 0
    assert smooth_db(np.full((100, 2), 5)) == 0.0
    assert smooth_db(slow[:2]) == 0.0
    s = settings.DEFAULT
    assert move_order(slow, s) == tuple(s.level3_search_smooth_moves)
    assert move_order(noise, s) == tuple(s.level3_search_proxy_moves)
    never = dataclasses.replace(s, level3_search_smooth_db=1e9)
    assert move_order(slow, never) == tuple(s.level3_search_proxy_moves)


@pytest.mark.parametrize("kind", ["low-pitched", "high-pitched"])
def test_an_ordered_search_round_trips_and_is_deterministic(kind):
    rng = np.random.default_rng(7)
    t = np.arange(9000)
    x = np.round(3000 * np.sin(2 * np.pi * t / (700 if kind == "low-pitched" else 23))).astype(np.int16)
    x = (x + rng.integers(-40, 41, t.size)).astype(np.int16)
    got = level3.encode(x)
    assert got == level3.encode(x)
    assert np.array_equal(level3.decode(got), x)
    with settings.configured(level3_search_proxy_moves=(), level3_search_smooth_db=1e9, level3_search_evals=2):
        before = level3.encode(x)
    assert np.array_equal(level3.decode(before), x)
