"""WAV (RIFF/WAVE), read and written here: PCM 8-32 bit, float 32/64, plain or extensible."""

from __future__ import annotations

import struct
import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._validate import expect_map, field_bytes, field_int, short
from ..errors import CorruptDataError
from ._signal import SOURCE_PIECE, Signal

#: Channels a ``.wav`` file may declare (WAVE_FORMAT_WAVE_EXTENSIBLE's channel mask names 18; beyond
#: a few hundred a header is more likely damaged than real).
MAX_WAV_CHANNELS = 1024
#: Sample rate (Hz) written to a ``.wav`` file when none is given: containers keep samples, not rates.
DEFAULT_WAV_RATE = 44100
#: Bytes of the non-``data`` chunks (``fmt `` included) kept in a container's source map, in
#: pieces of the container's per-value limit; larger sets are dropped with a warning.
MAX_WAV_CHUNK_BYTES = 16 * 1024

_WAVE_PCM, _WAVE_FLOAT, _WAVE_EXTENSIBLE = 1, 3, 0xFFFE
#: The 14 bytes after the format code in the subformat GUID of WAVE_FORMAT_WAVE_EXTENSIBLE.
_GUID_TAIL = b"\x00\x00\x00\x00\x10\x00\x80\x00\x00\xaa\x00\x38\x9b\x71"
_TAG_NAMES = {2: "Microsoft ADPCM", 6: "A-law", 7: "mu-law", 0x11: "IMA ADPCM", 0x31: "GSM 6.10",
              0x50: "MPEG", 0x55: "MPEG layer 3", 0x161: "WMA"}
#: Sample dtype by (float?, bytes per sample); 3-byte samples are read into int32.
_WAV_SAMPLE = {(False, 1): np.dtype(np.uint8), (False, 2): np.dtype("<i2"), (False, 3): np.dtype("<i4"),
               (False, 4): np.dtype("<i4"), (True, 4): np.dtype("<f4"), (True, 8): np.dtype("<f8")}


@dataclass(frozen=True)
class _WavFormat:
    """The fields of a ``fmt `` chunk that decide the sample layout."""

    tag: int  # 1 PCM, 3 float, 0xFFFE extensible
    channels: int
    rate: int
    byte_rate: int
    block_align: int
    bits: int  # bits per sample of the container (8, 16, 24, 32; float 32, 64)
    valid_bits: int  # extensible's wValidBitsPerSample, else bits
    is_float: bool

    @property
    def width(self) -> int:
        return self.bits // 8


def _riff_chunks(blob: bytes, start: int, end: int, fail: Any, *, last_pad_optional: bool = False
                 ) -> list[tuple[bytes, int, int, int]]:
    """The chunks of ``blob[start:end]``: (id, body start, body end, chunk end incl. pad byte)."""
    chunks = []
    pos = start
    while pos < end:
        if end - pos < 8:
            fail(f"{end - pos} stray bytes at offset {pos} where a chunk header (8 bytes) should be")
        cid = blob[pos:pos + 4]
        size = int.from_bytes(blob[pos + 4:pos + 8], "little")
        body = pos + 8
        if size > end - body:
            fail(f"chunk {cid!r} at offset {pos} declares {size} bytes but only {end - body} remain "
                 "(truncated)")
        stop = body + size + (size & 1)
        if stop > end:
            if not (last_pad_optional and cid == b"data"):
                fail(f"chunk {cid!r} at offset {pos} has an odd size and no pad byte (truncated)")
            stop = end
        chunks.append((cid, body, body + size, stop))
        pos = stop
    return chunks


