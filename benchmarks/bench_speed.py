"""Speed of compress/decompress per level on the shared signals, and compile time:
python benchmarks/bench_speed.py [--quick] [--no-compile] [--sets ecg,seismic,...]

For each data set (each signal compressed alone, sizes and times summed) and each level (1, 2)
it prints ratio (raw bytes / compressed bytes), compress and decompress throughput in M values/s
(wall clock, best of ``--repeat`` compress runs and of at least 3 decompress runs per signal, one core: numba kernels here are
single-threaded), with FLAC -8 measured in the same run as the peer (benchmarks/_stdcodecs.py:
a subprocess per call, its start-up included). Every container is checked to decode exactly.

Then the first-call times of everything the default compress + decompress path compiles, in a
fresh process: with an empty numba cache (``cold``) and again with it filled (``cached``), wall
and CPU seconds per stage (``import numpy``, ``import ubpe``, then compress and decompress at
level 2, the default, and at level 1). The total is everything; "first call, default level" is
what a user's new process pays: the imports and level 2's compress + decompress.
Issue 6's targets: default level >= 1 M values/s both ways, level 1 decode >= 50 M values/s,
cold < 20 s, cached first call < 1 s.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

import ubpe

try:
    from . import _data, _measure, _stdcodecs
except ImportError:  # run as a script
    import _data
    import _measure
    import _stdcodecs

HERE = Path(__file__).resolve().parent


def data_sets(quick: bool) -> dict[str, list[np.ndarray]]:
    """Name -> the signals of that set, each compressed alone."""
    sets = {
        "ecg": [_data.ecg()],
        "seismic": [_data.seismic()],
        "neural": _data.neural(3 if quick else 24),
        "audio": [x for x, _rate in _data.audio()],
    }
    if quick:
        sets["audio"] = sets["audio"][:8]
    return sets


#: Decompress runs per signal (best kept): cheap, and the first may compile a kernel this
#: process has not used yet.
DECODE_REPEAT = 3


def _best(fn, repeat: int) -> tuple[float, object]:
    best, out = float("inf"), None
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t)
    return best, out


def measure_ubpe(signals: list[np.ndarray], level: int, repeat: int) -> dict:
    """Ratio and throughput of ubpe at ``level`` on ``signals``, each alone."""
    tc = td = 0.0
    size = 0
    for x in signals:
        t, data = _best(lambda: ubpe.compress(x, level=level), repeat)
        tc += t
        size += len(data)
        t, y = _best(lambda: ubpe.decompress(data), max(repeat, DECODE_REPEAT))
        td += t
        if not (y.dtype == x.dtype and np.array_equal(y, x)):
            raise AssertionError("round trip failed")
    n = sum(x.size for x in signals)
    raw = sum(x.nbytes for x in signals)
    return dict(ratio=raw / size, bytes=size, compress_mvs=n / tc / 1e6, decompress_mvs=n / td / 1e6)


def measure_flac(signals: list[np.ndarray]) -> dict | None:
    if not _stdcodecs.flac_available():
        return None
    rows = _stdcodecs.run_codecs_each(signals, ["flac-8"])
    if not rows:
        return None
    r = rows[0]
    n = sum(x.size for x in signals)
    return dict(ratio=r["ratio"], bytes=r["bytes"], compress_mvs=n / r["compress_s"] / 1e6,
                decompress_mvs=n / r["decompress_s"] / 1e6)


_COMPILE_SCRIPT = r"""
import json, sys, time
T, W = time.process_time, time.perf_counter
c0, w0 = T(), W()
import numpy as np
out = {"import numpy": [W() - w0, T() - c0]}
c0, w0 = T(), W(); import ubpe; out["import ubpe"] = [W() - w0, T() - c0]
rng = np.random.default_rng(0)
x = np.cumsum(rng.integers(-3, 4, 20000)).astype(np.int16)
def stage(name, fn):
    c, w = T(), W(); r = fn(); out[name] = [W() - w, T() - c]; return r
for level in (2, 1):  # the default level first: "import ubpe" + its two stages is a user's first call
    c = stage(f"compress level {level}", lambda: ubpe.compress(x, level=level))
    stage(f"decompress level {level}", lambda: ubpe.decompress(c))
json.dump(out, sys.stdout)
"""


def compile_times() -> list[dict]:
    """First-call times of compress and decompress at both levels in a new process (cold, cached)."""
    return _measure.compile_times(_COMPILE_SCRIPT, HERE.parent)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="3 neural files and 8 audio files")
    ap.add_argument("--sets", default="ecg,seismic,neural,audio")
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--no-compile", action="store_true", help="skip the compile-time measurement")
    args = ap.parse_args(argv)
    sets = data_sets(args.quick)
    ubpe.decompress(ubpe.compress(sets["ecg"][0][:3000], level=2))  # compile outside the timings
    print(f"{'set':<10}{'codec':<10}{'ratio':>8}{'compress M/s':>15}{'decompress M/s':>16}")
    for name in args.sets.split(","):
        signals = sets[name]
        rows = [(f"level {lv}", measure_ubpe(signals, lv, args.repeat)) for lv in (1, 2)]
        flac = measure_flac(signals)
        if flac is not None:
            rows.append(("flac -8", flac))
        for label, r in rows:
            print(f"{name:<10}{label:<10}{r['ratio']:>8.3f}{r['compress_mvs']:>15.3f}{r['decompress_mvs']:>16.2f}",
                  flush=True)
    if not args.no_compile:
        rows = compile_times()
        print(f"\n{'first call':<24}{'cold s':>8}{'cached s':>10}{'cold CPU s':>12}{'cached CPU s':>14}")
        for row in rows:
            print(f"{row['stage']:<24}{row['cold_s']:>8.2f}{row['cached_s']:>10.2f}"
                  f"{row['cold_cpu_s']:>12.2f}{row['cached_cpu_s']:>14.2f}", flush=True)
        first = ("import numpy", "import ubpe", "compress level 2", "decompress level 2")
        user = {k: sum(r[k] for r in rows if r["stage"] in first) for k in ("cached_s", "cached_cpu_s")}
        print(f"{'first call, default level':<24}{'':>8}{user['cached_s']:>10.2f}{'':>12}{user['cached_cpu_s']:>14.2f}"
              "   (a new process: import numpy and ubpe, compress + decompress at level 2)")


if __name__ == "__main__":
    main()
