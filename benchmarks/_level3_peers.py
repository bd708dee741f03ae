"""paq8px and Sac, the two strongest lossless signal compressors, run as external programs for
``bench_level3.py``. Neither is a dependency: build them from source yourself and point
``$UBPE_PAQ8PX`` / ``$UBPE_SAC`` at the binaries (else ``paq8px`` / ``sac`` on PATH); a missing
one is skipped with a message.

How each is fed one recording (a 1-D integer array at a sample rate):

* **16-bit PCM**: when the values fit int16 as they are, or (wider dtypes) after subtracting
  one offset (the midpoint of their range, rounded; the offset is charged as 8 bytes), they are
  written as a mono 16-bit .wav, which is what both programs' audio models need (paq8px models
  8- and 16-bit wav; Sac reads 1-16 bit wav only).
* **paq8px**: ``paq8px -8 x.wav`` (its audio model, found by its own wav detection), the true
  sample rate in the header. Values that do not fit 16 bits go as raw little-endian bytes of
  their dtype (``x.bin``: paq8px's generic model; its audio model takes no wider samples). Size:
  the whole archive (paq8px's header holds the short file name).
* **Sac**: ``sac --encode --best x.wav`` on the groups of recordings named by the caller (the
  audio by default: ``--best`` runs about 500 times Sac's decoding work, 259 s of CPU for the
  32 768 values of CRLZ_HHZ here, 0.3 % smaller than ``--normal``), ``--normal`` on the others. Sac cuts its input
  into frames of ``--framelen`` seconds (default 20) and restarts its predictors at each frame,
  so the header declares ``max(rate, 44100)`` Hz and ``--framelen`` covers the whole recording:
  one frame, as paq8px and ubpe see it (at its true 100 Hz, CRLZ_HHZ came out 27 % larger).
  Values that do not fit 16 bits: skipped (Sac reads no wider samples).

Every output is decoded by the same program and compared with the input (a failure raises).
Sizes are deterministic, so results are cached in a JSON file keyed by the program, its options
and the SHA-256 of the bytes it was fed: a rerun costs nothing for recordings already measured
(``--refresh-peers`` measures again).
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import shutil
import subprocess
import tempfile
import time
import wave
from pathlib import Path

import numpy as np

OFFSET_BYTES = 8  #: what an offset subtracted to fit 16 bits is charged


def binary(name: str) -> str | None:
    """The program's path: ``$UBPE_<NAME>`` when set, else ``name`` on PATH, else None."""
    env = os.environ.get(f"UBPE_{name.upper()}")
    if env:
        return env if os.access(env, os.X_OK) else None
    return shutil.which(name)


def as_pcm16(x: np.ndarray) -> tuple[np.ndarray | None, int]:
    """(int16 samples, offset subtracted) when the values fit 16 bits, possibly after one offset;
    (None, 0) when their range is wider than 16 bits."""
    if x.size == 0:
        return x.astype(np.int16), 0
    lo, hi = int(x.min()), int(x.max())
    if lo >= -32768 and hi <= 32767:
        return x.astype(np.int16), 0
    if hi - lo > 65535:
        return None, 0
    off = (lo + hi + 1) // 2
    y = x.astype(np.int64) - off
    if y.min() < -32768 or y.max() > 32767:
        off = lo + 32768
        y = x.astype(np.int64) - off
    return y.astype(np.int16), off


def write_wav(path: Path, x: np.ndarray, rate: int) -> None:
    with wave.open(str(path), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(int(rate))
        w.writeframes(x.astype("<i2").tobytes())


def read_wav16(path: Path) -> np.ndarray:
    with wave.open(str(path)) as w:
        return np.frombuffer(w.readframes(w.getnframes()), "<i2").astype(np.int16)


class Cache:
    """Peer results by key, kept in a JSON file (written after each new entry); ``extra`` files
    are read too (another run's cache), never written."""

    def __init__(self, path: Path, refresh: bool = False, extra: tuple = ()) -> None:
        self.path = path
        self.refresh = refresh
        self.data: dict = {}
        for p in (*extra, path):
            if Path(p).is_file():
                self.data.update(json.loads(Path(p).read_text()))

    def get(self, key: str) -> dict | None:
        return None if self.refresh else self.data.get(key)

    def put(self, key: str, value: dict) -> None:
        self.data[key] = value
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps(self.data, indent=1, sort_keys=True))
        tmp.replace(self.path)


