"""The static coders' faster parameter searches choose exactly what the loops they replaced chose
(``tests/reference_costing.py``, the former code): rANS's count model (q, codes, table bits,
cross-entropy) and precision (pb, cross-entropy, frequencies), the frequency normalisation, the
table's mode, the "mag" coder's (center, rate, pb) and its bytes, ``counts_cost_bits`` to the bit;
and :func:`ubpe.frontend.mult.mult_detect`'s scoring (against the per-cut loop, the exact digit entropies
and the per-window quotients)."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import reference_costing as ref
from common import random_mag_stats
import reference_mag
import reference_mag_table
from ubpe import coders
from ubpe.coders import mag as M
from ubpe.coders import packed
from ubpe.coders import rans as E
from ubpe.format import bits
from ubpe.frontend import mult as predict


def _stream(seed: int, n: int, vocab: int, kind: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    if kind == 0:
        x = rng.integers(0, vocab, n)
    elif kind == 1:  # residual-like: Laplacian around the middle
        x = np.round(rng.laplace(vocab / 2, rng.uniform(0.3, max(vocab / 8, 0.4)), n))
    elif kind == 2:  # few symbols, heavily skewed (large counts: the quantised models differ)
        x = np.round(rng.normal(vocab / 2, rng.uniform(0.2, 4.0), n))
    else:  # a loudness that changes (the "mag" rates differ), holes in the ids
        scale = np.repeat(rng.uniform(0.5, max(vocab / 16, 1.0), 1 + n // 256), 256)[:n]
        x = vocab / 2 + 2 * np.round(rng.laplace(0, scale) / 2)
    return np.clip(x, 0, vocab - 1).astype(np.int64)


streams = st.tuples(st.integers(0, 2**32 - 1), st.integers(2, 40000), st.integers(2, 6000), st.integers(0, 3))


@settings(max_examples=80, deadline=None)
@given(streams)
def test_rans_searches_choose_what_the_loops_chose(spec):
    seed, n, vocab, kind = spec
    x = _stream(seed, n, vocab, kind)
    counts = np.bincount(x, minlength=vocab).astype(np.int64)
    ids = np.flatnonzero(counts)
    if ids.size < 2:
        return
    used = counts[ids]
    q, codes, model, tbits, ce, mode = E._rans_model(ids, used, vocab)
    rq, rcodes, rtbits, rce = ref.choose_model(ids, used, vocab)
    assert (q, tbits, ce) == (rq, rtbits, rce) and np.array_equal(codes, rcodes)
    assert np.array_equal(model, E._dequantize(codes, q))
    assert E._table_bytes(ids, codes, vocab, mode) == E._table_bytes(ids, codes, vocab) == \
        ref.table_bytes(ids, codes, vocab)
    assert E._table_bits(ids, codes, vocab) == ref.table_bits(ids, codes, vocab) == tbits
    got = E._rans_pb(used, model, n)
    want = ref.choose_pb(used, model, n)
    assert (got is None) == (want is None)
    if got is not None:
        assert got[:2] == want and np.array_equal(got[2], ref.normalize(model, got[0]))
    assert E.counts_cost_bits(counts) == ref.counts_cost_bits(counts)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(1, 2**45), min_size=2, max_size=300), st.integers(0, 3))
def test_rans_model_with_huge_counts(values, pad):
    # counts of 2**40 or more have no exact code (q = 0 is skipped) and coarse q may overflow
    used = np.array(values, dtype=np.int64)
    ids = np.arange(used.size, dtype=np.int64) * (1 + pad)
    vocab = int(ids[-1]) + 1 + pad
    q, codes, _, tbits, ce, _ = E._rans_model(ids, used, vocab)
    rq, rcodes, rtbits, rce = ref.choose_model(ids, used, vocab)
    assert (q, tbits, ce) == (rq, rtbits, rce) and np.array_equal(codes, rcodes)
    counts = np.zeros(vocab, np.int64)
    counts[ids] = used
    assert E.counts_cost_bits(counts) == ref.counts_cost_bits(counts)


def test_rans_model_of_small_counts_over_a_wide_alphabet():
    # a q under which every count is below 2**(q + 1) codes the counts as q = 0 does (not built):
    # the choice is the loop's, and never such a q
    rng = np.random.default_rng(5)
    for top in (1, 2, 3, 4, 7, 8, 9, 255, 300, 513):
        used = rng.integers(1, top + 1, 3000).astype(np.int64)
        used[17] = top
        ids = np.sort(rng.choice(20000, used.size, replace=False)).astype(np.int64)
        q, codes, model, tbits, ce, _ = E._rans_model(ids, used, 20000)
        rq, rcodes, rtbits, rce = ref.choose_model(ids, used, 20000)
        assert (q, tbits, ce) == (rq, rtbits, rce) and np.array_equal(codes, rcodes)
        assert q == 0 or top >= 2 << q


@settings(max_examples=300, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(1, 3000), st.integers(12, 20), st.integers(0, 8),
       st.sampled_from([1, 2, 7, 1000, 10**9]))
def test_normalize_range_matches_the_stable_sort(seed, k, lo, width, spread):
    # both ways of handing out the shortfall (a sort of every row's keys up to _SORT_MAX_K
    # symbols, a partition per row beyond), ties included
    rng = np.random.default_rng(seed)
    lo = max(lo, (k - 1).bit_length())
    hi = min(lo + width, 20)
    c = rng.integers(1, spread + 1, k).astype(np.int64)
    if rng.random() < 0.3:  # many equal remainders
        c = np.resize(np.repeat(c[: max(1, k // 5)], 5), k)
    f = E._normalize_range(c, lo, hi)
    assert f.shape == (hi - lo + 1, k)
    for pb in range(lo, hi + 1):
        assert np.array_equal(f[pb - lo], ref.normalize(c, pb))
        assert np.array_equal(f[pb - lo], E._normalize(c, pb))


@settings(max_examples=40, deadline=None)
@given(streams)
def test_mag_chooses_and_writes_what_the_loop_did(spec):
    seed, n, vocab, kind = spec
    x = _stream(seed, n, vocab, kind)
    counts = np.bincount(x, minlength=vocab)
    for budget in (1 << 40, n // 4):
        want = ref.encode_mag(x, budget)
        assert M._encode_mag(x, budget, counts) == want
        assert M._encode_mag(x.astype(np.int32), budget) == want


@settings(max_examples=100, deadline=None)
@given(st.lists(st.integers(0, 300), min_size=1, max_size=400))
def test_mag_center_from_counts_is_the_median(values):
    arr = np.array(values, dtype=np.int64)
    counts = np.bincount(arr, minlength=301)
    assert M._encode_mag(arr, 1 << 30, counts) == M._encode_mag(arr, 1 << 30) == ref.encode_mag(arr, 1 << 30)


@settings(max_examples=40, deadline=None)
@given(streams)
def test_encode_stream_static_candidates_unchanged(spec):
    # encode_stream keeps the smallest of packed, rans and mag: the same bytes as the former searches
    seed, n, vocab, kind = spec
    x = _stream(seed, n, vocab, kind)
    got = coders.encode_stream(x, vocab)
    if got["coder"] == "rans":
        assert got == ref.encode_rans(x, vocab)
    elif got["coder"] == "mag":
        assert got == ref.encode_mag(x, 1 << 40)
    for coder in ("rans", "mag"):
        one = coders.encode_stream(x, vocab, coders=(coder,))
        if one["coder"] == coder:
            assert one == (ref.encode_rans(x, vocab) if coder == "rans" else ref.encode_mag(x, 1 << 40))


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(1, 3000), st.integers(2, 6000), st.integers(0, 3))
def test_mag_stats_of_every_rate_in_one_pass(seed, n, vocab, kind):
    from ubpe._kernels import residual

    x = _stream(seed, n, vocab, kind)
    center = int(np.median(x))
    every = np.arange(residual.MIN_RATE, residual.MAX_RATE + 1, dtype=np.int64)
    some = np.random.default_rng(seed).permutation(every)[:1 + seed % every.size]  # any rates, any order
    for rates in (every, some):
        got = np.zeros((rates.size, residual.N_CONTEXTS, residual.N_BUCKETS), np.int64)
        raw = reference_mag.mag_stats(x, center, reference_mag.BITLEN, rates, got, np.zeros(rates.size, np.int64))
        for r, rate in enumerate(rates.tolist()):
            counts, want_raw = ref.mag_stats_one(x, center, rate)
            assert raw == want_raw and np.array_equal(got[r], counts)


@settings(max_examples=150, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(8, 13), st.floats(0.0, 1.0), st.integers(1, 400))
def test_mag_frequencies_as_before(seed, pb, density, top):
    # one option (one rate, one pb): the frequencies (each row at the precision of least
    # payload + table bits), cross-entropy and table bits of the plain reference
    # (tests/reference_mag_table.choose), the kernel's own table bits equal
    from ubpe._kernels import residual

    rng = np.random.default_rng(seed)
    shape = (residual.N_CONTEXTS, residual.N_BUCKETS)
    counts = np.where(rng.random(shape) < density, rng.integers(1, top + 1, shape), 0).astype(np.int64)
    if rng.random() < 0.5:  # equal counts in a row: remainders tie
        counts[rng.integers(shape[0])] = np.where(rng.random(shape[1]) < 0.6, 3, 0)
    freqs = np.full_like(counts, -1)
    ce, tbits = np.empty((1, 1)), np.empty((1, 1), np.int64)
    residual.mag_options(counts[None], pb, ce, tbits, freqs)
    want, want_ce, want_bits = reference_mag_table.choose(counts, pb)
    assert np.array_equal(freqs, want) and ce[0, 0] == want_ce
    assert tbits[0, 0] == want_bits == residual.table_encode(want, pb, np.zeros(0, np.uint8))
    assert np.array_equal(M._mag_freqs(counts, pb), want)


@settings(max_examples=150, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(1, 7), st.integers(8, 10), st.integers(1, 6), st.floats(0.0, 1.0),
       st.sampled_from([2, 30, 400, 1 << 20, 1 << 36]))
def test_mag_options_in_one_pass_are_each_option_s(seed, rates, pb_lo, pbs, density, top):
    from ubpe._kernels import residual

    rng, stats = random_mag_stats(seed, rates, density, top)
    ce = np.full((rates, pbs), np.nan)
    tbits = np.full((rates, pbs), -1, np.int64)
    last = np.full(stats.shape[1:], -1, np.int64)
    residual.mag_options(stats, pb_lo, ce, tbits, last)
    assert np.array_equal(last, M._mag_freqs(stats[-1], pb_lo + pbs - 1))  # the last option's
    one_ce, one_tbits = np.empty((1, 1)), np.empty((1, 1), np.int64)
    for r in range(rates):
        for j in range(pbs):
            residual.mag_options(stats[r:r + 1], pb_lo + j, one_ce, one_tbits, M._NO_FREQS)
            assert ce[r, j] == one_ce[0, 0] and tbits[r, j] == one_tbits[0, 0]



@settings(max_examples=150, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(2, 7), st.integers(8, 10), st.integers(1, 6), st.floats(0.0, 1.0),
       st.sampled_from([2, 30, 400, 1 << 20, 1 << 36]), st.floats(0.0, 1.0))
def test_mag_options_of_rows_equal_across_rates_are_each_rate_s(seed, rates, pb_lo, pbs, density, top, share):
    """Rows equal to an earlier rate's (costed once, ``_equal_row_before``), a share ``share`` of
    them and some differing by one count: the options, choices and last frequencies of each rate
    alone, where nothing is shared."""
    from ubpe._kernels import residual

    rng, stats = random_mag_stats(seed, rates, density, top)
    for r in range(1, rates):
        for c in range(stats.shape[1]):
            if rng.random() < share:
                stats[r, c] = stats[rng.integers(r), c]
                if rng.random() < 0.2 and stats[r, c].any():  # the same sum, one count moved
                    b = int(np.flatnonzero(stats[r, c])[0])
                    if stats[r, c, b] > 1:
                        stats[r, c, b] -= 1
                        stats[r, c, (b + 1) % stats.shape[2]] += 1
    ce, tbits = np.full((rates, pbs), np.nan), np.full((rates, pbs), -1, np.int64)
    choices = np.full((rates, pbs, residual.N_CONTEXTS), -1, np.int64)
    last = np.full(stats.shape[1:], -1, np.int64)
    residual.mag_options(stats, pb_lo, ce, tbits, last, choices)
    for r in range(rates):
        one_ce, one_tbits = np.full((1, pbs), np.nan), np.full((1, pbs), -1, np.int64)
        one_choices = np.full((1, pbs, residual.N_CONTEXTS), -1, np.int64)
        one_last = np.full(stats.shape[1:], -1, np.int64)
        residual.mag_options(stats[r:r + 1].copy(), pb_lo, one_ce, one_tbits, one_last, one_choices)
        assert ce[r].tobytes() == one_ce[0].tobytes() and np.array_equal(tbits[r], one_tbits[0])
        assert np.array_equal(choices[r], one_choices[0])
    assert np.array_equal(last, one_last)  # (the last rate's)


def test_packed_size_without_packing():
    # the "packed" stream's size, computed without packing it: every msgpack header size of the payload (bin 8/16/32 edges) and of n and width
    import msgpack

    lengths = [0, 1, 255, 256, 65535, 65536, 70001]
    for width in (1, 2, 3, 7, 8, 9, 13, 16, 24):
        for length in lengths:
            for n in {max(1, (8 * length) // width - 1), max(1, (8 * length) // width), (8 * length) // width + 1}:
                x = np.full(n, (1 << width) - 1, dtype=np.int64)
                want = len(msgpack.packb(coders.encode_stream(x, 1 << width, coders=("packed",))))
                assert packed.size(n, width) == want, (n, width)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.one_of(st.integers(0, 40), st.integers(0, 2**20), st.integers(0, 2**40 - 1)), max_size=300))
def test_rice_choice_as_the_dry_runs(values):
    # every parameter's bits in one pass are the dry run's of that parameter; the choice is the
    # fewest bits, ties to the smaller r
    from ubpe._kernels import entropy as K

    arr = np.array(values, dtype=np.int64)
    top = min(max(values, default=0).bit_length(), K.MAX_RICE_PARAM)
    sizes = [K.rice_pack_all(arr, r, np.zeros(0, np.uint8)) for r in range(top + 1)]
    got = np.full(K.MAX_RICE_PARAM + 1, 7, np.int64)
    K.rice_bits(arr, got)
    assert (got - 7).tolist() == [K.rice_pack_all(arr, r, np.zeros(0, np.uint8)) for r in range(got.size)]
    want = min(range(top + 1), key=lambda r: (sizes[r], r))
    assert bits._rice_choice(arr, top) == (want, sizes[want])
    packed = bits.pack_rice(arr)
    assert packed[0] == want and bits.unpack_rice(packed[1], arr.size, want).tolist() == values


# ----------------------------------------------------------------------------- mult_detect


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(predict.MULT_BASES), st.integers(0, 2**32 - 1), st.floats(0.0, 1.0))
def test_mult_offset_matches_the_loop(m, seed, spread):
    rng = np.random.default_rng(seed)
    h = rng.integers(0, 1 + int(1000 * spread), m) + np.eye(1, m, int(rng.integers(m)), dtype=np.int64)[0] * 500
    if rng.random() < 0.3:  # many equal costs
        h = (h > h.mean()).astype(np.int64)
    assert predict._mult_offset(h) == predict._mult_offset_reference(h)


@settings(max_examples=100, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(1, 4000), st.floats(0.0, 1.0))
def test_digit_screen_is_within_its_margin(seed, n, skew):
    rng = np.random.default_rng(seed)
    x = np.where(rng.random(n) < skew, rng.integers(0, 1 << 20, n), 7 * rng.integers(0, 3000, n))
    hist = np.bincount(x % predict.MULT_MODULUS, minlength=predict.MULT_MODULUS)
    digits = predict._digit_histograms(hist)
    est = predict._digit_entropies(digits)
    for i, m in enumerate(predict.MULT_BASES):
        h = hist.reshape(-1, m).sum(axis=0)
        assert np.array_equal(digits[i, :m], h) and not digits[i, m:].any()
        assert abs(est[i] - predict._digit_entropy(h)) < predict._SCREEN_MARGIN


@settings(max_examples=200, deadline=None)
@given(st.integers(-(2**33) + 1, 2**33 - 1), st.integers(1, predict.MULT_MODULUS))
def test_floor_div_through_floats_is_exact(v, m):
    arr = np.array([v, v - 1, v + 1, -v], dtype=np.int64)
    assert np.array_equal(predict._floor_div(arr, m, 4), arr // m)


def test_entropy_of_its_own_values_is_the_same():
    """_entropy_of(v, own=True) (v may be overwritten, no temporary) gives the bits of
    own=False to the last bit, on the histogram's range and on widely spread values (sorted),
    and both are the Miller-Madow corrected entropy: 2 bits + 3 / (2 N ln 2) for four equally
    common values."""
    rng = np.random.default_rng(4)
    for v in (rng.integers(-40, 40, 5000), rng.integers(-2**40, 2**40, 300), np.array([7] * 9)):
        assert predict._entropy_of(v.copy(), own=True) == predict._entropy_of(v)
    four = np.tile(np.array([-1, 0, 5, 9], np.int64), 250)
    assert abs(predict._entropy_of(four, own=True) - (2.0 + 3 / (2000 * np.log(2.0)))) < 1e-12


def test_mult_detect_unchanged_on_windows_and_dtypes():
    # the joined windows give what the windows one by one gave (figures of the loop it replaced,
    # integ2 fb810f2): a base-4 ADC, found in every dtype
    rng = np.random.default_rng(11)
    n = 3 * predict.MULT_SAMPLE
    smooth = np.round(2000 * np.sin(np.arange(n) / 300.0) + np.cumsum(rng.normal(0, 2, n)))
    digits = np.where(rng.random(n) < 0.05, rng.integers(0, 4, n), 1)
    x = smooth.astype(np.int64) * 4 + digits
    for dtype in ("<i2", ">i4", "int64"):
        assert predict._mult_detect(x.astype(dtype)) == (4, 3)
    assert predict._mult_detect((x + 2**40).astype(np.uint64)) == (4, 3)
    assert predict._mult_detect(rng.integers(-3000, 3000, n).astype(np.int16)) == (1, 0)


@settings(max_examples=80, deadline=None)
@given(streams, st.integers(0, 3))
def test_stream_bits_shared_between_layouts_is_the_same(spec, gap):
    # a chain's bare ids (0 .. a-1) and dense ids (the values present, spread over a span) share
    # their counts: stream_bits with a shared dict gives each layout's own numbers, whichever
    # comes first, and a dict handed another array of counts starts again
    seed, n, vocab, kind = spec
    x = _stream(seed, n, vocab, kind)
    counts = np.bincount(x, minlength=vocab).astype(np.int64)
    where = np.flatnonzero(counts) * (1 + gap)
    if where.size < 2:
        return
    used = counts[counts > 0]
    a, span = where.size, int(where[-1]) + 1
    bare = np.arange(a, dtype=np.int64)
    want = (E.stream_bits(bare, used, a), E.stream_bits(where, used, span))
    shared: dict = {}
    assert (E.stream_bits(bare, used, a, shared), E.stream_bits(where, used, span, shared)) == want
    shared = {}
    assert (E.stream_bits(where, used, span, shared), E.stream_bits(bare, used, a, shared)) == want[::-1]
    other = used.copy()
    other[0] += 7
    assert E.stream_bits(bare, other, a, shared) == E.stream_bits(bare, other, a)
    assert E.stream_bits(where, used, span, shared) == want[1]
    assert E._rans_model(where, used, span, E._quantized(used))[3:5] == E._rans_model(where, used, span)[3:5]
