"""Level 1's trimmed search (ubpe.planner.fast): the settings that cut it or reuse its counts, each
path round-tripping; the reuses give the same bytes as the passes they replace; the cut search
stays within 0.2 % of the search before on the real inputs the tests use."""

from __future__ import annotations

import os

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ubpe
from common import check_roundtrip
from test_level1 import small_signals
from test_planner import EXCERPT, INPUTS
from ubpe import compress
from ubpe.alphabet import Alphabet
from ubpe.format.fields import ESCAPE_CHUNK, escaped_ids
from ubpe.frontend.rank import rank_forward
from ubpe.planner import configured
from ubpe.planner.fast import plan_repeats

SETTINGS = settings(deadline=None, max_examples=int(os.environ.get("UBPE_MAX_EXAMPLES", "100")) // 4,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

#: The search before h/l1trim: merges rated from 8 pairs a distinct pair, the coder counting its
#: ids again.
BEFORE = {"fast_merge_plan_repeats": 0.0, "fast_reuse_mag_stats": False, "fast_lpc_cache": True}

#: Each setting's non-default value (its other path).
OTHER_PATHS = [{"fast_merge_plan_repeats": 0.0}, {"fast_reuse_mag_stats": False}, {"fast_lpc_cache": True}, BEFORE, {}]


@SETTINGS
@given(small_signals(), st.sampled_from(OTHER_PATHS))
def test_each_path_of_the_trimmed_search_round_trips(x, changes):
    with configured(**changes):
        check_roundtrip(x, level=1)


@SETTINGS
@given(small_signals(), st.sampled_from([{"fast_reuse_mag_stats": False}, {"fast_lpc_cache": True}]))
def test_the_reuses_write_the_same_bytes(x, changes):
    """``fast_reuse_mag_stats``: the "mag" coder takes the counts the sizing made (rates 3 and
    5) instead of counting them again; ``fast_lpc_cache`` off: no LPC analysis kept by content
    during level 1's plan. Either way the same container, byte for byte."""
    with configured(**changes):
        other = compress(x, level=1)
    assert compress(x, level=1) == other


def test_plan_repeats_scales_with_the_ids_and_keeps_the_floor():
    with configured() as s:
        assert plan_repeats(1 << 14, s) == s.fast_merge_plan_repeats
        assert plan_repeats(1 << 15, s) == 2 * s.fast_merge_plan_repeats
        assert plan_repeats(100, s) == s.fast_merge_repeats  # (the cheap test's floor)
    with configured(fast_merge_plan_repeats=0.0) as s:
        assert plan_repeats(1 << 20, s) == s.fast_merge_repeats


def _shared_slices() -> dict[str, np.ndarray]:
    """The shared data's slices the other tests use (tests/test_container.py: ECG[:20000], 3 000
    values of each neural file) and the whole ECG, when the shared data is there."""
    from conftest import SHARED_DATA

    out: dict[str, np.ndarray] = {}
    if not SHARED_DATA.is_dir():
        return out
    ecg = np.load(SHARED_DATA / "ecg" / "mitbih_208.npy")
    out["ecg_20000"], out["ecg"] = ecg[:20_000], ecg
    from scipy.io import wavfile

    for i, path in enumerate(sorted((SHARED_DATA / "neural").glob("*.wav"))[:8]):
        x = wavfile.read(path)[1]
        start = (i * 7919) % max(len(x) - 3000, 1)
        out[f"neural_{i}_3000"] = x[start:start + 3000]
        if i < 2:
            out[f"neural_{i}"] = x  # (a screen sample: merges rated before, not now)
    return out


def test_the_trimmed_search_stays_within_the_bound_on_real_inputs():
    """At most 0.2 % larger than the search before, input by input (measured: the same bytes on
    each), on the bundled inputs and the shared data's slices."""
    inputs = {**INPUTS, **_shared_slices()}
    same = 0
    for name, x in inputs.items():
        now = len(compress(x, level=1))
        with configured(**BEFORE):
            before = len(compress(x, level=1))
        assert now <= 1.002 * before, (name, now, before)
        same += now == before
    assert same >= 0.9 * len(inputs)


def test_merges_are_still_rated_on_repeated_motifs_of_a_short_sample():
    """The threshold is in proportion to the ids: 2 048 values of motifs (about 11 pairs a distinct
    pair) are rated and the merges kept (32 pairs a distinct pair on any length lost them)."""
    rng = np.random.default_rng(3)
    motifs = rng.integers(0, 200, (6, 9))
    x = motifs[rng.integers(0, 6, 228)].reshape(-1)[:2048].astype(np.int16)
    data = check_roundtrip(x, level=1)
    assert ubpe.describe(data).n_merges > 0
    with configured(**BEFORE):
        assert len(data) <= 1.002 * len(compress(x, level=1))


@SETTINGS
@given(st.sampled_from(["i1", "u1", "i2", "u2", ">i2", "<u2"]), st.integers(16, 3000), st.integers(0, 2**32 - 1),
       st.sampled_from([2, 60, 3000, 40000]))
def test_rank_forward_of_narrow_values_is_the_sorted_ranks(dtype, n, seed, spread):
    """rank_forward's table over a <= 16-bit dtype (indexed on the values' own width) gives each
    value's rank among the sorted distinct values, in the smallest unsigned dtype, as np.unique."""
    rng = np.random.default_rng(seed)
    info = np.iinfo(np.dtype(dtype))
    x = np.clip(rng.integers(-spread, spread + 1, n) + (0 if info.min < 0 else spread), info.min, info.max).astype(dtype)
    k, params = rank_forward(x)
    values, inverse = np.unique(x.astype(np.int64), return_inverse=True)
    assert np.array_equal(k.astype(np.int64), inverse.reshape(-1)) and params["count"] == values.shape[0]
    assert k.dtype == (np.uint8 if values.shape[0] <= 256 else np.uint16)
    assert np.array_equal(ubpe.frontend.STAGES["rank"]().inverse(k[None], {"channels": [params]})[0], x)


def _escaped_by_search(alphabet: Alphabet, flat: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """escaped_ids' rule by a plain search: the nearest alphabet value at or above (else the
    largest), and the positions whose value is not in the alphabet."""
    table = np.asarray(alphabet.values, np.int64)
    wide = flat.astype(np.int64)
    idx = np.minimum(np.searchsorted(table, wide), len(table) - 1).astype(np.int32)
    return idx, np.flatnonzero(table[idx] != wide)


@SETTINGS
@given(st.sampled_from(["i1", "u1", "i2", "u2", "i4"]), st.integers(1, 3 * ESCAPE_CHUNK), st.integers(0, 2**32 - 1),
       st.sampled_from(["all", "every_third", "three"]))
def test_escaped_ids_within_the_span_are_the_searched_ones(dtype, n, seed, alphabet_kind):
    """escaped_ids on values all within the alphabet's span (one table, the escapes marked by
    its sign): the ids and positions of the plain search, alphabets with and without gaps."""
    rng = np.random.default_rng(seed)
    info = np.iinfo(np.dtype(dtype))
    flat = rng.integers(max(info.min, -50), min(info.max, 60), n).astype(dtype)
    lo, hi = int(flat.min()), int(flat.max())
    values = {"all": np.arange(lo, hi + 1), "every_third": np.arange(lo, hi + 3, 3),
              "three": np.array(sorted({lo, (lo + hi) // 2, hi}))}[alphabet_kind]
    alphabet = Alphabet(values.astype(np.int64))
    ids, positions = escaped_ids(alphabet, flat)
    want_ids, want_positions = _escaped_by_search(alphabet, flat)
    assert ids.dtype == np.int32 and np.array_equal(ids, want_ids) and np.array_equal(positions, want_positions)


@pytest.mark.parametrize("level", [1, 2])
def test_the_excerpt_round_trips_with_the_search_before(level):
    with configured(**BEFORE):
        check_roundtrip(np.load(EXCERPT), level=level)
