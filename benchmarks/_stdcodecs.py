"""Standard lossless codecs on the benchmark data, every one round-trip checked.

    run_codecs(data, names=None, *, sample_rate=...) -> list of dict(name, bytes, ratio,
                                                          compress_s, decompress_s)

``data`` is an int16 numpy array (a signal) or ``bytes`` (text). The raw size is the int16
byte size (2 per sample) or the text's byte count, and ``ratio = raw / compressed``.

Codecs (names as used in ``names=``):
    zlib-9, bz2-9, xz-9e (lzma preset 9 | PRESET_EXTREME), zstd-19 (zstandard),
    brotli-11, pcodec (pcodec.standalone.simple_compress with the default ChunkConfig),
    flac-8 (`flac -8 --no-padding --no-seektable` on a .wav written with scipy; only for
    int16 signals, only when the `flac` binary is on PATH).

The byte codecs see the little-endian int16 bytes of a signal; pcodec sees the int16 array
itself and is skipped for text (it is a numeric codec). Times are single runs (wall clock,
``perf_counter_ns``), indicative only.

(Named ``_stdcodecs`` and not ``_codecs``: ``_codecs`` is a built-in CPython module, so
``import _codecs`` would never reach a file of that name.)
"""

from __future__ import annotations

import bz2
import lzma
import shutil
import subprocess
import tempfile
import time
import zlib
from pathlib import Path
from typing import Callable

import numpy as np

ALL = ["zlib-9", "bz2-9", "xz-9e", "zstd-19", "brotli-11", "pcodec", "flac-8"]
BYTE_CODECS = ["zlib-9", "bz2-9", "xz-9e", "zstd-19", "brotli-11"]


class RoundTripError(AssertionError):
    """A codec did not give back exactly what it was given."""


def _byte_codec(name: str) -> tuple[Callable[[bytes], bytes], Callable[[bytes], bytes]]:
    if name == "zlib-9":
        return (lambda b: zlib.compress(b, 9)), zlib.decompress
    if name == "bz2-9":
        return (lambda b: bz2.compress(b, 9)), bz2.decompress
    if name == "xz-9e":
        return (lambda b: lzma.compress(b, preset=9 | lzma.PRESET_EXTREME)), lzma.decompress
    if name == "zstd-19":
        import zstandard

        c = zstandard.ZstdCompressor(level=19)
        d = zstandard.ZstdDecompressor()
        return c.compress, d.decompress
    if name == "brotli-11":
        import brotli

        return (lambda b: brotli.compress(b, quality=11)), brotli.decompress
    raise KeyError(name)


def flac_available() -> bool:
    return shutil.which("flac") is not None


def _timed(fn, *args, **kwargs):
    t0 = time.perf_counter_ns()
    out = fn(*args, **kwargs)
    return out, (time.perf_counter_ns() - t0) / 1e9


def _run_pcodec(arr: np.ndarray) -> tuple[int, float, float]:
    from pcodec import ChunkConfig, standalone

    comp, tc = _timed(standalone.simple_compress, arr, ChunkConfig())
    back, td = _timed(standalone.simple_decompress, comp)
    back = np.asarray(back)
    if back.dtype != arr.dtype or not np.array_equal(back, arr):
        raise RoundTripError("pcodec did not round-trip")
    return len(comp), tc, td


def _run_flac(arr: np.ndarray, sample_rate: int) -> tuple[int, float, float]:
    """Size of `flac -8 --no-padding --no-seektable` on the signal as a mono 16-bit .wav."""
    from scipy.io import wavfile

    with tempfile.TemporaryDirectory(prefix="ubpe-flac-") as tmp:
        wav, fl, back = (Path(tmp) / n for n in ("x.wav", "x.flac", "back.wav"))
        wavfile.write(wav, sample_rate, arr)
        cmd = ["flac", "-8", "--no-padding", "--no-seektable", "--silent", "-f", "-o", str(fl), str(wav)]
        _, tc = _timed(subprocess.run, cmd, check=True, capture_output=True)
        size = fl.stat().st_size
        cmd = ["flac", "-d", "--silent", "-f", "-o", str(back), str(fl)]
        _, td = _timed(subprocess.run, cmd, check=True, capture_output=True)
        _rate, y = wavfile.read(back)
        if y.dtype != arr.dtype or not np.array_equal(y, arr):
            raise RoundTripError("flac did not round-trip")
    return size, tc, td


def run_codecs(
    data: np.ndarray | bytes,
    names: list[str] | None = None,
    *,
    sample_rate: int = 19531,
) -> list[dict]:
    """Compress ``data`` with each codec, check it decodes back exactly, and report.

    Returns one dict per codec that applies: ``name``, ``bytes`` (compressed size),
    ``ratio`` (raw bytes / compressed bytes), ``compress_s``, ``decompress_s``.
    Codecs that do not apply are skipped silently when ``names`` is None (pcodec and FLAC
    for text, FLAC when the binary is missing); asking for one by name raises instead.
    Raises RoundTripError if any codec fails to reproduce its input.
    """
    is_text = isinstance(data, (bytes, bytearray, memoryview))
    if is_text:
        raw = bytes(data)
        arr = None
    else:
        arr = np.ascontiguousarray(data)
        if arr.ndim != 1:
            raise ValueError("run_codecs takes a 1-D signal")
        if arr.dtype != np.int16:
            raise ValueError(f"signals must be int16 (got {arr.dtype}); the ratio is against 2 bytes per value")
        raw = arr.astype("<i2", copy=False).tobytes()

    explicit = names is not None
    names = list(ALL if names is None else names)
    results = []
    for name in names:
        if name in BYTE_CODECS:
            comp_fn, dec_fn = _byte_codec(name)
            comp, tc = _timed(comp_fn, raw)
            back, td = _timed(dec_fn, comp)
            if back != raw:
                raise RoundTripError(f"{name} did not round-trip")
            size = len(comp)
        elif name == "pcodec":
            if is_text:
                if explicit:
                    raise ValueError("pcodec is a numeric codec: not run on text")
                continue
            size, tc, td = _run_pcodec(arr)
        elif name == "flac-8":
            if is_text or not flac_available():
                if explicit:
                    raise ValueError("flac-8 needs an int16 signal and the `flac` binary on PATH")
                continue
            size, tc, td = _run_flac(arr, sample_rate)
        else:
            raise KeyError(f"unknown codec {name!r}; known: {ALL}")
        results.append(
            dict(name=name, bytes=size, ratio=len(raw) / size, compress_s=tc, decompress_s=td)
        )
    return results


def run_codecs_each(signals: list[np.ndarray], names: list[str] | None = None, **kw) -> list[dict]:
    """Each signal compressed on its own, compressed sizes and times summed per codec."""
    total: dict[str, dict] = {}
    raw = 0
    for x in signals:
        raw += 2 * len(x)
        for r in run_codecs(x, names, **kw):
            t = total.setdefault(r["name"], dict(name=r["name"], bytes=0, compress_s=0.0, decompress_s=0.0))
            t["bytes"] += r["bytes"]
            t["compress_s"] += r["compress_s"]
            t["decompress_s"] += r["decompress_s"]
    out = []
    for t in total.values():
        t["ratio"] = raw / t["bytes"]
        out.append(dict(name=t["name"], bytes=t["bytes"], ratio=t["ratio"],
                        compress_s=t["compress_s"], decompress_s=t["decompress_s"]))
    return out
