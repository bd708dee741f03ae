"""A local Dask cluster's first work in a fresh kernel cache, with and without the kernels'
compile locks (``ubpe._cache.compile_lock``): the worker processes share the cache, so with the
locks one compiles a kernel and the other loads it.

    python benchmarks/bench_dask_cold.py [--workers 2] [--rounds 2]

Each run is a new process with a fresh ``NUMBA_CACHE_DIR`` that starts a ``LocalCluster`` of
``--workers`` worker processes (one thread each; not timed), then times
``ubpe.dask.fit(x, n_tokens=512, predictor="delta1")`` and then ``ubpe.dask.compress(x, tok,
level=1)`` computed on it, where ``x`` is the bundled ECG excerpt tiled
to 8 chunks of 20 000 values: wall seconds, and CPU seconds summed over the workers
(``resource.getrusage`` through ``Client.run``, before and after) and the client. In the runs
without the locks, every process replaces the lock by a no-op before any kernel compiles. The
two kinds alternate over ``--rounds``; each run's figures are printed, then the medians.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

_CHILD = r"""
import contextlib, json, resource, sys, time, warnings
import numpy as np
LOCKS = sys.argv[1] == "1"

def no_lock():
    import ubpe._kernels
    if not LOCKS:
        ubpe._kernels.compile_lock = lambda name: contextlib.nullcontext()

def cpu():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime

no_lock()
import dask.array as da
import ubpe, ubpe.dask
from distributed import Client, LocalCluster
from importlib.resources import files
warnings.simplefilter("ignore")
x = np.load(files("ubpe") / "data" / "mitbih_208_excerpt.npy")
x = np.resize(x, 8 * 20000)
with LocalCluster(n_workers=int(sys.argv[2]), threads_per_worker=1, processes=True, dashboard_address=":0") as cluster, \
        Client(cluster) as client:
    client.run(no_lock)
    arr = da.from_array(x, chunks=20000)
    before = sum(client.run(cpu).values()) + cpu()
    w0 = time.perf_counter()
    tok = ubpe.dask.fit(arr, n_tokens=512, predictor="delta1")
    parts = client.compute(ubpe.dask.compress(arr, tok, level=1), sync=True)
    wall = time.perf_counter() - w0
    spent = sum(client.run(cpu).values()) + cpu() - before
    assert all(len(p) for p in parts)
print(json.dumps(dict(wall=wall, cpu=spent)))
"""


def run(locks: bool, workers: int) -> dict:
    with tempfile.TemporaryDirectory(prefix="ubpe-numba-cache-") as cache:
        env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        env["NUMBA_CACHE_DIR"] = cache
        r = subprocess.run([sys.executable, "-c", _CHILD, "1" if locks else "0", str(workers)], env=env,
                           capture_output=True, text=True, timeout=3600)
        if r.returncode != 0:
            raise RuntimeError(r.stderr[-3000:])
        return json.loads(r.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=2)
    args = ap.parse_args(argv)
    got: dict[bool, list[dict]] = {True: [], False: []}
    for k in range(args.rounds):
        for locks in ((True, False) if k % 2 == 0 else (False, True)):
            r = run(locks, args.workers)
            got[locks].append(r)
            print(f"round {k + 1}, {'locks   ' if locks else 'no locks'}: wall {r['wall']:6.1f} s, CPU {r['cpu']:6.1f} s",
                  flush=True)
    for locks in (True, False):
        rows = got[locks]
        print(f"median, {'locks   ' if locks else 'no locks'}: wall {statistics.median(r['wall'] for r in rows):6.1f} s, "
              f"CPU {statistics.median(r['cpu'] for r in rows):6.1f} s ({args.workers} workers, {len(rows)} runs)")


if __name__ == "__main__":
    main()
