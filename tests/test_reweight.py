"""Loudness-weighted LPC refits (``ubpe.frontend.lpc.lpc_reweight``) and the lpc stage's use of them."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import reference_predict as ref
import ubpe
from test_predict import assert_same, signals, signed_ints
from ubpe import frontend
from ubpe.api import writer
from ubpe.format.container import values_crc
from ubpe.frontend import lpc as P
from ubpe.frontend.chains import PREDICTORS, build_chain
from ubpe.planner import DEFAULT, ReplayEncoder, choose_method, configured, plan


def tone_bursts(n: int = 60_000, seed: int = 3) -> np.ndarray:
    """An EEG-like channel at 1 kHz: broadband noise (and an ADC offset) under a 330 Hz tone
    that a stimulus switches on for 1 s and off for 1.5 s, 400 times louder than the noise."""
    rng = np.random.default_rng(seed)
    t = np.arange(n)
    on = (t % 2500) < 1000
    noise = np.convolve(rng.normal(0, 40, n), np.ones(3) / 3, "same")  # some low-pass colour
    tone = 20_000 * np.sin(2 * np.pi * 330.1 * t / 1000 + 0.3) * on
    return np.round(150 + noise + tone).astype(np.int16)


def tuning(**changes) -> dict:
    """The refit's keywords under the default settings with ``changes`` (Settings fields)."""
    return dataclasses.replace(DEFAULT, **changes).lpc_reweight_options()


#: Refit every block and keep every refit (the round trip must hold whatever is kept).
REFIT_EVERYTHING = tuning(lpc_reweight_gate=-np.inf, lpc_reweight_margin=-np.inf)


@settings(max_examples=150, deadline=None)
@given(signals(max_size=300), st.sampled_from([1, 5, 64, 100, 4096]), st.integers(0, 32))
def test_reweight_round_trips_and_matches_the_reference(x, block, max_order):
    r0, p0 = P.lpc_forward(x, block=block, max_order=max_order)
    r, params = P.lpc_reweight(x, r0, p0, max_order=max_order, **REFIT_EVERYTHING)
    bits = 8 * x.dtype.itemsize
    assert r.dtype == r0.dtype and r.shape == x.shape
    blk, orders, shifts, coefs = P.check_lpc_params(params, len(x), r.dtype)  # valid params
    assert blk == block and (orders <= max_order).all() and set(params) == set(p0)
    expected = ref.lpc_residual(signed_ints(x), bits, blk, orders.tolist(), shifts.tolist(), coefs.tolist())
    assert r.tolist() == expected
    assert_same(P.lpc_inverse(r, params), x)


def test_reweight_refits_a_tone_switched_on_and_off():
    x = tone_bursts()
    r0, p0 = P.lpc_forward(x, block=4096)
    r, p = P.lpc_reweight(x, r0, p0)
    assert p != p0 and p["block"] == 4096
    assert_same(P.lpc_inverse(r, p), x)
    coef_bits = lambda q: len(q["coefs"]) * 8  # noqa: E731
    span = DEFAULT.lpc_local_span
    before, after = P._local_bits(r0, span) + coef_bits(p0), P._local_bits(r, span) + coef_bits(p)
    assert after < 0.9 * before  # the quiet stretches are whitened, not the tone's notch kept alone
    # through the container: the chain that ends with the stage refits, smaller than without
    data = ubpe.compress(x, predictor="lpc", level=1)
    assert container_size(x, build_chain(PREDICTORS["lpc"])) == len(data)
    plain = container_size(x, [frontend.stage("lpc", reweight=False)])
    assert len(data) < 0.95 * plain
    assert_same(ubpe.decompress(data), x)
    with P.analysis_cache():
        assert ubpe.compress(x, predictor="lpc", level=1) == data  # deterministic (cached or not)
        assert ubpe.compress(x, predictor="lpc", level=1) == data


def container_size(x: np.ndarray, chain: list, level: int = 1) -> int:
    """The size of the container compress writes for ``x`` with the front end ``chain`` (any
    stages, configured as given), through the planner's public search."""
    base = {"dtype": x.dtype.str, "shape": list(x.shape), "crc": values_crc(x.dtype, list(x.shape), x), "front": []}
    cost = writer.cost_function(base, {})
    best = plan(frontend.to_channels(x), [chain], level, cost, ReplayEncoder(None, {}, DEFAULT), DEFAULT)
    return cost(choose_method(best, cost, DEFAULT)).size


def test_reweight_leaves_steady_blocks_alone():
    rng = np.random.default_rng(4)
    x = np.round(np.convolve(rng.normal(0, 300, 20_000), [1.0, 0.8, 0.5], "same")).astype(np.int16)
    r0, p0 = P.lpc_forward(x, block=4096)
    r, p = P.lpc_reweight(x, r0, p0)  # the residual's loudness does not move: no block refitted
    assert p is p0 and r is r0
    assert P.lpc_reweight(x[:0], r0[:0], P.lpc_forward(x[:0])[1])[0].shape == (0,)


