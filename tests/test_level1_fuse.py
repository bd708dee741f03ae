"""The lpc stage's residual and its span sums from one compiled pass (``lpc_residual_spans``): the
residual of ``lpc_residual``, the sums of ``span_magnitudes``, the block costs and the refit's
costs as the separate passes gave them (the same integers, so the same floats), and the same
level-1 containers."""

from __future__ import annotations

import os
import pathlib

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ubpe
from test_level1_kernels import _analyze, signals
from ubpe._kernels import level1 as fast
from ubpe._kernels import predict
from ubpe.frontend import lpc

SETTINGS = settings(deadline=None, max_examples=int(os.environ.get("UBPE_MAX_EXAMPLES", "100")),
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
EXCERPT = pathlib.Path(ubpe.__file__).parent / "data" / "mitbih_208_excerpt.npy"


@SETTINGS
@given(signals(), st.sampled_from([64, 1000, 4096]), st.sampled_from([1, 7, 64, 100, 5000]),
       st.sampled_from(["i8", "own"]))
def test_residual_spans_are_the_residual_and_its_span_sums(signal, block, span, width):
    """The residual of ``lpc_residual`` (int64, or the signal's own width), ``span_magnitudes``
    of it, spans of any length (shorter than, dividing, or longer than a block), and each block's
    sum of its magnitudes."""
    s, bits = signal
    used, (orders, shifts, _precs, coefs) = _analyze(fast.lpc_analyze, s, bits, block)
    dtype = np.int64 if width == "i8" else np.dtype(f"i{bits // 8}") if bits != 24 else np.int32
    expected = np.empty(s.shape[0], dtype)
    fast.lpc_residual(s, block, orders, shifts, coefs[:used], 64 - bits, expected)
    sums = np.empty(fast.span_count(s.shape[0], block, span), np.int64)
    want = np.empty_like(sums)
    assert fast.span_magnitudes(expected, block, span, want) == sums.shape[0]
    got = np.empty(s.shape[0], dtype)
    totals = np.full(orders.shape[0], -1, np.int64)
    assert fast.lpc_residual_spans(s, block, orders, shifts, coefs[:used], 64 - bits, got, span, sums,
                                   totals) == sums.shape[0]
    assert np.array_equal(got, expected)
    assert np.array_equal(sums, want)
    blocks = [int(np.abs(expected[b0:b0 + block].astype(np.int64)).sum()) for b0 in range(0, s.shape[0], block)]
    assert totals.tolist() == blocks


@given(st.integers(0, 100_000), st.integers(1, 20_000), st.integers(1, 5000))
@settings(deadline=None, max_examples=300)
def test_span_count_is_the_spans_of_every_block(n, block, span):
    expected = sum(len(range(b0, min(b0 + block, n), span)) for b0 in range(0, n, block)) if n <= 5000 else None
    got = fast.span_count(n, block, span)
    if expected is not None:
        assert got == expected
    whole, rest = divmod(n, block)
    assert got == whole * len(range(0, block, span)) + len(range(0, rest, span))


@SETTINGS
@given(signals(max_size=20000), st.sampled_from([64, 1000, 4096, 16384]), st.sampled_from([16, 64, 100, 4096]))
def test_block_bits_from_span_sums_are_local_bits(signal, block, span):
    """The lpc stage's cost of a block length from the span sums is ``_local_bits``' float, and the
    refit's block costs from them are ``_block_costs``' floats."""
    s, bits = signal
    x = s.astype(f"i{bits // 8}") if bits != 24 else s.astype(np.int32)
    sig = lpc.as_signal(x)
    kinds = np.array([lpc.WINDOWS["tukey"]], np.int64)
    r, _p, _arrays, sums = lpc._forward_signal(*sig, block, 32, kinds, [12, 15], 1, 4, 0.0, span)
    plain, _p2, _a2, none = lpc._forward_signal(*sig, block, 32, kinds, [12, 15], 1, 4, 0.0)
    assert none is None and np.array_equal(plain, r)
    assert lpc._block_bits(sums[1], r.shape[0], block) == lpc._local_bits(r, block)
    if r.shape[0]:
        for got, want in zip(lpc._block_costs(r, block, span, True, sums[0]), lpc._block_costs(r, block, span, True)):
            assert got.tobytes() == want.tobytes()


def test_wide_signals_keep_the_float_path():
    """A 64-bit signal's residual is summed by the former path (no span sums: they could leave int64)."""
    x = (np.cumsum(np.random.default_rng(5).integers(-2**40, 2**40, 6000)) * 3).astype(np.int64)
    sig = lpc.as_signal(x)
    kinds = np.array([lpc.WINDOWS["tukey"]], np.int64)
    r, _p, _a, sums = lpc._forward_signal(*sig, 4096, 32, kinds, [12, 15], 1, 4, 0.0, 64)
    assert sums is None and r.dtype == np.int64


@SETTINGS
@given(signals(), st.sampled_from([64, 1000, 4096]), st.sampled_from([1, 2]))
def test_refit_keeps_the_residual_of_its_predictor(signal, block, passes):
    """``reweight_fit`` with ``kept``: the same result as without (and as the reference kernel),
    and ``kept`` holds ``lpc_residual`` of the block under the predictor it returns."""
    s, bits = signal
    if s.shape[0] < 64:
        return
    x = s.astype(f"i{bits // 8}") if bits in (8, 16, 32) else s.astype(np.int32)
    residual_of, _params = lpc.lpc_forward(x, block=block)
    r = residual_of.astype(np.int64)
    sh = 64 - 8 * residual_of.dtype.itemsize
    for lo in range(0, s.shape[0], block):
        hi = min(s.shape[0], lo + block)
        q1, q2, q3 = (np.zeros(32, np.int64) for _ in range(3))
        kept = np.full(hi - lo, -7, np.int64)
        narrow = np.full(hi - lo, -7, residual_of.dtype)  # (the signal's width: the same values)
        got = fast.reweight_fit(s, r, lo, hi, 32, 15, sh, passes, 16, 1024, 64, q1, kept)
        assert got == fast.reweight_fit(s, r, lo, hi, 32, 15, sh, passes, 16, 1024, 64, q1.copy(), narrow)
        assert got == fast.reweight_fit(s, r, lo, hi, 32, 15, sh, passes, 16, 1024, 64, q2)
        assert got == predict.reweight_fit(s, r, lo, hi, 32, 15, sh, passes, 16, 1024, 64, q3)
        assert np.array_equal(q1, q2) and np.array_equal(q1, q3)
        _bits, k, shift = got
        if not k:
            continue
        pad = min(lo, 32)  # (the block's residual from its samples and the 32 before it)
        want = np.empty(hi - lo + pad, np.int64)
        fast.lpc_residual(s[lo - pad:hi], hi - lo + pad, np.array([k]), np.array([shift]), q1[:k], sh, want)
        assert np.array_equal(kept, want[pad:]) and np.array_equal(narrow, want[pad:])


def test_refitted_blocks_take_the_kept_residual(monkeypatch):
    """The refit's output residual is the one lpc_residual gives for its params (the kept residual
    used, every refitted block), on a signal where most blocks are refitted."""
    rng = np.random.default_rng(11)
    n = 6 * 4096
    t = np.arange(n)
    x = (np.sin(t / 9.0) * 4000 * ((t // 700) % 3 == 0) + rng.normal(0, 15, n)).astype(np.int16)
    r, p = lpc.lpc_forward(x, block=4096)
    got, gp = lpc.lpc_reweight(x, r, p)
    assert gp["orders"] != p["orders"] or gp["coefs"] != p["coefs"]  # (blocks refitted)
    block, orders, shifts, coefs = lpc.check_lpc_params(gp, n, np.dtype(np.int16))
    want = np.empty(n, np.int16)
    fast.lpc_residual(x.astype(np.int64), block, orders, shifts, coefs, 48, want)
    assert got.dtype == np.int16 and np.array_equal(got, want)
    assert np.array_equal(lpc.lpc_inverse(got, gp), x)


@pytest.mark.parametrize("reweight", [False, True])
def test_the_stage_writes_what_the_separate_passes_wrote(monkeypatch, reweight):
    """The "lpc" stage (level 1's options) gives the same residual and params with the span sums
    as with each sum a pass of its own (``_forward_signal`` asked for none)."""
    x = np.load(EXCERPT)
    stage = lpc.LpcStage(reweight=reweight, candidates=1, costed_every=4)
    want = stage.forward(x[None])
    got_calls = []
    plain = lpc._forward_signal

    def no_spans(*args):
        got_calls.append(len(args))
        return plain(*args[:10])

    monkeypatch.setattr(lpc, "_forward_signal", no_spans)
    again = stage.forward(x[None])
    assert got_calls and all(n == 11 for n in got_calls)  # (the stage asked for the sums)
    assert np.array_equal(again[0], want[0]) and again[1] == want[1]


def test_level1_bytes_do_not_depend_on_the_span_sums(monkeypatch):
    """Level 1's container of the bundled ECG excerpt (and of a short noisy burst signal the refit
    takes) is the same with the span sums as with the passes they replace."""
    rng = np.random.default_rng(3)
    burst = (np.sin(np.arange(9000) / 7.0) * 3000 * (np.arange(9000) % 3000 < 900) + rng.normal(0, 20, 9000))
    inputs = [np.load(EXCERPT), burst.astype(np.int16)]
    want = [ubpe.compress(x, level=1, threads=1) for x in inputs]
    plain = lpc._forward_signal
    monkeypatch.setattr(lpc, "_forward_signal", lambda *args: plain(*args[:10]))
    assert [ubpe.compress(x, level=1, threads=1) for x in inputs] == want
    assert all(np.array_equal(ubpe.decompress(b), x) for b, x in zip(want, inputs))


@settings(max_examples=150, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(1, 7), st.integers(8, 10), st.integers(1, 6), st.floats(0.0, 1.0),
       st.sampled_from([2, 30, 400, 1 << 20, 1 << 36]))
def test_chosen_frequencies_are_each_option_s(seed, rates, pb_lo, pbs, density, top):
    """``mag_options`` with ``choices``: the same options as without, and each option's
    frequencies from its choices (``mag_freqs_chosen``) are ``_mag_freqs`` of its rate at its pb
    (the coder's chosen option, costed again before)."""
    from common import random_mag_stats
    from ubpe._kernels import residual
    from ubpe.coders import mag

    _rng, stats = random_mag_stats(seed, rates, density, top)
    ce, tbits = np.full((rates, pbs), np.nan), np.full((rates, pbs), -1, np.int64)
    ce2, tbits2 = ce.copy(), tbits.copy()
    choices = np.full((rates, pbs, residual.N_CONTEXTS), -1, np.int64)
    residual.mag_options(stats, pb_lo, ce, tbits, mag._NO_FREQS, choices)
    residual.mag_options(stats, pb_lo, ce2, tbits2, mag._NO_FREQS)
    assert ce.tobytes() == ce2.tobytes() and np.array_equal(tbits, tbits2)
    used = stats.sum(axis=2) > 0
    assert np.all(choices[np.broadcast_to(~used[:, None, :], choices.shape)] == -1)  # (unused rows unwritten)
    for r in range(rates):
        for j in range(pbs):
            got = np.full(stats.shape[1:], -5, np.int64)
            residual.mag_freqs_chosen(stats[r], pb_lo + j, choices[r, j], got)
            assert np.array_equal(got, mag._mag_freqs(stats[r], pb_lo + j))


@pytest.mark.parametrize("known", [False, True])
def test_the_coder_writes_the_same_stream_with_the_chosen_frequencies(monkeypatch, known):
    """The "mag" stream of real residual ids is the same with the frequencies from the choices as
    with ``_mag_freqs`` (patched in for every option), with and without the planner's rows."""
    from ubpe._kernels import residual
    from ubpe.coders import mag

    x = np.load(EXCERPT)
    r, _p = lpc.lpc_forward(x)
    tokens = (np.asarray(r).astype(np.int64) + 4000).astype(np.int64)
    counts = np.bincount(tokens)
    given_rows = None
    if known:
        center = int(np.searchsorted(np.cumsum(counts), tokens.size // 2, side="right"))
        stats = np.zeros((2, residual.N_CONTEXTS, residual.N_BUCKETS), np.int64)
        raw = int(fast.mag_stats(tokens, center, np.array([3, 5], np.int64), stats))
        ces, tbs = mag.stream_options(stats, tokens.size)
        given_rows = {3: (stats[0], raw, center, (ces[0], tbs[0])), 5: (stats[1], raw, center, (ces[1], tbs[1]))}
    want_calls = []
    got = mag._encode_mag(tokens, 1 << 40, counts, known=given_rows)
    plain = mag._mag_freqs

    def freqs_of(c, pb):
        want_calls.append(pb)
        return plain(c, pb)

    monkeypatch.setattr(mag, "_mag_freqs", freqs_of)
    monkeypatch.setattr(residual, "mag_freqs_chosen", lambda c, pb, ch, out: out.__setitem__(Ellipsis, plain(c, pb)))
    assert mag._encode_mag(tokens, 1 << 40, counts, known=given_rows) == got
