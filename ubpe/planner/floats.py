"""Which lossless float mode codes given floats smallest: the exact grid, the decimal or the
binary mode (:mod:`ubpe.frontend.floats`, :mod:`ubpe.frontend.floatcodes`), with its parameters.

Estimates rank the candidates on a sample; the few best are compressed for real by the
``measure`` function the api gives (the planner knows no container). The tuning is in
:class:`~ubpe.planner.settings.Settings` (``float_*``).
"""

from __future__ import annotations

import math
from typing import Callable

import numpy as np

from ..frontend import Stage
from ..frontend.floatcodes import (
    MAX_DECIMAL_EXP, MAX_FINE, MAX_SHIFT, PRECISION, FloatBinaryStage, FloatDecimalStage, binary_parts, decimal_floats,
    decimal_ints, fine_parts, fill_forward, grid_stats, mismatch, ulp_parts, zigzag,
)
from ..frontend.floats import FloatGridStage, exact_grid
from .settings import Settings


def _sample(x: np.ndarray, total: int, count: int, least: int) -> np.ndarray:
    """``x`` (``(C, F)``) itself up to about ``total`` values (at least ``least`` frames), else
    ``count`` evenly spaced windows of frames joined (the estimates' residuals straddle a few
    joins: noise in an estimate)."""
    frames, limit = x.shape[1], max(total // x.shape[0], least * count)  # total values in all
    if frames <= limit:
        return x
    width = limit // count
    starts = np.linspace(0, frames - width, count).astype(np.int64)
    return np.ascontiguousarray(np.concatenate([x[:, f0:f0 + width] for f0 in starts], axis=1))


def _bit_lengths(z: np.ndarray) -> np.ndarray:
    """Bit lengths of ``z`` (uint64), by the float exponent (one more at ``2**k - 1`` for large
    ``k``: an estimate's error)."""
    return np.frexp(z.astype(np.float64))[1].astype(np.int64)


def _residual_bits(k: np.ndarray) -> tuple[float, int]:
    """An estimate of the bits a predicted integer channel ``k`` (int64, 1-D) costs, and the
    median bit length of its residuals: the smallest over the delta orders 0, 1 and 2 of
    ``n * H(bit lengths) + sum(bit length - 1)`` of the zigzagged residuals (a magnitude
    class, entropy-coded, and the bits below its top one, raw: the "mag" coder's model)."""
    best = None
    for order in (0, 1, 2):
        if k.size <= order:
            break
        r = np.diff(k, order) if order else k
        z = (r.astype(np.uint64) << np.uint64(1)) ^ (r >> np.int64(63)).astype(np.uint64)
        cls = _bit_lengths(z)
        counts = np.bincount(cls)
        counts = counts[counts > 0]
        entropy = float(-(counts * np.log2(counts / cls.size)).sum())
        bits = entropy + float(np.maximum(cls - 1, 0).sum())
        if best is None or bits < best[0]:
            best = (bits, int(np.median(cls)))
    return best if best is not None else (0.0, 0)


def _exception_bits(count: int, itemsize: int) -> float:
    return count * (8.0 * itemsize + 12.0)


def _decimal_candidates(xc: np.ndarray, s: Settings) -> list[tuple[float, int | float, int]]:
    """(estimated bits, base, median residual bit length) of the decimal bases worth trying
    for one channel ``xc`` (floats, 1-D): every decimal exponent from the smallest with at most
    ``s.float_max_exception_share`` exceptions to the first with none, and a multiplier when one
    is found."""
    x64 = xc.astype(np.float64)
    finite = np.isfinite(x64)
    xs = np.where(finite, x64, 0.0)
    n = xc.size
    limit = s.float_max_exception_share * n
    out = []
    peak = float(np.abs(xs).max()) if n else 0.0
    for e in range(-MAX_DECIMAL_EXP, MAX_DECIMAL_EXP + 1):
        if e < 0 and peak < 10.0 ** -e:
            continue  # every value would be 0
        if peak * 10.0 ** e >= 2.0 ** 53:
            break  # wider integers than float64 holds: no more exact round trips
        k = decimal_ints(xs, e)
        ok = finite & ~mismatch(decimal_floats(k, e, xc.dtype), xc)
        bad = n - int(ok.sum())
        if bad > limit:
            continue
        bits, med = _residual_bits(fill_forward(k[None], ok[None])[0])
        out.append((bits + _exception_bits(bad, xc.dtype.itemsize), e, med))
        if bad == 0:
            break
    c = _multiplier(xs[finite & (xs != 0)], xc.dtype, s.float_max_exception_share)
    if c is not None:
        k = decimal_ints(xs, c)
        ok = finite & ~mismatch(decimal_floats(k, c, xc.dtype), xc)
        bad = n - int(ok.sum())
        if bad <= limit:
            bits, med = _residual_bits(fill_forward(k[None], ok[None])[0])
            out.append((bits + _exception_bits(bad, xc.dtype.itemsize), c, med))
    return out


def _multiplier(v: np.ndarray, dtype: np.dtype, share: float) -> float | None:
    """:func:`_multiplier_share`'s multiplier when at most ``share`` of its trials mismatch."""
    found = _multiplier_share(v, dtype)
    return found[0] if found is not None and found[1] <= share else None


def _multiplier_share(v: np.ndarray, dtype: np.dtype, noisy: bool = False) -> tuple[float, float] | None:
    """A float ``c`` such that most of the nonzero values ``v`` (finite float64) are ``k * c``
    rounded to ``dtype`` for integers ``k`` (counts times a calibration factor), or None.

    The smallest gap between distinct magnitudes among the smallest ones estimates ``c``; each
    refinement divides a larger value by its rounded quotient; the final candidates are that
    estimate, its value rounded to ``dtype``, and their float64 neighbours within 4 ulps, and
    the one with the fewest mismatches wins, returned with the share of its trials that
    mismatch. Powers of two and ten are left to the other bases. ``noisy``: gaps below 2**10
    ulps of the larger value are left out of the estimate (values a few ulps off ``k * c``)."""
    u = np.unique(np.abs(v))
    if u.size < 3:
        return None
    small = u[:min(u.size, 256)]
    gaps = np.diff(small)
    if noisy:  # values a few ulps off k * c: gaps within 2**10 ulps of the larger value are noise
        gaps = gaps[gaps > small[1:] * 2.0 ** (10 - PRECISION[np.dtype(dtype).itemsize])]
    gaps = gaps[gaps > small[-1] * 2.0 ** -40]
    if gaps.size == 0:
        return None
    c = float(gaps.min())
    for span in (2.0 ** 6, 2.0 ** 12, 2.0 ** 18, 2.0 ** 24, 2.0 ** 30, 2.0 ** 40):
        top = u[u <= span * c]
        if top.size == 0:
            break
        q = np.rint(top[-1] / c)
        if q < 1:
            return None
        c = float(top[-1] / q)
    if not math.isfinite(c) or c <= 0:
        return None
    mant, _ = math.frexp(c)
    if mant == 0.5 or any(math.isclose(c, 10.0 ** -e, rel_tol=1e-9) for e in range(-10, 23)):
        return None
    trials = u[np.linspace(0, u.size - 1, min(u.size, 4096)).astype(np.int64)].astype(dtype)
    seeds = {c, float(np.float64(np.asarray(c, dtype=dtype))), *_interval_multiplier(trials, c)}
    best = None
    for seed in sorted(seeds):
        cand = seed
        for _ in range(4):
            cand = float(np.nextafter(cand, -np.inf))
        for _ in range(9):
            if cand > 0:
                with np.errstate(over="ignore", invalid="ignore"):
                    k = np.rint(trials.astype(np.float64) / cand)
                    bad = int(mismatch((k * cand).astype(dtype), trials).sum())
                if best is None or bad < best[0]:
                    best = (bad, cand)
            cand = float(np.nextafter(cand, np.inf))
    if best is None:
        return None
    return best[1], best[0] / trials.size


def _interval_multiplier(t: np.ndarray, c: float) -> list[float]:
    """The midpoint of the multipliers that round ``k * c'`` to each of ``t`` (positive floats of
    their dtype, ``k = rint(t / c)``): each value allows ``c'`` within half an ulp of it divided
    by ``k``; when the intervals meet, their intersection's midpoint (else nothing)."""
    t64 = t.astype(np.float64)
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        k = np.rint(t64 / c)
        keep = k >= 1
        if not keep.any():
            return []
        t, t64, k = t[keep], t64[keep], k[keep]
        below = (np.nextafter(t, t.dtype.type(0)).astype(np.float64) + t64) / 2
        above = (np.nextafter(t, t.dtype.type(np.inf)).astype(np.float64) + t64) / 2
        lo, hi = float((below / k).max()), float((above / k).min())
    return [(lo + hi) / 2] if lo < hi and math.isfinite(lo + hi) else []


def _token_bits(d: np.ndarray) -> float:
    """An estimate of the bits of the adjustments ``d`` (int64) coded: ``n * H`` of their tokens
    plus a table of 16 bits per distinct token."""
    counts = np.bincount(zigzag(d))
    counts = counts[counts > 0]
    return float(-(counts * np.log2(counts / d.size)).sum()) + 16.0 * counts.size


def _adjusted_candidates(xc: np.ndarray, s: Settings, plain: list[tuple[float, int | float, int]]
                         ) -> list[tuple[float, int | float, int, str | int]]:
    """(estimated bits, base, median residual bit length, adjustment) of one channel ``xc`` with
    an ``"adj"`` stream (:class:`~ubpe.frontend.floatcodes.FloatDecimalStage`): for each decimal
    base of ``plain`` that has exceptions, the finer digits (``fine``) of fewest exceptions; for
    the channel's multiplier (even one with too many mismatches for ``plain``) and every base of
    ``plain``, adjustments in ulps up to ``s.float_adjust_ulps``."""
    x64 = xc.astype(np.float64)
    finite = np.isfinite(x64)
    xs = np.where(finite, x64, 0.0)
    n = xc.size
    limit = s.float_max_exception_share * n
    out: list[tuple[float, int | float, int, str | int]] = []

    def add(k: np.ndarray, d: np.ndarray, ok: np.ndarray, base: int | float, adjust: str | int) -> None:
        bad = n - int(ok.sum())
        if bad > limit or not d.any():
            return
        bits, med = _residual_bits(fill_forward(k[None], ok[None])[0])
        out.append((bits + _token_bits(d) + _exception_bits(bad, xc.dtype.itemsize), base, med, adjust))

    bases = [b for _, b, _ in plain]
    found = _multiplier_share(xs[finite & (xs != 0)], xc.dtype, noisy=True)
    if found is not None and found[0] not in bases:
        bases.append(found[0])
    for base in bases:
        add(*ulp_parts(xc, xs, finite, base, s.float_adjust_ulps), base, "ulp")
    for base in [b for _, b, _ in plain if type(b) is int]:
        k = decimal_ints(xs, base)
        if not mismatch(decimal_floats(k, base, xc.dtype), xc).any():
            continue
        best = None
        for fine in range(1, MAX_FINE + 1):
            if abs(base + fine) > MAX_DECIMAL_EXP:  # (the finest decimals a container holds)
                break
            k, d, ok = fine_parts(xc, xs, finite, base, fine)
            if best is None or ok.sum() > best[2].sum():
                best = (k, d, ok, fine)
        if best is not None:
            add(*best[:3], base, best[3])
    return out


def _shift(median_bits: int, s: Settings) -> int:
    """Low bits to move out of the chain for residuals of ``median_bits`` bits."""
    return int(min(max(median_bits - s.float_modelled_bits, 0), MAX_SHIFT))


def choose(x: np.ndarray, s: Settings, measure: Callable[[Stage, np.ndarray], int]) -> Stage:
    """The lossless float stage for ``x`` (floats, ``(C, F)``, native), configured.

    The candidates: the exact grid (``"floatgrid"``, :mod:`ubpe.frontend.floats`: no raw bits,
    when every value is ``k * 2**e``, ``|k| <= 2**53``); the decimal mode with each channel's base
    of the smallest estimate (:func:`_residual_bits` plus exceptions, on a sample of about
    ``s.float_sample`` values), with its base of fewest exceptions, and with its multiplier (when
    one is found for every channel); the binary mode at the finest grid the values allow. Each
    comes with the low bits beyond ``s.float_modelled_bits`` of its estimated residuals moved out
    of the chain and without (a binary mode stands for an exact grid that moves bits out). The
    ``s.float_finalists`` smallest estimates are measured (``measure(stage, sample)``: the bytes
    of the stage's params and of its integers compressed, on about ``s.float_measure`` values)
    and the smallest wins (ties: the earlier candidate). The decimal mode with adjustments
    (its ``"adj"`` stream coded by level 1's static coders, :func:`_adjusted_candidates`) is
    measured besides those finalists, its smallest estimate and its variant, so that it is
    chosen only where it measures smaller."""
    if x.size == 0:
        return FloatGridStage()
    with np.errstate(all="ignore"):  # signalling NaNs raise "invalid" on conversion: kept as exceptions
        return _choose(x, s, measure)


def _choose(x: np.ndarray, s: Settings, measure: Callable[[Stage, np.ndarray], int]) -> Stage:
    sample = _sample(x, s.float_sample, s.float_sample_windows, 4)
    itemsize = x.dtype.itemsize
    options: list[tuple[float, Stage]] = []  # (estimated bits, stage), in order of preference
    lowest, precision, top = grid_stats(x.astype(np.float64))
    grid0 = max(lowest, top - 62)
    if exact_grid(x) is not None:
        bits = [_residual_bits(row) for row in FloatGridStage().forward(sample)[0].astype(np.int64)]
        estimate = sum(b for b, _ in bits)
        options.append((estimate, FloatGridStage()))
        shift = _shift(int(np.median([m for _, m in bits])), s)
        if shift:
            options.append((estimate, FloatBinaryStage(lowest + shift, lowest, precision)))
    per_channel = [_decimal_candidates(row, s) for row in sample]
    if all(per_channel):
        decimal = [c for c in per_channel if any(type(b) is int for _, b, _ in c)]
        picks = [[min(cands, key=lambda t: t[0]) for cands in per_channel]]
        if len(decimal) == len(per_channel):
            picks.append([[t for t in cands if type(t[1]) is int][-1] for cands in per_channel])  # fewest exceptions
        mults = [[t for t in cands if type(t[1]) is float] for cands in per_channel]
        if all(mults):
            picks.append([m[0] for m in mults])
        seen = set()
        for pick in picks:
            bases = tuple(p[1] for p in pick)
            if bases in seen:
                continue
            seen.add(bases)
            estimate = sum(p[0] for p in pick)
            shifts = [_shift(p[2], s) for p in pick]
            options.append((estimate, FloatDecimalStage(list(bases), None)))
            if any(shifts):
                options.append((estimate, FloatDecimalStage(list(bases), shifts)))
    y, m, nbits, ok = binary_parts(sample, grid0, lowest, precision)
    bad = int(ok.size - ok.sum())
    if bad <= s.float_max_exception_share * ok.size:
        bits = [_residual_bits(row) for row in y]
        estimate = sum(b for b, _ in bits) + float(nbits.sum()) + _exception_bits(bad, itemsize)
        options.append((estimate, FloatBinaryStage(grid0, lowest, precision)))
        grid = min(grid0 + _shift(int(np.median([b for _, b in bits])), s), max(top, grid0))
        if grid != grid0:
            options.append((estimate, FloatBinaryStage(grid, lowest, precision)))
    adjusted = _adjusted_options(sample, per_channel, s)
    if not options and not adjusted:  # mostly NaN or infinities: every value an exception of the binary mode
        return FloatBinaryStage(grid0, lowest, precision)
    if len(options) == 1 and not adjusted:
        return options[0][1]
    order = sorted(range(len(options)), key=lambda i: (options[i][0], i))
    top_n = order[:s.float_finalists]
    finalists = sorted(set(top_n + [i + 1 for i in top_n
                                    if i + 1 < len(options) and _same_base(options[i][1], options[i + 1][1])]))
    if adjusted:  # after the others: a tie keeps the stage without adjustments
        first = len(options)
        options += adjusted
        finalists += list(range(first, len(options)))
    measured = _sample(x, s.float_measure, s.float_measure_windows, 64)
    sizes = [(measure(options[i][1], measured), i) for i in finalists]
    return options[min(sizes)[1]][1]


def _adjusted_options(sample: np.ndarray, per_channel: list, s: Settings) -> list[tuple[float, Stage]]:
    """The decimal stage with adjustments of the smallest estimate over all channels (a channel
    without an adjusted candidate keeps its plain one, adjustments 0), and its variant with low
    bits moved out: [] when no channel has one (or a channel has no candidate at all)."""
    if s.float_adjust_ulps <= 0 or not all(per_channel):
        return []
    from ..coders import coders_for
    adjusted = [_adjusted_candidates(row, s, plain) for row, plain in zip(sample, per_channel)]
    best = None
    for adjust in sorted({a for cands in adjusted for *_, a in cands}, key=str):
        pick = []
        for plain, cands in zip(per_channel, adjusted):
            same = [c[:3] for c in cands if c[3] == adjust]
            pool = plain + same if type(adjust) is not int else [p for p in plain if type(p[1]) is int] + same
            if not pool:
                break
            pick.append(min(pool, key=lambda t: t[0]))
        else:
            estimate = sum(p[0] for p in pick)
            if best is None or estimate < best[0]:
                best = (estimate, pick, adjust)
    if best is None:
        return []
    estimate, pick, adjust = best
    bases, shifts = [p[1] for p in pick], [_shift(p[2], s) for p in pick]
    # level 1's static coders at every level: cms2 encodes a wide adj stream slowly (6 of pitsa_noise's
    # 8.8 s at level 2) and decodes it slower, for 1 % (seism.sac 1 066 -> 1 078 bytes)
    coders = coders_for(1)
    out = [(estimate, FloatDecimalStage(bases, None, adjust, coders, s.float_adjust_ulps))]
    if any(shifts):
        out.append((estimate, FloatDecimalStage(bases, shifts, adjust, coders, s.float_adjust_ulps)))
    return out


def _same_base(a: Stage, b: Stage) -> bool:
    """Whether ``b`` is ``a`` with low bits moved out (its variant of the same candidate)."""
    if isinstance(a, FloatDecimalStage) and isinstance(b, FloatDecimalStage):
        return a.bases == b.bases and a.adjust == b.adjust
    return isinstance(b, FloatBinaryStage) and (isinstance(a, FloatBinaryStage) or a.name == "floatgrid")
