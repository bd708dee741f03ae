"""Issue 28, target 1: the fast level's shortcuts give the bytes or ids of the paths they stand for."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from ubpe.alphabet import Alphabet
from ubpe.format.fields import escaped_ids


def reference_escaped_ids(values: np.ndarray, flat: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The nearest alphabet value at or above each value (else the largest), by a search."""
    wide = flat.astype(np.int64)
    idx = np.minimum(np.searchsorted(values, wide), len(values) - 1)
    return idx.astype(np.int32), np.flatnonzero(values[idx] != wide)


@settings(deadline=None, max_examples=60)
@given(st.lists(st.integers(-300, 300), min_size=1, max_size=40, unique=True),
       st.lists(st.integers(-400, 400), min_size=0, max_size=200),
       st.sampled_from([np.int16, np.int32, np.uint16, np.int8]))
def test_escaped_ids_by_table_equal_the_search(alphabet, data, dtype):
    info = np.iinfo(dtype)
    values = np.array(sorted(v for v in alphabet if info.min <= v <= info.max), np.int64)
    flat = np.array([v for v in data if info.min <= v <= info.max], dtype)
    if values.size < 2:
        return
    ids, positions = escaped_ids(Alphabet(values), flat)
    want_ids, want_positions = reference_escaped_ids(values, flat)
    np.testing.assert_array_equal(ids, want_ids)
    np.testing.assert_array_equal(positions, want_positions)
