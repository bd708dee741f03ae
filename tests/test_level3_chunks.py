"""Level 3's parameter search on chunks of a recording longer than Settings.level3_search_whole
(ubpe.level3, Settings.level3_search_chunk, _chunk_held, _lpc_margin, _descent): what it chooses decodes
exactly, the chunks' cap buys more codings, block LPC must clear its margin, and the bytes do
not depend on the process."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
from test_level3 import round_trip

from ubpe import level3
from ubpe.planner import settings

#: the chunk search on short recordings: above a whole-recording limit of 1 000 values
# (the exact-value contexts, chosen after the search, off: these tests are of the search on chunks)
CHUNKED = dict(level3_search_whole=1000, level3_xctx_sample=0)


def resonances(n: int, seed: int = 5, noise: float = 4.0) -> np.ndarray:
    """A stationary recording: white noise through two resonances (an AR(4) process) plus a
    little white noise, int16."""
    rng = np.random.default_rng(seed)
    e = rng.normal(0, 60.0, n)
    x = np.zeros(n)
    a = (2 * 0.995 * np.cos(0.05), -0.995 ** 2, 0.0, 0.0)
    b = (2 * 0.99 * np.cos(0.4), -0.99 ** 2)
    for t in range(4, n):
        x[t] = e[t] + a[0] * x[t - 1] + a[1] * x[t - 2]
    y = np.zeros(n)
    for t in range(2, n):
        y[t] = x[t] * 0.05 + b[0] * y[t - 1] + b[1] * y[t - 2]
    return np.clip(y + rng.normal(0, noise, n), -32768, 32767).astype(np.int16)


def held(n: int, hold: int = 8, seed: int = 6) -> np.ndarray:
    """A slow sine with a little noise, each value held for ``hold`` frames (an ADC read slower
    than it is sampled), int16: block LPC (forward-adaptive) codes it far smaller."""
    rng = np.random.default_rng(seed)
    t = np.arange(n // hold)
    return np.repeat(2000 * np.sin(t / 300.0) + rng.normal(0, 3, t.size), hold).astype(np.int16)


def test_chunked_searches_round_trip_under_every_switch():
    x = resonances(30000)
    for change in (dict(), dict(level3_search_chunk=1), dict(level3_search_descent=False), dict(level3_search_chunk_held=1),
                   dict(level3_search_lpc_margin=0.0), dict(level3_search_lpc_margin=1.0)):
        with settings.configured(**CHUNKED, **change):
            round_trip(x, front=None)


def test_shorter_chunks_buy_more_codings_and_never_code_a_stationary_recording_larger():
    """Chunks capped at 2 048 frames instead of n / 16 = 4 000: seven codings of them instead of
    three (the defaults and two candidates), so more candidates and the descent; on a stationary
    recording (the chunks like the whole) never larger."""
    x = resonances(64000)
    with settings.configured(**CHUNKED, level3_search_chunk=1 << 30):
        before = round_trip(x, front=None)
    with settings.configured(**CHUNKED, level3_search_chunk=2048):
        capped = round_trip(x, front=None)
    assert len(capped) <= len(before)
    with settings.configured(**CHUNKED, level3_search_chunk=2048, level3_search_descent=False):
        no_descent = round_trip(x, front=None)
    assert len(capped) <= len(no_descent)


def test_block_lpc_on_chunks_must_clear_its_margin():
    """Held values: block LPC codes them far smaller (tried second, after the least-squares mix per
    hold state); with a margin it cannot clear (100 %) the search keeps the least-squares
    predictors, larger."""
    x = held(48000)
    with settings.configured(**CHUNKED, level3_search_lpc_margin=0.0):
        taken = round_trip(x, front=None)
    with settings.configured(**CHUNKED, level3_search_lpc_margin=1.0):
        refused = round_trip(x, front=None)
    assert len(taken) < len(refused)


def test_same_bytes_in_another_process(tmp_path):
    x = resonances(40000, seed=7)
    np.save(tmp_path / "x.npy", x)
    with settings.configured(**CHUNKED, level3_search_chunk=2048):
        data = level3.encode(x)
    code = ("import numpy as np; from ubpe import level3; from ubpe.planner import settings\n"
            "with settings.configured(level3_search_whole=1000, level3_search_chunk=2048):\n"
            f"    print(level3.encode(np.load({str(tmp_path / 'x.npy')!r})).hex())")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600, check=True)
    assert out.stdout.strip() == data.hex()


def test_held_values_take_their_own_chunk_cap():
    """Held values' chunks are capped by level3_search_chunk_held, not level3_search_chunk (under
    version 4's model, where the two caps choose differently on this recording)."""
    x = held(48000)
    with settings.configured(**CHUNKED, level3_version=4, level3_search_chunk_held=2048):
        capped = round_trip(x, front=None)
    with settings.configured(**CHUNKED, level3_version=4, level3_search_chunk_held=2048, level3_search_chunk=1 << 30):
        assert level3.encode(x, front=None) == capped  # the other cap does not apply
    with settings.configured(**CHUNKED, level3_version=4, level3_search_chunk_held=1 << 30, level3_search_chunk=2048):
        other = round_trip(x, front=None)
    assert other != capped
