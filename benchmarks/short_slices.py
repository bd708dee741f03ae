"""Level 2 on short slices of the shared recordings: sizes under the current settings against a
settings change, and level 1 beside them.

    UBPE_DATA=/work/shared/data python benchmarks/short_slices.py '{"short_lean_upto": 0}'
        [--lengths 300,557,1000] [--unseen /work/unseen-data]

The slices: the first ``n`` values of each of the 32 audio files and ``n`` from its middle
(when it has 3 n), 6 windows of the ECG and the seismic file (lengths 400 and the largest of
``--lengths``), and a window of each 1-D integer recording of ``--unseen`` (500 and the largest).
Prints the total bytes of both, the slices whose size differs, those where level 2 is larger
than level 1, and the CPU time of the compress calls (one call each, after a warm-up call;
a rough figure, not a benchmark: the changed settings are timed second).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import _data  # noqa: E402

import ubpe  # noqa: E402
from ubpe.planner.settings import configured  # noqa: E402


def slices(lengths: list[int], unseen: str | None) -> dict[str, np.ndarray]:
    out: dict[str, np.ndarray] = {}
    for i, (x, _rate) in enumerate(_data.audio()):
        for n in lengths:
            if x.size >= n:
                out[f"audio{i}/{n}"] = x[:n]
            if x.size >= 3 * n:
                out[f"audio{i}/{n}m"] = x[x.size // 2: x.size // 2 + n]
    ecg, seismic = _data.ecg(), _data.seismic()
    for k in range(6):
        for n in (400, max(lengths)):
            out[f"ecg{k}/{n}"] = ecg[k * 15000: k * 15000 + n]
            out[f"seis{k}/{n}"] = seismic[k * 5000: k * 5000 + n]
    for path in sorted(Path(unseen).glob("*.npy")) if unseen else []:
        x = np.load(path)
        if x.ndim == 1 and x.dtype.kind in "iu":
            for n in (500, max(lengths)):
                out[f"{path.stem[:12]}/{n}"] = x[x.size // 3: x.size // 3 + n]
    return {k: np.ascontiguousarray(v) for k, v in out.items()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("settings", help="a JSON object of planner settings for the second run")
    ap.add_argument("--lengths", default="300,557,1000")
    ap.add_argument("--unseen", default="/work/unseen-data")
    args = ap.parse_args()
    changes = json.loads(args.settings)
    inputs = slices([int(n) for n in args.lengths.split(",")], args.unseen if Path(args.unseen).is_dir() else None)
    for x in list(inputs.values())[:3]:  # kernels compiled and loaded outside the timings
        ubpe.compress(x, level=2, threads=1)
    total = {"current": 0, "changed": 0, "level 1": 0}
    cpu = {"current": 0.0, "changed": 0.0}
    differ, above_level1 = [], []
    for name, x in inputs.items():
        t = time.process_time()
        a = len(ubpe.compress(x, level=2, threads=1))
        cpu["current"] += time.process_time() - t
        with configured(**changes):
            ubpe.compress(x, level=2, threads=1)
            t = time.process_time()
            b = len(ubpe.compress(x, level=2, threads=1))
            cpu["changed"] += time.process_time() - t
        one = len(ubpe.compress(x, level=1, threads=1))
        total["current"] += a
        total["changed"] += b
        total["level 1"] += one
        if a != b:
            differ.append((name, a, b))
        if max(a, b) > one:
            above_level1.append((name, a, b, one))
    print(f"{len(inputs)} slices; bytes {total}; compress CPU " + ", ".join(f"{k} {v:.2f} s" for k, v in cpu.items()))
    print(f"sizes differ on {len(differ)}: current - changed = {sum(a - b for _, a, b in differ)} B")
    for name, a, b in sorted(differ, key=lambda d: d[1] - d[2]):
        print(f"  {name}: {a} -> {b} ({(b - a) / a:+.2%})")
    print(f"level 2 above level 1 (current, changed, level 1): {above_level1}")


if __name__ == "__main__":
    main()
