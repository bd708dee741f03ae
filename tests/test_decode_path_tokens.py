"""Level 1's LPC streams of another coder than "mag" (a short series' "rans", "packed") are
decoded on int64 values with the LPC inverted in place (``ubpe.frontend.lpc.reconstruct_rows``),
behind a float stage or alone: the values equal the input and what decoding stage by stage
gives, bit for bit."""

from __future__ import annotations

import numpy as np

import ubpe
from ubpe.coders import decode_stream, encode_stream
from ubpe.format import container

from test_decode_path import calls, stage_by_stage


def recoded(data: bytes, coder: str) -> bytes:
    """``data`` (a level-1 container of one stream, no merges) with its stream coded by ``coder``."""
    fields = container.fields_of(data)
    p = container.parse(data, 1 << 40)
    tokens = decode_stream(p.stream, p.a)
    fields["stream"] = encode_stream(tokens, p.a, coders=(coder,))
    assert fields["stream"]["coder"] == coder
    return container.pack(fields)


def _inputs():
    rng = np.random.default_rng(40)
    t = np.arange(3000)
    smooth = 2500 * np.sin(t / 35.0) + np.where((t // 900) % 2, 30.0, 1.5) * rng.laplace(size=t.size)
    yield "int16", np.round(smooth).astype(np.int16), {}
    yield "uint16", (np.round(smooth) + 20000).astype(np.uint16), {}
    yield "stereo", np.stack([np.round(smooth), np.round(smooth / 3)], axis=1).astype(np.int32), {}
    yield "floatdec", np.round(smooth * 100) / 100, {}
    yield "floatdec f32 ulps", (np.round(smooth * 100) * np.float32(0.00128)).astype(np.float32), {}
    yield "floatgrid", np.round(smooth * 8) / 8, {}
    yield "quantize", smooth, {"step": 0.25}
    yield "short", np.round(smooth[:5]).astype(np.int16), {}


def test_lpc_streams_of_other_coders_decode_on_int64_values_as_stage_by_stage():
    seen = set()
    for name, x, opts in _inputs():
        data = ubpe.compress(x, level=1, predictor="lpc", **opts)
        info = ubpe.describe(data)
        front = [s["stage"] for s in info.front]
        if front[-1] != "lpc" or info.n_merges or info.escapes:
            continue
        for coder in ("rans", "packed"):
            try:
                other = recoded(data, coder)
            except AssertionError:  # (the coder declined these tokens)
                continue
            y = ubpe.decompress(other)
            assert y.dtype == x.dtype and y.shape == x.shape, (name, coder)
            if "step" in opts:
                assert np.array_equal(y, ubpe.decompress(data)), (name, coder)
            else:
                assert np.array_equal(y.view(np.uint8), x.view(np.uint8)), (name, coder)
            assert np.array_equal(y.reshape(-1).view(np.uint8), stage_by_stage(other).reshape(-1).view(np.uint8)), (name, coder)
            assert calls(lambda: ubpe.decompress(other)).get("reconstruct_rows", 0) == 1, (name, coder)
            seen.add((front[0] if len(front) == 2 else "lpc", coder))
    assert {("lpc", "rans"), ("floatdec", "rans"), ("lpc", "packed")} <= seen, seen


def test_a_damaged_rans_stream_behind_floatdec_and_lpc_is_refused_or_decodes_exactly():
    # float32 counts times a float32 calibration factor, a few ulps off (a SAC trace's arithmetic):
    # level 1 writes "rans" tokens behind "floatdec" with ulp adjustments (a "rans" stream too), then "lpc"
    rng = np.random.default_rng(42)
    t = np.arange(1000)
    counts = np.round(300 * np.sin(t / 25.0) + 3 * rng.laplace(size=t.size)).astype(np.float32)
    noise = np.where(rng.random(t.size) < 0.4, rng.integers(-3, 4, t.size), 0).astype(np.int32)
    x = ((counts * np.float32(0.00128)).view(np.int32) + noise).view(np.float32)
    data = ubpe.compress(x, level=1)
    info = ubpe.describe(data)
    assert info.coders == ("rans",) and [s["stage"] for s in info.front] == ["floatdec", "lpc"]
    assert info.front[0]["adj"]["coder"] == "rans"
    assert calls(lambda: ubpe.decompress(data)).get("reconstruct_rows", 0) == 1
    refused = 0
    for i in range(len(data)):
        bad = bytearray(data)
        bad[i] ^= 0x41
        try:
            y = ubpe.decompress(bytes(bad))
        except (ubpe.CorruptDataError, ubpe.FormatVersionError):
            refused += 1
            continue
        assert np.array_equal(y.view(np.uint8), x.view(np.uint8))
    assert refused > len(data) // 2
