"""The ceiling of level 2's finalist cuts (issue 28, target 2): compress with the lean search's
context-mixing finalists replaced by the one that wins (an oracle), alternated with the
unchanged compress, the same bytes checked.

    UBPE_DATA=/work/shared/data nice -n 5 python benchmarks/bench_level2_oracle.py
        [--sets ecg,seismic,audio] [--rounds 3] [--repeat 3] [--exact]

The lean search (``ubpe/planner/lean.py``) screens every chain, ranks the survivors by static
estimates, sizes its finalists' context-mixing candidates ("cms2", on a sample or in full) and
builds the best in full. Any rule that picks the finalist more cheaply (an estimate, a prefix)
saves at most the losing finalists' work: this script measures that saving by forcing the
finalists to the chain that wins anyway (found per signal by compressing with each chain forced
alone and keeping the first whose bytes equal the default's), so the screen, the estimates, the
static candidates and the winner's coding are all still run. Per set: ``--rounds`` alternated
rounds of (default, oracle), each the least of ``--repeat`` compresses a signal summed, CPU time
(``time.process_time``), one thread; and whether every container is the default's.

``--exact``: also every forced chain's container size per signal (what an estimate that picked
that chain would cost in bytes).

How the finalists are forced: ``lean_plan`` calls ``sorted(keep)`` for its finalists (no key);
the module's ``sorted`` is shadowed by a function that returns the forced chain there and is
the builtin otherwise. A measurement hook only: nothing in ``ubpe`` changes.
"""

from __future__ import annotations

import argparse
import builtins
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

FORCED: list[int | None] = [None]


def _sorted(iterable, *, key=None, reverse=False):
    """``sorted``, but the finalists (``sorted(keep)``: no key) replaced by the forced chain."""
    if key is None and not reverse and FORCED[0] is not None:
        return [FORCED[0]]
    return builtins.sorted(iterable, key=key, reverse=reverse)


def _signals(name: str) -> list:
    import _data

    if name == "ecg":
        return [_data.ecg()]
    if name == "seismic":
        return [_data.seismic()]
    if name == "audio":
        return [x for x, _rate in _data.audio()]
    raise ValueError(f"unknown set {name!r}")


def _compress(x, chain: int | None) -> bytes:
    import ubpe

    FORCED[0] = chain
    try:
        return ubpe.compress(x, threads=1)
    finally:
        FORCED[0] = None


def _winner(x, default: bytes, exact: bool) -> tuple[int | None, dict[int, int]]:
    """The first chain whose forced compress gives ``default``'s bytes (None: none does), and
    with ``exact`` every forced chain's size."""
    from ubpe.planner import chains as planner_chains
    from ubpe.planner.settings import current

    n = len(planner_chains.auto_chains(x.reshape(1, -1), 2, current()))
    sizes, found = {}, None
    for i in range(n):
        try:
            out = _compress(x, i)
        except (KeyError, IndexError):
            continue  # (a chain the screen pruned: no estimate, not a possible finalist)
        sizes[i] = len(out)
        if out == default and found is None:
            found = i
            if not exact:
                break
    return found, sizes


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sets", default="ecg,seismic,audio")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--exact", action="store_true")
    args = ap.parse_args()
    from ubpe.planner import lean

    lean.sorted = _sorted  # (module global shadowing the builtin: see the docstring)
    for name in [s for s in args.sets.split(",") if s]:
        xs = _signals(name)
        defaults = [_compress(x, None) for x in xs]
        winners = []
        for j, (x, d) in enumerate(zip(xs, defaults)):
            w, sizes = _winner(x, d, args.exact)
            winners.append(w)
            if args.exact:
                print(f"  {name}/{j}: default {len(d)} B, forced chains {sizes}, winner {w}")
        values = sum(x.size for x in xs)
        times: dict[str, list[float]] = {"default": [], "oracle": []}
        same = True
        for _ in range(args.rounds):
            for mode in ("default", "oracle"):
                total = 0.0
                for x, d, w in zip(xs, defaults, winners):
                    best = float("inf")
                    for _ in range(args.repeat):
                        t = time.process_time()
                        out = _compress(x, w if mode == "oracle" else None)
                        best = min(best, time.process_time() - t)
                    same &= out == d
                    total += best
                times[mode].append(total)
        lo = {m: min(v) for m, v in times.items()}
        print(f"{name}: {values} values, {sum(len(d) for d in defaults)} B; "
              f"default {values / lo['default'] / 1e6:.2f} M/s ({', '.join(f'{t * 1e3:.1f}' for t in times['default'])} ms), "
              f"oracle {values / lo['oracle'] / 1e6:.2f} M/s ({', '.join(f'{t * 1e3:.1f}' for t in times['oracle'])} ms); "
              f"winners found {sum(w is not None for w in winners)}/{len(xs)}; same bytes {same}", flush=True)


if __name__ == "__main__":
    main()
