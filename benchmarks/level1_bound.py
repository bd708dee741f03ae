"""How much of level 1's compress time is its search: per set, level 1's CPU speed, the same with
the chain forced to "lpc" (no chain search), and the core of that alone, no planner: level 1's
"lpc" stage (its search: both block lengths, fewer orders costed, the loudness refit) on all the
values plus coding its residual's ids with "mag", and each of the two alone.

    UBPE_DATA=/work/shared/data nice -n 5 python benchmarks/level1_bound.py [ecg seismic audio neural unseen]
        [--unseen /work/unseen-data]

One process, best of 3 passes over each set (``time.process_time``), values per second of CPU
time. The neural set is the 24 recordings joined; level 1 keeps "rank+delta1" there, so its core
is not the "lpc" stage shown. A figure, not a test: compare it with FLAC's in the same minute
(``benchmarks/bench_speed.py``).
"""

from __future__ import annotations

import argparse
import glob
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import _data  # noqa: E402

import ubpe  # noqa: E402
from ubpe.coders import encode_stream  # noqa: E402
from ubpe.frontend.chains import PREDICTORS, build_chain  # noqa: E402
from ubpe.planner.fast import fast_stages  # noqa: E402
from ubpe.planner.settings import DEFAULT  # noqa: E402


def _sets(names: list[str], unseen: str) -> dict[str, list[np.ndarray]]:
    out = {}
    for name in names:
        if name == "ecg":
            out[name] = [_data.ecg()]
        elif name == "seismic":
            out[name] = [_data.seismic()]
        elif name == "audio":
            out[name] = [x for x, _rate in _data.audio()]
        elif name == "neural":
            out[name] = [np.concatenate(_data.neural(24))]
        elif name == "unseen":
            out[name] = [np.load(f) for f in sorted(glob.glob(str(Path(unseen) / "*.npy")))]
        else:
            raise SystemExit(f"unknown set {name!r}")
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("sets", nargs="*", default=["ecg", "seismic", "audio", "neural", "unseen"])
    ap.add_argument("--unseen", default="/work/unseen-data")
    args = ap.parse_args()
    stage = fast_stages(build_chain(PREDICTORS["lpc"]), DEFAULT)[0]

    def rows(x: np.ndarray) -> np.ndarray:
        return np.ascontiguousarray(x.reshape(x.shape[0], -1).T) if x.ndim > 1 else x[None]

    def ids(x: np.ndarray) -> np.ndarray:
        flat = stage.forward(rows(x))[0].reshape(-1).astype(np.int64)
        return flat - int(flat.min())

    def code(d: np.ndarray) -> None:
        encode_stream(d, int(d.max()) + 1, coders=("mag",), rate_sample_above=DEFAULT.fast_mag_rate_sample)

    def best(fn, xs, k=3) -> float:
        least = float("inf")
        for _ in range(k):
            t = time.process_time()
            for x in xs:
                fn(x)
            least = min(least, time.process_time() - t)
        return least

    print("| set | values | level 1 M/s | forced lpc M/s | lpc stage + mag coder M/s | lpc stage alone M/s "
          "| mag coder alone M/s |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for name, xs in _sets(args.sets, args.unseen).items():
        n = sum(x.size for x in xs)
        level1 = lambda x: ubpe.compress(x, level=1, threads=1)  # noqa: E731
        forced = lambda x: ubpe.compress(x, level=1, threads=1, predictor="lpc")  # noqa: E731
        for x in xs[:2]:  # (kernels loaded outside the timings)
            level1(x), forced(x), code(ids(x))
        ds = [ids(x) for x in xs]
        times = [best(level1, xs), best(forced, xs), best(lambda x: code(ids(x)), xs),
                 best(lambda x: stage.forward(rows(x)), xs), best(code, ds)]
        print(f"| {name} | {n:,} | " + " | ".join(f"{n / t / 1e6:.2f}" for t in times) + " |")


if __name__ == "__main__":
    main()
