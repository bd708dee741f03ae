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


@settings(deadline=None, max_examples=25)
@given(st.integers(0, 2**32 - 1), st.sampled_from([np.int16, np.uint16, np.int32, np.uint8, np.int8]),
       st.sampled_from([(3000,), (1500, 2), (40,)]), st.sampled_from([None, 1024]))
def test_rank_and_delta_containers_decode_to_their_values(seed, dtype, shape, block_size):
    """Level 1's chain "rank" then "delta" (decoded in one pass, then a lookup of each
    channel's distinct values) gives back the values, in one stream or in blocks."""
    import ubpe

    rng = np.random.default_rng(seed)
    info = np.iinfo(dtype)
    grid = rng.choice(np.arange(info.min, info.max + 1, max(1, (int(info.max) - int(info.min)) // 500)), 300)
    walk = np.clip(np.cumsum(rng.integers(-3, 4, shape), axis=0) + 150, 0, 299)
    x = np.sort(grid)[walk].astype(dtype)
    data = ubpe.compress(x, level=1, predictor="rank+delta1", block_size=block_size)
    assert [e["stage"] for e in ubpe.describe(data).front] == ["rank", "delta"] or ubpe.describe(data).blocks > 1
    back = ubpe.decompress(data)
    assert back.dtype == x.dtype and np.array_equal(back, x)


@settings(deadline=None, max_examples=40)
@given(st.sampled_from([np.int8, np.uint8, np.int16, np.uint16, np.int32]), st.integers(0, 2**32 - 1),
       st.sampled_from([0, 5000, 9000]))
def test_distinct_values_equal_numpys(dtype, seed, n):
    from ubpe.api.writer import distinct_values

    info = np.iinfo(dtype)
    rng = np.random.default_rng(seed)
    flat = rng.integers(info.min, int(info.max) + 1, n, dtype=np.int64).astype(dtype)
    if n:
        flat[: n // 2] = flat[0]
    got, want = distinct_values(flat), np.unique(flat)
    assert got.dtype == want.dtype and np.array_equal(got, want)


def test_long_streams_choose_their_rate_on_a_sample_and_round_trip():
    """A "mag" stream of more than RATE_SAMPLE_ABOVE tokens (its rate chosen on windows of
    them, every token counted under that rate) decodes to its values, in one stream and in
    blocks."""
    import ubpe
    from ubpe.coders import mag

    rng = np.random.default_rng(3)
    n = mag.RATE_SAMPLE_ABOVE + 12_345
    loud = np.repeat(rng.uniform(1, 40, n // 500 + 1), 500)[:n]
    x = np.cumsum(np.round(rng.laplace(0, loud))).astype(np.int32)
    for block_size in (None, 0):
        data = ubpe.compress(x, level=1, block_size=block_size)
        assert np.array_equal(ubpe.decompress(data), x)
    info = ubpe.describe(ubpe.compress(x, level=1, block_size=0))
    assert info.coder == "mag" and info.n_tokens == n


def test_level_1_lpc_blocks_and_refit_are_settings():
    """``fast_lpc_blocks`` sets the block lengths level 1's "lpc" stage tries, and
    ``fast_lpc_reweight=False`` leaves its predictors unrefitted: the containers decode alike."""
    import ubpe
    from ubpe.planner import configured

    rng = np.random.default_rng(5)
    t = np.arange(40_000)
    x = (3000 * np.sin(t / 7.0) * (1 + (t // 5000) % 3) + rng.normal(0, 20, t.size)).astype(np.int16)
    for blocks in ((4096,), (16384,)):
        with configured(fast_lpc_blocks=blocks, fast_lpc_reweight=False):
            data = ubpe.compress(x, level=1, predictor="lpc")
        (entry,) = ubpe.describe(data).front
        assert entry["stage"] == "lpc" and entry["channels"][0]["block"] == blocks[0]
        assert np.array_equal(ubpe.decompress(data), x)


def test_level_1_blocks_run_level_1s_lpc_search_and_round_trip():
    """A blocked level-1 container's blocks go through the "lpc" stage with level 1's search
    (fewer orders costed, :func:`ubpe.planner.fast.fast_stages`); each block decodes to its values."""
    import ubpe

    rng = np.random.default_rng(11)
    t = np.arange(60_000)
    x = (2000 * np.sin(t / 9.0) + 900 * np.sin(t / 2.3) + rng.normal(0, 15, t.size)).astype(np.int16)
    data = ubpe.compress(x, level=1, predictor="lpc", block_size=20_000)
    info = ubpe.describe(data)
    assert info.blocks == 3
    assert np.array_equal(ubpe.decompress(data), x)
    assert np.array_equal(ubpe.decompress(data, start=19_990, stop=40_010), x[19_990:40_010])
