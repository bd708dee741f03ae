"""The level-3 encoder's parameter search over a whole recording (:mod:`ubpe.level3`, issue 29).

    greedy(size, start, evals) -> (parameters by name, size)

A short recording is all warm-up: its parameters are measured on the recording itself, where
a size is exact (no sample to misjudge), by coordinate descent over physically motivated moves
(``MOVES``): each round codes the recording with every move applied to the best parameters so
far and keeps the smallest, until no move helps or the ``evals`` budget is spent. Nothing here
is part of the format: the parameters chosen are stored in the header and decoding stays one
pass. The budget is the planner's (:class:`ubpe.planner.settings.Settings`:
``level3_search_floor``, ``level3_search_whole``).
"""

from __future__ import annotations

from typing import Callable


def _scaled_steps(cur: dict, factor: float) -> dict:
    return {k: min(4096, max(1, int(cur[k] * factor))) for k in ("mu1", "mu2", "mu3")}


#: The moves, in the order a partial round tries them (each with its reason from the physics
#: of signals, measured on the shared audio as what a round picks first most often):
#: faster NLMS steps for strongly tonal or periodic sources with a high signal-to-noise ratio
#: (plucked and bowed strings, voice); a high order over a short window for sources rich in
#: harmonics (brass, mallets); plain least squares instead of least absolute errors (or back,
#: or nearer still) for Gaussian rather than impulsive innovations; a shorter long NLMS filter for a
#: source whose period or spectrum changes within its span; a longer or shorter memory of the
#: short least squares and of the long one for slowly or quickly changing spectra; a lower
#: order for few resonances; more or less regularization for ill-conditioned (narrow-band) or
#: well-conditioned (broadband) spectra; slower NLMS steps for noise-like sources; a longer
#: long NLMS filter for long periods; Sac's recent-past power normalization; a higher order of
#: the short least squares for more resonances followed quickly; block LPC
#: (forward-adaptive) in the short least squares' place for abrupt spectral changes; the final
#: least-squares mix per hold state for held or staircase values.
MOVES: tuple[tuple[str, Callable[[dict], dict]], ...] = (
    ("steps x2", lambda c: _scaled_steps(c, 2.0)),
    ("order 64 over a short window", lambda c: dict(p1=64, k1=64, t1=12, irls=0)),
    ("least squares <-> least absolute", lambda c: dict(irls=0) if c["irls"] else dict(irls=16, powr=19)),
    ("nearer least absolute", lambda c: dict(irls=24, powr=0)),
    ("long NLMS / 2", lambda c: dict(n1=c["n1"] // 2)),
    ("short window x2", lambda c: dict(t2=min(19, c["t2"] + 2))),
    ("long window / 2", lambda c: dict(t1=max(0, c["t1"] - 2))),
    ("long window x2", lambda c: dict(t1=min(19, c["t1"] + 2))),
    ("order / 2", lambda c: dict(p1=max(1, c["p1"] // 2), k1=max(1, c["k1"] // 2))),
    ("regularization / 16", lambda c: dict(reg=min(24, c["reg"] + 4))),
    ("short window / 2", lambda c: dict(t2=max(0, c["t2"] - 2))),
    ("steps / 2", lambda c: _scaled_steps(c, 0.5)),
    ("long NLMS x2", lambda c: dict(n1=min(2048, max(16, c["n1"] * 2)))),
    ("regularization x16", lambda c: dict(reg=max(6, c["reg"] - 4))),
    ("recent-past power", lambda c: dict(powr=19 if c["powr"] == 1 else 1)),
    ("short order x2", lambda c: dict(p2=min(32, 2 * c["p2"]))),
    ("block LPC", lambda c: dict(lpc=1 - c["lpc"])),
    ("least-squares mix", lambda c: dict(fmix=1 - c["fmix"])),
)


def greedy(size: Callable[[dict], float], start: dict, evals: int, margin: float = 0.0) -> tuple[dict, float]:
    """Coordinate descent from ``start`` (parameters by name): ``size(params)`` of the start,
    then a round of every move of MOVES, then rounds of only the moves that helped in the round
    before, best first (a move that changes nothing, or gives parameters already measured, is
    skipped); each round's smallest is kept when it is below the best times (1 - margin); at
    most ``evals`` calls of ``size`` in all. Returns (the best parameters, their size)."""
    best = dict(start)
    best_size = size(best)
    used = 1
    seen = {tuple(sorted(best.items()))}
    moves = list(MOVES)
    while used < evals and moves:
        tried = []
        for name, move in moves:
            if used >= evals:
                break
            cand = dict(best, **move(best))
            key = tuple(sorted(cand.items()))
            if key in seen:
                continue
            seen.add(key)
            tried.append((size(cand), name, move, cand))
            used += 1
        if not tried:
            break
        tried.sort(key=lambda t: t[0])
        got, _, _, cand = tried[0]
        if got >= best_size * (1 - margin):
            break
        moves = [(name, move) for got_k, name, move, _ in tried if got_k < best_size]
        best, best_size = cand, got
    return best, best_size