def test_reweight_keeps_a_refit_only_when_it_saves_the_margin():
    x = tone_bursts(20_000)
    r0, p0 = P.lpc_forward(x, block=4096)
    assert P.lpc_reweight(x, r0, p0, **tuning(lpc_reweight_margin=np.inf))[1] is p0
    _, p = P.lpc_reweight(x, r0, p0, **tuning(lpc_reweight_margin=0.0))
    changed = [b for b in range(len(p["orders"])) if p["orders"][b] != p0["orders"][b]
               or p["shifts"][b] != p0["shifts"][b] or p["precisions"][b] != p0["precisions"][b]]
    assert changed and all(p["precisions"][b] == 15 for b in changed)  # refits: the finest precision


@pytest.mark.parametrize("level", [1, 2])
def test_compress_refits_under_the_settings_tuning(level):
    # the planner hands the "lpc" stage its settings' tuning: with no refit worth its margin,
    # compress writes the container of the plain fit (the bytes of the stage without reweight)
    x = tone_bursts(20_000)
    refit = ubpe.compress(x, predictor="lpc", level=level)
    with configured(lpc_reweight_margin=np.inf):
        never = ubpe.compress(x, predictor="lpc", level=level)
    assert len(never) == container_size(x, [frontend.stage("lpc", reweight=False)], level) > len(refit)
    assert_same(ubpe.decompress(never), x)
    stage = frontend.stage("lpc", reweight=True)
    assert stage.reweight_options == DEFAULT.lpc_reweight_options()  # a stage of its own: the defaults


def test_reweight_arguments():
    x = tone_bursts(5000)
    r, p = P.lpc_forward(x)
    with pytest.raises(ValueError):
        P.lpc_reweight(x, r, p, precisions=())
    with pytest.raises(TypeError):
        P.lpc_reweight(x, r, p, precisions=12)
    with pytest.raises(ValueError):
        P.lpc_reweight(x, r, p, max_order=33)
    with pytest.raises(ubpe.CorruptDataError):
        P.lpc_reweight(x[:4000], r[:4000], p)  # params of two blocks for one
    with pytest.raises(ValueError):
        P.lpc_reweight(x, r[:-1], p)
    assert P.lpc_reweight(x, r, p, max_order=0) == (r, p)
    with pytest.raises(ValueError):
        P.lpc_reweight(x, r, p, span=0)
    with pytest.raises(TypeError):
        P.lpc_reweight(x, r, p, margin="0.1")
    with pytest.raises(ValueError):
        P.lpc_reweight(x, r, p, gate=float("nan"))
    with pytest.raises(TypeError):
        frontend.stage("lpc", reweight=True, reweight_options={"spam": 1})


@settings(max_examples=150, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(1, 3000), st.integers(1, 20),
       st.sampled_from([1, 8, 16, 32, 45, 49, 50, 64]))
