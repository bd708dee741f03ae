"""The search: which chain, model and coders give the smallest container (package docstring)."""

from __future__ import annotations

import numpy as np

from .. import frontend
from ..frontend import Stage
from .candidates import Candidate, CostFunction, bare_candidates, extrapolated, run_threads, sample_take
from .replay import ReplayEncoder
from .settings import Settings


def screen_sample(x: np.ndarray, s: Settings) -> tuple[np.ndarray, np.ndarray, float]:
    """The screen's sample of ``x`` (``(channels, frames)``): ``s.screen_windows`` evenly spaced windows
    of frames, ``s.screen_sample`` values in all, as ``(windows, joined, scale)``: the windows as
    channels of their own (``(windows x channels, frames)``), the same windows joined in time
    with the channels kept (for chains that relate channels), and values / sample values.
    When the sample would be every value, both are ``x`` itself and ``scale`` is 1."""
    c, f = x.shape
    count = s.screen_windows
    length = max(s.screen_sample // (count * c), 1)
    if f <= count * length:  # the sample would be every value: screen them all, as they are
        return x, x, 1.0
    starts = (np.arange(count, dtype=np.int64) * (f - length)) // max(count - 1, 1)
    stacked = np.stack([x[:, f0:f0 + length] for f0 in starts.tolist()], axis=1)  # (c, count, length)
    windows = stacked.reshape(count * c, length)
    # the stream grows with the values, the rest (tables) does not
    return windows, stacked.reshape(c, count * length), x.size / windows.size


def screen(x: np.ndarray, chains: list[list[Stage]], cost: CostFunction, s: Settings, keep_first: bool = False,
           threads: int = 1) -> tuple[list[list[Stage]], list[bool]]:
    """The ``s.screen_keep`` chains whose level-1 container of a sample of ``x``, its stream
    scaled to all the values, is smallest (ties: the earlier), and those within
    ``s.screen_close`` of the last of them, in their given order, and the first chain too when
    within ``s.screen_first_within`` of the smallest and ``keep_first`` (level 2:
    the context mixer models the raw values' context itself, which a level-1 screen underrates;
    on neural recordings no front end with context mixing beats every predictor), with a flag per chain
    kept: True for a chain kept only because level 1 would keep it (``keep_first``: the
    ``s.screen_keep`` smallest that decode fast), which then gets level 1's candidates only. The
    sample: :func:`screen_sample`, each window put through the
    chain as channels of its own (chains that relate channels, "decorrelate", get the windows
    joined in time instead, the channels kept)."""
    windows, joined, scale = screen_sample(x, s)

    def size(chain: list[Stage]) -> float:
        across = any(st.name == "decorrelate" for st in chain)
        y, record = frontend.forward(joined if across else windows, chain)
        return screened_size(record, np.ascontiguousarray(y).reshape(-1), cost, scale)

    sizes = run_threads(size, chains, threads)
    ranked = sorted(range(len(chains)), key=lambda i: (sizes[i], i))
    keep = set(ranked[:s.screen_keep])
    last = sizes[ranked[min(s.screen_keep, len(ranked)) - 1]]
    keep.update(i for i in ranked[s.screen_keep:] if sizes[i] <= last * s.screen_close)
    static_only: set[int] = set()
    if keep_first and sizes[0] <= s.screen_first_within * sizes[ranked[0]]:
        keep.add(0)
    if keep_first:
        # level 2 also keeps the chains level 1 would keep (its fast ones), so that level 1's
        # candidate stays one of level 2's; those not kept on their own merit get level 1's
        # candidates only (no context-mixing run)
        fast = [i for i in ranked if all(st.fast_inverse for st in chains[i])][:s.screen_keep]
        static_only = set(fast) - keep
        keep.update(fast)
    return [chains[i] for i in sorted(keep)], [i in static_only for i in sorted(keep)]


def screened_size(record: list[dict], y: np.ndarray, cost: CostFunction, scale: float) -> float:
    """The screen's level-1 proxy of a chain whose output on the sample is ``y`` (1-D, with its
    ``record``): the smallest exact size of its bare candidates, the part that grows with the
    values scaled by ``scale`` (values / sample values)."""
    return min((extrapolated(cost(c), scale) for c in bare_candidates(record, y)), default=float("inf"))


def exhaustive_plan(x: np.ndarray, chains: list[list[Stage]], level: int, cost: CostFunction,
                    proposer: ReplayEncoder, s: Settings, threads: int) -> Candidate:
    """Steps 1 to 4 of the procedure (:mod:`ubpe.planner`): the screen beyond ``s.screen_sample``
    values, then every candidate of the chains kept, sized exactly (on a sample beyond
    ``s.full_fit`` values, the best rebuilt on all of them)."""
    if x.size > s.screen_sample and len(chains) > s.screen_keep:
        chains, static_only = screen(x, chains, cost, s, keep_first=level == 2, threads=threads)
    else:
        static_only = [False] * len(chains)
    n = x.size
    sampled = n > s.full_fit
    take = sample_take(n, s) if sampled else None
    scale = n / take.shape[0] if sampled else 1.0

    def chain_proposals(i: int) -> tuple[np.ndarray, list[Candidate]]:
        y, record = frontend.forward(x, chains[i])
        y = np.ascontiguousarray(y).reshape(-1)
        return y, proposer.propose(record, y[take] if sampled else y, 1 if static_only[i] else level, cost, sampled)

    cands: list[Candidate] = []
    for y, proposals in run_threads(chain_proposals, list(range(len(chains))), threads):
        for c in proposals:
            k = cost(c)
            # subtle: the record was made on all the values: its growing params do not scale
            c.estimate = extrapolated(k, c.scale * scale, frontend.growing_bytes(c.chain))
            if sampled:
                c.rebuild = lambda c=c, y=y: proposer.rebuild(c, y, level)
            cands.append(c)
    if not cands:
        smallest = min(np.unique(frontend.forward(x, chain)[0]).size for chain in chains)
        raise ValueError(
            f"n_tokens={getattr(proposer, 'n_tokens', None)} is smaller than the alphabet of the values under "
            f"every front end tried: the smallest n_tokens that works is {smallest} (the alphabet, no merges)"
        )
    order = sorted(range(len(cands)), key=lambda i: (cands[i].estimate, i))
    best = cands[order[0]]
    exact = next((cands[i] for i in order if cands[i].rebuild is None), None)
    rest = next((cands[i] for i in order if cands[i].rebuild is not None), None)
    if rest is None:
        return best
    # the best candidate sized on a sample is built on all the values (a context-mixing one, when
    # some were built on all of them: compared exactly with the best of those)
    built = rest.rebuild()
    return built if exact is None else min([exact, built], key=lambda c: cost(c).size)

