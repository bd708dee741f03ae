"""Loaders for the shared real data sets used by the benchmarks.

The data lives outside the repository (it is not ours to bundle): by default in
``<repo>/../shared/data`` (``/work/shared/data`` on the project machines), or wherever the
environment variable ``UBPE_DATA`` points.  See ``README.md`` and the ``PROVENANCE.md`` files
there for what each file is, where it comes from and its licence.

    neural(n_files=24) -> list of int16 arrays, one per recording (sorted file names)
    ecg()              -> int16 array, MIT-BIH record 208 (108 000 samples)
    seismic()          -> int16 array, CRLZ_HHZ.npy (32 768 counts at 100 Hz)
    audio()            -> list of (int16 array, sample rate), audio/*.wav in sorted name order
    float_quantized(step=FLOAT_STEP) -> integer array, BW_UH4_EHZ.npy rounded to multiples of step
    text()             -> bytes, taylorswift.txt (185 768 bytes, UTF-8)
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent


class DataMissingError(FileNotFoundError):
    """The shared data directory (or one of its files) is not where we expect it."""


def data_dir() -> Path:
    """The shared data directory: ``$UBPE_DATA`` or ``<repo>/../shared/data``."""
    env = os.environ.get("UBPE_DATA")
    path = Path(env) if env else REPO.parent / "shared" / "data"
    if not path.is_dir():
        how = f"UBPE_DATA={env!r}" if env else "the default location"
        raise DataMissingError(
            f"benchmark data directory not found: {path} (from {how}). "
            "Set UBPE_DATA to the folder that holds neural/, ecg/ and text/."
        )
    return path


def _file(*parts: str) -> Path:
    path = data_dir().joinpath(*parts)
    if not path.is_file():
        raise DataMissingError(f"benchmark data file not found: {path}")
    return path


def neural_files(n_files: int | None = 24) -> list[Path]:
    """Paths of the first ``n_files`` recordings in byte-wise sorted name order (None: all)."""
    folder = data_dir() / "neural"
    files = sorted(folder.glob("*.wav"), key=lambda p: p.name.encode())
    if not files:
        raise DataMissingError(f"no .wav files in {folder}")
    if n_files is not None:
        if n_files > len(files):
            raise DataMissingError(f"asked for {n_files} neural files, {folder} has {len(files)}")
        files = files[:n_files]
    return files


def neural(n_files: int | None = 24) -> list[np.ndarray]:
    """The first ``n_files`` neural recordings (None: all 120), each a 1-D int16 array."""
    from scipy.io import wavfile

    out = []
    for path in neural_files(n_files):
        _rate, x = wavfile.read(path)
        if x.dtype != np.int16 or x.ndim != 1:
            raise ValueError(f"{path}: expected mono int16 PCM, got {x.dtype} {x.shape}")
        out.append(np.ascontiguousarray(x))
    return out


def neural_rate(path: Path | None = None) -> int:
    """Sample rate of a neural recording (19 531 Hz); used to write .wav for FLAC."""
    from scipy.io import wavfile

    rate, _ = wavfile.read(path or neural_files(1)[0])
    return int(rate)


def ecg() -> np.ndarray:
    """MIT-BIH record 208, first channel: 108 000 raw 11-bit ADC values as int16."""
    x = np.load(_file("ecg", "mitbih_208.npy"))
    return np.ascontiguousarray(x.astype(np.int16, copy=False))


def seismic() -> np.ndarray:
    """CRLZ_HHZ.npy: a broadband seismometer, 32 768 int16 counts at 100 Hz."""
    x = np.load(_file("seismic", "CRLZ_HHZ.npy"))
    return np.ascontiguousarray(x.astype(np.int16, copy=False))


def audio() -> list[tuple[np.ndarray, int]]:
    """Every audio/*.wav (byte-wise sorted names): (1-D int16 samples, sample rate) each."""
    from scipy.io import wavfile

    folder = data_dir() / "audio"
    files = sorted(folder.glob("*.wav"), key=lambda p: p.name.encode())
    if not files:
        raise DataMissingError(f"no .wav files in {folder}")
    out = []
    for path in files:
        rate, x = wavfile.read(path)
        if x.dtype != np.int16 or x.ndim != 1:
            raise ValueError(f"{path}: expected mono int16 PCM, got {x.dtype} {x.shape}")
        out.append((np.ascontiguousarray(x), int(rate)))
    return out


#: Quantization step of the float seismogram: 1.0 keeps its integer part (values -10 433..4 360,
#: so int16) and drops the 1e-6-scale fractions the instrument correction left.
FLOAT_STEP = 1.0


def float_quantized(step: float = FLOAT_STEP) -> np.ndarray:
    """BW_UH4_EHZ.npy (23 033 float64 samples) as ``round(x / step)``: int16 when it fits, else int32."""
    if not step > 0:
        raise ValueError(f"step must be positive, got {step}")
    q = np.rint(np.load(_file("float", "BW_UH4_EHZ.npy")) / step)
    for dtype in (np.int16, np.int32):
        info = np.iinfo(dtype)
        if q.min() >= info.min and q.max() <= info.max:
            return q.astype(dtype)
    raise ValueError(f"step {step} leaves values beyond 32 bits")


def text() -> bytes:
    """taylorswift.txt (a Wikipedia article, UTF-8) as bytes."""
    return _file("text", "taylorswift.txt").read_bytes()


def text_ids() -> np.ndarray:
    """The text as an array of byte values (uint8), for tokenizers over the alphabet 0..255."""
    return np.frombuffer(text(), dtype=np.uint8).copy()

