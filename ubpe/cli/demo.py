"""``ubpe demo``: the bundled ECG compressed, decompressed and compared with standard codecs."""

from __future__ import annotations

import argparse
import bz2
import lzma
import time
import zlib

import numpy as np

from .. import io as uio
from ..errors import UBPEError
from .common import ratio_text


def cmd_demo(args: argparse.Namespace) -> int:
    from .. import api as container

    values = uio.demo_signal()
    raw = values.astype("<i2").tobytes()
    print(f"demo signal: 60 s of ECG, MIT-BIH Arrhythmia Database record 208 at {uio.DEMO_RATE} Hz, "
          f"{len(values)} int16 samples = {len(raw)} bytes")
    print("(ODC-By 1.0, Moody & Mark 2001, PhysioNet; see ubpe/data/ATTRIBUTION.md)")
    rows: list[tuple[str, int, float]] = []

    # The first call of each numba kernel compiles it (cached on disk afterwards; main() said so
    # before): do that on a small slice so that the table times the compression, not the compiler.
    start = time.perf_counter()
    container.decompress(container.compress(values[:4096]))
    warm = time.perf_counter() - start
    if warm > 1.0:
        print(f"(first use: loading and compiling the kernels took {warm:.1f} s; cached for later runs)")

    start = time.perf_counter()
    packed = container.compress(values, n_tokens=args.n_tokens)
    back = container.decompress(packed)
    _check_round_trip("ubpe", np.array_equal(np.asarray(back), values) and np.asarray(back).shape == values.shape)
    rows.append(("ubpe", len(packed), time.perf_counter() - start))

    codecs = [
        ("zlib -9", lambda b: zlib.compress(b, 9), zlib.decompress),
        ("bz2 -9", lambda b: bz2.compress(b, 9), bz2.decompress),
        ("lzma -9e", lambda b: lzma.compress(b, preset=9 | lzma.PRESET_EXTREME), lzma.decompress),
    ]
    for name, enc, dec in codecs:
        start = time.perf_counter()
        out = enc(raw)
        _check_round_trip(name, dec(out) == raw)
        rows.append((name, len(out), time.perf_counter() - start))

    print()
    print(f"  {'method':<10} {'bytes':>8} {'ratio':>7} {'time':>8}   (compress + decompress)")
    for name, size, seconds in rows:
        print(f"  {name:<10} {size:>8} {ratio_text(len(raw), size):>7} {seconds:>7.2f}s")
    print()
    print(f"ratio = {len(raw)} raw bytes / compressed bytes; every round trip checked "
          "(decompressed output equals the input)")
    return 0


def _check_round_trip(name: str, ok: bool) -> None:
    if not ok:
        raise UBPEError(f"demo: the {name} round trip did not give back the input (please report this bug)")
