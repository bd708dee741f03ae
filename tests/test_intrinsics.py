"""Kernel intrinsics: ubpe._kernels.alloc (equal to np.empty / np.zeros / np.full) and cmcore._hash."""

import numba
import numpy as np
import pytest

from ubpe._kernels.alloc import empty, full, zeros


@numba.njit
def _make(n, m, fill):
    return (zeros(n, np.uint16), zeros((n, m), np.float64), full(n, 1 << 31, np.uint32),
            full((n, m), -1, np.int64), full(n, fill, np.int32), full(n, 2.5, np.float64),
            empty(n, np.int8), empty((m, n), np.uint64))


@pytest.mark.parametrize("n, m", [(0, 0), (1, 3), (5, 2), (1000, 7)])
def test_same_arrays_as_numpy(n, m):
    got = _make(n, m, -7)
    want = (np.zeros(n, np.uint16), np.zeros((n, m)), np.full(n, 1 << 31, np.uint32),
            np.full((n, m), -1, np.int64), np.full(n, -7, np.int32), np.full(n, 2.5),
            np.empty(n, np.int8), np.empty((m, n), np.uint64))
    for g, w in zip(got, want):
        assert g.dtype == w.dtype and g.shape == w.shape and g.flags.c_contiguous
        assert g.flags.writeable
    for g, w in zip(got[:6], want[:6]):  # (empty's contents are undefined)
        assert np.array_equal(g, w)
    assert all(not np.shares_memory(a, b) for i, a in enumerate(got) for b in got[i + 1:])


def test_fill_is_not_a_literal():
    """One compilation serves every fill constant (the kernels fill with several)."""

    @numba.njit
    def f(n):
        return full(n, 3, np.int64), full(n, 4, np.int64)

    a, b = f(4)
    assert (a == 3).all() and (b == 4).all()
    assert len(f.signatures) == 1


def test_negative_or_too_big_size_raises_as_numpy():
    with pytest.raises(ValueError, match="negative"):
        _make(-1, 2, 0)
    with pytest.raises(ValueError, match="negative"):
        _make(3, -2, 0)  # a 2-D shape's second dimension

    @numba.njit
    def big(n):
        return zeros((n, n), np.int64)

    with pytest.raises(ValueError, match="too big"):
        big(2**31)  # 2**62 items: the byte size overflows
    with pytest.raises(ValueError):
        _make(np.uint64(2**63), 1, 0)  # beyond intp: negative once converted


def test_rejects_other_dtypes():
    @numba.njit
    def f(n):
        return zeros(n, np.bool_)

    with pytest.raises(numba.core.errors.TypingError):
        f(3)


def test_hash_intrinsic_equals_the_python_definition():
    """cmcore._hash compiled (an intrinsic) gives the normative Python function's values."""
    import ubpe._kernels.cmcore as cm

    assert cm._hash is not cm._hash_python  # compiled runs use the intrinsic

    @numba.njit
    def hashes(h, x):
        out = np.empty(h.size, np.int64)
        for i in range(h.size):
            out[i] = cm._hash(h[i], x[i])
        return out

    rng = np.random.default_rng(5)
    h = rng.integers(0, 2**32, 2000, dtype=np.int64)
    x = rng.integers(0, 2**32, 2000, dtype=np.int64)
    h[:4] = [0, 2**32 - 1, 0, 2**32 - 1]
    x[:4] = [0, 0, 2**32 - 1, 2**32 - 1]
    want = [cm._hash_python(int(a), int(b)) for a, b in zip(h, x)]
    assert hashes(h, x).tolist() == want
    assert hashes(h.astype(np.uint32), x.astype(np.uint32)).tolist() == want  # any integer type
