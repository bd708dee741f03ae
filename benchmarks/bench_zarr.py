"""A zarr array (format 2, on disk) compressed by ubpe against numcodecs' Blosc(zstd) and
pcodec in the same run: write and read throughput and the stored size.

    python benchmarks/bench_zarr.py [--values N] [--chunk C]

Data: the 120 neural recordings concatenated and repeated to ``--values`` int16 values (default
2**24 = 16.8 M), chunks of ``--chunk`` values (default 2**20). Codecs: ``ubpe.codec.UBPECodec``
at level 1 and 2 (each chunk fitted on its own), ``UBPECodec(level=1, model=...)`` with one
model fitted on the first chunk and carried in the array's metadata (chunks hold its digest),
``Blosc(cname="zstd", clevel=5, shuffle=SHUFFLE)``, and ``PCodec()`` when numcodecs has it.
Times: one wall-clock run each of ``z[:] = x`` and ``z[:]`` (zarr's default, no thread pool of
ours), in values per second; every read is checked against the array.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _data  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--values", type=int, default=1 << 24)
    ap.add_argument("--chunk", type=int, default=1 << 20)
    args = ap.parse_args(argv)

    import numcodecs
    import zarr

    import ubpe
    from ubpe.codec import UBPECodec

    x = np.resize(np.concatenate(_data.neural(None)), args.values).astype(np.int16)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        model = ubpe.Tokenizer(None, 1024).fit(x[: args.chunk], predictor="auto")
    codecs = {
        "ubpe level 1": UBPECodec(level=1),
        "ubpe level 2": UBPECodec(level=2),
        "ubpe level 1, shared model": UBPECodec(level=1, model=model),
        "Blosc(zstd, 5, shuffle)": numcodecs.Blosc(cname="zstd", clevel=5, shuffle=numcodecs.Blosc.SHUFFLE),
    }
    try:
        from numcodecs.pcodec import PCodec

        codecs["pcodec"] = PCodec()
    except ImportError as e:
        print(f"note: pcodec skipped: {e}")
    ubpe.decompress(ubpe.compress(x[:5000]))  # compile outside the timings
    print(f"{x.size} int16 values ({x.nbytes} bytes; the 120 neural recordings repeated), chunks of {args.chunk}")
    print(f"{'codec':30} {'stored bytes':>13} {'ratio':>7} {'write Mv/s':>11} {'read Mv/s':>10}")
    tmp = Path(tempfile.mkdtemp(prefix="ubpe-bench-zarr-"))
    try:
        for name, codec in codecs.items():
            path = tmp / (name.replace(" ", "_").replace(",", "") + ".zarr")
            z = zarr.create_array(str(path), shape=x.shape, chunks=(args.chunk,), dtype=x.dtype, zarr_format=2,
                                  compressors=codec)
            t0 = time.perf_counter()
            z[:] = x
            tw = time.perf_counter() - t0
            r = zarr.open_array(str(path), mode="r")
            t0 = time.perf_counter()
            back = r[:]
            tr = time.perf_counter() - t0
            if not np.array_equal(back, x):
                raise AssertionError(f"{name}: the array did not read back")
            stored = sum(f.stat().st_size for f in path.rglob("*") if f.is_file())
            print(f"{name:30} {stored:>13} {x.nbytes / stored:7.3f} {x.size / tw / 1e6:11.2f} {x.size / tr / 1e6:10.2f}",
                  flush=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
