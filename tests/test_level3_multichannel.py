"""Spec tests for ``compress(level=3)`` of more than one channel (``ubpe.api.level3_groups``):
its channel groupings are measured with level 2's container of every group beside the level-3
coder's, so the container is never larger than level 2's; and the channels a recording of many
channels samples for the level-3 coder's choices (``Settings.level3_sample_channels``) keep the
round trip exact."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st

import ubpe
from ubpe import level3
from ubpe.planner import settings


def unlike_channels() -> dict[str, np.ndarray]:
    """(6 000, C) int16 recordings whose channels share nothing (so each alone is a group), of
    6 000 values a channel (where level 3 of one channel does not build level 2's container)."""
    rng = np.random.default_rng(7)
    n = 6000

    def held(p: float, spread: int) -> np.ndarray:
        return np.cumsum(np.where(rng.random(n) < p, rng.integers(-spread, spread + 1, n), 0))

    hold, hold2, noise = held(0.3, 40), held(0.15, 300) * 3, rng.integers(-300, 300, n)
    periodic = np.tile(rng.integers(-500, 500, 50), n // 50)
    return {"held and noise": np.stack([hold, noise], 1).astype(np.int16),
            "two held and noise": np.stack([hold, hold2, noise], 1).astype(np.int16),
            "periodic and noise": np.stack([periodic, noise], 1).astype(np.int16)}


@pytest.mark.parametrize("name", list(unlike_channels()))
def test_level_3_of_channels_is_never_larger_than_level_2(name):
    x = unlike_channels()[name]
    data = ubpe.compress(x, level=3)
    assert np.array_equal(ubpe.decompress(data), x)
    two = ubpe.compress(x, level=2)
    assert ubpe.describe(two).groups == x.shape[1]  # level 2 codes each channel alone ...
    assert len(data) <= len(two)  # ... and level 3 is not larger (before: 0.4-5.6 % larger)


def test_every_grouping_measured_with_the_level_3_coder_is_never_larger():
    x = unlike_channels()["two held and noise"]
    with settings.configured(level3_group_margin=1e9):
        every = ubpe.compress(x, level=3)
    assert np.array_equal(ubpe.decompress(every), x)
    assert len(every) <= len(ubpe.compress(x, level=3))


def test_many_channels_round_trip_with_a_sample_of_channels():
    rng = np.random.default_rng(3)
    base = np.cumsum(rng.integers(-20, 21, (7000, 1)), axis=0)
    x = (base + np.cumsum(rng.integers(-3, 4, (7000, 12)), axis=0)).astype(np.int16)
    assert settings.DEFAULT.level3_sample_channels < x.shape[1]
    data = level3.encode(x)
    assert np.array_equal(level3.decode(data), x)
    with settings.configured(level3_sample_channels=0):  # every channel sampled: the same format
        assert np.array_equal(level3.decode(level3.encode(x)), x)


def long_unlike_channels() -> np.ndarray:
    """(48 000, 2) int16: two independent resonant (second-order autoregressive) channels, long
    enough for the grouping step's sample (``Settings.level3_group_sample_*``); on them the
    level-3 coder's channels alone come close to its one stream, so the sample decides."""
    n = 48000

    def resonant(seed: int, gain: float) -> np.ndarray:
        e = np.random.default_rng(seed).normal(0, 40 * gain, n)
        y = np.zeros(n)
        for i in range(2, n):
            y[i] = 1.6 * y[i - 1] - 0.7 * y[i - 2] + e[i]
        return y

    return np.stack([resonant(1, 1.0), resonant(2, 0.5)], 1).round().astype(np.int16)


def test_level_3_of_a_long_recording_decided_on_a_sample_round_trips_deterministically():
    x = long_unlike_channels()
    assert settings.DEFAULT.level3_group_sample_frames <= settings.DEFAULT.level3_group_sample_most * x.shape[0]
    data = ubpe.compress(x, level=3, threads=1)
    assert np.array_equal(ubpe.decompress(data), x)
    assert ubpe.compress(x, level=3, threads=2) == data
    assert len(data) <= len(ubpe.compress(x, level=3 - 1))


def test_the_sample_only_skips_codings():
    """Without the sample (every grouping the level-2 estimate lets through coded in full) the
    container is not larger: the sample only decides which groupings are not coded."""
    x = long_unlike_channels()
    sampled = ubpe.compress(x, level=3)
    with settings.configured(level3_group_sample_most=0.0):
        whole = ubpe.compress(x, level=3)
    assert np.array_equal(ubpe.decompress(whole), x)
    assert len(whole) <= len(sampled)


class TestAGroupingIsCodedOnlyWhileItMayWin:
    """``_coded_while_it_may_win``: the groups are coded from the smallest level-2 container up,
    and the grouping is given up once the coded groups project it past the bound."""

    @staticmethod
    def run(level2: dict, level3: dict, bound: float, own: int = 10):
        from ubpe.api.level3_groups import _coded_while_it_may_win

        grouping = [list(k) for k in level2]
        coded = []

        def level3_of(cols):
            coded.append(tuple(cols))
            return b"3" * level3[tuple(cols)]

        parts = _coded_while_it_may_win(grouping, lambda cols: b"2" * level2[tuple(cols)], level3_of, own, bound)
        return parts, coded

    def test_a_grouping_that_may_win_is_coded_whole_in_its_own_order(self):
        level2 = {(0, 1): 500, (2,): 100, (3,): 300}
        level3 = {(0, 1): 400, (2,): 90, (3,): 280}
        parts, coded = self.run(level2, level3, bound=900)  # (projected 820, then 842.5)
        assert coded == [(2,), (3,), (0, 1)]  # the smallest level-2 container first
        assert [len(p) for p in parts] == [400, 90, 280]  # in the grouping's order

    def test_a_losing_grouping_is_given_up_after_its_first_group(self):
        level2 = {(0,): 100, (1,): 300, (2,): 300}
        level3 = {(0,): 99, (1,): 200, (2,): 200}
        # after (0,): 99 + 600 x 0.99 + 10 = 703 projected, past 650: (1,) and (2,) never coded
        parts, coded = self.run(level2, level3, bound=650)
        assert parts is None and coded == [(0,)]
        # the same groups under a bound the projection stays below: all three coded
        parts, coded = self.run(level2, level3, bound=720)
        assert parts is not None and len(coded) == 3

    def test_the_last_group_is_always_kept_for_the_caller_to_compare(self):
        level2 = {(0,): 100}
        parts, coded = self.run(level2, {(0,): 150}, bound=1)
        assert coded == [(0,)] and [len(p) for p in parts] == [150]


@pytest.mark.parametrize("share", [0.0, 1.0])
def test_the_gain_share_only_changes_which_groupings_are_coded(share):
    """Whatever share of the one stream's gain the estimate lends the groups, the container
    round-trips and is never larger than level 2's."""
    x = unlike_channels()["two held and noise"]
    with settings.configured(level3_group_gain_share=share):
        data = ubpe.compress(x, level=3)
    assert np.array_equal(ubpe.decompress(data), x)
    assert len(data) <= len(ubpe.compress(x, level=2))


def test_channels_that_move_together_keep_the_one_stream_without_a_grouping_measured(monkeypatch):
    """Level 2's rule (``Settings.group_joined_share``) holds at level 3 too: when one group of
    correlated channels holds (nearly) all of them and level 2's one stream is one block, no
    grouping is measured (the level-3 coder predicts each channel from the others, which groups
    would split); channels that share nothing still have theirs measured."""
    from ubpe.api import level3_groups

    calls = []
    real = level3_groups.smaller
    monkeypatch.setattr(level3_groups, "smaller", lambda *a, **k: calls.append(1) or real(*a, **k))
    rng = np.random.default_rng(5)
    common = np.cumsum(rng.integers(-30, 31, 6000))
    together = np.stack([common, common + rng.integers(-2, 3, 6000)], 1).astype(np.int16)
    data = ubpe.compress(together, level=3)
    assert np.array_equal(ubpe.decompress(data), together)
    assert calls == []
    with settings.configured(group_joined_share=2.0):  # (above 1: always measured, as before)
        assert ubpe.compress(together, level=3) == data
    assert calls == [1]
    apart = unlike_channels()["held and noise"]
    assert np.array_equal(ubpe.decompress(ubpe.compress(apart, level=3)), apart)
    assert calls == [1, 1]


@hypothesis_settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(1, 400), min_size=1, max_size=6), st.integers(1, 9), st.integers(0, 50),
       st.integers(-3, 3))
def test_giving_up_is_exact_when_every_group_gains_alike(sizes, num, own, shift):
    """When every group's level-3 bytes are the same fraction of its level-2 bytes, the projection
    after the first group is the grouping's final size: the grouping is given up exactly when
    that size reaches the bound (and a grouping of one group is never given up)."""
    den = 10
    level2 = {(i,): den * n for i, n in enumerate(sizes)}
    level3 = {(i,): num * n for i, n in enumerate(sizes)}  # num / den of level 2's bytes
    final = sum(level3.values()) + own
    bound = final + shift  # (at, just above and just below the grouping's final size)
    parts, coded = TestAGroupingIsCodedOnlyWhileItMayWin.run(level2, level3, bound, own)
    if len(sizes) > 1 and final >= bound:
        assert parts is None and len(coded) == 1
    else:
        assert [len(p) for p in parts] == list(level3.values())
