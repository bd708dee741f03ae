"""benchmarks/bench_level2_oracle.py's hook: the lean search's finalists forced to one chain,
the container the default compress gives when that chain is the winner, another's otherwise."""

import importlib.util
import pathlib

import numpy as np
import pytest

import ubpe
from ubpe.planner import lean

ROOT = pathlib.Path(__file__).resolve().parents[1]


@pytest.fixture
def oracle(monkeypatch):
    spec = importlib.util.spec_from_file_location("bench_level2_oracle", ROOT / "benchmarks" / "bench_level2_oracle.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    monkeypatch.setattr(lean, "sorted", module._sorted, raising=False)  # (undone after the test)
    return module


def _signal(n: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    e = rng.laplace(0.0, 15.0, n)
    x = np.zeros(n)
    for i in range(2, n):
        x[i] = 1.7 * x[i - 1] - 0.8 * x[i - 2] + e[i]
    return np.clip(np.round(x), -32768, 32767).astype(np.int16)


def test_sorted_is_the_builtin_unless_forced(oracle):
    assert oracle._sorted([3, 1, 2]) == [1, 2, 3]
    assert oracle._sorted({2: 5.0, 1: 7.0}, key=lambda i: -i) == [2, 1]
    oracle.FORCED[0] = 4
    try:
        assert oracle._sorted({1, 4, 5}) == [4]
        assert oracle._sorted([3, 1], key=lambda i: i) == [1, 3]  # (a ranking, not the finalists)
    finally:
        oracle.FORCED[0] = None


@pytest.mark.parametrize("n,seed", [(6000, 1), (40000, 2)])
def test_the_winner_forced_alone_gives_the_default_container(oracle, n, seed):
    x = _signal(n, seed)
    default = oracle._compress(x, None)
    assert default == ubpe.compress(x, threads=1)  # the hook idle: the default path
    winner, sizes = oracle._winner(x, default, exact=True)
    assert winner is not None
    assert oracle._compress(x, winner) == default
    assert np.array_equal(ubpe.decompress(oracle._compress(x, winner)), x)
    assert sizes[winner] == len(default)
    # the default container is the smallest of the finalists it sized; forcing another chain
    # changes the container (the hook acts) and each forced one decodes
    others = [i for i in sizes if i != winner]
    assert others
    for i in others:
        forced = oracle._compress(x, i)
        assert np.array_equal(ubpe.decompress(forced), x)
    assert any(oracle._compress(x, i) != default for i in others)
