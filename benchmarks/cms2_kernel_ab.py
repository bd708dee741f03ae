"""The "cms2" kernel alone, two source trees alternated: ``cms2_decode`` and ``cms2_encode``
(plan + kernel) process time per set, on the streams level 2 codes with it.

    python benchmarks/cms2_kernel_ab.py BEFORE_TREE [AFTER_TREE] --cache DIR [--rounds 7]
        [--sets ecg,seismic,audio,float-q,neural] [--own]

The streams are every ``cms2_decode`` call of ``bench_level2_decode.py``'s containers (``--cache``:
its folder, compressed there first when missing), written once to a temporary folder. Each tree
runs in its own process (``PYTHONPATH=<tree>``, this interpreter), which first checks every
payload byte for byte (its encoder) and every token stream (its decoder), then times one pass
over the sets per request. The trees take turns, round by round (their order alternating). The
least time per set over the rounds is printed, with the ratio (BEFORE / AFTER: above 1, AFTER is
faster). Process time; same-code runs differed by up to +-5 % on the shared machine
(benchmarks/results/level2-cms2-asm.md).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent

_CHILD = r"""
import json, sys, time
import numpy as np
from ubpe._kernels import cmsignal2 as k
folder, sets, own = sys.argv[1], sys.argv[2].split(","), sys.argv[3] == "own"
data = {}
for s in sets:
    z = np.load(f"{folder}/{s}.npz")
    m = len([f for f in z.files if f.startswith("b")])
    data[s] = [(z[f"b{j}"], int(z[f"v{j}"]), z[f"t{j}"]) for j in range(m)]
sizes = {}
for s in sets:
    for j, (buf, V, t) in enumerate(data[s]):
        eb = np.zeros(2 * buf.size + 256, np.uint8)
        n = k.cms2_encode(t, V, eb, whole=True)  # (a container's stream: coded whole)
        if own:  # a format change: this tree's own payload of the same tokens
            buf = eb[:n].copy()
            data[s][j] = (buf, V, t)
        assert n == buf.size and np.array_equal(eb[:n], buf), "payload bytes differ: " + s
        out = np.zeros_like(t)
        assert k.cms2_decode(buf, V, out) == 0 and np.array_equal(out, t), "decode differs: " + s
        sizes[s] = sizes.get(s, 0) + int(buf.size)
print("ready " + json.dumps(sizes), flush=True)
for _line in sys.stdin:
    res = {}
    for s in sets:
        de = en = 0.0
        for buf, V, t in data[s]:
            out = np.zeros_like(t)
            eb = np.zeros(2 * buf.size + 256, np.uint8)
            a = time.process_time()
            k.cms2_decode(buf, V, out)
            b = time.process_time()
            k.cms2_encode(t, V, eb, whole=True)
            c = time.process_time()
            de += b - a
            en += c - b
        res[s] = (de, en)
    print(json.dumps(res), flush=True)
"""


def dump(folder: Path, sets: list[str], cache: str) -> None:
    """Each set's cms2 streams (payload, V, tokens) into ``folder/<set>.npz``."""
    sys.path.insert(0, str(HERE))
    import bench_level2_decode as b

    for name in sets:
        calls = b.calls_all(b.containers(name, cache))
        d = {}
        for j, ((buf, vocab, out), _status) in enumerate(calls):
            d[f"b{j}"], d[f"v{j}"], d[f"t{j}"] = np.asarray(buf).copy(), np.array(vocab), np.asarray(out).copy()
        np.savez(folder / f"{name}.npz", **d)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("before", type=Path)
    p.add_argument("after", type=Path, nargs="?", default=HERE.parent)
    p.add_argument("--cache", required=True, help="bench_level2_decode.py's container folder")
    p.add_argument("--rounds", type=int, default=7)
    p.add_argument("--sets", default="ecg,seismic,audio,float-q,neural")
    p.add_argument("--own", action="store_true", help="a format change: each tree times its own payloads of "
                   "the same token streams (checked to decode), not the stored ones byte for byte")
    a = p.parse_args(argv)
    sets = a.sets.split(",")
    with tempfile.TemporaryDirectory() as tmp:
        # the streams of the BEFORE tree's containers, read by that tree (after a format change
        # this tree cannot read them)
        code = (f"import sys; sys.path.insert(0, {str(a.before.resolve() / 'benchmarks')!r}); "
                f"from pathlib import Path; import cms2_kernel_ab as m; "
                f"m.dump(Path({tmp!r}), {sets!r}, {a.cache!r})")
        subprocess.run([sys.executable, "-c", code], check=True,
                       env=dict(os.environ, PYTHONPATH=str(a.before.resolve())), cwd="/")
        procs = []
        for tree in (a.before, a.after):
            env = dict(os.environ, PYTHONPATH=str(tree.resolve()))
            procs.append(subprocess.Popen([sys.executable, "-c", _CHILD, tmp, a.sets, "own" if a.own else "same"],
                                          stdin=subprocess.PIPE,
                                          stdout=subprocess.PIPE, text=True, env=env, cwd="/"))
        sizes = []
        for proc in procs:
            line = proc.stdout.readline().strip()
            if not line.startswith("ready"):
                raise SystemExit("a tree failed its byte check")
            sizes.append(json.loads(line[5:]))
        best: list[dict] = [{}, {}]
        for r in range(a.rounds):
            for j in ((0, 1) if r % 2 == 0 else (1, 0)):
                procs[j].stdin.write("go\n")
                procs[j].stdin.flush()
                for s, (de, en) in json.loads(procs[j].stdout.readline()).items():
                    old = best[j].get(s, (float("inf"), float("inf")))
                    best[j][s] = (min(old[0], de), min(old[1], en))
        for proc in procs:
            proc.stdin.close()
            proc.wait()
    print(f"{'set':10s} {'dec A ms':>9s} {'dec B ms':>9s} {'A/B':>6s} {'enc A ms':>9s} {'enc B ms':>9s} {'A/B':>6s}"
          f" {'bytes A':>9s} {'bytes B':>9s}")
    for s in sets:
        (da, ea), (db, eb) = best[0][s], best[1][s]
        print(f"{s:10s} {da * 1e3:9.1f} {db * 1e3:9.1f} {da / db:6.3f} {ea * 1e3:9.1f} {eb * 1e3:9.1f} {ea / eb:6.3f}"
              f" {sizes[0][s]:9d} {sizes[1][s]:9d}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
