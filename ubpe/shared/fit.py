"""Fitting a :class:`~ubpe.shared.SharedModel` on a few windows (:func:`fit_shared`, ``ubpe fit
--shared``: :func:`fit_inputs`)."""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from .._validate import check_int
from ..alphabet import distinct
from .chain import _chain_forward
from .coder import _code_of
from .encode import _variant_bytes
from .model import (DEFAULT_PRIMER, DEFAULT_TRAINING_WINDOWS, DEFAULT_VARIANTS, DTYPES, MAX_HISTORY, MAX_SIZE, MAX_VARIANTS,
                    WINDOW_VERSION, _MARGIN, _MAX_COEF, _MAX_ORDER, SharedModel, Variant)


def _predictors(train: np.ndarray, dtype: np.dtype) -> list[tuple[int, np.ndarray]]:
    """The candidate predictors: none, delta 1, delta 2, and LPC fitted on ``train``."""
    from ..frontend.lpc import check_lpc_params, lpc_forward

    out = [(0, np.zeros(0, np.int64)), (0, np.array([1], np.int64)), (0, np.array([2, -1], np.int64))]
    if train.size >= 64:
        block = min(train.size, 1 << 24)
        _, params = lpc_forward(train.astype(dtype.newbyteorder("=")), block=block, max_order=_MAX_ORDER)
        _, orders, shifts, coefs = check_lpc_params(params, train.size, dtype.newbyteorder("="))
        order = int(orders[0])
        if order and np.all(np.abs(coefs[:order]) < _MAX_COEF):
            out.append((int(shifts[0]), coefs[:order].astype(np.int64)))
    return out


def _split_of(joined: np.ndarray, dtype: np.dtype) -> tuple[int, int]:
    """``(base, offset)`` of the "mult" split that pays on the training values (``mult_detect``),
    or ``(1, 0)``."""
    from ..frontend.mult import mult_detect

    if joined.size < 64:
        return 1, 0
    return tuple(int(v) for v in mult_detect(joined.astype(dtype.newbyteorder("="))))