def _wav_format(body: bytes, fail: Any, float_error: Any) -> _WavFormat:
    """Parse a ``fmt `` chunk body; ``fail(msg)`` for damaged or unsupported ones."""
    if len(body) < 16:
        fail(f"the fmt chunk has {len(body)} bytes, at least 16 are needed")
    tag, channels, rate, byte_rate, block_align, bits = struct.unpack_from("<HHIIHH", body)
    code, valid = tag, bits
    if tag == _WAVE_EXTENSIBLE:
        if len(body) < 40:
            fail(f"the fmt chunk of WAVE_FORMAT_WAVE_EXTENSIBLE has {len(body)} bytes, 40 are needed")
        cb_size, valid = struct.unpack_from("<HH", body, 16)
        if cb_size < 22:
            fail(f"the fmt chunk's cbSize is {cb_size}, WAVE_FORMAT_WAVE_EXTENSIBLE needs 22")
        code = int.from_bytes(body[24:26], "little")
        if body[26:40] != _GUID_TAIL:
            fail(f"WAVE_FORMAT_WAVE_EXTENSIBLE subformat GUID {body[24:40].hex()} is not a standard one")
        if not 0 < valid <= bits:
            fail(f"valid bits per sample {valid} is not in [1, bits_per_sample = {bits}]")
    if code not in (_WAVE_PCM, _WAVE_FLOAT):
        what = _TAG_NAMES.get(code, "unknown")
        fail(f"format tag {code} ({what}) is not supported: ubpe reads integer PCM "
             "(8, 16, 24, 32 bit) and float WAV")
    is_float = code == _WAVE_FLOAT
    if is_float:
        float_error()
        if bits not in (32, 64):
            fail(f"bits_per_sample {bits} is not supported for float WAV (32 or 64)")
    elif bits not in (8, 16, 24, 32):
        fail(f"bits_per_sample {bits} is not supported (8, 16, 24 or 32)")
    if not 1 <= channels <= MAX_WAV_CHANNELS:
        fail(f"channels is {channels}, not in [1, {MAX_WAV_CHANNELS}]")
    if rate < 1:
        fail("sample rate is 0")
    if block_align != channels * bits // 8:
        fail(f"block_align is {block_align}, but {channels} channels of {bits} bits need "
             f"{channels * bits // 8}")
    return _WavFormat(tag, channels, rate, byte_rate, block_align, bits, valid, is_float)


def _wav_samples(payload: bytes, f: _WavFormat) -> np.ndarray:
    """The samples of a ``data`` chunk payload: mono 1-D, else (frames, channels)."""
    n = len(payload) // f.width
    if f.width == 3:
        padded = np.zeros((n, 4), dtype=np.uint8)
        padded[:, 1:] = np.frombuffer(payload, dtype=np.uint8).reshape(n, 3)
        values = padded.view("<i4").reshape(n) >> 8  # arithmetic shift: sign-extended, right-justified
    else:
        values = np.frombuffer(payload, dtype=_WAV_SAMPLE[f.is_float, f.width]).copy()
    values = values.astype(values.dtype.newbyteorder("="))
    return values if f.channels == 1 else values.reshape(-1, f.channels)


