"""What the training windows can teach an adaptive coder (issue 30, shared models): the bound
beside benchmarks/bench_windows.py's ``vs alone``.

    UBPE_DATA=/work/shared/data nice -n 5 python benchmarks/bench_windows_bound.py --size 10000 [--levels 2 3]

For every recording of bench_windows.py cut into windows of ``--size`` values (the first 10 the
training windows, the next at most 20 the test windows), each test window's cost given the
training windows is ``len(compress(train + window)) - len(compress(train))`` (the coder carries
everything it learned from the training windows into the window), summed, against the test
windows compressed each alone at the same level. A shared model gives its windows what the
training windows hold and nothing more, so this is roughly what any model fitted on them can
save at that level's coder.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_windows  # noqa: E402

import ubpe  # noqa: E402


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--size", type=int, default=10000, help="values a window")
    p.add_argument("--levels", type=int, nargs="+", default=[2], help="the levels whose coder is measured")
    p.add_argument("--test", type=int, default=20, help="most test windows per recording")
    a = p.parse_args(argv)
    totals = {level: [0, 0] for level in a.levels}
    print("| recording | " + " | ".join(f"L{v} alone B | L{v} given training B | L{v} vs alone" for v in a.levels) + " |")
    print("|---" * (1 + 3 * len(a.levels)) + "|")
    for name, x in bench_windows.recordings():
        count = min(len(x) // a.size, bench_windows.TRAIN + a.test)
        if count < bench_windows.TRAIN + 5:
            continue
        windows = [np.ascontiguousarray(x[i * a.size:(i + 1) * a.size]) for i in range(count)]
        train, test = windows[:bench_windows.TRAIN], windows[bench_windows.TRAIN:]
        cells = []
        for level in a.levels:
            alone = sum(len(ubpe.compress(w, level=level)) for w in test)
            base = len(ubpe.compress(np.concatenate(train), level=level))
            given = sum(len(ubpe.compress(np.concatenate(train + [w]), level=level)) - base for w in test)
            totals[level][0] += alone
            totals[level][1] += given
            cells.append(f"{alone} | {given} | {given / alone - 1:+.1%}")
        print(f"| {name} | " + " | ".join(cells) + " |", flush=True)
    for level, (alone, given) in totals.items():
        print(f"\nAll, level {level}: alone {alone} B, given the training windows {given} B ({given / alone - 1:+.1%})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
