"""Level-1 decoding of short float series (issue 30's 10 M values/s target, issue 28's per-call
costs): ubpe and pcodec alternated in one process, each timed over ``--inner`` calls in a row (a
100-value decode is tens of microseconds: one call is below the timer's noise), best CPU time
(``time.process_time``) of ``--rounds`` rounds.

    python benchmarks/float_data.py /tmp/float-data
    nice -n 5 python benchmarks/bench_float_decode.py /tmp/float-data [--rounds 30] [--inner 20]

It imports the ubpe of the tree it sits in (printed first): to compare two trees, copy it into
the other and alternate the runs. Prints per series: values, container bytes, ubpe us per call and M values/s,
pcodec (level 12) M values/s, and pcodec's time over ubpe's.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import ubpe  # noqa: E402

SHORT = ("obspy-lmow", "obspy-seism", "seattle-weather-precipitation", "seattle-weather-temp-max",
         "seattle-weather-temp-min", "seattle-weather-wind", "basicmotions-acc-x", "basicmotions-gyr-x")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("folder", type=Path)
    ap.add_argument("--series", default=",".join(SHORT), help="comma-separated names of FOLDER/*.npy")
    ap.add_argument("--rounds", type=int, default=30)
    ap.add_argument("--inner", type=int, default=20)
    args = ap.parse_args()
    from pcodec import ChunkConfig, standalone

    print(f"ubpe from {Path(ubpe.__file__).parent}")
    print("| series | values | ubpe L1 B | ubpe us | ubpe M/s | pcodec M/s | pcodec time / ubpe time |")
    print("|---|---|---|---|---|---|---|")
    for name in args.series.split(","):
        x = np.load(args.folder / f"{name}.npy")
        data = ubpe.compress(x, level=1)
        pc = standalone.simple_compress(x, ChunkConfig(compression_level=12))
        assert ubpe.decompress(data).tobytes() == x.tobytes()
        standalone.simple_decompress(pc)
        best_u = best_p = float("inf")
        for _ in range(args.rounds):  # alternated
            t = time.process_time()
            for _ in range(args.inner):
                ubpe.decompress(data)
            best_u = min(best_u, (time.process_time() - t) / args.inner)
            t = time.process_time()
            for _ in range(args.inner):
                standalone.simple_decompress(pc)
            best_p = min(best_p, (time.process_time() - t) / args.inner)
        print(f"| {name} | {x.size} | {len(data)} | {best_u * 1e6:.1f} | {x.size / best_u / 1e6:.1f} | "
              f"{x.size / best_p / 1e6:.1f} | {best_p / best_u:.3f} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
