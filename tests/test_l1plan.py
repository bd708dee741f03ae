"""Level 1's compiled planner passes (ubpe/_kernels/l1plan.py, issue 28) give exactly what the
numpy code they replaced gave: the same integers, and the same floats where floats follow."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ubpe._kernels import l1plan
from ubpe.coders import mag
from ubpe.frontend import mult
from ubpe.planner.estimates import log2_table


@settings(max_examples=150, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(1, 5000), st.sampled_from(["i1", "u1", "i2", "u2", "i4", "u4"]),
       st.integers(0, 3))
def test_digit_table_is_the_reshaped_sums_of_the_modulus_histogram(seed, n, dtype, shape):
    rng = np.random.default_rng(seed)
    info = np.iinfo(dtype)
    if shape == 0:  # anywhere in the dtype
        x = rng.integers(info.min, int(info.max) + 1, n)
    elif shape == 1:  # a narrow walk
        x = np.clip(np.cumsum(rng.integers(-3, 4, n)), info.min, info.max)
    elif shape == 2:  # a skewed low digit: an ADC's extra bits
        base = int(rng.choice([2, 4, 7, 16, 60]))
        x = np.clip(base * rng.integers(-200, 200, n) + np.where(rng.random(n) < 0.1, rng.integers(0, base, n), 1),
                    info.min, info.max)
    else:  # the extremes
        x = rng.choice([info.min, info.max, 0], n)
    x = x.astype(dtype)
    hist = np.bincount(x.astype(np.int64) % mult.MULT_MODULUS, minlength=mult.MULT_MODULUS)
    want = mult._digit_histograms(hist)
    assert np.array_equal(mult._digit_histograms_of(x), want)
    for i, m in enumerate(mult.MULT_BASES):  # (and the definition: each base's own histogram)
        assert np.array_equal(want[i, :m], np.bincount(x.astype(np.int64) % m, minlength=m))


def _reference_gains(digits, rows, wide, ends, steps, raw):
    """``_mult_exact``'s loop over the bases one by one (the code ``_batched_gains`` replaced; its
    ``_quotient_entropy`` checked against the plain quotients in tests/test_level1_fast.py)."""
    gains = {}
    for i in rows:
        m = mult.MULT_BASES[i]
        h = digits[i, :m]
        hr = mult._digit_entropy(h)
        if hr == 0.0 or np.log2(m) - hr < mult.MULT_MIN_GAIN:
            continue
        c = mult._mult_offset_reference(h)
        gains[(m, c)] = raw - mult._quotient_entropy(wide, c, m, ends, steps) - hr
    return gains


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(16, 3000), st.sampled_from([2, 3, 4, 5, 7, 8, 12, 16, 60]),
       st.floats(0.0, 1.0), st.sampled_from([1, 3, 300]), st.lists(st.integers(2, 400), max_size=4))
def test_batched_gains_are_the_loops_floats(seed, n, base, noise, step, cuts):
    """Every base's gain, all at once (three compiled calls and numpy's per-segment sums), is the
    float the loop computed base by base: digits, offsets, quotient entropies alike; over
    windows too."""
    rng = np.random.default_rng(seed)
    x = base * np.cumsum(rng.integers(-step, step + 1, n)) + np.where(
        rng.random(n) < noise, rng.integers(0, base, n), int(rng.integers(0, base)))
    wide = x.astype(np.int64)
    ends = np.array(sorted({min(c, n) for c in cuts} | {n}), np.int64)
    starts = np.concatenate(([0], ends[:-1]))
    diffs = np.concatenate([np.diff(wide[a:b]) for a, b in zip(starts, ends)])
    raw = mult._entropy_of(diffs.copy())
    hist = np.bincount(wide % mult.MULT_MODULUS, minlength=mult.MULT_MODULUS)
    digits = mult._digit_histograms(hist)
    rows = np.arange(len(mult.MULT_BASES))
    steps = np.empty(diffs.shape[0], np.int64)
    want = _reference_gains(digits, rows.tolist(), wide, ends, steps.copy(), raw)
    assert mult._batched_gains(digits, rows, wide, ends, steps, raw) == want


def _split_codes(rng, n, base, noise, step, dtype):
    """Codes ``base * walk + digit`` whose digit is mostly one value (``noise``: the share of
    others), clipped to ``dtype``: an ADC's skewed extra bits, or none (``noise`` 1: uniform)."""
    info = np.iinfo(dtype)
    x = base * np.cumsum(rng.integers(-step, step + 1, n)) + np.where(
        rng.random(n) < noise, rng.integers(0, base, n), int(rng.integers(0, base)))
    return np.clip(x, info.min, info.max).astype(dtype)


