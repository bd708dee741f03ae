"""The lossless codecs ubpe is compared with, every one round-trip checked: used by
:mod:`ubpe.experiments` (``ubpe bench``) and by the scripts in benchmarks/.

    run_codecs(data, names=None, *, sample_rate=..., repeat=1) -> list of dict(name, bytes,
                                                  ratio, compress_s, decompress_s, runs)
    run_codecs_each(signals, names=None, **kw)  -> the same, each signal alone, summed
    codec_versions() -> dict of codec name -> library or binary version (None: missing)

``data`` is a 1-D integer numpy array (a signal), a 2-D one (frames, channels), or ``bytes``
(text); float arrays go to the codecs that take them (the byte codecs, zpaq and pcodec). The
raw size is the array's byte size (its itemsize per value; little-endian bytes in C order,
channels interleaved, are what the byte codecs see) or the text's byte count, and ``ratio =
raw / compressed``.

Codecs (names as used in ``names=``):
    zlib-9, bz2-9, xz-9e (lzma preset 9 | PRESET_EXTREME), zstd-19 (zstandard), brotli-11,
    pcodec (pcodec.standalone.simple_compress, default ChunkConfig; signals of 16/32/64-bit
    integers), zpaq-m5 (`zpaq a ... -m5 -t1` on the raw bytes, one thread: a context-mixing archiver; the
    archive file's size, its small header included), and for signals whose values fit in
    8, 16 or 24 signed bits (the smallest that holds them): flac-8
    (`flac -8 --no-padding --no-seektable` on raw little-endian PCM, the channels of a 2-D
    array as its channels, up to FLAC's 8) and wavpack-hhx6 (`wavpack -hh -x6` on the same
    samples as a .wav; `wvunpack --raw` to decode). pcodec codes a 2-D array channel after
    channel.

Timing policy, the same for every codec: ``repeat`` compress calls and ``repeat`` decompress
calls, wall clock (``perf_counter_ns``), the best (smallest) of each is reported and all runs
are kept in ``runs``. For the external binaries a call is the whole subprocess: process
start-up and reading/writing its files in a temporary folder (on the same disk) included.

A codec that does not apply to the data (pcodec, FLAC, WavPack on text; FLAC and WavPack on
values wider than 24 bits) is skipped quietly when ``names`` is None. A codec whose package or
binary is missing is skipped with a printed message (once per process). Asking for a codec by
name that cannot run raises ValueError instead.

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

ALL = ["zlib-9", "bz2-9", "xz-9e", "zstd-19", "brotli-11", "pcodec", "zpaq-m5", "flac-8", "wavpack-hhx6"]
BYTE_CODECS = ["zlib-9", "bz2-9", "xz-9e", "zstd-19", "brotli-11"]
PCM_CODECS = ["flac-8", "wavpack-hhx6"]
BINARIES = {"zpaq-m5": ["zpaq"], "flac-8": ["flac"], "wavpack-hhx6": ["wavpack", "wvunpack"]}
PYTHON_PACKAGES = {"zstd-19": "zstandard", "brotli-11": "brotli", "pcodec": "pcodec"}

_warned: set[str] = set()


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


def missing(name: str) -> str | None:
    """Why codec ``name`` cannot run on this machine (a missing binary or package), or None."""
    for binary in BINARIES.get(name, ()):
        if shutil.which(binary) is None:
            return f"the `{binary}` binary is not on PATH (Debian: apt-get install {binary.replace('wvunpack', 'wavpack')})"
    pkg = PYTHON_PACKAGES.get(name)
    if pkg:
        import importlib.util

        if importlib.util.find_spec(pkg) is None:
            return f"the Python package `{pkg}` is not installed"
    return None


def flac_available() -> bool:
    return missing("flac-8") is None


def _binary_version(cmd: list[str]) -> str | None:
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    out = (r.stdout + r.stderr).strip().splitlines()
    return out[0].strip() if out else None


#: codec name -> its key in :func:`codec_versions` (the library or program that implements it)
VERSION_KEY = {"zlib-9": "zlib", "bz2-9": "bz2/lzma", "xz-9e": "bz2/lzma", "zstd-19": "zstandard",
               "brotli-11": "brotli", "pcodec": "pcodec", "zpaq-m5": "zpaq", "flac-8": "flac",
               "wavpack-hhx6": "wavpack"}


def codec_versions() -> dict[str, str | None]:
    """Version of each codec's library or binary on this machine (None: not installed)."""
    from importlib.metadata import PackageNotFoundError, version

    def pkg(name):
        try:
            return version(name)
        except PackageNotFoundError:
            return None

    import sys

    return {
        "zlib": zlib.ZLIB_RUNTIME_VERSION,
        "bz2/lzma": f"CPython {sys.version.split()[0]} stdlib",
        "zstandard": pkg("zstandard"),
        "brotli": pkg("brotli") or pkg("Brotli"),
        "pcodec": pkg("pcodec"),
        "zpaq": _binary_version(["zpaq"]) if shutil.which("zpaq") else None,
        "flac": _binary_version(["flac", "--version"]) if shutil.which("flac") else None,
        "wavpack": _binary_version(["wavpack", "--version"]) if shutil.which("wavpack") else None,
    }


