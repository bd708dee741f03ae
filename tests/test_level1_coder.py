"""Level 1's coder and lpc stage after issue 28's second profile (benchmarks/results/level1-coder.md):
each faster path against the one it replaced, which the tests keep here as the former code:

* ``mag_options_with``'s normalisation gives each row's shortfall to its largest remainders by
  counting eight keys at a time: the frequencies, cross-entropies and table bits of the plain
  reference (tests/reference_mag_table.py) on rows of up to all 50 buckets, with tied counts,
  and on the coder's counts of real streams;
* ``ubpe.frontend.lpc._geometric`` in fewer numpy calls: the former expression's floats, bit for
  bit, and the same containers with the former function patched in;
* ``ubpe.coders.mag._rate_stats`` zeroes its counts only when it counts every rate: the same
  counts and the same containers as the former function;
* ``_reweight_tuning`` keeps the defaults once the Nones take them: the same tuning, and a bad
  argument still a typed error;
* ``rank_forward`` counts 16-bit values with its table from 2**16 / 64 values (was / 16): the
  same ranks, rank dtype and params as sorting them, and the same containers;
* ``lpc_analyze`` keeps its windows between calls (``kept``): the same analysis as computing
  them each call, on a first call (kept then) and on later ones (read), and the same containers.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import numpy as np
import pytest
import reference_mag_table as ref
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ubpe
from test_level1 import small_signals
from test_level1_planner import shared_signals
from ubpe._kernels import level1 as L1
from ubpe._kernels import residual as R
from ubpe.coders import mag as M
from ubpe.frontend import lpc, rank

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))

SETTINGS = settings(
    deadline=None,
    max_examples=int(os.environ.get("UBPE_MAX_EXAMPLES", "60")),
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
NO_FREQS = np.zeros((0, R.N_BUCKETS), np.int64)


def _real() -> list[tuple[str, np.ndarray]]:
    ecg, seismic, audio = shared_signals()
    return [("ecg[:30000]", ecg[:30000]), ("seismic", seismic), ("audio 0", audio[0]),
            ("audio 5", audio[5]), ("audio 17[:4000]", audio[17][:4000])]


# ----------------------------------------------------------------------------- mag_options


def _check_options(counts: np.ndarray) -> None:
    """``mag_options`` of one rate's ``counts`` against the reference's choice at every pb."""
    pbs = R.MAX_PB + 1 - R.MIN_PB
    ce, tbits = np.empty((1, pbs)), np.empty((1, pbs), np.int64)
    R.mag_options(counts[None], R.MIN_PB, ce, tbits, NO_FREQS)
    for j in range(pbs):
        pb = R.MIN_PB + j
        want, want_ce, want_bits = ref.choose(counts, pb)
        np.testing.assert_array_equal(M._mag_freqs(counts, pb), want)
        assert want_ce == ce[0, j] and want_bits == tbits[0, j]


@st.composite
def wide_rows(draw):
    """Count tables whose rows use many buckets (9 to all 50: two to seven groups of eight keys
    in the shortfall's count), the counts often tied (equal remainders: the bucket breaks them)."""
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    counts = np.zeros((R.N_CONTEXTS, R.N_BUCKETS), np.int64)
    for c in rng.choice(R.N_CONTEXTS, size=draw(st.integers(1, 4)), replace=False):
        k = draw(st.integers(1, R.N_BUCKETS))
        lo = int(rng.integers(0, R.N_BUCKETS - k + 1))
        kind = draw(st.sampled_from(["tied", "small", "wide"]))
        if kind == "tied":
            row = np.full(k, draw(st.sampled_from([1, 3, 7, 1000])), np.int64)
        elif kind == "small":
            row = rng.integers(1, 4, k)
        else:
            row = rng.integers(1, 1 << 20, k)
        counts[c, lo:lo + k] = row
    return counts


@SETTINGS
@given(wide_rows())
def test_options_of_wide_rows_are_the_reference(counts):
    _check_options(counts)


def test_options_of_real_streams_are_the_reference():
    # the coder's counts at every rate of a few real residual streams (rows of 10-30 buckets)
    for name, x in _real():
        r, _p = lpc.lpc_forward(x)
        tokens = r.astype(np.int64) - int(r.min())
        center = int(np.partition(tokens, tokens.size // 2)[tokens.size // 2])
        stats = np.zeros((M.RATES.size, R.N_CONTEXTS, R.N_BUCKETS), np.int64)
        L1.mag_stats(tokens, center, M.RATES, stats)
        for rate in (0, 3, 6):
            _check_options(stats[rate])
        assert (stats[0] > 0).sum(axis=1).max() > 8, name  # (a row past one group of eight)


# ----------------------------------------------------------------------------- _geometric


def _former_geometric(total: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """``_geometric`` as it was (main at 8e1ded5)."""
    m = total / np.maximum(counts, 1)
    with np.errstate(divide="ignore", invalid="ignore"):
        bits = (1 + m) * np.log2(1 + m) - np.where(m > 0, m * np.log2(np.where(m > 0, m, 1)), 0.0)
    return counts * bits


@SETTINGS
@given(st.lists(st.integers(0, 2**40), min_size=1, max_size=300), st.integers(0, 2**32 - 1))
def test_geometric_is_the_former_expression(totals, seed):
    rng = np.random.default_rng(seed)
    total = 2.0 * np.array(totals, np.float64)
    total[rng.random(total.size) < 0.3] = 0.0  # (silent spans: m == 0)
    counts = rng.integers(1, 5000, total.size).astype(np.float64)
    got, want = lpc._geometric(total, counts), _former_geometric(total, counts)
    assert got.tobytes() == want.tobytes()  # (bit for bit, signed zeros included)


def test_geometric_is_the_former_on_real_spans():
    for name, x in _real():
        r, p = lpc.lpc_forward(x)
        for span in (16, 256, p["block"]):
            n = r.shape[0]
            starts = np.arange(0, n, span)
            counts = np.full(starts.shape[0], float(span))
            counts[-1] = n - starts[-1]
            totals = lpc._span_totals(r, n, span, starts.shape[0])
            assert lpc._geometric(totals, counts).tobytes() == _former_geometric(totals, counts).tobytes(), name


# ----------------------------------------------------------------------------- _rate_stats


def _former_rate_stats(tokens, center, rates, known):
    """``ubpe.coders.mag._rate_stats`` as it was (main at 8e1ded5): every count zeroed first."""
    have = {} if not known else {r: v for r, v in known.items() if v[2] == center}
    stats = np.zeros((rates.size, R.N_CONTEXTS, R.N_BUCKETS), dtype=np.int64)
    missing = [i for i, r in enumerate(rates.tolist()) if r not in have]
    kept = None
    if missing:
        n = tokens.shape[0]
        sub = stats if len(missing) == rates.size else np.zeros((len(missing),) + stats.shape[1:], np.int64)
        zs, bk, ctx = np.empty(n, np.uint32), np.empty(n, np.uint8), np.empty((len(missing), n), np.uint8)
        raw_bits = int(L1.mag_stats_kept(tokens, center, rates[missing], sub, zs, bk, ctx))
        if sub is not stats:
            stats[missing] = sub
        kept = (zs, bk, ctx, {i: row for row, i in enumerate(missing)})
    for i, r in enumerate(rates.tolist()):
        if r in have:
            stats[i] = have[r][0]
            raw_bits = int(have[r][1])
    return stats, raw_bits, kept


@SETTINGS
@given(st.lists(st.integers(0, 5000), min_size=1, max_size=400), st.sets(st.sampled_from(M.RATES.tolist())))
def test_rate_stats_are_the_former_counts(values, known_rates):
    tokens = np.array(values, np.int64)
    center = int(np.partition(tokens, tokens.size // 2)[tokens.size // 2])
    known = {}
    for r in sorted(known_rates):  # (the planner's counts of some rates, about the same center)
        stats = np.zeros((1, R.N_CONTEXTS, R.N_BUCKETS), np.int64)
        raw = int(L1.mag_stats(tokens, center, np.array([r], np.int64), stats))
        known[r] = (stats[0], raw, center)
    # rubbish in freshly allocated memory must not show through the rows written over it
    np.empty((M.RATES.size, R.N_CONTEXTS, R.N_BUCKETS), np.int64).fill(-7)
    got = M._rate_stats(tokens, center, M.RATES, known)
    want = _former_rate_stats(tokens, center, M.RATES, known)
    np.testing.assert_array_equal(got[0], want[0])
    assert got[1] == want[1]
    assert (got[2] is None) == (want[2] is None) == (len(known_rates) == M.RATES.size)


# ----------------------------------------------------------------------------- containers


def _former_paths(monkeypatch) -> None:
    monkeypatch.setattr(lpc, "_geometric", _former_geometric)
    monkeypatch.setattr(M, "_rate_stats", _former_rate_stats)


def test_containers_on_real_data_are_the_former(monkeypatch):
    xs = _real()
    now = [ubpe.compress(x, level=1, threads=1) for _name, x in xs]
    _former_paths(monkeypatch)
    for (name, x), got in zip(xs, now):
        assert got == ubpe.compress(x, level=1, threads=1), name
        assert np.array_equal(ubpe.decompress(got), x), name


@SETTINGS
@given(small_signals())
def test_containers_of_short_signals_are_the_former(x):
    now = ubpe.compress(x, level=1, threads=1)
    with pytest.MonkeyPatch.context() as mp:
        _former_paths(mp)
        assert now == ubpe.compress(x, level=1, threads=1)
    assert np.array_equal(ubpe.decompress(now), x)


# ----------------------------------------------------------------------------- the refit's tuning


def test_default_tuning_is_the_checked_defaults_and_kept():
    d = lpc._reweight_defaults()
    want = lpc._reweight_tuning_checked(*(d[k] for k in lpc._REWEIGHT_KEYS))
    assert lpc._reweight_tuning(None, None, None, None, None, None) == want
    assert lpc._reweight_tuning(None, None, None, None, None, None) is lpc._reweight_tuning(None, None, None, None,
                                                                                            None, None)
    assert lpc._reweight_tuning(d["local_span"], None, 3, None, None, None)[2] == 3


@pytest.mark.parametrize("bad", [np.arange(3), "16", -1, float("nan")])
def test_bad_tuning_is_still_a_typed_error(bad):
    with pytest.raises((TypeError, ValueError)):
        lpc._reweight_tuning(bad, None, None, None, None, None) if not isinstance(bad, float) else \
            lpc._reweight_tuning(None, None, None, None, bad, None)


# ----------------------------------------------------------------------------- rank_forward


@SETTINGS
@given(st.integers(0, 2**32 - 1), st.sampled_from(["<i2", "<u2", ">i2", "i1", "u1"]),
       st.sampled_from([3, 40, 3000, 60000]))
def test_rank_table_from_fewer_values_is_sorting(seed, dtype, spread):
    dt = np.dtype(dtype)
    bits = 8 * dt.itemsize
    rng = np.random.default_rng(seed)
    # the values the table now takes and sorting took: 2**bits / 64 to 2**bits / 16
    n = int(rng.integers((1 << bits) // rank.RANK_TABLE_NARROW, max((1 << bits) // rank.RANK_TABLE, 5)))
    info = np.iinfo(dt)
    x = np.clip(rng.integers(-spread, spread + 1, n) + int(rng.integers(info.min, info.max)), info.min,
                info.max).astype(dt)
    k, params = rank.rank_forward(x)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(rank, "RANK_TABLE_NARROW", 1)  # (sorted: n < 2**bits)
        want_k, want_params = rank.rank_forward(x)
    assert k.dtype == want_k.dtype and np.array_equal(k, want_k)
    assert params == want_params


def test_rank_containers_of_short_audio_are_the_sorted_ones(monkeypatch):
    xs = [x for name, x in _real() if x.shape[0] < (1 << 16) // rank.RANK_TABLE]
    xs += [np.ascontiguousarray(x[:n]) for _name, x in _real()[:2] for n in (1100, 2500, 4000)]
    now = [ubpe.compress(x, level=1, threads=1) for x in xs]
    monkeypatch.setattr(rank, "RANK_TABLE_NARROW", rank.RANK_TABLE)  # (the former threshold)
    for x, got in zip(xs, now):
        assert got == ubpe.compress(x, level=1, threads=1)


# ----------------------------------------------------------------------------- kept windows


def _analysis(x: np.ndarray, block: int, kept=None) -> list[np.ndarray]:
    s = x.astype(np.int64)
    nb = -(-s.shape[0] // block)
    o, sh, p = (np.zeros(nb, np.int64) for _ in range(3))
    c = np.zeros(nb * 32, np.int64)
    args = (s, block, 32, np.array([2, 1], np.int64), np.array([12, 15], np.int64), 48, o, sh, p, c, 1, 4, -1, 0.0)
    used = L1.lpc_analyze(*args) if kept is None else L1.lpc_analyze(*args, *kept)
    return [o, sh, p, c[:used]]


@SETTINGS
@given(st.lists(st.integers(-2**15, 2**15 - 1), min_size=1, max_size=3000), st.sampled_from([64, 500, 4096]),
       st.integers(0, 2**32 - 1))
def test_kept_windows_give_the_same_analysis(values, block, seed):
    x = np.cumsum(np.array(values, np.int64)) % (1 << 15)  # (walks: predictable, orders > 0)
    if np.random.default_rng(seed).random() < 0.5:
        x = np.array(values, np.int64)
    want = _analysis(x, block)
    length = max(1, min(block, x.shape[0]))
    kept = (np.full((2, length), np.nan), np.full(2, -1, np.int64))
    for _ in range(2):  # (the first call keeps the windows, the second reads them)
        got = _analysis(x, block, kept)
        assert all(np.array_equal(a, b) for a, b in zip(got, want))
    assert kept[1].tolist() == [length, length] or x.shape[0] < 2  # (both windows kept)


def test_kept_windows_give_the_same_containers(monkeypatch):
    xs = [x for _name, x in _real()]
    now = [ubpe.compress(x, level=1, threads=1) for x in xs]
    # fresh windows each call: every window computed again, as before
    monkeypatch.setattr(lpc, "_kept_windows", lambda length, kinds: (np.empty((kinds.shape[0], length)),
                                                                     np.full(kinds.shape[0], -1, np.int64)))
    for x, got in zip(xs, now):
        assert got == ubpe.compress(x, level=1, threads=1)


def test_kept_windows_are_each_threads_own():
    # the planner's threads each keep their windows: the same containers as one thread, and a
    # second thread's table is not the first's
    import threading

    xs = [x for _name, x in _real()[:2]]
    for x in xs:
        assert ubpe.compress(x, level=1, threads=2) == ubpe.compress(x, level=1, threads=1)
    kinds = np.array([2], np.int64)
    mine = lpc._kept_windows(4096, kinds)
    other = []
    t = threading.Thread(target=lambda: other.append(lpc._kept_windows(4096, kinds)))
    t.start()
    t.join()
    assert other[0][0] is not mine[0] and lpc._kept_windows(4096, kinds)[0] is mine[0]
