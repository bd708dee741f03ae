"""ubpe.peers: the codecs ubpe is measured against (``ubpe bench``, benchmarks/), each round-trip
checked.

None of them needs the shared data; the FLAC / WavPack / zpaq tests need those programs and are
skipped with the reason when they are missing.
"""

from __future__ import annotations

import struct

import numpy as np
import pytest

from ubpe import peers as _stdcodecs


@pytest.mark.parametrize("bits,lo,hi", [(8, -128, 127), (16, -32768, 32767), (24, -(1 << 23), (1 << 23) - 1)])
def test_pcm_packing_round_trips_at_the_limits(bits, lo, hi):
    x = np.array([lo, hi, 0, -1, 1, lo + 1, hi - 1], dtype=np.int32)
    assert _stdcodecs.pcm_bits(x) == bits
    raw = _stdcodecs._pcm_bytes(x, bits)
    assert len(raw) == len(x) * bits // 8
    assert np.array_equal(_stdcodecs._from_pcm(raw, bits, np.int32), x)


def test_pcm_bits_refuses_values_beyond_24_bits():
    assert _stdcodecs.pcm_bits(np.array([1 << 23], dtype=np.int32)) is None
    assert _stdcodecs.pcm_bits(np.array([-(1 << 23) - 1], dtype=np.int64)) is None


def test_wav_header_fields():
    h = _stdcodecs._wav_header(300, 24, 16000)
    assert len(h) == 44 and h[:4] == b"RIFF" and h[8:16] == b"WAVEfmt "
    size, = struct.unpack("<I", h[4:8])
    fmt = struct.unpack("<IHHIIHH", h[16:36])
    assert size == 36 + 300
    assert fmt == (16, 1, 1, 16000, 16000 * 3, 3, 24)
    assert h[36:40] == b"data" and struct.unpack("<I", h[40:44]) == (300,)
    # 8-bit .wav samples are unsigned: -128 -> 0, 0 -> 128, 127 -> 255
    assert _stdcodecs._wav_samples(np.array([-128, 0, 127], "i1").tobytes(), 8) == bytes([0, 128, 255])


def test_byte_codecs_round_trip_and_report_the_best_of_repeat():
    x = (np.arange(4000) % 37 - 18).astype(np.int16)
    rows = _stdcodecs.run_codecs(x, ["zlib-9", "bz2-9", "xz-9e"], repeat=3)
    assert [r["name"] for r in rows] == ["zlib-9", "bz2-9", "xz-9e"]
    for r in rows:
        assert len(r["runs"]["compress_s"]) == 3 and len(r["runs"]["decompress_s"]) == 3
        assert r["compress_s"] == min(r["runs"]["compress_s"])
        assert r["ratio"] == pytest.approx(x.nbytes / r["bytes"])


def test_a_missing_program_is_reported_not_silently_dropped(monkeypatch, capsys):
    monkeypatch.setattr(_stdcodecs.shutil, "which", lambda name: None)
    monkeypatch.setattr(_stdcodecs, "_warned", set())
    x = np.arange(100, dtype=np.int16)
    rows = _stdcodecs.run_codecs(x, None)
    names = {r["name"] for r in rows}
    assert not names & {"flac-8", "wavpack-hhx6", "zpaq-m5"}
    out = capsys.readouterr().out
    for codec in ("flac-8", "wavpack-hhx6", "zpaq-m5"):
        assert f"{codec} skipped" in out
    assert {name for name, _ in _stdcodecs.missing_codecs()} >= {"flac-8", "wavpack-hhx6", "zpaq-m5"}
    with pytest.raises(ValueError, match="flac"):
        _stdcodecs.run_codecs(x, ["flac-8"])


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
