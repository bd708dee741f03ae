"""Kernel intrinsics: ubpe._kernels.alloc (equal to np.empty / np.zeros / np.full), cmcore._hash, the one
bit-length helper (ubpe._kernels.intrinsics) and the scalar helpers compiled as intrinsics."""

import numba
import numpy as np
import pytest

from ubpe._kernels.alloc import empty, full, zeros
from ubpe._kernels.intrinsics import mulhi


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


def _edges(top_bits):
    """0, 1 and the integers around every power of two below 2**top_bits."""
    powers = [1 << b for b in range(top_bits)]
    return sorted({v for p in powers for v in (p - 1, p, p + 1) if 0 <= v < (1 << top_bits)} | {0})


@pytest.mark.parametrize("dtype", [np.uint8, np.int16, np.int32, np.uint32, np.int64, np.uint64])
def test_bit_length_is_python_bit_length(dtype):
    """The one bit-length helper of the kernels: int.bit_length of every integer type's
    non-negative values (all of a uint64's: 64 from 2**63 on)."""
    from ubpe._kernels.intrinsics import bit_length

    @numba.njit
    def each(v):
        out = np.empty(v.size, np.int64)
        for i in range(v.size):
            out[i] = bit_length(v[i])
        return out

    values = np.array(_edges(8 * np.dtype(dtype).itemsize - (np.dtype(dtype).kind == "i")), dtype)
    assert each(values).tolist() == [int(v).bit_length() for v in values]


def test_rice_param_is_its_definition():
    """entropy._rice_param (an intrinsic from bit lengths): the smallest r with n << r >= a,
    capped at MAX_RICE_PARAM, around every power of two."""
    from ubpe._kernels.entropy import MAX_RICE_PARAM, _rice_param

    @numba.njit
    def each(a, n):
        out = np.empty(a.size, np.int64)
        for i in range(a.size):
            out[i] = _rice_param(a[i], n[i])
        return out

    def reference(a, n):
        r = 0
        while (n << r) < a and r < MAX_RICE_PARAM:
            r += 1
        return r

    a = np.array(_edges(62), np.int64)
    for n in (1, 2, 3, 15, 16, 1000, 1 << 40):
        got = each(a, np.full(a.size, n, np.int64))
        assert got.tolist() == [reference(int(v), n) for v in a]


def test_clamp_bits_is_its_definition():
    """cmcore._clamp_bits (from the bit length): the smallest b in [lo, hi] with 2**b >= need."""
    from ubpe._kernels.cmcore import _clamp_bits

    @numba.njit
    def each(need, lo, hi):
        out = np.empty(need.size, np.int64)
        for i in range(need.size):
            out[i] = _clamp_bits(need[i], lo, hi)
        return out

    def reference(need, lo, hi):
        b = lo
        while b < hi and (1 << b) < need:
            b += 1
        return b

    need = np.array([-5] + _edges(40), np.int64)
    for lo, hi in ((10, 16), (0, 30), (12, 12)):
        assert each(need, lo, hi).tolist() == [reference(int(v), lo, hi) for v in need]


def _signed(v, bits=64):
    v %= 1 << bits
    return v - (1 << bits) if v >> (bits - 1) else v


def test_wrap_intrinsics_are_modular_arithmetic():
    """predict.wrap, wrap_add and wrap_sub: the sum or difference modulo 2**64, then reduced
    modulo 2**(64 - sh) to its signed representative, for int64 and uint64 operands."""
    from ubpe._kernels.predict import wrap, wrap_add, wrap_sub

    @numba.njit
    def each(a, b, sh):
        out = np.empty((3, a.size), np.int64)
        for i in range(a.size):
            out[0, i] = wrap(a[i], sh)
            out[1, i] = wrap_add(a[i], b[i], sh)
            out[2, i] = wrap_sub(a[i], b[i], sh)
        return out

    rng = np.random.default_rng(3)
    a = np.concatenate([rng.integers(-2**63, 2**63, 500, dtype=np.int64), [-2**63, 2**63 - 1, -1, 0, 1]])
    b = np.concatenate([rng.integers(-2**63, 2**63, 500, dtype=np.int64), [-1, 1, -2**63, 2**63 - 1, 0]])
    for sh in (0, 8, 48, 56):
        for x, y in ((a, b), (a.view(np.uint64), b), (a, b.view(np.uint64))):
            got = each(x, y, sh)
            for row, op in zip(got, (lambda u, v: u, lambda u, v: u + v, lambda u, v: u - v)):
                assert row.tolist() == [_signed(op(int(u), int(v)), 64 - sh) for u, v in zip(x, y)]


