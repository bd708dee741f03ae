"""The decode path: it does no writer-side work, and level 1's usual signal streams (a "mag"
stream behind one LPC or delta stage) are decoded in one fused pass that gives exactly what
decoding stage by stage gives.

Which functions run is read from the standard profiler (cProfile), without touching the
package; "stage by stage" is spelled out here with the public pieces (the checked record of
:func:`ubpe.format.container.parse`, :func:`ubpe.coders.decode_stream`, the front end's
:func:`ubpe.frontend.inverse`)."""

from __future__ import annotations

import cProfile
import pstats

import numpy as np
import pytest

import ubpe
from ubpe import frontend
from ubpe.coders import decode_stream, encode_stream
from ubpe.coders.mag import decode_with_lpc
from ubpe.format import container
from ubpe.frontend.lpc import check_lpc_params, lpc_forward, lpc_inverse


def calls(fn) -> dict[str, int]:
    """How many times each Python function (by name) was called while ``fn()`` ran."""
    profile = cProfile.Profile()
    profile.runcall(fn)
    counts: dict[str, int] = {}
    for (_file, _line, name), (_primitive, total, *_rest) in pstats.Stats(profile).stats.items():
        counts[name] = counts.get(name, 0) + total
    return counts


def stage_by_stage(data: bytes) -> np.ndarray:
    """The values of a one-stream container with no merges and no escapes, decoded one step
    after the other: the stream's tokens, their values, the chain inverted."""
    p = container.parse(data, 1 << 40)
    assert p.block == 0 and p.m == 0 and p.esc is None
    tokens = decode_stream(p.stream, p.a)
    coded = frontend.chain_dtypes(p.chain, p.native)[-1]
    y = p.values.to_values(tokens, coded).reshape(p.channels, -1)
    return frontend.from_channels(frontend.inverse(y, p.chain, p.native), p.shape).astype(p.dtype)


def fused(data: bytes) -> int:
    """How many times decompressing ``data`` ran the fused decoder."""
    return calls(lambda: ubpe.decompress(data)).get("decode_with_lpc", 0)


def test_decompress_runs_no_lpc_analysis():
    rng = np.random.default_rng(5)
    x = np.cumsum(rng.integers(-50, 51, 6000)).astype(np.int16)
    counted = calls(lambda: ubpe.compress(x, level=1, predictor="lpc"))
    # the writer analyses (the stage by lpc._forward_signal, which lpc_forward also runs)
    assert counted.get("_forward_signal", 0) > 0
    data = ubpe.compress(x, level=1, predictor="lpc")
    assert [s["stage"] for s in ubpe.describe(data).front] == ["lpc"]
    for _ in range(3):  # stage instances are built once, not per decode (LpcStage() analyses)
        counted = calls(lambda: ubpe.decompress(data))
        assert all(counted.get(name, 0) == 0 for name in ("lpc_forward", "lpc_reweight", "_forward_signal",
                                                          "_reweight_signal"))
    assert np.array_equal(ubpe.decompress(data), x)