@settings(max_examples=150, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(16, 70000), st.sampled_from([2, 3, 4, 5, 7, 8, 12, 16, 60, 64]),
       st.floats(0.0, 1.0), st.sampled_from([1, 3, 40, 3000]), st.sampled_from(["i1", "u1", "i2", "u2", "i4", "u4"]))
def test_mult_decide_answers_as_the_exact_floats(seed, n, base, noise, step, dtype):
    """The compiled estimate of every base's gain (``l1plan.mult_decide``) answers what the exact
    test of numpy's floats answers, or leaves it to that test; with a margin no estimate can
    clear it always leaves it (the fallback path)."""
    rng = np.random.default_rng(seed)
    x = _split_codes(rng, n, base, noise, step, dtype)
    screened = mult._mult_screen(x)
    if screened is None:
        return
    want = mult._mult_exact_floats(x, screened)
    assert mult._mult_exact(x, screened) == want
    windows, sample, digits, maybe = screened
    rows = np.flatnonzero(maybe)
    found = np.zeros(2, np.int64)
    args = (sample, mult._window_ends(windows), digits, rows, mult._TABLE_BASES[rows], mult.MULT_MIN_GAIN,
            mult.MULT_NEAR)
    decided = l1plan.mult_decide(*args, mult._SCREEN_MARGIN, log2_table(), found)
    if decided == 0:
        assert want == (1, 0)
    elif decided == 2:
        assert want == (int(found[0]), int(found[1]))
    assert l1plan.mult_decide(*args, 1e9, log2_table(), found) in (0, 1)  # (0 only when nothing may pay)


@pytest.mark.parametrize("m", [1, 2, 3, 7, 14, 63, 64])
def test_mult_offset_by_running_sums_is_the_loop_over_cuts(m):
    """``digits.mult_offset``'s cost of each cut from running sums: the first least cut of the
    definition's loop, on every histogram of up to three digits' mass and on random ones."""
    rng = np.random.default_rng(m)
    hists = [rng.integers(0, 50, m) for _ in range(300)]
    hists += [np.bincount(rng.integers(0, m, k), minlength=m) for k in (1, 2, 5) for _ in range(50)]
    for h in hists:
        h = np.ascontiguousarray(h, np.int64)
        assert mult._mult_offset(h) == mult._mult_offset_reference(h)


def test_mult_detect_alike_with_and_without_the_screen_cache():
    """The screen decides before the digest: a channel no base can split is not kept; one that
    is tested is, and both answer as the uncached detection."""
    rng = np.random.default_rng(5)
    walk = np.cumsum(rng.integers(-40, 41, 5000)).astype(np.int16)
    codes = (4 * np.cumsum(rng.integers(-5, 6, 5000)) + np.where(rng.random(5000) < 0.05, 3, 2)).astype(np.int32)
    with mult.detection_cache():
        assert mult.mult_detect(walk) == mult._mult_detect(walk) == (1, 0)
        assert not mult._DETECTED  # (screened out: no digest taken)
        assert mult.mult_detect(codes) == mult._mult_detect(codes)
        assert mult.mult_detect(codes)[0] == 4 and len(mult._DETECTED) == 1
    assert not mult._DETECTED  # (dropped with the scope: nothing outlives a compress call)
    assert mult.mult_detect(codes)[0] == 4 and not mult._DETECTED  # (outside a scope: nothing kept)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(0, 40), min_size=1, max_size=3000), st.floats(0.0, 1.0))