def test_compiled_weights_are_the_convolution_s_to_the_bit(seed, n, step, bits):
    # exact window sums: the convolution's weights to the bit while they are exact (integers,
    # a span a power of two, sums below 2**53), within rounding otherwise
    from ubpe._kernels import predict as K

    rng = np.random.default_rng(seed)
    e = rng.integers(-(1 << (bits - 1)), 1 << (bits - 1), n, endpoint=False).astype(np.float64)
    if seed % 7 == 0:
        e[rng.integers(n)] += 0.5
    for span in (DEFAULT.lpc_reweight_span, 12, 1):
        scale = ref.local_scale(e, span)[::step] + 1.0
        want = 1.0 / (scale * scale)
        u = np.full(-(-n // step), np.nan)
        K.reweight_scales(e, np.int64(step), np.int64(span), u)
        if span & (span - 1) == 0 and seed % 7 != 0 and np.abs(e).max() * span < 2.0**53:
            assert np.array_equal(u.view(np.int64), want.view(np.int64))
        else:
            np.testing.assert_allclose(u, want, rtol=1e-9)


@pytest.mark.parametrize("rows, p, step", [(4, 1, 1), (4, 5, 2), (8, 33, 1), (12, 2, 3), (1024, 33, 4), (1028, 17, 5)])
def test_compiled_gram_is_the_weighted_matrix_product(rows, p, step):
    from ubpe._kernels import predict as K

    rng = np.random.default_rng(rows * p)
    first = p - 1 + int(rng.integers(0, 3))
    x = rng.normal(0, 1e3, first + (rows - 1) * step + 1 + int(rng.integers(0, 3)))
    u = rng.random(rows)
    u[rows - rows % 4:] = 0.0  # (the padding: a multiple of 4 equations)
    Z = np.lib.stride_tricks.sliding_window_view(x, p)[first - p + 1::step][:rows]  # rows oldest first
    G = np.full((p, p), 7.0)
    K.reweight_gram(x, np.int64(first), np.int64(step), u, np.empty((rows, p)), G)
    want = Z.T @ (Z * u[:, None])
    lower = np.tril_indices(p)
    np.testing.assert_allclose(G[lower], want[lower], rtol=1e-12, atol=1e-6)
    assert (G[np.triu_indices(p, 1)] == 7.0).all()  # the upper triangle untouched


def fits_to_compare():
    """(name, signal, bits, block): signals whose blocks the refit sees, of several widths."""
    rng = np.random.default_rng(11)
    walk = np.cumsum(rng.normal(0, 50, 9000)) * np.repeat(rng.choice([0.05, 1.0], 9), 1000)
    yield "tone bursts", tone_bursts(20_000), 16, 4096
    yield "bursty walk", np.round(walk).astype(np.int32), 32, 1024
    yield "short blocks", tone_bursts(3000), 16, 100
    yield "int8", (tone_bursts(12_000) // 200).astype(np.int8), 8, 4096
    yield "tail of 70", tone_bursts(8262), 16, 4096  # the last block: 70 samples
    silent = tone_bursts(6000)
    silent[:2048] = 0  # the first block's equations all zero: no fit
    silent[2048:3000] = 5  # a constant: its regressors singular but for the floor
    yield "silence", silent, 16, 1024


@pytest.mark.parametrize("case", list(fits_to_compare()), ids=lambda c: c[0])
def test_compiled_fit_is_the_numpy_reference(case):
    # the compiled refit against the numpy (BLAS, LAPACK) one it replaced: the same predictors
    # (orders, shifts, coefficients) and bits within rounding, on every block and order tried
    from ubpe._kernels import predict as K

    _, x, bits, block = case
    s = x.astype(np.int64)
    r0, _ = P.lpc_forward(x, block=block)
    r = r0.astype(np.int64)
    q = np.zeros(32, np.int64)
    for order, precision in ((32, 15), (8, 12), (1, 15)):
        for lo in range(0, len(s), block):
            hi = min(len(s), lo + block)
            got = K.reweight_fit(s, r, lo, hi, order, precision, 64 - bits, DEFAULT.lpc_reweight_iterations,
                                 DEFAULT.lpc_reweight_span, DEFAULT.lpc_reweight_equations, DEFAULT.lpc_local_span, q)
            want = ref.weighted_fit(s, lo, hi, r, order, precision, bits)
            if want is None:
                assert got[1] == 0
                continue
            assert got[1:] == want[1:3] and q[:got[1]].tolist() == want[3]
            assert got[0] == pytest.approx(want[0], rel=1e-12)


def test_a_final_lpc_stage_is_reweighted():
    def lpc_of(name):
        return [s for s in build_chain(PREDICTORS[name]) if s.name == "lpc"][0]

    for name in ("lpc", "mult+lpc", "grid+lpc", "decorrelate+lpc"):
        assert lpc_of(name).reweight
    for name in ("lpc+adaptive", "mult+lpc+adaptive", "grid+lpc+adaptive"):
        assert not lpc_of(name).reweight
    assert not build_chain((("lpc", {"reweight": False}),))[0].reweight
    assert not frontend.stage("lpc").reweight  # the stage's own default


def test_lpc_stage_results_are_cached_by_content_and_not_shared():
    x = frontend.to_channels(tone_bursts(9000))
    stage = frontend.stage("lpc", reweight=True)
    P._ANALYSED.clear()
    with P.analysis_cache():
        y1, p1 = stage.forward(x)
        assert len(P._ANALYSED) == 2  # the plain analysis and its refit
        p1["channels"][0]["orders"] = b"changed"  # the caller's copy only
        y2, p2 = stage.forward(x)
        assert np.array_equal(y1, y2) and p2["channels"][0]["orders"] != b"changed"
        assert len(P._ANALYSED) == 2
        plain = frontend.stage("lpc").forward(x)
        assert len(P._ANALYSED) == 2 and plain[1] != p2  # the plain result came from the cache
        other = x.copy()
        other[0, 0] += 1
        with P.analysis_cache():  # scopes nest: the inner one's end drops nothing
            stage.forward(other)
        assert len(P._ANALYSED) == 4
    assert P._ANALYSED == {}  # the last scope's end drops them


def test_lpc_analyses_outlive_no_compress_call():
    x = tone_bursts(9000)
    P._ANALYSED.clear()
    y, p = frontend.stage("lpc", reweight=True).forward(frontend.to_channels(x))
    assert P._ANALYSED == {}  # outside a scope nothing is kept
    data = ubpe.compress(x)  # the planner's search opens one, and its end drops what it kept
    assert P._ANALYSED == {} and P._ANALYSIS.depth == 0
    assert_same(ubpe.decompress(data), x)


def test_lpc_stage_keeps_no_result_larger_than_its_bound():
    """Within a scope, a channel of more than _ANALYSED_BYTES bytes is analysed afresh each
    time (nothing kept), one of exactly that size is kept."""
    rng = np.random.default_rng(6)
    n = P._ANALYSED_BYTES // 8
    walk = np.cumsum(rng.integers(-9, 10, n + 1))
    P._ANALYSED.clear()
    with P.analysis_cache():
        y, p = frontend.stage("lpc").forward(frontend.to_channels(walk))  # int64: one byte over
        assert P._ANALYSED == {}
        x = frontend.to_channels(walk[:n])
        first = frontend.stage("lpc").forward(x)[0]
        assert len(P._ANALYSED) == 1
        assert np.array_equal(frontend.stage("lpc").forward(x)[0], first)
    assert P._ANALYSED == {}
