"""Spec tests for when ``compress(level=3)`` builds level 2's container beside the level-3
coder's (``Settings.level3_level2_small``, ``level3_level2_values``, ``level3_level2_bits``):
where level 2 wins on a repetitive signal the container is never larger than level 2's, and
the result is always the smaller of the containers built."""

from __future__ import annotations

import numpy as np
import pytest

import ubpe
from ubpe import level3
from ubpe.planner import settings

NEVER = dict(level3_level2_small=0, level3_level2_values=1 << 62, level3_level2_bits=-1.0)
ALWAYS = dict(level3_level2_small=1 << 62)


def repetitive() -> dict[str, np.ndarray]:
    """Signals of 2 049 to 65 535 values (the band where level 2 is not always built) on
    which level 2's container is smaller than the level-3 coder's."""
    rng = np.random.default_rng(7)
    pattern = rng.integers(-500, 500, 24).astype(np.int16)
    square = np.where((np.arange(6000) // 50) % 2, 300, -300) + rng.integers(0, 2, 6000)
    return {"a pattern repeated": np.tile(pattern, 400), "a noisy square wave": square.astype(np.int16)}


@pytest.mark.parametrize("name", list(repetitive()))
def test_level_3_is_never_larger_than_level_2_where_level_2_wins(name):
    x = repetitive()[name]
    assert settings.DEFAULT.level3_level2_small < x.size < settings.DEFAULT.level3_level2_values
    data = ubpe.compress(x, level=3)
    assert ubpe.decompress(data).tobytes() == x.tobytes()
    two = ubpe.compress(x, level=2)
    with settings.configured(**NEVER):
        alone = ubpe.compress(x, level=3)  # the level-3 coder's container
    assert ubpe.describe(alone).coder == level3.CODER
    assert len(two) < len(alone)  # level 2 wins on it ...
    assert data == two  # ... and level 3 keeps its container


def test_level_3_is_the_smaller_of_the_containers_it_builds():
    t = np.arange(9000)
    rng = np.random.default_rng(3)
    x = np.round(2000 * np.sin(t / 23.0) + 700 * np.sin(t / 7.1) + rng.normal(0, 30, t.size)).astype(np.int16)
    data = ubpe.compress(x, level=3)
    with settings.configured(**ALWAYS):
        both = ubpe.compress(x, level=3)
    with settings.configured(**NEVER):
        alone = ubpe.compress(x, level=3)
    two = ubpe.compress(x, level=2)
    assert both == min(two, alone, key=len)
    assert data == alone and len(alone) < len(two)  # a noisy tone: level 2 not built, not needed
    assert ubpe.decompress(data).tobytes() == x.tobytes()


def test_progress_and_arguments_when_level_2_is_not_built():
    x = np.round(1000 * np.sin(np.arange(5000) / 9.0)).astype(np.int16) + np.int16(3) * (np.arange(5000) % 5 == 0)
    seen = []
    with settings.configured(**NEVER):
        data = ubpe.compress(x, level=3, progress=seen.append)
        assert seen == [x.size]
        for bad in (dict(threads=0), dict(block_size=-1), dict(embed=2)):
            with pytest.raises((TypeError, ValueError)):
                ubpe.compress(x, level=3, **bad)
    assert ubpe.decompress(data).tobytes() == x.tobytes()


def test_input_of_more_than_one_channel_always_gets_level_2_built_beside():
    rng = np.random.default_rng(0)
    walk = np.clip(np.cumsum(rng.integers(-30, 31, (300, 9)), axis=0), -128, 127).astype(np.int8)  # 2 700 values
    data = ubpe.compress(walk, level=3)
    two = ubpe.compress(walk, level=2)
    assert 8 * len(level3.encode(walk)) > settings.DEFAULT.level3_level2_bits * walk.size
    assert len(two) < len(level3.encode(walk))  # level 2 wins on this clipped 9-channel walk ...
    assert data == two  # ... and is built beside level 3 (one channel of that length: not built)
    assert ubpe.decompress(data).tobytes() == walk.tobytes()