def read(name: str, raw: bytes | None = None) -> Signal:
    if raw is None:
        with open(name, "rb") as fh:  # FileNotFoundError as such
            raw = fh.read()

    def fail(message: str) -> None:
        raise ValueError(f"{name}: not a readable WAV file: {message}")

    if raw[:4] in (b"RF64", b"BW64"):
        fail(f"{raw[:4].decode()} (64-bit RIFF) is not supported; convert it to a RIFF WAV under 4 GiB")
    if raw[:4] == b"RIFX":
        fail("big-endian RIFX is not supported")
    if len(raw) < 12 or raw[:4] != b"RIFF" or raw[8:12] != b"WAVE":
        fail("no RIFF/WAVE header")
    riff_end = 8 + int.from_bytes(raw[4:8], "little")
    if riff_end > len(raw):
        fail(f"the RIFF header declares {riff_end} bytes but the file has {len(raw)} (truncated)")
    if riff_end < len(raw):
        warnings.warn(f"{name}: {len(raw) - riff_end} bytes after the end of the RIFF chunk are not "
                      "part of the WAV and are ignored", stacklevel=3)
    chunks = _riff_chunks(raw, 12, riff_end, fail, last_pad_optional=True)
    fmts = [c for c in chunks if c[0] == b"fmt "]
    datas = [c for c in chunks if c[0] == b"data"]
    if len(fmts) != 1 or len(datas) != 1:
        fail(f"{len(fmts)} fmt chunks and {len(datas)} data chunks (one of each is needed)")

    def float_error() -> None:
        pass  # float samples are read; compress needs step/bits unless they lie on a grid

    f = _wav_format(raw[fmts[0][1]:fmts[0][2]], fail, float_error)
    _, dstart, dend, dstop = datas[0]
    if (dend - dstart) % f.block_align:
        fail(f"the data chunk has {dend - dstart} bytes, not a multiple of block_align {f.block_align}")
    values = _wav_samples(raw[dstart:dend], f)
    data_index = chunks.index(datas[0])
    pre = b"".join(raw[c[1] - 8:c[3]] for c in chunks[:data_index])
    post = b"".join(raw[c[1] - 8:c[3]] for c in chunks[data_index + 1:])
    pad = -1 if dstop == dend else raw[dend]
    if len(pre) + len(post) > MAX_WAV_CHUNK_BYTES:
        names = [c[0].decode("latin-1") for c in chunks if c[0] not in (b"fmt ", b"data")]
        warnings.warn(f"{name}: its chunks other than data take {len(pre) + len(post)} bytes, more than "
                      f"the {MAX_WAV_CHUNK_BYTES} a container keeps: {', '.join(names)} will not be "
                      "written back (the fmt chunk is)", stacklevel=3)
        pre, post = raw[fmts[0][1] - 8:fmts[0][3]], b""
    blob = pre + post
    source: dict[str, Any] = {
        "format": "wav", "rate": f.rate, "channels": f.channels, "width": f.width, "bits": f.bits,
        "valid_bits": f.valid_bits, "float": f.is_float, "extensible": f.tag == _WAVE_EXTENSIBLE,
        "data_at": len(pre), "data_pad": pad,
    }
    for i in range(0, len(blob), SOURCE_PIECE):
        source[_piece_key(i // SOURCE_PIECE)] = blob[i:i + SOURCE_PIECE]
    return Signal(values, f.rate, source)


def _piece_key(i: int) -> str:
    return "chunks" if i == 0 else f"chunks{i}"


_WAV_KEYS = ("format", "rate", "channels", "width", "bits", "valid_bits", "float", "extensible",
             "data_at", "data_pad")


def check_source(source: dict) -> tuple[bytes, int, _WavFormat]:
    """The chunk bytes, data offset and format of a wav source map; CorruptDataError if bad."""

    def fail(message: str) -> None:
        raise CorruptDataError(f"source (wav metadata): {message}")

    n_pieces = 0
    while _piece_key(n_pieces) in source:
        n_pieces += 1
    expect_map(source, "source (wav metadata)", _WAV_KEYS, [_piece_key(i) for i in range(n_pieces)])
    for i in range(n_pieces):
        field_bytes(source, _piece_key(i), where="source (wav metadata)", max_size=SOURCE_PIECE)
    blob = b"".join(source[_piece_key(i)] for i in range(n_pieces))
    if any(len(source[_piece_key(i)]) != SOURCE_PIECE for i in range(n_pieces - 1)):
        fail("the chunk pieces are not all full but the last")
    data_at = field_int(source, "data_at", 0, len(blob), where="source (wav metadata)")
    field_int(source, "data_pad", -1, 255, where="source (wav metadata)")
    chunks = _riff_chunks(blob, 0, len(blob), fail)
    if data_at not in {0, *(c[3] for c in chunks)}:
        fail(f"data_at {data_at} is not a chunk boundary")
    if any(c[0] == b"data" for c in chunks):
        fail("a data chunk among the other chunks")
    fmts = [c for c in chunks if c[0] == b"fmt "]
    if len(fmts) != 1:
        fail(f"{len(fmts)} fmt chunks, exactly one is needed")
    f = _wav_format(blob[fmts[0][1]:fmts[0][2]], fail, lambda: None)
    stated = {k: source[k] for k in _WAV_KEYS[1:8]}
    actual = {"rate": f.rate, "channels": f.channels, "width": f.width, "bits": f.bits,
              "valid_bits": f.valid_bits, "float": f.is_float, "extensible": f.tag == _WAVE_EXTENSIBLE}
    for key, value in actual.items():
        if type(stated[key]) is not type(value) or stated[key] != value:
            fail(f"{key!r} is {short(stated[key])} but the fmt chunk says {value}")
    return blob, data_at, f


def _wav_payload(values: np.ndarray, f: _WavFormat, name: str) -> bytes:
    """``values`` as the bytes of a data chunk in format ``f`` (ValueError if they do not fit)."""
    if values.ndim not in (1, 2) or (values.ndim == 1) != (f.channels == 1) or (
            values.ndim == 2 and values.shape[1] != f.channels):
        raise ValueError(f"{name}: values of shape {values.shape} do not fit a WAV of {f.channels} "
                         "channel(s) (mono is 1-D, else (frames, channels))")
    if f.is_float:
        if values.dtype.kind != "f":
            raise TypeError(f"{name}: a float WAV needs floating-point values, got {values.dtype}")
        return np.ascontiguousarray(values, dtype=_WAV_SAMPLE[True, f.width]).tobytes()
    if values.dtype.kind not in "iub":
        raise TypeError(f"{name}: cannot write dtype {values.dtype} as integer PCM")
    if f.width == 1:
        lo, hi = 0, 255
    else:
        lo, hi = -(1 << (f.bits - 1)), (1 << (f.bits - 1)) - 1
    if values.size and (int(values.min()) < lo or int(values.max()) > hi):
        raise ValueError(f"{name}: values range from {int(values.min())} to {int(values.max())}, "
                         f"beyond {f.bits}-bit PCM [{lo}, {hi}]")
    flat = values.reshape(-1)
    if f.width == 3:
        return np.ascontiguousarray(flat.astype("<i4").view(np.uint8).reshape(-1, 4)[:, :3]).tobytes()
    return flat.astype(_WAV_SAMPLE[False, f.width]).tobytes()


def _default_wav_format(values: np.ndarray, name: str, rate: int) -> _WavFormat:
    if values.ndim not in (1, 2):
        raise ValueError(f"{name}: a WAV file holds 1-D (mono) or 2-D (frames, channels) data, got shape {values.shape}")
    channels = 1 if values.ndim == 1 else values.shape[1]
    if not 1 <= channels <= MAX_WAV_CHANNELS:
        raise ValueError(f"{name}: {channels} channels, a WAV holds 1 to {MAX_WAV_CHANNELS}")
    if values.dtype.kind == "f":
        bits, is_float = (64 if values.dtype.itemsize == 8 else 32), True
    elif values.dtype == np.uint8 or values.dtype.kind == "b":
        bits, is_float = 8, False
    elif values.dtype.kind in "iu":  # int16 and int32 as they are; others in the narrower that holds them
        bits, is_float = (32 if values.dtype == np.int32 else 16), False
        if values.size and values.dtype not in (np.dtype(np.int16), np.dtype(np.int32)):
            lo, hi = int(values.min()), int(values.max())
            if not (-(2**15) <= lo and hi < 2**15):
                bits = 32
            if not (-(2**31) <= lo and hi < 2**31):
                raise ValueError(f"{name}: values range from {lo} to {hi}, beyond 32-bit PCM; write .npy or raw instead")
    else:
        raise TypeError(f"{name}: cannot write dtype {values.dtype} as integer PCM")
    align = channels * bits // 8
    return _WavFormat(_WAVE_FLOAT if is_float else _WAVE_PCM, channels, rate, _byte_rate(rate, align), align,
                      bits, bits, is_float)


def _byte_rate(rate: int, block_align: int) -> int:
    if rate * block_align >= 2**32:
        raise ValueError(f"a WAV at {rate} Hz with {block_align}-byte frames has a byte rate beyond 32 bits")
    return rate * block_align


def _fmt_body(f: _WavFormat) -> bytes:
    return struct.pack("<HHIIHH", f.tag, f.channels, f.rate, f.byte_rate, f.block_align, f.bits)


def _check_rate(rate: Any) -> int:
    if not isinstance(rate, (int, np.integer)) or isinstance(rate, bool) or not 1 <= rate < 2**32:
        raise ValueError(f"the WAV sample rate must be an integer in [1, 2**32), got {rate!r}")
    return int(rate)


def to_bytes(values: np.ndarray, name: str, rate: int | None, source: dict | None) -> bytes:
    """A whole WAV file: laid out as ``source`` records (header and other chunks byte for byte)."""
    if source is None:
        f = _default_wav_format(values, name, DEFAULT_WAV_RATE if rate is None else _check_rate(rate))
        fmt = _fmt_body(f)
        pre, post, pad = b"fmt " + len(fmt).to_bytes(4, "little") + fmt, b"", 0
    else:
        blob, data_at, f = check_source(source)
        pad = source["data_pad"]
        if rate is not None:  # --rate overrides the recorded rate (and so the byte rate)
            rate = _check_rate(rate)
            at = next(c[1] for c in _riff_chunks(blob, 0, len(blob), None) if c[0] == b"fmt ")
            blob = blob[:at + 4] + struct.pack("<II", rate, _byte_rate(rate, f.block_align)) + blob[at + 12:]
        pre, post = blob[:data_at], blob[data_at:]
    payload = _wav_payload(values, f, name)
    if len(payload) & 1 and pad == -1 and post:
        pad = 0  # a chunk follows: the pad byte is needed
    tail = b"" if not len(payload) & 1 or pad == -1 else bytes([pad])
    body = b"WAVE" + pre + b"data" + len(payload).to_bytes(4, "little") + payload + tail + post
    if len(body) >= 2**32:
        raise ValueError(f"{name}: {len(body)} bytes do not fit in a RIFF WAV (4 GiB)")
    return b"RIFF" + len(body).to_bytes(4, "little") + body
