"""Level 2's "cms2" streams coded whole measure their flags on a shorter first pass
(``cmsignal2._prefix(n, whole=True)``); the planner's samples of windows never do
(benchmarks/results/level2-whole.md)."""

from __future__ import annotations

import pathlib

import numpy as np
import pytest

import ubpe
from common import check_roundtrip
from ubpe._kernels import cmsignal2
from ubpe.planner import configured

EXCERPT = pathlib.Path(ubpe.__file__).parent / "data" / "mitbih_208_excerpt.npy"


def _ecg_like(n: int, noise: int) -> np.ndarray:
    """The ECG excerpt repeated to ``n`` values, times 4, plus uniform noise in [-noise, noise]."""
    rng = np.random.default_rng(3)
    return (np.resize(np.load(EXCERPT), n).astype(np.int32) * 4 + rng.integers(-noise, noise + 1, n)).astype(np.int16)


def _audio_like(n: int, seed: int) -> np.ndarray:
    """Two decaying resonances and noise, int16: a residual "cms2" codes after an LPC."""
    rng = np.random.default_rng(seed)
    t = np.arange(n)
    x = 3000 * np.sin(2 * np.pi * t / 37) * np.exp(-t / n) + 900 * np.sin(2 * np.pi * t / 11.3)
    return np.round(x + np.cumsum(rng.normal(0, 20, n)) + rng.laplace(0, 40, n)).astype(np.int16)


@pytest.fixture
def cms2_calls(monkeypatch):
    """(tokens, whole) of every ``cms2_encode`` call, made as before."""
    calls: list[tuple[int, bool]] = []
    real = cmsignal2.cms2_encode

    def recorded(tokens, vocab_size, buf, *args, **kwargs):
        whole = kwargs.get("whole", args[2] if len(args) > 2 else False)
        calls.append((int(tokens.shape[0]), bool(whole)))
        return real(tokens, vocab_size, buf, *args, **kwargs)

    monkeypatch.setattr(cmsignal2, "cms2_encode", recorded)
    return calls


def test_the_whole_rule():
    """Default: max(FLAT_PREFIX, n / FLAT_PREFIX_DIV) as before; a whole stream of at most
    WHOLE_SHORT_UPTO tokens: max(WHOLE_PREFIX, n / WHOLE_PREFIX_DIV); all tokens when fewer."""
    for n in (1, 500, 1024, 1500, 2048, 4096, 8191, 8192, 9000, 20000, 32768, 32769, 100000, 1 << 20):
        assert cmsignal2._prefix(n) == min(n, max(2048, n // 4))
        short = min(n, max(1024, n // 8)) if n <= 32768 else min(n, max(2048, n // 4))
        assert cmsignal2._prefix(n, True) == short
    assert cmsignal2._prefix(32768, True) == 4096 and cmsignal2._prefix(32769, True) == 8192


@pytest.mark.parametrize("n", [1500, 6000, 20000, 40000])
def test_a_whole_streams_payload_decodes(n):
    """The flags measured on the short first pass are the header's; the decoder reads them, so
    the payload decodes as any (and is the default's past WHOLE_SHORT_UPTO)."""
    from ubpe.coders import decode_stream, encode_stream

    x = _audio_like(n, 7)
    values, ids = np.unique(np.diff(x.astype(np.int64)), return_inverse=True)
    default = encode_stream(ids, len(values), coders=("cms2",))
    whole = encode_stream(ids, len(values), coders=("cms2",), whole=True)
    assert whole["coder"] == "cms2"
    np.testing.assert_array_equal(decode_stream(whole, len(values)), ids)
    if n > cmsignal2.WHOLE_SHORT_UPTO:
        assert whole == default


@pytest.mark.parametrize("n", [3000, 12000, 30000])
def test_level_2_codes_only_whole_streams_whole(cms2_calls, n):
    """Every "cms2" stream a level-2 compress asks to be coded whole holds all the values (one
    channel, a front end of one output a value); the samples its search sizes do not."""
    x = _audio_like(n, n)
    data = check_roundtrip(x, level=2, threads=1)
    assert any(whole for _, whole in cms2_calls)
    assert all(k == n for k, whole in cms2_calls if whole)
    assert all(not whole for k, whole in cms2_calls if k < n)
    assert data == ubpe.compress(x, level=2, threads=2)


def test_a_blocked_plans_sample_is_never_coded_whole(cms2_calls):
    """The blocked writer plans on a sample of windows (here 4 of 1 024 values): none of its
    candidates is a stream coded whole, and neither are its blocks."""
    x = _ecg_like(120_000, 20)
    with configured(sample=4096, windows=4):
        check_roundtrip(x, level=2, block_size=60_000, threads=1)
    assert cms2_calls and not any(whole for _, whole in cms2_calls)
