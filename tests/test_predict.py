"""The prediction transforms of the front end (ubpe.frontend.lpc, adaptive, grid, rank): block LPC,
sign-sign LMS cascades, value grids and ranks, exact for every integer dtype, against the plain-Python
reference (tests/reference_predict.py)."""

from __future__ import annotations

import copy

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import reference_predict as ref
from ubpe import CorruptDataError
from ubpe.frontend import adaptive, grid, lpc, rank

INT_DTYPES = ["|i1", "|u1", "<i2", "<u2", "<i4", "<u4", "<i8", "<u8", ">i2", ">u4", ">i8", ">u8"]


def signed_ints(x: np.ndarray) -> list[int]:
    """Each sample as the kernels see it: a signed one as itself, an unsigned one offset by
    ``-2**(bits-1)`` (the ``unsigned`` param 1)."""
    bits = 8 * x.dtype.itemsize
    if x.dtype.kind == "u":
        return [int(v) - (1 << (bits - 1)) for v in x]
    return [ref.to_signed(int(v), bits) for v in x]


def extremes(dtype) -> list[int]:
    info = np.iinfo(dtype)
    return sorted({int(info.min), int(info.min) + 1, -1 if info.min < 0 else 2, 0, 1,
                   int(info.max) - 1, int(info.max)})


