"""Level 3's measurements: what the encoder's choices (:mod:`ubpe.level3.encoder`,
:mod:`ubpe.level3.front`) code and how they count it.

    _symbols(x2) -> (lo, step, y, table, tmode) or None: what ``encode`` codes of a recording
    _coded_size(y, prm, table, skip, res): the payload's bytes on y[skip:], by one coding
    _proxy_symbols, _tail_bytes: the same on the search's prefix, or with default parameters
    _choice_sample, _channel_sample: the frames and channels a model choice codes
    _whole_budget(values): whether a recording's parameters are searched by ``search.greedy``
    _vmod_on_proxy, _vmod_saving: the value model decided from a coding with it on

Nothing here writes a byte of a container: the sizes are estimates the encoder compares, the
bytes it writes are :mod:`ubpe.level3.format`'s. The tuning constants are fields of
:class:`ubpe.planner.settings.Settings` (``level3_*``).
"""

from __future__ import annotations

import numpy as np

from ..alphabet import distinct  # (np.unique's values by a sort: numpy's unique hashes, 8 times slower here)
from ..frontend import lpc
from ..planner import settings
from .format import (
    DEFAULTS,
    LPC_BLOCK,
    MAX_RANGE_BITS,
    MAX_TABLE,
    NO_LPC,
    NO_TABLE,
    TABLE_INDICES,
    TABLE_NONE,
    TABLE_VALUES,
    _kernel_run,
    _kernels,
    _lpc_arrays,
    _lpc_bytes,
    _prior_tables,
    _shift_of,
    _vector,
    _working_values,
    default_params,
)
from .search import code_classes_cue


def _shifted(x2: np.ndarray, lo: int) -> np.ndarray:
    """x - lo as int64 (the range is below 2**40)."""
    if x2.dtype.kind == "u" and x2.dtype.itemsize == 8:
        return (x2 - np.uint64(lo)).astype(np.int64)
    return x2.astype(np.int64) - np.int64(lo)


def _symbols(x2: np.ndarray) -> tuple | None:
    """What ``encode`` codes of (frames, channels) integers x2 with frames x channels > 0: (lo,
    step, y, table, tmode), y (frames, channels) int64 the values less lo divided by step (table
    mode: still values, ``table`` their increasing distinct values); None: a range of 2**40 or
    more (stored raw)."""
    lo, hi = int(x2.min()), int(x2.max())
    if hi - lo >= 1 << MAX_RANGE_BITS:
        return None
    y = np.ascontiguousarray(_shifted(x2, lo))
    step = int(np.gcd.reduce(y.ravel())) if hi > lo else 1
    if step > 1:
        y //= step
    table = None
    rng = (hi - lo) // step
    if rng >= 3:  # (a count per value is cheaper than a sort where the range is not much wider)
        u = np.flatnonzero(np.bincount(y.ravel(), minlength=rng + 1)) if rng < 4 * y.size else distinct(y)
        # sparse values: few distinct values, each seen many times, with gaps in the bulk of
        # them, not only in the tails (an ADC scaled by a non-integer factor, a grid that is not
        # exactly regular); a short recording's values have gaps only for want of samples
        if (2 * u.size <= rng + 1 and 4 * u.size <= y.size and u.size <= MAX_TABLE
                and np.median(np.diff(u)) >= 2):
            table = u
    # a regular grid (gaps nearly equal: an ADC scaled by a non-integer factor) is predicted as
    # indices; an irregular set (dense in the middle, sparse in the tails) as values
    tmode = TABLE_NONE
    if table is not None:
        gaps = np.diff(table)
        tmode = TABLE_INDICES if np.percentile(gaps, 90) <= 1.5 * np.median(gaps) else TABLE_VALUES
    return lo, step, y, table, tmode


def _lpc_fit(v: np.ndarray) -> list:
    """Each channel's block-LPC params (``ubpe.frontend.lpc.lpc_forward`` of its working values)."""
    return [lpc.lpc_forward(np.ascontiguousarray(v[:, c]).astype(np.int32), block=LPC_BLOCK)[1]
            for c in range(v.shape[1])]


def _coded_size(y: np.ndarray, prm: list[int], table: np.ndarray | None, skip: int = 0,
                res: np.ndarray | None = None) -> float:
    """Bytes the payload of y (values, or with a table its symbols; bounds from y itself)
    spends on y[skip:] after coding y[:skip] (the models' warm-up, which a short sample would
    overweight, left out), with its share of the LPC params when ``prm`` asks for block LPC."""
    k = _kernels()
    n, C = y.shape
    top = int(y.max())
    tab = NO_TABLE if table is None else table
    gs = _shift_of(int(tab[top]) if table is not None else top)
    los, his = np.zeros(C, np.int64), np.full(C, top, np.int64)
    extra, lpc = 0.0, NO_LPC
    if prm[k.PRM_LPC]:
        fit = _lpc_fit(_working_values(y, los, his, gs, tab))
        extra, lpc = len(_lpc_bytes(fit)) * (n - skip) / n, _lpc_arrays(fit, n)
    buf = np.zeros(64 + n * C * 8, np.uint8)
    if res is None:
        res = np.zeros((n, 2 * C) if skip else (0, 0), np.int64)
    total = _kernel_run(prm)(y, los, his, gs, np.array(prm, np.int64), buf, False, res, 0, tab, _prior_tables(), *lpc)
    return extra + total - (int(res[skip - 1, 2 * C - 1]) if skip else 0)


