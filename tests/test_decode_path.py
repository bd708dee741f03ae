"""The decode path does no writer-side work: decompressing never runs an analysis."""

import numpy as np
import pytest

import ubpe
from ubpe import predict


def test_decompress_runs_no_lpc_analysis(monkeypatch):
    rng = np.random.default_rng(5)
    x = np.cumsum(rng.integers(-50, 51, 6000)).astype(np.int16)
    data = ubpe.compress(x, level=1, predictor="lpc")
    assert [s["stage"] for s in ubpe.describe(data).front] == ["lpc"]
    calls = []
    real = predict.lpc_forward
    monkeypatch.setattr(predict, "lpc_forward", lambda *a, **k: calls.append(1) or real(*a, **k))
    for _ in range(3):
        assert np.array_equal(ubpe.decompress(data), x)
    assert calls == []  # stage instances are built once, not per decode (LpcStage() analyses)


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


def test_fused_mag_lpc_decode_matches_stage_by_stage(monkeypatch):
    """Level 1's "mag" + LPC streams are decoded in one pass (entropy.decode_mag_lpc); the
    values equal the input and what decoding the stream, mapping ids and inverting the stage
    one after the other gives."""
    from ubpe import container, entropy

    fused = []
    real = entropy.decode_mag_lpc
    monkeypatch.setattr(entropy, "decode_mag_lpc", lambda *a, **k: fused.append(1) or real(*a, **k))
    used = ranges = 0
    for name, x in _signals():
        data = ubpe.compress(x, level=1, predictor="lpc")
        info = ubpe.describe(data)
        before = len(fused)
        y = ubpe.decompress(data)
        assert y.dtype == x.dtype and np.array_equal(y, x), name
        if info.coders == ("mag",) and info.n_merges == 0:
            assert len(fused) == before + 1, name
            used += 1
            ranges += container._parse(data, None).values.table is None
            with monkeypatch.context() as m:
                m.setattr(container, "_mag_lpc_values", lambda *a, **k: None)
                assert np.array_equal(ubpe.decompress(data), y), name
    assert used >= 7 and ranges == used  # (value tables: the next test)


