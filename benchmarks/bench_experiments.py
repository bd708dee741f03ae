"""`ubpe bench` at the size the issue names: the 24 first neural recordings (sorted names) and the
ECG record 208, 4 vocabulary sizes x 2 candidate counts x 2 levels, with every peer codec
installed, on all CPUs; target: under 2 minutes (wall clock, the whole command: start-up of the
worker processes, every round trip check, the results files and the plots).

    python benchmarks/bench_experiments.py [--jobs N] [--out DIR] [--refit]

``--refit`` runs the ubpe grid a second time with ``reuse_training=False`` (every vocabulary
size trained afresh), checks that the sizes are the same, and prints both times. The results
folder (default benchmarks/results/experiments) keeps results.csv/json and the plots;
docs/experiments.md shows its ratio.png.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _data  # noqa: E402

from ubpe import experiments  # noqa: E402

GRID = dict(n_tokens="256,512,1024,4096", n_candidates="1,50", level="1,2", predictor="auto")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--out", default=str(Path(__file__).resolve().parent / "results" / "experiments"))
    ap.add_argument("--refit", action="store_true")
    args = ap.parse_args(argv)
    root = _data.data_dir()
    files = sorted((root / "neural").glob("*.wav"))[:24] + [root / "ecg" / "mitbih_208.npy"]
    print(f"{len(files)} files, grid {GRID}, jobs={args.jobs}", flush=True)
    t0 = time.perf_counter()
    experiments.run_bench([str(f) for f in files], codecs="available", out=args.out, overwrite=True,
                          jobs=args.jobs, **GRID)
    seconds = time.perf_counter() - t0
    verdict = "PASS" if seconds < 120 else "FAIL"
    print(f"\nubpe bench, whole command: {seconds:.1f} s wall clock with {args.jobs} jobs "
          f"(target < 120 s: {verdict})")
    if args.refit:
        grid = dict(n_tokens=[256, 512, 1024, 4096], n_candidates=[1, 50], level=[1, 2])
        t0 = time.perf_counter()
        rows, _ = experiments.sweep([str(f) for f in files], codecs="none", jobs=args.jobs, **grid)
        reused = time.perf_counter() - t0
        t0 = time.perf_counter()
        again, _ = experiments.sweep([str(f) for f in files], codecs="none", jobs=args.jobs,
                                     reuse_training=False, **grid)
        refit = time.perf_counter() - t0
        same = [r.size for r in rows] == [r.size for r in again]
        print(f"ubpe grid only: {reused:.1f} s with training reused, {refit:.1f} s refitting every size; "
              f"sizes identical: {same}")
        if not same:
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
