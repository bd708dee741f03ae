"""Cheap estimates that rank front-end chains before anything is coded in full."""

from __future__ import annotations

from dataclasses import replace

import msgpack
import numpy as np

from .. import frontend
from .._kernels import npsum as _npsum
from .._kernels import tally as _tally
from ..coders import mag
from .candidates import Candidate, dense_fits
from .settings import Settings


def value_counts(y: np.ndarray, bounds: tuple[int, int] | None = None) -> np.ndarray:
    """How many times each distinct value of ``y`` (1-D integers, not empty) occurs, in value
    order: a histogram over their span when it is narrow, else ``np.unique``'s counts.
    ``bounds``: ``(int(y.min()), int(y.max()))`` when the caller has them."""
    lo, hi = (int(y.min()), int(y.max())) if bounds is None else bounds
    if hi - lo < 1 << 22 and hi < 1 << 63:
        # (one compiled pass: np.bincount(np.subtract(y, lo, dtype=np.int64)) and its non-zero cells)
        return _tally.span_counts(np.ascontiguousarray(y, dtype=y.dtype.newbyteorder("=")), lo, hi - lo + 1)
    return np.unique(y, return_counts=True)[1]


def raw_learnable(y: np.ndarray, s: Settings, counts: np.ndarray | None = None) -> bool:
    """Whether the values ``y`` (1-D integers, the first chain's output on the screen's sample;
    ``counts``: their :func:`value_counts`, when known) have at most ``lean_raw_distinct``
    distinct values a value."""
    if y.shape[0] == 0 or y.dtype.kind not in "iu":
        return False
    return (value_counts(y) if counts is None else counts).shape[0] <= s.lean_raw_distinct * y.shape[0]


def order0_bytes(y: np.ndarray, s: Settings, counts: np.ndarray | None = None) -> float:
    """A rough size of the values ``y`` (1-D): their order-0 entropy, plus
    ``order0_table_bits`` per distinct value (the table a static coder stores), in bytes
    (``counts``: their :func:`value_counts`, when known). Values that are not integers (never
    the output of a chain on integers) rank last."""
    if y.shape[0] == 0 or y.dtype.kind not in "iu":
        return 0.0 if y.shape[0] == 0 else float("inf")
    counts = value_counts(y) if counts is None else counts
    n = y.shape[0]
    bits = n * log2_of(n) - plogp(counts)  # (not np.dot: BLAS threads, ms of CPU a call)
    return (bits + s.order0_table_bits * counts.shape[0]) / 8.0


#: Counts below this are :func:`plogp`'s by a table (:func:`log2_table`); 512 KB.
LOG2_TABLE = 1 << 16


_LOG2: np.ndarray | None = None  #: :func:`log2_table`'s, built at first use


def log2_table() -> np.ndarray:
    """numpy's ``np.log2`` of the floats 0.0 .. ``LOG2_TABLE - 1`` (float64; -inf at 0), built
    by numpy once a process: the values its vectorised ``log2`` gives each of those floats (not
    always libm's, which :mod:`ubpe._kernels.npsum` would otherwise take). Not to be written to."""
    global _LOG2
    table = _LOG2
    if table is None:  # (two threads may both build it: the same values; either is kept)
        with np.errstate(divide="ignore"):
            table = np.log2(np.arange(LOG2_TABLE, dtype=np.float64))
        table.flags.writeable = False
        _LOG2 = table
    return table


def log2_of(n: int) -> np.float64:
    """``np.log2(n)`` of an int ``n >= 1`` (a numpy float64), the same value: :func:`log2_table`'s
    below :data:`LOG2_TABLE` (tests/test_npsum.py checks each; numpy's scalar call took about 1 us)."""
    return log2_table()[n] if n < LOG2_TABLE else np.log2(n)


def plogp(counts: np.ndarray) -> float:
    """``float((c * np.log2(c)).sum())`` of ``c = counts.astype(np.float64)`` (``counts`` 1-D
    integers, each at least 1), the same float: one compiled pass
    (:func:`ubpe._kernels.npsum.plogp_sum`) where every count is below :data:`LOG2_TABLE`, else
    numpy's (the cast, ``log2``, product and sum: about 7 against 2 us on a short file's 400
    counts)."""
    if counts.ndim == 1 and counts.dtype.kind in "iu":
        found = _npsum.plogp_sum(counts, log2_table())
        if found >= 0.0:
            return float(found)
    c = counts.astype(np.float64)  # (the casts log2 and the product made of the int64 counts, once: the same floats)
    return float((c * np.log2(c)).sum())


def static_estimate(record: list[dict], y: np.ndarray, scale: float, s: Settings) -> tuple[float, float]:
    """:func:`estimate_parts` as (bare ids, dense ids): each layout's smaller coder estimate."""
    parts = estimate_parts(record, y, scale, s)
    return min(parts[0], parts[1]), min(parts[2], parts[3])


