"""Level 3's front-end choice: which chain of :mod:`ubpe.frontend` stages (block LPC, "mult",
"grid") goes before the coder, measured by coding (:mod:`ubpe.level3.measure`).

    _chains(x2): FRONT_CHAINS that apply to a recording
    _choose_front_proxy(x2, chains) -> (chain, known): on the search's prefix, each chain with
        the parameters its search would start from (the winner's coding is that search's first)
    _choose_front(x2, search) -> chain: on a middle sample at the default parameters
    _front_on_proxy(n, C, chains): which of the two a recording gets

The chain chosen is recorded in the container (mode 2, :mod:`ubpe.level3.format`); nothing here
is normative. The tuning constants are fields of :class:`ubpe.planner.settings.Settings`
(``level3_front_*``).
"""

from __future__ import annotations

import msgpack
import numpy as np

from ..frontend.grid import channel_grids_finer
from ..frontend.mult import mult_detect
from ..planner import settings
from .format import (
    DEFAULTS,
    _frontend,
    _vector,
)
from .measure import (
    _channel_sample,
    _coded_size,
    _proxy_symbols,
    _symbols,
    _tail_bytes,
    _vmod_on_proxy,
    _vmod_saving,
    _whole_budget,
)
from .search import DC_MIN_EVALS, budget_plan, chain_part, plan, spare_codings

#: The front-end chains ``encode(front="auto")`` tries ("mult" ones only where mult_detect splits).
FRONT_CHAINS = ((), ("lpc",), ("mult",), ("mult", "lpc"))
#: the chains are compared on the search's proxy (``_choose_front_proxy``, Settings.level3_front_on_proxy), else
#: on max(Settings.level3_front_frames, n // FRONT_SAMPLE) middle frames
FRONT_SAMPLE = 8
#: Sustained, band-limited sources (music at 22-48 kHz, lossy-decoded audio): a long NLMS stage
#: (1 024 taps) and longer least-squares memories follow partials that last thousands of frames
#: (results/level3-music.md: against the defaults, coded whole, music-xblast-intro8 -4.3 %,
#: music-oxygen-login -3.0 %).
LONG_MEMORY = dict(n1=1024, t1=19, t2=12)


def _front_on_proxy(n: int, C: int, chains: int = 1, share: float | None = None) -> bool:
    """Whether a recording of n frames x C channels has its front-end chain chosen (among
    ``chains`` chains) on the search's proxy (``_choose_front_proxy``): its parameters searched
    by ``search.greedy`` on a prefix shorter than it (``search.budget_plan``, ``share`` its
    ``work_share``), and n >= ``Settings.level3_front_on_proxy``."""
    s = settings.current()
    return (bool(_whole_budget(n * C)) and n >= s.level3_front_on_proxy
            and budget_plan(n, C, s, chains, share)[0] < n)


def _choose_front_proxy(x2: np.ndarray, chains: list | None = None, share: float | None = None,
                        sample_share: float | None = None) -> tuple[tuple, tuple | None]:
    """The chain of ``chains`` (None: ``_chains(x2)``) whose output codes the search's proxy (the
    prefix of ``search.budget_plan``) smallest, each with the parameters the search starts
    from on it (``search.plan``), its stage params' share of the prefix added; and for the
    encoding of its output, (the start, the first move, the start's size (None: not measured),
    ``_symbols`` of the output, the plan) (None: the raw mode). The chain without stages (the
    first) is coded on the whole prefix, the others on its first ``Settings.level3_front_proxy_part``
    (the first's payload length frame by frame gives its size there: no coding more). ``share``:
    the plan's ``work_share`` (``ubpe.level3.cost.search_share``), or None. ``sample_share``: the
    ``work_share`` whose plan's prefix the contexts' sample takes (``encoder._search_shares``), a
    seventh entry of the encoding's tuple; None: the plan's prefix (no seventh entry)."""
    s = settings.current()
    n, C = x2.shape
    chains = _chains(x2) if chains is None else chains
    planned = budget_plan(n, C, s, len(chains), share)
    frames = planned[0]
    part = max(2, chain_part(frames, s)) if frames > 1 else frames
    best = None
    plain = None  # the chain without stages: its payload's length after each frame of the prefix
    for chain in chains:
        y, record = _forward(x2, chain) if chain else (x2, [])
        symbols = _symbols(y)
        # the chains compared on the prefix (or its part) less its warm-up (block LPC has none: a warm-up counted favours it)
        length = part if chain and plain is not None else frames
        skip = max(1, min(length - 1, int(length * s.level3_front_proxy_skip)))
        if symbols is None:  # raw: no coder, its bytes
            size, known = float(y.size * y.dtype.itemsize), None
        else:
            _, _, sym, table, tmode = symbols
            start, first = plan(sym, s, DEFAULTS)
            if len(chains) == 1 and _start_unmeasured(planned, start, s):
                known = (start, first, None, symbols, planned, None)
                if sample_share is not None:
                    known += (budget_plan(n, C, s, len(chains), sample_share)[0],)
                return chain, known
            proxy, tab = _proxy_symbols(sym, table if tmode else None, tmode, length)
            vmod = not chain and _vmod_on_proxy(sym, table, tmode, s)
            # the payload's length after each frame (and with the value model: what it saved, 1/16 bits)
            res = np.zeros((length, (3 if vmod else 2) * C), np.int64)
            size = _coded_size(proxy, _vector(dict(start, vmod=1) if vmod else start, C), tab, skip, res)
            lengths = res[:, 2 * C - 1].astype(np.float64)
            decided = None
            if vmod:  # its saving counted as _choose_vmod counts it; the sizes without it
                lengths += res[:, -1] / 128
                decided = _vmod_saving(res, n, s)
                size = float(lengths[-1] - lengths[skip - 1]) + (size - (int(res[-1, 2 * C - 1]) - int(res[skip - 1, 2 * C - 1])))
            whole = size + float(lengths[skip - 1])
            known = (start, first, whole if length == frames else None, symbols, planned, decided)
            if sample_share is not None:
                known += (budget_plan(n, C, s, len(chains), sample_share)[0],)
            if not chain:
                plain = lengths
        if chain:  # its params' share; and the margin by which the () chain's models gain after the prefix
            size += len(msgpack.packb(record, use_bin_type=True)) * (length - skip) / n
            size *= 1 + s.level3_front_proxy_margin
        if best is None or (size < best[0] if length == best[3] else
                            size < float(plain[length - 1] - plain[skip - 1])):
            best = (size, chain, known, length)
    return best[1], best[2]


