"""Level 3 (issue 29): two source trees side by side, before/after, alternated: the coder
(``ubpe.level3.encode``/``decode``) or, with ``--compress``, ``ubpe.compress(x, level=3)`` (the
container: level 3's coder and, where it is built, level 2's, the smaller kept).

    UBPE_DATA=/work/shared/data python benchmarks/bench_level3_ab.py BEFORE_TREE [AFTER_TREE]
        [--groups audio ...] [--only NAME ...] [--compress [--level2]] [--json OUT.json] [--unseen2 DIR]
        [--rounds N] [--warm]

Each tree (a checkout of ubpe: the one holding this script by default for AFTER) runs in its own
worker process (``PYTHONPATH=<tree>``), which loads ``bench_level3.recordings`` and compiles its
kernels outside the timings (``bench_level3.warm_level3``; with ``--compress`` also level-2 and
level-3 compresses of walks of 500 to 9 000 values). Every recording is then encoded and decoded
(``threads=1``) by both, the order alternating from one recording to the next, so that a busy
minute of the shared machine falls on both alike. Per recording and per group (sizes and times
summed): bytes before and after, encode and decode speed in values per CPU second
(``time.process_time``) and per wall second; every output is decoded and compared. ``--level2``
(with ``--compress``): the after tree also writes ``compress(level=2)`` (untimed) and each row
says where level 3's container is larger. ``--warm``: each worker first encodes and decodes
every chosen recording once, untimed (the kernels a recording's dtype and shape need compiled
outside the timings: the walks above do not cover every one); ``--rounds N``: every recording
N times, the order alternating from round to round too, each time the least of the N.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def worker(container: bool) -> None:
    """Serve ``recording index [level2]`` lines on stdin with one JSON result line each on stdout."""
    sys.path.insert(0, str(HERE))
    import numpy as np
    from bench_level3 import UNSEEN, recordings, warm_level3

    import ubpe
    from ubpe import level3

    recs = recordings(Path(os.environ.get("UBPE_UNSEEN", str(UNSEEN))))
    warm_level3(level3)
    if container:
        encode, decode = (lambda x: ubpe.compress(x, level=3, threads=1)), (lambda d: ubpe.decompress(d, threads=1))
        walk = np.cumsum(np.random.default_rng(1).integers(-40, 41, 9000)).astype(np.int16)
        for level in (2, 3):  # (a short input takes level 2's exhaustive search: other kernels)
            for part in (walk, walk[:3000], walk[:500], np.stack([walk, walk[::-1]], axis=1)[:4000]):
                ubpe.decompress(ubpe.compress(part, level=level, threads=1))
    else:
        encode, decode = level3.encode, level3.decode
    print(json.dumps(dict(module=(ubpe if container else level3).__file__, names=[r[1] for r in recs],
                          groups=[r[0] for r in recs])), flush=True)
    for line in sys.stdin:
        words = line.split()
        x = recs[int(words[0])][2]
        if words[1:] == ["warm"]:
            decode(encode(x))
            print("{}", flush=True)
            continue
        c0, t0 = time.process_time(), time.perf_counter()
        data = encode(x)
        ce, we = time.process_time() - c0, time.perf_counter() - t0
        c0, t0 = time.process_time(), time.perf_counter()
        back = decode(data)
        cd, wd = time.process_time() - c0, time.perf_counter() - t0
        ok = bool(back.dtype == x.dtype and np.array_equal(back, x))
        row = dict(bytes=len(data), values=int(x.size), enc_cpu=ce, enc_wall=we, dec_cpu=cd, dec_wall=wd, ok=ok)
        if container:
            row.update(level2=len(ubpe.compress(x, level=2, threads=1)) if len(words) > 1 else None,
                       coder=ubpe.describe(data).coder)
        print(json.dumps(row), flush=True)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("before", type=Path, help="the tree measured as before")
    p.add_argument("after", type=Path, nargs="?", default=HERE.parent, help="the tree measured as after")
    p.add_argument("--groups", nargs="*", default=None, help="only these groups (ecg seismic audio ...)")
    p.add_argument("--only", nargs="*", default=None, help="recordings whose name contains one of these")
    p.add_argument("--compress", action="store_true", help="time compress(level=3)/decompress, not the coder")
    p.add_argument("--level2", action="store_true", help="(--compress) the after tree also sizes level 2's container")
    p.add_argument("--json", type=Path, default=None, help="write every row here")
    p.add_argument("--unseen2", type=Path, default=None,
                   help="a folder of .npy recordings (2-D kept: (frames, channels)), the group 'unseen2'")
    p.add_argument("--rounds", type=int, default=1, help="time every recording this many times (the least kept)")
    p.add_argument("--warm", action="store_true", help="an untimed encode and decode of every recording first")
    a = p.parse_args(argv)
    if a.level2 and not a.compress:
        p.error("--level2 needs --compress")
    procs = {}
    for side, tree in (("before", a.before), ("after", a.after)):
        env = dict(os.environ, PYTHONPATH=str(tree.resolve()))
        if a.unseen2 is not None:
            env["UBPE_UNSEEN2"] = str(a.unseen2.resolve())
        command = [sys.executable, str(Path(__file__).resolve()), "--worker"] + (["--compress"] if a.compress else [])
        procs[side] = subprocess.Popen(command, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                                       cwd="/")
    heads = {side: json.loads(proc.stdout.readline()) for side, proc in procs.items()}
    for side, head in heads.items():
        print(f"{side}: {head['module']}")
    names, groups = heads["before"]["names"], heads["before"]["groups"]
    chosen = [i for i, (g, n) in enumerate(zip(groups, names))
              if (a.groups is None or g in a.groups) and (a.only is None or any(w in n for w in a.only))]
    def ask(side: str, line: str) -> dict:
        procs[side].stdin.write(line + "\n")
        procs[side].stdin.flush()
        return json.loads(procs[side].stdout.readline())

    if a.warm:
        for i in chosen:
            for side in procs:
                ask(side, f"{i} warm")
    rows = []
    for j, i in enumerate(chosen):
        row = dict(recording=names[i], group=groups[i])
        for r in range(max(1, a.rounds)):
            for side in (("before", "after") if (j + r) % 2 == 0 else ("after", "before")):
                got = ask(side, f"{i}{' 2' if a.level2 and side == 'after' and r == 0 else ''}")
                if not got["ok"]:
                    raise AssertionError(f"{names[i]}: {side} did not round-trip")
                if side not in row:
                    row[side] = got
                elif got["bytes"] != row[side]["bytes"]:
                    raise AssertionError(f"{names[i]}: {side} wrote other bytes in round {r + 1}")
                else:
                    for field in ("enc_cpu", "enc_wall", "dec_cpu", "dec_wall"):
                        row[side][field] = min(row[side][field], got[field])
        rows.append(row)
        b, f = row["before"], row["after"]
        two = f.get("level2")
        vs2 = f"  vs L2 {f['bytes'] / two - 1:+.2%}{' LARGER' if f['bytes'] > two else ''}" if two else ""
        print(f"{names[i]:40s} {b['values']:9,d}  bytes {b['bytes']:9,d} -> {f['bytes']:9,d} "
              f"({f['bytes'] / b['bytes'] - 1:+.2%})  enc M/s {b['values'] / b['enc_cpu'] / 1e6:.3f} -> "
              f"{f['values'] / f['enc_cpu'] / 1e6:.3f}  dec M/s {b['values'] / b['dec_cpu'] / 1e6:.3f} -> "
              f"{f['values'] / f['dec_cpu'] / 1e6:.3f}{vs2}", flush=True)
    for proc in procs.values():
        proc.stdin.close()
        proc.wait()
    print("\n| group | recordings | values | bytes before | bytes after | bytes | enc M/s CPU before | after "
          "| enc M/s wall before | after | dec M/s CPU before | after | dec M/s wall before | after |")
    print("|---" * 14 + "|")
    for g in dict.fromkeys(r["group"] for r in rows):
        rs = [r for r in rows if r["group"] == g]
        n = sum(r["before"]["values"] for r in rs)

        def total(side, field):
            return sum(r[side][field] for r in rs)

        speeds = " | ".join(f"{n / total(s, f) / 1e6:.3f}" for f in ("enc_cpu", "enc_wall", "dec_cpu", "dec_wall")
                            for s in ("before", "after"))
        print(f"| {g} | {len(rs)} | {n:,} | {total('before', 'bytes'):,} | {total('after', 'bytes'):,} | "
              f"{total('after', 'bytes') / total('before', 'bytes') - 1:+.3%} | {speeds} |")
    if a.json:
        a.json.write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    if sys.argv[1:2] == ["--worker"]:
        worker(container=sys.argv[2:3] == ["--compress"])
    else:
        raise SystemExit(main())
