"""Level 3's encode floor, sixth stop (issue 29, benchmarks/results/level3-floor-6.md): the
exact-value contexts' state kept between codings (``level3.xpool``) and the next value's
successor lists fetched ahead (``mixctx._xprefetch``, ``intrinsics.prefetch``) code the same
bytes and decode the same values as a new state. The golden payloads of test_level3_xctx_bytes.py
(main's bytes) go through both."""

from __future__ import annotations

import threading

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from test_level3 import SETTINGS
from test_level3_v6 import hourly, params

from ubpe import level3
from ubpe._kernels import intrinsics, mixctx, njit
from ubpe.level3 import format as fmt
from ubpe.level3 import xpool

SETS = (mixctx.XC_FULL, mixctx.XC_LISTS)


def _code(y: np.ndarray, prm: list[int], X) -> bytes:
    """The payload of y ((frames, C) symbols from 0) coded with the state X given."""
    k = fmt._kernels()
    n, C = y.shape
    top = int(y.max())
    buf = np.zeros(64 + n * C * 8, np.uint8)
    size = k.run(y, np.zeros(C, np.int64), np.full(C, top, np.int64), fmt._shift_of(top), np.array(prm, np.int64),
                 buf, False, np.zeros((0, 0), np.int64), 0, fmt.NO_TABLE, fmt._prior_tables(), *fmt.NO_LPC, X, None)
    assert size > 0
    return buf[:size].tobytes()


def _decode(data: bytes, y: np.ndarray, prm: list[int], X) -> np.ndarray:
    k = fmt._kernels()
    n, C = y.shape
    top = int(y.max())
    out = np.zeros((n, C), np.int64)
    status = k.run(out, np.zeros(C, np.int64), np.full(C, top, np.int64), fmt._shift_of(top), np.array(prm, np.int64),
                   np.frombuffer(data, np.uint8).copy(), True, np.zeros((0, 0), np.int64), 0, fmt.NO_TABLE,
                   fmt._prior_tables(), *fmt.NO_LPC, X, None)
    assert status == k.OK
    return out


def _noisy(n: int, C: int, xctx: int, seed: int):
    """``new_state`` with the successor lists' symbols and counts (LV, LC) filled with noise: what a
    kept state holds from an earlier coding."""
    X = mixctx.new_state(n, C, xctx)
    rng = np.random.default_rng(seed)
    X.LV[:] = rng.integers(-(1 << 40), 1 << 40, X.LV.size)
    X.LC[:] = rng.integers(0, 61, X.LC.size)
    return X


@st.composite
def symbols(draw):
    """(frames, channels) symbols from 0: 2 to 300 frames, 1 to 3 channels, a coarse grid with
    recurring values (what the contexts learn), a walk, or noise."""
    n = draw(st.integers(2, 300))
    C = draw(st.integers(1, 3))
    kind = draw(st.sampled_from(["grid", "walk", "noise"]))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    if kind == "grid":
        y = rng.integers(0, 6, (n, C)) * 5
    elif kind == "walk":
        y = np.cumsum(rng.integers(-3, 4, (n, C)), axis=0)
    else:
        y = rng.integers(0, draw(st.sampled_from([2, 50, 5000])), (n, C))
    y = y - y.min()
    return np.ascontiguousarray(y, dtype=np.int64)


@SETTINGS
@given(symbols(), st.sampled_from(SETS), st.sampled_from([{}, {"vmod": 1}]), st.integers(0, 2**32 - 1))
def test_kept_lists_code_as_new(y, xctx, change, seed):
    """A state whose lists hold another coding's symbols and counts (noise) codes y to the bytes of
    a new state and decodes them to y; so does the kept state ``level3`` codes with (``xpool``),
    after a coding of other values has used it."""
    n, C = y.shape
    prm = params(C, xctx=xctx, **change)
    data = _code(y, prm, mixctx.new_state(n, C, xctx))
    assert _code(y, prm, _noisy(n, C, xctx, seed)) == data
    assert np.array_equal(_decode(data, y, prm, _noisy(n, C, xctx, seed + 1)), y)
    other = np.random.default_rng(seed).integers(0, 40, (n, C)).astype(np.int64)
    other[0] = 0
    X = xpool.acquire(n, C, xctx)
    _code(other, prm, X)
    xpool.release(X)
    X = xpool.acquire(n, C, xctx)
    try:
        assert _code(y, prm, X) == data
    finally:
        xpool.release(X)


