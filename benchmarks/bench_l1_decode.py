"""Level-1 decompression speed on every signal set (issue target: >= 50 M values/s).

    python benchmarks/bench_l1_decode.py                    # every set, best of 200 calls
    python benchmarks/bench_l1_decode.py --data audio-each float-step --repeat 500
    python benchmarks/bench_l1_decode.py --cache /tmp/l1.pkl  # containers built once, reused
    python benchmarks/bench_l1_decode.py --profile float-step # + a cProfile of decompress

The containers are ``ubpe.compress(x, level=1)`` of the sets of ``bench_signals.py``
(``bench_ratio.load``; ``*-each``: every file alone), and float-step is
``ubpe.compress(np.load(float/BW_UH4_EHZ.npy), step=1, level=1)``. With ``--cache`` they are
pickled on the first run and read back by later ones, so two source trees (A/B: run this once
with each tree on ``PYTHONPATH``) decode the very same bytes. Every container's decoded values
are checked against the input once (float-step: within step / 2).

Timing: numba compilation and first-call caches are done first (two untimed calls); then
``--rounds`` rounds, each timing ``--repeat`` back-to-back ``decompress`` calls of every
container of the set. A set's time is the sum over its containers of the best (smallest) call,
in process CPU time (``time.process_time``; robust to waiting for a core on a shared machine)
and in wall time (``time.perf_counter``). M values/s = the set's values / that time.

``--profile SET`` prints the functions where one container's decompress spends its time
(cProfile over ``--repeat`` calls, per call in microseconds, by own time).
"""

from __future__ import annotations

import argparse
import cProfile
import pickle
import pstats
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import _data  # noqa: E402
from bench_ratio import load  # noqa: E402

import ubpe  # noqa: E402

SETS = ["neural24-each", "neural24-concat", "neural120-concat", "ecg", "seismic", "audio-each", "float-q",
        "float-step"]
QUICK = ["ecg", "seismic", "audio-each", "float-q", "float-step"]
TARGET = 50e6


def build(name: str) -> tuple[list[bytes], list[np.ndarray], float]:
    """(level-1 containers, their inputs, allowed max error: 0 lossless, step / 2 for float-step)."""
    if name == "float-step":
        x = np.load(_data.data_dir() / "float" / "BW_UH4_EHZ.npy")
        return [ubpe.compress(x, step=1, level=1)], [x], 0.5
    inputs, _rate = load(name)
    return [ubpe.compress(x, level=1) for x in inputs], inputs, 0.0


def check(name: str, containers: list[bytes], inputs: list[np.ndarray], tol: float) -> None:
    for c, x in zip(containers, inputs):
        back = ubpe.decompress(c)
        if back.shape != x.shape:
            raise AssertionError(f"{name}: shape {back.shape} != {x.shape}")
        if tol:
            err = float(np.max(np.abs(back.astype(np.float64) - x))) if x.size else 0.0
            if not err <= tol * (1 + 1e-9):
                raise AssertionError(f"{name}: max error {err} > {tol}")
        elif back.dtype != x.dtype or not np.array_equal(back, x):
            raise AssertionError(f"{name}: values differ")


def time_set(containers: list[bytes], repeat: int, rounds: int) -> tuple[float, float]:
    """(sum of the best CPU seconds per container, sum of the best wall seconds per container)."""
    dec = ubpe.decompress
    best_cpu = [float("inf")] * len(containers)
    best_wall = [float("inf")] * len(containers)
    for c in containers:
        dec(c)
        dec(c)
    for _ in range(rounds):
        for i, c in enumerate(containers):
            for _ in range(repeat):
                t0 = time.perf_counter()
                p0 = time.process_time()
                dec(c)
                p1 = time.process_time()
                t1 = time.perf_counter()
                best_cpu[i] = min(best_cpu[i], p1 - p0)
                best_wall[i] = min(best_wall[i], t1 - t0)
    return sum(best_cpu), sum(best_wall)


def profile(name: str, c: bytes, repeat: int, top: int) -> None:
    pr = cProfile.Profile()
    ubpe.decompress(c)
    pr.enable()
    for _ in range(repeat):
        ubpe.decompress(c)
    pr.disable()
    st = pstats.Stats(pr)
    rows = sorted(st.stats.items(), key=lambda kv: -kv[1][2])  # own time
    total = sum(v[2] for _, v in st.stats.items())
    print(f"\n-- profile {name}: one container of {len(c)} bytes, {total / repeat * 1e6:.1f} us a call "
          f"(profiled; own time per call, top {top})")
    for (file, line, func), (cc, nc, tt, ct, _callers) in rows[:top]:
        where = f"{Path(file).name}:{line}" if line else file
        print(f"  {tt / repeat * 1e6:8.2f} us own  {ct / repeat * 1e6:8.2f} us cum  {nc // repeat:4d}x  "
              f"{func} ({where})")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", nargs="+", default=SETS, choices=SETS)
    ap.add_argument("--quick", action="store_true", help=f"only {', '.join(QUICK)}")
    ap.add_argument("--repeat", type=int, default=50, help="calls per container per round")
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--cache", type=Path, help="pickle of the containers (written if missing)")
    ap.add_argument("--profile", nargs="*", default=[], choices=SETS, metavar="SET")
    ap.add_argument("--top", type=int, default=18)
    args = ap.parse_args(argv)
    names = QUICK if args.quick else args.data

    cache = {}
    if args.cache and args.cache.exists():
        cache = pickle.loads(args.cache.read_bytes())
    built = False
    for name in set(names) | set(args.profile):
        if name not in cache:
            cache[name] = build(name)
            built = True
    if args.cache and built:
        args.cache.write_bytes(pickle.dumps(cache))

    print(f"ubpe from {Path(ubpe.__file__).parent}; best of {args.rounds} x {args.repeat} calls per container")
    print(f"{'set':18s} {'files':>5s} {'values':>10s} {'bytes':>9s} {'cpu M/s':>8s} {'wall M/s':>8s} "
          f"{'us/file':>8s}")
    worst = None
    for name in names:
        containers, inputs, tol = cache[name]
        check(name, containers, inputs, tol)
        n = sum(x.size for x in inputs)
        cpu, wall = time_set(containers, args.repeat if n < 1e6 else max(2, args.repeat // 25), args.rounds)
        rate = n / cpu / 1e6
        worst = rate if worst is None else min(worst, rate)
        print(f"{name:18s} {len(containers):5d} {n:10d} {sum(map(len, containers)):9d} {rate:8.1f} "
              f"{n / wall / 1e6:8.1f} {cpu / len(containers) * 1e6:8.1f}", flush=True)
    print(f"slowest set: {worst:.1f} M values/s (CPU): target {TARGET / 1e6:.0f} "
          f"{'met' if worst * 1e6 >= TARGET else 'NOT met'}")
    for name in args.profile:
        containers = cache[name][0]
        profile(name, containers[0], args.repeat, args.top)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
