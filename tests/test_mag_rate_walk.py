"""The "mag" coder's rate walk (a level-1 search reduction, ``ubpe.coders.mag.RATE_WALK``): it costs
the rates around the planner's best, reaches a local least of the rate's total, and its streams
decode; off, the coder costs every rate as before."""

from __future__ import annotations

import numpy as np
import pytest

import ubpe
from ubpe.coders import mag
from ubpe._kernels import level1 as _fast


def _known(tokens: np.ndarray, center: int, rates: tuple[int, ...]) -> dict:
    """The planner's ``known``: counts, raw bits, center and options rows of ``rates``."""
    counts = np.zeros((len(rates), 56, 50), np.int64)
    raw = int(_fast.mag_stats(tokens, center, np.array(rates, np.int64), counts))
    ces, tbs = mag.stream_options(counts, tokens.shape[0])
    return {r: (counts[k], raw, center, (ces[k], tbs[k])) for k, r in enumerate(rates)}


def _totals(tokens: np.ndarray, center: int) -> dict[int, float]:
    every = _known(tokens, center, tuple(int(r) for r in mag.RATES))
    return {r: float((v[3][0] + v[1] + v[3][1]).min()) for r, v in every.items()}


@pytest.mark.parametrize("seed", range(6))
def test_the_walk_ends_at_a_local_least(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(500, 20_000))
    loud = np.repeat(rng.uniform(1, 300, n // 250 + 1), 250)[:n]
    tokens = (1000 + np.round(rng.laplace(0, 1, n) * loud)).astype(np.int32)
    center = int(np.median(tokens))
    rates, walked = mag._walked_rates(tokens, center, _known(tokens, center, (3, 5)))
    totals = _totals(tokens, center)
    best = min((totals[int(r)], int(r)) for r in rates)[1]
    assert {3, 5} <= set(rates.tolist())
    for r in (best - 1, best + 1):  # both neighbours costed, neither better
        if mag.MIN_RATE <= r <= mag.MAX_RATE:
            assert r in walked and totals[r] >= totals[best]
    for r in rates.tolist():  # the walk's counts and rows are the full search's
        full = _known(tokens, center, (r,))[r]
        assert np.array_equal(walked[r][0], full[0]) and walked[r][1] == full[1]
        assert np.array_equal(walked[r][3][0], full[3][0]) and np.array_equal(walked[r][3][1], full[3][1])


def test_fewer_than_two_known_rates_cost_every_rate() -> None:
    tokens = np.arange(100, dtype=np.int32) % 7
    known = _known(tokens, 3, (3,))
    rates, same = mag._walked_rates(tokens, 3, known)
    assert np.array_equal(rates, mag.RATES) and same is known


def test_level1_streams_decode_with_and_without_the_walk(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(5)
    t = np.arange(9000)
    inputs = [(800 * np.sin(t / 23.0) * (1 + (t // 1500) % 3) + rng.normal(0, 15, t.shape)).astype(np.int16),
              np.cumsum(rng.integers(-40, 41, 30_000)).astype(np.int32)]
    walked = [ubpe.compress(x, level=1, threads=1) for x in inputs]
    monkeypatch.setattr(mag, "RATE_WALK", False)
    full = [ubpe.compress(x, level=1, threads=1) for x in inputs]
    for x, a, b in zip(inputs, walked, full):
        assert np.array_equal(ubpe.decompress(a), x) and np.array_equal(ubpe.decompress(b), x)
        assert len(a) <= 1.0005 * len(b) + 8  # (within the coder's own tolerance of the full search)