@pytest.mark.parametrize("xctx", SETS)
@pytest.mark.parametrize("n,C", [(1, 1), (700, 1), (3000, 2)])
def test_reset_state_is_new_state(n, C, xctx):
    """A kept state, acquired again for the same table sizes, is the same arrays, reset to
    ``new_state``'s in every array but LV and LC; every list's key is -1 (no list reads)."""
    y = np.ascontiguousarray(hourly(max(n, 300))[:n, :C].astype(np.int64))
    y -= y.min()
    xpool._pool.clear()  # (no state of another test's to hand out first)
    first = xpool.acquire(n, C, xctx)
    _code(y, params(C, xctx=xctx), first)
    assert (first.LT >= 0).any() or n * C < 2  # (the coding took lists: the reset has work)
    xpool.release(first)
    again = xpool.acquire(n, C, xctx)
    try:
        assert again is first
        fresh = mixctx.new_state(n, C, xctx)
        for name in mixctx.XState._fields:
            if name not in ("LV", "LC"):
                a, b = getattr(again, name), getattr(fresh, name)
                assert a.dtype == b.dtype and np.array_equal(a, b), name
        assert again.LV.shape == fresh.LV.shape and again.LC.shape == fresh.LC.shape
        assert (again.LT == -1).all()
    finally:
        xpool.release(again)


def test_pool_is_bounded_and_hands_a_state_to_one_coding():
    """Two codings at once get two states; at most POOL_MAX are kept."""
    held = [xpool.acquire(500, 1, mixctx.XC_LISTS) for _ in range(xpool.POOL_MAX + 2)]
    assert len({id(X) for X in held}) == len(held)
    for X in held:
        xpool.release(X)
    assert len(xpool._pool) <= xpool.POOL_MAX
    got, errors = [], []

    def take():
        try:
            got.append(xpool.acquire(500, 1, mixctx.XC_LISTS))
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=take) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and len({id(X) for X in got}) == 4
    for X in got:
        xpool.release(X)


def test_pool_keeps_no_large_state():
    """The full set's largest state (26 MiB, 2**15 values or more) is not kept; a light one is."""
    xpool._pool.clear()
    big = xpool.acquire(1 << 15, 1, mixctx.XC_FULL)
    assert sum(a.nbytes for a in big) > xpool.POOL_BYTES
    xpool.release(big)
    assert not xpool._pool
    light = xpool.acquire(1 << 15, 1, mixctx.XC_LISTS)
    xpool.release(light)
    assert len(xpool._pool) == 1 and xpool._pool[0] is light


def test_acquire_rejects_an_unknown_set():
    with pytest.raises(ValueError):
        xpool.acquire(10, 1, 3)


@pytest.mark.parametrize("xctx", SETS)
def test_level3_round_trip_through_the_pool(xctx):
    """``level3.encode`` twice in a row (the second with a kept state) gives the same bytes, which
    decode exactly (and ``decode`` twice: the same values)."""
    x = hourly(1500)
    prm = params(2, xctx=xctx)
    a = level3.encode(x, params=prm, front=None)
    b = level3.encode(x, params=prm, front=None)
    assert a == b
    assert np.array_equal(level3.decode(a), x) and np.array_equal(level3.decode(b), x)


@njit(cache=False)
def _sum_prefetched(a, idx):
    s = np.int64(0)
    for i in idx:
        intrinsics.prefetch(a, i)
        s += a[i]
    return s


def test_prefetch_is_only_a_hint():
    """The prefetch intrinsic changes no value (compiled, and the pure-Python stand-in)."""
    a = np.arange(1 << 16, dtype=np.int64) * 3 - 7
    idx = np.random.default_rng(6).integers(0, a.size, 500)
    assert _sum_prefetched(a, idx) == int(a[idx].sum())
    assert intrinsics._prefetch_python(a, 5) is None
