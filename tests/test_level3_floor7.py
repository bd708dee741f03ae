"""Level 3's encode floor, seventh stop (issue 29, benchmarks/results/level3-floor-7.md): the
encoder's bookkeeping done with fewer passes gives the same values as before. Each helper is
checked against the code it replaced (kept here as the reference): the value table's header bytes
(``format._table_bytes``: the Golomb order searched up to the gaps' bit length, not to 40), the
distinct values of a wide range (``measure._symbols``: a sort, not numpy's hashing unique) and the
count of distinct pairs (``encoder.pair_recurrence``)."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from ubpe.level3 import encoder, measure
from ubpe.level3 import format as fmt


def _table_bytes_reference(table: np.ndarray | None) -> bytes:
    """``format._table_bytes`` before this stop: every order k in 0..40 tried."""
    if table is None:
        return fmt._uleb(0)
    d = np.diff(table)
    out = fmt._uleb(table.size)
    if d.size == 0:
        return out
    dmin = int(d.min())
    r = (d - dmin).astype(np.int64)
    best = None
    for k in range(0, 41):
        w = r + (1 << k)
        bits = int(sum(2 * int(v).bit_length() - k - 1 for v in w)) if r.size < 64 else int(
            (2 * np.floor(np.log2(w.astype(np.float64))).astype(np.int64) + 1 - k).sum())
        if best is None or bits < best[0]:
            best = (bits, k)
    k = best[1]
    buf = np.zeros((best[0] + 7) // 8 + 16, np.uint8)
    used = fmt._kernels().golomb_pack(r, k, buf)
    return out + fmt._uleb(dmin) + bytes([k]) + buf[:used].tobytes()


def _pair_recurrence_reference(y: np.ndarray) -> float:
    """The largest share over the channels of (value, next value) rows seen before: 1 - distinct
    rows / rows (numpy's unique of the rows themselves, the plainest count)."""
    rows = [np.unique(np.stack([y[:-1, c], y[1:, c]], 1), axis=0).shape[0] for c in range(y.shape[1])]
    return max((1.0 - r / (y.shape[0] - 1) for r in rows), default=0.0) if y.shape[0] >= 2 else 0.0


@st.composite
def tables(draw) -> np.ndarray:
    """Increasing distinct values: 1 to 200 of them (either side of the 64 where ``_table_bytes``
    changes its way of counting), gaps from one scale (1 to 2**38) with a few outliers."""
    size = draw(st.integers(1, 200))
    scale = draw(st.integers(0, 38))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    gaps = rng.integers(1, (1 << scale) + 1, size - 1) if size > 1 else np.zeros(0, np.int64)
    if size > 2 and draw(st.booleans()):
        gaps[rng.integers(0, size - 1)] = int(rng.integers(1, 1 << 39))
    return np.concatenate([[int(rng.integers(0, 1000))], gaps]).cumsum().astype(np.int64)


@settings(max_examples=200, deadline=None)
@given(tables())
def test_table_bytes_same_as_every_order(table):
    assert fmt._table_bytes(table) == _table_bytes_reference(table)


def test_table_bytes_fixed_cases():
    for table in (None, np.array([5], np.int64), np.array([0, 1], np.int64), np.arange(0, 640, 10, dtype=np.int64),
                  np.arange(0, 63 * 7, 7, dtype=np.int64), np.array([0, 1 << 40], np.int64),
                  np.cumsum(np.full(100, (1 << 39) + 3, np.int64))):
        assert fmt._table_bytes(table) == _table_bytes_reference(table)


@settings(max_examples=200, deadline=None)
@given(st.integers(2, 400), st.integers(1, 3), st.integers(0, 2**32 - 1), st.sampled_from([2, 9, 300, 1 << 20, 1 << 40]))
def test_pair_recurrence_same_as_unique(n, C, seed, span):
    y = np.random.default_rng(seed).integers(0, span, (n, C)).astype(np.int64)
    if seed % 3 == 0:  # (a walk: pairs recur)
        y = np.cumsum(np.sign(y - span // 2), axis=0)
    assert encoder.pair_recurrence(y) == _pair_recurrence_reference(y)


@settings(max_examples=100, deadline=None)
@given(st.integers(1, 3000), st.integers(1, 2), st.integers(0, 2**32 - 1), st.integers(3, 40))
def test_symbols_table_same_as_unique(n, C, seed, bits):
    """A range at least 4 times the values (the sort's path): the table is numpy's unique."""
    rng = np.random.default_rng(seed)
    pool = rng.integers(-(1 << bits), 1 << bits, max(1, n // 8))
    x = rng.choice(pool, (n, C)).astype(np.int64)
    got = measure._symbols(x)
    lo, hi = int(x.min()), int(x.max())
    if hi - lo >= 1 << fmt.MAX_RANGE_BITS:  # (bits 40: a range of 2**40 or more is stored raw)
        assert got is None
        return
    y = x - lo
    step = int(np.gcd.reduce(y.ravel())) if hi > lo else 1
    if step > 1:
        y //= step
    rng_ = (hi - lo) // step
    assert got[0] == lo and got[1] == step and np.array_equal(got[2], y)
    if rng_ >= 4 * y.size:
        u = np.unique(y)
        if got[3] is not None:
            assert np.array_equal(got[3], u)
        else:
            assert not (2 * u.size <= rng_ + 1 and 4 * u.size <= y.size and u.size <= fmt.MAX_TABLE
                        and np.median(np.diff(u)) >= 2)
