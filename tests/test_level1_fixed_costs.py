"""Level 1's per-call savings give what the code they replaced gave: the "mag" options' table of
logarithms and unsigned quotients (:func:`ubpe._kernels.residual.mag_options_with`), and the
fast planner's shared histogram (:func:`ubpe.planner.fast._histogram`: value counts, the layout
pass and ``small_ids`` from one pass); and level 1's containers are the same bytes whichever
thread compresses, or several at once."""

from __future__ import annotations

import threading

import numba
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import ubpe
from common import random_mag_stats
from ubpe._kernels import residual
from ubpe.planner import fast
from ubpe.planner.estimates import value_counts
from ubpe.planner.settings import Settings


@numba.njit(cache=False)
def _log2_as_before(f):
    """The expression mag_options computed in place before the table: np.log2 of an int64."""
    out = np.empty(f.shape[0], np.float64)
    for i in range(f.shape[0]):
        out[i] = np.log2(f[i])
    return out


def test_log2_table_is_the_in_place_logarithm():
    n = (1 << residual.MAX_PB) + 1
    table = residual._log2_table(n)
    want = _log2_as_before(np.arange(n, dtype=np.int64))
    assert table.dtype == np.float64 and table.shape == (n,)
    assert np.array_equal(table.view(np.uint64), want.view(np.uint64))  # bit for bit (-inf at 0 too)


@settings(max_examples=120, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(1, 7), st.integers(8, 10), st.integers(1, 6), st.floats(0.0, 1.0),
       st.sampled_from([2, 30, 400, 1 << 20, 1 << 36]))
def test_mag_options_table_and_computed_logs_agree(seed, rates, pb_lo, pbs, density, top):
    # pb up to 15, above the table's 2**MAX_PB: the frequencies past it are computed in place;
    # a table of one entry computes them all: every output the same, bit for bit
    rng, stats = random_mag_stats(seed, rates, density, top)
    outs = []
    for table in (residual._log2_table(1), residual._log2_table((1 << residual.MAX_PB) + 1), None):
        ce = np.full((rates, pbs), np.nan)
        tbits = np.full((rates, pbs), -1, np.int64)
        last = np.full(stats.shape[1:], -1, np.int64)
        if table is None:
            residual.mag_options(stats, pb_lo, ce, tbits, last)
        else:
            residual.mag_options_with(stats, pb_lo, ce, tbits, last, table)
        outs.append((ce, tbits, last))
    for ce, tbits, last in outs[1:]:
        assert np.array_equal(ce.view(np.uint64), outs[0][0].view(np.uint64))
        assert np.array_equal(tbits, outs[0][1]) and np.array_equal(last, outs[0][2])
    assert not np.isnan(outs[0][0]).any() and (outs[0][1] >= 0).all()


@settings(max_examples=80, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(2, 3000), st.sampled_from([1, 3, 50, 5000, 1 << 21, 1 << 23]),
       st.sampled_from(["int16", "int32", "int64", "uint16", "uint32"]))
def test_shared_histogram_gives_the_same_counts_and_ids(seed, n, span, dtype):
    rng = np.random.default_rng(seed)
    lo = int(np.iinfo(dtype).min) if rng.random() < 0.3 else 0
    hi = min(lo + span, int(np.iinfo(dtype).max))
    y = rng.integers(lo, hi, n, endpoint=True).astype(dtype)
    memo: dict = {}
    assert fast.bounds(y) == fast.bounds(y, memo) == (int(y.min()), int(y.max()))
    assert np.array_equal(value_counts(y, fast.bounds(y, memo)), value_counts(y))  # (the lean search's screen)
    assert np.array_equal(fast._value_counts(y, memo), value_counts(y))
    h = fast._histogram(y, memo)
    assert (h is None) == (int(y.max()) - int(y.min()) >= 1 << 22)
    if h is not None:
        fast.static_parts([], y, 1.0, Settings(), memo)  # the layout pass, kept in memo
        assert id(y) in memo
        got, want = fast.small_ids(y, n, memo), fast.small_ids(y, n)
        assert got[1] == want[1] and got[0].dtype == want[0].dtype == np.int32
        assert np.array_equal(got[0], want[0])
        assert fast.small_ids(y, got[1] - 1, memo) is None and fast.small_ids(y, got[1] - 1) is None


