"""WAV files: the RIFF/WAVE reader and writer of ubpe.io, and the metadata round trip through
``ubpe compress`` / ``ubpe decompress`` (the written file equals the input byte for byte)."""

from __future__ import annotations

import struct

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import ubpe
from common import pack_any, unpack_any
from ubpe import cli
from ubpe import io as uio

GUID_TAIL = b"\x00\x00\x00\x00\x10\x00\x80\x00\x00\xaa\x00\x38\x9b\x71"


def chunk(cid: bytes, body: bytes, pad: bytes = b"\x00") -> bytes:
    return cid + struct.pack("<I", len(body)) + body + (pad if len(body) % 2 else b"")


def fmt_body(channels: int, rate: int, bits: int, *, tag: int = 1, extensible: bool = False,
             valid: int | None = None, code: int | None = None, byte_rate: int | None = None,
             block_align: int | None = None) -> bytes:
    align = channels * bits // 8 if block_align is None else block_align
    head = struct.pack("<HHIIHH", 0xFFFE if extensible else tag, channels, rate,
                       (rate * align) % 2**32 if byte_rate is None else byte_rate, align, bits)
    if not extensible:
        return head
    sub = (tag if code is None else code).to_bytes(2, "little") + GUID_TAIL
    return head + struct.pack("<HHI", 22, bits if valid is None else valid, 0) + sub


def wav_file(fmt: bytes, payload: bytes, before: bytes = b"", after: bytes = b"",
             data_pad: bytes = b"\x00") -> bytes:
    body = b"WAVE" + chunk(b"fmt ", fmt) + before + chunk(b"data", payload, data_pad) + after
    return b"RIFF" + struct.pack("<I", len(body)) + body


