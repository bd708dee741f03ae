"""Residual coders against FLAC -8: ubpe.compress at level 1 and 2 on the signals (prints only).

    python benchmarks/bench_coders.py                 # every signal below
    python benchmarks/bench_coders.py --data audio seismic --levels 1

Signals (benchmarks/_data.py; "each": every file compressed alone, sizes and times summed):
audio (32 wav), seismic, ecg, float-q (BW_UH4_EHZ quantized as round(x / 1.0)), neural24 (the
first 24 recordings, each alone). ratio = raw bytes of the integer array (int16) / compressed
bytes. Times are one wall-clock call each after a warm-up call on the first input (numba
compilation excluded); M values/s summed over the files. ``coders`` counts the entropy coder
each container chose (``ubpe.container.describe(c).coder``; "+merges" when it has merges). FLAC runs as ``flac -8
--no-padding --no-seektable`` (benchmarks/_stdcodecs.py), round trip checked.
"""

from __future__ import annotations

import argparse
import collections
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import _data  # noqa: E402
import _stdcodecs  # noqa: E402

import ubpe  # noqa: E402
from ubpe import container  # noqa: E402


def signals(name: str) -> tuple[list[np.ndarray], int]:
    if name == "audio":
        pairs = _data.audio()
        return [x for x, _ in pairs], pairs[0][1]
    if name == "seismic":
        return [_data.seismic()], 100
    if name == "ecg":
        return [_data.ecg()], 360
    if name == "float-q":
        return [_data.float_quantized(1.0)], 100
    if name == "neural24":
        return _data.neural(24), 19531
    raise KeyError(name)


def run_ubpe(xs: list[np.ndarray], level: int) -> dict:
    ubpe.decompress(ubpe.compress(xs[0], level=level))  # warm-up (compilation)
    size = 0
    tc = td = 0.0
    coders: collections.Counter = collections.Counter()
    for x in xs:
        t0 = time.perf_counter()
        c = ubpe.compress(x, level=level)
        t1 = time.perf_counter()
        y = ubpe.decompress(c)
        t2 = time.perf_counter()
        if not np.array_equal(np.asarray(y), x):
            raise AssertionError("ubpe did not round-trip")
        size += len(c)
        tc += t1 - t0
        td += t2 - t1
        info = container.describe(c)
        coders[info.coder + ("+merges" if info.n_merges else "")] += 1
    return dict(bytes=size, comp_s=tc, dec_s=td, coders=dict(coders))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", nargs="*", default=["audio", "seismic", "ecg", "float-q", "neural24"])
    ap.add_argument("--levels", nargs="*", type=int, default=[1, 2])
    ap.add_argument("--no-flac", action="store_true")
    ap.add_argument("--without-mag", action="store_true",
                    help='the planner as before the "mag" coder: no "mag", no bare/dense id candidates')
    args = ap.parse_args()
    if args.without_mag:
        from ubpe import planner

        planner.LEVEL_CODERS.update({1: ("rans", "packed", "const"), 2: ("rans", "packed", "const", "cm")})
        planner.LEVEL1_VARIANTS = ()
    print(f"{'data':10} {'row':8} {'bytes':>9} {'ratio':>7} {'comp Mv/s':>9} {'dec Mv/s':>9}  coders")
    for name in args.data:
        xs, rate = signals(name)
        raw = sum(x.nbytes for x in xs)
        nval = sum(x.size for x in xs)
        for level in args.levels:
            r = run_ubpe(xs, level)
            print(f"{name:10} {'level' + str(level):8} {r['bytes']:9d} {raw / r['bytes']:7.3f} "
                  f"{nval / r['comp_s'] / 1e6:9.2f} {nval / r['dec_s'] / 1e6:9.2f}  {r['coders']}", flush=True)
        if not args.no_flac and _stdcodecs.flac_available():
            rows = _stdcodecs.run_codecs_each(xs, ["flac-8"], sample_rate=rate)
            for f in rows:
                print(f"{name:10} {'flac-8':8} {f['bytes']:9d} {f['ratio']:7.3f} "
                      f"{nval / f['compress_s'] / 1e6:9.2f} {nval / f['decompress_s'] / 1e6:9.2f}", flush=True)


if __name__ == "__main__":
    main()
