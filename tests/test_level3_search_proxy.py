"""Level 3's search on a proxy (ubpe.level3.search.proxy_plan, order_gain_db; Settings.level3_search_*
and level3_front_frames): the prefix and budget it plans, the move it tries first, and what it
writes: exact round trips, never larger than the unsearched container where the proxy is the
whole recording or the recording is below the chains' sample, the same bytes from 1 and 2
threads and from two runs."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from test_level3 import round_trip
from test_level3_search import plucked_string

import ubpe
from ubpe import level3
from ubpe.level3.search import MOVES, ORDER_MOVE, greedy, order_gain_db, plan, proxy_plan, spare_codings
from ubpe.planner import settings

#: the exact whole-recording search (commit 08dcb7d) in today's settings
EXACT = dict(level3_search_work=0, level3_search_floor=1 << 19, level3_search_prefix=1 << 16, level3_search_share=1.0,
             level3_search_evals=1, level3_search_order_db=1e9, level3_search_order_start=1e9,
             level3_search_hold=2.0, level3_search_budget=1.5, level3_front_frames=1 << 13,
             level3_front_share=1.0)


def test_the_proxy_is_a_prefix_of_a_share_of_the_recording_with_a_floor_of_codings():
    s = dataclasses.replace(settings.DEFAULT, level3_search_prefix=2048, level3_search_share=0.25,
                            level3_search_evals=2, level3_search_floor=4096, level3_search_margin=0.002)
    assert proxy_plan(40000, 1, s) == (10000, 2, 0.002)  # a quarter, two codings, the margin
    assert proxy_plan(6000, 1, s) == (2048, 2, 0.002)  # at least the prefix's frames
    assert proxy_plan(1000, 1, s) == (1000, 4, 0.0)  # the whole recording: exact, 4096 values coded
    assert proxy_plan(1000, 2, s) == (1000, 2, 0.0)  # two channels: twice the values a coding
    assert proxy_plan(10, 1, s) == (10, 64, 0.0)  # at most 64 codings
    assert proxy_plan(3, 1, dataclasses.replace(s, level3_search_share=1.0, level3_search_prefix=1 << 16,
                                                level3_search_evals=1, level3_search_floor=1 << 19))[0] == 3


def _resonances(count: int, n: int = 20000, seed: int = 3) -> np.ndarray:
    """White noise through ``count`` narrow resonances (pole pairs of radius 0.999, frequencies
    evenly spread, as the partials of a tone): an autoregressive process of order 2 ``count``,
    int32 (n, 1)."""
    rng = np.random.default_rng(seed)
    poly = np.ones(1)
    for f in np.linspace(0.02, 0.48, count):
        poly = np.convolve(poly, [1.0, -2 * 0.999 * np.cos(2 * np.pi * f), 0.999 ** 2])
    e = rng.normal(0, 100, n)
    x = np.zeros(n + poly.size)
    a = -poly[1:][::-1]
    for i in range(poly.size, n + poly.size):
        x[i] = a @ x[i - poly.size + 1:i] + e[i - poly.size]
    return np.round(x[poly.size:] / max(1.0, np.abs(x).max() / 2e6)).astype(np.int32).reshape(-1, 1)


def test_many_resonances_ask_for_a_higher_order_and_few_do_not():
    """Twenty-four resonances (order 48: order 32 follows only some of them) against two (order 4:
    order 32 has nothing more to find); a constant and a short recording: 0 dB."""
    assert order_gain_db(_resonances(24)) > 2.5
    assert abs(order_gain_db(_resonances(2))) < 0.5
    assert order_gain_db(np.full((5000, 2), 7)) == 0.0
    assert order_gain_db(_resonances(24)[:100]) == 0.0


def test_many_resonances_start_the_search_at_order_64():
    """From level3_search_order_start dB the search starts at order 64 (the defaults not
    measured); between level3_search_order_db and it, order 64 is tried first; below, neither."""
    many, few = _resonances(24), _resonances(2)
    start, first = plan(many, settings.DEFAULT, level3.DEFAULTS)
    assert (start["p1"], start["k1"], start["t1"], start["p2"], start["k2"], first) == (64, 64, 13, 32, 32, None)
    s = dataclasses.replace(settings.DEFAULT, level3_search_order_start=1e9)
    start, first = plan(many, s, level3.DEFAULTS)
    assert start == level3.DEFAULTS and first == ORDER_MOVE
    start, first = plan(few, settings.DEFAULT, level3.DEFAULTS)
    assert start == level3.DEFAULTS and first is None


def test_the_order_64_start_spares_codings_of_the_proxy():
    """Settings.level3_search_order_spare: a search that starts from order 64 (taken unmeasured)
    codes the proxy that many times fewer; one from the defaults spends its whole budget."""
    many, few = _resonances(24), _resonances(2)
    start, _ = plan(many, settings.DEFAULT, level3.DEFAULTS)
    assert spare_codings(start, level3.DEFAULTS, settings.DEFAULT) == settings.DEFAULT.level3_search_order_spare == 1
    none = dataclasses.replace(settings.DEFAULT, level3_search_order_spare=0)
    assert spare_codings(start, level3.DEFAULTS, none) == 0
    start, _ = plan(few, settings.DEFAULT, level3.DEFAULTS)
    assert spare_codings(start, level3.DEFAULTS, settings.DEFAULT) == 0


def test_a_tonal_recording_is_coded_with_the_order_64_start_when_no_coding_is_left():
    """Two codings of the proxy (level3_search_evals 2, its floor not reached at 20 000 frames),
    one spared: the search measures the order-64 start alone and keeps it, so the container is
    the one written with those parameters fixed (and it decodes exactly)."""
    from ubpe._kernels import mixsignal as k

    x = _resonances(24)
    with settings.configured(level3_search_evals=2):
        s = settings.current()
        assert proxy_plan(x.shape[0], 1, s)[1] == 2 and order_gain_db(x) >= s.level3_search_order_start
        fixed = level3.default_params(1)
        for name, v in dict(p1=64, k1=64, t1=13, p2=32, k2=32, irls=0).items():
            fixed[getattr(k, "PRM_" + name.upper())] = v
        got = level3.encode(x, front=None)
        assert got == level3.encode(x, params=fixed, front=None)
    assert np.array_equal(level3.decode(got), x)


def test_the_first_move_is_measured_first():
    calls = []

    def size(p):
        calls.append(dict(p))
        return 1000.0 - (p["p1"] == 64) * 10

    best, _ = greedy(size, dict(level3.DEFAULTS), 2, 0.0, first=ORDER_MOVE)
    assert best["p1"] == 64 and len(calls) == 2
    calls.clear()
    best, _ = greedy(size, dict(level3.DEFAULTS), 2, 0.0)
    assert best["p1"] == 32 and calls[1]["mu1"] != level3.DEFAULTS["mu1"]  # MOVES[0] then
    assert ORDER_MOVE in dict(MOVES)


@pytest.mark.parametrize("n, on_proxy", [(1500, 0), (5000, 1 << 30)])
def test_below_the_chains_sample_the_search_never_writes_more_than_no_search(n, on_proxy):
    """Below level3_front_frames, where the proxy is the whole recording (1 500 frames) or the
    chains are not chosen on it (level3_front_on_proxy above the frames), every chain is coded
    whole with the defaults first: the searched container is kept only when it is smaller (and
    it decodes exactly)."""
    x = plucked_string(n, 4, 30.0)
    with settings.configured(level3_front_on_proxy=on_proxy):
        searched = round_trip(x)
        assert len(searched) <= len(level3.encode(x, search=False))
        with settings.configured(level3_search_floor=0):
            assert len(searched) <= len(level3.encode(x))


def test_a_proxy_search_round_trips_and_finds_a_tonal_recordings_parameters():
    """9 000 frames (above the chains' sample): the proxy is its first 2 250 frames; the container
    decodes exactly and is at least 0.5 % smaller than with the default parameters (1 % with
    version 4's; version 5's rounded NLMS weights take part of the search's gain by default). (The
    search alone: the tonal cue's change after it off; on this synthetic string it costs 1 %.)"""
    x = plucked_string(9000, 5, 3.0)
    with settings.configured(level3_tonal_peak=2.0):
        searched = round_trip(x)
    assert len(searched) < len(level3.encode(x, search=False, front=None)) * 0.995


def test_same_bytes_from_two_runs_one_and_two_threads():
    x = np.stack([plucked_string(7000, 6, 20.0), plucked_string(7000, 7, 20.0)], axis=1)
    data = ubpe.compress(x, level=3, threads=1)
    assert ubpe.compress(x, level=3, threads=2) == data
    assert ubpe.compress(x, level=3, threads=1) == data
    one = level3.encode(x[:, 0])
    assert level3.encode(x[:, 0]) == one
    assert np.array_equal(ubpe.decompress(data), x)


def test_the_exact_search_of_before_is_a_setting():
    """The exact whole-recording search stays reachable through the settings (the benchmarks
    compare it); on a short tonal recording it is at least as small as the proxy's."""
    x = plucked_string(3000, 8, 3.0)
    with settings.configured(**EXACT):
        exact = round_trip(x)
    assert len(exact) <= len(round_trip(x))


def test_held_values_try_the_mix_per_hold_state_first():
    """A staircase (each value held for 3 frames: 2/3 of the frames repeat) asks for the
    least-squares mix per hold state first; a tone that never repeats does not."""
    from ubpe.level3.search import HOLD_MOVE, first_move, hold_share

    stairs = np.repeat(np.cumsum(np.random.default_rng(9).integers(-3, 4, 3000)), 3).reshape(-1, 1)
    assert hold_share(stairs) > 0.6
    assert first_move(stairs, settings.DEFAULT) == HOLD_MOVE
    assert first_move(stairs, dataclasses.replace(settings.DEFAULT, level3_search_hold=2.0)) is None
    assert hold_share(np.arange(100).reshape(-1, 1)) == 0.0
    assert HOLD_MOVE in dict(MOVES)
    x = stairs[:, 0].astype(np.int16)
    assert len(round_trip(x)) <= len(level3.encode(x, search=False))
