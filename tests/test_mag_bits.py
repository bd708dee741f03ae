"""``ubpe.coders.mag.bits_of_stats`` (its terms from the compiled ``level1.stats_terms``) gives the
floats of its numpy form (kept here as the reference), bit for bit, on hypothesis counts."""

from __future__ import annotations

import os

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ubpe._kernels import level1 as fast
from ubpe.coders import mag

SETTINGS = settings(deadline=None, max_examples=int(os.environ.get("UBPE_MAX_EXAMPLES", "100")),
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def reference_bits_of_stats(stats: np.ndarray, raws: list[int], rates: int) -> list[float]:
    """``bits_of_stats`` as numpy computed it before ``stats_terms`` (the same code)."""
    nz = stats > 0
    per = stats.sum(axis=2)
    used = per > 0
    span = stats.shape[2] - np.argmax(nz[:, :, ::-1], axis=2) - np.argmax(nz, axis=2)  # last - first + 1
    tables = ((13 + 9 * span) * used).sum(axis=1).tolist()
    ends = [0] + np.cumsum(np.concatenate((used.sum(axis=1), nz.sum(axis=(1, 2))))).tolist()
    v = np.concatenate((per[used], stats[nz])).astype(np.float64)  # every row's totals, then its counts
    lv = np.log2(v)
    rows = stats.shape[0]
    bits = []
    for r in range(rows):
        p, c = slice(ends[r], ends[r + 1]), slice(ends[rows + r], ends[rows + r + 1])
        entropy_bits = float(np.dot(v[p], lv[p])) - float(np.dot(v[c], lv[c]))
        bits.append(entropy_bits + raws[r // rates] + stats.shape[1] + float(tables[r]))
    return [min(bits[k * rates:(k + 1) * rates]) for k in range(len(raws))]


@st.composite
def counts(draw):
    """(stats, raws, rates): ``streams * rates`` rows of counts, sparse or dense, small or large
    (up to 10**9 a cell), some contexts or rows empty."""
    rates = draw(st.sampled_from([1, 2, 7]))
    streams = draw(st.integers(1, 3))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    shape = (streams * rates, fast.N_CONTEXTS, fast.N_BUCKETS)
    density = draw(st.sampled_from([0.0, 0.001, 0.05, 0.3, 1.0]))
    top = 10 ** draw(st.integers(1, 9))
    stats = np.where(rng.uniform(size=shape) < density, rng.integers(0, top, shape), 0).astype(np.int64)
    raws = [int(x) for x in rng.integers(0, 2**40, streams)]
    return stats, raws, rates


@SETTINGS
@given(counts())
def test_bits_of_stats_are_the_numpy_forms_floats(case):
    stats, raws, rates = case
    got = mag.bits_of_stats(stats, raws, rates)
    expected = reference_bits_of_stats(stats, raws, rates)
    assert np.array_equal(np.array(got).view(np.int64), np.array(expected).view(np.int64))


def test_the_terms_are_laid_out_as_documented():
    stats = np.zeros((2, fast.N_CONTEXTS, fast.N_BUCKETS), np.int64)
    stats[0, 1, [2, 5]] = (3, 4)  # row 0: context 1, buckets 2 .. 5 (span 4)
    stats[1, 0, 7] = 9
    stats[1, 3, [0, 49]] = (1, 2)  # span 50
    v = np.full(2 * fast.N_CONTEXTS * (fast.N_BUCKETS + 1), -1.0)
    ends, tables = np.empty(5, np.int64), np.empty(2, np.int64)
    assert fast.stats_terms(stats, v, ends, tables) == 8
    assert v[:8].tolist() == [7.0, 9.0, 3.0, 3.0, 4.0, 9.0, 1.0, 2.0]
    assert ends.tolist() == [0, 1, 3, 5, 8]
    assert tables.tolist() == [13 + 9 * 4, 13 + 9 * 1 + 13 + 9 * 50]
