"""The decode path does no writer-side work: decompressing never runs an analysis."""

import numpy as np

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