def pcm_bits(arr: np.ndarray) -> int | None:
    """The smallest of 8, 16, 24 signed bits that holds every value, or None."""
    if arr.size == 0:
        return 8
    lo, hi = int(arr.min()), int(arr.max())
    for bits in (8, 16, 24):
        if -(1 << (bits - 1)) <= lo and hi < (1 << (bits - 1)):
            return bits
    return None


def _pcm_bytes(arr: np.ndarray, bits: int) -> bytes:
    """Signed little-endian PCM of ``bits`` bits per sample."""
    if bits == 8:
        return arr.astype("i1").tobytes()
    if bits == 16:
        return arr.astype("<i2").tobytes()
    b = arr.astype("<i4").view(np.uint8).reshape(-1, 4)[:, :3]  # low 3 bytes of each value
    return np.ascontiguousarray(b).tobytes()


def _from_pcm(raw: bytes, bits: int, dtype) -> np.ndarray:
    if bits == 8:
        return np.frombuffer(raw, dtype="i1").astype(dtype)
    if bits == 16:
        return np.frombuffer(raw, dtype="<i2").astype(dtype)
    b = np.frombuffer(raw, dtype=np.uint8).reshape(-1, 3).astype(np.int32)
    v = b[:, 0] | (b[:, 1] << 8) | (b[:, 2] << 16)
    return np.where(v >= 1 << 23, v - (1 << 24), v).astype(dtype)


def _wav_header(n_bytes: int, bits: int, rate: int, channels: int = 1) -> bytes:
    """The 44-byte header of a PCM .wav holding ``n_bytes`` of ``bits``-bit samples."""
    import struct

    block = bits // 8 * channels
    return (b"RIFF" + struct.pack("<I", 36 + n_bytes) + b"WAVEfmt "
            + struct.pack("<IHHIIHH", 16, 1, channels, rate, rate * block, block, bits)
            + b"data" + struct.pack("<I", n_bytes))


def _wav_samples(pcm: bytes, bits: int) -> bytes:
    """Signed PCM as a .wav stores it: 8-bit samples are unsigned (offset 128), wider ones signed."""
    return (np.frombuffer(pcm, dtype=np.uint8) ^ 0x80).tobytes() if bits == 8 else pcm


def _best_of(fn, repeat: int):
    runs = []
    out = None
    for _ in range(max(1, repeat)):
        t0 = time.perf_counter_ns()
        out = fn()
        runs.append((time.perf_counter_ns() - t0) / 1e9)
    return out, runs


def _run(cmd: list[str], cwd: Path) -> None:
    r = subprocess.run(cmd, cwd=cwd, capture_output=True)
    if r.returncode != 0:
        raise RuntimeError(f"{cmd[0]} failed ({r.returncode}): {r.stderr.decode(errors='replace')[-500:]}")


