"""``has_grid`` (a channel on a grid ``offset + step * k`` with ``step > 1``) against an obviously
correct reference: the gcd, in Python integers, of every value's difference to the channel's
least value. Channels longer than the 256 values ``has_grid`` looks at first included, with a
value off the grid anywhere."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import given, settings, strategies as st

from ubpe import frontend
from ubpe.planner import has_grid

DTYPES = [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint64]


def reference_has_grid(x: np.ndarray) -> bool:
    """Some channel (row of ``x``) whose values' differences to its least value have a gcd > 1."""
    for row in x:
        values = [int(v) for v in row]
        low = min(values)
        if math.gcd(*(v - low for v in values)) > 1:
            return True
    return False


@st.composite
def channels(draw):
    dtype = np.dtype(draw(st.sampled_from(DTYPES)))
    info = np.iinfo(dtype)
    n = draw(st.integers(1, 700))
    step = draw(st.sampled_from([1, 2, 3, 4, 6, 1 << 20]))
    steps = (int(info.max) - int(info.min)) // step
    offset = draw(st.integers(int(info.min), int(info.max) - step * min(steps, 50)))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    k = rng.integers(0, max(min(steps, 50), 0) + 1, n)
    values = [offset + step * int(v) for v in k]
    if draw(st.booleans()):  # one value off the grid, anywhere (after the first 256 too)
        i = draw(st.integers(0, n - 1))
        values[i] = values[i] + 1 if values[i] < int(info.max) else values[i] - 1
    x = np.array(values, dtype=object).astype(dtype)
    if draw(st.booleans()):  # a second channel on no grid
        x = np.stack([x, (np.arange(n) % 2).astype(dtype)], axis=1)
    return frontend.to_channels(x)


@settings(max_examples=300, deadline=None)
@given(channels())
def test_has_grid_equals_the_reference(x):
    assert has_grid(x) is reference_has_grid(x)


def test_a_step_broken_only_after_the_first_256_values():
    x = np.arange(1000, dtype=np.int32) * 6
    assert has_grid(frontend.to_channels(x))
    x[900] += 3  # the gcd of the first values' differences is 6, the channel's 3
    assert has_grid(frontend.to_channels(x))
    x[950] += 1  # now 1
    assert not has_grid(frontend.to_channels(x))