def test_trainer_slot_and_rank_are_their_definitions():
    """train._slot (the hash table's home slot) and train._before (the heap's rank), compiled as
    intrinsics, give their definitions' values, the products wrapping modulo 2**64."""
    from ubpe._kernels import train

    @numba.njit
    def each(k, mask, s1, k1, s2, k2):
        slots = np.empty(k.size, np.int64)
        before = np.empty(k.size, np.bool_)
        for i in range(k.size):
            slots[i] = train._slot(k[i], mask)
            before[i] = train._before(s1[i], k1[i], s2[i], k2[i])
        return slots, before

    def slot(key, mask):
        x = key ^ (key >> 31)
        x = _signed(x * train._MIX)
        return (x ^ (x >> 29)) & mask

    rng = np.random.default_rng(4)
    k = rng.integers(0, 2**62, 1000, dtype=np.int64)
    s = rng.integers(0, 4, (4, 1000), dtype=np.int64)
    for mask in (1, 2**20 - 1, 2**40 - 1):
        slots, before = each(k, mask, *s)
        assert slots.tolist() == [slot(int(v), mask) for v in k]
        assert before.tolist() == [bool(a > c or (a == c and b < d)) for a, b, c, d in s.T]


def test_integer_selects_are_the_conditional_expressions():
    """imin, imax, clamp and select give the conditional expressions they stand for, on int64
    (and on uint64 alone, compared unsigned); signed mixed with uint64 is refused."""
    from ubpe._kernels.intrinsics import clamp, imax, imin, select

    @numba.njit
    def each(a, b, c):
        out = np.empty((5, a.size), a.dtype)
        for i in range(a.size):
            out[0, i] = imin(a[i], b[i])
            out[1, i] = imax(a[i], b[i])
            out[2, i] = clamp(a[i], b[i], c[i])
            out[3, i] = select(a[i] < c[i], b[i], c[i])
            out[4, i] = select(a[i] & 1, a[i], b[i])
        return out

    rng = np.random.default_rng(6)
    for dtype, top in ((np.int64, 2**62), (np.uint64, 2**64 - 1)):
        lo = 0 if dtype == np.uint64 else -top
        a, b, c = (np.concatenate([rng.integers(lo, top, 300, dtype=dtype, endpoint=True),
                                   rng.integers(0, 4, 30).astype(dtype)]) for _ in range(3))
        got = each(a, b, c)
        x, y, z = ([int(v) for v in arr] for arr in (a, b, c))
        assert got[0].tolist() == [u if u < v else v for u, v in zip(x, y)]
        assert got[1].tolist() == [u if u > v else v for u, v in zip(x, y)]
        assert got[2].tolist() == [v if u < v else (w if u > w else u) for u, v, w in zip(x, y, z)]
        assert got[3].tolist() == [v if u < w else w for u, v, w in zip(x, y, z)]
        assert got[4].tolist() == [u if u & 1 else v for u, v in zip(x, y)]

    @numba.njit
    def mixed(a, b):
        return imin(np.uint64(a), b)

    if not numba.config.DISABLE_JIT:  # (plain Python has no types to refuse)
        with pytest.raises(numba.core.errors.TypingError):
            mixed(1, 2)


def test_mag_bucket_and_context_are_their_definitions():
    """level1._bucket and _context (compiled) give the "mag" coder's classes of the reference
    (tests/reference_costing.py): z itself below 2, else 2e - 2 + the bit below the top one;
    the context the bucket of m >> sh, capped at N_CONTEXTS - 1."""
    from reference_costing import _bucket as bucket_reference

    from ubpe._kernels import level1, residual

    @numba.njit
    def each(z, sh):
        out = np.empty((2, z.size), np.int64)
        for i in range(z.size):
            out[0, i] = level1._bucket(z[i])
            out[1, i] = level1._context(z[i], sh)
        return out

    z = np.array(_edges(62), np.int64)
    for sh in (0, 1, 3, 6):
        got = each(z, sh)
        assert got[0].tolist() == [bucket_reference(int(v)) for v in z]
        assert got[1].tolist() == [min(bucket_reference(int(v) >> sh), residual.N_CONTEXTS - 1) for v in z]


@numba.njit
def _mulhis(a, b):
    out = np.empty(a.shape[0], np.uint64)
    for i in range(a.shape[0]):
        out[i] = mulhi(a[i], b[i])
    return out


def test_mulhi_is_the_high_half_of_the_128_bit_product():
    """Compiled and as plain Python: ``(a * b) >> 64`` of uint64 operands, edges included."""
    from ubpe._kernels import intrinsics  # (its plain-Python form, used under NUMBA_DISABLE_JIT)

    rng = np.random.default_rng(5)
    edge = np.array([0, 1, 2**32 - 1, 2**32, 2**63, 2**64 - 1], np.uint64)
    a = np.concatenate([np.repeat(edge, edge.size), rng.integers(0, 2**64 - 1, 500, np.uint64, endpoint=True)])
    b = np.concatenate([np.tile(edge, edge.size), rng.integers(0, 2**64 - 1, 500, np.uint64, endpoint=True)])
    want = [(int(x) * int(y)) >> 64 for x, y in zip(a, b)]
    assert _mulhis(a, b).tolist() == want
    assert [int(intrinsics._mulhi_python(x, y)) for x, y in zip(a, b)] == want
