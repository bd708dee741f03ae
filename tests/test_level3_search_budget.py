"""Level 3's work before its final coding, bounded (issue 29: 0.2 M values/s both ways on every
recording; ``ubpe.level3.search.budget_plan`` and ``chain_part``, ``Settings.level3_search_work``,
``level3_search_min_prefix``, ``level3_front_proxy_part``, ``level3_front_part_min``,
``level3_vmod_on_proxy``): the plan keeps the front-end chains' comparison and the search's
codings within the bound, and what ``compress(level=3)`` writes under it decodes exactly, is the
same from 1 and 2 threads, and is never larger than level 2's container on a short recording."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from test_level3_search import plucked_string

import ubpe
from ubpe import level3
from ubpe.level3.search import budget_plan, chain_part, proxy_plan
from ubpe.planner import settings

LENGTHS = (2, 300, 557, 1000, 2088, 2721, 4425, 12684, 40950, 60000, 1 << 16)


def _work(frames: int, codings: int, chains: int, s: settings.Settings) -> int:
    """Frames coded before the final coding: the prefix ``codings`` times (the chain without
    stages is the search's first), each other chain on its part of the prefix."""
    return frames * codings + (chains - 1) * chain_part(frames, s)


@pytest.mark.parametrize("chains", [1, 2, 4])
def test_the_plan_keeps_the_work_within_the_bound_unless_at_its_floor(chains):
    s = settings.DEFAULT
    for n in LENGTHS:
        frames, codings, margin = budget_plan(n, 1, s, chains)
        assert 1 <= frames <= min(n, proxy_plan(n, 1, s)[0]) and codings >= 1
        assert margin == (0.0 if frames == n else s.level3_search_margin)
        # over the bound only at the floor: the shortest prefix and the chains' comparison alone
        assert _work(frames, codings, chains, s) <= s.level3_search_work * n or (
            codings == 1 and frames == min(n, proxy_plan(n, 1, s)[0], s.level3_search_min_prefix))


def test_without_a_bound_the_plan_is_the_proxy_plan():
    s = dataclasses.replace(settings.DEFAULT, level3_search_work=0)
    for n in LENGTHS:
        for chains in (1, 2, 4):
            assert budget_plan(n, 1, s, chains) == proxy_plan(n, 1, s)
            assert budget_plan(n, 3, s, chains) == proxy_plan(n, 3, s)


def test_a_short_recording_searches_less_than_before_and_a_long_one_as_before():
    s = settings.DEFAULT
    before, after = proxy_plan(2721, 1, s), budget_plan(2721, 1, s, 2)
    assert _work(after[0], after[1], 2, s) < _work(before[0], before[1], 2, s)
    assert budget_plan(60000, 1, s, 2) == proxy_plan(60000, 1, s)  # (a quarter, three codings: within)


def test_the_chains_with_stages_are_compared_on_a_part_of_at_least_the_minimum():
    s = settings.DEFAULT
    assert chain_part(4096, s) == max(int(4096 * s.level3_front_proxy_part), s.level3_front_part_min)
    assert chain_part(600, s) == 600  # (a prefix shorter than the minimum: all of it)
    assert chain_part(4096, dataclasses.replace(s, level3_front_proxy_part=1.0)) == 4096


def _adc(n: int, seed: int = 2) -> np.ndarray:
    """A slow wave read by a 10-bit converter whose codes are unevenly wide (every third code
    is hit half as often): a narrow range, where the value model may be chosen."""
    rng = np.random.default_rng(seed)
    v = 400 + 300 * np.sin(np.arange(n) * 0.003) + rng.normal(0, 4, n)
    codes = np.round(v).astype(np.int64)
    codes[(codes % 3 == 0) & (rng.random(n) < 0.5)] += 1
    return codes.astype(np.uint16)


def _regimes(n: int, seed: int = 4) -> np.ndarray:
    """Blocks of different resonances one after another (a spectrum that changes abruptly)."""
    rng = np.random.default_rng(seed)
    out = []
    for b in range(-(-n // 500)):
        a1, a2 = (1.8, -0.9) if b % 2 else (0.3, 0.2)
        e = rng.normal(0, 30, 500)
        y = np.zeros(500)
        for i in range(2, 500):
            y[i] = a1 * y[i - 1] + a2 * y[i - 2] + e[i]
        out.append(y)
    return np.concatenate(out)[:n].astype(np.int16)


RECORDINGS = {
    "tone 600": plucked_string(600, 3), "tone 2100": plucked_string(2100, 4), "tone 5000": plucked_string(5000, 5),
    "adc 3000": _adc(3000), "adc 20000": _adc(20000), "regimes 6000": _regimes(6000),
    "stereo tone 2500": np.stack([plucked_string(2500, 6), plucked_string(2500, 7)], axis=1),
}


@pytest.mark.parametrize("name", sorted(RECORDINGS))
@pytest.mark.parametrize("stages_favoured", [False, True])
def test_short_recordings_round_trip_with_the_same_bytes_from_one_and_two_threads(name, stages_favoured):
    """Also with a chain with stages favoured (``level3_front_proxy_margin`` < 0: it wins on its
    part of the prefix, and the search measures its start, with the value model on where it may
    be used)."""
    x = RECORDINGS[name]
    with settings.configured(**(dict(level3_front_proxy_margin=-0.5) if stages_favoured else {})):
        data = ubpe.compress(x, level=3, threads=1)
        assert ubpe.compress(x, level=3, threads=2) == data
        coded = level3.encode(x)
    back = ubpe.decompress(data)
    assert back.dtype == x.dtype and np.array_equal(back, x)
    back = level3.decode(coded)
    assert back.dtype == x.dtype and np.array_equal(back, x)


@pytest.mark.parametrize("name", ["adc 3000", "adc 20000"])
def test_the_value_model_decided_on_the_search_start_round_trips(name):
    x = RECORDINGS[name]
    for on in (True, False):
        with settings.configured(level3_vmod_on_proxy=on):
            data = level3.encode(x)
        assert np.array_equal(level3.decode(data), x)


def _short_signals(n: int, seed: int):
    rng = np.random.default_rng(seed)
    t = np.arange(n)
    yield np.cumsum(rng.integers(-30, 31, n)).astype(np.int16)  # a random walk
    yield rng.integers(-2000, 2000, n).astype(np.int16)  # white noise
    yield (3000 * np.sin(t * 0.07) + rng.normal(0, 40, n)).astype(np.int16)
    yield (8000 * np.exp(-t / 300) * np.sin(t * 0.3) + rng.normal(0, 20, n)).astype(np.int16)  # a struck tone
    yield np.cumsum(np.cumsum(rng.normal(0, 3, n))).astype(np.int32)
    yield rng.integers(-100, 100, n).astype(np.int8)
    yield plucked_string(n, seed)


@pytest.mark.parametrize("n", [257, 557, 1000, 2048])
def test_a_short_recordings_container_is_never_larger_than_level_2s(n):
    """Level 2's container is built beside the level-3 coder's on recordings this short
    (``Settings.level3_level2_small``), where level 2 wins on random walks and white noise."""
    for x in _short_signals(n, n):
        three = ubpe.compress(x, level=3, threads=1)
        assert len(three) <= len(ubpe.compress(x, level=2, threads=1))
        assert np.array_equal(ubpe.decompress(three), x)


@pytest.mark.parametrize("part", [0.5, 1.0])
def test_a_long_recordings_chain_chosen_on_part_of_the_middle_sample_round_trips(part):
    """Above ``level3_search_whole`` values the chains are compared on a middle sample, those with
    stages on ``level3_front_sample_part`` of it (1: all of it)."""
    x = np.concatenate([_regimes(40000, 8), _regimes(40000, 9) // 3]).astype(np.int16)
    with settings.configured(level3_front_sample_part=part):
        data = ubpe.compress(x, level=3, threads=1)
        assert ubpe.compress(x, level=3, threads=2) == data
    assert np.array_equal(ubpe.decompress(data), x)