def test_rank_present_is_cumsum_flatnonzero_and_searchsorted(cells, empty):
    counts = np.array(cells, np.int64)
    counts[np.random.default_rng(len(cells)).random(counts.shape[0]) < empty] = 0
    if not counts.any():
        counts[-1] = 1
    n = int(counts.sum())
    rank = np.empty(counts.shape[0], np.int32)
    where = np.empty(counts.shape[0], np.int64)
    used = np.empty(counts.shape[0], np.int64)
    a, middle = l1plan.rank_present(counts, n // 2, rank, where, used)
    present = counts > 0
    assert np.array_equal(rank, np.cumsum(present, dtype=np.int32) - 1)
    assert np.array_equal(where[:a], np.flatnonzero(present)) and np.array_equal(used[:a], counts[present])
    assert middle == int(np.searchsorted(np.cumsum(counts), n // 2, side="right"))


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(2, 6000), st.sampled_from([1, 4, 40, 3000]), st.booleans())
def test_mag_encode_taking_the_planners_options_gives_the_same_stream(seed, n, scale, narrow):
    """"mag" given the options of rates 3 and 5 that the planner sized (stream_options' rows,
    with their counts) codes the same stream as counting and costing every rate itself; options
    for another center are not taken."""
    rng = np.random.default_rng(seed)
    tokens = (np.round(rng.laplace(0, scale, n)) + 4 * scale).clip(0, None).astype(np.int32)
    if narrow:
        tokens = np.minimum(tokens, 3)
    counts = np.bincount(tokens)
    center = int(np.searchsorted(np.cumsum(counts), n // 2, side="right"))
    rates = np.array([3, 5], np.int64)
    stats = np.zeros((2, mag._mag.N_CONTEXTS, mag._mag.N_BUCKETS), np.int64)
    raw = int(mag._fast.mag_stats(tokens, center, rates, stats))
    ces, tbits = mag.stream_options(stats, n)
    known = {r: (stats[j], raw, center, (ces[j], tbits[j])) for j, r in enumerate(rates.tolist())}
    want = mag._encode_mag(tokens, 1 << 40, counts)
    assert mag._encode_mag(tokens, 1 << 40, counts, known=known) == want
    wrong = {r: (v[0], v[1], v[2] + 1, (v[3][0] + 1.0, v[3][1])) for r, v in known.items()}
    assert mag._encode_mag(tokens, 1 << 40, counts, known=wrong) == want
    assert mag.stream_bits(stats, raw, n) == float((ces + raw + tbits).min())


def _rank_forward_reference(x):
    """rank_forward's table path as numpy made it (flatnonzero, cumsum, astype)."""
    from ubpe.frontend import rank

    a, flip = rank._narrow_flip(x)
    present = np.zeros(1 << (8 * x.dtype.itemsize), np.bool_)
    rank._ranks.mark_present(a, flip, present)
    values = np.flatnonzero(present).astype(np.uint64)
    ktype = np.uint8 if values.shape[0] <= 256 else np.uint16
    k = np.empty(a.shape[0], ktype)
    rank._ranks.gather_ranks(a, flip, (np.cumsum(present, dtype=np.int32) - 1).astype(ktype), k)
    gaps = np.concatenate((values[:1], values[1:] - values[:-1] - np.uint64(1)))
    return k, rank.pack_varints(gaps), int(values.shape[0])


@settings(max_examples=80, deadline=None)
@given(st.integers(0, 2**32 - 1), st.sampled_from(["i1", "u1", "i2", "u2", ">i2"]), st.integers(0, 3))
def test_rank_forward_table_path_is_numpys(seed, dtype, spread):
    from ubpe.frontend import rank

    rng = np.random.default_rng(seed)
    info = np.iinfo(np.dtype(dtype))
    n = 1 << 12 if dtype.endswith("2") else 64  # (the table path: n * RANK_TABLE >= 2**bits)
    x = np.clip(rng.integers(-(3 * 10**spread), 3 * 10**spread, n), info.min, info.max).astype(dtype)
    k, params = rank.rank_forward(x)
    want_k, want_values, count = _rank_forward_reference(x)
    assert k.dtype == want_k.dtype and np.array_equal(k, want_k)
    assert params["values"] == want_values and params["count"] == count


@settings(max_examples=100, deadline=None)
@given(st.integers(0, 2**32 - 1), st.sampled_from(["i1", "u1", "i2", "u2", "i4", "u4", "i8"]), st.integers(1, 3000),
       st.integers(1, 3))
def test_histogram_and_value_counts_are_numpys(seed, dtype, n, spread):
    """The planner's histogram (bounds in one pass) and value counts (a buffer of at most a
    value's cells, not the span's) are numpy's min, max, bincount and non-zero cells, on
    spans far wider than the values too."""
    from ubpe.planner import fast

    rng = np.random.default_rng(seed)
    info = np.iinfo(dtype)
    x = rng.integers(max(info.min, -(10 ** (2 * spread))), min(int(info.max), 10 ** (2 * spread)) + 1, n).astype(dtype)
    lo, hi, counts = fast._histogram(x, None)
    assert (lo, hi) == (int(x.min()), int(x.max()))
    assert np.array_equal(counts, np.bincount(x.astype(np.int64) - lo, minlength=hi - lo + 1))
    assert np.array_equal(fast._value_counts(x, {}), counts[counts > 0])


def test_a_lazy_lookup_table_maps_as_the_eager_one_did():
    from ubpe.alphabet import Alphabet

    values = np.array([-7, -3, 0, 5, 6, 40], np.int64)
    for a in (Alphabet(values), Alphabet.sorted_integers(values.copy()), Alphabet.from_data(values)):
        assert a._lookup_table() is not None
        assert a.to_ids(np.array([40, -7, 5], np.int16)).tolist() == [5, 0, 3]
        assert np.array_equal(a._table, [0, -1, -1, -1, 1, -1, -1, 2] + [-1] * 4 + [3, 4] + [-1] * 33 + [5])
        assert a == Alphabet(values.tolist())
        with pytest.raises(ValueError):
            a.to_ids(np.array([1], np.int64))


def test_an_alphabets_field_is_made_once_and_handed_out_as_copies():
    from ubpe.alphabet import Alphabet
    from ubpe.format.fields import _alphabet_field, alphabet_field

    a = Alphabet(np.array([-7, -3, 0, 5, 6, 40, 1000], np.int64))
    first = alphabet_field(a)
    assert first == _alphabet_field(a) and a._field == first
    first["gaps"] = b"changed"  # (a caller's edit does not reach the kept map)
    assert alphabet_field(a) == _alphabet_field(a) != first
    assert alphabet_field(Alphabet.span(3, 9)) == {"n": 7, "lo": 3, "w": 0, "gaps": b""}


@settings(max_examples=150, deadline=None)
@given(st.integers(0, 2**32 - 1), st.sampled_from(["i1", "u1", "i2", "u2", "i4", "u4", "i8", "u8", ">i2", ">u4"]),
       st.integers(1, 3), st.integers(0, 40), st.integers(0, 4))
def test_the_delta_stages_rows_are_deltas(seed, dtype, channels, frames, order):
    from ubpe.frontend import delta as d

    rng = np.random.default_rng(seed)
    native = np.dtype(dtype).newbyteorder("=")
    info = np.iinfo(native)
    x = rng.integers(info.min, info.max, (channels, frames), dtype=native, endpoint=True).astype(dtype)
    want = d.delta(x, order, axis=-1)
    got = d._delta_rows(x, order)
    assert got.dtype == want.dtype and np.array_equal(got, want)
    if order:
        y, params = d.DeltaStage(order).forward(x)
        assert np.array_equal(y, want) and params == {"order": order}


def _block_costs_reference(r, block, local_span, narrow=False):
    """``_block_costs`` as it made its spans each call (the code the kept layouts replaced)."""
    from ubpe.frontend import lpc

    n = r.shape[0]
    bstarts = np.arange(0, n, block)
    bcounts = np.diff(np.append(bstarts, n)).astype(np.float64)
    offsets = np.arange(0, min(block, n), local_span)
    starts = (bstarts[:, None] + offsets[None, :]).ravel()
    starts = starts[starts < n]
    starts.sort()
    counts = np.diff(np.append(starts, n)).astype(np.float64)
    totals = lpc._span_totals(r, block, local_span, starts.shape[0], narrow)
    block_of = starts // block
    whole = lpc._geometric(np.bincount(block_of, totals, minlength=bstarts.shape[0]), bcounts)
    return whole, np.bincount(block_of, lpc._geometric(totals, counts), minlength=bstarts.shape[0])


@settings(max_examples=100, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(1, 20000), st.sampled_from([7, 64, 1000, 4096, 16384]),
       st.sampled_from([1, 16, 64, 100]), st.sampled_from(["i2", "i4", "i8"]))
def test_block_costs_with_kept_layouts_are_the_same_floats(seed, n, block, span, dtype):
    from ubpe.frontend import lpc

    r = np.random.default_rng(seed).integers(-3000, 3000, n).astype(dtype)
    want = _block_costs_reference(r, block, span)
    for _ in range(2):  # (made, then kept)
        got = lpc._block_costs(r, block, span)
        assert np.array_equal(got[0], want[0]) and np.array_equal(got[1], want[1])
    assert not lpc._block_layout(n, block, span)[1].flags.writeable


# ---- level1-plan-2.md: the planner's and the coder's glue, the same numbers by fewer passes


def test_gap_bits_floor_log2_is_frexps_exponent_for_every_gap_up_to_2_23():
    g = np.arange(1, (1 << 23) + 1, dtype=np.int64)
    assert np.array_equal(np.floor(np.log2(g.astype(np.float64))).astype(np.int64),
                          np.frexp(g.astype(np.float64))[1].astype(np.int64) - 1)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(1, (1 << 22) - 1), min_size=0, max_size=300), st.integers(-(1 << 40), 1 << 40))
def test_gap_bits_is_the_former_float_sum(gaps, start):
    from ubpe.planner.fast import gap_bits

    where = start + np.concatenate(([0], np.cumsum(np.array(gaps, np.int64)))).astype(np.int64)
    d = np.diff(where).astype(np.float64)
    want = float((1.0 + 2.0 * np.floor(np.log2(d))).sum()) if d.size else 0.0
    got = gap_bits(where)
    assert type(got) is float and got == want


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(1, 1 << 40), min_size=1, max_size=400), st.integers(1, 1 << 20))
def test_order0_bytes_is_the_former_float(counts, extra):
    from ubpe.planner.estimates import order0_bytes
    from ubpe.planner.settings import DEFAULT

    c = np.array(counts, np.int64)
    n = int(c.sum())
    y = np.zeros(min(n, 4096), np.int32)  # (only its length and dtype are read with counts given)
    y = np.zeros(n, np.int8) if n <= 1 << 16 else y
    if y.shape[0] != n:
        return
    want = (n * np.log2(n) - float((c * np.log2(c)).sum()) + DEFAULT.order0_table_bits * c.shape[0]) / 8.0
    assert order0_bytes(y, DEFAULT, c) == want