def _proxy_symbols(y: np.ndarray, table: np.ndarray | None, tmode: int, frames: int) -> tuple:
    """(the symbols of y[:frames] the search codes, the table the kernel takes or None)."""
    y = y[:frames]
    if tmode:
        y = np.searchsorted(table, y).astype(np.int64)
    return y, (table if tmode == TABLE_VALUES else None)


def _tail_bytes(y: np.ndarray, skip: int, change: dict | None = None, res: np.ndarray | None = None) -> float:
    """``_coded_size`` of y (any integers) with the default parameters (changed by ``change``),
    y[skip:] only (``res``: the kernel's record of each frame, as ``_coded_size`` takes it)."""
    y = y.astype(np.int64)
    prm = _vector(dict(DEFAULTS, **change), y.shape[1]) if change else default_params(y.shape[1])
    return _coded_size(y - y.min(), prm, None, skip, res)


def _choice_sample(y: np.ndarray, full: int, limit: int | None) -> tuple[np.ndarray, int, float]:
    """The frames a model choice (``_choose_vmod``, ``_choose_xctx``) codes once: ``y``
    ((frames, C) symbols) whole when it has at most ``full`` frames (``limit``, when given, caps
    them), else its first ``full`` frames of which the second half is counted (``skip``); a few
    channels of many (``_channel_sample``). ``scale``: what a saving counted on the sample's
    frames after ``skip`` is multiplied by to stand for the whole recording."""
    n = y.shape[0]
    frames = full if limit is None else max(1, min(full, limit))
    sample, skip = (y, 0) if n <= frames else (y[:frames], frames // 2)
    counted = (n if n <= full else full - full // 2) / (sample.shape[0] - skip)
    scale = sample.shape[1] * counted
    sample = _channel_sample(sample)  # (many channels: a few of them, the saving scaled up)
    return sample, skip, scale / sample.shape[1]


def _channel_sample(y: np.ndarray) -> np.ndarray:
    """``y`` (frames, C), or of more than ``Settings.level3_sample_channels`` channels that many
    of them spread evenly (first and last kept, in order): what the front-end chain and value
    model choices code, which a recording's channels decide alike (each channel its own models,
    so a channel needs its frames; fewer channels, not fewer frames)."""
    k = settings.current().level3_sample_channels
    C = y.shape[1]
    if k <= 0 or C <= k:
        return y
    keep = np.unique(np.linspace(0, C - 1, k).round().astype(np.int64))
    return np.ascontiguousarray(y[:, keep])


def _whole_budget(values: int) -> int:
    """Whether a recording of ``values`` values has its parameters searched by
    ``search.greedy`` (1) or on chunks, or not at all (0: ``Settings.level3_search_floor``
    is 0, or ``values`` exceeds ``level3_search_whole``)."""
    s = settings.current()
    return int(s.level3_search_floor > 0 and 0 < values <= s.level3_search_whole)


VMOD_HEADER_BYTES = 6  #: what the value model adds to the header (its mask bit and value), at most

def _vmod_on_proxy(sym: np.ndarray, table: np.ndarray | None, tmode: int, s) -> bool:
    """Whether ``_choose_front_proxy`` codes the chain without stages with the value model on,
    its saving deciding it (no coding more: ``Settings.level3_vmod_on_proxy``): version 3 or
    later, ``level3_vmod_sample`` > 0 and at most ``mixsignal.VM_MAX_RANGE`` symbols."""
    symbols = table.size if tmode else int(sym.max()) - int(sym.min()) + 1
    return bool(s.level3_vmod_on_proxy and s.level3_version >= 3 and s.level3_vmod_sample > 0
                and symbols <= _kernels().VM_MAX_RANGE)


def _vmod_saving(res: np.ndarray, n: int, s) -> int:
    """The value model's choice (1: on) from a coding with it on of a recording's first
    ``res.shape[0]`` frames (of ``n``; ``res``: the kernel's record, its last column what the
    model saved, 1/16 bits): its saving on their second half (all of them when they are the
    whole recording), scaled to the frames ``_choose_vmod`` counts, against its header bytes."""
    length = res.shape[0]
    half = 0 if length == n else length // 2
    full = s.level3_vmod_sample
    counted = n if n <= full else full - full // 2
    saved = (int(res[-1, -1]) - (int(res[half - 1, -1]) if half else 0)) * counted / (length - half)
    return int(saved > 16 * 8 * VMOD_HEADER_BYTES)


def _dnl_cue(x2: np.ndarray) -> bool:
    """Whether version 9's code classes are tried on the values x2 (frames, C): ``search.code_classes_cue``
    under ``Settings.level3_vcls_*``."""
    s = settings.current()
    return s.level3_version >= 9 and s.level3_vcls_bits > 0 and code_classes_cue(x2, s.level3_vcls_cue)
