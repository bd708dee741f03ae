"""Level 3's search over a whole short recording (ubpe.level3.search, Settings.level3_search_*):
what it chooses decodes exactly, is never larger than what the writer chose before it, and does
not depend on threads or processes."""

from __future__ import annotations

import hashlib
import subprocess
import sys

import numpy as np
from hypothesis import given
from test_level3 import SETTINGS, round_trip, signals

import ubpe
from ubpe import level3
from ubpe.level3.search import MOVES, greedy
from ubpe.planner import settings


def plucked_string(n: int = 6000, seed: int = 1, noise: float = 3.0) -> np.ndarray:
    """A decaying harmonic tone (a plucked string at 16 kHz: 8 partials, each decaying at its own
    rate) with a little noise, int16."""
    rng = np.random.default_rng(seed)
    t = np.arange(n) / 16000.0
    x = sum(np.exp(-t * (3 + 2 * k)) * np.sin(2 * np.pi * 196.0 * (k + 1) * t + k) / (k + 1) for k in range(8))
    return (8000 * x + rng.normal(0, noise, n)).astype(np.int16)


@SETTINGS
@given(signals())
def test_searched_recordings_round_trip_and_are_never_larger_than_before(x):
    """Every dtype, 1 to 8 channels, 0 to 300 frames (constant, alternating, full-scale ...): the
    whole-recording search decodes exactly and is never larger than the writer without it
    (below 8 192 frames that wrote the default parameters behind the best front end)."""
    searched = round_trip(x)
    with settings.configured(level3_search_floor=0):
        before = round_trip(x)
    assert len(searched) <= len(before)


def test_the_search_finds_smaller_parameters_for_a_tonal_recording():
    """(the search alone: the tonal cue's change after it, ``search.tonal_change``, off; on this
    synthetic string it costs 0.9 %, results/level3-tonal.md)"""
    x = plucked_string()
    with settings.configured(level3_tonal_peak=2.0):
        searched = round_trip(x)
    with settings.configured(level3_search_floor=0, level3_tonal_peak=2.0):
        before = round_trip(x)
    assert len(searched) < len(before) * 0.99
    assert searched[5:] != before[5:]  # other parameters in the header


def test_a_recording_above_the_whole_limit_keeps_the_sampled_search():
    x = plucked_string(3000)
    with settings.configured(level3_search_whole=x.size - 1):
        above = level3.encode(x)
    with settings.configured(level3_search_floor=0):
        before = level3.encode(x)
    assert above == before


def test_greedy_descends_within_its_budget():
    """On a size that falls with every step x2 and every halving of the long NLMS filter (and
    rises with anything else), the descent follows both, then stops; it never calls the size
    more than its budget."""
    calls = []

    def size(p):
        calls.append(p)
        return 1000.0 - p["mu1"] / 100 - (256 - p["n1"]) / 10 + (p["p1"] != 32) * 50 + (p["irls"] != 16) * 50

    start = dict(level3.DEFAULTS)
    best, got = greedy(size, start, 200)
    assert best["mu1"] == 4096 and best["n1"] == 0
    assert got == size(best) < size(start)
    calls.clear()
    best, _ = greedy(size, start, 5)
    assert len(calls) == 5 and best["mu1"] == 1600
    assert len(MOVES) == len({name for name, _ in MOVES})


def test_same_bytes_from_one_and_two_threads_and_two_processes(tmp_path):
    x = np.stack([plucked_string(2500, 2, 40.0), plucked_string(2500, 3, 40.0)], axis=1)
    data = ubpe.compress(x, level=3, threads=1)
    assert ubpe.compress(x, level=3, threads=2) == data
    assert ubpe.describe(data).coders == ("mixsignal",)
    np.save(tmp_path / "x.npy", x)
    code = ("import hashlib, numpy as np, ubpe; "
            f"print(hashlib.sha256(ubpe.compress(np.load({str(tmp_path / 'x.npy')!r}), level=3)).hexdigest())")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600, check=True)
    assert out.stdout.strip() == hashlib.sha256(data).hexdigest()
    assert np.array_equal(ubpe.decompress(data), x)


def test_a_long_recording_keeps_the_defaults_unless_a_candidate_clears_the_margin():
    """Above the whole-recording limit the parameters are measured on chunks: with a margin no
    candidate can clear, the defaults are written (the bytes of no search at all)."""
    x = np.concatenate([plucked_string(4000, s, 20.0) for s in range(5)])
    with settings.configured(level3_search_whole=1000, level3_search_margin=1.0):
        kept = level3.encode(x, front=None)
    assert kept == level3.encode(x, front=None, search=False)
    with settings.configured(level3_search_whole=1000, level3_search_margin=0.0):
        round_trip(x, front=None)  # whatever a candidate's sample says, it decodes exactly