@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(0, 1 << 30), min_size=1, max_size=300), st.integers(-2, 1 << 32))
def test_median_cell_is_searchsorted_of_the_cumsum(counts, half):
    from ubpe._kernels import tally

    c = np.array(counts, np.int64)
    assert tally.median_cell(c, half) == int(np.searchsorted(np.cumsum(c), half, side="right"))


@pytest.mark.parametrize("dtype", ["i1", "u1", "i2", "u2", "i4", "u4", "i8", ">i4"])
def test_encode_streams_token_bounds_refuse_as_before(dtype):
    from ubpe.coders import encode_stream

    rng = np.random.default_rng(7)
    good = rng.integers(0, 100, 500).astype(dtype)
    assert encode_stream(good, 100) == encode_stream(good.astype(np.int64), 100)
    assert encode_stream(good[::2], 100) == encode_stream(good[::2].astype(np.int64), 100)
    if np.dtype(dtype).kind == "i":
        bad = good.copy()
        bad[17] = -1
        with pytest.raises(ValueError, match=r"range \[-1, "):
            encode_stream(bad, 100)
    bad = good.copy()
    bad[300] = 100
    with pytest.raises(ValueError, match=r"got range \[\d+, 100\]"):
        encode_stream(bad, 100)


def test_the_mag_coders_center_from_counts_is_the_median_token():
    rng = np.random.default_rng(3)
    for n in (1, 2, 3, 10, 1001, 20000):
        t = np.clip(np.round(rng.laplace(300, 20, n)), 0, 599).astype(np.int32)
        counts = np.bincount(t, minlength=600).astype(np.int64)
        want = int(np.searchsorted(np.cumsum(counts), n // 2, side="right"))
        assert want == int(np.sort(t)[n // 2])
        s = mag._encode_mag(t, 1 << 30, counts)
        assert s is None or s["center"] == want


def test_numbered_leaves_and_subclasses_as_before():
    import enum

    from ubpe.format import container

    class Flag(enum.IntEnum):
        A = 3

    class Map(dict):
        pass

    obj = {"front": [{"stage": "lpc", "block": 4096, "coefs": b"\x01", "x": 1.5, "t": True, "none": None}],
           "n": Flag.A, "mapped": Map(n=1), "pairs": ("n", {"n": 2})}
    got = container._numbered(obj)
    n = container._KEY_IDS["n"]
    assert got[n] is Flag.A
    assert got[container._KEY_IDS["front"]][0][container._KEY_IDS["block"]] == 4096
    assert "mapped" not in container._KEY_IDS and "pairs" not in container._KEY_IDS
    assert got["mapped"] == {n: 1} and got["pairs"] == ["n", {n: 2}]


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(1, 3000), st.sampled_from(["i2", "u2", "i4", "u4", "i8"]),
       st.integers(1, 1 << 21))
def test_value_counts_of_a_wide_span_by_sorting_are_the_histograms(seed, n, dtype, span):
    from ubpe._kernels import tally
    from ubpe.planner import fast

    rng = np.random.default_rng(seed)
    info = np.iinfo(dtype)
    span = min(span, int(info.max) - int(info.min))
    lo = int(rng.integers(int(info.min), int(info.max) - span + 1))
    y = (lo + rng.integers(0, span + 1, n)).astype(dtype)
    if rng.random() < 0.3:  # repeats
        y = rng.choice(y[: max(1, n // 8)], n).astype(dtype)
    want = np.unique(y, return_counts=True)[1]
    out = np.empty(n, np.int64)
    assert np.array_equal(out[:tally.run_counts(np.sort(y), out)], want)
    memo: dict = {}
    got = fast._value_counts(y, memo)  # (sorted where the span is wide, else the histogram's)
    assert got.dtype == np.int64 and np.array_equal(got, want)
    assert fast.bounds(y, memo) == (int(y.min()), int(y.max()))
    if fast._histogram(y, memo) is not None:  # (and the histogram made after it: the same)
        assert np.array_equal(fast._value_counts(y, memo), want)


def test_wide_int32_channels_write_the_same_containers_sorted_or_by_histogram(monkeypatch):
    import ubpe
    from ubpe.planner import fast

    rng = np.random.default_rng(11)
    walk = np.cumsum(rng.integers(-40000, 40001, 20000)).astype(np.int32)  # spans of hundreds of thousands
    sparse = (np.round(rng.laplace(0, 3e5, 9000)) * 7).astype(np.int32)
    two = np.stack([walk[:9000], sparse], axis=1)
    for x in (walk, sparse, two, walk[:300]):
        monkeypatch.setattr(fast, "_SORT_SPAN", 1 << 40)
        want = ubpe.compress(x, level=1, threads=1)
        monkeypatch.setattr(fast, "_SORT_SPAN", 16)
        assert ubpe.compress(x, level=1, threads=1) == want
        assert np.array_equal(ubpe.decompress(want), x)


def _mult_forward_numpy(arr, base, offset):
    """mult_forward's former numpy split (floor divmod of the int64 values), the reference."""
    signed = np.dtype(f"i{arr.dtype.itemsize}")
    q0, r0 = np.divmod(arr.astype(np.int64), base)
    below = r0 < offset
    return (q0 - below).astype(signed), r0 - offset + base * below


@settings(max_examples=300, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(1, 3000), st.sampled_from(["i1", "u1", "i2", "u2", "i4", "u4", ">i2"]),
       st.one_of(st.sampled_from([2, 3, 7, 16, 1000, 20160, 1 << 16]), st.integers(2, 1 << 16)), st.floats(0, 1))
def test_mult_split_is_numpys_floor_divmod(seed, n, dtype, base, where):
    rng = np.random.default_rng(seed)
    info = np.iinfo(dtype)
    x = rng.integers(int(info.min), int(info.max) + 1, n, dtype=np.int64).astype(dtype)
    x[: min(n, 3)] = np.array([info.min, info.max, 0], np.int64)[: min(n, 3)].astype(dtype)
    offset = min(int(where * base), base - 1)
    q, r = mult.mult_forward(x, base, offset)
    want_q, want_r = _mult_forward_numpy(x.astype(x.dtype.newbyteorder("=")), base, offset)
    assert q.dtype == want_q.dtype and r.dtype == want_r.dtype
    assert np.array_equal(q, want_q) and np.array_equal(r, want_r)
    assert np.array_equal(mult.mult_inverse(q, r, base, offset, x.dtype.newbyteorder("=")), x)


# ---- level1-short-2.md: a short file's glue in one compiled call, the same numbers


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(0, 3), min_size=0, max_size=400), st.sampled_from(["i8", "i4", "u2", "f8"]))
def test_nonzero_ids_is_flatnonzero(cells, dtype):
    counts = np.array(cells, dtype=dtype)
    out = np.empty(counts.shape[0], np.intp)
    got = out[:l1plan.nonzero_ids(counts, out)]
    assert np.array_equal(got, np.flatnonzero(counts)) and got.dtype == np.flatnonzero(counts).dtype


class _FlatNonzero:
    """``l1plan`` as encode_stream used it before: its used ids from ``np.flatnonzero``."""

    def __getattr__(self, name):
        return getattr(l1plan, name)

    @staticmethod
    def nonzero_ids(counts, out):
        ids = np.flatnonzero(counts)
        out[:ids.size] = ids
        return ids.size


@settings(max_examples=100, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(1, 3000), st.integers(2, 70000))
def test_encode_stream_is_the_flatnonzero_ones(seed, n, vocab):
    import ubpe.coders as coders

    rng = np.random.default_rng(seed)
    tokens = np.minimum(rng.geometric(1.0 / max(vocab // 50, 2), n) - 1, vocab - 1).astype(np.int32)
    got = coders.encode_stream(tokens, vocab)
    saved = coders._l1plan
    coders._l1plan = _FlatNonzero()
    try:
        want = coders.encode_stream(tokens, vocab)
    finally:
        coders._l1plan = saved
    assert got == want
    assert np.array_equal(coders.decode_stream(got, vocab), tokens)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(1, (1 << 22) - 1), min_size=0, max_size=300), st.integers(-(1 << 40), 1 << 40))
def test_gap_bit_count_is_the_frexp_sum(gaps, start):
    where = start + np.concatenate(([0], np.cumsum(np.array(gaps, np.int64)))).astype(np.int64)
    d = np.diff(where)
    want = 2 * int(np.frexp(d.astype(np.float64))[1].sum()) - d.size if d.size else 0
    assert l1plan.gap_bit_count(where) == want


@settings(max_examples=300, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(1, 7), st.integers(1, 20), st.integers(0, (1 << 40)))
def test_least_total_is_numpys_float(seed, rows, cols, raw):
    from ubpe.planner.fast import _mag_bits

    rng = np.random.default_rng(seed)
    ces = rng.random((rows, cols)) * 10.0 ** rng.integers(0, 9)
    tb = rng.integers(0, 1 << 30, (rows, cols)).astype(np.int64)
    want = float((ces + raw + tb).min())
    assert l1plan.least_total(ces, raw, tb) == want
    got = _mag_bits((ces, tb), raw)
    assert type(got) is float and got == want


@settings(max_examples=150, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(16, 5000), st.integers(0, 2))
def test_digit_screen_is_the_numpy_bound(seed, n, shape):
    rng = np.random.default_rng(seed)
    if shape == 0:
        x = rng.integers(-30000, 30000, n)
    elif shape == 1:
        x = np.cumsum(rng.integers(-3, 4, n))
    else:  # a skewed low digit
        base = int(rng.choice([2, 4, 7, 16, 60]))
        x = base * rng.integers(-200, 200, n) + np.where(rng.random(n) < 0.1, rng.integers(0, base, n), 1)
    digits = mult._digit_histograms_of(x.astype(np.int32))
    bound = np.log2(np.array(mult.MULT_BASES, dtype=np.float64)) - mult._digit_entropies(digits)
    threshold = mult.MULT_MIN_GAIN - mult._SCREEN_MARGIN
    maybe = np.empty(len(mult.MULT_BASES), np.bool_)
    found = l1plan.digit_screen(digits, mult._LOG2_BASES, threshold, maybe)
    # the same decisions wherever the bound is not within 1e-12 of the threshold (it never is
    # here: the screen's margin is 1e-6), and the same answer
    far = np.abs(bound - threshold) > 1e-12
    assert np.array_equal(maybe[far], (bound >= threshold)[far])
    assert bool(found) == bool(maybe.any())
    zero = np.zeros_like(digits)
    assert not l1plan.digit_screen(zero, mult._LOG2_BASES, threshold, maybe) and not maybe.any()


def _former_has_grid(x):
    from ubpe.planner.chains import _unsigned_order

    for row in x:
        u = _unsigned_order(row)
        if int(np.gcd.reduce(u - u.min())) > 1:
            return True
    return False


@settings(max_examples=300, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(1, 700), st.sampled_from(["i1", "u1", "i2", "u2", "i4", "u4"]),
       st.integers(1, 9), st.integers(0, 3), st.integers(1, 3))
def test_has_grid_and_spread_gcd_are_the_numpy_gcds(seed, n, dtype, step, shape, channels):
    from ubpe.planner.chains import has_grid

    rng = np.random.default_rng(seed)
    info = np.iinfo(dtype)
    k = rng.integers(0, max(2, (int(info.max) - int(info.min)) // step // 2), (channels, n))
    x = info.min + step * k + (rng.integers(0, 3) if shape < 3 else 0)
    if shape == 1:  # one value off the grid, late
        x[-1, -1] += 1
    elif shape == 2:  # the extremes
        x = rng.choice([info.min, info.max], (channels, n))
    x = np.clip(x, info.min, info.max).astype(dtype)
    for row in x:
        u = row.astype(np.int64)
        for m in (1, min(256, n), n):
            assert l1plan.spread_gcd(row, m) == int(np.gcd.reduce(u[:m] - u[:m].min()))
    assert has_grid(x) == _former_has_grid(x)


def test_built_chain_builds_the_predictors_once_and_the_same_stages():
    from ubpe.frontend.chains import PREDICTORS, build_chain, built_chain
    from ubpe.planner.candidates import stage_key

    for name, spec in PREDICTORS.items():
        a, b = built_chain(spec), built_chain(spec)
        assert a is not b and len(a) == len(b) == len(spec)
        assert all(s is t for s, t in zip(a, b))  # (built once)
        fresh = build_chain(spec)
        assert [stage_key(s, {}) for s in a] == [stage_key(s, {}) for s in fresh], name
    other = (("grid", {}),) + PREDICTORS["delta1"]  # (a spec not of PREDICTORS: built each time)
    if all(other is not v for v in PREDICTORS.values()):
        assert all(s is not t for s, t in zip(built_chain(other), built_chain(other)))


def test_automatic_chains_write_the_same_bytes_twice_and_as_forced_built_stages():
    import ubpe

    rng = np.random.default_rng(5)
    x = np.cumsum(rng.integers(-40, 41, 3000)).astype(np.int16)
    grid = (4 * np.cumsum(rng.integers(-5, 6, 2000)) + 3).astype(np.int32)
    for v in (x, grid, np.stack([x[:2000], grid.astype(np.int16)], axis=1)):
        a = ubpe.compress(v, level=1, threads=1)
        b = ubpe.compress(v, level=1, threads=1)
        assert a == b and np.array_equal(ubpe.decompress(a), v)


def _former_mag_choice(ces, raw_bits, tbitss):
    totals = ces + raw_bits + tbitss
    least = float(totals.min())
    near = totals <= least + max(8.0, 5e-4 * least)
    j = int(np.argmax(near.any(axis=0)))
    rows = np.flatnonzero(near[:, j])
    i = int(rows[np.argmin(totals[rows, j])])
    return i, j, float(totals[i, j])


@settings(max_examples=400, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(1, 7), st.integers(1, 20), st.integers(0, 1 << 40), st.integers(0, 3))
def test_mag_choice_is_numpys(seed, rows, cols, raw, shape):
    rng = np.random.default_rng(seed)
    scale = 10.0 ** int(rng.integers(0, 8))
    ces = rng.random((rows, cols)) * scale
    tb = rng.integers(0, 64, (rows, cols)).astype(np.int64)
    if shape == 1:  # ties
        ces = np.round(ces)
    elif shape == 2:  # near options in several columns
        ces = scale + rng.integers(0, 20, (rows, cols)).astype(np.float64)
    elif shape == 3:  # all equal
        ces[:] = ces[0, 0]
        tb[:] = tb[0, 0]
    i, j, total = l1plan.mag_choice(ces, raw, tb)
    assert (int(i), int(j), float(total)) == _former_mag_choice(ces, raw, tb)