def _start_unmeasured(planned: tuple, start: dict, s) -> bool:
    """Whether the one chain's coding of the prefix would measure nothing the encoder reads, so
    that ``_choose_front_proxy`` leaves it out (the same bytes, a coding of the prefix less): with
    no other chain to compare, the search's plan ``planned`` (``search.budget_plan``) has at most
    one coding after ``search.spare_codings`` of ``start`` (the start alone: its size compared
    with nothing) and fewer than ``search.DC_MIN_EVALS`` (no centred or NLMS-power trial against
    it). ``encoder._search_whole`` then takes the start unmeasured (and codes it there only where
    that coding decides the value model, as it would have here: ``measure._vmod_on_proxy``)."""
    return max(1, planned[1] - spare_codings(start, DEFAULTS, s)) <= 1 and planned[1] < DC_MIN_EVALS


def _forward(x2: np.ndarray, chain) -> tuple[np.ndarray, list]:
    fe = _frontend()
    y, record = fe.forward(fe.to_channels(x2), [fe.stage(name) for name in chain])
    return np.ascontiguousarray(y.T), record


def _chains(x2: np.ndarray) -> list:
    """FRONT_CHAINS, those with "mult" only when ``mult_detect`` splits a channel; each after
    "grid" when the channels lie on grids of their own (``frontend.grid.channel_grids_finer``:
    two channels of 16-bit audio, one shifted left by 8 and one times 6 less 5 in int32, 12 000
    frames: 21 538 B, level 2's container, against 20 231 B for the audio itself)."""
    split = any(mult_detect(np.ascontiguousarray(x2[:, c]))[0] > 1 for c in range(x2.shape[1]))
    chains = [chain for chain in FRONT_CHAINS if split or "mult" not in chain]
    # channels on grids of their own (steps or offsets differ): each divided by its step first
    divided = settings.current().grid_divided and channel_grids_finer(x2)
    return [("grid",) + chain for chain in chains] if divided else chains


def _stages_frames() -> int:
    return settings.current().level3_front_stages_frames


def _front_frames() -> int:
    return max(2, settings.current().level3_front_frames)


def settings_front_share() -> float:
    return settings.current().level3_front_share


def settings_front_long() -> bool:
    return settings.current().level3_front_long


def _choose_front(x2: np.ndarray, search: bool) -> tuple:
    """The chain of FRONT_CHAINS whose output codes smallest (default parameters) on the second
    half of the middle max(``Settings.level3_front_frames``, n // FRONT_SAMPLE) frames; () when
    ``search`` is off or the recording is shorter. The chains with stages are coded on the first
    ``Settings.level3_front_sample_part`` of the sample only (at least ``level3_front_part_min``
    frames), measured on its second half against the chain without on the same frames (that
    chain's payload length frame by frame: no coding more)."""
    n = x2.shape[0]
    if not search or n < _front_frames():
        return ()
    x2 = _channel_sample(x2)
    frames = max(_front_frames(), n // FRONT_SAMPLE)
    frames = max(2, min(frames, int(n * settings_front_share())))
    start = (n - frames) // 2
    s = settings.current()
    part = frames if s.level3_front_sample_part >= 1 else max(
        2, min(frames, max(int(frames * s.level3_front_sample_part), s.level3_front_part_min)))
    best = None
    plain = None  # the chain without stages: its payload's length after each frame of the sample
    for chain in _chains(x2):
        y, record = _forward(x2, chain) if chain else (x2, [])
        length = part if chain and plain is not None else frames
        if not chain and part < frames:
            res = np.zeros((frames, 2 * x2.shape[1]), np.int64)
            size = _tail_bytes(y[start:start + frames], frames // 2, None, res)
            plain = res[:, -1]
        else:
            size = _tail_bytes(y[start:start + length], length // 2)
        if chain:  # the stage's params (LPC coefficients, digits), their share of the sample
            size += len(msgpack.packb(record, use_bin_type=True)) * (length // 2) / n
        if best is None or (size < best[0] if length == best[2] else
                            size < int(plain[length - 1]) - int(plain[length // 2 - 1])):
            best = (size, chain, length)
    if best[1] and settings_front_long():
        # a front end won against the plain chain at the default parameters: the plain chain
        # with LONG_MEMORY too (block LPC's residual has lost the long partials a 1 024-tap
        # NLMS stage follows: music-oxygen-login, Vorbis-decoded, 3.0 % smaller coded whole)
        length = best[2]
        y = x2[start:start + length]
        if _tail_bytes(y, length // 2, LONG_MEMORY) < best[0]:
            return ()
    return best[1]