@st.composite
def signals(draw, max_size=120):
    """Integer signals of every dtype: random, smooth, constant, alternating or extreme."""
    dtype = np.dtype(draw(st.sampled_from(INT_DTYPES)))
    n = draw(st.integers(0, max_size))
    kind = draw(st.sampled_from(["random", "smooth", "constant", "alternating", "extremes"]))
    if kind == "random":
        return draw(hnp.arrays(dtype, n))
    if kind == "extremes":
        return np.array(draw(st.lists(st.sampled_from(extremes(dtype)), min_size=n, max_size=n)), dtype=dtype)
    a = draw(st.sampled_from(extremes(dtype)))
    if kind == "constant":
        return np.full(n, a, dtype=dtype)
    if kind == "alternating":
        b = draw(st.sampled_from(extremes(dtype)))
        return np.array([a, b] * (n // 2) + [a] * (n % 2), dtype=dtype)
    seed = draw(st.integers(0, 2**32 - 1))
    walk = np.cumsum(np.cumsum(np.random.default_rng(seed).integers(-3, 4, n))).tolist()
    bits = 8 * dtype.itemsize
    wrap = (lambda v: v % (1 << bits)) if dtype.kind == "u" else (lambda v: ref.to_signed(v, bits))
    return np.array([wrap(a + w) for w in walk], dtype=dtype)


def assert_same(y: np.ndarray, x: np.ndarray) -> None:
    assert y.dtype == x.dtype.newbyteorder("=")
    assert y.tobytes() == x.astype(x.dtype.newbyteorder("=")).tobytes()


# ============================================================================ LPC


@given(signals(), st.sampled_from([1, 2, 3, 7, 17, 4096]), st.integers(0, 32),
       st.sampled_from(["tukey", "welch", "hann", "none"]))
def test_lpc_round_trip_matches_reference(x, block, max_order, window):
    r, params = lpc.lpc_forward(x, block=block, max_order=max_order, window=window)
    bits = 8 * x.dtype.itemsize
    assert r.dtype == np.dtype(f"i{bits // 8}") and r.shape == x.shape
    blk, orders, shifts, coefs = lpc.check_lpc_params(params, len(x), r.dtype)
    assert (orders <= max_order).all()
    expected = ref.lpc_residual(signed_ints(x), bits, blk, orders.tolist(), shifts.tolist(), coefs.tolist())
    assert r.tolist() == expected
    assert_same(lpc.lpc_inverse(r, params), x)


@given(st.sampled_from(INT_DTYPES), st.integers(1, 90), st.integers(1, 40), st.data())
def test_lpc_filter_with_any_valid_params(dtype, n, block, data):
    """Arbitrary coefficients (not only fitted ones), orders up to 32, extreme samples."""
    dtype = np.dtype(dtype)
    x = np.array(data.draw(st.lists(st.sampled_from(extremes(dtype)) | st.integers(-5, 5).map(abs),
                                    min_size=n, max_size=n)), dtype=dtype)
    nb = -(-n // block)
    orders = data.draw(st.lists(st.integers(0, 32), min_size=nb, max_size=nb))
    precs = [data.draw(st.integers(2, 16)) if o else 0 for o in orders]
    shifts = [data.draw(st.integers(0, 31)) if o else 0 for o in orders]
    coefs = [data.draw(st.integers(-(1 << (p - 1)), (1 << (p - 1)) - 1))
             for o, p in zip(orders, precs) for _ in range(o)]
    widths = np.repeat(np.array(precs, np.int64), orders)
    unsigned = 1 if dtype.kind == "u" else 0
    params = {"block": block, "unsigned": unsigned, "orders": bytes(orders), "shifts": bytes(shifts),
              "precisions": bytes(precs), "coefs": lpc._pack_coefs(np.array(coefs, np.int64), widths)}
    bits = 8 * dtype.itemsize
    _, _, _, unpacked = lpc.check_lpc_params(params, n, dtype)
    assert unpacked.tolist() == coefs
    res = ref.lpc_residual(signed_ints(x), bits, block, orders, shifts, coefs)
    r = np.array(res, dtype=f"i{bits // 8}")
    assert ref.lpc_residual(res, bits, block, orders, shifts, coefs, inverse=True) == signed_ints(x)
    assert_same(lpc.lpc_inverse(r, params), x)


@given(st.sampled_from([8, 16, 32, 64]), st.integers(1, 80), st.integers(1, 40), st.integers(0, 44), st.data())
def test_lpc_filter_inverse_with_any_coefficients_matches_the_reference(bits, n, block, width, data):
    """The reconstruction kernel itself (``ubpe._kernels.predict.lpc_filter``, inverse) against
    the reference for residuals of every width and coefficients of up to ``width`` + 1 bits:
    within 32 bits it sums products of 32-bit operands, beyond (wider samples or coefficients)
    in uint64; both wrap as the reference's 64-bit sum does."""
    from ubpe._kernels import predict

    lim = 1 << (bits - 1)
    res = data.draw(st.lists(st.integers(-lim, lim - 1), min_size=n, max_size=n))
    nb = -(-n // block)
    orders = data.draw(st.lists(st.integers(0, 32), min_size=nb, max_size=nb))
    shifts = data.draw(st.lists(st.integers(0, 40), min_size=nb, max_size=nb))
    coefs = data.draw(st.lists(st.integers(-(1 << width), 1 << width), min_size=sum(orders), max_size=sum(orders)))
    want = ref.lpc_residual(res, bits, block, orders, shifts, coefs, inverse=True)
    r = np.array(res, np.int64)
    predict.lpc_filter(r, block, np.array(orders, np.int64), np.array(shifts, np.int64), np.array(coefs, np.int64),
                       64 - bits, True, r)
    assert r.tolist() == want


def test_lpc_predicts_a_smooth_signal_well():
    t = np.arange(20_000)
    x = np.round(1000 * np.sin(t / 37.0) + 300 * np.sin(t / 5.3)).astype(np.int16)
    r, params = lpc.lpc_forward(x)
    assert np.abs(r[32:].astype(np.int64)).mean() < 0.05 * np.abs(np.diff(x.astype(np.int64))).mean()
    assert min(params["orders"]) >= 2
    assert len(params["coefs"]) <= 5 * 32 * 2  # a few bytes per block
    assert_same(lpc.lpc_inverse(r, params), x)


def test_lpc_blocks_warm_up_from_the_previous_block():
    x = np.round(1000 * np.sin(np.arange(4000) / 9.0)).astype(np.int32)
    r, params = lpc.lpc_forward(x, block=100)
    orders = list(params["orders"])
    assert min(orders[1:]) >= 2
    # only the first block starts cold: every other block's first residuals are small
    assert all(abs(int(r[b * 100])) < 50 for b in range(1, 40))


def _lpc_cost(r: np.ndarray, params: dict, block: int) -> float:
    """The kernel's cost of a choice: per block, geometric-law bits of the zigzag magnitudes
    plus the coefficient bits (the criterion lpc_analyze minimises)."""
    z = 2.0 * np.abs(r.astype(np.float64))
    total = 0.0
    for b, (order, prec) in enumerate(zip(params["orders"], params["precisions"])):
        m = z[b * block:(b + 1) * block].mean()
        n = len(z[b * block:(b + 1) * block])
        total += n * ((1 + m) * np.log2(1 + m) - (m * np.log2(m) if m > 0 else 0.0))
        total += order * prec + (10 if order else 0)
    return total


def test_lpc_window_sets():
    """Several windows per block (FLAC's apodization search): never worse by the kernel's own
    cost than one of them, still exact; one window in a tuple is that window."""
    rng = np.random.default_rng(42)
    t = np.arange(12_000)
    x = np.round(800 * np.sin(t / 23.0) * (1 + t / 6000) + rng.normal(0, 30, t.size)).astype(np.int16)
    r1, p1 = lpc.lpc_forward(x, block=1000)
    rt, pt = lpc.lpc_forward(x, block=1000, window=("tukey",))
    assert p1 == pt and np.array_equal(r1, rt)
    rs, ps = lpc.lpc_forward(x, block=1000, window=("tukey", "tukey25", "welch", "hann", "none"))
    assert_same(lpc.lpc_inverse(rs, ps), x)
    assert _lpc_cost(rs, ps, 1000) <= _lpc_cost(r1, p1, 1000) + 1e-6
    for name in lpc.WINDOWS:
        r, p = lpc.lpc_forward(x[:3000], window=name)
        assert_same(lpc.lpc_inverse(r, p), x[:3000])
    with pytest.raises(ValueError):
        lpc.lpc_forward(x, window=())
    with pytest.raises(TypeError):
        lpc.lpc_forward(x, window=("tukey", 2))
    with pytest.raises(ValueError):
        lpc.lpc_forward(x, window=("tukey", "kaiser"))


def test_lpc_empty_and_length_one():
    for x in (np.zeros(0, np.uint16), np.array([-7], np.int64)):
        r, params = lpc.lpc_forward(x)
        assert len(r) == len(x)
        assert_same(lpc.lpc_inverse(r, params), x)


def test_lpc_arguments():
    with pytest.raises(TypeError):
        lpc.lpc_forward(np.zeros(3, np.float64))
    with pytest.raises(TypeError):
        lpc.lpc_forward(np.zeros(3, bool))
    with pytest.raises(ValueError):
        lpc.lpc_forward(np.zeros((2, 2), np.int16))
    with pytest.raises(ValueError):
        lpc.lpc_forward(np.zeros(3, np.int16), max_order=33)
    with pytest.raises(ValueError):
        lpc.lpc_forward(np.zeros(3, np.int16), block=0)
    with pytest.raises(TypeError):
        lpc.lpc_forward(np.zeros(3, np.int16), block=2.0)
    with pytest.raises(ValueError):
        lpc.lpc_forward(np.zeros(3, np.int16), window="kaiser")
    with pytest.raises(ValueError):
        lpc.lpc_forward(np.zeros(3, np.int16), precisions=(17,))


# ============================================================================ adaptive


@given(signals(max_size=80), st.lists(st.tuples(st.integers(1, 12), st.integers(1, 20), st.integers(0, 1)), max_size=3))
def test_adaptive_round_trip_matches_reference(x, stages):
    r, params = adaptive.adaptive_forward(x, stages=stages)
    bits = 8 * x.dtype.itemsize
    assert params["stages"] == [list(s) for s in stages]
    expected = ref.cascade(signed_ints(x), bits, stages)
    assert r.tolist() == expected
    assert ref.cascade(expected, bits, stages, inverse=True) == signed_ints(x)
    assert_same(adaptive.adaptive_inverse(r, params), x)


def test_adaptive_default_cascade_matches_reference_past_the_warm_up():
    """The vectorized steady state (i >= order) of the order-256 stage, extremes included."""
    rng = np.random.default_rng(41)
    for dtype in (np.int16, np.uint64):
        info = np.iinfo(dtype)
        x = np.cumsum(rng.integers(-40, 41, 700)).astype(dtype)
        x[500:520] = info.max
        x[520:540] = info.min
        bits = 8 * x.dtype.itemsize
        r, params = adaptive.adaptive_forward(x)
        assert r.tolist() == ref.cascade(signed_ints(x), bits, list(adaptive.DEFAULT_STAGES))
        assert_same(adaptive.adaptive_inverse(r, params), x)


@given(signals(max_size=300))
def test_adaptive_default_stages_round_trip(x):
    r, params = adaptive.adaptive_forward(x)
    assert_same(adaptive.adaptive_inverse(r, params), x)


def test_adaptive_over_lpc_residual_round_trip():
    rng = np.random.default_rng(5)
    x = np.cumsum(rng.integers(-50, 51, 30_000)).astype(np.int32)
    r1, p1 = lpc.lpc_forward(x)
    r2, p2 = adaptive.adaptive_forward(r1)
    assert_same(lpc.lpc_inverse(adaptive.adaptive_inverse(r2, p2), p1), x)


def test_adaptive_learns_a_resonance():
    t = np.arange(30_000)
    x = np.round(2000 * np.sin(t / 11.0)).astype(np.int16)
    for rule in (0, 1):
        r, _ = adaptive.adaptive_forward(x, stages=[(8, 10, rule)])
        tail = np.abs(r[-5000:].astype(np.int64)).mean()
        assert tail < 0.1 * np.abs(x[-5000:].astype(np.int64)).mean()


def test_adaptive_arguments():
    with pytest.raises(TypeError):
        adaptive.adaptive_forward(np.zeros(3, np.int16), stages=[(1,)])
    with pytest.raises(ValueError):
        adaptive.adaptive_forward(np.zeros(3, np.int16), stages=[(0, 3)])
    with pytest.raises(ValueError):
        adaptive.adaptive_forward(np.zeros(3, np.int16), stages=[(4, 29)])
    with pytest.raises(ValueError):
        adaptive.adaptive_forward(np.zeros(3, np.int16), stages=[(1, 1)] * 9)
    with pytest.raises(ValueError):
        adaptive.adaptive_forward(np.zeros(3, np.int16), stages=[(4, 3, 2)])
    assert adaptive.adaptive_forward(np.zeros(3, np.int16), stages=[(4, 3)])[1]["stages"] == [[4, 3, 1]]


# ============================================================================ grid


@given(signals(max_size=60), st.integers(1, 70), st.data())
def test_grid_round_trip_matches_reference(x, step, data):
    info = np.iinfo(x.dtype)
    # put x on a grid: offset + step * k, within the dtype's range
    lo = data.draw(st.integers(int(info.min), int(info.max)))
    span = (int(info.max) - lo) // step
    k = [data.draw(st.integers(0, min(span, 300))) for _ in range(len(x))]
    x = np.array([lo + step * v for v in k], dtype=x.dtype)
    out, params = grid.grid_forward(x)
    offset, g, kk = ref.grid([int(v) for v in x])
    assert (params["offset"], params["step"]) == (offset, g)
    assert out.tolist() == kk
    if g > 1:
        assert out.dtype.kind == "u" and out.dtype.itemsize <= x.dtype.itemsize
    assert_same(grid.grid_inverse(out, params), x)


@given(signals(max_size=60))
def test_grid_of_any_signal_round_trips(x):
    k, params = grid.grid_forward(x)
    assert_same(grid.grid_inverse(k, params), x)


def test_grid_finds_the_64_step_grid_exactly():
    x = (np.arange(-300, 300) * 64 + 5).astype(np.int16)
    k, params = grid.grid_forward(x)
    assert params["step"] == 64 and params["offset"] == -300 * 64 + 5 and k.dtype == np.uint16
    x64 = np.array([np.iinfo(np.int64).min, np.iinfo(np.int64).max - 2], np.int64)
    k, params = grid.grid_forward(x64)
    assert params["step"] == 2**64 - 3 and k.tolist() == [0, 1]
    assert_same(grid.grid_inverse(k, params), x64)


# ============================================================================ ranks


@given(signals(max_size=80))
def test_rank_round_trip_matches_reference(x):
    k, params = rank.rank_forward(x)
    distinct, expected = ref.ranks([int(v) for v in x])
    assert k.tolist() == expected and params["count"] == len(distinct)
    assert k.dtype.kind == "u" and (len(distinct) <= 256) == (k.dtype == np.uint8)
    assert rank.check_rank_params(params, len(x), k.dtype).tolist() == distinct
    assert_same(rank.rank_inverse(k, params), x)


def test_rank_then_lpc_round_trip_on_an_inexact_grid():
    """Levels ~64.06 apart (64, and 65 now and then): no exact grid, but ranks are levels."""
    t = np.arange(20_000)
    levels = np.round(40 * np.sin(t / 13.0) + 5 * np.sin(t / 3.1))
    x = np.floor(levels * 64.06 + 3).astype(np.int16)
    assert grid.grid_forward(x)[1]["step"] == 1
    k, pk = rank.rank_forward(x)
    r, pl = lpc.lpc_forward(k)
    on_codes, _ = lpc.lpc_forward(x)
    # on levels the residual keeps a handful of values; on raw codes it spreads over many
    assert len(np.unique(r)) * 5 < len(np.unique(on_codes))
    assert np.abs(r.astype(np.int64)).mean() < 0.5 * np.abs(np.diff(levels)).mean()
    assert_same(rank.rank_inverse(lpc.lpc_inverse(r, pl), pk), x)


def test_rank_refuses_bad_varints():
    base = {"count": 2, "bits": 8, "unsigned": 1}
    for values in (b"\x01", b"\x01\x02\x03", b"\x81", b"\x81\x00\x01", b"\xff\x01\x01", b"\x80" * 10 + b"\x01"):
        with pytest.raises(CorruptDataError):
            rank.check_rank_params({**base, "values": values}, 5, np.uint8)
    assert rank.check_rank_params({**base, "values": b"\x01\x02"}, 5, np.uint8).tolist() == [1, 4]
    with pytest.raises(CorruptDataError):
        rank.rank_inverse(np.array([0, 2], np.uint8), {**base, "values": b"\x01\x02"})


# ============================================================================ params from outside


def mutations(params: dict, rng: np.random.Generator):
    """Many mutated copies of ``params``: field values, types, lengths, flipped bytes."""
    junk = [None, -1, 0, 1, 2**40, -(2**63), 2**64 - 1, 1.5, "x", b"", b"\xff" * 40, [], [1], [[1, 2, 3]],
            [[0, 1, 0]], [[2000, 3, 1]], [[3, 99, 1]], [[3, 9, 2]], {}, True]
    keys = list(params)
    for key in keys:
        for v in junk:
            p = copy.deepcopy(params)
            p[key] = v
            yield p
        p = copy.deepcopy(params)
        del p[key]
        yield p
    p = copy.deepcopy(params)
    p["extra"] = 1
    yield p
    for _ in range(300):
        p = copy.deepcopy(params)
        key = keys[rng.integers(len(keys))]
        v = p[key]
        if isinstance(v, bytes) and v:
            b = bytearray(v)
            op = rng.integers(3)
            if op == 0:
                b[rng.integers(len(b))] ^= 1 << int(rng.integers(8))
            elif op == 1:
                del b[rng.integers(len(b)):]
            else:
                b += bytes([int(rng.integers(256))])
            p[key] = bytes(b)
        elif isinstance(v, int):
            p[key] = int(v + rng.integers(-3, 4)) * int(rng.choice([1, 1, 2, 1000]))
        elif isinstance(v, list):
            p[key] = [[int(c + rng.integers(-2, 3)) for c in stage] for stage in v]
        yield p


@pytest.mark.parametrize("kind", ["lpc", "adaptive", "grid", "rank"])
def test_mutated_params_raise_corrupt_data_or_decode(kind):
    rng = np.random.default_rng(2024)
    x = np.round(3000 * np.sin(np.arange(3000) / 7.0)).astype(np.int16) * 4
    fwd, inv = {"lpc": (lambda v: lpc.lpc_forward(v, block=512), lpc.lpc_inverse),
                "adaptive": (lambda v: adaptive.adaptive_forward(v, stages=[(4, 6, 0), (2, 3, 1)]),
                             adaptive.adaptive_inverse),
                "grid": (grid.grid_forward, grid.grid_inverse), "rank": (rank.rank_forward, rank.rank_inverse)}[kind]
    y, params = fwd(x)
    decoded = refused = 0
    for p in mutations(params, rng):
        try:
            out = inv(y, p)
        except CorruptDataError:
            refused += 1
        else:
            decoded += 1
            assert out.shape == x.shape
    assert refused > 20
    assert decoded >= 1


def test_check_params_refuses_lengths_and_ranges():
    x = np.arange(100, dtype=np.int32) ** 2
    _, params = lpc.lpc_forward(x, block=30)
    for bad in ({"orders": bytes([33, 1, 1, 1])}, {"orders": b"\x01\x01\x01"}, {"shifts": bytes([32, 0, 0, 0])},
                {"precisions": bytes([17, 2, 2, 2])}, {"coefs": params["coefs"] + b"\x00"}, {"block": 0}):
        with pytest.raises(CorruptDataError):
            lpc.check_lpc_params({**params, **bad}, 100, np.int32)
    with pytest.raises(CorruptDataError):
        lpc.check_lpc_params(params, 200, np.int32)  # more blocks than the header arrays hold
    # each check names what failed; an earlier check wins when several fail
    orders = params["orders"]
    for bad, message in (({"orders": bytes([33]) + orders[1:], "shifts": bytes([40, 0, 0, 0])}, "order exceeds 32 \\(33\\)"),
                         ({"orders": b"\x00" + orders[1:], "precisions": bytes([17, 2, 2, 2])}, "order 0 has"),
                         ({"precisions": bytes([17, 2, 2, 2]), "shifts": bytes([32, 0, 0, 0])}, "precision is outside"),
                         ({"precisions": bytes([1, 2, 2, 2])}, "precision is outside"),
                         ({"shifts": bytes([32, 0, 0, 0])}, "shift exceeds 31"),
                         ({"coefs": params["coefs"] + b"\x00"}, f"has {len(params['coefs']) + 1} bytes, expected "
                                                                f"{len(params['coefs'])}")):
        with pytest.raises(CorruptDataError, match=message):
            lpc.check_lpc_params({**params, **bad}, 100, np.int32)
    with pytest.raises(CorruptDataError):
        adaptive.check_adaptive_params({"stages": [[1, 29, 0]], "unsigned": 0}, 10, np.int16)
    with pytest.raises(CorruptDataError):
        adaptive.check_adaptive_params({"stages": [[1, 9]], "unsigned": 0}, 10, np.int16)
    with pytest.raises(CorruptDataError):
        grid.check_grid_params({"offset": 300, "step": 2, "bits": 8, "unsigned": 0}, 10, np.uint8)
    with pytest.raises(CorruptDataError):
        grid.grid_inverse(np.array([200], np.uint8), {"offset": 0, "step": 2, "bits": 8, "unsigned": 1})


# ============================================================================ determinism


def test_same_input_same_bytes():
    rng = np.random.default_rng(11)
    x = np.cumsum(rng.integers(-100, 101, 9000)).astype(np.int32)
    for fwd in (lpc.lpc_forward, adaptive.adaptive_forward, grid.grid_forward, rank.rank_forward):
        (a, pa), (b, pb) = fwd(x), fwd(x.copy())
        assert a.tobytes() == b.tobytes() and pa == pb


def _unpack_reference(params: dict) -> list[int]:
    """Each block's coefficients read bit by bit from ``params["coefs"]`` (two's complement,
    ``precision`` bits each, little-endian bit order)."""
    word, pos, out = int.from_bytes(params["coefs"], "little"), 0, []
    for order, prec in zip(params["orders"], params["precisions"]):
        for _ in range(order):
            v = (word >> pos) & ((1 << prec) - 1)
            out.append(v - (1 << prec) if v >> (prec - 1) else v)
            pos += prec
    return out


def test_small_and_large_paths_agree():
    """The compiled coefficient unpacking gives what reading the bits one by one gives (and
    refuses nonzero padding), and rank_forward's two ways of finding the distinct values (a
    table over a dtype of at most 16 bits when the input is long enough, else a sort) give the
    reference's ranks."""
    rng = np.random.default_rng(43)
    x = np.cumsum(rng.integers(-9, 10, 40_000)).astype(np.int16)
    for block in (500, 40_000):
        _, params = lpc.lpc_forward(x, block=block)
        coefs = lpc.check_lpc_params(params, x.size, np.int16)[3]
        assert coefs.tolist() == _unpack_reference(params) and coefs.size
    assert coefs.size < 40 and lpc.check_lpc_params(lpc.lpc_forward(x, block=500)[1], x.size, np.int16)[3].size > 128
    _, params = lpc.lpc_forward(x, block=500)
    bad = dict(params, coefs=params["coefs"][:-1] + bytes([params["coefs"][-1] | 0x80]))
    total = int((np.frombuffer(params["orders"], np.uint8).astype(int)
                 * np.frombuffer(params["precisions"], np.uint8)).sum())
    assert total % 8  # the last byte has padding bits: setting its top bit is refused
    with pytest.raises(CorruptDataError, match="padding"):
        lpc.check_lpc_params(bad, x.size, np.int16)
    for dtype, short, long in ((np.int8, 3, 300), (np.uint16, 300, 5000)):  # below and above 2**bits / RANK_TABLE_NARROW
        assert short * rank.RANK_TABLE_NARROW < 1 << (8 * np.dtype(dtype).itemsize) <= long * rank.RANK_TABLE_NARROW
        for n in (short, long):
            v = rng.integers(np.iinfo(dtype).min, np.iinfo(dtype).max, n, endpoint=True).astype(dtype)
            v[:2] = np.iinfo(dtype).min, np.iinfo(dtype).max
            k, p = rank.rank_forward(v)
            distinct, expected = ref.ranks([int(t) for t in v])
            assert k.tolist() == expected and p["count"] == len(distinct)
            assert rank.check_rank_params(p, n, k.dtype).tolist() == distinct


# ============================================================================ unsigned inputs

UNSIGNED_DTYPES = ["|u1", "<u2", "<u4", "<u8", ">u2", ">u4", ">u8"]


@st.composite
def unsigned_signals(draw, max_size=100):
    """Unsigned signals, extremes included, many of them crossing the middle of the range."""
    dtype = np.dtype(draw(st.sampled_from(UNSIGNED_DTYPES)))
    n = draw(st.integers(0, max_size))
    bits = 8 * dtype.itemsize
    if draw(st.booleans()):
        return np.array(draw(st.lists(st.sampled_from(extremes(dtype) + [(1 << (bits - 1)) + d for d in (-2, -1, 0, 1)]),
                                      min_size=n, max_size=n)), dtype=dtype)
    seed = draw(st.integers(0, 2**32 - 1))
    walk = np.cumsum(np.random.default_rng(seed).integers(-40, 41, n)).tolist()
    return np.array([((1 << (bits - 1)) + w) % (1 << bits) for w in walk], dtype=dtype)


@given(unsigned_signals(), st.sampled_from([1, 5, 64]))
def test_unsigned_round_trips(x, block):
    """uint8..uint64, both byte orders, extremes and the midpoint: bit-exact, with the reference
    residuals of the signed values the offset defines (``unsigned`` 1)."""
    bits = 8 * x.dtype.itemsize
    r, params = lpc.lpc_forward(x, block=block)
    assert params["unsigned"] == 1
    blk, orders, shifts, coefs = lpc.check_lpc_params(params, len(x), r.dtype)
    assert r.tolist() == ref.lpc_residual(signed_ints(x), bits, blk, orders.tolist(), shifts.tolist(),
                                          coefs.tolist())
    assert_same(lpc.lpc_inverse(r, params), x)
    stages = [(3, 5, 1), (2, 3, 0)]
    r, params = adaptive.adaptive_forward(x, stages=stages)
    assert params["unsigned"] == 1
    assert r.tolist() == ref.cascade(signed_ints(x), bits, stages)
    assert_same(adaptive.adaptive_inverse(r, params), x)
    # the rows kernel of the adaptive stage agrees, both ways
    rows = adaptive.adaptive_rows(np.ascontiguousarray(x, x.dtype.newbyteorder("=")).reshape(1, -1),
                                  [list(s) for s in stages], unsigned=1)
    assert rows[0].tolist() == r.tolist()
    back = adaptive.adaptive_rows(rows, [list(s) for s in stages], inverse=True, unsigned=1)
    assert back.view(x.dtype.newbyteorder("="))[0].tolist() == x.tolist()


def _walk_around_zero(n: int = 6000, seed: int = 7) -> np.ndarray:
    """A smooth, noisy int16 signal that crosses 0 every few dozen samples."""
    rng = np.random.default_rng(seed)
    t = np.arange(n)
    return np.round(900 * np.sin(t / 9.0) + 300 * np.sin(t / 2.3) + rng.normal(0, 6, n)).astype(np.int16)


def test_unsigned_signal_crossing_the_middle_predicts_as_its_signed_twin():
    """A uint16 signal straddling 32768 is the int16 signal + 32768: offset to signed, the
    predictors see exactly the int16 values (same residuals), not a jump of 65536 at every
    crossing."""
    s = _walk_around_zero()
    u = (s.astype(np.int32) + 32768).astype(np.uint16)
    for forward in (lpc.lpc_forward, adaptive.adaptive_forward):
        rs, signed = forward(s)
        ru, params = forward(u)
        assert (signed["unsigned"], params["unsigned"]) == (0, 1)
        assert ru.tolist() == rs.tolist()


def test_unsigned_param_is_validated():
    """``unsigned`` is 0 (a signed input) or 1 (an unsigned one, offset) in every prediction
    stage's params, and must agree with the dtype the params are checked for."""
    x = (np.arange(50) * 977 % 60000).astype(np.uint16)
    for forward, check in ((lpc.lpc_forward, lpc.check_lpc_params), (adaptive.adaptive_forward,
                                                                      adaptive.check_adaptive_params),
                           (rank.rank_forward, rank.check_rank_params), (grid.grid_forward, grid.check_grid_params)):
        r, params = forward(x)
        assert params["unsigned"] == 1
        check(params, len(x), r.dtype)
        for bad in (2, 3, -1, True, 1.0, "1", None):
            with pytest.raises(CorruptDataError):
                check({**params, "unsigned": bad}, len(x), r.dtype)
    for forward in (lpc.lpc_forward, adaptive.adaptive_forward):
        with pytest.raises(TypeError):
            forward(x, unsigned_mode=1)  # the bits-as-signed mode of development versions is gone


def test_rank_values_past_the_range_refused():
    """The distinct values may end exactly at the dtype's top, not beyond: 8 bits and 64 bits
    (where a float sum cannot decide alone), two and 300 values."""
    def varints(gaps):
        out = bytearray()
        for g in gaps:
            while g >= 0x80:
                out.append(g & 0x7F | 0x80)
                g >>= 7
            out.append(g)
        return bytes(out)

    for bits in (8, 64):
        top = (1 << bits) - 1
        for count in (2, 300):
            if count > top:
                continue
            gaps = [0] * (count - 1) + [top - (count - 1)]  # values 0 .. count - 2, then the top
            p = {"count": count, "bits": bits, "unsigned": 1, "values": varints(gaps)}
            values = rank.check_rank_params(p, 1000, np.uint64)
            assert int(values[-1]) == top and values.shape == (count,)
            for over in ({**p, "values": varints(gaps[:-1] + [gaps[-1] + 1])},
                         {**p, "values": varints([1] + gaps[1:])} if count > 1 else p):
                with pytest.raises(CorruptDataError, match="run past"):
                    rank.check_rank_params(over, 1000, np.uint64)
    from ubpe.frontend.grid import _width_dtype
    from ubpe.frontend.rank import _rank_dtype

    assert [_rank_dtype(c).str for c in (0, 1, 256, 257, 65536, 65537, 1 << 32, (1 << 32) + 1)] == \
        ["|u1", "|u1", "|u1", "<u2", "<u2", "<u4", "<u4", "<u8"]
    assert [_width_dtype(k).str for k in (0, 255, 256, 65535, 65536, (1 << 32) - 1, 1 << 32)] == \
        ["|u1", "|u1", "<u2", "<u2", "<u4", "<u4", "<u8"]


class _NotExactlyDict(dict):
    """A map check_lpc_params reads field by field (its one-test usual case takes only dicts)."""


@given(st.sampled_from(["block", "unsigned", "orders", "shifts", "precisions", "coefs", None]),
       st.sampled_from([0, 1, 2, 3, 30, 31, -1, 1 << 24, (1 << 24) + 1, True, False, 2.0, "x", b"", b"\x01",
                        bytearray(b"\x01\x01\x01\x01"), bytes([2, 2, 2, 2]), bytes(200), None]),
       st.booleans())
def test_check_lpc_params_usual_case_matches_field_by_field(name, value, drop):
    # the usual case (one test of every field) accepts exactly what the field-by-field checks
    # accept, with the same result; what they refuse, it leaves to them (the same message)
    x = np.arange(100, dtype=np.int32) ** 2
    _, params = lpc.lpc_forward(x, block=30)
    bad = dict(params)
    if name is not None:
        if drop:
            del bad[name]
        else:
            bad[name] = value
    try:
        want = lpc.check_lpc_params(_NotExactlyDict(bad), 100, np.int32)
    except CorruptDataError as e:
        with pytest.raises(CorruptDataError) as got:
            lpc.check_lpc_params(bad, 100, np.int32)
        assert str(got.value) == str(e)
        return
    got = lpc.check_lpc_params(bad, 100, np.int32)
    assert got[0] == want[0]
    for a, b in zip(got[1:], want[1:]):
        np.testing.assert_array_equal(a, b)


@given(st.integers(0, 2**32 - 1), st.sampled_from([8, 16, 32, 64]), st.integers(0, 32), st.integers(0, 700),
       st.integers(1, 900))
def test_analysis_residual_bits_are_the_geometric_bits_of_the_exact_residual(seed, bits, order, lo, m):
    # _residual_bits sums its predictions by chunks of samples and lags: the residual must be
    # the exact one (reference_predict), its bits summed sample by sample as the float they were
    from ubpe._kernels import predict as K

    rng = np.random.default_rng(seed)
    n = lo + m
    s = rng.integers(-(1 << (bits - 1)), 1 << (bits - 1), n, dtype=np.int64, endpoint=False)
    if rng.random() < 0.5:  # smooth: small residuals
        s = np.cumsum(rng.integers(-3, 4, n)) - (n // 2)
    q = rng.integers(-(1 << 15), 1 << 15, 32).astype(np.int64)
    shift = int(rng.integers(0, 31))
    res = ref.lpc_residual([int(v) for v in s], bits, n, [order], [shift], q[:order].tolist())[lo:]
    total = 0.0
    for r in res:
        total += 2.0 * abs(float(r))
    want = K._geometric_bits(total, m)
    got = K._residual_bits(s, np.int64(lo), np.int64(n), np.int64(order), q, np.int64(shift), np.int64(64 - bits),
                           np.empty(K._CHUNK, np.uint64))
    assert got == want
