"""Level 2's search, third pass (benchmarks/results/level2-search-3.md): the lean search's static
candidates as level 1 costs them (``lean_static_costed``), and a blocked container's blocks coded
by the adaptive coders as well when the plan on the sample chose a static one
(``blocked_adaptive_offered``)."""

from __future__ import annotations

import pathlib

import numpy as np
import pytest

import ubpe
from common import check_roundtrip
from ubpe import compress, describe
from ubpe.api import writer
from ubpe.planner import DEFAULT, configured

EXCERPT = pathlib.Path(ubpe.__file__).parent / "data" / "mitbih_208_excerpt.npy"


def _walk(n: int, seed: int, step: float) -> np.ndarray:
    """A Gaussian random walk of ``step`` (its standard deviation) a value, as int16: a static
    coder wins level 2's search on it where noted."""
    rng = np.random.default_rng(seed)
    return np.round(np.cumsum(rng.normal(0, step, n))).astype(np.int16)


def _ecg_like(n: int, noise: int) -> np.ndarray:
    """The ECG excerpt repeated to ``n`` values, times 4, plus uniform noise in [-noise, noise]."""
    rng = np.random.default_rng(3)
    return (np.resize(np.load(EXCERPT), n).astype(np.int32) * 4 + rng.integers(-noise, noise + 1, n)).astype(np.int16)


def test_static_candidates_costed_as_level_1_is_the_default():
    assert DEFAULT.lean_static_costed is True
    assert DEFAULT.blocked_adaptive_offered is True


@pytest.mark.parametrize("n, seed", [(3000, 0), (3000, 2), (8000, 0), (12000, 0)])
def test_costed_static_candidate_gives_the_same_container_where_static_wins(n, seed):
    """Where a static coder wins the lean search, level 1's costed candidate (one layout, the
    coders near its least) is the container both layouts with every coder gave."""
    x = _walk(n, seed, 5.0)
    with configured(lean_static_costed=False):
        before = compress(x, level=2, threads=1)
    data = check_roundtrip(x, level=2, threads=1)
    assert describe(data).coder in ("mag", "rans")
    assert data == before


@pytest.fixture
def static_sample_plan(monkeypatch):
    """The plan on the sample is level 1's (a static coder), as where a static coder wins on
    the sample (unseen/ecg-systole's 262 144 values: "mag" by 80 B): the blocks' adaptive trial
    is what is tested, whatever the sample would choose."""
    real = writer.plan

    def level_1_plan(sample, chains, level, *args, **kwargs):
        if level == 2:
            return real(sample, writer.level1_chains(chains), 1, *args, **kwargs)
        return real(sample, chains, level, *args, **kwargs)

    monkeypatch.setattr(writer, "plan", level_1_plan)


@pytest.mark.parametrize("noise", [2, 20])
def test_blocks_take_an_adaptive_coder_the_sample_ranked_below_a_static_one(static_sample_plan, noise):
    """The plan on the sample chose a static coder; on blocks of 60 000 values "cms2" is smaller:
    with ``blocked_adaptive_offered`` the blocks take it, the container is smaller and decodes;
    without, every block keeps the plan's static coder."""
    x = _ecg_like(120_000, noise)
    with configured(sample=4096, windows=4, blocked_adaptive_offered=False):
        static = compress(x, level=2, block_size=60_000, threads=1)
    with configured(sample=4096, windows=4):
        both = check_roundtrip(x, level=2, block_size=60_000, threads=1)
    assert describe(static).blocks == describe(both).blocks == 2
    assert set(describe(static).coders) <= {"mag", "rans"}
    assert "cms2" in describe(both).coders
    assert len(both) < len(static)


def test_blocks_are_never_larger_with_the_adaptive_coders_offered(static_sample_plan):
    """Each block keeps the smaller of its two packed codings: never larger than the plan's
    coders alone, block by block (here the static coder stays in every block: the same bytes)."""
    x = _walk(120_000, 0, 4.0)
    with configured(sample=4096, windows=4, blocked_adaptive_offered=False):
        static = compress(x, level=2, block_size=40_000, threads=1)
    with configured(sample=4096, windows=4):
        both = check_roundtrip(x, level=2, block_size=40_000, threads=1)
    assert len(both) <= len(static)
    assert set(describe(static).coders) <= {"mag", "rans"}


def test_level_1_blocks_are_not_offered_adaptive_coders():
    x = _ecg_like(120_000, 20)
    with configured(sample=4096, windows=4):
        data = check_roundtrip(x, level=1, block_size=60_000, threads=1)
    assert not {"cms2", "cmt2", "hold"} & set(describe(data).coders)


@pytest.mark.parametrize("walk, blocks, tried", [(True, 3, 1), (False, 2, 2)])
def test_later_blocks_try_the_adaptive_coders_only_when_the_first_took_one(static_sample_plan, monkeypatch, walk,
                                                                          blocks, tried):
    """The first block is coded by the adaptive coders too; the later ones only when it took one:
    where "mag" stays in the first of 3 blocks, "cms2" runs once; where the first takes "cms2",
    on every block. The bytes do not depend on the threads."""
    calls = []
    real = ubpe.coders.encode_stream

    x = _walk(120_000, 0, 4.0) if walk else _ecg_like(120_000, 20)
    block = 120_000 // blocks

    def counted(tokens, vocab_size, **kwargs):  # (a block's stream: the plan's sample is 4 096 values)
        calls.append(len(tokens) == block and "cms2" in kwargs.get("coders", ()))
        return real(tokens, vocab_size, **kwargs)

    with configured(sample=4096, windows=4):
        two = compress(x, level=2, block_size=block, threads=2)
        monkeypatch.setattr(ubpe.coders, "encode_stream", counted)
        data = compress(x, level=2, block_size=block, threads=1)
    assert data == two
    assert describe(data).blocks == blocks
    assert sum(calls) == tried
    assert ("cms2" in describe(data).coders) == (tried == blocks)
