"""Level 3's bytes from two source trees, compared file by file: a refactor of the coder's kernels
must leave every payload byte for byte as it was.

    UBPE_DATA=/work/shared/data python benchmarks/level3_bytes_ab.py BEFORE_TREE [AFTER_TREE]
        [--audio N] [--npy PATH ...] [--coder]

Each tree runs in its own process (its ``.venv/bin/python`` when it has one, else this one, with
``PYTHONPATH=<tree>``) and writes, per recording (the ECG, the seismic record, the first N audio
files and every ``.npy`` named, or in a folder named, 2-D kept), ``ubpe.compress(x, level=3,
threads=1)``'s length, SHA-256 and level-3 header version (the payload's first byte), after
checking the round trip; with ``--coder``, ``ubpe.level3.encode(x)`` instead of the container.
Prints one line a recording and exits 1 when any output differs.
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
import hashlib, json, sys
from pathlib import Path
import numpy as np
sys.path.insert(0, HERE)
import _data
import ubpe
from ubpe import level3
recs = [("ecg", _data.ecg()), ("seismic", _data.seismic())]
files = sorted((_data.data_dir() / "audio").glob("*.wav"), key=lambda p: p.name.encode())
for path, (x, rate) in list(zip(files, _data.audio()))[:AUDIO]:
    recs.append((f"audio/{path.stem}", x))
for where in NPY:
    for path in sorted(Path(where).glob("*.npy")) if Path(where).is_dir() else [Path(where)]:
        recs.append((f"npy/{path.stem}", np.load(path)))
for name, x in recs:
    if CODER:
        data = level3.encode(x)
        back = level3.decode(data)
        version = data[0]
    else:
        data = ubpe.compress(x, level=3, threads=1)
        back = ubpe.decompress(data, threads=1)
        version = ubpe.describe(data).coder
    ok = bool(back.dtype == x.dtype and np.array_equal(back, x))
    print(json.dumps(dict(name=name, bytes=len(data), sha=hashlib.sha256(data).hexdigest(), version=str(version),
                          ok=ok, module=ubpe.__file__)), flush=True)
"""


def outputs(tree: Path, audio: int, npy: list[str], coder: bool) -> list[dict]:
    py = tree / ".venv" / "bin" / "python"
    script = (_CHILD.replace("HERE", repr(str(HERE))).replace("AUDIO", str(audio))
              .replace("NPY", repr(npy)).replace("CODER", str(coder)))
    env = dict(os.environ, PYTHONPATH=str(tree))
    r = subprocess.run([str(py) if py.exists() else sys.executable, "-c", script], env=env, cwd=tree,
                       capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"{tree}: {r.stderr[-3000:]}")
    rows = [json.loads(line) for line in r.stdout.splitlines() if line.startswith("{")]
    assert all(Path(row["module"]).resolve().is_relative_to(tree.resolve()) for row in rows), rows[0]["module"]
    return rows


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("before", type=Path)
    p.add_argument("after", type=Path, nargs="?", default=HERE.parent)
    p.add_argument("--audio", type=int, default=4, help="the first N audio files (sorted names)")
    p.add_argument("--npy", nargs="*", default=[], help=".npy recordings, or folders of them (2-D kept)")
    p.add_argument("--coder", action="store_true", help="level3.encode's bytes, not the container's")
    args = p.parse_args(argv)
    before = outputs(args.before, args.audio, args.npy, args.coder)
    after = outputs(args.after, args.audio, args.npy, args.coder)
    same = True
    for b, a in zip(before, after, strict=True):
        eq = b["sha"] == a["sha"] and b["ok"] and a["ok"]
        same &= eq
        print(f"{'same' if eq else 'DIFF'}  {a['name']:<48} {b['bytes']:>9} {a['bytes']:>9}  {a['version']}")
    print("all identical" if same else "OUTPUTS DIFFER")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
