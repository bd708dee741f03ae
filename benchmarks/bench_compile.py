"""Where the first call's time goes, per kernel: python benchmarks/bench_compile.py [--levels 2,1]

Runs compress + decompress of a 20 000-sample int16 random walk at each level (``threads=1``,
so that a thread waiting for numba's compiler lock adds no CPU time to another's compile) in
two new processes sharing a fresh numba cache: the first compiles everything (cold), the
second loads it (cached). Both print CPU seconds (``time.process_time``):

* cold: per compiled function (each ubpe kernel and each numba overload implementation it
  needs, such as ``np.zeros``), the compile time *exclusive* of the functions compiled while
  it was (its callees), largest first; their sum is the cold compile total;
* cached: per kernel, the time to load its compiled code from the cache (the first of them also
  pays numba's one-time target initialisation, which imports numba's numpy and scipy support).

This is the breakdown behind ``bench_speed.py``'s cold and cached totals: a kernel's line here
is what removing, merging or simplifying it could save.

``--processes N``: instead, what processes sharing a cold cache pay (``ubpe._cache.compile_lock``):
one child alone in a fresh cache, then N side by side in another with the kernels' compile locks,
then N side by side in a third without them (the lock replaced by a no-op in the children), each
configuration's CPU seconds summed over its children and its wall seconds.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent

_CHILD = r"""
import collections, json, sys, time
T = time.process_time
import numpy as np
from numba.core import caching, dispatcher
compile_s = collections.defaultdict(float)
load_s = collections.defaultdict(float)
stack = [0.0]  # CPU time of the compilations nested in the current one

_compile = dispatcher.Dispatcher.compile
def compile(self, sig):
    stack.append(0.0)
    c = T()
    try:
        return _compile(self, sig)
    finally:
        spent = T() - c
        nested = stack.pop()
        compile_s[f"{self.py_func.__module__}.{self.py_func.__qualname__}"] += spent - nested
        stack[-1] += spent
dispatcher.Dispatcher.compile = compile

_load = caching.Cache.load_overload
def load_overload(self, sig, target_context):
    c = T()
    try:
        return _load(self, sig, target_context)
    finally:
        f = self._py_func
        load_s[f"{f.__module__}.{f.__qualname__}"] += T() - c
caching.Cache.load_overload = load_overload

if NO_LOCK:  # (--processes' comparison: every process compiles what it lacks)
    import contextlib, ubpe._kernels
    ubpe._kernels.compile_lock = lambda name: contextlib.nullcontext()
c = T(); import ubpe; import_s = T() - c
x = np.cumsum(np.random.default_rng(0).integers(-3, 4, 20000)).astype(np.int16)
c = T()
for level in LEVELS:
    ubpe.decompress(ubpe.compress(x, level=level, threads=1))
calls_s = T() - c
loaded = {k: v for k, v in load_s.items()}
json.dump(dict(import_s=import_s, calls_s=calls_s, compile_s=dict(compile_s), load_s=loaded), sys.stdout)
"""


def _env(cache: str) -> dict:
    # as _measure.compile_times: the children may write bytecode, so the cached child reads
    # ubpe's compiled sources as an installed package does (with PYTHONDONTWRITEBYTECODE set
    # every run compiled them again: compiling all of ubpe's sources takes about 0.13 s CPU)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["NUMBA_CACHE_DIR"] = cache
    return env


def side_by_side(levels: list[int], processes: int, lock: bool) -> tuple[float, float]:
    """``processes`` cold children started together on one fresh cache: (their CPU seconds summed
    (each child's own ``calls_s`` and ``import_s``), the wall seconds until the last ended)."""
    script = _CHILD.replace("LEVELS", repr(tuple(levels))).replace("NO_LOCK", repr(not lock))
    with tempfile.TemporaryDirectory(prefix="ubpe-numba-cache-") as cache:
        w0 = time.perf_counter()
        children = [subprocess.Popen([sys.executable, "-c", script], env=_env(cache), cwd=HERE.parent,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                    for _ in range(processes)]
        cpu = 0.0
        for child in children:
            out, err = child.communicate(timeout=3600)
            if child.returncode != 0:
                raise RuntimeError(f"a child failed:\n{err[-2000:]}")
            report = json.loads(out.strip().splitlines()[-1])
            cpu += report["import_s"] + report["calls_s"]
        return cpu, time.perf_counter() - w0


def run(levels: list[int]) -> tuple[dict, dict]:
    """The cold and the cached child's reports (module docstring)."""
    script = _CHILD.replace("LEVELS", repr(tuple(levels))).replace("NO_LOCK", "False")
    out = []
    with tempfile.TemporaryDirectory(prefix="ubpe-numba-cache-") as cache:
        env = _env(cache)
        for label in ("cold", "cached"):
            r = subprocess.run([sys.executable, "-c", script], env=env, cwd=HERE.parent,
                               capture_output=True, text=True, timeout=3600)
            if r.returncode != 0:
                raise RuntimeError(f"{label} run failed:\n{r.stderr[-2000:]}")
            out.append(json.loads(r.stdout.strip().splitlines()[-1]))
    return out[0], out[1]


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--levels", default="2,1", help="levels compressed in turn (default 2,1)")
    ap.add_argument("--top", type=int, default=40, help="rows of the cold table")
    ap.add_argument("--json", help="also write both reports to this file")
    ap.add_argument("--processes", type=int, default=0,
                    help="instead: this many cold processes side by side, with and without the compile locks")
    args = ap.parse_args(argv)
    levels = [int(v) for v in args.levels.split(",")]
    if args.processes:
        print(f"levels {levels}, CPU seconds summed over the processes, wall seconds:")
        for label, n, lock in (("one process alone", 1, True), (f"{args.processes} side by side, locks", args.processes, True),
                               (f"{args.processes} side by side, no locks", args.processes, False)):
            cpu, wall = side_by_side(levels, n, lock)
            print(f"  {label:32s} CPU {cpu:7.1f} s  wall {wall:7.1f} s")
        return
    cold, cached = run([int(v) for v in args.levels.split(",")])
    rows = sorted(cold["compile_s"].items(), key=lambda kv: -kv[1])
    total = sum(v for _, v in rows)
    print(f"cold: import ubpe {cold['import_s']:.2f} s, calls {cold['calls_s']:.2f} s CPU, of which "
          f"compiling {total:.2f} s in {len(rows)} functions (the import's included)")
    for name, secs in rows[: args.top]:
        print(f"  {secs:7.3f}  {name}")
    loads = sorted(cached["load_s"].items(), key=lambda kv: -kv[1])
    print(f"\ncached: import ubpe {cached['import_s']:.2f} s, calls {cached['calls_s']:.2f} s CPU, of which "
          f"loading {sum(v for _, v in loads):.3f} s for {len(loads)} kernels (the import's included)")
    for name, secs in loads[: args.top]:
        print(f"  {1e3 * secs:7.1f} ms  {name}")
    if args.json:
        Path(args.json).write_text(json.dumps(dict(cold=cold, cached=cached), indent=1))


if __name__ == "__main__":
    main()