#: Channels FLAC codes in one stream.
FLAC_MAX_CHANNELS = 8


def _run_external(name: str, raw: bytes, bits: int, rate: int, repeat: int, channels: int = 1):
    """(compressed size, decoded bytes, compress runs, decompress runs) of one external codec."""
    with tempfile.TemporaryDirectory(prefix=f"ubpe-{name}-") as tmp:
        d = Path(tmp)
        src = d / "x.raw"
        src.write_bytes(raw)
        if name == "flac-8":
            fmt = ["--force-raw-format", "--endian=little", "--sign=signed", f"--channels={channels}",
                   f"--bps={bits}", f"--sample-rate={rate}"]
            enc = ["flac", "-8", "--no-padding", "--no-seektable", "--silent", "-f", *fmt, "-o", "x.flac", "x.raw"]
            dec = ["flac", "-d", "--silent", "-f", "--force-raw-format", "--endian=little", "--sign=signed",
                   "-o", "back.raw", "x.flac"]
            out, back = d / "x.flac", d / "back.raw"
        elif name == "wavpack-hhx6":
            # a .wav input, as WavPack is usually fed (raw PCM input costs ~30 bytes more)
            (d / "x.wav").write_bytes(_wav_header(len(raw), bits, rate, channels) + _wav_samples(raw, bits))
            enc = ["wavpack", "-hh", "-x6", "-q", "-y", "x.wav", "-o", "x.wv"]
            dec = ["wvunpack", "-q", "-y", "--raw", "x.wv", "-o", "back.raw"]
            out, back = d / "x.wv", d / "back.raw"
        elif name == "zpaq-m5":
            # zpaq appends to an archive: remove it before every timed run
            enc = ["sh", "-c", "rm -f x.zpaq && exec zpaq a x.zpaq x.raw -m5 -t1 >/dev/null"]
            dec = ["sh", "-c", "rm -rf back && exec zpaq x x.zpaq -to back -t1 >/dev/null"]
            out, back = d / "x.zpaq", d / "back" / "x.raw"
        else:
            raise KeyError(name)
        _, tc = _best_of(lambda: _run(enc, d), repeat)
        size = out.stat().st_size
        _, td = _best_of(lambda: _run(dec, d), repeat)
        return size, back.read_bytes(), tc, td


def _skip(name: str, why: str, explicit: bool) -> None:
    if explicit:
        raise ValueError(f"{name}: {why}")
    if name not in _warned:
        _warned.add(name)
        print(f"note: {name} skipped: {why}", flush=True)


