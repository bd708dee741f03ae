"""Which front-end chains the automatic choice measures for given values."""

from __future__ import annotations

import numpy as np

from .._kernels import l1plan as _l1plan
from .._kernels import ranks as _ranks
from ..alphabet import distinct
from ..frontend import STAGES
from ..frontend.chains import DECORRELATE_CHAINS, GRID_CHAINS, MULT_CHAINS, PREDICTORS, is_fast
from ..frontend.mult import mult_detect
from .settings import Settings


def auto_chains(x: np.ndarray, level: int, s: Settings) -> list[tuple[tuple[str, dict], ...]]:
    """The chains the automatic choice measures for ``x`` at ``level``: ``s.auto_chains``
    (at level 1 only those that decode fast: level 1 is the fast-decoding
    level, :func:`~ubpe.frontend.chains.is_fast`), and ``rank+delta1`` when its distinct values are few
    relative to their span (``s.rank_sparsity``) (ranks
    only help values on a sparse, possibly inexact grid; on dense values they are the identity
    plus a table); with two or more channels, the ``decorrelate`` chains of
    :data:`~ubpe.frontend.chains.DECORRELATE_CHAINS`; when a channel is on a grid with a step > 1 (:func:`has_grid`),
    "grid" followed by every chain this function gives the grid's indices ``k`` (so whatever
    the divided values would get, rank, mult and decorrelate chains included, is reachable;
    a 24-bit drum hit on a grid of 16: "grid+rank+delta1", 11 801 B at level 1 against 12 939 B
    with "grid+delta1", its values divided 11 782 B), and only those when every channel is on
    a grid (the chains on the values themselves are those on ``k`` scaled; ``s.grid_divided``
    off: the three of :data:`~ubpe.frontend.chains.GRID_CHAINS`); when a channel's codes have
    skewed low digits (:func:`has_low_digits`), the ``mult`` chains of
    :data:`~ubpe.frontend.chains.MULT_CHAINS`."""
    specs = [PREDICTORS[name] for name in s.auto_chains]
    if x.shape[0] >= 2:
        specs += [PREDICTORS[k] for k in DECORRELATE_CHAINS]
    grid = bool(x.size) and x.dtype.kind in "iu" and has_grid(x)
    if grid and not s.grid_divided:
        specs += [PREDICTORS[k] for k in GRID_CHAINS]
    elif grid:
        k, params = STAGES["grid"]().forward(x)
        after = [(("grid", {}),) + spec for spec in auto_chains(k, level, s) if not spec or spec[0][0] != "grid"]
        if all(p["step"] > 1 for p in params["channels"]) and (x.shape[0] == 1 or x.shape[1] >= s.grid_only_frames):
            return after  # every channel on a grid: the chains on the values are those on k, scaled
        specs += after
    if x.size and x.dtype.kind in "iu" and has_low_digits(x, s.digit_channels):
        specs += [PREDICTORS[k] for k in MULT_CHAINS]
    specs = [spec for spec in specs if level != 1 or is_fast(spec)]
    if x.size and x.dtype.kind in "iu":
        if x.dtype.itemsize <= 2:
            lo, hi = int(x.min()), int(x.max())
            # (the values present marked in one compiled pass reading them in their width: an
            # int64 copy and its offsets took two arrays of 8 bytes a value, ECG's 864 KB each)
            present = np.zeros(hi - lo + 1, np.bool_)
            _ranks.mark_offsets(x.reshape(-1), lo, present)
            count = int(np.count_nonzero(present))
        else:
            u = distinct(x)  # (np.unique hashes: 10-60 times slower on wide integers)
            lo, hi, count = int(u[0]), int(u[-1]), u.shape[0]
        if count >= 2 and count * s.rank_sparsity <= hi - lo + 1:
            specs.append(PREDICTORS["rank+delta1"])
    return specs


def has_grid(x: np.ndarray) -> bool:
    """Whether some channel of ``x`` (``(channels, frames)``, integers) takes values on a grid
    ``offset + step * k`` with ``step > 1``: the gcd of its differences to its minimum, exact
    (the values mapped to unsigned in order, differences taken modulo ``2**64``). A constant
    channel has no step."""
    for row in x:
        if row.dtype.itemsize <= 4 and row.dtype.isnative:  # (the same gcds, one compiled call each)
            if (row.shape[0] <= 256 or _l1plan.spread_gcd(row, 256) != 1) and _l1plan.spread_gcd(row, row.shape[0]) > 1:
                return True
            continue
        # (most channels have no step: the gcd of their first values' differences to the least
        # of them, a multiple of the channel's, is 1 already; decided before the whole channel
        # is converted)
        head = _unsigned_order(row[:256])
        if row.shape[0] > 256 and int(np.gcd.reduce(head - head.min())) == 1:
            continue
        u = _unsigned_order(row)
        if int(np.gcd.reduce(u - u.min())) > 1:
            return True
    return False


def _unsigned_order(row: np.ndarray) -> np.ndarray:
    """The integers ``row`` as uint64 in the same order (signed: the 64-bit value's sign bit flipped)."""
    if row.dtype.kind == "i":
        return row.astype(np.int64).view(np.uint64) ^ np.uint64(1 << 63)
    return row.astype(np.uint64)


def has_low_digits(x: np.ndarray, channels: int | None = None) -> bool:
    """Whether some channel of ``x`` (``(channels, frames)``, integers) has codes whose low
    digits are skewed enough that splitting them off may pay (:func:`ubpe.frontend.mult.mult_detect`:
    exact digit histograms of a sample, a few milliseconds a channel); with ``channels``, some
    of at most that many evenly spaced channels."""
    rows = np.arange(x.shape[0])
    if channels is not None and x.shape[0] > channels:
        rows = np.unique(np.linspace(0, x.shape[0] - 1, channels).astype(np.int64))
    return any(mult_detect(np.ascontiguousarray(x[r]))[0] > 1 for r in rows.tolist())
