"""The level-2 front end's kernels alone, this checkout against another (e.g. main): CPU time of the
"adaptive" cascade forward and inverse (``ubpe._kernels.predict.lms_cascade_rows``, the default
stages) and of the "lpc" analysis (``ubpe._kernels.level1.lpc_analyze`` as level 2 calls it:
blocks of 4096 and 16384, window 2, precisions 12 and 15), per set, each checkout in its own
subprocess, alternated round by round, the least of every run kept; the outputs of both are
compared (they must be equal).

    UBPE_DATA=/work/shared/data nice -n 5 python benchmarks/bench_frontend_kernels.py /work/main
        [--sets ecg,seismic,audio] [--rounds 3] [--repeat 5]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import time
from pathlib import Path

from _checkout import child_result

HERE = Path(__file__).resolve().parent


def _signals(name: str) -> list:
    import _data

    if name == "ecg":
        return [_data.ecg()]
    if name == "seismic":
        return [_data.seismic()]
    if name == "audio":
        return [x for x, _rate in _data.audio()]
    raise ValueError(f"unknown set {name!r}")


def child(sets: list[str], repeat: int) -> None:
    """In a checkout: print {"file", "sets": {set: {part: [cpu s, digest]}}}."""
    sys.path.insert(0, str(HERE))
    import numpy as np

    import ubpe
    from ubpe._kernels import level1, predict
    from ubpe.frontend import adaptive

    st = np.array(adaptive.DEFAULT_STAGES, np.int64)
    orders, shifts, rules = st[:, 0].copy(), st[:, 1].copy(), st[:, 2].copy()

    def cascade(xs, inverse):
        outs = []
        for x in xs:
            out = np.empty_like(x)
            predict.lms_cascade_rows(x, orders, shifts, rules, 48, inverse, out)
            outs.append(out)
        return outs

    def lpc(xs):
        outs = []
        for x in xs:
            s = x[0]
            for block in (4096, 16384):
                nb = -(-s.shape[0] // block)
                o, sh_, p = (np.zeros(nb, np.int64) for _ in range(3))
                c = np.zeros(nb * 32, np.int64)
                used = level1.lpc_analyze(s, block, 32, np.array([2], np.int64), np.array([12, 15], np.int64),
                                          48, o, sh_, p, c, 3, 1)
                outs.append(np.concatenate([o, sh_, p, c[:used]]))
        return outs

    out: dict = {}
    for name in sets:
        xs = [np.asarray(x, np.int64).reshape(1, -1) for x in _signals(name)]
        fwd = cascade(xs, False)
        parts = {"adaptive forward": lambda: cascade(xs, False), "adaptive inverse": lambda: cascade(fwd, True),
                 "lpc analysis": lambda: lpc(xs)}
        row = {}
        for part, f in parts.items():
            got = f()  # (compiles on the first call)
            best = float("inf")
            for _ in range(repeat):
                t = time.process_time()
                f()
                best = min(best, time.process_time() - t)
            digest = hashlib.sha256(b"".join(np.ascontiguousarray(g).tobytes() for g in got)).hexdigest()[:16]
            row[part] = [best, digest, sum(x.size for x in xs)]
        out[name] = row
    print(json.dumps({"file": ubpe.__file__, "sets": out}))


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("other", help="the other checkout (its ubpe package imported from it)")
    ap.add_argument("--sets", default="ecg,seismic,audio")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--python", default=sys.executable, help="the interpreter of both subprocesses")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    sets = args.sets.split(",")
    if args.child:
        child(sets, args.repeat)
        return
    trees = [str(Path(args.other).resolve()), str(HERE.parent)]
    best: dict = {}
    for _ in range(args.rounds):
        for tree in trees:
            res = child_result(args.python, str(Path(__file__).resolve()), tree,
                               [args.other, "--child", "--sets", args.sets, "--repeat", str(args.repeat)], cwd="/")
            for name, row in res["sets"].items():
                for part, (cpu, digest, n) in row.items():
                    key = (tree, name, part)
                    best[key] = [min(best.get(key, [cpu])[0], cpu), digest, n]
    print("| set | part | values | other: ms CPU | this: ms CPU | other / this | outputs |")
    print("|---|---|---:|---:|---:|---:|---|")
    for name in sets:
        for part in ("adaptive forward", "adaptive inverse", "lpc analysis"):
            o, t = best[(trees[0], name, part)], best[(trees[1], name, part)]
            same = "equal" if o[1] == t[1] else "DIFFER"
            print(f"| {name} | {part} | {t[2]:,} | {o[0] * 1e3:.2f} | {t[0] * 1e3:.2f} | {o[0] / t[0]:.2f} | {same} |")


if __name__ == "__main__":
    main()
