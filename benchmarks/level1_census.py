"""Level 1's bytes, CPU time and "mag" choices on every input, per group, and against an earlier run:
what a planner setting (a pruned candidate) costs in bytes, input by input.

    UBPE_DATA=/work/shared/data nice -n 5 python benchmarks/level1_census.py --out /tmp/a.json
    UBPE_DATA=/work/shared/data nice -n 5 python benchmarks/level1_census.py --out /tmp/b.json \\
        --settings '{"fast_keep": 2}' --compare /tmp/a.json

The inputs: those of benchmarks/sizes.py without the texts (the bench sets, float-q, float-step and
``--unseen``), and every ``.npy`` of each ``--more`` folder, as it is (frames x channels), under
the folder's name. Each input is compressed at level 1 once untimed and once timed (one thread,
``time.process_time``: a single figure, only a hint; measure speed with bench_level1_checkout.py).
The JSON holds, per input, its bytes, CPU seconds, values, and each "mag" stream's (rate, pb, n).
``--compare``: per group (the name before the first "/") the bytes and CPU of both runs, and
every input whose bytes moved by more than ``--show`` (a fraction).
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

import sizes  # noqa: E402

import ubpe  # noqa: E402
from ubpe.coders import mag  # noqa: E402
from ubpe.planner import settings as planner_settings  # noqa: E402


def census(inputs: list[tuple[str, np.ndarray, dict]], changes: dict) -> dict:
    """{name: {"bytes", "cpu", "n", "mag": [[rate, pb, n], ...]}} of level 1 on ``inputs``."""
    chosen: list = []
    plain = mag._encode_mag

    def recording(*args, **kwargs):  # (the coder's choices, as it returns them)
        found = plain(*args, **kwargs)
        if found is not None:
            chosen.append([int(found["rate"]), int(found["pb"]), int(found["n"])])
        return found

    mag._encode_mag = recording
    out = {}
    try:
        for name, x, opts in inputs:
            with planner_settings.configured(**changes):
                ubpe.compress(x, level=1, threads=1, **opts)
                chosen.clear()
                t = time.process_time()
                blob = ubpe.compress(x, level=1, threads=1, **opts)
                cpu = time.process_time() - t
            out[name] = {"bytes": len(blob), "cpu": cpu, "n": int(np.asarray(x).size), "mag": list(chosen)}
            print(f"{name}: {len(blob)} B, {cpu * 1e3:.1f} ms, mag {chosen}", flush=True)
    finally:
        mag._encode_mag = plain
    return out


def compare(mine: dict, other: dict, show: float) -> None:
    """Print per group (and in all) the bytes and CPU of ``other`` -> ``mine``, and the inputs moved."""
    groups: dict[str, list] = {}
    for k in mine:
        if k in other:
            g = groups.setdefault(k.split("/")[0], [0, 0, 0.0, 0.0, 0])
            g[0] += other[k]["bytes"]
            g[1] += mine[k]["bytes"]
            g[2] += other[k]["cpu"]
            g[3] += mine[k]["cpu"]
            g[4] += 1
    total = [0, 0, 0.0, 0.0, 0]
    for name, g in list(groups.items()) + [("total", total)]:
        if name != "total":
            total[:] = [a + b for a, b in zip(total, g)]
        print(f"{name:18s} {g[4]:3d} inputs: {g[0]:10d} -> {g[1]:10d} B ({100 * (g[1] / g[0] - 1):+.3f} %), "
              f"CPU {g[2] * 1e3:8.1f} -> {g[3] * 1e3:8.1f} ms")
    for k in mine:
        if k in other and mine[k]["bytes"] != other[k]["bytes"]:
            a, b = other[k]["bytes"], mine[k]["bytes"]
            if abs(b - a) > show * a:
                print(f"  {k}: {a} -> {b} ({100 * (b - a) / a:+.2f} %)")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--unseen", default="/work/unseen-data")
    ap.add_argument("--more", nargs="*", default=["/work/unseen2", "/work/weather-data"],
                    help="folders of .npy arrays, each taken as it is")
    ap.add_argument("--settings", help="as benchmarks/sizes.py's")
    ap.add_argument("--compare")
    ap.add_argument("--show", type=float, default=0.0)
    a = ap.parse_args(argv)
    unseen = a.unseen if a.unseen and Path(a.unseen).is_dir() else None
    inputs = sizes.inputs(unseen, False, False, False)
    for folder in a.more:
        if Path(folder).is_dir():
            inputs += [(f"{Path(folder).name}/{p.name}", np.load(p), {}) for p in sorted(Path(folder).glob("*.npy"))]
    found = census(inputs, sizes.settings_argument(a.settings))
    Path(a.out).write_text(json.dumps(found, indent=1) + "\n")
    if a.compare:
        compare(found, json.loads(Path(a.compare).read_text()), a.show)
    return 0


if __name__ == "__main__":
    sys.exit(main())
