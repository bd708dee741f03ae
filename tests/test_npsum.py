"""numpy's floats from compiled passes (ubpe._kernels.npsum) and the glue that uses them: the planner's
order-0 sums, ``log2_of``, the delta stage's rows, ``check_int``'s plain-int path."""

from __future__ import annotations

import numbers

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ubpe._kernels import npsum
from ubpe._validate import check_int
from ubpe.frontend.delta import _delta_rows
from ubpe.planner import estimates
from ubpe.planner.estimates import LOG2_TABLE, log2_of, log2_table, plogp
from ubpe.signal import delta


def _numpy_plogp(counts: np.ndarray) -> float:
    c = counts.astype(np.float64)
    return float((c * np.log2(c)).sum())


def test_log2_table_is_numpys_log2_wherever_the_value_sits() -> None:
    table = log2_table()
    with np.errstate(divide="ignore"):
        assert np.array_equal(table, np.log2(np.arange(LOG2_TABLE, dtype=np.float64)))
    rng = np.random.default_rng(3)
    for length in (1, 2, 7, 8, 9, 15, 17, 63, 129, 1000):
        ks = rng.integers(1, LOG2_TABLE, length)
        # contiguous, offset and strided arrays: numpy's vectorised log2 gives each float one value
        assert np.array_equal(np.log2(ks.astype(np.float64)), table[ks])
        big = np.zeros(2 * length + 3)
        big[3::2] = ks
        assert np.array_equal(np.log2(big[3::2]), table[ks])
    assert not table.flags.writeable


def test_log2_of_is_np_log2_of_every_count() -> None:
    n = np.arange(1, LOG2_TABLE)
    table = log2_table()
    assert all(np.log2(int(k)) == table[int(k)] for k in n[::97])
    for k in (1, 2, 3, 557, 4096, LOG2_TABLE - 1, LOG2_TABLE, LOG2_TABLE + 1, 108_000, 1 << 40):
        got = log2_of(k)
        assert type(got) is np.float64 and got == np.log2(k)
        assert k * got == k * np.log2(k)


@settings(max_examples=300, deadline=None)
@given(st.integers(1, 3000), st.sampled_from([1, 2, 10, 1000, LOG2_TABLE - 1]), st.integers(0, 2**32 - 1))
def test_plogp_sum_is_numpys_float(n: int, hi: int, seed: int) -> None:
    counts = np.random.default_rng(seed).integers(1, hi + 1, n)
    assert npsum.plogp_sum(counts, log2_table()) == _numpy_plogp(counts)
    assert plogp(counts) == _numpy_plogp(counts)
    assert npsum.plogp_sum(counts.astype(np.float64), log2_table()) == _numpy_plogp(counts)
    c = counts.astype(np.float64)
    lc = np.log2(c)
    ref = (float((c * lc).sum()), float(np.minimum(lc + 2.0, 8.0).sum()))
    assert tuple(npsum.order0_sums(counts, log2_table(), 8.0, 2.0)) == ref


@pytest.mark.parametrize("n", [127, 128, 129, 136, 255, 256, 257, 1000, 4097, 65_537, 300_001])
def test_pairwise_sum_lengths_around_numpys_blocks(n: int) -> None:
    rng = np.random.default_rng(n)
    e = rng.random(n + 5) * 10.0 ** rng.integers(-3, 6, n + 5)
    for lo in (0, 5):
        assert npsum.pairwise_sum(e, lo, n) == float(np.add.reduce(e[lo:lo + n]))
    counts = rng.integers(1, 5000, n)
    assert npsum.plogp_sum(counts, log2_table()) == _numpy_plogp(counts)


def test_counts_beyond_the_table_fall_back_to_numpy() -> None:
    counts = np.array([1, 5, LOG2_TABLE, 3 * LOG2_TABLE + 1], np.int64)
    assert npsum.plogp_sum(counts, log2_table()) == -1.0
    assert plogp(counts) == _numpy_plogp(counts)
    with np.errstate(divide="ignore", invalid="ignore"):
        zero = np.array([0, 3], np.int64)
        assert npsum.plogp_sum(zero, log2_table()) == -1.0
        assert np.isnan(plogp(zero)) and np.isnan(_numpy_plogp(zero))
    assert tuple(npsum.order0_sums(counts, log2_table(), 8.0, 2.0)) == (-1.0, -1.0)


def test_order0_bytes_is_the_former_float() -> None:
    s = estimates.Settings()
    rng = np.random.default_rng(7)
    for n in (2, 100, 5000, 70_000):
        y = rng.laplace(0, 30, n).astype(np.int32)
        counts = estimates.value_counts(y)
        c = counts.astype(np.float64)
        ref = (n * np.log2(n) - float((c * np.log2(c)).sum()) + s.order0_table_bits * counts.shape[0]) / 8.0
        assert estimates.order0_bytes(y, s) == ref


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(["i1", "i2", "i4", "i8", "u1", "u2", "u4", "u8", ">i2", ">u4", "<i8"]),
       st.integers(1, 3), st.integers(0, 40), st.integers(0, 4), st.booleans(), st.integers(0, 2**32 - 1))
def test_delta_rows_is_delta(dt: str, channels: int, frames: int, order: int, fortran: bool, seed: int) -> None:
    info = np.iinfo(np.dtype(dt))
    x = np.random.default_rng(seed).integers(info.min, info.max, (channels, frames), endpoint=True,
                                             dtype=np.dtype(dt).newbyteorder("=")).astype(dt)
    if fortran:
        x = np.asfortranarray(x)
    got = _delta_rows(x, order)
    ref = delta(x, order, axis=-1)
    assert got.dtype == ref.dtype and np.array_equal(got, ref)


def test_check_int_plain_and_other_integers() -> None:
    assert check_int("k", 5, 0, 10) == 5 and type(check_int("k", np.int16(5), 0, 10)) is int
    for bad in (True, np.bool_(True), 1.0, "1", None):
        with pytest.raises(TypeError):
            check_int("k", bad, 0, 10)
    with pytest.raises(ValueError):
        check_int("k", 11, 0, 10)
    with pytest.raises(ValueError):
        check_int("k", -1, 0)

    class Seven(int):  # an int subclass: the ABC path
        pass

    assert check_int("k", Seven(7), 0, 10) == 7 and type(check_int("k", Seven(7), 0, 10)) is int
    assert isinstance(Seven(7), numbers.Integral)


def test_level1_bytes_the_same_with_numpys_sums(monkeypatch: pytest.MonkeyPatch) -> None:
    import ubpe

    rng = np.random.default_rng(11)
    t = np.arange(6000)
    inputs = [(1000 * np.sin(t / 17.0) + rng.normal(0, 20, t.shape)).astype(np.int16),
              np.cumsum(rng.integers(-3, 4, 20_000)).astype(np.int32),
              rng.integers(-5, 6, 3000).astype(np.int16)]
    fast = [ubpe.compress(x, level=1, threads=1) for x in inputs]
    # the compiled sums refused: every one from numpy, as before
    monkeypatch.setattr(npsum, "plogp_sum", lambda counts, log2: -1.0)
    monkeypatch.setattr(npsum, "order0_sums", lambda counts, log2, cap, extra: (-1.0, -1.0))
    monkeypatch.setattr(estimates, "LOG2_TABLE", 0)
    assert [ubpe.compress(x, level=1, threads=1) for x in inputs] == fast
