"""Where level 1's compress time goes: cProfile over ``ubpe.compress(x, level=1, threads=1)`` per
set. Numba's dispatchers report their calls to the profiler as calls of the kernel's Python
function (its file under ``ubpe/_kernels``), so each kernel's own time is its compiled time (a
kernel called inside another compiled kernel is its caller's).

    UBPE_DATA=/work/shared/data nice -n 5 python benchmarks/level1_profile.py [ecg seismic audio]
        [--repeat 5] [--top 40]

Per set: the total CPU time of ``--repeat`` passes over its inputs (profiled: cProfile's own cost
inflates the Python share, about 10-30 %), then the split by phase (the time inside
``ubpe.planner.fast.fast_plan`` but not inside the costing function it calls, the costing
function, i.e. the coders and the container, ``candidate_fields``; the forward passes of the
chains, ``ubpe.frontend``; the rest), the compiled kernels' own time by name, and the top
functions by own time. A figure, not a test.

``--flac``: also FLAC -8's CPU time on the set (a process an input, start-up included, as
benchmarks/bench_level1.py runs it; each input's least of ``--repeat`` runs, alternated with level
1's own least of ``--repeat`` unprofiled compresses), and the bound it sets: level 1's time, its
compiled kernels' own time alone (profiled) and the rest, each over FLAC's. Where the kernels
alone reach FLAC's time, no trimming of the Python side meets it.
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import _data  # noqa: E402


def _sets(names: list[str]) -> dict[str, list[np.ndarray]]:
    out = {}
    for name in names:
        if name == "ecg":
            out[name] = [_data.ecg()]
        elif name == "seismic":
            out[name] = [_data.seismic()]
        elif name == "audio":
            out[name] = [x for x, _rate in _data.audio()]
        elif name == "neural":
            out[name] = [np.concatenate(_data.neural(24))]
        elif name.endswith(".npy"):  # a held-out recording, one file
            out[Path(name).stem] = [np.load(name)]
        else:
            raise SystemExit(f"unknown set {name!r}")
    return out


def _inside(stats: pstats.Stats, match) -> float:
    """Cumulative time of the functions ``match(file, name)`` accepts (their outermost calls:
    pstats' cumulative time already counts recursion once)."""
    return sum(v[3] for (f, _l, n), v in stats.stats.items() if match(f, n))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("sets", nargs="*", default=["ecg", "seismic", "audio"])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--top", type=int, default=30)
    ap.add_argument("--flac", action="store_true", help="FLAC -8 on the same inputs, and the bound")
    args = ap.parse_args()
    import ubpe

    # everything imported (coders, planner) before wrapping, kernels compiled or loaded
    for x in (_data.ecg()[:3000], _data.ecg()):
        ubpe.compress(x, level=1, threads=1)
    for name, xs in _sets(args.sets).items():
        for x in xs:
            ubpe.compress(x, level=1, threads=1)
        t0 = time.process_time()
        for _ in range(args.repeat):
            for x in xs:
                ubpe.compress(x, level=1, threads=1)
        plain = time.process_time() - t0
        prof = cProfile.Profile(time.process_time)
        prof.enable()
        for _ in range(args.repeat):
            for x in xs:
                ubpe.compress(x, level=1, threads=1)
        prof.disable()
        st = pstats.Stats(prof)
        total = st.total_tt
        n = sum(x.size for x in xs) * args.repeat
        print(f"\n## {name}: {n:,} values, unprofiled {plain:.3f} s CPU ({n / plain / 1e6:.2f} M/s), "
              f"profiled {total:.3f} s")
        fast = _inside(st, lambda f, n: n == "fast_plan")
        coded = _inside(st, lambda f, n: n == "candidate_fields")
        plan_cost = _inside(st, lambda f, n: n == "cost" and f.endswith("writer.py"))
        fwd = _inside(st, lambda f, n: n in ("forward_shared",) and f.endswith("candidates.py"))
        kernels = sum(v[2] for (f, _l, _n), v in st.stats.items() if "_kernels" in f)
        print(f"fast_plan {fast / total:.1%} (its costing calls {plan_cost / total:.1%}); candidate_fields (coding + "
              f"container, all calls) {coded / total:.1%}; forward_shared (chains' passes) {fwd / total:.1%}; "
              f"compiled kernels' own time {kernels / total:.1%}")
        if args.flac:
            _flac_bound(name, xs, args.repeat, kernels / args.repeat)
        print("\nkernels by own time (ms per pass over the set, share, calls per pass):")
        ks = sorted(((v[2], v[1], n) for (f, _l, n), v in st.stats.items() if "_kernels" in f), reverse=True)
        for tt, calls, kname in ks[:args.top]:
            print(f"  {kname:40s} {tt / args.repeat * 1e3:8.2f} ms {tt / total:6.1%}  {calls / args.repeat:7.1f}")
        print("\nfast_plan's callees (cumulative, share of the total):")
        st.calc_callees()
        for key, v in st.stats.items():
            if key[2] == "fast_plan":
                for (cf, cl, cn), cv in sorted(st.all_callees[key].items(), key=lambda t: -t[1][3])[:args.top]:
                    print(f"  {cn:34s} {Path(cf).name}:{cl:<6d} cum {cv[3] / total:6.1%} calls/pass {cv[1] / args.repeat:7.1f}")
        print("\nfunctions by own time (kernels included):")
        rows = sorted(((v[2], v[3], v[1], f, ln, fn) for (f, ln, fn), v in st.stats.items()), reverse=True)
        for tt, ct, calls, f, ln, fn in rows[:args.top]:
            where = f"{Path(f).parent.name}/{Path(f).name}:{ln}"
            print(f"  {fn:34s} {where:42s} own {tt / total:6.1%} cum {ct / total:6.1%} calls/pass "
                  f"{calls / args.repeat:8.1f}")
        print("\nfunctions by cumulative time:")
        rows = sorted(((v[3], v[2], v[1], f, ln, fn) for (f, ln, fn), v in st.stats.items()), reverse=True)
        for ct, tt, calls, f, ln, fn in rows[:args.top]:
            where = f"{Path(f).parent.name}/{Path(f).name}:{ln}"
            print(f"  {fn:34s} {where:42s} cum {ct / total:6.1%} own {tt / total:6.1%} calls/pass "
                  f"{calls / args.repeat:8.1f}")


def _flac_bound(name: str, xs: list[np.ndarray], repeat: int, kernels: float) -> None:
    """Print FLAC -8's CPU time on ``xs`` against level 1's and its kernels' (``kernels``: their
    own CPU seconds a pass over ``xs``, profiled): each input's least of ``repeat`` runs of each,
    alternated."""
    import tempfile

    import ubpe
    from bench_level1 import Flac, _child_cpu, flac_startup

    ours = theirs = 0.0
    with tempfile.TemporaryDirectory() as tmp:
        for x in xs:
            flac = Flac(x, 44100, tempfile.mkdtemp(dir=tmp))
            if flac.bits is None:
                raise SystemExit(f"{name}: FLAC does not take {x.dtype} values")
            best_u = best_f = float("inf")
            for _ in range(repeat):
                t0 = time.process_time()
                ubpe.compress(x, level=1, threads=1)
                best_u = min(best_u, time.process_time() - t0)
                best_f = min(best_f, _child_cpu(flac.enc, flac.dir)[0])
            ours += best_u
            theirs += best_f
        start = flac_startup(repeat)
    print(f"\nagainst FLAC -8 (CPU ms a pass, each input's least of {repeat}; FLAC's start-up {start * 1e3:.2f} ms a "
          f"process, {len(xs)} processes): level 1 {ours * 1e3:.2f}, FLAC {theirs * 1e3:.2f}; over FLAC's: level 1 "
          f"{ours / theirs:.2f}, its compiled kernels' own time alone {kernels / theirs:.2f} ({kernels * 1e3:.2f} ms, "
          f"profiled), the rest {(ours - kernels) / theirs:.2f}")


if __name__ == "__main__":
    main()
