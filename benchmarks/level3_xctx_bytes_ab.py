"""Level 3's exact-value contexts forced on, two source trees compared payload by payload: a
same-bytes speedup of ``ubpe._kernels.mixctx`` must leave every ``xctx`` = 1 payload as it was
(the encoder's choice moves bytes by design; this codes with fixed parameters, no search).

    python benchmarks/level3_xctx_bytes_ab.py BEFORE_TREE [AFTER_TREE] --npy DIR [DIR ...]
        [--xctx 1] [--frames 60000]

Each tree runs in its own process (``PYTHONPATH=<tree>``, this interpreter). Per ``.npy`` file
(integers, 2-D kept, the first ``--frames`` frames): ``level3.encode(x, params=defaults with
xctx and the value model where the range allows, front=None)``'s length and SHA-256 (first 16
hex digits), after checking the round trip. Prints one line a file and exits 1 when any differs.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent

_CHILD = r"""
import glob, hashlib, sys
import numpy as np
from ubpe import level3
from ubpe._kernels import mixsignal as k
xctx, frames = int(sys.argv[1]), int(sys.argv[2])
for where in sys.argv[3:]:
    for f in sorted(glob.glob(where + "/*.npy")):
        x = np.load(f)
        if x.dtype.kind not in "iu":
            continue
        x = x[:frames]
        C = 1 if x.ndim == 1 else x.shape[1]
        p = level3.default_params(C)
        p[k.PRM_XCTX] = xctx
        p[k.PRM_VMOD] = 1 if int(x.max()) - int(x.min()) < k.VM_MAX_RANGE else 0
        d = level3.encode(x, params=p, front=None)
        ok = bool(np.array_equal(level3.decode(d), x))
        print(f.split("/")[-1], len(d), hashlib.sha256(d).hexdigest()[:16], ok, flush=True)
"""


def run(tree: Path, xctx: int, frames: int, npy: list[str]) -> list[str]:
    env = dict(os.environ, PYTHONPATH=str(tree.resolve()))
    out = subprocess.run([sys.executable, "-c", _CHILD, str(xctx), str(frames), *npy], env=env, cwd="/",
                         capture_output=True, text=True, check=True)
    return out.stdout.splitlines()


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("before", type=Path)
    p.add_argument("after", type=Path, nargs="?", default=HERE.parent)
    p.add_argument("--npy", nargs="+", required=True, help="folders of .npy recordings")
    p.add_argument("--xctx", type=int, default=1)
    p.add_argument("--frames", type=int, default=60000)
    a = p.parse_args(argv)
    before = run(a.before, a.xctx, a.frames, a.npy)
    after = run(a.after, a.xctx, a.frames, a.npy)
    differ = 0
    for b, f in zip(before, after):
        same = b == f and b.endswith("True")
        differ += not same
        print(f"{'same' if same else 'DIFFERS'}  {b}" + ("" if same else f"  ->  {f}"))
    differ += len(before) != len(after)
    print(f"{len(before)} recordings, {differ} differ")
    return 1 if differ else 0


if __name__ == "__main__":
    raise SystemExit(main())
