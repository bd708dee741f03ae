"""Level 1 on wide values whose distinct values keep growing with their number (24-bit audio):
the screen runs the stages whose params describe the set of all the values ("rank", "grid") on
all of them, so a rank table is rated at its size, not at a sample's; and the "rank" stage ranks
values wider than 16 bits by a table over their span where it is short (the same ranks)."""

from __future__ import annotations

import numpy as np

from hypothesis import given, settings
from hypothesis import strategies as st

import reference_predict as ref
from common import check_roundtrip
from test_level1 import stereo_24_bit
from ubpe import compress, describe, frontend
from ubpe.frontend import rank
from ubpe.frontend.chains import PREDICTORS, build_chain, is_fast
from ubpe.planner import DEFAULT
from ubpe.planner.candidates import forward_shared
from ubpe.planner.screening import WHOLE_STAGES, screen_forward, whole_outputs
from ubpe.planner.search import screen_sample


def test_level_1_on_stereo_24_bit_audio_is_within_a_percent_of_its_best_fast_chain():
    x = stereo_24_bit()  # 57 536 values: the screen sees a sample (rank+delta1 was 14 % larger)
    auto = len(check_roundtrip(x, level=1))
    forced = {name: len(compress(x, level=1, predictor=name)) for name in
              ("delta1", "delta2", "lpc", "decorrelate+delta1", "decorrelate+lpc", "rank+delta1")}
    assert all(is_fast(PREDICTORS[name]) for name in forced)
    assert auto <= 1.01 * min(forced.values())
    assert "rank" not in [e["stage"] for e in describe(compress(x, level=1)).front]


def test_the_screen_runs_a_rank_stage_on_all_the_values_then_samples_its_output():
    x = frontend.to_channels(stereo_24_bit())
    windows, joined, scale = screen_sample(x, DEFAULT)
    assert scale > 1.0  # (a sample)
    chains = [build_chain(PREDICTORS["rank+delta1"])]
    y, record = screen_forward(x, {False: windows, True: joined}, chains, 0, {}, DEFAULT)
    ranks, whole = frontend.forward(x, chains[0][:1])
    assert record[0] == whole[0]  # the table of every distinct value of each channel
    assert [c["count"] for c in record[0]["channels"]] == [np.unique(row).shape[0] for row in x]
    w, j, _ = screen_sample(ranks, DEFAULT)
    expected, rest = frontend.forward(w, chains[0][1:])
    assert record[1:] == rest
    np.testing.assert_array_equal(y, expected)


def test_the_screen_is_the_shared_forward_pass_for_other_chains_and_on_all_the_values():
    x = frontend.to_channels(stereo_24_bit(4000))
    chains = [build_chain(PREDICTORS[name]) for name in ("lpc", "rank+delta1")]
    for i in range(2):  # the sample is every value: each chain as it is
        y, record = screen_forward(x, {False: x, True: x}, chains, i, {}, DEFAULT)
        expected, full = frontend.forward(x, chains[i])
        np.testing.assert_array_equal(y, expected)
        assert record == full
    big = frontend.to_channels(stereo_24_bit())
    windows, joined, _ = screen_sample(big, DEFAULT)
    y, record = screen_forward(big, {False: windows, True: joined}, chains, 0, {}, DEFAULT)
    expected, full = frontend.forward(windows, chains[0])
    np.testing.assert_array_equal(y, expected)
    assert record == full and "lpc" not in WHOLE_STAGES


def test_the_pass_over_all_the_values_starts_from_the_screens_whole_value_outputs():
    x = frontend.to_channels(stereo_24_bit())
    windows, joined, _ = screen_sample(x, DEFAULT)
    chains = [build_chain(PREDICTORS["rank+delta1"])]
    cache: dict = {}
    screen_forward(x, {False: windows, True: joined}, chains, 0, cache, DEFAULT)
    seeds = whole_outputs(cache)
    assert len(seeds) == 2  # the rank stage's output on all the values, for either input
    y, record = forward_shared({False: x, True: x}, chains, 0, seeds)
    expected, full = frontend.forward(x, chains[0])
    np.testing.assert_array_equal(y, expected)
    assert record == full


@given(st.sampled_from([np.int32, np.uint32, np.int64, np.uint64]), st.integers(1, 3000),
       st.one_of(st.integers(1, 50_000), st.integers(1, 1 << 23)), st.integers(0, 2**32 - 1))
@settings(deadline=None, max_examples=60)
def test_ranks_of_wide_values_are_the_reference_ranks_by_table_or_by_sort(dtype, n, span, seed):
    """rank_forward ranks values wider than 16 bits by a table over their span when it is at most
    RANK_TABLE times their number (and RANK_TABLE_SPAN), else by sorting: the same ranks."""
    rng = np.random.default_rng(seed)
    info = np.iinfo(dtype)
    lo = int(info.min) + int(rng.integers(0, 2**62)) * (int(info.max) - int(info.min) - span + 1) // 2**62
    v = np.array([lo + int(o) for o in rng.integers(0, span, n)], dtype=dtype)
    k, p = rank.rank_forward(v)
    distinct, expected = ref.ranks([int(t) for t in v])
    assert k.tolist() == expected and p["count"] == len(distinct)
    assert rank.check_rank_params(p, n, k.dtype).tolist() == distinct
    np.testing.assert_array_equal(rank.rank_inverse(k, p), v)

