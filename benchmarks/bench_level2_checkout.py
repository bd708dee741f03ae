"""Level-2 ``ubpe.compress`` CPU time per set, this checkout against another (e.g. main), each run
in its own subprocess, alternated round by round, per signal the least of every run; and the
bound of this checkout's level 2: the coding alone of the container it chooses.

    UBPE_DATA=/work/shared/data nice -n 5 python benchmarks/bench_level2_checkout.py /work/main
        [--sets ecg,seismic,audio,neural] [--rounds 3] [--repeat 3] [--python PY] [--files A.npy ...]

Sets as benchmarks/bench_speed.py's: ecg (MIT-BIH 208), seismic (CRLZ_HHZ), audio (the 32 short
files, each alone), neural (the 24 recordings joined); ``--files``: .npy recordings, each a set of
its own (``--sets ''`` for those alone). Each subprocess imports ``ubpe`` from
its checkout (``PYTHONPATH``), compresses every signal ``--repeat`` times with ``threads=1``
(``time.process_time`` and wall time) and prints the least and the bytes; the bytes of both
checkouts are printed (equal when a change should move none).

The bound (``--bound``, this checkout only): per signal, the chosen container's front end run
alone (``frontend.forward`` of its recorded chain, the "lpc" analysis included) plus its
stream's encode (``coders.encode_stream`` of its tokens, the coders it was offered), least of
``--repeat``: what compress would cost with a search that cost nothing. The search's share is
compress less that.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from _checkout import child_result

HERE = Path(__file__).resolve().parent


def _signals(name: str) -> list:
    import _data
    import numpy as np

    if name.endswith(".npy"):
        return [np.load(name)]
    if name == "ecg":
        return [_data.ecg()]
    if name == "seismic":
        return [_data.seismic()]
    if name == "audio":
        return [x for x, _rate in _data.audio()]
    if name == "neural":
        return [np.concatenate(_data.neural(24))]
    raise ValueError(f"unknown set {name!r}")


def child(sets: list[str], repeat: int, bound: bool) -> None:
    """In a checkout (``ubpe`` from ``PYTHONPATH``): print {"file", "sets": {set: [[values, cpu,
    wall, bytes, bound cpu], ...]}}."""
    sys.path.insert(0, str(HERE))
    import _data

    import ubpe
    from ubpe import coders, frontend
    from ubpe.api import writer
    chosen: list = []
    if bound:  # the level-2 plan's candidate, as the writer receives it
        real = writer.plan

        def spy(x, chains, level, *args, **kwargs):
            c = real(x, chains, level, *args, **kwargs)
            chosen.append((level, x.size, c))
            return c

        writer.plan = spy
    for x in (_data.ecg()[:3000], _data.ecg(), _data.audio()[0][0]):  # kernels loaded outside the timings
        ubpe.compress(x, level=2, threads=1)
    out: dict = {}
    for name in sets:
        rows = []
        for x in _signals(name):
            cpu = wall = float("inf")
            for _ in range(repeat):
                chosen.clear()
                t, w = time.process_time(), time.perf_counter()
                data = ubpe.compress(x, level=2, threads=1)
                cpu, wall = min(cpu, time.process_time() - t), min(wall, time.perf_counter() - w)
            coding = 0.0
            # (a blocked container, planned on a sample, has no such bound here: "n/a")
            planned = [c for level, size, c in chosen if level == 2 and size == x.size]
            if bound and not planned:
                coding = float("nan")
            elif bound:
                c, xc = planned[0], frontend.to_channels(x)
                stages = writer._stages_of(c.chain)
                coding = float("inf")
                for _ in range(repeat):
                    t = time.process_time()
                    frontend.forward(xc, stages)
                    coders.encode_stream(c.tokens, len(c.alphabet) + len(c.merges), coders=c.coders)
                    coding = min(coding, time.process_time() - t)
            rows.append([int(x.size), cpu, wall, len(data), coding])
        out[name] = rows
    print(json.dumps({"file": ubpe.__file__, "sets": out}))


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("other", help="the other checkout (its ubpe package imported from it)")
    ap.add_argument("--sets", default="ecg,seismic,audio,neural")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--files", nargs="*", default=[], help=".npy recordings, each a set of its own")
    ap.add_argument("--python", default=sys.executable, help="the interpreter of both subprocesses")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--bound", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    sets = [name for name in args.sets.split(",") if name] + [str(Path(f).resolve()) for f in args.files]
    args.sets = ",".join(sets)
    if args.child:
        child(sets, args.repeat, args.bound)
        return
    trees = [str(Path(args.other).resolve()), str(HERE.parent)]
    best: dict = {}
    for _ in range(args.rounds):
        for tree in trees:
            res = child_result(args.python, str(Path(__file__).resolve()), tree,
                               [args.other, "--child", "--sets", args.sets, "--repeat", str(args.repeat)]
                               + (["--bound"] if tree == trees[1] else []))
            for name, rows in res["sets"].items():
                kept = best.setdefault((tree, name), [list(r) for r in rows])
                for k, r in enumerate(rows):
                    kept[k][1], kept[k][2], kept[k][3] = min(kept[k][1], r[1]), min(kept[k][2], r[2]), r[3]
                    kept[k][4] = min(kept[k][4], r[4]) if kept[k][4] and r[4] else r[4]
    print("| set | values | other: compress M/s CPU (wall) | bytes | this: compress M/s CPU (wall) | bytes | "
          "this / other | bound M/s CPU | search share |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for name in sets:
        o, t = best[(trees[0], name)], best[(trees[1], name)]
        n = sum(r[0] for r in t)
        oc, ow, ob = (sum(r[i] for r in o) for i in (1, 2, 3))
        tc, tw, tb, tcode = (sum(r[i] for r in t) for i in (1, 2, 3, 4))
        bound = "n/a | n/a" if tcode != tcode else f"{n / tcode / 1e6:.2f} | {1 - tcode / tc:.0%}"
        label = Path(name).stem if name.endswith(".npy") else name
        print(f"| {label} | {n:,} | {n / oc / 1e6:.2f} ({n / ow / 1e6:.2f}) | {ob:,} | {n / tc / 1e6:.2f} "
              f"({n / tw / 1e6:.2f}) | {tb:,} | {oc / tc:.2f} | {bound} |")


if __name__ == "__main__":
    main()
