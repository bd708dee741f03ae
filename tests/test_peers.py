"""ubpe.peers: the codecs ubpe is measured against (``ubpe bench``, benchmarks/), each round-trip
checked.

None of them needs the shared data; the FLAC / WavPack / zpaq tests need those programs and are
skipped with the reason when they are missing.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from ubpe import peers as _stdcodecs


@pytest.mark.parametrize("bits,lo,hi", [(8, -128, 127), (16, -32768, 32767), (24, -(1 << 23), (1 << 23) - 1)])
def test_pcm_bits_is_the_narrowest_width_that_holds_the_values(bits, lo, hi):
    x = np.array([lo, hi, 0, -1, 1, lo + 1, hi - 1], dtype=np.int32)
    assert _stdcodecs.pcm_bits(x) == bits
    assert _stdcodecs.pcm_bits(np.array([hi + 1], np.int64)) == (None if bits == 24 else bits + 8)


def test_pcm_bits_refuses_values_beyond_24_bits():
    assert _stdcodecs.pcm_bits(np.array([1 << 23], dtype=np.int32)) is None
    assert _stdcodecs.pcm_bits(np.array([-(1 << 23) - 1], dtype=np.int64)) is None


@pytest.mark.parametrize("codec", ["flac-8", "wavpack-hhx6"])
@pytest.mark.parametrize("bits,lo,hi", [(8, -128, 127), (16, -32768, 32767), (24, -(1 << 23), (1 << 23) - 1)])
def test_pcm_codecs_round_trip_the_limits_of_each_width(codec, bits, lo, hi):
    """The PCM peers get the values as a mono .wav of the narrowest width (8-bit samples stored
    unsigned, as .wav does; 24-bit ones as three bytes): the extremes come back exactly."""
    why = _stdcodecs.missing(codec)
    if why:
        pytest.skip(why)
    x = np.tile(np.array([lo, hi, 0, -1, 1, lo + 1, hi - 1], dtype=np.int32), 50)
    (row,) = _stdcodecs.run_codecs(x, [codec], sample_rate=16000)  # raises RoundTripError if not exact
    assert row["bytes"] > 0


def test_byte_codecs_round_trip_and_report_the_best_of_repeat():
    x = (np.arange(4000) % 37 - 18).astype(np.int16)
    rows = _stdcodecs.run_codecs(x, ["zlib-9", "bz2-9", "xz-9e"], repeat=3)
    assert [r["name"] for r in rows] == ["zlib-9", "bz2-9", "xz-9e"]
    for r in rows:
        assert len(r["runs"]["compress_s"]) == 3 and len(r["runs"]["decompress_s"]) == 3
        assert r["compress_s"] == min(r["runs"]["compress_s"])
        assert r["ratio"] == pytest.approx(x.nbytes / r["bytes"])


def test_a_missing_program_is_reported_not_silently_dropped():
    """With no program on the PATH (a new process: each missing codec is noted once per process)."""
    code = ("import json, numpy as np\n"
            "from ubpe import peers\n"
            "x = np.arange(100, dtype=np.int16)\n"
            "print(json.dumps([r['name'] for r in peers.run_codecs(x, None)]))\n"
            "print(json.dumps([name for name, _ in peers.missing_codecs()]))\n"
            "try:\n"
            "    peers.run_codecs(x, ['flac-8'])\n"
            "except ValueError as e:\n"
            "    print('refused:', e)\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                          env=dict(os.environ, PATH=""))
    assert done.returncode == 0, done.stderr[-2000:]
    out = done.stdout
    for codec in ("flac-8", "wavpack-hhx6", "zpaq-m5"):
        assert f"{codec} skipped" in out
    ran, missing, refused = out.splitlines()[-3:]
    assert not set(json.loads(ran)) & {"flac-8", "wavpack-hhx6", "zpaq-m5"} and "zlib-9" in json.loads(ran)
    assert set(json.loads(missing)) >= {"flac-8", "wavpack-hhx6", "zpaq-m5"}
    assert refused.startswith("refused: flac-8")


def test_each_sums_only_codecs_that_ran_on_every_input():
    xs = [np.arange(50, dtype=np.int16), np.arange(70, dtype=np.int16)]
    rows = _stdcodecs.run_codecs_each(xs, ["zlib-9"])
    single = [_stdcodecs.run_codecs(x, ["zlib-9"])[0]["bytes"] for x in xs]
    assert rows[0]["bytes"] == sum(single)
    assert rows[0]["ratio"] == pytest.approx(240 / sum(single))


@pytest.mark.parametrize("codec", ["flac-8", "wavpack-hhx6", "zpaq-m5"])
@pytest.mark.parametrize("dtype,scale", [(np.int8, 1), (np.int16, 300), (np.int32, 2000)])
def test_external_codecs_round_trip(codec, dtype, scale):
    why = _stdcodecs.missing(codec)
    if why:
        pytest.skip(why)
    rng = np.random.default_rng(7)
    x = np.clip(np.cumsum(rng.integers(-3, 4, 3000)) * scale, np.iinfo(dtype).min, np.iinfo(dtype).max)
    x = x.astype(dtype)
    if codec != "zpaq-m5":
        assert _stdcodecs.pcm_bits(x) in (8, 16, 24)
    (row,) = _stdcodecs.run_codecs(x, [codec], sample_rate=1000)  # raises RoundTripError if not exact
    assert row["bytes"] > 0 and row["ratio"] == pytest.approx(x.nbytes / row["bytes"])