def test_decode_mag_lpc_with_a_value_table_and_channels():
    """decode_mag_lpc maps ids through a value table (residuals wrapped to the width) or an
    offset, channel by channel, block by block: as the stream's tokens mapped, then lpc_filter."""
    from ubpe import entropy
    from ubpe._kernels import predict as kp

    rng = np.random.default_rng(21)
    t = np.arange(5000)
    rows = [np.round(2000 * np.sin(t / 30.0 + c) + np.where((t // 600) % 2, 40.0, 2.0) * rng.laplace(size=t.size))
            for c in range(3)]
    channels, residuals = [], []
    for c, row in enumerate(rows):
        r, params = predict.lpc_forward(row.astype(np.int16), block=[4096, 700, 1][c])
        channels.append(predict.check_lpc_params(params, t.size, np.int16))
        residuals.append(r.astype(np.int64))
    r = np.concatenate(residuals)
    values, tokens = np.unique(r, return_inverse=True)
    stream = entropy._encode_mag(tokens, 1 << 40)
    lut = values.astype(np.uint64) + np.uint64(3 << 16)  # wraps to the same 16-bit residuals
    expect = np.concatenate([kp_inverse(kp, res, ch) for res, ch in zip(residuals, channels)])
    got = entropy.decode_mag_lpc(stream, values.size, lut, 0, 16, channels)
    assert np.array_equal(got, expect) and np.array_equal(got.reshape(3, -1).astype(np.int16), np.stack(rows).astype(np.int16))
    # an offset instead of a table: ids are value - lo for a dense alphabet
    lo = int(r.min())
    dense = entropy._encode_mag(r - lo, 1 << 40)
    assert np.array_equal(entropy.decode_mag_lpc(dense, int(r.max()) - lo + 1, None, lo + (5 << 16), 16, channels), expect)
    with pytest.raises(ValueError, match="frames per channel"):  # a caller's error: params for other lengths
        entropy.decode_mag_lpc(stream, values.size, lut, 0, 16, channels[:1])


def kp_inverse(kp, residual, params):
    block, orders, shifts, coefs = params
    out = np.empty_like(residual)
    kp.lpc_filter(residual, block, orders, shifts, coefs, 48, True, out)
    return out


def test_fused_path_behind_a_float_stage(monkeypatch):
    """A float stage ("quantize", lossy, or "floatgrid", lossless) before the LPC stage: the
    "mag" stream is still decoded in one pass, and the floats equal those of decoding stage by
    stage, bit for bit (float64 and float32, wide and narrow integers)."""
    from ubpe import container, entropy

    rng = np.random.default_rng(12)
    t = np.arange(9000)
    smooth = 2500 * np.sin(t / 35.0) + np.where((t // 900) % 2, 30.0, 1.5) * rng.laplace(size=t.size)
    cases = [("quantize", smooth, dict(step=0.25)), ("quantize f32", smooth.astype(np.float32), dict(step=1.0)),
             ("quantize wide", smooth * 1e4, dict(step=0.5)),
             ("floatgrid", np.round(smooth * 8) / 8, {}), ("floatgrid negzero", np.round(smooth) * 0.5, {})]
    fused = []
    real = entropy.decode_mag_lpc
    monkeypatch.setattr(entropy, "decode_mag_lpc", lambda *a, **k: fused.append(1) or real(*a, **k))
    used = set()
    for name, x, opts in cases:
        if "negzero" in name:
            x = x.copy()
            x[::50] = -0.0
        data = ubpe.compress(x, level=1, predictor="lpc", **opts)
        front = [s["stage"] for s in ubpe.describe(data).front]
        before = len(fused)
        y = ubpe.decompress(data)
        assert y.dtype == x.dtype and y.shape == x.shape, name
        if "step" in opts:
            assert np.max(np.abs(y.astype(np.float64) - x)) <= opts["step"] / 2 * (1 + 1e-9), name
        else:
            assert np.array_equal(y.view(np.uint8), x.view(np.uint8)), name  # -0.0 kept
        with monkeypatch.context() as m:
            m.setattr(container, "_mag_lpc_values", lambda *a, **k: None)
            z = ubpe.decompress(data)
        assert np.array_equal(y.view(np.uint8), z.view(np.uint8)), name
        if front[-1] == "lpc" and len(front) == 2 and ubpe.describe(data).coders == ("mag",):
            assert len(fused) == before + 1, name
            used.add(front[0])
    assert used == {"quantize", "floatgrid"}


def test_fused_path_for_delta_orders_1_and_2(monkeypatch):
    """A "mag" stream behind one delta stage of order 1 or 2 is decoded in one pass as an LPC
    of fixed coefficients (mono, stereo, signed and unsigned, short inputs); order 3 and up
    stage by stage. Both give the input back, and the same values as stage by stage."""
    from ubpe import container, entropy

    rng = np.random.default_rng(31)
    t = np.arange(6000)
    walk = np.cumsum(np.where((t // 600) % 2, 9.0, 1.0) * rng.laplace(size=t.size)).astype(np.int16)
    signals = [("mono", walk), ("unsigned", (walk.astype(np.int32) + 30000).astype(np.uint16)),
               ("int32", walk.astype(np.int32) * 7), ("int8", (walk // 64).astype(np.int8)),
               ("stereo", np.stack([walk, walk // 3], axis=1)), ("short", walk[:2]), ("one", walk[:1]),
               ("wrap", (walk.astype(np.int64) * 9).astype(np.int16))]  # differences wrap around
    fused = []
    real = entropy.decode_mag_lpc
    monkeypatch.setattr(entropy, "decode_mag_lpc", lambda *a, **k: fused.append(1) or real(*a, **k))
    seen = set()
    for order in (1, 2, 3):
        for name, x in signals:
            data = ubpe.compress(x, level=1, delta=order)
            info = ubpe.describe(data)
            before = len(fused)
            y = ubpe.decompress(data)
            assert y.dtype == x.dtype and np.array_equal(y, x), (order, name)
            with monkeypatch.context() as m:
                m.setattr(container, "_mag_lpc_values", lambda *a, **k: None)
                assert np.array_equal(ubpe.decompress(data), x), (order, name)
            front = [(s["stage"], s.get("order")) for s in info.front]
            if info.coders == ("mag",) and info.n_merges == 0 and front == [("delta", order)]:
                assert len(fused) == before + (order < 3), (order, name)
                seen.add(order)
    assert {1, 2} <= seen
