"""What the planner's search handles: candidates, their cost, samples of the values, threads."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from .. import coders
from ..alphabet import Alphabet
from ..frontend import Stage
from .settings import Settings

#: The coders each level offers a static candidate (level 1's, measured at every level).
STATIC_CODERS = coders.coders_for(1)
#: The coders level 2 offers a candidate of the bare alphabet that level 1 measured already with
#: the static ones: the context mixers, "packed" and "const".
ADAPTIVE_CODERS = coders.coders_for(2, ("trivial", "adaptive"))


@dataclass(frozen=True)
class Cost:
    """What the format says a candidate costs: ``size`` bytes in all, of which ``scalable``
    grow with the number of values (the token stream, and a ``mult`` stage's digits)."""

    size: int
    scalable: int


@dataclass
class Candidate:
    """One way to write the values: chain, model, token stream and the coders offered.

    ``family`` groups candidates for the final rebuild ("static" or "adaptive"); ``rebuild()`` gives
    the same candidate built on all the values (None when it was built on all of them), and
    ``scale`` is (values it stands for) / (values it was built on), by which its token stream's
    size is extrapolated. ``packed`` is the format's cache of the fields it built.
    """

    chain: list[dict[str, Any]]
    alphabet: Alphabet
    merges: np.ndarray
    tokens: np.ndarray
    coders: tuple[str, ...]
    family: str = "static"
    rebuild: Callable[[], Candidate] | None = None
    packed: Any = field(default=None, repr=False)
    estimate: float = 0.0
    scale: float = 1.0
    variant: str = ""  #: "" (the static prefix, or the bare alphabet for the context mixers), "bare" or "dense" ids
    method: str = "replay"  #: how ``tokens`` encode the values (:func:`choose_method`)
    #: The search's estimate of level 1's container for the same values (the lean search's; 0.0:
    #: none, level 2 plans level 1 and compares, the package docstring's step 6).
    level1_estimate: float = 0.0
    #: Counts of ``tokens`` the "mag" coder may reuse (:attr:`ubpe.coders._base.Tokens.mag_stats`:
    #: level 1's, which sized them so); None: none. The same bytes either way.
    mag_stats: dict | None = field(default=None, repr=False)
    #: ``tokens`` are all of the values' (its stream is the one written if it wins), not a
    #: sample's: the coders may then measure less (:attr:`ubpe.coders._base.Tokens.whole`). Set
    #: only where the level-2 searches build a context-mixing candidate on all the values.
    whole: bool = False


CostFunction = Callable[[Candidate], Cost]


def sample_take(n: int, s: Settings) -> np.ndarray:
    """Indices of ``s.windows`` evenly spaced windows of ``s.sample`` values in all."""
    return windows(n, s.sample, s.windows)


def windows(n: int, total: int, count: int) -> np.ndarray:
    """Indices of ``count`` evenly spaced windows of ``total`` values in all (``total < n``)."""
    length = total // count
    starts = (np.arange(count, dtype=np.int64) * (n - length)) // max(count - 1, 1)
    return (starts[:, None] + np.arange(length, dtype=np.int64)[None, :]).reshape(-1)


def run_threads(fn: Callable[[Any], Any], items: list, threads: int) -> list:
    """``[fn(i) for i in items]`` on up to ``threads`` threads, results in order, the first error
    raised (the kernels release the GIL; every item runs on its own, so the result is the same;
    the planner's candidates, the writer's and reader's blocks)."""
    if threads <= 1 or len(items) <= 1:
        return [fn(i) for i in items]
    import contextvars
    from concurrent.futures import ThreadPoolExecutor

    context = contextvars.copy_context()  # (each item in a copy: the caller's settings, as on one thread)
    with ThreadPoolExecutor(max_workers=min(threads, len(items))) as pool:
        return list(pool.map(lambda item: context.copy().run(fn, item), items))


def dense_fits(a: int, lo: int, hi: int) -> bool:
    """Whether :func:`dense_candidate` offers dense ids for ``a`` distinct values in [lo, hi]:
    the range larger than the alphabet, but not by much."""
    return a < hi - lo + 1 <= min(max(16 * a, 1 << 16), coders.MAX_VOCAB) and hi < 1 << 63


def dense_mag_fits(a: int, lo: int, hi: int) -> bool:
    """Whether level 1's sizing (:func:`ubpe.planner.fast.layouts`) rates dense ids for "mag"
    for ``a`` distinct values in [lo, hi]: the range larger than the alphabet, at most 2**22.
    "mag" codes a value's distance from its center, so the holes of a wide range cost it
    nothing; it is "rans" (a frequency a symbol of the range) that :func:`dense_fits` bounds. A
    short residual of wide values (a 0.1 Hz seismometer: 1 694 distinct values over a range
    of 87 556) stored 1 513 B of alphabet where the dense ids store 10."""
    return a < hi - lo + 1 <= 1 << 22 and hi < 1 << 63


def dense_candidate(chain: list[dict], y: np.ndarray, a: int) -> Candidate | None:
    """The values ``y`` (alphabet of ``a`` symbols) as ids over every value in [min, max] with
    the static coders ("mag" spends nothing on the holes of the range, and no alphabet is
    stored), when that range is larger than the alphabet but not by much; else None."""
    lo, hi = (int(y.min()), int(y.max())) if y.shape[0] and y.dtype.kind in "iu" else (0, -1)
    if not dense_fits(a, lo, hi):
        return None
    dense = Alphabet.span(lo, hi)
    return Candidate(chain, dense, np.zeros((0, 2), np.int32), dense.to_ids(y), STATIC_CODERS, "static",
                     variant="dense")


def dense_cm_fits(y: np.ndarray, a: int, s: Settings, always: bool = False) -> bool:
    """Whether :func:`dense_cm_candidate` offers dense ids for the values ``y`` (``a`` distinct)."""
    lo, hi = (int(y.min()), int(y.max())) if y.shape[0] and y.dtype.kind in "iu" else (0, -1)
    span = hi - lo + 1
    return not (hi >= 1 << 63 or span > coders.MAX_VOCAB or span < 1 or not (always or s.dense_cm_alphabet <= a < span))


def dense_cm_candidate(chain: list[dict], y: np.ndarray, a: int, offered: tuple[str, ...], s: Settings,
                       always: bool = False) -> Candidate | None:
    """The values ``y`` (alphabet of ``a`` symbols) as ids over every value in [min, max] for
    level 2's context mixers: no list of distinct values is stored, which for heavy-tailed
    residuals (a quiet seismometer and the rare large excursions of an event: each excursion
    a value of its own) costs more than the coder spends on the holes of the range ("cms2"
    codes an id by its distance from a predicted one, so a wide range costs it little; its
    memory does not grow with V). Offered when ``a >= s.dense_cm_alphabet`` and the range has
    holes (``always``: whenever the range fits, for a rebuild of such a candidate); else None.
    shared/data has none; seis-ale-vhz (28 887 int32 values, 1 607 distinct residuals over
    87 556): alphabet 1 290 B, dense ids 789 B smaller in all."""
    if not dense_cm_fits(y, a, s, always):
        return None
    lo, hi = int(y.min()), int(y.max())
    dense = Alphabet.span(lo, hi)
    return Candidate(chain, dense, np.zeros((0, 2), np.int32), dense.to_ids(y), offered, "adaptive", variant="dense")


def coded_whole(c: Candidate | None) -> Candidate | None:
    """``c`` (None: None) marked as built on all the values (:attr:`Candidate.whole`)."""
    if c is not None:
        c.whole = True
    return c


def bare_candidates(chain: list[dict], y: np.ndarray) -> list[Candidate]:
    """The screen's candidates for the values ``y``: their bare alphabet, and the dense ids of
    :func:`dense_candidate` (no training), static coders."""
    alphabet = Alphabet.from_data(y)
    bare = Candidate(chain, alphabet, np.zeros((0, 2), np.int32), alphabet.to_ids(y), STATIC_CODERS)
    dense = dense_candidate(chain, y, len(alphabet))
    return [bare] if dense is None else [bare, dense]


def extrapolated(cost: Cost, scale: float, counted: int = 0) -> float:
    """The size, in bytes, of a candidate built on a sample and costed ``cost``, extrapolated to
    ``scale`` times the values: the part that grows with them (``Cost.scalable``) scaled, less
    ``counted`` bytes of it that already stand for all the values (the growing params of a
    record made on all of them, :func:`ubpe.frontend.growing_bytes`)."""
    return cost.size + (cost.scalable - counted) * (scale - 1.0)


def stage_key(st: Stage, cache: dict) -> tuple[str, str]:
    """A stage's name and options as :func:`forward_shared`'s and the screen's cache keys spell
    them (``repr`` of its sorted attributes), kept in ``cache`` by the stage's identity (with the
    stage: its id stays its; a stage is not changed once built, and the repr of an "lpc" stage's
    options, floats among them, took about 8 us a time, several times a plan)."""
    memo = ("stage key", id(st))
    found = cache.get(memo)
    if found is None or found[0] is not st:
        # (stages kept across plans: level 1's "lpc" stages, fast_stages; the automatic chains'
        # stages, ubpe.frontend.chains.built_chain)
        found = _STAGE_KEYS.get(id(st))
        if found is None or found[0] is not st:
            found = (st, (st.name, repr(sorted(vars(st).items()))))
            if len(_STAGE_KEYS) >= 256:
                _STAGE_KEYS.clear()
            _STAGE_KEYS[id(st)] = found
        cache[memo] = found
    return found[1]


#: :func:`stage_key`'s keys of stages by their identity (with the stage: its id stays its), across
#: plans: level 1 builds its "lpc" stages once a process (:func:`ubpe.planner.fast.fast_stages`),
#: the automatic chains' stages are built once (:func:`ubpe.frontend.chains.built_chain`).
_STAGE_KEYS: dict[int, tuple] = {}


def forward_shared(inputs: dict, chains: list[list[Stage]], i: int,
                    cache: dict) -> tuple[np.ndarray, list[dict]]:
    """``frontend.forward`` of chain ``i`` on its input (the joined windows for chains that relate
    channels, else the windows: ``inputs[True]`` and ``inputs[False]``), reusing the output of
    the longest prefix already computed (``cache``: (input, stage names and options) -> (output,
    record); "lpc+adaptive" starts from "lpc"'s output; and each stage's key, :func:`stage_key`).
    Every stage's forward is a function of its input and options, so the result is the same as a
    forward pass of its own."""
    across = any(st.name == "decorrelate" for st in chains[i])
    key: tuple = (across,)
    x, record = inputs[across], []
    for st in chains[i]:
        key = key + (stage_key(st, cache),)
        hit = cache.get(key)
        if hit is None:
            y, params = st.forward(x)
            hit = cache[key] = (y, record + [{"stage": st.name, **params}])
        x, record = hit
    return x, record