def estimate_parts(record: list[dict], y: np.ndarray, scale: float,
                   s: Settings) -> tuple[float, float, float, float]:
    """A cheap estimate, in bytes, of :func:`screened_size` (the smallest exact container of
    the chain's bare candidates under the static coders; ``y`` 1-D, the chain's output on a
    sample with its ``record``, ``scale`` = values / sample values), for ranking chains: the
    smallest of the order-0 entropy with a count table of the bare ids ("rans"), and the
    "mag" model's bits (:func:`ubpe.coders.mag.estimate_bits`, best of ``s.estimate_rates``) of the bare ids
    and, where the dense candidate exists, of the dense ids; plus about an Elias-gamma code a
    gap of the alphabet (the bare ids' alphabet, the dense ids' rANS table of used ids); the stream's part scaled, plus the stages' params
    (their growing part, ``Stage.scalable``, scaled too). On the bench sets and the unseen
    recordings (every chain of 62 inputs) estimate / exact is 0.997 to 1.043 for 90 % of the
    predicting chains, 0.955 to 1.129 in all (heavy-tailed residuals run high), 1.0 to 1.17 on
    raw values; its first choice is the exact proxy's on 58 of the 62 (the others within
    3 %). About a third of an exact costing's time. Values that are not integers rank last. Returns
    (bare ids under "rans", bare ids under "mag", dense ids under "rans", dense ids under "mag";
    inf where there is no dense candidate): :func:`static_estimate` takes each layout's smaller,
    :func:`likely_coders` compares the two coders."""
    n = y.shape[0]
    params = len(msgpack.packb(record, use_bin_type=True))
    grows = frontend.growing_bytes(record)
    fixed = params - grows
    inf = float("inf")
    if n == 0:
        return float(fixed + grows * scale), inf, inf, inf
    if y.dtype.kind not in "iu":
        return inf, inf, inf, inf
    lo, hi = int(y.min()), int(y.max())
    span = hi - lo + 1
    if span <= 1 << 22 and hi < 1 << 63:
        d = np.subtract(y, lo, dtype=np.int64)
        counts = np.bincount(d)
        present = counts > 0
        rank = np.cumsum(present) - 1
        ids = rank[d]
        where = np.flatnonzero(present)
        counts = counts[present]
        middle = int(np.partition(d, n // 2)[n // 2])  # the median value; its rank is the ids' median
        center = int(rank[middle])
    else:
        where, ids, counts = np.unique(y, return_inverse=True, return_counts=True)
        ids = ids.astype(np.int64).reshape(-1)
        d = None
        center = int(np.partition(ids, n // 2)[n // 2])
    a = counts.shape[0]
    if a <= 1:
        return float(fixed + grows * scale + 8), inf, inf, inf
    c = counts.astype(np.float64)
    order0 = n * np.log2(n) - float((c * np.log2(c)).sum())
    table = float(np.minimum(np.log2(c) + 2.0, 8.0).sum())
    gaps = np.diff(where).astype(np.float64)  # consecutive values: gap 1
    gaps[gaps <= 0] += 2.0**64  # int64 values more than 2**63 apart: the difference wrapped
    alphabet = float((1.0 + 2.0 * np.floor(np.log2(gaps))).sum()) if gaps.size else 0.0
    has_dense = d is not None and dense_fits(a, lo, hi)
    mags = mag.estimate_bits([(ids, center), (d, middle)] if has_dense else [(ids, center)], s.estimate_rates)
    bare = (order0 + table + alphabet, mags[0] + alphabet)
    # rANS codes dense ids as it does bare ones, its table listing the used ids (about the
    # alphabet's cost); "mag" sees the holes as magnitude
    dense = (order0 + table + alphabet, mags[1]) if has_dense else (inf, inf)
    rest = fixed + grows * scale
    return tuple(bits / 8.0 * scale + rest for bits in bare + dense)


def likely_coders(found: list[Candidate], parts: tuple[float, float, float, float], s: Settings) -> list[Candidate]:
    """``found`` (bare and dense candidates, :func:`bare_candidates`), each offered only the
    static coders whose estimate (``parts``, :func:`estimate_parts`) is not ``s.fast_coder_clear``
    times the other's ("packed" and "const" always)."""
    out = []
    for c in found:
        rans_bytes, mag_bytes = parts[2:] if c.variant == "dense" else parts[:2]
        drop = ("rans" if rans_bytes >= s.fast_coder_clear * mag_bytes
                else ("mag" if mag_bytes >= s.fast_coder_clear * rans_bytes else None))
        out.append(c if drop is None or len(c.merges) else replace(c, coders=tuple(k for k in c.coders if k != drop)))
    return out
