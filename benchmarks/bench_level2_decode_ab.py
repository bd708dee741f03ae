"""Level-2 ``ubpe.decompress`` CPU time per set, two source trees alternated, each decoding its
own containers (a format change: each tree compresses the same signals itself).

    UBPE_DATA=/work/shared/data nice -n 5 python benchmarks/bench_level2_decode_ab.py BEFORE_TREE
        [AFTER_TREE] [--sets ecg,seismic,audio,neural] [--rounds 7]

Sets as ``bench_level2_checkout.py``'s (bench_speed.py's): ecg (MIT-BIH 208), seismic
(CRLZ_HHZ), audio (the 32 short files, each alone), neural (the 24 recordings joined). Each tree
runs in its own process (``PYTHONPATH=<tree>``, this interpreter), compresses every signal at
level 2 with ``threads=1`` once, checks that each container decodes to its signal, then times
one ``decompress`` of every container per request (``time.process_time``). The trees take turns,
round by round (their order alternating); per container the least time over the rounds is kept
and summed over the set. Printed per set: values, M values/s of each tree, the ratio (AFTER /
BEFORE speed: above 1, AFTER is faster) and the bytes of each tree's containers.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent

_CHILD = r"""
import json, sys, time
import numpy as np
sys.path.insert(0, sys.argv[1])
from bench_level2_checkout import _signals
import ubpe
sets = sys.argv[2].split(",")
data = {}
for s in sets:
    data[s] = []
    for x in _signals(s):
        c = ubpe.compress(x, level=2, threads=1)
        assert np.array_equal(np.asarray(ubpe.decompress(c)), x), s
        data[s].append((x.size, c))
print("ready " + json.dumps({s: [sum(n for n, _ in v), sum(len(c) for _, c in v)] for s, v in data.items()}),
      flush=True)
for _line in sys.stdin:
    res = {}
    for s in sets:
        ts = []
        for _n, c in data[s]:
            a = time.process_time()
            ubpe.decompress(c)
            ts.append(time.process_time() - a)
        res[s] = ts
    print(json.dumps(res), flush=True)
"""


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("before", type=Path)
    p.add_argument("after", type=Path, nargs="?", default=HERE.parent)
    p.add_argument("--rounds", type=int, default=7)
    p.add_argument("--sets", default="ecg,seismic,audio,neural")
    a = p.parse_args(argv)
    sets = a.sets.split(",")
    procs, info = [], []
    for tree in (a.before, a.after):
        env = dict(os.environ, PYTHONPATH=str(tree.resolve()))
        procs.append(subprocess.Popen([sys.executable, "-c", _CHILD, str(tree.resolve() / "benchmarks"), a.sets],
                                      stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env, cwd="/"))
    for proc in procs:
        line = proc.stdout.readline().strip()
        if not line.startswith("ready"):
            raise SystemExit("a tree failed its round trip")
        info.append(json.loads(line[5:]))
    best: list[dict] = [{}, {}]
    for r in range(a.rounds):
        for j in ((0, 1) if r % 2 == 0 else (1, 0)):
            procs[j].stdin.write("go\n")
            procs[j].stdin.flush()
            for s, ts in json.loads(procs[j].stdout.readline()).items():
                old = best[j].get(s, [float("inf")] * len(ts))
                best[j][s] = [min(u, v) for u, v in zip(old, ts)]
    for proc in procs:
        proc.stdin.close()
        proc.wait()
    print(f"{'set':8s} {'values':>9s} {'A M/s':>7s} {'B M/s':>7s} {'B/A':>6s} {'bytes A':>9s} {'bytes B':>9s}")
    for s in sets:
        n = info[0][s][0]
        ta, tb = sum(best[0][s]), sum(best[1][s])
        print(f"{s:8s} {n:9d} {n / ta / 1e6:7.2f} {n / tb / 1e6:7.2f} {ta / tb:6.3f} {info[0][s][1]:9d} {info[1][s][1]:9d}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