def _signals():
    rng = np.random.default_rng(5)
    t = np.arange(30_000)
    wave = (2000 * np.sin(t / 37.0) + rng.normal(0, 40, t.size)).astype(np.int16)
    return [wave, wave[:3000].copy(), np.cumsum(rng.integers(-3, 4, 20_000)).astype(np.int32),
            (rng.laplace(0, 30, 5000) + 1000).astype(np.uint16)]


def test_level1_bytes_alike_in_threads():
    # every signal in the main thread, then all of them in four threads at once (twice each):
    # the same containers, which decode to the input
    xs = _signals()
    want = [ubpe.compress(x, level=1, threads=1) for x in xs]
    got: dict[tuple[int, int, int], bytes] = {}

    def work(k: int) -> None:
        for rep in range(2):
            for i, x in enumerate(xs[k:] + xs[:k]):
                got[(k, rep, (i + k) % len(xs))] = ubpe.compress(x, level=1, threads=1)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert len(got) == 4 * 2 * len(xs)
    for (k, rep, i), data in got.items():
        assert data == want[i], (k, rep, i)
    for x, data in zip(xs, want):
        back = ubpe.decompress(data)
        assert back.dtype == x.dtype and np.array_equal(back, x)


def test_fast_methods_kept_for_the_same_settings():
    import dataclasses

    from ubpe.api import writer

    s = Settings()
    one = writer._fast_methods(s)
    assert one == dataclasses.replace(s, encode_methods=s.fast_encode_methods)
    assert writer._fast_methods(s) is one  # the same frozen settings: the copy kept
    other = dataclasses.replace(s, fast_encode_methods=s.encode_methods)
    two = writer._fast_methods(other)
    assert two is not one and two.encode_methods == other.fast_encode_methods
    assert writer._fast_methods(s) == one  # back to the first: made again, equal


def _pair_information_as_before(ids: np.ndarray, a: int) -> tuple[float, int]:
    """fast.pair_information as numpy computed it before its compiled pass (the reference)."""
    n = ids.shape[0] - 1
    if n < 1 or a < 2:
        return 0.0, 0
    first, second = ids[:-1].astype(np.int64), ids[1:].astype(np.int64)
    if a * a <= fast._PAIR_CELLS:
        pairs = np.bincount(first * a + second, minlength=a * a)
    else:
        pairs = np.bincount((first * a + second) % fast._PAIR_CELLS, minlength=fast._PAIR_CELLS)
    left, right = np.bincount(first, minlength=a), np.bincount(second, minlength=a)

    def plogp(c: np.ndarray) -> tuple[float, int]:
        c = c[c > 0].astype(np.float64)
        return float((c * np.log2(c)).sum()), int(c.shape[0])

    joint, k2 = plogp(pairs)
    lt, kl = plogp(left)
    rt, kr = plogp(right)
    information = (joint - lt - rt) / n + np.log2(n)
    return information - (k2 - kl - kr + 1) / (2.0 * n * np.log(2.0)), k2


@settings(max_examples=150, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(0, 5000), st.sampled_from([1, 2, 3, 17, 255, 256, 300, 4000, 70000]),
       st.sampled_from(["int32", "int64", "uint16"]), st.booleans())
def test_pair_information_as_before(seed, n, a, dtype, skewed):
    # both the cell-a-pair (a * a <= _PAIR_CELLS) and the hashed tables; the same float, bit for bit
    rng = np.random.default_rng(seed)
    if skewed:  # few pairs repeated (where merges may pay)
        ids = np.minimum(rng.geometric(0.3, n) - 1, a - 1)
    else:
        ids = rng.integers(0, a, n)
    ids = ids.astype(dtype)
    got, want = fast.pair_information(ids, a), _pair_information_as_before(ids, a)
    assert got[1] == want[1] and np.float64(got[0]).tobytes() == np.float64(want[0]).tobytes()
    if n >= 2:
        cells = min(a * a, fast._PAIR_CELLS)
        out = np.full(cells + 2 * a + 1, np.nan)
        k2, kl, kr = fast._k.pair_counts(ids, a, cells, out)
        pairs, left, right = out[:k2], out[k2:k2 + kl], out[k2 + kl:k2 + kl + kr]
        assert np.isnan(out[k2 + kl + kr:]).all() and (out[:k2 + kl + kr] >= 1).all()
        assert left.sum() == right.sum() == n - 1 and pairs.sum() == n - 1
        assert np.array_equal(left, np.bincount(ids[:-1].astype(np.int64), minlength=a)[
            np.bincount(ids[:-1].astype(np.int64), minlength=a) > 0].astype(np.float64))