def _run(cmd: list[str], cwd: Path, timeout: float) -> float:
    t0 = time.perf_counter()
    r = subprocess.run(cmd, cwd=cwd, capture_output=True, timeout=timeout)
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({r.returncode}): {r.stderr[-400:]!r}")
    return time.perf_counter() - t0


def _children_cpu() -> float:
    t = os.times()
    return t.children_user + t.children_system


def run_paq8px(exe: str | None, x: np.ndarray, rate: float, cache: Cache, timeout: float = 36000) -> dict | None:
    """paq8px -8 on one recording (module docstring): bytes, how it was fed, times."""
    pcm, off = as_pcm16(x)
    payload = pcm.astype("<i2").tobytes() if pcm is not None else x.astype(x.dtype.newbyteorder("<")).tobytes()
    fed = (f"16-bit wav{f' (offset {off})' if off else ''}" if pcm is not None
           else f"raw {x.dtype.itemsize * 8}-bit little-endian bytes")
    key = f"paq8px|-8|{int(rate) if pcm is not None else 0}|{hashlib.sha256(payload).hexdigest()}"
    hit = cache.get(key)
    if hit or exe is None:  # exe None: from the cache only
        return hit
    with tempfile.TemporaryDirectory(prefix="paq8px-") as tmp:
        d = Path(tmp)
        name = "x.wav" if pcm is not None else "x.bin"
        if pcm is not None:
            write_wav(d / name, pcm, max(1, round(rate)))
        else:
            (d / name).write_bytes(payload)
        c0 = _children_cpu()
        t_enc = _run([exe, "-8", name, "x.paq"], d, timeout)
        c1 = _children_cpu()
        size = (d / "x.paq").stat().st_size
        (d / "out").mkdir()
        t_dec = _run([exe, "-d", "x.paq", f"out/{name}"], d, timeout)
        c2 = _children_cpu()
        back = (d / "out" / name).read_bytes()
        if back != (d / name).read_bytes():
            raise RuntimeError("paq8px did not restore its input")
    res = dict(bytes=size + (OFFSET_BYTES if off else 0), fed=fed, profile="-8", compress_s=t_enc,
               decompress_s=t_dec, compress_cpu_s=c1 - c0, decompress_cpu_s=c2 - c1)
    cache.put(key, res)
    return res


def sac_key(pcm: np.ndarray, n: int, rate: float, profile: str) -> tuple[str, list, int, int]:
    """(cache key, options, declared rate, frame length) of Sac with ``profile`` on ``pcm``."""
    hz = max(44100, int(round(rate)))
    framelen = min(255, max(20, math.ceil(max(1, n) / hz)))
    opts = ["--encode", profile, f"--framelen={framelen}"]
    return f"sac|{' '.join(opts)}|{hz}|{hashlib.sha256(pcm.astype('<i2').tobytes()).hexdigest()}", opts, hz, framelen


def run_sac(exe: str | None, x: np.ndarray, rate: float, cache: Cache, best: bool = True,
            timeout: float = 360000) -> dict | None:
    """Sac on one recording (module docstring), or None when its values do not fit 16 bits."""
    pcm, off = as_pcm16(x)
    if pcm is None:
        return None
    profile = "--best" if best else "--normal"
    key, opts, hz, framelen = sac_key(pcm, x.size, rate, profile)
    hit = cache.get(key)
    if exe is None and not hit and best:  # from the cache only: --best, else the next strongest
        for weaker in ("--high", "--normal"):
            hit = cache.get(sac_key(pcm, x.size, rate, weaker)[0])
            if hit:
                break
    if hit or exe is None:
        return hit
    with tempfile.TemporaryDirectory(prefix="sac-") as tmp:
        d = Path(tmp)
        write_wav(d / "x.wav", pcm, hz)
        c0 = _children_cpu()
        t_enc = _run([exe, *opts, "x.wav", "x.sac"], d, timeout)
        c1 = _children_cpu()
        size = (d / "x.sac").stat().st_size
        t_dec = _run([exe, "--decode", "x.sac", "y.wav"], d, timeout)
        c2 = _children_cpu()
        if not np.array_equal(read_wav16(d / "y.wav"), pcm):
            raise RuntimeError("Sac did not restore its input")
    res = dict(bytes=size + (OFFSET_BYTES if off else 0),
               fed=f"16-bit wav at {hz} Hz{f' (offset {off})' if off else ''}, one frame",
               profile=f"{profile} --framelen={framelen}", compress_s=t_enc, decompress_s=t_dec,
               compress_cpu_s=c1 - c0, decompress_cpu_s=c2 - c1)
    cache.put(key, res)
    return res