def _signals():
    """LPC-friendly signals: mono and multichannel, signed and unsigned, narrow and wide alphabets."""
    rng = np.random.default_rng(8)
    t = np.arange(7000)
    loud = np.where((t // 700) % 2 == 0, 2.0, 300.0)  # bursts: the "mag" coder's contexts pay
    smooth = (3000 * np.sin(t / 40.0) + loud * rng.laplace(size=t.size)).astype(np.int16)
    yield "mono", smooth
    spikes = np.zeros(t.size, np.int64)
    spikes[::97] = rng.integers(-9000, 9000, spikes[::97].size)
    quiet = np.round(3000 * np.sin(t / 40.0) + np.where((t // 700) % 2 == 0, 1.0, 8.0) * rng.laplace(size=t.size))
    yield "gappy", (quiet + spikes).astype(np.int16)  # few residuals, far apart: a value table
    yield "unsigned", (smooth.astype(np.int32) + 20000).astype(np.uint16)
    yield "int32", smooth.astype(np.int32) * 3
    yield "stereo", np.stack([smooth, (smooth // 2 + rng.integers(-3, 4, t.size)).astype(np.int16)], axis=1)
    yield "blocks", np.tile(smooth[:5000], 2)  # several LPC blocks of different orders
    yield "short", smooth[:3]  # fewer samples than the orders
    narrow = np.where((t // 500) % 2 == 0, 1.0, 12.0) * rng.laplace(size=t.size)
    yield "range", (np.cumsum(np.cumsum(rng.integers(-1, 2, t.size))) // 64 + narrow).astype(np.int16)  # no gaps


def test_fused_mag_lpc_decode_matches_stage_by_stage():
    """Level 1's "mag" + LPC streams are decoded in one pass (coders.mag.decode_with_lpc); the
    values equal the input and what decoding the stream, mapping ids and inverting the stage
    one after the other gives."""
    used = tables = 0
    for name, x in _signals():
        data = ubpe.compress(x, level=1, predictor="lpc")
        info = ubpe.describe(data)
        y = ubpe.decompress(data)
        assert y.dtype == x.dtype and np.array_equal(y, x), name
        if info.coders == ("mag",) and info.n_merges == 0:
            assert fused(data) == 1, name
            used += 1
            tables += container.parse(data, 1 << 40).values.table is not None
            assert np.array_equal(stage_by_stage(data), y), name
    assert used >= 7 and tables == 0  # (value tables: the next test)


def test_decode_with_lpc_with_a_value_table_and_channels():
    """decode_with_lpc maps ids through a value table (residuals wrapped to the width) or an
    offset, channel by channel, block by block: as the stream's tokens mapped, then the LPC
    stage inverted."""
    rng = np.random.default_rng(21)
    t = np.arange(5000)
    rows = [np.round(2000 * np.sin(t / 30.0 + c) + np.where((t // 600) % 2, 40.0, 2.0) * rng.laplace(size=t.size))
            .astype(np.int16) for c in range(3)]
    channels, residuals, inverted = [], [], []
    for c, row in enumerate(rows):
        r, params = lpc_forward(row, block=[4096, 700, 1][c])
        channels.append(check_lpc_params(params, t.size, np.int16))
        residuals.append(r.astype(np.int64))
        inverted.append(lpc_inverse(r, params))
    expect = np.concatenate(inverted).astype(np.int64)
    assert np.array_equal(expect.reshape(3, -1), np.stack(rows))
    r = np.concatenate(residuals)
    values, tokens = np.unique(r, return_inverse=True)
    stream = encode_stream(tokens, values.size, coders=("mag",))
    assert stream["coder"] == "mag"
    lut = values.astype(np.uint64) + np.uint64(3 << 16)  # wraps to the same 16-bit residuals
    assert np.array_equal(decode_with_lpc(stream, values.size, lut, 0, 16, channels), expect)
    # an offset instead of a table: ids are value - lo for a dense alphabet
    lo = int(r.min())
    dense = encode_stream(r - lo, int(r.max()) - lo + 1, coders=("mag",))
    assert dense["coder"] == "mag"
    assert np.array_equal(decode_with_lpc(dense, int(r.max()) - lo + 1, None, lo + (5 << 16), 16, channels), expect)
    with pytest.raises(ValueError, match="frames per channel"):  # a caller's error: params for other lengths
        decode_with_lpc(stream, values.size, lut, 0, 16, channels[:1])


def test_fused_path_behind_a_float_stage():
    """A float stage ("quantize", lossy, or "floatgrid", "floatdec", "floatbin", lossless) before
    the LPC stage: the "mag" stream is still decoded in one pass, and the floats equal those of
    decoding stage by stage, bit for bit (float64 and float32, wide and narrow integers)."""
    rng = np.random.default_rng(12)
    t = np.arange(9000)
    smooth = 2500 * np.sin(t / 35.0) + np.where((t // 900) % 2, 30.0, 1.5) * rng.laplace(size=t.size)
    cases = [("quantize", smooth, dict(step=0.25)), ("quantize f32", smooth.astype(np.float32), dict(step=1.0)),
             ("quantize wide", smooth * 1e4, dict(step=0.5)),
             ("floatgrid", np.round(smooth * 8) / 8, {}), ("floatbin negzero", np.round(smooth) * 0.5, {}),
             ("floatdec", np.round(smooth * 100) / 100, {}), ("floatbin f32", (smooth / 7).astype(np.float32), {})]
    used = set()
    for name, x, opts in cases:
        if "negzero" in name:
            x = x.copy()
            x[::50] = -0.0
        data = ubpe.compress(x, level=1, predictor="lpc", **opts)
        front = [s["stage"] for s in ubpe.describe(data).front]
        y = ubpe.decompress(data)
        assert y.dtype == x.dtype and y.shape == x.shape, name
        if "step" in opts:
            assert np.max(np.abs(y.astype(np.float64) - x)) <= opts["step"] / 2 * (1 + 1e-9), name
        else:
            assert np.array_equal(y.view(np.uint8), x.view(np.uint8)), name  # -0.0 kept
        assert np.array_equal(y.view(np.uint8), stage_by_stage(data).view(np.uint8)), name
        if front[-1] == "lpc" and len(front) == 2 and ubpe.describe(data).coders == ("mag",):
            assert fused(data) == 1, name
            used.add(front[0])
    assert used == {"quantize", "floatgrid", "floatdec", "floatbin"}


def test_fused_path_for_delta_orders_1_and_2():
    """A "mag" stream behind one delta stage of order 1 or 2 is decoded in one pass as an LPC
    of fixed coefficients (mono, stereo, signed and unsigned, short inputs); order 3 and up
    stage by stage. Both give the input back, and the same values as stage by stage."""
    rng = np.random.default_rng(31)
    t = np.arange(6000)
    walk = np.cumsum(np.where((t // 600) % 2, 9.0, 1.0) * rng.laplace(size=t.size)).astype(np.int16)
    signals = [("mono", walk), ("unsigned", (walk.astype(np.int32) + 30000).astype(np.uint16)),
               ("int32", walk.astype(np.int32) * 7), ("int8", (walk // 64).astype(np.int8)),
               ("stereo", np.stack([walk, walk // 3], axis=1)), ("short", walk[:2]), ("one", walk[:1]),
               ("wrap", (walk.astype(np.int64) * 9).astype(np.int16))]  # differences wrap around
    seen = set()
    for order in (1, 2, 3):
        for name, x in signals:
            data = ubpe.compress(x, level=1, delta=order)
            info = ubpe.describe(data)
            y = ubpe.decompress(data)
            assert y.dtype == x.dtype and np.array_equal(y, x), (order, name)
            front = [(s["stage"], s.get("order")) for s in info.front]
            if info.coders == ("mag",) and info.n_merges == 0 and front == [("delta", order)]:
                assert np.array_equal(stage_by_stage(data), x), (order, name)
                assert fused(data) == (order < 3), (order, name)
                seen.add(order)
    assert {1, 2} <= seen


def _skewed(n: int, seed: int, base: int, mode: int) -> np.ndarray:
    """A smooth signal times ``base`` whose low digit is ``mode`` but for 8 % of the values (an
    ADC with a noisy extra bit), int64; bursts of loudness for the "mag" coder's contexts."""
    rng = np.random.default_rng(seed)
    t = np.arange(n)
    smooth = np.round(900 * np.sin(t / 41.0) + np.where((t // 700) % 2, 40.0, 2.0) * rng.laplace(size=n))
    return smooth.astype(np.int64) * base + np.where(rng.random(n) < 0.08, rng.integers(0, base, n), mode)


def test_fused_path_behind_a_mult_stage():
    """"mult" then "lpc" or a delta of order 1 or 2: the quotients are reconstructed in one pass
    ("mag": decode_with_lpc; another coder: on int64 values in place) and joined to their digits
    straight into the values' width. The values equal the input and what decoding stage by stage
    gives, for every width and signedness, several channels (one of them split with base 1),
    and fewer samples than the predictor's order; "mult_inverse" (the stage's own path) is
    not run."""
    from test_decode_path_tokens import recoded

    mono = _skewed(7000, 3, 4, 2)
    cases = [("int16", mono.astype(np.int16)), ("uint16", (mono + 30000).astype(np.uint16)),
             ("int32 base 32", (_skewed(7000, 4, 32, 23) * 1000).astype(np.int32)),
             ("int8", (_skewed(7000, 5, 2, 1) // 16).astype(np.int8)),
             ("int64", _skewed(7000, 6, 8, 5) << 20),
             ("stereo", np.stack([mono, np.round(mono * 0.37 + 11)], axis=1).astype(np.int16)),
             ("short", mono[:4].astype(np.int16))]
    seen = set()
    for name, x in cases:
        for predictor in ("mult+lpc", "mult+delta1"):
            data = ubpe.compress(x, level=1, predictor=predictor)
            info = ubpe.describe(data)
            assert [s["stage"] for s in info.front][0] == "mult", (name, predictor)
            if info.n_merges or info.escapes:
                continue
            for coder in ("mag", "rans"):
                try:
                    coded = data if info.coders == (coder,) else recoded(data, coder)
                except AssertionError:  # (the coder declined these tokens)
                    continue
                y = ubpe.decompress(coded)
                assert y.dtype == x.dtype and np.array_equal(y, x), (name, predictor, coder)
                assert np.array_equal(stage_by_stage(coded), y), (name, predictor, coder)
                counted = calls(lambda: ubpe.decompress(coded))
                fused_here = counted.get("_mult_joined", 0) + counted.get("_fused_lpc_tokens", 0) * (predictor == "mult+lpc")
                if coder == "mag" or predictor == "mult+lpc":
                    assert counted.get("mult_inverse", 0) == 0 and fused_here >= 1, (name, predictor, coder)
                    seen.add((predictor, coder))
    assert {("mult+lpc", "mag"), ("mult+lpc", "rans"), ("mult+delta1", "mag")} <= seen, seen


def test_the_narrow_and_wide_lpc_sums_agree_at_full_scale():
    """decode_with_lpc sums the prediction of samples of at most 32 bits as products of 32-bit
    operands, of wider ones in uint64: full-scale samples (a sum of tones clipped at both ends)
    and high orders give the values the stage's own inverse gives, for 8, 16, 32 and 64 bits (the
    wide sum wraps)."""
    rng = np.random.default_rng(17)
    t = np.arange(6000)
    tones = np.sin(t / 9.0) + 0.6 * np.sin(t / 3.1) + 0.3 * np.sin(t / 1.7)
    orders = {}
    for dtype in (np.int8, np.int16, np.int32, np.int64):
        info = np.iinfo(dtype)
        top = float(info.max) if dtype != np.int64 else 2.0 ** 44  # (64 bits: the wide sum, wrapping)
        x = np.clip(tones * 0.8 * top + rng.integers(-2, 3, t.size), -top, top * 0.999).astype(dtype)
        x[2000:2100] = info.max  # runs of full scale
        x[2100:2200] = info.min
        r, params = lpc_forward(x, block=2048, max_order=32)
        channel = check_lpc_params(params, x.size, dtype)
        res = r.astype(np.int64)
        values, ids = np.unique(res, return_inverse=True)
        stream = encode_stream(ids, values.size, coders=("mag",))
        assert stream["coder"] == "mag", dtype
        bits = 8 * np.dtype(dtype).itemsize
        lut = values.astype(np.uint64)  # (residuals as uint64: wrapped to the width by the decoder)
        got = decode_with_lpc(stream, values.size, lut, 0, bits, [channel])
        assert np.array_equal(got.astype(dtype), x), dtype
        assert np.array_equal(lpc_inverse(r, params), x), dtype
        orders[np.dtype(dtype).name] = int(channel[1].max())
    assert min(orders.values()) >= 8, orders  # (high orders: the sums the narrow path vectorizes)
