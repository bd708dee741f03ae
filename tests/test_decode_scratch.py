"""The fused decoder's output buffer, one per thread and container (``reader.Shared.int64_buffer``,
``mag.decode_with_lpc(out=)``): the same values as a fresh array, in blocked containers decoded
on one thread and on two (blocks sharing a thread's buffer one after the other), and a wrong
``out`` refused."""

from __future__ import annotations

import os

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ubpe
from ubpe.coders import mag

SETTINGS = settings(deadline=None, max_examples=int(os.environ.get("UBPE_MAX_EXAMPLES", "25")),
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@SETTINGS
@given(st.integers(0, 2**32 - 1), st.sampled_from(["walk", "sparse", "tone"]), st.sampled_from([1, 2]),
       st.integers(300, 5000), st.sampled_from([1, 2]))
def test_blocked_fused_decode_round_trips(seed, kind, channels, frames, threads):
    rng = np.random.default_rng(seed)
    if kind == "walk":  # level 1: "lpc" behind "mag" (bursts: the coder's contexts pay)
        t = np.arange(frames)[:, None]
        x = (3000 * np.sin(t / 40.0) + np.where((t // 300) % 2, 300.0, 2.0)
             * rng.laplace(size=(frames, channels))).astype(np.int16)
    elif kind == "sparse":  # level 1: "rank+delta1" (values on an irregular sparse set)
        levels = np.sort(rng.choice(30000, 40, replace=False)).astype(np.int16)
        x = levels[np.clip(np.cumsum(rng.integers(-1, 2, (frames, channels)), axis=0) + 20, 0, 39)]
    else:
        t = np.arange(frames)[:, None]
        x = (2000 * np.sin(t / (7.0 + np.arange(channels))) + rng.normal(0, 5, (frames, channels))).astype(np.int16)
    if channels == 1:
        x = x[:, 0]
    block = max(64, frames // 3)  # several blocks: a thread's buffer serves each in turn
    data = ubpe.compress(x, level=1, block_size=block * channels, threads=1)
    assert np.array_equal(ubpe.decompress(data, threads=threads), x)


def test_decode_with_lpc_out_is_the_fresh_array():
    rng = np.random.default_rng(3)
    t = np.arange(3000)
    x = (3000 * np.sin(t / 40.0) + np.where((t // 300) % 2, 300.0, 2.0) * rng.laplace(size=3000)).astype(np.int16)
    data = ubpe.compress(x, level=1, predictor="lpc", threads=1)
    from ubpe.format import container
    from ubpe.frontend import lpc

    p = container.parse(data, 1 << 40)
    assert p.stream["coder"] == "mag"
    parsed, _ = lpc.fused_params(p.chain[-1])
    fresh = mag.decode_with_lpc(p.stream, p.a, p.values.table, p.values.lo, 16, parsed)
    buf = np.full(3000, -7, np.int64)  # (its contents do not matter)
    got = mag.decode_with_lpc(p.stream, p.a, p.values.table, p.values.lo, 16, parsed, out=buf)
    assert got is buf and np.array_equal(got, fresh)
    assert np.array_equal(fresh.astype(np.int16), x)
    for bad in (np.empty(2999, np.int64), np.empty(3000, np.int32), np.empty(6000, np.int64)[::2]):
        with pytest.raises(ValueError):
            mag.decode_with_lpc(p.stream, p.a, p.values.table, p.values.lo, 16, parsed, out=bad)


def test_blocks_share_one_buffer(monkeypatch):
    # a blocked container decoded on one thread: every block's fused decode writes the same buffer
    rng = np.random.default_rng(1)
    t = np.arange(20000)
    x = (3000 * np.sin(t / 40.0) + np.where((t // 300) % 2, 300.0, 2.0) * rng.laplace(size=t.size)).astype(np.int16)
    data = ubpe.compress(x, level=1, block_size=5000, threads=1)
    bases = []
    original = mag.decode_with_lpc

    def spy(*args, **kwargs):
        bases.append(kwargs["out"].base if kwargs["out"].base is not None else kwargs["out"])
        return original(*args, **kwargs)

    monkeypatch.setattr(mag, "decode_with_lpc", spy)
    assert np.array_equal(ubpe.decompress(data, threads=1), x)
    assert len(bases) == 4 and all(b is bases[0] for b in bases)
