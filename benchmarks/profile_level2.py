"""Where level 2's compress time goes, without cProfile's per-call overhead (issue 28, target 2):

    UBPE_DATA=/work/shared/data nice -n 5 python benchmarks/profile_level2.py [--sets ecg,seismic,audio7,audio]
        [--rounds 5] [--top 12] [--sample 0] [--rest-only]

Every compiled kernel that Python calls (each ``CPUDispatcher`` attribute of the ``ubpe``
modules, replaced by a wrapper that adds its ``time.process_time``; kernels called from other
kernels are not wrapped, so nothing is counted twice) is timed over ``--rounds`` compresses
(``ubpe.compress(x, threads=1)``, level 2, after two warm-ups); printed per set: the compress in
ms of CPU time, the kernels' share, "the rest" (Python, numpy, msgpack, allocation), and the
``--top`` kernels with their calls a compress. A wrapper costs about 1 us a call (100-2 300
calls a compress here). Sets: ecg, seismic, audio (the 32 short files, each alone), audioN (the
N-th of them), neural (the 24 recordings joined).

``--sample K``: also K rounds under a SIGPROF sampler (``setitimer``, 0.1 ms asked; the kernel's
timer granularity gives about one sample per 4 ms here) and the share of samples per function,
inclusive (on the stack) and per line at the top of the stack (a kernel's time is its calling
line's); for finding the rest's parts, which cProfile inflates about threefold. ``--rest-only``:
only the samples taken outside the kernels' wrappers (the rest's share); a kernel's time still
lands on the first Python code run after it (e.g. numba's ``_numba_unpickle`` when a kernel
returns an array).
"""

from __future__ import annotations

import argparse
import collections
import importlib
import pkgutil
import signal
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))


def _signals(name: str) -> list:
    import _data
    import numpy as np

    if name == "ecg":
        return [_data.ecg()]
    if name == "seismic":
        return [_data.seismic()]
    if name == "neural":
        return [np.concatenate(_data.neural(24))]
    audio = [x for x, _rate in _data.audio()]
    if name == "audio":
        return audio
    if name.startswith("audio"):
        return [audio[int(name[5:])]]
    raise ValueError(f"unknown set {name!r}")


def _wrap_kernels(acc: dict) -> None:
    """Replace every compiled kernel reachable as a module attribute of ``ubpe`` by a timing wrapper."""
    from numba.core.registry import CPUDispatcher

    import ubpe._kernels as kernels

    for m in pkgutil.iter_modules(kernels.__path__):
        importlib.import_module("ubpe._kernels." + m.name)
    for modname, mod in list(sys.modules.items()):
        if not modname.startswith("ubpe.") or mod is None:
            continue
        for name in dir(mod):
            f = getattr(mod, name, None)
            if not isinstance(f, CPUDispatcher):
                continue
            label = f"{f.py_func.__module__.split('.')[-1]}.{f.py_func.__name__}"

            def timed(*args, _f=f, _label=label, **kwargs):
                t = time.process_time()
                out = _f(*args, **kwargs)
                entry = acc.setdefault(_label, [0, 0.0])
                entry[0] += 1
                entry[1] += time.process_time() - t
                return out

            setattr(mod, name, timed)


def _sample(xs: list, rounds: int, top: int, rest_only: bool) -> None:
    import ubpe

    inclusive, leaf, count = collections.Counter(), collections.Counter(), [0]

    def handler(_sig, frame):
        count[0] += 1
        if rest_only and frame.f_code.co_name == "timed":
            return  # (a kernel's time: the wrappers of _wrap_kernels)
        seen, f, first = set(), frame, True
        while f is not None:
            key = f"{'/'.join(f.f_code.co_filename.split('/')[-2:])}:{f.f_code.co_name}"
            if first:
                leaf[f"{key}:{f.f_lineno}"] += 1
                first = False
            if key not in seen:
                inclusive[key] += 1
                seen.add(key)
            f = f.f_back

    signal.signal(signal.SIGPROF, handler)
    signal.setitimer(signal.ITIMER_PROF, 0.0001, 0.0001)
    for _ in range(rounds):
        for x in xs:
            ubpe.compress(x, threads=1)
    signal.setitimer(signal.ITIMER_PROF, 0, 0)
    kept = sum(leaf.values())
    print(f"  {count[0]} samples, {kept} outside the kernels" if rest_only else f"  {count[0]} samples")
    print("  inclusive (share of all samples):")
    for k, c in inclusive.most_common(2 * top):
        print(f"    {100 * c / count[0]:5.1f} %  {k}")
    print("  top of the stack:")
    for k, c in leaf.most_common(top):
        print(f"    {100 * c / count[0]:5.1f} %  {k}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sets", default="ecg,seismic,audio7,audio")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--top", type=int, default=12)
    ap.add_argument("--sample", type=int, default=0)
    ap.add_argument("--rest-only", action="store_true", help="sample only outside the kernels")
    args = ap.parse_args()
    import ubpe

    acc: dict[str, list] = {}
    sets = {name: _signals(name) for name in args.sets.split(",") if name}
    # every kernel compiled (or loaded) before the wrappers replace the module attributes: a kernel
    # that calls another by its global name cannot compile against a Python wrapper
    for xs in sets.values():
        for x in xs:
            ubpe.compress(x, threads=1)
    _wrap_kernels(acc)
    for name, xs in sets.items():
        for x in xs:
            for _ in range(2):
                ubpe.compress(x, threads=1)
        acc.clear()
        t = time.process_time()
        for _ in range(args.rounds):
            for x in xs:
                ubpe.compress(x, threads=1)
        total = (time.process_time() - t) / args.rounds
        kern = sum(v[1] for v in acc.values()) / args.rounds
        calls = sum(v[0] for v in acc.values()) / args.rounds
        values = sum(x.size for x in xs)
        print(f"{name}: {values} values, compress {total * 1e3:.2f} ms CPU ({values / total / 1e6:.2f} M/s), "
              f"kernels {kern * 1e3:.2f} ms ({calls:.0f} calls), the rest {(total - kern) * 1e3:.2f} ms "
              f"({100 * (total - kern) / total:.0f} %)")
        for label, (c, d) in sorted(acc.items(), key=lambda kv: -kv[1][1])[:args.top]:
            print(f"  {d / args.rounds * 1e3:8.3f} ms {c / args.rounds:7.1f} calls  {label}")
        if args.sample:
            _sample(xs, args.sample, args.top, args.rest_only)


if __name__ == "__main__":
    main()