def _model_for(values: list[np.ndarray], dtype: np.dtype, shift: int, coefs: np.ndarray, adaptive: int,
               history: int, dense: bool = False, split: tuple[int, int] = (1, 0)) -> Variant | None:
    """The model of the predictor ``(shift, coefs, adaptive)`` fitted on the windows ``values``
    (int64): its residuals' range with a margin of half their span each side, or (``dense``)
    the distinct residuals with a few more on their grid beyond each end (None when they are
    not fewer than half their span: the range then), the code, the last ``history`` values."""
    joined = np.concatenate(values)
    base, offset = split
    digits = None
    if base > 1:
        digits = _code_of(((joined - offset) % base).astype(np.int32), base)
    bare = Variant(dtype, shift, coefs, 0, 2, 0, 0, np.array([0, 2], np.int64), np.zeros(0, np.int64), adaptive,
                   None, base, offset, digits)
    flat = _chain_forward(bare, joined)
    lo, hi = int(flat.min()), int(flat.max())
    table = None
    if dense:
        present = distinct(flat)
        if present.size < 2 or 2 * present.size > hi - lo + 1 or 2 * present.size > MAX_SIZE:
            return None
        gap = max(1, int(np.median(np.diff(present))))
        more = max(2, present.size // 4)
        steps = gap * np.arange(1, more + 1, dtype=np.int64)
        table = np.concatenate((lo - steps[::-1], present, hi + steps))
        lo, size = 0, int(table.size)
    else:
        margin = max(2, int((hi - lo) / _MARGIN))
        lo, hi = lo - margin, hi + margin
        if hi - lo + 1 > MAX_SIZE:  # the central residuals; the others escape
            mid = int(np.median(flat))
            lo, hi = mid - MAX_SIZE // 2, mid + MAX_SIZE // 2 - 1
        size = hi - lo + 1
    kept = flat[flat.size - min(history, flat.size):]
    v = Variant(dtype, shift, coefs, lo, size, 0, 0, np.array([0, 2], np.int64), bare.history, adaptive, table)
    mode, center, counts = _code_of(v.tokens(kept)[0], size)
    return Variant(dtype, shift, coefs, lo, size, mode, center, counts,
                   np.ascontiguousarray(joined[joined.size - min(history, joined.size):]), adaptive, table,
                   base, offset, digits)


def fit_shared(windows: Sequence[Any], *, history: int = DEFAULT_PRIMER, variants: int = DEFAULT_VARIANTS) -> SharedModel:
    """A :class:`SharedModel` fitted on ``windows`` (a sequence of 1-D integer arrays of one
    dtype, of :data:`DTYPES`; e.g. 10 windows like the ones it will code).

    Every predictor (none, delta 1, delta 2 or LPC fitted on all the windows, each with or
    without the "adaptive" LMS cascade after it; and when the values' low digits are skewed, as
    ``ubpe.frontend.mult.mult_detect`` finds, the same of the quotients, split variants whose
    digits are coded apart) is sized on the last fifth of the windows,
    primed with the others; the model keeps the ``variants`` smallest, and the smallest
    without a predictor when none of them is (CRLZ seismometer at 1 000 values: -2.9 % ->
    -4.0 %: windows of noise after an event; at most :data:`MAX_VARIANTS`) (refitted on all the
    windows: each window is then coded by the one of them that codes it smallest) and the
    last ``history`` values of the windows (joined), whose residuals prime the coder (0: no
    primer). Deterministic.
    """
    if isinstance(windows, np.ndarray) and windows.ndim == 1:
        raise TypeError("windows must be a sequence of 1-D arrays (pass [x] for one window)")
    ws = [np.asarray(w) for w in windows]
    if not ws:
        raise ValueError("windows must hold at least one window")
    history = check_int("history", history, 0, MAX_HISTORY)
    variants = check_int("variants", variants, 1, MAX_VARIANTS)
    dtypes = {w.dtype.str for w in ws}
    if len(dtypes) != 1 or ws[0].dtype.str not in DTYPES:
        raise TypeError(f"windows must share one dtype of {DTYPES}, got {sorted(dtypes)}")
    if any(w.ndim != 1 for w in ws):
        raise ValueError("every window must be 1-D")
    if sum(w.size for w in ws) < 2:
        raise ValueError("the windows must hold at least 2 values")
    dtype = ws[0].dtype
    values = [w.astype(np.int64) for w in ws]
    held = max(1, len(ws) // 5) if len(ws) >= 2 else 0
    ranked = []
    joined = np.concatenate(values)
    candidates = [((1, 0), p) for p in _predictors(joined, dtype)]
    split = _split_of(joined, dtype)
    if split[0] > 1:  # an ADC's noisy low digits: the quotients predicted, the digits coded apart
        candidates += [(split, p) for p in _predictors((joined - split[1]) // split[0], dtype)]
    for i, (split, (shift, coefs)) in enumerate(candidates):
        for j, (adaptive, dense) in enumerate(((0, False), (1, False), (0, True), (1, True))):
            if _model_for(values, dtype, shift, coefs, adaptive, history, dense, split) is None:
                continue  # (dense: not fewer distinct residuals than half their span)
            cost = 0
            if held:  # (primed: a window coded cold is rarer, and ranking on it picked worse variants)
                trial = _model_for(values[:-held], dtype, shift, coefs, adaptive, history, dense, split)
                for w in ws[-held:]:
                    coded = None if trial is None else _variant_bytes(trial, w, version=WINDOW_VERSION)
                    cost += len(coded[1]) + len(coded[2] or b"") if coded is not None else 10 * w.size
            ranked.append((cost, 4 * i + j, shift, coefs, adaptive, dense, split))
    ranked.sort(key=lambda r: r[:2])
    picked = ranked[:variants]
    nones = [r for r in ranked if len(r[3]) == 0]  # (no predictor: the context mixer on the values)
    if nones and not any(len(r[3]) == 0 for r in picked) and len(picked) < MAX_VARIANTS:
        picked.append(nones[0])  # for windows of noise, which held-out windows may not show
    chosen = [_model_for(values, dtype, shift, coefs, adaptive, history, dense, split)
              for _, _, shift, coefs, adaptive, dense, split in picked]
    return SharedModel(dtype, chosen[0].history, tuple(chosen))


def fit_inputs(docs: Sequence[np.ndarray], window: int | None = None, windows: int | None = None,
               history: int = DEFAULT_PRIMER) -> tuple[SharedModel, int]:
    """``ubpe fit --shared``: the model of ``docs`` (1-D integer arrays) cut into windows of
    ``window`` values (None: each document one window), the first ``windows`` of them (None:
    :data:`DEFAULT_TRAINING_WINDOWS`); returns the model and the windows it was fitted on."""
    if window is not None:
        check_int("window", window, 1)
    pieces = []
    for d in docs:
        d = np.asarray(d).reshape(-1)
        step = window or max(d.size, 1)
        pieces += [d[i:i + step] for i in range(0, d.size, step)]
    count = DEFAULT_TRAINING_WINDOWS if windows is None else check_int("windows", windows, 1)
    chosen = [p for p in pieces if p.size][:count]
    return fit_shared(chosen, history=history), len(chosen)