def samples(frames: int, channels: int, bits: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    if bits == 8:
        x = rng.integers(0, 256, (frames, channels)).astype(np.uint8)
        x[:2] = [[0], [255]]
    else:
        lo, hi = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
        x = np.cumsum(rng.integers(-50, 51, (frames, channels)), axis=0).clip(lo, hi)
        x[:2] = [[lo], [hi]]  # the extremes
        x = x.astype(np.int16 if bits == 16 else np.int32)
    return x[:, 0] if channels == 1 else x


def payload_of(x: np.ndarray, bits: int) -> bytes:
    flat = x.reshape(-1)
    if bits == 24:
        return flat.astype("<i4").view(np.uint8).reshape(-1, 4)[:, :3].tobytes()
    return flat.astype({8: "u1", 16: "<i2", 32: "<i4"}[bits]).tobytes()


LIST = chunk(b"LIST", b"INFOINAM" + struct.pack("<I", 6) + b"title\x00ISFT" + struct.pack("<I", 5) + b"ubpe\x00",
             pad=b"\x00")
ODD = chunk(b"odd ", b"abc", pad=b"\x00")


def run(capsys, *argv) -> tuple[int, str, str]:
    code = cli.main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


# ============================================================== reading


@pytest.mark.parametrize("bits", [8, 16, 24, 32])
@pytest.mark.parametrize("channels", [1, 2, 3, 8])
def test_read_values_and_fields(tmp_path, bits, channels):
    x = samples(40, channels, bits, seed=bits + channels)
    path = tmp_path / "a.wav"
    path.write_bytes(wav_file(fmt_body(channels, 48000, bits), payload_of(x, bits)))
    sig = uio.read_signal(path)
    assert sig.rate == 48000 and sig.values.shape == x.shape
    assert sig.values.dtype == {8: np.uint8, 16: np.int16, 24: np.int32, 32: np.int32}[bits]
    assert np.array_equal(sig.values, x)
    src = sig.source
    assert (src["format"], src["rate"], src["channels"], src["width"], src["bits"]) == (
        "wav", 48000, channels, bits // 8, bits)
    assert src["float"] is False and src["extensible"] is False


def test_24_bit_is_right_justified_and_sign_extended(tmp_path):
    path = tmp_path / "a.wav"
    path.write_bytes(wav_file(fmt_body(1, 8000, 24), b"\xff\xff\x7f" + b"\x00\x00\x80" + b"\xff\xff\xff" + b"\x01\x00\x00"))
    assert uio.read_values(path).tolist() == [2**23 - 1, -(2**23), -1, 1]


def test_extensible_pcm(tmp_path):
    x = samples(30, 6, 24, seed=1)
    path = tmp_path / "a.wav"
    path.write_bytes(wav_file(fmt_body(6, 96000, 24, extensible=True, valid=20), payload_of(x, 24)))
    sig = uio.read_signal(path)
    assert np.array_equal(sig.values, x)
    assert sig.source["extensible"] is True and sig.source["valid_bits"] == 20


def test_float_wav_is_read_as_floats(tmp_path):
    x = np.array([0.5, -0.25, 1.0, 0.1], dtype=np.float32)
    path = tmp_path / "f.wav"
    path.write_bytes(wav_file(fmt_body(1, 8000, 32, tag=3), x.tobytes()))
    sig = uio.read_signal(path)
    assert sig.values.dtype == np.float32 and np.array_equal(sig.values, x) and sig.source["float"] is True
    path.write_bytes(wav_file(fmt_body(2, 8000, 64, extensible=True, code=3), np.arange(4.0).tobytes()))
    assert uio.read_values(path).tolist() == [[0.0, 1.0], [2.0, 3.0]]


@pytest.mark.parametrize("make, message", [
    (lambda: wav_file(fmt_body(1, 8000, 8, tag=7), b"\x00" * 4), "format tag 7 \\(mu-law\\)"),
    (lambda: wav_file(fmt_body(1, 8000, 8, tag=6), b"\x00" * 4), "A-law"),
    (lambda: wav_file(fmt_body(1, 8000, 4, tag=0x11), b"\x00" * 4), "IMA ADPCM"),
    (lambda: wav_file(fmt_body(1, 8000, 16, extensible=True, code=7), b"\x00" * 4), "format tag 7"),
    (lambda: wav_file(fmt_body(1, 8000, 16, extensible=True)[:-1] + b"\x00", b"\x00" * 4), "GUID"),
    (lambda: b"RF64" + wav_file(fmt_body(1, 8000, 16), b"\x00" * 4)[4:], "RF64"),
    (lambda: wav_file(fmt_body(1, 8000, 16), b"\x00" * 8)[:-3], "truncated"),
    (lambda: wav_file(fmt_body(2, 8000, 16), b"\x00" * 6), "not a multiple of block_align 4"),
    (lambda: wav_file(fmt_body(2, 8000, 16, block_align=3), b"\x00" * 6), "block_align is 3"),
    (lambda: wav_file(fmt_body(1, 8000, 12), b"\x00" * 4), "bits_per_sample 12"),
    (lambda: wav_file(fmt_body(0, 8000, 16), b""), "channels is 0"),
    (lambda: wav_file(fmt_body(1, 8000, 16)[:14], b"\x00" * 4), "at least 16"),
    (lambda: wav_file(fmt_body(1, 8000, 16), b"\x00" * 4)[:30], "truncated"),
    (lambda: b"RIFF\x04\x00\x00\x00WAVE", "0 fmt chunks and 0 data chunks"),
    (lambda: b"RIFF\x00\x00", "no RIFF/WAVE header"),
    (lambda: wav_file(fmt_body(1, 8000, 16), b"\x00" * 4, after=b"LI"), "stray bytes"),
])
def test_unsupported_and_broken_files(tmp_path, make, message):
    path = tmp_path / "bad.wav"
    path.write_bytes(make())
    with pytest.raises(ValueError, match=message) as info:
        uio.read_values(path)
    assert str(path) in str(info.value)


def test_byte_rate_is_accepted_and_kept(tmp_path):
    # an inconsistent bytes_per_sec does not change the layout: accepted, written back as it was
    raw = wav_file(fmt_body(1, 8000, 16, byte_rate=12345), b"\x01\x00\x02\x00")
    path = tmp_path / "a.wav"
    path.write_bytes(raw)
    sig = uio.read_signal(path)
    uio.write_values(tmp_path / "b.wav", sig.values, source=sig.source)
    assert (tmp_path / "b.wav").read_bytes() == raw


def test_bytes_after_the_riff_chunk_are_dropped_with_a_warning(tmp_path):
    raw = wav_file(fmt_body(1, 8000, 16), b"\x01\x00\x02\x00")
    path = tmp_path / "a.wav"
    path.write_bytes(raw + b"junk")
    with pytest.warns(UserWarning, match="4 bytes after the end"):
        sig = uio.read_signal(path)
    uio.write_values(tmp_path / "b.wav", sig.values, source=sig.source)
    assert (tmp_path / "b.wav").read_bytes() == raw


def test_huge_chunks_are_dropped_with_a_warning(tmp_path):
    x = samples(10, 1, 16, seed=3)
    big = chunk(b"JUNK", b"\x00" * (uio.wav.MAX_WAV_CHUNK_BYTES + 10))
    path = tmp_path / "a.wav"
    path.write_bytes(wav_file(fmt_body(1, 8000, 16), payload_of(x, 16), before=big + LIST))
    with pytest.warns(UserWarning, match="JUNK, LIST will not be written back"):
        sig = uio.read_signal(path)
    uio.write_values(tmp_path / "b.wav", sig.values, source=sig.source)
    assert (tmp_path / "b.wav").read_bytes() == wav_file(fmt_body(1, 8000, 16), payload_of(x, 16))


# ============================================================== writing


def test_write_without_source_is_plain_pcm(tmp_path):
    path = tmp_path / "a.wav"
    uio.write_values(path, np.array([1, -2, 3], dtype=np.int16), rate=360)
    assert path.read_bytes() == wav_file(fmt_body(1, 360, 16), payload_of(np.array([1, -2, 3]), 16))
    uio.write_values(path, np.array([1, 2], dtype=np.int32), overwrite=True)
    assert uio.read_signal(path).source["bits"] == 32  # int32 as it is, not narrowed
    uio.write_values(path, np.array([1, 2], dtype=np.int64), overwrite=True)
    assert uio.read_signal(path).source["bits"] == 16  # other dtypes narrowed
    uio.write_values(path, np.array([0.5, -1.5], dtype=np.float64), overwrite=True)
    sig = uio.read_signal(path)
    assert sig.values.dtype == np.float64 and sig.values.tolist() == [0.5, -1.5] and sig.rate == uio.DEFAULT_WAV_RATE


def test_write_with_source_checks_the_values(tmp_path):
    path = tmp_path / "a.wav"
    path.write_bytes(wav_file(fmt_body(2, 8000, 24), payload_of(samples(4, 2, 24, 0), 24)))
    src = uio.read_signal(path).source
    with pytest.raises(ValueError, match="beyond 24-bit PCM"):
        uio.write_values(tmp_path / "b.wav", np.full((4, 2), 2**23, np.int32), source=src)
    with pytest.raises(ValueError, match="byte rate beyond 32 bits"):
        uio.write_values(tmp_path / "b.wav", np.zeros((3, 2), np.int32), source=src, rate=2**32 - 1)
    with pytest.raises(ValueError, match="byte rate beyond 32 bits"):
        uio.write_values(tmp_path / "b.wav", np.zeros((3, 2), np.int32), rate=2**31)
    with pytest.raises(ValueError, match="2 channel"):
        uio.write_values(tmp_path / "b.wav", np.zeros(4, np.int32), source=src)
    uio.write_values(tmp_path / "b.wav", np.zeros((3, 2), np.int32), source=src, rate=22050)
    back = uio.read_signal(tmp_path / "b.wav")
    assert back.rate == 22050 and back.source["width"] == 3 and back.values.shape == (3, 2)
    assert back.source["chunks"][12:20] == struct.pack("<II", 22050, 22050 * 6)


@given(
    channels=st.integers(1, 8),
    bits=st.sampled_from([8, 16, 24, 32]),
    rate=st.integers(1, 2**32 - 1),
    extensible=st.booleans(),
    frames=st.integers(0, 9),
    extra=st.lists(st.tuples(st.sampled_from([b"LIST", b"fact", b"cue ", b"odd "]), st.binary(max_size=9),
                             st.booleans()), max_size=3),
    byte_rate=st.one_of(st.none(), st.integers(0, 2**32 - 1)),
    data_pad=st.sampled_from([b"\x00", b"\x7f", b""]),
    seed=st.integers(0, 2**32 - 1),
)
def test_property_read_then_write_gives_the_same_bytes(tmp_path_factory, channels, bits, rate, extensible,
                                                       frames, extra, byte_rate, data_pad, seed):
    x = samples(max(frames, 2), channels, bits, seed)[:frames]
    before = b"".join(chunk(c, b) for c, b, first in extra if first)
    after = b"".join(chunk(c, b) for c, b, first in extra if not first)
    payload = payload_of(x, bits)
    if len(payload) % 2 and data_pad == b"" and after:
        data_pad = b"\x00"  # a pad byte may be missing only at the end of the file
    raw = wav_file(fmt_body(channels, rate, bits, extensible=extensible, byte_rate=byte_rate), payload,
                   before, after, data_pad)
    path = tmp_path_factory.mktemp("w") / "a.wav"
    path.write_bytes(raw)
    sig = uio.read_signal(path)
    assert np.array_equal(sig.values, x) and sig.values.shape == x.shape
    uio.write_values(path, sig.values, source=sig.source, overwrite=True)
    assert path.read_bytes() == raw


# ============================================================== through the command line


@pytest.mark.parametrize("rate, channels, bits, extensible, before, after", [
    (8000, 1, 8, False, b"", b""),
    (44100, 2, 16, False, LIST, b""),
    (48000, 2, 24, True, b"", LIST),
    (96000, 4, 32, True, ODD, ODD + LIST),
    (192000, 8, 24, False, LIST + ODD, b""),
    (44100, 1, 24, False, b"", b""),  # odd data size: a pad byte after the samples
])
def test_cli_round_trip_is_byte_exact(capsys, tmp_path, rate, channels, bits, extensible, before, after):
    frames = 301
    x = samples(frames, channels, bits, seed=rate + bits)
    raw = wav_file(fmt_body(channels, rate, bits, extensible=extensible), payload_of(x, bits), before, after)
    src, packed, out = tmp_path / "in.wav", tmp_path / "x.ubpe", tmp_path / "out.wav"
    src.write_bytes(raw)
    code, _, err = run(capsys, "-q", "compress", src, "-o", packed, "--level", "1")
    assert code == 0, err
    assert err == ""  # no "rate is dropped" note any more
    info = ubpe.describe(packed.read_bytes())
    assert info.source["rate"] == rate and info.source["channels"] == channels and info.source["bits"] == bits
    code, _, err = run(capsys, "-q", "decompress", packed, "-o", out)
    assert code == 0, err
    assert out.read_bytes() == raw
    back = uio.read_signal(out)
    assert back.source == uio.read_signal(src).source and np.array_equal(back.values, x)
    code, text, _ = run(capsys, "inspect", packed)
    assert code == 0 and f"wav, {rate} Hz, {channels} channel(s), {bits}-bit PCM" in text


def test_cli_rate_overrides_and_other_outputs(capsys, tmp_path):
    x = samples(200, 2, 24, seed=5)
    src, packed = tmp_path / "in.wav", tmp_path / "x.ubpe"
    src.write_bytes(wav_file(fmt_body(2, 48000, 24), payload_of(x, 24), LIST))
    assert run(capsys, "-q", "compress", src, "-o", packed, "--level", "1")[0] == 0
    assert run(capsys, "-q", "decompress", packed, "-o", tmp_path / "r.wav", "--rate", "8000")[0] == 0
    back = uio.read_signal(tmp_path / "r.wav")
    assert back.rate == 8000 and back.source["width"] == 3 and np.array_equal(back.values, x)
    assert back.source["chunks"].endswith(LIST)
    assert run(capsys, "-q", "decompress", packed, "-o", tmp_path / "r.npy")[0] == 0
    assert np.array_equal(np.load(tmp_path / "r.npy"), x)


def _with_source(data: bytes, source) -> bytes:
    """The container ``data`` with its source metadata replaced."""
    d = unpack_any(data)
    d["source"] = source
    return pack_any(d)


@pytest.mark.parametrize("change", [
    lambda s: {**s, "rate": s["rate"] + 1},  # disagrees with the fmt chunk
    lambda s: {**s, "channels": 1},
    lambda s: {**s, "width": 4},
    lambda s: {**s, "float": 1},
    lambda s: {**s, "data_at": 3},
    lambda s: {**s, "data_pad": 256},
    lambda s: {**s, "chunks": s["chunks"][:-2]},
    lambda s: {**s, "chunks": s["chunks"].replace(b"fmt ", b"data")},
    lambda s: {**s, "chunks": s["chunks"].replace(b"\x01\x00\x02\x00", b"\x07\x00\x02\x00")},
    lambda s: {k: v for k, v in s.items() if k != "bits"},
    lambda s: {**s, "chunks1": b"\x00"},
    lambda s: {**s, "unknown": 1},
])
def test_cli_corrupt_source_map_is_a_data_error(capsys, tmp_path, change):
    x = samples(100, 2, 16, seed=9)
    src, packed = tmp_path / "in.wav", tmp_path / "x.ubpe"
    src.write_bytes(wav_file(fmt_body(2, 44100, 16), payload_of(x, 16), LIST))
    assert run(capsys, "-q", "compress", src, "-o", packed, "--level", "1")[0] == 0
    data = packed.read_bytes()
    bad = _with_source(data, change(ubpe.describe(data).source))
    packed.write_bytes(bad)
    with pytest.raises(ubpe.CorruptDataError, match="source"):
        uio.check_source(ubpe.describe(bad).source)
    code, _, err = run(capsys, "decompress", packed, "-o", tmp_path / "out.wav")
    assert code == 1 and "Traceback" not in err
    assert "x.ubpe" in err and "source (wav metadata)" in err
    assert not (tmp_path / "out.wav").exists()


def test_cli_float_wav_off_a_grid_is_lossless_or_quantized(capsys, tmp_path):
    x = np.random.default_rng(4).normal(size=(500, 2))  # float64, off any exact grid
    src = tmp_path / "f.wav"
    src.write_bytes(wav_file(fmt_body(2, 44100, 64, tag=3), x.tobytes()))
    assert run(capsys, "-q", "compress", src, "-o", tmp_path / "l.ubpe")[0] == 0  # lossless by default
    assert run(capsys, "-q", "decompress", tmp_path / "l.ubpe", "-o", tmp_path / "l.wav")[0] == 0
    assert (tmp_path / "l.wav").read_bytes() == src.read_bytes()
    assert run(capsys, "-q", "compress", src, "-o", tmp_path / "f.ubpe", "--step", "0.001", "--level", "1")[0] == 0
    assert run(capsys, "-q", "decompress", tmp_path / "f.ubpe", "-o", tmp_path / "g.wav")[0] == 0
    back = uio.read_signal(tmp_path / "g.wav")
    assert back.source == uio.read_signal(src).source  # float WAV, 64-bit, same header
    assert back.values.dtype == np.float64 and np.abs(back.values - x).max() <= 0.0005 * (1 + 1e-6)
