"""Level-1 ``ubpe.decompress`` CPU time a call, this checkout against another (e.g. main), each
run in its own subprocess with its own venv, alternated round by round, best of the rounds.

    nice -n 5 python benchmarks/bench_decode_vs_checkout.py /work/main [--rounds 5]
        [--floats /tmp/float-data] [--names obspy-seism obspy-lmow ...] [--ecg N] [--level L]

``--level``: the level the series are compressed at (default 1).

Series: ``NAME.npy`` in ``--floats`` (as ``benchmarks/float_data.py`` writes them) and the
first ``--ecg`` samples of MIT-BIH record 208 (``UBPE_DATA``/ecg, an integer signal: the
general path). Each checkout compresses the series itself (sizes printed: they must agree) and
times ``max(20, 20000 // n)`` calls a timing, 5 timings a subprocess.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent


def child(tree: str, files: list[str], ecg: int, level: int = 1) -> None:
    """In the checkout ``tree``'s venv: print {name: [values, bytes, best us a call]}."""
    sys.path.insert(0, tree)
    import numpy as np

    import ubpe

    series = {Path(f).stem: np.load(f) for f in files}
    if ecg:
        folder = Path(os.environ.get("UBPE_DATA", HERE.parent.parent / "shared" / "data"))
        series[f"ecg-{ecg}"] = np.load(folder / "ecg" / "mitbih_208.npy")[:ecg]
    out = {}
    for name, x in series.items():
        data = ubpe.compress(x, level=level)
        assert ubpe.decompress(data).tobytes() == x.tobytes()
        calls = max(20, 20000 // x.size)
        for _ in range(calls):
            ubpe.decompress(data)
        best = float("inf")
        for _ in range(5):
            t = time.process_time()
            for _ in range(calls):
                ubpe.decompress(data)
            best = min(best, (time.process_time() - t) / calls * 1e6)
        out[name] = [int(x.size), len(data), best]
    print(json.dumps(out))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("other", help="the other checkout (its .venv/bin/python runs it)")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--floats", type=Path, default=Path("/tmp/float-data"))
    ap.add_argument("--names", nargs="+", default=["obspy-seism", "obspy-lmow", "obspy-pitsa-noise",
                                                   "basicmotions-acc-x", "obspy-karc-lhz"])
    ap.add_argument("--ecg", type=int, default=5000)
    ap.add_argument("--level", type=int, default=1)
    ap.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = ap.parse_args()
    files = [str(args.floats / f"{n}.npy") for n in args.names]
    if args.child:
        child(args.child[0], files, int(args.child[1]), args.level)
        return 0
    trees = {"other": Path(args.other).resolve(), "this": HERE}
    best: dict[tuple[str, str], list] = {}
    for _ in range(args.rounds):
        for label, tree in trees.items():
            cmd = [str(tree / ".venv" / "bin" / "python"), str(Path(__file__).resolve()), str(args.other),
                   "--floats", str(args.floats), "--names", *args.names, "--ecg", str(args.ecg),
                   "--level", str(args.level), "--child", str(tree), str(args.ecg)]
            res = json.loads(subprocess.run(cmd, capture_output=True, text=True, check=True, cwd="/tmp").stdout)
            for name, row in res.items():
                if (name, label) not in best or row[2] < best[(name, label)][2]:
                    best[(name, label)] = row
    print("| series | values | bytes other | bytes this | other us | this us | this / other | this M values/s |")
    print("|" + "---|" * 8)
    for name in dict.fromkeys(k[0] for k in best):
        n, so, uo = best[(name, "other")]
        _, st, ut = best[(name, "this")]
        print(f"| {name} | {n} | {so} | {st} | {uo:.1f} | {ut:.1f} | {ut / uo:.3f} | {n / ut:.1f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