def run_codecs(
    data: np.ndarray | bytes,
    names: list[str] | None = None,
    *,
    sample_rate: int = 19531,
    repeat: int = 1,
) -> list[dict]:
    """Compress ``data`` with each codec, check it decodes back exactly, and report.

    Returns one dict per codec that ran: ``name``, ``bytes`` (compressed size), ``ratio``
    (raw bytes / compressed bytes), ``compress_s`` and ``decompress_s`` (best of ``repeat``
    wall-clock runs, seconds), ``runs`` (every run). ``sample_rate`` (Hz) only goes into the
    FLAC/WavPack headers. Raises RoundTripError if a codec fails to reproduce its input.
    """
    is_text = isinstance(data, (bytes, bytearray, memoryview))
    if is_text:
        raw = bytes(data)
        arr = None
    else:
        arr = np.ascontiguousarray(data)
        if arr.ndim not in (1, 2) or arr.dtype.kind not in "iuf":
            raise ValueError(f"run_codecs takes a 1-D signal or a 2-D (frames, channels) array of integers "
                             f"or floats (got {arr.dtype} {arr.shape})")
        raw = arr.astype(arr.dtype.newbyteorder("<"), copy=False).tobytes()
    channels = 1 if is_text or arr.ndim == 1 else arr.shape[1]
    bits = None if is_text or arr.dtype.kind == "f" else pcm_bits(arr)

    explicit = names is not None
    names = list(ALL if names is None else names)
    results = []
    for name in names:
        if name not in ALL:
            raise KeyError(f"unknown codec {name!r}; known: {ALL}")
        why = missing(name)
        if why:
            _skip(name, why, explicit)
            continue
        if name in BYTE_CODECS:
            comp_fn, dec_fn = _byte_codec(name)
            comp, tc = _best_of(lambda: comp_fn(raw), repeat)
            back, td = _best_of(lambda: dec_fn(comp), repeat)
            ok = back == raw
            size = len(comp)
        elif name == "pcodec":
            if is_text or arr.dtype.itemsize < 2:
                if explicit:
                    raise ValueError("pcodec: a numeric codec for 16/32/64-bit values, not run on text or bytes")
                continue
            from pcodec import ChunkConfig, standalone

            series = np.ascontiguousarray(arr.T).reshape(-1)  # channel after channel
            comp, tc = _best_of(lambda: standalone.simple_compress(series, ChunkConfig()), repeat)
            back, td = _best_of(lambda: standalone.simple_decompress(comp), repeat)
            back = np.asarray(back)
            ok = back.dtype == arr.dtype and np.array_equal(back, series, equal_nan=arr.dtype.kind == "f")
            size = len(comp)
        elif name == "zpaq-m5":
            size, back, tc, td = _run_external(name, raw, 0, 0, repeat)
            ok = back == raw
        else:  # FLAC, WavPack
            if is_text or bits is None:
                if explicit:
                    raise ValueError(f"{name}: needs an integer signal whose values fit in 24 bits")
                continue
            if name == "flac-8" and channels > FLAC_MAX_CHANNELS:
                if explicit:
                    raise ValueError(f"{name}: codes at most {FLAC_MAX_CHANNELS} channels, these values have "
                                     f"{channels}")
                continue
            size, back, tc, td = _run_external(name, _pcm_bytes(arr.reshape(-1), bits), bits, max(1, sample_rate),
                                               repeat, channels)
            if name == "wavpack-hhx6" and bits == 8:  # wvunpack --raw writes 8-bit as unsigned (WAV rule)
                back = (np.frombuffer(back, dtype=np.uint8) ^ 0x80).tobytes()
            ok = np.array_equal(_from_pcm(back, bits, arr.dtype).reshape(arr.shape), arr)
        if not ok:
            raise RoundTripError(f"{name} did not round-trip")
        row = dict(name=name, bytes=size, ratio=len(raw) / size, compress_s=min(tc), decompress_s=min(td),
                   runs=dict(compress_s=tc, decompress_s=td))
        if name in PCM_CODECS:
            row["pcm_bits"] = bits
        results.append(row)
    return results


def run_codecs_each(signals: list, names: list[str] | None = None, **kw) -> list[dict]:
    """Each input compressed on its own; sizes and best times summed per codec.

    A codec is reported only if it ran on every input (else its sum would mean nothing).
    """
    total: dict[str, dict] = {}
    raw = 0
    for x in signals:
        raw += len(x) if isinstance(x, (bytes, bytearray)) else np.asarray(x).nbytes
        for r in run_codecs(x, names, **kw):
            t = total.setdefault(r["name"], dict(name=r["name"], bytes=0, compress_s=0.0, decompress_s=0.0, n=0))
            t["bytes"] += r["bytes"]
            t["compress_s"] += r["compress_s"]
            t["decompress_s"] += r["decompress_s"]
            t["n"] += 1
    out = []
    for t in total.values():
        if t.pop("n") != len(signals):
            print(f"note: {t['name']} did not run on every input: left out of the summed table")
            continue
        out.append(dict(name=t["name"], bytes=t["bytes"], ratio=raw / t["bytes"],
                        compress_s=t["compress_s"], decompress_s=t["decompress_s"]))
    return out


def missing_codecs() -> list[tuple[str, str]]:
    """(codec, why) for every codec in ALL that cannot run on this machine."""
    return [(name, why) for name in ALL if (why := missing(name))]
