"""Level-2 (default) compression speed per data set, in process time on one thread:
python benchmarks/bench_level2_speed.py [--sets ecg,seismic,neural,audio,float-q] [--profile N] [--json out]

For each set, ``time.process_time`` around ``ubpe.compress(x, level=2, threads=1)`` per signal
(each compressed alone; the least of ``--repeat`` runs, 3 by default: a set's first call may
also load kernels from numba's cache, which one run would count), summed, and the containers'
bytes summed; every container is checked
to decode exactly (outside the timing). Process time, not wall clock: the project machines are
shared, and process time counts only this process's CPU (numba kernels are single-threaded
with ``threads=1``). Issue target: >= 1 M values/s on every set.

``--profile N`` also prints the N most expensive functions (cProfile, cumulative time) per set.
Sets: ecg (MIT-BIH 208), seismic (CRLZ_HHZ), neural (the first 4 recordings), audio (every
audio/*.wav alone), float-q (BW_UH4_EHZ rounded to integers, ``_data.float_quantized``).
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import pstats
import time

import numpy as np

import ubpe

try:
    from . import _data
except ImportError:  # run as a script
    import _data

SETS = ("ecg", "seismic", "neural", "audio", "float-q")


def load(name: str) -> list[np.ndarray]:
    """The signals of set ``name``, each compressed alone."""
    if name == "ecg":
        return [_data.ecg()]
    if name == "seismic":
        return [_data.seismic()]
    if name == "neural":
        return _data.neural(4)
    if name == "audio":
        return [x for x, _rate in _data.audio()]
    if name == "float-q":
        return [_data.float_quantized()]
    raise ValueError(f"unknown set {name!r}; sets: {', '.join(SETS)}")


def measure(signals: list[np.ndarray], level: int = 2, repeat: int = 1) -> dict:
    """Summed process time (per signal the least of ``repeat`` runs) and bytes of
    ``compress(x, level, threads=1)`` over ``signals``."""
    seconds, sizes = 0.0, []
    for x in signals:
        best = float("inf")
        for _ in range(repeat):
            t = time.process_time()
            data = ubpe.compress(x, level=level, threads=1)
            best = min(best, time.process_time() - t)
        seconds += best
        sizes.append(len(data))
        y = ubpe.decompress(data)
        if not (y.dtype == x.dtype and np.array_equal(y, x)):
            raise AssertionError("round trip failed")
    n = sum(x.size for x in signals)
    return dict(values=n, seconds=seconds, mvs=n / seconds / 1e6, bytes=sum(sizes), sizes=sizes)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sets", default=",".join(SETS))
    ap.add_argument("--level", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=3,
                    help="runs per signal, the fastest kept (shared machines; a first call may load kernels)")
    ap.add_argument("--profile", type=int, default=0, help="print the N most expensive functions per set")
    ap.add_argument("--json", help="write the rows to this file")
    args = ap.parse_args(argv)
    for x in (_data.ecg()[:3000], _data.ecg(), _data.audio()[0][0]):  # compile outside the timings
        ubpe.decompress(ubpe.compress(x, level=args.level, threads=1))
    rows = {}
    print(f"{'set':<10}{'values':>10}{'seconds':>9}{'M/s':>8}{'bytes':>11}", flush=True)
    for name in args.sets.split(","):
        signals = load(name)
        if args.profile:
            prof = cProfile.Profile()
            prof.enable()
        r = measure(signals, args.level, args.repeat)
        if args.profile:
            prof.disable()
        rows[name] = r
        print(f"{name:<10}{r['values']:>10}{r['seconds']:>9.2f}{r['mvs']:>8.3f}{r['bytes']:>11}", flush=True)
        if args.profile:
            out = io.StringIO()
            pstats.Stats(prof, stream=out).sort_stats("cumulative").print_stats(args.profile)
            print(out.getvalue())
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
